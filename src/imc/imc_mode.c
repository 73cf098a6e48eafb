#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "common/heritage_shm.h"
#include "imc/imc_mode.h"

#define CLAIM_MAGIC 0x494d4343U /* "IMCC" */
#define CLAIM_VERSION 1U
#define CLAIM_NAMES 8 /* <prefix><pid>-<k>: tried in turn, as one may be planted */

struct mode_claim {
	uint32_t magic, version;
	uint32_t domain;    /* enum imc_domain_excl */
	int32_t pid;
	uint64_t pid_start; /* heritage_pid_start(pid): the pid's holder, not its reuser */
};

static pthread_mutex_t local_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned local_refs[4];
static char own_path[300]; /* this process's claim, "" while it holds none */
static ino_t own_ino;
static pid_t own_pid;

const char *imc_excl_name(enum imc_domain_excl d)
{
	return d == IMC_EXCL_CORE ? "core_imc" : d == IMC_EXCL_THREAD ? "thread_imc" : d == IMC_EXCL_TRACE ? "trace_imc" : "?";
}

/* "<name>-mode-": the claims' prefix in /dev/shm. */
static void claim_prefix(char *buf, size_t len)
{
	const char *n = heritage_env("imc", "shm");
	snprintf(buf, len, "%s-mode-", n && *n ? n : "papi-heritage-imc");
}

/* The effective uid PID runs as (/proc/PID/status: /proc/PID itself is
 * root's for a process that is not dumpable); -1 if it is gone. */
static uid_t euid_of(int32_t pid)
{
	char path[48], buf[4096];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return (uid_t)-1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return (uid_t)-1;
	buf[n] = 0;
	unsigned long real, eff;
	const char *u = strstr(buf, "\nUid:");
	return u && sscanf(u + 5, "%lu %lu", &real, &eff) == 2 ? (uid_t)eff : (uid_t)-1;
}

/* 1 if the object at fd is a claim that counts: whole, its pid alive with
 * the start time it names, running as the object's owner.  *dead: a whole
 * claim whose process is gone (its owner may remove it). */
static int claim_live(int fd, struct mode_claim *c, struct stat *st, int *dead)
{
	*dead = 0;
	if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_size != (off_t)sizeof *c ||
	    pread(fd, c, sizeof *c, 0) != (ssize_t)sizeof *c || c->magic != CLAIM_MAGIC || c->version != CLAIM_VERSION ||
	    c->pid <= 0 || c->domain < IMC_EXCL_CORE || c->domain > IMC_EXCL_TRACE)
		return 0;
	uint64_t start = heritage_pid_start(c->pid);
	if (start == 0 || start != c->pid_start) {
		*dead = 1;
		return 0;
	}
	return euid_of(c->pid) == st->st_uid;
}

/* The pid of a live claim of another domain than d by another process (0:
 * none), *other its domain.  This account's claims of dead processes go. */
static int32_t conflicting_claim(enum imc_domain_excl d, enum imc_domain_excl *other)
{
	char prefix[256];
	claim_prefix(prefix, sizeof prefix);
	size_t plen = strlen(prefix);
	DIR *dir = opendir("/dev/shm");
	if (!dir)
		return 0;
	int32_t holder = 0;
	struct dirent *e;
	while (!holder && (e = readdir(dir)) != NULL) {
		/* A '.': heritage_shm_prepare's private name, not yet a claim. */
		if (strncmp(e->d_name, prefix, plen) != 0 || strchr(e->d_name + plen, '.'))
			continue;
		char path[600];
		snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
		if (strcmp(path, own_path) == 0)
			continue;
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		struct mode_claim c;
		struct stat st;
		int dead, live = claim_live(fd, &c, &st, &dead);
		close(fd);
		if (!live && dead && st.st_uid == geteuid())
			heritage_shm_remove(path, st.st_ino);
		if (live && c.pid != (int32_t)getpid() && c.domain != (uint32_t)d) {
			holder = c.pid;
			*other = (enum imc_domain_excl)c.domain;
		}
	}
	closedir(dir);
	return holder;
}

/* Publishes this process's claim of d: 0, or -errno with the reason. */
static int claim_publish(enum imc_domain_excl d)
{
	char prefix[256], path[300], why[700];
	claim_prefix(prefix, sizeof prefix);
	int32_t self = (int32_t)getpid();
	int err = -EEXIST;
	for (int k = 0; k < CLAIM_NAMES && err; k++) {
		snprintf(path, sizeof path, "/dev/shm/%s%d-%d", prefix, (int)self, k);
		struct heritage_shm_new n;
		/* 0644: every account reads it, only its owner changes it. */
		err = heritage_shm_prepare(path, sizeof(struct mode_claim), 0644, &n, why, sizeof why);
		if (err)
			return heritage_fail(err, "imc: cannot publish this process's %s claim: %s", imc_excl_name(d), why);
		struct mode_claim *c = n.mem;
		*c = (struct mode_claim){ .magic = CLAIM_MAGIC, .version = CLAIM_VERSION, .domain = (uint32_t)d,
		                          .pid = self, .pid_start = heritage_pid_start(self) };
		/* Renamed over nothing but a claim of ours: over another
		 * account's (planted, or of an earlier life of this pid) the
		 * sticky /dev/shm refuses, and the next name is tried. */
		err = heritage_shm_install(path, &n);
		if (!err) {
			munmap(n.mem, n.size);
			snprintf(own_path, sizeof own_path, "%s", path);
			own_ino = n.ino;
			own_pid = self;
		}
	}
	return err ? heritage_fail(err, "imc: cannot publish this process's %s claim in /dev/shm: %s", imc_excl_name(d),
	                           strerror(-err))
	           : 0;
}

static void claim_withdraw(void)
{
	if (own_path[0] && own_pid == getpid())
		heritage_shm_remove(own_path, own_ino);
	own_path[0] = 0;
}

static void after_fork_child(void)
{
	/* The child holds nothing: its parent's claim is its parent's. */
	memset(local_refs, 0, sizeof local_refs);
	own_path[0] = 0;
	pthread_mutex_init(&local_lock, NULL);
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void fork_setup(void)
{
	pthread_atfork(NULL, NULL, after_fork_child);
}

int imc_excl_acquire(enum imc_domain_excl d)
{
	if (d < IMC_EXCL_CORE || d > IMC_EXCL_TRACE)
		return heritage_fail(-EINVAL, "imc: no exclusive domain %d", (int)d);
	pthread_once(&fork_once, fork_setup);
	pthread_mutex_lock(&local_lock);
	for (int o = IMC_EXCL_CORE; o <= IMC_EXCL_TRACE; o++)
		if (o != (int)d && local_refs[o]) {
			pthread_mutex_unlock(&local_lock);
			return heritage_fail(-EBUSY, "imc: %s is in use by this process (pid %d): core_imc, thread_imc and "
			                     "trace_imc exclude one another system-wide, as the kernel's do (the hardware is in "
			                     "accumulation or trace mode)", imc_excl_name((enum imc_domain_excl)o), (int)getpid());
		}
	if (local_refs[d]) {
		local_refs[d]++;
		pthread_mutex_unlock(&local_lock);
		return 0;
	}
	/* Published first, then looked for others': of two processes
	 * claiming conflicting domains at once, the later to publish sees
	 * the earlier (both may see each other and both refuse; never both
	 * hold). */
	int err = claim_publish(d);
	enum imc_domain_excl other = d;
	int32_t holder = err ? 0 : conflicting_claim(d, &other);
	if (holder) {
		claim_withdraw();
		err = heritage_fail(-EBUSY, "imc: %s is in use by pid %d: core_imc, thread_imc and trace_imc exclude "
		                    "one another system-wide, as the kernel's do (the hardware is in accumulation or "
		                    "trace mode); %s must wait until it stops", imc_excl_name(other), (int)holder,
		                    imc_excl_name(d));
	}
	if (!err)
		local_refs[d] = 1;
	pthread_mutex_unlock(&local_lock);
	return err;
}

void imc_excl_release(enum imc_domain_excl d)
{
	if (d < IMC_EXCL_CORE || d > IMC_EXCL_TRACE)
		return;
	pthread_mutex_lock(&local_lock);
	if (local_refs[d] && --local_refs[d] == 0)
		claim_withdraw();
	pthread_mutex_unlock(&local_lock);
}
