/*
 * alpha21064: the DECchip 21064/21066/21068 performance counters, two
 * counters that cannot be read and speak only through overflow interrupts,
 * behind PAPI_overflow and PAPI_profil.  The events are src/alpha/alpha_events.c,
 * the counter rules and frames src/alpha/alpha_model.c, the single-step
 * backend src/alpha/alpha_sw.c, the core-PMU backend src/alpha/alpha_pmu.c;
 * an event set's bookkeeping, backend choice and delivery accounting
 * src/alpha/alpha_set.c; this file is the papi_vector_t glue.  See
 * alpha21064(3).
 *
 * Overflow is "hardware" to PAPI (hardware_intr = 1): PAPI_overflow reaches
 * set_overflow here, and each counter interrupt is handed to
 * _papi_hwi_dispatch_overflow_signal with the PC of the instruction that
 * made it, from the stepping thread's SIGTRAP handler (software) or the
 * sample ring's signal handler (core PMU).
 *
 * The backend is chosen when events are added (alpha_set_events), from
 * PAPI_HERITAGE_ALPHA21064_BACKEND (alpha21064(3)).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "papi.h"
#include "papi_internal.h"
#include "papi_memory.h"
#include "papi_vector.h"
#include "extras.h"

#include "../heritage_glue.h"
#include "alpha/alpha_events.h"
#include "alpha/alpha_set.h"
#include "papi_heritage.h"

papi_vector_t _alpha21064_vector;

/* Per thread: its emulated 21064, whose counters keep their residue from one
 * event set run to the next (they cannot be reset). */
typedef struct {
	struct alpha_cpu cpu;
} alpha_context_t;

typedef struct {
	struct alpha_set set;
} alpha_control_t;

static int alpha_init_component(int cidx)
{
	_alpha21064_vector.cmp_info.CmpIdx = cidx;
	_alpha21064_vector.cmp_info.num_native_events = (int)alpha_nevents;
	if (heritage_component_env(&_alpha21064_vector, "alpha21064") != PAPI_OK)
		return _alpha21064_vector.cmp_info.disabled;
	alpha_set_os_from_env();
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
	alpha_set_init(&c->set);
	return PAPI_OK;
}

static int alpha_update_control_state(hwd_control_state_t *ctl, NativeInfo_t *native, int count,
                                      hwd_context_t *ctx)
{
	alpha_control_t *c = ctl;
	unsigned codes[ALPHA_NCOUNTERS + 1] = { 0 };
	(void)ctx;

	for (int i = 0; i < count && i <= ALPHA_NCOUNTERS; i++)
		codes[i] = (unsigned)native[i].ni_event;
	int err = alpha_set_events(&c->set, codes, (unsigned)count);
	if (!err)
		for (int i = 0; i < count; i++)
			native[i].ni_position = i;
	return heritage_papi_update(err);
}

/* A handler call is due (alpha_set_deliver, in the signal handler that
 * took the interrupt): PAPI's overflow dispatch, with the PC. */
static void alpha_dispatch(void *arg, unsigned pos, uint64_t pc, ucontext_t *uc)
{
	static siginfo_t no_si; /* PAPI passes only the ucontext on */
	_papi_hwi_context_t hctx = { .si = &no_si, .ucontext = (hwd_ucontext_t *)uc };
	ThreadInfo_t *thread = NULL;
	int is_hw = 0;
	(void)arg;
	_papi_hwi_dispatch_overflow_signal(&hctx, (vptr_t)(uintptr_t)pc, &is_hw, 1ll << pos, 0, &thread,
	                                   _alpha21064_vector.cmp_info.CmpIdx);
}

/* PAPI_OVERFLOW_FORCE_SW: PAPI's timer reads the estimates (interrupts x
 * 2^width) and delivers when one passed its deadline, with the PC where the
 * tick found the thread. */
static void alpha_dispatch_timer(int sig, hwd_siginfo_t *si, void *uc)
{
	(void)sig;
	heritage_dispatch_timer(&_alpha21064_vector, si, uc);
}

static int alpha_start(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	alpha_context_t *t = ctx;
	alpha_control_t *c = ctl;
	c->set.dispatch = alpha_dispatch;
	return heritage_papi_started(heritage_papi_fail(alpha_set_start(&c->set, &t->cpu)));
}

static int alpha_stop(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	alpha_control_t *c = ctl;
	(void)ctx;
	return heritage_papi_stop(alpha_set_stop(&c->set));
}

/* What the OS could know: interrupts x 2^width (alpha21064(3), "Reading"). */
static int alpha_read(hwd_context_t *ctx, hwd_control_state_t *ctl, long long **values, int flags)
{
	alpha_control_t *c = ctl;
	(void)ctx;
	(void)flags;
	alpha_set_read(&c->set);
	*values = c->set.values;
	return PAPI_OK;
}

/* The chip cannot reset its counters: PAPI_reset forgets the interrupts
 * counted so far (what the OS knows) and the hidden residue stays. */
static int alpha_reset(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	alpha_control_t *c = ctl;
	(void)ctx;
	alpha_set_reset(&c->set);
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
	alpha_set_cleanup(&c->set);
	return PAPI_OK;
}

/* Thresholds are whole numbers of counter periods: the chip interrupts
 * every 2^width events and nothing in between is observable. */
static int alpha_set_overflow(EventSetInfo_t *ESI, int EventIndex, int threshold)
{
	alpha_control_t *c = ESI->ctl_state;
	int pos = ESI->EventInfoArray[EventIndex].pos[0];

	if (pos < 0)
		return PAPI_EINVAL;
	return heritage_papi_fail(alpha_set_threshold(&c->set, (unsigned)pos, threshold));
}

static int alpha_ctl(hwd_context_t *ctx, int code, _papi_int_option_t *option)
{
	(void)ctx;
	switch (code) {
	case PAPI_MULTIPLEX:
		/* kernel_multiplex: a set holds one event per counter, each
		 * counting the whole run; two for one counter stay
		 * PAPI_ECNFLCT, as an unreadable counter cannot be
		 * time-sliced (alpha21064(3), MULTIPLEXING). */
		return PAPI_OK;
	default:
		return heritage_user_level_ctl(code, option);
	}
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
	case PAPI_NTV_ENUM_UMASKS: /* the widths: the default, then the other */
		return heritage_event_next_qual(&alpha_event_names, 0, code) == 0 ? PAPI_OK : PAPI_ENOEVNT;
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
		         e->counter, heritage_source_name(alpha_set_event_source(e)));
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

	if (!e)
		return PAPI_ENOEVNT;
	facts->caps = PAPI_HERITAGE_CAP_OVERFLOW | PAPI_HERITAGE_CAP_PROFILE | PAPI_HERITAGE_CAP_UNREADABLE;
	facts->source = (enum papi_heritage_source)alpha_set_event_source(e);
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
	snprintf(name, (size_t)len, "%s", alpha_set_backend_name(&c->set));
	return PAPI_OK;
}

HERITAGE_PUBLIC int papi_heritage_alpha21064_set_os(int os)
{
	return heritage_papi_error(alpha_set_os(os));
}

HERITAGE_PUBLIC int papi_heritage_alpha21064_get_os(void)
{
	return (int)alpha_get_os();
}

HERITAGE_PUBLIC int papi_heritage_alpha21064_stats(struct papi_heritage_alpha21064_stats *stats)
{
	if (!stats)
		return PAPI_EINVAL;
	alpha_set_stats(stats);
	return PAPI_OK;
}

HERITAGE_PUBLIC int papi_heritage_alpha21064_frame(struct papi_heritage_alpha21064_frame *frame)
{
	return frame ? heritage_papi_error(alpha_set_frame(frame)) : PAPI_EINVAL;
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
		/* PAPI_set_multiplex comes to ctl, not to PAPI's software
		 * multiplexer (which adds PAPI_TOT_CYC, another component's). */
		.kernel_multiplex = 1,
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
	.dispatch_timer = alpha_dispatch_timer,
	.ntv_enum_events = alpha_ntv_enum_events,
	.ntv_name_to_code = alpha_ntv_name_to_code,
	.ntv_code_to_name = alpha_ntv_code_to_name,
	.ntv_code_to_descr = alpha_ntv_code_to_descr,
	.ntv_code_to_info = alpha_ntv_code_to_info,
};
