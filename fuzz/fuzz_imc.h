/*
 * What fuzz_imc_dtb and fuzz_imc_dir check of a catalog they read.
 */
#ifndef HERITAGE_FUZZ_IMC_H
#define HERITAGE_FUZZ_IMC_H

#include <strings.h>

#include "fuzz.h"
#include "imc/imc_catalog.h"

/* Every entry's unit and event indices are in range, its value is unit reg
 * + event reg, and its name is found again by imc_catalog_find. */
static void fuzz_imc_check_catalog(const struct imc_catalog *cat)
{
	for (unsigned i = 0; i < cat->nentries; i++) {
		const struct imc_cat_entry *e = &cat->entries[i];
		FUZZ_CHECK(e->unit < cat->nunits, "entry %u: unit %u of %u", i, e->unit, cat->nunits);
		const struct imc_cat_unit *u = &cat->units[e->unit];
		FUZZ_CHECK(u->list < cat->nlists, "unit %u: list %u of %u", e->unit, u->list, cat->nlists);
		const struct imc_cat_list *l = &cat->lists[u->list];
		FUZZ_CHECK(e->event < l->nevents, "entry %u: event %u of %u", i, e->event, l->nevents);
		FUZZ_CHECK(e->value == (uint64_t)u->reg + l->events[e->event].reg, "entry %u: value", i);
		int k = imc_catalog_find(cat, e->name, strlen(e->name));
		FUZZ_CHECK(k >= 0 && strcasecmp(cat->entries[k].name, e->name) == 0, "\"%s\" not found again", e->name);
	}
}

#endif
