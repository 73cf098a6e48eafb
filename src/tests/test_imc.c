/*
 * Unit tests of the imc names (src/imc/imc_events.c) over the built-in
 * catalog, through the shared parser: "<pmu>::<EVENT>" round trips, event
 * values, :cpu=N only on nest and core, the error rule (unknown name
 * -ENOENT with the nearest names, bad qualifier -EINVAL).
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

/* Names from src/imc/facts (power9-units.csv, power9-events.csv):
 * mcs01@c8 (type 0x10, prefix PM_MCS01_) + NEST_MCS 64B_RD_DISP_PORT01 at
 * 0x0 -> 0xc8; thread@18 (type 0x1, prefix CPM_) + THREAD
 * CS_32MHZ_CYC_USER at 0x10c8 -> 0x10e0; trace@0 + trace_cycles... */
START_TEST(round_trip)
{
	const struct {
		const char *name;
		unsigned long long value;
		int cpu;
	} cases[] = {
		{ "nest_mcs01_imc::PM_MCS01_64B_RD_DISP_PORT01", 0xc8, -1 },
		{ "nest_mcs01_imc::PM_MCS01_64B_RD_DISP_PORT01:cpu=0", 0xc8, 0 },
		{ "thread_imc::CPM_CS_32MHZ_CYC_USER", 0x10e0, -1 },
		{ "core_imc::CPM_CCYC:cpu=0", 0, 0 },
		{ "trace_imc::trace_cycles", 0x10200000, -1 },
	};
	char buf[128];

	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		unsigned code = ~0u;
		ck_assert_msg(imc_event_parse(cases[i].name, &code) == 0, "%s: %s", cases[i].name, heritage_last_error());
		ck_assert_int_eq(imc_event_format(code, buf, sizeof buf), 0);
		ck_assert_str_eq(buf, cases[i].name);
		const struct imc_cat_entry *e = imc_event_entry(code);
		ck_assert_ptr_nonnull(e);
		if (cases[i].value)
			ck_assert_uint_eq(e->value, cases[i].value);
		ck_assert_int_eq(imc_event_cpu(code), cases[i].cpu);
	}
	/* Case-insensitive in, the catalog's spelling out. */
	unsigned code;
	ck_assert_int_eq(imc_event_parse("THREAD_IMC::cpm_cs_32mhz_cyc_user", &code), 0);
	ck_assert_int_eq(imc_event_format(code, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "thread_imc::CPM_CS_32MHZ_CYC_USER");
	/* The last CPU of this machine. */
	long n = sysconf(_SC_NPROCESSORS_CONF);
	char name[96];
	snprintf(name, sizeof name, "core_imc::CPM_CCYC:cpu=%ld", n - 1);
	ck_assert_int_eq(imc_event_parse(name, &code), 0);
	ck_assert_uint_eq(code >> IMC_CODE_CPU_SHIFT, (unsigned)n);
	ck_assert_int_eq(imc_event_format(code, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, name);
	/* Scale: the unit's ("512" for thread, "256" for MCS), units string. */
	ck_assert_int_eq(imc_event_parse("thread_imc::CPM_CS_32MHZ_CYC_USER", &code), 0);
	ck_assert_str_eq(imc_event_entry(code)->scale, "512");
	imc_event_units(code, buf, sizeof buf);
	ck_assert_str_eq(buf, "scale 512");
}
END_TEST

START_TEST(error_rule)
{
	unsigned code;
	char name[96];
	long n = sysconf(_SC_NPROCESSORS_CONF);

	ck_assert_int_eq(imc_event_parse("NO_SUCH_EVENT", &code), -ENOENT);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "no event named 'NO_SUCH_EVENT'"));
	ck_assert_int_eq(imc_event_parse("NO_SUCH_EVENT:cpu=0", &code), -ENOENT);
	/* The seed's names come from an older catalog: the DD2 thread list
	 * has only _USER events, and the nearest are suggested. */
	ck_assert_int_eq(imc_event_parse("thread_imc::CPM_CS_INST", &code), -ENOENT);
	ck_assert_msg(strstr(heritage_last_error(), "did you mean") &&
	                  strstr(heritage_last_error(), "thread_imc::CPM_CS_INST_USER"),
	              "%s", heritage_last_error());
	ck_assert_int_eq(imc_event_parse("nest_mcs01_imc::PM_MCS01_64B_WR_DISP_PORT01", &code), -ENOENT);
	ck_assert_msg(strstr(heritage_last_error(), "nest_mcs01_imc::PM_MCS01_128B_WR_DISP_PORT01"), "%s",
	              heritage_last_error());
	snprintf(name, sizeof name, "nest_mcs01_imc::PM_MCS01_64B_RD_DISP_PORT01:cpu=%ld", n);
	ck_assert_int_eq(imc_event_parse(name, &code), -EINVAL);
	ck_assert_int_eq(imc_event_parse("nest_mcs01_imc::PM_MCS01_64B_RD_DISP_PORT01:cpu=x", &code), -EINVAL);
	ck_assert_int_eq(imc_event_parse("nest_mcs01_imc::PM_MCS01_64B_RD_DISP_PORT01:cpu", &code), -EINVAL);
	ck_assert_int_eq(imc_event_parse("nest_mcs01_imc::PM_MCS01_64B_RD_DISP_PORT01:cpu=0:cpu=0", &code), -EINVAL);
	ck_assert_int_eq(imc_event_parse("nest_mcs01_imc::PM_MCS01_64B_RD_DISP_PORT01:chip=0", &code), -EINVAL);
	/* Thread and trace count per task: no :cpu. */
	ck_assert_int_eq(imc_event_parse("thread_imc::CPM_CS_32MHZ_CYC_USER:cpu=0", &code), -EINVAL);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "takes no qualifier"));
	ck_assert_int_eq(imc_event_parse("trace_imc::trace_cycles:cpu=0", &code), -EINVAL);
	/* One ':' is a qualifier, not a PMU separator. */
	ck_assert_int_eq(imc_event_parse("nest_mcs01_imc:PM_MCS01_64B_RD_DISP_PORT01", &code), -ENOENT);
	ck_assert_int_eq(imc_event_format(imc_nevents(), name, sizeof name), -ENOENT);
	ck_assert_ptr_null(imc_event_entry(imc_nevents()));
}
END_TEST

START_TEST(set_refuses_unavailable)
{
	struct imc_set s;
	unsigned code;
	char what[200];

	imc_set_init(&s);
	ck_assert_int_eq(imc_event_parse("nest_mcs01_imc::PM_MCS01_64B_RD_DISP_PORT01", &code), 0);
	if (imc_event_source(code, what, sizeof what) == HERITAGE_UNAVAILABLE) {
		ck_assert_int_eq(imc_set_events(&s, &code, 1), -ENOTSUP);
		ck_assert_ptr_nonnull(strstr(heritage_last_error(), "unavailable here"));
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("imc");
	TCase *tc = tcase_create("imc");
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, error_rule);
	tcase_add_test(tc, set_refuses_unavailable);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
