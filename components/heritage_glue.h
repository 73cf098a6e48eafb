/*
 * What every heritage component's PAPI glue shares: turning libheritage's
 * negative errno values into PAPI error codes, and reporting the message
 * libheritage recorded.  Compiled inside PAPI (components/), never in src/.
 */
#ifndef HERITAGE_GLUE_H
#define HERITAGE_GLUE_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "common/heritage_source.h"
#include "papi.h"
#include "papi_heritage.h"
#include "papi_internal.h"
#include "papi_vector.h"
#include "extras.h"
#include "threads.h"

/* libheritage's source enum is handed to <papi_heritage.h> callers as is. */
_Static_assert((int)HERITAGE_MEASURED == (int)PAPI_HERITAGE_MEASURED &&
               (int)HERITAGE_MODELLED == (int)PAPI_HERITAGE_MODELLED &&
               (int)HERITAGE_UNAVAILABLE == (int)PAPI_HERITAGE_UNAVAILABLE,
               "heritage_source.h and papi_heritage.h number the sources alike");

static inline int heritage_papi_error(int neg_errno)
{
	switch (neg_errno) {
	case 0: return PAPI_OK;
	case -EINVAL: return PAPI_EINVAL;
	case -ENOENT: return PAPI_ENOEVNT;
	case -ENOTSUP: return PAPI_ENOSUPP;
	case -EBUSY:
	case -ENOSPC: return PAPI_ECNFLCT;
	case -EPERM:
	case -EACCES: return PAPI_EPERM;
	case -ENOMEM: return PAPI_ENOMEM;
	default: return PAPI_ESYS;
	}
}

/* The result of an op that asked libheritage: on failure print its message
 * the way PAPI prints its own errors (PAPIERROR prints when the PAPI debug
 * level or PAPI_VERBOSE asks); on success clear it, so that
 * papi_heritage_last_error() never shows an old call's reason after one
 * that worked (issue 15) -- except for PAPI's own clean-up inside a failed
 * call, which must keep that call's reason: after a failed update PAPI calls
 * update again with the events it had before ("re-establish the control
 * state after the previous error", papi_internal.c), and after a failed
 * start it calls stop (papi.c).  Per thread; each component's copy of this
 * header has its own, as PAPI's clean-up is the same component's. */
enum heritage_glue_op { HERITAGE_GLUE_OTHER, HERITAGE_GLUE_UPDATE, HERITAGE_GLUE_START, HERITAGE_GLUE_STOP };
static __thread enum heritage_glue_op heritage_glue_failed;

static inline int heritage_papi_result(enum heritage_glue_op op, int neg_errno)
{
	int code = heritage_papi_error(neg_errno);

	if (code != PAPI_OK) {
		heritage_glue_failed = op;
		if (heritage_last_error()[0] != '\0')
			PAPIERROR("%s", (char *)heritage_last_error());
		return code;
	}
	enum heritage_glue_op failed = heritage_glue_failed;
	heritage_glue_failed = HERITAGE_GLUE_OTHER;
	if ((op == HERITAGE_GLUE_UPDATE && failed == HERITAGE_GLUE_UPDATE) ||
	    (op == HERITAGE_GLUE_STOP && failed == HERITAGE_GLUE_START))
		return PAPI_OK;
	heritage_clear_error();
	return PAPI_OK;
}

static inline int heritage_papi_fail(int neg_errno)
{
	return heritage_papi_result(HERITAGE_GLUE_OTHER, neg_errno);
}

/* update_control_state's and stop's results. */
static inline int heritage_papi_update(int neg_errno)
{
	return heritage_papi_result(HERITAGE_GLUE_UPDATE, neg_errno);
}

static inline int heritage_papi_stop(int neg_errno)
{
	return heritage_papi_result(HERITAGE_GLUE_STOP, neg_errno);
}

/* The end of start: its PAPI code, whichever step inside it failed. */
static inline int heritage_papi_started(int code)
{
	if (code != PAPI_OK)
		heritage_glue_failed = HERITAGE_GLUE_START;
	return code;
}

/* The PAPI_set_opt codes a user-level-only component answers alike: the
 * domain must be PAPI_DOM_USER, any granularity is the thread's; anything
 * else is PAPI_ENOSUPP. */
static inline int heritage_user_level_ctl(int code, _papi_int_option_t *option)
{
	switch (code) {
	case PAPI_DOMAIN:
	case PAPI_DEFDOM:
		return option->domain.domain == PAPI_DOM_USER ? PAPI_OK : PAPI_EINVAL;
	case PAPI_GRANUL:
	case PAPI_DEFGRN:
		return PAPI_OK;
	default:
		return PAPI_ENOSUPP;
	}
}

/* The end of a component's ntv_enum_events: key the event it stepped to by
 * its name in PAPI's native table, as name lookups are keyed.  Otherwise every
 * enumeration pass adds rows and the same event gets a new PAPI code each
 * time (doc/papi-contract.md, gotcha 8). */
static inline int heritage_enum_keyed(int rc, unsigned code, int (*code_to_name)(unsigned, char *, int))
{
	char name[PAPI_MAX_STR_LEN];

	if (rc == PAPI_OK && code_to_name(code, name, sizeof name) == PAPI_OK)
		_papi_hwi_set_papi_event_string(name);
	return rc;
}

/* The end of init_component: enabled, or disabled with why (from the
 * probes) in PAPI's disabled_reason, so papi_component_avail says why. */
static inline int heritage_component_status(papi_vector_t *v, int neg_errno, const char *why)
{
	if (neg_errno == 0) {
		v->cmp_info.disabled = PAPI_OK;
		v->cmp_info.disabled_reason[0] = '\0';
		return PAPI_OK;
	}
	v->cmp_info.disabled = heritage_papi_error(neg_errno);
	snprintf(v->cmp_info.disabled_reason, sizeof v->cmp_info.disabled_reason, "%s", why);
	return v->cmp_info.disabled;
}

/* The first step of init_component, that is of PAPI_library_init: the
 * PAPI_HERITAGE_* variables are copied now, read once for the run
 * (heritage_env.h), and one of this component's that is unknown or invalid
 * disables it with the variable named, rather than run on a default the
 * user did not choose.  PAPI_OK, or the code init_component returns. */
static inline int heritage_component_env(papi_vector_t *v, const char *component)
{
	heritage_env_load();
	if (heritage_env_check(component) == 0)
		return PAPI_OK;
	return heritage_component_status(v, -EINVAL, heritage_last_error());
}

/* The component's dispatch_timer, for PAPI's software overflow
 * (PAPI_OVERFLOW_FORCE_SW, or every overflow of a component without
 * hardware interrupts).  PAPI_start installs it on its interval timer's
 * signal (SIGPROF, ITIMER_PROF, 10 ms of CPU time) and each tick lands here:
 * PAPI reads the set and compares each overflowing event with its deadline,
 * the PC is where the tick found the thread.  Without one PAPI installs a
 * dummy and PAPI_overflow / PAPI_profil returned PAPI_OK and then never
 * delivered (issue 20: 0 handler calls on all three components).  A tick in
 * a thread whose set is not ours, or whose overflow is the component's own
 * (PAPI_OVERFLOW_HARDWARE), is left alone. */
/* The calling thread's running event set of component v if it overflows,
 * else NULL; *thread is the thread's. */
static inline EventSetInfo_t *heritage_overflowing_set(const papi_vector_t *v, ThreadInfo_t **thread)
{
	*thread = _papi_hwi_lookup_thread(0);
	EventSetInfo_t *ESI = *thread ? (*thread)->running_eventset[v->cmp_info.CmpIdx] : NULL;
	return ESI && (ESI->state & PAPI_OVERFLOWING) ? ESI : NULL;
}

static inline void heritage_dispatch_timer(const papi_vector_t *v, hwd_siginfo_t *si, void *uc)
{
	ThreadInfo_t *thread;
	EventSetInfo_t *ESI = heritage_overflowing_set(v, &thread);

	if (!ESI || !uc || (ESI->overflow.flags & PAPI_OVERFLOW_HARDWARE))
		return;
	_papi_hwi_context_t ctx = { .si = si, .ucontext = (hwd_ucontext_t *)uc };
	_papi_hwi_dispatch_overflow_signal(&ctx, GET_OVERFLOW_ADDRESS(ctx), NULL, 0, 0, &thread, v->cmp_info.CmpIdx);
}

/* PAPI_start of a set whose overflow PAPI emulates: each tick PAPI compares
 * an overflowing event's value, as a 64-bit count since PAPI_start, with a
 * deadline.  An event whose value is not that (a double's bits, an absolute
 * reading) would deliver at the wrong times or at every tick, and in
 * software mode PAPI_overflow never asks the component, so the start
 * refuses, naming the event and why (cannot(ctl, pos) says it, or NULL).
 * PAPI sets running_eventset before it calls start. */
static inline int heritage_sw_overflow_check(const papi_vector_t *v, const void *ctl,
                                             const char *(*cannot)(const void *ctl, int pos))
{
	ThreadInfo_t *thread;
	EventSetInfo_t *ESI = heritage_overflowing_set(v, &thread);

	if (!ESI || ESI->ctl_state != ctl || (ESI->overflow.flags & PAPI_OVERFLOW_HARDWARE))
		return PAPI_OK;
	for (int i = 0; i < ESI->overflow.event_counter; i++) {
		int pos = ESI->EventInfoArray[ESI->overflow.EventIndex[i]].pos[0];
		const char *why = pos >= 0 ? cannot(ctl, pos) : NULL;
		if (why) {
			heritage_fail(-ENOTSUP, "%s: PAPI_overflow cannot be emulated on %s", v->cmp_info.name, why);
			return heritage_papi_fail(-ENOTSUP);
		}
	}
	return PAPI_OK;
}

/* PAPI_stop reads the set BEFORE it calls the component's stop and returns
 * that read's values (papi.c: _papi_hwi_read into ESI->sw_stop, then stop,
 * then the copy).  A component whose stop makes the counts final (imc: its
 * pages are up to one collection period stale until stop forces an update,
 * and trace records are handed over at stop) puts the final values where
 * PAPI_stop takes them, as _papi_hwi_read would have.  Only for the set
 * PAPI is stopping on this thread (running_eventset is cleared after). */
static inline void heritage_stop_values(const papi_vector_t *v, const void *ctl, const long long *values)
{
	ThreadInfo_t *thread = _papi_hwi_lookup_thread(0);
	EventSetInfo_t *ESI = thread ? thread->running_eventset[v->cmp_info.CmpIdx] : NULL;

	if (!ESI || ESI->ctl_state != ctl || !ESI->sw_stop)
		return;
	for (int i = 0; i < ESI->NumberOfEvents; i++) {
		int pos = ESI->EventInfoArray[i].pos[0];
		if (pos >= 0 && ESI->EventInfoArray[i].derived == NOT_DERIVED)
			ESI->sw_stop[i] = values[pos];
	}
}

/* A component that delivers overflow itself (hardware_intr, as itanium2):
 * PAPI installs no handler in that mode, so start takes PAPI_INT_SIGNAL
 * with the component's dispatch_timer on it, and PAPI's interval timer
 * when some events are polled; stop gives back what start took. */
struct heritage_own_overflow {
	int signal_on, timer_on;
};

static inline void heritage_own_overflow_stop(struct heritage_own_overflow *o)
{
	if (o->timer_on)
		_papi_hwi_stop_timer(_papi_os_info.itimer_num, _papi_os_info.itimer_sig);
	if (o->signal_on)
		_papi_hwi_stop_signal(PAPI_INT_SIGNAL);
	o->timer_on = o->signal_on = 0;
}

static inline int heritage_own_overflow_start(const papi_vector_t *v, int armed, int polled,
                                              struct heritage_own_overflow *o)
{
	int rc = PAPI_OK;
	if (armed && (rc = _papi_hwi_start_signal(PAPI_INT_SIGNAL, NEED_CONTEXT, v->cmp_info.CmpIdx)) == PAPI_OK)
		o->signal_on = 1;
	if (rc == PAPI_OK && polled &&
	    (rc = _papi_hwi_start_timer(_papi_os_info.itimer_num, _papi_os_info.itimer_sig, _papi_os_info.itimer_ns)) ==
	            PAPI_OK)
		o->timer_on = 1;
	if (rc != PAPI_OK)
		heritage_own_overflow_stop(o);
	return rc;
}

/* papi_component_avail shows a component's description, and its
 * disabled_reason only when disabled: an enabled component that this
 * machine or account limits says how in its description, within PAPI's
 * 128 characters, and papi_heritage_avail --mechanisms says why. */
static inline void heritage_component_limits(papi_vector_t *v, const char *what, const char *limits)
{
	char *d = v->cmp_info.description;
	size_t len = sizeof v->cmp_info.description;

	if (!limits[0])
		return;
	int n = snprintf(d, len, "%s (papi-heritage); limited here: %s", what, limits);
	if (n >= (int)len)
		memcpy(d + len - 4, "...", 4);
}

#endif
