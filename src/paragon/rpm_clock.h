/*
 * The clock behind rpm_time and dclock(): CLOCK_BOOTTIME, read through the
 * TSC where the kernel trusts it (rpm_clock.c says how, rpm_model.h what it
 * guarantees).
 */
#ifndef HERITAGE_RPM_CLOCK_H
#define HERITAGE_RPM_CLOCK_H

#include <stdint.h>

#include "paragon/rpm_model.h"

/* ns since boot, never backwards within a thread, within ~10 us of
 * CLOCK_BOOTTIME.  Async-signal-safe once initialised (the first call, made
 * by rpm_map() before main, reads /proc/cpuinfo). */
uint64_t rpm_clock_ns(void);
/* CLOCK_BOOTTIME itself. */
uint64_t rpm_clock_boottime_ns(void);
/* "tsc" or "vdso": which one rpm_clock_ns() reads. */
const char *rpm_clock_source(void);

#endif
