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
#include <unistd.h>

#include "common/heritage_daemon.h"
#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "imc/imc_catalog.h"
#include "imc/imc_engine.h"

int main(int argc, char **argv)
{
	char pidbuf[512];
	const char *pidfile = heritage_daemon_default_pidfile("imcd", pidbuf, sizeof pidbuf);
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
	int st = heritage_daemon_command("imcd", argc, argv, optind, pidfile);
	if (st >= 0)
		return st;
	heritage_env_load(); /* with --speed's setenv */
	if (heritage_env_check("imc") != 0) {
		fprintf(stderr, "imcd: %s\n", heritage_last_error());
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
	int pfd = heritage_daemon_lock("imcd", pidfile);
	if (pfd < 0)
		return 1;
	/* Detach first, so that the objects carry the daemon's pid; the parent
	 * waits for the child's word on whether it publishes. */
	int ready = -1;
	if (!foreground) {
		int status;
		int r = heritage_daemon_detach("imcd", &ready, &status);
		if (r != 0)
			return r < 0 ? 1 : status;
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
	heritage_daemon_write_pid("imcd", pfd, pidfile);
	fprintf(stderr, "imcd: pid %ld, catalog %s, %u chip(s): nest pages %s, speed %u\n", (long)getpid(), cat->source,
	        topo->nchips, imc_engine_nest_where(e), imc_speed_setting());
	if (!foreground)
		heritage_daemon_ready(ready);
	int sig = 0;
	sigwait(&term, &sig);
	/* New readers find no object rather than a stale one. */
	imc_engine_destroy(e);
	unlink(pidfile);
	if (foreground)
		fprintf(stderr, "imcd: stopped by signal %d\n", sig);
	return 0;
}
