/*
 * The soft ProfileMe backend (pm_soft.c): its settings and its counts, for
 * tests and benchmarks.  The backend itself is pm_soft_ops (pm_collect.h).
 */
#ifndef HERITAGE_PM_SOFT_H
#define HERITAGE_PM_SOFT_H

#include <signal.h>
#include <stdint.h>

#include "profileme/pm_collect.h"

/* The timer's signal: PAPI takes SIGRTMIN+2, alpha_pmu +4, watch_park +5. */
#define PM_SOFT_SIGNAL (SIGRTMIN + 6)

/* ns of the thread's CPU time.  The kernel checks CPU-time timers at its
 * tick only (4 ms at CONFIG_HZ=250): a period below the tick is rounded up
 * to it (pm_soft_tick_ns), the default is one tick at HZ=250. */
#define PM_SOFT_DEFAULT_PERIOD 4000000u
#define PM_SOFT_MIN_PERIOD 100000u

/* After the timer's signal, a random count of instructions, uniform in
 * [0, PM_SOFT_SKID), is stepped untagged before the one tagged.  The signal
 * itself lands only where the CPU takes interrupts: on this Intel guest
 * (family 6 model 167) never on the jcc of a macro-fused test/jcc or
 * sub/jcc pair (6 of 95 samples of a 6-instruction loop on its two jcc, 84
 * on the two instructions before them), so `taken` was never sampled.
 * ProfileMe chose by counting fetched instructions; the skid puts each
 * instruction of a loop up to 8 long within reach of every landing point.
 * About 3.5 extra steps a sample (bench/pm_bench). */
#define PM_SOFT_SKID 8u

struct pm_soft_stats {
	uint64_t signals;   /* timer signals taken */
	uint64_t samples;   /* pushed onto the ring */
	uint64_t steps;     /* instructions stepped to completion */
	uint64_t skipped;   /* instructions stepped untagged first (the skid, PM_SOFT_SKID) */
	uint64_t skip_faults; /* a skipped instruction faulted: that sample dropped */
	uint64_t faults;    /* stepped instructions that faulted (trap samples) */
	uint64_t unstepped; /* syscall, int, pushf...: sampled without a step */
	uint64_t undecoded; /* bytes capstone did not decode (stepped anyway) */
	uint64_t busy;      /* a step was already pending (watch_step_one_ex -EBUSY) */
	uint64_t stuck;     /* a step of ours whose trap was lost: recovered, its sample dropped */
	uint64_t early;     /* an expiry that came before our step ran: served when it ended */
	uint64_t nudged;    /* samples whose signal was the nudger's, not the timer's */
	/* A sequential instruction whose step ended elsewhere than after it:
	 * it faulted and a handler the engine does not know of (installed
	 * behind its back, e.g. by raw rt_sigaction) moved RIP.  Dropped, not
	 * recorded as retired. */
	uint64_t inconsistent;
	uint64_t handler_ns; /* wall time from the timer handler's entry to the sample's push */
};

/* The kernel's tick as the CPU-time timers see it (clock_getres of the coarse clock), found once per
 * process (pm_soft.c); periods below it are rounded up to it. */
uint64_t pm_soft_tick_ns(void);

/* The counts of t, a thread started with the soft backend: 0 or -EINVAL. */
int pm_soft_stats(const struct pm_thread *t, struct pm_soft_stats *out);

#endif
