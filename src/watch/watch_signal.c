/*
 * The signal engine (watch_signal.h): one SIGSEGV, one SIGTRAP and one SIGFPE
 * handler for the process, a table of clients with priorities, and the one
 * place where a signal no client took goes to the application's own handler.
 *
 * sigaction() and signal() are interposed for SIGSEGV and SIGTRAP (and SIGFPE
 * once a client claimed it, SIGFPE, SIGILL and SIGBUS after
 * watch_signal_faults_start) so that our handlers stay first; what the
 * application installs is recorded and run by chain().  Interposed by
 * consent (watch_got.c): from a session's first start, not from the probes
 * that PAPI_library_init runs; a handler the application installed through
 * libc's own sigaction() before that is taken over at each start
 * (take_dispositions).  A fault of an
 * instruction stepped by watch_step_one_ex() cancels that step before any
 * client or the application sees the signal (step_one_fault).
 *
 * The handlers touch only: their stack (sigaltstack, mmap'd here), the static
 * page-aligned state below and the clients' (each names its own), and raw
 * system calls.  The page-trap backend's fits() refuses requests that overlap
 * any of that (watch_signal_state_range, watch_signal_client_range).
 */
#undef _FORTIFY_SOURCE
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common/heritage_error.h"
#include "watch_got.h"
#include "watch_park.h"
#include "watch_signal.h"
#include "watch_x86.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE ((uintptr_t)4096)
#define ALTSTACK_SLOTS 128
#define ALTSTACK_BYTES ((size_t)64 * 1024)

enum { TF_CODE = 1, TF_STEP = 2 };

struct engine_state {
	int ready;
	int installed;
	int mem_fd; /* /proc/self/mem: int3 patches, bounce copies, instruction bytes */
	int pid;
	uint64_t async_mask; /* every signal except the synchronous ones */

	/* The client table, twice: a registration fills the idle copy and
	 * publishes it, so a handler never reads one being changed. */
	_Atomic unsigned table;
	unsigned nclients[2];
	struct watch_signal_client clients[2][WATCH_SIGNAL_MAX_CLIENTS];

	/* What the application installed for SIGSEGV / SIGTRAP / SIGFPE. */
	_Atomic int app_lock;
	struct sigaction app_segv, app_trap, app_fpe, app_ill, app_bus;
	_Atomic int fpe_claimed;
	/* watch_sigbit()s of SIGFPE, SIGILL, SIGBUS whose handler is the engine's. */
	_Atomic uint64_t faults_installed;
	watch_signal_fn fpe_fn;
	/* The client of SIGTRAPs from perf events (watch_trap_perf_claim). */
	_Atomic(watch_signal_fn) perf_fn;

	_Atomic int tf_users;
	_Atomic uint64_t untagged_steps; /* step traps that came without DR6.BS */
	_Atomic uint64_t inherited_steps; /* step traps of new threads that inherited TF (inherited_step) */
	_Atomic uint64_t strays;         /* stray TF traps cleared while a thread was stepped */

	uintptr_t altstacks;
	_Atomic int altstack_tid[ALTSTACK_SLOTS];
};

#define ENGINE_STATE_BYTES ((sizeof(struct engine_state) + PAGE - 1) / PAGE * PAGE)
static union {
	struct engine_state s;
	unsigned char pad[ENGINE_STATE_BYTES];
} engine_mem __attribute__((aligned(4096)));

static struct engine_state *const engine = &engine_mem.s;

extern int __sigaction(int, const struct sigaction *, struct sigaction *);

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

static uint64_t sync_signals(void)
{
	return watch_sigbit(SIGSEGV) | watch_sigbit(SIGBUS) | watch_sigbit(SIGILL) | watch_sigbit(SIGFPE) |
	       watch_sigbit(SIGTRAP) | watch_sigbit(SIGKILL) | watch_sigbit(SIGSTOP);
}

/* ---- the client table ------------------------------------------------------ */

int watch_signal_register(const struct watch_signal_client *c, char *why, size_t len)
{
	static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
	if (!c || !c->fn ||
	    (c->sig != SIGSEGV && c->sig != SIGTRAP && c->sig != SIGFPE && c->sig != SIGILL && c->sig != SIGBUS)) {
		set_why(why, len, "signal engine: a client needs a handler and SIGSEGV, SIGTRAP, SIGFPE, SIGILL or SIGBUS");
		return -EINVAL;
	}
	pthread_mutex_lock(&reg_lock);
	unsigned cur = atomic_load(&engine->table), next = cur ^ 1, n = engine->nclients[cur];
	if (n >= WATCH_SIGNAL_MAX_CLIENTS) {
		pthread_mutex_unlock(&reg_lock);
		set_why(why, len, "signal engine: more than %d clients", WATCH_SIGNAL_MAX_CLIENTS);
		return -ENOSPC;
	}
	unsigned at = 0;
	while (at < n && engine->clients[cur][at].priority <= c->priority)
		at++;
	memcpy(engine->clients[next], engine->clients[cur], at * sizeof *c);
	engine->clients[next][at] = *c;
	memcpy(&engine->clients[next][at + 1], &engine->clients[cur][at], (n - at) * sizeof *c);
	engine->nclients[next] = n + 1;
	atomic_store(&engine->table, next);
	/* The copy just left is the next registration's: no handler that
	 * started before this store reads it once the next one comes (they
	 * are thread-context calls, seconds apart). */
	pthread_mutex_unlock(&reg_lock);
	return 0;
}

/* ---- chaining to the application's handlers ------------------------------- */

static void app_lock(void)
{
	int expected = 0;
	while (!atomic_compare_exchange_weak(&engine->app_lock, &expected, 1)) {
		expected = 0;
		__builtin_ia32_pause();
	}
}

static void app_unlock(void)
{
	atomic_store(&engine->app_lock, 0);
}

static struct sigaction *app_action(int sig)
{
	switch (sig) {
	case SIGSEGV: return &engine->app_segv;
	case SIGFPE: return &engine->app_fpe;
	case SIGILL: return &engine->app_ill;
	case SIGBUS: return &engine->app_bus;
	default: return &engine->app_trap;
	}
}

void watch_signal_diag_hex(char **p, const char *end, const char *name, uint64_t v)
{
	while (*name && *p < end)
		*(*p)++ = *name++;
	char digits[16];
	int n = 0;
	do {
		digits[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v && n < 16);
	while (n && *p < end)
		*(*p)++ = digits[--n];
}

/* A SIGTRAP the engine passes to the default action kills the process, and
 * when that is not the application's own trap it is a bug here: say what
 * the engine and its clients saw, so that a rare one (a CI run) leaves
 * evidence. */
static void diag_fatal_trap(const siginfo_t *si, const ucontext_t *uc)
{
	const greg_t *g = uc->uc_mcontext.gregs;
	char line[320], *p = line, *end = line + sizeof line - 1;
	int self = watch_sys_gettid();
	watch_signal_diag_hex(&p, end, "libheritage watch engine: a SIGTRAP no client claimed goes to the default action: si_code 0x", (uint64_t)si->si_code);
	watch_signal_diag_hex(&p, end, " rip 0x", (uint64_t)g[REG_RIP]);
	watch_signal_diag_hex(&p, end, " tf ", ((uint64_t)g[REG_EFL] & WATCH_EFLAGS_TF) != 0);
	watch_signal_diag_hex(&p, end, " tid 0x", (uint64_t)self);
	unsigned t = atomic_load(&engine->table);
	for (unsigned i = 0; i < engine->nclients[t]; i++)
		if (engine->clients[t][i].diag)
			engine->clients[t][i].diag(&p, end, self);
	*p++ = '\n';
	watch_sys3(SYS_write, 2, (long)line, (long)(p - line));
}

/* A signal that is not ours: do what the application asked for. */
static void chain(int sig, siginfo_t *si, ucontext_t *uc)
{
	struct sigaction a;
	app_lock();
	watch_copy(&a, app_action(sig), sizeof a);
	if (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN && (a.sa_flags & SA_RESETHAND))
		app_action(sig)->sa_handler = SIG_DFL;
	app_unlock();

	if (a.sa_handler == SIG_IGN && si->si_code <= 0)
		return; /* sent with kill(): ignoring it is what the application asked */
	if (a.sa_handler == SIG_DFL || a.sa_handler == SIG_IGN) {
		/* A fault cannot be ignored: the kernel would kill the process.  Give
		 * the signal its default action back; a fault then happens again on
		 * return, anything else (int3, kill) is raised again. */
		if (sig == SIGTRAP && si->si_code > 0)
			diag_fatal_trap(si, uc);
		struct sigaction dfl;
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		__sigaction(sig, &dfl, NULL);
		/* SIGFPE, SIGILL and SIGBUS too are faults: the instruction runs
		 * again and faults. */
		if ((sig != SIGSEGV && sig != SIGFPE && sig != SIGILL && sig != SIGBUS) || si->si_code <= 0)
			watch_sys_tgkill(watch_sys_getpid(), watch_sys_gettid(), sig);
		return;
	}
	/* Run it with the mask the kernel would have set. */
	uint64_t mask = *watch_mask_word(uc) | a.sa_mask.__val[0], old = 0;
	if (!(a.sa_flags & SA_NODEFER))
		mask |= watch_sigbit(sig);
	watch_set_thread_mask(mask & ~(watch_sigbit(SIGKILL) | watch_sigbit(SIGSTOP)), &old);
	if (a.sa_flags & SA_SIGINFO)
		a.sa_sigaction(sig, si, uc);
	else
		a.sa_handler(sig);
	watch_set_thread_mask(old, NULL);
}

/* ---- the handlers --------------------------------------------------------- */

/* A thread or process made by clone() or fork() from a thread that was being
 * single-stepped (alpha21064's software backend, profileme's soft backend,
 * any step of ours over the syscall) inherits TF from its parent's
 * registers: its first instruction after the syscall (glibc's clone3:
 * test %rax,%rax) raises a step trap that no client claims, as the thread is
 * none of theirs.  Not the application's either (it never set TF): TF is
 * turned off and the new thread runs on.  Found by ctests/stress: a thread
 * created while an alpha21064 set counted in its creator died of that
 * SIGTRAP (the default action) or reached the application's handler.
 * Recognised by its return value 0 (the child's) and a syscall right
 * before the one instruction that ran (or right before the PC). */
static int inherited_step(siginfo_t *si, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	uintptr_t pc = (uintptr_t)g[REG_RIP];
	uint8_t b[2], insn[15];
	if (si->si_code != TRAP_TRACE || !((uint64_t)g[REG_EFL] & WATCH_EFLAGS_TF) || g[REG_RAX] != 0)
		return 0;
	/* k: the length of the instruction run since the syscall.  The bytes
	 * are read in the PC's page (code is readable where it runs;
	 * /proc/self/mem would be the parent's in a forked child). */
	for (unsigned k = 0; k < sizeof insn && (pc & 4095) >= k + 2; k++) {
		watch_copy(b, (const void *)(pc - k - 2), 2);
		if (!watch_insn_is_syscall(b, 2))
			continue;
		unsigned len = 0;
		if (k > 0) {
			watch_copy(insn, (const void *)(pc - k), k);
			if (watch_x86_length(insn, k, pc - k, &len) != 0 || len != k)
				continue;
		}
		g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] & ~WATCH_EFLAGS_TF);
		atomic_fetch_add(&engine->inherited_steps, 1);
		return 1;
	}
	return 0;
}

/* The clients of sig in priority order (perf_only: those of perf-event
 * traps), then the application. */
static void dispatch(int sig, siginfo_t *si, ucontext_t *uc, int self, int perf_only)
{
	struct watch_signal_event ev = { .sig = sig, .self = self, .si = si, .uc = uc, .handled = 0 };
	unsigned t = atomic_load(&engine->table), n = engine->nclients[t];
	const struct watch_signal_client *c = engine->clients[t];
	for (unsigned i = 0; i < n; i++) {
		if (c[i].sig != sig || (perf_only && !c[i].perf_events))
			continue;
		enum watch_claim r;
		if (c[i].block_all) {
			uint64_t old = 0;
			watch_set_thread_mask(~(watch_sigbit(SIGKILL) | watch_sigbit(SIGSTOP)), &old);
			r = c[i].fn(&ev, c[i].arg);
			watch_set_thread_mask(old, NULL);
		} else {
			r = c[i].fn(&ev, c[i].arg);
		}
		if (r == WATCH_MINE)
			return;
		if (r == WATCH_MINE_PASS_ON)
			ev.handled = 1;
	}
	if (!ev.handled && !(sig == SIGTRAP && inherited_step(si, uc)))
		chain(sig, si, uc);
}

static void step_one_fault(int sig, siginfo_t *si, ucontext_t *uc);

__attribute__((no_stack_protector)) static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	step_one_fault(sig, si, ctx);
	dispatch(sig, si, ctx, watch_sys_gettid(), 0);
}

/* SIGFPE, and SIGILL and SIGBUS after watch_signal_faults_start(). */
__attribute__((no_stack_protector)) static void on_fpe(int sig, siginfo_t *si, void *ctx)
{
	step_one_fault(sig, si, ctx);
	dispatch(sig, si, ctx, 0, 0);
}

__attribute__((no_stack_protector)) static void on_trap(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	greg_t *g = uc->uc_mcontext.gregs;

	if (si->si_code == WATCH_TRAP_PERF) {
		/* A perf event's own signal, never a window's or a step's: only
		 * the perf-event client sees it. */
		dispatch(sig, si, uc, 0, 1);
		return;
	}
	/* The kernel tags a #DB trap TRAP_TRACE from DR6.BS.  Under KVM, DR6 now
	 * and then arrives without BS: the step trap then comes as TRAP_BRKPT
	 * (the code of a #DB with no cause bit, otherwise only icebp).  Seen on
	 * the reference VM under load, about once per 10^7 steps: the PC was the
	 * target of the stepped call, TF set, and taking it for the application's
	 * trap killed the process.  With TF set in the interrupted context it is
	 * a step trap; the code is mended before any client looks at it. */
	if (si->si_code == TRAP_BRKPT && ((uint64_t)g[REG_EFL] & WATCH_EFLAGS_TF)) {
		si->si_code = TRAP_TRACE;
		atomic_fetch_add(&engine->untagged_steps, 1);
	}
	dispatch(sig, si, uc, watch_sys_gettid(), 0);
}

/* ---- the engine's own clients ---------------------------------------------- */

/* watch_step_one(): at most one instruction in flight per thread (a fault
 * handler runs to completion before the instruction is re-run). */
static __thread struct {
	int armed;
	int had_tf;          /* TF was set before us (stepping, a window, the application) */
	uint64_t mask;       /* the signal mask to give back */
	uintptr_t rip;       /* the stepped instruction */
	watch_step_done_fn fn;
	watch_step_fault_fn fault; /* watch_step_one_ex: cancel on a fault there */
	void *arg;
} one_step __attribute__((tls_model("initial-exec")));

static _Atomic uint64_t step_unblocked;

void watch_step_one_unblocked(uint64_t sigbits)
{
	atomic_fetch_or(&step_unblocked, sigbits);
}

int watch_step_one_lost(ucontext_t *uc)
{
	if (!one_step.armed)
		return 0;
	greg_t *g = uc->uc_mcontext.gregs;
	/* Still ahead: the signal came before the instruction ran (it was
	 * pending when the step's handler returned). */
	if ((uintptr_t)g[REG_RIP] == one_step.rip && ((uint64_t)g[REG_EFL] & WATCH_EFLAGS_TF))
		return -1;
	one_step.armed = 0;
	*watch_mask_word(uc) = one_step.mask;
	if (!one_step.had_tf)
		g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] & ~WATCH_EFLAGS_TF);
	return 1;
}

int watch_step_one(ucontext_t *uc, watch_step_done_fn done, void *arg)
{
	return watch_step_one_ex(uc, done, NULL, arg);
}

int watch_step_one_ex(ucontext_t *uc, watch_step_done_fn done, watch_step_fault_fn fault, void *arg)
{
	if (one_step.armed)
		return -EBUSY;
	greg_t *g = uc->uc_mcontext.gregs;
	one_step.had_tf = ((uint64_t)g[REG_EFL] & WATCH_EFLAGS_TF) != 0;
	one_step.mask = *watch_mask_word(uc);
	one_step.rip = (uintptr_t)g[REG_RIP];
	one_step.fn = done;
	one_step.fault = fault;
	one_step.arg = arg;
	/* Armed last: an asynchronous handler may be interrupted here by a
	 * synchronous signal, whose handler must not see half a step. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	one_step.armed = 1;
	/* No application handler may run between here and the trap: it would
	 * run with the client's temporary state (e.g. exceptions masked). */
	*watch_mask_word(uc) = one_step.mask | (engine->async_mask & ~atomic_load(&step_unblocked));
	g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] | WATCH_EFLAGS_TF);
	return 0;
}

static enum watch_claim step_one_client(struct watch_signal_event *ev, void *arg)
{
	(void)arg;
	if (ev->si->si_code != TRAP_TRACE || !one_step.armed)
		return WATCH_NOT_MINE;
	/* The instruction a client asked to step (watch_step_one). */
	greg_t *g = ev->uc->uc_mcontext.gregs;
	int had_tf = one_step.had_tf;
	one_step.armed = 0;
	*watch_mask_word(ev->uc) = one_step.mask;
	/* TF given back before done(), which may arm the next step of a chain
	 * (profileme's soft backend skips a random count of instructions
	 * before the one it tags): that step must see the thread as it was. */
	if (!had_tf)
		g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] & ~WATCH_EFLAGS_TF);
	one_step.fn(one_step.arg, ev->uc);
	if (!had_tf)
		return WATCH_MINE;
	/* TF was also someone else's: the same trap is theirs too, as if it had
	 * not been ours. */
	return WATCH_NOT_MINE;
}

/* The instruction watch_step_one_ex() stepped faulted instead of completing:
 * the kernel delivers the fault with the step's TF and mask in the context.
 * Give both back as they were before the step, so that whoever handles the
 * fault (a client, the application's handler, its siglongjmp) sees the
 * thread as if it had never been stepped, and no step trap follows. */
static void step_one_fault(int sig, siginfo_t *si, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	if (!one_step.armed || !one_step.fault || si->si_code <= 0 || (uintptr_t)g[REG_RIP] != one_step.rip)
		return;
	one_step.armed = 0;
	*watch_mask_word(uc) = one_step.mask;
	if (!one_step.had_tf)
		g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] & ~WATCH_EFLAGS_TF);
	one_step.fault(one_step.arg, sig, si, uc);
}

/* Last before the application: a step trap nobody asked for. */
static enum watch_claim stray_client(struct watch_signal_event *ev, void *arg)
{
	(void)arg;
	if (ev->handled || ev->si->si_code != TRAP_TRACE || !atomic_load(&engine->tf_users) ||
	    engine->app_trap.sa_handler != SIG_DFL || (engine->app_trap.sa_flags & SA_SIGINFO))
		return WATCH_NOT_MINE;
	/* Also TF inherited by a thread or a child created while stepping. */
	if (atomic_load(&engine->tf_users) & TF_STEP)
		atomic_fetch_add(&engine->strays, 1);
	/* A step trap nobody asked for: TF leaked out of a code window (a
	 * pushf inside it, popf outside).  Without an application handler it
	 * would kill the process; clear TF and go on. */
	greg_t *g = ev->uc->uc_mcontext.gregs;
	g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] & ~WATCH_EFLAGS_TF);
	return WATCH_MINE;
}

static enum watch_claim fpe_client(struct watch_signal_event *ev, void *arg)
{
	(void)arg;
	watch_signal_fn fn = engine->fpe_fn;
	return fn && fn(ev->sig, ev->si, ev->uc) ? WATCH_MINE : WATCH_NOT_MINE;
}

/* The perf-event traps, and the TRAP_BRKPT ones without TF: the same loss
 * of DR6's cause bits on a data breakpoint's #DB; the perf-event client
 * (the breakpoint backend) knows whether it was one of its own. */
static enum watch_claim perf_client(struct watch_signal_event *ev, void *arg)
{
	(void)arg;
	if (ev->si->si_code != WATCH_TRAP_PERF && ev->si->si_code != TRAP_BRKPT)
		return WATCH_NOT_MINE;
	watch_signal_fn fn = atomic_load(&engine->perf_fn);
	return fn && fn(ev->sig, ev->si, ev->uc) ? WATCH_MINE : WATCH_NOT_MINE;
}

/* ---- set-up --------------------------------------------------------------- */

static struct sigaction engine_action(void (*fn)(int, siginfo_t *, void *))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigfillset(&sa.sa_mask);
	for (int sig = 1; sig <= 64; sig++)
		if (watch_sigbit(sig) & sync_signals())
			sigdelset(&sa.sa_mask, sig);
	/* A client waiting for a lock in the handler must be parkable. */
	sigdelset(&sa.sa_mask, watch_park_signal());
	sa.sa_sigaction = fn;
	return sa;
}

static int install_handlers(void)
{
	if (engine->installed)
		return 0;
	app_lock();
	struct sigaction sa = engine_action(on_segv);
	int err = __sigaction(SIGSEGV, &sa, &engine->app_segv);
	sa.sa_sigaction = on_trap;
	if (!err)
		err = __sigaction(SIGTRAP, &sa, &engine->app_trap);
	app_unlock();
	if (err)
		return -errno;
	engine->installed = 1;
	return 0;
}

/* Installs one of the engine's stacks for the calling thread if it has none;
 * 1 if it did (*out: the stack), 0 if not. */
static int install_altstack(stack_t *out)
{
	stack_t cur;
	if (sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE))
		return 0;
	int self = watch_sys_gettid(), pid = watch_sys_getpid();
	for (int i = 0; i < ALTSTACK_SLOTS; i++) {
		int owner = atomic_load(&engine->altstack_tid[i]);
		/* Slots of threads that have exited are reused. */
		if (owner && owner != self && watch_sys_tgkill(pid, owner, 0) == 0)
			continue;
		if (!atomic_compare_exchange_strong(&engine->altstack_tid[i], &owner, self))
			continue;
		stack_t ss = { .ss_sp = (void *)(engine->altstacks + (uintptr_t)i * ALTSTACK_BYTES),
		               .ss_size = ALTSTACK_BYTES, .ss_flags = 0 };
		if (sigaltstack(&ss, NULL) != 0)
			return 0;
		*out = ss;
		return 1;
	}
	return 0;
}

void watch_signal_ensure_altstack(void)
{
	stack_t ss;
	install_altstack(&ss);
}

/* From a signal handler: rt_sigreturn restores the alternate stack the
 * thread had when the signal came (uc_stack), which would undo the one just
 * installed (range_stack thread: the stack was set, and gone again when the
 * thread next faulted on its watched stack, SI_KERNEL SIGSEGV).  So the
 * saved context gets it too. */
void watch_signal_ensure_altstack_uc(void *uctx)
{
	stack_t ss;
	if (install_altstack(&ss) && uctx)
		((ucontext_t *)uctx)->uc_stack = ss;
}

int watch_signal_thread_lacking_altstack(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	int pid = watch_sys_getpid(), lacking = 0;
	struct dirent *e;
	while (!lacking && (e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		int tid = atoi(e->d_name), found = 0;
		for (int i = 0; i < ALTSTACK_SLOTS && !found; i++)
			found = atomic_load(&engine->altstack_tid[i]) == tid;
		if (!found && watch_sys_tgkill(pid, tid, 0) == 0 && !watch_park_blocked(tid))
			lacking = tid;
	}
	closedir(d);
	return lacking;
}

static void atfork_child(void)
{
	close(engine->mem_fd);
	engine->mem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	engine->pid = watch_sys_getpid();
	memset((void *)engine->altstack_tid, 0, sizeof engine->altstack_tid);
	/* The forking thread, the child's only one, keeps the signal stack it
	 * had: its slot stays taken, by its new tid.  Freed, the slot went to
	 * the child's next thread, two threads' handlers shared one stack, and
	 * a code window's park was never released (the code-threads test hung
	 * every time in a child forked after the engine had run). */
	stack_t cur;
	if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE)) {
		uintptr_t sp = (uintptr_t)cur.ss_sp, base = engine->altstacks;
		if (sp >= base && sp < base + (uintptr_t)ALTSTACK_SLOTS * ALTSTACK_BYTES)
			atomic_store(&engine->altstack_tid[(sp - base) / ALTSTACK_BYTES], watch_sys_gettid());
	}
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_error;

static void engine_init(void)
{
	engine->mem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (engine->mem_fd < 0) {
		init_error = -errno;
		return;
	}
	void *stacks = mmap(NULL, ALTSTACK_SLOTS * ALTSTACK_BYTES, PROT_READ | PROT_WRITE,
	                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (stacks == MAP_FAILED) {
		init_error = -errno;
		return;
	}
	engine->altstacks = (uintptr_t)stacks;
	engine->pid = watch_sys_getpid();
	engine->async_mask = ~sync_signals();
	static const struct watch_signal_client own[] = {
		{ .name = "step one", .sig = SIGTRAP, .priority = WATCH_PRIO_STEP_ONE, .fn = step_one_client },
		{ .name = "stray TF", .sig = SIGTRAP, .priority = WATCH_PRIO_STRAY, .fn = stray_client },
	};
	for (unsigned i = 0; i < sizeof own / sizeof own[0]; i++)
		watch_signal_register(&own[i], NULL, 0);
	pthread_atfork(NULL, NULL, atfork_child);
	engine->ready = 1;
}

int watch_signal_init(void)
{
	pthread_once(&init_once, engine_init);
	return init_error;
}

static int take_dispositions(char *why, size_t len);

/* Set by the mechanism probes (watch_probe.c, watch_breakpoint.c): their
 * starts are not a session's, and leave libc's sigaction() to the program. */
static __thread int engine_probing;

void watch_signal_probing(int on)
{
	engine_probing = on;
}

int watch_signal_start(const char *who, char *why, size_t len)
{
	int err = watch_signal_init();
	if (!err)
		err = install_handlers();
	if (err) {
		set_why(why, len, "%s: cannot start (%s)", who, strerror(-err));
		return err;
	}
	return watch_signal_session(who, why, len);
}

int watch_signal_session(const char *who, char *why, size_t len)
{
	if (engine_probing)
		return 0;
	char got_why[256] = "";
	int err = take_dispositions(got_why, sizeof got_why);
	if (err)
		set_why(why, len, "%s: cannot start (%s)", who, got_why);
	return err;
}

int watch_signal_mem_fd(void)
{
	return engine->mem_fd;
}

int watch_signal_pid(void)
{
	return engine->pid;
}

/* Valid before the engine's init too: watch_hold_async_signals needs it for
 * sessions (instrument) that never start the engine. */
uint64_t watch_signal_async_mask(void)
{
	return ~sync_signals();
}

/* The masks in thread-local storage rather than on the stack: the caller may
 * be running on a watched page of its own stack (a data range in the frame
 * of main), and the kernel cannot read or write a PROT_NONE page:
 * rt_sigprocmask failed with EFAULT, leaving the asynchronous signals
 * unblocked inside the pages lock and the old mask unread, so the unlock then
 * cleared the application's mask.  fits() keeps the engine's own TLS block
 * unwatched.  Thread context only: no handler calls it, so none can
 * overwrite the buffers halfway. */
static __thread uint64_t thread_masks[2] __attribute__((tls_model("initial-exec")));

void watch_thread_mask(int how, uint64_t set, uint64_t *old)
{
	thread_masks[0] = set;
	watch_sys6(SYS_rt_sigprocmask, how, (long)&thread_masks[0], old ? (long)&thread_masks[1] : 0, 8, 0, 0);
	if (old)
		*old = thread_masks[1];
}

int watch_signal_app_trap_default(void)
{
	return engine->app_trap.sa_handler == SIG_DFL && !(engine->app_trap.sa_flags & SA_SIGINFO);
}

void watch_signal_note_tf_user(int step)
{
	atomic_fetch_or(&engine->tf_users, step ? TF_STEP : TF_CODE);
}

uint64_t watch_signal_inherited_steps(void)
{
	return engine ? atomic_load(&engine->inherited_steps) : 0;
}

uint64_t watch_signal_untagged_steps(void)
{
	return atomic_load(&engine->untagged_steps);
}

uint64_t watch_signal_strays(void)
{
	return atomic_load(&engine->strays);
}

int watch_signal_state_range(unsigned i, uintptr_t *lo, uintptr_t *hi)
{
	if (i == 0) {
		*lo = (uintptr_t)&engine_mem;
		*hi = (uintptr_t)&engine_mem + sizeof engine_mem;
		return 1;
	}
	if (i == 1) {
		*lo = engine->altstacks;
		*hi = engine->altstacks + ALTSTACK_SLOTS * ALTSTACK_BYTES;
		return 1;
	}
	unsigned t = atomic_load(&engine->table), k = i - 2;
	if (k >= engine->nclients[t])
		return 0;
	*lo = engine->clients[t][k].state_lo;
	*hi = engine->clients[t][k].state_hi;
	return 1;
}

/* ---- claims ------------------------------------------------------------------ */

/* Thread context only; the handlers never take it. */
static pthread_mutex_t claim_lock = PTHREAD_MUTEX_INITIALIZER;

int watch_signal_claim(int sig, watch_signal_fn fn, char *why, size_t len)
{
	if (sig != SIGFPE) {
		set_why(why, len, "signal engine: only SIGFPE can be claimed, not %d", sig);
		return -EINVAL;
	}
	int err = watch_signal_start("signal engine", why, len); /* the SIGTRAP handler the steps need */
	if (err)
		return err;
	pthread_mutex_lock(&claim_lock);
	if (atomic_load(&engine->fpe_claimed)) {
		int same = engine->fpe_fn == fn;
		pthread_mutex_unlock(&claim_lock);
		if (same)
			return 0;
		set_why(why, len, "signal engine: SIGFPE is already claimed by another client");
		return -EBUSY;
	}
	static const struct watch_signal_client fpe = {
		.name = "SIGFPE claim", .sig = SIGFPE, .priority = WATCH_PRIO_PERF, .fn = fpe_client
	};
	engine->fpe_fn = fn;
	err = watch_signal_register(&fpe, why, len);
	if (err) {
		pthread_mutex_unlock(&claim_lock);
		return err;
	}
	app_lock();
	struct sigaction sa = engine_action(on_fpe);
	/* Already the engine's (watch_signal_faults_start): app_fpe holds the
	 * application's, which a second install would overwrite with ours. */
	if (!(atomic_load(&engine->faults_installed) & watch_sigbit(SIGFPE)))
		err = __sigaction(SIGFPE, &sa, &engine->app_fpe) != 0 ? -errno : 0;
	if (!err)
		atomic_store(&engine->fpe_claimed, 1);
	app_unlock();
	pthread_mutex_unlock(&claim_lock);
	if (err)
		set_why(why, len, "signal engine: sigaction(SIGFPE): %s", strerror(-err));
	return err;
}

int watch_signal_faults_start(char *why, size_t len)
{
	int err = watch_signal_start("signal engine", why, len);
	if (err)
		return err;
	static const int sigs[] = { SIGFPE, SIGILL, SIGBUS };
	pthread_mutex_lock(&claim_lock);
	app_lock();
	struct sigaction sa = engine_action(on_fpe);
	for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0] && !err; i++) {
		int sig = sigs[i];
		if ((atomic_load(&engine->faults_installed) & watch_sigbit(sig)) ||
		    (sig == SIGFPE && atomic_load(&engine->fpe_claimed)))
			continue;
		if (__sigaction(sig, &sa, app_action(sig)) != 0)
			err = -errno;
		else
			atomic_fetch_or(&engine->faults_installed, watch_sigbit(sig));
	}
	app_unlock();
	pthread_mutex_unlock(&claim_lock);
	if (err)
		set_why(why, len, "signal engine: sigaction(SIGFPE/SIGILL/SIGBUS): %s", strerror(-err));
	return err;
}

int watch_trap_perf_claim(watch_signal_fn fn, char *why, size_t len)
{
	int err = watch_signal_start("signal engine", why, len);
	if (err)
		return err;
	pthread_mutex_lock(&claim_lock);
	watch_signal_fn cur = atomic_load(&engine->perf_fn);
	if (!cur) {
		static const struct watch_signal_client perf = {
			.name = "perf events", .sig = SIGTRAP, .priority = WATCH_PRIO_PERF, .fn = perf_client,
			.perf_events = 1
		};
		atomic_store(&engine->perf_fn, fn);
		err = watch_signal_register(&perf, why, len);
		if (err)
			atomic_store(&engine->perf_fn, NULL);
	} else if (cur != fn) {
		set_why(why, len, "signal engine: perf-event SIGTRAPs are already claimed by another client");
		err = -EBUSY;
	}
	pthread_mutex_unlock(&claim_lock);
	if (err)
		return err;
	/* The hit handler runs on the interrupted stack otherwise, and the
	 * watched word may be just below it. */
	watch_signal_ensure_altstack();
	return 0;
}

/* ---- signal disposition interposition ------------------------------------- */

/* sigaction() and signal() for SIGSEGV and SIGTRAP (and SIGFPE once a client
 * claimed it: watch_signal_claim), once our handlers are in:
 * the application's action is recorded (and reported back as oldact) and
 * called by chain() for the faults and traps that are not ours.  Not
 * interposed: sigset(), sysv_signal(), bsd_signal(), and raw rt_sigaction. */
static int engine_sigaction(int sig, const struct sigaction *act, struct sigaction *oldact)
{
	if (((sig == SIGSEGV || sig == SIGTRAP) && engine->installed) ||
	    (sig == SIGFPE && atomic_load(&engine->fpe_claimed)) ||
	    (sig > 0 && sig < 64 && (atomic_load(&engine->faults_installed) & watch_sigbit(sig)))) {
		app_lock();
		if (oldact)
			*oldact = *app_action(sig);
		if (act)
			*app_action(sig) = *act;
		app_unlock();
		return 0;
	}
	return __sigaction(sig, act, oldact);
}

static sighandler_t engine_signal(int sig, sighandler_t handler)
{
	struct sigaction act, old;
	if (handler == SIG_ERR || sig < 1 || sig >= NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	/* BSD semantics, as glibc's signal(). */
	memset(&act, 0, sizeof act);
	act.sa_handler = handler;
	sigemptyset(&act.sa_mask);
	sigaddset(&act.sa_mask, sig);
	act.sa_flags = SA_RESTART;
	if (engine_sigaction(sig, &act, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}

static const struct watch_got_hook signal_hooks[] = {
	{ "sigaction", (void *)engine_sigaction },
	{ "signal", (void *)engine_signal },
};

/* The engine's handler for sig back in place if the application replaced it
 * through libc's own sigaction() (before the interposition, or from code it
 * does not reach: a dlopen'ed object, a saved function pointer); what it
 * installed becomes its recorded action.  Under app_lock. */
static int reclaim(int sig, void (*fn)(int, siginfo_t *, void *))
{
	struct sigaction cur;

	if (__sigaction(sig, NULL, &cur) != 0)
		return -errno;
	if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == fn)
		return 0;
	struct sigaction sa = engine_action(fn);
	*app_action(sig) = cur;
	return __sigaction(sig, &sa, NULL) != 0 ? -errno : 0;
}

/* A session's start: sigaction()/signal() interposed, every signal the
 * engine owns its own again. */
static int take_dispositions(char *why, size_t len)
{
	int n = watch_got_hook_add(signal_hooks, sizeof signal_hooks / sizeof signal_hooks[0], why, len);
	if (n < 0)
		return n;
	int err = 0;
	unsigned faults = atomic_load(&engine->faults_installed);
	app_lock();
	if (engine->installed) {
		err = reclaim(SIGSEGV, on_segv);
		if (!err)
			err = reclaim(SIGTRAP, on_trap);
	}
	if (!err && (atomic_load(&engine->fpe_claimed) || (faults & watch_sigbit(SIGFPE))))
		err = reclaim(SIGFPE, on_fpe);
	if (!err && (faults & watch_sigbit(SIGILL)))
		err = reclaim(SIGILL, on_fpe);
	if (!err && (faults & watch_sigbit(SIGBUS)))
		err = reclaim(SIGBUS, on_fpe);
	app_unlock();
	if (err)
		set_why(why, len, "signal engine: taking back its handlers: %s", strerror(-err));
	return err;
}
