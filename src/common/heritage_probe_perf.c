/*
 * Probes of the perf_event mechanisms (heritage_probe.h): each opens what a
 * backend would open, makes a known number of things happen, and reads the
 * count back.  Page faults are the yardstick of the software events: an
 * anonymous mapping's pages fault exactly once each on their first store,
 * so N fresh pages are N faults, known without the code under test.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <perfmon/pfmlib.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/heritage_perf_ring.h"
#include "common/heritage_probe.h"

#define PROBE_PAGES 4

static int perf_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
	return (int)syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static void sw_attr(struct perf_event_attr *a, unsigned long long config)
{
	memset(a, 0, sizeof *a);
	a->size = sizeof *a;
	a->type = PERF_TYPE_SOFTWARE;
	a->config = config;
	a->disabled = 1;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
}

/* Store once into each of n fresh anonymous pages: n page faults. */
/* Exactly n page faults, in a sanitized build too: a sanitizer's mmap and
 * munmap interceptors and its instrumented stores touch shadow memory, and
 * fault on it (under ThreadSanitizer the sampling probe saw 20 faults for
 * 4 pages, make check-tsan).  So the system calls are made directly and the
 * stores are not instrumented. */
__attribute__((noinline, no_sanitize("address", "thread", "undefined"))) static int touch_fresh_pages(unsigned n)
{
	long page = sysconf(_SC_PAGESIZE);
	long m = syscall(SYS_mmap, NULL, (size_t)page * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == -1)
		return -errno;
	volatile char *p = (volatile char *)m;
	for (unsigned i = 0; i < n; i++)
		p[(long)i * page] = 1;
	syscall(SYS_munmap, (void *)p, (size_t)page * n);
	return 0;
}

static int read_count(int fd, uint64_t *v)
{
	return read(fd, v, sizeof *v) == (ssize_t)sizeof *v ? 0 : -1;
}

/* Absent (not refused) when the kernel does not know the event. */
static void open_failed(struct heritage_probe_result *r, int e, const char *what, int max_paranoid)
{
	if (e == EACCES || e == EPERM) {
		heritage_probe_refused(r, e, what, max_paranoid);
		return;
	}
	r->state = HERITAGE_PROBE_ABSENT;
	snprintf(r->evidence, sizeof r->evidence, "%s: %s", what, strerror(e));
}

void heritage_perf_sw_probe(struct heritage_probe_result *r)
{
	struct perf_event_attr a;
	uint64_t v = 0;

	sw_attr(&a, PERF_COUNT_SW_PAGE_FAULTS);
	int fd = perf_open(&a, 0, -1);
	if (fd < 0) {
		open_failed(r, errno, "perf_event_open(PERF_COUNT_SW_PAGE_FAULTS, this thread)", 2);
		return;
	}
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	touch_fresh_pages(PROBE_PAGES);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	int rd = read_count(fd, &v);
	close(fd);
	/* A stack page touched for the first time in between may add one. */
	if (rd == 0 && v >= PROBE_PAGES && v <= PROBE_PAGES + 2) {
		r->state = HERITAGE_PROBE_WORKS;
		snprintf(r->evidence, sizeof r->evidence, "counted %llu page faults for %d fresh pages stored to",
		         (unsigned long long)v, PROBE_PAGES);
	} else {
		r->state = HERITAGE_PROBE_DEAD;
		snprintf(r->evidence, sizeof r->evidence, "opened, counted %llu page faults for %d fresh pages stored to",
		         (unsigned long long)v, PROBE_PAGES);
	}
}

void heritage_perf_cpu_probe(struct heritage_probe_result *r)
{
	struct perf_event_attr a;
	cpu_set_t set;
	int fds[64], n = 0;
	uint64_t total = 0;

	/* Every CPU this thread may run on: it may move between them. */
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		CPU_ZERO(&set);
	sw_attr(&a, PERF_COUNT_SW_PAGE_FAULTS);
	a.exclude_kernel = 0; /* system-wide counting has no user-only meaning to prove */
	for (int cpu = 0; cpu < CPU_SETSIZE && n < 64; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		int fd = perf_open(&a, -1, cpu);
		if (fd < 0) {
			int e = errno;
			char what[96];
			snprintf(what, sizeof what, "perf_event_open(PERF_COUNT_SW_PAGE_FAULTS, CPU %d, all processes)", cpu);
			for (int i = 0; i < n; i++)
				close(fds[i]);
			open_failed(r, e, what, 0);
			return;
		}
		fds[n++] = fd;
	}
	if (n == 0) {
		r->state = HERITAGE_PROBE_ABSENT;
		snprintf(r->evidence, sizeof r->evidence, "no CPU in this thread's affinity mask");
		return;
	}
	for (int i = 0; i < n; i++)
		ioctl(fds[i], PERF_EVENT_IOC_ENABLE, 0);
	touch_fresh_pages(PROBE_PAGES);
	for (int i = 0; i < n; i++) {
		uint64_t v = 0;
		ioctl(fds[i], PERF_EVENT_IOC_DISABLE, 0);
		if (read_count(fds[i], &v) == 0)
			total += v;
		close(fds[i]);
	}
	/* Other processes fault too: at least ours, not exactly. */
	r->state = total >= PROBE_PAGES ? HERITAGE_PROBE_WORKS : HERITAGE_PROBE_DEAD;
	snprintf(r->evidence, sizeof r->evidence, "%scounted %llu page faults on %d CPU%s while this thread stored to "
	         "%d fresh pages", total >= PROBE_PAGES ? "" : "opened, ", (unsigned long long)total, n,
	         n == 1 ? "" : "s", PROBE_PAGES);
}

/* ---- tracefs and the system-call tracepoint ------------------------------ */

static long tracefs_id;

long heritage_tracefs_probed_id(void)
{
	return tracefs_id;
}

void heritage_tracefs_probe(struct heritage_probe_result *r)
{
	char line[1024], dir[512] = "", path[600];
	FILE *m = fopen("/proc/self/mounts", "re");

	while (m && fgets(line, sizeof line, m)) {
		char d[512], type[64];
		if (sscanf(line, "%*s %511s %63s", d, type) == 2 && strcmp(type, "tracefs") == 0) {
			snprintf(dir, sizeof dir, "%s", d);
			break;
		}
	}
	if (m)
		fclose(m);
	if (!dir[0]) {
		r->state = HERITAGE_PROBE_ABSENT;
		snprintf(r->evidence, sizeof r->evidence, "tracefs is not mounted (as root: mount -t tracefs nodev "
		         "/sys/kernel/tracing; ./bootstrap does it)");
		return;
	}
	snprintf(path, sizeof path, "%s/events/raw_syscalls/sys_enter/id", dir);
	FILE *f = fopen(path, "re");
	if (!f) {
		int e = errno;
		r->state = HERITAGE_PROBE_ABSENT;
		snprintf(r->evidence, sizeof r->evidence, "%.200s: %s", path, strerror(e));
		if (e == EACCES || e == EPERM) {
			r->refused = 1;
			r->err = -EACCES;
			snprintf(r->allowed_by, sizeof r->allowed_by, "root (tracefs is readable by root only), or an "
			         "administrator's chmod/chgrp of %s", dir);
		}
		return;
	}
	long id = 0;
	if (fscanf(f, "%ld", &id) != 1 || id <= 0) {
		r->state = HERITAGE_PROBE_DEAD;
		snprintf(r->evidence, sizeof r->evidence, "%.200s does not hold an event id", path);
	} else {
		tracefs_id = id;
		r->state = HERITAGE_PROBE_WORKS;
		snprintf(r->evidence, sizeof r->evidence, "mounted on %s; raw_syscalls:sys_enter is event %ld", dir, id);
	}
	fclose(f);
}

static void *close_fd(void *arg)
{
	close((int)(intptr_t)arg);
	return NULL;
}

/* Closing the last user of a tracepoint unregisters it, and the kernel
 * waits for an RCU grace period there: 38-44 ms of a close(2) measured here
 * (6.18, open 0.3 ms, the count 0.01 ms).  A thread of its own waits for
 * it, so the probe costs the caller well under a millisecond. */
static void close_later(int fd)
{
	pthread_t t;
	pthread_attr_t a;
	sigset_t all, old;

	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* No signal of the application's may land on it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = pthread_create(&t, &a, close_fd, (void *)(intptr_t)fd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	if (err)
		close(fd);
}

void heritage_tracepoint_probe(struct heritage_probe_result *r)
{
	struct perf_event_attr a;
	uint64_t v = 0;
	enum { CALLS = 16 };

	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_TRACEPOINT;
	a.config = (unsigned long long)tracefs_id;
	a.disabled = 1;
	int fd = perf_open(&a, 0, -1);
	if (fd < 0) {
		open_failed(r, errno, "perf_event_open(raw_syscalls:sys_enter, this thread)", 2);
		return;
	}
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	for (int i = 0; i < CALLS; i++)
		syscall(SYS_getppid);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0); /* its own entry counts too */
	int rd = read_count(fd, &v);
	close_later(fd);
	if (rd == 0 && v == CALLS + 1) {
		r->state = HERITAGE_PROBE_WORKS;
		snprintf(r->evidence, sizeof r->evidence, "counted %llu system calls: %d getppid and the disabling ioctl",
		         (unsigned long long)v, CALLS);
	} else {
		r->state = HERITAGE_PROBE_DEAD;
		snprintf(r->evidence, sizeof r->evidence, "opened, counted %llu system calls, want %d (%d getppid and "
		         "the disabling ioctl)", (unsigned long long)v, CALLS + 1, CALLS);
	}
}

/* ---- sampling into the ring ---------------------------------------------- */

/* Sample records in a ring after the kernel wrote them. */
static unsigned count_samples(void *ring, size_t data_size)
{
	struct heritage_perf_ring_counts c = { 0 };
	unsigned char rec[256];
	heritage_perf_ring_walk(ring, data_size, rec, sizeof rec, heritage_perf_ring_count, &c);
	return (unsigned)c.samples;
}

void heritage_sampling_probe(struct heritage_probe_result *r)
{
	struct perf_event_attr a;
	long page = sysconf(_SC_PAGESIZE);

	sw_attr(&a, PERF_COUNT_SW_PAGE_FAULTS);
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_IP;
	int fd = perf_open(&a, 0, -1);
	if (fd < 0) {
		open_failed(r, errno, "perf_event_open(PERF_COUNT_SW_PAGE_FAULTS, sample_period 1, this thread)", 2);
		return;
	}
	void *ring = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED) {
		int e = errno;
		close(fd);
		r->state = HERITAGE_PROBE_ABSENT;
		snprintf(r->evidence, sizeof r->evidence, "mmap of the sample ring: %s%s", strerror(e),
		         e == EPERM ? " (perf_event_mlock_kb exhausted?)" : "");
		return;
	}
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	touch_fresh_pages(PROBE_PAGES);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	unsigned n = count_samples(ring, (size_t)page);
	munmap(ring, (size_t)page * 2);
	close(fd);
	if (n >= PROBE_PAGES && n <= PROBE_PAGES + 2) {
		r->state = HERITAGE_PROBE_WORKS;
		snprintf(r->evidence, sizeof r->evidence, "%u sample records arrived for %d page faults", n, PROBE_PAGES);
	} else {
		r->state = HERITAGE_PROBE_DEAD;
		snprintf(r->evidence, sizeof r->evidence, "opened, %u sample records arrived for %d page faults", n,
		         PROBE_PAGES);
	}
}

/* ---- the core PMU, libpfm4, IBS --------------------------------------------- */

/* 100000 iterations of a loop the compiler cannot remove: at least 2 user
 * instructions each (the add and the branch). */
static void known_loop(void)
{
	for (volatile unsigned i = 0; i < 100000; i++)
		;
}

void heritage_pmu_probe(struct heritage_probe_result *r)
{
	struct perf_event_attr a;
	uint64_t v = 0;

	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_INSTRUCTIONS;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	int fd = perf_open(&a, 0, -1);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT || e == EOPNOTSUPP || e == ENODEV) {
			r->state = HERITAGE_PROBE_ABSENT;
			snprintf(r->evidence, sizeof r->evidence, "no core PMU: perf_event_open(PERF_COUNT_HW_INSTRUCTIONS): %s",
			         strerror(e));
		} else
			open_failed(r, e, "perf_event_open(PERF_COUNT_HW_INSTRUCTIONS, this thread)", 2);
		return;
	}
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	known_loop();
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	int rd = read_count(fd, &v);
	close(fd);
	r->state = rd == 0 && v >= 200000 ? HERITAGE_PROBE_WORKS : HERITAGE_PROBE_DEAD;
	snprintf(r->evidence, sizeof r->evidence, "%scounted %llu user instructions over a loop of at least 200000",
	         r->state == HERITAGE_PROBE_WORKS ? "" : "opened, ", (unsigned long long)v);
}

int heritage_libpfm_core_pmu(char *name, size_t nlen, char *desc, size_t dlen)
{
	/* Idempotent, and cheap once done; asked every time because PAPI_shutdown's
	 * pfm_terminate may have run since. */
	if (pfm_initialize() != PFM_SUCCESS)
		return -EIO;
	for (int p = PFM_PMU_NONE + 1; p < PFM_PMU_MAX; p++) {
		pfm_pmu_info_t info;
		memset(&info, 0, sizeof info);
		info.size = sizeof info;
		if (pfm_get_pmu_info((pfm_pmu_t)p, &info) != PFM_SUCCESS || !info.is_present ||
		    info.type != PFM_PMU_TYPE_CORE)
			continue;
		if (name && nlen)
			snprintf(name, nlen, "%s", info.name);
		if (desc && dlen)
			snprintf(desc, dlen, "%s", info.desc ? info.desc : "");
		return 0;
	}
	return -ENODEV;
}

void heritage_libpfm_probe(struct heritage_probe_result *r)
{
	char name[64], desc[128];
	int err = heritage_libpfm_core_pmu(name, sizeof name, desc, sizeof desc);

	if (err == -EIO) {
		r->state = HERITAGE_PROBE_ABSENT;
		snprintf(r->evidence, sizeof r->evidence, "libpfm4 cannot initialise");
		return;
	}
	if (err == 0) {
		r->state = HERITAGE_PROBE_WORKS;
		snprintf(r->evidence, sizeof r->evidence, "libpfm4 detects core PMU %s (%s)", name, desc);
		return;
	}
	char family[32] = "?", model[32] = "?", line[256];
	FILE *f = fopen("/proc/cpuinfo", "re");
	while (f && fgets(line, sizeof line, f)) {
		if (sscanf(line, "cpu family : %31s", family) == 1)
			continue;
		if (sscanf(line, "model : %31s", model) == 1)
			break;
	}
	if (f)
		fclose(f);
	r->state = HERITAGE_PROBE_ABSENT;
	snprintf(r->evidence, sizeof r->evidence, "libpfm4 knows no core PMU for this CPU (family %s model %s)",
	         family, model);
}

void heritage_ibs_probe(struct heritage_probe_result *r)
{
	FILE *f = fopen("/sys/bus/event_source/devices/ibs_op/type", "re");
	int type = -1;
	if (f) {
		if (fscanf(f, "%d", &type) != 1)
			type = -1;
		fclose(f);
	}
	if (type < 0) {
		r->state = HERITAGE_PROBE_ABSENT;
		snprintf(r->evidence, sizeof r->evidence, "no ibs_op PMU in /sys/bus/event_source/devices (IBS is AMD's, "
		         "and a guest sees it only when the hypervisor passes it through)%s",
		         access("/sys/bus/event_source/devices/ibs_fetch", F_OK) == 0 ? "; ibs_fetch is there" : "");
		return;
	}
	/* Op sampling on cycles: a record every 2^16 cycles of a loop that
	 * runs far longer than that. */
	struct perf_event_attr a;
	long page = sysconf(_SC_PAGESIZE);
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = (unsigned)type;
	a.sample_period = 1u << 16;
	a.sample_type = PERF_SAMPLE_IP;
	a.disabled = 1;
	/* User mode only, as the backend opens it, where the kernel can filter
	 * (format/swfilt, "config2:0", on recent kernels): without it the kernel
	 * refuses exclude_kernel on IBS (ibs.c perf_ibs_init), and an ordinary
	 * account at perf_event_paranoid 2 may not sample the kernel. */
	unsigned swbit;
	f = fopen("/sys/bus/event_source/devices/ibs_op/format/swfilt", "re");
	if (f) {
		if (fscanf(f, "config2:%u", &swbit) == 1 && swbit < 64) {
			a.config2 = 1ull << swbit;
			a.exclude_kernel = 1;
		}
		fclose(f);
	}
	int fd = perf_open(&a, 0, -1);
	if (fd < 0) {
		open_failed(r, errno, "perf_event_open(ibs_op, this thread)", 2);
		return;
	}
	void *ring = mmap(NULL, (size_t)page * 9, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED) {
		close(fd);
		r->state = HERITAGE_PROBE_ABSENT;
		snprintf(r->evidence, sizeof r->evidence, "ibs_op opened, but its sample ring cannot be mapped");
		return;
	}
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	for (int i = 0; i < 20; i++)
		known_loop();
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	unsigned n = count_samples(ring, (size_t)page * 8);
	munmap(ring, (size_t)page * 9);
	close(fd);
	r->state = n > 0 ? HERITAGE_PROBE_WORKS : HERITAGE_PROBE_DEAD;
	snprintf(r->evidence, sizeof r->evidence, "ibs_op (PMU type %d)%s: %u op samples over 20 runs of a 100000-iteration loop",
	         type, n > 0 ? "" : " opened", n);
}
