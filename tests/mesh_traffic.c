/*
 * mesh_traffic: joins the virtual Paragon mesh as a node and sends known
 * messages through the public API (rpm_mesh_join, rpm_mesh_send), for the
 * tests of what reads the mesh (tests/cases/pmda_heritage.test).
 *
 *   mesh_traffic NODE [DST:BYTES ...] [--hold]
 *
 * Prints "sent" when every message is accounted; with --hold it then stays
 * joined until it is killed (a live node), else it leaves and exits.
 * The shape is the mesh object's (PAPI_HERITAGE_PARAGON_RPM_MESH when the
 * first process creates it); PAPI_HERITAGE_PARAGON_RPM_SHM names it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RPM_NO_STARTUP_MAP
#include <i860paragon/rpm.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: mesh_traffic NODE [DST:BYTES ...] [--hold]\n");
		return 2;
	}
	char *end;
	long node = strtol(argv[1], &end, 10);
	if (*end || end == argv[1]) {
		fprintf(stderr, "mesh_traffic: NODE must be a number, not '%s'\n", argv[1]);
		return 2;
	}
	if (rpm_mesh_join((int)node) < 0) {
		fprintf(stderr, "mesh_traffic: rpm_mesh_join(%ld): %s\n", node, rpm_last_error());
		return 1;
	}
	int hold = 0;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--hold")) {
			hold = 1;
			continue;
		}
		long dst = strtol(argv[i], &end, 10);
		unsigned long bytes = 0;
		if (*end == ':')
			bytes = strtoul(end + 1, &end, 10);
		if (*end || end == argv[i]) {
			fprintf(stderr, "mesh_traffic: '%s' is not DST:BYTES\n", argv[i]);
			return 2;
		}
		if (rpm_mesh_send((int)dst, bytes) < 0) {
			fprintf(stderr, "mesh_traffic: rpm_mesh_send(%ld, %lu): %s\n", dst, bytes, rpm_last_error());
			return 1;
		}
	}
	printf("sent\n");
	fflush(stdout);
	while (hold)
		pause();
	rpm_mesh_leave();
	return 0;
}
