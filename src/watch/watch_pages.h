/*
 * The page-trap backend's protected pages (watch_pages.c): the window lock,
 * the protected runs, /proc/self/maps.
 */
#ifndef HERITAGE_WATCH_PAGES_H
#define HERITAGE_WATCH_PAGES_H

#include <stdint.h>

#include "watch.h"
#include "watch_bounce.h"

#define PT_MAX_RUNS 256

/* The window lock.  Recursive for its holder: a holder that faults (its
 * caller's session struct on a watched page, say) opens a nested window
 * instead of deadlocking.  Waiters sleep on a futex and can be parked while
 * they wait. */
void watch_pages_lock(int self);
void watch_pages_unlock(void);
int watch_pages_lock_owner(void);
/* From ordinary code: asynchronous signals blocked while it is held. */
uint64_t watch_pages_thread_lock(void);
void watch_pages_thread_unlock(uint64_t old_mask);
/* The exit handler's bounded wait for it; its reset (forked child: waiters
 * too). */
void watch_pages_lock_for_exit(int self);
void watch_pages_lock_reset(int waiters);

/* The run list of data pages (code = 0) or of code pages (code = 1). */
const struct watch_run *watch_pages_runs(int code, unsigned *n);
const struct watch_run *watch_pages_run_in(int code, uintptr_t addr);
const struct watch_run *watch_pages_run_at(uintptr_t addr);
const struct watch_run *watch_pages_code_run_at(uintptr_t addr);
/* Without the lock (seqlock reads). */
int watch_pages_protected(int code, uintptr_t addr);
unsigned watch_pages_overlapping_in(int code, uintptr_t lo, uintptr_t hi, struct watch_run *out, unsigned max);
unsigned watch_pages_overlapping(uintptr_t lo, uintptr_t hi, struct watch_run *out, unsigned max);
int watch_pages_code_overlap(uintptr_t lo, uintptr_t hi);
/* The number of data runs, for the bounce buffers' fast path. */
const _Atomic unsigned *watch_pages_count(void);
uint64_t watch_pages_unprotect_epoch(void);

/* With the lock held. */
int watch_pages_protect(int code, const struct watch_interval *iv, unsigned nint);
void watch_pages_release(int code, const struct watch_interval *need, unsigned nneed);
void watch_pages_unprotect_all(void);
unsigned watch_merge_intervals(struct watch_interval *iv, unsigned n);

struct watch_map_entry {
	uintptr_t lo, hi;
	int prot;
	const char *name; /* NUL-terminated, valid during the callback */
};
/* Calls fn for every mapping; stops when fn returns non-zero and returns
 * that value.  With the lock held. */
int watch_pages_maps(int (*fn)(const struct watch_map_entry *, void *), void *arg);

void watch_pages_state_range(uintptr_t *lo, uintptr_t *hi);

#endif
