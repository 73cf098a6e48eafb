/*
 * Walking a perf_event mmap ring (heritage_perf_ring.h).
 */
#include "common/heritage_perf_ring.h"

#include <string.h>
#include <unistd.h>

/* n bytes at offset off of the data area, which may wrap around its end. */
static void ring_copy(void *dst, const unsigned char *data, uint64_t size, uint64_t off, size_t n)
{
	uint64_t at = off % size;
	size_t first = at + n <= size ? n : (size_t)(size - at);
	memcpy(dst, data + at, first);
	if (first < n)
		memcpy((unsigned char *)dst + first, data, n - first);
}

unsigned long heritage_perf_ring_walk(void *meta, uint64_t data_size, unsigned char *buf, size_t bufsize,
                                      heritage_perf_record_fn fn, void *arg)
{
	struct perf_event_mmap_page *m = meta;
	uint64_t off = m->data_offset, size = m->data_size;
	if (!size) {
		/* A kernel before 4.1: the data area follows the first page. */
		off = (uint64_t)sysconf(_SC_PAGESIZE);
		size = data_size;
	}
	if (!size || !buf || bufsize < sizeof(struct perf_event_header))
		return 0;
	const unsigned char *data = (const unsigned char *)meta + off;
	/* The acquire pairs with the kernel's store of data_head after the
	 * records: what is below head is written. */
	uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = m->data_tail;
	unsigned long n = 0;

	while (head - tail >= sizeof(struct perf_event_header)) {
		struct perf_event_header h;
		ring_copy(&h, data, size, tail, sizeof h);
		if (h.size < sizeof h || head - tail < h.size)
			break;
		size_t have = h.size < bufsize ? h.size : bufsize;
		ring_copy(buf, data, size, tail, have);
		if (fn)
			fn(arg, (const struct perf_event_header *)(const void *)buf, buf, have);
		tail += h.size;
		n++;
	}
	/* The release orders our reads of the records before the kernel sees
	 * the space free. */
	__atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
	return n;
}

uint64_t heritage_perf_record_lost(const struct perf_event_header *h, const unsigned char *rec, size_t have)
{
	uint64_t lost = 0;
	if (h->type != PERF_RECORD_LOST || have < sizeof *h + 2 * sizeof(uint64_t))
		return 0;
	memcpy(&lost, rec + sizeof *h + sizeof(uint64_t), sizeof lost);
	return lost;
}

void heritage_perf_ring_count(void *arg, const struct perf_event_header *h, const unsigned char *rec, size_t have)
{
	struct heritage_perf_ring_counts *c = arg;
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		c->samples++;
		break;
	case PERF_RECORD_LOST:
		c->lost += heritage_perf_record_lost(h, rec, have);
		break;
	case PERF_RECORD_THROTTLE:
		c->throttles++;
		break;
	default:
		c->other++;
	}
}
