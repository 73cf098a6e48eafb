/*
 * What every benchmark program needs: a monotonic clock in seconds and the
 * median of a batch of measurements (these VMs drift by 10-20% between and
 * within runs, so each program interleaves batches and reports medians).
 */
#ifndef HERITAGE_BENCH_H
#define HERITAGE_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sorts v. */
static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
	return v[n / 2];
}

#ifdef PAPI_VER_CURRENT
/* ns per PAPI_read of a set of at most 8 events, over n reads between its
 * own PAPI_start and PAPI_stop (a component whose sets cannot run together,
 * as paragon_rpm's, gets each batch alone).  Exits on a PAPI error. */
static inline double bench_papi_read_ns(int set, long n)
{
	long long v[8];
	int rc = PAPI_start(set);
	if (rc != PAPI_OK) {
		fprintf(stderr, "PAPI_start: %s\n", PAPI_strerror(rc));
		exit(1);
	}
	double t0 = bench_now();
	for (long i = 0; i < n; i++)
		if (PAPI_read(set, v) != PAPI_OK) {
			fprintf(stderr, "PAPI_read failed\n");
			exit(1);
		}
	double t = (bench_now() - t0) * 1e9 / (double)n;
	PAPI_stop(set, v);
	return t;
}
#endif

#endif
