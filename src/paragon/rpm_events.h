/*
 * The paragon_rpm events as data (libpfm4-style), and an event set's
 * counting: the PAPI component (components/paragon_rpm) is glue around this.
 */
#ifndef HERITAGE_RPM_EVENTS_H
#define HERITAGE_RPM_EVENTS_H

#include <stdint.h>

#include "common/heritage_event_name.h"
#include "common/heritage_owner.h"
#include "common/heritage_source.h"
#include "paragon/rpm_clock.h"
#include "paragon/rpm_model.h"

enum rpm_kind {
	RPM_K_TIME,      /* rpm_time: absolute 10 MHz ticks */
	RPM_K_TIME_S,    /* rpm_time as seconds (FP64), dclock()'s value */
	RPM_K_COUNTER,   /* struct rpm counter .counter, 64-bit since start */
	RPM_K_IDLE,      /* rpms_idle: FP64 seconds since start */
	RPM_K_INT,       /* rpms_int */
	RPM_K_ALLTRAPS,  /* rpms_alltraps: the classes that have a source */
	RPM_K_ZERO,      /* no source: the model is "never happens" */
	RPM_K_SYSCALLS,  /* rpms_it: raw_syscalls:sys_enter per CPU */
	RPM_K_FAULTS,    /* rpms_dat: PERF_COUNT_SW_PAGE_FAULTS */
	RPM_K_RESOLVED,  /* rpms_ptenotp: PAGE_FAULTS_MIN + _MAJ */
	RPM_K_UNRESOLVED,/* rpms_ptenotu: PAGE_FAULTS - (MIN + MAJ) */
	RPM_K_FPE,       /* rpms_ft, rpms_fpe_*: SIGFPEs in the opt-in trap mode (.fpe) */
};

struct rpm_event {
	const char *name;
	const char *desc;
	const char *units;
	enum heritage_source source;
	enum rpm_kind kind;
	enum rpm_counter counter;  /* RPM_K_COUNTER */
	int per_cpu;               /* an rpmsoft field: takes :cpu=N */
	int fp64;                  /* value is a double in the long long's bits */
	int absolute;              /* a reading, not a count since PAPI_start */
	int fpe;                   /* RPM_K_FPE: enum rpm_fpe_field */
};

extern const struct rpm_event rpm_events[];
extern const unsigned rpm_nevents;

/* Codes: the table index, and the :cpu=N qualifier as N + 1 (0: all CPUs). */
#define RPM_CODE_INDEX_MASK 0xffu
#define RPM_CODE_CPU_SHIFT 8
#define RPM_CODE_CPU(code) (((code) >> RPM_CODE_CPU_SHIFT) & 0xfffu)

/* The names and the :cpu=N qualifier (heritage_event_name.h). */
extern const struct heritage_event_names rpm_event_names;

/* "rpms_idle:cpu=1" -> code; 0, or -ENOENT (no such event) / -EINVAL (bad
 * qualifier, no such CPU) with a message. */
int rpm_event_parse(const char *name, unsigned *code);
/* The full name with its qualifier; -ENOENT for a bad code, -ENOSPC if it
 * does not fit. */
int rpm_event_format(unsigned code, char *buf, int len);
const struct rpm_event *rpm_event_of(unsigned code);
/* The event's source on this machine: an event whose kernel counter was
 * refused is unavailable, *why (may be NULL) says why. */
enum heritage_source rpm_event_source(const struct rpm_event *e, const char **why);

#define RPM_MAX_EVENTS 64
struct rpm_set {
	unsigned n;
	unsigned codes[RPM_MAX_EVENTS];
	int need_live;                    /* bus or soft counters: read /proc */
	int time_only;                    /* just rpm_time: PAPI_read is one clock read */
	int need_perf;                    /* rpm_perf.h's counts: maybe from the rpmd service */
	uint64_t start_gen;               /* the service page the start snapshot came from */
	int need_fpe;                     /* FP trap counts: trap in this thread while started */
	int fpe_on;                       /* rpm_fpe_thread_enable() done by rpm_set_start */
	struct heritage_owner fpe_owner;  /* in this thread */
	uint64_t start[RPM_MAX_EVENTS];   /* integer counts at start */
	double start_s[RPM_MAX_EVENTS];   /* rpms_idle at start */
	long long values[RPM_MAX_EVENTS];
};
/* Checks and stores the events; an unavailable one without the model opt-in
 * is -ENOTSUP with a message saying how to opt in. */
int rpm_set_events(struct rpm_set *s, const unsigned *codes, unsigned n);
/* Start also turns the FP trap mode on in the calling thread if the set
 * has an FP trap event (0, or its -errno with the message: not started);
 * stop turns it off again.  Start again while started: a reset. */
int rpm_set_start(struct rpm_set *s);
/* With FP trap events, only the thread that started the set may stop it
 * (the trap mode is that thread's), or any once it has exited: else -EINVAL
 * with the message, still counting. */
int rpm_set_stop(struct rpm_set *s);
/* Every read but the fast one below: a set with counters (one /proc sample
 * for all of them), or rpm_time when the clock's fast path declined.  0, or
 * -ESTALE with the message when the set counts from the rpmd service and
 * its page went stale, or is another daemon's than at start: those counts
 * cannot be subtracted (the set counts on; PAPI_reset restarts it). */
int rpm_set_read_slow(struct rpm_set *s);
/* Inline, as the clock's fast path is: PAPI_read of rpm_time alone, the
 * common case, is then one clock read and no call (paragon_rpm(3) has what
 * that costs). */
static inline __attribute__((always_inline)) int rpm_set_read(struct rpm_set *s)
{
	uint64_t ticks;
	if (__builtin_expect(s->time_only && rpm_clock_try_ticks(&ticks), 1)) {
		s->values[0] = (long long)ticks;
		return 0;
	}
	return rpm_set_read_slow(s);
}

#endif
