/*
 * An alpha21064 event set: which counter each event of the set counts on,
 * the backend chosen for it (PAPI_HERITAGE_ALPHA21064_BACKEND), the
 * PAPI_overflow thresholds as interrupts per handler call, the interrupt
 * frame of the delivery in progress, and what deliveries cost.  The PAPI
 * component (components/alpha21064) is glue around this, as itanium2's is
 * around it2_set.h.
 */
#ifndef HERITAGE_ALPHA_SET_H
#define HERITAGE_ALPHA_SET_H

#include <stdint.h>
#include <ucontext.h>

#include "alpha/alpha_events.h"
#include "alpha/alpha_model.h"
#include "alpha/alpha_pmu.h"
#include "alpha/alpha_sw.h"
#include "common/heritage_source.h"

/* A handler call is due: the set position whose threshold was reached, the
 * PC of the instruction that made the interrupt, the interrupted context.
 * Runs in the signal handler that took the interrupt. */
typedef void (*alpha_set_dispatch_fn)(void *arg, unsigned pos, uint64_t pc, ucontext_t *uc);

struct alpha_set {
	unsigned ncodes;
	unsigned codes[ALPHA_NCOUNTERS];
	unsigned counter_of[ALPHA_NCOUNTERS];  /* set position -> counter */
	int pos_of[ALPHA_NCOUNTERS];           /* counter -> set position, -1 */
	int64_t irq_per_call[ALPHA_NCOUNTERS]; /* threshold / 2^width; 0: no handler */
	uint64_t irq_pending[ALPHA_NCOUNTERS]; /* interrupts since the last handler call */
	long long values[ALPHA_NCOUNTERS];
	int backend;                           /* ALPHA_BACKEND_SOFTWARE or _PMU; 0 while empty */
	alpha_set_dispatch_fn dispatch;        /* set before alpha_set_start */
	void *dispatch_arg;
	struct alpha_sw_run run;
	struct alpha_pmu_run pmu;
};

void alpha_set_init(struct alpha_set *s);
/* At most one event per counter; the backend PAPI_HERITAGE_ALPHA21064_BACKEND
 * asks for (auto: the PMU if it takes every event, else single-stepping).
 * pos[i] gets each event's position (its index).  Overflow settings are
 * dropped (PAPI applies them again).  0, or -EBUSY (more than two events)
 * or the backend's -errno, with the message. */
int alpha_set_events(struct alpha_set *s, const unsigned *codes, unsigned n);
/* Count on cpu (the thread's emulated 21064, software backend). */
int alpha_set_start(struct alpha_set *s, struct alpha_cpu *cpu);
int alpha_set_stop(struct alpha_set *s);
/* values[i] = interrupts x 2^width of event i: what the OS could know. */
void alpha_set_read(struct alpha_set *s);
/* Forget the interrupts counted so far; the hidden residue stays. */
void alpha_set_reset(struct alpha_set *s);
/* Stop and release the backend's fds (a stopped set: no-ops but for them). */
void alpha_set_cleanup(struct alpha_set *s);
/* PAPI_overflow on position pos: threshold a positive multiple of 2^width,
 * or 0 to disarm.  0 or -EINVAL with the message. */
int alpha_set_threshold(struct alpha_set *s, unsigned pos, long long threshold);
/* "pmu", "software", or "none" while the set is empty. */
const char *alpha_set_backend_name(const struct alpha_set *s);

/* The backends' deliver callback (arg: the set): counts the interrupt
 * towards its counter's threshold and, when due, builds the frame and calls
 * s->dispatch, timed for alpha_set_stats. */
void alpha_set_deliver(void *arg, unsigned counter, uint64_t pc, ucontext_t *uc);

/* Where event e's count would come from with the backend auto would choose
 * here, or the one forced: listings say what adding it would give. */
enum heritage_source alpha_set_event_source(const struct alpha_event *e);
/* The backend table as papi_heritage_backend_usable sees it (with the
 * tests' stand-in event when PAPI_HERITAGE_ALPHA21064_PMU_TEST_EVENT is set). */
const struct heritage_backend *alpha_set_backends(unsigned *n);
/* 0 if some backend can count here (for init_component), else -errno
 * and why. */
int alpha_any_backend(char *why, size_t len);
/* The backends this machine and account keep out, for the component's
 * description ("" if none). */
void alpha_limits(char *buf, size_t len);

/* The nominal clock of CYCLES: PAPI_HERITAGE_ALPHA21064_CLOCK_MHZ, else
 * ALPHA_NOMINAL_HZ; read at each start. */
uint64_t alpha_set_nominal_hz(void);
/* The operating system whose frames handlers see, per process:
 * PAPI_HERITAGE_ALPHA21064_OS when the component initialises, then set. */
void alpha_set_os_from_env(void);
int alpha_set_os(int os);   /* ALPHA_OS_*; 0 or -EINVAL with the message */
enum alpha_os alpha_get_os(void);
/* The frame of the interrupt being delivered on this thread, as
 * papi_heritage_alpha21064_frame gives it: 0, or -EINVAL with the message
 * outside a handler. */
struct papi_heritage_alpha21064_frame;
int alpha_set_frame(struct papi_heritage_alpha21064_frame *f);

/* What deliveries cost, process-wide (papi_heritage_alpha21064_stats). */
struct papi_heritage_alpha21064_stats;
void alpha_set_stats(struct papi_heritage_alpha21064_stats *st);

#endif
