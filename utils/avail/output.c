/*
 * papi_heritage_avail: the text listing (papi_native_avail's boxes and
 * header), -e's detail, and the --json objects.
 */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "avail.h"

/* ------------------------------------------------------------------ output */

static void format_capability_column(const struct native_event *e, char *out, size_t size)
{
	size_t used = 0;

	out[0] = '\0';
	for (size_t i = 0; i < N_CAPABILITIES; i++)
		if ((e->caps & capabilities[i].bit) && used < size)
			used += (size_t)snprintf(out + used, size - used, "%s ", capabilities[i].column);
	if (used < size)
		snprintf(out + used, size - used, "%s", sources[e->source].name);
}

/* Descriptions are printed inside a box: control characters would break it. */
static void copy_printable(char *out, size_t size, const char *text)
{
	size_t i = 0;
	for (; text[i] && i + 1 < size; i++)
		out[i] = ((unsigned char)text[i] < 0x20 || text[i] == 0x7f) ? ' ' : text[i];
	out[i] = '\0';
}

/* Folds text into box lines, breaking at the last space that fits
 * (papi_native_avail cuts words in two at column 66). */
static void print_box_text(const char *raw)
{
	char text[PAPI_HUGE_STR_LEN];
	const char *p = text;

	copy_printable(text, sizeof text, raw);
	while (*p == ' ')
		p++;
	while (*p) {
		size_t take = strlen(p);
		if (take > TEXT_WIDTH) {
			size_t cut = TEXT_WIDTH;
			while (cut > 0 && p[cut] != ' ')
				cut--;
			take = cut > 0 ? cut : TEXT_WIDTH;
		}
		printf(TEXT_INDENT "%-*.*s|\n", TEXT_WIDTH, (int)take, p);
		p += take;
		while (*p == ' ')
			p++;
	}
}

/* The name, the capabilities column right-aligned, and the -c mark; a name
 * too long to share its line puts the column on the next one. */
static void print_name_line(const char *symbol, const char *column, const char *mark)
{
	size_t name_len = strlen(symbol), column_len = strlen(column);

	if (name_len + 1 + column_len <= NAME_AND_COLUMN_WIDTH) {
		printf("| %s%*s%s %s|\n", symbol, (int)(NAME_AND_COLUMN_WIDTH - name_len - column_len), "", column,
		       mark);
	} else {
		printf("| %-*s %s|\n", NAME_AND_COLUMN_WIDTH, symbol, mark);
		printf("| %*s %*s|\n", NAME_AND_COLUMN_WIDTH, column, MARK_WIDTH, "");
	}
}

/* The qualifier part of a qualified event name: ":exact=1" of
 * "itanium2:::LOADS_RETIRED:exact=1", ":u=0" of "perf::CYCLES:u=0". */
const char *qualifier_of(const char *symbol)
{
	const char *name = strstr(symbol, ":::");

	if (name)
		name += 3;
	else if ((name = strstr(symbol, "::")))
		name += 2;
	else
		name = symbol;
	return strchr(name, ':');
}

/* A qualifier's own description follows "masks:" in PAPI's long description. */
static const char *qualifier_description(const char *long_descr)
{
	const char *masks = strstr(long_descr, "masks:");
	return masks ? masks + 6 : "";
}

typedef void (*qualifier_visitor)(const PAPI_event_info_t *qualified, void *context);

/* Walks the qualifiers PAPI_NTV_ENUM_UMASKS gives for a base event.
 * perf_event walks them with a cursor of its own that only PAPI_ENUM_FIRST
 * and PAPI_ENUM_EVENTS reset (pe_libpfm4_events.c), so a walk that does not
 * directly follow the step to its event would start where the previous walk
 * stopped: reset it with PAPI_ENUM_FIRST first. */
static void for_each_qualifier(int code, int cid, qualifier_visitor visit, void *context)
{
	int reset = PAPI_NATIVE_MASK;
	int qualified = code;
	PAPI_event_info_t info;

	(void)PAPI_enum_cmp_event(&reset, PAPI_ENUM_FIRST, cid);
	if (PAPI_enum_cmp_event(&qualified, PAPI_NTV_ENUM_UMASKS, cid) != PAPI_OK)
		return;
	unsigned walked = 0;
	do {
		memset(&info, 0, sizeof info);
		if (PAPI_get_event_info(qualified, &info) == PAPI_OK && qualifier_of(info.symbol))
			visit(&info, context);
	} while (++walked < MAX_QUALIFIERS_PER_EVENT &&
	         PAPI_enum_cmp_event(&qualified, PAPI_NTV_ENUM_UMASKS, cid) == PAPI_OK);
}

static void print_qualifier_box(const PAPI_event_info_t *qualified, void *context)
{
	char name[PAPI_HUGE_STR_LEN];

	(void)context;
	copy_printable(name, sizeof name, qualifier_of(qualified->symbol));
	printf(QUALIFIER_INDENT "%-*s|\n", QUALIFIER_WIDTH, name);
	print_box_text(qualifier_description(qualified->long_descr));
}

static void print_qualifier_detail(const PAPI_event_info_t *qualified, void *context)
{
	int *printed_heading = context;

	if (!*printed_heading) {
		printf("\nQualifiers:         Name -- Description\n");
		*printed_heading = 1;
	}
	printf("      Info:   %10s -- %s\n", qualifier_of(qualified->symbol),
	       qualifier_description(qualified->long_descr));
}

static const char *mark_for(const struct report *r, const struct native_event *e)
{
	if (!r->settings->check)
		return "    ";
	return e->trial.added ? "    " : "<NA>";
}

static void print_event_box(struct report *r, const struct component_listing *l, const struct native_event *e,
                            const PAPI_event_info_t *info)
{
	char column[256];
	char symbol[PAPI_HUGE_STR_LEN];

	if (r->listed_in_component)
		printf(BOX_RULE);
	format_capability_column(e, column, sizeof column);
	copy_printable(symbol, sizeof symbol, info->symbol);
	print_name_line(symbol, column, mark_for(r, e));
	print_box_text(info->long_descr);
	if (info->units[0])
		printf(QUALIFIER_INDENT "Units: %-*.*s|\n", TEXT_WIDTH, TEXT_WIDTH, info->units);
	if (r->settings->qualifiers)
		for_each_qualifier(e->code, l->cid, print_qualifier_box, NULL);
}

static void print_event_detail(const struct report *r, const struct component_listing *l,
                               const struct native_event *e, const PAPI_event_info_t *info)
{
	char column[256] = "";

	for (size_t i = 0; i < N_CAPABILITIES; i++)
		if (e->caps & capabilities[i].bit) {
			size_t used = strlen(column);
			snprintf(column + used, sizeof column - used, "%s%s", used ? " " : "", capabilities[i].column);
		}
	printf("Event name:     %s\n", info->symbol);
	printf("Description:    %s\n", info->long_descr);
	printf("Component:      %s%s\n", l->info->name, l->is_heritage ? " (papi-heritage)" : "");
	if (info->units[0])
		printf("Units:          %s\n", info->units);
	printf("Capabilities:   %s\n", column[0] ? column : "(none established)");
	printf("Source:         %s\n", sources[e->source].name);
	if (e->origin == FROM_HERITAGE_FACTS) {
		printf("Classified by:  papi_heritage_event_facts()\n");
	} else {
		printf("Classified by:  PAPI enumeration modifiers%s\n",
		       r->settings->check ? " and -c trials" : " (the source needs -c)");
		if (e->is_first)
			printf("Note:           the first event of a component: PAPI's enumeration modifiers only\n"
			       "                report events after a given one, so darr/iarr/dear/iear/opcm\n"
			       "                cannot be established for it\n");
	}
	if (r->settings->check)
		printf("Available:      %s\n", e->trial.added ? "yes" : "no (PAPI_add_event failed)");
	if (r->settings->qualifiers && !qualifier_of(info->symbol)) {
		int printed_heading = 0;
		for_each_qualifier(e->code, l->cid, print_qualifier_detail, &printed_heading);
	}
}

static enum step_result add_json_event(struct report *r, const struct component_listing *l, const struct native_event *e,
                          const PAPI_event_info_t *info)
{
	json_object *event = json_object_new_object();
	json_object *caps = json_object_new_array();

	if (!event || !caps) {
		json_object_put(event);
		json_object_put(caps);
		return OUT_OF_MEMORY;
	}
	for (size_t i = 0; i < N_CAPABILITIES; i++)
		if (e->caps & capabilities[i].bit)
			json_object_array_add(caps, json_object_new_string(capabilities[i].option));
	json_object_object_add(event, "name", json_object_new_string(info->symbol));
	json_object_object_add(event, "component", json_object_new_string(l->info->name));
	json_object_object_add(event, "description", json_object_new_string(info->long_descr));
	json_object_object_add(event, "units", json_object_new_string(info->units));
	json_object_object_add(event, "capabilities", caps);
	json_object_object_add(event, "source", json_object_new_string(sources[e->source].name));
	json_object_object_add(event, "classified_by",
	                       json_object_new_string(e->origin == FROM_HERITAGE_FACTS ? "heritage" : "papi"));
	if (r->settings->check)
		json_object_object_add(event, "available", json_object_new_boolean(e->trial.added));
	return json_object_array_add(r->json_events, event) == 0 ? DONE : OUT_OF_MEMORY;
}

/* Lists one event that matched. */
enum step_result report_event(struct report *r, const struct component_listing *l, const struct native_event *e,
                        const PAPI_event_info_t *info, int detailed)
{
	r->matched++;
	switch (r->settings->output) {
	case OUTPUT_TEXT:
		if (detailed)
			print_event_detail(r, l, e, info);
		else
			print_event_box(r, l, e, info);
		break;
	case OUTPUT_JSON:
		if (add_json_event(r, l, e, info) != DONE)
			return OUT_OF_MEMORY;
		break;
	case OUTPUT_COUNT:
		break;
	}
	r->listed_in_component++;
	return DONE;
}

static void describe_selection(const struct settings *s, char *out, size_t size)
{
	const struct selection *sel = &s->selection;
	size_t used = 0;

#define APPEND(...)                                                                        \
	do {                                                                               \
		if (used < size)                                                           \
			used += (size_t)snprintf(out + used, size - used, __VA_ARGS__);    \
	} while (0)
	out[0] = '\0';
	for (size_t i = 0; i < N_CAPABILITIES; i++)
		if (sel->required_caps & capabilities[i].bit)
			APPEND("--%s ", capabilities[i].option);
	if (sel->required_source != SOURCE_UNKNOWN)
		APPEND("--%s ", sources[sel->required_source].name);
	for (size_t i = 0; i < sel->n_components; i++)
		APPEND("--component %s ", sel->components[i]);
	for (size_t i = 0; i < sel->n_include; i++)
		APPEND("-i %s ", sel->include[i]);
	for (size_t i = 0; i < sel->n_exclude; i++)
		APPEND("-x %s ", sel->exclude[i]);
	if (s->check)
		APPEND("-c ");
#undef APPEND
	used = strlen(out);
	if (used > 0 && out[used - 1] == ' ')
		out[used - 1] = '\0';
	if (out[0] == '\0')
		snprintf(out, size, "all native events");
}

/* papi_native_avail's header (its print_header.c is not part of libpapi). */
void print_header(const struct settings *s)
{
	const PAPI_hw_info_t *hw = PAPI_get_hardware_info();
	const PAPI_component_info_t *first = PAPI_get_component_info(0);
	struct utsname uname_info;
	char selection[512];

	printf("Available native events, their capabilities and hardware information.\n");
	printf(BOX_RULE);
	printf("PAPI version             : %d.%d.%d.%d\n", PAPI_VERSION_MAJOR(PAPI_VERSION),
	       PAPI_VERSION_MINOR(PAPI_VERSION), PAPI_VERSION_REVISION(PAPI_VERSION),
	       PAPI_VERSION_INCREMENT(PAPI_VERSION));
	if (uname(&uname_info) == 0)
		printf("Operating system         : %s %s\n", uname_info.sysname, uname_info.release);
	if (hw) {
		printf("Vendor string and code   : %s (%d, 0x%x)\n", hw->vendor_string, hw->vendor, hw->vendor);
		printf("Model string and code    : %s (%d, 0x%x)\n", hw->model_string, hw->model, hw->model);
		printf("CPU revision             : %f\n", hw->revision);
		if (hw->cpuid_family > 0)
			printf("CPUID                    : Family/Model/Stepping %d/%d/%d, 0x%02x/0x%02x/0x%02x\n",
			       hw->cpuid_family, hw->cpuid_model, hw->cpuid_stepping, hw->cpuid_family,
			       hw->cpuid_model, hw->cpuid_stepping);
		printf("CPU Max MHz              : %d\n", hw->cpu_max_mhz);
		printf("CPU Min MHz              : %d\n", hw->cpu_min_mhz);
		printf("Total cores              : %d\n", hw->totalcpus);
		if (hw->threads > 0)
			printf("SMT threads per core     : %d\n", hw->threads);
		if (hw->cores > 0)
			printf("Cores per socket         : %d\n", hw->cores);
		if (hw->sockets > 0)
			printf("Sockets                  : %d\n", hw->sockets);
		printf("Cores per NUMA region    : %d\n", hw->ncpu);
		printf("NUMA regions             : %d\n", hw->nnodes);
		printf("Running in a VM          : %s\n", hw->virtualized ? "yes" : "no");
		if (hw->virtualized)
			printf("VM Vendor                : %s\n", hw->virtual_vendor_string);
	}
	int counters = PAPI_get_opt(PAPI_MAX_HWCTRS, NULL);
	int multiplexed = PAPI_get_opt(PAPI_MAX_MPX_CTRS, NULL);
	if (counters >= 0)
		printf("Number Hardware Counters : %d\n", counters);
	else
		printf("Number Hardware Counters : PAPI error %d: %s\n", counters, PAPI_strerror(counters));
	if (multiplexed >= 0)
		printf("Max Multiplex Counters   : %d\n", multiplexed);
	else
		printf("Max Multiplex Counters   : PAPI error %d: %s\n", multiplexed, PAPI_strerror(multiplexed));
	if (first)
		printf("Fast counter read (rdpmc): %s\n", first->fast_counter_read ? "yes" : "no");
	describe_selection(s, selection, sizeof selection);
	char printable[sizeof selection];
	copy_printable(printable, sizeof printable, selection);
	printf("Selection                : %s\n", printable);
	printf(BOX_RULE);
	printf("\n");
}
