/*
 * papi_heritage_avail --mechanisms: each mechanism the components rely on,
 * as probed for this account, as text or JSON.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "avail.h"

/* ------------------------------------------------------------ mechanisms */

static const char *mechanism_state(const struct papi_heritage_mechanism *m)
{
	switch (m->state) {
	case PAPI_HERITAGE_MECH_WORKS: return "works";
	case PAPI_HERITAGE_MECH_DEAD: return "dead";
	case PAPI_HERITAGE_MECH_ABSENT: return m->refused ? "refused" : "absent";
	default: return "unknown";
	}
}

int mechanisms_json(void)
{
	json_object *all = json_object_new_array();
	if (!all)
		return STATUS_PAPI_FAILURE;
	for (int i = 0; i < papi_heritage_num_mechanisms(); i++) {
		struct papi_heritage_mechanism m;
		if (papi_heritage_mechanism(i, &m) != PAPI_OK)
			continue;
		json_object *o = json_object_new_object(), *users = json_object_new_array();
		json_object_object_add(o, "name", json_object_new_string(m.name));
		json_object_object_add(o, "description", json_object_new_string(m.what));
		json_object_object_add(o, "state", json_object_new_string(m.state == PAPI_HERITAGE_MECH_WORKS ? "works"
		                                                          : m.state == PAPI_HERITAGE_MECH_DEAD ? "dead" : "absent"));
		json_object_object_add(o, "refused", json_object_new_boolean(m.refused));
		json_object_object_add(o, "disabled", json_object_new_boolean(m.disabled));
		json_object_object_add(o, "evidence", json_object_new_string(m.evidence));
		if (m.refused)
			json_object_object_add(o, "allowed_by", json_object_new_string(m.allowed_by));
		for (char *save = NULL, *u = strtok_r(m.used_by, ";", &save); u; u = strtok_r(NULL, ";", &save))
			json_object_array_add(users, json_object_new_string(u + strspn(u, " ")));
		json_object_object_add(o, "used_by", users);
		json_object_object_add(o, "probe_us", json_object_new_double((double)m.probe_ns / 1e3));
		json_object_array_add(all, o);
	}
	printf("%s\n", json_object_to_json_string_ext(all, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
	                                                        JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(all);
	return STATUS_MATCHES;
}

int mechanisms_text(void)
{
	unsigned long long ns = 0;

	printf("Mechanisms the papi-heritage components rely on, as probed for this account (uid %u):\n"
	       "works: it counted a known workload exactly; dead: it was accepted and counted wrong;\n"
	       "absent: it is not here; refused: this account may not use it (and what would allow it).\n",
	       (unsigned)geteuid());
	printf("--------------------------------------------------------------------------------\n");
	for (int i = 0; i < papi_heritage_num_mechanisms(); i++) {
		struct papi_heritage_mechanism m;
		if (papi_heritage_mechanism(i, &m) != PAPI_OK)
			continue;
		ns += m.probe_ns;
		printf("%-13s| %-8s| %s\n", m.name, mechanism_state(&m), m.evidence);
		if (m.refused)
			printf("%-13s|         | allowed by: %s\n", "", m.allowed_by);
		printf("%-13s|         | used by: %s\n", "", m.used_by[0] ? m.used_by : "(nothing yet)");
	}
	printf("--------------------------------------------------------------------------------\n");
	printf("Probing took %.1f ms.", (double)ns / 1e6);
	const char *unknown = papi_heritage_probe_disable_unknown();
	if (getenv("PAPI_HERITAGE_PROBE_DISABLE"))
		printf("  PAPI_HERITAGE_PROBE_DISABLE=%s (a testing aid) made some absent on purpose.",
		       getenv("PAPI_HERITAGE_PROBE_DISABLE"));
	printf("\n");
	if (unknown[0]) {
		fprintf(stderr, "%s: PAPI_HERITAGE_PROBE_DISABLE names no such mechanism: %s\n", PROGRAM_NAME, unknown);
		return STATUS_USAGE;
	}
	return STATUS_MATCHES;
}
