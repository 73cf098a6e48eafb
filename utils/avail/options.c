/*
 * papi_heritage_avail: the vocabularies (capabilities, sources) and the
 * command line (papi_heritage_avail(1)).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avail.h"

/* ------------------------------------------------------------ vocabularies */

const struct capability capabilities[] = {
	{ PAPI_HERITAGE_CAP_DARR, "darr", "darr", PAPI_NTV_ENUM_DARR,
	  "events supporting Data Address Range Restriction" },
	{ PAPI_HERITAGE_CAP_IARR, "iarr", "iarr", PAPI_NTV_ENUM_IARR,
	  "events supporting Instruction Address Range Restriction" },
	{ PAPI_HERITAGE_CAP_DEAR, "dear", "dear", PAPI_NTV_ENUM_DEAR, "Data Event Address Register events" },
	{ PAPI_HERITAGE_CAP_IEAR, "iear", "iear", PAPI_NTV_ENUM_IEAR,
	  "Instruction Event Address Register events" },
	{ PAPI_HERITAGE_CAP_OPCM, "opcm", "opcm", PAPI_NTV_ENUM_OPCM, "events supporting OpCode Matching" },
	{ PAPI_HERITAGE_CAP_OVERFLOW, "overflow", "ovf", NO_ENUM_MODIFIER, "events usable with PAPI_overflow" },
	{ PAPI_HERITAGE_CAP_PROFILE, "profile", "prof", NO_ENUM_MODIFIER, "events usable with PAPI_profil" },
	{ PAPI_HERITAGE_CAP_UNREADABLE, "unreadable", "unread", NO_ENUM_MODIFIER,
	  "events whose value comes only through overflow" },
	{ PAPI_HERITAGE_CAP_SAMPLE, "sample", "sample", NO_ENUM_MODIFIER, "sample-set events" },
	{ PAPI_HERITAGE_CAP_TRACE, "trace", "trace", NO_ENUM_MODIFIER, "trace-mode events" },
};
const size_t n_capabilities = sizeof capabilities / sizeof capabilities[0];

const struct source_name sources[N_SOURCES] = {
	[SOURCE_UNKNOWN] = { "unknown", NULL },
	[SOURCE_MEASURED] = { "measured", "events a real source on this machine counts" },
	[SOURCE_MODELLED] = { "modelled", "events derived by a documented model of measured quantities" },
	[SOURCE_UNAVAILABLE] = { "unavailable", "events with no honest source here (adding them fails)" },
};

enum event_source source_from_heritage(enum papi_heritage_source source)
{
	switch (source) {
	case PAPI_HERITAGE_MEASURED:
		return SOURCE_MEASURED;
	case PAPI_HERITAGE_MODELLED:
		return SOURCE_MODELLED;
	case PAPI_HERITAGE_UNAVAILABLE:
		return SOURCE_UNAVAILABLE;
	}
	return SOURCE_UNKNOWN; /* a value this build does not know: claim nothing */
}

/* --------------------------------------------------------------- options */

enum option_action {
	ACTION_HELP,
	ACTION_CHECK,
	ACTION_EVENT,
	ACTION_INCLUDE,
	ACTION_EXCLUDE,
	ACTION_NOQUAL,
	ACTION_NOGROUPS,
	ACTION_COMPONENT,
	ACTION_JSON,
	ACTION_COUNT,
	ACTION_MECHANISMS,
};

struct option_spec {
	const char *short_name; /* "-c", or NULL */
	const char *long_name;  /* "--check", or NULL */
	const char *argument;   /* its argument as --help shows it, NULL for a flag */
	enum option_action action;
	const char *help;
};

static const struct option_spec general_options[] = {
	{ "-h", "--help", NULL, ACTION_HELP, "print this help message" },
	{ "-c", "--check", NULL, ACTION_CHECK, "attempts to add each event (and classifies non-heritage events by trial)" },
	{ "-e", NULL, "EVENTNAME", ACTION_EVENT, "display detailed information about named native event" },
	{ "-i", NULL, "EVENTSTR", ACTION_INCLUDE, "include only event names that contain EVENTSTR" },
	{ "-x", NULL, "EVENTSTR", ACTION_EXCLUDE, "exclude any event names that contain EVENTSTR" },
	{ NULL, "--noqual", NULL, ACTION_NOQUAL, "suppress display of event qualifiers (mask and flag) information" },
	{ NULL, "--nogroups", NULL, ACTION_NOGROUPS, "accepted for papi_native_avail compatibility (no groups shown)" },
	{ NULL, "--component", "NAME", ACTION_COMPONENT, "only events of component NAME (repeatable)" },
	{ NULL, "--json", NULL, ACTION_JSON, "write the selection as a JSON array, one object per event" },
	{ NULL, "--count", NULL, ACTION_COUNT, "print only the number of events selected" },
	{ NULL, "--mechanisms", NULL, ACTION_MECHANISMS,
	  "instead of events: each mechanism the components rely on, its state for this account, "
	  "the evidence, and what needs it (with --json: as JSON)" },
};
#define N_GENERAL_OPTIONS (sizeof general_options / sizeof general_options[0])

static void print_usage(void)
{
	printf("This is the PAPI heritage avail program.\n");
	printf("It lists native events, what each can be used for and where its value comes from.\n");
	printf("Usage: %s [options]\n", PROGRAM_NAME);
	printf("\nGeneral command options:\n");
	for (size_t i = 0; i < N_GENERAL_OPTIONS; i++) {
		const struct option_spec *o = &general_options[i];
		char names[64];
		snprintf(names, sizeof names, "%s%s%s%s%s", o->short_name ? o->short_name : "",
		         o->short_name && o->long_name ? ", " : "", o->long_name ? o->long_name : "",
		         o->argument ? " " : "", o->argument ? o->argument : "");
		printf("\t%-19s%s\n", names, o->help);
	}
	printf("\nCapability filters (an event is listed only if it has every one given):\n");
	for (size_t i = 0; i < N_CAPABILITIES; i++)
		printf("\t--%-17s%s\n", capabilities[i].option, capabilities[i].help);
	printf("\nSource filters (where the value comes from on this machine; one at most):\n");
	for (size_t i = 1; i < N_SOURCES; i++)
		printf("\t--%-17s%s\n", sources[i].name, sources[i].help);
	printf("\nEvents of components that are not papi-heritage ones are classified only from what\n"
	       "PAPI establishes: enumeration modifiers, and with -c trial runs.  See %s(1).\n", PROGRAM_NAME);
	printf("Exit status: 0 events listed, 1 none selected, 2 usage error, 3 PAPI failure.\n\n");
}

__attribute__((format(printf, 1, 2))) int usage_error(const char *format, ...)
{
	va_list args;
	fprintf(stderr, "%s: ", PROGRAM_NAME);
	va_start(args, format);
	vfprintf(stderr, format, args);
	va_end(args);
	fprintf(stderr, "\nTry '%s --help'.\n", PROGRAM_NAME);
	return STATUS_USAGE;
}

__attribute__((format(printf, 1, 2))) enum step_result usage_error_step(const char *format, ...)
{
	char message[2 * PAPI_HUGE_STR_LEN];
	va_list args;

	va_start(args, format);
	vsnprintf(message, sizeof message, format, args);
	va_end(args);
	usage_error("%s", message);
	return USAGE_ERROR;
}

/* The option an argument names: "--component=x" names "--component". */
static int names_option(const char *arg, size_t name_len, const char *prefix, const char *name)
{
	size_t prefix_len = strlen(prefix);
	return name && name_len == prefix_len + strlen(name) && strncmp(arg, prefix, prefix_len) == 0 &&
	       strncmp(arg + prefix_len, name, name_len - prefix_len) == 0;
}

/* Like papi_native_avail, refuse a missing or empty argument and one that
 * starts with '-': "-i --darr" is a forgotten argument, not a search for
 * "--darr".  PAPI's own name buffers bound the length. */
static int check_argument(const char *option, const char *value)
{
	if (!value || value[0] == '\0' || value[0] == '-')
		return usage_error("option %s needs an argument", option);
	if (strlen(value) >= PAPI_HUGE_STR_LEN)
		return usage_error("the argument of %s is longer than %d characters", option, PAPI_HUGE_STR_LEN - 1);
	return 0;
}

static enum parse_result apply_general_option(const struct option_spec *o, const char *shown, const char *value,
                                              struct settings *s)
{
	struct selection *sel = &s->selection;

	switch (o->action) {
	case ACTION_HELP:
		print_usage();
		return PARSE_HELP;
	case ACTION_CHECK:
		s->check = 1;
		break;
	case ACTION_EVENT:
		if (s->event_name) {
			usage_error("option -e given twice ('%s' and '%s')", s->event_name, value);
			return PARSE_ERROR;
		}
		s->event_name = value;
		break;
	case ACTION_INCLUDE:
		sel->include[sel->n_include++] = value;
		break;
	case ACTION_EXCLUDE:
		sel->exclude[sel->n_exclude++] = value;
		break;
	case ACTION_NOQUAL:
		s->qualifiers = 0;
		break;
	case ACTION_NOGROUPS:
		break;
	case ACTION_MECHANISMS:
		s->mechanisms = 1;
		break;
	case ACTION_COMPONENT:
		sel->components[sel->n_components++] = value;
		break;
	case ACTION_JSON:
	case ACTION_COUNT: {
		enum output_mode mode = o->action == ACTION_JSON ? OUTPUT_JSON : OUTPUT_COUNT;
		if (s->output != OUTPUT_TEXT && s->output != mode) {
			usage_error("options --json and --count exclude each other (%s)", shown);
			return PARSE_ERROR;
		}
		s->output = mode;
		break;
	}
	}
	return PARSE_OK;
}

static enum parse_result apply_source_option(enum event_source source, struct settings *s)
{
	struct selection *sel = &s->selection;

	if (sel->required_source != SOURCE_UNKNOWN && sel->required_source != source) {
		usage_error("options --%s and --%s exclude each other (an event has one source)",
		            sources[sel->required_source].name, sources[source].name);
		return PARSE_ERROR;
	}
	sel->required_source = source;
	return PARSE_OK;
}

/* Arrays are sized by argc: no option can be given more often than that. */
int settings_init(struct settings *s, int argc)
{
	size_t slots = argc > 0 ? (size_t)argc : 1;

	memset(s, 0, sizeof *s);
	s->qualifiers = 1;
	s->output = OUTPUT_TEXT;
	s->selection.include = calloc(slots, sizeof *s->selection.include);
	s->selection.exclude = calloc(slots, sizeof *s->selection.exclude);
	s->selection.components = calloc(slots, sizeof *s->selection.components);
	return s->selection.include && s->selection.exclude && s->selection.components ? 0 : -1;
}

void settings_free(struct settings *s)
{
	free(s->selection.include);
	free(s->selection.exclude);
	free(s->selection.components);
}

enum parse_result parse_args(int argc, char **argv, struct settings *s)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		/* "--name=value" carries its value; short options never do. */
		const char *equals = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
		size_t name_len = equals ? (size_t)(equals - arg) : strlen(arg);
		char shown[64];
		snprintf(shown, sizeof shown, "%.*s", (int)(name_len < 48 ? name_len : 48), arg);

		const struct option_spec *general = NULL;
		for (size_t k = 0; k < N_GENERAL_OPTIONS && !general; k++)
			if (names_option(arg, name_len, "", general_options[k].short_name) ||
			    names_option(arg, name_len, "", general_options[k].long_name))
				general = &general_options[k];
		int capability = -1, source = -1;
		for (size_t k = 0; k < N_CAPABILITIES && capability < 0; k++)
			if (names_option(arg, name_len, "--", capabilities[k].option))
				capability = (int)k;
		for (size_t k = 1; k < N_SOURCES && source < 0; k++)
			if (names_option(arg, name_len, "--", sources[k].name))
				source = (int)k;

		if (!general && capability < 0 && source < 0) {
			usage_error("unknown option '%.64s%s'", arg, strlen(arg) > 64 ? "..." : "");
			return PARSE_ERROR;
		}
		if (general && general->argument) {
			const char *value = equals ? equals + 1 : (i + 1 < argc ? argv[++i] : NULL);
			if (check_argument(shown, value) != 0)
				return PARSE_ERROR;
			enum parse_result r = apply_general_option(general, shown, value, s);
			if (r != PARSE_OK)
				return r;
			continue;
		}
		if (equals) {
			usage_error("option %s takes no argument (given '%s')", shown, equals + 1);
			return PARSE_ERROR;
		}
		enum parse_result r = PARSE_OK;
		if (general)
			r = apply_general_option(general, shown, NULL, s);
		else if (capability >= 0)
			s->selection.required_caps |= capabilities[capability].bit;
		else
			r = apply_source_option((enum event_source)source, s);
		if (r != PARSE_OK)
			return r;
	}
	return PARSE_OK;
}
