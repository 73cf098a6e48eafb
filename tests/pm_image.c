/*
 * pm_image: the image of the dcpiprof/dcpilist cases (tests/cases/dcpi*.test).
 * Built with -g, so its functions have real addresses, sizes and source
 * lines; the cases write a profile of it from those addresses (nm, objdump)
 * and check what the tools print against their own sums.
 *
 *   pm_image spin [S]   hot spins 3*S s of this thread's CPU time, cold S
 *                       (default 0.2): a profile of it is 3/4 hot, 1/4 cold
 *                       (dcpiprof_run.test, where profileme-run can sample);
 *                       prints the share of the wall time it had a CPU
 *                       (stderr: wall_share N)
 *   pm_image div N D    prints N / D through divide (D = 0: SIGFPE)
 *   pm_image taken S    S s of CPU in pm_loop34 (src/tests/pm_soft_loops.S),
 *                       whose branch pm_loop34_branch is taken 3 times in 4
 *   pm_image traps S    S s of CPU in pm_div0: divisions by zero, each caught
 *                       by this program's own SIGFPE handler, which skips it
 *                       and counts it (printed)
 * The loops of pm_soft_loops.S make a system call before the instruction
 * under test, so most samples land on it (see there).
 */
#define _GNU_SOURCE /* REG_RIP */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

volatile long sink;

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* CPU time, not a trip count, sets the split: a count calibrated once runs
 * long or short on a shared machine. */
/* s is volatile: a loop the compiler cannot fold into a formula. */
__attribute__((noinline)) long hot(double seconds)
{
	volatile long s = 0;
	double end = cpu_now() + seconds;
	do {
		for (long i = 0; i < 200000; i++)
			s += i * 3;
	} while (cpu_now() < end);
	return s;
}

__attribute__((noinline)) long cold(double seconds)
{
	volatile long s = 0;
	double end = cpu_now() + seconds;
	do {
		for (long i = 0; i < 200000; i++)
			s += i ^ 5;
	} while (cpu_now() < end);
	return s;
}

__attribute__((noinline)) long divide(long a, long b)
{
	return a / b;
}

void pm_loop34(long n, int zero_fd, void *buf);
void pm_div0(long n, int zero_fd, void *buf);
extern const char pm_div0_next[];

static volatile long caught;

static void on_sigfpe(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)pm_div0_next;
	caught++;
}

/* Runs loop in rounds of 1000 iterations until `seconds` of CPU time. */
static long rounds(void (*loop)(long, int, void *), double seconds)
{
	static char buf[65536];
	int fd = open("/dev/zero", O_RDONLY);
	long n = 0;
	if (fd < 0) {
		perror("/dev/zero");
		exit(1);
	}
	double end = cpu_now() + seconds;
	do {
		loop(1000, fd, buf);
		n += 1000;
	} while (cpu_now() < end);
	close(fd);
	return n;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "spin") == 0) {
		double s = argc > 2 ? atof(argv[2]) : 0.2;
		struct timespec w0, w1;
		clock_gettime(CLOCK_MONOTONIC, &w0);
		double c0 = cpu_now();
		sink = hot(3 * s) + cold(s);
		clock_gettime(CLOCK_MONOTONIC, &w1);
		/* The share of the wall time this thread had a CPU: a sampler on
		 * CPU-time timers is only as exact as that (profileme(3)). */
		fprintf(stderr, "wall_share %.0f\n",
		        100 * (cpu_now() - c0) / ((double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) * 1e-9));
	} else if (argc > 3 && strcmp(argv[1], "div") == 0) {
		sink = divide(atol(argv[2]), atol(argv[3]));
	} else if (argc > 1 && strcmp(argv[1], "taken") == 0) {
		sink = rounds(pm_loop34, argc > 2 ? atof(argv[2]) : 0.5);
	} else if (argc > 1 && strcmp(argv[1], "traps") == 0) {
		struct sigaction sa = { .sa_sigaction = on_sigfpe, .sa_flags = SA_SIGINFO };
		sigaction(SIGFPE, &sa, NULL);
		long n = rounds(pm_div0, argc > 2 ? atof(argv[2]) : 0.5);
		if (caught != n) {
			fprintf(stderr, "pm_image: %ld divisions by zero, %ld caught\n", n, (long)caught);
			return 1;
		}
		sink = caught;
	} else {
		fprintf(stderr, "usage: pm_image spin [S] | div N D | taken [S] | traps [S]\n");
		return 2;
	}
	printf("%ld\n", (long)sink);
	return 0;
}
