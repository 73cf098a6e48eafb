/*
 * dcpicat(1): the raw files of a profile database epoch (pm_db.h), every
 * image's or those named, as DCPI's dcpicat printed its profiles.  The
 * database is -db DIR, else DCPIDB, as DCPI did; the epoch -epoch E, else
 * the latest.  Image arguments are paths, matched against each file's
 * `path` header (as given, then resolved), then by basename against `name`.
 *
 * The directory walking is this tool's own (a few lines): it prints files
 * as they are and must work on a database the reader would refuse, which is
 * when one wants to look at it.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* yyyymmddhhmmss[-N]: N (0 without), or -1 for another name. */
static long epoch_suffix(const char *s)
{
	for (int i = 0; i < 14; i++)
		if (s[i] < '0' || s[i] > '9')
			return -1;
	if (!s[14])
		return 0;
	if (s[14] != '-' || !s[15])
		return -1;
	char *end;
	long n = strtol(s + 15, &end, 10);
	return *end || n <= 0 ? -1 : n;
}

/* Epochs in time order: the second, then -N as a number (-10 after -9). */
static int cmp_epoch(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	int c = strncmp(x, y, 14);
	if (c)
		return c;
	long m = epoch_suffix(x), n = epoch_suffix(y);
	return m < n ? -1 : m > n;
}

/* The names in dir not starting with '.', sorted; NULL-terminated. */
static char **names(const char *dir, int want_dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	size_t n = 0, cap = 16;
	char **v = malloc(cap * sizeof *v);
	struct dirent *de;
	char p[PATH_MAX];
	struct stat st;
	while (v && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
		if (stat(p, &st) || (S_ISDIR(st.st_mode) ? 1 : 0) != want_dir)
			continue;
		if (n + 1 >= cap) {
			char **nv = realloc(v, (cap *= 2) * sizeof *v);
			if (!nv) {
				free(v);
				v = NULL;
				break;
			}
			v = nv;
		}
		v[n++] = strdup(de->d_name);
	}
	closedir(d);
	if (!v)
		return NULL;
	v[n] = NULL;
	qsort(v, n, sizeof *v, cmp_str);
	return v;
}

/* The value of header key in file (first lines before `event`), or "". */
static void header(const char *file, const char *key, char *out, size_t len)
{
	out[0] = 0;
	FILE *f = fopen(file, "r");
	if (!f)
		return;
	char line[PATH_MAX + 64];
	size_t kl = strlen(key);
	while (fgets(line, sizeof line, f) && strncmp(line, "event ", 6) && strncmp(line, "0x", 2)) {
		if (!strncmp(line, key, kl) && (line[kl] == ' ' || line[kl] == '\t')) {
			char *v = line + kl + strspn(line + kl, " \t");
			v[strcspn(v, "\n")] = 0;
			snprintf(out, len, "%s", v);
			break;
		}
	}
	fclose(f);
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
	char dir[PATH_MAX];
	if (epoch) {
		snprintf(dir, sizeof dir, "%s/%s", db, epoch);
		struct stat st;
		if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
			fprintf(stderr, "dcpicat: no epoch %s in the database %s\n", epoch, db);
			return 1;
		}
	} else {
		char **ep = names(db, 1);
		if (!ep) {
			fprintf(stderr, "dcpicat: cannot read the database %s: %s\n", db, strerror(errno));
			return 1;
		}
		size_t n = 0;
		for (size_t k = 0; ep[k]; k++)
			if (epoch_suffix(ep[k]) >= 0)
				ep[n++] = ep[k];
			else
				free(ep[k]);
		ep[n] = NULL;
		qsort(ep, n, sizeof *ep, cmp_epoch);
		if (!n) {
			fprintf(stderr, "dcpicat: the database %s has no epoch (run profileme-run -o %s -- CMD)\n", db,
			        db);
			return 1;
		}
		snprintf(dir, sizeof dir, "%s/%s", db, ep[n - 1]);
		for (size_t k = 0; k < n; k++)
			free(ep[k]);
		free(ep);
	}
	char **files = names(dir, 0);
	if (!files) {
		fprintf(stderr, "dcpicat: cannot read %s: %s\n", dir, strerror(errno));
		return 1;
	}
	int rc = 0, printed = 0;
	char file[PATH_MAX * 2], v[PATH_MAX];
	if (i >= argc) {
		for (size_t k = 0; files[k]; k++) {
			snprintf(file, sizeof file, "%s/%s", dir, files[k]);
			rc |= cat(file, printed++);
		}
	}
	for (; i < argc; i++) {
		char real[PATH_MAX];
		const char *want = argv[i], *res = realpath(want, real) ? real : want;
		const char *base = strrchr(want, '/') ? strrchr(want, '/') + 1 : want;
		int found = 0;
		/* By path first, then by name: a path given is what the user means. */
		for (int pass = 0; pass < 2 && !found; pass++)
			for (size_t k = 0; files[k] && !found; k++) {
				snprintf(file, sizeof file, "%s/%s", dir, files[k]);
				header(file, pass ? "name" : "path", v, sizeof v);
				if (pass ? !strcmp(v, base) : !strcmp(v, want) || !strcmp(v, res)) {
					rc |= cat(file, printed++);
					found = 1;
				}
			}
		if (!found) {
			fprintf(stderr, "dcpicat: no profile of %s in %s\n", want, dir);
			rc = 1;
		}
	}
	for (size_t k = 0; files[k]; k++)
		free(files[k]);
	free(files);
	return rc;
}
