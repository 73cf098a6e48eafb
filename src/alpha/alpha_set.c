/*
 * An alpha21064 event set (alpha_set.h): the bookkeeping, backend choice,
 * environment knobs, delivery accounting and statistics that used to live
 * in the PAPI component, testable here without PAPI.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <x86intrin.h>

#include "alpha/alpha_set.h"
#include "common/heritage_backend.h"
#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "papi_heritage.h"
#include "watch/watch_step.h"

/* The operating system whose interrupt frame handlers see: per process. */
static _Atomic int alpha_os = ALPHA_OS_UNIX;
/* The interrupt being delivered on this thread (alpha_set_frame). */
static __thread struct alpha_frame cur_frame;
static __thread int cur_frame_valid;

/* Relaxed atomics: deliveries run in several threads' signal handlers at
 * once and only the totals matter. */
static _Atomic unsigned long long st_deliveries, st_ticks, st_min, st_last;

void alpha_set_init(struct alpha_set *s)
{
	memset(s, 0, sizeof *s);
	s->pos_of[0] = s->pos_of[1] = -1;
}

static const struct alpha_select *selection(const struct alpha_set *s)
{
	return s->backend == ALPHA_BACKEND_PMU ? &s->pmu.sel : &s->run.sel;
}

static const uint64_t *interrupts(const struct alpha_set *s)
{
	return s->backend == ALPHA_BACKEND_PMU ? s->pmu.interrupts : s->run.interrupts;
}

/* PAPI_HERITAGE_ALPHA21064_BACKEND, parsed in this one place. */
static int wanted_backend(enum alpha_backend *want)
{
	return alpha_backend_parse(heritage_env("alpha21064", "backend"), want);
}

static const char *stand_in(void)
{
	return heritage_env("alpha21064", "pmu_test_event");
}

int alpha_set_events(struct alpha_set *s, const unsigned *codes, unsigned n)
{
	enum alpha_backend want, chosen;
	struct alpha_select sel;
	unsigned pos[ALPHA_NCOUNTERS] = { 0 };

	if (n > ALPHA_NCOUNTERS)
		return heritage_fail(-EBUSY, "alpha21064: the 21064 has two counters; an event set holds at most one "
		                     "event on each");
	int err = wanted_backend(&want);
	if (err)
		return err;
	alpha_pmu_close(&s->pmu);
	if (n == 0) {
		s->backend = 0;
	} else {
		err = alpha_backend_choose(want, stand_in(), &s->pmu, &sel, codes, n, pos, &chosen);
		if (err)
			return err;
		if (chosen == ALPHA_BACKEND_SOFTWARE)
			s->run.sel = sel;
		s->backend = chosen;
	}
	s->ncodes = n;
	s->pos_of[0] = s->pos_of[1] = -1;
	for (unsigned i = 0; i < n; i++) {
		s->codes[i] = codes[i];
		s->counter_of[i] = pos[i];
		s->pos_of[pos[i]] = (int)i;
	}
	/* Overflow settings follow the events; PAPI re-applies set_overflow. */
	memset(s->irq_per_call, 0, sizeof s->irq_per_call);
	return 0;
}

int alpha_set_start(struct alpha_set *s, struct alpha_cpu *cpu)
{
	char why[512] = "";
	int err;

	memset(s->irq_pending, 0, sizeof s->irq_pending);
	if (s->backend == ALPHA_BACKEND_PMU) {
		s->pmu.deliver = alpha_set_deliver;
		s->pmu.deliver_arg = s;
		err = alpha_pmu_start(&s->pmu, why, sizeof why);
	} else {
		s->run.cpu = cpu;
		s->run.hz = alpha_set_nominal_hz();
		s->run.deliver = alpha_set_deliver;
		s->run.deliver_arg = s;
		err = alpha_sw_start(&s->run, why, sizeof why);
	}
	return err ? heritage_fail_msg(err, why) : 0;
}

int alpha_set_stop(struct alpha_set *s)
{
	int err = alpha_sw_stop(&s->run);
	return err ? err : alpha_pmu_stop(&s->pmu);
}

void alpha_set_read(struct alpha_set *s)
{
	for (unsigned i = 0; i < s->ncodes; i++) {
		unsigned k = s->counter_of[i];
		s->values[i] = alpha_estimate(interrupts(s)[k], selection(s)->width[k]);
	}
}

void alpha_set_reset(struct alpha_set *s)
{
	alpha_sw_reset(&s->run);
	alpha_pmu_reset(&s->pmu);
}

void alpha_set_cleanup(struct alpha_set *s)
{
	(void)alpha_sw_stop(&s->run);
	alpha_pmu_close(&s->pmu);
}

int alpha_set_threshold(struct alpha_set *s, unsigned pos, long long threshold)
{
	if (pos >= s->ncodes)
		return heritage_fail(-EINVAL, "alpha21064: no event at position %u of the set", pos);
	unsigned k = s->counter_of[pos];
	if (threshold == 0) {
		s->irq_per_call[k] = 0;
		return 0;
	}
	int64_t per = alpha_threshold_interrupts(threshold, selection(s)->width[k], alpha_event_of(s->codes[pos])->name);
	if (per < 0)
		return (int)per;
	s->irq_per_call[k] = per;
	s->irq_pending[k] = 0;
	return 0;
}

const char *alpha_set_backend_name(const struct alpha_set *s)
{
	return s->backend ? alpha_backend_name((enum alpha_backend)s->backend) : "none";
}

void alpha_set_deliver(void *arg, unsigned counter, uint64_t pc, ucontext_t *uc)
{
	struct alpha_set *s = arg;
	if (s->irq_per_call[counter] <= 0 || s->pos_of[counter] < 0)
		return; /* no handler on this counter: the OS just counts it */
	if (++s->irq_pending[counter] < (uint64_t)s->irq_per_call[counter])
		return;
	s->irq_pending[counter] = 0;

	/* The delivery's own cost, apart from the step (issue 5's bench could
	 * not get it by subtracting two stepped runs: stepping noise swamped
	 * it).  rdtsc: a few ns, no system call, safe in a signal handler. */
	unsigned long long t0 = __rdtsc();
	alpha_frame_build((enum alpha_os)alpha_os, counter, pc, &cur_frame);
	cur_frame_valid = 1;
	s->dispatch(s->dispatch_arg, (unsigned)s->pos_of[counter], pc, uc);
	cur_frame_valid = 0;
	unsigned long long dt = __rdtsc() - t0;
	atomic_fetch_add_explicit(&st_deliveries, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&st_ticks, dt, memory_order_relaxed);
	atomic_store_explicit(&st_last, dt, memory_order_relaxed);
	unsigned long long m = atomic_load_explicit(&st_min, memory_order_relaxed);
	while ((m == 0 || dt < m) &&
	       !atomic_compare_exchange_weak_explicit(&st_min, &m, dt, memory_order_relaxed, memory_order_relaxed))
		;
}

enum heritage_source alpha_set_event_source(const struct alpha_event *e)
{
	enum alpha_backend want;
	char before[1024];
	/* A value the parser refuses counts as software here, as before, and
	 * quietly (listings must not overwrite the last error): adding the
	 * event says what is wrong with it. */
	snprintf(before, sizeof before, "%s", heritage_last_error());
	int bad = wanted_backend(&want) != 0;
	if (bad && before[0])
		heritage_fail_msg(0, before);
	else if (bad)
		heritage_clear_error();
	int pmu = bad ? 0 : want == ALPHA_BACKEND_AUTO ? alpha_pmu_usable() : want == ALPHA_BACKEND_PMU;
	if (!pmu)
		return e->sw_source;
	return e->host_honesty ? HERITAGE_MEASURED : HERITAGE_UNAVAILABLE;
}

const struct heritage_backend *alpha_set_backends(unsigned *n)
{
	return alpha_backend_table(stand_in() != NULL, n);
}

/* From the table events will be chosen from: with a stand-in event the PMU
 * backend needs only the sampling ring, so a machine with neither a core
 * PMU nor single-stepping (a ThreadSanitizer build) still has one. */
int alpha_any_backend(char *why, size_t len)
{
	unsigned n;
	const struct heritage_backend *t = alpha_set_backends(&n);
	return heritage_backend_any_usable(t, n, why, len);
}

void alpha_limits(char *buf, size_t len)
{
	unsigned n;
	const struct heritage_backend *t = alpha_set_backends(&n);
	heritage_backend_limits(t, n, buf, len);
}

uint64_t alpha_set_nominal_hz(void)
{
	const char *mhz = heritage_env("alpha21064", "clock_mhz");
	unsigned long v = mhz ? strtoul(mhz, NULL, 10) : 0;
	return v ? (uint64_t)v * 1000000ull : ALPHA_NOMINAL_HZ;
}

void alpha_set_os_from_env(void)
{
	enum alpha_os os;
	const char *want = heritage_env("alpha21064", "os");
	if (want && alpha_os_parse(want, &os) == 0)
		alpha_os = os;
}

int alpha_set_os(int os)
{
	if (os != ALPHA_OS_UNIX && os != ALPHA_OS_VMS && os != ALPHA_OS_NT)
		return heritage_fail(-EINVAL, "alpha21064: unknown operating system %d (PAPI_HERITAGE_ALPHA_OS_UNIX, _VMS "
		                     "or _NT)", os);
	alpha_os = os;
	return 0;
}

enum alpha_os alpha_get_os(void)
{
	return (enum alpha_os)alpha_os;
}

_Static_assert(PAPI_HERITAGE_ALPHA_OS_UNIX == ALPHA_OS_UNIX && PAPI_HERITAGE_ALPHA_OS_VMS == ALPHA_OS_VMS &&
               PAPI_HERITAGE_ALPHA_OS_NT == ALPHA_OS_NT, "the public OS numbers are alpha_model.h's");

int alpha_set_frame(struct papi_heritage_alpha21064_frame *f)
{
	if (!cur_frame_valid)
		return heritage_fail(-EINVAL, "alpha21064: no counter interrupt is being delivered on this thread (call "
		                     "papi_heritage_alpha21064_frame from a PAPI_overflow handler)");
	*f = (struct papi_heritage_alpha21064_frame){
		.os = cur_frame.os, .counter = (int)cur_frame.counter, .pc = cur_frame.pc, .vector = cur_frame.vector,
		.ipl = cur_frame.ipl, .exception = cur_frame.exception, .r4 = cur_frame.r4,
		.a0 = cur_frame.a0, .a1 = cur_frame.a1, .a2 = cur_frame.a2,
	};
	return 0;
}

void alpha_set_stats(struct papi_heritage_alpha21064_stats *st)
{
	struct watch_step_stats ws;
	watch_step_stats(&ws);
	st->deliveries = atomic_load_explicit(&st_deliveries, memory_order_relaxed);
	st->delivery_ticks = atomic_load_explicit(&st_ticks, memory_order_relaxed);
	st->min_ticks = atomic_load_explicit(&st_min, memory_order_relaxed);
	st->last_ticks = atomic_load_explicit(&st_last, memory_order_relaxed);
	st->steps = ws.steps;
}
