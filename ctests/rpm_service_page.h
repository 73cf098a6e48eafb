/*
 * The rpmd service page as any account sees it from outside PAPI: mapped
 * O_RDONLY, PROT_READ, and read under its seqlock, written out here rather
 * than through libheritage's reader, as the layout is the contract (rpmd(8),
 * paragon/rpm_service.h).  For the ctests that check PAPI's service counts
 * against the page itself: rpm_service and stress.
 */
#ifndef CTESTS_RPM_SERVICE_PAGE_H
#define CTESTS_RPM_SERVICE_PAGE_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "paragon/rpm_service.h"

/* "/dev/shm/<PAPI_HERITAGE_PARAGON_RPM_SHM>-service", where rpmd publishes
 * (rpm_service_path's rule). */
static inline void rpm_page_path(char *buf, size_t len, const char *shm)
{
	snprintf(buf, len, "/dev/shm/%s-service", shm && *shm ? shm : "papi-heritage-rpm");
}

/* CLOCK_BOOTTIME in ns: the clock of the page's heartbeat. */
static inline uint64_t rpm_page_boot_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* n page faults, rpms_dat's unit: one store into each of n fresh pages.
 * 0, or -1 if they could not be mapped. */
static inline int rpm_page_touch_fresh(int n)
{
	char *p = mmap(NULL, (size_t)n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	for (int i = 0; i < n; i++)
		((volatile char *)p)[(size_t)i * 4096] = 1;
	munmap(p, (size_t)n * 4096);
	return 0;
}

/* The page at path, and its inode (a restarted daemon's replaces it), or
 * NULL if there is none. */
static inline const struct rpm_service_page *rpm_page_map(const char *path, ino_t *ino)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	void *p = fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(struct rpm_service_page)
	                  ? mmap(NULL, sizeof(struct rpm_service_page), PROT_READ, MAP_SHARED, fd, 0)
	                  : MAP_FAILED;
	close(fd);
	if (p != MAP_FAILED && ino)
		*ino = st.st_ino;
	return p == MAP_FAILED ? NULL : p;
}

static inline void rpm_page_unmap(const struct rpm_service_page *p)
{
	munmap((void *)p, sizeof *p);
}

/* One publication of the page: its heartbeat, the page-fault total over
 * all CPUs and the daemon's pid.  0, or -1 if it is not a page or no
 * consistent copy came in a million tries (a writer killed inside a
 * publication). */
static inline int rpm_page_read(const struct rpm_service_page *p, uint64_t *heartbeat, uint64_t *faults, int32_t *pid)
{
	if (p->magic != RPM_SERVICE_MAGIC)
		return -1;
	for (int tries = 0; tries < 1000000; tries++) {
		uint64_t s1 = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE), sum = 0;
		uint64_t hb = __atomic_load_n(&p->heartbeat_ns, __ATOMIC_RELAXED);
		for (unsigned i = 0; i < p->ncpus && i < RPM_MAX_CPUS; i++)
			sum += __atomic_load_n(&p->cpu[i].count[RPM_PF_ALL], __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (!(s1 & 1) && __atomic_load_n(&p->seq, __ATOMIC_RELAXED) == s1) {
			if (heartbeat)
				*heartbeat = hb;
			if (faults)
				*faults = sum;
			if (pid)
				*pid = p->pid;
			return 0;
		}
	}
	return -1;
}

#endif
