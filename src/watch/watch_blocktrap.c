/*
 * The block-trap backend: executed instructions in code ranges of code that
 * was not built with the block hooks, one trap per basic block instead of one
 * per instruction.
 *
 * Why: the page-trap backend single-steps every instruction of a code range
 * (a trap each): measured 14.5 us per instruction on this project's machine
 * (Intel family 6 model 167 guest), about 150,000x native on a 9-instruction
 * loop.  An int3 and its SIGTRAP round trip cost about 1.3 us there, so one
 * trap per block of n instructions costs about 1.3/n us per instruction.
 * Measured with bench/blocktrap_bench (a 9-instruction loop, one block per
 * iteration, median of 5 or 7 runs each, other builds loading both CPUs):
 * 167 to 316 ns per counted instruction in five runs, against 24 to 37 us
 * stepped by pagetrap in the same runs: 83 to 223 times cheaper (median
 * 103).  A block costs
 * what a bare int3 and empty SIGTRAP handler cost alongside (1.5-3.8 us):
 * the engine and the count add little.
 *
 * How:
 *   - At start, the functions overlapping the ranges are found from the
 *     unwind tables (watch_codemap.h: .eh_frame_hdr's FDEs), with the cold
 *     parts their jumps go into, and decoded with capstone (watch_x86_flow).
 *     Leaders are the FDEs' entries, the targets of direct jumps and calls,
 *     and every instruction after a control transfer (a jcc's fall-through,
 *     a call's return address, whatever follows a jmp or ret).  A piece runs
 *     from a leader to the next leader or through the next control transfer;
 *     entered only at its leader, it runs whole.  Each piece with an
 *     instruction in a range (ranges may start or end inside it; a piece
 *     whose leader lies before the range and runs into it counts too) gets
 *     an int3 at its leader, written through /proc/self/mem, so the process
 *     gets private copies of those code pages (the file is never touched).
 *   - The trap (SIGTRAP, si_code SI_KERNEL, RIP one past a leader of ours)
 *     adds, for each running session of the trapping thread, the piece's
 *     instructions in each of its pairs (insns_pair[k], and insns once
 *     however many pairs hold one).  Other threads are resumed the same way
 *     without counting.  The displaced instruction then runs out of line (as
 *     uprobes does): a copy in a slot of its own, in a page mapped within
 *     1 GiB of the code, its RIP-relative displacement re-based, followed by
 *     a jmp back; or, when it is a control transfer (jmp, jcc, call, ret,
 *     jrcxz, loop, direct or indirect), it is emulated on the ucontext
 *     (watch_x86_xol_transfer).  Slots are made once per leader and kept for
 *     the process's life, so a thread that trapped on an int3 just restored
 *     still resumes correctly, and no slot is ever shared between threads in
 *     a way that needs a lock.
 *   - At stop the original byte goes back once no running session needs
 *     the leader.  fork()ed children inherit the patches and the handler and
 *     count nothing (no session of theirs).
 *
 * What it counts, as the page-trap backend: every instruction executed with
 * its address in a range, once (a rep string instruction once), on the
 * counting thread only.  ud2, hlt and int3 do not complete and are not
 * counted.  The piece is counted when it is entered, so a read from a signal
 * handler that interrupted it sees its instructions already, and a piece
 * left in its middle by a fault whose handler does not return to it
 * (siglongjmp out of a SIGSEGV handler) has been counted whole.
 *
 * Refused in fits(), with the reason, so that auto falls back to page-trap
 * stepping (no part of a range is stepped here): data ranges and the IBR+DBR
 * combination (data accesses by in-range code), code in a range without
 * unwind information (other than the padding between functions), a jump
 * into the middle of an instruction or of another function, a cold part
 * (foo.cold) in a range whose function is not, code the trap runs through
 * (libpapi's own; the C library's, whose __restore_rt every handler returns
 * through; the loader's, the vDSO's), a leader whose instruction cannot run
 * out of line (far transfers, xbegin), and no room for the slots within
 * reach of the code, exception tables (.gcc_except_table) not understood,
 * a thread with a CET shadow stack (the emulated calls and returns would
 * not update it).
 * Landing pads (where the unwinder enters a function: C++ catch and
 * cleanup code, -fexceptions C's cleanup attribute, pthread_cancel) are
 * leaders, read from each FDE's LSDA.
 *
 * Jump tables (an indirect jump other than a tail call through a GOT word):
 * their targets are not known, so the jump itself is a leader with a trap;
 * the trap emulates it, and when the target is not a leader it counts the
 * rest of the block holding the target (found by looking back for its
 * leader, at most 1 KiB: longer blocks in such a function are refused).
 *
 * Signals: the trap is handled in the signal engine's handler and returns
 * to the program with its own mask, so asynchronous signals (SIGTERM,
 * SIGINT) are delivered at once, and the program's handlers run; nothing is
 * held across traps.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "watch/watch.h"
#include "watch/watch_blocktrap.h"
#include "watch/watch_codemap.h"
#include "watch/watch_signal.h"
#include "watch/watch_sys.h"
#include "watch/watch_x86.h"

#ifndef ARCH_SHSTK_STATUS
#define ARCH_SHSTK_STATUS 0x5005
#endif
#ifndef ARCH_SHSTK_SHSTK
#define ARCH_SHSTK_SHSTK (1ul << 0)
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define BT_MAX_SESSIONS 64
#define BT_TABLE_BITS 17                    /* leaders ever planned: 131072 */
#define BT_TABLE_SIZE (1u << BT_TABLE_BITS)
#define BT_OFF_MAX (1u << 22)               /* counted instructions of all planned pieces */
#define BT_MAX_AREAS 64
#define BT_AREA_BYTES ((uintptr_t)256 << 10) /* 8192 slots */
#define BT_REACH ((uintptr_t)1 << 30)        /* slots this close to the code: rel32 reaches with room */
#define BT_MAX_FNS 4096
/* The longest block a jump table's target may lie in: the trap looks for
 * its leader this far back, a hash lookup per byte (about 5 ns each). */
#define BT_BACK_MAX 1024

/* One leader, planned once and kept: the int3 may be written and restored
 * many times, the slot stays. */
struct bt_entry {
	_Atomic uintptr_t pc;  /* 0: free; published last */
	uintptr_t slot;        /* COPY: where the displaced instruction runs */
	struct watch_x86_xol xol;
	uint32_t bytes, first, ninsn;
	uint8_t orig;          /* the byte the int3 replaced */
	uint8_t ijmp;          /* a jump table's jump: its target's block is counted from the target */
	int refs;              /* running sessions that need the int3 (under bt_lock) */
};

struct bt_slot {
	_Atomic int used;
	int tid;
	unsigned ncode;
	struct watch_interval code[WATCH_CODE_PAIRS];
	struct watch_counts counts; /* written by the owner's handler only */
};

/* What a session armed, for its stop. */
struct bt_session {
	struct bt_slot *slot;
	uint32_t *entry;
	uint32_t nentry;
};

struct bt_area {
	uintptr_t lo, hi, used;
};

static struct {
	struct bt_slot slots[BT_MAX_SESSIONS];
	struct bt_entry *table;   /* BT_TABLE_SIZE, mmap'd */
	uint16_t *off;            /* BT_OFF_MAX */
	_Atomic uint32_t noff;
	uint32_t nentries;
	struct bt_area area[BT_MAX_AREAS];
	unsigned narea;
	int ready;
	_Atomic uint64_t traps, counted, emulated;
} bt;

static pthread_mutex_t bt_lock = PTHREAD_MUTEX_INITIALIZER;

/* The main program's object: dladdr of a symbol it defines (the weak
 * reference is null when it defines none, then libheritage is shared). */
extern int main(int, char **) __attribute__((weak));
#define main_marker main

/* The codepatch probe's routine (watch_probe.c): a loop, so that the probe sees a trap
 * run out of line (mov, dec) and emulated ones (the jnz is not a leader, the
 * ret is): 1 + 2 * 4 + 1 = 10 instructions a call in 3 blocks, 6 traps.  With unwind
 * information, which the backend needs to find its blocks. */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl watch_probe_blocks\n"
        ".hidden watch_probe_blocks\n"
        ".type watch_probe_blocks, @function\n"
        "watch_probe_blocks:\n"
        "\t.cfi_startproc\n"
        "\tmov $4, %ecx\n"
        "1:\tdec %ecx\n"
        "\tjnz 1b\n"
        "\tret\n"
        "\t.cfi_endproc\n"
        ".globl watch_probe_blocks_end\n"
        ".hidden watch_probe_blocks_end\n"
        "watch_probe_blocks_end:\n"
        ".size watch_probe_blocks, . - watch_probe_blocks\n");

/* ------------------------------------------------------------- analysis */

static struct bt_entry *bt_lookup(uintptr_t pc);

/* The code's own bytes at pc: the int3s other sessions wrote read as the
 * bytes they replaced (the analysis must not see them). */
static const uint8_t *read_code(uintptr_t pc, size_t n, uint8_t *buf)
{
	memcpy(buf, (const void *)pc, n);
	if (bt.nentries == 0)
		return buf;
	for (size_t i = 0; i < n; i++) {
		if (buf[i] != 0xcc)
			continue;
		const struct bt_entry *e = bt_lookup(pc + i);
		if (e)
			buf[i] = e->orig;
	}
	return buf;
}

struct an_insn {
	uintptr_t pc, target;
	uint8_t len, kind;
	uint8_t leader;
	uint8_t ijmp;  /* an indirect jump that is not a tail call through a GOT word */
};

struct an {
	struct watch_code_fn fn[BT_MAX_FNS];
	uint8_t entered[BT_MAX_FNS]; /* a jump of an analysed function goes into it */
	unsigned nfn;
	int has_ijmp;
	struct an_insn *insn;
	uint32_t ninsn, cap;
	char *why;
	size_t len;
};

static int an_refuse(struct an *a, const char *fmt, uintptr_t at)
{
	char what[200];
	snprintf(what, sizeof what, fmt, (unsigned long)at);
	snprintf(a->why, a->len, "blocktrap: %s", what);
	return -ENOTSUP;
}

static int an_fn_index(const struct an *a, uintptr_t pc)
{
	for (unsigned i = 0; i < a->nfn; i++)
		if (pc >= a->fn[i].lo && pc < a->fn[i].hi)
			return (int)i;
	return -1;
}

static int an_add_fn(struct an *a, const struct watch_code_fn *fn)
{
	for (unsigned i = 0; i < a->nfn; i++)
		if (a->fn[i].lo == fn->lo)
			return (int)i;
	if (a->nfn >= BT_MAX_FNS)
		return an_refuse(a, "the ranges hold more than 4096 functions (at %#lx)", fn->lo);
	a->fn[a->nfn] = *fn;
	a->entered[a->nfn] = 0;
	return (int)a->nfn++;
}

static enum watch_claim bt_trap(struct watch_signal_event *ev, void *arg);

/* Code the trap itself runs: an int3 there would trap in the handler.  The
 * whole shared object that holds this backend (libpapi.so), or, linked into
 * the program, the trap's own functions. */
static int is_own_code(const struct watch_code_fn *fn)
{
	Dl_info self, other;
	if (fn->lo == (uintptr_t)watch_probe_blocks)
		return 0;
	if (dladdr((void *)(uintptr_t)bt_trap, &self) && dladdr((void *)fn->lo, &other) &&
	    self.dli_fbase == other.dli_fbase) {
		Dl_info prog;
		if (!dladdr((void *)(uintptr_t)main_marker, &prog) || prog.dli_fbase != self.dli_fbase)
			return 1;
	}
	/* The C library (the handler returns through its __restore_rt), the
	 * loader, the vDSO: as the page-trap backend refuses them. */
	if (dladdr((void *)fn->lo, &other) && other.dli_fname && watch_codemap_runtime_object(other.dli_fname))
		return 1;
	const uintptr_t own[] = { (uintptr_t)bt_trap, (uintptr_t)watch_x86_xol_transfer,
		                  (uintptr_t)watch_x86_cc_holds, (uintptr_t)watch_signal_mem_fd };
	for (unsigned i = 0; i < sizeof own / sizeof own[0]; i++)
		if (own[i] >= fn->lo && own[i] < fn->hi)
			return 1;
	return 0;
}

static int walk_cb(void *arg, const struct watch_code_fn *fn, uintptr_t lo, uintptr_t hi)
{
	struct an *a = arg;
	if (fn && is_own_code(fn))
		return an_refuse(a, "the range holds code that its traps run through (libpapi's, the C library's, the "
		                 "loader's or the vDSO's, at %#lx)", fn->lo);
	if (fn)
		return an_add_fn(a, fn) < 0 ? -ENOTSUP : 0;
	/* Bytes no FDE covers: only the padding between functions may be there
	 * (nops, int3; gas pads a large .balign with a jmp over the nops). */
	for (uintptr_t pc = lo; pc < hi;) {
		struct watch_x86_flow f;
		uint8_t buf[15];
		size_t avail = hi - pc < 15 ? hi - pc : 15;
		int ok = watch_x86_flow(read_code(pc, avail, buf), avail, pc, &f) == 0;
		if (ok && pc == lo && f.kind == WATCH_X86_FLOW_JMP && f.target == hi)
			f.pad = 1;
		if (!ok || !f.pad)
			return an_refuse(a, "the code at %#lx has no unwind information (its blocks cannot be known)", pc);
		pc += f.len;
	}
	return 0;
}

static int an_decode(struct an *a, unsigned fi)
{
	const struct watch_code_fn d = a->fn[fi];
	uintptr_t seg_end = watch_codemap_code_end(d.lo);
	if (!seg_end || seg_end < d.hi)
		return an_refuse(a, "the unwind information at %#lx does not describe code", d.lo);
	for (uintptr_t pc = d.lo; pc < d.hi;) {
		struct watch_x86_flow f;
		uint8_t buf[15];
		size_t avail = d.hi - pc < 15 ? d.hi - pc : 15;
		if (watch_x86_flow(read_code(pc, avail, buf), avail, pc, &f) != 0)
			return an_refuse(a, "the bytes at %#lx do not decode", pc);
		if (a->ninsn == a->cap) {
			uint32_t c = a->cap ? 2 * a->cap : 1024;
			struct an_insn *m = realloc(a->insn, c * sizeof *m);
			if (!m)
				return -ENOMEM;
			a->insn = m;
			a->cap = c;
		}
		a->insn[a->ninsn++] = (struct an_insn){ .pc = pc, .target = f.target, .len = (uint8_t)f.len,
		                                        .kind = f.kind };
		if (f.kind == WATCH_X86_FLOW_JMP_INDIRECT && !f.slot) {
			a->insn[a->ninsn - 1].ijmp = 1;
			a->has_ijmp = 1;
		}
		if ((f.kind == WATCH_X86_FLOW_JMP || f.kind == WATCH_X86_FLOW_JCC) && !(f.target >= d.lo && f.target < d.hi)) {
			int t = an_fn_index(a, f.target);
			struct watch_code_fn other;
			if (t < 0 && watch_codemap_fn_at(f.target, &other) == 0) {
				if (other.fragment)
					t = an_add_fn(a, &other); /* a cold part: its jumps back are leaders */
				else if (f.target != other.lo)
					return an_refuse(a, "the jump at %#lx goes into the middle of another function", pc);
				if (t < 0 && other.fragment)
					return -ENOTSUP;
			}
			if (t >= 0)
				a->entered[t] = 1;
		}
		pc += f.len;
	}
	return 0;
}

static int cmp_an_insn(const void *x, const void *y)
{
	const struct an_insn *p = x, *q = y;
	return (p->pc > q->pc) - (p->pc < q->pc);
}

static int32_t an_find(const struct an *a, uintptr_t pc)
{
	uint32_t lo = 0, hi = a->ninsn;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (a->insn[mid].pc < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < a->ninsn && a->insn[lo].pc == pc ? (int32_t)lo : -1;
}

static int in_pairs(const struct watch_interval *pairs, unsigned n, uintptr_t pc)
{
	for (unsigned k = 0; k < n; k++)
		if (pc >= pairs[k].start && pc < pairs[k].end)
			return 1;
	return 0;
}

static int ends_piece(uint8_t kind)
{
	return kind != WATCH_X86_FLOW_NEXT;
}

static int never_completes(uint8_t kind)
{
	return kind == WATCH_X86_FLOW_STOP;
}

int watch_bt_analyse(const struct watch_interval *pairs, unsigned n, struct watch_bt_plan *plan, char *why,
                     size_t len)
{
	struct an *a = calloc(1, sizeof *a);
	int err = 0;
	memset(plan, 0, sizeof *plan);
	if (!a)
		return -ENOMEM;
	a->why = why;
	a->len = len;
	if (watch_x86_init() != 0) {
		snprintf(why, len, "blocktrap: the x86 decoder (capstone) cannot start");
		free(a);
		return -ENOTSUP;
	}
	for (unsigned k = 0; k < n && !err; k++)
		if (pairs[k].end > pairs[k].start)
			err = watch_codemap_walk(pairs[k].start, pairs[k].end, walk_cb, a);
	unsigned in_ranges = a->nfn;
	if (!err && in_ranges == 0)
		err = an_refuse(a, "no loaded code with unwind information in the ranges (the first starts at %#lx)",
		                n ? pairs[0].start : 0);
	/* a->nfn grows as cold parts are found. */
	for (unsigned i = 0; i < a->nfn && !err; i++)
		err = an_decode(a, i);
	for (unsigned i = 0; i < in_ranges && !err; i++)
		if (a->fn[i].fragment && !a->entered[i])
			err = an_refuse(a, "the cold part at %#lx is in a range but the function that jumps into it is "
			                "not: widen the range to that function", a->fn[i].lo);
	if (err)
		goto out;
	qsort(a->insn, a->ninsn, sizeof *a->insn, cmp_an_insn);
	for (unsigned i = 0; i < a->nfn && !err; i++) {
		int32_t e = an_find(a, a->fn[i].lo);
		if (e >= 0)
			a->insn[e].leader = 1;
		/* The unwinder enters a function at its landing pads: leaders too. */
		uintptr_t pad[64];
		int np = watch_codemap_landing_pads(&a->fn[i], pad, 64);
		if (np < 0)
			err = an_refuse(a, "the exception tables of the function at %#lx are not understood", a->fn[i].lo);
		for (int k = 0; k < np && !err; k++) {
			int32_t t = an_find(a, pad[k]);
			if (t < 0)
				err = an_refuse(a, "a landing pad at %#lx is not an instruction of its function", pad[k]);
			else
				a->insn[t].leader = 1;
		}
	}
	if (err)
		goto out;
	for (uint32_t i = 0; i < a->ninsn && !err; i++) {
		const struct an_insn *in = &a->insn[i];
		if ((in->kind == WATCH_X86_FLOW_JMP || in->kind == WATCH_X86_FLOW_JCC ||
		     in->kind == WATCH_X86_FLOW_CALL) && an_fn_index(a, in->target) >= 0) {
			int32_t t = an_find(a, in->target);
			if (t < 0)
				err = an_refuse(a, "the jump or call at %#lx goes into the middle of an instruction", in->pc);
			else
				a->insn[t].leader = 1;
		}
		if (i + 1 < a->ninsn && (ends_piece(in->kind) || a->insn[i + 1].pc != in->pc + in->len))
			a->insn[i + 1].leader = 1;
		/* A jump table's jump traps itself: its targets are not known
		 * here, the trap sees where it goes (bt_trap). */
		if (in->ijmp)
			a->insn[i].leader = 1;
	}
	if (err)
		goto out;
	uint32_t cap_p = 64, cap_o = 256;
	plan->piece = malloc(cap_p * sizeof *plan->piece);
	plan->off = malloc(cap_o * sizeof *plan->off);
	if (!plan->piece || !plan->off) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < a->ninsn;) {
		uint32_t j = i, first = plan->noff;
		uintptr_t lead = a->insn[i].pc;
		int wanted = a->insn[i].ijmp; /* always: its targets may be in a range */
		/* Every instruction of the piece that completes, in a range or not:
		 * the entry is shared by sessions with other ranges, and the trap
		 * counts each session's own. */
		for (;;) {
			const struct an_insn *in = &a->insn[j];
			wanted |= in_pairs(pairs, n, in->pc) && !never_completes(in->kind);
			if (!never_completes(in->kind)) {
				if (in->pc - lead > UINT16_MAX) {
					err = an_refuse(a, "the block at %#lx is longer than 64 KiB", lead);
					goto out;
				}
				if (plan->noff == cap_o) {
					uint16_t *m = realloc(plan->off, 2 * cap_o * sizeof *m);
					if (!m) {
						err = -ENOMEM;
						goto out;
					}
					plan->off = m;
					cap_o *= 2;
				}
				plan->off[plan->noff++] = (uint16_t)(in->pc - lead);
			}
			j++;
			if (ends_piece(in->kind) || j >= a->ninsn || a->insn[j].leader)
				break;
		}
		const struct an_insn *last = &a->insn[j - 1];
		if (a->has_ijmp && last->pc + last->len - lead > BT_BACK_MAX) {
			err = an_refuse(a, "a function in the ranges has an indirect jump (a jump table), and the block at "
			                "%#lx is too long to find a jump's target in it", lead);
			goto out;
		}
		if (!wanted) {
			plan->noff = first;
		} else {
			if (plan->npiece == cap_p) {
				struct watch_bt_piece *m = realloc(plan->piece, 2 * cap_p * sizeof *m);
				if (!m) {
					err = -ENOMEM;
					goto out;
				}
				plan->piece = m;
				cap_p *= 2;
			}
			plan->piece[plan->npiece++] = (struct watch_bt_piece){
				.pc = lead, .bytes = (uint32_t)(last->pc + last->len - lead), .first = first,
				.ninsn = plan->noff - first, .ijmp = a->insn[i].ijmp };
		}
		i = j;
	}
	plan->nfn = a->nfn;
out:
	free(a->insn);
	free(a);
	if (err)
		watch_bt_plan_free(plan);
	return err;
}

void watch_bt_plan_free(struct watch_bt_plan *plan)
{
	free(plan->piece);
	free(plan->off);
	memset(plan, 0, sizeof *plan);
}

/* ------------------------------------------------------------- the trap */

static uint32_t bt_hash(uintptr_t pc)
{
	return (uint32_t)(((uint64_t)pc * 0x9E3779B97F4A7C15ull) >> (64 - BT_TABLE_BITS));
}

static struct bt_entry *bt_lookup(uintptr_t pc)
{
	if (!bt.table)
		return NULL;
	for (uint32_t i = bt_hash(pc), probes = 0; probes < BT_TABLE_SIZE; i = (i + 1) & (BT_TABLE_SIZE - 1), probes++) {
		uintptr_t p = atomic_load_explicit(&bt.table[i].pc, memory_order_acquire);
		if (p == pc)
			return &bt.table[i];
		if (p == 0)
			return NULL;
	}
	return NULL;
}

static void count_piece(int self, const struct bt_entry *e, uintptr_t pc, uint32_t from)
{
	const uint16_t *off = bt.off + e->first;
	int any = 0;
	for (unsigned s = 0; s < BT_MAX_SESSIONS; s++) {
		struct bt_slot *sl = &bt.slots[s];
		if (!atomic_load_explicit(&sl->used, memory_order_acquire) || sl->tid != self)
			continue;
		any = 1;
		for (uint32_t i = 0; i < e->ninsn; i++) {
			if (off[i] < from)
				continue;
			uintptr_t a = pc + off[i];
			int hit = 0;
			for (unsigned k = 0; k < sl->ncode; k++) {
				if (a >= sl->code[k].start && a < sl->code[k].end) {
					sl->counts.insns_pair[k]++;
					hit = 1;
				}
			}
			sl->counts.insns += (uint64_t)hit;
		}
	}
	if (any)
		atomic_fetch_add_explicit(&bt.counted, 1, memory_order_relaxed);
}

static enum watch_claim bt_trap(struct watch_signal_event *ev, void *arg)
{
	(void)arg;
	if (ev->si->si_code != SI_KERNEL)
		return WATCH_NOT_MINE;
	greg_t *g = ev->uc->uc_mcontext.gregs;
	uintptr_t pc = (uintptr_t)g[REG_RIP] - 1;
	struct bt_entry *e = bt_lookup(pc);
	if (!e)
		return WATCH_NOT_MINE;
	atomic_fetch_add_explicit(&bt.traps, 1, memory_order_relaxed);
	count_piece(ev->self, e, pc, 0);
	/* Armed or restored since the trap: resumed the same way, the slot and
	 * the plan being kept. */
	if (e->xol.kind == WATCH_X86_XOL_COPY) {
		g[REG_RIP] = (greg_t)e->slot;
	} else {
		atomic_fetch_add_explicit(&bt.emulated, 1, memory_order_relaxed);
		watch_x86_xol_transfer(&e->xol, pc, ev->uc);
		/* A jump table's jump into the middle of a block: the part of the
		 * block from the target runs (up to the block's end, as it does
		 * from its leader), and no int3 sees it.  A target that is a
		 * leader traps by itself; one in a block no session counts in
		 * finds no entry (or one that does not hold it): nothing. */
		uintptr_t to = (uintptr_t)g[REG_RIP];
		if (e->ijmp && !bt_lookup(to)) {
			for (uintptr_t back = 1; back <= BT_BACK_MAX && back < to; back++) {
				const struct bt_entry *h = bt_lookup(to - back);
				if (!h)
					continue;
				if (to < h->pc + h->bytes)
					count_piece(ev->self, h, h->pc, (uint32_t)back);
				break;
			}
		}
	}
	return WATCH_MINE;
}

static void bt_diag(char **p, const char *end, int self)
{
	(void)self;
	watch_signal_diag_hex(p, end, " bt_traps ", atomic_load(&bt.traps));
}

/* ------------------------------------------------------------- set-up */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_error;

static void bt_init(void)
{
	int err = watch_x86_init();
	if (!err)
		err = watch_signal_init();
	if (err) {
		init_error = err;
		return;
	}
	void *t = mmap(NULL, BT_TABLE_SIZE * sizeof(struct bt_entry), PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	void *o = mmap(NULL, BT_OFF_MAX * sizeof(uint16_t), PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (t == MAP_FAILED || o == MAP_FAILED) {
		init_error = -ENOMEM;
		return;
	}
	bt.table = t;
	bt.off = o;
	const struct watch_signal_client c = {
		.name = "blocktrap", .sig = SIGTRAP, .priority = WATCH_PRIO_BLOCKTRAP, .fn = bt_trap,
		.state_lo = (uintptr_t)&bt, .state_hi = (uintptr_t)&bt + sizeof bt, .diag = bt_diag,
	};
	err = watch_signal_register(&c, NULL, 0);
	if (!err)
		err = watch_signal_start("blocktrap", NULL, 0);
	if (err) {
		init_error = err;
		return;
	}
	bt.ready = 1;
}

static int ensure_init(void)
{
	pthread_once(&init_once, bt_init);
	return init_error;
}

/* The last analysis, kept for start after fits() (under bt_lock). */
static struct {
	int valid;
	unsigned n;
	struct watch_interval pairs[WATCH_CODE_PAIRS];
	struct watch_bt_plan plan;
	int err;
	char why[WATCH_ERRLEN];
} cached;

static int plan_for(const struct watch_request *req, char *why, size_t len)
{
	if (cached.valid && cached.n == req->ncode &&
	    memcmp(cached.pairs, req->code_pair, req->ncode * sizeof *req->code_pair) == 0) {
		if (cached.err)
			snprintf(why, len, "%s", cached.why);
		return cached.err;
	}
	if (cached.valid)
		watch_bt_plan_free(&cached.plan);
	cached.valid = 0;
	cached.n = req->ncode;
	memcpy(cached.pairs, req->code_pair, req->ncode * sizeof *req->code_pair);
	cached.why[0] = 0;
	cached.err = watch_bt_analyse(req->code_pair, req->ncode, &cached.plan, cached.why, sizeof cached.why);
	if (cached.err == -ENOMEM)
		return -ENOMEM; /* not cached: may pass next time */
	cached.valid = 1;
	if (cached.err)
		snprintf(why, len, "%s", cached.why);
	return cached.err;
}

static int bt_fits(const struct watch_request *req, char *why, size_t len)
{
	if (req->observe) {
		snprintf(why, len, "the block-trap backend " WATCH_OBSERVE_REFUSAL);
		return -ENOTSUP;
	}
	if (req->want_data || req->data_by_code) {
		snprintf(why, len, "blocktrap counts executed instructions only; data accesses (and those made by "
		         "in-range code) need pagetrap, breakpoint or instrument");
		return -ENOTSUP;
	}
	if (!req->want_code || req->ncode == 0) {
		snprintf(why, len, "blocktrap: no instruction range to count");
		return -ENOTSUP;
	}
	if (req->overflow_fields) {
		snprintf(why, len, "blocktrap does not deliver overflow itself");
		return -ENOTSUP;
	}
	/* A user shadow stack (CET, Linux 6.6+): the emulated calls and returns
	 * would leave it behind, and the next real ret would fault. */
	unsigned long shstk = 0;
	if (watch_sys3(SYS_arch_prctl, ARCH_SHSTK_STATUS, (long)&shstk, 0) == 0 && (shstk & ARCH_SHSTK_SHSTK)) {
		snprintf(why, len, "blocktrap: this thread runs with a CET shadow stack, which emulated calls and returns "
		         "would not update");
		return -ENOTSUP;
	}
	int err = ensure_init();
	if (err) {
		snprintf(why, len, "blocktrap: cannot start (%s)", strerror(-err));
		return err;
	}
	pthread_mutex_lock(&bt_lock);
	err = plan_for(req, why, len);
	pthread_mutex_unlock(&bt_lock);
	return err;
}

/* A slot within reach of pc: an area near it, mapped on first need. */
static uintptr_t slot_near(uintptr_t pc)
{
	for (unsigned i = 0; i < bt.narea; i++) {
		struct bt_area *ar = &bt.area[i];
		uintptr_t far = pc > ar->lo ? pc - ar->lo : ar->hi - pc;
		if (pc > ar->lo && pc < ar->hi)
			far = 0;
		if (far < BT_REACH && ar->used + WATCH_X86_XOL_SLOT <= ar->hi - ar->lo) {
			uintptr_t s = ar->lo + ar->used;
			ar->used += WATCH_X86_XOL_SLOT;
			return s;
		}
	}
	if (bt.narea >= BT_MAX_AREAS)
		return 0;
	/* Below the code first (above a PIE lies its heap), in 4 MiB steps. */
	for (uintptr_t k = 1; k < 200; k++) {
		for (int dir = 0; dir < 2; dir++) {
			uintptr_t step = k << 22, base = pc & ~(BT_AREA_BYTES - 1);
			if (dir == 0 && base < step + (1u << 20))
				continue;
			uintptr_t hint = dir == 0 ? base - step : base + step;
			void *m = mmap((void *)hint, BT_AREA_BYTES, PROT_READ | PROT_EXEC,
			               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (m == MAP_FAILED)
				continue;
			if ((uintptr_t)m != hint) { /* a kernel without MAP_FIXED_NOREPLACE took it as a hint */
				munmap(m, BT_AREA_BYTES);
				continue;
			}
			struct bt_area *ar = &bt.area[bt.narea++];
			ar->lo = hint;
			ar->hi = hint + BT_AREA_BYTES;
			ar->used = WATCH_X86_XOL_SLOT;
			return ar->lo;
		}
	}
	return 0;
}

static int poke(uintptr_t addr, const void *b, size_t n)
{
	ssize_t w = pwrite(watch_signal_mem_fd(), b, n, (off_t)addr);
	return w == (ssize_t)n ? 0 : (w < 0 ? -errno : -EIO);
}

/* The entry for piece p of the plan, made on first need (under bt_lock). */
static struct bt_entry *entry_for(const struct watch_bt_plan *plan, const struct watch_bt_piece *p, char *why,
                                  size_t len)
{
	struct bt_entry *e = bt_lookup(p->pc);
	if (e) {
		if (e->ninsn != p->ninsn || memcmp(bt.off + e->first, plan->off + p->first, p->ninsn * sizeof(uint16_t))) {
			snprintf(why, len, "blocktrap: the block at %#lx was cut differently by an earlier analysis",
			         (unsigned long)p->pc);
			return NULL;
		}
		return e;
	}
	if (bt.nentries >= BT_TABLE_SIZE / 2 || atomic_load(&bt.noff) + p->ninsn > BT_OFF_MAX) {
		snprintf(why, len, "blocktrap: more than %u blocks", BT_TABLE_SIZE / 2);
		return NULL;
	}
	uint32_t i = bt_hash(p->pc);
	while (atomic_load(&bt.table[i].pc) != 0)
		i = (i + 1) & (BT_TABLE_SIZE - 1);
	e = &bt.table[i];
	uint8_t buf[15];
	uintptr_t end = watch_codemap_code_end(p->pc);
	size_t avail = end - p->pc < 15 ? end - p->pc : 15;
	const uint8_t *code = read_code(p->pc, avail, buf);
	const char *no = "";
	if (code[0] == 0xcc) {
		snprintf(why, len, "blocktrap: the block at %#lx already starts with an int3 (a debugger's?)",
		         (unsigned long)p->pc);
		return NULL;
	}
	uintptr_t slot = slot_near(p->pc);
	if (!slot) {
		snprintf(why, len, "blocktrap: no room for out-of-line slots within 1 GiB of %#lx", (unsigned long)p->pc);
		return NULL;
	}
	if (watch_x86_xol_plan(code, avail, p->pc, slot, &e->xol, &no) != 0) {
		snprintf(why, len, "blocktrap: the instruction at %#lx cannot run out of line (%s)", (unsigned long)p->pc,
		         no);
		return NULL; /* the slot is lost: 32 bytes */
	}
	if (e->xol.kind == WATCH_X86_XOL_COPY && poke(slot, e->xol.copy, e->xol.ncopy) != 0) {
		snprintf(why, len, "blocktrap: cannot write the out-of-line slot through /proc/self/mem");
		return NULL;
	}
	e->slot = slot;
	e->orig = code[0];
	e->bytes = p->bytes;
	e->ijmp = p->ijmp;
	e->ninsn = p->ninsn;
	e->first = atomic_load(&bt.noff);
	memcpy(bt.off + e->first, plan->off + p->first, p->ninsn * sizeof(uint16_t));
	atomic_store(&bt.noff, e->first + p->ninsn);
	e->refs = 0;
	bt.nentries++;
	atomic_store_explicit(&e->pc, p->pc, memory_order_release);
	return e;
}

static void disarm(uint32_t *idx, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct bt_entry *e = &bt.table[idx[i]];
		if (--e->refs == 0)
			poke(atomic_load(&e->pc), &e->orig, 1);
	}
}

static int bt_start(struct watch_session *s, char *why, size_t len)
{
	int err = bt_fits(&s->req, why, len);
	if (err)
		return err;
	err = watch_signal_session("blocktrap", why, len);
	if (err)
		return err;
	struct bt_session *bs = calloc(1, sizeof *bs);
	if (!bs)
		return -ENOMEM;
	watch_signal_ensure_altstack();
	pthread_mutex_lock(&bt_lock);
	err = plan_for(&s->req, why, len);
	const struct watch_bt_plan *plan = &cached.plan;
	struct bt_slot *slot = NULL;
	if (!err) {
		for (unsigned i = 0; i < BT_MAX_SESSIONS && !slot; i++)
			if (!atomic_load(&bt.slots[i].used))
				slot = &bt.slots[i];
		if (!slot) {
			snprintf(why, len, "blocktrap: more than %d sessions running at once", BT_MAX_SESSIONS);
			err = -ENOSPC;
		}
	}
	if (!err) {
		bs->entry = malloc((plan->npiece ? plan->npiece : 1) * sizeof *bs->entry);
		if (!bs->entry)
			err = -ENOMEM;
	}
	/* The slot first, then the int3s: a trap of this thread between two
	 * pokes counts its piece, as it ran. */
	if (!err) {
		memset(&slot->counts, 0, sizeof slot->counts);
		slot->tid = watch_sys_gettid();
		slot->ncode = s->req.ncode;
		memcpy(slot->code, s->req.code_pair, s->req.ncode * sizeof *slot->code);
		atomic_store_explicit(&slot->used, 1, memory_order_release);
	}
	for (uint32_t i = 0; !err && i < plan->npiece; i++) {
		struct bt_entry *e = entry_for(plan, &plan->piece[i], why, len);
		if (!e) {
			err = -ENOTSUP;
			break;
		}
		if (e->refs++ == 0) {
			static const uint8_t int3 = 0xcc;
			err = poke(atomic_load(&e->pc), &int3, 1);
			if (err) {
				e->refs--;
				snprintf(why, len, "blocktrap: cannot write an int3 through /proc/self/mem (%s)",
				         strerror(-err));
				break;
			}
		}
		bs->entry[bs->nentry++] = (uint32_t)(e - bt.table);
	}
	if (err) {
		disarm(bs->entry, bs->nentry);
		if (slot && atomic_load(&slot->used) && slot->tid == watch_sys_gettid())
			atomic_store(&slot->used, 0);
		pthread_mutex_unlock(&bt_lock);
		free(bs->entry);
		free(bs);
		return err;
	}
	pthread_mutex_unlock(&bt_lock);
	bs->slot = slot;
	s->priv = bs;
	s->running = 1;
	return 0;
}

static void bt_stop(struct watch_session *s)
{
	struct bt_session *bs = s->priv;
	if (!bs)
		return;
	atomic_store(&bs->slot->used, 0);
	watch_counts_add(&s->acc, &bs->slot->counts);
	pthread_mutex_lock(&bt_lock);
	disarm(bs->entry, bs->nentry);
	pthread_mutex_unlock(&bt_lock);
	free(bs->entry);
	free(bs);
	s->priv = NULL;
	s->running = 0;
}

static void bt_read(const struct watch_session *s, struct watch_counts *live)
{
	const struct bt_session *bs = s->priv;
	if (bs)
		*live = bs->slot->counts;
	else
		memset(live, 0, sizeof *live);
}

static const struct watch_counts *bt_live(const struct watch_session *s)
{
	const struct bt_session *bs = s->priv;
	return bs ? &bs->slot->counts : NULL;
}

static void bt_reset(struct watch_session *s)
{
	struct bt_session *bs = s->priv;
	if (bs)
		memset(&bs->slot->counts, 0, sizeof bs->slot->counts);
}

const struct watch_backend_ops watch_blocktrap_ops = {
	.name = "blocktrap",
	.fits = bt_fits,
	.start = bt_start,
	.stop = bt_stop,
	.read = bt_read,
	.reset = bt_reset,
	.live = bt_live,
};

void watch_blocktrap_stats(struct watch_blocktrap_stats *out)
{
	out->traps = atomic_load(&bt.traps);
	out->counted = atomic_load(&bt.counted);
	out->emulated = atomic_load(&bt.emulated);
	out->leaders = bt.nentries;
}
