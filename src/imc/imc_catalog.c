/*
 * The IMC catalog reader (imc_catalog.h).  Both inputs, a DTB read with
 * libfdt and a directory shaped as Linux's /proc/device-tree, are first
 * turned into one small in-memory tree (struct dt_node), and one function,
 * catalog_from_tree(), checks it and builds the catalog: so the two give
 * identical catalogs, and every rule (and every message naming the node
 * and the property) exists once.
 *
 * The arithmetic is the kernel's (arch/powerpc/perf/imc-pmu.c,
 * imc_parse_event / update_events_in_group): event value = unit reg + event
 * reg in a u32 (struct imc_events.value is u32 there, so a sum past 2^32
 * wraps as it does in Linux); name = events-prefix + event-name; the
 * event's scale/unit, else the unit's.  Where Linux skips a bad event
 * silently, we refuse the catalog and say where: a catalog a user passes
 * in is more often a wrong file than a firmware quirk.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libfdt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "imc/imc_builtin.h"
#include "imc/imc_catalog.h"

/* Bounds that keep a hostile input from costing more than a real catalog
 * could need: the POWER9 DD2 catalog has 44 units, 479 event nodes and 621 (unit, event) pairs. */
#define DT_MAX_DEPTH 16
#define DT_MAX_NODES 65536
#define DT_MAX_PROP (1u << 20)
#define DTB_MAX_SIZE (64u << 20)

struct dt_prop {
	char *name;
	unsigned char *val;
	size_t len;
};

struct dt_node {
	char *name; /* with its @unit-address */
	char *path;
	struct dt_prop *props;
	unsigned nprops;
	struct dt_node *kids;
	unsigned nkids;
};

struct dt_build {
	const char *source;
	unsigned nodes;
};

static void dt_free(struct dt_node *n)
{
	for (unsigned i = 0; i < n->nprops; i++) {
		free(n->props[i].name);
		free(n->props[i].val);
	}
	for (unsigned i = 0; i < n->nkids; i++)
		dt_free(&n->kids[i]);
	free(n->props);
	free(n->kids);
	free(n->name);
	free(n->path);
}

static int dt_add_prop(struct dt_node *n, const char *name, const void *val, size_t len)
{
	struct dt_prop *p = realloc(n->props, (n->nprops + 1) * sizeof *p);
	if (!p)
		return -ENOMEM;
	n->props = p;
	p = &n->props[n->nprops];
	p->name = strdup(name);
	p->val = malloc(len ? len : 1);
	if (!p->name || !p->val) {
		free(p->name);
		free(p->val);
		return -ENOMEM;
	}
	if (len)
		memcpy(p->val, val, len);
	p->len = len;
	n->nprops++;
	return 0;
}

/* A new child of parent (its storage may move: use the returned pointer
 * only until the next dt_add_kid on parent). */
static struct dt_node *dt_add_kid(struct dt_build *b, struct dt_node *parent, const char *name, size_t namelen)
{
	if (++b->nodes > DT_MAX_NODES) {
		heritage_fail(-EINVAL, "imc catalog %s: more than %u nodes", b->source, DT_MAX_NODES);
		return NULL;
	}
	struct dt_node *k = realloc(parent->kids, (parent->nkids + 1) * sizeof *k);
	if (!k) {
		heritage_fail(-ENOMEM, "imc catalog %s: out of memory", b->source);
		return NULL;
	}
	parent->kids = k;
	k = &parent->kids[parent->nkids];
	memset(k, 0, sizeof *k);
	k->name = strndup(name, namelen);
	size_t plen = strlen(parent->path) + namelen + 2;
	k->path = malloc(plen);
	if (!k->name || !k->path) {
		free(k->name);
		free(k->path);
		heritage_fail(-ENOMEM, "imc catalog %s: out of memory", b->source);
		return NULL;
	}
	snprintf(k->path, plen, "%s%s%.*s", parent->path, strcmp(parent->path, "/") ? "/" : "", (int)namelen, name);
	parent->nkids++;
	return k;
}

static const struct dt_prop *dt_prop(const struct dt_node *n, const char *name)
{
	for (unsigned i = 0; i < n->nprops; i++)
		if (strcmp(n->props[i].name, name) == 0)
			return &n->props[i];
	return NULL;
}

/* A compatible property's value (NUL-separated strings) names want. */
static int compatible_lists(const unsigned char *val, size_t len, const char *want)
{
	for (size_t at = 0; at < len;) {
		size_t l = strnlen((const char *)val + at, len - at);
		if (l == strlen(want) && memcmp(val + at, want, l) == 0)
			return 1;
		at += l + 1;
	}
	return 0;
}

#define IMC_COMPATIBLE "ibm,opal-in-memory-counters"

/* ---- DTB -> tree ---- */

static int dtb_node(struct dt_build *b, const void *fdt, int off, struct dt_node *n, int depth)
{
	if (depth > DT_MAX_DEPTH)
		return heritage_fail(-EINVAL, "imc catalog %s: node %s: nested deeper than %d", b->source, n->path,
		                     DT_MAX_DEPTH);
	int poff;
	fdt_for_each_property_offset(poff, fdt, off) {
		const char *pname;
		int plen;
		const void *val = fdt_getprop_by_offset(fdt, poff, &pname, &plen);
		if (!val || !pname || plen < 0)
			return heritage_fail(-EINVAL, "imc catalog %s: node %s: unreadable property (%s)", b->source,
			                     n->path, fdt_strerror(plen < 0 ? plen : -FDT_ERR_BADSTRUCTURE));
		if (dt_add_prop(n, pname, val, (size_t)plen))
			return heritage_fail(-ENOMEM, "imc catalog %s: out of memory", b->source);
	}
	if (poff != -FDT_ERR_NOTFOUND)
		return heritage_fail(-EINVAL, "imc catalog %s: node %s: bad property list (%s)", b->source, n->path,
		                     fdt_strerror(poff));
	int sub;
	fdt_for_each_subnode(sub, fdt, off) {
		int len;
		const char *name = fdt_get_name(fdt, sub, &len);
		if (!name || len <= 0)
			return heritage_fail(-EINVAL, "imc catalog %s: node %s: child without a name", b->source, n->path);
		struct dt_node *k = dt_add_kid(b, n, name, (size_t)len);
		if (!k)
			return heritage_last_error() ? -EINVAL : -ENOMEM;
		int err = dtb_node(b, fdt, sub, k, depth + 1);
		if (err)
			return err;
	}
	if (sub != -FDT_ERR_NOTFOUND)
		return heritage_fail(-EINVAL, "imc catalog %s: node %s: bad child list (%s)", b->source, n->path,
		                     fdt_strerror(sub));
	return 0;
}

static int tree_from_dtb(const void *blob, size_t len, const char *source, struct dt_node *root)
{
	if (!blob || len < sizeof(struct fdt_header))
		return heritage_fail(-EINVAL, "imc catalog %s: %zu bytes, too short for a device-tree blob", source, len);
	int err = fdt_check_header(blob);
	if (err)
		return heritage_fail(-EINVAL, "imc catalog %s: not a device-tree blob (%s)", source, fdt_strerror(err));
	/* Versions before 16 (full paths as node names, other alignment):
	 * libfdt 1.6.1's fdt_check_full dereferences NULL on some of them
	 * (fuzz_imc_dtb's find), and no catalog is one (dtc writes 17). */
	if (fdt_version(blob) < 16)
		return heritage_fail(-EINVAL, "imc catalog %s: device-tree blob version %u: this reader takes 16 and 17",
		                     source, (unsigned)fdt_version(blob));
	if (fdt_totalsize(blob) > len)
		return heritage_fail(-EINVAL, "imc catalog %s: truncated: its header says %u bytes, the file has %zu",
		                     source, fdt_totalsize(blob), len);
	/* fdt_check_full walks the whole structure block with bounds checks,
	 * so the walk below never reads past the blob. */
	err = fdt_check_full(blob, len);
	if (err)
		return heritage_fail(-EINVAL, "imc catalog %s: malformed device-tree blob (%s)", source, fdt_strerror(err));
	/* Only the imc node's subtree: a whole machine's tree (dtc -I fs
	 * /proc/device-tree) may nest deeper or hold bigger properties
	 * elsewhere than any catalog, and none of that is ours to refuse.
	 * libfdt's walk has no recursion and fdt_check_full bounded it. */
	int imc = fdt_node_offset_by_compatible(blob, -1, IMC_COMPATIBLE);
	if (imc == -FDT_ERR_NOTFOUND)
		return heritage_fail(-ENOENT, "imc catalog %s: no node with compatible \"" IMC_COMPATIBLE "\"", source);
	if (imc < 0)
		return heritage_fail(-EINVAL, "imc catalog %s: malformed device-tree blob (%s)", source, fdt_strerror(imc));
	char path[1024];
	err = fdt_get_path(blob, imc, path, sizeof path);
	if (err)
		return heritage_fail(-EINVAL, "imc catalog %s: the imc node's path: %s", source, fdt_strerror(err));
	const char *name = fdt_get_name(blob, imc, NULL);
	memset(root, 0, sizeof *root);
	root->name = strdup(name ? name : "");
	root->path = strdup(path);
	if (!root->name || !root->path)
		return heritage_fail(-ENOMEM, "imc catalog %s: out of memory", source);
	struct dt_build b = { .source = source };
	return dtb_node(&b, blob, imc, root, 0);
}

/* ---- directory -> tree ---- */

static int read_small_file(int dirfd, const char *name, unsigned char **val, size_t *len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	size_t cap = 256, n = 0;
	unsigned char *buf = malloc(cap);
	int err = buf ? 0 : -ENOMEM;
	while (!err) {
		if (n == cap) {
			if (cap >= DT_MAX_PROP) {
				err = -EFBIG;
				break;
			}
			unsigned char *nb = realloc(buf, cap * 2);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			err = -errno;
		else if (r == 0)
			break;
		else
			n += (size_t)r;
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	*val = buf;
	*len = n;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int dir_node(struct dt_build *b, int dirfd, struct dt_node *n, int depth)
{
	if (depth > DT_MAX_DEPTH)
		return heritage_fail(-EINVAL, "imc catalog %s: node %s: nested deeper than %d", b->source, n->path,
		                     DT_MAX_DEPTH);
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return heritage_fail(-errno, "imc catalog %s: node %s: %s", b->source, n->path, strerror(errno));
	}
	/* readdir order is the filesystem's; sorted, two reads of one tree
	 * give one order (the DTB keeps its own, so entries may be ordered
	 * differently between the two inputs, never different). */
	char **names = NULL;
	size_t nn = 0;
	int err = 0;
	struct dirent *e;
	while (!err && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char **nv = realloc(names, (nn + 1) * sizeof *nv);
		if (!nv || !(nv[nn] = strdup(e->d_name))) {
			if (nv)
				names = nv;
			err = heritage_fail(-ENOMEM, "imc catalog %s: out of memory", b->source);
			break;
		}
		names = nv;
		nn++;
	}
	closedir(d);
	if (names)
		qsort(names, nn, sizeof *names, cmp_names);
	for (size_t i = 0; !err && i < nn; i++) {
		struct stat st;
		if (fstatat(dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			err = heritage_fail(-errno, "imc catalog %s: %s/%s: %s", b->source, n->path, names[i], strerror(errno));
		} else if (S_ISDIR(st.st_mode)) {
			struct dt_node *k = dt_add_kid(b, n, names[i], strlen(names[i]));
			int sub = k ? openat(dirfd, names[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW) : -1;
			if (!k)
				err = -EINVAL;
			else if (sub < 0)
				err = heritage_fail(-errno, "imc catalog %s: node %s: %s", b->source, k->path, strerror(errno));
			else {
				err = dir_node(b, sub, k, depth + 1);
				close(sub);
			}
		} else if (S_ISREG(st.st_mode)) {
			unsigned char *val = NULL;
			size_t len = 0;
			int r = read_small_file(dirfd, names[i], &val, &len);
			if (r)
				err = heritage_fail(r, "imc catalog %s: node %s: property '%s': %s", b->source, n->path,
				                    names[i], r == -EFBIG ? "larger than 1 MiB" : strerror(-r));
			else {
				if (dt_add_prop(n, names[i], val, len))
					err = heritage_fail(-ENOMEM, "imc catalog %s: out of memory", b->source);
				free(val);
			}
		}
		/* Anything else (a symlink, a socket) is not device-tree content. */
	}
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	return err;
}

/* The directory at or under dirfd (depth levels down) whose `compatible`
 * names the imc node, depth first, children in name order: an fd on it and
 * in *path its path below dirfd ("/imc-counters"; NULL for dirfd itself),
 * or -1.
 * Only `compatible` files are read on the way, and what cannot be read is
 * passed by: /proc/device-tree shows `security-*` properties with mode 0400
 * and may hold large ones; the catalog lies one level down there. */
static int dir_find_imc(int dirfd, int depth, char **path)
{
	unsigned char *val = NULL;
	size_t len = 0;
	if (read_small_file(dirfd, "compatible", &val, &len) == 0) {
		int yes = compatible_lists(val, len, IMC_COMPATIBLE);
		free(val);
		if (yes)
			return dup(dirfd);
	}
	if (depth >= DT_MAX_DEPTH)
		return -1;
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* Name order, as dir_node reads: one answer for one tree. */
	char **names = NULL;
	size_t nn = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || e->d_type == DT_REG)
			continue;
		char **nv = realloc(names, (nn + 1) * sizeof *nv);
		if (!nv)
			break;
		names = nv;
		if (!(names[nn] = strdup(e->d_name)))
			break;
		nn++;
	}
	closedir(d);
	if (names)
		qsort(names, nn, sizeof *names, cmp_names);
	int found = -1;
	for (size_t i = 0; i < nn && found < 0; i++) {
		int sub = openat(dirfd, names[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (sub < 0)
			continue;
		char *subpath = NULL;
		found = dir_find_imc(sub, depth + 1, &subpath);
		close(sub);
		if (found >= 0) {
			size_t plen = strlen(names[i]) + (subpath ? strlen(subpath) : 0) + 2;
			*path = malloc(plen);
			if (*path)
				snprintf(*path, plen, "/%s%s", names[i], subpath ? subpath : "");
			free(subpath);
			if (!*path) {
				close(found);
				found = -1;
			}
		}
	}
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	return found;
}

static int tree_from_dir(const char *dir, struct dt_node *root)
{
	int top = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (top < 0)
		return heritage_fail(errno == ENOENT ? -ENOENT : -EINVAL, "imc catalog %s: %s", dir, strerror(errno));
	char *path = NULL;
	int fd = dir_find_imc(top, 0, &path);
	close(top);
	if (fd < 0) {
		free(path);
		return heritage_fail(-ENOENT, "imc catalog %s: no node with compatible \"" IMC_COMPATIBLE "\"", dir);
	}
	/* path: the imc node's below dir ("/imc-counters"), NULL when dir is
	 * the imc node itself (its name is then dir's last component). */
	memset(root, 0, sizeof *root);
	const char *base = strrchr(path ? path : dir, '/');
	base = base && base[1] ? base + 1 : (path ? path : dir);
	root->name = strdup(base);
	root->path = path ? path : strdup("/");
	int err = root->name && root->path ? 0 : heritage_fail(-ENOMEM, "imc catalog %s: out of memory", dir);
	struct dt_build b = { .source = dir };
	if (!err)
		err = dir_node(&b, fd, root, 0);
	close(fd);
	return err;
}

/* ---- tree -> catalog ---- */

static int bad(const char *source, const struct dt_node *n, const char *prop, const char *why)
{
	return heritage_fail(-EINVAL, "imc catalog %s: node %s: property '%s': %s", source, n->path, prop, why);
}

/* A string property: one NUL-terminated string (dtc writes "a" as 'a' 0). */
static int get_string(const char *source, const struct dt_node *n, const char *prop, int required, const char **out)
{
	const struct dt_prop *p = dt_prop(n, prop);
	*out = NULL;
	if (!p)
		return required ? bad(source, n, prop, "missing") : 0;
	if (p->len == 0 || p->val[p->len - 1] != '\0' || memchr(p->val, '\0', p->len) != p->val + p->len - 1)
		return bad(source, n, prop, "not one NUL-terminated string");
	*out = (const char *)p->val;
	return 0;
}

/* The first cell of a cell-list property. */
static int get_cell(const char *source, const struct dt_node *n, const char *prop, int required, int *present,
                    uint32_t *out)
{
	const struct dt_prop *p = dt_prop(n, prop);
	if (present)
		*present = p != NULL;
	if (!p)
		return required ? bad(source, n, prop, "missing") : 0;
	if (p->len < 4 || p->len % 4)
		return bad(source, n, prop, "not a list of 32-bit cells");
	*out = (uint32_t)p->val[0] << 24 | (uint32_t)p->val[1] << 16 | (uint32_t)p->val[2] << 8 | p->val[3];
	return 0;
}

static int has_compatible(const struct dt_node *n, const char *want)
{
	const struct dt_prop *p = dt_prop(n, "compatible");
	return p && compatible_lists(p->val, p->len, want);
}

static const struct dt_node *find_imc(const struct dt_node *n, int depth)
{
	if (has_compatible(n, IMC_COMPATIBLE))
		return n;
	if (depth >= DT_MAX_DEPTH)
		return NULL;
	for (unsigned i = 0; i < n->nkids; i++) {
		const struct dt_node *f = find_imc(&n->kids[i], depth + 1);
		if (f)
			return f;
	}
	return NULL;
}

static int node_phandle(const struct dt_node *n, uint32_t *ph)
{
	const struct dt_prop *p = dt_prop(n, "phandle");
	if (!p)
		p = dt_prop(n, "linux,phandle");
	if (!p || p->len != 4)
		return 0;
	*ph = (uint32_t)p->val[0] << 24 | (uint32_t)p->val[1] << 16 | (uint32_t)p->val[2] << 8 | p->val[3];
	return *ph != 0 && *ph != 0xffffffffu;
}

static char *dupz(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int valid_type(uint32_t t)
{
	return t == IMC_TYPE_THREAD || t == IMC_TYPE_TRACE || t == IMC_TYPE_CORE || t == IMC_TYPE_NEST;
}

/* The events list behind phandle ph: found in the imc node's children
 * (where OPAL and the ima-catalog put them), read once. */
static int get_list(struct imc_catalog *cat, const char *source, const struct dt_node *imc, const struct dt_node *unit,
                    uint32_t ph, unsigned *index)
{
	for (unsigned i = 0; i < cat->nlists; i++)
		if (cat->lists[i].phandle == ph) {
			*index = i;
			return 0;
		}
	const struct dt_node *ln = NULL;
	for (unsigned i = 0; i < imc->nkids && !ln; i++) {
		uint32_t p;
		if (node_phandle(&imc->kids[i], &p) && p == ph)
			ln = &imc->kids[i];
	}
	if (!ln) {
		char why[96];
		snprintf(why, sizeof why, "points to phandle 0x%x, which no node of %s has", ph, imc->path);
		return bad(source, unit, "events", why);
	}
	struct imc_cat_list *lv = realloc(cat->lists, (cat->nlists + 1) * sizeof *lv);
	if (!lv)
		return heritage_fail(-ENOMEM, "imc catalog %s: out of memory", source);
	cat->lists = lv;
	struct imc_cat_list *l = &cat->lists[cat->nlists];
	memset(l, 0, sizeof *l);
	l->phandle = ph;
	l->path = strdup(ln->path);
	if (!l->path)
		return heritage_fail(-ENOMEM, "imc catalog %s: out of memory", source);
	cat->nlists++;
	if (ln->nkids) {
		l->events = calloc(ln->nkids, sizeof *l->events);
		if (!l->events)
			return heritage_fail(-ENOMEM, "imc catalog %s: out of memory", source);
	}
	for (unsigned i = 0; i < ln->nkids; i++) {
		const struct dt_node *en = &ln->kids[i];
		const char *name, *desc, *scale, *unit;
		uint32_t reg;
		int err = get_string(source, en, "event-name", 1, &name);
		if (!err)
			err = get_cell(source, en, "reg", 1, NULL, &reg);
		if (!err)
			err = get_string(source, en, "desc", 0, &desc);
		if (!err)
			err = get_string(source, en, "scale", 0, &scale);
		if (!err)
			err = get_string(source, en, "unit", 0, &unit);
		if (err)
			return err;
		if (!*name)
			return bad(source, en, "event-name", "empty");
		struct imc_cat_event *ev = &l->events[l->nevents++];
		ev->reg = reg;
		if (!(ev->name = strdup(name)) || (desc && !(ev->desc = strdup(desc))) ||
		    (scale && !(ev->scale = strdup(scale))) || (unit && !(ev->unit = strdup(unit))))
			return heritage_fail(-ENOMEM, "imc catalog %s: out of memory", source);
	}
	*index = cat->nlists - 1;
	return 0;
}

static int add_unit(struct imc_catalog *cat, const char *source, const struct dt_node *imc, const struct dt_node *un)
{
	const char *prefix, *scale, *unit;
	uint32_t reg, type, size, ph, offset = 0, cb = 0;
	int has_offset = 0, has_cb = 0;
	int err = get_string(source, un, "events-prefix", 0, &prefix);
	if (!err)
		err = get_cell(source, un, "reg", 1, NULL, &reg);
	if (!err)
		err = get_cell(source, un, "type", 1, NULL, &type);
	if (!err)
		err = get_cell(source, un, "size", 1, NULL, &size);
	if (!err)
		err = get_cell(source, un, "offset", 0, &has_offset, &offset);
	if (!err)
		err = get_cell(source, un, "cb_offset", 0, &has_cb, &cb);
	if (!err)
		err = get_cell(source, un, "events", 1, NULL, &ph);
	if (!err)
		err = get_string(source, un, "scale", 0, &scale);
	if (!err)
		err = get_string(source, un, "unit", 0, &unit);
	if (err)
		return err;
	if (!valid_type(type)) {
		char why[96];
		snprintf(why, sizeof why, "0x%x, not 0x1 (thread), 0x2 (trace), 0x4 (core) or 0x10 (nest)", type);
		return bad(source, un, "type", why);
	}
	if (size == 0)
		return bad(source, un, "size", "0: a unit needs counter memory");
	/* skiboot include/imc.h struct imc_chip_cb: five be64 (run status,
	 * command, collection speed, availability vector, run mode). */
	if (has_cb && (uint64_t)cb + 5 * 8 > size) {
		char why[96];
		snprintf(why, sizeof why, "0x%x: the control block does not fit in size 0x%x", cb, size);
		return bad(source, un, "cb_offset", why);
	}
	unsigned list = 0;
	err = get_list(cat, source, imc, un, ph, &list);
	if (err)
		return err;
	/* An entry's value is reg + the event's reg, a 32-bit offset (Linux
	 * sums two u32s into one): a sum past 2^32 would wrap to another
	 * counter's offset and name it (fuzz_imc_dir's find). */
	const struct imc_cat_list *l = &cat->lists[list];
	for (unsigned i = 0; i < l->nevents; i++)
		if ((uint64_t)reg + l->events[i].reg > UINT32_MAX) {
			char why[160];
			snprintf(why, sizeof why, "0x%x + event %s's reg 0x%x passes 2^32", reg, l->events[i].name,
			         l->events[i].reg);
			return bad(source, un, "reg", why);
		}

	struct imc_cat_unit *uv = realloc(cat->units, (cat->nunits + 1) * sizeof *uv);
	if (!uv)
		return heritage_fail(-ENOMEM, "imc catalog %s: out of memory", source);
	cat->units = uv;
	struct imc_cat_unit *u = &cat->units[cat->nunits];
	memset(u, 0, sizeof *u);
	cat->nunits++;
	size_t base = strcspn(un->name, "@");
	if (base == 0)
		return bad(source, un, "name", "a unit node needs a name before '@'");
	u->node = strdup(un->name);
	u->prefix = strdup(prefix ? prefix : "");
	u->scale = dupz(scale);
	u->unit = dupz(unit);
	size_t plen = base + 16;
	u->pmu = malloc(plen);
	if (!u->node || !u->prefix || (scale && !u->scale) || (unit && !u->unit) || !u->pmu)
		return heritage_fail(-ENOMEM, "imc catalog %s: out of memory", source);
	/* The kernel's PMU names (imc-pmu.c, imc_pmu_setup). */
	snprintf(u->pmu, plen, "%s%.*s_imc", type == IMC_TYPE_NEST ? "nest_" : "", (int)base, un->name);
	u->reg = reg;
	u->type = type;
	u->size = size;
	u->offset = offset;
	u->cb_offset = cb;
	u->has_offset = has_offset;
	u->has_cb_offset = has_cb;
	u->list = list;
	return 0;
}

static int build_entries(struct imc_catalog *cat, const char *source)
{
	size_t n = 0;
	for (unsigned i = 0; i < cat->nunits; i++)
		n += cat->lists[cat->units[i].list].nevents;
	if (n == 0)
		return heritage_fail(-EINVAL, "imc catalog %s: no events", source);
	cat->entries = calloc(n, sizeof *cat->entries);
	if (!cat->entries)
		return heritage_fail(-ENOMEM, "imc catalog %s: out of memory", source);
	for (unsigned i = 0; i < cat->nunits; i++) {
		const struct imc_cat_unit *u = &cat->units[i];
		const struct imc_cat_list *l = &cat->lists[u->list];
		for (unsigned j = 0; j < l->nevents; j++) {
			const struct imc_cat_event *ev = &l->events[j];
			struct imc_cat_entry *e = &cat->entries[cat->nentries];
			size_t len = strlen(u->pmu) + 2 + strlen(u->prefix) + strlen(ev->name) + 1;
			if (!(e->name = malloc(len)))
				return heritage_fail(-ENOMEM, "imc catalog %s: out of memory", source);
			cat->nentries++;
			snprintf(e->name, len, "%s::%s%s", u->pmu, u->prefix, ev->name);
			e->unit = i;
			e->event = j;
			e->value = (uint32_t)(u->reg + ev->reg);
			e->scale = ev->scale ? ev->scale : u->scale;
			e->unit_name = ev->unit ? ev->unit : u->unit;
			e->desc = ev->desc;
		}
	}
	return 0;
}

static int catalog_from_tree(const struct dt_node *root, const char *source, struct imc_catalog **out)
{
	const struct dt_node *imc = find_imc(root, 0);
	if (!imc)
		return heritage_fail(-ENOENT, "imc catalog %s: no node with compatible \"ibm,opal-in-memory-counters\"",
		                     source);
	struct imc_catalog *cat = calloc(1, sizeof *cat);
	if (!cat || !(cat->source = strdup(source))) {
		free(cat);
		return heritage_fail(-ENOMEM, "imc catalog %s: out of memory", source);
	}
	int err = 0;
	for (unsigned i = 0; !err && i < imc->nkids; i++)
		if (has_compatible(&imc->kids[i], "ibm,imc-counters"))
			err = add_unit(cat, source, imc, &imc->kids[i]);
	if (!err && cat->nunits == 0)
		err = heritage_fail(-EINVAL, "imc catalog %s: node %s has no unit (compatible \"ibm,imc-counters\")", source,
		                    imc->path);
	if (!err)
		err = build_entries(cat, source);
	if (err) {
		imc_catalog_free(cat);
		return err;
	}
	*out = cat;
	return 0;
}

int imc_catalog_from_dtb(const void *blob, size_t len, const char *source, struct imc_catalog **out)
{
	struct dt_node root = { 0 };
	int err = tree_from_dtb(blob, len, source, &root);
	if (!err)
		err = catalog_from_tree(&root, source, out);
	dt_free(&root);
	return err;
}

int imc_catalog_from_dir(const char *dir, struct imc_catalog **out)
{
	struct dt_node root = { 0 };
	int err = tree_from_dir(dir, &root);
	if (!err)
		err = catalog_from_tree(&root, dir, out);
	dt_free(&root);
	return err;
}

int imc_catalog_from_path(const char *path, struct imc_catalog **out)
{
	struct stat st;
	if (!path || !*path)
		return heritage_fail(-EINVAL, "imc catalog: no path");
	if (stat(path, &st) < 0)
		return heritage_fail(errno == ENOENT ? -ENOENT : -EINVAL, "imc catalog %s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return imc_catalog_from_dir(path, out);
	if (!S_ISREG(st.st_mode))
		return heritage_fail(-EINVAL, "imc catalog %s: neither a DTB file nor a device-tree directory", path);
	if (st.st_size > (off_t)DTB_MAX_SIZE)
		return heritage_fail(-EINVAL, "imc catalog %s: %lld bytes, larger than any catalog (%u MiB)", path,
		                     (long long)st.st_size, DTB_MAX_SIZE >> 20);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return heritage_fail(-errno, "imc catalog %s: %s", path, strerror(errno));
	size_t len = (size_t)st.st_size, got = 0;
	unsigned char *blob = malloc(len ? len : 1);
	int err = blob ? 0 : heritage_fail(-ENOMEM, "imc catalog %s: out of memory", path);
	while (!err && got < len) {
		ssize_t r = read(fd, blob + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			err = heritage_fail(-EINVAL, "imc catalog %s: read: %s", path, r < 0 ? strerror(errno) : "short");
		else
			got += (size_t)r;
	}
	close(fd);
	if (!err)
		err = imc_catalog_from_dtb(blob, len, path, out);
	free(blob);
	return err;
}

void imc_catalog_free(struct imc_catalog *cat)
{
	if (!cat)
		return;
	for (unsigned i = 0; i < cat->nentries; i++)
		free(cat->entries[i].name);
	free(cat->entries);
	for (unsigned i = 0; i < cat->nunits; i++) {
		struct imc_cat_unit *u = &cat->units[i];
		free(u->node);
		free(u->pmu);
		free(u->prefix);
		free(u->scale);
		free(u->unit);
	}
	free(cat->units);
	for (unsigned i = 0; i < cat->nlists; i++) {
		struct imc_cat_list *l = &cat->lists[i];
		for (unsigned j = 0; j < l->nevents; j++) {
			free(l->events[j].name);
			free(l->events[j].desc);
			free(l->events[j].scale);
			free(l->events[j].unit);
		}
		free(l->events);
		free(l->path);
	}
	free(cat->lists);
	free(cat->source);
	free(cat);
}

static pthread_once_t catalog_once = PTHREAD_ONCE_INIT;
static struct imc_catalog *process_catalog;
static char process_why[256];

static void load_process_catalog(void)
{
	const char *path = heritage_env("imc", "catalog");
	int err = path && *path ? imc_catalog_from_path(path, &process_catalog)
	                        : imc_catalog_from_dtb(imc_builtin_dtb, imc_builtin_dtb_len, "built-in", &process_catalog);
	if (err)
		snprintf(process_why, sizeof process_why, "%s%s",
		         path && *path ? "PAPI_HERITAGE_IMC_CATALOG: " : "", heritage_last_error());
}

const struct imc_catalog *imc_catalog_get(char *why, size_t len)
{
	pthread_once(&catalog_once, load_process_catalog);
	if (!process_catalog) {
		heritage_fail_msg(-EINVAL, process_why);
		if (why && len)
			snprintf(why, len, "%s", process_why);
	}
	return process_catalog;
}

int imc_catalog_find(const struct imc_catalog *cat, const char *name, size_t len)
{
	for (unsigned i = 0; cat && i < cat->nentries; i++)
		if (strlen(cat->entries[i].name) == len && strncasecmp(cat->entries[i].name, name, len) == 0)
			return (int)i;
	return -1;
}
