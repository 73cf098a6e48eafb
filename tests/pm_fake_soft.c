/*
 * A stand-in for the soft backend, for testing profileme-run's plumbing
 * (threads, drains, fork, the database) before and beside the real one: it
 * defines pm_soft_ops, so a program linking this object before
 * libheritage.a takes it instead of src/profileme/pm_soft.c.  Linked only
 * into tests/pmfake/profileme-run and tests/pmfake/libprofileme-collect.so.
 *
 * Each started thread gets a CPU-time timer (timer_create on
 * CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID) that sends SIGPROF every period
 * ns of the thread's CPU time; the handler records the interrupted PC as a
 * sample known only as retired^notrap (what a timer can honestly say: the
 * next instruction to retire, and no trap field but notrap observed), once
 * per period of CPU time since the last, by the thread's CPU clock.  The
 * kernel can pass the timer over for long (struct pm_backend_ops.nudge);
 * the nudge's SIGPROF, from the process's nudger thread, then stands in.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/heritage_probe.h"
#include "profileme/pm_collect.h"

struct fake {
	struct pm_ring ring;
	timer_t timer;
	uint64_t period;
	uint64_t base;  /* the thread's CPU time at start */
	uint64_t taken; /* periods sampled since base */
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static __thread struct fake *fake_self;

static void on_prof(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	struct fake *f = fake_self;
	if (!f)
		return;
	struct pm_sample s = { 0 };
	s.pc = (uint64_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
	s.tid = (uint32_t)syscall(SYS_gettid);
	s.known = PM_FIELD_BIT(PM_RETIRED) | PM_FIELD_BIT(PM_NOTRAP);
	s.value = s.known;
	/* The periods since the last sample (a thread preempted between ticks
	 * accrues CPU time unchecked): each is a period of CPU time, so each
	 * counts, at the PC we have.  Without them a loaded machine lost 2
	 * samples in 3 of a 100 ms thread.  None: a nudge the timer overtook. */
	uint64_t due = (thread_cpu_ns() - f->base) / f->period;
	for (uint64_t k = f->taken; k < due && k < f->taken + 64; k++)
		pm_ring_push(&f->ring, &s);
	if (due > f->taken) /* atomic: the nudger reads it (fake_nudge) */
		__atomic_store_n(&f->taken, due, __ATOMIC_RELAXED);
}

static int fake_start(struct pm_thread *t, char *why, size_t len)
{
	static struct fake pool[256];
	static int used;
	int i = __atomic_fetch_add(&used, 1, __ATOMIC_RELAXED);
	if (i >= (int)(sizeof pool / sizeof pool[0])) {
		snprintf(why, len, "fake soft backend: more than 256 threads");
		return -EAGAIN;
	}
	struct fake *f = &pool[i];
	int err = pm_ring_init(&f->ring, 1 << 14);
	if (err) {
		snprintf(why, len, "fake soft backend: ring: %s", strerror(-err));
		return err;
	}
	struct sigaction sa = { .sa_sigaction = on_prof, .sa_flags = SA_SIGINFO | SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGPROF };
	ev._sigev_un._tid = t->tid;
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &f->timer)) {
		err = -errno;
		snprintf(why, len, "fake soft backend: timer_create: %s", strerror(errno));
		pm_ring_free(&f->ring);
		return err;
	}
	f->period = t->period;
	f->base = thread_cpu_ns();
	f->taken = 0;
	fake_self = f;
	struct itimerspec it = { .it_interval = { (time_t)(t->period / 1000000000), (long)(t->period % 1000000000) } };
	it.it_value = it.it_interval;
	timer_settime(f->timer, 0, &it, NULL);
	t->priv = f;
	return 0;
}

static long fake_drain(struct pm_thread *t, pm_sample_fn fn, void *arg)
{
	struct fake *f = t->priv;
	struct pm_sample s;
	long n = 0;
	while (pm_ring_pop(&f->ring, &s)) {
		fn(arg, &s);
		n++;
	}
	t->lost = f->ring.lost;
	return n;
}

static void fake_nudge(struct pm_thread *t)
{
	struct fake *f = t->priv;
	uint64_t now = pm_thread_cpu_ns(t->tid);
	if (now && now >= f->base + (__atomic_load_n(&f->taken, __ATOMIC_RELAXED) + 2) * f->period &&
	    pm_thread_running(t->tid))
		syscall(SYS_tgkill, getpid(), t->tid, SIGPROF);
}

static void fake_stop(struct pm_thread *t)
{
	struct fake *f = t->priv;
	timer_delete(f->timer);
	fake_self = NULL;
}

const struct pm_backend_ops pm_soft_ops = {
	.fields = PM_FIELD_BIT(PM_RETIRED) | PM_FIELD_BIT(PM_NOTRAP),
	.unit = "ns",
	.default_period = 1000000,
	.min_period = 100000,
	.start = fake_start,
	.drain = fake_drain,
	.nudge = fake_nudge,
	.stop = fake_stop,
};

/* The collector's table says the soft backend needs single-stepping, which
 * this stand-in does not: where stepping is absent (a ThreadSanitizer
 * build, make check-tsan; a hypervisor without TF) the plumbing is still
 * tested.  The probe it replaces is the only one that table consults. */
static void stand_in_steps_nothing(struct heritage_probe_result *r)
{
	r->state = HERITAGE_PROBE_WORKS;
	snprintf(r->evidence, sizeof r->evidence,
	         "not needed: the stand-in soft backend (tests/pm_fake_soft.c) samples on CPU-time timers");
}

__attribute__((constructor)) static void stand_in_init(void)
{
	heritage_probe_override(HERITAGE_MECH_SINGLE_STEP, stand_in_steps_nothing);
}
