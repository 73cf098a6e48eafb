/*
 * The rpmd service page as a reader takes it (rpm_service.c): a shared
 * object another process wrote, checked (rpm_service_check), searched
 * (rpm_service_find_cpu) and read under its seqlock (rpm_service_read_cpu),
 * and its heartbeat judged (rpm_service_stale_at).
 *
 * Input: the page's bytes (the rest zero), a CPU to find and a time at the
 * end.  The sequence is made even: an odd one is a writer at work, which
 * the reader waits out (up to 100 ms), not a parsing question.
 * Invariant: a page the check accepts has 1..RPM_MAX_CPUS CPUs, and an
 * entry found is one of them.
 */
#include <errno.h>
#include <stddef.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "paragon/rpm_service.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rpm_service_page p;
	if (size < 12)
		return 0;
	uint32_t os;
	uint64_t now;
	memcpy(&os, data + size - 12, 4);
	memcpy(&now, data + size - 8, 8);
	size -= 12;
	memset(&p, 0, sizeof p);
	memcpy(&p, data, size < sizeof p ? size : sizeof p);
	p.seq &= ~1ull;
	struct stat st = { .st_mode = S_IFREG | 0644, .st_uid = 0, .st_size = sizeof p };
	char why[512];
	int rc = rpm_service_check(&st, (uid_t)-1, &p, why, sizeof why);
	FUZZ_CHECK(rc == 0 || rc == -EPROTO, "%d", rc);
	if (rc)
		return 0;
	FUZZ_CHECK(p.ncpus >= 1 && p.ncpus <= RPM_MAX_CPUS, "%u CPUs", p.ncpus);
	int i = rpm_service_find_cpu(&p, os);
	FUZZ_CHECK(i == -1 || ((unsigned)i < p.ncpus && p.cpu[i].os == os), "CPU %u at %d", os, i);
	uint64_t out[RPM_PERF_NCOUNTS], hb;
	for (unsigned k = 0; k < p.ncpus && k < 4; k++)
		FUZZ_CHECK(rpm_service_read_cpu(&p, k, out, &hb) == 0, "entry %u", k);
	FUZZ_CHECK(rpm_service_read_cpu(&p, RPM_MAX_CPUS, out, &hb) == -EINVAL, "entry past the end");
	for (int alive = 0; alive < 2; alive++)
		rpm_service_stale_at(p.interval_ns, p.heartbeat_ns, now, alive);
	return 0;
}
