/*
 * A PAPI event set of profileme events, without PAPI: every event is a
 * value of the sample-set language over one stream of samples of the
 * calling thread (pm_collect.h), so the set samples once however many
 * events it has.  Values are estimates: samples in the set x period, or a
 * counter's sum; a set naming a field the chosen backend does not produce is
 * refused when it is added (-ENOTSUP, the field and the backend named).
 *
 * Overflow (PAPI_overflow / PAPI_profil on an event): each sample that
 * belongs to an overflowing event adds its share to that event; when the
 * event crosses its threshold the sample's PC is delivered, so a profile
 * shows where the samples of that set fell.  Samples are handed over when
 * the set is read, polled or stopped.
 */
#ifndef HERITAGE_PM_EVENTSET_H
#define HERITAGE_PM_EVENTSET_H

#include <stdint.h>

#include "profileme/pm_collect.h"
#include "profileme/pm_sampleset.h"

#define PM_SET_MAX_EVENTS 32

/* One overflow: pos overflowed at the sample whose PC is pc. */
typedef void (*pm_overflow_fn)(void *arg, unsigned pos, uint64_t pc);

struct pm_eventset {
	unsigned n;
	unsigned code[PM_SET_MAX_EVENTS];
	struct pm_value value[PM_SET_MAX_EVENTS];
	struct pm_tally tally[PM_SET_MAX_EVENTS];
	long long values[PM_SET_MAX_EVENTS];
	const struct heritage_backend *backend; /* chosen when events are set */
	uint64_t period;
	struct pm_thread thread;
	int running;
	/* overflow */
	long long threshold[PM_SET_MAX_EVENTS]; /* 0: not overflowing */
	long long next[PM_SET_MAX_EVENTS];      /* the value at which it fires next */
	pm_overflow_fn deliver;
	void *deliver_arg;
	int draining; /* a drain is under way (a poll tick must not start another) */
};

void pm_eventset_init(struct pm_eventset *s);
/* Replace the events (codes from pm_event_parse); chooses the backend and
 * period (PAPI_HERITAGE_PROFILEME_BACKEND / _PERIOD) and checks every event
 * against it.  0, or -ENOENT / -ENOTSUP / -EPERM / -EINVAL / -EBUSY with the
 * message recorded. */
int pm_eventset_set(struct pm_eventset *s, const unsigned *codes, unsigned n);
int pm_eventset_overflow(struct pm_eventset *s, unsigned pos, long long threshold, pm_overflow_fn fn, void *arg);
int pm_eventset_start(struct pm_eventset *s);
/* Hands over the samples so far and updates values[]. */
int pm_eventset_read(struct pm_eventset *s);
int pm_eventset_stop(struct pm_eventset *s);
int pm_eventset_reset(struct pm_eventset *s);
/* Where code's value comes from with the backend the settings choose now:
 * HERITAGE_MEASURED, HERITAGE_MODELLED (a field the backend models) or
 * HERITAGE_UNAVAILABLE (no backend, or a field it does not produce), with
 * why in the last case. */
int pm_event_source(unsigned code, char *why, size_t len);
/* Any event overflowing? */
int pm_eventset_overflowing(const struct pm_eventset *s);

#endif
