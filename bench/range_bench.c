/*
 * range_bench: what Itanium 2 data-address-range counting costs on x86-64.
 *
 * One source, built five times: plain -O2 (gcc vectorises the work loops;
 * the trap backends count it), with the outline instrument flags (every
 * access calls libpapi's __asan_{load,store}N_noabort hooks) and with the
 * inline ones (every access checks a shadow byte inline and calls
 * __asan_report_*_noabort only on poisoned, i.e. watched, granules).  gcc
 * instruments before it vectorises, so neither instrumented build is
 * vectorised.  The fourth build is clang's with its outline flags: clang
 * instruments after vectorising, so its loops stay vectorised and call a
 * hook per 16-byte vector access.  The fifth is clang's with its inline
 * flags: the vectorised loops check the shadow inline and call only for
 * watched granules.  bench/run-bench runs the modes and compares them; each
 * mode prints `build plain|instrumented-outline|instrumented-inline|
 * instrumented-outline-clang|instrumented-inline-clang` and
 * `key value` lines (instrumented-pass-clang: the sixth build, clang with
 * papi-heritage's pass plugin, the test and the count inline), and a backend that refuses prints
 * `key unavailable: <why>` and exits 0, so only a crash exits non-zero.
 *
 *   native [runs]                the work without PAPI, best of runs
 *   papi <percent> [runs] [ints] the work inside PAPI_start..PAPI_stop of an
 *                                itanium2 set watching the first percent% of
 *                                the array (exact mode), best of runs; ints
 *                                shrinks the array (for extrapolating slow
 *                                backends); the backend is libpapi's choice
 *                                or PAPI_HERITAGE_ITANIUM2_BACKEND
 *   read [batches]               ns per PAPI_read: itanium2 (instrument
 *                                backend) vs perf::TASK-CLOCK, same process
 *   bphit [n]                    ns per hit: breakpoint backend, one 8-byte word
 *   pthit [n]                    ns per trapped access: pagetrap backend, one page
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <papi.h>
#include "papi_heritage.h"

#define DEFAULT_INTS (4L << 20)  /* 16 MiB of int */
/* gcc 12 at -O2 uses the "very cheap" vectoriser cost model, which only
 * vectorises loops whose trip count is a known multiple of the vector width;
 * a constant inner chunk gives it that without any extra flag. */
#define CHUNK 1024

/* Built with the instrument flags: gcc says so with __SANITIZE_ADDRESS__;
 * clang 14 does not define it under kernel-address, its __has_feature does. */
#if defined(__SANITIZE_ADDRESS__)
#define RB_INSTRUMENTED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RB_INSTRUMENTED 1
#endif
#endif

#ifdef RB_INSTRUMENTED
/* The mapping libpapi reserves for inline-instrumented programs only: the
 * x86-64 ASan shadow [0x7fff8000, 0x10007fff8000).  Seen from inside, so the
 * report names the build a number really came from, whatever the binary is
 * called. */
static int inline_shadow_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long a, b;
	char line[512];
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a == 0x7fff8000UL && b == 0x10007fff8000UL)
			found = 1;
	fclose(f);
	return found;
}
#endif

static const char *build_name(void)
{
	/* The pass plugin leaves no trace the preprocessor sees: the build
	 * says (Makefile.am). */
#ifdef RB_BUILD_NAME
	return RB_BUILD_NAME;
#endif
#ifdef RB_INSTRUMENTED
#ifdef __clang__
	if (inline_shadow_mapped())
		return "instrumented-inline-clang";
	return "instrumented-outline-clang";
#else
	if (inline_shadow_mapped())
		return "instrumented-inline";
	return "instrumented-outline";
#endif
#else
	return "plain";
#endif
}

static volatile long sink;
static int cidx_it2 = -1;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The measured work: one store pass, one load pass.  noinline so that both
 * builds time the same function and the instrumented one calls the hooks
 * from exactly this code. */
__attribute__((noinline)) static void work(int *a, long n)
{
	long sum = 0;

	for (long c = 0; c < n / CHUNK; c++) {
		int *b = a + c * CHUNK;
		for (int i = 0; i < CHUNK; i++)
			b[i] = (int)(c * CHUNK + i);
	}
	for (long c = 0; c < n / CHUNK; c++) {
		const int *b = a + c * CHUNK;
		for (int i = 0; i < CHUNK; i++)
			sum += b[i];
	}
	sink = sum;
}

/* Stores that each hit the watched word: the per-hit cost of the trap
 * backends.  volatile keeps one store instruction per iteration. */
__attribute__((noinline)) static void hit_loop(volatile long *p, long n)
{
	for (long i = 0; i < n; i++)
		*p = i;
}

static void die_papi(const char *what, int rc)
{
	fprintf(stderr, "range_bench: %s: %s (%s)\n", what, PAPI_strerror(rc), papi_heritage_last_error());
	exit(2);
}

#define CHECK(call)                                   \
	do {                                          \
		int rc_ = (call);                     \
		if (rc_ != PAPI_OK)                   \
			die_papi(#call, rc_);         \
	} while (0)

static void papi_init(void)
{
	int rc = PAPI_library_init(PAPI_VER_CURRENT);

	if (rc != PAPI_VER_CURRENT)
		die_papi("PAPI_library_init", rc);
	cidx_it2 = PAPI_get_component_index("itanium2");
	if (cidx_it2 < 0)
		die_papi("PAPI_get_component_index(itanium2)", cidx_it2);
}

/* An itanium2 set counting loads and stores in exactly [lo, hi). */
static int it2_set(void *lo, void *hi)
{
	int set = PAPI_NULL;
	PAPI_option_t opt;

	CHECK(PAPI_create_eventset(&set));
	CHECK(PAPI_assign_eventset_component(set, cidx_it2));
	/* :exact=1 before the range, so the range is mapped byte-exact rather
	 * than to the Itanium power-of-two cover. */
	CHECK(PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED:exact=1"));
	CHECK(PAPI_add_named_event(set, "itanium2:::STORES_RETIRED:exact=1"));
	memset(&opt, 0, sizeof opt);
	opt.addr.eventset = set;
	opt.addr.start = (vptr_t)lo;
	opt.addr.end = (vptr_t)hi;
	CHECK(PAPI_set_opt(PAPI_DATA_ADDRESS, &opt));
	return set;
}

static void drop_set(int set)
{
	CHECK(PAPI_cleanup_eventset(set));
	CHECK(PAPI_destroy_eventset(&set));
}

static const char *backend_of(int set)
{
	static char name[32];

	if (papi_heritage_itanium2_backend(set, name, sizeof name) != PAPI_OK)
		snprintf(name, sizeof name, "?");
	return name;
}

/* A refused PAPI_start is a result, not a failure: say why and stop. */
static void start_or_unavailable(int set, const char *key)
{
	int rc = PAPI_start(set);

	if (rc != PAPI_OK) {
		printf("%s unavailable: %s\n", key, papi_heritage_last_error()[0] ? papi_heritage_last_error()
		                                                                 : PAPI_strerror(rc));
		exit(0);
	}
}

static int *alloc_array(long n)
{
	int *a = malloc((size_t)n * sizeof *a);

	if (!a) {
		fprintf(stderr, "range_bench: out of memory\n");
		exit(2);
	}
	/* First-touch page faults (4096 of them, a few us each on this VM)
	 * would otherwise land in the first timed run. */
	work(a, n);
	return a;
}

static long arg_long(int argc, char **argv, int i, long dflt)
{
	if (i >= argc)
		return dflt;
	char *end;
	long v = strtol(argv[i], &end, 10);
	if (*end || v <= 0) {
		fprintf(stderr, "range_bench: bad number '%s'\n", argv[i]);
		exit(2);
	}
	return v;
}

static int mode_native(int argc, char **argv)
{
	long runs = arg_long(argc, argv, 2, 11);
	int *a = alloc_array(DEFAULT_INTS);
	double best = 1e30;

	for (long r = 0; r < runs; r++) {
		double t0 = now();
		work(a, DEFAULT_INTS);
		double t = now() - t0;
		if (t < best)
			best = t;
	}
	printf("build %s\n", build_name());
	printf("ints %ld\n", DEFAULT_INTS);
	printf("runs %ld\n", runs);
	printf("native_s %.6f\n", best);
	free(a);
	return 0;
}

static int mode_papi(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: range_bench papi <percent> [runs] [ints]\n");
		return 2;
	}
	long pct = arg_long(argc, argv, 2, 100);
	long runs = arg_long(argc, argv, 3, 5);
	long n = arg_long(argc, argv, 4, DEFAULT_INTS);
	if (pct > 100 || n % CHUNK) {
		fprintf(stderr, "range_bench: percent <= 100, ints a multiple of %d\n", CHUNK);
		return 2;
	}
	long watched = n * pct / 100;
	int *a = alloc_array(n);
	long long v[2] = { 0, 0 };
	double best = 1e30;

	papi_init();
	int set = it2_set(a, a + watched);
	printf("build %s\n", build_name());
	printf("ints %ld\n", n);
	printf("percent %ld\n", pct);
	printf("watched_bytes %ld\n", watched * (long)sizeof(int));
	for (long r = 0; r < runs; r++) {
		double t0 = now();
		start_or_unavailable(set, "papi_s");
		work(a, n);
		CHECK(PAPI_stop(set, v));
		double t = now() - t0;
		if (t < best)
			best = t;
	}
	printf("backend %s\n", backend_of(set));
	printf("runs %ld\n", runs);
	/* Per run.  Counts are per access instruction: equal to watched in
	 * the (scalar) instrumented build, about watched/4 for 16-byte vectors. */
	printf("loads %lld\n", v[0]);
	printf("stores %lld\n", v[1]);
	printf("watched_ints %ld\n", watched);
	printf("papi_s %.6f\n", best);
	drop_set(set);
	free(a);
	PAPI_shutdown();
	return 0;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ns per PAPI_read of a running set, batch by batch. */
static double read_batch(int set, long n)
{
	long long v[2];
	double t0 = now();

	for (long i = 0; i < n; i++) {
		int rc = PAPI_read(set, v);
		if (rc != PAPI_OK)
			die_papi("PAPI_read", rc);
	}
	double t = now() - t0;
	sink = (long)v[0];
	return t * 1e9 / (double)n;
}

static int mode_read(int argc, char **argv)
{
	enum { MAXB = 51 };
	int batches = (int)arg_long(argc, argv, 2, 9);
	if (batches > MAXB)
		batches = MAXB;
	/* A PAPI_read of the instrument backend is a copy of thread-local
	 * counters, so it needs many more calls than a syscall read to fill a
	 * batch of similar length. */
	const long n_it2 = 200000, n_perf = 20000;
	double t_it2[MAXB], t_perf[MAXB];

	/* The cheap backend is the one that competes with a perf read; a
	 * small heap range keeps it within what instrument accepts. */
	setenv("PAPI_HERITAGE_ITANIUM2_BACKEND", "instrument", 1);
	papi_init();
	long *buf = malloc(64);
	if (!buf)
		return 2;
	int it2 = it2_set(buf, buf + 8);
	int perf = PAPI_NULL;
	CHECK(PAPI_create_eventset(&perf));
	CHECK(PAPI_add_named_event(perf, "perf::TASK-CLOCK"));

	start_or_unavailable(it2, "read_it2_ns");
	CHECK(PAPI_start(perf));
	/* Interleaved batches, so that drift in the VM's speed (steal, other
	 * tenants) hits both sides alike. */
	for (int b = 0; b < batches; b++) {
		t_it2[b] = read_batch(it2, n_it2);
		t_perf[b] = read_batch(perf, n_perf);
	}
	long long v[2];
	CHECK(PAPI_stop(perf, v));
	printf("backend %s\n", backend_of(it2));
	CHECK(PAPI_stop(it2, v));
	double mi = median(t_it2, batches), mp = median(t_perf, batches);
	printf("batches %d\n", batches);
	printf("read_it2_ns %.1f\n", mi);
	printf("read_perf_ns %.1f\n", mp);
	printf("read_ratio %.1f\n", mp / mi);
	drop_set(it2);
	CHECK(PAPI_cleanup_eventset(perf));
	CHECK(PAPI_destroy_eventset(&perf));
	free(buf);
	PAPI_shutdown();
	return 0;
}

/* ns per access to a watched range that every access hits, median of 3
 * start..stop rounds; the loop itself costs ~1 ns per store, noise next to
 * a trap. */
static int mode_hit(const char *backend, const char *key, size_t bytes, long n)
{
	double t[3];
	long long v[2] = { 0, 0 };

	setenv("PAPI_HERITAGE_ITANIUM2_BACKEND", backend, 1);
	papi_init();
	/* Page-aligned and alone in its page, so the page-trap backend traps
	 * on the loop's stores only, not on neighbouring heap data. */
	long *buf = aligned_alloc(4096, 4096);
	if (!buf)
		return 2;
	memset(buf, 0, 4096);
	int set = it2_set(buf, (char *)buf + bytes);
	for (int r = 0; r < 3; r++) {
		start_or_unavailable(set, key);
		double t0 = now();
		hit_loop(buf, n);
		double dt = now() - t0;
		CHECK(PAPI_stop(set, v));
		t[r] = dt * 1e9 / (double)n;
	}
	printf("backend %s\n", backend_of(set));
	printf("range_bytes %zu\n", bytes);
	printf("accesses %ld\n", n);
	/* Per round; stores should equal accesses, loads 0. */
	printf("loads %lld\n", v[0]);
	printf("stores %lld\n", v[1]);
	printf("%s %.0f\n", key, median(t, 3));
	drop_set(set);
	free(buf);
	PAPI_shutdown();
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(mode, "native") == 0)
		return mode_native(argc, argv);
	if (strcmp(mode, "papi") == 0)
		return mode_papi(argc, argv);
	if (strcmp(mode, "read") == 0)
		return mode_read(argc, argv);
	if (strcmp(mode, "bphit") == 0)
		return mode_hit("breakpoint", "bphit_ns", 8, arg_long(argc, argv, 2, 20000));
	if (strcmp(mode, "pthit") == 0)
		return mode_hit("pagetrap", "pthit_ns", 4096, arg_long(argc, argv, 2, 20000));
	fprintf(stderr, "usage: range_bench native [runs] | papi <percent> [runs] [ints] | read [batches] | "
	                "bphit [n] | pthit [n]\n");
	return 2;
}
