/*
 * rpm_bench: what reading the Paragon RPM counters costs, each way, in one
 * run: a load through the legacy mapping (a fault and a step), dclock(), the
 * vDSO clock it is built on, PAPI_read of paragon_rpm:::rpm_time and of a set
 * of bus and soft counters, and PAPI_read of perf::TASK-CLOCK (a read(2) of a
 * perf fd) as the peer.  Interleaved batches, medians.  Target: PAPI_read of
 * rpm_time >= 20x faster than of perf::TASK-CLOCK.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <i860paragon/rpm.h>
#include <papi.h>

#include "bench.h"

#define BATCHES 9

static volatile double sink;

static double per_call_load(long n)
{
	struct rpm *rpm = (struct rpm *)RPM_BASE_VADDR;
	double t0 = bench_now();
	for (long i = 0; i < n; i++)
		sink = rpm->rpm_time;
	return (bench_now() - t0) * 1e9 / (double)n;
}

static double per_call_dclock(long n)
{
	double t0 = bench_now();
	for (long i = 0; i < n; i++)
		sink = dclock();
	return (bench_now() - t0) * 1e9 / (double)n;
}

static double per_call_clock(long n)
{
	struct timespec ts;
	double t0 = bench_now();
	for (long i = 0; i < n; i++) {
		clock_gettime(CLOCK_BOOTTIME, &ts);
		sink = (double)ts.tv_nsec;
	}
	return (bench_now() - t0) * 1e9 / (double)n;
}

static int make_set(const char *const *names, int n)
{
	int set = PAPI_NULL;
	if (PAPI_create_eventset(&set) != PAPI_OK) {
		fprintf(stderr, "PAPI_create_eventset failed\n");
		exit(1);
	}
	for (int i = 0; i < n; i++) {
		int rc = PAPI_add_named_event(set, names[i]);
		if (rc != PAPI_OK) {
			fprintf(stderr, "%s: %s\n", names[i], PAPI_strerror(rc));
			exit(1);
		}
	}
	return set;
}

int main(void)
{
	double load[BATCHES], dcl[BATCHES], clk[BATCHES], rt[BATCHES], soft[BATCHES], perf[BATCHES];

	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	if (rc != PAPI_VER_CURRENT) {
		fprintf(stderr, "PAPI_library_init: %d\n", rc);
		return 1;
	}
	const char *t[] = { "paragon_rpm:::rpm_time" };
	const char *s[] = { "paragon_rpm:::rpm_cpu0", "paragon_rpm:::rpms_idle", "paragon_rpm:::rpms_int" };
	const char *p[] = { "perf::TASK-CLOCK" };
	int set_t = make_set(t, 1), set_s = make_set(s, 3), set_p = make_set(p, 1);
	for (int b = 0; b < BATCHES; b++) {
		load[b] = per_call_load(2000);
		dcl[b] = per_call_dclock(200000);
		clk[b] = per_call_clock(200000);
		rt[b] = bench_papi_read_ns(set_t, 200000);
		soft[b] = bench_papi_read_ns(set_s, 20000);
		perf[b] = bench_papi_read_ns(set_p, 20000);
	}
	double ml = bench_median(load, BATCHES), md = bench_median(dcl, BATCHES), mc = bench_median(clk, BATCHES);
	double mt = bench_median(rt, BATCHES), ms = bench_median(soft, BATCHES), mp = bench_median(perf, BATCHES);
	printf("=== paragon_rpm read costs (ns per call, median of %d interleaved batches)\n", BATCHES);
	printf("load of rpm->rpm_time through the mapping (fault + step): %10.1f\n", ml);
	printf("dclock():                                                 %10.1f\n", md);
	printf("clock_gettime(CLOCK_BOOTTIME) (vDSO), its source:         %10.1f\n", mc);
	printf("PAPI_read paragon_rpm:::rpm_time:                         %10.1f\n", mt);
	printf("PAPI_read rpm_cpu0+rpms_idle+rpms_int (1 ms /proc cache): %10.1f\n", ms);
	printf("PAPI_read perf::TASK-CLOCK (peer):                        %10.1f\n", mp);
	printf("dclock / vDSO clock: %.2f\n", md / mc);
	printf("PAPI_read perf::TASK-CLOCK / PAPI_read rpm_time: %.1f (target >= 20): %s\n", mp / mt,
	       mp / mt >= 20 ? "PASS" : "MISS");
	PAPI_shutdown();
	return 0;
}
