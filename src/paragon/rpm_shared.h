/*
 * What the processes of a host share: the virtual mesh (its shape, which
 * process is which node, the bytes that left every router in every
 * direction) and the reset bases of every node's 32-bit registers.
 *
 * Two POSIX shared-memory objects, /dev/shm/<name>-mesh (mode 0666: any
 * process may join and send) and /dev/shm/<name>-bases (0644: only its owner,
 * normally root, may reset), <name> from PAPI_HERITAGE_PARAGON_RPM_SHM
 * (default papi-heritage-rpm).  Counters there only ever grow; a reset moves
 * a node's base, so 64-bit readers (the PAPI component) never see it.
 */
#ifndef HERITAGE_RPM_SHARED_H
#define HERITAGE_RPM_SHARED_H

#include <stdint.h>

#include "paragon/rpm_model.h"

#define RPM_SHARED_MAGIC 0x52504d31u /* "RPM1" */

struct rpm_mesh_state {
	uint32_t magic;
	uint32_t rows, cols, routing;
	int32_t pid[RPM_MESH_MAX_NODES];                   /* 0: free */
	uint64_t bytes[RPM_MESH_MAX_NODES * RPM_NDIRS];    /* bytes leaving router n towards dir */
};

struct rpm_reset_state {
	uint32_t magic;
	uint32_t pad;
	uint64_t resets;                                   /* how many resets, all nodes */
	uint64_t base[RPM_MESH_MAX_NODES][RPM_NCOUNTERS];  /* cumulative count at the last reset */
};

struct rpm_host {
	struct rpm_mesh_state *mesh;
	struct rpm_reset_state *bases;
	int mesh_writable;                                 /* 0: another account's (0644), read only */
	int bases_writable;
	int self_node;                                     /* -1: not joined */
};

/* <name>: PAPI_HERITAGE_PARAGON_RPM_SHM, default papi-heritage-rpm. */
const char *rpm_shared_name(void);

/* The mesh object's suffix, /dev/shm/<name>-<suffix>: "mesh" for root or a
 * name given in the environment, else "mesh-<euid>" (an account's own). */
void rpm_mesh_object(char *buf, size_t len, unsigned euid, int name_given);

/* The process's view (opened once; later calls return the same).  0 or a
 * negative errno with a message. */
int rpm_host_open(struct rpm_host **host);
/* Shape of the mesh now. */
void rpm_host_shape(const struct rpm_host *h, struct rpm_mesh_shape *m);
unsigned rpm_host_nodes(const struct rpm_host *h);
/* The node this process shows in its struct rpm: its own, or 0. */
unsigned rpm_host_view_node(const struct rpm_host *h);

/* Cumulative (never reset) counts of a node: bus from the model and the
 * sample, mesh in 64-byte units. */
void rpm_host_cumulative(const struct rpm_host *h, unsigned node, const struct rpm_bus *bus,
                         uint64_t out[RPM_NCOUNTERS]);
/* Zeroes the node's registers (bases := cumulative).  -EPERM without write
 * access to the bases object. */
int rpm_host_reset(struct rpm_host *h, unsigned node, const uint64_t cumulative[RPM_NCOUNTERS]);

int rpm_host_join(struct rpm_host *h, int node);
int rpm_host_leave(struct rpm_host *h);
int rpm_host_send(struct rpm_host *h, int dst, uint64_t bytes);
/* Is node n joined by a live process? */
int rpm_host_node_live(const struct rpm_host *h, unsigned n);

/* The mesh source registered with papi_heritage_rpm_mesh_source() (an MPI
 * job's window), or NULL: the /dev/shm mesh above. */
struct papi_heritage_mesh_source;
const struct papi_heritage_mesh_source *rpm_mesh_source(void);
/* Cumulative bytes leaving router node of that source, per direction
 * (zeros if it cannot read); may_block 0 in signal handlers. */
void rpm_mesh_source_bytes(const struct papi_heritage_mesh_source *src, unsigned node, uint64_t bytes[RPM_NDIRS],
                           int may_block);

/* Root or CAP_SYS_ADMIN in the effective set. */
int rpm_privileged(void);

#endif
