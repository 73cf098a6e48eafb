/*
 * What feeds each IMC catalog entry on this machine (doc/facilities.md §4(d)):
 * measured, modelled or unavailable, from what, and how the engine turns
 * the source's reading into the counter the page holds.
 *
 * Entries are matched by the unit's type and the event's name (the catalog's
 * `event-name`, without the unit's `events-prefix`, split into a base name
 * and a _USER/_KERNEL privilege suffix), never by a POWER9 DD2 offset: a
 * POWER10 or DD1 catalog is matched by the same rules.  The rules are one
 * const table in imc_sources.c.
 */
#ifndef HERITAGE_IMC_SOURCES_H
#define HERITAGE_IMC_SOURCES_H

#include <stddef.h>
#include <stdint.h>

#include "common/heritage_source.h"
#include "imc/imc_catalog.h"
#include "imc/imc_trace_codec.h"

/* How a counter is fed. */
enum imc_feed_kind {
	IMC_FEED_NONE,          /* no honest source: the entry is unavailable */
	IMC_FEED_WALL,          /* CLOCK_MONOTONIC ns: the core's/chip's free-running clock */
	IMC_FEED_CPU_TIME,      /* CPU time in ns: the task thread's (thread page) or the
	                         * core's hardware threads' (core page, summed) */
	IMC_FEED_PMU_CYCLES,    /* perf PERF_COUNT_HW_CPU_CYCLES */
	IMC_FEED_PMU_INSTRUCTIONS, /* perf PERF_COUNT_HW_INSTRUCTIONS */
};

/* Which privilege state a counter counts in (the catalog's _USER/_KERNEL
 * variants; POWER counts them with MSR[PR], here exclude_kernel/_user or the
 * kernel's user/system time split). */
enum imc_feed_mode { IMC_MODE_ALL, IMC_MODE_USER, IMC_MODE_KERNEL };

struct imc_feed {
	enum imc_feed_kind kind;
	enum imc_feed_mode mode;
	/* counter = reading * num / den: a clock's ns to its ticks, divided by
	 * the entry's catalog scale (the page counts in units of the scale,
	 * as perf's .scale says: count = raw x scale) */
	uint64_t num, den;
	/* Core pages: summed over the core's hardware threads (CS_ events, and
	 * every PMU and CPU-time feed); 0: the core's own clock, counted once. */
	int per_thread_sum;
	enum heritage_source source;
};

/* POWER's 32 MHz clock (CPM_32MHZ_CYC: skiboot's trace mode samples on it)
 * and the POWER9 timebase, 512 MHz (doc/facilities.md §4(a) [U]), which PURR
 * counts at. */
#define IMC_32MHZ_HZ 32000000ULL
/* IMC_TIMEBASE_HZ: imc_trace_codec.h, with the timebase's conversions. */
/* The PowerBus (nest) clock assumed for the modelled nest CYC events, unless
 * PAPI_HERITAGE_IMC_NEST_HZ says otherwise: POWER9's fabric runs at about
 * 2 GHz [U]; the value is stated wherever the event is described. */
#define IMC_NEST_DEFAULT_HZ 2000000000ULL

/* The feed of entry, with its source and a phrase for the man page and the
 * error messages (without the source's name, which callers print): what
 * feeds it ("the task thread's CPU time ..."), or why nothing does / what
 * would be needed ("needs a core PMU (perf_event cycles, user mode), absent
 * here: <probe evidence>").  what may be NULL with len 0.  Asks the probes (HERITAGE_MECH_PMU) the first
 * time a PMU feed is looked at. */
enum heritage_source imc_feed_of(const struct imc_catalog *cat, unsigned entry, struct imc_feed *feed, char *what,
                                 size_t len);
enum heritage_source imc_source_of(const struct imc_catalog *cat, unsigned entry, char *what, size_t len);

/* The nest clock the modelled nest events assume (Hz). */
uint64_t imc_nest_hz(void);

#endif
