/*
 * The IMC catalog from a device-tree directory (imc_catalog_from_dir: one
 * directory per node, one file per property, as /proc/device-tree shows
 * it).  The input is a device-tree blob, which libfdt walks to write the
 * directory the kernel would show for it into a scratch directory: so the
 * fuzzer mutates trees, not byte soup that is never a tree.  Names that
 * cannot be file names ("", ".", "..", with '/') are left out, as are
 * trees deeper than 8 or with more than 256 nodes (bounded work per run).
 * Then the catalog read from the directory is checked as fuzz_imc_dtb
 * checks one read from a blob.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libfdt.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_imc.h"

static char root[256];

static void remove_root(void)
{
	char top[300];
	snprintf(top, sizeof top, "%s/t", root);
	rmdir(top);
	rmdir(root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(root, sizeof root, "%s/fuzz_imc_dir.XXXXXX", tmp);
	if (!mkdtemp(root))
		abort();
	atexit(remove_root);
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) != 0 && errno != ENOENT;
}

static int bad_name(const char *n, int len)
{
	return len <= 0 || len > 200 || memchr(n, '/', (size_t)len) || memchr(n, '\0', (size_t)len) ||
	       (len == 1 && n[0] == '.') || (len == 2 && n[0] == '.' && n[1] == '.');
}

static int nodes;

/* Node off of fdt as the directory dir: its properties as files, its
 * subnodes as directories. */
static void write_node(const void *fdt, int off, const char *dir, int depth)
{
	if (depth > 8 || ++nodes > 256 || mkdir(dir, 0700) != 0)
		return;
	int p;
	fdt_for_each_property_offset(p, fdt, off)
	{
		const char *name;
		int len;
		const void *val = fdt_getprop_by_offset(fdt, p, &name, &len);
		if (!val || !name || bad_name(name, (int)strlen(name)))
			continue;
		char path[4096];
		if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
			continue;
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			continue;
		if (len > 0 && write(fd, val, (size_t)len) != len)
			abort();
		close(fd);
	}
	int k;
	fdt_for_each_subnode(k, fdt, off)
	{
		int len;
		const char *name = fdt_get_name(fdt, k, &len);
		if (!name || bad_name(name, len))
			continue;
		char path[4096];
		if ((size_t)snprintf(path, sizeof path, "%s/%.*s", dir, len, name) >= sizeof path)
			continue;
		write_node(fdt, k, path, depth + 1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	void *blob = malloc(size ? size : 1);
	if (!blob)
		abort();
	memcpy(blob, data, size);
	/* The reader's own order of checks (imc_catalog.c tree_from_dtb):
	 * libfdt 1.6.1 crashes checking versions before 16. */
	if (size >= sizeof(struct fdt_header) && fdt_check_header(blob) == 0 && fdt_version(blob) >= 16 &&
	    fdt_totalsize(blob) <= size && fdt_check_full(blob, size) == 0) {
		char top[300];
		snprintf(top, sizeof top, "%s/t", root);
		nodes = 0;
		write_node(blob, 0, top, 0);
		struct imc_catalog *cat = NULL;
		if (imc_catalog_from_dir(top, &cat) == 0) {
			fuzz_imc_check_catalog(cat);
			imc_catalog_free(cat);
		}
		if (nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
			abort();
	}
	free(blob);
	return 0;
}
