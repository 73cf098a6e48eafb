/*
 * The perf path of src/imc/imc_sysfs.c on a machine without IMC: the
 * fixture tree src/tests/imc-sysfs/software has a thread_imc and a core_imc
 * whose `type` is 1 (PERF_TYPE_SOFTWARE) and whose events are software
 * events (event=0x0 cpu-clock, 0x1 task-clock, 0x2 page-faults), so the
 * code that opens nest_mcs01_imc on a POWER9 opens them here, with the same
 * pid/cpu rules: thread per task, core per CPU.
 *
 * Known workloads, counted independently: an anonymous mapping's pages
 * fault once each on their first store (N fresh pages: >= N faults, as the
 * perf_sw probe counts them), and task-clock is the thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID read around the loop).  Exit 77 with the probe's
 * reason when perf software events are refused to the account; per-CPU
 * counting refused (perf_event_paranoid > 0 for an ordinary account) must
 * be refused with what would allow it.
 */
#include <check.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/heritage_error.h"
#include "common/heritage_probe.h"
#include "imc/imc_sysfs.h"

#define PAGES 64

static struct imc_sysfs *sw;

static void setup(void)
{
	char root[4096];
	const char *srcdir = getenv("srcdir");
	snprintf(root, sizeof root, "%s/src/tests/imc-sysfs/software", srcdir && *srcdir ? srcdir : ".");
	int err = imc_sysfs_discover(root, &sw);
	ck_assert_msg(err == 0, "%s", heritage_last_error());
}

static void teardown(void)
{
	imc_sysfs_free(sw);
	sw = NULL;
}

static uint64_t thread_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void busy_ns(uint64_t ns)
{
	volatile uint64_t x = 0;
	uint64_t end = thread_ns() + ns;
	while (thread_ns() < end)
		for (int i = 0; i < 1000; i++)
			x += (uint64_t)i;
}

static void touch_fresh_pages(unsigned n)
{
	long page = sysconf(_SC_PAGESIZE);
	volatile char *p = mmap(NULL, (size_t)page * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne((void *)p, MAP_FAILED);
	for (unsigned i = 0; i < n; i++)
		p[(long)i * page] = 1;
	munmap((void *)p, (size_t)page * n);
}

static void open_ok(struct imc_sysfs_counter *c, const char *pmu, const char *event, int cpu)
{
	const struct imc_sysfs_pmu *p = imc_sysfs_pmu_find(sw, pmu);
	ck_assert_ptr_nonnull(p);
	const struct imc_sysfs_event *e = imc_sysfs_event_find(p, event);
	ck_assert_ptr_nonnull(e);
	int err = imc_sysfs_counter_open(c, p, e, cpu);
	ck_assert_msg(err == 0, "open %s/%s: %s", pmu, event, heritage_last_error());
}

START_TEST(thread_task_clock_is_the_threads_cpu_time)
{
	struct imc_sysfs_counter c;
	uint64_t mid, final, again;
	char why[512];

	ck_assert_int_eq(imc_sysfs_usable(imc_sysfs_pmu_find(sw, "thread_imc"), why, sizeof why), 0);
	open_ok(&c, "thread_imc", "TASK_CLOCK", -1);
	ck_assert_int_eq(c.pid, 0);
	ck_assert_int_eq(c.cpu, -1);
	ck_assert_int_eq(imc_sysfs_counter_start(&c), 0);
	uint64_t t0 = thread_ns();
	busy_ns(20 * 1000000);
	ck_assert_int_eq(imc_sysfs_counter_read(&c, &mid), 0);
	busy_ns(20 * 1000000);
	uint64_t t1 = thread_ns();
	ck_assert_int_eq(imc_sysfs_counter_stop(&c, &final), 0);
	uint64_t ns = t1 - t0;
	/* The same clock seen two ways: within 10 % and 2 ms (the reads
	 * outside the counted window). */
	ck_assert_msg(final + 2000000 >= ns * 9 / 10 && final <= ns * 11 / 10 + 2000000,
	              "task-clock %llu ns for %llu ns of thread CPU time", (unsigned long long)final,
	              (unsigned long long)ns);
	ck_assert_uint_ge(mid, 15 * 1000000);
	ck_assert_uint_lt(mid, final);
	/* Scale 1e-6 and unit msec, as the fixture says. */
	const struct imc_sysfs_event *e = c.event;
	ck_assert_str_eq(e->unit, "msec");
	ck_assert_double_eq_tol(final * e->scale, final / 1e6, 1e-9);
	/* Stopped: reads stay at the final count. */
	busy_ns(5 * 1000000);
	ck_assert_int_eq(imc_sysfs_counter_read(&c, &again), 0);
	ck_assert_uint_eq(again, final);
	/* Start again: counting from 0. */
	ck_assert_int_eq(imc_sysfs_counter_start(&c), 0);
	busy_ns(2 * 1000000);
	ck_assert_int_eq(imc_sysfs_counter_stop(&c, &again), 0);
	ck_assert_uint_ge(again, 1000000);
	ck_assert_uint_lt(again, final / 2);
	imc_sysfs_counter_close(&c);
	ck_assert_int_eq(c.fd, -1);
	ck_assert_int_eq(imc_sysfs_counter_read(&c, &again), -EBADF);
}
END_TEST

START_TEST(thread_page_faults_count_fresh_pages)
{
	struct imc_sysfs_counter c;
	uint64_t n;

	open_ok(&c, "thread_imc", "PAGE_FAULTS", -1);
	ck_assert_int_eq(imc_sysfs_counter_start(&c), 0);
	touch_fresh_pages(PAGES);
	ck_assert_int_eq(imc_sysfs_counter_stop(&c, &n), 0);
	/* one fault per page; a few more for a stack or libc page touched the
	 * first time in between */
	ck_assert_msg(n >= PAGES && n <= PAGES + 16, "%llu page faults for %d fresh pages", (unsigned long long)n, PAGES);
	/* nothing touched: (almost) nothing counted */
	ck_assert_int_eq(imc_sysfs_counter_start(&c), 0);
	ck_assert_int_eq(imc_sysfs_counter_stop(&c, &n), 0);
	ck_assert_uint_le(n, 2);
	imc_sysfs_counter_close(&c);
}
END_TEST

/* core_imc counts a whole CPU (pid -1): the cpumask's CPU 0 by default, or
 * :cpu=N.  Pinned there, this thread's faults are among the CPU's. */
START_TEST(core_counts_a_cpu_or_says_who_may)
{
	const struct imc_sysfs_pmu *p = imc_sysfs_pmu_find(sw, "core_imc");
	const struct imc_sysfs_event *faults = imc_sysfs_event_find(p, "PAGE_FAULTS");
	struct imc_sysfs_counter c;
	cpu_set_t set;
	char why[1024];
	int cpu = -1;

	ck_assert_int_eq(p->ncpus, 1);
	ck_assert_int_eq(p->cpus[0], 0);
	ck_assert_int_eq(sched_getaffinity(0, sizeof set, &set), 0);
	for (int k = 0; k < CPU_SETSIZE && cpu < 0; k++)
		if (CPU_ISSET(k, &set))
			cpu = k;
	ck_assert_int_ge(cpu, 0);

	const struct heritage_probe_result *r = heritage_probe(HERITAGE_MECH_PERF_CPU);
	if (r->state != HERITAGE_PROBE_WORKS) {
		/* Refused: the open says so and what would allow it; usable()
		 * said it first. */
		int u = imc_sysfs_usable(p, why, sizeof why);
		ck_assert_int_ne(u, 0);
		ck_assert_ptr_nonnull(strstr(why, "core_imc counts whole CPUs"));
		int err = imc_sysfs_counter_open(&c, p, faults, cpu == 0 ? -1 : cpu);
		if (r->refused) {
			const char *msg = heritage_last_error();
			ck_assert_msg(err == -EACCES || err == -EPERM, "open: %d %s", err, msg);
			ck_assert_msg(strstr(msg, "CPU ") && strstr(msg, "core_imc counts whole CPUs; allowed by ") &&
			              strstr(msg, "CAP_PERFMON"), "message: %s", msg);
			/* the sysctl is named unless it already allows it */
			if (heritage_perf_paranoid() > 0)
				ck_assert_msg(strstr(msg, "perf_event_paranoid <= 0"), "message: %s", msg);
			printf("core_imc refused as expected: %s\n", msg);
		} else {
			if (err == 0)
				imc_sysfs_counter_close(&c);
			printf("skipped: per-CPU counting: %s\n", r->evidence);
		}
		return;
	}
	ck_assert_int_eq(imc_sysfs_usable(p, why, sizeof why), 0);
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);

	int err = imc_sysfs_counter_open(&c, p, faults, cpu == 0 ? -1 : cpu);
	ck_assert_msg(err == 0, "%s", heritage_last_error());
	ck_assert_int_eq(c.pid, -1);
	ck_assert_int_eq(c.cpu, cpu);
	uint64_t n;
	ck_assert_int_eq(imc_sysfs_counter_start(&c), 0);
	touch_fresh_pages(PAGES);
	ck_assert_int_eq(imc_sysfs_counter_stop(&c, &n), 0);
	/* every process on that CPU faults too: at least ours */
	ck_assert_msg(n >= PAGES, "%llu page faults on CPU %d for %d fresh pages", (unsigned long long)n, cpu, PAGES);
	imc_sysfs_counter_close(&c);

	/* cpu-clock of a CPU runs with the wall clock while enabled */
	struct imc_sysfs_counter clk;
	int e2 = imc_sysfs_counter_open(&clk, p, imc_sysfs_event_find(p, "CPU_CLOCK"), cpu);
	ck_assert_msg(e2 == 0, "%s", heritage_last_error());
	ck_assert_int_eq(imc_sysfs_counter_start(&clk), 0);
	uint64_t w0 = wall_ns();
	busy_ns(10 * 1000000);
	uint64_t w1 = wall_ns();
	ck_assert_int_eq(imc_sysfs_counter_stop(&clk, &n), 0);
	ck_assert_msg(n >= (w1 - w0) / 2 && n <= (w1 - w0) * 2 + 5000000, "cpu-clock %llu ns over %llu ns of wall time",
	              (unsigned long long)n, (unsigned long long)(w1 - w0));
	imc_sysfs_counter_close(&clk);
	sched_setaffinity(0, sizeof set, &set);
}
END_TEST

int main(void)
{
	char why[512];
	if (heritage_probe_explain(HERITAGE_MECH_PERF_SW, why, sizeof why) != 0) {
		printf("test_imc_sysfs_perf: skipped: %s\n", why);
		return 77;
	}
	Suite *su = suite_create("imc_sysfs_perf");
	TCase *tc = tcase_create("software events behind IMC names");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, thread_task_clock_is_the_threads_cpu_time);
	tcase_add_test(tc, thread_page_faults_count_fresh_pages);
	tcase_add_test(tc, core_counts_a_cpu_or_says_who_may);
	suite_add_tcase(su, tc);
	SRunner *sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
