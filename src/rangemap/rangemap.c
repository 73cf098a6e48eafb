/*
 * rangemap: libpfm-3.x Itanium 2 address-range decomposition (see rangemap.h
 * and doc/itanium2-ranges.md).
 */
#include "rangemap.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

/* Itanium 2 fine mode compares everything above bit 11 for equality. */
#define FINE_PAGE_MASK (~(uint64_t)0xfff)

/* libpfm used getf.exp on a double, exact only below 2^53; clz is exact for
 * every 64-bit size. */
static unsigned fls64(uint64_t x)
{
	return 63u - (unsigned)__builtin_clzll(x);
}

static uint64_t pow2(unsigned p)
{
	return (uint64_t)1 << p;
}

static uint64_t align_down(uint64_t a, unsigned p)
{
	return a & ~(pow2(p) - 1);
}

static int valid_request(uint64_t start, uint64_t end, enum rangemap_mode mode,
			 const struct rangemap_result *out)
{
	if (!out || end <= start)
		return 0;
	return mode == RANGEMAP_COARSE || mode == RANGEMAP_EXACT;
}

static void set_single_cover(struct rangemap_result *out, uint64_t cover_start,
			     uint64_t cover_end, uint64_t start, uint64_t end)
{
	out->ncover = 1;
	out->cover[0].start = cover_start;
	out->cover[0].end = cover_end;
	out->start_off = start - cover_start;
	out->end_off = cover_end - end;
}

struct normal_rr {
	struct rangemap_result *out;
	int err;
};

/*
 * libpfm-3 do_normal_rr: the largest aligned power-of-two block inside
 * [start, end), then the leftover on each side with the remaining pairs.  dir
 * says which side of the parent block this chunk lies on (0 = left), because
 * a chunk that gets the last pair grows outward, away from the parent, so as
 * not to leave the request partly uncovered.
 */
static void do_normal_rr(struct normal_rr *rr, uint64_t start, uint64_t end,
			 unsigned nbr, int dir)
{
	uint64_t size, crossing, base, lsize, rsize;
	unsigned p;

	if (rr->err || nbr < 1 || end <= start)
		return;

	size = end - start;
	p = fls64(size);
	/* size <= end, so crossing >= 2^p and the subtraction cannot wrap. */
	crossing = align_down(end, p);
	if (crossing - pow2(p) >= start) {
		base = crossing - pow2(p);
	} else {
		p--;
		base = crossing + pow2(p) <= end ? crossing : crossing - pow2(p);
	}
	lsize = base - start;
	rsize = end - base - pow2(p);

	if (nbr == 1 && ((dir == 0 && lsize) || (dir == 1 && rsize))) {
		if (p + 1 > RANGEMAP_MAX_LOG2SIZE) {
			rr->err = -ERANGE;
			return;
		}
		p++;
		/*
		 * libpfm does not align the grown base.  When the chunk's outer
		 * boundary is unaligned the hardware masks the base down and the
		 * block no longer reaches that boundary; the cover is therefore
		 * always computed from base & mask.  Within one interval that
		 * starts with four pairs the boundary is always aligned (it is the
		 * edge of an ancestor's block of at least 2^p): only a later
		 * interval of a multi-interval libpfm request, starting with one
		 * pair, could hit it, and this API does not take those.
		 */
		if (dir == 0) {
			if (end < pow2(p)) {
				rr->err = -ERANGE;
				return;
			}
			base = end - pow2(p);
		} else {
			base = start;
		}
		/* The split below needs lsize/rsize only while pairs remain, and
		 * none do after growing, so they are not recomputed. */
	}
	if (p > RANGEMAP_MAX_LOG2SIZE) {
		rr->err = -ERANGE;
		return;
	}

	rr->out->pairs[rr->out->npairs].base = base;
	rr->out->pairs[rr->out->npairs].log2size = p;
	rr->out->npairs++;

	nbr--;
	if (nbr) {
		unsigned l_nbr = nbr >> 1, r_nbr = nbr >> 1;

		/* libpfm's heuristic: the odd pair goes to the bigger leftover,
		 * the right one on a tie. */
		if (nbr & 1) {
			if (lsize > rsize)
				l_nbr++;
			else
				r_nbr++;
		}
		do_normal_rr(rr, start, base, l_nbr, 0);
		do_normal_rr(rr, base + pow2(p), end, r_nbr, 1);
	}
}

/*
 * The offsets compute_normal_rr reported: from the unmasked bases, and the
 * last pair (in emission order) that qualifies wins.
 */
static void libpfm_normal_offsets(struct rangemap_result *out, uint64_t start,
				  uint64_t end)
{
	unsigned i;

	out->libpfm_start_off = out->libpfm_end_off = 0;
	for (i = 0; i < out->npairs; i++) {
		uint64_t base = out->pairs[i].base;
		uint64_t r_end = base + pow2(out->pairs[i].log2size);

		if (base <= start)
			out->libpfm_start_off = start - base;
		if (r_end >= end)
			out->libpfm_end_off = r_end - end;
	}
}

/*
 * Cover = union of the masked blocks.  Offsets are taken from the cover, not
 * from libpfm's arithmetic, so that they can never describe addresses the
 * hardware would not have matched.
 */
static int cover_from_pairs(struct rangemap_result *out, uint64_t start,
			    uint64_t end)
{
	struct rangemap_interval blocks[RANGEMAP_MAX_PAIRS];
	unsigned i, j, n = out->npairs;

	for (i = 0; i < n; i++) {
		unsigned p = out->pairs[i].log2size;
		uint64_t lo = align_down(out->pairs[i].base, p);

		/* An aligned block's last byte never wraps; its end does when it
		 * is the top of the address space, which uint64_t cannot hold. */
		if (lo + (pow2(p) - 1) == UINT64_MAX)
			return -ERANGE;
		blocks[i].start = lo;
		blocks[i].end = lo + pow2(p);
	}
	for (i = 1; i < n; i++) {
		struct rangemap_interval key = blocks[i];

		for (j = i; j > 0 && blocks[j - 1].start > key.start; j--)
			blocks[j] = blocks[j - 1];
		blocks[j] = key;
	}

	out->ncover = 0;
	for (i = 0; i < n; i++) {
		struct rangemap_interval *last =
			out->ncover ? &out->cover[out->ncover - 1] : NULL;

		if (last && blocks[i].start <= last->end) {
			if (blocks[i].end > last->end)
				last->end = blocks[i].end;
		} else {
			out->cover[out->ncover++] = blocks[i];
		}
	}

	/* Unreachable for one interval with four pairs (see do_normal_rr);
	 * refuse rather than report offsets that would have to be negative. */
	for (i = 0; i < out->ncover; i++)
		if (out->cover[i].start <= start && end <= out->cover[i].end)
			break;
	if (i == out->ncover)
		return -ERANGE;

	out->start_off = start - out->cover[0].start;
	out->end_off = out->cover[out->ncover - 1].end - end;
	return 0;
}

static int map_normal_rr(uint64_t start, uint64_t end,
			 struct rangemap_result *out)
{
	struct normal_rr rr = { .out = out, .err = 0 };

	do_normal_rr(&rr, start, end, RANGEMAP_MAX_PAIRS, 0);
	if (rr.err)
		return rr.err;
	libpfm_normal_offsets(out, start, end);
	return cover_from_pairs(out, start, end);
}

/*
 * libpfm-3 compute_single_rr: the smallest naturally aligned power-of-two
 * block holding the whole range, because non-tagged events can only be
 * qualified by IBRP0.
 */
static int map_single_rr(uint64_t start, uint64_t end,
			 struct rangemap_result *out)
{
	uint64_t size = end - start, block_start = 0;
	unsigned l = fls64(size), m;
	int found = 0;

	m = l + ((size & (pow2(l) - 1)) != 0);
	for (; m <= RANGEMAP_MAX_LOG2SIZE; m++) {
		block_start = align_down(start, m);
		/* Compared through the last byte: the end may be 2^64. */
		if (block_start + (pow2(m) - 1) >= end - 1) {
			found = 1;
			break;
		}
	}
	if (!found)
		return -ERANGE;

	out->npairs = 1;
	out->pairs[0].base = block_start;
	out->pairs[0].log2size = m;
	out->libpfm_start_off = start - block_start;
	out->libpfm_end_off = block_start + pow2(m) - end;
	return cover_from_pairs(out, start, end);
}

int rangemap_data(uint64_t start, uint64_t end, enum rangemap_mode mode,
		  struct rangemap_result *out)
{
	if (!valid_request(start, end, mode, out))
		return -EINVAL;
	memset(out, 0, sizeof(*out));

	if (mode == RANGEMAP_EXACT) {
		set_single_cover(out, start, end, start, end);
		return 0;
	}
	return map_normal_rr(start, end, out);
}

int rangemap_instr_flags(uint64_t start, uint64_t end, enum rangemap_mode mode,
			 unsigned flags, struct rangemap_result *out)
{
	uint64_t bstart, bend;
	int ret;

	if (!valid_request(start, end, mode, out))
		return -EINVAL;
	memset(out, 0, sizeof(*out));

	if (mode == RANGEMAP_EXACT) {
		set_single_cover(out, start, end, start, end);
		return 0;
	}

	if (end > UINT64_MAX - (RANGEMAP_BUNDLE - 1))
		return -ERANGE;
	bstart = start & ~(uint64_t)(RANGEMAP_BUNDLE - 1);
	bend = (end + (RANGEMAP_BUNDLE - 1)) & ~(uint64_t)(RANGEMAP_BUNDLE - 1);

	if (!(flags & RANGEMAP_INSTR_NO_FINE) &&
	    (bstart & FINE_PAGE_MASK) == (bend & FINE_PAGE_MASK)) {
		uint64_t lower = bstart;
		/* The upper bound register is inclusive, so it holds the last
		 * bundle. */
		uint64_t upper = bend - RANGEMAP_BUNDLE;

		if (flags & RANGEMAP_INSTR_FINE_ERRATUM) {
			lower = align_down(bstart, 5);
			if ((upper & 0x1f) == 0)
				upper += RANGEMAP_BUNDLE;
		}
		if (upper > UINT64_MAX - RANGEMAP_BUNDLE)
			return -ERANGE;
		out->fine = 1;
		out->libpfm_start_off = bstart - lower;
		out->libpfm_end_off = upper + RANGEMAP_BUNDLE - bend;
		set_single_cover(out, lower, upper + RANGEMAP_BUNDLE, start,
				 end);
		return 0;
	}

	if (flags & RANGEMAP_INSTR_TAGGED_ONLY)
		ret = map_normal_rr(bstart, bend, out);
	else
		ret = map_single_rr(bstart, bend, out);
	if (ret)
		return ret;
	/* libpfm saw the bundle-rounded range; PAPI's caller asked for the
	 * unrounded one, and the rounding is part of the overcount. */
	out->start_off += start - bstart;
	out->end_off += bend - end;
	return 0;
}

int rangemap_instr(uint64_t start, uint64_t end, enum rangemap_mode mode,
		   int tagged_only, struct rangemap_result *out)
{
	return rangemap_instr_flags(start, end, mode,
				    tagged_only ? RANGEMAP_INSTR_TAGGED_ONLY : 0u,
				    out);
}

int rangemap_cover_overlaps(const struct rangemap_result *r, uint64_t a,
			    uint64_t size)
{
	unsigned i;

	if (!r || size == 0)
		return 0;
	for (i = 0; i < r->ncover && i < RANGEMAP_MAX_PAIRS; i++) {
		const struct rangemap_interval *c = &r->cover[i];

		/* Written without a + size, which may wrap. */
		if (a < c->end && (c->start <= a || c->start - a < size))
			return 1;
	}
	return 0;
}

int rangemap_mode_parse(const char *name, enum rangemap_mode *mode)
{
	if (!name || strcasecmp(name, "coarse") == 0)
		*mode = RANGEMAP_COARSE;
	else if (strcasecmp(name, "exact") == 0)
		*mode = RANGEMAP_EXACT;
	else
		return -EINVAL;
	return 0;
}
