/*
 * The kernel's rule that core, thread and trace IMC are mutually exclusive
 * system-wide (arch/powerpc/perf/imc-pmu.c, imc_global_refc: the hardware
 * is either in accumulation mode or in trace mode, and core and thread
 * accumulation share the per-core engine): the first user of a domain holds
 * it, further users of the same domain share it, a user of another domain
 * gets -EBUSY while any holder lives (facilities.md §4(b)).
 *
 * Here the registry is a POSIX shared-memory object, /dev/shm/<name>-modes
 * (<name>: PAPI_HERITAGE_IMC_SHM, default papi-heritage-imc), mode 0666 so
 * that every account's processes see one another: one slot per holding
 * process {pid, domain}, a lock word holding the locker's pid, and slots or
 * a lock of a process that no longer exists taken back by the next user
 * (kill(pid, 0); EPERM counts as alive).  Within a process, sets share the
 * process's slot by reference count.  Nest is never exclusive.  Anyone may
 * write the object (like rpm's mesh object): a hostile local account can
 * claim a domain; the refusal then names its pid.
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
