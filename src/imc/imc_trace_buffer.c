/*
 * The trace buffer: the hardware's quiet wrap and the kernel's walk
 * (imc_trace_buffer.h; kernel arch/powerpc/perf/imc-pmu.c
 * trace_imc_prepare_sample, dump_trace_imc_data, trace_imc_event_stop).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "common/heritage_error.h"
#include "imc/imc_trace_buffer.h"

int imc_trace_buffer_init(struct imc_trace_buffer *b, unsigned buffersize)
{
	memset(b, 0, sizeof *b);
	unsigned n = imc_scom_entries(buffersize);
	if (n == 0)
		return heritage_fail(-EINVAL, "trace BUFFERSIZE %u is not 0-4 (4K, 8K, 16K, 32K, 64K entries)", buffersize);
	/* Zero-filled, as the kernel's trace_imc_mem_alloc (alloc_pages_node
	 * __GFP_ZERO) gives it, and 8 KiB aligned, the LDBAR alignment
	 * (counter address = IBM bits 8:50): mmap aligns to the page only, so
	 * map 8 KiB more and start at the first 8 KiB boundary. */
	size_t len = (size_t)n * IMC_TRACE_RECORD_BYTES + IMC_LDBAR_ALIGN;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return heritage_fail(-ENOMEM, "trace buffer of %u entries (%u KiB): %s", n,
		                     n * IMC_TRACE_RECORD_BYTES / 1024, strerror(errno));
	b->map = m;
	b->map_len = len;
	b->mem = (unsigned char *)(((uintptr_t)m + IMC_LDBAR_ALIGN - 1) & ~(uintptr_t)(IMC_LDBAR_ALIGN - 1));
	b->entries = n;
	return 0;
}

void imc_trace_buffer_free(struct imc_trace_buffer *b)
{
	if (b->map)
		munmap(b->map, b->map_len);
	memset(b, 0, sizeof *b);
}

void imc_trace_buffer_append(struct imc_trace_buffer *b, const struct imc_trace_record *r)
{
	imc_trace_record_pack(b->mem + (size_t)b->pos * IMC_TRACE_RECORD_BYTES, r);
	b->written++;
	if (++b->pos == b->entries) {
		b->pos = 0;
		b->wraps++;
	}
}

void imc_trace_buffer_reset(struct imc_trace_buffer *b)
{
	memset(b->mem, 0, 8);
	b->pos = 0;
	b->written = 0;
	b->wraps = 0;
}

const char *imc_walk_stop_name(enum imc_walk_stop s)
{
	switch (s) {
	case IMC_WALK_END: return "end of buffer";
	case IMC_WALK_EMPTY: return "empty entry (DW0 = 0)";
	case IMC_WALK_NOT_INCREASING: return "DW0 not above the previous record's";
	case IMC_WALK_TB_MISMATCH: return "DW0 & 0x3ffffffffff != DW7";
	}
	return "?";
}

void imc_trace_walk(const void *mem, unsigned entries, imc_trace_record_fn fn, void *arg, struct imc_trace_walk *w)
{
	const unsigned char *p = mem;
	uint64_t prev = 0;
	int stopped = 0;

	memset(w, 0, sizeof *w);
	w->stop = IMC_WALK_END;
	w->stop_index = entries;
	for (unsigned i = 0; i < entries && !stopped; i++) {
		struct imc_trace_record r;
		imc_trace_record_unpack(p + (size_t)i * IMC_TRACE_RECORD_BYTES, &r);
		/* The kernel's order: DW0 > prev first, then DW7. */
		enum imc_walk_stop why = IMC_WALK_END;
		if (!(r.timebase > prev))
			why = r.timebase == 0 ? IMC_WALK_EMPTY : IMC_WALK_NOT_INCREASING;
		else if ((r.timebase & IMC_TRACE_TB_MASK) != r.tb2)
			why = IMC_WALK_TB_MISMATCH;
		if (why != IMC_WALK_END) {
			w->stop = why;
			w->stop_index = i;
			break;
		}
		prev = r.timebase;
		w->valid++;
		if (fn && fn(&r, arg)) {
			stopped = 1;
			w->stop_index = i + 1;
		}
	}
}

void imc_trace_buffer_take(struct imc_trace_buffer *b, imc_trace_record_fn fn, void *arg, struct imc_trace_walk *w)
{
	imc_trace_walk(b->mem, b->entries, fn, arg, w);
	w->lost = b->written > w->valid ? b->written - w->valid : 0;
	imc_trace_buffer_reset(b);
}
