/*
 * The writer half of the profile database (pm_db.h has the format).
 *
 * Samples are folded as they come into one hash table keyed by (pc, class):
 * a run of minutes at the soft backend's 1 ms makes 10^5 samples per thread,
 * but only as many entries as distinct (pc, class) pairs.  PCs are
 * attributed to images only at close, through the maps of the process as it
 * is then (a library dlclose'd before the end is no longer there: its PCs go
 * to [unknown]).
 *
 * The epoch appears whole or not at all: the files are written into a hidden
 * <db>/.<epoch>.<pid>.tmpXXXXXX/ made at open (so an unwritable DB is refused
 * before the run, not after it), and renamed onto <db>/<epoch> at close.
 */
#include "profileme/pm_db.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "common/heritage_error.h"

#define CLASS_MASK (PM_BITS_MASK | PM_TRAPS_MASK)

struct agg {
	uint64_t pc;
	uint32_t value, known; /* the class: known bit/trap fields and their values */
	uint64_t n;
	uint64_t sum[PM_NCOUNTERS], cnt[PM_NCOUNTERS];
	int used;
};

struct pm_db_writer {
	pthread_mutex_t lock;
	char *db, *tmpdir, *backend, *unit;
	char epoch[32];
	uint64_t period;
	uint32_t fields;
	struct agg *tab;
	size_t cap, used;
	int oom; /* a sample could not be kept: said at close */
};

/* ------------------------------------------------------------ samples */

static size_t agg_hash(uint64_t pc, uint32_t value, uint32_t known, size_t cap)
{
	uint64_t h = pc * 0x9e3779b97f4a7c15ull ^ ((uint64_t)value << 32 | known) * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 29;
	return (size_t)h & (cap - 1);
}

static struct agg *agg_slot(struct agg *tab, size_t cap, uint64_t pc, uint32_t value, uint32_t known)
{
	size_t i = agg_hash(pc, value, known, cap);
	while (tab[i].used && !(tab[i].pc == pc && tab[i].value == value && tab[i].known == known))
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static int agg_grow(struct pm_db_writer *w)
{
	size_t cap = w->cap ? w->cap * 2 : 1024;
	struct agg *tab = calloc(cap, sizeof *tab);
	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < w->cap; i++)
		if (w->tab[i].used)
			*agg_slot(tab, cap, w->tab[i].pc, w->tab[i].value, w->tab[i].known) = w->tab[i];
	free(w->tab);
	w->tab = tab;
	w->cap = cap;
	return 0;
}

void pm_db_writer_add(struct pm_db_writer *w, const struct pm_sample *s)
{
	uint32_t known = s->known & CLASS_MASK, value = s->value & known;
	pthread_mutex_lock(&w->lock);
	if ((w->used + 1) * 4 > w->cap * 3 && agg_grow(w)) {
		w->oom = 1;
		pthread_mutex_unlock(&w->lock);
		return;
	}
	struct agg *a = agg_slot(w->tab, w->cap, s->pc, value, known);
	if (!a->used) {
		*a = (struct agg){ .pc = s->pc, .value = value, .known = known, .used = 1 };
		w->used++;
	}
	a->n++;
	for (int c = 0; c < PM_NCOUNTERS; c++)
		if (s->known & PM_FIELD_BIT(PM_COUNTER_FIRST + c)) {
			a->sum[c] += s->counter[c];
			a->cnt[c]++;
		}
	pthread_mutex_unlock(&w->lock);
}

/* ------------------------------------------------------------ open */

static int mkdir_p(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		int r = mkdir(path, 0777);
		*p = '/';
		if (r && errno != EEXIST)
			return -errno;
	}
	if (mkdir(path, 0777) && errno != EEXIST)
		return -errno;
	return 0;
}

int pm_db_writer_open(struct pm_db_writer **out, const char *db, const char *backend, const char *unit,
                      uint64_t period, uint32_t fields, char *why, size_t len)
{
	*out = NULL;
	struct pm_db_writer *w = calloc(1, sizeof *w);
	if (!w || !(w->db = strdup(db)) || !(w->backend = strdup(backend)) || !(w->unit = strdup(unit))) {
		snprintf(why, len, "profileme: out of memory opening the database %s", db);
		goto fail_nomem;
	}
	pthread_mutex_init(&w->lock, NULL);
	w->period = period;
	w->fields = fields;
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(w->epoch, sizeof w->epoch, "%Y%m%d%H%M%S", &tm);
	char *d = strdup(db);
	int err = d ? mkdir_p(d) : -ENOMEM;
	free(d);
	if (err) {
		snprintf(why, len, "profileme: cannot create the database directory %s: %s", db, strerror(-err));
		goto fail;
	}
	/* The pid names the run's leftovers (profileme-run removes them when
	 * the program is killed); XXXXXX, the writers of one process. */
	if (asprintf(&w->tmpdir, "%s/.%s.%ld.tmpXXXXXX", db, w->epoch, (long)getpid()) < 0) {
		w->tmpdir = NULL;
		snprintf(why, len, "profileme: out of memory opening the database %s", db);
		goto fail_nomem;
	}
	if (!mkdtemp(w->tmpdir)) {
		err = -errno;
		snprintf(why, len, "profileme: cannot write in the database directory %s: %s", db, strerror(errno));
		goto fail;
	}
	/* mkdtemp made it 0700: the epoch is as readable as a mkdir'ed one. */
	mode_t um = umask(022);
	umask(um);
	chmod(w->tmpdir, 0777 & ~um);
	if ((err = agg_grow(w))) {
		rmdir(w->tmpdir);
		snprintf(why, len, "profileme: out of memory opening the database %s", db);
		goto fail;
	}
	*out = w;
	return 0;
fail_nomem:
	err = -ENOMEM;
fail:
	if (w) {
		free(w->db);
		free(w->backend);
		free(w->unit);
		free(w->tmpdir);
		free(w);
	}
	return heritage_fail_msg(err, why);
}

/* ------------------------------------------------------------ images */

struct mapping {
	uint64_t start, end, offset;
	char *path; /* as in maps; "" for anonymous */
};

struct image {
	char *path;      /* a file's path, or the pseudo-image's name ("[vdso]", "[anon]", "[unknown]") */
	int file;        /* path is a file */
	int elf;         /* the file's program headers were read: vaddrs are ELF vaddrs */
	struct {
		uint64_t offset, filesz, vaddr;
	} load[16];      /* the file's PT_LOAD segments */
	unsigned nload;
	uint64_t text_start, text_end;
	struct ent {
		uint64_t vaddr;
		struct agg *a;
	} *e;
	size_t ne, cap;
};

static void free_maps(struct mapping *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(m[i].path);
	free(m);
}

/* The executable mappings of pid, sorted by start (the kernel lists them so). */
static int read_maps(int pid, struct mapping **out, size_t *nout, char *why, size_t len)
{
	char name[64];
	if (pid)
		snprintf(name, sizeof name, "/proc/%d/maps", pid);
	else
		snprintf(name, sizeof name, "/proc/self/maps");
	FILE *f = fopen(name, "re");
	if (!f) {
		int err = -errno;
		snprintf(why, len, "profileme: cannot read %s to attribute PCs to images: %s", name, strerror(errno));
		return err;
	}
	struct mapping *m = NULL;
	size_t n = 0, cap = 0;
	char *line = NULL;
	size_t lcap = 0;
	while (getline(&line, &lcap, f) > 0) {
		unsigned long long start, end, off;
		char perm[8];
		int pos = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s%n", &start, &end, perm, &off, &pos) < 4 || !pos)
			continue;
		if (perm[2] != 'x')
			continue;
		char *p = line + pos;
		while (*p == ' ' || *p == '\t')
			p++;
		p[strcspn(p, "\n")] = 0;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			struct mapping *nm = realloc(m, cap * sizeof *m);
			if (!nm)
				goto nomem;
			m = nm;
		}
		m[n] = (struct mapping){ .start = start, .end = end, .offset = off, .path = strdup(p) };
		if (!m[n].path)
			goto nomem;
		n++;
	}
	free(line);
	fclose(f);
	*out = m;
	*nout = n;
	return 0;
nomem:
	free(line);
	fclose(f);
	free_maps(m, n);
	snprintf(why, len, "profileme: out of memory reading %s", name);
	return -ENOMEM;
}

static const struct mapping *find_mapping(const struct mapping *m, size_t n, uint64_t pc)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (pc < m[mid].start)
			hi = mid;
		else if (pc >= m[mid].end)
			lo = mid + 1;
		else
			return &m[mid];
	}
	return NULL;
}

/* The PT_LOAD segments and the executable span of an ELF file (64-bit,
 * native byte order: what runs here).  0, or -1 when it is not one. */
static int read_elf(struct image *im)
{
	int fd = open(im->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	Elf64_Ehdr eh;
	int ok = pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	         eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr);
	im->nload = 0;
	im->text_start = UINT64_MAX;
	im->text_end = 0;
	for (unsigned i = 0; ok && i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph) {
			ok = 0;
			break;
		}
		if (ph.p_type != PT_LOAD || im->nload == sizeof im->load / sizeof im->load[0])
			continue;
		im->load[im->nload].offset = ph.p_offset;
		im->load[im->nload].filesz = ph.p_filesz;
		im->load[im->nload].vaddr = ph.p_vaddr;
		im->nload++;
		if (ph.p_flags & PF_X) {
			if (ph.p_vaddr < im->text_start)
				im->text_start = ph.p_vaddr;
			if (ph.p_vaddr + ph.p_memsz > im->text_end)
				im->text_end = ph.p_vaddr + ph.p_memsz;
		}
	}
	close(fd);
	if (!ok || !im->nload)
		return -1;
	if (im->text_start == UINT64_MAX)
		im->text_start = im->text_end = 0;
	return 0;
}

/* The ELF vaddr of a byte at file offset off: the PT_LOAD segment that maps
 * it from the file (the kernel maps segments page-aligned, so a mapping's
 * offset is the segment's rounded down; the byte's own offset is exact). */
static uint64_t file_to_vaddr(const struct image *im, uint64_t off)
{
	for (unsigned i = 0; i < im->nload; i++)
		if (off >= im->load[i].offset && off < im->load[i].offset + im->load[i].filesz)
			return off - im->load[i].offset + im->load[i].vaddr;
	return off; /* in no segment's file bytes: keep the file offset */
}

static struct image *image_get(struct image **ims, size_t *n, const char *path, int file)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*ims)[i].path, path))
			return &(*ims)[i];
	struct image *ni = realloc(*ims, (*n + 1) * sizeof **ims);
	if (!ni)
		return NULL;
	*ims = ni;
	struct image *im = &ni[*n];
	memset(im, 0, sizeof *im);
	if (!(im->path = strdup(path)))
		return NULL;
	im->file = file;
	im->elf = file && !read_elf(im);
	(*n)++;
	return im;
}

static int image_push(struct image *im, uint64_t vaddr, struct agg *a)
{
	if (im->ne == im->cap) {
		size_t cap = im->cap ? im->cap * 2 : 256;
		struct ent *e = realloc(im->e, cap * sizeof *e);
		if (!e)
			return -ENOMEM;
		im->e = e;
		im->cap = cap;
	}
	im->e[im->ne++] = (struct ent){ vaddr, a };
	return 0;
}

/* ------------------------------------------------------------ writing */

static void platform(char *buf, size_t len)
{
	struct utsname u;
	if (uname(&u))
		snprintf(u.machine, sizeof u.machine, "unknown");
	char model[256] = "", *line = NULL;
	size_t lcap = 0;
	int family = -1, mod = -1, have = 0;
	FILE *f = fopen("/proc/cpuinfo", "re");
	while (f && getline(&line, &lcap, f) > 0 && have < 3) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		char *v = colon + 1 + strspn(colon + 1, " \t");
		v[strcspn(v, "\n")] = 0;
		if (!strncmp(line, "model name", 10) && !*model) {
			snprintf(model, sizeof model, "%s", v);
			have++;
		} else if (!strncmp(line, "cpu family", 10) && family < 0) {
			family = atoi(v);
			have++;
		} else if (!strncmp(line, "model\t", 6) && mod < 0) {
			mod = atoi(v);
			have++;
		}
	}
	free(line);
	if (f)
		fclose(f);
	if (family >= 0 && mod >= 0)
		snprintf(buf, len, "%s %s (family %d model %d)", u.machine, *model ? model : "unknown cpu", family, mod);
	else
		snprintf(buf, len, "%s %s", u.machine, *model ? model : "unknown cpu");
}

static int ent_cmp(const void *x, const void *y)
{
	const struct ent *a = x, *b = y;
	return a->vaddr < b->vaddr ? -1 : a->vaddr > b->vaddr;
}

struct cls {
	uint32_t value, known;
	uint64_t n, sum[PM_NCOUNTERS], cnt[PM_NCOUNTERS];
	char text[512];
};

static int cls_cmp(const void *x, const void *y)
{
	const struct cls *a = x, *b = y;
	if (a->n != b->n)
		return a->n > b->n ? -1 : 1;
	return strcmp(a->text, b->text);
}

struct col {
	unsigned cls;
	int counter; /* -1, or the counter's index from PM_COUNTER_FIRST */
};

/* One image's file.  0 or -errno with why. */
static int write_image(const struct pm_db_writer *w, const char *epoch, const char *plat, struct image *im, char *why,
                       size_t len)
{
	char name[PATH_MAX], id[64] = "-";
	const char *base = strrchr(im->path, '/');
	base = base ? base + 1 : im->path;
	struct stat st;
	if (im->file && !stat(im->path, &st)) {
		struct tm tm;
		gmtime_r(&st.st_mtime, &tm);
		size_t k = strftime(id, sizeof id, "%Y%m%d%H%M%S", &tm);
		snprintf(id + k, sizeof id - k, "+%08llx", (unsigned long long)st.st_size);
	}
	if (im->file)
		snprintf(name, sizeof name, "%s/%s_%s", w->tmpdir, base, id);
	else
		snprintf(name, sizeof name, "%s/%s", w->tmpdir, im->path);

	/* The classes of this image, most samples first. */
	struct cls *cl = NULL;
	size_t ncl = 0;
	for (size_t i = 0; i < im->ne; i++) {
		const struct agg *a = im->e[i].a;
		size_t k = 0;
		while (k < ncl && !(cl[k].value == a->value && cl[k].known == a->known))
			k++;
		if (k == ncl) {
			struct cls *n = realloc(cl, (ncl + 1) * sizeof *cl);
			if (!n) {
				free(cl);
				snprintf(why, len, "profileme: out of memory writing %s", name);
				return -ENOMEM;
			}
			cl = n;
			memset(&cl[ncl], 0, sizeof *cl);
			cl[ncl].value = a->value;
			cl[ncl].known = a->known;
			struct pm_value v = { .set = { .must1 = a->value, .must0 = a->known & ~a->value }, .counter = -1 };
			pm_value_format(&v, cl[ncl].text, sizeof cl[ncl].text);
			ncl++;
		}
		cl[k].n += a->n;
		for (int c = 0; c < PM_NCOUNTERS; c++) {
			cl[k].sum[c] += a->sum[c];
			cl[k].cnt[c] += a->cnt[c];
		}
	}
	qsort(cl, ncl, sizeof *cl, cls_cmp);
	struct col *col = calloc(ncl * (1 + PM_NCOUNTERS), sizeof *col);
	unsigned ncol = 0;
	if (!col) {
		free(cl);
		snprintf(why, len, "profileme: out of memory writing %s", name);
		return -ENOMEM;
	}
	for (unsigned k = 0; k < ncl; k++) {
		col[ncol++] = (struct col){ k, -1 };
		for (int c = 0; c < PM_NCOUNTERS; c++)
			if (cl[k].cnt[c])
				col[ncol++] = (struct col){ k, c };
	}

	qsort(im->e, im->ne, sizeof *im->e, ent_cmp);
	if (!im->elf) {
		/* text_start/size of a pseudo-image or a file we could not read:
		 * the span of its samples. */
		im->text_start = im->ne ? im->e[0].vaddr : 0;
		im->text_end = im->ne ? im->e[im->ne - 1].vaddr + 1 : 0;
	}

	int err = 0;
	/* Two files of one basename, mtime and size (copies in two
	 * directories) must not share a file: _2, _3... for the later ones
	 * (the readers find an image by its path header). */
	FILE *f = NULL;
	size_t nl = strlen(name);
	for (int k = 2; !f; k++) {
		int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd >= 0)
			f = fdopen(fd, "w");
		if (fd >= 0 && !f)
			close(fd);
		if (f || errno != EEXIST || k > 999)
			break;
		snprintf(name + nl, sizeof name - nl, "_%d", k);
	}
	if (!f) {
		err = -errno;
		snprintf(why, len, "profileme: cannot write %s: %s", name, strerror(errno));
		goto out;
	}
	fprintf(f, "name        %s\n", base);
	fprintf(f, "image       %s\n", id);
	fprintf(f, "label       profileme\n");
	fprintf(f, "path        %s\n", im->path);
	fprintf(f, "epoch       %s\n", epoch);
	fprintf(f, "platform    %s\n", plat);
	fprintf(f, "text_start  0x%" PRIx64 "\n", im->text_start);
	fprintf(f, "text_size   0x%" PRIx64 "\n", im->text_end - im->text_start);
	fprintf(f, "backend     %s\n", w->backend);
	fprintf(f, "period      %" PRIu64 " %s\n", w->period, w->unit);
	fprintf(f, "fields      ");
	for (int fld = 0, first = 1; fld < PM_NFIELDS; fld++)
		if (w->fields & PM_FIELD_BIT(fld)) {
			fprintf(f, "%s%s", first ? "" : ",", pm_fields[fld].name);
			first = 0;
		}
	fprintf(f, "\n");
	for (unsigned c = 0; c < ncol; c++) {
		const struct cls *k = &cl[col[c].cls];
		if (col[c].counter < 0)
			fprintf(f, "event %" PRIu64 " %s:%" PRIu64 ":%" PRIu64 "\n", k->n, k->text, w->period, k->n);
		else
			fprintf(f, "event %" PRIu64 " %s:%s:%" PRIu64 ":%" PRIu64 "\n", k->sum[col[c].counter], k->text,
			        pm_fields[PM_COUNTER_FIRST + col[c].counter].name, w->period, k->cnt[col[c].counter]);
	}
	uint64_t *row = calloc(ncol ? ncol : 1, sizeof *row);
	if (!row) {
		err = -ENOMEM;
		snprintf(why, len, "profileme: out of memory writing %s", name);
		fclose(f);
		goto out;
	}
	for (size_t i = 0; i < im->ne;) {
		uint64_t va = im->e[i].vaddr;
		memset(row, 0, ncol * sizeof *row);
		for (; i < im->ne && im->e[i].vaddr == va; i++) {
			const struct agg *a = im->e[i].a;
			for (unsigned c = 0; c < ncol; c++) {
				const struct cls *k = &cl[col[c].cls];
				if (k->value != a->value || k->known != a->known)
					continue;
				row[c] += col[c].counter < 0 ? a->n : a->sum[col[c].counter];
			}
		}
		fprintf(f, "0x%" PRIx64, va);
		for (unsigned c = 0; c < ncol; c++)
			fprintf(f, " %" PRIu64, row[c]);
		fprintf(f, "\n");
	}
	free(row);
	if (ferror(f) | fclose(f)) {
		err = -EIO;
		snprintf(why, len, "profileme: error writing %s", name);
	}
out:
	free(col);
	free(cl);
	return err;
}

static void remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *de;
		char p[PATH_MAX];
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
				snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
				unlink(p);
			}
		closedir(d);
	}
	rmdir(dir);
}

static void writer_free(struct pm_db_writer *w)
{
	pthread_mutex_destroy(&w->lock);
	free(w->tab);
	free(w->db);
	free(w->tmpdir);
	free(w->backend);
	free(w->unit);
	free(w);
}

void pm_db_writer_discard(struct pm_db_writer *w)
{
	if (!w)
		return;
	remove_tree(w->tmpdir);
	writer_free(w);
}

int pm_db_writer_close(struct pm_db_writer *w, int pid, char *why, size_t len)
{
	return pm_db_writer_finish(w, pid, NULL, 0, why, len);
}

int pm_db_writer_finish(struct pm_db_writer *w, int pid, char *dir, size_t dlen, char *why, size_t len)
{
	struct mapping *maps = NULL;
	size_t nmaps = 0, nims = 0;
	struct image *ims = NULL;
	char epoch[64], final[PATH_MAX], plat[512];
	int err = 0;
	pthread_mutex_lock(&w->lock);
	if (w->oom) {
		err = -ENOMEM;
		snprintf(why, len, "profileme: out of memory keeping the samples: no profile written");
		goto out;
	}
	if ((err = read_maps(pid, &maps, &nmaps, why, len)))
		goto out;
	for (size_t i = 0; i < w->cap; i++) {
		struct agg *a = &w->tab[i];
		if (!a->used)
			continue;
		const struct mapping *m = find_mapping(maps, nmaps, a->pc);
		struct image *im;
		uint64_t va;
		if (m && m->path[0] == '/') {
			im = image_get(&ims, &nims, m->path, 1);
			va = a->pc - m->start + m->offset;
			if (im && im->elf)
				va = file_to_vaddr(im, va);
		} else if (m && !strcmp(m->path, "[vdso]")) {
			/* The vDSO is an ELF image linked at 0 (its file offsets
			 * are its vaddrs): the offset in the mapping. */
			im = image_get(&ims, &nims, "[vdso]", 0);
			va = a->pc - m->start;
		} else if (m && m->path[0] == '[') {
			im = image_get(&ims, &nims, m->path, 0);
			va = a->pc;
		} else {
			/* Anonymous executable memory (JIT code, trampolines) keeps
			 * its address; a PC in no executable mapping any more (code
			 * unmapped before the end) goes to [unknown]. */
			im = image_get(&ims, &nims, m ? "[anon]" : "[unknown]", 0);
			va = a->pc;
		}
		if (!im || image_push(im, va, a)) {
			err = -ENOMEM;
			snprintf(why, len, "profileme: out of memory attributing samples to images");
			goto out;
		}
	}
	/* The epoch's name: its start time, with -1, -2... when a run of the
	 * same second took it (the readers take the greatest -N of a second
	 * as the latest).  The empty directory reserves the name; the rename of the
	 * full one onto it is atomic. */
	snprintf(epoch, sizeof epoch, "%s", w->epoch);
	for (int k = 1;; k++) {
		snprintf(final, sizeof final, "%s/%s", w->db, epoch);
		if (!mkdir(final, 0777))
			break;
		if (errno != EEXIST || k > 999) {
			err = -errno;
			snprintf(why, len, "profileme: cannot create the epoch %s: %s", final, strerror(errno));
			goto out;
		}
		snprintf(epoch, sizeof epoch, "%s-%d", w->epoch, k);
	}
	platform(plat, sizeof plat);
	for (size_t i = 0; i < nims && !err; i++)
		err = write_image(w, epoch, plat, &ims[i], why, len);
	if (!err && rename(w->tmpdir, final)) {
		err = -errno;
		snprintf(why, len, "profileme: cannot rename %s to %s: %s", w->tmpdir, final, strerror(errno));
	}
	if (err)
		rmdir(final);
	else if (dir)
		snprintf(dir, dlen, "%s", final);
out:
	for (size_t i = 0; i < nims; i++) {
		free(ims[i].path);
		free(ims[i].e);
	}
	free(ims);
	free_maps(maps, nmaps);
	pthread_mutex_unlock(&w->lock);
	if (err)
		remove_tree(w->tmpdir);
	writer_free(w);
	return err ? heritage_fail_msg(err, why) : 0;
}
