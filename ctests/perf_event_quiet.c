/*
 * perf_event_quiet: PAPI_library_init prints nothing, whatever perf_event_open
 * allows this process, and the perf_event component is enabled exactly when
 * its events can count (components/patches/papi-7.0.0-perf_event-quiet-probe.patch).
 *
 * usage: perf_event_quiet MODE [PATH/papi_component_avail]
 *   plain   as the account running the test
 *   nobody  as uid/gid 65534 with no groups (run as root; else skipped)
 *   eacces  perf_event_open fails with EACCES, as perf_event_paranoid 3/4
 *           makes it for an ordinary account
 *   eperm   perf_event_open fails with EPERM, as a container's seccomp
 *           profile makes it
 *   forced  as plain, with libpfm4 forced to the AMD Zen 4 core PMU
 *           (LIBPFM_FORCE_PMU=amd64_fam19h_zen4, which the test sets), as
 *           on an AMD family 25 guest without a virtual PMU, where libpfm4
 *           detects the core PMU from CPUID and perf_event reaches its
 *           exclude_guest probe, which finds no hardware event there;
 *           where libpfm4 finds no core PMU (as on the Intel Xeon guest
 *           this was written on), perf_event is disabled before that probe,
 *           and the other modes do not reach it
 * eacces and eperm install a seccomp filter on perf_event_open in this process
 * (and papi_component_avail, which inherits it): setting the sysctl would
 * change every process on the machine.
 *
 * Errors are reported with PAPI_VERBOSE set and PAPI's error level raised
 * before PAPI_library_init, as PAPI's own ctests raise it; stderr must stay
 * empty through initialisation and a measurement.  What perf_event should be
 * is derived here, from the same system calls and libpfm4's PMU table:
 *   - no perf event opens (the software task-clock refused): disabled, with
 *     a reason;
 *   - else, as PAPI 7.0.0 decides from libpfm4 (exactly one core PMU present,
 *     perf_event_paranoid not 3): enabled, perf::TASK-CLOCK counts (more than
 *     0 ns, at most the wall-clock time around it), and perf::INSTRUCTIONS is
 *     refused when the hardware event does not open here (no silent zero), or
 *     counts at least the loop's iterations when it does (forced: the forced
 *     table has no perf:: events, so its RETIRED_INSTRUCTIONS stands for
 *     the hardware event and the software one is not measured).
 * The given papi_component_avail, run under the same account and filter,
 * prints nothing on stderr and says "Disabled" for perf_event exactly when
 * perf_event is disabled here.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/perf_event.h>
#include <linux/seccomp.h>
#include <perfmon/pfmlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <papi.h>

#include "perf_opens.h"

#define LOOP_ITERATIONS 10000000L

static int saved_stderr = -1;

__attribute__((format(printf, 1, 2), noreturn)) static void fail(const char *fmt, ...)
{
	va_list ap;
	if (saved_stderr >= 0)
		dup2(saved_stderr, 2);
	fprintf(stderr, "FAIL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static void skip(const char *why)
{
	printf("%s\n", why);
	exit(77);
}

static int deny_perf_event_open(int err)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof f / sizeof f[0], f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
		return -errno;
	return 0;
}

/* The present core PMUs PAPI 7.0.0's perf_event takes as its default
 * (_pe_libpfm4_init: any but ix86arch; amd64_fam17h not when zen1 is there). */
static int libpfm4_default_pmus(void)
{
	int n = 0, zen1 = 0, fam17h = 0;
	if (pfm_initialize() != PFM_SUCCESS)
		return 0;
	for (int i = 0;; i++) {
		pfm_pmu_info_t info;
		memset(&info, 0, sizeof info);
		info.size = sizeof info;
		int r = pfm_get_pmu_info((pfm_pmu_t)i, &info);
		if (r == PFM_ERR_INVAL)
			break;
		if (r != PFM_SUCCESS || !info.name || !info.is_present || info.type != PFM_PMU_TYPE_CORE)
			continue;
		if (!strcmp(info.name, "amd64_fam17h_zen1"))
			zen1 = 1;
		if (!strcmp(info.name, "amd64_fam17h"))
			fam17h = 1;
		if (strcmp(info.name, "ix86arch"))
			n++;
	}
	return n - (zen1 && fam17h);
}

static int read_paranoid(void)
{
	int level = -9;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	if (f) {
		if (fscanf(f, "%d", &level) != 1)
			level = -9;
		fclose(f);
	}
	return level;
}

static uint64_t ns_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void busy_loop(void)
{
	for (volatile long i = 0; i < LOOP_ITERATIONS; i++)
		;
}

/* Everything written to fd 2 since the capture began. */
static char captured[4096];
static const char *stderr_so_far(int fd)
{
	ssize_t n = pread(fd, captured, sizeof captured - 1, 0);
	captured[n > 0 ? n : 0] = '\0';
	return captured;
}

static int temp_file(void)
{
	char path[512];
	snprintf(path, sizeof path, "%s/perf_event_quiet.XXXXXX", getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : P_tmpdir);
	int fd = mkstemp(path);
	if (fd < 0)
		fail("mkstemp: %s", strerror(errno));
	unlink(path);
	return fd;
}

static void check_component_avail(const char *path, int disabled)
{
	if (access(path, X_OK) != 0) {
		/* e.g. uid 65534 and a build tree in a private home directory:
		 * the case gives it a copy it can run (tests/account-lib.sh). */
		static char why[1024];
		snprintf(why, sizeof why, "perf_event_quiet: %s cannot be run by uid %d (%s): papi_component_avail not checked",
		         path, (int)geteuid(), strerror(errno));
		skip(why);
	}
	int out = temp_file(), err = temp_file();
	pid_t pid = fork();
	if (pid == 0) {
		dup2(out, 1);
		dup2(err, 2);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail("%s did not exit 0", path);
	if (*stderr_so_far(err))
		fail("%s printed on stderr: %s", path, captured);
	/* "Name:   perf_event ..." then, when disabled, "   \-> Disabled: why". */
	static char text[65536];
	ssize_t n = pread(out, text, sizeof text - 1, 0);
	text[n > 0 ? n : 0] = '\0';
	char *at = strstr(text, "Name:   perf_event ");
	if (!at)
		fail("%s lists no perf_event component", path);
	char *next = strchr(at, '\n');
	int says_disabled = next && !strncmp(next + 1, "   \\-> Disabled: ", 17);
	if (says_disabled != disabled)
		fail("%s says perf_event is %s", path, says_disabled ? "disabled" : "enabled");
	printf("%s: stderr empty, perf_event %s\n", path, disabled ? "disabled" : "enabled");
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3)
		fail("usage: perf_event_quiet plain|nobody|eacces|eperm|forced [PATH/papi_component_avail]");
	const char *mode = argv[1];
	int forced = !strcmp(mode, "forced");

	if (forced) {
		/* Before libpfm4 is initialised, here and in PAPI. */
		setenv("LIBPFM_FORCE_PMU", "amd64_fam19h_zen4", 1);
	} else if (!strcmp(mode, "nobody")) {
		if (geteuid() != 0)
			skip("perf_event_quiet nobody: not root, so it cannot become uid 65534 ('plain' runs as this account)");
		if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
			fail("cannot become uid/gid 65534: %s", strerror(errno));
	} else if (!strcmp(mode, "eacces") || !strcmp(mode, "eperm")) {
		int r = deny_perf_event_open(!strcmp(mode, "eacces") ? EACCES : EPERM);
		if (r == -EINVAL || r == -ENOSYS)
			skip("perf_event_quiet: this kernel has no seccomp filters, so perf_event_open cannot be refused "
			     "to this process alone");
		if (r)
			fail("cannot install the seccomp filter: %s", strerror(-r));
	} else if (strcmp(mode, "plain")) {
		fail("unknown mode %s", mode);
	}

	int sw = perf_opens(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
	int hw = perf_opens(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
	int paranoid = read_paranoid();
	int pmus = libpfm4_default_pmus();
	int want_enabled = sw == 0 && pmus == 1 && paranoid != 3;
	printf("as uid %d: perf_event_open software %s, hardware %s; perf_event_paranoid %d; libpfm4 default PMUs %d: "
	       "perf_event should be %s\n",
	       (int)geteuid(), sw ? strerror(sw) : "opens", hw ? strerror(hw) : "opens", paranoid, pmus,
	       want_enabled ? "enabled" : "disabled");
	if (forced && pmus != 1)
		skip("perf_event_quiet forced: this libpfm4 has no amd64_fam19h_zen4 PMU to force");
	if (strcmp(mode, "plain") && strcmp(mode, "nobody") && !forced && sw != (!strcmp(mode, "eacces") ? EACCES : EPERM))
		fail("the seccomp filter did not refuse perf_event_open (%s)", sw ? strerror(sw) : "it opened");

	/* From here until the measurement is done, fd 2 is a file we read. */
	fflush(stderr);
	saved_stderr = dup(2);
	int cap = temp_file();
	dup2(cap, 2);
	setenv("PAPI_VERBOSE", "1", 1);
	if (PAPI_set_debug(PAPI_VERB_ECONT) != PAPI_OK)
		fail("PAPI_set_debug failed");
	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	if (rc != PAPI_VER_CURRENT)
		fail("PAPI_library_init: %s", PAPI_strerror(rc));
	if (*stderr_so_far(cap))
		fail("PAPI_library_init printed on stderr: %s", captured);

	int cidx = PAPI_get_component_index("perf_event");
	const PAPI_component_info_t *ci = cidx >= 0 ? PAPI_get_component_info(cidx) : NULL;
	if (!ci)
		fail("no perf_event component in this libpapi");
	if (want_enabled && ci->disabled)
		fail("perf_event is disabled (%s) though its events can count here", ci->disabled_reason);
	if (!want_enabled && !ci->disabled)
		fail("perf_event is enabled though none of its events can count here");
	if (ci->disabled && !ci->disabled_reason[0])
		fail("perf_event is disabled without a reason");

	if (ci->disabled) {
		int es = PAPI_NULL;
		if (PAPI_create_eventset(&es) != PAPI_OK)
			fail("PAPI_create_eventset failed");
		if (PAPI_add_named_event(es, "perf::TASK-CLOCK") == PAPI_OK)
			fail("perf::TASK-CLOCK was added to a set though perf_event is disabled");
		if (*stderr_so_far(cap))
			fail("PAPI printed on stderr: %s", captured);
		dup2(saved_stderr, 2);
		printf("perf_event disabled: %s\n", ci->disabled_reason);
	} else if (forced) {
		/* Where the instructions event opens, the forced table's events
		 * would be encoded for another CPU than this one: only the refusal
		 * is checked. */
		int es = PAPI_NULL;
		PAPI_create_eventset(&es);
		rc = PAPI_add_named_event(es, "RETIRED_INSTRUCTIONS");
		if (*stderr_so_far(cap))
			fail("PAPI printed on stderr: %s", captured);
		dup2(saved_stderr, 2);
		if (hw && rc == PAPI_OK)
			fail("RETIRED_INSTRUCTIONS was accepted though the hardware event does not open here (%s)", strerror(hw));
		printf("RETIRED_INSTRUCTIONS: %s\n", hw ? "refused, as the hardware event does not open" :
		       "not checked, the hardware event opens here");
	} else {
		int es = PAPI_NULL;
		long long ns = 0;
		if (PAPI_create_eventset(&es) != PAPI_OK || PAPI_add_named_event(es, "perf::TASK-CLOCK") != PAPI_OK)
			fail("perf::TASK-CLOCK cannot be added though perf_event is enabled");
		uint64_t t0 = ns_now();
		if (PAPI_start(es) != PAPI_OK)
			fail("PAPI_start(perf::TASK-CLOCK) failed");
		busy_loop();
		if (PAPI_stop(es, &ns) != PAPI_OK)
			fail("PAPI_stop(perf::TASK-CLOCK) failed");
		uint64_t wall = ns_now() - t0;
		if (*stderr_so_far(cap))
			fail("PAPI printed on stderr: %s", captured);
		dup2(saved_stderr, 2);
		if (ns <= 0 || (uint64_t)ns > wall)
			fail("perf::TASK-CLOCK counted %lld ns in a wall-clock span of %llu ns", ns, (unsigned long long)wall);
		printf("perf::TASK-CLOCK %lld ns of %llu ns wall-clock\n", ns, (unsigned long long)wall);

		/* A hardware event: refused where it cannot open, never a silent 0. */
		int es2 = PAPI_NULL;
		long long ins = 0;
		PAPI_create_eventset(&es2);
		rc = PAPI_add_named_event(es2, "perf::INSTRUCTIONS");
		if (hw && rc == PAPI_OK)
			fail("perf::INSTRUCTIONS was accepted though the hardware event does not open here (%s)", strerror(hw));
		if (!hw) {
			if (rc != PAPI_OK || PAPI_start(es2) != PAPI_OK)
				fail("perf::INSTRUCTIONS opens here but PAPI refused it");
			busy_loop();
			PAPI_stop(es2, &ins);
			if (ins < LOOP_ITERATIONS)
				fail("perf::INSTRUCTIONS counted %lld, fewer than the loop's %ld iterations", ins, LOOP_ITERATIONS);
		}
		printf("perf::INSTRUCTIONS: %s\n", hw ? "refused, as the hardware event does not open" : "counted");
	}
	if (argc == 3)
		check_component_avail(argv[2], ci->disabled != 0);
	printf("perf_event_quiet %s: PASSED\n", mode);
	return 0;
}
