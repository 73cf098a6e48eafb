/*
 * The ProfileMe sample-set grammar (pm_sampleset.c): the columns of the
 * tools (pm_columns_parse) and one value, a PAPI event's name
 * (pm_value_parse).  Invariant: the canonical text of what parses parses
 * back to the same thing, and formats to the same text again.
 */
#include "fuzz.h"
#include "profileme/pm_sampleset.h"

static int value_eq(const struct pm_value *a, const struct pm_value *b)
{
	return a->set.must1 == b->set.must1 && a->set.must0 == b->set.must0 && a->counter == b->counter;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	char why[512], buf[4096], again[4096];
	struct pm_value v, w;
	if (pm_value_parse(text, &v, why, sizeof why) == 0) {
		FUZZ_CHECK(!(v.set.must1 & v.set.must0), "\"%s\": a field both 1 and 0", text);
		int n = pm_value_format(&v, buf, sizeof buf);
		FUZZ_CHECK(n > 0 && (size_t)n < sizeof buf, "\"%s\": format %d", text, n);
		FUZZ_CHECK(pm_value_parse(buf, &w, why, sizeof why) == 0, "\"%s\" -> \"%s\" does not parse: %s", text, buf,
		           why);
		FUZZ_CHECK(value_eq(&v, &w), "\"%s\" -> \"%s\" parses to another value", text, buf);
		pm_value_format(&w, again, sizeof again);
		FUZZ_CHECK(strcmp(buf, again) == 0, "\"%s\" -> \"%s\" -> \"%s\"", text, buf, again);
	}
	struct pm_columns c, d;
	if (pm_columns_parse(text, &c, why, sizeof why) == 0) {
		FUZZ_CHECK(c.n >= 1 && c.n <= PM_MAX_COLUMNS, "%u columns", c.n);
		for (unsigned i = 0; i < c.n; i++) {
			int n = pm_column_format(&c.col[i], buf, sizeof buf);
			FUZZ_CHECK(n > 0 && (size_t)n < sizeof buf, "column %u: format %d", i, n);
			FUZZ_CHECK(pm_columns_parse(buf, &d, why, sizeof why) == 0 && d.n == 1, "column \"%s\": %s", buf, why);
			FUZZ_CHECK(value_eq(&c.col[i].num, &d.col[0].num) && c.col[i].ratio == d.col[0].ratio &&
			           (!c.col[i].ratio || value_eq(&c.col[i].den, &d.col[0].den)),
			           "column \"%s\" parses to another column", buf);
		}
	}
	free(text);
	return 0;
}
