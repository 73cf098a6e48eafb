/*
 * last_error: papi_heritage_last_error() says why this thread's last heritage
 * call failed, and a call that succeeds clears it (issue 15: it used to keep
 * an old reason forever).
 *
 *   - a wrong event name fails with a reason naming it; the next add that
 *     works leaves "";
 *   - a conflicting add (itanium2 :exact=0 beside :exact=1) keeps its
 *     reason although PAPI re-establishes the set with a second, successful
 *     update_control_state inside the same call;
 *   - a bad range (start above end) fails with a reason; a good one clears;
 *   - the reason is per thread: another thread's failure is not ours.
 * Nothing here needs a backend: no set is started.
 */
#include <pthread.h>

#include "heritage_test.h"

static char buf[64];

static void *other_thread_fails(void *arg)
{
	(void)arg;
	CHECK_PAPI(PAPI_register_thread());
	unsigned code;
	int rc = PAPI_event_name_to_code("itanium2:::OTHER_THREADS_BAD_EVENT", (int *)&code);
	EXPECT(rc != PAPI_OK, "a wrong name was accepted in the other thread");
	EXPECT(strstr(papi_heritage_last_error(), "OTHER_THREADS_BAD_EVENT") != NULL,
	       "the other thread's reason: '%s'", papi_heritage_last_error());
	CHECK_PAPI(PAPI_unregister_thread());
	return NULL;
}

int main(void)
{
	heritage_test_init();
	CHECK_PAPI(PAPI_thread_init(pthread_self));
	int set = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&set));

	int rc = PAPI_add_named_event(set, "itanium2:::NO_SUCH_EVENT_HERE");
	printf("bad name: %s; last error: %s\n", PAPI_strerror(rc), papi_heritage_last_error());
	EXPECT(rc != PAPI_OK, "a wrong event name was accepted");
	EXPECT(strstr(papi_heritage_last_error(), "NO_SUCH_EVENT_HERE") != NULL, "the reason does not name the event");
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::IA64_INST_RETIRED:exact=1"));
	printf("good add: last error '%s'\n", papi_heritage_last_error());
	EXPECT(papi_heritage_last_error()[0] == '\0', "a successful add left '%s'", papi_heritage_last_error());

	rc = PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED:exact=0");
	printf("conflicting add: %s; last error: %s\n", PAPI_strerror(rc), papi_heritage_last_error());
	EXPECT(rc != PAPI_OK, "an :exact=0 event was added beside an :exact=1 one");
	EXPECT(strstr(papi_heritage_last_error(), "exact") != NULL,
	       "PAPI's re-establishing update cleared the conflict's reason: '%s'", papi_heritage_last_error());
	int n = 0;
	CHECK_PAPI(PAPI_list_events(set, NULL, &n));
	EXPECT_EQ("events left in the set", n, 1);

	PAPI_option_t opt;
	rc = heritage_test_range(set, PAPI_DATA_ADDRESS, buf + 32, buf, &opt);
	printf("start above end: %s; last error: %s\n", PAPI_strerror(rc), papi_heritage_last_error());
	EXPECT(rc != PAPI_OK, "a range with start above end was accepted");
	EXPECT(papi_heritage_last_error()[0] != '\0', "no reason for a bad range");
	int loads = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&loads));
	CHECK_PAPI(PAPI_add_named_event(loads, "itanium2:::LOADS_RETIRED:exact=1"));
	CHECK_PAPI(heritage_test_range(loads, PAPI_DATA_ADDRESS, buf, buf + 32, &opt));
	EXPECT(papi_heritage_last_error()[0] == '\0', "a good range left '%s'", papi_heritage_last_error());

	pthread_t th;
	if (pthread_create(&th, NULL, other_thread_fails, NULL) == 0)
		pthread_join(th, NULL);
	EXPECT(papi_heritage_last_error()[0] == '\0', "another thread's failure shows here: '%s'",
	       papi_heritage_last_error());

	CHECK_PAPI(PAPI_cleanup_eventset(loads));
	CHECK_PAPI(PAPI_destroy_eventset(&loads));
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
	PAPI_shutdown();
	return heritage_test_done("last_error");
}
