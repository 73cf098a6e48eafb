/*
 * rangemap: turn a PAPI_DATA_ADDRESS / PAPI_INSTR_ADDRESS request into the
 * address cover an Itanium 2 running libpfm-3.x would actually have counted,
 * and the start_off/end_off PAPI reported for it.
 *
 * Coarse mode reproduces libpfm-3 (pfmlib_itanium2.c: do_normal_rr,
 * compute_normal_rr, compute_single_rr, the fine-mode test of
 * pfm_dispatch_irange) for one interval, so programs that read the offsets
 * see the numbers they saw on the real machine.  Exact mode is for backends
 * that can count any byte range (instrumentation, PT filters): the cover is
 * the request and both offsets are 0.
 *
 * The offsets always describe the cover actually computed from the masked
 * blocks: actual = [start - start_off, end + end_off).  For one interval with
 * all four pairs (the only case this API models) that is also what libpfm
 * reported; libpfm_start_off/libpfm_end_off keep libpfm's own arithmetic so
 * tests can prove it.
 *
 * Pure functions, no state.  They return 0 or a negative errno:
 *   -EINVAL  end <= start (this includes start == end == 0, which PAPI
 *            rejects), an unknown mode, or out == NULL;
 *   -ERANGE  the cover would need a block larger than 2^55 (an Itanium debug
 *            register mask has 56 bits; address bits 63:56 are always
 *            compared), or would end at 2^64, which a uint64_t end cannot
 *            express.  User-space addresses on x86-64 never get near either.
 */
#ifndef HERITAGE_RANGEMAP_H
#define HERITAGE_RANGEMAP_H

#include <stdint.h>

#define RANGEMAP_MAX_PAIRS 4

/* Largest block a debug-register pair can describe (mask bits 55:0). */
#define RANGEMAP_MAX_LOG2SIZE 55

/* Itanium IBRs ignore address bits 3:0: code is matched per 16-byte bundle. */
#define RANGEMAP_BUNDLE 16u

/*
 * One debug-register pair.  base is the value libpfm wrote into the address
 * register; the hardware matches the block [base & ~(2^p-1), that + 2^p).
 */
struct rangemap_pair {
	uint64_t base;
	unsigned log2size;
};

enum rangemap_mode { RANGEMAP_COARSE = 0, RANGEMAP_EXACT = 1 };

struct rangemap_interval {
	uint64_t start, end; /* half-open */
};

struct rangemap_result {
	/* Coarse mode only (0 in exact and fine mode), in libpfm's emission
	 * order: central block, then left subtree, then right subtree. */
	unsigned npairs;
	struct rangemap_pair pairs[RANGEMAP_MAX_PAIRS];

	/* Instruction range mapped in fine mode: the IBRP0/IBRP2 bounds
	 * registers, not coarse pairs, so npairs is 0. */
	int fine;

	/* What PAPI returns: actual = [start - start_off, end + end_off). */
	uint64_t start_off, end_off;

	/* Actual covered addresses: union of the masked blocks (or the fine /
	 * exact range), sorted, merged, half-open. */
	unsigned ncover;
	struct rangemap_interval cover[RANGEMAP_MAX_PAIRS];

	/*
	 * The offsets as libpfm-3 computed them (unmasked bases, "last
	 * qualifying pair wins"), relative to the range libpfm was given.  For
	 * instruction ranges that is the bundle-rounded range, so
	 * start_off == libpfm_start_off + (start & 0xf) and likewise at the end.
	 * Equal to start_off/end_off for data ranges; kept to show it.
	 */
	uint64_t libpfm_start_off, libpfm_end_off;
};

/*
 * Data range [start, end).  Coarse: libpfm-3 compute_normal_rr over the four
 * DBR pairs (byte granular, no alignment needed).  Exact: one interval, no
 * pairs, offsets 0.
 */
int rangemap_data(uint64_t start, uint64_t end, enum rangemap_mode mode,
		  struct rangemap_result *out);

/* Flags for rangemap_instr_flags(). */
enum {
	/* Every event is IA64_TAGGED_INST_RETIRED_IBRPx: all four IBR pairs
	 * may be used (compute_normal_rr) instead of IBRP0 alone. */
	RANGEMAP_INSTR_TAGGED_ONLY = 1u << 0,
	/* PFMLIB_ITA2_RR_NO_FINE_MODE: never use fine mode. */
	RANGEMAP_INSTR_NO_FINE = 1u << 1,
	/* Itanium 2 (CPU family 0x1f) fine-mode erratum: bounds only have
	 * 2-bundle (32-byte) granularity, as libpfm corrected for it. */
	RANGEMAP_INSTR_FINE_ERRATUM = 1u << 2,
};

/*
 * Instruction range [start, end).
 *
 * libpfm refused ranges not aligned to 16-byte bundles (PFMLIB_ERR_IRRALIGN).
 * On x86-64 code addresses are arbitrary, so instead the request is widened
 * to whole bundles first -- [start & ~0xf, end rounded up to 16) -- and that
 * widening is included in start_off/end_off.  Everything libpfm decides
 * (including the fine-mode test) is decided on the rounded range, because
 * that is what libpfm would have been given.
 *
 * Coarse:
 *   - fine mode when the rounded start and end lie in the same 4 KiB page,
 *     (start & ~0xfff) == (end & ~0xfff); libpfm tests the exclusive end
 *     itself, so a range ending exactly on a page boundary is not fine;
 *   - otherwise, with tagged_only, compute_normal_rr over the 4 IBR pairs;
 *   - otherwise compute_single_rr: one naturally aligned power-of-two pair
 *     (IBRP0) containing the range.
 * Exact: cover = [start, end) unrounded, offsets 0.
 */
int rangemap_instr(uint64_t start, uint64_t end, enum rangemap_mode mode,
		   int tagged_only, struct rangemap_result *out);

/* rangemap_instr with RANGEMAP_INSTR_* flags. */
int rangemap_instr_flags(uint64_t start, uint64_t end, enum rangemap_mode mode,
			 unsigned flags, struct rangemap_result *out);

/* The mode's name, as PAPI_HERITAGE_ITANIUM2_MODE gives it: "coarse" (or
 * NULL: the default) or "exact", any case; 0 or -EINVAL.  Here, with no
 * state, so that the value's parser is reached without an event set. */
int rangemap_mode_parse(const char *name, enum rangemap_mode *mode);

/* Does [a, a + size) overlap the cover?  size 0 never overlaps; a + size may
 * reach 2^64. */
int rangemap_cover_overlaps(const struct rangemap_result *r, uint64_t a,
			    uint64_t size);

#endif /* HERITAGE_RANGEMAP_H */
