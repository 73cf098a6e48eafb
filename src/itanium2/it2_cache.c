/*
 * The memory-hierarchy model of it2_cache.h: set-associative levels (true
 * LRU or NRU), a data TLB pair, and the presets.
 *
 * Sources of the Itanium 2 facts (each parameter below names its own).  The
 * issue asks for "Intel Itanium 2 Processor Reference Manual for Software
 * Development and Optimization" (document 251110, May 2004).  That manual
 * was not among the sources this work could read, so no fact below is
 * cited to one of its sections or tables: where a value rests only on the
 * secondary sources it says so ("not verified here in 251110").
 *   [7cpu]  7-cpu.com, "Intel Itanium 2" (https://7-cpu.com/cpu/Itanium2.html):
 *           a 1.3 GHz Madison (HP rx2600): cache and TLB geometry, and a
 *           pointer-chasing latency table with 16 KiB pages.
 *   [LDMM]  T. Lyon, E. Delano, C. McNairy, D. Mulla, "Data Cache Design
 *           Considerations for the Itanium 2 Processor", ICCD 2002,
 *           pp. 356-362, abstract: "a 16KB 1-cycle first level cache ...
 *           The second level cache is 256KB ... third level cache is 3MB".
 *   [OWC]   owchallie.com, "Itanium 2 Cache Organization"
 *           (https://owchallie.com/systems/cache-itanium2.php): write
 *           policies, which accesses L1D serves, L3 associativity.
 *   [GCC]   GCC, gcc/config/ia64/itanium2.md (Itanium 2 scheduling model):
 *           define_insn_reservation "2_ld" 1 (integer load), "2_fld" 6
 *           (FP load).
 *   [KCFG]  Linux, arch/ia64/Kconfig, "Kernel page size": default
 *           IA64_PAGE_SIZE_16KB.
 *   [GECKO] gecko54000.free.fr, "Intel Itanium 2 (Madison) processors": 1.4
 *           and 1.6 GHz Madison parts with 3 MB of L3 (April 2004).
 *   [CG]    valgrind, cachegrind/cg_sim.c and cg_arch.c (3.17 sources):
 *           the simulation the cachegrind preset reproduces.
 */
#include "itanium2/it2_cache.h"

#include <errno.h>
#include <hwloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/heritage_error.h"

/* ---- presets ------------------------------------------------------------- */

/*
 * Itanium 2 "Madison", as the itanium2 component models it (1.6 GHz, the
 * frequency of it2_set's CPU_CYCLES; a 3 MiB L3 [GECKO]).
 *
 * L1I: 16 KiB, 4-way, 64-byte lines [7cpu] [OWC].  Not verified here in 251110.
 * L1D: 16 KiB, 4-way, 64-byte lines, write-through, "Caches only integer
 *      loads" [7cpu]; "write-through with no write allocation ... only
 *      processes integer loads - integer stores and floating point loads and
 *      stores are processed by the level 2 cache" [OWC]; "16KB 1-cycle"
 *      [LDMM].  So: INT_ONLY (FP loads and stores bypass it),
 *      NO_WRITE_ALLOCATE and WRITE_THROUGH (integer stores are looked up,
 *      fill nothing, and always reach L2).  Not verified here in 251110.
 * L2:  256 KiB, 8-way, 128-byte lines, write-back, write-allocate [7cpu]
 *      [OWC] [LDMM].  Not verified here in 251110.
 * L3:  3 MiB, 128-byte lines [7cpu] (a 1.3 GHz Madison) [LDMM]; 12-way
 *      [OWC], which describes the 1.5/3 MB McKinley parts: the Madison 3 MiB
 *      part's associativity is not verified here (neither in 251110).
 * Replacement: NRU (one "used" bit per line, below) at every cache level,
 *      as issue 21 states for Itanium 2.  Not verified here: none of the
 *      sources read names the policy of any Itanium 2 cache.
 * DTLB: L1 DTLB 32 entries, fully associative, each mapping 4 KB ("supports
 *      4 KB pages (or 4 KB subsections of large pages)"); L2 DTLB 128
 *      entries, fully associative [7cpu].  Their replacement policy is not
 *      verified here: modelled LRU.  The page walker's VHPT reads (which go
 *      through L2 [7cpu]) are not modelled, nor the ITLBs, nor the L1D's
 *      prevalidated tags (an L1 DTLB eviction invalidating L1D lines).
 * Page size: 16 KiB, Linux/ia64's default [KCFG].
 * Latencies (load-to-use, cycles): L1D 1 [LDMM] [GCC "2_ld" 1]; FP from
 *      L2 6 [GCC "2_fld" 6].  The rest are derived from [7cpu]'s
 *      pointer-chasing table (load to address use, one more than to an ALU
 *      use: "L1 latency is 1 Cycle, if data is used for ALU" against 2 in
 *      the table): L2 6 there, so 5 for an integer use; L3 20 at 2 MiB,
 *      less the 4 of the L1->L2 DTLB transfer the table adds at 256 KiB, so
 *      16, 15 for an integer use (16 for FP, one more as from L2: an
 *      assumption); memory "+ 160 ns" beyond that on [7cpu]'s DDR266
 *      board, 256 cycles at 1.6 GHz: 271 (272 FP).  DTLB: "+ 4 (L1-TLB miss
 *      -> L2-TLB hit)", "+ 15 (L2-TLB miss -> VHPT walker to L2-Cache)"
 *      [7cpu]: penalties 4 and 4 + 15 = 19.  None verified here in 251110.
 */
static const struct it2_cache_config it2_madison = {
	.level = {
		[IT2_CACHE_L1I] = { .size = 16384, .ways = 4, .line = 64, .policy = IT2_CACHE_NRU,
		                    .latency = 1, .latency_fp = 1 },
		[IT2_CACHE_L1D] = { .size = 16384, .ways = 4, .line = 64, .policy = IT2_CACHE_NRU,
		                    .flags = IT2_LEVEL_WRITE_THROUGH | IT2_LEVEL_NO_WRITE_ALLOCATE | IT2_LEVEL_INT_ONLY,
		                    .latency = 1, .latency_fp = 1 },
		[IT2_CACHE_L2] = { .size = 262144, .ways = 8, .line = 128, .policy = IT2_CACHE_NRU,
		                   .latency = 5, .latency_fp = 6 },
		[IT2_CACHE_L3] = { .size = 3145728, .ways = 12, .line = 128, .policy = IT2_CACHE_NRU,
		                   .latency = 15, .latency_fp = 16 },
	},
	.dtlb = { { .entries = 32, .page = 4096, .policy = IT2_CACHE_LRU },
	          { .entries = 128, .page = 0, .policy = IT2_CACHE_LRU } },
	.page_size = 16384,
	.mem_latency = 271, .mem_latency_fp = 272,
	.dtlb2_penalty = 4, .hpw_penalty = 19,
};

/*
 * cachegrind [CG]: I1, D1 and LL (our L2), true LRU, write-allocate, every
 * access at every level, LL shared by I1 and D1 misses; the geometry
 * cg_arch.c falls back to (I1 65536/2/64, D1 65536/2/64, LL 262144/8/64):
 * set the real one with it2_cache_set_geometry (--I1, --D1, --LL).  No TLB,
 * no latencies.
 */
static const struct it2_cache_config it2_cachegrind = {
	.level = {
		[IT2_CACHE_L1I] = { .size = 65536, .ways = 2, .line = 64, .policy = IT2_CACHE_LRU },
		[IT2_CACHE_L1D] = { .size = 65536, .ways = 2, .line = 64, .policy = IT2_CACHE_LRU },
		[IT2_CACHE_L2] = { .size = 262144, .ways = 8, .line = 64, .policy = IT2_CACHE_LRU },
	},
	.page_size = 4096,
};

int it2_cache_preset(struct it2_cache_config *cfg, enum it2_cache_preset which)
{
	switch (which) {
	case IT2_CACHE_ITANIUM2_MADISON: *cfg = it2_madison; return 0;
	case IT2_CACHE_CACHEGRIND: *cfg = it2_cachegrind; return 0;
	}
	return heritage_fail(-EINVAL, "it2_cache: unknown preset %d", (int)which);
}

static const char *const level_name[IT2_CACHE_NLEVELS] = { "L1I", "L1D", "L2", "L3" };

static int is_pow2(uint64_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

static int check_geometry(const char *what, uint64_t size, uint32_t ways, uint32_t line)
{
	if (!is_pow2(line))
		return heritage_fail(-EINVAL, "it2_cache: %s: line size %u is not a power of two", what, line);
	if (size % line != 0 || size / line == 0)
		return heritage_fail(-EINVAL, "it2_cache: %s: size %llu is not a whole number of %u-byte lines",
		                     what, (unsigned long long)size, line);
	uint64_t lines = size / line;
	if (ways != 0 && lines % ways != 0)
		return heritage_fail(-EINVAL, "it2_cache: %s: %llu lines are not a whole number of %u-way sets",
		                     what, (unsigned long long)lines, ways);
	if (lines > UINT32_MAX)
		return heritage_fail(-EINVAL, "it2_cache: %s: %llu lines is too many", what, (unsigned long long)lines);
	return 0;
}

int it2_cache_set_geometry(struct it2_cache_config *cfg, enum it2_cache_level level,
                           uint64_t size, uint32_t ways, uint32_t line)
{
	if ((unsigned)level >= IT2_CACHE_NLEVELS)
		return heritage_fail(-EINVAL, "it2_cache: no cache level %d", (int)level);
	if (size != 0) {
		int r = check_geometry(level_name[level], size, ways, line);
		if (r)
			return r;
	}
	cfg->level[level].size = size;
	cfg->level[level].ways = ways;
	cfg->level[level].line = line;
	return 0;
}

int it2_cache_config_host(struct it2_cache_config *cfg)
{
	static const hwloc_obj_type_t type[IT2_CACHE_NLEVELS] = {
		HWLOC_OBJ_L1ICACHE, HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE
	};
	hwloc_topology_t topo;
	int r = 0;

	memset(cfg, 0, sizeof *cfg);
	long page = sysconf(_SC_PAGESIZE);
	cfg->page_size = page > 0 && is_pow2((uint64_t)page) ? (uint32_t)page : 4096;
	if (hwloc_topology_init(&topo) != 0)
		return heritage_fail(-ENOMEM, "it2_cache: hwloc_topology_init failed");
	/* hwloc drops instruction caches unless asked. */
	hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
	if (hwloc_topology_load(topo) != 0) {
		hwloc_topology_destroy(topo);
		return heritage_fail(-ENODEV, "it2_cache: hwloc_topology_load failed");
	}
	for (int l = 0; l < IT2_CACHE_NLEVELS && r == 0; l++) {
		/* The first of its kind: the caches of the first PU's core. */
		hwloc_obj_t o = hwloc_get_obj_by_type(topo, type[l], 0);
		if (o == NULL || o->attr == NULL || o->attr->cache.size == 0)
			continue;   /* the level is absent (or hwloc does not know it) */
		const struct hwloc_cache_attr_s *c = &o->attr->cache;
		if (c->linesize == 0 || c->associativity == 0) {
			r = heritage_fail(-ENODATA, "it2_cache: hwloc gives %s %llu bytes but no %s",
			                  level_name[l], (unsigned long long)c->size,
			                  c->linesize == 0 ? "line size" : "associativity");
			break;
		}
		uint32_t ways = c->associativity < 0 ? 0 : (uint32_t)c->associativity;   /* -1: fully */
		r = it2_cache_set_geometry(cfg, (enum it2_cache_level)l, c->size, ways, c->linesize);
		cfg->level[l].policy = IT2_CACHE_LRU;
	}
	hwloc_topology_destroy(topo);
	if (r == 0 && cfg->level[IT2_CACHE_L1D].size == 0)
		r = heritage_fail(-ENODATA, "it2_cache: hwloc reports no L1 data cache on this machine");
	return r;
}

/* ---- one set-associative array --------------------------------------------- */

/*
 * The state, and how it gives the results of the plain description below
 * (each set an LRU list most recent first, or NRU bits in ways) in a few
 * nanoseconds an access:
 *   - LRU keeps a stamp per line (its last use, from a counter per array;
 *     0: never used, which is also every invalid line) instead of an ordered
 *     set: a hit writes one stamp, and a fill replaces the line with the
 *     smallest stamp, the first invalid one or else the least recently used
 *     -- the line the ordered list would drop from its end.  Which way a
 *     line sits in is not observable under LRU.
 *   - NRU keeps its bits as a mask per set (a word per 64 ways), so a use
 *     and the choice of a victim need no loop over the ways; valid lines
 *     are always a prefix of the set's ways (only a flush invalidates), so
 *     "the first invalid way" is looked for only while the last is invalid.
 *   - arrays with many ways (the fully associative TLBs) keep a predictor:
 *     a line index per hash of the block, believed only when that line's
 *     tag is the block's; otherwise the set is scanned as before.
 * The hot helpers are forced inline so that each level's lookup is its own
 * code, with its own (well predicted) loop counts.
 */
#define HOT static inline __attribute__((always_inline))
#define PRED_MIN_WAYS 16u

/* it2_cache_set_array.kind: the usual shapes get a lookup of their own. */
enum {
	SA_GENERIC,     /* anything: sets not a power of two, a predictor, NRU masks of several words */
	SA_LRU,         /* LRU, 2^n sets, at most PRED_MIN_WAYS ways */
	SA_NRU,         /* NRU, 2^n sets, at most PRED_MIN_WAYS ways */
};

HOT uint64_t hash_block(uint64_t block, unsigned shift)
{
	return (block * 0x9E3779B97F4A7C15ull) >> shift;
}

/* log2 of the smallest power of two >= x (x >= 1). */
static unsigned log2_ceil(uint64_t x)
{
	unsigned b = 0;
	while ((1ull << b) < x)
		b++;
	return b;
}

static void sa_free(struct it2_cache_set_array *a)
{
	free(a->tags);
	free(a->stamp);
	free(a->used);
	free(a->nused);
	free(a->pred);
}

static int sa_init(struct it2_cache_set_array *a, const char *what, uint64_t size, uint32_t ways,
                   uint32_t line, enum it2_cache_policy policy, unsigned flags)
{
	memset(a, 0, sizeof *a);
	if (size == 0)
		return 0;
	if (policy != IT2_CACHE_LRU && policy != IT2_CACHE_NRU)
		return heritage_fail(-EINVAL, "it2_cache: %s: unknown replacement policy %d", what, (int)policy);
	int r = check_geometry(what, size, ways, line);
	if (r)
		return r;
	uint64_t lines = size / line;
	a->ways = ways ? ways : (uint32_t)lines;
	a->sets = (uint32_t)(lines / a->ways);
	a->pow2_sets = is_pow2(a->sets);
	a->set_mask = a->sets - 1u;
	a->line_shift = (unsigned)__builtin_ctzll(line);
	a->policy = policy;
	a->flags = flags;
	a->tags = calloc(lines, sizeof *a->tags);
	int ok = a->tags != NULL;
	if (policy == IT2_CACHE_LRU) {
		a->stamp = calloc(lines, sizeof *a->stamp);
		ok = ok && a->stamp != NULL;
	} else {
		a->words = (a->ways + 63) / 64;
		a->full = a->ways >= 64 ? ~0ull : (1ull << a->ways) - 1;
		a->used = calloc((size_t)a->sets * a->words, sizeof *a->used);
		ok = ok && a->used != NULL;
		if (a->words > 1) {
			a->nused = calloc(a->sets, sizeof *a->nused);
			ok = ok && a->nused != NULL;
		}
	}
	if (a->pow2_sets && a->ways <= PRED_MIN_WAYS)
		a->kind = policy == IT2_CACHE_LRU ? SA_LRU : SA_NRU;
	else
		a->kind = SA_GENERIC;
	if (a->ways > PRED_MIN_WAYS) {
		unsigned bits = log2_ceil(2 * (uint64_t)a->ways);
		if (bits > 16)
			bits = 16;
		a->pred_shift = 64 - bits;
		a->pred = calloc((size_t)1 << bits, sizeof *a->pred);
		ok = ok && a->pred != NULL;
	}
	if (!ok) {
		sa_free(a);
		memset(a, 0, sizeof *a);
		return heritage_fail(-ENOMEM, "it2_cache: %s: no memory for %llu lines", what, (unsigned long long)lines);
	}
	return 0;
}

static void sa_destroy(struct it2_cache_set_array *a)
{
	sa_free(a);
	memset(a, 0, sizeof *a);
}

static void sa_flush(struct it2_cache_set_array *a)
{
	size_t n = (size_t)a->sets * a->ways;
	if (a->tags)
		memset(a->tags, 0, n * sizeof *a->tags);
	if (a->stamp)
		memset(a->stamp, 0, n * sizeof *a->stamp);
	if (a->used)
		memset(a->used, 0, (size_t)a->sets * a->words * sizeof *a->used);
	if (a->nused)
		memset(a->nused, 0, a->sets * sizeof *a->nused);
	a->clock = 0;
	/* pred needs nothing: every guess is checked against the tags. */
}

HOT size_t sa_set(const struct it2_cache_set_array *a, uint64_t block)
{
	return a->pow2_sets ? (size_t)(block & a->set_mask) : (size_t)(block % a->sets);
}

/*
 * NRU: a line's bit is set when it is used (hit or filled); when that sets
 * the last clear bit of its set, every other bit of the set is cleared.  The
 * victim is the first invalid way, else the first way whose bit is clear
 * (lowest way number).  So the set always keeps at least one clear bit
 * (with more than one way), and a line survives until every other line has
 * been used since it was.
 */
static __attribute__((noinline)) void nru_use_words(struct it2_cache_set_array *a, size_t set, uint32_t w)
{
	uint64_t *u = a->used + set * a->words, bit = 1ull << (w & 63);
	if (u[w >> 6] & bit)
		return;
	u[w >> 6] |= bit;
	if (++a->nused[set] == a->ways) {
		memset(u, 0, a->words * sizeof *u);
		u[w >> 6] = bit;
		a->nused[set] = 1;
	}
}

HOT void nru_use(struct it2_cache_set_array *a, size_t set, uint32_t w)
{
	if (__builtin_expect(a->words == 1, 1)) {
		uint64_t *u = &a->used[set], bit = 1ull << w, v = *u | bit;
		*u = v == a->full ? bit : v;
	} else {
		nru_use_words(a, set, w);
	}
}

/* One NRU "used" word: way w used (nru_use). */
HOT void nru1_use(uint64_t *u, uint32_t w, uint64_t full)
{
	uint64_t bit = 1ull << w, v = *u | bit;
	*u = v == full ? bit : v;
}

/* The NRU victim of a full set: the first way whose bit is clear, else
 * (one way) way 0. */
HOT uint32_t nru_victim(const struct it2_cache_set_array *a, size_t set)
{
	if (a->words == 1) {
		uint64_t free_ = ~a->used[set] & a->full;
		return free_ ? (uint32_t)__builtin_ctzll(free_) : 0;
	}
	const uint64_t *u = a->used + set * a->words;
	for (uint32_t k = 0; k < a->words; k++) {
		uint64_t free_ = ~u[k];
		if (k == a->words - 1 && (a->ways & 63))
			free_ &= (1ull << (a->ways & 63)) - 1;
		if (free_)
			return k * 64 + (uint32_t)__builtin_ctzll(free_);
	}
	return 0;
}

/* The way of tag among the n at t (n a constant where inlined), or n. */
HOT uint32_t find_way_n(const uint64_t *t, uint32_t n, uint64_t tag)
{
	uint32_t found = n;
#pragma GCC unroll 16
	for (uint32_t w = 0; w < n; w++)   /* no branch on the data */
		found = t[w] == tag ? w : found;
	return found;
}

/* The way of tag among the n at t, or n: the usual associativities
 * unrolled. */
HOT uint32_t find_way(const uint64_t *t, uint32_t n, uint64_t tag)
{
	switch (n) {
	case 1: return t[0] == tag ? 0 : 1;
	case 2: return find_way_n(t, 2, tag);
	case 4: return find_way_n(t, 4, tag);
	case 8: return find_way_n(t, 8, tag);
	case 12: return find_way_n(t, 12, tag);
	case 16: return find_way_n(t, 16, tag);
	}
	if (n <= PRED_MIN_WAYS)
		return find_way_n(t, n, tag);
	for (uint32_t w = 0; w < n; w++)
		if (t[w] == tag)
			return w;
	return n;
}

/* One line (block number) in its set: 1 on a hit.  fill: install it on a
 * miss.  *idx: the line's index in the array afterwards, or UINT32_MAX when
 * it is not there (a miss without fill). */
HOT int sa_ref_generic(struct it2_cache_set_array *a, uint64_t block, int fill, uint32_t *idx)
{
	const uint32_t n = a->ways;
	const size_t set = sa_set(a, block), base = set * n;
	uint64_t *t = a->tags + base;
	const uint64_t tag = block + 1;
	uint32_t *p = NULL, w;

	if (a->pred) {
		p = &a->pred[hash_block(block, a->pred_shift)];
		if (a->tags[*p] == tag) {
			w = (uint32_t)(*p - base);
			goto hit;
		}
	}
	w = find_way(t, n, tag);
	if (w < n) {
		if (p)
			*p = (uint32_t)(base + w);
hit:
		if (a->policy == IT2_CACHE_LRU)
			a->stamp[base + w] = ++a->clock;
		else
			nru_use(a, set, w);
		*idx = (uint32_t)(base + w);
		return 1;
	}
	if (!fill) {
		*idx = UINT32_MAX;
		return 0;
	}
	if (a->policy == IT2_CACHE_LRU) {   /* the first invalid line, else the least recent */
		const uint64_t *st = a->stamp + base;
		uint64_t min = st[0];
		w = 0;
		for (uint32_t i = 1; i < n; i++) {
			int lt = st[i] < min;
			min = lt ? st[i] : min;
			w = lt ? i : w;
		}
		t[w] = tag;
		a->stamp[base + w] = ++a->clock;
	} else {
		if (__builtin_expect(t[n - 1] == 0, 0)) {   /* valid ways are a prefix */
			for (w = 0; t[w] != 0; w++)
				;
		} else {
			w = nru_victim(a, set);
		}
		t[w] = tag;
		nru_use(a, set, w);
	}
	if (p)
		*p = (uint32_t)(base + w);
	*idx = (uint32_t)(base + w);
	return 0;
}

/* sa_ref for the shapes SA_LRU and SA_NRU (policy: a constant where
 * inlined): no predictor, 2^n sets, one NRU word a set. */
HOT int sa_ref_small(struct it2_cache_set_array *a, uint64_t block, int fill, uint32_t *idx, const int lru)
{
	const uint32_t n = a->ways;
	const size_t set = (size_t)(block & a->set_mask), base = set * n;
	uint64_t *t = a->tags + base;
	const uint64_t tag = block + 1;
	uint32_t w = find_way(t, n, tag);

	if (w < n) {
		if (lru)
			a->stamp[base + w] = ++a->clock;
		else
			nru1_use(&a->used[set], w, a->full);
		*idx = (uint32_t)(base + w);
		return 1;
	}
	if (!fill) {
		*idx = UINT32_MAX;
		return 0;
	}
	if (lru) {
		const uint64_t *st = a->stamp + base;
		uint64_t min = st[0];
		w = 0;
		for (uint32_t i = 1; i < n; i++) {
			int lt = st[i] < min;
			min = lt ? st[i] : min;
			w = lt ? i : w;
		}
		a->stamp[base + w] = ++a->clock;
	} else {
		if (__builtin_expect(t[n - 1] == 0, 0)) {   /* valid ways are a prefix */
			for (w = 0; t[w] != 0; w++)
				;
		} else {
			uint64_t free_ = ~a->used[set] & a->full;
			w = free_ ? (uint32_t)__builtin_ctzll(free_) : 0;
		}
		nru1_use(&a->used[set], w, a->full);
	}
	t[w] = tag;
	*idx = (uint32_t)(base + w);
	return 0;
}

/* One line (block number) in its set: 1 on a hit.  fill: install it on a
 * miss.  *idx: the line's index in the array afterwards, or UINT32_MAX when
 * it is not there (a miss without fill). */
HOT int sa_ref(struct it2_cache_set_array *a, uint64_t block, int fill, uint32_t *idx)
{
	switch (a->kind) {
	case SA_LRU: return sa_ref_small(a, block, fill, idx, 1);
	case SA_NRU: return sa_ref_small(a, block, fill, idx, 0);
	default: return sa_ref_generic(a, block, fill, idx);
	}
}

/* sa_ref out of line, for the general path. */
static __attribute__((noinline)) int sa_ref_outline(struct it2_cache_set_array *a, uint64_t block, int fill,
                                                    uint32_t *idx)
{
	return sa_ref(a, block, fill, idx);
}

/* [addr, addr + size) at one level: every line touched is looked up (each
 * updates the state), and the access hits only if all of them hit
 * (cachegrind's cachesim_ref_is_miss, generalised to any number of lines).
 * *idx: the first line's index afterwards (sa_ref). */
static int sa_access(struct it2_cache_set_array *a, uint64_t addr, unsigned size, int fill, unsigned *nlines,
                     uint32_t *idx)
{
	uint64_t b = addr >> a->line_shift, last = (addr + size - 1) >> a->line_shift;
	int hit = sa_ref_outline(a, b, fill, idx);
	unsigned n = 1;
	while (b != last) {
		uint32_t i;
		b++;
		hit &= sa_ref_outline(a, b, fill, &i);
		n++;
	}
	*nlines = n;
	return hit;
}

/* ---- the model ------------------------------------------------------------- */

/*
 * Three paths, all with the same results (src/tests/test_it2_cache.c runs
 * long random streams through this and the plain implementation):
 *   - the fast path (fast_access): a load the L1D takes (integer, or FP
 *     where the L1D is not INT_ONLY) within one L1D line and one L1 DTLB
 *     entry, when the memo -- an L1D line index, its way's bit and an L1
 *     DTLB entry index per hash of the L1D block, written by the slower
 *     paths -- names the line holding it, and the L1 DTLB entry is one of
 *     the two most recent (t1_lookup) or the one the memo names.  Both are
 *     then hits, and the slower paths would do exactly this: the L1 DTLB
 *     hit, the L1D hit updating that line's replacement state, the load
 *     counted at L1D, its latency that of L1D with no TLB penalty.  A stale
 *     guess (the line or entry since replaced, a flush) fails the tag check
 *     and takes a slower path.  Only for configs with an L1D of 2^n sets
 *     and either an L1 DTLB or no DTLB at all; inlined for Madison's
 *     policies (L1D NRU, L1 DTLB LRU), a function per other pair.
 *   - access_slow: any other data access within one line of every level
 *     and one entry of each DTLB, over the levels its kind visits
 *     (steps[], worked out at init).
 *   - access_general: the rest (instruction fetches, accesses over several
 *     lines or pages, a size of 0), level by level as described in
 *     it2_cache.h.
 */
_Static_assert((IT2_ACC_STORE | IT2_ACC_FP) == 3, "steps[] is indexed by flags & (STORE | FP)");

enum { FAST_NONE, FAST_L1_LRU = 1, FAST_L1_NRU = 2 };   /* fast_kind = L1D's + 2 * L1 DTLB's */
enum { FAST_T1_NONE, FAST_T1_LRU, FAST_T1_NRU };

static void memo_init(struct it2_cache *m)
{
	const struct it2_cache_set_array *l1 = &m->lv[IT2_CACHE_L1D], *t1 = &m->tlb[0], *t2 = &m->tlb[1];
	if (l1->tags == NULL || !l1->pow2_sets || (l1->used && l1->words != 1))
		return;
	if (t1->tags == NULL ? t2->tags != NULL : t1->used && t1->words != 1)
		return;
	unsigned bits = log2_ceil(2 * (uint64_t)l1->sets * l1->ways);
	if (bits < 6)
		bits = 6;
	if (bits > 16)
		bits = 16;
	m->memo = calloc((size_t)1 << bits, sizeof *m->memo);
	if (m->memo == NULL)
		return;   /* no fast path, same results */
	m->memo_shift = 64 - bits;
	m->fast_shift = l1->line_shift;
	m->fast_lat[0] = m->cfg.level[IT2_CACHE_L1D].latency;
	m->fast_lat[1] = m->cfg.level[IT2_CACHE_L1D].latency_fp;
	if (t1->tags && t1->line_shift < m->fast_shift)
		m->fast_shift = t1->line_shift;
	m->fast_reject = IT2_ACC_STORE | IT2_ACC_IFETCH | (l1->flags & IT2_LEVEL_INT_ONLY ? IT2_ACC_FP : 0);
	m->fast_kind = (l1->policy == IT2_CACHE_LRU ? FAST_L1_LRU : FAST_L1_NRU) +
	               2 * (t1->tags == NULL ? FAST_T1_NONE : t1->policy == IT2_CACHE_LRU ? FAST_T1_LRU : FAST_T1_NRU);
}

int it2_cache_init(struct it2_cache *m, const struct it2_cache_config *cfg)
{
	static const char *const tlb_name[2] = { "L1 DTLB", "L2 DTLB" };
	int r = 0;

	memset(m, 0, sizeof *m);
	m->cfg = *cfg;
	if (!is_pow2(cfg->page_size))
		return heritage_fail(-EINVAL, "it2_cache: page size %u is not a power of two", cfg->page_size);
	for (int l = 0; l < IT2_CACHE_NLEVELS && r == 0; l++) {
		const struct it2_cache_level_config *c = &cfg->level[l];
		r = sa_init(&m->lv[l], level_name[l], c->size, c->ways, c->line, c->policy, c->flags);
	}
	for (int t = 0; t < 2 && r == 0; t++) {
		const struct it2_tlb_config *c = &cfg->dtlb[t];
		uint32_t page = c->page ? c->page : cfg->page_size;
		r = sa_init(&m->tlb[t], tlb_name[t], (uint64_t)c->entries * page, 0, page, c->policy, 0);
	}
	if (r == 0 && m->lv[IT2_CACHE_L1D].tags == NULL && m->lv[IT2_CACHE_L2].tags == NULL)
		r = heritage_fail(-EINVAL, "it2_cache: no data cache (neither L1D nor L2)");
	if (r) {
		it2_cache_destroy(m);
		return r;
	}
	/* access_line's: the smallest line or page of the data levels and DTLBs. */
	m->line_shift_min = 63;
	const struct it2_cache_set_array *data[] = { &m->lv[IT2_CACHE_L1D], &m->lv[IT2_CACHE_L2], &m->lv[IT2_CACHE_L3],
	                                             &m->tlb[0], &m->tlb[1] };
	for (size_t k = 0; k < sizeof data / sizeof data[0]; k++)
		if (data[k]->tags && data[k]->line_shift < m->line_shift_min)
			m->line_shift_min = data[k]->line_shift;
	/* access_line's steps: level_access's choices, made once. */
	for (unsigned kind = 0; kind < 4; kind++) {
		const int store = (kind & IT2_ACC_STORE) != 0, fp = (kind & IT2_ACC_FP) != 0;
		unsigned n = 0;
		for (int l = IT2_CACHE_L1D; l < IT2_CACHE_NLEVELS; l++) {
			const struct it2_cache_set_array *a = &m->lv[l];
			if (a->tags == NULL || (fp && (a->flags & IT2_LEVEL_INT_ONLY)))
				continue;
			m->steps[kind][n] = (struct it2_cache_step){
				.level = (uint8_t)l,
				.fill = !(store && (a->flags & IT2_LEVEL_NO_WRITE_ALLOCATE)),
				.stop = !(store && (a->flags & IT2_LEVEL_WRITE_THROUGH)),
				.learn = l == IT2_CACHE_L1D,   /* and m->memo: set below */
			};
			n++;
		}
		m->nsteps[kind] = n;
	}
	memo_init(m);
	if (m->memo == NULL)
		for (unsigned kind = 0; kind < 4; kind++)
			for (unsigned k = 0; k < m->nsteps[kind]; k++)
				m->steps[kind][k].learn = 0;
	return 0;
}

void it2_cache_destroy(struct it2_cache *m)
{
	for (int l = 0; l < IT2_CACHE_NLEVELS; l++)
		sa_destroy(&m->lv[l]);
	sa_destroy(&m->tlb[0]);
	sa_destroy(&m->tlb[1]);
	free(m->memo);
	m->memo = NULL;
	m->fast_kind = FAST_NONE;
	memset(m->nsteps, 0, sizeof m->nsteps);   /* access_slow: nothing to look up */
	m->last_page1 = m->prev_page1 = 0;
}

void it2_cache_flush(struct it2_cache *m)
{
	for (int l = 0; l < IT2_CACHE_NLEVELS; l++)
		sa_flush(&m->lv[l]);
	sa_flush(&m->tlb[0]);
	sa_flush(&m->tlb[1]);
	m->last_page1 = m->prev_page1 = 0;
	/* The memo's guesses all fail their tag checks now (every tag is 0). */
}

void it2_cache_counters_zero(struct it2_cache *m)
{
	memset(&m->cnt, 0, sizeof m->cnt);
}

/*
 * The L1 DTLB's two most recent entries, R0 (last_page1, last_tlb1) and,
 * under LRU, R1 (prev_page1, prev_tlb1): looking either up again needs no
 * stamp (R0: nothing changes; R1: the two swap), so a program alternating
 * between two pages writes none.  Their stamps may be stale; the others'
 * are exact, and an entry leaving R (R1, when a third entry is used) gets a
 * fresh one, since it was used after every entry outside R.  Before a
 * lookup that may stamp or replace (sa_ref), t1_refresh stamps R1 then R0,
 * making every stamp exact: true LRU throughout.  Under NRU, R0 alone: its
 * "used" bit is set, and using it again changes nothing.
 */
HOT void t1_refresh(struct it2_cache *m, struct it2_cache_set_array *t1)
{
	if (m->prev_page1)
		t1->stamp[m->prev_tlb1] = ++t1->clock;
	if (m->last_page1)
		t1->stamp[m->last_tlb1] = ++t1->clock;
}

/* Entry e in the L1 DTLB (filled on a miss): 1 on a hit.  R0 is e after. */
HOT int t1_lookup(struct it2_cache *m, struct it2_cache_set_array *t1, uint64_t e)
{
	const uint64_t e1 = e + 1;
	uint32_t idx;
	if (e1 == m->last_page1)
		return 1;
	if (t1->policy != IT2_CACHE_LRU) {
		int hit = sa_ref(t1, e, 1, &idx);
		m->last_page1 = e1;
		m->last_tlb1 = idx;
		return hit;
	}
	if (e1 == m->prev_page1) {
		m->prev_page1 = m->last_page1;
		m->last_page1 = e1;
		idx = m->prev_tlb1;
		m->prev_tlb1 = m->last_tlb1;
		m->last_tlb1 = idx;
		return 1;
	}
	t1_refresh(m, t1);
	int hit = sa_ref(t1, e, 1, &idx);
	m->prev_page1 = m->last_page1;
	m->prev_tlb1 = m->last_tlb1;
	if (m->prev_page1 && t1->tags[m->prev_tlb1] != m->prev_page1)
		m->prev_page1 = 0;   /* replaced (an L1 DTLB of one entry) */
	m->last_page1 = e1;
	m->last_tlb1 = idx;
	return hit;
}

/* The data TLBs for [addr, addr + size): the worst outcome of the entries
 * touched.  An L1 DTLB miss looks the page up in the L2 DTLB; a miss there
 * is a walk, which fills the L2 DTLB; the L1 DTLB is filled either way.
 * *nent: the L1 DTLB entries touched; m->last_tlb1 the last one's index. */
static enum it2_tlb_outcome dtlb_access(struct it2_cache *m, uint64_t addr, unsigned size, unsigned *nent)
{
	struct it2_cache_set_array *t1 = &m->tlb[0], *t2 = &m->tlb[1];
	uint64_t last = addr + size - 1;
	enum it2_tlb_outcome worst = IT2_TLB_L1;
	unsigned n = 0;
	uint32_t i;

	if (t1->tags == NULL) {
		*nent = 0;
		if (t2->tags == NULL)
			return IT2_TLB_NONE;
		return sa_access(t2, addr, size, 1, &n, &i) ? IT2_TLB_L2 : IT2_TLB_HPW;
	}
	for (uint64_t e = addr >> t1->line_shift; e <= last >> t1->line_shift; e++) {
		n++;
		if (t1_lookup(m, t1, e))
			;
		else if (t2->tags == NULL || !sa_ref_outline(t2, (e << t1->line_shift) >> t2->line_shift, 1, &i))
			worst = IT2_TLB_HPW;
		else if (worst == IT2_TLB_L1)
			worst = IT2_TLB_L2;
	}
	*nent = n;
	return worst;
}

/* The latency of an access served at o->level (or memory), plus the TLB's
 * penalty; counted. */
HOT void finish(struct it2_cache *m, struct it2_cache_outcome *o, int fp, unsigned in)
{
	unsigned lat;
	if (o->level == IT2_CACHE_MEM) {
		lat = fp ? m->cfg.mem_latency_fp : m->cfg.mem_latency;
		m->cnt.mem[in]++;
	} else {
		lat = fp ? m->cfg.level[o->level].latency_fp : m->cfg.level[o->level].latency;
	}
	if (o->tlb == IT2_TLB_L2)
		lat += m->cfg.dtlb2_penalty;
	else if (o->tlb == IT2_TLB_HPW)
		lat += m->cfg.hpw_penalty;
	o->latency = (uint16_t)(lat > UINT16_MAX ? UINT16_MAX : lat);
	m->cnt.cycles[in] += o->latency;
}

HOT void count_tlb(struct it2_cache *m, enum it2_tlb_outcome t, unsigned in)
{
	switch (t) {
	case IT2_TLB_L1: m->cnt.dtlb[in].l1_hits++; break;
	case IT2_TLB_L2: m->cnt.dtlb[in].l2_hits++; break;
	case IT2_TLB_HPW: m->cnt.dtlb[in].walks++; break;
	case IT2_TLB_NONE: break;
	}
}

HOT void count_level(struct it2_cache *m, int l, unsigned in, unsigned flags, int store, int hit)
{
	struct it2_cache_level_counts *c = &m->cnt.level[l][in];
	if (flags & IT2_ACC_IFETCH)
		(*(hit ? &c->ifetch_hits : &c->ifetch_misses))++;
	else if (store)
		(*(hit ? &c->write_hits : &c->write_misses))++;
	else
		(*(hit ? &c->read_hits : &c->read_misses))++;
}

/* The memo learns where the L1D line of addr is (index idx), and the L1 DTLB
 * entry m->last_tlb1 just used. */
HOT void memo_learn(struct it2_cache *m, uint64_t addr, uint32_t idx)
{
	const struct it2_cache_set_array *l1 = &m->lv[IT2_CACHE_L1D];
	const uint64_t block = addr >> l1->line_shift;
	struct it2_cache_memo *me = &m->memo[hash_block(block, m->memo_shift)];
	me->l1d = idx;
	me->tlb1 = m->last_tlb1;
	me->bit = 1ull << (idx - (block & l1->set_mask) * l1->ways);   /* 2^n sets (memo_init) */
}

/* One access at level l, looked up, counted: whether it stops there
 * (o->level set). */
static int level_access(struct it2_cache *m, int l, uint64_t addr, unsigned size, unsigned flags, unsigned in,
                        unsigned nent, struct it2_cache_outcome *o)
{
	struct it2_cache_set_array *a = &m->lv[l];
	const int store = (flags & IT2_ACC_STORE) != 0 && !(flags & IT2_ACC_IFETCH);
	if (a->tags == NULL || ((flags & IT2_ACC_FP) && (a->flags & IT2_LEVEL_INT_ONLY)))
		return 0;
	unsigned nl;
	uint32_t idx;
	int hit = sa_access(a, addr, size, !(store && (a->flags & IT2_LEVEL_NO_WRITE_ALLOCATE)), &nl, &idx);
	if (o->lines == 0)
		o->lines = (uint8_t)(nl > 255 ? 255 : nl);
	/* The L1D line is there now, in one line and one L1 DTLB entry: the
	 * fast path's memo learns where. */
	if (l == IT2_CACHE_L1D && m->memo && nl == 1 && nent <= 1 && idx != UINT32_MAX)
		memo_learn(m, addr, idx);
	count_level(m, l, in, flags, store, hit);
	if (hit && !(store && (a->flags & IT2_LEVEL_WRITE_THROUGH))) {
		o->level = (uint8_t)l;
		return 1;
	}
	return 0;
}

/* Any access: instruction fetches, accesses over several lines or TLB
 * entries, a size of 0 (1). */
static __attribute__((noinline)) void access_general(struct it2_cache *m, uint64_t addr, unsigned size,
                                                     unsigned flags, struct it2_cache_outcome *out)
{
	const unsigned in = (flags / IT2_ACC_IN_RANGE) & 1;
	struct it2_cache_outcome o = { .level = IT2_CACHE_MEM, .tlb = IT2_TLB_NONE };
	unsigned nent = 0;

	if (size == 0)
		size = 1;
	if (flags & IT2_ACC_IFETCH) {
		if (m->lv[IT2_CACHE_L1I].tags == NULL) {
			o.level = IT2_CACHE_NONE;
			goto done;
		}
		if (level_access(m, IT2_CACHE_L1I, addr, size, flags, in, 0, &o))
			goto served;
	} else {
		o.tlb = (uint8_t)dtlb_access(m, addr, size, &nent);
		count_tlb(m, o.tlb, in);
		if (level_access(m, IT2_CACHE_L1D, addr, size, flags, in, nent, &o))
			goto served;
	}
	(void)(level_access(m, IT2_CACHE_L2, addr, size, flags, in, nent, &o) ||
	       level_access(m, IT2_CACHE_L3, addr, size, flags, in, nent, &o));
served:
	finish(m, &o, (flags & IT2_ACC_FP) != 0, in);
done:
	if (out)
		*out = o;
}

/* Everything the fast path does not take.  A data access within one line
 * of every level and one entry of each DTLB (line_shift_min): access_general's
 * work without its loops, over the levels steps[] lists for its kind
 * (flags & 3: store, FP).  Others: access_general. */
static __attribute__((noinline)) void access_slow(struct it2_cache *m, uint64_t addr, unsigned size,
                                                  unsigned flags, struct it2_cache_outcome *out)
{
	if (__builtin_expect((flags & IT2_ACC_IFETCH) || size == 0 ||
	                     ((addr ^ (addr + size - 1)) >> m->line_shift_min) != 0, 0)) {
		access_general(m, addr, size, flags, out);
		return;
	}
	const unsigned in = (flags / IT2_ACC_IN_RANGE) & 1, kind = flags & (IT2_ACC_STORE | IT2_ACC_FP);
	const int store = (flags & IT2_ACC_STORE) != 0;
	struct it2_cache_set_array *t1 = &m->tlb[0], *t2 = &m->tlb[1];
	struct it2_cache_outcome o = { .level = IT2_CACHE_MEM, .tlb = IT2_TLB_L1 };
	uint32_t i;

	if (t1->tags) {   /* dtlb_access for one entry */
		if (t1_lookup(m, t1, addr >> t1->line_shift))
			;
		else if (t2->tags == NULL || !sa_ref(t2, addr >> t2->line_shift, 1, &i))
			o.tlb = IT2_TLB_HPW;
		else
			o.tlb = IT2_TLB_L2;
	} else if (t2->tags) {
		o.tlb = sa_ref(t2, addr >> t2->line_shift, 1, &i) ? IT2_TLB_L2 : IT2_TLB_HPW;
	} else {
		o.tlb = IT2_TLB_NONE;
	}
	count_tlb(m, o.tlb, in);

	const struct it2_cache_step *st = m->steps[kind];
	const unsigned n = m->nsteps[kind];
	o.lines = n != 0;
	for (unsigned k = 0; k < n; k++) {
		const int l = st[k].level;
		struct it2_cache_set_array *a = &m->lv[l];
		uint32_t idx;
		int hit = sa_ref(a, addr >> a->line_shift, st[k].fill, &idx);
		if (st[k].learn && idx != UINT32_MAX)
			memo_learn(m, addr, idx);
		struct it2_cache_level_counts *c = &m->cnt.level[l][in];
		if (store)
			(*(hit ? &c->write_hits : &c->write_misses))++;
		else
			(*(hit ? &c->read_hits : &c->read_misses))++;
		if (hit && st[k].stop) {
			o.level = (uint8_t)l;
			break;
		}
	}
	finish(m, &o, (flags & IT2_ACC_FP) != 0, in);
	if (out)
		*out = o;
}


/* The fast path for the L1D's and the L1 DTLB's policies (constants where
 * inlined; NRU: one word a set; the L1D's sets a power of two), else the
 * slow paths.  (A size of 0, 1 to the general path, is within one line
 * here or taken to the general path, as 1 would be.) */
HOT void fast_access(struct it2_cache *m, uint64_t addr, unsigned size, unsigned flags,
                     struct it2_cache_outcome *out, const int l1_lru, const int t1_kind)
{
	if (__builtin_expect(((flags & m->fast_reject) | ((addr ^ (addr + size - 1)) >> m->fast_shift)) == 0, 1)) {
		struct it2_cache_set_array *l1 = &m->lv[IT2_CACHE_L1D];
		const uint64_t block = addr >> l1->line_shift;
		const struct it2_cache_memo me = m->memo[hash_block(block, m->memo_shift)];
		if (__builtin_expect(l1->tags[me.l1d] == block + 1, 1)) {
			const unsigned in = (flags / IT2_ACC_IN_RANGE) & 1;
			uint8_t tlb = IT2_TLB_NONE;
			if (t1_kind != FAST_T1_NONE) {
				struct it2_cache_set_array *t1 = &m->tlb[0];
				const uint64_t e1 = (addr >> t1->line_shift) + 1;
				if (e1 == m->last_page1) {
					/* R0: nothing changes */
				} else if (t1_kind == FAST_T1_LRU && e1 == m->prev_page1) {   /* R1: a swap */
					const uint32_t ti = m->prev_tlb1;
					m->prev_page1 = m->last_page1;
					m->prev_tlb1 = m->last_tlb1;
					m->last_page1 = e1;
					m->last_tlb1 = ti;
				} else {
					if (__builtin_expect(t1->tags[me.tlb1] != e1, 0))
						goto slow;
					if (t1_kind == FAST_T1_LRU) {   /* R1 leaves R (t1_lookup) */
						if (m->prev_page1)
							t1->stamp[m->prev_tlb1] = ++t1->clock;
						m->prev_page1 = m->last_page1;
						m->prev_tlb1 = m->last_tlb1;
					} else {
						nru1_use(&t1->used[0], me.tlb1, t1->full);   /* one set */
					}
					m->last_page1 = e1;
					m->last_tlb1 = me.tlb1;
				}
				m->cnt.dtlb[in].l1_hits++;
				tlb = IT2_TLB_L1;
			}
			if (l1_lru) {
				l1->stamp[me.l1d] = ++l1->clock;
			} else {
				/* nru_use; stored even when the bit was set (and nothing
				 * changes): cheaper than a branch on it */
				uint64_t *u = &l1->used[block & l1->set_mask];
				const uint64_t v = *u | me.bit;
				*u = v == l1->full ? me.bit : v;
			}
			m->cnt.level[IT2_CACHE_L1D][in].read_hits++;
			const uint16_t lat = m->fast_lat[(flags / IT2_ACC_FP) & 1];
			m->cnt.cycles[in] += lat;
			if (out)
				*out = (struct it2_cache_outcome){ .level = IT2_CACHE_L1D, .tlb = tlb, .lines = 1, .latency = lat };
			return;
		}
	}
slow:
	access_slow(m, addr, size, flags, out);
}

#define FAST_VARIANT(l1, t1)                                                                            \
	static void fast_##l1##_##t1(struct it2_cache *m, uint64_t addr, unsigned size, unsigned flags, \
	                             struct it2_cache_outcome *out)                                     \
	{                                                                                               \
		fast_access(m, addr, size, flags, out, FAST_L1_##l1 == FAST_L1_LRU, FAST_T1_##t1);        \
	}
FAST_VARIANT(LRU, NONE)
FAST_VARIANT(NRU, NONE)
FAST_VARIANT(LRU, LRU)
FAST_VARIANT(LRU, NRU)
FAST_VARIANT(NRU, NRU)

void it2_cache_access(struct it2_cache *m, uint64_t addr, unsigned size, unsigned flags,
                      struct it2_cache_outcome *out)
{
	/* Madison's first: inlined here. */
	if (__builtin_expect(m->fast_kind == FAST_L1_NRU + 2 * FAST_T1_LRU, 1)) {
		fast_access(m, addr, size, flags, out, 0, FAST_T1_LRU);
		return;
	}
	switch (m->fast_kind) {
	case FAST_L1_LRU + 2 * FAST_T1_NONE: fast_LRU_NONE(m, addr, size, flags, out); return;
	case FAST_L1_NRU + 2 * FAST_T1_NONE: fast_NRU_NONE(m, addr, size, flags, out); return;
	case FAST_L1_LRU + 2 * FAST_T1_LRU: fast_LRU_LRU(m, addr, size, flags, out); return;
	case FAST_L1_LRU + 2 * FAST_T1_NRU: fast_LRU_NRU(m, addr, size, flags, out); return;
	case FAST_L1_NRU + 2 * FAST_T1_NRU: fast_NRU_NRU(m, addr, size, flags, out); return;
	default: access_slow(m, addr, size, flags, out); return;
	}
}
