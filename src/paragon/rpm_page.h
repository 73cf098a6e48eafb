/*
 * The live values behind struct rpm and struct rpmsoft, for the PAPI
 * component and rpmd (the legacy pages are filled from the same functions).
 */
#ifndef HERITAGE_RPM_PAGE_H
#define HERITAGE_RPM_PAGE_H

#include <stdint.h>

#include "paragon/rpm_clock.h" /* rpm_now_ticks() */
#include "paragon/rpm_fpe.h"
#include "paragon/rpm_model.h"
#include "paragon/rpm_shared.h"

/* Host-wide inputs of the bus model and the soft counters, at most
 * max_age_ns old (the files they come from are re-read when older).  The
 * per-CPU arrays are in hwloc's logical PU order.  0 or a negative errno. */
struct rpm_live {
	unsigned ncpus;
	struct rpm_bus bus;                   /* cpu0 per the model, 50 MHz cycles since boot */
	double idle_s[RPM_MAX_CPUS];          /* rpms_idle */
	uint64_t interrupts[RPM_MAX_CPUS];    /* rpms_int, 64-bit */
	/* rpm_perf.h's counts, since the counters were opened (0 if refused) */
	uint64_t syscalls[RPM_MAX_CPUS];      /* rpms_it */
	uint64_t faults[RPM_MAX_CPUS];        /* rpms_dat: every page fault */
	uint64_t faults_resolved[RPM_MAX_CPUS]; /* rpms_ptenotp: minor + major */
	uint64_t fpe[RPM_MAX_CPUS][RPM_FPF_NFIELDS]; /* rpms_ft, rpms_fpe_* (rpm_fpe.h) */
	/* rpm_perf_read()'s status and service generation for this sample:
	 * counts from a stale rpmd page, or from another daemon than a start
	 * snapshot's, are not counts to subtract. */
	int perf_err;
	uint64_t perf_gen;
};
int rpm_live_read(struct rpm_live *live, uint64_t max_age_ns);

/* The cumulative (never reset) counters of a node: bus from live, mesh
 * from the shared object (0 if it cannot be opened). */
void rpm_node_counts(unsigned node, const struct rpm_live *live, uint64_t out[RPM_NCOUNTERS]);

/* The node whose registers this process's struct rpm shows: its own once
 * it has joined the mesh, else node 0. */
unsigned rpm_view_node(void);

/* CPUs as hwloc enumerates them (>= 1). */
unsigned rpm_cpu_count(void);

/* Resets a node's registers as a write of RPM_CONTROL_RESET does. */
int rpm_reset_node(unsigned node);

#endif
