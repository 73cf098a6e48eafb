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
 *    modifiers (classify_by_enumeration()) and, with -c, trials through the
 *    public API (run_trials()).  A capability or source that cannot be
 *    established is not claimed.
 *
 * Only <papi.h> and <papi_heritage.h> are used.  See papi_heritage_avail(1).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <json-c/json.h>

#include <papi.h>
#include <papi_heritage.h>

#define PROGRAM_NAME "papi_heritage_avail"

enum exit_status {
	STATUS_MATCHES = 0,       /* at least one event listed */
	STATUS_NO_MATCHES = 1,    /* the selection is empty */
	STATUS_USAGE = 2,         /* bad command line; a message names the option */
	STATUS_PAPI_FAILURE = 3,  /* PAPI could not be initialised, or out of memory */
};

/* papi_native_avail's box, 80 columns wide:
 *   "| " name ... capabilities " " mark "|"   mark is the 4-column -c marker
 *   "|            " description folded to 66 columns "|"
 *   "|     " qualifier (73 columns) "|"                                        */
#define NAME_AND_COLUMN_WIDTH 72
#define MARK_WIDTH 4
#define TEXT_INDENT "|            "
#define TEXT_WIDTH 66
#define QUALIFIER_INDENT "|     "
#define QUALIFIER_WIDTH 73
#define BOX_RULE "--------------------------------------------------------------------------------\n"
#define BANNER_RULE "===============================================================================\n"

/* Guards against a component whose enumeration never ends. */
#define MAX_EVENTS_PER_COMPONENT (1u << 18)
#define MAX_QUALIFIERS_PER_EVENT 4096u

/* Large enough that no overflow fires between a trial's start and stop. */
#define TRIAL_THRESHOLD 1000000000

/* ------------------------------------------------------------ vocabularies */

#define NO_ENUM_MODIFIER (-1)

/* Every capability in <papi_heritage.h>: one row drives its filter option
 * (--<option>), its token in the text column and in --json, and how PAPI
 * reports it for components that are not heritage ones. */
struct capability {
	unsigned bit;        /* PAPI_HERITAGE_CAP_* */
	const char *option;  /* filter option without "--"; also the --json token */
	const char *column;  /* token in the text listing's capabilities column */
	int enum_modifier;   /* PAPI_NTV_ENUM_* reporting it, or NO_ENUM_MODIFIER */
	const char *help;
};

static const struct capability capabilities[] = {
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
#define N_CAPABILITIES (sizeof capabilities / sizeof capabilities[0])

/* The capabilities a non-heritage event can gain only from -c trials. */
#define TRIAL_CAPABILITIES (PAPI_HERITAGE_CAP_OVERFLOW | PAPI_HERITAGE_CAP_PROFILE)

/* Where an event's value comes from (DESIGN.md), plus "not established". */
enum event_source {
	SOURCE_UNKNOWN = 0,
	SOURCE_MEASURED,
	SOURCE_MODELLED,
	SOURCE_UNAVAILABLE,
};

static const struct {
	const char *name;    /* filter option without "--", column and --json token */
	const char *help;
} sources[] = {
	[SOURCE_UNKNOWN] = { "unknown", NULL },
	[SOURCE_MEASURED] = { "measured", "events a real source on this machine counts" },
	[SOURCE_MODELLED] = { "modelled", "events derived by a documented model of measured quantities" },
	[SOURCE_UNAVAILABLE] = { "unavailable", "events with no honest source here (adding them fails)" },
};
#define N_SOURCES (sizeof sources / sizeof sources[0])

static enum event_source source_from_heritage(enum papi_heritage_source source)
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

enum output_mode { OUTPUT_TEXT, OUTPUT_JSON, OUTPUT_COUNT };

/* What to list.  Every filter must hold for an event to be listed. */
struct selection {
	const char **include;         /* -i: all must occur in the event name */
	size_t n_include;
	const char **exclude;         /* -x: none may occur in the event name */
	size_t n_exclude;
	const char **components;      /* --component: the event's component is one of these */
	size_t n_components;
	unsigned required_caps;       /* PAPI_HERITAGE_CAP_* the event must all have */
	enum event_source required_source; /* SOURCE_UNKNOWN: no source filter */
};

struct settings {
	struct selection selection;
	const char *event_name;   /* -e */
	int check;                /* -c */
	int qualifiers;           /* not --noqual */
	int mechanisms;           /* --mechanisms */
	enum output_mode output;
};

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

__attribute__((format(printf, 1, 2))) static int usage_error(const char *format, ...)
{
	va_list args;
	fprintf(stderr, "%s: ", PROGRAM_NAME);
	va_start(args, format);
	vfprintf(stderr, format, args);
	va_end(args);
	fprintf(stderr, "\nTry '%s --help'.\n", PROGRAM_NAME);
	return STATUS_USAGE;
}

/* How a step of the listing ended. */
enum step_result { DONE, USAGE_ERROR, OUT_OF_MEMORY };

__attribute__((format(printf, 1, 2))) static enum step_result usage_error_step(const char *format, ...)
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

enum parse_result { PARSE_OK, PARSE_HELP, PARSE_ERROR };

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
static int settings_init(struct settings *s, int argc)
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

static void settings_free(struct settings *s)
{
	free(s->selection.include);
	free(s->selection.exclude);
	free(s->selection.components);
}

static enum parse_result parse_args(int argc, char **argv, struct settings *s)
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

/* -------------------------------------------------------------- components */

/* Marks the components --component names; an unknown name is a usage error
 * (an empty list would look like "no such events" instead). */
static int select_components(const struct selection *sel, unsigned char *selected, int n_components)
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

static int component_is_enumerable(const PAPI_component_info_t *info)
{
	/* papi_native_avail's rule: skip disabled components, but a delayed
	 * initialisation happens on first use. */
	return info && (!info->disabled || info->disabled == PAPI_EDELAY_INIT);
}

/* ------------------------------------------------------------- event lists */

/* The outcome of -c trials for one event. */
struct trial {
	int added;       /* PAPI_add_event worked: otherwise marked <NA>, as papi_native_avail does */
	int counted;     /* ...and PAPI_start/PAPI_stop worked */
	int overflowed;  /* PAPI_overflow armed, and the set started and stopped */
	int profiled;    /* PAPI_profil armed, and the set started and stopped */
};

enum classification_origin {
	FROM_PAPI,               /* enumeration modifiers and -c trials */
	FROM_HERITAGE_FACTS,     /* papi_heritage_event_facts() */
};

struct native_event {
	int code;                   /* PAPI event code */
	char *symbol;               /* its name: the event's identity (see struct name_set); NULL if PAPI has none */
	unsigned enumerated_caps;   /* PAPI_HERITAGE_CAP_* read off PAPI's enumeration modifiers */
	int is_first;               /* PAPI_ENUM_FIRST's event: no modifier can report it */
	/* set by classify_event() and run_trials(): */
	enum classification_origin origin;
	unsigned caps;              /* PAPI_HERITAGE_CAP_* established */
	enum event_source source;
	struct trial trial;         /* with -c */
};

struct component_listing {
	int cid;
	const PAPI_component_info_t *info;
	int is_heritage;
	struct native_event *events; /* in PAPI's enumeration order */
	size_t count;
	size_t capacity;
};

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
 * (papi-component-contract.md, section 3).  So event k has the property if
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

static int open_listing(struct component_listing *l, int cid)
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

static void close_listing(struct component_listing *l)
{
	for (size_t k = 0; k < l->count; k++)
		free(l->events[k].symbol);
	free(l->events);
	l->events = NULL;
	l->count = l->capacity = 0;
}

/* ----------------------------------------------------------- classification */

/* What needs no trial: a heritage component's own facts, or else what the
 * enumeration modifiers said (and "unknown" for the source). */
static void classify_event(const struct component_listing *l, struct native_event *e)
{
	struct papi_heritage_event_facts facts;

	if (l->is_heritage && papi_heritage_event_facts(e->code, &facts) == PAPI_OK) {
		e->origin = FROM_HERITAGE_FACTS;
		e->caps = facts.caps;
		e->source = source_from_heritage(facts.source);
		return;
	}
	/* Not a heritage component, or one whose facts are not compiled in
	 * (PAPI_ENOCMP): fall back on what PAPI says. */
	e->origin = FROM_PAPI;
	e->caps = e->enumerated_caps;
	e->source = SOURCE_UNKNOWN;
}

static void ignore_overflow(int event_set, void *address, long long overflow_vector, void *context)
{
	(void)event_set;
	(void)address;
	(void)overflow_vector;
	(void)context;
}

static void destroy_trial_set(int *set)
{
	/* A set whose stop failed is still running and cannot be destroyed;
	 * later trials on its component then fail, which claims less, not more. */
	(void)PAPI_cleanup_eventset(*set);
	(void)PAPI_destroy_eventset(set);
}

/* A new event set holding only `code`, or PAPI_NULL if it cannot be added. */
static int create_trial_set(int code)
{
	int set = PAPI_NULL;

	if (PAPI_create_eventset(&set) != PAPI_OK)
		return PAPI_NULL;
	if (PAPI_add_event(set, code) != PAPI_OK) {
		destroy_trial_set(&set);
		return PAPI_NULL;
	}
	return set;
}

static int start_and_stop(int set)
{
	long long value = 0;

	if (PAPI_start(set) != PAPI_OK)
		return 0;
	return PAPI_stop(set, &value) == PAPI_OK;
}

static int trial_overflow(int code)
{
	int set = create_trial_set(code);
	if (set == PAPI_NULL)
		return 0;
	int armed = PAPI_overflow(set, code, TRIAL_THRESHOLD, 0, ignore_overflow) == PAPI_OK;
	int worked = armed && start_and_stop(set);
	if (armed)
		(void)PAPI_overflow(set, code, 0, 0, ignore_overflow);
	destroy_trial_set(&set);
	return worked;
}

static int trial_profile(int code)
{
	static unsigned short buckets[64];
	int set = create_trial_set(code);
	if (set == PAPI_NULL)
		return 0;
	int armed = PAPI_profil(buckets, sizeof buckets, (vptr_t)buckets, 65536, set, code, TRIAL_THRESHOLD,
	                        PAPI_PROFIL_POSIX) == PAPI_OK;
	int worked = armed && start_and_stop(set);
	if (armed)
		(void)PAPI_profil(buckets, sizeof buckets, (vptr_t)buckets, 65536, set, code, 0, PAPI_PROFIL_POSIX);
	destroy_trial_set(&set);
	return worked;
}

/*
 * -c: try the event through the public API.  For every event this decides
 * the <NA> mark (PAPI_add_event fails), as in papi_native_avail.  For an
 * event PAPI alone classifies it also establishes:
 *   measured   PAPI_add_event, PAPI_start and PAPI_stop all work, so a real
 *              counter here counts it;
 *   ovf        the component delivers overflow by interrupt (hardware_intr)
 *              and PAPI_overflow arms it on a set that then starts and stops.
 *              Without hardware_intr PAPI emulates overflow with a timer the
 *              component may not service, and PAPI_overflow still returns
 *              PAPI_OK (papi-component-contract.md 4.2): nothing established;
 *   prof       likewise for PAPI_profil, with hardware_intr or kernel_profile.
 * Heritage facts are not second-guessed: a trial cannot add to them.
 */
static void run_trials(const struct component_listing *l, struct native_event *e)
{
	int set = create_trial_set(e->code);

	e->trial.added = set != PAPI_NULL;
	if (set == PAPI_NULL)
		return;
	/* Heritage events are only added: starting one can need a range
	 * (itanium2 refuses to start IA64_INST_RETIRED without one). */
	if (e->origin == FROM_PAPI)
		e->trial.counted = start_and_stop(set);
	destroy_trial_set(&set);
	if (!e->trial.counted)
		return;
	e->source = SOURCE_MEASURED;
	if (l->info->hardware_intr) {
		e->trial.overflowed = trial_overflow(e->code);
		if (e->trial.overflowed)
			e->caps |= PAPI_HERITAGE_CAP_OVERFLOW;
	}
	if (l->info->hardware_intr || l->info->kernel_profile) {
		e->trial.profiled = trial_profile(e->code);
		if (e->trial.profiled)
			e->caps |= PAPI_HERITAGE_CAP_PROFILE;
	}
}

/* ------------------------------------------------------------------ filters */

static int matches_name(const struct selection *sel, const char *symbol)
{
	for (size_t i = 0; i < sel->n_include; i++)
		if (!strstr(symbol, sel->include[i]))
			return 0;
	for (size_t i = 0; i < sel->n_exclude; i++)
		if (strstr(symbol, sel->exclude[i]))
			return 0;
	return 1;
}

static int matches_classification(const struct selection *sel, const struct native_event *e)
{
	if ((e->caps & sel->required_caps) != sel->required_caps)
		return 0;
	return sel->required_source == SOURCE_UNKNOWN || e->source == sel->required_source;
}

/* Whether -c trials could still make the event match: saves trying events
 * that a filter rules out anyway. */
static int could_match_after_trials(const struct selection *sel, const struct native_event *e)
{
	if (e->origin == FROM_HERITAGE_FACTS)
		return matches_classification(sel, e);
	if (sel->required_caps & ~(e->caps | TRIAL_CAPABILITIES))
		return 0;
	return sel->required_source == SOURCE_UNKNOWN || sel->required_source == SOURCE_MEASURED;
}

/* Filters that only -c can satisfy for events PAPI alone classifies. */
static int selection_needs_trials(const struct selection *sel)
{
	return (sel->required_caps & TRIAL_CAPABILITIES) || sel->required_source == SOURCE_MEASURED;
}

/* ------------------------------------------------------------------ output */

struct report {
	const struct settings *settings;
	json_object *json_events;     /* --json */
	size_t matched;
	size_t listed_in_component;
	size_t unclassified_without_check; /* non-heritage events a -c filter could not judge */
};

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
static const char *qualifier_of(const char *symbol)
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
static enum step_result report_event(struct report *r, const struct component_listing *l, const struct native_event *e,
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
static void print_header(const struct settings *s)
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

static int mechanisms_json(void)
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

static int mechanisms_text(void)
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
