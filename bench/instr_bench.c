/*
 * instr_bench: what counting the instructions of one routine costs, per
 * backend, against the same routine without PAPI and against callgrind
 * (bench/run-instr-bench runs it; issue 22 item 4).
 *
 * One source, built three ways: plain -O2 (the trap backends count it:
 * pagetrap steps every instruction, blocktrap traps once per block), with
 * gcc's instrument flags and with clang's (the instrument backend counts
 * from the block hooks).  The routine is ib_hot, a register loop with a
 * data-dependent branch (xorshift), followed by ib_hot_end
 * (-fno-toplevel-reorder keeps the order).
 *
 *   instr_bench native N    ib_hot(N) without PAPI: best of 5, `native_ms`
 *   instr_bench count N     ib_hot(N) in an itanium2 set counting
 *                           IA64_INST_RETIRED:exact=1 over [ib_hot,
 *                           ib_hot_end) (backend: libpapi's choice or
 *                           PAPI_HERITAGE_ITANIUM2_BACKEND): best of
 *                           $INSTR_BENCH_REPEAT (5) `counted_ms`, the
 *                           count `insns`, the backend `backend`; a backend
 *                           that refuses prints `unavailable <why>`
 *   instr_bench work N      ib_hot(N), nothing else (under callgrind)
 * Exit status non-zero only on a crash or a PAPI failure other than a
 * refusal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <papi.h>
#include "papi_heritage.h"

static volatile long sink;

/* The result is stored here, not returned: a routine without side effects
 * may be moved out of the timed region (clang did: 0.000 ms). */
__attribute__((noinline)) void ib_hot(long n, long seed)
{
	long x = seed, s = 0;
	for (long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (x & 1)
			s += x;
		else
			s -= i;
	}
	sink = s;
}

__attribute__((noinline)) void ib_hot_end(void)
{
	__asm__ volatile("");
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "instr_bench: %s: %s\n", what, PAPI_strerror(rc));
	return 1;
}

static int count(long n)
{
	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	if (rc != PAPI_VER_CURRENT)
		return fail("PAPI_library_init", rc);
	const char *env = getenv("INSTR_BENCH_REPEAT");
	int repeat = env ? atoi(env) : 5;
	double best = 1e30;
	long long v = 0;
	char backend[64] = "?";
	for (int r = 0; r < (repeat > 0 ? repeat : 1); r++) {
		int set = PAPI_NULL;
		if ((rc = PAPI_create_eventset(&set)) != PAPI_OK)
			return fail("PAPI_create_eventset", rc);
		if ((rc = PAPI_add_named_event(set, "itanium2:::IA64_INST_RETIRED:exact=1")) != PAPI_OK)
			return fail("PAPI_add_named_event", rc);
		PAPI_option_t opt;
		memset(&opt, 0, sizeof opt);
		opt.addr.eventset = set;
		opt.addr.start = (vptr_t)(void *)ib_hot;
		opt.addr.end = (vptr_t)(void *)ib_hot_end;
		if ((rc = PAPI_set_opt(PAPI_INSTR_ADDRESS, &opt)) != PAPI_OK)
			return fail("PAPI_set_opt(PAPI_INSTR_ADDRESS)", rc);
		rc = PAPI_start(set);
		if (rc != PAPI_OK) {
			/* A backend this machine, account or binary cannot use. */
			printf("unavailable %s: %s\n", PAPI_strerror(rc), papi_heritage_last_error());
			return 0;
		}
		papi_heritage_itanium2_backend(set, backend, sizeof backend);
		double t0 = now();
		ib_hot(n, 12345);
		double t = now() - t0;
		if ((rc = PAPI_stop(set, &v)) != PAPI_OK)
			return fail("PAPI_stop", rc);
		PAPI_cleanup_eventset(set);
		PAPI_destroy_eventset(&set);
		if (t < best)
			best = t;
	}
	printf("backend %s\ninsns %lld\ncounted_ms %.4f\n", backend, v, 1e3 * best);
	PAPI_shutdown();
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: instr_bench native|count|work N\n");
		return 2;
	}
	long n = atol(argv[2]);
	if (!strcmp(argv[1], "work")) {
		ib_hot(n, 12345);
		return 0;
	}
	if (!strcmp(argv[1], "native")) {
		double best = 1e30;
		for (int i = 0; i < 5; i++) {
			double t0 = now();
			ib_hot(n, 12345);
			double t = now() - t0;
			if (t < best)
				best = t;
		}
		printf("native_ms %.4f\n", 1e3 * best);
		return 0;
	}
	if (!strcmp(argv[1], "count"))
		return count(n);
	fprintf(stderr, "usage: instr_bench native|count|work N\n");
	return 2;
}
