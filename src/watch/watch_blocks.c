/*
 * Instruction ranges counted through the block hooks (watch_blocks.h).
 *
 * Code built with the instrument flags' -fsanitize-coverage=trace-pc calls
 * __sanitizer_cov_trace_pc() at the start of each of the compiler's basic
 * blocks.  At PAPI_start the functions whose code lies in the counted
 * instruction ranges are analysed once (watch_blocks_cfg.c: decoded with
 * capstone, cut into pieces, grouped around the hook calls, cached for the
 * process) and the thread gets a table of the hook call sites whose blocks
 * hold instructions of the range, keyed by the call's return address, with
 * the number of those instructions in each code pair.  The hook finds its
 * site (watch_blocks_hook.h) and counts a run; PAPI_read and PAPI_stop
 * multiply the runs in.  Nothing is decoded while the program runs.
 *
 * What is counted, exactly as the page-trap backend (which steps each
 * instruction) counts it: every instruction of the binary whose address lies
 * in a code pair, once each time the thread executes it between PAPI_start
 * and PAPI_stop.  The hooks' calls are the program's instructions: the
 * `call __sanitizer_cov_trace_pc` itself, the data hooks' calls and the
 * argument set-up the compiler emitted before them lie in the range and are
 * counted; the hook functions' own instructions (in libpapi or the
 * executable's libpapi-heritage-instrument.a) and the PLT entries they are
 * reached through lie outside it and are not.  A call instruction is counted
 * where it is; the callee's instructions belong to the callee (counted if
 * they lie in a range and were built with the hooks).  A rep-prefixed string
 * instruction counts once, as on the page-trap backend and as INST_RETIRED
 * counts it (valgrind counts its iterations).
 *
 * Blocks the hooks do not mark.  The compilers place the hook in their
 * intermediate code's blocks, and the machine code has more: the prologue
 * before the entry block's hook, register moves on edges, the epilogue after
 * gcc turned the return block's `call hook; ret` into a tail call (`jmp
 * __sanitizer_cov_trace_pc`), the blocks instruction selection makes.  A
 * piece without a hook that can only run after one piece is counted with
 * it.  The others lie on paths from one hook to the next:
 *   - where all the paths from a site have the same count, the site counts
 *     them (a path that stops, in abort or a failed stack check, is not
 *     compared: the program does not go on from it);
 *   - what every way out of a function has in common is counted at its
 *     entry instead (leave_base);
 *   - the other sites are "deferred": the hook pushes (the activation's CFA,
 *     from the hook's CFA and the call site's stack depth, and its return
 *     address) on a per-thread stack, and the next hook run in the same
 *     activation (same CFA; or the function's tail call of the hook, which
 *     runs at the function's CFA with its return address) pops it and adds
 *     the path that leads from that site to itself.  Hooks of called
 *     functions run in between, at deeper CFAs, and leave the entry alone.
 * The analysis refuses (the page-trap backend then counts the range, and
 * PAPI_start says why when the instrument backend is forced) when two such
 * paths reach the same hook with different counts, or leave the function by
 * a return no hook sees with instructions of the range on them, or when the
 * stack depth at such a hook is unknown (alloca).
 *
 * Limits (what a program can do that the hooks cannot see), all outside
 * what a routine counted from PAPI_start to PAPI_stop normally does:
 *   - a function of the range active across PAPI_start or PAPI_stop (the
 *     code that calls them, when it lies in the range itself) is counted as
 *     its hooks found the session: a block whole if its hook ran while
 *     counting, not at all otherwise; its way out's common part with its
 *     entry; PAPI_read inside such a function counts that part already;
 *   - a non-local exit (longjmp, an exception, a call that does not return
 *     but is not known to: no __asan_handle_no_return before it, not one of
 *     the C library's) leaves the block it cut short counted whole, and drops
 *     a deferred path;
 *   - a signal handler running instrumented code of the range on an
 *     alternate stack can drop the deferred path of the code it interrupted.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/heritage_error.h"
#include "watch/watch_blocks.h"
#include "watch/watch_blocks_hook.h"
#include "watch/watch_instrument_exe.h"
#include "watch/watch_x86.h"

#define TRACK_DEFERS WATCH_BLOCKS_DEFERS
#define TRACK_RESOLVES WATCH_BLOCKS_RESOLVES
/* The exit of a deferred path that ends at the function's tail call of the
 * hook (no code address: keys are return addresses). */
#define LEAVE_KEY ((uintptr_t)1)

struct bl_exit {
	uintptr_t key;
	uint64_t n[WATCH_BLOCKS_NCOUNT];
};

struct bl_exits {
	uint32_t n;
	struct bl_exit e[];
};

/* What papi_heritage_blocks_track needs of a tracked site. */
struct bl_track {
	unsigned flags;             /* TRACK_* */
	int32_t cfa_off;            /* its activation's CFA - the hook's CFA */
	uint32_t fn;                /* its function */
	const struct bl_exits *exits;  /* TRACK_DEFERS: where its paths end */
};

/* A session's table. */
struct bl_table {
	struct watch_blocks_site *slot;
	size_t nslot;
	size_t nsite;
	size_t *at;                 /* the slot of site i */
	uint64_t (*n)[WATCH_BLOCKS_NCOUNT];  /* the instructions in range a run of site i stands for */
	struct bl_exits **exits;
	size_t nexits;
	struct bl_track *track;     /* one per site (entries' order), used by the tracked ones */
	uintptr_t lo, span;
	uint16_t *dir;
	unsigned shift;
};

/* The direct index's limits: 2 bytes per 4 bytes of code. */
#define DIR_MAX_SPAN (16u << 20)
#define DIR_MAX_SITES 65535u

struct bl_pending {
	uintptr_t cfa;               /* the activation's */
	uintptr_t ra;                /* its return address: what its tail call of the hook sees */
	uint32_t fn;
	const struct bl_exits *exits;
};

/* Analysis cache and code map: PAPI_start's path only. */
static pthread_mutex_t bl_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int running;
static const struct watch_instrument_exe *exe;

/* libpapi's own hook's state (the executable's copy has its own). */
static int blocks_any;
static __thread struct watch_blocks_thread bt __attribute__((tls_model("initial-exec")));

/* The tracking stack of this thread. */
static __thread struct {
	uint64_t *count;
	struct bl_table *tab;
	struct bl_pending *stack;
	uint32_t top, cap;
	uintptr_t top_cfa;        /* stack[top - 1].cfa, UINTPTR_MAX when empty (the hooks' shortcut) */
	uint64_t lost;            /* pending paths dropped (see the head comment's limits) */
} st __attribute__((tls_model("initial-exec")));

HERITAGE_PUBLIC void __sanitizer_cov_trace_pc(void);
void __sanitizer_cov_trace_pc(void)
{
	if (__builtin_expect(!__atomic_load_n(&blocks_any, __ATOMIC_RELAXED), 1))
		return;
	watch_blocks_hit(&bt, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa());
}
/* This definition's own address, whatever the executable interposes. */
extern void heritage_trace_pc_here(void) __attribute__((alias("__sanitizer_cov_trace_pc"), visibility("hidden")));
/* The instrument backend's __asan_handle_no_return (watch_blocks_fits). */
static uintptr_t no_return_hook;

/* One instruction, so that a signal handler reading the counts on this
 * thread (PAPI's overflow timer) finds them before or after it. */
static inline void add1(uint64_t *c, uint64_t v)
{
	__asm__ volatile("addq %1, %0" : "+m"(*c) : "r"(v));
}

static void add(uint64_t *c, const uint64_t *n)
{
	for (int i = 0; i < WATCH_BLOCKS_NCOUNT; i++)
		if (n[i])
			add1(&c[i], n[i]);
}

/* The tracking stack: reserved whole (never moved under a hook that a
 * signal handler interrupted), touched as deep as calls nest with a path
 * pending in each. */
#define STACK_ENTRIES (1u << 18)

HERITAGE_PUBLIC void papi_heritage_blocks_track(struct watch_blocks_site *e, uintptr_t hook_cfa)
{
	uint64_t *c = st.count;
	if (!c)
		return;
	const struct bl_track *tr = e->track;
	uintptr_t cfa = hook_cfa + (uintptr_t)(intptr_t)tr->cfa_off;
	/* Activations gone without reaching their next hook. */
	while (st.top && st.stack[st.top - 1].cfa < cfa) {
		st.top--;
		st.lost++;
	}
	if (st.top && st.stack[st.top - 1].cfa == cfa) {
		const struct bl_pending *p = &st.stack[st.top - 1];
		int found = 0;
		if ((tr->flags & TRACK_RESOLVES) && p->fn == tr->fn) {
			for (uint32_t i = 0; i < p->exits->n && !found; i++) {
				if (p->exits->e[i].key == e->key) {
					add(c, p->exits->e[i].n);
					found = 1;
				}
			}
		}
		st.lost += !found;
		st.top--;
	}
	add1(&e->hits, 1);
	if (tr->flags & TRACK_DEFERS) {
		if (st.top < st.cap)
			st.stack[st.top++] = (struct bl_pending){ cfa, *(const uintptr_t *)(cfa - 8), tr->fn, tr->exits };
		else
			st.lost++;
	}
	st.top_cfa = st.top ? st.stack[st.top - 1].cfa : UINTPTR_MAX;
}

/* A hook run from no site of the table, at the CFA of the deepest pending
 * path's activation: that activation's tail call of the hook, if ret is its
 * return address (its caller's next hook could have the same CFA). */
HERITAGE_PUBLIC void papi_heritage_blocks_leave(uintptr_t ret, uintptr_t hook_cfa)
{
	uint64_t *c = st.count;
	if (!c || !st.top)
		return;
	const struct bl_pending *p = &st.stack[st.top - 1];
	if (p->cfa != hook_cfa || p->ra != ret)
		return;
	int found = 0;
	for (uint32_t i = 0; i < p->exits->n && !found; i++) {
		if (p->exits->e[i].key == LEAVE_KEY) {
			add(c, p->exits->e[i].n);
			found = 1;
		}
	}
	st.lost += !found;
	st.top--;
	st.top_cfa = st.top ? st.stack[st.top - 1].cfa : UINTPTR_MAX;
}

/* ------------------------------------------------------------- the plan */

struct plan {
	const struct bl_fn **fn;
	unsigned n, cap;
	char *why;
	size_t len;
	int code;                 /* some executable bytes in the range */
};

static int plan_item(void *arg, const struct watch_code_fn *fde, uintptr_t a, uintptr_t b)
{
	struct plan *p = arg;

	p->code = 1;
	if (!fde) {
		/* Bytes no unwind information covers: alignment padding (nops, int3,
		 * zeros), or code that is no compiled function (.init, the PLT). */
		for (uintptr_t pc = a; pc < b;) {
			struct watch_x86_flow f;
			if (*(const uint8_t *)pc == 0) {
				pc++;
				continue;
			}
			if (watch_x86_flow((const uint8_t *)pc, b - pc < 15 ? b - pc : 15, pc, &f) != 0 || !f.pad) {
				snprintf(p->why, p->len, "the code at %#lx in the instruction range is no compiled function "
				         "(it has no unwind information), so it has no block hooks", (unsigned long)pc);
				return -ENOTSUP;
			}
			pc += f.len;
		}
		return 0;
	}
	const struct bl_fn *fn = bl_function(fde);
	if (!fn) {
		snprintf(p->why, p->len, "out of memory");
		return -ENOMEM;
	}
	if (fn->err) {
		snprintf(p->why, p->len, "%s", fn->why);
		return fn->err;
	}
	for (unsigned i = 0; i < p->n; i++)
		if (p->fn[i] == fn)
			return 0;
	if (p->n == p->cap) {
		unsigned cap = p->cap ? 2 * p->cap : 16;
		const struct bl_fn **m = realloc(p->fn, cap * sizeof *m);
		if (!m) {
			snprintf(p->why, p->len, "out of memory");
			return -ENOMEM;
		}
		p->fn = m;
		p->cap = cap;
	}
	p->fn[p->n++] = fn;
	return 0;
}

/* ------------------------------------------------------------- the table */

/* Instructions [first, end) of fn in req's pairs: n[0] in any, n[1 + k] in pair k. */
static void count_range(const struct bl_fn *fn, uint32_t first, uint32_t end, const struct watch_request *req,
                        uint64_t *n)
{
	for (uint32_t i = first; i < end; i++) {
		uintptr_t pc = fn->insn[i].pc;
		int hit = 0;
		for (unsigned k = 0; k < req->ncode; k++)
			if (pc >= req->code_pair[k].start && pc < req->code_pair[k].end) {
				n[1 + k]++;
				hit = 1;
			}
		n[0] += (uint64_t)hit;
	}
}

static void count_pieces(const struct bl_fn *fn, const int32_t *pieces, uint32_t np, const struct watch_request *req,
                         uint64_t *n)
{
	memset(n, 0, WATCH_BLOCKS_NCOUNT * sizeof *n);
	for (uint32_t i = 0; i < np; i++)
		count_range(fn, fn->piece[pieces[i]].first, fn->piece[pieces[i]].end, req, n);
}

static int zero(const uint64_t *n)
{
	for (int i = 0; i < WATCH_BLOCKS_NCOUNT; i++)
		if (n[i])
			return 0;
	return 1;
}

/* A site while the table is built. */
struct entry {
	uintptr_t key;
	uint64_t n[WATCH_BLOCKS_NCOUNT];
	struct bl_track tr;
};

struct entries {
	struct entry *e;
	size_t n, cap;
	struct bl_table *t;
};

static struct entry *new_entry(struct entries *v)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 64;
		struct entry *m = realloc(v->e, cap * sizeof *m);
		if (!m)
			return NULL;
		v->e = m;
		v->cap = cap;
	}
	struct entry *e = &v->e[v->n++];
	memset(e, 0, sizeof *e);
	return e;
}

static uintptr_t site_key(const struct bl_fn *fn, int32_t piece)
{
	const struct bl_insn *h = &fn->insn[fn->piece[piece].hook];
	return h->pc + h->len;
}

static int keep_exits(struct bl_table *t, struct bl_exits *x)
{
	struct bl_exits **m = realloc(t->exits, (t->nexits + 1) * sizeof *m);
	if (!m)
		return -ENOMEM;
	t->exits = m;
	t->exits[t->nexits++] = x;
	return 0;
}

/* A path's instructions in range; one that leaves the function less what
 * every way out has (leave, counted at the entry instead). */
static void path_count(const struct bl_fn *fn, const struct bl_path *p, const struct watch_request *req,
                       const uint64_t *leave, uint64_t *n)
{
	count_pieces(fn, fn->path_piece + p->first, p->n, req, n);
	if (p->exit == BL_LEAVE)
		for (int k = 0; k < WATCH_BLOCKS_NCOUNT; k++)
			n[k] -= leave[k];
}

/* Every activation that returns leaves once, through one of its ways out;
 * what all of them have in common (gcc's epilogue with no hook, the hook
 * moved after it as a tail call: `jmp __sanitizer_cov_trace_pc`) is counted
 * with the entry instead, so that paths which differ only in the way out
 * they take are alike.  The least of each count: nothing is ever taken away
 * from what was counted (an activation that began before PAPI_start and
 * returns after it counts its way out less that part). */
static void leave_base(const struct bl_fn *fn, const struct watch_request *req, uint64_t *leave)
{
	uint64_t n[WATCH_BLOCKS_NCOUNT];
	int any = 0;

	memset(leave, 0, WATCH_BLOCKS_NCOUNT * sizeof *leave);
	for (uint32_t i = 0; i < fn->npath; i++) {
		if (fn->path[i].exit != BL_LEAVE)
			continue;
		count_pieces(fn, fn->path_piece + fn->path[i].first, fn->path[i].n, req, n);
		for (int k = 0; k < WATCH_BLOCKS_NCOUNT; k++)
			leave[k] = !any || n[k] < leave[k] ? n[k] : leave[k];
		any = 1;
	}
}

/* One group's paths: 0 and *fixed set (all alike: their count in pv), or
 * its exits table, or a refusal. */
static int group_paths(const struct bl_fn *fn, const struct bl_group *g, const struct watch_request *req,
                       const uint64_t *leave, uint64_t *pv, struct bl_exits **exits, char *why, size_t len)
{
	uint64_t first[WATCH_BLOCKS_NCOUNT], n[WATCH_BLOCKS_NCOUNT];
	int alike = 1;

	*exits = NULL;
	memset(pv, 0, WATCH_BLOCKS_NCOUNT * sizeof *pv);
	/* A path that stops (abort, a failed stack check, longjmp) is not
	 * compared: where it is taken the program does not go on from there. */
	uint32_t compared = 0;
	for (uint32_t i = 0; i < g->npath; i++) {
		const struct bl_path *p = &fn->path[g->first_path + i];
		if (p->exit == BL_TRAP)
			continue;
		path_count(fn, p, req, leave, n);
		if (compared++ == 0)
			memcpy(first, n, sizeof n);
		else if (memcmp(first, n, sizeof n) != 0)
			alike = 0;
	}
	if (alike) {
		if (compared)
			memcpy(pv, first, sizeof first);
		return 0;
	}
	uintptr_t at = site_key(fn, g->piece) - fn->insn[fn->piece[g->piece].hook].len;
	struct bl_exits *x = calloc(1, sizeof *x + g->npath * sizeof x->e[0]);
	if (!x)
		return -ENOMEM;
	for (uint32_t i = 0; i < g->npath; i++) {
		const struct bl_path *p = &fn->path[g->first_path + i];
		if (p->exit == BL_TRAP)
			continue;   /* the program does not go on there (or leaves by longjmp) */
		path_count(fn, p, req, leave, n);
		if (p->exit == BL_LEAVE || p->exit == fn->entry) {
			if (p->exit == BL_LEAVE && zero(n))
				continue;   /* nothing of the range on the way out; the entry is dropped */
			free(x);
			snprintf(why, len, "after the block hook at %#lx the code leaves the function (or goes back to its "
			         "entry) through blocks with no hook, instructions of the range among them", (unsigned long)at);
			return -ENOTSUP;
		}
		uintptr_t key = p->exit == BL_LEAVE_HOOK ? LEAVE_KEY : site_key(fn, p->exit);
		uint32_t j;
		for (j = 0; j < x->n && x->e[j].key != key; j++)
			;
		if (j == x->n) {
			x->e[x->n].key = key;
			memcpy(x->e[x->n].n, n, sizeof n);
			x->n++;
		} else if (memcmp(x->e[j].n, n, sizeof n) != 0) {
			free(x);
			if (p->exit == BL_LEAVE_HOOK)
				snprintf(why, len, "after the block hook at %#lx two paths through blocks with no hook reach the "
				         "function's return with different instruction counts", (unsigned long)at);
			else
				snprintf(why, len, "after the block hook at %#lx two paths through blocks with no hook reach the "
				         "hook at %#lx with different instruction counts", (unsigned long)at,
				         (unsigned long)(key - fn->insn[fn->piece[p->exit].hook].len));
			return -ENOTSUP;
		}
	}
	*exits = x;
	return 0;
}

static int tracked_depth(const struct bl_fn *fn, int32_t piece, int32_t *cfa_off, char *why, size_t len)
{
	const struct bl_insn *h = &fn->insn[fn->piece[piece].hook];
	if (h->depth == BL_DEPTH_UNKNOWN) {
		snprintf(why, len, "the stack depth at the block hook at %#lx is not known (alloca, a realigned "
		         "stack), and the paths after it must be told apart by it", (unsigned long)h->pc);
		return -ENOTSUP;
	}
	*cfa_off = 8 + h->depth;
	return 0;
}

static int fn_entries(const struct bl_fn *fn, const struct watch_request *req, struct entries *v, char *why,
                      size_t len)
{
	size_t base = v->n;
	int32_t *entry_of = malloc((fn->npiece ? fn->npiece : 1) * sizeof *entry_of);
	int err = 0;

	if (!entry_of)
		return -ENOMEM;
	for (uint32_t g = 0; g < fn->ngroup; g++) {
		struct entry *e = new_entry(v);
		if (!e) {
			err = -ENOMEM;
			break;
		}
		const struct bl_group *gr = &fn->group[g];
		entry_of[gr->piece] = (int32_t)(v->n - 1);
		e->key = site_key(fn, gr->piece);
		e->tr.fn = fn->id;
		count_pieces(fn, fn->member + gr->first_member, gr->nmember, req, e->n);
	}
	int deferred = 0;
	uint64_t leave[WATCH_BLOCKS_NCOUNT];
	leave_base(fn, req, leave);
	if (!err)
		for (int i = 0; i < WATCH_BLOCKS_NCOUNT; i++)
			v->e[entry_of[fn->entry]].n[i] += leave[i];
	for (uint32_t g = 0; g < fn->ngroup && !err; g++) {
		const struct bl_group *gr = &fn->group[g];
		uint64_t pv[WATCH_BLOCKS_NCOUNT];
		struct bl_exits *x;
		struct entry *e = &v->e[entry_of[gr->piece]];
		err = group_paths(fn, gr, req, leave, pv, &x, why, len);
		if (err)
			break;
		for (int i = 0; i < WATCH_BLOCKS_NCOUNT; i++)
			e->n[i] += pv[i];
		if (!x)
			continue;
		if ((err = keep_exits(v->t, x))) {
			free(x);
			break;
		}
		deferred = 1;
		e->tr.flags |= TRACK_DEFERS;
		e->tr.exits = x;
		for (uint32_t i = 0; i < gr->npath; i++) {
			int32_t to = fn->path[gr->first_path + i].exit;
			if (to >= 0)
				v->e[entry_of[to]].tr.flags |= TRACK_RESOLVES;
		}
	}
	/* A deferred path that left the function with nothing of the range on
	 * it stays on the stack; the next activation's entry drops it before a
	 * hook of its own could take it for its own. */
	if (deferred && !err)
		v->e[entry_of[fn->entry]].tr.flags |= TRACK_RESOLVES;
	/* The tracked sites need their activation's CFA; the others that count
	 * nothing leave the table.  Entry base + g is group g's. */
	size_t keep = base;
	for (size_t i = base; i < v->n && !err; i++) {
		struct entry *e = &v->e[i];
		if (e->tr.flags)
			err = tracked_depth(fn, fn->group[i - base].piece, &e->tr.cfa_off, why, len);
		if (e->tr.flags || !zero(e->n))
			v->e[keep++] = *e;
	}
	v->n = err ? base : keep;
	free(entry_of);
	return err;
}

static void table_free(struct bl_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nexits; i++)
		free(t->exits[i]);
	free(t->exits);
	free(t->track);
	free(t->at);
	free(t->n);
	free(t->dir);
	free(t->slot);
	free(t);
}

static int build(const struct watch_request *req, struct bl_table **out, char *why, size_t len)
{
	struct plan p = { .why = why, .len = len };
	struct bl_table *t = calloc(1, sizeof *t);
	struct entries v = { .t = t };
	int err = 0;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	for (unsigned k = 0; k < req->ncode && !err; k++)
		err = watch_codemap_walk(req->code_pair[k].start, req->code_pair[k].end, plan_item, &p);
	if (!err && !p.code) {
		snprintf(why, len, "the instruction range holds no code of the program");
		err = -ENOTSUP;
	}
	for (unsigned i = 0; i < p.n && !err; i++)
		err = fn_entries(p.fn[i], req, &v, why, len);
	free(p.fn);
	if (!err) {
		uintptr_t lo = UINTPTR_MAX, hi = 0;
		for (size_t i = 0; i < v.n; i++) {
			if (v.e[i].key < lo)
				lo = v.e[i].key;
			if (v.e[i].key > hi)
				hi = v.e[i].key;
		}
		t->lo = v.n ? lo : 0;
		t->span = v.n ? hi - lo + 1 : 0;
		size_t slots = 8;
		unsigned bits = 3;
		int direct = t->span <= DIR_MAX_SPAN && v.n <= DIR_MAX_SITES;
		if (direct) {
			/* Slot 0: where return addresses with no site count. */
			t->nslot = v.n + 1;
			t->dir = calloc(t->span / 4 + 1, sizeof *t->dir);
		} else {
			while (slots < 2 * v.n) {
				slots *= 2;
				bits++;
			}
			/* No wrap-around: room past the last slot for every entry. */
			t->nslot = slots + v.n + 1;
			t->shift = 64 - bits;
		}
		t->slot = aligned_alloc(64, (t->nslot * sizeof *t->slot + 63) & ~(size_t)63);
		t->track = malloc((v.n ? v.n : 1) * sizeof *t->track);
		t->at = malloc((v.n ? v.n : 1) * sizeof *t->at);
		t->n = malloc((v.n ? v.n : 1) * sizeof *t->n);
		t->nsite = v.n;
		if (!t->slot || !t->track || !t->at || !t->n || (direct && !t->dir))
			err = -ENOMEM;
		else
			memset(t->slot, 0, t->nslot * sizeof *t->slot);
		for (size_t i = 0; !err && i < v.n; i++) {
			size_t at;
			if (direct) {
				at = i + 1;
				t->dir[(v.e[i].key - t->lo) >> 2] = (uint16_t)at;
			} else {
				at = watch_blocks_slot(v.e[i].key, t->shift);
				while (t->slot[at].key)
					at++;
			}
			t->slot[at].key = v.e[i].key;
			t->at[i] = at;
			memcpy(t->n[i], v.e[i].n, sizeof v.e[i].n);
			t->track[i] = v.e[i].tr;
			t->slot[at].track = v.e[i].tr.flags ? &t->track[i] : NULL;
			t->slot[at].flags = v.e[i].tr.flags;
			t->slot[at].cfa_off = v.e[i].tr.cfa_off;
		}
	}
	free(v.e);
	if (err == -ENOMEM)
		snprintf(why, len, "out of memory");
	if (err) {
		table_free(t);
		return err;
	}
	*out = t;
	return 0;
}

/* ------------------------------------------------------------- interface */

void watch_blocks_attach(const struct watch_instrument_exe *e)
{
	exe = e && e->abi >= 3 ? e : NULL;
}

static void set_targets(void)
{
	uintptr_t hooks[2] = { (uintptr_t)heritage_trace_pc_here, exe ? exe->trace_pc : 0 };
	bl_set_hook_targets(hooks, 2, no_return_hook);
}

/* A fork while another thread analyses must not leave the lock held in
 * the child. */
static void prefork(void) { pthread_mutex_lock(&bl_lock); }
static void postfork(void) { pthread_mutex_unlock(&bl_lock); }
static void fork_init(void) { pthread_atfork(prefork, postfork, postfork); }
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static int prepare(const struct watch_request *req, struct bl_table **t, char *why, size_t len)
{
	if (req->ncode == 0) {
		snprintf(why, len, "instrumented code counts executed instructions only inside an instruction range "
		         "(PAPI_INSTR_ADDRESS); without one its hooks report memory accesses, not executed instructions");
		return -ENOTSUP;
	}
	if (req->ncode > WATCH_CODE_PAIRS) {
		snprintf(why, len, "at most %d code ranges", WATCH_CODE_PAIRS);
		return -EINVAL;
	}
	int err = watch_x86_init();
	if (err) {
		snprintf(why, len, "cannot start the x86 decoder (%s)", strerror(-err));
		return -ENOTSUP;
	}
	pthread_once(&fork_once, fork_init);
	pthread_mutex_lock(&bl_lock);
	set_targets();
	char detail[WATCH_ERRLEN];
	detail[0] = 0;
	err = build(req, t, detail, sizeof detail);
	pthread_mutex_unlock(&bl_lock);
	if (err)
		snprintf(why, len, "the instruction range cannot be counted from the block hooks (it is counted by the "
		         "pagetrap backend instead): %s", detail);
	return err;
}

int watch_blocks_fits(const struct watch_request *req, uintptr_t no_return, char *why, size_t len)
{
	struct bl_table *t;
	__atomic_store_n(&no_return_hook, no_return, __ATOMIC_RELAXED);
	int err = prepare(req, &t, why, len);
	table_free(err ? NULL : t);
	return err;
}

int watch_blocks_start(const struct watch_request *req, uint64_t *count, char *why, size_t len)
{
	struct bl_table *t;
	int err = prepare(req, &t, why, len);
	if (err)
		return err;
	void *stack = mmap(NULL, STACK_ENTRIES * sizeof *st.stack, PROT_READ | PROT_WRITE,
	                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (stack == MAP_FAILED) {
		table_free(t);
		snprintf(why, len, "cannot map the block hooks' stack: %s", strerror(errno));
		return -ENOMEM;
	}
	st.stack = stack;
	st.cap = STACK_ENTRIES;
	st.top = 0;
	st.top_cfa = UINTPTR_MAX;
	st.lost = 0;
	st.tab = t;
	st.count = count;
	struct watch_blocks_thread view = { t->lo, t->span, t->slot, t->dir, t->shift, &st.top_cfa };
	watch_blocks_view_set(&bt, &view);
	if (exe)
		exe->set_blocks_thread(&view);
	if (atomic_fetch_add(&running, 1) == 0) {
		__atomic_store_n(&blocks_any, 1, __ATOMIC_RELAXED);
		if (exe)
			exe->set_blocks_any(1);
	}
	return 0;
}

void watch_blocks_fold(void)
{
	const struct bl_table *t = st.tab;
	uint64_t *c = st.count;
	if (!t || !c)
		return;
	for (size_t i = 0; i < t->nsite; i++) {
		/* One exchange: a hook run by a signal handler in between is kept. */
		uint64_t h = __atomic_exchange_n(&t->slot[t->at[i]].hits, 0, __ATOMIC_RELAXED);
		for (int k = 0; h && k < WATCH_BLOCKS_NCOUNT; k++)
			if (t->n[i][k])
				add1(&c[k], h * t->n[i][k]);
	}
}

void watch_blocks_reset(void)
{
	const struct bl_table *t = st.tab;
	for (size_t i = 0; t && i < t->nsite; i++)
		__atomic_store_n(&t->slot[t->at[i]].hits, 0, __ATOMIC_RELAXED);
}

void watch_blocks_stop(void)
{
	struct bl_table *t = st.tab;
	if (!t)
		return;
	watch_blocks_fold();
	struct watch_blocks_thread off = { 0, 0, NULL, NULL, 63, NULL };
	watch_blocks_view_set(&bt, &off);
	if (exe)
		exe->set_blocks_thread(&off);
	if (atomic_fetch_sub(&running, 1) == 1) {
		__atomic_store_n(&blocks_any, 0, __ATOMIC_RELAXED);
		if (exe)
			exe->set_blocks_any(0);
	}
	st.count = NULL;
	st.tab = NULL;
	st.top = 0;
	st.top_cfa = UINTPTR_MAX;
	munmap(st.stack, STACK_ENTRIES * sizeof *st.stack);
	st.stack = NULL;
	st.cap = 0;
	table_free(t);
}
