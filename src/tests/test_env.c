/*
 * Unit tests of src/common/heritage_env.c: PAPI_HERITAGE_<COMPONENT>_<KNOB>
 * is looked up uppercased, empty counts as unset, and the value is read at
 * each call (the man pages promise a knob can change between PAPI_start
 * calls of one process).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"

START_TEST(unset_and_empty_are_null)
{
	unsetenv("PAPI_HERITAGE_ITANIUM2_MODE");
	ck_assert_ptr_null(heritage_env("itanium2", "mode"));
	setenv("PAPI_HERITAGE_ITANIUM2_MODE", "", 1);
	ck_assert_ptr_null(heritage_env("itanium2", "mode"));
}
END_TEST

START_TEST(name_is_uppercased_whatever_the_caller_spells)
{
	setenv("PAPI_HERITAGE_PARAGON_RPM_MAP", "0", 1);
	ck_assert_str_eq(heritage_env("paragon_rpm", "map"), "0");
	ck_assert_str_eq(heritage_env("PARAGON_RPM", "MAP"), "0");
	ck_assert_str_eq(heritage_env("Paragon_Rpm", "Map"), "0");
	/* Only the name is uppercased, never the value. */
	setenv("PAPI_HERITAGE_ITANIUM2_BACKEND", "PageTrap", 1);
	ck_assert_str_eq(heritage_env("itanium2", "backend"), "PageTrap");
	/* A lowercase variable is another variable. */
	unsetenv("PAPI_HERITAGE_ALPHA21064_X");
	setenv("papi_heritage_alpha21064_x", "1", 1);
	ck_assert_ptr_null(heritage_env("alpha21064", "x"));
}
END_TEST

START_TEST(value_is_read_at_each_call)
{
	setenv("PAPI_HERITAGE_ITANIUM2_MODE", "coarse", 1);
	ck_assert_str_eq(heritage_env("itanium2", "mode"), "coarse");
	setenv("PAPI_HERITAGE_ITANIUM2_MODE", "exact", 1);
	ck_assert_str_eq(heritage_env("itanium2", "mode"), "exact");
	unsetenv("PAPI_HERITAGE_ITANIUM2_MODE");
	ck_assert_ptr_null(heritage_env("itanium2", "mode"));
}
END_TEST

/* A 0-or-1 knob takes 0 and 1 only: the value PARAGON_RPM_MODEL took for
 * "on" was anything but "0", IMC_EXACT's only "1", so "no" meant on for one
 * and "yes" off for the other. */
START_TEST(flags_take_0_or_1_only)
{
	int on = -1;
	unsetenv("PAPI_HERITAGE_IMC_EXACT");
	ck_assert_int_eq(heritage_env_flag("imc", "exact", &on), 0);
	ck_assert_int_eq(on, 0);
	setenv("PAPI_HERITAGE_IMC_EXACT", "1", 1);
	ck_assert_int_eq(heritage_env_flag("imc", "exact", &on), 0);
	ck_assert_int_eq(on, 1);
	setenv("PAPI_HERITAGE_IMC_EXACT", "0", 1);
	ck_assert_int_eq(heritage_env_flag("imc", "exact", &on), 0);
	ck_assert_int_eq(on, 0);
	static const char *const bad[] = { "yes", "no", "true", "2", "01", " 1", "1 " };
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		setenv("PAPI_HERITAGE_PARAGON_RPM_MODEL", bad[i], 1);
		on = -1;
		ck_assert_int_eq(heritage_env_flag("paragon_rpm", "model", &on), -EINVAL);
		ck_assert_int_eq(on, 0);
		char want[96];
		snprintf(want, sizeof want, "PAPI_HERITAGE_PARAGON_RPM_MODEL=%s: give 0 or 1", bad[i]);
		ck_assert_str_eq(heritage_last_error(), want);
	}
	unsetenv("PAPI_HERITAGE_PARAGON_RPM_MODEL");
	unsetenv("PAPI_HERITAGE_IMC_EXACT");
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
	setenv(name, "fits", 1);
	ck_assert_str_eq(heritage_env(comp, knob), "fits");

	/* 128 characters: does not. */
	knob[12] = 'k';
	knob[13] = '\0';
	strcat(name, "K");
	ck_assert_uint_eq(strlen(name), 128);
	setenv(name, "too long", 1);
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
	Suite *s = suite_create("env");
	TCase *tc = tcase_create("heritage_env");
	tcase_add_test(tc, unset_and_empty_are_null);
	tcase_add_test(tc, name_is_uppercased_whatever_the_caller_spells);
	tcase_add_test(tc, value_is_read_at_each_call);
	tcase_add_test(tc, flags_take_0_or_1_only);
	tcase_add_test(tc, names_longer_than_the_buffer_are_not_found);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
