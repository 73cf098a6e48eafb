/*
 * range_process: watching must not change what the program does.
 *   read     read(2)/write(2) on a watched buffer behave as without watching,
 *            and the kernel's access is not counted (Itanium counted user
 *            level only); the program's own accesses are;
 *   fork     a child forked while a set runs touches the watched pages freely;
 *   signals  the program's SIGSEGV handler, installed before or after
 *            PAPI_start, still gets the faults that are not ours;
 *   unprotect no page stays protected after PAPI_stop, cleanup, shutdown;
 *   exit     exiting with a set still running, while an atexit handler
 *            touches the watched memory, is clean.
 * Usage: range_process read|fork|signals|unprotect|exit
 */
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heritage_test.h"

#define PAGE 4096
#define NPAGES 4
#define N (NPAGES * PAGE / (int)sizeof(int))

static int *buf;

static int start_set(int *set)
{
	PAPI_option_t opt;

	*set = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(set));
	CHECK_PAPI(PAPI_add_named_event(*set, "itanium2:::LOADS_RETIRED:exact=1"));
	CHECK_PAPI(PAPI_add_named_event(*set, "itanium2:::STORES_RETIRED:exact=1"));
	memset(&opt, 0, sizeof opt);
	opt.addr.eventset = *set;
	opt.addr.start = (vptr_t)buf;
	opt.addr.end = (vptr_t)(buf + N);
	CHECK_PAPI(PAPI_set_opt(PAPI_DATA_ADDRESS, &opt));
	CHECK_PAPI(PAPI_start(*set));
	return *set;
}

__attribute__((noinline)) static void touch(int n)
{
	long sum = 0;
	for (int i = 0; i < n; i++)
		buf[i] = i;
	for (int i = 0; i < n; i++)
		sum += buf[i];
	__asm__ volatile("" : : "r"(sum));   /* the loads must happen */
}

/* The protection of buf's pages as /proc/self/maps shows it. */
static int buf_accessible(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int ok = 0;

	while (f && fgets(line, sizeof line, f)) {
		unsigned long a, b;
		char perm[8];
		if (sscanf(line, "%lx-%lx %7s", &a, &b, perm) == 3 && (uintptr_t)buf >= a && (uintptr_t)buf < b)
			ok = perm[0] == 'r' && perm[1] == 'w';
	}
	if (f)
		fclose(f);
	return ok;
}

static int test_read(void)
{
	int set, fds[2];
	long long v[2];
	char pattern[PAGE * 2];

	for (size_t i = 0; i < sizeof pattern; i++)
		pattern[i] = (char)(i * 7);
	start_set(&set);
	if (pipe(fds) != 0)
		return 1;
	EXPECT_EQ("write(2) to the pipe", write(fds[1], pattern, sizeof pattern), (long)sizeof pattern);
	EXPECT_EQ("read(2) into the watched buffer", read(fds[0], buf, sizeof pattern), (long)sizeof pattern);
	EXPECT_EQ("write(2) from the watched buffer", write(fds[1], buf, sizeof pattern), (long)sizeof pattern);
	CHECK_PAPI(PAPI_read(set, v));
	EXPECT_EQ("loads after the system calls", v[0], 0);
	EXPECT_EQ("stores after the system calls", v[1], 0);
	/* What the kernel wrote, compared after PAPI_stop: memcmp's own loads
	 * are user-level loads a trap backend rightly counts. */
	char echoed[sizeof pattern];
	EXPECT_EQ("read back the echo", read(fds[0], echoed, sizeof echoed), (long)sizeof echoed);
	touch(N);
	CHECK_PAPI(PAPI_stop(set, v));
	EXPECT_EQ("loads", v[0], N);
	EXPECT_EQ("stores", v[1], N);
	EXPECT_EQ("bytes echoed by write(2) from the watched buffer", memcmp(echoed, pattern, sizeof pattern), 0);
	close(fds[0]);
	close(fds[1]);
	return 0;
}

static int test_fork(void)
{
	int set, status = -1;
	long long v[2];

	start_set(&set);
	touch(16);
	pid_t pid = fork();
	if (pid == 0) {
		touch(N);     /* would fault if the pages stayed protected */
		_exit(buf_accessible() ? 0 : 3);
	}
	waitpid(pid, &status, 0);
	EXPECT_EQ("child exit status (0: the watched pages were open)", status, 0);
	touch(16);
	CHECK_PAPI(PAPI_stop(set, v));
	EXPECT_EQ("parent loads (the child's are not ours)", v[0], 32);
	EXPECT_EQ("parent stores", v[1], 32);
	return 0;
}

static sigjmp_buf jump;
static volatile sig_atomic_t app_handler_calls;

static void app_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	app_handler_calls++;
	siglongjmp(jump, 1);
}

static void install_app_handler(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = app_segv;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
}

static int test_signals(void)
{
	int set;
	long long v[2];
	volatile int *guard = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	install_app_handler();             /* before PAPI_start */
	start_set(&set);
	if (sigsetjmp(jump, 1) == 0)
		*guard = 1;
	EXPECT_EQ("handler installed before start ran", app_handler_calls, 1);
	install_app_handler();             /* while the set runs */
	if (sigsetjmp(jump, 1) == 0)
		*guard = 2;
	EXPECT_EQ("handler installed while running ran", app_handler_calls, 2);
	touch(N);
	CHECK_PAPI(PAPI_stop(set, v));
	EXPECT_EQ("loads", v[0], N);
	EXPECT_EQ("stores", v[1], N);
	return 0;
}

static int test_unprotect(void)
{
	int set;
	long long v[2];

	start_set(&set);
	touch(N);
	CHECK_PAPI(PAPI_stop(set, v));
	EXPECT_EQ("accessible after PAPI_stop", buf_accessible(), 1);
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	EXPECT_EQ("accessible after cleanup", buf_accessible(), 1);
	CHECK_PAPI(PAPI_destroy_eventset(&set));
	start_set(&set);        /* left running: PAPI_shutdown in main stops it */
	return 0;
}

static void at_exit_touch(void)
{
	touch(N);
	if (!buf_accessible())
		_exit(5);
}

static int test_exit(void)
{
	int set;

	atexit(at_exit_touch);
	start_set(&set);
	touch(N);
	exit(0);   /* with the set running */
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";

	heritage_test_init();
	if (!HERITAGE_TEST_INSTRUMENTED) /* multi-page ranges: only page traps count them */
		heritage_test_require_backend("itanium2", "pagetrap");
	buf = aligned_alloc(PAGE, NPAGES * PAGE);
	memset(buf, 0, NPAGES * PAGE);
	if (strcmp(what, "read") == 0)
		test_read();
	else if (strcmp(what, "fork") == 0)
		test_fork();
	else if (strcmp(what, "signals") == 0)
		test_signals();
	else if (strcmp(what, "unprotect") == 0)
		test_unprotect();
	else if (strcmp(what, "exit") == 0)
		test_exit();
	else {
		fprintf(stderr, "usage: range_process read|fork|signals|unprotect|exit\n");
		return 2;
	}
	PAPI_shutdown();
	EXPECT_EQ("accessible after PAPI_shutdown", buf_accessible(), 1);
	return heritage_test_done(what);
}
