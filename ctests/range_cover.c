/*
 * range_cover: a coarse range over a static array counts what the program
 * does there, never what the library does.
 *
 * A static int a[4096], stored to and then loaded from once per element,
 * and nothing else inside the watched range: LOADS_RETIRED and
 * STORES_RETIRED in coarse mode (the default: the Itanium 2 cover around
 * the array, which reaches the program's other statics and whatever the
 * linker put after them) must be 4096 each.  In a build with an instrument
 * flavour the linker puts the hook archive's own statics right after the
 * program's .bss, inside that cover, and the hooks touch them on every
 * block and every access; so do libpapi's handlers, which run while the
 * pages are protected.  Those accesses are the monitor's, not the
 * program's: a trap backend (pagetrap, breakpoint) must leave them out,
 * and the instrument backend must not be handed them.
 *
 * One source, built with every instrument flavour (gcc outline, gcc
 * inline, clang outline, clang pass) and plain; the cases run it with the
 * backend chosen (auto) and with each trap backend forced
 * (PAPI_HERITAGE_ITANIUM2_BACKEND), which skip with the probe's reason
 * where the mechanism does not work here.
 *
 * The program touches nothing else in the cover while the set runs: the
 * loops keep i and the sum in registers, and the sum goes to sink after
 * PAPI_stop.  RANGE_COVER_REPORT=1 prints the cover and the symbols in it
 * (nm, for a person looking at a failure).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heritage_test.h"

#define N 4096

/* In this order in a section of their own (gcc keeps it with
 * -fno-toplevel-reorder; clang emits initialised, used definitions in
 * source order, data_range.c's way): the guard keeps the cover's low side
 * off the GOT, which the program's own PLT calls load (rightly counted,
 * and not what this test is about).  0x120 into a page, the array's cover
 * is [a - 0x120, a + 16 KiB + 0xe0): on the high side it reaches past the
 * array, over mid, into what the linker puts after the program's .bss. */
#define WATCHED __attribute__((section(".bss.range_cover"), used))
static char guard[8192 + 0x120] WATCHED __attribute__((aligned(4096))) = { 0 };
static int a[N] WATCHED = { 0 };
/* Inside the cover too: PAPI_read stores the counts here from libpapi's
 * code, the monitor's access on the program's behalf. */
static long long mid[2] WATCHED = { 0 };
static volatile long sink;

/* One count per element: gcc builds it with -fno-tree-vectorize; clang
 * drops that flag under the -O2 CFLAGS appends, hence the pragma. */
#ifdef __clang__
#define SCALAR_LOOP _Pragma("clang loop vectorize(disable) interleave(disable)")
#else
#define SCALAR_LOOP
#endif

/* One store and one load per element, no other memory access.  noinline:
 * nothing of it moves into main's PAPI calls. */
__attribute__((noinline)) static long touch(int *p)
{
	long sum = 0;

	SCALAR_LOOP
	for (int i = 0; i < N; i++)
		p[i] = i;
	SCALAR_LOOP
	for (int i = 0; i < N; i++)
		sum += p[i];
	return sum;
}

int main(void)
{
	heritage_test_init();
	int set = PAPI_NULL, cidx = PAPI_get_component_index("itanium2");
	long long v[2] = { -1, -1 };
	PAPI_option_t opt;
	char backend[32] = "?";

	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_assign_eventset_component(set, cidx));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED"));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::STORES_RETIRED"));
	CHECK_PAPI(heritage_test_range(set, PAPI_DATA_ADDRESS, a, a + N, &opt));
	uintptr_t lo = (uintptr_t)a - (uintptr_t)opt.addr.start_off, hi = (uintptr_t)(a + N) + (uintptr_t)opt.addr.end_off;
	if (lo < (uintptr_t)guard || (uintptr_t)guard + sizeof guard > (uintptr_t)a || (uintptr_t)(mid + 2) > hi) {
		fprintf(stderr, "layout: guard [%p, %p) does not keep the cover [%#lx, %#lx) of a at %p off the GOT, "
		        "or the cover does not reach mid at %p\n",
		        (void *)guard, (void *)(guard + sizeof guard), (unsigned long)lo, (unsigned long)hi, (void *)a,
		        (void *)mid);
		return 1;
	}
	int rc = PAPI_start(set);
	if (rc != PAPI_OK) {
		printf("SKIPPED: PAPI_start of a coarse range over a static array: %s (%s)\n", PAPI_strerror(rc),
		       papi_heritage_last_error());
		return 77;
	}
	long sum = touch(a);
	CHECK_PAPI(PAPI_read(set, mid));
	CHECK_PAPI(PAPI_stop(set, v));
	sink = sum;
	CHECK_PAPI(papi_heritage_itanium2_backend(set, backend, sizeof backend));

	printf("a = [%p, %p), cover [%#lx, %#lx) (%lu KiB), %s backend%s: LOADS_RETIRED %lld, STORES_RETIRED %lld "
	       "(want %d each)\n",
	       (void *)a, (void *)(a + N), (unsigned long)lo, (unsigned long)hi, (unsigned long)((hi - lo) >> 10),
	       backend, HERITAGE_TEST_INSTRUMENTED ? ", instrumented build" : "", v[0], v[1], N);
	if (getenv("RANGE_COVER_REPORT")) {
		char cmd[256];
		snprintf(cmd, sizeof cmd, "nm -n /proc/%d/exe | grep -i ' [bBdD] '", (int)getpid());
		fflush(stdout);
		if (system(cmd) != 0)
			printf("(nm found no symbols)\n");
	}
	EXPECT_EQ("sum of the loads", sum, (long)N * (N - 1) / 2);
	EXPECT_EQ("LOADS_RETIRED over the cover", v[0], N);
	EXPECT_EQ("STORES_RETIRED over the cover", v[1], N);
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
	return heritage_test_done("range_cover");
}
