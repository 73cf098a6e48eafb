/*
 * it2_model_bench: what itanium2's cache model (src/itanium2/it2_cache.c,
 * fed by observe() in it2_set.c) costs per access, against the instrument
 * backend's plain counting and against cachegrind.  bench/run-it2-model-bench
 * runs the modes alternately and prints medians.
 *
 * One loop: two 1 MiB arrays of long, a (watched) and b (right after it, not
 * watched), read as s += a[i] + b[i], several passes: every pass is 262144
 * 8-byte loads, half of them out of the range (the model sees those too).
 * Built at -O2 -fno-tree-vectorize, twice: plain (no PAPI linked: the native
 * time, and cachegrind's subject) and with the outline instrument flags (a
 * hook call per load).  Without the vectoriser the plain build makes the
 * same scalar loads the hooks and cachegrind see, so "per access" is one
 * 8-byte load in every variant.
 *
 *   native [ms]        the loop, no PAPI (either build; under valgrind too)
 *   plain [ms]         (instrumented) inside PAPI_start..stop of an itanium2
 *                      set counting LOADS_RETIRED over a (compare + increment)
 *   model [ms]         (instrumented) L1D_READ_MISSES_ALL and
 *                      L2_DATA_REFERENCES_L2_DATA_READS over a (the model)
 *   counts [passes]    (instrumented) the model's L1D read misses over a+b,
 *                      for comparison with cachegrind's D1 misses in sweep()
 *
 * Each timed mode runs a warm-up pass and a timed one, picks the pass count
 * that takes about ms milliseconds (default 100) and times those passes with
 * clock_gettime (which works under valgrind, so valgrind's start-up is not
 * in the number).  Output: `key value` lines; a set PAPI refuses prints
 * `ns_per_access unavailable: <why>` and exits 0.  Exact mode, backend
 * instrument (unless PAPI_HERITAGE_ITANIUM2_BACKEND says otherwise).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#if defined(__SANITIZE_ADDRESS__)
#define MB_INSTRUMENTED 1
#include <papi.h>
#include <papi_heritage.h>
#endif

#define ARRAY_BYTES (1L << 20)
#define N (ARRAY_BYTES / (long)sizeof(long)) /* longs per array */
#define MAX_PASSES 100000L

static volatile long sink;
static long passes_total; /* every pass sweep() made, warm-up included */

/* noinline: both builds time this very code, the hooks are called from
 * it, and cachegrind's per-function counts name it. */
__attribute__((noinline)) static long sweep(const long *a, const long *b, long n, long passes)
{
	long s = 0;
	for (long p = 0; p < passes; p++)
		for (long i = 0; i < n; i++)
			s += a[i] + b[i];
	passes_total += passes;
	return s;
}

/* Where it ran: /proc/cpuinfo's first processor. */
static void print_where(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256], vendor[64] = "?", family[16] = "?", model[16] = "?", name[128] = "?";
	if (f) {
		while (fgets(line, sizeof line, f)) {
			char *v = strchr(line, ':');
			if (!v)
				continue;
			v += 1 + (v[1] == ' ');
			v[strcspn(v, "\n")] = 0;
			if (!strncmp(line, "vendor_id", 9) && vendor[0] == '?')
				snprintf(vendor, sizeof vendor, "%s", v);
			else if (!strncmp(line, "cpu family", 10) && family[0] == '?')
				snprintf(family, sizeof family, "%s", v);
			else if (!strncmp(line, "model\t", 6) && model[0] == '?')
				snprintf(model, sizeof model, "%s", v);
			else if (!strncmp(line, "model name", 10) && name[0] == '?')
				snprintf(name, sizeof name, "%s", v);
		}
		fclose(f);
	}
	printf("cpu %s family %s model %s (%s)\n", vendor, family, model, name);
}

/* a and b in one block, b right after a: a range over the block is a+b. */
static long *alloc_block(void)
{
	void *p = NULL;
	if (posix_memalign(&p, 4096, 2 * ARRAY_BYTES) != 0) {
		fprintf(stderr, "it2_model_bench: out of memory\n");
		exit(2);
	}
	long *a = p;
	for (long i = 0; i < 2 * N; i++)
		a[i] = i & 7;
	return a;
}

static long arg_long(int argc, char **argv, int i, long dflt)
{
	if (i >= argc)
		return dflt;
	char *end;
	long v = strtol(argv[i], &end, 10);
	if (*end || v <= 0) {
		fprintf(stderr, "it2_model_bench: bad number '%s'\n", argv[i]);
		exit(2);
	}
	return v;
}

static long passes_for(double one_pass_s, long ms)
{
	double p = (double)ms * 1e-3 / (one_pass_s > 1e-9 ? one_pass_s : 1e-9);
	return p < 1 ? 1 : p > MAX_PASSES ? MAX_PASSES : (long)(p + 0.5);
}

/* A warm-up pass (caches, TLB, the model's first contents), then one
 * timed pass: the passes that take about ms milliseconds. */
static long calibrate(const long *a, long ms)
{
	sink = sweep(a, a + N, N, 1);
	double t0 = bench_now();
	sink = sweep(a, a + N, N, 1);
	return passes_for(bench_now() - t0, ms);
}

static void print_result(const char *mode, long passes, double t)
{
	printf("build %s\n",
#ifdef MB_INSTRUMENTED
	       "instrumented-outline"
#else
	       "plain"
#endif
	);
	printf("mode %s\n", mode);
	printf("accesses_per_pass %ld\n", 2 * N);
	printf("passes %ld\n", passes);
	printf("passes_total %ld\n", passes_total);
	printf("loop_s %.6f\n", t);
	printf("ns_per_access %.3f\n", t * 1e9 / ((double)passes * 2.0 * (double)N));
}

static int mode_native(long ms)
{
	long *a = alloc_block();
	long passes = calibrate(a, ms);
	double t0 = bench_now();
	sink = sweep(a, a + N, N, passes);
	double t = bench_now() - t0;
	print_where();
	print_result("native", passes, t);
	free(a);
	return 0;
}

#ifdef MB_INSTRUMENTED
static void die_papi(const char *what, int rc)
{
	fprintf(stderr, "it2_model_bench: %s: %s (%s)\n", what, PAPI_strerror(rc), papi_heritage_last_error());
	exit(2);
}

#define CHECK(call)                           \
	do {                                  \
		int rc_ = (call);             \
		if (rc_ != PAPI_OK)           \
			die_papi(#call, rc_); \
	} while (0)

/* A refusal is a result: say why, exit 0. */
static void refused(const char *what, int rc)
{
	const char *why = papi_heritage_last_error();
	printf("ns_per_access unavailable: %s: %s\n", what, why && *why ? why : PAPI_strerror(rc));
	exit(0);
}

static int make_set(const void *lo, const void *hi, const char **names, int n)
{
	int set = PAPI_NULL;
	PAPI_option_t opt;
	CHECK(PAPI_create_eventset(&set));
	CHECK(PAPI_assign_eventset_component(set, PAPI_get_component_index("itanium2")));
	for (int i = 0; i < n; i++) {
		int rc = PAPI_add_named_event(set, names[i]);
		if (rc != PAPI_OK)
			refused(names[i], rc);
	}
	memset(&opt, 0, sizeof opt);
	opt.addr.eventset = set;
	opt.addr.start = (vptr_t)lo;
	opt.addr.end = (vptr_t)hi;
	int rc = PAPI_set_opt(PAPI_DATA_ADDRESS, &opt);
	if (rc != PAPI_OK)
		refused("PAPI_set_opt(PAPI_DATA_ADDRESS)", rc);
	return set;
}

static void start(int set)
{
	int rc = PAPI_start(set);
	if (rc != PAPI_OK)
		refused("PAPI_start", rc);
}

static void papi_init(void)
{
	setenv("PAPI_HERITAGE_ITANIUM2_MODE", "exact", 1);
	setenv("PAPI_HERITAGE_ITANIUM2_BACKEND", "instrument", 0);
	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	if (rc != PAPI_VER_CURRENT)
		die_papi("PAPI_library_init", rc);
}

static const char *backend_of(int set)
{
	static char name[32];
	if (papi_heritage_itanium2_backend(set, name, sizeof name) != PAPI_OK)
		snprintf(name, sizeof name, "?");
	return name;
}

static const char *plain_events[] = { "itanium2:::LOADS_RETIRED" };
static const char *model_events[] = { "itanium2:::L1D_READ_MISSES_ALL", "itanium2:::L2_DATA_REFERENCES_L2_DATA_READS" };

/* The loop inside start..stop of a set over a: calibrate() also warms the
 * model (its contents stay across start/stop), then the timed passes,
 * counted from zero.  Only sweep() is timed. */
static int mode_papi(const char *mode, long ms)
{
	int model = strcmp(mode, "model") == 0;
	const char **ev = model ? model_events : plain_events;
	int nev = model ? 2 : 1;
	long long v[2] = { 0, 0 };
	long *a = alloc_block();

	papi_init();
	int set = make_set(a, a + N, ev, nev);
	start(set);
	long passes = calibrate(a, ms);
	CHECK(PAPI_stop(set, v));
	start(set);
	double t0 = bench_now();
	sink = sweep(a, a + N, N, passes);
	double t = bench_now() - t0;
	CHECK(PAPI_stop(set, v));
	print_where();
	printf("backend %s\n", backend_of(set));
	print_result(mode, passes, t);
	for (int i = 0; i < nev; i++)
		printf("%s_per_pass %.1f\n", ev[i] + strlen("itanium2:::"), (double)v[i] / (double)passes);
	CHECK(PAPI_cleanup_eventset(set));
	CHECK(PAPI_destroy_eventset(&set));
	PAPI_shutdown();
	free(a);
	return 0;
}

/* The model's L1D read misses over a alone and over a+b, per pass (after a
 * warm-up pass), for the comparison with cachegrind's D1 read misses of
 * sweep(), which reads both. */
static int mode_counts(long passes)
{
	long *a = alloc_block();
	papi_init();
	const void *hi[2] = { a + N, a + 2 * N };
	const char *key[2] = { "model_l1d_read_misses_a_per_pass", "model_l1d_read_misses_ab_per_pass" };
	for (int k = 0; k < 2; k++) {
		long long v[2];
		int set = make_set(a, hi[k], model_events, 1);
		start(set);
		sink = sweep(a, a + N, N, 1);
		CHECK(PAPI_stop(set, v));
		start(set);
		sink = sweep(a, a + N, N, passes);
		CHECK(PAPI_stop(set, v));
		printf("%s %.1f\n", key[k], (double)v[0] / (double)passes);
		CHECK(PAPI_cleanup_eventset(set));
		CHECK(PAPI_destroy_eventset(&set));
	}
	printf("lines_per_array %ld\n", ARRAY_BYTES / 64);
	PAPI_shutdown();
	free(a);
	return 0;
}
#endif

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(mode, "native") == 0)
		return mode_native(arg_long(argc, argv, 2, 100));
#ifdef MB_INSTRUMENTED
	if (strcmp(mode, "plain") == 0 || strcmp(mode, "model") == 0)
		return mode_papi(mode, arg_long(argc, argv, 2, 100));
	if (strcmp(mode, "counts") == 0)
		return mode_counts(arg_long(argc, argv, 2, 3));
	fprintf(stderr, "usage: it2_model_bench native|plain|model [ms] | counts [passes]\n");
#else
	fprintf(stderr, "usage: it2_model_bench native [ms]  (plain build: the PAPI modes are the "
	                "instrumented build's)\n");
#endif
	return 2;
}
