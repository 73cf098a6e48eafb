/*
 * alpha21064: the DECchip 21064/21066/21068 performance counters, two
 * counters that cannot be read and speak only through overflow interrupts,
 * behind PAPI_overflow and PAPI_profil.  The events are src/alpha/alpha_events.c,
 * the counter rules and frames src/alpha/alpha_model.c, the single-step
 * backend src/alpha/alpha_sw.c, the core-PMU backend src/alpha/alpha_pmu.c;
 * this file is the papi_vector_t glue.  See alpha21064(3).
 *
 * Overflow is "hardware" to PAPI (hardware_intr = 1): PAPI_overflow reaches
 * set_overflow here, and each counter interrupt is handed to
 * _papi_hwi_dispatch_overflow_signal with the PC of the instruction that
 * made it, from the stepping thread's SIGTRAP handler (software) or the
 * sample ring's signal handler (core PMU).
 *
 * The backend is chosen when events are added (update_control_state), from
 * PAPI_HERITAGE_ALPHA21064_BACKEND: auto takes the PMU when the kernel opens
 * every event of the set there, else single-stepping; pmu and software force
 * one.  PAPI_HERITAGE_ALPHA21064_PMU_TEST_EVENT (tests only) puts one
 * libpfm4 event in place of every host event, so the PMU path runs on a
 * machine without a PMU.
 */
#include <signal.h>
#include <stdatomic.h>
#include <x86intrin.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "papi.h"
#include "papi_internal.h"
#include "papi_memory.h"
#include "papi_vector.h"
#include "extras.h"

#include "../heritage_glue.h"
#include "alpha/alpha_events.h"
#include "alpha/alpha_model.h"
#include "alpha/alpha_pmu.h"
#include "alpha/alpha_sw.h"
#include "watch/watch_step.h"
#include "common/heritage_env.h"
#include "papi_heritage.h"

papi_vector_t _alpha21064_vector;

/* Per thread: its emulated 21064, whose counters keep their residue from one
 * event set run to the next (they cannot be reset). */
typedef struct {
	struct alpha_cpu cpu;
} alpha_context_t;

typedef struct {
	unsigned ncodes;
	unsigned codes[ALPHA_NCOUNTERS];
	unsigned counter_of[ALPHA_NCOUNTERS]; /* ni_position -> counter */
	int pos_of[ALPHA_NCOUNTERS];          /* counter -> ni_position, -1 */
	int64_t irq_per_call[ALPHA_NCOUNTERS]; /* PAPI_overflow threshold / 2^width; 0: no handler */
	uint64_t irq_pending[ALPHA_NCOUNTERS]; /* interrupts since the last handler call */
	long long values[ALPHA_NCOUNTERS];
	int backend;                  /* ALPHA_BACKEND_SOFTWARE or _PMU; 0 while the set is empty */
	struct alpha_sw_run run;
	struct alpha_pmu_run pmu;
} alpha_control_t;

/* The operating system whose interrupt frame handlers see: per process. */
static _Atomic int alpha_os = ALPHA_OS_UNIX;
/* The interrupt being delivered on this thread (papi_heritage_alpha21064_frame). */
static __thread struct alpha_frame cur_frame;
static __thread int cur_frame_valid;

/* papi_heritage_alpha21064_stats: relaxed atomics, since deliveries run in
 * several threads' SIGTRAP handlers at once and only the totals matter. */
static _Atomic unsigned long long st_deliveries, st_ticks, st_min, st_last;

static uint64_t nominal_hz(void)
{
	const char *mhz = heritage_env("alpha21064", "clock_mhz");
	unsigned long v = mhz ? strtoul(mhz, NULL, 10) : 0;
	return v ? (uint64_t)v * 1000000ull : ALPHA_NOMINAL_HZ;
}

static int alpha_init_component(int cidx)
{
	enum alpha_os os;
	const char *want = heritage_env("alpha21064", "os");

	_alpha21064_vector.cmp_info.CmpIdx = cidx;
	_alpha21064_vector.cmp_info.num_native_events = (int)alpha_nevents;
	if (want && alpha_os_parse(want, &os) == 0)
		alpha_os = os;
	char why[1024];
	int err = alpha_any_backend(why, sizeof why);
	if (err == 0) {
		alpha_limits(why, sizeof why);
		heritage_component_limits(&_alpha21064_vector, "Alpha 21064 overflow-only counters", why);
	}
	return heritage_component_status(&_alpha21064_vector, err, why);
}

static int alpha_init_thread(hwd_context_t *ctx)
{
	memset(ctx, 0, sizeof(alpha_context_t));
	return PAPI_OK;
}

static int alpha_shutdown_thread(hwd_context_t *ctx)
{
	(void)ctx;
	return PAPI_OK;
}

static int alpha_init_control_state(hwd_control_state_t *ctl)
{
	alpha_control_t *c = ctl;
	memset(c, 0, sizeof *c);
	c->pos_of[0] = c->pos_of[1] = -1;
	return PAPI_OK;
}

static const struct alpha_select *selection(const alpha_control_t *c)
{
	return c->backend == ALPHA_BACKEND_PMU ? &c->pmu.sel : &c->run.sel;
}

static const uint64_t *interrupts(const alpha_control_t *c)
{
	return c->backend == ALPHA_BACKEND_PMU ? c->pmu.interrupts : c->run.interrupts;
}

/* The backend for a new selection: src/alpha's table and choice. */
static int choose_backend(alpha_control_t *c, const unsigned *codes, unsigned n, unsigned *pos)
{
	enum alpha_backend want, chosen;
	struct alpha_select sel;
	int err = alpha_backend_parse(heritage_env("alpha21064", "backend"), &want);

	if (err)
		return err;
	alpha_pmu_close(&c->pmu);
	if (n == 0) {
		c->backend = 0;
		return 0;
	}
	err = alpha_backend_choose(want, heritage_env("alpha21064", "pmu_test_event"), &c->pmu, &sel, codes, n, pos,
	                           &chosen);
	if (err)
		return err;
	if (chosen == ALPHA_BACKEND_SOFTWARE)
		c->run.sel = sel;
	c->backend = chosen;
	return 0;
}

static int alpha_update_control_state(hwd_control_state_t *ctl, NativeInfo_t *native, int count,
                                      hwd_context_t *ctx)
{
	alpha_control_t *c = ctl;
	unsigned codes[ALPHA_NCOUNTERS + 1] = { 0 }, pos[ALPHA_NCOUNTERS + 1] = { 0 };
	(void)ctx;

	if (count > ALPHA_NCOUNTERS) {
		heritage_fail(-EBUSY, "alpha21064: the 21064 has two counters; an event set holds at most one "
		              "event on each");
		return heritage_papi_fail(-EBUSY);
	}
	for (int i = 0; i < count; i++)
		codes[i] = (unsigned)native[i].ni_event;
	int err = choose_backend(c, codes, (unsigned)count, pos);
	if (err)
		return heritage_papi_fail(err);
	c->ncodes = (unsigned)count;
	c->pos_of[0] = c->pos_of[1] = -1;
	for (int i = 0; i < count; i++) {
		native[i].ni_position = i;
		c->codes[i] = codes[i];
		c->counter_of[i] = pos[i];
		c->pos_of[pos[i]] = i;
	}
	/* Overflow settings follow the events; PAPI re-applies set_overflow. */
	memset(c->irq_per_call, 0, sizeof c->irq_per_call);
	return PAPI_OK;
}

/* One counter interrupt, in the stepping thread's SIGTRAP handler. */
static void alpha_deliver(void *arg, unsigned counter, uint64_t pc, ucontext_t *uc)
{
	alpha_control_t *c = arg;
	if (c->irq_per_call[counter] <= 0 || c->pos_of[counter] < 0)
		return; /* no handler on this counter: the OS just counts it */
	if (++c->irq_pending[counter] < (uint64_t)c->irq_per_call[counter])
		return;
	c->irq_pending[counter] = 0;

	static siginfo_t no_si; /* PAPI passes only the ucontext on */
	_papi_hwi_context_t hctx = { .si = &no_si, .ucontext = (hwd_ucontext_t *)uc };
	ThreadInfo_t *thread = NULL;
	int is_hw = 0;
	/* The delivery's own cost, apart from the step (issue 5's bench could
	 * not get it by subtracting two stepped runs: stepping noise swamped
	 * it).  rdtsc: a few ns, no system call, safe in a signal handler. */
	unsigned long long t0 = __rdtsc();
	alpha_frame_build((enum alpha_os)alpha_os, counter, pc, &cur_frame);
	cur_frame_valid = 1;
	_papi_hwi_dispatch_overflow_signal(&hctx, (vptr_t)(uintptr_t)pc, &is_hw, 1ll << c->pos_of[counter], 0,
	                                   &thread, _alpha21064_vector.cmp_info.CmpIdx);
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

static int alpha_start(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	alpha_context_t *t = ctx;
	alpha_control_t *c = ctl;
	char why[512];
	int err;

	memset(c->irq_pending, 0, sizeof c->irq_pending);
	why[0] = '\0';
	if (c->backend == ALPHA_BACKEND_PMU) {
		c->pmu.deliver = alpha_deliver;
		c->pmu.deliver_arg = c;
		err = alpha_pmu_start(&c->pmu, why, sizeof why);
	} else {
		c->run.cpu = &t->cpu;
		c->run.hz = nominal_hz();
		c->run.deliver = alpha_deliver;
		c->run.deliver_arg = c;
		err = alpha_sw_start(&c->run, why, sizeof why);
	}
	if (err) {
		heritage_fail_msg(err, why);
		return heritage_papi_fail(err);
	}
	return PAPI_OK;
}

static int alpha_stop(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	alpha_control_t *c = ctl;
	(void)ctx;
	int err = alpha_sw_stop(&c->run);
	if (!err)
		err = alpha_pmu_stop(&c->pmu);
	return heritage_papi_fail(err);
}

/* What the OS could know: interrupts x 2^width (alpha21064(3), "Reading"). */
static int alpha_read(hwd_context_t *ctx, hwd_control_state_t *ctl, long long **values, int flags)
{
	alpha_control_t *c = ctl;
	(void)ctx;
	(void)flags;
	for (unsigned i = 0; i < c->ncodes; i++) {
		unsigned k = c->counter_of[i];
		c->values[i] = alpha_estimate(interrupts(c)[k], selection(c)->width[k]);
	}
	*values = c->values;
	return PAPI_OK;
}

/* The chip cannot reset its counters: PAPI_reset forgets the interrupts
 * counted so far (what the OS knows) and the hidden residue stays. */
static int alpha_reset(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	alpha_control_t *c = ctl;
	(void)ctx;
	alpha_sw_reset(&c->run);
	alpha_pmu_reset(&c->pmu);
	return PAPI_OK;
}

static int alpha_write(hwd_context_t *ctx, hwd_control_state_t *ctl, long long *from)
{
	(void)ctx;
	(void)ctl;
	(void)from;
	heritage_fail(-ENOTSUP, "alpha21064: the 21064 counters cannot be written (nor read, nor reset)");
	return heritage_papi_fail(-ENOTSUP);
}

static int alpha_cleanup_eventset(hwd_control_state_t *ctl)
{
	alpha_control_t *c = ctl;
	/* PAPI cleans up only stopped sets: both are no-ops but for the fds. */
	(void)alpha_sw_stop(&c->run);
	alpha_pmu_close(&c->pmu);
	return PAPI_OK;
}

/* Thresholds are whole numbers of counter periods: the chip interrupts
 * every 2^width events and nothing in between is observable. */
static int alpha_set_overflow(EventSetInfo_t *ESI, int EventIndex, int threshold)
{
	alpha_control_t *c = ESI->ctl_state;
	int pos = ESI->EventInfoArray[EventIndex].pos[0];

	if (pos < 0 || (unsigned)pos >= c->ncodes)
		return PAPI_EINVAL;
	unsigned k = c->counter_of[pos];
	if (threshold == 0) {
		c->irq_per_call[k] = 0;
		return PAPI_OK;
	}
	int64_t per = alpha_threshold_interrupts(threshold, selection(c)->width[k], alpha_event_of(c->codes[pos])->name);
	if (per < 0)
		return heritage_papi_fail((int)per);
	c->irq_per_call[k] = per;
	c->irq_pending[k] = 0;
	return PAPI_OK;
}

static int alpha_ctl(hwd_context_t *ctx, int code, _papi_int_option_t *option)
{
	(void)ctx;
	return heritage_user_level_ctl(code, option);
}

/* Stepping sees user-level instructions only; the PMU backend counts only
 * them too (exclude_kernel), as the 21064's per-process mode did. */
static int alpha_set_domain(hwd_control_state_t *ctl, int domain)
{
	(void)ctl;
	return domain == PAPI_DOM_USER ? PAPI_OK : PAPI_EINVAL;
}

static int alpha_ntv_enum_step(unsigned *code, int modifier)
{
	unsigned idx = *code & ALPHA_CODE_INDEX_MASK;
	switch (modifier) {
	case PAPI_ENUM_FIRST:
		*code = 0;
		return PAPI_OK;
	case PAPI_ENUM_EVENTS:
		if (idx + 1 >= alpha_nevents)
			return PAPI_ENOEVNT;
		*code = idx + 1;
		return PAPI_OK;
	case PAPI_NTV_ENUM_UMASKS: {
		/* The width qualifiers of a base event: default width, then the other. */
		if (idx >= alpha_nevents)
			return PAPI_ENOEVNT;
		const struct alpha_widths *w = &alpha_counter_widths[alpha_events[idx].counter];
		if (!(*code & ALPHA_CODE_WIDTH_SET)) {
			*code = idx | ALPHA_CODE_WIDTH_SET | (w->def << ALPHA_CODE_WIDTH_SHIFT);
			return PAPI_OK;
		}
		if (alpha_code_width(*code) == w->def) {
			*code = idx | ALPHA_CODE_WIDTH_SET | (w->other << ALPHA_CODE_WIDTH_SHIFT);
			return PAPI_OK;
		}
		return PAPI_ENOEVNT;
	}
	default:
		return PAPI_EINVAL;
	}
}

static int alpha_ntv_name_to_code(const char *name, unsigned *code)
{
	return heritage_papi_fail(alpha_event_parse(name, code));
}

static int alpha_ntv_code_to_name(unsigned code, char *name, int len)
{
	return alpha_event_format(code, name, (size_t)len) == 0 ? PAPI_OK : PAPI_ENOEVNT;
}

static int alpha_ntv_enum_events(unsigned *code, int modifier)
{
	int rc = alpha_ntv_enum_step(code, modifier);   /* before *code is read */
	return heritage_enum_keyed(rc, *code, alpha_ntv_code_to_name);
}

/* Where an event's count comes from with the backend auto would choose
 * (or the one forced): listings say what adding it would give here. */
static enum alpha_source event_source(const struct alpha_event *e)
{
	const char *b = heritage_env("alpha21064", "backend");
	int pmu = b && strcasecmp(b, "pmu") == 0 ? 1
	          : b && *b && strcasecmp(b, "auto") != 0 ? 0 : alpha_pmu_usable();
	if (!pmu)
		return e->sw_source;
	return e->host_honesty ? ALPHA_MEASURED : ALPHA_UNAVAILABLE;
}

static const char *source_word(enum alpha_source s)
{
	return s == ALPHA_MEASURED ? "measured" : s == ALPHA_MODELLED ? "modelled" : "unavailable";
}

static int alpha_ntv_code_to_descr(unsigned code, char *descr, int len)
{
	const struct alpha_event *e = alpha_event_of(code);

	if (!e)
		return PAPI_ENOEVNT;
	if (code & ALPHA_CODE_WIDTH_SET)
		snprintf(descr, (size_t)len, "%s masks:counter %u interrupts every %lu events (2^%u)", e->desc,
		         e->counter, 1ul << alpha_code_width(code), alpha_code_width(code));
	else
		snprintf(descr, (size_t)len, "%s (counter %u, %s here; readable only through overflow)", e->desc,
		         e->counter, source_word(event_source(e)));
	return PAPI_OK;
}

static int alpha_ntv_code_to_info(unsigned code, PAPI_event_info_t *info)
{
	const struct alpha_event *e = alpha_event_of(code);
	char name[PAPI_MAX_STR_LEN];

	if (!e || alpha_event_format(code, name, sizeof name) != 0)
		return PAPI_ENOEVNT;
	snprintf(info->symbol, sizeof info->symbol, "%s", name);
	alpha_ntv_code_to_descr(code, info->long_descr, sizeof info->long_descr);
	snprintf(info->short_descr, sizeof info->short_descr, "%s", e->name);
	snprintf(info->units, sizeof info->units, "%s", e->feed == ALPHA_FEED_CYCLES ? "cycles" : "");
	info->data_type = PAPI_DATATYPE_UINT64;
	info->value_type = PAPI_VALUETYPE_RUNNING_SUM;
	info->timescope = PAPI_TIMESCOPE_SINCE_START;
	return PAPI_OK;
}

/* ------------------------------------------------------------ heritage API */

int alpha21064_event_facts(unsigned local_code, struct papi_heritage_event_facts *facts)
{
	const struct alpha_event *e = alpha_event_of(local_code);
	static const enum papi_heritage_source sources[] = {
		[ALPHA_MEASURED] = PAPI_HERITAGE_MEASURED,
		[ALPHA_MODELLED] = PAPI_HERITAGE_MODELLED,
		[ALPHA_UNAVAILABLE] = PAPI_HERITAGE_UNAVAILABLE,
	};

	if (!e)
		return PAPI_ENOEVNT;
	facts->caps = PAPI_HERITAGE_CAP_OVERFLOW | PAPI_HERITAGE_CAP_PROFILE | PAPI_HERITAGE_CAP_UNREADABLE;
	facts->source = sources[event_source(e)];
	return PAPI_OK;
}

HERITAGE_PUBLIC int papi_heritage_alpha21064_backend(int EventSet, char *name, int len)
{
	EventSetInfo_t *ESI = _papi_hwi_lookup_EventSet(EventSet);

	if (!ESI)
		return PAPI_ENOEVST;
	if (ESI->CmpIdx != _alpha21064_vector.cmp_info.CmpIdx || !ESI->ctl_state)
		return PAPI_ENOCMP;
	if (!name || len <= 0)
		return PAPI_EINVAL;
	const alpha_control_t *c = ESI->ctl_state;
	snprintf(name, (size_t)len, "%s", c->backend ? alpha_backend_name((enum alpha_backend)c->backend) : "none");
	return PAPI_OK;
}

HERITAGE_PUBLIC int papi_heritage_alpha21064_set_os(int os)
{
	if (os != PAPI_HERITAGE_ALPHA_OS_UNIX && os != PAPI_HERITAGE_ALPHA_OS_VMS && os != PAPI_HERITAGE_ALPHA_OS_NT) {
		heritage_fail(-EINVAL, "alpha21064: unknown operating system %d (PAPI_HERITAGE_ALPHA_OS_UNIX, _VMS "
		              "or _NT)", os);
		return PAPI_EINVAL;
	}
	alpha_os = os;
	return PAPI_OK;
}

HERITAGE_PUBLIC int papi_heritage_alpha21064_get_os(void)
{
	return alpha_os;
}

HERITAGE_PUBLIC int papi_heritage_alpha21064_stats(struct papi_heritage_alpha21064_stats *stats)
{
	struct watch_step_stats ws;
	if (!stats)
		return PAPI_EINVAL;
	watch_step_stats(&ws);
	stats->deliveries = atomic_load_explicit(&st_deliveries, memory_order_relaxed);
	stats->delivery_ticks = atomic_load_explicit(&st_ticks, memory_order_relaxed);
	stats->min_ticks = atomic_load_explicit(&st_min, memory_order_relaxed);
	stats->last_ticks = atomic_load_explicit(&st_last, memory_order_relaxed);
	stats->steps = ws.steps;
	return PAPI_OK;
}

HERITAGE_PUBLIC int papi_heritage_alpha21064_frame(struct papi_heritage_alpha21064_frame *frame)
{
	if (!frame)
		return PAPI_EINVAL;
	if (!cur_frame_valid) {
		heritage_fail(-EINVAL, "alpha21064: no counter interrupt is being delivered on this thread (call "
		              "papi_heritage_alpha21064_frame from a PAPI_overflow handler)");
		return PAPI_EINVAL;
	}
	frame->os = cur_frame.os;
	frame->counter = (int)cur_frame.counter;
	frame->pc = cur_frame.pc;
	frame->vector = cur_frame.vector;
	frame->ipl = cur_frame.ipl;
	frame->exception = cur_frame.exception;
	frame->r4 = cur_frame.r4;
	frame->a0 = cur_frame.a0;
	frame->a1 = cur_frame.a1;
	frame->a2 = cur_frame.a2;
	return PAPI_OK;
}

papi_vector_t _alpha21064_vector = {
	.cmp_info = {
		.name = "alpha21064",
		.short_name = "alpha21064",
		.description = "Alpha 21064 overflow-only counters: core-PMU sampling or single-step emulation (papi-heritage)",
		.version = "0.1",
		.support_version = "n/a",
		.kernel_version = "n/a",
		.num_cntrs = ALPHA_NCOUNTERS,
		.num_mpx_cntrs = ALPHA_NCOUNTERS,
		.default_domain = PAPI_DOM_USER,
		.available_domains = PAPI_DOM_USER,
		.default_granularity = PAPI_GRN_THR,
		.available_granularities = PAPI_GRN_THR,
		.hardware_intr = 1,
		.precise_intr = 1,
		.hardware_intr_sig = PAPI_INT_SIGNAL,
		.cntr_umasks = 1,
	},
	.size = {
		.context = sizeof(alpha_context_t),
		.control_state = sizeof(alpha_control_t),
		.reg_value = 1,
		.reg_alloc = 1,
	},
	.init_component = alpha_init_component,
	.init_thread = alpha_init_thread,
	.shutdown_thread = alpha_shutdown_thread,
	.init_control_state = alpha_init_control_state,
	.update_control_state = alpha_update_control_state,
	.start = alpha_start,
	.stop = alpha_stop,
	.read = alpha_read,
	.reset = alpha_reset,
	.write = alpha_write,
	.cleanup_eventset = alpha_cleanup_eventset,
	.ctl = alpha_ctl,
	.set_domain = alpha_set_domain,
	.set_overflow = alpha_set_overflow,
	.ntv_enum_events = alpha_ntv_enum_events,
	.ntv_name_to_code = alpha_ntv_name_to_code,
	.ntv_code_to_name = alpha_ntv_code_to_name,
	.ntv_code_to_descr = alpha_ntv_code_to_descr,
	.ntv_code_to_info = alpha_ntv_code_to_info,
};
