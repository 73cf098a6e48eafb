/*
 * A deterministic model of a memory hierarchy (issue 21, items 3 and 5):
 * L1I and L1D, a unified L2, an optional unified L3, and a data TLB pair
 * (L1 DTLB, L2 DTLB, then the hardware page walker), fed one access at a
 * time by the caller (the instrument hooks, a trace replay).  It backs the
 * itanium2 component's "modelled" cache and TLB events (L1D_READ_MISSES_ALL,
 * L2_DATA_REFERENCES_*, L3_READS_DATA_READ_MISS, DTLB_INSERTS_HPW, ...).
 *
 * Presets: the Itanium 2 "Madison" hierarchy (sources cited in
 * it2_cache.c), cachegrind's simulation (LRU, write-allocate, I1/D1/LL,
 * for validating the model against valgrind: tests/it2_cache_replay.c),
 * and the host's own caches from hwloc.
 *
 * Semantics, per level (cachegrind's, valgrind cachegrind/cg_sim.c, where
 * the level is LRU and write-allocate):
 *   - an access of `size` bytes touches every line in [addr, addr+size):
 *     each line is looked up and updates the level's state, and the access
 *     counts once: a hit if every line hit, else one miss;
 *   - a miss goes on to the next level with the same address and size (each
 *     level splits it by its own line size); a hit stops there, except a
 *     store at a write-through level, which always goes on;
 *   - lines are filled on a miss, except stores at a no-write-allocate level;
 *   - FP accesses skip a level marked IT2_LEVEL_INT_ONLY (Itanium 2's L1D);
 *   - instruction fetches go L1I -> L2 -> L3 and are not modelled at all when
 *     there is no L1I; data go L1D -> L2 -> L3;
 *   - levels are non-inclusive and keep no dirty state: evictions propagate
 *     nothing (as in cachegrind).
 * Every access updates the state; the counters are split by whether the
 * caller said the access was in the watched range (IT2_ACC_IN_RANGE).
 *
 * Hot path: it2_cache_access() allocates nothing, takes no lock and uses
 * no floating point.  One model is one thread's: it is not thread-safe.
 */
#ifndef HERITAGE_IT2_CACHE_H
#define HERITAGE_IT2_CACHE_H

#include <stdint.h>

/* Levels, in the order of the config and counter arrays. */
enum it2_cache_level {
	IT2_CACHE_L1I,
	IT2_CACHE_L1D,
	IT2_CACHE_L2,
	IT2_CACHE_L3,
	IT2_CACHE_NLEVELS,
	/* it2_cache_outcome.level only: */
	IT2_CACHE_MEM = IT2_CACHE_NLEVELS, /* no level hit: memory */
	IT2_CACHE_NONE                     /* not modelled (an ifetch without L1I) */
};

enum it2_cache_policy {
	IT2_CACHE_LRU,   /* true LRU (cachegrind's) */
	IT2_CACHE_NRU    /* not recently used: one bit per line (it2_cache.c) */
};

/* it2_cache_level_config.flags */
#define IT2_LEVEL_WRITE_THROUGH      0x1u  /* stores also go to the next level, hit or miss */
#define IT2_LEVEL_NO_WRITE_ALLOCATE  0x2u  /* a store miss fills no line */
#define IT2_LEVEL_INT_ONLY           0x4u  /* FP loads and stores bypass the level */

struct it2_cache_level_config {
	uint64_t size;          /* bytes; 0: the level is absent */
	uint32_t ways;          /* 0: fully associative */
	uint32_t line;          /* bytes, a power of two */
	enum it2_cache_policy policy;
	unsigned flags;         /* IT2_LEVEL_* */
	uint16_t latency;       /* load-to-use cycles when this level serves an integer load */
	uint16_t latency_fp;    /* ... an FP load */
};

struct it2_tlb_config {
	uint32_t entries;       /* fully associative; 0: no such TLB */
	uint32_t page;          /* bytes one entry maps, a power of two; 0: the config's page_size */
	enum it2_cache_policy policy;
};

struct it2_cache_config {
	struct it2_cache_level_config level[IT2_CACHE_NLEVELS];
	struct it2_tlb_config dtlb[2];     /* [0] L1 DTLB, [1] L2 DTLB; walks beyond */
	uint32_t page_size;                /* bytes, a power of two */
	uint16_t mem_latency, mem_latency_fp;
	uint16_t dtlb2_penalty;            /* cycles added when the L2 DTLB translates */
	uint16_t hpw_penalty;              /* cycles added when the page walker does */
};

enum it2_cache_preset {
	IT2_CACHE_ITANIUM2_MADISON,  /* Itanium 2 "Madison" 1.6 GHz, 3 MiB L3, 16 KiB pages */
	IT2_CACHE_CACHEGRIND,        /* cachegrind: I1, D1, LL(=L2), LRU, write-allocate,
	                                valgrind's fall-back geometry; no TLB */
};

/* Fills cfg with a preset.  0, or -EINVAL for an unknown preset. */
int it2_cache_preset(struct it2_cache_config *cfg, enum it2_cache_preset which);
/* Fills cfg's geometry from the host's caches (hwloc: L1i, L1d, L2, L3),
 * LRU, write-allocate, write-back, the host's page size, no TLB (hwloc
 * reports none) and no latencies.  0, or a negative errno with
 * heritage_last_error() saying why. */
int it2_cache_config_host(struct it2_cache_config *cfg);
/* One level's geometry (cachegrind's --D1=size,assoc,line): 0 or -EINVAL. */
int it2_cache_set_geometry(struct it2_cache_config *cfg, enum it2_cache_level level,
                           uint64_t size, uint32_t ways, uint32_t line);

/* Access flags. */
#define IT2_ACC_LOAD      0x0u
#define IT2_ACC_STORE     0x1u
#define IT2_ACC_FP        0x2u   /* a floating-point load or store */
#define IT2_ACC_IFETCH    0x4u   /* an instruction fetch (no TLB modelled) */
#define IT2_ACC_IN_RANGE  0x8u   /* count it in the in-range counters */

enum it2_tlb_outcome {
	IT2_TLB_L1,      /* L1 DTLB hit */
	IT2_TLB_L2,      /* L1 DTLB miss, L2 DTLB hit */
	IT2_TLB_HPW,     /* both missed: a hardware page walk */
	IT2_TLB_NONE     /* not modelled (no DTLB, an ifetch) */
};

struct it2_cache_outcome {
	uint8_t level;       /* enum it2_cache_level: the level that served it, or MEM / NONE */
	uint8_t tlb;         /* enum it2_tlb_outcome */
	uint8_t lines;       /* lines touched at the first level looked up (2: it straddles) */
	uint16_t latency;    /* modelled cycles: the serving level's latency + TLB penalty */
};

struct it2_cache_level_counts {
	uint64_t read_hits, read_misses;       /* data loads */
	uint64_t write_hits, write_misses;     /* data stores */
	uint64_t ifetch_hits, ifetch_misses;   /* instruction fetches */
};

struct it2_tlb_counts {
	uint64_t l1_hits;     /* L1 DTLB hits */
	uint64_t l2_hits;     /* L1 DTLB misses the L2 DTLB translated (L1DTLB_TRANSFER) */
	uint64_t walks;       /* both missed (DTLB_INSERTS_HPW) */
};

/* Index [0] = outside the watched range, [1] = inside (IT2_ACC_IN_RANGE). */
struct it2_cache_counters {
	struct it2_cache_level_counts level[IT2_CACHE_NLEVELS][2];
	struct it2_tlb_counts dtlb[2];
	uint64_t mem[2];          /* accesses no level served */
	uint64_t cycles[2];       /* sum of the outcomes' latencies */
};

/* One modelled cache or TLB (private to it2_cache.c, here for sizeof). */
struct it2_cache_set_array {
	uint64_t *tags;         /* sets * ways; 0 = invalid, else block number + 1 */
	uint64_t *stamp;        /* LRU: each line's last use (0: never), NULL under NRU */
	uint64_t *used;         /* NRU: the "used" bits, `words` words a set (NULL under LRU) */
	uint32_t *nused;        /* NRU: the bits set in each set (when words > 1) */
	uint32_t *pred;         /* many ways: a line-index guess per hash of the block, or NULL */
	uint64_t set_mask;      /* sets - 1 when sets is a power of two */
	uint64_t clock;         /* LRU: the last stamp given */
	uint64_t full;          /* NRU, one word a set: every way's bit */
	uint32_t sets, ways;
	uint32_t words;         /* NRU: (ways + 63) / 64 */
	unsigned line_shift;
	unsigned pred_shift;    /* 64 - log2(pred's entries) */
	enum it2_cache_policy policy;
	int pow2_sets;
	unsigned flags;
	unsigned kind;          /* how it2_cache.c looks lines up (sa_ref) */
};

/* One level a data access of one line visits (it2_cache.c: access_slow). */
struct it2_cache_step {
	uint8_t level;          /* enum it2_cache_level */
	uint8_t fill;           /* a miss fills the line */
	uint8_t stop;           /* a hit stops the access there */
	uint8_t learn;          /* the fast path's memo learns the line (L1D) */
};

/* The fast path's guess for a recently used L1D line (it2_cache.c). */
struct it2_cache_memo {
	uint32_t l1d;           /* its index in the L1D's lines */
	uint32_t tlb1;          /* its L1 DTLB entry's index */
	uint64_t bit;           /* 1 << its way (NRU) */
};

struct it2_cache {
	/* The fast path's (a load within one L1D line, it2_cache.c): */
	unsigned fast_kind;           /* which one, for the L1D's and L1 DTLB's policies (0: none) */
	unsigned fast_reject;         /* IT2_ACC_* flags it never takes */
	unsigned fast_shift;          /* the smaller of L1D's line and the L1 DTLB's page shifts */
	unsigned memo_shift;          /* 64 - log2(memo's entries) */
	uint16_t fast_lat[2];         /* L1D's latency for integer, FP loads */
	/* access_slow's (a data access within one line of every level): */
	unsigned line_shift_min;      /* the smallest line or page shift of the data levels and DTLBs */
	unsigned nsteps[4];           /* the levels it visits, by flags & (STORE | FP) */
	struct it2_cache_step steps[4][3];
	struct it2_cache_memo *memo;
	/* The L1 DTLB's most recent entry and (under LRU) the one before it, each
	 * its number + 1 (0: none) and its index: their LRU stamps may be stale
	 * (it2_cache.c: t1_lookup). */
	uint64_t last_page1, prev_page1;
	uint32_t last_tlb1, prev_tlb1;
	struct it2_cache_set_array lv[IT2_CACHE_NLEVELS];
	struct it2_cache_set_array tlb[2];
	struct it2_cache_counters cnt;
	struct it2_cache_config cfg;
};

/* Allocates the model's state (all invalid) for cfg, which it copies.
 * 0, or -EINVAL (a bad geometry, heritage_last_error() says which) or
 * -ENOMEM. */
int it2_cache_init(struct it2_cache *m, const struct it2_cache_config *cfg);
void it2_cache_destroy(struct it2_cache *m);
/* Invalidates every line and TLB entry (the counters stay). */
void it2_cache_flush(struct it2_cache *m);

/* One access of size bytes (>= 1) at addr; flags IT2_ACC_*.  out may be
 * NULL. */
void it2_cache_access(struct it2_cache *m, uint64_t addr, unsigned size, unsigned flags,
                      struct it2_cache_outcome *out);

static inline void it2_cache_counters_read(const struct it2_cache *m, struct it2_cache_counters *out)
{
	*out = m->cnt;
}
void it2_cache_counters_zero(struct it2_cache *m);

#endif
