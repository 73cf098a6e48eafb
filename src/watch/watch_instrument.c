/*
 * instrument backend: code compiled with
 *   -fsanitize=kernel-address --param asan-instrumentation-with-call-threshold=0
 *   --param asan-stack=0 --param asan-globals=0
 * (pkg-config --cflags papi-heritage-instrument) calls __asan_{load,store}N_noabort
 * before every load and store, with no ASan runtime.  We implement those hooks
 * as a range test against thread-local bounds and a thread-local counter, so
 * counting is exact, per thread, and costs a call per access of instrumented
 * code; accesses made by uninstrumented code (libc, the kernel) are not seen.
 *
 * The hot path is one compare pair against [lo, hi) in initial-exec TLS (no
 * __tls_get_addr call); everything rarer - several intervals, a code-range
 * filter - goes through `slow`.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/heritage_error.h"
#include "watch/watch.h"

struct instrument_tls {
	uintptr_t lo, hi;        /* bounding box of what counts; hi == 0: off */
	int slow;                /* need the exact test below */
	struct watch_request req;
	struct watch_counts c;
};

static __thread struct instrument_tls it __attribute__((tls_model("initial-exec")));

static int interval_hit(const struct watch_interval *iv, unsigned n, uintptr_t a, size_t size)
{
	for (unsigned i = 0; i < n; i++)
		if (a < iv[i].end && a + size > iv[i].start)
			return 1;
	return 0;
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
static __attribute__((noinline)) void account_slow(uintptr_t a, size_t size, int store, uintptr_t pc)
{
	if (!slow_match(a, size, pc))
		return;
	int misaligned = (size & (size - 1)) == 0 && (a & (size - 1)) != 0;
	if (store) {
		it.c.stores++;
		it.c.misaligned_stores += misaligned;
	} else {
		it.c.loads++;
		it.c.misaligned_loads += misaligned;
	}
}

static inline __attribute__((always_inline)) void account(uintptr_t a, size_t size, int store, uintptr_t pc)
{
	if (__builtin_expect(a < it.hi && a + size > it.lo, 0)) {
		if (__builtin_expect(it.slow, 0))
			account_slow(a, size, store, pc);
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
	void __asan_load##n##_noabort(uintptr_t a) { account(a, n, 0, PC()); }           \
	void __asan_store##n##_noabort(uintptr_t a) { account(a, n, 1, PC()); }
HOOKS(1)
HOOKS(2)
HOOKS(4)
HOOKS(8)
HOOKS(16)

HERITAGE_PUBLIC void __asan_loadN_noabort(uintptr_t a, size_t size);
HERITAGE_PUBLIC void __asan_storeN_noabort(uintptr_t a, size_t size);
void __asan_loadN_noabort(uintptr_t a, size_t size) { account(a, size, 0, PC()); }
void __asan_storeN_noabort(uintptr_t a, size_t size) { account(a, size, 1, PC()); }

/* Called before noreturn calls (exit, longjmp); ASan unpoisons the stack
 * there.  We keep no shadow, so there is nothing to do. */
HERITAGE_PUBLIC void __asan_handle_no_return(void);
void __asan_handle_no_return(void)
{
}

/* Instrumented code imports the hooks, so the executable's dynamic symbol
 * table names them as undefined.  Looked up once: the executable does not
 * change under us. */
static int scan_executable(void)
{
	int found = 0;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	while (e && !found && (scn = elf_nextscn(e, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; d && i < n && !found; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(d, (int)i, &sym))
				continue;
			const char *name = elf_strptr(e, sh.sh_link, sym.st_name);
			/* An undefined reference: the executable calls the hooks. */
			found = name && sym.st_shndx == SHN_UNDEF && strncmp(name, "__asan_", 7) == 0 &&
			        strstr(name, "_noabort") != NULL;
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return found;
}

int watch_instrument_present(void)
{
	static int cached = -1;

	if (cached < 0)
		cached = scan_executable();
	return cached;
}

/* The compiler leaves out the hook where it can prove an access in bounds:
 * a global or a local variable used by name (`p = parray1`, `a[3] = x`).  So
 * in static storage and on the stack the hooks see only part of the
 * accesses; there the other backends must count. */
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
	if (req->want_code) {
		snprintf(why, len, "instrumented code reports memory accesses, not executed instructions");
		return -ENOTSUP;
	}
	if (!watch_instrument_present()) {
		snprintf(why, len, "the program was not built with the instrument flags "
		         "(pkg-config --cflags papi-heritage-instrument)");
		return -ENOTSUP;
	}
	if (!req->data_all) {
		struct static_probe probe = { req, 0, 0 };
		if (dl_iterate_phdr(find_static_overlap, &probe)) {
			snprintf(why, len, "the range overlaps static storage [%#lx, %#lx), where the compiler does not "
			         "instrument accesses by name", (unsigned long)probe.hit_start, (unsigned long)probe.hit_end);
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
	(void)why;
	(void)len;

	memset(&it.c, 0, sizeof it.c);
	it.req = *r;
	if (r->data_all || r->ndata == 0) {
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
	it.slow = r->ndata > 1 || r->data_by_code || r->want_misaligned;
	return 0;
}

static void instrument_read(const struct watch_session *s, struct watch_counts *live)
{
	(void)s;
	*live = it.c;
}

static const struct watch_counts *instrument_live(const struct watch_session *s)
{
	(void)s;
	return &it.c;
}

static void instrument_stop(struct watch_session *s)
{
	it.lo = it.hi = 0;
	watch_counts_add(&s->acc, &it.c);
	memset(&it.c, 0, sizeof it.c);
}

static void instrument_reset(struct watch_session *s)
{
	(void)s;
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
