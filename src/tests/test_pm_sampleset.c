/*
 * Unit tests of src/profileme/pm_sampleset.c: every production of the
 * dcpiprofileme(1) grammar (doc/facilities.md 5(b)), the man page's example sets with the
 * meaning it gives them, and every error with its position and word.
 * Expected masks are written from the man page's words, field by field.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profileme/pm_sampleset.h"

#define B(f) PM_FIELD_BIT(f)

static struct pm_value value_of(const char *text)
{
	struct pm_value v;
	char why[256] = "";
	int err = pm_value_parse(text, &v, why, sizeof why);
	ck_assert_msg(err == 0, "%s: %s", text, why);
	return v;
}

static void expect_error(const char *text, int columns, const char *position, const char *word)
{
	char why[256] = "";
	int err;
	if (columns) {
		struct pm_columns c;
		err = pm_columns_parse(text, &c, why, sizeof why);
	} else {
		struct pm_value v;
		err = pm_value_parse(text, &v, why, sizeof why);
	}
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_msg(strstr(why, position), "%s: no \"%s\" in \"%s\"", text, position, why);
	ck_assert_msg(strstr(why, word), "%s: no \"%s\" in \"%s\"", text, word, why);
}

/* A sample with every bit and trap field known, trap t, bits set. */
static struct pm_sample sample(uint32_t bits, int trap)
{
	struct pm_sample s = { .pc = 0x1000, .known = PM_BITS_MASK | PM_TRAPS_MASK };
	s.value = bits | B(trap);
	return s;
}

START_TEST(any_is_every_sample)
{
	struct pm_value v = value_of("any");
	ck_assert_uint_eq(v.set.must1 | v.set.must0, 0);
	ck_assert_int_eq(v.counter, -1);
	ck_assert_int_eq(v.is_default, 0);
	struct pm_sample s = { .pc = 1 }; /* nothing known at all */
	ck_assert(pm_set_match(&v.set, &s));
}
END_TEST

START_TEST(bit_and_negations)
{
	ck_assert_uint_eq(value_of("retired").set.must1, B(PM_RETIRED));
	ck_assert_uint_eq(value_of("!retired").set.must0, B(PM_RETIRED));
	ck_assert_uint_eq(value_of("/retired").set.must0, B(PM_RETIRED));
	/* The man page writes \! for the shell; quoted, the backslash arrives. */
	ck_assert_uint_eq(value_of("\\!retired").set.must0, B(PM_RETIRED));
	ck_assert_uint_eq(value_of("!retired").set.must1, 0);
	/* Trap bits are names like bits. */
	ck_assert_uint_eq(value_of("dtbmiss").set.must1, B(PM_DTBMISS));
	ck_assert_uint_eq(value_of("MT_FPCRtrap").set.must1, B(PM_MT_FPCRTRAP));
	ck_assert_uint_eq(value_of("OPCDECtrap").set.must1, B(PM_OPCDECTRAP));
}
END_TEST

START_TEST(every_field_name_parses)
{
	for (int f = 0; f < PM_COUNTER_FIRST; f++) {
		struct pm_value v = value_of(pm_fields[f].name);
		ck_assert_uint_eq(v.set.must1, B(f));
	}
	ck_assert_int_eq(PM_NBITS, 9);
	ck_assert_int_eq(PM_NTRAPS, 16);
	ck_assert_int_eq(PM_NCOUNTERS, 2);
}
END_TEST

START_TEST(conjunction_of_the_man_page_examples)
{
	/* "retired^notrap: the retired bit and the notrap bit are both set" */
	struct pm_value v = value_of("retired^notrap");
	ck_assert_uint_eq(v.set.must1, B(PM_RETIRED) | B(PM_NOTRAP));
	ck_assert_uint_eq(v.set.must0, 0);
	/* "taken^!mispredict: taken set and mispredict clear" */
	v = value_of("taken^!mispredict");
	ck_assert_uint_eq(v.set.must1, B(PM_TAKEN));
	ck_assert_uint_eq(v.set.must0, B(PM_MISPREDICT));

	struct pm_sample hit = sample(B(PM_RETIRED) | B(PM_TAKEN), PM_NOTRAP);
	struct pm_sample mis = sample(B(PM_RETIRED) | B(PM_TAKEN), PM_MISPREDICT);
	ck_assert(pm_set_match(&v.set, &hit));
	ck_assert(!pm_set_match(&v.set, &mis));
}
END_TEST

START_TEST(trap_is_not_notrap)
{
	struct pm_value v = value_of("trap");
	ck_assert_uint_eq(v.set.must0, B(PM_NOTRAP));
	ck_assert_uint_eq(v.set.must1, 0);
	v = value_of("!trap");
	ck_assert_uint_eq(v.set.must1, B(PM_NOTRAP));
	/* "retired+trap^!dtbmiss": trapped and the trap was not a dtbmiss */
	v = value_of("trap^/dtbmiss");
	ck_assert_uint_eq(v.set.must0, B(PM_NOTRAP) | B(PM_DTBMISS));
	struct pm_sample arith = sample(0, PM_ARITHTRAP), dtb = sample(0, PM_DTBMISS), none = sample(0, PM_NOTRAP);
	ck_assert(pm_set_match(&v.set, &arith));
	ck_assert(!pm_set_match(&v.set, &dtb));
	ck_assert(!pm_set_match(&v.set, &none));
}
END_TEST

START_TEST(counter_value)
{
	struct pm_value v = value_of("retired:retdelay");
	ck_assert_uint_eq(v.set.must1, B(PM_RETIRED));
	ck_assert_int_eq(v.counter, PM_RETDELAY);
	v = value_of("any:inflight");
	ck_assert_uint_eq(v.set.must1 | v.set.must0, 0);
	ck_assert_int_eq(v.counter, PM_INFLIGHT);
	ck_assert_uint_eq(pm_value_fields(&v), B(PM_INFLIGHT));
}
END_TEST

START_TEST(default_value)
{
	struct pm_value v = value_of("default");
	ck_assert_int_eq(v.is_default, 1);
	ck_assert_uint_eq(v.set.must1 | v.set.must0, 0);
	ck_assert_int_eq(v.counter, -1);
}
END_TEST

START_TEST(columns_and_ratios)
{
	struct pm_columns c;
	char why[256] = "";
	/* "dcpiprof -pm default+retired:retdelay::retired": the default columns
	 * plus the average retire delay per retired instruction */
	ck_assert_int_eq(pm_columns_parse("default+retired:retdelay::retired", &c, why, sizeof why), 0);
	ck_assert_uint_eq(c.n, 2);
	ck_assert_int_eq(c.col[0].num.is_default, 1);
	ck_assert_int_eq(c.col[0].ratio, 0);
	ck_assert_int_eq(c.col[1].ratio, 1);
	ck_assert_uint_eq(c.col[1].num.set.must1, B(PM_RETIRED));
	ck_assert_int_eq(c.col[1].num.counter, PM_RETDELAY);
	ck_assert_uint_eq(c.col[1].den.set.must1, B(PM_RETIRED));
	ck_assert_int_eq(c.col[1].den.counter, -1);
	/* "retired+trap^\!dtbmiss": two columns */
	ck_assert_int_eq(pm_columns_parse("retired+trap^\\!dtbmiss", &c, why, sizeof why), 0);
	ck_assert_uint_eq(c.n, 2);
	ck_assert_uint_eq(c.col[0].num.set.must1, B(PM_RETIRED));
	ck_assert_uint_eq(c.col[1].num.set.must0, B(PM_NOTRAP) | B(PM_DTBMISS));
	/* "\!notrap+retired" */
	ck_assert_int_eq(pm_columns_parse("!notrap+retired", &c, why, sizeof why), 0);
	ck_assert_uint_eq(c.n, 2);
	/* One column is a list of one. */
	ck_assert_int_eq(pm_columns_parse("retired", &c, why, sizeof why), 0);
	ck_assert_uint_eq(c.n, 1);
	/* Blanks between tokens are allowed. */
	ck_assert_int_eq(pm_columns_parse(" retired ^ !notrap + any : retdelay :: retired ", &c, why, sizeof why), 0);
	ck_assert_uint_eq(c.n, 2);
	ck_assert_uint_eq(c.col[1].num.counter, PM_RETDELAY);
}
END_TEST

START_TEST(format_round_trips)
{
	static const char *const texts[] = { "any", "default", "retired", "!retired", "retired^notrap",
		"taken^!mispredict", "trap^/dtbmiss", "retired:retdelay", "any:inflight",
		"valid^!taken^!cbrmispredict^notrap^!arithtrap" };
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		struct pm_value v = value_of(texts[i]), back;
		char buf[256], why[256];
		int n = pm_value_format(&v, buf, sizeof buf);
		ck_assert_int_eq(n, (int)strlen(buf));
		ck_assert_int_eq(pm_value_parse(buf, &back, why, sizeof why), 0);
		ck_assert_uint_eq(back.set.must1, v.set.must1);
		ck_assert_uint_eq(back.set.must0, v.set.must0);
		ck_assert_int_eq(back.counter, v.counter);
		ck_assert_int_eq(back.is_default, v.is_default);
	}
	char buf[64];
	struct pm_value v = value_of("trap^/dtbmiss");
	pm_value_format(&v, buf, sizeof buf);
	ck_assert_str_eq(buf, "!notrap^!dtbmiss");
	v = value_of("notrap^retired:retdelay");
	pm_value_format(&v, buf, sizeof buf);
	ck_assert_str_eq(buf, "retired^notrap:retdelay");
	/* Truncation is snprintf's: the length it needed, a terminated prefix. */
	char small[5];
	ck_assert_int_eq(pm_value_format(&v, small, sizeof small), (int)strlen("retired^notrap:retdelay"));
	ck_assert_str_eq(small, "reti");
	struct pm_columns c;
	char why[128];
	ck_assert_int_eq(pm_columns_parse("default+retired:retdelay::retired", &c, why, sizeof why), 0);
	pm_column_format(&c.col[1], buf, sizeof buf);
	ck_assert_str_eq(buf, "retired:retdelay::retired");
}
END_TEST

START_TEST(unknown_fields_match_neither_way)
{
	/* taken is undefined on a non-branch: in neither taken nor !taken. */
	struct pm_sample s = sample(B(PM_RETIRED), PM_NOTRAP);
	s.known &= ~B(PM_TAKEN);
	struct pm_value t = value_of("taken"), nt = value_of("!taken"), r = value_of("retired");
	ck_assert(!pm_set_match(&t.set, &s));
	ck_assert(!pm_set_match(&nt.set, &s));
	ck_assert(pm_set_match(&r.set, &s));
}
END_TEST

START_TEST(tally_counts_and_sums)
{
	struct pm_value v = value_of("retired:retdelay");
	struct pm_tally t = { 0 };
	struct pm_sample a = sample(B(PM_RETIRED), PM_NOTRAP), b = a, c = sample(0, PM_DTBMISS), d = a;
	a.known |= B(PM_RETDELAY);
	a.counter[PM_RETDELAY - PM_COUNTER_FIRST] = 7;
	b.known |= B(PM_RETDELAY);
	b.counter[PM_RETDELAY - PM_COUNTER_FIRST] = 100;
	c.known |= B(PM_RETDELAY);
	c.counter[PM_RETDELAY - PM_COUNTER_FIRST] = 1000; /* not retired: not in the set */
	/* d retired but its counter unknown: in the set, not in the sum */
	pm_tally_add(&t, &v, &a);
	pm_tally_add(&t, &v, &b);
	pm_tally_add(&t, &v, &c);
	pm_tally_add(&t, &v, &d);
	ck_assert_uint_eq(t.samples, 3);
	ck_assert_uint_eq(t.sum, 107);
	ck_assert_uint_eq(t.counted, 2);
	ck_assert_uint_eq(pm_tally_estimate(&t, &v, 4096), 107);
	struct pm_value r = value_of("retired");
	struct pm_tally u = { 0 };
	pm_tally_add(&u, &r, &a);
	pm_tally_add(&u, &r, &c);
	ck_assert_uint_eq(pm_tally_estimate(&u, &r, 4096), 4096);
}
END_TEST

START_TEST(backend_check_names_the_missing_field)
{
	char why[256] = "";
	struct pm_value v = value_of("taken^!mispredict");
	uint32_t soft = B(PM_RETIRED) | B(PM_TAKEN) | B(PM_VALID) | B(PM_NOTRAP) | B(PM_ARITHTRAP);
	ck_assert_int_eq(pm_value_check(&v, soft, "soft", why, sizeof why), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(why, "mispredict"));
	ck_assert_ptr_nonnull(strstr(why, "soft"));
	v = value_of("retired:retdelay");
	ck_assert_int_eq(pm_value_check(&v, soft, "soft", why, sizeof why), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(why, "retdelay"));
	v = value_of("retired^notrap");
	ck_assert_int_eq(pm_value_check(&v, soft, "soft", why, sizeof why), 0);
}
END_TEST

START_TEST(errors_name_position_and_word)
{
	expect_error("retired^bogus", 0, "position 9", "unknown bit \"bogus\"");
	expect_error("bogus", 1, "position 1", "\"bogus\"");
	expect_error("", 0, "position 1", "empty");
	expect_error("", 1, "position 1", "empty");
	expect_error("retired^", 0, "position 9", "found the end");
	expect_error("^retired", 0, "position 1", "found \"^\"");
	expect_error("!", 0, "position 2", "expected a bit");
	expect_error("retired:", 0, "position 9", "expected a counter");
	expect_error("retired:bogus", 0, "position 9", "unknown counter \"bogus\"");
	expect_error("retired:taken", 0, "position 9", "\"taken\" is a bit");
	expect_error("retdelay", 0, "position 1", "\"retdelay\" is a counter");
	expect_error("retired^any", 0, "position 9", "\"any\" stands alone");
	expect_error("!default", 0, "position 2", "\"default\" stands alone");
	expect_error("default:retdelay", 0, "position 8", "takes no counter");
	expect_error("retired+taken", 0, "position 8", "'+' joins columns");
	expect_error("retired::taken", 0, "position 8", "'::' joins columns");
	expect_error("retired taken", 0, "position 9", "unexpected \"taken\"");
	expect_error("retired+", 1, "position 9", "found the end");
	expect_error("retired::", 1, "position 10", "found the end");
	expect_error("retired+taken)", 1, "position 14", "unexpected \")\"");
	expect_error("Retired", 0, "position 1", "unknown bit \"Retired\"");
	/* Too many columns. */
	char many[512] = "retired";
	for (int i = 1; i <= PM_MAX_COLUMNS; i++)
		strcat(many, "+retired");
	expect_error(many, 1, "position", "more than 16 columns");
}
END_TEST

/* fuzz_event_name's first find: "!notrap^!trap" (notrap required 0, then,
 * by trap's synonym, 1) parsed to a set with both constraints, which
 * formats as "!notrap" -- another set, so the PAPI event's name did not
 * name it again.  A field required both ways is refused, naming it. */
START_TEST(contradictions_refused)
{
	expect_error("!notrap^!trap", 0, "position 10", "\"trap\" contradicts an earlier constraint on notrap");
	expect_error("retired^!retired", 0, "position 10", "contradicts an earlier constraint on retired");
	expect_error("trap^notrap", 0, "position 6", "no sample is in this set");
	expect_error("taken^valid^/taken:retdelay", 1, "position 14", "on taken");
	struct pm_value v;
	char why[256];
	/* The same constraint twice is no contradiction. */
	ck_assert_int_eq(pm_value_parse("retired^retired^!trap^notrap", &v, why, sizeof why), 0);
	ck_assert_uint_eq(v.set.must1, PM_FIELD_BIT(PM_RETIRED) | PM_FIELD_BIT(PM_NOTRAP));
	ck_assert_uint_eq(v.set.must0, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pm_sampleset");
	TCase *tc = tcase_create("grammar");
	tcase_add_test(tc, any_is_every_sample);
	tcase_add_test(tc, bit_and_negations);
	tcase_add_test(tc, every_field_name_parses);
	tcase_add_test(tc, conjunction_of_the_man_page_examples);
	tcase_add_test(tc, trap_is_not_notrap);
	tcase_add_test(tc, counter_value);
	tcase_add_test(tc, default_value);
	tcase_add_test(tc, columns_and_ratios);
	tcase_add_test(tc, format_round_trips);
	tcase_add_test(tc, unknown_fields_match_neither_way);
	tcase_add_test(tc, tally_counts_and_sums);
	tcase_add_test(tc, backend_check_names_the_missing_field);
	tcase_add_test(tc, errors_name_position_and_word);
	tcase_add_test(tc, contradictions_refused);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
