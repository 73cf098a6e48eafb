/*
 * The block structure of a function built with the block hooks, from its
 * machine code (watch_blocks.h).
 *
 * The compilers put the hook call at the start of each basic block of their
 * intermediate code (GCC: GIMPLE; clang: LLVM IR), so the machine code has
 * blocks without one: the register moves GCC's out-of-SSA pass puts on an
 * edge, the blocks clang's instruction selection makes, the prologue before
 * the entry block's hook.  Measured on this project's own sources (53 files,
 * -O2 with the outline instrument flags): GCC 12 leaves 1176 such pieces in
 * 618 functions, clang 14 (without block pruning) 963 in 625.  So the code
 * is cut into pieces (a leader to the next leader or branch), and:
 *
 *   - a piece holding a hook call runs whole each time its hook runs: the
 *     hook counts it, the instructions before the call included;
 *   - a piece without one whose only way in is the unconditional end of
 *     another piece runs each time that one does: it is glued to it;
 *   - the other pieces (orphans) lie between a group (a hooked piece and the
 *     pieces glued to it) and the next hook: the paths from a group through
 *     orphans to the next hook are listed, and watch_blocks.c tells them
 *     apart at run time by that next hook.
 *
 * Calls that do not return end a piece: the one after a call of
 * __asan_handle_no_return (the compilers put it before noreturn calls under
 * the sanitizer), and calls of the C library's (abort, exit, longjmp,
 * __stack_chk_fail, ...).  A jump to the hook (gcc's tail call of the return
 * block's hook) leaves the function where the hook sees it.
 *
 * Refused, with the reason (the page-trap backend then counts the range):
 * code that does not decode; a function with no hook call at all (not built
 * with the flags: crt's, the PLT, clang's asan.module_ctor); a function
 * whose entry piece has no hook (a branch back into it before the hook); a
 * loop with no hook in it; an indirect jump inside the frame (a switch's
 * jump table: its targets are unknown); a jump into the middle of another
 * function.  Cold parts (foo.cold, a fragment FDE entered by jumps from foo)
 * are analysed with their function; one alone, before its function was, is
 * refused (what jumps into it is not known).  With watch_blocks.c's own
 * refusals, measured on this project's sources built as one shared object
 * with each flavour: gcc outline 493 of 561 functions counted (88%; 43
 * ambiguous paths, 18 entries, 4 jump tables, 3 without hooks), clang 418 of
 * 586 (71%; 93 ambiguous, 14 jump tables, 6 entries, 55 without hooks: crt,
 * PLT, module constructors), the same with or without clang's block pruning;
 * gcc inline 106 of 561 (19%: the shadow check's report block rejoins the
 * access's block in its middle, so the paths after the hook differ).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "watch/watch_blocks.h"
#include "watch/watch_x86.h"

#define BL_MAX_PATHS 64          /* per group */
#define BL_MAX_PATH_LEN 64       /* orphan pieces on one path */

static uintptr_t hook_fn[4];
static unsigned nhook_fn;
static uintptr_t no_return_fn;
static struct bl_fn *cache;
static uint32_t next_id = 1;

void bl_set_hook_targets(const uintptr_t *trace_pc, unsigned ntrace, uintptr_t no_return)
{
	nhook_fn = 0;
	for (unsigned i = 0; i < ntrace && nhook_fn < 4; i++)
		if (trace_pc[i])
			hook_fn[nhook_fn++] = trace_pc[i];
	no_return_fn = no_return;
}

/* "the function at 0x... (name)", for messages. */
static void fn_name(uintptr_t pc, char *buf, size_t len)
{
	Dl_info di;
	if (dladdr((void *)pc, &di) && di.dli_sname && (uintptr_t)di.dli_saddr == pc)
		snprintf(buf, len, "%s (%#lx)", di.dli_sname, (unsigned long)pc);
	else
		snprintf(buf, len, "the function at %#lx", (unsigned long)pc);
}

static int refuse(struct bl_fn *fn, const char *fmt, uintptr_t at)
{
	char name[160];
	fn_name(fn->fde[0].lo, name, sizeof name);
	char what[160];
	snprintf(what, sizeof what, fmt, (unsigned long)at);
	snprintf(fn->why, sizeof fn->why, "%.96s: %.150s", name, what);
	fn->err = -ENOTSUP;
	return -ENOTSUP;
}

/* ------------------------------------------------------------- decoding */

/* The GOT word a PLT entry jumps through ([endbr64] [bnd] jmp *slot(%rip)). */
static uintptr_t plt_slot(uintptr_t target)
{
	struct watch_x86_flow f;
	for (int k = 0; k < 2; k++) {
		uintptr_t end = watch_codemap_code_end(target);
		if (!end || watch_x86_flow((const uint8_t *)target, end - target < 16 ? end - target : 16, target, &f))
			return 0;
		if (f.endbr) {
			target += f.len;
			continue;
		}
		return f.kind == WATCH_X86_FLOW_JMP_INDIRECT ? f.slot : 0;
	}
	return 0;
}

static uint8_t call_kind(const struct watch_x86_flow *f)
{
	uintptr_t slot = f->slot;
	if (f->kind == WATCH_X86_FLOW_CALL || f->kind == WATCH_X86_FLOW_JMP) {
		for (unsigned i = 0; i < nhook_fn; i++)
			if (f->target == hook_fn[i])
				return BL_CALL_HOOK;
		if (f->target == no_return_fn)
			return BL_CALL_NO_RETURN_MARK;
		slot = plt_slot(f->target);
	}
	if (!slot)
		return BL_CALL_OTHER;
	switch (watch_codemap_import(slot)) {
	case WATCH_IMPORT_TRACE_PC: return BL_CALL_HOOK;
	case WATCH_IMPORT_NO_RETURN: return BL_CALL_NO_RETURN_MARK;
	case WATCH_IMPORT_NORETURN_FN: return BL_CALL_NORETURN;
	default: return BL_CALL_OTHER;
	}
}

static int in_fn(const struct bl_fn *fn, uintptr_t a)
{
	for (unsigned i = 0; i < fn->nfde; i++)
		if (a >= fn->fde[i].lo && a < fn->fde[i].hi)
			return 1;
	return 0;
}

/* Where a jump to target outside the analysed FDEs goes: 0 out of the
 * function (a tail call: to a function's entry, or to code without unwind
 * information, the PLT), 1 into a cold part, added to fn. */
static int outside_jump(struct bl_fn *fn, uintptr_t target, uintptr_t at)
{
	struct watch_code_fn other;
	if (watch_codemap_fn_at(target, &other) != 0)
		return 0;
	if (target == other.lo && !other.fragment)
		return 0;
	if (!other.fragment)
		return refuse(fn, "the jump at %#lx goes into the middle of another function", at);
	if (fn->nfde >= BL_MAX_FDE)
		return refuse(fn, "too many cold parts (the jump at %#lx)", at);
	fn->fde[fn->nfde++] = other;
	return 1;
}

static int decode_fde(struct bl_fn *fn, unsigned fi, struct bl_insn **v, uint32_t *n, uint32_t *cap)
{
	const struct watch_code_fn *d = &fn->fde[fi];
	uintptr_t seg_end = watch_codemap_code_end(d->lo);
	int marker = 0;

	if (!seg_end || seg_end < d->hi)
		return refuse(fn, "its unwind information does not describe code at %#lx", d->lo);
	for (uintptr_t pc = d->lo; pc < d->hi;) {
		struct watch_x86_flow f;
		size_t avail = d->hi - pc < 15 ? d->hi - pc : 15;
		if (watch_x86_flow((const uint8_t *)pc, avail, pc, &f) != 0)
			return refuse(fn, "the bytes at %#lx do not decode", pc);
		if (*n == *cap) {
			uint32_t c = *cap ? 2 * *cap : 256;
			struct bl_insn *m = realloc(*v, c * sizeof *m);
			if (!m)
				return -ENOMEM;
			*v = m;
			*cap = c;
		}
		struct bl_insn *in = &(*v)[(*n)++];
		memset(in, 0, sizeof *in);
		in->pc = pc;
		in->len = (uint8_t)f.len;
		in->kind = f.kind;
		in->target = f.target;
		in->sp = f.sp;
		in->rbp = f.rbp;
		in->sp_arg = (int32_t)f.sp_arg;
		in->rbp_arg = (int32_t)f.rbp_arg;
		in->depth = BL_DEPTH_UNKNOWN;
		if ((f.kind == WATCH_X86_FLOW_JMP && !in_fn(fn, f.target)) || f.kind == WATCH_X86_FLOW_JMP_INDIRECT) {
			/* A tail call of the hook ends the function where the hook sees it. */
			if (call_kind(&f) == BL_CALL_HOOK)
				in->call = BL_CALL_HOOK;
			marker = 0;
		} else if (f.kind == WATCH_X86_FLOW_CALL || f.kind == WATCH_X86_FLOW_CALL_INDIRECT) {
			in->call = call_kind(&f);
			if (in->call == BL_CALL_NO_RETURN_MARK) {
				marker = 1;
			} else if (in->call == BL_CALL_NORETURN || (marker && in->call == BL_CALL_OTHER)) {
				in->noreturn = 1;
				marker = 0;
			}
		} else if (f.kind != WATCH_X86_FLOW_NEXT) {
			marker = 0;
		}
		if ((f.kind == WATCH_X86_FLOW_JMP || f.kind == WATCH_X86_FLOW_JCC) && !in_fn(fn, f.target) &&
		    in->call != BL_CALL_HOOK) {
			int r = outside_jump(fn, f.target, pc);
			if (r < 0)
				return r;
		}
		pc += f.len;
	}
	return 0;
}

static int cmp_insn(const void *a, const void *b)
{
	const struct bl_insn *x = a, *y = b;
	return (x->pc > y->pc) - (x->pc < y->pc);
}

static int32_t find_insn(const struct bl_fn *fn, uintptr_t pc)
{
	uint32_t lo = 0, hi = fn->ninsn;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (fn->insn[mid].pc < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < fn->ninsn && fn->insn[lo].pc == pc ? (int32_t)lo : -1;
}

/* ------------------------------------------------------------- pieces */

static int ends_piece(const struct bl_insn *in)
{
	return in->kind == WATCH_X86_FLOW_JCC || in->kind == WATCH_X86_FLOW_JMP ||
	       in->kind == WATCH_X86_FLOW_JMP_INDIRECT || in->kind == WATCH_X86_FLOW_RET ||
	       in->kind == WATCH_X86_FLOW_STOP || in->noreturn;
}

static int is_jump(const struct bl_insn *in)
{
	return in->kind == WATCH_X86_FLOW_JMP || in->kind == WATCH_X86_FLOW_JMP_INDIRECT;
}

static int contiguous(const struct bl_fn *fn, uint32_t i)
{
	return i + 1 < fn->ninsn && fn->insn[i + 1].pc == fn->insn[i].pc + fn->insn[i].len;
}

/* The piece a direct jump at instruction i goes to, or BL_LEAVE. */
static int32_t jump_piece(const struct bl_fn *fn, const int32_t *piece_of, uint32_t i)
{
	int32_t t = in_fn(fn, fn->insn[i].target) ? find_insn(fn, fn->insn[i].target) : -1;
	return t < 0 ? BL_LEAVE : piece_of[t];
}

static int make_pieces(struct bl_fn *fn)
{
	uint8_t *leader = calloc(fn->ninsn ? fn->ninsn : 1, 1);
	int32_t *piece_of = malloc((fn->ninsn ? fn->ninsn : 1) * sizeof *piece_of);
	int err = 0;

	if (!leader || !piece_of) {
		err = -ENOMEM;
		goto out;
	}
	for (unsigned k = 0; k < fn->nfde; k++) {
		int32_t e = find_insn(fn, fn->fde[k].lo);
		if (e >= 0)
			leader[e] = 1;
	}
	for (uint32_t i = 0; i < fn->ninsn && !err; i++) {
		const struct bl_insn *in = &fn->insn[i];
		if ((in->kind == WATCH_X86_FLOW_JMP || in->kind == WATCH_X86_FLOW_JCC) && in_fn(fn, in->target)) {
			int32_t t = find_insn(fn, in->target);
			if (t < 0)
				err = refuse(fn, "the jump at %#lx goes into the middle of an instruction", in->pc);
			else
				leader[t] = 1;
		}
		if ((ends_piece(in) || !contiguous(fn, i)) && i + 1 < fn->ninsn)
			leader[i + 1] = 1;
	}
	if (err)
		goto out;
	fn->npiece = 0;
	for (uint32_t i = 0; i < fn->ninsn; i++)
		fn->npiece += leader[i] || i == 0;
	fn->piece = calloc(fn->npiece ? fn->npiece : 1, sizeof *fn->piece);
	if (!fn->piece) {
		err = -ENOMEM;
		goto out;
	}
	int32_t p = -1;
	for (uint32_t i = 0; i < fn->ninsn; i++) {
		if (leader[i] || i == 0) {
			p++;
			fn->piece[p].first = i;
			fn->piece[p].hook = -1;
			fn->piece[p].owner = -1;
		}
		fn->piece[p].end = i + 1;
		piece_of[i] = p;
		if (fn->insn[i].call == BL_CALL_HOOK && fn->piece[p].hook < 0 && !is_jump(&fn->insn[i]))
			fn->piece[p].hook = (int32_t)i;
	}
	int32_t e0 = find_insn(fn, fn->fde[0].lo);
	fn->entry = e0 >= 0 ? piece_of[e0] : 0;
	for (uint32_t q = 0; q < fn->npiece; q++) {
		struct bl_piece *pc = &fn->piece[q];
		uint32_t last = pc->end - 1;
		const struct bl_insn *in = &fn->insn[last];
		int32_t next = contiguous(fn, last) ? piece_of[last + 1] : BL_TRAP;
		if (in->noreturn || in->kind == WATCH_X86_FLOW_STOP) {
			pc->succ[pc->nsucc++] = BL_TRAP;
		} else if (is_jump(in) && in->call == BL_CALL_HOOK) {
			pc->succ[pc->nsucc++] = BL_LEAVE_HOOK;
		} else if (in->kind == WATCH_X86_FLOW_RET || in->kind == WATCH_X86_FLOW_JMP_INDIRECT) {
			pc->succ[pc->nsucc++] = BL_LEAVE;
		} else if (in->kind == WATCH_X86_FLOW_JMP) {
			pc->succ[pc->nsucc++] = jump_piece(fn, piece_of, last);
		} else if (in->kind == WATCH_X86_FLOW_JCC) {
			pc->succ[pc->nsucc++] = jump_piece(fn, piece_of, last);
			pc->succ[pc->nsucc++] = next;
		} else {
			pc->succ[pc->nsucc++] = next;   /* falling off the end of the FDE: cannot happen, taken as a stop */
		}
	}
out:
	free(leader);
	free(piece_of);
	return err;
}

/* ------------------------------------------------------------- the stack */

struct bl_sp {
	int32_t d, r;   /* depth of %rsp and of %rbp, or BL_DEPTH_UNKNOWN */
	uint8_t set;
};

static int32_t known(int32_t a, int64_t delta)
{
	return a == BL_DEPTH_UNKNOWN ? BL_DEPTH_UNKNOWN : (int32_t)(a - delta);
}

/* Stack depth at every reachable instruction: the hook's CFA plus the depth
 * of its call site gives the function's CFA, which names an activation
 * (watch_blocks.c).  Depth counts bytes pushed since the entry. */
static int stack_depths(struct bl_fn *fn)
{
	struct bl_sp *in = calloc(fn->npiece, sizeof *in);
	uint32_t *work = malloc(fn->npiece * sizeof *work), nwork = 0;
	uint8_t *queued = calloc(fn->npiece, 1);
	if (!in || !work || !queued) {
		free(in);
		free(work);
		free(queued);
		return -ENOMEM;
	}
	in[fn->entry] = (struct bl_sp){ 0, BL_DEPTH_UNKNOWN, 1 };
	fn->piece[fn->entry].reach = 1;
	work[nwork++] = (uint32_t)fn->entry;
	queued[fn->entry] = 1;
	while (nwork) {
		uint32_t q = work[--nwork];
		queued[q] = 0;
		struct bl_piece *p = &fn->piece[q];
		int32_t d = in[q].d, r = in[q].r;
		for (uint32_t i = p->first; i < p->end; i++) {
			struct bl_insn *x = &fn->insn[i];
			x->depth = d;
			switch (x->sp) {
			case WATCH_X86_SP_ADD: d = known(d, x->sp_arg); break;
			case WATCH_X86_SP_FROM_RBP: d = known(r, x->sp_arg); break;
			case WATCH_X86_SP_LEAVE: d = known(r, 8); break;
			case WATCH_X86_SP_UNKNOWN: d = BL_DEPTH_UNKNOWN; break;
			default: break;
			}
			if (x->rbp == WATCH_X86_RBP_FROM_SP)
				r = known(x->depth, x->rbp_arg);
			else if (x->rbp == WATCH_X86_RBP_OTHER)
				r = BL_DEPTH_UNKNOWN;
		}
		for (unsigned k = 0; k < p->nsucc; k++) {
			int32_t s = p->succ[k];
			if (s < 0)
				continue;
			struct bl_sp *t = &in[s];
			int changed = 0;
			if (!t->set) {
				*t = (struct bl_sp){ d, r, 1 };
				fn->piece[s].reach = 1;
				changed = 1;
			} else {
				/* Unknown is final: each piece changes at most three times. */
				if (t->d != d && t->d != BL_DEPTH_UNKNOWN) {
					t->d = BL_DEPTH_UNKNOWN;
					changed = 1;
				}
				if (t->r != r && t->r != BL_DEPTH_UNKNOWN) {
					t->r = BL_DEPTH_UNKNOWN;
					changed = 1;
				}
			}
			if (changed && !queued[s]) {
				queued[s] = 1;
				work[nwork++] = (uint32_t)s;
			}
		}
	}
	free(in);
	free(work);
	free(queued);
	return 0;
}

/* Leaving the function other than by ret must find the frame gone (a tail
 * call); an indirect jump inside it is a jump table. */
static int check_exits(struct bl_fn *fn)
{
	for (uint32_t q = 0; q < fn->npiece; q++) {
		const struct bl_piece *p = &fn->piece[q];
		if (!p->reach)
			continue;
		const struct bl_insn *x = &fn->insn[p->end - 1];
		int leaves = 0;
		for (unsigned k = 0; k < p->nsucc; k++)
			leaves |= p->succ[k] == BL_LEAVE || p->succ[k] == BL_LEAVE_HOOK;
		if (!leaves || x->kind == WATCH_X86_FLOW_RET || x->depth == 0)
			continue;
		if (x->kind == WATCH_X86_FLOW_JMP_INDIRECT)
			return refuse(fn, "an indirect jump at %#lx inside its frame (a switch's jump table?)", x->pc);
		return refuse(fn, "the jump at %#lx leaves the function with its frame in place", x->pc);
	}
	return 0;
}

/* ------------------------------------------------------------- groups */

static void glue(struct bl_fn *fn)
{
	uint32_t *npred = calloc(fn->npiece, sizeof *npred);
	int32_t *pred = malloc(fn->npiece * sizeof *pred);
	if (!npred || !pred)
		goto out;
	for (uint32_t q = 0; q < fn->npiece; q++) {
		const struct bl_piece *p = &fn->piece[q];
		if (!p->reach)
			continue;
		if (p->hook >= 0)
			fn->piece[q].owner = (int32_t)q;
		for (unsigned k = 0; k < p->nsucc; k++)
			if (p->succ[k] >= 0) {
				npred[p->succ[k]]++;
				pred[p->succ[k]] = (int32_t)q;
			}
	}
	for (int changed = 1; changed;) {
		changed = 0;
		for (uint32_t q = 0; q < fn->npiece; q++) {
			struct bl_piece *p = &fn->piece[q];
			if (!p->reach || p->owner >= 0 || npred[q] != 1)
				continue;
			const struct bl_piece *from = &fn->piece[pred[q]];
			if (from->nsucc == 1 && from->owner >= 0) {
				p->owner = from->owner;
				changed = 1;
			}
		}
	}
out:
	free(npred);
	free(pred);
}

struct path_buf {
	struct bl_path *path;
	uint32_t npath, cappath;
	int32_t *piece;
	uint32_t npiece, cappiece;
};

static int add_path(struct path_buf *b, int32_t exit, const int32_t *on, uint32_t n)
{
	if (b->npath == b->cappath) {
		uint32_t c = b->cappath ? 2 * b->cappath : 64;
		struct bl_path *m = realloc(b->path, c * sizeof *m);
		if (!m)
			return -ENOMEM;
		b->path = m;
		b->cappath = c;
	}
	while (b->npiece + n > b->cappiece) {
		uint32_t c = b->cappiece ? 2 * b->cappiece : 256;
		int32_t *m = realloc(b->piece, c * sizeof *m);
		if (!m)
			return -ENOMEM;
		b->piece = m;
		b->cappiece = c;
	}
	/* An empty path (n = 0) comes with on = NULL, and piece is still NULL
	 * when the first paths are empty: memcpy's arguments must not be NULL
	 * even for 0 bytes (UBSan's nonnull-attribute, test_blocks under make
	 * check-sanitize: 6 reports). */
	if (n)
		memcpy(b->piece + b->npiece, on, n * sizeof *on);
	b->path[b->npath++] = (struct bl_path){ exit, b->npiece, n };
	b->npiece += n;
	return 0;
}

/* Every path from piece `from` (an orphan) through orphans to the next
 * hooked piece, out of the function, or to a stop. */
static int orphan_paths(struct bl_fn *fn, struct path_buf *b, int32_t from, uint32_t *count)
{
	int32_t on[BL_MAX_PATH_LEN];
	uint8_t next[BL_MAX_PATH_LEN];
	uint32_t depth = 0;

	on[0] = from;
	next[0] = 0;
	depth = 1;
	while (depth) {
		const struct bl_piece *p = &fn->piece[on[depth - 1]];
		if (next[depth - 1] >= p->nsucc) {
			depth--;
			continue;
		}
		int32_t s = p->succ[next[depth - 1]++];
		if (s < 0 || fn->piece[s].hook >= 0) {
			if (++*count > BL_MAX_PATHS)
				return refuse(fn, "too many paths without a block hook after %#lx", fn->insn[fn->piece[from].first].pc);
			int err = add_path(b, s, on, depth);
			if (err)
				return err;
			continue;
		}
		for (uint32_t k = 0; k < depth; k++)
			if (on[k] == s)
				return refuse(fn, "a loop with no block hook at %#lx", fn->insn[fn->piece[s].first].pc);
		if (depth == BL_MAX_PATH_LEN)
			return refuse(fn, "a path of too many blocks without a hook after %#lx", fn->insn[fn->piece[from].first].pc);
		on[depth] = s;
		next[depth] = 0;
		depth++;
	}
	return 0;
}

static int make_groups(struct bl_fn *fn)
{
	struct path_buf b = { 0 };
	int err = 0;

	fn->ngroup = 0;
	for (uint32_t q = 0; q < fn->npiece; q++)
		fn->ngroup += fn->piece[q].reach && fn->piece[q].hook >= 0;
	fn->group = calloc(fn->ngroup ? fn->ngroup : 1, sizeof *fn->group);
	fn->member = malloc((fn->npiece ? fn->npiece : 1) * sizeof *fn->member);
	if (!fn->group || !fn->member)
		return -ENOMEM;
	/* Members by owner: counted, then placed. */
	uint32_t *start = calloc(fn->npiece + 1, sizeof *start);
	if (!start)
		return -ENOMEM;
	for (uint32_t m = 0; m < fn->npiece; m++)
		if (fn->piece[m].reach && fn->piece[m].owner >= 0)
			start[fn->piece[m].owner + 1]++;
	for (uint32_t q = 0; q < fn->npiece; q++)
		start[q + 1] += start[q];
	for (uint32_t m = 0; m < fn->npiece; m++)
		if (fn->piece[m].reach && fn->piece[m].owner >= 0)
			fn->member[start[fn->piece[m].owner]++] = (int32_t)m;
	/* start[q] is now the end of q's members, start[q - 1] their beginning. */
	uint32_t g = 0;
	for (uint32_t q = 0; q < fn->npiece && !err; q++) {
		if (!fn->piece[q].reach || fn->piece[q].hook < 0)
			continue;
		struct bl_group *gr = &fn->group[g++];
		uint32_t nm = start[q];
		gr->piece = (int32_t)q;
		gr->first_member = q ? start[q - 1] : 0;
		gr->nmember = nm - gr->first_member;
		gr->first_path = b.npath;
		uint32_t count = 0;
		for (uint32_t k = gr->first_member; k < nm && !err; k++) {
			const struct bl_piece *p = &fn->piece[fn->member[k]];
			for (unsigned j = 0; j < p->nsucc && !err; j++) {
				int32_t s = p->succ[j];
				if (s >= 0 && fn->piece[s].hook < 0 && fn->piece[s].owner == (int32_t)q)
					continue;   /* glued to this group */
				if (s < 0 || fn->piece[s].hook >= 0) {
					err = ++count > BL_MAX_PATHS ? refuse(fn, "too many ways out of the block at %#lx",
					                                      fn->insn[fn->piece[q].first].pc)
					                             : add_path(&b, s, NULL, 0);
				} else {
					err = orphan_paths(fn, &b, s, &count);
				}
			}
		}
		gr->npath = b.npath - gr->first_path;
	}
	free(start);
	fn->path = b.path;
	fn->npath = b.npath;
	fn->path_piece = b.piece;
	return err;
}

/* ------------------------------------------------------------- analysis */

static int analyse(struct bl_fn *fn)
{
	uint32_t cap = 0;
	int err = 0;

	if (fn->fde[0].fragment)
		return refuse(fn, "the code at %#lx is the cold part of a function outside the range (count the "
		              "function's hot part with it)", fn->fde[0].lo);
	for (unsigned k = 0; k < fn->nfde && !err; k++)
		err = decode_fde(fn, k, &fn->insn, &fn->ninsn, &cap);
	if (err)
		return err;
	if (!fn->ninsn)
		return refuse(fn, "no instructions at %#lx", fn->fde[0].lo);
	int hooks = 0;
	for (uint32_t i = 0; i < fn->ninsn && !hooks; i++)
		hooks = fn->insn[i].call == BL_CALL_HOOK;
	if (!hooks)
		return refuse(fn, "no block hook is called in the code at %#lx: it was not built with the instrument "
		              "flags' -fsanitize-coverage=trace-pc", fn->fde[0].lo);
	qsort(fn->insn, fn->ninsn, sizeof *fn->insn, cmp_insn);
	if ((err = make_pieces(fn)) || (err = stack_depths(fn)) || (err = check_exits(fn)))
		return err;
	if (fn->piece[fn->entry].hook < 0)
		return refuse(fn, "its entry block at %#lx has no hook before the first branch (no block hooks in "
		              "it, or a branch back into it)", fn->fde[0].lo);
	glue(fn);
	return make_groups(fn);
}

/* FNV-1a over the FDEs' code: a library unloaded and another loaded at its
 * address, or code rewritten in place, is analysed again. */
static uint64_t code_hash(const struct bl_fn *fn)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (unsigned k = 0; k < fn->nfde; k++)
		for (const uint8_t *p = (const uint8_t *)fn->fde[k].lo; p < (const uint8_t *)fn->fde[k].hi; p++)
			h = (h ^ *p) * 0x100000001b3ull;
	return h;
}

const struct bl_fn *bl_function(const struct watch_code_fn *fde)
{
	for (struct bl_fn **pp = &cache; *pp; pp = &(*pp)->next) {
		struct bl_fn *f = *pp;
		for (unsigned k = 0; k < f->nfde; k++) {
			if (f->fde[k].lo != fde->lo)
				continue;
			int mapped = 1;
			for (unsigned j = 0; j < f->nfde && mapped; j++) {
				struct watch_code_fn now;
				mapped = watch_codemap_fn_at(f->fde[j].lo, &now) == 0 && now.lo == f->fde[j].lo &&
				         now.hi == f->fde[j].hi;
			}
			if (mapped && code_hash(f) == f->code_hash)
				return f;
			*pp = f->next;   /* stale: dropped, not freed (the plan being built may hold it) */
			goto analyse;
		}
	}
analyse:;
	struct bl_fn *fn = calloc(1, sizeof *fn);
	if (!fn)
		return NULL;
	fn->id = next_id++;
	fn->nfde = 1;
	fn->fde[0] = *fde;
	int err = analyse(fn);
	if (err == -ENOMEM) {
		free(fn->insn);
		free(fn->piece);
		free(fn->group);
		free(fn->member);
		free(fn->path);
		free(fn->path_piece);
		free(fn);
		return NULL;
	}
	if (err && !fn->err) {
		fn->err = err;
		snprintf(fn->why, sizeof fn->why, "the function at %#lx cannot be analysed (%s)", (unsigned long)fde->lo,
		         strerror(-err));
	}
	fn->code_hash = code_hash(fn);
	fn->next = cache;
	cache = fn;
	return fn;
}
