/*
 * The Itanium 2 events the itanium2 component offers, as data (libpfm4-style
 * table).  Range-capable events come first so that PAPI_ENUM_FIRST lands on
 * one: papi_native_avail --darr/--iarr print a component's first event
 * unfiltered (papi-component-contract.md §3).
 */
#ifndef HERITAGE_IT2_EVENTS_H
#define HERITAGE_IT2_EVENTS_H

#include <stdint.h>

#include "common/heritage_event_name.h"
#include "common/heritage_source.h"
#include "watch/watch.h"

enum it2_event_id {
	IT2_LOADS_RETIRED,
	IT2_STORES_RETIRED,
	IT2_MISALIGNED_LOADS_RETIRED,
	IT2_MISALIGNED_STORES_RETIRED,
	IT2_IA64_INST_RETIRED,
	IT2_TAGGED_IBRP0_PMC8,
	IT2_TAGGED_IBRP1_PMC9,
	IT2_TAGGED_IBRP2_PMC8,
	IT2_TAGGED_IBRP3_PMC9,
	IT2_CPU_CYCLES,
	IT2_NEVENTS
};

/* What restricts an event (facilities.md 3(a)). */
#define IT2_DARR 0x1u     /* data address range restriction */
#define IT2_IARR 0x2u     /* instruction address range restriction */

enum it2_counts {             /* which watch counter an event reads */
	IT2_COUNT_LOADS = WATCH_FIELD_LOADS,
	IT2_COUNT_STORES = WATCH_FIELD_STORES,
	IT2_COUNT_MISALIGNED_LOADS = WATCH_FIELD_MISALIGNED_LOADS,
	IT2_COUNT_MISALIGNED_STORES = WATCH_FIELD_MISALIGNED_STORES,
	IT2_COUNT_INSNS = WATCH_FIELD_INSNS,
	IT2_COUNT_INSNS_PAIR0 = WATCH_FIELD_INSNS_PAIR0, /* + k for IBRPk */
	IT2_COUNT_CYCLES = WATCH_NFIELDS,                /* not a watch counter */
};

struct it2_event {
	const char *name;
	const char *desc;
	unsigned ranges;          /* IT2_DARR | IT2_IARR */
	enum it2_counts counts;
	enum heritage_source source;
	int tagged;               /* IA64_TAGGED_INST_RETIRED_IBRPx */
};

extern const struct it2_event it2_events[IT2_NEVENTS];

/* Event codes carry the event index and the mode qualifier. */
#define IT2_CODE_INDEX_MASK 0xffu
#define IT2_CODE_EXACT_SET 0x100u   /* ":exact=" given */
#define IT2_CODE_EXACT_ON 0x200u    /* ":exact=1" */

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
