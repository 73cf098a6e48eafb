/*
 * Whole-thread single-stepping (watch_step.h): a client of the signal engine
 * (watch_signal.c) on SIGTRAP.  Each stepping thread has a slot; its step
 * traps report the instruction that just completed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "watch_signal.h"
#include "watch_step.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define PAGE ((uintptr_t)4096)
#define TSTEP_SLOTS 64

/* One slot per stepping thread. */
struct tstep_slot {
	_Atomic int tid;    /* owner; 0 = free */
	_Atomic int active; /* 0: stopping, the next trap clears TF and frees it */
	int has_pending;
	uintptr_t pending;  /* the instruction now executing */
	watch_step_fn fn;
	void *arg;
};

struct tstep_state {
	struct tstep_slot slots[TSTEP_SLOTS];
	_Atomic int used;
	_Atomic uint64_t steps;
};

/* Whole pages of its own: the handler reads it, so it must never be watched
 * (the engine's client table names it for fits()). */
#define TSTEP_STATE_BYTES ((sizeof(struct tstep_state) + PAGE - 1) / PAGE * PAGE)
static union {
	struct tstep_state s;
	unsigned char pad[TSTEP_STATE_BYTES];
} tstep_mem __attribute__((aligned(4096)));

static struct tstep_state *const tstep = &tstep_mem.s;

static void set_why(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_why(char *why, size_t len, const char *fmt, ...)
{
	if (!why || !len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

static struct tstep_slot *tstep_of(int self)
{
	if (!atomic_load(&tstep->used))
		return NULL;
	for (unsigned i = 0; i < TSTEP_SLOTS; i++)
		if (atomic_load(&tstep->slots[i].tid) == self)
			return &tstep->slots[i];
	return NULL;
}

/* Instruction bytes through /proc/self/mem, which does not fault. */
static int is_syscall_at(uintptr_t addr)
{
	uint8_t b[2];
	return watch_sys_pread(watch_signal_mem_fd(), b, 2, addr) == 2 && watch_insn_is_syscall(b, 2);
}

static int is_rep_string_at(uintptr_t addr)
{
	uint8_t b[15];
	return watch_sys_pread(watch_signal_mem_fd(), b, sizeof b, addr) == (long)sizeof b &&
	       watch_insn_is_rep_string(b, sizeof b);
}

/* Report one completed instruction: its first bytes straight from memory
 * when they lie in one page (the page is mapped: it just ran), else through
 * /proc/self/mem, which does not fault. */
static void tstep_report(struct tstep_slot *t, uintptr_t pc, ucontext_t *uc)
{
	uint8_t bytes[15];
	unsigned n = sizeof bytes;
	if ((pc & (PAGE - 1)) <= PAGE - sizeof bytes) {
		watch_copy(bytes, (const void *)pc, sizeof bytes);
	} else {
		long got = watch_sys_pread(watch_signal_mem_fd(), bytes, sizeof bytes, pc);
		if (got <= 0) {
			n = (unsigned)(PAGE - (pc & (PAGE - 1)));
			watch_copy(bytes, (const void *)pc, n);
		} else {
			n = (unsigned)got;
		}
	}
	atomic_fetch_add(&tstep->steps, 1);
	t->fn(t->arg, pc, bytes, n, uc);
}

/* About to run rt_sigprocmask: emulate it on the context's saved mask,
 * leaving SIGTRAP deliverable.  A step trap with SIGTRAP blocked is forced
 * on the thread with the default action, which kills the process, and glibc
 * blocks every signal around clone() and elsewhere.  The old mask written
 * back shows SIGTRAP unblocked.  0 if the kernel should run the call (bad
 * pointers: it reports EFAULT itself). */
static int tstep_emulate_sigprocmask(ucontext_t *uc, uintptr_t rip)
{
	greg_t *g = uc->uc_mcontext.gregs;
	if (g[REG_RAX] != SYS_rt_sigprocmask || g[REG_R10] != 8 || !is_syscall_at(rip))
		return 0;
	long how = g[REG_RDI];
	uintptr_t set = (uintptr_t)g[REG_RSI], oset = (uintptr_t)g[REG_RDX];
	uint64_t cur = *watch_mask_word(uc), want = 0, next = cur;
	int mem_fd = watch_signal_mem_fd();
	if (set) {
		if (how != SIG_BLOCK && how != SIG_UNBLOCK && how != SIG_SETMASK)
			return 0;
		if (watch_sys_pread(mem_fd, &want, 8, set) != 8)
			return 0;
		next = how == SIG_BLOCK ? cur | want : how == SIG_UNBLOCK ? cur & ~want : want;
	}
	if (oset && watch_sys_pwrite(mem_fd, &cur, 8, oset) != 8)
		return 0;
	*watch_mask_word(uc) = next & ~(watch_sigbit(SIGTRAP) | watch_sigbit(SIGKILL) | watch_sigbit(SIGSTOP));
	g[REG_RAX] = 0;
	g[REG_RIP] = (greg_t)(rip + 2);
	return 1;
}

/* A step trap on a thread being stepped: the pending instruction completed;
 * RIP is the next.  The same rules as the page-trap backend's code steps. */
static void tstep_trap(struct tstep_slot *t, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	uintptr_t rip = (uintptr_t)g[REG_RIP];

	if (!atomic_load(&t->active)) {
		g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] & ~WATCH_EFLAGS_TF);
		atomic_store(&t->tid, 0);
		return;
	}
	if (t->has_pending) {
		uintptr_t done = t->pending;
		if (rip == done && is_rep_string_at(done))
			return; /* one more iteration of the same instruction */
		tstep_report(t, done, uc);
		/* The kernel returns from a system call with IRET, which re-arms TF
		 * only after the next instruction: the trap owed to the syscall is
		 * lost and the instruction after it runs untrapped (measured: the
		 * next trap's RIP is past it).  Report it from here. */
		for (int i = 0; i < 4 && is_syscall_at(done) && rip != done + 2 && atomic_load(&t->active); i++) {
			done += 2;
			tstep_report(t, done, uc);
		}
	}
	t->pending = rip;
	t->has_pending = 1;
	if (tstep_emulate_sigprocmask(uc, rip)) {
		tstep_report(t, rip, uc); /* the syscall, done here */
		t->pending = rip + 2;
	}
}

/* A thread stepped as a whole gets every TF trap reported, whatever
 * page-trap window the same trap also closes (then ev->handled: the
 * window's TF was ours all along, keep it). */
static enum watch_claim tstep_client(struct watch_signal_event *ev, void *arg)
{
	(void)arg;
	struct tstep_slot *t = ev->si->si_code == TRAP_TRACE ? tstep_of(ev->self) : NULL;
	if (!t)
		return WATCH_NOT_MINE;
	if (ev->handled) {
		if (atomic_load(&t->active)) {
			greg_t *g = ev->uc->uc_mcontext.gregs;
			g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] | WATCH_EFLAGS_TF);
			tstep_trap(t, ev->uc);
		}
		return WATCH_MINE;
	}
	tstep_trap(t, ev->uc);
	return WATCH_MINE;
}

static void tstep_diag(char **p, const char *end, int self)
{
	watch_signal_diag_hex(p, end, " tstep ", (uint64_t)(tstep_of(self) != NULL));
}

/* The child inherited TF from a stepping parent thread: its traps are
 * strays (the engine clears TF), never reported. */
static void atfork_child(void)
{
	for (unsigned i = 0; i < TSTEP_SLOTS; i++)
		atomic_store(&tstep->slots[i].tid, 0);
}

static pthread_once_t client_once = PTHREAD_ONCE_INIT;
static int client_err;

static void register_client(void)
{
	const struct watch_signal_client c = {
		.name = "whole-thread stepping", .sig = SIGTRAP, .priority = WATCH_PRIO_TSTEP, .fn = tstep_client,
		.state_lo = (uintptr_t)&tstep_mem, .state_hi = (uintptr_t)&tstep_mem + sizeof tstep_mem,
		.diag = tstep_diag,
	};
	client_err = watch_signal_register(&c, NULL, 0);
	pthread_atfork(NULL, NULL, atfork_child);
}

/* ---- start / stop ------------------------------------------------------------ */

/* Set or clear TF in the calling thread.  Below the red zone: the compiler
 * may keep data in the 128 bytes under %rsp, which pushfq would overwrite. */
static inline void tf_on(uintptr_t *next)
{
	__asm__ volatile("leaq 1f(%%rip), %%rax\n\t"
	                 "movq %%rax, %0\n\t"
	                 "leaq -128(%%rsp), %%rsp\n\t"
	                 "pushfq\n\t"
	                 "orq $0x100, (%%rsp)\n\t"
	                 "popfq\n"
	                 "1:\n\t"
	                 "leaq 128(%%rsp), %%rsp"
	                 : "=m"(*next)
	                 :
	                 : "rax", "memory", "cc");
}

static inline void tf_off(void)
{
	__asm__ volatile("leaq -128(%%rsp), %%rsp\n\t"
	                 "pushfq\n\t"
	                 "andq $~0x100, (%%rsp)\n\t"
	                 "popfq\n\t"
	                 "leaq 128(%%rsp), %%rsp"
	                 :
	                 :
	                 : "memory", "cc");
}

/* The calling thread's slot while it steps: stop runs stepped itself, so it
 * must not search the slot table (every instruction of the search costs a
 * trap). */
static __thread struct tstep_slot *my_tstep;

int watch_step_start(watch_step_fn fn, void *arg, char *why, size_t len)
{
	int err = watch_signal_start("single-step engine", why, len);
	if (err)
		return err;
	pthread_once(&client_once, register_client);
	if (client_err) {
		set_why(why, len, "single-step engine: cannot start (%s)", strerror(-client_err));
		return client_err;
	}
	watch_signal_ensure_altstack();
	int self = watch_sys_gettid(), pid = watch_sys_getpid();
	struct tstep_slot *t = NULL;
	/* This thread's slot left by an earlier stop whose last trap never
	 * came, else a free one, else one whose thread has exited. */
	for (unsigned i = 0; i < TSTEP_SLOTS && !t; i++)
		if (atomic_load(&tstep->slots[i].tid) == self)
			t = &tstep->slots[i];
	if (t && atomic_load(&t->active)) {
		set_why(why, len, "single-step engine: this thread is already being stepped");
		return -EBUSY;
	}
	for (unsigned i = 0; i < TSTEP_SLOTS && !t; i++) {
		int owner = atomic_load(&tstep->slots[i].tid);
		if (owner && watch_sys_tgkill(pid, owner, 0) == 0)
			continue;
		if (atomic_compare_exchange_strong(&tstep->slots[i].tid, &owner, self))
			t = &tstep->slots[i];
	}
	if (!t) {
		set_why(why, len, "single-step engine: more than %d threads stepped at once", TSTEP_SLOTS);
		return -ENOSPC;
	}
	t->fn = fn;
	t->arg = arg;
	t->has_pending = 1;
	my_tstep = t;
	atomic_store(&tstep->used, 1);
	watch_signal_note_tf_user(1);
	atomic_store(&t->active, 1);
	/* The first trap comes after the instruction following popfq: that one
	 * is pending from the start. */
	tf_on(&t->pending);
	return 0;
}

void watch_step_stop(void)
{
	struct tstep_slot *t = my_tstep;
	if (!t)
		return;
	my_tstep = NULL;
	/* Inactive first: a trap still due clears TF and frees the slot. */
	atomic_store(&t->active, 0);
	tf_off();
}

int watch_step_active(void)
{
	struct tstep_slot *t = tstep_of(watch_sys_gettid());
	return t && atomic_load(&t->active);
}

void watch_step_stats(struct watch_step_stats *out)
{
	out->steps = atomic_load(&tstep->steps);
	out->strays = watch_signal_strays();
	out->untagged = watch_signal_untagged_steps();
}
