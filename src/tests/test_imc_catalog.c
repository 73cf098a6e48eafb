/*
 * Unit tests of the IMC catalog reader (src/imc/imc_catalog.c).  The
 * expectations never come from the reader:
 *   - the built-in POWER9 catalog against the facts it was generated from,
 *     src/imc/facts/power9-{units,events}.csv, parsed here (PMU names, full
 *     names, values, scale/unit inheritance after Linux imc_parse_event and
 *     doc/facilities.md 4(a)); a few documented values (doc/facilities.md
 *     4(a)) are checked on their own as well;
 *   - the same catalog as a DTB and as a device-tree directory (written here
 *     from the DTB the way Linux shows /proc/device-tree: a directory per
 *     node, a file per property with its raw bytes, a `name` file), as the
 *     imc-counters node itself and inside a whole tree: identical entries;
 *   - small catalogs of src/tests/imc-fixtures/ (dtc compiles them at build
 *     time) with their expectations written out below;
 *   - broken catalogs (the inherit fixture changed property by property with
 *     libfdt) refused with -EINVAL and a message naming node and property;
 *     truncated and bit-flipped blobs never crash;
 *   - PAPI_HERITAGE_IMC_CATALOG=<dtb>|<directory> replaces the built-in
 *     catalog (imc_catalog_get() reads once per process: each case in a
 *     child of its own).
 * Run from the top build directory (make check does): the fixtures are
 * src/tests/imc-fixtures/<name>.dtb there; $srcdir (the harness exports it)
 * locates the facts.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common/heritage_error.h"
#include "imc/imc_builtin.h"
#include "imc/imc_catalog.h"
#include "imc/imc_events.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <libfdt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "env_test.h"

#define FIXTURES "src/tests/imc-fixtures/"

/* Check records a checkpoint (a write(2)) for every ck_assert that passes:
 * ~100000 of them in the loops below cost a second.  EXPECT calls Check only
 * on failure. */
#define EXPECT(cond, ...) \
	do { \
		if (!(cond)) \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)
#define EXPECT_UEQ(a, b) \
	EXPECT((uint64_t)(a) == (uint64_t)(b), "%s == %s: 0x%" PRIx64 " != 0x%" PRIx64, #a, #b, (uint64_t)(a), \
	       (uint64_t)(b))
#define EXPECT_STREQ(a, b) EXPECT(strcmp((a), (b)) == 0, "%s == %s: '%s' != '%s'", #a, #b, (a), (b))

/* ------------------------------------------------------------------ helpers */

static void *read_whole(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s: %s (run from the top build directory)", path, strerror(errno));
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	long n = ftell(f);
	ck_assert_int_ge(n, 0);
	rewind(f);
	void *buf = malloc(n ? (size_t)n : 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void write_whole(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	EXPECT(fd >= 0, "cannot create %s: %s", path, strerror(errno));
	EXPECT_UEQ(write(fd, buf, len), (ssize_t)len);
	EXPECT_UEQ(close(fd), 0);
}

static char *make_tmpdir(void)
{
	const char *t = getenv("TMPDIR");
	char *dir;
	ck_assert_int_gt(asprintf(&dir, "%s/test_imc_catalog.XXXXXX", t && *t ? t : P_tmpdir), 0);
	ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
	return dir;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	return remove(path);
}

static void rm_tree(char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

static char *path_join(const char *a, const char *b)
{
	char *p;
	ck_assert_int_gt(asprintf(&p, "%s/%s", a, b), 0);
	return p;
}

/* A DTB node as Linux shows it under /proc/device-tree: dir (created) holds
 * one file per property with its raw bytes (strings with their NUL, cells
 * big-endian, phandle among them when the node has one), a `name` file when
 * the blob has no name property (the node name before '@', NUL-terminated:
 * Linux's unflatten recreates it), and one directory per child named as the
 * child (with its @address). */
static void dtb_node_to_dir(const void *fdt, int node, const char *dir)
{
	EXPECT(mkdir(dir, 0755) == 0, "mkdir %s: %s", dir, strerror(errno));
	int prop, has_name = 0;
	fdt_for_each_property_offset(prop, fdt, node) {
		const char *pname;
		int len;
		const void *val = fdt_getprop_by_offset(fdt, prop, &pname, &len);
		ck_assert_ptr_nonnull(val);
		if (strcmp(pname, "name") == 0)
			has_name = 1;
		char *p = path_join(dir, pname);
		write_whole(p, val, (size_t)len);
		free(p);
	}
	if (!has_name) {
		const char *nn = fdt_get_name(fdt, node, NULL);
		ck_assert_ptr_nonnull(nn);
		size_t n = strcspn(nn, "@");
		char *val = strndup(nn, n);
		char *p = path_join(dir, "name");
		write_whole(p, val, n + 1);
		free(p);
		free(val);
	}
	int child;
	fdt_for_each_subnode(child, fdt, node) {
		char *p = path_join(dir, fdt_get_name(fdt, child, NULL));
		dtb_node_to_dir(fdt, child, p);
		free(p);
	}
}

/* Copies node's properties and children into the tree being written. */
static void copy_node(void *out, const void *fdt, int node)
{
	int prop, child;
	fdt_for_each_property_offset(prop, fdt, node) {
		const char *pname;
		int len;
		const void *val = fdt_getprop_by_offset(fdt, prop, &pname, &len);
		EXPECT_UEQ(fdt_property(out, pname, val, len), 0);
	}
	fdt_for_each_subnode(child, fdt, node) {
		EXPECT_UEQ(fdt_begin_node(out, fdt_get_name(fdt, child, NULL)), 0);
		copy_node(out, fdt, child);
		EXPECT_UEQ(fdt_end_node(out), 0);
	}
}

/* The catalog blob (its root is the imc-counters node) inside a whole
 * device tree, as OPAL hands it to Linux: / { cpus { cpu@0 } imc-counters
 * { catalog } }.  malloc'd, 8-aligned. */
static void *wrap_in_tree(const void *cat)
{
	int size = fdt_totalsize(cat) + 4096;
	void *out = malloc((size_t)size);
	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(fdt_create(out, size), 0);
	ck_assert_int_eq(fdt_finish_reservemap(out), 0);
	ck_assert_int_eq(fdt_begin_node(out, ""), 0);
	ck_assert_int_eq(fdt_property_string(out, "compatible", "ibm,powernv"), 0);
	ck_assert_int_eq(fdt_property_u32(out, "#address-cells", 2), 0);
	ck_assert_int_eq(fdt_property_u32(out, "#size-cells", 2), 0);
	ck_assert_int_eq(fdt_begin_node(out, "cpus"), 0);
	ck_assert_int_eq(fdt_begin_node(out, "cpu@0"), 0);
	ck_assert_int_eq(fdt_property_string(out, "device_type", "cpu"), 0);
	ck_assert_int_eq(fdt_property_u32(out, "reg", 0), 0);
	ck_assert_int_eq(fdt_end_node(out), 0);
	ck_assert_int_eq(fdt_end_node(out), 0);
	ck_assert_int_eq(fdt_begin_node(out, "imc-counters"), 0);
	copy_node(out, cat, 0);
	ck_assert_int_eq(fdt_end_node(out), 0);
	ck_assert_int_eq(fdt_end_node(out), 0);
	ck_assert_int_eq(fdt_finish(out), 0);
	ck_assert_int_eq(fdt_check_header(out), 0);
	return out;
}

static int str_eq(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

#define ck_str_or_null_eq(a, b, what, i) \
	EXPECT(str_eq((a), (b)), "%s of #%u: '%s' and '%s'", (what), (i), (a) ? (a) : "(null)", (b) ? (b) : "(null)")

/* Every field but the source and the lists' paths (a DTB path and a
 * directory path: the same node's name).  Order-independent: the
 * directory reader lists a node's children in name order (readdir order is
 * the filesystem's, and a DTB's order is lost under /proc/device-tree), so
 * units are matched by node name, events by name within their list, entries
 * by full name, and the indices they hold by what they point at. */
static void ck_catalogs_equal(const struct imc_catalog *a, const struct imc_catalog *b)
{
	EXPECT_UEQ(a->nunits, b->nunits);
	EXPECT_UEQ(a->nlists, b->nlists);
	EXPECT_UEQ(a->nentries, b->nentries);
	for (unsigned i = 0; i < a->nunits; i++) {
		const struct imc_cat_unit *u = &a->units[i], *v = NULL;
		for (unsigned j = 0; j < b->nunits && !v; j++)
			if (strcmp(b->units[j].node, u->node) == 0)
				v = &b->units[j];
		EXPECT(v != NULL, "unit %s missing", u->node);
		ck_str_or_null_eq(u->pmu, v->pmu, "unit pmu", i);
		ck_str_or_null_eq(u->prefix, v->prefix, "unit prefix", i);
		ck_str_or_null_eq(u->scale, v->scale, "unit scale", i);
		ck_str_or_null_eq(u->unit, v->unit, "unit unit", i);
		EXPECT_UEQ(u->reg, v->reg);
		EXPECT_UEQ(u->type, v->type);
		EXPECT_UEQ(u->size, v->size);
		EXPECT_UEQ(u->has_offset, v->has_offset);
		EXPECT_UEQ(u->has_cb_offset, v->has_cb_offset);
		EXPECT_UEQ(u->offset, v->offset);
		EXPECT_UEQ(u->cb_offset, v->cb_offset);
		EXPECT(u->list < a->nlists, "u->list (%u) out of range", (unsigned)(u->list));
		EXPECT(v->list < b->nlists, "v->list (%u) out of range", (unsigned)(v->list));
		const struct imc_cat_list *l = &a->lists[u->list], *m = &b->lists[v->list];
		ck_str_or_null_eq(base_name(l->path), base_name(m->path), "list path", i);
		EXPECT_UEQ(l->phandle, m->phandle);
		EXPECT_UEQ(l->nevents, m->nevents);
		for (unsigned j = 0; j < l->nevents; j++) {
			const struct imc_cat_event *e = &l->events[j], *f = NULL;
			for (unsigned k = 0; k < m->nevents && !f; k++)
				if (strcmp(m->events[k].name, e->name) == 0)
					f = &m->events[k];
			EXPECT(f != NULL, "event %s of %s missing", e->name, l->path);
			EXPECT_UEQ(e->reg, f->reg);
			ck_str_or_null_eq(e->desc, f->desc, "event desc", j);
			ck_str_or_null_eq(e->scale, f->scale, "event scale", j);
			ck_str_or_null_eq(e->unit, f->unit, "event unit", j);
		}
	}
	for (unsigned i = 0; i < a->nentries; i++) {
		const struct imc_cat_entry *e = &a->entries[i];
		int k = imc_catalog_find(b, e->name, strlen(e->name));
		EXPECT(k >= 0, "entry %s missing", e->name);
		const struct imc_cat_entry *f = &b->entries[k];
		EXPECT_STREQ(e->name, f->name);
		EXPECT_UEQ(e->value, f->value);
		ck_str_or_null_eq(e->scale, f->scale, "entry scale", i);
		ck_str_or_null_eq(e->unit_name, f->unit_name, "entry unit", i);
		ck_str_or_null_eq(e->desc, f->desc, "entry desc", i);
		EXPECT_STREQ(a->units[e->unit].node, b->units[f->unit].node);
		EXPECT_STREQ(a->lists[a->units[e->unit].list].events[e->event].name,
				 b->lists[b->units[f->unit].list].events[f->event].name);
	}
}

static struct imc_catalog *load_builtin(void)
{
	struct imc_catalog *cat = NULL;
	int rc = imc_catalog_from_dtb(imc_builtin_dtb, imc_builtin_dtb_len, "built-in", &cat);
	ck_assert_msg(rc == 0, "built-in catalog: %d %s", rc, heritage_last_error());
	ck_assert_ptr_nonnull(cat);
	return cat;
}

static struct imc_catalog *load_path(const char *path)
{
	struct imc_catalog *cat = NULL;
	int rc = imc_catalog_from_path(path, &cat);
	ck_assert_msg(rc == 0, "%s: %d %s", path, rc, heritage_last_error());
	ck_assert_ptr_nonnull(cat);
	return cat;
}

static struct imc_catalog *load_dir(const char *path)
{
	struct imc_catalog *cat = NULL;
	int rc = imc_catalog_from_dir(path, &cat);
	ck_assert_msg(rc == 0, "%s: %d %s", path, rc, heritage_last_error());
	ck_assert_ptr_nonnull(cat);
	return cat;
}

/* One expected entry, written out. */
struct want {
	const char *name;
	uint64_t value;
	const char *scale, *unit;
};

static void ck_entries(const struct imc_catalog *cat, const struct want *w, unsigned n)
{
	ck_assert_uint_eq(cat->nentries, n);
	for (unsigned i = 0; i < n; i++) {
		const struct imc_cat_entry *e = &cat->entries[i];
		ck_assert_str_eq(e->name, w[i].name);
		ck_assert_msg(e->value == w[i].value, "%s: value 0x%" PRIx64 ", want 0x%" PRIx64, e->name, e->value,
			      w[i].value);
		ck_str_or_null_eq(e->scale, w[i].scale, "scale", i);
		ck_str_or_null_eq(e->unit_name, w[i].unit, "unit", i);
		ck_assert_int_eq(imc_catalog_find(cat, w[i].name, strlen(w[i].name)), (int)i);
	}
}

/* --------------------------------------------------------- the POWER9 facts */

struct csv {
	char **cells; /* rows * cols, "" for an empty cell */
	unsigned rows, cols;
};

/* src/imc/facts in the source tree: from $srcdir, or, where the test runs
 * in a link farm of the build tree (make check-unprivileged: srcdir is the
 * farm), from the build tree make check names ($abs_top_builddir). */
static const char *facts_dir(void)
{
	static char dir[4096];
	const char *roots[] = { getenv("srcdir"), getenv("abs_top_builddir"), "." };
	for (unsigned i = 0; i < sizeof roots / sizeof roots[0]; i++) {
		if (!roots[i] || !*roots[i])
			continue;
		snprintf(dir, sizeof dir, "%s/src/imc/facts/power9-units.csv", roots[i]);
		if (access(dir, R_OK) == 0)
			break;
	}
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	return dir;
}

/* Comma-separated, a header, no quoting (the facts' README): header dropped. */
static int csv_read(const char *path, unsigned cols, struct csv *out)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	unsigned rows = 0, alloc = 0, lineno = 0;
	char **cells = NULL;
	while ((n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = 0;
		if (lineno == 1 || n == 0)
			continue;
		if (rows == alloc) {
			alloc = alloc ? 2 * alloc : 64;
			cells = realloc(cells, (size_t)alloc * cols * sizeof *cells);
			ck_assert_ptr_nonnull(cells);
		}
		char *p = line, *tok;
		unsigned c = 0;
		while ((tok = strsep(&p, ",")) != NULL) {
			ck_assert_msg(c < cols, "%s:%u: more than %u fields", path, lineno, cols);
			cells[rows * cols + c++] = strdup(tok);
		}
		ck_assert_msg(c == cols, "%s:%u: %u fields, %u expected", path, lineno, c, cols);
		rows++;
	}
	free(line);
	fclose(f);
	out->cells = cells;
	out->rows = rows;
	out->cols = cols;
	return 0;
}

static const char *cell(const struct csv *t, unsigned r, unsigned c)
{
	return t->cells[r * t->cols + c];
}

static const char *or_null(const char *s)
{
	return *s ? s : NULL;
}

static void csv_free(struct csv *t)
{
	for (unsigned i = 0; i < t->rows * t->cols; i++)
		free(t->cells[i]);
	free(t->cells);
}

enum { U_NODE, U_LABEL, U_PREFIX, U_REG, U_TYPE, U_SIZE, U_OFFSET, U_CB_OFFSET, U_SCALE, U_UNIT, U_COLS };
enum { E_LABEL, E_NAME, E_REG, E_SCALE, E_UNIT, E_COLS };

START_TEST(builtin_is_the_facts)
{
	char up[4200], ep[4200];
	struct csv units, events;
	snprintf(up, sizeof up, "%s/power9-units.csv", facts_dir());
	snprintf(ep, sizeof ep, "%s/power9-events.csv", facts_dir());
	int rc = csv_read(up, U_COLS, &units);
	ck_assert_msg(rc == 0, "%s: %s (the POWER9 facts are part of the source tree)", up, strerror(-rc));
	rc = csv_read(ep, E_COLS, &events);
	ck_assert_msg(rc == 0, "%s: %s", ep, strerror(-rc));
	struct imc_catalog *cat = load_builtin();

	EXPECT_UEQ(cat->nunits, units.rows);
	unsigned k = 0, nlabels = 0;
	for (unsigned u = 0; u < units.rows; u++) {
		const struct imc_cat_unit *cu = &cat->units[u];
		const char *node = cell(&units, u, U_NODE);
		uint32_t type = (uint32_t)strtoul(cell(&units, u, U_TYPE), NULL, 16);
		uint32_t base = (uint32_t)strtoul(cell(&units, u, U_REG), NULL, 16);
		char pmu[256];
		int ulen = (int)strcspn(node, "@");
		/* Linux: nest_<unit>_imc for nest units, <unit>_imc otherwise. */
		snprintf(pmu, sizeof pmu, "%s%.*s_imc", type == 0x10 ? "nest_" : "", ulen, node);

		EXPECT_STREQ(cu->node, node);
		EXPECT_STREQ(cu->pmu, pmu);
		EXPECT_STREQ(cu->prefix, cell(&units, u, U_PREFIX));
		EXPECT_UEQ(cu->reg, base);
		EXPECT_UEQ(cu->type, type);
		EXPECT_UEQ(cu->size, strtoul(cell(&units, u, U_SIZE), NULL, 16));
		EXPECT_UEQ(cu->has_offset, *cell(&units, u, U_OFFSET) != 0);
		if (cu->has_offset)
			EXPECT_UEQ(cu->offset, strtoul(cell(&units, u, U_OFFSET), NULL, 16));
		EXPECT_UEQ(cu->has_cb_offset, *cell(&units, u, U_CB_OFFSET) != 0);
		if (cu->has_cb_offset)
			EXPECT_UEQ(cu->cb_offset, strtoul(cell(&units, u, U_CB_OFFSET), NULL, 16));
		ck_str_or_null_eq(cu->scale, or_null(cell(&units, u, U_SCALE)), "unit scale", u);
		ck_str_or_null_eq(cu->unit, or_null(cell(&units, u, U_UNIT)), "unit unit", u);
		EXPECT(cu->list < cat->nlists, "cu->list (%u) out of range", (unsigned)(cu->list));

		/* Its events: the label's rows, in file order. */
		unsigned nev = 0;
		for (unsigned e = 0; e < events.rows; e++) {
			if (strcmp(cell(&events, e, E_LABEL), cell(&units, u, U_LABEL)) != 0)
				continue;
			char name[512];
			snprintf(name, sizeof name, "%s::%s%s", pmu, cell(&units, u, U_PREFIX), cell(&events, e, E_NAME));
			uint64_t value = (uint64_t)base + strtoull(cell(&events, e, E_REG), NULL, 16);
			const char *scale = *cell(&events, e, E_SCALE) ? cell(&events, e, E_SCALE) : or_null(cell(&units, u, U_SCALE));
			const char *unit = *cell(&events, e, E_UNIT) ? cell(&events, e, E_UNIT) : or_null(cell(&units, u, U_UNIT));

			EXPECT(k < cat->nentries, "k (%u) out of range", (unsigned)(k));
			const struct imc_cat_entry *ce = &cat->entries[k];
			EXPECT_STREQ(ce->name, name);
			EXPECT(ce->value == value, "%s: 0x%" PRIx64 ", want 0x%" PRIx64, name, ce->value, value);
			ck_str_or_null_eq(ce->scale, scale, "entry scale", k);
			ck_str_or_null_eq(ce->unit_name, unit, "entry unit", k);
			EXPECT(ce->desc == NULL, "ce->desc not NULL"); /* the facts have no descriptions */
			EXPECT_UEQ(ce->unit, u);
			EXPECT_UEQ(ce->event, nev);
			EXPECT_STREQ(cat->lists[cu->list].events[nev].name, cell(&events, e, E_NAME));
			EXPECT_UEQ(imc_catalog_find(cat, name, strlen(name)), (int)k);
			k++;
			nev++;
		}
		EXPECT_UEQ(cat->lists[cu->list].nevents, nev);
	}
	/* Count = sum over units of their list's size; one list per label. */
	EXPECT_UEQ(cat->nentries, k);
	for (unsigned e = 0; e < events.rows; e++) {
		unsigned seen = 0;
		for (unsigned f = 0; f < e && !seen; f++)
			seen = strcmp(cell(&events, f, E_LABEL), cell(&events, e, E_LABEL)) == 0;
		nlabels += !seen;
	}
	EXPECT_UEQ(cat->nlists, nlabels);
	printf("builtin_is_the_facts: %u units, %u lists, %u entries as in %s\n", cat->nunits, cat->nlists,
	       cat->nentries, facts_dir());
	imc_catalog_free(cat);
	csv_free(&units);
	csv_free(&events);
}
END_TEST

/* Values doc/facilities.md 4(a) documents, checked apart from the CSVs. */
START_TEST(builtin_documented_values)
{
	struct imc_catalog *cat = load_builtin();
	static const struct {
		const char *name;
		uint64_t value;
		const char *scale;
	} doc[] = {
		{ "nest_mcs01_imc::PM_MCS01_64B_RD_DISP_PORT01", 0xc8, "256" }, /* mcs01@c8 + event@0 */
		{ "core_imc::CPM_CS_INST", 0x18 + 0x808, "512" },
		{ "core_imc::CPM_CS_INST_USER", 0x18 + 0x1008, "512" },
		{ "core_imc::CPM_CS_INST_KERNEL", 0x18 + 0x1808, "512" },
		{ "thread_imc::CPM_CS_PCYC_USER", 0x18 + 0x1000, "512" }, /* CS_PCYC 0x800 + 0x800 */
		{ "trace_imc::trace_cycles", 0x10200000, NULL },
	};
	for (unsigned i = 0; i < sizeof doc / sizeof doc[0]; i++) {
		int k = imc_catalog_find(cat, doc[i].name, strlen(doc[i].name));
		ck_assert_msg(k >= 0, "%s not in the built-in catalog", doc[i].name);
		ck_assert_uint_eq(cat->entries[k].value, doc[i].value);
		ck_str_or_null_eq(cat->entries[k].scale, doc[i].scale, "scale", i);
	}
	/* Case-insensitive, and len bounds the name (a qualifier may follow). */
	const char *q = "NEST_MCS01_IMC::pm_mcs01_64b_rd_disp_port01:cpu=0";
	ck_assert_int_eq(imc_catalog_find(cat, q, strlen(q) - strlen(":cpu=0")),
			 imc_catalog_find(cat, doc[0].name, strlen(doc[0].name)));
	ck_assert_int_eq(imc_catalog_find(cat, q, strlen(q)), -1);
	ck_assert_int_eq(imc_catalog_find(cat, "nest_mcs01_imc::PM_MCS01_", strlen("nest_mcs01_imc::PM_MCS01_")), -1);
	ck_assert_int_eq(imc_catalog_find(cat, "core_imc::CPM_NO_SUCH", strlen("core_imc::CPM_NO_SUCH")), -1);
	imc_catalog_free(cat);
}
END_TEST

/* ------------------------------------------------------- DTB and directory */

START_TEST(dtb_and_directory_agree)
{
	struct imc_catalog *ref = load_builtin();
	char *tmp = make_tmpdir();
	struct imc_catalog *c;

	/* The shipped shape (the catalog's root is the imc-counters node), as
	 * a DTB file. */
	char *dtb = path_join(tmp, "power9.dtb");
	write_whole(dtb, imc_builtin_dtb, imc_builtin_dtb_len);
	c = load_path(dtb);
	ck_catalogs_equal(ref, c);
	ck_assert_str_eq(c->source, dtb);
	imc_catalog_free(c);

	/* A whole tree holding an imc-counters node, as DTB and as
	 * /proc/device-tree.  Its imc-counters directory is also what the
	 * shipped DTB's root gives (the same properties, name = "" among them,
	 * the same children): one tree on disk serves both shapes, ~2500 files
	 * written once (ext4 under load: seconds per tree). */
	void *tree = wrap_in_tree(imc_builtin_dtb);
	char *tdtb = path_join(tmp, "tree.dtb"), *troot = path_join(tmp, "device-tree");
	write_whole(tdtb, tree, fdt_totalsize(tree));
	ck_assert_int_eq(imc_catalog_from_dtb(tree, fdt_totalsize(tree), "tree", &c), 0);
	ck_catalogs_equal(ref, c);
	imc_catalog_free(c);
	c = load_path(tdtb);
	ck_catalogs_equal(ref, c);
	imc_catalog_free(c);
	dtb_node_to_dir(tree, 0, troot);
	c = load_path(troot);
	ck_catalogs_equal(ref, c);
	ck_assert_str_eq(c->source, troot);
	imc_catalog_free(c);
	char *tnode = path_join(troot, "imc-counters");
	c = load_dir(tnode);
	ck_catalogs_equal(ref, c);
	imc_catalog_free(c);

	/* A directory without imc-counters, a missing path. */
	char *cpus = path_join(troot, "cpus"), *none = path_join(tmp, "none");
	ck_assert_int_eq(imc_catalog_from_dir(cpus, &c), -ENOENT);
	ck_assert_int_eq(imc_catalog_from_path(none, &c), -ENOENT);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), none));

	free(cpus);
	free(none);
	free(tnode);
	free(tdtb);
	free(troot);
	free(tree);
	free(dtb);
	rm_tree(tmp);
	imc_catalog_free(ref);
}
END_TEST

/* ------------------------------------------------------------- fixtures */

START_TEST(scale_and_unit_inheritance)
{
	/* src/tests/imc-fixtures/inherit.dts: events PLAIN@0, OWN_SCALE@8
	 * ("2"), OWN_UNIT@10 ("MiB"), OWN_BOTH@18 ("0.5", "ns") under both@100
	 * (nest, "256", "B"), none@200 (core, nothing), unitonly@300 (thread,
	 * unit "cycles", empty prefix). */
	static const struct want w[] = {
		{ "nest_both_imc::B_PLAIN", 0x100, "256", "B" },
		{ "nest_both_imc::B_OWN_SCALE", 0x108, "2", "B" },
		{ "nest_both_imc::B_OWN_UNIT", 0x110, "256", "MiB" },
		{ "nest_both_imc::B_OWN_BOTH", 0x118, "0.5", "ns" },
		{ "none_imc::N_PLAIN", 0x200, NULL, NULL },
		{ "none_imc::N_OWN_SCALE", 0x208, "2", NULL },
		{ "none_imc::N_OWN_UNIT", 0x210, NULL, "MiB" },
		{ "none_imc::N_OWN_BOTH", 0x218, "0.5", "ns" },
		{ "unitonly_imc::PLAIN", 0x300, NULL, "cycles" },
		{ "unitonly_imc::OWN_SCALE", 0x308, "2", "cycles" },
		{ "unitonly_imc::OWN_UNIT", 0x310, NULL, "MiB" },
		{ "unitonly_imc::OWN_BOTH", 0x318, "0.5", "ns" },
	};
	struct imc_catalog *cat = load_path(FIXTURES "inherit.dtb");
	ck_entries(cat, w, sizeof w / sizeof w[0]);
	ck_assert_uint_eq(cat->nunits, 3);
	ck_assert_uint_eq(cat->nlists, 1);
	ck_assert_str_eq(cat->entries[3].desc, "has its own scale and unit");
	ck_assert_ptr_null(cat->entries[0].desc);
	ck_assert_str_eq(cat->units[2].prefix, "");
	ck_assert_int_eq(cat->units[0].has_offset, 1);
	ck_assert_uint_eq(cat->units[0].offset, 0x180000);
	ck_assert_uint_eq(cat->units[0].cb_offset, 0x3fc00);
	ck_assert_int_eq(cat->units[1].has_offset, 0);
	ck_assert_int_eq(cat->units[1].has_cb_offset, 0);
	ck_assert_uint_eq(cat->units[1].type, IMC_TYPE_CORE);
	ck_assert_uint_eq(cat->units[2].type, IMC_TYPE_THREAD);
	/* The events as written, not inherited. */
	ck_assert_ptr_null(cat->lists[0].events[0].scale);
	ck_assert_ptr_null(cat->lists[0].events[0].unit);
	ck_assert_str_eq(cat->lists[0].events[1].scale, "2");
	imc_catalog_free(cat);
}
END_TEST

/* src/tests/imc-fixtures/p10like.dts, a whole tree. */
static const struct want p10like[] = {
	{ "nest_pb_imc::PM_PB_PUMP_P1", 0xb8, "1024", NULL },
	{ "nest_pb_imc::PM_PB_NNS_PUMP01", 0xb8 + 0x130, "1024", NULL },
	{ "nest_ocmb0_imc::PM_OCMB0_CAS_RD", 0x998 + 0x8, "65536", "B" },
	{ "nest_ocmb0_imc::PM_OCMB0_CAS_WR", 0x998 + 0x10, "65536", "B" },
	{ "nest_ocmb0_imc::PM_OCMB0_COMMAND_CLOCKS", 0x998 + 0x18, "1", "cycles" },
	{ "nest_ocmb1_imc::PM_OCMB1_CAS_RD", 0x9b8 + 0x8, "65536", "B" },
	{ "nest_ocmb1_imc::PM_OCMB1_CAS_WR", 0x9b8 + 0x10, "65536", "B" },
	{ "nest_ocmb1_imc::PM_OCMB1_COMMAND_CLOCKS", 0x9b8 + 0x18, "1", "cycles" },
	{ "core_imc::CPM_PCYC", 0x18, "1", NULL },
	{ "core_imc::CPM_VSU_FSQRT_FDIV", 0x18 + 0x648, "1", NULL },
	{ "thread_imc::CPM_INST", 0x18 + 0x8, "1", NULL },
	{ "trace_imc::trace_cycles", 0x10200000, NULL, NULL },
};
#define NP10 (sizeof p10like / sizeof p10like[0])

START_TEST(another_catalog)
{
	struct imc_catalog *cat = load_path(FIXTURES "p10like.dtb");
	ck_entries(cat, p10like, NP10);
	ck_assert_uint_eq(cat->nunits, 6);
	ck_assert_uint_eq(cat->nlists, 5);
	ck_assert_str_eq(cat->units[0].node, "pb@b8");
	ck_assert_str_eq(cat->units[0].pmu, "nest_pb_imc");
	ck_assert_uint_eq(cat->units[1].list, cat->units[2].list);
	ck_assert_uint_ne(cat->units[3].list, cat->units[4].list);
	ck_assert_str_eq(cat->units[5].pmu, "trace_imc");
	ck_assert_uint_eq(cat->units[5].type, IMC_TYPE_TRACE);
	ck_assert_str_eq(cat->entries[0].desc, "PowerBus pumps");

	/* The same tree as /proc/device-tree, from the root and the node. */
	size_t len;
	void *blob = read_whole(FIXTURES "p10like.dtb", &len);
	char *tmp = make_tmpdir(), *root = path_join(tmp, "device-tree");
	dtb_node_to_dir(blob, 0, root);
	struct imc_catalog *d = load_path(root);
	ck_catalogs_equal(cat, d);
	ck_assert_str_eq(d->source, root);
	imc_catalog_free(d);
	char *node = path_join(root, "imc-counters");
	d = load_dir(node);
	ck_catalogs_equal(cat, d);
	imc_catalog_free(d);
	free(node);
	free(root);
	rm_tree(tmp);
	free(blob);
	imc_catalog_free(cat);
}
END_TEST

/* A whole tree is more than its imc-counters node: what lies elsewhere
 * (a deep PCI hierarchy, a property over 1 MiB, a `security-*` property
 * that Linux shows with mode 0400, so unreadable to a user) must not stop
 * the catalog from loading, from a DTB or from /proc/device-tree. */
/* inherit.dts in a whole tree that also holds /cpus/cpu@0/bridge@0/...
 * 24 deep and a 2 MiB property in /cpus.  malloc'd. */
static void *big_tree(void)
{
	size_t len;
	void *cat = read_whole(FIXTURES "inherit.dtb", &len);
	void *tree = wrap_in_tree(cat);
	int size = (int)fdt_totalsize(tree) + (2 << 20) + 4096;
	void *big = malloc((size_t)size);
	ck_assert_int_eq(fdt_open_into(tree, big, size), 0);
	int at = fdt_path_offset(big, "/cpus/cpu@0");
	ck_assert_int_ge(at, 0);
	for (int d = 0; d < 24; d++) {
		char name[16];
		snprintf(name, sizeof name, "bridge@%d", d);
		at = fdt_add_subnode(big, at, name);
		ck_assert_int_ge(at, 0);
	}
	void *blob2m = calloc(1, 2 << 20);
	ck_assert_int_eq(fdt_setprop(big, fdt_path_offset(big, "/cpus"), "ibm,big-table", blob2m, 2 << 20), 0);
	free(blob2m);
	ck_assert_int_eq(fdt_pack(big), 0);
	free(tree);
	free(cat);
	return big;
}

START_TEST(rest_of_the_tree_is_not_read_dtb)
{
	void *big = big_tree();
	static const char *const units[] = { "both@100", "none@200", "unitonly@300" };
	struct imc_catalog *c = NULL;
	int rc = imc_catalog_from_dtb(big, fdt_totalsize(big), "big-tree.dtb", &c);
	ck_assert_msg(rc == 0, "whole-tree DTB: %d %s", rc, heritage_last_error());
	ck_assert_uint_eq(c->nentries, 12);
	for (unsigned i = 0; i < 3; i++)
		ck_assert_str_eq(c->units[i].node, units[i]);
	imc_catalog_free(c);
	free(big);
}
END_TEST

START_TEST(rest_of_the_tree_is_not_read_dir)
{
	void *big = big_tree();
	char *tmp = make_tmpdir(), *root = path_join(tmp, "device-tree");
	dtb_node_to_dir(big, 0, root);
	char *sec = path_join(root, "cpus/security-key");
	write_whole(sec, "\1\2\3\4", 4);
	/* Unreadable but to root (who reads it anyway: the case bites when
	 * the suite runs as nobody). */
	ck_assert_int_eq(chmod(sec, 0), 0);
	struct imc_catalog *c = NULL;
	int rc = imc_catalog_from_path(root, &c);
	ck_assert_msg(rc == 0, "whole-tree directory: %d %s", rc, heritage_last_error());
	ck_assert_uint_eq(c->nentries, 12);
	imc_catalog_free(c);
	free(sec);
	free(root);
	rm_tree(tmp);
	free(big);
}
END_TEST

/* ------------------------------------------------------------- refusals */

enum edit { SET_U32, SET_BYTES, DEL };
struct broken {
	const char *what;
	const char *node; /* path in inherit.dtb */
	const char *prop;
	enum edit edit;
	uint32_t u32;
	const char *bytes;
	int nbytes;
	const char *msg_node, *msg_prop; /* the message names both */
};

static const struct broken broken[] = {
	{ "events -> no such phandle", "/both@100", "events", SET_U32, 0x999, NULL, 0, "both@100", "events" },
	{ "event without reg", "/list-events/event@8", "reg", DEL, 0, NULL, 0, "event@8", "reg" },
	{ "event without event-name", "/list-events/event@10", "event-name", DEL, 0, NULL, 0, "event@10", "event-name" },
	{ "event reg of 6 bytes", "/list-events/event@0", "reg", SET_BYTES, 0, "\0\0\0\0\0\0", 6, "event@0", "reg" },
	{ "event reg empty", "/list-events/event@8", "reg", SET_BYTES, 0, "", 0, "event@8", "reg" },
	{ "empty event-name", "/list-events/event@10", "event-name", SET_BYTES, 0, "", 1, "event@10", "event-name" },
	{ "event scale of two strings", "/list-events/event@8", "scale", SET_BYTES, 0, "2\0003", 4, "event@8", "scale" },
	{ "unit reg of 3 bytes", "/none@200", "reg", SET_BYTES, 0, "\0\0\2", 3, "none@200", "reg" },
	{ "unit without reg", "/none@200", "reg", DEL, 0, NULL, 0, "none@200", "reg" },
	{ "event-name not NUL-terminated", "/list-events/event@0", "event-name", SET_BYTES, 0, "PLAIN", 5, "event@0",
	  "event-name" },
	{ "events-prefix not NUL-terminated", "/both@100", "events-prefix", SET_BYTES, 0, "B_", 2, "both@100",
	  "events-prefix" },
	{ "unit scale not NUL-terminated", "/both@100", "scale", SET_BYTES, 0, "256", 3, "both@100", "scale" },
	{ "event unit not NUL-terminated", "/list-events/event@10", "unit", SET_BYTES, 0, "MiB", 3, "event@10", "unit" },
	{ "unknown type", "/none@200", "type", SET_U32, 0x8, NULL, 0, "none@200", "type" },
	{ "type of 2 bytes", "/none@200", "type", SET_BYTES, 0, "\0\4", 2, "none@200", "type" },
	{ "unit without type", "/none@200", "type", DEL, 0, NULL, 0, "none@200", "type" },
	{ "size 0", "/both@100", "size", SET_U32, 0, NULL, 0, "both@100", "size" },
	{ "unit without size", "/both@100", "size", DEL, 0, NULL, 0, "both@100", "size" },
	{ "unit without events", "/unitonly@300", "events", DEL, 0, NULL, 0, "unitonly@300", "events" },
	/* skiboot's struct imc_chip_cb is 40 bytes: at size - 32 it overflows. */
	{ "control block past size", "/both@100", "cb_offset", SET_U32, 0x40000 - 32, NULL, 0, "both@100", "cb_offset" },
	{ "offset of 2 bytes", "/both@100", "offset", SET_BYTES, 0, "\0\1", 2, "both@100", "offset" },
	/* fuzz_imc_dir's find: 0xfffffff0 + 0x18 wrapped to 0x8, another
	 * counter's offset. */
	{ "unit reg + event reg past 2^32", "/none@200", "reg", SET_U32, 0xfffffff0, NULL, 0, "none@200", "reg" },
};

START_TEST(refusals)
{
	const struct broken *b = &broken[_i];
	size_t len;
	void *base = read_whole(FIXTURES "inherit.dtb", &len);
	size_t size = len + 256;
	void *blob = malloc(size);
	ck_assert_int_eq(fdt_open_into(base, blob, (int)size), 0);
	int off = fdt_path_offset(blob, b->node);
	ck_assert_msg(off >= 0, "%s not in inherit.dts", b->node);
	switch (b->edit) {
	case SET_U32:
		ck_assert_int_eq(fdt_setprop_u32(blob, off, b->prop, b->u32), 0);
		break;
	case SET_BYTES:
		ck_assert_int_eq(fdt_setprop(blob, off, b->prop, b->bytes, b->nbytes), 0);
		break;
	case DEL:
		ck_assert_int_eq(fdt_delprop(blob, off, b->prop), 0);
		break;
	}
	ck_assert_int_eq(fdt_pack(blob), 0);
	struct imc_catalog *cat = NULL;
	heritage_clear_error();
	int rc = imc_catalog_from_dtb(blob, fdt_totalsize(blob), "broken.dtb", &cat);
	const char *msg = heritage_last_error();
	ck_assert_msg(rc == -EINVAL, "%s: %d, want -EINVAL (%s)", b->what, rc, msg ? msg : "");
	ck_assert_ptr_null(cat);
	ck_assert_msg(msg && strstr(msg, b->msg_node) && strstr(msg, b->msg_prop),
		      "%s: message '%s' does not name %s and %s", b->what, msg ? msg : "(null)", b->msg_node, b->msg_prop);
	printf("refusals: %s: %s\n", b->what, msg);

	/* The same through the directory reader. */
	char *tmp = make_tmpdir(), *dir = path_join(tmp, "imc-counters");
	dtb_node_to_dir(blob, 0, dir);
	heritage_clear_error();
	rc = imc_catalog_from_dir(dir, &cat);
	msg = heritage_last_error();
	ck_assert_msg(rc == -EINVAL, "%s (directory): %d, want -EINVAL (%s)", b->what, rc, msg ? msg : "");
	ck_assert_msg(msg && strstr(msg, b->msg_node) && strstr(msg, b->msg_prop),
		      "%s (directory): message '%s' does not name %s and %s", b->what, msg ? msg : "(null)", b->msg_node,
		      b->msg_prop);
	free(dir);
	rm_tree(tmp);
	free(blob);
	free(base);
}
END_TEST

/* What Linux accepts, the reader accepts (imc-pmu.c reads the first cell
 * of reg with of_property_read_u32; it checks an event's offset against
 * the unit's size only when the event is opened, nest_imc_event_init, and
 * trace_cycles sits at 0x10200000 past trace's 0x40000; OPAL trees may carry
 * linux,phandle).  An absent events-prefix is "" (imc_catalog.h). */
START_TEST(accepted_as_linux_does)
{
	size_t len;
	void *base = read_whole(FIXTURES "inherit.dtb", &len);
	size_t size = len + 256;
	void *blob = malloc(size);
	ck_assert_int_eq(fdt_open_into(base, blob, (int)size), 0);
	/* Offsets move with every edit: looked up each time. */
#define AT(path) fdt_path_offset(blob, path)
	ck_assert_int_eq(fdt_setprop_u32(blob, AT("/list-events/event@0"), "reg", 0x20), 0);
	uint32_t far[2] = { cpu_to_fdt32(0x4000), cpu_to_fdt32(0x8) };
	ck_assert_int_eq(fdt_setprop(blob, AT("/list-events/event@18"), "reg", far, sizeof far), 0);
	uint32_t ph = fdt_get_phandle(blob, AT("/list-events"));
	ck_assert_uint_ne(ph, 0);
	ck_assert_int_eq(fdt_delprop(blob, AT("/list-events"), "phandle"), 0);
	ck_assert_int_eq(fdt_setprop_u32(blob, AT("/list-events"), "linux,phandle", ph), 0);
	ck_assert_int_eq(fdt_delprop(blob, AT("/none@200"), "events-prefix"), 0);
	/* The 40-byte control block ending at the unit's size. */
	ck_assert_int_eq(fdt_setprop_u32(blob, AT("/both@100"), "cb_offset", 0x40000 - 40), 0);
#undef AT
	ck_assert_int_eq(fdt_pack(blob), 0);

	struct imc_catalog *cat = NULL;
	int rc = imc_catalog_from_dtb(blob, fdt_totalsize(blob), "linux-like.dtb", &cat);
	ck_assert_msg(rc == 0, "%d %s", rc, heritage_last_error());
	static const struct want w[] = {
		{ "nest_both_imc::B_PLAIN", 0x100 + 0x20, "256", "B" },
		{ "nest_both_imc::B_OWN_SCALE", 0x108, "2", "B" },
		{ "nest_both_imc::B_OWN_UNIT", 0x110, "256", "MiB" },
		{ "nest_both_imc::B_OWN_BOTH", 0x100 + 0x4000, "0.5", "ns" },
		{ "none_imc::PLAIN", 0x200 + 0x20, NULL, NULL },
		{ "none_imc::OWN_SCALE", 0x208, "2", NULL },
		{ "none_imc::OWN_UNIT", 0x210, NULL, "MiB" },
		{ "none_imc::OWN_BOTH", 0x200 + 0x4000, "0.5", "ns" }, /* past none's size 0x2000 */
		{ "unitonly_imc::PLAIN", 0x300 + 0x20, NULL, "cycles" },
		{ "unitonly_imc::OWN_SCALE", 0x308, "2", "cycles" },
		{ "unitonly_imc::OWN_UNIT", 0x310, NULL, "MiB" },
		{ "unitonly_imc::OWN_BOTH", 0x300 + 0x4000, "0.5", "ns" },
	};
	ck_entries(cat, w, sizeof w / sizeof w[0]);
	ck_assert_str_eq(cat->units[1].prefix, "");
	ck_assert_uint_eq(cat->units[0].cb_offset, 0x40000 - 40);
	imc_catalog_free(cat);
	free(blob);
	free(base);
}
END_TEST

START_TEST(refusals_of_the_blob)
{
	size_t len;
	unsigned char *base = read_whole(FIXTURES "inherit.dtb", &len);
	struct imc_catalog *cat = NULL;
	unsigned char *blob = malloc(len);
	memcpy(blob, base, len);

	/* Bad magic. */
	blob[0] ^= 0xff;
	ck_assert_int_eq(imc_catalog_from_dtb(blob, len, "bad-magic.dtb", &cat), -EINVAL);
	ck_assert_ptr_null(cat);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "bad-magic.dtb"));
	memcpy(blob, base, len);

	/* Truncated: shorter than its header says, than a header, empty. */
	size_t cut[] = { len - 1, len / 2, 39, 8, 0 };
	for (unsigned i = 0; i < sizeof cut / sizeof cut[0]; i++) {
		ck_assert_msg(imc_catalog_from_dtb(blob, cut[i], "truncated.dtb", &cat) == -EINVAL,
			      "blob cut to %zu bytes accepted", cut[i]);
		ck_assert_ptr_null(cat);
	}
	/* Versions before 16, which libfdt's header check takes: libfdt
	 * 1.6.1's fdt_check_full dereferences NULL walking this catalog so
	 * marked (fuzz_imc_dtb's find; the reader refuses them first). */
	static const uint32_t old[][2] = { { 15, 2 }, { 13, 0 }, { 2, 2 } };
	for (unsigned i = 0; i < sizeof old / sizeof old[0]; i++) {
		char want[64];
		memcpy(blob, base, len);
		((fdt32_t *)blob)[5] = cpu_to_fdt32(old[i][0]); /* version */
		((fdt32_t *)blob)[6] = cpu_to_fdt32(old[i][1]); /* last_comp_version */
		ck_assert_int_eq(fdt_check_header(blob), 0);
		ck_assert_int_eq(imc_catalog_from_dtb(blob, len, "old.dtb", &cat), -EINVAL);
		ck_assert_ptr_null(cat);
		snprintf(want, sizeof want, "version %u: this reader takes 16 and 17", old[i][0]);
		ck_assert_msg(strstr(heritage_last_error(), want), "%s", heritage_last_error());
	}
	memcpy(blob, base, len);

	/* A file that is not a DTB at all, and a truncated file. */
	char *tmp = make_tmpdir(), *p = path_join(tmp, "text.dtb"), *q = path_join(tmp, "cut.dtb");
	write_whole(p, "/dts-v1/;\n/ { };\n", 17);
	ck_assert_int_eq(imc_catalog_from_path(p, &cat), -EINVAL);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), p));
	write_whole(q, base, len - 4);
	ck_assert_int_eq(imc_catalog_from_path(q, &cat), -EINVAL);
	free(p);
	free(q);
	rm_tree(tmp);
	free(blob);
	free(base);
}
END_TEST

/* The directory reader on a tree that lost a file. */
START_TEST(refusals_of_the_directory)
{
	size_t len;
	void *base = read_whole(FIXTURES "inherit.dtb", &len);
	struct imc_catalog *cat = NULL;
	char *tmp = make_tmpdir(), *dir = path_join(tmp, "imc-counters");
	dtb_node_to_dir(base, 0, dir);
	char *ph = path_join(dir, "list-events/phandle");
	ck_assert_int_eq(unlink(ph), 0);
	heritage_clear_error();
	ck_assert_int_eq(imc_catalog_from_dir(dir, &cat), -EINVAL);
	ck_assert_ptr_null(cat);
	const char *msg = heritage_last_error();
	ck_assert_msg(msg && strstr(msg, "both@100") && strstr(msg, "events"), "message '%s'", msg ? msg : "(null)");
	printf("refusals_of_the_directory: %s\n", msg);
	free(ph);
	free(dir);
	rm_tree(tmp);
	free(base);
}
END_TEST

/* Never a crash: every truncation and every single-bit flip of a small
 * catalog either loads or is refused with a negative errno. */
START_TEST(no_crash_on_any_damage)
{
	size_t len;
	unsigned char *base = read_whole(FIXTURES "inherit.dtb", &len);
	unsigned char *blob = malloc(len);
	struct imc_catalog *cat;
	unsigned loaded = 0, refused = 0;
	for (size_t n = 0; n < len; n++) {
		memcpy(blob, base, len);
		cat = NULL;
		int rc = imc_catalog_from_dtb(blob, n, "cut", &cat);
		ck_assert_int_lt(rc, 0);
		EXPECT(cat == NULL, "cat not NULL");
	}
	for (size_t i = 0; i < len; i++)
		for (unsigned bit = 0; bit < 8; bit++) {
			memcpy(blob, base, len);
			blob[i] ^= (unsigned char)(1u << bit);
			cat = NULL;
			int rc = imc_catalog_from_dtb(blob, len, "flipped", &cat);
			if (rc == 0) {
				ck_assert_ptr_nonnull(cat);
				loaded++;
				imc_catalog_free(cat);
			} else {
				EXPECT(rc == -EINVAL || rc == -ENOENT || rc == -ENOMEM, "flip %zu.%u: %d", i, bit, rc);
				EXPECT(cat == NULL, "cat not NULL");
				refused++;
			}
		}
	printf("no_crash_on_any_damage: %zu truncations refused; %u flips loaded, %u refused\n", len, loaded, refused);
	free(blob);
	free(base);
}
END_TEST

/* ------------------------------------------------ PAPI_HERITAGE_IMC_CATALOG */

/* In a child (imc_catalog_get reads once per process): the catalog the
 * variable names, or the built-in one when unset; source and entries
 * checked against want (NULL: the built-in catalog's). */
static int child_get(const char *value, const char *want_source, const struct want *w, unsigned nw, int want_null)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (value)
			env_set("PAPI_HERITAGE_IMC_CATALOG", value, 1);
		else
			env_unset("PAPI_HERITAGE_IMC_CATALOG");
		char why[512] = "";
		const struct imc_catalog *cat = imc_catalog_get(why, sizeof why);
		if (want_null) {
			if (cat) {
				fprintf(stderr, "%s: loaded, should be refused\n", value);
				_exit(1);
			}
			if (!value || !strstr(why, value)) {
				fprintf(stderr, "why '%s' does not name %s\n", why, value ? value : "");
				_exit(1);
			}
			if (imc_catalog_get(NULL, 0) != NULL) {
				fprintf(stderr, "second call loaded\n");
				_exit(1);
			}
			printf("PAPI_HERITAGE_IMC_CATALOG=%s: refused: %s\n", value, why);
			fflush(stdout);
			_exit(0);
		}
		if (!cat) {
			fprintf(stderr, "%s: NULL: %s\n", value ? value : "(unset)", why);
			_exit(1);
		}
		if (strcmp(cat->source, want_source) != 0) {
			fprintf(stderr, "source '%s', want '%s'\n", cat->source, want_source);
			_exit(1);
		}
		if (w) {
			if (cat->nentries != nw) {
				fprintf(stderr, "%u entries, want %u\n", cat->nentries, nw);
				_exit(1);
			}
			/* By name: a directory's entries come in name order. */
			for (unsigned i = 0; i < nw; i++) {
				int k = imc_catalog_find(cat, w[i].name, strlen(w[i].name));
				if (k < 0 || cat->entries[k].value != w[i].value) {
					fprintf(stderr, "%s: %d\n", w[i].name, k);
					_exit(1);
				}
			}
		} else {
			struct imc_catalog *ref = NULL;
			if (imc_catalog_from_dtb(imc_builtin_dtb, imc_builtin_dtb_len, "built-in", &ref) != 0 ||
			    ref->nentries != cat->nentries) {
				fprintf(stderr, "not the built-in catalog\n");
				_exit(1);
			}
			imc_catalog_free(ref);
		}
		/* Once per process: a later change of the variable is not seen. */
		env_set("PAPI_HERITAGE_IMC_CATALOG", "/nonexistent", 1);
		if (imc_catalog_get(NULL, 0) != cat) {
			fprintf(stderr, "second call returned another catalog\n");
			_exit(1);
		}
		printf("PAPI_HERITAGE_IMC_CATALOG=%s: %s, %u entries\n", value ? value : "(unset)", cat->source,
		       cat->nentries);
		fflush(stdout);
		_exit(0);
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

START_TEST(environment_names_the_catalog)
{
	fflush(stdout);
	size_t len;
	void *blob = read_whole(FIXTURES "p10like.dtb", &len);
	char *tmp = make_tmpdir(), *dtb = path_join(tmp, "p10like.dtb"), *root = path_join(tmp, "device-tree");
	char *node = path_join(root, "imc-counters"), *none = path_join(tmp, "none"), *bad = path_join(tmp, "bad.dtb");
	write_whole(dtb, blob, len);
	dtb_node_to_dir(blob, 0, root);
	write_whole(bad, "not a device tree", 17);

	ck_assert_int_eq(child_get(NULL, "built-in", NULL, 0, 0), 0);
	ck_assert_int_eq(child_get("", "built-in", NULL, 0, 0), 0);
	ck_assert_int_eq(child_get(dtb, dtb, p10like, NP10, 0), 0);
	ck_assert_int_eq(child_get(root, root, p10like, NP10, 0), 0);
	ck_assert_int_eq(child_get(node, node, p10like, NP10, 0), 0);
	ck_assert_int_eq(child_get(none, NULL, NULL, 0, 1), 0);
	ck_assert_int_eq(child_get(bad, NULL, NULL, 0, 1), 0);

	free(dtb);
	free(root);
	free(node);
	free(none);
	free(bad);
	rm_tree(tmp);
	free(blob);
}
END_TEST

/* The events as PAPI lists them (imc_events: the parser's table, code
 * order) of the catalog PAPI_HERITAGE_IMC_CATALOG=value names, written by a
 * child (the catalog is read once per process) into out: "name value\n"
 * for code 0, 1, ... */
static void child_listing(const char *value, const char *out)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		env_set("PAPI_HERITAGE_IMC_CATALOG", value, 1);
		FILE *f = fopen(out, "w");
		char why[256] = "", name[256];
		if (!f || imc_events_init(why, sizeof why) != 0) {
			fprintf(stderr, "%s: %s\n", value, why);
			_exit(1);
		}
		for (unsigned code = 0; code < imc_nevents(); code++) {
			if (imc_event_format(code, name, sizeof name) != 0)
				_exit(1);
			fprintf(f, "%s 0x%llx\n", name, (unsigned long long)imc_event_entry(code)->value);
		}
		_exit(fclose(f) == 0 ? 0 : 1);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A DTB and the directory of the same catalog list the same events under
 * the same codes, in the same order, though the directory reader meets
 * the nodes in another order than the DTB keeps. */
START_TEST(dtb_and_directory_list_alike)
{
	char *tmp = make_tmpdir(), *dtb = path_join(tmp, "p9.dtb"), *dir = path_join(tmp, "imc-counters");
	char *a = path_join(tmp, "dtb.txt"), *b = path_join(tmp, "dir.txt");
	write_whole(dtb, imc_builtin_dtb, imc_builtin_dtb_len);
	dtb_node_to_dir(imc_builtin_dtb, 0, dir);
	child_listing(dtb, a);
	child_listing(dir, b);
	size_t la, lb;
	char *ta = read_whole(a, &la), *tb = read_whole(b, &lb);
	ck_assert_uint_gt(la, 0);
	ck_assert_msg(la == lb && memcmp(ta, tb, la) == 0, "the DTB and the directory list differently");
	/* 621 lines, the count of the facts (builtin_is_the_facts). */
	unsigned lines = 0;
	for (size_t i = 0; i < la; i++)
		lines += ta[i] == '\n';
	ck_assert_uint_eq(lines, 621);
	free(ta);
	free(tb);
	free(a);
	free(b);
	free(dtb);
	free(dir);
	rm_tree(tmp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("imc_catalog");
	TCase *tc = tcase_create("catalog");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, builtin_is_the_facts);
	tcase_add_test(tc, builtin_documented_values);
	tcase_add_test(tc, dtb_and_directory_agree);
	tcase_add_test(tc, scale_and_unit_inheritance);
	tcase_add_test(tc, another_catalog);
	tcase_add_test(tc, rest_of_the_tree_is_not_read_dtb);
	tcase_add_test(tc, rest_of_the_tree_is_not_read_dir);
	tcase_add_loop_test(tc, refusals, 0, sizeof broken / sizeof broken[0]);
	tcase_add_test(tc, accepted_as_linux_does);
	tcase_add_test(tc, refusals_of_the_blob);
	tcase_add_test(tc, refusals_of_the_directory);
	tcase_add_test(tc, no_crash_on_any_damage);
	tcase_add_test(tc, environment_names_the_catalog);
	tcase_add_test(tc, dtb_and_directory_list_alike);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
