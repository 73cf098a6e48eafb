/*
 * Unit tests of src/paragon/rpm_clock.c, the clock behind rpm_time and
 * dclock() (test_paragon checks the TSC arithmetic on a simulated TSC; this
 * is the real one).  paragon_rpm(3) asks rpm_time to be within 100 us of
 * CLOCK_BOOTTIME and never backwards: 1000 ticks of 100 ns either side of
 * the CLOCK_BOOTTIME reads around it, over 300 ms with the anchor renewed
 * many times, in two threads at once, for the TSC source and for
 * PAPI_HERITAGE_PARAGON_RPM_CLOCK=vdso (then the same clock: no slack).
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "paragon/rpm_clock.h"
#include "env_test.h"

#define SLACK_TICKS 1000 /* 100 us */

struct run {
	uint64_t slack;
	int bad_low, bad_high, backwards, samples;
	uint64_t worst;
};

static void *sample(void *arg)
{
	struct run *r = arg;
	uint64_t prev = 0, start = rpm_clock_boottime_ns();
	struct timespec pause = { 0, 100000 };

	while (rpm_clock_boottime_ns() - start < 300000000) {
		for (int i = 0; i < 100; i++) {
			uint64_t b0 = rpm_clock_boottime_ns();
			uint64_t t = rpm_now_ticks();
			uint64_t b1 = rpm_clock_boottime_ns();
			r->samples++;
			r->bad_low += t + r->slack < b0 / 100;
			r->bad_high += t > b1 / 100 + r->slack;
			r->backwards += t < prev;
			uint64_t off = t < b0 / 100 ? b0 / 100 - t : t > b1 / 100 ? t - b1 / 100 : 0;
			if (off > r->worst)
				r->worst = off;
			prev = t;
		}
		nanosleep(&pause, NULL); /* let anchors fall due */
	}
	return NULL;
}

static void check_clock(uint64_t slack)
{
	struct run a = { .slack = slack }, b = { .slack = slack };
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, sample, &b), 0);
	sample(&a);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	printf("%s: %d + %d samples, worst %llu ticks off CLOCK_BOOTTIME\n", rpm_clock_source(), a.samples, b.samples,
	       (unsigned long long)(a.worst > b.worst ? a.worst : b.worst));
	ck_assert_int_gt(a.samples, 1000);
	ck_assert_int_eq(a.backwards + b.backwards, 0);
	ck_assert_int_eq(a.bad_low + b.bad_low, 0);
	ck_assert_int_eq(a.bad_high + b.bad_high, 0);
	/* 56 bits. */
	ck_assert_uint_lt(rpm_now_ticks(), 1ULL << 56);
}

START_TEST(default_source_stays_within_100us)
{
	env_unset("PAPI_HERITAGE_PARAGON_RPM_CLOCK");
	const char *src = rpm_clock_source();
	ck_assert_msg(strcmp(src, "tsc") == 0 || strcmp(src, "vdso") == 0, "source %s", src);
	check_clock(SLACK_TICKS);
}
END_TEST

START_TEST(vdso_source_is_boottime_itself)
{
	env_set("PAPI_HERITAGE_PARAGON_RPM_CLOCK", "vdso", 1);
	ck_assert_str_eq(rpm_clock_source(), "vdso");
	check_clock(0);
	env_unset("PAPI_HERITAGE_PARAGON_RPM_CLOCK");
}
END_TEST

START_TEST(boottime_ns_is_clock_boottime)
{
	struct timespec ts;
	uint64_t a = rpm_clock_boottime_ns();
	clock_gettime(CLOCK_BOOTTIME, &ts);
	uint64_t b = rpm_clock_boottime_ns();
	uint64_t mid = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	ck_assert_uint_le(a, mid);
	ck_assert_uint_le(mid, b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rpm_clock");
	TCase *tc = tcase_create("clock");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, boottime_ns_is_clock_boottime);
	tcase_add_test(tc, default_source_stays_within_100us);
	tcase_add_test(tc, vdso_source_is_boottime_itself);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_FORK); /* the source is chosen once per process */
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
