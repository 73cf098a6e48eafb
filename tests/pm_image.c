/*
 * pm_image: the image of the dcpiprof/dcpilist cases (tests/cases/dcpi*.test).
 * Built with -g, so its functions have real addresses, sizes and source
 * lines; the cases write a profile of it from those addresses (nm, objdump)
 * and check what the tools print against their own sums.
 *
 *   pm_image spin [S]   hot spins 3*S s of this thread's CPU time, cold S
 *                       (default 0.2): a profile of it is 3/4 hot, 1/4 cold
 *                       (dcpiprof_run.test, where profileme-run can sample)
 *   pm_image div N D    prints N / D through divide (D = 0: SIGFPE)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "spin") == 0) {
		double s = argc > 2 ? atof(argv[2]) : 0.2;
		sink = hot(3 * s) + cold(s);
	} else if (argc > 3 && strcmp(argv[1], "div") == 0) {
		sink = divide(atol(argv[2]), atol(argv[3]));
	} else {
		fprintf(stderr, "usage: pm_image spin [S] | pm_image div N D\n");
		return 2;
	}
	printf("%ld\n", (long)sink);
	return 0;
}
