/*
 * The profile-database reader (pm_db.c): one image file of a profile, as
 * dcpiprof, dcpilist and dcpicat read it (pm_db_parse, the bytes of what
 * pm_db_load reads).  Invariants of a profile read: rows in ascending PC
 * order, every column's rows summing to its total, and a value computed for
 * every column without fault.
 */
#include "fuzz.h"
#include "profileme/pm_db.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pm_db_profile *p = NULL;
	char why[512];
	if (pm_db_parse((const char *)data, size, "fuzz_profile", &p, why, sizeof why) != 0)
		return 0;
	FUZZ_CHECK(p->ncols >= 1 && p->period > 0 && p->unit, "%u columns, period %llu", p->ncols,
	           (unsigned long long)p->period);
	for (size_t r = 1; r < p->nrows; r++)
		FUZZ_CHECK(p->pc[r - 1] < p->pc[r], "row %zu: PC %#llx after %#llx", r, (unsigned long long)p->pc[r],
		           (unsigned long long)p->pc[r - 1]);
	for (unsigned c = 0; c < p->ncols; c++) {
		uint64_t sum = 0;
		for (size_t r = 0; r < p->nrows; r++)
			sum += p->v[r * p->ncols + c];
		FUZZ_CHECK(sum == p->col[c].total, "column %u sums to %llu, total %llu", c, (unsigned long long)sum,
		           (unsigned long long)p->col[c].total);
		for (long r = -1; r < (long)p->nrows && r < 64; r++)
			pm_db_value(p, r, &p->col[c].value);
	}
	pm_db_free(p);
	return 0;
}
