/*
 * The IMC engine (imc_engine.h): pages, feeds, the control block and the
 * update thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "imc/imc_engine.h"
#include "watch/watch_park.h"
#include "imc/imc_shm.h"

const uint64_t imc_speed_ns[IMC_NSPEEDS] = {
	128000ULL, 256000ULL, 1000000ULL, 4000000ULL, 16000000ULL, 64000000ULL, 256000000ULL, 1000000000ULL,
};

unsigned imc_speed_setting(void)
{
	const char *s = heritage_env("imc", "speed");
	char *end;
	unsigned long v = s && *s ? strtoul(s, &end, 10) : IMC_DEFAULT_SPEED;
	return s && *s && (*end || v >= IMC_NSPEEDS) ? IMC_DEFAULT_SPEED : (unsigned)v;
}

/* The control block is polled at least this often for commands, even when
 * the collection speed is slower (the OCC polls its own). */
#define IMC_CB_POLL_NS 16000000ULL
#define IMC_MAX_REGIONS 8

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- topology ---------------------------------------------------------------------- */

static struct imc_topo topo_machine;
static int topo_err;
static char topo_why[256];
static pthread_once_t topo_once = PTHREAD_ONCE_INIT;

static void topo_load(void)
{
	hwloc_topology_t t;
	if (hwloc_topology_init(&t) != 0 || hwloc_topology_load(t) != 0) {
		topo_err = -EIO;
		snprintf(topo_why, sizeof topo_why, "imc: hwloc cannot load this machine's topology");
		return;
	}
	int n = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
	int ncores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
	int nchips = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
	struct imc_topo *o = &topo_machine;
	for (int i = 0; i < n && o->npus < IMC_MAX_PUS; i++) {
		hwloc_obj_t pu = hwloc_get_obj_by_type(t, HWLOC_OBJ_PU, (unsigned)i);
		hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, pu);
		hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, pu);
		o->pu[o->npus].os = pu->os_index;
		/* No core object (some VMs): each PU is its own core; no package:
		 * one chip. */
		o->pu[o->npus].core = core ? core->logical_index : (unsigned)i + (unsigned)(ncores > 0 ? ncores : 0);
		o->pu[o->npus].chip = pkg ? pkg->logical_index : 0;
		o->npus++;
	}
	unsigned maxcore = 0, maxchip = 0;
	for (unsigned i = 0; i < o->npus; i++) {
		maxcore = o->pu[i].core > maxcore ? o->pu[i].core : maxcore;
		maxchip = o->pu[i].chip > maxchip ? o->pu[i].chip : maxchip;
	}
	o->ncores = o->npus ? maxcore + 1 : 0;
	o->nchips = o->npus ? maxchip + 1 : 0;
	(void)nchips;
	hwloc_topology_destroy(t);
	if (!o->npus) {
		topo_err = -ENODEV;
		snprintf(topo_why, sizeof topo_why, "imc: hwloc finds no CPU");
	}
}

const struct imc_topo *imc_topo_get(char *why, size_t len)
{
	pthread_once(&topo_once, topo_load);
	if (topo_err) {
		if (why)
			snprintf(why, len, "%s", topo_why);
		heritage_fail(topo_err, "%s", topo_why);
		return NULL;
	}
	return &topo_machine;
}

int imc_topo_chip_of(const struct imc_topo *t, unsigned cpu)
{
	for (unsigned i = 0; i < t->npus; i++)
		if (t->pu[i].os == cpu)
			return (int)t->pu[i].chip;
	return -1;
}

int imc_topo_core_of(const struct imc_topo *t, unsigned cpu)
{
	for (unsigned i = 0; i < t->npus; i++)
		if (t->pu[i].os == cpu)
			return (int)t->pu[i].core;
	return -1;
}

/* ---- the engine's state ------------------------------------------------------------- */

struct imc_feed_state {
	unsigned entry;
	uint32_t offset;
	struct imc_feed feed;
	uint64_t base, src0;   /* counter = base + (reading - src0) * num / den */
	int primed;            /* src0 taken */
	int *fds;              /* perf, one per point; NULL for the other feeds */
};

struct imc_page {
	unsigned type;         /* enum imc_type */
	unsigned index;        /* chip, core; thread: its slot */
	unsigned region;       /* nest */
	uint8_t *mem;
	size_t size, map_size;
	int remote;            /* imcd's: read-only here */
	int published;         /* imcd's own, created here */
	ino_t ino;
	char path[256];
	uint32_t cb_offset;
	int has_cb;
	uint64_t last_cmd_seen;
	struct imc_point *points;
	unsigned npoints;
	struct imc_feed_state *feeds;
	unsigned nfeeds, cap;
	uint64_t period_ns, next_ns, cb_next_ns;
	int status;            /* nest: IMC_RUN_*; others running */
	unsigned users;        /* armed counters not released: updated only while > 0 */
	pid_t tid;
	/* A replaced imcd page (imc_engine_check_nest) that running sets still
	 * read: unmapped by the last release, on e->retired until then. */
	int retired;
	struct imc_page *next_retired;
};

struct imc_region {
	uint32_t offset, size, cb_offset;
	int has_cb;
};

struct imc_engine {
	const struct imc_catalog *cat;
	const struct imc_topo *topo;
	enum imc_engine_kind kind;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct imc_region regions[IMC_MAX_REGIONS];
	unsigned nregions;
	struct imc_page **nest;   /* [chip * nregions + region] */
	struct imc_page *retired; /* replaced nest pages still armed (struct imc_page) */
	struct imc_page **core;   /* [core] */
	struct imc_page **threads;
	unsigned nthreads, cap_threads;
	unsigned speed;
	imc_source_fn src;
	void *src_arg;
	pthread_t thread;
	pid_t thread_pid;         /* the process whose thread runs (0: none) */
	int stopping;
	int nest_shared;
	int nest_fell_back;       /* counting itself since imcd's pages went stale */
	ino_t nest_gone_ino;      /* the object of that imcd */
	char nest_where[600];
	uint64_t hash;
};

/* ---- sources ----------------------------------------------------------------------- */

/* /proc/self/task/TID/stat fields 14 and 15 (utime, stime, clock ticks). */
static int task_ticks(pid_t tid, uint64_t *ut, uint64_t *st)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
	unsigned long long u, s;
	/* after ')': state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime(14) stime(15) */
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &u, &s) != 2)
		return -EIO;
	*ut = u;
	*st = s;
	return 0;
}

/* The kernel's user/system split of a task's exact run time
 * (kernel/sched/cputime.c cputime_adjust): stime = rtime * st / (st + ut),
 * never decreasing. */
static void split_rtime(struct imc_point *pt, uint64_t rtime, uint64_t ut, uint64_t st, uint64_t *user,
                        uint64_t *sys)
{
	uint64_t s;
	if (st == 0)
		s = 0;
	else if (ut == 0)
		s = rtime;
	else
		s = (uint64_t)(((unsigned __int128)rtime * st) / (st + ut));
	if (s < pt->prev_sys)
		s = pt->prev_sys;
	uint64_t u = rtime >= s ? rtime - s : 0;
	if (u < pt->prev_user) {
		u = pt->prev_user;
		s = rtime >= u ? rtime - u : 0;
	}
	pt->prev_user = u;
	pt->prev_sys = s;
	*user = u;
	*sys = s;
}

/* One CPU's line of /proc/stat, as ns per mode. */
static int cpu_times(int cpu, const struct imc_feed *f, uint64_t *out)
{
	static long hz;
	if (!hz)
		hz = sysconf(_SC_CLK_TCK);
	FILE *fp = fopen("/proc/stat", "re");
	if (!fp)
		return -errno;
	char line[512], want[24];
	int n = snprintf(want, sizeof want, "cpu%d ", cpu);
	int err = -ENOENT;
	while (fgets(line, sizeof line, fp)) {
		if (strncmp(line, want, (size_t)n) != 0)
			continue;
		unsigned long long user, nice, sys, idle, iow, irq, soft;
		if (sscanf(line + n, "%llu %llu %llu %llu %llu %llu %llu", &user, &nice, &sys, &idle, &iow, &irq, &soft) != 7) {
			err = -EIO;
			break;
		}
		unsigned long long t = f->mode == IMC_MODE_USER     ? user + nice
		                       : f->mode == IMC_MODE_KERNEL ? sys + irq + soft
		                                                    : user + nice + sys + irq + soft;
		*out = (uint64_t)t * (1000000000ULL / (uint64_t)hz);
		err = 0;
		break;
	}
	fclose(fp);
	return err;
}

static int real_source(void *arg, const struct imc_feed *f, const struct imc_point *cpt, int fd, uint64_t *out)
{
	struct imc_point *pt = (struct imc_point *)cpt; /* the split's memory lives in the point */
	struct timespec ts;
	(void)arg;
	switch (f->kind) {
	case IMC_FEED_WALL:
		*out = mono_ns();
		return 0;
	case IMC_FEED_CPU_TIME:
		if (pt->tid) {
			if (clock_gettime(pt->clock, &ts) != 0)
				return -errno; /* the thread has exited */
			uint64_t rtime = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec, ut, st, u, s;
			if (f->mode == IMC_MODE_ALL) {
				*out = rtime;
				return 0;
			}
			int err = task_ticks(pt->tid, &ut, &st);
			if (err)
				return err;
			split_rtime(pt, rtime, ut, st, &u, &s);
			*out = f->mode == IMC_MODE_USER ? u : s;
			return 0;
		}
		return cpu_times(pt->cpu, f, out);
	case IMC_FEED_PMU_CYCLES:
	case IMC_FEED_PMU_INSTRUCTIONS: {
		uint64_t v;
		if (fd < 0 || read(fd, &v, sizeof v) != (ssize_t)sizeof v)
			return -EIO;
		*out = v;
		return 0;
	}
	default:
		return -ENOTSUP;
	}
}

static int perf_open(const struct imc_feed *f, const struct imc_point *pt, char *why, size_t len)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_HARDWARE;
	a.config = f->kind == IMC_FEED_PMU_CYCLES ? PERF_COUNT_HW_CPU_CYCLES : PERF_COUNT_HW_INSTRUCTIONS;
	a.exclude_kernel = f->mode == IMC_MODE_USER;
	a.exclude_user = f->mode == IMC_MODE_KERNEL;
	a.exclude_hv = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, pt->tid ? pt->tid : -1, pt->tid ? -1 : pt->cpu, -1,
	                      PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (pt->tid)
			snprintf(why, len, "perf_event_open(%s, thread %d): %s", a.config ? "instructions" : "cycles",
			         (int)pt->tid, strerror(e));
		else
			snprintf(why, len, "perf_event_open(%s, CPU %d, every task): %s", a.config ? "instructions" : "cycles",
			         pt->cpu, strerror(e));
		return -e;
	}
	return fd;
}

/* ---- pages ----------------------------------------------------------------------------- */

static uint8_t *anon_page(size_t size)
{
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

/* skiboot hw/imc.c nest_pmus[] (POWER9): the availability vector's bits. */
static const char *const p9_nest_pmus[] = {
	"powerbus0", "mcs0", "mcs1", "mcs2", "mcs3", "mcs4", "mcs5", "mcs6", "mcs7", "mba0", "mba1", "mba2", "mba3",
	"mba4", "mba5", "mba6", "mba7", "cen0", "cen1", "cen2", "cen3", "cen4", "cen5", "cen6", "cen7", "xlink0",
	"xlink1", "xlink2", "mcd0", "mcd1", "phb0", "phb1", "phb2", "phb3", "phb4", "phb5", "nx", "capp0", "capp1",
	"vas", "int", "alink0", "alink1", "alink2", "alink3", "nvlink0", "nvlink1", "nvlink2", "nvlink3", "nvlink4",
	"nvlink5",
};

static uint64_t ppc_bit(unsigned i)
{
	return i < 64 ? 1ULL << (63 - i) : 0;
}

/* The units this engine serves (an entry with a source), as skiboot's
 * availability bits: a combined mcsAB sets mcsA's and mcsB's, centaurN cenN. */
static uint64_t avl_vector(const struct imc_catalog *cat, const struct imc_region *r)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < cat->nentries; i++) {
		const struct imc_cat_unit *u = &cat->units[cat->entries[i].unit];
		struct imc_feed f;
		char what[512], name[64], alt[64];
		if (u->type != IMC_TYPE_NEST || u->offset != r->offset ||
		    imc_feed_of(cat, i, &f, what, sizeof what) == HERITAGE_UNAVAILABLE)
			continue;
		snprintf(name, sizeof name, "%.*s", (int)strcspn(u->node, "@"), u->node);
		alt[0] = 0;
		if (strncmp(name, "centaur", 7) == 0)
			snprintf(alt, sizeof alt, "cen%s", name + 7);
		for (unsigned b = 0; b < sizeof p9_nest_pmus / sizeof p9_nest_pmus[0]; b++) {
			const char *p = p9_nest_pmus[b];
			int hit = strcmp(p, name) == 0 || strcmp(p, alt) == 0;
			if (!hit && strncmp(name, "mcs", 3) == 0 && strlen(name) == 5 && strncmp(p, "mcs", 3) == 0 &&
			    strlen(p) == 4)
				hit = p[3] == name[3] || p[3] == name[4];
			if (hit)
				v |= ppc_bit(b);
		}
	}
	return v;
}

static void cb_init(struct imc_engine *e, struct imc_page *p)
{
	uint8_t *cb = p->mem + p->cb_offset;
	unsigned speed = imc_speed_setting();
	imc_be_store(cb + IMC_CB_RUN_STATUS, IMC_RUN_RUNNING);
	imc_be_store(cb + IMC_CB_COMMAND, IMC_CMD_NOP);
	imc_be_store(cb + IMC_CB_SPEED, speed);
	imc_be_store(cb + IMC_CB_AVL_VECTOR, avl_vector(e->cat, &e->regions[p->region]));
	imc_be_store(cb + IMC_CB_RUN_MODE, 0);
	p->status = IMC_RUN_RUNNING;
	p->period_ns = imc_speed_ns[speed];
}

static struct imc_page *page_new(unsigned type, unsigned index, size_t size)
{
	struct imc_page *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->type = type;
	p->index = index;
	p->size = size;
	p->status = IMC_RUN_RUNNING;
	return p;
}

static void page_free(struct imc_page *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->nfeeds; i++) {
		if (p->feeds[i].fds)
			for (unsigned k = 0; k < p->npoints; k++)
				if (p->feeds[i].fds[k] >= 0)
					close(p->feeds[i].fds[k]);
		free(p->feeds[i].fds);
	}
	free(p->feeds);
	free(p->points);
	if (p->published)
		imc_shm_retire(p->mem, (uint32_t)p->size, p->path, p->ino);
	if (p->mem)
		munmap(p->mem, p->map_size);
	free(p);
}

/* A nest page of this process's engine, or imcd's (kind DAEMON: created and
 * published; PROCESS: mapped if imcd publishes it). */
static int nest_page_make(struct imc_engine *e, unsigned chip, unsigned r, int want_remote, char *why, size_t len)
{
	const struct imc_region *reg = &e->regions[r];
	struct imc_page *p = page_new(IMC_TYPE_NEST, chip, reg->size);
	if (!p)
		return -ENOMEM;
	p->region = r;
	p->cb_offset = reg->cb_offset;
	p->has_cb = reg->has_cb;
	p->npoints = 1;
	p->points = calloc(1, sizeof *p->points);
	if (!p->points) {
		page_free(p);
		return -ENOMEM;
	}
	p->points[0].cpu = -1;
	int err = 0;
	imc_shm_path(p->path, sizeof p->path, chip, reg->offset);
	if (e->kind == IMC_ENGINE_DAEMON) {
		unsigned speed = imc_speed_setting();
		err = imc_shm_create(p->path, chip, reg->offset, reg->size, reg->cb_offset, e->hash, imc_speed_ns[speed],
		                     &p->mem, &p->ino, why, len);
		p->published = !err;
		p->map_size = (size_t)reg->size + IMC_SHM_HEADER;
	} else if (want_remote) {
		err = imc_shm_map(p->path, chip, reg->offset, reg->size, e->hash, &p->mem, why, len);
		p->remote = !err;
		struct stat st;
		/* Which object: a restarted imcd's is another inode. */
		p->ino = !err && stat(p->path, &st) == 0 ? st.st_ino : 0;
		p->map_size = (size_t)reg->size + IMC_SHM_HEADER;
	} else {
		p->mem = anon_page(reg->size);
		p->map_size = reg->size;
		err = p->mem ? 0 : -ENOMEM;
	}
	if (err) {
		p->published = 0;
		page_free(p);
		return err;
	}
	if (!p->remote && p->has_cb)
		cb_init(e, p);
	if (!p->has_cb)
		p->period_ns = imc_speed_ns[e->speed];
	e->nest[chip * e->nregions + r] = p;
	return 0;
}

/* Every chip's and region's nest page: imcd's (want_remote) or this
 * process's own.  0, or the first error with why. */
static int nest_pages_make(struct imc_engine *e, int want_remote, char *why, size_t len)
{
	int err = 0;
	for (unsigned c = 0; c < e->topo->nchips && !err; c++)
		for (unsigned r = 0; r < e->nregions && !err; r++)
			err = nest_page_make(e, c, r, want_remote, why, len);
	return err;
}

/* nest_where once the nest pages are imcd's. */
static void nest_where_imcd(struct imc_engine *e)
{
	snprintf(e->nest_where, sizeof e->nest_where, "imcd pid %d (%s, shared by every process)",
	         (int)imc_shm_header(e->nest[0]->mem, (uint32_t)e->nest[0]->size)->pid, e->nest[0]->path);
}

static struct imc_page *core_page(struct imc_engine *e, unsigned core, uint32_t size)
{
	if (e->core[core])
		return e->core[core];
	struct imc_page *p = page_new(IMC_TYPE_CORE, core, size);
	if (!p)
		return NULL;
	p->points = calloc(e->topo->npus, sizeof *p->points);
	for (unsigned i = 0; p->points && i < e->topo->npus; i++)
		if (e->topo->pu[i].core == core)
			p->points[p->npoints++] = (struct imc_point){ .cpu = (int)e->topo->pu[i].os };
	p->mem = anon_page(size);
	p->map_size = size;
	if (!p->points || !p->mem || !p->npoints) {
		page_free(p);
		return NULL;
	}
	p->period_ns = imc_speed_ns[e->speed];
	return e->core[core] = p;
}

static struct imc_page *thread_page(struct imc_engine *e, uint32_t size, char *why, size_t len)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	for (unsigned i = 0; i < e->nthreads; i++)
		if (e->threads[i]->tid == tid && e->threads[i]->size == size)
			return e->threads[i];
	clockid_t clk;
	int err = pthread_getcpuclockid(pthread_self(), &clk);
	if (err) {
		snprintf(why, len, "pthread_getcpuclockid: %s", strerror(err));
		return NULL;
	}
	if (e->nthreads == e->cap_threads) {
		unsigned cap = e->cap_threads ? 2 * e->cap_threads : 8;
		struct imc_page **t = realloc(e->threads, cap * sizeof *t);
		if (!t)
			return NULL;
		e->threads = t;
		e->cap_threads = cap;
	}
	struct imc_page *p = page_new(IMC_TYPE_THREAD, e->nthreads, size);
	if (!p)
		return NULL;
	p->tid = tid;
	p->points = calloc(1, sizeof *p->points);
	p->mem = anon_page(size);
	p->map_size = size;
	if (!p->points || !p->mem) {
		page_free(p);
		return NULL;
	}
	p->npoints = 1;
	p->points[0] = (struct imc_point){ .tid = tid, .clock = clk, .cpu = -1 };
	p->period_ns = imc_speed_ns[e->speed];
	e->threads[e->nthreads++] = p;
	return p;
}

/* ---- updating ------------------------------------------------------------------------- */

/* One feed's counter from its sources now.  Errors (a thread gone, a perf
 * read refused) leave the counter where it was. */
static void feed_update(struct imc_engine *e, struct imc_page *p, struct imc_feed_state *f)
{
	uint64_t sum = 0, v;
	unsigned n = p->type == IMC_TYPE_CORE && f->feed.per_thread_sum ? p->npoints : 1;
	for (unsigned k = 0; k < n; k++) {
		if (e->src(e->src_arg, &f->feed, &p->points[k], f->fds ? f->fds[k] : -1, &v) != 0)
			return;
		sum += v;
	}
	if (!f->primed) {
		f->src0 = sum;
		f->primed = 1;
	}
	uint64_t value = f->base + (uint64_t)(((unsigned __int128)(sum - f->src0) * f->feed.num) / f->feed.den);
	imc_be_store(p->mem + f->offset, value);
}

static void page_update(struct imc_engine *e, struct imc_page *p)
{
	for (unsigned i = 0; i < p->nfeeds; i++)
		feed_update(e, p, &p->feeds[i]);
}

/* Counting continues from what the page holds (resume, re-arm, preset). */
static void feed_reorigin(struct imc_page *p, struct imc_feed_state *f)
{
	f->base = imc_be_load(p->mem + f->offset);
	f->primed = 0;
}

/* The microcode's side of the control block: the command (acknowledged by
 * writing NOP back, so that a second pause or clear is seen as one) and the
 * collection speed, read every poll. */
static void nest_cb(struct imc_engine *e, struct imc_page *p, uint64_t now)
{
	uint8_t *cb = p->mem + p->cb_offset;
	uint64_t cmd = imc_be_load(cb + IMC_CB_COMMAND);
	switch (cmd) {
	case IMC_CMD_NOP:
		break;
	case IMC_CMD_RESUME:
		if (p->status != IMC_RUN_RUNNING) {
			for (unsigned i = 0; i < p->nfeeds; i++)
				feed_reorigin(p, &p->feeds[i]);
			p->status = IMC_RUN_RUNNING;
			p->next_ns = now;
		}
		break;
	case IMC_CMD_PAUSE:
		if (p->status == IMC_RUN_RUNNING) {
			page_update(e, p); /* the counts up to the pause */
			p->status = IMC_RUN_PAUSED;
		}
		break;
	case IMC_CMD_CLEAR:
		/* Every counter of the region to 0 (not the control block), then
		 * counting from now. */
		memset(p->mem, 0, p->cb_offset < p->size ? p->cb_offset : p->size);
		for (unsigned i = 0; i < p->nfeeds; i++) {
			p->feeds[i].base = 0;
			p->feeds[i].primed = 0;
		}
		p->status = IMC_RUN_RUNNING;
		p->next_ns = now;
		break;
	default:
		break; /* unknown: ignored, as the OCC does */
	}
	if (cmd != IMC_CMD_NOP)
		imc_be_store(cb + IMC_CB_COMMAND, IMC_CMD_NOP);
	imc_be_store(cb + IMC_CB_RUN_STATUS, (uint64_t)p->status);
	uint64_t speed = imc_be_load(cb + IMC_CB_SPEED);
	if (speed < IMC_NSPEEDS && imc_speed_ns[speed] != p->period_ns) {
		p->period_ns = imc_speed_ns[speed];
		p->next_ns = now;
	}
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t page_tick(struct imc_engine *e, struct imc_page *p, uint64_t now)
{
	if (!p || p->remote)
		return UINT64_MAX;
	uint64_t next = UINT64_MAX;
	if (p->has_cb) {
		if (now >= p->cb_next_ns) {
			nest_cb(e, p, now);
			p->cb_next_ns = now + min_u64(p->period_ns, IMC_CB_POLL_NS);
		}
		next = p->cb_next_ns;
	}
	if (p->status == IMC_RUN_RUNNING && p->nfeeds && p->users) {
		if (now >= p->next_ns) {
			page_update(e, p);
			/* Keep the cadence; after a long delay, restart it from now. */
			p->next_ns = p->next_ns + p->period_ns > now ? p->next_ns + p->period_ns : now + p->period_ns;
		}
		next = min_u64(next, p->next_ns);
	}
	if (p->published) {
		struct imc_shm_header *h = imc_shm_header(p->mem, (uint32_t)p->size);
		__atomic_store_n(&h->period_ns, p->period_ns, __ATOMIC_RELAXED);
		__atomic_store_n(&h->heartbeat_ns, imc_shm_boottime_ns(), __ATOMIC_RELEASE);
		/* A daemon with nothing to count still beats. */
		next = min_u64(next, now + min_u64(p->period_ns, 1000000000ULL));
	}
	return next;
}

uint64_t imc_engine_tick(struct imc_engine *e, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	pthread_mutex_lock(&e->lock);
	for (unsigned i = 0; i < e->topo->nchips * e->nregions; i++)
		next = min_u64(next, page_tick(e, e->nest[i], now));
	/* A replaced page of our own still counts for the sets that read it
	 * (retake_imcd); imcd's (remote) are not ours to tick. */
	for (struct imc_page *p = e->retired; p; p = p->next_retired)
		next = min_u64(next, page_tick(e, p, now));
	for (unsigned i = 0; i < e->topo->ncores; i++)
		next = min_u64(next, page_tick(e, e->core[i], now));
	for (unsigned i = 0; i < e->nthreads; i++)
		next = min_u64(next, page_tick(e, e->threads[i], now));
	pthread_mutex_unlock(&e->lock);
	return next;
}

/* ---- the engine ------------------------------------------------------------------------ */

/* fork() while the update thread holds an engine's lock would leave the
 * child's copy locked for ever: every live engine's lock is taken around
 * fork (the child then starts its own thread on its first imc_engine_run). */
#define IMC_MAX_ENGINES 16
static pthread_mutex_t engines_lock = PTHREAD_MUTEX_INITIALIZER;
static struct imc_engine *engines[IMC_MAX_ENGINES];
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void)
{
	pthread_mutex_lock(&engines_lock);
	for (unsigned i = 0; i < IMC_MAX_ENGINES; i++)
		if (engines[i])
			pthread_mutex_lock(&engines[i]->lock);
}

static void fork_after(void)
{
	for (unsigned i = 0; i < IMC_MAX_ENGINES; i++)
		if (engines[i])
			pthread_mutex_unlock(&engines[i]->lock);
	pthread_mutex_unlock(&engines_lock);
}

static void atfork_setup(void)
{
	pthread_atfork(fork_prepare, fork_after, fork_after);
}

static void engines_add(struct imc_engine *e, int add)
{
	pthread_once(&atfork_once, atfork_setup);
	pthread_mutex_lock(&engines_lock);
	for (unsigned i = 0; i < IMC_MAX_ENGINES; i++)
		if (add ? !engines[i] : engines[i] == e) {
			engines[i] = add ? e : NULL;
			break;
		}
	pthread_mutex_unlock(&engines_lock);
}

int imc_engine_create(const struct imc_catalog *cat, const struct imc_topo *topo, enum imc_engine_kind kind,
                      struct imc_engine **out)
{
	struct imc_engine *e = calloc(1, sizeof *e);
	if (!e)
		return heritage_fail(-ENOMEM, "imc: out of memory");
	e->cat = cat;
	e->topo = topo;
	e->kind = kind;
	e->speed = imc_speed_setting();
	e->src = real_source;
	e->hash = imc_shm_catalog_hash(cat);
	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->wake, &ca);
	pthread_condattr_destroy(&ca);
	engines_add(e, 1);
	/* The nest regions: distinct (offset, size) of the nest units. */
	for (unsigned i = 0; i < cat->nunits; i++) {
		const struct imc_cat_unit *u = &cat->units[i];
		if (u->type != IMC_TYPE_NEST)
			continue;
		unsigned r;
		for (r = 0; r < e->nregions; r++)
			if (e->regions[r].offset == u->offset && e->regions[r].size == u->size)
				break;
		if (r == e->nregions) {
			if (e->nregions == IMC_MAX_REGIONS) {
				imc_engine_destroy(e);
				return heritage_fail(-EINVAL, "imc: the catalog's nest units use more than %d regions (%s)",
				                     IMC_MAX_REGIONS, u->node);
			}
			int cb_ok = u->has_cb_offset && u->cb_offset + 5 * 8 <= u->size && !(u->cb_offset & 7);
			e->regions[e->nregions++] = (struct imc_region){ .offset = u->offset, .size = u->size,
			                                                  .cb_offset = cb_ok ? u->cb_offset : 0,
			                                                  .has_cb = cb_ok };
		}
	}
	e->nest = calloc((size_t)topo->nchips * (e->nregions ? e->nregions : 1), sizeof *e->nest);
	e->core = calloc(topo->ncores ? topo->ncores : 1, sizeof *e->core);
	if (!e->nest || !e->core) {
		imc_engine_destroy(e);
		return heritage_fail(-ENOMEM, "imc: out of memory");
	}
	char why[512] = "";
	int err = 0;
	if (kind == IMC_ENGINE_PROCESS && e->nregions) {
		/* imcd's pages for every chip, or none: one system-wide view. */
		err = nest_pages_make(e, 1, why, sizeof why);
		if (!err) {
			e->nest_shared = 1;
			nest_where_imcd(e);
		} else {
			for (unsigned i = 0; i < topo->nchips * e->nregions; i++) {
				page_free(e->nest[i]);
				e->nest[i] = NULL;
			}
			snprintf(e->nest_where, sizeof e->nest_where, "this process's engine (not shared: %s)", why);
		}
		err = 0;
	} else if (kind == IMC_ENGINE_DAEMON) {
		err = nest_pages_make(e, 0, why, sizeof why);
		if (err) {
			imc_engine_destroy(e);
			return heritage_fail(err, "imcd: %s", why);
		}
		e->nest_shared = 1;
		snprintf(e->nest_where, sizeof e->nest_where, "published by this imcd (pid %d)", (int)getpid());
		/* Every nest entry with a source counts from the start. */
		for (unsigned i = 0; i < cat->nentries; i++) {
			const struct imc_cat_unit *u = &cat->units[cat->entries[i].unit];
			struct imc_feed f;
			char what[512];
			if (u->type != IMC_TYPE_NEST || imc_feed_of(cat, i, &f, what, sizeof what) == HERITAGE_UNAVAILABLE)
				continue;
			for (unsigned c = 0; c < topo->nchips; c++) {
				struct imc_counter ctr;
				int cpu = -1;
				for (unsigned k = 0; k < topo->npus && cpu < 0; k++)
					if (topo->pu[k].chip == c)
						cpu = (int)topo->pu[k].os;
				if (cpu >= 0)
					imc_engine_arm(e, i, cpu, &ctr);
			}
		}
	} else {
		snprintf(e->nest_where, sizeof e->nest_where, "this process's engine (private)");
	}
	/* This process's own nest pages, control block and all, from the start. */
	if (!e->nest_shared && !err)
		err = nest_pages_make(e, 0, why, sizeof why);
	if (err) {
		imc_engine_destroy(e);
		return heritage_fail(err, "imc: cannot make the nest pages: %s", why);
	}
	*out = e;
	return 0;
}

void imc_engine_destroy(struct imc_engine *e)
{
	if (!e)
		return;
	engines_add(e, 0);
	pthread_mutex_lock(&e->lock);
	int joined = e->thread_pid == getpid();
	e->stopping = 1;
	pthread_cond_broadcast(&e->wake);
	pthread_mutex_unlock(&e->lock);
	if (joined)
		pthread_join(e->thread, NULL);
	for (unsigned i = 0; e->nest && i < e->topo->nchips * e->nregions; i++)
		page_free(e->nest[i]);
	while (e->retired) {
		struct imc_page *p = e->retired;
		e->retired = p->next_retired;
		page_free(p);
	}
	for (unsigned i = 0; e->core && i < e->topo->ncores; i++)
		page_free(e->core[i]);
	for (unsigned i = 0; i < e->nthreads; i++)
		page_free(e->threads[i]);
	free(e->nest);
	free(e->core);
	free(e->threads);
	pthread_cond_destroy(&e->wake);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

void imc_engine_set_source(struct imc_engine *e, imc_source_fn fn, void *arg)
{
	pthread_mutex_lock(&e->lock);
	e->src = fn ? fn : real_source;
	e->src_arg = arg;
	/* Feeds already armed count on from their counters' values. */
	for (unsigned i = 0; i < e->topo->nchips * e->nregions; i++)
		for (unsigned k = 0; e->nest[i] && !e->nest[i]->remote && k < e->nest[i]->nfeeds; k++)
			feed_reorigin(e->nest[i], &e->nest[i]->feeds[k]);
	pthread_mutex_unlock(&e->lock);
}

int imc_engine_set_speed(struct imc_engine *e, unsigned speed)
{
	if (speed >= IMC_NSPEEDS)
		return heritage_fail(-EINVAL, "imc: collection speed %u: give 0..7 (128 us .. 1000 ms)", speed);
	pthread_mutex_lock(&e->lock);
	e->speed = speed;
	for (unsigned i = 0; i < e->topo->ncores; i++)
		if (e->core[i])
			e->core[i]->period_ns = imc_speed_ns[speed], e->core[i]->next_ns = 0;
	for (unsigned i = 0; i < e->nthreads; i++)
		e->threads[i]->period_ns = imc_speed_ns[speed], e->threads[i]->next_ns = 0;
	/* This process's own nest pages: through their control blocks, which
	 * the engine obeys at its next poll (imcd's are its own). */
	for (unsigned i = 0; i < e->topo->nchips * e->nregions; i++)
		if (e->nest[i] && !e->nest[i]->remote && e->nest[i]->has_cb) {
			imc_be_store(e->nest[i]->mem + e->nest[i]->cb_offset + IMC_CB_SPEED, speed);
			e->nest[i]->cb_next_ns = 0;
		}
	pthread_cond_broadcast(&e->wake);
	pthread_mutex_unlock(&e->lock);
	return 0;
}

static void *engine_main(void *arg)
{
	struct imc_engine *e = arg;
	/* The engine never takes the program's signals (its SIGPROF, SIGALRM),
	 * but it can be parked: a page-trap window parks every thread and
	 * waited for this one until its timeout, 200 ms a window (ctests/stress:
	 * 46 windows in 8 s with eight threads on page traps).  Parked, it
	 * waits out a window of microseconds. */
	sigset_t all;
	sigfillset(&all);
	sigdelset(&all, watch_park_signal());
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		uint64_t next = imc_engine_tick(e, mono_ns());
		pthread_mutex_lock(&e->lock);
		if (e->stopping) {
			pthread_mutex_unlock(&e->lock);
			break;
		}
		if (next == UINT64_MAX)
			next = mono_ns() + 1000000000ULL;
		struct timespec ts = { .tv_sec = (time_t)(next / 1000000000ULL), .tv_nsec = (long)(next % 1000000000ULL) };
		pthread_cond_timedwait(&e->wake, &e->lock, &ts);
		int stop = e->stopping;
		pthread_mutex_unlock(&e->lock);
		if (stop)
			break;
	}
	return NULL;
}

int imc_engine_run(struct imc_engine *e)
{
	pthread_mutex_lock(&e->lock);
	if (e->thread_pid == getpid()) {
		pthread_mutex_unlock(&e->lock);
		return 0;
	}
	/* A forked child inherits no thread: it starts its own. */
	int err = pthread_create(&e->thread, NULL, engine_main, e);
	if (!err)
		e->thread_pid = getpid();
	pthread_mutex_unlock(&e->lock);
	return err ? heritage_fail(-err, "imc: cannot start the engine thread: %s", strerror(err)) : 0;
}

/* Under e->lock: the replaced pages in old go now if no set reads them,
 * else when the last set that does releases them.  Kept for good before,
 * one mapping of 260 KiB per imcd restart stayed in every reader
 * (ctests/stress: 6 after 6 restarts), and the freed record was then read
 * by imc_engine_release. */
static void retire_replaced(struct imc_engine *e, struct imc_page **old)
{
	for (unsigned i = 0; i < e->topo->nchips * e->nregions; i++)
		if (old[i] && old[i] != e->nest[i]) {
			if (old[i]->users == 0) {
				page_free(old[i]);
			} else {
				old[i]->retired = 1;
				old[i]->next_retired = e->retired;
				e->retired = old[i];
			}
		}
}

/* Under e->lock, counting in this process's pages since imcd's went stale:
 * a restarted imcd's objects (another inode than the dead one's) are taken
 * again, as they would have been had no set started in between; sets
 * running on our own pages keep them, retired and still ticked.  Since a
 * reader in imcd's pid namespace drops a dead imcd's pages 2 periods after
 * its last pass, not 5 s, a set started in the gap of a restart (300 ms in
 * ctests/stress) made the process count itself for good. */
static void retake_imcd(struct imc_engine *e)
{
	struct stat st;
	unsigned n = e->topo->nchips * e->nregions;
	if (!n || stat(e->nest[0]->path, &st) != 0 || st.st_ino == e->nest_gone_ino)
		return;
	struct imc_page **own = malloc(n * sizeof *own);
	if (!own)
		return;
	memcpy(own, e->nest, n * sizeof *own);
	char why[512];
	if (nest_pages_make(e, 1, why, sizeof why)) {
		for (unsigned i = 0; i < n; i++)
			if (e->nest[i] != own[i])
				page_free(e->nest[i]);
		memcpy(e->nest, own, n * sizeof *own);
	} else {
		e->nest_shared = 1;
		e->nest_fell_back = 0;
		nest_where_imcd(e);
		retire_replaced(e, own);
	}
	free(own);
}

int imc_engine_check_nest(struct imc_engine *e)
{
	pthread_mutex_lock(&e->lock);
	if (e->kind != IMC_ENGINE_PROCESS || !e->nest_shared) {
		if (e->kind == IMC_ENGINE_PROCESS && e->nest_fell_back)
			retake_imcd(e);
		pthread_mutex_unlock(&e->lock);
		return 0;
	}
	uint64_t now = imc_shm_boottime_ns();
	int stale = 0;
	int32_t pid = 0;
	for (unsigned i = 0; i < e->topo->nchips * e->nregions; i++) {
		const struct imc_shm_header *h = imc_shm_header(e->nest[i]->mem, (uint32_t)e->nest[i]->size);
		struct stat st;
		pid = h->pid;
		/* Stale, or removed (imcd stopped) or replaced (restarted). */
		stale |= imc_shm_stale(h, now) || stat(e->nest[i]->path, &st) != 0 || st.st_ino != e->nest[i]->ino;
	}
	if (!stale) {
		pthread_mutex_unlock(&e->lock);
		return 0;
	}
	/* A restarted imcd publishes new objects; else this process counts.
	 * The old mappings stay: a set of another thread may be reading them. */
	char why[512] = "";
	int err = 0;
	struct imc_page **old = malloc((size_t)e->topo->nchips * e->nregions * sizeof *old);
	if (!old) {
		pthread_mutex_unlock(&e->lock);
		return heritage_fail(-ENOMEM, "imc: out of memory");
	}
	memcpy(old, e->nest, (size_t)e->topo->nchips * e->nregions * sizeof *old);
	err = nest_pages_make(e, 1, why, sizeof why);
	if (err) {
		snprintf(e->nest_where, sizeof e->nest_where,
		         "this process's engine (imcd pid %d's pages are gone or stale, and no imcd replaces them: %s)", (int)pid,
		         why);
		e->nest_shared = 0;
		e->nest_fell_back = 1;
		e->nest_gone_ino = old[0] ? old[0]->ino : 0;
		err = nest_pages_make(e, 0, why, sizeof why);
	} else {
		nest_where_imcd(e);
	}
	retire_replaced(e, old);
	free(old);
	pthread_cond_broadcast(&e->wake);
	pthread_mutex_unlock(&e->lock);
	return err ? heritage_fail(err, "imc: cannot make the nest pages: %s", why) : 0;
}

const char *imc_engine_nest_where(const struct imc_engine *e)
{
	return e->nest_where;
}

int imc_engine_nest_shared(const struct imc_engine *e)
{
	return e->nest_shared;
}

/* ---- counters -------------------------------------------------------------------------- */

static int first_cpu_of(const struct imc_topo *t, int cpu)
{
	return cpu >= 0 ? cpu : t->npus ? (int)t->pu[0].os : 0;
}

int imc_engine_arm(struct imc_engine *e, unsigned entry, int cpu, struct imc_counter *c)
{
	const struct imc_catalog *cat = e->cat;
	if (entry >= cat->nentries)
		return heritage_fail(-EINVAL, "imc: no catalog entry %u", entry);
	const struct imc_cat_entry *ce = &cat->entries[entry];
	const struct imc_cat_unit *u = &cat->units[ce->unit];
	struct imc_feed feed;
	char what[600];
	if (imc_feed_of(cat, entry, &feed, what, sizeof what) == HERITAGE_UNAVAILABLE)
		return heritage_fail(-ENOTSUP, "imc: %s is %s", ce->name, what);
	if (ce->value + 8 > u->size)
		return heritage_fail(-EINVAL, "imc: %s: offset %#llx is beyond its unit's page (size %#x)", ce->name,
		                     (unsigned long long)ce->value, u->size);
	cpu = first_cpu_of(e->topo, cpu);
	int err = 0;
	pthread_mutex_lock(&e->lock);
	struct imc_page *p = NULL;
	switch (u->type) {
	case IMC_TYPE_NEST: {
		int chip = imc_topo_chip_of(e->topo, (unsigned)cpu);
		unsigned r;
		for (r = 0; r < e->nregions; r++)
			if (e->regions[r].offset == u->offset && e->regions[r].size == u->size)
				break;
		if (chip < 0 || r == e->nregions) {
			err = heritage_fail(-EINVAL, "imc: %s: CPU %d is on no chip of this machine", ce->name, cpu);
			break;
		}
		if (!e->nest[(unsigned)chip * e->nregions + r] &&
		    (err = nest_page_make(e, (unsigned)chip, r, 0, what, sizeof what)) != 0) {
			err = heritage_fail(err, "imc: nest page of chip %d: %s", chip, what);
			break;
		}
		p = e->nest[(unsigned)chip * e->nregions + r];
		break;
	}
	case IMC_TYPE_CORE: {
		int core = imc_topo_core_of(e->topo, (unsigned)cpu);
		if (core < 0) {
			err = heritage_fail(-EINVAL, "imc: %s: CPU %d is on no core of this machine", ce->name, cpu);
			break;
		}
		if (!(p = core_page(e, (unsigned)core, u->size)))
			err = heritage_fail(-ENOMEM, "imc: cannot make the page of core %d", core);
		break;
	}
	case IMC_TYPE_THREAD:
		if (!(p = thread_page(e, u->size, what, sizeof what)))
			err = heritage_fail(-ENOMEM, "imc: cannot make this thread's page: %s", what);
		break;
	default:
		err = heritage_fail(-ENOTSUP, "imc: %s: unit type %#x is not counted by the accumulation engine", ce->name,
		                    u->type);
	}
	if (err) {
		pthread_mutex_unlock(&e->lock);
		return err;
	}
	*c = (struct imc_counter){ .page = p, .word = p->mem + ce->value, .entry = entry, .feed = -1 };
	if (p->remote) { /* imcd counts every nest entry with a source */
		p->users++; /* only to keep it mapped while read (check_nest) */
		pthread_mutex_unlock(&e->lock);
		return 0;
	}
	/* A page nobody counts is not updated (the kernel stops the core and
	 * nest engines at their last release, imc-pmu.c): its first user again
	 * counts on from the values it holds, the idle time not counted. */
	if (p->users++ == 0)
		for (unsigned i = 0; i < p->nfeeds; i++) {
			feed_reorigin(p, &p->feeds[i]);
			feed_update(e, p, &p->feeds[i]);
		}
	for (unsigned i = 0; i < p->nfeeds; i++)
		if (p->feeds[i].offset == (uint32_t)ce->value) {
			c->feed = (int)i;
			pthread_mutex_unlock(&e->lock);
			return 0;
		}
	if (p->nfeeds == p->cap) {
		unsigned cap = p->cap ? 2 * p->cap : 8;
		struct imc_feed_state *f = realloc(p->feeds, cap * sizeof *f);
		if (!f) {
			pthread_mutex_unlock(&e->lock);
			return heritage_fail(-ENOMEM, "imc: out of memory");
		}
		p->feeds = f;
		p->cap = cap;
	}
	struct imc_feed_state *f = &p->feeds[p->nfeeds];
	*f = (struct imc_feed_state){ .entry = entry, .offset = (uint32_t)ce->value, .feed = feed };
	if (feed.kind == IMC_FEED_PMU_CYCLES || feed.kind == IMC_FEED_PMU_INSTRUCTIONS) {
		f->fds = malloc(p->npoints * sizeof *f->fds);
		for (unsigned k = 0; f->fds && k < p->npoints; k++)
			f->fds[k] = -1;
		for (unsigned k = 0; f->fds && k < p->npoints && !err; k++) {
			int fd = e->src == real_source ? perf_open(&feed, &p->points[k], what, sizeof what) : -1;
			if (fd < 0 && e->src == real_source)
				err = heritage_fail(fd, "imc: %s: %s", ce->name, what);
			f->fds[k] = fd;
		}
		if (!f->fds)
			err = heritage_fail(-ENOMEM, "imc: out of memory");
		if (err) {
			p->users--;
			for (unsigned k = 0; f->fds && k < p->npoints; k++)
				if (f->fds[k] >= 0)
					close(f->fds[k]);
			free(f->fds);
			pthread_mutex_unlock(&e->lock);
			return err;
		}
	}
	/* Counting starts from what the page holds (0 on a new page). */
	feed_reorigin(p, f);
	c->feed = (int)p->nfeeds++;
	feed_update(e, p, f);
	if (!p->next_ns)
		p->next_ns = 0;
	pthread_cond_broadcast(&e->wake);
	pthread_mutex_unlock(&e->lock);
	return 0;
}

void imc_engine_release(struct imc_engine *e, const struct imc_counter *c)
{
	if (!c->page)
		return;
	pthread_mutex_lock(&e->lock);
	struct imc_page *p = c->page;
	if (p->users)
		p->users--;
	if (p->retired && p->users == 0) {
		for (struct imc_page **q = &e->retired; *q; q = &(*q)->next_retired)
			if (*q == p) {
				*q = p->next_retired;
				break;
			}
		page_free(p);
	}
	pthread_mutex_unlock(&e->lock);
}

unsigned imc_engine_retired_pages(struct imc_engine *e)
{
	unsigned n = 0;
	pthread_mutex_lock(&e->lock);
	for (const struct imc_page *p = e->retired; p; p = p->next_retired)
		n++;
	pthread_mutex_unlock(&e->lock);
	return n;
}

int imc_counter_remote(const struct imc_counter *c)
{
	return c->page && c->page->remote;
}

int imc_counter_imcd_stale(const struct imc_counter *c, uint64_t now_ns, char *why, size_t len)
{
	const struct imc_page *p = c->page;
	if (!p || !p->remote)
		return 0;
	const struct imc_shm_header *h = imc_shm_header(p->mem, (uint32_t)p->size);
	if (!imc_shm_stale(h, now_ns))
		return 0;
	imc_shm_stale_why(h, now_ns, why, len);
	return 1;
}

int imc_engine_sync(struct imc_engine *e, const struct imc_counter *c)
{
	if (!c->page || c->page->remote || c->feed < 0)
		return 0;
	pthread_mutex_lock(&e->lock);
	if (c->page->status == IMC_RUN_RUNNING)
		feed_update(e, c->page, &c->page->feeds[c->feed]);
	pthread_mutex_unlock(&e->lock);
	return 0;
}

const uint8_t *imc_counter_page(const struct imc_counter *c, size_t *size)
{
	if (size)
		*size = c->page->size;
	return c->page->mem;
}

int imc_engine_preset(struct imc_engine *e, const struct imc_counter *c, uint64_t value)
{
	if (!c->page || c->page->remote || c->feed < 0)
		return heritage_fail(-EPERM, "imc: this counter is imcd's: it cannot be preset here");
	pthread_mutex_lock(&e->lock);
	struct imc_feed_state *f = &c->page->feeds[c->feed];
	imc_be_store(c->page->mem + f->offset, value);
	feed_reorigin(c->page, f);
	feed_update(e, c->page, f);
	pthread_mutex_unlock(&e->lock);
	return 0;
}

uint8_t *imc_engine_nest_cb(struct imc_engine *e, unsigned chip, unsigned region)
{
	if (chip >= e->topo->nchips || region >= e->nregions)
		return NULL;
	struct imc_page *p = e->nest[chip * e->nregions + region];
	if (!p || p->remote || !p->has_cb)
		return NULL;
	return p->mem + p->cb_offset;
}
