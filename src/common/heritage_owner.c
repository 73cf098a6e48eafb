#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/heritage_error.h"
#include "common/heritage_owner.h"

__thread char heritage_owner_key __attribute__((tls_model("initial-exec")));

void heritage_owner_set(struct heritage_owner *o)
{
	o->tid = (pid_t)syscall(SYS_gettid);
	o->key = &heritage_owner_key;
}

int heritage_owner_gone(const struct heritage_owner *o)
{
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
