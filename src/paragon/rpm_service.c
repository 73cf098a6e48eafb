#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/heritage_env.h"
#include "common/heritage_shm.h"
#include "paragon/rpm_service.h"
#include "paragon/rpm_shared.h"

/* ---- the page as data ------------------------------------------------------ */

void rpm_service_init(struct rpm_service_page *p, unsigned ncpus, const unsigned *os, uint64_t interval_ns,
                      uint64_t now_ns, const struct rpm_service_daemon *d, const int err[RPM_PERF_NCOUNTS],
                      const char *const why[RPM_PERF_NCOUNTS])
{
	memset(p, 0, sizeof *p);
	p->version = RPM_SERVICE_VERSION;
	p->size = sizeof *p;
	p->ncpus = ncpus < RPM_MAX_CPUS ? ncpus : RPM_MAX_CPUS;
	p->ncounts = RPM_PERF_NCOUNTS;
	p->pid = d->pid;
	p->uid = d->uid;
	p->pidns = d->pidns;
	p->pid_start = d->pid_start;
	p->interval_ns = interval_ns;
	p->started_ns = now_ns;
	for (int k = 0; k < RPM_PERF_NCOUNTS; k++) {
		p->err[k] = err[k];
		snprintf(p->why[k], sizeof p->why[k], "%s", err[k] && why[k] ? why[k] : "");
	}
	for (unsigned i = 0; i < p->ncpus; i++)
		p->cpu[i].os = os[i];
	p->heartbeat_ns = now_ns;
	p->magic = RPM_SERVICE_MAGIC;
}

/* The seqlock as in the kernel's write_seqcount_begin/end and Boehm's
 * "Can seqlocks get along with programming language memory models?": the
 * odd sequence is ordered before the data by a release fence, the data
 * before the even sequence by its release store; every access is atomic, so
 * a concurrent copy is a race the sequence detects, not undefined
 * behaviour. */
void rpm_service_publish(struct rpm_service_page *p, uint64_t now_ns, const uint64_t (*counts)[RPM_PERF_NCOUNTS])
{
	uint64_t s = __atomic_load_n(&p->seq, __ATOMIC_RELAXED);
	__atomic_store_n(&p->seq, s + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&p->heartbeat_ns, now_ns, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < p->ncpus; i++)
		for (int k = 0; k < RPM_PERF_NCOUNTS; k++)
			__atomic_store_n(&p->cpu[i].count[k], counts[i][k], __ATOMIC_RELAXED);
	__atomic_store_n(&p->seq, s + 2, __ATOMIC_RELEASE);
}

/* A publication is a few hundred stores (tens of ns for the 2 CPUs here, a
 * few us for 1024); a reader waits longer only for a writer preempted inside
 * one.  It spins briefly, then yields, and gives up after this long. */
#define READ_SPINS 128
#define READ_GIVE_UP_NS 100000000ULL

int rpm_service_read_cpu(const struct rpm_service_page *p, unsigned idx, uint64_t out[RPM_PERF_NCOUNTS],
                         uint64_t *heartbeat_ns)
{
	if (idx >= RPM_MAX_CPUS)
		return -EINVAL;
	uint64_t t0 = 0;
	for (unsigned tries = 0;; tries++) {
		uint64_t s1 = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE);
		if (!(s1 & 1)) {
			uint64_t hb = __atomic_load_n(&p->heartbeat_ns, __ATOMIC_RELAXED);
			for (int k = 0; k < RPM_PERF_NCOUNTS; k++)
				out[k] = __atomic_load_n(&p->cpu[idx].count[k], __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(&p->seq, __ATOMIC_RELAXED) == s1) {
				if (heartbeat_ns)
					*heartbeat_ns = hb;
				return 0;
			}
		}
		if (tries < READ_SPINS) {
			__builtin_ia32_pause();
			continue;
		}
		uint64_t now = heritage_boottime_ns();
		if (!t0)
			t0 = now;
		/* A daemon killed inside a publication leaves the sequence odd:
		 * no point waiting for it once its heartbeat is stale. */
		uint64_t hb = __atomic_load_n(&p->heartbeat_ns, __ATOMIC_RELAXED);
		if (now - t0 > READ_GIVE_UP_NS || rpm_service_stale(p, hb, now))
			return -EAGAIN;
		sched_yield();
	}
}

static uint64_t intervals_or(uint64_t interval_ns, uint64_t n, uint64_t floor_ns)
{
	uint64_t t = interval_ns < UINT64_MAX / n ? interval_ns * n : UINT64_MAX;
	return t > floor_ns ? t : floor_ns;
}

int rpm_service_stale_at(uint64_t interval_ns, uint64_t heartbeat_ns, uint64_t now_ns,
                         enum heritage_daemon_seen daemon)
{
	if (heartbeat_ns > now_ns)
		return heartbeat_ns - now_ns > HERITAGE_HEARTBEAT_AHEAD_NS;
	uint64_t age = now_ns - heartbeat_ns;
	if (age > intervals_or(interval_ns, RPM_SERVICE_HUNG_INTERVALS, RPM_SERVICE_HUNG_MIN_NS))
		return 1;
	if (daemon == HERITAGE_DAEMON_GONE)
		return age > intervals_or(interval_ns, RPM_SERVICE_GONE_INTERVALS, 0);
	return daemon == HERITAGE_DAEMON_UNSEEN &&
	       age > intervals_or(interval_ns, RPM_SERVICE_STALE_INTERVALS, RPM_SERVICE_STALE_MIN_NS);
}

int rpm_service_stale(const struct rpm_service_page *p, uint64_t heartbeat_ns, uint64_t now_ns)
{
	/* Asked only when the answer could change the verdict: one system call
	 * per read of a late page, none normally. */
	if (!rpm_service_stale_at(p->interval_ns, heartbeat_ns, now_ns, HERITAGE_DAEMON_GONE))
		return 0;
	return rpm_service_stale_at(p->interval_ns, heartbeat_ns, now_ns,
	                            heritage_daemon_seen(__atomic_load_n(&p->pid, __ATOMIC_RELAXED), p->pidns,
	                                                 p->pid_start));
}

int rpm_service_find_cpu(const struct rpm_service_page *p, unsigned os)
{
	for (unsigned i = 0; i < p->ncpus && i < RPM_MAX_CPUS; i++)
		if (p->cpu[i].os == os)
			return (int)i;
	return -1;
}

int rpm_service_check(const struct stat *st, uid_t trusted_uid, const struct rpm_service_page *p, char *why,
                      size_t len)
{
	if (!S_ISREG(st->st_mode)) {
		snprintf(why, len, "not a regular file");
		return -EINVAL;
	}
	if (st->st_uid != 0 && st->st_uid != trusted_uid) {
		if (trusted_uid == (uid_t)-1)
			snprintf(why, len, "owned by uid %u, not root (nor a service account: no account \"%s\", and "
			                   "PAPI_HERITAGE_PARAGON_RPM_SERVICE_USER is not set): refused, anyone may create it",
			         (unsigned)st->st_uid, RPM_SERVICE_DEFAULT_USER);
		else
			snprintf(why, len, "owned by uid %u, not root nor the service account (uid %u): refused, anyone may create it",
			         (unsigned)st->st_uid, (unsigned)trusted_uid);
		return -EPERM;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, len, "writable by others (mode %03o): refused", (unsigned)(st->st_mode & 0777));
		return -EPERM;
	}
	if ((size_t)st->st_size < sizeof *p) {
		snprintf(why, len, "%lld bytes, a version-%u page has %zu (an older or newer rpmd?)", (long long)st->st_size,
		         RPM_SERVICE_VERSION, sizeof *p);
		return -EPROTO;
	}
	if (!p)
		return 0;
	if (p->magic != RPM_SERVICE_MAGIC || p->version != RPM_SERVICE_VERSION || p->size != sizeof *p ||
	    p->ncounts != RPM_PERF_NCOUNTS) {
		snprintf(why, len, "not a version-%u rpmd page (magic %#x, version %u, size %u, %u counts)",
		         RPM_SERVICE_VERSION, p->magic, p->version, p->size, p->ncounts);
		return -EPROTO;
	}
	if (p->ncpus == 0 || p->ncpus > RPM_MAX_CPUS || p->interval_ns == 0) {
		snprintf(why, len, "a page with %u CPUs and interval %llu ns", p->ncpus, (unsigned long long)p->interval_ns);
		return -EPROTO;
	}
	return 0;
}

/* ---- the object -------------------------------------------------------------- */

void rpm_service_path(char *buf, size_t len)
{
	snprintf(buf, len, "/dev/shm/%s-service", rpm_shared_name());
}

uid_t rpm_service_trusted_uid(void)
{
	const char *u = heritage_env("PARAGON_RPM", "SERVICE_USER");
	return heritage_uid_of(u && *u ? u : RPM_SERVICE_DEFAULT_USER);
}

int rpm_service_map(const char *path, uid_t trusted_uid, const struct rpm_service_page **page, ino_t *ino,
                    char *why, size_t len)
{
	char reason[512];
	int fd = heritage_shm_open_reader(path, "rpmd", why, len);
	if (fd < 0)
		return fd;
	struct stat st;
	int err = 0;
	if (fstat(fd, &st) != 0) {
		err = -errno;
		snprintf(reason, sizeof reason, "fstat: %s", strerror(-err));
	} else {
		err = rpm_service_check(&st, trusted_uid, NULL, reason, sizeof reason);
	}
	if (err) {
		close(fd);
		snprintf(why, len, "%s: %s", path, reason);
		return err;
	}
	void *m = mmap(NULL, sizeof(struct rpm_service_page), PROT_READ, MAP_SHARED, fd, 0);
	err = m == MAP_FAILED ? -errno : 0;
	close(fd);
	if (err) {
		snprintf(why, len, "%s: mmap: %s", path, strerror(-err));
		return err;
	}
	const struct rpm_service_page *p = m;
	err = rpm_service_check(&st, trusted_uid, p, reason, sizeof reason);
	uint64_t hb = 0, counts[RPM_PERF_NCOUNTS], now = heritage_boottime_ns();
	int torn = !err && rpm_service_read_cpu(p, 0, counts, &hb) != 0;
	if (torn) /* killed or stopped inside a publication: its heartbeat says which */
		hb = __atomic_load_n(&p->heartbeat_ns, __ATOMIC_RELAXED);
	if (!err && rpm_service_stale(p, hb, now)) {
		snprintf(reason, sizeof reason, "stale: rpmd (pid %d) %s and last published %.1f s ago (it publishes every %.3f s)",
		         (int)p->pid, heritage_pid_alive(p->pid) ? "is alive (stopped or hung?)" : "is gone",
		         hb <= now ? (double)(now - hb) / 1e9 : -1.0, (double)p->interval_ns / 1e9);
		err = -ESTALE;
	} else if (torn) {
		snprintf(reason, sizeof reason, "rpmd (pid %d) never finishes a publication", (int)p->pid);
		err = -EAGAIN;
	}
	if (err) {
		munmap(m, sizeof(struct rpm_service_page));
		snprintf(why, len, "%s: %s", path, reason);
		return err;
	}
	*page = p;
	if (ino)
		*ino = st.st_ino;
	return 0;
}

int rpm_service_replaced(const char *path, ino_t ino)
{
	struct stat st;
	return stat(path, &st) != 0 || st.st_ino != ino;
}

int rpm_service_create(const char *path, unsigned ncpus, const unsigned *os, uint64_t interval_ns, uint64_t now_ns,
                       const int err[RPM_PERF_NCOUNTS], const char *const why[RPM_PERF_NCOUNTS],
                       struct rpm_service_page **page, ino_t *ino, char *why_out, size_t len)
{
	/* Another live daemon's page under the name is its, not ours to take. */
	const struct rpm_service_page *other;
	char reason[512];
	if (rpm_service_map(path, geteuid(), &other, NULL, reason, sizeof reason) == 0) {
		int32_t pid = other->pid;
		munmap((void *)other, sizeof *other);
		if (heritage_shm_taken(pid)) {
			snprintf(why_out, len, "%s: rpmd pid %d publishes there already", path, (int)pid);
			return -EBUSY;
		}
	}
	/* Published as heritage_shm_prepare says: under a private name, 0444. */
	struct heritage_shm_new n;
	int e = heritage_shm_prepare(path, sizeof(struct rpm_service_page), 0444, &n, why_out, len);
	if (e)
		return e;
	const struct rpm_service_daemon self = {
		.pid = (int32_t)getpid(), .uid = (uint32_t)geteuid(),
		.pidns = heritage_pidns_self(), .pid_start = heritage_pid_start((int32_t)getpid()),
	};
	rpm_service_init(n.mem, ncpus, os, interval_ns, now_ns, &self, err, why);
	if ((e = -heritage_shm_install(path, &n)) != 0) {
		struct stat old;
		int owner = lstat(path, &old) == 0 ? (int)old.st_uid : -1;
		if (e == EPERM || e == EACCES)
			snprintf(why_out, len,
			         "%s is owned by uid %d, and /dev/shm's sticky bit lets only its owner or root replace it: "
			         "remove it as root, or run rpmd as root (with only CAP_PERFMON: rpmd(8))",
			         path, owner);
		else
			snprintf(why_out, len, "rename %s to %s: %s", n.tmp, path, strerror(e));
		return e == EPERM || e == EACCES ? -EEXIST : -e;
	}
	*page = n.mem;
	*ino = n.ino;
	return 0;
}

void rpm_service_remove(const char *path, ino_t ino)
{
	heritage_shm_remove(path, ino);
}
