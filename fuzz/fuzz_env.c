/*
 * Environment-variable values: every PAPI_HERITAGE_<COMPONENT>_<KNOB> whose
 * value is parsed, through the function that parses it, with the variable
 * set as a user would (and the copy heritage_env reads taken again); the
 * check of every known variable's value, and of unknown names.
 *
 * Input: a selector byte (the knob), then the value.  Invariants: a value
 * is taken or refused, and what is taken is in range.
 */
#include <errno.h>

#include "alpha/alpha_model.h"
#include "alpha/alpha_pmu.h"
#include "alpha/alpha_set.h"
#include "common/heritage_backend.h"
#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "fuzz.h"
#include "imc/imc_engine.h"
#include "imc/imc_sources.h"
#include "imc/imc_trace.h"
#include "paragon/rpm_fpe.h"
#include "paragon/rpm_model.h"
#include "profileme/pm_collect.h"
#include "rangemap/rangemap.h"

static void with_env(const char *name, const char *value)
{
	if (setenv(name, value, 1) != 0)
		abort();
	heritage_env_load();
}

static void without_env(const char *name)
{
	unsetenv(name);
	heritage_env_load();
}

/* 0, or -EINVAL with a message. */
static void check_verdict(int rc)
{
	FUZZ_CHECK(rc == 0 || (rc == -EINVAL && heritage_last_error()[0]), "%d '%s'", rc, heritage_last_error());
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	char *v = fuzz_cstr(data + 1, size - 1);
	switch (data[0] % 14) {
	case 0: {
		enum alpha_backend b;
		if (alpha_backend_parse(v, &b) == 0)
			FUZZ_CHECK(b == ALPHA_BACKEND_AUTO || b == ALPHA_BACKEND_SOFTWARE || b == ALPHA_BACKEND_PMU, "%d", b);
		break;
	}
	case 1: {
		enum alpha_os os;
		if (alpha_os_parse(v, &os) == 0)
			FUZZ_CHECK(os == ALPHA_OS_UNIX || os == ALPHA_OS_VMS || os == ALPHA_OS_NT, "%d", os);
		break;
	}
	case 2: {
		struct rpm_mesh_shape m = { 0 };
		if (rpm_mesh_parse_shape(v, &m) == 0)
			FUZZ_CHECK(m.rows && m.cols && m.rows * m.cols <= RPM_MESH_MAX_NODES, "%ux%u", m.rows, m.cols);
		enum rpm_routing r;
		if (rpm_mesh_parse_routing(v, &r) == 0)
			FUZZ_CHECK(r == RPM_ROUTE_XY || r == RPM_ROUTE_YX, "%d", r);
		break;
	}
	case 3: {
		unsigned classes = ~0u;
		if (rpm_fpe_parse(v, &classes) == 0)
			FUZZ_CHECK(classes < 1u << RPM_FPE_NCLASSES, "%#x", classes);
		else
			FUZZ_CHECK(classes == 0, "refused, yet %#x", classes);
		break;
	}
	case 4: {
		struct imc_trace_config c;
		with_env("PAPI_HERITAGE_IMC_TRACE_HZ", v);
		with_env("PAPI_HERITAGE_IMC_TRACE_BUFFER_SIZE", v);
		if (imc_trace_config_default(&c) == 0)
			FUZZ_CHECK(c.hz >= 1 && c.hz <= IMC_TRACE_HZ_MAX && c.buffersize <= IMC_SCOM_BUFFERSIZE_MAX, "%u %u",
			           c.hz, c.buffersize);
		without_env("PAPI_HERITAGE_IMC_TRACE_HZ");
		without_env("PAPI_HERITAGE_IMC_TRACE_BUFFER_SIZE");
		break;
	}
	case 5: {
		with_env("PAPI_HERITAGE_IMC_NEST_HZ", v);
		uint64_t hz = imc_nest_hz();
		FUZZ_CHECK(hz >= 1000000ULL && hz <= 100000000000ULL, "%llu", (unsigned long long)hz);
		with_env("PAPI_HERITAGE_IMC_SPEED", v);
		FUZZ_CHECK(imc_speed_setting() < IMC_NSPEEDS, "speed");
		without_env("PAPI_HERITAGE_IMC_NEST_HZ");
		without_env("PAPI_HERITAGE_IMC_SPEED");
		break;
	}
	case 6: {
		with_env("PAPI_HERITAGE_ALPHA21064_CLOCK_MHZ", v);
		FUZZ_CHECK(alpha_set_nominal_hz() > 0, "a clock of 0 Hz");
		without_env("PAPI_HERITAGE_ALPHA21064_CLOCK_MHZ");
		break;
	}
	case 7: {
		/* PAPI_HERITAGE_ITANIUM2_MODE (it2_set_init's parser). */
		enum rangemap_mode m = (enum rangemap_mode)-1;
		int rc = rangemap_mode_parse(v, &m);
		FUZZ_CHECK(rc == -EINVAL || (rc == 0 && (m == RANGEMAP_COARSE || m == RANGEMAP_EXACT)), "%d %d", rc, m);
		break;
	}
	case 8: {
		unsigned n;
		const struct heritage_backend *t = pm_backends(&n);
		int i = heritage_backend_find(t, n, v);
		FUZZ_CHECK(i >= -1 && i < (int)n, "%d", i);
		with_env("PAPI_HERITAGE_PROFILEME_PERIOD", v);
		for (unsigned k = 0; k < n; k++) {
			uint64_t period = 0;
			char why[256];
			if (pm_period_for(&t[k], &period, why, sizeof why) == 0)
				FUZZ_CHECK(period > 0, "a period of 0");
		}
		without_env("PAPI_HERITAGE_PROFILEME_PERIOD");
		break;
	}
	case 9:
	case 10: {
		/* A known variable's value, checked: taken or refused with a
		 * message, and reload takes all or nothing. */
		const char *name = heritage_env_known(data[0] / 14, NULL);
		if (!name)
			break;
		char var[128];
		snprintf(var, sizeof var, "%s", name);
		with_env(var, v);
		check_verdict(heritage_env_check(NULL));
		int rc = heritage_env_reload();
		check_verdict(rc);
		without_env(var);
		break;
	}
	case 11: {
		/* An unknown name under PAPI_HERITAGE_: a typo of the nearest
		 * known one, or of none; never taken as valid. */
		char var[160];
		snprintf(var, sizeof var, "PAPI_HERITAGE_%.140s", v);
		if (strchr(var, '=') || setenv(var, "1", 1) != 0)
			break;
		heritage_env_load();
		int known = 0;
		for (unsigned i = 0; heritage_env_known(i, NULL); i++)
			known |= strcmp(heritage_env_known(i, NULL), var) == 0;
		int rc = heritage_env_check(NULL);
		check_verdict(rc);
		FUZZ_CHECK(known || rc == -EINVAL, "unknown %s taken", var);
		unsetenv(var);
		heritage_env_load();
		break;
	}
	default: {
		/* The knob's name itself, split at the first ':' into component
		 * and knob: whatever the caller passes, heritage_env reads a
		 * variable or nothing. */
		char *colon = strchr(v, ':');
		const char *knob = colon ? colon + 1 : "";
		if (colon)
			*colon = '\0';
		const char *r = heritage_env(v, knob);
		FUZZ_CHECK(!r || *r, "an empty value is no value");
		break;
	}
	}
	free(v);
	return 0;
}
