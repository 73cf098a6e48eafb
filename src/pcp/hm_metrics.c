#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/heritage_shm.h"
#include "imc/imc_catalog.h"
#include "imc/imc_engine.h"
#include "imc/imc_shm.h"
#include "imc/imc_sources.h"
#include "paragon/rpm_service.h"
#include "paragon/rpm_shared.h"
#include "pcp/hm_metrics.h"

#define RPMD(item_, name_, what_, arg_, type_, sem_, units_, indom_, text_)                                      \
	{ .name = "heritage.rpmd." name_, .cluster = HM_CLUSTER_RPMD, .item = (item_), .type = (type_),          \
	  .sem = (sem_), .units = (units_), .indom = (indom_), .what = (what_), .arg = (arg_), .oneline = (text_) }

/* Items are PCP's metric identifiers (domain:cluster:item): never renumber
 * one, only add (archives written by pmlogger name metrics by them). */
const struct hm_metric hm_metrics[] = {
	RPMD(0, "page_faults", HM_RPMD_COUNT, RPM_PF_ALL, HM_TYPE_U64, HM_SEM_COUNTER, HM_UNITS_COUNT, HM_INDOM_CPU,
	     "page faults on each CPU, counted system-wide by rpmd"),
	RPMD(1, "minor_faults", HM_RPMD_COUNT, RPM_PF_MIN, HM_TYPE_U64, HM_SEM_COUNTER, HM_UNITS_COUNT, HM_INDOM_CPU,
	     "minor page faults on each CPU, counted system-wide by rpmd"),
	RPMD(2, "major_faults", HM_RPMD_COUNT, RPM_PF_MAJ, HM_TYPE_U64, HM_SEM_COUNTER, HM_UNITS_COUNT, HM_INDOM_CPU,
	     "major page faults on each CPU, counted system-wide by rpmd"),
	RPMD(3, "syscalls", HM_RPMD_COUNT, RPM_SYSCALLS, HM_TYPE_U64, HM_SEM_COUNTER, HM_UNITS_COUNT, HM_INDOM_CPU,
	     "system calls entered on each CPU, counted system-wide by rpmd"),
	RPMD(4, "all.page_faults", HM_RPMD_TOTAL, RPM_PF_ALL, HM_TYPE_U64, HM_SEM_COUNTER, HM_UNITS_COUNT,
	     HM_INDOM_NULL, "page faults on all of rpmd's CPUs"),
	RPMD(5, "all.minor_faults", HM_RPMD_TOTAL, RPM_PF_MIN, HM_TYPE_U64, HM_SEM_COUNTER, HM_UNITS_COUNT,
	     HM_INDOM_NULL, "minor page faults on all of rpmd's CPUs"),
	RPMD(6, "all.major_faults", HM_RPMD_TOTAL, RPM_PF_MAJ, HM_TYPE_U64, HM_SEM_COUNTER, HM_UNITS_COUNT,
	     HM_INDOM_NULL, "major page faults on all of rpmd's CPUs"),
	RPMD(7, "all.syscalls", HM_RPMD_TOTAL, RPM_SYSCALLS, HM_TYPE_U64, HM_SEM_COUNTER, HM_UNITS_COUNT,
	     HM_INDOM_NULL, "system calls entered on all of rpmd's CPUs"),
	RPMD(8, "interval", HM_RPMD_INTERVAL, 0, HM_TYPE_U64, HM_SEM_DISCRETE, HM_UNITS_NSEC, HM_INDOM_NULL,
	     "how often rpmd publishes its counts"),
	RPMD(9, "age", HM_RPMD_AGE, 0, HM_TYPE_U64, HM_SEM_INSTANT, HM_UNITS_NSEC, HM_INDOM_NULL,
	     "time since rpmd last published its counts"),
	RPMD(10, "status", HM_RPMD_STATUS, 0, HM_TYPE_STRING, HM_SEM_INSTANT, HM_UNITS_NONE, HM_INDOM_NULL,
	     "which rpmd publishes the counts, or why no value is available"),
	{ .name = "heritage.imc.nest.count", .cluster = HM_CLUSTER_IMC, .item = 0, .type = HM_TYPE_U64,
	  .sem = HM_SEM_COUNTER, .units = HM_UNITS_COUNT, .indom = HM_INDOM_NEST, .what = HM_IMC_NEST,
	  .oneline = "IMC nest counters kept by imcd, in events (raw counter x catalog scale)" },
	{ .name = "heritage.imc.status", .cluster = HM_CLUSTER_IMC, .item = 1, .type = HM_TYPE_STRING,
	  .sem = HM_SEM_INSTANT, .units = HM_UNITS_NONE, .indom = HM_INDOM_NULL, .what = HM_IMC_STATUS,
	  .oneline = "which imcd publishes the nest pages, or why no value is available" },
	{ .name = "heritage.mesh.bytes", .cluster = HM_CLUSTER_MESH, .item = 0, .type = HM_TYPE_U64,
	  .sem = HM_SEM_COUNTER, .units = HM_UNITS_BYTE, .indom = HM_INDOM_ROUTER, .what = HM_MESH_BYTES,
	  .oneline = "bytes that left each router of the virtual Paragon mesh in each direction" },
	{ .name = "heritage.mesh.nodes", .cluster = HM_CLUSTER_MESH, .item = 1, .type = HM_TYPE_U32,
	  .sem = HM_SEM_INSTANT, .units = HM_UNITS_COUNT, .indom = HM_INDOM_NULL, .what = HM_MESH_NODES,
	  .oneline = "nodes of the virtual mesh (rows x columns)" },
	{ .name = "heritage.mesh.joined", .cluster = HM_CLUSTER_MESH, .item = 2, .type = HM_TYPE_U32,
	  .sem = HM_SEM_INSTANT, .units = HM_UNITS_COUNT, .indom = HM_INDOM_NULL, .what = HM_MESH_JOINED,
	  .oneline = "mesh nodes joined by a live process" },
	{ .name = "heritage.mesh.status", .cluster = HM_CLUSTER_MESH, .item = 3, .type = HM_TYPE_STRING,
	  .sem = HM_SEM_INSTANT, .units = HM_UNITS_NONE, .indom = HM_INDOM_NULL, .what = HM_MESH_STATUS,
	  .oneline = "which mesh object the values come from, or why no value is available" },
};
const unsigned hm_nmetrics = sizeof hm_metrics / sizeof hm_metrics[0];

const struct hm_metric *hm_metric_find(unsigned cluster, unsigned item)
{
	for (unsigned i = 0; i < hm_nmetrics; i++)
		if (hm_metrics[i].cluster == cluster && hm_metrics[i].item == item)
			return &hm_metrics[i];
	return NULL;
}

/* ---- state -------------------------------------------------------------------- */
struct hm_nest_page {
	unsigned chip;
	uint32_t offset, size;
	char path[512];
	const uint8_t *mem; /* size + IMC_SHM_HEADER, read-only; NULL: not mapped */
	ino_t ino;
};

struct hm_state {
	/* rpmd */
	char rpmd_path[512];
	const struct rpm_service_page *rpmd;
	ino_t rpmd_ino;
	uint64_t rpmd_hb; /* heartbeat of the counts read at refresh */
	uint64_t rpmd_now;
	uint64_t rpmd_counts[RPM_MAX_CPUS][RPM_PERF_NCOUNTS];
	unsigned rpmd_ncpus;
	char rpmd_status[600];
	/* imc */
	const struct imc_catalog *cat;
	uint64_t cat_hash;
	unsigned nchips;
	struct hm_nest_page *pages;
	unsigned npages;
	unsigned *nest_entries; /* catalog entries with a source here */
	unsigned nnest;
	char imc_status[700];
	/* mesh */
	char mesh_path[512];
	/* A copy, not a mapping: anyone may write the mesh object (0666) and so
	 * truncate it, and a load from a mapping past its end is SIGBUS, which
	 * would kill the agent for every client.  NULL: no mesh now. */
	struct rpm_mesh_state *mesh, mesh_copy;
	char mesh_status[600];
	/* instances */
	struct hm_inst *inst[HM_NINDOMS];
	unsigned ninst[HM_NINDOMS], cap[HM_NINDOMS];
};

int hm_open(struct hm_state **out)
{
	struct hm_state *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	rpm_service_path(s->rpmd_path, sizeof s->rpmd_path);
	snprintf(s->mesh_path, sizeof s->mesh_path, "/dev/shm/%s-mesh", rpm_shared_name());

	/* The nest pages imcd would publish: one per chip and nest region of
	 * the catalog, as imcd lays them out (imc_engine.c). */
	char why[512];
	s->cat = imc_catalog_get(why, sizeof why);
	const struct imc_topo *topo = s->cat ? imc_topo_get(why, sizeof why) : NULL;
	if (!s->cat || !topo) {
		snprintf(s->imc_status, sizeof s->imc_status, "no IMC catalog or topology: %s", why);
	} else {
		s->cat_hash = imc_shm_catalog_hash(s->cat);
		s->nchips = topo->nchips;
		s->nest_entries = calloc(s->cat->nentries ? s->cat->nentries : 1, sizeof *s->nest_entries);
		s->pages = calloc((size_t)s->cat->nunits * (topo->nchips ? topo->nchips : 1) + 1, sizeof *s->pages);
		if (!s->nest_entries || !s->pages) {
			hm_close(s);
			return -ENOMEM;
		}
		for (unsigned i = 0; i < s->cat->nentries; i++) {
			const struct imc_cat_unit *u = &s->cat->units[s->cat->entries[i].unit];
			struct imc_feed f;
			if (u->type == IMC_TYPE_NEST && imc_feed_of(s->cat, i, &f, NULL, 0) != HERITAGE_UNAVAILABLE)
				s->nest_entries[s->nnest++] = i;
		}
		for (unsigned c = 0; c < topo->nchips; c++)
			for (unsigned k = 0; k < s->cat->nunits; k++) {
				const struct imc_cat_unit *u = &s->cat->units[k];
				if (u->type != IMC_TYPE_NEST)
					continue;
				int dup = 0;
				for (unsigned p = 0; p < s->npages && !dup; p++)
					dup = s->pages[p].chip == c && s->pages[p].offset == u->offset &&
					      s->pages[p].size == u->size;
				if (dup)
					continue;
				struct hm_nest_page *p = &s->pages[s->npages++];
				p->chip = c;
				p->offset = u->offset;
				p->size = u->size;
				imc_shm_path(p->path, sizeof p->path, c, u->offset);
			}
	}
	*out = s;
	return 0;
}

static void rpmd_drop(struct hm_state *s)
{
	if (s->rpmd)
		munmap((void *)s->rpmd, sizeof *s->rpmd);
	s->rpmd = NULL;
	s->rpmd_ino = 0;
}

static void page_drop(struct hm_nest_page *p)
{
	if (p->mem)
		munmap((void *)p->mem, (size_t)p->size + IMC_SHM_HEADER);
	p->mem = NULL;
	p->ino = 0;
}

void hm_close(struct hm_state *s)
{
	if (!s)
		return;
	rpmd_drop(s);
	for (unsigned p = 0; p < s->npages; p++)
		page_drop(&s->pages[p]);
	free(s->pages);
	free(s->nest_entries);
	for (int i = 0; i < HM_NINDOMS; i++)
		free(s->inst[i]);
	free(s);
}

/* The inode now at path, 0 if none. */
static ino_t inode_at(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_ino : 0;
}

static void rpmd_refresh(struct hm_state *s)
{
	/* A daemon stopped with SIGTERM removes its page and a restarted one
	 * publishes a new inode: the mapping of the old one would go on
	 * showing frozen counts until its heartbeat went stale (5 s). */
	if (s->rpmd && rpm_service_replaced(s->rpmd_path, s->rpmd_ino))
		rpmd_drop(s);
	if (!s->rpmd) {
		char why[512];
		const struct rpm_service_page *p;
		int err = rpm_service_map(s->rpmd_path, rpm_service_trusted_uid(), &p, &s->rpmd_ino, why, sizeof why);
		if (err) {
			snprintf(s->rpmd_status, sizeof s->rpmd_status, "unavailable: %s", why);
			s->rpmd_ncpus = 0;
			return;
		}
		s->rpmd = p;
	}
	const struct rpm_service_page *p = s->rpmd;
	uint64_t now = heritage_boottime_ns(), hb = 0;
	unsigned n = p->ncpus < RPM_MAX_CPUS ? p->ncpus : RPM_MAX_CPUS;
	int err = 0;
	for (unsigned i = 0; i < n && !err; i++) {
		uint64_t h;
		err = rpm_service_read_cpu(p, i, s->rpmd_counts[i], &h);
		if (!err && h > hb)
			hb = h;
	}
	if (!err && rpm_service_stale(p, hb, now))
		err = -ESTALE;
	if (err) {
		snprintf(s->rpmd_status, sizeof s->rpmd_status,
		         "unavailable: %s: rpmd (pid %d) %s", s->rpmd_path, (int)p->pid,
		         err == -ESTALE ? "stopped publishing (stale heartbeat)" : "never finishes a publication");
		s->rpmd_ncpus = 0;
		rpmd_drop(s);
		return;
	}
	s->rpmd_hb = hb;
	s->rpmd_now = now;
	s->rpmd_ncpus = n;
	int len = snprintf(s->rpmd_status, sizeof s->rpmd_status, "rpmd pid %d publishes %s every %.3f s", (int)p->pid,
	                   s->rpmd_path, (double)p->interval_ns / 1e9);
	/* A count the daemon was refused has no value: say why once here. */
	static const char *const count_name[RPM_PERF_NCOUNTS] = { "page_faults", "minor_faults", "major_faults",
	                                                          "syscalls" };
	for (unsigned k = 0; k < RPM_PERF_NCOUNTS && len > 0 && (size_t)len < sizeof s->rpmd_status; k++)
		if (p->err[k])
			len += snprintf(s->rpmd_status + len, sizeof s->rpmd_status - (size_t)len, "; no %s: %.*s",
			                count_name[k], (int)strnlen(p->why[k], RPM_SERVICE_WHY_LEN), p->why[k]);
}

static void imc_refresh(struct hm_state *s)
{
	if (!s->cat)
		return;
	uint64_t now = heritage_boottime_ns();
	unsigned mapped = 0;
	char first_why[512] = "";
	for (unsigned i = 0; i < s->npages; i++) {
		struct hm_nest_page *p = &s->pages[i];
		if (p->mem && (inode_at(p->path) != p->ino ||
		               imc_shm_stale((const struct imc_shm_header *)(p->mem + p->size), now)))
			page_drop(p);
		if (!p->mem) {
			char why[512];
			uint8_t *mem;
			if (imc_shm_map(p->path, p->chip, p->offset, p->size, s->cat_hash, &mem, why, sizeof why) == 0) {
				p->mem = mem;
				p->ino = inode_at(p->path);
			} else if (!first_why[0]) {
				snprintf(first_why, sizeof first_why, "%s", why);
			}
		}
		mapped += p->mem != NULL;
	}
	if (mapped == s->npages && s->npages) {
		const struct imc_shm_header *h = (const void *)(s->pages[0].mem + s->pages[0].size);
		snprintf(s->imc_status, sizeof s->imc_status, "imcd pid %d publishes %u nest page(s) (%s ...), "
		         "%u counter(s) with a source per chip", (int)h->pid, s->npages, s->pages[0].path, s->nnest);
	} else if (s->npages) {
		snprintf(s->imc_status, sizeof s->imc_status, "unavailable: %u of %u nest page(s) published: %s",
		         mapped, s->npages, first_why);
	} else {
		snprintf(s->imc_status, sizeof s->imc_status, "unavailable: the IMC catalog (%s) has no nest unit",
		         s->cat->source);
	}
}

static void mesh_refresh(struct hm_state *s)
{
	/* Any process may create the mesh and replace it once nobody is on it:
	 * the object now at the name, copied whole with one pread (36 KiB; the
	 * counters are 8-byte aligned and each store to them is atomic). */
	s->mesh = NULL;
	int fd = open(s->mesh_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		snprintf(s->mesh_status, sizeof s->mesh_status, "unavailable: %s: %s (no process has used the mesh)",
		         s->mesh_path, strerror(errno));
		return;
	}
	struct stat st;
	ssize_t got = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		got = pread(fd, &s->mesh_copy, sizeof s->mesh_copy, 0);
	int e = errno;
	close(fd);
	if (got != (ssize_t)sizeof s->mesh_copy) {
		snprintf(s->mesh_status, sizeof s->mesh_status, "unavailable: %s is not a mesh object of this version "
		         "(%s; %zu bytes expected)", s->mesh_path, got < 0 ? strerror(e) : "too short",
		         sizeof s->mesh_copy);
		return;
	}
	if (s->mesh_copy.magic != RPM_SHARED_MAGIC) {
		snprintf(s->mesh_status, sizeof s->mesh_status, "unavailable: %s is not initialised (yet)", s->mesh_path);
		return;
	}
	s->mesh = &s->mesh_copy;
}

/* rows x cols now, bounded by the object's size. */
static unsigned mesh_nodes(const struct rpm_mesh_state *m)
{
	uint64_t n = (uint64_t)m->rows * m->cols;
	return n > RPM_MESH_MAX_NODES ? RPM_MESH_MAX_NODES : (unsigned)n;
}

static struct hm_inst *inst_add(struct hm_state *s, enum hm_indom d)
{
	if (s->ninst[d] == s->cap[d]) {
		unsigned cap = s->cap[d] ? 2 * s->cap[d] : 64;
		struct hm_inst *n = realloc(s->inst[d], cap * sizeof *n);
		if (!n)
			return NULL;
		s->inst[d] = n;
		s->cap[d] = cap;
	}
	return &s->inst[d][s->ninst[d]++];
}

void hm_refresh(struct hm_state *s)
{
	rpmd_refresh(s);
	imc_refresh(s);
	mesh_refresh(s);

	for (int d = 0; d < HM_NINDOMS; d++)
		s->ninst[d] = 0;
	for (unsigned i = 0; i < s->rpmd_ncpus; i++) {
		struct hm_inst *in = inst_add(s, HM_INDOM_CPU);
		if (!in)
			break;
		in->id = (int)s->rpmd->cpu[i].os;
		snprintf(in->name, sizeof in->name, "cpu%u", s->rpmd->cpu[i].os);
	}
	for (unsigned c = 0; s->cat && c < s->nchips; c++)
		for (unsigned k = 0; k < s->nnest; k++) {
			struct hm_inst *in = inst_add(s, HM_INDOM_NEST);
			if (!in)
				break;
			in->id = (int)(c << 16 | s->nest_entries[k]);
			snprintf(in->name, sizeof in->name, "chip%u:%s", c, s->cat->entries[s->nest_entries[k]].name);
		}
	static const char *const dir[RPM_NDIRS] = { "north", "south", "east", "west" };
	for (unsigned n = 0; s->mesh && n < mesh_nodes(s->mesh); n++)
		for (unsigned d = 0; d < RPM_NDIRS; d++) {
			struct hm_inst *in = inst_add(s, HM_INDOM_ROUTER);
			if (!in)
				break;
			in->id = (int)(n * RPM_NDIRS + d);
			snprintf(in->name, sizeof in->name, "node%u:%s", n, dir[d]);
		}
	if (s->mesh)
		snprintf(s->mesh_status, sizeof s->mesh_status, "%s: %ux%u mesh", s->mesh_path, s->mesh->rows,
		         s->mesh->cols);
}

const struct hm_inst *hm_instances(struct hm_state *s, enum hm_indom indom, unsigned *n)
{
	if (indom < 0 || indom >= HM_NINDOMS) {
		*n = 0;
		return NULL;
	}
	*n = s->ninst[indom];
	return s->inst[indom];
}

static int rpmd_count(struct hm_state *s, unsigned k, int cpu, uint64_t *out)
{
	if (!s->rpmd_ncpus)
		return -EAGAIN;
	if (s->rpmd->err[k]) /* the daemon runs but was refused this count */
		return -ENODATA;
	uint64_t sum = 0;
	int found = 0;
	for (unsigned i = 0; i < s->rpmd_ncpus; i++)
		if (cpu < 0 || (int)s->rpmd->cpu[i].os == cpu) {
			sum += s->rpmd_counts[i][k];
			found = 1;
		}
	if (!found)
		return -ENOENT;
	*out = sum;
	return 0;
}

/* The catalog's scale of an entry, as an integer (perf's .scale: count =
 * raw x scale); 0 if it is not one (then the raw value is not served). */
static uint64_t entry_scale(const struct imc_cat_entry *e)
{
	if (!e->scale)
		return 1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(e->scale, &end, 0);
	return errno || *end || end == e->scale ? 0 : v;
}

static int imc_value(struct hm_state *s, int inst, uint64_t *out)
{
	if (!s->cat || inst < 0)
		return -ENOENT;
	unsigned chip = (unsigned)inst >> 16, entry = (unsigned)inst & 0xffff;
	int known = 0;
	for (unsigned k = 0; k < s->nnest && !known; k++)
		known = s->nest_entries[k] == entry;
	if (!known || chip >= s->nchips)
		return -ENOENT;
	const struct imc_cat_entry *e = &s->cat->entries[entry];
	const struct imc_cat_unit *u = &s->cat->units[e->unit];
	for (unsigned i = 0; i < s->npages; i++) {
		const struct hm_nest_page *p = &s->pages[i];
		if (p->chip != chip || p->offset != u->offset || p->size != u->size)
			continue;
		if (!p->mem)
			return -EAGAIN;
		uint64_t scale = entry_scale(e);
		if (!scale || e->value + 8 > p->size)
			return -ENODATA;
		*out = imc_be_load(p->mem + e->value) * scale;
		return 0;
	}
	return -ENOENT;
}

int hm_value(struct hm_state *s, const struct hm_metric *m, int inst, union hm_value *v)
{
	switch (m->what) {
	case HM_RPMD_COUNT:
		return rpmd_count(s, m->arg, inst, &v->u64);
	case HM_RPMD_TOTAL:
		return rpmd_count(s, m->arg, -1, &v->u64);
	case HM_RPMD_INTERVAL:
		if (!s->rpmd_ncpus)
			return -EAGAIN;
		v->u64 = s->rpmd->interval_ns;
		return 0;
	case HM_RPMD_AGE:
		if (!s->rpmd_ncpus)
			return -EAGAIN;
		v->u64 = s->rpmd_now > s->rpmd_hb ? s->rpmd_now - s->rpmd_hb : 0;
		return 0;
	case HM_RPMD_STATUS:
		v->str = s->rpmd_status;
		return 0;
	case HM_IMC_NEST:
		return imc_value(s, inst, &v->u64);
	case HM_IMC_STATUS:
		v->str = s->imc_status;
		return 0;
	case HM_MESH_BYTES:
		if (!s->mesh)
			return -EAGAIN;
		if (inst < 0 || (unsigned)inst >= mesh_nodes(s->mesh) * RPM_NDIRS)
			return -ENOENT;
		v->u64 = s->mesh->bytes[inst];
		return 0;
	case HM_MESH_NODES:
		if (!s->mesh)
			return -EAGAIN;
		v->u32 = mesh_nodes(s->mesh);
		return 0;
	case HM_MESH_JOINED: {
		if (!s->mesh)
			return -EAGAIN;
		unsigned live = 0, n = mesh_nodes(s->mesh);
		for (unsigned i = 0; i < n; i++)
			live += heritage_pid_alive(s->mesh->pid[i]);
		v->u32 = live;
		return 0;
	}
	case HM_MESH_STATUS:
		v->str = s->mesh_status;
		return 0;
	}
	return -ENOENT;
}
