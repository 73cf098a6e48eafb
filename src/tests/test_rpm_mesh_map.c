/*
 * Unit tests of the mesh map (src/paragon/rpm_mesh_map.c), the collective
 * model (rpm_coll_model.c) and the mesh source registration
 * (papi_heritage_rpm_mesh_source, rpm_shared.c): what libpapi-heritage-mpi
 * builds on, without MPI.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "papi_heritage.h"
#include "paragon/rpm_coll_model.h"
#include "paragon/rpm_mesh_map.h"
#include "paragon/rpm_shared.h"

/* A 2x3 mesh, 5 ranks (router 5 has none): router r's direction d holds
 * 1000 * r + 10 * d + 1 point-to-point bytes, coll 7 * (r + d). */
static void fill(uint64_t *p2p, uint64_t *coll)
{
	for (unsigned r = 0; r < 6; r++)
		for (int d = 0; d < RPM_NDIRS; d++) {
			p2p[r * RPM_NDIRS + d] = 1000u * r + 10u * (unsigned)d + 1;
			coll[r * RPM_NDIRS + d] = 7u * (r + (unsigned)d);
		}
}

START_TEST(test_csv_round_trip)
{
	uint64_t p2p[6 * RPM_NDIRS], coll[6 * RPM_NDIRS];
	fill(p2p, coll);
	struct rpm_mesh_map m = { .shape = { 2, 3, RPM_ROUTE_XY }, .ranks = 5, .p2p = p2p, .coll = coll,
		                  .p2p_source = "measured: test", .coll_source = "modelled: test" };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ck_assert(rpm_mesh_map_csv(f, &m) == 0);
	fclose(f);
	ck_assert_msg(strncmp(text, "# papi-heritage mesh 2x3 routing xy ranks 5\n", 44) == 0, "%s", text);
	ck_assert(strstr(text, "# coll: modelled: test\n"));
	/* router 4 at (1,1), rank 4; router 5 without a rank */
	ck_assert(strstr(text, "\n4,1,1,4,4001,4011,4021,4031,28,35,42,49\n"));
	ck_assert(strstr(text, "\n5,1,2,,5001,5011,5021,5031,35,42,49,56\n"));

	struct rpm_mesh_shape s;
	unsigned ranks;
	uint64_t *p = calloc(RPM_MESH_MAX_NODES * RPM_NDIRS, sizeof *p), *c = calloc(RPM_MESH_MAX_NODES * RPM_NDIRS, sizeof *c);
	char why[256];
	f = fmemopen(text, len, "r");
	ck_assert_msg(rpm_mesh_map_read_csv(f, &s, &ranks, p, c, why, sizeof why) == 0, "%s", why);
	fclose(f);
	ck_assert(s.rows == 2 && s.cols == 3 && s.routing == RPM_ROUTE_XY && ranks == 5);
	ck_assert(memcmp(p, p2p, sizeof p2p) == 0 && memcmp(c, coll, sizeof coll) == 0);

	/* Bad files say where. */
	static const char *const bad[] = {
		"router,row\n",
		"# papi-heritage mesh 2x3 routing zz ranks 5\n",
		"# papi-heritage mesh 1x2 routing xy ranks 2\n0,0,0,0,1,2,3,4,5,6,7,8\n",        /* router 1 missing */
		"# papi-heritage mesh 1x2 routing xy ranks 2\n0,0,0,0,1,2,3,4,5,6,7\n1,0,1,1,1,2,3,4,5,6,7,8\n",
		"# papi-heritage mesh 1x2 routing xy ranks 2\n0,0,0,0,1,2,3,4,5,6,7,8\n1,1,0,1,1,2,3,4,5,6,7,8\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		f = fmemopen((void *)bad[i], strlen(bad[i]), "r");
		why[0] = 0;
		ck_assert_msg(rpm_mesh_map_read_csv(f, &s, &ranks, p, c, why, sizeof why) == -1, "bad[%zu] accepted", i);
		ck_assert_msg(why[0], "bad[%zu]: no reason", i);
		fclose(f);
	}
	free(p);
	free(c);
	free(text);
}
END_TEST

START_TEST(test_json_and_svg)
{
	uint64_t p2p[6 * RPM_NDIRS], coll[6 * RPM_NDIRS];
	fill(p2p, coll);
	struct rpm_mesh_map m = { .shape = { 2, 3, RPM_ROUTE_XY }, .ranks = 5, .p2p = p2p, .coll = coll,
		                  .p2p_source = "say \"hi\"", .coll_source = "modelled" };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ck_assert(rpm_mesh_map_json(f, &m) == 0);
	fclose(f);
	ck_assert(strstr(text, "\"p2p_source\": \"say \\\"hi\\\"\""));
	ck_assert(strstr(text, "{\"router\": 5, \"row\": 1, \"col\": 2, \"rank\": null, \"north\": 5001,"));
	/* the link from router 1 east to 2 carries router 1's east bytes */
	ck_assert(strstr(text, "{\"from\": 1, \"to\": 2, \"dir\": \"east\", \"bytes\": 1021, \"coll_bytes\": 21}"));
	/* no link off the mesh's edge: router 0 has no north or west link */
	ck_assert(!strstr(text, "{\"from\": 0, \"to\": -1"));
	free(text);

	text = NULL;
	f = open_memstream(&text, &len);
	ck_assert(rpm_mesh_map_svg(f, &m) == 0);
	fclose(f);
	ck_assert(strstr(text, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	ck_assert(strstr(text, "Paragon mesh 2x3, X-then-Y routing, 5 ranks"));
	ck_assert(strstr(text, ">router 5</text>") && strstr(text, ">no rank</text>"));
	/* 2x3: 7 links, two arrows each */
	int lines = 0;
	for (const char *q = text; (q = strstr(q, "<line ")); q++)
		lines++;
	ck_assert_int_eq(lines, 14);
	ck_assert(strstr(text, "</svg>\n"));
	free(text);
}
END_TEST

struct sends {
	unsigned to[64];
	int n;
};

static void record(void *arg, unsigned peer)
{
	struct sends *s = arg;
	s->to[s->n++] = peer;
}

START_TEST(test_coll_model)
{
	struct sends s = { .n = 0 };
	ck_assert_int_eq(rpm_coll_model(RPM_COLL_BCAST, 2, 4, 2, record, &s), 3);
	ck_assert(s.to[0] == 0 && s.to[1] == 1 && s.to[2] == 3);
	s.n = 0;
	ck_assert_int_eq(rpm_coll_model(RPM_COLL_BCAST, 1, 4, 2, record, &s), 0);
	ck_assert_int_eq(rpm_coll_model(RPM_COLL_GATHER, 1, 4, 2, record, &s), 1);
	ck_assert(s.to[0] == 2);
	ck_assert_int_eq(rpm_coll_model(RPM_COLL_GATHER, 2, 4, 2, record, &s), 0);
	s.n = 0; /* Allreduce: rank 0 sends to everyone, the others to 0 */
	ck_assert_int_eq(rpm_coll_model(RPM_COLL_ALLREDUCE, 0, 4, 3, record, &s), 3);
	ck_assert_int_eq(rpm_coll_model(RPM_COLL_ALLREDUCE, 3, 4, 3, record, &s), 1);
	ck_assert(s.to[3] == 0);
	s.n = 0;
	ck_assert_int_eq(rpm_coll_model(RPM_COLL_ALLTOALL, 1, 3, 99, record, &s), 2);
	ck_assert(s.to[0] == 0 && s.to[1] == 2);
	ck_assert_int_eq(rpm_coll_model(RPM_COLL_BCAST, 4, 4, 0, record, &s), -1);
	ck_assert_int_eq(rpm_coll_model(RPM_COLL_BCAST, 0, 4, 4, record, &s), -1);
}
END_TEST

static int reads;
static int fake_read(void *arg, unsigned node, unsigned long long b[4], int may_block)
{
	(void)arg;
	reads++;
	for (int d = 0; d < 4; d++)
		b[d] = may_block ? 100ull * node + (unsigned)d : 7;
	return node == 3 ? -1 : 0;
}

START_TEST(test_mesh_source)
{
	ck_assert(rpm_mesh_source() == NULL);
	struct papi_heritage_mesh_source src = { .name = "test", .node = 2, .rows = 2, .cols = 2, .read = fake_read };
	ck_assert_int_eq(papi_heritage_rpm_mesh_source(&src), 0);
	ck_assert(rpm_mesh_source() == &src);
	uint64_t b[RPM_NDIRS];
	rpm_mesh_source_bytes(&src, 1, b, 1);
	ck_assert(b[0] == 100 && b[3] == 103);
	rpm_mesh_source_bytes(&src, 1, b, 0); /* a signal handler's read is the source's to answer */
	ck_assert(b[0] == 7);
	rpm_mesh_source_bytes(&src, 3, b, 1); /* a failed read is zeros, not its half-filled values */
	ck_assert(b[0] == 0 && b[3] == 0);
	int before = reads;
	rpm_mesh_source_bytes(&src, 4, b, 1); /* not on the 2x2 mesh: not asked */
	ck_assert(reads == before && b[1] == 0);
	papi_heritage_rpm_mesh_source(NULL);
	ck_assert(rpm_mesh_source() == NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rpm_mesh_map");
	TCase *tc = tcase_create("map");
	tcase_add_test(tc, test_csv_round_trip);
	tcase_add_test(tc, test_json_and_svg);
	tcase_add_test(tc, test_coll_model);
	tcase_add_test(tc, test_mesh_source);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
