/*
 * Unit tests of src/imc/imc_sysfs.c's discovery: the fixture sysfs trees
 * in src/tests/imc-sysfs/ (README there), read as a POWER9 would show them.
 * Expected values are the catalog's arithmetic written here (event value =
 * unit reg + event reg, POWER9 DD2 catalog facts in src/imc/facts/,
 * doc/facilities.md §4) and the kernel's format strings, never the code under
 * test.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/heritage_error.h"
#include "common/heritage_probe.h"
#include "imc/imc_sysfs.h"
#include "env_test.h"

static char *fixture(const char *name)
{
	static char path[4096];
	const char *srcdir = getenv("srcdir");
	snprintf(path, sizeof path, "%s/src/tests/imc-sysfs/%s", srcdir && *srcdir ? srcdir : ".", name);
	return path;
}

static struct imc_sysfs *power9(void)
{
	struct imc_sysfs *s = NULL;
	int err = imc_sysfs_discover(fixture("power9"), &s);
	ck_assert_msg(err == 0, "discover: %d %s", err, heritage_last_error());
	return s;
}

static const struct imc_sysfs_event *event(const struct imc_sysfs *s, const char *pmu, const char *name)
{
	const struct imc_sysfs_pmu *p = imc_sysfs_pmu_find(s, pmu);
	ck_assert_msg(p != NULL, "no PMU %s", pmu);
	const struct imc_sysfs_event *e = imc_sysfs_event_find(p, name);
	ck_assert_msg(e != NULL, "no event %s in %s", name, pmu);
	return e;
}

#define RANGE(lo, hi) ((hi) == 63 ? ~0ull << (lo) : ((1ull << ((hi) + 1)) - 1) & ~((1ull << (lo)) - 1))

START_TEST(power9_pmus_types_and_cpumasks)
{
	struct imc_sysfs *s = power9();
	/* cpu, software and tracepoint are in the tree and are not IMC. */
	static const struct {
		const char *name;
		enum imc_sysfs_domain d;
		uint32_t type;
		unsigned nevents;
	} want[] = {
		{ "core_imc", IMC_SYSFS_CORE, 14, 20 },
		{ "nest_mcs01_imc", IMC_SYSFS_NEST, 10, 7 },
		{ "nest_phb0_imc", IMC_SYSFS_NEST, 13, 4 },
		{ "nest_powerbus0_imc", IMC_SYSFS_NEST, 11, 18 },
		{ "nest_xlink0_imc", IMC_SYSFS_NEST, 12, 10 },
		{ "thread_imc", IMC_SYSFS_THREAD, 15, 61 },
		{ "trace_imc", IMC_SYSFS_TRACE, 16, 1 },
	};
	ck_assert_uint_eq(s->npmus, sizeof want / sizeof want[0]);
	for (unsigned i = 0; i < s->npmus; i++) {
		const struct imc_sysfs_pmu *p = &s->pmus[i];
		ck_assert_str_eq(p->name, want[i].name);
		ck_assert_int_eq(p->domain, want[i].d);
		ck_assert_uint_eq(p->type, want[i].type);
		ck_assert_uint_eq(p->nevents, want[i].nevents);
		ck_assert_ptr_nonnull(strstr(p->dir, want[i].name));
		if (p->domain == IMC_SYSFS_NEST) {
			/* two chips: one CPU each */
			ck_assert(p->has_cpumask);
			ck_assert_uint_eq(p->ncpus, 2);
			ck_assert_int_eq(p->cpus[0], 0);
			ck_assert_int_eq(p->cpus[1], 64);
		} else if (p->domain == IMC_SYSFS_CORE) {
			/* 32 SMT4 cores: CPUs 0, 4, ..., 124 */
			ck_assert_uint_eq(p->ncpus, 32);
			for (unsigned k = 0; k < 32; k++)
				ck_assert_int_eq(p->cpus[k], (int)(4 * k));
		} else {
			ck_assert(!p->has_cpumask);
			ck_assert_uint_eq(p->ncpus, 0);
		}
	}
	ck_assert_str_eq(imc_sysfs_domain_name(IMC_SYSFS_NEST), "nest");
	ck_assert_str_eq(imc_sysfs_domain_name(IMC_SYSFS_TRACE), "trace");
	imc_sysfs_free(s);
}
END_TEST

START_TEST(power9_formats_are_the_kernels)
{
	struct imc_sysfs *s = power9();
	const struct imc_sysfs_pmu *p = imc_sysfs_pmu_find(s, "thread_imc");
	/* imc-pmu.c: event config:0-61, offset config:0-31, rvalue
	 * config:32, mode config:33-40 (format/ lists them sorted). */
	static const struct { const char *name, *spec; uint64_t mask; } imc[] = {
		{ "event", "config:0-61", RANGE(0, 61) },
		{ "mode", "config:33-40", RANGE(33, 40) },
		{ "offset", "config:0-31", RANGE(0, 31) },
		{ "rvalue", "config:32", 1ull << 32 },
	};
	ck_assert_uint_eq(p->nformats, 4);
	for (unsigned i = 0; i < 4; i++) {
		ck_assert_str_eq(p->formats[i].name, imc[i].name);
		ck_assert_str_eq(p->formats[i].spec, imc[i].spec);
		ck_assert_uint_eq(p->formats[i].word, 0);
		ck_assert_uint_eq(p->formats[i].mask, imc[i].mask);
	}
	p = imc_sysfs_pmu_find(s, "trace_imc");
	ck_assert_uint_eq(p->nformats, 5);
	/* trace_cycles is 0x10200000: cpmc_samplesel (28-29) = 1 and
	 * cpmc_event (20-27) = 2 (doc/facilities.md §4(a)). */
	const struct imc_sysfs_event *e = imc_sysfs_event_find(p, "trace_cycles");
	ck_assert_uint_eq(e->config[0], 0x10200000);
	for (unsigned i = 0; i < p->nformats; i++) {
		const struct imc_sysfs_format *f = &p->formats[i];
		uint64_t lsb = f->mask & -f->mask;
		uint64_t v = (e->config[0] & f->mask) / lsb;
		if (!strcmp(f->name, "cpmc_samplesel"))
			ck_assert_uint_eq(v, 1);
		else if (!strcmp(f->name, "cpmc_event"))
			ck_assert_uint_eq(v, 2);
		else if (!strcmp(f->name, "cpmc_load") || !strcmp(f->name, "cpmc_reserved"))
			ck_assert_uint_eq(v, 0);
	}
	imc_sysfs_free(s);
}
END_TEST

START_TEST(power9_events_values_scales_units)
{
	struct imc_sysfs *s = power9();
	static const struct {
		const char *pmu, *name;
		uint64_t value;
		const char *scale, *unit;
	} want[] = {
		/* unit reg + event reg, from the DD2 catalog */
		{ "nest_mcs01_imc", "PM_MCS01_64B_RD_DISP_PORT01", 0xc8 + 0x0, "256", "MiB" },
		{ "nest_mcs01_imc", "PM_MCS01_128B_RD_DISP_PORT01", 0xc8 + 0x8, "256", "MiB" },
		{ "nest_xlink0_imc", "PM_XLINK0_OUT_ODD_AVLBL_CYC", 0x118 + 0xc8, "4096", NULL },
		{ "nest_phb0_imc", "PM_PHB0_DMA_WR_FROM_PCIE", 0x338 + 0x10, "1", NULL },
		{ "core_imc", "CPM_NON_IDLE_INST", 0x18 + 0x10, "512", NULL },
		{ "core_imc", "CPM_NON_IDLE_PCYC", 0x18 + 0x18, "512", NULL },
		{ "thread_imc", "CPM_CS_DTLB_MISS_2M_USER", 0x18 + 0x11c0, "512", NULL },
		{ "trace_imc", "trace_cycles", 0x10200000, NULL, NULL },
	};
	for (unsigned i = 0; i < sizeof want / sizeof want[0]; i++) {
		const struct imc_sysfs_event *e = event(s, want[i].pmu, want[i].name);
		ck_assert_str_eq(e->name, want[i].name);
		ck_assert_msg(e->config[0] == want[i].value, "%s: %#llx, want %#llx", want[i].name,
		              (unsigned long long)e->config[0], (unsigned long long)want[i].value);
		ck_assert_uint_eq(e->config[1], 0);
		ck_assert_uint_eq(e->config[2], 0);
		if (want[i].scale) {
			ck_assert_str_eq(e->scale_text, want[i].scale);
			ck_assert_double_eq(e->scale, atof(want[i].scale));
		} else {
			ck_assert_ptr_null(e->scale_text);
			ck_assert_double_eq(e->scale, 1.0);
		}
		if (want[i].unit)
			ck_assert_str_eq(e->unit, want[i].unit);
		else
			ck_assert_ptr_null(e->unit);
	}
	imc_sysfs_free(s);
}
END_TEST

START_TEST(names_as_perf_spells_them)
{
	struct imc_sysfs *s = power9();
	/* perf takes nest_mcs01/.../ for nest_mcs01_imc, and aliases in any case */
	const struct imc_sysfs_pmu *p = imc_sysfs_pmu_find(s, "nest_mcs01");
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p->name, "nest_mcs01_imc");
	ck_assert_ptr_eq(imc_sysfs_pmu_find(s, "nest_mcs01_imc"), p);
	ck_assert_ptr_null(imc_sysfs_pmu_find(s, "nest_mcs"));
	ck_assert_ptr_null(imc_sysfs_pmu_find(s, "cpu"));
	const struct imc_sysfs_event *e = imc_sysfs_event_find(p, "pm_mcs01_64b_rd_disp_port01");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->name, "PM_MCS01_64B_RD_DISP_PORT01");
	ck_assert_ptr_null(imc_sysfs_event_find(p, "PM_MCS01_64B_RD_DISP_PORT0"));
	imc_sysfs_free(s);
}
END_TEST

START_TEST(root_from_the_environment)
{
	struct imc_sysfs *s = NULL;
	env_set("PAPI_HERITAGE_IMC_SYSFS_ROOT", fixture("power9"), 1);
	ck_assert_str_eq(imc_sysfs_default_root(), fixture("power9"));
	ck_assert_int_eq(imc_sysfs_discover(NULL, &s), 0);
	ck_assert_str_eq(s->root, fixture("power9"));
	ck_assert_uint_eq(s->npmus, 7);
	imc_sysfs_free(s);

	/* a root that is not there is absent, naming the path and the variable */
	env_set("PAPI_HERITAGE_IMC_SYSFS_ROOT", fixture("no-such-root"), 1);
	s = (struct imc_sysfs *)1;
	ck_assert_int_eq(imc_sysfs_discover(NULL, &s), -ENOENT);
	ck_assert_ptr_null(s);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "no real IMC here"));
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), fixture("no-such-root")));
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "PAPI_HERITAGE_IMC_SYSFS_ROOT"));
	env_unset("PAPI_HERITAGE_IMC_SYSFS_ROOT");
	ck_assert_str_eq(imc_sysfs_default_root(), "/");
}
END_TEST

START_TEST(no_imc_is_absent_with_the_path)
{
	struct imc_sysfs *s = NULL;
	char devices[4200];

	/* a root without sys/bus/event_source/devices */
	ck_assert_int_eq(imc_sysfs_discover(fixture("bad"), &s), -ENOENT);
	snprintf(devices, sizeof devices, "%s/sys/bus/event_source/devices", fixture("bad"));
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), devices));
	/* PMUs, none of them IMC (uncore_imc is Intel's memory controller) */
	ck_assert_int_eq(imc_sysfs_discover(fixture("no-imc"), &s), -ENOENT);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "no nest_*_imc, core_imc, thread_imc or trace_imc"));
	/* this machine: IMC exists only on POWER */
	int err = imc_sysfs_discover("/", &s);
	if (access("/sys/bus/event_source/devices/core_imc", F_OK) != 0 &&
	    access("/sys/bus/event_source/devices/thread_imc", F_OK) != 0) {
		ck_assert_int_eq(err, -ENOENT);
		ck_assert_ptr_nonnull(strstr(heritage_last_error(), "/sys/bus/event_source/devices"));
	} else if (err == 0) {
		ck_assert_uint_ge(s->npmus, 1);
		imc_sysfs_free(s);
	}
}
END_TEST

/* Each malformed tree: -EINVAL, the file named, what is wrong said. */
START_TEST(malformed_files_are_named)
{
	static const struct { const char *tree, *file, *why; } bad[] = {
		{ "bad/type", "thread_imc/type", "bad type \"fifteen\"" },
		{ "bad/no-type", "thread_imc/type", "missing" },
		{ "bad/cpumask", "nest_mcs01_imc/cpumask", "\"8-x\" is not N or N-M" },
		{ "bad/no-cpumask", "core_imc/cpumask", "missing: a core IMC PMU" },
		{ "bad/format-word", "thread_imc/format/event", "expected config, config1 or config2" },
		{ "bad/format-range", "thread_imc/format/mode", "\"40-33\" is not a bit or a range" },
		{ "bad/format-bit", "thread_imc/format/rvalue", "\"64\" is not a bit" },
		{ "bad/no-format", "thread_imc/format", "missing" },
		{ "bad/term", "thread_imc/events/CPM_CS_1PLUS_PPC_CMPL_USER", "term \"evnt\" names no field" },
		{ "bad/value", "thread_imc/events/CPM_CS_1PLUS_PPC_CMPL_USER", "\"0x12zz\" is not a number" },
		{ "bad/too-wide", "thread_imc/events/CPM_CS_1PLUS_PPC_CMPL_USER",
		  "offset=0x100000000 does not fit format field offset (config:0-31)" },
		{ "bad/scale", "thread_imc/events/CPM_CS_1PLUS_PPC_CMPL_USER.scale", "bad scale \"fast\"" },
		{ "bad/orphan-unit", "thread_imc/events/CPM_GONE.unit", "a unit of no event" },
		{ "bad/empty-event", "thread_imc/events/CPM_CS_1PLUS_PPC_CMPL_USER", "no event terms" },
		{ "bad/long", "thread_imc/type", "longer than a sysfs attribute" },
	};
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct imc_sysfs *s = (struct imc_sysfs *)1;
		int err = imc_sysfs_discover(fixture(bad[i].tree), &s);
		const char *msg = heritage_last_error();
		ck_assert_msg(err == -EINVAL, "%s: %d (%s)", bad[i].tree, err, msg);
		ck_assert_ptr_null(s);
		ck_assert_msg(strstr(msg, bad[i].file) && strstr(msg, bad[i].why), "%s: message \"%s\" lacks \"%s\" or \"%s\"",
		              bad[i].tree, msg, bad[i].file, bad[i].why);
	}
}
END_TEST

static void cpus_are(const char *text, const int *want, unsigned n)
{
	int *v;
	unsigned k;
	int err = imc_sysfs_parse_cpulist(text, "t", &v, &k);
	ck_assert_msg(err == 0, "\"%s\": %s", text, heritage_last_error());
	ck_assert_uint_eq(k, n);
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(v[i], want[i]);
	free(v);
}

START_TEST(cpu_lists)
{
	static const int a[] = { 0, 8, 16, 17, 18, 19 }, b[] = { 1, 2, 3 }, c[] = { 7 };
	cpus_are("0,8,16-19", a, 6);
	cpus_are("", NULL, 0);
	cpus_are("3,1-2,1", b, 3); /* sorted, repeats dropped */
	cpus_are("7-7", c, 1);
	static const char *const bad[] = { "1-", "-1", "a", "1,,2", "2-1", "1,", ",1", "0x3", "1 2", "99999999",
	                                   "0-70000" };
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int *v = (int *)1;
		unsigned k = 5;
		ck_assert_msg(imc_sysfs_parse_cpulist(bad[i], "cpumask", &v, &k) == -EINVAL, "\"%s\" accepted", bad[i]);
		ck_assert_ptr_null(v);
		ck_assert_uint_eq(k, 0);
		ck_assert_ptr_nonnull(strstr(heritage_last_error(), "cpumask"));
	}
}
END_TEST

START_TEST(format_specs)
{
	unsigned w;
	uint64_t m;
	ck_assert_int_eq(imc_sysfs_parse_format("config:0-61", "f", &w, &m), 0);
	ck_assert_uint_eq(w, 0);
	ck_assert_uint_eq(m, 0x3fffffffffffffffull);
	ck_assert_int_eq(imc_sysfs_parse_format("config:32", "f", &w, &m), 0);
	ck_assert_uint_eq(m, 0x100000000ull);
	ck_assert_int_eq(imc_sysfs_parse_format("config1:0-7,32-35", "f", &w, &m), 0);
	ck_assert_uint_eq(w, 1);
	ck_assert_uint_eq(m, 0xf000000ffull);
	ck_assert_int_eq(imc_sysfs_parse_format("config2:63", "f", &w, &m), 0);
	ck_assert_uint_eq(w, 2);
	ck_assert_uint_eq(m, 0x8000000000000000ull);
	ck_assert_int_eq(imc_sysfs_parse_format("config:0-63", "f", &w, &m), 0);
	ck_assert_uint_eq(m, ~0ull);
	static const char *const bad[] = { "config:0-64", "config3:0", "config", "config:", "config:5-3",
	                                   "config:0-3,2-4", "config:0-3,", "conf:1", "config:-1", "config:1-" };
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(imc_sysfs_parse_format(bad[i], "fmt", &w, &m) == -EINVAL, "\"%s\" accepted", bad[i]);
}
END_TEST

START_TEST(configs_from_terms)
{
	struct imc_sysfs *s = power9();
	const struct imc_sysfs_pmu *p = imc_sysfs_pmu_find(s, "core_imc");
	uint64_t c[IMC_SYSFS_CONFIG_WORDS];

	ck_assert_int_eq(imc_sysfs_build_config(p, "event=0x28", "t", c), 0);
	ck_assert_uint_eq(c[0], 0x28);
	ck_assert_int_eq(imc_sysfs_build_config(p, "event=40", "t", c), 0);
	ck_assert_uint_eq(c[0], 40);
	/* offset 0x10, rvalue (bare: 1) at bit 32, mode 3 at bits 33-40 */
	ck_assert_int_eq(imc_sysfs_build_config(p, "offset=0x10,rvalue,mode=3", "t", c), 0);
	ck_assert_uint_eq(c[0], 0x10 | 1ull << 32 | 3ull << 33);
	ck_assert_int_eq(imc_sysfs_build_config(p, "config=0x123,config1=5", "t", c), 0);
	ck_assert_uint_eq(c[0], 0x123);
	ck_assert_uint_eq(c[1], 5);
	ck_assert_int_eq(imc_sysfs_build_config(p, "event=0x3fffffffffffffff", "t", c), 0);
	ck_assert_uint_eq(c[0], 0x3fffffffffffffffull);
	ck_assert_int_eq(imc_sysfs_build_config(p, "event=0x4000000000000000", "t", c), -EINVAL);
	ck_assert_int_eq(imc_sysfs_build_config(p, "rvalue=2", "t", c), -EINVAL);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "rvalue (config:32)"));
	ck_assert_int_eq(imc_sysfs_build_config(p, "mode=0x100", "t", c), -EINVAL);
	ck_assert_int_eq(imc_sysfs_build_config(p, "umask=1", "t", c), -EINVAL);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "event, mode, offset, rvalue"));
	ck_assert_int_eq(imc_sysfs_build_config(p, "event=0x28,", "t", c), -EINVAL);
	ck_assert_int_eq(imc_sysfs_build_config(p, "event=", "t", c), -EINVAL);
	ck_assert_int_eq(imc_sysfs_build_config(p, "config", "t", c), -EINVAL);
	ck_assert_int_eq(imc_sysfs_build_config(p, "event=-1", "t", c), -EINVAL);

	/* A field split over two ranges takes its low bits in the low range
	 * (perf's pmu_format_value): 0xab into config1:0-3,8-11 = 0xa0b. */
	struct imc_sysfs_format f = { .name = "split", .spec = "config1:0-3,8-11", .word = 1, .mask = 0xf0f };
	struct imc_sysfs_pmu fake = { .name = "fake_imc", .formats = &f, .nformats = 1 };
	ck_assert_int_eq(imc_sysfs_build_config(&fake, "split=0xab", "t", c), 0);
	ck_assert_uint_eq(c[0], 0);
	ck_assert_uint_eq(c[1], 0xa0b);
	ck_assert_int_eq(imc_sysfs_build_config(&fake, "split=0x100", "t", c), -EINVAL);
	imc_sysfs_free(s);
}
END_TEST

START_TEST(account_rules)
{
	struct imc_sysfs *s = power9(), *sw = NULL;
	ck_assert_int_eq(imc_sysfs_pmu_rule(imc_sysfs_pmu_find(s, "nest_mcs01_imc")), IMC_SYSFS_RULE_CPU_WIDE);
	ck_assert_int_eq(imc_sysfs_pmu_rule(imc_sysfs_pmu_find(s, "core_imc")), IMC_SYSFS_RULE_CPU_WIDE);
	ck_assert_int_eq(imc_sysfs_pmu_rule(imc_sysfs_pmu_find(s, "thread_imc")), IMC_SYSFS_RULE_PERFMON);
	ck_assert_int_eq(imc_sysfs_pmu_rule(imc_sysfs_pmu_find(s, "trace_imc")), IMC_SYSFS_RULE_PERFMON);
	ck_assert_ptr_nonnull(strstr(imc_sysfs_rule_text(IMC_SYSFS_RULE_CPU_WIDE), "perf_event_paranoid <= 0"));
	ck_assert_ptr_nonnull(strstr(imc_sysfs_rule_text(IMC_SYSFS_RULE_PERFMON), "CAP_PERFMON"));
	ck_assert_ptr_nonnull(strstr(imc_sysfs_rule_text(IMC_SYSFS_RULE_OWN_TASK), "perf_event_paranoid <= 2"));
	/* PERF_TYPE_SOFTWARE behind thread_imc: an ordinary per-task count */
	ck_assert_int_eq(imc_sysfs_discover(fixture("software"), &sw), 0);
	ck_assert_int_eq(imc_sysfs_pmu_rule(imc_sysfs_pmu_find(sw, "thread_imc")), IMC_SYSFS_RULE_OWN_TASK);
	ck_assert_int_eq(imc_sysfs_pmu_rule(imc_sysfs_pmu_find(sw, "core_imc")), IMC_SYSFS_RULE_CPU_WIDE);

	/* the kernel's per-domain refusals, before any system call */
	struct imc_sysfs_counter c;
	char why[512];
	const struct imc_sysfs_pmu *trace = imc_sysfs_pmu_find(s, "trace_imc");
	ck_assert_int_eq(imc_sysfs_counter_open(&c, trace, &trace->events[0], -1), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "sampling"));
	ck_assert_int_eq(c.fd, -1);
	ck_assert_int_eq(imc_sysfs_usable(trace, why, sizeof why), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(why, "trace backend"));
	const struct imc_sysfs_pmu *thread = imc_sysfs_pmu_find(s, "thread_imc");
	ck_assert_int_eq(imc_sysfs_counter_open(&c, thread, &thread->events[0], 3), -EINVAL);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "counts a task, not a CPU"));
	/* A real thread_imc needs the capability on top of perf itself: never
	 * usable where perf software events are not; when refused, the
	 * reason names the capability. */
	int u = imc_sysfs_usable(thread, why, sizeof why);
	if (!heritage_probe_works(HERITAGE_MECH_PERF_SW))
		ck_assert_int_ne(u, 0);
	if (u != 0) {
		ck_assert_msg(u == -EACCES || u == -EPERM || u == -ENOTSUP, "usable: %d", u);
		ck_assert_msg(strstr(why, "thread_imc needs CAP_PERFMON") != NULL, "why: %s", why);
	}
	imc_sysfs_free(sw);
	imc_sysfs_free(s);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("imc_sysfs");
	TCase *tc = tcase_create("discovery");
	tcase_add_test(tc, power9_pmus_types_and_cpumasks);
	tcase_add_test(tc, power9_formats_are_the_kernels);
	tcase_add_test(tc, power9_events_values_scales_units);
	tcase_add_test(tc, names_as_perf_spells_them);
	tcase_add_test(tc, root_from_the_environment);
	tcase_add_test(tc, no_imc_is_absent_with_the_path);
	tcase_add_test(tc, malformed_files_are_named);
	tcase_add_test(tc, cpu_lists);
	tcase_add_test(tc, format_specs);
	tcase_add_test(tc, configs_from_terms);
	tcase_add_test(tc, account_rules);
	suite_add_tcase(su, tc);
	SRunner *sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
