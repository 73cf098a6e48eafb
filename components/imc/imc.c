/*
 * imc: POWER9 In-Memory Collection counters.  The catalog and its events
 * are src/imc/imc_catalog.c and imc_events.c, the set (engine pages, the
 * kernel's PMUs through perf, trace records) src/imc/imc_set.c; this file
 * is the papi_vector_t glue.  See imc(3).
 */
#include <stdio.h>
#include <string.h>

#include "papi.h"
#include "papi_internal.h"
#include "papi_memory.h"
#include "papi_vector.h"

#include "../heritage_glue.h"
#include "imc/imc_backend.h"
#include "imc/imc_events.h"
#include "imc/imc_set.h"
#include "papi_heritage.h"

papi_vector_t _imc_vector;

typedef struct {
	int unused;
} imc_context_t;

typedef struct {
	struct imc_set set;
	struct heritage_own_overflow ovf; /* what start took for polled overflow */
} imc_control_t;

static int imc_init_component(int cidx)
{
	char why[PAPI_MAX_STR_LEN];

	_imc_vector.cmp_info.CmpIdx = cidx;
	if (heritage_component_env(&_imc_vector, "imc") != PAPI_OK)
		return _imc_vector.cmp_info.disabled;
	int err = imc_events_init(why, sizeof why);
	_imc_vector.cmp_info.num_native_events = (int)imc_nevents();
	if (err == 0)
		err = imc_any_usable(why, sizeof why);
	enum imc_backend_kind kind;
	if (err == 0 && imc_backend_get(&kind, NULL, NULL, 0) == 0 && kind == IMC_BACKEND_ENGINE)
		heritage_component_limits(&_imc_vector, "POWER9 In-Memory Collection counters",
		                          "no IMC PMUs: an engine counts what the host can source");
	return heritage_component_status(&_imc_vector, err, why);
}

static int imc_init_thread(hwd_context_t *ctx)
{
	(void)ctx;
	return PAPI_OK;
}

static int imc_shutdown_thread(hwd_context_t *ctx)
{
	(void)ctx;
	return PAPI_OK;
}

static int imc_init_control_state(hwd_control_state_t *ctl)
{
	imc_control_t *c = ctl;
	imc_set_init(&c->set);
	return PAPI_OK;
}

static int imc_update_control_state(hwd_control_state_t *ctl, NativeInfo_t *native, int count, hwd_context_t *ctx)
{
	imc_control_t *c = ctl;
	unsigned codes[IMC_MAX_EVENTS];
	(void)ctx;

	if (count > IMC_MAX_EVENTS)
		return heritage_papi_update(
		        heritage_fail(-EBUSY, "imc: at most %d events in one event set", IMC_MAX_EVENTS));
	for (int i = 0; i < count; i++) {
		codes[i] = (unsigned)native[i].ni_event;
		native[i].ni_position = i;
	}
	return heritage_papi_update(imc_set_events(&c->set, codes, (unsigned)count));
}

/* Overflow and profiling (hardware_intr): trace_cycles hands its records
 * over at PAPI_read and PAPI_stop, in the caller's context, as the kernel
 * does at stop, and each record's PC goes to PAPI's dispatch: no signal
 * reaches the program.  Accumulation events are polled on PAPI's interval
 * timer (PAPI_INT_SIGNAL), the page read and compared with the threshold. */
static int imc_deliver_record(const struct imc_trace_record *r, void *arg)
{
	imc_control_t *c = arg;
	ThreadInfo_t *thread = NULL;
	_papi_hwi_context_t hctx = { .si = NULL, .ucontext = NULL };
	int is_hw = 0;

	_papi_hwi_dispatch_overflow_signal(&hctx, (vptr_t)(uintptr_t)r->pc, &is_hw, 1LL << c->set.trace_pos, 0,
	                                   &thread, _imc_vector.cmp_info.CmpIdx);
	return 0;
}

static int imc_set_overflow_op(EventSetInfo_t *ESI, int EventIndex, int threshold)
{
	imc_control_t *c = ESI->ctl_state;
	int pos = ESI->EventInfoArray[EventIndex].pos[0];

	if (pos < 0)
		return PAPI_EINVAL;
	return heritage_papi_fail(imc_set_overflow(&c->set, (unsigned)pos, threshold, imc_deliver_record, c));
}

static void imc_dispatch_timer(int sig, hwd_siginfo_t *si, void *uc)
{
	ThreadInfo_t *thread;
	EventSetInfo_t *ESI = heritage_overflowing_set(&_imc_vector, &thread);
	(void)sig;

	if (!ESI || !uc)
		return;
	if (!(ESI->overflow.flags & PAPI_OVERFLOW_HARDWARE)) {
		heritage_dispatch_timer(&_imc_vector, si, uc);
		return;
	}
	imc_control_t *c = ESI->ctl_state;
	_papi_hwi_context_t hctx = { .si = si, .ucontext = (hwd_ucontext_t *)uc };
	int is_hw = 0;
	uint64_t due = imc_set_overflow_poll(&c->set);
	if (due)
		_papi_hwi_dispatch_overflow_signal(&hctx, GET_OVERFLOW_ADDRESS(hctx), &is_hw, (long long)due, 0, &thread,
		                                   _imc_vector.cmp_info.CmpIdx);
}

static int imc_start(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	imc_control_t *c = ctl;
	(void)ctx;
	int polled = imc_set_overflow_polled(&c->set);
	int rc = heritage_own_overflow_start(&_imc_vector, polled, polled, &c->ovf);
	if (rc != PAPI_OK)
		return heritage_papi_started(rc);
	rc = heritage_papi_fail(imc_set_start(&c->set));
	if (rc != PAPI_OK)
		heritage_own_overflow_stop(&c->ovf);
	return heritage_papi_started(rc);
}

static int imc_stop(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	imc_control_t *c = ctl;
	(void)ctx;
	int rc = heritage_papi_stop(imc_set_stop(&c->set));
	heritage_own_overflow_stop(&c->ovf);
	if (rc == PAPI_OK)
		heritage_stop_values(&_imc_vector, c, c->set.values);
	return rc;
}

static int imc_read(hwd_context_t *ctx, hwd_control_state_t *ctl, long long **values, int flags)
{
	imc_control_t *c = ctl;
	(void)ctx;
	(void)flags;
	*values = c->set.values;
	return heritage_papi_fail(imc_set_read(&c->set));
}

static int imc_reset(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	imc_control_t *c = ctl;
	(void)ctx;
	return heritage_papi_fail(imc_set_reset(&c->set));
}

static int imc_cleanup_eventset(hwd_control_state_t *ctl)
{
	imc_control_t *c = ctl;
	imc_set_stop(&c->set);
	return PAPI_OK;
}

static int imc_ctl(hwd_context_t *ctx, int code, _papi_int_option_t *option)
{
	(void)ctx;
	if (code == PAPI_MULTIPLEX)
		/* kernel_multiplex: every event reads a counter of its own in
		 * memory for the whole run, nothing to time-slice (imc(3)). */
		return PAPI_OK;
	return heritage_user_level_ctl(code, option);
}

static int imc_set_domain(hwd_control_state_t *ctl, int domain)
{
	(void)ctl;
	return domain == PAPI_DOM_USER ? PAPI_OK : PAPI_EINVAL;
}

static int imc_ntv_enum_step(unsigned *code, int modifier)
{
	switch (modifier) {
	case PAPI_ENUM_FIRST:
		*code = 0;
		return PAPI_OK;
	case PAPI_ENUM_EVENTS: {
		unsigned next = (*code & IMC_CODE_INDEX_MASK) + 1;
		if (next >= imc_nevents())
			return PAPI_ENOEVNT;
		*code = next;
		return PAPI_OK;
	}
	case PAPI_NTV_ENUM_UMASKS: /* :cpu=0 .. :cpu=N-1 on nest events */
		return imc_events_names() && heritage_event_next_qual(imc_events_names(), 0, code) == 0 ? PAPI_OK
		                                                                                           : PAPI_ENOEVNT;
	default:
		return PAPI_EINVAL;
	}
}

static int imc_ntv_name_to_code(const char *name, unsigned *code)
{
	return heritage_papi_fail(imc_event_parse(name, code));
}

static int imc_ntv_code_to_name(unsigned code, char *name, int len)
{
	return len > 0 && imc_event_format(code, name, (size_t)len) == 0 ? PAPI_OK : PAPI_ENOEVNT;
}

static int imc_ntv_enum_events(unsigned *code, int modifier)
{
	int rc = imc_ntv_enum_step(code, modifier); /* before *code is read */
	return heritage_enum_keyed(rc, *code, imc_ntv_code_to_name);
}

static int imc_ntv_code_to_descr(unsigned code, char *descr, int len)
{
	const struct imc_cat_entry *e = imc_event_entry(code);

	if (!e || len <= 0)
		return PAPI_ENOEVNT;
	imc_event_describe(code, descr, (size_t)len);
	return PAPI_OK;
}

static int imc_ntv_code_to_info(unsigned code, PAPI_event_info_t *info)
{
	const struct imc_cat_entry *e = imc_event_entry(code);
	char name[PAPI_MAX_STR_LEN];

	if (!e || imc_event_format(code, name, sizeof name) != 0)
		return PAPI_ENOEVNT;
	snprintf(info->symbol, sizeof info->symbol, "%s", name);
	imc_event_describe(code, info->long_descr, sizeof info->long_descr);
	snprintf(info->short_descr, sizeof info->short_descr, "%s", e->name);
	imc_event_units(code, info->units, sizeof info->units);
	info->data_type = PAPI_DATATYPE_UINT64;
	info->value_type = PAPI_VALUETYPE_RUNNING_SUM;
	info->timescope = PAPI_TIMESCOPE_SINCE_START;
	return PAPI_OK;
}

/* ------------------------------------------------------------ heritage API */

int imc_event_facts(unsigned local_code, struct papi_heritage_event_facts *facts)
{
	const struct imc_cat_unit *u = imc_event_unit(local_code);

	if (!u)
		return PAPI_ENOEVNT;
	facts->caps = u->type == IMC_TYPE_TRACE ? PAPI_HERITAGE_CAP_TRACE : 0;
	facts->source = (enum papi_heritage_source)imc_event_source(local_code, NULL, 0);
	return PAPI_OK;
}

papi_vector_t _imc_vector = {
	.cmp_info = {
		.name = "imc",
		.short_name = "imc",
		.description = "POWER9 In-Memory Collection counters (papi-heritage)",
		.version = "0.1",
		.support_version = "n/a",
		.kernel_version = "n/a",
		.num_cntrs = IMC_MAX_EVENTS,
		.num_mpx_cntrs = IMC_MAX_EVENTS,
		.default_domain = PAPI_DOM_USER,
		.available_domains = PAPI_DOM_USER,
		.default_granularity = PAPI_GRN_THR,
		.available_granularities = PAPI_GRN_THR,
		.cntr_umasks = 1, /* :cpu=N on nest and core events */
		.kernel_multiplex = 1,
		/* PAPI_overflow reaches set_overflow: trace records are handed
		 * over at read and stop, accumulation events polled. */
		.hardware_intr = 1,
		.hardware_intr_sig = PAPI_INT_SIGNAL,
		.fast_counter_read = 1,
	},
	.size = {
		.context = sizeof(imc_context_t),
		.control_state = sizeof(imc_control_t),
		.reg_value = 1,
		.reg_alloc = 1,
	},
	.init_component = imc_init_component,
	.dispatch_timer = imc_dispatch_timer,
	.set_overflow = imc_set_overflow_op,
	.init_thread = imc_init_thread,
	.shutdown_thread = imc_shutdown_thread,
	.init_control_state = imc_init_control_state,
	.update_control_state = imc_update_control_state,
	.start = imc_start,
	.stop = imc_stop,
	.read = imc_read,
	.reset = imc_reset,
	.cleanup_eventset = imc_cleanup_eventset,
	.ctl = imc_ctl,
	.set_domain = imc_set_domain,
	.ntv_enum_events = imc_ntv_enum_events,
	.ntv_name_to_code = imc_ntv_name_to_code,
	.ntv_code_to_name = imc_ntv_code_to_name,
	.ntv_code_to_descr = imc_ntv_code_to_descr,
	.ntv_code_to_info = imc_ntv_code_to_info,
};
