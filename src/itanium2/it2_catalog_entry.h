/*
 * One Itanium 2 event as libpfm-3 describes it (src/libpfm-3.y/lib/
 * itanium2_events.h of PAPI 7.0.0's source, turned into it2_catalog.c by
 * gen-it2-catalog and kept here, as PAPI 7.2.0 no longer has libpfm-3).
 * What this project does with the event is it2_events.c's business.
 */
#ifndef HERITAGE_IT2_CATALOG_ENTRY_H
#define HERITAGE_IT2_CATALOG_ENTRY_H

#include "itanium2/it2_catalog.h" /* enum it2_cat, IT2C_N (generated, kept) */

/* pme_qualifiers bits 0-2 (pfmlib_itanium2_priv.h, pme_ita2_qualifiers_t). */
#define IT2_QUAL_IAR 0x1u /* instruction address range */
#define IT2_QUAL_OPM 0x2u /* opcode match */
#define IT2_QUAL_DAR 0x4u /* data address range */

/* pme_type, bits 8-10 of the entry code (pfmlib_itanium2_priv.h). */
enum it2_cat_type {
	IT2_TYPE_NORMAL = 0,
	IT2_TYPE_BTB = 1,
	IT2_TYPE_IEAR_TLB = 2,
	IT2_TYPE_IEAR_CACHE = 3,
	IT2_TYPE_DEAR_TLB = 4,
	IT2_TYPE_DEAR_CACHE = 5,
	IT2_TYPE_DEAR_ALAT = 6,
};

struct it2_cat_entry {
	const char *name;
	const char *desc;    /* libpfm-3's description */
	unsigned code;       /* the entry code: event code, type, unit mask */
	unsigned char type;  /* enum it2_cat_type */
	unsigned char qual;  /* IT2_QUAL_* */
};

extern const struct it2_cat_entry it2_catalog[IT2C_N];

static inline int it2_cat_is_dear(const struct it2_cat_entry *e)
{
	return e->type >= IT2_TYPE_DEAR_TLB && e->type <= IT2_TYPE_DEAR_ALAT;
}

static inline int it2_cat_is_iear(const struct it2_cat_entry *e)
{
	return e->type == IT2_TYPE_IEAR_TLB || e->type == IT2_TYPE_IEAR_CACHE;
}

#endif
