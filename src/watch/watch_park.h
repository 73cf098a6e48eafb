/*
 * Parking the other threads of the process while one thread has watched pages
 * open.
 *
 * Page protection is process-wide: while thread A steps one instruction with a
 * watched page open, thread B's accesses to that page would go unseen.  The
 * parker sends every other thread a park signal (tgkill) and waits, bounded,
 * until each has acknowledged from inside the park handler; the parked threads
 * sleep on a futex until released.  Only the holder of the page-trap window lock
 * parks, so two parkers never wait for each other.
 *
 * All entry points are async-signal-safe except init and the fork hook: raw
 * system calls only (getdents64 over a /proc/self/task descriptor opened once),
 * state in static pages that are never watched.
 */
#ifndef HERITAGE_WATCH_PARK_H
#define HERITAGE_WATCH_PARK_H

#include <signal.h>
#include <stdint.h>

/* SIGRTMIN+n is computed at run time by glibc; this is its usual value + 5. */
#define WATCH_PARK_SIGNAL_OFFSET 5
int watch_park_signal(void);

/* Open /proc/self/task; 0 or -errno.  Not async-signal-safe. */
int watch_park_init(void);

/* In a fork child: the descriptor names the parent's task list; reopen it and
 * forget any park in progress. */
void watch_park_atfork_child(void);

/* Park every thread except the caller (self = its tid).  Returns the number of
 * threads parked; threads that did not acknowledge within the time bound (they
 * block the park signal, or are stuck in the kernel) are counted in
 * watch_park_timeouts() and left running. */
int watch_park_others(int self);
void watch_park_release(void);

/* Parks every other thread with fn run by each in its park handler (before it
 * acknowledges), then releases them.  With the window lock held, thread
 * context.  Returns the number of threads that ran it.  uctx: the handler's. */
int watch_park_run_in_others(int self, void (*fn)(void *uctx));

/* The SA_SIGINFO handler to install for watch_park_signal(), with its
 * sa_mask passed through watch_park_handler_mask. */
void watch_park_handler(int sig, siginfo_t *info, void *uctx);
/* Adds the signal that marks a thread as inside the park handler, from the
 * kernel's delivery to its rt_sigreturn (watch_park_blocked). */
void watch_park_handler_mask(sigset_t *mask);

/* Targets found blocking the park signal (not waited for) since start. */
uint64_t watch_park_unparkable(void);
/* Threads that failed to acknowledge a park in time since start-up. */
uint64_t watch_park_timeouts(void);
/* Whether thread tid blocks the park signal now: no park reaches it.  Raw
 * system calls (async-signal-safe), after watch_park_init. */
int watch_park_blocked(int tid);
/* Tests: how long a park waits for a thread (ns, 0 for at once, -1 for the
 * default 200 ms); returns the bound before. */
int64_t watch_park_set_timeout_ns(int64_t ns);

void watch_park_state_range(uintptr_t *lo, uintptr_t *hi);

#endif
