/*
 * dcpilist: ProfileMe samples per instruction of one procedure (dcpilist(1);
 * DCPI's dcpilist and dcpiprofileme(1)).
 *
 *   dcpilist [-db DIR] [-epoch E] [-pm COLUMNS] [-asm | -source | -both]
 *            [-csl | --json] [-no_header] PROC IMAGE
 *
 * The procedure is found in IMAGE's symbol table (pm_symbols.h, elfutils),
 * its bytes read from the file and disassembled with capstone, one row per
 * instruction with the counts the profile has at its address and, where the
 * DWARF line table knows it, its source file:line.  A sample at an address
 * that is not the start of a decoded instruction is listed on a row of its
 * own, never dropped.
 */
#include <capstone/capstone.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/dcpi_common.h"
#include "profileme/pm_symbols.h"

static const char *prog = "dcpilist";

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: dcpilist [-db DIR] [-epoch E] [-pm COLUMNS] [-asm | -source | -both]\n"
	        "                [-csl | --json] [-no_header] PROC IMAGE\n"
	        "ProfileMe samples for each instruction of procedure PROC of IMAGE (a path), from the\n"
	        "profile database profileme-run wrote.\n"
	        "\n"
	        "  -db DIR       the database (default: $DCPIDB)\n"
	        "  -epoch E      the epoch yyyymmddhhmmss (default: the latest)\n"
	        "  -pm COLUMNS   columns in the sample-set language of dcpiprofileme(1), e.g.\n"
	        "                retired, !notrap+retired, retired:retdelay, default+retired:retdelay::retired\n"
	        "                (default: default, every sample)\n"
	        "  -asm          instructions with their source file:line (the default)\n"
	        "  -both         the source line's text before the instructions of each line\n"
	        "  -source       one row per source line (its instructions' counts summed)\n"
	        "  -csl          comma-separated column names and data only\n"
	        "  --json        one JSON object\n"
	        "  -no_header    no header lines\n"
	        "  -h, --help    this text\n"
	        "Counts are samples (estimate = samples x the period in the header); set:counter is a sum;\n"
	        "a::b is a ratio.  Exit status: 0, 1 (no database, unknown image or procedure, column not\n"
	        "answerable), 2 usage.\n");
}

enum mode { ASM, BOTH, SOURCE };

struct line {
	uint64_t addr;
	unsigned size;       /* 0: a sample address inside an instruction */
	char text[224];      /* the instruction, or a note */
	const char *file;    /* source, or NULL */
	int lineno;
	uint64_t num[PM_MAX_COLUMNS], den[PM_MAX_COLUMNS];
	int has_row;
};

struct listing {
	struct dcpi_cols cols;
	const struct pm_db_profile *p;
	struct line *l;
	size_t n, cap;
	uint64_t tnum[PM_MAX_COLUMNS], tden[PM_MAX_COLUMNS];
	uint64_t inum[PM_MAX_COLUMNS]; /* the image's totals, for % */
};

static struct line *new_line(struct listing *ls)
{
	if (ls->n == ls->cap) {
		size_t cap = ls->cap ? ls->cap * 2 : 128;
		struct line *n = realloc(ls->l, cap * sizeof *n);
		if (!n) {
			fprintf(stderr, "%s: out of memory\n", prog);
			exit(DCPI_FAIL);
		}
		ls->l = n;
		ls->cap = cap;
	}
	struct line *x = &ls->l[ls->n++];
	memset(x, 0, sizeof *x);
	return x;
}

static void add_row(struct listing *ls, struct line *x, long r)
{
	x->has_row = 1;
	for (unsigned c = 0; c < ls->cols.c.n; c++) {
		uint64_t n, d;
		dcpi_col_value(&ls->cols.c.col[c], ls->p, r, &n, &d);
		x->num[c] += n;
		x->den[c] += d;
		ls->tnum[c] += n;
		ls->tden[c] += d;
	}
}

/* Every instruction of f, plus a row for each sample address capstone did
 * not start an instruction at. */
static int disassemble(struct listing *ls, const struct pm_symbols *s, const struct pm_func *f)
{
	uint8_t *code = malloc(f->size);
	long got = code ? pm_symbols_code(s, f->start, code, f->size) : -ENOMEM;
	if (got < 0) {
		fprintf(stderr, "%s: the bytes of %s at 0x%" PRIx64 " are not in the file's code: %s\n", prog, f->name,
		        f->start, strerror((int)-got));
		free(code);
		return DCPI_FAIL;
	}
	csh h;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK) {
		fprintf(stderr, "%s: capstone: cannot open an x86-64 disassembler\n", prog);
		free(code);
		return DCPI_FAIL;
	}
	cs_insn *insn = cs_malloc(h);
	const uint8_t *cp = code;
	size_t left = (size_t)got;
	uint64_t addr = f->start;
	/* rows of the profile inside f, in order */
	long r = 0;
	while ((size_t)r < ls->p->nrows && ls->p->pc[r] < f->start)
		r++;
	while (addr < f->start + f->size) {
		uint64_t at = addr;
		int ok = left && cs_disasm_iter(h, &cp, &left, &addr, insn);
		unsigned size = ok ? insn->size : 1;
		/* samples inside the previous instruction's bytes */
		while ((size_t)r < ls->p->nrows && ls->p->pc[r] < at) {
			struct line *x = new_line(ls);
			x->addr = ls->p->pc[r];
			snprintf(x->text, sizeof x->text, "(inside the instruction before: not an instruction start)");
			if (ls->n >= 2) { /* the source line of the instruction it is in */
				x->file = ls->l[ls->n - 2].file;
				x->lineno = ls->l[ls->n - 2].lineno;
			}
			add_row(ls, x, r++);
		}
		struct line *x = new_line(ls);
		x->addr = at;
		x->size = size;
		if (ok)
			snprintf(x->text, sizeof x->text, "%s%s%s", insn->mnemonic, insn->op_str[0] ? " " : "", insn->op_str);
		else
			snprintf(x->text, sizeof x->text, "(bad) .byte 0x%02x", at - f->start < (uint64_t)got ? code[at - f->start] : 0);
		if (!ok) {
			addr = at + 1;
			if (left) {
				cp++;
				left--;
			}
		}
		pm_symbols_line_at(s, at, &x->file, &x->lineno);
		if ((size_t)r < ls->p->nrows && ls->p->pc[r] == at)
			add_row(ls, x, r++);
	}
	while ((size_t)r < ls->p->nrows && ls->p->pc[r] < f->start + f->size) {
		struct line *x = new_line(ls);
		x->addr = ls->p->pc[r];
		snprintf(x->text, sizeof x->text, "(inside the last instruction)");
		if (ls->n >= 2) {
			x->file = ls->l[ls->n - 2].file;
			x->lineno = ls->l[ls->n - 2].lineno;
		}
		add_row(ls, x, r++);
	}
	cs_free(insn, 1);
	cs_close(&h);
	free(code);
	return DCPI_OK;
}

static double ratio(uint64_t n, uint64_t d)
{
	return d ? (double)n / (double)d : 0;
}

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0;
}

static const struct pm_symbols *symbols;
static uint64_t symbols_at; /* an address of the unit, for its compilation directory */

/* Line n of file (1-based), or NULL.  A relative name is tried in the
 * unit's compilation directory, then as it is. */
static const char *source_text(const char *file, int n, char *buf, size_t len)
{
	char full[4096];
	const char *dir = file[0] != '/' && symbols ? pm_symbols_comp_dir(symbols, symbols_at) : NULL;
	if (dir && (size_t)snprintf(full, sizeof full, "%s/%s", dir, file) < sizeof full && access(full, R_OK) == 0)
		file = full;
	static FILE *f;
	static char *open_name;
	static int at;
	if (!open_name || strcmp(open_name, file) != 0 || n <= at) {
		if (f)
			fclose(f);
		free(open_name);
		open_name = strdup(file);
		f = fopen(file, "re");
		at = 0;
	}
	if (!f)
		return NULL;
	while (at < n) {
		if (!fgets(buf, (int)len, f))
			return NULL;
		if (strchr(buf, '\n') || feof(f))
			at++;
	}
	buf[strcspn(buf, "\n")] = 0;
	return buf;
}

/* -source: one line per (file, line), in order of first appearance. */
static void merge_by_source(struct listing *ls)
{
	size_t m = 0;
	for (size_t i = 0; i < ls->n; i++) {
		struct line *x = &ls->l[i];
		size_t j;
		for (j = 0; j < m; j++) {
			struct line *y = &ls->l[j];
			if ((x->file && y->file && strcmp(x->file, y->file) == 0 && x->lineno == y->lineno) ||
			    (!x->file && !y->file))
				break;
		}
		if (j == m) {
			ls->l[m] = *x;
			if (!x->file)
				snprintf(ls->l[m].text, sizeof ls->l[m].text, "(no source line)");
			m++;
			continue;
		}
		for (unsigned c = 0; c < ls->cols.c.n; c++) {
			ls->l[j].num[c] += x->num[c];
			ls->l[j].den[c] += x->den[c];
		}
		ls->l[j].has_row |= x->has_row;
	}
	ls->n = m;
}

static void where(const struct line *x, char *buf, size_t len)
{
	if (x->file) {
		const char *b = strrchr(x->file, '/');
		snprintf(buf, len, "%s:%d", b ? b + 1 : x->file, x->lineno);
	} else {
		snprintf(buf, len, "-");
	}
}

static void print_text(const struct listing *ls, const struct pm_func *f, enum mode mode)
{
	unsigned nc = ls->cols.c.n;
	int w[PM_MAX_COLUMNS];
	for (unsigned c = 0; c < nc; c++) {
		int l = (int)strlen(ls->cols.label[c]);
		w[c] = l > 8 ? l : 8;
		printf("%*s%s", w[c], ls->cols.label[c], ls->cols.c.col[c].ratio ? "  " : "       %  ");
	}
	printf(mode == SOURCE ? "%-24s %s\n" : "%-18s %-24s %s\n", mode == SOURCE ? "source" : "address",
	       mode == SOURCE ? "text" : "source", "instruction");
	const char *last_file = NULL;
	int last_line = -1;
	char buf[512], loc[256];
	for (size_t i = 0; i < ls->n; i++) {
		const struct line *x = &ls->l[i];
		where(x, loc, sizeof loc);
		if (mode == BOTH && x->file && (x->lineno != last_line || !last_file || strcmp(last_file, x->file) != 0)) {
			const char *t = source_text(x->file, x->lineno, buf, sizeof buf);
			printf("# %s: %s\n", loc, t ? t : "(source file not readable)");
			last_file = x->file;
			last_line = x->lineno;
		}
		for (unsigned c = 0; c < nc; c++) {
			if (ls->cols.c.col[c].ratio)
				x->den[c] ? printf("%*.3f  ", w[c], ratio(x->num[c], x->den[c])) : printf("%*s  ", w[c], "-");
			else
				printf("%*" PRIu64 " %6.2f%%  ", w[c], x->num[c], pct(x->num[c], ls->inum[c]));
		}
		if (mode == SOURCE) {
			const char *t = x->file ? source_text(x->file, x->lineno, buf, sizeof buf) : NULL;
			printf("%-24s %s\n", loc, t ? t : x->text);
		} else {
			printf("0x%016" PRIx64 " %-24s %s\n", x->addr, loc, x->text);
		}
	}
	for (unsigned c = 0; c < nc; c++) {
		if (ls->cols.c.col[c].ratio)
			ls->tden[c] ? printf("%*.3f  ", w[c], ratio(ls->tnum[c], ls->tden[c])) : printf("%*s  ", w[c], "-");
		else
			printf("%*" PRIu64 " %6.2f%%  ", w[c], ls->tnum[c], pct(ls->tnum[c], ls->inum[c]));
	}
	printf("total of %s (%% of the image's total)\n", f->name);
}

static void print_csl(const struct listing *ls, enum mode mode)
{
	unsigned nc = ls->cols.c.n;
	printf(mode == SOURCE ? "file,line," : "address,file,line,");
	for (unsigned c = 0; c < nc; c++) {
		dcpi_csv_str(stdout, ls->cols.label[c]);
		putchar(',');
	}
	printf(mode == SOURCE ? "text\n" : "instruction\n");
	char buf[512];
	for (size_t i = 0; i < ls->n; i++) {
		const struct line *x = &ls->l[i];
		if (mode != SOURCE)
			printf("0x%" PRIx64 ",", x->addr);
		if (x->file) {
			dcpi_csv_str(stdout, x->file);
			printf(",%d,", x->lineno);
		} else {
			printf(",,");
		}
		for (unsigned c = 0; c < nc; c++) {
			if (ls->cols.c.col[c].ratio)
				x->den[c] ? printf("%.6f,", ratio(x->num[c], x->den[c])) : printf(",");
			else
				printf("%" PRIu64 ",", x->num[c]);
		}
		const char *t = mode == SOURCE && x->file ? source_text(x->file, x->lineno, buf, sizeof buf) : NULL;
		dcpi_csv_str(stdout, t ? t : x->text);
		putchar('\n');
	}
}

static void print_json(const struct listing *ls, const struct pm_func *f, const char *image, const struct dcpi_db *d,
                       enum mode mode)
{
	unsigned nc = ls->cols.c.n;
	const struct pm_db_profile *p = ls->p;
	printf("{\"tool\":\"dcpilist\",\"db\":");
	dcpi_json_str(stdout, d->db);
	printf(",\"epoch\":");
	dcpi_json_str(stdout, d->epoch);
	printf(",\"image\":");
	dcpi_json_str(stdout, image);
	printf(",\"procedure\":");
	dcpi_json_str(stdout, f->name);
	printf(",\"start\":\"0x%" PRIx64 "\",\"size\":%" PRIu64 ",\"backend\":", f->start, f->size);
	dcpi_json_str(stdout, p->backend);
	printf(",\"period\":%" PRIu64 ",\"unit\":", p->period);
	dcpi_json_str(stdout, p->unit);
	printf(",\"counts\":\"samples\",\"columns\":[");
	for (unsigned c = 0; c < nc; c++) {
		const struct pm_column *col = &ls->cols.c.col[c];
		printf("%s{\"label\":", c ? "," : "");
		dcpi_json_str(stdout, ls->cols.label[c]);
		printf(",\"kind\":\"%s\",\"total\":", col->ratio ? "ratio" : col->num.counter >= 0 ? "sum" : "samples");
		if (col->ratio)
			ls->tden[c] ? printf("%.6f", ratio(ls->tnum[c], ls->tden[c])) : printf("null");
		else
			printf("%" PRIu64 ",\"image_total\":%" PRIu64, ls->tnum[c], ls->inum[c]);
		printf("}");
	}
	printf("],\"rows\":[");
	for (size_t i = 0; i < ls->n; i++) {
		const struct line *x = &ls->l[i];
		printf("%s\n{", i ? "," : "");
		if (mode != SOURCE)
			printf("\"address\":\"0x%" PRIx64 "\",\"size\":%u,\"instruction\":", x->addr, x->size), dcpi_json_str(stdout, x->text),
			    printf(",");
		if (x->file) {
			printf("\"file\":");
			dcpi_json_str(stdout, x->file);
			printf(",\"line\":%d,", x->lineno);
		}
		printf("\"values\":[");
		for (unsigned c = 0; c < nc; c++) {
			if (ls->cols.c.col[c].ratio)
				x->den[c] ? printf("%s%.6f", c ? "," : "", ratio(x->num[c], x->den[c])) : printf("%snull", c ? "," : "");
			else
				printf("%s%" PRIu64, c ? "," : "", x->num[c]);
		}
		printf("]}");
	}
	printf("]}\n");
}

int main(int argc, char **argv)
{
	const char *db = NULL, *epoch = NULL, *pm = "default", *proc = NULL, *image = NULL;
	int csl = 0, json = 0, header = 1;
	enum mode mode = ASM;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int more = i + 1 < argc;
		if ((strcmp(a, "-db") == 0 || strcmp(a, "-epoch") == 0 || strcmp(a, "-pm") == 0) && !more) {
			fprintf(stderr, "%s: %s needs a value\n", prog, a);
			return DCPI_USAGE;
		}
		if (strcmp(a, "-db") == 0)
			db = argv[++i];
		else if (strcmp(a, "-epoch") == 0)
			epoch = argv[++i];
		else if (strcmp(a, "-pm") == 0)
			pm = argv[++i];
		else if (strcmp(a, "-asm") == 0)
			mode = ASM;
		else if (strcmp(a, "-both") == 0)
			mode = BOTH;
		else if (strcmp(a, "-source") == 0)
			mode = SOURCE;
		else if (strcmp(a, "-csl") == 0)
			csl = 1;
		else if (strcmp(a, "--json") == 0 || strcmp(a, "-json") == 0)
			json = 1;
		else if (strcmp(a, "-no_header") == 0)
			header = 0;
		else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0 || strcmp(a, "-help") == 0) {
			usage(stdout);
			return DCPI_OK;
		} else if (a[0] == '-' && a[1] && strcmp(a, "--") != 0) {
			fprintf(stderr, "%s: unknown option %s (dcpilist --help)\n", prog, a);
			return DCPI_USAGE;
		} else {
			if (strcmp(a, "--") == 0 && ++i >= argc)
				break;
			if (!proc)
				proc = argv[i];
			else if (!image)
				image = argv[i];
			else {
				fprintf(stderr, "%s: one procedure and one image (%s is one too many)\n", prog, argv[i]);
				return DCPI_USAGE;
			}
		}
	}
	if (!proc || !image) {
		usage(stderr);
		return DCPI_USAGE;
	}
	if (csl && json) {
		fprintf(stderr, "%s: -csl or --json, not both\n", prog);
		return DCPI_USAGE;
	}
	/* The listing lives until the process exits, through this static:
	 * LeakSanitizer took its lines for a leak from main's frame (make
	 * check-sanitize, dcpilist_examples.test: 266240 bytes). */
	static struct listing ls;
	int rc = dcpi_cols_parse(&ls.cols, pm, "-pm", prog);
	if (rc)
		return rc;
	struct dcpi_db d;
	if ((rc = dcpi_db_open(&d, db, epoch, prog)))
		return rc;
	char why[1024], file[4096];
	struct pm_db_profile *p;
	if (pm_db_find(d.dir, image, file, sizeof file, why, sizeof why) || pm_db_load(file, &p, why, sizeof why)) {
		fprintf(stderr, "%s: %s\n", prog, why);
		return DCPI_FAIL;
	}
	if ((rc = dcpi_cols_check(&ls.cols, p, prog)))
		return rc;
	ls.p = p;
	dcpi_check_image(p, image, prog);
	struct pm_symbols *s;
	if (pm_symbols_open(image, &s, why, sizeof why)) {
		fprintf(stderr, "%s: %s\n", prog, why);
		return DCPI_FAIL;
	}
	struct pm_func f;
	if (pm_symbols_func_named(s, proc, &f)) {
		char near[512];
		if (pm_symbols_near(s, proc, 8, near, sizeof near))
			fprintf(stderr, "%s: no procedure %s in %s; near names: %s\n", prog, proc, image, near);
		else
			fprintf(stderr, "%s: no procedure %s in %s%s%s\n", prog, proc, image, pm_symbols_note(s) ? ": " : "",
			        pm_symbols_note(s) ? pm_symbols_note(s) : "");
		return DCPI_FAIL;
	}
	if (pm_symbols_note(s))
		fprintf(stderr, "%s: note: %s\n", prog, pm_symbols_note(s));
	for (unsigned c = 0; c < ls.cols.c.n; c++) {
		uint64_t n, dd;
		dcpi_col_value(&ls.cols.c.col[c], p, -1, &n, &dd);
		ls.inum[c] = n;
	}
	symbols = s;
	symbols_at = f.start;
	if ((rc = disassemble(&ls, s, &f)))
		return rc;
	if (mode == SOURCE)
		merge_by_source(&ls);
	if (json) {
		print_json(&ls, &f, image, &d, mode);
	} else if (csl) {
		print_csl(&ls, mode);
	} else {
		if (header) {
			dcpi_print_profiles(stdout, &d, &p, 1);
			printf("Procedure %s  0x%" PRIx64 "-0x%" PRIx64 " (%" PRIu64 " bytes)%s\n", f.name, f.start, f.start + f.size,
			       f.size, pm_symbols_has_lines(s) ? "" : "  no source lines (no DWARF)");
			dcpi_print_units(stdout, &p, 1);
			printf("%% is of the image's total for the column.\n");
			printf("===========================================================\n");
		}
		print_text(&ls, &f, mode);
	}
	pm_symbols_close(s);
	pm_db_free(p);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: writing the output: %s\n", prog, strerror(errno));
		return DCPI_FAIL;
	}
	return DCPI_OK;
}
