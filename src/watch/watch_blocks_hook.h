/*
 * The block hook's fast path, shared by libpapi's __sanitizer_cov_trace_pc
 * (watch_blocks.c) and the executable's copy (watch_instrument_exe.c, in
 * libpapi-heritage-instrument.a).  Header-only: the executable's archive
 * links nothing of libheritage but papi_heritage_blocks_track().
 *
 * A thread counting an instruction range has a table of the hook call sites
 * whose blocks hold instructions of the range, built at PAPI_start
 * (watch_blocks.c), keyed by the call's return address.  The hook looks its
 * return address up and counts a run of the site; a site that needs to know
 * where execution goes next (watch_blocks.c, "deferred paths") is handed to
 * libpapi.  Not counting: one load and one predictable branch per block.
 */
#ifndef HERITAGE_WATCH_BLOCKS_HOOK_H
#define HERITAGE_WATCH_BLOCKS_HOOK_H

#include <stddef.h>
#include <stdint.h>

#define WATCH_BLOCKS_NCOUNT 5 /* insns, then insns_pair[0..3] (struct watch_counts' order) */

#define WATCH_BLOCKS_DEFERS 1u     /* the site starts a deferred path */
#define WATCH_BLOCKS_RESOLVES 2u   /* the site may end its activation's deferred path */

/* One hook call site of a session's table.  The hook counts its runs; the
 * instructions they stand for (the site's counts in each code pair) are
 * multiplied in when the counts are read (watch_blocks_fold): one increment
 * per block instead of five additions. */
struct watch_blocks_site {
	uintptr_t key;                     /* the call's return address; 0: an empty slot */
	uint64_t hits;                     /* runs of the hook since the last fold */
	const void *track;                 /* non-NULL: papi_heritage_blocks_track() decides, with this */
	uint32_t flags;                    /* WATCH_BLOCKS_*, with track */
	int32_t cfa_off;                   /* its activation's CFA - the hook's CFA, with track */
};
_Static_assert(sizeof(struct watch_blocks_site) == 32, "two sites per cache line");

/* A thread's view of its table.  Two hook calls' return addresses are at
 * least 5 bytes apart (a call is 5 or 6 bytes long), so (ret - lo) / 4 names
 * one site: a direct index where the code the sites lie in is small enough
 * (measured on ctests/instr_blocks' loop: 1.3 ns per counted block against
 * 1.6 with the hash), a hash otherwise. */
struct watch_blocks_thread {
	uintptr_t lo, span;                /* every key k of the table: k - lo < span */
	struct watch_blocks_site *tab;
	const uint16_t *dir;               /* tab[dir[(ret - lo) / 4]]; tab[0]: no site.  NULL: hashed */
	unsigned shift;                    /* hashed: 64 - log2(slots) */
	const uintptr_t *top_cfa;          /* the deepest deferred path's activation (UINTPTR_MAX: none) */
};

static inline uintptr_t watch_blocks_slot(uintptr_t key, unsigned shift)
{
	return (uintptr_t)((key * 0x9E3779B97F4A7C15ull) >> shift);
}

/* Replace a thread's view, its own hooks possibly running in a signal
 * handler meanwhile: they see span 0 (nothing to count) until the rest is
 * in place. */
static inline void watch_blocks_view_set(struct watch_blocks_thread *dst, const struct watch_blocks_thread *src)
{
	dst->span = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	dst->lo = src->lo;
	dst->tab = src->tab;
	dst->dir = src->dir;
	dst->shift = src->shift;
	dst->top_cfa = src->top_cfa;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	dst->span = src->span;
}

/* In libpapi. */
void papi_heritage_blocks_track(struct watch_blocks_site *e, uintptr_t hook_cfa);
void papi_heritage_blocks_leave(uintptr_t ret, uintptr_t hook_cfa);

static inline __attribute__((always_inline)) void watch_blocks_hit(const struct watch_blocks_thread *t,
                                                                   uintptr_t ret, uintptr_t hook_cfa)
{
	struct watch_blocks_site *e = NULL;
	if (__builtin_expect(ret - t->lo < t->span, 1)) {
		if (__builtin_expect(t->dir != NULL, 1)) {
			e = &t->tab[t->dir[(ret - t->lo) >> 2]];
		} else {
			e = &t->tab[watch_blocks_slot(ret, t->shift)];
			while (__builtin_expect(e->key != ret && e->key != 0, 0))
				e++;   /* the table ends with a free slot past the last (no wrap) */
		}
	}
	if (__builtin_expect(e == NULL || e->key == 0, 0)) {
		/* No site: maybe the function of the deepest pending path jumping
		 * to the hook as it returns (its CFA is then the hook's). */
		if (t->top_cfa && hook_cfa == *t->top_cfa)
			papi_heritage_blocks_leave(ret, hook_cfa);
		return;
	}
	if (__builtin_expect(e->track != NULL, 0)) {
		/* A site that can only end a deferred path, in an activation deeper
		 * than every path waiting: none of them is its own. */
		if (e->flags != WATCH_BLOCKS_RESOLVES || hook_cfa + (uintptr_t)(intptr_t)e->cfa_off >= *t->top_cfa) {
			papi_heritage_blocks_track(e, hook_cfa);
			return;
		}
	}
	e->hits++;
}

#endif
