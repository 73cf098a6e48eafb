/*
 * Real IMC PMUs from sysfs, counted through perf_event (imc_sysfs.h).
 * Facts: doc/facilities.md §4(b); kernel arch/powerpc/perf/imc-pmu.c
 * (update_pmu_ops, *_imc_event_init, update_events_in_group).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "common/heritage_probe.h"
#include "imc/imc_sysfs.h"

#define DEVICES "sys/bus/event_source/devices"
/* A sysfs attribute is at most a page (sysfs_emit); anything longer is not
 * one. */
#define ATTR_MAX 4096
/* Linux's NR_CPUS tops out at 8192 on POWER (CONFIG_NR_CPUS); leave room. */
#define CPU_MAX 65535

/* ---- small helpers ----------------------------------------------------------- */

static char *join(const char *a, const char *b)
{
	size_t la = strlen(a);
	char *p = malloc(la + strlen(b) + 2);
	if (p)
		sprintf(p, "%s%s%s", a, (la && a[la - 1] == '/') ? "" : "/", b);
	return p;
}

static int nomem(void)
{
	return heritage_fail(-ENOMEM, "imc: out of memory reading sysfs");
}

/* A whole attribute file into buf, trailing whitespace dropped: 0, -ENOENT
 * (absent, no message: the caller decides whether that is an error), or
 * -EINVAL naming the file. */
static int read_attr(const char *path, char *buf, size_t size)
{
	/* O_NONBLOCK: a FIFO put where an attribute belongs must not hang
	 * discovery; it is refused below, as is anything but a regular file
	 * (what sysfs attributes are). */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		return heritage_fail(-EINVAL, "imc: %s: %s", path, strerror(errno));
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return heritage_fail(-EINVAL, "imc: %s: not a regular file (a sysfs attribute is one)", path);
	}
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, buf + n, size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			return heritage_fail(-EINVAL, "imc: %s: %s", path, strerror(e));
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == size) {
			close(fd);
			return heritage_fail(-EINVAL, "imc: %s: longer than a sysfs attribute (%zu bytes or more)",
			                     path, size);
		}
	}
	close(fd);
	if (memchr(buf, '\0', n))
		return heritage_fail(-EINVAL, "imc: %s: holds a NUL byte, not text", path);
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		n--;
	buf[n] = '\0';
	return 0;
}

static int is_dir(const char *path)
{
	struct stat st;
	/* stat, not readdir's d_type: the devices/ entries are symlinks into
	 * /sys/devices on a real machine. */
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in a directory, sorted, "." and ".." left out. */
static int list_dir(const char *path, char ***names, unsigned *n)
{
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	char **v = NULL;
	unsigned k = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (k == cap) {
			cap = cap ? 2 * cap : 32;
			char **nv = realloc(v, cap * sizeof *v);
			if (!nv)
				goto oom;
			v = nv;
		}
		if (!(v[k] = strdup(de->d_name)))
			goto oom;
		k++;
	}
	closedir(d);
	if (k)
		qsort(v, k, sizeof *v, cmp_str);
	*names = v;
	*n = k;
	return 0;
oom:
	closedir(d);
	for (unsigned i = 0; i < k; i++)
		free(v[i]);
	free(v);
	return -ENOMEM;
}

static void free_names(char **v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);
	return ls >= lx && !strcmp(s + ls - lx, suffix);
}

/* Unsigned decimal, or hex with 0x: the whole string, no sign, no space. */
static int parse_u64(const char *s, uint64_t *v)
{
	int base = 10;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!isxdigit((unsigned char)*s) || (base == 10 && !isdigit((unsigned char)*s)))
		return -1;
	errno = 0;
	char *end;
	unsigned long long x = strtoull(s, &end, base);
	if (errno || *end)
		return -1;
	*v = x;
	return 0;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *v)
{
	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	char *end;
	unsigned long x = strtoul(s, &end, 10);
	if (errno || *end || x > max)
		return -1;
	*v = x;
	return 0;
}

/* ---- cpu lists, formats, terms ------------------------------------------------- */

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

int imc_sysfs_parse_cpulist(const char *text, const char *what, int **cpus, unsigned *n)
{
	int *v = NULL;
	unsigned k = 0, cap = 0;
	const char *p = text;

	*cpus = NULL;
	*n = 0;
	while (*p && isspace((unsigned char)*p))
		p++;
	while (*p) {
		char tok[32];
		size_t len = strcspn(p, ",");
		if (len == 0 || len >= sizeof tok) {
			free(v);
			return heritage_fail(-EINVAL, "imc: %s: bad CPU list \"%s\": %s", what, text,
			                     len ? "entry too long" : "empty entry");
		}
		memcpy(tok, p, len);
		tok[len] = '\0';
		unsigned long lo, hi;
		char *dash = strchr(tok, '-');
		if (dash)
			*dash = '\0';
		if (parse_uint(tok, CPU_MAX, &lo) != 0 || (dash && parse_uint(dash + 1, CPU_MAX, &hi) != 0) ||
		    (dash && hi < lo)) {
			free(v);
			return heritage_fail(-EINVAL, "imc: %s: bad CPU list \"%s\": \"%.*s\" is not N or N-M "
			                     "(0 <= N <= M <= %d)", what, text, (int)len, p, CPU_MAX);
		}
		if (!dash)
			hi = lo;
		for (unsigned long c = lo; c <= hi; c++) {
			if (k == cap) {
				cap = cap ? 2 * cap : 16;
				if (cap > CPU_MAX + 1u) {
					free(v);
					return heritage_fail(-EINVAL, "imc: %s: CPU list \"%s\" names more than %d CPUs", what,
					                     text, CPU_MAX + 1);
				}
				int *nv = realloc(v, cap * sizeof *v);
				if (!nv) {
					free(v);
					return nomem();
				}
				v = nv;
			}
			v[k++] = (int)c;
		}
		p += len;
		if (*p == ',') {
			p++;
			if (!*p) {
				free(v);
				return heritage_fail(-EINVAL, "imc: %s: bad CPU list \"%s\": ends with ','", what, text);
			}
		}
	}
	/* The kernel prints them ascending; sort and drop repeats anyway. */
	if (k > 1) {
		qsort(v, k, sizeof *v, cmp_int);
		unsigned j = 1;
		for (unsigned i = 1; i < k; i++)
			if (v[i] != v[j - 1])
				v[j++] = v[i];
		k = j;
	}
	*cpus = v;
	*n = k;
	return 0;
}

int imc_sysfs_parse_format(const char *text, const char *what, unsigned *word, uint64_t *mask)
{
	static const char *const words[IMC_SYSFS_CONFIG_WORDS] = { "config", "config1", "config2" };
	const char *colon = strchr(text, ':');
	size_t wl = colon ? (size_t)(colon - text) : 0;
	unsigned w = IMC_SYSFS_CONFIG_WORDS;

	for (unsigned i = 0; colon && i < IMC_SYSFS_CONFIG_WORDS; i++)
		if (strlen(words[i]) == wl && !strncmp(text, words[i], wl))
			w = i;
	if (w == IMC_SYSFS_CONFIG_WORDS)
		return heritage_fail(-EINVAL, "imc: %s: bad format \"%s\": expected config, config1 or config2, "
		                     "':' and bit ranges (\"config:0-61\")", what, text);
	uint64_t m = 0;
	const char *p = colon + 1;
	do {
		char tok[16];
		size_t len = strcspn(p, ",");
		unsigned long lo, hi;
		if (len == 0 || len >= sizeof tok)
			return heritage_fail(-EINVAL, "imc: %s: bad format \"%s\": empty or overlong bit range", what, text);
		memcpy(tok, p, len);
		tok[len] = '\0';
		char *dash = strchr(tok, '-');
		if (dash)
			*dash = '\0';
		if (parse_uint(tok, 63, &lo) != 0 || (dash && (parse_uint(dash + 1, 63, &hi) != 0 || hi < lo)))
			return heritage_fail(-EINVAL, "imc: %s: bad format \"%s\": \"%.*s\" is not a bit or a range "
			                     "lo-hi within 0-63", what, text, (int)len, p);
		if (!dash)
			hi = lo;
		uint64_t r = (hi == 63 ? ~0ull : (1ull << (hi + 1)) - 1) & ~((1ull << lo) - 1);
		if (m & r)
			return heritage_fail(-EINVAL, "imc: %s: bad format \"%s\": bit ranges overlap", what, text);
		m |= r;
		p += len;
	} while (*p++ == ',');
	*word = w;
	*mask = m;
	return 0;
}

/* Spread v's low bits over mask's set bits, lowest first (perf's
 * pmu_format_value): -1 when v has more bits than the mask. */
static int deposit(uint64_t v, uint64_t mask, uint64_t *out)
{
	uint64_t r = 0;
	for (unsigned b = 0; b < 64; b++) {
		if (!(mask & (1ull << b)))
			continue;
		if (v & 1)
			r |= 1ull << b;
		v >>= 1;
	}
	if (v)
		return -1;
	*out = r;
	return 0;
}

static const struct imc_sysfs_format *format_find(const struct imc_sysfs_pmu *p, const char *name)
{
	for (unsigned i = 0; i < p->nformats; i++)
		if (!strcmp(p->formats[i].name, name))
			return &p->formats[i];
	return NULL;
}

int imc_sysfs_build_config(const struct imc_sysfs_pmu *p, const char *terms, const char *what,
                           uint64_t config[IMC_SYSFS_CONFIG_WORDS])
{
	static const char *const words[IMC_SYSFS_CONFIG_WORDS] = { "config", "config1", "config2" };
	const char *s = terms;

	memset(config, 0, IMC_SYSFS_CONFIG_WORDS * sizeof config[0]);
	if (!*terms)
		return heritage_fail(-EINVAL, "imc: %s: no event terms (expected e.g. \"event=0x0\")", what);
	while (*s) {
		char term[128];
		size_t len = strcspn(s, ",");
		if (len == 0 || len >= sizeof term)
			return heritage_fail(-EINVAL, "imc: %s: bad event terms \"%s\": %s term", what, terms,
			                     len ? "overlong" : "empty");
		memcpy(term, s, len);
		term[len] = '\0';
		char *eq = strchr(term, '=');
		uint64_t v = 1; /* a bare term sets its field to 1, as perf does */
		if (eq) {
			*eq = '\0';
			if (parse_u64(eq + 1, &v) != 0)
				return heritage_fail(-EINVAL, "imc: %s: bad event terms \"%s\": \"%s\" is not a number "
				                     "(decimal or 0x hex)", what, terms, eq + 1);
		}
		const struct imc_sysfs_format *f = format_find(p, term);
		if (f) {
			uint64_t bits;
			if (deposit(v, f->mask, &bits) != 0)
				return heritage_fail(-EINVAL, "imc: %s: %s=%#llx does not fit format field %s (%s)", what,
				                     term, (unsigned long long)v, f->name, f->spec);
			config[f->word] = (config[f->word] & ~f->mask) | bits;
		} else {
			unsigned w = IMC_SYSFS_CONFIG_WORDS;
			for (unsigned i = 0; i < IMC_SYSFS_CONFIG_WORDS; i++)
				if (!strcmp(term, words[i]))
					w = i;
			if (w == IMC_SYSFS_CONFIG_WORDS || !eq) {
				char have[256] = "";
				for (unsigned i = 0; i < p->nformats; i++)
					snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s", i ? ", " : "",
					         p->formats[i].name);
				return heritage_fail(-EINVAL, "imc: %s: term \"%s\" names no field of %s/format (it has: %s)",
				                     what, term, p->name, have[0] ? have : "none");
			}
			config[w] = v;
		}
		s += len;
		if (*s == ',' && !*++s)
			return heritage_fail(-EINVAL, "imc: %s: bad event terms \"%s\": ends with ','", what, terms);
	}
	return 0;
}

/* "512", "1", "0.000061035", "6.1e-05": a finite positive decimal, read in
 * the C locale whatever the application set (a scale is sysfs text). */
static int parse_scale(const char *s, double *v)
{
	const char *p = s;
	int digits = 0;
	while (isdigit((unsigned char)*p))
		p++, digits++;
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++)
			digits++;
	if (!digits)
		return -1;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p)
		return -1;
	locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
	if (c == (locale_t)0)
		return -1;
	double x = strtod_l(s, NULL, c);
	freelocale(c);
	if (!isfinite(x) || x <= 0)
		return -1;
	*v = x;
	return 0;
}

/* ---- one PMU ---------------------------------------------------------------- */

static int domain_of(const char *name, enum imc_sysfs_domain *d)
{
	size_t n = strlen(name);
	if (!strcmp(name, "core_imc"))
		*d = IMC_SYSFS_CORE;
	else if (!strcmp(name, "thread_imc"))
		*d = IMC_SYSFS_THREAD;
	else if (!strcmp(name, "trace_imc"))
		*d = IMC_SYSFS_TRACE;
	/* nest_<unit>_imc with a unit (imc_mem_init names them so); Intel's
	 * client uncore_imc and uncore_imc_N are other PMUs. */
	else if (n > strlen("nest__imc") && !strncmp(name, "nest_", 5) && ends_with(name, "_imc"))
		*d = IMC_SYSFS_NEST;
	else
		return 0;
	return 1;
}

const char *imc_sysfs_domain_name(enum imc_sysfs_domain d)
{
	switch (d) {
	case IMC_SYSFS_NEST: return "nest";
	case IMC_SYSFS_CORE: return "core";
	case IMC_SYSFS_THREAD: return "thread";
	case IMC_SYSFS_TRACE: return "trace";
	}
	return "unknown";
}

static void pmu_free(struct imc_sysfs_pmu *p)
{
	free(p->name);
	free(p->dir);
	free(p->cpus);
	for (unsigned i = 0; i < p->nformats; i++) {
		free(p->formats[i].name);
		free(p->formats[i].spec);
	}
	free(p->formats);
	for (unsigned i = 0; i < p->nevents; i++) {
		free(p->events[i].name);
		free(p->events[i].terms);
		free(p->events[i].scale_text);
		free(p->events[i].unit);
	}
	free(p->events);
	memset(p, 0, sizeof *p);
}

/* <p->dir>/<sub>'s entries, sorted: 0 with *dir and its names (the
 * caller frees both), 1 when there is no such directory (*dir NULL), or
 * the error with its message. */
static int list_sub(const struct imc_sysfs_pmu *p, const char *sub, char **dir, char ***names, unsigned *n)
{
	int err;
	*names = NULL;
	*n = 0;
	if (!(*dir = join(p->dir, sub)))
		return nomem();
	if (!is_dir(*dir)) {
		free(*dir);
		*dir = NULL;
		return 1;
	}
	if ((err = list_dir(*dir, names, n)) != 0) {
		err = err == -ENOMEM ? nomem() : heritage_fail(-EINVAL, "imc: %s: %s", *dir, strerror(-err));
		free(*dir);
		*dir = NULL;
	}
	return err;
}

/* An attribute the listing named: one that cannot be opened now is a
 * malformed tree, not an absent one. */
static int read_listed(const char *path, char *buf)
{
	int err = read_attr(path, buf, ATTR_MAX);
	return err == -ENOENT ? heritage_fail(-EINVAL, "imc: %s: listed but cannot be opened", path) : err;
}

static int load_formats(struct imc_sysfs_pmu *p, char *buf)
{
	char *dir;
	char **names;
	unsigned n;
	int err = list_sub(p, "format", &dir, &names, &n);

	if (err == 1)
		return heritage_fail(-EINVAL, "imc: %s/format: missing: an IMC PMU has format/event (config:0-61)",
		                     p->dir);
	if (err)
		return err;
	if (!(p->formats = calloc(n ? n : 1, sizeof *p->formats))) {
		err = nomem();
		goto out;
	}
	for (unsigned i = 0; i < n; i++) {
		char *path = join(dir, names[i]);
		if (!path) {
			err = nomem();
			goto out;
		}
		struct imc_sysfs_format *f = &p->formats[p->nformats];
		err = read_listed(path, buf);
		if (!err)
			err = imc_sysfs_parse_format(buf, path, &f->word, &f->mask);
		free(path);
		if (err)
			goto out;
		if (!(f->name = strdup(names[i])) || !(f->spec = strdup(buf))) {
			free(f->name);
			err = nomem();
			goto out;
		}
		p->nformats++;
	}
out:
	free_names(names, n);
	free(dir);
	return err;
}

static int cmp_event(const void *a, const void *b)
{
	return strcasecmp(((const struct imc_sysfs_event *)a)->name, ((const struct imc_sysfs_event *)b)->name);
}

/* events/<NAME>.scale or .unit (or perf's .per-pkg/.snapshot, which IMC
 * does not use): the event it belongs to, or -1. */
static int attr_suffix(const char *name, size_t *base_len)
{
	static const char *const suffixes[] = { ".scale", ".unit", ".per-pkg", ".snapshot" };
	for (unsigned i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
		if (ends_with(name, suffixes[i]) && strlen(name) > strlen(suffixes[i])) {
			*base_len = strlen(name) - strlen(suffixes[i]);
			return (int)i;
		}
	return -1;
}

static int load_events(struct imc_sysfs_pmu *p, char *buf)
{
	char *dir;
	char **names;
	unsigned n;
	int err = list_sub(p, "events", &dir, &names, &n);

	/* update_events_in_group() adds no events group for a unit whose
	 * catalog node has none: a PMU with no events. */
	if (err == 1)
		return 0;
	if (err)
		return err;
	if (!(p->events = calloc(n ? n : 1, sizeof *p->events))) {
		err = nomem();
		goto out;
	}
	/* The events first (names are sorted, so NAME comes before its
	 * NAME.scale; attributes are matched after). */
	for (unsigned i = 0; i < n; i++) {
		size_t bl;
		if (attr_suffix(names[i], &bl) >= 0)
			continue;
		char *path = join(dir, names[i]);
		if (!path) {
			err = nomem();
			goto out;
		}
		struct imc_sysfs_event *e = &p->events[p->nevents];
		err = read_listed(path, buf);
		if (!err)
			err = imc_sysfs_build_config(p, buf, path, e->config);
		free(path);
		if (err)
			goto out;
		e->scale = 1;
		if (!(e->name = strdup(names[i])) || !(e->terms = strdup(buf))) {
			free(e->name);
			err = nomem();
			goto out;
		}
		p->nevents++;
	}
	for (unsigned i = 0; i < n; i++) {
		size_t bl;
		int kind = attr_suffix(names[i], &bl);
		if (kind < 0 || kind > 1)
			continue;
		char *path = join(dir, names[i]);
		if (!path) {
			err = nomem();
			goto out;
		}
		struct imc_sysfs_event *e = NULL;
		for (unsigned k = 0; k < p->nevents; k++)
			if (strlen(p->events[k].name) == bl && !strncmp(p->events[k].name, names[i], bl))
				e = &p->events[k];
		err = read_listed(path, buf);
		if (!err && !e)
			err = heritage_fail(-EINVAL, "imc: %s: %s of no event (no file %.*s beside it)", path,
			                    kind == 0 ? "a scale" : "a unit", (int)bl, names[i]);
		else if (!err && kind == 0) {
			if (parse_scale(buf, &e->scale) != 0)
				err = heritage_fail(-EINVAL, "imc: %s: bad scale \"%s\": expected a positive decimal "
				                    "number (\"512\", \"0.5\", \"6.1e-05\")", path, buf);
			else if (!(e->scale_text = strdup(buf)))
				err = nomem();
		} else if (!err) {
			if (!buf[0])
				err = heritage_fail(-EINVAL, "imc: %s: empty unit", path);
			for (const char *c = buf; !err && *c; c++)
				if (!isprint((unsigned char)*c))
					err = heritage_fail(-EINVAL, "imc: %s: unit holds a control character", path);
			if (!err && !(e->unit = strdup(buf)))
				err = nomem();
		}
		free(path);
		if (err)
			goto out;
	}
	if (p->nevents > 1)
		qsort(p->events, p->nevents, sizeof *p->events, cmp_event);
out:
	free_names(names, n);
	free(dir);
	return err;
}

static int load_pmu(struct imc_sysfs_pmu *p, const char *devices, const char *name, enum imc_sysfs_domain d)
{
	char *buf = malloc(ATTR_MAX + 1);
	char *path = NULL;
	int err = 0;
	unsigned long type;

	if (!buf || !(p->name = strdup(name)) || !(p->dir = join(devices, name))) {
		err = nomem();
		goto out;
	}
	p->domain = d;
	if (!is_dir(p->dir)) {
		err = heritage_fail(-EINVAL, "imc: %s: not a directory", p->dir);
		goto out;
	}
	if (!(path = join(p->dir, "type"))) {
		err = nomem();
		goto out;
	}
	err = read_attr(path, buf, ATTR_MAX);
	if (err == -ENOENT)
		err = heritage_fail(-EINVAL, "imc: %s: missing: every perf PMU has its type", path);
	if (!err && parse_uint(buf, UINT32_MAX, &type) != 0)
		err = heritage_fail(-EINVAL, "imc: %s: bad type \"%s\": expected a decimal perf type", path, buf);
	if (err)
		goto out;
	p->type = (uint32_t)type;
	free(path);
	if (!(path = join(p->dir, "cpumask"))) {
		err = nomem();
		goto out;
	}
	err = read_attr(path, buf, ATTR_MAX);
	if (err == -ENOENT) {
		err = 0;
		/* nest and core count whole CPUs: the kernel always gives
		 * them the CPUs to count on (imc_pmu_cpumask_attr_group). */
		if (d == IMC_SYSFS_NEST || d == IMC_SYSFS_CORE)
			err = heritage_fail(-EINVAL, "imc: %s: missing: a %s IMC PMU says which CPUs count it (one per %s)",
			                    path, imc_sysfs_domain_name(d), d == IMC_SYSFS_NEST ? "chip" : "core");
	} else if (!err) {
		p->has_cpumask = 1;
		err = imc_sysfs_parse_cpulist(buf, path, &p->cpus, &p->ncpus);
	}
	if (!err)
		err = load_formats(p, buf);
	if (!err)
		err = load_events(p, buf);
out:
	free(path);
	free(buf);
	return err;
}

/* ---- discovery ------------------------------------------------------------ */

const char *imc_sysfs_default_root(void)
{
	const char *r = heritage_env("imc", "sysfs_root");
	return r ? r : "/";
}

void imc_sysfs_free(struct imc_sysfs *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->npmus; i++)
		pmu_free(&s->pmus[i]);
	free(s->pmus);
	free(s->root);
	free(s->devices);
	free(s);
}

int imc_sysfs_discover(const char *root, struct imc_sysfs **out)
{
	const char *from = root ? "" : heritage_env("imc", "sysfs_root") ? " (PAPI_HERITAGE_IMC_SYSFS_ROOT)" : "";
	struct imc_sysfs *s = calloc(1, sizeof *s);
	char **names = NULL;
	unsigned n = 0;
	int err = 0;

	*out = NULL;
	if (!root)
		root = imc_sysfs_default_root();
	if (!s || !(s->root = strdup(root)) || !(s->devices = join(root, DEVICES))) {
		imc_sysfs_free(s);
		return nomem();
	}
	if (!is_dir(root)) {
		err = heritage_fail(-ENOENT, "imc: no real IMC here: the sysfs root %s%s is not a directory", root, from);
		goto out;
	}
	if ((err = list_dir(s->devices, &names, &n)) != 0) {
		err = err == -ENOMEM ? nomem()
		                     : heritage_fail(-ENOENT, "imc: no real IMC here: %s%s: %s", s->devices, from,
		                                     strerror(-err));
		goto out;
	}
	if (!(s->pmus = calloc(n ? n : 1, sizeof *s->pmus))) {
		err = nomem();
		goto out;
	}
	for (unsigned i = 0; i < n && !err; i++) {
		enum imc_sysfs_domain d;
		if (!domain_of(names[i], &d))
			continue;
		err = load_pmu(&s->pmus[s->npmus], s->devices, names[i], d);
		s->npmus++; /* freed with the rest, loaded or not */
	}
	if (!err && s->npmus == 0)
		err = heritage_fail(-ENOENT, "imc: no real IMC here: no nest_*_imc, core_imc, thread_imc or trace_imc "
		                    "PMU in %s%s", s->devices, from);
out:
	free_names(names, n);
	if (err) {
		imc_sysfs_free(s);
		return err;
	}
	*out = s;
	return 0;
}

const struct imc_sysfs_pmu *imc_sysfs_pmu_find(const struct imc_sysfs *s, const char *name)
{
	size_t n = strlen(name);
	for (unsigned i = 0; i < s->npmus; i++) {
		const char *pn = s->pmus[i].name;
		/* perf takes nest_mcs01/.../ for nest_mcs01_imc */
		if (!strcmp(pn, name) || (strlen(pn) == n + 4 && !strncmp(pn, name, n) && !strcmp(pn + n, "_imc")))
			return &s->pmus[i];
	}
	return NULL;
}

const struct imc_sysfs_event *imc_sysfs_event_find(const struct imc_sysfs_pmu *p, const char *name)
{
	struct imc_sysfs_event key = { .name = (char *)name };
	if (!p->nevents)
		return NULL;
	return bsearch(&key, p->events, p->nevents, sizeof *p->events, cmp_event);
}

/* ---- who may count --------------------------------------------------------- */

enum imc_sysfs_rule imc_sysfs_pmu_rule(const struct imc_sysfs_pmu *p)
{
	if (p->domain == IMC_SYSFS_NEST || p->domain == IMC_SYSFS_CORE)
		return IMC_SYSFS_RULE_CPU_WIDE;
	/* A generic perf type (software, hardware...) is what the fixtures
	 * put behind thread_imc; the kernel's own IMC PMUs get dynamic types
	 * above PERF_TYPE_MAX. */
	if (p->type < PERF_TYPE_MAX && p->domain == IMC_SYSFS_THREAD)
		return IMC_SYSFS_RULE_OWN_TASK;
	return IMC_SYSFS_RULE_PERFMON;
}

const char *imc_sysfs_rule_text(enum imc_sysfs_rule r)
{
	switch (r) {
	case IMC_SYSFS_RULE_CPU_WIDE:
		return "counts whole CPUs: needs perf_event_paranoid <= 0, CAP_PERFMON (Linux >= 5.8) or root";
	case IMC_SYSFS_RULE_PERFMON:
		return "needs CAP_PERFMON (Linux >= 5.8) or root whatever perf_event_paranoid is "
		       "(the kernel's thread_imc/trace_imc event_init asks perfmon_capable())";
	case IMC_SYSFS_RULE_OWN_TASK:
		return "counts this task at user level: needs perf_event_paranoid <= 2, CAP_PERFMON or root";
	}
	return "unknown rule";
}

/* CAP_PERFMON (38) or CAP_SYS_ADMIN (21) in this thread's effective set:
 * what perfmon_capable() asks. */
static int perfmon_capable(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long long eff = 0;
	int found = 0;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1) {
			found = 1;
			break;
		}
	if (f)
		fclose(f);
	return found && (eff & ((1ull << 38) | (1ull << 21)));
}

int imc_sysfs_usable(const struct imc_sysfs_pmu *p, char *why, size_t len)
{
	char buf[640];
	int err;

	if (p->domain == IMC_SYSFS_TRACE) {
		snprintf(why, len, "%s samples into memory: not a counter (the trace backend reads it)", p->name);
		return heritage_fail(-ENOTSUP, "imc: %s", why);
	}
	switch (imc_sysfs_pmu_rule(p)) {
	case IMC_SYSFS_RULE_CPU_WIDE:
		err = heritage_probe_explain(HERITAGE_MECH_PERF_CPU, buf, sizeof buf);
		break;
	case IMC_SYSFS_RULE_OWN_TASK:
		err = heritage_probe_explain(HERITAGE_MECH_PERF_SW, buf, sizeof buf);
		break;
	default:
		err = heritage_probe_explain(HERITAGE_MECH_PERF_SW, buf, sizeof buf);
		if (!err && !perfmon_capable()) {
			snprintf(buf, sizeof buf, "this account lacks CAP_PERFMON and CAP_SYS_ADMIN (CapEff in "
			         "/proc/self/status)");
			err = -EACCES;
		}
		break;
	}
	if (!err) {
		snprintf(why, len, "%s", "");
		return 0;
	}
	snprintf(why, len, "%s %s; here: %s", p->name, imc_sysfs_rule_text(imc_sysfs_pmu_rule(p)), buf);
	return heritage_fail(err, "imc: %s", why);
}

/* ---- counting through perf_event ------------------------------------------ */

static int perf_open(struct perf_event_attr *a, int pid, int cpu)
{
	return (int)syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static int open_failed(const struct imc_sysfs_pmu *p, const struct imc_sysfs_event *e, int cpu, int er)
{
	char what[256];
	if (cpu >= 0)
		snprintf(what, sizeof what, "perf_event_open(%s/%s/ type %u, CPU %d, all tasks)", p->name, e->name, p->type,
		         cpu);
	else
		snprintf(what, sizeof what, "perf_event_open(%s/%s/ type %u, this task)", p->name, e->name, p->type);

	switch (er) {
	case EACCES:
	case EPERM: {
		enum imc_sysfs_rule r = imc_sysfs_pmu_rule(p);
		struct heritage_probe_result res;
		memset(&res, 0, sizeof res);
		if (r == IMC_SYSFS_RULE_PERFMON) {
			/* No sysctl allows it: only the capability (or a
			 * seccomp profile that lets the call through). */
			return heritage_fail(-er, "imc: %s: %s; %s %s%s", what, strerror(er), p->name,
			                     imc_sysfs_rule_text(r),
			                     heritage_seccomp_filtered() ? ", and a seccomp filter is installed here" : "");
		}
		heritage_probe_refused(&res, er, what, r == IMC_SYSFS_RULE_CPU_WIDE ? 0 : 2);
		return heritage_fail(res.err, "imc: %s; %s counts %s; allowed by %s", res.evidence, p->name,
		                     r == IMC_SYSFS_RULE_CPU_WIDE ? "whole CPUs" : "this task", res.allowed_by);
	}
	case EBUSY:
		return heritage_fail(-EBUSY, "imc: %s: %s: core_imc, thread_imc and trace_imc exclude each other "
		                     "system-wide (the hardware is in accumulation or trace mode for all of them) and "
		                     "another of them is in use", what, strerror(er));
	case ENOENT:
		return heritage_fail(-ENOENT, "imc: %s: %s: this kernel has no such PMU or event (is %s this "
		                     "machine's sysfs?)", what, strerror(er), p->dir);
	case ENODEV:
		return heritage_fail(-ENODEV, "imc: %s: %s: no IMC counters for that CPU (offline, or not on a "
		                     "chip with IMC)", what, strerror(er));
	case EINVAL:
		return heritage_fail(-EINVAL, "imc: %s: %s: the kernel refused the event (config %#llx beyond the "
		                     "counter page, or a per-task open of a nest/core PMU)", what, strerror(er),
		                     (unsigned long long)e->config[0]);
	default:
		return heritage_fail(-er, "imc: %s: %s", what, strerror(er));
	}
}

int imc_sysfs_counter_open(struct imc_sysfs_counter *c, const struct imc_sysfs_pmu *p,
                           const struct imc_sysfs_event *e, int cpu)
{
	struct perf_event_attr a;
	int pid;

	memset(c, 0, sizeof *c);
	c->fd = -1;
	switch (p->domain) {
	case IMC_SYSFS_TRACE:
		return heritage_fail(-ENOTSUP, "imc: %s/%s/ samples into memory: the kernel accepts it only as a "
		                     "sampling event (sample_period != 0), which is the trace backend's, not a counter",
		                     p->name, e->name);
	case IMC_SYSFS_THREAD:
		if (cpu >= 0)
			return heritage_fail(-EINVAL, "imc: %s/%s/ counts a task, not a CPU (:cpu= is for nest and core "
			                     "events)", p->name, e->name);
		pid = 0;
		break;
	default:
		/* nest/core PMUs have no task context (perf_invalid_context)
		 * and refuse cpu < 0: counted per CPU, for all tasks. */
		if (cpu < 0) {
			if (p->ncpus == 0)
				return heritage_fail(-ENODEV, "imc: %s/%s/: %s/cpumask is empty: no CPU counts it (all "
				                     "its CPUs offline?)", p->name, e->name, p->dir);
			cpu = p->cpus[0];
		}
		pid = -1;
		break;
	}
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = p->type;
	a.config = e->config[0];
	a.config1 = e->config[1];
	a.config2 = e->config[2];
	a.disabled = 1;
	/* The IMC PMUs are PERF_PMU_CAP_NO_EXCLUDE: any exclude bit is
	 * EINVAL (their _USER/_KERNEL events do the filtering).  A generic
	 * type standing in for them counts at user level, which is what an
	 * ordinary account may count of its own task. */
	if (p->type < PERF_TYPE_MAX) {
		a.exclude_kernel = 1;
		a.exclude_hv = 1;
	}
	int fd = perf_open(&a, pid, cpu);
	if (fd < 0)
		return open_failed(p, e, cpu >= 0 && pid < 0 ? cpu : -1, errno);
	c->fd = fd;
	c->pid = pid;
	c->cpu = pid < 0 ? cpu : -1;
	c->pmu = p;
	c->event = e;
	return 0;
}

static int counter_io(struct imc_sysfs_counter *c, const char *what, int r)
{
	if (r == 0)
		return 0;
	int e = errno;
	return heritage_fail(-e, "imc: %s %s/%s/: %s", what, c->pmu->name, c->event->name, strerror(e));
}

static int read_fd(struct imc_sysfs_counter *c, uint64_t *v)
{
	ssize_t r = read(c->fd, v, sizeof *v);
	if (r == (ssize_t)sizeof *v)
		return 0;
	if (r >= 0)
		errno = EIO;
	return counter_io(c, "read", -1);
}

int imc_sysfs_counter_start(struct imc_sysfs_counter *c)
{
	if (c->fd < 0)
		return heritage_fail(-EBADF, "imc: start of a counter that is not open");
	int err = counter_io(c, "reset", ioctl(c->fd, PERF_EVENT_IOC_RESET, 0) < 0 ? -1 : 0);
	if (!err)
		err = counter_io(c, "enable", ioctl(c->fd, PERF_EVENT_IOC_ENABLE, 0) < 0 ? -1 : 0);
	if (!err) {
		c->running = 1;
		c->at_stop = 0;
	}
	return err;
}

int imc_sysfs_counter_read(struct imc_sysfs_counter *c, uint64_t *count)
{
	if (c->fd < 0)
		return heritage_fail(-EBADF, "imc: read of a counter that is not open");
	if (!c->running) {
		*count = c->at_stop;
		return 0;
	}
	return read_fd(c, count);
}

int imc_sysfs_counter_stop(struct imc_sysfs_counter *c, uint64_t *count)
{
	if (c->fd < 0)
		return heritage_fail(-EBADF, "imc: stop of a counter that is not open");
	if (c->running) {
		int err = counter_io(c, "disable", ioctl(c->fd, PERF_EVENT_IOC_DISABLE, 0) < 0 ? -1 : 0);
		if (!err)
			err = read_fd(c, &c->at_stop);
		if (err)
			return err;
		c->running = 0;
	}
	if (count)
		*count = c->at_stop;
	return 0;
}

void imc_sysfs_counter_close(struct imc_sysfs_counter *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->running = 0;
}
