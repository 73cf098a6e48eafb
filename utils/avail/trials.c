/*
 * papi_heritage_avail: classifying an event (heritage facts, enumeration
 * modifiers, -c trials through the public API) and the filters.
 */
#include <string.h>

#include "avail.h"

/* Large enough that no overflow fires between a trial's start and stop. */
#define TRIAL_THRESHOLD 1000000000

/* The capabilities a non-heritage event can gain only from -c trials. */
#define TRIAL_CAPABILITIES (PAPI_HERITAGE_CAP_OVERFLOW | PAPI_HERITAGE_CAP_PROFILE)

/* ----------------------------------------------------------- classification */

/* What needs no trial: a heritage component's own facts, or else what the
 * enumeration modifiers said (and "unknown" for the source). */
void classify_event(const struct component_listing *l, struct native_event *e)
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
 *              PAPI_OK (doc/papi-contract.md 4.2): nothing established;
 *   prof       likewise for PAPI_profil, with hardware_intr or kernel_profile.
 * Heritage facts are not second-guessed: a trial cannot add to them.
 */
void run_trials(const struct component_listing *l, struct native_event *e)
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

int matches_name(const struct selection *sel, const char *symbol)
{
	for (size_t i = 0; i < sel->n_include; i++)
		if (!strstr(symbol, sel->include[i]))
			return 0;
	for (size_t i = 0; i < sel->n_exclude; i++)
		if (strstr(symbol, sel->exclude[i]))
			return 0;
	return 1;
}

int matches_classification(const struct selection *sel, const struct native_event *e)
{
	if ((e->caps & sel->required_caps) != sel->required_caps)
		return 0;
	return sel->required_source == SOURCE_UNKNOWN || e->source == sel->required_source;
}

/* Whether -c trials could still make the event match: saves trying events
 * that a filter rules out anyway. */
int could_match_after_trials(const struct selection *sel, const struct native_event *e)
{
	if (e->origin == FROM_HERITAGE_FACTS)
		return matches_classification(sel, e);
	if (sel->required_caps & ~(e->caps | TRIAL_CAPABILITIES))
		return 0;
	return sel->required_source == SOURCE_UNKNOWN || sel->required_source == SOURCE_MEASURED;
}

/* Filters that only -c can satisfy for events PAPI alone classifies. */
int selection_needs_trials(const struct selection *sel)
{
	return (sel->required_caps & TRIAL_CAPABILITIES) || sel->required_source == SOURCE_MEASURED;
}
