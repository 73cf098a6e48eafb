/*
 * Real IMC where it exists: the POWER IMC PMUs Linux exports under
 * <root>/sys/bus/event_source/devices (doc/facilities.md §4(b); kernel
 * arch/powerpc/perf/imc-pmu.c), discovered from any root directory and
 * counted through perf_event_open with the discovered type and config.
 *
 * The root is "/" unless PAPI_HERITAGE_IMC_SYSFS_ROOT names another, the way
 * hwloc reads a fixture tree from HWLOC_FSROOT: the tests discover committed
 * fixture trees (src/tests/imc-sysfs/) with the same code a POWER9 runs.
 *
 * What a PMU directory holds (imc-pmu.c, update_pmu_ops and friends):
 *   type        decimal perf type (dynamic, assigned at registration);
 *   cpumask     a CPU list ("0,88", "0-3,8"): nest one CPU per chip, core
 *               one CPU per core; absent for thread and trace;
 *   format/     one file per field: "config:0-61", "config:32",
 *               "config1:0-3,8-11" (event, offset, rvalue, mode; trace:
 *               event, cpmc_reserved, cpmc_event, cpmc_samplesel, cpmc_load);
 *   events/     <NAME> = "event=0x<off>", <NAME>.scale, <NAME>.unit.
 * A malformed file is -EINVAL with its path in the message, never a crash.
 *
 * Counting rules (the kernel's): nest and core count whole CPUs (pid -1,
 * cpu >= 0; their PMUs have no task context), thread counts a task (pid 0,
 * cpu -1), trace only samples (left to the trace backend; discovered here).
 */
#ifndef HERITAGE_IMC_SYSFS_H
#define HERITAGE_IMC_SYSFS_H

#include <stddef.h>
#include <stdint.h>

/* The kernel's IMC domains (imc-pmu.h IMC_DOMAIN_*), taken from the PMU
 * name: nest_<unit>_imc, core_imc, thread_imc, trace_imc. */
enum imc_sysfs_domain {
	IMC_SYSFS_NEST = 1,
	IMC_SYSFS_CORE = 2,
	IMC_SYSFS_THREAD = 3,
	IMC_SYSFS_TRACE = 4,
};

/* perf_event_attr words a format field may name. */
enum { IMC_SYSFS_CONFIG_WORDS = 3 }; /* config, config1, config2 */

/* One format/<field> file. */
struct imc_sysfs_format {
	char *name;              /* "event", "offset", ... */
	char *spec;              /* as read, newline dropped: "config:0-61" */
	unsigned word;           /* 0 config, 1 config1, 2 config2 */
	uint64_t mask;           /* its bits in that word (ranges in order: a
	                          * value's low bits go to the lowest range) */
};

/* One events/<NAME> file with its .scale and .unit. */
struct imc_sysfs_event {
	char *name;              /* "PM_MCS01_64B_RD_DISP_PORT01" */
	char *terms;             /* as read: "event=0xc8" */
	uint64_t config[IMC_SYSFS_CONFIG_WORDS];
	char *scale_text;        /* <NAME>.scale as written, or NULL */
	double scale;            /* its value; 1 when there is none */
	char *unit;              /* <NAME>.unit, or NULL */
};

struct imc_sysfs_pmu {
	char *name;              /* "nest_mcs01_imc" */
	char *dir;               /* <root>/sys/bus/event_source/devices/<name> */
	enum imc_sysfs_domain domain;
	uint32_t type;           /* perf_event_attr.type */
	int has_cpumask;
	int *cpus;               /* cpumask, ascending */
	unsigned ncpus;
	struct imc_sysfs_format *formats;
	unsigned nformats;
	struct imc_sysfs_event *events; /* sorted by name */
	unsigned nevents;
};

struct imc_sysfs {
	char *root;              /* the root it was discovered from */
	char *devices;           /* <root>/sys/bus/event_source/devices */
	struct imc_sysfs_pmu *pmus; /* sorted by name */
	unsigned npmus;
};

/* ---- discovery ------------------------------------------------------------ */

/* root: NULL for PAPI_HERITAGE_IMC_SYSFS_ROOT, else "/".  0 and *out with
 * at least one IMC PMU; -ENOENT when there is no real IMC here (no root, no
 * devices directory, or no IMC PMU in it: the message says which path);
 * -EINVAL for a malformed file (named); -ENOMEM.  Other PMUs (cpu,
 * software, Intel's uncore_imc...) are not IMC and are skipped. */
int imc_sysfs_discover(const char *root, struct imc_sysfs **out);
void imc_sysfs_free(struct imc_sysfs *s);
/* The root discovery uses when given NULL. */
const char *imc_sysfs_default_root(void);

/* "nest_mcs01_imc", or perf's short spelling "nest_mcs01"; NULL if none. */
const struct imc_sysfs_pmu *imc_sysfs_pmu_find(const struct imc_sysfs *s, const char *name);
/* Case-insensitive, as perf matches event aliases; NULL if none. */
const struct imc_sysfs_event *imc_sysfs_event_find(const struct imc_sysfs_pmu *p, const char *name);
const char *imc_sysfs_domain_name(enum imc_sysfs_domain d);

/* ---- the parsers, public for the tests ------------------------------------ */

/* "0,8,16-19" (the kernel's cpumap_print_to_pagebuf list form), an empty
 * list allowed: 0 and a malloc'ed ascending array; -EINVAL naming what. */
int imc_sysfs_parse_cpulist(const char *text, const char *what, int **cpus, unsigned *n);
/* "config:0-61", "config:32", "config1:0-7,32-35": -EINVAL naming what. */
int imc_sysfs_parse_format(const char *text, const char *what, unsigned *word, uint64_t *mask);
/* perf event terms "event=0xc8,offset=8,rvalue" (a bare term is 1;
 * config/config1/config2=<v> set a whole word) through p's formats:
 * config[] zeroed first; -EINVAL naming what, the term and the field. */
int imc_sysfs_build_config(const struct imc_sysfs_pmu *p, const char *terms, const char *what,
                           uint64_t config[IMC_SYSFS_CONFIG_WORDS]);

/* ---- who may count --------------------------------------------------------- */

enum imc_sysfs_rule {
	/* nest, core: whole CPUs (pid -1): perf_event_paranoid <= 0,
	 * CAP_PERFMON or root (the perf core's perf_allow_cpu()). */
	IMC_SYSFS_RULE_CPU_WIDE = 1,
	/* real thread and trace: their event_init asks perfmon_capable()
	 * whatever perf_event_paranoid says: CAP_PERFMON or root. */
	IMC_SYSFS_RULE_PERFMON = 2,
	/* a generic perf type standing in for thread_imc (PERF_TYPE_SOFTWARE
	 * in the fixtures), counted at user level: perf_event_paranoid <= 2. */
	IMC_SYSFS_RULE_OWN_TASK = 3,
};
enum imc_sysfs_rule imc_sysfs_pmu_rule(const struct imc_sysfs_pmu *p);
/* One sentence: who may count p's events here. */
const char *imc_sysfs_rule_text(enum imc_sysfs_rule r);
/* 0 when this account may count p's events as far as the probes and the
 * capability set tell (heritage_probe.h: perf_cpu for whole CPUs, perf_sw
 * for tasks; CapEff for CAP_PERFMON); else -EACCES/-EPERM (refused to this
 * account) or -ENOTSUP, with why (and heritage_fail). */
int imc_sysfs_usable(const struct imc_sysfs_pmu *p, char *why, size_t len);

/* ---- counting through perf_event ------------------------------------------ */

struct imc_sysfs_counter {
	int fd;                  /* -1 when closed */
	int pid, cpu;            /* what perf_event_open was given */
	int running;
	uint64_t at_stop;        /* the count when last stopped */
	const struct imc_sysfs_pmu *pmu;
	const struct imc_sysfs_event *event;
};

/* cpu: -1 for the default (nest/core: the cpumask's first CPU; thread: this
 * task), >= 0 for :cpu=N (nest/core only).  Opens disabled.  Errors, each
 * with a message: -EINVAL (cpu given to thread, none for nest/core),
 * -ENOTSUP (trace: a sampling event, the trace backend's), -EACCES/-EPERM
 * (refused to this account: says what would allow it), -EBUSY (core,
 * thread and trace IMC exclude each other system-wide: PAPI_ECNFLCT),
 * -ENODEV/-ENOENT (the kernel knows no such PMU/CPU). */
int imc_sysfs_counter_open(struct imc_sysfs_counter *c, const struct imc_sysfs_pmu *p,
                           const struct imc_sysfs_event *e, int cpu);
/* Counting from 0. */
int imc_sysfs_counter_start(struct imc_sysfs_counter *c);
/* The raw count since start (running or stopped); multiply by the event's
 * scale for its unit. */
int imc_sysfs_counter_read(struct imc_sysfs_counter *c, uint64_t *count);
/* Stops; *count (may be NULL) is the final count since start. */
int imc_sysfs_counter_stop(struct imc_sysfs_counter *c, uint64_t *count);
void imc_sysfs_counter_close(struct imc_sysfs_counter *c);

#endif
