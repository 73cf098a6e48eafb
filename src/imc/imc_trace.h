/*
 * IMC trace mode on a machine without IMC: the trace engine.
 *
 * POWER9's trace mode writes a 64-byte record {timebase, PC, PIDR/mode,
 * CPMC1-4, timebase} into the thread's LDBAR buffer every CPMC_LOAD events
 * of the sampled counter, with no interrupt to the program at all; the
 * kernel hands the records over when the event stops (doc/facilities.md
 * §4(a), §4(b); the kernel's Documentation/powerpc/imc.rst).  Here the
 * sampling hardware is the kernel's software clock: a perf_event
 * TASK_CLOCK event on the traced thread with a sample period writes {IP,
 * pid/tid, time, period} into the perf mmap ring from its hrtimer, in the
 * kernel, and nothing is delivered to the program:
 * no O_ASYNC, no F_SETSIG, no sigtrap, so no SIGIO/SIGPROF/SIGTRAP.  An
 * engine thread of its own (all signals blocked) drains the ring every
 * 100 ms or when it is a quarter full (poll on the perf fd, which wakes
 * poll(2) and sends no signal) and writes IMC records into a trace buffer
 * of BUFFERSIZE entries that wraps quietly (imc_trace_buffer.h).  The
 * hand-over (imc_trace_take) drains what is left, applies the kernel's
 * walk and resets the buffer, as trace_imc_event_stop does.
 *
 * What each record's fields are here:
 *   DW0, DW7  measured: the sample's CLOCK_MONOTONIC time (perf use_clockid)
 *             as 512 MHz timebase ticks (imc_tb_from_ns); kept strictly
 *             increasing: a sample not newer than the previous one gets
 *             previous + 1, counted in `reordered` (none is expected: one
 *             thread's samples reach one ring in order).
 *   DW1       measured: the sampled user PC.
 *   DW2       measured: MSR[HV,PR] in bits 63:62 from the sample's cpumode
 *             (user 3, host kernel 2, guest user 1, guest kernel 0), the
 *             traced process id (what PIDR identifies) in bits 31:0.
 *   DW3 CPMC1 unavailable (0): POWER9's firmware selects event 4, which no
 *             public document names.
 *   DW4 CPMC2 modelled: CPM_32MHZ_CYC, the thread's task-clock ns since the
 *             trace started * 32 / 1000, mod 2^32 (the CPMCs are 32 bits);
 *             the task clock is measured (the sum of the samples' periods).
 *   DW5, DW6  unavailable (0).
 * Sampling rate: PAPI_HERITAGE_IMC_TRACE_HZ samples per second of the
 * thread's CPU time (default 2000: the acceptance's >= 1000 records/s with
 * margin for the timer's slack; POWER9 firmware's rate is one per 251 ticks
 * of 32 MHz, 127 kHz, which a software clock cannot afford).  Buffer:
 * PAPI_HERITAGE_IMC_TRACE_BUFFER_SIZE, the BUFFERSIZE code 0-4 (default 0,
 * 4K entries, as POWER9's firmware).
 */
#ifndef HERITAGE_IMC_TRACE_H
#define HERITAGE_IMC_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "imc/imc_trace_buffer.h"

#define IMC_TRACE_HZ_DEFAULT 2000u
#define IMC_TRACE_HZ_MAX 100000u /* the kernel's shortest software-clock period is 10 us */

struct imc_trace_config {
	unsigned hz;            /* samples per second of the traced thread's CPU time */
	unsigned buffersize;    /* BUFFERSIZE code 0-4 */
	pid_t pid;              /* 0: the calling thread; else that process's first thread
	                           (the kernel maps no ring of an inherited per-task event) */
	int enable_on_exec;     /* start at pid's next execve (a forked command) */
	int want_maps;          /* keep the executable mappings seen (PERF_RECORD_MMAP) */
};

/* Defaults, then the settings PAPI_HERITAGE_IMC_TRACE_HZ (1-100000) and
 * PAPI_HERITAGE_IMC_TRACE_BUFFER_SIZE (0-4); -EINVAL with the message for
 * a bad setting. */
int imc_trace_config_default(struct imc_trace_config *c);

/* PAPI_overflow/PAPI_profil's threshold on imc:::trace_imc::trace_cycles
 * is the sampling period in CPM_32MHZ_CYC (CPMC_LOAD N = threshold - 1, as
 * the hardware reloads CPMC2): hz = 32e6 / threshold.  -EINVAL with the
 * message unless 1 <= hz <= IMC_TRACE_HZ_MAX, i.e. threshold 320 ..
 * 32000000 (POWER9 firmware's 251 would be 127 kHz). */
int imc_trace_config_threshold(struct imc_trace_config *c, long long threshold);

/* 0 if trace can run here for this account, else the probe's error
 * (-EPERM/-EACCES refused, -ENOTSUP absent or dead) with why: sampling
 * into the perf ring is HERITAGE_MECH_SAMPLING. */
int imc_trace_usable(char *why, size_t len);

struct imc_trace_map {
	uint64_t start, len, pgoff;
	char *path;
};

struct imc_trace_stats {
	uint64_t samples;       /* sample records read from the ring */
	uint64_t ring_lost;     /* samples the kernel dropped (PERF_RECORD_LOST): ring full */
	uint64_t reordered;     /* samples older than the previous one (see DW0 above) */
	uint64_t handed;        /* records handed over by takes */
	uint64_t lost;          /* records lost to wrap over all takes (+ ring_lost) */
	uint64_t takes;
};

struct imc_trace_session;

/* Opens the sampler on c->pid (0: the calling thread) and starts the
 * engine.  -EINVAL bad config; the probe's error when sampling is
 * unavailable; -errno of perf_event_open otherwise; with the message. */
int imc_trace_start(struct imc_trace_session **out, const struct imc_trace_config *c);
/* Stops sampling, drains what is left of the ring into the buffer, ends
 * the engine thread.  The buffer is kept for imc_trace_take. */
int imc_trace_stop(struct imc_trace_session *s);
/* The hand-over: drain the ring (while running), the kernel's walk over the
 * buffer calling fn for each valid record, reset.  w gets valid, the stop
 * reason and lost (wrap + ring drops since the last take). */
int imc_trace_take(struct imc_trace_session *s, imc_trace_record_fn fn, void *arg, struct imc_trace_walk *w);
void imc_trace_free(struct imc_trace_session *s);

void imc_trace_get_stats(struct imc_trace_session *s, struct imc_trace_stats *st);
/* The registers this session models: TRACE_IMC_SCOM (SAMPSEL CPMC2,
 * CPMC2SEL CPM_32MHZ_CYC, CPMC1SEL 4, CPMC_LOAD N = 32e6 / hz - 1,
 * BUFFERSIZE) and the LDBAR that points at its buffer (trace bit, the
 * buffer's address as the kernel masks it). */
uint64_t imc_trace_scom(const struct imc_trace_session *s);
uint64_t imc_trace_ldbar(const struct imc_trace_session *s);
unsigned imc_trace_entries(const struct imc_trace_session *s);
/* Executable mappings seen (want_maps), in arrival order. */
const struct imc_trace_map *imc_trace_maps(const struct imc_trace_session *s, unsigned *n);

/* The PAPI adapter's half for imc:::trace_imc::trace_cycles (value,
 * threshold, hand-overs at read and stop) is imc_trace_set.h. */

#endif
