/*
 * PMU: alpha21064 (DECchip 21064/21066/21068 "EV4/LCA" performance counters)
 *
 * Two counters that software can neither read, write nor reset; each
 * interrupts when it has counted 2^width events of the one event selected on
 * it (doc/facilities.md 2(a), Alpha Architecture Handbook App. E, Linux
 * op_model_ev4.c).  The tables below are plain data: names are oprofile's
 * (events/alpha/ev4), codes are the MUX fields the wrperfmon PAL call takes.
 */
#ifndef HERITAGE_ALPHA_EVENTS_H
#define HERITAGE_ALPHA_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "common/heritage_event_name.h"
#include "common/heritage_source.h"

#define ALPHA_NCOUNTERS 2
#define ALPHA_HOST_CANDIDATES 4

/* What the software backend feeds an event with (alpha_model.c). */
enum alpha_feed {
	ALPHA_FEED_NONE = 0,
	ALPHA_FEED_ISSUES,   /* every executed instruction, counted in pairs */
	ALPHA_FEED_LOADS,
	ALPHA_FEED_STORES,
	ALPHA_FEED_BRANCHES,
	ALPHA_FEED_FP,
	ALPHA_FEED_INTOP,
	ALPHA_FEED_CYCLES,   /* thread CPU time x nominal clock */
};

struct alpha_event {
	const char *name;
	const char *desc;
	unsigned counter;      /* 0 or 1: the only counter that can count it */
	unsigned mux;          /* MUX0 (4 bits) or MUX1 (3 bits) select code */
	/* Where its count comes from in the software (single-step) backend:
	 * measured from the instructions the thread executes, modelled by a
	 * documented formula (CYCLES), or unavailable (refused at add). */
	enum heritage_source sw_source;
	enum alpha_feed feed;
	const char *sw_why;    /* for unavailable events: why, for the error message */
	/* The core-PMU backend (alpha_pmu.h; doc/facilities.md 2(d)): libpfm4 event
	 * strings tried in order, the first the host encodes and opens wins.
	 * PMU-specific names come first because the generic perf:: ones encode
	 * on any machine (libpfm4's perf PMU needs no hardware) and are the
	 * coarser analogue where both exist. */
	const char *host[ALPHA_HOST_CANDIDATES];
	unsigned host_scale;       /* host events per Alpha count: 2 for ISSUES (pairs); 0 means 1 */
	const char *host_honesty;  /* doc/facilities.md 2(d): "yes", "yes-ish", "approx"; NULL: unavailable */
	const char *host_why;      /* for events a PMU cannot count either: why */
};

extern const struct alpha_event alpha_events[];
extern const unsigned alpha_nevents;

/* Period choices per counter (log2), default first. */
struct alpha_widths {
	unsigned def, other;
};
extern const struct alpha_widths alpha_counter_widths[ALPHA_NCOUNTERS];

/* Event codes local to the component:
 *   bits 0-7  index into alpha_events
 *   bit  8    a :width= qualifier is given
 *   bits 9-13 the width (log2 of the period) */
#define ALPHA_CODE_INDEX_MASK 0xffu
#define ALPHA_CODE_WIDTH_SET 0x100u
#define ALPHA_CODE_WIDTH_SHIFT 9
#define ALPHA_CODE_WIDTH_MASK 0x1fu

const struct alpha_event *alpha_event_of(unsigned code);
/* The width an event code counts with (its qualifier, else the default). */
unsigned alpha_code_width(unsigned code);
/* The names and the :width= qualifier (heritage_event_name.h). */
extern const struct heritage_event_names alpha_event_names;
/* Parse "LOAD_INSNS" or "LOAD_INSNS:width=12" (case-insensitive event
 * name).  0, or -ENOENT (no such event) / -EINVAL (bad qualifier), with the
 * message in heritage_last_error(). */
int alpha_event_parse(const char *name, unsigned *code);
/* "NAME" or "NAME:width=W"; 0 or -ENOENT / -ENOSPC. */
int alpha_event_format(unsigned code, char *buf, size_t len);
/* 0 if width (log2) is selectable on that counter. */
int alpha_width_valid(unsigned counter, unsigned width);

#endif
