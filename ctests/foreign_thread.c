/*
 * foreign_thread: an event set driven from a thread other than the one that
 * started it.  Each component here counts in the starting thread (its
 * single-step traps, its thread-local counters, its FP trap mode), so:
 *
 *   itanium2      PAPI_read, PAPI_reset and PAPI_stop from another thread are
 *                 refused (PAPI_EINVAL, with a message), and the set counts on
 *                 exactly; if the owner exits without stopping, still refused.
 *   alpha21064    PAPI_stop from another thread is refused while the owner
 *                 lives (PAPI_read is fine: the interrupts are shared);
 *                 once the owner has exited, any thread may stop the set and
 *                 gets the owner's count.
 *   paragon_rpm   with an FP trap event, as alpha21064.
 *   alpha21064_spawn  the owner, single-stepped by the software backend,
 *                 creates threads and forks while its set counts, with a
 *                 SIGTRAP handler of the program's installed: the new thread
 *                 and the child inherit TF from its registers and must run on
 *                 with no SIGTRAP reaching that handler, and the owner's
 *                 count stays right.
 *
 * Usage: foreign_thread itanium2|itanium2_exited|alpha21064|alpha21064_exited|alpha21064_spawn|paragon_rpm
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heritage_test.h"
#include "knob.h"

long alpha_load_loop(const long *p, long n); /* alpha_loops.S: exactly n loads */

enum { LOADS_BEFORE = 1000, LOADS_AFTER = 500 };

static int set = PAPI_NULL;
static long *buf;
static volatile int stage;         /* 1: the worker has started; 2: main is done */
static volatile double fzero = 0.0, fsink;

static void wait_stage(int s)
{
	while (stage < s)
		;
}

/* The owner thread, once it has started its set; joined already if it is
 * to exit without stopping (the worker returns early when its argument is
 * non-null). */
static pthread_t start_owner(void *(*worker)(void *), int exits)
{
	pthread_t t;
	static int exit_early;
	pthread_create(&t, NULL, worker, exits ? &exit_early : NULL);
	wait_stage(1);
	if (exits)
		pthread_join(t, NULL);
	return t;
}

static void expect_refused(const char *what, int rc, const char *why)
{
	EXPECT_EQ(what, rc, PAPI_EINVAL);
	if (rc == PAPI_EINVAL && !strstr(papi_heritage_last_error(), why)) {
		fprintf(stderr, "%s: the message does not say \"%s\": %s\n", what, why, papi_heritage_last_error());
		heritage_test_failures++;
	}
}

static void add(const char *name)
{
	CHECK_PAPI(PAPI_create_eventset(&set));
	int rc = PAPI_add_named_event(set, name);
	if (rc != PAPI_OK) {
		fprintf(stderr, "%s: %s (%s)\n", name, PAPI_strerror(rc), papi_heritage_last_error());
		exit(1);
	}
}

static void loads(long n)
{
	for (long i = 0; i < n; i++)
		fsink = (double)((volatile long *)buf)[i % 8];
}

/* ---- itanium2 ---------------------------------------------------------- */

static void *it2_worker(void *exit_early)
{
	CHECK_PAPI(PAPI_register_thread());
	add("itanium2:::LOADS_RETIRED");
	PAPI_option_t opt;
	memset(&opt, 0, sizeof opt);
	opt.addr.eventset = set;
	opt.addr.start = (vptr_t)buf;
	opt.addr.end = (vptr_t)(buf + 8);
	CHECK_PAPI(PAPI_set_opt(PAPI_DATA_ADDRESS, &opt));
	CHECK_PAPI(PAPI_start(set));
	loads(LOADS_BEFORE);
	stage = 1;
	if (exit_early)
		return NULL; /* without stopping: its counting goes with it */
	wait_stage(2);
	loads(LOADS_AFTER);
	long long v = -1;
	CHECK_PAPI(PAPI_stop(set, &v));
	EXPECT_EQ("the owner's count, after the refused calls", v, LOADS_BEFORE + LOADS_AFTER);
	char backend[32];
	papi_heritage_itanium2_backend(set, backend, sizeof backend);
	printf("itanium2 (%s backend): main's read, reset and stop refused; the owner counted %lld loads\n",
	       backend, v);
	return NULL;
}

static void test_itanium2(int exited)
{
	long long v = -1;
	pthread_t t = start_owner(it2_worker, exited);
	if (exited) {
		expect_refused("PAPI_stop after the owner exited", PAPI_stop(set, &v), "has exited");
		expect_refused("PAPI_read after the owner exited", PAPI_read(set, &v), "has exited");
		printf("itanium2: the owner exited without stopping; main's stop and read refused: %s\n",
		       papi_heritage_last_error());
		return;
	}
	expect_refused("PAPI_read from another thread", PAPI_read(set, &v), "started by thread");
	expect_refused("PAPI_reset from another thread", PAPI_reset(set), "started by thread");
	expect_refused("PAPI_stop from another thread", PAPI_stop(set, &v), "started by thread");
	EXPECT_EQ("nothing written by the refused calls", v, -1);
	stage = 2;
	pthread_join(t, NULL);
}

/* ---- alpha21064 -------------------------------------------------------- */

static void *alpha_worker(void *exit_early)
{
	CHECK_PAPI(PAPI_register_thread());
	add("alpha21064:::LOAD_INSNS:width=12");
	CHECK_PAPI(PAPI_start(set));
	alpha_load_loop(buf, 3 * 4096);
	stage = 1;
	if (exit_early)
		return NULL;
	wait_stage(2);
	alpha_load_loop(buf, 4096);
	long long v = -1;
	CHECK_PAPI(PAPI_stop(set, &v));
	/* 4 x 4096 loads in the loops, plus a few thousand in PAPI's code
	 * around them: one interrupt more at most (each is 4096 loads). */
	EXPECT(v == 4 * 4096 || v == 5 * 4096, "the owner's count: %lld", v);
	printf("alpha21064: main's stop refused while the owner ran; the owner's stop: %lld\n", v);
	return NULL;
}

static void test_alpha(int exited)
{
	long long v = -1;
	pthread_t t = start_owner(alpha_worker, exited);
	if (exited) {
		CHECK_PAPI(PAPI_stop(set, &v));
		EXPECT(v == 3 * 4096 || v == 4 * 4096, "the exited owner's count, stopped by main: %lld", v);
		CHECK_PAPI(PAPI_cleanup_eventset(set));
		CHECK_PAPI(PAPI_destroy_eventset(&set));
		printf("alpha21064: the owner exited without stopping; main stopped and destroyed the set: %lld\n", v);
		return;
	}
	CHECK_PAPI(PAPI_read(set, &v));
	EXPECT(v >= 3 * 4096, "main's read of the owner's count: %lld", v);
	expect_refused("PAPI_stop from another thread", PAPI_stop(set, &v), "started by thread");
	stage = 2;
	pthread_join(t, NULL);
}

static void *spawned(void *arg)
{
	*(volatile int *)arg = 1;
	return NULL;
}

static volatile int app_traps;

static void app_trap(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	app_traps++;
}

static void test_alpha_spawn(void)
{
	int ran = 0, status = -1;
	long long v = -1;
	/* The program's own SIGTRAP handler: without one, the engine's stray
	 * client already cleared an inherited TF; with one, the new thread's
	 * step trap reached it (ctests/stress). */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = app_trap;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGTRAP, &sa, NULL);
	CHECK_PAPI(PAPI_register_thread());
	add("alpha21064:::LOAD_INSNS:width=12");
	CHECK_PAPI(PAPI_start(set));
	alpha_load_loop(buf, 4096);
	for (int i = 0; i < 3; i++) {
		pthread_t t;
		EXPECT(pthread_create(&t, NULL, spawned, &ran) == 0, "pthread_create");
		pthread_join(t, NULL);
	}
	pid_t pid = fork();
	if (pid == 0)
		_exit(7);
	waitpid(pid, &status, 0);
	alpha_load_loop(buf, 4096);
	CHECK_PAPI(PAPI_stop(set, &v));
	EXPECT(ran == 1, "the threads created while the set counted did not run");
	EXPECT_EQ("SIGTRAPs that reached the program's handler (it raised none)", app_traps, 0);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 7, "the forked child: status %#x, want exit 7", status);
	/* 2 x 4096 loads in the loops, and the loads of pthread_create, fork
	 * and PAPI's code: thousands, not tens of thousands. */
	EXPECT(v % 4096 == 0 && v >= 2 * 4096 && v <= 8 * 4096, "the owner's count: %lld", v);
	printf("alpha21064: 3 threads created and a child forked while the set counted; the owner's count %lld\n", v);
}

/* ---- paragon_rpm ------------------------------------------------------- */

static void *rpm_worker(void *unused)
{
	(void)unused;
	CHECK_PAPI(PAPI_register_thread());
	add("paragon_rpm:::rpms_ft");
	CHECK_PAPI(PAPI_start(set));
	fsink = 1.0 / fzero;
	stage = 1;
	wait_stage(2);
	fsink = 1.0 / fzero;
	long long v = -1;
	CHECK_PAPI(PAPI_stop(set, &v));
	EXPECT_EQ("the owner's FP traps", v, 2);
	printf("paragon_rpm: main's stop refused; the owner counted %lld FP traps\n", v);
	return NULL;
}

static void test_rpm(void)
{
	long long v = -1;
	pthread_t t = start_owner(rpm_worker, 0);
	CHECK_PAPI(PAPI_read(set, &v));
	EXPECT_EQ("main's read of the owner's FP traps", v, 1);
	expect_refused("PAPI_stop from another thread", PAPI_stop(set, &v), "started by thread");
	stage = 2;
	pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	setvbuf(stdout, NULL, _IONBF, 0);
	/* Environment read when the components initialise: before PAPI. */
	if (strcmp(mode, "paragon_rpm") == 0)
		knob_set("PAPI_HERITAGE_PARAGON_RPM_FPE_TRAPS", "divbyzero");
	if (strncmp(mode, "alpha21064", 10) == 0)
		knob_set("PAPI_HERITAGE_ALPHA21064_BACKEND", "software");
	heritage_test_init();
	if (strncmp(mode, "alpha21064", 10) == 0)
		heritage_test_require_backend("alpha21064", "software");
	if (strcmp(mode, "paragon_rpm") == 0)
		heritage_test_require_mechanism("single_step"); /* the FP trap mode steps the trapping instruction */
	CHECK_PAPI(PAPI_thread_init(pthread_self));
	buf = calloc(8, sizeof *buf);
	if (!buf)
		return 1;
	if (strcmp(mode, "itanium2") == 0)
		test_itanium2(0);
	else if (strcmp(mode, "itanium2_exited") == 0)
		test_itanium2(1);
	else if (strcmp(mode, "alpha21064") == 0)
		test_alpha(0);
	else if (strcmp(mode, "alpha21064_exited") == 0)
		test_alpha(1);
	else if (strcmp(mode, "alpha21064_spawn") == 0)
		test_alpha_spawn();
	else if (strcmp(mode, "paragon_rpm") == 0)
		test_rpm();
	else {
		fprintf(stderr, "usage: foreign_thread itanium2|itanium2_exited|alpha21064|alpha21064_exited|alpha21064_spawn|paragon_rpm\n");
		return 2;
	}
	return heritage_test_done(mode);
}
