/*
 * profileme event sets over one sample stream (pm_eventset.h).
 */
#include "profileme/pm_eventset.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/heritage_error.h"
#include "common/heritage_source.h"
#include "profileme/pm_events.h"

void pm_eventset_init(struct pm_eventset *s)
{
	memset(s, 0, sizeof *s);
}

int pm_eventset_set(struct pm_eventset *s, const unsigned *codes, unsigned n)
{
	char why[512], name[256];
	if (s->running)
		return heritage_fail(-EBUSY, "profileme: the event set is running");
	if (n > PM_SET_MAX_EVENTS)
		return heritage_fail(-ENOSPC, "profileme: at most %d events in one set", PM_SET_MAX_EVENTS);
	const struct heritage_backend *b = NULL;
	uint64_t period = 0;
	if (n) {
		int err = pm_backend_choose(&b, why, sizeof why);
		if (err)
			return heritage_fail(err, "profileme: %s", why);
		if ((err = pm_period_for(b, &period, why, sizeof why)))
			return heritage_fail_msg(err, why);
	}
	struct pm_value values[PM_SET_MAX_EVENTS];
	for (unsigned i = 0; i < n; i++) {
		if (pm_event_value(codes[i], &values[i]))
			return heritage_fail(-ENOENT, "profileme: no event with code %#x", codes[i]);
		const struct pm_backend_ops *ops = b->ops;
		int err = pm_value_check(&values[i], ops->fields, b->name, why, sizeof why);
		if (err) {
			pm_event_format(codes[i], name, sizeof name);
			return heritage_fail(err, "profileme:::%s: %s", name, why);
		}
	}
	s->n = n;
	memcpy(s->code, codes, n * sizeof *codes);
	memcpy(s->value, values, n * sizeof *values);
	s->backend = b;
	s->period = period;
	memset(s->threshold, 0, sizeof s->threshold);
	return pm_eventset_reset(s);
}

int pm_eventset_overflow(struct pm_eventset *s, unsigned pos, long long threshold, pm_overflow_fn fn, void *arg)
{
	if (pos >= s->n)
		return heritage_fail(-EINVAL, "profileme: no event at position %u", pos);
	if (threshold < 0)
		return heritage_fail(-EINVAL, "profileme: a negative overflow threshold");
	s->threshold[pos] = threshold;
	s->next[pos] = s->values[pos] + threshold;
	if (threshold) {
		s->deliver = fn;
		s->deliver_arg = arg;
	}
	return 0;
}

int pm_eventset_overflowing(const struct pm_eventset *s)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->threshold[i])
			return 1;
	return 0;
}

static void take(void *arg, const struct pm_sample *smp)
{
	struct pm_eventset *s = arg;
	for (unsigned i = 0; i < s->n; i++) {
		uint64_t before = s->tally[i].samples;
		pm_tally_add(&s->tally[i], &s->value[i], smp);
		if (s->tally[i].samples == before)
			continue;
		s->values[i] = (long long)pm_tally_estimate(&s->tally[i], &s->value[i], s->period);
		/* One delivery per threshold crossed, all at the sample that
		 * crossed them: a sample worth several thresholds (a period
		 * above the threshold, a large counter value) is that many
		 * overflows, as PAPI_profil's buckets and a handler counting
		 * calls expect. */
		while (s->threshold[i] && s->values[i] >= s->next[i]) {
			s->next[i] += s->threshold[i];
			if (s->deliver)
				s->deliver(s->deliver_arg, i, smp->pc);
		}
	}
}

int pm_eventset_read(struct pm_eventset *s)
{
	if (!s->running || __atomic_exchange_n(&s->draining, 1, __ATOMIC_ACQUIRE))
		return 0;
	long n = pm_thread_drain(&s->thread, take, s);
	__atomic_store_n(&s->draining, 0, __ATOMIC_RELEASE);
	return n < 0 ? heritage_fail((int)n, "profileme: reading the %s backend's samples failed", s->backend->name)
	             : 0;
}

int pm_eventset_start(struct pm_eventset *s)
{
	char why[512];
	if (s->running)
		return heritage_fail(-EBUSY, "profileme: the event set is already running");
	if (!s->n || !s->backend)
		return heritage_fail(-EINVAL, "profileme: no events in the set");
	int err = pm_thread_start(&s->thread, s->backend, s->period, why, sizeof why);
	if (err)
		return heritage_fail(err, "profileme: %s", why);
	s->period = s->thread.period;
	s->running = 1;
	return 0;
}

int pm_eventset_stop(struct pm_eventset *s)
{
	if (!s->running)
		return 0;
	while (__atomic_exchange_n(&s->draining, 1, __ATOMIC_ACQUIRE))
		;
	pm_thread_stop(&s->thread, take, s);
	s->running = 0;
	__atomic_store_n(&s->draining, 0, __ATOMIC_RELEASE);
	return 0;
}

int pm_eventset_reset(struct pm_eventset *s)
{
	if (s->running)
		pm_eventset_read(s); /* samples before the reset are not after it */
	memset(s->tally, 0, sizeof s->tally);
	memset(s->values, 0, sizeof s->values);
	for (unsigned i = 0; i < s->n; i++)
		s->next[i] = s->threshold[i];
	return 0;
}

int pm_event_source(unsigned code, char *why, size_t len)
{
	const struct heritage_backend *b;
	struct pm_value v;
	if (why && len)
		why[0] = '\0';
	if (pm_event_value(code, &v))
		return HERITAGE_UNAVAILABLE;
	char reason[512];
	if (pm_backend_choose(&b, reason, sizeof reason)) {
		if (why && len)
			snprintf(why, len, "%s", reason);
		return HERITAGE_UNAVAILABLE;
	}
	const struct pm_backend_ops *ops = b->ops;
	if (pm_value_check(&v, ops->fields, b->name, reason, sizeof reason)) {
		if (why && len)
			snprintf(why, len, "%s", reason);
		return HERITAGE_UNAVAILABLE;
	}
	return pm_value_fields(&v) & ops->modelled ? HERITAGE_MODELLED : HERITAGE_MEASURED;
}
