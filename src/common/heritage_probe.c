/*
 * The mechanism table and the once-per-process bookkeeping of the probes
 * (heritage_probe.h).  The probes themselves live with the code that uses
 * the mechanism: the breakpoint one beside the breakpoint backend, the
 * single-step and page-trap ones beside the signal engine, the perf ones in
 * heritage_probe_perf.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/heritage_env.h"
#include "common/heritage_probe.h"

static const struct {
	const char *name;
	const char *what;
	heritage_probe_fn probe;
	unsigned builds_on; /* probed first; its absence is this one's */
} mechs[HERITAGE_NMECHS] = {
	[HERITAGE_MECH_BREAKPOINT] = { "breakpoint", "x86 debug-register data breakpoints (RW and W, 1/2/4/8 bytes, "
	                               "SIGTRAP per store) on this thread", watch_breakpoint_probe, 0 },
	[HERITAGE_MECH_SINGLE_STEP] = { "single_step", "trap-flag single-stepping of this thread",
	                                watch_single_step_probe, 0 },
	[HERITAGE_MECH_PAGETRAP] = { "pagetrap", "mprotect page traps: fault, decode, step with the page open",
	                             watch_pagetrap_probe, HERITAGE_MECH_BIT(HERITAGE_MECH_SINGLE_STEP) },
	[HERITAGE_MECH_PERF_SW] = { "perf_sw", "perf software events counting this thread", heritage_perf_sw_probe, 0 },
	[HERITAGE_MECH_PERF_CPU] = { "perf_cpu", "perf software events counting whole CPUs (system-wide)",
	                             heritage_perf_cpu_probe, 0 },
	[HERITAGE_MECH_TRACEFS] = { "tracefs", "tracefs mounted, its event ids readable by this account",
	                            heritage_tracefs_probe, 0 },
	[HERITAGE_MECH_TRACEPOINT] = { "tracepoint", "the raw_syscalls:sys_enter tracepoint counting system calls",
	                               heritage_tracepoint_probe, HERITAGE_MECH_BIT(HERITAGE_MECH_TRACEFS) },
	[HERITAGE_MECH_SAMPLING] = { "sampling", "perf sampling: records arrive in the mmap ring",
	                             heritage_sampling_probe, 0 },
	[HERITAGE_MECH_PMU] = { "pmu", "the core PMU: hardware events open and count", heritage_pmu_probe, 0 },
	[HERITAGE_MECH_LIBPFM] = { "libpfm", "libpfm4 knows this CPU's core PMU", heritage_libpfm_probe, 0 },
	[HERITAGE_MECH_IBS] = { "ibs", "AMD IBS op sampling (ibs_op / ibs_fetch PMUs)", heritage_ibs_probe, 0 },
	[HERITAGE_MECH_RPM_WRITABLE] = { "rpm_writable", "the Paragon RPM registers' writable alias (resets)",
	                                 rpm_writable_probe, 0 },
	[HERITAGE_MECH_CODEPATCH] = { "codepatch", "int3 at the block leaders of a private copy of the code, the "
	                              "displaced instruction run out of line: blocks of a known routine counted",
	                              watch_blocktrap_probe, 0 },
};

static struct {
	pthread_mutex_t lock;
	_Atomic int done[HERITAGE_NMECHS];
	struct heritage_probe_result result[HERITAGE_NMECHS];
	heritage_probe_fn override[HERITAGE_NMECHS];
	int disable_read;
	unsigned disabled;
	char unknown[128];
} P = { .lock = PTHREAD_MUTEX_INITIALIZER };

const char *heritage_mech_name(enum heritage_mech m)
{
	return (unsigned)m < HERITAGE_NMECHS ? mechs[m].name : "?";
}

const char *heritage_mech_what(enum heritage_mech m)
{
	return (unsigned)m < HERITAGE_NMECHS ? mechs[m].what : "?";
}

int heritage_mech_from_name(const char *name)
{
	for (int m = 0; name && m < HERITAGE_NMECHS; m++)
		if (strcasecmp(name, mechs[m].name) == 0)
			return m;
	return -1;
}

const char *heritage_probe_state_name(enum heritage_probe_state s)
{
	switch (s) {
	case HERITAGE_PROBE_WORKS: return "works";
	case HERITAGE_PROBE_DEAD: return "dead";
	case HERITAGE_PROBE_ABSENT: return "absent";
	default: return "?";
	}
}

/* Under P.lock. */
static void read_disable(void)
{
	if (P.disable_read)
		return;
	P.disable_read = 1;
	const char *v = heritage_env("probe", "disable");
	char buf[512];
	snprintf(buf, sizeof buf, "%s", v ? v : "");
	char *save = NULL;
	for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		int m = heritage_mech_from_name(tok);
		if (strcasecmp(tok, "all") == 0)
			P.disabled = HERITAGE_MECH_BIT(HERITAGE_NMECHS) - 1;
		else if (m >= 0)
			P.disabled |= HERITAGE_MECH_BIT(m);
		else {
			size_t used = strlen(P.unknown);
			if (used + strlen(tok) + 2 < sizeof P.unknown) {
				if (used)
					strcat(P.unknown, ",");
				strcat(P.unknown, tok);
			}
		}
	}
}

const char *heritage_probe_disable_unknown(void)
{
	pthread_mutex_lock(&P.lock);
	read_disable();
	pthread_mutex_unlock(&P.lock);
	return P.unknown;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Under P.lock; recursive through builds_on (no cycles in the table). */
static void run_probe(enum heritage_mech m)
{
	struct heritage_probe_result *r = &P.result[m];

	if (atomic_load_explicit(&P.done[m], memory_order_relaxed))
		return;
	memset(r, 0, sizeof *r);
	read_disable();
	uint64_t t0 = now_ns();
	if (P.disabled & HERITAGE_MECH_BIT(m)) {
		r->state = HERITAGE_PROBE_ABSENT;
		r->err = -ENOTSUP;
		r->disabled = 1;
		snprintf(r->evidence, sizeof r->evidence, "disabled by PAPI_HERITAGE_PROBE_DISABLE (not tried)");
	} else {
		for (int d = 0; d < HERITAGE_NMECHS; d++) {
			if (!(mechs[m].builds_on & HERITAGE_MECH_BIT(d)))
				continue;
			run_probe((enum heritage_mech)d);
			const struct heritage_probe_result *dr = &P.result[d];
			if (dr->state != HERITAGE_PROBE_WORKS) {
				r->state = HERITAGE_PROBE_ABSENT;
				r->err = dr->err;
				r->refused = dr->refused;
				char ev[HERITAGE_PROBE_EVIDENCE];
				memcpy(ev, dr->evidence, sizeof ev);
				snprintf(r->evidence, sizeof r->evidence, "needs %s, which is %s here: %.240s", mechs[d].name,
				         heritage_probe_state_name(dr->state), ev);
				memcpy(r->allowed_by, dr->allowed_by, sizeof r->allowed_by);
				break;
			}
		}
		if (!r->state) {
			heritage_probe_fn fn = P.override[m] ? P.override[m] : mechs[m].probe;
			int saved = errno;
			fn(r);
			errno = saved;
			if (!r->state) { /* a probe that forgot to say: never "works" by default */
				r->state = HERITAGE_PROBE_DEAD;
				snprintf(r->evidence, sizeof r->evidence, "the probe reached no verdict");
			}
			if (r->state == HERITAGE_PROBE_WORKS)
				r->err = 0;
			else if (!r->err)
				r->err = -ENOTSUP;
		}
	}
	r->ns = now_ns() - t0;
	atomic_store_explicit(&P.done[m], 1, memory_order_release);
}

const struct heritage_probe_result *heritage_probe(enum heritage_mech m)
{
	if ((unsigned)m >= HERITAGE_NMECHS)
		return NULL;
	if (!atomic_load_explicit(&P.done[m], memory_order_acquire)) {
		pthread_mutex_lock(&P.lock);
		run_probe(m);
		pthread_mutex_unlock(&P.lock);
	}
	return &P.result[m];
}

int heritage_probe_works(enum heritage_mech m)
{
	const struct heritage_probe_result *r = heritage_probe(m);
	return r && r->state == HERITAGE_PROBE_WORKS;
}

int heritage_probe_done(enum heritage_mech m)
{
	return (unsigned)m < HERITAGE_NMECHS && atomic_load_explicit(&P.done[m], memory_order_acquire);
}

int heritage_probe_explain(enum heritage_mech m, char *buf, size_t len)
{
	const struct heritage_probe_result *r = heritage_probe(m);

	if (!r) {
		snprintf(buf, len, "no such mechanism");
		return -EINVAL;
	}
	if (r->refused)
		snprintf(buf, len, "%s is refused to this account: %s; allowed by %s", mechs[m].name, r->evidence,
		         r->allowed_by[0] ? r->allowed_by : "root");
	else
		snprintf(buf, len, "%s is %s here: %s", mechs[m].name, heritage_probe_state_name(r->state), r->evidence);
	return r->err;
}

void heritage_probe_override(enum heritage_mech m, heritage_probe_fn fn)
{
	if ((unsigned)m < HERITAGE_NMECHS)
		P.override[m] = fn;
	heritage_probe_forget();
}

void heritage_probe_forget(void)
{
	pthread_mutex_lock(&P.lock);
	for (int m = 0; m < HERITAGE_NMECHS; m++)
		atomic_store(&P.done[m], 0);
	P.disable_read = 0;
	P.disabled = 0;
	P.unknown[0] = '\0';
	pthread_mutex_unlock(&P.lock);
}

/* The probe of tracefs found raw_syscalls:sys_enter's id; 0 while tracefs
 * does not work here. */
long heritage_tracefs_syscall_id(void)
{
	return heritage_probe_works(HERITAGE_MECH_TRACEFS) ? heritage_tracefs_probed_id() : 0;
}
