/*
 * Assertions shared by every ctest, with or without PAPI (the legacy
 * <i860paragon/rpm.h> tests do not link it): failures are counted, and
 * heritage_test_done() turns them into the exit status.
 */
#ifndef HERITAGE_TEST_EXPECT_H
#define HERITAGE_TEST_EXPECT_H

#include <stdio.h>
#include <stdlib.h>

static int heritage_test_failures;

#define EXPECT(cond, ...)                                                                         \
	do {                                                                                      \
		if (!(cond)) {                                                                    \
			fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);                 \
			fprintf(stderr, __VA_ARGS__);                                             \
			fprintf(stderr, "\n");                                                    \
			heritage_test_failures++;                                                 \
		}                                                                                 \
	} while (0)

#define EXPECT_EQ(what, got, want)                                                               \
	do {                                                                                     \
		long long g_ = (long long)(got), w_ = (long long)(want);                         \
		if (g_ != w_) {                                                                  \
			fprintf(stderr, "%s:%d: %s: got %lld, want %lld\n", __FILE__, __LINE__,  \
			        what, g_, w_);                                                   \
			heritage_test_failures++;                                                \
		}                                                                                \
	} while (0)

#define SKIP(...)                                                                                  \
	do {                                                                                       \
		printf("SKIPPED: " __VA_ARGS__);                                                   \
		printf("\n");                                                                      \
		exit(77);                                                                          \
	} while (0)

static inline int heritage_test_done(const char *name)
{
	if (heritage_test_failures) {
		printf("%s: FAILED (%d checks)\n", name, heritage_test_failures);
		return 1;
	}
	printf("%s: PASSED\n", name);
	return 0;
}

#endif
