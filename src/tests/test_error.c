/*
 * Unit tests of src/common/heritage_error.c: the one message per thread that
 * says what libheritage last refused (papi_heritage_last_error(3) in
 * <papi_heritage.h>).
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/heritage_error.h"
#include "papi_heritage.h"

START_TEST(fail_returns_the_code_and_keeps_the_message)
{
	heritage_clear_error();
	ck_assert_str_eq(heritage_last_error(), "");
	ck_assert_int_eq(heritage_fail(-EINVAL, "itanium2: %s %d %#x", "bad", 42, 255u), -EINVAL);
	ck_assert_str_eq(heritage_last_error(), "itanium2: bad 42 0xff");
	/* papi_heritage_last_error() is the public name of the same message. */
	ck_assert_str_eq(papi_heritage_last_error(), "itanium2: bad 42 0xff");
	ck_assert_int_eq(heritage_fail(-ENOTSUP, "second"), -ENOTSUP);
	ck_assert_str_eq(heritage_last_error(), "second");
	heritage_clear_error();
	ck_assert_str_eq(heritage_last_error(), "");
	ck_assert_str_eq(papi_heritage_last_error(), "");
}
END_TEST

START_TEST(fail_msg_copies_verbatim)
{
	/* A message already formatted (the backends' why buffers): a % in it
	 * is text, not a conversion. */
	ck_assert_int_eq(heritage_fail_msg(-EPERM, "100% refused: %s %n"), -EPERM);
	ck_assert_str_eq(heritage_last_error(), "100% refused: %s %n");
	ck_assert_int_eq(heritage_fail_msg(0, ""), 0);
	ck_assert_str_eq(heritage_last_error(), "");
}
END_TEST

/* The buffer is 1024 bytes: longer messages are cut to 1023 characters,
 * never overrun. */
START_TEST(long_messages_are_truncated)
{
	static char big[3000];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	heritage_fail(-E2BIG, "%s", big);
	ck_assert_uint_eq(strlen(heritage_last_error()), 1023);
	heritage_fail_msg(-E2BIG, big);
	ck_assert_uint_eq(strlen(heritage_last_error()), 1023);
	ck_assert_int_eq(heritage_last_error()[0], 'x');
}
END_TEST

static void *other_thread(void *arg)
{
	char *seen = arg;
	/* A new thread starts with no message, whatever the creator had. */
	snprintf(seen, 64, "%s", heritage_last_error());
	heritage_fail(-EBUSY, "from the other thread");
	return NULL;
}

START_TEST(each_thread_has_its_own_message)
{
	char seen[64] = "unset";
	pthread_t t;

	heritage_fail(-EINVAL, "from main");
	ck_assert_int_eq(pthread_create(&t, NULL, other_thread, seen), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_str_eq(seen, "");
	ck_assert_str_eq(heritage_last_error(), "from main");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("error");
	TCase *tc = tcase_create("heritage_error");
	tcase_add_test(tc, fail_returns_the_code_and_keeps_the_message);
	tcase_add_test(tc, fail_msg_copies_verbatim);
	tcase_add_test(tc, long_messages_are_truncated);
	tcase_add_test(tc, each_thread_has_its_own_message);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
