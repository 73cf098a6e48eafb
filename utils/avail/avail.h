/*
 * papi_heritage_avail's pieces (utils/avail/): options.c parses the command
 * line and holds the vocabularies, events.c enumerates components' events,
 * trials.c classifies them (heritage facts, enumeration modifiers, -c
 * trials) and applies the filters, output.c prints them as text or JSON,
 * mechanisms.c answers --mechanisms; utils/papi_heritage_avail.c walks the
 * components and holds main().  Only <papi.h> and <papi_heritage.h> are used.
 */
#ifndef PAPI_HERITAGE_AVAIL_H
#define PAPI_HERITAGE_AVAIL_H

#include <stddef.h>

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
extern const struct capability capabilities[];
extern const size_t n_capabilities;
#define N_CAPABILITIES n_capabilities

/* Where an event's value comes from (doc/architecture.md), plus "not established". */
enum event_source {
	SOURCE_UNKNOWN = 0,
	SOURCE_MEASURED,
	SOURCE_MODELLED,
	SOURCE_UNAVAILABLE,
};

struct source_name {
	const char *name;    /* filter option without "--", column and --json token */
	const char *help;
};
#define N_SOURCES ((size_t)SOURCE_UNAVAILABLE + 1)
extern const struct source_name sources[N_SOURCES];

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

/* How a step of the listing ended. */
enum step_result { DONE, USAGE_ERROR, OUT_OF_MEMORY };

enum parse_result { PARSE_OK, PARSE_HELP, PARSE_ERROR };

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

struct report {
	const struct settings *settings;
	json_object *json_events;     /* --json */
	size_t matched;
	size_t listed_in_component;
	size_t unclassified_without_check; /* non-heritage events a -c filter could not judge */
};

/* options.c */
enum event_source source_from_heritage(enum papi_heritage_source source);
__attribute__((format(printf, 1, 2))) int usage_error(const char *format, ...);
__attribute__((format(printf, 1, 2))) enum step_result usage_error_step(const char *format, ...);
int settings_init(struct settings *s, int argc);
void settings_free(struct settings *s);
enum parse_result parse_args(int argc, char **argv, struct settings *s);

/* events.c */
int select_components(const struct selection *sel, unsigned char *selected, int n_components);
int component_is_enumerable(const PAPI_component_info_t *info);
int open_listing(struct component_listing *l, int cid);
void close_listing(struct component_listing *l);

/* trials.c */
void classify_event(const struct component_listing *l, struct native_event *e);
void run_trials(const struct component_listing *l, struct native_event *e);
int matches_name(const struct selection *sel, const char *symbol);
int matches_classification(const struct selection *sel, const struct native_event *e);
int could_match_after_trials(const struct selection *sel, const struct native_event *e);
int selection_needs_trials(const struct selection *sel);

/* output.c */
const char *qualifier_of(const char *symbol);
enum step_result report_event(struct report *r, const struct component_listing *l, const struct native_event *e,
                              const PAPI_event_info_t *info, int detailed);
void print_header(const struct settings *s);

/* mechanisms.c */
int mechanisms_json(void);
int mechanisms_text(void);

#endif
