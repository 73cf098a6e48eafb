#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <pthread.h>

#include "common/heritage_backend.h"
#include "paragon/rpm_model.h"
#include "paragon/rpm_perf.h"

static struct {
	int opened;
	unsigned ncpus;
	int nmembers;                          /* counts in each CPU's group */
	int slot[RPM_PERF_NCOUNTS];            /* position in the group, or -1 */
	int err[RPM_PERF_NCOUNTS];
	char why[RPM_PERF_NCOUNTS][768];
	int leader[RPM_MAX_CPUS];
	int tp_fd[RPM_MAX_CPUS];               /* raw_syscalls:sys_enter, alone */
} F;

/* Count k system-wide on one CPU, in group (or alone with -1).  A refusal
 * on one CPU is recorded for the whole count: a partial sum would pass for
 * the whole. */
static int open_count(int k, unsigned type, unsigned long long config, unsigned cpu, int group)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = type;
	a.config = config;
	if (group >= 0 || type == PERF_TYPE_SOFTWARE)
		a.read_format = PERF_FORMAT_GROUP;
	int fd = (int)syscall(SYS_perf_event_open, &a, -1, (int)cpu, group, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		F.err[k] = -errno;
		snprintf(F.why[k], sizeof F.why[k],
		         "perf_event_open (system-wide on CPU %u): %s (needs perf_event_paranoid <= 0 or root)", cpu,
		         strerror(errno));
	}
	return fd;
}

int rpm_parse_tracefs_mount(const char *mounts, char *buf, unsigned len)
{
	/* "<source> <mountpoint> <fstype> ..." per line. */
	for (const char *l = mounts; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char dir[512], type[64];
		if (sscanf(l, "%*s %511s %63s", dir, type) == 2 && strcmp(type, "tracefs") == 0 &&
		    strlen(dir) < len) {
			strcpy(buf, dir);
			return 0;
		}
	}
	return -1;
}

/* raw_syscalls:sys_enter's tracepoint id, from tracefs; 0 with a reason. */
static long syscall_tracepoint(char *why, size_t len)
{
	static char mounts[65536];
	char dir[512], path[600];
	int fd = open("/proc/self/mounts", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, mounts, sizeof mounts - 1) : -1;
	if (fd >= 0)
		close(fd);
	mounts[n > 0 ? n : 0] = '\0';
	if (rpm_parse_tracefs_mount(mounts, dir, sizeof dir) != 0) {
		snprintf(why, len, "tracefs is not mounted, so raw_syscalls:sys_enter has no id to open "
		                   "(mount -t tracefs nodev /sys/kernel/tracing)");
		return 0;
	}
	snprintf(path, sizeof path, "%s/events/raw_syscalls/sys_enter/id", dir);
	FILE *f = fopen(path, "re");
	long id = 0;
	if (!f || fscanf(f, "%ld", &id) != 1 || id <= 0) {
		snprintf(why, len, "%s: %s (kernel without syscall tracepoints?)", path, f ? "unreadable" : strerror(errno));
		id = 0;
	}
	if (f)
		fclose(f);
	return id;
}

static void selftest_syscalls(void);

void rpm_perf_open(unsigned ncpus, const unsigned *os)
{
	if (F.opened)
		return;
	F.opened = 1;
	F.ncpus = ncpus;
	static const unsigned long long sw[3] = { PERF_COUNT_SW_PAGE_FAULTS, PERF_COUNT_SW_PAGE_FAULTS_MIN,
		                                  PERF_COUNT_SW_PAGE_FAULTS_MAJ };
	for (int k = 0; k < RPM_PERF_NCOUNTS; k++)
		F.slot[k] = -1;
	/* What the probes found dead, absent or refused (or what
	 * PAPI_HERITAGE_PROBE_DISABLE killed) is not opened: its reason is
	 * the probe's. */
	static const unsigned needs[RPM_PERF_NCOUNTS] = {
		[RPM_PF_ALL] = HERITAGE_MECH_BIT(HERITAGE_MECH_PERF_CPU),
		[RPM_PF_MIN] = HERITAGE_MECH_BIT(HERITAGE_MECH_PERF_CPU),
		[RPM_PF_MAJ] = HERITAGE_MECH_BIT(HERITAGE_MECH_PERF_CPU),
		[RPM_SYSCALLS] = HERITAGE_MECH_BIT(HERITAGE_MECH_PERF_CPU) | HERITAGE_MECH_BIT(HERITAGE_MECH_TRACEPOINT),
	};
	for (int k = 0; k < RPM_PERF_NCOUNTS; k++) {
		struct heritage_backend b = { .name = "paragon_rpm", .needs = needs[k] };
		F.err[k] = heritage_backend_usable(&b, F.why[k], sizeof F.why[k]);
	}
	long tp = 0;
	if (!F.err[RPM_SYSCALLS]) {
		tp = syscall_tracepoint(F.why[RPM_SYSCALLS], sizeof F.why[RPM_SYSCALLS]);
		if (!tp)
			F.err[RPM_SYSCALLS] = -ENOENT;
	}
	/* The tracepoint is an event of its own: in one group with the software
	 * page-fault events, whichever led, the members counted 0 (measured on
	 * 6.18: 0 of 16 getppid()s with a software leader, 0 faults with the
	 * tracepoint leading). */
	for (unsigned i = 0; i < ncpus; i++) {
		F.tp_fd[i] = -1;
		if (F.err[RPM_SYSCALLS])
			continue;
		F.tp_fd[i] = open_count(RPM_SYSCALLS, PERF_TYPE_TRACEPOINT, (unsigned long long)tp, os[i], -1);
		if (F.tp_fd[i] < 0)
			for (unsigned j = 0; j < i; j++)
				close(F.tp_fd[j]), F.tp_fd[j] = -1;
	}
	for (unsigned i = 0; i < ncpus; i++) {
		int members = 0, leader = -1;
		for (int k = 0; k < RPM_PERF_NCOUNTS; k++) {
			if (k == RPM_SYSCALLS)
				continue;
			if (F.err[k])
				continue;
			int fd = open_count(k, PERF_TYPE_SOFTWARE, sw[k], os[i], leader);
			if (fd < 0)
				continue;
			if (leader < 0)
				leader = fd;
			if (i == 0)
				F.slot[k] = members;
			else if (F.slot[k] != members)
				F.err[k] = -EIO; /* layouts differ between CPUs: give up on it */
			members++;
		}
		F.leader[i] = leader;
		F.nmembers = members;
	}
	if (!F.err[RPM_SYSCALLS])
		selftest_syscalls();
}

/* Whether the syscall tracepoint really counts (it once opened and counted
 * nothing, see the group order above): a 0 must not pass for a count. */
static void selftest_syscalls(void)
{
	uint64_t before = 0, after = 0, k[RPM_PERF_NCOUNTS];
	for (unsigned i = 0; i < F.ncpus; i++)
		rpm_perf_read(i, k), before += k[RPM_SYSCALLS];
	for (int n = 0; n < 16; n++)
		(void)syscall(SYS_getppid);
	for (unsigned i = 0; i < F.ncpus; i++)
		rpm_perf_read(i, k), after += k[RPM_SYSCALLS];
	if (after - before < 16) {
		F.err[RPM_SYSCALLS] = -EIO;
		snprintf(F.why[RPM_SYSCALLS], sizeof F.why[RPM_SYSCALLS],
		         "raw_syscalls:sys_enter opened but counted %llu of 16 system calls in a self-test",
		         (unsigned long long)(after - before));
	}
}

static unsigned conf_ncpus;
static unsigned conf_os[RPM_MAX_CPUS];
static pthread_once_t open_once = PTHREAD_ONCE_INIT;

void rpm_perf_configure(unsigned ncpus, const unsigned *os)
{
	conf_ncpus = ncpus < RPM_MAX_CPUS ? ncpus : RPM_MAX_CPUS;
	memcpy(conf_os, os, conf_ncpus * sizeof *os);
}

static void open_configured(void)
{
	rpm_perf_open(conf_ncpus, conf_os);
}

void rpm_perf_ensure(void)
{
	pthread_once(&open_once, open_configured);
}

int rpm_perf_status(enum rpm_perf_count k, const char **why)
{
	rpm_perf_ensure();
	if (why)
		*why = F.err[k] ? F.why[k] : "";
	return F.opened ? F.err[k] : -ENODEV;
}

void rpm_perf_read(unsigned i, uint64_t out[RPM_PERF_NCOUNTS])
{
	uint64_t buf[1 + RPM_PERF_NCOUNTS];
	memset(out, 0, RPM_PERF_NCOUNTS * sizeof out[0]);
	if (i >= F.ncpus)
		return;
	uint64_t n;
	if (!F.err[RPM_SYSCALLS] && F.tp_fd[i] >= 0 && read(F.tp_fd[i], &n, sizeof n) == (ssize_t)sizeof n)
		out[RPM_SYSCALLS] = n;
	if (F.leader[i] < 0)
		return;
	/* PERF_FORMAT_GROUP: nr, then the values, one read for the CPU. */
	if (read(F.leader[i], buf, sizeof buf) < (ssize_t)sizeof(uint64_t))
		return;
	for (int k = 0; k < RPM_PERF_NCOUNTS; k++)
		if (!F.err[k] && F.slot[k] >= 0 && (uint64_t)F.slot[k] < buf[0])
			out[k] = buf[1 + F.slot[k]];
}
