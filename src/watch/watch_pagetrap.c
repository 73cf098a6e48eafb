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
 * ucontext's saved mask), so no application handler runs inside a window;
 * they wait for the window's end, one instruction at most (a code window
 * ends early for them, see below).
 *
 * The handlers are clients of the signal engine (watch_signal.c: SIGSEGV and
 * SIGTRAP, after the perf-event client and watch_step_one, before
 * whole-thread stepping); what is not ours goes on to the later clients and
 * the application's handler.  They touch only: the engine's signal stack, the
 * static page-aligned state below, the decoder's, the parker's and the other
 * clients' likewise, and raw system calls.  fits() refuses requests that
 * overlap any of that.
 *
 * System calls never fault into user handlers; a read(2) into a protected page
 * fails with EFAULT: watch_bounce.c redirects the libc calls that take user
 * buffers through bounce buffers.
 *
 * Code ranges ("Code ranges" below): the pages holding watched instructions
 * lose PROT_EXEC (they stay readable, so data reads of them, and system calls
 * reading from them, are unaffected).  Fetching from them faults with the
 * instruction-fetch bit in the error code and si_addr == RIP; the handler then
 * opens the code pages, sets the trap flag and keeps the window lock while the
 * thread single-steps inside them.  Each step trap counts the instruction that
 * just completed; when RIP leaves the code pages (a call out, the return) TF is
 * cleared and the pages are closed again, so code outside the range runs at
 * full speed.  The same happens when a step trap finds an asynchronous signal
 * pending that the application does not block: the kernel delivers it as the
 * trap handler returns, outside the window (code_step), and the next
 * instruction in the range faults and steps on.  Other threads are parked for
 * the window only when another thread has a code session of its own
 * (otherwise nothing they run through an open page could be counted anyway).
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
#include "watch_self.h"
#include "watch_pages.h"
#include "watch_park.h"
#include "watch_bounce.h"
#include "watch_signal.h"
#include "watch_sys.h"
#include "watch_x86.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <ucontext.h>
#include <unistd.h>

#define PAGE ((uintptr_t)4096)
#define PAGE_DOWN(a) ((uintptr_t)(a) & ~(PAGE - 1))
#define PAGE_UP(a) (((uintptr_t)(a) + PAGE - 1) & ~(PAGE - 1))

#define PT_MAX_SESSIONS 64
#define PT_MAX_OPEN 64
#define PT_RETRY_SLOTS 64

#define WATCH_EFLAGS_TF 0x100ull
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
	struct watch_overflow *ovf; /* the session's, in its owner's memory (never watched) */
	int probe;                  /* the probe's (watch_probe.c): counts libheritage's own accesses */
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
	struct watch_run open[PT_MAX_OPEN];
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
	int ready;
	int installed;

	struct pt_slot slots[PT_MAX_SESSIONS];
	struct pt_window win;
	struct pt_cstep cstep;
	_Atomic int code_used; /* a code session was ever started */

	/* A fault on a page we unprotected after the fault happened looks like the
	 * application's own: it is retried once before it is passed on. */
	struct {
		int tid;
		uintptr_t rip, addr;
	} retry[PT_RETRY_SLOTS];

	uint64_t async_mask; /* the engine's: every signal except the synchronous ones */

	_Atomic uint64_t faults, int3_steps, tf_steps, undecoded;
	_Atomic uint64_t code_entries, code_steps;
};

#define PT_STATE_BYTES ((sizeof(struct pt_state) + PAGE - 1) / PAGE * PAGE)
static union {
	struct pt_state s;
	unsigned char pad[PT_STATE_BYTES];
} pt_mem __attribute__((aligned(4096)));

static struct pt_state *const pt = &pt_mem.s;

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

/* The engine's /proc/self/mem (reopened in a forked child). */
static int mem_fd(void)
{
	return watch_signal_mem_fd();
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
	/* The monitor's own accesses (watch_self.h): PAPI's and libheritage's
	 * code, the executable's hooks, but for the probe's session, whose
	 * accesses are libheritage's.  The window still opens for them. */
	int monitor = watch_self_code(rip);
	for (unsigned i = 0; i < PT_MAX_SESSIONS; i++) {
		struct pt_slot *sl = &pt->slots[i];
		if (!sl->used || sl->tid != self || !made_by(sl, rip) || (monitor && !sl->probe))
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
		if (sl->ovf) /* delivered once the window closes: it keeps async signals out */
			watch_overflow_note_access(sl->ovf, load, store, mis, n, rip);
	}
}

/* One executed instruction at addr, for the sessions of this thread: once in
 * every pair that holds it, once in insns however many pairs do. */
static void count_insn(int self, uintptr_t addr)
{
	for (unsigned i = 0; i < PT_MAX_SESSIONS; i++) {
		struct pt_slot *sl = &pt->slots[i];
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
	for (unsigned i = 0; i < pt->win.nopen; i++)
		if (pt->win.open[i].lo <= lo && pt->win.open[i].hi >= hi)
			return 1;
	return 0;
}

/* Give the protected pages among [lo, hi) their own protection back for the
 * duration of the window. */
static void open_bytes(uintptr_t lo, uintptr_t hi)
{
	uintptr_t plo = PAGE_DOWN(lo), phi = PAGE_UP(hi);
	unsigned n;
	const struct watch_run *runs = watch_pages_runs(0, &n);
	for (unsigned i = 0; i < n; i++) {
		const struct watch_run *r = &runs[i];
		if (r->hi <= plo || r->lo >= phi)
			continue;
		uintptr_t a = r->lo > plo ? r->lo : plo, b = r->hi < phi ? r->hi : phi;
		if (already_open(a, b) || pt->win.nopen >= PT_MAX_OPEN)
			continue;
		if (watch_sys_mprotect(a, b - a, r->prot) != 0)
			continue;
		pt->win.open[pt->win.nopen++] = (struct watch_run){ a, b, r->prot };
	}
}

static void close_pages(void)
{
	for (unsigned i = 0; i < pt->win.nopen; i++)
		watch_sys_mprotect(pt->win.open[i].lo, pt->win.open[i].hi - pt->win.open[i].lo, PROT_NONE);
	pt->win.nopen = 0;
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
	*watch_mask_word(uc) = pt->win.app_mask;
	pt->win.armed = 0;
	if (pt->win.parked) {
		pt->win.parked = 0;
		watch_park_release();
	}
	watch_pages_unlock();
}

/* With the lock held: count the faulting instruction's accesses, open the
 * pages it touches and arm the one-shot trap after it. */
static void open_window(int self, ucontext_t *uc, uintptr_t fault_addr)
{
	greg_t *g = uc->uc_mcontext.gregs;
	int is_write = ((uint64_t)g[REG_ERR] & PF_WRITE) != 0;
	struct pt_window *w = &pt->win;

	/* A data access from an instruction this thread is stepping through
	 * watched code: TF is already on and must stay on (the same trap ends both
	 * windows), and a park the code window made must not be nested, since a
	 * nested park's release would wake the threads it parked. */
	int stepping = pt->cstep.active && pt->cstep.tid == self;

	/* Also when the lock was already ours (a fault inside start/stop): no
	 * thread-context holder of the lock parks anybody. */
	w->parked = stepping && pt->cstep.parked ? 0 : watch_park_others(self) > 0;
	atomic_fetch_add(&pt->faults, 1);
	w->counted_at_fault = 0;
	w->nopen = 0;

	int decoded = watch_x86_decode(uc, is_write, mem_fd(), &w->insn) == 0;
	if (!decoded) {
		atomic_fetch_add(&pt->undecoded, 1);
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
		if (watch_sys_pread(mem_fd(), &orig, 1, next) == 1 && watch_sys_pwrite(mem_fd(), &cc, 1, next) == 1) {
			w->use_tf = 0;
			w->patch_addr = next;
			w->patch_orig = orig;
		}
	}
	if (w->use_tf) {
		w->app_had_tf = stepping || ((uint64_t)g[REG_EFL] & WATCH_EFLAGS_TF) != 0;
		g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] | WATCH_EFLAGS_TF);
	}
	w->app_mask = *watch_mask_word(uc);
	*watch_mask_word(uc) = w->app_mask | pt->async_mask;
	w->armed = 1;
}

/* Abandons an armed window whose instruction did not complete. */
static void abort_window(ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	if (pt->win.use_tf) {
		if (!pt->win.app_had_tf)
			g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] & ~WATCH_EFLAGS_TF);
	} else {
		watch_sys_pwrite(mem_fd(), &pt->win.patch_orig, 1, pt->win.patch_addr);
	}
	end_window(uc);
}

/* ---- code ranges ---------------------------------------------------------- *
 *
 * All with the window lock held by the stepping thread.  Every code run is
 * opened for a window, so "inside" simply means "on a page of some code run". */

static void open_code_pages(void)
{
	unsigned n;
	const struct watch_run *cruns = watch_pages_runs(1, &n);
	for (unsigned i = 0; i < n; i++)
		watch_sys_mprotect(cruns[i].lo, cruns[i].hi - cruns[i].lo, cruns[i].prot);
}

static void close_code_pages(void)
{
	unsigned n;
	const struct watch_run *cruns = watch_pages_runs(1, &n);
	for (unsigned i = 0; i < n; i++)
		watch_sys_mprotect(cruns[i].lo, cruns[i].hi - cruns[i].lo, cruns[i].prot & ~PROT_EXEC);
}

/* Parking is needed only for another thread's code session: whatever a thread
 * without one runs through an open page would not be counted anyway, and data
 * pages are not opened by a code window. */
static int others_count_code(int self)
{
	for (unsigned i = 0; i < PT_MAX_SESSIONS; i++)
		if (pt->slots[i].used && pt->slots[i].ncode && pt->slots[i].tid != self)
			return 1;
	return 0;
}

/* Instruction bytes at addr: straight from memory when they lie on a code
 * page (readable: we only took PROT_EXEC away), else through /proc/self/mem,
 * which does not fault. */
static int peek_code(uintptr_t addr, uint8_t *buf, unsigned n)
{
	const struct watch_run *r = watch_pages_code_run_at(addr);
	if (r && addr + n <= r->hi) {
		watch_copy(buf, (const void *)addr, n);
		return 0;
	}
	return watch_sys_pread(mem_fd(), buf, n, addr) == (long)n ? 0 : -1;
}

static int is_syscall_at(uintptr_t addr)
{
	uint8_t b[2];
	return peek_code(addr, b, 2) == 0 && watch_insn_is_syscall(b, 2);
}

static int is_rep_string_at(uintptr_t addr)
{
	uint8_t b[15];
	return peek_code(addr, b, sizeof b) == 0 && watch_insn_is_rep_string(b, sizeof b);
}

/* At the exec fault: the lock is ours.  Open the code pages, step from the
 * faulting instruction on.  RIP is the faulting instruction (not yet run),
 * unless an instruction straddling into a code page from outside faulted on
 * its tail: then it is not ours to count. */
static void begin_code_window(int self, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	struct pt_cstep *c = &pt->cstep;
	uintptr_t rip = (uintptr_t)g[REG_RIP];

	c->active = 1;
	c->tid = self;
	c->parked = others_count_code(self) ? watch_park_others(self) > 0 : 0;
	open_code_pages();
	c->has_pending = watch_pages_code_run_at(rip) != NULL;
	c->pending = rip;
	c->app_had_tf = ((uint64_t)g[REG_EFL] & WATCH_EFLAGS_TF) != 0;
	g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] | WATCH_EFLAGS_TF);
	/* No asynchronous handler runs inside the window: it would run with the
	 * pages open (and TF cleared by the kernel), uncounted, holding the lock
	 * (and the parked threads) for as long as it runs, or forever if it
	 * longjmps away.  code_step() ends the window when one is due. */
	c->app_mask = *watch_mask_word(uc);
	*watch_mask_word(uc) = c->app_mask | pt->async_mask;
	atomic_fetch_add(&pt->code_entries, 1);
}

/* Control left the code pages (or is abandoned to an application handler):
 * close them, stop stepping, give the lock back. */
static void end_code_window(ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	struct pt_cstep *c = &pt->cstep;
	if (!c->app_had_tf)
		g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] & ~WATCH_EFLAGS_TF);
	close_code_pages();
	*watch_mask_word(uc) = c->app_mask;
	c->active = 0;
	c->has_pending = 0;
	if (c->parked) {
		c->parked = 0;
		watch_park_release();
	}
	watch_pages_unlock();
}

/* Asynchronous signals now pending for the thread or its process that the
 * application's own mask (app_mask) lets through: the handlers run with
 * them all blocked, so rt_sigpending (pending and blocked) lists them all.
 * The park signal is ours (and never blocked in a handler). */
static uint64_t deliverable_signals(uint64_t app_mask)
{
	uint64_t pending = 0;
	if (watch_sys6(SYS_rt_sigpending, (long)&pending, 8, 0, 0, 0, 0) != 0)
		return 0;
	return pending & pt->async_mask & ~app_mask & ~watch_sigbit(watch_park_signal());
}

static int stepping_here(int self)
{
	return watch_pages_lock_owner() == self && pt->cstep.active && pt->cstep.tid == self;
}

/* A single-step trap while stepping: the pending instruction has completed
 * (count it), RIP is the next one to run.
 *
 * Asynchronous signals are delivered between two steps: a step that finds
 * one pending which the application's mask lets through ends the window
 * here (TF cleared, the code pages closed, the application's mask back, the
 * lock given back), and the kernel delivers the signal as this handler
 * returns, as if it had interrupted the application at this instruction
 * boundary: the application's handler runs outside any window, with its own
 * mask, or the default action ends the process.  When the handler returns
 * to RIP, inside the range, the closed page faults and a new window steps on
 * from RIP, which has not run yet: every instruction is counted once (a
 * rep-string instruction cut between two iterations is counted by the new
 * window when it completes).  A handler whose own code lies inside a range
 * is stepped and counted like any code there. */
static void code_step(int self, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	struct pt_cstep *c = &pt->cstep;
	uintptr_t rip = (uintptr_t)g[REG_RIP];

	atomic_fetch_add(&pt->code_steps, 1);
	if (c->has_pending) {
		uintptr_t done = c->pending;
		if (rip == done && is_rep_string_at(done)) {
			/* One more iteration of the same instruction. */
			if (deliverable_signals(c->app_mask))
				end_code_window(uc);
			return;
		}
		count_insn(self, done);
		/* The kernel returns from a system call with IRET, which re-arms TF
		 * only after the next instruction: the trap owed to the syscall is
		 * lost and the instruction after it runs untrapped (measured: the
		 * next trap's RIP is past it).  Count it from here; it may itself be
		 * a syscall.  When RIP is syscall+2 the kernel did trap: nothing lost. */
		for (int i = 0; i < 4 && is_syscall_at(done) && rip != done + 2; i++) {
			done += 2;
			if (!watch_pages_code_run_at(done))
				break; /* it ran outside the code pages: not ours to count */
			count_insn(self, done);
		}
	}
	if (watch_pages_code_run_at(rip)) {
		c->pending = rip;
		c->has_pending = 1;
		/* A sigprocmask inside the range unblocked signals: take that as the
		 * application's mask from now on, but keep them out while stepping. */
		uint64_t cur = *watch_mask_word(uc);
		if ((cur & pt->async_mask) != pt->async_mask) {
			c->app_mask = cur;
			*watch_mask_word(uc) = cur | pt->async_mask;
		}
		if (!deliverable_signals(c->app_mask))
			return;
	}
	end_code_window(uc);
}

/* A fault on a page we no longer protect (unprotected between the fault and
 * now) is retried once before it is taken for the application's. */
static int retry_stale_fault(int self, uintptr_t rip, uintptr_t addr, int code)
{
	if (code != SEGV_ACCERR || !watch_pages_unprotect_epoch())
		return 0;
	unsigned k = (unsigned)self % PT_RETRY_SLOTS;
	if (pt->retry[k].tid == self && pt->retry[k].rip == rip && pt->retry[k].addr == addr) {
		pt->retry[k].tid = 0;
		return 0;
	}
	pt->retry[k].tid = self;
	pt->retry[k].rip = rip;
	pt->retry[k].addr = addr;
	return 1;
}

/* ---- the signal engine's clients ------------------------------------------ */

static enum watch_claim pagetrap_segv(struct watch_signal_event *ev, void *arg)
{
	(void)arg;
	siginfo_t *si = ev->si;
	ucontext_t *uc = ev->uc;
	int self = ev->self;
	uintptr_t addr = (uintptr_t)si->si_addr;
	uint64_t err = (uint64_t)uc->uc_mcontext.gregs[REG_ERR];

	if (si->si_code == SEGV_ACCERR && (err & PF_INSTR) && watch_pages_protected(1, addr)) {
		/* An instruction fetch from watched code. */
		if (watch_pages_lock_owner() == self && pt->win.armed)
			abort_window(uc); /* a stepped control transfer landed here; it completed */
		if (stepping_here(self)) {
			open_code_pages(); /* they should be open: an mprotect failed, try again */
			return WATCH_MINE;
		}
		uint64_t entry_mask = 0;
		watch_change_thread_mask(SIG_UNBLOCK, watch_sigbit(watch_park_signal()), &entry_mask);
		watch_pages_lock(self);
		if (!watch_pages_code_run_at(addr)) {
			watch_pages_unlock(); /* unprotected meanwhile: just retry */
			watch_set_thread_mask(entry_mask, NULL);
			return WATCH_MINE;
		}
		begin_code_window(self, uc);
		watch_set_thread_mask(entry_mask, NULL);
		return WATCH_MINE;
	}

	if (watch_pages_lock_owner() == self && pt->win.armed) {
		/* The stepped instruction touched a page the decoder did not predict. */
		const struct watch_run *r = si->si_code == SEGV_ACCERR ? watch_pages_run_at(addr) : NULL;
		if (r && !already_open(PAGE_DOWN(addr), PAGE_DOWN(addr) + PAGE)) {
			if (!pt->win.counted_at_fault && !insn_covers(&pt->win.insn, addr)) {
				int w = ((uint64_t)uc->uc_mcontext.gregs[REG_ERR] & PF_WRITE) != 0;
				count_access(self, (uintptr_t)uc->uc_mcontext.gregs[REG_RIP], addr, 1, 1, !w, w);
				pt->win.counted_at_fault = 1;
			}
			open_bytes(addr, addr + 1);
			return WATCH_MINE;
		}
		/* Not allowed by the page's own protection, or not ours: a real fault. */
		abort_window(uc);
		if (stepping_here(self))
			end_code_window(uc);
		return WATCH_NOT_MINE;
	}
	if (si->si_code != SEGV_ACCERR || !watch_pages_protected(0, addr)) {
		if (retry_stale_fault(self, (uintptr_t)uc->uc_mcontext.gregs[REG_RIP], addr, si->si_code))
			return WATCH_MINE;
		/* The application's fault inside watched code: its handler may
		 * longjmp away, so stop stepping first.  The faulting instruction did
		 * not complete and is not counted; if the handler resumes it, it
		 * faults on the closed page again and counts then. */
		if (stepping_here(self))
			end_code_window(uc);
		return WATCH_NOT_MINE;
	}
	/* Waiting for the lock, we must be parkable whatever the mask was. */
	uint64_t entry_mask = 0;
	watch_change_thread_mask(SIG_UNBLOCK, watch_sigbit(watch_park_signal()), &entry_mask);
	watch_pages_lock(self);
	if (!watch_pages_run_at(addr)) {
		watch_pages_unlock(); /* unprotected meanwhile: just retry */
		watch_set_thread_mask(entry_mask, NULL);
		return WATCH_MINE;
	}
	open_window(self, uc, addr);
	watch_set_thread_mask(entry_mask, NULL);
	return WATCH_MINE;
}

/* After the perf-event client and watch_step_one, before whole-thread
 * stepping: a trap that ends a TF window or is a code step is also a
 * whole-thread step (WATCH_MINE_PASS_ON). */
static enum watch_claim pagetrap_trap(struct watch_signal_event *ev, void *arg)
{
	(void)arg;
	siginfo_t *si = ev->si;
	ucontext_t *uc = ev->uc;
	greg_t *g = uc->uc_mcontext.gregs;
	int self = ev->self;
	int passed = 0;

	if (watch_pages_lock_owner() == self && pt->win.armed) {
		if (!pt->win.use_tf && (uintptr_t)g[REG_RIP] - 1 == pt->win.patch_addr) {
			watch_sys_pwrite(mem_fd(), &pt->win.patch_orig, 1, pt->win.patch_addr);
			g[REG_RIP] = (greg_t)pt->win.patch_addr;
			atomic_fetch_add(&pt->int3_steps, 1);
			end_window(uc);
			return WATCH_MINE;
		}
		if (pt->win.use_tf && si->si_code == TRAP_TRACE) {
			if (!pt->win.app_had_tf)
				g[REG_EFL] = (greg_t)((uint64_t)g[REG_EFL] & ~WATCH_EFLAGS_TF);
			atomic_fetch_add(&pt->tf_steps, 1);
			end_window(uc);
			/* Inside watched code the same trap is also the code step. */
			if (!stepping_here(self))
				return WATCH_MINE_PASS_ON;
			passed = 1;
		}
	}
	if (stepping_here(self)) {
		if (si->si_code == TRAP_TRACE) {
			code_step(self, uc);
			return WATCH_MINE_PASS_ON;
		}
		if (si->si_code == SI_KERNEL && pt->cstep.has_pending) {
			/* The application's own int3 (no TF trap follows a software
			 * interrupt): it completed; RIP is the next instruction. */
			count_insn(self, pt->cstep.pending);
			pt->cstep.pending = (uintptr_t)g[REG_RIP];
			pt->cstep.has_pending = watch_pages_code_run_at(pt->cstep.pending) != NULL;
		}
	}
	return passed ? WATCH_MINE_PASS_ON : WATCH_NOT_MINE;
}

static void pagetrap_diag(char **p, const char *end, int self)
{
	watch_signal_diag_hex(p, end, " lock_owner 0x", (uint64_t)watch_pages_lock_owner());
	watch_signal_diag_hex(p, end, " win_armed ", (uint64_t)pt->win.armed);
	watch_signal_diag_hex(p, end, " use_tf ", (uint64_t)pt->win.use_tf);
	watch_signal_diag_hex(p, end, " patch 0x", (uint64_t)pt->win.patch_addr);
	watch_signal_diag_hex(p, end, " cstep ", (uint64_t)(pt->cstep.active && pt->cstep.tid == self));
}

/* ---- set-up --------------------------------------------------------------- */

static int install_handlers(void)
{
	if (pt->installed)
		return 0;
	/* The park handler: asynchronous application signals stay out while a
	 * thread is parked, since a window may have pages open. */
	struct sigaction park;
	memset(&park, 0, sizeof park);
	park.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigfillset(&park.sa_mask);
	for (int sig = 1; sig <= 64; sig++)
		if (watch_sigbit(sig) & ~watch_signal_async_mask())
			sigdelset(&park.sa_mask, sig);
	sigdelset(&park.sa_mask, watch_park_signal());
	watch_park_handler_mask(&park.sa_mask);
	park.sa_sigaction = watch_park_handler;
	if (__sigaction(watch_park_signal(), &park, NULL) != 0)
		return -errno;
	int err = watch_signal_start("pagetrap", NULL, 0);
	if (err)
		return err;
	pt->installed = 1;
	return 0;
}

static uint64_t fork_saved_mask;

static void atfork_prepare(void)
{
	fork_saved_mask = watch_pages_thread_lock();
}

static void atfork_parent(void)
{
	watch_pages_thread_unlock(fork_saved_mask);
}

/* The child counts nothing and must find every page as it was. */
static void atfork_child(void)
{
	watch_pages_unprotect_all();
	memset(pt->slots, 0, sizeof pt->slots);
	pt->win.armed = 0;
	memset(&pt->cstep, 0, sizeof pt->cstep);
	watch_park_atfork_child();
	watch_pages_lock_reset(1);
	watch_set_thread_mask(fork_saved_mask, NULL);
}

/* At exit no page may stay protected: other destructors and atexit handlers
 * may still read the watched data.  Registered with atexit at first use too,
 * so it runs before the handlers the program registered earlier (a library
 * destructor alone would run after all of them). */
__attribute__((destructor)) static void pagetrap_at_exit(void)
{
	if (!pt->ready)
		return;
	uint64_t old = 0;
	watch_set_thread_mask(pt->async_mask, &old);
	int self = watch_sys_gettid();
	watch_pages_lock_for_exit(self);
	watch_pages_unprotect_all();
	for (unsigned i = 0; i < PT_MAX_SESSIONS; i++)
		pt->slots[i].used = 0;
	/* A code window of ours (exit called from a handler's chain) is gone. */
	pt->cstep.active = 0;
	watch_pages_lock_reset(0);
	watch_set_thread_mask(old, NULL);
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_error;

static void pagetrap_init(void)
{
	int err = watch_x86_init();
	if (!err)
		err = watch_park_init();
	if (!err)
		err = watch_signal_init();
	if (err) {
		init_error = err;
		return;
	}
	pt->async_mask = watch_signal_async_mask();
	const struct watch_signal_client clients[] = {
		{ .name = "pagetrap", .sig = SIGSEGV, .priority = WATCH_PRIO_PAGETRAP, .fn = pagetrap_segv,
		  .state_lo = (uintptr_t)&pt_mem, .state_hi = (uintptr_t)&pt_mem + sizeof pt_mem },
		{ .name = "pagetrap", .sig = SIGTRAP, .priority = WATCH_PRIO_PAGETRAP, .fn = pagetrap_trap,
		  .state_lo = (uintptr_t)&pt_mem, .state_hi = (uintptr_t)&pt_mem + sizeof pt_mem,
		  .diag = pagetrap_diag },
	};
	for (unsigned i = 0; i < sizeof clients / sizeof clients[0] && !err; i++)
		err = watch_signal_register(&clients[i], NULL, 0);
	if (err) {
		init_error = err;
		return;
	}
	watch_bounce_set_runs(watch_pages_count(), watch_pages_overlapping);
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	pt->ready = 1;
}

static int ensure_init(void)
{
	pthread_once(&init_once, pagetrap_init);
	return init_error;
}


static int pagetrap_fits(const struct watch_request *req, char *why, size_t len)
{
	if (req->observe) {
		snprintf(why, len, "the page-trap backend " WATCH_OBSERVE_REFUSAL);
		return -ENOTSUP;
	}
	return watch_pagetrap_fits(req, ensure_init, why, len);
}

/* ---- start / stop --------------------------------------------------------- */

/* Gives back the data (code = 0) or code pages no running session needs
 * any more. */
static void release_unneeded(int code)
{
	static struct watch_interval need[PT_MAX_SESSIONS * WATCH_MAX_INTERVALS];
	unsigned nneed = 0;
	for (unsigned i = 0; i < PT_MAX_SESSIONS; i++) {
		const struct pt_slot *sl = &pt->slots[i];
		if (!sl->used)
			continue;
		unsigned cnt = code ? sl->ncode : sl->nint;
		const struct watch_interval *iv = code ? sl->code : sl->iv;
		for (unsigned k = 0; k < cnt; k++)
			need[nneed++] = (struct watch_interval){ PAGE_DOWN(iv[k].start), PAGE_UP(iv[k].end) };
	}
	watch_pages_release(code, need, watch_merge_intervals(need, nneed));
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

void watch_pagetrap_probing(int on)
{
	probing = on;
}

static void register_exit(void)
{
	atexit(pagetrap_at_exit);
}

/* Every thread runs its handlers on a signal stack of the engine's before
 * any data page is protected: the pages may be a thread's own stack (a local
 * array of another thread, memory given to pthread_attr_setstack), and a
 * thread faulting on its stack with no alternate one cannot be sent the
 * signal at all: the kernel kills the process (range_stack thread did so
 * every time).  The threads install it from the park handler; once per
 * thread, as the engine keeps the stacks it gave.  That handler ran on the
 * thread's own stack, and rt_sigreturn reads its frame there after the
 * release: protected by then, the frame could not be read and the kernel
 * killed the process (strace: the SI_KERNEL SIGSEGV right after the
 * sigaltstack call).  A second park, delivered on the new stacks and only
 * once the first handler has returned (the park signal is blocked inside
 * it), waits for that.
 *
 * A park leaves behind a thread that does not answer within its bound (200
 * ms): with no stack yet, or still in the first handler, such a thread was
 * killed the same way once the pages were protected (range_stack thread, 1
 * CI pass in 10 on a loaded machine; every run with the bound at 0).  So the
 * pair is made again until a pair has no laggard, for 2 s at most, and then
 * the start fails: an error the caller can retry, not a killed process.
 * Threads that block the park signal cannot be handed a stack by any park
 * and are not waited for (watch_park_blocked). */
#define ALTSTACK_HANDOVER_NS (2L * 1000 * 1000 * 1000)

static int64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int hand_out_altstacks(char *why, size_t len)
{
	int self = watch_sys_gettid(), lacking = watch_signal_thread_lacking_altstack();
	if (!lacking)
		return 0;
	int64_t start = monotonic_ns();
	int pairs = 0;
	do {
		watch_park_run_in_others(self, watch_signal_ensure_altstack_uc);
		/* Only a thread that answered this second park has returned from
		 * the first handler. */
		uint64_t timeouts = watch_park_timeouts();
		watch_park_run_in_others(self, NULL);
		pairs++;
		int drained = watch_park_timeouts() == timeouts;
		lacking = watch_signal_thread_lacking_altstack();
		if (lacking < 0)
			return 0; /* no task list: one pair, as many as can be known */
		if (!lacking && drained)
			return 0;
	} while (monotonic_ns() - start < ALTSTACK_HANDOVER_NS);
	if (lacking)
		set_why(why, len,
		        "pagetrap: thread %d did not take a signal stack of the engine's in %d tries over %.1f s (not "
		        "scheduled: a loaded machine?); watching now could kill the process if its stack is watched: "
		        "try the start again",
		        lacking, pairs, (double)(monotonic_ns() - start) / 1e9);
	else /* each has one, but a laggard may still be in the first handler */
		set_why(why, len,
		        "pagetrap: a thread did not answer the engine's signal in %d tries over %.1f s (not scheduled: a "
		        "loaded machine?), and may still be running a handler on its own stack; watching now could kill "
		        "the process if that stack is watched: try the start again",
		        pairs, (double)(monotonic_ns() - start) / 1e9);
	return -EAGAIN;
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
	watch_self_init();
	err = install_handlers();
	if (err) {
		set_why(why, len, "pagetrap: cannot install signal handlers (%s)", strerror(-err));
		return err;
	}
	/* The program's read(), write()... reach the bounce buffers from the
	 * first real session on (watch_got.c); a probe has no system calls into
	 * its page. */
	if (!probing) {
		err = watch_signal_session("pagetrap", why, len);
		if (!err)
			err = watch_bounce_interpose(why, len);
		if (err)
			return err;
	}
	watch_signal_ensure_altstack();

	struct watch_interval iv[WATCH_MAX_INTERVALS] = { { 0, 0 } }, civ[WATCH_CODE_PAIRS] = { { 0, 0 } };
	unsigned nint = 0, ncode = req.want_code ? req.ncode : 0;
	if (req.want_data) {
		memcpy(iv, req.data, req.ndata * sizeof *iv);
		nint = watch_merge_intervals(iv, req.ndata);
	}
	memcpy(civ, req.code_pair, ncode * sizeof *civ);

	uint64_t old = watch_pages_thread_lock();
	err = nint && !__libc_single_threaded ? hand_out_altstacks(why, len) : 0;
	if (err) {
		watch_pages_thread_unlock(old);
		return err;
	}
	struct pt_slot *slot = NULL;
	for (unsigned i = 0; i < PT_MAX_SESSIONS && !slot; i++)
		if (!pt->slots[i].used)
			slot = &pt->slots[i];
	if (!slot) {
		watch_pages_thread_unlock(old);
		set_why(why, len, "pagetrap: more than %d sessions running at once", PT_MAX_SESSIONS);
		return -ENOSPC;
	}
	err = watch_pages_protect(0, iv, nint);
	if (!err && ncode) {
		/* Merged on a copy: the slot keeps the pairs in the caller's order,
		 * since insns_pair[k] belongs to code_pair[k]. */
		struct watch_interval pages[WATCH_CODE_PAIRS];
		memcpy(pages, civ, sizeof civ);
		err = watch_pages_protect(1, pages, watch_merge_intervals(pages, ncode));
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
		slot->ovf = req.overflow_fields ? s->ovf : NULL;
		slot->probe = probing;
		slot->used = 1;
		if (ncode) {
			atomic_store(&pt->code_used, 1);
			watch_signal_note_tf_user(0);
		}
	}
	watch_pages_thread_unlock(old);
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
		uint64_t old = watch_pages_thread_lock();
		if (slot->used) {
			live = slot->counts;
			slot->used = 0;
			unprotect_unneeded();
		}
		watch_pages_thread_unlock(old);
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
	out->faults = atomic_load(&pt->faults);
	out->int3_steps = atomic_load(&pt->int3_steps);
	out->tf_steps = atomic_load(&pt->tf_steps);
	out->undecoded = atomic_load(&pt->undecoded);
	out->park_timeouts = watch_park_timeouts();
	out->bounced_syscalls = watch_bounce_count();
	out->code_entries = atomic_load(&pt->code_entries);
	out->code_steps = atomic_load(&pt->code_steps);
}

