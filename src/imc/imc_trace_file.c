/*
 * Saved traces (imc_trace_file.h).
 */
#include <errno.h>
#include <stdint.h>
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

/* A reader over the bytes of a file: the header's counts are checked
 * against the bytes that are there before anything is allocated for them,
 * so a damaged or hostile header (2^24 records in a 100-byte file) costs
 * nothing. */
struct cursor {
	const unsigned char *p;
	size_t left;
};

static int get(struct cursor *c, uint64_t *v)
{
	if (c->left < 8)
		return -1;
	*v = 0;
	for (int i = 0; i < 8; i++)
		*v = *v << 8 | c->p[i];
	c->p += 8;
	c->left -= 8;
	return 0;
}

int imc_trace_file_parse(const void *buf, size_t len, const char *name, struct imc_trace_file *t)
{
	struct cursor c = { buf, len };
	uint64_t head[7];

	memset(t, 0, sizeof *t);
	if (len < 8 || memcmp(buf, IMC_TRACE_FILE_MAGIC, 8) != 0)
		return heritage_fail(-EINVAL, "%s: not an imc trace file (no %s magic)", name, IMC_TRACE_FILE_MAGIC);
	c.p += 8;
	c.left -= 8;
	for (unsigned i = 0; i < 7; i++)
		if (get(&c, &head[i]))
			return heritage_fail(-EINVAL, "%s: truncated in the header", name);
	if (head[5] > 1u << 24 || head[6] > 1u << 16)
		return heritage_fail(-EINVAL, "%s: %llu records, %llu mappings: not a trace this library writes", name,
		                     (unsigned long long)head[5], (unsigned long long)head[6]);
	/* Each mapping takes at least its 32 bytes of numbers. */
	if (head[6] > c.left / 32)
		return heritage_fail(-EINVAL, "%s: truncated in the executable mappings", name);
	t->scom = head[0];
	t->ldbar = head[1];
	t->hz = head[2];
	t->samples = head[3];
	t->lost = head[4];
	unsigned nrec = (unsigned)head[5], nmaps = (unsigned)head[6];
	t->maps = calloc(nmaps ? nmaps : 1, sizeof *t->maps);
	if (!t->maps)
		return heritage_fail(-ENOMEM, "%s: no memory for %u mappings", name, nmaps);
	for (unsigned i = 0; i < nmaps; i++) {
		uint64_t v[4];
		if (get(&c, &v[0]) || get(&c, &v[1]) || get(&c, &v[2]) || get(&c, &v[3]) || v[3] > 4096 ||
		    v[3] > c.left)
			goto truncated;
		char *p = malloc(v[3] + 1);
		if (!p) {
			imc_trace_file_free(t);
			return heritage_fail(-ENOMEM, "%s: no memory for a mapping's path", name);
		}
		memcpy(p, c.p, v[3]);
		p[v[3]] = '\0';
		c.p += v[3];
		c.left -= v[3];
		t->maps[t->nmaps++] = (struct imc_trace_map){ .start = v[0], .len = v[1], .pgoff = v[2], .path = p };
	}
	if (c.left / IMC_TRACE_RECORD_BYTES < nrec) {
		unsigned got = (unsigned)(c.left / IMC_TRACE_RECORD_BYTES);
		imc_trace_file_free(t);
		return heritage_fail(-EINVAL, "%s: truncated: %u of %u records", name, got, nrec);
	}
	t->records = malloc(nrec ? (size_t)nrec * IMC_TRACE_RECORD_BYTES : 1);
	if (!t->records) {
		imc_trace_file_free(t);
		return heritage_fail(-ENOMEM, "%s: no memory for %u records", name, nrec);
	}
	memcpy(t->records, c.p, (size_t)nrec * IMC_TRACE_RECORD_BYTES);
	t->nrecords = nrec;
	return 0;
truncated:
	imc_trace_file_free(t);
	return heritage_fail(-EINVAL, "%s: truncated in the executable mappings", name);
}

int imc_trace_file_read(const char *path, struct imc_trace_file *t)
{
	memset(t, 0, sizeof *t);
	FILE *f = fopen(path, "rbe");
	if (!f)
		return heritage_fail(-errno, "%s: %s", path, strerror(errno));
	/* The whole file, then the parser: a trace is at most 2^24 records
	 * (1 GiB), and the records are kept in memory anyway. */
	size_t cap = 1 << 16, n = 0;
	unsigned char *buf = malloc(cap);
	int err = buf ? 0 : -ENOMEM;
	while (!err) {
		if (n == cap) {
			unsigned char *nb = cap < (SIZE_MAX >> 1) ? realloc(buf, cap * 2) : NULL;
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0) {
			if (ferror(f))
				err = -EIO;
			break;
		}
	}
	fclose(f);
	if (!err)
		err = imc_trace_file_parse(buf, n, path, t);
	else
		err = heritage_fail(err, "%s: reading the trace: %s", path, strerror(-err));
	free(buf);
	return err;
}
