/*
 * instrument backend: the compiler reports every load and store of the code
 * it instruments, with no ASan runtime; we count the reports against
 * thread-local bounds, so counting is exact, per thread, and only sees
 * instrumented code (libc and the kernel are not).  Two ways of building
 * that code, which may be mixed in one program:
 *
 * outline (pkg-config --cflags papi-heritage-instrument):
 *   -fsanitize=kernel-address --param asan-instrumentation-with-call-threshold=0
 *   --param asan-stack=0 --param asan-globals=0
 *   calls __asan_{load,store}N_noabort(addr) before every access.  A call per
 *   access whatever is watched.
 *
 * inline (pkg-config --cflags papi-heritage-instrument-inline):
 *   -fsanitize=kernel-address -fasan-shadow-offset=0x7fff8000
 *   --param asan-instrumentation-with-call-threshold=2147483647
 *   --param asan-stack=0 --param asan-globals=0
 *   checks a shadow byte per 8-byte granule, at (addr >> 3) + 0x7fff8000,
 *   inline before every access and calls __asan_report_{load,store}N_noabort
 *   only when it is non-zero.  (For kernel-address gcc 12 defaults the call
 *   threshold to 0, i.e. outline: the threshold must be given.)  We reserve
 *   that shadow in a constructor, before any instrumented code runs, and
 *   poison it (0xff) only over what running sessions watch, so unwatched
 *   accesses cost a load, a compare and a branch, and watched ones a call.
 *
 * clang inline (pkg-config --cflags papi-heritage-instrument-clang-inline):
 *   -fsanitize=kernel-address -mllvm -asan-mapping-offset=0x7fff8000
 *   -mllvm -asan-instrumentation-with-call-threshold=2147483647
 *   -mllvm -asan-stack=0 -mllvm -asan-globals=0
 *   the same shadow and reports, the checks placed after the vectoriser;
 *   see __asan_report_load_n_noabort for how its reports differ.
 *
 * All flavours but clang inline also call __sanitizer_cov_trace_pc at every
 * basic block (-fsanitize-coverage=trace-pc): executed instructions in code
 * ranges are counted from those (watch_blocks.c); the data hooks below then
 * count data accesses only when the set has data events too.
 *
 * Both sets of hooks end in the same test: one compare pair against [lo, hi)
 * in initial-exec TLS (no __tls_get_addr call); everything rarer - several
 * intervals, a code-range filter - goes through `slow`.  The shadow is shared
 * by all threads and coarse (granules, plus slack around each range, see
 * INLINE_SLACK), so a report only says "maybe": the TLS test decides.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/heritage_error.h"
#include "watch/watch.h"
#include "watch/watch_blocks.h"
#include "watch/watch_instrument_exe.h"
#include "watch/watch_self.h"

struct instrument_tls {
	uintptr_t lo, hi;        /* bounding box of what counts; hi == 0: off */
	int slow;                /* need the exact test below */
	struct watch_request req;
	struct watch_counts c;
	struct watch_overflow *ovf; /* overflow to deliver (the slow path notes it) */
};

static __thread struct instrument_tls it __attribute__((tls_model("initial-exec")));

static int interval_hit(const struct watch_interval *iv, unsigned n, uintptr_t a, size_t size)
{
	for (unsigned i = 0; i < n; i++)
		if (a < iv[i].end && a + size > iv[i].start)
			return 1;
	return 0;
}

/* Where an inline-reported access is, for the code-range filter.  An
 * outline hook is called right before its access, so its return address is
 * next to the access.  An inline report is called from a block gcc puts
 * after the function's hot code (or in its .cold part) which, in loops,
 * reloads a register or two from the stack and jumps back to the access:
 * skip the reloads (mov disp8(%rsp), reg) and follow the jump.  A block that
 * repeats the access itself instead holds it right after the call; anything
 * else is left as the return address, inside the same function. */
static uintptr_t report_access_pc(uintptr_t ret)
{
	const unsigned char *p = (const unsigned char *)ret;

	for (int k = 0; k < 4; k++) {
		int rex = (p[0] & 0xf0) == 0x40;
		const unsigned char *q = p + rex;
		/* 8b /r with mod 01, rm 100 (SIB), SIB 0x24 (base rsp): a reload. */
		if (q[0] == 0x8b && (q[1] & 0xc7) == 0x44 && q[2] == 0x24)
			p = q + 4;
		else
			break;
	}
	uintptr_t at = (uintptr_t)p;
	if (p[0] == 0xeb)   /* jmp rel8 */
		return at + 2 + (uintptr_t)(intptr_t)(int8_t)p[1];
	if (p[0] == 0xe9) { /* jmp rel32 */
		int32_t d;
		memcpy(&d, p + 1, sizeof d);
		return at + 5 + (uintptr_t)(intptr_t)d;
	}
	return ret;
}

static int slow_match(uintptr_t a, size_t size, uintptr_t pc)
{
	if (!it.req.data_all && !interval_hit(it.req.data, it.req.ndata, a, size))
		return 0;
	if (it.req.data_by_code && !interval_hit(it.req.code_pair, it.req.ncode, pc, 1))
		return 0;
	return 1;
}

/* Everything but the plain count: several intervals, a code-range filter,
 * misaligned accounting.  Kept out of line so the common hook is a compare
 * and an increment (a misaligned counter updated on every access costs a
 * dependent read-modify-write per hook call: 2.2 ns instead of 0.7). */
static __attribute__((noinline)) void account_slow(uintptr_t a, size_t size, int store, uintptr_t pc,
                                                   int report)
{
	if (report && it.req.data_by_code)
		pc = report_access_pc(pc);
	int counted = slow_match(a, size, pc);
	if (it.req.observe)
		it.req.observe(it.req.observe_arg, a, size, store, pc, counted);
	if (!counted)
		return;
	int misaligned = (size & (size - 1)) == 0 && (a & (size - 1)) != 0;
	if (store) {
		it.c.stores++;
		it.c.misaligned_stores += misaligned;
	} else {
		it.c.loads++;
		it.c.misaligned_loads += misaligned;
	}
	if (it.ovf)
		watch_overflow_note_access(it.ovf, !store, store, misaligned, 1, pc);
}

/* The union of every running instrument session's bounds, process-wide.
 * Tested first: a hidden global is one RIP-relative compare, where the
 * thread-local bounds need the TLS offset loaded from the GOT first, and
 * most accesses of a program watching a small range end here (it took the
 * 1%-watched benchmark loop from x4.4 to about x4 native). */
static uintptr_t any_lo = UINTPTR_MAX, any_hi;

/* The executable's own hooks, when it links libpapi-heritage-instrument.a. */
static const struct watch_instrument_exe *exe;

#define RUNNING_BOXES 256
static pthread_mutex_t boxes_lock = PTHREAD_MUTEX_INITIALIZER;
static struct watch_interval boxes[RUNNING_BOXES];
static unsigned nboxes;
static unsigned overflowed_boxes;   /* sessions beyond the table: no filtering */

static void publish_union(void)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0;

	for (unsigned i = 0; i < nboxes; i++) {
		if (boxes[i].start < lo)
			lo = boxes[i].start;
		if (boxes[i].end > hi)
			hi = boxes[i].end;
	}
	if (overflowed_boxes) {
		lo = 0;
		hi = UINTPTR_MAX;
	}
	__atomic_store_n(&any_lo, lo, __ATOMIC_RELAXED);
	__atomic_store_n(&any_hi, hi, __ATOMIC_RELAXED);
	if (exe)
		exe->set_union(lo, hi);
}

/* A fork while another thread holds the lock must not leave it locked in
 * the child. */
static void boxes_prefork(void) { pthread_mutex_lock(&boxes_lock); }
static void boxes_postfork(void) { pthread_mutex_unlock(&boxes_lock); }
static void boxes_init(void) { pthread_atfork(boxes_prefork, boxes_postfork, boxes_postfork); }
static pthread_once_t boxes_once = PTHREAD_ONCE_INIT;

static void box_add(uintptr_t lo, uintptr_t hi)
{
	pthread_once(&boxes_once, boxes_init);
	pthread_mutex_lock(&boxes_lock);
	if (nboxes < RUNNING_BOXES) {
		boxes[nboxes].start = lo;
		boxes[nboxes].end = hi;
		nboxes++;
	} else {
		overflowed_boxes++;
	}
	publish_union();
	pthread_mutex_unlock(&boxes_lock);
}

static void box_remove(uintptr_t lo, uintptr_t hi)
{
	pthread_mutex_lock(&boxes_lock);
	unsigned i;
	for (i = 0; i < nboxes; i++)
		if (boxes[i].start == lo && boxes[i].end == hi)
			break;
	if (i < nboxes)
		boxes[i] = boxes[--nboxes];
	else if (overflowed_boxes)
		overflowed_boxes--;
	publish_union();
	pthread_mutex_unlock(&boxes_lock);
}

/* report: called from an inline check's report block, not right before the
 * access (a constant: the hooks below inline this). */
static inline __attribute__((always_inline)) void account(uintptr_t a, size_t size, int store, uintptr_t pc,
                                                         int report)
{
	if (__builtin_expect(a >= __atomic_load_n(&any_hi, __ATOMIC_RELAXED) ||
	                     a + size <= __atomic_load_n(&any_lo, __ATOMIC_RELAXED), 1))
		return;
	if (__builtin_expect(a < it.hi && a + size > it.lo, 0)) {
		if (__builtin_expect(it.slow, 0))
			account_slow(a, size, store, pc, report);
		else if (store)
			it.c.stores++;
		else
			it.c.loads++;
	}
}

#define PC() ((uintptr_t)__builtin_return_address(0))
#define HOOKS(n)                                                                         \
	HERITAGE_PUBLIC void __asan_load##n##_noabort(uintptr_t a);                      \
	HERITAGE_PUBLIC void __asan_store##n##_noabort(uintptr_t a);                     \
	void __asan_load##n##_noabort(uintptr_t a) { account(a, n, 0, PC(), 0); }        \
	void __asan_store##n##_noabort(uintptr_t a) { account(a, n, 1, PC(), 0); }
HOOKS(1)
HOOKS(2)
HOOKS(4)
HOOKS(8)
HOOKS(16)

HERITAGE_PUBLIC void __asan_loadN_noabort(uintptr_t a, size_t size);
HERITAGE_PUBLIC void __asan_storeN_noabort(uintptr_t a, size_t size);
void __asan_loadN_noabort(uintptr_t a, size_t size) { account(a, size, 0, PC(), 0); }
void __asan_storeN_noabort(uintptr_t a, size_t size) { account(a, size, 1, PC(), 0); }

/* The inline mode's reports.  gcc 12 emits the sized ones for 1, 2, 4, 8
 * and 16-byte accesses (16: SSE vectors, __int128) and _n for every other
 * size (32-byte AVX vectors, struct copies, packed fields), with the size. */
#define REPORT_HOOKS(n)                                                                  \
	HERITAGE_PUBLIC void __asan_report_load##n##_noabort(uintptr_t a);               \
	HERITAGE_PUBLIC void __asan_report_store##n##_noabort(uintptr_t a);              \
	void __asan_report_load##n##_noabort(uintptr_t a) { account(a, n, 0, PC(), 1); } \
	void __asan_report_store##n##_noabort(uintptr_t a) { account(a, n, 1, PC(), 1); }
REPORT_HOOKS(1)
REPORT_HOOKS(2)
REPORT_HOOKS(4)
REPORT_HOOKS(8)
REPORT_HOOKS(16)

/* clang's inline checks (papi-heritage-instrument-clang-inline) differ for
 * an access of unusual size or alignment - an unaligned 16-byte vector, an
 * 8-byte load of ints, 32 bytes: gcc tests its first and last granules in
 * one condition and reports once, with its start; clang (14) tests its first
 * byte, then its last byte, each test calling _n with the address it tested.
 * So a watched access reports twice, (a, n) then (a + n - 1, n), with no
 * other _n report between them in this thread (the two tests are adjacent).
 * The second is dropped here: it repeats the first, and when the first did
 * not fire (its first byte's shadow clear, i.e. more than INLINE_SLACK bytes
 * before a watched interval) the second cannot overlap one either, for
 * n <= INLINE_SLACK / 2 (64 bytes: AVX-512).  A genuine access at exactly
 * a + n - 1, of the same size, reported next, would be dropped too: with
 * clang's checks its first byte was just tested clear (the second test did
 * not fire), so it cannot fire now while this thread's claim stands; only
 * gcc code making such one-byte-overlapping accesses back to back would lose
 * one (a pattern we know in no compiler output).  A signal handler whose own
 * watched _n access lands between the two reports makes the second count
 * (an extra count, never a lost one).  Reset by PAPI_start. */
static __thread struct {
	uintptr_t next;   /* a + n - 1 of the last _n report */
	size_t n;         /* its size; 0: none pending */
} last_n __attribute__((tls_model("initial-exec")));

static inline __attribute__((always_inline)) int second_check(uintptr_t a, size_t size)
{
	if (a == last_n.next && size == last_n.n) {
		last_n.n = 0;
		return 1;
	}
	last_n.next = a + size - 1;
	last_n.n = size;
	return 0;
}

HERITAGE_PUBLIC void __asan_report_load_n_noabort(uintptr_t a, size_t size);
HERITAGE_PUBLIC void __asan_report_store_n_noabort(uintptr_t a, size_t size);
void __asan_report_load_n_noabort(uintptr_t a, size_t size)
{
	if (!second_check(a, size))
		account(a, size, 0, PC(), 1);
}
void __asan_report_store_n_noabort(uintptr_t a, size_t size)
{
	if (!second_check(a, size))
		account(a, size, 1, PC(), 1);
}

HERITAGE_PUBLIC void papi_heritage_instrument_attach(const struct watch_instrument_exe *e)
{
	/* ABI 2 (no block hook of its own), 3 and 4 share the data hooks'
	 * part; an older archive's code and statics are not told apart from
	 * the program's. */
	if (e && e->abi >= 2 && e->abi <= WATCH_INSTRUMENT_EXE_ABI) {
		exe = e;
		watch_blocks_attach(e);
		if (e->abi >= 4)
			watch_self_set_exe(e->text_lo, e->text_hi, e->state_lo, e->state_hi);
	}
}

/* The executable's hooks hand everything but the plain count over here,
 * where the session's request is. */
HERITAGE_PUBLIC void papi_heritage_instrument_slow(uintptr_t a, size_t size, int store, uintptr_t pc)
{
	if (a < it.hi && a + size > it.lo)
		account_slow(a, size, store, pc, 0);
}

/* Called before noreturn calls (exit, longjmp); ASan unpoisons the stack
 * there, dropping the redzones of the frames skipped.  Our poison marks only
 * watched ranges, never redzones, so there is nothing to do. */
HERITAGE_PUBLIC void __asan_handle_no_return(void);
void __asan_handle_no_return(void)
{
}

/* Which hooks the executable imports: instrumented code calls them, so the
 * executable's dynamic symbol table names them as undefined.  Only .dynsym:
 * in a dynamic executable every import is there, and it stays small however
 * big the full .symtab of a debug build is (this runs in every program that
 * loads libpapi, from the constructor below). */
enum {
	HOOKS_OUTLINE = 1,  /* __asan_{load,store}*_noabort */
	HOOKS_INLINE = 2,   /* __asan_report_*_noabort */
};

/* The executable is mapped and read in place, not through libelf: libelf
 * mallocs and frees its descriptors, and this runs from a constructor,
 * before main.  The chunks it freed (12.8 KiB at the start of the heap)
 * were too small for the program's first arrays, which went above them, and
 * were then reused by PAPI's own small allocations, below those arrays.
 * Measured with PAPI's own ctests/data_range on itanium2: the event set's
 * state lay inside the coarse cover of its first malloc'd array, and
 * PAPI_set_opt refused the range, in 5 runs of 24; without the scan's
 * allocations in 0 of 30. */
static int scan_executable(void)
{
	int found = 0;
	struct stat st;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return 0;
	}
	size_t size = (size_t)st.st_size;
	const unsigned char *img = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (img == MAP_FAILED)
		return 0;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > size ||
	    eh->e_shnum > (size - eh->e_shoff) / sizeof(Elf64_Shdr))
		goto out;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
	for (unsigned k = 0; k < eh->e_shnum && found != (HOOKS_OUTLINE | HOOKS_INLINE); k++) {
		if (sh[k].sh_type != SHT_DYNSYM || sh[k].sh_link >= eh->e_shnum)
			continue;
		const Elf64_Shdr *str = &sh[sh[k].sh_link];
		if (sh[k].sh_offset > size || sh[k].sh_size > size - sh[k].sh_offset || str->sh_offset > size ||
		    str->sh_size > size - str->sh_offset)
			continue;
		const Elf64_Sym *sym = (const Elf64_Sym *)(img + sh[k].sh_offset);
		const char *names = (const char *)img + str->sh_offset;
		size_t n = sh[k].sh_size / sizeof(Elf64_Sym);
		for (size_t i = 0; i < n && found != (HOOKS_OUTLINE | HOOKS_INLINE); i++) {
			if (sym[i].st_shndx != SHN_UNDEF || sym[i].st_name >= str->sh_size)
				continue;
			const char *name = names + sym[i].st_name;
			size_t left = str->sh_size - sym[i].st_name;
			if (strnlen(name, left) == left || strncmp(name, "__asan_", 7) != 0 || !strstr(name, "_noabort"))
				continue;
			found |= strncmp(name, "__asan_report_", 14) == 0 ? HOOKS_INLINE : HOOKS_OUTLINE;
		}
	}
out:
	munmap((void *)img, size);
	return found;
}

/* Looked up once: the executable does not change under us.  The constructor
 * fills it before any thread exists. */
static int hooks_imported(void)
{
	static int cached = -1;

	if (cached < 0)
		cached = scan_executable();
	return cached;
}

int watch_instrument_present(void)
{
	return exe != NULL || hooks_imported() != 0;
}

/* ------------------------------------------------------------ inline shadow
 * The x86-64 ASan layout: shadow byte of addr at (addr >> 3) + SHADOW_OFFSET,
 * user space [0, 2^47), so the shadow is [0x7fff8000, 0x10007fff8000):
 * 16 TiB of address space, between the low 2 GiB (non-PIE executables, their
 * brk heap) and PIE executables and mmaps (0x55..., 0x7f...).  MAP_NORESERVE:
 * only the pages we poison, and the pages instrumented code reads (the
 * shared zero page), ever cost memory. */
#define SHADOW_OFFSET 0x7fff8000UL
#define USER_SPACE_END (1UL << 47)
#define SHADOW_SIZE (USER_SPACE_END >> 3)
#define GRANULE 8
/* Bytes poisoned beyond each end of a watched interval.  The inline check of
 * an access looks at one or two shadow bytes, not all it covers: 1/2/4/8-byte
 * accesses at the granule of their first byte, 16-byte ones at the first two
 * granules, other sizes at the granules of their first and last bytes.  A
 * misaligned access that starts in the granule(s) before an interval, or a
 * struct copy that starts before it, is caught because its first byte lies
 * in the slack; only a single access more than 2 * INLINE_SLACK bytes longer
 * than the interval, covering it from outside on both ends, escapes. */
#define INLINE_SLACK 128
/* Poisoning writes a shadow byte per granule: refuse ranges whose shadow
 * would be more than this (8 GiB watched); the outline build has no limit. */
#define INLINE_MAX_SHADOW (1UL << 30)
/* Unpoisoning gives whole pages back (MADV_DONTNEED) only past this size;
 * smaller shadows stay resident, so that repeated PAPI_start/PAPI_stop of the
 * same range do not page-fault their shadow back in every time. */
#define SHADOW_RELEASE_MIN (64UL << 20)

static int shadow_ready;

/* One per running session that poisons: the granule spans [g0, g1) it
 * poisoned.  Stop clears only what no other claim covers, so other threads'
 * sessions never see their granules unpoisoned even for a moment. */
struct shadow_claim {
	struct shadow_claim *next;
	unsigned n;
	uintptr_t g0[WATCH_MAX_INTERVALS], g1[WATCH_MAX_INTERVALS];
};

static pthread_mutex_t claims_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shadow_claim *claims;

/* A fork while another thread holds the lock would leave it held forever in
 * the child. */
static void claims_prefork(void)
{
	pthread_mutex_lock(&claims_lock);
}

static void claims_postfork(void)
{
	pthread_mutex_unlock(&claims_lock);
}

__attribute__((constructor)) static void inline_shadow_init(void)
{
	/* Ordinary PAPI programs (and outline-instrumented ones) never read the
	 * shadow: they get no 16 TiB reservation. */
	if (!(hooks_imported() & HOOKS_INLINE))
		return;
	void *want = (void *)SHADOW_OFFSET;
	void *p = mmap(want, SHADOW_SIZE, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	int err = errno;
	if (p != want) {
		const char *hint = "";
		if (p != MAP_FAILED) {
			/* A kernel before 4.17 takes MAP_FIXED_NOREPLACE as a hint. */
			munmap(p, SHADOW_SIZE);
			err = EEXIST;
		}
		if (err == EEXIST)
			hint = ": something is already mapped there";
		else if (err == ENOMEM)
			hint = ": check vm.overcommit_memory (2 forbids it) and ulimit -v";
		/* Every instrumented access would fault on the missing shadow: stop
		 * here, saying why, rather than crash somewhere in the program. */
		fprintf(stderr, "papi-heritage: this program was built with the inline instrument flags "
		        "(papi-heritage-instrument-inline) but the shadow they check, [%#lx, %#lx), cannot be "
		        "reserved: %s%s\n", SHADOW_OFFSET, SHADOW_OFFSET + SHADOW_SIZE, strerror(err), hint);
		abort();
	}
	pthread_atfork(claims_prefork, claims_postfork, claims_postfork);
	shadow_ready = 1;
}

static void shadow_fill(uintptr_t g0, uintptr_t g1, int v)
{
	unsigned char *p = (unsigned char *)(SHADOW_OFFSET + g0);
	size_t n = g1 - g0;

	if (v == 0 && n >= SHADOW_RELEASE_MIN) {
		uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
		uintptr_t a = ((uintptr_t)p + pg - 1) & ~(pg - 1), b = ((uintptr_t)p + n) & ~(pg - 1);
		/* Zero pages read back as zeros: same shadow, no memory. */
		if (madvise((void *)a, b - a, MADV_DONTNEED) == 0) {
			memset(p, 0, a - (uintptr_t)p);
			memset((void *)b, 0, (uintptr_t)p + n - b);
			return;
		}
	}
	memset(p, v, n);
}

/* The granules to poison for interval iv, slack included; 0 if none (the
 * interval lies outside user space, where no instrumented access goes). */
static int claim_span(const struct watch_interval *iv, uintptr_t *g0, uintptr_t *g1)
{
	uintptr_t lo = iv->start > INLINE_SLACK ? iv->start - INLINE_SLACK : 0;
	uintptr_t hi = iv->end < USER_SPACE_END - INLINE_SLACK ? iv->end + INLINE_SLACK : USER_SPACE_END;

	if (lo >= USER_SPACE_END || iv->end <= iv->start)
		return 0;
	*g0 = lo / GRANULE;
	*g1 = (hi + GRANULE - 1) / GRANULE;
	return 1;
}

static uintptr_t shadow_bytes_for(const struct watch_request *req)
{
	uintptr_t total = 0, g0, g1;

	for (unsigned k = 0; k < req->ndata; k++)
		if (claim_span(&req->data[k], &g0, &g1))
			total += g1 - g0;
	return total;
}

static int cmp_span(const void *x, const void *y)
{
	const uintptr_t *a = x, *b = y;
	return (a[0] > b[0]) - (a[0] < b[0]);
}

/* Zero the shadow of [g0, g1) except where a claim in the list still
 * poisons.  Called with claims_lock held and the caller's claim unlinked. */
static void unpoison_uncovered(uintptr_t g0, uintptr_t g1)
{
	size_t n = 0;

	for (const struct shadow_claim *c = claims; c; c = c->next)
		n += c->n;
	uintptr_t (*others)[2] = n ? malloc(n * sizeof *others) : NULL;
	if (n && !others)
		return;   /* left poisoned: extra reports, filtered, still exact */
	size_t m = 0;
	for (const struct shadow_claim *c = claims; c; c = c->next)
		for (unsigned k = 0; k < c->n; k++)
			if (c->g0[k] < g1 && c->g1[k] > g0) {
				others[m][0] = c->g0[k];
				others[m][1] = c->g1[k];
				m++;
			}
	if (m)
		qsort(others, m, sizeof *others, cmp_span);
	uintptr_t cur = g0;
	for (size_t i = 0; i < m; i++) {
		if (others[i][0] > cur)
			shadow_fill(cur, others[i][0] < g1 ? others[i][0] : g1, 0);
		if (others[i][1] > cur)
			cur = others[i][1];
	}
	if (cur < g1)
		shadow_fill(cur, g1, 0);
	free(others);
}

static int shadow_claim_start(struct watch_session *s, char *why, size_t len)
{
	struct shadow_claim *c = calloc(1, sizeof *c);

	if (!c) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	for (unsigned k = 0; k < s->req.ndata; k++)
		if (claim_span(&s->req.data[k], &c->g0[c->n], &c->g1[c->n]))
			c->n++;
	pthread_mutex_lock(&claims_lock);
	for (unsigned k = 0; k < c->n; k++)
		shadow_fill(c->g0[k], c->g1[k], 0xff);
	c->next = claims;
	claims = c;
	pthread_mutex_unlock(&claims_lock);
	s->priv = c;
	return 0;
}

static void shadow_claim_stop(struct watch_session *s)
{
	struct shadow_claim *c = s->priv;

	if (!c)
		return;
	pthread_mutex_lock(&claims_lock);
	for (struct shadow_claim **pp = &claims; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	for (unsigned k = 0; k < c->n; k++)
		unpoison_uncovered(c->g0[k], c->g1[k]);
	pthread_mutex_unlock(&claims_lock);
	free(c);
	s->priv = NULL;
}

/* ASan's instrumentation (gcc's and clang's, outline and inline) leaves
 * out the hook or the shadow check where it can prove an access in bounds:
 * a static or a local variable used by name at a constant offset
 * (`p = parray1`, `a[3] = x`; a[i] is instrumented).  So in static storage
 * and on the stack it sees only part of the accesses; there the other
 * backends must count, unless the program was built with the pass plugin,
 * which instruments the statics' accesses too (not the function's own
 * stack slots). */
struct static_probe {
	const struct watch_request *req;
	uintptr_t hit_start, hit_end;
};

static int find_static_overlap(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct static_probe *p = arg;
	(void)size;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr, e = a + ph->p_memsz;
		for (unsigned k = 0; k < p->req->ndata; k++) {
			if (p->req->data[k].start < e && p->req->data[k].end > a) {
				p->hit_start = a;
				p->hit_end = e;
				return 1;
			}
		}
	}
	return 0;
}

/* The program was built with the pass plugin (its mark, handed over by
 * the archive), and none of it with the inline flags. */
static int pass_built(void)
{
	return exe && exe->abi >= 4 && exe->pass_built && !(hooks_imported() & HOOKS_INLINE);
}

static int overlaps_own_stack(const struct watch_request *req)
{
	pthread_attr_t attr;
	void *stack;
	size_t stack_size;
	int hit = 0;

	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return 0;
	if (pthread_attr_getstack(&attr, &stack, &stack_size) == 0)
		for (unsigned k = 0; k < req->ndata; k++)
			hit |= req->data[k].start < (uintptr_t)stack + stack_size && req->data[k].end > (uintptr_t)stack;
	pthread_attr_destroy(&attr);
	return hit;
}

static int instrument_fits(const struct watch_request *req, char *why, size_t len)
{
	/* Executed instructions come from the block hooks (watch_blocks.c),
	 * data accesses made by them from the data hooks, as without them. */
	if (req->want_code) {
		int err = watch_blocks_fits(req, (uintptr_t)__asan_handle_no_return, why, len);
		if (err || !req->want_data)
			return err;
	}
	int hooks = hooks_imported() | (exe ? HOOKS_OUTLINE : 0);
	if (!hooks) {
		snprintf(why, len, "the program was not built with the instrument flags "
		         "(pkg-config --cflags papi-heritage-instrument, papi-heritage-instrument-inline, "
		         "papi-heritage-instrument-clang or papi-heritage-instrument-clang-inline)");
		return -ENOTSUP;
	}
	if ((hooks & HOOKS_INLINE) && req->observe) {
		snprintf(why, len, "code built with the inline instrument flags " WATCH_OBSERVE_REFUSAL);
		return -ENOTSUP;
	}
	if (hooks & HOOKS_INLINE) {
		/* Inline-instrumented code reports only accesses to poisoned
		 * shadow, and poisoning all memory is not possible. */
		if (req->data_all || req->ndata == 0) {
			snprintf(why, len, "code built with the inline instrument flags sees only accesses to a range: "
			         "set one (PAPI_DATA_ADDRESS), or build with the outline flags "
			         "(pkg-config --cflags papi-heritage-instrument or papi-heritage-instrument-clang) "
			         "to count all accesses");
			return -ENOTSUP;
		}
		if (!shadow_ready) {
			snprintf(why, len, "the inline instrument shadow is not mapped");
			return -ENOTSUP;
		}
		uintptr_t shadow = shadow_bytes_for(req);
		if (shadow > INLINE_MAX_SHADOW) {
			snprintf(why, len, "the range is too large for code built with the inline instrument flags: "
			         "its shadow would take %lu MiB (at most %lu MiB); watch less, or build with the "
			         "outline flags (pkg-config --cflags papi-heritage-instrument or "
			         "papi-heritage-instrument-clang)",
			         (unsigned long)(shadow >> 20), INLINE_MAX_SHADOW >> 20);
			return -ENOTSUP;
		}
	}
	if (!req->data_all) {
		struct static_probe probe = { req, 0, 0 };
		if (!pass_built() && dl_iterate_phdr(find_static_overlap, &probe)) {
			snprintf(why, len, "the range overlaps static storage [%#lx, %#lx), where gcc's and clang's "
			         "AddressSanitizer instrumentation leaves out accesses to a static by name at a constant "
			         "offset (g = x, a[3] = x); build with papi-heritage-instrument-clang-pass, which counts "
			         "them", (unsigned long)probe.hit_start, (unsigned long)probe.hit_end);
			return -ENOTSUP;
		}
		if (overlaps_own_stack(req)) {
			snprintf(why, len, "the range overlaps this thread's stack, where the compiler does not "
			         "instrument accesses by name");
			return -ENOTSUP;
		}
	}
	return 0;
}

static int instrument_start(struct watch_session *s, char *why, size_t len)
{
	const struct watch_request *r = &s->req;

	s->priv = NULL;
	memset(&it.c, 0, sizeof it.c);
	it.req = *r;
	last_n.n = 0;
	if (r->want_code) {
		int err = watch_blocks_start(r, &it.c.insns, why, len);
		if (err)
			return err;
		if (!r->want_data) {
			/* Instructions only: the data hooks count nothing. */
			it.lo = it.hi = 0;
			it.slow = 0;
			it.ovf = NULL;
			return 0;
		}
	}
	if (r->data_all || r->ndata == 0 || r->observe) {
		/* Every access reaches account_slow when observed. */
		it.lo = 0;
		it.hi = UINTPTR_MAX;
	} else {
		it.lo = r->data[0].start;
		it.hi = r->data[0].end;
		for (unsigned i = 1; i < r->ndata; i++) {
			if (r->data[i].start < it.lo)
				it.lo = r->data[i].start;
			if (r->data[i].end > it.hi)
				it.hi = r->data[i].end;
		}
	}
	it.ovf = r->overflow_fields ? s->ovf : NULL;
	it.slow = r->ndata > 1 || r->data_by_code || r->want_misaligned || it.ovf || r->observe;
	/* Poison after the bounds are set: a report from now on is counted. */
	if (shadow_ready && !r->data_all && r->ndata > 0) {
		int err = shadow_claim_start(s, why, len);
		if (err) {
			it.lo = it.hi = 0;
			if (r->want_code)
				watch_blocks_stop();
			return err;
		}
	}
	if (exe)
		exe->set_thread(it.lo, it.hi, it.slow, &it.c.loads, &it.c.stores);
	box_add(it.lo, it.hi);
	return 0;
}

static void instrument_read(const struct watch_session *s, struct watch_counts *live)
{
	(void)s;
	if (it.req.want_code)
		watch_blocks_fold();   /* the block hooks' runs into it.c.insns* */
	*live = it.c;
}

/* The program's hooks count into it.c too (set_thread). */
static const struct watch_counts *instrument_live(const struct watch_session *s)
{
	(void)s;
	if (it.req.want_code)
		watch_blocks_fold();
	return &it.c;
}

static void instrument_stop(struct watch_session *s)
{
	struct watch_counts live;

	if (it.req.want_code)
		watch_blocks_stop();
	if (it.req.want_code && !it.req.want_data) {
		watch_counts_add(&s->acc, &it.c);
		memset(&it.c, 0, sizeof it.c);
		return;
	}
	box_remove(it.lo, it.hi);
	it.lo = it.hi = 0;
	it.ovf = NULL;
	instrument_read(s, &live);
	if (exe)
		exe->set_thread(0, 0, 0, NULL, NULL);
	watch_counts_add(&s->acc, &live);
	memset(&it.c, 0, sizeof it.c);
	/* Reports still arriving for our granules are now filtered out. */
	shadow_claim_stop(s);
}

static void instrument_reset(struct watch_session *s)
{
	(void)s;
	if (it.req.want_code)
		watch_blocks_reset();
	memset(&it.c, 0, sizeof it.c);
}

const struct watch_backend_ops watch_instrument_ops = {
	.name = "instrument",
	.fits = instrument_fits,
	.start = instrument_start,
	.stop = instrument_stop,
	.read = instrument_read,
	.live = instrument_live,
	.reset = instrument_reset,
};
