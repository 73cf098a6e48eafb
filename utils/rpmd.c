/*
 * rpmd: an SPV-style collector for the Paragon RPM counters (rpmd(8)).
 *
 * Once per interval it reads every node's registers (the 32-bit values a
 * program sees in struct rpm), appends one CSV line per node to its log (bus
 * utilisation %, the four bus counters, mesh bytes per direction, idle %), and
 * resets the registers, as SPV's daemons did once a second.  The PAPI
 * component counts from the never-reset sources, so applications need not
 * stop it (they had to on the Paragon).
 *
 *   rpmd [-f] [--interval=SECONDS] [--log=FILE] [--pidfile=FILE] [--no-reset]
 *   rpmd stop [--pidfile=FILE]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "common/heritage_error.h"
#include "paragon/rpm_page.h"
#include "paragon/rpm_shared.h"

static volatile sig_atomic_t stopping;

static void on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

/* Root: /run.  Others: their runtime directory, else the temporary one. */
static const char *default_pidfile(void)
{
	static char buf[512];
	if (geteuid() == 0)
		return "/run/rpmd.pid";
	const char *dir = getenv("XDG_RUNTIME_DIR");
	if (!dir || !*dir)
		dir = P_tmpdir;
	snprintf(buf, sizeof buf, "%s/rpmd-%u.pid", dir, (unsigned)geteuid());
	return buf;
}

static long read_pid(const char *pidfile)
{
	FILE *f = fopen(pidfile, "r");
	long pid = -1;
	if (f) {
		if (fscanf(f, "%ld", &pid) != 1)
			pid = -1;
		fclose(f);
	}
	return pid;
}

static int do_stop(const char *pidfile)
{
	int fd = open(pidfile, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "rpmd: not running (no %s)\n", pidfile);
		return 1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		fprintf(stderr, "rpmd: not running (stale %s)\n", pidfile);
		close(fd);
		return 1;
	}
	long pid = read_pid(pidfile);
	if (pid <= 0 || kill((pid_t)pid, SIGTERM) != 0) {
		fprintf(stderr, "rpmd: cannot signal pid %ld: %s\n", pid, strerror(errno));
		close(fd);
		return 1;
	}
	/* Stopped when it lets go of the lock. */
	for (int i = 0; i < 500; i++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			close(fd);
			return 0;
		}
		usleep(10000);
	}
	fprintf(stderr, "rpmd: pid %ld did not stop within 5 s\n", pid);
	close(fd);
	return 1;
}

struct node_prev {
	struct rpm_wrap reg[RPM_NCOUNTERS];
};

static void collect(FILE *log, struct rpm_host *h, struct rpm_live *live, struct node_prev *prev, double dt,
                    const double *idle_prev, double *idle_now, int reset)
{
	unsigned nodes = rpm_host_nodes(h);
	double idle_sum = 0, idle_before = 0;

	rpm_live_read(live, 0);
	for (unsigned c = 0; c < live->ncpus; c++) {
		idle_now[c] = live->idle_s[c];
		idle_sum += idle_now[c];
		idle_before += idle_prev[c];
	}
	double idle_pct = dt > 0 ? 100.0 * (idle_sum - idle_before) / (dt * live->ncpus) : 0;
	double t = (double)rpm_now_ticks() / 1e7;
	for (unsigned n = 0; n < nodes; n++) {
		uint64_t cum[RPM_NCOUNTERS], d[RPM_NCOUNTERS];
		rpm_node_counts(n, live, cum);
		for (int c = 0; c < RPM_NCOUNTERS; c++) {
			uint32_t reg = rpm_register_value(cum[c], __atomic_load_n(&h->bases->base[n][c], __ATOMIC_RELAXED));
			/* After our own reset the register restarts from 0. */
			uint64_t before = prev[n].reg[c].primed ? prev[n].reg[c].value : reg;
			d[c] = rpm_wrap_update(&prev[n].reg[c], reg) - before;
		}
		double bus = dt > 0 ? 100.0 * (double)(d[RPM_CPU0] + d[RPM_CPU1] + d[RPM_LTU] + d[RPM_EXP]) / (dt * 50e6) : 0;
		fprintf(log, "%.6f,%u,%.2f,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.2f\n", t, n, bus,
		        (unsigned long long)d[RPM_CPU0], (unsigned long long)d[RPM_CPU1], (unsigned long long)d[RPM_LTU],
		        (unsigned long long)d[RPM_EXP], (unsigned long long)d[RPM_NORTH] * 64,
		        (unsigned long long)d[RPM_SOUTH] * 64, (unsigned long long)d[RPM_EAST] * 64,
		        (unsigned long long)d[RPM_WEST] * 64, idle_pct);
		/* After a reset the register restarts from 0: the next interval's
		 * difference is its value. */
		if (reset && rpm_reset_node(n) == 0)
			for (int c = 0; c < RPM_NCOUNTERS; c++)
				prev[n].reg[c] = (struct rpm_wrap){ .value = 0, .last = 0, .primed = 1 };
	}
	fflush(log);
}

int main(int argc, char **argv)
{
	double interval = 1.0;
	const char *log_path = geteuid() == 0 ? "/var/log/rpmd.csv" : "rpmd.csv";
	const char *pidfile = default_pidfile();
	int reset = 1, foreground = 0;
	static const struct option opts[] = {
		{ "interval", required_argument, NULL, 'i' }, { "log", required_argument, NULL, 'l' },
		{ "pidfile", required_argument, NULL, 'p' }, { "no-reset", no_argument, NULL, 'n' },
		{ "foreground", no_argument, NULL, 'f' }, { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "fi:l:p:nh", opts, NULL)) != -1) {
		switch (c) {
		case 'i': {
			char *end;
			interval = strtod(optarg, &end);
			if (*end || !(interval >= 0.001 && interval <= 3600)) {
				fprintf(stderr, "rpmd: --interval=%s: give seconds between 0.001 and 3600\n", optarg);
				return 2;
			}
			break;
		}
		case 'l': log_path = optarg; break;
		case 'p': pidfile = optarg; break;
		case 'n': reset = 0; break;
		case 'f': foreground = 1; break;
		default:
			fprintf(stderr, "usage: rpmd [-f] [--interval=SECONDS] [--log=FILE] [--pidfile=FILE] [--no-reset]\n"
			                "       rpmd stop [--pidfile=FILE]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind < argc && strcmp(argv[optind], "stop") == 0)
		return do_stop(pidfile);
	if (optind < argc) {
		fprintf(stderr, "rpmd: unknown command \"%s\" (the only one is stop)\n", argv[optind]);
		return 2;
	}

	struct rpm_host *h;
	if (rpm_host_open(&h) != 0) {
		fprintf(stderr, "rpmd: %s\n", heritage_last_error());
		return 1;
	}
	if (reset && !h->bases_writable) {
		fprintf(stderr, "rpmd: resetting the counters needs root (or run with --no-reset)\n");
		return 1;
	}
	int pfd = open(pidfile, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (pfd < 0) {
		fprintf(stderr, "rpmd: %s: %s\n", pidfile, strerror(errno));
		return 1;
	}
	if (flock(pfd, LOCK_EX | LOCK_NB) != 0) {
		fprintf(stderr, "rpmd: already running as pid %ld (%s)\n", read_pid(pidfile), pidfile);
		return 1;
	}
	FILE *log = fopen(log_path, "a");
	if (!log) {
		fprintf(stderr, "rpmd: %s: %s\n", log_path, strerror(errno));
		return 1;
	}
	if (!foreground) {
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "rpmd: fork: %s\n", strerror(errno));
			return 1;
		}
		if (pid > 0)
			_exit(0); /* the child keeps the lock: same open file */
		setsid();
	}
	char buf[32];
	int len = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
	if (ftruncate(pfd, 0) != 0 || pwrite(pfd, buf, (size_t)len, 0) != len)
		fprintf(stderr, "rpmd: cannot write %s\n", pidfile);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);

	if (ftell(log) == 0)
		fprintf(log, "time_s,node,bus_util_pct,cpu0,cpu1,ltu,exp,north_bytes,south_bytes,east_bytes,west_bytes,idle_pct\n");
	static struct rpm_live live;
	static struct node_prev prev[RPM_MESH_MAX_NODES];
	static double idle_a[RPM_MAX_CPUS], idle_b[RPM_MAX_CPUS];
	double *idle_prev = idle_a, *idle_now = idle_b;
	/* The first pass only takes the starting point (and resets). */
	FILE *null = fopen("/dev/null", "w");
	if (null) {
		collect(null, h, &live, prev, 0, idle_prev, idle_prev, reset);
		fclose(null);
	}
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	uint64_t step = (uint64_t)(interval * 1e9);
	while (!stopping) {
		uint64_t ns = (uint64_t)next.tv_nsec + step;
		next.tv_sec += (time_t)(ns / 1000000000ULL);
		next.tv_nsec = (long)(ns % 1000000000ULL);
		while (!stopping && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		if (stopping)
			break;
		collect(log, h, &live, prev, interval, idle_prev, idle_now, reset);
		double *t = idle_prev;
		idle_prev = idle_now;
		idle_now = t;
	}
	fclose(log);
	unlink(pidfile);
	return 0;
}
