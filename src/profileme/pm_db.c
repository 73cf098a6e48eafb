/*
 * The reader half of the profile database (pm_db.h): one image file loaded
 * strictly, epochs and image files found, query values answered from the
 * classes.  The writer is pm_db_write.c.
 *
 * Strict because the tools print what the file says as measurements: a
 * line that is not in the format of pm_db.h's head comment (an unknown or
 * repeated header key, a count that is not a number, a row with the wrong
 * number of columns, PCs out of order, a total that is not its column's
 * sum) is refused with the file and line, never half-read into numbers.
 */
#include "profileme/pm_db.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/heritage_error.h"


/* A decimal count: digits only, no sign, no overflow. */
static int parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	if (n == 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* 0x<hex digits>. */
static int parse_hex(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	if (n < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || n > 2 + 16)
		return -1;
	for (size_t i = 2; i < n; i++) {
		unsigned d;
		char c = s[i];
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return -1;
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

void pm_db_free(struct pm_db_profile *p)
{
	if (!p)
		return;
	free(p->file);
	free(p->name);
	free(p->image);
	free(p->label);
	free(p->path);
	free(p->epoch);
	free(p->platform);
	free(p->backend);
	free(p->unit);
	for (unsigned c = 0; c < p->ncols; c++)
		free(p->col[c].text);
	free(p->col);
	free(p->pc);
	free(p->v);
	free(p);
}

/* The header keys, in the order pm_db.h writes them; every one is required
 * once.  period and fields are parsed further. */
enum key { K_NAME, K_IMAGE, K_LABEL, K_PATH, K_EPOCH, K_PLATFORM, K_TEXT_START, K_TEXT_SIZE, K_BACKEND, K_PERIOD, K_FIELDS, K_N };
static const char *const key_names[K_N] = {
	[K_NAME] = "name", [K_IMAGE] = "image", [K_LABEL] = "label", [K_PATH] = "path",
	[K_EPOCH] = "epoch", [K_PLATFORM] = "platform", [K_TEXT_START] = "text_start",
	[K_TEXT_SIZE] = "text_size", [K_BACKEND] = "backend", [K_PERIOD] = "period", [K_FIELDS] = "fields",
};

struct loader {
	const char *file;
	unsigned line;
	char *why;
	size_t len;
	struct pm_db_profile *p;
	unsigned seen; /* 1 << key */
	size_t rows_cap;
	uint64_t *sums; /* [ncols]: each column's sum over the rows, against its total */
};

#define BAD(L, ...) bad(L, __VA_ARGS__)
static int bad(struct loader *l, const char *fmt, ...) HERITAGE_PRINTF(2, 3);
static int bad(struct loader *l, const char *fmt, ...)
{
	char msg[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return heritage_fail_why(-EINVAL, l->why, l->len, "%s:%u: %s", l->file, l->line, msg);
}

static char *dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

static int header_fields(struct loader *l, const char *v)
{
	uint32_t m = 0;
	const char *s = v;
	for (;;) {
		const char *e = strchr(s, ',');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		int f = pm_field_from_name(s, n);
		if (f < 0)
			return BAD(l, "fields: unknown field \"%.*s\"", (int)n, s);
		if (m & PM_FIELD_BIT(f))
			return BAD(l, "fields: %s given twice", pm_fields[f].name);
		m |= PM_FIELD_BIT(f);
		if (!e)
			break;
		s = e + 1;
	}
	l->p->fields = m;
	return 0;
}

static int header(struct loader *l, const char *key, size_t klen, const char *v)
{
	struct pm_db_profile *p = l->p;
	int k;
	for (k = 0; k < K_N; k++)
		if (strlen(key_names[k]) == klen && memcmp(key_names[k], key, klen) == 0)
			break;
	if (k == K_N)
		return BAD(l, "unknown header \"%.*s\"", (int)klen, key);
	if (l->seen & (1u << k))
		return BAD(l, "header \"%s\" given twice", key_names[k]);
	if (!*v)
		return BAD(l, "header \"%s\" has no value", key_names[k]);
	l->seen |= 1u << k;
	char **str = NULL;
	switch (k) {
	case K_NAME: str = &p->name; break;
	case K_IMAGE: str = &p->image; break;
	case K_LABEL: str = &p->label; break;
	case K_PATH: str = &p->path; break;
	case K_EPOCH: str = &p->epoch; break;
	case K_PLATFORM: str = &p->platform; break;
	case K_BACKEND: str = &p->backend; break;
	case K_TEXT_START:
	case K_TEXT_SIZE:
		if (parse_hex(v, strlen(v), k == K_TEXT_START ? &p->text_start : &p->text_size))
			return BAD(l, "%s \"%s\" is not 0x<hex>", key_names[k], v);
		return 0;
	case K_PERIOD: {
		/* "<N> <unit>": the backend's period and its unit (pm_collect.h). */
		const char *sp = strchr(v, ' ');
		if (!sp || parse_u64(v, (size_t)(sp - v), &p->period) || p->period == 0)
			return BAD(l, "period \"%s\" is not \"<number> <unit>\"", v);
		while (*sp == ' ')
			sp++;
		if (!*sp || strchr(sp, ' '))
			return BAD(l, "period \"%s\" is not \"<number> <unit>\"", v);
		p->unit = strdup(sp);
		return p->unit ? 0 : -ENOMEM;
	}
	case K_FIELDS:
		return header_fields(l, v);
	}
	*str = strdup(v);
	return *str ? 0 : -ENOMEM;
}

/* event <total> <value>:<period>:<n> */
static int event(struct loader *l, const char *rest)
{
	struct pm_db_profile *p = l->p;
	const char *sp = strchr(rest, ' ');
	uint64_t total, period, n;
	if (!sp || parse_u64(rest, (size_t)(sp - rest), &total))
		return BAD(l, "event: the total is not a number: \"%s\"", rest);
	while (*sp == ' ')
		sp++;
	const char *text = sp, *end = text + strlen(text);
	if (strchr(text, ' '))
		return BAD(l, "event: \"%s\" is not <value>:<period>:<n>", text);
	const char *c2 = memrchr(text, ':', (size_t)(end - text));
	const char *c1 = c2 ? memrchr(text, ':', (size_t)(c2 - text)) : NULL;
	if (!c1 || c1 == text)
		return BAD(l, "event: \"%s\" is not <value>:<period>:<n>", text);
	if (parse_u64(c1 + 1, (size_t)(c2 - c1 - 1), &period))
		return BAD(l, "event %s: the period \"%.*s\" is not a number", text, (int)(c2 - c1 - 1), c1 + 1);
	if (parse_u64(c2 + 1, (size_t)(end - c2 - 1), &n))
		return BAD(l, "event %s: the sample count \"%s\" is not a number", text, c2 + 1);
	if (period != p->period)
		return BAD(l, "event %s: period %llu differs from the header's %llu", text, (unsigned long long)period,
		           (unsigned long long)p->period);
	char *vt = dup_n(text, (size_t)(c1 - text));
	if (!vt)
		return -ENOMEM;
	struct pm_value v;
	char why[256];
	if (pm_value_parse(vt, &v, why, sizeof why)) {
		int r = BAD(l, "event: %s", why);
		free(vt);
		return r;
	}
	if (v.is_default) {
		free(vt);
		return BAD(l, "event: a column is a class, not \"default\"");
	}
	uint32_t extra = pm_value_fields(&v) & ~p->fields;
	if (extra) {
		free(vt);
		return BAD(l, "event %s: names %s, which is not in the header's fields", text,
		           pm_fields[__builtin_ctz(extra)].name);
	}
	for (unsigned c = 0; c < p->ncols; c++)
		if (strcmp(p->col[c].text, vt) == 0) {
			free(vt);
			return BAD(l, "event %s: the same column twice", text);
		}
	struct pm_db_column *col = realloc(p->col, (p->ncols + 1) * sizeof *col);
	if (!col) {
		free(vt);
		return -ENOMEM;
	}
	p->col = col;
	col[p->ncols++] = (struct pm_db_column){ .text = vt, .value = v, .total = total, .n = n };
	return 0;
}

/* 0x<pc> <count>... */
static int row(struct loader *l, char *s)
{
	struct pm_db_profile *p = l->p;
	if (!l->sums && !(l->sums = calloc(p->ncols, sizeof *l->sums)))
		return -ENOMEM;
	uint64_t *sums = l->sums;
	char *tok = strtok(s, " \t");
	uint64_t pc;
	if (parse_hex(tok, strlen(tok), &pc))
		return BAD(l, "\"%s\" is not a PC (0x<hex>)", tok);
	if (p->nrows && pc <= p->pc[p->nrows - 1])
		return BAD(l, "PC 0x%llx after 0x%llx: rows must be in ascending PC order", (unsigned long long)pc,
		           (unsigned long long)p->pc[p->nrows - 1]);
	if (p->nrows == l->rows_cap) {
		size_t cap = l->rows_cap ? l->rows_cap * 2 : 256;
		uint64_t *npc = realloc(p->pc, cap * sizeof *npc);
		if (!npc)
			return -ENOMEM;
		p->pc = npc;
		uint64_t *nv = realloc(p->v, cap * p->ncols * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		p->v = nv;
		l->rows_cap = cap;
	}
	uint64_t *v = p->v + p->nrows * p->ncols;
	unsigned c = 0;
	while ((tok = strtok(NULL, " \t"))) {
		if (c == p->ncols)
			return BAD(l, "PC 0x%llx: more than the %u columns of the event lines", (unsigned long long)pc,
			           p->ncols);
		if (parse_u64(tok, strlen(tok), &v[c]))
			return BAD(l, "PC 0x%llx: column %u: \"%s\" is not a count", (unsigned long long)pc, c + 1, tok);
		if (sums[c] > UINT64_MAX - v[c])
			return BAD(l, "PC 0x%llx: column %u overflows", (unsigned long long)pc, c + 1);
		sums[c] += v[c];
		c++;
	}
	if (c != p->ncols)
		return BAD(l, "PC 0x%llx: %u counts for %u columns", (unsigned long long)pc, c, p->ncols);
	p->pc[p->nrows++] = pc;
	return 0;
}

/* The reader proper, over any stream: a file (pm_db_load) or bytes in
 * memory (pm_db_parse, the fuzzer's way in).  Closes f. */
static int load_stream(FILE *f, const char *file, struct pm_db_profile **out, char *why, size_t len)
{
	struct pm_db_profile *p = calloc(1, sizeof *p);
	struct loader l = { .file = file, .why = why, .len = len, .p = p };
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	int err = p && (p->file = strdup(file)) ? 0 : -ENOMEM;
	enum { HEADER, EVENTS, ROWS } part = HEADER;
	while (!err && (n = getline(&buf, &cap, f)) >= 0) {
		l.line++;
		while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
			buf[--n] = 0;
		if ((size_t)n != strlen(buf)) {
			err = BAD(&l, "a NUL byte in the line");
			break;
		}
		if (n == 0) {
			err = BAD(&l, "an empty line");
			break;
		}
		size_t klen = strcspn(buf, " \t");
		const char *rest = buf + klen;
		while (*rest == ' ' || *rest == '\t')
			rest++;
		if (klen == 5 && memcmp(buf, "event", 5) == 0) {
			if (part == ROWS) {
				err = BAD(&l, "an event line after the PC rows");
				break;
			}
			if (part == HEADER && l.seen != (1u << K_N) - 1) {
				for (int k = 0; k < K_N; k++)
					if (!(l.seen & (1u << k))) {
						err = BAD(&l, "header \"%s\" missing before the event lines", key_names[k]);
						break;
					}
				break;
			}
			part = EVENTS;
			err = event(&l, rest);
		} else if (buf[0] == '0' && buf[1] == 'x') {
			if (part != EVENTS && part != ROWS) {
				err = BAD(&l, "a PC row before any event line");
				break;
			}
			part = ROWS;
			err = row(&l, buf);
		} else if (part == HEADER) {
			err = header(&l, buf, klen, rest);
		} else {
			err = BAD(&l, "\"%.*s\" is neither an event line nor a PC row", (int)klen, buf);
		}
	}
	if (!err && ferror(f))
		err = heritage_fail_why(-EIO, why, len, "%s: read error", file);
	if (!err && part == HEADER) {
		l.line++;
		err = BAD(&l, "no event line (a profile has at least one column)");
	}
	for (unsigned c = 0; !err && c < p->ncols; c++) {
		const struct pm_db_column *col = &p->col[c];
		uint64_t sum = l.sums ? l.sums[c] : 0;
		if (sum != col->total)
			err = heritage_fail_why(-EINVAL, why, len, "%s: event %s: total %llu, but its column sums to %llu", file, col->text,
			           (unsigned long long)col->total, (unsigned long long)sum);
		else if (col->value.counter < 0 && col->n != col->total)
			err = heritage_fail_why(-EINVAL, why, len, "%s: event %s: %llu samples counted but n is %llu", file, col->text,
			           (unsigned long long)col->total, (unsigned long long)col->n);
	}
	free(buf);
	free(l.sums);
	fclose(f);
	if (err) {
		pm_db_free(p);
		return err;
	}
	*out = p;
	return 0;
}

int pm_db_load(const char *file, struct pm_db_profile **out, char *why, size_t len)
{
	*out = NULL;
	FILE *f = fopen(file, "re");
	if (!f) {
		int e = -errno;
		return heritage_fail_why(e, why, len, "%s: %s", file, strerror(-e));
	}
	return load_stream(f, file, out, why, len);
}

int pm_db_parse(const char *text, size_t n, const char *file, struct pm_db_profile **out, char *why, size_t len)
{
	*out = NULL;
	/* glibc's fmemopen refuses size 0: an empty profile is a stream at
	 * its end. */
	static const char none[1];
	FILE *f = fmemopen((void *)(n ? text : none), n ? n : 1, "r");
	if (!f || (!n && fseek(f, 0, SEEK_END) != 0)) {
		int e = errno ? -errno : -ENOMEM;
		if (f)
			fclose(f);
		return heritage_fail_why(e, why, len, "%s: %s", file, strerror(-e));
	}
	return load_stream(f, file, out, why, len);
}

/* ---- epochs and image files -------------------------------------------------- */

/* An epoch is named by its run's start, yyyymmddhhmmss (UTC), with -N
 * appended by the writer when a run of the same second has the name
 * already (pm_db_write.c).  Returns N (0 without suffix), or -1. */
static long epoch_suffix(const char *s)
{
	for (int i = 0; i < 14; i++)
		if (s[i] < '0' || s[i] > '9')
			return -1;
	if (!s[14])
		return 0;
	if (s[14] != '-' || !s[15] || strlen(s + 15) > 6)
		return -1;
	long n = 0;
	for (const char *p = s + 15; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		n = n * 10 + (*p - '0');
	}
	return n;
}

static int is_epoch_name(const char *s)
{
	return epoch_suffix(s) >= 0;
}

/* Later epoch: the later second, then the greater -N. */
static int epoch_later(const char *a, const char *b)
{
	int c = strncmp(a, b, 14);
	return c ? c > 0 : epoch_suffix(a) > epoch_suffix(b);
}

static int is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int pm_db_epoch_dir(const char *db, const char *epoch, char *dir, size_t dlen, char *why, size_t len)
{
	if (!is_dir(db))
		return heritage_fail_why(-ENOENT, why, len, "no profile database: %s is not a directory", db);
	if (epoch) {
		if (!is_epoch_name(epoch))
			return heritage_fail_why(-ENOENT, why, len, "epoch \"%s\" is not yyyymmddhhmmss[-N]", epoch);
		if ((size_t)snprintf(dir, dlen, "%s/%s", db, epoch) >= dlen)
			return heritage_fail_why(-ENAMETOOLONG, why, len, "%s/%s: path too long", db, epoch);
		if (!is_dir(dir))
			return heritage_fail_why(-ENOENT, why, len, "no epoch %s in %s", epoch, db);
		return 0;
	}
	DIR *d = opendir(db);
	if (!d) {
		int e = -errno;
		return heritage_fail_why(e, why, len, "%s: %s", db, strerror(-e));
	}
	char best[32] = "";
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!is_epoch_name(de->d_name) || (best[0] && !epoch_later(de->d_name, best)))
			continue;
		char path[PATH_MAX];
		if ((size_t)snprintf(path, sizeof path, "%s/%s", db, de->d_name) < sizeof path && is_dir(path))
			memcpy(best, de->d_name, strlen(de->d_name) + 1); /* <= 21 bytes: an epoch name */
	}
	closedir(d);
	if (!best[0])
		return heritage_fail_why(-ENOENT, why, len, "no epoch in %s (no yyyymmddhhmmss directory: has profileme-run written it?)",
		            db);
	if ((size_t)snprintf(dir, dlen, "%s/%s", db, best) >= dlen)
		return heritage_fail_why(-ENAMETOOLONG, why, len, "%s/%s: path too long", db, best);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_free(char **files)
{
	if (!files)
		return;
	for (char **f = files; *f; f++)
		free(*f);
	free(files);
}

int pm_db_list(const char *epoch_dir, char ***files, char *why, size_t len)
{
	*files = NULL;
	DIR *d = opendir(epoch_dir);
	if (!d) {
		int e = -errno;
		return heritage_fail_why(e, why, len, "%s: %s", epoch_dir, strerror(-e));
	}
	size_t n = 0, cap = 8;
	char **v = malloc(cap * sizeof *v);
	struct dirent *de;
	int err = v ? 0 : -ENOMEM;
	while (!err && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char path[PATH_MAX];
		struct stat st;
		if ((size_t)snprintf(path, sizeof path, "%s/%s", epoch_dir, de->d_name) >= sizeof path)
			continue;
		if (stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		if (n + 2 > cap) {
			char **nv = realloc(v, (cap *= 2) * sizeof *nv);
			if (!nv) {
				err = -ENOMEM;
				break;
			}
			v = nv;
		}
		if (!(v[n] = strdup(path)))
			err = -ENOMEM;
		else
			n++;
	}
	closedir(d);
	if (err) {
		if (v)
			v[n] = NULL;
		list_free(v);
		return heritage_fail_why(err, why, len, "%s: out of memory", epoch_dir);
	}
	qsort(v, n, sizeof *v, cmp_str);
	v[n] = NULL;
	*files = v;
	return 0;
}

/* The value of header key in file (without loading the rows): 0 or -1. */
static int peek_header(const char *file, const char *key, char *out, size_t olen)
{
	FILE *f = fopen(file, "re");
	if (!f)
		return -1;
	char line[PATH_MAX + 64];
	size_t klen = strlen(key);
	int r = -1;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "event", 5) == 0 || strncmp(line, "0x", 2) == 0)
			break;
		if (strncmp(line, key, klen) == 0 && (line[klen] == ' ' || line[klen] == '\t')) {
			char *v = line + klen;
			v += strspn(v, " \t");
			v[strcspn(v, "\r\n")] = 0;
			snprintf(out, olen, "%s", v);
			r = 0;
			break;
		}
	}
	fclose(f);
	return r;
}

int pm_db_find(const char *epoch_dir, const char *image_path, char *file, size_t flen, char *why, size_t len)
{
	char **files;
	int err = pm_db_list(epoch_dir, &files, why, len);
	if (err)
		return err;
	char real[PATH_MAX];
	const char *rp = realpath(image_path, real) ? real : NULL;
	const char *base = strrchr(image_path, '/');
	base = base ? base + 1 : image_path;
	const char *by_path = NULL, *by_name = NULL;
	unsigned nname = 0;
	char names[512] = "";
	size_t nlen = 0;
	for (char **f = files; *f; f++) {
		char v[PATH_MAX];
		if (peek_header(*f, "path", v, sizeof v) == 0 &&
		    (strcmp(v, image_path) == 0 || (rp && strcmp(v, rp) == 0))) {
			by_path = *f;
			break;
		}
		if (peek_header(*f, "name", v, sizeof v) == 0 && strcmp(v, base) == 0) {
			by_name = *f;
			nname++;
		}
		const char *fb = strrchr(*f, '/');
		if (nlen < sizeof names - 1)
			nlen += (size_t)snprintf(names + nlen, sizeof names - nlen, "%s%s", nlen ? ", " : "", fb ? fb + 1 : *f);
	}
	const char *hit = by_path ? by_path : nname == 1 ? by_name : NULL;
	if (hit) {
		if ((size_t)snprintf(file, flen, "%s", hit) >= flen)
			err = heritage_fail_why(-ENAMETOOLONG, why, len, "%s: path too long", hit);
	} else if (nname > 1) {
		err = heritage_fail_why(-ENOENT, why, len,
		           "%s: %u profiles of images named %s in %s, none with path %s: name the image by the path it was "
		           "profiled at",
		           image_path, nname, base, epoch_dir, rp ? rp : image_path);
	} else {
		err = heritage_fail_why(-ENOENT, why, len, "unknown image %s: no profile for it in %s (profiled images: %s)", image_path,
		           epoch_dir, nlen ? names : "none");
	}
	list_free(files);
	return err;
}

/* ---- answering a query from the classes ---------------------------------- */

int pm_db_class_in_set(const struct pm_set *class_set, const struct pm_set *set)
{
	return (set->must1 & ~class_set->must1) == 0 && (set->must0 & ~class_set->must0) == 0;
}

uint64_t pm_db_value(const struct pm_db_profile *p, long r, const struct pm_value *v)
{
	uint64_t sum = 0;
	for (unsigned c = 0; c < p->ncols; c++) {
		const struct pm_db_column *col = &p->col[c];
		if (col->value.counter != v->counter || !pm_db_class_in_set(&col->value.set, &v->set))
			continue;
		sum += r < 0 ? col->total : p->v[(size_t)r * p->ncols + c];
	}
	return sum;
}
