/*
 * The IMC engine: plays the OCC microcode (nest) and the core (core, thread)
 * of a POWER9 in memory.  Counters are free-running 64-bit BIG-ENDIAN
 * values at the catalog's offsets (an entry's value = its byte offset in
 * its unit's page, as Linux's event_base = vbase + config), in pages of the
 * catalog's sizes, updated at the collection speed by an engine thread, and
 * never reset (doc/facilities.md §4(a)); readers only load them.
 *
 * Pages:
 *   nest   one per chip (hwloc package) and per distinct nest region of the
 *          catalog (offset, size: every POWER9 nest unit shares one 0x40000
 *          page at HOMER + 0x180000), with the control block at cb_offset:
 *          run_status, command, collection speed, availability vector, run
 *          mode (big-endian u64s, skiboot include/imc.h struct imc_chip_cb).
 *          The engine obeys the command and the speed written there.
 *          Shared system-wide when imcd(8) publishes them (/dev/shm,
 *          imc_shm.h); else this process's engine keeps its own.
 *   core   one per core (hwloc core): CS_ counters are the sum over the
 *          core's hardware threads (hwloc PUs).
 *   thread one per TASK thread, not per hardware thread: the kernel's
 *          thread_imc is per task (imc-pmu.c thread_imc_event_add writes
 *          the task's LDBAR at context switch in, so its page counts only
 *          while the task runs); here the thread page of a task thread is
 *          fed by that thread's own sources (its CPU clock, its perf
 *          counters), from whichever CPU it runs on.
 * A counter is armed (its feed starts) when a set starts counting it and
 * released when the set stops; a page is updated while any of its counters
 * is armed (the kernel's refcounted engines), and counts on from the values
 * it holds when armed again.  Counters are never reset.
 */
#ifndef HERITAGE_IMC_ENGINE_H
#define HERITAGE_IMC_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "imc/imc_catalog.h"
#include "imc/imc_sources.h"

/* ---- big-endian counters ---------------------------------------------------- */
/* One aligned 8-byte atomic load/store, converted: a reader never sees a
 * torn counter. */
static inline uint64_t imc_be_load(const void *p)
{
	return __builtin_bswap64(__atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED));
}
static inline void imc_be_store(void *p, uint64_t v)
{
	__atomic_store_n((uint64_t *)p, __builtin_bswap64(v), __ATOMIC_RELAXED);
}

/* ---- the nest control block (skiboot include/imc.h) -------------------------- */
enum imc_cb_field {
	IMC_CB_RUN_STATUS = 0x00, /* 0 init, 1 running, 2 paused */
	IMC_CB_COMMAND = 0x08,    /* 0 NOP, 1 resume, 2 pause, 3 clear and restart */
	IMC_CB_SPEED = 0x10,      /* 0..7: imc_speed_ns[] */
	IMC_CB_AVL_VECTOR = 0x18, /* IBM bit i (PPC_BIT(i), MSB = 0): skiboot's nest_pmus[i] is available */
	IMC_CB_RUN_MODE = 0x20,   /* 0 normal (monitor) mode */
};
enum { IMC_RUN_INIT = 0, IMC_RUN_RUNNING = 1, IMC_RUN_PAUSED = 2 };
enum { IMC_CMD_NOP = 0, IMC_CMD_RESUME = 1, IMC_CMD_PAUSE = 2, IMC_CMD_CLEAR = 3 };
#define IMC_NSPEEDS 8
extern const uint64_t imc_speed_ns[IMC_NSPEEDS]; /* 128 us, 256 us, 1, 4, 16, 64, 256, 1000 ms */
/* PAPI_HERITAGE_IMC_SPEED (0..7), else IMC_DEFAULT_SPEED (1 ms). */
#define IMC_DEFAULT_SPEED 2
unsigned imc_speed_setting(void);

/* ---- topology (hwloc) ---------------------------------------------------------- */
#define IMC_MAX_PUS 1024
struct imc_topo {
	unsigned npus, ncores, nchips;
	struct {
		unsigned os;    /* OS CPU number */
		unsigned core;  /* index of its core, 0..ncores-1 */
		unsigned chip;  /* index of its package, 0..nchips-1 */
	} pu[IMC_MAX_PUS];
};
/* The machine's, from hwloc (packages = chips, cores, PUs), once. */
const struct imc_topo *imc_topo_get(char *why, size_t len);
/* The chip / core of OS CPU cpu, or -1. */
int imc_topo_chip_of(const struct imc_topo *t, unsigned cpu);
int imc_topo_core_of(const struct imc_topo *t, unsigned cpu);

/* ---- the engine ------------------------------------------------------------------ */
struct imc_engine;
struct imc_page;

/* Where a source reading is taken: one task thread, one CPU, or none
 * (a chip's or core's own clock). */
struct imc_point {
	pid_t tid;          /* thread page: the task thread; else 0 */
	clockid_t clock;    /* thread page: its CPU clock */
	int cpu;            /* core page: OS CPU of a hardware thread; else -1 */
	uint64_t prev_user, prev_sys; /* thread page: the user/system split so far (never decreases) */
};
/* A source: the reading of feed at point, in its own units (ns, counts);
 * 0 or a negative errno.  The engine's own reads the clocks, /proc and
 * perf; unit tests put a fake one in. */
typedef int (*imc_source_fn)(void *arg, const struct imc_feed *feed, const struct imc_point *pt, int perf_fd,
                             uint64_t *out);

enum imc_engine_kind {
	IMC_ENGINE_PROCESS, /* this process's pages; nest pages from imcd if it publishes them */
	IMC_ENGINE_PRIVATE, /* this process's pages only (unit tests, PAPI_HERITAGE_IMC_DAEMON=off) */
	IMC_ENGINE_DAEMON,  /* imcd: creates and publishes the nest pages */
};

int imc_engine_create(const struct imc_catalog *cat, const struct imc_topo *topo, enum imc_engine_kind kind,
                      struct imc_engine **out);
void imc_engine_destroy(struct imc_engine *e);
/* Tests: replace the sources (before any counter is armed). */
void imc_engine_set_source(struct imc_engine *e, imc_source_fn fn, void *arg);
/* The collection speed of core and thread pages, and of this process's own
 * nest pages through their control blocks (imcd's follow theirs).  0..7. */
int imc_engine_set_speed(struct imc_engine *e, unsigned speed);
/* The update thread: started once; stopped by destroy. */
int imc_engine_run(struct imc_engine *e);
/* One pass at now_ns (CLOCK_MONOTONIC): obey the control blocks, update the
 * pages that are due.  The update thread calls it; tests call it directly.
 * Returns when the next page is due. */
uint64_t imc_engine_tick(struct imc_engine *e, uint64_t now_ns);
/* Where the nest pages are: "imcd pid N (/dev/shm/...)" or "this process's
 * engine: <why not imcd>". */
const char *imc_engine_nest_where(const struct imc_engine *e);
int imc_engine_nest_shared(const struct imc_engine *e);
/* Before counting: if imcd's pages are stale (imcd stopped or died), map a
 * restarted imcd's, else count this process's own from now (the message
 * from imc_engine_nest_where says which).  A set started before keeps
 * reading the old page, whose counts then stop. */
int imc_engine_check_nest(struct imc_engine *e);

/* ---- counters ---------------------------------------------------------------------- */
struct imc_counter {
	struct imc_page *page;
	const uint8_t *word;        /* the BE counter in the page */
	unsigned entry;
	int feed;                   /* index in the page's feeds, -1: served by imcd */
};

/* Arms catalog entry for cpu (nest: the chip of cpu; core: the core of cpu;
 * -1: CPU 0's) or, for a thread entry, the calling task thread.  0, or
 * -ENOTSUP (no source here: the reason), -EINVAL (bad cpu), -EPERM/-EACCES
 * (perf refused), -ENOMEM. */
int imc_engine_arm(struct imc_engine *e, unsigned entry, int cpu, struct imc_counter *c);
/* The counter is no longer read by its armer: a page with no armed counter
 * left is not updated (as the kernel stops the core and nest engines at
 * their last release) until the next arm, which counts on from its values. */
void imc_engine_release(struct imc_engine *e, const struct imc_counter *c);
/* Replaced imcd pages still mapped for counters armed before the
 * replacement (unmapped at their last release). */
unsigned imc_engine_retired_pages(struct imc_engine *e);
/* The counter's value now: one big-endian load.  Async-signal-safe. */
static inline uint64_t imc_counter_load(const struct imc_counter *c)
{
	return imc_be_load(c->word);
}
/* Whether c is a counter of imcd's page (read-only here). */
int imc_counter_remote(const struct imc_counter *c);
/* Whether c is a counter of imcd's page that imcd no longer updates (its
 * heartbeat, imc_shm_stale): its value is frozen.  1 with why, else 0. */
int imc_counter_imcd_stale(const struct imc_counter *c, uint64_t now_ns, char *why, size_t len);
/* Update c's page now (what PAPI_stop does, so that the final value is not
 * one period stale).  A page imcd serves cannot be forced: 0, and its value
 * is at most one of imcd's periods old. */
int imc_engine_sync(struct imc_engine *e, const struct imc_counter *c);
/* The page that holds c, its size (a whole page of the catalog's size). */
const uint8_t *imc_counter_page(const struct imc_counter *c, size_t *size);
/* Tests and imcd's restart: the value counting continues from. */
int imc_engine_preset(struct imc_engine *e, const struct imc_counter *c, uint64_t value);

/* A nest page's control block (writable in this process's engine; tests and
 * imcd write commands there). NULL for a page imcd serves (read-only). */
uint8_t *imc_engine_nest_cb(struct imc_engine *e, unsigned chip, unsigned region);

#endif
