/*
 * Unit tests of src/paragon/rpm_perf.c: the per-CPU kernel counts behind
 * rpmsoft's fault and system-call fields.  Own counts only
 * (rpm_perf_own_only, as rpmd runs): whether a host's rpmd service is up
 * must not change the verdict.  A count the probes keep out says why in the
 * probe's words and reads 0; a count that is open counts at least the 16
 * page faults of 16 fresh pages stored to, and the 100 getppid() calls, on
 * the CPU this thread is pinned to.
 */
#include <check.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/heritage_probe.h"
#include "paragon/rpm_model.h"
#include "paragon/rpm_perf.h"

static unsigned ncpus;
static unsigned os[RPM_MAX_CPUS];

static void configure(void)
{
	cpu_set_t set;
	ck_assert_int_eq(sched_getaffinity(0, sizeof set, &set), 0);
	ncpus = 0;
	for (unsigned c = 0; c < CPU_SETSIZE && ncpus < RPM_MAX_CPUS; c++)
		if (CPU_ISSET(c, &set))
			os[ncpus++] = c;
	rpm_perf_own_only();
	rpm_perf_configure(ncpus, os);
	rpm_perf_ensure();
}

START_TEST(cpus_are_the_configured_ones)
{
	configure();
	const unsigned *got = NULL;
	ck_assert_uint_eq(rpm_perf_cpus(&got), ncpus);
	for (unsigned i = 0; i < ncpus; i++)
		ck_assert_uint_eq(got[i], os[i]);
	ck_assert_uint_eq(rpm_perf_generation(), 0); /* no service page */
	/* Beyond the CPUs: zeros, no error. */
	uint64_t out[RPM_PERF_NCOUNTS] = { 1, 1, 1, 1 };
	uint64_t gen = 7;
	ck_assert_int_eq(rpm_perf_read(ncpus, out, &gen), 0);
	for (int k = 0; k < RPM_PERF_NCOUNTS; k++)
		ck_assert_uint_eq(out[k], 0);
	ck_assert_uint_eq(gen, 0);
}
END_TEST

START_TEST(status_follows_the_probes)
{
	configure();
	const char *why = NULL;
	int cpu_works = heritage_probe_works(HERITAGE_MECH_PERF_CPU);

	for (int k = RPM_PF_ALL; k <= RPM_PF_MAJ; k++) {
		int st = rpm_perf_status((enum rpm_perf_count)k, &why);
		ck_assert_ptr_nonnull(why);
		if (cpu_works) {
			ck_assert_msg(st == 0, "count %d: %d %s", k, st, why);
			ck_assert_str_eq(why, "");
		} else {
			ck_assert_int_lt(st, 0);
			ck_assert_msg(strstr(why, "perf_cpu is ") != NULL, "count %d: %s", k, why);
		}
	}
	int st = rpm_perf_status(RPM_SYSCALLS, &why);
	if (!cpu_works || !heritage_probe_works(HERITAGE_MECH_TRACEPOINT))
		ck_assert_int_lt(st, 0);
	if (st != 0)
		ck_assert_msg(why[0] != '\0', "syscalls refused without a reason");
	printf("rpms_it: %s\n", st == 0 ? "counted" : why);
}
END_TEST

static uint64_t delta(const uint64_t *a, const uint64_t *b, int k)
{
	return b[k] - a[k];
}

START_TEST(open_counts_count_this_cpus_faults_and_calls)
{
	configure();
	/* Logical CPU 0 of the configuration; this thread stays there. */
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(os[0], &one);
	ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
	sched_yield();

	const long page = sysconf(_SC_PAGESIZE);
	char *fresh = mmap(NULL, 16 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(fresh, MAP_FAILED);
	uint64_t a[RPM_PERF_NCOUNTS], b[RPM_PERF_NCOUNTS];
	ck_assert_int_eq(rpm_perf_read(0, a, NULL), 0);
	for (int i = 0; i < 16; i++)
		fresh[(long)i * page] = 1;
	for (int i = 0; i < 100; i++)
		(void)syscall(SYS_getppid);
	ck_assert_int_eq(rpm_perf_read(0, b, NULL), 0);

	for (int k = 0; k < RPM_PERF_NCOUNTS; k++) {
		const char *why;
		if (rpm_perf_status((enum rpm_perf_count)k, &why) != 0) {
			/* Not available: 0, not a stale or made-up count. */
			ck_assert_uint_eq(a[k], 0);
			ck_assert_uint_eq(b[k], 0);
			continue;
		}
		ck_assert_uint_ge(b[k], a[k]);
	}
	if (rpm_perf_status(RPM_PF_ALL, NULL) == 0) {
		ck_assert_uint_ge(delta(a, b, RPM_PF_ALL), 16);
		ck_assert_uint_ge(delta(a, b, RPM_PF_MIN), 16); /* anonymous pages: minor */
	} else {
		printf("skipped: fault counts: %s\n", heritage_probe(HERITAGE_MECH_PERF_CPU)->evidence);
	}
	if (rpm_perf_status(RPM_SYSCALLS, NULL) == 0)
		ck_assert_uint_ge(delta(a, b, RPM_SYSCALLS), 100);
	munmap(fresh, 16 * (size_t)page);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rpm_perf");
	TCase *tc = tcase_create("own counts");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, cpus_are_the_configured_ones);
	tcase_add_test(tc, status_follows_the_probes);
	tcase_add_test(tc, open_counts_count_this_cpus_faults_and_calls);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_FORK); /* the counters open once per process */
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
