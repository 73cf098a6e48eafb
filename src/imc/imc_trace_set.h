/*
 * imc:::trace_imc::trace_cycles for an event set: the PAPI-free half of the
 * adapter's glue (components/imc/imc.c calls these from start, read, stop
 * and set_overflow).  The kernel's trace_imc PMU counts nothing readable
 * (trace_imc_event_read is empty) and hands records over as samples when
 * the event stops; here, likewise, records reach the set only at a
 * hand-over -- PAPI_read and PAPI_stop -- in the caller's context, through
 * deliver(), never in a signal handler.
 *
 * The event's value is what the records cover: CPM_32MHZ_CYC, the sum over
 * handed-over records of the CPMC2 step (mod 2^32) from the record before,
 * the first record's step being its own CPMC2 (the count starts at 0 at
 * start).  It is modelled from the measured task clock, and grows only at
 * hand-overs, as perf's trace_imc samples do.
 */
#ifndef HERITAGE_IMC_TRACE_SET_H
#define HERITAGE_IMC_TRACE_SET_H

#include <stdint.h>

#include "imc/imc_trace.h"

struct imc_trace_set {
	struct imc_trace_config cfg;
	struct imc_trace_session *s;
	uint64_t cycles;         /* the event's value since start */
	uint32_t last_cpmc2;
	uint64_t records, lost;  /* handed over / lost since start */
	long long threshold;     /* 0: not armed */
	imc_trace_record_fn deliver;
	void *arg;
};

/* Settings from the environment; -EINVAL with the message. */
int imc_trace_set_init(struct imc_trace_set *t);
/* PAPI_overflow/PAPI_profil on trace_cycles: threshold in CPM_32MHZ_CYC is
 * the sampling period (hz = 32e6 / threshold); deliver(record, arg) gets
 * every record handed over while armed.  threshold 0 disarms (the default
 * rate again).  -EINVAL for a threshold out of range; -EBUSY while running. */
int imc_trace_set_overflow(struct imc_trace_set *t, long long threshold, imc_trace_record_fn deliver, void *arg);
/* The trace starts on the calling thread; the probe's error otherwise. */
int imc_trace_set_start(struct imc_trace_set *t);
/* Hand over what is there; *value = cycles since start. */
int imc_trace_set_read(struct imc_trace_set *t, long long *value);
/* Stop, hand over the rest, free the session; *value final. */
int imc_trace_set_stop(struct imc_trace_set *t, long long *value);
/* PAPI_reset: the value restarts at 0 (records are handed over first, so
 * an armed handler loses none). */
int imc_trace_set_reset(struct imc_trace_set *t);

#endif
