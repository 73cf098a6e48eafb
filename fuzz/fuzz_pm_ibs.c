/*
 * The IBS raw-record decoder (pm_ibs.c): one PERF_SAMPLE_RAW payload of the
 * ibs_op PMU into a ProfileMe sample (pm_ibs_decode), the x86 branch
 * classifier it leans on (pm_ibs_x86_branch), and the walk of a perf ring
 * of such samples (pm_ibs_ring_decode over heritage_perf_ring_walk).
 *
 * Input: a mode byte, a classifier answer byte, then the payload (or the
 * ring's data area).  Invariants: a decoded sample defines only fields the
 * decoder produces, has exactly one trap bit, and its other values only on
 * defined fields.
 */
#include <linux/perf_event.h>

#include "fuzz.h"
#include "profileme/pm_ibs.h"

static enum pm_ibs_branch classify(void *arg, uint64_t rip)
{
	(void)rip;
	return (enum pm_ibs_branch)(*(const uint8_t *)arg % 3);
}

static void check_sample(const struct pm_sample *s)
{
	FUZZ_CHECK(!(s->known & ~PM_IBS_FIELDS), "known %#x outside the decoder's fields %#x", s->known,
	           (unsigned)PM_IBS_FIELDS);
	/* Values only on known fields, but for the one trap bit every sample
	 * carries (pm_ibs.c: an unknown trap's bit is a candidate not known). */
	FUZZ_CHECK(!(s->value & ~s->known & ~PM_TRAPS_MASK), "values %#x on fields not known %#x", s->value, s->known);
	FUZZ_CHECK(pm_sample_trap(s) >= 0, "values %#x: not exactly one trap bit", s->value);
}

static void on_sample(void *arg, const struct pm_sample *s)
{
	(*(unsigned long *)arg)++;
	check_sample(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint8_t mode = data[0], answer = data[1];
	data += 2;
	size -= 2;
	pm_ibs_x86_branch(data, size < 16 ? size : 16);
	if (!(mode & 1)) {
		struct pm_sample s;
		char why[256];
		memset(&s, 0, sizeof s);
		/* A copy of exactly size bytes: ASan sees any read past it. */
		uint8_t *raw = malloc(size ? size : 1);
		if (!raw)
			abort();
		memcpy(raw, data, size);
		if (pm_ibs_decode(raw, size, (mode & 2) ? classify : NULL, &answer, &s, (mode & 4) ? why : NULL,
		                  (mode & 4) ? sizeof why : 0) == 0)
			check_sample(&s);
		free(raw);
		return 0;
	}
	/* A ring: the metadata page, then a power-of-two data area holding the
	 * input, with the kernel's head after it and the tail where the mode
	 * byte says (records may wrap around the end). */
	size_t area = 4096;
	while (area < size && area < (1u << 16))
		area <<= 1;
	if (size > area)
		size = area;
	unsigned char *ring = aligned_alloc(4096, 4096 + area);
	if (!ring)
		abort();
	memset(ring, 0, 4096 + area);
	struct perf_event_mmap_page *m = (struct perf_event_mmap_page *)ring;
	m->data_offset = 4096;
	m->data_size = area;
	uint64_t tail = (uint64_t)(mode >> 1) * 64;
	for (size_t i = 0; i < size; i++)
		ring[4096 + (tail + i) % area] = data[i];
	m->data_tail = tail;
	m->data_head = tail + size;
	unsigned long seen = 0;
	struct pm_ibs_walk_stats st = { 0 };
	long n = pm_ibs_ring_decode(ring, 0, classify, &answer, on_sample, &seen, &st);
	FUZZ_CHECK(n >= 0 && (unsigned long)n == seen && st.samples == seen, "%ld handed, %lu seen, %llu counted", n, seen,
	           (unsigned long long)st.samples);
	FUZZ_CHECK(m->data_tail >= tail && m->data_tail <= m->data_head, "tail %llu outside [%llu, %llu]",
	           (unsigned long long)m->data_tail, (unsigned long long)tail, (unsigned long long)m->data_head);
	free(ring);
	return 0;
}
