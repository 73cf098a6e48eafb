/*
 * alpha_bench: what the alpha21064 software backend costs, against PAPI's
 * own software overflow (PAPI_OVERFLOW_FORCE_SW on perf::TASK-CLOCK) measured
 * in the same run (the VM's speed drifts between runs).
 *
 *   1. cost per stepped instruction: alpha_load_loop (3 instructions per
 *      load) under INTEGER_OPERATE:width=8 with no handler, minus native;
 *   2. cost per overflow delivery, measured directly: the component times
 *      each dispatch with rdtsc (frame build + _papi_hwi_dispatch_overflow_
 *      signal + the user's handler) and papi_heritage_alpha21064_stats
 *      reports it.  Subtracting a run without handler from a run with one,
 *      as this bench first did, gave a negative cost: ~150 deliveries of a
 *      few hundred ns are lost in the noise of 60,000 steps of microseconds.
 *      The handler samples the previous delivery's duration (last_ticks) so
 *      a median is possible; the step that raised the interrupt is already
 *      paid by stepping and is not part of the delivery;
 *   3. PAPI's software overflow, measured the same way from outside: a tight
 *      loop stores rdtsc into a global at every iteration, SIGPROF (10 ms of
 *      CPU, PAPI's itimer) interrupts it, PAPI's dispatch reads TASK-CLOCK and
 *      calls the handler, which records rdtsc at entry.  The loop sees a gap
 *      in its own rdtsc sequence around each handler run: the gap is the
 *      whole delivery (timer interrupt, signal frame, PAPI dispatch with its
 *      read(), handler, sigreturn), entry - last loop stamp is its first half.
 *      Every SIGPROF is a delivery here (threshold 100 us < 10 ms), and no
 *      stepping is involved, so this is the whole cost of a software
 *      overflow, the peer of (2): for alpha21064 the signal is the step trap
 *      that happens anyway, the delivery is what comes on top.
 * Medians, in ns through a TSC rate calibrated against CLOCK_MONOTONIC.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <papi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

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

/* Delivery durations in TSC ticks, one per delivery. */
#define MAX_SAMPLES 4096
static unsigned long long alpha_samples[MAX_SAMPLES];
static int n_alpha;
static unsigned long long alpha_prev_deliveries;

/* alpha21064's handler: the previous delivery has completed, so last_ticks
 * is its duration when exactly one delivery has been timed since the last
 * call (a delivery elsewhere in between would make the sample ambiguous). */
static void alpha_handler(int es, void *pc, long long vec, void *ctx)
{
	struct papi_heritage_alpha21064_stats st;
	count(es, pc, vec, ctx);
	if (papi_heritage_alpha21064_stats(&st) != PAPI_OK)
		return;
	if (alpha_prev_deliveries && st.deliveries == alpha_prev_deliveries + 1 && n_alpha < MAX_SAMPLES)
		alpha_samples[n_alpha++] = st.last_ticks;
	alpha_prev_deliveries = st.deliveries;
}

static volatile unsigned long long loop_last, h_last, h_in, h_out;
static volatile long h_seq;
static unsigned long long sw_entry[MAX_SAMPLES], sw_total[MAX_SAMPLES], sw_exit[MAX_SAMPLES];
static int n_sw;

/* PAPI's software overflow handler: stamps its entry and exit. */
static void sw_handler(int es, void *pc, long long vec, void *ctx)
{
	unsigned long long t = __rdtsc();
	count(es, pc, vec, ctx);
	h_last = loop_last; /* the interrupted loop's latest stamp */
	h_in = t;
	h_seq++;
	h_out = __rdtsc();
}

static int cmp_ull(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
	return x < y ? -1 : x > y;
}

static double median(unsigned long long *v, int n)
{
	if (n == 0)
		return 0;
	qsort(v, (size_t)n, sizeof *v, cmp_ull);
	return n % 2 ? (double)v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* TSC ticks per ns, over 50 ms of CLOCK_MONOTONIC. */
static double tsc_per_ns(void)
{
	double t0 = now();
	unsigned long long c0 = __rdtsc();
	while (now() - t0 < 0.05)
		;
	double t1 = now();
	unsigned long long c1 = __rdtsc();
	return (double)(c1 - c0) / ((t1 - t0) * 1e9);
}

/* The tight loop of (3): `seconds` of rdtsc stamps.  A handler run shows as
 * h_seq changing; the loop may notice it one iteration late (the signal came
 * between its rdtsc and its check), so the gap is taken from the handler's
 * own record: from the loop's last stamp before it (h_last) to the loop's
 * first stamp after it (the first t past h_out). */
static void stamp_loop(double seconds, double tpn)
{
	unsigned long long t = __rdtsc(), end = t + (unsigned long long)(seconds * 1e9 * tpn);
	long seq = h_seq;
	while (t < end) {
		t = __rdtsc();
		loop_last = t;
		if (h_seq != seq && t > h_out) {
			seq = h_seq;
			if (n_sw < MAX_SAMPLES) {
				sw_entry[n_sw] = h_in - h_last;
				sw_exit[n_sw] = t - h_out;
				sw_total[n_sw++] = t - h_last;
			}
		}
	}
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
		check(PAPI_overflow(es, code, threshold, 0, alpha_handler), "overflow");
	}
	deliveries = 0;
	alpha_prev_deliveries = 0; /* the first delivery of a run has no predecessor to sample */
	check(PAPI_start(es), "start");
	double t0 = now();
	alpha_load_loop(data, n);
	double t1 = now();
	check(PAPI_stop(es, &v), "stop");
	if (threshold)
		check(PAPI_overflow(es, code, 0, 0, alpha_handler), "overflow off");
	check(PAPI_cleanup_eventset(es), "cleanup");
	check(PAPI_destroy_eventset(&es), "destroy");
	return t1 - t0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	/* It measures single-stepping: on a machine with a PMU, auto would
	 * choose the core-PMU backend instead. */
	setenv("PAPI_HERITAGE_ALPHA21064_BACKEND", "software", 1);
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
	double plain = 1e9;
	struct papi_heritage_alpha21064_stats st0, st1;
	check(papi_heritage_alpha21064_stats(&st0), "alpha stats");
	for (int r = 0; r < 3; r++) {
		double a = stepped("alpha21064:::INTEGER_OPERATE:width=8", 0, n);
		plain = a < plain ? a : plain;
		/* 2. delivery: INTEGER_OPERATE (addq + decq: 2 per iteration) at
		 * 2^8, a handler at every interrupt. */
		stepped("alpha21064:::INTEGER_OPERATE:width=8", 256, n);
	}
	check(papi_heritage_alpha21064_stats(&st1), "alpha stats");
	double tpn = tsc_per_ns();
	double insns = 3.0 * n + 3;
	double per_step = (plain - native) / insns;
	printf("alpha21064 stepping: %.0f instructions in %.3f s (native %.6f s): %.2f us per stepped "
	       "instruction, x%.0f\n", insns, plain, native, per_step * 1e6, plain / native);
	unsigned long long dd = st1.deliveries - st0.deliveries;
	double alpha_mean = dd ? (double)(st1.delivery_ticks - st0.delivery_ticks) / dd / tpn : 0;
	double alpha_med = median(alpha_samples, n_alpha) / tpn;
	printf("alpha21064 overflow delivery (timed in the component, TSC %.3f GHz): %llu deliveries, median %.0f ns "
	       "(%d samples), mean %.0f ns, min %.0f ns\n", tpn, dd, alpha_med, n_alpha, alpha_mean,
	       st1.min_ticks / tpn);

	/* 3. PAPI software overflow on perf::TASK-CLOCK (threshold 100 us). */
	int es = PAPI_NULL, code;
	if (PAPI_create_eventset(&es) != PAPI_OK || PAPI_add_named_event(es, "perf::TASK-CLOCK") != PAPI_OK) {
		printf("papi software overflow: perf::TASK-CLOCK not available here; no peer\n");
		return 0;
	}
	check(PAPI_event_name_to_code("perf::TASK-CLOCK", &code), "name");
	check(PAPI_overflow(es, code, 100000, PAPI_OVERFLOW_FORCE_SW, sw_handler), "sw overflow");
	deliveries = 0;
	long long v;
	check(PAPI_start(es), "start");
	stamp_loop(1.0, tpn);
	check(PAPI_stop(es, &v), "stop");
	long sd = deliveries;
	double sw_med = median(sw_total, n_sw) / tpn;
	printf("papi software overflow (perf::TASK-CLOCK, FORCE_SW, SIGPROF every 10 ms of CPU): %ld deliveries, "
	       "%d timed: median %.0f ns whole (to handler %.0f ns, back %.0f ns)\n", sd, n_sw, sw_med,
	       median(sw_entry, n_sw) / tpn, median(sw_exit, n_sw) / tpn);
	if (sw_med > 0 && alpha_med > 0)
		printf("ratio (medians): alpha21064 delivery / papi sw delivery = %.3g (papi sw / alpha21064 = %.0f); alpha21064 stepped instruction / "
		       "papi sw delivery = %.3g\n", alpha_med / sw_med, sw_med / alpha_med, per_step * 1e9 / sw_med);
	return 0;
}
