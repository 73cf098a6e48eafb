/*
 * Unit tests of the parts of src/common/heritage_backend.c that only
 * listings use (test_probe covers choice and usability): which mechanisms a
 * table needs, whether any backend of it can count (tried from its end, the
 * software last resorts), and the "no X backend (mech verdict)" text a
 * component's description carries.  Fake probes stand in for the machine.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/heritage_backend.h"
#include "common/heritage_probe.h"
#include "env_test.h"

static void works(struct heritage_probe_result *r)
{
	r->state = HERITAGE_PROBE_WORKS;
	snprintf(r->evidence, sizeof r->evidence, "fake: works");
}

static void dead(struct heritage_probe_result *r)
{
	r->state = HERITAGE_PROBE_DEAD;
	snprintf(r->evidence, sizeof r->evidence, "fake: counted 0 of 4");
}

static void absent(struct heritage_probe_result *r)
{
	r->state = HERITAGE_PROBE_ABSENT;
	snprintf(r->evidence, sizeof r->evidence, "fake: not here");
}

static void refused(struct heritage_probe_result *r)
{
	heritage_probe_refused(r, EACCES, "fake perf_event_open", 2);
}

#define SW HERITAGE_MECH_BIT(HERITAGE_MECH_PERF_SW)
#define CPU HERITAGE_MECH_BIT(HERITAGE_MECH_PERF_CPU)
#define PMU HERITAGE_MECH_BIT(HERITAGE_MECH_PMU)

static const struct heritage_backend table[] = {
	{ .name = "hw", .needs = PMU | SW },
	{ .name = "cpu", .needs = CPU },
	{ .name = "sw", .needs = SW },
};
#define N (sizeof table / sizeof table[0])

static void set(heritage_probe_fn sw, heritage_probe_fn cpu, heritage_probe_fn pmu)
{
	env_unset("PAPI_HERITAGE_PROBE_DISABLE");
	heritage_probe_override(HERITAGE_MECH_PERF_SW, sw);
	heritage_probe_override(HERITAGE_MECH_PERF_CPU, cpu);
	heritage_probe_override(HERITAGE_MECH_PMU, pmu);
}

/* Who uses a mechanism, as the man pages describe the backends (itanium2(3)
 * BACKENDS, alpha21064(3), paragon_rpm(3) EVENTS, profileme(3) BACKENDS): read off the tables, so
 * each user is named once and nothing is named for a mechanism no table
 * needs. */
START_TEST(mechanism_users_come_from_the_tables)
{
	char buf[512];

	heritage_mech_users(HERITAGE_MECH_BREAKPOINT, buf, sizeof buf);
	ck_assert_str_eq(buf, "itanium2 backend breakpoint");
	heritage_mech_users(HERITAGE_MECH_SINGLE_STEP, buf, sizeof buf);
	ck_assert_str_eq(buf, "itanium2 backend pagetrap; alpha21064 backend software; profileme backend soft");
	heritage_mech_users(HERITAGE_MECH_IBS, buf, sizeof buf);
	ck_assert_str_eq(buf, "profileme backend ibs");
	heritage_mech_users(HERITAGE_MECH_PAGETRAP, buf, sizeof buf);
	ck_assert_str_eq(buf, "itanium2 backend pagetrap");
	heritage_mech_users(HERITAGE_MECH_TRACEPOINT, buf, sizeof buf);
	ck_assert_str_eq(buf, "paragon_rpm rpms_it");
	heritage_mech_users(HERITAGE_MECH_PERF_SW, buf, sizeof buf);
	ck_assert_str_eq(buf, "");

	/* A short buffer holds a terminated prefix, nothing past it. */
	char small[12];
	memset(small, 'x', sizeof small);
	heritage_mech_users(HERITAGE_MECH_SINGLE_STEP, small, 8);
	ck_assert_uint_eq(strlen(small), 7);
	ck_assert_int_eq(strncmp(small, "itanium", 7), 0);
	ck_assert_int_eq(small[8], 'x');
}
END_TEST

START_TEST(needs_any_is_the_union)
{
	ck_assert_uint_eq(heritage_backend_needs_any(table, N), PMU | SW | CPU);
	ck_assert_uint_eq(heritage_backend_needs_any(table + 1, 2), CPU | SW);
	ck_assert_uint_eq(heritage_backend_needs_any(table, 0), 0);
}
END_TEST

START_TEST(any_usable_tries_the_last_resorts_first)
{
	char why[1024];

	set(works, dead, dead);
	ck_assert_int_eq(heritage_backend_any_usable(table, N, why, sizeof why), 0);
	ck_assert_str_eq(why, "");

	/* sw is last and unusable: cpu, tried next, works; the reason for sw
	 * stays in why. */
	set(absent, works, works);
	ck_assert_int_eq(heritage_backend_any_usable(table, N, why, sizeof why), 0);
	ck_assert_str_eq(why, "sw: perf_sw is absent here: fake: not here");

	/* None: every backend's reason, from the end; the first one's error. */
	set(absent, dead, works);
	ck_assert_int_ne(heritage_backend_any_usable(table, N, why, sizeof why), 0);
	ck_assert_str_eq(why, "sw: perf_sw is absent here: fake: not here; cpu: perf_cpu is dead here: fake: counted 0 of 4; "
	                      "hw: perf_sw is absent here: fake: not here");
	/* An empty table has nothing. */
	ck_assert_int_eq(heritage_backend_any_usable(table, 0, why, sizeof why), -ENOTSUP);
	ck_assert_str_eq(why, "");
}
END_TEST

START_TEST(limits_name_each_lost_backend_once)
{
	char buf[512];

	set(works, works, works);
	heritage_backend_limits(table, N, buf, sizeof buf);
	ck_assert_str_eq(buf, "");
	heritage_mechs_limits(SW | CPU | PMU, buf, sizeof buf);
	ck_assert_str_eq(buf, "");

	/* hw needs two mechanisms and lost both: named once, for the first. */
	set(dead, refused, absent);
	heritage_backend_limits(table, N, buf, sizeof buf);
	ck_assert_str_eq(buf, "no hw backend (perf_sw dead), no cpu backend (perf_cpu refused), no sw backend (perf_sw dead)");
	heritage_mechs_limits(SW | CPU | PMU, buf, sizeof buf);
	ck_assert_str_eq(buf, "perf_sw dead, perf_cpu refused, pmu absent");
	heritage_mechs_limits(CPU, buf, sizeof buf);
	ck_assert_str_eq(buf, "perf_cpu refused");
	heritage_mechs_limits(0, buf, sizeof buf);
	ck_assert_str_eq(buf, "");

	/* Cut to the buffer, never past it. */
	char small[16];
	heritage_backend_limits(table, N, small, sizeof small);
	ck_assert_str_eq(small, "no hw backend (");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("backend");
	TCase *tc = tcase_create("listings");
	tcase_add_test(tc, needs_any_is_the_union);
	tcase_add_test(tc, any_usable_tries_the_last_resorts_first);
	tcase_add_test(tc, limits_name_each_lost_backend_once);
	tcase_add_test(tc, mechanism_users_come_from_the_tables);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
