/*
 * range_shadow: the instrument backend's inline mode (shadow checks compiled
 * into the code) must count exactly what the outline mode counts, including
 * the accesses its coarse shadow checks are blind to without care:
 *
 *   - an access that starts before the range and reaches into it (a
 *     misaligned int or long, a 16-byte __int128 spanning three granules,
 *     a 64-byte struct copy): the compiler checks only the shadow of its
 *     first granule(s), or of its first and last byte;
 *   - accesses next to the range (sharing its granules) must not count;
 *   - two threads whose ranges overlap: one thread stopping must not
 *     unpoison what the other still watches;
 *   - after every session stopped, no shadow stays poisoned;
 *   - with an instruction range too (data accesses counted only when made
 *     by code in it), the accesses are attributed to the code that makes
 *     them, though inline reports come from out-of-line blocks;
 *   - no range (every access) cannot be seen inline: PAPI_start refuses.
 *
 * One source, built twice: with the inline flags and -DEXPECT_SHADOW=1, and
 * with the outline flags and -DEXPECT_SHADOW=0.  The counts asserted are the
 * same; the outline build also asserts that it got no shadow reservation
 * (only programs built inline may get 16 TiB of address space reserved).
 * The instrument backend is forced: these are its counts.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "heritage_test.h"

#ifndef EXPECT_SHADOW
#error "build with -DEXPECT_SHADOW=1 (inline flags) or -DEXPECT_SHADOW=0 (outline flags)"
#endif

/* The x86-64 ASan shadow the inline flags check (-fasan-shadow-offset). */
#define SHADOW_OFFSET 0x7fff8000UL
#define SHADOW_END 0x10007fff8000UL

struct blob64 {
	char c[64];
};

static int cidx;

/* The accesses, one per function: each takes its address as an argument,
 * so the only memory access it makes is the one under test.  noipa: the
 * caller knows these addresses are misaligned and would check them with the
 * precise first-and-last-byte test if gcc moved the load there (IPA-SRA
 * does); inside the function gcc assumes natural alignment and checks only
 * the first granule(s), the case under test. */
__attribute__((noipa)) static int load_int(const int *p) { return *p; }
__attribute__((noipa)) static long load_long(const long *p) { return *p; }
__attribute__((noipa)) static __int128 load_i128(const __int128 *p) { return *p; }
__attribute__((noipa)) static void store_char(char *p) { *p = 1; }
__attribute__((noipa)) static void copy_blob(struct blob64 *d, const struct blob64 *s) { *d = *s; }

static volatile long sink;

static int new_set(uintptr_t lo, uintptr_t hi)
{
	int set = PAPI_NULL;
	PAPI_option_t opt;

	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_assign_eventset_component(set, cidx));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED:exact=1"));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::STORES_RETIRED:exact=1"));
	if (hi > lo) {
		memset(&opt, 0, sizeof opt);
		opt.addr.eventset = set;
		opt.addr.start = (vptr_t)lo;
		opt.addr.end = (vptr_t)hi;
		CHECK_PAPI(PAPI_set_opt(PAPI_DATA_ADDRESS, &opt));
	}
	return set;
}

static void drop_set(int set)
{
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
}

/* Whether [SHADOW_OFFSET, SHADOW_END) is one mapping of this process. */
static int shadow_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long a, b;
	int found = 0;
	char line[512];

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a == SHADOW_OFFSET && b == SHADOW_END)
			found = 1;
	fclose(f);
	return found;
}

/* Shadow bytes still non-zero over [lo, hi) and INLINE_SLACK-ish around. */
static long poisoned_granules(uintptr_t lo, uintptr_t hi)
{
	long n = 0;

	for (uintptr_t g = (lo - 512) >> 3; g < (hi + 512) >> 3; g++)
		n += *(volatile unsigned char *)(SHADOW_OFFSET + g) != 0;
	return n;
}

/* Edge accesses around an 8-byte range W = [w, w + 8). */
static void edges(char *buf)
{
	char *w = buf + 1024;   /* granule-aligned */
	long long v[2];
	int set = new_set((uintptr_t)w, (uintptr_t)(w + 8));
	long sum = 0;

	CHECK_PAPI(PAPI_start(set));
	/* Overlapping: 5 loads, 2 stores. */
	sum += load_int((const int *)(w - 2));            /* [w-2, w+2): first granule unwatched */
	sum += load_long((const long *)(w - 5));          /* [w-5, w+3) */
	sum += (long)load_i128((const __int128 *)(w - 15)); /* [w-15, w+1): three granules */
	sum += load_int((const int *)(w + 6));            /* [w+6, w+10): reaches past the end */
	copy_blob((struct blob64 *)(buf + 2048), (const struct blob64 *)(w - 60)); /* load [w-60, w+4) */
	copy_blob((struct blob64 *)(w + 4), (const struct blob64 *)(buf + 3000));  /* store [w+4, w+68) */
	store_char(w + 7);
	/* Neighbours in the same or the next granules: nothing. */
	sum += load_int((const int *)(w - 4));            /* [w-4, w) */
	sum += load_int((const int *)(w + 8));            /* [w+8, w+12) */
	store_char(w - 1);
	store_char(w + 8);
	CHECK_PAPI(PAPI_stop(set, v));
	sink = sum;
	EXPECT_EQ("edge loads", v[0], 5);
	EXPECT_EQ("edge stores", v[1], 2);
	printf("edges: %lld loads, %lld stores (want 5, 2)\n", v[0], v[1]);
	drop_set(set);
	if (EXPECT_SHADOW)
		EXPECT_EQ("granules left poisoned after the edges", poisoned_granules((uintptr_t)w, (uintptr_t)w + 8), 0);
}

/* Two threads, overlapping ranges: A = ints [0, 2N), B = ints [N, 3N).  A
 * starts, B starts, A sweeps and stops, then B sweeps and stops: B must
 * still see all of its range, shared part included. */
#define N 2048
static int *arr;
static pthread_barrier_t barrier;
static long long counts[2][2];

__attribute__((noipa)) static void sweep(int *p, long n)
{
	long sum = 0;

	for (long i = 0; i < n; i++)
		p[i] = (int)i;
	for (long i = 0; i < n; i++)
		sum += p[i];
	sink = sum;
}

static void *overlap_thread(void *arg)
{
	int t = (int)(intptr_t)arg;
	int *lo = arr + t * N;
	int set;

	CHECK_PAPI(PAPI_register_thread());
	set = new_set((uintptr_t)lo, (uintptr_t)(lo + 2 * N));
	if (t == 0)
		CHECK_PAPI(PAPI_start(set));
	pthread_barrier_wait(&barrier);
	if (t == 1)
		CHECK_PAPI(PAPI_start(set));
	pthread_barrier_wait(&barrier);
	if (t == 0) {
		sweep(arr, 3 * N);
		CHECK_PAPI(PAPI_stop(set, counts[0]));
	}
	pthread_barrier_wait(&barrier);
	if (t == 1) {
		sweep(arr, 3 * N);
		CHECK_PAPI(PAPI_stop(set, counts[1]));
	}
	drop_set(set);
	PAPI_unregister_thread();
	return NULL;
}

static void overlapping_threads(void)
{
	pthread_t tid[2];

	arr = malloc(3 * N * sizeof *arr);
	if (!arr) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	pthread_barrier_init(&barrier, NULL, 2);
	for (int t = 0; t < 2; t++)
		pthread_create(&tid[t], NULL, overlap_thread, (void *)(intptr_t)t);
	for (int t = 0; t < 2; t++)
		pthread_join(tid[t], NULL);
	pthread_barrier_destroy(&barrier);
	for (int t = 0; t < 2; t++) {
		EXPECT_EQ("thread loads", counts[t][0], 2 * N);
		EXPECT_EQ("thread stores", counts[t][1], 2 * N);
		printf("thread %c: %lld loads, %lld stores (want %d each)\n", "AB"[t], counts[t][0], counts[t][1],
		       2 * N);
	}
	if (EXPECT_SHADOW)
		EXPECT_EQ("granules left poisoned after both threads",
		          poisoned_granules((uintptr_t)arr, (uintptr_t)(arr + 3 * N)), 0);
	free(arr);
}

/* The same sweep twice, once inside a code range (its own section, whose
 * bounds the linker gives as __start_/__stop_ symbols) and once outside. */
__attribute__((noipa, section("range_shadow_code"))) static void sweep_in_range(int *p, long n)
{
	long sum = 0;

	for (long i = 0; i < n; i++)
		p[i] = (int)i;
	for (long i = 0; i < n; i++)
		sum += p[i];
	sink = sum;
}
extern const char __start_range_shadow_code[], __stop_range_shadow_code[];

static void code_range(char *buf)
{
	int *p = (int *)(buf + 512);
	int set = new_set((uintptr_t)p, (uintptr_t)(p + 64));
	PAPI_option_t opt;
	long long v[2];

	memset(&opt, 0, sizeof opt);
	opt.addr.eventset = set;
	opt.addr.start = (vptr_t)__start_range_shadow_code;
	opt.addr.end = (vptr_t)__stop_range_shadow_code;
	CHECK_PAPI(PAPI_set_opt(PAPI_INSTR_ADDRESS, &opt));
	CHECK_PAPI(PAPI_start(set));
	sweep_in_range(p, 128);   /* 64 loads, 64 stores in the data range */
	sweep(p, 128);            /* the same, by code outside the code range */
	CHECK_PAPI(PAPI_stop(set, v));
	EXPECT_EQ("loads by code in range", v[0], 64);
	EXPECT_EQ("stores by code in range", v[1], 64);
	printf("code range: %lld loads, %lld stores (want 64, 64)\n", v[0], v[1]);
	drop_set(set);
}

/* No range: every access.  Outline code sees it; inline code cannot. */
static void no_range(char *buf)
{
	int set = new_set(0, 0);
	int rc = PAPI_start(set);
	long long v[2];

	if (EXPECT_SHADOW) {
		EXPECT_EQ("PAPI_start without a range, inline", rc, PAPI_ENOSUPP);
		if (!strstr(papi_heritage_last_error(), "range")) {
			fprintf(stderr, "refusal does not say to set a range: %s\n", papi_heritage_last_error());
			heritage_test_failures++;
		}
		printf("no range: refused: %s\n", papi_heritage_last_error());
	} else {
		EXPECT_EQ("PAPI_start without a range, outline", rc, PAPI_OK);
		store_char(buf);
		CHECK_PAPI(PAPI_stop(set, v));
		if (v[1] < 1) {
			fprintf(stderr, "no range, outline: %lld stores, want at least 1\n", v[1]);
			heritage_test_failures++;
		}
		printf("no range: counted %lld loads, %lld stores\n", v[0], v[1]);
	}
	drop_set(set);
}

int main(void)
{
	/* Forced: these are the instrument backend's counts, and a refusal
	 * must not be hidden by another backend taking over. */
	setenv("PAPI_HERITAGE_ITANIUM2_BACKEND", "instrument", 1);
	heritage_test_init();
	CHECK_PAPI(PAPI_thread_init(pthread_self));
	cidx = PAPI_get_component_index("itanium2");

	EXPECT_EQ("shadow reserved", shadow_mapped(), EXPECT_SHADOW);
	char *buf = aligned_alloc(4096, 4096);
	if (!buf) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	memset(buf, 0, 4096);
	edges(buf);
	overlapping_threads();
	code_range(buf);
	no_range(buf);
	free(buf);
	PAPI_shutdown();
	return heritage_test_done(EXPECT_SHADOW ? "range_shadow (inline)" : "range_shadow (outline)");
}
