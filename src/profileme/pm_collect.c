/*
 * The profileme backend table and the per-thread collector over it.
 */
#include "profileme/pm_collect.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
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

/* ---- the nudger (pm_collect.h, struct pm_backend_ops.nudge) ----------------
 * One thread per process, started with the first thread whose backend can be
 * nudged and ending 1 s after the last one stops: every 10 ms it nudges each
 * of them.  Created with the C library's pthread_create (RTLD_NEXT), not an
 * interposed one: profileme-run's preloaded library wraps pthread_create to
 * sample every new thread, and a tool's wrapper would count ours. */
#define PM_NUDGE_NS 10000000L
#define PM_NUDGE_IDLE_ROUNDS 100
#define PM_NUDGE_MAX 256

static struct {
	pthread_mutex_t lock;
	struct pm_thread *list[PM_NUDGE_MAX];
	unsigned n;
	int running;
} nudger = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *nudger_main(void *arg)
{
	(void)arg;
	unsigned idle = 0;
	for (;;) {
		struct timespec ts = { 0, PM_NUDGE_NS };
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&nudger.lock);
		for (unsigned i = 0; i < nudger.n; i++)
			pm_ops(nudger.list[i])->nudge(nudger.list[i]);
		idle = nudger.n ? 0 : idle + 1;
		if (idle >= PM_NUDGE_IDLE_ROUNDS) {
			nudger.running = 0;
			pthread_mutex_unlock(&nudger.lock);
			return NULL;
		}
		pthread_mutex_unlock(&nudger.lock);
	}
}

/* A fork's child has no nudger and none of its parent's timers. */
static void nudger_prepare(void)
{
	pthread_mutex_lock(&nudger.lock);
}
static void nudger_parent(void)
{
	pthread_mutex_unlock(&nudger.lock);
}
static void nudger_child(void)
{
	nudger.n = 0;
	nudger.running = 0;
	pthread_mutex_unlock(&nudger.lock);
}
static void nudger_once(void)
{
	pthread_atfork(nudger_prepare, nudger_parent, nudger_child);
}

static void nudger_add(struct pm_thread *t)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	if (!pm_ops(t)->nudge)
		return;
	pthread_once(&once, nudger_once);
	pthread_mutex_lock(&nudger.lock);
	if (nudger.n < PM_NUDGE_MAX)
		nudger.list[nudger.n++] = t;
	if (!nudger.running) {
		typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
		create_fn create = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
		pthread_attr_t attr;
		pthread_t th;
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old); /* the nudger takes no signal */
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if ((create ? create : pthread_create)(&th, &attr, nudger_main, NULL) == 0)
			nudger.running = 1;
		pthread_attr_destroy(&attr);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	pthread_mutex_unlock(&nudger.lock);
}

static void nudger_remove(struct pm_thread *t)
{
	pthread_mutex_lock(&nudger.lock);
	for (unsigned i = 0; i < nudger.n; i++)
		if (nudger.list[i] == t) {
			nudger.list[i] = nudger.list[--nudger.n];
			break;
		}
	pthread_mutex_unlock(&nudger.lock);
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
	nudger_add(t);
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
	if (t->running)
		nudger_remove(t);
	if (t->running && ops->stop)
		ops->stop(t);
	t->running = 0;
	pm_thread_drain(t, fn ? fn : drop, arg);
	if (ops->release)
		ops->release(t);
	t->priv = NULL;
}
