#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "common/heritage_probe.h"
#include "paragon/rpm_shared.h"
#include "papi_heritage.h"

static struct rpm_host host = { .self_node = -1 };
static int host_err;
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

const char *rpm_shared_name(void)
{
	const char *n = heritage_env("PARAGON_RPM", "SHM");
	return n ? n : "papi-heritage-rpm";
}

/* Opens or creates /dev/shm/<base>-<what>; the creator initialises it and
 * publishes it by writing the magic last, others wait for the magic. */
static int open_object(const char *what, size_t size, mode_t mode, void (*init)(void *), void **out,
                       int *writable)
{
	char name[256];
	snprintf(name, sizeof name, "/%s-%s", rpm_shared_name(), what);
	int created = 1, rw = 1;
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 && errno == EEXIST) {
		created = 0;
		fd = shm_open(name, O_RDWR, 0);
		if (fd < 0 && errno == EACCES) {
			rw = 0;
			fd = shm_open(name, O_RDONLY, 0);
		}
	}
	if (fd < 0)
		return heritage_fail(-errno, "paragon_rpm: cannot open /dev/shm%s: %s", name, strerror(errno));
	if (created) {
		if (ftruncate(fd, (off_t)size) != 0 || fchmod(fd, mode) != 0) {
			int e = errno;
			close(fd);
			shm_unlink(name);
			return heritage_fail(-e, "paragon_rpm: cannot size /dev/shm%s: %s", name, strerror(e));
		}
	} else {
		/* The creator may still be sizing it. */
		struct stat st;
		for (int i = 0; i < 1000 && fstat(fd, &st) == 0 && (size_t)st.st_size < size; i++)
			usleep(1000);
		if (fstat(fd, &st) != 0 || (size_t)st.st_size < size) {
			close(fd);
			return heritage_fail(-EIO, "paragon_rpm: /dev/shm%s has the wrong size (another version? remove it)", name);
		}
	}
	void *p = mmap(NULL, size, rw ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	int e = errno;
	close(fd);
	if (p == MAP_FAILED)
		return heritage_fail(-e, "paragon_rpm: cannot map /dev/shm%s: %s", name, strerror(e));
	uint32_t *magic = p;
	if (created) {
		init(p);
		__atomic_store_n(magic, RPM_SHARED_MAGIC, __ATOMIC_RELEASE);
	} else {
		for (int i = 0; i < 1000 && __atomic_load_n(magic, __ATOMIC_ACQUIRE) != RPM_SHARED_MAGIC; i++)
			usleep(1000);
		if (__atomic_load_n(magic, __ATOMIC_ACQUIRE) != RPM_SHARED_MAGIC) {
			munmap(p, size);
			return heritage_fail(-EIO, "paragon_rpm: /dev/shm%s is not initialised (stale? remove it)", name);
		}
	}
	*out = p;
	if (writable)
		*writable = rw;
	return 0;
}

static void default_shape(struct rpm_mesh_shape *m)
{
	m->rows = m->cols = 1;
	m->routing = RPM_ROUTE_XY;
	const char *s = heritage_env("PARAGON_RPM", "MESH");
	if (s && rpm_mesh_parse_shape(s, m) != 0)
		m->rows = m->cols = 1;
	const char *r = heritage_env("PARAGON_RPM", "ROUTING");
	if (r)
		rpm_mesh_parse_routing(r, &m->routing);
}

static void init_mesh(void *p)
{
	struct rpm_mesh_state *s = p;
	struct rpm_mesh_shape m;
	default_shape(&m);
	s->rows = m.rows;
	s->cols = m.cols;
	s->routing = m.routing;
}

static void init_bases(void *p)
{
	(void)p; /* zero-filled by ftruncate */
}

static char host_mesh[32];   /* the mesh object's suffix */

void rpm_mesh_object(char *buf, size_t len, unsigned euid, int name_given)
{
	if (name_given || euid == 0)
		snprintf(buf, len, "mesh");
	else
		snprintf(buf, len, "mesh-%u", euid);
}

static void open_host(void)
{
	int w = 0;
	/* Only its owner writes a mesh (0644): another account could otherwise
	 * rewrite or truncate the routers of ours (issue 15); others may read
	 * it.  The default name is the account's own (root keeps the plain one,
	 * which pmdaheritage(1) serves), so accounts do not share a mesh unless
	 * they name the same object. */
	rpm_mesh_object(host_mesh, sizeof host_mesh, (unsigned)geteuid(), heritage_env("PARAGON_RPM", "SHM") != NULL);
	host_err = open_object(host_mesh, sizeof(struct rpm_mesh_state), 0644, init_mesh, (void **)&host.mesh, &w);
	host.mesh_writable = w;
	if (!host_err)
		host_err = open_object("bases", sizeof(struct rpm_reset_state), 0644, init_bases,
		                       (void **)&host.bases, &host.bases_writable);
}

int rpm_host_open(struct rpm_host **h)
{
	pthread_once(&host_once, open_host);
	if (host_err)
		return host_err;
	*h = &host;
	return 0;
}

void rpm_host_shape(const struct rpm_host *h, struct rpm_mesh_shape *m)
{
	m->rows = __atomic_load_n(&h->mesh->rows, __ATOMIC_RELAXED);
	m->cols = __atomic_load_n(&h->mesh->cols, __ATOMIC_RELAXED);
	m->routing = (enum rpm_routing)__atomic_load_n(&h->mesh->routing, __ATOMIC_RELAXED);
}

unsigned rpm_host_nodes(const struct rpm_host *h)
{
	struct rpm_mesh_shape m;
	rpm_host_shape(h, &m);
	return m.rows * m.cols;
}

unsigned rpm_host_view_node(const struct rpm_host *h)
{
	return h->self_node >= 0 ? (unsigned)h->self_node : 0;
}

void rpm_host_cumulative(const struct rpm_host *h, unsigned node, const struct rpm_bus *bus,
                         uint64_t out[RPM_NCOUNTERS])
{
	out[RPM_CPU0] = bus->cpu0;
	out[RPM_CPU1] = bus->cpu1;
	out[RPM_LTU] = bus->ltu;
	out[RPM_EXP] = bus->exp;
	for (int d = 0; d < RPM_NDIRS; d++)
		out[RPM_NORTH + d] = node < RPM_MESH_MAX_NODES
		                             ? __atomic_load_n(&h->mesh->bytes[node * RPM_NDIRS + d], __ATOMIC_RELAXED) / 64
		                             : 0;
}

int rpm_host_reset(struct rpm_host *h, unsigned node, const uint64_t cumulative[RPM_NCOUNTERS])
{
	if (!h->bases_writable)
		return heritage_fail(-EPERM, "paragon_rpm: resetting needs write access to the bases object (root)");
	if (node >= RPM_MESH_MAX_NODES)
		return heritage_fail(-EINVAL, "paragon_rpm: no node %u", node);
	for (int c = 0; c < RPM_NCOUNTERS; c++)
		__atomic_store_n(&h->bases->base[node][c], cumulative[c], __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->bases->resets, 1, __ATOMIC_RELEASE);
	return 0;
}

static int pid_alive(int32_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

int rpm_host_node_live(const struct rpm_host *h, unsigned n)
{
	return n < RPM_MESH_MAX_NODES && pid_alive(__atomic_load_n(&h->mesh->pid[n], __ATOMIC_RELAXED));
}

/* The shape from the environment wins when nobody is on the mesh: a new job
 * may choose a new shape (and starts from clean routers). */
static void maybe_reshape(struct rpm_host *h)
{
	struct rpm_mesh_shape want, have;
	default_shape(&want);
	rpm_host_shape(h, &have);
	if (want.rows == have.rows && want.cols == have.cols && want.routing == have.routing)
		return;
	for (unsigned n = 0; n < RPM_MESH_MAX_NODES; n++)
		if (rpm_host_node_live(h, n))
			return;
	__atomic_store_n(&h->mesh->rows, want.rows, __ATOMIC_RELAXED);
	__atomic_store_n(&h->mesh->cols, want.cols, __ATOMIC_RELAXED);
	__atomic_store_n(&h->mesh->routing, (uint32_t)want.routing, __ATOMIC_RELAXED);
}

int rpm_host_join(struct rpm_host *h, int node)
{
	int32_t self = (int32_t)getpid();
	if (h->self_node >= 0)
		return heritage_fail(-EBUSY, "paragon_rpm: this process is node %d already", h->self_node);
	if (!h->mesh_writable)
		return heritage_fail(-EACCES, "paragon_rpm: the mesh /dev/shm/%s-%s is another account's (0644: only "
		                     "its owner joins and sends; set PAPI_HERITAGE_PARAGON_RPM_SHM to a name of your "
		                     "own)", rpm_shared_name(), host_mesh);
	maybe_reshape(h);
	unsigned nodes = rpm_host_nodes(h);
	if (node >= (int)nodes || node < -1)
		return heritage_fail(-EINVAL, "paragon_rpm: node %d is not on the %u-node mesh (PAPI_HERITAGE_PARAGON_RPM_MESH=RxC)", node, nodes);
	for (unsigned n = node < 0 ? 0 : (unsigned)node; n < (node < 0 ? nodes : (unsigned)node + 1); n++) {
		int32_t cur = __atomic_load_n(&h->mesh->pid[n], __ATOMIC_ACQUIRE);
		if (pid_alive(cur))
			continue;
		if (__atomic_compare_exchange_n(&h->mesh->pid[n], &cur, self, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			h->self_node = (int)n;
			return (int)n;
		}
	}
	return heritage_fail(-EBUSY, node < 0 ? "paragon_rpm: every node of the mesh is taken"
	                                      : "paragon_rpm: node %d is taken by a live process", node);
}

int rpm_host_leave(struct rpm_host *h)
{
	if (h->self_node < 0)
		return heritage_fail(-EINVAL, "paragon_rpm: this process has not joined the mesh");
	int32_t self = (int32_t)getpid();
	__atomic_compare_exchange_n(&h->mesh->pid[h->self_node], &self, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
	h->self_node = -1;
	return 0;
}

int rpm_host_send(struct rpm_host *h, int dst, uint64_t bytes)
{
	struct rpm_mesh_shape m;
	if (h->self_node < 0)
		return heritage_fail(-EINVAL, "paragon_rpm: join the mesh first (rpm_mesh_join)");
	rpm_host_shape(h, &m);
	if (dst < 0 || (unsigned)dst >= m.rows * m.cols)
		return heritage_fail(-EINVAL, "paragon_rpm: node %d is not on the %ux%u mesh", dst, m.rows, m.cols);
	if (rpm_mesh_account(&m, h->mesh->bytes, (unsigned)h->self_node, (unsigned)dst, bytes) != 0)
		return heritage_fail(-EINVAL, "paragon_rpm: no route from node %d to %d", h->self_node, dst);
	return 0;
}

/* ---- another source of the router counters (an MPI job's window) -------- */

static const struct papi_heritage_mesh_source *mesh_source;

HERITAGE_PUBLIC int papi_heritage_rpm_mesh_source(const struct papi_heritage_mesh_source *src)
{
	__atomic_store_n(&mesh_source, src, __ATOMIC_RELEASE);
	return 0; /* PAPI_OK; papi.h is not ours to include here */
}

const struct papi_heritage_mesh_source *rpm_mesh_source(void)
{
	return __atomic_load_n(&mesh_source, __ATOMIC_ACQUIRE);
}

void rpm_mesh_source_bytes(const struct papi_heritage_mesh_source *src, unsigned node, uint64_t bytes[RPM_NDIRS],
                           int may_block)
{
	unsigned long long b[RPM_NDIRS] = { 0 };
	if (node >= src->rows * src->cols || src->read(src->arg, node, b, may_block) != 0)
		memset(b, 0, sizeof b);
	for (int d = 0; d < RPM_NDIRS; d++)
		bytes[d] = b[d];
}

int rpm_privileged(void)
{
	if (geteuid() == 0)
		return 1;
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[2];
	if (syscall(SYS_capget, &hdr, data) != 0)
		return 0;
	return (data[CAP_SYS_ADMIN / 32].effective >> (CAP_SYS_ADMIN % 32)) & 1;
}

void rpm_writable_probe(struct heritage_probe_result *r)
{
	if (rpm_privileged()) {
		r->state = HERITAGE_PROBE_WORKS;
		snprintf(r->evidence, sizeof r->evidence, "%s: rpm_map_writable() and PAPI_reset of the shared registers "
		         "are granted", geteuid() == 0 ? "root" : "CAP_SYS_ADMIN");
		return;
	}
	r->state = HERITAGE_PROBE_ABSENT;
	r->refused = 1;
	r->err = -EPERM;
	snprintf(r->evidence, sizeof r->evidence, "uid %u without CAP_SYS_ADMIN: the registers are read-only here, "
	         "as they were to Paragon users", (unsigned)geteuid());
	snprintf(r->allowed_by, sizeof r->allowed_by, "root or CAP_SYS_ADMIN (as on the Paragon, where resets were "
	         "the superuser's)");
}
