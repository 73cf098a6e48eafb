/*
 * Backend choice, written once for every facility: each facility has one
 * const table of its backends, in priority order, each naming the
 * mechanisms it needs (heritage_probe.h) and carrying the facility's own
 * ops.  auto takes the first backend whose mechanisms work and that fits the
 * request, and says why it passed over the others; a forced backend whose
 * mechanism is dead or absent is refused with the probe's evidence
 * (-ENOTSUP, or -EPERM when the account is the reason), never started to
 * count nothing.
 */
#ifndef HERITAGE_BACKEND_H
#define HERITAGE_BACKEND_H

#include <stddef.h>

#include "common/heritage_probe.h"

struct heritage_backend {
	const char *name;
	unsigned needs;    /* HERITAGE_MECH_BIT()s, all of which must work */
	const void *ops;   /* the facility's */
};

/* Does the request fit backend b (capacity, kinds of counts)?  0, or
 * -errno with why; -EINVAL means the request is bad for every backend. */
typedef int (*heritage_fits_fn)(const struct heritage_backend *b, const void *req, char *why, size_t len);

/* Index of the backend called name in table, -1 if none. */
int heritage_backend_find(const struct heritage_backend *table, unsigned n, const char *name);

/* 0 if every mechanism b needs works; else its error (-ENOTSUP, -EPERM or
 * -EACCES) and why ("breakpoint is dead here: opened, counted 0 of 20
 * accesses").  Probes what it has to. */
int heritage_backend_usable(const struct heritage_backend *b, char *why, size_t len);

/* The backend to use: forced >= 0 is table[forced], checked for its
 * mechanisms then fits; forced < 0 (auto) is the first of
 * table[from..n) that is usable and fits.  *out gets its index.  On failure
 * why lists every backend and why it was passed over; the error is -EINVAL
 * for a bad request, else -EPERM when a refusal to this account kept the
 * best one out, else the last backend's. */
int heritage_backend_choose(const struct heritage_backend *table, unsigned n, int forced, unsigned from,
                            heritage_fits_fn fits, const void *req, unsigned *out, char *why, size_t len);

/* 0 if some backend of table can count here, else the error and why,
 * for init_component's disabled_reason.  Tries the table from its end:
 * the last resorts are the software ones, whose probes are the cheapest. */
int heritage_backend_any_usable(const struct heritage_backend *table, unsigned n, char *why, size_t len);

/* What this machine and account take away from table, for the component's
 * description in papi_component_avail: "no breakpoint backend (breakpoint
 * refused), no pmu backend (pmu absent)" for each backend a needed mechanism
 * keeps out; "" when
 * every backend can count.  Probes what it has to. */
void heritage_backend_limits(const struct heritage_backend *table, unsigned n, char *buf, size_t len);

/* The same for a set of mechanisms used directly: "perf_cpu refused". */
void heritage_mechs_limits(unsigned mechs, char *buf, size_t len);

/* The mechanisms every backend of table needs, and the backends of one
 * mechanism (for listings): "itanium2/breakpoint". */
unsigned heritage_backend_needs_any(const struct heritage_backend *table, unsigned n);

#endif
