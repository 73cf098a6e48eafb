/*
 * The software backend of alpha21064: the monitored thread is single-stepped
 * (src/watch/watch_step.h) from start to stop, each instruction is classified
 * with capstone (watch_x86_classify) into Alpha's instruction classes and fed
 * to the emulated counters (alpha_model.h), and every counter overflow is
 * delivered with the PC of the instruction that made it.
 *
 * x86 instructions map to Alpha's classes as if cracked into Alpha
 * instructions: `add (%rdi),%rax` is a load and an integer operate, `call`
 * a store and a branch, `ret` a load and a branch, a mov between a register
 * and memory only a load or a store, `mov %rbx,%rax` an integer operate (BIS
 * on Alpha), nop an integer operate (Alpha's NOP is BIS R31,R31,R31);
 * syscall, int, cpuid, rdtsc, fences, pause and endbr are none of these.
 */
#ifndef HERITAGE_ALPHA_SW_H
#define HERITAGE_ALPHA_SW_H

#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

#include "alpha/alpha_model.h"
#include "common/heritage_owner.h"

/* One counter interrupt: counter c, the PC of the instruction that made it,
 * the interrupted context.  Called in the stepping thread's SIGTRAP handler. */
typedef void (*alpha_deliver_fn)(void *arg, unsigned counter, uint64_t pc, ucontext_t *uc);

#define ALPHA_SW_CACHE 1024

struct alpha_sw_cache_entry {
	uint64_t pc;
	uint64_t bytes; /* the first 8 bytes when classified: code that changed is classified again */
	unsigned cls;
	unsigned valid;
};

struct alpha_sw_run {
	/* Set by the caller before alpha_sw_start. */
	struct alpha_cpu *cpu;    /* the thread's emulated 21064: keeps its residue across runs */
	struct alpha_select sel;
	uint64_t hz;              /* nominal clock for CYCLES */
	alpha_deliver_fn deliver;
	void *deliver_arg;

	/* Written by the stepping thread's handler. */
	uint64_t interrupts[ALPHA_NCOUNTERS]; /* since start (the OS's knowledge) */
	uint64_t steps;
	uint64_t undecoded;
	uint64_t last_undecoded_pc; /* diagnostics */
	uint64_t cpu_ns_last;
	int running;
	struct heritage_owner owner;     /* the stepping thread */
	struct alpha_sw_cache_entry cache[ALPHA_SW_CACHE];
};

/* Alpha class bits (ALPHA_INSN_*) of an x86 instruction's class
 * (WATCH_X86_*). */
unsigned alpha_class_from_x86(unsigned x86cls);

/* Start stepping the calling thread for r.  0 or -errno (message in why). */
int alpha_sw_start(struct alpha_sw_run *r, char *why, size_t len);
/* Stop stepping: no delivery after it returns.  Only in the thread that
 * started it (stepping is that thread's trap flag, and its handler holds r),
 * or once that thread has exited: else -EINVAL with the message, still
 * stepping. */
int alpha_sw_stop(struct alpha_sw_run *r);
/* Zero what the OS knows (interrupt tallies); the counters keep their
 * hidden contents, as on the chip. */
void alpha_sw_reset(struct alpha_sw_run *r);

#endif
