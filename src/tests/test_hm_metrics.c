/*
 * Unit tests of src/pcp/hm_metrics.c, the metrics pmdaheritage(1) serves,
 * without PCP: the table (unique names and identifiers, semantics and units
 * that fit), that pmda/heritage/pmns and help name every metric with its
 * identifier, and the values read from sources this test fills with known
 * counts: a mesh with known messages, an rpmd service page and an imcd
 * nest page published here with known counters.  A source that is absent
 * gives -EAGAIN, never 0, and reading never creates it; a mesh object cut
 * short by anyone (it is 0666) is unavailable, not a crash.
 *
 * Each test runs in its own child (Check's fork mode) on its own objects
 * (/dev/shm/hrt-unit-<pid>-<test>-*), removed at the end.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/heritage_error.h"
#include "common/heritage_shm.h"
#include "imc/imc_catalog.h"
#include "imc/imc_engine.h"
#include "imc/imc_shm.h"
#include "paragon/rpm_service.h"
#include "paragon/rpm_shared.h"
#include "pcp/hm_metrics.h"
#include "shm_test.h"
#include "env_test.h"


static void fresh_name(const char *test)
{
	const char *name = shm_test_name(test);
	env_set("PAPI_HERITAGE_PARAGON_RPM_SHM", name, 1);
	env_set("PAPI_HERITAGE_IMC_SHM", name, 1);
	/* Objects this account publishes are trusted as a service account's. */
	char uid[16];
	snprintf(uid, sizeof uid, "%u", (unsigned)geteuid());
	env_set("PAPI_HERITAGE_PARAGON_RPM_SERVICE_USER", uid, 1);
	env_set("PAPI_HERITAGE_IMC_SERVICE_USER", uid, 1);
}

static const struct hm_metric *by_name(const char *name)
{
	for (unsigned i = 0; i < hm_nmetrics; i++)
		if (!strcmp(hm_metrics[i].name, name))
			return &hm_metrics[i];
	ck_abort_msg("no metric %s", name);
	return NULL;
}

static int value(struct hm_state *s, const char *name, int inst, uint64_t *out)
{
	union hm_value v;
	const struct hm_metric *m = by_name(name);
	int e = hm_value(s, m, inst, &v);
	if (!e)
		*out = m->type == HM_TYPE_U32 ? v.u32 : v.u64;
	return e;
}

static const char *status(struct hm_state *s, const char *name)
{
	union hm_value v;
	ck_assert_int_eq(hm_value(s, by_name(name), -1, &v), 0);
	return v.str;
}

START_TEST(table_is_consistent)
{
	ck_assert_uint_gt(hm_nmetrics, 0);
	for (unsigned i = 0; i < hm_nmetrics; i++) {
		const struct hm_metric *m = &hm_metrics[i];
		ck_assert_msg(!strncmp(m->name, "heritage.", 9), "%s is not under heritage.", m->name);
		ck_assert_ptr_nonnull(m->oneline);
		ck_assert_ptr_eq(hm_metric_find(m->cluster, m->item), m);
		for (unsigned j = 0; j < i; j++) {
			ck_assert_msg(strcmp(m->name, hm_metrics[j].name), "%s twice", m->name);
			ck_assert_msg(m->cluster != hm_metrics[j].cluster || m->item != hm_metrics[j].item,
			              "%s and %s share %u:%u", m->name, hm_metrics[j].name, m->cluster, m->item);
		}
		/* A counter counts something, in a numeric type; a string is an
		 * instant with no unit. */
		if (m->sem == HM_SEM_COUNTER)
			ck_assert_msg((m->units == HM_UNITS_COUNT || m->units == HM_UNITS_BYTE) && m->type != HM_TYPE_STRING,
			              "counter %s has no count or byte unit", m->name);
		if (m->type == HM_TYPE_STRING)
			ck_assert_msg(m->sem == HM_SEM_INSTANT && m->units == HM_UNITS_NONE, "%s", m->name);
	}
	ck_assert_ptr_null(hm_metric_find(7, 0));
	ck_assert_ptr_null(hm_metric_find(HM_CLUSTER_RPMD, 999));
	ck_assert_int_eq(by_name("heritage.mesh.bytes")->units, HM_UNITS_BYTE);
	ck_assert_int_eq(by_name("heritage.rpmd.age")->sem, HM_SEM_INSTANT);
}
END_TEST

static FILE *source_file(const char *rel)
{
	char path[4096];
	const char *srcdir = getenv("srcdir");
	snprintf(path, sizeof path, "%s/%s", srcdir && *srcdir ? srcdir : ".", rel);
	FILE *f = fopen(path, "r");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	return f;
}

START_TEST(pmns_and_help_name_every_metric)
{
	/* pmns: "prefix {" opens a subtree, "leaf HERITAGE:c:i" names a metric. */
	FILE *f = source_file("pmda/heritage/pmns");
	char line[512], prefix[256] = "", leaf[128];
	unsigned c, i, found = 0;
	while (fgets(line, sizeof line, f)) {
		char name[256];
		if (sscanf(line, " %255s {", name) == 1 && strchr(line, '{'))
			snprintf(prefix, sizeof prefix, "%s", name);
		else if (sscanf(line, " %127s HERITAGE:%u:%u", leaf, &c, &i) == 3) {
			char full[400];
			snprintf(full, sizeof full, "%s.%s", prefix, leaf);
			const struct hm_metric *m = hm_metric_find(c, i);
			ck_assert_msg(m != NULL, "pmns: %s is HERITAGE:%u:%u, which the table does not have", full, c, i);
			ck_assert_msg(!strcmp(m->name, full), "pmns: HERITAGE:%u:%u is %s, the table's is %s", c, i, full,
			              m->name);
			found++;
		}
	}
	fclose(f);
	ck_assert_uint_eq(found, hm_nmetrics);

	/* help: "@ name one-line" for every metric, the table's one-line text. */
	f = source_file("pmda/heritage/help");
	unsigned helped = 0;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		for (unsigned k = 0; k < hm_nmetrics; k++) {
			size_t n = strlen(hm_metrics[k].name);
			if (!strncmp(line, "@ ", 2) && !strncmp(line + 2, hm_metrics[k].name, n) && line[2 + n] == ' ') {
				ck_assert_msg(!strcmp(line + 3 + n, hm_metrics[k].oneline), "help: %s's one-line text is '%s', "
				              "the table's '%s'", hm_metrics[k].name, line + 3 + n, hm_metrics[k].oneline);
				helped++;
			}
		}
	}
	fclose(f);
	ck_assert_uint_eq(helped, hm_nmetrics);
}
END_TEST

START_TEST(mesh_bytes_are_the_routers_counts)
{
	fresh_name("mesh");
	env_set("PAPI_HERITAGE_PARAGON_RPM_MESH", "1x3", 1);
	env_set("PAPI_HERITAGE_PARAGON_RPM_ROUTING", "xy", 1);
	struct hm_state *s;
	ck_assert_int_eq(hm_open(&s), 0);
	hm_refresh(s);
	uint64_t v;
	unsigned n;
	ck_assert_int_eq(value(s, "heritage.mesh.bytes", 2, &v), -EAGAIN);
	ck_assert_int_eq(value(s, "heritage.mesh.nodes", -1, &v), -EAGAIN);
	ck_assert_msg(!strncmp(status(s, "heritage.mesh.status"), "unavailable: ", 13), "%s",
	              status(s, "heritage.mesh.status"));
	hm_instances(s, HM_INDOM_ROUTER, &n);
	ck_assert_uint_eq(n, 0);
	/* Reading made no mesh appear. */
	char path[256];
	struct stat st;
	snprintf(path, sizeof path, "/dev/shm/%s-mesh", rpm_shared_name());
	ck_assert_int_eq(stat(path, &st), -1);

	/* Node 0 sends 6400 bytes to node 2 of a row of 3: they leave router 0
	 * and router 1 east; node 0 then sends 640 to node 1: router 0 east. */
	struct rpm_host *h;
	ck_assert_msg(rpm_host_open(&h) == 0, "%s", heritage_last_error());
	ck_assert_int_eq(rpm_host_join(h, 0), 0);
	ck_assert_int_eq(rpm_host_send(h, 2, 6400), 0);
	ck_assert_int_eq(rpm_host_send(h, 1, 640), 0);
	hm_refresh(s);
	const struct hm_inst *in = hm_instances(s, HM_INDOM_ROUTER, &n);
	ck_assert_uint_eq(n, 3 * RPM_NDIRS);
	ck_assert_str_eq(in[RPM_DIR_EAST].name, "node0:east");
	ck_assert_str_eq(in[RPM_NDIRS + RPM_DIR_WEST].name, "node1:west");
	for (unsigned i = 0; i < n; i++) {
		ck_assert_int_eq(value(s, "heritage.mesh.bytes", in[i].id, &v), 0);
		uint64_t want = in[i].id == RPM_DIR_EAST ? 7040 : in[i].id == RPM_NDIRS + RPM_DIR_EAST ? 6400 : 0;
		ck_assert_msg(v == want, "%s: %llu, want %llu", in[i].name, (unsigned long long)v, (unsigned long long)want);
	}
	ck_assert_int_eq(value(s, "heritage.mesh.bytes", 3 * RPM_NDIRS, &v), -ENOENT);
	ck_assert_int_eq(value(s, "heritage.mesh.nodes", -1, &v), 0);
	ck_assert_uint_eq(v, 3);
	ck_assert_int_eq(value(s, "heritage.mesh.joined", -1, &v), 0);
	ck_assert_uint_eq(v, 1);
	hm_close(s);
}
END_TEST

START_TEST(a_truncated_mesh_is_unavailable_not_a_crash)
{
	/* Anyone may write the mesh object (0666): cut to 100 bytes under a
	 * reader that had mapped it, a load past the end would be SIGBUS. */
	fresh_name("meshcut");
	env_set("PAPI_HERITAGE_PARAGON_RPM_MESH", "2x2", 1);
	struct hm_state *s;
	ck_assert_int_eq(hm_open(&s), 0);
	struct rpm_host *h;
	ck_assert_msg(rpm_host_open(&h) == 0, "%s", heritage_last_error());
	ck_assert_int_eq(rpm_host_join(h, 0), 0);
	ck_assert_int_eq(rpm_host_send(h, 3, 6400), 0);
	hm_refresh(s);
	uint64_t v;
	ck_assert_int_eq(value(s, "heritage.mesh.bytes", RPM_DIR_EAST, &v), 0);
	ck_assert_uint_eq(v, 6400);
	char path[256];
	snprintf(path, sizeof path, "/dev/shm/%s-mesh", rpm_shared_name());
	ck_assert_int_eq(truncate(path, 100), 0);
	hm_refresh(s);
	ck_assert_int_eq(value(s, "heritage.mesh.bytes", RPM_DIR_EAST, &v), -EAGAIN);
	ck_assert_msg(strstr(status(s, "heritage.mesh.status"), "is not a mesh object"), "%s",
	              status(s, "heritage.mesh.status"));
	unsigned n;
	hm_instances(s, HM_INDOM_ROUTER, &n);
	ck_assert_uint_eq(n, 0);
	hm_close(s);
}
END_TEST

START_TEST(rpmd_counts_are_the_pages)
{
	fresh_name("rpmd");
	struct hm_state *s;
	ck_assert_int_eq(hm_open(&s), 0);
	hm_refresh(s);
	uint64_t v;
	ck_assert_int_eq(value(s, "heritage.rpmd.all.page_faults", -1, &v), -EAGAIN);
	ck_assert_int_eq(value(s, "heritage.rpmd.interval", -1, &v), -EAGAIN);

	/* A page for OS CPUs 0 and 3 that was refused the system calls. */
	char path[512], why[512];
	rpm_service_path(path, sizeof path);
	const unsigned os[2] = { 0, 3 };
	const int err[RPM_PERF_NCOUNTS] = { [RPM_SYSCALLS] = -EACCES };
	const char *const whys[RPM_PERF_NCOUNTS] = { "", "", "", "tracefs is not mounted" };
	struct rpm_service_page *page;
	ino_t ino;
	ck_assert_msg(rpm_service_create(path, 2, os, 20000000, heritage_boottime_ns(), err, whys, &page, &ino, why,
	                                 sizeof why) == 0, "%s", why);
	const uint64_t counts[2][RPM_PERF_NCOUNTS] = { { 10, 7, 3, 0 }, { 5, 4, 1, 0 } };
	rpm_service_publish(page, heritage_boottime_ns(), counts);
	hm_refresh(s);
	unsigned n;
	const struct hm_inst *in = hm_instances(s, HM_INDOM_CPU, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(in[1].name, "cpu3");
	ck_assert_int_eq(in[1].id, 3);
	ck_assert_int_eq(value(s, "heritage.rpmd.page_faults", 3, &v), 0);
	ck_assert_uint_eq(v, 5);
	ck_assert_int_eq(value(s, "heritage.rpmd.minor_faults", 0, &v), 0);
	ck_assert_uint_eq(v, 7);
	ck_assert_int_eq(value(s, "heritage.rpmd.page_faults", 1, &v), -ENOENT);
	ck_assert_int_eq(value(s, "heritage.rpmd.all.page_faults", -1, &v), 0);
	ck_assert_uint_eq(v, 15);
	ck_assert_int_eq(value(s, "heritage.rpmd.all.major_faults", -1, &v), 0);
	ck_assert_uint_eq(v, 4);
	ck_assert_int_eq(value(s, "heritage.rpmd.all.syscalls", -1, &v), -ENODATA);
	ck_assert_int_eq(value(s, "heritage.rpmd.syscalls", 0, &v), -ENODATA);
	ck_assert_int_eq(value(s, "heritage.rpmd.interval", -1, &v), 0);
	ck_assert_uint_eq(v, 20000000);
	ck_assert_msg(strstr(status(s, "heritage.rpmd.status"), "no syscalls: tracefs is not mounted"), "%s",
	              status(s, "heritage.rpmd.status"));

	/* A stopped daemon removes its page: no values, at once. */
	rpm_service_remove(path, ino);
	hm_refresh(s);
	ck_assert_int_eq(value(s, "heritage.rpmd.all.page_faults", -1, &v), -EAGAIN);
	hm_instances(s, HM_INDOM_CPU, &n);
	ck_assert_uint_eq(n, 0);
	hm_close(s);
}
END_TEST

START_TEST(imc_nest_counts_are_the_pages_times_the_scale)
{
	fresh_name("imc");
	char why[512];
	const struct imc_catalog *cat = imc_catalog_get(why, sizeof why);
	ck_assert_msg(cat != NULL, "%s", why);
	const char *cyc = "nest_powerbus0_imc::PM_PB_CYC";
	int entry = imc_catalog_find(cat, cyc, strlen(cyc));
	ck_assert_int_ge(entry, 0);
	const struct imc_cat_entry *e = &cat->entries[entry];
	const struct imc_cat_unit *u = &cat->units[e->unit];
	ck_assert_str_eq(e->scale, "256");

	struct hm_state *s;
	ck_assert_int_eq(hm_open(&s), 0);
	hm_refresh(s);
	uint64_t v;
	ck_assert_int_eq(value(s, "heritage.imc.nest.count", entry, &v), -EAGAIN);

	char path[512];
	uint8_t *mem;
	ino_t ino;
	imc_shm_path(path, sizeof path, 0, u->offset);
	ck_assert_msg(imc_shm_create(path, 0, u->offset, u->size, u->cb_offset, imc_shm_catalog_hash(cat), 1000000, &mem,
	                             &ino, why, sizeof why) == 0, "%s", why);
	imc_be_store(mem + e->value, 1000003);
	hm_refresh(s);
	unsigned n;
	const struct hm_inst *in = hm_instances(s, HM_INDOM_NEST, &n);
	ck_assert_uint_ge(n, 1);
	ck_assert_int_eq(in[0].id, entry); /* chip 0 << 16 | entry */
	ck_assert_str_eq(in[0].name, "chip0:nest_powerbus0_imc::PM_PB_CYC");
	ck_assert_int_eq(value(s, "heritage.imc.nest.count", entry, &v), 0);
	ck_assert_uint_eq(v, 1000003ULL * 256);
	/* Big-endian: a byte order mistake would read 0x0f4243 << 40. */
	imc_be_store(mem + e->value, 0x0102030405ULL);
	ck_assert_int_eq(value(s, "heritage.imc.nest.count", entry, &v), 0);
	ck_assert_uint_eq(v, 0x0102030405ULL * 256);
	ck_assert_int_eq(value(s, "heritage.imc.nest.count", 1 << 16 | 0xfffe, &v), -ENOENT);
	imc_shm_remove(path, ino);
	hm_refresh(s);
	ck_assert_int_eq(value(s, "heritage.imc.nest.count", entry, &v), -EAGAIN);
	hm_close(s);
}
END_TEST

int main(void)
{
	shm_test_runner = getpid();
	shm_test_remove();
	Suite *s = suite_create("hm_metrics");
	TCase *tc = tcase_create("metrics");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, table_is_consistent);
	tcase_add_test(tc, pmns_and_help_name_every_metric);
	tcase_add_test(tc, mesh_bytes_are_the_routers_counts);
	tcase_add_test(tc, a_truncated_mesh_is_unavailable_not_a_crash);
	tcase_add_test(tc, rpmd_counts_are_the_pages);
	tcase_add_test(tc, imc_nest_counts_are_the_pages_times_the_scale);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	shm_test_remove();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
