/*
 * rpmd: an SPV-style collector for the Paragon RPM counters, and the service
 * that publishes the system-wide soft counts to unprivileged readers
 * (rpmd(8)).
 *
 * Once per interval it reads every node's registers (the 32-bit values a
 * program sees in struct rpm), appends one CSV line per node to its log (bus
 * utilisation %, the four bus counters, mesh bytes per direction, idle %), and
 * resets the registers, as SPV's daemons did once a second.  The PAPI
 * component counts from the never-reset sources, so applications need not
 * stop it (they had to on the Paragon).
 *
 * Every publish interval it reads the per-CPU page-fault and system-call
 * counts it may open (CAP_PERFMON) and publishes them in a read-only page
 * (src/paragon/rpm_service.h) that the component of any account maps when
 * it may not count system-wide itself, as the Paragon's kernel filled the
 * RPM page for users.
 *
 *   rpmd [-f] [--interval=SECONDS] [--publish-interval=SECONDS] [--log=FILE]
 *        [--no-log] [--pidfile=FILE] [--no-reset]
 *   rpmd stop [--pidfile=FILE]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/heritage_daemon.h"
#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "paragon/rpm_page.h"
#include "paragon/rpm_perf.h"
#include "paragon/rpm_service.h"
#include "paragon/rpm_shared.h"

static volatile sig_atomic_t stopping;

static void on_term(int sig)
{
	(void)sig;
	stopping = 1;
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

static const char *const count_names[RPM_PERF_NCOUNTS] = {
	[RPM_PF_ALL] = "page faults (rpms_dat)",
	[RPM_PF_MIN] = "minor page faults (rpms_ptenotp, rpms_ptenotu)",
	[RPM_PF_MAJ] = "major page faults (rpms_ptenotp, rpms_ptenotu)",
	[RPM_SYSCALLS] = "system calls (rpms_it)",
};

/* Opens the per-CPU counts as this process may (never from a service: it
 * is the service) and creates the page they are published in. */
static int service_start(double interval, struct rpm_service_page **page, ino_t *ino, char *path, size_t len)
{
	int err[RPM_PERF_NCOUNTS], counted = 0;
	const char *why[RPM_PERF_NCOUNTS];
	const unsigned *os;
	char reason[1024];

	rpm_perf_own_only();
	(void)rpm_cpu_count(); /* configures the counters on hwloc's CPUs */
	rpm_perf_ensure();
	unsigned ncpus = rpm_perf_cpus(&os);
	for (int k = 0; k < RPM_PERF_NCOUNTS; k++) {
		err[k] = rpm_perf_status(k, &why[k]);
		if (err[k])
			fprintf(stderr, "rpmd: not publishing %s: %s\n", count_names[k], why[k]);
		counted += !err[k];
	}
	rpm_service_path(path, len);
	int e = rpm_service_create(path, ncpus, os, (uint64_t)(interval * 1e9), rpm_clock_boottime_ns(),
	                           err, why, page, ino, reason, sizeof reason);
	if (e) {
		fprintf(stderr, "rpmd: cannot publish: %s\n", reason);
		return 1;
	}
	if (!counted)
		fprintf(stderr, "rpmd: publishing %s for %u CPUs, but it can count nothing there: readers learn why\n", path,
		        ncpus);
	return 0;
}

/* One publication: every CPU's counts, read before the seqlock is taken so
 * that readers never wait for the reads (one IPI per CPU and group). */
static void publish(struct rpm_service_page *page)
{
	static uint64_t counts[RPM_MAX_CPUS][RPM_PERF_NCOUNTS];
	uint64_t now = rpm_clock_boottime_ns();
	for (unsigned i = 0; i < page->ncpus; i++)
		rpm_perf_read(i, counts[i], NULL);
	rpm_service_publish(page, now, (const uint64_t(*)[RPM_PERF_NCOUNTS])counts);
}

static void add_ns(struct timespec *t, uint64_t ns)
{
	ns += (uint64_t)t->tv_nsec;
	t->tv_sec += (time_t)(ns / 1000000000ULL);
	t->tv_nsec = (long)(ns % 1000000000ULL);
}

static int before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

int main(int argc, char **argv)
{
	double interval = 1.0, publish_interval = (double)RPM_SERVICE_DEFAULT_INTERVAL_NS / 1e9;
	int logging = 1;
	const char *log_path = geteuid() == 0 ? "/var/log/rpmd.csv" : "rpmd.csv";
	char pidbuf[512];
	const char *pidfile = heritage_daemon_default_pidfile("rpmd", pidbuf, sizeof pidbuf);
	int reset = 1, foreground = 0;
	static const struct option opts[] = {
		{ "interval", required_argument, NULL, 'i' }, { "log", required_argument, NULL, 'l' },
		{ "pidfile", required_argument, NULL, 'p' }, { "no-reset", no_argument, NULL, 'n' },
		{ "publish-interval", required_argument, NULL, 'P' }, { "no-log", no_argument, NULL, 'N' },
		{ "foreground", no_argument, NULL, 'f' }, { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "fi:l:p:nh", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
		case 'P': {
			char *end;
			double v = strtod(optarg, &end);
			if (*end || !(v >= 0.001 && v <= 3600)) {
				fprintf(stderr, "rpmd: --%s=%s: give seconds between 0.001 and 3600\n",
				        c == 'i' ? "interval" : "publish-interval", optarg);
				return 2;
			}
			*(c == 'i' ? &interval : &publish_interval) = v;
			break;
		}
		case 'N': logging = 0; break;
		case 'l': log_path = optarg; break;
		case 'p': pidfile = optarg; break;
		case 'n': reset = 0; break;
		case 'f': foreground = 1; break;
		default:
			fprintf(stderr, "usage: rpmd [-f] [--interval=SECONDS] [--publish-interval=SECONDS] [--log=FILE] [--no-log]\n"
			                "            [--pidfile=FILE] [--no-reset]\n"
			                "       rpmd stop [--pidfile=FILE]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	int st = heritage_daemon_command("rpmd", argc, argv, optind, pidfile);
	if (st >= 0)
		return st;
	if (heritage_env_check("paragon_rpm") != 0) {
		fprintf(stderr, "rpmd: %s\n", heritage_last_error());
		return 2;
	}

	struct rpm_host *h = NULL;
	if (logging && rpm_host_open(&h) != 0) {
		fprintf(stderr, "rpmd: %s\n", heritage_last_error());
		return 1;
	}
	if (logging && reset && !h->bases_writable) {
		fprintf(stderr, "rpmd: resetting the counters needs root (or run with --no-reset or --no-log)\n");
		return 1;
	}
	int pfd = heritage_daemon_lock("rpmd", pidfile);
	if (pfd < 0)
		return 1;
	FILE *log = logging ? fopen(log_path, "a") : NULL;
	if (logging && !log) {
		fprintf(stderr, "rpmd: %s: %s\n", log_path, strerror(errno));
		return 1;
	}
	/* Before detaching, so that what it cannot count is seen.  A collector
	 * that cannot publish (another rpmd does) still collects. */
	struct rpm_service_page *page = NULL;
	ino_t page_ino = 0;
	char page_path[512];
	if (service_start(publish_interval, &page, &page_ino, page_path, sizeof page_path) != 0) {
		if (!logging)
			return 1;
		fprintf(stderr, "rpmd: collecting only\n");
	}
	if (!foreground) {
		int status;
		int r = heritage_daemon_detach("rpmd", NULL, &status);
		if (r < 0)
			return 1;
		if (r > 0)
			_exit(0); /* the child keeps the lock: same open file */
	}
	heritage_daemon_write_pid("rpmd", pfd, pidfile);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	if (page) {
		__atomic_store_n(&page->pid, (int32_t)getpid(), __ATOMIC_RELAXED); /* the detached child's */
		publish(page);
	}

	static struct rpm_live live;
	static struct node_prev prev[RPM_MESH_MAX_NODES];
	static double idle_a[RPM_MAX_CPUS], idle_b[RPM_MAX_CPUS];
	double *idle_prev = idle_a, *idle_now = idle_b;
	if (logging) {
		if (ftell(log) == 0)
			fprintf(log, "time_s,node,bus_util_pct,cpu0,cpu1,ltu,exp,north_bytes,south_bytes,east_bytes,west_bytes,idle_pct\n");
		/* The first pass only takes the starting point (and resets). */
		FILE *null = fopen("/dev/null", "w");
		if (null) {
			collect(null, h, &live, prev, 0, idle_prev, idle_prev, reset);
			fclose(null);
		}
	}
	struct timespec next_log, next_pub;
	clock_gettime(CLOCK_MONOTONIC, &next_log);
	next_pub = next_log;
	add_ns(&next_log, (uint64_t)(interval * 1e9));
	uint64_t pub_step = (uint64_t)(publish_interval * 1e9), publications = 1, longest = 0;
	uint64_t last = rpm_clock_boottime_ns();
	add_ns(&next_pub, pub_step);
	while (!stopping) {
		int log_due = logging && (!page || !before(&next_pub, &next_log));
		const struct timespec *next = log_due ? &next_log : &next_pub;
		while (!stopping && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, NULL) == EINTR)
			;
		if (stopping)
			break;
		if (log_due) {
			add_ns(&next_log, (uint64_t)(interval * 1e9));
			collect(log, h, &live, prev, interval, idle_prev, idle_now, reset);
			double *t = idle_prev;
			idle_prev = idle_now;
			idle_now = t;
			continue;
		}
		add_ns(&next_pub, pub_step);
		publish(page);
		uint64_t now = rpm_clock_boottime_ns();
		if (now - last > longest)
			longest = now - last;
		last = now;
		publications++;
	}
	/* New readers find no service rather than a stale one; readers that
	 * have it mapped see its heartbeat stop. */
	if (page)
		rpm_service_remove(page_path, page_ino);
	if (page && foreground)
		fprintf(stderr, "rpmd: published %llu times every %.3f s, longest gap %.1f ms\n",
		        (unsigned long long)publications, publish_interval, (double)longest / 1e6);
	if (log)
		fclose(log);
	unlink(pidfile);
	return 0;
}
