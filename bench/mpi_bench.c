/*
 * The program bench/run-mpi-bench times plain and under
 * libpapi-heritage-mpi: ranks 0 and 1 ping-pong ITERS small messages
 * (MPI_Send / MPI_Recv of BYTES), after a warm-up; rank 0 prints the time
 * per message (half a round trip) in ns.  Nothing of papi-heritage in it.
 *   mpi_bench ITERS BYTES
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

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
	free(buf);
	MPI_Finalize();
	return 0;
}
