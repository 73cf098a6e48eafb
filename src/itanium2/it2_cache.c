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
	if (policy == IT2_CACHE_NRU)
		a->used = calloc(lines, 1);
	if (a->tags == NULL || (policy == IT2_CACHE_NRU && a->used == NULL)) {
		free(a->tags);
		free(a->used);
		memset(a, 0, sizeof *a);
		return heritage_fail(-ENOMEM, "it2_cache: %s: no memory for %llu lines", what, (unsigned long long)lines);
	}
	return 0;
}

static void sa_destroy(struct it2_cache_set_array *a)
{
	free(a->tags);
	free(a->used);
	memset(a, 0, sizeof *a);
}

static void sa_flush(struct it2_cache_set_array *a)
{
	size_t n = (size_t)a->sets * a->ways;
	if (a->tags)
		memset(a->tags, 0, n * sizeof *a->tags);
	if (a->used)
		memset(a->used, 0, n);
}

/*
 * NRU: a line's bit is set when it is used (hit or filled); when that sets
 * the last clear bit of its set, every other bit of the set is cleared.  The
 * victim is the first invalid way, else the first way whose bit is clear
 * (lowest way number).  So the set always keeps at least one clear bit
 * (with more than one way), and a line survives until every other line has
 * been used since it was.
 */
static void nru_use(uint8_t *u, uint32_t n, uint32_t w)
{
	u[w] = 1;
	for (uint32_t i = 0; i < n; i++)
		if (!u[i])
			return;
	memset(u, 0, n);
	u[w] = 1;
}

/* One line (block number) in its set: 1 on a hit.  fill: install it on a
 * miss.  LRU keeps each set ordered most recent first (cachegrind's
 * cachesim_setref_is_miss); NRU keeps lines in their ways. */
static int sa_ref(struct it2_cache_set_array *a, uint64_t block, int fill)
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
		if (fill) {      /* a miss: the LRU line goes */
			memmove(t + 1, t, (n - 1) * sizeof *t);
			t[0] = tag;
		}
		return 0;
	}

	uint8_t *u = a->used + set * n;
	for (w = 0; w < n; w++)
		if (t[w] == tag) {
			nru_use(u, n, w);
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
			w = 0;       /* one way */
	}
	t[w] = tag;
	nru_use(u, n, w);
	return 0;
}

/* [addr, addr + size) at one level: every line touched is looked up (each
 * updates the state), and the access hits only if all of them hit
 * (cachegrind's cachesim_ref_is_miss, generalised to any number of lines). */
static int sa_access(struct it2_cache_set_array *a, uint64_t addr, unsigned size, int fill, unsigned *nlines)
{
	uint64_t b = addr >> a->line_shift, last = (addr + size - 1) >> a->line_shift;
	int hit = sa_ref(a, b, fill);
	unsigned n = 1;
	while (b != last) {
		b++;
		hit &= sa_ref(a, b, fill);
		n++;
	}
	*nlines = n;
	return hit;
}

/* ---- the model ------------------------------------------------------------- */

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
	if (r)
		it2_cache_destroy(m);
	return r;
}

void it2_cache_destroy(struct it2_cache *m)
{
	for (int l = 0; l < IT2_CACHE_NLEVELS; l++)
		sa_destroy(&m->lv[l]);
	sa_destroy(&m->tlb[0]);
	sa_destroy(&m->tlb[1]);
	m->last_page1 = 0;
}

void it2_cache_flush(struct it2_cache *m)
{
	for (int l = 0; l < IT2_CACHE_NLEVELS; l++)
		sa_flush(&m->lv[l]);
	sa_flush(&m->tlb[0]);
	sa_flush(&m->tlb[1]);
	m->last_page1 = 0;
}

void it2_cache_counters_zero(struct it2_cache *m)
{
	memset(&m->cnt, 0, sizeof m->cnt);
}

/* The data TLBs for [addr, addr + size): the worst outcome of the entries
 * touched.  An L1 DTLB miss looks the page up in the L2 DTLB; a miss there
 * is a walk, which fills the L2 DTLB; the L1 DTLB is filled either way. */
static enum it2_tlb_outcome dtlb_access(struct it2_cache *m, uint64_t addr, unsigned size)
{
	struct it2_cache_set_array *t1 = &m->tlb[0], *t2 = &m->tlb[1];
	uint64_t last = addr + size - 1;
	enum it2_tlb_outcome worst = IT2_TLB_L1;
	unsigned n;

	if (t1->tags == NULL) {
		if (t2->tags == NULL)
			return IT2_TLB_NONE;
		return sa_access(t2, addr, size, 1, &n) ? IT2_TLB_L2 : IT2_TLB_HPW;
	}
	for (uint64_t e = addr >> t1->line_shift; e <= last >> t1->line_shift; e++) {
		/* The entry the previous access used is the most recent one, under
		 * LRU and NRU alike: looking it up again changes nothing. */
		if (e + 1 == m->last_page1 || sa_ref(t1, e, 1))
			;
		else if (t2->tags == NULL || !sa_ref(t2, (e << t1->line_shift) >> t2->line_shift, 1))
			worst = IT2_TLB_HPW;
		else if (worst == IT2_TLB_L1)
			worst = IT2_TLB_L2;
		m->last_page1 = e + 1;
	}
	return worst;
}

void it2_cache_access(struct it2_cache *m, uint64_t addr, unsigned size, unsigned flags,
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
		o.tlb = (uint8_t)dtlb_access(m, addr, size);
		switch (o.tlb) {
		case IT2_TLB_L1: m->cnt.dtlb[in].l1_hits++; break;
		case IT2_TLB_L2: m->cnt.dtlb[in].l2_hits++; break;
		case IT2_TLB_HPW: m->cnt.dtlb[in].walks++; break;
		}
		l = IT2_CACHE_L1D;
	}

	o.level = IT2_CACHE_MEM;
	for (; l < IT2_CACHE_NLEVELS; l = l == IT2_CACHE_L1I ? IT2_CACHE_L2 : l + 1) {
		struct it2_cache_set_array *a = &m->lv[l];
		if (a->tags == NULL || (fp && (a->flags & IT2_LEVEL_INT_ONLY)))
			continue;
		unsigned nl;
		int hit = sa_access(a, addr, size, !(store && (a->flags & IT2_LEVEL_NO_WRITE_ALLOCATE)), &nl);
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
