/*
 * Collecting ProfileMe samples of the calling thread, through one of the
 * facility's backends (heritage_backend.h), chosen by the probes:
 *
 *   ibs   AMD IBS op sampling through perf (pm_ibs.c): needs HERITAGE_MECH_IBS.
 *         Period in dispatched ops (cnt_ctl=1), a multiple of 16.
 *   soft  timer-chosen instructions single-stepped and decoded (pm_soft.c):
 *         needs HERITAGE_MECH_SINGLE_STEP.  Period in nanoseconds of the
 *         thread's CPU time.
 *
 * PAPI_HERITAGE_PROFILEME_BACKEND=auto|ibs|soft forces one;
 * PAPI_HERITAGE_PROFILEME_PERIOD=N sets the period in the backend's unit.
 * The estimate of a sample set is samples x period, in that unit
 * (pm_sampleset.h pm_tally_estimate).
 */
#ifndef HERITAGE_PM_COLLECT_H
#define HERITAGE_PM_COLLECT_H

#include <stddef.h>
#include <stdint.h>

#include "common/heritage_backend.h"
#include "profileme/pm_sample.h"

struct pm_thread;

/* Called for each sample, in thread context. */
typedef void (*pm_sample_fn)(void *arg, const struct pm_sample *s);

struct pm_backend_ops {
	uint32_t fields;        /* PM_FIELD_BIT()s it can produce (some samples may still leave them unknown) */
	uint32_t modelled;      /* of those, the ones derived by a documented model rather than seen */
	const char *unit;       /* of the period: "ns" (thread CPU time) or "ops" (dispatched ops) */
	uint64_t default_period;
	uint64_t min_period;
	/* Round a requested period to one the backend can do (IBS: multiple of 16). */
	uint64_t (*round_period)(uint64_t period);
	/* Start sampling the calling thread into t (t->period set): 0 or -errno + why. */
	int (*start)(struct pm_thread *t, char *why, size_t len);
	/* Hand every sample collected so far to fn, in order; thread context
	 * (any thread; the backend serialises with its producer).  Returns the
	 * number handed over, or -errno. */
	long (*drain)(struct pm_thread *t, pm_sample_fn fn, void *arg);
	/* Stop sampling (samples still pending stay for a last drain). */
	void (*stop)(struct pm_thread *t);
	/* Release what start took (after stop and the last drain). */
	void (*release)(struct pm_thread *t);
	/* Optional, from another thread: wake a thread whose CPU-time timer
	 * the kernel has passed over.  The kernel checks such a timer only at
	 * a tick that finds the thread running, and a thread sharing its CPU
	 * can miss every tick for hundreds of ms (this Intel guest, three busy
	 * loops beside a 300 ms spin with an 8 ms timer: 0 expiries delivered
	 * in 1 run of 15, the timer due all along); a signal of the backend's
	 * own reaches it at its next instruction.  pm_thread_start registers
	 * such a thread with the process's nudger thread (pm_collect.c), which
	 * calls this every 10 ms until pm_thread_stop. */
	void (*nudge)(struct pm_thread *t);
};

struct pm_thread {
	const struct heritage_backend *backend; /* its ops: (const struct pm_backend_ops *)backend->ops */
	uint64_t period;
	int tid;
	int running;
	uint64_t samples;  /* handed over by drain */
	uint64_t lost;     /* dropped by the backend (ring full) */
	void *priv;        /* the backend's */
};

/* The table, in auto's order: ibs, soft. */
const struct heritage_backend *pm_backends(unsigned *n);
static inline const struct pm_backend_ops *pm_ops(const struct pm_thread *t)
{
	return (const struct pm_backend_ops *)t->backend->ops;
}

/* The backend the settings and probes choose (PAPI_HERITAGE_PROFILEME_BACKEND):
 * 0 with *out, or -ENOTSUP / -EPERM / -EINVAL with why. */
int pm_backend_choose(const struct heritage_backend **out, char *why, size_t len);
/* The period to use with backend b: PAPI_HERITAGE_PROFILEME_PERIOD or
 * the backend's default, rounded.  0, or -EINVAL for a bad setting. */
int pm_period_for(const struct heritage_backend *b, uint64_t *period, char *why, size_t len);

/* Start collecting the calling thread with backend b at period (0: the
 * default).  0, or -errno with why. */
int pm_thread_start(struct pm_thread *t, const struct heritage_backend *b, uint64_t period, char *why, size_t len);
long pm_thread_drain(struct pm_thread *t, pm_sample_fn fn, void *arg);
/* Stop, drain the rest to fn (may be NULL: dropped), release. */
void pm_thread_stop(struct pm_thread *t, pm_sample_fn fn, void *arg);

/* The backends' ops (pm_ibs.c, pm_soft.c). */
extern const struct pm_backend_ops pm_ibs_ops;
extern const struct pm_backend_ops pm_soft_ops;

#endif
