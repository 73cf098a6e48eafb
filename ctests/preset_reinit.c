/*
 * preset_reinit: PAPI_library_init, PAPI_shutdown, three times over, as an
 * ordinary account that perf_event_open refuses, where PAPI loads presets
 * (components/patches/papi-7.0.0-preset-cleanup-reinit.patch).
 *
 * usage: tests/no-perf --errno=EPERM|EACCES preset_reinit
 *
 * perf_event_open is refused by tests/no-perf's seccomp filter, as a
 * container's profile (EPERM) or perf_event_paranoid 3/4 (EACCES) refuse
 * it (the test skips where it opens); run as root, the process becomes
 * uid/gid 65534 with no groups, so it is the account our users have.  The
 * perf_event component loads its presets before it finds perf refused and
 * disables itself; PAPI 7.0.0's PAPI_shutdown then left their terms behind
 * and the second PAPI_shutdown freed them again (glibc: "free(): double
 * free detected in tcache 2", an abort, so a failure of this test).
 *
 * Presets load only where libpfm4 knows the core PMU and PAPI's
 * papi_events.csv has a table for it.  Where this machine's do not (a guest
 * without a PMU libpfm4 knows), the test forces libpfm4 to AMD family 23
 * model 1's PMU (LIBPFM_FORCE_PMU=amd64_fam17h_zen1), the CPU the double
 * free was first seen on, so that it still runs; it says which it used.
 * Where no preset loads even so (perf_event disabled before it loads them,
 * as PAPI 7.0.0 disables it at perf_event_paranoid 3), the test skips,
 * saying why: there is nothing to free twice.  PAPI keeps a component that
 * its init disabled disabled through PAPI_shutdown and does not initialise
 * it again, so a later init finds none of perf_event's presets, or, where
 * perf_event is initialised again, the same number as the first.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <papi.h>

#include "perf_opens.h"

#define FORCED_PMU "amd64_fam17h_zen1"
#define ROUNDS 3

/* Presets whose definition has terms: the ones PAPI loaded from its table. */
static int presets_with_terms(void)
{
	int n = 0, code = PAPI_PRESET_MASK;
	if (PAPI_enum_event(&code, PAPI_ENUM_FIRST) != PAPI_OK)
		return 0;
	do {
		PAPI_event_info_t info;
		if (PAPI_get_event_info(code, &info) == PAPI_OK && info.count > 0)
			n++;
	} while (PAPI_enum_event(&code, PAPI_ENUM_EVENTS) == PAPI_OK);
	return n;
}

static int init_and_count(void)
{
	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	if (rc != PAPI_VER_CURRENT) {
		printf("FAIL: PAPI_library_init: %d (%s)\n", rc, PAPI_strerror(rc));
		exit(1);
	}
	return presets_with_terms();
}

/* Presets this machine loads, seen from a child so that this process's
 * libpfm4 is still free to take LIBPFM_FORCE_PMU. */
static int presets_here(void)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		int n = init_and_count();
		_exit(n > 255 ? 255 : n);
	}
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

int main(void)
{
	if (getuid() == 0 && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) {
		printf("FAIL: cannot become uid/gid 65534: %s\n", strerror(errno));
		return 1;
	}
	int err = perf_opens(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
	if (!err) {
		printf("SKIPPED: perf_event_open is not refused to this process (run it under tests/no-perf)\n");
		return 77;
	}

	const char *table = "this machine's";
	int here = presets_here();
	if (here < 0) {
		printf("FAIL: the child that counted this machine's presets died (a double free on its first init?)\n");
		return 1;
	}
	if (here == 0) {
		setenv("LIBPFM_FORCE_PMU", FORCED_PMU, 1);
		table = "libpfm4's " FORCED_PMU " (forced: no preset loads with this machine's PMU)";
	}

	int first = -1;
	for (int round = 0; round < ROUNDS; round++) {
		int n = init_and_count();
		if (round == 0 && n == 0) {
			/* perf_event disabled before it loads its presets (PAPI 7.0.0
			 * does so at perf_event_paranoid 3, as Debian's and Ubuntu's
			 * kernels set it): no preset to free twice. */
			int cidx = PAPI_get_component_index("perf_event");
			const PAPI_component_info_t *pe = cidx >= 0 ? PAPI_get_component_info(cidx) : NULL;
			printf("SKIPPED: no preset loads here, even from %s: perf_event %s\n", table,
			       pe ? (pe->disabled ? pe->disabled_reason : "enabled") : "is not in this PAPI");
			PAPI_shutdown();
			return 77;
		}
		PAPI_shutdown();
		printf("init %d: %d presets with terms\n", round + 1, n);
		fflush(stdout);
		if (round == 0)
			first = n;
		if (n != 0 && n != first) {
			printf("FAIL: init %d found %d presets with terms, the first %d\n", round + 1, n, first);
			return 1;
		}
	}
	printf("uid %d, perf_event_open refused (%s), presets from %s: %d at the first of %d inits and shutdowns\n",
	       (int)getuid(), strerror(err), table, first, ROUNDS);
	printf("preset_reinit: PASSED\n");
	return 0;
}
