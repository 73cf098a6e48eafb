/*
 * papi_heritage_avail: the selected components and their events, in PAPI's
 * enumeration order, with what the enumeration modifiers say of each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avail.h"

/* -------------------------------------------------------------- components */

/* Marks the components --component names; an unknown name is a usage error
 * (an empty list would look like "no such events" instead). */
int select_components(const struct selection *sel, unsigned char *selected, int n_components)
{
	if (sel->n_components == 0) {
		memset(selected, 1, (size_t)n_components);
		return 0;
	}
	for (size_t i = 0; i < sel->n_components; i++) {
		int found = -1;
		for (int cid = 0; cid < n_components && found < 0; cid++) {
			const PAPI_component_info_t *info = PAPI_get_component_info(cid);
			if (info && strcmp(info->name, sel->components[i]) == 0)
				found = cid;
		}
		if (found < 0) {
			char known[1024] = "";
			for (int cid = 0; cid < n_components; cid++) {
				const PAPI_component_info_t *info = PAPI_get_component_info(cid);
				size_t used = strlen(known);
				if (info && used < sizeof known)
					snprintf(known + used, sizeof known - used, "%s%s", used ? " " : "", info->name);
			}
			return usage_error("option --component: unknown component '%s' (compiled in: %s)",
			                   sel->components[i], known);
		}
		const PAPI_component_info_t *info = PAPI_get_component_info(found);
		if (info->disabled && info->disabled != PAPI_EDELAY_INIT && !selected[found])
			fprintf(stderr, "%s: note: component %s is disabled: %s\n", PROGRAM_NAME, info->name,
			        info->disabled_reason);
		selected[found] = 1;
	}
	return 0;
}

int component_is_enumerable(const PAPI_component_info_t *info)
{
	/* papi_native_avail's rule: skip disabled components, but a delayed
	 * initialisation happens on first use. */
	return info && (!info->disabled || info->disabled == PAPI_EDELAY_INIT);
}

/* ------------------------------------------------------------- event lists */

/* Names already enumerated: a component that steps back to an event it has
 * given would otherwise be listed forever.  Names, not codes: PAPI gives a
 * new code each time it meets an event of a component that does not name
 * its events to PAPI while enumerating (itanium2 is one), so one event can
 * have several codes.  Open addressing over borrowed strings. */
struct name_set {
	const char **slots;
	size_t capacity; /* a power of two, or 0 */
	size_t used;
};

static size_t name_hash(const char *name)
{
	size_t hash = 14695981039346656037u; /* FNV-1a */
	for (; *name; name++)
		hash = (hash ^ (unsigned char)*name) * 1099511628211u;
	return hash;
}

static size_t name_slot(const struct name_set *set, const char *name)
{
	size_t i = name_hash(name) & (set->capacity - 1);
	while (set->slots[i] && strcmp(set->slots[i], name) != 0)
		i = (i + 1) & (set->capacity - 1);
	return i;
}

/* 1 if added, 0 if already there, -1 if out of memory. */
static int name_set_insert(struct name_set *set, const char *name)
{
	if ((set->used + 1) * 2 > set->capacity) {
		size_t capacity = set->capacity ? set->capacity * 2 : 256;
		struct name_set grown = { calloc(capacity, sizeof(const char *)), capacity, 0 };
		if (!grown.slots)
			return -1;
		for (size_t i = 0; i < set->capacity; i++)
			if (set->slots[i]) {
				grown.slots[name_slot(&grown, set->slots[i])] = set->slots[i];
				grown.used++;
			}
		free(set->slots);
		*set = grown;
	}
	size_t i = name_slot(set, name);
	if (set->slots[i])
		return 0;
	set->slots[i] = name;
	set->used++;
	return 1;
}

/* The event's name, or NULL if PAPI cannot describe it. */
static char *event_symbol(int code)
{
	PAPI_event_info_t info;

	memset(&info, 0, sizeof info);
	if (PAPI_get_event_info(code, &info) != PAPI_OK)
		return NULL;
	info.symbol[sizeof info.symbol - 1] = '\0';
	return strdup(info.symbol);
}

static int is_event_named(int code, const char *symbol)
{
	char *found = symbol ? event_symbol(code) : NULL;
	int same = found && strcmp(found, symbol) == 0;
	free(found);
	return same;
}

static int append_event(struct component_listing *l, int code, char *symbol)
{
	if (l->count == l->capacity) {
		size_t capacity = l->capacity ? l->capacity * 2 : 64;
		struct native_event *events = realloc(l->events, capacity * sizeof *events);
		if (!events)
			return -1;
		l->events = events;
		l->capacity = capacity;
	}
	memset(&l->events[l->count], 0, sizeof l->events[l->count]);
	l->events[l->count].code = code;
	l->events[l->count].symbol = symbol;
	l->events[l->count].is_first = l->count == 0;
	l->count++;
	return 0;
}

/* The component's base events in PAPI's order: PAPI_ENUM_FIRST, then
 * PAPI_ENUM_EVENTS until it fails.  The order matters to
 * classify_by_enumeration().  Returns -1 only when out of memory. */
static int enumerate_component(struct component_listing *l)
{
	struct name_set seen = { NULL, 0, 0 };
	int code = PAPI_NATIVE_MASK;
	int status = PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST, l->cid);
	int result = 0;

	while (status == PAPI_OK && IS_NATIVE(code) && l->count < MAX_EVENTS_PER_COMPONENT) {
		/* An event PAPI cannot describe keeps its place in the order (the
		 * next one's capabilities are read from the step after it) but is
		 * never listed, as in papi_native_avail. */
		char *symbol = event_symbol(code);
		int fresh = symbol ? name_set_insert(&seen, symbol) : 1;
		if (fresh <= 0 || append_event(l, code, symbol) != 0) {
			free(symbol);
			result = fresh == 0 ? 0 : -1;
			break;
		}
		status = PAPI_enum_cmp_event(&code, PAPI_ENUM_EVENTS, l->cid);
	}
	free(seen.slots);
	return result;
}

/*
 * Capabilities a component reports through PAPI_enum_cmp_event modifiers.
 *
 * A modifier means "the next event after this one that has the property"
 * (doc/papi-contract.md, section 3).  So event k has the property if
 * and only if stepping with the modifier from event k-1 lands on event k
 * (compared by name: the step may hand back a new code for the same event);
 * a component that does not implement the modifier fails every step and so
 * has no such events.  The first event has no event before it: nothing reached
 * through the public API can say whether it has the property, so it is left
 * without (this is where papi_native_avail goes wrong: it prints it anyway).
 */
static void classify_by_enumeration(struct component_listing *l)
{
	for (size_t c = 0; c < N_CAPABILITIES; c++) {
		if (capabilities[c].enum_modifier == NO_ENUM_MODIFIER)
			continue;
		for (size_t k = 1; k < l->count; k++) {
			int code = l->events[k - 1].code;
			if (PAPI_enum_cmp_event(&code, capabilities[c].enum_modifier, l->cid) == PAPI_OK &&
			    is_event_named(code, l->events[k].symbol))
				l->events[k].enumerated_caps |= capabilities[c].bit;
		}
	}
}

int open_listing(struct component_listing *l, int cid)
{
	memset(l, 0, sizeof *l);
	l->cid = cid;
	l->info = PAPI_get_component_info(cid);
	l->is_heritage = l->info && papi_heritage_is_component(l->info->name);
	if (enumerate_component(l) != 0)
		return -1;
	classify_by_enumeration(l);
	return 0;
}

void close_listing(struct component_listing *l)
{
	for (size_t k = 0; k < l->count; k++)
		free(l->events[k].symbol);
	free(l->events);
	l->events = NULL;
	l->count = l->capacity = 0;
}
