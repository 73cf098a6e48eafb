/*
 * paragon_rpm:::rpm_north .. rpm_west read through PAPI on every rank of an
 * MPI job under libpapi-heritage-mpi give that rank's router, live: each
 * rank starts the four events, the job runs a ring (rank r sends BYTES to
 * r+1 mod n, ITERS times), and after a barrier every rank's PAPI_read must
 * equal what the ring put on its router, computed here with this file's own
 * X-then-Y routing, in 64-byte units; then a second ring of another size,
 * read again (the counts move while the job runs); then once more after
 * MPI_Finalize (the job's final counts).
 *
 *   mpi_papi BYTES ITERS        (BYTES a multiple of 64: the events count
 *                               64-byte units, floor(bytes / 64))
 * The mesh is PAPI_HERITAGE_MPI_MESH, else the library's default, which
 * this test derives on its own: rows the largest divisor of n <= sqrt(n).
 * Exit 0 if every rank's counts match, 1 if one does not, 77 (SKIP) if PAPI
 * or the component cannot be had here, saying why.
 */
#include <mpi.h>
#include <papi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[4] = { "paragon_rpm:::rpm_north", "paragon_rpm:::rpm_south", "paragon_rpm:::rpm_east",
	                              "paragon_rpm:::rpm_west" };
enum { N, S, E, W };

/* Bytes leaving router `me` per direction for a ring of `bytes` on a
 * rows x cols mesh, X then Y. */
static void ring_expect(int n, int rows, int cols, int me, long long bytes, long long out[4])
{
	(void)rows;
	memset(out, 0, 4 * sizeof out[0]);
	for (int src = 0; src < n; src++) {
		int dst = (src + 1) % n;
		int r = src / cols, c = src % cols, dr = dst / cols, dc = dst % cols;
		while (c != dc) {
			if (r * cols + c == me)
				out[dc > c ? E : W] += bytes;
			c += dc > c ? 1 : -1;
		}
		while (r != dr) {
			if (r * cols + c == me)
				out[dr > r ? S : N] += bytes;
			r += dr > r ? 1 : -1;
		}
	}
}

static void ring(long long bytes, int iters)
{
	int r, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	char *s = calloc(1, (size_t)bytes), *d = calloc(1, (size_t)bytes);
	for (int i = 0; i < iters; i++)
		MPI_Sendrecv(s, (int)bytes, MPI_BYTE, (r + 1) % n, 0, d, (int)bytes, MPI_BYTE, (r + n - 1) % n, 0,
		             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	free(s);
	free(d);
}

static int check(int rank, const char *when, const long long got[4], const long long want[4])
{
	int ok = 1;
	for (int d = 0; d < 4; d++)
		ok &= got[d] == want[d];
	printf("rank %d %s: rpm_north/south/east/west %lld %lld %lld %lld, want %lld %lld %lld %lld%s\n", rank, when,
	       got[0], got[1], got[2], got[3], want[0], want[1], want[2], want[3], ok ? "" : "  MISMATCH");
	return ok;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, n, rows, cols;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (argc != 3 || atoll(argv[1]) % 64) {
		if (rank == 0)
			fprintf(stderr, "usage: mpi_papi BYTES(multiple of 64) ITERS\n");
		MPI_Finalize();
		return 2;
	}
	long long bytes = atoll(argv[1]);
	int iters = atoi(argv[2]);
	const char *shape = getenv("PAPI_HERITAGE_MPI_MESH");
	if (!shape || sscanf(shape, "%dx%d", &rows, &cols) != 2) {
		rows = 1;
		for (int r = 1; r * r <= n; r++)
			if (n % r == 0)
				rows = r;
		cols = n / rows;
	}

	/* PAPI on every rank; a rank that cannot have it makes the job skip. */
	int es = PAPI_NULL, why = 0;
	char reason[PAPI_MAX_STR_LEN] = "";
	if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT)
		why = 1, snprintf(reason, sizeof reason, "PAPI_library_init failed");
	if (!why && PAPI_create_eventset(&es) != PAPI_OK)
		why = 1, snprintf(reason, sizeof reason, "PAPI_create_eventset failed");
	for (int i = 0; !why && i < 4; i++) {
		int rc = PAPI_add_named_event(es, names[i]);
		if (rc != PAPI_OK)
			why = 1, snprintf(reason, sizeof reason, "%s: %s", names[i], PAPI_strerror(rc));
	}
	int any = 0;
	MPI_Allreduce(&why, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (any) {
		if (why)
			printf("rank %d: %s\n", rank, reason);
		MPI_Finalize();
		if (rank == 0)
			printf("SKIP: paragon_rpm's mesh events cannot be counted through PAPI here (see above)\n");
		return 77;
	}

	long long got[4], want[4];
	int ok = PAPI_start(es) == PAPI_OK;
	MPI_Barrier(MPI_COMM_WORLD); /* everyone started before anyone sends */
	ring(bytes, iters);
	MPI_Barrier(MPI_COMM_WORLD); /* every send counted before anyone reads */
	ok &= PAPI_read(es, got) == PAPI_OK;
	ring_expect(n, rows, cols, rank, bytes * iters / 64, want);
	ok &= check(rank, "after ring 1", got, want);

	MPI_Barrier(MPI_COMM_WORLD); /* every rank read before the second ring */
	ring(2 * bytes, iters);
	MPI_Barrier(MPI_COMM_WORLD);
	ok &= PAPI_read(es, got) == PAPI_OK;
	ring_expect(n, rows, cols, rank, 3 * bytes * iters / 64, want);
	ok &= check(rank, "after ring 2", got, want);

	MPI_Finalize();
	ok &= PAPI_read(es, got) == PAPI_OK;
	ok &= check(rank, "after MPI_Finalize", got, want);
	PAPI_stop(es, got);
	return ok ? 0 : 1;
}
