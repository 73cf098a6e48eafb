/*
 * paragon_rpm through the public PAPI API: rpm_time against clock_gettime,
 * the FP64 events and their event info, measured/modelled/unavailable in the
 * heritage API, the opt-in for unavailable events, the 97% bus invariant,
 * :cpu=N against the sum, and rpms_idle of an idle CPU against wall time.
 */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heritage_test.h"
#include "knob.h"

static int make_set(const char *const *names, int n)
{
	int set = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&set));
	for (int i = 0; i < n; i++)
		CHECK_PAPI(PAPI_add_named_event(set, names[i]));
	return set;
}

static void drop(int set)
{
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
}

static void test_time(void)
{
	const char *names[] = { "paragon_rpm:::rpm_time", "paragon_rpm:::rpm_time_s" };
	int set = make_set(names, 2);
	long long v[2];
	CHECK_PAPI(PAPI_start(set));
	for (int i = 0; i < 1000; i++) {
		long long lo = heritage_test_boot_ticks();
		CHECK_PAPI(PAPI_read(set, v));
		long long hi = heritage_test_boot_ticks();
		if (v[0] < lo - 10000 || v[0] > hi + 10000) {
			EXPECT_EQ("rpm_time within 1 ms of CLOCK_BOOTTIME", v[0], lo);
			break;
		}
		double s = heritage_test_as_double(v[1]);
		if (s < (double)(lo - 10000) / 1e7 || s > (double)(hi + 10000) / 1e7) {
			EXPECT_EQ("rpm_time_s within 1 ms (us)", (long long)(s * 1e6), lo / 10);
			break;
		}
	}
	CHECK_PAPI(PAPI_stop(set, v));
	printf("rpm_time %lld ticks, rpm_time_s %.7f s: within 1 ms of CLOCK_BOOTTIME on 1000 reads\n", v[0],
	       heritage_test_as_double(v[1]));
	drop(set);
}

static void test_info(void)
{
	static const struct {
		const char *name;
		int type;
		const char *units;
		enum papi_heritage_source src;
	} want[] = {
		{ "paragon_rpm:::rpm_time", PAPI_DATATYPE_UINT64, "ticks (100 ns)", PAPI_HERITAGE_MEASURED },
		{ "paragon_rpm:::rpm_time_s", PAPI_DATATYPE_FP64, "s", PAPI_HERITAGE_MEASURED },
		{ "paragon_rpm:::rpms_idle", PAPI_DATATYPE_FP64, "s", PAPI_HERITAGE_MEASURED },
		{ "paragon_rpm:::rpms_idle:cpu=0", PAPI_DATATYPE_FP64, "s", PAPI_HERITAGE_MEASURED },
		{ "paragon_rpm:::rpm_cpu0", PAPI_DATATYPE_UINT64, "cycles (50 MHz bus)", PAPI_HERITAGE_MODELLED },
		{ "paragon_rpm:::rpm_east", PAPI_DATATYPE_UINT64, "64-byte units", PAPI_HERITAGE_MODELLED },
		{ "paragon_rpm:::rpm_exp", PAPI_DATATYPE_UINT64, "cycles (50 MHz bus)", PAPI_HERITAGE_UNAVAILABLE },
		{ "paragon_rpm:::rpms_lockseq", PAPI_DATATYPE_UINT64, "", PAPI_HERITAGE_UNAVAILABLE },
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		int code;
		PAPI_event_info_t info;
		struct papi_heritage_event_facts facts;
		CHECK_PAPI(PAPI_event_name_to_code(want[i].name, &code));
		CHECK_PAPI(PAPI_get_event_info(code, &info));
		CHECK_PAPI(papi_heritage_event_facts(code, &facts));
		EXPECT_EQ(want[i].name, info.data_type, want[i].type);
		EXPECT_EQ(want[i].name, strcmp(info.units, want[i].units), 0);
		EXPECT_EQ(want[i].name, facts.source, want[i].src);
		const char *tag = want[i].src == PAPI_HERITAGE_MEASURED ? "measured" :
		                  want[i].src == PAPI_HERITAGE_MODELLED ? "modelled" : "unavailable";
		EXPECT_EQ(want[i].name, strstr(info.long_descr, tag) != NULL, 1);
	}
	printf("event info: data types, units, measured/modelled/unavailable in %zu events checked\n",
	       sizeof want / sizeof want[0]);

	int set = PAPI_NULL, code;
	CHECK_PAPI(PAPI_create_eventset(&set));
	EXPECT_EQ("no such CPU", PAPI_event_name_to_code("paragon_rpm:::rpms_int:cpu=9999", &code), PAPI_EINVAL);
	EXPECT_EQ("qualifier on rpm_time", PAPI_event_name_to_code("paragon_rpm:::rpm_time:cpu=0", &code), PAPI_EINVAL);
	EXPECT_EQ("unknown event", PAPI_event_name_to_code("paragon_rpm:::rpms_nosuch", &code), PAPI_ENOEVNT);
	knob_set("PAPI_HERITAGE_PARAGON_RPM_MODEL", NULL);
	int rc = PAPI_add_named_event(set, "paragon_rpm:::rpm_exp");
	EXPECT_EQ("adding unavailable rpm_exp without opt-in", rc, PAPI_ENOSUPP);
	EXPECT_EQ("message names the opt-in", strstr(papi_heritage_last_error(), "PAPI_HERITAGE_PARAGON_RPM_MODEL=1") != NULL, 1);
	printf("rpm_exp without opt-in: %s: %s\n", PAPI_strerror(rc), papi_heritage_last_error());
	knob_set("PAPI_HERITAGE_PARAGON_RPM_MODEL", "1");
	CHECK_PAPI(PAPI_add_named_event(set, "paragon_rpm:::rpm_exp"));
	knob_set("PAPI_HERITAGE_PARAGON_RPM_MODEL", NULL);
	drop(set);
}

static void test_bus(void)
{
	const char *names[] = { "paragon_rpm:::rpm_time", "paragon_rpm:::rpm_cpu0", "paragon_rpm:::rpm_cpu1",
		                "paragon_rpm:::rpm_ltu" };
	int set = make_set(names, 4);
	long long v0[4], v[4];
	/* The bus counters' sum is 97.5 % of the bus cycles up to the read's
	 * own clock reading, rpm_time is read just after it: a thread
	 * preempted between the two at PAPI_stop stretches rpm_time alone
	 * (95.99 % over 0.307 s in an ASan CI pass: 4.6 ms).  The share is
	 * checked on the first of 3 runs that it fits; a wrong model misses
	 * in all three. */
	double share = 0;
	int fits = 0;
	for (int attempt = 0; attempt < 3 && !fits; attempt++) {
		CHECK_PAPI(PAPI_start(set));
		CHECK_PAPI(PAPI_read(set, v0));
		usleep(300000);
		CHECK_PAPI(PAPI_stop(set, v));
		/* rpm_time is absolute (10 MHz: 5 bus cycles a tick); the bus
		 * counters count since PAPI_start. */
		long long sum = (v[1] - v0[1]) + (v[2] - v0[2]) + (v[3] - v0[3]);
		double elapsed_cycles = (double)(v[0] - v0[0]) * 5;
		share = (double)sum / elapsed_cycles;
		printf("bus over %.3f s:", elapsed_cycles / 50e6);
		printf("  cpu0 %lld + cpu1 %lld + ltu %lld = %.2f%% of 50 MHz cycles\n", v[1], v[2], v[3], share * 100);
		fits = share > 0.965 && share < 0.985;
	}
	EXPECT_EQ("bus share a little over 97% (97.5% +- 1% for the 1 ms sample age)", fits, 1);
	EXPECT_EQ("cpu0 takes the remainder", v[1] > 0 && v[1] > v[2], 1);
	drop(set);
}

static void test_cpus(void)
{
	const char *names[] = { "paragon_rpm:::rpms_int", "paragon_rpm:::rpms_int:cpu=0", "paragon_rpm:::rpms_int:cpu=1" };
	int n = sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? 3 : 2;
	int set = make_set(names, n);
	long long v[3] = { 0, 0, 0 };
	CHECK_PAPI(PAPI_start(set));
	usleep(200000);
	CHECK_PAPI(PAPI_stop(set, v));
	printf("rpms_int over 0.2 s: all %lld, cpu0 %lld, cpu1 %lld\n", v[0], v[1], v[2]);
	if (n == 3)
		EXPECT_EQ("sum over CPUs", v[0], v[1] + v[2]);
	EXPECT_EQ("interrupts happen (timer ticks)", v[0] > 0, 1);
}

/* rpms_it counts system calls on every CPU (raw_syscalls:sys_enter), so a
 * burst of ours shows up in full, with whatever else ran meanwhile.  The
 * sample behind it is at most 1 ms old: wait that out before the stop. */
static void test_syscalls(void)
{
	const char *names[] = { "paragon_rpm:::rpms_it" };
	struct papi_heritage_event_facts facts;
	int code;
	CHECK_PAPI(PAPI_event_name_to_code(names[0], &code));
	CHECK_PAPI(papi_heritage_event_facts(code, &facts));
	if (facts.source != PAPI_HERITAGE_MEASURED) {
		PAPI_event_info_t info;
		CHECK_PAPI(PAPI_get_event_info(code, &info));
		printf("rpms_it NOT asserted, unavailable here: %s\n", info.long_descr);
		int set = PAPI_NULL;
		CHECK_PAPI(PAPI_create_eventset(&set));
		EXPECT_EQ("unavailable rpms_it refused", PAPI_add_event(set, code), PAPI_ENOSUPP);
		drop(set);
		return;
	}
	int set = make_set(names, 1);
	long long v = 0;
	CHECK_PAPI(PAPI_start(set));
	for (int i = 0; i < 5000; i++)
		(void)getppid();
	usleep(2000);
	CHECK_PAPI(PAPI_stop(set, &v));
	printf("rpms_it over 5000 getppid(): %lld system calls on all CPUs\n", v);
	EXPECT_EQ("every getppid() counted", v >= 5000, 1);
	EXPECT_EQ("not wildly more (other processes' calls only)", v < 5000 + 2000000, 1);
	drop(set);
}

/* Busy seconds (every /proc/stat field but idle and iowait) of one CPU. */
/* /proc/stat's busy seconds of a CPU (user nice system irq softirq steal);
 * *idle: its idle + iowait. */
static double busy_s(int cpu, double *idle)
{
	FILE *f = fopen("/proc/stat", "r");
	char line[512], want[32];
	double busy = -1;
	*idle = -1;
	snprintf(want, sizeof want, "cpu%d ", cpu);
	while (f && fgets(line, sizeof line, f)) {
		unsigned long long x[8] = { 0 };
		if (strncmp(line, want, strlen(want)) == 0 &&
		    sscanf(line + strlen(want), "%llu %llu %llu %llu %llu %llu %llu %llu", &x[0], &x[1], &x[2], &x[3],
		           &x[4], &x[5], &x[6], &x[7]) >= 4)
		{
			busy = (double)(x[0] + x[1] + x[2] + x[5] + x[6] + x[7]) / (double)sysconf(_SC_CLK_TCK);
			*idle = (double)(x[3] + x[4]) / (double)sysconf(_SC_CLK_TCK);
		}
	}
	if (f)
		fclose(f);
	return busy;
}

/* rpms_idle of an idle CPU advances with wall time.  We pin ourselves to
 * CPU 0 and sleep, so the other CPUs have nothing of ours. */
static void test_idle(void)
{
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu > 8)
		ncpu = 8;
	cpu_set_t cs;
	CPU_ZERO(&cs);
	CPU_SET(0, &cs);
	sched_setaffinity(0, sizeof cs, &cs);
	char names_buf[8][64];
	const char *names[9];
	for (int c = 0; c < ncpu; c++) {
		snprintf(names_buf[c], sizeof names_buf[c], "paragon_rpm:::rpms_idle:cpu=%d", c);
		names[c] = names_buf[c];
	}
	names[ncpu] = "paragon_rpm:::rpm_time_s";
	int set = make_set(names, ncpu + 1);
	long long v0[9], v[9];
	double b0[8], b1[8], i0[8], i1[8];
	CHECK_PAPI(PAPI_start(set));
	for (int c = 0; c < ncpu; c++)
		b0[c] = busy_s(c, &i0[c]);
	CHECK_PAPI(PAPI_read(set, v0));
	sleep(1);
	CHECK_PAPI(PAPI_read(set, v));
	for (int c = 0; c < ncpu; c++)
		b1[c] = busy_s(c, &i1[c]);
	long long junk[9];
	CHECK_PAPI(PAPI_stop(set, junk));
	double wall = heritage_test_as_double(v[ncpu]) - heritage_test_as_double(v0[ncpu]);
	int asserted = 0;
	for (int c = 0; c < ncpu; c++) {
		double idle = heritage_test_as_double(v[c]) - heritage_test_as_double(v0[c]);
		double busy = b1[c] - b0[c], stat_idle = i1[c] - i0[c];
		EXPECT_EQ("rpms_idle <= wall + 3 ticks", idle <= wall + 0.012, 1);
		/* This VM loses ticks when the host is loaded: busy + idle fell
		 * short of wall time by up to 0.21 s of 1 s here.  So the pace
		 * is asserted only for a CPU that /proc/stat saw busy for at most
		 * 10% of the second and whose ticks were all accounted (busy +
		 * idle within 5% of wall); on any CPU, rpms_idle is what
		 * /proc/stat itself says, read around the two PAPI_reads (2 ticks
		 * either side). */
		EXPECT(fabs(idle - stat_idle) <= 0.021, "cpu %d: rpms_idle +%.3f s, /proc/stat idle+iowait +%.3f s", c, idle,
		       stat_idle);
		int accounted = busy + stat_idle >= 0.95 * wall;
		int idle_cpu = busy <= 0.1 * wall && accounted;
		printf("cpu %d over %.3f s wall: rpms_idle +%.3f s, /proc/stat idle +%.3f s busy +%.3f s%s\n", c, wall, idle,
		       stat_idle, busy,
		       idle_cpu ? ": idle CPU, rpms_idle must keep pace with wall time"
		                : accounted ? "" : ": ticks lost (the host is loaded), pace not asserted");
		if (idle_cpu) {
			EXPECT_EQ("idle CPU: rpms_idle >= 80% of wall", idle >= 0.8 * wall, 1);
			asserted++;
		}
	}
	if (!asserted)
		printf("rpms_idle pace NOT asserted: no CPU was idle for 90%% of the second with its ticks accounted (the "
		       "machine or its host is busy)\n");
	drop(set);
}

int main(void)
{
	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	if (rc != PAPI_VER_CURRENT) {
		fprintf(stderr, "PAPI_library_init: %d\n", rc);
		return 1;
	}
	if (PAPI_get_component_index("paragon_rpm") < 0) {
		fprintf(stderr, "paragon_rpm is not compiled into this libpapi\n");
		return 1;
	}
	test_time();
	test_info();
	test_bus();
	test_cpus();
	test_syscalls();
	test_idle();
	return heritage_test_done("rpm_papi");
}
