/*
 * Range requests and the Itanium 2 mapping (src/rangemap), with the
 * invariants of rangemap.h and of the seed (001, PAPI's DataRange page:
 * actual = [start - start_off, end + end_off)) checked on every result.
 *
 * Input: start (8 bytes), end (8), a flags byte: bit 0 instruction range,
 * bit 1 exact mode, bits 2-4 RANGEMAP_INSTR_* flags, bit 5 "end is a
 * length" (small ranges near any start, where the mapping is interesting),
 * then a probe address (8) for rangemap_cover_overlaps.
 */
#include <errno.h>

#include "fuzz.h"
#include "rangemap/rangemap.h"

static uint64_t u64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static void check(uint64_t start, uint64_t end, int instr, enum rangemap_mode mode, unsigned flags, uint64_t probe)
{
	struct rangemap_result r;
	memset(&r, 0xa5, sizeof r);
	int rc = instr ? rangemap_instr_flags(start, end, mode, flags, &r) : rangemap_data(start, end, mode, &r);
	if (end <= start) {
		FUZZ_CHECK(rc == -EINVAL, "[%#llx, %#llx): rc %d", (unsigned long long)start, (unsigned long long)end, rc);
		return;
	}
	if (rc == -ERANGE) {
		FUZZ_CHECK(mode == RANGEMAP_COARSE, "exact mode refused [%#llx, %#llx)", (unsigned long long)start,
		           (unsigned long long)end);
		return;
	}
	FUZZ_CHECK(rc == 0, "[%#llx, %#llx) %s mode %d flags %#x: rc %d", (unsigned long long)start,
	           (unsigned long long)end, instr ? "instr" : "data", mode, flags, rc);

	/* The cover: 1-4 sorted, disjoint, non-adjacent, non-empty intervals. */
	FUZZ_CHECK(r.ncover >= 1 && r.ncover <= RANGEMAP_MAX_PAIRS, "ncover %u", r.ncover);
	for (unsigned i = 0; i < r.ncover; i++) {
		FUZZ_CHECK(r.cover[i].start < r.cover[i].end, "cover %u empty", i);
		if (i)
			FUZZ_CHECK(r.cover[i - 1].end < r.cover[i].start, "cover %u not after %u", i, i - 1);
	}
	/* The cover contains the request: one interval holds all of it. */
	int held = 0;
	for (unsigned i = 0; i < r.ncover; i++)
		held |= r.cover[i].start <= start && end <= r.cover[i].end;
	FUZZ_CHECK(held, "[%#llx, %#llx) not inside the cover", (unsigned long long)start, (unsigned long long)end);
	/* The seed's offsets: actual = [start - start_off, end + end_off). */
	FUZZ_CHECK(r.start_off <= start && r.cover[0].start == start - r.start_off, "start_off %#llx",
	           (unsigned long long)r.start_off);
	FUZZ_CHECK(r.end_off <= UINT64_MAX - end && r.cover[r.ncover - 1].end == end + r.end_off, "end_off %#llx",
	           (unsigned long long)r.end_off);

	if (mode == RANGEMAP_EXACT) {
		FUZZ_CHECK(r.ncover == 1 && r.cover[0].start == start && r.cover[0].end == end && r.start_off == 0 &&
		           r.end_off == 0 && r.npairs == 0 && !r.fine, "exact mode is not the request");
	} else if (r.fine) {
		FUZZ_CHECK(instr && !(flags & RANGEMAP_INSTR_NO_FINE) && r.npairs == 0 && r.ncover == 1,
		           "fine mode where it cannot be");
	} else {
		/* The pairs' blocks, merged, are the cover. */
		FUZZ_CHECK(r.npairs >= 1 && r.npairs <= RANGEMAP_MAX_PAIRS, "npairs %u", r.npairs);
		struct rangemap_interval b[RANGEMAP_MAX_PAIRS];
		for (unsigned i = 0; i < r.npairs; i++) {
			FUZZ_CHECK(r.pairs[i].log2size <= RANGEMAP_MAX_LOG2SIZE, "pair %u: 2^%u", i, r.pairs[i].log2size);
			uint64_t size = (uint64_t)1 << r.pairs[i].log2size;
			b[i].start = r.pairs[i].base & ~(size - 1);
			FUZZ_CHECK(b[i].start <= UINT64_MAX - size, "pair %u ends at 2^64", i);
			b[i].end = b[i].start + size;
		}
		for (unsigned i = 1; i < r.npairs; i++)
			for (unsigned j = i; j > 0 && b[j].start < b[j - 1].start; j--) {
				struct rangemap_interval t = b[j];
				b[j] = b[j - 1];
				b[j - 1] = t;
			}
		unsigned n = 0;
		for (unsigned i = 0; i < r.npairs; i++) {
			if (n && b[i].start <= b[n - 1].end) {
				if (b[i].end > b[n - 1].end)
					b[n - 1].end = b[i].end;
			} else {
				b[n++] = b[i];
			}
		}
		FUZZ_CHECK(n == r.ncover, "%u merged blocks, %u cover intervals", n, r.ncover);
		for (unsigned i = 0; i < n; i++)
			FUZZ_CHECK(b[i].start == r.cover[i].start && b[i].end == r.cover[i].end, "block %u is not cover %u", i, i);
	}
	if (!instr)
		FUZZ_CHECK(r.libpfm_start_off == r.start_off && r.libpfm_end_off == r.end_off,
		           "a data range's libpfm offsets differ");
	else if (mode == RANGEMAP_COARSE)
		FUZZ_CHECK(r.start_off == r.libpfm_start_off + (start & 0xf) &&
		           r.end_off == r.libpfm_end_off + ((16 - (end & 0xf)) & 0xf),
		           "instruction offsets are not libpfm's plus the bundle rounding");

	/* rangemap_cover_overlaps agrees with the cover. */
	FUZZ_CHECK(rangemap_cover_overlaps(&r, start, end - start), "the request does not overlap its cover");
	FUZZ_CHECK(!rangemap_cover_overlaps(&r, probe, 0), "an empty access overlaps");
	int in = 0;
	for (unsigned i = 0; i < r.ncover; i++)
		in |= r.cover[i].start <= probe && probe < r.cover[i].end;
	FUZZ_CHECK(rangemap_cover_overlaps(&r, probe, 1) == in, "byte %#llx: overlaps says %d", (unsigned long long)probe,
	           !in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 17)
		return 0;
	uint64_t start = u64(data), end = u64(data + 8);
	unsigned f = data[16];
	uint64_t probe = size >= 25 ? u64(data + 17) : start;
	if (f & 0x20)
		end = start + (end & 0xfffff);
	check(start, end, f & 1, (f & 2) ? RANGEMAP_EXACT : RANGEMAP_COARSE, (f >> 2) & 7, probe);
	return 0;
}
