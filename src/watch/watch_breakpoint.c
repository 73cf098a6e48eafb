/*
 * breakpoint backend: x86 debug registers through
 * perf_event_open(PERF_TYPE_BREAKPOINT), this thread only.
 *
 * x86 has no read-only data breakpoint (HW_BREAKPOINT_R is refused), so the
 * watched word takes two of the four registers: one RW, counting, and one W.
 * Only one word is watched, naturally aligned, of 1, 2, 4 or 8 bytes: with two
 * words, one access spanning both (a 16-byte vector load) would hit both
 * registers and count twice.  The access address is never seen, so misaligned
 * counts are refused.
 *
 * The debug unit raises one trap per instruction, after it: a read-modify-write
 * instruction (addl $1,(m), lock xadd, incq m) hits both registers once, so
 * RW - W alone would lose its load.  The W breakpoint therefore samples every
 * hit with attr.sigtrap (Linux >= 5.13): a synchronous SIGTRAP, si_code
 * TRAP_PERF, whose context is the registers after the storing instruction.  The
 * handler (run from the page-trap engine's SIGTRAP handler, the only one in the
 * process) finds that instruction and asks the decoder whether it also read the
 * word, and loads = RW - W + those.  Which instruction stored: RIP is just after
 * it, except for a call (RIP is the callee; the return address on the stack
 * tells) and a rep movs/stos between iterations (RIP is on it).  The one ending
 * at RIP is found by decoding forward from the start of the function holding it
 * (.symtab, else .dynsym, of every loaded object, read with libelf when a
 * session starts: a signal handler cannot read files or allocate).  Where no
 * symbol covers it (stripped static functions, the vDSO, code loaded after the
 * start) every start in RIP-15..RIP-1 that decodes to an instruction ending at
 * RIP is a candidate.  Each candidate's accesses are computed from the
 * registers; those that could not have written the word are dropped.  When the
 * rest do not agree whether the word was also read, the hit counts as a store
 * only and as "undetermined" (watch_breakpoint.h): never a guess.  Instruction
 * boundaries are cached per RIP, without allocation.
 *
 * The handler reads memory (instruction bytes, the return address) through
 * /proc/self/mem: a load of its own could be the watched word, or unmapped.
 *
 * Under KVM a hit's #DB now and then arrives with DR6's cause bits lost: the
 * kernel counts nothing and sends a TRAP_BRKPT SIGTRAP; bp_untagged counts
 * it from the instruction (watch_breakpoint_stats: untagged).
 *
 * Costs: a store hit is a #DB trap plus a signal and the handler.  Measured on
 * the 2-core test VM with a build running alongside, 20 000 stores into the
 * word: 16.5 us per hit with both breakpoints counting (the old scheme), 20.7
 * us with the signal and this handler; in a second, more loaded run 23 us
 * counting, 26 us with the signal and an empty handler, 29 us with this
 * handler (a cached boundary, one pread, one decode).  The first
 * hit of an instruction also decodes its function from the start.  Loads cost
 * a trap, misses nothing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "watch/watch.h"
#include "watch/watch_breakpoint.h"
#include "watch/watch_signal.h"
#include "watch/watch_step.h"
#include "watch/watch_sys.h"
#include "watch/watch_x86.h"
#include "common/heritage_probe.h"

#define BP_MAX_WORDS 1

struct bp_word {
	uintptr_t addr;
	unsigned len;
};

/* Split the data intervals into naturally aligned words of at most 8 bytes,
 * largest first; returns the number of words, or -1 if more than max. */
static int split_words(const struct watch_request *req, struct bp_word *w, int max)
{
	int n = 0;

	for (unsigned i = 0; i < req->ndata; i++) {
		uintptr_t a = req->data[i].start, end = req->data[i].end;
		while (a < end) {
			unsigned len = 8;
			while (len > 1 && ((a & (len - 1)) != 0 || a + len > end))
				len >>= 1;
			if (n == max)
				return -1;
			w[n].addr = a;
			w[n].len = len;
			n++;
			a += len;
		}
	}
	return n;
}

static int overlaps_handler_state(uintptr_t lo, uintptr_t hi);

static int breakpoint_fits(const struct watch_request *req, char *why, size_t len)
{
	struct bp_word w[BP_MAX_WORDS];

	if (req->want_code) {
		snprintf(why, len, "instruction ranges are not counted with debug registers (one address each)");
		return -ENOTSUP;
	}
	if (req->observe) {
		snprintf(why, len, "the debug registers " WATCH_OBSERVE_REFUSAL);
		return -ENOTSUP;
	}
	if (req->data_all || req->ndata == 0) {
		snprintf(why, len, "debug registers cannot see every access: set a data range");
		return -ENOTSUP;
	}
	if (req->want_misaligned) {
		snprintf(why, len, "debug registers do not report the access address, so misaligned accesses cannot be told apart");
		return -ENOTSUP;
	}
	if (req->data_by_code) {
		snprintf(why, len, "debug registers cannot combine a data range with an instruction range");
		return -ENOTSUP;
	}
	if (req->overflow_fields) {
		snprintf(why, len, "the kernel counts the debug registers' loads without a signal each, so no load can "
		         "be the one that reached a PAPI_overflow threshold (page-trap and instrument backends can)");
		return -ENOTSUP;
	}
	if (split_words(req, w, BP_MAX_WORDS) < 0) {
		snprintf(why, len, "the cover is not one naturally aligned word of 1, 2, 4 or 8 bytes "
		         "(the word takes an RW and a W debug register; two words could count one access twice)");
		return -ENOSPC;
	}
	if (overlaps_handler_state(req->data[0].start, req->data[0].end)) {
		snprintf(why, len, "the word lies in the state of the counter's own store handler");
		return -EINVAL;
	}
	return 0;
}

/* ---- the loaded objects' functions ------------------------------------------
 * Sorted [lo, hi) of every sized function symbol, in an anonymous mapping that
 * the store handler reads.  Rebuilt (in thread context) when objects were
 * loaded or unloaded since; an old table is left mapped, since a handler on
 * another thread may be reading it. */
struct bp_func {
	uintptr_t lo, hi;
};
struct bp_funcs {
	size_t n;
	struct bp_func f[];
};

#define BP_MAX_OBJECTS 512

struct bp_object {
	uintptr_t base;
	char path[256];
};

struct collect {
	struct bp_object *obj;
	unsigned n;
	unsigned long long adds, subs;
};

static int collect_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct collect *c = arg;
	(void)size;
	c->adds = info->dlpi_adds;
	c->subs = info->dlpi_subs;
	if (c->n >= BP_MAX_OBJECTS)
		return 0;
	const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : NULL;
	if (!name && c->n > 0)
		return 0; /* nameless and not the executable: the vDSO (no file) */
	snprintf(c->obj[c->n].path, sizeof c->obj[c->n].path, "%s", name ? name : "/proc/self/exe");
	c->obj[c->n].base = info->dlpi_addr;
	c->n++;
	return 0;
}

/* Appends obj's function symbols (its .symtab, else .dynsym) to *v. */
static void read_functions(const struct bp_object *obj, struct bp_func **v, size_t *n, size_t *cap)
{
	int fd = open(obj->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL, *pick = NULL;
	GElf_Shdr pick_sh;
	while (e && (scn = elf_nextscn(e, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !pick)) {
			pick = scn;
			pick_sh = sh;
		}
	}
	Elf_Data *d = pick ? elf_getdata(pick, NULL) : NULL;
	size_t nsym = d && pick_sh.sh_entsize ? pick_sh.sh_size / pick_sh.sh_entsize : 0;
	for (size_t i = 0; i < nsym; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || sym.st_size == 0)
			continue;
		int type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (*n == *cap) {
			size_t ncap = *cap ? *cap * 2 : 4096;
			struct bp_func *nv = realloc(*v, ncap * sizeof *nv);
			if (!nv)
				break;
			*v = nv;
			*cap = ncap;
		}
		(*v)[*n].lo = obj->base + (uintptr_t)sym.st_value;
		(*v)[*n].hi = (*v)[*n].lo + (uintptr_t)sym.st_size;
		(*n)++;
	}
	if (e)
		elf_end(e);
	close(fd);
}

static int cmp_func(const void *a, const void *b)
{
	const struct bp_func *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : (x->hi < y->hi ? 1 : x->hi > y->hi ? -1 : 0);
}

/* ---- state shared with the store handler ------------------------------------ */

#define BP_MAX_SESSIONS 64
#define BP_CACHE_SLOTS 4096 /* power of two */
#define BP_MAGIC 0xB7E1ull  /* top 16 bits of attr.sig_data: our breakpoint */

/* One running session: the thread it counts and what its handler adds. */
struct bp_slot {
	_Atomic int tid;
	_Atomic uint32_t gen;     /* in sig_data: a late signal of an earlier session is not this one's */
	uintptr_t lo, hi;
	_Atomic uint64_t rmw;     /* store hits that also read the word */
	_Atomic uint64_t seen;    /* store hits whose signal came */
	/* Hits the kernel could not count (bp_untagged): by what they did. */
	_Atomic uint64_t untagged_loads, untagged_stores;
};

/* Per RIP: which lengths of instruction end there (bit k-1: one of k bytes),
 * whether that came from a function's walk (exact) or the backward scan, and
 * whether the instruction at RIP is a rep movs/stos.  A user RIP is below
 * 2^47, so an entry is one word: written once with a compare-and-swap, read
 * with one load, no lock in the handler. */
#define BP_IP_BITS 47
#define BP_IP_MASK ((1ull << BP_IP_BITS) - 1)
#define BP_ENDS(e) (((e) >> BP_IP_BITS) & 0x7fffu)
#define BP_EXACT (1ull << 62)
#define BP_REP_AT (1ull << 63)

static struct {
	struct bp_slot slot[BP_MAX_SESSIONS];
	_Atomic uint64_t cache[BP_CACHE_SLOTS];
	_Atomic(struct bp_funcs *) funcs;
	size_t funcs_bytes;
	unsigned long long adds, subs; /* dl_iterate_phdr's counters when funcs was built */
	int mem_fd, mem_pid;
	_Atomic uint64_t store_hits, rmw, by_symbol, by_scan, undetermined, late, lost, untagged;
} bp = { .mem_fd = -1 };

static pthread_mutex_t bp_setup_lock = PTHREAD_MUTEX_INITIALIZER;

/* What the handler writes: a hit on it would trap inside the handler. */
static int overlaps_handler_state(uintptr_t lo, uintptr_t hi)
{
	uintptr_t xlo, xhi;
	watch_x86_state_range(&xlo, &xhi);
	return (lo < (uintptr_t)(&bp + 1) && hi > (uintptr_t)&bp) || (lo < xhi && hi > xlo);
}

void watch_breakpoint_stats(struct watch_breakpoint_stats *out)
{
	out->store_hits = atomic_load(&bp.store_hits);
	out->rmw = atomic_load(&bp.rmw);
	out->by_symbol = atomic_load(&bp.by_symbol);
	out->by_scan = atomic_load(&bp.by_scan);
	out->undetermined = atomic_load(&bp.undetermined);
	out->late = atomic_load(&bp.late);
	out->lost = atomic_load(&bp.lost);
	out->untagged = atomic_load(&bp.untagged);
}

/* Rebuild the function table if objects came or went.  Under bp_setup_lock. */
static void refresh_functions(void)
{
	struct bp_object *obj = malloc(BP_MAX_OBJECTS * sizeof *obj);
	if (!obj)
		return;
	struct collect c = { obj, 0, 0, 0 };
	dl_iterate_phdr(collect_object, &c);
	if (atomic_load(&bp.funcs) && c.adds == bp.adds && c.subs == bp.subs) {
		free(obj);
		return;
	}
	elf_version(EV_CURRENT);
	struct bp_func *v = NULL;
	size_t n = 0, cap = 0;
	for (unsigned i = 0; i < c.n; i++)
		read_functions(&obj[i], &v, &n, &cap);
	free(obj);
	if (n)
		qsort(v, n, sizeof *v, cmp_func);
	size_t bytes = sizeof(struct bp_funcs) + n * sizeof(struct bp_func);
	struct bp_funcs *t = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t != MAP_FAILED) {
		t->n = n;
		if (n)
			memcpy(t->f, v, n * sizeof *v);
		/* An object unloaded and another loaded at its address would leave
		 * boundaries of code that is gone. */
		if (atomic_load(&bp.funcs) && c.subs != bp.subs)
			for (unsigned i = 0; i < BP_CACHE_SLOTS; i++)
				atomic_store(&bp.cache[i], 0);
		atomic_store(&bp.funcs, t);
		bp.funcs_bytes = bytes;
		bp.adds = c.adds;
		bp.subs = c.subs;
	}
	free(v);
}

/* ---- the store handler (async-signal-safe from here to bp_on_trap) --------- */

static int read_mem(void *dst, uintptr_t addr, size_t n)
{
	return watch_sys_pread(bp.mem_fd, dst, n, addr) == (long)n ? 0 : -1;
}

/* The function holding the instruction that ends at ip, or NULL. */
static const struct bp_func *function_before(uintptr_t ip)
{
	const struct bp_funcs *t = atomic_load(&bp.funcs);
	if (!t || t->n == 0)
		return NULL;
	size_t lo = 0, hi = t->n; /* first entry with f.lo >= ip */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->f[mid].lo < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Sorted by start, longest first at equal starts: the nearest start
	 * below ip whose function reaches ip. */
	for (size_t k = lo; k > 0 && lo - k < 8; k--)
		if (t->f[k - 1].hi >= ip)
			return &t->f[k - 1];
	return NULL;
}

/* Walk the function from its start: the length of the instruction ending
 * exactly at ip, or 0 when ip is not an instruction boundary of that walk. */
static unsigned walk_to(const struct bp_func *f, uintptr_t ip)
{
	uint8_t buf[512];
	uintptr_t bufpc = 0, bufend = 0, pc = f->lo, prev = 0;
	if (ip - f->lo > (1u << 20))
		return 0;
	while (pc < ip) {
		if (pc + 15 > bufend && bufend < ip + 15) {
			long got = watch_sys_pread(bp.mem_fd, buf, sizeof buf, pc);
			if (got <= 0)
				return 0;
			bufpc = pc;
			bufend = pc + (uintptr_t)got;
		}
		unsigned len;
		if (watch_x86_length(buf + (pc - bufpc), bufend - pc, pc, &len) != 0 || len == 0)
			return 0;
		prev = pc;
		pc += len;
	}
	return pc == ip && ip - prev <= 15 ? (unsigned)(ip - prev) : 0;
}

/* Every k in 1..15 such that the bytes at ip-k decode to one k-byte instruction. */
static unsigned scan_back(uintptr_t ip)
{
	uint8_t buf[15];
	unsigned mask = 0, have = 15;
	if (ip < 15 || read_mem(buf, ip - 15, 15) != 0) {
		/* The page before may be unmapped: only what shares ip-1's page. */
		have = (unsigned)((ip - 1) % 4096) + 1;
		if (have > 15)
			have = 15;
		if (ip < have || read_mem(buf + 15 - have, ip - have, have) != 0)
			return 0;
	}
	for (unsigned k = 1; k <= have; k++) {
		unsigned len;
		if (watch_x86_length(buf + 15 - k, k, ip - k, &len) == 0 && len == k)
			mask |= 1u << (k - 1);
	}
	return mask;
}

static uint64_t find_boundaries(uintptr_t ip)
{
	uint64_t e = ip & BP_IP_MASK;
	const struct bp_func *f = function_before(ip);
	unsigned k = f ? walk_to(f, ip) : 0;
	if (k)
		e |= ((uint64_t)1 << (k - 1)) << BP_IP_BITS | BP_EXACT;
	else
		e |= (uint64_t)scan_back(ip) << BP_IP_BITS;
	uint8_t at[15];
	if (read_mem(at, ip, sizeof at) == 0 && watch_x86_is_rep_store(at, sizeof at))
		e |= BP_REP_AT;
	return e;
}

static uint64_t boundaries(uintptr_t ip)
{
	if (ip == 0 || ip > BP_IP_MASK)
		return 0;
	uint64_t h = (ip * 0x9E3779B97F4A7C15ull) >> 52;
	_Atomic uint64_t *free_slot = NULL;
	for (unsigned i = 0; i < 16; i++) {
		_Atomic uint64_t *c = &bp.cache[(h + i) & (BP_CACHE_SLOTS - 1)];
		uint64_t v = atomic_load(c);
		if (v == 0) {
			free_slot = c;
			break;
		}
		if ((v & BP_IP_MASK) == ip)
			return v;
	}
	uint64_t e = find_boundaries(ip);
	uint64_t zero = 0;
	if (free_slot)
		atomic_compare_exchange_strong(free_slot, &zero, e); /* another thread may have won: same value */
	return e;
}

/* The candidates' answers to "did it also read the word" (and, for an
 * untagged hit, "did it write it"). */
struct verdict {
	int n, yes, no, maybe, scanned;
	int st_yes, st_no, st_maybe;
	int any_access; /* consider candidates that touched the word at all, not only stores */
};

static void tally(int *yes, int *no, int *maybe, int answer)
{
	if (answer == WATCH_X86_YES)
		(*yes)++;
	else if (answer == WATCH_X86_NO)
		(*no)++;
	else
		(*maybe)++;
}

static void consider(struct verdict *v, const struct watch_x86_effect *eff, int exact)
{
	/* A store hit is made only by what could have written the word; an
	 * untagged hit by anything that touched it. */
	if (eff->stores == WATCH_X86_NO && (!v->any_access || eff->loads == WATCH_X86_NO))
		return;
	v->n++;
	v->scanned |= !exact;
	tally(&v->yes, &v->no, &v->maybe, eff->loads);
	tally(&v->st_yes, &v->st_no, &v->st_maybe, eff->stores);
}

/* The instructions ending at end (per e), as candidates; only calls when
 * calls_only (end is then a return address). */
static void consider_ending_at(struct verdict *v, uintptr_t end, uint64_t e, const ucontext_t *uc, uintptr_t lo,
                               uintptr_t hi, int calls_only)
{
	unsigned ends = (unsigned)BP_ENDS(e);
	uint8_t buf[15];
	/* The 15 bytes before end may start on an unmapped page: then each
	 * candidate's own bytes. */
	int whole = ends && end >= 15 && read_mem(buf, end - 15, 15) == 0;
	for (unsigned k = 1; k <= 15; k++) {
		if (!(ends & (1u << (k - 1))) || (!whole && read_mem(buf + 15 - k, end - k, k) != 0))
			continue;
		struct watch_x86_effect eff;
		if (watch_x86_effect(buf + 15 - k, k, end - k, uc, lo, hi, &eff) == 0 && eff.len == k &&
		    (!calls_only || eff.is_call))
			consider(v, &eff, (e & BP_EXACT) != 0);
	}
}

/* Every instruction that may have made the hit the trap at uc reports, as
 * a candidate for v. */
static void gather(struct verdict *v, const ucontext_t *uc, uintptr_t lo, uintptr_t hi)
{
	const greg_t *g = uc->uc_mcontext.gregs;
	uintptr_t ip = (uintptr_t)g[REG_RIP], rsp = (uintptr_t)g[REG_RSP];

	uint64_t e = boundaries(ip);
	consider_ending_at(v, ip, e, uc, lo, hi, 0);
	if ((e & BP_REP_AT) && g[REG_RCX] != 0) {
		/* Between iterations of the rep instruction at RIP. */
		uint8_t at[15];
		struct watch_x86_effect eff;
		if (read_mem(at, ip, sizeof at) == 0 && watch_x86_effect(at, sizeof at, ip, uc, lo, hi, &eff) == 0)
			consider(v, &eff, 1);
	}
	if (rsp < hi && rsp + 8 > lo) {
		/* A call that pushed its return address onto the word: RIP is the
		 * callee, the instruction ends at that return address. */
		uint64_t ret;
		if (read_mem(&ret, rsp, sizeof ret) == 0) {
			uint64_t er = boundaries((uintptr_t)ret);
			consider_ending_at(v, (uintptr_t)ret, er, uc, lo, hi, 1);
		}
	}
}

/* 1 if the instruction that made this store hit also read [lo, hi), 0 if
 * not, -1 if that cannot be told; *scanned when a candidate came from the
 * backward scan. */
static int classify_hit(const ucontext_t *uc, uintptr_t lo, uintptr_t hi, int *scanned)
{
	struct verdict v = { 0 };
	gather(&v, uc, lo, hi);
	*scanned = v.scanned;
	if (v.n == 0 || v.maybe || (v.yes && v.no))
		return -1;
	return v.yes ? 1 : 0;
}

/* A #DB whose DR6 came without its cause.  Under KVM, DR6 now and then loses
 * its bits (the step-trap case is mended in watch_signal.c's on_trap); the
 * kernel's breakpoint handler then cannot tell which breakpoint fired, counts
 * nothing, and sends SIGTRAP as for an icebp, TRAP_BRKPT, which killed
 * ctests/data_range_clang about once in 150 runs (RIP just after a load of
 * the watched pointer, TF clear).  In a thread with a running session it is
 * that session's hit when an instruction ending at RIP touched the word: it
 * is counted here, by what that instruction did (a store hit both
 * breakpoints, so RW - W is unchanged and the store and, for a
 * read-modify-write, the load are added; a load hit only RW).  When the
 * candidates disagree it is counted as nothing and tallied "undetermined".
 * 0 (not ours) when no session's word was touched: a real icebp. */
static int bp_untagged(ucontext_t *uc)
{
	int self = watch_sys_gettid(), ours = 0;
	for (unsigned k = 0; k < BP_MAX_SESSIONS; k++) {
		struct bp_slot *sl = &bp.slot[k];
		if (atomic_load(&sl->tid) != self)
			continue;
		struct verdict v = { .any_access = 1 };
		gather(&v, uc, sl->lo, sl->hi);
		if (v.n == 0)
			continue;
		ours = 1;
		atomic_fetch_add(&bp.untagged, 1);
		if (v.maybe || v.st_maybe || (v.yes && v.no) || (v.st_yes && v.st_no)) {
			atomic_fetch_add(&bp.undetermined, 1);
			continue;
		}
		if (v.st_yes)
			atomic_fetch_add(&sl->untagged_stores, 1);
		if (v.yes)
			atomic_fetch_add(&sl->untagged_loads, 1);
	}
	return ours;
}

static int bp_on_trap(int sig, siginfo_t *si, ucontext_t *uc)
{
	(void)sig;
	if (si->si_code != WATCH_TRAP_PERF)
		return bp_untagged(uc);
	struct watch_trap_perf_info pi = watch_trap_perf_info(si);
	if (pi.type != PERF_TYPE_BREAKPOINT || (pi.data >> 48) != BP_MAGIC)
		return 0; /* the application's own perf event */
	unsigned k = (unsigned)(pi.data & 0xffff);
	if (k >= BP_MAX_SESSIONS)
		return 1;
	struct bp_slot *sl = &bp.slot[k];
	if (atomic_load(&sl->tid) != watch_sys_gettid() || atomic_load(&sl->gen) != (uint32_t)(pi.data >> 16))
		return 1; /* after its session stopped (it was blocked): already counted as lost */
	atomic_fetch_add(&sl->seen, 1);
	atomic_fetch_add(&bp.store_hits, 1);
	if (pi.flags & WATCH_TRAP_PERF_FLAG_ASYNC) {
		atomic_fetch_add(&bp.undetermined, 1);
		atomic_fetch_add(&bp.late, 1);
		return 1;
	}
	int scanned = 0;
	int r = classify_hit(uc, sl->lo, sl->hi, &scanned);
	if (r < 0) {
		atomic_fetch_add(&bp.undetermined, 1);
		return 1;
	}
	atomic_fetch_add(scanned ? &bp.by_scan : &bp.by_symbol, 1);
	if (r) {
		atomic_fetch_add(&sl->rmw, 1);
		atomic_fetch_add(&bp.rmw, 1);
	}
	return 1;
}

/* ---- sessions ----------------------------------------------------------------- */

static int open_bp(uintptr_t addr, unsigned len, unsigned type, uint64_t sig_data)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof attr);
	attr.size = sizeof attr;
	attr.type = PERF_TYPE_BREAKPOINT;
	attr.bp_type = type;
	attr.bp_addr = addr;
	attr.bp_len = len;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	attr.disabled = 1;
	if (sig_data) {
		/* Every hit, as a synchronous SIGTRAP to this thread; the kernel
		 * requires remove_on_exec with sigtrap. */
		attr.sample_period = 1;
		attr.sigtrap = 1;
		attr.remove_on_exec = 1;
		attr.sig_data = sig_data;
	}
	return (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static void close_all(struct watch_session *s)
{
	for (int i = 0; i < s->nbp_fd; i++)
		close(s->bp_fd[i]);
	s->nbp_fd = 0;
}

/* What the handler needs before the first signal: the decoder, a
 * /proc/self/mem of this process, the function table, the SIGTRAP hook. */
static int prepare(char *why, size_t len)
{
	int err = watch_x86_init();
	if (err) {
		snprintf(why, len, "breakpoint: cannot open the x86 decoder (%s)", strerror(-err));
		return err;
	}
	pthread_mutex_lock(&bp_setup_lock);
	int pid = (int)getpid();
	if (bp.mem_fd < 0 || bp.mem_pid != pid) {
		int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			pthread_mutex_unlock(&bp_setup_lock);
			snprintf(why, len, "breakpoint: open /proc/self/mem: %s", strerror(-err));
			return err;
		}
		if (bp.mem_fd >= 0 && bp.mem_pid != pid)
			close(bp.mem_fd); /* the parent's, inherited across fork */
		bp.mem_fd = fd;
		bp.mem_pid = pid;
	}
	refresh_functions();
	pthread_mutex_unlock(&bp_setup_lock);
	return watch_trap_perf_claim(bp_on_trap, why, len);
}

static struct bp_slot *take_slot(uintptr_t lo, uintptr_t hi, unsigned *index)
{
	int self = watch_sys_gettid();
	for (unsigned i = 0; i < BP_MAX_SESSIONS; i++) {
		int free_tid = 0;
		if (!atomic_compare_exchange_strong(&bp.slot[i].tid, &free_tid, -1))
			continue;
		struct bp_slot *sl = &bp.slot[i];
		sl->lo = lo;
		sl->hi = hi;
		atomic_store(&sl->rmw, 0);
		atomic_store(&sl->seen, 0);
		atomic_store(&sl->untagged_loads, 0);
		atomic_store(&sl->untagged_stores, 0);
		atomic_fetch_add(&sl->gen, 1);
		atomic_store(&sl->tid, self);
		*index = i;
		return sl;
	}
	return NULL;
}

/* bp_fd layout: [0] = RW on the word, counting; [1] = W, a signal per hit. */
static int breakpoint_start(struct watch_session *s, char *why, size_t len)
{
	struct bp_word w[BP_MAX_WORDS];
	int n = split_words(&s->req, w, BP_MAX_WORDS);
	int err = n == 1 ? prepare(why, len) : -EINVAL;

	s->nbp_fd = 0;
	s->priv = NULL;
	if (n != 1) {
		snprintf(why, len, "breakpoint: not one word (fits() refuses this)");
		return err;
	}
	if (err)
		return err;
	const struct bp_funcs *t = atomic_load(&bp.funcs);
	if (t && w[0].addr < (uintptr_t)t + bp.funcs_bytes && w[0].addr + w[0].len > (uintptr_t)t) {
		snprintf(why, len, "breakpoint: the word lies in the counter's own symbol table");
		return -EINVAL;
	}
	unsigned idx;
	struct bp_slot *sl = take_slot(w[0].addr, w[0].addr + w[0].len, &idx);
	if (!sl) {
		snprintf(why, len, "breakpoint: more than %d sessions running at once", BP_MAX_SESSIONS);
		return -ENOSPC;
	}
	uint64_t sig_data = BP_MAGIC << 48 | (uint64_t)atomic_load(&sl->gen) << 16 | idx;
	static const unsigned types[2] = { HW_BREAKPOINT_RW, HW_BREAKPOINT_W };
	for (int t2 = 0; t2 < 2; t2++) {
		int fd = open_bp(w[0].addr, w[0].len, types[t2], t2 == 1 ? sig_data : 0);
		if (fd < 0) {
			err = errno;
			close_all(s);
			atomic_store(&sl->tid, 0);
			snprintf(why, len, "perf_event_open(PERF_TYPE_BREAKPOINT, %#lx, len %u%s): %s%s",
			         (unsigned long)w[0].addr, w[0].len, t2 == 1 ? ", sigtrap" : "", strerror(err),
			         err == EACCES || err == EPERM ? " (check /proc/sys/kernel/perf_event_paranoid)" :
			         err == ENOSPC ? " (debug registers in use, e.g. by a debugger)" :
			         t2 == 1 && err == EINVAL ? " (attr.sigtrap needs Linux 5.13; without it a read-modify-write "
			                                   "instruction's load cannot be seen: use the pagetrap backend)" : "");
			return -err;
		}
		s->bp_fd[s->nbp_fd++] = fd;
	}
	s->priv = sl;
	for (int i = 0; i < s->nbp_fd; i++)
		ioctl(s->bp_fd[i], PERF_EVENT_IOC_ENABLE, 0);
	return 0;
}

static void read_raw(const struct watch_session *s, uint64_t *rw, uint64_t *wr)
{
	*rw = *wr = 0;
	if (s->nbp_fd < 2)
		return;
	if (read(s->bp_fd[0], rw, sizeof *rw) != sizeof *rw)
		*rw = 0;
	if (read(s->bp_fd[1], wr, sizeof *wr) != sizeof *wr)
		*wr = 0;
}

static void breakpoint_read(const struct watch_session *s, struct watch_counts *live)
{
	const struct bp_slot *sl = s->priv;
	uint64_t rw, wr;

	memset(live, 0, sizeof *live);
	read_raw(s, &rw, &wr);
	live->stores = wr + (sl ? atomic_load(&sl->untagged_stores) : 0);
	live->loads = (rw >= wr ? rw - wr : 0) + (sl ? atomic_load(&sl->rmw) + atomic_load(&sl->untagged_loads) : 0);
}

static void breakpoint_stop(struct watch_session *s)
{
	struct bp_slot *sl = s->priv;
	struct watch_counts live;
	uint64_t rw, wr;

	for (int i = 0; i < s->nbp_fd; i++)
		ioctl(s->bp_fd[i], PERF_EVENT_IOC_DISABLE, 0);
	breakpoint_read(s, &live);
	watch_counts_add(&s->acc, &live);
	if (sl) {
		/* A hit whose signal never came (merged into a SIGTRAP already
		 * pending, or still blocked): its load, if any, is unknown. */
		read_raw(s, &rw, &wr);
		uint64_t seen = atomic_load(&sl->seen);
		if (wr > seen) {
			atomic_fetch_add(&bp.lost, wr - seen);
			atomic_fetch_add(&bp.undetermined, wr - seen);
		}
		atomic_store(&sl->tid, 0);
		s->priv = NULL;
	}
	close_all(s);
}

static void breakpoint_reset(struct watch_session *s)
{
	struct bp_slot *sl = s->priv;

	for (int i = 0; i < s->nbp_fd; i++)
		ioctl(s->bp_fd[i], PERF_EVENT_IOC_RESET, 0);
	if (sl) {
		atomic_store(&sl->rmw, 0);
		atomic_store(&sl->seen, 0);
		atomic_store(&sl->untagged_loads, 0);
		atomic_store(&sl->untagged_stores, 0);
	}
}

const struct watch_backend_ops watch_breakpoint_ops = {
	.name = "breakpoint",
	.fits = breakpoint_fits,
	.start = breakpoint_start,
	.stop = breakpoint_stop,
	.read = breakpoint_read,
	.reset = breakpoint_reset,
};

/* ---- the probe ------------------------------------------------------------------
 * The backend itself, on a private word of each length it uses: 3 loads and
 * 2 stores must read back as exactly that, and both stores must have
 * signalled (the W breakpoint's SIGTRAP, which a read-modify-write's load
 * depends on).  On the AMD family 26 guest every open succeeds and every
 * count stays 0: only counting tells. */
static void probe_accesses(volatile void *p, unsigned len)
{
	switch (len) {
	case 1: { volatile uint8_t *q = p; *q = (uint8_t)(*q + 1); *q = (uint8_t)(*q + *q); break; }
	case 2: { volatile uint16_t *q = p; *q = (uint16_t)(*q + 1); *q = (uint16_t)(*q + *q); break; }
	case 4: { volatile uint32_t *q = p; *q = *q + 1; *q = *q + *q; break; }
	default: { volatile uint64_t *q = p; *q = *q + 1; *q = *q + *q; break; }
	}
}

void watch_breakpoint_probe(struct heritage_probe_result *r)
{
	static const unsigned lens[] = { 1, 2, 4, 8 };
	uint64_t word[2] __attribute__((aligned(16))) = { 0, 0 };
	char why[WATCH_ERRLEN];
	unsigned total = 0, counted = 0;

	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		struct watch_session s;
		memset(&s, 0, sizeof s);
		uintptr_t a = (uintptr_t)&word[1];
		s.req.ndata = 1;
		s.req.want_data = 1;
		s.req.data[0] = (struct watch_interval){ a, a + lens[i] };
		watch_signal_probing(1);
		int err = breakpoint_start(&s, why, sizeof why);
		watch_signal_probing(0);
		if (err) {
			int e = -err;
			if (e == EACCES || e == EPERM) {
				heritage_probe_refused(r, e, "perf_event_open(PERF_TYPE_BREAKPOINT, this thread)", 2);
				return;
			}
			r->state = HERITAGE_PROBE_ABSENT;
			r->err = e == ENOSPC ? -EBUSY : -ENOTSUP;
			snprintf(r->evidence, sizeof r->evidence, "%.300s", why);
			return;
		}
		probe_accesses((volatile void *)a, lens[i]);
		const struct bp_slot *sl = s.priv;
		uint64_t signalled = sl ? atomic_load(&sl->seen) : 0;
		struct watch_counts live;
		breakpoint_read(&s, &live);
		breakpoint_stop(&s);
		total += 5;
		counted += (unsigned)(live.loads + live.stores);
		if (live.loads != 3 || live.stores != 2 || signalled != 2) {
			r->state = HERITAGE_PROBE_DEAD;
			snprintf(r->evidence, sizeof r->evidence, "opened, counted %llu loads and %llu stores of a %u-byte "
			         "word, want 3 and 2; %llu of 2 store signals came (%u of %u accesses counted so far)",
			         (unsigned long long)live.loads, (unsigned long long)live.stores, lens[i],
			         (unsigned long long)signalled, counted, total);
			return;
		}
	}
	r->state = HERITAGE_PROBE_WORKS;
	snprintf(r->evidence, sizeof r->evidence, "counted %u of %u accesses exactly (3 loads, 2 signalled stores on "
	         "words of 1, 2, 4 and 8 bytes)", counted, total);
}
