/*
 * multiplex: PAPI_set_multiplex on the heritage components (issue 20): rows
 * of the API conformance table that component_info.c starts, one per
 * component, each saying what the component claims (cmp_info) and checking
 * what a multiplexed event set then does.
 *
 *   multiplex itanium2|paragon_rpm|alpha21064   (one row per process: the
 *                                                alpha counters keep their
 *                                                residue across runs)
 *
 * Every row:
 *   - claims: kernel_multiplex = 1 (PAPI_set_multiplex reaches the
 *     component's ctl instead of PAPI's software multiplexer, which adds
 *     PAPI_TOT_CYC to every sub-set and so cannot serve another component),
 *     num_mpx_cntrs = the set size the man page documents, and
 *     PAPI_get_cmp_opt(PAPI_MAX_MPX_CTRS) says the same;
 *   - the same work is counted by an unmultiplexed set and by multiplexed
 *     ones made in both orders tools use (PAPI_assign_eventset_component,
 *     PAPI_set_multiplex, then the events; the events, then
 *     PAPI_set_multiplex): each run meets the row's own expectations
 *     (computed here, independently of the component), the values the row
 *     marks exact are equal to the unmultiplexed set's, and
 *     PAPI_get_opt(PAPI_MULTIPLEX) / PAPI_get_multiplex answer 1 for the
 *     multiplexed sets and 0 for the other;
 *   - what must fail does, loudly: PAPI_set_multiplex on a set bound to no
 *     component (PAPI_ENOCMP, the set stays unmultiplexed), twice on one set
 *     (PAPI_EINVAL), and PAPI_MULTIPLEX_FORCE_SW, PAPI's own software
 *     multiplexer (refused with an error code at PAPI_set_opt or at the
 *     first add, never a set that counts nothing);
 *   - alpha21064 also: two events for one counter stay PAPI_ECNFLCT in a
 *     multiplexed set, with a message saying why it cannot be time-sliced.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define RPM_NO_STARTUP_MAP /* the mesh calls only, not the legacy mapping */
#include <i860paragon/rpm.h>

#include "heritage_test.h"
#include "knob.h"

#define MAX_EVENTS 16
#define MAX_OBS 24

/* What one run of a row's work saw: named observations, some exact. */
struct run {
	int n;
	const char *name[MAX_OBS];
	long long v[MAX_OBS];
	unsigned exact;   /* bit i: v[i] must equal the unmultiplexed run's */
};

static void observe(struct run *r, const char *name, long long v, int exact)
{
	if (r->n >= MAX_OBS) {
		fprintf(stderr, "too many observations\n");
		exit(1);
	}
	r->name[r->n] = name;
	r->v[r->n] = v;
	if (exact)
		r->exact |= 1u << r->n;
	r->n++;
}

struct row {
	const char *component;
	/* What the component claims. */
	unsigned kernel_multiplex;
	int num_mpx_cntrs;
	/* What it does: the events of the set (filled in by events(), which
	 * may skip the ones unavailable here, saying why), per-set settings
	 * made after the events (prepare), and the work with its independent
	 * expectations (work: start, work, stop, EXPECT, observe). */
	void (*setup)(void);
	int (*events)(const char **names);
	void (*prepare)(int set);
	void (*work)(int set, const char *how, struct run *r);
	/* Two events no event set can hold together, multiplexed or not,
	 * with what the refusal must say; NULL where none conflict. */
	const char *conflict[2];
	const char *conflict_says;
};

/* ------------------------------------------------------------ itanium2 */

/* One page of ints, alone on its page: the trap backends see every access to
 * the page, exact mode counts those to the requested bytes, all of it here. */
#define IT2_N 1024
static int it2_array[IT2_N] __attribute__((aligned(4096)));

static void it2_setup(void)
{
	heritage_test_require_itanium2_env();
}

static int it2_events(const char **names)
{
	/* :exact=1 before the range: exact mode, offsets 0 (itanium2(3)). */
	names[0] = "itanium2:::LOADS_RETIRED:exact=1";
	names[1] = "itanium2:::STORES_RETIRED:exact=1";
	return 2;
}

static void it2_prepare(int set)
{
	PAPI_option_t opt;
	CHECK_PAPI(heritage_test_range(set, PAPI_DATA_ADDRESS, (const void *)it2_array, (const void *)(it2_array + IT2_N),
	                               &opt));
	EXPECT_EQ("itanium2 exact range: start_off", opt.addr.start_off, 0);
	EXPECT_EQ("itanium2 exact range: end_off", opt.addr.end_off, 0);
}

/* A store pass, a read, a load pass: IT2_N stores, then IT2_N loads, each
 * one int through a volatile pointer (one access per element whatever the
 * compiler's vectoriser would do). */
static void it2_work(int set, const char *how, struct run *r)
{
	volatile int *a = it2_array;
	long long mid[2], v[2];
	long sum = 0;
	char backend[32];

	int rc = PAPI_start(set);
	if (rc == PAPI_ENOSUPP || rc == PAPI_EPERM)
		SKIP("itanium2 cannot count a data range here (%s): %s", PAPI_strerror(rc),
		     papi_heritage_last_error());
	CHECK_PAPI(rc);
	for (int i = 0; i < IT2_N; i++)
		a[i] = i;
	CHECK_PAPI(PAPI_read(set, mid));
	for (int i = 0; i < IT2_N; i++)
		sum += a[i];
	CHECK_PAPI(PAPI_stop(set, v));
	CHECK_PAPI(papi_heritage_itanium2_backend(set, backend, sizeof backend));
	printf("  %-28s backend %s: after the stores %lld loads %lld stores; at stop %lld loads %lld stores\n", how,
	       backend, mid[0], mid[1], v[0], v[1]);
	EXPECT_EQ("the load pass summed the stored values", sum, (long)IT2_N * (IT2_N - 1) / 2);
	EXPECT_EQ("LOADS_RETIRED read after the store pass", mid[0], 0);
	EXPECT_EQ("STORES_RETIRED read after the store pass", mid[1], IT2_N);
	EXPECT_EQ("LOADS_RETIRED at stop", v[0], IT2_N);
	EXPECT_EQ("STORES_RETIRED at stop", v[1], IT2_N);
	observe(r, "LOADS_RETIRED (read)", mid[0], 1);
	observe(r, "STORES_RETIRED (read)", mid[1], 1);
	observe(r, "LOADS_RETIRED", v[0], 1);
	observe(r, "STORES_RETIRED", v[1], 1);
}

/* --------------------------------------------------------- paragon_rpm */

/* The soft counters come from /proc, refreshed at most every 1 ms, and from
 * kernel counts that rpmd publishes every 10 ms: waiting longer than that
 * on each side of PAPI_start and PAPI_stop brackets the component's samples
 * between our own readings of the same files. */
#define RPM_GUARD_US 12000
#define RPM_SENDS 100
#define RPM_SEND_BYTES 640   /* 10 units of 64 bytes a message */
#define RPM_PAGES 64
#define RPM_SYSCALLS 2000
#define RPM_MAX_CPU 8

static int rpm_ncpu;
static int rpm_has_faults, rpm_has_syscalls;
static char rpm_cpu_names[RPM_MAX_CPU][64];

/* Interrupts on all CPUs, summed as /proc/interrupts gives them: the rows
 * with a number in every CPU column (ERR: and MIS: have one total). */
static long long proc_interrupts(void)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[4096];
	int ncols = 0;
	long long total = 0;

	if (!f || !fgets(line, sizeof line, f)) {
		fprintf(stderr, "cannot read /proc/interrupts\n");
		exit(1);
	}
	for (char *p = line; (p = strstr(p, "CPU")) != NULL; p += 3)
		ncols++;
	while (fgets(line, sizeof line, f)) {
		char *p = strchr(line, ':');
		long long row = 0;
		int got = 0;
		if (!p)
			continue;
		p++;
		while (got < ncols) {
			char *end;
			while (*p == ' ')
				p++;
			if (*p < '0' || *p > '9')
				break;
			row += strtoll(p, &end, 10);
			p = end;
			got++;
		}
		if (got == ncols)
			total += row;
	}
	fclose(f);
	return total;
}

/* Idle seconds (idle + iowait) summed over the cpuN lines of /proc/stat. */
static double proc_idle_s(void)
{
	FILE *f = fopen("/proc/stat", "r");
	char line[512];
	double ticks = 0;

	while (f && fgets(line, sizeof line, f)) {
		unsigned long long x[5];
		if (strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9')
			continue;
		char *p = strchr(line, ' ');
		if (p && sscanf(p, "%llu %llu %llu %llu %llu", &x[0], &x[1], &x[2], &x[3], &x[4]) == 5)
			ticks += (double)(x[3] + x[4]);
	}
	if (f)
		fclose(f);
	return ticks / (double)sysconf(_SC_CLK_TCK);
}

/* Whether an event can be added here; if not, say why (its description). */
static int rpm_available(const char *name)
{
	int code;
	struct papi_heritage_event_facts facts;
	CHECK_PAPI(PAPI_event_name_to_code(name, &code));
	CHECK_PAPI(papi_heritage_event_facts(code, &facts));
	if (facts.source != PAPI_HERITAGE_UNAVAILABLE)
		return 1;
	PAPI_event_info_t info;
	CHECK_PAPI(PAPI_get_event_info(code, &info));
	printf("  %s NOT asserted, unavailable here: %s\n", name, info.long_descr);
	return 0;
}

static void rpm_setup(void)
{
	rpm_ncpu = rpm_num_cpus();
	if (rpm_ncpu < 1 || rpm_ncpu > RPM_MAX_CPU)
		SKIP("paragon_rpm: %d CPUs; this test names each one's rpms_int and handles 1 to %d", rpm_ncpu,
		     RPM_MAX_CPU);
	rpm_has_faults = rpm_available("paragon_rpm:::rpms_ptenotp");
	rpm_has_syscalls = rpm_available("paragon_rpm:::rpms_it");
	/* The case runs on a private 1x2 mesh: node 0's east link is ours. */
	if (rpm_mesh_join(0) != 0) {
		fprintf(stderr, "rpm_mesh_join(0): %s\n", rpm_last_error());
		exit(1);
	}
}

/* Positions in the set. */
enum { RPM_TIME, RPM_EAST, RPM_WEST, RPM_IDLE, RPM_INT, RPM_INT_CPU0 };

static int rpm_events(const char **names)
{
	int n = 0;
	names[n++] = "paragon_rpm:::rpm_time";
	names[n++] = "paragon_rpm:::rpm_east";
	names[n++] = "paragon_rpm:::rpm_west";
	names[n++] = "paragon_rpm:::rpms_idle";
	names[n++] = "paragon_rpm:::rpms_int";
	for (int c = 0; c < rpm_ncpu; c++) {
		snprintf(rpm_cpu_names[c], sizeof rpm_cpu_names[c], "paragon_rpm:::rpms_int:cpu=%d", c);
		names[n++] = rpm_cpu_names[c];
	}
	if (rpm_has_faults)
		names[n++] = "paragon_rpm:::rpms_ptenotp";
	if (rpm_has_syscalls)
		names[n++] = "paragon_rpm:::rpms_it";
	return n;
}

static void rpm_work(int set, const char *how, struct run *r)
{
	long long v[MAX_EVENTS];
	const int faults = RPM_INT_CPU0 + rpm_ncpu, syscalls = faults + rpm_has_faults;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	char *mem = mmap(NULL, RPM_PAGES * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	long long int0 = proc_interrupts();
	double idle0 = proc_idle_s();
	usleep(RPM_GUARD_US);
	CHECK_PAPI(PAPI_start(set));
	long long int0_in = proc_interrupts();
	double idle0_in = proc_idle_s();
	for (int i = 0; i < RPM_SENDS; i++)
		if (rpm_mesh_send(1, RPM_SEND_BYTES) != 0) {
			fprintf(stderr, "rpm_mesh_send: %s\n", rpm_last_error());
			exit(1);
		}
	for (int i = 0; i < RPM_PAGES; i++)
		mem[i * page] = 1;     /* a fresh page each: a fault the kernel resolves */
	for (int i = 0; i < RPM_SYSCALLS; i++)
		(void)getppid();
	usleep(50000);                 /* interrupts and idle time to count */
	long long int1_in = proc_interrupts();
	double idle1_in = proc_idle_s();
	usleep(RPM_GUARD_US);
	long long t_lo = heritage_test_boot_ticks();
	CHECK_PAPI(PAPI_stop(set, v));
	long long t_hi = heritage_test_boot_ticks();
	usleep(RPM_GUARD_US);
	long long int1 = proc_interrupts();
	double idle1 = proc_idle_s();
	munmap(mem, RPM_PAGES * page);

	long long per_cpu = 0;
	for (int c = 0; c < rpm_ncpu; c++)
		per_cpu += v[RPM_INT_CPU0 + c];
	double idle = heritage_test_as_double(v[RPM_IDLE]);
	printf("  %-28s rpm_east %lld, rpm_west %lld, rpms_int %lld (CPUs' sum %lld; /proc/interrupts %lld..%lld), "
	       "rpms_idle %.3f s (/proc/stat %.3f..%.3f)", how, v[RPM_EAST], v[RPM_WEST], v[RPM_INT], per_cpu,
	       int1_in - int0_in, int1 - int0, idle, idle1_in - idle0_in, idle1 - idle0);
	if (rpm_has_faults)
		printf(", rpms_ptenotp %lld", v[faults]);
	if (rpm_has_syscalls)
		printf(", rpms_it %lld", v[syscalls]);
	printf("\n");

	EXPECT(v[RPM_TIME] >= t_lo - 10000 && v[RPM_TIME] <= t_hi + 10000,
	       "rpm_time at stop %lld is not within 1 ms of CLOCK_BOOTTIME [%lld, %lld]", v[RPM_TIME], t_lo, t_hi);
	EXPECT_EQ("rpm_east: the units of 64 bytes sent east", v[RPM_EAST], RPM_SENDS * RPM_SEND_BYTES / 64);
	EXPECT_EQ("rpm_west: nothing left west", v[RPM_WEST], 0);
	EXPECT_EQ("rpms_int = the sum of rpms_int:cpu=N (one sample, one interval)", v[RPM_INT], per_cpu);
	EXPECT(v[RPM_INT] >= int1_in - int0_in && v[RPM_INT] <= int1 - int0,
	       "rpms_int %lld outside /proc/interrupts' [%lld, %lld]", v[RPM_INT], int1_in - int0_in, int1 - int0);
	EXPECT(idle >= idle1_in - idle0_in - 1e-9 && idle <= idle1 - idle0 + 1e-9,
	       "rpms_idle %.6f s outside /proc/stat's [%.6f, %.6f]", idle, idle1_in - idle0_in, idle1 - idle0);
	if (rpm_has_faults)
		EXPECT(v[faults] >= RPM_PAGES, "rpms_ptenotp %lld: below the %d pages touched", v[faults], RPM_PAGES);
	if (rpm_has_syscalls)
		EXPECT(v[syscalls] >= RPM_SYSCALLS, "rpms_it %lld: below the %d getppid() calls", v[syscalls],
		       RPM_SYSCALLS);
	observe(r, "rpm_east", v[RPM_EAST], 1);
	observe(r, "rpm_west", v[RPM_WEST], 1);
	observe(r, "rpms_int - sum of rpms_int:cpu=N", v[RPM_INT] - per_cpu, 1);
}

/* ---------------------------------------------------------- alpha21064 */

void alpha_mix_loop(long *p, long n);
extern const char alpha_mix_loop_end[];

static int alpha_in_loop[2], alpha_outside[2];

static void alpha_handler(int set, void *pc, long long vector, void *context)
{
	(void)set;
	(void)context;
	int in = (uintptr_t)pc >= (uintptr_t)alpha_mix_loop && (uintptr_t)pc < (uintptr_t)alpha_mix_loop_end;
	for (int pos = 0; pos < 2; pos++)
		if (vector & (1ll << pos))
			(in ? alpha_in_loop : alpha_outside)[pos]++;
}

static void alpha_setup(void)
{
	/* The exact counts and PCs are the software backend's (the core-PMU
	 * backend's PCs have skid), as in ctests/alpha_overflow. */
	knob_set("PAPI_HERITAGE_ALPHA21064_BACKEND", "software");
	heritage_test_require_backend("alpha21064", "software");
}

static int alpha_events(const char **names)
{
	names[0] = "alpha21064:::STORE_INSNS:width=8";   /* counter 1, every 256 */
	names[1] = "alpha21064:::LOAD_INSNS:width=12";   /* counter 0, every 4096 */
	return 2;
}

static void alpha_prepare(int set)
{
	int code;
	CHECK_PAPI(PAPI_event_name_to_code("alpha21064:::STORE_INSNS:width=8", &code));
	CHECK_PAPI(PAPI_overflow(set, code, 256, 0, alpha_handler));
	CHECK_PAPI(PAPI_event_name_to_code("alpha21064:::LOAD_INSNS:width=12", &code));
	CHECK_PAPI(PAPI_overflow(set, code, 4096, 0, alpha_handler));
}

/* 4096 loads and 4096 stores in alpha_mix_loop: whatever the counters'
 * hidden residues, the loop holds exactly 16 carries of the store counter
 * (every 256) and 1 of the load counter (every 4096); PAPI_stop's values
 * are interrupts x 2^width, including PAPI_start's and PAPI_stop's own. */
static void alpha_work(int set, const char *how, struct run *r)
{
	long buf[2] = { 7, 0 };
	long long v[2];

	memset(alpha_in_loop, 0, sizeof alpha_in_loop);
	memset(alpha_outside, 0, sizeof alpha_outside);
	CHECK_PAPI(PAPI_start(set));
	alpha_mix_loop(buf, 4096);
	CHECK_PAPI(PAPI_stop(set, v));
	printf("  %-28s in the loop %d store and %d load interrupts, %d and %d outside; PAPI_stop %lld, %lld\n", how,
	       alpha_in_loop[0], alpha_in_loop[1], alpha_outside[0], alpha_outside[1], v[0], v[1]);
	EXPECT_EQ("the loop ran", buf[1], 7);
	EXPECT_EQ("STORE_INSNS interrupts in the loop", alpha_in_loop[0], 16);
	EXPECT_EQ("LOAD_INSNS interrupts in the loop", alpha_in_loop[1], 1);
	/* An interrupt PAPI_stop's own instructions raise after its read
	 * reaches the handler but not the value (alpha21064(3)). */
	EXPECT(v[0] >= alpha_in_loop[0] * 256LL && v[0] <= (alpha_in_loop[0] + alpha_outside[0]) * 256LL,
	       "STORE_INSNS at stop %lld: not the interrupts x 256", v[0]);
	EXPECT(v[1] >= alpha_in_loop[1] * 4096LL && v[1] <= (alpha_in_loop[1] + alpha_outside[1]) * 4096LL,
	       "LOAD_INSNS at stop %lld: not the interrupts x 4096", v[1]);
	EXPECT(alpha_outside[0] <= 1 && alpha_outside[1] <= 1,
	       "more than PAPI_start's and PAPI_stop's own interrupts outside the loop (%d, %d)", alpha_outside[0],
	       alpha_outside[1]);
	observe(r, "STORE_INSNS interrupts in the loop", alpha_in_loop[0], 1);
	observe(r, "LOAD_INSNS interrupts in the loop", alpha_in_loop[1], 1);
}

/* ---------------------------------------------------------------- imc */

/* Core and nest counters are clocks here (imc(3), SOURCES: CPM_32MHZ_CYC
 * the wall clock x 32 MHz in units of its scale 512, PM_PB_CYC the wall
 * clock x the assumed 2 GHz PowerBus in units of 256).  Exact mode makes
 * PAPI_start and PAPI_stop update the page, so each count lies between the
 * wall time inside start..stop and the wall time around it. */
static void imc_setup(void)
{
	knob_set("PAPI_HERITAGE_IMC_EXACT", "1");
	knob_set("PAPI_HERITAGE_IMC_NEST_HZ", NULL);
}

static int imc_events(const char **names)
{
	names[0] = "imc:::core_imc::CPM_32MHZ_CYC:cpu=0";
	names[1] = "imc:::nest_powerbus0_imc::PM_PB_CYC:cpu=0";
	return 2;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void imc_work(int set, const char *how, struct run *r)
{
	long long v[2];
	double t0 = mono_s();
	CHECK_PAPI(PAPI_start(set));
	double t1 = mono_s();
	usleep(50000);
	double t2 = mono_s();
	CHECK_PAPI(PAPI_stop(set, v));
	double t3 = mono_s();
	const double core_hz = 32e6 / 512, nest_hz = 2e9 / 256;
	printf("  %-28s core CPM_32MHZ_CYC %lld (%.0f..%.0f), PM_PB_CYC %lld (%.0f..%.0f)\n", how, v[0],
	       (t2 - t1) * core_hz, (t3 - t0) * core_hz, v[1], (t2 - t1) * nest_hz, (t3 - t0) * nest_hz);
	EXPECT(v[0] >= (t2 - t1) * core_hz - 1 && v[0] <= (t3 - t0) * core_hz + 1,
	       "core CPM_32MHZ_CYC %lld outside the wall clock's %.0f..%.0f", v[0], (t2 - t1) * core_hz,
	       (t3 - t0) * core_hz);
	EXPECT(v[1] >= (t2 - t1) * nest_hz - 1 && v[1] <= (t3 - t0) * nest_hz + 1,
	       "PM_PB_CYC %lld outside the wall clock's %.0f..%.0f", v[1], (t2 - t1) * nest_hz, (t3 - t0) * nest_hz);
	/* Both count the same interval: their ratio is the clocks'. */
	observe(r, "PM_PB_CYC / CPM_32MHZ_CYC (x 1000)", v[0] ? v[1] * 1000 / v[0] / 125 : 0, 0);
}

/* ---------------------------------------------------------- profileme */

/* Every event is a view of one sample stream: with the soft backend
 * any = notrap + trap exactly (one known trap bit per sample) and any ~ the
 * thread's CPU time (the period is in ns of it).  Observations are inexact (samples are
 * random), the identity is checked in each run. */
static void pm_setup(void)
{
	knob_set("PAPI_HERITAGE_PROFILEME_PERIOD", NULL);
}

static int pm_events(const char **names)
{
	names[0] = "profileme:::any";
	names[1] = "profileme:::notrap";
	names[2] = "profileme:::trap";
	return 3;
}

static double thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void pm_work(int set, const char *how, struct run *r)
{
	long long v[3];
	volatile long x = 0;
	double t0 = thread_cpu();
	CHECK_PAPI(PAPI_start(set));
	while (thread_cpu() - t0 < 0.2)
		for (int i = 0; i < 100000; i++)
			x += i;
	CHECK_PAPI(PAPI_stop(set, v));
	double cpu = (thread_cpu() - t0) * 1e9;
	printf("  %-28s any %lld notrap %lld trap %lld; thread CPU %.0f ns\n", how, v[0], v[1], v[2], cpu);
	PAPI_event_info_t info;
	int code;
	CHECK_PAPI(PAPI_event_name_to_code("profileme:::any", &code));
	CHECK_PAPI(PAPI_get_event_info(code, &info));
	if (strcmp(info.units, "ns") == 0) {
		EXPECT_EQ("any = notrap + trap", v[0], v[1] + v[2]);
		/* 50 ticks' worth: fewer where the thread shared its CPU
		 * (profileme(3)), never more than it ran. */
		EXPECT(v[0] > 0 && v[0] < 1.3 * cpu, "any %lld ns, the thread ran %.0f ns", v[0], cpu);
	} else {
		/* IBS: a sample whose trap is unknown is in neither. */
		EXPECT(v[1] + v[2] <= v[0], "notrap + trap > any");
	}
	observe(r, "any > 0", v[0] > 0, 1);
}

/* ---------------------------------------------------------------- table */

static const struct row rows[] = {
	{ .component = "itanium2", .kernel_multiplex = 1, .num_mpx_cntrs = 16,
	  .setup = it2_setup, .events = it2_events, .prepare = it2_prepare, .work = it2_work },
	{ .component = "paragon_rpm", .kernel_multiplex = 1, .num_mpx_cntrs = 64,
	  .setup = rpm_setup, .events = rpm_events, .prepare = NULL, .work = rpm_work },
	{ .component = "alpha21064", .kernel_multiplex = 1, .num_mpx_cntrs = 2,
	  .setup = alpha_setup, .events = alpha_events, .prepare = alpha_prepare, .work = alpha_work,
	  .conflict = { "alpha21064:::LOAD_INSNS", "alpha21064:::BRANCH_INSNS" }, .conflict_says = "time-slice" },
	{ .component = "imc", .kernel_multiplex = 1, .num_mpx_cntrs = 8,
	  .setup = imc_setup, .events = imc_events, .prepare = NULL, .work = imc_work,
	  .conflict = { "imc:::core_imc::CPM_32MHZ_CYC:cpu=0", "imc:::thread_imc::CPM_CS_32MHZ_CYC_USER" },
	  .conflict_says = "exclude" },
	{ .component = "profileme", .kernel_multiplex = 1, .num_mpx_cntrs = 32,
	  .setup = pm_setup, .events = pm_events, .prepare = NULL, .work = pm_work },
};

enum order { PLAIN, MPX_FIRST, MPX_AFTER };
static const char *const order_name[] = {
	"unmultiplexed:",
	"assign, multiplex, add:",
	"add, multiplex:",
};

static int multiplexed(int set)
{
	PAPI_option_t opt;
	memset(&opt, 0, sizeof opt);
	opt.multiplex.eventset = set;
	int by_opt = PAPI_get_opt(PAPI_MULTIPLEX, &opt);
	int by_get = PAPI_get_multiplex(set);
	EXPECT_EQ("PAPI_get_multiplex agrees with PAPI_get_opt(PAPI_MULTIPLEX)", by_get, by_opt);
	return by_opt;
}

static void add_events(const struct row *row, int set)
{
	const char *names[MAX_EVENTS];
	int n = row->events(names);
	for (int i = 0; i < n; i++)
		CHECK_PAPI(PAPI_add_named_event(set, names[i]));
}

static void drop(int *set)
{
	CHECK_PAPI(PAPI_cleanup_eventset(*set));
	CHECK_PAPI(PAPI_destroy_eventset(set));   /* PAPI_NULL again */
}

static void run_order(const struct row *row, int cidx, enum order o, struct run *r)
{
	int set = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&set));
	switch (o) {
	case PLAIN:
		add_events(row, set);
		break;
	case MPX_FIRST:
		CHECK_PAPI(PAPI_assign_eventset_component(set, cidx));
		CHECK_PAPI(PAPI_set_multiplex(set));
		add_events(row, set);
		break;
	case MPX_AFTER:
		add_events(row, set);
		CHECK_PAPI(PAPI_set_multiplex(set));
		break;
	}
	EXPECT_EQ(order_name[o], multiplexed(set), o != PLAIN);
	if (row->prepare)
		row->prepare(set);
	memset(r, 0, sizeof *r);
	row->work(set, order_name[o], r);
	EXPECT_EQ("still multiplexed after the run", multiplexed(set), o != PLAIN);
	if (o != PLAIN)
		EXPECT_EQ("multiplexed twice", PAPI_set_multiplex(set), PAPI_EINVAL);
	drop(&set);
}

/* What must fail, and say so. */
static void refusals(const struct row *row, int cidx)
{
	int set = PAPI_NULL, rc;
	PAPI_option_t opt;

	CHECK_PAPI(PAPI_create_eventset(&set));
	EXPECT_EQ("PAPI_set_multiplex on a set bound to no component", PAPI_set_multiplex(set), PAPI_ENOCMP);
	EXPECT_EQ("... leaves it unmultiplexed", multiplexed(set), 0);
	drop(&set);

	/* PAPI's software multiplexer, forced: it cannot count a heritage
	 * event (PAPI_TOT_CYC is not this component's). */
	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_assign_eventset_component(set, cidx));
	memset(&opt, 0, sizeof opt);
	opt.multiplex.eventset = set;
	opt.multiplex.ns = 10000000;
	opt.multiplex.flags = PAPI_MULTIPLEX_FORCE_SW;
	rc = PAPI_set_opt(PAPI_MULTIPLEX, &opt);
	const char *names[MAX_EVENTS];
	row->events(names);
	int add_rc = rc == PAPI_OK ? PAPI_add_named_event(set, names[0]) : rc;
	printf("  PAPI_MULTIPLEX_FORCE_SW, then an event: PAPI_set_opt %s, PAPI_add_named_event %s\n",
	       PAPI_strerror(rc), PAPI_strerror(add_rc));
	EXPECT(add_rc != PAPI_OK, "PAPI_MULTIPLEX_FORCE_SW: PAPI's software multiplexer took %s", names[0]);
	drop(&set);

	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_add_named_event(set, names[0]));
	memset(&opt, 0, sizeof opt);
	opt.multiplex.eventset = set;
	opt.multiplex.ns = 10000000;
	opt.multiplex.flags = PAPI_MULTIPLEX_FORCE_SW;
	rc = PAPI_set_opt(PAPI_MULTIPLEX, &opt);
	printf("  an event, then PAPI_MULTIPLEX_FORCE_SW: PAPI_set_opt %s\n", PAPI_strerror(rc));
	EXPECT(rc != PAPI_OK, "PAPI_MULTIPLEX_FORCE_SW accepted over %s", names[0]);
	drop(&set);

	if (!row->conflict[0])
		return;
	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_assign_eventset_component(set, cidx));
	CHECK_PAPI(PAPI_set_multiplex(set));
	CHECK_PAPI(PAPI_add_named_event(set, row->conflict[0]));
	rc = PAPI_add_named_event(set, row->conflict[1]);
	printf("  multiplexed %s + %s: %s: %s\n", row->conflict[0], row->conflict[1], PAPI_strerror(rc),
	       papi_heritage_last_error());
	EXPECT_EQ("a second event for one counter in a multiplexed set", rc, PAPI_ECNFLCT);
	EXPECT(strstr(papi_heritage_last_error(), row->conflict_says) != NULL,
	       "the refusal does not say why multiplexing cannot help (\"%s\"): %s", row->conflict_says,
	       papi_heritage_last_error());
	drop(&set);
}

static void run_row(const struct row *row)
{
	int cidx = PAPI_get_component_index(row->component);
	if (cidx < 0) {
		fprintf(stderr, "%s is not compiled into this libpapi\n", row->component);
		exit(1);
	}
	const PAPI_component_info_t *info = PAPI_get_component_info(cidx);
	if (!info) {
		fprintf(stderr, "no component info for %s\n", row->component);
		exit(1);
	}
	/* The claims hold whether or not the component can count here. */
	EXPECT_EQ("kernel_multiplex (multiplexing is the component's)", info->kernel_multiplex,
	          row->kernel_multiplex);
	EXPECT_EQ("num_mpx_cntrs (the set size its man page gives)", info->num_mpx_cntrs, row->num_mpx_cntrs);
	EXPECT_EQ("PAPI_get_cmp_opt(PAPI_MAX_MPX_CTRS)", PAPI_get_cmp_opt(PAPI_MAX_MPX_CTRS, NULL, cidx),
	          row->num_mpx_cntrs);
	if (info->disabled)
		SKIP("%s is disabled here: %s", row->component, info->disabled_reason);
	row->setup();

	printf("%s:\n", row->component);
	struct run plain, mpx;
	run_order(row, cidx, PLAIN, &plain);
	for (enum order o = MPX_FIRST; o <= MPX_AFTER; o++) {
		run_order(row, cidx, o, &mpx);
		EXPECT_EQ("the same observations", mpx.n, plain.n);
		for (int i = 0; i < plain.n && i < mpx.n; i++)
			if (plain.exact & (1u << i))
				EXPECT(mpx.v[i] == plain.v[i], "%s %s: %lld, unmultiplexed %lld", order_name[o],
				       plain.name[i], mpx.v[i], plain.v[i]);
	}
	refusals(row, cidx);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: multiplex itanium2|paragon_rpm|alpha21064\n");
		return 2;
	}
	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	if (rc != PAPI_VER_CURRENT) {
		fprintf(stderr, "PAPI_library_init: %d (%s)\n", rc, PAPI_strerror(rc));
		return 1;
	}
	CHECK_PAPI(PAPI_multiplex_init());
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		if (strcmp(rows[i].component, argv[1]) == 0) {
			run_row(&rows[i]);
			return heritage_test_done("multiplex");
		}
	fprintf(stderr, "multiplex: no row for %s\n", argv[1]);
	return 2;
}
