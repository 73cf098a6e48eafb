/*
 * Functions and imports of the loaded objects (watch_codemap.h).
 *
 * .eh_frame_hdr (PT_GNU_EH_FRAME) holds a table of (initial location, FDE)
 * sorted by location, which GNU ld, gold and lld all write with the
 * encoding DW_EH_PE_datarel | DW_EH_PE_sdata4 (0x3b): two int32 offsets
 * from the header.  An FDE gives its range (pc_begin, pc_range, encoded as
 * its CIE's 'R' augmentation says) and the call frame instructions whose
 * first rules, before any advance, say whether the range starts a function
 * (CFA = %rsp + 8, the return address just pushed) or continues one.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "watch/watch_codemap.h"

#define CM_MAX_EXEC 8
#define CM_MAX_SLOTS 32

struct cm_object {
	uintptr_t base;
	uintptr_t xlo[CM_MAX_EXEC], xhi[CM_MAX_EXEC];
	unsigned nx;
	uintptr_t alo, ahi;              /* every PT_LOAD: where its GOT lies */
	const uint8_t *hdr;              /* .eh_frame_hdr, or NULL */
	const int32_t *table;            /* its (location, FDE) pairs */
	size_t nfde;
	const ElfW(Dyn) *dyn;
	int imports_scanned;
	uintptr_t slot[3][CM_MAX_SLOTS]; /* GOT words of: [0] trace_pc, [1] no_return, [2] functions that never return */
	unsigned nslot[3];
};

static pthread_mutex_t cm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cm_object *objs;
static unsigned nobjs, capobjs;

/* ------------------------------------------------------------ DWARF reading */

/* A LEB128 number's 7-bit groups; *shift: the bits it had. */
static int read_leb(const uint8_t **p, const uint8_t *end, uint64_t *v, unsigned *shift, uint8_t *last)
{
	uint64_t r = 0;
	*shift = 0;
	while (*p < end) {
		uint8_t b = *(*p)++;
		if (*shift < 64)
			r |= (uint64_t)(b & 0x7f) << *shift;
		*shift += 7;
		if (!(b & 0x80)) {
			*v = r;
			*last = b;
			return 0;
		}
	}
	return -1;
}

static int read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned shift;
	uint8_t last;
	return read_leb(p, end, v, &shift, &last);
}

static int read_sleb(const uint8_t **p, const uint8_t *end, int64_t *v)
{
	uint64_t r;
	unsigned shift;
	uint8_t last;
	if (read_leb(p, end, &r, &shift, &last) != 0)
		return -1;
	if (shift < 64 && (last & 0x40))
		r |= ~(uint64_t)0 << shift;
	*v = (int64_t)r;
	return 0;
}

#define PE_OMIT 0xff
#define PE_FORMAT 0x0f
#define PE_APPL 0x70
#define PE_INDIRECT 0x80

/* A pointer encoded as enc at *p: pcrel is relative to the field itself,
 * datarel to data_base; the others are refused (-1). */
static int read_enc(const uint8_t **p, const uint8_t *end, uint8_t enc, uintptr_t data_base, uint64_t *v)
{
	const uint8_t *at = *p;
	uint64_t u = 0;
	int64_t s;
	size_t n = 0;

	if (enc == PE_OMIT || (enc & PE_INDIRECT))
		return -1;
	switch (enc & PE_FORMAT) {
	case 0x00: n = 8; break;                       /* absptr */
	case 0x02: case 0x0a: n = 2; break;            /* (s)data2 */
	case 0x03: case 0x0b: n = 4; break;            /* (s)data4 */
	case 0x04: case 0x0c: n = 8; break;            /* (s)data8 */
	case 0x01:
		if (read_uleb(p, end, &u))
			return -1;
		break;
	case 0x09:
		if (read_sleb(p, end, &s))
			return -1;
		u = (uint64_t)s;
		break;
	default:
		return -1;
	}
	if (n) {
		if ((size_t)(end - *p) < n)
			return -1;
		if (n == 2) {
			uint16_t x;
			memcpy(&x, *p, 2);
			u = (enc & 0x08) ? (uint64_t)(int64_t)(int16_t)x : x;
		} else if (n == 4) {
			uint32_t x;
			memcpy(&x, *p, 4);
			u = (enc & 0x08) ? (uint64_t)(int64_t)(int32_t)x : x;
		} else {
			memcpy(&u, *p, 8);
		}
		*p += n;
	}
	switch (enc & PE_APPL) {
	case 0x00: break;
	case 0x10: u += (uintptr_t)at; break;
	case 0x30: u += data_base; break;
	default: return -1;
	}
	*v = u;
	return 0;
}

/* The size of a pointer's encoding alone (for pc_range). */
static int read_enc_value(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t *v)
{
	return read_enc(p, end, (uint8_t)(enc & PE_FORMAT), 0, v);
}

struct cie {
	uint8_t fde_enc;
	uint8_t lsda_enc;  /* PE_OMIT: no 'L' */
	int has_z;
	const uint8_t *ins, *end;
};

static int parse_cie(const uint8_t *c, struct cie *out)
{
	uint32_t len;
	memcpy(&len, c, 4);
	if (len == 0 || len == 0xffffffffu)
		return -1;
	const uint8_t *end = c + 4 + len, *p = c + 8;
	uint8_t version = *p++;
	const char *aug = (const char *)p;
	size_t alen = strnlen(aug, (size_t)(end - p));
	p += alen + 1;
	if (p > end || strstr(aug, "eh"))
		return -1;
	uint64_t u;
	int64_t s;
	if (read_uleb(&p, end, &u) || read_sleb(&p, end, &s))
		return -1;
	if (version == 1)
		p++;
	else if (read_uleb(&p, end, &u))
		return -1;
	out->fde_enc = 0;   /* absptr */
	out->lsda_enc = PE_OMIT;
	out->has_z = aug[0] == 'z';
	const uint8_t *data_end = end;
	if (out->has_z) {
		if (read_uleb(&p, end, &u) || u > (uint64_t)(end - p))
			return -1;
		data_end = p + u;
		for (const char *a = aug + 1; *a; a++) {
			if (*a == 'R') {
				out->fde_enc = *p++;
			} else if (*a == 'P') {
				uint8_t enc = *p++;
				uint64_t ignored;
				if (read_enc(&p, data_end, (uint8_t)(enc & ~PE_INDIRECT), 0, &ignored))
					return -1;
			} else if (*a == 'L') {
				out->lsda_enc = *p++;
			} else if (*a != 'S' && *a != 'B') {
				return -1;
			}
		}
		p = data_end;
	}
	out->ins = p;
	out->end = end;
	return 0;
}

/* Run call frame instructions up to the first advance: the CFA rule at the
 * range's start.  -1 on anything not understood. */
static int cfa_rules(const uint8_t *p, const uint8_t *end, uint64_t *reg, int64_t *off)
{
	uint64_t a, b;
	int64_t s;
	while (p < end) {
		uint8_t op = *p++;
		switch (op >> 6) {
		case 1: return 0;                                /* advance_loc */
		case 2: if (read_uleb(&p, end, &a)) return -1; continue; /* offset */
		case 3: continue;                                /* restore */
		default: break;
		}
		switch (op) {
		case 0x00: break;                                /* nop */
		case 0x01: case 0x02: case 0x03: case 0x04: return 0; /* set_loc, advance_loc1/2/4 */
		case 0x05: case 0x09: case 0x14: case 0x2f:      /* two ulebs */
			if (read_uleb(&p, end, &a) || read_uleb(&p, end, &b)) return -1;
			break;
		case 0x06: case 0x07: case 0x08: case 0x2e:      /* one uleb */
			if (read_uleb(&p, end, &a)) return -1;
			break;
		case 0x0a: case 0x0b: return -1;                 /* remember/restore_state before an advance: odd */
		case 0x0c:                                       /* def_cfa */
			if (read_uleb(&p, end, reg) || read_uleb(&p, end, &a)) return -1;
			*off = (int64_t)a;
			break;
		case 0x0d: if (read_uleb(&p, end, reg)) return -1; break;
		case 0x0e: if (read_uleb(&p, end, &a)) return -1; *off = (int64_t)a; break;
		case 0x11: case 0x15:                            /* uleb, sleb */
			if (read_uleb(&p, end, &a) || read_sleb(&p, end, &s)) return -1;
			break;
		case 0x10: case 0x16:                            /* uleb, block */
			if (read_uleb(&p, end, &a) || read_uleb(&p, end, &b) || b > (uint64_t)(end - p)) return -1;
			p += b;
			break;
		default: return -1;                              /* def_cfa_expression, _sf forms, ... */
		}
	}
	return 0;
}

static int parse_fde(const uint8_t *f, struct watch_code_fn *fn)
{
	uint32_t len, cie_off;
	memcpy(&len, f, 4);
	if (len == 0 || len == 0xffffffffu)
		return -1;
	memcpy(&cie_off, f + 4, 4);
	if (cie_off == 0)
		return -1;   /* a CIE */
	struct cie c;
	if (parse_cie(f + 4 - cie_off, &c))
		return -1;
	const uint8_t *end = f + 4 + len, *p = f + 8;
	uint64_t begin, range;
	if (read_enc(&p, end, c.fde_enc, 0, &begin) || read_enc_value(&p, end, c.fde_enc, &range))
		return -1;
	if (c.has_z) {
		uint64_t alen;
		if (read_uleb(&p, end, &alen) || alen > (uint64_t)(end - p))
			return -1;
		/* The language-specific data (C++ or -fexceptions C): where its
		 * landing pads are. */
		const uint8_t *q = p;
		uint64_t lsda = 0;
		fn->lsda = 0;
		if (c.lsda_enc != PE_OMIT && alen)
			fn->lsda = read_enc(&q, p + alen, c.lsda_enc, 0, &lsda) ? UINTPTR_MAX : (uintptr_t)lsda;
		p += alen;
	} else {
		fn->lsda = 0;
	}
	uint64_t reg = ~(uint64_t)0;
	int64_t off = 0;
	if (cfa_rules(c.ins, c.end, &reg, &off) || cfa_rules(p, end, &reg, &off))
		fn->fragment = 1;    /* not understood: not taken for a function's start */
	else
		fn->fragment = !(reg == 7 && off == 8);  /* DWARF register 7: %rsp */
	fn->lo = (uintptr_t)begin;
	fn->hi = (uintptr_t)(begin + range);
	return 0;
}

/* --------------------------------------------------------------- objects */

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	if (nobjs == capobjs) {
		unsigned cap = capobjs ? 2 * capobjs : 16;
		struct cm_object *n = realloc(objs, cap * sizeof *n);
		if (!n)
			return 1;
		objs = n;
		capobjs = cap;
	}
	struct cm_object *o = &objs[nobjs];
	memset(o, 0, sizeof *o);
	o->base = info->dlpi_addr;
	o->alo = UINTPTR_MAX;
	const uint8_t *hdr = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD) {
			if (a < o->alo)
				o->alo = a;
			if (a + ph->p_memsz > o->ahi)
				o->ahi = a + ph->p_memsz;
			if ((ph->p_flags & PF_X) && o->nx < CM_MAX_EXEC) {
				o->xlo[o->nx] = a;
				o->xhi[o->nx] = a + ph->p_memsz;
				o->nx++;
			}
		} else if (ph->p_type == PT_GNU_EH_FRAME) {
			hdr = (const uint8_t *)a;
		} else if (ph->p_type == PT_DYNAMIC) {
			o->dyn = (const ElfW(Dyn) *)a;
		}
	}
	if (!o->nx)
		return 0;
	if (hdr && hdr[0] == 1 && hdr[3] == 0x3b) {
		const uint8_t *p = hdr + 4;
		uint64_t eh, count;
		if (read_enc(&p, p + 16, hdr[1], (uintptr_t)hdr, &eh) == 0 &&
		    read_enc(&p, p + 16, hdr[2], (uintptr_t)hdr, &count) == 0) {
			o->hdr = hdr;
			o->table = (const int32_t *)p;
			o->nfde = (size_t)count;
		}
	}
	nobjs++;
	return 0;
}

static void refresh(void)
{
	nobjs = 0;
	dl_iterate_phdr(collect, NULL);
}

static struct cm_object *object_of(uintptr_t a, int exec)
{
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < nobjs; i++) {
			struct cm_object *o = &objs[i];
			if (!exec && a >= o->alo && a < o->ahi)
				return o;
			for (unsigned k = 0; exec && k < o->nx; k++)
				if (a >= o->xlo[k] && a < o->xhi[k])
					return o;
		}
		refresh();   /* an object loaded since */
	}
	return NULL;
}

static uintptr_t table_loc(const struct cm_object *o, size_t i)
{
	return (uintptr_t)o->hdr + (uintptr_t)(intptr_t)o->table[2 * i];
}

static int table_fde(const struct cm_object *o, size_t i, struct watch_code_fn *fn)
{
	return parse_fde(o->hdr + (intptr_t)o->table[2 * i + 1], fn);
}

/* The last table entry at or below a (0 when none is). */
static size_t table_search(const struct cm_object *o, uintptr_t a)
{
	size_t lo = 0, hi = o->nfde;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (table_loc(o, mid) <= a)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

int watch_codemap_fn_at(uintptr_t pc, struct watch_code_fn *fn)
{
	int err = -ENOENT;
	pthread_mutex_lock(&cm_lock);
	struct cm_object *o = object_of(pc, 1);
	if (o && o->hdr && o->nfde) {
		size_t i = table_search(o, pc);
		if (table_loc(o, i) <= pc && table_fde(o, i, fn) == 0 && pc >= fn->lo && pc < fn->hi)
			err = 0;
	}
	pthread_mutex_unlock(&cm_lock);
	return err;
}

uintptr_t watch_codemap_code_end(uintptr_t a)
{
	uintptr_t end = 0;
	pthread_mutex_lock(&cm_lock);
	struct cm_object *o = object_of(a, 1);
	for (unsigned k = 0; o && k < o->nx; k++)
		if (a >= o->xlo[k] && a < o->xhi[k])
			end = o->xhi[k];
	pthread_mutex_unlock(&cm_lock);
	return end;
}

/* The FDEs and gaps of [a, b) inside one executable segment of o.  The
 * callbacks run without the lock (they decode, and look functions up). */
struct cm_item {
	struct watch_code_fn fn;
	int gap;
};

static int segment_items(const struct cm_object *o, uintptr_t a, uintptr_t b, struct cm_item **items, size_t *n)
{
	size_t cap = 16;
	*n = 0;
	*items = malloc(cap * sizeof **items);
	if (!*items)
		return -ENOMEM;
	int err = 0;
	uintptr_t cur = a;
	if (o->hdr && o->nfde) {
		for (size_t i = table_search(o, a); i < o->nfde && table_loc(o, i) < b; i++) {
			struct watch_code_fn fn;
			if (table_fde(o, i, &fn) || fn.hi <= cur)
				continue;
			if (*n + 2 > cap) {
				cap *= 2;
				struct cm_item *m = realloc(*items, cap * sizeof *m);
				if (!m) {
					err = -ENOMEM;
					break;
				}
				*items = m;
			}
			if (fn.lo > cur)
				(*items)[(*n)++] = (struct cm_item){ { cur, fn.lo < b ? fn.lo : b, 0, 0 }, 1 };
			(*items)[(*n)++] = (struct cm_item){ fn, 0 };
			cur = fn.hi;
			if (cur >= b)
				break;
		}
	}
	if (!err && cur < b) {
		if (*n + 1 > cap) {
			struct cm_item *m = realloc(*items, (cap + 1) * sizeof *m);
			if (!m) {
				free(*items);
				*items = NULL;
				return -ENOMEM;
			}
			*items = m;
		}
		(*items)[(*n)++] = (struct cm_item){ { cur, b, 0, 0 }, 1 };
	}
	if (err) {
		free(*items);
		*items = NULL;
	}
	return err;
}

int watch_codemap_walk(uintptr_t lo, uintptr_t hi,
                       int (*cb)(void *arg, const struct watch_code_fn *fn, uintptr_t a, uintptr_t b), void *arg)
{
	struct cm_item *all = NULL;
	size_t nall = 0;
	int err = 0;

	/* Listed under the lock, called back without it (the callbacks decode,
	 * and look functions up). */
	pthread_mutex_lock(&cm_lock);
	if (!nobjs)
		refresh();
	for (unsigned i = 0; !err && i < nobjs; i++)
		for (unsigned k = 0; !err && k < objs[i].nx; k++) {
			uintptr_t a = lo > objs[i].xlo[k] ? lo : objs[i].xlo[k];
			uintptr_t b = hi < objs[i].xhi[k] ? hi : objs[i].xhi[k];
			if (a >= b)
				continue;
			struct cm_item *items;
			size_t n;
			err = segment_items(&objs[i], a, b, &items, &n);
			struct cm_item *m = err ? NULL : realloc(all, (nall + n) * sizeof *m);
			if (m) {
				memcpy(m + nall, items, n * sizeof *m);
				all = m;
				nall += n;
			} else if (!err) {
				err = -ENOMEM;
			}
			free(items);
		}
	pthread_mutex_unlock(&cm_lock);
	for (size_t i = 0; !err && i < nall; i++)
		err = all[i].gap ? cb(arg, NULL, all[i].fn.lo, all[i].fn.hi) : cb(arg, &all[i].fn, all[i].fn.lo, all[i].fn.hi);
	free(all);
	return err;
}

/* ---------------------------------------------------------------- imports */

/* What the compilers call without coming back, when the call is not marked
 * by __asan_handle_no_return (the stack protector's check is added after
 * the sanitizers run). */
static const char *const noreturn_fns[] = {
	"__stack_chk_fail", "__fortify_fail", "__chk_fail", "abort", "exit", "_exit", "_Exit", "quick_exit",
	"__assert_fail", "__assert_perror_fail", "longjmp", "_longjmp", "siglongjmp", "__longjmp_chk",
	"pthread_exit", "err", "errx", "verr", "verrx", "__cxa_throw", "__cxa_rethrow", "_Unwind_Resume",
};

static int which_import(const char *name)
{
	if (strcmp(name, "__sanitizer_cov_trace_pc") == 0)
		return 0;
	if (strcmp(name, "__asan_handle_no_return") == 0)
		return 1;
	for (size_t i = 0; i < sizeof noreturn_fns / sizeof noreturn_fns[0]; i++)
		if (strcmp(name, noreturn_fns[i]) == 0)
			return 2;
	return -1;
}

void watch_codemap_dyn_relocs(uintptr_t base, const void *dynamic,
                              void (*cb)(void *arg, const char *name, uintptr_t where, unsigned type), void *arg)
{
	uintptr_t tab[2] = { 0, 0 }, symtab = 0, strtab = 0;
	size_t size[2] = { 0, 0 }, strsz = 0;

	if (!dynamic)
		return;
	for (const ElfW(Dyn) *d = dynamic; d->d_tag != DT_NULL; d++) {
		/* glibc relocates these entries of the in-memory _DYNAMIC in place. */
		uintptr_t p = d->d_un.d_ptr < base ? base + d->d_un.d_ptr : d->d_un.d_ptr;
		switch (d->d_tag) {
		case DT_JMPREL: tab[0] = p; break;
		case DT_PLTRELSZ: size[0] = d->d_un.d_val; break;
		case DT_RELA: tab[1] = p; break;
		case DT_RELASZ: size[1] = d->d_un.d_val; break;
		case DT_SYMTAB: symtab = p; break;
		case DT_STRTAB: strtab = p; break;
		case DT_STRSZ: strsz = d->d_un.d_val; break;
		default: break;
		}
	}
	if (!symtab || !strtab)
		return;
	const ElfW(Sym) *sym = (const ElfW(Sym) *)symtab;
	for (int t = 0; t < 2; t++) {
		const ElfW(Rela) *r = (const ElfW(Rela) *)tab[t];
		for (size_t i = 0; r && i < size[t] / sizeof *r; i++) {
			size_t k = ELF64_R_SYM(r[i].r_info);
			if (k == 0 || (strsz && sym[k].st_name >= strsz))
				continue;
			cb(arg, (const char *)strtab + sym[k].st_name, base + r[i].r_offset, ELF64_R_TYPE(r[i].r_info));
		}
	}
}

static void note_slot(void *arg, const char *name, uintptr_t where, unsigned type)
{
	struct cm_object *o = arg;
	int which = which_import(name);
	(void)type;
	if (which >= 0 && o->nslot[which] < CM_MAX_SLOTS)
		o->slot[which][o->nslot[which]++] = where;
}

static void scan_imports(struct cm_object *o)
{
	o->imports_scanned = 1;
	watch_codemap_dyn_relocs(o->base, o->dyn, note_slot, o);
}

int watch_codemap_runtime_object(const char *path)
{
	static const char *const prefix[] = { "libc.so", "libc-", "ld-linux", "ld-", "ld64.so", "libpthread",
		                              "libcapstone", "linux-vdso", "[vdso]", "[vsyscall]", "[vvar" };
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof prefix / sizeof prefix[0]; i++)
		if (strncmp(base, prefix[i], strlen(prefix[i])) == 0)
			return 1;
	return 0;
}

enum watch_import watch_codemap_import(uintptr_t slot)
{
	enum watch_import what = WATCH_IMPORT_OTHER;
	pthread_mutex_lock(&cm_lock);
	struct cm_object *o = object_of(slot, 0);
	if (o) {
		if (!o->imports_scanned)
			scan_imports(o);
		static const enum watch_import kind[3] = { WATCH_IMPORT_TRACE_PC, WATCH_IMPORT_NO_RETURN,
		                                           WATCH_IMPORT_NORETURN_FN };
		for (int w = 0; w < 3; w++)
			for (unsigned i = 0; i < o->nslot[w]; i++)
				if (o->slot[w][i] == slot)
					what = kind[w];
	}
	pthread_mutex_unlock(&cm_lock);
	return what;
}

int watch_codemap_landing_pads(const struct watch_code_fn *fn, uintptr_t *pad, unsigned max)
{
	if (!fn->lsda)
		return 0;
	if (fn->lsda == UINTPTR_MAX)
		return -1;
	/* The LSDA lies in .gcc_except_table, mapped with the object; its
	 * length is not recorded: the call-site table says where it ends. */
	const uint8_t *p = (const uint8_t *)fn->lsda, *end = p + 65536;
	uint64_t lpstart = fn->lo, u, start, len, lp;
	uint8_t lpstart_enc = *p++;
	if (lpstart_enc != PE_OMIT && read_enc(&p, end, lpstart_enc, 0, &lpstart))
		return -1;
	uint8_t ttype_enc = *p++;
	if (ttype_enc != PE_OMIT && read_uleb(&p, end, &u))
		return -1;
	uint8_t cs_enc = *p++;
	if (read_uleb(&p, end, &u) || u > (uint64_t)(end - p))
		return -1;
	const uint8_t *cs_end = p + u;
	unsigned n = 0;
	while (p < cs_end) {
		if (read_enc_value(&p, cs_end, cs_enc, &start) || read_enc_value(&p, cs_end, cs_enc, &len) ||
		    read_enc_value(&p, cs_end, cs_enc, &lp) || read_uleb(&p, cs_end, &u))
			return -1;
		if (!lp)
			continue;
		if (n >= max)
			return -1;
		pad[n++] = (uintptr_t)(lpstart + lp);
	}
	return (int)n;
}
