#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "imc/imc_backend.h"
#include "imc/imc_events.h"
#include "imc/imc_mode.h"
#include "imc/imc_set.h"
#include "imc/imc_shm.h"
#include "imc/imc_sources.h"

/* ---- the process's engine --------------------------------------------------------- */

static pthread_mutex_t engine_lock = PTHREAD_MUTEX_INITIALIZER;
static struct imc_engine *engine;
static const struct imc_catalog *engine_cat;
static char engine_why[512];

static struct imc_engine *engine_get(const struct imc_catalog *cat)
{
	pthread_mutex_lock(&engine_lock);
	if (!engine) {
		const struct imc_topo *topo = imc_topo_get(engine_why, sizeof engine_why);
		/* PAPI_HERITAGE_IMC_DAEMON=off: never imcd's pages. */
		const char *d = heritage_env("imc", "daemon");
		enum imc_engine_kind kind = d && strcmp(d, "off") == 0 ? IMC_ENGINE_PRIVATE : IMC_ENGINE_PROCESS;
		if (topo && imc_engine_create(cat, topo, kind, &engine) == 0)
			engine_cat = cat;
		else
			snprintf(engine_why, sizeof engine_why, "%s", heritage_last_error());
	}
	struct imc_engine *e = engine;
	pthread_mutex_unlock(&engine_lock);
	if (!e)
		heritage_fail(-ENODEV, "imc: no engine: %s", engine_why);
	return e;
}

struct imc_engine *imc_set_engine(void)
{
	char why[256];
	if (imc_events_init(why, sizeof why) != 0) {
		heritage_fail(-ENODEV, "imc: %s", why);
		return NULL;
	}
	return engine_get(imc_events_catalog());
}

void imc_set_use_engine(struct imc_engine *e)
{
	pthread_mutex_lock(&engine_lock);
	engine = e;
	engine_cat = NULL;
	pthread_mutex_unlock(&engine_lock);
}

const char *imc_set_nest_where(void)
{
	struct imc_engine *e = imc_set_engine();
	return e ? imc_engine_nest_where(e) : engine_why;
}

int imc_any_usable(char *why, unsigned len)
{
	char reason[512];
	if (imc_events_init(reason, sizeof reason) != 0) {
		snprintf(why, len, "%s", reason);
		return -ENOTSUP;
	}
	if (!imc_topo_get(reason, sizeof reason)) {
		snprintf(why, len, "%s", reason);
		return -ENOTSUP;
	}
	const struct imc_catalog *cat = imc_events_catalog();
	for (unsigned i = 0; i < cat->nentries; i++)
		if (imc_source_of(cat, i, NULL, 0) != HERITAGE_UNAVAILABLE) {
			snprintf(why, len, "%s", "");
			return 0;
		}
	snprintf(why, len, "no entry of the catalog %s has a source on this machine", cat->source);
	return -ENOTSUP;
}

/* ---- the set ------------------------------------------------------------------------- */

void imc_set_init(struct imc_set *s)
{
	memset(s, 0, sizeof *s);
	s->trace_pos = -1;
}

static enum imc_domain_excl domain_of(unsigned type)
{
	return type == IMC_TYPE_CORE ? IMC_EXCL_CORE : type == IMC_TYPE_THREAD ? IMC_EXCL_THREAD
	                                         : type == IMC_TYPE_TRACE  ? IMC_EXCL_TRACE : 0;
}

int imc_set_entries(struct imc_set *s, const struct imc_catalog *cat, const unsigned *entries, const int *cpus,
                    unsigned n)
{
	char what[1024];
	unsigned domains = 0;
	if (s->running)
		return heritage_fail(-EBUSY, "imc: the set is running");
	if (n > IMC_MAX_EVENTS)
		return heritage_fail(-ENOSPC, "imc: %u events, at most %d", n, IMC_MAX_EVENTS);
	for (unsigned i = 0; i < n; i++) {
		if (entries[i] >= cat->nentries)
			return heritage_fail(-ENOENT, "imc: no catalog entry %u", entries[i]);
		const struct imc_cat_entry *e = &cat->entries[entries[i]];
		const struct imc_cat_unit *u = &cat->units[e->unit];
		if (imc_source_of(cat, entries[i], what, sizeof what) == HERITAGE_UNAVAILABLE)
			return heritage_fail(-ENOTSUP, "imc: %s is unavailable here: %s", e->name, what);
		if (u->type == IMC_TYPE_TRACE && (domains & (1u << IMC_EXCL_TRACE)))
			return heritage_fail(-ENOSPC, "imc: %s twice in one set: a thread has one trace buffer (LDBAR)",
			                     e->name);
		domains |= 1u << domain_of(u->type);
	}
	if ((domains & (1u << IMC_EXCL_TRACE)) && (domains & (1u << IMC_EXCL_CORE | 1u << IMC_EXCL_THREAD)))
		return heritage_fail(-EBUSY, "imc: trace_imc with core_imc or thread_imc events in one set: the "
		                     "hardware is in trace or in accumulation mode, as the kernel's rule says");
	struct imc_trace_set trace = { 0 };
	if (domains & (1u << IMC_EXCL_TRACE)) {
		int err = imc_trace_set_init(&trace);
		if (err)
			return err;
	}
	if ((domains & (1u << IMC_EXCL_CORE)) && (domains & (1u << IMC_EXCL_THREAD)))
		return heritage_fail(-EBUSY, "imc: core_imc and thread_imc events in one set: they exclude one another, "
		                     "as the kernel's do (the per-core engine counts either the core or its threads)");
	s->trace_pos = -1;
	s->trace = trace;
	for (unsigned i = 0; i < n; i++) {
		const struct imc_cat_entry *e = &cat->entries[entries[i]];
		const struct imc_sysfs_pmu *p = NULL;
		const struct imc_sysfs_event *ev = NULL;
		enum imc_backend_kind kind = IMC_BACKEND_ENGINE;
		s->perf[i] = cat->units[e->unit].type != IMC_TYPE_TRACE && imc_backend_get(&kind, NULL, NULL, 0) == 0 &&
		             kind == IMC_BACKEND_PERF &&
		             imc_backend_perf_event(&cat->units[e->unit], e, &p, &ev, what, sizeof what) == 0;
		s->pc[i] = (struct imc_sysfs_counter){ .fd = -1, .pmu = p, .event = ev };
		s->entry[i] = entries[i];
		s->cpu[i] = cpus ? cpus[i] : -1;
		s->type[i] = cat->units[cat->entries[entries[i]].unit].type;
		memset(&s->ctr[i], 0, sizeof s->ctr[i]);
		s->threshold[i] = s->deadline[i] = 0;
		if (s->type[i] == IMC_TYPE_TRACE)
			s->trace_pos = (int)i;
	}
	s->nevents = n;
	memset(s->values, 0, sizeof s->values);
	return 0;
}

int imc_set_events(struct imc_set *s, const unsigned *codes, unsigned n)
{
	unsigned entries[IMC_MAX_EVENTS];
	int cpus[IMC_MAX_EVENTS];
	char why[512];
	if (n > IMC_MAX_EVENTS)
		return heritage_fail(-ENOSPC, "imc: %u events, at most %d", n, IMC_MAX_EVENTS);
	if (imc_events_init(why, sizeof why) != 0)
		return heritage_fail(-ENODEV, "imc: %s", why);
	const struct imc_catalog *cat = imc_events_catalog();
	for (unsigned i = 0; i < n; i++) {
		const struct imc_cat_entry *e = imc_event_entry(codes[i]);
		if (!e)
			return heritage_fail(-ENOENT, "imc: no event with code %#x", codes[i]);
		entries[i] = (unsigned)(e - cat->entries);
		cpus[i] = imc_event_cpu(codes[i]);
	}
	int err = imc_set_entries(s, cat, entries, cpus, n);
	if (!err)
		memcpy(s->codes, codes, n * sizeof codes[0]);
	return err;
}

static void release(struct imc_set *s)
{
	for (int d = IMC_EXCL_CORE; d <= IMC_EXCL_TRACE; d++)
		if (s->held & (1u << d))
			imc_excl_release((enum imc_domain_excl)d);
	s->held = 0;
}

int imc_set_start(struct imc_set *s)
{
	if (s->running)
		return heritage_fail(-EBUSY, "imc: the set is running");
	int exact;
	int bad = heritage_env_flag("imc", "exact", &exact);
	if (bad)
		return bad;
	/* The engine counts what neither the trace nor the kernel's PMUs do. */
	int counters = 0;
	for (unsigned i = 0; i < s->nevents; i++)
		counters += (int)i != s->trace_pos && !s->perf[i];
	struct imc_engine *e;
	pthread_mutex_lock(&engine_lock);
	e = engine;
	pthread_mutex_unlock(&engine_lock);
	if (counters && !e && !(e = imc_set_engine()))
		return -ENODEV;
	for (unsigned i = 0; i < s->nevents; i++)
		if (s->type[i] == IMC_TYPE_NEST) {
			int err = imc_engine_check_nest(e);
			if (err)
				return err;
			break;
		}
	/* Applied at each start: a program may change it between runs
	 * (papi_heritage_env_reread). */
	if (heritage_env("imc", "speed"))
		imc_engine_set_speed(e, imc_speed_setting());
	int err = 0;
	for (unsigned i = 0; i < s->nevents && !err; i++) {
		enum imc_domain_excl d = domain_of(s->type[i]);
		if (d && !(s->held & (1u << d))) {
			err = imc_excl_acquire(d);
			if (!err)
				s->held |= 1u << d;
		}
	}
	/* Thread events arm the calling task thread's page. */
	unsigned armed = 0;
	while (!err && armed < s->nevents) {
		if (s->perf[armed]) {
			err = imc_sysfs_counter_open(&s->pc[armed], s->pc[armed].pmu, s->pc[armed].event, s->cpu[armed]);
			if (!err && (err = imc_sysfs_counter_start(&s->pc[armed])) != 0)
				imc_sysfs_counter_close(&s->pc[armed]);
		} else if ((int)armed != s->trace_pos)
			err = imc_engine_arm(e, s->entry[armed], s->cpu[armed], &s->ctr[armed]);
		armed += !err;
	}
	if (!err && counters)
		err = imc_engine_run(e);
	/* Last: the trace starts sampling the calling thread. */
	if (!err && s->trace_pos >= 0)
		err = imc_trace_set_start(&s->trace);
	if (err) {
		for (unsigned i = 0; i < armed; i++)
			if (s->perf[i])
				imc_sysfs_counter_close(&s->pc[i]);
			else if ((int)i != s->trace_pos)
				imc_engine_release(e, &s->ctr[i]);
		release(s);
		return err;
	}
	s->exact = exact;
	for (unsigned i = 0; i < s->nevents; i++) {
		if ((int)i == s->trace_pos || s->perf[i]) {
			s->values[i] = 0;
			s->deadline[i] = s->threshold[i];
			continue;
		}
		if (s->exact)
			imc_engine_sync(e, &s->ctr[i]);
		s->start[i] = imc_counter_load(&s->ctr[i]);
		s->values[i] = 0;
		s->deadline[i] = s->threshold[i];
	}
	s->running = 1;
	return 0;
}

static void take(struct imc_set *s)
{
	for (unsigned i = 0; i < s->nevents; i++) {
		uint64_t v;
		if (s->perf[i]) {
			if (imc_sysfs_counter_read(&s->pc[i], &v) == 0)
				s->values[i] = (long long)v;
		} else if ((int)i != s->trace_pos)
			s->values[i] = (long long)(imc_counter_load(&s->ctr[i]) - s->start[i]); /* mod 2^64 */
	}
}

static int engine_counter(const struct imc_set *s, unsigned i)
{
	return (int)i != s->trace_pos && !s->perf[i];
}

/* Whether one of the set's counters is on an imcd page that imcd no
 * longer updates (killed, stopped, hung); why says which.  A read is a
 * load of its page, which keeps its last values: the read said nothing,
 * and a set running across imcd's death read the same counts for good
 * (paragon_rpm's reads fail loudly in that case).  A clock read, only for
 * a set with counters on imcd's pages, and a header load per counter; the
 * pid is looked up only once the heartbeat is 2 periods late. */
static int any_frozen(const struct imc_set *s, char *why, size_t len)
{
	uint64_t now = 0;
	for (unsigned i = 0; i < s->nevents; i++) {
		if (!engine_counter(s, i) || !imc_counter_remote(&s->ctr[i]))
			continue;
		if (!now)
			now = imc_shm_boottime_ns();
		if (imc_counter_imcd_stale(&s->ctr[i], now, why, len))
			return 1;
	}
	return 0;
}

int imc_set_read(struct imc_set *s)
{
	if (!s->running)
		return 0;
	if (s->exact)
		for (unsigned i = 0; engine && i < s->nevents; i++)
			if (engine_counter(s, i))
				imc_engine_sync(engine, &s->ctr[i]);
	char why[256];
	if (any_frozen(s, why, sizeof why))
		return heritage_fail(-ESTALE,
		                     "imc: the set's nest counts come from imcd's pages, and %s: they are frozen since; "
		                     "PAPI_reset counts on from a live source (a restarted imcd, or this process's own "
		                     "engine)",
		                     why);
	take(s);
	/* The hand-over: records reach an armed handler here. */
	return s->trace_pos >= 0 ? imc_trace_set_read(&s->trace, &s->values[s->trace_pos]) : 0;
}

int imc_set_stop(struct imc_set *s)
{
	if (!s->running)
		return 0;
	struct imc_engine *e = engine;
	int err = 0;
	if (s->trace_pos >= 0)
		err = imc_trace_set_stop(&s->trace, &s->values[s->trace_pos]);
	for (unsigned i = 0; e && i < s->nevents; i++)
		if ((int)i != s->trace_pos && !s->perf[i])
			imc_engine_sync(e, &s->ctr[i]);
	take(s);
	for (unsigned i = 0; i < s->nevents; i++) {
		if (s->perf[i]) {
			uint64_t v;
			if (imc_sysfs_counter_stop(&s->pc[i], &v) == 0)
				s->values[i] = (long long)v;
			imc_sysfs_counter_close(&s->pc[i]);
		} else if (e && (int)i != s->trace_pos)
			imc_engine_release(e, &s->ctr[i]);
	}
	s->running = 0;
	release(s);
	return err;
}

/* Moves the counters imcd no longer updates to the engine's nest pages of
 * now: a restarted imcd's, or this process's own (imc_engine_check_nest,
 * as a start would). */
static int rearm_frozen(struct imc_set *s)
{
	char why[256];
	uint64_t now = 0;
	int err = 0, moved = 0;
	for (unsigned i = 0; s->running && i < s->nevents && !err; i++) {
		if (!engine_counter(s, i) || !imc_counter_remote(&s->ctr[i]))
			continue;
		if (!now)
			now = imc_shm_boottime_ns();
		if (!imc_counter_imcd_stale(&s->ctr[i], now, why, sizeof why))
			continue;
		if (!moved++ && (err = imc_engine_check_nest(engine)) != 0)
			break;
		struct imc_counter live;
		err = imc_engine_arm(engine, s->entry[i], s->cpu[i], &live);
		if (!err) {
			imc_engine_release(engine, &s->ctr[i]);
			s->ctr[i] = live;
		}
	}
	return err ? err : moved ? imc_engine_run(engine) : 0;
}

int imc_set_reset(struct imc_set *s)
{
	int err = rearm_frozen(s);
	if (err)
		return err;
	for (unsigned i = 0; i < s->nevents; i++) {
		if ((int)i == s->trace_pos) {
			if (s->running) {
				int err = imc_trace_set_reset(&s->trace);
				if (err)
					return err;
			}
		} else if (s->running && s->perf[i]) {
			int err = imc_sysfs_counter_start(&s->pc[i]); /* from 0 again */
			if (err)
				return err;
			s->deadline[i] = s->threshold[i];
		} else if (s->running) {
			s->start[i] = imc_counter_load(&s->ctr[i]);
			s->deadline[i] = s->threshold[i];
		}
		s->values[i] = 0;
	}
	return 0;
}

int imc_set_overflow(struct imc_set *s, unsigned pos, long long threshold, imc_trace_record_fn deliver, void *arg)
{
	if (pos >= s->nevents)
		return heritage_fail(-EINVAL, "imc: no event at position %u of the set", pos);
	if (s->running)
		return heritage_fail(-EBUSY, "imc: the set is running");
	if (threshold < 0)
		return heritage_fail(-EINVAL, "imc: overflow threshold %lld", threshold);
	if ((int)pos == s->trace_pos)
		return imc_trace_set_overflow(&s->trace, threshold, threshold ? deliver : NULL, arg);
	s->threshold[pos] = threshold;
	return 0;
}

int imc_set_overflow_polled(const struct imc_set *s)
{
	for (unsigned i = 0; i < s->nevents; i++)
		if ((int)i != s->trace_pos && s->threshold[i])
			return 1;
	return 0;
}

uint64_t imc_set_overflow_poll(struct imc_set *s)
{
	uint64_t due = 0;
	if (!s->running)
		return 0;
	take(s);
	for (unsigned i = 0; i < s->nevents; i++)
		if ((int)i != s->trace_pos && s->threshold[i] && s->values[i] >= s->deadline[i]) {
			due |= 1ull << i;
			s->deadline[i] = s->values[i] + s->threshold[i];
		}
	return due;
}
