#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/heritage_error.h"
#include "common/heritage_owner.h"

__thread char heritage_owner_key __attribute__((tls_model("initial-exec")));

/* Owners that have exited, recorded by a thread-specific-data destructor.
 * pthread_join returns once the kernel cleared the thread's tid, which is
 * before the task is gone: tgkill(tid, 0) still succeeded then, and a
 * PAPI_stop right after the join was told the owner was alive
 * (foreign_thread itanium2_exited failed 1 run in a few under load).  The
 * destructor runs in the exiting thread before the join returns. */
#define EXITED_RING 64
static _Atomic pid_t exited[EXITED_RING];
static _Atomic unsigned exited_next;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void record_exit(void *unused)
{
	(void)unused;
	unsigned i = atomic_fetch_add(&exited_next, 1) % EXITED_RING;
	atomic_store(&exited[i], (pid_t)syscall(SYS_gettid));
}

static void make_exit_key(void)
{
	pthread_key_create(&exit_key, record_exit);
}

void heritage_owner_set(struct heritage_owner *o)
{
	o->tid = (pid_t)syscall(SYS_gettid);
	o->key = &heritage_owner_key;
	pthread_once(&exit_key_once, make_exit_key);
	/* A tid is reused once its thread is gone: this one is alive again. */
	for (unsigned i = 0; i < EXITED_RING; i++) {
		pid_t t = o->tid;
		atomic_compare_exchange_strong(&exited[i], &t, 0);
	}
	pthread_setspecific(exit_key, (void *)1);
}

int heritage_owner_gone(const struct heritage_owner *o)
{
	for (unsigned i = 0; i < EXITED_RING; i++)
		if (atomic_load(&exited[i]) == o->tid)
			return 1;
	return syscall(SYS_tgkill, getpid(), o->tid, 0) != 0 && errno == ESRCH;
}

int heritage_owner_check(const struct heritage_owner *o, const char *component, const char *what, int gone_ok)
{
	if (heritage_owner_is_self(o))
		return 0;
	if (heritage_owner_gone(o))
		return gone_ok ? 0 : heritage_fail(-EINVAL, "%s: %s from thread %d: the event set was started by thread %d, which "
		                     "has exited without stopping it; its counts went with it", component, what,
		                     (int)syscall(SYS_gettid), (int)o->tid);
	return heritage_fail(-EINVAL, "%s: %s from thread %d: the event set was started by thread %d and counts "
	                     "only that thread; call %s there (PAPI: each thread starts, reads and stops its own "
	                     "event sets)", component, what, (int)syscall(SYS_gettid), (int)o->tid, what);
}

int heritage_owner_stop(const struct heritage_owner *o, const char *component, int gone_ok)
{
	int err = heritage_owner_check(o, component, "PAPI_stop", gone_ok);
	return err ? err : heritage_owner_is_self(o);
}
