/*
 * Symbols, source lines and code bytes of an image file (pm_symbols.h),
 * through elfutils' libdwfl offline.
 *
 * dwfl_report_offline places an ET_DYN file (a PIE, a shared library) at a
 * base of its own (0x10000 with elfutils 0.188: libdwfl's OFFLINE_REDZONE),
 * so every lookup adds the module's bias to the file's vaddr and every
 * address returned subtracts it.
 *
 * Functions come from our own table built once from the module's symbol
 * table (STT_FUNC and STT_GNU_IFUNC, defined, one per address): a sorted
 * array answers "which function holds this PC" for every row of a profile
 * by binary search, gives assembler symbols without a size an extent (up to
 * the next function), and lists names near a misspelt one.
 */
#include "profileme/pm_symbols.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/heritage_error.h"

struct pm_symbols {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	GElf_Addr bias;
	int fd;        /* the file, for code bytes (libdwfl owns its own descriptor) */
	int has_lines;
	char note[512];
	struct pm_func *fn;
	size_t nfn;
	/* Executable PT_LOADs: where their bytes are in the file. */
	struct seg { uint64_t vaddr, filesz, offset; } seg[16];
	unsigned nseg;
};

static char *debuginfo_path;
static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

static int fail(int err, char *why, size_t len, const char *fmt, ...) HERITAGE_PRINTF(4, 5);
static int fail(int err, char *why, size_t len, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (why && len)
		snprintf(why, len, "%s", buf);
	return heritage_fail_msg(err, buf);
}

struct entry {
	struct pm_func f;
	int global; /* STB_GLOBAL: the name to show among aliases */
};

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	return x->f.start < y->f.start ? -1 : x->f.start > y->f.start;
}

/* One function per address, with an extent for every one. */
static int build_functions(struct pm_symbols *s)
{
	int n = dwfl_module_getsymtab(s->mod);
	if (n <= 0)
		return 0;
	struct entry *e = calloc((size_t)n, sizeof *e);
	s->fn = calloc((size_t)n, sizeof *s->fn);
	if (!e || !s->fn) {
		free(e);
		return -ENOMEM;
	}
	size_t k = 0;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(s->mod, i, &sym, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);
		if (!name || !*name || sym.st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		e[k++] = (struct entry){ .f = { .name = name, .start = addr - s->bias, .size = sym.st_size },
		                         .global = GELF_ST_BIND(sym.st_info) == STB_GLOBAL };
	}
	qsort(e, k, sizeof *e, cmp_entry);
	size_t m = 0;
	for (size_t i = 0; i < k; i++) {
		if (m && e[m - 1].f.start == e[i].f.start) {
			/* Aliases (a local and its global name): the global one, then the one with a size. */
			struct entry *p = &e[m - 1];
			if ((e[i].global && !p->global) || (e[i].global == p->global && !p->f.size && e[i].f.size))
				*p = e[i];
			continue;
		}
		e[m++] = e[i];
	}
	for (size_t i = 0; i < m; i++) {
		s->fn[i] = e[i].f;
		if (!s->fn[i].size)
			s->fn[i].size = i + 1 < m ? e[i + 1].f.start - e[i].f.start : 1;
	}
	free(e);
	s->nfn = m;
	return 0;
}

static void read_segments(struct pm_symbols *s)
{
	Elf *e = elf_begin(s->fd, ELF_C_READ, NULL);
	size_t n;
	if (e && elf_getphdrnum(e, &n) == 0) {
		for (size_t i = 0; i < n && s->nseg < sizeof s->seg / sizeof s->seg[0]; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
				s->seg[s->nseg++] = (struct seg){ ph.p_vaddr, ph.p_filesz, ph.p_offset };
		}
	}
	if (e)
		elf_end(e);
}

int pm_symbols_open(const char *path, struct pm_symbols **out, char *why, size_t len)
{
	*out = NULL;
	elf_version(EV_CURRENT);
	struct pm_symbols *s = calloc(1, sizeof *s);
	if (!s)
		return fail(-ENOMEM, why, len, "out of memory");
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0) {
		int e = -errno;
		free(s);
		return fail(e, why, len, "%s: %s", path, strerror(-e));
	}
	s->dwfl = dwfl_begin(&offline_callbacks);
	int dfd = s->dwfl ? dup(s->fd) : -1;
	/* dwfl_report_offline takes dfd (closes it with the module). */
	s->mod = dfd >= 0 ? dwfl_report_offline(s->dwfl, path, path, dfd) : NULL;
	if (!s->mod) {
		int e = fail(-EINVAL, why, len, "%s: not an ELF file libdwfl can read: %s", path, dwfl_errmsg(-1));
		if (dfd >= 0 && !s->dwfl)
			close(dfd);
		pm_symbols_close(s);
		return e;
	}
	dwfl_report_end(s->dwfl, NULL, NULL);
	if (!dwfl_module_getelf(s->mod, &s->bias)) {
		int e = fail(-EINVAL, why, len, "%s: %s", path, dwfl_errmsg(-1));
		pm_symbols_close(s);
		return e;
	}
	read_segments(s);
	int err = build_functions(s);
	if (err) {
		pm_symbols_close(s);
		return fail(err, why, len, "out of memory");
	}
	Dwarf_Addr dbias;
	s->has_lines = dwfl_module_getdwarf(s->mod, &dbias) != NULL;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (!s->nfn)
		snprintf(s->note, sizeof s->note,
		         "%s has no function symbols (stripped: no .symtab, and its .dynsym defines none): every address is \"unknown\"", base);
	else if (!s->has_lines)
		snprintf(s->note, sizeof s->note,
		         "%s has no DWARF line information (built without -g, or stripped, and no debuginfo found): "
		         "functions from its symbol table, no source lines",
		         base);
	*out = s;
	return 0;
}

void pm_symbols_close(struct pm_symbols *s)
{
	if (!s)
		return;
	if (s->dwfl)
		dwfl_end(s->dwfl);
	if (s->fd >= 0)
		close(s->fd);
	free(s->fn);
	free(s);
}

const char *pm_symbols_note(const struct pm_symbols *s)
{
	return s->note[0] ? s->note : NULL;
}

int pm_symbols_has_lines(const struct pm_symbols *s)
{
	return s->has_lines;
}

int pm_symbols_func_at(const struct pm_symbols *s, uint64_t vaddr, struct pm_func *f)
{
	size_t lo = 0, hi = s->nfn;
	while (lo < hi) { /* the last function starting at or before vaddr */
		size_t mid = lo + (hi - lo) / 2;
		if (s->fn[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -ENOENT;
	const struct pm_func *c = &s->fn[lo - 1];
	if (vaddr - c->start >= c->size)
		return -ENOENT;
	*f = *c;
	return 0;
}

int pm_symbols_func_named(const struct pm_symbols *s, const char *name, struct pm_func *f)
{
	for (size_t i = 0; i < s->nfn; i++)
		if (strcmp(s->fn[i].name, name) == 0) {
			*f = s->fn[i];
			return 0;
		}
	return -ENOENT;
}

/* Levenshtein distance, capped (names are short; 64 columns is plenty). */
static unsigned distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 63 || lb > 63)
		return 99;
	unsigned d[64], prev;
	for (size_t j = 0; j <= lb; j++)
		d[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		prev = d[0];
		d[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned t = d[j];
			unsigned sub = prev + (a[i - 1] != b[j - 1]);
			unsigned del = d[j] + 1, ins = d[j - 1] + 1;
			d[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
			prev = t;
		}
	}
	return d[lb];
}

unsigned pm_symbols_near(const struct pm_symbols *s, const char *name, unsigned max, char *buf, size_t len)
{
	unsigned n = 0;
	size_t off = 0;
	if (len)
		buf[0] = 0;
	size_t nl = strlen(name);
	unsigned limit = nl < 4 ? 1 : nl < 8 ? 2 : 3;
	/* Two passes: close spellings first, then names containing it. */
	for (int pass = 0; pass < 2 && n < max; pass++)
		for (size_t i = 0; i < s->nfn && n < max; i++) {
			const char *f = s->fn[i].name;
			int close = distance(f, name) <= limit;
			int contains = nl >= 3 && strstr(f, name) != NULL;
			if (pass == 0 ? !close : (close || !contains))
				continue;
			if (off < len)
				off += (size_t)snprintf(buf + off, len - off, "%s%s", n ? ", " : "", f);
			n++;
		}
	return n;
}

void pm_symbols_each(const struct pm_symbols *s, void (*fn)(void *arg, const struct pm_func *f), void *arg)
{
	for (size_t i = 0; i < s->nfn; i++)
		fn(arg, &s->fn[i]);
}

int pm_symbols_line_at(const struct pm_symbols *s, uint64_t vaddr, const char **file, int *line)
{
	if (!s->has_lines)
		return -ENOENT;
	Dwfl_Line *l = dwfl_module_getsrc(s->mod, vaddr + s->bias);
	int ln = 0;
	const char *f = l ? dwfl_lineinfo(l, NULL, &ln, NULL, NULL, NULL) : NULL;
	if (!f || ln <= 0)
		return -ENOENT;
	*file = f;
	*line = ln;
	return 0;
}

const char *pm_symbols_comp_dir(const struct pm_symbols *s, uint64_t vaddr)
{
	Dwfl_Line *l = s->has_lines ? dwfl_module_getsrc(s->mod, vaddr + s->bias) : NULL;
	return l ? dwfl_line_comp_dir(l) : NULL;
}

long pm_symbols_code(const struct pm_symbols *s, uint64_t vaddr, uint8_t *buf, size_t n)
{
	for (unsigned i = 0; i < s->nseg; i++) {
		const struct seg *g = &s->seg[i];
		if (vaddr < g->vaddr || vaddr - g->vaddr >= g->filesz)
			continue;
		uint64_t avail = g->filesz - (vaddr - g->vaddr);
		if (n > avail)
			n = (size_t)avail;
		ssize_t r = pread(s->fd, buf, n, (off_t)(g->offset + (vaddr - g->vaddr)));
		return r < 0 ? -errno : (long)r;
	}
	return -ENOENT;
}
