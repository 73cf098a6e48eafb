/*
 * The heritage components as one table (doc/architecture.md, "one facility
 * layer"): what <papi_heritage.h>'s entry points need to know of each.  The
 * table itself is components/heritage_api.c's, compiled inside PAPI with
 * the components, one line per component naming its strong symbols.  Adding a
 * component is its const event table, its logic in src/<facility>/, a thin
 * adapter in components/<name>/, that line, and the Rules file PAPI needs.
 */
#ifndef HERITAGE_FACILITY_H
#define HERITAGE_FACILITY_H

struct heritage_backend;
struct papi_heritage_event_facts;

struct heritage_facility {
	const char *name; /* the PAPI component name */
	/* papi_heritage_event_facts for a component-local event code; NULL: a
	 * heritage name with no component built yet (PAPI_ENOCMP). */
	int (*facts)(unsigned local_code, struct papi_heritage_event_facts *facts);
	/* The backends it chooses among (heritage_backend.h), in auto's order;
	 * NULL: one way of counting, nothing to choose. */
	const struct heritage_backend *(*backends)(unsigned *n);
};

#endif
