/*
 * Unit tests of src/paragon/rpm_fpe.c's trap mode at run time (test_paragon
 * covers its pure functions): PAPI_HERITAGE_PARAGON_RPM_FPE_TRAPS chooses
 * the SSE exceptions to unmask, each SIGFPE counts once by class, unit and
 * CPU, and the instruction still completes with the IEEE default result.
 * Expected: x/0 is +inf and one divide-by-zero trap; DBL_MAX + DBL_MAX on
 * the adder and DBL_MAX * 2 on the multiplier are +inf and one overflow
 * trap each (rpms_fpe_ao, rpms_fpe_mo); MXCSR's ZM is bit 9, OM bit 10, IM
 * bit 7 (Intel SDM vol. 1, 10.2.3).  Stepping the trapping instruction
 * needs the single-step mechanism: skipped with the probe's reason when it
 * is missing.  The knob is read once per process: one child per test.
 */
#include <check.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "common/heritage_error.h"
#include "common/heritage_probe.h"
#include "paragon/rpm_fpe.h"
#include "paragon/rpm_model.h"
#include "env_test.h"

#define MXCSR_IM (1u << 7)
#define MXCSR_ZM (1u << 9)
#define MXCSR_OM (1u << 10)

/* Every CPU's fields summed: the thread may migrate. */
static void totals(uint64_t out[RPM_FPF_NFIELDS])
{
	memset(out, 0, RPM_FPF_NFIELDS * sizeof out[0]);
	for (unsigned os = 0; os < RPM_MAX_CPUS; os++) {
		uint64_t f[RPM_FPF_NFIELDS];
		rpm_fpe_read(os, f);
		for (int i = 0; i < RPM_FPF_NFIELDS; i++)
			out[i] += f[i];
	}
}

static volatile double zero = 0.0, one = 1.0, big = DBL_MAX, two = 2.0;

START_TEST(off_unless_asked)
{
	const char *why = NULL;
	env_unset("PAPI_HERITAGE_PARAGON_RPM_FPE_TRAPS");
	ck_assert_uint_eq(rpm_fpe_classes(&why), 0);
	ck_assert_msg(strstr(why, "set PAPI_HERITAGE_PARAGON_RPM_FPE_TRAPS=") != NULL, "%s", why);
	unsigned before = _mm_getcsr();
	ck_assert_int_eq(rpm_fpe_thread_enable(), -ENOTSUP);
	ck_assert_uint_eq(_mm_getcsr(), before);
	uint64_t t[RPM_FPF_NFIELDS];
	totals(t);
	for (int i = 0; i < RPM_FPF_NFIELDS; i++)
		ck_assert_uint_eq(t[i], 0);
}
END_TEST

START_TEST(a_bad_knob_is_off_and_says_so)
{
	const char *why = NULL;
	env_set("PAPI_HERITAGE_PARAGON_RPM_FPE_TRAPS", "divbyzero,sometimes", 1);
	ck_assert_uint_eq(rpm_fpe_classes(&why), 0);
	ck_assert_msg(strstr(why, "\"divbyzero,sometimes\" is not a list of") != NULL, "%s", why);
	ck_assert_int_eq(rpm_fpe_thread_enable(), -ENOTSUP);
	ck_assert_msg(strstr(heritage_last_error(), "is not a list of") != NULL, "%s", heritage_last_error());
}
END_TEST

START_TEST(traps_count_and_complete_with_the_default_result)
{
	char why[512];
	if (!heritage_probe_works(HERITAGE_MECH_SINGLE_STEP)) {
		heritage_probe_explain(HERITAGE_MECH_SINGLE_STEP, why, sizeof why);
		printf("skipped: the trap mode steps the trapping instruction: %s\n", why);
		return;
	}
	env_set("PAPI_HERITAGE_PARAGON_RPM_FPE_TRAPS", "overflow,divbyzero", 1);
	ck_assert_uint_eq(rpm_fpe_classes(NULL), 1u << RPM_FPE_OVF | 1u << RPM_FPE_DIV);

	unsigned before = _mm_getcsr();
	ck_assert_uint_eq(before & (MXCSR_IM | MXCSR_ZM | MXCSR_OM), MXCSR_IM | MXCSR_ZM | MXCSR_OM);
	ck_assert_msg(rpm_fpe_thread_enable() == 0, "enable: %s", heritage_last_error());
	/* Only the asked classes are unmasked. */
	ck_assert_uint_eq(_mm_getcsr() & (MXCSR_IM | MXCSR_ZM | MXCSR_OM), MXCSR_IM);

	uint64_t a[RPM_FPF_NFIELDS], b[RPM_FPF_NFIELDS];
	totals(a);
	double q = one / zero;
	double s = big + big;
	double p = big * two;
	double q2 = -one / zero;
	totals(b);
	ck_assert(isinf(q) && q > 0);
	ck_assert(isinf(s) && s > 0);
	ck_assert(isinf(p) && p > 0);
	ck_assert(isinf(q2) && q2 < 0);
	ck_assert_uint_eq(b[RPM_FPF_FT] - a[RPM_FPF_FT], 4);
	ck_assert_uint_eq(b[RPM_FPF_AO] - a[RPM_FPF_AO], 1);
	ck_assert_uint_eq(b[RPM_FPF_MO] - a[RPM_FPF_MO], 1);
	ck_assert_uint_eq(b[RPM_FPF_SE] - a[RPM_FPF_SE], 2); /* divide by zero is a source exception */
	ck_assert_uint_eq(b[RPM_FPF_MU] + b[RPM_FPF_AU] + b[RPM_FPF_MI] + b[RPM_FPF_AI] + b[RPM_FPF_SI], 0);
	/* Still unmasked after the steps; the flags are the program's. */
	ck_assert_uint_eq(_mm_getcsr() & (MXCSR_ZM | MXCSR_OM), 0);

	/* Nested: the masks come back at the last disable only. */
	ck_assert_int_eq(rpm_fpe_thread_enable(), 0);
	rpm_fpe_thread_disable();
	ck_assert_uint_eq(_mm_getcsr() & (MXCSR_ZM | MXCSR_OM), 0);
	rpm_fpe_thread_disable();
	ck_assert_uint_eq(_mm_getcsr() & (MXCSR_IM | MXCSR_ZM | MXCSR_OM), MXCSR_IM | MXCSR_ZM | MXCSR_OM);
	rpm_fpe_thread_disable(); /* one too many: nothing */
	ck_assert_uint_eq(_mm_getcsr() & (MXCSR_IM | MXCSR_ZM | MXCSR_OM), MXCSR_IM | MXCSR_ZM | MXCSR_OM);

	/* Masked again: no trap, no count, the same results. */
	totals(a);
	q = one / zero;
	s = big + big;
	totals(b);
	ck_assert(isinf(q) && isinf(s));
	ck_assert_uint_eq(b[RPM_FPF_FT], a[RPM_FPF_FT]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rpm_fpe");
	TCase *tc = tcase_create("trap mode");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, off_unless_asked);
	tcase_add_test(tc, a_bad_knob_is_off_and_says_so);
	tcase_add_test(tc, traps_count_and_complete_with_the_default_result);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_FORK); /* the knob is read once per process */
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
