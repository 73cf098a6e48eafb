/*
 * Overflow delivered by the backends themselves (watch.h, struct
 * watch_overflow): counted here in the backend's counting path, delivered
 * by a signal to the counting thread.  A signal rather than a call: the
 * page-trap backend counts inside its SIGSEGV handler, where a handler of
 * the application that touched a watched page would fault again with
 * SIGSEGV blocked (the kernel kills the process); the signal stays pending
 * while the backend holds async signals out and is taken once the access
 * is complete.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdatomic.h>

#include "watch/watch.h"
#include "watch/watch_sys.h"

void watch_overflow_arm(struct watch_overflow *o)
{
	for (int f = 0; f < WATCH_NFIELDS; f++)
		o->left[f] = o->threshold[f];
	atomic_store(&o->pending, 0);
	atomic_store(&o->pending_pc, 0);
}

void watch_overflow_note(struct watch_overflow *o, enum watch_field f, uint64_t n, uintptr_t pc)
{
	uint64_t t = o->threshold[f];
	if (!t || !n)
		return;
	if (n < o->left[f]) {
		o->left[f] -= n;
		return;
	}
	/* A rep-prefixed instruction may pass several thresholds at once: one
	 * delivery, as one interrupt would be, and the count goes on. */
	uint64_t over = n - o->left[f];
	o->left[f] = t - over % t;
	atomic_store(&o->pending_pc, pc);
	atomic_fetch_or(&o->pending, 1u << f);
	watch_sys_tgkill(watch_sys_getpid(), watch_sys_gettid(), o->signal); /* raw: errno untouched */
}

void watch_overflow_note_access(struct watch_overflow *o, int load, int store, int misaligned, uint64_t n,
                                uintptr_t pc)
{
	if (load)
		watch_overflow_note(o, WATCH_FIELD_LOADS, n, pc);
	if (store)
		watch_overflow_note(o, WATCH_FIELD_STORES, n, pc);
	if (load && misaligned)
		watch_overflow_note(o, WATCH_FIELD_MISALIGNED_LOADS, n, pc);
	if (store && misaligned)
		watch_overflow_note(o, WATCH_FIELD_MISALIGNED_STORES, n, pc);
}

uint32_t watch_overflow_take(struct watch_overflow *o, uintptr_t *pc)
{
	*pc = atomic_load(&o->pending_pc);
	return atomic_exchange(&o->pending, 0);
}
