/*
 * imc's perf backend through PAPI: the real-IMC path (imc(3), REAL IMC)
 * on this machine, with the sysfs fixture src/tests/imc-sysfs/software
 * (thread_imc and core_imc whose perf type is PERF_TYPE_SOFTWARE) and the
 * catalog src/tests/imc-fixtures/software.dtb that names their events
 * (tests/cases/imc_perf.test sets PAPI_HERITAGE_IMC_SYSFS_ROOT,
 * PAPI_HERITAGE_IMC_CATALOG and PAPI_HERITAGE_IMC_BACKEND=perf):
 *   - thread_imc::TASK_CLOCK counts this thread's CPU time in ns: equal to
 *     CLOCK_THREAD_CPUTIME_ID over start..stop within 10 % + 2 ms;
 *   - thread_imc::PAGE_FAULTS counts the faults of 64 fresh pages: 64..96;
 *   - an event the kernel's PMU does not have is PAPI_ENOSUPP, naming it;
 *   - core_imc::CPU_CLOCK:cpu=0 counts a whole CPU: where this account may
 *     (root, perf_event_paranoid <= 0), ~ the wall time; where not, the add
 *     fails saying what would allow it.
 * Where perf software events are refused to the account, the events are
 * unavailable with the probe's reason and the test skips with it.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "heritage_test.h"

static double clock_s(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void spin(double seconds)
{
	volatile unsigned long x = 0;
	double end = clock_s(CLOCK_THREAD_CPUTIME_ID) + seconds;
	while (clock_s(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 100000; i++)
			x += (unsigned long)i;
}

int main(void)
{
	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	if (rc != PAPI_VER_CURRENT) {
		fprintf(stderr, "PAPI_library_init: %d\n", rc);
		return 1;
	}
	int set = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&set));
	rc = PAPI_add_named_event(set, "imc:::thread_imc::TASK_CLOCK");
	if (rc != PAPI_OK) {
		struct papi_heritage_mechanism m;
		int i = papi_heritage_mechanism_index("perf_sw");
		EXPECT(i >= 0 && papi_heritage_mechanism(i, &m) == PAPI_OK, "no perf_sw mechanism");
		EXPECT(m.state != PAPI_HERITAGE_MECH_WORKS, "TASK_CLOCK refused although perf software events work: %s",
		       papi_heritage_last_error());
		if (heritage_test_done("imc_perf (refused)") != 0)
			return 1;
		printf("SKIPPED: the perf backend cannot count here: %s\n", papi_heritage_last_error());
		return 77;
	}
	CHECK_PAPI(PAPI_add_named_event(set, "imc:::thread_imc::PAGE_FAULTS"));
	int code;
	struct papi_heritage_event_facts facts;
	CHECK_PAPI(PAPI_event_name_to_code("imc:::thread_imc::TASK_CLOCK", &code));
	CHECK_PAPI(papi_heritage_event_facts(code, &facts));
	EXPECT(facts.source == PAPI_HERITAGE_MEASURED, "TASK_CLOCK source %d, want measured", (int)facts.source);
	PAPI_event_info_t info;
	CHECK_PAPI(PAPI_get_event_info(code, &info));
	EXPECT(strstr(info.long_descr, "the kernel's thread_imc PMU through perf_event") != NULL,
	       "description does not name the kernel's PMU: %s", info.long_descr);

	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	long long v[2];
	double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	CHECK_PAPI(PAPI_start(set));
	char *mem = mmap(NULL, 64 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT(mem != MAP_FAILED, "mmap");
	for (int p = 0; mem != MAP_FAILED && p < 64; p++)
		mem[(size_t)p * page] = 1;
	spin(0.1);
	CHECK_PAPI(PAPI_stop(set, v));
	double c1 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	double cpu_ns = (c1 - c0) * 1e9;
	printf("thread_imc::TASK_CLOCK %lld ns (thread CPU time around it %.0f ns), PAGE_FAULTS %lld (64 pages)\n", v[0],
	       cpu_ns, v[1]);
	EXPECT(v[0] > 0 && v[0] <= cpu_ns * 1.10 + 2e6 && v[0] >= cpu_ns * 0.90 - 2e6,
	       "TASK_CLOCK %lld ns, the thread's CPU time %.0f ns", v[0], cpu_ns);
	EXPECT(v[1] >= 64 && v[1] <= 96, "PAGE_FAULTS %lld for 64 fresh pages", v[1]);
	CHECK_PAPI(PAPI_cleanup_eventset(set));

	rc = PAPI_add_named_event(set, "imc:::thread_imc::NOT_IN_SYSFS");
	EXPECT(rc == PAPI_ENOSUPP, "an event the kernel's PMU lacks gave %d, want PAPI_ENOSUPP", rc);
	EXPECT(strstr(papi_heritage_last_error(), "NOT_IN_SYSFS") != NULL, "reason does not name it: %s",
	       papi_heritage_last_error());
	printf("NOT_IN_SYSFS: %s\n", papi_heritage_last_error());

	rc = PAPI_add_named_event(set, "imc:::core_imc::CPU_CLOCK:cpu=0");
	if (rc == PAPI_OK) {
		double w0 = clock_s(CLOCK_MONOTONIC);
		CHECK_PAPI(PAPI_start(set));
		usleep(50000);
		CHECK_PAPI(PAPI_stop(set, v));
		double wall_ns = (clock_s(CLOCK_MONOTONIC) - w0) * 1e9;
		printf("core_imc::CPU_CLOCK:cpu=0 %lld ns over %.0f ns of wall time\n", v[0], wall_ns);
		EXPECT(v[0] > 0 && v[0] <= wall_ns * 1.05 + 2e6, "CPU_CLOCK of CPU 0 %lld ns over %.0f ns", v[0],
		       wall_ns);
	} else {
		printf("core_imc::CPU_CLOCK:cpu=0 refused: %s\n", papi_heritage_last_error());
		EXPECT(strstr(papi_heritage_last_error(), "perf_event_paranoid") != NULL ||
		           strstr(papi_heritage_last_error(), "CAP_PERFMON") != NULL,
		       "the refusal does not say what would allow it: %s", papi_heritage_last_error());
	}
	return heritage_test_done("imc_perf");
}
