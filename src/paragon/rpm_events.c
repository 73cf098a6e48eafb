#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "paragon/rpm_events.h"
#include "paragon/rpm_fpe.h"
#include "paragon/rpm_page.h"
#include "paragon/rpm_perf.h"

#define CYCLES "cycles (50 MHz bus)"
#define UNITS64 "64-byte units"
#define BUS(n, c, src, d) { .name = n, .desc = d, .units = CYCLES, .source = src, .kind = RPM_K_COUNTER, .counter = c }
#define MESH(n, c, d) { .name = n, .desc = d, .units = UNITS64, .source = HERITAGE_MODELLED, .kind = RPM_K_COUNTER, .counter = c }
#define SOFT(n, k, src, d) { .name = n, .desc = d, .units = "", .source = src, .kind = k, .per_cpu = 1 }
#define FPE(n, f, d) { .name = n, .desc = d " [measured with PAPI_HERITAGE_PARAGON_RPM_FPE_TRAPS, else unavailable]", .units = "", .source = HERITAGE_MEASURED, .kind = RPM_K_FPE, .per_cpu = 1, .fpe = f }
#define NONE(n, d) SOFT(n, RPM_K_ZERO, HERITAGE_UNAVAILABLE, d " [unavailable: no honest source on x86-64 Linux]")

const struct rpm_event rpm_events[] = {
	{ .name = "rpm_time", .units = "ticks (100 ns)", .source = HERITAGE_MEASURED, .kind = RPM_K_TIME, .absolute = 1,
	  .desc = "10 MHz 56-bit global clock since boot (CLOCK_BOOTTIME / 100 ns) [measured]" },
	{ .name = "rpm_time_s", .units = "s", .source = HERITAGE_MEASURED, .kind = RPM_K_TIME_S, .absolute = 1, .fp64 = 1,
	  .desc = "rpm_time in seconds as dclock() gives it (low 52 bits / 10^7), FP64 [measured]" },
	BUS("rpm_cpu0", RPM_CPU0, HERITAGE_MODELLED,
	    "bus cycles CPU 0 is bus master: the default master takes 97.5% of the elapsed 50 MHz cycles less cpu1+ltu+exp, busy or not (the documented bug) [modelled]"),
	BUS("rpm_cpu1", RPM_CPU1, HERITAGE_MODELLED,
	    "bus cycles of the message co-processor: irq+softirq time of all CPUs (/proc/stat) x 50 MHz [modelled]"),
	BUS("rpm_ltu", RPM_LTU, HERITAGE_MODELLED,
	    "bus cycles of the line transfer unit: bytes received+sent by the NICs (/proc/net/dev) / 8 [modelled]"),
	BUS("rpm_exp", RPM_EXP, HERITAGE_UNAVAILABLE,
	    "bus cycles of the expansion card: none here, the model counts 0 [unavailable]"),
	MESH("rpm_north", RPM_NORTH, "64-byte units leaving this node's router northwards (virtual mesh: rpm_mesh_send, or the MPI job's window of libpapi-heritage-mpi) [modelled]"),
	MESH("rpm_south", RPM_SOUTH, "64-byte units leaving this node's router southwards (virtual mesh: rpm_mesh_send, or the MPI job's window of libpapi-heritage-mpi) [modelled]"),
	MESH("rpm_east", RPM_EAST, "64-byte units leaving this node's router eastwards (virtual mesh: rpm_mesh_send, or the MPI job's window of libpapi-heritage-mpi) [modelled]"),
	MESH("rpm_west", RPM_WEST, "64-byte units leaving this node's router westwards (virtual mesh: rpm_mesh_send, or the MPI job's window of libpapi-heritage-mpi) [modelled]"),
	{ .name = "rpms_idle", .units = "s", .source = HERITAGE_MEASURED, .kind = RPM_K_IDLE, .per_cpu = 1, .fp64 = 1,
	  .desc = "seconds the CPU was idle, FP64 (/proc/stat idle+iowait); :cpu=N, else the sum over CPUs [measured]" },
	SOFT("rpms_alltraps", RPM_K_ALLTRAPS, HERITAGE_MODELLED,
	     "traps: the sum of the trap classes that have a source here (rpms_int + rpms_it + rpms_dat, + rpms_ft in the FP trap mode) [modelled]"),
	SOFT("rpms_it", RPM_K_SYSCALLS, HERITAGE_MEASURED,
	     "trap instructions (system calls): tracepoint raw_syscalls:sys_enter counted on the CPU [measured]"),
	SOFT("rpms_int", RPM_K_INT, HERITAGE_MEASURED, "interrupts on the CPU (/proc/interrupts column) [measured]"),
	NONE("rpms_iat", "instruction access traps (counting cannot tell instruction fetch faults from data faults)"),
	SOFT("rpms_dat", RPM_K_FAULTS, HERITAGE_MODELLED,
	     "data access traps: every page fault on the CPU (perf PAGE_FAULTS), instruction fetch faults included [modelled]"),
	FPE("rpms_ft", RPM_FPF_FT, "floating point traps: SIGFPEs of the classes the opt-in trap mode unmasks, in the threads that count"),
	NONE("rpms_datld", "data access traps on ld.x"),
	NONE("rpms_datst", "data access traps on st.x"),
	NONE("rpms_datfldfst", "data access traps on fld.x or fst.x"),
	NONE("rpms_datpst", "data access traps on pst"),
	NONE("rpms_datpfld", "data access traps on pfld.y"),
	NONE("rpms_datauto", "data access traps on fld.x++, fst.x++, pfld.x++"),
	NONE("rpms_notdirty", "page faults for a store to a clean page"),
	NONE("rpms_notref", "page faults for an access to an unreferenced page while locked"),
	NONE("rpms_notwr", "page faults for a store to a read-only page"),
	NONE("rpms_pdenotu", "page directory entry access violations"),
	SOFT("rpms_ptenotu", RPM_K_UNRESOLVED, HERITAGE_MODELLED,
	     "page table entry access violations: page faults the kernel did not resolve (perf PAGE_FAULTS - MIN - MAJ: SIGSEGV, SIGBUS, EFAULT), PDE faults included [modelled]"),
	NONE("rpms_pdenotp", "page directory entry invalid traps"),
	SOFT("rpms_ptenotp", RPM_K_RESOLVED, HERITAGE_MODELLED,
	     "page table entry invalid traps: page faults the kernel resolved (perf PAGE_FAULTS_MIN + _MAJ), write-protect (COW, dirty tracking) and PDE faults included [modelled]"),
	NONE("rpms_lockseq", "traps while in a locked sequence"),
	NONE("rpms_lockres", "restarted locked sequences"),
	NONE("rpms_lockexp", "expired locked sequences"),
	FPE("rpms_fpe_si", RPM_FPF_SI, "floating-point sticky inexact exceptions: inexact traps, any unit"),
	FPE("rpms_fpe_se", RPM_FPF_SE, "floating-point source exceptions: invalid-operation and divide-by-zero traps (the i860 divides by frcp, whose 0 operand is a source exception)"),
	FPE("rpms_fpe_mu", RPM_FPF_MU, "floating-point multiplier underflow exceptions: underflow traps of mul/div/FMA"),
	FPE("rpms_fpe_mo", RPM_FPF_MO, "floating-point multiplier overflow exceptions: overflow traps of mul/div/FMA"),
	FPE("rpms_fpe_mi", RPM_FPF_MI, "floating-point multiplier inexact exceptions: inexact traps of mul/div/FMA"),
	NONE("rpms_fpe_ma", "floating-point multiplier add-one exceptions (SSE does not say whether rounding incremented)"),
	FPE("rpms_fpe_au", RPM_FPF_AU, "floating-point underflow exceptions: underflow traps of the other instructions (adder)"),
	FPE("rpms_fpe_ao", RPM_FPF_AO, "floating-point overflow exceptions: overflow traps of the other instructions (adder)"),
	FPE("rpms_fpe_ai", RPM_FPF_AI, "floating-point inexact exceptions: inexact traps of the other instructions (adder)"),
	NONE("rpms_fpe_aa", "floating-point add one exceptions (SSE does not say whether rounding incremented)"),
};
const unsigned rpm_nevents = sizeof rpm_events / sizeof rpm_events[0];

enum heritage_source rpm_event_source(const struct rpm_event *e, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	*why = "";
	(void)rpm_cpu_count(); /* opens the kernel counters */
	switch (e->kind) {
	case RPM_K_SYSCALLS:
		return rpm_perf_status(RPM_SYSCALLS, why) ? HERITAGE_UNAVAILABLE : e->source;
	case RPM_K_FAULTS:
		return rpm_perf_status(RPM_PF_ALL, why) ? HERITAGE_UNAVAILABLE : e->source;
	case RPM_K_RESOLVED:
	case RPM_K_UNRESOLVED:
		if (rpm_perf_status(RPM_PF_ALL, why) || rpm_perf_status(RPM_PF_MIN, why) ||
		    rpm_perf_status(RPM_PF_MAJ, why))
			return HERITAGE_UNAVAILABLE;
		return e->source;
	case RPM_K_FPE: {
		unsigned need = rpm_fpe_field_classes((enum rpm_fpe_field)e->fpe), have = rpm_fpe_classes(why);
		if (!have)
			return HERITAGE_UNAVAILABLE;
		if (need && !(have & need)) {
			*why = "the FP trap mode is on, but not for this field's exception class (see PAPI_HERITAGE_PARAGON_RPM_FPE_TRAPS in paragon_rpm(3))";
			return HERITAGE_UNAVAILABLE;
		}
		*why = "";
		return e->source;
	}
	default:
		return e->source;
	}
}

const struct rpm_event *rpm_event_of(unsigned code)
{
	unsigned idx = code & RPM_CODE_INDEX_MASK;
	if (idx >= rpm_nevents || (code & ~(RPM_CODE_INDEX_MASK | (0xfffu << RPM_CODE_CPU_SHIFT))))
		return NULL;
	if (RPM_CODE_CPU(code) && !rpm_events[idx].per_cpu)
		return NULL;
	return &rpm_events[idx];
}

/* :cpu=N on the rpms_* soft counters, N a CPU of this machine. */
static void cpu_values(unsigned index, struct heritage_qual_values *v)
{
	unsigned ncpus = index < rpm_nevents && rpm_events[index].per_cpu ? rpm_cpu_count() : 0;
	*v = (struct heritage_qual_values){ 0 };
	if (ncpus) {
		*v = (struct heritage_qual_values){ .n = 2, .range = 1, .v = { 0, ncpus - 1 } };
		snprintf(v->note, sizeof v->note, "this machine has %u CPUs", ncpus);
	}
}

static const struct heritage_qualifier rpm_qualifiers[] = {
	{ .name = "cpu", .given = 0, .shift = RPM_CODE_CPU_SHIFT, .mask = 0xfffu, .values = cpu_values },
};

const struct heritage_event_names rpm_event_names = {
	.component = "paragon_rpm",
	.first_name = &rpm_events[0].name,
	.stride = sizeof rpm_events[0],
	.n = sizeof rpm_events / sizeof rpm_events[0],
	.index_mask = RPM_CODE_INDEX_MASK,
	.quals = rpm_qualifiers,
	.nquals = sizeof rpm_qualifiers / sizeof rpm_qualifiers[0],
};

int rpm_event_parse(const char *name, unsigned *code)
{
	return heritage_event_parse(&rpm_event_names, name, code);
}

int rpm_event_format(unsigned code, char *buf, int len)
{
	return len <= 0 ? -ENOENT : heritage_event_format(&rpm_event_names, code, buf, (size_t)len);
}

int rpm_set_events(struct rpm_set *s, const unsigned *codes, unsigned n)
{
	if (n > RPM_MAX_EVENTS)
		return heritage_fail(-ENOSPC, "paragon_rpm: at most %d events per event set", RPM_MAX_EVENTS);
	int need_live = 0, need_fpe = 0, need_perf = 0, model_allowed;
	int err = heritage_env_flag("PARAGON_RPM", "MODEL", &model_allowed);
	if (err)
		return err;
	for (unsigned i = 0; i < n; i++) {
		const struct rpm_event *e = rpm_event_of(codes[i]);
		if (!e)
			return heritage_fail(-ENOENT, "paragon_rpm: no event with code %#x", codes[i]);
		const char *why;
		if (rpm_event_source(e, &why) == HERITAGE_UNAVAILABLE && !model_allowed)
			return heritage_fail(-ENOTSUP,
			                     "paragon_rpm: %s has no honest source on this machine%s%s (the model would count 0); "
			                     "set PAPI_HERITAGE_PARAGON_RPM_MODEL=1 to count it anyway",
			                     e->name, *why ? ": " : "", why);
		if (e->kind == RPM_K_FPE && rpm_fpe_classes(NULL))
			need_fpe = 1;
		if (e->kind == RPM_K_SYSCALLS || e->kind == RPM_K_FAULTS || e->kind == RPM_K_RESOLVED ||
		    e->kind == RPM_K_UNRESOLVED || e->kind == RPM_K_ALLTRAPS)
			need_perf = 1;
		if (e->kind != RPM_K_TIME && e->kind != RPM_K_TIME_S && e->kind != RPM_K_ZERO &&
		    !(e->kind == RPM_K_COUNTER && e->counter >= RPM_NORTH))
			need_live = 1;
	}
	memcpy(s->codes, codes, n * sizeof codes[0]);
	s->n = n;
	s->need_live = need_live;
	s->time_only = !need_live && n == 1 && rpm_events[codes[0] & RPM_CODE_INDEX_MASK].kind == RPM_K_TIME;
	s->need_fpe = need_fpe;
	s->need_perf = need_perf;
	memset(s->values, 0, sizeof s->values);
	return 0;
}

/* Why a sample's rpm_perf.h counts cannot be used against the start's. */
static int perf_fail(const struct rpm_set *s, const struct rpm_live *live, const char *when)
{
	const char *why;
	if (rpm_perf_revalidate(&why) != 0)
		return heritage_fail(-ESTALE, "paragon_rpm: %s; %s", why, when);
	if (rpm_perf_generation() != s->start_gen)
		return heritage_fail(-ESTALE, "paragon_rpm: the rpmd service was restarted since PAPI_start and its counts "
		                              "began again; %s", when);
	return heritage_fail(-ESTALE, "paragon_rpm: the rpmd service's page could not be read consistently "
	                              "(%s); %s", strerror(-live->perf_err), when);
}

/* Current integer count (or seconds, for rpms_idle) of one event. */
static void current(const struct rpm_set *s, unsigned i, const struct rpm_live *live, const uint64_t cum[],
                    uint64_t ticks, uint64_t *count, double *seconds)
{
	const struct rpm_event *e = rpm_event_of(s->codes[i]);
	unsigned cpu = RPM_CODE_CPU(s->codes[i]);
	unsigned lo = cpu ? cpu - 1 : 0, hi = cpu ? cpu : live->ncpus;

	*count = 0;
	*seconds = 0;
	switch (e->kind) {
	case RPM_K_TIME:
		*count = ticks;
		break;
	case RPM_K_TIME_S:
		*seconds = rpm_ticks_to_seconds(ticks);
		break;
	case RPM_K_COUNTER:
		*count = cum[e->counter];
		break;
	case RPM_K_IDLE:
		for (unsigned c = lo; c < hi && c < live->ncpus; c++)
			*seconds += live->idle_s[c];
		break;
	case RPM_K_INT:
		for (unsigned c = lo; c < hi && c < live->ncpus; c++)
			*count += live->interrupts[c];
		break;
	case RPM_K_ALLTRAPS:
		for (unsigned c = lo; c < hi && c < live->ncpus; c++)
			*count += live->interrupts[c] + live->syscalls[c] + live->faults[c] + live->fpe[c][RPM_FPF_FT];
		break;
	case RPM_K_SYSCALLS:
		for (unsigned c = lo; c < hi && c < live->ncpus; c++)
			*count += live->syscalls[c];
		break;
	case RPM_K_FAULTS:
		for (unsigned c = lo; c < hi && c < live->ncpus; c++)
			*count += live->faults[c];
		break;
	case RPM_K_RESOLVED:
		for (unsigned c = lo; c < hi && c < live->ncpus; c++)
			*count += live->faults_resolved[c];
		break;
	case RPM_K_UNRESOLVED: {
		/* Summed before the difference: a fault resolved on another CPU
		 * than the one it was counted on cancels out in the sum. */
		uint64_t all = 0, resolved = 0;
		for (unsigned c = lo; c < hi && c < live->ncpus; c++)
			all += live->faults[c], resolved += live->faults_resolved[c];
		*count = rpm_unresolved_faults(all, resolved);
		break;
	}
	case RPM_K_FPE:
		for (unsigned c = lo; c < hi && c < live->ncpus; c++)
			*count += live->fpe[c][e->fpe];
		break;
	case RPM_K_ZERO:
		break;
	}
}

/* Freed at the thread's exit by the key's destructor: a program that
 * starts a thread per task (the stress's workers) lost 112 KiB with each (test_paragon: 7 MB for 63 threads). */
static pthread_key_t live_key;
static pthread_once_t live_key_once = PTHREAD_ONCE_INIT;
static int live_key_ok;

static void live_key_create(void)
{
	live_key_ok = pthread_key_create(&live_key, free) == 0;
}

static struct rpm_live *live_buffer(void)
{
	/* Large (112 KiB with RPM_MAX_CPUS 1024); one per thread, allocated on first use. */
	static __thread struct rpm_live *live;
	if (!live) {
		pthread_once(&live_key_once, live_key_create);
		if (!live_key_ok)
			return NULL;
		live = calloc(1, sizeof *live);
		if (live && pthread_setspecific(live_key, live) != 0) {
			free(live);
			live = NULL;
		}
	}
	return live;
}

static void sample(const struct rpm_set *s, struct rpm_live **live, uint64_t cum[], uint64_t *ticks)
{
	static struct rpm_live none;
	*live = &none;
	if (s->need_live) {
		struct rpm_live *l = live_buffer();
		if (l && rpm_live_read(l, 1000000) == 0)
			*live = l;
	}
	rpm_node_counts(rpm_view_node(), *live, cum);
	*ticks = rpm_now_ticks();
}

int rpm_set_start(struct rpm_set *s)
{
	/* A restarted rpmd's page replaces a dead one's here, in thread
	 * context; a set starts only on a live one. */
	const char *why;
	if (s->need_perf && rpm_perf_revalidate(&why) != 0)
		return heritage_fail(-ESTALE, "paragon_rpm: %s", why);
	/* Before the snapshot: traps from here on are the set's.  If the mode
	 * cannot be had, the set does not start: its FP counts would be 0. */
	int enabled_here = 0;
	if (s->need_fpe && !s->fpe_on) {
		int err = rpm_fpe_thread_enable();
		if (err)
			return err;
		s->fpe_on = enabled_here = 1;
		heritage_owner_set(&s->fpe_owner);
	}
	struct rpm_live *live;
	uint64_t cum[RPM_NCOUNTERS], ticks;
	sample(s, &live, cum, &ticks);
	if (s->need_perf && live->perf_err) {
		s->start_gen = rpm_perf_generation();
		int err = perf_fail(s, live, "not started");
		if (enabled_here) {
			rpm_fpe_thread_disable();
			s->fpe_on = 0;
		}
		return err;
	}
	s->start_gen = live->perf_gen;
	for (unsigned i = 0; i < s->n; i++)
		current(s, i, live, cum, ticks, &s->start[i], &s->start_s[i]);
	memset(s->values, 0, sizeof s->values);
	return 0;
}

int rpm_set_stop(struct rpm_set *s)
{
	if (!s->fpe_on)
		return 0;
	int own = heritage_owner_stop(&s->fpe_owner, "paragon_rpm", 1);
	if (own < 0)
		return own;
	if (own)
		rpm_fpe_thread_disable();
	s->fpe_on = 0;
	return 0;
}

int rpm_set_read_slow(struct rpm_set *s)
{
	if (s->time_only) {
		s->values[0] = (long long)rpm_now_ticks();
		return 0;
	}
	struct rpm_live *live;
	uint64_t cum[RPM_NCOUNTERS], ticks, count;
	double seconds;

	sample(s, &live, cum, &ticks);
	if (s->need_perf && (live->perf_err || live->perf_gen != s->start_gen))
		return perf_fail(s, live, "the counts since PAPI_start are lost (PAPI_reset starts again once rpmd runs)");
	for (unsigned i = 0; i < s->n; i++) {
		const struct rpm_event *e = rpm_event_of(s->codes[i]);
		current(s, i, live, cum, ticks, &count, &seconds);
		if (e->fp64) {
			double v = e->absolute ? seconds : seconds - s->start_s[i];
			memcpy(&s->values[i], &v, sizeof v);
		} else {
			s->values[i] = (long long)(e->absolute ? count : count - s->start[i]);
		}
	}
	return 0;
}
