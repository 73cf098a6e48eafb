/*
 * pm_image: the image of the dcpiprof/dcpilist cases (tests/cases/dcpi*.test).
 * Built with -g, so its functions have real addresses, sizes and source
 * lines; the cases write a profile of it from those addresses (nm, objdump)
 * and check what the tools print against their own sums.  Run, it spends
 * about 3/4 of its time in hot and 1/4 in cold, and divides by a zero it
 * is given on request (the shape of a profile the acceptance describes).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

volatile long sink;

__attribute__((noinline)) long hot(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i * 3;
	return s;
}

__attribute__((noinline)) long cold(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i ^ 5;
	return s;
}

__attribute__((noinline)) long divide(long a, long b)
{
	return a / b;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 3000000;
	sink = hot(3 * n) + cold(n);
	if (argc > 2)
		sink += divide(n, atol(argv[2]));
	printf("%ld\n", (long)sink);
	return 0;
}
