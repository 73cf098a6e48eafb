/*
 * Who sends to whom in an MPI collective, as papi-heritage-mpi counts
 * collectives on the mesh: a documented model, never a measurement, and
 * marked "modelled" wherever its bytes appear (papi-heritage-mpi(7)).
 *
 * Why a model: Open MPI's collective components (tuned, han, sm ...) call
 * its PML directly, so a PMPI library sees MPI_Bcast but not the binomial
 * tree's sends; and the MPI_T variables that would show the PML's messages
 * (pml_monitoring_messages_count/_size) answer MPI_T_ERR_INVALID_INDEX in
 * Open MPI 4.1.4 here, even with pml_monitoring_enable=2 (tried 2026-11-27).
 *
 * The model is the data flow the MPI standard defines, as direct messages:
 * a rooted one-to-all (Bcast, Scatter[v]) is the root sending to every other
 * rank; an all-to-one (Gather[v], Reduce) every other rank sending to the
 * root; Allreduce a Reduce to rank 0 then a Bcast from it; Allgather[v] and
 * Alltoall[v] every rank sending to every other.  The library supplies the
 * bytes of each message (from counts and types); this decides the pairs.
 * No I/O, no MPI: unit-tested in src/tests/test_rpm_mesh_map.c.
 */
#ifndef HERITAGE_RPM_COLL_MODEL_H
#define HERITAGE_RPM_COLL_MODEL_H

enum rpm_coll {
	RPM_COLL_BCAST,     /* also Scatter, Scatterv */
	RPM_COLL_GATHER,    /* also Reduce, Gatherv */
	RPM_COLL_ALLREDUCE,
	RPM_COLL_ALLTOALL,  /* also Allgather[v], Alltoall[v] */
};

/* Calls send(arg, peer) for every message rank me of n ranks sends in op
 * (root: the root's rank; ignored by ALLTOALL).  Returns how many, or -1 for
 * a bad rank or op. */
int rpm_coll_model(enum rpm_coll op, unsigned me, unsigned n, unsigned root, void (*send)(void *arg, unsigned peer),
                   void *arg);

#endif
