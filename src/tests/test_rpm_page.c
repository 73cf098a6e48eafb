/*
 * Unit tests of src/paragon/rpm_page.c: struct rpm and struct rpmsoft at
 * their fixed addresses (<i860paragon/rpm.h>, paragon_rpm(3)).  Mapped on
 * request (rpm_map), read with plain loads that trap to libheritage, a
 * store to them is a SIGSEGV, PAPI_HERITAGE_PARAGON_RPM_MAP=0 leaves them
 * unmapped, and the writable alias resets every counter but rpm_time for
 * root while refusing anyone else.
 *
 * Expected values from paragon_rpm(3)'s table: rpm_time is CLOCK_BOOTTIME
 * in 100 ns ticks, the raw count in a double's bits; rpm_cpu0 is at most
 * 0.975 of the elapsed 50 MHz bus cycles; the mesh counters count 64-byte
 * units (6400 bytes east on a 1x2 mesh: 100).  The loads need the
 * single-step and page-trap mechanisms: without them the pages tests are
 * left out with the probe's reason; the live values behind the pages
 * (rpm_page.h) are tested everywhere.  Each test uses its own shared-memory
 * objects (PAPI_HERITAGE_PARAGON_RPM_SHM), removed at the end.
 */
#define RPM_NO_STARTUP_MAP /* mapped by the tests, after the environment is set */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/heritage_probe.h"
#include "i860paragon/rpm.h"
#include "paragon/rpm_page.h"
#include "shm_test.h"
#include "env_test.h"

static struct rpm *const rpm = (struct rpm *)RPM_BASE_VADDR;
static struct rpmsoft *const rpmsoft = (struct rpmsoft *)RPMSOFT_BASE_VADDR;

static uint64_t boot_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The raw count in the double's bits (rpm.h). */
static uint64_t rpm_time_ticks(void)
{
	rpm_timer_t t = rpm->rpm_time;
	uint64_t ticks;
	memcpy(&ticks, &t, sizeof ticks);
	return ticks;
}

static int is_mapped(uintptr_t addr)
{
	unsigned char v;
	return mincore((void *)(addr & ~(uintptr_t)4095), 1, &v) == 0;
}


/* Each test (its own child) on its own shared objects. */
static void fresh_shm(const char *test)
{
	env_set("PAPI_HERITAGE_PARAGON_RPM_SHM", shm_test_name(test), 1);
}

static void map_or_fail(void)
{
	ck_assert_msg(rpm_map() == 0, "rpm_map: %s", rpm_last_error());
}

START_TEST(map_is_idempotent_and_fixed)
{
	ck_assert_int_eq(is_mapped(RPM_BASE_VADDR), 0);
	map_or_fail();
	map_or_fail();
	ck_assert_int_eq(is_mapped(RPM_BASE_VADDR), 1);
	ck_assert_int_eq(is_mapped(RPMSOFT_BASE_VADDR), 1);
	int n = rpm_num_cpus();
	ck_assert_int_ge(n, 1);
	ck_assert_int_le(n, (int)sysconf(_SC_NPROCESSORS_CONF));
	/* One struct rpmsoft per CPU, all mapped. */
	ck_assert_int_eq(is_mapped((uintptr_t)&rpmsoft[n - 1]), 1);
}
END_TEST

START_TEST(rpm_time_is_boottime_in_100ns_ticks)
{
	map_or_fail();
	uint64_t b0 = boot_ns();
	uint64_t t0 = rpm_time_ticks();
	uint64_t b1 = boot_ns();
	/* The TSC clock is anchored to CLOCK_BOOTTIME: allow 10 ms. */
	ck_assert_uint_ge(t0 + 100000, b0 / 100);
	ck_assert_uint_le(t0, b1 / 100 + 100000);
	ck_assert_uint_lt(t0, 1ULL << 56);

	/* 50 ms later: 500000 ticks more, within 2%. */
	struct timespec pause = { 0, 50000000 };
	nanosleep(&pause, NULL);
	uint64_t b2 = boot_ns();
	uint64_t t2 = rpm_time_ticks();
	uint64_t b3 = boot_ns();
	ck_assert_uint_gt(t2, t0);
	ck_assert_uint_ge(t2 - t0, (b2 - b1) / 100 * 98 / 100);
	ck_assert_uint_le(t2 - t0, (b3 - b0) / 100 * 102 / 100);

	/* Never backwards, load after load. */
	uint64_t prev = rpm_time_ticks();
	for (int i = 0; i < 200; i++) {
		uint64_t t = rpm_time_ticks();
		ck_assert_uint_ge(t, prev);
		prev = t;
	}
	/* dclock() reads the same clock: seconds = ticks / 10^7. */
	uint64_t ta = rpm_time_ticks();
	double d = dclock();
	uint64_t tb = rpm_time_ticks();
	ck_assert_double_ge_tol(d, (double)ta / 1e7, 1e-6);
	ck_assert_double_le_tol(d, (double)tb / 1e7, 1e-6);
	/* rpm_control reads 0 through the read-only view. */
	ck_assert_uint_eq(rpm->rpm_control, 0);
}
END_TEST

START_TEST(bus_and_soft_counters_are_bounded_by_time)
{
	map_or_fail();
	/* No expansion card here: rpm_exp is 0. */
	ck_assert_uint_eq(rpm->rpm_exp, 0);
	double idle = rpmsoft[0].rpms_idle;
	uint64_t b1 = boot_ns();
	/* Idle seconds of one CPU: between 0 and the time since boot (plus
	 * one tick of /proc/stat rounding). */
	ck_assert_double_ge(idle, 0.0);
	ck_assert_double_le(idle, (double)b1 / 1e9 + 0.01);
}
END_TEST

START_TEST(a_store_to_the_page_is_a_segfault)
{
	map_or_fail();
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		rpm->rpm_control = RPM_CONTROL_RESET;
		_exit(0);
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "status %#x", st);
	/* The parent's page is untouched and still readable. */
	ck_assert_uint_eq(rpm->rpm_control, 0);
}
END_TEST

START_TEST(map_0_leaves_the_pages_unmapped)
{
	env_set("PAPI_HERITAGE_PARAGON_RPM_MAP", "0", 1);
	errno = 0;
	ck_assert_int_eq(rpm_map(), -1);
	ck_assert_int_eq(errno, ENOTSUP);
	ck_assert_str_eq(rpm_last_error(), "paragon_rpm: PAPI_HERITAGE_PARAGON_RPM_MAP=0: the RPM pages are not mapped");
	ck_assert_int_eq(is_mapped(RPM_BASE_VADDR), 0);
	ck_assert_int_eq(is_mapped(RPMSOFT_BASE_VADDR), 0);
	/* dclock needs no page. */
	ck_assert_double_gt(dclock(), 0.0);
	env_unset("PAPI_HERITAGE_PARAGON_RPM_MAP");
}
END_TEST

START_TEST(the_writable_alias_resets_all_but_rpm_time)
{
	fresh_shm("alias");
	map_or_fail();
	errno = 0;
	ck_assert_ptr_null(rpm_map_writable("rpm1"));
	ck_assert_int_eq(errno, ENODEV);
	ck_assert_ptr_null(rpm_map_writable(NULL));
	ck_assert_int_eq(errno, ENODEV);

	ck_assert_msg(rpm_mesh_join(0) == 0, "rpm_mesh_join: %s", rpm_last_error());
	ck_assert_msg(rpm_mesh_send(1, 6400) == 0, "rpm_mesh_send: %s", rpm_last_error());
	ck_assert_uint_eq(rpm->rpm_east, 100);
	ck_assert_uint_eq(rpm->rpm_west, 0);

	if (!heritage_probe_works(HERITAGE_MECH_RPM_WRITABLE)) {
		/* Anyone else: EPERM, and nothing changes. */
		errno = 0;
		ck_assert_ptr_null(rpm_map_writable("rpm0"));
		ck_assert_int_eq(errno, EPERM);
		ck_assert_msg(strstr(rpm_last_error(), "root") != NULL, "%s", rpm_last_error());
		ck_assert_uint_eq(rpm->rpm_east, 100);
		printf("reset itself skipped: %s\n", heritage_probe(HERITAGE_MECH_RPM_WRITABLE)->evidence);
		return;
	}
	struct rpm *w = rpm_map_writable("rpm0");
	ck_assert_msg(w != NULL, "rpm_map_writable: %s", rpm_last_error());
	ck_assert_ptr_eq(rpm_map_writable("rpm0"), w); /* one alias */
	uint64_t b0 = boot_ns();
	uint64_t t0 = rpm_time_ticks();
	w->rpm_control = RPM_CONTROL_RESET;
	unsigned east = rpm->rpm_east, cpu0 = rpm->rpm_cpu0;
	uint64_t t1 = rpm_time_ticks();
	uint64_t b1 = boot_ns();
	ck_assert_uint_eq(east, 0);
	/* At most 0.975 x 50 cycles per microsecond since the reset (+1 for
	 * the rounding of the model's sample). */
	ck_assert_uint_le(cpu0, (b1 - b0) / 1000 * 50 * 975 / 1000 + 50 + 1);
	/* rpm_time is not reset. */
	ck_assert_uint_ge(t1, t0);
	ck_assert_uint_ge(t1, b0 / 100 - 100000);
	/* rpm_control reads 0 again, through both views. */
	ck_assert_uint_eq(w->rpm_control, 0);
	ck_assert_uint_eq(rpm->rpm_control, 0);
	/* Counting goes on from the reset: 640 bytes are 10 units. */
	ck_assert_int_eq(rpm_mesh_send(1, 640), 0);
	ck_assert_uint_eq(rpm->rpm_east, 10);
	/* Any other value written to rpm_control is ignored. */
	w->rpm_control = 1;
	ck_assert_uint_eq(rpm->rpm_east, 10);
	ck_assert_int_eq(rpm_mesh_leave(), 0);
}
END_TEST


/* ---- the live values behind the pages (rpm_page.h), no mapping needed ---- */

START_TEST(live_values_are_bounded_by_time_since_boot)
{
	struct rpm_live a, b;
	fresh_shm("live");
	uint64_t b0 = boot_ns();
	ck_assert_int_eq(rpm_live_read(&a, 0), 0);
	uint64_t b1 = boot_ns();

	ck_assert_uint_ge(a.ncpus, 1);
	ck_assert_uint_eq(a.ncpus, rpm_cpu_count());
	ck_assert_int_eq(rpm_num_cpus(), (int)a.ncpus);
	/* The model: cpu0 = 0.975 x elapsed 50 MHz cycles - (cpu1 + ltu + exp),
	 * at least 0; no expansion card. */
	uint64_t busy_max = b1 / 20 * 975 / 1000 + 1;
	ck_assert_uint_eq(a.bus.exp, 0);
	ck_assert_uint_le(a.bus.cpu0, busy_max);
	if (a.bus.cpu0 > 0) {
		ck_assert_uint_le(a.bus.cpu0 + a.bus.cpu1 + a.bus.ltu, busy_max);
		ck_assert_uint_ge(a.bus.cpu0 + a.bus.cpu1 + a.bus.ltu, b0 / 20 * 975 / 1000 - 50);
	}
	/* cpu1: kernel I/O time of all CPUs, so at most ncpus x elapsed. */
	ck_assert_uint_le(a.bus.cpu1, (uint64_t)a.ncpus * (b1 / 20) + 50000000);
	for (unsigned i = 0; i < a.ncpus; i++) {
		ck_assert_double_ge(a.idle_s[i], 0.0);
		ck_assert_double_le(a.idle_s[i], (double)b1 / 1e9 + 0.01);
	}

	/* Later samples never go back. */
	struct timespec pause = { 0, 20000000 };
	nanosleep(&pause, NULL);
	ck_assert_int_eq(rpm_live_read(&b, 0), 0);
	ck_assert_uint_eq(b.ncpus, a.ncpus);
	ck_assert_uint_ge(b.bus.cpu1, a.bus.cpu1);
	ck_assert_uint_ge(b.bus.ltu, a.bus.ltu);
	for (unsigned i = 0; i < a.ncpus; i++) {
		ck_assert_double_ge(b.idle_s[i], a.idle_s[i]);
		ck_assert_uint_ge(b.interrupts[i], a.interrupts[i]);
	}
}
END_TEST

START_TEST(node_counts_and_reset_of_a_node)
{
	struct rpm_live live;
	uint64_t out[RPM_NCOUNTERS];

	fresh_shm("node");
	ck_assert_int_eq(rpm_live_read(&live, 0), 0);
	/* Node 0 until the process joins; then its own. */
	ck_assert_uint_eq(rpm_view_node(), 0);
	ck_assert_int_eq(rpm_mesh_join(1), 1);
	ck_assert_uint_eq(rpm_view_node(), 1);

	/* Node 1 to node 0 on 1x2: 6400 bytes west out of 1 = 100 units. */
	ck_assert_int_eq(rpm_mesh_send(0, 6400), 0);
	rpm_node_counts(1, &live, out);
	ck_assert_uint_eq(out[RPM_CPU0], live.bus.cpu0);
	ck_assert_uint_eq(out[RPM_CPU1], live.bus.cpu1);
	ck_assert_uint_eq(out[RPM_LTU], live.bus.ltu);
	ck_assert_uint_eq(out[RPM_EXP], live.bus.exp);
	ck_assert_uint_eq(out[RPM_WEST], 100);
	ck_assert_uint_eq(out[RPM_EAST] + out[RPM_NORTH] + out[RPM_SOUTH], 0);
	rpm_node_counts(0, &live, out);
	ck_assert_uint_eq(out[RPM_WEST] + out[RPM_EAST] + out[RPM_NORTH] + out[RPM_SOUTH], 0);

	/* A reset sets the node's bases to its cumulative counts now, so its
	 * registers read 0; the cumulative counts go on. */
	struct rpm_host *h = NULL;
	ck_assert_int_eq(rpm_host_open(&h), 0);
	int err = rpm_reset_node(1);
	if (!h->bases_writable) {
		ck_assert_int_eq(err, -EPERM);
	} else {
		ck_assert_int_eq(err, 0);
		ck_assert_uint_eq(h->bases->base[1][RPM_WEST], 100);
		ck_assert_uint_eq(h->bases->base[0][RPM_WEST], 0);
		ck_assert_uint_eq(rpm_register_value(100, h->bases->base[1][RPM_WEST]), 0);
		ck_assert_int_eq(rpm_mesh_send(0, 640), 0);
		rpm_node_counts(1, &live, out);
		ck_assert_uint_eq(out[RPM_WEST], 110);
		ck_assert_uint_eq(rpm_register_value(out[RPM_WEST], h->bases->base[1][RPM_WEST]), 10);
	}
	ck_assert_int_eq(rpm_mesh_leave(), 0);
	ck_assert_uint_eq(rpm_view_node(), 0);
}
END_TEST

int main(void)
{
	char why[512];

	shm_test_runner = getpid();
	env_set("PAPI_HERITAGE_PARAGON_RPM_SHM", shm_test_name(NULL), 1);
	env_set("PAPI_HERITAGE_PARAGON_RPM_MESH", "1x2", 1);
	env_unset("PAPI_HERITAGE_PARAGON_RPM_MAP");
	shm_test_remove();

	Suite *s = suite_create("rpm_page");
	TCase *tc = tcase_create("live");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, live_values_are_bounded_by_time_since_boot);
	tcase_add_test(tc, node_counts_and_reset_of_a_node);
	suite_add_tcase(s, tc);
	/* The pages trap every load and step it. */
	int pages = 1;
	for (enum heritage_mech m = HERITAGE_MECH_SINGLE_STEP; m <= HERITAGE_MECH_PAGETRAP && pages; m++)
		if (!heritage_probe_works(m)) {
			heritage_probe_explain(m, why, sizeof why);
			printf("skipped: the pages tests (every load of the RPM pages traps and is stepped): %s\n", why);
			pages = 0;
		}
	if (pages) {
		tc = tcase_create("pages");
		tcase_set_timeout(tc, 30);
		tcase_add_test(tc, map_is_idempotent_and_fixed);
		tcase_add_test(tc, rpm_time_is_boottime_in_100ns_ticks);
		tcase_add_test(tc, bus_and_soft_counters_are_bounded_by_time);
		tcase_add_test(tc, a_store_to_the_page_is_a_segfault);
		tcase_add_test(tc, map_0_leaves_the_pages_unmapped);
		tcase_add_test(tc, the_writable_alias_resets_all_but_rpm_time);
		suite_add_tcase(s, tc);
	}
	SRunner *sr = srunner_create(s);
	/* Each test maps in its own child: rpm_map happens once per process. */
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	shm_test_remove();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
