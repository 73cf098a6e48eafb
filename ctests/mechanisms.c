/*
 * mechanisms: backend choice follows the probes, through the public API only.
 *
 *   killed  PAPI_HERITAGE_PROBE_DISABLE=breakpoint,pmu,libpfm (set here):
 *           those mechanisms are absent and say so; a forced breakpoint
 *           backend is PAPI_ENOSUPP with the reason; auto counts one watched
 *           word exactly with the next backend; alpha21064's forced PMU
 *           backend is PAPI_ENOSUPP and auto takes single-stepping.
 *   dead    under LD_PRELOAD=ctests/dead_breakpoint.so, a
 *           breakpoint that opens and never fires (what the switch does not
 *           know): the probe finds it dead with evidence, forced is
 *           PAPI_ENOSUPP with that evidence, auto counts exactly elsewhere.
 *   refused where this account may not open perf events (perf_event_paranoid
 *           3/4, a seccomp profile; the CI passes under tests/no-perf): the
 *           breakpoint mechanism says refused and what would allow it; a
 *           forced breakpoint backend is PAPI_EPERM with that reason; auto
 *           counts exactly without it.  Skipped where perf events open.
 *
 * The counts are the workload's: N iterations of one load and one store of
 * the word (a read-modify-write instruction is one of each on every backend).
 */
#include <stdint.h>
#include <string.h>

#include "heritage_test.h"
#include "knob.h"

#define N 1000

static volatile long word __attribute__((aligned(8)));

static void work(void)
{
	for (int i = 0; i < N; i++)
		word = word + 1;
}

static struct papi_heritage_mechanism mechanism(const char *name)
{
	struct papi_heritage_mechanism m;
	int i = papi_heritage_mechanism_index(name);
	EXPECT(i >= 0, "no mechanism %s", name);
	memset(&m, 0, sizeof m);
	if (i >= 0)
		CHECK_PAPI(papi_heritage_mechanism(i, &m));
	return m;
}

static int word_set(void)
{
	int set = PAPI_NULL;
	PAPI_option_t opt;

	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_assign_eventset_component(set, PAPI_get_component_index("itanium2")));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED:exact=1"));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::STORES_RETIRED:exact=1"));
	memset(&opt, 0, sizeof opt);
	opt.addr.eventset = set;
	opt.addr.start = (vptr_t)&word;
	opt.addr.end = (vptr_t)(&word + 1);
	CHECK_PAPI(PAPI_set_opt(PAPI_DATA_ADDRESS, &opt));
	return set;
}

/* A forced breakpoint backend must be refused at PAPI_start with code want
 * and a reason that contains must_mention. */
static void forced_breakpoint_refused(int want, const char *must_mention)
{
	knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", "breakpoint");
	int set = word_set();
	int rc = PAPI_start(set);
	EXPECT(rc == want, "forced breakpoint: PAPI_start = %d (%s), want %d (%s)", rc, PAPI_strerror(rc), want,
	       PAPI_strerror(want));
	EXPECT(strstr(papi_heritage_last_error(), must_mention) != NULL, "forced breakpoint: reason '%s' does not "
	       "mention %s", papi_heritage_last_error(), must_mention);
	printf("forced breakpoint: %s: %s\n", PAPI_strerror(rc), papi_heritage_last_error());
	if (rc == PAPI_OK)
		PAPI_stop(set, NULL);
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
	knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", NULL);
}

static void auto_counts_exactly_without_breakpoint(void)
{
	char backend[32];
	long long v[2];

	heritage_test_require_backend("itanium2", "pagetrap");
	int set = word_set();
	CHECK_PAPI(PAPI_start(set));
	work();
	CHECK_PAPI(PAPI_stop(set, v));
	CHECK_PAPI(papi_heritage_itanium2_backend(set, backend, sizeof backend));
	EXPECT(strcmp(backend, "breakpoint") != 0, "auto chose the breakpoint backend");
	EXPECT_EQ("auto: loads of the word", v[0], N);
	EXPECT_EQ("auto: stores of the word", v[1], N);
	printf("auto: %s backend, %lld loads and %lld stores of the word (want %d each)\n", backend, v[0], v[1], N);
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
}

static void killed(void)
{
	static const char *const gone[] = { "breakpoint", "pmu", "libpfm" };
	for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
		struct papi_heritage_mechanism m = mechanism(gone[i]);
		EXPECT(m.state == PAPI_HERITAGE_MECH_ABSENT && m.disabled, "%s: state %d disabled %d", gone[i], m.state,
		       m.disabled);
		EXPECT(m.error == PAPI_ENOSUPP, "%s: error %d", gone[i], m.error);
	}
	forced_breakpoint_refused(PAPI_ENOSUPP, "PAPI_HERITAGE_PROBE_DISABLE");
	auto_counts_exactly_without_breakpoint();

	/* alpha21064: the PMU backend is gone, single-stepping remains. */
	char backend[32];
	int set = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&set));
	knob_set("PAPI_HERITAGE_ALPHA21064_BACKEND", "pmu");
	int rc = PAPI_add_named_event(set, "alpha21064:::LOAD_INSNS:width=12");
	EXPECT(rc == PAPI_ENOSUPP, "forced pmu: %d (%s)", rc, PAPI_strerror(rc));
	EXPECT(strstr(papi_heritage_last_error(), "PAPI_HERITAGE_PROBE_DISABLE") != NULL, "forced pmu: reason '%s'",
	       papi_heritage_last_error());
	knob_set("PAPI_HERITAGE_ALPHA21064_BACKEND", NULL);
	heritage_test_require_backend("alpha21064", "software");
	CHECK_PAPI(PAPI_add_named_event(set, "alpha21064:::LOAD_INSNS:width=12"));
	CHECK_PAPI(papi_heritage_alpha21064_backend(set, backend, sizeof backend));
	EXPECT(strcmp(backend, "software") == 0, "alpha21064 auto: backend %s, want software", backend);
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
}

static void dead(void)
{
	const char *preload = getenv("LD_PRELOAD");
	if (!preload || !strstr(preload, "dead_breakpoint")) {
		fprintf(stderr, "mechanisms dead: run with LD_PRELOAD=ctests/dead_breakpoint.so\n");
		exit(2);
	}
	/* The shim's stand-in is a perf event too: where this account may open
	 * none, the breakpoint is refused, not dead, and there is nothing to
	 * fake. */
	struct papi_heritage_mechanism sw = mechanism("perf_sw");
	if (sw.state != PAPI_HERITAGE_MECH_WORKS)
		SKIP("perf events are %s here, so the shim's dummy event cannot open either: %s",
		     sw.refused ? "refused" : "unavailable", sw.evidence);
	struct papi_heritage_mechanism m = mechanism("breakpoint");
	if (m.disabled)
		SKIP("PAPI_HERITAGE_PROBE_DISABLE killed the breakpoint mechanism before the shim could be seen: %s",
		     m.evidence);
	EXPECT(m.state == PAPI_HERITAGE_MECH_DEAD, "breakpoint under the shim: state %d (%s), want dead", m.state,
	       m.evidence);
	EXPECT(strstr(m.evidence, "counted 0 loads and 0 stores") != NULL, "evidence: %s", m.evidence);
	EXPECT(m.error == PAPI_ENOSUPP, "error %d", m.error);
	printf("breakpoint under the shim: dead: %s\n", m.evidence);
	forced_breakpoint_refused(PAPI_ENOSUPP, "counted 0 loads and 0 stores");
	auto_counts_exactly_without_breakpoint();
}

static void refused(void)
{
	struct papi_heritage_mechanism m = mechanism("breakpoint");
	if (!m.refused)
		SKIP("the debug registers are not refused to this account (breakpoint %s: %s): no refusal to test",
		     m.state == PAPI_HERITAGE_MECH_WORKS ? "works" : m.state == PAPI_HERITAGE_MECH_DEAD ? "dead" : "absent",
		     m.evidence);
	EXPECT(m.error == PAPI_EPERM, "refused breakpoint: error %d, want PAPI_EPERM", m.error);
	EXPECT(m.allowed_by[0] != '\0', "refused without saying what would allow it: %s", m.evidence);
	printf("breakpoint refused: %s; allowed by %s\n", m.evidence, m.allowed_by);

	/* The reason says what would allow it. */
	forced_breakpoint_refused(PAPI_EPERM, m.allowed_by);
	auto_counts_exactly_without_breakpoint();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "killed";
	/* Read when the probes first run: before PAPI initialises. */
	if (strcmp(mode, "killed") == 0)
		knob_set("PAPI_HERITAGE_PROBE_DISABLE", "breakpoint,pmu,libpfm");
	knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", NULL);
	unsetenv("DATA_RANGE_EXPECT_BACKEND");
	heritage_test_init();
	if (strcmp(mode, "killed") == 0)
		killed();
	else if (strcmp(mode, "dead") == 0)
		dead();
	else if (strcmp(mode, "refused") == 0)
		refused();
	else {
		fprintf(stderr, "usage: mechanisms killed|dead|refused\n");
		return 2;
	}
	PAPI_shutdown();
	return heritage_test_done(mode);
}
