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
#include "test_expect.h"

#define CHECK_PAPI(call)                                                                           \
	do {                                                                                       \
		int rc_ = (call);                                                                  \
		if (rc_ != PAPI_OK) {                                                              \
			fprintf(stderr, "%s:%d: %s = %d (%s) %s\n", __FILE__, __LINE__, #call, rc_, \
			        PAPI_strerror(rc_), papi_heritage_last_error());                   \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

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
