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
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
