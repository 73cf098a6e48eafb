/*
 * <papi_heritage.h> entry points that need PAPI's event-code tables: each
 * heritage component answers for its own events through a facts function;
 * this file routes a PAPI event code to it.  A component that is not compiled
 * in is simply absent from the table (weak references).
 */
#include <string.h>

#include "papi.h"
#include "papi_internal.h"
#include "papi_vector.h"

#include "heritage_glue.h"
#include "alpha/alpha_pmu.h"
#include "common/heritage_backend.h"
#include "common/heritage_env.h"
#include "common/heritage_probe.h"
#include "watch/watch.h"
#include "papi_heritage.h"

typedef int (*heritage_facts_fn)(unsigned local_code, struct papi_heritage_event_facts *facts);

int itanium2_event_facts(unsigned local_code, struct papi_heritage_event_facts *facts) __attribute__((weak));
int paragon_rpm_event_facts(unsigned local_code, struct papi_heritage_event_facts *facts) __attribute__((weak));
int alpha21064_event_facts(unsigned local_code, struct papi_heritage_event_facts *facts) __attribute__((weak));

static const struct {
	const char *component;
	heritage_facts_fn facts;
} heritage_components[] = {
	{ "itanium2", itanium2_event_facts },
	{ "paragon_rpm", paragon_rpm_event_facts },
	{ "alpha21064", alpha21064_event_facts },
	{ "imc", NULL },
	{ "profileme", NULL },
};

#define NCOMPONENTS (sizeof heritage_components / sizeof heritage_components[0])

HERITAGE_PUBLIC int papi_heritage_is_component(const char *name)
{
	for (size_t i = 0; i < NCOMPONENTS; i++)
		if (name && strcmp(name, heritage_components[i].component) == 0)
			return 1;
	return 0;
}

HERITAGE_PUBLIC int papi_heritage_event_facts(int event_code, struct papi_heritage_event_facts *facts)
{
	if (!facts || !IS_NATIVE(event_code))
		return PAPI_EINVAL;
	int cidx = _papi_hwi_component_index(event_code);
	if (cidx < 0 || cidx >= papi_num_components)
		return PAPI_ENOEVNT;
	const char *name = _papi_hwd[cidx]->cmp_info.name;
	for (size_t i = 0; i < NCOMPONENTS; i++) {
		if (strcmp(name, heritage_components[i].component) != 0)
			continue;
		if (!heritage_components[i].facts)
			return PAPI_ENOCMP;
		int local = _papi_hwi_eventcode_to_native(event_code);
		if (local < 0)
			return PAPI_ENOEVNT;
		return heritage_components[i].facts((unsigned)local, facts);
	}
	return PAPI_ENOCMP;
}

/* ------------------------------------------------------------ mechanisms */

HERITAGE_PUBLIC int papi_heritage_num_mechanisms(void)
{
	return HERITAGE_NMECHS;
}

HERITAGE_PUBLIC int papi_heritage_mechanism_index(const char *name)
{
	int m = heritage_mech_from_name(name);
	return m < 0 ? PAPI_ENOEVNT : m;
}

HERITAGE_PUBLIC const char *papi_heritage_probe_disable_unknown(void)
{
	return heritage_probe_disable_unknown();
}

HERITAGE_PUBLIC int papi_heritage_mechanism(int index, struct papi_heritage_mechanism *m)
{
	if (!m || index < 0 || index >= HERITAGE_NMECHS)
		return PAPI_EINVAL;
	const struct heritage_probe_result *r = heritage_probe((enum heritage_mech)index);
	memset(m, 0, sizeof *m);
	snprintf(m->name, sizeof m->name, "%s", heritage_mech_name((enum heritage_mech)index));
	snprintf(m->what, sizeof m->what, "%s", heritage_mech_what((enum heritage_mech)index));
	m->state = r->state == HERITAGE_PROBE_WORKS ? PAPI_HERITAGE_MECH_WORKS
	           : r->state == HERITAGE_PROBE_DEAD ? PAPI_HERITAGE_MECH_DEAD : PAPI_HERITAGE_MECH_ABSENT;
	m->refused = r->refused;
	m->disabled = r->disabled;
	m->error = heritage_papi_error(r->err);
	_Static_assert(sizeof m->evidence >= HERITAGE_PROBE_EVIDENCE, "evidence fits");
	_Static_assert(sizeof m->allowed_by >= HERITAGE_PROBE_ALLOWED, "allowed_by fits");
	memcpy(m->evidence, r->evidence, sizeof r->evidence);
	memcpy(m->allowed_by, r->allowed_by, sizeof r->allowed_by);
	heritage_mech_users((enum heritage_mech)index, m->used_by, sizeof m->used_by);
	m->probe_ns = r->ns;
	return PAPI_OK;
}

HERITAGE_PUBLIC int papi_heritage_backend_usable(const char *component, const char *backend, char *why, int len)
{
	const struct heritage_backend *table = NULL;
	unsigned n = 0;
	char reason[1024];

	if (!component || !backend)
		return PAPI_EINVAL;
	if (strcmp(component, "itanium2") == 0)
		table = watch_backend_table(&n);
	else if (strcmp(component, "alpha21064") == 0)
		table = alpha_backend_table(heritage_env("alpha21064", "pmu_test_event") != NULL, &n);
	int i = table ? heritage_backend_find(table, n, backend) : -1;
	if (i < 0) {
		if (why && len > 0)
			snprintf(why, (size_t)len, "%s has no backend called %s", component, backend);
		return PAPI_EINVAL;
	}
	int err = heritage_backend_usable(&table[i], reason, sizeof reason);
	if (why && len > 0)
		snprintf(why, (size_t)len, "%s", err ? reason : "");
	return heritage_papi_error(err);
}
