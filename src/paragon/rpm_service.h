/*
 * The rpmd service's page: the per-CPU kernel counts of rpm_perf.h (page
 * faults, system calls), counted system-wide by a privileged daemon and
 * published in a shared-memory object that any local account maps
 * read-only.  On the Paragon the kernel filled the RPM page and users only
 * read it; here rpmd(8) is the writer, run by the administrator with
 * CAP_PERFMON, and an account that may not count system-wide itself reads
 * the daemon's counts (paragon_rpm(3), "Privileges").
 *
 * The object is /dev/shm/<name>-service (<name> from
 * PAPI_HERITAGE_PARAGON_RPM_SHM, default papi-heritage-rpm), mode 0444,
 * owned by the daemon's uid.  /dev/shm is world-writable (sticky), so
 * anyone may create an object under that name before or instead of the
 * daemon: a reader trusts only an object owned by root or by the configured
 * service account, writable by nobody else, and only while its heartbeat
 * is recent.  A reader opens it O_RDONLY and maps it PROT_READ: it cannot
 * write, reset or replace what the daemon publishes.
 *
 * Layout (version 2; little-endian x86-64; rpmd(8) documents it): a header
 * written once before the object gets its public name, then a seqlock
 * sequence, the heartbeat and the counts, which the daemon rewrites every
 * interval.  A reader never sees torn values: it retries while the
 * sequence is odd or moved during its copy.
 */
#ifndef HERITAGE_RPM_SERVICE_H
#define HERITAGE_RPM_SERVICE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "common/heritage_shm.h"
#include "paragon/rpm_model.h"
#include "paragon/rpm_perf.h"

#define RPM_SERVICE_MAGIC 0x534d5052u /* the bytes "RPMS" */
#define RPM_SERVICE_VERSION 2u
#define RPM_SERVICE_WHY_LEN 256
/* How often rpmd publishes by default.  A publication reads each CPU's
 * perf group and tracepoint (cross-CPU calls): about 70 us of CPU time for
 * the 2 vCPUs of the VM here (/proc/PID/schedstat over 10 s), 0.7% of one
 * CPU at 10 ms; it grows with the CPUs (rpmd(8): raise the interval on
 * large machines).  A reader sees counts at most one interval (plus the
 * daemon's scheduling delay) old. */
#define RPM_SERVICE_DEFAULT_INTERVAL_NS 10000000ULL
/* When a page is a dead or stopped daemon's, and refused.  A daemon that
 * the scheduler delays on a loaded machine must not be taken for dead: the
 * longest gaps between two publications seen here were 14.6 ms idle, 83 ms
 * beside make demo, and 496.5 ms and 2079 ms during two runs of make check
 * on the 2-vCPU VM shared with other builds.  So a late heartbeat alone
 * condemns a page only after RPM_SERVICE_HUNG_INTERVALS intervals and at
 * least RPM_SERVICE_HUNG_MIN_NS (a stopped or hung daemon); if the daemon's
 * process is gone, after RPM_SERVICE_STALE_INTERVALS intervals and at least
 * RPM_SERVICE_STALE_MIN_NS (the floor covers a reader that cannot see the
 * daemon's pid, in another pid namespace).  A daemon stopped with SIGTERM
 * removes its page at once. */
#define RPM_SERVICE_STALE_INTERVALS 10ULL
#define RPM_SERVICE_STALE_MIN_NS 5000000000ULL
#define RPM_SERVICE_HUNG_INTERVALS 100ULL
/* A reader in the daemon's pid namespace sees for certain that it is gone
 * (its pid dead, or another process's since: the start time differs), and
 * then needs no floor: the page is done with once its heartbeat is more
 * than this many intervals late, where until version 2 it was trusted for
 * the 5 s floor, reads returning the dead daemon's last counts. */
#define RPM_SERVICE_GONE_INTERVALS 2ULL
#define RPM_SERVICE_HUNG_MIN_NS 60000000000ULL
/* The account whose objects a reader trusts besides root's, unless
 * PAPI_HERITAGE_PARAGON_RPM_SERVICE_USER names another (name or uid). */
#define RPM_SERVICE_DEFAULT_USER "rpmd"

struct rpm_service_cpu {
	uint32_t os;                          /* OS CPU number */
	uint32_t pad;
	uint64_t count[RPM_PERF_NCOUNTS];     /* since the daemon opened them (started_ns) */
};

struct rpm_service_page {
	/* Written once, before the object is renamed to its public name. */
	uint32_t magic;                       /* RPM_SERVICE_MAGIC */
	uint32_t version;                     /* RPM_SERVICE_VERSION */
	uint32_t size;                        /* sizeof(struct rpm_service_page) */
	uint32_t ncpus;                       /* entries of cpu[] in use */
	uint32_t ncounts;                     /* RPM_PERF_NCOUNTS */
	int32_t pid;                          /* the daemon (in its pid namespace) */
	uint32_t uid;                         /* the daemon's effective uid */
	uint32_t pad;
	uint64_t interval_ns;                 /* it publishes this often */
	uint64_t started_ns;                  /* CLOCK_BOOTTIME when the counts were opened */
	uint64_t pidns;                       /* its pid namespace's inode (0: unknown) */
	uint64_t pid_start;                   /* its start, /proc/PID/stat field 22 (0: unknown) */
	int32_t err[RPM_PERF_NCOUNTS];        /* 0: counted; else the daemon's -errno ... */
	char why[RPM_PERF_NCOUNTS][RPM_SERVICE_WHY_LEN]; /* ... and why */
	/* Rewritten every interval, under the seqlock. */
	uint64_t seq __attribute__((aligned(64))); /* odd while the daemon writes */
	uint64_t heartbeat_ns;                /* CLOCK_BOOTTIME just before the counts were read */
	struct rpm_service_cpu cpu[RPM_MAX_CPUS];
};

/* ---- the page as data (pure: unit-tested in test_paragon.c) --------------- */
/* Header and per-CPU OS numbers; counts 0, sequence 0, heartbeat now. */
struct rpm_service_daemon {
	int32_t pid;
	uint32_t uid;
	uint64_t pidns, pid_start; /* heritage_pidns_self, heritage_pid_start */
};
void rpm_service_init(struct rpm_service_page *p, unsigned ncpus, const unsigned *os, uint64_t interval_ns,
                      uint64_t now_ns, const struct rpm_service_daemon *d, const int err[RPM_PERF_NCOUNTS],
                      const char *const why[RPM_PERF_NCOUNTS]);
/* The writer: one publication of every CPU's counts (counts[i] for cpu[i]). */
void rpm_service_publish(struct rpm_service_page *p, uint64_t now_ns, const uint64_t (*counts)[RPM_PERF_NCOUNTS]);
/* The reader: entry idx's counts and the heartbeat they go with, copied
 * consistently.  0, or -EAGAIN if the writer kept the sequence odd or moving
 * over many tries (a daemon killed inside a publication: its heartbeat then
 * goes stale).  Async-signal-safe: loads only. */
int rpm_service_read_cpu(const struct rpm_service_page *p, unsigned idx, uint64_t out[RPM_PERF_NCOUNTS],
                         uint64_t *heartbeat_ns);
/* Whether a page with this interval and heartbeat is stale at now, given
 * what is seen of its daemon (pure); and for a page, asking the kernel
 * about its pid only when that matters (heritage_daemon_seen:
 * async-signal-safe, errno kept). */
int rpm_service_stale_at(uint64_t interval_ns, uint64_t heartbeat_ns, uint64_t now_ns,
                         enum heritage_daemon_seen daemon);
int rpm_service_stale(const struct rpm_service_page *p, uint64_t heartbeat_ns, uint64_t now_ns);
/* The entry for OS CPU os, or -1. */
int rpm_service_find_cpu(const struct rpm_service_page *p, unsigned os);
/* Whether an object with this stat and content may be trusted by a reader
 * that trusts root and trusted_uid ((uid_t)-1: root only): a regular file,
 * owned by one of them, writable by nobody else, large enough, of this
 * format.  0, or a negative errno with the reason in why. */
int rpm_service_check(const struct stat *st, uid_t trusted_uid, const struct rpm_service_page *p, char *why,
                      size_t len);

/* ---- the object -------------------------------------------------------------- */
/* "/dev/shm/<name>-service". */
void rpm_service_path(char *buf, size_t len);
/* The service account's uid (PAPI_HERITAGE_PARAGON_RPM_SERVICE_USER, else
 * the account "rpmd"), or (uid_t)-1 if there is none.  Not signal-safe. */
uid_t rpm_service_trusted_uid(void);
/* Reader: maps the object at path read-only if rpm_service_check() and the
 * heartbeat accept it; *ino (if not NULL) is its inode.  0, or a negative
 * errno with the reason in why (the path in it).  Not signal-safe (open,
 * mmap). */
int rpm_service_map(const char *path, uid_t trusted_uid, const struct rpm_service_page **page, ino_t *ino,
                    char *why, size_t len);
/* 1 if the object at path is no longer the one with inode ino: a restarted
 * daemon renamed its page over it (which it does only once the old one's
 * process is gone), or it was removed.  One stat(); signal-safe. */
int rpm_service_replaced(const char *path, ino_t ino);
/* Daemon: a new object at path, filled by rpm_service_init's arguments,
 * replacing any there (another owner's object can be replaced only by root,
 * which owns /dev/shm: else -EEXIST with the reason).  *page is the
 * writable mapping, *ino the object's inode (for rpm_service_remove). */
int rpm_service_create(const char *path, unsigned ncpus, const unsigned *os, uint64_t interval_ns, uint64_t now_ns,
                       const int err[RPM_PERF_NCOUNTS], const char *const why[RPM_PERF_NCOUNTS],
                       struct rpm_service_page **page, ino_t *ino, char *why_out, size_t len);
/* Daemon, on exit: removes path if it is still the object it created. */
void rpm_service_remove(const char *path, ino_t ino);

#endif
