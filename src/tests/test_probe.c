/*
 * Unit tests of the mechanism probes (src/common/heritage_probe.c) and of
 * backend choice from them (heritage_backend.c, and itanium2's table in
 * watch.c): fake probes stand in for the machine, so every state and every
 * fallback is exercised whatever this machine can do; the real probes are
 * then checked for verdicts that agree with what they claim.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/heritage_backend.h"
#include "common/heritage_probe.h"
#include "watch/watch.h"
#include "env_test.h"

static int calls[HERITAGE_NMECHS];

static void fake_works(struct heritage_probe_result *r)
{
	calls[HERITAGE_MECH_BREAKPOINT]++;
	r->state = HERITAGE_PROBE_WORKS;
	snprintf(r->evidence, sizeof r->evidence, "fake: counted 20 of 20");
}

static void fake_dead(struct heritage_probe_result *r)
{
	calls[HERITAGE_MECH_BREAKPOINT]++;
	r->state = HERITAGE_PROBE_DEAD;
	snprintf(r->evidence, sizeof r->evidence, "fake: opened, counted 0 of 20 accesses");
}

static void fake_refused(struct heritage_probe_result *r)
{
	calls[HERITAGE_MECH_BREAKPOINT]++;
	heritage_probe_refused(r, EACCES, "fake perf_event_open", 2);
}

static void fake_tracefs_absent(struct heritage_probe_result *r)
{
	calls[HERITAGE_MECH_TRACEFS]++;
	r->state = HERITAGE_PROBE_ABSENT;
	snprintf(r->evidence, sizeof r->evidence, "fake: tracefs is not mounted");
}

static void fake_tracepoint_works(struct heritage_probe_result *r)
{
	calls[HERITAGE_MECH_TRACEPOINT]++;
	r->state = HERITAGE_PROBE_WORKS;
	snprintf(r->evidence, sizeof r->evidence, "fake");
}

static void fake_silent(struct heritage_probe_result *r)
{
	(void)r; /* reaches no verdict */
}

static void reset(void)
{
	memset(calls, 0, sizeof calls);
	env_unset("PAPI_HERITAGE_PROBE_DISABLE");
	for (int m = 0; m < HERITAGE_NMECHS; m++)
		heritage_probe_override((enum heritage_mech)m, NULL);
}

START_TEST(works_dead_absent_and_probed_once)
{
	reset();
	heritage_probe_override(HERITAGE_MECH_BREAKPOINT, fake_works);
	const struct heritage_probe_result *r = heritage_probe(HERITAGE_MECH_BREAKPOINT);
	ck_assert_int_eq(r->state, HERITAGE_PROBE_WORKS);
	ck_assert_int_eq(r->err, 0);
	heritage_probe(HERITAGE_MECH_BREAKPOINT);
	ck_assert_int_eq(heritage_probe_works(HERITAGE_MECH_BREAKPOINT), 1);
	ck_assert_int_eq(calls[HERITAGE_MECH_BREAKPOINT], 1);

	heritage_probe_override(HERITAGE_MECH_BREAKPOINT, fake_dead);
	ck_assert_int_eq(heritage_probe_done(HERITAGE_MECH_BREAKPOINT), 0);
	r = heritage_probe(HERITAGE_MECH_BREAKPOINT);
	ck_assert_int_eq(r->state, HERITAGE_PROBE_DEAD);
	ck_assert_int_eq(r->err, -ENOTSUP);
	ck_assert_int_eq(r->refused, 0);
	char why[512];
	ck_assert_int_eq(heritage_probe_explain(HERITAGE_MECH_BREAKPOINT, why, sizeof why), -ENOTSUP);
	ck_assert_str_eq(why, "breakpoint is dead here: fake: opened, counted 0 of 20 accesses");

	heritage_probe_override(HERITAGE_MECH_BREAKPOINT, fake_refused);
	r = heritage_probe(HERITAGE_MECH_BREAKPOINT);
	ck_assert_int_eq(r->state, HERITAGE_PROBE_ABSENT);
	ck_assert_int_eq(r->refused, 1);
	ck_assert_int_eq(r->err, -EACCES);
	/* What allows it depends on the sysctl here: below its level, the
	 * level; at or above, something else refused it. */
	if (heritage_perf_paranoid() > 2)
		ck_assert_ptr_nonnull(strstr(r->allowed_by, "perf_event_paranoid <= 2"));
	else
		ck_assert_ptr_nonnull(strstr(r->allowed_by, "already allows it"));
	ck_assert_ptr_nonnull(strstr(r->allowed_by, "CAP_PERFMON"));
	ck_assert_int_eq(heritage_probe_explain(HERITAGE_MECH_BREAKPOINT, why, sizeof why), -EACCES);
	ck_assert_ptr_nonnull(strstr(why, "refused to this account"));
}
END_TEST

START_TEST(a_probe_without_verdict_is_dead_never_works)
{
	reset();
	heritage_probe_override(HERITAGE_MECH_PMU, fake_silent);
	const struct heritage_probe_result *r = heritage_probe(HERITAGE_MECH_PMU);
	ck_assert_int_eq(r->state, HERITAGE_PROBE_DEAD);
	ck_assert_int_ne(r->err, 0);
	ck_assert_str_ne(r->evidence, "");
}
END_TEST

START_TEST(a_mechanism_is_absent_when_what_it_builds_on_is)
{
	reset();
	heritage_probe_override(HERITAGE_MECH_TRACEFS, fake_tracefs_absent);
	heritage_probe_override(HERITAGE_MECH_TRACEPOINT, fake_tracepoint_works);
	const struct heritage_probe_result *r = heritage_probe(HERITAGE_MECH_TRACEPOINT);
	ck_assert_int_eq(r->state, HERITAGE_PROBE_ABSENT);
	ck_assert_int_eq(calls[HERITAGE_MECH_TRACEPOINT], 0); /* never tried */
	ck_assert_int_eq(calls[HERITAGE_MECH_TRACEFS], 1);
	ck_assert_ptr_nonnull(strstr(r->evidence, "needs tracefs"));
}
END_TEST

START_TEST(the_switch_kills_without_trying)
{
	reset();
	heritage_probe_override(HERITAGE_MECH_BREAKPOINT, fake_works);
	env_set("PAPI_HERITAGE_PROBE_DISABLE", "pmu, breakpoint,nosuch", 1);
	heritage_probe_forget();
	const struct heritage_probe_result *r = heritage_probe(HERITAGE_MECH_BREAKPOINT);
	ck_assert_int_eq(r->state, HERITAGE_PROBE_ABSENT);
	ck_assert_int_eq(r->disabled, 1);
	ck_assert_int_eq(calls[HERITAGE_MECH_BREAKPOINT], 0);
	ck_assert_int_eq(heritage_probe(HERITAGE_MECH_PMU)->disabled, 1);
	ck_assert_int_eq(heritage_probe(HERITAGE_MECH_LIBPFM)->disabled, 0);
	ck_assert_str_eq(heritage_probe_disable_unknown(), "nosuch");

	env_set("PAPI_HERITAGE_PROBE_DISABLE", "all", 1);
	heritage_probe_forget();
	for (int m = 0; m < HERITAGE_NMECHS; m++)
		ck_assert_int_eq(heritage_probe((enum heritage_mech)m)->disabled, 1);
	env_unset("PAPI_HERITAGE_PROBE_DISABLE");
	heritage_probe_forget();
}
END_TEST

/* ---- the generic choice ----------------------------------------------------------- */

static const struct heritage_backend table[] = {
	{ .name = "fast", .needs = HERITAGE_MECH_BIT(HERITAGE_MECH_BREAKPOINT) },
	{ .name = "picky", .needs = 0 },
	{ .name = "slow", .needs = HERITAGE_MECH_BIT(HERITAGE_MECH_IBS) },
};

static int fits_all_but_picky(const struct heritage_backend *b, const void *req, char *why, size_t len)
{
	(void)req;
	if (strcmp(b->name, "picky") == 0) {
		snprintf(why, len, "too big for picky");
		return -ENOSPC;
	}
	return 0;
}

static int fits_nothing_request(const struct heritage_backend *b, const void *req, char *why, size_t len)
{
	(void)b;
	(void)req;
	snprintf(why, len, "a range that ends before it starts");
	return -EINVAL;
}

static void ibs_works(struct heritage_probe_result *r)
{
	r->state = HERITAGE_PROBE_WORKS;
	snprintf(r->evidence, sizeof r->evidence, "fake");
}

START_TEST(auto_skips_dead_and_says_why)
{
	char why[1024];
	unsigned i = 99;

	reset();
	heritage_probe_override(HERITAGE_MECH_IBS, ibs_works);
	heritage_probe_override(HERITAGE_MECH_BREAKPOINT, fake_works);
	ck_assert_int_eq(heritage_backend_choose(table, 3, -1, 0, fits_all_but_picky, NULL, &i, why, sizeof why), 0);
	ck_assert_uint_eq(i, 0);

	heritage_probe_override(HERITAGE_MECH_BREAKPOINT, fake_dead);
	heritage_probe_override(HERITAGE_MECH_IBS, ibs_works);
	ck_assert_int_eq(heritage_backend_choose(table, 3, -1, 0, fits_all_but_picky, NULL, &i, why, sizeof why), 0);
	ck_assert_uint_eq(i, 2); /* fast is dead, picky does not fit */
	/* from: the fallback after a backend that failed to start. */
	ck_assert_int_eq(heritage_backend_choose(table, 3, -1, 2, fits_all_but_picky, NULL, &i, why, sizeof why), 0);
	ck_assert_uint_eq(i, 2);

	heritage_probe_override(HERITAGE_MECH_IBS, NULL);
	heritage_probe_override(HERITAGE_MECH_BREAKPOINT, fake_dead);
	env_set("PAPI_HERITAGE_PROBE_DISABLE", "ibs", 1);
	heritage_probe_forget();
	int err = heritage_backend_choose(table, 3, -1, 0, fits_all_but_picky, NULL, &i, why, sizeof why);
	env_unset("PAPI_HERITAGE_PROBE_DISABLE");
	ck_assert_int_ne(err, 0);
	ck_assert_ptr_nonnull(strstr(why, "fast: breakpoint is dead here: fake: opened, counted 0 of 20 accesses"));
	ck_assert_ptr_nonnull(strstr(why, "picky: too big for picky"));
	ck_assert_ptr_nonnull(strstr(why, "slow: ibs is absent here: disabled by PAPI_HERITAGE_PROBE_DISABLE"));
}
END_TEST

START_TEST(forced_on_dead_or_refused_is_refused_with_the_evidence)
{
	char why[1024];
	unsigned i = 99;

	reset();
	heritage_probe_override(HERITAGE_MECH_BREAKPOINT, fake_dead);
	ck_assert_int_eq(heritage_backend_choose(table, 3, 0, 0, fits_all_but_picky, NULL, &i, why, sizeof why), -ENOTSUP);
	ck_assert_uint_eq(i, 99);
	ck_assert_ptr_nonnull(strstr(why, "counted 0 of 20 accesses"));

	heritage_probe_override(HERITAGE_MECH_BREAKPOINT, fake_refused);
	ck_assert_int_eq(heritage_backend_choose(table, 3, 0, 0, fits_all_but_picky, NULL, &i, why, sizeof why), -EACCES);
	ck_assert_ptr_nonnull(strstr(why, "perf_event_paranoid"));
	/* auto, with the only other candidates ruled out: the refusal is the
	 * reason, PAPI_EPERM. */
	env_set("PAPI_HERITAGE_PROBE_DISABLE", "ibs", 1);
	heritage_probe_forget();
	heritage_probe_override(HERITAGE_MECH_BREAKPOINT, fake_refused);
	ck_assert_int_eq(heritage_backend_choose(table, 3, -1, 0, fits_all_but_picky, NULL, &i, why, sizeof why), -EPERM);
	env_unset("PAPI_HERITAGE_PROBE_DISABLE");

	heritage_probe_override(HERITAGE_MECH_BREAKPOINT, fake_works);
	ck_assert_int_eq(heritage_backend_choose(table, 3, 1, 0, fits_all_but_picky, NULL, &i, why, sizeof why), -ENOSPC);
	ck_assert_str_eq(why, "too big for picky");
	ck_assert_int_eq(heritage_backend_choose(table, 3, -1, 0, fits_nothing_request, NULL, &i, why, sizeof why), -EINVAL);
	ck_assert_str_eq(why, "a range that ends before it starts");
	ck_assert_int_eq(heritage_backend_find(table, 3, "SLOW"), 2);
	ck_assert_int_eq(heritage_backend_find(table, 3, "gpu"), -1);
}
END_TEST

START_TEST(a_dead_mechanism_outranks_a_refused_one)
{
	static const struct heritage_backend both = {
		.name = "both", .needs = HERITAGE_MECH_BIT(HERITAGE_MECH_BREAKPOINT) | HERITAGE_MECH_BIT(HERITAGE_MECH_PMU)
	};
	char why[512];

	reset();
	heritage_probe_override(HERITAGE_MECH_BREAKPOINT, fake_refused);
	heritage_probe_override(HERITAGE_MECH_PMU, fake_silent);
	/* No privilege brings back a dead PMU: ENOTSUP and the PMU's reason. */
	ck_assert_int_eq(heritage_backend_usable(&both, why, sizeof why), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(why, "pmu is dead here"));
	heritage_probe_override(HERITAGE_MECH_PMU, ibs_works);
	heritage_probe_override(HERITAGE_MECH_BREAKPOINT, fake_refused);
	ck_assert_int_eq(heritage_backend_usable(&both, why, sizeof why), -EACCES);
	reset();
}
END_TEST

/* ---- itanium2's table ---------------------------------------------------------------- */

static struct watch_request one_word(void)
{
	static long word;
	struct watch_request req;
	memset(&req, 0, sizeof req);
	req.want_data = 1;
	req.ndata = 1;
	req.data[0].start = (uintptr_t)&word;
	req.data[0].end = (uintptr_t)&word + sizeof word;
	return req;
}

static void pagetrap_works(struct heritage_probe_result *r)
{
	r->state = HERITAGE_PROBE_WORKS;
	snprintf(r->evidence, sizeof r->evidence, "fake");
}

START_TEST(itanium2_auto_falls_back_from_a_dead_breakpoint)
{
	struct watch_request req = one_word();
	enum watch_backend b = WATCH_BACKEND_AUTO;
	char why[WATCH_ERRLEN];

	reset();
	heritage_probe_override(HERITAGE_MECH_PAGETRAP, pagetrap_works);
	heritage_probe_override(HERITAGE_MECH_SINGLE_STEP, pagetrap_works);
	heritage_probe_override(HERITAGE_MECH_BREAKPOINT, fake_works);
	ck_assert_int_eq(watch_choose_backend(&req, WATCH_BACKEND_AUTO, &b, why, sizeof why), 0);
	ck_assert_int_eq(b, WATCH_BACKEND_BREAKPOINT); /* this test program is not instrumented */

	heritage_probe_override(HERITAGE_MECH_BREAKPOINT, fake_dead);
	heritage_probe_override(HERITAGE_MECH_PAGETRAP, pagetrap_works);
	heritage_probe_override(HERITAGE_MECH_SINGLE_STEP, pagetrap_works);
	ck_assert_int_eq(watch_choose_backend(&req, WATCH_BACKEND_AUTO, &b, why, sizeof why), 0);
	ck_assert_int_eq(b, WATCH_BACKEND_PAGETRAP);
	ck_assert_int_eq(watch_choose_backend(&req, WATCH_BACKEND_BREAKPOINT, &b, why, sizeof why), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(why, "counted 0 of 20 accesses"));

	heritage_probe_override(HERITAGE_MECH_BREAKPOINT, fake_refused);
	heritage_probe_override(HERITAGE_MECH_PAGETRAP, pagetrap_works);
	heritage_probe_override(HERITAGE_MECH_SINGLE_STEP, pagetrap_works);
	ck_assert_int_eq(watch_choose_backend(&req, WATCH_BACKEND_BREAKPOINT, &b, why, sizeof why), -EACCES);
	ck_assert_int_eq(watch_choose_backend(&req, WATCH_BACKEND_AUTO, &b, why, sizeof why), 0);
	ck_assert_int_eq(b, WATCH_BACKEND_PAGETRAP);
	ck_assert_int_eq(watch_any_backend(why, sizeof why), 0);

	env_set("PAPI_HERITAGE_PROBE_DISABLE", "pagetrap,codepatch", 1);
	heritage_probe_forget();
	heritage_probe_override(HERITAGE_MECH_BREAKPOINT, fake_dead);
	ck_assert_int_ne(watch_any_backend(why, sizeof why), 0);
	ck_assert_ptr_nonnull(strstr(why, "codepatch is absent here"));
	ck_assert_ptr_nonnull(strstr(why, "breakpoint is dead here"));
	ck_assert_ptr_nonnull(strstr(why, "pagetrap is absent here"));
	env_unset("PAPI_HERITAGE_PROBE_DISABLE");
	reset();
}
END_TEST

/* ---- the real probes ----------------------------------------------------------------- */

START_TEST(real_probes_reach_a_verdict_with_evidence)
{
	reset();
	for (int m = 0; m < HERITAGE_NMECHS; m++) {
		const struct heritage_probe_result *r = heritage_probe((enum heritage_mech)m);
		ck_assert_msg(r->state == HERITAGE_PROBE_WORKS || r->state == HERITAGE_PROBE_DEAD ||
		              r->state == HERITAGE_PROBE_ABSENT, "%s: state %d", heritage_mech_name(m), r->state);
		ck_assert_msg(r->evidence[0], "%s: no evidence", heritage_mech_name(m));
		ck_assert_msg((r->state == HERITAGE_PROBE_WORKS) == (r->err == 0), "%s: err %d", heritage_mech_name(m), r->err);
		ck_assert_msg(!r->refused || r->allowed_by[0], "%s: refused without saying what allows it",
		              heritage_mech_name(m));
		ck_assert_int_eq(heritage_mech_from_name(heritage_mech_name(m)), m);
		printf("%-12s %-6s %s%s%s\n", heritage_mech_name(m), heritage_probe_state_name(r->state), r->evidence,
		       r->refused ? "; allowed by " : "", r->refused ? r->allowed_by : "");
	}
	/* The account decides these: root may, others may not. */
	ck_assert_int_eq(heritage_probe_works(HERITAGE_MECH_RPM_WRITABLE), geteuid() == 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("probe");
	TCase *tc = tcase_create("states");
	tcase_add_test(tc, works_dead_absent_and_probed_once);
	tcase_add_test(tc, a_probe_without_verdict_is_dead_never_works);
	tcase_add_test(tc, a_mechanism_is_absent_when_what_it_builds_on_is);
	tcase_add_test(tc, the_switch_kills_without_trying);
	suite_add_tcase(s, tc);
	tc = tcase_create("choice");
	tcase_add_test(tc, auto_skips_dead_and_says_why);
	tcase_add_test(tc, forced_on_dead_or_refused_is_refused_with_the_evidence);
	tcase_add_test(tc, a_dead_mechanism_outranks_a_refused_one);
	tcase_add_test(tc, itanium2_auto_falls_back_from_a_dead_breakpoint);
	suite_add_tcase(s, tc);
	tc = tcase_create("real");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, real_probes_reach_a_verdict_with_evidence);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
