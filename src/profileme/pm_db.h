/*
 * The profile database of profileme-run (this project's dcpid), read by
 * dcpiprof, dcpilist and dcpicat.  Documented for users in dcpicat(1).
 *
 * A database is a directory (-db DIR or DCPIDB).  Each run writes one epoch
 * subdirectory, <DB>/<epoch>/, epoch = yyyymmddhhmmss (UTC) of the run's
 * start, with -1, -2... appended when a run of the same second took the
 * name; the tools read the latest epoch (the latest second, then the
 * greatest -N) unless told otherwise, and ignore other names.  An epoch
 * appears whole: the writer fills a hidden <DB>/.<epoch>.<pid>.tmpXXXXXX/
 * and renames it (readers skip names starting with '.').
 *
 * In an epoch, one text file per image that has samples:
 * <basename>_<image-id> for a file (_2, _3... after it for another file of
 * the same basename and id, copies in two directories: readers go by the
 * `path` header), or the pseudo-image's name for code with no file: [vdso],
 * [anon] (anonymous executable memory: JIT code), [unknown] (a PC in no
 * executable mapping when the run ended), or another bracketed name of the
 * maps.  Each file is in the shape of DCPI's dcpicat output:
 *
 *   name        a.out
 *   image       20261125124101+0001f3a8        the file's mtime (UTC) + its size, hex
 *   label       profileme
 *   path        /usr/local/bin/a.out
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
 * image is `-` for a pseudo-image; text_start/text_size are the span of the
 * file's executable PT_LOAD segments (ELF vaddrs), or of the rows when the
 * image is no ELF file we could read.  platform is `uname -m`, /proc/cpuinfo's
 * model name and its family and model; fields the backend's fields in field
 * order; period the sampling period and its unit (ns of thread CPU time,
 * ops: dispatched ops).
 *
 * `event <total> <value>:<period>:<n>` lines name the columns.  A sample
 * *class* is the set of every field that was known in a sample with its
 * value (a sample set, pm_sampleset.h, written canonically); a column is a
 * class (samples of that class) or a class:counter (the counter's sum over
 * the class's samples that defined it).  total is the column's sum over the
 * image; n is the number of samples behind it.  Then one line per PC
 * (`0x<vaddr>`: the ELF virtual address in the image file, so symbols and
 * source lines are looked up in the file as it is on disk) with one number
 * per column in event order; PCs with no sample are not written.  Columns
 * come class by class, the class with the most samples first, each followed
 * by its class:counter columns, for the counters some of its samples defined
 * (none for a backend that defines none).  For [vdso] the PC's offset in the
 * mapping (the vDSO is linked at 0), for other pseudo-images the PC itself.
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
/* The same from a file's n bytes in memory (file names it in messages). */
int pm_db_parse(const char *text, size_t n, const char *file, struct pm_db_profile **out, char *why, size_t len);
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
/* The same, giving the epoch directory written (<db>/<epoch>) in dir. */
int pm_db_writer_finish(struct pm_db_writer *w, int pid, char *dir, size_t dlen, char *why, size_t len);
/* Drop w and its hidden directory, writing nothing (a forked child's copy,
 * a run that failed). */
void pm_db_writer_discard(struct pm_db_writer *w);

#endif
