#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/heritage_error.h"
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
		.ranges = IT2_DARR | IT2_IARR, .counts = IT2_COUNT_LOADS, .source = IT2_MEASURED },
	[IT2_STORES_RETIRED] = {
		.name = "STORES_RETIRED",
		.desc = "Retired store instructions whose data address is in the data range.",
		.ranges = IT2_DARR | IT2_IARR, .counts = IT2_COUNT_STORES, .source = IT2_MEASURED },
	[IT2_MISALIGNED_LOADS_RETIRED] = {
		.name = "MISALIGNED_LOADS_RETIRED",
		.desc = "Retired loads in the data range whose address is not a multiple of the access size.",
		.ranges = IT2_DARR | IT2_IARR, .counts = IT2_COUNT_MISALIGNED_LOADS, .source = IT2_MEASURED },
	[IT2_MISALIGNED_STORES_RETIRED] = {
		.name = "MISALIGNED_STORES_RETIRED",
		.desc = "Retired stores in the data range whose address is not a multiple of the access size.",
		.ranges = IT2_DARR | IT2_IARR, .counts = IT2_COUNT_MISALIGNED_STORES, .source = IT2_MEASURED },
	[IT2_IA64_INST_RETIRED] = {
		.name = "IA64_INST_RETIRED",
		.desc = "Retired instructions whose address is in the instruction range cover "
		        "(needs an instruction range). Measured by single-stepping the range.",
		.ranges = IT2_IARR, .counts = IT2_COUNT_INSNS, .source = IT2_MEASURED },
	[IT2_TAGGED_IBRP0_PMC8] = { .name = "IA64_TAGGED_INST_RETIRED_IBRP0_PMC8", .desc = TAGGED_DESC(0, "PMC8"),
		.ranges = IT2_IARR, .counts = IT2_COUNT_INSNS_PAIR0 + 0, .source = IT2_MEASURED, .tagged = 1 },
	[IT2_TAGGED_IBRP1_PMC9] = { .name = "IA64_TAGGED_INST_RETIRED_IBRP1_PMC9", .desc = TAGGED_DESC(1, "PMC9"),
		.ranges = IT2_IARR, .counts = IT2_COUNT_INSNS_PAIR0 + 1, .source = IT2_MEASURED, .tagged = 1 },
	[IT2_TAGGED_IBRP2_PMC8] = { .name = "IA64_TAGGED_INST_RETIRED_IBRP2_PMC8", .desc = TAGGED_DESC(2, "PMC8"),
		.ranges = IT2_IARR, .counts = IT2_COUNT_INSNS_PAIR0 + 2, .source = IT2_MEASURED, .tagged = 1 },
	[IT2_TAGGED_IBRP3_PMC9] = { .name = "IA64_TAGGED_INST_RETIRED_IBRP3_PMC9", .desc = TAGGED_DESC(3, "PMC9"),
		.ranges = IT2_IARR, .counts = IT2_COUNT_INSNS_PAIR0 + 3, .source = IT2_MEASURED, .tagged = 1 },
	[IT2_CPU_CYCLES] = {
		.name = "CPU_CYCLES",
		.desc = "CPU cycles of the thread: its CPU time times a nominal 1.6 GHz (modelled). "
		        "Cannot be range-restricted.",
		.ranges = 0, .counts = IT2_COUNT_CYCLES, .source = IT2_MODELLED },
};

int it2_event_parse(const char *name, unsigned *code)
{
	const char *colon = strchr(name, ':');
	size_t base_len = colon ? (size_t)(colon - name) : strlen(name);

	for (unsigned i = 0; i < IT2_NEVENTS; i++) {
		if (strlen(it2_events[i].name) != base_len || strncasecmp(name, it2_events[i].name, base_len) != 0)
			continue;
		*code = i;
		if (!colon)
			return 0;
		if (strcasecmp(colon, ":exact=1") == 0)
			*code |= IT2_CODE_EXACT_SET | IT2_CODE_EXACT_ON;
		else if (strcasecmp(colon, ":exact=0") == 0)
			*code |= IT2_CODE_EXACT_SET;
		else
			return heritage_fail(-ENOENT, "itanium2:::%s: unknown qualifier '%s' (the only one is :exact=0|1)",
			                     it2_events[i].name, colon);
		return 0;
	}
	return heritage_fail(-ENOENT, "itanium2: no event named '%.*s'", (int)base_len, name);
}

int it2_event_format(unsigned code, char *buf, int len)
{
	unsigned idx = code & IT2_CODE_INDEX_MASK;

	if (idx >= IT2_NEVENTS || (code & ~(IT2_CODE_INDEX_MASK | IT2_CODE_EXACT_SET | IT2_CODE_EXACT_ON)))
		return -ENOENT;
	if (code & IT2_CODE_EXACT_SET)
		snprintf(buf, (size_t)len, "%s:exact=%d", it2_events[idx].name, (code & IT2_CODE_EXACT_ON) ? 1 : 0);
	else
		snprintf(buf, (size_t)len, "%s", it2_events[idx].name);
	return 0;
}
