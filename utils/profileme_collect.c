/*
 * libprofileme-collect.so: what profileme-run(1) preloads into the program it
 * profiles.  Its constructor opens the database writer and starts sampling
 * the main thread; every thread the program creates is started by our
 * pthread_create (interposed: the start routine is wrapped) and stopped by a
 * thread-specific key's destructor, which runs however the thread ends
 * (return, pthread_exit, cancellation).  A collector thread of ours, never
 * sampled and with every signal blocked, drains the threads' samples into
 * the writer every 50 ms, so a backend's ring of a few thousand samples is
 * never outrun (1 ms period: 50 per thread per drain).  At exit (our ELF
 * destructor, after the program's atexit handlers: a preloaded object is
 * initialised first and finalised last) the exiting thread is stopped, the
 * others drained, and the database written with the maps as they are then;
 * on _exit (shells end with it) the collector writes it while _exit waits.
 *
 * Only the process profileme-run started is profiled
 * (PAPI_HERITAGE_PROFILEME_RUN_PID): a child of fork inherits no sampling
 * (timers and perf events do not cross fork) and we write nothing from it,
 * so it has no samples and cannot corrupt the parent's; a program started
 * by exec from the program loads us too and stays inert.  The outcome goes
 * to profileme-run through the pipe named by PAPI_HERITAGE_PROFILEME_RUN_FD
 * ("ok <samples> <lost> <threads> <cpu_ns> <dir>" or "error <why>"), not to the
 * program's stderr.
 *
 * Only pthread_create, _exit and _Exit are exported
 * (utils/profileme_collect.map): libheritage
 * is linked in hidden, and its own interposers stay out of the program.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "profileme/pm_collect.h"
#include "profileme/pm_db.h"

struct run_thread {
	struct pm_thread t;
	struct run_thread *next;
};

static struct {
	int active;                       /* this is the profiled process and sampling is on */
	pid_t pid;
	int fd;                           /* the report pipe, or -1 */
	const struct heritage_backend *backend;
	uint64_t period;
	struct pm_db_writer *w;
	pthread_mutex_t lock;             /* threads, the counts below */
	struct run_thread *threads;
	pthread_key_t key;
	uint64_t nthreads, failed, lost, samples;
	char fail_why[256];               /* the first thread that could not be sampled */
	pthread_t collector;
	int collector_on;
	volatile int stopping, finish_req;
	sem_t wake, done;
	int (*real_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
} run = {
	.fd = -1,
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
	if (run.fd < 0)
		return;
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof buf - 2)
		n = sizeof buf - 2;
	/* One line, so the messages' own newlines would not split it. */
	for (int i = 0; i < n; i++)
		if (buf[i] == '\n')
			buf[i] = ' ';
	buf[n++] = '\n';
	ssize_t r = write(run.fd, buf, (size_t)n);
	(void)r;
}

/* The writer is taken away (run_fini, under the write lock) before it is
 * written and freed: a thread ending at the same moment, or one started
 * too late to be drained, adds under the read lock, or finds it gone and
 * drops its samples, never touching a freed writer. */
static pthread_rwlock_t wlock = PTHREAD_RWLOCK_INITIALIZER;

static void add(void *arg, const struct pm_sample *s)
{
	(void)arg;
	pthread_rwlock_rdlock(&wlock);
	if (run.w)
		pm_db_writer_add(run.w, s);
	pthread_rwlock_unlock(&wlock);
}

/* Start sampling the calling thread: its record, or NULL. */
static struct run_thread *attach(void)
{
	struct run_thread *rt = calloc(1, sizeof *rt);
	char why[256];
	int err = rt ? pm_thread_start(&rt->t, run.backend, run.period, why, sizeof why) : -ENOMEM;
	pthread_mutex_lock(&run.lock);
	if (err) {
		if (!run.failed++)
			snprintf(run.fail_why, sizeof run.fail_why, "%s", rt ? why : "out of memory");
		pthread_mutex_unlock(&run.lock);
		free(rt);
		return NULL;
	}
	rt->next = run.threads;
	run.threads = rt;
	run.nthreads++;
	pthread_mutex_unlock(&run.lock);
	return rt;
}

/* Stop the calling thread's sampling (rt is its own), keeping its samples. */
static void detach(struct run_thread *rt)
{
	pthread_mutex_lock(&run.lock);
	struct run_thread **p = &run.threads;
	while (*p && *p != rt)
		p = &(*p)->next;
	if (*p)
		*p = rt->next;
	pthread_mutex_unlock(&run.lock);
	/* Out of the list: the collector no longer drains it, we do. */
	pm_thread_stop(&rt->t, add, NULL);
	pthread_mutex_lock(&run.lock);
	run.samples += rt->t.samples;
	run.lost += rt->t.lost;
	pthread_mutex_unlock(&run.lock);
	free(rt);
}

static void key_destructor(void *p)
{
	if (p && run.active && getpid() == run.pid)
		detach(p);
}

static void drain_all(void)
{
	pthread_mutex_lock(&run.lock);
	for (struct run_thread *rt = run.threads; rt; rt = rt->next)
		pm_thread_drain(&rt->t, add, NULL);
	pthread_mutex_unlock(&run.lock);
}

static void finish(void);

/* Drains every 50 ms; on a finish request (our _exit) writes the profile
 * itself, so the thread calling _exit, which may be in a signal handler
 * holding a lock we need, only waits, for a bounded time. */
static void *collector(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		sem_timedwait(&run.wake, &ts);
		if (run.finish_req) {
			finish();
			sem_post(&run.done);
			return NULL;
		}
		if (run.stopping)
			return NULL;
		drain_all();
	}
}

struct start {
	void *(*fn)(void *);
	void *arg;
};

static void *thread_start(void *p)
{
	struct start st = *(struct start *)p;
	free(p);
	if (run.active && getpid() == run.pid) {
		struct run_thread *rt = attach();
		if (rt)
			pthread_setspecific(run.key, rt);
	}
	return st.fn(st.arg);
}

__attribute__((visibility("default"))) int pthread_create(pthread_t *th, const pthread_attr_t *attr,
                                                          void *(*fn)(void *), void *arg)
{
	if (!run.real_create)
		run.real_create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(
		        RTLD_NEXT, "pthread_create");
	if (!run.active || getpid() != run.pid)
		return run.real_create(th, attr, fn, arg);
	struct start *st = malloc(sizeof *st);
	if (!st)
		return EAGAIN;
	st->fn = fn;
	st->arg = arg;
	int r = run.real_create(th, attr, thread_start, st);
	if (r)
		free(st);
	return r;
}

__attribute__((constructor)) static void run_init(void)
{
	const char *db = heritage_env("profileme", "run_db");
	const char *pid = heritage_env("profileme", "run_pid");
	const char *fd = heritage_env("profileme", "run_fd");
	if (!db || !pid || atol(pid) != (long)getpid())
		return; /* not the process profileme-run started */
	run.pid = getpid();
	/* Kept across exec: a command that execs another program in this
	 * process (a wrapper's `exec prog`) is profiled as that program, whose
	 * copy of us reports. */
	if (fd && fcntl(atoi(fd), F_GETFD) >= 0)
		run.fd = atoi(fd);
	run.real_create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(
	        RTLD_NEXT, "pthread_create");
	char why[512];
	int err = heritage_env_check("profileme");
	if (err)
		snprintf(why, sizeof why, "%s", heritage_last_error());
	else
		err = pm_backend_choose(&run.backend, why, sizeof why);
	if (!err)
		err = pm_period_for(run.backend, &run.period, why, sizeof why);
	if (err) {
		report("error %s", why);
		return;
	}
	const struct pm_backend_ops *ops = run.backend->ops;
	if (!run.real_create) {
		report("error profileme-run: pthread_create not found in the program");
		return;
	}
	if ((err = pm_db_writer_open(&run.w, db, run.backend->name, ops->unit, run.period, ops->fields, why,
	                             sizeof why))) {
		report("error %s", why);
		return;
	}
	if (pthread_key_create(&run.key, key_destructor)) {
		report("error profileme-run: no thread-specific key left");
		pm_db_writer_discard(run.w);
		return;
	}
	run.active = 1;
	struct run_thread *rt = attach();
	if (!rt) {
		run.active = 0;
		report("error %s", run.fail_why);
		pm_db_writer_discard(run.w);
		return;
	}
	pthread_setspecific(run.key, rt);
	sem_init(&run.wake, 0, 0);
	sem_init(&run.done, 0, 0);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	run.collector_on = !run.real_create(&run.collector, NULL, collector, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Drain every thread still listed, take the writer away, write the
 * profile, report.  Once, on the thread ending the process or on the
 * collector. */
static void finish(void)
{
	pthread_mutex_lock(&run.lock);
	for (struct run_thread *rt = run.threads; rt; rt = rt->next) {
		pm_thread_drain(&rt->t, add, NULL);
		run.samples += rt->t.samples;
		run.lost += rt->t.lost;
	}
	pthread_mutex_unlock(&run.lock);
	pthread_rwlock_wrlock(&wlock);
	struct pm_db_writer *w = run.w;
	run.w = NULL;
	pthread_rwlock_unlock(&wlock);
	char why[512], dir[PATH_MAX];
	int err = pm_db_writer_finish(w, 0, dir, sizeof dir, why, sizeof why);
	if (run.failed)
		report("warn %" PRIu64 " thread(s) not sampled: %s", run.failed, run.fail_why);
	if (err)
		report("error %s", why);
	else {
		/* The process's CPU time, for profileme-run to set the samples
		 * against (a loaded machine's ticks miss threads). */
		struct timespec cpu;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
		report("ok %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %s", run.samples, run.lost, run.nthreads,
		       (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec, dir);
	}
}

__attribute__((destructor)) static void run_fini(void)
{
	if (!run.active || getpid() != run.pid)
		return;
	/* Ours first: the thread calling exit stops sampling (it would sample
	 * our writing), the collector ends, the others are drained as they are. */
	struct run_thread *self = pthread_getspecific(run.key);
	if (self) {
		pthread_setspecific(run.key, NULL);
		detach(self);
	}
	if (run.collector_on) {
		run.stopping = 1;
		sem_post(&run.wake);
		pthread_join(run.collector, NULL);
	}
	run.active = 0;
	finish();
}

/* A program that ends with _exit (shells do: dash's exitshell) runs no
 * destructor: write the profile here first.  A child of fork or vfork
 * calling _exit is not the profiled process (pid): it passes straight on. */
__attribute__((visibility("default"), noreturn)) void _exit(int status)
{
	if (run.active && getpid() == run.pid && run.collector_on) {
		/* _exit may be called from a signal handler (a SIGINT handler's
		 * _exit(1)) that interrupted malloc or our own locks: the
		 * collector writes the profile, we wait at most 10 s, then
		 * leave with or without it.  This thread is not stopped (its
		 * backend's stop is no handler's business): its samples up to
		 * the collector's drain are kept. */
		run.active = 0;
		run.finish_req = 1;
		sem_post(&run.wake);
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 10;
		while (sem_timedwait(&run.done, &ts) && errno == EINTR)
			;
	}
	void (*real)(int) = (void (*)(int))dlsym(RTLD_NEXT, "_exit");
	if (real)
		real(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status)
{
	_exit(status);
}
