/*
 * Unit tests of src/common/heritage_env.c: PAPI_HERITAGE_<COMPONENT>_<KNOB>
 * is looked up uppercased, empty counts as unset, the value is read once
 * (a copy taken by heritage_env_load, as PAPI_library_init does) and each
 * variable is checked against what its reader accepts.
 */
#include <check.h>
#include <malloc.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "env_test.h"

START_TEST(unset_and_empty_are_null)
{
	env_unset("PAPI_HERITAGE_ITANIUM2_MODE");
	ck_assert_ptr_null(heritage_env("itanium2", "mode"));
	env_set("PAPI_HERITAGE_ITANIUM2_MODE", "", 1);
	ck_assert_ptr_null(heritage_env("itanium2", "mode"));
}
END_TEST

START_TEST(name_is_uppercased_whatever_the_caller_spells)
{
	env_set("PAPI_HERITAGE_PARAGON_RPM_MAP", "0", 1);
	ck_assert_str_eq(heritage_env("paragon_rpm", "map"), "0");
	ck_assert_str_eq(heritage_env("PARAGON_RPM", "MAP"), "0");
	ck_assert_str_eq(heritage_env("Paragon_Rpm", "Map"), "0");
	/* Only the name is uppercased, never the value. */
	env_set("PAPI_HERITAGE_ITANIUM2_BACKEND", "PageTrap", 1);
	ck_assert_str_eq(heritage_env("itanium2", "backend"), "PageTrap");
	/* A lowercase variable is another variable. */
	env_unset("PAPI_HERITAGE_ALPHA21064_X");
	env_set("papi_heritage_alpha21064_x", "1", 1);
	ck_assert_ptr_null(heritage_env("alpha21064", "x"));
}
END_TEST

START_TEST(value_is_read_once)
{
	env_set("PAPI_HERITAGE_ITANIUM2_MODE", "coarse", 1);
	ck_assert_str_eq(heritage_env("itanium2", "mode"), "coarse");
	/* A setenv behind the copy's back changes nothing... */
	setenv("PAPI_HERITAGE_ITANIUM2_MODE", "exact", 1);
	ck_assert_str_eq(heritage_env("itanium2", "mode"), "coarse");
	unsetenv("PAPI_HERITAGE_ITANIUM2_MODE");
	ck_assert_str_eq(heritage_env("itanium2", "mode"), "coarse");
	/* ...until the copy is taken again. */
	heritage_env_load();
	ck_assert_ptr_null(heritage_env("itanium2", "mode"));
}
END_TEST

/* The value a caller got stays readable after the copy is taken again: a
 * thread may be parsing it. */
START_TEST(old_values_stay_readable)
{
	env_set("PAPI_HERITAGE_IMC_CATALOG", "/first/path", 1);
	const char *first = heritage_env("imc", "catalog");
	env_set("PAPI_HERITAGE_IMC_CATALOG", "/second/path", 1);
	ck_assert_str_eq(heritage_env("imc", "catalog"), "/second/path");
	ck_assert_str_eq(first, "/first/path");
	env_unset("PAPI_HERITAGE_IMC_CATALOG");
}
END_TEST

/* A program that changes a knob in a loop (or the fuzzer) holds a few
 * copies, not one per change. */
START_TEST(changes_in_a_loop_hold_few_copies)
{
	env_set("PAPI_HERITAGE_IMC_SPEED", "1", 1);
	struct mallinfo2 before = mallinfo2();
	for (int i = 0; i < 20000; i++)
		env_set("PAPI_HERITAGE_IMC_SPEED", i % 2 ? "1" : "2", 1);
	struct mallinfo2 after = mallinfo2();
	ck_assert_msg(after.uordblks < before.uordblks + 65536, "%zu bytes more after 20000 changes",
	              after.uordblks - before.uordblks);
	ck_assert_str_eq(heritage_env("imc", "speed"), "1");
	env_unset("PAPI_HERITAGE_IMC_SPEED");
}
END_TEST

/* Values each kind of knob refuses, and one it takes, with the message a
 * component's init reports. */
START_TEST(bad_values_are_refused_with_the_variable_named)
{
	static const struct {
		const char *var, *component, *bad, *good;
	} cases[] = {
		{ "PAPI_HERITAGE_ALPHA21064_CLOCK_MHZ", "alpha21064", "2GHz", "150" },
		{ "PAPI_HERITAGE_ALPHA21064_CLOCK_MHZ", "alpha21064", "0", "100000" },
		{ "PAPI_HERITAGE_ALPHA21064_CLOCK_MHZ", "alpha21064", "-5", "1" },
		{ "PAPI_HERITAGE_ALPHA21064_OS", "alpha21064", "linux", "VMS" },
		{ "PAPI_HERITAGE_PARAGON_RPM_MESH", "paragon_rpm", "3X3x", "3x3" },
		{ "PAPI_HERITAGE_PARAGON_RPM_MESH", "paragon_rpm", "33x32", "32x32" },
		{ "PAPI_HERITAGE_PARAGON_RPM_MESH", "paragon_rpm", "0x4", "1x1024" },
		{ "PAPI_HERITAGE_PARAGON_RPM_ROUTING", "paragon_rpm", "zx", "YX" },
		{ "PAPI_HERITAGE_PARAGON_RPM_CLOCK", "paragon_rpm", "tsc", "vdso" },
		{ "PAPI_HERITAGE_PARAGON_RPM_MAP", "paragon_rpm", "no", "0" },
		{ "PAPI_HERITAGE_PARAGON_RPM_SHM", "paragon_rpm", "../etc", "my-rpm" },
		{ "PAPI_HERITAGE_IMC_SPEED", "imc", "8", "7" },
		{ "PAPI_HERITAGE_IMC_NEST_HZ", "imc", "2e9", "2000000000" },
		{ "PAPI_HERITAGE_IMC_DAEMON", "imc", "no", "off" },
		{ "PAPI_HERITAGE_IMC_EXACT", "imc", "yes", "1" },
		{ "PAPI_HERITAGE_MPI_COLL", "mpi", "false", "on" },
		{ "PAPI_HERITAGE_PROFILEME_RUN_PID", "profileme", "0", "42" },
	};
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		env_set(cases[i].var, cases[i].bad, 1);
		ck_assert_msg(heritage_env_check(cases[i].component) == -EINVAL, "%s=%s taken", cases[i].var,
		              cases[i].bad);
		char want[160];
		snprintf(want, sizeof want, "%s=%s: expected ", cases[i].var, cases[i].bad);
		ck_assert_msg(strncmp(heritage_last_error(), want, strlen(want)) == 0, "%s", heritage_last_error());
		/* Another component's check does not see it. */
		const char *other = strcmp(cases[i].component, "imc") ? "imc" : "itanium2";
		ck_assert_int_eq(heritage_env_check(other), 0);
		env_set(cases[i].var, cases[i].good, 1);
		ck_assert_msg(heritage_env_check(cases[i].component) == 0, "%s=%s refused: %s", cases[i].var,
		              cases[i].good, heritage_last_error());
		env_unset(cases[i].var);
	}
}
END_TEST

/* A name no reader asks for is a typo: refused by the component of the
 * nearest known name, with that name; far from every name, by all. */
START_TEST(unknown_names_are_typos)
{
	env_set("PAPI_HERITAGE_ALPHA21064_CLOK_MHZ", "150", 1);
	ck_assert_int_eq(heritage_env_check("alpha21064"), -EINVAL);
	ck_assert_str_eq(heritage_last_error(), "PAPI_HERITAGE_ALPHA21064_CLOK_MHZ: no papi-heritage component reads "
	                                        "it (did you mean PAPI_HERITAGE_ALPHA21064_CLOCK_MHZ?)");
	ck_assert_int_eq(heritage_env_check("imc"), 0);
	env_unset("PAPI_HERITAGE_ALPHA21064_CLOK_MHZ");

	env_set("PAPI_HERITAGE_IMC_BAKEND", "engine", 1);
	ck_assert_int_eq(heritage_env_check("imc"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "did you mean PAPI_HERITAGE_IMC_BACKEND?"));
	env_unset("PAPI_HERITAGE_IMC_BAKEND");

	env_set("PAPI_HERITAGE_SOMETHING_ELSE_ENTIRELY", "1", 1);
	static const char *const all[] = { "alpha21064", "imc", "itanium2", "paragon_rpm", "profileme", "mpi" };
	for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++)
		ck_assert_int_eq(heritage_env_check(all[i]), -EINVAL);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "papi-heritage(7) lists the variables"));
	env_unset("PAPI_HERITAGE_SOMETHING_ELSE_ENTIRELY");

	/* The probes' variable concerns every component. */
	env_set("PAPI_HERITAGE_PROBE_DISABLED", "all", 1);
	ck_assert_int_eq(heritage_env_check("itanium2"), -EINVAL);
	ck_assert_int_eq(heritage_env_check("profileme"), -EINVAL);
	env_unset("PAPI_HERITAGE_PROBE_DISABLED");
	ck_assert_int_eq(heritage_env_check(NULL), 0);
}
END_TEST

/* heritage_env_reload (papi_heritage_env_reread) takes nothing of an
 * environment with a bad variable in it. */
START_TEST(reload_takes_all_or_nothing)
{
	env_set("PAPI_HERITAGE_IMC_SPEED", "3", 1);
	setenv("PAPI_HERITAGE_IMC_SPEED", "5", 1);
	setenv("PAPI_HERITAGE_PARAGON_RPM_MESH", "3x", 1);
	ck_assert_int_eq(heritage_env_reload(), -EINVAL);
	ck_assert_str_eq(heritage_last_error(), "PAPI_HERITAGE_PARAGON_RPM_MESH=3x: expected RxC, at most 1024 nodes");
	ck_assert_str_eq(heritage_env("imc", "speed"), "3");
	ck_assert_ptr_null(heritage_env("paragon_rpm", "mesh"));
	setenv("PAPI_HERITAGE_PARAGON_RPM_MESH", "3x3", 1);
	ck_assert_int_eq(heritage_env_reload(), 0);
	ck_assert_str_eq(heritage_env("imc", "speed"), "5");
	ck_assert_str_eq(heritage_env("paragon_rpm", "mesh"), "3x3");
	env_unset("PAPI_HERITAGE_IMC_SPEED");
	env_unset("PAPI_HERITAGE_PARAGON_RPM_MESH");
}
END_TEST

/* A 0-or-1 knob takes 0 and 1 only: the value PARAGON_RPM_MODEL took for
 * "on" was anything but "0", IMC_EXACT's only "1", so "no" meant on for one
 * and "yes" off for the other. */
START_TEST(flags_take_0_or_1_only)
{
	int on = -1;
	env_unset("PAPI_HERITAGE_IMC_EXACT");
	ck_assert_int_eq(heritage_env_flag("imc", "exact", &on), 0);
	ck_assert_int_eq(on, 0);
	env_set("PAPI_HERITAGE_IMC_EXACT", "1", 1);
	ck_assert_int_eq(heritage_env_flag("imc", "exact", &on), 0);
	ck_assert_int_eq(on, 1);
	env_set("PAPI_HERITAGE_IMC_EXACT", "0", 1);
	ck_assert_int_eq(heritage_env_flag("imc", "exact", &on), 0);
	ck_assert_int_eq(on, 0);
	static const char *const bad[] = { "yes", "no", "true", "2", "01", " 1", "1 " };
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		env_set("PAPI_HERITAGE_PARAGON_RPM_MODEL", bad[i], 1);
		on = -1;
		ck_assert_int_eq(heritage_env_flag("paragon_rpm", "model", &on), -EINVAL);
		ck_assert_int_eq(on, 0);
		char want[96];
		snprintf(want, sizeof want, "PAPI_HERITAGE_PARAGON_RPM_MODEL=%s: give 0 or 1", bad[i]);
		ck_assert_str_eq(heritage_last_error(), want);
	}
	env_unset("PAPI_HERITAGE_PARAGON_RPM_MODEL");
	env_unset("PAPI_HERITAGE_IMC_EXACT");
}
END_TEST

/* The name is built in 128 bytes: "PAPI_HERITAGE_" (14) + component + "_" +
 * knob must stay under 128 with its NUL; a longer one is never found (not
 * truncated into some other variable's name). */
START_TEST(names_longer_than_the_buffer_are_not_found)
{
	char comp[101], knob[14], name[160];

	memset(comp, 'c', 100);
	comp[100] = '\0';
	memset(knob, 'k', 12);
	knob[12] = '\0';
	/* 14 + 100 + 1 + 12 = 127 characters: fits. */
	memcpy(name, "PAPI_HERITAGE_", 14);
	memset(name + 14, 'C', 100);
	name[114] = '_';
	memset(name + 115, 'K', 12);
	name[127] = '\0';
	ck_assert_uint_eq(strlen(name), 127);
	env_set(name, "fits", 1);
	ck_assert_str_eq(heritage_env(comp, knob), "fits");

	/* 128 characters: does not. */
	knob[12] = 'k';
	knob[13] = '\0';
	strcat(name, "K");
	ck_assert_uint_eq(strlen(name), 128);
	env_set(name, "too long", 1);
	ck_assert_ptr_null(heritage_env(comp, knob));
}
END_TEST

int main(int argc, char **argv)
{
	/* test_env print COMPONENT KNOB: what heritage_env gives this process
	 * and its effective uid (tests/cases/secure_env.test runs a setuid copy). */
	if (argc == 4 && !strcmp(argv[1], "print")) {
		const char *v = heritage_env(argv[2], argv[3]);
		printf("%s euid=%u\n", v ? v : "(none)", (unsigned)geteuid());
		return 0;
	}
	/* test_env known: every variable the check knows, one per line
	 * (tests/cases/env_known.test compares them with the sources). */
	if (argc == 2 && !strcmp(argv[1], "known")) {
		const char *name;
		for (unsigned i = 0; (name = heritage_env_known(i, NULL)); i++)
			printf("%s\n", name);
		return 0;
	}
	Suite *s = suite_create("env");
	TCase *tc = tcase_create("heritage_env");
	tcase_add_test(tc, unset_and_empty_are_null);
	tcase_add_test(tc, name_is_uppercased_whatever_the_caller_spells);
	tcase_add_test(tc, value_is_read_once);
	tcase_add_test(tc, old_values_stay_readable);
	tcase_add_test(tc, changes_in_a_loop_hold_few_copies);
	tcase_add_test(tc, bad_values_are_refused_with_the_variable_named);
	tcase_add_test(tc, unknown_names_are_typos);
	tcase_add_test(tc, reload_takes_all_or_nothing);
	tcase_add_test(tc, flags_take_0_or_1_only);
	tcase_add_test(tc, names_longer_than_the_buffer_are_not_found);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
