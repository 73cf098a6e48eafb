/*
 * The public trace API (include/papi_heritage_imc_trace.h) over the trace
 * engine (imc_trace.h): hand-overs are collected in an array that next()
 * walks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/heritage_error.h"
#include "imc/imc_trace.h"
#include "imc/imc_trace_file.h"
#include "papi_heritage_imc_trace.h"

struct papi_heritage_imc_trace {
	struct imc_trace_session *s;
	unsigned hz;
	struct papi_heritage_imc_record *recs;
	size_t n, cap, next;
	char stop_reason[64];
	int oom;
};

static int collect(const struct imc_trace_record *r, void *arg)
{
	struct papi_heritage_imc_trace *t = arg;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 4096;
		struct papi_heritage_imc_record *m = realloc(t->recs, cap * sizeof *m);
		if (!m) {
			t->oom = 1;
			return 1;
		}
		t->recs = m;
		t->cap = cap;
	}
	struct papi_heritage_imc_record *o = &t->recs[t->n++];
	o->timebase = r->timebase;
	o->pc = r->pc;
	o->mode = imc_trace_record_mode(r);
	o->pid = (unsigned)(r->pidr & 0xffffffffu);
	for (int i = 0; i < 4; i++)
		o->cpmc[i] = r->cpmc[i];
	return 0;
}

HERITAGE_PUBLIC int papi_heritage_imc_trace_start(papi_heritage_imc_trace_t **trace, unsigned hz, int buffer_size)
{
	struct imc_trace_config c;
	int err;

	if (!trace)
		return heritage_fail(-EINVAL, "papi_heritage_imc_trace_start: trace is NULL");
	*trace = NULL;
	if ((err = imc_trace_config_default(&c)))
		return err;
	if (hz)
		c.hz = hz;
	if (buffer_size >= 0)
		c.buffersize = (unsigned)buffer_size;
	else if (buffer_size != -1)
		return heritage_fail(-EINVAL, "papi_heritage_imc_trace_start: buffer_size %d is not 0-4 or -1", buffer_size);
	if (c.buffersize > IMC_SCOM_BUFFERSIZE_MAX)
		return heritage_fail(-EINVAL, "papi_heritage_imc_trace_start: BUFFERSIZE %u is not 0-4 (4K-64K entries)",
		                     c.buffersize);
	struct papi_heritage_imc_trace *t = calloc(1, sizeof *t);
	if (!t)
		return heritage_fail(-ENOMEM, "papi_heritage_imc_trace_start: no memory");
	t->hz = c.hz;
	if ((err = imc_trace_start(&t->s, &c))) {
		free(t);
		return err;
	}
	*trace = t;
	return 0;
}

static int hand_over(struct papi_heritage_imc_trace *t)
{
	struct imc_trace_walk w;
	imc_trace_take(t->s, collect, t, &w);
	snprintf(t->stop_reason, sizeof t->stop_reason, "%s", imc_walk_stop_name(w.stop));
	if (t->oom)
		return heritage_fail(-ENOMEM, "imc trace: no memory for the records handed over (%zu kept)", t->n);
	return 0;
}

HERITAGE_PUBLIC int papi_heritage_imc_trace_read(papi_heritage_imc_trace_t *t)
{
	if (!t)
		return heritage_fail(-EINVAL, "papi_heritage_imc_trace_read: trace is NULL");
	return hand_over(t);
}

HERITAGE_PUBLIC int papi_heritage_imc_trace_stop(papi_heritage_imc_trace_t *t)
{
	if (!t)
		return heritage_fail(-EINVAL, "papi_heritage_imc_trace_stop: trace is NULL");
	int err = imc_trace_stop(t->s);
	return err ? err : hand_over(t);
}

HERITAGE_PUBLIC int papi_heritage_imc_trace_next(papi_heritage_imc_trace_t *t, struct papi_heritage_imc_record *r)
{
	if (!t || !r)
		return heritage_fail(-EINVAL, "papi_heritage_imc_trace_next: NULL argument");
	if (t->next >= t->n)
		return 0;
	*r = t->recs[t->next++];
	return 1;
}

HERITAGE_PUBLIC int papi_heritage_imc_trace_info(papi_heritage_imc_trace_t *t, struct papi_heritage_imc_trace_info *info)
{
	struct imc_trace_stats st;
	if (!t || !info)
		return heritage_fail(-EINVAL, "papi_heritage_imc_trace_info: NULL argument");
	imc_trace_get_stats(t->s, &st);
	memset(info, 0, sizeof *info);
	info->records = st.handed;
	info->lost = st.lost;
	info->samples = st.samples;
	info->reordered = st.reordered;
	info->entries = imc_trace_entries(t->s);
	info->hz = t->hz;
	info->scom = imc_trace_scom(t->s);
	info->ldbar = imc_trace_ldbar(t->s);
	snprintf(info->stop_reason, sizeof info->stop_reason, "%s", t->stop_reason);
	return 0;
}

/* Executable file mappings of this process, from /proc/self/maps. */
static int self_maps(struct imc_trace_file *f)
{
	FILE *m = fopen("/proc/self/maps", "re");
	char line[4096];
	unsigned cap = 0;
	if (!m)
		return heritage_fail(-errno, "/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof line, m)) {
		unsigned long long lo, hi, off;
		char perm[8], path[3072] = "";
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %3071[^\n]", &lo, &hi, perm, &off, path) < 4 ||
		    perm[2] != 'x' || path[0] != '/')
			continue;
		if (f->nmaps == cap) {
			unsigned c = cap ? cap * 2 : 32;
			struct imc_trace_map *n = realloc(f->maps, c * sizeof *n);
			if (!n)
				break;
			f->maps = n;
			cap = c;
		}
		char *p = strdup(path);
		if (!p)
			break;
		f->maps[f->nmaps++] = (struct imc_trace_map){ .start = lo, .len = hi - lo, .pgoff = off, .path = p };
	}
	fclose(m);
	return 0;
}

HERITAGE_PUBLIC int papi_heritage_imc_trace_save(papi_heritage_imc_trace_t *t, const char *path)
{
	struct imc_trace_file f;
	struct imc_trace_stats st;
	int err;

	if (!t || !path)
		return heritage_fail(-EINVAL, "papi_heritage_imc_trace_save: NULL argument");
	memset(&f, 0, sizeof f);
	imc_trace_get_stats(t->s, &st);
	f.scom = imc_trace_scom(t->s);
	f.ldbar = imc_trace_ldbar(t->s);
	f.hz = t->hz;
	f.samples = st.samples;
	f.lost = st.lost;
	f.records = malloc(t->n ? t->n * IMC_TRACE_RECORD_BYTES : 1);
	if (!f.records)
		return heritage_fail(-ENOMEM, "papi_heritage_imc_trace_save: no memory for %zu records", t->n);
	for (size_t i = 0; i < t->n; i++) {
		const struct papi_heritage_imc_record *r = &t->recs[i];
		struct imc_trace_record raw = { .timebase = r->timebase, .pc = r->pc,
		                                .pidr = (uint64_t)r->mode << IMC_TRACE_MODE_SHIFT | r->pid };
		for (int k = 0; k < 4; k++)
			raw.cpmc[k] = r->cpmc[k];
		imc_trace_record_pack(f.records + i * IMC_TRACE_RECORD_BYTES, &raw);
	}
	f.nrecords = (unsigned)t->n;
	if ((err = self_maps(&f)) == 0)
		err = imc_trace_file_write(path, &f);
	imc_trace_file_free(&f);
	return err;
}

HERITAGE_PUBLIC void papi_heritage_imc_trace_free(papi_heritage_imc_trace_t *t)
{
	if (!t)
		return;
	imc_trace_free(t->s);
	free(t->recs);
	free(t);
}
