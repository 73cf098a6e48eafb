/*
 * Unit tests of the profile database reader (src/profileme/pm_db.c) and the
 * symbol reader (pm_symbols.c).
 *
 * The profiles are hand-written in src/tests/pm-fixtures/db/ in the format
 * of pm_db.h.  Expected values are sums written out here from those files'
 * numbers, per class, by hand (see FIXTURE below), not from the code under
 * test.  Malformed files are the good one with one line changed, one case
 * per kind of damage, each with the line number the message must name.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "profileme/pm_db.h"
#include "profileme/pm_symbols.h"

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EPOCH_NEW "20261125130102"
#define EPOCH_OLD "20261125120000"
#define AOUT "a.out_20261125124101+00004e20"

/*
 * FIXTURE (db/20261125130102/a.out_...): fields retired, taken, valid,
 * notrap, dtbmiss, dfaulttrap, retdelay; columns
 *   c1 retired^!taken^valid^notrap^!dtbmiss^!dfaulttrap   4  (a branch not taken)
 *   c2 retired^taken^valid^notrap^!dtbmiss^!dfaulttrap    9  (a branch taken)
 *   c3 retired^valid^notrap^!dtbmiss^!dfaulttrap          14 (taken unknown: not a branch)
 *   c4 !retired^!valid^!notrap^dtbmiss^!dfaulttrap         2  (a DTB miss trap)
 *   c5 !retired^!valid^!notrap^!dtbmiss^dfaulttrap         4  (a data fault)
 *   c6 c3:retdelay 70     c7 c2:retdelay 45
 * rows   0x1000: 0 0 10 2 0 50 0
 *        0x1004: 3 9 0 0 1 0 45
 *        0x1010: 0 0 4 0 3 20 0
 *        0x2000: 1 0 0 0 0 0 0
 */

static char dbdir[PATH_MAX];

static void find_db(void)
{
	const char *roots[] = { getenv("srcdir"), getenv("abs_top_builddir"), "." };
	for (unsigned i = 0; i < sizeof roots / sizeof roots[0]; i++) {
		if (!roots[i])
			continue;
		snprintf(dbdir, sizeof dbdir, "%s/src/tests/pm-fixtures/db", roots[i]);
		if (access(dbdir, R_OK) == 0)
			return;
	}
	ck_abort_msg("src/tests/pm-fixtures/db not found (run from the top build directory or set srcdir)");
}

static struct pm_db_profile *load_aout(void)
{
	char file[PATH_MAX + 64], why[512];
	struct pm_db_profile *p;
	find_db();
	snprintf(file, sizeof file, "%s/" EPOCH_NEW "/" AOUT, dbdir);
	int r = pm_db_load(file, &p, why, sizeof why);
	ck_assert_msg(r == 0, "%s", why);
	return p;
}

static uint64_t q(const struct pm_db_profile *p, long row, const char *text)
{
	struct pm_value v;
	char why[256];
	ck_assert_msg(pm_value_parse(text, &v, why, sizeof why) == 0, "%s: %s", text, why);
	return pm_db_value(p, row, &v);
}

START_TEST(load_header_and_rows)
{
	struct pm_db_profile *p = load_aout();
	ck_assert_str_eq(p->name, "a.out");
	ck_assert_str_eq(p->image, "20261125124101+00004e20");
	ck_assert_str_eq(p->path, "/nonexistent/bin/a.out");
	ck_assert_str_eq(p->epoch, EPOCH_NEW);
	ck_assert_str_eq(p->platform, "x86_64 AMD EPYC (family 25 model 17)");
	ck_assert_str_eq(p->backend, "soft");
	ck_assert_str_eq(p->unit, "ns");
	ck_assert_uint_eq(p->period, 1000000);
	ck_assert_uint_eq(p->text_start, 0x1000);
	ck_assert_uint_eq(p->text_size, 0x1100);
	ck_assert_uint_eq(p->fields, PM_FIELD_BIT(PM_RETIRED) | PM_FIELD_BIT(PM_TAKEN) | PM_FIELD_BIT(PM_VALID) |
	                                 PM_FIELD_BIT(PM_NOTRAP) | PM_FIELD_BIT(PM_DTBMISS) |
	                                 PM_FIELD_BIT(PM_DFAULTTRAP) | PM_FIELD_BIT(PM_RETDELAY));
	ck_assert_uint_eq(p->ncols, 7);
	ck_assert_uint_eq(p->nrows, 4);
	const uint64_t pcs[] = { 0x1000, 0x1004, 0x1010, 0x2000 };
	for (int i = 0; i < 4; i++)
		ck_assert_uint_eq(p->pc[i], pcs[i]);
	/* column 6 (c6) at row 0: 50; c7 at row 1: 45 */
	ck_assert_uint_eq(p->v[0 * 7 + 5], 50);
	ck_assert_uint_eq(p->v[1 * 7 + 6], 45);
	ck_assert_uint_eq(p->col[1].total, 9);
	ck_assert_uint_eq(p->col[5].n, 14);
	ck_assert_str_eq(p->col[5].text, "retired^valid^notrap^!dtbmiss^!dfaulttrap:retdelay");
	ck_assert_int_eq(p->col[5].value.counter, PM_RETDELAY);
	ck_assert_int_eq(p->col[0].value.counter, -1);
	/* the class c2 as masks */
	ck_assert_uint_eq(p->col[1].value.set.must1, PM_FIELD_BIT(PM_RETIRED) | PM_FIELD_BIT(PM_TAKEN) |
	                                                 PM_FIELD_BIT(PM_VALID) | PM_FIELD_BIT(PM_NOTRAP));
	ck_assert_uint_eq(p->col[1].value.set.must0, PM_FIELD_BIT(PM_DTBMISS) | PM_FIELD_BIT(PM_DFAULTTRAP));
	pm_db_free(p);
}
END_TEST

START_TEST(queries_from_classes)
{
	struct pm_db_profile *p = load_aout();
	/* whole image */
	ck_assert_uint_eq(q(p, -1, "any"), 4 + 9 + 14 + 2 + 4);
	ck_assert_uint_eq(q(p, -1, "default"), 33);
	ck_assert_uint_eq(q(p, -1, "taken"), 9);           /* c2 only: c3's taken is unknown */
	ck_assert_uint_eq(q(p, -1, "!taken"), 4);          /* c1 only */
	ck_assert_uint_eq(q(p, -1, "/taken"), 4);
	ck_assert_uint_eq(q(p, -1, "retired"), 4 + 9 + 14);
	ck_assert_uint_eq(q(p, -1, "retired^notrap"), 27);
	ck_assert_uint_eq(q(p, -1, "!notrap"), 2 + 4);     /* the trap classes */
	ck_assert_uint_eq(q(p, -1, "trap"), 6);
	ck_assert_uint_eq(q(p, -1, "trap^!dtbmiss"), 4);   /* c5 */
	ck_assert_uint_eq(q(p, -1, "trap^/dtbmiss"), 4);
	ck_assert_uint_eq(q(p, -1, "dtbmiss"), 2);
	ck_assert_uint_eq(q(p, -1, "!trap"), 27);
	ck_assert_uint_eq(q(p, -1, "retired^!valid"), 0);  /* no class */
	ck_assert_uint_eq(q(p, -1, "retired:retdelay"), 70 + 45);
	ck_assert_uint_eq(q(p, -1, "taken:retdelay"), 45);
	ck_assert_uint_eq(q(p, -1, "!taken:retdelay"), 0); /* c1 has no retdelay column */
	/* per row */
	ck_assert_uint_eq(q(p, 0, "any"), 10 + 2);
	ck_assert_uint_eq(q(p, 0, "retired:retdelay"), 50);
	ck_assert_uint_eq(q(p, 1, "taken"), 9);
	ck_assert_uint_eq(q(p, 1, "retired"), 3 + 9);
	ck_assert_uint_eq(q(p, 1, "!notrap"), 1);
	ck_assert_uint_eq(q(p, 1, "trap^!dtbmiss"), 1);
	ck_assert_uint_eq(q(p, 2, "trap^!dtbmiss"), 3);
	ck_assert_uint_eq(q(p, 2, "retired:retdelay"), 20);
	ck_assert_uint_eq(q(p, 3, "!taken"), 1);
	ck_assert_uint_eq(q(p, 3, "taken"), 0);
	pm_db_free(p);
}
END_TEST

START_TEST(class_in_set)
{
	struct pm_set class = { .must1 = PM_FIELD_BIT(PM_RETIRED) | PM_FIELD_BIT(PM_DTBMISS),
		                .must0 = PM_FIELD_BIT(PM_NOTRAP) };
	struct pm_set any = { 0, 0 }, trap = { 0, PM_FIELD_BIT(PM_NOTRAP) },
		      taken = { PM_FIELD_BIT(PM_TAKEN), 0 }, notdtb = { 0, PM_FIELD_BIT(PM_DTBMISS) };
	ck_assert(pm_db_class_in_set(&class, &any));
	ck_assert(pm_db_class_in_set(&class, &trap));
	ck_assert(pm_db_class_in_set(&class, &class));
	ck_assert(!pm_db_class_in_set(&class, &taken));  /* taken unknown in the class */
	ck_assert(!pm_db_class_in_set(&class, &notdtb)); /* dtbmiss is 1 in the class */
}
END_TEST

/* ---- malformed files ------------------------------------------------------ */

/* The good file's text, with line `line` (1-based) replaced by `with` (NULL:
 * removed), written to a temporary file. */
static void write_variant(char *path, size_t len, int line, const char *with, const char *append)
{
	char src[PATH_MAX + 64];
	find_db();
	snprintf(src, sizeof src, "%s/" EPOCH_NEW "/" AOUT, dbdir);
	FILE *in = fopen(src, "r");
	ck_assert_ptr_nonnull(in);
	const char *t = getenv("TMPDIR");
	snprintf(path, len, "%s/pm_db_bad.XXXXXX", t && *t ? t : P_tmpdir);
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	FILE *out = fdopen(fd, "w");
	char buf[512];
	int n = 0;
	while (fgets(buf, sizeof buf, in)) {
		if (++n == line) {
			if (with)
				fprintf(out, "%s\n", with);
		} else {
			fputs(buf, out);
		}
	}
	if (append)
		fputs(append, out);
	fclose(in);
	fclose(out);
}

static const struct bad {
	int line;           /* the line replaced (0: none, text appended) */
	const char *with;   /* its new text, NULL: removed */
	const char *append;
	int at;             /* the line the message names (0: no line, a whole-file check) */
	const char *says;   /* a phrase the message has */
} bads[] = {
	/* a count that is not a number */
	{ 20, "0x1004 3 9 x 0 1 0 45", NULL, 20, "\"x\" is not a count" },
	{ 20, "0x1004 3 9 -1 0 1 0 45", NULL, 20, "is not a count" },
	{ 20, "0x1004 3 9 99999999999999999999 0 1 0 45", NULL, 20, "is not a count" },
	/* rows out of order, or a PC twice */
	{ 20, "0x0ff0 3 9 0 0 1 0 45", NULL, 20, "ascending" },
	{ 20, "0x1000 3 9 0 0 1 0 45", NULL, 20, "ascending" },
	/* the column count */
	{ 20, "0x1004 3 9 0 0 1 0", NULL, 20, "6 counts for 7 columns" },
	{ 20, "0x1004 3 9 0 0 1 0 45 1", NULL, 20, "more than the 7 columns" },
	/* a PC that is not hex */
	{ 20, "0xzz 3 9 0 0 1 0 45", NULL, 20, "is not a PC" },
	/* header: unknown key, twice, missing, bad values */
	{ 3, "colour      blue", NULL, 3, "unknown header \"colour\"" },
	{ 3, "name        b.out", NULL, 3, "\"name\" given twice" },
	{ 9, NULL, NULL, 11, "header \"backend\" missing" },
	{ 10, "period      fast ns", NULL, 10, "period" },
	{ 10, "period      1000000", NULL, 10, "period" },
	{ 11, "fields      retired,bogus", NULL, 11, "unknown field \"bogus\"" },
	{ 7, "text_start  4096", NULL, 7, "not 0x<hex>" },
	/* event lines */
	{ 12, "event four retired^!taken^valid^notrap^!dtbmiss^!dfaulttrap:1000000:4", NULL, 12, "total is not a number" },
	{ 12, "event 4 retired^!taken^valid^notrap^!dtbmiss^!dfaulttrap:1000000:four", NULL, 12, "sample count" },
	{ 12, "event 4 retired^!taken^valid^notrap^!dtbmiss^!dfaulttrap:100:4", NULL, 12, "differs from the header" },
	{ 12, "event 4 retired^!taken^valid^notrap^!dtbmiss^!dfaulttrap", NULL, 12, "<value>:<period>:<n>" },
	{ 12, "event 4 retired^!taken^bogus:1000000:4", NULL, 12, "bogus" },
	{ 12, "event 4 retired^mispredict:1000000:4", NULL, 12, "not in the header's fields" },
	{ 12, "event 4 default:1000000:4", NULL, 12, "not \"default\"" },
	{ 13, "event 4 retired^!taken^valid^notrap^!dtbmiss^!dfaulttrap:1000000:4", NULL, 13, "the same column twice" },
	{ 0, NULL, "event 1 retired:1000000:1\n", 23, "event line after the PC rows" },
	/* not a line of the format */
	{ 0, NULL, "hello\n", 23, "neither an event line nor a PC row" },
	{ 0, NULL, "\n", 23, "an empty line" },
	/* whole-file checks: totals */
	{ 12, "event 5 retired^!taken^valid^notrap^!dtbmiss^!dfaulttrap:1000000:5", NULL, 0, "total 5, but its column sums to 4" },
	{ 12, "event 4 retired^!taken^valid^notrap^!dtbmiss^!dfaulttrap:1000000:3", NULL, 0, "n is 3" },
};

START_TEST(malformed)
{
	const struct bad *b = &bads[_i];
	char path[PATH_MAX], why[512], at[PATH_MAX + 32];
	struct pm_db_profile *p = (void *)1;
	write_variant(path, sizeof path, b->line, b->with, b->append);
	int r = pm_db_load(path, &p, why, sizeof why);
	unlink(path);
	ck_assert_msg(r == -EINVAL, "case %d: %d (%s)", _i, r, r ? why : "loaded");
	ck_assert_ptr_null(p);
	ck_assert_msg(strstr(why, b->says), "case %d: \"%s\" does not say \"%s\"", _i, why, b->says);
	if (b->at)
		snprintf(at, sizeof at, "%s:%d: ", path, b->at);
	else
		snprintf(at, sizeof at, "%s: ", path);
	ck_assert_msg(strncmp(why, at, strlen(at)) == 0, "case %d: \"%s\" does not start with \"%s\"", _i, why, at);
}
END_TEST

/* Every class over six fields (64 classes, each with a retdelay column: 128
 * columns, more than any fixed table would hold), one sample of each and a
 * retdelay of 10: a set's count is 2^(6 - its constraints). */
START_TEST(every_class)
{
	static const char *const f[6] = { "retired", "taken", "valid", "notrap", "dtbmiss", "dfaulttrap" };
	char path[PATH_MAX], why[512];
	const char *t = getenv("TMPDIR");
	snprintf(path, sizeof path, "%s/pm_db_classes.XXXXXX", t && *t ? t : P_tmpdir);
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	FILE *o = fdopen(fd, "w");
	fprintf(o, "name        x\nimage       -\nlabel       profileme\npath        /x\nepoch       20261125130102\n"
	           "platform    p\ntext_start  0x0\ntext_size   0x10\nbackend     soft\nperiod      7 ns\n"
	           "fields      retired,taken,valid,notrap,dtbmiss,dfaulttrap,retdelay\n");
	for (int m = 0; m < 64; m++)
		for (int counter = 0; counter < 2; counter++) {
			fprintf(o, "event %d ", counter ? 10 : 1);
			for (int b = 0; b < 6; b++)
				fprintf(o, "%s%s%s", b ? "^" : "", m & (1 << b) ? "" : "!", f[b]);
			fprintf(o, "%s:7:1\n", counter ? ":retdelay" : "");
		}
	fprintf(o, "0x4");
	for (int c = 0; c < 128; c++)
		fprintf(o, " %d", c % 2 ? 10 : 1);
	fprintf(o, "\n");
	fclose(o);
	struct pm_db_profile *p;
	int r = pm_db_load(path, &p, why, sizeof why);
	unlink(path);
	ck_assert_msg(r == 0, "%s", why);
	ck_assert_uint_eq(p->ncols, 128);
	ck_assert_uint_eq(q(p, -1, "any"), 64);
	ck_assert_uint_eq(q(p, 0, "any"), 64);
	ck_assert_uint_eq(q(p, -1, "retired"), 32);
	ck_assert_uint_eq(q(p, -1, "retired^taken"), 16);
	ck_assert_uint_eq(q(p, -1, "trap^!dtbmiss"), 16);
	ck_assert_uint_eq(q(p, -1, "retired^taken^valid^notrap^dtbmiss^dfaulttrap"), 1);
	ck_assert_uint_eq(q(p, -1, "retired:retdelay"), 32 * 10);
	ck_assert_uint_eq(q(p, -1, "!taken^/valid:retdelay"), 16 * 10);
	pm_db_free(p);
}
END_TEST

START_TEST(missing_file)
{
	struct pm_db_profile *p;
	char why[512];
	ck_assert_int_eq(pm_db_load("/nonexistent/pm_db_file", &p, why, sizeof why), -ENOENT);
	ck_assert(strstr(why, "/nonexistent/pm_db_file") != NULL);
}
END_TEST

/* pm_db_parse reads a file's bytes as pm_db_load reads the file (the
 * fuzzer's way in, fuzz/fuzz_pm_db.c): the same profile, and an empty or
 * cut text refused with its name. */
START_TEST(parse_bytes)
{
	char file[PATH_MAX + 64], why[512];
	find_db();
	snprintf(file, sizeof file, "%s/" EPOCH_NEW "/" AOUT, dbdir);
	FILE *f = fopen(file, "r");
	ck_assert_ptr_nonnull(f);
	static char text[1 << 16];
	size_t n = fread(text, 1, sizeof text, f);
	fclose(f);
	ck_assert_uint_gt(n, 0);
	struct pm_db_profile *a = load_aout(), *b;
	ck_assert_msg(pm_db_parse(text, n, "bytes", &b, why, sizeof why) == 0, "%s", why);
	ck_assert_str_eq(b->name, a->name);
	ck_assert_str_eq(b->unit, a->unit);
	ck_assert_uint_eq(b->period, a->period);
	ck_assert_uint_eq(b->ncols, a->ncols);
	ck_assert_uint_eq(b->nrows, a->nrows);
	ck_assert_mem_eq(b->pc, a->pc, a->nrows * sizeof *a->pc);
	ck_assert_mem_eq(b->v, a->v, a->nrows * a->ncols * sizeof *a->v);
	pm_db_free(a);
	pm_db_free(b);

	b = (void *)1;
	ck_assert_int_eq(pm_db_parse("", 0, "empty", &b, why, sizeof why), -EINVAL);
	ck_assert_ptr_null(b);
	ck_assert_msg(strstr(why, "empty:1: no event line"), "%s", why);
	/* Cut before its first event line: the headers alone are no profile. */
	const char *ev = strstr(text, "\nevent ");
	ck_assert_ptr_nonnull(ev);
	ck_assert_int_eq(pm_db_parse(text, (size_t)(ev - text) + 1, "cut", &b, why, sizeof why), -EINVAL);
	ck_assert_msg(strstr(why, "no event line"), "%s", why);
}
END_TEST

/* ---- epochs, listing, finding --------------------------------------------------- */

START_TEST(epochs)
{
	char dir[PATH_MAX + 32], why[512], want[PATH_MAX + 32];
	find_db();
	ck_assert_int_eq(pm_db_epoch_dir(dbdir, NULL, dir, sizeof dir, why, sizeof why), 0);
	snprintf(want, sizeof want, "%s/" EPOCH_NEW, dbdir);
	ck_assert_str_eq(dir, want); /* the greatest yyyymmddhhmmss */
	ck_assert_int_eq(pm_db_epoch_dir(dbdir, EPOCH_OLD, dir, sizeof dir, why, sizeof why), 0);
	snprintf(want, sizeof want, "%s/" EPOCH_OLD, dbdir);
	ck_assert_str_eq(dir, want);
	ck_assert_int_eq(pm_db_epoch_dir(dbdir, "20200101000000", dir, sizeof dir, why, sizeof why), -ENOENT);
	ck_assert(strstr(why, "no epoch 20200101000000") != NULL);
	ck_assert_int_eq(pm_db_epoch_dir(dbdir, "../db", dir, sizeof dir, why, sizeof why), -ENOENT);
	ck_assert_int_eq(pm_db_epoch_dir("/nonexistent/db", NULL, dir, sizeof dir, why, sizeof why), -ENOENT);
	ck_assert(strstr(why, "no profile database") != NULL);
	/* a database with no epoch */
	snprintf(want, sizeof want, "%s/" EPOCH_NEW, dbdir);
	ck_assert_int_eq(pm_db_epoch_dir(want, NULL, dir, sizeof dir, why, sizeof why), -ENOENT);
	ck_assert(strstr(why, "no epoch in") != NULL);
}
END_TEST

/* Runs started in the same second: the writer names them E, E-1, E-2...;
 * the latest is the greatest N, numerically (E-10 after E-9). */
START_TEST(epochs_same_second)
{
	char db[PATH_MAX], dir[PATH_MAX + 32], why[512], want[PATH_MAX + 32];
	const char *t = getenv("TMPDIR");
	snprintf(db, sizeof db, "%s/pm_db_epochs.XXXXXX", t && *t ? t : P_tmpdir);
	ck_assert_ptr_nonnull(mkdtemp(db));
	const char *names[] = { "20261125130102", "20261125130102-1", "20261125130102-9", "20261125130102-10",
		                "20261125130059-12", "2026112513010x", "20261125130102-", "notes" };
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(dir, sizeof dir, "%s/%s", db, names[i]);
		ck_assert_int_eq(mkdir(dir, 0700), 0);
	}
	ck_assert_int_eq(pm_db_epoch_dir(db, NULL, dir, sizeof dir, why, sizeof why), 0);
	snprintf(want, sizeof want, "%s/20261125130102-10", db);
	ck_assert_str_eq(dir, want);
	ck_assert_int_eq(pm_db_epoch_dir(db, "20261125130102-9", dir, sizeof dir, why, sizeof why), 0);
	ck_assert_int_eq(pm_db_epoch_dir(db, "20261125130102-", dir, sizeof dir, why, sizeof why), -ENOENT);
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(dir, sizeof dir, "%s/%s", db, names[i]);
		rmdir(dir);
	}
	rmdir(db);
}
END_TEST

START_TEST(list_and_find)
{
	char dir[PATH_MAX + 32], why[512], file[PATH_MAX + 64], want[PATH_MAX + 96];
	char **files;
	find_db();
	snprintf(dir, sizeof dir, "%s/" EPOCH_NEW, dbdir);
	ck_assert_int_eq(pm_db_list(dir, &files, why, sizeof why), 0);
	snprintf(want, sizeof want, "%s/" AOUT, dir);
	ck_assert_str_eq(files[0], want);
	snprintf(want, sizeof want, "%s/libm.so.6_20261001000000+000f4240", dir);
	ck_assert_str_eq(files[1], want);
	ck_assert_ptr_null(files[2]);
	for (int i = 0; files[i]; i++)
		free(files[i]);
	free(files);

	/* by the path header */
	ck_assert_int_eq(pm_db_find(dir, "/nonexistent/lib/libm.so.6", file, sizeof file, why, sizeof why), 0);
	ck_assert_str_eq(file, want);
	/* by the basename, where the path differs */
	ck_assert_int_eq(pm_db_find(dir, "elsewhere/a.out", file, sizeof file, why, sizeof why), 0);
	snprintf(want, sizeof want, "%s/" AOUT, dir);
	ck_assert_str_eq(file, want);
	/* unknown: says which images there are */
	ck_assert_int_eq(pm_db_find(dir, "/bin/b.out", file, sizeof file, why, sizeof why), -ENOENT);
	ck_assert_msg(strstr(why, "unknown image /bin/b.out") && strstr(why, AOUT), "%s", why);
}
END_TEST

/* ---- symbols ------------------------------------------------------------- */

/* This test program's own file: its functions are known to it by address. */
__attribute__((noinline)) int pm_db_test_marker(int x)
{
	return x * 3 + 1;
}

START_TEST(symbols_of_self)
{
	struct pm_symbols *s;
	char why[512];
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	ck_assert_int_gt(n, 0);
	self[n] = 0;
	ck_assert_msg(pm_symbols_open(self, &s, why, sizeof why) == 0, "%s", why);
	struct pm_func f, g;
	ck_assert_int_eq(pm_symbols_func_named(s, "pm_db_test_marker", &f), 0);
	ck_assert_str_eq(f.name, "pm_db_test_marker");
	ck_assert_uint_gt(f.size, 0);
	/* the start and the last byte are in it; the byte after is not */
	ck_assert_int_eq(pm_symbols_func_at(s, f.start, &g), 0);
	ck_assert_str_eq(g.name, "pm_db_test_marker");
	ck_assert_int_eq(pm_symbols_func_at(s, f.start + f.size - 1, &g), 0);
	ck_assert_str_eq(g.name, "pm_db_test_marker");
	ck_assert(pm_symbols_func_at(s, f.start + f.size, &g) != 0 || strcmp(g.name, "pm_db_test_marker") != 0);
	/* the code bytes in the file are those mapped in this process: the
	 * function's vaddr in the file + the load bias is the running address */
	uint8_t code[16];
	long got = pm_symbols_code(s, f.start, code, sizeof code);
	ck_assert_int_gt(got, 0);
	uint64_t bias = (uint64_t)(uintptr_t)&pm_db_test_marker - f.start;
	ck_assert_int_eq(memcmp(code, (const void *)(uintptr_t)(f.start + bias), (size_t)got), 0);
	/* near names for a misspelling */
	char near[256];
	ck_assert_uint_ge(pm_symbols_near(s, "pm_db_test_markr", 4, near, sizeof near), 1);
	ck_assert(strstr(near, "pm_db_test_marker") != NULL);
	ck_assert_int_eq(pm_symbols_func_named(s, "no_such_function_here", &f), -ENOENT);
	pm_symbols_close(s);
}
END_TEST

START_TEST(symbols_not_elf)
{
	struct pm_symbols *s;
	char why[512], path[PATH_MAX + 64];
	find_db();
	snprintf(path, sizeof path, "%s/" EPOCH_NEW "/" AOUT, dbdir);
	ck_assert_int_lt(pm_symbols_open(path, &s, why, sizeof why), 0);
	ck_assert(strstr(why, "not an ELF file") != NULL);
	ck_assert_int_eq(pm_symbols_open("/nonexistent/a.out", &s, why, sizeof why), -ENOENT);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("pm_db");
	TCase *t = tcase_create("reader");
	tcase_add_test(t, load_header_and_rows);
	tcase_add_test(t, queries_from_classes);
	tcase_add_test(t, class_in_set);
	tcase_add_loop_test(t, malformed, 0, (int)(sizeof bads / sizeof bads[0]));
	tcase_add_test(t, every_class);
	tcase_add_test(t, missing_file);
	tcase_add_test(t, parse_bytes);
	tcase_add_test(t, epochs);
	tcase_add_test(t, epochs_same_second);
	tcase_add_test(t, list_and_find);
	suite_add_tcase(s, t);
	TCase *y = tcase_create("symbols");
	tcase_add_test(y, symbols_of_self);
	tcase_add_test(y, symbols_not_elf);
	suite_add_tcase(s, y);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(suite());
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
