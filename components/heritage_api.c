/*
 * <papi_heritage.h> entry points that need PAPI's event-code tables: each
 * heritage component answers for its own events through a facts function;
 * this file routes a PAPI event code to it through the component table.
 */
#include <string.h>

#include "papi.h"
#include "papi_internal.h"
#include "papi_vector.h"

#include "heritage_glue.h"
#include "alpha/alpha_set.h"
#include "common/heritage_backend.h"
#include "common/heritage_env.h"
#include "common/heritage_facility.h"
#include "common/heritage_probe.h"
#include "profileme/pm_collect.h"
#include "watch/watch.h"
#include "papi_heritage.h"

/* Each component's facts function (components/<name>/<name>.c). */
int itanium2_event_facts(unsigned local_code, struct papi_heritage_event_facts *facts);
int paragon_rpm_event_facts(unsigned local_code, struct papi_heritage_event_facts *facts);
int alpha21064_event_facts(unsigned local_code, struct papi_heritage_event_facts *facts);
int imc_event_facts(unsigned local_code, struct papi_heritage_event_facts *facts);
int profileme_event_facts(unsigned local_code, struct papi_heritage_event_facts *facts);

/* Every component is always built (HERITAGE_COMPONENTS in Makefile.am), so
 * the references are strong: a component missing from libpapi is a link
 * error, not a silently empty row. */
static const struct heritage_facility heritage_components[] = {
	{ .name = "itanium2", .facts = itanium2_event_facts, .backends = watch_backend_table },
	{ .name = "paragon_rpm", .facts = paragon_rpm_event_facts },
	{ .name = "alpha21064", .facts = alpha21064_event_facts, .backends = alpha_set_backends },
	{ .name = "imc", .facts = imc_event_facts },
	{ .name = "profileme", .facts = profileme_event_facts, .backends = pm_backends },
};

#define NCOMPONENTS (sizeof heritage_components / sizeof heritage_components[0])

static const struct heritage_facility *facility(const char *name)
{
	for (size_t i = 0; name && i < NCOMPONENTS; i++)
		if (strcmp(name, heritage_components[i].name) == 0)
			return &heritage_components[i];
	return NULL;
}

HERITAGE_PUBLIC int papi_heritage_is_component(const char *name)
{
	return facility(name) != NULL;
}

HERITAGE_PUBLIC int papi_heritage_event_facts(int event_code, struct papi_heritage_event_facts *facts)
{
	if (!facts || !IS_NATIVE(event_code))
		return PAPI_EINVAL;
	int cidx = _papi_hwi_component_index(event_code);
	if (cidx < 0 || cidx >= papi_num_components)
		return PAPI_ENOEVNT;
	const struct heritage_facility *f = facility(_papi_hwd[cidx]->cmp_info.name);
	if (!f || !f->facts)
		return PAPI_ENOCMP;
	int local = _papi_hwi_eventcode_to_native(event_code);
	if (local < 0)
		return PAPI_ENOEVNT;
	return f->facts((unsigned)local, facts);
}

/* ------------------------------------------------------------ mechanisms */

HERITAGE_PUBLIC int papi_heritage_env_reread(void)
{
	return heritage_papi_fail(heritage_env_reload());
}

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
	const struct heritage_facility *f = facility(component);
	if (f && f->backends)
		table = f->backends(&n);
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
