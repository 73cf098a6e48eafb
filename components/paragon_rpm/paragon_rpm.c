/*
 * paragon_rpm: the Intel Paragon RPM hardware counters and Mach soft counters
 * as PAPI events.  The events are src/paragon/rpm_events.c, their sources
 * src/paragon/rpm_page.c and rpm_shared.c; this file is the papi_vector_t
 * glue.  See paragon_rpm(3).
 */
#include <stdio.h>
#include <string.h>

#include "papi.h"
#include "papi_internal.h"
#include "papi_memory.h"
#include "papi_vector.h"

#include "../heritage_glue.h"
#include "common/heritage_backend.h"
#include "paragon/rpm_events.h"
#include "paragon/rpm_page.h"
#include "papi_heritage.h"

papi_vector_t _paragon_rpm_vector;

typedef struct {
	int unused;
} rpm_context_t;

typedef struct {
	struct rpm_set set;
} rpm_control_t;

static int rpm_init_component(int cidx)
{
	_paragon_rpm_vector.cmp_info.CmpIdx = cidx;
	_paragon_rpm_vector.cmp_info.num_native_events = (int)rpm_nevents;
	if (heritage_component_env(&_paragon_rpm_vector, "paragon_rpm") != PAPI_OK)
		return _paragon_rpm_vector.cmp_info.disabled;
	/* The system-wide kernel counts and the resets are what an account can
	 * lack (the tracepoint itself is left to its first use: enabling it
	 * costs the kernel milliseconds of code patching). */
	char limits[256];
	heritage_mechs_limits(HERITAGE_MECH_BIT(HERITAGE_MECH_PERF_CPU) | HERITAGE_MECH_BIT(HERITAGE_MECH_TRACEFS) |
	                      HERITAGE_MECH_BIT(HERITAGE_MECH_RPM_WRITABLE), limits, sizeof limits);
	heritage_component_limits(&_paragon_rpm_vector, "Intel Paragon RPM counters", limits);
	return heritage_component_status(&_paragon_rpm_vector, 0, "");
}

static int rpm_init_thread(hwd_context_t *ctx)
{
	(void)ctx;
	return PAPI_OK;
}

static int rpm_shutdown_thread(hwd_context_t *ctx)
{
	(void)ctx;
	return PAPI_OK;
}

static int rpm_init_control_state(hwd_control_state_t *ctl)
{
	rpm_control_t *c = ctl;
	memset(&c->set, 0, sizeof c->set);
	return PAPI_OK;
}

static int rpm_update_control_state(hwd_control_state_t *ctl, NativeInfo_t *native, int count, hwd_context_t *ctx)
{
	rpm_control_t *c = ctl;
	unsigned codes[RPM_MAX_EVENTS];
	(void)ctx;

	if (count > RPM_MAX_EVENTS)
		return heritage_papi_update(
		        heritage_fail(-EBUSY, "paragon_rpm: at most %d events in one event set", RPM_MAX_EVENTS));
	for (int i = 0; i < count; i++) {
		codes[i] = (unsigned)native[i].ni_event;
		native[i].ni_position = i;
	}
	return heritage_papi_update(rpm_set_events(&c->set, codes, (unsigned)count));
}

/* What PAPI's software overflow cannot compare (heritage_sw_overflow_check). */
static const char *rpm_overflow_refusal(const void *ctl, int pos)
{
	const rpm_control_t *c = ctl;
	const struct rpm_event *e = rpm_event_of(c->set.codes[pos]);
	static __thread char why[160];

	if (!e || (!e->fp64 && !e->absolute))
		return NULL;
	snprintf(why, sizeof why, "%s, %s", e->name,
	         e->fp64 ? "a double (seconds): PAPI compares thresholds as integer counts"
	                 : "an absolute reading, not a count since PAPI_start (overflow rpms_* counts, or perf::TASK-CLOCK)");
	return why;
}

static int rpm_start(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	rpm_control_t *c = ctl;
	(void)ctx;
	int rc = heritage_sw_overflow_check(&_paragon_rpm_vector, ctl, rpm_overflow_refusal);
	if (rc != PAPI_OK)
		return heritage_papi_started(rc);
	return heritage_papi_started(heritage_papi_fail(rpm_set_start(&c->set)));
}

/* Every overflow here is PAPI's software one (no hardware interrupts): the
 * PC is where PAPI's timer tick found the thread. */
static void rpm_dispatch_timer(int sig, hwd_siginfo_t *si, void *uc)
{
	(void)sig;
	heritage_dispatch_timer(&_paragon_rpm_vector, si, uc);
}

static int rpm_stop(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	rpm_control_t *c = ctl;
	(void)ctx;
	return heritage_papi_stop(rpm_set_stop(&c->set)); /* the FP trap mode ends with the counting */
}

static int rpm_read(hwd_context_t *ctx, hwd_control_state_t *ctl, long long **values, int flags)
{
	rpm_control_t *c = ctl;
	(void)ctx;
	(void)flags;
	*values = c->set.values; /* first: nothing is live across the read's slow call */
	int err = rpm_set_read(&c->set);
	return __builtin_expect(err == 0, 1) ? PAPI_OK : heritage_papi_fail(err); /* a dead rpmd's counts */
}

static int rpm_reset(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	rpm_control_t *c = ctl;
	(void)ctx;
	/* Started: the trap mode is on already.  A set whose rpmd died is
	 * re-based on a restarted one's page, or refused while there is none
	 * (PAPI_ESYS and the reason): it said PAPI_OK and stayed on the dead
	 * page, and the next read failed again (ctests/stress, rpmd killed
	 * every 1.5 s). */
	return heritage_papi_fail(rpm_set_start(&c->set));
}

/* The registers are reset through rpm_control (root), not preset. */
static int rpm_write(hwd_context_t *ctx, hwd_control_state_t *ctl, long long *from)
{
	(void)ctx;
	(void)ctl;
	(void)from;
	return PAPI_ENOSUPP;
}

static int rpm_ctl(hwd_context_t *ctx, int code, _papi_int_option_t *option)
{
	(void)ctx;
	switch (code) {
	case PAPI_DOMAIN:
	case PAPI_DEFDOM:
		return option->domain.domain == PAPI_DOM_ALL ? PAPI_OK : PAPI_EINVAL;
	case PAPI_GRANUL:
	case PAPI_DEFGRN:
		return PAPI_OK;
	case PAPI_MULTIPLEX:
		/* kernel_multiplex: every event reads its own never-reset
		 * source for the whole run, nothing to time-slice; counts stay
		 * what an unmultiplexed set reads (paragon_rpm(3), PAPI EVENTS). */
		return PAPI_OK;
	default:
		return PAPI_ENOSUPP;
	}
}

/* The counters are the node's and the system's, whoever runs. */
static int rpm_set_domain(hwd_control_state_t *ctl, int domain)
{
	(void)ctl;
	return domain == PAPI_DOM_ALL ? PAPI_OK : PAPI_EINVAL;
}

static int rpm_ntv_enum_step(unsigned *code, int modifier)
{
	unsigned idx = *code & RPM_CODE_INDEX_MASK;

	switch (modifier) {
	case PAPI_ENUM_FIRST:
		*code = 0;
		return PAPI_OK;
	case PAPI_ENUM_EVENTS:
		if (idx + 1 >= rpm_nevents)
			return PAPI_ENOEVNT;
		*code = idx + 1;
		return PAPI_OK;
	case PAPI_NTV_ENUM_UMASKS: /* a soft counter's :cpu=0 .. :cpu=N-1 */
		return heritage_event_next_qual(&rpm_event_names, 0, code) == 0 ? PAPI_OK : PAPI_ENOEVNT;
	default:
		return PAPI_EINVAL;
	}
}

static int rpm_ntv_name_to_code(const char *name, unsigned *code)
{
	return heritage_papi_fail(rpm_event_parse(name, code));
}

static int rpm_ntv_code_to_name(unsigned code, char *name, int len)
{
	return rpm_event_format(code, name, len) == 0 ? PAPI_OK : PAPI_ENOEVNT;
}

static int rpm_ntv_enum_events(unsigned *code, int modifier)
{
	int rc = rpm_ntv_enum_step(code, modifier);   /* before *code is read */
	return heritage_enum_keyed(rc, *code, rpm_ntv_code_to_name);
}

static int rpm_ntv_code_to_descr(unsigned code, char *descr, int len)
{
	const struct rpm_event *e = rpm_event_of(code);

	if (!e)
		return PAPI_ENOEVNT;
	const char *why;
	/* A kernel counter refused here turns the event unavailable: say so;
	 * one counted by the rpmd service instead says that. */
	int refused = rpm_event_source(e, &why) == HERITAGE_UNAVAILABLE && e->source != HERITAGE_UNAVAILABLE;
	const char *open = refused ? " [unavailable here: " : *why ? " [here: " : "";
	char d[PAPI_HUGE_STR_LEN];
	snprintf(d, sizeof d, "%s%s%s%s", e->desc, open, *open ? why : "", *open ? "]" : "");
	if (RPM_CODE_CPU(code))
		snprintf(descr, (size_t)len, "%s masks:CPU %u only", d, RPM_CODE_CPU(code) - 1);
	else
		snprintf(descr, (size_t)len, "%s", d);
	return PAPI_OK;
}

static int rpm_ntv_code_to_info(unsigned code, PAPI_event_info_t *info)
{
	const struct rpm_event *e = rpm_event_of(code);

	if (!e)
		return PAPI_ENOEVNT;
	rpm_event_format(code, info->symbol, sizeof info->symbol);
	rpm_ntv_code_to_descr(code, info->long_descr, sizeof info->long_descr);
	snprintf(info->short_descr, sizeof info->short_descr, "%s", e->name);
	snprintf(info->units, sizeof info->units, "%s", e->units);
	info->data_type = e->fp64 ? PAPI_DATATYPE_FP64 : PAPI_DATATYPE_UINT64;
	info->value_type = e->absolute ? PAPI_VALUETYPE_ABSOLUTE : PAPI_VALUETYPE_RUNNING_SUM;
	/* Every event counts since a start: PAPI_start's, or boot's for the
	 * clock (rpm_time, rpm_time_s: ABSOLUTE, not zeroed by PAPI_start), whose
	 * difference between two readings is the time between them.  None is an
	 * instantaneous value (PAPI_TIMESCOPE_POINT: a temperature, a power),
	 * which the high-level API would report at a region's end instead of
	 * the region's difference. */
	info->timescope = PAPI_TIMESCOPE_SINCE_START;
	return PAPI_OK;
}

/* ------------------------------------------------------------ heritage API */

int paragon_rpm_event_facts(unsigned local_code, struct papi_heritage_event_facts *facts)
{
	const struct rpm_event *e = rpm_event_of(local_code);

	if (!e)
		return PAPI_ENOEVNT;
	facts->caps = 0;
	facts->source = (enum papi_heritage_source)rpm_event_source(e, NULL);
	return PAPI_OK;
}

papi_vector_t _paragon_rpm_vector = {
	.cmp_info = {
		.name = "paragon_rpm",
		.short_name = "paragon_rpm",
		.description = "Intel Paragon RPM hardware and Mach soft counters (papi-heritage)",
		.version = "0.1",
		.support_version = "n/a",
		.kernel_version = "n/a",
		.num_cntrs = RPM_MAX_EVENTS,
		.num_mpx_cntrs = RPM_MAX_EVENTS,
		/* PAPI_set_multiplex comes to ctl, not to PAPI's software
		 * multiplexer (which adds PAPI_TOT_CYC, another component's). */
		.kernel_multiplex = 1,
		.default_domain = PAPI_DOM_ALL,
		.available_domains = PAPI_DOM_ALL,
		.default_granularity = PAPI_GRN_SYS,
		.available_granularities = PAPI_GRN_SYS,
		.hardware_intr_sig = PAPI_INT_SIGNAL,
		/* Its soft counters take :cpu=N (PAPI's flag for qualified events). */
		.cntr_umasks = 1,
		.fast_counter_read = 1,
	},
	.size = {
		.context = sizeof(rpm_context_t),
		.control_state = sizeof(rpm_control_t),
		.reg_value = 1,
		.reg_alloc = 1,
	},
	.init_component = rpm_init_component,           /* sets CmpIdx and the event count */
	.init_thread = rpm_init_thread,                 /* nothing per thread */
	.shutdown_thread = rpm_shutdown_thread,
	.init_control_state = rpm_init_control_state,   /* an empty rpm_set */
	.update_control_state = rpm_update_control_state, /* checks opt-in for unavailable events */
	.start = rpm_start,                             /* snapshots the counts */
	.dispatch_timer = rpm_dispatch_timer,           /* PAPI's software overflow */
	.stop = rpm_stop,
	.read = rpm_read,                               /* counts since start; rpm_time absolute */
	.reset = rpm_reset,                             /* snapshots again */
	.write = rpm_write,                             /* ENOSUPP */
	.cleanup_eventset = NULL,                       /* nothing held */
	.ctl = rpm_ctl,
	.set_domain = rpm_set_domain,
	.ntv_enum_events = rpm_ntv_enum_events,         /* table order; :cpu=N as UMASKS */
	.ntv_name_to_code = rpm_ntv_name_to_code,
	.ntv_code_to_name = rpm_ntv_code_to_name,
	.ntv_code_to_descr = rpm_ntv_code_to_descr,
	.ntv_code_to_info = rpm_ntv_code_to_info,
};
