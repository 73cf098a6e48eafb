#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/heritage_shm.h"

uint64_t heritage_boottime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int heritage_pid_alive(int32_t pid)
{
	int saved = errno;
	int alive = pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
	errno = saved;
	return alive;
}

uint64_t heritage_pidns_self(void)
{
	static uint64_t ns; /* 0: not taken yet, or /proc could not say */
	uint64_t v = __atomic_load_n(&ns, __ATOMIC_RELAXED);
	if (v)
		return v;
	int saved = errno;
	struct stat st;
	if (stat("/proc/self/ns/pid", &st) == 0)
		v = (uint64_t)st.st_ino;
	errno = saved;
	__atomic_store_n(&ns, v, __ATOMIC_RELAXED);
	return v;
}

uint64_t heritage_pid_start(int32_t pid)
{
	if (pid <= 0)
		return 0;
	/* "/proc/<pid>/stat" without snprintf, which is not async-signal-safe. */
	char path[32] = "/proc/", digits[12];
	int nd = 0;
	for (uint32_t v = (uint32_t)pid; v; v /= 10)
		digits[nd++] = (char)('0' + v % 10);
	size_t at = 6;
	while (nd)
		path[at++] = digits[--nd];
	memcpy(path + at, "/stat", 6);
	int saved = errno;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char buf[1024];
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	errno = saved;
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The name (field 2) may hold spaces and parentheses: count from the
	 * last ')'.  Field 22 is the 20th after it. */
	const char *q = strrchr(buf, ')');
	for (int field = 2; q && field < 22; field++)
		q = strchr(q + 1, ' ');
	if (!q)
		return 0;
	uint64_t start = 0;
	for (q++; *q >= '0' && *q <= '9'; q++)
		start = start * 10 + (uint64_t)(*q - '0');
	return start;
}

enum heritage_daemon_seen heritage_daemon_seen(int32_t pid, uint64_t pidns, uint64_t pid_start)
{
	int alive = heritage_pid_alive(pid);
	if (!pidns || pidns != heritage_pidns_self())
		return alive ? HERITAGE_DAEMON_ALIVE : HERITAGE_DAEMON_UNSEEN;
	if (!alive)
		return HERITAGE_DAEMON_GONE;
	/* Alive under that pid: the daemon, or a process that got its number
	 * since (the start time says which; unknown counts as the daemon). */
	uint64_t start = heritage_pid_start(pid);
	return pid_start && start && start != pid_start ? HERITAGE_DAEMON_GONE : HERITAGE_DAEMON_ALIVE;
}

int heritage_shm_taken(int32_t pid)
{
	return pid != getpid() && heritage_pid_alive(pid);
}

uid_t heritage_uid_of(const char *name)
{
	char *end;
	if (isdigit((unsigned char)*name)) {
		unsigned long u = strtoul(name, &end, 10);
		/* Not one that wraps to another account's (or root's) uid. */
		return *end || u >= (unsigned long)(uid_t)-1 ? (uid_t)-1 : (uid_t)u;
	}
	struct passwd pw, *res = NULL;
	char buf[4096];
	if (getpwnam_r(name, &pw, buf, sizeof buf, &res) != 0 || !res)
		return (uid_t)-1;
	return res->pw_uid;
}

int heritage_shm_open_reader(const char *path, const char *daemon, char *why, size_t len)
{
	/* O_NONBLOCK: a FIFO planted under the name must not hang the reader;
	 * O_NOFOLLOW: nor may a symlink lead it elsewhere. */
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT)
			snprintf(why, len, "%s: no such object (%s is not running)", path, daemon);
		else
			snprintf(why, len, "%s: %s", path, strerror(e));
		return -e;
	}
	return fd;
}

int heritage_shm_prepare(const char *path, size_t size, mode_t mode, struct heritage_shm_new *n, char *why,
                         size_t len)
{
	/* Filled under a private name, then renamed: a reader never opens a
	 * half-written object, and a stale one is replaced in one step.  A
	 * random name (O_EXCL), which nobody can have planted in /dev/shm
	 * beforehand. */
	snprintf(n->tmp, sizeof n->tmp, "%s.XXXXXX", path);
	int fd = mkostemp(n->tmp, O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(why, len, "%s: %s", n->tmp, strerror(e));
		return -e;
	}
	struct stat st;
	void *m = MAP_FAILED;
	int e = 0;
	/* fchmod: the umask may have taken the read bits others need. */
	if (fchmod(fd, mode) != 0 || ftruncate(fd, (off_t)size) != 0 || fstat(fd, &st) != 0)
		e = errno;
	else if ((m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
		e = errno;
	close(fd);
	if (e) {
		unlink(n->tmp);
		snprintf(why, len, "%s: %s", n->tmp, strerror(e));
		return -e;
	}
	n->mem = m;
	n->size = size;
	n->ino = st.st_ino;
	return 0;
}

int heritage_shm_install(const char *path, struct heritage_shm_new *n)
{
	if (rename(n->tmp, path) == 0)
		return 0;
	int e = errno;
	unlink(n->tmp);
	munmap(n->mem, n->size);
	n->mem = NULL;
	return -e;
}

void heritage_shm_remove(const char *path, ino_t ino)
{
	struct stat st;
	if (lstat(path, &st) == 0 && st.st_ino == ino)
		unlink(path);
}
