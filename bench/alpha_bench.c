/*
 * alpha_bench: what the alpha21064 software backend costs, against PAPI's
 * own software overflow (PAPI_OVERFLOW_FORCE_SW on perf::TASK-CLOCK) measured
 * in the same run (the VM's speed drifts between runs).
 *
 *   1. cost per stepped instruction: alpha_load_loop (3 instructions per
 *      load) under LOAD_INSNS:width=16 with no handler, minus native;
 *   2. cost per overflow delivery: the same loop with STORE... rather
 *      INTEGER_OPERATE:width=8 and a handler at every interrupt, minus (1),
 *      per delivery;
 *   3. PAPI's software overflow: a busy loop under perf::TASK-CLOCK with
 *      PAPI_OVERFLOW_FORCE_SW, minus the same loop unmonitored, per delivery.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <papi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "papi_heritage.h"

long alpha_load_loop(const long *p, long n);

static long data[4];
static volatile long deliveries;

static void count(int es, void *pc, long long vec, void *ctx)
{
	(void)es;
	(void)pc;
	(void)vec;
	(void)ctx;
	deliveries++;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void check(int rc, const char *what)
{
	if (rc != PAPI_OK) {
		fprintf(stderr, "alpha_bench: %s: %s %s\n", what, PAPI_strerror(rc), papi_heritage_last_error());
		exit(1);
	}
}

static double stepped(const char *event, int threshold, long n)
{
	int es = PAPI_NULL, code;
	long long v;
	check(PAPI_create_eventset(&es), "create");
	check(PAPI_add_named_event(es, event), event);
	if (threshold) {
		check(PAPI_event_name_to_code(event, &code), "name");
		check(PAPI_overflow(es, code, threshold, 0, count), "overflow");
	}
	deliveries = 0;
	check(PAPI_start(es), "start");
	double t0 = now();
	alpha_load_loop(data, n);
	double t1 = now();
	check(PAPI_stop(es, &v), "stop");
	if (threshold)
		check(PAPI_overflow(es, code, 0, 0, count), "overflow off");
	check(PAPI_cleanup_eventset(es), "cleanup");
	check(PAPI_destroy_eventset(&es), "destroy");
	return t1 - t0;
}

static volatile double sink;
static double busy(double seconds, long *iters)
{
	double t0 = now(), x = 0;
	long i = 0;
	while (now() - t0 < seconds) {
		for (int k = 0; k < 1000; k++)
			x += k * 0.5;
		i++;
	}
	sink = x;
	*iters = i;
	return now() - t0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT)
		return 1;
	/* 1. stepping */
	double t0 = now();
	for (int i = 0; i < 100; i++)
		alpha_load_loop(data, n);
	double native = (now() - t0) / 100;
	/* The first stepped run classifies every instruction once (the
	 * per-PC cache then serves them): warm up, then take the best of 3. */
	stepped("alpha21064:::INTEGER_OPERATE:width=8", 0, n);
	double plain = 1e9, with = 1e9;
	long d = 0;
	for (int r = 0; r < 3; r++) {
		double a = stepped("alpha21064:::INTEGER_OPERATE:width=8", 0, n);
		plain = a < plain ? a : plain;
		/* 2. delivery: INTEGER_OPERATE (addq + decq: 2 per iteration) at
		 * 2^8, a handler at every interrupt. */
		double b = stepped("alpha21064:::INTEGER_OPERATE:width=8", 256, n);
		if (b < with) {
			with = b;
			d = deliveries;
		}
	}
	double insns = 3.0 * n + 3;
	double per_step = (plain - native) / insns;
	printf("alpha21064 stepping: %.0f instructions in %.3f s (native %.6f s): %.2f us per stepped "
	       "instruction, x%.0f\n", insns, plain, native, per_step * 1e6, plain / native);
	double per_delivery = d ? (with - plain) / d : 0;
	printf("alpha21064 overflow delivery: %ld deliveries, %.2f us each over stepping (best of 3 runs each; the "
	       "difference is within the VM's noise when it is near 0)\n", d, per_delivery * 1e6);

	/* 3. PAPI software overflow on perf::TASK-CLOCK (threshold 100 us). */
	int es = PAPI_NULL, code;
	long iters;
	if (PAPI_create_eventset(&es) != PAPI_OK || PAPI_add_named_event(es, "perf::TASK-CLOCK") != PAPI_OK) {
		printf("papi software overflow: perf::TASK-CLOCK not available here; no peer\n");
		return 0;
	}
	check(PAPI_event_name_to_code("perf::TASK-CLOCK", &code), "name");
	check(PAPI_overflow(es, code, 100000, PAPI_OVERFLOW_FORCE_SW, count), "sw overflow");
	double base = busy(0.5, &iters);
	double base_rate = iters / base;
	deliveries = 0;
	long long v;
	check(PAPI_start(es), "start");
	double t = busy(0.5, &iters);
	check(PAPI_stop(es, &v), "stop");
	double lost = t - iters / base_rate;
	long sd = deliveries;
	double per_sw = sd ? lost / sd : 0;
	printf("papi software overflow (perf::TASK-CLOCK, FORCE_SW): %ld deliveries in %.3f s, %.2f us each\n", sd, t,
	       per_sw * 1e6);
	if (per_sw > 0)
		printf("ratio: alpha21064 delivery / papi sw delivery = %.1f; alpha21064 stepped instruction / papi sw "
		       "delivery = %.1f\n", per_delivery / per_sw, per_step / per_sw);
	return 0;
}
