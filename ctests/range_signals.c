/*
 * range_signals: a program counting an instruction range (IA64_INST_RETIRED
 * with PAPI_INSTR_ADDRESS) still ends on SIGTERM and SIGINT, and a handler
 * it installed for them runs, while it spends its time inside the range.
 * The pagetrap backend single-steps every instruction there; the signals
 * must reach the program between two steps, and the count must stay exact.
 * The blocktrap backend traps once per block (the routines carry unwind
 * information for it: .cfi_startproc); the tests/cases files run both.
 *
 * Each mode runs the counting program as a forked child looping in the
 * range (rs_until below, whose instruction count is known from the
 * iterations it returns) until a flag is set or it is killed; the parent
 * sends the signal about 200 ms after the child entered the range and
 * measures how long the child takes to react (at most 1 s allowed; the
 * child is killed with SIGKILL 3 s after the signal otherwise).
 *   term-default, int-default   no handler: the child dies by the signal;
 *   term-handler, int-handler   a handler (outside the range) sets the flag;
 *                               the loop stops; the count is exact;
 *   thread-handler              the same, SIGTERM sent by another thread of
 *                               the child to the looping thread (pthread_kill);
 *   threads-handler             two threads count the range and loop in it
 *                               (one steps, the other waits for the window,
 *                               parked); SIGTERM to the process stops both;
 *                               each count is exact;
 *   handler-in-range            the handler's two instructions lie inside the
 *                               range: they are counted too (as Itanium's
 *                               instruction range counts whatever retires
 *                               there), 5k + 2;
 *   term-blocked                the child blocks SIGTERM: it stays pending
 *                               and is not delivered (the parent's later
 *                               SIGINT stops the loop); the count is exact.
 * Usage: range_signals MODE.  The backend is PAPI_HERITAGE_ITANIUM2_BACKEND's
 * (pagetrap by default).
 *
 * Built with the instrument flags (ctests/range_signals_instr), the loop and
 * the handler are C (rs_until_c, rs_handler_c) and the instrument backend
 * counts them from their block hooks; their instruction counts are the
 * compiler's, so the child first measures them with the same event set: a
 * loop stopped by the flag at iteration 1, loops run to 1000 and 2000
 * iterations, one call of the handler.  The counts around the signal must
 * follow from those.  (gcc 12 here: 18, 8 per iteration, 3 at max, 5 for
 * the handler, as objdump of the binary shows them, the hook calls and
 * their set-up included.)
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "heritage_test.h"

/* long rs_until(const volatile int *flag, long max): loops until *flag is
 * non-zero or max iterations ran; returns the iterations k.  Stopped by the
 * flag it executes 5k instructions (xor; k-1 iterations of 5; add, cmpl,
 * jne; ret), having run to max 5max + 2.  rs_handler, in the same page: a
 * signal handler of two instructions that sets rs_flag. */
long rs_until(const volatile int *flag, long max);
void rs_handler(int sig);
extern char rs_until_end[], rs_handler_end[];
extern volatile int rs_flag __attribute__((visibility("hidden")));

__asm__(".text\n"
        "	.balign 4096\n"
        "	.globl rs_until\n"
        "	.type rs_until, @function\n"
        "rs_until:\n"
        "	.cfi_startproc\n"
        "	xor	%eax, %eax\n"
        "1:	add	$1, %rax\n"
        "	cmpl	$0, (%rdi)\n"
        "	jne	2f\n"
        "	cmp	%rsi, %rax\n"
        "	jb	1b\n"
        "2:	ret\n"
        "	.cfi_endproc\n"
        "	.globl rs_until_end\n"
        "rs_until_end:\n"
        "	.size rs_until, . - rs_until\n"
        "	.balign 256\n"
        "	.globl rs_handler\n"
        "	.type rs_handler, @function\n"
        "rs_handler:\n"
        "	.cfi_startproc\n"
        "	movl	$1, rs_flag(%rip)\n"
        "	ret\n"
        "	.cfi_endproc\n"
        "	.globl rs_handler_end\n"
        "rs_handler_end:\n"
        "	.size rs_handler, . - rs_handler\n"
        "	.balign 4096\n"
        ".data\n"
        "	.balign 4\n"
        "	.globl rs_flag\n"
        "	.hidden rs_flag\n"
        "rs_flag:\n"
        "	.long 0\n"
        ".text\n");

#if HERITAGE_TEST_INSTRUMENTED
/* Laid out in this order (-fno-toplevel-reorder): each *_end follows. */
/* A while, not a do-while: gcc's entry block then ends in the test, with a
 * block hook before it (a do-while's entry block jumps into the loop with
 * no hook of its own, which the block hooks cannot count). */
__attribute__((noinline)) long rs_until_c(const volatile int *flag, long max)
{
	long k = 1;
	while (!*flag && k < max)
		k++;
	return k;
}

__attribute__((noinline)) void rs_until_c_end(void)
{
	__asm__ volatile("");
}

__attribute__((noinline)) void rs_handler_c(int sig)
{
	(void)sig;
	rs_flag = 1;
}

__attribute__((noinline)) void rs_handler_c_end(void)
{
	__asm__ volatile("");
}
#define RS_LOOP rs_until_c
#define RS_LOOP_END ((const char *)(void *)rs_until_c_end)
#define RS_HANDLER rs_handler_c
#define RS_HANDLER_END ((const char *)(void *)rs_handler_c_end)
#define RS_BACKEND "instrument"
#else
#define RS_LOOP rs_until
#define RS_LOOP_END rs_until_end
#define RS_HANDLER rs_handler
#define RS_HANDLER_END rs_handler_end
#define RS_BACKEND "pagetrap"
#endif

#define LOOP_MAX (1L << 40) /* never reached: hours of stepping */
#define SEND_AFTER_NS 200000000LL
#define ALLOWED_NS 1000000000LL
#define GIVE_UP_NS 3000000000LL

enum sender { BY_PARENT, BY_THREAD };

struct mode {
	const char *name;
	int sig;           /* the signal that should end the loop or the process */
	int handler;       /* 0: default action; 1: C handler; 2: rs_handler (in range) */
	enum sender from;
	int blocked;       /* SIGTERM blocked, sent first; then sig (SIGINT) */
	int two;           /* a second thread counts and loops too */
};

static const struct mode modes[] = {
	{ .name = "term-default", .sig = SIGTERM },
	{ .name = "int-default", .sig = SIGINT },
	{ .name = "term-handler", .sig = SIGTERM, .handler = 1 },
	{ .name = "int-handler", .sig = SIGINT, .handler = 1 },
	{ .name = "thread-handler", .sig = SIGTERM, .handler = 1, .from = BY_THREAD },
	{ .name = "threads-handler", .sig = SIGTERM, .handler = 1, .two = 1 },
	{ .name = "handler-in-range", .sig = SIGTERM, .handler = 2 },
	{ .name = "term-blocked", .sig = SIGINT, .handler = 1, .blocked = 1 },
};

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ns(long long ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL) };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Atomic, not sig_atomic_t: with two loopers the handler may run on the
 * other thread (ThreadSanitizer, make check-tsan). */
static atomic_int handler_runs;

static void on_signal(int sig)
{
	(void)sig;
	atomic_fetch_add(&handler_runs, 1);
	rs_flag = 1;
}

/* ---- the child: counts the range, loops in it ------------------------------ */

static pthread_t looper;
static sem_t looping;
static long long thread_sent_ns;

static void *sender(void *arg)
{
	const struct mode *m = arg;
	while (sem_wait(&looping) != 0 && errno == EINTR)
		;
	sleep_ns(SEND_AFTER_NS);
	thread_sent_ns = now_ns();
	pthread_kill(looper, m->sig);
	return NULL;
}

/* An event set counting the range [RS_LOOP, end), started. */
static int start_set(const char *end)
{
	int set = PAPI_NULL;
	PAPI_option_t opt;
	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::IA64_INST_RETIRED:exact=1"));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::IA64_TAGGED_INST_RETIRED_IBRP0_PMC8:exact=1"));
	CHECK_PAPI(heritage_test_range(set, PAPI_INSTR_ADDRESS, (void *)RS_LOOP, end, &opt));
	EXPECT_EQ("exact start_off", opt.addr.start_off, 0);
	EXPECT_EQ("exact end_off", opt.addr.end_off, 0);
	CHECK_PAPI(PAPI_start(set));
	return set;
}

static void stop_set(int set, long long v[2])
{
	CHECK_PAPI(PAPI_stop(set, v));
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
}

/* Instructions in the range of a loop stopped after k iterations (by the
 * flag, or at max), and of one run of the handler. */
static long long per_iteration, flag_at_1, max_extra, handler_insns = 2;

static long long loop_insns(long k)
{
	return k < LOOP_MAX ? flag_at_1 + per_iteration * (k - 1) : flag_at_1 + per_iteration * (k - 1) + max_extra;
}

#if HERITAGE_TEST_INSTRUMENTED
static long long count_one(const char *end, long max, int flag, int handler)
{
	long long v[2];
	rs_flag = flag;
	int set = start_set(end);
	if (handler)
		RS_HANDLER(0);
	else
		RS_LOOP(&rs_flag, max);
	stop_set(set, v);
	rs_flag = 0;
	EXPECT_EQ("IBRP0 as IA64_INST_RETIRED", v[1], v[0]);
	return v[0];
}

static void measure_counts(void)
{
	flag_at_1 = count_one(RS_LOOP_END, LOOP_MAX, 1, 0);
	long long c1000 = count_one(RS_LOOP_END, 1000, 0, 0), c2000 = count_one(RS_LOOP_END, 2000, 0, 0);
	per_iteration = (c2000 - c1000) / 1000;
	EXPECT_EQ("a loop of 2000 iterations against 1000", c2000 - c1000, per_iteration * 1000);
	max_extra = c1000 - (flag_at_1 + per_iteration * 999);
	handler_insns = count_one(RS_HANDLER_END, 0, 0, 1);
	printf("the C loop here: %lld instructions stopped at iteration 1, %lld per iteration, %lld more at its end; "
	       "the handler %lld\n", flag_at_1, per_iteration, max_extra, handler_insns);
	EXPECT(per_iteration > 0 && handler_insns > 0, "no instructions counted in the C loop or handler");
}
#else
/* rs_until: xor, then per iteration add, cmpl, jne, cmp, jb (5); stopped
 * by the flag after the k-th: 5k (its cmp/jb not run, the ret run); at max:
 * 5k + 2. */
static void measure_counts(void)
{
	per_iteration = 5;
	flag_at_1 = 5;
	max_extra = 2;
	handler_insns = 2;
}
#endif

/* The second thread of threads-handler: counts the range and loops in it
 * too, until the same flag stops it. */
static pthread_barrier_t both_started;
static long second_k;
static long long second_v[2];

static void *second_looper(void *arg)
{
	(void)arg;
	CHECK_PAPI(PAPI_register_thread());
	int set = start_set(RS_LOOP_END);
	pthread_barrier_wait(&both_started);
	second_k = RS_LOOP(&rs_flag, LOOP_MAX);
	stop_set(set, second_v);
	CHECK_PAPI(PAPI_unregister_thread());
	return NULL;
}

static int child(const struct mode *m, int ready_fd, int t0_fd)
{
	long long v[2];

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	setvbuf(stdout, NULL, _IONBF, 0);
	heritage_test_init();
	const char *backend = getenv("PAPI_HERITAGE_ITANIUM2_BACKEND");
	heritage_test_require_backend("itanium2", backend ? backend : RS_BACKEND);
	measure_counts();

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = m->handler == 0 ? SIG_DFL : m->handler == 1 ? on_signal : RS_HANDLER;
	sa.sa_flags = SA_RESTART;
	sigaction(m->sig, &sa, NULL);
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, m->sig);
	sigprocmask(SIG_UNBLOCK, &block, NULL);
	if (m->blocked) {
		sigemptyset(&block);
		sigaddset(&block, SIGTERM);
		sigprocmask(SIG_BLOCK, &block, NULL);
	}

	looper = pthread_self();
	pthread_t th, second;
	if (m->two) {
		CHECK_PAPI(PAPI_thread_init(pthread_self));
		pthread_barrier_init(&both_started, NULL, 2);
		if (pthread_create(&second, NULL, second_looper, NULL) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	}
	sem_init(&looping, 0, 0);
	if (m->from == BY_THREAD && pthread_create(&th, NULL, sender, (void *)m) != 0) {
		fprintf(stderr, "pthread_create failed\n");
		return 1;
	}
	int set = start_set(m->handler == 2 ? RS_HANDLER_END : RS_LOOP_END);
	/* Ready before the barrier: past it, whichever thread enters the range
	 * first steps through it and parks the other (one window at a time)
	 * until the signal ends that window. */
	if (write(ready_fd, "r", 1) != 1)
		return 1;
	if (m->two)
		pthread_barrier_wait(&both_started);
	sem_post(&looping);
	long k = RS_LOOP(&rs_flag, LOOP_MAX);
	long long stopped = now_ns();
	stop_set(set, v);

	long long sent = 0;
	if (m->from == BY_THREAD) {
		pthread_join(th, NULL);
		sent = thread_sent_ns;
	} else if (read(t0_fd, &sent, sizeof sent) != (ssize_t)sizeof sent) {
		fprintf(stderr, "no send time from the parent\n");
		return 1;
	}
	long long want = loop_insns(k);
	if (m->handler == 2)
		want += handler_insns; /* the handler's, inside the range */
	printf("%s: %s stopped the loop %.1f ms after it was sent, after %ld iterations; IA64_INST_RETIRED %lld, "
	       "IBRP0 %lld (want %lld)\n", m->name, strsignal(m->sig), (stopped - sent) / 1e6, k, v[0], v[1], want);
	EXPECT(k < LOOP_MAX, "the loop ran to its end: the flag was never seen");
	EXPECT(stopped - sent <= ALLOWED_NS, "%s took %.3f s to stop the loop (allowed: 1 s)", strsignal(m->sig),
	       (stopped - sent) / 1e9);
	if (m->handler == 1)
		EXPECT_EQ("handler runs", atomic_load(&handler_runs), 1);
	EXPECT_EQ("IA64_INST_RETIRED", v[0], want);
	EXPECT_EQ("IA64_TAGGED_INST_RETIRED_IBRP0_PMC8", v[1], want);
	if (m->blocked) {
		sigset_t pending;
		sigpending(&pending);
		EXPECT(sigismember(&pending, SIGTERM) == 1, "the blocked SIGTERM is no longer pending");
		/* Leave before unblocking it: exit status 0 says it was never delivered. */
	}
	if (m->two) {
		pthread_join(second, NULL);
		long long want2 = loop_insns(second_k);
		printf("%s: the second thread stopped after %ld iterations; IA64_INST_RETIRED %lld, IBRP0 %lld (want "
		       "%lld)\n", m->name, second_k, second_v[0], second_v[1], want2);
		EXPECT(second_k < LOOP_MAX, "the second thread's loop ran to its end");
		EXPECT_EQ("second thread's IA64_INST_RETIRED", second_v[0], want2);
		EXPECT_EQ("second thread's IA64_TAGGED_INST_RETIRED_IBRP0_PMC8", second_v[1], want2);
	}
	/* The parent says PASSED or FAILED: exit status 0 or 1. */
	if (heritage_test_failures)
		printf("%s: %d checks failed in the child\n", m->name, heritage_test_failures);
	_exit(heritage_test_failures ? 1 : 0);
}

/* ---- the parent: sends the signal, times the reaction ---------------------- */

/* The child's SigBlk line, for the report when it did not react. */
static void report_blocked(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "SigBlk:", 7) == 0 || strncmp(line, "SigPnd:", 7) == 0 ||
		    strncmp(line, "ShdPnd:", 7) == 0)
			fprintf(stderr, "  child %s", line);
	if (f)
		fclose(f);
}

/* Waits up to give_up_ns for the child; 1 with *status if it ended. */
static int wait_child(pid_t pid, long long give_up_ns, int *status)
{
	long long deadline = now_ns() + give_up_ns;
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return 1;
		if (r < 0 && errno != EINTR)
			return 1;
		if (now_ns() >= deadline)
			return 0;
		sleep_ns(1000000);
	}
}

int main(int argc, char **argv)
{
	const struct mode *m = NULL;
	for (unsigned i = 0; argc == 2 && i < sizeof modes / sizeof modes[0]; i++)
		if (strcmp(argv[1], modes[i].name) == 0)
			m = &modes[i];
	if (!m) {
		fprintf(stderr, "usage: range_signals term-default|int-default|term-handler|int-handler|"
		                "thread-handler|threads-handler|handler-in-range|term-blocked\n");
		return 2;
	}
	int ready[2], t0[2];
	signal(SIGPIPE, SIG_IGN);
	if (pipe(ready) != 0 || pipe(t0) != 0) {
		perror("pipe");
		return 1;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		close(ready[0]);
		close(t0[1]);
		return child(m, ready[1], t0[0]);
	}
	close(ready[1]);
	close(t0[0]);

	int status = 0;
	char c;
	if (read(ready[0], &c, 1) != 1) {
		/* It ended before looping: a skip (77, its reason printed) or a failure. */
		waitpid(pid, &status, 0);
		return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	}
	sleep_ns(SEND_AFTER_NS);
	if (m->blocked) {
		kill(pid, SIGTERM);
		sleep_ns(SEND_AFTER_NS);
		EXPECT(waitpid(pid, &status, WNOHANG) == 0, "the child ended on a SIGTERM it blocks");
	}
	long long sent = now_ns();
	/* The child's own thread sends (and times) BY_THREAD: the child may be
	 * gone already, and a write to its closed pipe would kill us with
	 * SIGPIPE (seen in CI under load). */
	if (m->from != BY_THREAD && write(t0[1], &sent, sizeof sent) != (ssize_t)sizeof sent)
		return 1;
	if (m->from == BY_PARENT)
		kill(pid, m->sig);
	if (!wait_child(pid, GIVE_UP_NS, &status)) {
		fprintf(stderr, "%s: the child still runs %.1f s after %s was sent\n", m->name, GIVE_UP_NS / 1e9,
		        strsignal(m->sig));
		report_blocked(pid);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		heritage_test_failures++;
		return heritage_test_done(m->name);
	}
	long long took = now_ns() - sent;
	if (m->handler == 0) {
		printf("%s: the child ended %.1f ms after %s (%s)\n", m->name, took / 1e6, strsignal(m->sig),
		       WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exited");
		EXPECT(WIFSIGNALED(status) && WTERMSIG(status) == m->sig, "the child did not die by %s (status 0x%x)",
		       strsignal(m->sig), status);
		EXPECT(took <= ALLOWED_NS, "it took %.3f s (allowed: 1 s)", took / 1e9);
	} else {
		EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status 0x%x)", status);
	}
	return heritage_test_done(m->name);
}
