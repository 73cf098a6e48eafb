/*
 * Saved traces (imc_trace_file.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/heritage_error.h"
#include "imc/imc_trace_file.h"

static int put(FILE *f, uint64_t v)
{
	unsigned char b[8];
	for (int i = 7; i >= 0; i--, v >>= 8)
		b[i] = (unsigned char)v;
	return fwrite(b, 1, 8, f) == 8 ? 0 : -1;
}

static int get(FILE *f, uint64_t *v)
{
	unsigned char b[8];
	if (fread(b, 1, 8, f) != 8)
		return -1;
	*v = 0;
	for (int i = 0; i < 8; i++)
		*v = *v << 8 | b[i];
	return 0;
}

int imc_trace_file_write(const char *path, const struct imc_trace_file *t)
{
	FILE *f = fopen(path, "wbe");
	if (!f)
		return heritage_fail(-errno, "%s: %s", path, strerror(errno));
	int bad = fwrite(IMC_TRACE_FILE_MAGIC, 1, 8, f) != 8;
	const uint64_t head[] = { t->scom, t->ldbar, t->hz, t->samples, t->lost, t->nrecords, t->nmaps };
	for (unsigned i = 0; i < sizeof head / sizeof head[0]; i++)
		bad |= put(f, head[i]);
	for (unsigned i = 0; i < t->nmaps; i++) {
		size_t n = strlen(t->maps[i].path);
		bad |= put(f, t->maps[i].start) | put(f, t->maps[i].len) | put(f, t->maps[i].pgoff) | put(f, n);
		bad |= fwrite(t->maps[i].path, 1, n, f) != n;
	}
	size_t bytes = (size_t)t->nrecords * IMC_TRACE_RECORD_BYTES;
	bad |= fwrite(t->records, 1, bytes, f) != bytes;
	int e = errno;
	if (fclose(f) != 0 && !bad) {
		bad = 1;
		e = errno;
	}
	return bad ? heritage_fail(-(e ? e : EIO), "%s: writing the trace: %s", path, strerror(e ? e : EIO)) : 0;
}

void imc_trace_file_free(struct imc_trace_file *t)
{
	for (unsigned i = 0; i < t->nmaps; i++)
		free(t->maps[i].path);
	free(t->maps);
	free(t->records);
	memset(t, 0, sizeof *t);
}

int imc_trace_file_read(const char *path, struct imc_trace_file *t)
{
	char magic[8];
	uint64_t head[7];

	memset(t, 0, sizeof *t);
	FILE *f = fopen(path, "rbe");
	if (!f)
		return heritage_fail(-errno, "%s: %s", path, strerror(errno));
	if (fread(magic, 1, 8, f) != 8 || memcmp(magic, IMC_TRACE_FILE_MAGIC, 8) != 0) {
		fclose(f);
		return heritage_fail(-EINVAL, "%s: not an imc trace file (no %s magic)", path, IMC_TRACE_FILE_MAGIC);
	}
	for (unsigned i = 0; i < 7; i++)
		if (get(f, &head[i])) {
			fclose(f);
			return heritage_fail(-EINVAL, "%s: truncated in the header", path);
		}
	if (head[5] > 1u << 24 || head[6] > 1u << 16) {
		fclose(f);
		return heritage_fail(-EINVAL, "%s: %llu records, %llu mappings: not a trace this library writes", path,
		                     (unsigned long long)head[5], (unsigned long long)head[6]);
	}
	t->scom = head[0];
	t->ldbar = head[1];
	t->hz = head[2];
	t->samples = head[3];
	t->lost = head[4];
	unsigned nrec = (unsigned)head[5], nmaps = (unsigned)head[6];
	t->maps = calloc(nmaps ? nmaps : 1, sizeof *t->maps);
	t->records = malloc(nrec ? (size_t)nrec * IMC_TRACE_RECORD_BYTES : 1);
	if (!t->maps || !t->records) {
		fclose(f);
		imc_trace_file_free(t);
		return heritage_fail(-ENOMEM, "%s: no memory for %u records", path, nrec);
	}
	for (unsigned i = 0; i < nmaps; i++) {
		uint64_t v[4];
		if (get(f, &v[0]) || get(f, &v[1]) || get(f, &v[2]) || get(f, &v[3]) || v[3] > 4096)
			goto truncated;
		char *p = malloc(v[3] + 1);
		if (!p || fread(p, 1, v[3], f) != v[3]) {
			free(p);
			goto truncated;
		}
		p[v[3]] = '\0';
		t->maps[t->nmaps++] = (struct imc_trace_map){ .start = v[0], .len = v[1], .pgoff = v[2], .path = p };
	}
	t->nrecords = (unsigned)(fread(t->records, IMC_TRACE_RECORD_BYTES, nrec, f));
	fclose(f);
	if (t->nrecords != nrec) {
		unsigned got = t->nrecords;
		imc_trace_file_free(t);
		return heritage_fail(-EINVAL, "%s: truncated: %u of %u records", path, got, nrec);
	}
	return 0;
truncated:
	fclose(f);
	imc_trace_file_free(t);
	return heritage_fail(-EINVAL, "%s: truncated in the executable mappings", path);
}
