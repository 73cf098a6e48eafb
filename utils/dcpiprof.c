/*
 * dcpiprof: ProfileMe samples per procedure of the named images, or per
 * image, in sample-set columns (dcpiprof(1); DCPI's dcpiprof and
 * dcpiprofileme(1)).
 *
 *   dcpiprof [-db DIR] [-epoch E] [-i] [-pm COLUMNS] [-sp COLUMN] [-s COLUMN]
 *            [-keep P] [-csl | --json] [-no_header] [IMAGE...]
 *
 * As DCPI's: the numbers are samples (its dcpiprof printed "the number of
 * samples for each listed event type or, for the ratio of two event types,
 * the ratio"), each with its % of the column's total and a cumulative %,
 * sorted in descending order of the sort column; without an image it lists
 * every image of the epoch, per image.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/dcpi_common.h"
#include "profileme/pm_symbols.h"

static const char *prog = "dcpiprof";

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: dcpiprof [-db DIR] [-epoch E] [-i] [-pm COLUMNS] [-sp COLUMN] [-s COLUMN] [-keep P]\n"
	        "                [-csl | --json] [-no_header] [IMAGE...]\n"
	        "ProfileMe samples per procedure of each IMAGE (a path), or per image (-i, or no IMAGE:\n"
	        "every image of the epoch), from the profile database profileme-run wrote.\n"
	        "\n"
	        "  -db DIR       the database (default: $DCPIDB)\n"
	        "  -epoch E      the epoch yyyymmddhhmmss (default: the latest)\n"
	        "  -i            one row per image instead of per procedure\n"
	        "  -pm COLUMNS   columns in the sample-set language of dcpiprofileme(1):\n"
	        "                  set ::= any | [!|/]bit ^ ...   (trap = !notrap)\n"
	        "                  set:counter  the counter's sum (retdelay, inflight)\n"
	        "                  a::b  a ratio column;  c1+c2  several columns;  default = any\n"
	        "                (default: default)\n"
	        "  -sp COLUMN    sort by COLUMN, descending (shown first when not in -pm); default the first\n"
	        "  -s COLUMN     the same as -sp\n"
	        "  -keep P       list just enough rows for P %% of the sort column\n"
	        "  -csl          comma-separated column names and data only\n"
	        "  --json        one JSON object (columns, rows, profiles)\n"
	        "  -no_header    no header lines\n"
	        "  -h, --help    this text\n"
	        "Counts are samples (estimate = samples x the period in the header); set:counter is a sum;\n"
	        "a::b is a ratio (no %%).  A column naming a field the profile's backend does not produce is\n"
	        "refused.  Exit status: 0, 1 (no database, unknown image, column not answerable), 2 usage.\n");
}

struct row {
	const char *proc;  /* NULL in per-image rows */
	unsigned image;    /* index into the profiles */
	uint64_t start;    /* the procedure's vaddr; UINT64_MAX for unknown */
	uint64_t num[PM_MAX_COLUMNS], den[PM_MAX_COLUMNS];
};

struct report {
	struct dcpi_cols cols;
	unsigned sort;
	struct pm_db_profile **p;
	unsigned np;
	struct row *row;
	size_t nrows, cap;
	uint64_t tnum[PM_MAX_COLUMNS], tden[PM_MAX_COLUMNS];
};

static struct row *new_row(struct report *r)
{
	if (r->nrows == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct row *n = realloc(r->row, cap * sizeof *n);
		if (!n) {
			fprintf(stderr, "%s: out of memory\n", prog);
			exit(DCPI_FAIL);
		}
		r->row = n;
		r->cap = cap;
	}
	struct row *w = &r->row[r->nrows++];
	memset(w, 0, sizeof *w);
	return w;
}

static void add_pc(struct report *r, struct row *w, const struct pm_db_profile *p, long pcrow)
{
	for (unsigned c = 0; c < r->cols.c.n; c++) {
		uint64_t n, d;
		dcpi_col_value(&r->cols.c.col[c], p, pcrow, &n, &d);
		w->num[c] += n;
		w->den[c] += d;
	}
}

/* One row per procedure of profile i; PCs in no function go to "unknown". */
static void by_procedure(struct report *r, unsigned i, const char *path)
{
	const struct pm_db_profile *p = r->p[i];
	struct pm_symbols *s = NULL;
	char why[512];
	if (pm_symbols_open(path, &s, why, sizeof why))
		fprintf(stderr, "%s: warning: %s: every sample is in \"unknown\"\n", prog, why);
	else if (pm_symbols_note(s))
		fprintf(stderr, "%s: note: %s\n", prog, pm_symbols_note(s));
	size_t first = r->nrows;
	struct row *last = NULL;
	for (size_t k = 0; k < p->nrows; k++) {
		struct pm_func f;
		int known = s && pm_symbols_func_at(s, p->pc[k], &f) == 0;
		uint64_t start = known ? f.start : UINT64_MAX;
		if (!last || last->start != start) {
			last = NULL;
			for (size_t j = first; j < r->nrows && !last; j++)
				if (r->row[j].start == start)
					last = &r->row[j];
			if (!last) {
				last = new_row(r);
				last->image = i;
				last->start = start;
				last->proc = known ? strdup(f.name) : "unknown";
			}
		}
		add_pc(r, last, p, (long)k);
	}
	pm_symbols_close(s);
}

static double ratio(uint64_t n, uint64_t d)
{
	return d ? (double)n / (double)d : 0;
}

static const struct report *sort_report;
static int cmp_rows(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	const struct report *r = sort_report;
	unsigned c = r->sort;
	if (r->cols.c.col[c].ratio) {
		double vx = ratio(x->num[c], x->den[c]), vy = ratio(y->num[c], y->den[c]);
		if (vx != vy)
			return vx > vy ? -1 : 1;
	} else if (x->num[c] != y->num[c]) {
		return x->num[c] > y->num[c] ? -1 : 1;
	}
	if (x->image != y->image)
		return x->image < y->image ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0;
}

static const char *kind(const struct pm_column *c)
{
	return c->ratio ? "ratio" : c->num.counter >= 0 ? "sum" : "samples";
}

static const char *image_label(const struct report *r, const struct row *w, int per_image)
{
	return per_image ? r->p[w->image]->path : r->p[w->image]->name;
}

static void print_text(const struct report *r, size_t shown, int per_image, int header, const struct dcpi_db *d)
{
	unsigned nc = r->cols.c.n;
	if (header) {
		dcpi_print_profiles(stdout, d, r->p, r->np);
		printf("\n%-32s %14s  %s\n", "Column", "Total", "Kind");
		for (unsigned c = 0; c < nc; c++) {
			const struct pm_column *col = &r->cols.c.col[c];
			if (col->ratio)
				printf("%-32s %14.3f  ratio %" PRIu64 "/%" PRIu64 "%s\n", r->cols.label[c], ratio(r->tnum[c], r->tden[c]),
				       r->tnum[c], r->tden[c], c == r->sort ? "  (sorted by)" : "");
			else
				printf("%-32s %14" PRIu64 "  %s%s\n", r->cols.label[c], r->tnum[c],
				       col->num.counter >= 0 ? "sum of the counter" : "samples", c == r->sort ? "  (sorted by)" : "");
		}
		printf("\n");
		dcpi_print_units(stdout, r->p, r->np);
		printf("===========================================================\n");
	}
	int w[PM_MAX_COLUMNS];
	for (unsigned c = 0; c < nc; c++) {
		int l = (int)strlen(r->cols.label[c]);
		w[c] = l > 10 ? l : 10;
		printf("%*s%s", w[c], r->cols.label[c], r->cols.c.col[c].ratio ? "  " : "       %    cum%  ");
	}
	printf("%s%s\n", per_image ? "" : "procedure                       ", "image");
	uint64_t cum[PM_MAX_COLUMNS] = { 0 }; /* counts, so cum% is exact at 100 */
	for (size_t k = 0; k < shown; k++) {
		const struct row *x = &r->row[k];
		for (unsigned c = 0; c < nc; c++) {
			if (r->cols.c.col[c].ratio) {
				if (x->den[c])
					printf("%*.3f  ", w[c], ratio(x->num[c], x->den[c]));
				else
					printf("%*s  ", w[c], "-");
			} else {
				cum[c] += x->num[c];
				printf("%*" PRIu64 " %6.2f%% %6.2f%%  ", w[c], x->num[c], pct(x->num[c], r->tnum[c]), pct(cum[c], r->tnum[c]));
			}
		}
		if (!per_image)
			printf("%-31s ", x->proc);
		printf("%s\n", image_label(r, x, per_image));
	}
}

static void print_csl(const struct report *r, size_t shown, int per_image)
{
	unsigned nc = r->cols.c.n;
	for (unsigned c = 0; c < nc; c++) {
		char l[160];
		dcpi_csv_str(stdout, r->cols.label[c]);
		if (!r->cols.c.col[c].ratio) {
			snprintf(l, sizeof l, "%s %%", r->cols.label[c]);
			putchar(',');
			dcpi_csv_str(stdout, l);
			snprintf(l, sizeof l, "%s cum%%", r->cols.label[c]);
			putchar(',');
			dcpi_csv_str(stdout, l);
		}
		putchar(',');
	}
	printf("%simage\n", per_image ? "" : "procedure,");
	uint64_t cum[PM_MAX_COLUMNS] = { 0 }; /* counts, so cum% is exact at 100 */
	for (size_t k = 0; k < shown; k++) {
		const struct row *x = &r->row[k];
		for (unsigned c = 0; c < nc; c++) {
			if (r->cols.c.col[c].ratio) {
				if (x->den[c])
					printf("%.6f,", ratio(x->num[c], x->den[c]));
				else
					printf(",");
			} else {
				cum[c] += x->num[c];
				printf("%" PRIu64 ",%.2f,%.2f,", x->num[c], pct(x->num[c], r->tnum[c]), pct(cum[c], r->tnum[c]));
			}
		}
		if (!per_image) {
			dcpi_csv_str(stdout, x->proc);
			putchar(',');
		}
		dcpi_csv_str(stdout, image_label(r, x, per_image));
		putchar('\n');
	}
}

static void print_json(const struct report *r, size_t shown, int per_image, const struct dcpi_db *d)
{
	unsigned nc = r->cols.c.n;
	printf("{\"tool\":\"dcpiprof\",\"db\":");
	dcpi_json_str(stdout, d->db);
	printf(",\"epoch\":");
	dcpi_json_str(stdout, d->epoch);
	printf(",\"by\":\"%s\",\"counts\":\"samples\",\"profiles\":[", per_image ? "image" : "procedure");
	for (unsigned i = 0; i < r->np; i++) {
		const struct pm_db_profile *p = r->p[i];
		printf("%s{\"path\":", i ? "," : "");
		dcpi_json_str(stdout, p->path);
		printf(",\"name\":");
		dcpi_json_str(stdout, p->name);
		printf(",\"backend\":");
		dcpi_json_str(stdout, p->backend);
		printf(",\"period\":%" PRIu64 ",\"unit\":", p->period);
		dcpi_json_str(stdout, p->unit);
		printf(",\"fields\":[");
		const char *sep = "";
		for (int f = 0; f < PM_NFIELDS; f++)
			if (p->fields & PM_FIELD_BIT(f)) {
				printf("%s\"%s\"", sep, pm_fields[f].name);
				sep = ",";
			}
		printf("]}");
	}
	printf("],\"sort\":%u,\"columns\":[", r->sort);
	for (unsigned c = 0; c < nc; c++) {
		char canon[256];
		pm_column_format(&r->cols.c.col[c], canon, sizeof canon);
		printf("%s{\"label\":", c ? "," : "");
		dcpi_json_str(stdout, r->cols.label[c]);
		printf(",\"canonical\":");
		dcpi_json_str(stdout, canon);
		printf(",\"kind\":\"%s\",\"total\":", kind(&r->cols.c.col[c]));
		if (r->cols.c.col[c].ratio)
			printf("%.6f,\"num\":%" PRIu64 ",\"den\":%" PRIu64 "}", ratio(r->tnum[c], r->tden[c]), r->tnum[c], r->tden[c]);
		else
			printf("%" PRIu64 "}", r->tnum[c]);
	}
	printf("],\"rows\":[");
	uint64_t cum[PM_MAX_COLUMNS] = { 0 }; /* counts, so cum% is exact at 100 */
	for (size_t k = 0; k < shown; k++) {
		const struct row *x = &r->row[k];
		printf("%s\n{", k ? "," : "");
		if (!per_image) {
			printf("\"procedure\":");
			dcpi_json_str(stdout, x->proc);
			if (x->start != UINT64_MAX)
				printf(",\"start\":\"0x%" PRIx64 "\"", x->start);
			printf(",");
		}
		printf("\"image\":");
		dcpi_json_str(stdout, r->p[x->image]->path);
		printf(",\"values\":[");
		for (unsigned c = 0; c < nc; c++) {
			if (r->cols.c.col[c].ratio)
				x->den[c] ? printf("%s%.6f", c ? "," : "", ratio(x->num[c], x->den[c])) : printf("%snull", c ? "," : "");
			else
				printf("%s%" PRIu64, c ? "," : "", x->num[c]);
		}
		printf("],\"percent\":[");
		for (unsigned c = 0; c < nc; c++) {
			if (r->cols.c.col[c].ratio) {
				printf("%snull", c ? "," : "");
			} else {
				cum[c] += x->num[c];
				printf("%s%.4f", c ? "," : "", pct(x->num[c], r->tnum[c]));
			}
		}
		printf("],\"cumulative\":[");
		for (unsigned c = 0; c < nc; c++)
			r->cols.c.col[c].ratio ? printf("%snull", c ? "," : "") : printf("%s%.4f", c ? "," : "", pct(cum[c], r->tnum[c]));
		printf("]}");
	}
	printf("]}\n");
}

int main(int argc, char **argv)
{
	const char *db = NULL, *epoch = NULL, *pm = "default", *sp = NULL;
	int per_image = 0, csl = 0, json = 0, header = 1;
	double keep = 100;
	/* What main allocates lives until the process exits, through the
	 * statics here (images, files, the report): LeakSanitizer took it
	 * for leaks from main's frame (make check-sanitize, dcpiprof_run.test:
	 * 26916 bytes in 21 allocations). */
	static const char **images;
	images = calloc((size_t)argc, sizeof *images);
	unsigned nimages = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int more = i + 1 < argc;
#define VALUE(opt, var)                                                               \
	if (strcmp(a, opt) == 0) {                                                    \
		if (!more) {                                                          \
			fprintf(stderr, "%s: %s needs a value\n", prog, opt);          \
			return DCPI_USAGE;                                            \
		}                                                                     \
		var = argv[++i];                                                      \
		continue;                                                             \
	}
		VALUE("-db", db)
		VALUE("-epoch", epoch)
		VALUE("-pm", pm)
		VALUE("-sp", sp)
		VALUE("-s", sp)
		if (strcmp(a, "-keep") == 0) {
			char *end;
			if (!more) {
				fprintf(stderr, "%s: -keep needs a value\n", prog);
				return DCPI_USAGE;
			}
			keep = strtod(argv[++i], &end);
			if (*end || !(keep >= 0 && keep <= 100)) {
				fprintf(stderr, "%s: -keep %s: a percentage 0-100\n", prog, argv[i]);
				return DCPI_USAGE;
			}
		} else if (strcmp(a, "-i") == 0) {
			per_image = 1;
		} else if (strcmp(a, "-csl") == 0) {
			csl = 1;
		} else if (strcmp(a, "--json") == 0 || strcmp(a, "-json") == 0) {
			json = 1;
		} else if (strcmp(a, "-no_header") == 0) {
			header = 0;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0 || strcmp(a, "-help") == 0) {
			usage(stdout);
			return DCPI_OK;
		} else if (strcmp(a, "--") == 0) {
			while (++i < argc)
				images[nimages++] = argv[i];
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "%s: unknown option %s (dcpiprof --help)\n", prog, a);
			return DCPI_USAGE;
		} else {
			images[nimages++] = a;
		}
	}
	if (csl && json) {
		fprintf(stderr, "%s: -csl or --json, not both\n", prog);
		return DCPI_USAGE;
	}
	static struct report r;
	int rc = dcpi_cols_parse(&r.cols, pm, "-pm", prog);
	if (rc)
		return rc;
	if (sp) {
		struct dcpi_cols s;
		if ((rc = dcpi_cols_parse(&s, sp, "-sp", prog)) || (rc = dcpi_cols_sort_by(&r.cols, &s, &r.sort, prog)))
			return rc;
	}
	struct dcpi_db d;
	if ((rc = dcpi_db_open(&d, db, epoch, prog)))
		return rc;

	/* The profiles: each named image, else every image of the epoch. */
	char why[1024];
	static char **files;
	unsigned nfiles = nimages;
	if (!nimages) {
		if (pm_db_list(d.dir, &files, why, sizeof why)) {
			fprintf(stderr, "%s: %s\n", prog, why);
			return DCPI_FAIL;
		}
		for (nfiles = 0; files[nfiles]; nfiles++)
			;
		per_image = 1; /* DCPI: with no image named, behave as -i */
	}
	r.p = calloc(nfiles + 1, sizeof *r.p);
	for (unsigned i = 0; i < nfiles; i++) {
		char file[4096];
		const char *f = files ? files[i] : file;
		if (!files && pm_db_find(d.dir, images[i], file, sizeof file, why, sizeof why)) {
			fprintf(stderr, "%s: %s\n", prog, why);
			return DCPI_FAIL;
		}
		if (pm_db_load(f, &r.p[r.np], why, sizeof why)) {
			fprintf(stderr, "%s: %s\n", prog, why);
			return DCPI_FAIL;
		}
		if ((rc = dcpi_cols_check(&r.cols, r.p[r.np], prog)))
			return rc;
		r.np++;
	}
	if (!r.np) {
		fprintf(stderr, "%s: no image profile in %s\n", prog, d.dir);
		return DCPI_FAIL;
	}

	for (unsigned i = 0; i < r.np; i++) {
		if (per_image) {
			struct row *w = new_row(&r);
			w->image = i;
			add_pc(&r, w, r.p[i], -1);
		} else {
			dcpi_check_image(r.p[i], images[i], prog);
			by_procedure(&r, i, images[i]);
		}
	}
	for (size_t k = 0; k < r.nrows; k++)
		for (unsigned c = 0; c < r.cols.c.n; c++) {
			r.tnum[c] += r.row[k].num[c];
			r.tden[c] += r.row[k].den[c];
		}
	sort_report = &r;
	qsort(r.row, r.nrows, sizeof *r.row, cmp_rows);

	/* -keep: just enough rows for that share of the sort column. */
	size_t shown = r.nrows;
	if (keep < 100 && !r.cols.c.col[r.sort].ratio) {
		double cum = 0;
		for (shown = 0; shown < r.nrows && cum < keep; shown++)
			cum += pct(r.row[shown].num[r.sort], r.tnum[r.sort]);
	}
	if (json)
		print_json(&r, shown, per_image, &d);
	else if (csl)
		print_csl(&r, shown, per_image);
	else
		print_text(&r, shown, per_image, header, &d);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: writing the output: %s\n", prog, strerror(errno));
		return DCPI_FAIL;
	}
	return DCPI_OK;
}
