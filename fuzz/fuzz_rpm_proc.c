/*
 * What rpmd and the paragon_rpm model read from the kernel's text files
 * (rpm_model.c: /proc/stat, /proc/interrupts, /proc/net/dev; rpm_perf.c:
 * /proc/self/mounts for tracefs).  They run in a fault handler, without
 * allocation, over whatever text the file held.
 *
 * Input: a selector byte, then the text.  Invariant: the CPU count stays
 * within the arrays the sample has.
 */
#include "fuzz.h"
#include "paragon/rpm_model.h"
#include "paragon/rpm_perf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	char *text = fuzz_cstr(data + 1, size - 1);
	static struct rpm_host_sample s;
	memset(&s, 0, sizeof s);
	switch (data[0] % 4) {
	case 0: rpm_parse_stat(text, &s); break;
	case 1:
		/* /proc/interrupts is read after /proc/stat, which set ncpus. */
		s.ncpus = (unsigned)(data[0] >> 2) * 8 + 1;
		rpm_parse_interrupts(text, &s);
		break;
	case 2: rpm_parse_netdev(text, &s); break;
	default: {
		char dir[512];
		if (rpm_parse_tracefs_mount(text, dir, sizeof dir) == 0)
			FUZZ_CHECK(memchr(dir, '\0', sizeof dir) != NULL, "unterminated");
		break;
	}
	}
	FUZZ_CHECK(s.ncpus <= RPM_MAX_CPUS, "%u CPUs", s.ncpus);
	free(text);
	return 0;
}
