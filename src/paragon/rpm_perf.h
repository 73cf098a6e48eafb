/*
 * Per-CPU kernel counts behind rpmsoft's page-fault and system-call fields:
 * perf software events PAGE_FAULTS, PAGE_FAULTS_MIN, PAGE_FAULTS_MAJ and the
 * tracepoint raw_syscalls:sys_enter, counted system-wide on each CPU (pid
 * -1, which needs perf_event_paranoid <= 0 or CAP_PERFMON/root).
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
/* 0 if the count is available, else a negative errno; *why says why. */
int rpm_perf_status(enum rpm_perf_count k, const char **why);
/* The counts of logical CPU i since the counters were opened (0 for those
 * that are not available).  Async-signal-safe: one read(2) per CPU. */
void rpm_perf_read(unsigned i, uint64_t out[RPM_PERF_NCOUNTS]);
/* The mount point of tracefs in /proc/mounts' text, into buf; 0 or -1. */
int rpm_parse_tracefs_mount(const char *mounts, char *buf, unsigned len);

#endif
