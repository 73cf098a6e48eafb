/*
 * The signal engine: the one owner of SIGSEGV, SIGTRAP and SIGFPE in the
 * process, and of SIGILL and SIGBUS once watch_signal_faults_start() ran
 * (watch_signal.c).
 *
 * Every user of a synchronous signal is a client in one table, with an
 * explicit priority (lower runs first); the engine's handler offers the
 * signal to the clients of that signal in order and, when none took it, to
 * what the application installed (sigaction() and signal() are interposed
 * for these signals once the engine is in, so the application's handler is
 * recorded and run from here), or the default action.  The chaining to the
 * application's handlers happens here only.
 *
 * The order on SIGTRAP is today's (each rule exists because of a measured
 * failure, see the clients): perf-event traps (si_code TRAP_PERF, offered
 * only to clients registered with .perf_events), the TRAP_BRKPT+TF mend for
 * KVM's lost DR6.BS (the engine, before any client), then by priority:
 *   WATCH_PRIO_PERF      the breakpoint backend (watch_breakpoint.c)
 *   WATCH_PRIO_STEP_ONE  watch_step_one (the engine's own)
 *   WATCH_PRIO_PAGETRAP  page-trap windows and code stepping (watch_pagetrap.c)
 *   WATCH_PRIO_BLOCKTRAP int3 at block leaders (watch_blocktrap.c): after the
 *                        page-trap window's one-shot int3, which may sit on one
 *   WATCH_PRIO_TSTEP     whole-thread stepping (watch_step.c)
 *   WATCH_PRIO_RPM       paragon_rpm's legacy pages (rpm_page.c)
 *   WATCH_PRIO_STRAY     stray TF clearing (watch_step.c)
 * and on SIGSEGV: page traps, then rpm_page.
 *
 * Clients run in the engine's handler: on its signal stack, with every
 * asynchronous signal but the park signal blocked; async-signal-safe code
 * only (raw system calls, no allocation), touching static memory that the
 * page-trap backend's fits() check excludes (watch_signal_client_range).
 */
#ifndef HERITAGE_WATCH_SIGNAL_H
#define HERITAGE_WATCH_SIGNAL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

#include "watch_step.h"
#include "watch_sys.h"

#define WATCH_EFLAGS_TF 0x100ull

enum watch_claim {
	WATCH_NOT_MINE = 0, /* the next client, then the application */
	WATCH_MINE = 1,     /* handled; nobody else sees it */
	/* Handled, and the same signal is also the later clients': they are
	 * offered it with ev->handled set (one TF trap that ends a page-trap
	 * window and is a whole-thread step); no application handler runs. */
	WATCH_MINE_PASS_ON = 2,
};

struct watch_signal_event {
	int sig;
	int self; /* the thread's tid */
	siginfo_t *si;
	ucontext_t *uc;
	int handled; /* an earlier client returned WATCH_MINE_PASS_ON */
};

enum {
	WATCH_PRIO_PERF = 10,
	WATCH_PRIO_STEP_ONE = 20,
	WATCH_PRIO_PAGETRAP = 30,
	WATCH_PRIO_BLOCKTRAP = 35,
	WATCH_PRIO_TSTEP = 40,
	WATCH_PRIO_RPM = 50,
	WATCH_PRIO_STRAY = 90,
};

struct watch_signal_client {
	const char *name;
	int sig;      /* SIGSEGV, SIGTRAP, SIGFPE (SIGILL, SIGBUS: after watch_signal_faults_start) */
	int priority; /* lower first; equal priorities in registration order */
	enum watch_claim (*fn)(struct watch_signal_event *ev, void *arg);
	void *arg;
	/* SIGTRAP: also offered the perf-event traps (si_code TRAP_PERF),
	 * which no other client sees. */
	int perf_events;
	/* Run with every signal blocked (as a handler installed with a full
	 * sa_mask): a client holding a spin lock must not be parked in it. */
	int block_all;
	/* The memory its handler touches: watched, it would fault there. */
	uintptr_t state_lo, state_hi;
	/* For the fatal-trap diagnostic line: appends " name value" parts. */
	void (*diag)(char **p, const char *end, int self);
};

#define WATCH_SIGNAL_MAX_CLIENTS 16

/* Adds a client (the table is copied, so c may be temporary).  Safe while
 * the handlers run; thread context.  0, or -errno with a message in why. */
int watch_signal_register(const struct watch_signal_client *c, char *why, size_t len);

/* Before a client's first signal: the engine's state, its handlers for
 * SIGSEGV and SIGTRAP, and (outside the probes) sigaction()/signal()
 * interposed and every handler the engine owns its own again.  0, or -errno
 * with "<who>: cannot start (...)". */
int watch_signal_start(const char *who, char *why, size_t len);
/* Every session start of a client whose watch_signal_start ran once only:
 * the interposition and the handlers as watch_signal_start leaves them
 * (nothing while probing).  0, or -errno with "<who>: cannot start (...)". */
int watch_signal_session(const char *who, char *why, size_t len);
/* Around a mechanism probe: its starts leave sigaction() alone. */
void watch_signal_probing(int on);
/* Also the engine's handlers for SIGFPE, SIGILL and SIGBUS, with sigaction()
 * and signal() interposed for them as for SIGSEGV, so that a fault of an
 * instruction stepped by watch_step_one_ex() is seen first (the
 * application's handlers run as before, from chain()).  Thread context.
 * 0, or -errno with a message in why. */
int watch_signal_faults_start(char *why, size_t len);
/* The engine's state alone (no handler installed).  0 or -errno. */
int watch_signal_init(void);

/* The calling thread gets one of the engine's signal stacks if it has none. */
void watch_signal_ensure_altstack(void);
/* The same from a signal handler (uctx: its third argument), so that it
 * outlives the handler's return; async-signal-safe (the park handler runs it:
 * watch_park_run_in_others). */
void watch_signal_ensure_altstack_uc(void *uctx);
/* A thread of the process that has none of the engine's signal stacks and
 * could be handed one (it does not block the park signal): its tid, 0 if
 * there is none, -1 if the task list cannot be read.  Thread context. */
int watch_signal_thread_lacking_altstack(void);

/* State shared with the clients, valid after watch_signal_init(). */
int watch_signal_mem_fd(void); /* /proc/self/mem, O_RDWR */
int watch_signal_pid(void);
uint64_t watch_signal_async_mask(void); /* every signal but the synchronous ones */
/* rt_sigprocmask(how, set, old) from thread context, safe on a watched
 * (PROT_NONE) stack page: the kernel sees only thread-local buffers. */
void watch_thread_mask(int how, uint64_t set, uint64_t *old);

/* Non-zero if the application's SIGTRAP action is the plain default. */
int watch_signal_app_trap_default(void);

/* TF may be left set by a client (a code window, whole-thread stepping):
 * stray TF traps are then cleared rather than fatal (watch_step.c). */
void watch_signal_note_tf_user(int step);
/* Stray TF traps cleared while some thread was stepped as a whole. */
uint64_t watch_signal_strays(void);

/* Step traps the kernel tagged TRAP_BRKPT (DR6.BS lost under KVM). */
uint64_t watch_signal_untagged_steps(void);
/* Step traps of threads or processes made by clone()/fork() from a stepped
 * thread (TF inherited), turned off by the engine since it started. */
uint64_t watch_signal_inherited_steps(void);

/* Memory the engine's handlers touch: [lo, hi) ranges, for fits(); i from
 * 0 until it returns 0. */
int watch_signal_state_range(unsigned i, uintptr_t *lo, uintptr_t *hi);

/* Appends "<name><hex>" to the line at *p (async-signal-safe). */
void watch_signal_diag_hex(char **p, const char *end, const char *name, uint64_t v);

static inline uint64_t watch_sigbit(int sig)
{
	return (uint64_t)1 << (sig - 1);
}

static inline uint64_t *watch_mask_word(ucontext_t *uc)
{
	return (uint64_t *)(void *)&uc->uc_sigmask;
}

static inline long watch_set_thread_mask(uint64_t set, uint64_t *old)
{
	return watch_sys6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&set, (long)old, 8, 0, 0);
}

static inline long watch_change_thread_mask(int how, uint64_t set, uint64_t *old)
{
	return watch_sys6(SYS_rt_sigprocmask, how, (long)&set, (long)old, 8, 0, 0);
}

/* Instruction shapes the steppers need (b: the bytes at the instruction). */
static inline int watch_insn_is_syscall(const uint8_t *b, unsigned n)
{
	return n >= 2 && b[0] == 0x0f && b[1] == 0x05;
}

/* A rep/repe/repne string instruction: with TF set it traps after every
 * iteration with RIP unchanged, and must count once. */
static inline int watch_insn_is_rep_string(const uint8_t *b, unsigned n)
{
	int rep = 0;
	unsigned i = 0;
	for (; i < n; i++) {
		uint8_t p = b[i];
		if (p == 0xf2 || p == 0xf3)
			rep = 1;
		else if (!(p == 0x66 || p == 0x67 || p == 0x2e || p == 0x36 || p == 0x3e || p == 0x26 || p == 0x64 ||
		           p == 0x65 || p == 0xf0 || (p >= 0x40 && p <= 0x4f)))
			break;
	}
	if (!rep || i == n)
		return 0;
	uint8_t op = b[i];
	return (op >= 0xa4 && op <= 0xa7) || (op >= 0xaa && op <= 0xaf) || (op >= 0x6c && op <= 0x6f);
}

#endif
