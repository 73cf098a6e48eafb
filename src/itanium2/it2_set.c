#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "common/heritage_self.h"
#include "itanium2/it2_cache.h"
#include "itanium2/it2_set.h"
#include "watch/watch_sys.h"

int it2_set_init(struct it2_set *s)
{
	const char *mode = heritage_env("itanium2", "mode");

	memset(s, 0, sizeof *s);
	s->default_mode = RANGEMAP_COARSE;
	if (rangemap_mode_parse(mode, &s->default_mode) == 0)
		return 0;
	s->default_mode = RANGEMAP_COARSE;
	s->bad_mode_env = 1;
	return heritage_fail(-EINVAL, "PAPI_HERITAGE_ITANIUM2_MODE=%s: expected 'coarse' or 'exact'", mode);
}

/* The mode the events ask for: their :exact= qualifiers, which must agree. */
static int events_mode(const unsigned *codes, unsigned n, int *qualified, enum rangemap_mode *mode)
{
	*qualified = 0;
	for (unsigned i = 0; i < n; i++) {
		if (!(codes[i] & IT2_CODE_EXACT_SET))
			continue;
		enum rangemap_mode m = (codes[i] & IT2_CODE_EXACT_ON) ? RANGEMAP_EXACT : RANGEMAP_COARSE;
		if (*qualified && m != *mode)
			return heritage_fail(-EBUSY, "itanium2: events with :exact=0 and :exact=1 cannot share an event set "
			                     "(the mode belongs to the set)");
		*qualified = 1;
		*mode = m;
	}
	return 0;
}

enum rangemap_mode it2_set_mode(const struct it2_set *s)
{
	int qualified;
	enum rangemap_mode m = s->default_mode;

	if (s->drange.set || s->irange.set)
		return s->range_mode;
	events_mode(s->codes, s->nevents, &qualified, &m);
	return m;
}

static int has_event(const struct it2_set *s, enum it2_event_id id)
{
	for (unsigned i = 0; i < s->nevents; i++)
		if ((s->codes[i] & IT2_CODE_INDEX_MASK) == (unsigned)id)
			return 1;
	return 0;
}

static int all_tagged(const struct it2_set *s)
{
	for (unsigned i = 0; i < s->nevents; i++)
		if (!it2_events[s->codes[i] & IT2_CODE_INDEX_MASK].tagged)
			return 0;
	return s->nevents > 0;
}

static int overlaps(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	return a0 < b1 && b0 < a1;
}

int it2_set_range(struct it2_set *s, int instr, uint64_t start, uint64_t end,
                  uintptr_t own_start, uintptr_t own_end, int *start_off, int *end_off)
{
	const char *what = instr ? "PAPI_INSTR_ADDRESS" : "PAPI_DATA_ADDRESS";
	struct heritage_segment seg[HERITAGE_SELF_MAX_SEGMENTS];
	struct rangemap_result map;
	int err;

	*start_off = *end_off = 0;
	if (s->running)
		return heritage_fail(-EBUSY, "%s: the event set is running; stop it first", what);
	if (start >= end)
		return heritage_fail(-EINVAL, "%s: start %#llx must be below end %#llx (end is exclusive)", what,
		                     (unsigned long long)start, (unsigned long long)end);
	if (heritage_range_mapped((uintptr_t)start, (uintptr_t)end) != 0)
		return heritage_fail(-EINVAL, "%s: [%#llx, %#llx) is not (entirely) mapped in this process", what,
		                     (unsigned long long)start, (unsigned long long)end);
	int nseg = heritage_self_segments(seg);
	for (int i = 0; i < nseg; i++)
		if (overlaps(start, end, seg[i].start, seg[i].end))
			return heritage_fail(-EINVAL, "%s: [%#llx, %#llx) overlaps libpapi's own code or data [%#lx, %#lx); "
			                     "counting there would trap the counter itself", what,
			                     (unsigned long long)start, (unsigned long long)end,
			                     (unsigned long)seg[i].start, (unsigned long)seg[i].end);
	if (own_end > own_start && overlaps(start, end, own_start, own_end))
		return heritage_fail(-EINVAL, "%s: [%#llx, %#llx) overlaps the event set's own state", what,
		                     (unsigned long long)start, (unsigned long long)end);
	if (has_event(s, IT2_CPU_CYCLES))
		return heritage_fail(-EINVAL, "%s: CPU_CYCLES cannot be range-restricted; remove it from the set first", what);

	enum rangemap_mode mode = it2_set_mode(s);
	err = instr ? rangemap_instr(start, end, mode, all_tagged(s), &map) : rangemap_data(start, end, mode, &map);
	if (err)
		return heritage_fail(-EINVAL, "%s: [%#llx, %#llx) cannot be mapped to debug-register pairs", what,
		                     (unsigned long long)start, (unsigned long long)end);
	/* The cover, not just the request, must stay off our own memory: a
	 * coarse cover is what gets watched. */
	for (unsigned k = 0; k < map.ncover; k++) {
		for (int i = 0; i < nseg; i++)
			if (overlaps(map.cover[k].start, map.cover[k].end, seg[i].start, seg[i].end))
				return heritage_fail(-EINVAL, "%s: the coarse cover [%#llx, %#llx) of [%#llx, %#llx) reaches "
				                     "libpapi's own code or data; use :exact=1", what,
				                     (unsigned long long)map.cover[k].start,
				                     (unsigned long long)map.cover[k].end, (unsigned long long)start,
				                     (unsigned long long)end);
		if (own_end > own_start && overlaps(map.cover[k].start, map.cover[k].end, own_start, own_end))
			return heritage_fail(-EINVAL, "%s: the coarse cover of [%#llx, %#llx) reaches the event set's own "
			                     "state; use :exact=1", what, (unsigned long long)start, (unsigned long long)end);
	}
	if (map.start_off > INT_MAX || map.end_off > INT_MAX)
		return heritage_fail(-EINVAL, "%s: the coarse cover of [%#llx, %#llx) reaches further than PAPI's int "
		                     "start_off/end_off can say; use :exact=1", what,
		                     (unsigned long long)start, (unsigned long long)end);

	struct it2_range *r = instr ? &s->irange : &s->drange;
	r->set = 1;
	r->start = start;
	r->end = end;
	r->map = map;
	s->range_mode = mode;
	*start_off = (int)map.start_off;
	*end_off = (int)map.end_off;
	return 0;
}

void it2_set_drop_ranges(struct it2_set *s)
{
	memset(&s->drange, 0, sizeof s->drange);
	memset(&s->irange, 0, sizeof s->irange);
}

int it2_set_events(struct it2_set *s, const unsigned *codes, unsigned n)
{
	int qualified;
	enum rangemap_mode m = s->default_mode;
	int err;

	if (n > IT2_MAX_EVENTS)
		return heritage_fail(-ENOSPC, "itanium2: at most %d events per set", IT2_MAX_EVENTS);
	for (unsigned i = 0; i < n; i++) {
		unsigned idx = codes[i] & IT2_CODE_INDEX_MASK;
		if (idx >= IT2_NEVENTS)
			return heritage_fail(-ENOENT, "itanium2: bad event code %#x", codes[i]);
		const char *why = it2_event_unavailable(idx);
		if (why)
			return heritage_fail(-ENOTSUP, "itanium2: %s is an Itanium 2 event with no source here: %s",
			                     it2_event_name(idx), why);
	}
	err = events_mode(codes, n, &qualified, &m);
	if (err)
		return err;
	if ((s->drange.set || s->irange.set) && qualified && m != s->range_mode)
		return heritage_fail(-EBUSY, "itanium2: the set's range was mapped in %s mode; add :exact=%d events "
		                     "before PAPI_set_opt, or set PAPI_HERITAGE_ITANIUM2_MODE",
		                     s->range_mode == RANGEMAP_EXACT ? "exact" : "coarse", m == RANGEMAP_EXACT);
	for (unsigned i = 0; i < n; i++)
		if ((codes[i] & IT2_CODE_INDEX_MASK) == IT2_CPU_CYCLES && (s->drange.set || s->irange.set))
			return heritage_fail(-EBUSY, "itanium2: CPU_CYCLES cannot join a range-restricted event set");
	memcpy(s->codes, codes, n * sizeof *codes);
	s->nevents = n;
	s->has_cycles = has_event(s, IT2_CPU_CYCLES);
	s->model_events = s->dear_events = 0;
	for (unsigned i = 0; i < n; i++) {
		enum it2_counts what = it2_events[codes[i] & IT2_CODE_INDEX_MASK].counts;
		s->model_events |= (uint32_t)(what == IT2_COUNT_MODEL || what == IT2_COUNT_DEAR) << i;
		s->dear_events |= (uint32_t)(what == IT2_COUNT_DEAR) << i;
		/* Not a watch counter: any field, never read (it2_set_read). */
		s->field[i] = what >= IT2_COUNT_CYCLES ? WATCH_FIELD_LOADS : (unsigned char)what;
	}
	return 0;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The watched intervals of a mapped range: the blocks of each pair for
 * coarse instruction ranges (IBRPk counts pair k), the cover otherwise. */
static unsigned range_pairs(const struct it2_range *r, struct watch_interval *iv)
{
	const struct rangemap_result *m = &r->map;

	if (m->npairs > 0 && !m->fine) {
		for (unsigned k = 0; k < m->npairs; k++) {
			uint64_t size = 1ULL << m->pairs[k].log2size;
			iv[k].start = (uintptr_t)(m->pairs[k].base & ~(size - 1));
			iv[k].end = (uintptr_t)(iv[k].start + size);
		}
		return m->npairs;
	}
	for (unsigned k = 0; k < m->ncover; k++) {
		iv[k].start = (uintptr_t)m->cover[k].start;
		iv[k].end = (uintptr_t)m->cover[k].end;
	}
	return m->ncover;
}

/* An in-range load while D-EAR events count: the model's outcome decides
 * whether it qualifies (observe); the positions whose overflow came due. */
static __attribute__((noinline)) uint32_t observe_dear(struct it2_set *s, uintptr_t addr, unsigned size,
                                                       unsigned flags, uintptr_t pc)
{
	struct it2_cache_outcome out;
	it2_cache_access(s->model, addr, size, flags, &out);
	uint32_t due = 0;
	for (unsigned i = 0; i < s->nevents; i++) {
		if (!(s->dear_events & (1u << i)))
			continue;
		const struct it2_event *e = &it2_events[s->codes[i] & IT2_CODE_INDEX_MASK];
		int qualifies = e->dear_latency ? out.latency >= e->dear_latency && out.level != IT2_CACHE_L1D
		                                : (e->dear_tlb & (1u << out.tlb)) != 0;
		if (!qualifies)
			continue;
		s->dear[i]++;
		if ((s->ovf_dear & (1u << i)) && --s->dear_left[i] == 0) {
			s->dear_left[i] = (uint64_t)s->ovf_threshold[i];
			s->dear_last = (struct it2_dear_record){ .pc = pc, .addr = addr, .latency = out.latency,
			                                         .level = out.level, .tlb = out.tlb, .pos = i };
			s->have_dear_record = 1;
			due |= 1u << i;
		}
	}
	if (due) {
		atomic_store(&s->ovf.pending_pc, pc);
		atomic_fetch_or(&s->dear_pending, due);
	}
	return due;
}

/* Every access the backend sees (watch_request.observe), on the counting
 * thread, in the hooks: the model sees it, the range's count.  A D-EAR
 * delivery is a signal to this thread, sent last: its handler (PAPI's,
 * then the program's) runs when the hook returns, and may read the record
 * and touch watched data (observed again, as a new access).
 *
 * A signal handler in instrumented code that interrupts the model halfway
 * through an access would update it again under itself: its accesses are
 * left out (s->unobserved counts them), the model stays consistent. */
static void observe(void *arg, uintptr_t addr, size_t size, int store, uintptr_t pc, int counted)
{
	struct it2_set *s = arg;
	const unsigned flags = (store ? IT2_ACC_STORE : IT2_ACC_LOAD) | (counted ? IT2_ACC_IN_RANGE : 0);
	uint32_t due = 0;
	if (__builtin_expect(s->in_model, 0)) {
		s->unobserved++;
		return;
	}
	s->in_model = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__builtin_expect(s->dear_events && counted && !store, 0))
		due = observe_dear(s, addr, size ? (unsigned)size : 1, flags, pc);
	else
		it2_cache_access(s->model, addr, size ? (unsigned)size : 1, flags, NULL);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	s->in_model = 0;
	if (due)
		watch_sys_tgkill(watch_sys_getpid(), watch_sys_gettid(), s->ovf.signal); /* raw: errno untouched */
}

/* PAPI_HERITAGE_ITANIUM2_CACHE: itanium2 (the default: the Itanium 2 9M
 * "Madison"), or host (this machine's geometry from hwloc). */
static int make_model(struct it2_set *s)
{
	struct it2_cache_config cfg;
	const char *which = heritage_env("itanium2", "cache");
	int err;
	if (!which || strcasecmp(which, "itanium2") == 0)
		err = it2_cache_preset(&cfg, IT2_CACHE_ITANIUM2_MADISON);
	else if (strcasecmp(which, "host") == 0)
		err = it2_cache_config_host(&cfg);
	else
		return heritage_fail(-EINVAL, "PAPI_HERITAGE_ITANIUM2_CACHE=%s: expected 'itanium2' or 'host'", which);
	if (err) /* hwloc could not describe this machine's caches: not here */
		return heritage_fail(-ENOTSUP, "itanium2: the cache model's configuration: %s", heritage_last_error());
	struct it2_cache *m = calloc(1, sizeof *m);
	if (!m)
		return heritage_fail(-ENOMEM, "itanium2: no memory for the cache model");
	err = it2_cache_init(m, &cfg);
	if (err) {
		free(m);
		return heritage_fail(err, "itanium2: the cache model: %s", heritage_last_error());
	}
	s->model = m;
	return 0;
}

/* Counting from zero (start, reset); the model's contents stay, as a
 * processor's caches do. */
static void model_zero(struct it2_set *s)
{
	if (s->model)
		it2_cache_counters_zero(s->model);
	memset(s->dear, 0, sizeof s->dear);
	for (unsigned i = 0; i < s->nevents; i++)
		s->dear_left[i] = (uint64_t)s->ovf_threshold[i];
	atomic_store(&s->dear_pending, 0);
}

void it2_set_release(struct it2_set *s)
{
	if (s->running)
		return;
	if (s->model) {
		it2_cache_destroy(s->model);
		free(s->model);
		s->model = NULL;
	}
}

int it2_set_dear_last(const struct it2_set *s, struct it2_dear_record *r)
{
	if (!s->have_dear_record)
		return heritage_fail(-ENOENT, "itanium2: no D-EAR overflow delivered yet in this event set");
	*r = s->dear_last;
	return 0;
}

int it2_set_start(struct it2_set *s)
{
	struct watch_request *req = &s->ws.req;
	char why[WATCH_ERRLEN] = "";
	enum watch_backend forced = WATCH_BACKEND_AUTO;
	const char *env = heritage_env("itanium2", "backend");
	int want_data = 0, want_code = 0, want_misaligned = 0;

	if (s->bad_mode_env)
		return heritage_fail(-EINVAL, "PAPI_HERITAGE_ITANIUM2_MODE=%s: expected 'coarse' or 'exact'",
		                     heritage_env("itanium2", "mode"));
	if (env && watch_backend_from_name(env, &forced) != 0)
		return heritage_fail(-EINVAL, "PAPI_HERITAGE_ITANIUM2_BACKEND=%s: expected auto, instrument, breakpoint "
		                     "or pagetrap", env);
	for (unsigned i = 0; i < s->nevents; i++) {
		const struct it2_event *e = &it2_events[s->codes[i] & IT2_CODE_INDEX_MASK];
		want_data |= e->counts <= IT2_COUNT_MISALIGNED_STORES || e->counts == IT2_COUNT_MODEL ||
		             e->counts == IT2_COUNT_DEAR;
		want_misaligned |= e->counts == IT2_COUNT_MISALIGNED_LOADS || e->counts == IT2_COUNT_MISALIGNED_STORES;
		want_code |= e->counts >= IT2_COUNT_INSNS && e->counts < IT2_COUNT_CYCLES;
	}
	if (want_code && !s->irange.set)
		return heritage_fail(-ENOTSUP, "itanium2: instruction events count only inside an instruction range: "
		                     "call PAPI_set_opt(PAPI_INSTR_ADDRESS) first");

	memset(&s->ws, 0, sizeof s->ws);
	for (unsigned i = 0; i < s->nevents; i++)
		if (s->ovf_exact & (1u << i))
			req->overflow_fields |= 1u << s->field[i];
	if (req->overflow_fields) {
		s->ws.ovf = &s->ovf;
		watch_overflow_arm(&s->ovf);
	}
	for (unsigned i = 0; i < s->nevents; i++)
		s->ovf_deadline[i] = s->ovf_threshold[i];
	req->want_data = want_data;
	req->want_code = want_code;
	req->want_misaligned = want_misaligned;
	if (s->model_events) {
		if (!s->model) {
			int err = make_model(s);
			if (err)
				return err;
		}
		model_zero(s);
		req->observe = observe;
		req->observe_arg = s;
	}
	if (s->drange.set) {
		/* The data cover is what counts; pairs only matter for IBRPs. */
		req->ndata = s->drange.map.ncover;
		for (unsigned k = 0; k < req->ndata; k++) {
			req->data[k].start = (uintptr_t)s->drange.map.cover[k].start;
			req->data[k].end = (uintptr_t)s->drange.map.cover[k].end;
		}
	} else {
		req->data_all = 1;
	}
	if (s->irange.set) {
		req->ncode = range_pairs(&s->irange, req->code_pair);
		req->data_by_code = want_data;
	}

	/* PAPI_start counts from zero, as the hardware components do. */
	s->cpu_ns_acc = 0;
	s->cpu_ns_at_start = s->has_cycles ? thread_cpu_ns() : 0;
	if (want_data || want_code) {
		int err = watch_session_start(&s->ws, forced, why, sizeof why);
		if (err && forced != WATCH_BACKEND_AUTO)
			return heritage_fail(err, "itanium2: PAPI_HERITAGE_ITANIUM2_BACKEND=%s: %s", env, why);
		if (err)
			return heritage_fail(err, "itanium2: %s", why);
	}
	heritage_owner_set(&s->owner);
	s->running = 1;
	return 0;
}

int it2_set_stop(struct it2_set *s)
{
	if (!s->running)
		return 0;
	int err = heritage_owner_stop(&s->owner, "itanium2", 0);
	if (err < 0)
		return err;
	(void)it2_set_read(s); /* the owner's: cannot be refused */
	/* An overflow tick reading the set mid-stop would count the last
	 * segment's cycles twice (watch_hold_async_signals). */
	watch_hold_async_signals();
	if (s->has_cycles)
		s->cpu_ns_acc += thread_cpu_ns() - s->cpu_ns_at_start;
	watch_session_stop(&s->ws);
	s->running = 0;
	watch_release_async_signals();
	return 0;
}

int it2_set_reset(struct it2_set *s)
{
	if (s->running) {
		int err = heritage_owner_check(&s->owner, "itanium2", "PAPI_reset", 0);
		if (err)
			return err;
	}
	watch_hold_async_signals();
	watch_session_reset(&s->ws);
	/* Counting starts from zero again, and so does the way to each threshold. */
	if (s->ws.ovf)
		watch_overflow_arm(&s->ovf);
	for (unsigned i = 0; i < s->nevents; i++)
		s->ovf_deadline[i] = s->ovf_threshold[i];
	model_zero(s);
	s->cpu_ns_acc = 0;
	if (s->running && s->has_cycles)
		s->cpu_ns_at_start = thread_cpu_ns();
	watch_release_async_signals();
	return 0;
}

int it2_set_read(struct it2_set *s)
{
	if (s->running && !heritage_owner_is_self(&s->owner))
		return heritage_owner_check(&s->owner, "itanium2", "PAPI_read", 0);
	watch_session_read_fields(&s->ws, s->field, s->nevents, s->values);
	for (unsigned i = 0; i < s->nevents && s->model_events; i++) {
		if (!(s->model_events & (1u << i)))
			continue;
		const struct it2_event *e = &it2_events[s->codes[i] & IT2_CODE_INDEX_MASK];
		uint64_t v = 0;
		if (e->counts == IT2_COUNT_DEAR) {
			v = s->dear[i];
		} else if (s->model) {
			for (unsigned k = 0; k < sizeof e->model / sizeof e->model[0] && e->model[k]; k++) {
				uint64_t c;
				memcpy(&c, (const char *)&s->model->cnt + e->model[k], sizeof c);
				v += c;
			}
		}
		s->values[i] = (long long)v;
	}
	if (!s->has_cycles)
		return 0;
	/* CPU_CYCLES is the thread's CPU time at the nominal clock: a system
	 * call, so only in sets that have it. */
	uint64_t cpu_ns = s->cpu_ns_acc;
	if (s->running)
		cpu_ns += thread_cpu_ns() - s->cpu_ns_at_start;
	for (unsigned i = 0; i < s->nevents; i++)
		if (it2_events[s->codes[i] & IT2_CODE_INDEX_MASK].counts == IT2_COUNT_CYCLES)
			s->values[i] = (long long)(cpu_ns * (IT2_NOMINAL_HZ / 1000000) / 1000);
	return 0;
}

/* Each field's threshold is its armed exact event's, or none. */
static void field_thresholds(struct it2_set *s)
{
	for (int f = 0; f < WATCH_NFIELDS; f++) {
		s->ovf.threshold[f] = 0;
		for (unsigned i = 0; i < s->nevents; i++)
			if ((s->ovf_exact & (1u << i)) && s->field[i] == f)
				s->ovf.threshold[f] = (uint64_t)s->ovf_threshold[i];
	}
}

int it2_set_overflow(struct it2_set *s, unsigned pos, long long threshold, int signal)
{
	if (pos >= s->nevents)
		return heritage_fail(-EINVAL, "itanium2: no event at position %u of the set", pos);
	uint32_t bit = 1u << pos;
	s->ovf_exact &= ~bit;
	s->ovf_polled &= ~bit;
	s->ovf_dear &= ~bit;
	s->ovf_threshold[pos] = 0;
	if (threshold < 0)
		return heritage_fail(-EINVAL, "itanium2: overflow threshold %lld: must be positive", threshold);
	if (threshold == 0) {
		field_thresholds(s);
		return 0;
	}
	const struct it2_event *e = &it2_events[s->codes[pos] & IT2_CODE_INDEX_MASK];
	int exact = e->counts < IT2_COUNT_CYCLES && ((1u << s->field[pos]) & WATCH_OVERFLOW_DATA_FIELDS);
	if (e->counts == IT2_COUNT_DEAR) {
		/* Each qualifying load is counted where the model sees it: the
		 * delivery comes from there, with its record. */
		s->ovf.signal = signal;
		s->ovf_dear |= bit;
	} else if (exact) {
		for (unsigned i = 0; i < s->nevents; i++)
			if ((s->ovf_exact & (1u << i)) && s->field[i] == s->field[pos])
				return heritage_fail(-EBUSY, "itanium2: %s and %s count the same accesses; only one of them "
				                     "can overflow", it2_event_name(s->codes[pos] & IT2_CODE_INDEX_MASK),
				                     it2_event_name(s->codes[i] & IT2_CODE_INDEX_MASK));
		s->ovf.signal = signal;
		s->ovf_exact |= bit;
	} else {
		s->ovf_polled |= bit;
	}
	s->ovf_threshold[pos] = threshold;
	field_thresholds(s);
	return 0;
}

uint32_t it2_set_overflow_take(struct it2_set *s, uintptr_t *pc)
{
	uint32_t fields = watch_overflow_take(&s->ovf, pc), pos = 0;
	for (unsigned i = 0; i < s->nevents && fields; i++)
		if ((s->ovf_exact & (1u << i)) && (fields & (1u << s->field[i])))
			pos |= 1u << i;
	return pos | atomic_exchange(&s->dear_pending, 0);
}

uint32_t it2_set_overflow_poll(struct it2_set *s)
{
	uint32_t due = 0;
	for (unsigned i = 0; i < s->nevents; i++) {
		if (!(s->ovf_polled & (1u << i)) || s->values[i] < s->ovf_deadline[i])
			continue;
		due |= 1u << i;
		s->ovf_deadline[i] = s->values[i] + s->ovf_threshold[i];
	}
	return due;
}
