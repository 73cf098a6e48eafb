/*
 * instr_blocktrap: PAPI_set_opt(PAPI_INSTR_ADDRESS) on plain -O2 code (no
 * instrument flags), counted by the blocktrap backend (an int3 at each block
 * leader, watch_blocktrap.c), checked against two independent counts of the
 * same instructions of this binary:
 *
 *   - the pagetrap backend, which steps every instruction: the same count
 *     over whole routines, over ranges that start or end in the middle of a
 *     block, in coarse mode, and for a loop that calls out of the range;
 *   - valgrind --tool=callgrind --toggle-collect=<routine> --skip-plt=no:
 *     the routine's self Ir.
 *
 * bt_switch's jump table jumps into the middle of blocks (the trap at the
 * jump counts the rest of the target's block).  Also: a second thread running the routine is not counted, and the code is
 * as it was after PAPI_stop (the routine runs on, uncounted, and gives the
 * same result).  The routines are laid out in order (-fno-toplevel-reorder):
 * each *_end follows its routine.
 *
 *   instr_blocktrap               the checks
 *   instr_blocktrap work NAME N   run routine NAME with N, without PAPI (for callgrind)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "callgrind_self.h"
#include "heritage_test.h"
#include "knob.h"

/* The routines compute in unsigned: their values wrap (bt_global's
 * x * 3 + 1 by the 40th call), which signed overflow may not. */
__attribute__((noinline)) long bt_callee(long x)
{
	return (long)((unsigned long)x * 3 + 1);
}

/* xorshift in registers, a branch on the low bit.  (Signed, its shifts
 * overflowed: UBSan under make check-sanitize, "left shift of
 * 108595223277980261 by 17 places".) */
__attribute__((noinline)) long bt_hot(long n, long seed)
{
	unsigned long x = (unsigned long)seed, s = 0;
	for (long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (x & 1)
			s += x;
		else
			s -= (unsigned long)i;
	}
	return (long)s;
}

__attribute__((noinline)) void bt_hot_end(void)
{
	__asm__ volatile("");
}

/* A loop with a call out of the range, a swap on one path. */
__attribute__((noinline)) long bt_mixed(long n, long seed)
{
	long s = seed, t = 1;
	for (long i = 0; i < n; i++) {
		long v = (i * 2654435761L) >> 7;
		if (v % 3 == 0) {
			s += bt_callee(v);
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

__attribute__((noinline)) void bt_mixed_end(void)
{
	__asm__ volatile("");
}

/* RIP-relative data and a call through a pointer in the loop. */
static unsigned long table[64];
static long (*volatile callee_ptr)(long) = bt_callee;

__attribute__((noinline)) long bt_global(long n, long seed)
{
	long s = seed;
	for (long i = 0; i < 64; i++)
		table[i] = (unsigned long)i;
	for (long i = 0; i < n; i++) {
		table[i & 63] += (unsigned long)s;
		s = callee_ptr(s) ^ (long)table[(i + 7) & 63];
	}
	return s;
}

__attribute__((noinline)) void bt_global_end(void)
{
	__asm__ volatile("");
}

/* A switch gcc -O2 compiles to a jump table: an indirect jump into the
 * middle of the function. */
__attribute__((noinline)) long bt_switch(long n, long seed)
{
	unsigned long s = (unsigned long)seed;
	for (unsigned long i = 0; i < (unsigned long)n; i++) {
		switch ((s ^ i) & 7) {
		case 0: s += 3; break;
		case 1: s ^= i << 2; break;
		case 2: s = s * 5 + 1; break;
		case 3: s -= i; break;
		case 4: s = (s >> 1) | (i << 9); break;
		case 5: s += s >> 3; break;
		case 6: s ^= 0x5555; break;
		default: s = ~s; break;
		}
	}
	return (long)s;
}

__attribute__((noinline)) void bt_switch_end(void)
{
	__asm__ volatile("");
}

struct routine {
	const char *name;
	long (*fn)(long, long);
	void *end;
};

static const struct routine routines[] = {
	{ "bt_hot", bt_hot, (void *)bt_hot_end },
	{ "bt_mixed", bt_mixed, (void *)bt_mixed_end },
	{ "bt_global", bt_global, (void *)bt_global_end },
	{ "bt_switch", bt_switch, (void *)bt_switch_end },
};

static const struct routine *routine(const char *name)
{
	for (unsigned i = 0; i < sizeof routines / sizeof routines[0]; i++)
		if (strcmp(routines[i].name, name) == 0)
			return &routines[i];
	fprintf(stderr, "no routine %s\n", name);
	exit(2);
}

static volatile long sink;

/* IA64_INST_RETIRED and the tagged IBRP0 event over [lo, hi) while fn(n)
 * runs on backend; the backend used in used, fn's result in *res. */
static int count(const void *lo, const void *hi, int exact, const char *backend, long (*fn)(long, long), long n,
                 long long v[2], char *used, size_t usedlen, long *res)
{
	int set = PAPI_NULL;
	PAPI_option_t opt;

	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_add_named_event(set, exact ? "itanium2:::IA64_INST_RETIRED:exact=1" : "itanium2:::IA64_INST_RETIRED"));
	CHECK_PAPI(PAPI_add_named_event(set, exact ? "itanium2:::IA64_TAGGED_INST_RETIRED_IBRP0_PMC8:exact=1"
	                                           : "itanium2:::IA64_TAGGED_INST_RETIRED_IBRP0_PMC8"));
	CHECK_PAPI(heritage_test_range(set, PAPI_INSTR_ADDRESS, lo, hi, &opt));
	knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", backend);
	int rc = PAPI_start(set);
	knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", NULL);
	if (rc != PAPI_OK) {
		snprintf(used, usedlen, "%s", papi_heritage_last_error());
		CHECK_PAPI(PAPI_cleanup_eventset(set));
		CHECK_PAPI(PAPI_destroy_eventset(&set));
		return rc;
	}
	long r = fn(n, 12345);
	CHECK_PAPI(PAPI_stop(set, v));
	CHECK_PAPI(papi_heritage_itanium2_backend(set, used, usedlen));
	if (res)
		*res = r;
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
	return PAPI_OK;
}

static int pagetrap_ok;

static long long against_pagetrap(const char *what, const void *lo, const void *hi, int exact,
                                  long (*fn)(long, long), long n)
{
	long long vb[2], vp[2];
	char bb[512], bp[512];
	long rb, rp;

	int rc = count(lo, hi, exact, "blocktrap", fn, n, vb, bb, sizeof bb, &rb);
	if (rc != PAPI_OK) {
		fprintf(stderr, "%s [%p, %p): blocktrap refused: %s\n", what, lo, hi, bb);
		heritage_test_failures++;
		return 0;
	}
	printf("%s [%p, %p) %s: %s backend: IA64_INST_RETIRED %lld, IBRP0 %lld\n", what, lo, hi,
	       exact ? "exact" : "coarse", bb, vb[0], vb[1]);
	EXPECT_EQ("IBRP0 = IA64_INST_RETIRED (one pair)", vb[1], vb[0]);
	EXPECT_EQ("the routine's result, uncounted", rb, fn(n, 12345));
	if (!pagetrap_ok)
		return vb[0];
	CHECK_PAPI(count(lo, hi, exact, "pagetrap", fn, n, vp, bp, sizeof bp, &rp));
	printf("%s [%p, %p) %s: pagetrap backend: IA64_INST_RETIRED %lld, IBRP0 %lld\n", what, lo, hi,
	       exact ? "exact" : "coarse", vp[0], vp[1]);
	EXPECT_EQ("blocktrap = pagetrap", vb[0], vp[0]);
	EXPECT_EQ("blocktrap = pagetrap (IBRP0)", vb[1], vp[1]);
	EXPECT_EQ("the routine's result, stepped", rp, rb);
	return vb[0];
}

static void against_callgrind(const struct routine *r, long n)
{
	long long v[2];
	char b[512];

	long long cg = callgrind_self(r->name, n);
	if (cg < 0) {
		printf("%s: no callgrind comparison: valgrind --tool=callgrind did not run here\n", r->name);
		return;
	}
	CHECK_PAPI(count((void *)r->fn, r->end, 1, "blocktrap", r->fn, n, v, b, sizeof b, NULL));
	printf("%s(%ld): callgrind self Ir %lld, IA64_INST_RETIRED %lld (%s backend)\n", r->name, n, cg, v[0], b);
	EXPECT_EQ("IA64_INST_RETIRED = callgrind's self Ir", v[0], cg);
}

static atomic_int other_stop;

static void *other_thread(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&other_stop, memory_order_relaxed))
		sink = bt_hot(1000, 7);
	return NULL;
}

/* Another thread running the routine while it is counted is not counted. */
static void threads(long n, long long want)
{
	pthread_t th;
	long long v[2];
	char b[512];

	if (pthread_create(&th, NULL, other_thread, NULL) != 0)
		exit(1);
	CHECK_PAPI(count((void *)bt_hot, (void *)bt_hot_end, 1, "blocktrap", bt_hot, n, v, b, sizeof b, NULL));
	atomic_store(&other_stop, 1);
	pthread_join(th, NULL);
	printf("bt_hot(%ld) beside a thread running it: IA64_INST_RETIRED %lld (alone: %lld)\n", n, v[0], want);
	EXPECT_EQ("this thread's instructions only", v[0], want);
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "work") == 0) {
		sink = routine(argv[2])->fn(atol(argv[3]), 12345);
		return 0;
	}
	heritage_test_init();
	heritage_test_require_backend("itanium2", "blocktrap");
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
		against_pagetrap(r->name, lo + (hi - lo) / 4, lo + (hi - lo) * 3 / 4, 1, r->fn, 300);
		against_callgrind(r, 100000);
	}
	long long v[2], va[2];
	char b[512], ba[512];
	CHECK_PAPI(count((void *)bt_hot, (void *)bt_hot_end, 1, "blocktrap", bt_hot, 100000, v, b, sizeof b, NULL));
	/* auto: an instruction range of uninstrumented code takes blocktrap
	 * before stepping. */
	CHECK_PAPI(count((void *)bt_hot, (void *)bt_hot_end, 1, "auto", bt_hot, 100000, va, ba, sizeof ba, NULL));
	printf("bt_hot(100000), auto: %s backend, IA64_INST_RETIRED %lld\n", ba, va[0]);
	EXPECT(strcmp(ba, "blocktrap") == 0, "auto chose %s, not blocktrap", ba);
	EXPECT_EQ("auto's count", va[0], v[0]);
	threads(100000, v[0]);
	PAPI_shutdown();
	return heritage_test_done("instr_blocktrap");
}
