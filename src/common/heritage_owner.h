/*
 * The thread an event set's counting belongs to.  Every backend here counts
 * in the thread that called PAPI_start: its single-step traps, its
 * thread-local counters, its breakpoints, the signal directed at it.  From
 * another thread, a read or reset would act on that thread's state instead,
 * and a stop would leave the owner counting into an event set that may be
 * freed next.  PAPI asks the same of its users (each thread starts, reads
 * and stops its own event sets); here a call from the wrong thread is
 * refused with a message, never half done.
 */
#ifndef HERITAGE_OWNER_H
#define HERITAGE_OWNER_H

#include <sys/types.h>

struct heritage_owner {
	pid_t tid;        /* for "has it exited?" */
	const void *key;  /* its thread-local address: "is it me?" without a system call */
};

extern __thread char heritage_owner_key __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* The calling thread becomes the owner. */
void heritage_owner_set(struct heritage_owner *o);

/* One TLS address, on PAPI_read's path. */
static inline int heritage_owner_is_self(const struct heritage_owner *o)
{
	return o->key == &heritage_owner_key;
}

/* Has the owner thread exited (no thread of this process has its id)? */
int heritage_owner_gone(const struct heritage_owner *o);

/* 0 if the caller is the owner, or if the owner has exited and gone_ok
 * (the counting left nothing in that thread that a stop must undo); else
 * -EINVAL with a message: "<component>: <what> from thread N: the event set
 * was started by thread M ...".  what: "PAPI_stop", "PAPI_read", ... */
int heritage_owner_check(const struct heritage_owner *o, const char *component, const char *what, int gone_ok);

/* heritage_owner_check for PAPI_stop, saying what the stop must undo: 1 when
 * the caller is the owner (what the thread holds: its trap flag, its trap
 * mode), 0 when the owner has exited (it took that with it), or the
 * refusal's -EINVAL. */
int heritage_owner_stop(const struct heritage_owner *o, const char *component, int gone_ok);

#endif
