/*
 * The Itanium 2 events the itanium2 component offers: every event of
 * libpfm-3's Itanium 2 table (it2_catalog, src/itanium2/it2_catalog.c), with
 * what this project does with each as data (libpfm4-style table, keyed by
 * the catalogue's names): measured, modelled, or unavailable with the
 * reason.  LOADS_RETIRED is enumerated first, so that PAPI_ENUM_FIRST lands
 * on an event with the data, instruction and opcode bits:
 * papi_native_avail --darr/--iarr/--opcm print a component's first event
 * unfiltered (doc/papi-contract.md §3).
 */
#ifndef HERITAGE_IT2_EVENTS_H
#define HERITAGE_IT2_EVENTS_H

#include <stdint.h>

#include "common/heritage_event_name.h"
#include "common/heritage_source.h"
#include "itanium2/it2_catalog_entry.h"
#include "watch/watch.h"

/* The events this project counts, by their catalogue index (an event's
 * code is its index in it2_catalog, libpfm-3's order). */
enum it2_event_id {
	IT2_LOADS_RETIRED = IT2C_LOADS_RETIRED,
	IT2_STORES_RETIRED = IT2C_STORES_RETIRED,
	IT2_MISALIGNED_LOADS_RETIRED = IT2C_MISALIGNED_LOADS_RETIRED,
	IT2_MISALIGNED_STORES_RETIRED = IT2C_MISALIGNED_STORES_RETIRED,
	IT2_IA64_INST_RETIRED = IT2C_IA64_INST_RETIRED,
	IT2_TAGGED_IBRP0_PMC8 = IT2C_IA64_TAGGED_INST_RETIRED_IBRP0_PMC8,
	IT2_TAGGED_IBRP1_PMC9 = IT2C_IA64_TAGGED_INST_RETIRED_IBRP1_PMC9,
	IT2_TAGGED_IBRP2_PMC8 = IT2C_IA64_TAGGED_INST_RETIRED_IBRP2_PMC8,
	IT2_TAGGED_IBRP3_PMC9 = IT2C_IA64_TAGGED_INST_RETIRED_IBRP3_PMC9,
	IT2_CPU_CYCLES = IT2C_CPU_CYCLES,
	IT2_NEVENTS = IT2C_N
};

/* What an event can be used with (doc/facilities.md 3(a)); the values of
 * papi_heritage.h's PAPI_HERITAGE_CAP_* (the component checks). */
#define IT2_DARR 0x01u    /* data address range restriction */
#define IT2_IARR 0x02u    /* instruction address range restriction */
#define IT2_DEAR 0x04u    /* a data event address register event */
#define IT2_IEAR 0x08u    /* an instruction event address register event */
#define IT2_OPCM 0x10u    /* opcode matching */

enum it2_counts {             /* which watch counter an event reads */
	IT2_COUNT_LOADS = WATCH_FIELD_LOADS,
	IT2_COUNT_STORES = WATCH_FIELD_STORES,
	IT2_COUNT_MISALIGNED_LOADS = WATCH_FIELD_MISALIGNED_LOADS,
	IT2_COUNT_MISALIGNED_STORES = WATCH_FIELD_MISALIGNED_STORES,
	IT2_COUNT_INSNS = WATCH_FIELD_INSNS,
	IT2_COUNT_INSNS_PAIR0 = WATCH_FIELD_INSNS_PAIR0, /* + k for IBRPk */
	IT2_COUNT_CYCLES = WATCH_NFIELDS,                /* not a watch counter */
	IT2_COUNT_MODEL,  /* the cache model's in-range counters (it2_event.model) */
	IT2_COUNT_DEAR,   /* in-range loads the model's outcome qualifies (D-EAR) */
};

/* What this project does with a catalogue event; a zero entry (source 0)
 * is an event with no source here (it2_event_unavailable says why). */
struct it2_event {
	const char *desc;         /* how it is counted here, after libpfm-3's description */
	enum it2_counts counts;
	enum heritage_source source;
	int tagged;               /* IA64_TAGGED_INST_RETIRED_IBRPx */
	/* IT2_COUNT_MODEL: the sum of these counters of the model, offsets in
	 * struct it2_cache_counters (it2_cache.h), the in-range ones; 0 ends. */
	unsigned short model[4];
	/* IT2_COUNT_DEAR: a D-EAR cache event qualifies loads whose modelled
	 * latency is at least dear_latency cycles; a D-EAR TLB event (latency
	 * 0) loads whose translation came from one of dear_tlb (bits
	 * 1 << enum it2_tlb_outcome). */
	unsigned short dear_latency;
	unsigned char dear_tlb;
};

extern const struct it2_event it2_events[IT2_NEVENTS];

static inline const char *it2_event_name(unsigned index)
{
	return it2_catalog[index].name;
}

/* IT2_DARR | IT2_IARR as libpfm-3 marks the event (pme_dar, pme_iar). */
unsigned it2_event_ranges(unsigned index);
/* Every IT2_DARR/IARR/DEAR/IEAR/OPCM bit libpfm-3 gives the event. */
unsigned it2_event_caps(unsigned index);
/* measured, modelled or unavailable, here. */
enum heritage_source it2_event_source(unsigned index);
/* Why an unavailable event cannot be counted here (what would be needed);
 * NULL for the others. */
const char *it2_event_unavailable(unsigned index);

/* Enumeration, in PAPI's order: LOADS_RETIRED first, then the catalogue's
 * order.  it2_event_next: the next event after index with every capability
 * of need (it2_event_caps bits, 0: any); 0, or -ENOENT at the end. */
#define IT2_FIRST_EVENT IT2_LOADS_RETIRED
int it2_event_next(unsigned *index, unsigned need);

/* Event codes carry the event index and the mode qualifier. */
#define IT2_CODE_INDEX_MASK 0x3ffu
#define IT2_CODE_EXACT_SET 0x400u   /* ":exact=" given */
#define IT2_CODE_EXACT_ON 0x800u    /* ":exact=1" */
_Static_assert(IT2C_N <= IT2_CODE_INDEX_MASK + 1, "the catalogue fits the code's index bits");

/* The names and the :exact=0|1 qualifier (heritage_event_name.h). */
extern const struct heritage_event_names it2_event_names;

/* Parses "LOADS_RETIRED", "LOADS_RETIRED:exact=1" (case-insensitive); 0, or
 * -ENOENT (no such event) / -EINVAL (bad qualifier) with a message. */
int it2_event_parse(const char *name, unsigned *code);
/* Writes the event's full name with its qualifier; -ENOENT for bad codes,
 * -ENOSPC if it does not fit. */
int it2_event_format(unsigned code, char *buf, int len);

/* Nominal clock of the modelled CPU_CYCLES (a 1.6 GHz Itanium 2 9M,
 * "Madison"), applied to the thread's CPU time. */
#define IT2_NOMINAL_HZ 1600000000ULL

#endif
