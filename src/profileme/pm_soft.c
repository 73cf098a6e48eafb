/*
 * The soft ProfileMe backend (issue 14 item 4): instructions chosen by a
 * CPU-time timer are single-stepped and decoded, and each becomes one sample.
 * It needs no perf and no PMU, only timer_create, signals and the trap flag
 * (HERITAGE_MECH_SINGLE_STEP), so it works for an ordinary account in a
 * container that refuses perf_event_open.
 *
 * How a sample is taken, per collecting thread:
 *   - a timer on the thread's own CPU clock (CLOCK_THREAD_CPUTIME_ID,
 *     SIGEV_THREAD_ID to this thread) raises PM_SOFT_SIGNAL after a random
 *     interval, uniform in [period/2, 3*period/2) from a per-thread
 *     xorshift, so that a loop cannot alias with the period.  The expiries
 *     are absolute (the previous due time plus the interval), so the mean
 *     rate stays 1/period although the kernel checks CPU timers only at its
 *     tick (CONFIG_HZ=250 here: 4 ms; measured, one signal per tick at
 *     most, about 250/s however short the period).  So periods are rounded
 *     up to the tick (pm_soft_tick_ns: the coarse clocks' resolution), and the
 *     estimate samples x period holds;
 *   - in the handler, a random count of instructions in [0, PM_SOFT_SKID)
 *     is stepped untagged first (pm_soft.h says why: the signal lands only
 *     where the CPU takes interrupts), each step's done() arming the next
 *     (skip_done); a skipped instruction that faults drops the sample
 *     (skip_fault), one that must not be stepped (a syscall) is tagged;
 *   - the instruction reached is the tagged instruction: its bytes
 *     are read through the engine's /proc/self/mem (the page may be
 *     execute-only), decoded (watch_x86_pm_decode: length, conditional
 *     branch, memory operand addresses from the registers before it runs),
 *     the thread's page-fault count is read (getrusage RUSAGE_THREAD) and
 *     the instruction is stepped once (watch_step_one_ex: TF, asynchronous
 *     signals blocked for that one instruction);
 *   - the step trap (done(): RIP is the next instruction) or the fault the
 *     instruction raised (fault(): the step is cancelled by the engine before
 *     the signal goes on to the application's own handler) completes the
 *     sample, pushed onto the thread's pm_ring; drain pops them.
 *
 * The fields (pm_soft_ops.fields), what each means here:
 *   retired      the instruction completed during the step (1), or faulted
 *                (0).  Known in every sample.
 *   valid        retired and no trap bit but notrap.  Known in every sample.
 *   taken        only for conditional branches (jcc, jrcxz/jecxz, loop,
 *                loope, loopne) that retired: RIP after the step is not
 *                pc + length.  Unknown for every other instruction, as the
 *                man page has it.
 *   notrap       none of the traps below happened.
 *   unaligntrap  MODELLED: x86 does not trap on an unaligned access; the
 *                bit says the Alpha would have: a memory operand (or the
 *                stack slot of push/pop/call/ret) whose address is not a
 *                multiple of its natural alignment, the access size capped
 *                at 8 bytes (the Alpha's largest, the quadword: a 16- or
 *                32-byte vector access is taken as quadwords).
 *   dtbmiss      a page fault (minor or major) during the step: a subset of
 *                the DTB misses the Alpha counted (a TLB miss that the
 *                hardware walker fills is not seen).  The faults the signal
 *                delivery itself could cause are excluded by reading the
 *                count after the timer signal's frame is written and before
 *                the step trap's, on the same pre-touched signal stack
 *                (measured: 0 dtbmiss in 322 samples of a register-only
 *                loop; 44 of 49 samples of a first store to a page had it,
 *                the rest were ticks in that store's own fault:
 *                test_pm_soft).  Observed beats modelled: dtbmiss wins
 *                over unaligntrap when both apply.
 *   arithtrap    the instruction raised SIGFPE;
 *   dfaulttrap   SIGSEGV or SIGBUS (also a fault the page-trap backend takes
 *                for a watched page: the instruction did not complete then);
 *   OPCDECtrap   SIGILL.
 *                These three have retired=0, valid=0; the signal then goes
 *                on to the application's handler exactly as without us.
 * Not produced, so unknown (never a made-up 0): cbrmispredict and the
 * mispredict trap (a branch's prediction is not observable by stepping), the
 * other trap bits, nyp/ldstorder/map_stall/early_kill/late_kill, and the
 * counters retdelay and inflight.
 *
 * Not stepped (they must not run with TF set, watch_x86.h no_step): syscall,
 * sysenter, int n, int3, int1, into, pushf.  Their samples say retired,
 * valid and notrap, with unaligntrap and dtbmiss unknown (not observed).
 *
 * Cost (bench/pm_bench, 2-vCPU guests): 25-35 us per step, most of it the
 * #DB and SIGTRAP delivery (Zen 4 and Intel family 6 model 167 alike); with
 * the skid's 3.5 extra steps on average about 120 us per sample; at the
 * default period (4 ms, one tick: the highest rate the kernel's CPU-time
 * timers give, ~250 samples/s) a CPU-bound loop runs about 3 % slower
 * (0.5-1.8 % without the skid).  DCPI did >5200 samples/s per CPU at 1-3 %:
 * at this cost that rate would be ~60 %, and the tick forbids it.
 *
 * The tick grid: whatever the random interval, a sample is taken at a tick
 * (the kernel's timer interrupt, periodic in wall time) that lands while the
 * thread runs.  The randomising picks which ticks; it cannot move them, so a
 * program whose own period divides the tick's can still alias (a test loop
 * of 0.56 ms rounds gave 83 % for a 75 % function once under load; rounds of
 * random length do not).  On a busy machine the kernel checks the timer only
 * at ticks that find the thread running: measured down to 60 % of CPU time /
 * period, and 0 expiries delivered on 300 ms of CPU at an 8 ms period in 1
 * run of 15 with three busy loops beside it.  The process's nudger thread
 * (pm_collect.c) nudges a thread whose timer is a period overdue
 * (soft_nudge: our own signal, taken as the expiry): with it, 44-51 samples
 * on 405 ms of CPU at 8 ms under the same load.  Expiries that fall more than 4 periods
 * behind are dropped.
 *
 * Limits: like any profiler's timer signal (SIGPROF), ours can end a long
 * interruptible system call that burns CPU early (a read of /dev/zero
 * returns short); SA_RESTART restarts the rest.  A thread that exits
 * without pm_thread_stop keeps its slot (64);
 * an instruction whose step neither completes nor faults (a handler for a
 * tgkill'ed synchronous signal that siglongjmps before it runs) leaves the
 * step pending, and further samples of that thread are counted in
 * stats.stuck rather than taken.
 *
 * Signal handlers: the timer's (ours, on PM_SOFT_SIGNAL: SIGRTMIN+6; PAPI
 * uses SIGRTMIN+2, alpha_pmu +4, watch_park +5) and, through the signal
 * engine, its SIGTRAP/SIGFPE/SIGSEGV/SIGBUS/SIGILL handlers.  They touch only
 * the static slot table and the rings (mmap'ed at start), no malloc.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "profileme/pm_soft.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/heritage_error.h"
#include "common/heritage_probe.h"
#include "watch/watch_park.h"
#include "watch/watch_signal.h"
#include "watch/watch_step.h"
#include "watch/watch_sys.h"
#include "watch/watch_x86.h"

#define PM_SOFT_SLOTS 64
#define PM_SOFT_RING 8192 /* samples: 32 s at the tick's 250/s between drains */

/* One per collecting thread. */
struct soft_slot {
	_Atomic int tid;    /* owner; 0 = free */
	_Atomic int active; /* the timer may fire into it */
	_Atomic int busy;   /* a handler of the owner is using it (release waits) */
	int timer;          /* the kernel's timer id */
	uint64_t period;
	uint64_t due;       /* next expiry, ns of the thread's CPU time */
	int owed;           /* an expiry came while our step was ahead: re-armed when it ends */
	unsigned skid;      /* instructions still to step untagged before the one tagged */
	uint64_t rng;
	struct pm_ring ring;
	/* The instruction being stepped. */
	struct pm_sample cur;
	uint64_t len;
	int cond_branch;
	int sequential, rep;
	int unaligned;
	int unaligned_known;
	uint64_t faults_before;
	uint64_t t_entry; /* CLOCK_MONOTONIC ns at the timer handler's entry */
	struct pm_soft_stats stats;
};

static struct soft_slot slots[PM_SOFT_SLOTS];
static _Atomic int handler_installed;
static int soft_signal;

/* Every sample knows these trap bits (the ones the backend observes). */
#define SOFT_TRAPS                                                                                          \
	(PM_FIELD_BIT(PM_NOTRAP) | PM_FIELD_BIT(PM_UNALIGNTRAP) | PM_FIELD_BIT(PM_DTBMISS) |                 \
	 PM_FIELD_BIT(PM_ARITHTRAP) | PM_FIELD_BIT(PM_DFAULTTRAP) | PM_FIELD_BIT(PM_OPCDECTRAP))

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* Uniform in [period/2, 3*period/2). */
static uint64_t next_interval(struct soft_slot *s)
{
	uint64_t half = s->period / 2;
	return half + xorshift(&s->rng) % (s->period ? s->period : 1);
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	watch_sys3(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, (long)&ts, 0);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_faults(void)
{
	struct rusage ru;
	if (watch_sys3(SYS_getrusage, RUSAGE_THREAD, (long)&ru, 0) != 0)
		return 0;
	return (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
}

/* The vDSO's clock (no system call): for the stats' time in handlers. */
static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long arm_abs(int timer, uint64_t due)
{
	struct itimerspec it = { .it_interval = { 0, 0 },
	                         .it_value = { (time_t)(due / 1000000000u), (long)(due % 1000000000u) } };
	return watch_sys6(SYS_timer_settime, timer, TIMER_ABSTIME, (long)&it, 0, 0, 0);
}

static void push(struct soft_slot *s)
{
	if (pm_ring_push(&s->ring, &s->cur) == 0)
		s->stats.samples++;
	s->stats.handler_ns += mono_ns() - s->t_entry;
}

/* Our step has ended (completed, faulted or dropped): the slot is free, and
 * an expiry that came while the step was ahead is served now (its due time
 * is past: the timer fires as soon as this handler returns). */
static void step_finished(struct soft_slot *s)
{
	atomic_store(&s->busy, 0);
	if (s->owed) {
		s->owed = 0;
		arm_abs(s->timer, s->due);
	}
}

/* After the step: RIP is the next instruction. */
static void step_done(void *arg, ucontext_t *uc)
{
	struct soft_slot *s = arg;
	uint64_t faults = thread_faults();
	uintptr_t rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	struct pm_sample *c = &s->cur;
	enum pm_field trap = PM_NOTRAP;
	if (s->sequential && rip != c->pc + s->len && !(s->rep && rip == c->pc)) {
		/* It did not complete: it faulted and some handler we were not
		 * told of moved RIP (a retired sample would be made up). */
		s->stats.inconsistent++;
		s->stats.handler_ns += mono_ns() - s->t_entry;
		step_finished(s);
		return;
	}
	if (faults != s->faults_before)
		trap = PM_DTBMISS;
	else if (s->unaligned)
		trap = PM_UNALIGNTRAP;
	c->value |= PM_FIELD_BIT(PM_RETIRED);
	if (trap == PM_NOTRAP)
		c->value |= PM_FIELD_BIT(PM_VALID);
	c->known |= PM_FIELD_BIT(PM_RETIRED) | PM_FIELD_BIT(PM_VALID) | SOFT_TRAPS;
	if (s->cond_branch) {
		c->known |= PM_FIELD_BIT(PM_TAKEN);
		if (rip != c->pc + s->len)
			c->value |= PM_FIELD_BIT(PM_TAKEN);
	}
	pm_sample_set_trap(c, trap);
	s->stats.steps++;
	push(s);
	step_finished(s);
}

/* The stepped instruction faulted; the engine has cancelled the step and
 * passes the signal on to the application after this. */
static void step_fault(void *arg, int sig, siginfo_t *si, ucontext_t *uc)
{
	(void)si;
	(void)uc;
	struct soft_slot *s = arg;
	struct pm_sample *c = &s->cur;
	c->value &= ~(PM_FIELD_BIT(PM_RETIRED) | PM_FIELD_BIT(PM_VALID));
	c->known |= PM_FIELD_BIT(PM_RETIRED) | PM_FIELD_BIT(PM_VALID) | SOFT_TRAPS;
	pm_sample_set_trap(c, sig == SIGFPE ? PM_ARITHTRAP : sig == SIGILL ? PM_OPCDECTRAP : PM_DFAULTTRAP);
	s->stats.faults++;
	push(s);
	step_finished(s);
}

/* Alignment the Alpha would have asked of an access of size bytes: the
 * largest power of two not above min(size, 8). */
static uint64_t alpha_alignment(uint32_t size)
{
	uint64_t a = 1;
	while (a * 2 <= size && a < 8)
		a *= 2;
	return a;
}

/* The next expiry, from the due time, not from now: the kernel fires at its
 * tick after the due time, and the overshoot must not lengthen every
 * period.  A thread that fell more than a period behind (periods below the
 * tick) starts again from now. */
static void rearm(struct soft_slot *s)
{
	uint64_t now = thread_cpu_ns();
	s->due += next_interval(s);
	if (s->due + 4 * s->period < now)
		s->due = now + next_interval(s);
	arm_abs(s->timer, s->due);
}

static void take(struct soft_slot *s, ucontext_t *uc);

/* A skipped instruction completed: the next one is taken. */
static void skip_done(void *arg, ucontext_t *uc)
{
	struct soft_slot *s = arg;
	s->stats.skipped++;
	take(s, uc);
}

/* A skipped instruction faulted: the sample is dropped (tagging the faulting
 * instruction instead would sample traps up to PM_SOFT_SKID times too
 * often); the signal goes on to the application. */
static void skip_fault(void *arg, int sig, siginfo_t *si, ucontext_t *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	struct soft_slot *s = arg;
	s->stats.skip_faults++;
	s->stats.handler_ns += mono_ns() - s->t_entry;
	step_finished(s);
}

/* The instruction at uc's RIP: stepped untagged while s->skid lasts, else
 * tagged: decoded and stepped as the sample. */
static void take(struct soft_slot *s, ucontext_t *uc)
{
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	uint8_t bytes[15];
	long n = watch_sys_pread(watch_signal_mem_fd(), bytes, sizeof bytes, pc);
	struct watch_x86_pm d;
	int decoded = n > 0 && watch_x86_pm_decode(bytes, (size_t)n, pc, uc, &d) == 0;
	if (s->skid > 0 && decoded && !d.no_step) {
		s->skid--;
		if (watch_step_one_ex(uc, skip_done, skip_fault, s) != 0) {
			s->stats.busy++;
			step_finished(s);
		}
		return;
	}
	struct pm_sample *c = &s->cur;
	memset(c, 0, sizeof *c);
	c->pc = pc;
	c->tid = (uint32_t)atomic_load(&s->tid);
	s->len = 0;
	s->cond_branch = 0;
	s->sequential = s->rep = 0;
	s->unaligned = 0;
	if (decoded) {
		s->len = d.len;
		s->cond_branch = d.cond_branch;
		s->sequential = d.sequential;
		s->rep = d.rep;
		for (unsigned k = 0; k < d.naccess; k++)
			if (d.acc[k].addr % alpha_alignment(d.acc[k].size))
				s->unaligned = 1;
		if (d.no_step) {
			/* Retires, traps on nothing we observe; not stepped. */
			c->value = PM_FIELD_BIT(PM_RETIRED) | PM_FIELD_BIT(PM_VALID);
			c->known = PM_FIELD_BIT(PM_RETIRED) | PM_FIELD_BIT(PM_VALID) | (SOFT_TRAPS & ~(PM_FIELD_BIT(PM_UNALIGNTRAP) | PM_FIELD_BIT(PM_DTBMISS)));
			pm_sample_set_trap(c, PM_NOTRAP);
			s->stats.unstepped++;
			push(s);
			step_finished(s);
			return;
		}
	} else {
		/* Undecodable (it will most likely raise SIGILL: OPCDECtrap) or
		 * unreadable: stepped all the same, nothing known of its shape. */
		s->stats.undecoded++;
	}
	s->faults_before = thread_faults();
	if (watch_step_one_ex(uc, step_done, step_fault, s) != 0) {
		s->stats.busy++;
		step_finished(s);
	}
}

/* sival_int of soft_nudge's signal: the slot's index with this bit. */
#define SOFT_NUDGE 0x40000000

static void on_timer(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	ucontext_t *uc = ctx;
	int saved_errno = errno;
	int self = watch_sys_gettid();
	unsigned i = (unsigned)si->si_value.sival_int;
	int nudge = si->si_code == SI_QUEUE && si->si_pid == getpid() && (i & SOFT_NUDGE);
	i &= ~(unsigned)SOFT_NUDGE;
	if ((si->si_code != SI_TIMER && !nudge) || i >= PM_SOFT_SLOTS)
		goto out;
	struct soft_slot *s = &slots[i];
	if (atomic_load(&s->tid) != self || !atomic_load(&s->active) || (!nudge && si->si_timerid != s->timer))
		goto out;
	/* A nudge that the timer overtook (it was re-armed ahead) is void. */
	if (nudge && thread_cpu_ns() < s->due)
		goto out;
	int expected = 0;
	if (!atomic_compare_exchange_strong(&s->busy, &expected, 1)) {
		if (nudge)
			goto out; /* a step of ours is ahead: the timer's business */
		/* A step of ours is armed.  Our signal is left unblocked during
		 * a step (watch_step_one_unblocked) for the case its trap is
		 * lost (seen in CI under host load: the sampling stopped for
		 * good, the thread's asynchronous signals held): then give the
		 * thread its mask back, forget the step (its sample is dropped)
		 * and go on with this one.  More often the step is still ahead:
		 * a due time already past fires at once, while the step's
		 * handler runs; then this expiry is served when the step ends
		 * (step_finished). */
		if (watch_step_one_lost(uc) < 0) {
			s->stats.early++;
			s->owed = 1;
			/* A watchdog meanwhile, should the step's trap be lost: a
			 * period from now, not from a due time already past,
			 * which would fire again before the instruction ran, and
			 * again (CI: a thread that never got to run it). */
			arm_abs(s->timer, thread_cpu_ns() + s->period);
			goto out;
		}
		s->owed = 0;
		s->stats.stuck++;
	}
	s->stats.signals++;
	s->stats.nudged += (uint64_t)nudge;
	s->t_entry = mono_ns();
	rearm(s);
	s->skid = (unsigned)(xorshift(&s->rng) % PM_SOFT_SKID);
	take(s, uc);
out:
	errno = saved_errno;
}

/* ---- thread context ------------------------------------------------------------- */

static int install_handler(char *why, size_t len)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&lock);
	int err = 0;
	if (!atomic_load(&handler_installed)) {
		soft_signal = PM_SOFT_SIGNAL;
		struct sigaction old;
		if (sigaction(soft_signal, NULL, &old) != 0) {
			err = -errno;
			snprintf(why, len, "profileme soft: sigaction(SIGRTMIN+%d): %s", soft_signal - SIGRTMIN, strerror(errno));
		} else if ((old.sa_flags & SA_SIGINFO) ? old.sa_sigaction != NULL && old.sa_sigaction != on_timer
		                                         : old.sa_handler != SIG_DFL) {
			err = -EBUSY;
			snprintf(why, len, "profileme soft: signal SIGRTMIN+%d, its timer signal, already has a handler",
			         soft_signal - SIGRTMIN);
		} else {
			struct sigaction sa;
			memset(&sa, 0, sizeof sa);
			sa.sa_sigaction = on_timer;
			sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
			/* Every asynchronous signal but the park signal (the engine's
			 * handlers' rule: a thread in a handler must stay parkable). */
			sigfillset(&sa.sa_mask);
			for (int k = 1; k < 64; k++)
				if (!(watch_signal_async_mask() & watch_sigbit(k)))
					sigdelset(&sa.sa_mask, k);
			sigdelset(&sa.sa_mask, watch_park_signal());
			if (sigaction(soft_signal, &sa, NULL) != 0) {
				err = -errno;
				snprintf(why, len, "profileme soft: sigaction: %s", strerror(errno));
			} else {
				/* Reaches a thread whose step trap was lost
				 * (watch_step_one_lost in on_timer). */
				watch_step_one_unblocked(watch_sigbit(soft_signal));
				atomic_store(&handler_installed, 1);
			}
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* The signal stack's pages written once now, so that the frames of the
 * timer signal and the step trap never fault (a fault there would read as
 * a dtbmiss of the stepped instruction). */
static void pretouch_altstack(void)
{
	stack_t ss;
	if (sigaltstack(NULL, &ss) != 0 || (ss.ss_flags & SS_DISABLE) || !ss.ss_sp)
		return;
	volatile unsigned char *p = ss.ss_sp;
	for (size_t off = 0; off < ss.ss_size; off += 4096)
		p[off] = p[off];
}

static struct soft_slot *slot_of(struct pm_thread *t)
{
	return t->priv;
}

static int soft_start(struct pm_thread *t, char *why, size_t len)
{
	const struct heritage_probe_result *r = heritage_probe(HERITAGE_MECH_SINGLE_STEP);
	if (r->state != HERITAGE_PROBE_WORKS) {
		snprintf(why, len, "profileme soft: single-stepping does not work here: %s", r->evidence);
		return r->err ? r->err : -ENOTSUP;
	}
	int err = watch_x86_init();
	if (err) {
		snprintf(why, len, "profileme soft: the x86 decoder (capstone) cannot start: %s", strerror(-err));
		return err;
	}
	err = watch_signal_faults_start(why, len);
	if (err)
		return err;
	watch_signal_ensure_altstack();
	pretouch_altstack();
	err = install_handler(why, len);
	if (err)
		return err;

	int self = watch_sys_gettid();
	struct soft_slot *s = NULL;
	unsigned idx = 0;
	for (unsigned i = 0; i < PM_SOFT_SLOTS; i++) {
		if (atomic_load(&slots[i].tid) == self) {
			snprintf(why, len, "profileme soft: this thread is already being sampled");
			return -EBUSY;
		}
	}
	for (unsigned i = 0; i < PM_SOFT_SLOTS && !s; i++) {
		int owner = 0;
		if (atomic_compare_exchange_strong(&slots[i].tid, &owner, self)) {
			s = &slots[i];
			idx = i;
		}
	}
	if (!s) {
		snprintf(why, len, "profileme soft: more than %d threads sampled at once", PM_SOFT_SLOTS);
		return -ENOSPC;
	}
	memset(&s->stats, 0, sizeof s->stats);
	err = pm_ring_init(&s->ring, PM_SOFT_RING);
	if (err) {
		snprintf(why, len, "profileme soft: sample ring: %s", strerror(-err));
		atomic_store(&s->tid, 0);
		return err;
	}
	s->period = t->period;
	s->rng = ((uint64_t)self << 32) ^ thread_cpu_ns() ^ 0x9e3779b97f4a7c15ull;
	if (!s->rng)
		s->rng = 1;
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = soft_signal;
	ev.sigev_value.sival_int = (int)idx;
	ev._sigev_un._tid = self;
	int timer = -1;
	if (syscall(SYS_timer_create, CLOCK_THREAD_CPUTIME_ID, &ev, &timer) != 0) {
		err = -errno;
		snprintf(why, len, "profileme soft: timer_create(CLOCK_THREAD_CPUTIME_ID): %s", strerror(errno));
		pm_ring_free(&s->ring);
		atomic_store(&s->tid, 0);
		return err;
	}
	s->timer = timer;
	s->due = thread_cpu_ns() + next_interval(s);
	atomic_store(&s->busy, 0);
	atomic_store(&s->active, 1);
	if (arm_abs(timer, s->due) != 0) {
		err = -errno;
		snprintf(why, len, "profileme soft: timer_settime: %s", strerror(errno));
		atomic_store(&s->active, 0);
		syscall(SYS_timer_delete, timer);
		pm_ring_free(&s->ring);
		atomic_store(&s->tid, 0);
		return err;
	}
	t->priv = s;
	return 0;
}

static long soft_drain(struct pm_thread *t, pm_sample_fn fn, void *arg)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct soft_slot *s = slot_of(t);
	if (!s)
		return 0;
	pthread_mutex_lock(&lock); /* one consumer at a time */
	long n = 0;
	struct pm_sample smp;
	while (pm_ring_pop(&s->ring, &smp)) {
		fn(arg, &smp);
		n++;
	}
	t->lost = __atomic_load_n(&s->ring.lost, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&lock);
	return n;
}

/* The kernel passed the thread's timer over (struct pm_backend_ops.nudge):
 * its due time is a period behind the thread's CPU clock.  Our signal, queued to the
 * thread, stands in for the expiry; on_timer takes it as the timer's. */
static void soft_nudge(struct pm_thread *t)
{
	struct soft_slot *s = slot_of(t);
	if (!s || !atomic_load(&s->active) || atomic_load(&s->busy))
		return;
	uint64_t now = pm_thread_cpu_ns(t->tid);
	if (!now || now < __atomic_load_n(&s->due, __ATOMIC_RELAXED) + s->period || !pm_thread_running(t->tid))
		return;
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = soft_signal;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = (int)((unsigned)(s - slots) | SOFT_NUDGE);
	syscall(SYS_rt_tgsigqueueinfo, getpid(), t->tid, soft_signal, &si);
}

static void soft_stop(struct pm_thread *t)
{
	struct soft_slot *s = slot_of(t);
	if (!s || !atomic_load(&s->active))
		return;
	atomic_store(&s->active, 0);
	/* Deleted, not just disarmed: a signal already queued then finds the
	 * slot inactive (or its timer id gone) and is ignored. */
	syscall(SYS_timer_delete, s->timer);
}

static void soft_release(struct pm_thread *t)
{
	struct soft_slot *s = slot_of(t);
	if (!s)
		return;
	if (atomic_load(&s->active))
		soft_stop(t);
	/* From another thread, a handler of the owner may still be in its
	 * step (microseconds). */
	for (int i = 0; i < 100000 && atomic_load(&s->busy); i++)
		sched_yield();
	pm_ring_free(&s->ring);
	t->priv = NULL;
	atomic_store(&s->tid, 0);
}

int pm_soft_stats(const struct pm_thread *t, struct pm_soft_stats *out)
{
	const struct soft_slot *s = t->priv;
	if (!s || t->backend->ops != (const void *)&pm_soft_ops)
		return -EINVAL;
	*out = s->stats;
	return 0;
}

/* ---- the kernel's tick ---------------------------------------------------------
 * CPU-time timers expire only at a tick that finds the thread running, so a
 * period below the tick would give one sample per tick, and samples x period
 * (pm_tally_estimate) would undercount.  Periods are rounded up to the tick.
 * CONFIG_HZ is not told to user space as such (sysconf's CLK_TCK is USER_HZ,
 * 100), but the coarse clocks advance once per tick and clock_getres says by
 * how much (TICK_NSEC: 4000000 here, HZ=250).  Measuring it instead (the
 * wall time between CPU-timer firings) read 8, 16 and 20 ms for the 4 ms
 * tick on a loaded machine, where the thread is not running at every tick. */
static uint64_t tick_ns;
static pthread_once_t tick_once = PTHREAD_ONCE_INIT;

static void find_tick(void)
{
	struct timespec res;
	tick_ns = 10000000; /* HZ=100, the coarsest: never below the real tick */
	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 && res.tv_sec == 0 && res.tv_nsec >= 100000 &&
	    res.tv_nsec <= 100000000)
		tick_ns = (uint64_t)res.tv_nsec;
}

uint64_t pm_soft_tick_ns(void)
{
	pthread_once(&tick_once, find_tick);
	return tick_ns;
}

static uint64_t soft_round(uint64_t period)
{
	uint64_t tick = pm_soft_tick_ns();
	return period < tick ? tick : period;
}

const struct pm_backend_ops pm_soft_ops = {
	.fields = PM_FIELD_BIT(PM_RETIRED) | PM_FIELD_BIT(PM_VALID) | PM_FIELD_BIT(PM_TAKEN) | SOFT_TRAPS,
	/* x86 does not trap on an unaligned access: the Alpha would have. */
	.modelled = PM_FIELD_BIT(PM_UNALIGNTRAP),
	.unit = "ns",
	.default_period = PM_SOFT_DEFAULT_PERIOD,
	.min_period = PM_SOFT_MIN_PERIOD,
	.round_period = soft_round,
	.start = soft_start,
	.drain = soft_drain,
	.nudge = soft_nudge,
	.stop = soft_stop,
	.release = soft_release,
};
