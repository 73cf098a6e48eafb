/*
 * Page-trap backend extras beyond struct watch_backend_ops: how it is doing,
 * for tests, benchmarks and diagnostics.
 */
#ifndef HERITAGE_WATCH_PAGETRAP_H
#define HERITAGE_WATCH_PAGETRAP_H

#include <stdint.h>

struct watch_pagetrap_stats {
	uint64_t faults;        /* protection faults handled as ours */
	uint64_t int3_steps;    /* windows closed by an int3 after the instruction */
	uint64_t tf_steps;      /* windows closed by a TF single-step */
	uint64_t undecoded;     /* faults whose instruction capstone could not decode */
	uint64_t park_timeouts; /* threads that did not park in time (counts may be short) */
	uint64_t bounced_syscalls; /* libc calls redirected through a bounce buffer */
	uint64_t code_entries;  /* exec faults on watched code pages (code windows opened) */
	uint64_t code_steps;    /* single-step traps taken inside watched code pages */
};

void watch_pagetrap_stats(struct watch_pagetrap_stats *out);

/* The session being started on this thread is the probe's (watch_probe.c):
 * it must not register the exit handler in the program's place. */
void watch_pagetrap_probing(int on);

struct watch_request;
/* fits() (watch_pagetrap_fits.c), given the backend's ensure_init: 0, or
 * -errno with the reason in why. */
int watch_pagetrap_fits(const struct watch_request *req, int (*ensure_init)(void), char *why, size_t len);

#endif
