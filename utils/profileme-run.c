/*
 * profileme-run(1): the dcpid of this project.  Runs a command with every
 * thread of it sampled by a ProfileMe backend and writes the profile
 * database (pm_db.h, dcpicat(1)) when it exits.
 *
 * The sampling happens inside the command, in libprofileme-collect.so
 * (utils/profileme_collect.c), preloaded: backends sample the calling
 * thread.  Before starting the command we check here what would make the
 * run useless: the backend is chosen and started once on this thread (so a
 * backend that cannot count is refused with its reason before the command
 * runs, as the probes promise), and the database directory is made and
 * written to.  The library reports its outcome through a pipe; we print it
 * and return the command's status.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "profileme/pm_collect.h"
#include "profileme/pm_db.h"

#ifndef PROFILEME_PKGLIBDIR
#define PROFILEME_PKGLIBDIR "/usr/local/lib/papi-heritage"
#endif
#define COLLECT_LIB "libprofileme-collect.so"

/* Our own failures, as env(1) and timeout(1) report theirs. */
#define EXIT_OWN 125

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: profileme-run [-o DB] [--period N] [--backend auto|ibs|soft] [-q] -- CMD [ARGS...]\n"
	        "Runs CMD with every thread sampled by ProfileMe and writes the profile database\n"
	        "(one epoch directory in DB, read with dcpicat, dcpiprof, dcpilist) when it exits.\n"
	        "  -o, --db DB        the database directory (default: $DCPIDB, else ./dcpidb)\n"
	        "  --period N         sampling period in the backend's unit (soft: ns of thread CPU\n"
	        "                     time, default 1000000; ibs: dispatched ops, a multiple of 16)\n"
	        "  --backend B        auto (default), ibs or soft\n"
	        "  -q, --quiet        no summary line on stderr\n"
	        "  -h, --help         this text\n"
	        "Exit status: CMD's; 128+N when CMD is killed by signal N; 127 CMD not found,\n"
	        "126 not executable; 125 profileme-run's own failure (no backend can count here,\n"
	        "the database cannot be written) when CMD itself exited 0 or did not run.\n");
}

/* libprofileme-collect.so: beside us (the build tree), in ../lib/papi-heritage
 * from our directory (a relocated install), then where it was installed. */
static int find_lib(char *out, size_t len)
{
	char self[PATH_MAX - 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		self[n] = 0;
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			snprintf(out, len, "%s/%s", self, COLLECT_LIB);
			if (!access(out, R_OK))
				return 0;
			snprintf(out, len, "%s/../lib/papi-heritage/%s", self, COLLECT_LIB);
			if (!access(out, R_OK))
				return 0;
		}
	}
	snprintf(out, len, "%s/%s", PROFILEME_PKGLIBDIR, COLLECT_LIB);
	return access(out, R_OK) ? -ENOENT : 0;
}

/* A run the program did not finish leaves the writer's hidden directory
 * (.<epoch>.<pid>.tmp*): remove it, so no half-written epoch stays. */
static void remove_leftovers(const char *db, pid_t pid)
{
	char tag[64], p[PATH_MAX + 256], q[PATH_MAX * 2];
	snprintf(tag, sizeof tag, ".%ld.tmp", (long)pid);
	DIR *d = opendir(db);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] != '.' || !strstr(de->d_name, tag))
			continue;
		snprintf(p, sizeof p, "%s/%s", db, de->d_name);
		DIR *e = opendir(p);
		if (e) {
			struct dirent *f;
			while ((f = readdir(e)))
				if (strcmp(f->d_name, ".") && strcmp(f->d_name, "..")) {
					snprintf(q, sizeof q, "%s/%s", p, f->d_name);
					unlink(q);
				}
			closedir(e);
		}
		rmdir(p);
	}
	closedir(d);
}

/* A CPU-time timer is checked only at a kernel tick that finds its thread
 * running, so a thread sharing its CPU can be passed over for long
 * stretches: on this 2-vCPU Intel guest with three busy loops beside it, a
 * timer of 8 ms on 300 ms of a thread's CPU time fired 0 times in 1 run of
 * 15 (its expiry due, never delivered), and fewer than half the periods in
 * others.  Say so, rather than leave samples x period to read as the
 * program's CPU time. */
static void note_shortfall(unsigned long long got, unsigned long long cpu_ns, uint64_t per, const char *unit)
{
	if (strcmp(unit, "ns") || !per)
		return;
	unsigned long long expected = cpu_ns / per;
	if (expected < 8 || got * 2 >= expected)
		return;
	fprintf(stderr,
	        "profileme-run: %llu samples for %llu ms of the program's CPU time, where its period gives %llu: "
	        "the kernel fires CPU-time timers only at ticks that find the thread running, and a loaded machine "
	        "misses threads (profileme(3)); estimates from this profile are low\n",
	        got, cpu_ns / 1000000, expected);
}

int main(int argc, char **argv)
{
	const char *db = NULL, *period = NULL, *backend = NULL;
	int quiet = 0;
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'o' },     { "period", required_argument, NULL, 'p' },
		{ "backend", required_argument, NULL, 'b' }, { "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },          { 0, 0, 0, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "+o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			db = optarg;
			break;
		case 'p':
			period = optarg;
			break;
		case 'b':
			backend = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_OWN;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "profileme-run: no command to run\n");
		usage(stderr);
		return EXIT_OWN;
	}
	if (!db)
		db = getenv("DCPIDB");
	if (!db || !*db)
		db = "dcpidb";
	/* The settings the library reads, the same in us for the check. */
	if (backend)
		setenv("PAPI_HERITAGE_PROFILEME_BACKEND", backend, 1);
	if (period)
		setenv("PAPI_HERITAGE_PROFILEME_PERIOD", period, 1);
	heritage_env_load(); /* with those two */
	if (heritage_env_check("profileme") != 0) {
		fprintf(stderr, "profileme-run: %s\n", heritage_last_error());
		return EXIT_OWN;
	}

	char why[512], lib[PATH_MAX];
	const struct heritage_backend *b;
	uint64_t per;
	int err = pm_backend_choose(&b, why, sizeof why);
	if (err) {
		/* -EINVAL: a bad setting, not this machine. */
		fprintf(stderr, "profileme-run: %s%s\n", err == -EINVAL ? "" : "cannot sample here: ", why);
		return EXIT_OWN;
	}
	if (pm_period_for(b, &per, why, sizeof why)) {
		fprintf(stderr, "profileme-run: %s\n", why);
		return EXIT_OWN;
	}
	/* A backend whose mechanism works may still refuse this thread (a
	 * resource, a limit): try it once here, before the command runs. */
	struct pm_thread t;
	if (pm_thread_start(&t, b, per, why, sizeof why)) {
		fprintf(stderr, "profileme-run: cannot sample here: the %s backend refused this thread: %s\n", b->name,
		        why);
		return EXIT_OWN;
	}
	pm_thread_stop(&t, NULL, NULL);
	struct pm_db_writer *w;
	if (pm_db_writer_open(&w, db, b->name, ((const struct pm_backend_ops *)b->ops)->unit, per, 0, why,
	                      sizeof why)) {
		fprintf(stderr, "profileme-run: %s\n", why);
		return EXIT_OWN;
	}
	pm_db_writer_discard(w);
	if (find_lib(lib, sizeof lib)) {
		fprintf(stderr, "profileme-run: %s not found beside %s, in ../lib/papi-heritage from there, nor in %s\n", COLLECT_LIB, argv[0],
		        PROFILEME_PKGLIBDIR);
		return EXIT_OWN;
	}

	/* exec's failure comes back through a close-on-exec pipe; the
	 * library's report through another the program inherits. */
	int xp[2], rp[2];
	if (pipe2(xp, O_CLOEXEC) || pipe(rp)) {
		perror("profileme-run: pipe");
		return EXIT_OWN;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		perror("profileme-run: fork");
		return EXIT_OWN;
	}
	if (pid == 0) {
		close(xp[0]);
		close(rp[0]);
		char num[32], *pre = NULL;
		const char *old = getenv("LD_PRELOAD");
		if (old && *old) {
			if (asprintf(&pre, "%s %s", lib, old) < 0)
				_exit(EXIT_OWN);
		}
		setenv("LD_PRELOAD", pre ? pre : lib, 1);
		setenv("PAPI_HERITAGE_PROFILEME_RUN_DB", db, 1);
		snprintf(num, sizeof num, "%ld", (long)getpid());
		setenv("PAPI_HERITAGE_PROFILEME_RUN_PID", num, 1);
		snprintf(num, sizeof num, "%d", rp[1]);
		setenv("PAPI_HERITAGE_PROFILEME_RUN_FD", num, 1);
		execvp(argv[optind], argv + optind);
		int e = errno;
		ssize_t r = write(xp[1], &e, sizeof e);
		(void)r;
		_exit(e == ENOENT ? 127 : 126);
	}
	close(xp[1]);
	close(rp[1]);
	/* The terminal's ^C and ^\ are the program's to handle: we wait to report. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	int e = 0;
	ssize_t got = read(xp[0], &e, sizeof e);
	close(xp[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			perror("profileme-run: waitpid");
			return EXIT_OWN;
		}
	if (got == (ssize_t)sizeof e) {
		fprintf(stderr, "profileme-run: %s: %s\n", argv[optind], strerror(e));
		return e == ENOENT ? 127 : 126;
	}
	int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);

	/* What the library said: the program has ended, so what it wrote is in
	 * the pipe (a child it forked may still hold the pipe open: read what
	 * is there, do not wait for its end). */
	fcntl(rp[0], F_SETFL, O_NONBLOCK);
	char buf[8192];
	size_t n = 0;
	ssize_t r;
	while (n < sizeof buf - 1 && (r = read(rp[0], buf + n, sizeof buf - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = 0;
	close(rp[0]);
	int ok = 0;
	for (char *line = buf, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl)
			break;
		*nl = 0;
		if (!strncmp(line, "ok ", 3)) {
			unsigned long long samples, lost, threads, cpu_ns;
			char dir[PATH_MAX];
			if (sscanf(line + 3, "%llu %llu %llu %llu %4095[^\n]", &samples, &lost, &threads, &cpu_ns, dir) ==
			    5) {
				ok = 1;
				const char *unit = ((const struct pm_backend_ops *)b->ops)->unit;
				if (!quiet) {
					fprintf(stderr,
					        "profileme-run: %llu samples (%llu lost) of %llu thread(s), %s backend, "
					        "period %llu %s: %s\n",
					        samples, lost, threads, b->name, (unsigned long long)per, unit, dir);
					note_shortfall(samples + lost, cpu_ns, per, unit);
				}
			}
		} else if (!strncmp(line, "error ", 6)) {
			fprintf(stderr, "profileme-run: %s\n", line + 6);
		} else if (!strncmp(line, "warn ", 5)) {
			fprintf(stderr, "profileme-run: %s\n", line + 5);
		}
	}
	if (!ok) {
		remove_leftovers(db, pid);
		if (WIFSIGNALED(st))
			fprintf(stderr, "profileme-run: %s killed by signal %d (%s): no profile written\n", argv[optind],
			        WTERMSIG(st), strsignal(WTERMSIG(st)));
		else if (!n)
			fprintf(stderr,
			        "profileme-run: %s ended without writing a profile (it left by _exit or exec, or "
			        "closed the report pipe)\n",
			        argv[optind]);
		else
			fprintf(stderr, "profileme-run: no profile written\n");
		return status ? status : EXIT_OWN;
	}
	return status;
}
