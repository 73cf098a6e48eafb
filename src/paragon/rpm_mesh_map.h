/*
 * The mesh's utilisation map: the bytes that left every router in every
 * direction, as CSV, JSON and an SVG picture (routers as cells, the links
 * between them as arrows coloured by bytes), and the CSV read back, so that a
 * saved run can be drawn again (utils/rpm_meshmap).  Pure stdio, no MPI and
 * no PAPI: libpapi-heritage-mpi writes these at MPI_Finalize, and
 * src/tests/test_rpm_mesh_map.c checks them.
 *
 * A router's "east" is what rpm_mesh_account() adds: bytes leaving that
 * router towards column + 1 (the source's and every pass-through router's;
 * the destination's ejection is no direction).  So the link from router a to
 * its east neighbour b carries east[a] bytes, and the link back west[b].
 */
#ifndef HERITAGE_RPM_MESH_MAP_H
#define HERITAGE_RPM_MESH_MAP_H

#include <stdint.h>
#include <stdio.h>

#include "paragon/rpm_model.h"

struct rpm_mesh_map {
	struct rpm_mesh_shape shape;
	unsigned ranks;          /* nodes 0 .. ranks-1 hold a process */
	const uint64_t *p2p;     /* [node * RPM_NDIRS + dir]: point-to-point bytes */
	const uint64_t *coll;    /* the same for collectives, or NULL */
	const char *p2p_source;  /* how p2p was counted, e.g. "measured: ..." */
	const char *coll_source; /* how coll was counted, e.g. "modelled: ..." */
};

/* 0, or -1 if writing failed (errno set). */
int rpm_mesh_map_csv(FILE *f, const struct rpm_mesh_map *m);
int rpm_mesh_map_json(FILE *f, const struct rpm_mesh_map *m);
int rpm_mesh_map_svg(FILE *f, const struct rpm_mesh_map *m);

/* Reads what rpm_mesh_map_csv() wrote: shape, ranks and both byte arrays
 * (each RPM_MESH_MAX_NODES * RPM_NDIRS long).  0, or -1 with a message in
 * why (line number and what was wrong). */
int rpm_mesh_map_read_csv(FILE *f, struct rpm_mesh_shape *shape, unsigned *ranks, uint64_t *p2p, uint64_t *coll,
                          char *why, size_t whylen);

#endif
