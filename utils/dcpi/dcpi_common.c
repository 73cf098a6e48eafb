/*
 * Shared by dcpiprof and dcpilist (dcpi_common.h).
 */
#include "dcpi_common.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int dcpi_db_open(struct dcpi_db *d, const char *db_opt, const char *epoch, const char *prog)
{
	char why[512];
	d->db = db_opt ? db_opt : getenv("DCPIDB");
	d->epoch = epoch;
	if (!d->db || !*d->db) {
		fprintf(stderr, "%s: no profile database: give -db DIR or set DCPIDB (the directory profileme-run -o wrote)\n",
		        prog);
		return DCPI_FAIL;
	}
	if (pm_db_epoch_dir(d->db, epoch, d->dir, sizeof d->dir, why, sizeof why)) {
		fprintf(stderr, "%s: %s\n", prog, why);
		return DCPI_FAIL;
	}
	const char *e = strrchr(d->dir, '/');
	d->epoch = e ? e + 1 : d->dir;
	return DCPI_OK;
}

static void trim_label(char *dst, size_t len, const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	/* A backslash before '!' is the shell's (the man page writes \!notrap):
	 * the label shows the set, not the quoting. */
	size_t o = 0;
	for (size_t i = 0; i < n && o + 1 < len; i++)
		if (!(s[i] == '\\' && i + 1 < n && s[i + 1] == '!'))
			dst[o++] = s[i];
	if (len)
		dst[o] = 0;
}

int dcpi_cols_parse(struct dcpi_cols *cols, const char *text, const char *what, const char *prog)
{
	char why[512];
	memset(cols, 0, sizeof *cols);
	if (pm_columns_parse(text, &cols->c, why, sizeof why)) {
		fprintf(stderr, "%s: %s: %s\n", prog, what, why);
		return DCPI_USAGE;
	}
	/* Labels: the user's spelling of each column ('+' only separates
	 * columns in the language), else the canonical text. */
	unsigned pieces = 1;
	for (const char *t = text; (t = strchr(t, '+')); t++)
		pieces++;
	const char *s = text;
	for (unsigned i = 0; i < cols->c.n; i++) {
		const char *e = strchr(s, '+');
		if (pieces == cols->c.n)
			trim_label(cols->label[i], sizeof cols->label[i], s, e ? (size_t)(e - s) : strlen(s));
		else
			pm_column_format(&cols->c.col[i], cols->label[i], sizeof cols->label[i]);
		s = e ? e + 1 : s;
	}
	return DCPI_OK;
}

int dcpi_cols_sort_by(struct dcpi_cols *cols, const struct dcpi_cols *extra, unsigned *index, const char *prog)
{
	char a[256], b[256];
	if (extra->c.n != 1) {
		fprintf(stderr, "%s: the sort column is one column, not %u\n", prog, extra->c.n);
		return DCPI_USAGE;
	}
	pm_column_format(&extra->c.col[0], a, sizeof a);
	for (unsigned i = 0; i < cols->c.n; i++) {
		pm_column_format(&cols->c.col[i], b, sizeof b);
		if (strcmp(a, b) == 0) {
			*index = i;
			return DCPI_OK;
		}
	}
	/* Not among -pm's columns: shown first (dcpiprofileme(1): "-sp
	 * retired:retdelay -pm retired+trap^!dtbmiss" lists the retire delay
	 * along with the two sets). */
	if (cols->c.n == PM_MAX_COLUMNS) {
		fprintf(stderr, "%s: at most %d columns\n", prog, PM_MAX_COLUMNS);
		return DCPI_USAGE;
	}
	memmove(&cols->c.col[1], &cols->c.col[0], cols->c.n * sizeof cols->c.col[0]);
	memmove(cols->label[1], cols->label[0], cols->c.n * sizeof cols->label[0]);
	cols->c.col[0] = extra->c.col[0];
	memcpy(cols->label[0], extra->label[0], sizeof cols->label[0]);
	cols->c.n++;
	*index = 0;
	return DCPI_OK;
}

int dcpi_cols_check(const struct dcpi_cols *cols, const struct pm_db_profile *p, const char *prog)
{
	char why[512];
	for (unsigned i = 0; i < cols->c.n; i++) {
		const struct pm_column *c = &cols->c.col[i];
		if (pm_value_check(&c->num, p->fields, p->backend, why, sizeof why) ||
		    (c->ratio && pm_value_check(&c->den, p->fields, p->backend, why, sizeof why))) {
			fprintf(stderr, "%s: column %s cannot be answered from the profile of %s: %s (its fields: ", prog,
			        cols->label[i], p->path, why);
			const char *sep = "";
			for (int f = 0; f < PM_NFIELDS; f++)
				if (p->fields & PM_FIELD_BIT(f)) {
					fprintf(stderr, "%s%s", sep, pm_fields[f].name);
					sep = ",";
				}
			fprintf(stderr, ")\n");
			return DCPI_FAIL;
		}
	}
	return DCPI_OK;
}

void dcpi_col_value(const struct pm_column *c, const struct pm_db_profile *p, long r, uint64_t *num, uint64_t *den)
{
	*num = pm_db_value(p, r, &c->num);
	*den = c->ratio ? pm_db_value(p, r, &c->den) : 0;
}

void dcpi_print_profiles(FILE *f, const struct dcpi_db *d, struct pm_db_profile *const *p, unsigned n)
{
	fprintf(f, "Database  %s\nEpoch     %s\n", d->db, d->epoch);
	for (unsigned i = 0; i < n; i++) {
		fprintf(f, "Image     %s  backend %s  period %" PRIu64 " %s  fields ", p[i]->path, p[i]->backend, p[i]->period,
		        p[i]->unit);
		const char *sep = "";
		for (int k = 0; k < PM_NFIELDS; k++)
			if (p[i]->fields & PM_FIELD_BIT(k)) {
				fprintf(f, "%s%s", sep, pm_fields[k].name);
				sep = ",";
			}
		fprintf(f, "\n");
	}
}

void dcpi_print_units(FILE *f, struct pm_db_profile *const *p, unsigned n)
{
	/* dcpiprof printed "the number of samples for each listed event type
	 * or, for the ratio of two event types, the ratio": so do we. */
	fprintf(f, "The numbers below are samples in each set (estimate: samples x the image's period");
	if (n)
		fprintf(f, ", %" PRIu64 " %s", p[0]->period, p[0]->unit);
	fprintf(f, "),\nthe counter's sum for set:counter, and num/den for a ratio column num::den.\n");
}

void dcpi_check_image(const struct pm_db_profile *p, const char *path, const char *prog)
{
	struct stat st;
	if (stat(path, &st)) {
		fprintf(stderr, "%s: warning: %s: %s: no symbols\n", prog, path, strerror(errno));
		return;
	}
	char when[32];
	struct tm tm;
	gmtime_r(&st.st_mtime, &tm);
	strftime(when, sizeof when, "%Y%m%d%H%M%S", &tm);
	const char *plus = p->image ? strchr(p->image, '+') : NULL;
	if (!plus)
		return;
	uint64_t size = strtoull(plus + 1, NULL, 16);
	if ((size_t)(plus - p->image) != strlen(when) || strncmp(p->image, when, strlen(when)) != 0 ||
	    size != (uint64_t)st.st_size)
		fprintf(stderr,
		        "%s: warning: %s is not the file profiled (image %s, this file %s+%08" PRIx64
		        "): procedures and instructions may be wrong\n",
		        prog, path, p->image, when, (uint64_t)st.st_size);
}

void dcpi_csv_str(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

void dcpi_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *u = (const unsigned char *)s; *u; u++) {
		if (*u == '"' || *u == '\\')
			fprintf(f, "\\%c", *u);
		else if (*u < 0x20)
			fprintf(f, "\\u%04x", *u);
		else
			fputc(*u, f);
	}
	fputc('"', f);
}
