/*
 * Unit tests of the imc skeleton's names (src/imc/imc_events.c) through the
 * shared parser: name/format round trips, and the error rule (unknown name
 * -ENOENT, bad qualifier -EINVAL).  Expected codes are written out from the
 * layout imc_events.h documents: index in bits 0-7, :cpu=N as N + 1 from
 * bit 8.  The set: THREAD_CPU_NS counts, the nest event is refused.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common/heritage_error.h"
#include "imc/imc_events.h"
#include "imc/imc_set.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

START_TEST(round_trip)
{
	const char *names[] = { "PM_MCS01_64B_RD_DISP_PORT01", "PM_MCS01_64B_RD_DISP_PORT01:cpu=0", "THREAD_CPU_NS" };
	const unsigned want[] = { 0, 0 | (0 + 1) << 8, 1 };
	char buf[128];

	for (unsigned i = 0; i < 3; i++) {
		unsigned code = ~0u;
		ck_assert_int_eq(imc_event_parse(names[i], &code), 0);
		ck_assert_uint_eq(code, want[i]);
		ck_assert_int_eq(imc_event_format(code, buf, sizeof buf), 0);
		ck_assert_str_eq(buf, names[i]);
	}
	/* Case-insensitive in, table spelling out. */
	unsigned code;
	ck_assert_int_eq(imc_event_parse("thread_cpu_ns", &code), 0);
	ck_assert_int_eq(imc_event_format(code, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "THREAD_CPU_NS");
	/* The last CPU of this machine. */
	long n = sysconf(_SC_NPROCESSORS_CONF);
	char name[64];
	snprintf(name, sizeof name, "PM_MCS01_64B_RD_DISP_PORT01:cpu=%ld", n - 1);
	ck_assert_int_eq(imc_event_parse(name, &code), 0);
	ck_assert_uint_eq(code, (unsigned)n << 8);
	ck_assert_int_eq(imc_event_format(code, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, name);
}
END_TEST

START_TEST(error_rule)
{
	unsigned code;
	char name[64];
	long n = sysconf(_SC_NPROCESSORS_CONF);

	ck_assert_int_eq(imc_event_parse("NO_SUCH_EVENT", &code), -ENOENT);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "no event named 'NO_SUCH_EVENT'"));
	ck_assert_int_eq(imc_event_parse("NO_SUCH_EVENT:cpu=0", &code), -ENOENT);
	snprintf(name, sizeof name, "PM_MCS01_64B_RD_DISP_PORT01:cpu=%ld", n);
	ck_assert_int_eq(imc_event_parse(name, &code), -EINVAL);
	ck_assert_int_eq(imc_event_parse("PM_MCS01_64B_RD_DISP_PORT01:cpu=x", &code), -EINVAL);
	ck_assert_int_eq(imc_event_parse("PM_MCS01_64B_RD_DISP_PORT01:cpu", &code), -EINVAL);
	ck_assert_int_eq(imc_event_parse("PM_MCS01_64B_RD_DISP_PORT01:cpu=0:cpu=0", &code), -EINVAL);
	ck_assert_int_eq(imc_event_parse("PM_MCS01_64B_RD_DISP_PORT01:chip=0", &code), -EINVAL);
	ck_assert_int_eq(imc_event_parse("THREAD_CPU_NS:cpu=0", &code), -EINVAL); /* takes none */
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "takes no qualifier"));
	ck_assert_int_eq(imc_event_format(IMC_NEVENTS, name, sizeof name), -ENOENT);
}
END_TEST

START_TEST(set_counts_and_refuses)
{
	struct imc_set s;
	unsigned code;

	imc_set_init(&s);
	ck_assert_int_eq(imc_event_parse("PM_MCS01_64B_RD_DISP_PORT01", &code), 0);
	ck_assert_int_eq(imc_set_events(&s, &code, 1), -ENOTSUP);
	ck_assert_int_eq(imc_event_parse("THREAD_CPU_NS", &code), 0);
	ck_assert_int_eq(imc_set_events(&s, &code, 1), 0);
	ck_assert_int_eq(imc_set_start(&s), 0);
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < 20000000ul; i++)
		x += i;
	ck_assert_int_eq(imc_set_stop(&s), 0);
	ck_assert_int_gt(s.values[0], 0);
	long long stopped = s.values[0];
	ck_assert_int_eq(imc_set_read(&s), 0);
	ck_assert_int_eq(s.values[0], stopped); /* stopped: does not move */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("imc");
	TCase *tc = tcase_create("imc");
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, error_rule);
	tcase_add_test(tc, set_counts_and_refuses);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
