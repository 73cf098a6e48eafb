/*
 * x86-64 decoding of a faulting instruction for the page-trap backend:
 * which bytes it reads and writes, and whether execution continues at the
 * next instruction (so an int3 there can end a one-instruction window).
 *
 * Built on capstone 4.  Every entry point except watch_x86_init() is
 * async-signal-safe: no malloc, no errno, no thread-local storage; capstone's
 * own allocations are served from a static page-aligned arena that is never
 * watched, and decoding is serialised by the caller (the page-trap window lock),
 * so one capstone handle and one cs_insn serve every thread.
 */
#ifndef HERITAGE_WATCH_X86_H
#define HERITAGE_WATCH_X86_H

#include <stdint.h>
#include <ucontext.h>

#define WATCH_X86_MAX_ACCESS 4

/* `count` elements of `size` bytes at base, base+size, ... (ascending; for a
 * rep string instruction run with DF=1 base is the lowest element). */
struct watch_x86_access {
	uintptr_t base;
	uint64_t count;
	uint32_t size;
	uint8_t load, store;
};

struct watch_x86_insn {
	uintptr_t rip;
	unsigned len;
	/* Control continues at rip+len, so a one-shot int3 there ends the step. */
	int sequential;
	/* An operand's address could not be computed (vector index: gathers). */
	int address_unknown;
	unsigned naccess;
	struct watch_x86_access acc[WATCH_X86_MAX_ACCESS];
};

/* Open capstone once.  Not async-signal-safe.  0 or -errno. */
int watch_x86_init(void);

/* Decode the instruction at the context's RIP.  fault_is_write is bit 1 of
 * the page-fault error code: capstone 4 reports VEX/EVEX stores as reads, so
 * the direction of a lone memory operand comes from the CPU unless capstone
 * says read-modify-write.  mem_fd is an open /proc/self/mem, used to read
 * instruction bytes that straddle a page and the operands of repe/repne
 * cmps/scas (whose iteration count depends on the data) without faulting.
 * 0 on success, -1 if the bytes do not decode. */
int watch_x86_decode(const ucontext_t *uc, int fault_is_write, int mem_fd,
                     struct watch_x86_insn *out);

/* Instruction mix (the alpha21064 single-step backend): what one instruction
 * does, from its bytes alone.  Class bits: */
#define WATCH_X86_READS 0x01u  /* reads memory: a memory operand, an implicit stack read (pop, ret, leave), a string source */
#define WATCH_X86_WRITES 0x02u /* writes memory: likewise (push, call, stos, a mov to memory) */
#define WATCH_X86_BRANCH 0x04u /* jmp, jcc, loop, call, ret, iret */
#define WATCH_X86_FP 0x08u     /* floating-point operate: x87 arithmetic, SSE/AVX scalar and packed FP, conversions */
#define WATCH_X86_MOVE 0x10u   /* pure data movement between memory and a register (mov*, push, pop, string moves) */
#define WATCH_X86_SYSTEM 0x20u /* syscall, int, int3, cpuid, rdtsc, fences, pause, endbr: no Alpha operate */

/* Classify the instruction in bytes[0..avail) (its address pc): 0 and *len,
 * *cls, or -1 if it does not decode.  Async-signal-safe and callable from
 * several threads (a second capstone handle, serialised by a spin lock that
 * only this function takes). */
int watch_x86_classify(const uint8_t *bytes, size_t avail, uint64_t pc, unsigned *len, unsigned *cls);

/* ---- data breakpoint hits (watch_breakpoint.c) -------------------------------
 * A data breakpoint is a trap: it is raised after the instruction that hit it,
 * so all the handler has is the registers after that instruction.  These say
 * what one instruction did to the watched bytes [lo, hi), computed from those
 * registers.  Async-signal-safe and callable from several threads (a small
 * pool of capstone handles of their own, each taken with a try-lock, so a
 * thread never waits for a handle it holds itself). */
enum watch_x86_answer { WATCH_X86_NO = 0, WATCH_X86_YES = 1, WATCH_X86_MAYBE = 2 };

struct watch_x86_effect {
	unsigned len;
	/* It wrote [lo, hi): MAYBE when an address depends on a register the
	 * instruction itself changed (xadd %rax,(%rax)). */
	uint8_t stores;
	/* Had it written [lo, hi), it would also have read it: a read-modify-write
	 * operand, or a second operand (movs source, push's memory operand) that
	 * covers the word. */
	uint8_t loads;
	uint8_t is_call;
};

/* bytes[0..avail) is the instruction at pc; uc holds the registers after it
 * ran (for a rep string instruction: after some iteration).  0, or -1 if it
 * does not decode or no decoder is free. */
int watch_x86_effect(const uint8_t *bytes, size_t avail, uint64_t pc, const ucontext_t *uc, uintptr_t lo,
                     uintptr_t hi, struct watch_x86_effect *out);

/* Just the length of the instruction at pc (for walking a function from its
 * start): 0, or -1.  Same safety as above. */
int watch_x86_length(const uint8_t *bytes, size_t avail, uint64_t pc, unsigned *len);

/* A rep (or repne) movs or stos: a data breakpoint traps between its
 * iterations with RIP still on it.  From the bytes alone. */
int watch_x86_is_rep_store(const uint8_t *bytes, size_t avail);

/* ---- a sampled instruction (profileme's soft backend, pm_soft.c) -----------
 * What the ProfileMe fields need of the instruction at pc, from its bytes and
 * the registers before it runs (uc: the interrupted context).  Same safety as
 * watch_x86_effect (the hit decoders' pool). */
struct watch_x86_pm {
	unsigned len;
	/* jcc, jrcxz/jecxz/jcxz, loop/loope/loopne: `taken` is defined. */
	uint8_t cond_branch;
	/* Completes at pc + len: no jump, call, return or interrupt.  A rep
	 * string instruction also stops at pc after each iteration (rep). */
	uint8_t sequential, rep;
	/* Must not run with TF set: syscall, sysenter, int n, int3, int1, into
	 * (the kernel drops or turns the step trap), pushf (it would push TF,
	 * and a later popf would trap where nobody stepped). */
	uint8_t no_step;
	/* An operand's address could not be computed (vector index: gathers). */
	uint8_t address_unknown;
	unsigned naccess;
	/* Explicit memory operands actually accessed (not lea, nop, prefetch,
	 * clflush), plus the stack slot of push/pop/call/ret. */
	struct {
		uintptr_t addr;
		uint32_t size;
	} acc[WATCH_X86_MAX_ACCESS];
};
int watch_x86_pm_decode(const uint8_t *bytes, size_t avail, uint64_t pc, const ucontext_t *uc,
                        struct watch_x86_pm *out);

/* ---- control flow and the stack pointer (the block hooks' analysis,
 * watch_blocks_cfg.c) ------------------------------------------------------
 * Where execution can go after the instruction at pc, and what it does to
 * %rsp and %rbp, from its bytes alone.  Same safety as watch_x86_effect. */
enum watch_x86_flow_kind {
	WATCH_X86_FLOW_NEXT,          /* on to pc + len (syscall, int n included) */
	WATCH_X86_FLOW_JCC,           /* to target or pc + len (jcc, jrcxz, loop*, xbegin) */
	WATCH_X86_FLOW_JMP,           /* to target */
	WATCH_X86_FLOW_JMP_INDIRECT,  /* through a register or memory (slot: a rip-relative word) */
	WATCH_X86_FLOW_CALL,          /* call target, then on to pc + len */
	WATCH_X86_FLOW_CALL_INDIRECT, /* likewise through a register or memory (slot) */
	WATCH_X86_FLOW_RET,           /* ret, retf, iret: leaves the function */
	WATCH_X86_FLOW_STOP,          /* ud2, hlt, int3, int1: does not go on */
};
enum watch_x86_sp_effect {
	WATCH_X86_SP_KEEP,     /* %rsp unchanged (a call's push and the callee's ret cancel out) */
	WATCH_X86_SP_ADD,      /* %rsp += sp_arg (push: -8, pop: +8, sub $n: -n, lea n(%rsp)) */
	WATCH_X86_SP_FROM_RBP, /* %rsp = %rbp + sp_arg (mov %rbp,%rsp; lea n(%rbp),%rsp) */
	WATCH_X86_SP_LEAVE,    /* leave: %rsp = %rbp + 8 */
	WATCH_X86_SP_UNKNOWN,  /* written any other way (and $-32, sub %rax) */
};
enum watch_x86_rbp_effect {
	WATCH_X86_RBP_KEEP,
	WATCH_X86_RBP_FROM_SP, /* %rbp = %rsp + rbp_arg (mov %rsp,%rbp; lea n(%rsp),%rbp) */
	WATCH_X86_RBP_OTHER,   /* written any other way (pop %rbp, leave, a computation) */
};
struct watch_x86_flow {
	unsigned len;
	uint8_t kind, sp, rbp;
	int64_t sp_arg, rbp_arg;
	uintptr_t target;      /* JCC, JMP, CALL */
	uintptr_t slot;        /* JMP_INDIRECT, CALL_INDIRECT through *disp(%rip): that word's address; else 0 */
	uint8_t endbr;         /* endbr64 / endbr32 (a PLT entry may begin with one) */
	uint8_t pad;           /* a nop of any length or an int3: what fills the gaps between functions */
};
int watch_x86_flow(const uint8_t *bytes, size_t avail, uint64_t pc, struct watch_x86_flow *out);

/* ---- a displaced instruction (the block-trap backend, watch_blocktrap.c) ----
 * The instruction under a block leader's int3 is run elsewhere: copied to a
 * slot of its own (its RIP-relative displacement re-based to the slot, a jump
 * back after it), as uprobes does, or, when it transfers control (its
 * effect depends on where it is), emulated on the trap's ucontext.  The plan
 * is made once, at start, with capstone; carrying it out at the trap is
 * arithmetic on the registers (no decoding in the handler). */
enum watch_x86_xol_kind {
	WATCH_X86_XOL_COPY,     /* run copy[0..ncopy) at the slot, then jmp to pc + len */
	WATCH_X86_XOL_JMP,      /* RIP = target */
	WATCH_X86_XOL_JCC,      /* RIP = cc holds on EFLAGS ? target : pc + len */
	WATCH_X86_XOL_JRCXZ,    /* RIP = RCX == 0 ? target : pc + len */
	WATCH_X86_XOL_LOOP,     /* RCX -= 1; cc: 0 loopne, 1 loope, 2 loop */
	WATCH_X86_XOL_CALL,     /* push pc + len; RIP = target */
	WATCH_X86_XOL_RET,      /* RIP = pop; RSP += ret_pop */
	WATCH_X86_XOL_INDIRECT, /* jmp or call (is_call) through reg or [base + index * scale + disp] */
};
#define WATCH_X86_XOL_SLOT 32 /* bytes per slot: up to 15 copied, 5 of jmp back */
#define WATCH_X86_XOL_NOREG (-1)
#define WATCH_X86_XOL_RIP (-2)
struct watch_x86_xol {
	unsigned len;
	uint8_t kind;
	uint8_t cc;
	uint8_t is_call;
	uint8_t rip_relative;  /* COPY: its displacement was re-based */
	uint16_t ret_pop;
	uintptr_t target;
	/* INDIRECT: through register reg (a REG_* index of gregs), or, with reg
	 * == NOREG, the word at base + index * scale + disp (base may be RIP). */
	int8_t reg, base, index;
	uint8_t scale;
	int32_t disp;
	uint8_t ncopy;
	uint8_t copy[WATCH_X86_XOL_SLOT];
};
/* Plan the instruction bytes[0..avail) at pc, to be run from slot (COPY:
 * copy[] is the whole slot, jump back included).  0, or -1 with why (an
 * instruction that cannot move: a far transfer, xbegin, a segment-relative
 * or 32-bit-address indirect target, a displacement that does not reach
 * from the slot).  Not for the handler (it takes a decoder). */
int watch_x86_xol_plan(const uint8_t *bytes, size_t avail, uint64_t pc, uint64_t slot, struct watch_x86_xol *out,
                       const char **why);
/* Carry out a control transfer planned for pc on uc (the registers before
 * it): RIP, RSP and RCX as the instruction would leave them.  0, or -1 for
 * a COPY plan (the caller points RIP at the slot).  Async-signal-safe; a
 * stack or memory word that cannot be read faults as the instruction would. */
int watch_x86_xol_transfer(const struct watch_x86_xol *x, uint64_t pc, ucontext_t *uc);
/* Condition code cc (the low nibble of a jcc opcode) on eflags. */
int watch_x86_cc_holds(unsigned cc, uint64_t eflags);

/* The pages holding the decoder's state, which must never be watched. */
void watch_x86_state_range(uintptr_t *lo, uintptr_t *hi);

#endif
