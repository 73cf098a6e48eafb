/*
 * Which backend counts imc's accumulation events in this process
 * (doc/architecture.md, "Probes"): the real IMC PMUs of a POWER machine
 * through perf_event (imc_sysfs.h), or the engine that plays the microcode
 * here (imc_engine.h).
 * PAPI_HERITAGE_IMC_BACKEND=auto (default) takes perf when the sysfs root
 * (PAPI_HERITAGE_IMC_SYSFS_ROOT, else /) shows IMC PMUs, else the engine;
 * =perf insists (events then fail with the reason where there are none);
 * =engine never looks.  Trace records always come from the sampler
 * (imc_trace.h): the kernel's trace_imc hands its records to perf only.
 */
#ifndef HERITAGE_IMC_BACKEND_H
#define HERITAGE_IMC_BACKEND_H

#include <stddef.h>

#include "imc/imc_catalog.h"
#include "imc/imc_sysfs.h"

enum imc_backend_kind { IMC_BACKEND_ENGINE, IMC_BACKEND_PERF };

/* Chosen once per process.  0 and the kind (with the PMUs found, for
 * perf), or -EINVAL for a bad setting, with the message; why says what was
 * chosen and why ("" when why is NULL). */
int imc_backend_get(enum imc_backend_kind *kind, const struct imc_sysfs **pmus, char *why, size_t len);

/* The real PMU and event behind catalog entry e (unit u), when the backend
 * is perf: 0, or -ENOENT (no such PMU or event in sysfs) / the account's
 * refusal (imc_sysfs_usable), with why. */
int imc_backend_perf_event(const struct imc_cat_unit *u, const struct imc_cat_entry *e,
                           const struct imc_sysfs_pmu **pmu, const struct imc_sysfs_event **ev, char *why,
                           size_t len);

#endif
