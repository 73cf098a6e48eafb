/*
 * Per-CPU kernel counts behind rpmsoft's page-fault and system-call fields:
 * perf software events PAGE_FAULTS, PAGE_FAULTS_MIN, PAGE_FAULTS_MAJ and the
 * tracepoint raw_syscalls:sys_enter, counted system-wide on each CPU (pid
 * -1, which needs perf_event_paranoid <= 0 or CAP_PERFMON/root).
 *
 * Where this account may not open a count, it comes from the rpmd
 * service's page (rpm_service.h) when a trusted daemon publishes one: the
 * same kernel count, opened by the daemon, at most one publication interval
 * old.  Own counts are preferred (current on every read, no daemon needed).
 */
#ifndef HERITAGE_RPM_PERF_H
#define HERITAGE_RPM_PERF_H

#include <stdint.h>

enum rpm_perf_count { RPM_PF_ALL, RPM_PF_MIN, RPM_PF_MAJ, RPM_SYSCALLS, RPM_PERF_NCOUNTS };

/* Opens the counters of every CPU (os[i] for logical CPU i); idempotent.
 * Failures are remembered per count, with the reason, not returned. */
void rpm_perf_open(unsigned ncpus, const unsigned *os);
/* Remember the CPUs; rpm_perf_ensure() opens the counters once, in thread
 * context (never from a signal handler), and rpm_perf_status() does too. */
void rpm_perf_configure(unsigned ncpus, const unsigned *os);
void rpm_perf_ensure(void);
/* 0 if the count is available, else a negative errno; *why says why (for
 * a count from the rpmd service, it says that, with status 0).  A count
 * from a service that stopped publishing is -ESTALE unless a restarted
 * daemon's page replaces it (rpm_perf_revalidate). */
int rpm_perf_status(enum rpm_perf_count k, const char **why);
/* The counts of logical CPU i since the counters were opened (0 for those
 * that are not available).  Async-signal-safe: one read(2) per CPU and
 * count source, or loads from the service's page.  0, or -ESTALE/-EAGAIN
 * when counts from the service could not be had fresh (out holds the own
 * counts then, 0 for the service's).  *gen (may be NULL): which service
 * page the counts came from (0: none); counts of different generations are
 * different daemons' and cannot be subtracted. */
int rpm_perf_read(unsigned i, uint64_t out[RPM_PERF_NCOUNTS], uint64_t *gen);
/* Thread context: if the service page in use went stale and a restarted
 * daemon publishes a live one, use that one from now on (a new generation).
 * 0, or -ESTALE with *why (may be NULL): this thread's copy, good until its
 * next call. */
int rpm_perf_revalidate(const char **why);
/* The current service page's generation (0: none). */
uint64_t rpm_perf_generation(void);
/* rpmd, before anything opens the counters: never the service's counts
 * (it is the service). */
void rpm_perf_own_only(void);
/* The CPUs the counters were opened on (OS numbers, logical order). */
unsigned rpm_perf_cpus(const unsigned **os);
/* The mount point of tracefs in /proc/mounts' text, into buf; 0 or -1. */
int rpm_parse_tracefs_mount(const char *mounts, char *buf, unsigned len);

#endif
