/*
 * Whole-thread single-stepping: from watch_step_start() until
 * watch_step_stop(), the calling thread runs with the trap flag set and every
 * instruction it completes is reported to a callback, from the SIGTRAP
 * handler.  It is a client of the signal engine (watch_signal.c: its SIGTRAP
 * handler, signal stacks, interposed sigaction so application handlers keep
 * working) and shares the page-trap backend's stepping rules (rep-string
 * iterations count once, the instruction after a syscall whose trap the
 * kernel drops is still reported).
 *
 * What is not stepped: signal handlers (the kernel clears TF for them; their
 * instructions are not reported), and anything after a handler leaves by
 * longjmp (TF is not restored; stepping of that thread silently ends).
 * A child process or thread created while stepping inherits TF; its traps
 * are recognised as strays and TF is cleared.
 */
#ifndef HERITAGE_WATCH_STEP_H
#define HERITAGE_WATCH_STEP_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <ucontext.h>

/* Called in the SIGTRAP handler of the stepping thread, on the engine's
 * signal stack with asynchronous signals blocked, once per completed
 * instruction: pc is its address, bytes[0..nbytes) its first bytes (up to
 * 15), uc the interrupted context (RIP = the next instruction). */
typedef void (*watch_step_fn)(void *arg, uintptr_t pc, const uint8_t *bytes, unsigned nbytes, ucontext_t *uc);

/* Start stepping the calling thread.  0, or -errno with a message in why. */
int watch_step_start(watch_step_fn fn, void *arg, char *why, size_t len);
/* Stop stepping the calling thread (no more callbacks once it returns). */
void watch_step_stop(void);
/* Non-zero while the calling thread is being stepped. */
int watch_step_active(void);

struct watch_step_stats {
	uint64_t steps;      /* instructions reported */
	uint64_t strays;     /* step traps on threads nobody steps (TF inherited): cleared */
	uint64_t untagged;   /* step traps the kernel tagged TRAP_BRKPT (DR6.BS lost under KVM) */
};
void watch_step_stats(struct watch_step_stats *out);

/* ---- one instruction, from a fault handler ----------------------------------
 * For a client that has to let one faulting instruction complete under
 * changed conditions and then change them back (paragon_rpm's FP-exception
 * trap mode: re-run an SSE instruction with its exception masked, unmask it
 * after).  Sharing the engine's SIGTRAP handler, rather than installing a
 * second one, keeps the page-trap windows, whole-thread stepping and the
 * application's own SIGTRAP handler working alongside. */

/* Called from the engine's SIGTRAP handler once the stepped instruction has
 * completed: uc is the context after it (RIP = the next instruction).  It may
 * arm the next step on that uc (a chain of single instructions, each seeing
 * the thread's own TF and mask). */
typedef void (*watch_step_done_fn)(void *arg, ucontext_t *uc);

/* In a synchronous signal handler of the calling thread: arrange for done()
 * after the instruction at uc's RIP has run once.  Sets TF in uc and blocks
 * asynchronous signals for that one instruction (both restored in the trap).
 * The engine must be installed (watch_signal_claim() does it).  0, or -EBUSY
 * if this thread already has a step pending. */
int watch_step_one(ucontext_t *uc, watch_step_done_fn done, void *arg);

/* The same from an asynchronous signal handler too (profileme's soft
 * backend steps the instruction a CPU-time timer interrupted), for an
 * instruction that may fault.  If it raises SIGSEGV, SIGBUS, SIGFPE or SIGILL
 * (a fault: si_code > 0, at the stepped RIP) the step is cancelled before
 * anyone else sees the signal: TF and the signal mask are given back as they
 * were before the step, then fault(arg, sig, si, uc) runs, and the signal
 * goes on to the engine's clients and the application's handler exactly as
 * without the step (a handler that fixes RIP or siglongjmps is not followed
 * by a stray step trap).  done() is then never called.  Needs
 * watch_signal_faults_start().  Async-signal-safe.  0, or -EBUSY. */
typedef void (*watch_step_fault_fn)(void *arg, int sig, siginfo_t *si, ucontext_t *uc);
int watch_step_one_ex(ucontext_t *uc, watch_step_done_fn done, watch_step_fault_fn fault, void *arg);

/* Signals left unblocked while the one instruction runs (the others
 * asynchronous are blocked until its trap): a client's own asynchronous
 * signal that must still reach the thread should the trap never come
 * (profileme's soft backend's timer: under host load the guest lost a step
 * trap, and the thread ran on with every asynchronous signal blocked, its
 * sampling stopped and the program's SIGINT/SIGTERM held).  Process-wide;
 * bits as watch_sigbit(). */
void watch_step_one_unblocked(uint64_t sigbits);
/* In an asynchronous handler of the calling thread that found a step of
 * watch_step_one_ex() still armed: -1 if the step is still ahead (the
 * signal came before the instruction ran: leave it be); 1 if its trap was
 * lost: the context gets back the mask and TF it had before the step, and
 * the step is forgotten; 0 if none is armed.  Async-signal-safe. */
int watch_step_one_lost(ucontext_t *uc);

/* A synchronous signal other than SIGSEGV/SIGTRAP (only SIGFPE so far) that a
 * client handles first.  fn returns non-zero for a signal it handled; the
 * others go to what the application installed (sigaction() and signal() are
 * interposed for it as for SIGSEGV) or to the default action.  Thread
 * context only.  0, or -errno with a message in why. */
typedef int (*watch_signal_fn)(int sig, siginfo_t *si, ucontext_t *uc);
int watch_signal_claim(int sig, watch_signal_fn fn, char *why, size_t len);

/* SIGTRAP with si_code TRAP_PERF: a perf event opened with attr.sigtrap
 * (the breakpoint backend's store breakpoint).  glibc 2.36 names neither the
 * code nor the fields after si_addr, so they are given here. */
#define WATCH_TRAP_PERF 6
#define WATCH_TRAP_PERF_FLAG_ASYNC 1u /* SIGTRAP was blocked: the context is not the hit's */
struct watch_trap_perf_info {
	uint64_t data;  /* attr.sig_data */
	uint32_t type;  /* attr.type */
	uint32_t flags; /* WATCH_TRAP_PERF_FLAG_* */
};
static inline struct watch_trap_perf_info watch_trap_perf_info(const siginfo_t *si)
{
	struct watch_trap_perf_info i;
	const unsigned char *p = (const unsigned char *)&si->si_addr + sizeof(void *);
	__builtin_memcpy(&i, p, sizeof i);
	return i;
}

/* A client for those SIGTRAPs, run from the engine's SIGTRAP handler (one
 * SIGTRAP handler for the process, so page-trap windows, stepping and the
 * application's own handler keep working): fn returns non-zero for a signal
 * it handled; the others go to the application.  fn also gets every
 * TRAP_BRKPT trap without TF (a #DB whose cause bits were lost, or an
 * icebp), to claim if one of its breakpoints made it.  One client, re-claiming with
 * the same fn is allowed.  Also gives the calling thread one of the engine's
 * signal stacks if it has none.  Thread context.  0, or -errno with why. */
int watch_trap_perf_claim(watch_signal_fn fn, char *why, size_t len);

#endif
