/*
 * libpapi-heritage-mpi: an MPI job on the virtual Paragon mesh, through the
 * MPI profiling interface (PMPI).  Linked before -lmpi or preloaded
 * (LD_PRELOAD) under an unchanged MPI program, it
 *   - places rank r on router r of an RxC mesh (PAPI_HERITAGE_MPI_MESH, else
 *     as square as the rank count allows: rpm_mesh_shape_for_nodes);
 *   - routes every point-to-point send X-then-Y (rpm_mesh_route) and adds its
 *     payload bytes (count x MPI_Type_size) to the direction the message
 *     leaves each router on the path, as rpm_mesh_account() does for the
 *     /dev/shm mesh;
 *   - counts collectives by a documented model (rpm_coll_model.h), kept
 *     apart from point-to-point and marked modelled;
 *   - keeps the counts in an MPI window, so that paragon_rpm:::rpm_north ..
 *     rpm_west read through PAPI on any rank give that rank's router, live;
 *   - at MPI_Finalize writes the utilisation map (SVG, CSV, JSON, rank 0).
 * The man page is papi-heritage-mpi(7).
 *
 * The window.  Each rank's window holds the bytes *it* sent, per router,
 * kind (p2p, coll) and direction: a send is a few relaxed atomic adds to
 * local memory (no RMA operation per message: the overhead budget is 1 us
 * per message, and an MPI_Accumulate per hop to the router's owner costs
 * more than that).  A router's counters are the sum over every rank's
 * window: a reader fetches its router's slot from each rank (MPI_Get, under
 * the lock_all epoch opened at MPI_Init), or, when every rank is on this
 * host, loads it straight from the shared window's memory
 * (MPI_Win_allocate_shared + MPI_Win_shared_query: no MPI call, so a read
 * from a signal handler or another thread sees live values too).
 * PAPI_HERITAGE_MPI_WINDOW=rma forces the MPI_Get path on one host (the
 * tests run both).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/heritage_env.h" /* read once, checked, not from a setuid program's caller */
#include "common/heritage_error.h"
#include "papi_heritage.h"
#include "paragon/rpm_coll_model.h"
#include "paragon/rpm_mesh_map.h"
#include "paragon/rpm_model.h"

#define PUBLIC __attribute__((visibility("default")))

enum { KIND_P2P, KIND_COLL, NKINDS };
#define SLOT (NKINDS * RPM_NDIRS) /* uint64_t per router in a rank's window */

static const char P2P_SOURCE[] = "measured payload bytes of every point-to-point send (count x type size, PMPI), "
                                 "routed on the virtual mesh";
static const char COLL_SOURCE[] = "modelled: each collective as the direct messages of its data flow (root to "
                                  "each rank, each rank to root, each to each; Allreduce = Reduce to 0 + Bcast), "
                                  "not Open MPI's algorithm";
static const char COLL_OFF[] = "not counted (PAPI_HERITAGE_MPI_COLL=off)";

static struct {
	int on;                /* counting: between MPI_Init and MPI_Finalize */
	int rank, size;
	struct rpm_mesh_shape shape;
	unsigned nodes;
	int coll;              /* count collectives by the model */
	MPI_Win win;
	int rma;               /* 1: MPI_Get path; 0: shared window */
	uint64_t *mine;        /* this rank's window: [node][kind][dir] */
	uint64_t **peer;       /* shared window: every rank's, else NULL */
	uint64_t *fetch;       /* RMA: size * SLOT scratch */
	uint64_t *cache;       /* RMA: each router's last read, [node][dir] */
	uint64_t *final;       /* after MPI_Finalize: the totals */
	int keyval;            /* communicator attribute: its ranks in world */
	MPI_Group world;
	struct papi_heritage_mesh_source src;
	int (*register_source)(const struct papi_heritage_mesh_source *);
} M = { .keyval = MPI_KEYVAL_INVALID };

/* ---- accounting ----------------------------------------------------------- */

static void add_route(int kind, unsigned dst, uint64_t bytes)
{
	struct rpm_hop hops[2 * RPM_MESH_MAX_NODES];
	unsigned max = M.shape.rows + M.shape.cols;
	int n = rpm_mesh_route(&M.shape, (unsigned)M.rank, dst, hops, max);
	for (int i = 0; i < n; i++)
		__atomic_fetch_add(&M.mine[(size_t)hops[i].router * SLOT + (size_t)kind * RPM_NDIRS + hops[i].dir], bytes,
		                   __ATOMIC_RELAXED);
}

static int table_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
	(void)comm, (void)keyval, (void)extra;
	free(value);
	return MPI_SUCCESS;
}

/* comm's rank (its remote group's, for an intercommunicator) in
 * MPI_COMM_WORLD: a table kept on the communicator, built on first use.
 * Under a lock: two threads of an MPI_THREAD_MULTIPLE program must not both
 * build one, the second set_attr freeing the first's table under it. */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static int world_rank_locked(MPI_Comm comm, int r);

static int world_rank(MPI_Comm comm, int r)
{
	if (comm == MPI_COMM_WORLD)
		return r;
	pthread_mutex_lock(&table_lock);
	int w = world_rank_locked(comm, r);
	pthread_mutex_unlock(&table_lock);
	return w;
}

static int world_rank_locked(MPI_Comm comm, int r)
{
	int *table, found = 0;
	if (M.keyval == MPI_KEYVAL_INVALID)
		return -1;
	PMPI_Comm_get_attr(comm, M.keyval, &table, &found);
	if (!found) {
		int inter = 0, n;
		MPI_Group g;
		PMPI_Comm_test_inter(comm, &inter);
		if (inter)
			PMPI_Comm_remote_group(comm, &g);
		else
			PMPI_Comm_group(comm, &g);
		PMPI_Group_size(g, &n);
		int *ranks = malloc((size_t)n * sizeof *ranks);
		table = malloc((size_t)n * sizeof *table + sizeof(int));
		if (!ranks || !table) {
			free(ranks), free(table);
			PMPI_Group_free(&g);
			return -1;
		}
		table[0] = n;
		for (int i = 0; i < n; i++)
			ranks[i] = i;
		PMPI_Group_translate_ranks(g, n, ranks, M.world, table + 1);
		free(ranks);
		PMPI_Group_free(&g);
		PMPI_Comm_set_attr(comm, M.keyval, table);
	}
	return r >= 0 && r < table[0] && table[r + 1] != MPI_UNDEFINED ? table[r + 1] : -1;
}

static void count_send(int kind, MPI_Comm comm, int dest, int count, MPI_Datatype type)
{
	if (!M.on || dest < 0 || count <= 0) /* MPI_PROC_NULL is negative */
		return;
	int size;
	if (PMPI_Type_size(type, &size) != MPI_SUCCESS || size <= 0)
		return;
	int w = world_rank(comm, dest);
	if (w >= 0 && w != M.rank)
		add_route(kind, (unsigned)w, (uint64_t)count * (uint64_t)size);
}

/* ---- the window as paragon_rpm's source ----------------------------------- */

static void sum_slot(const uint64_t *slot, unsigned long long b[RPM_NDIRS])
{
	for (int k = 0; k < NKINDS; k++)
		for (int d = 0; d < RPM_NDIRS; d++)
			b[d] += __atomic_load_n(&slot[k * RPM_NDIRS + d], __ATOMIC_RELAXED);
}

static int mesh_read(void *arg, unsigned node, unsigned long long b[RPM_NDIRS], int may_block)
{
	(void)arg;
	memset(b, 0, RPM_NDIRS * sizeof b[0]);
	if (node >= M.nodes)
		return -1;
	if (M.final) {
		sum_slot(M.final + (size_t)node * SLOT, b);
		return 0;
	}
	if (!M.rma) {
		for (int k = 0; k < M.size; k++)
			sum_slot(M.peer[k] + (size_t)node * SLOT, b);
		return 0;
	}
	/* MPI_Get from every rank; not from a signal handler, nor once the
	 * window is gone: the last values read. */
	if (may_block && M.on) {
		for (int k = 0; k < M.size; k++)
			PMPI_Get(M.fetch + (size_t)k * SLOT, SLOT, MPI_UINT64_T, k, (MPI_Aint)node * SLOT, SLOT, MPI_UINT64_T,
			         M.win);
		PMPI_Win_flush_all(M.win);
		unsigned long long s[RPM_NDIRS] = { 0 };
		for (int k = 0; k < M.size; k++)
			sum_slot(M.fetch + (size_t)k * SLOT, s);
		for (int d = 0; d < RPM_NDIRS; d++)
			__atomic_store_n(&M.cache[(size_t)node * RPM_NDIRS + d], s[d], __ATOMIC_RELAXED);
	}
	for (int d = 0; d < RPM_NDIRS; d++)
		b[d] = __atomic_load_n(&M.cache[(size_t)node * RPM_NDIRS + d], __ATOMIC_RELAXED);
	return 0;
}

/* ---- MPI_Init / MPI_Finalize ---------------------------------------------- */

/* Bad input stops the job with what was wrong: the counts of a job on a
 * mesh it did not ask for would be no use.  Every rank reads the same
 * environment, so all fail alike; the first rank that failed says why once,
 * and the others wait for its MPI_Abort (a rank aborting first could have
 * the job killed before the message is out: seen here with 4 ranks). */
static char failure[512];

__attribute__((format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
	if (failure[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(failure, sizeof failure, fmt, ap);
	va_end(ap);
}

/* Collective: returns if no rank failed, else ends the job. */
static void agree_or_abort(void)
{
	int mine = failure[0] ? M.rank : INT_MAX, first = INT_MAX;
	PMPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (first == INT_MAX)
		return;
	if (M.rank == first) {
		fprintf(stderr, "papi-heritage-mpi: %s\n", failure);
		fflush(stderr);
		PMPI_Abort(MPI_COMM_WORLD, 2);
	}
	PMPI_Barrier(MPI_COMM_WORLD); /* never completes: the first rank aborts */
	PMPI_Abort(MPI_COMM_WORLD, 2);
}

/* The mesh, routing and window kind from the environment; -1 (fail()) if
 * any is bad. */
static int shape_from_env(void)
{
	if (heritage_env_check("mpi") != 0) {
		fail("%s", heritage_last_error());
		return -1;
	}
	const char *s = heritage_env("MPI", "MESH");
	if (s && *s) {
		if (rpm_mesh_parse_shape(s, &M.shape) != 0) {
			fail("PAPI_HERITAGE_MPI_MESH=%s is not a mesh shape: RxC expected (e.g. 3x3), at most %u routers",
			     s, RPM_MESH_MAX_NODES);
			return -1;
		}
	} else if (rpm_mesh_shape_for_nodes((unsigned)M.size, &M.shape) != 0) {
		fail("%u ranks: more than the %u routers a mesh may have", (unsigned)M.size, RPM_MESH_MAX_NODES);
		return -1;
	}
	M.shape.routing = RPM_ROUTE_XY;
	const char *r = heritage_env("MPI", "ROUTING");
	if (r && *r && rpm_mesh_parse_routing(r, &M.shape.routing) != 0) {
		fail("PAPI_HERITAGE_MPI_ROUTING=%s: xy (X then Y, the default) or yx expected", r);
		return -1;
	}
	M.nodes = M.shape.rows * M.shape.cols;
	if (M.nodes < (unsigned)M.size) {
		fail("PAPI_HERITAGE_MPI_MESH=%s has %u routers for %u ranks: one rank per router, give a larger mesh",
		     s, M.nodes, (unsigned)M.size);
		return -1;
	}
	const char *want = heritage_env("MPI", "WINDOW");
	if (!want || !*want || strcmp(want, "auto") == 0) {
		M.rma = -1; /* window_open asks MPI */
	} else if (strcmp(want, "rma") == 0) {
		M.rma = 1;
	} else if (strcmp(want, "shared") == 0) {
		M.rma = 0;
	} else {
		fail("PAPI_HERITAGE_MPI_WINDOW=%s: auto, rma or shared expected", want);
		return -1;
	}
	return 0;
}

/* The window: shared when every rank is on this host (unless
 * PAPI_HERITAGE_MPI_WINDOW=rma), else MPI_Win_allocate. */
static int window_open(void)
{
	MPI_Aint bytes = (MPI_Aint)M.nodes * SLOT * (MPI_Aint)sizeof(uint64_t);
	int local = 0;
	if (M.rma < 0) { /* auto */
		MPI_Comm node;
		PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
		PMPI_Comm_size(node, &local);
		PMPI_Comm_free(&node);
		M.rma = local != M.size;
	}
	if (!M.rma) {
		if (PMPI_Win_allocate_shared(bytes, sizeof(uint64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &M.mine, &M.win) !=
		    MPI_SUCCESS) {
			fail("cannot allocate the shared window (try PAPI_HERITAGE_MPI_WINDOW=rma)");
			return -1;
		}
		M.peer = calloc((size_t)M.size, sizeof *M.peer);
		for (int k = 0; M.peer && k < M.size; k++) {
			MPI_Aint sz;
			int du;
			PMPI_Win_shared_query(M.win, k, &sz, &du, &M.peer[k]);
		}
	} else {
		if (PMPI_Win_allocate(bytes, sizeof(uint64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &M.mine, &M.win) != MPI_SUCCESS) {
			fail("cannot allocate the RMA window");
			return -1;
		}
		M.fetch = calloc((size_t)M.size * SLOT, sizeof *M.fetch);
		M.cache = calloc((size_t)M.nodes * RPM_NDIRS, sizeof *M.cache);
	}
	if ((!M.rma && !M.peer) || (M.rma && (!M.fetch || !M.cache))) {
		fail("out of memory for the window's views");
		return -1;
	}
	memset(M.mine, 0, (size_t)bytes);
	if (M.rma)
		PMPI_Win_lock_all(MPI_MODE_NOCHECK, M.win);
	/* No barrier here: agree_or_abort()'s MPI_Allreduce after this returns
	 * on no rank before every rank got here, so every window is zeroed
	 * before anyone counts into it or reads it. */
	return 0;
}

static void mesh_start(void)
{
	PMPI_Comm_rank(MPI_COMM_WORLD, &M.rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &M.size);
	(void)shape_from_env();
	agree_or_abort();
	(void)window_open();
	agree_or_abort();
	const char *c = heritage_env("MPI", "COLL");
	M.coll = !(c && strcmp(c, "off") == 0);
	PMPI_Comm_group(MPI_COMM_WORLD, &M.world);
	PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, table_delete, &M.keyval, NULL);
	M.src = (struct papi_heritage_mesh_source){
		.name = M.rma ? "MPI window (MPI_Get)" : "MPI window (shared)",
		.node = M.rank, .rows = M.shape.rows, .cols = M.shape.cols, .read = mesh_read,
	};
	/* libpapi, if the program has it: PAPI reads the window from now on. */
	M.register_source = (int (*)(const struct papi_heritage_mesh_source *))dlsym(RTLD_DEFAULT,
	                                                                             "papi_heritage_rpm_mesh_source");
	if (M.register_source)
		M.register_source(&M.src);
	M.on = 1;
}

static FILE *open_out(const char *prefix, const char *ext, char *name, size_t len)
{
	snprintf(name, len, "%s.%s", prefix, ext);
	FILE *f = fopen(name, "w");
	if (!f)
		fprintf(stderr, "papi-heritage-mpi: cannot write %s: %s\n", name, strerror(errno));
	return f;
}

static void write_map(const uint64_t *totals)
{
	const char *prefix = heritage_env("MPI", "MAP");
	if (!prefix)
		prefix = "paragon-mesh";
	if (!*prefix || strcmp(prefix, "none") == 0)
		return;
	uint64_t *p2p = calloc((size_t)M.nodes * RPM_NDIRS, sizeof *p2p);
	uint64_t *coll = calloc((size_t)M.nodes * RPM_NDIRS, sizeof *coll);
	if (!p2p || !coll) {
		free(p2p), free(coll);
		return;
	}
	for (unsigned r = 0; r < M.nodes; r++)
		for (int d = 0; d < RPM_NDIRS; d++) {
			p2p[r * RPM_NDIRS + d] = totals[(size_t)r * SLOT + KIND_P2P * RPM_NDIRS + d];
			coll[r * RPM_NDIRS + d] = totals[(size_t)r * SLOT + KIND_COLL * RPM_NDIRS + d];
		}
	struct rpm_mesh_map map = { .shape = M.shape, .ranks = (unsigned)M.size, .p2p = p2p, .coll = coll,
		                    .p2p_source = P2P_SOURCE, .coll_source = M.coll ? COLL_SOURCE : COLL_OFF };
	static const char *const ext[] = { "csv", "json", "svg" };
	int (*const writer[])(FILE *, const struct rpm_mesh_map *) = { rpm_mesh_map_csv, rpm_mesh_map_json,
		                                                       rpm_mesh_map_svg };
	int ok = 1;
	for (int i = 0; i < 3; i++) {
		char name[4096];
		FILE *f = open_out(prefix, ext[i], name, sizeof name);
		if (!f || writer[i](f, &map) != 0 || fclose(f) != 0) {
			ok = 0;
			if (f)
				fprintf(stderr, "papi-heritage-mpi: writing %s failed\n", name);
		}
	}
	if (ok)
		fprintf(stderr, "papi-heritage-mpi: %ux%u mesh, %d ranks: %s.svg, %s.csv, %s.json\n", M.shape.rows,
		        M.shape.cols, M.size, prefix, prefix, prefix);
	free(p2p);
	free(coll);
}

static void mesh_stop(void)
{
	if (!M.on)
		return;
	M.on = 0;
	/* Every send of every rank was counted before its rank got here. */
	uint64_t *totals = calloc((size_t)M.nodes * SLOT, sizeof *totals);
	if (totals) {
		PMPI_Allreduce(M.mine, totals, (int)(M.nodes * SLOT), MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
		/* PAPI reads after MPI_Finalize give the job's final counts. */
		__atomic_store_n(&M.final, totals, __ATOMIC_RELEASE);
		if (M.rank == 0)
			write_map(totals);
	} else if (M.register_source) {
		M.register_source(NULL);
	}
	if (M.rma)
		PMPI_Win_unlock_all(M.win);
	PMPI_Win_free(&M.win);
	if (M.keyval != MPI_KEYVAL_INVALID)
		PMPI_Comm_free_keyval(&M.keyval);
	PMPI_Group_free(&M.world);
}

PUBLIC int MPI_Init(int *argc, char ***argv)
{
	int rc = PMPI_Init(argc, argv);
	if (rc == MPI_SUCCESS)
		mesh_start();
	return rc;
}

PUBLIC int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int rc = PMPI_Init_thread(argc, argv, required, provided);
	if (rc == MPI_SUCCESS)
		mesh_start();
	return rc;
}

PUBLIC int MPI_Finalize(void)
{
	mesh_stop();
	return PMPI_Finalize();
}

/* ---- point-to-point: counted at the send ---------------------------------- */

#define SEND(name, ...)                                                                                 \
	PUBLIC int MPI_##name(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm \
	                      __VA_ARGS__)

SEND(Send)
{
	count_send(KIND_P2P, comm, dest, count, type);
	return PMPI_Send(buf, count, type, dest, tag, comm);
}

SEND(Bsend)
{
	count_send(KIND_P2P, comm, dest, count, type);
	return PMPI_Bsend(buf, count, type, dest, tag, comm);
}

SEND(Ssend)
{
	count_send(KIND_P2P, comm, dest, count, type);
	return PMPI_Ssend(buf, count, type, dest, tag, comm);
}

SEND(Rsend)
{
	count_send(KIND_P2P, comm, dest, count, type);
	return PMPI_Rsend(buf, count, type, dest, tag, comm);
}

SEND(Isend, , MPI_Request *req)
{
	count_send(KIND_P2P, comm, dest, count, type);
	return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}

SEND(Ibsend, , MPI_Request *req)
{
	count_send(KIND_P2P, comm, dest, count, type);
	return PMPI_Ibsend(buf, count, type, dest, tag, comm, req);
}

SEND(Issend, , MPI_Request *req)
{
	count_send(KIND_P2P, comm, dest, count, type);
	return PMPI_Issend(buf, count, type, dest, tag, comm, req);
}

SEND(Irsend, , MPI_Request *req)
{
	count_send(KIND_P2P, comm, dest, count, type);
	return PMPI_Irsend(buf, count, type, dest, tag, comm, req);
}

PUBLIC int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf, int rcount,
                        MPI_Datatype rtype, int source, int rtag, MPI_Comm comm, MPI_Status *status)
{
	count_send(KIND_P2P, comm, dest, scount, stype);
	return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status);
}

PUBLIC int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int stag, int source, int rtag,
                                MPI_Comm comm, MPI_Status *status)
{
	count_send(KIND_P2P, comm, dest, count, type);
	return PMPI_Sendrecv_replace(buf, count, type, dest, stag, source, rtag, comm, status);
}

/* ---- persistent sends: counted at each MPI_Start ------------------------- */

/* The send requests MPI_*send_init made, with where they go and how many
 * bytes: a list searched at MPI_Start (a halo code keeps a handful; a
 * lock because MPI_THREAD_MULTIPLE programs may start them from threads). */
static struct persistent {
	MPI_Request req;
	int dst;           /* world rank, or -1: nothing on the mesh */
	uint64_t bytes;
} *pers;
static size_t npers, cap_pers;
static pthread_mutex_t pers_lock = PTHREAD_MUTEX_INITIALIZER;

static void persistent_add(MPI_Request req, MPI_Comm comm, int dest, int count, MPI_Datatype type)
{
	int size, w = -1;
	if (!M.on)
		return;
	if (dest >= 0 && count > 0 && PMPI_Type_size(type, &size) == MPI_SUCCESS && size > 0)
		w = world_rank(comm, dest);
	if (w < 0 || w == M.rank)
		return; /* starts of it move nothing on the mesh */
	pthread_mutex_lock(&pers_lock);
	if (npers == cap_pers) {
		size_t cap = cap_pers ? 2 * cap_pers : 16;
		struct persistent *p = realloc(pers, cap * sizeof *p);
		if (!p) {
			pthread_mutex_unlock(&pers_lock);
			return;
		}
		pers = p, cap_pers = cap;
	}
	pers[npers++] = (struct persistent){ req, w, (uint64_t)count * (uint64_t)size };
	pthread_mutex_unlock(&pers_lock);
}

static void persistent_start(MPI_Request req)
{
	int dst = -1;
	uint64_t bytes = 0;
	pthread_mutex_lock(&pers_lock);
	for (size_t i = 0; i < npers; i++)
		if (pers[i].req == req) {
			dst = pers[i].dst, bytes = pers[i].bytes;
			break;
		}
	pthread_mutex_unlock(&pers_lock);
	if (dst >= 0 && M.on)
		add_route(KIND_P2P, (unsigned)dst, bytes);
}

static void persistent_forget(MPI_Request req)
{
	pthread_mutex_lock(&pers_lock);
	for (size_t i = 0; i < npers; i++)
		if (pers[i].req == req) {
			pers[i] = pers[--npers];
			break;
		}
	pthread_mutex_unlock(&pers_lock);
}

#define SEND_INIT(name)                                                                                       \
	PUBLIC int MPI_##name(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, \
	                      MPI_Request *req)                                                               \
	{                                                                                                     \
		int rc = PMPI_##name(buf, count, type, dest, tag, comm, req);                                 \
		if (rc == MPI_SUCCESS)                                                                        \
			persistent_add(*req, comm, dest, count, type);                                        \
		return rc;                                                                                    \
	}
SEND_INIT(Send_init)
SEND_INIT(Bsend_init)
SEND_INIT(Ssend_init)
SEND_INIT(Rsend_init)

PUBLIC int MPI_Start(MPI_Request *req)
{
	if (npers)
		persistent_start(*req);
	return PMPI_Start(req);
}

PUBLIC int MPI_Startall(int n, MPI_Request reqs[])
{
	for (int i = 0; npers && i < n; i++)
		persistent_start(reqs[i]);
	return PMPI_Startall(n, reqs);
}

PUBLIC int MPI_Request_free(MPI_Request *req)
{
	if (npers)
		persistent_forget(*req);
	return PMPI_Request_free(req);
}

/* ---- collectives: the model (rpm_coll_model.h), marked modelled ----------- */

struct coll_call {
	MPI_Comm comm;
	const int *counts; /* per peer (v-variants), or NULL: count */
	int count;
	MPI_Datatype type;
};

static void coll_send(void *arg, unsigned peer)
{
	const struct coll_call *c = arg;
	count_send(KIND_COLL, c->comm, (int)peer, c->counts ? c->counts[peer] : c->count, c->type);
}

static void model(enum rpm_coll op, MPI_Comm comm, int root, const int *counts, int count, MPI_Datatype type)
{
	int me, n, inter = 0;
	if (!M.on || !M.coll || comm == MPI_COMM_NULL)
		return;
	PMPI_Comm_test_inter(comm, &inter);
	if (inter) /* not modelled: papi-heritage-mpi(7) */
		return;
	PMPI_Comm_rank(comm, &me);
	PMPI_Comm_size(comm, &n);
	struct coll_call c = { comm, counts, count, type };
	rpm_coll_model(op, (unsigned)me, (unsigned)n, (unsigned)root, coll_send, &c);
}

PUBLIC int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
	model(RPM_COLL_BCAST, comm, root, NULL, count, type);
	return PMPI_Bcast(buf, count, type, root, comm);
}

PUBLIC int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
	model(RPM_COLL_GATHER, comm, root, NULL, count, type);
	return PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm);
}

PUBLIC int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
	model(RPM_COLL_ALLREDUCE, comm, 0, NULL, count, type);
	return PMPI_Allreduce(sbuf, rbuf, count, type, op, comm);
}

PUBLIC int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                      int root, MPI_Comm comm)
{
	/* The root's MPI_IN_PLACE sends nothing; it sends to nobody anyway. */
	model(RPM_COLL_GATHER, comm, root, NULL, scount, stype);
	return PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
}

PUBLIC int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                       const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm)
{
	model(RPM_COLL_GATHER, comm, root, NULL, scount, stype);
	return PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
}

PUBLIC int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                       int root, MPI_Comm comm)
{
	model(RPM_COLL_BCAST, comm, root, NULL, scount, stype);
	return PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
}

PUBLIC int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype, void *rbuf,
                        int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
	model(RPM_COLL_BCAST, comm, root, scounts, 0, stype);
	return PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
}

PUBLIC int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                         MPI_Comm comm)
{
	if (sbuf == MPI_IN_PLACE)
		model(RPM_COLL_ALLTOALL, comm, 0, NULL, rcount, rtype);
	else
		model(RPM_COLL_ALLTOALL, comm, 0, NULL, scount, stype);
	return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

PUBLIC int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                          const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
	if (sbuf == MPI_IN_PLACE) {
		int me = 0;
		if (M.on)
			PMPI_Comm_rank(comm, &me);
		model(RPM_COLL_ALLTOALL, comm, 0, NULL, M.on ? rcounts[me] : 0, rtype);
	} else {
		model(RPM_COLL_ALLTOALL, comm, 0, NULL, scount, stype);
	}
	return PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
}

PUBLIC int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                        MPI_Comm comm)
{
	if (sbuf == MPI_IN_PLACE)
		model(RPM_COLL_ALLTOALL, comm, 0, NULL, rcount, rtype);
	else
		model(RPM_COLL_ALLTOALL, comm, 0, NULL, scount, stype);
	return PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

PUBLIC int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype, void *rbuf,
                         const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
	if (sbuf == MPI_IN_PLACE)
		model(RPM_COLL_ALLTOALL, comm, 0, rcounts, 0, rtype);
	else
		model(RPM_COLL_ALLTOALL, comm, 0, scounts, 0, stype);
	return PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
}
