/*
 * The program profileme-run's tests profile: known CPU time in known
 * functions, on the main thread and on a second one, then it prints its own
 * CPU time (ns, CLOCK_PROCESS_CPUTIME_ID) and the ELF vaddrs of its two spin
 * functions (from dl_iterate_phdr's bias), for the test to compare with the
 * database, and the percentage of the wall time its main thread had a CPU
 * (wall_share).
 *
 *   pm_spin run      300 ms in spin_main (main thread), 100 ms in spin_thread (a thread)
 *   pm_spin fork     the same, and a forked child spins 200 ms in spin_child
 *   pm_spin exit N   300 ms in spin_main, then exit(N)
 *   pm_spin kill     100 ms in spin_main, then SIGKILL to itself
 *   pm_spin sigexit  300 ms in spin_main, then a SIGUSR1 whose handler calls _exit(5)
 */
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t cpu_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static __thread volatile uint64_t sink; /* per thread: two spinning threads sharing it race (ThreadSanitizer) */

/* Spin until the calling thread has used ms more of CPU. */
#define SPIN_FN(name)                                                              \
	__attribute__((noinline)) void name(unsigned ms)                           \
	{                                                                          \
		uint64_t end = cpu_ns(CLOCK_THREAD_CPUTIME_ID) + ms * 1000000ull;  \
		uint64_t x = 1;                                                    \
		for (;;) {                                                         \
			for (int i = 0; i < 20000; i++)                            \
				x = x * 6364136223846793005ull + 1442695040888963407ull; \
			sink = x;                                                  \
			if (cpu_ns(CLOCK_THREAD_CPUTIME_ID) >= end)                \
				break;                                             \
		}                                                                  \
	}
SPIN_FN(spin_main)
SPIN_FN(spin_thread)
SPIN_FN(spin_child)

static void on_usr1(int sig)
{
	(void)sig;
	_exit(5);
}

/* The second thread's share of the wall time, as the main thread's. */
static unsigned thread_share;
static void *thread(void *arg)
{
	(void)arg;
	uint64_t w0 = cpu_ns(CLOCK_MONOTONIC), c0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	spin_thread(100);
	thread_share = (unsigned)(100 * (cpu_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / (cpu_ns(CLOCK_MONOTONIC) - w0 + 1));
	return NULL;
}

static uintptr_t bias;
static int bias_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	bias = info->dlpi_addr; /* the first object is the program */
	return 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "run";
	dl_iterate_phdr(bias_cb, NULL);
	if (!strcmp(mode, "exit")) {
		spin_main(300); /* 100 ms once gave no sample at all in CI's load */
		exit(argc > 2 ? atoi(argv[2]) : 0);
	}
	if (!strcmp(mode, "sigexit")) {
		signal(SIGUSR1, on_usr1);
		/* 37 periods of 8 ms: a loaded machine (CI) left fewer than 3
		 * samples of 100 ms. */
		spin_main(300);
		raise(SIGUSR1);
	}
	if (!strcmp(mode, "kill")) {
		spin_main(100);
		kill(getpid(), SIGKILL);
	}
	pid_t child = -1;
	if (!strcmp(mode, "fork")) {
		child = fork();
		if (child == 0) {
			spin_child(200);
			exit(0);
		}
	}
	pthread_t t;
	if (pthread_create(&t, NULL, thread, NULL))
		return 2;
	/* How much of the wall time the main thread had a CPU: a sampler on
	 * CPU-time timers is only as exact as that (profileme(3)). */
	uint64_t w0 = cpu_ns(CLOCK_MONOTONIC), c0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	spin_main(300);
	unsigned share = (unsigned)(100 * (cpu_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / (cpu_ns(CLOCK_MONOTONIC) - w0 + 1));
	pthread_join(t, NULL);
	if (child > 0)
		waitpid(child, NULL, 0);
	printf("cpu_ns %llu\n", (unsigned long long)cpu_ns(CLOCK_PROCESS_CPUTIME_ID));
	printf("wall_share %u\n", share);
	printf("thread_share %u\n", thread_share);
	printf("spin_main 0x%llx\n", (unsigned long long)((uintptr_t)spin_main - bias));
	printf("spin_thread 0x%llx\n", (unsigned long long)((uintptr_t)spin_thread - bias));
	printf("spin_child 0x%llx\n", (unsigned long long)((uintptr_t)spin_child - bias));
	return 0;
}
