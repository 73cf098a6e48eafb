/*
 * rpm_meshmap: the utilisation map of a saved run again, from the CSV
 * libpapi-heritage-mpi wrote at MPI_Finalize (papi-heritage-mpi(7)).
 *
 *   rpm_meshmap [-o OUT] [--json] MAP.csv
 *
 * Writes the SVG (or, with --json, the JSON) to OUT, or to standard output.
 * The same writers as the library's: the same numbers, the same picture.
 * Exit 0, 1 if the CSV is not one (with the line and what was wrong), 2 for
 * usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paragon/rpm_mesh_map.h"

static int usage(void)
{
	fprintf(stderr, "usage: rpm_meshmap [-o OUT] [--json] MAP.csv\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *out = NULL, *in = NULL;
	int json = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
			out = argv[++i];
		else if (strcmp(argv[i], "--json") == 0)
			json = 1;
		else if (argv[i][0] != '-' && !in)
			in = argv[i];
		else
			return usage();
	}
	if (!in)
		return usage();
	FILE *f = fopen(in, "r");
	if (!f) {
		fprintf(stderr, "rpm_meshmap: %s: %s\n", in, strerror(errno));
		return 1;
	}
	static uint64_t p2p[RPM_MESH_MAX_NODES * RPM_NDIRS], coll[RPM_MESH_MAX_NODES * RPM_NDIRS];
	struct rpm_mesh_map m = { .p2p = p2p, .coll = coll, .p2p_source = "", .coll_source = "" };
	char why[256], line[512];
	int rc = rpm_mesh_map_read_csv(f, &m.shape, &m.ranks, p2p, coll, why, sizeof why);
	/* The sources' notes, as the library wrote them. */
	static char p2p_note[512], coll_note[512];
	rewind(f);
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		if (strncmp(line, "# p2p: ", 7) == 0)
			snprintf(p2p_note, sizeof p2p_note, "%s", line + 7), m.p2p_source = p2p_note;
		else if (strncmp(line, "# coll: ", 8) == 0)
			snprintf(coll_note, sizeof coll_note, "%s", line + 8), m.coll_source = coll_note;
	}
	fclose(f);
	if (rc != 0) {
		fprintf(stderr, "rpm_meshmap: %s: %s\n", in, why);
		return 1;
	}
	FILE *o = out ? fopen(out, "w") : stdout;
	if (!o) {
		fprintf(stderr, "rpm_meshmap: %s: %s\n", out, strerror(errno));
		return 1;
	}
	rc = json ? rpm_mesh_map_json(o, &m) : rpm_mesh_map_svg(o, &m);
	if ((out && fclose(o) != 0) || rc != 0) {
		fprintf(stderr, "rpm_meshmap: writing %s failed: %s\n", out ? out : "standard output", strerror(errno));
		return 1;
	}
	return 0;
}
