#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "imc/imc_backend.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int chosen_err;
static enum imc_backend_kind chosen = IMC_BACKEND_ENGINE;
static struct imc_sysfs *found;
static char chosen_why[512];

static void choose(void)
{
	const char *want = heritage_env("imc", "backend");
	if (want && *want && strcasecmp(want, "auto") && strcasecmp(want, "perf") && strcasecmp(want, "engine")) {
		chosen_err = -EINVAL;
		snprintf(chosen_why, sizeof chosen_why, "PAPI_HERITAGE_IMC_BACKEND=%s: not auto, perf or engine", want);
		return;
	}
	if (want && strcasecmp(want, "engine") == 0) {
		snprintf(chosen_why, sizeof chosen_why, "engine (PAPI_HERITAGE_IMC_BACKEND=engine)");
		return;
	}
	int forced = want && strcasecmp(want, "perf") == 0;
	int err = imc_sysfs_discover(NULL, &found);
	if (err == 0) {
		chosen = IMC_BACKEND_PERF;
		snprintf(chosen_why, sizeof chosen_why, "perf: the kernel's IMC PMUs under %s%s", found->devices,
		         forced ? " (PAPI_HERITAGE_IMC_BACKEND=perf)" : "");
	} else if (forced) {
		/* Insisted on: every event then says why it cannot count. */
		chosen = IMC_BACKEND_PERF;
		snprintf(chosen_why, sizeof chosen_why, "perf (PAPI_HERITAGE_IMC_BACKEND=perf), but %s",
		         heritage_last_error());
	} else {
		snprintf(chosen_why, sizeof chosen_why, "engine: %s", heritage_last_error());
	}
}

int imc_backend_get(enum imc_backend_kind *kind, const struct imc_sysfs **pmus, char *why, size_t len)
{
	pthread_once(&once, choose);
	if (why && len)
		snprintf(why, len, "%s", chosen_why);
	if (chosen_err)
		return heritage_fail_msg(chosen_err, chosen_why);
	*kind = chosen;
	if (pmus)
		*pmus = found;
	return 0;
}

int imc_backend_perf_event(const struct imc_cat_unit *u, const struct imc_cat_entry *e,
                           const struct imc_sysfs_pmu **pmu, const struct imc_sysfs_event **ev, char *why,
                           size_t len)
{
	enum imc_backend_kind kind = IMC_BACKEND_ENGINE;
	const struct imc_sysfs *s = NULL;
	char reason[512];
	int err = imc_backend_get(&kind, &s, reason, sizeof reason);
	if (err || kind != IMC_BACKEND_PERF || !s) {
		snprintf(why, len, "%s", reason);
		return err ? err : -ENOENT;
	}
	const char *event = strstr(e->name, "::");
	event = event ? event + 2 : e->name;
	*pmu = imc_sysfs_pmu_find(s, u->pmu);
	*ev = *pmu ? imc_sysfs_event_find(*pmu, event) : NULL;
	if (!*pmu) {
		snprintf(why, len, "the kernel has no %s PMU under %s", u->pmu, s->devices);
		return -ENOENT;
	}
	if (!*ev) {
		snprintf(why, len, "the kernel's %s PMU has no event %s (%s/events)", u->pmu, event, (*pmu)->dir);
		return -ENOENT;
	}
	return imc_sysfs_usable(*pmu, why, len);
}
