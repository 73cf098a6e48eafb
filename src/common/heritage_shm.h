/*
 * What the daemons' published /dev/shm objects share (rpm_service.h's page
 * for rpmd, imc_shm.h's nest pages for imcd): whether another live daemon
 * already publishes under a name, and publishing an object in one step.
 * Each caller keeps its own layout, checks, messages and mode.
 */
#ifndef HERITAGE_SHM_H
#define HERITAGE_SHM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* CLOCK_BOOTTIME in ns: the clock of the objects' heartbeats (it goes on
 * counting through suspend, as the daemons' absence does). */
uint64_t heritage_boottime_ns(void);

/* Whether PID is a live process (EPERM: alive, another account's); errno
 * kept. */
int heritage_pid_alive(int32_t pid);

/* The inode of this process's pid namespace (/proc/self/ns/pid), or 0 if
 * /proc cannot say.  Taken once: a process's own pid namespace does not
 * change.  Async-signal-safe after the first call (a load). */
uint64_t heritage_pidns_self(void);

/* PID's start time in clock ticks since boot (/proc/PID/stat field 22), or
 * 0 if it is gone or unreadable: with the pid, it names one process, not
 * whichever got the number since.  Async-signal-safe (open, read, close). */
uint64_t heritage_pid_start(int32_t pid);

/* What a reader can tell of a daemon's process from the pid, pid
 * namespace and start time its object names (0: unknown, as an older
 * daemon's object says).  Async-signal-safe, errno kept. */
enum heritage_daemon_seen {
	HERITAGE_DAEMON_UNSEEN = 0, /* no such pid here: gone, or in another pid namespace */
	HERITAGE_DAEMON_ALIVE = 1,
	HERITAGE_DAEMON_GONE = 2,   /* in our pid namespace, and dead or its pid another's since */
};
enum heritage_daemon_seen heritage_daemon_seen(int32_t pid, uint64_t pidns, uint64_t pid_start);

/* A daemon's heartbeat (CLOCK_BOOTTIME) ahead of a reader's clock by up to
 * this is fresh: written after the reader took the time (make stress: a
 * reader preempted between its clock read and its load called a live
 * imcd's page stale).  Further ahead is not ours to explain (another time
 * namespace?): not trusted. */
#define HERITAGE_HEARTBEAT_AHEAD_NS 1000000000ULL

/* Whether an object naming PID as its publisher belongs to another daemon
 * that is still alive: not ours to take.  (Our own pid: a restarted
 * daemon's object, or ours again.) */
int heritage_shm_taken(int32_t pid);

/* NAME as a uid: digits as they are, else the account's; (uid_t)-1 if none. */
uid_t heritage_uid_of(const char *name);

/* Opens PATH, DAEMON's published object, to read it: a descriptor, or
 * -errno with WHY (ENOENT: DAEMON is not running). */
int heritage_shm_open_reader(const char *path, const char *daemon, char *why, size_t len);

/* An object being written under a private name. */
struct heritage_shm_new {
	char tmp[600]; /* the private name */
	void *mem;     /* SIZE bytes, mapped read-write */
	size_t size;
	ino_t ino;
};

/* Creates SIZE bytes, mode MODE, under a private name next to PATH and maps
 * them, for the caller to fill before heritage_shm_install.  Returns 0, or
 * -errno with WHY (nothing left behind). */
int heritage_shm_prepare(const char *path, size_t size, mode_t mode, struct heritage_shm_new *n, char *why,
                         size_t len);

/* Renames the filled object to PATH.  Returns 0, or -errno (the private
 * object removed and unmapped: the caller says why, with n->tmp). */
int heritage_shm_install(const char *path, struct heritage_shm_new *n);

/* Unlinks PATH if it is still the object INO: not a successor's. */
void heritage_shm_remove(const char *path, ino_t ino);

#endif
