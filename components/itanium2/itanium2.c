/*
 * itanium2: Itanium 2 data and instruction address-range restriction
 * (PAPI_set_opt(PAPI_DATA_ADDRESS / PAPI_INSTR_ADDRESS)) on x86-64 Linux.
 * The events are src/itanium2/it2_events.c, the range semantics
 * src/itanium2/it2_set.c, the mapping src/rangemap, the counting src/watch;
 * this file is the papi_vector_t glue.  See itanium2(3).
 */
#include <stdio.h>
#include <string.h>

#include "papi.h"
#include "papi_internal.h"
#include "papi_memory.h"
#include "papi_vector.h"

#include "../heritage_glue.h"
#include "itanium2/it2_cache.h"
#include "itanium2/it2_events.h"
#include "itanium2/it2_set.h"
#include "papi_heritage.h"

papi_vector_t _itanium2_vector;

typedef struct {
	int unused;
} it2_context_t;

typedef struct {
	struct it2_set set;
	struct heritage_own_overflow ovf; /* what start took for it */
} it2_control_t;

static int it2_init_component(int cidx)
{
	_itanium2_vector.cmp_info.CmpIdx = cidx;
	_itanium2_vector.cmp_info.num_native_events = IT2_NEVENTS;
	if (heritage_component_env(&_itanium2_vector, "itanium2") != PAPI_OK)
		return _itanium2_vector.cmp_info.disabled;
	char why[WATCH_ERRLEN];
	int err = watch_any_backend(why, sizeof why);
	if (err == 0) {
		watch_limits(why, sizeof why);
		heritage_component_limits(&_itanium2_vector, "Itanium 2 address-range restriction", why);
	}
	return heritage_component_status(&_itanium2_vector, err, why);
}

static int it2_init_thread(hwd_context_t *ctx)
{
	(void)ctx;
	return PAPI_OK;
}

static int it2_shutdown_thread(hwd_context_t *ctx)
{
	(void)ctx;
	return PAPI_OK;
}

static int it2_init_control_state(hwd_control_state_t *ctl)
{
	it2_control_t *c = ctl;
	/* A bad PAPI_HERITAGE_ITANIUM2_MODE falls back to coarse here: the
	 * framework cannot report a message from binding; start reports it. */
	it2_set_init(&c->set);
	return PAPI_OK;
}

static int it2_update_control_state(hwd_control_state_t *ctl, NativeInfo_t *native, int count,
                                    hwd_context_t *ctx)
{
	it2_control_t *c = ctl;
	unsigned codes[IT2_MAX_EVENTS];
	(void)ctx;

	if (count > IT2_MAX_EVENTS)
		return heritage_papi_update(
		        heritage_fail(-EBUSY, "itanium2: at most %d events in one event set", IT2_MAX_EVENTS));
	for (int i = 0; i < count; i++) {
		codes[i] = (unsigned)native[i].ni_event;
		native[i].ni_position = i;
	}
	return heritage_papi_update(it2_set_events(&c->set, codes, (unsigned)count));
}

/* The component's own overflow (hardware_intr): data-range events deliver
 * exactly from the backend through PAPI_INT_SIGNAL sent to the counting
 * thread; CPU_CYCLES and instruction events are polled on PAPI's interval
 * timer, which sends the same signal. */
static int it2_overflow_start(it2_control_t *c)
{
	return heritage_own_overflow_start(&_itanium2_vector, c->set.ovf_exact | c->set.ovf_dear | c->set.ovf_polled,
	                                   c->set.ovf_polled, &c->ovf);
}

static int it2_start(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	it2_control_t *c = ctl;
	(void)ctx;
	int rc = it2_overflow_start(c);
	if (rc != PAPI_OK)
		return heritage_papi_started(rc);
	rc = heritage_papi_fail(it2_set_start(&c->set));
	if (rc != PAPI_OK)
		heritage_own_overflow_stop(&c->ovf);
	return heritage_papi_started(rc);
}

static int it2_set_overflow_op(EventSetInfo_t *ESI, int EventIndex, int threshold)
{
	it2_control_t *c = ESI->ctl_state;
	int pos = ESI->EventInfoArray[EventIndex].pos[0];

	if (pos < 0)
		return PAPI_EINVAL;
	return heritage_papi_fail(it2_set_overflow(&c->set, (unsigned)pos, threshold, PAPI_INT_SIGNAL));
}

/* PAPI_INT_SIGNAL, from the backend (an exact overflow came due) or from
 * PAPI's timer (the polled events, or PAPI_OVERFLOW_FORCE_SW, which PAPI
 * itself compares).  it2_set_read is async-signal-safe. */
static void it2_dispatch_timer(int sig, hwd_siginfo_t *si, void *uc)
{
	ThreadInfo_t *thread;
	EventSetInfo_t *ESI = heritage_overflowing_set(&_itanium2_vector, &thread);
	int cidx = _itanium2_vector.cmp_info.CmpIdx;
	(void)sig;

	if (!ESI || !uc)
		return;
	if (!(ESI->overflow.flags & PAPI_OVERFLOW_HARDWARE)) {
		heritage_dispatch_timer(&_itanium2_vector, si, uc);
		return;
	}
	it2_control_t *c = ESI->ctl_state;
	_papi_hwi_context_t hctx = { .si = si, .ucontext = (hwd_ucontext_t *)uc };
	int is_hw = 0;
	uintptr_t pc = 0;
	uint32_t due = it2_set_overflow_take(&c->set, &pc);
	if (due)
		_papi_hwi_dispatch_overflow_signal(&hctx, (vptr_t)pc, &is_hw, due, 0, &thread, cidx);
	if (c->set.ovf_polled && it2_set_read(&c->set) == 0 && (due = it2_set_overflow_poll(&c->set)) != 0)
		_papi_hwi_dispatch_overflow_signal(&hctx, GET_OVERFLOW_ADDRESS(hctx), &is_hw, due, 0, &thread, cidx);
}

static int it2_stop(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	it2_control_t *c = ctl;
	(void)ctx;
	int rc = heritage_papi_stop(it2_set_stop(&c->set));
	if (rc == PAPI_OK)
		heritage_own_overflow_stop(&c->ovf);
	return rc;
}

static int it2_read(hwd_context_t *ctx, hwd_control_state_t *ctl, long long **values, int flags)
{
	it2_control_t *c = ctl;
	(void)ctx;
	(void)flags;
	*values = c->set.values;
	return heritage_papi_fail(it2_set_read(&c->set));
}

static int it2_reset(hwd_context_t *ctx, hwd_control_state_t *ctl)
{
	it2_control_t *c = ctl;
	(void)ctx;
	return heritage_papi_fail(it2_set_reset(&c->set));
}

/* Itanium counters could not be preset through PAPI either: refuse rather
 * than pretend. */
static int it2_write(hwd_context_t *ctx, hwd_control_state_t *ctl, long long *from)
{
	(void)ctx;
	(void)ctl;
	(void)from;
	return PAPI_ENOSUPP;
}

static int it2_cleanup_eventset(hwd_control_state_t *ctl)
{
	it2_control_t *c = ctl;
	it2_set_stop(&c->set);
	it2_set_drop_ranges(&c->set);
	it2_set_release(&c->set);
	return PAPI_OK;
}

static int it2_ctl(hwd_context_t *ctx, int code, _papi_int_option_t *option)
{
	(void)ctx;
	switch (code) {
	case PAPI_DATA_ADDRESS:
	case PAPI_INSTR_ADDRESS: {
		_papi_int_addr_range_t *r = &option->address_range;
		it2_control_t *c = r->ESI->ctl_state;
		int err = it2_set_range(&c->set, code == PAPI_INSTR_ADDRESS, (uint64_t)(uintptr_t)r->start,
		                        (uint64_t)(uintptr_t)r->end, (uintptr_t)c, (uintptr_t)(c + 1),
		                        &r->start_off, &r->end_off);
		return heritage_papi_fail(err);
	}
	case PAPI_MULTIPLEX:
		/* kernel_multiplex: every event has a software counter of its
		 * own for the whole run, nothing to time-slice; counts stay
		 * exact (itanium2(3), MULTIPLEXING). */
		return PAPI_OK;
	default:
		return heritage_user_level_ctl(code, option);
	}
}

/* Range restriction is user-level on Itanium (PAPI forced PLM3): so is ours. */
static int it2_set_domain(hwd_control_state_t *ctl, int domain)
{
	(void)ctl;
	return domain == PAPI_DOM_USER ? PAPI_OK : PAPI_EINVAL;
}

static int next_matching(unsigned *code, unsigned need)
{
	unsigned idx = *code & IT2_CODE_INDEX_MASK;

	if (it2_event_next(&idx, need) != 0)
		return PAPI_ENOEVNT;
	*code = idx;
	return PAPI_OK;
}

_Static_assert(IT2_DARR == PAPI_HERITAGE_CAP_DARR && IT2_IARR == PAPI_HERITAGE_CAP_IARR &&
               IT2_DEAR == PAPI_HERITAGE_CAP_DEAR && IT2_IEAR == PAPI_HERITAGE_CAP_IEAR &&
               IT2_OPCM == PAPI_HERITAGE_CAP_OPCM, "it2_event_caps speaks papi_heritage.h's bits");

static int it2_ntv_enum_step(unsigned *code, int modifier)
{
	switch (modifier) {
	case PAPI_ENUM_FIRST:
		*code = IT2_FIRST_EVENT;
		return PAPI_OK;
	case PAPI_ENUM_EVENTS:
		return next_matching(code, 0);
	case PAPI_NTV_ENUM_DARR:
		return next_matching(code, IT2_DARR);
	case PAPI_NTV_ENUM_IARR:
		return next_matching(code, IT2_IARR);
	case PAPI_NTV_ENUM_OPCM:
		return next_matching(code, IT2_OPCM);
	case PAPI_NTV_ENUM_DEAR:
		return next_matching(code, IT2_DEAR);
	case PAPI_NTV_ENUM_IEAR:
		return next_matching(code, IT2_IEAR);
	case PAPI_NTV_ENUM_UMASKS:
		/* Qualifiers of a range-capable event that is counted here:
		 * :exact=1, then :exact=0. */
		if (!(*code & IT2_CODE_EXACT_SET)) {
			if ((*code & IT2_CODE_INDEX_MASK) >= IT2_NEVENTS || !it2_event_ranges(*code) ||
			    it2_event_source(*code) == HERITAGE_UNAVAILABLE)
				return PAPI_ENOEVNT;
			*code |= IT2_CODE_EXACT_SET | IT2_CODE_EXACT_ON;
			return PAPI_OK;
		}
		if (*code & IT2_CODE_EXACT_ON) {
			*code &= ~IT2_CODE_EXACT_ON;
			return PAPI_OK;
		}
		return PAPI_ENOEVNT;
	default:
		return PAPI_EINVAL;
	}
}

static int it2_ntv_name_to_code(const char *name, unsigned *code)
{
	return heritage_papi_fail(it2_event_parse(name, code));
}

static int it2_ntv_code_to_name(unsigned code, char *name, int len)
{
	return it2_event_format(code, name, len) == 0 ? PAPI_OK : PAPI_ENOEVNT;
}

static int it2_ntv_enum_events(unsigned *code, int modifier)
{
	int rc = it2_ntv_enum_step(code, modifier);   /* before *code is read */
	return heritage_enum_keyed(rc, *code, it2_ntv_code_to_name);
}

static const char *qualifier_descr(unsigned code)
{
	return (code & IT2_CODE_EXACT_ON) ? "exact mode: only the requested bytes count, offsets 0"
	                                  : "coarse mode (default): the Itanium 2 power-of-two cover counts";
}

static int it2_ntv_code_to_descr(unsigned code, char *descr, int len)
{
	unsigned idx = code & IT2_CODE_INDEX_MASK;

	if (idx >= IT2_NEVENTS)
		return PAPI_ENOEVNT;
	/* libpfm-3's description, then what it is here. */
	char d[PAPI_HUGE_STR_LEN];
	const char *lib = it2_catalog[idx].desc, *why = it2_event_unavailable(idx);
	size_t n = strlen(lib);
	const char *stop = n && lib[n - 1] == '.' ? "" : ".";
	if (why)
		snprintf(d, sizeof d, "%s%s [unavailable here: %s]", lib, stop, why);
	else
		snprintf(d, sizeof d, "%s%s [%s here: %s]", lib, stop, heritage_source_name(it2_event_source(idx)),
		         it2_events[idx].desc);
	if (code & IT2_CODE_EXACT_SET)
		snprintf(descr, (size_t)len, "%s masks:%s", d, qualifier_descr(code));
	else
		snprintf(descr, (size_t)len, "%s", d);
	return PAPI_OK;
}

static int it2_ntv_code_to_info(unsigned code, PAPI_event_info_t *info)
{
	unsigned idx = code & IT2_CODE_INDEX_MASK;
	char name[PAPI_MAX_STR_LEN];

	if (it2_event_format(code, name, sizeof name) != 0)
		return PAPI_ENOEVNT;
	snprintf(info->symbol, sizeof info->symbol, "%s", name);
	it2_ntv_code_to_descr(code, info->long_descr, sizeof info->long_descr);
	snprintf(info->short_descr, sizeof info->short_descr, "%s", it2_event_name(idx));
	snprintf(info->units, sizeof info->units, "%s", idx == IT2_CPU_CYCLES ? "cycles" : "");
	info->data_type = PAPI_DATATYPE_UINT64;
	info->value_type = PAPI_VALUETYPE_RUNNING_SUM;
	info->timescope = PAPI_TIMESCOPE_SINCE_START;
	return PAPI_OK;
}

/* ------------------------------------------------------------ heritage API */

int itanium2_event_facts(unsigned local_code, struct papi_heritage_event_facts *facts)
{
	unsigned idx = local_code & IT2_CODE_INDEX_MASK;

	if (idx >= IT2_NEVENTS)
		return PAPI_ENOEVNT;
	facts->caps = it2_event_caps(idx);
	facts->source = (enum papi_heritage_source)it2_event_source(idx);
	return PAPI_OK;
}

HERITAGE_PUBLIC int papi_heritage_itanium2_backend(int EventSet, char *name, int len)
{
	EventSetInfo_t *ESI = _papi_hwi_lookup_EventSet(EventSet);

	if (!ESI)
		return PAPI_ENOEVST;
	if (ESI->CmpIdx != _itanium2_vector.cmp_info.CmpIdx || !ESI->ctl_state)
		return PAPI_ENOCMP;
	it2_control_t *c = ESI->ctl_state;
	const char *b = (c->set.ws.running || c->set.ws.ops) ? watch_backend_name(c->set.ws.backend) : "none";
	snprintf(name, (size_t)len, "%s", b);
	return PAPI_OK;
}

HERITAGE_PUBLIC int papi_heritage_itanium2_dear_last(int EventSet, struct papi_heritage_dear_record *record)
{
	EventSetInfo_t *ESI = _papi_hwi_lookup_EventSet(EventSet);

	if (!ESI)
		return PAPI_ENOEVST;
	if (ESI->CmpIdx != _itanium2_vector.cmp_info.CmpIdx || !ESI->ctl_state || !record)
		return record ? PAPI_ENOCMP : PAPI_EINVAL;
	it2_control_t *c = ESI->ctl_state;
	struct it2_dear_record r;
	if (it2_set_dear_last(&c->set, &r) != 0)
		return PAPI_ENOEVNT;
	/* The set's position back to the index PAPI_list_events gives. */
	int index = -1;
	for (int i = 0; i < ESI->NumberOfEvents; i++)
		if (ESI->EventInfoArray[i].pos[0] == (int)r.pos)
			index = i;
	*record = (struct papi_heritage_dear_record){
		.pc = r.pc,
		.data_address = r.addr,
		.latency = r.latency,
		.level = r.level == IT2_CACHE_L1D ? 1 : r.level == IT2_CACHE_L2 ? 2 : r.level == IT2_CACHE_L3 ? 3 : 4,
		.tlb = r.tlb == IT2_TLB_L1 ? 1 : r.tlb == IT2_TLB_L2 ? 2 : r.tlb == IT2_TLB_HPW ? 3 : 0,
		.event_index = index,
	};
	return PAPI_OK;
}

papi_vector_t _itanium2_vector = {
	.cmp_info = {
		.name = "itanium2",
		.short_name = "itanium2",
		.description = "Itanium 2 data/instruction address-range restriction (papi-heritage)",
		.version = "0.1",
		.support_version = "n/a",
		.kernel_version = "n/a",
		.num_cntrs = IT2_MAX_EVENTS,
		.num_mpx_cntrs = IT2_MAX_EVENTS,
		/* PAPI_set_multiplex comes to ctl, not to PAPI's software
		 * multiplexer (which adds PAPI_TOT_CYC, another component's). */
		.kernel_multiplex = 1,
		.default_domain = PAPI_DOM_USER,
		.available_domains = PAPI_DOM_USER,
		.default_granularity = PAPI_GRN_THR,
		.available_granularities = PAPI_GRN_THR,
		/* PAPI_overflow reaches set_overflow: the backends deliver data-range
		 * overflow themselves, exactly; the rest is polled on a timer. */
		.hardware_intr = 1,
		.hardware_intr_sig = PAPI_INT_SIGNAL,
		/* Its events take :exact= (PAPI's flag for qualified events). */
		.cntr_umasks = 1,
		.fast_counter_read = 1,
	},
	.size = {
		.context = sizeof(it2_context_t),
		.control_state = sizeof(it2_control_t),
		.reg_value = 1,
		.reg_alloc = 1,
	},
	.init_component = it2_init_component,
	.init_thread = it2_init_thread,
	.shutdown_thread = it2_shutdown_thread,
	.init_control_state = it2_init_control_state,
	.update_control_state = it2_update_control_state,
	.start = it2_start,
	.dispatch_timer = it2_dispatch_timer,
	.set_overflow = it2_set_overflow_op,
	.stop = it2_stop,
	.read = it2_read,
	.reset = it2_reset,
	.write = it2_write,
	.cleanup_eventset = it2_cleanup_eventset,
	.ctl = it2_ctl,
	.set_domain = it2_set_domain,
	.ntv_enum_events = it2_ntv_enum_events,
	.ntv_name_to_code = it2_ntv_name_to_code,
	.ntv_code_to_name = it2_ntv_code_to_name,
	.ntv_code_to_descr = it2_ntv_code_to_descr,
	.ntv_code_to_info = it2_ntv_code_to_info,
};
