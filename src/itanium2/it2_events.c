#include <errno.h>

#include "itanium2/it2_events.h"

#define TAGGED_DESC(k, pmc) \
	"Retired Itanium instructions tagged by instruction breakpoint pair " #k \
	" (IBRP" #k ", opcode matcher " pmc "): instructions whose address is in pair " #k \
	" of the instruction range cover. Measured by single-stepping the range."

const struct it2_event it2_events[IT2_NEVENTS] = {
	[IT2_LOADS_RETIRED] = {
		.name = "LOADS_RETIRED",
		.desc = "Retired load instructions whose data address is in the data range "
		        "(every instrumented load without one). A read-modify-write counts one load and one store.",
		.ranges = IT2_DARR | IT2_IARR, .counts = IT2_COUNT_LOADS, .source = HERITAGE_MEASURED },
	[IT2_STORES_RETIRED] = {
		.name = "STORES_RETIRED",
		.desc = "Retired store instructions whose data address is in the data range.",
		.ranges = IT2_DARR | IT2_IARR, .counts = IT2_COUNT_STORES, .source = HERITAGE_MEASURED },
	[IT2_MISALIGNED_LOADS_RETIRED] = {
		.name = "MISALIGNED_LOADS_RETIRED",
		.desc = "Retired loads in the data range whose address is not a multiple of the access size.",
		.ranges = IT2_DARR | IT2_IARR, .counts = IT2_COUNT_MISALIGNED_LOADS, .source = HERITAGE_MEASURED },
	[IT2_MISALIGNED_STORES_RETIRED] = {
		.name = "MISALIGNED_STORES_RETIRED",
		.desc = "Retired stores in the data range whose address is not a multiple of the access size.",
		.ranges = IT2_DARR | IT2_IARR, .counts = IT2_COUNT_MISALIGNED_STORES, .source = HERITAGE_MEASURED },
	[IT2_IA64_INST_RETIRED] = {
		.name = "IA64_INST_RETIRED",
		.desc = "Retired instructions whose address is in the instruction range cover "
		        "(needs an instruction range). Measured by single-stepping the range.",
		.ranges = IT2_IARR, .counts = IT2_COUNT_INSNS, .source = HERITAGE_MEASURED },
	[IT2_TAGGED_IBRP0_PMC8] = { .name = "IA64_TAGGED_INST_RETIRED_IBRP0_PMC8", .desc = TAGGED_DESC(0, "PMC8"),
		.ranges = IT2_IARR, .counts = IT2_COUNT_INSNS_PAIR0 + 0, .source = HERITAGE_MEASURED, .tagged = 1 },
	[IT2_TAGGED_IBRP1_PMC9] = { .name = "IA64_TAGGED_INST_RETIRED_IBRP1_PMC9", .desc = TAGGED_DESC(1, "PMC9"),
		.ranges = IT2_IARR, .counts = IT2_COUNT_INSNS_PAIR0 + 1, .source = HERITAGE_MEASURED, .tagged = 1 },
	[IT2_TAGGED_IBRP2_PMC8] = { .name = "IA64_TAGGED_INST_RETIRED_IBRP2_PMC8", .desc = TAGGED_DESC(2, "PMC8"),
		.ranges = IT2_IARR, .counts = IT2_COUNT_INSNS_PAIR0 + 2, .source = HERITAGE_MEASURED, .tagged = 1 },
	[IT2_TAGGED_IBRP3_PMC9] = { .name = "IA64_TAGGED_INST_RETIRED_IBRP3_PMC9", .desc = TAGGED_DESC(3, "PMC9"),
		.ranges = IT2_IARR, .counts = IT2_COUNT_INSNS_PAIR0 + 3, .source = HERITAGE_MEASURED, .tagged = 1 },
	[IT2_CPU_CYCLES] = {
		.name = "CPU_CYCLES",
		.desc = "CPU cycles of the thread: its CPU time times a nominal 1.6 GHz (modelled). "
		        "Cannot be range-restricted.",
		.ranges = 0, .counts = IT2_COUNT_CYCLES, .source = HERITAGE_MODELLED },
};

/* Every event takes :exact=, as before the shared parser (enumeration
 * offers it only on range-capable events). */
static void exact_values(unsigned index, struct heritage_qual_values *v)
{
	(void)index;
	*v = (struct heritage_qual_values){ .n = 2, .v = { 0, 1 } };
}

static const struct heritage_qualifier it2_qualifiers[] = {
	{ .name = "exact", .given = IT2_CODE_EXACT_SET, .shift = 9, .mask = 1, .values = exact_values },
};
_Static_assert(IT2_CODE_EXACT_ON == 1u << 9, "the :exact= value is the ON bit");

const struct heritage_event_names it2_event_names = {
	.component = "itanium2",
	.first_name = &it2_events[0].name,
	.stride = sizeof it2_events[0],
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
