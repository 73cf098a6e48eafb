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
