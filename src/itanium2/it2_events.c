#include <errno.h>
#include <string.h>

#include "itanium2/it2_events.h"

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
	[IT2_TAGGED_IBRP0_PMC8] = { .desc = TAGGED_DESC(0, "PMC8"),
		.counts = IT2_COUNT_INSNS_PAIR0 + 0, .source = HERITAGE_MEASURED, .tagged = 1 },
	[IT2_TAGGED_IBRP1_PMC9] = { .desc = TAGGED_DESC(1, "PMC9"),
		.counts = IT2_COUNT_INSNS_PAIR0 + 1, .source = HERITAGE_MEASURED, .tagged = 1 },
	[IT2_TAGGED_IBRP2_PMC8] = { .desc = TAGGED_DESC(2, "PMC8"),
		.counts = IT2_COUNT_INSNS_PAIR0 + 2, .source = HERITAGE_MEASURED, .tagged = 1 },
	[IT2_TAGGED_IBRP3_PMC9] = { .desc = TAGGED_DESC(3, "PMC9"),
		.counts = IT2_COUNT_INSNS_PAIR0 + 3, .source = HERITAGE_MEASURED, .tagged = 1 },
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
