/*
 * Unit tests for src/rangemap: the libpfm-3 Itanium 2 range decomposition.
 *
 * The reference numbers come from PAPI 3.5's DataRange.html (the data_range
 * test run on a real Itanium 2) and from doc/itanium2-ranges.md.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "rangemap/rangemap.h"

struct seed_case {
	const char *what;
	uint64_t start, end;
	uint64_t start_off, end_off;
	uint64_t actual_start, actual_end;
};

/* The nine requests of the data_range test and what PAPI printed for them. */
static const struct seed_case seed_cases[] = {
	{ "pointer 1", 0x6000000000011640, 0x6000000000011648, 0x0, 0x0,
	  0x6000000000011640, 0x6000000000011648 },
	{ "pointer 2", 0x6000000000011628, 0x6000000000011630, 0x0, 0x0,
	  0x6000000000011628, 0x6000000000011630 },
	{ "pointer 3", 0x6000000000011638, 0x6000000000011640, 0x0, 0x0,
	  0x6000000000011638, 0x6000000000011640 },
	{ "malloc 1", 0x6000000004044010, 0x6000000004054010, 0x10, 0x0,
	  0x6000000004044000, 0x6000000004054010 },
	{ "malloc 2", 0x6000000004054020, 0x6000000004064020, 0x20, 0x0,
	  0x6000000004054000, 0x6000000004064020 },
	{ "malloc 3", 0x6000000004064030, 0x6000000004074030, 0x30, 0x10,
	  0x6000000004064000, 0x6000000004074040 },
	{ "static 1", 0x60000000000218cc, 0x60000000000318cc, 0x18cc, 0x734,
	  0x6000000000020000, 0x6000000000032000 },
	{ "static 2", 0x60000000000118cc, 0x60000000000218cc, 0x18cc, 0x734,
	  0x6000000000010000, 0x6000000000022000 },
	{ "static 3", 0x60000000000318cc, 0x60000000000418cc, 0x18cc, 0x734,
	  0x6000000000030000, 0x6000000000042000 },
};
#define N_SEED_CASES ((int)(sizeof(seed_cases) / sizeof(seed_cases[0])))

static uint64_t block_size(const struct rangemap_pair *p)
{
	return (uint64_t)1 << p->log2size;
}

static uint64_t block_start(const struct rangemap_pair *p)
{
	return p->base & ~(block_size(p) - 1);
}

START_TEST(test_seed_case)
{
	const struct seed_case *c = &seed_cases[_i];
	struct rangemap_result r;

	ck_assert_msg(rangemap_data(c->start, c->end, RANGEMAP_COARSE, &r) == 0,
		      "%s: rangemap_data failed", c->what);
	ck_assert_msg(r.start_off == c->start_off, "%s: start_off 0x%llx",
		      c->what, (unsigned long long)r.start_off);
	ck_assert_msg(r.end_off == c->end_off, "%s: end_off 0x%llx", c->what,
		      (unsigned long long)r.end_off);
	ck_assert_uint_eq(c->start - r.start_off, c->actual_start);
	ck_assert_uint_eq(c->end + r.end_off, c->actual_end);
	ck_assert_uint_eq(r.ncover, 1);
	ck_assert_uint_eq(r.cover[0].start, c->actual_start);
	ck_assert_uint_eq(r.cover[0].end, c->actual_end);
	ck_assert_uint_eq(r.libpfm_start_off, c->start_off);
	ck_assert_uint_eq(r.libpfm_end_off, c->end_off);
	ck_assert_int_eq(r.fine, 0);

	if (c->end - c->start == 8) {
		/* An aligned 8-byte pointer is one exact 2^3 pair. */
		ck_assert_uint_eq(r.npairs, 1);
		ck_assert_uint_eq(r.pairs[0].base, c->start);
		ck_assert_uint_eq(r.pairs[0].log2size, 3);
	}
}
END_TEST

static void assert_pairs(const struct rangemap_result *r,
			 const struct rangemap_pair *want, unsigned n)
{
	unsigned i;

	ck_assert_uint_eq(r->npairs, n);
	for (i = 0; i < n; i++) {
		ck_assert_msg(r->pairs[i].base == want[i].base &&
				      r->pairs[i].log2size == want[i].log2size,
			      "pair %u: got 0x%llx/2^%u, want 0x%llx/2^%u", i,
			      (unsigned long long)r->pairs[i].base,
			      r->pairs[i].log2size,
			      (unsigned long long)want[i].base,
			      want[i].log2size);
	}
}

START_TEST(test_worked_static)
{
	static const struct rangemap_pair want[] = {
		{ 0x6000000000028000, 15 }, /* central */
		{ 0x6000000000024000, 14 }, /* left subtree */
		{ 0x6000000000020000, 14 }, /* last pair, grown left */
		{ 0x6000000000030000, 13 }, /* last pair, grown right */
	};
	struct rangemap_result r;

	ck_assert_int_eq(rangemap_data(0x60000000000218cc, 0x60000000000318cc,
				       RANGEMAP_COARSE, &r),
			 0);
	assert_pairs(&r, want, 4);
	ck_assert_uint_eq(r.start_off, 0x18cc);
	ck_assert_uint_eq(r.end_off, 0x734);
}
END_TEST

START_TEST(test_worked_malloc)
{
	static const struct rangemap_pair want[] = {
		{ 0x6000000004068000, 15 },
		{ 0x6000000004064000, 14 },
		{ 0x6000000004070000, 14 },
		{ 0x6000000004074000, 6 },
	};
	struct rangemap_result r;

	ck_assert_int_eq(rangemap_data(0x6000000004064030, 0x6000000004074030,
				       RANGEMAP_COARSE, &r),
			 0);
	assert_pairs(&r, want, 4);
	ck_assert_uint_eq(r.start_off, 0x30);
	ck_assert_uint_eq(r.end_off, 0x10);
	ck_assert_uint_eq(r.ncover, 1);
	ck_assert_uint_eq(r.cover[0].start, 0x6000000004064000);
	ck_assert_uint_eq(r.cover[0].end, 0x6000000004074040);
}
END_TEST

START_TEST(test_data_exact)
{
	struct rangemap_result r;

	ck_assert_int_eq(rangemap_data(0x60000000000218cc, 0x60000000000318cc,
				       RANGEMAP_EXACT, &r),
			 0);
	ck_assert_uint_eq(r.npairs, 0);
	ck_assert_uint_eq(r.start_off, 0);
	ck_assert_uint_eq(r.end_off, 0);
	ck_assert_uint_eq(r.ncover, 1);
	ck_assert_uint_eq(r.cover[0].start, 0x60000000000218cc);
	ck_assert_uint_eq(r.cover[0].end, 0x60000000000318cc);
}
END_TEST

START_TEST(test_bad_input)
{
	struct rangemap_result r;
	int mode;

	for (mode = RANGEMAP_COARSE; mode <= RANGEMAP_EXACT; mode++) {
		ck_assert_int_eq(rangemap_data(0, 0, mode, &r), -EINVAL);
		ck_assert_int_eq(rangemap_data(0x1000, 0x1000, mode, &r),
				 -EINVAL);
		ck_assert_int_eq(rangemap_data(0x2000, 0x1000, mode, &r),
				 -EINVAL);
		ck_assert_int_eq(rangemap_instr(0, 0, mode, 0, &r), -EINVAL);
		ck_assert_int_eq(rangemap_instr(0x1000, 0x1000, mode, 0, &r),
				 -EINVAL);
		ck_assert_int_eq(rangemap_instr(0x2000, 0x1000, mode, 1, &r),
				 -EINVAL);
	}
	ck_assert_int_eq(rangemap_data(0x1000, 0x2000, RANGEMAP_COARSE, NULL),
			 -EINVAL);
	ck_assert_int_eq(rangemap_data(0x1000, 0x2000, (enum rangemap_mode)7,
				       &r),
			 -EINVAL);
}
END_TEST

START_TEST(test_out_of_range)
{
	struct rangemap_result r;

	/* A debug-register mask has 56 bits. */
	ck_assert_int_eq(rangemap_data(0, (uint64_t)1 << 60, RANGEMAP_COARSE,
				       &r),
			 -ERANGE);
	ck_assert_int_eq(rangemap_instr(0x10, (uint64_t)1 << 58,
					RANGEMAP_COARSE, 0, &r),
			 -ERANGE);
	/* The cover would end at 2^64. */
	ck_assert_int_eq(rangemap_data(UINT64_MAX - 15, UINT64_MAX,
				       RANGEMAP_COARSE, &r),
			 -ERANGE);
	ck_assert_int_eq(rangemap_instr(UINT64_MAX - 0x1000, UINT64_MAX - 3,
					RANGEMAP_COARSE, 0, &r),
			 -ERANGE);
	/* Exact mode has no blocks to outgrow. */
	ck_assert_int_eq(rangemap_data(UINT64_MAX - 15, UINT64_MAX,
				       RANGEMAP_EXACT, &r),
			 0);
}
END_TEST

START_TEST(test_instr_fine)
{
	struct rangemap_result r;

	ck_assert_int_eq(rangemap_instr(0x400123, 0x400456, RANGEMAP_COARSE, 0,
					&r),
			 0);
	ck_assert_int_eq(r.fine, 1);
	ck_assert_uint_eq(r.npairs, 0);
	ck_assert_uint_eq(r.start_off, 0x3); /* down to bundle 0x400120 */
	ck_assert_uint_eq(r.end_off, 0xa);   /* up to bundle end 0x400460 */
	ck_assert_uint_eq(r.ncover, 1);
	ck_assert_uint_eq(r.cover[0].start, 0x400120);
	ck_assert_uint_eq(r.cover[0].end, 0x400460);
	ck_assert_uint_eq(r.libpfm_start_off, 0);
	ck_assert_uint_eq(r.libpfm_end_off, 0);

	/* Bundle-aligned: fine mode is exact. */
	ck_assert_int_eq(rangemap_instr(0x400100, 0x400200, RANGEMAP_COARSE, 1,
					&r),
			 0);
	ck_assert_int_eq(r.fine, 1);
	ck_assert_uint_eq(r.start_off, 0);
	ck_assert_uint_eq(r.end_off, 0);

	/* With the Itanium 2 erratum the bounds are 32-byte granular. */
	ck_assert_int_eq(rangemap_instr_flags(0x400010, 0x400030,
					      RANGEMAP_COARSE,
					      RANGEMAP_INSTR_FINE_ERRATUM, &r),
			 0);
	ck_assert_int_eq(r.fine, 1);
	ck_assert_uint_eq(r.cover[0].start, 0x400000);
	ck_assert_uint_eq(r.cover[0].end, 0x400040);
	ck_assert_uint_eq(r.start_off, 0x10);
	ck_assert_uint_eq(r.end_off, 0x10);

	/* NO_FINE forces the single coarse pair; this range is one exact
	 * aligned 256-byte block. */
	ck_assert_int_eq(rangemap_instr_flags(0x400100, 0x400200,
					      RANGEMAP_COARSE,
					      RANGEMAP_INSTR_NO_FINE, &r),
			 0);
	ck_assert_int_eq(r.fine, 0);
	ck_assert_uint_eq(r.npairs, 1);
	ck_assert_uint_eq(r.pairs[0].base, 0x400100);
	ck_assert_uint_eq(r.pairs[0].log2size, 8);
	ck_assert_uint_eq(r.start_off, 0);
	ck_assert_uint_eq(r.end_off, 0);
}
END_TEST

START_TEST(test_instr_single)
{
	struct rangemap_result r;

	/* 0x18 bytes straddling a page boundary need a 16 KiB block. */
	ck_assert_int_eq(rangemap_instr(0x401ff8, 0x402010, RANGEMAP_COARSE, 0,
					&r),
			 0);
	ck_assert_int_eq(r.fine, 0);
	ck_assert_uint_eq(r.npairs, 1);
	ck_assert_uint_eq(r.pairs[0].base, 0x400000);
	ck_assert_uint_eq(r.pairs[0].log2size, 14);
	ck_assert_uint_eq(r.start_off, 0x1ff8);
	ck_assert_uint_eq(r.end_off, 0x1ff0);
	ck_assert_uint_eq(r.libpfm_start_off, 0x1ff0);
	ck_assert_uint_eq(r.libpfm_end_off, 0x1ff0);
	ck_assert_uint_eq(r.ncover, 1);
	ck_assert_uint_eq(r.cover[0].start, 0x400000);
	ck_assert_uint_eq(r.cover[0].end, 0x404000);

	/* A whole page: libpfm tests the exclusive end, which is on the next
	 * page, so not fine mode; the page itself is one exact pair. */
	ck_assert_int_eq(rangemap_instr(0x1000, 0x2000, RANGEMAP_COARSE, 0,
					&r),
			 0);
	ck_assert_int_eq(r.fine, 0);
	ck_assert_uint_eq(r.npairs, 1);
	ck_assert_uint_eq(r.pairs[0].base, 0x1000);
	ck_assert_uint_eq(r.pairs[0].log2size, 12);
	ck_assert_uint_eq(r.start_off, 0);
	ck_assert_uint_eq(r.end_off, 0);
}
END_TEST

START_TEST(test_instr_tagged)
{
	static const struct rangemap_pair want[] = {
		{ 0x402000, 4 },
		{ 0x401ff0, 4 },
	};
	struct rangemap_result r;

	ck_assert_int_eq(rangemap_instr(0x401ff8, 0x402010, RANGEMAP_COARSE, 1,
					&r),
			 0);
	ck_assert_int_eq(r.fine, 0);
	assert_pairs(&r, want, 2);
	ck_assert_uint_eq(r.start_off, 0x8);
	ck_assert_uint_eq(r.end_off, 0x0);
	ck_assert_uint_eq(r.ncover, 1);
	ck_assert_uint_eq(r.cover[0].start, 0x401ff0);
	ck_assert_uint_eq(r.cover[0].end, 0x402010);

	/* The seed's first static array as code: rounded to bundles it is
	 * [...218c0, ...318d0); its four pairs end up with the same cover
	 * as the data request. */
	ck_assert_int_eq(rangemap_instr(0x60000000000218cc, 0x60000000000318cc,
					RANGEMAP_COARSE, 1, &r),
			 0);
	ck_assert_uint_eq(r.npairs, 4);
	ck_assert_uint_eq(r.ncover, 1);
	ck_assert_uint_eq(r.start_off, 0x18cc);
	ck_assert_uint_eq(r.end_off, 0x734);
	ck_assert_uint_eq(r.cover[0].start, 0x6000000000020000);
	ck_assert_uint_eq(r.cover[0].end, 0x6000000000032000);
}
END_TEST

START_TEST(test_instr_exact)
{
	struct rangemap_result r;

	ck_assert_int_eq(rangemap_instr(0x401ff8, 0x402013, RANGEMAP_EXACT, 0,
					&r),
			 0);
	ck_assert_int_eq(r.fine, 0);
	ck_assert_uint_eq(r.npairs, 0);
	ck_assert_uint_eq(r.start_off, 0);
	ck_assert_uint_eq(r.end_off, 0);
	ck_assert_uint_eq(r.ncover, 1);
	ck_assert_uint_eq(r.cover[0].start, 0x401ff8);
	ck_assert_uint_eq(r.cover[0].end, 0x402013);
}
END_TEST

START_TEST(test_cover_overlaps)
{
	struct rangemap_result r;

	ck_assert_int_eq(rangemap_data(0x6000000004064030, 0x6000000004074030,
				       RANGEMAP_COARSE, &r),
			 0);
	/* cover is [0x6000000004064000, 0x6000000004074040) */
	ck_assert_int_eq(rangemap_cover_overlaps(&r, 0x6000000004063ff8, 8), 0);
	ck_assert_int_eq(rangemap_cover_overlaps(&r, 0x6000000004063ff8, 9), 1);
	ck_assert_int_eq(rangemap_cover_overlaps(&r, 0x6000000004064000, 1), 1);
	ck_assert_int_eq(rangemap_cover_overlaps(&r, 0x600000000407403f, 1), 1);
	ck_assert_int_eq(rangemap_cover_overlaps(&r, 0x6000000004074040, 8), 0);
	ck_assert_int_eq(rangemap_cover_overlaps(&r, 0x6000000004070000, 0), 0);
	ck_assert_int_eq(rangemap_cover_overlaps(&r, 0, UINT64_MAX), 1);
	ck_assert_int_eq(rangemap_cover_overlaps(&r, 0x6000000004070000,
						 UINT64_MAX),
			 1);
	ck_assert_int_eq(rangemap_cover_overlaps(&r, 0x7000000000000000,
						 UINT64_MAX),
			 0);
}
END_TEST

/* splitmix64: deterministic and the same everywhere. */
static uint64_t rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Sizes from 1 byte to 2^40, log-uniform; starts below 2^47 with a random
 * number of low zero bits. */
static void random_range(uint64_t *state, uint64_t *start, uint64_t *end)
{
	unsigned k = (unsigned)(rng_next(state) % 41);
	unsigned align = (unsigned)(rng_next(state) % 25);
	uint64_t size = ((uint64_t)1 << k) +
			(rng_next(state) & (((uint64_t)1 << k) - 1));

	if (size > (uint64_t)1 << 40)
		size = (uint64_t)1 << 40;
	*start = (rng_next(state) & (((uint64_t)1 << 47) - 1)) &
		 ~(((uint64_t)1 << align) - 1);
	*end = *start + size;
}

/*
 * Properties every coarse cover must have; checked independently of the
 * library's own sort/merge.  [start, end) is the range the cover must contain
 * (for code, the bundle-rounded request).
 */
static void check_coarse_cover(const struct rangemap_result *r, uint64_t start,
			       uint64_t end, unsigned min_log2)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	unsigned i, j;

	ck_assert_uint_ge(r->npairs, 1);
	ck_assert_uint_le(r->npairs, RANGEMAP_MAX_PAIRS);
	ck_assert_uint_ge(r->ncover, 1);
	ck_assert_uint_le(r->ncover, r->npairs);

	for (i = 0; i < r->npairs; i++) {
		const struct rangemap_pair *p = &r->pairs[i];
		uint64_t bs = block_start(p), be = bs + block_size(p);

		ck_assert_uint_ge(p->log2size, min_log2);
		ck_assert_uint_le(p->log2size, RANGEMAP_MAX_LOG2SIZE);
		/* One interval with four pairs never yields an unaligned base,
		 * so libpfm's own offsets are the true ones. */
		ck_assert_uint_eq(p->base, bs);
		if (bs < lo)
			lo = bs;
		if (be > hi)
			hi = be;
		/* every block lies inside one cover interval */
		for (j = 0; j < r->ncover; j++)
			if (r->cover[j].start <= bs && be <= r->cover[j].end)
				break;
		ck_assert_msg(j < r->ncover, "block %u outside the cover", i);
	}

	for (j = 0; j < r->ncover; j++) {
		uint64_t cs = r->cover[j].start, ce = r->cover[j].end;
		int starts_block = 0, ends_block = 0;

		ck_assert_uint_lt(cs, ce);
		if (j > 0) /* sorted and merged: a gap between neighbours */
			ck_assert_uint_gt(cs, r->cover[j - 1].end);
		for (i = 0; i < r->npairs; i++) {
			uint64_t bs = block_start(&r->pairs[i]);
			uint64_t be = bs + block_size(&r->pairs[i]);

			starts_block |= bs == cs;
			ends_block |= be == ce;
			/* no hole: each block end inside the interval is
			 * continued by some block */
			if (be > cs && be < ce) {
				unsigned k;

				for (k = 0; k < r->npairs; k++) {
					uint64_t ks = block_start(&r->pairs[k]);

					if (ks <= be &&
					    be < ks + block_size(&r->pairs[k]))
						break;
				}
				ck_assert_msg(k < r->npairs,
					      "hole at 0x%llx in cover",
					      (unsigned long long)be);
			}
		}
		ck_assert(starts_block && ends_block);
	}

	/* the request is inside one cover interval */
	for (j = 0; j < r->ncover; j++)
		if (r->cover[j].start <= start && end <= r->cover[j].end)
			break;
	ck_assert_msg(j < r->ncover, "request [0x%llx,0x%llx) not covered",
		      (unsigned long long)start, (unsigned long long)end);
	/* a single request is covered by adjoining blocks */
	ck_assert_uint_eq(r->ncover, 1);

	ck_assert_uint_eq(r->cover[0].start, lo);
	ck_assert_uint_eq(r->cover[r->ncover - 1].end, hi);
}

static void check_offsets(const struct rangemap_result *r, uint64_t start,
			  uint64_t end)
{
	uint64_t lo = r->cover[0].start, hi = r->cover[r->ncover - 1].end;

	ck_assert_uint_eq(r->start_off, start - lo);
	ck_assert_uint_eq(r->end_off, hi - end);
	ck_assert_int_eq(rangemap_cover_overlaps(r, start, end - start), 1);
	ck_assert_int_eq(rangemap_cover_overlaps(r, lo, 1), 1);
	ck_assert_int_eq(rangemap_cover_overlaps(r, hi - 1, 1), 1);
	if (lo > 0)
		ck_assert_int_eq(rangemap_cover_overlaps(r, lo - 1, 1), 0);
	ck_assert_int_eq(rangemap_cover_overlaps(r, hi, 1), 0);
}

static void check_exact(const struct rangemap_result *r, uint64_t start,
			uint64_t end)
{
	ck_assert_uint_eq(r->npairs, 0);
	ck_assert_int_eq(r->fine, 0);
	ck_assert_uint_eq(r->start_off, 0);
	ck_assert_uint_eq(r->end_off, 0);
	ck_assert_uint_eq(r->ncover, 1);
	ck_assert_uint_eq(r->cover[0].start, start);
	ck_assert_uint_eq(r->cover[0].end, end);
}

#define N_RANDOM 20000

START_TEST(test_random_data)
{
	uint64_t state = 0x5e00251dfa89aebcull;
	int n;

	for (n = 0; n < N_RANDOM; n++) {
		struct rangemap_result r;
		uint64_t start, end;

		random_range(&state, &start, &end);
		ck_assert_int_eq(rangemap_data(start, end, RANGEMAP_COARSE, &r),
				 0);
		ck_assert_int_eq(r.fine, 0);
		check_coarse_cover(&r, start, end, 0);
		check_offsets(&r, start, end);
		ck_assert_uint_eq(r.libpfm_start_off, r.start_off);
		ck_assert_uint_eq(r.libpfm_end_off, r.end_off);

		ck_assert_int_eq(rangemap_data(start, end, RANGEMAP_EXACT, &r),
				 0);
		check_exact(&r, start, end);
	}
}
END_TEST

START_TEST(test_random_instr)
{
	uint64_t state = 0x1a2b3c4d5e6f7081ull;
	int n;

	for (n = 0; n < N_RANDOM; n++) {
		struct rangemap_result r;
		uint64_t start, end, bstart, bend;
		int tagged;

		random_range(&state, &start, &end);
		bstart = start & ~(uint64_t)0xf;
		bend = (end + 0xf) & ~(uint64_t)0xf;

		for (tagged = 0; tagged <= 1; tagged++) {
			ck_assert_int_eq(rangemap_instr(start, end,
							RANGEMAP_COARSE, tagged,
							&r),
					 0);
			if ((bstart & ~(uint64_t)0xfff) ==
			    (bend & ~(uint64_t)0xfff)) {
				ck_assert_int_eq(r.fine, 1);
				ck_assert_uint_eq(r.npairs, 0);
				ck_assert_uint_eq(r.ncover, 1);
				ck_assert_uint_eq(r.cover[0].start, bstart);
				ck_assert_uint_eq(r.cover[0].end, bend);
			} else {
				ck_assert_int_eq(r.fine, 0);
				/* IBRs see bundles: no block below 16 bytes */
				check_coarse_cover(&r, bstart, bend, 4);
				if (!tagged) {
					ck_assert_uint_eq(r.npairs, 1);
				} else {
					ck_assert_uint_eq(
						r.start_off,
						r.libpfm_start_off +
							(start - bstart));
					ck_assert_uint_eq(r.end_off,
							  r.libpfm_end_off +
								  (bend - end));
				}
			}
			check_offsets(&r, start, end);
		}

		ck_assert_int_eq(rangemap_instr(start, end, RANGEMAP_EXACT, 0,
						&r),
				 0);
		check_exact(&r, start, end);
	}
}
END_TEST

/* PAPI_HERITAGE_ITANIUM2_MODE's values (it2_set_init reads them here). */
START_TEST(test_mode_names)
{
	enum rangemap_mode m = RANGEMAP_EXACT;
	ck_assert_int_eq(rangemap_mode_parse(NULL, &m), 0);
	ck_assert_int_eq(m, RANGEMAP_COARSE);
	ck_assert_int_eq(rangemap_mode_parse("Exact", &m), 0);
	ck_assert_int_eq(m, RANGEMAP_EXACT);
	ck_assert_int_eq(rangemap_mode_parse("COARSE", &m), 0);
	ck_assert_int_eq(m, RANGEMAP_COARSE);
	ck_assert_int_eq(rangemap_mode_parse("", &m), -EINVAL);
	ck_assert_int_eq(rangemap_mode_parse("exactly", &m), -EINVAL);
	ck_assert_int_eq(rangemap_mode_parse("fine", &m), -EINVAL);
	ck_assert_int_eq(m, RANGEMAP_COARSE); /* a refused value changes nothing */
}
END_TEST

static Suite *rangemap_suite(void)
{
	Suite *s = suite_create("rangemap");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_seed_case, 0, N_SEED_CASES);
	tcase_add_test(tc, test_worked_static);
	tcase_add_test(tc, test_worked_malloc);
	tcase_add_test(tc, test_data_exact);
	tcase_add_test(tc, test_bad_input);
	tcase_add_test(tc, test_out_of_range);
	tcase_add_test(tc, test_instr_fine);
	tcase_add_test(tc, test_instr_single);
	tcase_add_test(tc, test_instr_tagged);
	tcase_add_test(tc, test_instr_exact);
	tcase_add_test(tc, test_cover_overlaps);
	tcase_add_test(tc, test_random_data);
	tcase_add_test(tc, test_random_instr);
	tcase_add_test(tc, test_mode_names);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(rangemap_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
