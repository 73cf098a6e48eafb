/*
 * Reading a perf_event mmap ring: the records the kernel wrote between
 * data_tail and data_head, each handed over whole (copied out when it wraps
 * around the end of the data area), then data_tail advanced so the kernel
 * may reuse the space.
 *
 * The ring is the metadata page (struct perf_event_mmap_page) followed by a
 * power-of-two data area.  Since Linux 4.1 the page says where the data
 * area is (data_offset, data_size); an older kernel leaves both 0, and the
 * area is then the pages after the first, of the size the caller mapped.
 *
 * Async-signal-safe (no allocation, no errno): a sampling backend may walk
 * its ring from its overflow signal's handler.  One walker at a time per
 * ring: the caller serialises.
 */
#ifndef HERITAGE_PERF_RING_H
#define HERITAGE_PERF_RING_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

/* One record: rec[0..have) is its start, header included; have < h->size
 * only when the record is larger than the walker's buffer. */
typedef void (*heritage_perf_record_fn)(void *arg, const struct perf_event_header *h, const unsigned char *rec,
                                        size_t have);

/* Hand every complete record in the ring at meta to fn, in order, then
 * advance data_tail past them.  data_size is the data area's size when the
 * page does not say (0: trust the page); buf[0..bufsize) holds a record
 * while fn sees it.  Returns the number of records walked.  A header that
 * cannot be right (size smaller than a header, or past data_head) stops the
 * walk there: the kernel never writes one, and the walk never loops on it. */
unsigned long heritage_perf_ring_walk(void *meta, uint64_t data_size, unsigned char *buf, size_t bufsize,
                                      heritage_perf_record_fn fn, void *arg);

/* Records of each kind walked so far, for callers that only count. */
struct heritage_perf_ring_counts {
	uint64_t samples;
	uint64_t lost;      /* the sum of PERF_RECORD_LOST's counts */
	uint64_t throttles; /* PERF_RECORD_THROTTLE */
	uint64_t other;
};
/* An fn for heritage_perf_ring_walk that counts into the counts at arg. */
void heritage_perf_ring_count(void *arg, const struct perf_event_header *h, const unsigned char *rec, size_t have);

/* The body of a PERF_RECORD_LOST (after its header: u64 id, u64 lost): the
 * count, or 0 when rec is too short to hold it. */
uint64_t heritage_perf_record_lost(const struct perf_event_header *h, const unsigned char *rec, size_t have);

#endif
