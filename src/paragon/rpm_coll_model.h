/*
 * Who sends to whom in an MPI collective, as papi-heritage-mpi counts
 * collectives on the mesh: a documented model, never a measurement, and
 * marked "modelled" wherever its bytes appear (papi-heritage-mpi(7)).
 *
 * Why a model: Open MPI's collective components (tuned, han, sm ...) call
 * its PML directly, so a PMPI library sees MPI_Bcast but not the binomial
 * tree's sends; and the MPI_T variables that would show the PML's messages
 * (pml_monitoring_messages_count/_size) are gone in Open MPI 4.1.4 here:
 * with pml_monitoring_enable=1 or 2, MPI_T_pvar_get_index answers
 * MPI_T_ERR_INVALID_NAME and their old indices MPI_T_ERR_INVALID (the
 * component installs itself as it closes and its variables go with the
 * close; tried 2026-11-27).  The coll_monitoring variables that remain
 * report the data flow, not the algorithm: an MPI_Bcast of 4000 bytes from
 * rank 0 of 4 shows 4000 bytes from the root to each of the 3 others, the
 * model's pairs and bytes.
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
