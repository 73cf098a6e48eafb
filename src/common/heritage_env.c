#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"

/* "PAPI_HERITAGE_<COMPONENT>_<KNOB>" in name[128]; 0, or -1 if too long. */
static int env_name(const char *component, const char *knob, char name[128])
{
	int n = snprintf(name, 128, "PAPI_HERITAGE_%s_%s", component, knob);
	if (n < 0 || n >= 128)
		return -1;
	for (char *p = name; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	return 0;
}

const char *heritage_env(const char *component, const char *knob)
{
	char name[128];
	if (env_name(component, knob, name) != 0)
		return NULL;
	/* Not in a setuid or setgid program (AT_SECURE): its caller's
	 * environment must not choose its backends, files or periods. */
	const char *v = secure_getenv(name);
	return (v && *v) ? v : NULL;
}

int heritage_env_flag(const char *component, const char *knob, int *on)
{
	const char *v = heritage_env(component, knob);
	*on = 0;
	if (!v || strcmp(v, "0") == 0)
		return 0;
	if (strcmp(v, "1") == 0) {
		*on = 1;
		return 0;
	}
	char name[128];
	env_name(component, knob, name); /* heritage_env found it: it fits */
	return heritage_fail(-EINVAL, "%s=%.64s: give 0 or 1", name, v);
}
