/*
 * x86-64 decoding for the page-trap backend (see watch_x86.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "watch_x86.h"
#include "watch_signal.h" /* watch_insn_is_rep_string */
#include "watch_sys.h"

#include <asm/prctl.h>
#include <stdatomic.h>
#include <capstone/capstone.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096u
#define ARENA_BYTES (512u * 1024u)
#define X86_MAX_INSN 15u
#define X86_HIT_HANDLES 4

typedef bool (*disasm_iter_fn)(csh, const uint8_t **, size_t *, uint64_t *, cs_insn *);

/* Everything the handler-side decoder touches.  Page-aligned and padded to
 * whole pages so no other object (a watched global array, say) shares a page
 * with it: fits() refuses requests overlapping it. */
struct x86_state {
	csh handle;
	cs_insn *insn;
	/* Called through a pointer kept here so that the handler never reads the
	 * GOT, which can share a page with watched globals of the executable. */
	disasm_iter_fn disasm_iter;
	int ready;
	/* The classifier's own handle and instruction (watch_x86_classify), so
	 * that it never shares decoder state with the page-trap windows. */
	csh cls_handle;
	cs_insn *cls_insn;
	int cls_ready;
	_Atomic int cls_lock;
	/* Breakpoint-hit decoders (watch_x86_effect): several threads can take
	 * hits at once, and a hit can interrupt a thread inside the decoders
	 * above, so these share nothing with them. */
	csh hit_handle[X86_HIT_HANDLES];
	cs_insn *hit_insn[X86_HIT_HANDLES];
	_Atomic int hit_lock[X86_HIT_HANDLES];
	int hit_ready;
	size_t arena_used;
	unsigned char arena[ARENA_BYTES] __attribute__((aligned(64)));
};

#define X86_STATE_BYTES ((sizeof(struct x86_state) + PAGE - 1) / PAGE * PAGE)
static union {
	struct x86_state s;
	unsigned char pad[X86_STATE_BYTES];
} x86 __attribute__((aligned(4096)));

static pthread_once_t x86_once = PTHREAD_ONCE_INIT;
static int x86_init_error;

/* capstone's allocations (handle, cs_insn, detail) come from the arena so that
 * they can never share a page with the application's malloc'd, watched data.
 * Nothing is ever freed: the handle lives as long as the process. */
static void *arena_alloc(size_t n)
{
	size_t at = (x86.s.arena_used + 63) & ~(size_t)63;
	if (at + n + 64 > ARENA_BYTES)
		return NULL;
	*(size_t *)(x86.s.arena + at) = n;
	x86.s.arena_used = at + 64 + n;
	return x86.s.arena + at + 64;
}

static void *arena_calloc(size_t nmemb, size_t size)
{
	if (size && nmemb > SIZE_MAX / size)
		return NULL;
	void *p = arena_alloc(nmemb * size);
	if (p)
		memset(p, 0, nmemb * size);
	return p;
}

static void *arena_realloc(void *old, size_t n)
{
	void *p = arena_alloc(n);
	if (p && old) {
		size_t oldn = *(size_t *)((unsigned char *)old - 64);
		memcpy(p, old, oldn < n ? oldn : n);
	}
	return p;
}

static void arena_free(void *p)
{
	(void)p;
}

static void x86_open(void)
{
	/* CS_OPT_MEM is process-global in capstone: point it at the arena only
	 * while our handle is created, then hand the system allocator back so an
	 * application that uses capstone itself is unaffected. */
	cs_opt_mem arena = { arena_alloc, arena_calloc, arena_realloc, arena_free, vsnprintf };
	cs_opt_mem sys = { malloc, calloc, realloc, free, vsnprintf };
	if (cs_option(0, CS_OPT_MEM, (size_t)&arena) != CS_ERR_OK) {
		x86_init_error = -ENOSYS;
		return;
	}
	int err = 0;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &x86.s.handle) != CS_ERR_OK)
		err = -ENOSYS;
	else if (cs_option(x86.s.handle, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK)
		err = -ENOSYS;
	else if (!(x86.s.insn = cs_malloc(x86.s.handle)))
		err = -ENOMEM;
	if (!err) {
		/* capstone 4 builds a register table with calloc on the first
		 * decode (17 KiB, kept for good); make that happen now, in the arena.
		 * 2 million random byte strings showed no other allocation. */
		static const uint8_t warm[] = { 0x89, 0x07 }; /* mov %eax,(%rdi) */
		const uint8_t *code = warm;
		size_t size = sizeof warm;
		uint64_t addr = 0;
		if (!cs_disasm_iter(x86.s.handle, &code, &size, &addr, x86.s.insn))
			err = -ENOSYS;
	}
	if (!err && cs_open(CS_ARCH_X86, CS_MODE_64, &x86.s.cls_handle) == CS_ERR_OK &&
	    cs_option(x86.s.cls_handle, CS_OPT_DETAIL, CS_OPT_ON) == CS_ERR_OK &&
	    (x86.s.cls_insn = cs_malloc(x86.s.cls_handle)) != NULL)
		x86.s.cls_ready = 1;
	int hit_ok = !err;
	for (int i = 0; hit_ok && i < X86_HIT_HANDLES; i++)
		hit_ok = cs_open(CS_ARCH_X86, CS_MODE_64, &x86.s.hit_handle[i]) == CS_ERR_OK &&
		         cs_option(x86.s.hit_handle[i], CS_OPT_DETAIL, CS_OPT_ON) == CS_ERR_OK &&
		         (x86.s.hit_insn[i] = cs_malloc(x86.s.hit_handle[i])) != NULL;
	x86.s.hit_ready = hit_ok;
	cs_option(0, CS_OPT_MEM, (size_t)&sys);
	x86.s.disasm_iter = cs_disasm_iter;
	x86.s.ready = err == 0;
	x86_init_error = err;
}

int watch_x86_init(void)
{
	pthread_once(&x86_once, x86_open);
	return x86_init_error;
}

void watch_x86_state_range(uintptr_t *lo, uintptr_t *hi)
{
	*lo = (uintptr_t)&x86;
	*hi = (uintptr_t)&x86 + sizeof x86;
}

/* Value of a general register as an address component; -1 in *ok for a
 * register that cannot be one (a vector index). */
static uint64_t reg_value(x86_reg r, const greg_t *g, uint64_t next_rip, int *ok)
{
	switch (r) {
	case X86_REG_INVALID: return 0;
	case X86_REG_RIP: return next_rip;
	case X86_REG_EIP: return (uint32_t)next_rip;
	case X86_REG_RAX: return (uint64_t)g[REG_RAX];
	case X86_REG_RBX: return (uint64_t)g[REG_RBX];
	case X86_REG_RCX: return (uint64_t)g[REG_RCX];
	case X86_REG_RDX: return (uint64_t)g[REG_RDX];
	case X86_REG_RSI: return (uint64_t)g[REG_RSI];
	case X86_REG_RDI: return (uint64_t)g[REG_RDI];
	case X86_REG_RBP: return (uint64_t)g[REG_RBP];
	case X86_REG_RSP: return (uint64_t)g[REG_RSP];
	case X86_REG_R8: return (uint64_t)g[REG_R8];
	case X86_REG_R9: return (uint64_t)g[REG_R9];
	case X86_REG_R10: return (uint64_t)g[REG_R10];
	case X86_REG_R11: return (uint64_t)g[REG_R11];
	case X86_REG_R12: return (uint64_t)g[REG_R12];
	case X86_REG_R13: return (uint64_t)g[REG_R13];
	case X86_REG_R14: return (uint64_t)g[REG_R14];
	case X86_REG_R15: return (uint64_t)g[REG_R15];
	case X86_REG_EAX: return (uint32_t)g[REG_RAX];
	case X86_REG_EBX: return (uint32_t)g[REG_RBX];
	case X86_REG_ECX: return (uint32_t)g[REG_RCX];
	case X86_REG_EDX: return (uint32_t)g[REG_RDX];
	case X86_REG_ESI: return (uint32_t)g[REG_RSI];
	case X86_REG_EDI: return (uint32_t)g[REG_RDI];
	case X86_REG_EBP: return (uint32_t)g[REG_RBP];
	case X86_REG_ESP: return (uint32_t)g[REG_RSP];
	case X86_REG_R8D: return (uint32_t)g[REG_R8];
	case X86_REG_R9D: return (uint32_t)g[REG_R9];
	case X86_REG_R10D: return (uint32_t)g[REG_R10];
	case X86_REG_R11D: return (uint32_t)g[REG_R11];
	case X86_REG_R12D: return (uint32_t)g[REG_R12];
	case X86_REG_R13D: return (uint32_t)g[REG_R13];
	case X86_REG_R14D: return (uint32_t)g[REG_R14];
	case X86_REG_R15D: return (uint32_t)g[REG_R15];
	default: *ok = 0; return 0;
	}
}

static uint64_t segment_base(x86_reg seg)
{
	uint64_t base = 0;
	if (seg == X86_REG_FS)
		watch_sys3(SYS_arch_prctl, ARCH_GET_FS, (long)&base, 0);
	else if (seg == X86_REG_GS)
		watch_sys3(SYS_arch_prctl, ARCH_GET_GS, (long)&base, 0);
	return base;
}

static void add_access(struct watch_x86_insn *out, uintptr_t base, uint64_t count, uint32_t size,
                       int load, int store)
{
	if (out->naccess >= WATCH_X86_MAX_ACCESS || count == 0)
		return;
	struct watch_x86_access *a = &out->acc[out->naccess++];
	a->base = base;
	a->count = count;
	a->size = size ? size : 1;
	a->load = (uint8_t)!!load;
	a->store = (uint8_t)!!store;
}

/* Reads memory through /proc/self/mem, which ignores our PROT_NONE, with a
 * small cache per stream: enough to run a repe/repne string comparison. */
struct mem_stream {
	int fd;
	uintptr_t lo, hi;
	unsigned char buf[512];
};

static int stream_get(struct mem_stream *m, uintptr_t addr, unsigned size, uint64_t *val, int downward)
{
	if (addr < m->lo || addr + size > m->hi) {
		uintptr_t start = downward && addr + size >= sizeof m->buf ? addr + size - sizeof m->buf : addr;
		long got = watch_sys_pread(m->fd, m->buf, sizeof m->buf, start);
		if (got < (long)size || start + (uintptr_t)got < addr + size) {
			/* Near the end of a mapping: fetch just the element. */
			start = addr;
			got = watch_sys_pread(m->fd, m->buf, size, start);
			if (got != (long)size)
				return -1;
		}
		m->lo = start;
		m->hi = start + (uintptr_t)got;
	}
	uint64_t v = 0;
	watch_copy(&v, m->buf + (addr - m->lo), size);
	*val = v;
	return 0;
}

/* Iterations a repe/repne cmps/scas will run from the current registers. */
static uint64_t compare_string_iterations(int is_cmps, int repe, uint64_t rcx, uintptr_t src, uintptr_t dst,
                                          unsigned esize, int down, uint64_t accumulator, int mem_fd)
{
	struct mem_stream s = { .fd = mem_fd }, d = { .fd = mem_fd };
	uint64_t mask = esize == 8 ? ~(uint64_t)0 : (((uint64_t)1 << (esize * 8)) - 1);
	uint64_t i;
	for (i = 0; i < rcx; i++) {
		uintptr_t off = (uintptr_t)(i * esize);
		uintptr_t da = down ? dst - off : dst + off;
		uint64_t a, b;
		if (stream_get(&d, da, esize, &b, down) != 0)
			return i + 1; /* it will fault there: the rest is not ours to predict */
		if (is_cmps) {
			uintptr_t sa = down ? src - off : src + off;
			if (stream_get(&s, sa, esize, &a, down) != 0)
				return i + 1;
		} else {
			a = accumulator & mask;
		}
		int equal = a == b;
		if (equal != repe)
			return i + 1;
	}
	return rcx;
}

/* The effective address of memory operand o, with the registers before the
 * instruction (RIP-relative: next); *ok cleared if a register is unknown. */
static uint64_t operand_address(const cs_x86_op *o, const greg_t *g, uint64_t next, int *ok)
{
	return segment_base(o->mem.segment) + reg_value(o->mem.base, g, next, ok) +
	       reg_value(o->mem.index, g, next, ok) * (uint64_t)(o->mem.scale ? o->mem.scale : 1) + (uint64_t)o->mem.disp;
}

/* Legacy string instructions (movs, stos, lods, cmps, scas), with or without a
 * rep prefix: their accesses follow from RCX/RSI/RDI/DF, iterations included. */
static int decode_string(const cs_insn *in, const greg_t *g, int mem_fd, struct watch_x86_insn *out)
{
	const cs_x86 *x = &in->detail->x86;
	uint8_t op = x->opcode[0];
	if (op < 0xA4 || op > 0xAF || op == 0xA8 || op == 0xA9)
		return 0;
	unsigned esize = 1;
	if (op & 1)
		esize = (x->rex & 8) ? 8 : (x->prefix[2] == X86_PREFIX_OPSIZE ? 2 : 4);
	uint64_t amask = x->prefix[3] == X86_PREFIX_ADDRSIZE ? 0xffffffffu : ~(uint64_t)0;
	uint64_t rcx = (uint64_t)g[REG_RCX] & amask;
	uintptr_t rsi = (uintptr_t)((uint64_t)g[REG_RSI] & amask);
	uintptr_t rdi = (uintptr_t)((uint64_t)g[REG_RDI] & amask);
	int down = ((uint64_t)g[REG_EFL] >> 10) & 1;
	int rep = x->prefix[0] == X86_PREFIX_REP || x->prefix[0] == X86_PREFIX_REPNE;
	/* A segment override applies to the source (rsi) only. */
	x86_reg seg = x->prefix[1] == X86_PREFIX_FS ? X86_REG_FS : x->prefix[1] == X86_PREFIX_GS ? X86_REG_GS : X86_REG_INVALID;
	uintptr_t src = rsi + (uintptr_t)segment_base(seg);
	uint64_t n = rep ? rcx : 1;
	int is_movs = op == 0xA4 || op == 0xA5, is_cmps = op == 0xA6 || op == 0xA7;
	int is_stos = op == 0xAA || op == 0xAB, is_lods = op == 0xAC || op == 0xAD;
	if (rep && (is_cmps || op == 0xAE || op == 0xAF))
		n = compare_string_iterations(is_cmps, x->prefix[0] == X86_PREFIX_REPE, rcx, src, rdi, esize, down,
		                              (uint64_t)g[REG_RAX], mem_fd);
	/* Lowest element of each stream: the counting is order-free. */
	uintptr_t span = n ? (uintptr_t)((n - 1) * esize) : 0;
	uintptr_t src_lo = down ? src - span : src, dst_lo = down ? rdi - span : rdi;
	if (is_movs) {
		add_access(out, src_lo, n, esize, 1, 0);
		add_access(out, dst_lo, n, esize, 0, 1);
	} else if (is_stos) {
		add_access(out, dst_lo, n, esize, 0, 1);
	} else if (is_lods) {
		add_access(out, src_lo, n, esize, 1, 0);
	} else if (is_cmps) {
		add_access(out, src_lo, n, esize, 1, 0);
		add_access(out, dst_lo, n, esize, 1, 0);
	} else {
		add_access(out, dst_lo, n, esize, 1, 0); /* scas */
	}
	return 1;
}

static int is_control_transfer(const cs_insn *in)
{
	const cs_detail *d = in->detail;
	for (unsigned i = 0; i < d->groups_count; i++) {
		switch (d->groups[i]) {
		case X86_GRP_JUMP: case X86_GRP_CALL: case X86_GRP_RET: case X86_GRP_INT:
		case X86_GRP_IRET: case X86_GRP_BRANCH_RELATIVE:
			return 1;
		default:
			break;
		}
	}
	switch (in->id) {
	case X86_INS_SYSCALL: case X86_INS_UD2: case X86_INS_HLT: case X86_INS_INT3:
	case X86_INS_XBEGIN: case X86_INS_RETF: case X86_INS_RETFQ:
		return 1;
	default:
		return 0;
	}
}

int watch_x86_decode(const ucontext_t *uc, int fault_is_write, int mem_fd, struct watch_x86_insn *out)
{
	const greg_t *g = uc->uc_mcontext.gregs;
	uintptr_t rip = (uintptr_t)g[REG_RIP];
	unsigned char bytes[X86_MAX_INSN];
	size_t avail = X86_MAX_INSN;

	out->rip = rip;
	out->len = 0;
	out->sequential = 0;
	out->address_unknown = 0;
	out->naccess = 0;
	if (!x86.s.ready)
		return -1;
	/* The page holding rip is mapped and executable (we are running it); the
	 * next one may not be, so read across a page edge with /proc/self/mem. */
	if ((rip & (PAGE - 1)) <= PAGE - X86_MAX_INSN) {
		watch_copy(bytes, (const void *)rip, X86_MAX_INSN);
	} else {
		long got = watch_sys_pread(mem_fd, bytes, X86_MAX_INSN, rip);
		if (got <= 0) {
			avail = PAGE - (rip & (PAGE - 1));
			watch_copy(bytes, (const void *)rip, avail);
		} else {
			avail = (size_t)got;
		}
	}
	const uint8_t *code = bytes;
	uint64_t addr = rip;
	cs_insn *in = x86.s.insn;
	if (!x86.s.disasm_iter(x86.s.handle, &code, &avail, &addr, in))
		return -1;
	out->len = in->size;
	out->sequential = !is_control_transfer(in);
	uint64_t next = rip + in->size;

	if (decode_string(in, g, mem_fd, out))
		return 0;

	const cs_x86 *x = &in->detail->x86;
	uint64_t rsp = (uint64_t)g[REG_RSP];
	/* Stack accesses capstone 4 does not list as operands. */
	switch (in->id) {
	case X86_INS_PUSH: case X86_INS_PUSHF: case X86_INS_PUSHFQ: case X86_INS_CALL:
		add_access(out, (uintptr_t)(rsp - 8), 1, 8, 0, 1);
		break;
	case X86_INS_POP: case X86_INS_POPF: case X86_INS_POPFQ: case X86_INS_RET:
		add_access(out, (uintptr_t)rsp, 1, 8, 1, 0);
		break;
	case X86_INS_LEAVE:
		add_access(out, (uintptr_t)(uint64_t)g[REG_RBP], 1, 8, 1, 0);
		break;
	default:
		break;
	}
	int implicit = out->naccess > 0;

	unsigned nmem = 0;
	for (unsigned i = 0; i < x->op_count; i++)
		nmem += x->operands[i].type == X86_OP_MEM;
	for (unsigned i = 0; i < x->op_count; i++) {
		const cs_x86_op *o = &x->operands[i];
		if (o->type != X86_OP_MEM)
			continue;
		int ok = 1;
		uint64_t ea = operand_address(o, g, next, &ok);
		if (!ok) {
			out->address_unknown = 1;
			continue;
		}
		int load, store;
		if ((o->access & (CS_AC_READ | CS_AC_WRITE)) == (CS_AC_READ | CS_AC_WRITE)) {
			load = store = 1; /* read-modify-write */
		} else if (nmem == 1 && !implicit) {
			/* capstone 4 calls VEX/EVEX stores reads: the CPU knows better. */
			store = fault_is_write;
			load = !fault_is_write;
		} else {
			store = (o->access & CS_AC_WRITE) != 0;
			load = !store;
		}
		add_access(out, (uintptr_t)ea, 1, o->size, load, store);
	}
	return 0;
}

/* ---- instruction mix ------------------------------------------------------ */

static int has_prefix(const char *s, const char *p)
{
	while (*p)
		if (*s++ != *p++)
			return 0;
	return 1;
}

static int has_suffix(const char *s, const char *suf)
{
	size_t n = 0, m = 0;
	while (s[n])
		n++;
	while (suf[m])
		m++;
	if (m > n)
		return 0;
	for (size_t i = 0; i < m; i++)
		if (s[n - m + i] != suf[i])
			return 0;
	return 1;
}

static int in_group(const cs_insn *in, uint8_t g)
{
	for (unsigned i = 0; i < in->detail->groups_count; i++)
		if (in->detail->groups[i] == g)
			return 1;
	return 0;
}

/* x87: loads and stores to memory are data movement (Alpha's LDT/STT),
 * control-word and environment instructions no operate at all, the rest FP
 * operates (with a register operand fld/fst are copies, as Alpha's CPYS). */
static unsigned x87_class(const char *m, int has_mem)
{
	static const char *const control[] = { "fldcw", "fnstcw", "fstcw", "fnstsw", "fstsw", "fnstenv", "fldenv",
		"fxsave", "fxrstor", "fnsave", "frstor", "fwait", "fninit", "fnclex", "ffree", "fincstp", "fdecstp",
		"fnop", "femms", NULL };
	for (unsigned i = 0; control[i]; i++)
		if (has_prefix(m, control[i]))
			return WATCH_X86_SYSTEM;
	if (has_mem && (has_prefix(m, "fld") || has_prefix(m, "fst") || has_prefix(m, "fist") ||
	                has_prefix(m, "fild") || has_prefix(m, "fisttp") || has_prefix(m, "fbld") ||
	                has_prefix(m, "fbstp")))
		return WATCH_X86_MOVE;
	return WATCH_X86_FP;
}

/* SSE/AVX floating point by mnemonic: scalar/packed single/double forms
 * (addsd, vmulps, vfmadd231pd, ucomisd, sqrtss, cvtsi2sd) and conversions.
 * Integer SIMD mnemonics all start with 'p' (after the VEX 'v'). */
static int simd_is_fp(const char *m)
{
	if (m[0] == 'v')
		m++;
	if (has_prefix(m, "mov") || m[0] == 'p')
		return 0;
	if (has_prefix(m, "cvt"))
		return 1;
	return has_suffix(m, "ss") || has_suffix(m, "sd") || has_suffix(m, "ps") || has_suffix(m, "pd");
}

static unsigned classify_insn(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;
	const char *m = in->mnemonic;
	unsigned cls = 0;
	int has_mem = 0;
	/* Pure moves: what they do is the load or the store. */
	int move = (has_prefix(m, "mov") || has_prefix(m, "vmov")) && in->id != X86_INS_MOVSB &&
	           in->id != X86_INS_MOVSW && in->id != X86_INS_MOVSD && in->id != X86_INS_MOVSQ;

	switch (in->id) {
	case X86_INS_LEA: case X86_INS_NOP: case X86_INS_PREFETCH: case X86_INS_PREFETCHNTA:
	case X86_INS_PREFETCHT0: case X86_INS_PREFETCHT1: case X86_INS_PREFETCHT2: case X86_INS_PREFETCHW:
	case X86_INS_CLFLUSH:
		/* An address operand that is not accessed. */
		return in->id == X86_INS_NOP || in->id == X86_INS_LEA ? 0 : WATCH_X86_SYSTEM;
	case X86_INS_PUSH: case X86_INS_PUSHF: case X86_INS_PUSHFQ:
		cls |= WATCH_X86_WRITES | WATCH_X86_MOVE;
		break;
	case X86_INS_POP: case X86_INS_POPF: case X86_INS_POPFQ:
		cls |= WATCH_X86_READS | WATCH_X86_MOVE;
		break;
	case X86_INS_CALL:
		cls |= WATCH_X86_WRITES;
		break;
	case X86_INS_RET: case X86_INS_LEAVE:
		cls |= WATCH_X86_READS;
		break;
	case X86_INS_MOVSB: case X86_INS_MOVSW: case X86_INS_MOVSD: case X86_INS_MOVSQ:
		/* movsd is also SSE's scalar double move: that one has operands
		 * that are not both memory. */
		if (x->op_count == 2 && x->operands[0].type == X86_OP_MEM && x->operands[1].type == X86_OP_MEM)
			return WATCH_X86_READS | WATCH_X86_WRITES | WATCH_X86_MOVE;
		move = 1;
		break;
	case X86_INS_STOSB: case X86_INS_STOSW: case X86_INS_STOSD: case X86_INS_STOSQ:
		return WATCH_X86_WRITES | WATCH_X86_MOVE;
	case X86_INS_LODSB: case X86_INS_LODSW: case X86_INS_LODSD: case X86_INS_LODSQ:
		return WATCH_X86_READS | WATCH_X86_MOVE;
	case X86_INS_CMPSB: case X86_INS_CMPSW: case X86_INS_CMPSD: case X86_INS_CMPSQ:
	case X86_INS_SCASB: case X86_INS_SCASW: case X86_INS_SCASD: case X86_INS_SCASQ:
		if (x->op_count == 2 && x->operands[0].type == X86_OP_MEM && x->operands[1].type == X86_OP_MEM)
			return WATCH_X86_READS;
		if (in->id == X86_INS_SCASB || in->id == X86_INS_SCASW || in->id == X86_INS_SCASD ||
		    in->id == X86_INS_SCASQ)
			return WATCH_X86_READS;
		break; /* cmpsd xmm: SSE compare */
	case X86_INS_SYSCALL: case X86_INS_SYSENTER: case X86_INS_INT: case X86_INS_INT3: case X86_INS_INTO:
	case X86_INS_UD2: case X86_INS_HLT: case X86_INS_CPUID: case X86_INS_RDTSC: case X86_INS_RDTSCP:
	case X86_INS_LFENCE: case X86_INS_MFENCE: case X86_INS_SFENCE: case X86_INS_PAUSE:
	case X86_INS_ENDBR64: case X86_INS_ENDBR32: case X86_INS_XGETBV:
		return WATCH_X86_SYSTEM;
	default:
		break;
	}
	for (unsigned i = 0; i < x->op_count; i++) {
		const cs_x86_op *o = &x->operands[i];
		if (o->type != X86_OP_MEM)
			continue;
		has_mem = 1;
		uint8_t acc = o->access;
		if (move)
			acc = i == 0 ? CS_AC_WRITE : CS_AC_READ; /* capstone 4 calls VEX stores reads */
		else if (!acc)
			acc = CS_AC_READ;
		if (acc & CS_AC_READ)
			cls |= WATCH_X86_READS;
		if (acc & CS_AC_WRITE)
			cls |= WATCH_X86_WRITES;
	}
	if (move && has_mem)
		cls |= WATCH_X86_MOVE;
	if (in_group(in, X86_GRP_JUMP) || in_group(in, X86_GRP_CALL) || in_group(in, X86_GRP_RET) ||
	    in_group(in, X86_GRP_IRET) || in_group(in, X86_GRP_BRANCH_RELATIVE))
		cls |= WATCH_X86_BRANCH;
	else if (in_group(in, X86_GRP_INT))
		cls |= WATCH_X86_SYSTEM;
	if (!(cls & WATCH_X86_BRANCH) && !(cls & WATCH_X86_MOVE)) {
		if (m[0] == 'f' && in_group(in, X86_GRP_FPU))
			cls |= x87_class(m, has_mem);
		else if (simd_is_fp(m))
			cls |= WATCH_X86_FP;
	}
	return cls;
}

int watch_x86_classify(const uint8_t *bytes, size_t avail, uint64_t pc, unsigned *len, unsigned *cls)
{
	if (!x86.s.cls_ready)
		return -1;
	int expected = 0;
	while (!atomic_compare_exchange_weak(&x86.s.cls_lock, &expected, 1)) {
		expected = 0;
		__builtin_ia32_pause();
	}
	const uint8_t *code = bytes;
	uint64_t addr = pc;
	int ok = x86.s.disasm_iter(x86.s.cls_handle, &code, &avail, &addr, x86.s.cls_insn);
	if (ok) {
		*len = x86.s.cls_insn->size;
		*cls = classify_insn(x86.s.cls_insn);
	}
	atomic_store(&x86.s.cls_lock, 0);
	return ok ? 0 : -1;
}

/* ---- data breakpoint hits -------------------------------------------------- */

/* A free hit decoder, or -1 after a bounded wait (the other threads holding
 * them finish in microseconds; one never frees while we spin if it is ours,
 * which cannot happen: a hit handler does not nest in itself). */
static int hit_take(void)
{
	if (!x86.s.hit_ready)
		return -1;
	for (long spin = 0; spin < 1000000; spin++) {
		for (int i = 0; i < X86_HIT_HANDLES; i++) {
			int expected = 0;
			if (atomic_compare_exchange_strong(&x86.s.hit_lock[i], &expected, 1))
				return i;
		}
		__builtin_ia32_pause();
	}
	return -1;
}

static void hit_give(int i)
{
	atomic_store(&x86.s.hit_lock[i], 0);
}

/* Legacy prefixes and REX skipped: the offset of the opcode, or avail. */
static size_t opcode_offset(const uint8_t *b, size_t avail)
{
	size_t i = 0;
	while (i < avail) {
		switch (b[i]) {
		case 0xF0: case 0xF2: case 0xF3: case 0x2E: case 0x36: case 0x3E: case 0x26:
		case 0x64: case 0x65: case 0x66: case 0x67:
			i++;
			continue;
		default:
			break;
		}
		break;
	}
	if (i < avail && (b[i] & 0xF0) == 0x40)
		i++;
	return i;
}

int watch_x86_is_rep_store(const uint8_t *bytes, size_t avail)
{
	int rep = 0;
	for (size_t i = 0; i < avail && i < X86_MAX_INSN; i++) {
		if (bytes[i] == 0xF3 || bytes[i] == 0xF2)
			rep = 1;
		else if (bytes[i] != 0xF0 && bytes[i] != 0x2E && bytes[i] != 0x36 && bytes[i] != 0x3E &&
		         bytes[i] != 0x26 && bytes[i] != 0x64 && bytes[i] != 0x65 && bytes[i] != 0x66 && bytes[i] != 0x67)
			break;
	}
	size_t at = opcode_offset(bytes, avail);
	if (!rep || at >= avail)
		return 0;
	uint8_t op = bytes[at];
	return op == 0xA4 || op == 0xA5 || op == 0xAA || op == 0xAB;
}

int watch_x86_length(const uint8_t *bytes, size_t avail, uint64_t pc, unsigned *len)
{
	int h = hit_take();
	if (h < 0)
		return -1;
	/* Walking a function needs only lengths: without detail capstone is
	 * several times faster, and CS_OPT_DETAIL only sets a flag. */
	cs_option(x86.s.hit_handle[h], CS_OPT_DETAIL, CS_OPT_OFF);
	const uint8_t *code = bytes;
	uint64_t addr = pc;
	int ok = x86.s.disasm_iter(x86.s.hit_handle[h], &code, &avail, &addr, x86.s.hit_insn[h]);
	if (ok)
		*len = x86.s.hit_insn[h]->size;
	cs_option(x86.s.hit_handle[h], CS_OPT_DETAIL, CS_OPT_ON);
	hit_give(h);
	return ok ? 0 : -1;
}

/* The 64-bit register a general register name is part of (REG_* index), or
 * -1: to tell whether an instruction changed a register its address uses. */
static int reg_family(x86_reg r)
{
	static const struct {
		x86_reg r[4];
		int greg;
	} fam[] = {
		{ { X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL }, REG_RAX },
		{ { X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL }, REG_RBX },
		{ { X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL }, REG_RCX },
		{ { X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL }, REG_RDX },
		{ { X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL }, REG_RSI },
		{ { X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL }, REG_RDI },
		{ { X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL }, REG_RBP },
		{ { X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL }, REG_RSP },
		{ { X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B }, REG_R8 },
		{ { X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B }, REG_R9 },
		{ { X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B }, REG_R10 },
		{ { X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B }, REG_R11 },
		{ { X86_REG_R12, X86_REG_R12D, X86_REG_R12W, X86_REG_R12B }, REG_R12 },
		{ { X86_REG_R13, X86_REG_R13D, X86_REG_R13W, X86_REG_R13B }, REG_R13 },
		{ { X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B }, REG_R14 },
		{ { X86_REG_R15, X86_REG_R15D, X86_REG_R15W, X86_REG_R15B }, REG_R15 },
	};
	if (r == X86_REG_AH)
		return REG_RAX;
	if (r == X86_REG_BH)
		return REG_RBX;
	if (r == X86_REG_CH)
		return REG_RCX;
	if (r == X86_REG_DH)
		return REG_RDX;
	for (unsigned i = 0; i < sizeof fam / sizeof fam[0]; i++)
		for (unsigned k = 0; k < 4; k++)
			if (fam[i].r[k] == r)
				return fam[i].greg;
	return -1;
}

/* The instruction writes general register greg (explicitly or implicitly). */
static int writes_reg(const cs_insn *in, int greg)
{
	const cs_detail *d = in->detail;
	for (unsigned i = 0; i < d->regs_write_count; i++)
		if (reg_family((x86_reg)d->regs_write[i]) == greg)
			return 1;
	const cs_x86 *x = &d->x86;
	for (unsigned i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_REG && (x->operands[i].access & CS_AC_WRITE) &&
		    reg_family(x->operands[i].reg) == greg)
			return 1;
	return 0;
}

static int overlaps(uintptr_t a, uint64_t n, uintptr_t lo, uintptr_t hi)
{
	return a < hi && a + n > lo;
}

/* VEX, EVEX or XOP encoded: capstone 4 reports these stores as reads. */
static int is_vex(const uint8_t *b, size_t avail)
{
	size_t at = opcode_offset(b, avail);
	return at < avail && (b[at] == 0xC4 || b[at] == 0xC5 || b[at] == 0x62 || b[at] == 0x8F);
}

/* What the accesses found say, folded into the two answers. */
struct hit_fold {
	int store_known, store_unknown;  /* a write that covers the word / whose address is unknown */
	int load_known, load_unknown;    /* likewise for reads, other than the RW operands below */
	int rw_unknown;                  /* a read-modify-write operand whose address is unknown */
};

static void fold_access(struct hit_fold *f, int known, int hit, int load, int store)
{
	if (!known) {
		if (load && store)
			f->rw_unknown = 1;
		else if (store)
			f->store_unknown = 1;
		else if (load)
			f->load_unknown = 1;
		return;
	}
	if (hit && store)
		f->store_known = 1;
	if (hit && load)
		f->load_known = 1;
}

/* Legacy string instructions, from the registers after an iteration (or a
 * group of them: fast-string microcode may report a breakpoint a few
 * iterations late, so the destination is only known to lie behind RDI). */
static int fold_string(const cs_insn *in, const uint8_t *bytes, size_t avail, const greg_t *g, uintptr_t lo,
                       uintptr_t hi, struct hit_fold *f)
{
	const cs_x86 *x = &in->detail->x86;
	size_t at = opcode_offset(bytes, avail);
	if (at >= avail || x->opcode[0] < 0xA4 || x->opcode[0] > 0xAF || is_vex(bytes, avail))
		return 0;
	uint8_t op = x->opcode[0];
	int is_movs = op == 0xA4 || op == 0xA5, is_stos = op == 0xAA || op == 0xAB;
	if (!is_movs && !is_stos)
		return 1; /* lods, cmps, scas write no memory */
	unsigned esize = 1;
	if (op & 1)
		esize = (x->rex & 8) ? 8 : (x->prefix[2] == X86_PREFIX_OPSIZE ? 2 : 4);
	uint64_t amask = x->prefix[3] == X86_PREFIX_ADDRSIZE ? 0xffffffffu : ~(uint64_t)0;
	uintptr_t rdi = (uintptr_t)((uint64_t)g[REG_RDI] & amask);
	uintptr_t rsi = (uintptr_t)((uint64_t)g[REG_RSI] & amask);
	int down = ((uint64_t)g[REG_EFL] >> 10) & 1;
	int rep = x->prefix[0] == X86_PREFIX_REP || x->prefix[0] == X86_PREFIX_REPNE;
	/* Bound on how far behind RDI a late report can be: the microcode's
	 * groups are cache-line sized or a little more. */
	uintptr_t behind = rep ? 4096 : esize;
	int hit = down ? (lo < rdi + esize + behind && hi > rdi + esize) : (lo < rdi && hi + behind > rdi);
	fold_access(f, 1, hit, 0, 1);
	if (is_movs) {
		/* Each element is copied from the same distance: the source of a
		 * destination byte in the word is that byte moved by rsi - rdi. */
		uintptr_t delta = rsi - rdi;
		int src_hit = rep ? overlaps(lo + delta, hi - lo, lo, hi)
		                  : overlaps(down ? rsi + esize : rsi - esize, esize, lo, hi);
		fold_access(f, 1, src_hit, 1, 0);
	}
	return 1;
}

int watch_x86_effect(const uint8_t *bytes, size_t avail, uint64_t pc, const ucontext_t *uc, uintptr_t lo,
                     uintptr_t hi, struct watch_x86_effect *out)
{
	const greg_t *g = uc->uc_mcontext.gregs;
	int h = hit_take();
	if (h < 0)
		return -1;
	const uint8_t *code = bytes;
	size_t left = avail;
	uint64_t addr = pc;
	cs_insn *in = x86.s.hit_insn[h];
	if (!x86.s.disasm_iter(x86.s.hit_handle[h], &code, &left, &addr, in)) {
		hit_give(h);
		return -1;
	}
	out->len = in->size;
	out->is_call = in->id == X86_INS_CALL;
	struct hit_fold f = { 0 };
	const cs_x86 *x = &in->detail->x86;
	uint64_t rsp = (uint64_t)g[REG_RSP];
	uint64_t next = pc + in->size;

	if (!fold_string(in, bytes, avail, g, lo, hi, &f)) {
		int pushes = 0;
		/* Stack accesses capstone 4 does not list as operands; RSP is
		 * already moved. */
		switch (in->id) {
		case X86_INS_PUSH: case X86_INS_PUSHF: case X86_INS_PUSHFQ: case X86_INS_CALL:
			fold_access(&f, 1, overlaps((uintptr_t)rsp, 8, lo, hi), 0, 1);
			pushes = 1;
			break;
		case X86_INS_POP: case X86_INS_POPF: case X86_INS_POPFQ:
			fold_access(&f, 1, overlaps((uintptr_t)(rsp - 8), 8, lo, hi), 1, 0);
			break;
		default:
			break;
		}
		int move = (has_prefix(in->mnemonic, "mov") || has_prefix(in->mnemonic, "vmov"));
		int vex = is_vex(bytes, avail);
		for (unsigned i = 0; i < x->op_count; i++) {
			const cs_x86_op *o = &x->operands[i];
			if (o->type != X86_OP_MEM)
				continue;
			int ok = 1, known = 1;
			uint64_t base = reg_value(o->mem.base, g, next, &ok);
			uint64_t index = reg_value(o->mem.index, g, next, &ok);
			int fb = reg_family(o->mem.base), fi = reg_family(o->mem.index);
			if (pushes && (fb == REG_RSP || fi == REG_RSP)) {
				/* push/call compute the operand's address before moving RSP. */
				if (fb == REG_RSP)
					base += 8;
				if (fi == REG_RSP)
					index += 8;
			} else if (in->id == X86_INS_POP) {
				/* pop computes a destination's address after moving RSP. */
			} else if ((fb >= 0 && writes_reg(in, fb)) || (fi >= 0 && writes_reg(in, fi))) {
				known = 0;
			}
			if (!ok)
				known = 0;
			uint64_t ea = segment_base(o->mem.segment) + base +
			              index * (uint64_t)(o->mem.scale ? o->mem.scale : 1) + (uint64_t)o->mem.disp;
			uint8_t acc = o->access;
			if (move || (vex && acc == CS_AC_READ && i == 0 && x->op_count > 1))
				acc = i == 0 ? CS_AC_WRITE : CS_AC_READ; /* capstone 4 calls VEX stores reads */
			else if (!acc)
				acc = CS_AC_READ;
			fold_access(&f, known, overlaps((uintptr_t)ea, o->size ? o->size : 1, lo, hi),
			            (acc & CS_AC_READ) != 0, (acc & CS_AC_WRITE) != 0);
		}
	}
	hit_give(h);

	if (f.store_known)
		out->stores = WATCH_X86_YES;
	else if (f.store_unknown || f.rw_unknown)
		out->stores = WATCH_X86_MAYBE;
	else
		out->stores = WATCH_X86_NO;
	if (f.load_known)
		out->loads = WATCH_X86_YES;
	else if (f.load_unknown)
		out->loads = WATCH_X86_MAYBE;
	else if (f.rw_unknown)
		/* The write to the word came from that operand (YES) unless a known
		 * write covered it too, in which case its read may lie elsewhere. */
		out->loads = f.store_known || f.store_unknown ? WATCH_X86_MAYBE : WATCH_X86_YES;
	else
		out->loads = WATCH_X86_NO;
	return 0;
}

/* ---- a sampled instruction --------------------------------------------------- */

static int is_cond_branch(unsigned id)
{
	switch (id) {
	case X86_INS_JAE: case X86_INS_JA: case X86_INS_JBE: case X86_INS_JB: case X86_INS_JCXZ:
	case X86_INS_JECXZ: case X86_INS_JE: case X86_INS_JGE: case X86_INS_JG: case X86_INS_JLE:
	case X86_INS_JL: case X86_INS_JNE: case X86_INS_JNO: case X86_INS_JNP: case X86_INS_JNS:
	case X86_INS_JO: case X86_INS_JP: case X86_INS_JRCXZ: case X86_INS_JS: case X86_INS_LOOP:
	case X86_INS_LOOPE: case X86_INS_LOOPNE:
		return 1;
	default:
		return 0;
	}
}

static void pm_add(struct watch_x86_pm *out, uintptr_t addr, uint32_t size)
{
	if (out->naccess >= WATCH_X86_MAX_ACCESS)
		return;
	out->acc[out->naccess].addr = addr;
	out->acc[out->naccess].size = size ? size : 1;
	out->naccess++;
}

/* One instruction at pc decoded with a handle of its own (async-signal-safe:
 * hit_take); NULL if none is free or the bytes are not an instruction.  The
 * caller gives *h back (hit_give). */
static cs_insn *decode_one(const uint8_t *bytes, size_t avail, uint64_t pc, int *h)
{
	*h = hit_take();
	if (*h < 0)
		return NULL;
	cs_insn *in = x86.s.hit_insn[*h];
	if (!x86.s.disasm_iter(x86.s.hit_handle[*h], &bytes, &avail, &pc, in)) {
		hit_give(*h);
		return NULL;
	}
	return in;
}

int watch_x86_pm_decode(const uint8_t *bytes, size_t avail, uint64_t pc, const ucontext_t *uc,
                        struct watch_x86_pm *out)
{
	memset(out, 0, sizeof *out);
	int h;
	cs_insn *in = decode_one(bytes, avail, pc, &h);
	if (!in)
		return -1;
	const greg_t *g = uc->uc_mcontext.gregs;
	uint64_t next = pc + in->size, rsp = (uint64_t)g[REG_RSP];
	out->len = in->size;
	out->cond_branch = (uint8_t)is_cond_branch(in->id);
	out->sequential = 1;
	for (unsigned i = 0; i < in->detail->groups_count; i++) {
		uint8_t grp = in->detail->groups[i];
		if (grp == CS_GRP_JUMP || grp == CS_GRP_CALL || grp == CS_GRP_RET || grp == CS_GRP_INT ||
		    grp == CS_GRP_IRET)
			out->sequential = 0;
	}
	out->rep = (uint8_t)watch_insn_is_rep_string(bytes, in->size);
	switch (in->id) {
	case X86_INS_SYSCALL: case X86_INS_SYSENTER: case X86_INS_INT: case X86_INS_INT3: case X86_INS_INT1:
	case X86_INS_INTO: case X86_INS_PUSHF: case X86_INS_PUSHFD: case X86_INS_PUSHFQ:
		out->no_step = 1;
		break;
	case X86_INS_LEA: case X86_INS_NOP: case X86_INS_PREFETCH: case X86_INS_PREFETCHNTA:
	case X86_INS_PREFETCHT0: case X86_INS_PREFETCHT1: case X86_INS_PREFETCHT2: case X86_INS_PREFETCHW:
	case X86_INS_CLFLUSH:
		hit_give(h);
		return 0; /* an address operand that is not accessed */
	case X86_INS_PUSH: case X86_INS_CALL:
		pm_add(out, (uintptr_t)(rsp - 8), 8);
		break;
	case X86_INS_POP: case X86_INS_POPF: case X86_INS_POPFQ: case X86_INS_RET:
		pm_add(out, (uintptr_t)rsp, 8);
		break;
	default:
		break;
	}
	const cs_x86 *x = &in->detail->x86;
	for (unsigned i = 0; i < x->op_count; i++) {
		const cs_x86_op *o = &x->operands[i];
		if (o->type != X86_OP_MEM)
			continue;
		int ok = 1;
		uint64_t ea = operand_address(o, g, next, &ok);
		if (!ok)
			out->address_unknown = 1;
		else
			pm_add(out, (uintptr_t)ea, o->size);
	}
	hit_give(h);
	return 0;
}

/* ---- control flow and the stack pointer ------------------------------------- */

static int is_sp(x86_reg r)
{
	return r == X86_REG_RSP || r == X86_REG_ESP || r == X86_REG_SP || r == X86_REG_SPL;
}

static int is_bp(x86_reg r)
{
	return r == X86_REG_RBP || r == X86_REG_EBP || r == X86_REG_BP || r == X86_REG_BPL;
}

/* Whether the instruction writes the register family of `which` (is_sp or
 * is_bp), explicitly or not. */
static int writes_family(csh h, const cs_insn *in, int (*which)(x86_reg))
{
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;
	if (cs_regs_access(h, in, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return 1;
	for (unsigned i = 0; i < nwr; i++)
		if (which((x86_reg)wr[i]))
			return 1;
	return 0;
}

/* A stack push or pop of the operand size given by the 0x66 prefix. */
static int64_t stack_slot(const cs_insn *in)
{
	return in->detail->x86.prefix[2] == 0x66 ? 2 : 8;
}

static void flow_stack(csh h, const cs_insn *in, struct watch_x86_flow *out)
{
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *o0 = x->op_count > 0 ? &x->operands[0] : NULL;
	const cs_x86_op *o1 = x->op_count > 1 ? &x->operands[1] : NULL;
	int dst_sp = o0 && o0->type == X86_OP_REG && is_sp(o0->reg);
	int dst_bp = o0 && o0->type == X86_OP_REG && is_bp(o0->reg);

	out->sp = WATCH_X86_SP_KEEP;
	out->rbp = WATCH_X86_RBP_KEEP;
	switch (in->id) {
	case X86_INS_PUSH: case X86_INS_PUSHF: case X86_INS_PUSHFQ:
		out->sp = WATCH_X86_SP_ADD;
		out->sp_arg = -stack_slot(in);
		break;
	case X86_INS_POP:
		if (dst_sp) {
			out->sp = WATCH_X86_SP_UNKNOWN;
			break;
		}
		out->sp = WATCH_X86_SP_ADD;
		out->sp_arg = stack_slot(in);
		if (dst_bp)
			out->rbp = WATCH_X86_RBP_OTHER;
		break;
	case X86_INS_POPF: case X86_INS_POPFQ:
		out->sp = WATCH_X86_SP_ADD;
		out->sp_arg = stack_slot(in);
		break;
	case X86_INS_CALL: case X86_INS_RET:
		break;
	case X86_INS_LEAVE:
		out->sp = WATCH_X86_SP_LEAVE;
		out->rbp = WATCH_X86_RBP_OTHER;
		break;
	case X86_INS_SUB: case X86_INS_ADD:
		if (dst_sp && o0->size == 8 && o1 && o1->type == X86_OP_IMM) {
			out->sp = WATCH_X86_SP_ADD;
			out->sp_arg = in->id == X86_INS_ADD ? o1->imm : -o1->imm;
			return;
		}
		break;
	case X86_INS_LEA:
		if ((dst_sp || dst_bp) && o0->size == 8 && o1 && o1->type == X86_OP_MEM &&
		    o1->mem.index == X86_REG_INVALID && o1->mem.segment == X86_REG_INVALID) {
			if (dst_sp && o1->mem.base == X86_REG_RSP) {
				out->sp = WATCH_X86_SP_ADD;
				out->sp_arg = o1->mem.disp;
				return;
			}
			if (dst_sp && o1->mem.base == X86_REG_RBP) {
				out->sp = WATCH_X86_SP_FROM_RBP;
				out->sp_arg = o1->mem.disp;
				return;
			}
			if (dst_bp && o1->mem.base == X86_REG_RSP) {
				out->rbp = WATCH_X86_RBP_FROM_SP;
				out->rbp_arg = o1->mem.disp;
				return;
			}
		}
		break;
	case X86_INS_MOV:
		if (o0 && o1 && o0->type == X86_OP_REG && o1->type == X86_OP_REG && o0->size == 8) {
			if (o0->reg == X86_REG_RSP && o1->reg == X86_REG_RBP) {
				out->sp = WATCH_X86_SP_FROM_RBP;
				out->sp_arg = 0;
				return;
			}
			if (o0->reg == X86_REG_RBP && o1->reg == X86_REG_RSP) {
				out->rbp = WATCH_X86_RBP_FROM_SP;
				out->rbp_arg = 0;
				return;
			}
		}
		break;
	default:
		break;
	}
	if (out->sp == WATCH_X86_SP_KEEP && in->id != X86_INS_CALL && in->id != X86_INS_RET &&
	    writes_family(h, in, is_sp))
		out->sp = WATCH_X86_SP_UNKNOWN;
	if (out->rbp == WATCH_X86_RBP_KEEP && writes_family(h, in, is_bp))
		out->rbp = WATCH_X86_RBP_OTHER;
}

int watch_x86_flow(const uint8_t *bytes, size_t avail, uint64_t pc, struct watch_x86_flow *out)
{
	memset(out, 0, sizeof *out);
	int h;
	cs_insn *in = decode_one(bytes, avail, pc, &h);
	if (!in)
		return -1;
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *o0 = x->op_count > 0 ? &x->operands[0] : NULL;
	uint64_t next = pc + in->size;
	out->len = in->size;
	out->kind = WATCH_X86_FLOW_NEXT;
	out->endbr = in->id == X86_INS_ENDBR64 || in->id == X86_INS_ENDBR32;
	out->pad = in->id == X86_INS_NOP || in->id == X86_INS_INT3 ||
	           (in->id == X86_INS_XCHG && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
	            x->operands[1].type == X86_OP_REG && x->operands[0].reg == x->operands[1].reg);
	int direct = o0 && o0->type == X86_OP_IMM;
	if (o0 && o0->type == X86_OP_MEM && o0->mem.base == X86_REG_RIP && o0->mem.index == X86_REG_INVALID)
		out->slot = (uintptr_t)(next + (uint64_t)o0->mem.disp);
	switch (in->id) {
	case X86_INS_JMP:
		out->kind = direct ? WATCH_X86_FLOW_JMP : WATCH_X86_FLOW_JMP_INDIRECT;
		break;
	case X86_INS_CALL:
		out->kind = direct ? WATCH_X86_FLOW_CALL : WATCH_X86_FLOW_CALL_INDIRECT;
		break;
	case X86_INS_LJMP: case X86_INS_LCALL:
		out->kind = WATCH_X86_FLOW_STOP; /* far transfers: not in user code we can follow */
		break;
	case X86_INS_RET: case X86_INS_RETF: case X86_INS_RETFQ: case X86_INS_IRET: case X86_INS_IRETD:
	case X86_INS_IRETQ: case X86_INS_SYSRET: case X86_INS_SYSEXIT:
		out->kind = WATCH_X86_FLOW_RET;
		break;
	case X86_INS_UD0: case X86_INS_UD2: case X86_INS_UD2B: case X86_INS_HLT: case X86_INS_INT3:
	case X86_INS_INT1:
		out->kind = WATCH_X86_FLOW_STOP;
		break;
	case X86_INS_XBEGIN:
		out->kind = WATCH_X86_FLOW_JCC;
		break;
	default:
		if (is_cond_branch(in->id))
			out->kind = WATCH_X86_FLOW_JCC;
		break;
	}
	if ((out->kind == WATCH_X86_FLOW_JMP || out->kind == WATCH_X86_FLOW_CALL || out->kind == WATCH_X86_FLOW_JCC)) {
		if (!direct) {
			hit_give(h);
			return -1;
		}
		out->target = (uintptr_t)o0->imm;
	}
	if (out->kind != WATCH_X86_FLOW_JMP_INDIRECT && out->kind != WATCH_X86_FLOW_CALL_INDIRECT)
		out->slot = 0;
	flow_stack(x86.s.hit_handle[h], in, out);
	hit_give(h);
	return 0;
}

/* ---- a displaced instruction (watch_blocktrap.c) ------------------------------ */

/* The gregs index of a 64-bit general register, or NOREG. */
static int greg_of(x86_reg r)
{
	static const struct {
		x86_reg r;
		int8_t g;
	} map[] = {
		{ X86_REG_RAX, REG_RAX }, { X86_REG_RBX, REG_RBX }, { X86_REG_RCX, REG_RCX }, { X86_REG_RDX, REG_RDX },
		{ X86_REG_RSI, REG_RSI }, { X86_REG_RDI, REG_RDI }, { X86_REG_RBP, REG_RBP }, { X86_REG_RSP, REG_RSP },
		{ X86_REG_R8, REG_R8 },   { X86_REG_R9, REG_R9 },   { X86_REG_R10, REG_R10 }, { X86_REG_R11, REG_R11 },
		{ X86_REG_R12, REG_R12 }, { X86_REG_R13, REG_R13 }, { X86_REG_R14, REG_R14 }, { X86_REG_R15, REG_R15 },
	};
	for (unsigned i = 0; i < sizeof map / sizeof map[0]; i++)
		if (map[i].r == r)
			return map[i].g;
	return WATCH_X86_XOL_NOREG;
}

int watch_x86_cc_holds(unsigned cc, uint64_t fl)
{
	int cf = !!(fl & 0x1), pf = !!(fl & 0x4), zf = !!(fl & 0x40), sf = !!(fl & 0x80), of = !!(fl & 0x800);
	int r;
	switch (cc >> 1) {
	case 0: r = of; break;
	case 1: r = cf; break;
	case 2: r = zf; break;
	case 3: r = cf || zf; break;
	case 4: r = sf; break;
	case 5: r = pf; break;
	case 6: r = sf != of; break;
	default: r = zf || sf != of; break;
	}
	return (cc & 1) ? !r : r;
}

static int jcc_code(unsigned id)
{
	switch (id) {
	case X86_INS_JO: return 0x0;
	case X86_INS_JNO: return 0x1;
	case X86_INS_JB: return 0x2;
	case X86_INS_JAE: return 0x3;
	case X86_INS_JE: return 0x4;
	case X86_INS_JNE: return 0x5;
	case X86_INS_JBE: return 0x6;
	case X86_INS_JA: return 0x7;
	case X86_INS_JS: return 0x8;
	case X86_INS_JNS: return 0x9;
	case X86_INS_JP: return 0xa;
	case X86_INS_JNP: return 0xb;
	case X86_INS_JL: return 0xc;
	case X86_INS_JGE: return 0xd;
	case X86_INS_JLE: return 0xe;
	case X86_INS_JG: return 0xf;
	default: return -1;
	}
}

static int xol_plan(const cs_insn *in, const uint8_t *bytes, uint64_t pc, uint64_t slot, struct watch_x86_xol *out,
                    const char **why)
{
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *o0 = x->op_count > 0 ? &x->operands[0] : NULL;
	uint64_t next = pc + in->size;
	int direct = o0 && o0->type == X86_OP_IMM;
	int cc = jcc_code(in->id);

	out->len = in->size;
	if (x->addr_size != 8 && (is_cond_branch(in->id) || in->id == X86_INS_JMP || in->id == X86_INS_CALL ||
	                          in->id == X86_INS_RET)) {
		*why = "a control transfer with an address-size prefix";
		return -1;
	}
	switch (in->id) {
	case X86_INS_JMP: case X86_INS_CALL:
		if (direct) {
			out->kind = in->id == X86_INS_JMP ? WATCH_X86_XOL_JMP : WATCH_X86_XOL_CALL;
			out->target = (uintptr_t)o0->imm;
			return 0;
		}
		out->kind = WATCH_X86_XOL_INDIRECT;
		out->is_call = in->id == X86_INS_CALL;
		out->reg = out->base = out->index = WATCH_X86_XOL_NOREG;
		if (o0 && o0->type == X86_OP_REG) {
			out->reg = (int8_t)greg_of(o0->reg);
			if (out->reg == WATCH_X86_XOL_NOREG) {
				*why = "an indirect transfer through a register that is not a 64-bit general one";
				return -1;
			}
			return 0;
		}
		if (!o0 || o0->type != X86_OP_MEM || o0->mem.segment != X86_REG_INVALID) {
			*why = "an indirect transfer through a segment-relative operand";
			return -1;
		}
		if (o0->mem.base == X86_REG_RIP)
			out->base = WATCH_X86_XOL_RIP;
		else if (o0->mem.base != X86_REG_INVALID && (out->base = (int8_t)greg_of(o0->mem.base)) < 0) {
			*why = "an indirect transfer through an address the registers do not give";
			return -1;
		}
		if (o0->mem.index != X86_REG_INVALID && (out->index = (int8_t)greg_of(o0->mem.index)) < 0) {
			*why = "an indirect transfer through an address the registers do not give";
			return -1;
		}
		out->scale = (uint8_t)(o0->mem.scale ? o0->mem.scale : 1);
		out->disp = (int32_t)o0->mem.disp;
		return 0;
	case X86_INS_RET:
		out->kind = WATCH_X86_XOL_RET;
		out->ret_pop = (uint16_t)(o0 && o0->type == X86_OP_IMM ? o0->imm : 0);
		return 0;
	case X86_INS_JRCXZ:
		out->kind = WATCH_X86_XOL_JRCXZ;
		out->target = (uintptr_t)o0->imm;
		return 0;
	case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE:
		out->kind = WATCH_X86_XOL_LOOP;
		out->cc = in->id == X86_INS_LOOPNE ? 0 : in->id == X86_INS_LOOPE ? 1 : 2;
		out->target = (uintptr_t)o0->imm;
		return 0;
	case X86_INS_JCXZ: case X86_INS_JECXZ: case X86_INS_LJMP: case X86_INS_LCALL: case X86_INS_RETF:
	case X86_INS_RETFQ: case X86_INS_IRET: case X86_INS_IRETD: case X86_INS_IRETQ: case X86_INS_XBEGIN:
	case X86_INS_SYSRET: case X86_INS_SYSEXIT:
		*why = "a far or transactional control transfer";
		return -1;
	default:
		break;
	}
	if (cc >= 0) {
		out->kind = WATCH_X86_XOL_JCC;
		out->cc = (uint8_t)cc;
		out->target = (uintptr_t)o0->imm;
		return 0;
	}
	for (unsigned i = 0; i < in->detail->groups_count; i++) {
		uint8_t g = in->detail->groups[i];
		if (g == CS_GRP_JUMP || g == CS_GRP_CALL || g == CS_GRP_RET || g == CS_GRP_IRET) {
			*why = "a control transfer that cannot be emulated";
			return -1;
		}
	}
	/* Run out of line: a RIP-relative displacement must reach the same
	 * byte from the slot. */
	out->kind = WATCH_X86_XOL_COPY;
	memcpy(out->copy, bytes, in->size);
	for (unsigned i = 0; i < x->op_count; i++) {
		const cs_x86_op *o = &x->operands[i];
		if (o->type != X86_OP_MEM || o->mem.base != X86_REG_RIP)
			continue;
		unsigned disp_at = x->encoding.disp_offset;
		if (disp_at == 0 || x->encoding.disp_size != 4) {
			/* Capstone 4 leaves the encoding empty for some SSE
			 * instructions (clang's movdqa 0xb93(%rip),%xmm1): the
			 * disp32 is then found in the bytes, if only once. */
			int32_t want = (int32_t)o->mem.disp;
			unsigned found = 0;
			for (unsigned k = 1; k + 4 <= in->size; k++)
				if (!memcmp(bytes + k, &want, 4)) {
					disp_at = k;
					found++;
				}
			if (found != 1) {
				*why = "a RIP-relative operand whose displacement capstone does not locate";
				return -1;
			}
		}
		int64_t d = (int64_t)(next + (uint64_t)o->mem.disp) - (int64_t)(slot + in->size);
		if (d != (int32_t)d) {
			*why = "a RIP-relative operand that does not reach from the out-of-line slot";
			return -1;
		}
		int32_t d32 = (int32_t)d;
		memcpy(out->copy + disp_at, &d32, 4);
		out->rip_relative = 1;
		break;
	}
	int64_t back = (int64_t)next - (int64_t)(slot + in->size + 5);
	if (back != (int32_t)back) {
		*why = "the out-of-line slot is too far from the code";
		return -1;
	}
	int32_t b32 = (int32_t)back;
	out->copy[in->size] = 0xe9;
	memcpy(out->copy + in->size + 1, &b32, 4);
	out->ncopy = (uint8_t)(in->size + 5);
	return 0;
}

int watch_x86_xol_plan(const uint8_t *bytes, size_t avail, uint64_t pc, uint64_t slot, struct watch_x86_xol *out,
                       const char **why)
{
	memset(out, 0, sizeof *out);
	*why = "bytes that do not decode";
	int h;
	cs_insn *in = decode_one(bytes, avail, pc, &h);
	if (!in)
		return -1;
	int r = xol_plan(in, bytes, pc, slot, out, why);
	hit_give(h);
	return r;
}

int watch_x86_xol_transfer(const struct watch_x86_xol *x, uint64_t pc, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	uint64_t next = pc + x->len, to;
	switch (x->kind) {
	case WATCH_X86_XOL_JMP:
		to = x->target;
		break;
	case WATCH_X86_XOL_JCC:
		to = watch_x86_cc_holds(x->cc, (uint64_t)g[REG_EFL]) ? x->target : next;
		break;
	case WATCH_X86_XOL_JRCXZ:
		to = g[REG_RCX] == 0 ? x->target : next;
		break;
	case WATCH_X86_XOL_LOOP: {
		uint64_t rcx = (uint64_t)g[REG_RCX] - 1, zf = (uint64_t)g[REG_EFL] & 0x40;
		g[REG_RCX] = (greg_t)rcx;
		int take = rcx != 0 && (x->cc == 2 || (x->cc == 1 ? zf != 0 : zf == 0));
		to = take ? x->target : next;
		break;
	}
	case WATCH_X86_XOL_CALL:
		g[REG_RSP] -= 8;
		*(uint64_t *)(uintptr_t)g[REG_RSP] = next;
		to = x->target;
		break;
	case WATCH_X86_XOL_RET:
		to = *(const uint64_t *)(uintptr_t)g[REG_RSP];
		g[REG_RSP] += 8 + x->ret_pop;
		break;
	case WATCH_X86_XOL_INDIRECT:
		if (x->reg != WATCH_X86_XOL_NOREG) {
			to = (uint64_t)g[x->reg];
		} else {
			uint64_t a = (uint64_t)(int64_t)x->disp;
			if (x->base == WATCH_X86_XOL_RIP)
				a += next;
			else if (x->base != WATCH_X86_XOL_NOREG)
				a += (uint64_t)g[x->base];
			if (x->index != WATCH_X86_XOL_NOREG)
				a += (uint64_t)g[x->index] * x->scale;
			to = *(const uint64_t *)(uintptr_t)a;
		}
		if (x->is_call) {
			g[REG_RSP] -= 8;
			*(uint64_t *)(uintptr_t)g[REG_RSP] = next;
		}
		break;
	default:
		return -1;
	}
	g[REG_RIP] = (greg_t)to;
	return 0;
}
