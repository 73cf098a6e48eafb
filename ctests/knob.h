/*
 * Sets (value) or unsets (NULL) a PAPI_HERITAGE_* knob from a ctest.  The
 * components read the knobs once, at PAPI_library_init; in the middle of a
 * run the test says it means the change, as papi-heritage(7) tells a
 * program to, and a refusal there ends the test with the reason.
 */
#ifndef CTESTS_KNOB_H
#define CTESTS_KNOB_H

#include <stdio.h>
#include <stdlib.h>

#include "papi.h"
#include "papi_heritage.h"

static inline void knob_set(const char *name, const char *value)
{
	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
	if (PAPI_is_initialized() == PAPI_NOT_INITED)
		return;
	int rc = papi_heritage_env_reread();
	if (rc != PAPI_OK) {
		fprintf(stderr, "papi_heritage_env_reread after %s=%s: %s (%s)\n", name, value ? value : "(unset)",
		        PAPI_strerror(rc), papi_heritage_last_error());
		exit(1);
	}
}

#endif
