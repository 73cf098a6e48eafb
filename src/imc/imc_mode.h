/*
 * The kernel's rule that core, thread and trace IMC are mutually exclusive
 * system-wide (arch/powerpc/perf/imc-pmu.c, imc_global_refc: the hardware
 * is either in accumulation mode or in trace mode, and core and thread
 * accumulation share the per-core engine): the first user of a domain holds
 * it, further users of the same domain share it, a user of another domain
 * gets -EBUSY while any holder lives (doc/facilities.md §4(b)).
 *
 * Here each holding process publishes a claim of its own, a POSIX
 * shared-memory object /dev/shm/<name>-mode-<pid>-<k> (<name>:
 * PAPI_HERITAGE_IMC_SHM, default papi-heritage-imc; k: the first of 8 names
 * it can take), mode 0644, filled under a private name and renamed into
 * place, removed at its last release: {domain, pid, the pid's start time}.
 * A claim counts while its pid lives with that start time and runs as the
 * object's owner: an account can claim only for its own processes, as it
 * could by running one, and cannot change or remove another account's
 * claims (/dev/shm is sticky).  A claimant publishes first, then looks for
 * live claims of other domains and withdraws if it finds one, so that two
 * processes claiming conflicting domains at once never both hold (both may
 * refuse).  Claims of dead processes are ignored, and removed by the next
 * claimant of their account.  Within a process, sets share its claim by
 * reference count.  Nest is never exclusive.
 *
 * It replaces one registry object for all, /dev/shm/<name>-modes, mode
 * 0666: any account could hold its lock for good, forge or wipe holders,
 * or corrupt it, and so refuse every account's core, thread and trace
 * events.
 */
#ifndef HERITAGE_IMC_MODE_H
#define HERITAGE_IMC_MODE_H

enum imc_domain_excl {
	IMC_EXCL_CORE = 1,
	IMC_EXCL_THREAD = 2,
	IMC_EXCL_TRACE = 3,
};

/* "core_imc", "thread_imc", "trace_imc". */
const char *imc_excl_name(enum imc_domain_excl d);
/* Holds d for this process (one more reference).  0, or -EBUSY with
 * "imc: thread_imc is in use by pid N: core_imc, thread_imc and trace_imc
 * exclude one another system-wide ...", or another negative errno when the
 * registry cannot be used (the reason). */
int imc_excl_acquire(enum imc_domain_excl d);
/* One reference less; the last one frees the process's slot. */
void imc_excl_release(enum imc_domain_excl d);

#endif
