/*
 * Unit tests of the alpha21064 core-PMU backend (src/alpha/alpha_pmu.c).
 *
 * The machine these tests were written on has no hardware PMU, so:
 *  - the mapping is checked by forcing libpfm4 PMUs (LIBPFM_FORCE_PMU, read
 *    when libpfm4 initialises: each Check test runs in its own child, which
 *    initialises libpfm4 after setting it): every mapped event must encode to
 *    the expected perf type/config with sample_period = scale x 2^width, and
 *    events without a host analogue must be refused;
 *  - the sampling and delivery machinery runs on a software perf event
 *    standing in for the hardware one: page faults, because their count is
 *    exact and their sample IP is the faulting store, so interrupts, PCs and
 *    the counter residue can be asserted exactly;
 *  - whether this machine's kernel opens the hardware events is asserted
 *    both ways: resolution succeeds where it does, and fails with -ENODEV and
 *    a message where it does not.
 * Where the sampling probe (heritage_probe.h) does not see records arrive
 * (perf_event_paranoid 3, seccomp, PAPI_HERITAGE_PROBE_DISABLE=sampling),
 * the sampling tests cannot run: the program then exits 77 after the
 * encoding tests, saying why.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "alpha/alpha_events.h"
#include "alpha/alpha_model.h"
#include "alpha/alpha_pmu.h"
#include "common/heritage_error.h"
#include "common/heritage_probe.h"

#include <perfmon/pfmlib.h>

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

void alpha_touch_pages(char *p, long npages);
extern const char alpha_touch_store[], alpha_touch_pages_end[];

static unsigned code_of(const char *name)
{
	unsigned code = ~0u;
	int r = alpha_event_parse(name, &code);
	ck_assert_msg(r == 0, "%s: %d %s", name, r, heritage_last_error());
	return code;
}

/* libpfm4 activates only the forced PMU (pfmlib_init_pmus stops at it), so
 * the generic perf:: names and a core PMU's names are checked under two
 * forcings; a real machine has both active, and the table tries the
 * PMU-specific names first, so each forcing gives what that machine gets
 * for the events it lists. */
static void force_pmu(const char *pmu, int core)
{
	char name[64] = "";
	pfm_terminate();
	setenv("LIBPFM_FORCE_PMU", pmu, 1);
	if (core) {
		ck_assert_int_eq(alpha_pmu_detect(name, sizeof name), 0);
		ck_assert_str_eq(name, pmu);
	}
}

/* What an event must encode to on a forced PMU: .type < 0 means refused
 * with -ENOTSUP.  .line points a failure at its row. */
struct want {
	int line;
	const char *event;
	int type;
	unsigned long long config;
	unsigned scale;
};
#define ROW(e, t, c, s) { __LINE__, e, t, c, s }
#define REFUSED(e) { __LINE__, e, -1, 0, 0 }
#define L1_READ_MISS(cache) \
	(PERF_COUNT_HW_CACHE_##cache | PERF_COUNT_HW_CACHE_OP_READ << 8 | PERF_COUNT_HW_CACHE_RESULT_MISS << 16)

static void check_rows(const struct want *w, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		const struct alpha_event *e = alpha_event_of(code_of(w[i].event));
		const struct alpha_widths *ws = &alpha_counter_widths[e->counter];
		const unsigned widths[2] = { ws->def, ws->other };
		for (unsigned k = 0; k < 2; k++) {
			char name[64];
			snprintf(name, sizeof name, "%s:width=%u", w[i].event, widths[k]);
			struct perf_event_attr a;
			const char *host = NULL;
			memset(&a, 0, sizeof a);
			int r = alpha_pmu_resolve(code_of(name), NULL, 0, &a, &host);
			if (w[i].type < 0) {
				ck_assert_msg(r == -ENOTSUP, "line %d: %s: want -ENOTSUP, got %d", w[i].line, name, r);
				ck_assert_msg(strstr(heritage_last_error(), w[i].event) != NULL, "line %d: message '%s'",
				              w[i].line, heritage_last_error());
				continue;
			}
			ck_assert_msg(r == 0, "line %d: %s: %d %s", w[i].line, name, r, heritage_last_error());
			ck_assert_msg(a.type == (unsigned)w[i].type && a.config == w[i].config,
			              "line %d: %s via %s: type %u config %#llx, want %d %#llx", w[i].line, name, host,
			              a.type, (unsigned long long)a.config, w[i].type, w[i].config);
			ck_assert_msg(a.sample_period == (unsigned long long)w[i].scale << widths[k],
			              "line %d: %s: period %llu", w[i].line, name, (unsigned long long)a.sample_period);
			ck_assert_uint_eq(a.sample_type, PERF_SAMPLE_IP);
			ck_assert_uint_eq(a.exclude_kernel, 1);
			ck_assert_uint_eq(a.exclude_hv, 1);
			ck_assert_uint_eq(a.disabled, 1);
			ck_assert_uint_eq(a.size, sizeof a);
		}
	}
}

/* The generic perf events alone (any Linux with perf_event): every Alpha
 * event has a row here, so the table cannot grow unchecked. */
START_TEST(map_generic)
{
	force_pmu("perf", 0);
	static const struct want w[] = {
		ROW("ISSUES", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 2), /* pairs: twice the period */
		ROW("PIPELINE_DRY", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, 1),
		REFUSED("LOAD_INSNS"),      /* no generic event: PMU-specific only */
		ROW("PIPELINE_FROZEN", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND, 1),
		ROW("BRANCH_INSNS", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, 1),
		ROW("CYCLES", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1),
		REFUSED("PAL_MODE"),
		REFUSED("NON_ISSUES"),
		REFUSED("EXTERNAL"),
		ROW("DCACHE_MISSES", PERF_TYPE_HW_CACHE, L1_READ_MISS(L1D), 1),
		ROW("ICACHE_MISSES", PERF_TYPE_HW_CACHE, L1_READ_MISS(L1I), 1),
		REFUSED("DUAL_ISSUE_CYCLES"),
		ROW("BRANCH_MISPREDICTS", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, 1),
		REFUSED("FP_INSNS"),
		REFUSED("INTEGER_OPERATE"),
		REFUSED("STORE_INSNS"),
		REFUSED("EXTERNAL_1"),
	};
	ck_assert_uint_eq(sizeof w / sizeof w[0], alpha_nevents);
	for (unsigned i = 0; i < alpha_nevents; i++)
		ck_assert_str_eq(w[i].event, alpha_events[i].name);
	check_rows(w, sizeof w / sizeof w[0]);
}
END_TEST

/* Skylake: the events with a PMU-specific name map to it, ahead of any
 * generic one (Intel SDM encodings: event | umask << 8 | cmask << 24). */
START_TEST(map_skylake)
{
	force_pmu("skl", 1);
	static const struct want w[] = {
		ROW("PIPELINE_DRY", PERF_TYPE_RAW, 0x400019c, 1),   /* IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE */
		ROW("LOAD_INSNS", PERF_TYPE_RAW, 0x81d0, 1),        /* MEM_INST_RETIRED.ALL_LOADS */
		ROW("PIPELINE_FROZEN", PERF_TYPE_RAW, 0x40004a3, 1), /* CYCLE_ACTIVITY.STALLS_TOTAL */
		ROW("DUAL_ISSUE_CYCLES", PERF_TYPE_RAW, 0x200010e, 1), /* UOPS_ISSUED.ANY, cmask 2 */
		ROW("FP_INSNS", PERF_TYPE_RAW, 0x3fc7, 1),            /* FP_ARITH_INST_RETIRED, scalar..256-bit */
		ROW("STORE_INSNS", PERF_TYPE_RAW, 0x82d0, 1),       /* MEM_INST_RETIRED.ALL_STORES */
		REFUSED("PAL_MODE"),
		REFUSED("INTEGER_OPERATE"),
	};
	check_rows(w, sizeof w / sizeof w[0]);
}
END_TEST

/* Ice Lake's table refuses combined FP_ARITH umasks: the scalar fallback. */
START_TEST(map_icelake)
{
	force_pmu("icl", 1);
	static const struct want w[] = {
		ROW("LOAD_INSNS", PERF_TYPE_RAW, 0x81d0, 1),
		ROW("FP_INSNS", PERF_TYPE_RAW, 0x3c7, 1),           /* FP_ARITH_INST_RETIRED.SCALAR */
		ROW("STORE_INSNS", PERF_TYPE_RAW, 0x82d0, 1),
	};
	check_rows(w, sizeof w / sizeof w[0]);
}
END_TEST

/* Zen 3: the Intel names are unknown, so the AMD candidates are taken (AMD
 * PPR event numbers); DUAL_ISSUE_CYCLES has no AMD analogue and is refused
 * (on a real Zen 3 the stall events fall back to the generic ones above). */
START_TEST(map_zen3_fallbacks)
{
	force_pmu("amd64_fam19h_zen3", 1);
	static const struct want w[] = {
		ROW("LOAD_INSNS", PERF_TYPE_RAW, 0x129, 1),        /* LS_DISPATCH.LD_DISPATCH */
		ROW("FP_INSNS", PERF_TYPE_RAW, 0xf03, 1),          /* RETIRED_SSE_AVX_FLOPS.ANY */
		ROW("STORE_INSNS", PERF_TYPE_RAW, 0x229, 1),       /* LS_DISPATCH.STORE_DISPATCH */
		REFUSED("DUAL_ISSUE_CYCLES"),
	};
	check_rows(w, sizeof w / sizeof w[0]);
}
END_TEST

START_TEST(backend_names)
{
	enum alpha_backend b = ALPHA_BACKEND_PMU;
	ck_assert_int_eq(alpha_backend_parse(NULL, &b), 0);
	ck_assert_int_eq(b, ALPHA_BACKEND_AUTO);
	ck_assert_int_eq(alpha_backend_parse("software", &b), 0);
	ck_assert_int_eq(b, ALPHA_BACKEND_SOFTWARE);
	ck_assert_int_eq(alpha_backend_parse("PMU", &b), 0);
	ck_assert_int_eq(b, ALPHA_BACKEND_PMU);
	ck_assert_int_eq(alpha_backend_parse("auto", &b), 0);
	ck_assert_int_eq(b, ALPHA_BACKEND_AUTO);
	ck_assert_int_eq(alpha_backend_parse("hardware", &b), -EINVAL);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "auto (default), software and pmu"));
	ck_assert_str_eq(alpha_backend_name(ALPHA_BACKEND_PMU), "pmu");
	ck_assert_str_eq(alpha_backend_name(ALPHA_BACKEND_SOFTWARE), "software");
}
END_TEST

/* What the probe saw of the core PMU decides the outcome, and every
 * outcome is checked: no silent pass either way.  The reason's words may
 * be the kernel's: only its presence is asserted. */
START_TEST(this_machine_opens_or_refuses)
{
	struct perf_event_attr a;
	const struct heritage_probe_result *pmu = heritage_probe(HERITAGE_MECH_PMU);
	const char *host = NULL;
	int r = alpha_pmu_resolve(code_of("CYCLES"), NULL, 1, &a, &host);

	if (pmu->state == HERITAGE_PROBE_WORKS) {
		ck_assert_msg(r == 0, "%s", heritage_last_error());
		ck_assert_str_eq(host, "perf::CPU-CYCLES");
	} else {
		ck_assert_msg(r == (pmu->refused ? -EPERM : -ENODEV), "resolve %d, probe: %s", r, pmu->evidence);
		ck_assert_msg(strlen(heritage_last_error()) > 20, "no reason given: '%s'", heritage_last_error());
	}
	/* Selection refuses what no PMU can count, and keeps the counter rules. */
	struct alpha_pmu_run run;
	memset(&run, 0, sizeof run);
	unsigned codes[2] = { code_of("PAL_MODE"), 0 };
	ck_assert_int_eq(alpha_pmu_select(&run, codes, 1, NULL, NULL), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "PALcode"));
	codes[0] = code_of("LOAD_INSNS");
	codes[1] = code_of("CYCLES");
	ck_assert_int_eq(alpha_pmu_select(&run, codes, 2, "perf::PAGE-FAULTS", NULL), -EBUSY);
}
END_TEST

/* ---- sampling, on page faults standing in for the hardware event -------- */

#define MAX_GOT 64
struct got {
	unsigned n[ALPHA_NCOUNTERS];
	uint64_t pc[ALPHA_NCOUNTERS][MAX_GOT];
	int had_context;
};

static void record(void *arg, unsigned counter, uint64_t pc, ucontext_t *uc)
{
	struct got *g = arg;
	if (g->n[counter] < MAX_GOT)
		g->pc[counter][g->n[counter]] = pc;
	g->n[counter]++;
	g->had_context += uc != NULL;
}

static char *fresh_pages(long n)
{
	char *p = mmap(NULL, (size_t)n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	/* One fault per 4 KiB page, not one per 2 MiB huge page. */
	madvise(p, (size_t)n * 4096, MADV_NOHUGEPAGE);
	return p;
}

static void start_ok(struct alpha_pmu_run *r)
{
	char why[256] = "";
	ck_assert_msg(alpha_pmu_start(r, why, sizeof why) == 0, "%s", why);
}

/* STORE_INSNS at width 8 on page faults: 3 x 256 + 128 fresh pages make
 * exactly 3 carries, each at the loop's store (the few faults start and stop
 * may add stay under the 128 of slack); the host count agrees; the counter
 * keeps its residue into the next run, as the 21064's did: 896 more pages
 * bring the total to 7 x 256, so the second run makes 4 interrupts, not 3. */
START_TEST(samples_deliver_the_store)
{
	const long n = 3 * 256 + 128;
	struct alpha_pmu_run run;
	struct got g;
	unsigned code = code_of("STORE_INSNS:width=8"), pos = 9;

	memset(&run, 0, sizeof run);
	memset(&g, 0, sizeof g);
	ck_assert_msg(alpha_pmu_select(&run, &code, 1, "perf::PAGE-FAULTS", &pos) == 0, "%s", heritage_last_error());
	ck_assert_uint_eq(pos, 1);
	ck_assert_uint_eq(run.attr[1].sample_period, 256);
	ck_assert_str_eq(run.host[1], "perf::PAGE-FAULTS");
	run.deliver = record;
	run.deliver_arg = &g;

	char *p = fresh_pages(2 * n);
	start_ok(&run);
	alpha_touch_pages(p, n);
	ck_assert(alpha_pmu_stop(&run) == 0);

	ck_assert_uint_eq(run.interrupts[1], 3);
	ck_assert_uint_eq(g.n[1], 3);
	ck_assert_uint_eq(g.n[0], 0);
	ck_assert_uint_eq(run.lost[1], 0);
	ck_assert_int_eq(g.had_context, 3);
	for (unsigned i = 0; i < g.n[1]; i++)
		ck_assert_msg(g.pc[1][i] == (uintptr_t)alpha_touch_store, "interrupt %u at %#lx, not the store %p", i,
		              (unsigned long)g.pc[1][i], (void *)alpha_touch_store);
	uint64_t count = 0;
	ck_assert_int_eq(alpha_pmu_host_count(&run, 1, &count), 0);
	ck_assert_msg(count >= (uint64_t)n && count < (uint64_t)n + 128, "host count %lu", (unsigned long)count);
	ck_assert_uint_eq(count >> 8, run.interrupts[1]);
	ck_assert_int_eq(alpha_estimate(run.interrupts[1], 8), 3 * 256);

	/* Stopped: faults now raise nothing. */
	char *q = fresh_pages(300);
	alpha_touch_pages(q, 300);
	ck_assert_uint_eq(g.n[1], 3);

	start_ok(&run);
	alpha_touch_pages(p + n * 4096, n);
	ck_assert(alpha_pmu_stop(&run) == 0);
	ck_assert_uint_eq(run.interrupts[1], 4);
	ck_assert_uint_eq(g.n[1], 7);
	for (unsigned i = 3; i < g.n[1]; i++)
		ck_assert_uint_eq(g.pc[1][i], (uintptr_t)alpha_touch_store);
	ck_assert_int_eq(alpha_pmu_host_count(&run, 1, &count), 0);
	ck_assert_uint_eq(count >> 8, 7);

	/* Reset forgets what the OS knows; close releases the counter. */
	alpha_pmu_reset(&run);
	ck_assert_uint_eq(run.interrupts[1], 0);
	alpha_pmu_close(&run);
	ck_assert_int_eq(alpha_pmu_host_count(&run, 1, &count), -EINVAL);
	munmap(p, 2 * n * 4096);
	munmap(q, 300 * 4096);
}
END_TEST

/* Both counters at once, each on its own fd: LOAD_INSNS (counter 0, width
 * 12) and STORE_INSNS (counter 1, width 8) both stand in for page faults, so
 * on 4096 + 512 pages counter 0 carries once and counter 1 eighteen times. */
START_TEST(two_counters_two_rings)
{
	const long n = 4096 + 512;
	struct alpha_pmu_run run;
	struct got g;
	unsigned codes[2] = { code_of("STORE_INSNS:width=8"), code_of("LOAD_INSNS:width=12") }, pos[2];

	memset(&run, 0, sizeof run);
	memset(&g, 0, sizeof g);
	ck_assert_msg(alpha_pmu_select(&run, codes, 2, "perf::PAGE-FAULTS", pos) == 0, "%s", heritage_last_error());
	ck_assert_uint_eq(pos[0], 1);
	ck_assert_uint_eq(pos[1], 0);
	run.deliver = record;
	run.deliver_arg = &g;
	char *p = fresh_pages(n);
	start_ok(&run);
	alpha_touch_pages(p, n);
	ck_assert(alpha_pmu_stop(&run) == 0);
	ck_assert_uint_eq(g.n[0], 1);
	ck_assert_uint_eq(g.n[1], 18);
	ck_assert_uint_eq(run.interrupts[0], 1);
	ck_assert_uint_eq(run.interrupts[1], 18);
	ck_assert_uint_eq(g.pc[0][0], (uintptr_t)alpha_touch_store);
	/* A second run on this thread while one runs is refused. */
	struct alpha_pmu_run other;
	memset(&other, 0, sizeof other);
	ck_assert_int_eq(alpha_pmu_select(&other, codes, 1, "perf::PAGE-FAULTS", NULL), 0);
	start_ok(&run);
	char why[256] = "";
	ck_assert_int_eq(alpha_pmu_start(&other, why, sizeof why), -EBUSY);
	ck_assert_ptr_nonnull(strstr(why, "already running"));
	alpha_pmu_close(&run);
	alpha_pmu_close(&other);
	munmap(p, n * 4096);
}
END_TEST

/* The sampling tests need the kernel to open a software sampling event. */
int main(void)
{
	char why[512] = "";
	int sampling = heritage_probe_explain(HERITAGE_MECH_SAMPLING, why, sizeof why) == 0;
	Suite *s = suite_create("alpha21064 core-PMU backend");
	TCase *map = tcase_create("mapping");
	tcase_add_test(map, map_generic);
	tcase_add_test(map, map_skylake);
	tcase_add_test(map, map_icelake);
	tcase_add_test(map, map_zen3_fallbacks);
	tcase_add_test(map, backend_names);
	tcase_add_test(map, this_machine_opens_or_refuses);
	suite_add_tcase(s, map);
	if (sampling) {
		TCase *smp = tcase_create("sampling");
		tcase_set_timeout(smp, 60);
		tcase_add_test(smp, samples_deliver_the_store);
		tcase_add_test(smp, two_counters_two_rings);
		suite_add_tcase(s, smp);
	}
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (failed)
		return 1;
	if (!sampling) {
		printf("mapping tests passed; sampling tests skipped: %s\n", why);
		return 77;
	}
	return 0;
}
