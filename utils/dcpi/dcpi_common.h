/*
 * What dcpiprof and dcpilist share: finding the database (-db or DCPIDB, as
 * DCPI did) and its epoch, loading image profiles, the columns of -pm in the
 * sample-set language with the user's own spelling as labels, refusing a
 * column a profile's backend cannot answer, and the output helpers (-csl,
 * --json).
 */
#ifndef DCPI_COMMON_H
#define DCPI_COMMON_H

#include <stdint.h>
#include <stdio.h>

#include "profileme/pm_db.h"
#include "profileme/pm_sampleset.h"

/* Exit statuses of both tools. */
enum { DCPI_OK = 0, DCPI_FAIL = 1, DCPI_USAGE = 2 };

struct dcpi_db {
	const char *db;   /* -db or DCPIDB */
	char dir[4096];   /* the epoch directory */
	const char *epoch;
};

/* Finds the database and epoch; prints why and returns DCPI_FAIL. */
int dcpi_db_open(struct dcpi_db *d, const char *db_opt, const char *epoch, const char *prog);

struct dcpi_cols {
	struct pm_columns c;
	char label[PM_MAX_COLUMNS][128]; /* as the user wrote each */
};

/* Parses text (-pm) into cols: 0, or prints the parser's message and
 * returns DCPI_USAGE. */
int dcpi_cols_parse(struct dcpi_cols *cols, const char *text, const char *what, const char *prog);
/* Prepends column one of extra (the -sp column) unless cols has it
 * already; *index is where it is in cols. */
int dcpi_cols_sort_by(struct dcpi_cols *cols, const struct dcpi_cols *extra, unsigned *index, const char *prog);
/* Refuses (prints why, DCPI_FAIL) a column naming a field p's backend did
 * not produce: that set cannot be answered from p, and 0 would be a lie. */
int dcpi_cols_check(const struct dcpi_cols *cols, const struct pm_db_profile *p, const char *prog);

/* Value of column c over row r of p (r = -1: the image); a ratio column
 * gives num and den separately (den 0 for other columns). */
void dcpi_col_value(const struct pm_column *c, const struct pm_db_profile *p, long r, uint64_t *num, uint64_t *den);

/* The header lines every tool prints (unless -no_header): database,
 * epoch, and per profile its backend, period, unit and fields. */
void dcpi_print_profiles(FILE *f, const struct dcpi_db *d, struct pm_db_profile *const *p, unsigned n);
/* What the numbers are: samples (as DCPI printed) and how to estimate. */
void dcpi_print_units(FILE *f, struct pm_db_profile *const *p, unsigned n);

/* The image id of a file on disk as profileme-run writes it (mtime UTC
 * yyyymmddhhmmss + size); warns on stderr when it differs from p's. */
void dcpi_check_image(const struct pm_db_profile *p, const char *path, const char *prog);

/* Output helpers. */
void dcpi_csv_str(FILE *f, const char *s);  /* quoted when it needs it */
void dcpi_json_str(FILE *f, const char *s); /* a JSON string */

#endif
