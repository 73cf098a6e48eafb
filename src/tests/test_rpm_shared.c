/*
 * Unit tests of src/paragon/rpm_shared.c: what the processes of a host share
 * for paragon_rpm (paragon_rpm(3), "Mesh" and "Resetting").  Two objects,
 * /dev/shm/<name>-mesh (0644, only its owner joins; an account's default
 * name is its own) and <name>-bases (0644); nodes numbered
 * row-major, node = row * columns + column, north is row - 1, east is
 * column + 1; a message adds its bytes to the direction it leaves every
 * router on its dimension-order route (source and pass-through, not the
 * destination); the registers count 64-byte units.
 *
 * Every test runs in its own child (Check's fork mode: the host is opened
 * once per process) on its own objects, removed at the end.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/heritage_error.h"
#include "paragon/rpm_shared.h"
#include "shm_test.h"
#include "env_test.h"


/* A fresh <name> for the calling test. */
static const char *fresh_name(const char *test)
{
	const char *name = shm_test_name(test);
	env_set("PAPI_HERITAGE_PARAGON_RPM_SHM", name, 1);
	return name;
}

static struct rpm_host *open_host(void)
{
	struct rpm_host *h = NULL;
	ck_assert_msg(rpm_host_open(&h) == 0, "rpm_host_open: %s", heritage_last_error());
	return h;
}

static uint64_t units(const struct rpm_host *h, unsigned node, int counter)
{
	const struct rpm_bus bus = { 0 };
	uint64_t out[RPM_NCOUNTERS];
	rpm_host_cumulative(h, node, &bus, out);
	return out[counter];
}

START_TEST(name_comes_from_the_environment)
{
	env_unset("PAPI_HERITAGE_PARAGON_RPM_SHM");
	ck_assert_str_eq(rpm_shared_name(), "papi-heritage-rpm");
	env_set("PAPI_HERITAGE_PARAGON_RPM_SHM", "", 1);
	ck_assert_str_eq(rpm_shared_name(), "papi-heritage-rpm");
	env_set("PAPI_HERITAGE_PARAGON_RPM_SHM", "job42", 1);
	ck_assert_str_eq(rpm_shared_name(), "job42");
}
END_TEST

START_TEST(an_account_s_default_mesh_is_its_own)
{
	char b[32];
	rpm_mesh_object(b, sizeof b, 0, 0);
	ck_assert_str_eq(b, "mesh");
	rpm_mesh_object(b, sizeof b, 1000, 0);
	ck_assert_str_eq(b, "mesh-1000");
	rpm_mesh_object(b, sizeof b, 1000, 1); /* a name given: shared by who names it */
	ck_assert_str_eq(b, "mesh");
}
END_TEST

START_TEST(open_creates_both_objects_with_their_modes)
{
	const char *name = fresh_name("open");
	env_set("PAPI_HERITAGE_PARAGON_RPM_MESH", "2x3", 1);
	env_set("PAPI_HERITAGE_PARAGON_RPM_ROUTING", "yx", 1);
	struct rpm_host *h = open_host();
	struct rpm_host *again = NULL;
	ck_assert_int_eq(rpm_host_open(&again), 0);
	ck_assert_ptr_eq(again, h);

	char path[160];
	struct stat st;
	snprintf(path, sizeof path, "/dev/shm/%s-mesh", name);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0644);
	ck_assert_int_eq(h->mesh_writable, 1);
	snprintf(path, sizeof path, "/dev/shm/%s-bases", name);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0644);
	ck_assert_int_eq(h->bases_writable, 1); /* its creator owns it */

	struct rpm_mesh_shape m;
	rpm_host_shape(h, &m);
	ck_assert_uint_eq(m.rows, 2);
	ck_assert_uint_eq(m.cols, 3);
	ck_assert_int_eq(m.routing, RPM_ROUTE_YX);
	ck_assert_uint_eq(rpm_host_nodes(h), 6);
	ck_assert_int_eq(h->self_node, -1);
	ck_assert_uint_eq(rpm_host_view_node(h), 0); /* node 0 before joining */
}
END_TEST

START_TEST(join_and_leave)
{
	fresh_name("join");
	env_set("PAPI_HERITAGE_PARAGON_RPM_MESH", "2x3", 1);
	struct rpm_host *h = open_host();

	ck_assert_int_eq(rpm_host_join(h, -1), 0);
	ck_assert_uint_eq(rpm_host_view_node(h), 0);
	ck_assert_int_eq(rpm_host_node_live(h, 0), 1);
	ck_assert_int_eq(rpm_host_join(h, 1), -EBUSY);
	ck_assert_str_eq(heritage_last_error(), "paragon_rpm: this process is node 0 already");
	ck_assert_int_eq(rpm_host_leave(h), 0);
	ck_assert_int_eq(rpm_host_node_live(h, 0), 0);
	ck_assert_int_eq(rpm_host_leave(h), -EINVAL);

	ck_assert_int_eq(rpm_host_join(h, 6), -EINVAL); /* nodes 0..5 */
	ck_assert_int_eq(rpm_host_join(h, -2), -EINVAL);
	ck_assert_int_eq(rpm_host_join(h, 5), 5);
	ck_assert_uint_eq(rpm_host_view_node(h), 5);
	ck_assert_int_eq(rpm_host_leave(h), 0);
	ck_assert_uint_eq(rpm_host_view_node(h), 0);
	ck_assert_int_eq(rpm_host_node_live(h, RPM_MESH_MAX_NODES), 0);
}
END_TEST

START_TEST(a_live_process_keeps_its_node_and_the_shape)
{
	fresh_name("live");
	env_set("PAPI_HERITAGE_PARAGON_RPM_MESH", "1x2", 1);
	struct rpm_host *h = open_host();
	int go[2];
	ck_assert_int_eq(pipe(go), 0);

	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		char c;
		close(go[1]);
		if (rpm_host_join(h, 1) != 1)
			_exit(1);
		if (read(go[0], &c, 1) < 0) /* until the parent closes */
			_exit(2);
		_exit(0);
	}
	close(go[0]);
	for (int i = 0; i < 2000 && !rpm_host_node_live(h, 1); i++)
		usleep(1000);
	ck_assert_int_eq(rpm_host_node_live(h, 1), 1);
	ck_assert_int_eq(rpm_host_join(h, 1), -EBUSY);
	ck_assert_str_eq(heritage_last_error(), "paragon_rpm: node 1 is taken by a live process");
	/* With a live node the shape from the environment does not apply. */
	env_set("PAPI_HERITAGE_PARAGON_RPM_MESH", "4x4", 1);
	ck_assert_int_eq(rpm_host_join(h, -1), 0);
	ck_assert_uint_eq(rpm_host_nodes(h), 2);
	ck_assert_int_eq(rpm_host_join(h, -1), -EBUSY);
	ck_assert_int_eq(rpm_host_leave(h), 0);

	/* The child exits without leaving: its node is free again, and with
	 * nobody on the mesh the environment's shape wins. */
	close(go[1]);
	int st;
	ck_assert_int_eq(waitpid(child, &st, 0), child);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	ck_assert_int_eq(rpm_host_node_live(h, 1), 0);
	ck_assert_int_eq(rpm_host_join(h, 15), 15);
	ck_assert_uint_eq(rpm_host_nodes(h), 16);
	ck_assert_int_eq(rpm_host_leave(h), 0);
}
END_TEST

START_TEST(messages_count_on_every_router_of_the_route)
{
	fresh_name("send");
	env_set("PAPI_HERITAGE_PARAGON_RPM_MESH", "2x3", 1);
	env_set("PAPI_HERITAGE_PARAGON_RPM_ROUTING", "xy", 1);
	struct rpm_host *h = open_host();

	ck_assert_int_eq(rpm_host_send(h, 1, 64), -EINVAL); /* not joined */
	ck_assert_int_eq(rpm_host_join(h, 0), 0);
	ck_assert_int_eq(rpm_host_send(h, 6, 64), -EINVAL);
	ck_assert_int_eq(rpm_host_send(h, -1, 64), -EINVAL);

	/* Node 0 (row 0, column 0) to node 5 (row 1, column 2), along the row
	 * first: east out of 0 and 1, south out of 2; 6400 bytes = 100 units. */
	ck_assert_int_eq(rpm_host_send(h, 5, 6400), 0);
	ck_assert_uint_eq(units(h, 0, RPM_EAST), 100);
	ck_assert_uint_eq(units(h, 1, RPM_EAST), 100);
	ck_assert_uint_eq(units(h, 2, RPM_SOUTH), 100);
	ck_assert_uint_eq(units(h, 2, RPM_EAST), 0);
	for (int c = RPM_NORTH; c <= RPM_WEST; c++) {
		ck_assert_uint_eq(units(h, 5, c), 0); /* the destination */
		ck_assert_uint_eq(units(h, 3, c), 0);
		ck_assert_uint_eq(units(h, 4, c), 0);
	}
	ck_assert_uint_eq(units(h, 0, RPM_SOUTH) + units(h, 0, RPM_NORTH) + units(h, 0, RPM_WEST), 0);

	/* Whole 64-byte units of the cumulative bytes: 6400 + 63 is still 100. */
	ck_assert_int_eq(rpm_host_send(h, 1, 63), 0);
	ck_assert_uint_eq(units(h, 0, RPM_EAST), 100);
	ck_assert_int_eq(rpm_host_send(h, 1, 1), 0);
	ck_assert_uint_eq(units(h, 0, RPM_EAST), 101);
	ck_assert_uint_eq(units(h, 1, RPM_EAST), 100); /* node 1 was the destination */
	/* To itself: no router is left. */
	ck_assert_int_eq(rpm_host_send(h, 0, 6400), 0);
	ck_assert_uint_eq(units(h, 0, RPM_EAST), 101);

	/* Back from node 5 to node 0: west out of 5 and 4, north out of 3. */
	ck_assert_int_eq(rpm_host_leave(h), 0);
	ck_assert_int_eq(rpm_host_join(h, 5), 5);
	ck_assert_int_eq(rpm_host_send(h, 0, 128), 0);
	ck_assert_uint_eq(units(h, 5, RPM_WEST), 2);
	ck_assert_uint_eq(units(h, 4, RPM_WEST), 2);
	ck_assert_uint_eq(units(h, 3, RPM_NORTH), 2);
	ck_assert_int_eq(rpm_host_leave(h), 0);
}
END_TEST

START_TEST(yx_routing_goes_along_the_column_first)
{
	fresh_name("yx");
	env_set("PAPI_HERITAGE_PARAGON_RPM_MESH", "2x3", 1);
	env_set("PAPI_HERITAGE_PARAGON_RPM_ROUTING", "yx", 1);
	struct rpm_host *h = open_host();

	ck_assert_int_eq(rpm_host_join(h, 0), 0);
	ck_assert_int_eq(rpm_host_send(h, 5, 6400), 0);
	/* South out of 0, then east out of 3 and 4. */
	ck_assert_uint_eq(units(h, 0, RPM_SOUTH), 100);
	ck_assert_uint_eq(units(h, 3, RPM_EAST), 100);
	ck_assert_uint_eq(units(h, 4, RPM_EAST), 100);
	ck_assert_uint_eq(units(h, 0, RPM_EAST), 0);
	ck_assert_uint_eq(units(h, 1, RPM_EAST), 0);
	ck_assert_int_eq(rpm_host_leave(h), 0);
}
END_TEST

START_TEST(cumulative_carries_the_bus_and_reset_moves_the_bases)
{
	fresh_name("reset");
	env_set("PAPI_HERITAGE_PARAGON_RPM_MESH", "1x2", 1);
	struct rpm_host *h = open_host();
	const struct rpm_bus bus = { .cpu0 = 1, .cpu1 = 2, .ltu = 3, .exp = 4 };
	uint64_t out[RPM_NCOUNTERS];

	ck_assert_int_eq(rpm_host_join(h, 0), 0);
	ck_assert_int_eq(rpm_host_send(h, 1, 640), 0);
	rpm_host_cumulative(h, 0, &bus, out);
	ck_assert_uint_eq(out[RPM_CPU0], 1);
	ck_assert_uint_eq(out[RPM_CPU1], 2);
	ck_assert_uint_eq(out[RPM_LTU], 3);
	ck_assert_uint_eq(out[RPM_EXP], 4);
	ck_assert_uint_eq(out[RPM_EAST], 10);
	rpm_host_cumulative(h, RPM_MESH_MAX_NODES, &bus, out); /* no such router */
	ck_assert_uint_eq(out[RPM_EAST], 0);

	rpm_host_cumulative(h, 0, &bus, out);
	ck_assert_uint_eq(h->bases->resets, 0);
	ck_assert_int_eq(rpm_host_reset(h, 0, out), 0);
	ck_assert_uint_eq(h->bases->resets, 1);
	for (int c = 0; c < RPM_NCOUNTERS; c++)
		ck_assert_uint_eq(h->bases->base[0][c], out[c]);
	ck_assert_uint_eq(h->bases->base[1][RPM_EAST], 0); /* other nodes keep theirs */
	/* The cumulative counts never go back. */
	ck_assert_uint_eq(units(h, 0, RPM_EAST), 10);
	ck_assert_int_eq(rpm_host_reset(h, RPM_MESH_MAX_NODES, out), -EINVAL);
	ck_assert_uint_eq(h->bases->resets, 1);
	ck_assert_int_eq(rpm_host_leave(h), 0);
}
END_TEST

START_TEST(only_the_bases_owner_may_reset)
{
	ck_assert_int_eq(rpm_privileged(), geteuid() == 0);
	if (geteuid() != 0) {
		printf("skipped: a second account needs root to switch to (as root: uid 65534 is refused)\n");
		return;
	}
	fresh_name("owner");
	/* Created by root in one child, opened by uid 65534 in another. */
	pid_t pid = fork();
	if (pid == 0) {
		struct rpm_host *h;
		_exit(rpm_host_open(&h) == 0 ? 0 : 1);
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_int_eq(st, 0);
	pid = fork();
	if (pid == 0) {
		struct rpm_host *h;
		uint64_t zero[RPM_NCOUNTERS] = { 0 };
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(10);
		if (rpm_privileged())
			_exit(11);
		if (rpm_host_open(&h) != 0)
			_exit(12);
		if (h->bases_writable)
			_exit(13);
		if (rpm_host_reset(h, 0, zero) != -EPERM)
			_exit(14);
		if (!strstr(heritage_last_error(), "write access to the bases object"))
			_exit(15);
		/* The mesh is its owner's: read, not joined. */
		if (h->mesh_writable || rpm_host_join(h, -1) != -EACCES ||
		    !strstr(heritage_last_error(), "another account's"))
			_exit(16);
		if (rpm_host_nodes(h) == 0)
			_exit(17);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "uid 65534 child: status %#x", st);
}
END_TEST

int main(void)
{
	shm_test_runner = getpid();
	env_unset("PAPI_HERITAGE_PARAGON_RPM_MESH");
	env_unset("PAPI_HERITAGE_PARAGON_RPM_ROUTING");
	shm_test_remove();

	Suite *s = suite_create("rpm_shared");
	TCase *tc = tcase_create("host");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, name_comes_from_the_environment);
	tcase_add_test(tc, an_account_s_default_mesh_is_its_own);
	tcase_add_test(tc, open_creates_both_objects_with_their_modes);
	tcase_add_test(tc, join_and_leave);
	tcase_add_test(tc, a_live_process_keeps_its_node_and_the_shape);
	tcase_add_test(tc, messages_count_on_every_router_of_the_route);
	tcase_add_test(tc, yx_routing_goes_along_the_column_first);
	tcase_add_test(tc, cumulative_carries_the_bus_and_reset_moves_the_bases);
	tcase_add_test(tc, only_the_bases_owner_may_reset);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	shm_test_remove();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
