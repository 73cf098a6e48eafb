/*
 * Mechanism probes: nothing is trusted because its system call succeeded.
 *
 * Every mechanism a backend needs is tried once per process, lazily and
 * thread-safely, the way a user would find out: a known number of accesses,
 * steps, faults or system calls of a private object must be counted exactly.
 * The probe ends in one of three states:
 *   works   - it counted what it was shown;
 *   dead    - it was accepted and counted wrong, with one line of evidence
 *             (on the AMD family 26 guest a debug-register breakpoint opens
 *             and counts 0 of 64 accesses);
 *   absent  - it is not there, with why; when this account is the reason
 *             (EACCES from perf_event_paranoid, EPERM from a seccomp
 *             profile, a root-only tracefs), `refused` is set and
 *             `allowed_by` names what would allow it.
 *
 * PAPI_HERITAGE_PROBE_DISABLE=name,name,... (a testing aid) makes the named
 * mechanisms absent without trying them, so every machine's CI runs the
 * fallbacks; "all" names every one.
 */
#ifndef HERITAGE_PROBE_H
#define HERITAGE_PROBE_H

#include <stddef.h>
#include <stdint.h>

enum heritage_mech {
	HERITAGE_MECH_BREAKPOINT,   /* debug-register data breakpoints, this thread */
	HERITAGE_MECH_SINGLE_STEP,  /* trap-flag single-stepping */
	HERITAGE_MECH_PAGETRAP,     /* mprotect page traps, decoded and stepped */
	HERITAGE_MECH_PERF_SW,      /* perf software events counting this thread */
	HERITAGE_MECH_PERF_CPU,     /* perf software events counting whole CPUs */
	HERITAGE_MECH_TRACEFS,      /* tracefs mounted and readable */
	HERITAGE_MECH_TRACEPOINT,   /* the raw_syscalls:sys_enter tracepoint */
	HERITAGE_MECH_SAMPLING,     /* perf sampling into the mmap ring */
	HERITAGE_MECH_PMU,          /* the core PMU's hardware events through perf */
	HERITAGE_MECH_LIBPFM,       /* libpfm4 knows this CPU's core PMU */
	HERITAGE_MECH_IBS,          /* AMD IBS op/fetch sampling PMUs */
	HERITAGE_MECH_RPM_WRITABLE, /* the Paragon RPM registers' writable alias */
	HERITAGE_MECH_CODEPATCH,    /* int3 at block leaders of private code copies, run out of line */
	HERITAGE_NMECHS
};
#define HERITAGE_MECH_BIT(m) (1u << (m))

enum heritage_probe_state {
	HERITAGE_PROBE_WORKS = 1,
	HERITAGE_PROBE_DEAD = 2,
	HERITAGE_PROBE_ABSENT = 3,
};

#define HERITAGE_PROBE_EVIDENCE 320
#define HERITAGE_PROBE_ALLOWED 200

struct heritage_probe_result {
	enum heritage_probe_state state;
	/* 0 when it works; -EPERM/-EACCES when refused to this account (PAPI
	 * reports PAPI_EPERM); else -ENOTSUP (PAPI_ENOSUPP). */
	int err;
	int refused;                               /* absent because of this account */
	int disabled;                              /* PAPI_HERITAGE_PROBE_DISABLE */
	char evidence[HERITAGE_PROBE_EVIDENCE];    /* one line: what the probe saw */
	char allowed_by[HERITAGE_PROBE_ALLOWED];   /* refused: what would allow it */
	uint64_t ns;                               /* what probing cost */
};

/* A probe fills r (zeroed on entry): thread context, never a signal
 * handler; it releases whatever it opened. */
typedef void (*heritage_probe_fn)(struct heritage_probe_result *r);

/* The result for mechanism m, probing it the first time it is asked for
 * (and whatever it builds on: the tracepoint needs tracefs). */
const struct heritage_probe_result *heritage_probe(enum heritage_mech m);
/* Shorthand: 1 if m works here. */
int heritage_probe_works(enum heritage_mech m);
/* Already probed?  For listings that must not pay for a probe. */
int heritage_probe_done(enum heritage_mech m);

const char *heritage_mech_name(enum heritage_mech m);
const char *heritage_mech_what(enum heritage_mech m);
/* -1 for an unknown name. */
int heritage_mech_from_name(const char *name);
const char *heritage_probe_state_name(enum heritage_probe_state s);

/* Names in PAPI_HERITAGE_PROBE_DISABLE that are no mechanism ("" if none):
 * the listing says so rather than ignoring a typo silently. */
const char *heritage_probe_disable_unknown(void);

/* One line for an error message: "breakpoint is dead here: opened, counted
 * 0 of 64 accesses".  Returns the result's err. */
int heritage_probe_explain(enum heritage_mech m, char *buf, size_t len);

/* ---- for the probes themselves ------------------------------------------ */

/* perf_event_open refused with errno e: marks r absent and refused, and
 * says what would allow it.  max_paranoid is the highest
 * perf_event_paranoid value at which the kernel lets an ordinary account
 * do what was tried (2: its own threads, user level; 0: whole CPUs; -1:
 * raw tracepoint data). */
void heritage_probe_refused(struct heritage_probe_result *r, int e, const char *what, int max_paranoid);
/* Is a seccomp filter installed on this thread (Seccomp: 2)? */
int heritage_seccomp_filtered(void);
/* /proc/sys/kernel/perf_event_paranoid, or 99 when it cannot be read. */
int heritage_perf_paranoid(void);

/* The probes, each with its module. */
void watch_breakpoint_probe(struct heritage_probe_result *r);
void watch_single_step_probe(struct heritage_probe_result *r);
void watch_pagetrap_probe(struct heritage_probe_result *r);
void heritage_perf_sw_probe(struct heritage_probe_result *r);
void heritage_perf_cpu_probe(struct heritage_probe_result *r);
void heritage_tracefs_probe(struct heritage_probe_result *r);
void heritage_tracepoint_probe(struct heritage_probe_result *r);
void heritage_sampling_probe(struct heritage_probe_result *r);
void heritage_pmu_probe(struct heritage_probe_result *r);
void heritage_libpfm_probe(struct heritage_probe_result *r);
void heritage_ibs_probe(struct heritage_probe_result *r);
void rpm_writable_probe(struct heritage_probe_result *r);
void watch_blocktrap_probe(struct heritage_probe_result *r);

/* libpfm4's core PMU on this machine: 0 with its name and description,
 * -ENODEV when libpfm4 knows none, -EIO when libpfm4 cannot initialise. */
int heritage_libpfm_core_pmu(char *name, size_t nlen, char *desc, size_t dlen);

/* tracefs's mount point and raw_syscalls:sys_enter's id, once tracefs
 * works; 0 otherwise. */
long heritage_tracefs_syscall_id(void);
/* The id tracefs's probe read (heritage_probe_perf.c), whether or not the
 * probe has run: heritage_tracefs_syscall_id() is the one to use. */
long heritage_tracefs_probed_id(void);

/* Who depends on m, from the backend tables and paragon_rpm's sources:
 * "itanium2 backend breakpoint; ..." ("" if nobody). */
void heritage_mech_users(enum heritage_mech m, char *buf, size_t len);

/* ---- for unit tests ------------------------------------------------------- */

/* Replace m's probe (NULL: the real one) and forget every result, so the
 * next heritage_probe() runs again.  Not thread-safe: tests only. */
void heritage_probe_override(enum heritage_mech m, heritage_probe_fn fn);
void heritage_probe_forget(void);

#endif
