#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <pthread.h>
#include <sys/mman.h>

#include "common/heritage_backend.h"
#include "paragon/rpm_clock.h"
#include "paragon/rpm_model.h"
#include "paragon/rpm_perf.h"
#include "paragon/rpm_service.h"

/* The rpmd service's page as this process uses it: replaced (never
 * unmapped: a signal handler may be reading it) when the daemon restarts. */
struct service_map {
	const struct rpm_service_page *page;
	ino_t ino;                             /* the object's, when mapped */
	uint64_t gen;                          /* 1, 2, ...: one per page mapped */
	int idx[RPM_MAX_CPUS];                 /* logical CPU -> the page's entry */
	/* The map this one replaced, kept with its page (a handler may still
	 * read it) and reachable from here: unreferenced, LeakSanitizer
	 * reported it at exit after every restart of rpmd (make check-sanitize,
	 * rpm_service.test: 4112 bytes in 1 allocation). */
	const struct service_map *retired;
};

static struct {
	int opened;
	int own_only;                          /* rpmd: it is the service */
	unsigned ncpus;
	unsigned os[RPM_MAX_CPUS];
	int any_service;
	int nmembers;                          /* counts in each CPU's group */
	int slot[RPM_PERF_NCOUNTS];            /* position in the group, or -1 */
	int err[RPM_PERF_NCOUNTS];
	char why[RPM_PERF_NCOUNTS][1024];
	int via_service[RPM_PERF_NCOUNTS];     /* refused here, counted by rpmd */
	char own_why[RPM_PERF_NCOUNTS][512];   /* why this account may not count it */
	struct service_map *svc;               /* atomic: read in signal handlers */
	int leader[RPM_MAX_CPUS];
	int tp_fd[RPM_MAX_CPUS];               /* raw_syscalls:sys_enter, alone */
} F;
static pthread_mutex_t svc_lock = PTHREAD_MUTEX_INITIALIZER;

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
		int e = errno;
		F.err[k] = -e;
		if (e == EACCES || e == EPERM)
			snprintf(F.why[k], sizeof F.why[k],
			         "perf_event_open (system-wide on CPU %u): %s: this account may not count system-wide "
			         "(that needs perf_event_paranoid <= 0, it is %d, or CAP_PERFMON%s)",
			         cpu, strerror(e), heritage_perf_paranoid(),
			         e == EPERM ? "; EPERM may also be a seccomp profile refusing perf_event_open" : "");
		else
			snprintf(F.why[k], sizeof F.why[k], "perf_event_open (system-wide on CPU %u): %s", cpu, strerror(e));
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
	enum { MOUNTS_MAX = 65536 };
	char dir[512], path[600];
	char *mounts = malloc(MOUNTS_MAX); /* not static: reentrant; not the stack: 64 KiB */
	if (!mounts) {
		snprintf(why, len, "out of memory reading /proc/self/mounts");
		return 0;
	}
	int fd = open("/proc/self/mounts", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, mounts, MOUNTS_MAX - 1) : -1;
	if (fd >= 0)
		close(fd);
	mounts[n > 0 ? n : 0] = '\0';
	int parsed = rpm_parse_tracefs_mount(mounts, dir, sizeof dir);
	free(mounts);
	if (parsed != 0) {
		snprintf(why, len, "tracefs is not mounted, so raw_syscalls:sys_enter has no id to open "
		                   "(mount -t tracefs nodev /sys/kernel/tracing)");
		return 0;
	}
	snprintf(path, sizeof path, "%s/events/raw_syscalls/sys_enter/id", dir);
	FILE *f = fopen(path, "re");
	long id = 0;
	if (!f || fscanf(f, "%ld", &id) != 1 || id <= 0) {
		if (!f && (errno == EACCES || errno == EPERM))
			snprintf(why, len, "%s: %s: tracefs is root's here, so this account may not open the tracepoint", path,
			         strerror(errno));
		else
			snprintf(why, len, "%s: %s (kernel without syscall tracepoints?)", path, f ? "unreadable" : strerror(errno));
		id = 0;
	}
	if (f)
		fclose(f);
	return id;
}

static void selftest_syscalls(void);
static void use_service(void);

void rpm_perf_open(unsigned ncpus, const unsigned *os)
{
	if (F.opened)
		return;
	F.opened = 1;
	F.ncpus = ncpus < RPM_MAX_CPUS ? ncpus : RPM_MAX_CPUS;
	ncpus = F.ncpus;
	memcpy(F.os, os, ncpus * sizeof *os);
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
	if (!F.own_only)
		use_service();
}

/* Whether the syscall tracepoint really counts (it once opened and counted
 * nothing, see the group order above): a 0 must not pass for a count. */
static void selftest_syscalls(void)
{
	uint64_t before = 0, after = 0, k[RPM_PERF_NCOUNTS];
	for (unsigned i = 0; i < F.ncpus; i++)
		rpm_perf_read(i, k, NULL), before += k[RPM_SYSCALLS];
	for (int n = 0; n < 16; n++)
		(void)syscall(SYS_getppid);
	for (unsigned i = 0; i < F.ncpus; i++)
		rpm_perf_read(i, k, NULL), after += k[RPM_SYSCALLS];
	if (after - before < 16) {
		F.err[RPM_SYSCALLS] = -EIO;
		snprintf(F.why[RPM_SYSCALLS], sizeof F.why[RPM_SYSCALLS],
		         "raw_syscalls:sys_enter opened but counted %llu of 16 system calls in a self-test",
		         (unsigned long long)(after - before));
		for (unsigned i = 0; i < F.ncpus; i++)
			if (F.tp_fd[i] >= 0)
				close(F.tp_fd[i]), F.tp_fd[i] = -1;
	}
}

/* ---- the rpmd service ------------------------------------------------------ */

static char svc_path[512];
static char svc_why[1024];  /* why the service is not usable now (under svc_lock) */

/* The service's page, if it is there, live, trusted and counts every CPU of
 * this process; else NULL with why. */
static struct service_map *service_open(char *why, size_t len)
{
	static uint64_t generations;
	const struct rpm_service_page *p;
	ino_t ino;
	if (!svc_path[0])
		rpm_service_path(svc_path, sizeof svc_path);
	if (rpm_service_map(svc_path, rpm_service_trusted_uid(), &p, &ino, why, len) != 0)
		return NULL;
	struct service_map *m = calloc(1, sizeof *m);
	if (!m) {
		snprintf(why, len, "out of memory");
		munmap((void *)p, sizeof *p);
		return NULL;
	}
	m->page = p;
	m->ino = ino;
	for (unsigned i = 0; i < F.ncpus; i++) {
		m->idx[i] = rpm_service_find_cpu(p, F.os[i]);
		if (m->idx[i] < 0) {
			snprintf(why, len, "%s: rpmd (pid %d) does not count CPU %u", svc_path, (int)p->pid, F.os[i]);
			munmap((void *)p, sizeof *p);
			free(m);
			return NULL;
		}
	}
	m->gen = ++generations;
	return m;
}

static void describe_service(int k, const struct service_map *m)
{
	snprintf(F.why[k], sizeof F.why[k],
	         "counted system-wide by the rpmd service (pid %d, uid %u, %.200s), published every %.3g ms, "
	         "as this account may not count it itself (%s)",
	         (int)m->page->pid, (unsigned)m->page->uid, svc_path, (double)m->page->interval_ns / 1e6, F.own_why[k]);
}

/* The counts this account was refused come from the service when it runs:
 * the same kernel counts, opened by the daemon instead of this process. */
static void use_service(void)
{
	int refused = 0;
	for (int k = 0; k < RPM_PERF_NCOUNTS; k++)
		refused |= F.err[k] != 0;
	if (!refused)
		return;
	char why[768];
	struct service_map *m = service_open(why, sizeof why);
	for (int k = 0; k < RPM_PERF_NCOUNTS; k++) {
		if (!F.err[k])
			continue;
		snprintf(F.own_why[k], sizeof F.own_why[k], "%s", F.why[k]);
		const char *own = F.own_why[k];
		if (m && m->page->err[k] == 0) {
			F.via_service[k] = 1;
			F.err[k] = 0;
			describe_service(k, m);
		} else if (m) {
			snprintf(F.why[k], sizeof F.why[k], "%s; and the rpmd service (pid %d) cannot count it either: %.256s",
			         own, (int)m->page->pid, m->page->why[k]);
		} else {
			snprintf(F.why[k], sizeof F.why[k],
			         "%s; or an administrator runs the rpmd service, whose counts any account may read "
			         "(rpmd(8)), but %.400s",
			         own, why);
		}
		F.any_service |= F.via_service[k];
	}
	if (F.any_service)
		__atomic_store_n(&F.svc, m, __ATOMIC_RELEASE);
	else if (m) {
		munmap((void *)m->page, sizeof *m->page);
		free(m);
	}
}

/* A page is done with once its daemon is: stale by its heartbeat
 * (rpm_service_stale: a dead daemon's page after 2 intervals when it was
 * in our pid namespace, else only after 5 s, as its pid may be another
 * namespace's), or late and renamed over by a restarted daemon,
 * which takes the name only from a dead one.  Without the second a set
 * started in those 5 s counted from the dead page: rpms_dat 0 over fresh
 * pages while the new daemon published them (make stress, rpmd killed
 * every 1.5 s).  The stat() is made only for a late heartbeat. */
static int page_done(const struct service_map *m, uint64_t hb)
{
	uint64_t now = rpm_clock_boottime_ns();
	if (rpm_service_stale(m->page, hb, now))
		return 1;
	return hb + 2 * m->page->interval_ns < now && rpm_service_replaced(svc_path, m->ino);
}

/* Under svc_lock.  0 if the page in use is live, or was done with and a
 * live one (a restarted daemon's) replaced it; else -ESTALE, svc_why says
 * why. */
static int revalidate_locked(void)
{
	struct service_map *m = F.svc;
	uint64_t hb, c[RPM_PERF_NCOUNTS];
	if (m && rpm_service_read_cpu(m->page, 0, c, &hb) == 0 && !page_done(m, hb))
		return 0;
	char why[768];
	struct service_map *n = service_open(why, sizeof why);
	for (int k = 0; n && k < RPM_PERF_NCOUNTS; k++)
		if (F.via_service[k] && n->page->err[k] != 0) {
			snprintf(why, sizeof why, "the restarted rpmd (pid %d) cannot count what its predecessor did: %.256s",
			         (int)n->page->pid, n->page->why[k]);
			munmap((void *)n->page, sizeof *n->page);
			free(n);
			n = NULL;
		}
	if (!n) {
		snprintf(svc_why, sizeof svc_why, "the rpmd service this process read (pid %d) stopped publishing: %.700s",
		         m ? (int)m->page->pid : 0, why);
		return -ESTALE;
	}
	/* The old mapping stays: a signal handler may be reading it. */
	n->retired = m;
	__atomic_store_n(&F.svc, n, __ATOMIC_RELEASE);
	for (int k = 0; k < RPM_PERF_NCOUNTS; k++)
		if (F.via_service[k])
			describe_service(k, n);
	return 0;
}

int rpm_perf_revalidate(const char **why)
{
	rpm_perf_ensure();
	if (!F.any_service)
		return 0;
	/* The reason is copied under the lock: another thread's revalidation
	 * rewrites svc_why (ThreadSanitizer saw a read of it torn by one, make
	 * check-tsan, tests/tsan-stress.test). */
	static __thread char why_copy[sizeof svc_why];
	pthread_mutex_lock(&svc_lock);
	int err = revalidate_locked();
	if (err)
		memcpy(why_copy, svc_why, sizeof why_copy);
	pthread_mutex_unlock(&svc_lock);
	if (why)
		*why = err ? why_copy : "";
	return err;
}

uint64_t rpm_perf_generation(void)
{
	const struct service_map *m = __atomic_load_n(&F.svc, __ATOMIC_ACQUIRE);
	return m ? m->gen : 0;
}

void rpm_perf_own_only(void)
{
	F.own_only = 1;
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
	if (!F.opened) {
		if (why)
			*why = "the counters were never configured";
		return -ENODEV;
	}
	if (F.via_service[k] && rpm_perf_revalidate(why) != 0)
		return -ESTALE;
	if (why)
		*why = F.err[k] || F.via_service[k] ? F.why[k] : "";
	return F.err[k];
}

int rpm_perf_read(unsigned i, uint64_t out[RPM_PERF_NCOUNTS], uint64_t *gen)
{
	uint64_t buf[1 + RPM_PERF_NCOUNTS];
	memset(out, 0, RPM_PERF_NCOUNTS * sizeof out[0]);
	if (gen)
		*gen = 0;
	if (i >= F.ncpus)
		return 0;
	uint64_t n;
	if (!F.err[RPM_SYSCALLS] && F.tp_fd[i] >= 0 && read(F.tp_fd[i], &n, sizeof n) == (ssize_t)sizeof n)
		out[RPM_SYSCALLS] = n;
	/* PERF_FORMAT_GROUP: nr, then the values, one read for the CPU. */
	if (F.leader[i] >= 0 && read(F.leader[i], buf, sizeof buf) >= (ssize_t)sizeof(uint64_t))
		for (int k = 0; k < RPM_PERF_NCOUNTS; k++)
			if (!F.err[k] && F.slot[k] >= 0 && (uint64_t)F.slot[k] < buf[0])
				out[k] = buf[1 + F.slot[k]];
	if (!F.any_service)
		return 0;
	const struct service_map *m = __atomic_load_n(&F.svc, __ATOMIC_ACQUIRE);
	uint64_t c[RPM_PERF_NCOUNTS], hb;
	if (!m)
		return -ESTALE;
	int err = rpm_service_read_cpu(m->page, (unsigned)m->idx[i], c, &hb);
	if (!err && page_done(m, hb))
		err = -ESTALE;
	if (err)
		return err;
	for (int k = 0; k < RPM_PERF_NCOUNTS; k++)
		if (F.via_service[k])
			out[k] = c[k];
	if (gen)
		*gen = m->gen;
	return 0;
}

unsigned rpm_perf_cpus(const unsigned **os)
{
	if (os)
		*os = F.os;
	return F.ncpus;
}
