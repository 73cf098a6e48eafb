/*
 * papi_remove_readd: removing events from an event set and adding events
 * again leaves a set that adds, starts and counts as a fresh one would
 * (issue 20, item 4: the stale ni_papi_code).  PAPI 7.0.0's
 * remove_native_events() compacted the native-event array but left each
 * moved slot with the removed event's PAPI code, so a later add or removal
 * matched the wrong slot or none: re-adding after removing everything gave
 * PAPI_ECNFLCT or PAPI_ECOUNT on alpha21064, and after removing one event of
 * several the remaining events read another event's count.
 * components/patches/papi-7.0.0-remove-native-papi-code.patch fixes it.
 *
 *   papi_remove_readd paragon_rpm   (with PAPI_HERITAGE_PARAGON_RPM_MESH=3x3)
 *   papi_remove_readd itanium2
 *   papi_remove_readd alpha21064
 *
 * For each component the same three sequences:
 *   all:    add 2-4 events, remove every one (first first), add them again
 *           in another order;
 *   middle: add three (two on alpha21064), remove the middle (first) one,
 *           add a different event;
 *   first:  add three (two), remove the first, add it again;
 * then start, run a workload whose count of every event is known from the
 * workload itself, stop, and check each value is its own event's:
 *   paragon_rpm: the mesh counters of node 4 of a 3x3 virtual mesh, after
 *     11, 22, 33 and 44 64-byte units sent north, east, south and west;
 *   itanium2: loads, stores, misaligned loads and misaligned stores in a
 *     64-byte data range (350, 220, 50, 20), accesses outside it not counted;
 *   alpha21064 (software backend): its counters are unreadable, so the
 *     overflows each event gets in a loop of 4096 loads, stores and branches
 *     (STORE_INSNS every 256: 16; LOAD_INSNS or BRANCH_INSNS every 4096: 1),
 *     attributed through PAPI_get_overflow_event_index.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <string.h>

#include <i860paragon/rpm.h>

#include "heritage_test.h"
#include "knob.h"

#define MAXEV 4

struct component {
	const char *name;
	/* the events a case names by letter: A B C D */
	const char *ev[MAXEV];
	/* The letters of each case (NULL-terminated strings). */
	const char *all_add, *all_readd, *three, *middle_new;
	/* start, workload, stop; checks each event of the set against what
	 * the workload makes.  Returns 0, or 77 to skip with the reason printed. */
	int (*count)(int set, const char *what);
};

static int code_of(const char *name)
{
	int code = 0;
	CHECK_PAPI(PAPI_event_name_to_code(name, &code));
	return code;
}

/* Which of the component's events a code is: its index, or -1. */
static int which(const struct component *c, int code)
{
	for (int i = 0; i < MAXEV && c->ev[i]; i++)
		if (code_of(c->ev[i]) == code)
			return i;
	return -1;
}

static int events_of(int set, int *codes)
{
	int n = MAXEV;
	CHECK_PAPI(PAPI_list_events(set, codes, &n));
	return n;
}

/* ------------------------------------------------------------- paragon_rpm */
/* Node 4 is the centre of the 3x3 mesh: nodes 1, 5, 7, 3 are its neighbours
 * north, east, south and west; every message leaves node 4's router in that
 * one direction, so its counters are exactly these units. */
static const int rpm_units[MAXEV] = { 11, 22, 33, 44 };
static const int rpm_dst[MAXEV] = { 1, 5, 7, 3 };
static const struct component *current;

static int rpm_count(int set, const char *what)
{
	int codes[MAXEV], n = events_of(set, codes);
	long long v[MAXEV];
	CHECK_PAPI(PAPI_start(set));
	for (int d = 0; d < MAXEV; d++)
		EXPECT(rpm_mesh_send(rpm_dst[d], 64UL * (unsigned long)rpm_units[d]) == 0, "rpm_mesh_send: %s",
		       rpm_last_error());
	CHECK_PAPI(PAPI_stop(set, v));
	for (int i = 0; i < n; i++) {
		int e = which(current, codes[i]);
		char msg[160];
		snprintf(msg, sizeof msg, "%s: value %d, %s", what, i, e >= 0 ? current->ev[e] : "?");
		EXPECT_EQ(msg, v[i], e >= 0 ? rpm_units[e] : -1);
		printf("  %s = %lld\n", e >= 0 ? current->ev[e] : "?", v[i]);
	}
	return 0;
}

/* ---------------------------------------------------------------- itanium2 */
typedef uint32_t __attribute__((aligned(1))) u32u;
static unsigned char *it2_buf; /* page-aligned; the range is its first 64 bytes */

#define IT2_LOADS 300
#define IT2_MLOADS 50
#define IT2_STORES 200
#define IT2_MSTORES 20
static const long long it2_want[MAXEV] = { IT2_LOADS + IT2_MLOADS, IT2_STORES + IT2_MSTORES, IT2_MLOADS, IT2_MSTORES };

/* One instruction per access (volatile): aligned and misaligned 4-byte loads
 * and stores inside [buf, buf + 64), and loads and stores beyond it. */
static void __attribute__((noinline)) it2_work(unsigned char *b)
{
	for (int i = 0; i < IT2_LOADS; i++)
		(void)*(volatile uint32_t *)(b + 4 * (i % 8));
	for (int i = 0; i < IT2_MLOADS; i++)
		(void)*(volatile u32u *)(b + 1 + 4 * (i % 4));
	for (int i = 0; i < IT2_STORES; i++)
		*(volatile uint32_t *)(b + 32 + 4 * (i % 8)) = (uint32_t)i;
	for (int i = 0; i < IT2_MSTORES; i++)
		*(volatile u32u *)(b + 33) = (uint32_t)i;
	for (int i = 0; i < 100; i++) {
		(void)*(volatile uint32_t *)(b + 128 + 4 * (i % 8));
		*(volatile uint32_t *)(b + 256) = (uint32_t)i;
	}
}

static int it2_count(int set, const char *what)
{
	int codes[MAXEV], n = events_of(set, codes);
	long long v[MAXEV];
	int rc = PAPI_start(set);
	if (rc == PAPI_ENOSUPP || rc == PAPI_EPERM) {
		printf("SKIPPED: no itanium2 backend can count a data range here (%s): %s\n", PAPI_strerror(rc),
		       papi_heritage_last_error());
		return 77;
	}
	CHECK_PAPI(rc);
	it2_work(it2_buf);
	CHECK_PAPI(PAPI_stop(set, v));
	char backend[32] = "";
	papi_heritage_itanium2_backend(set, backend, sizeof backend);
	for (int i = 0; i < n; i++) {
		int e = which(current, codes[i]);
		char msg[160];
		snprintf(msg, sizeof msg, "%s: value %d, %s (%s backend)", what, i, e >= 0 ? current->ev[e] : "?",
		         backend);
		EXPECT_EQ(msg, v[i], e >= 0 ? it2_want[e] : -1);
		printf("  %s = %lld (%s backend)\n", e >= 0 ? current->ev[e] : "?", v[i], backend);
	}
	return 0;
}

/* -------------------------------------------------------------- alpha21064 */
void alpha_mix_loop(long *p, long n);
extern const char alpha_mix_loop_end[];

static int alpha_overflows[MAXEV], alpha_outside, alpha_set;

static void alpha_handler(int EventSet, void *address, long long overflow_vector, void *context)
{
	int idx[MAXEV], n = MAXEV, codes[MAXEV], ncodes = MAXEV;
	(void)context;
	if (EventSet != alpha_set)
		return;
	if ((uintptr_t)address < (uintptr_t)alpha_mix_loop || (uintptr_t)address >= (uintptr_t)alpha_mix_loop_end) {
		alpha_outside++; /* PAPI_start's and PAPI_stop's own instructions */
		return;
	}
	if (PAPI_get_overflow_event_index(EventSet, overflow_vector, idx, &n) != PAPI_OK ||
	    PAPI_list_events(EventSet, codes, &ncodes) != PAPI_OK)
		return;
	for (int i = 0; i < n; i++) {
		int e = idx[i] >= 0 && idx[i] < ncodes ? which(current, codes[idx[i]]) : -1;
		if (e >= 0)
			alpha_overflows[e]++;
	}
}

/* The counter-1 event (STORE_INSNS, width 8) every 256, the counter-0 ones
 * (LOAD_INSNS, BRANCH_INSNS, width 12) every 4096; in 4096 consecutive events
 * of each, wherever the counters stood, 16 and 1 overflows.  The function
 * also holds a jz and a ret (a branch, and a load if the classifier counts
 * ret's), so a counter-0 event may see 4097 or 4098 in it: 1, or 2 when its
 * counter stood within 2 of a multiple of 4096 (alpha_want_max). */
static const int alpha_threshold[MAXEV] = { 4096, 256, 4096, 0 };
static const int alpha_want[MAXEV] = { 1, 16, 1, 0 };
static const int alpha_want_max[MAXEV] = { 2, 16, 2, 0 };

static int alpha_count(int set, const char *what)
{
	int codes[MAXEV], n = events_of(set, codes);
	long buf[2] = { 7, 0 };
	long long v[MAXEV];
	for (int i = 0; i < n; i++) {
		int e = which(current, codes[i]);
		EXPECT(e >= 0, "%s: unknown event %#x in the set", what, codes[i]);
		if (e >= 0) {
			int rc = PAPI_overflow(set, codes[i], alpha_threshold[e], 0, alpha_handler);
			EXPECT(rc == PAPI_OK, "%s: PAPI_overflow(%s): %s %s", what, current->ev[e], PAPI_strerror(rc),
			       papi_heritage_last_error());
		}
	}
	memset(alpha_overflows, 0, sizeof alpha_overflows);
	alpha_outside = 0;
	alpha_set = set;
	CHECK_PAPI(PAPI_start(set));
	alpha_mix_loop(buf, 4096);
	CHECK_PAPI(PAPI_stop(set, v));
	EXPECT_EQ("the loop ran", buf[1], 7);
	for (int i = 0; i < n; i++) {
		int e = which(current, codes[i]);
		if (e < 0)
			continue;
		char msg[160];
		snprintf(msg, sizeof msg, "%s: overflows of %s in the loop", what, current->ev[e]);
		EXPECT(alpha_overflows[e] >= alpha_want[e] && alpha_overflows[e] <= alpha_want_max[e],
		       "%s: got %d, want %d%s", msg, alpha_overflows[e], alpha_want[e],
		       alpha_want_max[e] > alpha_want[e] ? " (or 2)" : "");
		printf("  %s: %d overflows in the loop (threshold %d)\n", current->ev[e], alpha_overflows[e],
		       alpha_threshold[e]);
		/* Clear it, so that the set can be cleaned up and reused. */
		PAPI_overflow(set, codes[i], 0, 0, alpha_handler);
	}
	EXPECT(alpha_outside <= 2, "%s: %d overflows outside the loop, at most PAPI_start's and PAPI_stop's 2", what,
	       alpha_outside);
	return 0;
}

/* ------------------------------------------------------------------ cases */
static const struct component components[] = {
	{ "paragon_rpm",
	  { "paragon_rpm:::rpm_north", "paragon_rpm:::rpm_east", "paragon_rpm:::rpm_south", "paragon_rpm:::rpm_west" },
	  "ABCD", "DACB", "ABC", "D", rpm_count },
	{ "itanium2",
	  { "itanium2:::LOADS_RETIRED", "itanium2:::STORES_RETIRED", "itanium2:::MISALIGNED_LOADS_RETIRED",
	    "itanium2:::MISALIGNED_STORES_RETIRED" },
	  "ABCD", "DACB", "ABC", "D", it2_count },
	/* Two counters: A and C on counter 0, B on counter 1. */
	{ "alpha21064", { "alpha21064:::LOAD_INSNS:width=12", "alpha21064:::STORE_INSNS:width=8",
	                  "alpha21064:::BRANCH_INSNS:width=12", NULL },
	  "AB", "BA", "AB", "C", alpha_count },
};

static void add(int set, const struct component *c, char letter, const char *what)
{
	const char *name = c->ev[letter - 'A'];
	int rc = PAPI_add_named_event(set, name);
	EXPECT(rc == PAPI_OK, "%s: adding %s: %d (%s) %s", what, name, rc, PAPI_strerror(rc), papi_heritage_last_error());
}

static void drop(int set, const struct component *c, char letter, const char *what)
{
	const char *name = c->ev[letter - 'A'];
	int rc = PAPI_remove_named_event(set, name);
	EXPECT(rc == PAPI_OK, "%s: removing %s: %d (%s)", what, name, rc, PAPI_strerror(rc));
}

static int new_set(const struct component *c)
{
	int set = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&set));
	if (strcmp(c->name, "itanium2") == 0) {
		PAPI_option_t opt;
		CHECK_PAPI(PAPI_assign_eventset_component(set, PAPI_get_component_index("itanium2")));
		CHECK_PAPI(heritage_test_range(set, PAPI_DATA_ADDRESS, (const void *)it2_buf, (const void *)(it2_buf + 64),
		                               &opt));
	}
	return set;
}

static int run_case(const struct component *c, const char *what, const char *first, const char *remove,
                    const char *then)
{
	int set = new_set(c), failures = heritage_test_failures;
	printf("%s: add %s, remove %s, add %s\n", what, first, remove, then);
	for (const char *p = first; *p; p++)
		add(set, c, *p, what);
	for (const char *p = remove; *p; p++)
		drop(set, c, *p, what);
	for (const char *p = then; *p; p++)
		add(set, c, *p, what);
	int n = PAPI_num_events(set);
	EXPECT_EQ(what, n, (long long)(strlen(first) - strlen(remove) + strlen(then)));
	/* A set whose adds failed is not counted: its values would say nothing. */
	int rc = heritage_test_failures > failures ? 0 : c->count(set, what);
	PAPI_cleanup_eventset(set);
	PAPI_destroy_eventset(&set);
	return rc;
}

int main(int argc, char **argv)
{
	const struct component *c = NULL;
	for (size_t i = 0; argc == 2 && i < sizeof components / sizeof components[0]; i++)
		if (strcmp(argv[1], components[i].name) == 0)
			c = &components[i];
	if (!c) {
		fprintf(stderr, "usage: papi_remove_readd paragon_rpm|itanium2|alpha21064\n");
		return 2;
	}
	current = c;
	/* alpha21064's exact counts are the software backend's (the PMU
	 * backend's overflow PCs have skid). */
	if (strcmp(c->name, "alpha21064") == 0)
		knob_set("PAPI_HERITAGE_ALPHA21064_BACKEND", "software");
	heritage_test_init();
	int cidx = PAPI_get_component_index(c->name);
	const PAPI_component_info_t *info = cidx >= 0 ? PAPI_get_component_info(cidx) : NULL;
	if (!info) {
		fprintf(stderr, "%s is not compiled into this libpapi\n", c->name);
		return 1;
	}
	if (info->disabled)
		SKIP("%s is disabled here: %s", c->name, info->disabled_reason);
	if (strcmp(c->name, "alpha21064") == 0)
		heritage_test_require_backend("alpha21064", "software");
	if (strcmp(c->name, "paragon_rpm") == 0 && rpm_mesh_join(4) != 4) {
		fprintf(stderr, "rpm_mesh_join(4) on a 3x3 mesh (PAPI_HERITAGE_PARAGON_RPM_MESH=3x3): %s\n",
		        rpm_last_error());
		return 1;
	}
	if (strcmp(c->name, "itanium2") == 0) {
		it2_buf = aligned_alloc(4096, 4096);
		if (!it2_buf)
			return 1;
		memset(it2_buf, 0, 4096);
	}

	/* "all" removes every event; "middle" the middle one of three (the
	 * first of alpha21064's two); "first" the first, added back. */
	char middle[2] = { c->three[strlen(c->three) > 2 ? 1 : 0], 0 };
	char first[2] = { c->three[0], 0 };
	int rc = 0, r;
	if ((r = run_case(c, "all", c->all_add, c->all_add, c->all_readd)) == 77)
		return 77;
	rc |= r;
	rc |= run_case(c, "middle", c->three, middle, c->middle_new);
	rc |= run_case(c, "first", c->three, first, first);
	if (c->count == rpm_count)
		rpm_mesh_leave();
	(void)rc;
	return heritage_test_done("papi_remove_readd");
}
