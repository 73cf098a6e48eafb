/*
 * Who needs which mechanism, read off the facilities' own backend tables so
 * that a listing cannot disagree with the choice it describes.
 */
#include <stdio.h>
#include <string.h>

#include "alpha/alpha_pmu.h"
#include "common/heritage_backend.h"
#include "common/heritage_probe.h"
#include "profileme/pm_collect.h"
#include "watch/watch.h"

/* paragon_rpm has no backends to choose between: each of these events, or
 * uses, needs its mechanisms (rpm_perf.c opens them system-wide). */
static const struct {
	unsigned needs;
	const char *users;
} paragon_uses[] = {
	{ HERITAGE_MECH_BIT(HERITAGE_MECH_PERF_CPU),
	  "paragon_rpm rpms_dat, rpms_ptenotp, rpms_ptenotu, rpms_it (in this process)" },
	{ HERITAGE_MECH_BIT(HERITAGE_MECH_TRACEFS) | HERITAGE_MECH_BIT(HERITAGE_MECH_TRACEPOINT), "paragon_rpm rpms_it" },
	{ HERITAGE_MECH_BIT(HERITAGE_MECH_RPM_WRITABLE), "paragon_rpm rpm_map_writable() and register resets" },
};

static void add(char *buf, size_t len, const char *fmt_a, const char *b)
{
	size_t used = strlen(buf);
	if (used < len)
		snprintf(buf + used, len - used, "%s%s%s", used ? "; " : "", fmt_a, b);
}

static void add_table(char *buf, size_t len, const char *facility, const struct heritage_backend *t, unsigned n,
                      enum heritage_mech m)
{
	for (unsigned i = 0; i < n; i++) {
		if (!(t[i].needs & HERITAGE_MECH_BIT(m)))
			continue;
		char who[96];
		snprintf(who, sizeof who, "%s backend ", facility);
		add(buf, len, who, t[i].name);
	}
}

void heritage_mech_users(enum heritage_mech m, char *buf, size_t len)
{
	unsigned n;
	const struct heritage_backend *t;

	buf[0] = '\0';
	t = watch_backend_table(&n);
	add_table(buf, len, "itanium2", t, n, m);
	t = alpha_backend_table(0, &n);
	add_table(buf, len, "alpha21064", t, n, m);
	t = pm_backends(&n);
	add_table(buf, len, "profileme", t, n, m);
	for (size_t i = 0; i < sizeof paragon_uses / sizeof paragon_uses[0]; i++)
		if (paragon_uses[i].needs & HERITAGE_MECH_BIT(m))
			add(buf, len, "", paragon_uses[i].users);
}
