/*
 * imc through PAPI's public API: THREAD_CPU_NS counts a busy loop's CPU
 * time (start/read/stop), and adding the nest event, unavailable off POWER9,
 * fails with a PAPI error.
 */
#include <stdio.h>
#include <stdlib.h>

#include "heritage_test.h"

int main(void)
{
	int es = PAPI_NULL, rc;
	long long v[1], r[1];

	if ((rc = PAPI_library_init(PAPI_VER_CURRENT)) != PAPI_VER_CURRENT) {
		fprintf(stderr, "PAPI_library_init: %d\n", rc);
		return 1;
	}
	CHECK_PAPI(PAPI_create_eventset(&es));
	CHECK_PAPI(PAPI_add_named_event(es, "imc:::THREAD_CPU_NS"));
	CHECK_PAPI(PAPI_start(es));
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < 50000000ul; i++)
		x += i;
	CHECK_PAPI(PAPI_read(es, r));
	CHECK_PAPI(PAPI_stop(es, v));
	EXPECT(r[0] > 0, "THREAD_CPU_NS read %lld, want > 0", r[0]);
	EXPECT(v[0] >= r[0], "THREAD_CPU_NS stopped at %lld, below the read %lld", v[0], r[0]);

	struct papi_heritage_event_facts facts;
	int code;
	CHECK_PAPI(PAPI_event_name_to_code("imc:::THREAD_CPU_NS", &code));
	CHECK_PAPI(papi_heritage_event_facts(code, &facts));
	EXPECT(facts.source == PAPI_HERITAGE_MEASURED, "THREAD_CPU_NS source %d", (int)facts.source);

	int es2 = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&es2));
	rc = PAPI_add_named_event(es2, "imc:::PM_MCS01_64B_RD_DISP_PORT01");
	EXPECT(rc < 0, "adding the unavailable nest event gave %d, want a PAPI error", rc);
	printf("nest event refused: %s (%s)\n", PAPI_strerror(rc), papi_heritage_last_error());
	rc = PAPI_add_named_event(es2, "imc:::NO_SUCH_EVENT");
	EXPECT(rc == PAPI_ENOEVNT, "unknown name gave %d, want PAPI_ENOEVNT", rc);
	printf("THREAD_CPU_NS %lld ns (read %lld)\n", v[0], r[0]);
	return heritage_test_done("imc_basic");
}
