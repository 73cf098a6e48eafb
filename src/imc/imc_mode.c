#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "imc/imc_mode.h"

#define MODE_MAGIC 0x494d434dU /* "IMCM" */
#define MODE_VERSION 1U
#define MODE_SLOTS 256

struct mode_registry {
	uint32_t magic, version;
	int32_t lock;              /* pid of the process inside, 0: free */
	uint32_t pad;
	struct {
		int32_t pid;           /* 0: free */
		uint32_t domain;       /* enum imc_domain_excl */
	} slot[MODE_SLOTS];
};

static pthread_mutex_t local_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned local_refs[4];
static int local_slot = -1;
static struct mode_registry *reg;
static pid_t reg_pid;

const char *imc_excl_name(enum imc_domain_excl d)
{
	return d == IMC_EXCL_CORE ? "core_imc" : d == IMC_EXCL_THREAD ? "thread_imc" : d == IMC_EXCL_TRACE ? "trace_imc" : "?";
}

static int alive(int32_t pid)
{
	int saved = errno;
	int a = pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
	errno = saved;
	return a;
}

static int registry(void)
{
	if (reg)
		return 0;
	const char *n = heritage_env("imc", "shm");
	char name[256];
	snprintf(name, sizeof name, "/%s-modes", n && *n ? n : "papi-heritage-imc");
	int created = 1;
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0666);
	if (fd < 0 && errno == EEXIST) {
		created = 0;
		fd = shm_open(name, O_RDWR, 0);
	}
	if (fd < 0)
		return heritage_fail(-errno, "imc: the system-wide mode registry /dev/shm%s: %s%s", name, strerror(errno),
		                     errno == EACCES ? " (made by another account without write access for all: remove it)" : "");
	if (created && (fchmod(fd, 0666) != 0 || ftruncate(fd, sizeof *reg) != 0)) {
		int e = errno;
		close(fd);
		shm_unlink(name);
		return heritage_fail(-e, "imc: cannot make /dev/shm%s: %s", name, strerror(e));
	}
	struct stat st;
	for (int i = 0; i < 1000 && fstat(fd, &st) == 0 && (size_t)st.st_size < sizeof *reg; i++)
		usleep(1000);
	if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof *reg) {
		close(fd);
		return heritage_fail(-EPROTO, "imc: /dev/shm%s has the wrong size (another version? remove it)", name);
	}
	void *m = mmap(NULL, sizeof *reg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int e = errno;
	close(fd);
	if (m == MAP_FAILED)
		return heritage_fail(-e, "imc: cannot map /dev/shm%s: %s", name, strerror(e));
	struct mode_registry *r = m;
	if (created) {
		r->version = MODE_VERSION;
		__atomic_store_n(&r->magic, MODE_MAGIC, __ATOMIC_RELEASE);
	} else {
		for (int i = 0; i < 1000 && __atomic_load_n(&r->magic, __ATOMIC_ACQUIRE) != MODE_MAGIC; i++)
			usleep(1000);
		if (r->magic != MODE_MAGIC || r->version != MODE_VERSION) {
			munmap(m, sizeof *reg);
			return heritage_fail(-EPROTO, "imc: /dev/shm%s is not a version-%u mode registry (remove it)", name,
			                     MODE_VERSION);
		}
	}
	reg = r;
	return 0;
}

/* The registry's lock: a pid, taken back from a process that died inside. */
static int reg_lock(void)
{
	int32_t self = (int32_t)getpid();
	for (unsigned i = 0; i < 200000; i++) {
		int32_t cur = 0;
		if (__atomic_compare_exchange_n(&reg->lock, &cur, self, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return 0;
		if (cur == self || !alive(cur)) {
			if (__atomic_compare_exchange_n(&reg->lock, &cur, self, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				return 0;
		}
		if (i > 64)
			sched_yield();
	}
	return heritage_fail(-EAGAIN, "imc: the mode registry stays locked by pid %d", (int)reg->lock);
}

static void reg_unlock(void)
{
	__atomic_store_n(&reg->lock, 0, __ATOMIC_RELEASE);
}

static void after_fork_child(void)
{
	/* The child holds nothing: its parent's slot is its parent's. */
	memset(local_refs, 0, sizeof local_refs);
	local_slot = -1;
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
	int err = registry();
	if (!err)
		err = reg_lock();
	if (err) {
		pthread_mutex_unlock(&local_lock);
		return err;
	}
	int32_t self = (int32_t)getpid();
	int free_slot = -1;
	for (int i = 0; i < MODE_SLOTS; i++) {
		int32_t pid = reg->slot[i].pid;
		if (pid == 0 || pid == self || !alive(pid)) {
			if (pid != 0 && pid != self) /* a dead holder's slot */
				reg->slot[i].pid = 0;
			if (free_slot < 0 && pid != self)
				free_slot = i;
			if (pid == self) /* a stale slot of an earlier life of this pid */
				reg->slot[i].pid = 0, free_slot = free_slot < 0 ? i : free_slot;
			continue;
		}
		if (reg->slot[i].domain != (uint32_t)d) {
			enum imc_domain_excl other = (enum imc_domain_excl)reg->slot[i].domain;
			reg_unlock();
			pthread_mutex_unlock(&local_lock);
			return heritage_fail(-EBUSY, "imc: %s is in use by pid %d: core_imc, thread_imc and trace_imc exclude "
			                     "one another system-wide, as the kernel's do (the hardware is in accumulation or "
			                     "trace mode); %s must wait until it stops", imc_excl_name(other), (int)pid,
			                     imc_excl_name(d));
		}
	}
	if (free_slot < 0) {
		reg_unlock();
		pthread_mutex_unlock(&local_lock);
		return heritage_fail(-ENOSPC, "imc: the mode registry's %d slots are all held by live processes", MODE_SLOTS);
	}
	reg->slot[free_slot].domain = (uint32_t)d;
	reg->slot[free_slot].pid = self;
	reg_unlock();
	local_slot = free_slot;
	reg_pid = self;
	local_refs[d] = 1;
	pthread_mutex_unlock(&local_lock);
	return 0;
}

void imc_excl_release(enum imc_domain_excl d)
{
	if (d < IMC_EXCL_CORE || d > IMC_EXCL_TRACE)
		return;
	pthread_mutex_lock(&local_lock);
	if (local_refs[d] && --local_refs[d] == 0 && reg && local_slot >= 0 && reg_pid == getpid()) {
		if (reg_lock() == 0) {
			if (reg->slot[local_slot].pid == (int32_t)getpid())
				reg->slot[local_slot].pid = 0;
			reg_unlock();
		}
		local_slot = -1;
	}
	pthread_mutex_unlock(&local_lock);
}
