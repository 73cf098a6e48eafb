/*
 * Unit tests of src/itanium2/it2_cache.c, the memory-hierarchy model.  The
 * accesses are addresses only (the model reads no memory).  Every expected
 * count is worked out here from the geometry of the preset in use, never
 * taken from the model:
 *   Madison (IT2_CACHE_ITANIUM2_MADISON): L1D 16 KiB, 4 ways, 64-byte lines
 *     (64 sets: lines 4096 bytes apart share a set), integer loads only,
 *     write-through, no write allocation; L2 256 KiB, 8 ways, 128-byte lines
 *     (256 sets); L3 3 MiB, 12 ways, 128-byte lines; all NRU; L1 DTLB 32
 *     entries of 4 KiB, L2 DTLB 128 entries of 16 KiB pages, LRU; latencies
 *     L1D 1, L2 5 (FP 6), L3 15, memory 271 (FP 272), DTLB penalties 4
 *     (L2 DTLB) and 19 (walk).
 *   cachegrind (IT2_CACHE_CACHEGRIND), LRU and write-allocate, with D1 set
 *     here to 16 KiB, 4 ways, 64-byte lines; LL 256 KiB, 8 ways, 64-byte
 *     lines (512 sets).
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/heritage_error.h"
#include "itanium2/it2_cache.h"

#define BASE 0x10000000u       /* 16 MiB: aligned for every line and page size used */
#define KIB 1024u

static void madison(struct it2_cache *m)
{
	struct it2_cache_config cfg;
	ck_assert_int_eq(it2_cache_preset(&cfg, IT2_CACHE_ITANIUM2_MADISON), 0);
	ck_assert_int_eq(it2_cache_init(m, &cfg), 0);
}

/* cachegrind's simulation with a 16 KiB 4-way D1 (so the same sets as
 * Madison's L1D, under LRU). */
static void cachegrind(struct it2_cache *m)
{
	struct it2_cache_config cfg;
	ck_assert_int_eq(it2_cache_preset(&cfg, IT2_CACHE_CACHEGRIND), 0);
	ck_assert_int_eq(it2_cache_set_geometry(&cfg, IT2_CACHE_L1D, 16 * KIB, 4, 64), 0);
	ck_assert_int_eq(it2_cache_init(m, &cfg), 0);
}

static void read_array(struct it2_cache *m, uint64_t base, uint64_t bytes, unsigned flags)
{
	for (uint64_t a = base; a < base + bytes; a += 8)
		it2_cache_access(m, a, 8, flags, NULL);
}

static const struct it2_cache_level_counts *lc(const struct it2_cache *m, int level, int in)
{
	return &m->cnt.level[level][in];
}

/* ---- capacity ----------------------------------------------------------------- */

START_TEST(an_array_twice_the_l1d_misses_every_line_every_pass)
{
	struct it2_cache m;
	madison(&m);
	/* 32 KiB = 512 lines of 64 bytes, 8 per L1D set, 4096 loads a pass.
	 * NRU with 8 lines cycling through one 4-way set misses every time: the
	 * ways after lines A..D are [A B C D] with only D's bit set (D's use set
	 * the last clear bit, so the others were cleared); E..H then replace
	 * ways 0, 1, 2 and 0 (the first clear bit each time), and each later
	 * line finds the lines of the previous round in the ways; worked
	 * through for 3 rounds, no line is ever still there (8 loads hit each
	 * line while it is). */
	for (int pass = 0; pass < 3; pass++)
		read_array(&m, BASE, 32 * KIB, IT2_ACC_LOAD);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_misses, 3 * 512);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_hits, 3 * (4096 - 512));
	/* L2 sees the 1536 L1D misses: the first pass misses once per 128-byte
	 * line (256) and hits its second half (256); 32 KiB fits, so the next
	 * two passes hit (1024). */
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, 0)->read_misses, 256);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, 0)->read_hits, 256 + 1024);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L3, 0)->read_misses, 256);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L3, 0)->read_hits, 0);
	ck_assert_uint_eq(m.cnt.mem[0], 256);
	/* The DTLBs: 32 KiB is eight 4 KiB L1 DTLB entries and two 16 KiB
	 * pages: 8 L1 DTLB misses, of which the first of each page walks. */
	ck_assert_uint_eq(m.cnt.dtlb[0].walks, 2);
	ck_assert_uint_eq(m.cnt.dtlb[0].l2_hits, 6);
	ck_assert_uint_eq(m.cnt.dtlb[0].l1_hits, 3 * 4096 - 8);
	ck_assert_uint_eq(m.cnt.level[IT2_CACHE_L1D][1].read_misses, 0);   /* nothing in range */
	it2_cache_destroy(&m);
}
END_TEST

START_TEST(an_array_half_the_l1d_misses_only_the_first_pass)
{
	struct it2_cache m;
	madison(&m);
	/* 8 KiB = 128 lines, 2 per set: they all stay. */
	for (int pass = 0; pass < 3; pass++)
		read_array(&m, BASE, 8 * KIB, IT2_ACC_LOAD);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_misses, 128);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_hits, 3 * 1024 - 128);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, 0)->read_misses, 64);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, 0)->read_hits, 64);
	it2_cache_destroy(&m);
}
END_TEST

/* ---- Itanium 2's L1D: integer loads only, stores do not allocate ----------------- */

START_TEST(a_store_does_not_allocate_in_l1d)
{
	struct it2_cache m;
	struct it2_cache_outcome o;
	madison(&m);
	/* Store to a fresh line: L1D write miss, fills nothing; write-through to
	 * L2, which misses and allocates (write-back, write-allocate); then L3,
	 * memory.  The first touch of the page walks. */
	it2_cache_access(&m, BASE, 8, IT2_ACC_STORE, &o);
	ck_assert_uint_eq(o.level, IT2_CACHE_MEM);
	ck_assert_uint_eq(o.tlb, IT2_TLB_HPW);
	ck_assert_uint_eq(o.latency, 271 + 19);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->write_misses, 1);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, 0)->write_misses, 1);
	/* The load of the same line misses L1D and hits L2: 5 cycles. */
	it2_cache_access(&m, BASE, 8, IT2_ACC_LOAD, &o);
	ck_assert_uint_eq(o.level, IT2_CACHE_L2);
	ck_assert_uint_eq(o.tlb, IT2_TLB_L1);
	ck_assert_uint_eq(o.latency, 5);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_misses, 1);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, 0)->read_hits, 1);
	/* Now it is in L1D: a store hits there and still goes to L2
	 * (write-through), which absorbs it; a load hits L1D in 1 cycle. */
	it2_cache_access(&m, BASE + 8, 8, IT2_ACC_STORE, &o);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->write_hits, 1);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, 0)->write_hits, 1);
	ck_assert_uint_eq(o.level, IT2_CACHE_L2);
	it2_cache_access(&m, BASE + 16, 8, IT2_ACC_LOAD, &o);
	ck_assert_uint_eq(o.level, IT2_CACHE_L1D);
	ck_assert_uint_eq(o.latency, 1);
	it2_cache_destroy(&m);
}
END_TEST

START_TEST(fp_loads_bypass_l1d)
{
	struct it2_cache m;
	struct it2_cache_outcome o;
	madison(&m);
	it2_cache_access(&m, BASE, 8, IT2_ACC_LOAD | IT2_ACC_FP, &o);
	ck_assert_uint_eq(o.level, IT2_CACHE_MEM);
	ck_assert_uint_eq(o.latency, 272 + 19);
	it2_cache_access(&m, BASE, 8, IT2_ACC_LOAD | IT2_ACC_FP, &o);
	ck_assert_uint_eq(o.level, IT2_CACHE_L2);
	ck_assert_uint_eq(o.latency, 6);
	/* L1D saw neither. */
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_hits + lc(&m, IT2_CACHE_L1D, 0)->read_misses, 0);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, 0)->read_misses, 1);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, 0)->read_hits, 1);
	/* So an integer load of the line still misses L1D. */
	it2_cache_access(&m, BASE, 8, IT2_ACC_LOAD, &o);
	ck_assert_uint_eq(o.level, IT2_CACHE_L2);
	ck_assert_uint_eq(o.latency, 5);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_misses, 1);
	/* An FP store bypasses it too. */
	it2_cache_access(&m, BASE, 8, IT2_ACC_STORE | IT2_ACC_FP, &o);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->write_hits + lc(&m, IT2_CACHE_L1D, 0)->write_misses, 0);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, 0)->write_hits, 1);
	it2_cache_destroy(&m);
}
END_TEST

/* ---- replacement ----------------------------------------------------------------- */

START_TEST(five_lines_in_a_four_way_set_always_miss_under_lru)
{
	struct it2_cache m;
	cachegrind(&m);
	/* Lines 4096 bytes apart: one D1 set (64 sets of 64 bytes).  Cycling 5
	 * through 4 ways, LRU always evicts the next one wanted. */
	for (int round = 0; round < 10; round++)
		for (int k = 0; k < 5; k++)
			it2_cache_access(&m, BASE + (uint64_t)k * 4096, 8, IT2_ACC_LOAD, NULL);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_misses, 50);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_hits, 0);
	/* In LL (512 sets of 64 bytes) they are 64 sets apart: 5 cold misses. */
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, 0)->read_misses, 5);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, 0)->read_hits, 45);
	it2_cache_destroy(&m);
}
END_TEST

/* A B C D A B C E D A, lines 4096 bytes apart (one 4-way set), loads:
 * what each found in L1D, H (hit) or M (miss). */
static void nru_sequence(struct it2_cache *m, char *found)
{
	static const int seq[] = { 0, 1, 2, 3, 0, 1, 2, 4, 3, 0 };
	size_t i;
	for (i = 0; i < sizeof seq / sizeof seq[0]; i++) {
		struct it2_cache_outcome o;
		it2_cache_access(m, BASE + (uint64_t)seq[i] * 4096, 8, IT2_ACC_LOAD, &o);
		found[i] = o.level == IT2_CACHE_L1D ? 'H' : 'M';
	}
	found[i] = '\0';
}

START_TEST(nru_evicts_the_first_line_not_used_since_the_bits_were_cleared)
{
	struct it2_cache m;
	char found[16];
	/*
	 * NRU (Madison's L1D), ways 0-3, "used" bits after each access:
	 *   A B C D fill ways 0-3; D sets the last clear bit, so the others are
	 *           cleared:                         [A B C D] used {D}
	 *   A B hit: {A, B, D};  C hits and sets the last clear bit: {C}
	 *   E misses: the first way whose bit is clear is way 0: A goes
	 *                                            [E B C D] used {E, C}
	 *   D hits: {E, C, D}
	 *   A misses: the first clear bit is way 1: B goes.
	 */
	madison(&m);
	nru_sequence(&m, found);
	ck_assert_str_eq(found, "MMMMHHHMHM");
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_misses, 6);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_hits, 4);
	it2_cache_destroy(&m);
	/*
	 * LRU (cachegrind's D1, same sets): after A B C D A B C the order is
	 * C B A D (most recent first): E evicts D, D evicts A, A evicts B.
	 */
	cachegrind(&m);
	nru_sequence(&m, found);
	ck_assert_str_eq(found, "MMMMHHHMMM");
	it2_cache_destroy(&m);
}
END_TEST

/* ---- in range or not ----------------------------------------------------------------- */

START_TEST(counters_split_by_range_while_the_state_sees_everything)
{
	struct it2_cache m;
	madison(&m);
	/* P (4 KiB, in range) and Q (4 KiB, out of range, 8 KiB further) read
	 * alternately element by element, twice: each is 64 lines, one per L1D
	 * set, so both stay: 64 misses and 2 * 512 - 64 hits each; in L2 32
	 * misses (128-byte lines) and 32 hits each. */
	const uint64_t p = BASE, q = BASE + 8 * KIB;
	for (int pass = 0; pass < 2; pass++)
		for (uint64_t i = 0; i < 4 * KIB; i += 8) {
			it2_cache_access(&m, p + i, 8, IT2_ACC_LOAD | IT2_ACC_IN_RANGE, NULL);
			it2_cache_access(&m, q + i, 8, IT2_ACC_LOAD, NULL);
		}
	for (int in = 0; in < 2; in++) {
		ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, in)->read_misses, 64);
		ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, in)->read_hits, 960);
		ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, in)->read_misses, 32);
		ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, in)->read_hits, 32);
		ck_assert_uint_eq(m.cnt.mem[in], 32);
	}
	/* Out-of-range data evicts the range's lines: 16 KiB more (4 lines in
	 * every set, on top of P's and Q's 2) and P misses again, all 64 lines
	 * (NRU: the set's ways are [P Q R1 R2] used {R2}; R3 takes way 0, P;
	 * R4 takes way 1, Q). */
	it2_cache_counters_zero(&m);
	read_array(&m, BASE + 16 * KIB, 16 * KIB, IT2_ACC_LOAD);
	read_array(&m, p, 4 * KIB, IT2_ACC_LOAD | IT2_ACC_IN_RANGE);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 1)->read_misses, 64);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 1)->read_hits, 512 - 64);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_misses, 256);
	it2_cache_destroy(&m);
}
END_TEST

/* ---- TLB ----------------------------------------------------------------------------- */

/* Touches n 16 KiB pages twice (one load at each page's start) and returns
 * the second pass's DTLB counts. */
static struct it2_tlb_counts pages_twice(unsigned n)
{
	struct it2_cache m;
	madison(&m);
	for (unsigned i = 0; i < n; i++)
		it2_cache_access(&m, BASE + (uint64_t)i * 16 * KIB, 8, IT2_ACC_LOAD, NULL);
	ck_assert_uint_eq(m.cnt.dtlb[0].walks, n);   /* every first touch walks */
	it2_cache_counters_zero(&m);
	for (unsigned i = 0; i < n; i++)
		it2_cache_access(&m, BASE + (uint64_t)i * 16 * KIB, 8, IT2_ACC_LOAD, NULL);
	struct it2_tlb_counts t = m.cnt.dtlb[0];
	it2_cache_destroy(&m);
	return t;
}

START_TEST(the_l1_dtlb_holds_32_pages_and_the_l2_dtlb_128)
{
	struct it2_tlb_counts t;
	/* LRU, fully associative: a cycle of n entries hits iff n <= entries. */
	t = pages_twice(32);
	ck_assert_uint_eq(t.l1_hits, 32);
	ck_assert_uint_eq(t.l2_hits + t.walks, 0);
	t = pages_twice(33);
	ck_assert_uint_eq(t.l1_hits, 0);
	ck_assert_uint_eq(t.l2_hits, 33);
	ck_assert_uint_eq(t.walks, 0);
	t = pages_twice(128);
	ck_assert_uint_eq(t.l2_hits, 128);
	ck_assert_uint_eq(t.walks, 0);
	t = pages_twice(129);
	ck_assert_uint_eq(t.l1_hits + t.l2_hits, 0);
	ck_assert_uint_eq(t.walks, 129);
}
END_TEST

START_TEST(tlb_penalties_add_to_the_latency)
{
	struct it2_cache m;
	struct it2_cache_outcome o;
	madison(&m);
	it2_cache_access(&m, BASE, 8, IT2_ACC_LOAD, &o);           /* walk, memory */
	ck_assert_uint_eq(o.tlb, IT2_TLB_HPW);
	ck_assert_uint_eq(o.latency, 271 + 19);
	it2_cache_access(&m, BASE + 4096, 8, IT2_ACC_LOAD, &o);    /* next 4 KiB: L2 DTLB */
	ck_assert_uint_eq(o.tlb, IT2_TLB_L2);
	ck_assert_uint_eq(o.level, IT2_CACHE_MEM);
	ck_assert_uint_eq(o.latency, 271 + 4);
	it2_cache_access(&m, BASE + 8, 8, IT2_ACC_LOAD, &o);       /* L1 DTLB, L1D */
	ck_assert_uint_eq(o.tlb, IT2_TLB_L1);
	ck_assert_uint_eq(o.level, IT2_CACHE_L1D);
	ck_assert_uint_eq(o.latency, 1);
	ck_assert_uint_eq(m.cnt.cycles[0], 290 + 275 + 1);
	it2_cache_destroy(&m);
}
END_TEST

/* ---- lines ----------------------------------------------------------------------------- */

START_TEST(a_straddling_access_counts_once_and_fills_both_lines)
{
	struct it2_cache m;
	struct it2_cache_outcome o;
	madison(&m);
	/* 8 bytes at 60: L1D lines 0 and 1 (64 bytes), both missing: one
	 * access, one miss (cachegrind's rule), both lines filled.  In L2
	 * (128-byte lines) it is within line 0. */
	it2_cache_access(&m, BASE + 60, 8, IT2_ACC_LOAD, &o);
	ck_assert_uint_eq(o.lines, 2);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_misses, 1);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, 0)->read_misses, 1);
	it2_cache_access(&m, BASE + 64, 4, IT2_ACC_LOAD, &o);
	ck_assert_uint_eq(o.lines, 1);
	ck_assert_uint_eq(o.level, IT2_CACHE_L1D);
	it2_cache_access(&m, BASE, 4, IT2_ACC_LOAD, &o);
	ck_assert_uint_eq(o.level, IT2_CACHE_L1D);
	/* 8 bytes at 124: L1D line 1 (present) and 2 (not): one miss; in L2
	 * lines 0 (present) and 1 (not): one miss, served by L3's miss. */
	it2_cache_access(&m, BASE + 124, 8, IT2_ACC_LOAD, &o);
	ck_assert_uint_eq(o.lines, 2);
	ck_assert_uint_eq(o.level, IT2_CACHE_MEM);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_misses, 2);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_hits, 2);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, 0)->read_misses, 2);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, 0)->read_hits, 0);
	/* And line 2 is in now. */
	it2_cache_access(&m, BASE + 128, 8, IT2_ACC_LOAD, &o);
	ck_assert_uint_eq(o.level, IT2_CACHE_L1D);
	/* The first line missing and the second present is a miss too: line 4
	 * (256) in, then 8 bytes at 252 (lines 3 and 4); L2 has both halves
	 * of its line 1 (128-255) and its line 2 (256-383) by then. */
	it2_cache_access(&m, BASE + 256, 8, IT2_ACC_LOAD, &o);
	it2_cache_access(&m, BASE + 252, 8, IT2_ACC_LOAD, &o);
	ck_assert_uint_eq(o.lines, 2);
	ck_assert_uint_eq(o.level, IT2_CACHE_L2);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_misses, 4);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_hits, 3);
	/* and it filled line 3 */
	it2_cache_access(&m, BASE + 192, 8, IT2_ACC_LOAD, &o);
	ck_assert_uint_eq(o.level, IT2_CACHE_L1D);
	it2_cache_destroy(&m);
}
END_TEST

START_TEST(instruction_fetches_go_through_l1i_to_l2)
{
	struct it2_cache m;
	struct it2_cache_outcome o;
	madison(&m);
	it2_cache_access(&m, BASE, 16, IT2_ACC_IFETCH, &o);
	ck_assert_uint_eq(o.level, IT2_CACHE_MEM);
	ck_assert_uint_eq(o.tlb, IT2_TLB_NONE);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1I, 0)->ifetch_misses, 1);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_misses, 0);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, 0)->ifetch_misses, 1);
	/* A data load of the line: L1D misses, L2 (unified) hits. */
	it2_cache_access(&m, BASE, 8, IT2_ACC_LOAD, &o);
	ck_assert_uint_eq(o.level, IT2_CACHE_L2);
	it2_cache_access(&m, BASE + 16, 16, IT2_ACC_IFETCH, &o);
	ck_assert_uint_eq(o.level, IT2_CACHE_L1I);
	it2_cache_destroy(&m);

	/* Without an L1I, fetches are not modelled. */
	struct it2_cache_config cfg;
	it2_cache_preset(&cfg, IT2_CACHE_ITANIUM2_MADISON);
	ck_assert_int_eq(it2_cache_set_geometry(&cfg, IT2_CACHE_L1I, 0, 0, 0), 0);
	ck_assert_int_eq(it2_cache_init(&m, &cfg), 0);
	it2_cache_access(&m, BASE, 16, IT2_ACC_IFETCH, &o);
	ck_assert_uint_eq(o.level, IT2_CACHE_NONE);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, 0)->ifetch_misses, 0);
	it2_cache_destroy(&m);
}
END_TEST

/* ---- configuration ------------------------------------------------------------------- */

START_TEST(bad_geometries_are_refused_with_a_reason)
{
	struct it2_cache_config cfg;
	struct it2_cache m;
	it2_cache_preset(&cfg, IT2_CACHE_CACHEGRIND);
	ck_assert_int_eq(it2_cache_set_geometry(&cfg, IT2_CACHE_L1D, 16384, 4, 48), -EINVAL);
	ck_assert_msg(strstr(heritage_last_error(), "L1D: line size 48 is not a power of two") != NULL,
	              "%s", heritage_last_error());
	ck_assert_int_eq(it2_cache_set_geometry(&cfg, IT2_CACHE_L2, 65536, 3, 64), -EINVAL);
	ck_assert_msg(strstr(heritage_last_error(), "1024 lines are not a whole number of 3-way sets") != NULL,
	              "%s", heritage_last_error());
	ck_assert_int_eq(it2_cache_set_geometry(&cfg, IT2_CACHE_NLEVELS, 65536, 2, 64), -EINVAL);
	/* set_geometry refused them: cfg is as it was, and a bad one put in
	 * by hand is refused by init. */
	cfg.level[IT2_CACHE_L1D].ways = 5;
	ck_assert_int_eq(it2_cache_init(&m, &cfg), -EINVAL);
	cfg.level[IT2_CACHE_L1D].ways = 2;
	cfg.page_size = 3000;
	ck_assert_int_eq(it2_cache_init(&m, &cfg), -EINVAL);
	ck_assert_msg(strstr(heritage_last_error(), "page size 3000") != NULL, "%s", heritage_last_error());
	ck_assert_int_eq(it2_cache_preset(&cfg, (enum it2_cache_preset)42), -EINVAL);
	/* Hosts' geometries: a 12-way 48 KiB L1 (64 sets: lines 4096 apart
	 * share one, and 13 of them cycle out of its 12 ways under LRU), and a
	 * set count that is no power of two (1536 in a 768 KiB 8-way L2). */
	it2_cache_preset(&cfg, IT2_CACHE_CACHEGRIND);
	ck_assert_int_eq(it2_cache_set_geometry(&cfg, IT2_CACHE_L1D, 48 * KIB, 12, 64), 0);
	ck_assert_int_eq(it2_cache_set_geometry(&cfg, IT2_CACHE_L2, 3 * 256 * KIB, 12, 64), 0);   /* 1024 sets */
	ck_assert_int_eq(it2_cache_set_geometry(&cfg, IT2_CACHE_L2, 5 * 256 * KIB, 10, 64), 0);   /* 2048 sets */
	ck_assert_int_eq(it2_cache_set_geometry(&cfg, IT2_CACHE_L2, 3 * 256 * KIB, 8, 64), 0);    /* 1536: not 2^n */
	ck_assert_int_eq(it2_cache_init(&m, &cfg), 0);
	for (int round = 0; round < 2; round++)
		for (int k = 0; k < 13; k++)
			it2_cache_access(&m, BASE + (uint64_t)k * 4096, 8, IT2_ACC_LOAD, NULL);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_misses, 26);
	/* In the 1536-set L2, 4096 bytes is 64 sets: the 13 lines use 13 sets. */
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L2, 0)->read_misses, 13);
	it2_cache_destroy(&m);
}
END_TEST

START_TEST(flush_empties_the_caches_and_zero_the_counters)
{
	struct it2_cache m;
	madison(&m);
	read_array(&m, BASE, 4 * KIB, IT2_ACC_LOAD);
	it2_cache_flush(&m);
	it2_cache_counters_zero(&m);
	read_array(&m, BASE, 4 * KIB, IT2_ACC_LOAD);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_misses, 64);
	ck_assert_uint_eq(m.cnt.dtlb[0].walks, 1);
	struct it2_cache_counters c;
	it2_cache_counters_read(&m, &c);
	ck_assert_uint_eq(c.level[IT2_CACHE_L1D][0].read_hits, 512 - 64);
	it2_cache_destroy(&m);
}
END_TEST

/* The first CPU's level-1 data cache as sysfs describes it: bytes, or 0. */
static uint64_t sysfs_l1d_size(void)
{
	for (int i = 0; i < 8; i++) {
		char path[128], buf[64];
		unsigned level = 0;
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			return 0;
		int ok = fscanf(f, "%u", &level) == 1;
		fclose(f);
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
		if (!ok || level != 1 || (f = fopen(path, "r")) == NULL)
			continue;
		ok = fgets(buf, sizeof buf, f) != NULL && strncmp(buf, "Data", 4) == 0;
		fclose(f);
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		if (!ok || (f = fopen(path, "r")) == NULL)
			continue;
		unsigned long kib = 0;
		ok = fscanf(f, "%luK", &kib) == 1;
		fclose(f);
		return ok ? (uint64_t)kib * 1024 : 0;
	}
	return 0;
}

START_TEST(the_host_geometry_comes_from_hwloc)
{
	struct it2_cache_config cfg;
	struct it2_cache m;
	int r = it2_cache_config_host(&cfg);
	if (r == -ENODATA) {
		/* hwloc knows no (complete) L1D here: said so, nothing else. */
		ck_assert_msg(strstr(heritage_last_error(), "hwloc") != NULL, "%s", heritage_last_error());
		printf("test_it2_cache: host geometry: %s\n", heritage_last_error());
		return;
	}
	ck_assert_msg(r == 0, "it2_cache_config_host: %d %s", r, heritage_last_error());
	const struct it2_cache_level_config *d = &cfg.level[IT2_CACHE_L1D];
	ck_assert_uint_gt(d->size, 0);
	ck_assert_uint_eq(d->line & (d->line - 1), 0);
	uint64_t sys = sysfs_l1d_size();
	if (sys != 0)
		ck_assert_uint_eq(d->size, sys);
	ck_assert_uint_eq(cfg.page_size, (uint64_t)sysconf(_SC_PAGESIZE));
	ck_assert_int_eq(it2_cache_init(&m, &cfg), 0);
	it2_cache_access(&m, BASE, 8, IT2_ACC_LOAD, NULL);
	it2_cache_access(&m, BASE, 8, IT2_ACC_LOAD, NULL);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_misses, 1);
	ck_assert_uint_eq(lc(&m, IT2_CACHE_L1D, 0)->read_hits, 1);
	it2_cache_destroy(&m);
}
END_TEST

/* ---- equivalence with the plain implementation ------------------------------------------- */

/*
 * The model as first written (it2_cache.c before its fast paths), kept
 * here as it was but for the names and the error handling (the
 * configurations below are valid): each set an array ordered most recent
 * first under LRU (memmove on every use), NRU bits one byte a line, every
 * lookup a scan of the set.  The optimised model must give the same
 * outcome for every access and the same counters, for any stream and any
 * configuration: equivalence_with_the_plain_model runs long pseudo-random
 * streams through both, for each configuration of equiv_config.
 */
struct ref_array {
	uint64_t *tags;
	uint8_t *used;
	uint64_t set_mask;
	uint32_t sets, ways;
	unsigned line_shift;
	enum it2_cache_policy policy;
	int pow2_sets;
	unsigned flags;
};

struct ref_model {
	struct it2_cache_config cfg;
	struct ref_array lv[IT2_CACHE_NLEVELS];
	struct ref_array tlb[2];
	uint64_t last_page1;
	struct it2_cache_counters cnt;
};

static void ref_sa_init(struct ref_array *a, uint64_t size, uint32_t ways, uint32_t line,
                        enum it2_cache_policy policy, unsigned flags)
{
	memset(a, 0, sizeof *a);
	if (size == 0)
		return;
	uint64_t lines = size / line;
	a->ways = ways ? ways : (uint32_t)lines;
	a->sets = (uint32_t)(lines / a->ways);
	a->pow2_sets = (a->sets & (a->sets - 1)) == 0;
	a->set_mask = a->sets - 1u;
	a->line_shift = (unsigned)__builtin_ctzll(line);
	a->policy = policy;
	a->flags = flags;
	a->tags = calloc(lines, sizeof *a->tags);
	ck_assert_ptr_nonnull(a->tags);
	if (policy == IT2_CACHE_NRU) {
		a->used = calloc(lines, 1);
		ck_assert_ptr_nonnull(a->used);
	}
}

static void ref_sa_flush(struct ref_array *a)
{
	size_t n = (size_t)a->sets * a->ways;
	if (a->tags)
		memset(a->tags, 0, n * sizeof *a->tags);
	if (a->used)
		memset(a->used, 0, n);
}

static void ref_nru_use(uint8_t *u, uint32_t n, uint32_t w)
{
	u[w] = 1;
	for (uint32_t i = 0; i < n; i++)
		if (!u[i])
			return;
	memset(u, 0, n);
	u[w] = 1;
}

static int ref_sa_ref(struct ref_array *a, uint64_t block, int fill)
{
	uint64_t set = a->pow2_sets ? (block & a->set_mask) : (block % a->sets);
	uint32_t n = a->ways, w;
	uint64_t *t = a->tags + set * n;
	uint64_t tag = block + 1;

	if (a->policy == IT2_CACHE_LRU) {
		if (t[0] == tag)
			return 1;
		for (w = 1; w < n; w++)
			if (t[w] == tag) {
				memmove(t + 1, t, w * sizeof *t);
				t[0] = tag;
				return 1;
			}
		if (fill) {
			memmove(t + 1, t, (n - 1) * sizeof *t);
			t[0] = tag;
		}
		return 0;
	}

	uint8_t *u = a->used + set * n;
	for (w = 0; w < n; w++)
		if (t[w] == tag) {
			ref_nru_use(u, n, w);
			return 1;
		}
	if (!fill)
		return 0;
	for (w = 0; w < n && t[w] != 0; w++)
		;
	if (w == n) {
		for (w = 0; w < n && u[w]; w++)
			;
		if (w == n)
			w = 0;
	}
	t[w] = tag;
	ref_nru_use(u, n, w);
	return 0;
}

static int ref_sa_access(struct ref_array *a, uint64_t addr, unsigned size, int fill, unsigned *nlines)
{
	uint64_t b = addr >> a->line_shift, last = (addr + size - 1) >> a->line_shift;
	int hit = ref_sa_ref(a, b, fill);
	unsigned n = 1;
	while (b != last) {
		b++;
		hit &= ref_sa_ref(a, b, fill);
		n++;
	}
	*nlines = n;
	return hit;
}

static void ref_init(struct ref_model *m, const struct it2_cache_config *cfg)
{
	memset(m, 0, sizeof *m);
	m->cfg = *cfg;
	for (int l = 0; l < IT2_CACHE_NLEVELS; l++) {
		const struct it2_cache_level_config *c = &cfg->level[l];
		ref_sa_init(&m->lv[l], c->size, c->ways, c->line, c->policy, c->flags);
	}
	for (int t = 0; t < 2; t++) {
		const struct it2_tlb_config *c = &cfg->dtlb[t];
		uint32_t page = c->page ? c->page : cfg->page_size;
		ref_sa_init(&m->tlb[t], (uint64_t)c->entries * page, 0, page, c->policy, 0);
	}
}

static void ref_destroy(struct ref_model *m)
{
	for (int l = 0; l < IT2_CACHE_NLEVELS; l++) {
		free(m->lv[l].tags);
		free(m->lv[l].used);
	}
	for (int t = 0; t < 2; t++) {
		free(m->tlb[t].tags);
		free(m->tlb[t].used);
	}
}

static void ref_flush(struct ref_model *m)
{
	for (int l = 0; l < IT2_CACHE_NLEVELS; l++)
		ref_sa_flush(&m->lv[l]);
	ref_sa_flush(&m->tlb[0]);
	ref_sa_flush(&m->tlb[1]);
	m->last_page1 = 0;
}

static enum it2_tlb_outcome ref_dtlb_access(struct ref_model *m, uint64_t addr, unsigned size)
{
	struct ref_array *t1 = &m->tlb[0], *t2 = &m->tlb[1];
	uint64_t last = addr + size - 1;
	enum it2_tlb_outcome worst = IT2_TLB_L1;
	unsigned n;

	if (t1->tags == NULL) {
		if (t2->tags == NULL)
			return IT2_TLB_NONE;
		return ref_sa_access(t2, addr, size, 1, &n) ? IT2_TLB_L2 : IT2_TLB_HPW;
	}
	for (uint64_t e = addr >> t1->line_shift; e <= last >> t1->line_shift; e++) {
		if (e + 1 == m->last_page1 || ref_sa_ref(t1, e, 1))
			;
		else if (t2->tags == NULL || !ref_sa_ref(t2, (e << t1->line_shift) >> t2->line_shift, 1))
			worst = IT2_TLB_HPW;
		else if (worst == IT2_TLB_L1)
			worst = IT2_TLB_L2;
		m->last_page1 = e + 1;
	}
	return worst;
}

static void ref_access(struct ref_model *m, uint64_t addr, unsigned size, unsigned flags,
                       struct it2_cache_outcome *out)
{
	const int in = (flags & IT2_ACC_IN_RANGE) != 0;
	const int store = (flags & IT2_ACC_STORE) != 0 && !(flags & IT2_ACC_IFETCH);
	const int fp = (flags & IT2_ACC_FP) != 0;
	struct it2_cache_outcome o = { .level = IT2_CACHE_NONE, .tlb = IT2_TLB_NONE };
	int l;

	if (size == 0)
		size = 1;
	if (flags & IT2_ACC_IFETCH) {
		if (m->lv[IT2_CACHE_L1I].tags == NULL)
			goto done;
		l = IT2_CACHE_L1I;
	} else {
		o.tlb = (uint8_t)ref_dtlb_access(m, addr, size);
		switch (o.tlb) {
		case IT2_TLB_L1: m->cnt.dtlb[in].l1_hits++; break;
		case IT2_TLB_L2: m->cnt.dtlb[in].l2_hits++; break;
		case IT2_TLB_HPW: m->cnt.dtlb[in].walks++; break;
		}
		l = IT2_CACHE_L1D;
	}

	o.level = IT2_CACHE_MEM;
	for (; l < IT2_CACHE_NLEVELS; l = l == IT2_CACHE_L1I ? IT2_CACHE_L2 : l + 1) {
		struct ref_array *a = &m->lv[l];
		if (a->tags == NULL || (fp && (a->flags & IT2_LEVEL_INT_ONLY)))
			continue;
		unsigned nl;
		int hit = ref_sa_access(a, addr, size, !(store && (a->flags & IT2_LEVEL_NO_WRITE_ALLOCATE)), &nl);
		if (o.lines == 0)
			o.lines = (uint8_t)(nl > 255 ? 255 : nl);
		struct it2_cache_level_counts *c = &m->cnt.level[l][in];
		if (flags & IT2_ACC_IFETCH) {
			if (hit)
				c->ifetch_hits++;
			else
				c->ifetch_misses++;
		} else if (store) {
			if (hit)
				c->write_hits++;
			else
				c->write_misses++;
		} else if (hit) {
			c->read_hits++;
		} else {
			c->read_misses++;
		}
		if (hit && !(store && (a->flags & IT2_LEVEL_WRITE_THROUGH))) {
			o.level = (uint8_t)l;
			break;
		}
	}

	unsigned lat;
	if (o.level == IT2_CACHE_MEM) {
		lat = fp ? m->cfg.mem_latency_fp : m->cfg.mem_latency;
		m->cnt.mem[in]++;
	} else {
		lat = fp ? m->cfg.level[o.level].latency_fp : m->cfg.level[o.level].latency;
	}
	if (o.tlb == IT2_TLB_L2)
		lat += m->cfg.dtlb2_penalty;
	else if (o.tlb == IT2_TLB_HPW)
		lat += m->cfg.hpw_penalty;
	o.latency = (uint16_t)(lat > UINT16_MAX ? UINT16_MAX : lat);
	m->cnt.cycles[in] += o.latency;
done:
	if (out)
		*out = o;
}

/* xorshift64*: the same stream on every run. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

/* Access flags: mostly integer loads, some stores, FP, instruction fetches;
 * in range when the address is in the lower half of its MiB (so a stream
 * walks in and out of the range). */
static unsigned rnd_flags(uint64_t *s, uint64_t addr, int mostly_loads)
{
	unsigned r = (unsigned)(rnd(s) % 100), f = IT2_ACC_LOAD;
	if (r < (mostly_loads ? 8u : 25u))
		f = IT2_ACC_STORE;
	else if (r < (mostly_loads ? 12u : 35u))
		f = IT2_ACC_FP;
	else if (r < (mostly_loads ? 14u : 42u))
		f = IT2_ACC_STORE | IT2_ACC_FP;
	else if (r < (mostly_loads ? 15u : 47u))
		f = IT2_ACC_IFETCH;
	else if (r < (mostly_loads ? 16u : 50u))
		f = IT2_ACC_IFETCH | IT2_ACC_STORE;   /* a store flag on a fetch: ignored */
	if (!(addr & (1u << 19)))
		f |= IT2_ACC_IN_RANGE;
	return f;
}

static unsigned rnd_size(uint64_t *s)
{
	static const unsigned sizes[] = { 8, 8, 8, 8, 4, 4, 2, 1, 16, 16, 0, 3, 12, 24, 32, 100, 130 };
	unsigned r = (unsigned)(rnd(s) % 1000);
	if (r == 0)
		return 20000;   /* over 255 lines, over pages */
	if (r < 4)
		return 5000;
	return sizes[r % (sizeof sizes / sizeof sizes[0])];
}

struct equiv_run {
	struct it2_cache m;
	struct ref_model r;
	uint64_t n;        /* accesses so far */
};

static void equiv_one(struct equiv_run *e, uint64_t addr, unsigned size, unsigned flags)
{
	struct it2_cache_outcome a, b;
	memset(&a, 0xa5, sizeof a);
	memset(&b, 0x5a, sizeof b);
	it2_cache_access(&e->m, addr, size, flags, &a);
	ref_access(&e->r, addr, size, flags, &b);
	if (a.level != b.level || a.tlb != b.tlb || a.lines != b.lines || a.latency != b.latency)
		ck_abort_msg("access %llu (addr %#llx size %u flags %#x): level %u/%u tlb %u/%u lines %u/%u latency %u/%u "
		             "(model/reference)",
		             (unsigned long long)e->n, (unsigned long long)addr, size, flags, a.level, b.level, a.tlb, b.tlb,
		             a.lines, b.lines, a.latency, b.latency);
	if (!(e->n & 1023) || (flags & IT2_ACC_IFETCH)) {   /* now and then: no outcome wanted */
		it2_cache_access(&e->m, addr, size, flags & ~IT2_ACC_STORE, NULL);
		ref_access(&e->r, addr, size, flags & ~IT2_ACC_STORE, NULL);
	}
	e->n++;
}

static void equiv_counters(const struct equiv_run *e, const char *when)
{
	struct it2_cache_counters c;
	it2_cache_counters_read(&e->m, &c);
	if (memcmp(&c, &e->r.cnt, sizeof c) != 0) {
		const uint64_t *x = (const uint64_t *)&c, *y = (const uint64_t *)&e->r.cnt;
		for (size_t i = 0; i < sizeof c / sizeof *x; i++)
			if (x[i] != y[i])
				ck_abort_msg("%s, after %llu accesses: counter word %zu is %llu, the reference's %llu", when,
				             (unsigned long long)e->n, i, (unsigned long long)x[i], (unsigned long long)y[i]);
	}
}

/* A stream of about n accesses over a region of `span` bytes at BASE:
 * sequential runs (one stream, or two interleaved as a[i] + b[i], forward
 * or back, 8 bytes or a line apart), random single accesses, accesses at
 * the last bytes of lines and pages (straddling), and, half-way, a flush
 * and a zeroing of the counters. */
static void equiv_stream(const struct it2_cache_config *cfg, uint64_t n, uint64_t span, uint64_t seed)
{
	struct equiv_run *e = calloc(1, sizeof *e);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(it2_cache_init(&e->m, cfg), 0);
	ref_init(&e->r, cfg);
	uint64_t s = seed, flushed = 0;

	while (e->n < n) {
		if (!flushed && e->n >= n / 2) {
			/* The same line and page just before and after. */
			uint64_t x = BASE + (rnd(&s) % span);
			equiv_one(e, x, 8, IT2_ACC_LOAD);
			equiv_counters(e, "before the flush");
			it2_cache_flush(&e->m);
			ref_flush(&e->r);
			equiv_one(e, x, 8, IT2_ACC_LOAD);
			if (rnd(&s) & 1) {
				it2_cache_counters_zero(&e->m);
				memset(&e->r.cnt, 0, sizeof e->r.cnt);
			}
			flushed = 1;
		}
		unsigned kind = (unsigned)(rnd(&s) % 18);
		uint64_t a = BASE + (rnd(&s) % span);
		if (kind < 6) {            /* one sequential run */
			uint64_t len = 1 + rnd(&s) % 600;
			int64_t step = (rnd(&s) % 4 == 0) ? 64 : 8;
			if (rnd(&s) % 4 == 0)
				step = -step;
			unsigned size = (rnd(&s) % 8) ? 8 : rnd_size(&s);
			a &= ~7ull;
			for (uint64_t i = 0; i < len; i++, a += (uint64_t)step)
				equiv_one(e, a, size, rnd_flags(&s, a, 1));
		} else if (kind < 10) {    /* two interleaved, a[i] + b[i] */
			uint64_t b = BASE + (rnd(&s) % span), len = 1 + rnd(&s) % 1000;
			a &= ~7ull;
			b &= ~7ull;
			for (uint64_t i = 0; i < len; i++) {
				equiv_one(e, a + 8 * i, 8, rnd_flags(&s, a + 8 * i, 1));
				equiv_one(e, b + 8 * i, 8, rnd_flags(&s, b + 8 * i, 1));
			}
		} else if (kind < 12) {    /* random, all sizes */
			for (int i = 0; i < 64; i++) {
				uint64_t x = BASE + (rnd(&s) % span);
				equiv_one(e, x, rnd_size(&s), rnd_flags(&s, x, 0));
			}
		} else if (kind < 14) {    /* the last bytes of a line or a page */
			uint64_t gran = (rnd(&s) & 1) ? 64 : 4096;
			for (int i = 0; i < 16; i++) {
				uint64_t x = ((a + (uint64_t)i * gran) | (gran - 1)) - rnd(&s) % 8;
				equiv_one(e, x, rnd_size(&s), rnd_flags(&s, x, 0));
			}
		} else if (kind < 16) {    /* a few loads in each of 16 to 160 pages, round and round */
			uint64_t pages = 16 + rnd(&s) % 145, page = (rnd(&s) & 1) ? 4096 : 16384;
			uint64_t rounds = 2 + rnd(&s) % 4, per = 1 + rnd(&s) % 4;
			a &= ~(page - 1);
			for (uint64_t r = 0; r < rounds; r++)
				for (uint64_t p = 0; p < pages; p++)
					for (uint64_t i = 0; i < per; i++) {
						uint64_t x = a + p * page + 8 * ((r + i) % 8);
						equiv_one(e, x, 8, rnd_flags(&s, x, 1));
					}
		} else {                   /* a small hot set, again and again */
			uint64_t lines[8];
			for (int k = 0; k < 8; k++)
				lines[k] = (BASE + (rnd(&s) % span)) & ~63ull;
			for (int i = 0; i < 256; i++) {
				uint64_t x = lines[rnd(&s) % 8] + 8 * (rnd(&s) % 8);
				equiv_one(e, x, 8, rnd_flags(&s, x, 1));
			}
		}
		if ((e->n & 0xffff) < 64)
			equiv_counters(e, "during the stream");
	}
	equiv_counters(e, "at the end");
	it2_cache_destroy(&e->m);
	ref_destroy(&e->r);
	free(e);
}

#define MIB (1024u * 1024u)

/* The configurations: the presets, and variants that take every path of
 * the optimised model (each fast-path kind, none, predictors, NRU masks of
 * one word and of several, one way, sets not a power of two). */
static void equiv_config(int which, struct it2_cache_config *cfg, const char **name)
{
	switch (which) {
	case 0:
		*name = "Madison";
		it2_cache_preset(cfg, IT2_CACHE_ITANIUM2_MADISON);
		break;
	case 1:
		*name = "cachegrind";
		it2_cache_preset(cfg, IT2_CACHE_CACHEGRIND);
		break;
	case 2:
		*name = "cachegrind, D1 16 KiB 4-way, LL 768 KiB 12-way";
		it2_cache_preset(cfg, IT2_CACHE_CACHEGRIND);
		it2_cache_set_geometry(cfg, IT2_CACHE_L1D, 16 * KIB, 4, 64);
		it2_cache_set_geometry(cfg, IT2_CACHE_L2, 768 * KIB, 12, 64);
		break;
	case 3:
		*name = "cachegrind, D1 48 KiB 12-way, LL 768 KiB 8-way (1536 sets), I1 32 KiB 8-way";
		it2_cache_preset(cfg, IT2_CACHE_CACHEGRIND);
		it2_cache_set_geometry(cfg, IT2_CACHE_L1D, 48 * KIB, 12, 64);
		it2_cache_set_geometry(cfg, IT2_CACHE_L2, 768 * KIB, 8, 64);
		it2_cache_set_geometry(cfg, IT2_CACHE_L1I, 32 * KIB, 8, 64);
		break;
	case 4:
		*name = "Madison, all LRU (L1D LRU, L1 DTLB LRU)";
		it2_cache_preset(cfg, IT2_CACHE_ITANIUM2_MADISON);
		for (int l = 0; l < IT2_CACHE_NLEVELS; l++)
			cfg->level[l].policy = IT2_CACHE_LRU;
		break;
	case 5:
		*name = "Madison, L1D LRU, DTLBs NRU (the L2 DTLB's 128 entries: two words)";
		it2_cache_preset(cfg, IT2_CACHE_ITANIUM2_MADISON);
		cfg->level[IT2_CACHE_L1D].policy = IT2_CACHE_LRU;
		cfg->dtlb[0].policy = cfg->dtlb[1].policy = IT2_CACHE_NRU;
		break;
	case 6:
		*name = "Madison, DTLBs NRU, L1 DTLB 100 entries, L2 DTLB 70";
		it2_cache_preset(cfg, IT2_CACHE_ITANIUM2_MADISON);
		cfg->dtlb[0].policy = cfg->dtlb[1].policy = IT2_CACHE_NRU;
		cfg->dtlb[0].entries = 100;
		cfg->dtlb[1].entries = 70;
		break;
	case 7:
		*name = "Madison, no L1 DTLB (the L2 DTLB only), L1D direct-mapped";
		it2_cache_preset(cfg, IT2_CACHE_ITANIUM2_MADISON);
		cfg->dtlb[0].entries = 0;
		it2_cache_set_geometry(cfg, IT2_CACHE_L1D, 16 * KIB, 1, 64);
		break;
	case 8:
		*name = "Madison, no DTLB, L1D 2 KiB fully associative (32 ways), L2 16 KiB fully associative NRU (128 ways)";
		it2_cache_preset(cfg, IT2_CACHE_ITANIUM2_MADISON);
		cfg->dtlb[0].entries = cfg->dtlb[1].entries = 0;
		it2_cache_set_geometry(cfg, IT2_CACHE_L1D, 2 * KIB, 0, 64);
		it2_cache_set_geometry(cfg, IT2_CACHE_L2, 16 * KIB, 0, 128);
		break;
	case 9:
		*name = "LRU, L1D 4 KiB fully associative (64 ways), L2 12 KiB 6-way, L3 12 KiB 4-way (48 sets), "
		        "direct-mapped L1I, L1 DTLB 24 entries";
		it2_cache_preset(cfg, IT2_CACHE_CACHEGRIND);
		it2_cache_set_geometry(cfg, IT2_CACHE_L1D, 4 * KIB, 0, 64);
		it2_cache_set_geometry(cfg, IT2_CACHE_L2, 12 * KIB, 6, 64);
		it2_cache_set_geometry(cfg, IT2_CACHE_L3, 12 * KIB, 4, 64);
		cfg->level[IT2_CACHE_L3].policy = IT2_CACHE_LRU;
		it2_cache_set_geometry(cfg, IT2_CACHE_L1I, 4 * KIB, 1, 64);
		cfg->dtlb[0] = (struct it2_tlb_config){ .entries = 24, .page = 4096, .policy = IT2_CACHE_LRU };
		break;
	case 10:
		*name = "Madison, L1D 12 KiB 4-way (48 sets: no fast path), L1D line 128, no L3";
		it2_cache_preset(cfg, IT2_CACHE_ITANIUM2_MADISON);
		it2_cache_set_geometry(cfg, IT2_CACHE_L1D, 12 * KIB, 4, 128);
		it2_cache_set_geometry(cfg, IT2_CACHE_L3, 0, 0, 0);
		break;
	case 11:
		*name = "Madison, L1D lines 8 KiB (larger than the L1 DTLB's 4 KiB pages)";
		it2_cache_preset(cfg, IT2_CACHE_ITANIUM2_MADISON);
		it2_cache_set_geometry(cfg, IT2_CACHE_L1D, 64 * KIB, 2, 8192);
		break;
	case 12:
		*name = "Madison, DTLBs NRU (L1D and L1 DTLB NRU)";
		it2_cache_preset(cfg, IT2_CACHE_ITANIUM2_MADISON);
		cfg->dtlb[0].policy = cfg->dtlb[1].policy = IT2_CACHE_NRU;
		break;
	case 13:
		*name = "Madison, L1 DTLB of one entry, L2 DTLB of two";
		it2_cache_preset(cfg, IT2_CACHE_ITANIUM2_MADISON);
		cfg->dtlb[0].entries = 1;
		cfg->dtlb[1].entries = 2;
		break;
	case 14:
		*name = "Madison, L1 DTLB of two entries, L1D 8 KiB 2-way";
		it2_cache_preset(cfg, IT2_CACHE_ITANIUM2_MADISON);
		cfg->dtlb[0].entries = 2;
		it2_cache_set_geometry(cfg, IT2_CACHE_L1D, 8 * KIB, 2, 64);
		break;
	case 15:
		*name = "host";
		if (it2_cache_config_host(cfg) != 0) {
			*name = NULL;
			return;
		}
		/* and a TLB, with sets of one way and of several */
		cfg->dtlb[0] = (struct it2_tlb_config){ .entries = 64, .page = 0, .policy = IT2_CACHE_LRU };
		break;
	}
}

#define EQUIV_CONFIGS 16

START_TEST(equivalence_with_the_plain_model)
{
	struct it2_cache_config cfg;
	const char *name = NULL;
	equiv_config(_i, &cfg, &name);
	if (name == NULL)
		return;   /* no host geometry here */
	/* Over 6 MiB (L2 DTLB reach 2 MiB, L3 3 MiB), over 48 MiB (mostly
	 * misses, walks) and over 1 MiB (mostly hits: the fast path). */
	equiv_stream(&cfg, 300000, 6 * MIB, 0x9e3779b97f4a7c15ull ^ (uint64_t)_i);
	equiv_stream(&cfg, 100000, 48 * MIB, 0x243f6a8885a308d3ull + (uint64_t)_i);
	equiv_stream(&cfg, 100000, 1 * MIB, 0x13198a2e03707344ull + (uint64_t)_i);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("it2_cache");
	TCase *tc = tcase_create("hierarchy");
	tcase_add_test(tc, an_array_twice_the_l1d_misses_every_line_every_pass);
	tcase_add_test(tc, an_array_half_the_l1d_misses_only_the_first_pass);
	tcase_add_test(tc, a_store_does_not_allocate_in_l1d);
	tcase_add_test(tc, fp_loads_bypass_l1d);
	tcase_add_test(tc, five_lines_in_a_four_way_set_always_miss_under_lru);
	tcase_add_test(tc, nru_evicts_the_first_line_not_used_since_the_bits_were_cleared);
	tcase_add_test(tc, counters_split_by_range_while_the_state_sees_everything);
	tcase_add_test(tc, a_straddling_access_counts_once_and_fills_both_lines);
	tcase_add_test(tc, instruction_fetches_go_through_l1i_to_l2);
	suite_add_tcase(s, tc);
	tc = tcase_create("tlb");
	tcase_add_test(tc, the_l1_dtlb_holds_32_pages_and_the_l2_dtlb_128);
	tcase_add_test(tc, tlb_penalties_add_to_the_latency);
	suite_add_tcase(s, tc);
	tc = tcase_create("config");
	tcase_add_test(tc, bad_geometries_are_refused_with_a_reason);
	tcase_add_test(tc, flush_empties_the_caches_and_zero_the_counters);
	tcase_add_test(tc, the_host_geometry_comes_from_hwloc);
	suite_add_tcase(s, tc);
	tc = tcase_create("equivalence");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, equivalence_with_the_plain_model, 0, EQUIV_CONFIGS);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
