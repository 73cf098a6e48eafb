/*
 * Every component's event-name and qualifier parser (common/heritage_event_name
 * through each facility's table: the itanium2 catalogue generated from
 * libpfm-3, paragon_rpm, alpha21064, the imc catalog's events, profileme's
 * sample sets), and the formatter that inverts it.
 *
 * Input: a selector byte (the component), then either the name (bit 7 of
 * the selector clear) or a 4-byte code (set).  Invariants: a name that
 * parses formats, and the formatted name parses to the same code; a code
 * that formats parses back to itself (format's -ENOENT is for codes parse
 * cannot give).
 */
#include <errno.h>

#include "alpha/alpha_events.h"
#include "fuzz.h"
#include "imc/imc_events.h"
#include "itanium2/it2_events.h"
#include "paragon/rpm_events.h"
#include "profileme/pm_events.h"

static int fmt_it2(unsigned c, char *b, size_t n) { return it2_event_format(c, b, (int)n); }
static int fmt_rpm(unsigned c, char *b, size_t n) { return rpm_event_format(c, b, (int)n); }

static const struct component {
	const char *name;
	int (*parse)(const char *, unsigned *);
	int (*format)(unsigned, char *, size_t);
} components[] = {
	{ "itanium2", it2_event_parse, fmt_it2 },
	{ "paragon_rpm", rpm_event_parse, fmt_rpm },
	{ "alpha21064", alpha_event_parse, alpha_event_format },
	{ "imc", imc_event_parse, imc_event_format },
	{ "profileme", pm_event_parse, pm_event_format },
};
#define NCOMPONENTS (sizeof components / sizeof components[0])

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	char why[512];
	/* The built-in POWER9 catalog, read once as in a process using PAPI. */
	if (imc_events_init(why, sizeof why) != 0) {
		fprintf(stderr, "fuzz_event_name: imc: %s\n", why);
		abort();
	}
	return 0;
}

static void round_trip(const struct component *c, unsigned code, const char *from)
{
	char buf[1024];
	int rc = c->format(code, buf, sizeof buf);
	FUZZ_CHECK(rc == 0 || rc == -ENOENT, "%s: format(%#x) = %d", c->name, code, rc);
	if (rc)
		return;
	FUZZ_CHECK(strlen(buf) < sizeof buf, "%s: format overran", c->name);
	unsigned again = ~code;
	rc = c->parse(buf, &again);
	/* profileme registers sets as they are named: a full registry may
	 * refuse a new one, never one it has. */
	FUZZ_CHECK(rc == 0, "%s: \"%s\" (from %s) does not parse back: %d", c->name, buf, from, rc);
	FUZZ_CHECK(again == code, "%s: \"%s\" (from %s) parses to %#x, not %#x", c->name, buf, from, again, code);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const struct component *c = &components[(data[0] & 0x7f) % NCOMPONENTS];
	if (data[0] & 0x80) {
		if (size < 5)
			return 0;
		unsigned code;
		memcpy(&code, data + 1, sizeof code);
		round_trip(c, code, "a code");
		return 0;
	}
	char *name = fuzz_cstr(data + 1, size - 1);
	unsigned code = 0;
	int rc = c->parse(name, &code);
	FUZZ_CHECK(rc == 0 || rc == -ENOENT || rc == -EINVAL || rc == -ENOSPC, "%s: parse(\"%s\") = %d", c->name, name,
	           rc);
	if (rc == 0)
		round_trip(c, code, name);
	free(name);
	return 0;
}
