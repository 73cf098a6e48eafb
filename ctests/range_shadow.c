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
 *   - unaligned 16-byte vectors, alone and in a loop across the range:
 *     clang's inline checks test their first and their last byte apart and
 *     report each (watch_instrument.c drops the repeat);
 *
 * One source, built four times: with gcc's and with clang's inline flags and
 * -DEXPECT_SHADOW=1, and with their outline flags and -DEXPECT_SHADOW=0.  The
 * counts asserted are the same; the outline builds also assert that they got
 * no shadow reservation (only programs built inline may get 16 TiB of address
 * space reserved).
 * The instrument backend is forced: these are its counts.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "heritage_test.h"
#include "knob.h"

#ifndef EXPECT_SHADOW
#error "build with -DEXPECT_SHADOW=1 (inline flags) or -DEXPECT_SHADOW=0 (outline flags)"
#endif

/* The x86-64 ASan shadow the inline flags check (-fasan-shadow-offset). */
#define SHADOW_OFFSET 0x7fff8000UL
#define SHADOW_END 0x10007fff8000UL

struct blob64 {
	char c[64];
};

static volatile long sink;

static int cidx;

/* The accesses, one per function: each takes its address as an argument,
 * so the only memory access it makes is the one under test.  noipa: the
 * caller knows these addresses are misaligned and would check them with the
 * precise first-and-last-byte test if gcc moved the load there (IPA-SRA
 * does); inside the function gcc assumes natural alignment and checks only
 * the first granule(s), the case under test.  clang has no noipa; external
 * linkage keeps its argument promotion from moving the access out. */
#ifdef __clang__
#define ACCESS_FN __attribute__((noinline))
/* clang turns a struct copy into a call to memcpy before its
 * AddressSanitizer pass, which leaves the call as it is: libc's memcpy is not
 * instrumented, so copy_blob counts nothing in either clang flavour. */
#define BLOB_COUNTS 0
/* The sweeps count one access per element: clang would vectorise them
 * (-fno-vectorize does not survive the -O2 that CFLAGS appends). */
#define SCALAR_LOOP _Pragma("clang loop vectorize(disable) interleave(disable)")
#else
#define SCALAR_LOOP
#define ACCESS_FN __attribute__((noipa)) static
#define BLOB_COUNTS 1
#endif
ACCESS_FN int load_int(const int *p) { return *p; }
ACCESS_FN long load_long(const long *p) { return *p; }
ACCESS_FN __int128 load_i128(const __int128 *p) { return *p; }
ACCESS_FN void store_char(char *p) { *p = 1; }
ACCESS_FN void copy_blob(struct blob64 *d, const struct blob64 *s) { *d = *s; }
/* 16 bytes at 4-byte alignment: one unaligned vector access (movdqu/movups)
 * from both compilers, counted once. */
typedef int v4u __attribute__((vector_size(16), aligned(4)));
ACCESS_FN v4u load_v4u(const v4u *p) { return *p; }
ACCESS_FN void store_v4u(v4u *p, v4u v) { *p = v; }
ACCESS_FN void vsweep(v4u *p, long n)
{
	v4u acc = { 0, 0, 0, 0 };

	for (long i = 0; i < n; i++)
		p[i] = (v4u){ (int)i, 1, 2, 3 };
	for (long i = 0; i < n; i++)
		acc += p[i];
	sink = acc[0] + acc[1] + acc[2] + acc[3];
}

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
	EXPECT_EQ("edge loads", v[0], 4 + BLOB_COUNTS);
	EXPECT_EQ("edge stores", v[1], 1 + BLOB_COUNTS);
	printf("edges: %lld loads, %lld stores (want %d, %d)\n", v[0], v[1], 4 + BLOB_COUNTS, 1 + BLOB_COUNTS);
	drop_set(set);
	if (EXPECT_SHADOW)
		EXPECT_EQ("granules left poisoned after the edges", poisoned_granules((uintptr_t)w, (uintptr_t)w + 8), 0);
}

/* Unaligned 16-byte vectors around a 256-byte range W = [w, w + 256). */
static void vectors(char *buf)
{
	char *w = buf + 1024;   /* granule-aligned */
	v4u *q = (v4u *)(w - 60);
	const long n = 24;      /* [w - 60, w + 324): straddles both ends */
	long long v[2], want = 0;
	int set = new_set((uintptr_t)w, (uintptr_t)(w + 256));
	long sum = 0;

	for (long i = 0; i < n; i++)
		want += (char *)(q + i) < w + 256 && (char *)(q + i + 1) > w;
	CHECK_PAPI(PAPI_start(set));
	sum += load_v4u((const v4u *)(w - 12))[0];     /* [w-12, w+4): counts */
	store_v4u((v4u *)(w + 252), (v4u){ 1, 2, 3, 4 }); /* [w+252, w+268): counts */
	sum += load_v4u((const v4u *)(w - 16))[0];     /* [w-16, w): not */
	store_v4u((v4u *)(w + 256), (v4u){ 1, 2, 3, 4 }); /* [w+256, w+272): not */
	vsweep(q, n);
	CHECK_PAPI(PAPI_stop(set, v));
	sink = sum;
	EXPECT_EQ("vector loads", v[0], 1 + want);
	EXPECT_EQ("vector stores", v[1], 1 + want);
	printf("vectors: %lld loads, %lld stores (want %lld each)\n", v[0], v[1], 1 + want);
	drop_set(set);
	if (EXPECT_SHADOW)
		EXPECT_EQ("granules left poisoned after the vectors",
		          poisoned_granules((uintptr_t)w, (uintptr_t)w + 256), 0);
}

/* Two threads, overlapping ranges: A = ints [0, 2N), B = ints [N, 3N).  A
 * starts, B starts, A sweeps and stops, then B sweeps and stops: B must
 * still see all of its range, shared part included. */
#define N 2048
static int *arr;
static pthread_barrier_t barrier;
static long long counts[2][2];

ACCESS_FN void sweep(int *p, long n)
{
	long sum = 0;

	SCALAR_LOOP
	for (long i = 0; i < n; i++)
		p[i] = (int)i;
	SCALAR_LOOP
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
ACCESS_FN __attribute__((section("range_shadow_code"))) void sweep_in_range(int *p, long n)
{
	long sum = 0;

	SCALAR_LOOP
	for (long i = 0; i < n; i++)
		p[i] = (int)i;
	SCALAR_LOOP
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
	knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", "instrument");
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
	vectors(buf);
	overlapping_threads();
	code_range(buf);
	no_range(buf);
	free(buf);
	PAPI_shutdown();
#ifdef __clang__
	return heritage_test_done(EXPECT_SHADOW ? "range_shadow (clang inline)" : "range_shadow (clang outline)");
#else
	return heritage_test_done(EXPECT_SHADOW ? "range_shadow (inline)" : "range_shadow (outline)");
#endif
}
