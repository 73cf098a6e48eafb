/*
 * The heritage metrics as PCP serves them (pmdaheritage(1)): one const table
 * of metrics, and the readers of the three sources they come from, with no
 * PCP in it (the PMDA maps the table's enums to PCP's and is glue only):
 *
 *   rpmd   the service page of rpmd(8) (rpm_service.h): per-CPU and total
 *          page faults (all, minor, major) and system calls;
 *   imc    the nest pages imcd(8) publishes (imc_shm.h): every nest counter
 *          of the catalog that has a source on this machine, per chip;
 *   mesh   the Paragon virtual mesh object (rpm_shared.h): bytes that left
 *          every router towards north, south, east and west.
 *
 * Every source is only mapped read-only and only after the same trust
 * checks the PAPI components make; none is created here (a reader must not
 * make a mesh appear, nor a page that a daemon would then refuse).  A value
 * the source cannot give (daemon not running or stale, object absent, a
 * count the daemon was refused) is an error from hm_value(), never 0.
 */
#ifndef HERITAGE_HM_METRICS_H
#define HERITAGE_HM_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* Semantics and units, in PCP's terms (pmLookupDesc(3)): a counter is a
 * monotone count whose rate is meaningful, an instant a level now, discrete
 * a value that does not change while the source lives. */
enum hm_sem { HM_SEM_COUNTER, HM_SEM_INSTANT, HM_SEM_DISCRETE };
enum hm_units { HM_UNITS_NONE, HM_UNITS_COUNT, HM_UNITS_BYTE, HM_UNITS_NSEC };
enum hm_type { HM_TYPE_U64, HM_TYPE_U32, HM_TYPE_STRING };

/* Instance domains (serial numbers, as PCP numbers them in the domain). */
enum hm_indom {
	HM_INDOM_NULL = -1,
	HM_INDOM_CPU = 0,    /* rpmd's CPUs: instance = OS CPU number, "cpu<N>" */
	HM_INDOM_NEST = 1,   /* chip x nest entry: chip << 16 | entry, "chip<C>:<pmu>::<event>" */
	HM_INDOM_ROUTER = 2, /* node x direction: node * 4 + dir, "node<N>:<north|south|east|west>" */
	HM_NINDOMS = 3,
};

/* What a metric reads. */
enum hm_what {
	HM_RPMD_COUNT,     /* arg: enum rpm_perf_count; per CPU */
	HM_RPMD_TOTAL,     /* arg: enum rpm_perf_count; summed over rpmd's CPUs */
	HM_RPMD_INTERVAL,  /* rpmd's publish interval, ns */
	HM_RPMD_AGE,       /* ns since rpmd's last publication */
	HM_RPMD_STATUS,    /* where the values come from, or why there are none */
	HM_IMC_NEST,       /* a nest counter in events (raw x catalog scale) */
	HM_IMC_STATUS,
	HM_MESH_BYTES,
	HM_MESH_NODES,     /* rows x cols of the mesh now */
	HM_MESH_JOINED,    /* nodes joined by a live process */
	HM_MESH_STATUS,
};

struct hm_metric {
	const char *name;     /* full PCP name, "heritage.rpmd.page_faults" */
	unsigned cluster, item;
	enum hm_type type;
	enum hm_sem sem;
	enum hm_units units;
	enum hm_indom indom;
	enum hm_what what;
	unsigned arg;
	const char *oneline;  /* the help file's one-line text */
};

extern const struct hm_metric hm_metrics[];
extern const unsigned hm_nmetrics;

/* PCP clusters: one per source. */
enum { HM_CLUSTER_RPMD = 0, HM_CLUSTER_IMC = 1, HM_CLUSTER_MESH = 2 };

/* The metric with this cluster and item, or NULL. */
const struct hm_metric *hm_metric_find(unsigned cluster, unsigned item);

/* ---- the sources ----------------------------------------------------------- */
struct hm_state;

struct hm_inst {
	int id;
	char name[128];
};

/* Nothing is mapped yet: hm_refresh maps what is there.  -ENOMEM. */
int hm_open(struct hm_state **out);
void hm_close(struct hm_state *s);
/* Before each fetch or instance request: drops a source whose object was
 * removed, replaced or went stale, and maps what is there now (a daemon
 * started or restarted since).  Cheap when nothing changed: a stat per
 * object and the heartbeats. */
void hm_refresh(struct hm_state *s);
/* The instances of indom now (after hm_refresh): an array owned by s, valid
 * until the next hm_refresh.  Empty when the source is absent. */
const struct hm_inst *hm_instances(struct hm_state *s, enum hm_indom indom, unsigned *n);

union hm_value {
	uint64_t u64;
	uint32_t u32;
	const char *str; /* owned by s, valid until the next hm_refresh */
};
/* The value of m for instance inst (ignored for HM_INDOM_NULL).  0, or:
 *   -EAGAIN  the source is absent or stale now (a daemon not running, the
 *            mesh object not created yet): try again later;
 *   -ENODATA the source runs but cannot give this value (rpmd was refused
 *            this count; a nest counter imcd has no source for);
 *   -ENOENT  no such instance. */
int hm_value(struct hm_state *s, const struct hm_metric *m, int inst, union hm_value *v);

#endif
