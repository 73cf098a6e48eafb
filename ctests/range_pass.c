/*
 * range_pass: what is particular to the clang pass flavour
 * (papi-heritage-instrument-clang-pass, src/watch/instrument_pass.cpp).  It
 * counts a function's watched accesses in registers and adds them to the
 * session's counters before each call and return, so:
 *
 *   - a PAPI_read in the middle of a loop sees every access made before it
 *     (the read is a call);
 *   - a function that never returns normally (it calls longjmp) has its
 *     accesses counted up to the call;
 *   - accesses of a caller and a callee, interleaved, all count once;
 *   - PAPI_stop then PAPI_start between two halves of one function: each
 *     session gets its own half, nothing carried over;
 *   - a session that needs more than a count (two events on one range, one
 *     of them the misaligned count) takes the slow path for every hit.
 *
 * Every access here is a volatile int load or store, one instruction each
 * (no vectorisation, nothing merged), so the expected counts are the loop
 * trip counts; the instrument backend is forced: these are its counts.
 */
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include "heritage_test.h"
#include "knob.h"

#define N 4096

/* malloc'd: the backend refuses ranges over static storage, which the ASan
 * flavours do not instrument by name (watch_instrument.c). */
static int *arr;
static int cidx;
static jmp_buf back;

static int new_set(const void *lo, const void *hi, int misaligned)
{
	int set = PAPI_NULL;
	PAPI_option_t opt;

	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_assign_eventset_component(set, cidx));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED:exact=1"));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::STORES_RETIRED:exact=1"));
	if (misaligned)
		CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::MISALIGNED_LOADS_RETIRED:exact=1"));
	CHECK_PAPI(heritage_test_range(set, PAPI_DATA_ADDRESS, lo, hi, &opt));
	return set;
}

static void drop_set(int set)
{
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
}

static int fails;

static void expect(const char *what, long long got, long long want)
{
	printf("%-52s %8lld (expected %lld)\n", what, got, want);
	if (got != want)
		fails++;
}

/* n stores then, after a PAPI_read, n loads, over arr[0..n). */
__attribute__((noinline)) static void read_mid_loop(int set, int n, long long *mid)
{
	volatile int *a = arr;
	long sum = 0;

	for (int i = 0; i < n; i++)
		a[i] = i;
	CHECK_PAPI(PAPI_read(set, mid));
	for (int i = 0; i < n; i++)
		sum += a[i];
	arr[0] = (int)sum;   /* one more store */
}

__attribute__((noinline)) static void stores_then_longjmp(int n)
{
	volatile int *a = arr;

	for (int i = 0; i < n; i++)
		a[i] = -i;
	longjmp(back, 1);
}

__attribute__((noinline)) static int callee_loads(int i)
{
	volatile int *a = arr;
	return a[i] + a[i + 1];
}

/* Per iteration: the caller's store and load, the callee's two loads. */
__attribute__((noinline)) static void caller(int n)
{
	volatile int *a = arr;

	for (int i = 0; i < n; i++) {
		a[i] = i;
		a[i] = callee_loads(i) + a[i];
	}
}

__attribute__((noinline)) static void restart_mid(int set, int n, long long *first, long long *second)
{
	volatile int *a = arr;

	CHECK_PAPI(PAPI_start(set));
	for (int i = 0; i < n; i++)
		a[i] = i;
	CHECK_PAPI(PAPI_stop(set, first));
	for (int i = 0; i < n; i++)
		a[i] = a[i] + 1;    /* not counted: no session */
	CHECK_PAPI(PAPI_start(set));
	for (int i = 0; i < n / 2; i++)
		(void)a[i];
	CHECK_PAPI(PAPI_stop(set, second));
}

/* Misaligned int loads: one per 4 bytes from arr's byte 1. */
__attribute__((noinline)) static void misaligned_loads(int n)
{
	volatile char *p = (volatile char *)arr + 1;
	long sum = 0;

	for (int i = 0; i < n; i++)
		sum += *(volatile int *)(p + 4 * i);
	arr[N - 1] = (int)sum;
}

int main(void)
{
	long long v[3], mid[2];

	knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", "instrument");
	if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT) {
		fprintf(stderr, "PAPI_library_init failed\n");
		return 1;
	}
	cidx = PAPI_get_component_index("itanium2");
	if (cidx < 0) {
		fprintf(stderr, "no itanium2 component\n");
		return 1;
	}
	heritage_test_require_backend("itanium2", "instrument");
	arr = calloc(N, sizeof *arr);
	if (!arr) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}

	/* The whole array is watched; arr[N-1] is left out for the misaligned
	 * test's sink. */
	int set = new_set(arr, arr + N - 1, 0);

	CHECK_PAPI(PAPI_start(set));
	read_mid_loop(set, 1000, mid);
	CHECK_PAPI(PAPI_stop(set, v));
	expect("PAPI_read mid-loop: stores so far", mid[1], 1000);
	expect("PAPI_read mid-loop: loads so far", mid[0], 0);
	expect("after the loop: stores", v[1], 1001);
	expect("after the loop: loads", v[0], 1000);

	CHECK_PAPI(PAPI_start(set));
	if (setjmp(back) == 0)
		stores_then_longjmp(777);
	CHECK_PAPI(PAPI_stop(set, v));
	expect("stores of a function left by longjmp", v[1], 777);

	CHECK_PAPI(PAPI_start(set));
	caller(500);
	CHECK_PAPI(PAPI_stop(set, v));
	expect("caller and callee interleaved: loads", v[0], 3 * 500);
	expect("caller and callee interleaved: stores", v[1], 2 * 500);

	long long first[2], second[2];
	restart_mid(set, 600, first, second);
	expect("stop/start in one function: first session's stores", first[1], 600);
	expect("stop/start in one function: first session's loads", first[0], 0);
	expect("stop/start in one function: second session's loads", second[0], 300);
	expect("stop/start in one function: second session's stores", second[1], 0);
	drop_set(set);

	/* Three events: the misaligned count needs every hit looked at. */
	set = new_set(arr, arr + N - 1, 1);
	CHECK_PAPI(PAPI_start(set));
	misaligned_loads(1000);
	CHECK_PAPI(PAPI_stop(set, v));
	expect("slow path: loads", v[0], 1000);
	expect("slow path: misaligned loads", v[2], 1000);
	expect("slow path: stores (the sink is outside the range)", v[1], 0);
	drop_set(set);

	PAPI_shutdown();
	free(arr);
	if (fails) {
		printf("FAIL: %d count(s) wrong\n", fails);
		return 1;
	}
	printf("PASS\n");
	return 0;
}
