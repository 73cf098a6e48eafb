/*
 * The 21064 event tables (doc/facilities.md 2(a)) and the names users type.
 */
#include "alpha/alpha_events.h"

#include <errno.h>
#include <stdio.h>

#define NO_PAL "the software backend runs no PALcode and cannot see the host's firmware or SMM time"
#define NO_PIN "the 21064 external pin has no counterpart here (its meaning on 21066/21068 is not even documented)"
#define NO_PIPE "pipeline stall cycles cannot be observed by single-stepping (each instruction runs alone)"
#define NO_CACHE "cache behaviour cannot be observed by single-stepping (the core-PMU backend counts it where the " \
	"machine has a PMU: alpha21064(3))"
#define NO_PRED "branch prediction cannot be observed by single-stepping (the core-PMU backend counts it where the " \
	"machine has a PMU: alpha21064(3))"

/* Why the core-PMU backend refuses an event (doc/facilities.md 2(d) "no honest
 * source" and "modelled" rows: a derived quantity cannot drive an overflow
 * interrupt, since perf samples on one event's carries). */
#define PMU_NO_PAL "no host event counts PALcode time (SMM time is invisible; MSR_SMI_COUNT counts entries only)"
#define PMU_NO_PIN "the external pin's meaning is undocumented; no host event can honestly stand for it"
#define PMU_DERIVED "it is derived from several host events, and only one event's carries can drive an overflow " \
	"interrupt"

/* Intel names: Skylake and later (MEM_INST_RETIRED), Haswell/Broadwell
 * (MEM_UOPS_RETIRED); AMD: Zen 2 and later (LS_DISPATCH).  Ice Lake's
 * libpfm4 table refuses combined FP_ARITH umasks, hence the scalar-only
 * fallback, counted as approx like the rest of FP_INSNS. */
const struct alpha_event alpha_events[] = {
	/* Counter 0: MUX0, 4 bits. */
	{ .name = "ISSUES", .desc = "Total instructions issued, divided by 2 (the counter advances once per pair)",
	  .counter = 0, .mux = 0x0, .sw_source = HERITAGE_MEASURED, .feed = ALPHA_FEED_ISSUES,
	  .host = { "perf::INSTRUCTIONS" }, .host_scale = 2, .host_honesty = "approx" },
	{ .name = "PIPELINE_DRY", .desc = "Cycles in which nothing issued because no valid I-stream data was available",
	  .counter = 0, .mux = 0x2, .sw_source = HERITAGE_UNAVAILABLE, .sw_why = NO_PIPE,
	  .host = { "IDQ_UOPS_NOT_DELIVERED:CYCLES_0_UOPS_DELIV_CORE", "perf::STALLED-CYCLES-FRONTEND" },
	  .host_honesty = "approx" },
	{ .name = "LOAD_INSNS", .desc = "All load instructions",
	  .counter = 0, .mux = 0x4, .sw_source = HERITAGE_MEASURED, .feed = ALPHA_FEED_LOADS,
	  .host = { "MEM_INST_RETIRED:ALL_LOADS", "MEM_UOPS_RETIRED:ALL_LOADS", "LS_DISPATCH:LD_DISPATCH" },
	  .host_honesty = "yes-ish" },
	{ .name = "PIPELINE_FROZEN", .desc = "Cycles in which nothing issued because of a resource conflict",
	  .counter = 0, .mux = 0x6, .sw_source = HERITAGE_UNAVAILABLE, .sw_why = NO_PIPE,
	  .host = { "CYCLE_ACTIVITY:STALLS_TOTAL", "perf::STALLED-CYCLES-BACKEND" }, .host_honesty = "approx" },
	{ .name = "BRANCH_INSNS", .desc = "All branches: conditional, unconditional, JSR, HW_REI",
	  .counter = 0, .mux = 0x8, .sw_source = HERITAGE_MEASURED, .feed = ALPHA_FEED_BRANCHES,
	  .host = { "perf::BRANCH-INSTRUCTIONS" }, .host_honesty = "yes" },
	{ .name = "CYCLES", .desc = "Total cycles",
	  .counter = 0, .mux = 0xA, .sw_source = HERITAGE_MODELLED, .feed = ALPHA_FEED_CYCLES,
	  .host = { "perf::CPU-CYCLES" }, .host_honesty = "yes" },
	{ .name = "PAL_MODE", .desc = "Cycles spent in PALcode",
	  .counter = 0, .mux = 0xB, .sw_source = HERITAGE_UNAVAILABLE, .sw_why = NO_PAL, .host_why = PMU_NO_PAL },
	{ .name = "NON_ISSUES", .desc = "Total non-issues, divided by 2",
	  .counter = 0, .mux = 0xC, .sw_source = HERITAGE_UNAVAILABLE, .sw_why = NO_PIPE,
	  .host_why = "it is (2 x cycles - instructions) / 2, and " PMU_DERIVED },
	{ .name = "EXTERNAL", .desc = "External pin input (Linux selects it to switch counter 0 off)",
	  .counter = 0, .mux = 0xE, .sw_source = HERITAGE_UNAVAILABLE, .sw_why = NO_PIN, .host_why = PMU_NO_PIN },
	/* Counter 1: MUX1, 3 bits (oprofile numbers them 0x10 + code). */
	{ .name = "DCACHE_MISSES", .desc = "D-cache misses",
	  .counter = 1, .mux = 0, .sw_source = HERITAGE_UNAVAILABLE, .sw_why = NO_CACHE,
	  .host = { "perf::L1-DCACHE-LOAD-MISSES" }, .host_honesty = "yes-ish" },
	{ .name = "ICACHE_MISSES", .desc = "I-cache misses",
	  .counter = 1, .mux = 1, .sw_source = HERITAGE_UNAVAILABLE, .sw_why = NO_CACHE,
	  .host = { "perf::L1-ICACHE-LOAD-MISSES" }, .host_honesty = "yes-ish" },
	{ .name = "DUAL_ISSUE_CYCLES", .desc = "Cycles in which two instructions issued",
	  .counter = 1, .mux = 2, .sw_source = HERITAGE_UNAVAILABLE, .sw_why = NO_PIPE,
	  .host = { "UOPS_ISSUED:ANY:c=2" }, .host_honesty = "approx" },
	{ .name = "BRANCH_MISPREDICTS", .desc = "Branch mispredictions (conditional, JSR, HW_REI)",
	  .counter = 1, .mux = 3, .sw_source = HERITAGE_UNAVAILABLE, .sw_why = NO_PRED,
	  .host = { "perf::BRANCH-MISSES" }, .host_honesty = "yes" },
	{ .name = "FP_INSNS", .desc = "Floating-point operate instructions (not branches, loads or stores)",
	  .counter = 1, .mux = 4, .sw_source = HERITAGE_MEASURED, .feed = ALPHA_FEED_FP,
	  .host = { "FP_ARITH_INST_RETIRED:SCALAR_DOUBLE:SCALAR_SINGLE:128B_PACKED_DOUBLE:128B_PACKED_SINGLE:"
	            "256B_PACKED_DOUBLE:256B_PACKED_SINGLE",
	            "FP_ARITH_INST_RETIRED:SCALAR", "RETIRED_SSE_AVX_FLOPS:ANY" },
	  .host_honesty = "approx" },
	{ .name = "INTEGER_OPERATE", .desc = "Integer operate instructions",
	  .counter = 1, .mux = 5, .sw_source = HERITAGE_MEASURED, .feed = ALPHA_FEED_INTOP,
	  .host_why = "it is instructions - loads - stores - branches - fp, and " PMU_DERIVED },
	{ .name = "STORE_INSNS", .desc = "Store instructions",
	  .counter = 1, .mux = 6, .sw_source = HERITAGE_MEASURED, .feed = ALPHA_FEED_STORES,
	  .host = { "MEM_INST_RETIRED:ALL_STORES", "MEM_UOPS_RETIRED:ALL_STORES", "LS_DISPATCH:STORE_DISPATCH" },
	  .host_honesty = "yes-ish" },
	/* The pin exists on both counters; names must be unique in PAPI. */
	{ .name = "EXTERNAL_1", .desc = "External input on counter 1 (on 21066/21068 presumably the on-chip "
	  "memory/PCI controller)",
	  .counter = 1, .mux = 7, .sw_source = HERITAGE_UNAVAILABLE, .sw_why = NO_PIN, .host_why = PMU_NO_PIN },
};

const unsigned alpha_nevents = sizeof alpha_events / sizeof alpha_events[0];

/* Counter 0 counts to 2^16 or 2^12, counter 1 to 2^12 or 2^8.  Defaults are
 * the long periods: the fewest interrupts, as a system left alone would run. */
const struct alpha_widths alpha_counter_widths[ALPHA_NCOUNTERS] = {
	{ .def = 16, .other = 12 },
	{ .def = 12, .other = 8 },
};

const struct alpha_event *alpha_event_of(unsigned code)
{
	unsigned idx = code & ALPHA_CODE_INDEX_MASK;
	return idx < alpha_nevents ? &alpha_events[idx] : NULL;
}

int alpha_width_valid(unsigned counter, unsigned width)
{
	return counter < ALPHA_NCOUNTERS &&
	       (width == alpha_counter_widths[counter].def || width == alpha_counter_widths[counter].other)
	               ? 0
	               : -EINVAL;
}

unsigned alpha_code_width(unsigned code)
{
	const struct alpha_event *e = alpha_event_of(code);
	if (!e)
		return 0;
	if (code & ALPHA_CODE_WIDTH_SET)
		return (code >> ALPHA_CODE_WIDTH_SHIFT) & ALPHA_CODE_WIDTH_MASK;
	return alpha_counter_widths[e->counter].def;
}

/* :width= takes the two widths of the event's counter, the default first
 * (enumeration's order). */
static void width_values(unsigned index, struct heritage_qual_values *v)
{
	*v = (struct heritage_qual_values){ 0 };
	if (index >= alpha_nevents)
		return;
	unsigned c = alpha_events[index].counter;
	const struct alpha_widths *w = &alpha_counter_widths[c];
	*v = (struct heritage_qual_values){ .n = 2, .v = { w->def, w->other } };
	snprintf(v->note, sizeof v->note, "counter %u interrupts every 2^%u or 2^%u events (%lu or %lu)", c, w->def,
	         w->other, 1ul << w->def, 1ul << w->other);
}

static const struct heritage_qualifier alpha_qualifiers[] = {
	{ .name = "width", .given = ALPHA_CODE_WIDTH_SET, .shift = ALPHA_CODE_WIDTH_SHIFT,
	  .mask = ALPHA_CODE_WIDTH_MASK, .values = width_values },
};

const struct heritage_event_names alpha_event_names = {
	.component = "alpha21064",
	.first_name = &alpha_events[0].name,
	.stride = sizeof alpha_events[0],
	.n = sizeof alpha_events / sizeof alpha_events[0],
	.index_mask = ALPHA_CODE_INDEX_MASK,
	.quals = alpha_qualifiers,
	.nquals = sizeof alpha_qualifiers / sizeof alpha_qualifiers[0],
};

int alpha_event_parse(const char *name, unsigned *code)
{
	return heritage_event_parse(&alpha_event_names, name, code);
}

int alpha_event_format(unsigned code, char *buf, size_t len)
{
	return heritage_event_format(&alpha_event_names, code, buf, len);
}
