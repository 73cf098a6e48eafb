#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/heritage_daemon.h"

const char *heritage_daemon_default_pidfile(const char *name, char *buf, size_t len)
{
	if (geteuid() == 0) {
		snprintf(buf, len, "/run/%s.pid", name);
		return buf;
	}
	const char *dir = secure_getenv("XDG_RUNTIME_DIR");
	if (!dir || !*dir)
		dir = P_tmpdir;
	snprintf(buf, len, "%s/%s-%u.pid", dir, name, (unsigned)geteuid());
	return buf;
}

/* An account's pidfile sits in a directory others may write (P_tmpdir when
 * there is no XDG_RUNTIME_DIR): a symbolic link or a file planted there by
 * another account is neither followed nor believed. */
static int own_regular_file(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid();
}

long heritage_daemon_read_pid(const char *pidfile)
{
	int fd = open(pidfile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (!own_regular_file(fd)) {
		close(fd);
		return -1;
	}
	FILE *f = fdopen(fd, "r");
	long pid = -1;
	if (!f)
		close(fd);
	if (f) {
		if (fscanf(f, "%ld", &pid) != 1)
			pid = -1;
		fclose(f);
	}
	return pid;
}

int heritage_daemon_stop(const char *name, const char *pidfile)
{
	int fd = open(pidfile, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP) {
		fprintf(stderr, "%s: %s is a symbolic link: not followed (remove it)\n", name, pidfile);
		return 1;
	}
	if (fd < 0) {
		fprintf(stderr, "%s: not running (no %s)\n", name, pidfile);
		return 1;
	}
	/* Ours to take: nobody holds it, whatever pid it names. */
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		fprintf(stderr, "%s: not running (stale %s)\n", name, pidfile);
		close(fd);
		return 1;
	}
	long pid = heritage_daemon_read_pid(pidfile);
	if (pid <= 0 || kill((pid_t)pid, SIGTERM) != 0) {
		fprintf(stderr, "%s: cannot signal pid %ld: %s\n", name, pid, strerror(errno));
		close(fd);
		return 1;
	}
	/* Stopped when it lets go of the lock. */
	for (int i = 0; i < 500; i++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			close(fd);
			return 0;
		}
		usleep(10000);
	}
	fprintf(stderr, "%s: pid %ld did not stop within 5 s\n", name, pid);
	close(fd);
	return 1;
}

int heritage_daemon_command(const char *name, int argc, char **argv, int first, const char *pidfile)
{
	if (first >= argc)
		return -1;
	if (strcmp(argv[first], "stop") == 0)
		return heritage_daemon_stop(name, pidfile);
	fprintf(stderr, "%s: unknown command \"%s\" (the only one is stop)\n", name, argv[first]);
	return 2;
}

int heritage_daemon_lock(const char *name, const char *pidfile)
{
	int pfd = open(pidfile, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (pfd < 0) {
		fprintf(stderr, "%s: %s: %s%s\n", name, pidfile, strerror(errno),
		        errno == ELOOP ? " (a symbolic link: not followed; remove it)" : "");
		return -1;
	}
	if (!own_regular_file(pfd)) {
		fprintf(stderr, "%s: %s: not a regular file of this account's: refusing it (remove it)\n", name,
		        pidfile);
		close(pfd);
		return -1;
	}
	if (flock(pfd, LOCK_EX | LOCK_NB) != 0) {
		fprintf(stderr, "%s: already running as pid %ld (%s)\n", name, heritage_daemon_read_pid(pidfile), pidfile);
		close(pfd);
		return -1;
	}
	return pfd;
}

void heritage_daemon_write_pid(const char *name, int pfd, const char *pidfile)
{
	char buf[32];
	int len = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
	if (ftruncate(pfd, 0) != 0 || pwrite(pfd, buf, (size_t)len, 0) != len)
		fprintf(stderr, "%s: cannot write %s\n", name, pidfile);
}

int heritage_daemon_detach(const char *name, int *ready, int *status)
{
	int word[2] = { -1, -1 };
	*status = 0;
	if (ready && pipe(word) != 0) {
		fprintf(stderr, "%s: pipe: %s\n", name, strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s: fork: %s\n", name, strerror(errno));
		return -1;
	}
	if (pid > 0) {
		if (ready) {
			char ok = 0;
			close(word[1]);
			ssize_t n = read(word[0], &ok, 1); /* 0: the child died without a word */
			*status = n == 1 && ok == 'y' ? 0 : 1;
		}
		return 1;
	}
	if (ready) {
		close(word[0]);
		*ready = word[1];
	}
	setsid();
	return 0;
}

void heritage_daemon_ready(int ready)
{
	ssize_t w = write(ready, "y", 1);
	(void)w;
	close(ready);
	int null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		close(null);
	}
}
