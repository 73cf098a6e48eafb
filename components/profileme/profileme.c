/*
 * profileme: DCPI ProfileMe instruction samples as PAPI events.  An event
 * is a sample set of dcpiprofileme(1)'s language (`retired^!notrap`,
 * `retired:retdelay`); the samples, their backends (AMD IBS, single-step)
 * and the sets are src/profileme/; this file is the papi_vector_t glue.
 * See profileme(3).
 */
#include <stdio.h>
#include <string.h>

#include "papi.h"
#include "papi_internal.h"
#include "papi_memory.h"
#include "papi_vector.h"

#include "../heritage_glue.h"
#include "profileme/pm_events.h"
#include "profileme/pm_eventset.h"
#include "papi_heritage.h"

papi_vector_t _profileme_vector;

typedef struct {
	int unused;
} profileme_context_t;

typedef struct {
	struct pm_eventset set;
	struct heritage_own_overflow ovf; /* the poll timer of overflowing sets */
} profileme_control_t;

static int profileme_init_component(int cidx)
{
	char why[PAPI_MAX_STR_LEN], chosen[PAPI_MAX_STR_LEN];
	const struct heritage_backend *b;
	unsigned n;
	const struct heritage_backend *table = pm_backends(&n);

	_profileme_vector.cmp_info.CmpIdx = cidx;
	_profileme_vector.cmp_info.num_native_events = PM_NSTATIC;
	if (heritage_component_env(&_profileme_vector, "profileme") != PAPI_OK)
		return _profileme_vector.cmp_info.disabled;
	/* Disabled only when nothing can sample here.  A backend forced by
	 * PAPI_HERITAGE_PROFILEME_BACKEND that cannot count leaves the
	 * component listed, and adding an event says why (PAPI_ENOSUPP), as
	 * the other components do with a forced backend. */
	int err = heritage_backend_any_usable(table, n, why, sizeof why);
	if (err == 0 && pm_backend_choose(&b, chosen, sizeof chosen) != 0)
		heritage_component_limits(&_profileme_vector, "DCPI ProfileMe instruction samples", chosen);
	else if (err == 0 && strcmp(b->name, "ibs") != 0)
		heritage_component_limits(&_profileme_vector, "DCPI ProfileMe instruction samples",
		                          "no IBS: single-stepped samples");
	return heritage_component_status(&_profileme_vector, err, why);
}

static int profileme_init_thread(hwd_context_t *ctx)
{
	(void)ctx;
	return PAPI_OK;
}

static int profileme_shutdown_thread(hwd_context_t *ctx)
{
	(void)ctx;
	return PAPI_OK;
}

static int profileme_init_control_state(hwd_control_state_t *ctl)
{
	profileme_control_t *c = ctl;
	pm_eventset_init(&c->set);
	return PAPI_OK;
}

static int profileme_update_control_state(hwd_control_state_t *ctl, NativeInfo_t *native, int count,
                                          hwd_context_t *ctx)
{
	profileme_control_t *c = ctl;
	unsigned codes[PM_SET_MAX_EVENTS];
	(void)ctx;

	if (count > PM_SET_MAX_EVENTS)
		return heritage_papi_update(
		        heritage_fail(-EBUSY, "profileme: at most %d events in one event set", PM_SET_MAX_EVENTS));
	for (int i = 0; i < count; i++) {
		codes[i] = (unsigned)native[i].ni_event;
		native[i].ni_position = i;
	}
	return heritage_papi_update(pm_eventset_set(&c->set, codes, (unsigned)count));
}

/* Overflow and profiling (hardware_intr): a sample that takes an event
 * over its threshold is delivered with the sample's own PC, the tagged
 * instruction's, not where a timer found the thread, so PAPI_profil on a
 * sample set shows where that set's samples fell.  Samples are handed over
 * at PAPI_read and PAPI_stop, and on PAPI's interval timer while running. */
static void profileme_deliver(void *arg, unsigned pos, uint64_t pc)
{
	ThreadInfo_t *thread = NULL;
	_papi_hwi_context_t hctx = { .si = NULL, .ucontext = NULL };
	int is_hw = 0;
	(void)arg;

	_papi_hwi_dispatch_overflow_signal(&hctx, (vptr_t)(uintptr_t)pc, &is_hw, 1LL << pos, 0, &thread,
	                                   _profileme_vector.cmp_info.CmpIdx);
}

static int profileme_set_overflow(EventSetInfo_t *ESI, int EventIndex, int threshold)
{
	profileme_control_t *c = ESI->ctl_state;
	int pos = ESI->EventInfoArray[EventIndex].pos[0];

	if (pos < 0)
		return PAPI_EINVAL;
	return heritage_papi_fail(pm_eventset_overflow(&c->set, (unsigned)pos, threshold, profileme_deliver, c));
}

static void profileme_dispatch_timer(int sig, hwd_siginfo_t *si, void *uc)
{
	ThreadInfo_t *thread;
	EventSetInfo_t *ESI = heritage_overflowing_set(&_profileme_vector, &thread);
	(void)sig;

	if (!ESI || !uc)
		return;
	if (!(ESI->overflow.flags & PAPI_OVERFLOW_HARDWARE)) {
		heritage_dispatch_timer(&_profileme_vector, si, uc);
		return;
	}
	profileme_control_t *c = ESI->ctl_state;
	pm_eventset_read(&c->set); /* delivers through profileme_deliver */
}

static int profileme_start(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	profileme_control_t *c = ctl;
	(void)ctx;
	int polled = pm_eventset_overflowing(&c->set);
	int rc = heritage_own_overflow_start(&_profileme_vector, polled, polled, &c->ovf);
	if (rc != PAPI_OK)
		return heritage_papi_started(rc);
	rc = heritage_papi_fail(pm_eventset_start(&c->set));
	if (rc != PAPI_OK)
		heritage_own_overflow_stop(&c->ovf);
	return heritage_papi_started(rc);
}

static int profileme_stop(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	profileme_control_t *c = ctl;
	(void)ctx;
	heritage_own_overflow_stop(&c->ovf);
	int rc = heritage_papi_stop(pm_eventset_stop(&c->set));
	if (rc == PAPI_OK)
		heritage_stop_values(&_profileme_vector, c, c->set.values);
	return rc;
}

static int profileme_read(hwd_context_t *ctx, hwd_control_state_t *ctl, long long **values, int flags)
{
	profileme_control_t *c = ctl;
	(void)ctx;
	(void)flags;
	*values = c->set.values;
	return heritage_papi_fail(pm_eventset_read(&c->set));
}

static int profileme_reset(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	profileme_control_t *c = ctl;
	(void)ctx;
	return heritage_papi_fail(pm_eventset_reset(&c->set));
}

static int profileme_cleanup_eventset(hwd_control_state_t *ctl)
{
	profileme_control_t *c = ctl;
	pm_eventset_stop(&c->set);
	return PAPI_OK;
}

static int profileme_ctl(hwd_context_t *ctx, int code, _papi_int_option_t *option)
{
	(void)ctx;
	if (code == PAPI_MULTIPLEX)
		/* kernel_multiplex: every event is a view of the one sample
		 * stream for the whole run, nothing to time-slice (profileme(3)). */
		return PAPI_OK;
	return heritage_user_level_ctl(code, option);
}

static int profileme_set_domain(hwd_control_state_t *ctl, int domain)
{
	(void)ctl;
	return domain == PAPI_DOM_USER ? PAPI_OK : PAPI_EINVAL;
}

static int profileme_ntv_name_to_code(const char *name, unsigned *code)
{
	return heritage_papi_fail(pm_event_parse(name, code));
}

static int profileme_ntv_code_to_name(unsigned code, char *name, int len)
{
	return len > 0 && pm_event_format(code, name, (size_t)len) == 0 ? PAPI_OK : PAPI_ENOEVNT;
}

static int profileme_ntv_enum_events(unsigned *code, int modifier)
{
	int rc;
	switch (modifier) {
	case PAPI_ENUM_FIRST:
		rc = pm_event_next(code, 1) == 0 ? PAPI_OK : PAPI_ENOEVNT;
		break;
	case PAPI_ENUM_EVENTS:
		rc = pm_event_next(code, 0) == 0 ? PAPI_OK : PAPI_ENOEVNT;
		break;
	default:
		rc = PAPI_ENOEVNT; /* no qualifiers */
	}
	return heritage_enum_keyed(rc, *code, profileme_ntv_code_to_name);
}

/* The description papi_native_avail shows: the meaning, then where the value
 * comes from with the backend chosen now. */
static int profileme_describe(unsigned code, char *descr, size_t len)
{
	char why[256], what[PAPI_HUGE_STR_LEN];
	if (pm_event_describe(code, what, sizeof what))
		return PAPI_ENOEVNT;
	int source = pm_event_source(code, why, sizeof why);
	if (source == HERITAGE_UNAVAILABLE)
		snprintf(descr, len, "%s. Source: unavailable (%s)", what, why);
	else
		snprintf(descr, len, "%s. Source: %s", what, heritage_source_name(source));
	return PAPI_OK;
}

static int profileme_ntv_code_to_descr(unsigned code, char *descr, int len)
{
	return len > 0 ? profileme_describe(code, descr, (size_t)len) : PAPI_EINVAL;
}

static int profileme_ntv_code_to_info(unsigned code, PAPI_event_info_t *info)
{
	char name[PAPI_MAX_STR_LEN];
	const struct heritage_backend *b;
	char why[256];

	if (pm_event_format(code, name, sizeof name) != 0)
		return PAPI_ENOEVNT;
	snprintf(info->symbol, sizeof info->symbol, "%s", name);
	/* A long set is cut short here; symbol holds it whole. */
	snprintf(info->short_descr, sizeof info->short_descr, "%.*s", (int)sizeof info->short_descr - 1, name);
	profileme_describe(code, info->long_descr, sizeof info->long_descr);
	struct pm_value v;
	pm_event_value(code, &v);
	if (v.counter >= 0)
		snprintf(info->units, sizeof info->units, "cycles");
	else if (pm_backend_choose(&b, why, sizeof why) == 0)
		snprintf(info->units, sizeof info->units, "%s", ((const struct pm_backend_ops *)b->ops)->unit);
	info->data_type = PAPI_DATATYPE_UINT64;
	info->value_type = PAPI_VALUETYPE_RUNNING_SUM;
	info->timescope = PAPI_TIMESCOPE_SINCE_START;
	return PAPI_OK;
}

/* ------------------------------------------------------------ heritage API */

int profileme_event_facts(unsigned local_code, struct papi_heritage_event_facts *facts)
{
	struct pm_value v;
	if (pm_event_value(local_code, &v))
		return PAPI_ENOEVNT;
	facts->source = (enum papi_heritage_source)pm_event_source(local_code, NULL, 0);
	/* Overflow and profiling on whatever can be added here. */
	facts->caps = PAPI_HERITAGE_CAP_SAMPLE;
	if (facts->source != PAPI_HERITAGE_UNAVAILABLE)
		facts->caps |= PAPI_HERITAGE_CAP_OVERFLOW | PAPI_HERITAGE_CAP_PROFILE;
	return PAPI_OK;
}

HERITAGE_PUBLIC int papi_heritage_profileme_sampling(int EventSet, struct papi_heritage_profileme_sampling *s)
{
	EventSetInfo_t *ESI = _papi_hwi_lookup_EventSet(EventSet);

	if (!ESI)
		return PAPI_ENOEVST;
	if (ESI->CmpIdx != _profileme_vector.cmp_info.CmpIdx || !ESI->ctl_state)
		return PAPI_ENOCMP;
	if (!s)
		return PAPI_EINVAL;
	const profileme_control_t *c = ESI->ctl_state;
	const struct pm_eventset *set = &c->set;
	memset(s, 0, sizeof *s);
	if (set->backend) {
		snprintf(s->backend, sizeof s->backend, "%s", set->backend->name);
		snprintf(s->unit, sizeof s->unit, "%s", ((const struct pm_backend_ops *)set->backend->ops)->unit);
	}
	s->period = (long long)set->period;
	s->samples = (long long)set->thread.samples;
	s->lost = (long long)set->thread.lost;
	return PAPI_OK;
}

papi_vector_t _profileme_vector = {
	.cmp_info = {
		.name = "profileme",
		.short_name = "profileme",
		.description = "DCPI ProfileMe instruction samples (papi-heritage)",
		.version = "0.1",
		.support_version = "n/a",
		.kernel_version = "n/a",
		.num_cntrs = PM_SET_MAX_EVENTS,
		.num_mpx_cntrs = PM_SET_MAX_EVENTS,
		.default_domain = PAPI_DOM_USER,
		.available_domains = PAPI_DOM_USER,
		.default_granularity = PAPI_GRN_THR,
		.available_granularities = PAPI_GRN_THR,
		.kernel_multiplex = 1,
		/* PAPI_overflow reaches set_overflow: a sample that crosses a
		 * threshold is delivered with its own PC. */
		.hardware_intr = 1,
		.hardware_intr_sig = PAPI_INT_SIGNAL,
		.fast_counter_read = 1,
	},
	.size = {
		.context = sizeof(profileme_context_t),
		.control_state = sizeof(profileme_control_t),
		.reg_value = 1,
		.reg_alloc = 1,
	},
	.init_component = profileme_init_component,
	.dispatch_timer = profileme_dispatch_timer,
	.set_overflow = profileme_set_overflow,
	.init_thread = profileme_init_thread,
	.shutdown_thread = profileme_shutdown_thread,
	.init_control_state = profileme_init_control_state,
	.update_control_state = profileme_update_control_state,
	.start = profileme_start,
	.stop = profileme_stop,
	.read = profileme_read,
	.reset = profileme_reset,
	.cleanup_eventset = profileme_cleanup_eventset,
	.ctl = profileme_ctl,
	.set_domain = profileme_set_domain,
	.ntv_enum_events = profileme_ntv_enum_events,
	.ntv_name_to_code = profileme_ntv_name_to_code,
	.ntv_code_to_name = profileme_ntv_code_to_name,
	.ntv_code_to_descr = profileme_ntv_code_to_descr,
	.ntv_code_to_info = profileme_ntv_code_to_info,
};
