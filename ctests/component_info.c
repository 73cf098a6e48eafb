/*
 * component_info: what PAPI_get_component_info says of each heritage
 * component is what its man page documents (the first rows of issue 20's
 * conformance table):
 *   - every one is compiled in and named as papi_heritage_is_component() knows it;
 *   - cntr_umasks is set, since every one's events take qualifiers
 *     (itanium2(3) :exact=, paragon_rpm(3) :cpu=N, alpha21064(3) :width=,
 *     imc(3) :cpu=N),
 *     and PAPI_enum_cmp_event with PAPI_NTV_ENUM_UMASKS offers at least one
 *     qualified name for one of its events;
 *   - a disabled component says why (disabled_reason), an enabled one has
 *     events.
 */
#include <string.h>

#include "heritage_test.h"

static const struct {
	const char *name;
	const char *qualified_prefix; /* an event that takes a qualifier */
} components[] = {
	{ "itanium2", "itanium2:::LOADS_RETIRED" },
	{ "paragon_rpm", "paragon_rpm:::rpms_idle" },
	{ "alpha21064", "alpha21064:::" },
	{ "imc", "imc:::core_imc::" },
};

/* Whether enumeration offers a name with a qualifier ("...:q=v") among the
 * qualifiers of events whose name starts with prefix. */
static int offers_qualifier(int cidx, const char *prefix)
{
	int code = 0 | PAPI_NATIVE_MASK;
	if (PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST, cidx) != PAPI_OK)
		return 0;
	do {
		char name[PAPI_MAX_STR_LEN];
		if (PAPI_event_code_to_name(code, name) != PAPI_OK || strncmp(name, prefix, strlen(prefix)) != 0)
			continue;
		int q = code;
		if (PAPI_enum_cmp_event(&q, PAPI_NTV_ENUM_UMASKS, cidx) != PAPI_OK ||
		    PAPI_event_code_to_name(q, name) != PAPI_OK)
			continue;
		const char *event = strstr(name, ":::");
		if (event && strchr(event + 3, ':'))
			return 1;
	} while (PAPI_enum_cmp_event(&code, PAPI_ENUM_EVENTS, cidx) == PAPI_OK);
	return 0;
}

int main(void)
{
	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	if (rc != PAPI_VER_CURRENT) {
		fprintf(stderr, "PAPI_library_init: %d (%s)\n", rc, PAPI_strerror(rc));
		return 1;
	}
	for (size_t i = 0; i < sizeof components / sizeof components[0]; i++) {
		const char *name = components[i].name;
		int cidx = PAPI_get_component_index(name);
		EXPECT(cidx >= 0, "%s is not compiled into this libpapi", name);
		if (cidx < 0)
			continue;
		EXPECT(papi_heritage_is_component(name), "papi_heritage_is_component(%s) says no", name);
		const PAPI_component_info_t *info = PAPI_get_component_info(cidx);
		EXPECT(info != NULL, "no component info for %s", name);
		if (!info)
			continue;
		EXPECT(info->cntr_umasks == 1, "%s: cntr_umasks is %u, but its events take qualifiers", name,
		       info->cntr_umasks);
		if (info->disabled) {
			EXPECT(info->disabled_reason[0] != '\0', "%s is disabled (%d) without a reason", name,
			       info->disabled);
			printf("%s: disabled here: %s\n", name, info->disabled_reason);
			continue;
		}
		EXPECT(info->num_native_events > 0, "%s: enabled with no native events", name);
		EXPECT(offers_qualifier(cidx, components[i].qualified_prefix),
		       "%s: PAPI_NTV_ENUM_UMASKS offers no qualified name for %s...", name,
		       components[i].qualified_prefix);
	}
	return heritage_test_done("component_info");
}
