/*
 * One imc event set: add, start, stop, read, reset.  Plain C, no PAPI.
 *
 * Accumulation mode as the kernel reads it (imc-pmu.c imc_event_start /
 * imc_event_update): start snapshots each counter (one big-endian load from
 * its page), read is a load and the delta since start mod 2^64, stop forces
 * a final update of the counters the set reads (the page is otherwise up to
 * one collection period stale) and keeps the values.  The counters
 * themselves are never reset.
 *
 * PAPI_stop reads the set BEFORE it calls the component's stop (papi.c), so
 * the values PAPI_stop returns are a read's: at most one collection period
 * stale, as the kernel's are on POWER9 (imc_event_stop reads the memory the
 * microcode updates each period).  PAPI_HERITAGE_IMC_EXACT=1 (read at start)
 * makes start and every read force the update first: exact, at the cost of
 * the sources' reads (a clock: tens of ns; a thread's user time: a /proc
 * read, about 10 us) instead of a load.
 *
 * What a count means: a nest event counts its chip (:cpu=N names the chip
 * of CPU N; none: CPU 0's) and a core event its core, system-wide, whoever
 * runs there (the kernel allows them only per CPU); a thread event counts
 * the task thread that called start, wherever it runs.  Core and thread
 * events take their domain system-wide while the set runs (imc_mode.h):
 * another process's or set's other domain gets -EBUSY with the holder's
 * pid.
 */
#ifndef HERITAGE_IMC_SET_H
#define HERITAGE_IMC_SET_H

#include <stdint.h>

#include "imc/imc_engine.h"
#include "imc/imc_sysfs.h"
#include "imc/imc_trace_set.h"

#define IMC_MAX_EVENTS 8

struct imc_set {
	unsigned nevents;
	unsigned codes[IMC_MAX_EVENTS];
	unsigned entry[IMC_MAX_EVENTS];
	int cpu[IMC_MAX_EVENTS];           /* :cpu=N, -1 */
	unsigned type[IMC_MAX_EVENTS];     /* enum imc_type of its unit */
	struct imc_counter ctr[IMC_MAX_EVENTS];
	uint64_t start[IMC_MAX_EVENTS];    /* the counters at start (or reset) */
	unsigned held;                     /* domains held while running (bit per enum imc_domain_excl) */
	int exact;                         /* PAPI_HERITAGE_IMC_EXACT=1 at start: every read updates first */
	int running;
	long long values[IMC_MAX_EVENTS];
	/* Events the kernel's IMC PMUs count (imc_backend.h: perf). */
	int perf[IMC_MAX_EVENTS];
	struct imc_sysfs_counter pc[IMC_MAX_EVENTS];
	/* trace_imc::trace_cycles, at most one per set (the thread has one
	 * LDBAR): its records come from the sampler, not the engine. */
	int trace_pos;                     /* -1: none */
	struct imc_trace_set trace;
	/* PAPI_overflow on accumulation events: polled (imc_set_overflow_poll). */
	long long threshold[IMC_MAX_EVENTS];
	long long deadline[IMC_MAX_EVENTS];
};

void imc_set_init(struct imc_set *s);
/* The complete event list; -ENOENT for a bad code, -ENOTSUP for an event
 * with no source here (or a trace event: not wired yet), -EBUSY for core
 * and thread events in one set, -ENOSPC for too many, with the message. */
int imc_set_events(struct imc_set *s, const unsigned *codes, unsigned n);
/* Lower level (unit tests): the same with catalog entries and CPUs. */
int imc_set_entries(struct imc_set *s, const struct imc_catalog *cat, const unsigned *entries, const int *cpus,
                    unsigned n);
int imc_set_start(struct imc_set *s);
int imc_set_stop(struct imc_set *s);
int imc_set_read(struct imc_set *s);
int imc_set_reset(struct imc_set *s);
/* 0 if something can count here, else -ENOTSUP with why. */
int imc_any_usable(char *why, unsigned len);

/* PAPI_overflow / PAPI_profil on the event at pos, threshold 0 disarms.
 * The trace event: threshold is its sampling period in CPM_32MHZ_CYC, and
 * deliver(record, arg) gets every record handed over at read and stop (in
 * the caller's context, never a signal).  An accumulation event: polled,
 * imc_set_overflow_poll says when its count passed the threshold.  -EINVAL
 * (bad pos or threshold), -EBUSY (running), with the message. */
int imc_set_overflow(struct imc_set *s, unsigned pos, long long threshold, imc_trace_record_fn deliver, void *arg);
/* Non-zero if some accumulation event overflows (PAPI's timer polls it). */
int imc_set_overflow_polled(const struct imc_set *s);
/* Reads the set; the bits (1 << pos) of the polled events whose count
 * passed its next deadline, each deadline moved one threshold past the
 * count.  Async-signal-safe: loads and arithmetic. */
uint64_t imc_set_overflow_poll(struct imc_set *s);

/* The process's engine (made on first use: nest pages from imcd when it
 * publishes them), or NULL with the reason.  Tests may install their own
 * (catalog and topology built by hand) before any set starts. */
struct imc_engine *imc_set_engine(void);
void imc_set_use_engine(struct imc_engine *e);
/* Where the nest pages come from ("imcd pid N ..." / "this process's
 * engine (not shared: ...)"), for messages and listings. */
const char *imc_set_nest_where(void);

#endif
