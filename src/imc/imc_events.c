#include <errno.h>
#include <hwloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/heritage_error.h"
#include "imc/imc_events.h"
#include "imc/imc_sources.h"

/* The machine as the :cpu=N qualifier sees it: CPUs, and the packages
 * (POWER9 chips: nest units) and cores they sit on, from hwloc. */
static struct {
	unsigned cpus, packages, cores;
} topo;

static const struct imc_catalog *catalog;
/* The catalog's entries in the order events are listed and coded: by PMU
 * name, then value, then name.  Not the catalog's own order: a DTB keeps
 * its nodes in the order they were written, a directory read as
 * /proc/device-tree shows it does not, and one catalog must list and code
 * its events the same way in both forms. */
static struct listed {
	const char *name; /* first: the parser reads names through it */
	unsigned entry;
} *listed;
static struct heritage_event_names names;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int init_err;
static char init_why[256];

static int takes_cpu(const struct imc_cat_unit *u)
{
	/* The kernel counts nest and core only per CPU (imc-pmu.c:
	 * nest_imc_event_init / core_imc_event_init refuse cpu < 0);
	 * thread and trace only per task. */
	return u->type == IMC_TYPE_NEST || u->type == IMC_TYPE_CORE;
}

/* :cpu=N on nest and core events: any CPU of this machine, as perf takes
 * it (N names its chip, or its core). */
static void cpu_values(unsigned index, struct heritage_qual_values *v)
{
	*v = (struct heritage_qual_values){ 0 };
	if (!catalog || index >= catalog->nentries || topo.cpus == 0)
		return;
	const struct imc_cat_unit *u = &catalog->units[catalog->entries[listed[index].entry].unit];
	if (!takes_cpu(u))
		return;
	*v = (struct heritage_qual_values){ .n = 2, .range = 1, .v = { 0, topo.cpus - 1 } };
	snprintf(v->note, sizeof v->note, "this machine has %u CPUs on %u %s (hwloc)", topo.cpus,
	         u->type == IMC_TYPE_NEST ? topo.packages : topo.cores,
	         u->type == IMC_TYPE_NEST ? "chips (packages)" : "cores");
}

static const struct heritage_qualifier imc_qualifiers[] = {
	{ .name = "cpu", .given = 0, .shift = IMC_CODE_CPU_SHIFT, .mask = IMC_CODE_CPU_MASK, .values = cpu_values },
};

static void read_topology(void)
{
	hwloc_topology_t t;
	long n = sysconf(_SC_NPROCESSORS_CONF);

	topo.cpus = n > 0 ? (unsigned)n : 0;
	topo.packages = topo.cores = 1;
	if (hwloc_topology_init(&t) != 0)
		return;
	if (hwloc_topology_load(t) == 0) {
		int pu = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
		int pk = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
		int co = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
		if (pu > 0)
			topo.cpus = (unsigned)pu;
		if (pk > 0)
			topo.packages = (unsigned)pk;
		if (co > 0)
			topo.cores = (unsigned)co;
	}
	hwloc_topology_destroy(t);
	if (topo.cpus > IMC_CODE_CPU_MASK - 1)
		topo.cpus = IMC_CODE_CPU_MASK - 1;
}

static int listed_order(const void *a, const void *b)
{
	const struct imc_cat_entry *x = &catalog->entries[((const struct listed *)a)->entry];
	const struct imc_cat_entry *y = &catalog->entries[((const struct listed *)b)->entry];
	int c = strcmp(catalog->units[x->unit].pmu, catalog->units[y->unit].pmu);
	if (c)
		return c;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void build(void)
{
	catalog = imc_catalog_get(init_why, sizeof init_why);
	if (!catalog) {
		init_err = -EINVAL;
		return;
	}
	if (catalog->nentries > IMC_CODE_INDEX_MASK + 1) {
		init_err = -EINVAL;
		snprintf(init_why, sizeof init_why, "imc catalog %s: %u events, more than the %u event codes can hold",
		         catalog->source, catalog->nentries, IMC_CODE_INDEX_MASK + 1);
		catalog = NULL;
		return;
	}
	listed = calloc(catalog->nentries, sizeof *listed);
	if (!listed) {
		init_err = -ENOMEM;
		snprintf(init_why, sizeof init_why, "imc: out of memory");
		catalog = NULL;
		return;
	}
	for (unsigned i = 0; i < catalog->nentries; i++)
		listed[i] = (struct listed){ .name = catalog->entries[i].name, .entry = i };
	qsort(listed, catalog->nentries, sizeof *listed, listed_order);
	read_topology();
	names = (struct heritage_event_names){
		.component = "imc",
		.first_name = &listed[0].name,
		.stride = sizeof listed[0],
		.n = catalog->nentries,
		.index_mask = IMC_CODE_INDEX_MASK,
		.quals = imc_qualifiers,
		.nquals = sizeof imc_qualifiers / sizeof imc_qualifiers[0],
	};
}

int imc_events_init(char *why, size_t len)
{
	pthread_once(&once, build);
	if (init_err) {
		if (why && len)
			snprintf(why, len, "%s", init_why);
		return heritage_fail_msg(init_err, init_why);
	}
	return 0;
}

const struct imc_catalog *imc_events_catalog(void)
{
	return imc_events_init(NULL, 0) ? NULL : catalog;
}

const struct heritage_event_names *imc_events_names(void)
{
	return imc_events_init(NULL, 0) ? NULL : &names;
}

unsigned imc_nevents(void)
{
	return imc_events_init(NULL, 0) ? 0 : catalog->nentries;
}

const struct imc_cat_entry *imc_event_entry(unsigned code)
{
	char buf[8];

	/* The formatter checks the qualifier bits too: an entry comes only
	 * with a code the parser could have given. */
	if (imc_events_init(NULL, 0) || heritage_event_format(&names, code, buf, sizeof buf) == -ENOENT)
		return NULL;
	return &catalog->entries[listed[code & IMC_CODE_INDEX_MASK].entry];
}

const struct imc_cat_unit *imc_event_unit(unsigned code)
{
	const struct imc_cat_entry *e = imc_event_entry(code);
	return e ? &catalog->units[e->unit] : NULL;
}

int imc_event_cpu(unsigned code)
{
	unsigned long v;
	return heritage_qual_get(&imc_qualifiers[0], code, &v) ? (int)v : -1;
}

int imc_event_parse(const char *name, unsigned *code)
{
	int err = imc_events_init(NULL, 0);
	return err ? err : heritage_event_parse(&names, name, code);
}

int imc_event_format(unsigned code, char *buf, size_t len)
{
	int err = imc_events_init(NULL, 0);
	return err ? err : heritage_event_format(&names, code, buf, len);
}

static const char *kind(uint32_t type)
{
	switch (type) {
	case IMC_TYPE_NEST: return "nest (per chip)";
	case IMC_TYPE_CORE: return "core (per core, its SMT threads summed)";
	case IMC_TYPE_THREAD: return "thread (per task)";
	case IMC_TYPE_TRACE: return "trace (per task, records in memory)";
	}
	return "unknown";
}

enum heritage_source imc_event_source(unsigned code, char *what, size_t len)
{
	const struct imc_cat_entry *e = imc_event_entry(code);
	if (!e) {
		if (what && len)
			snprintf(what, len, "no such event");
		return HERITAGE_UNAVAILABLE;
	}
	return imc_source_of(catalog, (unsigned)(e - catalog->entries), what, what ? len : 0);
}

void imc_event_describe(unsigned code, char *buf, size_t len)
{
	const struct imc_cat_entry *e = imc_event_entry(code);
	if (!len)
		return;
	if (!e) {
		snprintf(buf, len, "no such event");
		return;
	}
	const struct imc_cat_unit *u = &catalog->units[e->unit];
	char what[600];
	enum heritage_source src = imc_event_source(code, what, sizeof what);
	snprintf(buf, len, "%s%s%s IMC counter, perf %s/event=0x%llx/%s%s%s%s [%s: %s]", e->desc ? e->desc : "",
	         e->desc ? ". " : "", kind(u->type), u->pmu, (unsigned long long)e->value, e->scale ? ", scale " : "",
	         e->scale ? e->scale : "", e->unit_name ? ", unit " : "", e->unit_name ? e->unit_name : "",
	         heritage_source_name(src), what);
}

void imc_event_units(unsigned code, char *buf, size_t len)
{
	const struct imc_cat_entry *e = imc_event_entry(code);
	if (!len)
		return;
	buf[0] = '\0';
	if (!e)
		return;
	snprintf(buf, len, "%s%s%s%s", e->unit_name ? e->unit_name : "", e->unit_name && e->scale ? ", " : "",
	         e->scale ? "scale " : "", e->scale ? e->scale : "");
}
