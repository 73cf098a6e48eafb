/*
 * fits() of the page-trap backend (watch_pagetrap.c): whether a request can
 * be watched by page protection here, from its shape and /proc/self/maps,
 * and never over memory the signal engine's handlers touch.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "watch.h"
#include "watch_pagetrap.h"
#include "watch_pages.h"
#include "watch_park.h"
#include "watch_signal.h"
#include "watch_sys.h"
#include "watch_x86.h"
#include "watch_codemap.h"

#include <asm/prctl.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <unistd.h>

#define PAGE ((uintptr_t)4096)
#define PAGE_DOWN(a) ((uintptr_t)(a) & ~(PAGE - 1))
#define PAGE_UP(a) (((uintptr_t)(a) + PAGE - 1) & ~(PAGE - 1))

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
 * watch_pages_protect() protects only what is mapped.  A coarse Itanium cover can
 * reach past the end of .bss or of the heap into a hole: PAPI's own
 * data_range, retargeted at itanium2, was refused so in about 1 run in 8 that
 * reached its last static array (address-space randomisation decides). */
static int clip_mapping(const struct watch_map_entry *e, struct range_check *c, uintptr_t *a, uintptr_t *b)
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
		const struct watch_run *r = watch_pages_run_at(lo);
		if (!r)
			return 0;
		lo = r->hi;
	}
	return 1;
}

static int check_mapping(const struct watch_map_entry *e, void *arg)
{
	struct range_check *c = arg;
	uintptr_t a, b;
	int in = clip_mapping(e, c, &a, &b);
	if (in <= 0)
		return in < 0;
	if (!(e->prot & (PROT_READ | PROT_WRITE)) && !pages_are_ours(a, b))
		c->problem = "is not accessible (PROT_NONE)";
	else if ((e->prot & PROT_EXEC) || watch_pages_code_overlap(a, b))
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

/* Only executable pages count as mapped code: a coarse instruction cover is
 * a power-of-two block of addresses, and one that crosses a page usually
 * reaches the program's ELF headers, .rodata, .data or a hole (a loop
 * straddling two pages of a PIE: [base, base + 0x20000) with r--, r-x, r--
 * and rw- mappings in it; refused here as "not executable", on an Intel
 * guest as "not mapped", in every run).  No instruction is fetched from a
 * non-executable page, so those pages count 0, honestly: they are skipped
 * as unmapped pages are, and watch_pages_protect() takes them out of the
 * code runs.  A cover with no executable page at all is refused. */
static int check_code_mapping(const struct watch_map_entry *e, void *arg)
{
	struct range_check *c = arg;
	uintptr_t a, b;
	int in = clip_mapping(e, c, &a, &b);
	if (in <= 0)
		return in < 0;
	/* Code the handlers and the stepping itself run: watching any of it
	 * would fault inside the handler or step the engine through itself. */
	if (watch_codemap_runtime_object(e->name))
		c->problem = "lies in the C library, the dynamic loader, capstone or the vDSO, which the page-trap "
		             "engine's handlers run through; watch the application's own code (in coarse mode the "
		             "cover reaches there: use :exact=1)";
	else if (!(e->prot & PROT_EXEC) && !watch_pages_code_overlap(a, b))
		c->mapped -= b - a; /* no code here: contributes nothing */
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
static int check_pages(int (*check)(const struct watch_map_entry *, void *), const char *kind, unsigned i, uintptr_t lo,
                       uintptr_t hi, uintptr_t *mapped, char *why, size_t len)
{
	struct range_check c = { PAGE_DOWN(lo), PAGE_UP(hi), 0, NULL };
	uint64_t old = watch_pages_thread_lock();
	int r = watch_pages_maps(check, &c);
	watch_pages_thread_unlock(old);
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

/* A request none of whose pages is mapped (code: executable) watches
 * nothing: that is a wrong address, not a cover reaching into a hole. */
static int no_page_mapped(const char *kind, const struct watch_interval *iv, unsigned n, char *why, size_t len)
{
	const char *what = strcmp(kind, "code") ? "mapped" : "mapped executable (not mapped, or not executable)";
	if (n == 1)
		set_why(why, len, "pagetrap: %s range 0 [%#lx, %#lx) is not %s", kind, (unsigned long)iv[0].start,
		        (unsigned long)iv[0].end, what);
	else
		set_why(why, len, "pagetrap: none of the %u %s ranges [%#lx, %#lx) ... [%#lx, %#lx) is %s", n, kind,
		        (unsigned long)iv[0].start, (unsigned long)iv[0].end, (unsigned long)iv[n - 1].start,
		        (unsigned long)iv[n - 1].end, what);
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

/* The calling thread's static TLS blocks the handlers' path reads: every
 * loaded object's but the program's own (libc's errno and locale, libpapi's
 * one_step and lock masks, capstone's and the allocator's), and the thread
 * control block at the thread pointer (the stack protector's canary, the
 * thread's own pointer).  A fault there inside a handler would open a window
 * nested in the one being set up.  The program's own block is the
 * application's data (a __thread array) and can be watched, except when the
 * engine is linked into the program itself.  A program's __thread array
 * sits between these blocks and the control block, sharing a page with them
 * unless it is page-aligned and a whole number of pages long: then it is
 * refused with the reason. */
struct tls_blocks {
	uintptr_t own_code;
	unsigned n;
	uintptr_t lo[32], hi[32];
};

static int collect_tls(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct tls_blocks *t = arg;
	(void)size;
	int is_main = !info->dlpi_name || !info->dlpi_name[0], holds_engine = 0;
	const ElfW(Phdr) *tls = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_TLS)
			tls = ph;
		else if (ph->p_type == PT_LOAD && t->own_code >= a && t->own_code < a + ph->p_memsz)
			holds_engine = 1;
	}
	if (!tls || !info->dlpi_tls_data || (is_main && !holds_engine) || t->n >= sizeof t->lo / sizeof t->lo[0])
		return 0;
	t->lo[t->n] = (uintptr_t)info->dlpi_tls_data;
	t->hi[t->n] = (uintptr_t)info->dlpi_tls_data + tls->p_memsz;
	t->n++;
	return 0;
}

/* struct pthread's size (glibc exports it for libthread_db); 4 KiB when it
 * cannot be found, more than any glibc's. */
static uintptr_t tcb_bytes(void)
{
	const unsigned *sz = dlsym(RTLD_DEFAULT, "_thread_db_sizeof_pthread");
	return sz && *sz ? *sz : PAGE;
}

int watch_pagetrap_fits(const struct watch_request *req, int (*ensure_init)(void), char *why, size_t len)
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

	/* The decoder's, the parker's, the signal engine's (its state, its
	 * signal stacks, every client's state: the page-trap backend's own among
	 * them), the protected pages' and the thread control block (stack
	 * protector canary; with the TLS blocks below, checked first for the
	 * message): the handlers' path reads all of them, and libc's
	 * single-thread flag. */
	uintptr_t own[4 + 2 + WATCH_SIGNAL_MAX_CLIENTS][2];
	unsigned nown = 0;
	watch_x86_state_range(&own[nown][0], &own[nown][1]);
	nown++;
	watch_park_state_range(&own[nown][0], &own[nown][1]);
	nown++;
	watch_pages_state_range(&own[nown][0], &own[nown][1]);
	nown++;
	uint64_t fs = 0;
	watch_sys3(SYS_arch_prctl, ARCH_GET_FS, (long)&fs, 0);
	own[nown][0] = (uintptr_t)fs;
	own[nown][1] = (uintptr_t)fs + tcb_bytes();
	nown++;
	while (nown < sizeof own / sizeof own[0] && watch_signal_state_range(nown - 4, &own[nown][0], &own[nown][1]))
		nown++;

	struct tls_blocks tls = { .own_code = (uintptr_t)(void *)&watch_pagetrap_fits, .n = 0 };
	dl_iterate_phdr(collect_tls, &tls);
	tls.lo[tls.n] = own[3][0]; /* the control block: after the blocks, in the same message */
	tls.hi[tls.n] = own[3][1];
	if (tls.n < sizeof tls.lo / sizeof tls.lo[0])
		tls.n++;

	uintptr_t mapped = 0;
	for (unsigned i = 0; i < req->ndata; i++) {
		uintptr_t lo = req->data[i].start, hi = req->data[i].end;
		if (hi <= lo) {
			set_why(why, len, "pagetrap: data range %u [%#lx, %#lx) is empty or reversed", i,
			        (unsigned long)lo, (unsigned long)hi);
			return -EINVAL;
		}
		for (unsigned k = 0; k < tls.n; k++) {
			if (overlaps_pages(lo, hi, tls.lo[k], tls.hi[k])) {
				set_why(why, len, "pagetrap: data range %u [%#lx, %#lx) shares a page with the thread-local "
				        "storage of the thread control block, the C library or libpapi [%#lx, %#lx), which "
				        "the engine's handlers use; for a __thread array, align it to 4096 bytes and make "
				        "its size a multiple of 4096, or use another backend", i, (unsigned long)lo,
				        (unsigned long)hi, (unsigned long)tls.lo[k], (unsigned long)tls.hi[k]);
				return -EINVAL;
			}
		}
		for (unsigned k = 0; k < nown; k++) {
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
