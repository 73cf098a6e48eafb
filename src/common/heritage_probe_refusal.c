/*
 * What an account may do with perf_event_open, and how a probe says it was
 * refused (heritage_probe.h): the kernel's perf_event_paranoid, a seccomp
 * filter, and what would allow it.  A leaf under the probes, so that they
 * need nothing of the probe table that runs them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/heritage_probe.h"

int heritage_perf_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int v = 99;
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 99;
		fclose(f);
	}
	return v;
}

int heritage_seccomp_filtered(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	int mode = 0;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "Seccomp: %d", &mode) == 1)
			break;
	if (f)
		fclose(f);
	return mode == 2;
}

void heritage_probe_refused(struct heritage_probe_result *r, int e, const char *what, int max_paranoid)
{
	int paranoid = heritage_perf_paranoid();

	r->state = HERITAGE_PROBE_ABSENT;
	r->refused = 1;
	r->err = e == EACCES ? -EACCES : -EPERM;
	/* The kernel's own refusals are EACCES (perf_event_paranoid, and the
	 * Debian/Ubuntu level 3/4 patch); EPERM under a seccomp filter is the
	 * filter's, as container runtimes' default profiles return it. */
	if (e == EPERM && heritage_seccomp_filtered()) {
		snprintf(r->evidence, sizeof r->evidence, "%s: %s (EPERM from a seccomp filter: Seccomp 2 in "
		         "/proc/self/status)", what, strerror(e));
		snprintf(r->allowed_by, sizeof r->allowed_by, "a seccomp profile that allows perf_event_open "
		         "(e.g. docker run --security-opt seccomp=<profile>), then perf_event_paranoid <= %d or CAP_PERFMON",
		         max_paranoid);
		return;
	}
	snprintf(r->evidence, sizeof r->evidence, "%s: %s (%s; perf_event_paranoid is %d)", what, strerror(e),
	         e == EACCES ? "EACCES" : "EPERM", paranoid);
	if (paranoid <= max_paranoid) {
		/* The sysctl already allows it: a security module or a seccomp
		 * filter that returns EACCES refused it, not the kernel's perf
		 * policy. */
		snprintf(r->allowed_by, sizeof r->allowed_by, "CAP_PERFMON or root, or lifting the policy that refuses it "
		         "(perf_event_paranoid %d already allows it: a security module or a seccomp profile%s)", paranoid,
		         heritage_seccomp_filtered() ? ", and a seccomp filter is installed here" : "");
		return;
	}
	if (max_paranoid >= 2)
		snprintf(r->allowed_by, sizeof r->allowed_by, "perf_event_paranoid <= %d (sysctl "
		         "kernel.perf_event_paranoid=%d; 3 and 4 are Debian/Ubuntu's refuse-all levels), CAP_PERFMON, or root",
		         max_paranoid, max_paranoid);
	else
		snprintf(r->allowed_by, sizeof r->allowed_by, "perf_event_paranoid <= %d (sysctl "
		         "kernel.perf_event_paranoid=%d), CAP_PERFMON (Linux >= 5.8), or root", max_paranoid, max_paranoid);
}
