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
#include "imc/imc_catalog.h"
#include "imc/imc_shm.h"

uint64_t imc_shm_boottime_ns(void)
{
	return heritage_boottime_ns();
}

void imc_shm_path(char *buf, size_t len, unsigned chip, uint32_t offset)
{
	const char *n = heritage_env("imc", "shm");
	snprintf(buf, len, "/dev/shm/%s-chip%u-%x", n && *n ? n : "papi-heritage-imc", chip, (unsigned)offset);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

uint64_t imc_shm_catalog_hash(const struct imc_catalog *cat)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (unsigned i = 0; i < cat->nentries; i++) {
		const struct imc_cat_entry *e = &cat->entries[i];
		const struct imc_cat_unit *u = &cat->units[e->unit];
		if (u->type != IMC_TYPE_NEST)
			continue;
		uint32_t f[4] = { (uint32_t)e->value, u->size, u->offset, u->cb_offset };
		h = fnv(h, e->name, strlen(e->name) + 1);
		h = fnv(h, f, sizeof f);
	}
	return h;
}

uid_t imc_shm_trusted_uid(void)
{
	const char *u = heritage_env("imc", "service_user");
	const char *name = u && *u ? u : IMC_SHM_DEFAULT_USER;
	return heritage_uid_of(name);
}

int imc_shm_stale(const struct imc_shm_header *h, uint64_t now_ns)
{
	uint64_t hb = __atomic_load_n(&h->heartbeat_ns, __ATOMIC_RELAXED);
	uint64_t period = __atomic_load_n(&h->period_ns, __ATOMIC_RELAXED);
	if (hb == 0)
		return 1; /* imcd stopped (imc_shm_retire) */
	if (hb > now_ns)
		return hb - now_ns > HERITAGE_HEARTBEAT_AHEAD_NS;
	uint64_t age = now_ns - hb;
	if (age > IMC_SHM_HUNG_MIN_NS)
		return 1;
	uint64_t gone = period < UINT64_MAX / IMC_SHM_GONE_PERIODS ? period * IMC_SHM_GONE_PERIODS : UINT64_MAX;
	if (age <= gone)
		return 0;
	enum heritage_daemon_seen seen = heritage_daemon_seen(h->pid, h->pidns, h->pid_start);
	if (seen == HERITAGE_DAEMON_GONE)
		return 1;
	uint64_t limit = period < UINT64_MAX / IMC_SHM_STALE_PERIODS ? period * IMC_SHM_STALE_PERIODS : UINT64_MAX;
	if (limit < IMC_SHM_STALE_MIN_NS)
		limit = IMC_SHM_STALE_MIN_NS;
	return age > limit && seen == HERITAGE_DAEMON_UNSEEN;
}

int imc_shm_map(const char *path, unsigned chip, uint32_t offset, uint32_t size, uint64_t hash, uint8_t **mem,
                char *why, size_t len)
{
	int fd = heritage_shm_open_reader(path, "imcd", why, len);
	if (fd < 0)
		return fd;
	struct stat st;
	uid_t trusted = imc_shm_trusted_uid();
	size_t total = (size_t)size + IMC_SHM_HEADER;
	int err = 0;
	if (fstat(fd, &st) != 0) {
		err = -errno;
		snprintf(why, len, "%s: fstat: %s", path, strerror(-err));
	} else if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
		snprintf(why, len, "%s: not a regular file", path);
	} else if (st.st_uid != 0 && st.st_uid != trusted) {
		err = -EPERM;
		snprintf(why, len, "%s: owned by uid %u, not root nor the service account (PAPI_HERITAGE_IMC_SERVICE_USER, "
		                   "default \"%s\"): refused, anyone may create it", path, (unsigned)st.st_uid,
		         IMC_SHM_DEFAULT_USER);
	} else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		err = -EPERM;
		snprintf(why, len, "%s: writable by others (mode %03o): refused", path, (unsigned)(st.st_mode & 0777));
	} else if ((size_t)st.st_size != total) {
		err = -EPROTO;
		snprintf(why, len, "%s: %lld bytes, this catalog's region needs %zu", path, (long long)st.st_size, total);
	}
	void *m = MAP_FAILED;
	if (!err && (m = mmap(NULL, total, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		err = -errno;
		snprintf(why, len, "%s: mmap: %s", path, strerror(-err));
	}
	close(fd);
	if (err)
		return err;
	const struct imc_shm_header *h = (const struct imc_shm_header *)((uint8_t *)m + size);
	if (h->magic != IMC_SHM_MAGIC || h->version != IMC_SHM_VERSION || h->chip != chip || h->offset != offset ||
	    h->size != size) {
		err = -EPROTO;
		snprintf(why, len, "%s: not a version-%u imcd page of chip %u region %#x", path, IMC_SHM_VERSION, chip,
		         (unsigned)offset);
	} else if (h->catalog_hash != hash) {
		err = -EPROTO;
		snprintf(why, len, "%s: imcd (pid %d) reads another catalog than this process (PAPI_HERITAGE_IMC_CATALOG?)",
		         path, (int)h->pid);
	} else {
		uint64_t now = imc_shm_boottime_ns();
		if (imc_shm_stale(h, now)) {
			err = -ESTALE;
			char stale[256];
			imc_shm_stale_why(h, now, stale, sizeof stale);
			snprintf(why, len, "%s: stale: %s", path, stale);
		}
	}
	if (err) {
		munmap(m, total);
		return err;
	}
	*mem = m;
	return 0;
}

int imc_shm_create(const char *path, unsigned chip, uint32_t offset, uint32_t size, uint32_t cb_offset, uint64_t hash,
                   uint64_t period_ns, uint8_t **mem, ino_t *ino, char *why, size_t len)
{
	uint8_t *other;
	char reason[512];
	size_t total = (size_t)size + IMC_SHM_HEADER;
	if (imc_shm_map(path, chip, offset, size, hash, &other, reason, sizeof reason) == 0) {
		int32_t pid = imc_shm_header(other, size)->pid;
		munmap(other, total);
		/* Another live daemon's object under the name is its, not ours to take. */
		if (heritage_shm_taken(pid)) {
			snprintf(why, len, "%s: imcd pid %d publishes there already", path, (int)pid);
			return -EBUSY;
		}
	}
	/* Published as heritage_shm_prepare says: under a private name, 0644 (the
	 * control block is root's to write, imc_shm.h). */
	struct heritage_shm_new n;
	int e = heritage_shm_prepare(path, total, 0644, &n, why, len);
	if (e)
		return e;
	struct imc_shm_header *h = imc_shm_header(n.mem, size);
	*h = (struct imc_shm_header){ .magic = IMC_SHM_MAGIC, .version = IMC_SHM_VERSION, .chip = chip, .offset = offset,
	                              .size = size, .cb_offset = cb_offset, .pid = (int32_t)getpid(),
	                              .uid = (uint32_t)geteuid(), .catalog_hash = hash,
	                              .started_ns = imc_shm_boottime_ns(), .heartbeat_ns = imc_shm_boottime_ns(),
	                              .period_ns = period_ns, .pidns = heritage_pidns_self(),
	                              .pid_start = heritage_pid_start((int32_t)getpid()) };
	if ((e = -heritage_shm_install(path, &n)) != 0) {
		snprintf(why, len, "rename %s to %s: %s%s", n.tmp, path, strerror(e),
		         e == EPERM || e == EACCES ? " (another account's object: remove it as root)" : "");
		return -e;
	}
	*mem = n.mem;
	*ino = n.ino;
	return 0;
}

void imc_shm_stale_why(const struct imc_shm_header *h, uint64_t now_ns, char *why, size_t len)
{
	uint64_t hb = __atomic_load_n(&h->heartbeat_ns, __ATOMIC_RELAXED);
	if (hb == 0)
		snprintf(why, len, "imcd (pid %d) stopped and removed its pages", (int)h->pid);
	else if (hb > now_ns)
		snprintf(why, len, "imcd (pid %d)'s heartbeat is %.1f s ahead of this process's clock", (int)h->pid,
		         (double)(hb - now_ns) / 1e9);
	else
		snprintf(why, len, "imcd (pid %d) %s and has not updated its page for %.1f s", (int)h->pid,
		         heritage_pid_alive(h->pid) ? "is alive (stopped or hung?)" : "is gone",
		         (double)(now_ns - hb) / 1e9);
}

void imc_shm_remove(const char *path, ino_t ino)
{
	heritage_shm_remove(path, ino);
}

void imc_shm_retire(uint8_t *mem, uint32_t size, const char *path, ino_t ino)
{
	/* Readers still mapping it see at once that nothing updates it now
	 * (imc_shm_stale), instead of 2 periods on. */
	__atomic_store_n(&imc_shm_header(mem, size)->heartbeat_ns, 0, __ATOMIC_RELEASE);
	imc_shm_remove(path, ino);
}
