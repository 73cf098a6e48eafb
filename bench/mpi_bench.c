/*
 * The program bench/run-mpi-bench times plain and under
 * libpapi-heritage-mpi: ranks 0 and 1 ping-pong ITERS small messages
 * (MPI_Send / MPI_Recv of BYTES), after a warm-up; rank 0 prints the time
 * per message (half a round trip) in ns.  Nothing of papi-heritage in it.
 * Then, on the same two ranks, the send call alone: rank 1 pre-posts 64
 * receives, rank 0 posts 64 MPI_Isends of BYTES and times them, one block
 * through MPI_Isend (the library's wrapper when it is preloaded), the next
 * through PMPI_Isend (never wrapped), alternately, BLOCKS of each; it prints
 * the median ns per call of each kind.  Interleaved in one process, the
 * difference is the wrapper's cost with the machine's load drift taken out
 * (plain, both are MPI's own Isend: the difference is the method's noise).
 *   mpi_bench ITERS BYTES [BLOCKS]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int r, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	int iters = argc > 1 ? atoi(argv[1]) : 200000, bytes = argc > 2 ? atoi(argv[2]) : 8;
	char *buf = calloc(1, (size_t)bytes + 1);
	if (n < 2) {
		if (r == 0)
			fprintf(stderr, "mpi_bench: needs 2 ranks\n");
		MPI_Finalize();
		return 2;
	}
	double t0 = 0;
	for (int phase = 0; phase < 2; phase++) { /* warm-up, then timed */
		int count = phase ? iters : iters / 10;
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int i = 0; i < count && r < 2; i++) {
			if (r == 0) {
				MPI_Send(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
				MPI_Recv(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else {
				MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				MPI_Send(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
			}
		}
	}
	double t = MPI_Wtime() - t0;
	if (r == 0)
		printf("%.1f\n", t * 1e9 / (2.0 * iters));

	enum { K = 64 };
	int blocks = argc > 3 ? atoi(argv[3]) : 2000;
	double *ns[2] = { calloc((size_t)blocks, sizeof(double)), calloc((size_t)blocks, sizeof(double)) };
	char *rb = calloc(K, (size_t)bytes + 1);
	MPI_Request q[K];
	MPI_Barrier(MPI_COMM_WORLD);
	for (int b = 0; b < 2 * blocks && r < 2; b++) {
		int ready = 0;
		if (r == 1) {
			for (int k = 0; k < K; k++)
				MPI_Irecv(rb + (size_t)k * (size_t)bytes, bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &q[k]);
			MPI_Send(&ready, 0, MPI_INT, 0, 8, MPI_COMM_WORLD); /* 0 bytes: nothing on the mesh */
			MPI_Waitall(K, q, MPI_STATUSES_IGNORE);
		} else {
			MPI_Recv(&ready, 0, MPI_INT, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			double s0 = MPI_Wtime();
			if (b % 2 == 0)
				for (int k = 0; k < K; k++)
					MPI_Isend(buf, bytes, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &q[k]);
			else
				for (int k = 0; k < K; k++)
					PMPI_Isend(buf, bytes, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &q[k]);
			ns[b % 2][b / 2] = (MPI_Wtime() - s0) * 1e9 / K;
			MPI_Waitall(K, q, MPI_STATUSES_IGNORE);
		}
	}
	if (r == 0) {
		for (int k = 0; k < 2; k++)
			qsort(ns[k], (size_t)blocks, sizeof(double), cmp);
		printf("%.1f %.1f\n", ns[0][blocks / 2], ns[1][blocks / 2]);
	}
	free(ns[0]);
	free(ns[1]);
	free(rb);
	free(buf);
	MPI_Finalize();
	return 0;
}
