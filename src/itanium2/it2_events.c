#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "itanium2/it2_cache.h"
#include "itanium2/it2_events.h"

/* In-range counters of the cache model (it2_cache.h), by level and field. */
#define LV(lv, f) offsetof(struct it2_cache_counters, level[IT2_CACHE_##lv][1].f)
#define TLB(f) offsetof(struct it2_cache_counters, dtlb[1].f)
#define MODELLED(d, ...) .desc = d, .counts = IT2_COUNT_MODEL, .source = HERITAGE_MODELLED, .model = { __VA_ARGS__ }
/* What every modelled event shares, said once in itanium2(3): the model sees
 * every access of outline-instrumented code and counts the range's. */
#define SEEN "The Itanium 2 memory hierarchy (it2_cache.c) fed every access of outline-instrumented code, the range's counted. "
#define DEAR_CACHE(lat) { .desc = SEEN "Loads in the range whose modelled latency (the level that served them, the TLB's penalty) is at least " #lat " cycles; with PAPI_overflow each delivery leaves its record (papi_heritage_itanium2_dear_last: PC, data address, latency).", \
	.counts = IT2_COUNT_DEAR, .source = HERITAGE_MODELLED, .dear_latency = lat }
#define DEAR_TLB(d, bits) { .desc = SEEN d " With PAPI_overflow each delivery leaves its record (papi_heritage_itanium2_dear_last).", \
	.counts = IT2_COUNT_DEAR, .source = HERITAGE_MODELLED, .dear_tlb = (bits) }

#define TAGGED_DESC(k, pmc) \
	"Retired Itanium instructions tagged by instruction breakpoint pair " #k \
	" (IBRP" #k ", opcode matcher " pmc "): instructions whose address is in pair " #k \
	" of the instruction range cover. Measured by single-stepping the range."

const struct it2_event it2_events[IT2_NEVENTS] = {
	[IT2_LOADS_RETIRED] = {
		.desc = "Retired load instructions whose data address is in the data range "
		        "(every instrumented load without one). A read-modify-write counts one load and one store.",
		.counts = IT2_COUNT_LOADS, .source = HERITAGE_MEASURED },
	[IT2_STORES_RETIRED] = {
		.desc = "Retired store instructions whose data address is in the data range.",
		.counts = IT2_COUNT_STORES, .source = HERITAGE_MEASURED },
	[IT2_MISALIGNED_LOADS_RETIRED] = {
		.desc = "Retired loads in the data range whose address is not a multiple of the access size.",
		.counts = IT2_COUNT_MISALIGNED_LOADS, .source = HERITAGE_MEASURED },
	[IT2_MISALIGNED_STORES_RETIRED] = {
		.desc = "Retired stores in the data range whose address is not a multiple of the access size.",
		.counts = IT2_COUNT_MISALIGNED_STORES, .source = HERITAGE_MEASURED },
	[IT2_IA64_INST_RETIRED] = {
		.desc = "Retired instructions whose address is in the instruction range cover "
		        "(needs an instruction range). Measured by single-stepping the range.",
		.counts = IT2_COUNT_INSNS, .source = HERITAGE_MEASURED },
	[IT2C_IA64_INST_RETIRED_THIS] = {
		.desc = "The same count as IA64_INST_RETIRED (libpfm-3's alias): retired instructions whose address is "
		        "in the instruction range cover. Measured by single-stepping the range.",
		.counts = IT2_COUNT_INSNS, .source = HERITAGE_MEASURED },
	[IT2_TAGGED_IBRP0_PMC8] = { .desc = TAGGED_DESC(0, "PMC8"),
		.counts = IT2_COUNT_INSNS_PAIR0 + 0, .source = HERITAGE_MEASURED, .tagged = 1 },
	[IT2_TAGGED_IBRP1_PMC9] = { .desc = TAGGED_DESC(1, "PMC9"),
		.counts = IT2_COUNT_INSNS_PAIR0 + 1, .source = HERITAGE_MEASURED, .tagged = 1 },
	[IT2_TAGGED_IBRP2_PMC8] = { .desc = TAGGED_DESC(2, "PMC8"),
		.counts = IT2_COUNT_INSNS_PAIR0 + 2, .source = HERITAGE_MEASURED, .tagged = 1 },
	[IT2_TAGGED_IBRP3_PMC9] = { .desc = TAGGED_DESC(3, "PMC9"),
		.counts = IT2_COUNT_INSNS_PAIR0 + 3, .source = HERITAGE_MEASURED, .tagged = 1 },
	/* The memory hierarchy (issue 21): x86 loads are all taken as integer
	 * loads (the hooks do not say which register file they fill), so none
	 * bypasses the modelled L1D as an Itanium FP load would. */
	[IT2C_L1D_READS_SET0] = { MODELLED(SEEN "Loads in the range looked up in the L1D.", LV(L1D, read_hits), LV(L1D, read_misses)) },
	[IT2C_L1D_READS_SET1] = { MODELLED(SEEN "Loads in the range looked up in the L1D (the same count as L1D_READS_SET0, from the other counter set).",
	                                   LV(L1D, read_hits), LV(L1D, read_misses)) },
	[IT2C_L1D_READ_MISSES_ALL] = { MODELLED(SEEN "Loads in the range that missed the L1D (16 KiB, 4-way, 64-byte lines).", LV(L1D, read_misses)) },
	[IT2C_L2_DATA_REFERENCES_L2_DATA_READS] = { MODELLED(SEEN "Loads in the range that reached the L2.", LV(L2, read_hits), LV(L2, read_misses)) },
	[IT2C_L2_DATA_REFERENCES_L2_DATA_WRITES] = { MODELLED(SEEN "Stores in the range that reached the L2 (every store: the L1D writes through).",
	                                                      LV(L2, write_hits), LV(L2, write_misses)) },
	[IT2C_L2_DATA_REFERENCES_L2_ALL] = { MODELLED(SEEN "Loads and stores in the range that reached the L2.",
	                                              LV(L2, read_hits), LV(L2, read_misses), LV(L2, write_hits), LV(L2, write_misses)) },
	[IT2C_L2_MISSES] = { MODELLED(SEEN "Data accesses in the range that missed the L2 (instruction fetches are not seen, so not counted).",
	                              LV(L2, read_misses), LV(L2, write_misses)) },
	[IT2C_L3_READS_DATA_READ_ALL] = { MODELLED(SEEN "Loads in the range that reached the L3.", LV(L3, read_hits), LV(L3, read_misses)) },
	[IT2C_L3_READS_DATA_READ_HIT] = { MODELLED(SEEN "Loads in the range that hit the L3.", LV(L3, read_hits)) },
	[IT2C_L3_READS_DATA_READ_MISS] = { MODELLED(SEEN "Loads in the range that missed the L3.", LV(L3, read_misses)) },
	[IT2C_L3_WRITES_DATA_WRITE_ALL] = { MODELLED(SEEN "Stores in the range that reached the L3.", LV(L3, write_hits), LV(L3, write_misses)) },
	[IT2C_L3_WRITES_DATA_WRITE_HIT] = { MODELLED(SEEN "Stores in the range that hit the L3.", LV(L3, write_hits)) },
	[IT2C_L3_WRITES_DATA_WRITE_MISS] = { MODELLED(SEEN "Stores in the range that missed the L3.", LV(L3, write_misses)) },
	[IT2C_L3_REFERENCES] = { MODELLED(SEEN "Data accesses in the range that reached the L3 (no instruction fetches, no L2 write-backs: not modelled).",
	                                  LV(L3, read_hits), LV(L3, read_misses), LV(L3, write_hits), LV(L3, write_misses)) },
	[IT2C_L3_MISSES] = { MODELLED(SEEN "Data accesses in the range that missed the L3.", LV(L3, read_misses), LV(L3, write_misses)) },
	[IT2C_DTLB_INSERTS_HPW] = { MODELLED(SEEN "Accesses in the range whose translation missed both DTLBs: the hardware page walker's inserts.", TLB(walks)) },
	[IT2C_L2DTLB_MISSES] = { MODELLED(SEEN "Accesses in the range that missed the L2 DTLB (every walk finds its entry: the VHPT is not modelled).", TLB(walks)) },
	[IT2C_L1DTLB_TRANSFER] = { MODELLED(SEEN "Accesses in the range that missed the L1 DTLB and hit the L2 DTLB (loads and stores: the model does not tell them apart here).",
	                                    TLB(l2_hits)) },
	[IT2C_DATA_REFERENCES_SET0] = { .desc = "Loads and stores in the range, as the cache model sees them (outline-instrumented code).",
	                                .counts = IT2_COUNT_MODEL, .source = HERITAGE_MEASURED,
	                                .model = { LV(L1D, read_hits), LV(L1D, read_misses), LV(L1D, write_hits), LV(L1D, write_misses) } },
	[IT2C_DATA_REFERENCES_SET1] = { .desc = "Loads and stores in the range (the same count as DATA_REFERENCES_SET0, from the other counter set).",
	                                .counts = IT2_COUNT_MODEL, .source = HERITAGE_MEASURED,
	                                .model = { LV(L1D, read_hits), LV(L1D, read_misses), LV(L1D, write_hits), LV(L1D, write_misses) } },
	/* The Data EAR (issue 21 item 4): a count of the loads it would sample,
	 * and a record per overflow. */
	[IT2C_DATA_EAR_CACHE_LAT4] = DEAR_CACHE(4),
	[IT2C_DATA_EAR_CACHE_LAT8] = DEAR_CACHE(8),
	[IT2C_DATA_EAR_CACHE_LAT16] = DEAR_CACHE(16),
	[IT2C_DATA_EAR_CACHE_LAT32] = DEAR_CACHE(32),
	[IT2C_DATA_EAR_CACHE_LAT64] = DEAR_CACHE(64),
	[IT2C_DATA_EAR_CACHE_LAT128] = DEAR_CACHE(128),
	[IT2C_DATA_EAR_CACHE_LAT256] = DEAR_CACHE(256),
	[IT2C_DATA_EAR_CACHE_LAT512] = DEAR_CACHE(512),
	[IT2C_DATA_EAR_CACHE_LAT1024] = DEAR_CACHE(1024),
	[IT2C_DATA_EAR_CACHE_LAT2048] = DEAR_CACHE(2048),
	[IT2C_DATA_EAR_CACHE_LAT4096] = DEAR_CACHE(4096),
	[IT2C_DATA_EAR_TLB_ALL] = DEAR_TLB("Loads in the range that missed the L1 DTLB.", (1u << IT2_TLB_L2) | (1u << IT2_TLB_HPW)),
	[IT2C_DATA_EAR_TLB_L2DTLB] = DEAR_TLB("Loads in the range that missed the L1 DTLB and hit the L2 DTLB.", 1u << IT2_TLB_L2),
	[IT2C_DATA_EAR_TLB_VHPT] = DEAR_TLB("Loads in the range translated by the page walker (the VHPT).", 1u << IT2_TLB_HPW),
	[IT2C_DATA_EAR_TLB_L2DTLB_OR_VHPT] = DEAR_TLB("Loads in the range that missed the L1 DTLB.", (1u << IT2_TLB_L2) | (1u << IT2_TLB_HPW)),
	[IT2_CPU_CYCLES] = {
		.desc = "CPU cycles of the thread: its CPU time times a nominal 1.6 GHz (modelled). "
		        "Cannot be range-restricted.",
		.counts = IT2_COUNT_CYCLES, .source = HERITAGE_MODELLED },
};

/* Why the others cannot be counted here, by the first matching name prefix
 * (libpfm-3's event families); what would be needed. */
static const struct {
	const char *prefix;
	const char *why;
} unavailable[] = {
	{ "ALAT_", "the ALAT (advanced load address table) tracks IA-64 advanced loads (ld.a, chk.a), "
	           "which x86-64 does not have: it would need an IA-64 binary" },
	{ "DATA_EAR_ALAT", "the ALAT tracks IA-64 advanced loads, which x86-64 does not have" },
	{ "DATA_EAR_TLB_", "a DTLB miss that faults to software: the model's page walker always finds the translation "
	                   "(the VHPT and the OS's fault handler are not modelled)" },
	{ "DATA_EAR_EVENTS", "the number of D-EAR captures: use a DATA_EAR_CACHE_* or DATA_EAR_TLB_* event, each capture "
	                     "a PAPI_overflow delivery" },
	{ "INST_EAR_", "the instruction EAR samples instruction-fetch misses (L1I, ITLB): no source sees this "
	               "thread's instruction fetches (the instrument hooks see data accesses only)" },
	{ "L1I_", "the L1 instruction cache: no source sees this thread's instruction fetches" },
	{ "L2_INST_", "instruction fetches reaching L2: no source sees this thread's instruction fetches" },
	{ "L3_INST_", "instruction fetches reaching L3: no source sees this thread's instruction fetches" },
	{ "ITLB_", "the instruction TLB: no source sees this thread's instruction fetches" },
	{ "ISB_", "the instruction streaming buffer: no source sees this thread's instruction fetches" },
	{ "BACK_END_BUBBLE", "pipeline bubbles: it would need a cycle-level model of the Itanium 2 pipeline" },
	{ "BE_", "back-end stalls and flushes: it would need a cycle-level model of the Itanium 2 pipeline" },
	{ "FE_", "front-end stalls: it would need a cycle-level model of the Itanium 2 pipeline" },
	{ "IDEAL_BE_", "back-end bandwidth: it would need a cycle-level model of the Itanium 2 pipeline" },
	{ "DISP_STALLED", "dispersal stalls: it would need a cycle-level model of the Itanium 2 pipeline" },
	{ "SYLL_", "IA-64 syllables (bundle slots): x86-64 code has no bundles" },
	{ "NOPS_RETIRED", "IA-64 nop syllables fill bundles; x86-64 code has no bundles" },
	{ "PREDICATE_SQUASHED", "IA-64 predication: x86-64 has no predicate registers" },
	{ "RSE_", "the register stack engine spills IA-64 stacked registers; x86-64 has none" },
	{ "BR_", "branch prediction internals (the BTB, its predictors and their mispredictions): "
	         "it would need a model of the Itanium 2 branch predictors fed by every branch" },
	{ "BRANCH_", "branch prediction internals: it would need a model of the Itanium 2 branch predictors" },
	{ "ENCBR_", "branch prediction internals: it would need a model of the Itanium 2 branch predictors" },
	{ "BUS_", "the system bus (front-side bus transactions, snoops, bus queues) is shared by every "
	          "processor on it: no per-thread source, and x86-64 has no such bus" },
	{ "ER_", "the external request queue serves the system bus: no per-thread source" },
	{ "L3_", "this L3 event counts traffic the model does not follow (bus, snoops, writebacks, instruction side)" },
	{ "L2_", "this L2 event counts queueing or traffic the model does not follow" },
	{ "FP_", "IA-64 floating-point status and its software assists: no x86-64 counterpart" },
	{ "CPU_CPL_", "Itanium privilege-level changes: range counting is user-level only" },
	{ "SERIALIZATION_", "IA-64 serialisation events: no x86-64 counterpart" },
};

/* Every event takes :exact=, as before the shared parser (enumeration
 * offers it only on range-capable events). */
static void exact_values(unsigned index, struct heritage_qual_values *v)
{
	(void)index;
	*v = (struct heritage_qual_values){ .n = 2, .v = { 0, 1 } };
}

static const struct heritage_qualifier it2_qualifiers[] = {
	{ .name = "exact", .given = IT2_CODE_EXACT_SET, .shift = 11, .mask = 1, .values = exact_values },
};
_Static_assert(IT2_CODE_EXACT_ON == 1u << 11, "the :exact= value is the ON bit");

const struct heritage_event_names it2_event_names = {
	.component = "itanium2",
	.first_name = &it2_catalog[0].name,
	.stride = sizeof it2_catalog[0],
	.n = IT2_NEVENTS,
	.index_mask = IT2_CODE_INDEX_MASK,
	.quals = it2_qualifiers,
	.nquals = sizeof it2_qualifiers / sizeof it2_qualifiers[0],
};

int it2_event_parse(const char *name, unsigned *code)
{
	return heritage_event_parse(&it2_event_names, name, code);
}

int it2_event_format(unsigned code, char *buf, int len)
{
	return len <= 0 ? -ENOSPC : heritage_event_format(&it2_event_names, code, buf, (size_t)len);
}

unsigned it2_event_ranges(unsigned index)
{
	return it2_event_caps(index) & (IT2_DARR | IT2_IARR);
}

unsigned it2_event_caps(unsigned index)
{
	if (index >= IT2_NEVENTS)
		return 0;
	const struct it2_cat_entry *c = &it2_catalog[index];
	return ((c->qual & IT2_QUAL_DAR) ? IT2_DARR : 0) | ((c->qual & IT2_QUAL_IAR) ? IT2_IARR : 0) |
	       ((c->qual & IT2_QUAL_OPM) ? IT2_OPCM : 0) | (it2_cat_is_dear(c) ? IT2_DEAR : 0) |
	       (it2_cat_is_iear(c) ? IT2_IEAR : 0);
}

enum heritage_source it2_event_source(unsigned index)
{
	if (index >= IT2_NEVENTS || !it2_events[index].source)
		return HERITAGE_UNAVAILABLE;
	return it2_events[index].source;
}

const char *it2_event_unavailable(unsigned index)
{
	if (it2_event_source(index) != HERITAGE_UNAVAILABLE)
		return NULL;
	if (index >= IT2_NEVENTS)
		return "no such event";
	const char *name = it2_catalog[index].name;
	for (size_t i = 0; i < sizeof unavailable / sizeof unavailable[0]; i++)
		if (strncmp(name, unavailable[i].prefix, strlen(unavailable[i].prefix)) == 0)
			return unavailable[i].why;
	return "no source on x86-64 Linux counts what this Itanium 2 event counts";
}

int it2_event_next(unsigned *index, unsigned need)
{
	/* LOADS_RETIRED, then the catalogue without it. */
	unsigned i = *index == IT2_FIRST_EVENT ? 0 : *index + 1;
	for (; i < IT2_NEVENTS; i++) {
		if (i == IT2_FIRST_EVENT)
			continue;
		if ((it2_event_caps(i) & need) == need) {
			*index = i;
			return 0;
		}
	}
	return -ENOENT;
}
