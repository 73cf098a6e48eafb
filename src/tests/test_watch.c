/*
 * Unit tests of src/watch/watch.c: the itanium2 backend table, the names a
 * user gives PAPI_HERITAGE_ITANIUM2_BACKEND, the counters' arithmetic, what
 * each backend accepts (its fits(), reached through watch_choose_backend
 * with every mechanism faked working, so the machine does not decide), and
 * the session life cycle through watch.h only.  The counting tests ask the
 * probe for their mechanism and print why they skip when it is missing.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/heritage_backend.h"
#include "common/heritage_probe.h"
#include "watch/watch.h"
#include "env_test.h"

/* ---- names and the table -------------------------------------------------- */

START_TEST(backend_names_round_trip)
{
	static const struct {
		const char *name;
		enum watch_backend b;
	} names[] = {
		{ "auto", WATCH_BACKEND_AUTO },
		{ "instrument", WATCH_BACKEND_INSTRUMENT },
		{ "breakpoint", WATCH_BACKEND_BREAKPOINT },
		{ "pagetrap", WATCH_BACKEND_PAGETRAP },
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		enum watch_backend b = WATCH_BACKEND_COUNT;
		ck_assert_str_eq(watch_backend_name(names[i].b), names[i].name);
		ck_assert_int_eq(watch_backend_from_name(names[i].name, &b), 0);
		ck_assert_int_eq(b, names[i].b);
	}
	/* The environment variable is matched without regard to case. */
	enum watch_backend b = WATCH_BACKEND_AUTO;
	ck_assert_int_eq(watch_backend_from_name("PageTrap", &b), 0);
	ck_assert_int_eq(b, WATCH_BACKEND_PAGETRAP);
	ck_assert_int_eq(watch_backend_from_name("AUTO", &b), 0);
	ck_assert_int_eq(b, WATCH_BACKEND_AUTO);
	/* Unknown names are refused and leave *out alone. */
	b = WATCH_BACKEND_BREAKPOINT;
	ck_assert_int_eq(watch_backend_from_name("debugreg", &b), -EINVAL);
	ck_assert_int_eq(watch_backend_from_name("", &b), -EINVAL);
	ck_assert_int_eq(watch_backend_from_name(NULL, &b), -EINVAL);
	ck_assert_int_eq(b, WATCH_BACKEND_BREAKPOINT);
	ck_assert_str_eq(watch_backend_name(WATCH_BACKEND_COUNT), "?");
	ck_assert_str_eq(watch_backend_name((enum watch_backend)-1), "?");
}
END_TEST

START_TEST(table_is_in_auto_order_with_its_mechanisms)
{
	unsigned n = 0;
	const struct heritage_backend *t = watch_backend_table(&n);

	/* doc/architecture.md (src/watch): auto tries the cheapest exact backend first. */
	ck_assert_uint_eq(n, 4);
	ck_assert_str_eq(t[0].name, "instrument");
	ck_assert_uint_eq(t[0].needs, 0);
	ck_assert_ptr_eq(t[0].ops, &watch_instrument_ops);
	ck_assert_str_eq(t[1].name, "breakpoint");
	ck_assert_uint_eq(t[1].needs, HERITAGE_MECH_BIT(HERITAGE_MECH_BREAKPOINT));
	ck_assert_ptr_eq(t[1].ops, &watch_breakpoint_ops);
	/* A trap per block before a step per instruction; it refuses data. */
	ck_assert_str_eq(t[2].name, "blocktrap");
	ck_assert_uint_eq(t[2].needs, HERITAGE_MECH_BIT(HERITAGE_MECH_CODEPATCH));
	ck_assert_ptr_eq(t[2].ops, &watch_blocktrap_ops);
	ck_assert_str_eq(t[3].name, "pagetrap");
	ck_assert_uint_eq(t[3].needs, HERITAGE_MECH_BIT(HERITAGE_MECH_PAGETRAP) | HERITAGE_MECH_BIT(HERITAGE_MECH_SINGLE_STEP));
	ck_assert_ptr_eq(t[3].ops, &watch_pagetrap_ops);
	/* Table index + 1 is the enum. */
	for (unsigned i = 0; i < n; i++)
		ck_assert_str_eq(watch_backend_name((enum watch_backend)(i + 1)), t[i].name);
}
END_TEST

/* ---- counters ------------------------------------------------------------- */

START_TEST(counts_add_and_fields)
{
	struct watch_counts a = { .loads = 1, .stores = 2, .misaligned_loads = 3, .misaligned_stores = 4, .insns = 5,
	                          .insns_pair = { 6, 7, 8, 9 } };
	struct watch_counts b = { .loads = 10, .stores = 20, .misaligned_loads = 30, .misaligned_stores = 40,
	                          .insns = 50, .insns_pair = { 60, 70, 80, 90 } };

	watch_counts_add(&a, &b);
	ck_assert_uint_eq(a.loads, 11);
	ck_assert_uint_eq(a.stores, 22);
	ck_assert_uint_eq(a.misaligned_loads, 33);
	ck_assert_uint_eq(a.misaligned_stores, 44);
	ck_assert_uint_eq(a.insns, 55);
	for (int k = 0; k < WATCH_CODE_PAIRS; k++)
		ck_assert_uint_eq(a.insns_pair[k], 66u + 11u * (unsigned)k);
	/* b is unchanged. */
	ck_assert_uint_eq(b.loads, 10);

	ck_assert_uint_eq(watch_counts_field(&a, WATCH_FIELD_LOADS), 11);
	ck_assert_uint_eq(watch_counts_field(&a, WATCH_FIELD_STORES), 22);
	ck_assert_uint_eq(watch_counts_field(&a, WATCH_FIELD_MISALIGNED_LOADS), 33);
	ck_assert_uint_eq(watch_counts_field(&a, WATCH_FIELD_MISALIGNED_STORES), 44);
	ck_assert_uint_eq(watch_counts_field(&a, WATCH_FIELD_INSNS), 55);
	for (int k = 0; k < WATCH_CODE_PAIRS; k++)
		ck_assert_uint_eq(watch_counts_field(&a, (enum watch_field)(WATCH_FIELD_INSNS_PAIR0 + k)), 66u + 11u * (unsigned)k);
}
END_TEST

START_TEST(stopped_session_reads_and_resets_its_totals)
{
	struct watch_session s;
	memset(&s, 0, sizeof s);
	s.acc.loads = 7;
	s.acc.stores = 3;
	s.acc.insns_pair[2] = 1000;
	s.acc.insns = 1ULL << 40; /* all 64 bits are carried */

	/* PAPI_read's path: only the fields asked, in the order asked, into
	 * 64-bit slots (PAPI's long long). */
	const unsigned char field[] = { WATCH_FIELD_STORES, WATCH_FIELD_INSNS_PAIR0 + 2, WATCH_FIELD_LOADS,
		                        WATCH_FIELD_INSNS, WATCH_FIELD_MISALIGNED_LOADS };
	long long out[6] = { -1, -1, -1, -1, -1, -1 };
	watch_session_read_fields(&s, field, 5, out);
	ck_assert_int_eq(out[0], 3);
	ck_assert_int_eq(out[1], 1000);
	ck_assert_int_eq(out[2], 7);
	ck_assert_int_eq(out[3], 1LL << 40);
	ck_assert_int_eq(out[4], 0);
	ck_assert_int_eq(out[5], -1); /* n = 5: nothing beyond */

	/* Stopping a stopped session does nothing (no backend to call). */
	watch_session_stop(&s);
	ck_assert_uint_eq(s.acc.loads, 7);
	watch_session_reset(&s);
	watch_session_read_fields(&s, field, 5, out);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(out[i], 0);
}
END_TEST

START_TEST(a_running_session_cannot_start_again)
{
	struct watch_session s;
	char why[WATCH_ERRLEN] = "";

	memset(&s, 0, sizeof s);
	s.running = 1;
	ck_assert_int_eq(watch_session_start(&s, WATCH_BACKEND_AUTO, why, sizeof why), -EBUSY);
	ck_assert_str_eq(why, "this watch session is already running");
	ck_assert_ptr_null(s.ops);
}
END_TEST

/* ---- what each backend accepts ------------------------------------------- */

static void fake_works(struct heritage_probe_result *r)
{
	r->state = HERITAGE_PROBE_WORKS;
	snprintf(r->evidence, sizeof r->evidence, "fake");
}

static void all_mechanisms_work(void)
{
	/* The kill switch outranks an override (test_probe); these cases are
	 * about the table, not about this machine or a killed pass. */
	env_unset("PAPI_HERITAGE_PROBE_DISABLE");
	heritage_probe_override(HERITAGE_MECH_BREAKPOINT, fake_works);
	heritage_probe_override(HERITAGE_MECH_SINGLE_STEP, fake_works);
	heritage_probe_override(HERITAGE_MECH_PAGETRAP, fake_works);
}

static uint64_t *page_buffer(void)
{
	/* Two pages of its own: nothing else of this program shares them. */
	void *p = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	return p;
}

static struct watch_request data_req(uintptr_t start, uintptr_t end)
{
	struct watch_request r;
	memset(&r, 0, sizeof r);
	r.want_data = 1;
	r.ndata = 1;
	r.data[0].start = start;
	r.data[0].end = end;
	return r;
}

static int choose(const struct watch_request *req, enum watch_backend forced, enum watch_backend *out, char *why)
{
	why[0] = '\0';
	return watch_choose_backend(req, forced, out, why, WATCH_ERRLEN);
}

#define ASSERT_WHY(why, text) ck_assert_msg(strstr(why, text) != NULL, "why: %s", why)

START_TEST(breakpoint_takes_one_aligned_word_of_data)
{
	uintptr_t buf = (uintptr_t)page_buffer();
	enum watch_backend b = WATCH_BACKEND_AUTO;
	char why[WATCH_ERRLEN];
	struct watch_request r;

	all_mechanisms_work();
	/* Debug registers match naturally aligned 1, 2, 4 or 8 bytes. */
	for (unsigned len = 1; len <= 8; len *= 2) {
		r = data_req(buf + 8, buf + 8 + len);
		ck_assert_int_eq(choose(&r, WATCH_BACKEND_BREAKPOINT, &b, why), 0);
		ck_assert_int_eq(b, WATCH_BACKEND_BREAKPOINT);
	}
	r = data_req(buf + 8, buf + 11); /* 3 bytes */
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_BREAKPOINT, &b, why), -ENOSPC);
	r = data_req(buf + 4, buf + 12); /* 8 bytes, 4-aligned */
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_BREAKPOINT, &b, why), -ENOSPC);
	r = data_req(buf, buf + 64);
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_BREAKPOINT, &b, why), -ENOSPC);

	r = data_req(buf, buf + 8);
	r.want_misaligned = 1;
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_BREAKPOINT, &b, why), -ENOTSUP);
	ASSERT_WHY(why, "misaligned");
	r = data_req(buf, buf + 8);
	r.data_by_code = 1;
	r.ncode = 1;
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_BREAKPOINT, &b, why), -ENOTSUP);
	r = data_req(0, 0);
	r.ndata = 0;
	r.data_all = 1;
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_BREAKPOINT, &b, why), -ENOTSUP);
	ASSERT_WHY(why, "set a data range");
	memset(&r, 0, sizeof r);
	r.want_code = 1;
	r.ncode = 1;
	r.code_pair[0].start = buf;
	r.code_pair[0].end = buf + 16;
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_BREAKPOINT, &b, why), -ENOTSUP);
	ASSERT_WHY(why, "instruction ranges");
	/* It cannot say which load reached an overflow threshold. */
	r = data_req(buf, buf + 8);
	r.overflow_fields = 1u << WATCH_FIELD_LOADS;
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_BREAKPOINT, &b, why), -ENOTSUP);
	ASSERT_WHY(why, "PAPI_overflow");
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_AUTO, &b, why), 0);
	ck_assert_int_eq(b, WATCH_BACKEND_PAGETRAP);
}
END_TEST

/* Every threshold counts one delivery, with the PC of the access that
 * reached it; a rep instruction passing several is one; the signal goes to
 * this thread (blocked here, so it is seen pending). */
START_TEST(overflow_comes_due_every_threshold_counts)
{
	struct watch_overflow o;
	sigset_t usr1, old, pending;
	uintptr_t pc = 0;

	memset(&o, 0, sizeof o);
	o.threshold[WATCH_FIELD_STORES] = 10;
	o.signal = SIGUSR1;
	watch_overflow_arm(&o);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, &old);
	for (int i = 0; i < 9; i++)
		watch_overflow_note(&o, WATCH_FIELD_STORES, 1, 0x1000 + (uintptr_t)i);
	watch_overflow_note(&o, WATCH_FIELD_LOADS, 100, 0x2000); /* not armed */
	ck_assert_uint_eq(watch_overflow_take(&o, &pc), 0);
	watch_overflow_note(&o, WATCH_FIELD_STORES, 1, 0x1009);
	sigpending(&pending);
	ck_assert_int_eq(sigismember(&pending, SIGUSR1), 1);
	ck_assert_uint_eq(watch_overflow_take(&o, &pc), 1u << WATCH_FIELD_STORES);
	ck_assert_uint_eq(pc, 0x1009);
	ck_assert_uint_eq(watch_overflow_take(&o, &pc), 0);
	/* 25 at once from 10 to go: due once, 5 left to the next. */
	watch_overflow_note(&o, WATCH_FIELD_STORES, 25, 0x3000);
	ck_assert_uint_eq(watch_overflow_take(&o, &pc), 1u << WATCH_FIELD_STORES);
	ck_assert_uint_eq(o.left[WATCH_FIELD_STORES], 5);
	watch_overflow_note(&o, WATCH_FIELD_STORES, 4, 0x3001);
	ck_assert_uint_eq(watch_overflow_take(&o, &pc), 0);
	watch_overflow_note(&o, WATCH_FIELD_STORES, 1, 0x3002);
	ck_assert_uint_eq(watch_overflow_take(&o, &pc), 1u << WATCH_FIELD_STORES);
	int sig;
	sigwait(&usr1, &sig);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}
END_TEST

START_TEST(pagetrap_takes_data_ranges_or_code_ranges)
{
	uintptr_t buf = (uintptr_t)page_buffer();
	enum watch_backend b = WATCH_BACKEND_AUTO;
	char why[WATCH_ERRLEN];
	struct watch_request r;

	all_mechanisms_work();
	r = data_req(buf + 1, buf + 4000); /* any bytes */
	r.want_misaligned = 1;
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_PAGETRAP, &b, why), 0);
	ck_assert_int_eq(b, WATCH_BACKEND_PAGETRAP);
	r.ndata = WATCH_MAX_INTERVALS;
	for (unsigned k = 1; k < WATCH_MAX_INTERVALS; k++)
		r.data[k] = r.data[0];
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_PAGETRAP, &b, why), 0);

	r = data_req(buf + 16, buf + 8); /* reversed */
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_PAGETRAP, &b, why), -EINVAL);
	ASSERT_WHY(why, "empty or reversed");
	r = data_req(buf, buf);
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_PAGETRAP, &b, why), -EINVAL);
	r = data_req(0, 0);
	r.ndata = 0;
	r.data_all = 1;
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_PAGETRAP, &b, why), -ENOTSUP);
	ASSERT_WHY(why, "needs the instrument backend");
	r = data_req(buf, buf + 8);
	r.want_data = 0;
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_PAGETRAP, &b, why), -EINVAL);
	ASSERT_WHY(why, "asks for no data accesses");

	/* Instructions: only with a code range, never together with data. */
	memset(&r, 0, sizeof r);
	r.want_code = 1;
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_PAGETRAP, &b, why), -ENOTSUP);
	ASSERT_WHY(why, "needs an instruction address range");
	r.ncode = 1;
	r.code_pair[0].start = buf;
	r.code_pair[0].end = buf + 16;
	r.want_data = 1;
	r.data_by_code = 1;
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_PAGETRAP, &b, why), -ENOTSUP);
	ASSERT_WHY(why, "cannot be counted in the same event set");
}
END_TEST

START_TEST(instrument_needs_an_instrumented_program)
{
	uintptr_t buf = (uintptr_t)page_buffer();
	enum watch_backend b = WATCH_BACKEND_AUTO;
	char why[WATCH_ERRLEN];
	struct watch_request r = data_req(buf, buf + 8);

	all_mechanisms_work();
	/* This test program is built without the instrument flags. */
	ck_assert_int_eq(watch_instrument_present(), 0);
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_INSTRUMENT, &b, why), -ENOTSUP);
	ASSERT_WHY(why, "not built with the instrument flags");
	memset(&r, 0, sizeof r);
	r.want_code = 1;
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_INSTRUMENT, &b, why), -ENOTSUP);
	ASSERT_WHY(why, "not executed instructions");
}
END_TEST

START_TEST(auto_takes_the_first_that_fits_or_lists_every_reason)
{
	uintptr_t buf = (uintptr_t)page_buffer();
	enum watch_backend b = WATCH_BACKEND_AUTO;
	char why[WATCH_ERRLEN];
	struct watch_request r;

	all_mechanisms_work();
	r = data_req(buf, buf + 8);
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_AUTO, &b, why), 0);
	ck_assert_int_eq(b, WATCH_BACKEND_BREAKPOINT);
	r = data_req(buf, buf + 64);
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_AUTO, &b, why), 0);
	ck_assert_int_eq(b, WATCH_BACKEND_PAGETRAP);
	r = data_req(buf, buf + 8);
	r.want_misaligned = 1;
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_AUTO, &b, why), 0);
	ck_assert_int_eq(b, WATCH_BACKEND_PAGETRAP);

	/* Itanium's IBR+DBR combination: nobody here. */
	r = data_req(buf, buf + 8);
	r.want_code = 1;
	r.data_by_code = 1;
	r.ncode = 1;
	r.code_pair[0].start = buf;
	r.code_pair[0].end = buf + 16;
	b = WATCH_BACKEND_COUNT;
	ck_assert_int_eq(choose(&r, WATCH_BACKEND_AUTO, &b, why), -ENOTSUP);
	ck_assert_int_eq(b, WATCH_BACKEND_COUNT);
	ASSERT_WHY(why, "no backend can count this: ");
	ASSERT_WHY(why, "instrument: ");
	ASSERT_WHY(why, "breakpoint: ");
	ASSERT_WHY(why, "pagetrap: ");
}
END_TEST

/* ---- counting ------------------------------------------------------------- */

/* 10 loads and 5 stores of the watched word v[0]; 3 loads and 2 stores of
 * v[1], the next word, which is not watched. */
static void __attribute__((noinline)) workload(volatile uint64_t *v)
{
	uint64_t sink = 0;
	for (int i = 0; i < 10; i++)
		sink += v[0];
	for (int i = 0; i < 5; i++)
		v[0] = (uint64_t)i;
	for (int i = 0; i < 3; i++)
		sink += v[1];
	v[1] = sink;
	v[1] = 0;
}

static int usable(enum watch_backend which)
{
	unsigned n;
	char why[WATCH_ERRLEN];
	const struct heritage_backend *t = watch_backend_table(&n);
	if (heritage_backend_usable(&t[which - 1], why, sizeof why) == 0)
		return 1;
	printf("skipped: %s backend: %s\n", t[which - 1].name, why);
	return 0;
}

static void count_one_word(enum watch_backend which)
{
	if (!usable(which))
		return;
	volatile uint64_t *v = page_buffer();
	struct watch_session s;
	char why[WATCH_ERRLEN] = "";
	const unsigned char field[] = { WATCH_FIELD_LOADS, WATCH_FIELD_STORES };
	uint64_t out[2];

	memset(&s, 0, sizeof s);
	s.req = data_req((uintptr_t)v, (uintptr_t)v + 8);
	ck_assert_msg(watch_session_start(&s, which, why, sizeof why) == 0, "start: %s", why);
	ck_assert_int_eq(s.backend, which);
	ck_assert_int_eq(s.running, 1);
	ck_assert_int_eq(watch_session_start(&s, which, why, sizeof why), -EBUSY);
	workload(v);
	watch_session_read_fields(&s, field, 2, out);
	ck_assert_uint_eq(out[0], 10);
	ck_assert_uint_eq(out[1], 5);
	watch_session_stop(&s);
	ck_assert_int_eq(s.running, 0);
	/* Stopped: the totals stay, and accesses no longer count. */
	workload(v);
	watch_session_read_fields(&s, field, 2, out);
	ck_assert_uint_eq(out[0], 10);
	ck_assert_uint_eq(out[1], 5);
	/* A second start..stop adds to the first. */
	ck_assert_msg(watch_session_start(&s, which, why, sizeof why) == 0, "restart: %s", why);
	workload(v);
	watch_session_read_fields(&s, field, 2, out);
	ck_assert_uint_eq(out[0], 20);
	ck_assert_uint_eq(out[1], 10);
	/* Reset while running: from zero again. */
	watch_session_reset(&s);
	watch_session_read_fields(&s, field, 2, out);
	ck_assert_uint_eq(out[0], 0);
	ck_assert_uint_eq(out[1], 0);
	workload(v);
	watch_session_stop(&s);
	watch_session_read_fields(&s, field, 2, out);
	ck_assert_uint_eq(out[0], 10);
	ck_assert_uint_eq(out[1], 5);
	/* The watched memory is plain memory again. */
	ck_assert_uint_eq(v[0], 4);
	munmap((void *)v, 2 * 4096);
}

START_TEST(breakpoint_session_counts_one_word)
{
	count_one_word(WATCH_BACKEND_BREAKPOINT);
}
END_TEST

START_TEST(pagetrap_session_counts_one_word)
{
	count_one_word(WATCH_BACKEND_PAGETRAP);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("watch");
	TCase *tc = tcase_create("table");
	tcase_add_test(tc, backend_names_round_trip);
	tcase_add_test(tc, table_is_in_auto_order_with_its_mechanisms);
	tcase_add_test(tc, counts_add_and_fields);
	tcase_add_test(tc, stopped_session_reads_and_resets_its_totals);
	tcase_add_test(tc, a_running_session_cannot_start_again);
	suite_add_tcase(s, tc);
	tc = tcase_create("fits");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, breakpoint_takes_one_aligned_word_of_data);
	tcase_add_test(tc, overflow_comes_due_every_threshold_counts);
	tcase_add_test(tc, pagetrap_takes_data_ranges_or_code_ranges);
	tcase_add_test(tc, instrument_needs_an_instrumented_program);
	tcase_add_test(tc, auto_takes_the_first_that_fits_or_lists_every_reason);
	suite_add_tcase(s, tc);
	tc = tcase_create("counting");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, breakpoint_session_counts_one_word);
	tcase_add_test(tc, pagetrap_session_counts_one_word);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
