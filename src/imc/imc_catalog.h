/*
 * The IMC catalog: the device tree the platform ships (OPAL's
 * `imc-counters` node, compatible "ibm,opal-in-memory-counters"), read
 * with libfdt from a DTB, or from a device-tree directory as Linux shows
 * it under /proc/device-tree/imc-counters (one directory per node, one
 * file per property, phandle files).  Nothing of POWER9 DD2 is built in:
 * the project's own POWER9 catalog is a DTS compiled by dtc at build time,
 * and any other revision's catalog loads the same way.
 *
 * Event values are computed as Linux's imc_parse_event() does: unit `reg`
 * (first cell) + event `reg` (first cell); full name = unit
 * `events-prefix` + event `event-name`; PMU name `nest_<unit>_imc` for
 * type 0x10, else `<unit>_imc`, <unit> the node name before '@'.  An
 * event's own `scale`/`unit` override its unit's (doc/facilities.md §4(a)).
 */
#ifndef HERITAGE_IMC_CATALOG_H
#define HERITAGE_IMC_CATALOG_H

#include <stddef.h>
#include <stdint.h>

/* Device-tree `type` of a unit node (skiboot imc.h). */
enum imc_type {
	IMC_TYPE_THREAD = 0x1,
	IMC_TYPE_TRACE = 0x2,
	IMC_TYPE_CORE = 0x4,
	IMC_TYPE_NEST = 0x10,
};

/* One event node of an events list. */
struct imc_cat_event {
	char *name;             /* `event-name`, as written (no prefix) */
	uint32_t reg;           /* first cell of `reg` */
	char *desc;             /* `desc`, or NULL */
	char *scale, *unit;     /* the event's own, or NULL */
};

/* One events node (the target of a unit's `events = <&label>`). */
struct imc_cat_list {
	char *path;             /* node path in the tree, for messages */
	uint32_t phandle;
	struct imc_cat_event *events;
	unsigned nevents;
};

/* One unit node (compatible "ibm,imc-counters"). */
struct imc_cat_unit {
	char *node;             /* "mcs01@c8" */
	char *pmu;              /* "nest_mcs01_imc", "core_imc", ... */
	char *prefix;           /* `events-prefix`, "" when absent */
	uint32_t reg;           /* first cell of `reg` */
	uint32_t type;          /* enum imc_type */
	uint32_t size;
	uint32_t offset, cb_offset;
	int has_offset, has_cb_offset;
	char *scale, *unit;     /* the unit's, or NULL */
	unsigned list;          /* index into imc_catalog.lists */
};

/* One (unit, event) pair: what perf and PAPI list. */
struct imc_cat_entry {
	char *name;             /* "<pmu>::<prefix><event-name>", PAPI's spelling */
	unsigned unit, event;   /* indices: units[unit], lists[units[unit].list].events[event] */
	uint64_t value;         /* unit reg + event reg: perf's config, the byte offset in the page */
	const char *scale;      /* the event's, else the unit's, else NULL */
	const char *unit_name;  /* the event's, else the unit's, else NULL */
	const char *desc;       /* NULL when the catalog has none */
};

struct imc_catalog {
	char *source;           /* file or directory it was read from, or "built-in" */
	struct imc_cat_unit *units;
	unsigned nunits;
	struct imc_cat_list *lists;
	unsigned nlists;
	struct imc_cat_entry *entries; /* units in tree order, each unit's events in list order */
	unsigned nentries;
};

/* Reading.  Each returns 0 and *out, or -EINVAL (malformed: the message,
 * through heritage_fail, names the node and the property), -ENOENT (no
 * such file, no imc-counters node), -ENOMEM; never crashes on any input. */
int imc_catalog_from_dtb(const void *blob, size_t len, const char *source, struct imc_catalog **out);
int imc_catalog_from_dir(const char *dir, struct imc_catalog **out);
/* A DTB file or a device-tree directory (the imc-counters node itself, or
 * a tree root that contains one). */
int imc_catalog_from_path(const char *path, struct imc_catalog **out);
void imc_catalog_free(struct imc_catalog *cat);

/* The process's catalog, read once: PAPI_HERITAGE_IMC_CATALOG if set, else
 * the built-in POWER9 catalog.  NULL on failure, with the reason left by
 * heritage_fail (also in why, when why is not NULL). */
const struct imc_catalog *imc_catalog_get(char *why, size_t len);

/* Entry named name ("<pmu>::<EVENT>", case-insensitive), or -1. */
int imc_catalog_find(const struct imc_catalog *cat, const char *name, size_t len);

#endif
