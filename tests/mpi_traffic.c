/*
 * MPI programs whose traffic is known, for the mpi_mesh_* cases: plain MPI,
 * nothing of papi-heritage in them (the library is preloaded or linked, as
 * under a user's unchanged program).  tests/mpi_mesh_check.py computes what
 * each pattern puts on every router from the same arguments, with its own
 * X-then-Y routing, and compares the map's CSV.
 *
 *   mpi_traffic ring BYTES ITERS      rank r sends BYTES to r+1 (mod n), ITERS
 *                                     times (MPI_Sendrecv)
 *   mpi_traffic ringrev BYTES ITERS   the same ring on a communicator whose
 *                                     ranks are MPI_COMM_WORLD's reversed
 *                                     (MPI_Comm_split): comm rank c is world
 *                                     rank n-1-c, so world w sends to w-1
 *   mpi_traffic all2one BYTES ITERS ROOT   every other rank MPI_Sends BYTES
 *                                     to ROOT, ITERS times
 *   mpi_traffic halo PR PC ITERS      2-D halo exchange on a periodic PR x PC
 *                                     process grid (MPI_Cart_create, no
 *                                     reorder; Isend/Irecv/Waitall): a rank
 *                                     sends (D + rank) doubles towards each
 *                                     neighbour, D = 500 north (row-1), 600
 *                                     south, 700 east (col+1), 800 west
 *   mpi_traffic halop PR PC ITERS     the same halo with persistent requests
 *                                     (MPI_Send_init/MPI_Recv_init, MPI_Startall)
 *   mpi_traffic coll COUNT            one Bcast (root 1), Reduce (root 2),
 *                                     Allreduce, Gather (root 0), Scatter
 *                                     (root 0), Allgather, Alltoall of COUNT
 *                                     ints (per block), and a Barrier
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
	fprintf(stderr, "usage: mpi_traffic ring|ringrev BYTES ITERS | all2one BYTES ITERS ROOT | halo|halop PR PC ITERS | coll COUNT\n");
	return 2;
}

static void ring(MPI_Comm comm, int bytes, int iters)
{
	int r, n;
	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &n);
	char *s = calloc(1, (size_t)bytes), *d = calloc(1, (size_t)bytes);
	for (int i = 0; i < iters; i++)
		MPI_Sendrecv(s, bytes, MPI_BYTE, (r + 1) % n, 1, d, bytes, MPI_BYTE, (r + n - 1) % n, 1, comm,
		             MPI_STATUS_IGNORE);
	free(s);
	free(d);
}

static void all2one(int bytes, int iters, int root)
{
	int r, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	char *b = calloc(1, (size_t)bytes);
	for (int i = 0; i < iters; i++) {
		if (r != root) {
			MPI_Send(b, bytes, MPI_BYTE, root, 2, MPI_COMM_WORLD);
		} else {
			for (int k = 0; k < n - 1; k++)
				MPI_Recv(b, bytes, MPI_BYTE, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		}
	}
	free(b);
}

static int halo(int pr, int pc, int iters, int persistent)
{
	int n, dims[2] = { pr, pc }, periods[2] = { 1, 1 }, r;
	MPI_Comm cart;
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (pr * pc != n) {
		fprintf(stderr, "mpi_traffic halo: a %dx%d grid needs %d ranks, not %d\n", pr, pc, pr * pc, n);
		return 2;
	}
	MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
	MPI_Comm_rank(cart, &r);
	/* dimension 0 is the row: -1 north, +1 south; dimension 1 east/west */
	int nb[4], base[4] = { 500, 600, 700, 800 }; /* north, south, east, west */
	MPI_Cart_shift(cart, 0, 1, &nb[0], &nb[1]);
	MPI_Cart_shift(cart, 1, 1, &nb[3], &nb[2]);
	double *out[4], *in[4];
	int from[4] = { 1, 0, 3, 2 }; /* what arrives from my north neighbour is its southward halo */
	for (int d = 0; d < 4; d++) {
		out[d] = calloc((size_t)(base[d] + n), sizeof(double));
		in[d] = calloc((size_t)(base[from[d]] + n), sizeof(double));
	}
	MPI_Request p[8];
	if (persistent) {
		for (int d = 0; d < 4; d++) {
			MPI_Recv_init(in[d], base[from[d]] + nb[d], MPI_DOUBLE, nb[d], from[d], cart, &p[d]);
			MPI_Send_init(out[d], base[d] + r, MPI_DOUBLE, nb[d], d, cart, &p[4 + d]);
		}
		for (int it = 0; it < iters; it++) {
			MPI_Startall(8, p);
			MPI_Waitall(8, p, MPI_STATUSES_IGNORE);
		}
		for (int d = 0; d < 8; d++)
			MPI_Request_free(&p[d]);
	}
	for (int it = 0; it < iters && !persistent; it++) {
		MPI_Request q[8];
		for (int d = 0; d < 4; d++) {
			int src_rank = nb[d]; /* neighbour d sends me its opposite-direction halo, sized by its rank */
			MPI_Irecv(in[d], base[from[d]] + src_rank, MPI_DOUBLE, nb[d], from[d], cart, &q[d]);
		}
		for (int d = 0; d < 4; d++)
			MPI_Isend(out[d], base[d] + r, MPI_DOUBLE, nb[d], d, cart, &q[4 + d]);
		MPI_Waitall(8, q, MPI_STATUSES_IGNORE);
	}
	for (int d = 0; d < 4; d++)
		free(out[d]), free(in[d]);
	MPI_Comm_free(&cart);
	return 0;
}

static void coll(int count)
{
	int r, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	int *a = calloc((size_t)count * (size_t)n, sizeof(int)), *b = calloc((size_t)count * (size_t)n, sizeof(int));
	MPI_Bcast(a, count, MPI_INT, 1 % n, MPI_COMM_WORLD);
	MPI_Reduce(a, b, count, MPI_INT, MPI_SUM, 2 % n, MPI_COMM_WORLD);
	MPI_Allreduce(a, b, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Gather(a, count, MPI_INT, b, count, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Scatter(a, count, MPI_INT, b, count, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Allgather(a, count, MPI_INT, b, count, MPI_INT, MPI_COMM_WORLD);
	MPI_Alltoall(a, count, MPI_INT, b, count, MPI_INT, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	free(a);
	free(b);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rc = 0;
	if (argc == 4 && strcmp(argv[1], "ring") == 0) {
		ring(MPI_COMM_WORLD, atoi(argv[2]), atoi(argv[3]));
	} else if (argc == 4 && strcmp(argv[1], "ringrev") == 0) {
		int r, n;
		MPI_Comm rev;
		MPI_Comm_rank(MPI_COMM_WORLD, &r);
		MPI_Comm_size(MPI_COMM_WORLD, &n);
		MPI_Comm_split(MPI_COMM_WORLD, 0, n - 1 - r, &rev);
		ring(rev, atoi(argv[2]), atoi(argv[3]));
		MPI_Comm_free(&rev);
	} else if (argc == 5 && strcmp(argv[1], "all2one") == 0) {
		all2one(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
	} else if (argc == 5 && strcmp(argv[1], "halo") == 0) {
		rc = halo(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), 0);
	} else if (argc == 5 && strcmp(argv[1], "halop") == 0) {
		rc = halo(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), 1);
	} else if (argc == 3 && strcmp(argv[1], "coll") == 0) {
		coll(atoi(argv[2]));
	} else {
		rc = usage();
	}
	MPI_Finalize();
	return rc;
}
