/*
 * Parking the other threads of the process (see watch_park.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "watch_park.h"
#include "watch_sys.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <limits.h>
#include <stdatomic.h>
#include <sys/single_threaded.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096u
#define PARK_MAX_THREADS 1024
#define PARK_ROUNDS 4                       /* re-enumerations to catch new threads */
#define PARK_TIMEOUT_NS (200L * 1000 * 1000) /* per park: a thread that never answers */
#define PARK_POLL_NS (1000L * 1000)         /* liveness check of laggards */

struct park_target {
	_Atomic int tid;
	_Atomic uint32_t acked; /* last generation this thread acknowledged */
	int signalled;
};

struct park_state {
	int ready;
	int signo;
	int task_fd;
	int pid;
	/* Read through this pointer, taken at init, so the handler never reads the
	 * GOT (which may share a page with watched globals). */
	const volatile char *single_threaded;
	_Atomic uint32_t gen;      /* generation of the current (or last) park */
	_Atomic uint32_t released; /* last released generation; futex word */
	_Atomic int parker;        /* tid of the parking thread while parked */
	_Atomic uint32_t ack_seq;  /* bumped on every acknowledgement; futex word */
	_Atomic uint64_t timeouts;
	_Atomic uint64_t unparkable; /* targets that blocked the park signal when polled */
	_Atomic int64_t timeout_ns;  /* 0: PARK_TIMEOUT_NS (watch_park_set_timeout_ns) */
	void (*_Atomic on_park)(void *uctx); /* watch_park_run_in_others: run by each parked thread */
	unsigned ntargets;
	struct park_target targets[PARK_MAX_THREADS];
	unsigned char dents[8192] __attribute__((aligned(8)));
};

/* Whole pages of our own, never watched (fits() refuses them). */
#define PARK_STATE_BYTES ((sizeof(struct park_state) + PAGE - 1) / PAGE * PAGE)
static union {
	struct park_state s;
	unsigned char pad[PARK_STATE_BYTES];
} park __attribute__((aligned(4096)));

#define P (park.s)

/* Cached: SIGRTMIN is a libc call, which the handlers must not make. */
int watch_park_signal(void)
{
	if (!P.signo)
		P.signo = SIGRTMIN + WATCH_PARK_SIGNAL_OFFSET;
	return P.signo;
}

static int open_task_dir(void)
{
	return (int)watch_sys6(SYS_openat, AT_FDCWD, (long)"/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC,
	                       0, 0, 0);
}

int watch_park_init(void)
{
	if (P.ready)
		return 0;
	int fd = open_task_dir();
	if (fd < 0)
		return fd;
	P.task_fd = fd;
	watch_park_signal();
	P.ready = 1;
	P.pid = watch_sys_getpid();
	P.single_threaded = &__libc_single_threaded;
	return 0;
}

void watch_park_atfork_child(void)
{
	if (!P.ready)
		return;
	close(P.task_fd);
	P.task_fd = open_task_dir();
	P.ready = P.task_fd >= 0;
	P.pid = watch_sys_getpid();
	atomic_store(&P.released, atomic_load(&P.gen));
	atomic_store(&P.parker, 0);
	P.ntargets = 0;
}

uint64_t watch_park_unparkable(void)
{
	return atomic_load(&P.unparkable);
}

uint64_t watch_park_timeouts(void)
{
	return atomic_load(&P.timeouts);
}

int64_t watch_park_set_timeout_ns(int64_t ns)
{
	int64_t old = atomic_exchange(&P.timeout_ns, ns < 0 ? 0 : ns ? ns : 1);
	return old ? old : PARK_TIMEOUT_NS;
}

void watch_park_state_range(uintptr_t *lo, uintptr_t *hi)
{
	*lo = (uintptr_t)&park;
	*hi = (uintptr_t)&park + sizeof park;
}

static long futex(_Atomic uint32_t *word, int op, uint32_t val, const struct timespec *timeout)
{
	return watch_sys6(SYS_futex, (long)word, op, (long)val, (long)timeout, 0, 0);
}

static int64_t now_ns(void)
{
	struct timespec ts;
	watch_sys3(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&ts, 0);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int gen_before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

/* A thread inside the park handler blocks the park signal, as one that
 * blocks it for good does (watch_park_blocked), and no mark the handler
 * itself sets covers the whole span: it can be preempted between the
 * kernel's delivery and its first store, or between its last store and
 * rt_sigreturn, for as long as a loaded machine likes.  Taken there for a
 * thread that blocks it for good, it was neither waited for nor handed a
 * signal stack, and its next signal on its watched stack killed the process
 * (test_pagetrap thread_late_to_its_signal_stack_is_not_left_without_one:
 * the thread had no stack slot, 401 of 402 parks had timed out; 2 runs in
 * 10 as nobody with perf refused, 1 in 12-27 as root with it refused, none
 * in 60 with the mark; Zen 3 guest).  So the kernel marks the span:
 * the handler's sa_mask blocks glibc's SIGCANCEL too, which glibc's
 * sigprocmask and pthread_sigmask never block (they clear it from every
 * mask they are given).  A pthread_cancel of a parked thread waits for the
 * release. */
#define PARK_HANDLER_MARK 32

void watch_park_handler_mask(sigset_t *mask)
{
	/* By hand, in the kernel's first word (signals 1-64): sigaddset refuses
	 * glibc's internal signals. */
	*(uint64_t *)(void *)mask |= (uint64_t)1 << (PARK_HANDLER_MARK - 1);
}

void watch_park_handler(int sig, siginfo_t *info, void *uctx)
{
	(void)sig; (void)info;
	int self = watch_sys_gettid();
	uint32_t released = atomic_load(&P.released);
	uint32_t g = atomic_load(&P.gen);
	if (g == released)
		return; /* a late signal from a park already over */
	if (self == atomic_load(&P.parker))
		return; /* the parker never parks itself */
	void (*fn)(void *uctx) = atomic_load(&P.on_park);
	if (fn)
		fn(uctx);
	for (unsigned i = 0; i < P.ntargets && i < PARK_MAX_THREADS; i++) {
		if (atomic_load(&P.targets[i].tid) != self)
			continue;
		/* Only ever move forward: a stale handler must not undo an ack. */
		uint32_t old = atomic_load(&P.targets[i].acked);
		while (gen_before(old, g) && !atomic_compare_exchange_weak(&P.targets[i].acked, &old, g))
			;
		break;
	}
	atomic_fetch_add(&P.ack_seq, 1);
	futex(&P.ack_seq, FUTEX_WAKE_PRIVATE, 1, NULL);
	for (;;) {
		uint32_t r = atomic_load(&P.released);
		if (!gen_before(r, g))
			break;
		futex(&P.released, FUTEX_WAIT_PRIVATE, r, NULL);
	}
}

/* Adds threads not yet known; returns how many were added. */
static unsigned enumerate_threads(int self)
{
	unsigned added = 0;
	if (watch_sys3(SYS_lseek, P.task_fd, 0, SEEK_SET) < 0)
		return 0;
	for (;;) {
		long n = watch_sys3(SYS_getdents64, P.task_fd, (long)P.dents, sizeof P.dents);
		if (n <= 0)
			break;
		for (long off = 0; off < n;) {
			/* struct linux_dirent64: ino(8) off(8) reclen(2) type(1) name */
			const unsigned char *d = P.dents + off;
			unsigned short reclen = (unsigned short)(d[16] | (d[17] << 8));
			const char *name = (const char *)d + 19;
			off += reclen;
			if (name[0] < '0' || name[0] > '9')
				continue;
			int tid = 0;
			for (const char *c = name; *c >= '0' && *c <= '9'; c++)
				tid = tid * 10 + (*c - '0');
			if (tid == self)
				continue;
			unsigned i;
			for (i = 0; i < P.ntargets; i++)
				if (atomic_load(&P.targets[i].tid) == tid)
					break;
			if (i < P.ntargets || P.ntargets >= PARK_MAX_THREADS)
				continue;
			struct park_target *t = &P.targets[P.ntargets];
			atomic_store(&t->acked, atomic_load(&P.gen) - 1);
			t->signalled = 0;
			atomic_store(&t->tid, tid);
			P.ntargets++;
			added++;
		}
	}
	return added;
}

/* Whether thread tid blocks the park signal now, outside the park handler
 * (its SigBlk in /proc/self/task/<tid>/status has the signal and not
 * PARK_HANDLER_MARK), by raw system calls: the parker may run in a signal
 * handler.  Such a thread cannot acknowledge until it unblocks, and a
 * thread that blocks every signal for its whole life (the sigwait() thread
 * of many programs, imc's engine thread) never does: each park would wait
 * PARK_TIMEOUT_NS for it.  ctests/stress measured that: 8 threads counting
 * page-trap ranges while imc's engine thread ran made 46 parks in 8 s, 49
 * timeouts.  Parking it is impossible either way; waiting for it only
 * stalled every other thread. */
static int blocks_park_signal(int tid)
{
	char path[32], buf[2048];
	int n = 0;
	char digits[12];
	do
		digits[n++] = (char)('0' + tid % 10);
	while ((tid /= 10) && n < (int)sizeof digits);
	int k = 0;
	while (n)
		path[k++] = digits[--n];
	const char *tail = "/status";
	while (*tail)
		path[k++] = *tail++;
	path[k] = 0;
	long fd = watch_sys6(SYS_openat, P.task_fd, (long)path, O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (fd < 0)
		return 0;
	long got = watch_sys3(SYS_read, fd, (long)buf, sizeof buf - 1);
	watch_sys3(SYS_close, fd, 0, 0);
	if (got <= 0)
		return 0;
	buf[got] = 0;
	for (long i = 0; i + 8 < got; i++) {
		if (buf[i] != 'S' || (i && buf[i - 1] != '\n') || buf[i + 1] != 'i' || buf[i + 2] != 'g' || buf[i + 3] != 'B' ||
		    buf[i + 4] != 'l' || buf[i + 5] != 'k' || buf[i + 6] != ':')
			continue;
		uint64_t mask = 0;
		for (long j = i + 7; j < got && buf[j] != '\n'; j++) {
			char c = buf[j];
			if (c >= '0' && c <= '9')
				mask = mask << 4 | (uint64_t)(c - '0');
			else if (c >= 'a' && c <= 'f')
				mask = mask << 4 | (uint64_t)(c - 'a' + 10);
		}
		return (mask >> (watch_park_signal() - 1) & 1) && !(mask >> (PARK_HANDLER_MARK - 1) & 1);
	}
	return 0;
}

int watch_park_blocked(int tid)
{
	return P.ready && blocks_park_signal(tid);
}

int watch_park_others(int self)
{
	if (!P.ready || *P.single_threaded)
		return 0;
	atomic_store(&P.parker, self);
	P.ntargets = 0;
	uint32_t g = atomic_load(&P.gen) + 1;
	/* gen is bumped before the first signal so that every handler that runs
	 * from now on waits for this park's release. */
	enumerate_threads(self);
	atomic_store(&P.gen, g);
	int parked = 0;
	for (int round = 0; round < PARK_ROUNDS; round++) {
		for (unsigned i = 0; i < P.ntargets; i++) {
			struct park_target *t = &P.targets[i];
			if (t->signalled)
				continue;
			t->signalled = 1;
			if (watch_sys_tgkill(P.pid, atomic_load(&t->tid), watch_park_signal()) < 0)
				atomic_store(&t->acked, g); /* gone already */
		}
		int64_t start = now_ns(), last_poll = start, timeout = atomic_load(&P.timeout_ns);
		if (!timeout)
			timeout = PARK_TIMEOUT_NS;
		for (;;) {
			uint32_t seq = atomic_load(&P.ack_seq);
			unsigned waiting = 0;
			for (unsigned i = 0; i < P.ntargets; i++)
				waiting += gen_before(atomic_load(&P.targets[i].acked), g);
			if (!waiting)
				break;
			int64_t t = now_ns();
			if (t - last_poll >= PARK_POLL_NS) {
				/* A thread that exited after being signalled never answers. */
				last_poll = t;
				/* Nor does one that blocks the park signal, until it
				 * unblocks it: it runs on unparked, as after a timeout. */
				for (unsigned i = 0; i < P.ntargets; i++) {
					if (!gen_before(atomic_load(&P.targets[i].acked), g))
						continue;
					int tid = atomic_load(&P.targets[i].tid);
					if (watch_sys_tgkill(P.pid, tid, 0) < 0)
						atomic_store(&P.targets[i].acked, g);
					else if (watch_park_blocked(tid)) {
						atomic_store(&P.targets[i].acked, g);
						atomic_fetch_add(&P.unparkable, 1);
					}
				}
			}
			if (t - start >= timeout) {
				atomic_fetch_add(&P.timeouts, waiting);
				for (unsigned i = 0; i < P.ntargets; i++)
					if (gen_before(atomic_load(&P.targets[i].acked), g))
						atomic_store(&P.targets[i].acked, g);
				break;
			}
			struct timespec ts = { 0, 200 * 1000 };
			futex(&P.ack_seq, FUTEX_WAIT_PRIVATE, seq, &ts);
		}
		/* A thread created while we were signalling is running unparked. */
		if (!enumerate_threads(self))
			break;
	}
	parked = (int)P.ntargets;
	return parked;
}

int watch_park_run_in_others(int self, void (*fn)(void *uctx))
{
	atomic_store(&P.on_park, fn);
	int n = watch_park_others(self);
	watch_park_release();
	atomic_store(&P.on_park, NULL);
	return n;
}

void watch_park_release(void)
{
	atomic_store(&P.released, atomic_load(&P.gen));
	futex(&P.released, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
	atomic_store(&P.parker, 0);
}
