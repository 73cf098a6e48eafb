/*
 * imcd: the system-wide writer of the IMC nest pages (imcd(8)).
 *
 * On POWER9 the OCC microcode counts the nest units of each chip into
 * memory that every process may map; here imcd plays the microcode: it runs
 * the imc engine (src/imc/imc_engine.h) in daemon mode, which publishes one
 * /dev/shm object per chip and nest region of the catalog (imc_shm.h),
 * counts every nest entry that has a source on this machine into it at the
 * collection speed of the page's control block, and obeys the commands
 * written there (by root: the objects are 0644).  Processes of any account
 * map the objects read-only; without imcd each process counts its own nest
 * pages (imc(3)).  Run it as root or as the service account "imcd"
 * (PAPI_HERITAGE_IMC_SERVICE_USER): readers trust no one else's objects.
 *
 *   imcd [-f] [--speed=0..7] [--pidfile=FILE]
 *   imcd stop [--pidfile=FILE]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/heritage_error.h"
#include "imc/imc_catalog.h"
#include "imc/imc_engine.h"

static const char *default_pidfile(void)
{
	static char buf[512];
	if (geteuid() == 0)
		return "/run/imcd.pid";
	const char *dir = getenv("XDG_RUNTIME_DIR");
	snprintf(buf, sizeof buf, "%s/imcd-%u.pid", dir && *dir ? dir : P_tmpdir, (unsigned)geteuid());
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
	int fd = open(pidfile, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "imcd: not running (no %s)\n", pidfile);
		return 1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		fprintf(stderr, "imcd: not running (stale %s)\n", pidfile);
		close(fd);
		return 1;
	}
	long pid = read_pid(pidfile);
	if (pid <= 0 || kill((pid_t)pid, SIGTERM) != 0) {
		fprintf(stderr, "imcd: cannot signal pid %ld: %s\n", pid, strerror(errno));
		close(fd);
		return 1;
	}
	for (int i = 0; i < 500; i++) { /* stopped when it lets go of the lock */
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			close(fd);
			return 0;
		}
		usleep(10000);
	}
	fprintf(stderr, "imcd: pid %ld did not stop within 5 s\n", pid);
	close(fd);
	return 1;
}

int main(int argc, char **argv)
{
	const char *pidfile = default_pidfile();
	int foreground = 0;
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' }, { "speed", required_argument, NULL, 's' },
		{ "pidfile", required_argument, NULL, 'p' }, { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "fs:p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': foreground = 1; break;
		case 'p': pidfile = optarg; break;
		case 's': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v < 0 || v >= IMC_NSPEEDS) {
				fprintf(stderr, "imcd: --speed=%s: give 0..7 (128 us, 256 us, 1, 4, 16, 64, 256, 1000 ms)\n", optarg);
				return 2;
			}
			/* The control blocks start at this speed (imc_speed_setting). */
			setenv("PAPI_HERITAGE_IMC_SPEED", optarg, 1);
			break;
		}
		default:
			fprintf(stderr, "usage: imcd [-f] [--speed=0..7] [--pidfile=FILE]\n       imcd stop [--pidfile=FILE]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind < argc && strcmp(argv[optind], "stop") == 0)
		return do_stop(pidfile);
	if (optind < argc) {
		fprintf(stderr, "imcd: unknown command \"%s\" (the only one is stop)\n", argv[optind]);
		return 2;
	}
	char why[1024];
	const struct imc_catalog *cat = imc_catalog_get(why, sizeof why);
	if (!cat) {
		fprintf(stderr, "imcd: no catalog: %s\n", why);
		return 1;
	}
	const struct imc_topo *topo = imc_topo_get(why, sizeof why);
	if (!topo) {
		fprintf(stderr, "imcd: %s\n", why);
		return 1;
	}
	int pfd = open(pidfile, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (pfd < 0) {
		fprintf(stderr, "imcd: %s: %s\n", pidfile, strerror(errno));
		return 1;
	}
	if (flock(pfd, LOCK_EX | LOCK_NB) != 0) {
		fprintf(stderr, "imcd: already running as pid %ld (%s)\n", read_pid(pidfile), pidfile);
		return 1;
	}
	/* Detach first, so that the objects carry the daemon's pid; the parent
	 * waits for the child's word on whether it publishes. */
	int ready[2] = { -1, -1 };
	if (!foreground) {
		if (pipe(ready) != 0) {
			fprintf(stderr, "imcd: pipe: %s\n", strerror(errno));
			return 1;
		}
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "imcd: fork: %s\n", strerror(errno));
			return 1;
		}
		if (pid > 0) {
			char ok = 0;
			close(ready[1]);
			ssize_t n = read(ready[0], &ok, 1);
			return n == 1 && ok == 'y' ? 0 : 1;
		}
		close(ready[0]);
		setsid();
	}
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigaddset(&term, SIGINT);
	sigaddset(&term, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &term, NULL); /* before the engine thread: it inherits the mask */
	struct imc_engine *e = NULL;
	if (imc_engine_create(cat, topo, IMC_ENGINE_DAEMON, &e) != 0 || imc_engine_run(e) != 0) {
		fprintf(stderr, "imcd: %s\n", heritage_last_error());
		if (e)
			imc_engine_destroy(e);
		return 1;
	}
	char buf[32];
	int len = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
	if (ftruncate(pfd, 0) != 0 || pwrite(pfd, buf, (size_t)len, 0) != len)
		fprintf(stderr, "imcd: cannot write %s\n", pidfile);
	fprintf(stderr, "imcd: pid %ld, catalog %s, %u chip(s): nest pages %s, speed %u\n", (long)getpid(), cat->source,
	        topo->nchips, imc_engine_nest_where(e), imc_speed_setting());
	if (!foreground) {
		ssize_t w = write(ready[1], "y", 1);
		(void)w;
		close(ready[1]);
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
			close(null);
		}
	}
	int sig = 0;
	sigwait(&term, &sig);
	/* New readers find no object rather than a stale one. */
	imc_engine_destroy(e);
	unlink(pidfile);
	if (foreground)
		fprintf(stderr, "imcd: stopped by signal %d\n", sig);
	return 0;
}
