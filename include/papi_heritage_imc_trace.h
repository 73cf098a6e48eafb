/*
 * papi_heritage_imc_trace.h - POWER9 IMC trace mode on the calling thread,
 * without interrupting it (imc_trace(3)).
 *
 * A session samples the calling thread's program counter PAPI_HERITAGE_IMC_
 * TRACE_HZ times per second of its CPU time (default 2000) into a trace
 * buffer of 64-byte POWER9 trace records, 4K..64K entries, that wraps
 * quietly as the hardware's does.  No signal is delivered to the program:
 * the samples are taken by the kernel's software clock into the perf ring,
 * which a thread of the library drains.  Stopping hands the records over
 * with the kernel's validity rule (timebase increasing, DW7 == low 42 bits
 * of DW0); records overwritten by a wrap are counted as lost.
 *
 * Compiled into libpapi with the imc component; it needs no PAPI call.
 * Functions return 0 or a negative errno (-EINVAL a bad argument or
 * setting, -EPERM/-EACCES sampling refused to this account, -ENOTSUP
 * sampling absent or dead here, -ENOMEM); papi_heritage_last_error()
 * (<papi_heritage.h>) says why.
 */
#ifndef PAPI_HERITAGE_IMC_TRACE_H
#define PAPI_HERITAGE_IMC_TRACE_H

#ifdef __cplusplus
extern "C" {
#endif

/* One trace record, decoded from its 8 big-endian doublewords. */
struct papi_heritage_imc_record {
	unsigned long long timebase;   /* DW0: 512 MHz timebase ticks (CLOCK_MONOTONIC * 0.512) */
	unsigned long long pc;         /* DW1: the sampled program counter */
	unsigned mode;                 /* DW2 bits 63:62, MSR[HV,PR]: 3 user, 2 host kernel,
	                                  1 guest user, 0 guest kernel */
	unsigned pid;                  /* DW2 bits 31:0: the traced process */
	unsigned long long cpmc[4];    /* DW3-DW6: CPMC1-4; CPMC2 = CPM_32MHZ_CYC of the thread
	                                  (modelled from its task clock), the others 0 */
};

typedef struct papi_heritage_imc_trace papi_heritage_imc_trace_t;

/* Start tracing the calling thread.  hz: samples per second of its CPU
 * time, 0 for PAPI_HERITAGE_IMC_TRACE_HZ or 2000; buffer_size: BUFFERSIZE
 * 0-4 (4K, 8K, 16K, 32K, 64K entries), -1 for
 * PAPI_HERITAGE_IMC_TRACE_BUFFER_SIZE or 0. */
int papi_heritage_imc_trace_start(papi_heritage_imc_trace_t **trace, unsigned hz, int buffer_size);
/* Hand over what the buffer holds now (as the kernel does when the thread
 * is switched out), tracing on: the records join those next() returns. */
int papi_heritage_imc_trace_read(papi_heritage_imc_trace_t *trace);
/* Stop tracing and hand the rest over.  Call from any thread. */
int papi_heritage_imc_trace_stop(papi_heritage_imc_trace_t *trace);
/* The records handed over, oldest first: 1 and *record, or 0 at the end. */
int papi_heritage_imc_trace_next(papi_heritage_imc_trace_t *trace, struct papi_heritage_imc_record *record);

struct papi_heritage_imc_trace_info {
	unsigned long long records;    /* handed over (valid by the kernel's rule) */
	unsigned long long lost;       /* written but not handed over: overwritten by a wrap,
	                                  stopped by an invalid record, or dropped by a full ring */
	unsigned long long samples;    /* samples taken */
	unsigned long long reordered;  /* samples older than their predecessor (given previous + 1) */
	unsigned entries;              /* buffer entries (4096 << BUFFERSIZE) */
	unsigned hz;                   /* the sampling rate */
	unsigned long long scom;       /* the TRACE_IMC_SCOM value this models */
	unsigned long long ldbar;      /* the LDBAR value pointing at the buffer */
	char stop_reason[64];          /* why the last hand-over's walk stopped */
};
int papi_heritage_imc_trace_info(papi_heritage_imc_trace_t *trace, struct papi_heritage_imc_trace_info *info);
/* Write the records handed over so far, with this process's executable
 * mappings (for symbols), to path: imc_trace_dump(1) lists it. */
int papi_heritage_imc_trace_save(papi_heritage_imc_trace_t *trace, const char *path);
void papi_heritage_imc_trace_free(papi_heritage_imc_trace_t *trace);

#ifdef __cplusplus
}
#endif

#endif
