/*
 * Unit tests in a sanitized build (make check-sanitize, make check-tsan:
 * configure --enable-sanitize defines HERITAGE_SANITIZE).  A test that
 * counts the process's own stores, instructions, page faults or CPU-time
 * samples cannot pass there: the sanitizer's checks are stores,
 * instructions and page faults of the process too, measured in the runs
 * each call below cites.  Such a test is added with
 * tcase_add_test_unsanitized(): under a sanitizer it is left out, and its
 * name and the reason are printed in the test's log; everywhere else it is
 * tcase_add_test().
 */
#ifndef HERITAGE_SANITIZE_TEST_H
#define HERITAGE_SANITIZE_TEST_H

#include <check.h>
#include <stdio.h>

#ifdef HERITAGE_SANITIZE
#define tcase_add_test_unsanitized(tc, fn, why) \
	((void)(tc), (void)(fn), fprintf(stderr, "%s: not run under a sanitizer: %s\n", #fn, (why)))
#else
#define tcase_add_test_unsanitized(tc, fn, why) tcase_add_test(tc, fn)
#endif

#endif
