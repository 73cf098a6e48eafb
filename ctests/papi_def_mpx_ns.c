/*
 * papi_def_mpx_ns: PAPI_set_opt(PAPI_DEF_MPX_NS) either sets the default
 * multiplexing time slice or refuses it with an error code, and never
 * crashes (issue 20, item 5).  PAPI 7.0.0 read the option's event set from
 * an uninitialised union member on that path (papi.c, PAPI_set_opt) and
 * segfaulted; components/patches/papi-7.0.0-def-mpx-ns.patch fixes it.
 * Each call runs in a child, so a crash is reported as what it is.
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heritage_test.h"

/* 0: the call returned (its code in *rc); else the signal that killed it. */
static int set_def_mpx_ns(int ns, int *rc)
{
	int fds[2];
	if (pipe(fds) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		PAPI_option_t opt;
		memset(&opt, 0, sizeof opt);
		opt.multiplex.ns = ns;
		int r = PAPI_set_opt(PAPI_DEF_MPX_NS, &opt);
		if (write(fds[1], &r, sizeof r) != (ssize_t)sizeof r)
			_exit(2);
		_exit(0);
	}
	close(fds[1]);
	int status = 0;
	waitpid(pid, &status, 0);
	ssize_t n = read(fds[0], rc, sizeof *rc);
	close(fds[0]);
	if (WIFSIGNALED(status))
		return WTERMSIG(status);
	return n == (ssize_t)sizeof *rc ? 0 : -1;
}

int main(void)
{
	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	if (rc != PAPI_VER_CURRENT) {
		fprintf(stderr, "PAPI_library_init: %d (%s)\n", rc, PAPI_strerror(rc));
		return 1;
	}
	/* Several times: the crash depended on what the stack held. */
	for (int i = 0; i < 20; i++) {
		int code = 0, sig = set_def_mpx_ns(100000 + i, &code);
		EXPECT(sig == 0, "PAPI_set_opt(PAPI_DEF_MPX_NS) %s %d", sig > 0 ? "was killed by signal" : "failed:", sig);
		if (sig)
			break;
		/* perf_event (component 0) answers PAPI_ENOSUPP: per-set time
		 * slices are not supported there; any answer but a crash and a
		 * code outside PAPI's is acceptable. */
		EXPECT(code == PAPI_OK || (code < 0 && code >= -PAPI_NUM_ERRORS), "returned %d", code);
		if (i == 0)
			printf("PAPI_set_opt(PAPI_DEF_MPX_NS, 100000 ns): %d (%s)\n", code, PAPI_strerror(code));
	}
	/* A negative time slice is the caller's mistake. */
	int code = 0;
	EXPECT(set_def_mpx_ns(-1, &code) == 0 && code == PAPI_EINVAL, "ns = -1: %d, want PAPI_EINVAL", code);
	return heritage_test_done("papi_def_mpx_ns");
}
