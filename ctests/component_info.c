/*
 * component_info: what PAPI_get_component_info says of each heritage
 * component is what its man page documents (the first rows of issue 20's
 * conformance table):
 *   - every one is compiled in and named as papi_heritage_is_component() knows it;
 *   - cntr_umasks is set, since every one's events take qualifiers
 *     (itanium2(3) :exact=, paragon_rpm(3) :cpu=N, alpha21064(3) :width=,
 *     imc(3) :cpu=N),
 *     and PAPI_enum_cmp_event with PAPI_NTV_ENUM_UMASKS offers at least one
 *     qualified name for one of its events; profileme's events take none
 *     (profileme(3): a sample set's ':' introduces a counter), so it says
 *     cntr_umasks 0 and offers none;
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
	{ "profileme", NULL },
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
		const char *qualified = components[i].qualified_prefix;
		EXPECT(info->cntr_umasks == (qualified != NULL), "%s: cntr_umasks is %u, but its events take %s", name,
		       info->cntr_umasks, qualified ? "qualifiers" : "none");
		if (info->disabled) {
			EXPECT(info->disabled_reason[0] != '\0', "%s is disabled (%d) without a reason", name,
			       info->disabled);
			printf("%s: disabled here: %s\n", name, info->disabled_reason);
			continue;
		}
		EXPECT(info->num_native_events > 0, "%s: enabled with no native events", name);
		if (qualified)
			EXPECT(offers_qualifier(cidx, qualified), "%s: PAPI_NTV_ENUM_UMASKS offers no qualified name for %s...",
			       name, qualified);
		else
			EXPECT(!offers_qualifier(cidx, name), "%s: PAPI_NTV_ENUM_UMASKS offers a qualifier", name);
	}
	return heritage_test_done("component_info");
}
