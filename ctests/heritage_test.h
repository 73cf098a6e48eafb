/*
 * Tiny harness for the ctests: they talk to libpapi through the public API
 * only, and exit 0 (pass), 1 (fail) or 77 (skip, with the reason printed).
 */
#ifndef HERITAGE_TEST_H
#define HERITAGE_TEST_H

#include <stdio.h>
#include <stdlib.h>

#include <papi.h>
#include "papi_heritage.h"

static int heritage_test_failures;

#define CHECK_PAPI(call)                                                                           \
	do {                                                                                       \
		int rc_ = (call);                                                                  \
		if (rc_ != PAPI_OK) {                                                              \
			fprintf(stderr, "%s:%d: %s = %d (%s) %s\n", __FILE__, __LINE__, #call, rc_, \
			        PAPI_strerror(rc_), papi_heritage_last_error());                   \
			exit(1);                                                                   \
		}                                                                                  \
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

static inline void heritage_test_init(void)
{
	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	if (rc != PAPI_VER_CURRENT) {
		fprintf(stderr, "PAPI_library_init: %d (%s)\n", rc, PAPI_strerror(rc));
		exit(1);
	}
	if (PAPI_get_component_index("itanium2") < 0) {
		fprintf(stderr, "the itanium2 component is not compiled into this libpapi\n");
		exit(1);
	}
}

#endif
