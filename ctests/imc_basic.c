/*
 * imc's names through PAPI's public API: every (unit, event) pair of the
 * built-in catalog is enumerated under imc::: (621 = the sum over the 44
 * units of src/imc/facts/power9-units.csv of the size of each one's
 * events list in power9-events.csv), "<pmu>::<EVENT>" and :cpu=N resolve
 * and print back, and the error rule holds: an unknown name is
 * PAPI_ENOEVNT, naming the nearest catalog names; a bad :cpu PAPI_EINVAL.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heritage_test.h"

#define CATALOG_EVENTS 621

int main(void)
{
	int rc, code, cidx;
	char name[PAPI_MAX_STR_LEN];

	if ((rc = PAPI_library_init(PAPI_VER_CURRENT)) != PAPI_VER_CURRENT) {
		fprintf(stderr, "PAPI_library_init: %d\n", rc);
		return 1;
	}
	cidx = PAPI_get_component_index("imc");
	EXPECT(cidx >= 0, "no imc component (%d)", cidx);

	/* Enumeration: every event once, names "<pmu>::<EVENT>". */
	int n = 0, nest = 0, core = 0, thread = 0, trace = 0;
	code = PAPI_NATIVE_MASK;
	rc = PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST, cidx);
	while (rc == PAPI_OK) {
		CHECK_PAPI(PAPI_event_code_to_name(code, name));
		n++;
		nest += strncmp(name, "imc:::nest_", 11) == 0;
		core += strncmp(name, "imc:::core_imc::", 16) == 0;
		thread += strncmp(name, "imc:::thread_imc::", 18) == 0;
		trace += strncmp(name, "imc:::trace_imc::", 17) == 0;
		rc = PAPI_enum_cmp_event(&code, PAPI_ENUM_EVENTS, cidx);
	}
	/* CSV: CORE 249 events, THREAD 61, TRACE_IMC 1, the rest nest. */
	EXPECT(n == CATALOG_EVENTS, "imc enumerates %d events, the catalog has %d", n, CATALOG_EVENTS);
	EXPECT(core == 249 && thread == 61 && trace == 1 && nest == CATALOG_EVENTS - 311,
	       "nest %d core %d thread %d trace %d", nest, core, thread, trace);

	/* Names and qualifiers round-trip through PAPI. */
	const char *names[] = { "imc:::nest_mcs01_imc::PM_MCS01_64B_RD_DISP_PORT01:cpu=0",
		                "imc:::core_imc::CPM_CCYC:cpu=0", "imc:::thread_imc::CPM_CS_32MHZ_CYC_USER",
		                "imc:::trace_imc::trace_cycles" };
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
		CHECK_PAPI(PAPI_event_name_to_code(names[i], &code));
		CHECK_PAPI(PAPI_event_code_to_name(code, name));
		EXPECT(strcmp(name, names[i]) == 0, "%s came back as %s", names[i], name);
	}
	PAPI_event_info_t info;
	CHECK_PAPI(PAPI_event_name_to_code("imc:::nest_xlink0_imc::PM_XLINK0_OUT_EVEN_CYC", &code));
	CHECK_PAPI(PAPI_get_event_info(code, &info));
	EXPECT(strstr(info.units, "scale 4096") != NULL, "xlink0 units '%s', want scale 4096", info.units);
	EXPECT(strstr(info.long_descr, "event=0x118/") != NULL, "xlink0 description '%s' lacks event=0x118",
	       info.long_descr);

	/* The error rule. */
	rc = PAPI_event_name_to_code("imc:::thread_imc::CPM_CS_INST", &code);
	EXPECT(rc == PAPI_ENOEVNT, "an older catalog's name gave %d, want PAPI_ENOEVNT", rc);
	EXPECT(strstr(papi_heritage_last_error(), "thread_imc::CPM_CS_INST_USER") != NULL,
	       "no suggestion in '%s'", papi_heritage_last_error());
	printf("unknown name: %s\n", papi_heritage_last_error());
	int es = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&es));
	rc = PAPI_add_named_event(es, "imc:::NO_SUCH_EVENT");
	EXPECT(rc == PAPI_ENOEVNT, "unknown name gave %d, want PAPI_ENOEVNT", rc);
	snprintf(name, sizeof name, "imc:::core_imc::CPM_CCYC:cpu=%ld", sysconf(_SC_NPROCESSORS_CONF));
	rc = PAPI_event_name_to_code(name, &code);
	EXPECT(rc == PAPI_EINVAL || rc == PAPI_ENOEVNT, "%s gave %d, want an error", name, rc);
	printf("%s: %s\n", name, papi_heritage_last_error());
	return heritage_test_done("imc_basic");
}
