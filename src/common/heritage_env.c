#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/heritage_env.h"

const char *heritage_env(const char *component, const char *knob)
{
	char name[128];
	int n = snprintf(name, sizeof name, "PAPI_HERITAGE_%s_%s", component, knob);

	if (n < 0 || (size_t)n >= sizeof name)
		return NULL;
	for (char *p = name; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	/* Not in a setuid or setgid program (AT_SECURE): its caller's
	 * environment must not choose its backends, files or periods. */
	const char *v = secure_getenv(name);
	return (v && *v) ? v : NULL;
}
