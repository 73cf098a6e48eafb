/*
 * The IMC trace-record reader: a saved trace file (imc_trace_file_parse,
 * what imc_trace_dump reads), its records through the kernel's walk
 * (imc_trace_walk, as imc_trace_dump walks them again: a file is trusted no
 * more than memory), and the LDBAR and TRACE_IMC_SCOM values it carries
 * through their decoders.
 *
 * Invariants: the walk accepts at most the records there are, each
 * accepted record has DW0 rising and DW7 = DW0's low 42 bits; a value a
 * decoder takes encodes back to itself.
 */
#include "fuzz.h"
#include "imc/imc_trace_buffer.h"
#include "imc/imc_trace_codec.h"
#include "imc/imc_trace_file.h"

struct walked {
	unsigned n;
	uint64_t last;
};

static int on_record(const struct imc_trace_record *r, void *arg)
{
	struct walked *w = arg;
	FUZZ_CHECK(r->timebase && (r->timebase & IMC_TRACE_TB_MASK) == r->tb2, "record %u: DW0 %#llx DW7 %#llx", w->n,
	           (unsigned long long)r->timebase, (unsigned long long)r->tb2);
	FUZZ_CHECK(!w->n || r->timebase > w->last, "record %u: DW0 not rising", w->n);
	w->last = r->timebase;
	w->n++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct imc_trace_file t;
	if (imc_trace_file_parse(data, size, "fuzz.trace", &t) != 0)
		return 0;
	FUZZ_CHECK((size_t)t.nrecords * IMC_TRACE_RECORD_BYTES <= size, "%u records in %zu bytes", t.nrecords, size);
	struct walked w = { 0 };
	struct imc_trace_walk s;
	imc_trace_walk(t.records, t.nrecords, on_record, &w, &s);
	FUZZ_CHECK(s.valid == w.n && s.valid <= t.nrecords && s.stop_index <= t.nrecords, "valid %u of %u, stop %u",
	           s.valid, t.nrecords, s.stop_index);
	FUZZ_CHECK(imc_walk_stop_name(s.stop) != NULL, "stop %d", s.stop);
	for (unsigned i = 0; i < t.nmaps; i++)
		FUZZ_CHECK(t.maps[i].path && strlen(t.maps[i].path) <= 4096, "map %u", i);

	struct imc_ldbar l;
	uint64_t v;
	if (imc_ldbar_decode(t.ldbar, &l) == 0) {
		FUZZ_CHECK(imc_ldbar_encode(&l, &v) == 0 && v == t.ldbar, "LDBAR %#llx -> %#llx",
		           (unsigned long long)t.ldbar, (unsigned long long)v);
	}
	struct imc_trace_scom sc;
	if (imc_scom_decode(t.scom, &sc) == 0) {
		FUZZ_CHECK(imc_scom_encode(&sc, &v) == 0 && v == t.scom, "SCOM %#llx -> %#llx", (unsigned long long)t.scom,
		           (unsigned long long)v);
		FUZZ_CHECK(imc_scom_entries(sc.buffersize) != 0, "buffersize %u", sc.buffersize);
	}
	imc_trace_file_free(&t);
	return 0;
}
