/*
 * dcpicat(1): the raw files of a profile database epoch (pm_db.h), every
 * image's or those named, as DCPI's dcpicat printed its profiles.  The
 * database is -db DIR, else DCPIDB, as DCPI did; the epoch -epoch E, else
 * the latest.  The epoch, its files and the file of an image path are the
 * reader's (pm_db_epoch_dir, pm_db_list, pm_db_find: headers peeked, not
 * parsed), so a file the strict reader would refuse is still printed:
 * that is when one wants to look at it.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profileme/pm_db.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: dcpicat [-db DIR] [-epoch E] [IMAGE...]\n"
	           "Prints the profile files of a database epoch (written by profileme-run): every\n"
	           "image's, or those of the IMAGE paths named.  The format is in dcpicat(1).\n"
	           "  -db DIR      the database (default: $DCPIDB, else ./dcpidb)\n"
	           "  -epoch E     the epoch directory's name (default: the latest)\n"
	           "  -h, --help   this text\n"
	           "Exit status: 0; 1 no such database, epoch or image; 2 usage.\n");
}

static int cat(const char *file, int sep)
{
	FILE *f = fopen(file, "r");
	if (!f) {
		fprintf(stderr, "dcpicat: %s: %s\n", file, strerror(errno));
		return 1;
	}
	if (sep)
		putchar('\n');
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		fwrite(buf, 1, n, stdout);
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	const char *db = NULL, *epoch = NULL;
	int i = 1;
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "-db") && i + 1 < argc)
			db = argv[++i];
		else if (!strcmp(argv[i], "-epoch") && i + 1 < argc)
			epoch = argv[++i];
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "dcpicat: unknown option %s\n", argv[i]);
			usage(stderr);
			return 2;
		} else
			break;
	}
	if (!db)
		db = getenv("DCPIDB");
	if (!db || !*db)
		db = "dcpidb";
	char dir[PATH_MAX], why[1024], file[PATH_MAX];
	if (pm_db_epoch_dir(db, epoch, dir, sizeof dir, why, sizeof why)) {
		fprintf(stderr, "dcpicat: %s\n", why);
		return 1;
	}
	int rc = 0, printed = 0;
	if (i >= argc) {
		char **files;
		if (pm_db_list(dir, &files, why, sizeof why)) {
			fprintf(stderr, "dcpicat: %s\n", why);
			return 1;
		}
		for (char **f = files; *f; f++) {
			rc |= cat(*f, printed++);
			free(*f);
		}
		free(files);
	}
	for (; i < argc; i++) {
		if (pm_db_find(dir, argv[i], file, sizeof file, why, sizeof why)) {
			fprintf(stderr, "dcpicat: %s\n", why);
			rc = 1;
			continue;
		}
		rc |= cat(file, printed++);
	}
	return rc;
}
