/*
 * data_range: PAPI's ctests/data_range.c scenario on the itanium2 component,
 * with the expected values asserted instead of printed.
 *
 * Three 16384-int malloc'd arrays (reached through pointer variables, so every
 * element access also loads its pointer: 2 x 16384 pointer loads per pass),
 * three static arrays; the work stores then loads every element once.  For
 * each range (each pointer variable, each malloc'd array, each static array)
 * and each mode:
 *   exact  - offsets 0, counts = the accesses inside the requested bytes;
 *   coarse - offsets = the Itanium 2 mapping (the libpfm-3 algorithm, worked
 *            out here by coarse_offsets, which first must give the offsets
 *            the seed printed), counts = the accesses that fall in the actual
 *            cover [start - start_off, end + end_off), computed here from
 *            addresses.
 * Coarse sets get their range before their events (as PAPI's data_range.c
 * does); exact sets get :exact=1 events first.
 *
 * "rmw" (only when asked: the instrument backend cannot see inline asm) counts
 * one watched word under read-modify-write instructions (addl, lock xadd,
 * incq), plain stores and plain loads, in exact mode: a read-modify-write is
 * one load and one store on every backend.
 *
 * -v prints the seed-style report (used by make demo).  The backend is chosen
 * by libpapi (PAPI_HERITAGE_ITANIUM2_BACKEND forces one); the report names it.
 */
#include <stdint.h>
#include <string.h>

#include "heritage_test.h"

#define NUM 16384
#define GUARD 100000     /* below malloc's mmap threshold: stays on the heap */

/* The watched statics live in a section of their own between two guards,
 * in this order: a coarse cover then reaches only what this test accounts
 * for, not the GOT, which every PLT call loads and a trap backend would
 * rightly count.  gcc keeps the order with -fno-toplevel-reorder.  clang has
 * no such option; it emits definitions with an initialiser in source order
 * but defers tentative ones and drops unreferenced statics (the guards), so
 * each has an initialiser and the used attribute.  main checks the layout.
 *
 * The counts are of instructions as the compiler emitted them.  gcc's
 * builds here are scalar (-fno-tree-vectorize, or instrumented, which gcc
 * does before vectorising); clang vectorises the static-array loops after
 * instrumenting, and the clang build says so with DATA_RANGE_VECTOR_BYTES=16:
 * one access per 16-byte vector of those arrays.  The malloc'd arrays stay
 * scalar on every build (each element reloads its volatile pointer). */
#define WATCHED __attribute__((section(".bss.data_range"), used))
static char guard_before[GUARD] WATCHED = { 0 };
static int array1[NUM] WATCHED = { 0 }, array2[NUM] WATCHED = { 0 };
int *volatile parray1 WATCHED = NULL, *volatile parray2 WATCHED = NULL, *volatile parray3 WATCHED = NULL;
static volatile long sink WATCHED = 0;
static long rmw_word WATCHED __attribute__((aligned(8))) = 0;
static int array3[NUM] WATCHED = { 0 };
static char guard_after[GUARD] WATCHED = { 0 };
#ifndef DATA_RANGE_VECTOR_BYTES
#define DATA_RANGE_VECTOR_BYTES sizeof(int)   /* scalar: one access per element */
#endif
static int verbose;
static int cidx;

__attribute__((noinline)) static void do_malloc_work(long loop)
{
	long sum = 0;

	for (long i = 0; i < loop; i++) {
		parray1[i] = (int)i;
		parray2[i] = (int)(2 * i);
		parray3[i] = (int)(3 * i);
	}
	for (long i = 0; i < loop; i++)
		sum += parray1[i] + parray2[i] + parray3[i];
	sink = sum;
}

__attribute__((noinline)) static void do_static_work(long loop)
{
	/* 32 bits (the sum, 6 * NUM * (NUM - 1) / 2, fits): with a long sum
	 * clang widens each element and loads 8 bytes at a time; so the load
	 * pass is 16-byte vectors like the store pass. */
	unsigned int sum = 0;

	for (long i = 0; i < loop; i++) {
		array1[i] = (int)i;
		array2[i] = (int)(2 * i);
		array3[i] = (int)(3 * i);
	}
	for (long i = 0; i < loop; i++)
		sum += array1[i] + array2[i] + array3[i];
	sink = sum;
}

/* Per pass: 3 read-modify-writes, 1 store, 1 load of rmw_word. */
__attribute__((noinline)) static long do_rmw_work(long loop)
{
	long v = 1, sum = 0;

	for (long i = 0; i < loop; i++) {
		__asm__ volatile("addl $1, %0" : "+m"(rmw_word));
		__asm__ volatile("lock xaddq %0, %1" : "+r"(v), "+m"(rmw_word));
		__asm__ volatile("incq %0" : "+m"(rmw_word));
		__asm__ volatile("movq %1, %0" : "=m"(rmw_word) : "r"(i));
		long x;
		__asm__ volatile("movq %1, %0" : "=r"(x) : "m"(rmw_word));
		sum += x;
	}
	return sum;
}

static void measure_rmw(void)
{
	int set = PAPI_NULL;
	PAPI_option_t opt;
	long long values[2];
	char backend[32];
	const long passes = 1000;

	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_assign_eventset_component(set, cidx));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED:exact=1"));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::STORES_RETIRED:exact=1"));
	memset(&opt, 0, sizeof opt);
	opt.addr.eventset = set;
	opt.addr.start = (vptr_t)&rmw_word;
	opt.addr.end = (vptr_t)(&rmw_word + 1);
	CHECK_PAPI(PAPI_set_opt(PAPI_DATA_ADDRESS, &opt));
	CHECK_PAPI(PAPI_start(set));
	long sum = do_rmw_work(passes);
	CHECK_PAPI(PAPI_stop(set, values));
	CHECK_PAPI(papi_heritage_itanium2_backend(set, backend, sizeof backend));
	const char *want_backend = getenv("DATA_RANGE_EXPECT_BACKEND");
	if (want_backend && strcmp(want_backend, backend) != 0) {
		fprintf(stderr, "rmw_word: counted by the %s backend, expected %s\n", backend, want_backend);
		heritage_test_failures++;
	}
	EXPECT_EQ("rmw sum", sum, passes * (passes - 1) / 2);
	EXPECT_EQ("rmw loads_retired", values[0], 4 * passes);
	EXPECT_EQ("rmw stores_retired", values[1], 4 * passes);
	if (verbose)
		printf("rmw_word (exact mode, %s backend): loads_retired %lld, stores_retired %lld (expected %ld each)\n\n",
		       backend, values[0], values[1], 4 * passes);
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
}

static long overlap_elems(const void *base, long n, long size, uintptr_t lo, uintptr_t hi)
{
	long count = 0;

	for (long i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)base + (uintptr_t)(i * size);
		count += a < hi && a + (uintptr_t)size > lo;
	}
	return count;
}

/* What the work does inside [lo, hi): loads and stores. */
static void expected_accesses(uintptr_t lo, uintptr_t hi, long long *loads, long long *stores)
{
	int *const arrays[6] = { parray1, parray2, parray3, array1, array2, array3 };
	int *volatile *const ptrs[3] = { &parray1, &parray2, &parray3 };

	*loads = *stores = 0;
	for (int k = 0; k < 6; k++) {
		/* The static arrays (k >= 3): one access per vector where vectorised. */
		long size = k >= 3 ? (long)DATA_RANGE_VECTOR_BYTES : (long)sizeof(int);
		long n = overlap_elems(arrays[k], NUM * (long)sizeof(int) / size, size, lo, hi);
		*loads += n;
		*stores += n;
	}
	for (int k = 0; k < 3; k++)
		*loads += 2LL * NUM * overlap_elems((const void *)ptrs[k], 1, sizeof(int *), lo, hi);
	/* Each work function ends with one store of its sum. */
	*stores += 2 * overlap_elems((const void *)&sink, 1, sizeof sink, lo, hi);
}

/*
 * The coarse data-range mapping, as libpfm-3's compute_normal_rr did it for
 * one interval over the four DBR pairs (doc/itanium2-ranges.md):
 * do_normal_rr covers [start, end) with power-of-two aligned blocks, the
 * central one first, then the left part, then the right part, the last pair
 * of a side grown to reach the side's outer end.  Written here from that
 * description, not taken from src/rangemap: the test checks the component,
 * not the component's mapping against itself.
 */
struct dbr_pair {
	uint64_t base;
	unsigned p;        /* the block is [base, base + 2^p) */
};

static void normal_rr(uint64_t start, uint64_t end, int nbr, int right_side, struct dbr_pair *out, int *n)
{
	if (nbr < 1 || end <= start)
		return;
	unsigned p = 63 - (unsigned)__builtin_clzll(end - start);
	uint64_t c = end & ~((UINT64_C(1) << p) - 1), l;
	if (c - (UINT64_C(1) << p) >= start) {
		l = c - (UINT64_C(1) << p);
	} else {
		p--;
		l = c + (UINT64_C(1) << p) <= end ? c : c - (UINT64_C(1) << p);
	}
	uint64_t lsize = l - start, rsize = end - (l + (UINT64_C(1) << p));
	if (nbr == 1 && !right_side && lsize != 0) {
		p++;
		l = end - (UINT64_C(1) << p);
	} else if (nbr == 1 && right_side && rsize != 0) {
		p++;
		l = start;
	}
	out[(*n)++] = (struct dbr_pair){ .base = l, .p = p };
	nbr--;
	int left = nbr / 2, right = nbr / 2;
	if (nbr % 2)
		*(lsize > rsize ? &left : &right) += 1;
	normal_rr(start, l, left, 0, out, n);
	normal_rr(l + (UINT64_C(1) << p), end, right, 1, out, n);
}

/* start_off/end_off as libpfm reported them: over the pairs in emission
 * order, the last one reaching down to start, and up to end, wins. */
static void coarse_offsets(uint64_t start, uint64_t end, uint64_t *start_off, uint64_t *end_off)
{
	struct dbr_pair pairs[4];
	int n = 0;

	normal_rr(start, end, 4, 0, pairs, &n);
	*start_off = *end_off = 0;
	for (int i = 0; i < n; i++) {
		uint64_t r_end = pairs[i].base + (UINT64_C(1) << pairs[i].p);
		if (pairs[i].base <= start)
			*start_off = start - pairs[i].base;
		if (r_end >= end)
			*end_off = r_end - end;
	}
}

/* The nine ranges PAPI's DataRange page printed from an Itanium 2 run (the
 * pointers, the malloc'd arrays, the static arrays), with the offsets PAPI
 * returned there. */
static const struct {
	uint64_t start, end, start_off, end_off;
} seed_ranges[] = {
	{ .start = 0x6000000000011640, .end = 0x6000000000011648, .start_off = 0x0, .end_off = 0x0 },
	{ .start = 0x6000000000011628, .end = 0x6000000000011630, .start_off = 0x0, .end_off = 0x0 },
	{ .start = 0x6000000000011638, .end = 0x6000000000011640, .start_off = 0x0, .end_off = 0x0 },
	{ .start = 0x6000000004044010, .end = 0x6000000004054010, .start_off = 0x10, .end_off = 0x0 },
	{ .start = 0x6000000004054020, .end = 0x6000000004064020, .start_off = 0x20, .end_off = 0x0 },
	{ .start = 0x6000000004064030, .end = 0x6000000004074030, .start_off = 0x30, .end_off = 0x10 },
	{ .start = 0x60000000000218cc, .end = 0x60000000000318cc, .start_off = 0x18cc, .end_off = 0x734 },
	{ .start = 0x60000000000118cc, .end = 0x60000000000218cc, .start_off = 0x18cc, .end_off = 0x734 },
	{ .start = 0x60000000000318cc, .end = 0x60000000000418cc, .start_off = 0x18cc, .end_off = 0x734 },
};

/* coarse_offsets must reproduce the seed before it judges the component. */
static void check_coarse_offsets(void)
{
	for (size_t i = 0; i < sizeof seed_ranges / sizeof seed_ranges[0]; i++) {
		uint64_t soff, eoff;
		coarse_offsets(seed_ranges[i].start, seed_ranges[i].end, &soff, &eoff);
		if (soff != seed_ranges[i].start_off || eoff != seed_ranges[i].end_off) {
			fprintf(stderr, "data_range: the test's mapping of seed range [%#llx, %#llx) gives offsets %#llx/%#llx,"
				" the seed printed %#llx/%#llx\n", (unsigned long long)seed_ranges[i].start,
				(unsigned long long)seed_ranges[i].end, (unsigned long long)soff, (unsigned long long)eoff,
				(unsigned long long)seed_ranges[i].start_off, (unsigned long long)seed_ranges[i].end_off);
			heritage_test_failures++;
		}
	}
}

static void measure(const char *what, void *start, void *end, int exact)
{
	int set = PAPI_NULL;
	PAPI_option_t opt;
	long long values[2];
	char backend[32];
	static const char *names[2][2] = {
		{ "itanium2:::LOADS_RETIRED", "itanium2:::STORES_RETIRED" },
		{ "itanium2:::LOADS_RETIRED:exact=1", "itanium2:::STORES_RETIRED:exact=1" },
	};

	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_assign_eventset_component(set, cidx));
	memset(&opt, 0, sizeof opt);
	opt.addr.eventset = set;
	opt.addr.start = (vptr_t)start;
	opt.addr.end = (vptr_t)end;
	if (exact) {
		CHECK_PAPI(PAPI_add_named_event(set, names[1][0]));
		CHECK_PAPI(PAPI_add_named_event(set, names[1][1]));
		CHECK_PAPI(PAPI_set_opt(PAPI_DATA_ADDRESS, &opt));
	} else {
		CHECK_PAPI(PAPI_set_opt(PAPI_DATA_ADDRESS, &opt));
		CHECK_PAPI(PAPI_add_named_event(set, names[0][0]));
		CHECK_PAPI(PAPI_add_named_event(set, names[0][1]));
	}

	CHECK_PAPI(PAPI_start(set));
	do_malloc_work(NUM);
	do_static_work(NUM);
	CHECK_PAPI(PAPI_stop(set, values));
	CHECK_PAPI(papi_heritage_itanium2_backend(set, backend, sizeof backend));

	/* The offsets: 0 in exact mode, the libpfm-3 mapping in coarse mode. */
	uint64_t want_start_off = 0, want_end_off = 0;
	if (!exact)
		coarse_offsets((uintptr_t)start, (uintptr_t)end, &want_start_off, &want_end_off);
	const char *want_backend = getenv("DATA_RANGE_EXPECT_BACKEND");
	if (want_backend && strcmp(want_backend, backend) != 0) {
		fprintf(stderr, "%s: counted by the %s backend, expected %s\n", what, backend, want_backend);
		heritage_test_failures++;
	}
	EXPECT_EQ("start_off", opt.addr.start_off, (long long)want_start_off);
	EXPECT_EQ("end_off", opt.addr.end_off, (long long)want_end_off);

	uintptr_t lo = (uintptr_t)start - (uintptr_t)opt.addr.start_off;
	uintptr_t hi = (uintptr_t)end + (uintptr_t)opt.addr.end_off;
	long long want_loads, want_stores;
	expected_accesses(lo, hi, &want_loads, &want_stores);
	EXPECT_EQ("loads_retired", values[0], want_loads);
	EXPECT_EQ("stores_retired", values[1], want_stores);

	if (verbose) {
		printf("%s (%s mode, %s backend)\n", what, exact ? "exact" : "coarse", backend);
		printf("Requested Start Address: %p; Start Offset: %#6x; Actual Start Address: %#lx\n", start,
		       opt.addr.start_off, (unsigned long)lo);
		printf("Requested End Address:   %p; End Offset:   %#6x; Actual End Address:   %#lx\n", end,
		       opt.addr.end_off, (unsigned long)hi);
		printf("loads_retired: %lld (expected %lld)   stores_retired: %lld (expected %lld)\n\n",
		       values[0], want_loads, values[1], want_stores);
	}
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
}

int main(int argc, char **argv)
{
	const char *only = NULL;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-v") == 0)
			verbose = 1;
		else if (strcmp(argv[i], "TESTS_QUIET") == 0 || strcmp(argv[i], "-q") == 0)
			verbose = 0;
		else
			only = argv[i];   /* pointers | malloc | static | rmw */
	}
	/* Guards keep the coarse covers of the malloc'd arrays inside memory
	 * this test owns, so nothing else (PAPI's own heap objects) is counted.
	 * Before PAPI initialises: on a fresh heap the five blocks are
	 * contiguous, while after it the guard could land in a hole PAPI freed
	 * and leave a free chunk under an array, where the event set's state
	 * was then allocated (1 run in 2 of the clang build with perf_event
	 * disabled, PAPI_set_opt refusing a cover over the counter's state). */
	void *guard_lo = malloc(GUARD);
	parray1 = malloc(NUM * sizeof(int));
	parray2 = malloc(NUM * sizeof(int));
	parray3 = malloc(NUM * sizeof(int));
	void *guard_hi = malloc(GUARD);
	heritage_test_init();
	cidx = PAPI_get_component_index("itanium2");
	check_coarse_offsets();

	/* Every watched object between the guards, and the vector-counted
	 * arrays aligned to their vectors (the compiler's loops start at the
	 * array's first element, so vectors are the aligned 16-byte blocks). */
	const void *objs[] = { array1, array2, array3, (const void *)&parray1, (const void *)&parray2,
			       (const void *)&parray3, (const void *)&sink, &rmw_word };
	for (size_t k = 0; k < sizeof objs / sizeof objs[0]; k++) {
		if ((const char *)objs[k] < guard_before + GUARD || (const char *)objs[k] >= guard_after) {
			fprintf(stderr, "data_range: watched object %zu at %p is not between the guards "
				"(%p..%p): the compiler reordered the statics\n",
				k, objs[k], (void *)(guard_before + GUARD), (void *)guard_after);
			return 1;
		}
		if (k < 3 && (uintptr_t)objs[k] % DATA_RANGE_VECTOR_BYTES != 0) {
			fprintf(stderr, "data_range: array%zu at %p is not %d-byte aligned\n", k + 1, objs[k],
				(int)DATA_RANGE_VECTOR_BYTES);
			return 1;
		}
	}

	if (!guard_lo || !parray1 || !parray2 || !parray3 || !guard_hi) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	/* rmw returned here once, leaving the guards to LeakSanitizer (make
	 * check-sanitize: 200000 bytes in 2 allocations). */
	if (only && strcmp(only, "rmw") == 0)
		measure_rmw();
	for (int exact = 0; exact <= 1 && !(only && strcmp(only, "rmw") == 0); exact++) {
		if (!only || strcmp(only, "pointers") == 0) {
			if (verbose)
				printf("Measure loads and stores on the pointers to the allocated arrays\n"
				       "Expected loads: %d; Expected stores: 0\n\n", 2 * NUM);
			measure("&parray1", (void *)&parray1, (void *)(&parray1 + 1), exact);
			measure("&parray2", (void *)&parray2, (void *)(&parray2 + 1), exact);
			measure("&parray3", (void *)&parray3, (void *)(&parray3 + 1), exact);
		}
		if (!only || strcmp(only, "malloc") == 0) {
			if (verbose)
				printf("Measure loads and stores on the allocated arrays themselves\n"
				       "Expected loads: %d; Expected stores: %d\n\n", NUM, NUM);
			measure("parray1", parray1, parray1 + NUM, exact);
			measure("parray2", parray2, parray2 + NUM, exact);
			measure("parray3", parray3, parray3 + NUM, exact);
		}
		if (!only || strcmp(only, "static") == 0) {
			if (verbose)
				printf("Measure loads and stores on the static arrays\n"
				       "Expected loads: %d; Expected stores: %d (coarse: plus what the cover adds)\n\n",
				       NUM, NUM);
			measure("array1", array1, array1 + NUM, exact);
			measure("array2", array2, array2 + NUM, exact);
			measure("array3", array3, array3 + NUM, exact);
		}
	}
	free(guard_lo);
	free(guard_hi);
	PAPI_shutdown();
	return heritage_test_done("data_range");
}
