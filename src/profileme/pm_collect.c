/*
 * The profileme backend table and the per-thread collector over it.
 */
#include "profileme/pm_collect.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"

/* IBS first: it is the hardware's own tagging, and far cheaper per sample
 * than a timer signal and a single step. */
static const struct heritage_backend pm_backend_table[] = {
	{ .name = "ibs", .needs = HERITAGE_MECH_BIT(HERITAGE_MECH_IBS), .ops = &pm_ibs_ops },
	{ .name = "soft", .needs = HERITAGE_MECH_BIT(HERITAGE_MECH_SINGLE_STEP), .ops = &pm_soft_ops },
};

const struct heritage_backend *pm_backends(unsigned *n)
{
	*n = sizeof pm_backend_table / sizeof pm_backend_table[0];
	return pm_backend_table;
}

int pm_backend_choose(const struct heritage_backend **out, char *why, size_t len)
{
	unsigned n;
	const struct heritage_backend *t = pm_backends(&n);
	const char *want = heritage_env("profileme", "backend");
	int forced = -1;
	if (want && *want && strcasecmp(want, "auto")) {
		forced = heritage_backend_find(t, n, want);
		if (forced < 0) {
			snprintf(why, len, "PAPI_HERITAGE_PROFILEME_BACKEND=%s: not auto, ibs or soft", want);
			return heritage_fail_msg(-EINVAL, why);
		}
	}
	unsigned i = 0;
	int err = heritage_backend_choose(t, n, forced, 0, NULL, NULL, &i, why, len);
	if (err)
		return heritage_fail_msg(err, why);
	*out = &t[i];
	return 0;
}

int pm_period_for(const struct heritage_backend *b, uint64_t *period, char *why, size_t len)
{
	const struct pm_backend_ops *ops = b->ops;
	const char *s = heritage_env("profileme", "period");
	uint64_t p = ops->default_period;
	if (s && *s) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(s, &end, 0);
		if (errno || end == s || *end || v == 0 || s[0] == '-') {
			snprintf(why, len, "PAPI_HERITAGE_PROFILEME_PERIOD=%s: not a positive number (of %s for the %s backend)",
			         s, ops->unit, b->name);
			return heritage_fail_msg(-EINVAL, why);
		}
		p = v;
	}
	if (p < ops->min_period) {
		snprintf(why, len, "profileme: period %" PRIu64 " %s is below the %s backend's least, %" PRIu64, p,
		         ops->unit, b->name, ops->min_period);
		return heritage_fail_msg(-EINVAL, why);
	}
	*period = ops->round_period ? ops->round_period(p) : p;
	return 0;
}

int pm_thread_start(struct pm_thread *t, const struct heritage_backend *b, uint64_t period, char *why, size_t len)
{
	memset(t, 0, sizeof *t);
	t->backend = b;
	const struct pm_backend_ops *ops = b->ops;
	if (!period) {
		int err = pm_period_for(b, &period, why, len);
		if (err)
			return err;
	} else if (period < ops->min_period) {
		snprintf(why, len, "profileme: period %" PRIu64 " %s is below the %s backend's least, %" PRIu64, period,
		         ops->unit, b->name, ops->min_period);
		return heritage_fail_msg(-EINVAL, why);
	} else if (ops->round_period) {
		period = ops->round_period(period);
	}
	t->period = period;
	t->tid = (int)syscall(SYS_gettid);
	int err = ops->start(t, why, len);
	if (err)
		return heritage_fail_msg(err, why);
	t->running = 1;
	return 0;
}

long pm_thread_drain(struct pm_thread *t, pm_sample_fn fn, void *arg)
{
	if (!t->backend || !pm_ops(t)->drain)
		return 0;
	long n = pm_ops(t)->drain(t, fn, arg);
	if (n > 0)
		t->samples += (uint64_t)n;
	return n;
}

void pm_thread_nudge(struct pm_thread *t)
{
	if (t->backend && t->running && pm_ops(t)->nudge)
		pm_ops(t)->nudge(t);
}

static void drop(void *arg, const struct pm_sample *s)
{
	(void)arg;
	(void)s;
}

void pm_thread_stop(struct pm_thread *t, pm_sample_fn fn, void *arg)
{
	if (!t->backend)
		return;
	const struct pm_backend_ops *ops = pm_ops(t);
	if (t->running && ops->stop)
		ops->stop(t);
	t->running = 0;
	pm_thread_drain(t, fn ? fn : drop, arg);
	if (ops->release)
		ops->release(t);
	t->priv = NULL;
}
