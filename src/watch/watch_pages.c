/*
 * The page-trap backend's protected pages (watch_pages.h): the window lock,
 * the runs of pages it protects (data: PROT_NONE; code: PROT_EXEC taken
 * away) with the protection to give back, /proc/self/maps, and protecting
 * and giving back pages.  Read by the handlers: raw system calls only, state
 * in whole static pages of its own that fits() excludes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "watch_pages.h"
#include "watch_self.h"
#include "watch_park.h"
#include "watch_signal.h"
#include "watch_sys.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define PAGE ((uintptr_t)4096)
#define PAGE_DOWN(a) ((uintptr_t)(a) & ~(PAGE - 1))
#define PAGE_UP(a) (((uintptr_t)(a) + PAGE - 1) & ~(PAGE - 1))
#define PT_MAPS_BUF 16384

struct pages_state {
	/* The window lock: tid of the holder, 0 when free; futex word. */
	_Atomic int lock_owner;
	int lock_depth;
	_Atomic int lock_waiters;

	_Atomic uint32_t runs_seq; /* odd while runs[] changes (readers retry) */
	_Atomic unsigned nruns;
	struct watch_run runs[PT_MAX_RUNS];
	/* Code pages we made non-executable (prot: the protection to give back);
	 * same seqlock as runs[]. */
	_Atomic unsigned ncruns;
	struct watch_run cruns[PT_MAX_RUNS];
	/* A fault on a page we unprotected after the fault happened looks like the
	 * application's own: bumped at every unprotect (retry_stale_fault). */
	_Atomic uint64_t unprotect_epoch;

	char maps[PT_MAPS_BUF];
};

#define PAGES_STATE_BYTES ((sizeof(struct pages_state) + PAGE - 1) / PAGE * PAGE)
static union {
	struct pages_state s;
	unsigned char pad[PAGES_STATE_BYTES];
} pages_mem __attribute__((aligned(4096)));

static struct pages_state *const pages = &pages_mem.s;

/* ---- the window lock ------------------------------------------------------ */

static long futex_word(_Atomic int *word, int op, int val, const struct timespec *ts)
{
	return watch_sys6(SYS_futex, (long)word, op, val, (long)ts, 0, 0);
}

/* Recursive for its holder: a holder that faults (its caller's session struct
 * on a watched page, say) opens a nested window instead of deadlocking.
 * Waiters sleep on a futex and can be parked while they wait. */
void watch_pages_lock(int self)
{
	if (atomic_load(&pages->lock_owner) == self) {
		pages->lock_depth++;
		return;
	}
	for (unsigned spins = 0;; spins++) {
		int expected = 0;
		if (atomic_compare_exchange_strong(&pages->lock_owner, &expected, self))
			break;
		if (spins < 64) {
			__builtin_ia32_pause();
			continue;
		}
		atomic_fetch_add(&pages->lock_waiters, 1);
		/* Not on the stack: a waiter in thread context may be running on a
		 * watched stack page, where the kernel cannot read it (EFAULT, and
		 * the wait would become a spin). */
		static const struct timespec ts = { 0, 1000 * 1000 };
		futex_word(&pages->lock_owner, FUTEX_WAIT_PRIVATE, expected, &ts);
		atomic_fetch_sub(&pages->lock_waiters, 1);
	}
	pages->lock_depth = 1;
}

void watch_pages_unlock(void)
{
	if (--pages->lock_depth > 0)
		return;
	atomic_store(&pages->lock_owner, 0);
	if (atomic_load(&pages->lock_waiters))
		futex_word(&pages->lock_owner, FUTEX_WAKE_PRIVATE, 1, NULL);
}

/* From ordinary code: asynchronous signals stay blocked while the lock is held,
 * so no application handler can run (and fault) inside it.  The park signal is
 * left open so that a holder of the lock elsewhere can park us while we wait. */
uint64_t watch_pages_thread_lock(void)
{
	uint64_t old = 0;
	watch_thread_mask(SIG_BLOCK, watch_signal_async_mask() & ~watch_sigbit(watch_park_signal()), &old);
	watch_thread_mask(SIG_UNBLOCK, watch_sigbit(watch_park_signal()), NULL);
	watch_pages_lock(watch_sys_gettid());
	return old;
}

void watch_pages_thread_unlock(uint64_t old_mask)
{
	watch_pages_unlock();
	watch_thread_mask(SIG_SETMASK, old_mask, NULL);
}

/* ---- protected runs ------------------------------------------------------- */

/* The run list of data pages (code = 0) or of code pages (code = 1), and the
 * protection a closed run of it has: data pages fault on every access, code
 * pages only on instruction fetches (they stay readable). */
static struct watch_run *runs_of(int code, _Atomic unsigned **n)
{
	*n = code ? &pages->ncruns : &pages->nruns;
	return code ? pages->cruns : pages->runs;
}

const struct watch_run *watch_pages_run_in(int code, uintptr_t addr)
{
	_Atomic unsigned *count;
	const struct watch_run *runs = runs_of(code, &count);
	unsigned n = atomic_load(count);
	for (unsigned i = 0; i < n; i++)
		if (addr >= runs[i].lo && addr < runs[i].hi)
			return &runs[i];
	return NULL;
}

const struct watch_run *watch_pages_run_at(uintptr_t addr)
{
	return watch_pages_run_in(0, addr);
}

const struct watch_run *watch_pages_code_run_at(uintptr_t addr)
{
	return watch_pages_run_in(1, addr);
}

/* Without the lock (seqlock read): is addr on a page we protect (data) or
 * made non-executable (code)? */
int watch_pages_protected(int code, uintptr_t addr)
{
	for (;;) {
		uint32_t seq = atomic_load(&pages->runs_seq);
		if (seq & 1)
			continue;
		int hit = watch_pages_run_in(code, addr) != NULL;
		if (atomic_load(&pages->runs_seq) == seq)
			return hit;
	}
}

/* Copy of the runs of one list overlapping [lo, hi), consistent with one
 * another (seqlock read). */
unsigned watch_pages_overlapping_in(int code, uintptr_t lo, uintptr_t hi, struct watch_run *out, unsigned max)
{
	_Atomic unsigned *count;
	const struct watch_run *runs = runs_of(code, &count);
	for (;;) {
		uint32_t seq = atomic_load(&pages->runs_seq);
		if (seq & 1)
			continue;
		unsigned n = atomic_load(count), k = 0;
		for (unsigned i = 0; i < n && k < max && i < PT_MAX_RUNS; i++)
			if (runs[i].lo < hi && runs[i].hi > lo)
				out[k++] = runs[i];
		if (atomic_load(&pages->runs_seq) == seq)
			return k;
	}
}

unsigned watch_pages_overlapping(uintptr_t lo, uintptr_t hi, struct watch_run *out, unsigned max)
{
	return watch_pages_overlapping_in(0, lo, hi, out, max);
}

/* Without the lock: does [lo, hi) touch any of our code pages? */
int watch_pages_code_overlap(uintptr_t lo, uintptr_t hi)
{
	struct watch_run first;
	return watch_pages_overlapping_in(1, lo, hi, &first, 1) > 0;
}

static void restore_pages(int code, uintptr_t lo, uintptr_t hi, int prot);

void watch_pages_unprotect_all(void)
{
	unsigned n = atomic_load(&pages->nruns), nc = atomic_load(&pages->ncruns);
	atomic_fetch_add(&pages->runs_seq, 1);
	for (unsigned i = 0; i < n; i++)
		restore_pages(0, pages->runs[i].lo, pages->runs[i].hi, pages->runs[i].prot);
	for (unsigned i = 0; i < nc; i++)
		restore_pages(1, pages->cruns[i].lo, pages->cruns[i].hi, pages->cruns[i].prot);
	atomic_store(&pages->nruns, 0);
	atomic_store(&pages->ncruns, 0);
	atomic_fetch_add(&pages->runs_seq, 1);
	if (n || nc)
		atomic_fetch_add(&pages->unprotect_epoch, 1);
}

/* ---- /proc/self/maps ------------------------------------------------------ */

/* Calls fn for every mapping; stops when fn returns non-zero and returns
 * that value.  Reads into pages->maps: call with the lock held. */
int watch_pages_maps(int (*fn)(const struct watch_map_entry *, void *), void *arg)
{
	int fd = (int)watch_sys6(SYS_openat, AT_FDCWD, (long)"/proc/self/maps", O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (fd < 0)
		return fd;
	size_t have = 0;
	int ret = 0;
	for (;;) {
		long n = watch_sys3(SYS_read, fd, (long)(pages->maps + have), (long)(sizeof pages->maps - 1 - have));
		if (n <= 0)
			break;
		have += (size_t)n;
		pages->maps[have] = '\0';
		char *line = pages->maps, *nl;
		while ((nl = strchr(line, '\n')) != NULL) {
			*nl = '\0';
			struct watch_map_entry e;
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
		have = (size_t)(pages->maps + have - line);
		memmove(pages->maps, line, have);
	}
out:
	watch_sys3(SYS_close, fd, 0, 0);
	return ret;
}

static int cmp_interval(const void *a, const void *b)
{
	const struct watch_interval *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

unsigned watch_merge_intervals(struct watch_interval *iv, unsigned n)
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
	const struct watch_run *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* New runs for the pages in [lo, hi) not yet protected, with the protection
 * /proc/self/maps gives them now. */
struct gap_fill {
	uintptr_t lo, hi;
	struct watch_run *out;
	unsigned n, max;
	int code;
};

static int add_run(struct gap_fill *f, uintptr_t lo, uintptr_t hi, int prot)
{
	if (f->n >= f->max)
		return -ENOSPC;
	f->out[f->n++] = (struct watch_run){ lo, hi, prot };
	return 0;
}

static int collect_gap(const struct watch_map_entry *e, void *arg)
{
	struct gap_fill *f = arg;
	if (e->hi <= f->lo)
		return 0;
	if (e->lo >= f->hi)
		return 1;
	/* Code runs are executable mappings only.  A coarse instruction cover
	 * is a power-of-two block of addresses that usually reaches the
	 * program's headers, .rodata and .data, where no instruction can be
	 * fetched: nothing to count there, nothing to take PROT_EXEC from.
	 * (Recorded as code runs, those pages would also refuse data ranges
	 * while the set runs.) */
	if (f->code && !(e->prot & PROT_EXEC))
		return 0;
	uintptr_t a = e->lo > f->lo ? e->lo : f->lo, b = e->hi < f->hi ? e->hi : f->hi;
	/* The hook archive's state pages hold nothing of the program's and are
	 * touched on every hook call: protected, each call would fault only
	 * to be left out of the counts (watch_self.h). */
	uintptr_t slo, shi;
	watch_self_state(&slo, &shi);
	if (!f->code && slo < shi && slo < b && shi > a) {
		if (a < slo && add_run(f, a, slo, e->prot) != 0)
			return -ENOSPC;
		return shi < b ? add_run(f, shi, b, e->prot) : 0;
	}
	return add_run(f, a, b, e->prot);
}

/* A closed run's protection (see runs_of). */
static int closed_prot(int code, int prot)
{
	return code ? prot & ~PROT_EXEC : PROT_NONE;
}

/* Installs the sorted, coalesced run list `runs` (n entries) as pages->runs
 * (or pages->cruns). */
static int publish_runs(int code, struct watch_run *runs, unsigned n)
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
	struct watch_run *dst = runs_of(code, &np);
	atomic_fetch_add(&pages->runs_seq, 1);
	memcpy(dst, runs, k * sizeof *runs);
	atomic_store(np, k);
	atomic_fetch_add(&pages->runs_seq, 1);
	return 0;
}

/* The runs are published before their pages are protected, not after: the
 * thread protecting them may itself be running on them.  A data range on
 * the caller's stack (a local array of main, say) shares its lowest page with
 * the frames of PAPI_start and of this very function; mprotect made that
 * page PROT_NONE, the next access to the frame faulted, and since the run was
 * not published yet the fault was not recognised as ours and killed the
 * process (the tool author's probe: 9 to 13 runs of 20 on an Intel guest; 5
 * of 10 here, core dump: the fault in this function, RSP on the page just
 * protected).  Published first, such a fault opens a window like any other,
 * the lock being recursive for its holder.  A run published and not (yet, or
 * no longer) protected is harmless: only a SEGV_ACCERR fault consults it. */
int watch_pages_protect(int code, const struct watch_interval *iv, unsigned nint)
{
	static struct watch_run next[2 * PT_MAX_RUNS], old[PT_MAX_RUNS], fresh[2 * PT_MAX_RUNS]; /* under the lock */
	_Atomic unsigned *np;
	const struct watch_run *cur = runs_of(code, &np);
	unsigned n = atomic_load(np), nold = n;
	memcpy(next, cur, n * sizeof *next);
	memcpy(old, cur, n * sizeof *old);
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
			struct gap_fill f = { lo, gap_hi, next + n, 0, 2 * PT_MAX_RUNS - n, code };
			int r = watch_pages_maps(collect_gap, &f);
			if (r < 0)
				return r;
			n += f.n;
			lo = gap_hi;
		}
	}
	/* publish_runs sorts next[]: keep the new runs apart. */
	unsigned nfresh = n - first_new;
	memcpy(fresh, next + first_new, nfresh * sizeof *fresh);
	int r = publish_runs(code, next, n);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < nfresh; i++) {
		if (watch_sys_mprotect(fresh[i].lo, fresh[i].hi - fresh[i].lo, closed_prot(code, fresh[i].prot)) != 0) {
			for (unsigned j = 0; j < i; j++)
				watch_sys_mprotect(fresh[j].lo, fresh[j].hi - fresh[j].lo, fresh[j].prot);
			publish_runs(code, old, nold);
			atomic_fetch_add(&pages->unprotect_epoch, 1);
			return -ENOMEM;
		}
	}
	return 0;
}


/* Gives [lo, hi) of a run its protection back, but only where the pages
 * still have the protection we gave them.  Memory unmapped while watched
 * (munmap by the program, free() of a large block) may have been replaced
 * by another mapping: mprotect(prot) would have made a read-only mapping put
 * there writable (range_stack unmap: r-- became rw- at PAPI_stop). */
struct restore {
	uintptr_t lo, hi;
	int prot, closed;
};

static int restore_mapping(const struct watch_map_entry *e, void *arg)
{
	const struct restore *r = arg;
	if (e->hi <= r->lo)
		return 0;
	if (e->lo >= r->hi)
		return 1;
	uintptr_t a = e->lo > r->lo ? e->lo : r->lo, b = e->hi < r->hi ? e->hi : r->hi;
	if (e->prot == r->closed)
		watch_sys_mprotect(a, b - a, r->prot);
	return 0;
}

static void restore_pages(int code, uintptr_t lo, uintptr_t hi, int prot)
{
	struct restore r = { lo, hi, prot, closed_prot(code, prot) };
	if (watch_pages_maps(restore_mapping, &r) < 0)
		watch_sys_mprotect(lo, hi - lo, prot); /* no maps to ask: as before */
}

/* Gives back the pages of the data (code = 0) or code runs outside need[]
 * (sorted, merged, page-rounded): what no running session needs any more. */
void watch_pages_release(int code, const struct watch_interval *need, unsigned nneed)
{
	static struct watch_run keep[2 * PT_MAX_RUNS];
	unsigned nkeep = 0, released = 0;
	_Atomic unsigned *np;
	const struct watch_run *runs = runs_of(code, &np);
	unsigned n = atomic_load(np);
	for (unsigned i = 0; i < n; i++) {
		uintptr_t at = runs[i].lo;
		for (unsigned k = 0; k < nneed && at < runs[i].hi; k++) {
			uintptr_t a = need[k].start > at ? need[k].start : at;
			uintptr_t b = need[k].end < runs[i].hi ? need[k].end : runs[i].hi;
			if (a >= b)
				continue;
			if (a > at) {
				restore_pages(code, at, a, runs[i].prot);
				released = 1;
			}
			if (nkeep < 2 * PT_MAX_RUNS)
				keep[nkeep++] = (struct watch_run){ a, b, runs[i].prot };
			at = b;
		}
		if (at < runs[i].hi) {
			restore_pages(code, at, runs[i].hi, runs[i].prot);
			released = 1;
		}
	}
	publish_runs(code, keep, nkeep);
	if (released)
		atomic_fetch_add(&pages->unprotect_epoch, 1);
}

/* ---- for the backend ---------------------------------------------------------- */

const struct watch_run *watch_pages_runs(int code, unsigned *n)
{
	_Atomic unsigned *count;
	const struct watch_run *runs = runs_of(code, &count);
	*n = atomic_load(count);
	return runs;
}

const _Atomic unsigned *watch_pages_count(void)
{
	return &pages->nruns;
}

uint64_t watch_pages_unprotect_epoch(void)
{
	return atomic_load(&pages->unprotect_epoch);
}

int watch_pages_lock_owner(void)
{
	return atomic_load(&pages->lock_owner);
}

/* Bounded: a thread stuck inside a window must not hang the exit. */
void watch_pages_lock_for_exit(int self)
{
	for (int i = 0; i < 1000; i++) {
		int expected = 0;
		if (atomic_load(&pages->lock_owner) == self ||
		    atomic_compare_exchange_strong(&pages->lock_owner, &expected, self))
			break;
		static const struct timespec ts = { 0, 1000 * 1000 };
		watch_sys3(SYS_nanosleep, (long)&ts, 0, 0);
	}
}

void watch_pages_lock_reset(int waiters)
{
	if (waiters) {
		pages->lock_depth = 0;
		atomic_store(&pages->lock_owner, 0);
		atomic_store(&pages->lock_waiters, 0);
	} else {
		atomic_store(&pages->lock_owner, 0);
		pages->lock_depth = 0;
	}
}

void watch_pages_state_range(uintptr_t *lo, uintptr_t *hi)
{
	*lo = (uintptr_t)&pages_mem;
	*hi = (uintptr_t)&pages_mem + sizeof pages_mem;
}
