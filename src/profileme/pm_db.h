/*
 * The profile database of profileme-run (this project's dcpid), read by
 * dcpiprof, dcpilist and dcpicat.  Documented for users in dcpicat(1).
 *
 * A database is a directory (-db DIR or DCPIDB).  Each run writes one epoch
 * subdirectory, <DB>/<epoch>/, epoch = yyyymmddhhmmss (UTC) of the run's
 * start; the tools read the latest epoch unless told otherwise.  In it, one
 * text file per image that has samples, <basename>_<image-id>, in the shape
 * of DCPI's dcpicat output:
 *
 *   name        a.out
 *   image       20261125124101+0001f3a8        the file's mtime (UTC) + its size, hex
 *   label       profileme
 *   path        /home/u/a.out
 *   epoch       20261125130102
 *   platform    x86_64 AMD EPYC (family 25 model 17)
 *   text_start  0x1040
 *   text_size   0x2a1
 *   backend     soft
 *   period      1000000 ns
 *   fields      retired,taken,valid,notrap,...  the fields the backend produces
 *   event 812 retired^valid^!taken^notrap^!arithtrap:1000000:812
 *   event 3104 retired^valid^notrap:retdelay:1000000:812
 *   0x1135 40 0
 *   0x1139 772 3104
 *
 * `event <total> <value>:<period>:<n>` lines name the columns.  A sample
 * *class* is the set of every field that was known in a sample with its
 * value (a sample set, pm_sampleset.h, written canonically); a column is a
 * class (samples of that class) or a class:counter (the counter's sum over
 * the class's samples that defined it).  total is the column's sum over the
 * image; n is the number of samples behind it.  Then one line per PC
 * (`0x<vaddr>`: the ELF virtual address in the image file, so symbols and
 * source lines are looked up in the file as it is on disk) with one number
 * per column in event order; PCs with no sample are not written.
 *
 * A query value (any sample set) is answered from the classes: a class's
 * samples all belong to a set when every constraint of the set is one of the
 * class's (pm_db_class_in_set).
 */
#ifndef HERITAGE_PM_DB_H
#define HERITAGE_PM_DB_H

#include <stddef.h>
#include <stdint.h>

#include "profileme/pm_sample.h"
#include "profileme/pm_sampleset.h"

struct pm_db_column {
	char *text;             /* as written after `event <total> ` without :period:n */
	struct pm_value value;  /* set = the class; counter = -1 or the summed counter */
	uint64_t total;
	uint64_t n;
};

struct pm_db_profile {
	char *file;             /* the file it was read from */
	char *name, *image, *label, *path, *epoch, *platform, *backend, *unit;
	uint64_t period, text_start, text_size;
	uint32_t fields;        /* produced by the backend */
	unsigned ncols;
	struct pm_db_column *col;
	size_t nrows;
	uint64_t *pc;           /* [nrows], ascending */
	uint64_t *v;            /* [nrows * ncols] */
};

/* Read one image file: 0, or -EINVAL (malformed: why names the file and
 * line), -errno for I/O.  Frees with pm_db_free. */
int pm_db_load(const char *file, struct pm_db_profile **out, char *why, size_t len);
void pm_db_free(struct pm_db_profile *p);

/* The epoch directory to read: epoch given (NULL: the latest) under db.
 * 0 with dir, or -ENOENT with why. */
int pm_db_epoch_dir(const char *db, const char *epoch, char *dir, size_t dlen, char *why, size_t len);
/* Every image file of an epoch directory, as paths epoch_dir/name (sorted;
 * names starting with '.' skipped), NULL-terminated, malloc'ed (free each
 * and the array).  0 or -errno. */
int pm_db_list(const char *epoch_dir, char ***files, char *why, size_t len);
/* The file for the image at path (matched by the `path` header, then by
 * basename): 0 with file, or -ENOENT with why. */
int pm_db_find(const char *epoch_dir, const char *image_path, char *file, size_t flen, char *why, size_t len);

/* Do all samples of class c belong to set? */
int pm_db_class_in_set(const struct pm_set *class_set, const struct pm_set *set);
/* Value v over row r (r = -1: the whole image): for a set, the number of
 * samples; for set:counter, the counter's sum. */
uint64_t pm_db_value(const struct pm_db_profile *p, long r, const struct pm_value *v);

/* ---- writing ----------------------------------------------------------- */
struct pm_db_writer;

/* A run's writer: creates <db>/<epoch>/.  0 or -errno with why. */
int pm_db_writer_open(struct pm_db_writer **w, const char *db, const char *backend, const char *unit,
                      uint64_t period, uint32_t fields, char *why, size_t len);
/* One sample (thread context). */
void pm_db_writer_add(struct pm_db_writer *w, const struct pm_sample *s);
/* Attribute PCs to images through the maps of pid (0: this process), write
 * one file per image, free w.  0 or -errno with why. */
int pm_db_writer_close(struct pm_db_writer *w, int pid, char *why, size_t len);

#endif
