/*
 * The unit tests change PAPI_HERITAGE_* knobs between cases.  heritage_env
 * answers from the copy it took (read once, heritage_env.h), so each change
 * takes the copy again, as PAPI_library_init does for a program.
 */
#ifndef ENV_TEST_H
#define ENV_TEST_H

#include <stdlib.h>

#include "common/heritage_env.h"

static inline int env_set(const char *name, const char *value, int overwrite)
{
	int r = setenv(name, value, overwrite);
	heritage_env_load();
	return r;
}

static inline int env_unset(const char *name)
{
	int r = unsetenv(name);
	heritage_env_load();
	return r;
}

#endif
