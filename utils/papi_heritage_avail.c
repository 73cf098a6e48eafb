/*
 * papi_heritage_avail - native events, what each can be used for, and where
 * its value comes from on this machine; filters that can be trusted.
 *
 * It looks and behaves like PAPI's papi_native_avail where the two overlap,
 * with two differences that are the reason it exists:
 *
 *  - papi_native_avail prints every component's first event unchecked: it
 *    takes it from PAPI_ENUM_FIRST and applies the --darr/--iarr/...
 *    modifier only when stepping to the next event.  Here an event is
 *    printed only if it matches every filter given, and filters combine.
 *
 *  - Heritage components (papi_heritage_is_component()) answer for their own
 *    events through papi_heritage_event_facts().  Every other component is
 *    classified only from what PAPI itself establishes: its enumeration
 *    modifiers (classify_by_enumeration(), utils/avail/events.c) and, with
 *    -c, trials through the public API (run_trials(), utils/avail/trials.c).
 *    A capability or source that cannot be established is not claimed.
 *
 * This file walks the components and holds main(); the other pieces are in
 * utils/avail/ (avail.h says which does what).  Only <papi.h> and
 * <papi_heritage.h> are used.  See papi_heritage_avail(1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avail/avail.h"

/* ---------------------------------------------------------------- listing */

/* Classifies (running -c trials only where they could matter) and decides. */
static int event_is_selected(const struct settings *s, const struct component_listing *l, struct native_event *e,
                             struct report *r)
{
	classify_event(l, e);
	if (!could_match_after_trials(&s->selection, e))
		return 0;
	if (s->check)
		run_trials(l, e);
	else if (e->origin == FROM_PAPI && selection_needs_trials(&s->selection))
		r->unclassified_without_check++;
	return matches_classification(&s->selection, e);
}

static enum step_result report_component(struct report *r, int cid)
{
	const struct settings *s = r->settings;
	struct component_listing l;
	PAPI_event_info_t info;
	enum step_result result = DONE;

	if (open_listing(&l, cid) != 0) {
		close_listing(&l);
		return OUT_OF_MEMORY;
	}
	if (s->output == OUTPUT_TEXT) {
		printf(BANNER_RULE);
		printf(" Native Events in Component: %s\n", l.info->name);
		printf(BANNER_RULE);
	}
	r->listed_in_component = 0;
	for (size_t k = 0; k < l.count && result == DONE; k++) {
		struct native_event *e = &l.events[k];
		if (!e->symbol || !matches_name(&s->selection, e->symbol) || !event_is_selected(s, &l, e, r))
			continue;
		memset(&info, 0, sizeof info);
		if (PAPI_get_event_info(e->code, &info) != PAPI_OK)
			continue;
		result = report_event(r, &l, e, &info, 0);
	}
	if (s->output == OUTPUT_TEXT && r->listed_in_component)
		printf(BOX_RULE);
	close_listing(&l);
	return result;
}

/* The enumerated event a (possibly qualified) name belongs to: its base
 * name, "perf::CYCLES" of "perf::CYCLES:u=0"; NULL if not enumerated. */
static const struct native_event *find_base_event(const struct component_listing *l, const char *symbol)
{
	char base[PAPI_HUGE_STR_LEN];

	snprintf(base, sizeof base, "%s", symbol);
	char *qualifier = (char *)qualifier_of(base);
	if (qualifier)
		*qualifier = '\0';
	for (size_t k = 0; k < l->count; k++)
		if (l->events[k].symbol && strcmp(l->events[k].symbol, base) == 0)
			return &l->events[k];
	return NULL;
}

/* -e EVENT: the same selection rules, for one event, in detail. */
static enum step_result report_named_event(struct report *r, const unsigned char *selected)
{
	const struct settings *s = r->settings;
	struct component_listing l;
	PAPI_event_info_t info;
	int code = 0;

	if (PAPI_event_name_to_code(s->event_name, &code) != PAPI_OK)
		return usage_error_step("option -e: no native event named '%s' (see %s without -e)",
		                        s->event_name, PROGRAM_NAME);
	if (!IS_NATIVE(code))
		return usage_error_step("option -e: '%s' is not a native event (presets: papi_avail)", s->event_name);
	memset(&info, 0, sizeof info);
	int cid = PAPI_get_event_component(code);
	if (cid < 0 || cid >= PAPI_num_components() || PAPI_get_event_info(code, &info) != PAPI_OK)
		return usage_error_step("option -e: PAPI cannot describe '%s'", s->event_name);
	if (!selected[cid] || !matches_name(&s->selection, info.symbol))
		return DONE;
	if (open_listing(&l, cid) != 0) {
		close_listing(&l);
		return OUT_OF_MEMORY;
	}
	/* perf_event re-registers each event it enumerates, and a code looked
	 * up before that no longer resolves afterwards (PAPI_add_event says
	 * PAPI_ENOEVNT): look the name up again now. */
	if (PAPI_event_name_to_code(s->event_name, &code) != PAPI_OK) {
		close_listing(&l);
		return usage_error_step("option -e: no native event named '%s'", s->event_name);
	}
	struct native_event event = { .code = code };
	const struct native_event *base = find_base_event(&l, info.symbol);
	if (base) {
		event.enumerated_caps = base->enumerated_caps;
		event.is_first = base->is_first;
	}
	enum step_result result = DONE;
	if (event_is_selected(s, &l, &event, r))
		result = report_event(r, &l, &event, &info, 1);
	close_listing(&l);
	return result;
}

static int selection_is_empty(const struct settings *s)
{
	const struct selection *sel = &s->selection;
	return !sel->n_include && !sel->n_exclude && !sel->n_components && !sel->required_caps &&
	       sel->required_source == SOURCE_UNKNOWN;
}

static enum step_result finish_report(struct report *r)
{
	const struct settings *s = r->settings;

	switch (s->output) {
	case OUTPUT_TEXT:
		if (!s->event_name) {
			printf("\nTotal events reported: %zu\n", r->matched);
			if (r->matched == 0 && selection_is_empty(s))
				printf("\nNo events detected!  Check papi_component_avail to find out why.\n\n");
			else if (r->matched == 0)
				printf("\nNo events match the selection.\n\n");
		}
		break;
	case OUTPUT_JSON: {
		const char *text = json_object_to_json_string_ext(
		        r->json_events, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
		if (!text)
			return OUT_OF_MEMORY;
		printf("%s\n", text);
		break;
	}
	case OUTPUT_COUNT:
		printf("%zu\n", r->matched);
		break;
	}
	if (s->event_name && r->matched == 0)
		fprintf(stderr, "%s: %s does not match the selection\n", PROGRAM_NAME, s->event_name);
	if (r->unclassified_without_check)
		fprintf(stderr,
		        "%s: note: %zu event(s) of non-heritage components are never shown as usable with "
		        "PAPI_overflow/PAPI_profil or as measured without -c\n",
		        PROGRAM_NAME, r->unclassified_without_check);
	return DONE;
}

static int run(const struct settings *s)
{
	int n_components = PAPI_num_components();
	unsigned char *selected = calloc(n_components > 0 ? (size_t)n_components : 1, 1);
	struct report r = { .settings = s };
	enum step_result result = OUT_OF_MEMORY;

	if (!selected || (s->output == OUTPUT_JSON && !(r.json_events = json_object_new_array())))
		goto out;
	if (select_components(&s->selection, selected, n_components) != 0) {
		result = USAGE_ERROR;
		goto out;
	}
	result = DONE;
	if (s->event_name) {
		result = report_named_event(&r, selected);
	} else {
		if (s->output == OUTPUT_TEXT)
			print_header(s);
		for (int cid = 0; cid < n_components && result == DONE; cid++)
			if (selected[cid] && component_is_enumerable(PAPI_get_component_info(cid)))
				result = report_component(&r, cid);
	}
	if (result == DONE)
		result = finish_report(&r);
out:
	json_object_put(r.json_events);
	free(selected);
	switch (result) {
	case DONE:
		return r.matched ? STATUS_MATCHES : STATUS_NO_MATCHES;
	case USAGE_ERROR:
		return STATUS_USAGE;
	case OUT_OF_MEMORY:
		break;
	}
	fprintf(stderr, "%s: out of memory\n", PROGRAM_NAME);
	return STATUS_PAPI_FAILURE;
}

int main(int argc, char **argv)
{
	struct settings s;
	int status;

	if (settings_init(&s, argc) != 0) {
		fprintf(stderr, "%s: out of memory\n", PROGRAM_NAME);
		settings_free(&s);
		return STATUS_PAPI_FAILURE;
	}
	/* Parse before initialising PAPI: --help and usage errors need no PAPI. */
	switch (parse_args(argc, argv, &s)) {
	case PARSE_HELP:
		settings_free(&s);
		return STATUS_MATCHES;
	case PARSE_ERROR:
		settings_free(&s);
		return STATUS_USAGE;
	case PARSE_OK:
		break;
	}
	if (s.mechanisms && (s.event_name || s.check || s.output == OUTPUT_COUNT || !selection_is_empty(&s))) {
		usage_error("option --mechanisms lists mechanisms, not events: it takes only --json");
		settings_free(&s);
		return STATUS_USAGE;
	}
	int version = PAPI_library_init(PAPI_VER_CURRENT);
	if (version != PAPI_VER_CURRENT) {
		fprintf(stderr, "%s: PAPI_library_init failed: %s\n", PROGRAM_NAME,
		        version < 0 ? PAPI_strerror(version) : "version mismatch");
		settings_free(&s);
		return STATUS_PAPI_FAILURE;
	}
	status = s.mechanisms ? (s.output == OUTPUT_JSON ? mechanisms_json() : mechanisms_text()) : run(&s);
	fflush(stdout);
	PAPI_shutdown();
	settings_free(&s);
	return status;
}
