/*
 * instr_blocks: PAPI_set_opt(PAPI_INSTR_ADDRESS) on code built with the
 * instrument flags, whose block hooks (-fsanitize-coverage=trace-pc) the
 * instrument backend counts executed instructions from (watch_blocks.c),
 * checked against two independent counts of the same instructions of this
 * binary:
 *
 *   - valgrind --tool=callgrind --toggle-collect=<routine>: the routine's
 *     self Ir (callgrind counts every instruction the program executes; the
 *     routine's own, the hook calls among them, are its self cost; the
 *     hooks' bodies are the hooks' cost) must equal IA64_INST_RETIRED over
 *     [routine, routine_end) in exact mode (:exact=1);
 *   - the pagetrap backend, which steps every instruction
 *     (PAPI_HERITAGE_ITANIUM2_BACKEND=pagetrap): the same count, also over
 *     ranges that start or end in the middle of a block, and in coarse mode.
 *
 * The routines are laid out in order (-fno-toplevel-reorder): each *_end
 * follows its routine.  blocks_hot is a register loop with a data-dependent
 * branch (its time against the same loop without PAPI is printed, not
 * checked); blocks_mixed calls a function outside the range and swaps two
 * variables on one path (register moves on an edge, a block without a hook
 * of its own).  Also: LOADS_RETIRED of a data range made by the
 * instruction range (IBR+DBR) beside IA64_INST_RETIRED in one set, and a
 * second thread running the routine uncounted.
 *
 *   instr_blocks                 the checks
 *   instr_blocks work NAME N     run routine NAME with N, without PAPI (for callgrind)
 *   instr_blocks time N          this build's time of blocks_hot(N), without and with counting
 *   instr_blocks native N        only without (no PAPI: for a build without the instrument flags)
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "callgrind_self.h"
#include "heritage_test.h"
#include "knob.h"

__attribute__((noinline)) long blocks_callee(long x)
{
	return x * 3 + 1;
}

/* xorshift in registers, a branch on the low bit. */
__attribute__((noinline)) long blocks_hot(long n, long seed)
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
	return s;
}

__attribute__((noinline)) void blocks_hot_end(void)
{
	__asm__ volatile("");
}

__attribute__((noinline)) long blocks_mixed(long n, long seed)
{
	long s = seed, t = 1;
	for (long i = 0; i < n; i++) {
		long v = (i * 2654435761L) >> 7;
		if (v % 3 == 0) {
			s += blocks_callee(v);
		} else if (v % 5 == 0) {
			long tmp = s;
			s = t;
			t = tmp + v;
		} else {
			s ^= v;
		}
	}
	return s + t;
}

__attribute__((noinline)) void blocks_mixed_end(void)
{
	__asm__ volatile("");
}

/* n 8-byte loads of a[0..n) by code in the range (volatile: one load per
 * element, not vectorised, whichever compiler). */
__attribute__((noinline)) long blocks_loads(const volatile long *a, long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += a[i];
	return s;
}

__attribute__((noinline)) void blocks_loads_end(void)
{
	__asm__ volatile("");
}

struct routine {
	const char *name;
	long (*fn)(long, long);
	void *end;
};

static const struct routine routines[] = {
	{ "blocks_hot", blocks_hot, (void *)blocks_hot_end },
	{ "blocks_mixed", blocks_mixed, (void *)blocks_mixed_end },
};

static const struct routine *routine(const char *name)
{
	for (unsigned i = 0; i < sizeof routines / sizeof routines[0]; i++)
		if (strcmp(routines[i].name, name) == 0)
			return &routines[i];
	fprintf(stderr, "no routine %s\n", name);
	exit(2);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile long sink;

/* IA64_INST_RETIRED and the tagged IBRP0 event over [lo, hi) while fn(n)
 * runs, on backend (NULL: libpapi's choice); the backend used in used. */
static int count(const void *lo, const void *hi, int exact, const char *backend, long (*fn)(long, long), long n,
                 long long v[2], char *used, size_t usedlen, double *secs)
{
	int set = PAPI_NULL;
	PAPI_option_t opt;

	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_add_named_event(set, exact ? "itanium2:::IA64_INST_RETIRED:exact=1" : "itanium2:::IA64_INST_RETIRED"));
	CHECK_PAPI(PAPI_add_named_event(set, exact ? "itanium2:::IA64_TAGGED_INST_RETIRED_IBRP0_PMC8:exact=1"
	                                           : "itanium2:::IA64_TAGGED_INST_RETIRED_IBRP0_PMC8"));
	CHECK_PAPI(heritage_test_range(set, PAPI_INSTR_ADDRESS, lo, hi, &opt));
	if (backend)
		knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", backend);
	else
		knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", NULL);
	int rc = PAPI_start(set);
	knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", NULL);
	if (rc != PAPI_OK) {
		snprintf(used, usedlen, "%s", papi_heritage_last_error());
		CHECK_PAPI(PAPI_cleanup_eventset(set));
		CHECK_PAPI(PAPI_destroy_eventset(&set));
		return rc;
	}
	double t0 = now();
	sink = fn(n, 12345);
	double t1 = now();
	CHECK_PAPI(PAPI_stop(set, v));
	CHECK_PAPI(papi_heritage_itanium2_backend(set, used, usedlen));
	if (secs)
		*secs = t1 - t0;
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
	return PAPI_OK;
}

static int pagetrap_ok;

/* The instrument backend's count of [lo, hi) against the pagetrap backend's. */
static long long against_pagetrap(const char *what, const void *lo, const void *hi, int exact,
                                  long (*fn)(long, long), long n)
{
	long long vi[2], vp[2];
	char bi[256], bp[256];

	CHECK_PAPI(count(lo, hi, exact, NULL, fn, n, vi, bi, sizeof bi, NULL));
	printf("%s [%p, %p) %s: %s backend: IA64_INST_RETIRED %lld, IBRP0 %lld\n", what, lo, hi,
	       exact ? "exact" : "coarse", bi, vi[0], vi[1]);
	EXPECT_EQ("IBRP0 = IA64_INST_RETIRED (one pair)", vi[1], vi[0]);
	if (exact && strcmp(bi, "instrument") != 0) {
		fprintf(stderr, "%s: counted by the %s backend, not from the block hooks\n", what, bi);
		heritage_test_failures++;
	}
	if (!pagetrap_ok)
		return vi[0];
	CHECK_PAPI(count(lo, hi, exact, "pagetrap", fn, n, vp, bp, sizeof bp, NULL));
	printf("%s [%p, %p) %s: pagetrap backend: IA64_INST_RETIRED %lld, IBRP0 %lld\n", what, lo, hi,
	       exact ? "exact" : "coarse", vp[0], vp[1]);
	EXPECT_EQ("instrument = pagetrap", vi[0], vp[0]);
	EXPECT_EQ("instrument = pagetrap (IBRP0)", vi[1], vp[1]);
	return vi[0];
}

static void against_callgrind(const struct routine *r, long n)
{
	long long v[2];
	char b[256];

	long long cg = callgrind_self(r->name, n);
	if (cg < 0) {
		printf("%s: no callgrind comparison: valgrind --tool=callgrind did not run here\n", r->name);
		return;
	}
	CHECK_PAPI(count((void *)r->fn, r->end, 1, NULL, r->fn, n, v, b, sizeof b, NULL));
	printf("%s(%ld): callgrind self Ir %lld, IA64_INST_RETIRED %lld (%s backend)\n", r->name, n, cg, v[0], b);
	EXPECT_EQ("IA64_INST_RETIRED = callgrind's self Ir", v[0], cg);
}

/* IBR+DBR: the loads of a made by the instruction range, beside the
 * range's instructions, in one set. */
static void data_by_code(void)
{
	static long a[256];
	int set = PAPI_NULL;
	PAPI_option_t opt;
	long long v[2];
	char b[64];

	long *heap = malloc(256 * sizeof *heap);
	if (!heap)
		exit(1);
	for (int i = 0; i < 256; i++)
		heap[i] = a[i] = i;
	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED:exact=1"));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::IA64_INST_RETIRED:exact=1"));
	CHECK_PAPI(heritage_test_range(set, PAPI_DATA_ADDRESS, heap, heap + 256, &opt));
	CHECK_PAPI(heritage_test_range(set, PAPI_INSTR_ADDRESS, (void *)blocks_loads, (void *)blocks_loads_end, &opt));
	CHECK_PAPI(PAPI_start(set));
	sink = blocks_loads(heap, 200);        /* counted: 200 loads by the range */
	volatile long *vh = heap;
	long other = 0;
	for (int i = 0; i < 50; i++)           /* not counted: other code */
		other += vh[i];
	CHECK_PAPI(PAPI_stop(set, v));
	CHECK_PAPI(papi_heritage_itanium2_backend(set, b, sizeof b));
	sink = other;
	printf("data range + instruction range (%s backend): LOADS_RETIRED %lld (want 200), IA64_INST_RETIRED %lld\n",
	       b, v[0], v[1]);
	EXPECT_EQ("LOADS_RETIRED by the instruction range", v[0], 200);
	EXPECT(v[1] > 200, "IA64_INST_RETIRED %lld: fewer than the loop's loads", v[1]);
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
	free(heap);
}

static volatile int other_stop;

static void *other_thread(void *arg)
{
	(void)arg;
	while (!other_stop)
		sink = blocks_hot(1000, 7);
	return NULL;
}

/* Another thread running the routine is not counted. */
static void threads(long n, long long want)
{
	pthread_t th;
	long long v[2];
	char b[64];

	if (pthread_create(&th, NULL, other_thread, NULL) != 0)
		exit(1);
	CHECK_PAPI(count((void *)blocks_hot, (void *)blocks_hot_end, 1, NULL, blocks_hot, n, v, b, sizeof b, NULL));
	other_stop = 1;
	pthread_join(th, NULL);
	printf("blocks_hot(%ld) beside a thread running it: IA64_INST_RETIRED %lld (alone: %lld)\n", n, v[0], want);
	EXPECT_EQ("this thread's instructions only", v[0], want);
}

static void timing(long n)
{
	double best_native = 1e9, best_counted = 1e9;
	long long v[2];
	char b[64];

	for (int i = 0; i < 5; i++) {
		double t0 = now();
		sink = blocks_hot(n, 12345);
		double t1 = now();
		if (t1 - t0 < best_native)
			best_native = t1 - t0;
		double t;
		CHECK_PAPI(count((void *)blocks_hot, (void *)blocks_hot_end, 1, NULL, blocks_hot, n, v, b, sizeof b, &t));
		if (t < best_counted)
			best_counted = t;
	}
	printf("blocks_hot(%ld): %lld instructions in range; this build, no range: %.3f ms; counted (%s): %.3f ms "
	       "(x%.2f)\n", n, v[0], 1e3 * best_native, b, 1e3 * best_counted, best_counted / best_native);
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "work") == 0) {
		sink = routine(argv[2])->fn(atol(argv[3]), 12345);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "native") == 0) {
		double best = 1e9;
		for (int i = 0; i < 5; i++) {
			double t0 = now();
			sink = blocks_hot(atol(argv[2]), 12345);
			if (now() - t0 < best)
				best = now() - t0;
		}
		printf("blocks_hot(%ld), no PAPI: %.3f ms\n", atol(argv[2]), 1e3 * best);
		return 0;
	}
	heritage_test_init();
	if (argc == 3 && strcmp(argv[1], "time") == 0) {
		timing(atol(argv[2]));
		PAPI_shutdown();
		return 0;
	}
	char why[512];
	pagetrap_ok = papi_heritage_backend_usable("itanium2", "pagetrap", why, sizeof why) == PAPI_OK;
	if (!pagetrap_ok)
		printf("no pagetrap comparison: %s\n", why);

	for (unsigned i = 0; i < sizeof routines / sizeof routines[0]; i++) {
		const struct routine *r = &routines[i];
		const char *lo = (const char *)(void *)r->fn, *hi = r->end;
		long long whole = against_pagetrap(r->name, lo, hi, 1, r->fn, 300);
		EXPECT(whole > 300, "%s: %lld instructions for 300 iterations", r->name, whole);
		/* Ranges that cut blocks: from the middle, to the middle. */
		against_pagetrap(r->name, lo + (hi - lo) / 3, hi, 1, r->fn, 300);
		against_pagetrap(r->name, lo, lo + (hi - lo) / 2, 1, r->fn, 300);
		/* Coarse mode: Itanium's cover; the backend may differ if it holds
		 * code without hooks. */
		against_pagetrap(r->name, lo, hi, 0, r->fn, 300);
		against_callgrind(r, 100000);
	}
	data_by_code();
	long long v[2];
	char b[64];
	CHECK_PAPI(count((void *)blocks_hot, (void *)blocks_hot_end, 1, NULL, blocks_hot, 100000, v, b, sizeof b, NULL));
	threads(100000, v[0]);
	timing(2000000);
	PAPI_shutdown();
	return heritage_test_done("instr_blocks");
}
