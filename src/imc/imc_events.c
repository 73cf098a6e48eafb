#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "imc/imc_events.h"

const struct imc_event imc_events[IMC_NEVENTS] = {
	[IMC_MCS01_64B_RD_DISP_PORT01] = {
		.name = "PM_MCS01_64B_RD_DISP_PORT01",
		.desc = "64-byte read dispatches on ports 0-1 of memory controller pair MCS01 (nest IMC, per chip; "
		        ":cpu=N names the chip by one of its CPUs). No honest source off POWER9 [unavailable]",
		.source = HERITAGE_UNAVAILABLE, .domain = IMC_NEST, .units = "" },
	[IMC_THREAD_CPU_NS] = {
		.name = "THREAD_CPU_NS",
		.desc = "CPU time of the calling thread in ns, clock_gettime(CLOCK_THREAD_CPUTIME_ID); "
		        "a stand-in for thread IMC's cycle counts, not an IMC counter [measured]",
		.source = HERITAGE_MEASURED, .domain = IMC_THREAD, .units = "ns" },
};

/* :cpu=N on nest events, N a CPU of this machine. */
static void cpu_values(unsigned index, struct heritage_qual_values *v)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);

	*v = (struct heritage_qual_values){ 0 };
	if (index < IMC_NEVENTS && imc_events[index].domain == IMC_NEST && n > 0) {
		*v = (struct heritage_qual_values){ .n = 2, .range = 1, .v = { 0, (unsigned long)n - 1 } };
		snprintf(v->note, sizeof v->note, "this machine has %ld CPUs", n);
	}
}

static const struct heritage_qualifier imc_qualifiers[] = {
	{ .name = "cpu", .given = 0, .shift = IMC_CODE_CPU_SHIFT, .mask = IMC_CODE_CPU_MASK, .values = cpu_values },
};

const struct heritage_event_names imc_event_names = {
	.component = "imc",
	.first_name = &imc_events[0].name,
	.stride = sizeof imc_events[0],
	.n = IMC_NEVENTS,
	.index_mask = IMC_CODE_INDEX_MASK,
	.quals = imc_qualifiers,
	.nquals = sizeof imc_qualifiers / sizeof imc_qualifiers[0],
};

int imc_event_parse(const char *name, unsigned *code)
{
	return heritage_event_parse(&imc_event_names, name, code);
}

int imc_event_format(unsigned code, char *buf, size_t len)
{
	return heritage_event_format(&imc_event_names, code, buf, len);
}
