/*
 * imc accumulation mode through PAPI's public API (issue 13, item 3):
 *
 * 1. Two processes read the same nest page: imcd (argv[1]) publishes the
 *    nest pages at speed 7 (1000 ms); two forked processes count
 *    nest_powerbus0_imc::PM_PB_CYC:cpu=0 and each maps imcd's object
 *    (/dev/shm/<PAPI_HERITAGE_IMC_SHM>-chip0-180000, imcd(8)) read-only:
 *    PAPI_read's delta equals the object's big-endian counter's delta at
 *    the event's offset (from the event's description, "event=0x80"), and
 *    both processes read the same counter value at the same time.
 *    Then imcd is killed under a running set: its reads fail, saying the
 *    counts are frozen, and PAPI_reset moves it onto this process's page.
 * 2. Without imcd, the process's own engine counts the nest event: the
 *    modelled PowerBus clock, count x scale 256 / 2 GHz = elapsed wall
 *    time within one collection period.
 * 3. Core and thread events at three collection speeds (PAPI_HERITAGE_IMC_
 *    SPEED = 0, 3, 5: 128 us, 4 ms, 64 ms) over a known loop:
 *    core_imc::CPM_32MHZ_CYC x 512 / 32 MHz against CLOCK_MONOTONIC, within
 *    one period either way (the page is at most one period stale at start
 *    and at read), and the same at PAPI_stop;
 *    thread_imc::CPM_CS_32MHZ_CYC_USER x 512 / 32 MHz against
 *    getrusage(RUSAGE_THREAD)'s user time, within one period plus the
 *    user/system split's tick granularity (20 ms).  The speed is honoured:
 *    reads 1 ms apart change nearly every time at 128 us, rarely at 64 ms.
 *    PAPI_stop returns the read PAPI makes before stopping (papi.c), so
 *    it is a period stale too; with PAPI_HERITAGE_IMC_EXACT=1 (the fourth
 *    run, at 64 ms) start and reads update first and match to the raw unit.
 * 4. The kernel's rule: core_imc while another process holds thread_imc is
 *    PAPI_ECNFLCT naming that pid; core and thread events in one set too.
 * Needs no perf: every event here is fed by clocks (imc(3)).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "heritage_test.h"
#include "knob.h"

#define PB_CYC "imc:::nest_powerbus0_imc::PM_PB_CYC:cpu=0"
#define CORE_32 "imc:::core_imc::CPM_32MHZ_CYC:cpu=0"
#define THREAD_32U "imc:::thread_imc::CPM_CS_32MHZ_CYC_USER"
#define REGION_SIZE 0x40000 /* the POWER9 nest region (power9-units.csv: size) */

static double now_s(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double user_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
}

static void spin(double seconds)
{
	volatile unsigned long x = 0;
	double t0 = now_s(CLOCK_THREAD_CPUTIME_ID);
	while (now_s(CLOCK_THREAD_CPUTIME_ID) - t0 < seconds)
		for (int i = 0; i < 20000; i++)
			x += (unsigned long)i;
}

static void init_papi(void)
{
	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	if (rc != PAPI_VER_CURRENT) {
		fprintf(stderr, "PAPI_library_init: %d\n", rc);
		exit(1);
	}
}

static int set_of(const char *a, const char *b)
{
	int es = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&es));
	CHECK_PAPI(PAPI_add_named_event(es, a));
	if (b)
		CHECK_PAPI(PAPI_add_named_event(es, b));
	return es;
}

/* The byte offset of an event in its page: perf's event=0x.. in its description. */
static unsigned long event_offset(const char *name)
{
	int code;
	PAPI_event_info_t info;
	CHECK_PAPI(PAPI_event_name_to_code(name, &code));
	CHECK_PAPI(PAPI_get_event_info(code, &info));
	const char *p = strstr(info.long_descr, "event=0x");
	EXPECT(p != NULL, "no event=0x in %s's description: %s", name, info.long_descr);
	return p ? strtoul(p + 8, NULL, 16) : 0;
}

static uint64_t be_load(const volatile uint8_t *page, unsigned long off)
{
	uint64_t v = 0;
	uint64_t raw = *(const volatile uint64_t *)(page + off);
	const uint8_t *b = (const uint8_t *)&raw;
	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

static char object[256];

/* ---- 1: two processes, one nest page ---------------------------------------------------- */
static int nest_reader(int role, int to_peer, int from_peer)
{
	init_papi();
	unsigned long off = event_offset(PB_CYC);
	EXPECT(off == 0x80, "PM_PB_CYC at offset %#lx, the catalog says 0x8 + 0x78", off);
	int fd = open(object, O_RDONLY);
	EXPECT(fd >= 0, "%s: %s", object, strerror(errno));
	if (fd < 0)
		return 1;
	const uint8_t *page = mmap(NULL, REGION_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	EXPECT(page != MAP_FAILED, "mmap %s: %s", object, strerror(errno));
	if (page == MAP_FAILED)
		return 1;
	int es = set_of(PB_CYC, NULL);
	long long v = 0;
	int checked = 0;
	for (int tries = 0; tries < 3 && !checked; tries++) {
		uint64_t r0 = be_load(page, off);
		CHECK_PAPI(PAPI_start(es));
		uint64_t r0b = be_load(page, off);
		struct timespec d = { 1, 200000000 }; /* imcd updates at least once */
		nanosleep(&d, NULL);
		uint64_t r1 = be_load(page, off);
		CHECK_PAPI(PAPI_read(es, &v));
		uint64_t r1b = be_load(page, off);
		CHECK_PAPI(PAPI_stop(es, &v));
		if (r0 != r0b || r1 != r1b)
			continue; /* imcd updated between the load and PAPI's: again */
		EXPECT((uint64_t)v == r1 - r0, "process %d: PAPI_read %lld, imcd's page moved %llu", role, v,
		       (unsigned long long)(r1 - r0));
		/* 1.2 s of a 2 GHz clock in units of 256 (the catalog's scale). */
		EXPECT(v > 0 && v * 256.0 / 2e9 < 1.3, "process %d: PM_PB_CYC %lld over 1.2 s", role, v);
		checked = 1;
	}
	EXPECT(checked, "process %d: imcd's page kept moving under every read", role);
	/* The same value in both processes at the same moment. */
	int same = 0;
	for (int tries = 0; tries < 5 && !same; tries++) {
		uint64_t mine, theirs = 0;
		if (role == 0) {
			char go = 'g';
			if (write(to_peer, &go, 1) != 1)
				return 1;
			mine = be_load(page, off);
			if (read(from_peer, &theirs, sizeof theirs) != (ssize_t)sizeof theirs)
				return 1;
			same = mine == theirs;
			char verdict = same ? 'y' : 'n';
			if (write(to_peer, &verdict, 1) != 1)
				return 1;
			printf("nest page: process 0 read %llu, process 1 read %llu\n", (unsigned long long)mine,
			       (unsigned long long)theirs);
		} else {
			char go;
			if (read(from_peer, &go, 1) != 1)
				return 1;
			mine = be_load(page, off);
			if (write(to_peer, &mine, sizeof mine) != (ssize_t)sizeof mine || read(from_peer, &go, 1) != 1)
				return 1;
			same = go == 'y';
		}
	}
	EXPECT(same, "process %d: the two processes never read the same value", role);
	return heritage_test_done(role ? "imc_accum reader 1" : "imc_accum reader 0");
}

static pid_t start_imcd(const char *imcd, const char *pidfile, const char *speed)
{
	pid_t pid = fork();
	if (pid == 0) {
		char opt[600];
		snprintf(opt, sizeof opt, "--pidfile=%s", pidfile);
		execl(imcd, imcd, "-f", speed, opt, (char *)NULL);
		perror(imcd);
		_exit(127);
	}
	/* Up when its object is there. */
	for (int i = 0; i < 500; i++) {
		struct stat st;
		if (stat(object, &st) == 0 && st.st_size > REGION_SIZE)
			return pid;
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return -1;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/* imcd at speed, publishing: its pid, or -1 (the failure counted). */
static pid_t imcd_up(const char *imcd, const char *pidfile, const char *speed)
{
	pid_t d = start_imcd(imcd, pidfile, speed);
	EXPECT(d > 0, "imcd (%s) did not publish %s within 5 s", imcd, object);
	return d;
}

static void killed_under_a_set(const char *imcd, const char *pidfile);

static void two_processes(const char *imcd)
{
	char pidfile[512];
	const char *tmp = getenv("TMPDIR");
	snprintf(pidfile, sizeof pidfile, "%s/imc_accum-imcd-%d.pid", tmp && *tmp ? tmp : P_tmpdir, (int)getpid());
	pid_t d = imcd_up(imcd, pidfile, "--speed=7");
	if (d <= 0)
		return;
	int a2b[2], b2a[2];
	if (pipe(a2b) != 0 || pipe(b2a) != 0)
		exit(1);
	pid_t r[2];
	for (int role = 0; role < 2; role++) {
		r[role] = fork();
		if (r[role] == 0)
			_exit(nest_reader(role, role ? b2a[1] : a2b[1], role ? a2b[0] : b2a[0]));
	}
	for (int role = 0; role < 2; role++) {
		int st;
		waitpid(r[role], &st, 0);
		EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "nest reader %d failed (status %#x)", role, st);
	}
	kill(d, SIGTERM);
	int st;
	waitpid(d, &st, 0);
	EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "imcd ended with status %#x", st);
	EXPECT(access(object, F_OK) != 0, "imcd left %s behind", object);
	killed_under_a_set(imcd, pidfile);
}

/* ---- 1b: imcd killed under a running set ---------------------------------------------- */
/* A read is a load of imcd's page, which keeps its last values when imcd
 * dies: the set read them for good and said nothing.  Its reads fail now,
 * saying so, once imcd's heartbeat is 2 periods late (64 ms each here);
 * PAPI_stop too, as PAPI reads before it stops; PAPI_reset moves the set
 * onto this process's own nest page, which counts on. */
static int reader_across_kill(int to_main, int from_main)
{
	init_papi();
	int es = set_of(PB_CYC, NULL);
	long long v = 0;
	CHECK_PAPI(PAPI_start(es));
	struct timespec d = { 0, 300000000 };
	nanosleep(&d, NULL);
	CHECK_PAPI(PAPI_read(es, &v));
	EXPECT(v > 0, "PM_PB_CYC %lld from imcd's page after 0.3 s", v);
	char c = 's';
	if (write(to_main, &c, 1) != 1 || read(from_main, &c, 1) != 1) /* imcd killed and reaped */
		return 1;
	double t0 = now_s(CLOCK_MONOTONIC), failed_at = -1;
	int rc = PAPI_OK;
	while (rc == PAPI_OK && now_s(CLOCK_MONOTONIC) - t0 < 5) {
		rc = PAPI_read(es, &v);
		if (rc == PAPI_OK)
			usleep(5000);
	}
	failed_at = now_s(CLOCK_MONOTONIC) - t0;
	EXPECT(rc == PAPI_ESYS && strstr(papi_heritage_last_error(), "frozen"),
	       "PAPI_read of a killed imcd's page for %.1f s: %s, %s", failed_at, PAPI_strerror(rc),
	       papi_heritage_last_error());
	printf("imcd killed: PAPI_read failed %.3f s after: %s\n", failed_at, papi_heritage_last_error());
	rc = PAPI_read(es, &v);
	EXPECT(rc == PAPI_ESYS, "a second PAPI_read: %s (it must not turn silent)", PAPI_strerror(rc));
	rc = PAPI_stop(es, &v);
	EXPECT(rc == PAPI_ESYS, "PAPI_stop on frozen counts: %s", PAPI_strerror(rc));
	CHECK_PAPI(PAPI_reset(es));
	double r0 = now_s(CLOCK_MONOTONIC);
	nanosleep(&d, NULL);
	CHECK_PAPI(PAPI_stop(es, &v));
	double got = v * 256.0 / 2e9, took = now_s(CLOCK_MONOTONIC) - r0;
	printf("after PAPI_reset: PM_PB_CYC %lld = %.3f s of a 2 GHz clock over %.3f s\n", v, got, took);
	/* This process's page: up to one period (speed 7 here: 1 s) stale at
	 * the stop's read, and not ahead of the wall clock. */
	EXPECT(v >= 0 && got <= took + 0.001, "PM_PB_CYC %.3f s after PAPI_reset, over %.3f s", got, took);
	CHECK_PAPI(PAPI_cleanup_eventset(es));
	CHECK_PAPI(PAPI_destroy_eventset(&es));
	return heritage_test_done("imc_accum reader across imcd's death");
}

static void killed_under_a_set(const char *imcd, const char *pidfile)
{
	pid_t d = imcd_up(imcd, pidfile, "--speed=5");
	if (d <= 0)
		return;
	int to_main[2], from_main[2];
	if (pipe(to_main) != 0 || pipe(from_main) != 0)
		exit(1);
	pid_t r = fork();
	if (r == 0)
		_exit(reader_across_kill(to_main[1], from_main[0]));
	char c;
	int started = read(to_main[0], &c, 1) == 1;
	kill(d, SIGKILL);
	waitpid(d, NULL, 0); /* reaped: gone, not a zombie, to heritage_daemon_seen */
	if (started && write(from_main[1], "k", 1) != 1)
		exit(1);
	int st;
	waitpid(r, &st, 0);
	EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the reader across imcd's death failed (status %#x)", st);
	/* A killed imcd leaves its objects and pid file. */
	unlink(pidfile);
	char prefix[256];
	snprintf(prefix, sizeof prefix, "%s-chip", getenv("PAPI_HERITAGE_IMC_SHM"));
	DIR *dir = opendir("/dev/shm");
	struct dirent *e;
	while (dir && (e = readdir(dir)) != NULL)
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
			char path[512];
			snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
			unlink(path);
		}
	if (dir)
		closedir(dir);
}

/* ---- 2: the process's own nest page ------------------------------------------------------ */
static void own_nest(void)
{
	knob_set("PAPI_HERITAGE_IMC_SPEED", "3"); /* 4 ms, through this process's control block */
	int es = set_of(PB_CYC, NULL);
	long long v;
	double t0 = now_s(CLOCK_MONOTONIC);
	CHECK_PAPI(PAPI_start(es));
	double t0b = now_s(CLOCK_MONOTONIC);
	struct timespec d = { 0, 100000000 };
	nanosleep(&d, NULL);
	double t1 = now_s(CLOCK_MONOTONIC);
	CHECK_PAPI(PAPI_stop(es, &v));
	double t1b = now_s(CLOCK_MONOTONIC);
	double got = v * 256.0 / 2e9;
	printf("own nest page: PM_PB_CYC %lld = %.6f s of a 2 GHz clock over %.6f..%.6f s\n", v, got, t1 - t0b, t1b - t0);
	/* Armed at start (exact there); PAPI_stop's value is a read, up to one
	 * period (4 ms) stale, plus the engine thread's scheduling delay. */
	EXPECT(got >= t1 - t0b - 0.004 - 0.005 && got <= t1b - t0 + 0.001, "PM_PB_CYC %.6f s outside [%.6f, %.6f]", got,
	       t1 - t0b - 0.009, t1b - t0 + 0.001);
	CHECK_PAPI(PAPI_cleanup_eventset(es));
	CHECK_PAPI(PAPI_destroy_eventset(&es));
}

/* ---- 3: core and thread at three speeds ---------------------------------------------------- */
static int distinct_reads(int es)
{
	long long v, prev = -1;
	int n = 0;
	for (int i = 0; i < 20; i++) {
		CHECK_PAPI(PAPI_read(es, &v));
		n += v != prev;
		prev = v;
		spin(0.001);
	}
	return n;
}

static void speeds(void)
{
	static const struct {
		const char *speed;
		double period;
		int exact;
	} runs[] = { { "0", 128e-6, 0 }, { "3", 4e-3, 0 }, { "5", 64e-3, 0 }, { "5", 64e-3, 1 } };
	const double slack = 0.030; /* the engine thread's scheduling delay on a shared machine (6 ms seen beside builds) */
	const double quantum = 512 / 32e6; /* one raw unit: 512 ticks of 32 MHz */
	for (unsigned k = 0; k < sizeof runs / sizeof runs[0]; k++) {
		double P = runs[k].period;
		knob_set("PAPI_HERITAGE_IMC_SPEED", runs[k].speed);
		knob_set("PAPI_HERITAGE_IMC_EXACT", runs[k].exact ? "1" : "0");
		/* Exact: start and every read update the page first. */
		double Pr = runs[k].exact ? 0 : P;
		/* core: the core's 32 MHz clock against the wall clock */
		int es = set_of(CORE_32, NULL);
		long long v, vs;
		double a = now_s(CLOCK_MONOTONIC);
		CHECK_PAPI(PAPI_start(es));
		double ab = now_s(CLOCK_MONOTONIC);
		spin(0.100);
		double b = now_s(CLOCK_MONOTONIC);
		CHECK_PAPI(PAPI_read(es, &v));
		double bb = now_s(CLOCK_MONOTONIC);
		int distinct = distinct_reads(es);
		double c = now_s(CLOCK_MONOTONIC);
		CHECK_PAPI(PAPI_stop(es, &vs));
		double cb = now_s(CLOCK_MONOTONIC);
		double got = v * 512 / 32e6, gots = vs * 512 / 32e6;
		printf("speed %s%s: core CPM_32MHZ_CYC read %.6f s (wall %.6f..%.6f), stop %.6f s (wall %.6f..%.6f), "
		       "%d distinct of 20 reads 1 ms apart\n", runs[k].speed, runs[k].exact ? " exact" : "", got, b - ab, bb - a, gots, c - ab, cb - a,
		       distinct);
		EXPECT(got >= b - ab - Pr - quantum - slack && got <= bb - a + Pr + quantum,
		       "speed %s: core read %.6f s outside the wall %.6f..%.6f s +- one period %.6f", runs[k].speed, got,
		       b - ab, bb - a, P);
		/* PAPI_stop's values are the read PAPI makes before stopping. */
		EXPECT(gots >= c - ab - Pr - quantum - slack && gots <= cb - a + Pr + quantum,
		       "speed %s: core stop %.6f s, wall %.6f..%.6f s (a read's: up to a period stale at each end)",
		       runs[k].speed, gots, c - ab, cb - a);
		if (P < 1e-3)
			EXPECT(distinct >= 10, "speed %s: only %d of 20 reads 1 ms apart differ", runs[k].speed, distinct);
		if (P > 50e-3 && !runs[k].exact)
			EXPECT(distinct <= 3, "speed %s: %d of 20 reads 1 ms apart differ", runs[k].speed, distinct);
		CHECK_PAPI(PAPI_cleanup_eventset(es));
		CHECK_PAPI(PAPI_destroy_eventset(&es));

		/* thread: this task thread's user time */
		const double split = 0.020; /* the user/system split's tick granularity (imc(3)) */
		es = set_of(THREAD_32U, NULL);
		double u0 = user_s();
		CHECK_PAPI(PAPI_start(es));
		spin(0.120);
		CHECK_PAPI(PAPI_read(es, &v));
		double u1 = user_s();
		spin(0.010);
		CHECK_PAPI(PAPI_stop(es, &vs));
		double u2 = user_s();
		got = v * 512 / 32e6;
		gots = vs * 512 / 32e6;
		printf("speed %s%s: thread CPM_CS_32MHZ_CYC_USER read %.6f s (user %.6f), stop %.6f s (user %.6f)\n",
		       runs[k].speed, runs[k].exact ? " exact" : "", got, u1 - u0, gots, u2 - u0);
		EXPECT(got >= u1 - u0 - Pr - split - slack && got <= u1 - u0 + Pr + split,
		       "speed %s: thread read %.6f s, user time %.6f s (+- %.6f + %.3f)", runs[k].speed, got, u1 - u0, P,
		       split);
		EXPECT(gots >= u2 - u0 - Pr - split - slack && gots <= u2 - u0 + Pr + split,
		       "speed %s: thread stop %.6f s, user time %.6f s", runs[k].speed, gots, u2 - u0);
		CHECK_PAPI(PAPI_cleanup_eventset(es));
		CHECK_PAPI(PAPI_destroy_eventset(&es));
	}
}

/* ---- 4: exclusivity ------------------------------------------------------------------------ */
static void exclusive(void)
{
	int rc, es = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&es));
	CHECK_PAPI(PAPI_add_named_event(es, THREAD_32U));
	rc = PAPI_add_named_event(es, CORE_32);
	EXPECT(rc == PAPI_ECNFLCT, "core and thread events in one set: %d, want PAPI_ECNFLCT", rc);
	int go[2], done[2];
	if (pipe(go) != 0 || pipe(done) != 0)
		exit(1);
	pid_t child = fork();
	if (child == 0) {
		char c;
		int ces = set_of(CORE_32, NULL);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		int crc = PAPI_start(ces);
		char want[64];
		snprintf(want, sizeof want, "thread_imc is in use by pid %d", (int)getppid());
		printf("core_imc while the parent counts thread_imc: %s: %s\n", PAPI_strerror(crc),
		       papi_heritage_last_error());
		int ok = crc == PAPI_ECNFLCT && strstr(papi_heritage_last_error(), want);
		if (write(done[1], "x", 1) != 1)
			_exit(2);
		_exit(ok ? 0 : 1);
	}
	close(go[0]);
	close(done[1]); /* a child that dies is an end of file here, not a hang */
	CHECK_PAPI(PAPI_start(es));
	if (write(go[1], "g", 1) != 1)
		exit(1);
	char c;
	EXPECT(read(done[0], &c, 1) == 1, "the child ended before trying core_imc");
	long long v;
	CHECK_PAPI(PAPI_stop(es, &v));
	int st;
	waitpid(child, &st, 0);
	EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the second domain was not refused with the holder's pid (%#x)", st);
	/* Released at stop: core_imc may count now. */
	int ces = set_of(CORE_32, NULL);
	CHECK_PAPI(PAPI_start(ces));
	CHECK_PAPI(PAPI_stop(ces, &v));
}

int main(int argc, char **argv)
{
	char shm[128], uid[32];
	if (!getenv("PAPI_HERITAGE_IMC_SHM")) {
		snprintf(shm, sizeof shm, "imc-accum-%d", (int)getpid());
		knob_set("PAPI_HERITAGE_IMC_SHM", shm);
	}
	/* imcd runs as this account here: trust its objects. */
	snprintf(uid, sizeof uid, "%u", (unsigned)geteuid());
	knob_set("PAPI_HERITAGE_IMC_SERVICE_USER", uid);
	snprintf(object, sizeof object, "/dev/shm/%s-chip0-180000", getenv("PAPI_HERITAGE_IMC_SHM"));

	if (argc > 1)
		two_processes(argv[1]); /* before this process starts PAPI: its readers are fresh processes */
	else
		printf("no imcd given: the two-process nest check is not run\n");
	init_papi();
	own_nest();
	speeds();
	exclusive();
	return heritage_test_done("imc_accum");
}
