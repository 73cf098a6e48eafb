/*
 * Tiny harness for the ctests: they talk to libpapi through the public API
 * only, and exit 0 (pass), 1 (fail) or 77 (skip, with the reason printed).
 */
#ifndef HERITAGE_TEST_H
#define HERITAGE_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <papi.h>
#include "papi_heritage.h"
#include "test_expect.h"

#define CHECK_PAPI(call)                                                                           \
	do {                                                                                       \
		int rc_ = (call);                                                                  \
		if (rc_ != PAPI_OK) {                                                              \
			fprintf(stderr, "%s:%d: %s = %d (%s) %s\n", __FILE__, __LINE__, #call, rc_, \
			        PAPI_strerror(rc_), papi_heritage_last_error());                   \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* rpm_time's unit, 10 MHz ticks, from the clock it reads (CLOCK_BOOTTIME):
 * the tests' own reading to compare it with. */
static inline long long heritage_test_boot_ticks(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (long long)ts.tv_sec * 10000000LL + ts.tv_nsec / 100;
}

/* An FP64 event's value: a double in the long long's bits. */
static inline double heritage_test_as_double(long long v)
{
	double d;
	memcpy(&d, &v, sizeof d);
	return d;
}

/* PAPI_set_opt(PAPI_DATA_ADDRESS or PAPI_INSTR_ADDRESS) of [start, end) on
 * set; its code, and *opt holds the start_off / end_off it returned. */
static inline int heritage_test_range(int set, int code, const void *start, const void *end, PAPI_option_t *opt)
{
	memset(opt, 0, sizeof *opt);
	opt->addr.eventset = set;
	opt->addr.start = (vptr_t)(uintptr_t)start;
	opt->addr.end = (vptr_t)(uintptr_t)end;
	return PAPI_set_opt(code, opt);
}

/* A test that needs a backend asks the probes (through the component's own
 * backend table) and skips with their reason where its mechanisms are dead,
 * absent or refused: it then never counts, so it can neither fail wrongly
 * nor pass on a silent zero.  After PAPI_library_init. */
static inline void heritage_test_require_backend(const char *component, const char *backend)
{
	char why[1024];
	if (!backend || !*backend || strcmp(backend, "auto") == 0 || strcmp(backend, "instrument") == 0)
		return;
	int rc = papi_heritage_backend_usable(component, backend, why, sizeof why);
	if (rc == PAPI_EINVAL) {
		fprintf(stderr, "%s: no backend '%s' (%s)\n", component, backend, why);
		exit(1);
	}
	if (rc != PAPI_OK) {
		printf("SKIPPED: the %s backend of %s cannot count here (%s): %s\n", backend, component,
		       PAPI_strerror(rc), why);
		exit(77);
	}
}

/* A mechanism a test needs directly (not through a backend table). */
static inline void heritage_test_require_mechanism(const char *name)
{
	struct papi_heritage_mechanism m;
	int i = papi_heritage_mechanism_index(name);
	if (i < 0 || papi_heritage_mechanism(i, &m) != PAPI_OK) {
		fprintf(stderr, "no mechanism called %s\n", name);
		exit(1);
	}
	if (m.state != PAPI_HERITAGE_MECH_WORKS) {
		printf("SKIPPED: needs %s, which is %s here: %s%s%s\n", name,
		       m.refused ? "refused" : m.state == PAPI_HERITAGE_MECH_DEAD ? "dead" : "absent", m.evidence,
		       m.refused ? "; allowed by " : "", m.refused ? m.allowed_by : "");
		exit(77);
	}
}

/* The backend PAPI_HERITAGE_ITANIUM2_BACKEND forces, and the one a test
 * was told to expect (DATA_RANGE_EXPECT_BACKEND), must both work here. */
static inline void heritage_test_require_itanium2_env(void)
{
	heritage_test_require_backend("itanium2", getenv("PAPI_HERITAGE_ITANIUM2_BACKEND"));
	heritage_test_require_backend("itanium2", getenv("DATA_RANGE_EXPECT_BACKEND"));
}

/* Built with the instrument hooks (gcc and clang define this under
 * -fsanitize=kernel-address too): the instrument backend counts, no
 * mechanism needed.  Otherwise the trap backends must work here.  Not
 * under the real AddressSanitizer of a sanitized build (configure
 * --enable-sanitize defines HERITAGE_SANITIZE): its checks call ASan's
 * runtime, never our hooks. */
#if defined(HERITAGE_SANITIZE)
#elif defined(__SANITIZE_ADDRESS__)
#define HERITAGE_TEST_INSTRUMENTED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HERITAGE_TEST_INSTRUMENTED 1
#endif
#endif
#ifndef HERITAGE_TEST_INSTRUMENTED
#define HERITAGE_TEST_INSTRUMENTED 0
#endif

static inline void heritage_test_init(void)
{
	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	if (rc != PAPI_VER_CURRENT) {
		fprintf(stderr, "PAPI_library_init: %d (%s)\n", rc, PAPI_strerror(rc));
		exit(1);
	}
	if (PAPI_get_component_index("itanium2") < 0) {
		fprintf(stderr, "the itanium2 component is not compiled into this libpapi\n");
		exit(1);
	}
	heritage_test_require_itanium2_env();
}

#endif
