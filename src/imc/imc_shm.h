/*
 * The nest pages imcd(8) publishes: one POSIX shared-memory object per chip
 * and nest region, /dev/shm/<name>-chip<C>-<offset hex>, <name> from
 * PAPI_HERITAGE_IMC_SHM (default papi-heritage-imc).  The object is the
 * region exactly as the catalog lays it out (counters at their offsets,
 * the control block at cb_offset), followed by one 4 KiB header page.
 * Mode 0644, owned by imcd's account: every process maps it PROT_READ and
 * loads the counters; only its owner (root) may write a command into the
 * control block.
 *
 * As for rpmd's page (rpm_service.h), /dev/shm is world-writable: a reader
 * trusts an object only if root or the service account (PAPI_HERITAGE_IMC_
 * SERVICE_USER, default "imcd") owns it, nobody else may write it, its
 * header matches the reader's catalog and chip, and its heartbeat is
 * recent (a dead daemon's object is stale).  imcd writes under a random
 * name and renames, so a reader never sees a half-made page, and removes
 * its objects on SIGTERM.
 */
#ifndef HERITAGE_IMC_SHM_H
#define HERITAGE_IMC_SHM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define IMC_SHM_MAGIC 0x494d4344u /* "IMCD" */
#define IMC_SHM_VERSION 1u
#define IMC_SHM_HEADER 4096u
#define IMC_SHM_DEFAULT_USER "imcd"
/* Stale: no heartbeat for this many periods and at least this long, with
 * the daemon gone; or for the hung floor whether or not it lives (a
 * loaded machine delays a daemon: rpm_service.h measured 2 s gaps). */
#define IMC_SHM_STALE_PERIODS 10ULL
#define IMC_SHM_STALE_MIN_NS 5000000000ULL
#define IMC_SHM_HUNG_MIN_NS 60000000000ULL
/* Seen gone for certain (a reader in imcd's pid namespace: its pid dead or
 * another process's): stale after this many periods, with no floor. */
#define IMC_SHM_GONE_PERIODS 2ULL

struct imc_shm_header {
	uint32_t magic, version;
	uint32_t chip, offset, size, cb_offset; /* the region, as the catalog says */
	int32_t pid;                             /* imcd */
	uint32_t uid;
	uint64_t catalog_hash;                   /* imc_shm_catalog_hash() of imcd's catalog */
	uint64_t started_ns;                     /* CLOCK_BOOTTIME */
	uint64_t heartbeat_ns;                   /* CLOCK_BOOTTIME of imcd's last pass */
	uint64_t period_ns;                      /* its update period now */
	uint64_t pidns, pid_start;               /* heritage_daemon_seen's (0 from an older imcd) */
};

struct imc_catalog;

/* "/dev/shm/<name>-chip<chip>-<offset hex>". */
void imc_shm_path(char *buf, size_t len, unsigned chip, uint32_t offset);
/* A fingerprint of the catalog's nest units and entries (names, values,
 * sizes, offsets): imcd and its readers must agree on the layout. */
uint64_t imc_shm_catalog_hash(const struct imc_catalog *cat);
uid_t imc_shm_trusted_uid(void);
uint64_t imc_shm_boottime_ns(void);

/* Reader: the object at path, checked; 0 with *mem (region_size +
 * IMC_SHM_HEADER bytes, read-only) or a negative errno with why. */
int imc_shm_map(const char *path, unsigned chip, uint32_t offset, uint32_t size, uint64_t hash, uint8_t **mem,
                char *why, size_t len);
/* Daemon: a new object (header filled, region zeroed), renamed to path;
 * -EBUSY if a live imcd publishes there.  *mem is writable. */
int imc_shm_create(const char *path, unsigned chip, uint32_t offset, uint32_t size, uint32_t cb_offset, uint64_t hash,
                   uint64_t period_ns, uint8_t **mem, ino_t *ino, char *why, size_t len);
void imc_shm_remove(const char *path, ino_t ino);
static inline struct imc_shm_header *imc_shm_header(uint8_t *mem, uint32_t size)
{
	return (struct imc_shm_header *)(mem + size);
}
/* Daemon, stopping: the heartbeat to 0 (stale to every reader at once),
 * then the object removed. */
void imc_shm_retire(uint8_t *mem, uint32_t size, const char *path, ino_t ino);
/* Whether a header is stale at now (pure but for heritage_daemon_seen). */
int imc_shm_stale(const struct imc_shm_header *h, uint64_t now_ns);
/* Why it is: "imcd (pid N) is gone and has not updated it for S s"... */
void imc_shm_stale_why(const struct imc_shm_header *h, uint64_t now_ns, char *why, size_t len);

#endif
