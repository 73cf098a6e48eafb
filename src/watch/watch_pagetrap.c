/*
 * pagetrap: count a thread's loads and stores to address ranges by protecting
 * the pages that hold them.
 *
 * A protected page faults on every access.  The SIGSEGV handler decodes the
 * faulting instruction (watch_x86.c: effective addresses from the registers in
 * the ucontext, direction from the page-fault error code, read-modify-write and
 * rep-string iterations from the decoder), adds what overlaps the faulting
 * thread's running sessions to their counts, opens the pages the instruction
 * touches and lets exactly that one instruction run: an int3 written (through
 * /proc/self/mem, so read-only text needs no mprotect) after it, or the trap
 * flag for control transfers.  The SIGTRAP handler puts the byte back, closes
 * the pages again and ends the window.
 *
 * Protection is process-wide, so a window is process-wide too: one window at a
 * time (the window lock), and while it is open every other thread is parked
 * (watch_park.c) so that none of their accesses to an open page slips by.  The
 * stepped instruction runs with asynchronous signals blocked (through the
 * ucontext's saved mask), so no application handler runs inside a window.
 *
 * The handlers touch only: their stack (sigaltstack, mmap'd here), the static
 * page-aligned state below, the decoder's and the parker's likewise, and raw
 * system calls.  fits() refuses requests that overlap any of that.
 *
 * System calls never fault into user handlers; a read(2) into a protected page
 * fails with EFAULT.  The libc entry points that take user buffers are
 * interposed (list at "System calls") and redirect a call whose buffer overlaps
 * protected pages through a bounce buffer, copied with /proc/self/mem, which
 * the kernel lets past our PROT_NONE: no page is opened, so nothing is counted,
 * as on Itanium, which counted user-level accesses only.
 *
 * sigaction() and signal() are interposed for SIGSEGV and SIGTRAP so that our
 * handlers stay first; faults that are not ours go to the application's.
 *
 * Code ranges ("Code ranges" below): the pages holding watched instructions
 * lose PROT_EXEC (they stay readable, so data reads of them, and system calls
 * reading from them, are unaffected).  Fetching from them faults with the
 * instruction-fetch bit in the error code and si_addr == RIP; the handler then
 * opens the code pages, sets the trap flag and keeps the window lock while the
 * thread single-steps inside them.  Each step trap counts the instruction that
 * just completed; when RIP leaves the code pages (a call out, the return) TF is
 * cleared and the pages are closed again, so code outside the range runs at
 * full speed.  Other threads are parked for the window only when another
 * thread has a code session of its own (otherwise nothing they run through an
 * open page could be counted anyway).
 *
 * What is watched is what is mapped at start: pages of a range that no
 * mapping holds then are skipped (a coarse Itanium cover is a range of
 * addresses and often runs past the end of .bss or the heap), and memory
 * mapped there later is not protected, hence not counted, until the next
 * start reads /proc/self/maps again.  A request none of whose pages is mapped
 * is refused: that is a wrong address, not a cover.
 */
#undef _FORTIFY_SOURCE
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common/heritage_error.h"
#include "common/heritage_probe.h"
#include "watch.h"
#include "watch_pagetrap.h"
#include "watch_park.h"
#include "watch_step.h"
#include "watch_sys.h"
#include "watch_x86.h"

#include <asm/prctl.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define PAGE ((uintptr_t)4096)
#define PAGE_DOWN(a) ((uintptr_t)(a) & ~(PAGE - 1))
#define PAGE_UP(a) (((uintptr_t)(a) + PAGE - 1) & ~(PAGE - 1))

#define PT_MAX_SESSIONS 64
#define PT_MAX_RUNS 256
#define PT_MAX_OPEN 64
#define PT_RETRY_SLOTS 64
#define PT_ALTSTACK_SLOTS 128
#define PT_ALTSTACK_BYTES ((size_t)64 * 1024)
#define PT_MAPS_BUF 16384

#define EFLAGS_TF 0x100ull
#define PF_WRITE 0x2ull
#define PF_INSTR 0x10ull /* the fault was an instruction fetch (needs NX, always on x86-64) */

/* A session's share of the state: what it watches, what it has counted.
 * Counts are written only by the handler running on the owning thread. */
struct pt_slot {
	int used;
	int tid;
	unsigned nint;
	struct watch_interval iv[WATCH_MAX_INTERVALS]; /* sorted, merged */
	unsigned ncode;                                /* code pairs, as requested */
	struct watch_interval code[WATCH_CODE_PAIRS];
	/* Itanium's IBR+DBR combination: data accesses count only when made by
	 * an instruction in these intervals (the fault's RIP tells). */
	unsigned nby_code;
	struct watch_interval by_code[WATCH_CODE_PAIRS];
	struct watch_counts counts;
};

/* A run of pages we protect, and the protection to give back. */
struct pt_run {
	uintptr_t lo, hi;
	int prot;
};

/* The one open window: the instruction being stepped with pages open. */
struct pt_window {
	int armed;
	int use_tf;
	int app_had_tf;
	int parked;           /* this window parked the other threads */
	int counted_at_fault; /* an access not found by the decoder was counted */
	uintptr_t patch_addr;
	uint8_t patch_orig;
	uint64_t app_mask; /* the interrupted code's signal mask (first word) */
	unsigned nopen;
	struct pt_run open[PT_MAX_OPEN];
	struct watch_x86_insn insn;
};

/* The one code window: a thread single-stepping through open code pages.  It
 * holds the window lock from the exec fault until RIP leaves the pages. */
struct pt_cstep {
	int active;
	int tid;
	int parked;      /* this window parked the other threads */
	int app_had_tf;  /* the application was single-stepping itself */
	int has_pending;
	uintptr_t pending; /* the instruction now executing; counted at the next trap */
	uint64_t app_mask;
};

struct pt_state {
	/* The window lock: tid of the holder, 0 when free; futex word. */
	_Atomic int lock_owner;
	int lock_depth;
	_Atomic int lock_waiters;

	int ready;
	int installed;
	int mem_fd; /* /proc/self/mem: int3 patches and bounce copies */
	int pid;

	_Atomic uint32_t runs_seq; /* odd while runs[] changes (readers retry) */
	_Atomic unsigned nruns;
	struct pt_run runs[PT_MAX_RUNS];
	/* Code pages we made non-executable (prot: the protection to give back);
	 * same seqlock as runs[]. */
	_Atomic unsigned ncruns;
	struct pt_run cruns[PT_MAX_RUNS];
	struct pt_slot slots[PT_MAX_SESSIONS];
	struct pt_window win;
	struct pt_cstep cstep;
	_Atomic int code_used; /* a code session was ever started */

	/* What the application installed for SIGSEGV / SIGTRAP. */
	_Atomic int app_lock;
	struct sigaction app_segv, app_trap;
	/* A client's synchronous signal (watch_signal_claim: SIGFPE) and what
	 * the application installed for it. */
	_Atomic int fpe_claimed;
	watch_signal_fn fpe_fn;
	struct sigaction app_fpe;
	/* The client of SIGTRAPs from perf events (watch_trap_perf_claim). */
	_Atomic(watch_signal_fn) perf_fn;

	/* A fault on a page we unprotected after the fault happened looks like the
	 * application's own: it is retried once before it is passed on. */
	_Atomic uint64_t unprotect_epoch;
	struct {
		int tid;
		uintptr_t rip, addr;
	} retry[PT_RETRY_SLOTS];

	uintptr_t altstacks;
	_Atomic int altstack_tid[PT_ALTSTACK_SLOTS];

	uint64_t async_mask; /* every signal except the synchronous ones */
	uint64_t thread_saved_mask;

	_Atomic uint64_t faults, int3_steps, tf_steps, undecoded, bounced;
	_Atomic uint64_t code_entries, code_steps;

	/* Whole-thread stepping (watch_step.h): one slot per stepping thread. */
	struct pt_tstep {
		_Atomic int tid;    /* owner; 0 = free */
		_Atomic int active; /* 0: stopping, the next trap clears TF and frees it */
		int has_pending;
		uintptr_t pending;  /* the instruction now executing */
		watch_step_fn fn;
		void *arg;
	} tsteps[PT_MAX_SESSIONS];
	_Atomic int tstep_used;
	_Atomic uint64_t tstep_steps, tstep_strays;
	_Atomic uint64_t untagged_steps; /* step traps that came without DR6.BS */

	char maps[PT_MAPS_BUF];
};

#define PT_STATE_BYTES ((sizeof(struct pt_state) + PAGE - 1) / PAGE * PAGE)
static union {
	struct pt_state s;
	unsigned char pad[PT_STATE_BYTES];
} pt_mem __attribute__((aligned(4096)));

#define S (pt_mem.s)

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

static uint64_t sigbit(int sig)
{
	return (uint64_t)1 << (sig - 1);
}

static uint64_t sync_signals(void)
{
	return sigbit(SIGSEGV) | sigbit(SIGBUS) | sigbit(SIGILL) | sigbit(SIGFPE) | sigbit(SIGTRAP) |
	       sigbit(SIGKILL) | sigbit(SIGSTOP);
}

static uint64_t *mask_word(ucontext_t *uc)
{
	return (uint64_t *)(void *)&uc->uc_sigmask;
}

static long set_thread_mask(uint64_t set, uint64_t *old)
{
	return watch_sys6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&set, (long)old, 8, 0, 0);
}

static long change_thread_mask(int how, uint64_t set, uint64_t *old)
{
	return watch_sys6(SYS_rt_sigprocmask, how, (long)&set, (long)old, 8, 0, 0);
}

/* ---- the window lock ------------------------------------------------------ */

static long futex_word(_Atomic int *word, int op, int val, const struct timespec *ts)
{
	return watch_sys6(SYS_futex, (long)word, op, val, (long)ts, 0, 0);
}

/* Recursive for its holder: a holder that faults (its caller's session struct
 * on a watched page, say) opens a nested window instead of deadlocking.
 * Waiters sleep on a futex and can be parked while they wait. */
static void lock_acquire(int self)
{
	if (atomic_load(&S.lock_owner) == self) {
		S.lock_depth++;
		return;
	}
	for (unsigned spins = 0;; spins++) {
		int expected = 0;
		if (atomic_compare_exchange_strong(&S.lock_owner, &expected, self))
			break;
		if (spins < 64) {
			__builtin_ia32_pause();
			continue;
		}
		atomic_fetch_add(&S.lock_waiters, 1);
		struct timespec ts = { 0, 1000 * 1000 };
		futex_word(&S.lock_owner, FUTEX_WAIT_PRIVATE, expected, &ts);
		atomic_fetch_sub(&S.lock_waiters, 1);
	}
	S.lock_depth = 1;
}

static void lock_release(void)
{
	if (--S.lock_depth > 0)
		return;
	atomic_store(&S.lock_owner, 0);
	if (atomic_load(&S.lock_waiters))
		futex_word(&S.lock_owner, FUTEX_WAKE_PRIVATE, 1, NULL);
}

/* From ordinary code: asynchronous signals stay blocked while the lock is held,
 * so no application handler can run (and fault) inside it.  The park signal is
 * left open so that a holder of the lock elsewhere can park us while we wait. */
static uint64_t thread_lock(void)
{
	uint64_t old = 0;
	change_thread_mask(SIG_BLOCK, S.async_mask & ~sigbit(watch_park_signal()), &old);
	change_thread_mask(SIG_UNBLOCK, sigbit(watch_park_signal()), NULL);
	lock_acquire(watch_sys_gettid());
	return old;
}

static void thread_unlock(uint64_t old_mask)
{
	lock_release();
	set_thread_mask(old_mask, NULL);
}

/* ---- protected runs ------------------------------------------------------- */

/* The run list of data pages (code = 0) or of code pages (code = 1), and the
 * protection a closed run of it has: data pages fault on every access, code
 * pages only on instruction fetches (they stay readable). */
static struct pt_run *runs_of(int code, _Atomic unsigned **n)
{
	*n = code ? &S.ncruns : &S.nruns;
	return code ? S.cruns : S.runs;
}

static const struct pt_run *run_in(int code, uintptr_t addr)
{
	_Atomic unsigned *count;
	const struct pt_run *runs = runs_of(code, &count);
	unsigned n = atomic_load(count);
	for (unsigned i = 0; i < n; i++)
		if (addr >= runs[i].lo && addr < runs[i].hi)
			return &runs[i];
	return NULL;
}

static const struct pt_run *run_at(uintptr_t addr)
{
	return run_in(0, addr);
}

static const struct pt_run *code_run_at(uintptr_t addr)
{
	return run_in(1, addr);
}

/* Without the lock (seqlock read): is addr on a page we protect (data) or
 * made non-executable (code)? */
static int protected_in(int code, uintptr_t addr)
{
	for (;;) {
		uint32_t seq = atomic_load(&S.runs_seq);
		if (seq & 1)
			continue;
		int hit = run_in(code, addr) != NULL;
		if (atomic_load(&S.runs_seq) == seq)
			return hit;
	}
}

/* Copy of the runs of one list overlapping [lo, hi), consistent with one
 * another (seqlock read). */
static unsigned runs_overlapping_in(int code, uintptr_t lo, uintptr_t hi, struct pt_run *out, unsigned max)
{
	_Atomic unsigned *count;
	const struct pt_run *runs = runs_of(code, &count);
	for (;;) {
		uint32_t seq = atomic_load(&S.runs_seq);
		if (seq & 1)
			continue;
		unsigned n = atomic_load(count), k = 0;
		for (unsigned i = 0; i < n && k < max && i < PT_MAX_RUNS; i++)
			if (runs[i].lo < hi && runs[i].hi > lo)
				out[k++] = runs[i];
		if (atomic_load(&S.runs_seq) == seq)
			return k;
	}
}

static unsigned runs_overlapping(uintptr_t lo, uintptr_t hi, struct pt_run *out, unsigned max)
{
	return runs_overlapping_in(0, lo, hi, out, max);
}

/* Without the lock: does [lo, hi) touch any of our code pages? */
static int code_runs_overlap(uintptr_t lo, uintptr_t hi)
{
	struct pt_run first;
	return runs_overlapping_in(1, lo, hi, &first, 1) > 0;
}

/* ---- counting ------------------------------------------------------------- */

/* How many of the count elements [base + i*size, base + (i+1)*size) overlap
 * the union of the sorted, merged intervals iv[]: each element once, however
 * many intervals it touches. */
static uint64_t overlap_count(const struct watch_interval *iv, unsigned nint, uintptr_t base, uint32_t size,
                              uint64_t count)
{
	/* User addresses stay far below 2^63, so none of this wraps. */
	uint64_t total = 0, cur_lo = 0, cur_hi = 0;
	for (unsigned k = 0; k < nint; k++) {
		if (iv[k].end <= base)
			continue;
		uint64_t imax = (iv[k].end - base + size - 1) / size;
		if (imax > count)
			imax = count;
		uint64_t imin = 0;
		if (iv[k].start >= base + size)
			imin = (iv[k].start - base - size) / size + 1;
		if (imin >= imax)
			continue;
		if (cur_hi > cur_lo && imin <= cur_hi) {
			if (imax > cur_hi)
				cur_hi = imax;
		} else {
			total += cur_hi - cur_lo;
			cur_lo = imin;
			cur_hi = imax;
		}
	}
	return total + (cur_hi - cur_lo);
}

static int misaligned(uintptr_t base, uint32_t size)
{
	switch (size) {
	case 2: case 4: case 8: case 16: case 32: case 64:
		return (base & (size - 1)) != 0;
	default:
		return 0;
	}
}

static int made_by(const struct pt_slot *sl, uintptr_t rip)
{
	for (unsigned k = 0; k < sl->nby_code; k++)
		if (rip >= sl->by_code[k].start && rip < sl->by_code[k].end)
			return 1;
	return sl->nby_code == 0;
}

static void count_access(int self, uintptr_t rip, uintptr_t base, uint32_t size, uint64_t count, int load,
                         int store)
{
	for (unsigned i = 0; i < PT_MAX_SESSIONS; i++) {
		struct pt_slot *sl = &S.slots[i];
		if (!sl->used || sl->tid != self || !made_by(sl, rip))
			continue;
		uint64_t n = overlap_count(sl->iv, sl->nint, base, size, count);
		if (!n)
			continue;
		int mis = misaligned(base, size);
		if (load) {
			sl->counts.loads += n;
			if (mis)
				sl->counts.misaligned_loads += n;
		}
		if (store) {
			sl->counts.stores += n;
			if (mis)
				sl->counts.misaligned_stores += n;
		}
	}
}

/* One executed instruction at addr, for the sessions of this thread: once in
 * every pair that holds it, once in insns however many pairs do. */
static void count_insn(int self, uintptr_t addr)
{
	for (unsigned i = 0; i < PT_MAX_SESSIONS; i++) {
		struct pt_slot *sl = &S.slots[i];
		if (!sl->used || sl->tid != self || !sl->ncode)
			continue;
		int hit = 0;
		for (unsigned k = 0; k < sl->ncode; k++) {
			if (addr >= sl->code[k].start && addr < sl->code[k].end) {
				sl->counts.insns_pair[k]++;
				hit = 1;
			}
		}
		sl->counts.insns += (uint64_t)hit;
	}
}

/* ---- the window ----------------------------------------------------------- */

static int already_open(uintptr_t lo, uintptr_t hi)
{
	for (unsigned i = 0; i < S.win.nopen; i++)
		if (S.win.open[i].lo <= lo && S.win.open[i].hi >= hi)
			return 1;
	return 0;
}

/* Give the protected pages among [lo, hi) their own protection back for the
 * duration of the window. */
static void open_bytes(uintptr_t lo, uintptr_t hi)
{
	uintptr_t plo = PAGE_DOWN(lo), phi = PAGE_UP(hi);
	unsigned n = atomic_load(&S.nruns);
	for (unsigned i = 0; i < n; i++) {
		const struct pt_run *r = &S.runs[i];
		if (r->hi <= plo || r->lo >= phi)
			continue;
		uintptr_t a = r->lo > plo ? r->lo : plo, b = r->hi < phi ? r->hi : phi;
		if (already_open(a, b) || S.win.nopen >= PT_MAX_OPEN)
			continue;
		if (watch_sys_mprotect(a, b - a, r->prot) != 0)
			continue;
		S.win.open[S.win.nopen++] = (struct pt_run){ a, b, r->prot };
	}
}

static void close_pages(void)
{
	for (unsigned i = 0; i < S.win.nopen; i++)
		watch_sys_mprotect(S.win.open[i].lo, S.win.open[i].hi - S.win.open[i].lo, PROT_NONE);
	S.win.nopen = 0;
}

static int insn_covers(const struct watch_x86_insn *in, uintptr_t addr)
{
	for (unsigned i = 0; i < in->naccess; i++) {
		const struct watch_x86_access *a = &in->acc[i];
		if (addr >= a->base && addr - a->base < a->count * a->size)
			return 1;
	}
	return 0;
}

/* Ends the window; uc is the context that will resume (the trap's, or a
 * nested fault's when the instruction is abandoned). */
static void end_window(ucontext_t *uc)
{
	close_pages();
	*mask_word(uc) = S.win.app_mask;
	S.win.armed = 0;
	if (S.win.parked) {
		S.win.parked = 0;
		watch_park_release();
	}
	lock_release();
}

/* With the lock held: count the faulting instruction's accesses, open the
 * pages it touches and arm the one-shot trap after it. */
static void open_window(int self, ucontext_t *uc, uintptr_t fault_addr)
{
	greg_t *g = uc->uc_mcontext.gregs;
	int is_write = ((uint64_t)g[REG_ERR] & PF_WRITE) != 0;
	struct pt_window *w = &S.win;

	/* A data access from an instruction this thread is stepping through
	 * watched code: TF is already on and must stay on (the same trap ends both
	 * windows), and a park the code window made must not be nested, since a
	 * nested park's release would wake the threads it parked. */
	int stepping = S.cstep.active && S.cstep.tid == self;

	/* Also when the lock was already ours (a fault inside start/stop): no
	 * thread-context holder of the lock parks anybody. */
	w->parked = stepping && S.cstep.parked ? 0 : watch_park_others(self) > 0;
	atomic_fetch_add(&S.faults, 1);
	w->counted_at_fault = 0;
	w->nopen = 0;

	int decoded = watch_x86_decode(uc, is_write, S.mem_fd, &w->insn) == 0;
	if (!decoded) {
		atomic_fetch_add(&S.undecoded, 1);
		w->insn.naccess = 0;
		w->insn.sequential = 0;
	}
	for (unsigned i = 0; i < w->insn.naccess; i++) {
		const struct watch_x86_access *a = &w->insn.acc[i];
		count_access(self, (uintptr_t)g[REG_RIP], a->base, a->size, a->count, a->load, a->store);
		open_bytes(a->base, a->base + a->count * a->size);
	}
	if (!insn_covers(&w->insn, fault_addr)) {
		/* A gather, an undecodable instruction: at least the faulting byte. */
		count_access(self, (uintptr_t)g[REG_RIP], fault_addr, 1, 1, !is_write, is_write);
		w->counted_at_fault = 1;
	}
	open_bytes(fault_addr, fault_addr + 1);

	w->use_tf = 1;
	if (decoded && w->insn.sequential && !stepping) {
		uintptr_t next = (uintptr_t)g[REG_RIP] + w->insn.len;
		uint8_t orig, cc = 0xCC;
		if (watch_sys_pread(S.mem_fd, &orig, 1, next) == 1 && watch_sys_pwrite(S.mem_fd, &cc, 1, next) == 1) {
			w->use_tf = 0;
			w->patch_addr = next;
			w->patch_orig = orig;
		}
	}
	if (w->use_tf) {
		w->app_had_tf = stepping || ((uint64_t)g[REG_EFL] & EFLAGS_TF) != 0;
		g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] | EFLAGS_TF);
	}
	w->app_mask = *mask_word(uc);
	*mask_word(uc) = w->app_mask | S.async_mask;
	w->armed = 1;
}

/* Abandons an armed window whose instruction did not complete. */
static void abort_window(ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	if (S.win.use_tf) {
		if (!S.win.app_had_tf)
			g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] & ~EFLAGS_TF);
	} else {
		watch_sys_pwrite(S.mem_fd, &S.win.patch_orig, 1, S.win.patch_addr);
	}
	end_window(uc);
}

/* ---- code ranges ---------------------------------------------------------- *
 *
 * All with the window lock held by the stepping thread.  Every code run is
 * opened for a window, so "inside" simply means "on a page of some code run". */

static void open_code_pages(void)
{
	unsigned n = atomic_load(&S.ncruns);
	for (unsigned i = 0; i < n; i++)
		watch_sys_mprotect(S.cruns[i].lo, S.cruns[i].hi - S.cruns[i].lo, S.cruns[i].prot);
}

static void close_code_pages(void)
{
	unsigned n = atomic_load(&S.ncruns);
	for (unsigned i = 0; i < n; i++)
		watch_sys_mprotect(S.cruns[i].lo, S.cruns[i].hi - S.cruns[i].lo, S.cruns[i].prot & ~PROT_EXEC);
}

/* Parking is needed only for another thread's code session: whatever a thread
 * without one runs through an open page would not be counted anyway, and data
 * pages are not opened by a code window. */
static int others_count_code(int self)
{
	for (unsigned i = 0; i < PT_MAX_SESSIONS; i++)
		if (S.slots[i].used && S.slots[i].ncode && S.slots[i].tid != self)
			return 1;
	return 0;
}

/* Instruction bytes at addr: straight from memory when they lie on a code
 * page (readable: we only took PROT_EXEC away), else through /proc/self/mem,
 * which does not fault. */
static int peek_code(uintptr_t addr, uint8_t *buf, unsigned n)
{
	const struct pt_run *r = code_run_at(addr);
	if (r && addr + n <= r->hi) {
		watch_copy(buf, (const void *)addr, n);
		return 0;
	}
	return watch_sys_pread(S.mem_fd, buf, n, addr) == (long)n ? 0 : -1;
}

static int is_syscall_at(uintptr_t addr)
{
	uint8_t b[2];
	return peek_code(addr, b, 2) == 0 && b[0] == 0x0f && b[1] == 0x05;
}

/* A rep/repe/repne string instruction: with TF set it traps after every
 * iteration with RIP unchanged, and must count once. */
static int is_rep_string_at(uintptr_t addr)
{
	uint8_t b[15];
	if (peek_code(addr, b, sizeof b) != 0)
		return 0;
	int rep = 0;
	unsigned i = 0;
	for (; i < sizeof b; i++) {
		uint8_t p = b[i];
		if (p == 0xf2 || p == 0xf3)
			rep = 1;
		else if (!(p == 0x66 || p == 0x67 || p == 0x2e || p == 0x36 || p == 0x3e || p == 0x26 || p == 0x64 ||
		           p == 0x65 || p == 0xf0 || (p >= 0x40 && p <= 0x4f)))
			break;
	}
	if (!rep || i == sizeof b)
		return 0;
	uint8_t op = b[i];
	return (op >= 0xa4 && op <= 0xa7) || (op >= 0xaa && op <= 0xaf) || (op >= 0x6c && op <= 0x6f);
}

/* At the exec fault: the lock is ours.  Open the code pages, step from the
 * faulting instruction on.  RIP is the faulting instruction (not yet run),
 * unless an instruction straddling into a code page from outside faulted on
 * its tail: then it is not ours to count. */
static void begin_code_window(int self, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	struct pt_cstep *c = &S.cstep;
	uintptr_t rip = (uintptr_t)g[REG_RIP];

	c->active = 1;
	c->tid = self;
	c->parked = others_count_code(self) ? watch_park_others(self) > 0 : 0;
	open_code_pages();
	c->has_pending = code_run_at(rip) != NULL;
	c->pending = rip;
	c->app_had_tf = ((uint64_t)g[REG_EFL] & EFLAGS_TF) != 0;
	g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] | EFLAGS_TF);
	/* No asynchronous handler runs while we step: it would run with the pages
	 * open (and TF cleared by the kernel), uncounted. */
	c->app_mask = *mask_word(uc);
	*mask_word(uc) = c->app_mask | S.async_mask;
	atomic_fetch_add(&S.code_entries, 1);
}

/* Control left the code pages (or is abandoned to an application handler):
 * close them, stop stepping, give the lock back. */
static void end_code_window(ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	struct pt_cstep *c = &S.cstep;
	if (!c->app_had_tf)
		g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] & ~EFLAGS_TF);
	close_code_pages();
	*mask_word(uc) = c->app_mask;
	c->active = 0;
	c->has_pending = 0;
	if (c->parked) {
		c->parked = 0;
		watch_park_release();
	}
	lock_release();
}

static int stepping_here(int self)
{
	return atomic_load(&S.lock_owner) == self && S.cstep.active && S.cstep.tid == self;
}

/* A single-step trap while stepping: the pending instruction has completed
 * (count it), RIP is the next one to run. */
static void code_step(int self, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	struct pt_cstep *c = &S.cstep;
	uintptr_t rip = (uintptr_t)g[REG_RIP];

	atomic_fetch_add(&S.code_steps, 1);
	if (c->has_pending) {
		uintptr_t done = c->pending;
		if (rip == done && is_rep_string_at(done))
			return; /* one more iteration of the same instruction */
		count_insn(self, done);
		/* The kernel returns from a system call with IRET, which re-arms TF
		 * only after the next instruction: the trap owed to the syscall is
		 * lost and the instruction after it runs untrapped (measured: the
		 * next trap's RIP is past it).  Count it from here; it may itself be
		 * a syscall.  When RIP is syscall+2 the kernel did trap: nothing lost. */
		for (int i = 0; i < 4 && is_syscall_at(done) && rip != done + 2; i++) {
			done += 2;
			if (!code_run_at(done))
				break; /* it ran outside the code pages: not ours to count */
			count_insn(self, done);
		}
	}
	if (code_run_at(rip)) {
		c->pending = rip;
		c->has_pending = 1;
		/* A sigprocmask inside the range unblocked signals: take that as the
		 * application's mask from now on, but keep them out while stepping. */
		uint64_t cur = *mask_word(uc);
		if ((cur & S.async_mask) != S.async_mask) {
			c->app_mask = cur;
			*mask_word(uc) = cur | S.async_mask;
		}
		return;
	}
	end_code_window(uc);
}

/* ---- whole-thread stepping (watch_step.h) ---------------------------------- */

static struct pt_tstep *tstep_of(int self)
{
	if (!atomic_load(&S.tstep_used))
		return NULL;
	for (unsigned i = 0; i < PT_MAX_SESSIONS; i++)
		if (atomic_load(&S.tsteps[i].tid) == self)
			return &S.tsteps[i];
	return NULL;
}

/* Report one completed instruction: its first bytes straight from memory
 * when they lie in one page (the page is mapped: it just ran), else through
 * /proc/self/mem, which does not fault. */
static void tstep_report(struct pt_tstep *t, uintptr_t pc, ucontext_t *uc)
{
	uint8_t bytes[15];
	unsigned n = sizeof bytes;
	if ((pc & (PAGE - 1)) <= PAGE - sizeof bytes) {
		watch_copy(bytes, (const void *)pc, sizeof bytes);
	} else {
		long got = watch_sys_pread(S.mem_fd, bytes, sizeof bytes, pc);
		if (got <= 0) {
			n = (unsigned)(PAGE - (pc & (PAGE - 1)));
			watch_copy(bytes, (const void *)pc, n);
		} else {
			n = (unsigned)got;
		}
	}
	atomic_fetch_add(&S.tstep_steps, 1);
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
	uint64_t cur = *mask_word(uc), want = 0, next = cur;
	if (set) {
		if (how != SIG_BLOCK && how != SIG_UNBLOCK && how != SIG_SETMASK)
			return 0;
		if (watch_sys_pread(S.mem_fd, &want, 8, set) != 8)
			return 0;
		next = how == SIG_BLOCK ? cur | want : how == SIG_UNBLOCK ? cur & ~want : want;
	}
	if (oset && watch_sys_pwrite(S.mem_fd, &cur, 8, oset) != 8)
		return 0;
	*mask_word(uc) = next & ~(sigbit(SIGTRAP) | sigbit(SIGKILL) | sigbit(SIGSTOP));
	g[REG_RAX] = 0;
	g[REG_RIP] = (greg_t)(rip + 2);
	return 1;
}

/* A step trap on a thread being stepped: the pending instruction completed;
 * RIP is the next.  The same rules as code_step(). */
static void tstep_trap(struct pt_tstep *t, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	uintptr_t rip = (uintptr_t)g[REG_RIP];

	if (!atomic_load(&t->active)) {
		g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] & ~EFLAGS_TF);
		atomic_store(&t->tid, 0);
		return;
	}
	if (t->has_pending) {
		uintptr_t done = t->pending;
		if (rip == done && is_rep_string_at(done))
			return; /* one more iteration of the same instruction */
		tstep_report(t, done, uc);
		/* The kernel drops the trap owed to a syscall (code_step()). */
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

/* ---- chaining to the application's handlers ------------------------------- */

static void app_lock(void)
{
	int expected = 0;
	while (!atomic_compare_exchange_weak(&S.app_lock, &expected, 1)) {
		expected = 0;
		__builtin_ia32_pause();
	}
}

static void app_unlock(void)
{
	atomic_store(&S.app_lock, 0);
}

static struct sigaction *app_action(int sig)
{
	return sig == SIGSEGV ? &S.app_segv : sig == SIGFPE ? &S.app_fpe : &S.app_trap;
}

/* A signal that is not ours: do what the application asked for. */
/* Appends "<name><hex>" to the line at *p (async-signal-safe). */
static void diag_hex(char **p, const char *end, const char *name, uint64_t v)
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
 * the engine saw, so that a rare one (a CI run) leaves evidence. */
static void diag_fatal_trap(const siginfo_t *si, const ucontext_t *uc)
{
	const greg_t *g = uc->uc_mcontext.gregs;
	char line[320], *p = line, *end = line + sizeof line - 1;
	int self = watch_sys_gettid();
	diag_hex(&p, end, "libheritage watch engine: a SIGTRAP no client claimed goes to the default action: si_code 0x", (uint64_t)si->si_code);
	diag_hex(&p, end, " rip 0x", (uint64_t)g[REG_RIP]);
	diag_hex(&p, end, " tf ", ((uint64_t)g[REG_EFL] & EFLAGS_TF) != 0);
	diag_hex(&p, end, " tid 0x", (uint64_t)self);
	diag_hex(&p, end, " lock_owner 0x", (uint64_t)atomic_load(&S.lock_owner));
	diag_hex(&p, end, " win_armed ", (uint64_t)S.win.armed);
	diag_hex(&p, end, " use_tf ", (uint64_t)S.win.use_tf);
	diag_hex(&p, end, " patch 0x", (uint64_t)S.win.patch_addr);
	diag_hex(&p, end, " cstep ", (uint64_t)(S.cstep.active && S.cstep.tid == self));
	diag_hex(&p, end, " tstep ", (uint64_t)(tstep_of(self) != NULL));
	*p++ = '\n';
	watch_sys3(SYS_write, 2, (long)line, (long)(p - line));
}

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
		/* SIGFPE too is a fault: the instruction runs again and faults. */
		if ((sig != SIGSEGV && sig != SIGFPE) || si->si_code <= 0)
			watch_sys_tgkill(watch_sys_getpid(), watch_sys_gettid(), sig);
		return;
	}
	/* Run it with the mask the kernel would have set. */
	uint64_t mask = *mask_word(uc) | a.sa_mask.__val[0], old = 0;
	if (!(a.sa_flags & SA_NODEFER))
		mask |= sigbit(sig);
	set_thread_mask(mask & ~(sigbit(SIGKILL) | sigbit(SIGSTOP)), &old);
	if (a.sa_flags & SA_SIGINFO)
		a.sa_sigaction(sig, si, uc);
	else
		a.sa_handler(sig);
	set_thread_mask(old, NULL);
}

/* A fault on a page we no longer protect (unprotected between the fault and
 * now) is retried once before it is taken for the application's. */
static int retry_stale_fault(int self, uintptr_t rip, uintptr_t addr, int code)
{
	if (code != SEGV_ACCERR || !atomic_load(&S.unprotect_epoch))
		return 0;
	unsigned k = (unsigned)self % PT_RETRY_SLOTS;
	if (S.retry[k].tid == self && S.retry[k].rip == rip && S.retry[k].addr == addr) {
		S.retry[k].tid = 0;
		return 0;
	}
	S.retry[k].tid = self;
	S.retry[k].rip = rip;
	S.retry[k].addr = addr;
	return 1;
}

/* ---- the handlers --------------------------------------------------------- */

__attribute__((no_stack_protector)) static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	int self = watch_sys_gettid();
	uintptr_t addr = (uintptr_t)si->si_addr;
	uint64_t err = (uint64_t)uc->uc_mcontext.gregs[REG_ERR];

	if (si->si_code == SEGV_ACCERR && (err & PF_INSTR) && protected_in(1, addr)) {
		/* An instruction fetch from watched code. */
		if (atomic_load(&S.lock_owner) == self && S.win.armed)
			abort_window(uc); /* a stepped control transfer landed here; it completed */
		if (stepping_here(self)) {
			open_code_pages(); /* they should be open: an mprotect failed, try again */
			return;
		}
		uint64_t entry_mask = 0;
		change_thread_mask(SIG_UNBLOCK, sigbit(watch_park_signal()), &entry_mask);
		lock_acquire(self);
		if (!code_run_at(addr)) {
			lock_release(); /* unprotected meanwhile: just retry */
			set_thread_mask(entry_mask, NULL);
			return;
		}
		begin_code_window(self, uc);
		set_thread_mask(entry_mask, NULL);
		return;
	}

	if (atomic_load(&S.lock_owner) == self && S.win.armed) {
		/* The stepped instruction touched a page the decoder did not predict. */
		const struct pt_run *r = si->si_code == SEGV_ACCERR ? run_at(addr) : NULL;
		if (r && !already_open(PAGE_DOWN(addr), PAGE_DOWN(addr) + PAGE)) {
			if (!S.win.counted_at_fault && !insn_covers(&S.win.insn, addr)) {
				int w = ((uint64_t)uc->uc_mcontext.gregs[REG_ERR] & PF_WRITE) != 0;
				count_access(self, (uintptr_t)uc->uc_mcontext.gregs[REG_RIP], addr, 1, 1, !w, w);
				S.win.counted_at_fault = 1;
			}
			open_bytes(addr, addr + 1);
			return;
		}
		/* Not allowed by the page's own protection, or not ours: a real fault. */
		abort_window(uc);
		if (stepping_here(self))
			end_code_window(uc);
		chain(sig, si, uc);
		return;
	}
	if (si->si_code != SEGV_ACCERR || !protected_in(0, addr)) {
		if (retry_stale_fault(self, (uintptr_t)uc->uc_mcontext.gregs[REG_RIP], addr, si->si_code))
			return;
		/* The application's fault inside watched code: its handler may
		 * longjmp away, so stop stepping first.  The faulting instruction did
		 * not complete and is not counted; if the handler resumes it, it
		 * faults on the closed page again and counts then. */
		if (stepping_here(self))
			end_code_window(uc);
		chain(sig, si, uc);
		return;
	}
	/* Waiting for the lock, we must be parkable whatever the mask was. */
	uint64_t entry_mask = 0;
	change_thread_mask(SIG_UNBLOCK, sigbit(watch_park_signal()), &entry_mask);
	lock_acquire(self);
	if (!run_at(addr)) {
		lock_release(); /* unprotected meanwhile: just retry */
		set_thread_mask(entry_mask, NULL);
		return;
	}
	open_window(self, uc, addr);
	set_thread_mask(entry_mask, NULL);
}

static int install_handlers(void);
static int ensure_init(void);

/* What every client needs before its first trap: the engine's state and its
 * handlers.  0, or -errno with "<who>: cannot start (...)" in why. */
static int engine_start(const char *who, char *why, size_t len)
{
	int err = ensure_init();
	if (!err)
		err = install_handlers();
	if (err)
		set_why(why, len, "%s: cannot start (%s)", who, strerror(-err));
	return err;
}

/* watch_step_one(): at most one instruction in flight per thread (a fault
 * handler runs to completion before the instruction is re-run). */
static __thread struct {
	int armed;
	int had_tf;          /* TF was set before us (stepping, a window, the application) */
	uint64_t mask;       /* the signal mask to give back */
	watch_step_done_fn fn;
	void *arg;
} one_step __attribute__((tls_model("initial-exec")));

int watch_step_one(ucontext_t *uc, watch_step_done_fn done, void *arg)
{
	if (one_step.armed)
		return -EBUSY;
	greg_t *g = uc->uc_mcontext.gregs;
	one_step.had_tf = ((uint64_t)g[REG_EFL] & EFLAGS_TF) != 0;
	one_step.mask = *mask_word(uc);
	one_step.fn = done;
	one_step.arg = arg;
	one_step.armed = 1;
	/* No application handler may run between here and the trap: it would
	 * run with the client's temporary state (e.g. exceptions masked). */
	*mask_word(uc) = one_step.mask | S.async_mask;
	g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] | EFLAGS_TF);
	return 0;
}

__attribute__((no_stack_protector)) static void on_claimed(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	watch_signal_fn fn = S.fpe_fn;
	if (sig == SIGFPE && fn && fn(sig, si, uc))
		return;
	chain(sig, si, uc);
}

int watch_signal_claim(int sig, watch_signal_fn fn, char *why, size_t len)
{
	if (sig != SIGFPE) {
		set_why(why, len, "signal engine: only SIGFPE can be claimed, not %d", sig);
		return -EINVAL;
	}
	int err = engine_start("signal engine", why, len); /* the SIGTRAP handler the steps need */
	if (err)
		return err;
	app_lock();
	if (atomic_load(&S.fpe_claimed)) {
		int same = S.fpe_fn == fn;
		app_unlock();
		if (same)
			return 0;
		set_why(why, len, "signal engine: SIGFPE is already claimed by another client");
		return -EBUSY;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigfillset(&sa.sa_mask);
	for (int s2 = 1; s2 <= 64; s2++)
		if (sigbit(s2) & sync_signals())
			sigdelset(&sa.sa_mask, s2);
	sigdelset(&sa.sa_mask, watch_park_signal());
	sa.sa_sigaction = on_claimed;
	S.fpe_fn = fn;
	err = __sigaction(SIGFPE, &sa, &S.app_fpe) != 0 ? -errno : 0;
	if (!err)
		atomic_store(&S.fpe_claimed, 1);
	app_unlock();
	if (err)
		set_why(why, len, "signal engine: sigaction(SIGFPE): %s", strerror(-err));
	return err;
}

static void ensure_altstack(void);

int watch_trap_perf_claim(watch_signal_fn fn, char *why, size_t len)
{
	int err = engine_start("signal engine", why, len);
	if (err)
		return err;
	watch_signal_fn none = NULL;
	if (!atomic_compare_exchange_strong(&S.perf_fn, &none, fn) && none != fn) {
		set_why(why, len, "signal engine: perf-event SIGTRAPs are already claimed by another client");
		return -EBUSY;
	}
	/* The hit handler runs on the interrupted stack otherwise, and the
	 * watched word may be just below it. */
	ensure_altstack();
	return 0;
}

__attribute__((no_stack_protector)) static void on_trap(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	greg_t *g = uc->uc_mcontext.gregs;
	int self = watch_sys_gettid();

	if (si->si_code == WATCH_TRAP_PERF) {
		/* A perf event's own signal, never a window's or a step's: the
		 * state below is not touched. */
		watch_signal_fn fn = atomic_load(&S.perf_fn);
		if (!fn || !fn(sig, si, uc))
			chain(sig, si, uc);
		return;
	}

	/* The kernel tags a #DB trap TRAP_TRACE from DR6.BS.  Under KVM, DR6 now
	 * and then arrives without BS: the step trap then comes as TRAP_BRKPT
	 * (the code of a #DB with no cause bit, otherwise only icebp).  Seen on
	 * the reference VM under load, about once per 10^7 steps: the PC was the
	 * target of the stepped call, TF set, and taking it for the application's
	 * trap killed the process.  With TF set in the interrupted context it is
	 * a step trap; the code is mended before any rule below looks at it. */
	if (si->si_code == TRAP_BRKPT && ((uint64_t)g[REG_EFL] & EFLAGS_TF)) {
		si->si_code = TRAP_TRACE;
		atomic_fetch_add(&S.untagged_steps, 1);
	}
	/* Without TF, the same loss on a data breakpoint's #DB: the kernel could
	 * not tell which breakpoint fired.  The perf-event client (the
	 * breakpoint backend) knows whether it was one of its own. */
	if (si->si_code == TRAP_BRKPT) {
		watch_signal_fn fn = atomic_load(&S.perf_fn);
		if (fn && fn(sig, si, uc))
			return;
	}

	if (si->si_code == TRAP_TRACE && one_step.armed) {
		/* The instruction a client asked to step (watch_step_one). */
		one_step.armed = 0;
		*mask_word(uc) = one_step.mask;
		one_step.fn(one_step.arg, uc);
		if (!one_step.had_tf) {
			g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] & ~EFLAGS_TF);
			return;
		}
		/* TF was also someone else's: the same trap is theirs too. */
	}

	/* A thread stepped as a whole gets every TF trap reported, whatever
	 * page-trap window the same trap also closes. */
	struct pt_tstep *t = si->si_code == TRAP_TRACE ? tstep_of(self) : NULL;

	if (atomic_load(&S.lock_owner) == self && S.win.armed) {
		if (!S.win.use_tf && (uintptr_t)g[REG_RIP] - 1 == S.win.patch_addr) {
			watch_sys_pwrite(S.mem_fd, &S.win.patch_orig, 1, S.win.patch_addr);
			g[REG_RIP] = (greg_t)S.win.patch_addr;
			atomic_fetch_add(&S.int3_steps, 1);
			end_window(uc);
			return;
		}
		if (S.win.use_tf && si->si_code == TRAP_TRACE) {
			if (!S.win.app_had_tf)
				g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] & ~EFLAGS_TF);
			atomic_fetch_add(&S.tf_steps, 1);
			end_window(uc);
			if (t && atomic_load(&t->active)) {
				/* The window's TF was ours all along: keep it. */
				g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] | EFLAGS_TF);
				tstep_trap(t, uc);
			}
			/* Inside watched code the same trap is also the code step. */
			if (!stepping_here(self))
				return;
		}
	}
	if (stepping_here(self)) {
		if (si->si_code == TRAP_TRACE) {
			code_step(self, uc);
			if (t && atomic_load(&t->active)) {
				g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] | EFLAGS_TF);
				tstep_trap(t, uc);
			}
			return;
		}
		if (si->si_code == SI_KERNEL && S.cstep.has_pending) {
			/* The application's own int3 (no TF trap follows a software
			 * interrupt): it completed; RIP is the next instruction. */
			count_insn(self, S.cstep.pending);
			S.cstep.pending = (uintptr_t)g[REG_RIP];
			S.cstep.has_pending = code_run_at(S.cstep.pending) != NULL;
		}
	} else if (t) {
		tstep_trap(t, uc);
		return;
	} else if (si->si_code == TRAP_TRACE && (atomic_load(&S.code_used) || atomic_load(&S.tstep_used)) &&
	           S.app_trap.sa_handler == SIG_DFL && !(S.app_trap.sa_flags & SA_SIGINFO)) {
		/* Also TF inherited by a thread or a child created while stepping. */
		if (atomic_load(&S.tstep_used))
			atomic_fetch_add(&S.tstep_strays, 1);
		/* A step trap nobody asked for: TF leaked out of a code window (a
		 * pushf inside it, popf outside).  Without an application handler it
		 * would kill the process; clear TF and go on. */
		g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] & ~EFLAGS_TF);
		return;
	}
	chain(sig, si, uc);
}

/* ---- set-up --------------------------------------------------------------- */

static int install_handlers(void)
{
	if (S.installed)
		return 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigfillset(&sa.sa_mask);
	for (int sig = 1; sig <= 64; sig++)
		if (sigbit(sig) & sync_signals())
			sigdelset(&sa.sa_mask, sig);
	sigdelset(&sa.sa_mask, watch_park_signal());

	/* The park handler: asynchronous application signals stay out while a
	 * thread is parked, since a window may have pages open. */
	struct sigaction park = sa;
	park.sa_sigaction = watch_park_handler;
	if (__sigaction(watch_park_signal(), &park, NULL) != 0)
		return -errno;

	app_lock();
	sa.sa_sigaction = on_segv;
	int err = __sigaction(SIGSEGV, &sa, &S.app_segv);
	sa.sa_sigaction = on_trap;
	if (!err)
		err = __sigaction(SIGTRAP, &sa, &S.app_trap);
	app_unlock();
	if (err)
		return -errno;
	S.installed = 1;
	return 0;
}

/* The thread running a session gets a signal stack of ours if it has none,
 * so that watching its own stack cannot leave the handler without one. */
static void ensure_altstack(void)
{
	stack_t cur;
	if (sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE))
		return;
	int self = watch_sys_gettid(), pid = watch_sys_getpid();
	for (int i = 0; i < PT_ALTSTACK_SLOTS; i++) {
		int owner = atomic_load(&S.altstack_tid[i]);
		/* Slots of threads that have exited are reused. */
		if (owner && owner != self && watch_sys_tgkill(pid, owner, 0) == 0)
			continue;
		if (!atomic_compare_exchange_strong(&S.altstack_tid[i], &owner, self))
			continue;
		stack_t ss = { .ss_sp = (void *)(S.altstacks + (uintptr_t)i * PT_ALTSTACK_BYTES),
		               .ss_size = PT_ALTSTACK_BYTES, .ss_flags = 0 };
		sigaltstack(&ss, NULL);
		return;
	}
}

static void unprotect_everything(void)
{
	unsigned n = atomic_load(&S.nruns), nc = atomic_load(&S.ncruns);
	atomic_fetch_add(&S.runs_seq, 1);
	for (unsigned i = 0; i < n; i++)
		watch_sys_mprotect(S.runs[i].lo, S.runs[i].hi - S.runs[i].lo, S.runs[i].prot);
	for (unsigned i = 0; i < nc; i++)
		watch_sys_mprotect(S.cruns[i].lo, S.cruns[i].hi - S.cruns[i].lo, S.cruns[i].prot);
	atomic_store(&S.nruns, 0);
	atomic_store(&S.ncruns, 0);
	atomic_fetch_add(&S.runs_seq, 1);
	if (n || nc)
		atomic_fetch_add(&S.unprotect_epoch, 1);
}

static uint64_t fork_saved_mask;

static void atfork_prepare(void)
{
	fork_saved_mask = thread_lock();
}

static void atfork_parent(void)
{
	thread_unlock(fork_saved_mask);
}

/* The child counts nothing and must find every page as it was. */
static void atfork_child(void)
{
	unprotect_everything();
	memset(S.slots, 0, sizeof S.slots);
	S.win.armed = 0;
	memset(&S.cstep, 0, sizeof S.cstep);
	/* The child inherited TF from a stepping parent thread: its traps are
	 * strays (on_trap clears TF), never reported. */
	for (unsigned i = 0; i < PT_MAX_SESSIONS; i++)
		atomic_store(&S.tsteps[i].tid, 0);
	close(S.mem_fd);
	S.mem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	S.pid = watch_sys_getpid();
	watch_park_atfork_child();
	memset((void *)S.altstack_tid, 0, sizeof S.altstack_tid);
	/* The forking thread, the child's only one, keeps the signal stack it
	 * had: its slot stays taken, by its new tid.  Freed, the slot went to
	 * the child's next thread, two threads' handlers shared one stack, and
	 * a code window's park was never released (the code-threads test hung
	 * every time in a child forked after the engine had run). */
	stack_t cur;
	if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE)) {
		uintptr_t sp = (uintptr_t)cur.ss_sp, base = (uintptr_t)S.altstacks;
		if (sp >= base && sp < base + (uintptr_t)PT_ALTSTACK_SLOTS * PT_ALTSTACK_BYTES)
			atomic_store(&S.altstack_tid[(sp - base) / PT_ALTSTACK_BYTES], watch_sys_gettid());
	}
	S.lock_depth = 0;
	atomic_store(&S.lock_owner, 0);
	atomic_store(&S.lock_waiters, 0);
	set_thread_mask(fork_saved_mask, NULL);
}

/* At exit no page may stay protected: other destructors and atexit handlers
 * may still read the watched data.  Registered with atexit at first use too,
 * so it runs before the handlers the program registered earlier (a library
 * destructor alone would run after all of them). */
__attribute__((destructor)) static void pagetrap_at_exit(void)
{
	if (!S.ready)
		return;
	uint64_t old = 0;
	set_thread_mask(S.async_mask, &old);
	int self = watch_sys_gettid();
	/* Bounded: a thread stuck inside a window must not hang the exit. */
	for (int i = 0; i < 1000; i++) {
		int expected = 0;
		if (atomic_load(&S.lock_owner) == self ||
		    atomic_compare_exchange_strong(&S.lock_owner, &expected, self))
			break;
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	unprotect_everything();
	for (unsigned i = 0; i < PT_MAX_SESSIONS; i++)
		S.slots[i].used = 0;
	/* A code window of ours (exit called from a handler's chain) is gone. */
	S.cstep.active = 0;
	atomic_store(&S.lock_owner, 0);
	S.lock_depth = 0;
	set_thread_mask(old, NULL);
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_error;

static void pagetrap_init(void)
{
	int err = watch_x86_init();
	if (!err)
		err = watch_park_init();
	if (err) {
		init_error = err;
		return;
	}
	S.mem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (S.mem_fd < 0) {
		init_error = -errno;
		return;
	}
	void *stacks = mmap(NULL, PT_ALTSTACK_SLOTS * PT_ALTSTACK_BYTES, PROT_READ | PROT_WRITE,
	                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (stacks == MAP_FAILED) {
		init_error = -errno;
		return;
	}
	S.altstacks = (uintptr_t)stacks;
	S.pid = watch_sys_getpid();
	S.async_mask = ~sync_signals();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	S.ready = 1;
}

static int ensure_init(void)
{
	pthread_once(&init_once, pagetrap_init);
	return init_error;
}

/* ---- /proc/self/maps ------------------------------------------------------ */

struct map_entry {
	uintptr_t lo, hi;
	int prot;
	const char *name; /* NUL-terminated, valid during the callback */
};

/* Calls fn for every mapping; stops when fn returns non-zero and returns
 * that value.  Reads into S.maps: call with the lock held. */
static int maps_for_each(int (*fn)(const struct map_entry *, void *), void *arg)
{
	int fd = (int)watch_sys6(SYS_openat, AT_FDCWD, (long)"/proc/self/maps", O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (fd < 0)
		return fd;
	size_t have = 0;
	int ret = 0;
	for (;;) {
		long n = watch_sys3(SYS_read, fd, (long)(S.maps + have), (long)(sizeof S.maps - 1 - have));
		if (n <= 0)
			break;
		have += (size_t)n;
		S.maps[have] = '\0';
		char *line = S.maps, *nl;
		while ((nl = strchr(line, '\n')) != NULL) {
			*nl = '\0';
			struct map_entry e;
			char perms[5] = "";
			int name_at = 0;
			unsigned long lo, hi;
			if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &lo, &hi, perms, &name_at) >= 3) {
				e.lo = lo;
				e.hi = hi;
				e.prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
				         (perms[2] == 'x' ? PROT_EXEC : 0);
				e.name = name_at ? line + name_at : "";
				if ((ret = fn(&e, arg)) != 0)
					goto out;
			}
			line = nl + 1;
		}
		have = (size_t)(S.maps + have - line);
		memmove(S.maps, line, have);
	}
out:
	watch_sys3(SYS_close, fd, 0, 0);
	return ret;
}

/* ---- fits ----------------------------------------------------------------- */

struct range_check {
	uintptr_t lo, hi;  /* still to be walked: [lo, hi) */
	uintptr_t mapped;  /* bytes of the range found mapped so far */
	const char *problem;
};

/* The part [*a, *b) of mapping e that lies in what c has still to walk, and
 * c advanced past it: 1 if there is such a part, 0 if e lies below it, -1 if
 * e lies beyond it (the walk is over).  The pages between the last mapping
 * and e are skipped: unmapped pages hold nothing to count, and
 * protect_pages() protects only what is mapped.  A coarse Itanium cover can
 * reach past the end of .bss or of the heap into a hole: PAPI's own
 * data_range, retargeted at itanium2, was refused so in about 1 run in 8 that
 * reached its last static array (address-space randomisation decides). */
static int clip_mapping(const struct map_entry *e, struct range_check *c, uintptr_t *a, uintptr_t *b)
{
	if (e->hi <= c->lo)
		return 0;
	if (e->lo >= c->hi)
		return -1;
	*a = e->lo > c->lo ? e->lo : c->lo;
	*b = e->hi < c->hi ? e->hi : c->hi;
	c->mapped += *b - *a;
	c->lo = *b;
	return 1;
}

/* Pages PROT_NONE only because another session watches them. */
static int pages_are_ours(uintptr_t lo, uintptr_t hi)
{
	while (lo < hi) {
		const struct pt_run *r = run_at(lo);
		if (!r)
			return 0;
		lo = r->hi;
	}
	return 1;
}

static int check_mapping(const struct map_entry *e, void *arg)
{
	struct range_check *c = arg;
	uintptr_t a, b;
	int in = clip_mapping(e, c, &a, &b);
	if (in <= 0)
		return in < 0;
	if (!(e->prot & (PROT_READ | PROT_WRITE)) && !pages_are_ours(a, b))
		c->problem = "is not accessible (PROT_NONE)";
	else if ((e->prot & PROT_EXEC) || code_runs_overlap(a, b))
		c->problem = "lies in executable pages (code cannot be watched as data by page protection)";
	else if (strstr(e->name, "libcapstone") || !strcmp(e->name, "[vvar]") || !strcmp(e->name, "[vdso]") ||
	         !strcmp(e->name, "[vsyscall]") || !strncmp(e->name, "[vvar", 5))
		c->problem = "lies in memory the page-trap engine itself uses";
	return c->problem != NULL || c->lo >= c->hi;
}

static int overlaps_pages(uintptr_t lo, uintptr_t hi, uintptr_t olo, uintptr_t ohi)
{
	return PAGE_DOWN(lo) < PAGE_UP(ohi) && PAGE_UP(hi) > PAGE_DOWN(olo);
}

/* Code the handlers and the stepping itself run: the signal trampoline
 * (__restore_rt) our handlers return through, capstone and what it calls,
 * the loader's lazy binding, the vDSO.  Watching any of it would fault inside
 * the handler or step the engine through itself. */
static int is_runtime_object(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5) || !strncmp(base, "ld-linux", 8) ||
	       !strncmp(base, "ld-", 3) || !strncmp(base, "libcapstone", 11) || !strncmp(base, "libpthread", 10) ||
	       !strcmp(base, "[vdso]") || !strcmp(base, "[vsyscall]") || !strncmp(base, "[vvar", 5);
}

static int check_code_mapping(const struct map_entry *e, void *arg)
{
	struct range_check *c = arg;
	uintptr_t a, b;
	int in = clip_mapping(e, c, &a, &b);
	if (in <= 0)
		return in < 0;
	if (is_runtime_object(e->name))
		c->problem = "lies in the C library, the dynamic loader, capstone or the vDSO, which the page-trap "
		             "engine's handlers run through; watch the application's own code";
	else if (!(e->prot & PROT_EXEC) && !code_runs_overlap(a, b))
		c->problem = "is not executable";
	return c->problem != NULL || c->lo >= c->hi;
}

/* The loaded object (executable or shared library) holding addr: its PT_LOAD
 * segments, page-rounded, as [lo, hi) of the whole image. */
struct object_span {
	uintptr_t addr, lo, hi;
	const char *name;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct object_span *o = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	int mine = 0;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
		mine |= o->addr >= a && o->addr < b;
		lo = a < lo ? a : lo;
		hi = b > hi ? b : hi;
	}
	if (!mine)
		return 0;
	o->lo = PAGE_DOWN(lo);
	o->hi = PAGE_UP(hi);
	o->name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "the main program";
	return 1;
}

/* The mapped pages of [lo, hi) must pass check (one of the check_*mapping
 * functions); their bytes are added to *mapped.  0, or -errno with the
 * reason in why.  Unmapped pages are no error here: whether anything at all
 * is mapped is the caller's question (no_page_mapped), asked of the whole
 * request, since the intervals of one coarse cover can lie one in .bss and
 * the next wholly in the hole beyond it. */
static int check_pages(int (*check)(const struct map_entry *, void *), const char *kind, unsigned i, uintptr_t lo,
                       uintptr_t hi, uintptr_t *mapped, char *why, size_t len)
{
	struct range_check c = { PAGE_DOWN(lo), PAGE_UP(hi), 0, NULL };
	uint64_t old = thread_lock();
	int r = maps_for_each(check, &c);
	thread_unlock(old);
	if (r < 0) {
		set_why(why, len, "pagetrap: cannot read /proc/self/maps (%s)", strerror(-r));
		return r;
	}
	if (c.problem) {
		set_why(why, len, "pagetrap: %s range %u [%#lx, %#lx) %s", kind, i, (unsigned long)lo, (unsigned long)hi,
		        c.problem);
		return -EINVAL;
	}
	*mapped += c.mapped;
	return 0;
}

/* A request none of whose pages is mapped watches nothing: that is a wrong
 * address, not a cover reaching into a hole. */
static int no_page_mapped(const char *kind, const struct watch_interval *iv, unsigned n, char *why, size_t len)
{
	if (n == 1)
		set_why(why, len, "pagetrap: %s range 0 [%#lx, %#lx) is not mapped", kind, (unsigned long)iv[0].start,
		        (unsigned long)iv[0].end);
	else
		set_why(why, len, "pagetrap: none of the %u %s ranges [%#lx, %#lx) ... [%#lx, %#lx) is mapped", n, kind,
		        (unsigned long)iv[0].start, (unsigned long)iv[0].end, (unsigned long)iv[n - 1].start,
		        (unsigned long)iv[n - 1].end);
	return -EINVAL;
}

static int check_code_ranges(const struct watch_request *req, char *why, size_t len)
{
	/* The engine's own object (libpapi.so, or a program linked with
	 * libheritage.a): the handlers, the interposed libc entry points and
	 * their PLT run there.  And libc wherever it is loaded from. */
	struct object_span own = { (uintptr_t)(void *)&check_code_ranges, 0, 0, NULL };
	struct object_span libc = { (uintptr_t)(void *)&getpid, 0, 0, NULL };
	dl_iterate_phdr(find_object, &own);
	dl_iterate_phdr(find_object, &libc);
	uintptr_t mapped = 0;

	for (unsigned i = 0; i < req->ncode; i++) {
		uintptr_t lo = req->code_pair[i].start, hi = req->code_pair[i].end;
		if (hi <= lo) {
			set_why(why, len, "pagetrap: code range %u [%#lx, %#lx) is empty or reversed", i,
			        (unsigned long)lo, (unsigned long)hi);
			return -EINVAL;
		}
		if (own.name && overlaps_pages(lo, hi, own.lo, own.hi)) {
			set_why(why, len, "pagetrap: code range %u [%#lx, %#lx) lies in %s, which holds the page-trap "
			        "engine itself (its handlers would step through themselves); watch code in another "
			        "object", i, (unsigned long)lo, (unsigned long)hi, own.name);
			return -EINVAL;
		}
		if (libc.name && overlaps_pages(lo, hi, libc.lo, libc.hi)) {
			set_why(why, len, "pagetrap: code range %u [%#lx, %#lx) lies in the C library (%s), which the "
			        "page-trap engine's handlers return through; watch the application's own code", i,
			        (unsigned long)lo, (unsigned long)hi, libc.name);
			return -EINVAL;
		}
		int r = check_pages(check_code_mapping, "code", i, lo, hi, &mapped, why, len);
		if (r)
			return r;
	}
	return mapped ? 0 : no_page_mapped("code", req->code_pair, req->ncode, why, len);
}

static int pagetrap_fits(const struct watch_request *req, char *why, size_t len)
{
	if (!req) {
		set_why(why, len, "pagetrap: no request");
		return -EINVAL;
	}
	if (req->want_code) {
		if (req->want_data) {
			/* Data windows and code windows would both own TF and the pages'
			 * protection on the same instructions; combining them (IBR+DBR,
			 * data_by_code) is not done. */
			set_why(why, len, "pagetrap: data accesses and instructions cannot be counted in the same event "
			                  "set by this backend; count them in two event sets");
			return -ENOTSUP;
		}
		if (req->ncode == 0) {
			set_why(why, len, "pagetrap: instruction counting needs an instruction address range");
			return -ENOTSUP;
		}
		if (req->ncode > WATCH_CODE_PAIRS) {
			set_why(why, len, "pagetrap: at most %d code ranges", WATCH_CODE_PAIRS);
			return -EINVAL;
		}
		int err = ensure_init();
		if (err) {
			set_why(why, len, "pagetrap: cannot start the engine (%s)", strerror(-err));
			return err;
		}
		return check_code_ranges(req, why, len);
	}
	if (!req->want_data) {
		set_why(why, len, "pagetrap: the request asks for no data accesses");
		return -EINVAL;
	}
	if (req->data_all || req->ndata == 0) {
		set_why(why, len, "pagetrap: watching all memory needs the instrument backend; give address ranges");
		return -ENOTSUP;
	}
	if (req->ndata > WATCH_MAX_INTERVALS) {
		set_why(why, len, "pagetrap: at most %d data ranges", WATCH_MAX_INTERVALS);
		return -EINVAL;
	}
	int err = ensure_init();
	if (err) {
		set_why(why, len, "pagetrap: cannot start the engine (%s)", strerror(-err));
		return err;
	}

	uintptr_t own[5][2];
	watch_x86_state_range(&own[0][0], &own[0][1]);
	watch_park_state_range(&own[1][0], &own[1][1]);
	own[2][0] = (uintptr_t)&pt_mem;
	own[2][1] = (uintptr_t)&pt_mem + sizeof pt_mem;
	own[3][0] = S.altstacks;
	own[3][1] = S.altstacks + PT_ALTSTACK_SLOTS * PT_ALTSTACK_BYTES;
	/* The thread control block (stack protector canary) and libc's
	 * single-thread flag are read by the handlers' path. */
	uint64_t fs = 0;
	watch_sys3(SYS_arch_prctl, ARCH_GET_FS, (long)&fs, 0);
	own[4][0] = (uintptr_t)fs;
	own[4][1] = (uintptr_t)fs + 64;

	uintptr_t mapped = 0;
	for (unsigned i = 0; i < req->ndata; i++) {
		uintptr_t lo = req->data[i].start, hi = req->data[i].end;
		if (hi <= lo) {
			set_why(why, len, "pagetrap: data range %u [%#lx, %#lx) is empty or reversed", i,
			        (unsigned long)lo, (unsigned long)hi);
			return -EINVAL;
		}
		for (unsigned k = 0; k < 5; k++) {
			if (overlaps_pages(lo, hi, own[k][0], own[k][1])) {
				set_why(why, len, "pagetrap: data range %u [%#lx, %#lx) shares pages with the engine's own "
				        "state; watch a different range", i, (unsigned long)lo, (unsigned long)hi);
				return -EINVAL;
			}
		}
		if (overlaps_pages(lo, hi, (uintptr_t)&__libc_single_threaded,
		                   (uintptr_t)&__libc_single_threaded + 1)) {
			set_why(why, len, "pagetrap: data range %u shares a page with the C library's state", i);
			return -EINVAL;
		}
		int r = check_pages(check_mapping, "data", i, lo, hi, &mapped, why, len);
		if (r)
			return r;
	}
	return mapped ? 0 : no_page_mapped("data", req->data, req->ndata, why, len);
}

/* ---- start / stop --------------------------------------------------------- */

static int cmp_interval(const void *a, const void *b)
{
	const struct watch_interval *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static unsigned merge_intervals(struct watch_interval *iv, unsigned n)
{
	qsort(iv, n, sizeof *iv, cmp_interval);
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++) {
		if (k && iv[i].start <= iv[k - 1].end) {
			if (iv[i].end > iv[k - 1].end)
				iv[k - 1].end = iv[i].end;
		} else {
			iv[k++] = iv[i];
		}
	}
	return k;
}

static int cmp_run(const void *a, const void *b)
{
	const struct pt_run *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* New runs for the pages in [lo, hi) not yet protected, with the protection
 * /proc/self/maps gives them now. */
struct gap_fill {
	uintptr_t lo, hi;
	struct pt_run *out;
	unsigned n, max;
};

static int collect_gap(const struct map_entry *e, void *arg)
{
	struct gap_fill *f = arg;
	if (e->hi <= f->lo)
		return 0;
	if (e->lo >= f->hi)
		return 1;
	if (f->n >= f->max)
		return -ENOSPC;
	uintptr_t a = e->lo > f->lo ? e->lo : f->lo, b = e->hi < f->hi ? e->hi : f->hi;
	f->out[f->n++] = (struct pt_run){ a, b, e->prot };
	return 0;
}

/* A closed run's protection (see runs_of). */
static int closed_prot(int code, int prot)
{
	return code ? prot & ~PROT_EXEC : PROT_NONE;
}

/* Installs the sorted, coalesced run list `runs` (n entries) as S.runs
 * (or S.cruns). */
static int publish_runs(int code, struct pt_run *runs, unsigned n)
{
	qsort(runs, n, sizeof *runs, cmp_run);
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++) {
		if (k && runs[k - 1].hi == runs[i].lo && runs[k - 1].prot == runs[i].prot)
			runs[k - 1].hi = runs[i].hi;
		else
			runs[k++] = runs[i];
	}
	if (k > PT_MAX_RUNS)
		return -ENOSPC;
	_Atomic unsigned *np;
	struct pt_run *dst = runs_of(code, &np);
	atomic_fetch_add(&S.runs_seq, 1);
	memcpy(dst, runs, k * sizeof *runs);
	atomic_store(np, k);
	atomic_fetch_add(&S.runs_seq, 1);
	return 0;
}

static int protect_pages(int code, const struct watch_interval *iv, unsigned nint)
{
	static struct pt_run next[2 * PT_MAX_RUNS]; /* under the lock */
	_Atomic unsigned *np;
	const struct pt_run *cur = runs_of(code, &np);
	unsigned n = atomic_load(np);
	memcpy(next, cur, n * sizeof *next);
	unsigned first_new = n;
	for (unsigned k = 0; k < nint; k++) {
		uintptr_t lo = PAGE_DOWN(iv[k].start), hi = PAGE_UP(iv[k].end);
		/* Walk [lo, hi) and fill what no existing run covers. */
		while (lo < hi) {
			uintptr_t gap_hi = hi;
			int covered = 0;
			for (unsigned i = 0; i < n; i++) {
				if (next[i].lo <= lo && next[i].hi > lo) {
					lo = next[i].hi;
					covered = 1;
					break;
				}
				if (next[i].lo > lo && next[i].lo < gap_hi)
					gap_hi = next[i].lo;
			}
			if (covered)
				continue;
			struct gap_fill f = { lo, gap_hi, next + n, 0, 2 * PT_MAX_RUNS - n };
			int r = maps_for_each(collect_gap, &f);
			if (r < 0)
				return r;
			n += f.n;
			lo = gap_hi;
		}
	}
	for (unsigned i = first_new; i < n; i++) {
		if (watch_sys_mprotect(next[i].lo, next[i].hi - next[i].lo, closed_prot(code, next[i].prot)) != 0) {
			for (unsigned j = first_new; j < i; j++)
				watch_sys_mprotect(next[j].lo, next[j].hi - next[j].lo, next[j].prot);
			return -ENOMEM;
		}
	}
	int r = publish_runs(code, next, n);
	if (r < 0)
		for (unsigned j = first_new; j < n; j++)
			watch_sys_mprotect(next[j].lo, next[j].hi - next[j].lo, next[j].prot);
	return r;
}

/* Gives back the data (code = 0) or code pages no running session needs
 * any more. */
static void release_unneeded(int code)
{
	static struct watch_interval need[PT_MAX_SESSIONS * WATCH_MAX_INTERVALS];
	static struct pt_run keep[2 * PT_MAX_RUNS];
	unsigned nneed = 0, nkeep = 0, released = 0;
	for (unsigned i = 0; i < PT_MAX_SESSIONS; i++) {
		const struct pt_slot *sl = &S.slots[i];
		if (!sl->used)
			continue;
		unsigned cnt = code ? sl->ncode : sl->nint;
		const struct watch_interval *iv = code ? sl->code : sl->iv;
		for (unsigned k = 0; k < cnt; k++)
			need[nneed++] = (struct watch_interval){ PAGE_DOWN(iv[k].start), PAGE_UP(iv[k].end) };
	}
	nneed = merge_intervals(need, nneed);
	_Atomic unsigned *np;
	const struct pt_run *runs = runs_of(code, &np);
	unsigned n = atomic_load(np);
	for (unsigned i = 0; i < n; i++) {
		uintptr_t at = runs[i].lo;
		for (unsigned k = 0; k < nneed && at < runs[i].hi; k++) {
			uintptr_t a = need[k].start > at ? need[k].start : at;
			uintptr_t b = need[k].end < runs[i].hi ? need[k].end : runs[i].hi;
			if (a >= b)
				continue;
			if (a > at) {
				watch_sys_mprotect(at, a - at, runs[i].prot);
				released = 1;
			}
			if (nkeep < 2 * PT_MAX_RUNS)
				keep[nkeep++] = (struct pt_run){ a, b, runs[i].prot };
			at = b;
		}
		if (at < runs[i].hi) {
			watch_sys_mprotect(at, runs[i].hi - at, runs[i].prot);
			released = 1;
		}
	}
	publish_runs(code, keep, nkeep);
	if (released)
		atomic_fetch_add(&S.unprotect_epoch, 1);
}

static void unprotect_unneeded(void)
{
	release_unneeded(0);
	release_unneeded(1);
}

/* The probe's session (watch_probe.c) protects a page of its own and
 * unprotects it before returning: it must not take the program's place in
 * the atexit order below. */
static __thread int probing;

static void register_exit(void)
{
	atexit(pagetrap_at_exit);
}

static int pagetrap_start(struct watch_session *s, char *why, size_t len)
{
	struct watch_request req = s->req;
	int err = pagetrap_fits(&req, why, len);
	if (err)
		return err;
	/* At the program's first session, not when the engine first ran (the
	 * probes run it inside PAPI_library_init): atexit handlers run
	 * last-registered first, and the program's own, registered before its
	 * first PAPI_start, may read the watched pages (range_process exit). */
	static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
	if (!probing)
		pthread_once(&exit_once, register_exit);
	err = install_handlers();
	if (err) {
		set_why(why, len, "pagetrap: cannot install signal handlers (%s)", strerror(-err));
		return err;
	}
	ensure_altstack();

	struct watch_interval iv[WATCH_MAX_INTERVALS] = { { 0, 0 } }, civ[WATCH_CODE_PAIRS] = { { 0, 0 } };
	unsigned nint = 0, ncode = req.want_code ? req.ncode : 0;
	if (req.want_data) {
		memcpy(iv, req.data, req.ndata * sizeof *iv);
		nint = merge_intervals(iv, req.ndata);
	}
	memcpy(civ, req.code_pair, ncode * sizeof *civ);

	uint64_t old = thread_lock();
	struct pt_slot *slot = NULL;
	for (unsigned i = 0; i < PT_MAX_SESSIONS && !slot; i++)
		if (!S.slots[i].used)
			slot = &S.slots[i];
	if (!slot) {
		thread_unlock(old);
		set_why(why, len, "pagetrap: more than %d sessions running at once", PT_MAX_SESSIONS);
		return -ENOSPC;
	}
	err = protect_pages(0, iv, nint);
	if (!err && ncode) {
		/* Merged on a copy: the slot keeps the pairs in the caller's order,
		 * since insns_pair[k] belongs to code_pair[k]. */
		struct watch_interval pages[WATCH_CODE_PAIRS];
		memcpy(pages, civ, sizeof civ);
		err = protect_pages(1, pages, merge_intervals(pages, ncode));
		if (err)
			unprotect_unneeded(); /* the data pages just protected, if any */
	}
	if (!err) {
		memset(slot, 0, sizeof *slot);
		slot->tid = watch_sys_gettid();
		slot->nint = nint;
		memcpy(slot->iv, iv, sizeof iv);
		slot->ncode = ncode;
		memcpy(slot->code, civ, sizeof civ);
		if (req.want_data && req.data_by_code) {
			slot->nby_code = req.ncode;
			memcpy(slot->by_code, req.code_pair, req.ncode * sizeof *req.code_pair);
		}
		slot->used = 1;
		if (ncode)
			atomic_store(&S.code_used, 1);
	}
	thread_unlock(old);
	if (err) {
		set_why(why, len, "pagetrap: cannot protect the watched pages (%s); too many separate ranges?",
		        strerror(-err));
		return err;
	}
	s->priv = slot;
	s->running = 1;
	return 0;
}

static void pagetrap_stop(struct watch_session *s)
{
	struct pt_slot *slot = s->priv;
	struct watch_counts live;
	memset(&live, 0, sizeof live);
	if (slot) {
		uint64_t old = thread_lock();
		if (slot->used) {
			live = slot->counts;
			slot->used = 0;
			unprotect_unneeded();
		}
		thread_unlock(old);
	}
	watch_counts_add(&s->acc, &live);
	s->priv = NULL;
	s->running = 0;
}

static void pagetrap_read(const struct watch_session *s, struct watch_counts *live)
{
	const struct pt_slot *slot = s->priv;
	if (slot && slot->used)
		*live = slot->counts;
	else
		memset(live, 0, sizeof *live);
}

static void pagetrap_reset(struct watch_session *s)
{
	struct pt_slot *slot = s->priv;
	if (slot && slot->used)
		memset(&slot->counts, 0, sizeof slot->counts);
}

void watch_pagetrap_probe(struct heritage_probe_result *r)
{
	long page = sysconf(_SC_PAGESIZE);
	char why[WATCH_ERRLEN];
	volatile uint64_t *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		r->state = HERITAGE_PROBE_ABSENT;
		snprintf(r->evidence, sizeof r->evidence, "mmap of a private page: %s", strerror(errno));
		return;
	}
	p[0] = 0; /* fault it in before it is watched */
	struct watch_session s;
	memset(&s, 0, sizeof s);
	s.req.ndata = 1;
	s.req.want_data = 1;
	s.req.data[0] = (struct watch_interval){ (uintptr_t)p, (uintptr_t)p + (uintptr_t)page };
	probing = 1;
	int err = pagetrap_start(&s, why, sizeof why);
	probing = 0;
	if (err) {
		munmap((void *)p, (size_t)page);
		r->state = HERITAGE_PROBE_ABSENT;
		snprintf(r->evidence, sizeof r->evidence, "%.300s", why);
		return;
	}
	/* 3 loads, 2 stores. */
	p[1] = p[0] + 1;
	p[2] = p[1] + p[0];
	pagetrap_stop(&s);
	munmap((void *)p, (size_t)page);
	if (s.acc.loads == 3 && s.acc.stores == 2) {
		r->state = HERITAGE_PROBE_WORKS;
		snprintf(r->evidence, sizeof r->evidence, "counted 3 loads and 2 stores of a protected private page "
		         "exactly");
	} else {
		r->state = HERITAGE_PROBE_DEAD;
		snprintf(r->evidence, sizeof r->evidence, "started, counted %llu loads and %llu stores of a protected "
		         "private page, want 3 and 2", (unsigned long long)s.acc.loads, (unsigned long long)s.acc.stores);
	}
}

const struct watch_backend_ops watch_pagetrap_ops = {
	.name = "pagetrap",
	.fits = pagetrap_fits,
	.start = pagetrap_start,
	.stop = pagetrap_stop,
	.read = pagetrap_read,
	.reset = pagetrap_reset,
};

void watch_pagetrap_stats(struct watch_pagetrap_stats *out)
{
	out->faults = atomic_load(&S.faults);
	out->int3_steps = atomic_load(&S.int3_steps);
	out->tf_steps = atomic_load(&S.tf_steps);
	out->undecoded = atomic_load(&S.undecoded);
	out->park_timeouts = watch_park_timeouts();
	out->bounced_syscalls = atomic_load(&S.bounced);
	out->code_entries = atomic_load(&S.code_entries);
	out->code_steps = atomic_load(&S.code_steps);
}

/* ---- whole-thread stepping: start / stop ---------------------------------- */

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
static __thread struct pt_tstep *my_tstep;

int watch_step_start(watch_step_fn fn, void *arg, char *why, size_t len)
{
	int err = engine_start("single-step engine", why, len);
	if (err)
		return err;
	ensure_altstack();
	int self = watch_sys_gettid(), pid = watch_sys_getpid();
	struct pt_tstep *t = NULL;
	/* This thread's slot left by an earlier stop whose last trap never
	 * came, else a free one, else one whose thread has exited. */
	for (unsigned i = 0; i < PT_MAX_SESSIONS && !t; i++)
		if (atomic_load(&S.tsteps[i].tid) == self)
			t = &S.tsteps[i];
	if (t && atomic_load(&t->active)) {
		set_why(why, len, "single-step engine: this thread is already being stepped");
		return -EBUSY;
	}
	for (unsigned i = 0; i < PT_MAX_SESSIONS && !t; i++) {
		int owner = atomic_load(&S.tsteps[i].tid);
		if (owner && watch_sys_tgkill(pid, owner, 0) == 0)
			continue;
		if (atomic_compare_exchange_strong(&S.tsteps[i].tid, &owner, self))
			t = &S.tsteps[i];
	}
	if (!t) {
		set_why(why, len, "single-step engine: more than %d threads stepped at once", PT_MAX_SESSIONS);
		return -ENOSPC;
	}
	t->fn = fn;
	t->arg = arg;
	t->has_pending = 1;
	my_tstep = t;
	atomic_store(&S.tstep_used, 1);
	atomic_store(&t->active, 1);
	/* The first trap comes after the instruction following popfq: that one
	 * is pending from the start. */
	tf_on(&t->pending);
	return 0;
}

void watch_step_stop(void)
{
	struct pt_tstep *t = my_tstep;
	if (!t)
		return;
	my_tstep = NULL;
	/* Inactive first: a trap still due clears TF and frees the slot. */
	atomic_store(&t->active, 0);
	tf_off();
}

int watch_step_active(void)
{
	struct pt_tstep *t = tstep_of(watch_sys_gettid());
	return t && atomic_load(&t->active);
}

void watch_step_stats(struct watch_step_stats *out)
{
	out->steps = atomic_load(&S.tstep_steps);
	out->strays = atomic_load(&S.tstep_strays);
	out->untagged = atomic_load(&S.untagged_steps);
}

/* ---- signal disposition interposition ------------------------------------- */

/* sigaction() and signal() for SIGSEGV and SIGTRAP (and SIGFPE once a client
 * claimed it: watch_signal_claim), once our handlers are in:
 * the application's action is recorded (and reported back as oldact) and
 * called by chain() for the faults and traps that are not ours.  Not
 * interposed: sigset(), sysv_signal(), bsd_signal(), and raw rt_sigaction. */
HERITAGE_PUBLIC int sigaction(int sig, const struct sigaction *act, struct sigaction *oldact)
{
	if (((sig == SIGSEGV || sig == SIGTRAP) && S.installed) || (sig == SIGFPE && atomic_load(&S.fpe_claimed))) {
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

HERITAGE_PUBLIC sighandler_t signal(int sig, sighandler_t handler)
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
	if (sigaction(sig, &act, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* ---- System calls ----------------------------------------------------------
 *
 * Interposed libc entry points that take user buffers: read, write, pread,
 * pread64, pwrite, pwrite64, readv, writev, recv, recvfrom, send, sendto,
 * __read_chk.  When the buffer overlaps protected pages the call goes through
 * a bounce buffer (mmap'd, so never on a watched page) and the user buffer is
 * filled or read through /proc/self/mem (protected pages) or
 * process_vm_readv/writev (the rest, with their own protection honoured), so
 * the call behaves as without watching and nothing is counted.  Not covered:
 * stdio (fread/fwrite call the kernel from inside libc), recvmsg/sendmsg,
 * preadv/pwritev, splice/vmsplice, io_uring, and direct syscall(2).
 */

static void *real_fn(void **slot, const char *name)
{
	void *p = atomic_load((_Atomic(void *) *)slot);
	if (!p) {
		p = dlsym(RTLD_NEXT, name);
		atomic_store((_Atomic(void *) *)slot, p);
	}
	return p;
}

#define REAL(type, name) ((type)real_fn(&real_##name, #name))
static void *real_read, *real_write, *real_pread64, *real_pwrite64, *real_readv, *real_writev;
static void *real_recv, *real_recvfrom, *real_send, *real_sendto;

static int buffer_watched(const void *buf, size_t n)
{
	if (!n || !atomic_load(&S.nruns))
		return 0;
	struct pt_run r;
	return runs_overlapping((uintptr_t)buf, (uintptr_t)buf + n, &r, 1) > 0;
}

/* Copy between the user buffer and the bounce buffer.  to_user: bounce →
 * user.  -1 with errno = EFAULT where the kernel would have failed. */
static int copy_user(void *user, void *bounce, size_t n, int to_user)
{
	struct pt_run runs[32];
	uintptr_t lo = (uintptr_t)user, hi = lo + n;
	for (int attempt = 0; attempt < 4; attempt++) {
		unsigned nr = runs_overlapping(lo, hi, runs, 32);
		qsort(runs, nr, sizeof *runs, cmp_run);
		uintptr_t at = lo;
		int failed = 0;
		for (unsigned i = 0; i <= nr && at < hi && !failed; i++) {
			uintptr_t seg_hi = i < nr ? (runs[i].lo > at ? runs[i].lo : at) : hi;
			if (seg_hi > hi)
				seg_hi = hi;
			if (seg_hi > at) {
				/* Unprotected part: the kernel checks its protection. */
				struct iovec local = { (char *)bounce + (at - lo), seg_hi - at };
				struct iovec remote = { (void *)at, seg_hi - at };
				ssize_t r = to_user ? process_vm_writev(S.pid, &local, 1, &remote, 1, 0)
				                    : process_vm_readv(S.pid, &local, 1, &remote, 1, 0);
				if (r != (ssize_t)(seg_hi - at)) {
					failed = 1;
					break;
				}
				at = seg_hi;
			}
			if (i == nr || at >= hi)
				break;
			uintptr_t b = runs[i].hi < hi ? runs[i].hi : hi;
			if (b <= at)
				continue;
			/* Protected part: allowed if its own protection allows. */
			if (!(runs[i].prot & (to_user ? PROT_WRITE : PROT_READ))) {
				errno = EFAULT;
				return -1;
			}
			long r = to_user ? watch_sys_pwrite(S.mem_fd, (char *)bounce + (at - lo), b - at, at)
			                 : watch_sys_pread(S.mem_fd, (char *)bounce + (at - lo), b - at, at);
			if (r != (long)(b - at)) {
				errno = EFAULT;
				return -1;
			}
			at = b;
		}
		if (!failed)
			return 0;
		/* A session started between the snapshot and the copy: again. */
	}
	errno = EFAULT;
	return -1;
}

static void *bounce_alloc(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	atomic_fetch_add(&S.bounced, 1);
	return p;
}

static void bounce_free(void *p, size_t n)
{
	int saved = errno;
	munmap(p, n);
	errno = saved;
}

/* The shape shared by every reading call: syscall into the bounce buffer,
 * then copy what arrived into the user's buffer. */
#define BOUNCE_IN(buf, n, call_with)                                                                   \
	do {                                                                                           \
		void *tmp_ = bounce_alloc(n);                                                          \
		if (!tmp_) {                                                                           \
			errno = ENOMEM;                                                                \
			return -1;                                                                     \
		}                                                                                      \
		ssize_t r_ = call_with(tmp_);                                                          \
		if (r_ > 0 && copy_user((buf), tmp_, (size_t)r_, 1) != 0)                              \
			r_ = -1;                                                                       \
		bounce_free(tmp_, (n));                                                                \
		return r_;                                                                             \
	} while (0)

#define BOUNCE_OUT(buf, n, call_with)                                                                  \
	do {                                                                                           \
		void *tmp_ = bounce_alloc(n);                                                          \
		if (!tmp_) {                                                                           \
			errno = ENOMEM;                                                                \
			return -1;                                                                     \
		}                                                                                      \
		ssize_t r_ = copy_user((void *)(buf), tmp_, (n), 0) != 0 ? -1 : call_with(tmp_);       \
		bounce_free(tmp_, (n));                                                                \
		return r_;                                                                             \
	} while (0)

/* Without watched pages in the buffer, the real call; an EFAULT that a
 * session started meanwhile explains falls through to the bounce. */
#define PASS_THROUGH(buf, n, direct)                                                                   \
	do {                                                                                           \
		if (!buffer_watched((buf), (n))) {                                                     \
			ssize_t r_ = (direct);                                                         \
			if (!(r_ < 0 && errno == EFAULT && buffer_watched((buf), (n))))                \
				return r_;                                                             \
		}                                                                                      \
	} while (0)

typedef ssize_t (*read_fn)(int, void *, size_t);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*readv_fn)(int, const struct iovec *, int);
typedef ssize_t (*recv_fn)(int, void *, size_t, int);
typedef ssize_t (*recvfrom_fn)(int, void *, size_t, int, __SOCKADDR_ARG, socklen_t *);
typedef ssize_t (*send_fn)(int, const void *, size_t, int);
typedef ssize_t (*sendto_fn)(int, const void *, size_t, int, __CONST_SOCKADDR_ARG, socklen_t);

HERITAGE_PUBLIC ssize_t read(int fd, void *buf, size_t n)
{
	read_fn real = REAL(read_fn, read);
	PASS_THROUGH(buf, n, real(fd, buf, n));
#define CALL(t) real(fd, t, n)
	BOUNCE_IN(buf, n, CALL);
#undef CALL
}

HERITAGE_PUBLIC ssize_t write(int fd, const void *buf, size_t n)
{
	write_fn real = REAL(write_fn, write);
	PASS_THROUGH(buf, n, real(fd, buf, n));
#define CALL(t) real(fd, t, n)
	BOUNCE_OUT(buf, n, CALL);
#undef CALL
}

HERITAGE_PUBLIC ssize_t pread64(int fd, void *buf, size_t n, off_t off)
{
	pread_fn real = REAL(pread_fn, pread64);
	PASS_THROUGH(buf, n, real(fd, buf, n, off));
#define CALL(t) real(fd, t, n, off)
	BOUNCE_IN(buf, n, CALL);
#undef CALL
}

HERITAGE_PUBLIC ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	return pread64(fd, buf, n, off);
}

HERITAGE_PUBLIC ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	pwrite_fn real = REAL(pwrite_fn, pwrite64);
	PASS_THROUGH(buf, n, real(fd, buf, n, off));
#define CALL(t) real(fd, t, n, off)
	BOUNCE_OUT(buf, n, CALL);
#undef CALL
}

HERITAGE_PUBLIC ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	return pwrite64(fd, buf, n, off);
}

HERITAGE_PUBLIC ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	recv_fn real = REAL(recv_fn, recv);
	PASS_THROUGH(buf, n, real(fd, buf, n, flags));
#define CALL(t) real(fd, t, n, flags)
	BOUNCE_IN(buf, n, CALL);
#undef CALL
}

HERITAGE_PUBLIC ssize_t recvfrom(int fd, void *buf, size_t n, int flags, __SOCKADDR_ARG addr, socklen_t *alen)
{
	recvfrom_fn real = REAL(recvfrom_fn, recvfrom);
	PASS_THROUGH(buf, n, real(fd, buf, n, flags, addr, alen));
#define CALL(t) real(fd, t, n, flags, addr, alen)
	BOUNCE_IN(buf, n, CALL);
#undef CALL
}

HERITAGE_PUBLIC ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	send_fn real = REAL(send_fn, send);
	PASS_THROUGH(buf, n, real(fd, buf, n, flags));
#define CALL(t) real(fd, t, n, flags)
	BOUNCE_OUT(buf, n, CALL);
#undef CALL
}

HERITAGE_PUBLIC ssize_t sendto(int fd, const void *buf, size_t n, int flags, __CONST_SOCKADDR_ARG addr, socklen_t alen)
{
	sendto_fn real = REAL(sendto_fn, sendto);
	PASS_THROUGH(buf, n, real(fd, buf, n, flags, addr, alen));
#define CALL(t) real(fd, t, n, flags, addr, alen)
	BOUNCE_OUT(buf, n, CALL);
#undef CALL
}

static int iov_watched(const struct iovec *iov, int cnt, size_t *total)
{
	int watched = 0;
	size_t sum = 0;
	for (int i = 0; i < cnt; i++) {
		sum += iov[i].iov_len;
		watched |= buffer_watched(iov[i].iov_base, iov[i].iov_len);
	}
	*total = sum;
	return watched;
}

HERITAGE_PUBLIC ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	readv_fn real = REAL(readv_fn, readv);
	size_t total;
	if (cnt <= 0 || !iov_watched(iov, cnt, &total) || total == 0)
		return real(fd, iov, cnt);
	void *tmp = bounce_alloc(total);
	if (!tmp) {
		errno = ENOMEM;
		return -1;
	}
	struct iovec one = { tmp, total };
	ssize_t r = real(fd, &one, 1);
	size_t at = 0;
	for (int i = 0; i < cnt && r > 0 && at < (size_t)r; i++) {
		size_t part = iov[i].iov_len < (size_t)r - at ? iov[i].iov_len : (size_t)r - at;
		if (part && copy_user(iov[i].iov_base, (char *)tmp + at, part, 1) != 0)
			r = -1;
		at += part;
	}
	bounce_free(tmp, total);
	return r;
}

HERITAGE_PUBLIC ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	readv_fn real = REAL(readv_fn, writev);
	size_t total;
	if (cnt <= 0 || !iov_watched(iov, cnt, &total) || total == 0)
		return real(fd, iov, cnt);
	void *tmp = bounce_alloc(total);
	if (!tmp) {
		errno = ENOMEM;
		return -1;
	}
	size_t at = 0;
	ssize_t r = 0;
	for (int i = 0; i < cnt && r == 0; i++) {
		if (iov[i].iov_len && copy_user(iov[i].iov_base, (char *)tmp + at, iov[i].iov_len, 0) != 0)
			r = -1;
		at += iov[i].iov_len;
	}
	if (r == 0) {
		struct iovec one = { tmp, total };
		r = real(fd, &one, 1);
	}
	bounce_free(tmp, total);
	return r;
}

extern void __chk_fail(void) __attribute__((noreturn));

HERITAGE_PUBLIC ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	if (n > buflen)
		__chk_fail();
	return read(fd, buf, n);
}
