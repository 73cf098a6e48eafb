/*
 * Unit tests of the alpha21064 model (src/alpha): event tables and names,
 * counter carries and residue, selections and conflicts, thresholds,
 * interrupt frames, the x86 instruction classes, an event set's bookkeeping,
 * thresholds and delivery accounting (alpha_set.c), and the single-step
 * backend on assembly loops whose instruction mix is known exactly.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "alpha/alpha_events.h"
#include "alpha/alpha_model.h"
#include "alpha/alpha_set.h"
#include "alpha/alpha_sw.h"
#include "common/heritage_error.h"
#include "common/heritage_probe.h"
#include "papi_heritage.h"
#include "watch/watch_step.h"
#include "watch/watch_x86.h"

#include <check.h>
#include "sanitize_test.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "env_test.h"

long alpha_load_loop(const long *p, long n);
void alpha_mix_loop(long *p, long n);
double alpha_fp_loop(double x, long n);
extern const char alpha_load_loop_end[], alpha_mix_loop_end[], alpha_fp_loop_end[];

static unsigned code_of(const char *name)
{
	unsigned code = ~0u;
	int r = alpha_event_parse(name, &code);
	ck_assert_msg(r == 0, "%s: %d %s", name, r, heritage_last_error());
	return code;
}

/* ---- tables ------------------------------------------------------------- */

START_TEST(tables_match_the_seed)
{
	unsigned per[2] = { 0, 0 };
	for (unsigned i = 0; i < alpha_nevents; i++)
		per[alpha_events[i].counter]++;
	ck_assert_uint_eq(per[0], 9);
	ck_assert_uint_eq(per[1], 8);
	static const struct {
		const char *name;
		unsigned counter, mux;
		enum heritage_source src;
	} want[] = {
		{ "ISSUES", 0, 0x0, HERITAGE_MEASURED }, { "PIPELINE_DRY", 0, 0x2, HERITAGE_UNAVAILABLE },
		{ "LOAD_INSNS", 0, 0x4, HERITAGE_MEASURED }, { "PIPELINE_FROZEN", 0, 0x6, HERITAGE_UNAVAILABLE },
		{ "BRANCH_INSNS", 0, 0x8, HERITAGE_MEASURED }, { "CYCLES", 0, 0xA, HERITAGE_MODELLED },
		{ "PAL_MODE", 0, 0xB, HERITAGE_UNAVAILABLE }, { "NON_ISSUES", 0, 0xC, HERITAGE_UNAVAILABLE },
		{ "EXTERNAL", 0, 0xE, HERITAGE_UNAVAILABLE }, { "DCACHE_MISSES", 1, 0, HERITAGE_UNAVAILABLE },
		{ "ICACHE_MISSES", 1, 1, HERITAGE_UNAVAILABLE }, { "DUAL_ISSUE_CYCLES", 1, 2, HERITAGE_UNAVAILABLE },
		{ "BRANCH_MISPREDICTS", 1, 3, HERITAGE_UNAVAILABLE }, { "FP_INSNS", 1, 4, HERITAGE_MEASURED },
		{ "INTEGER_OPERATE", 1, 5, HERITAGE_MEASURED }, { "STORE_INSNS", 1, 6, HERITAGE_MEASURED },
		{ "EXTERNAL_1", 1, 7, HERITAGE_UNAVAILABLE },
	};
	for (unsigned i = 0; i < sizeof want / sizeof want[0]; i++) {
		const struct alpha_event *e = alpha_event_of(code_of(want[i].name));
		ck_assert_str_eq(e->name, want[i].name);
		ck_assert_uint_eq(e->counter, want[i].counter);
		ck_assert_uint_eq(e->mux, want[i].mux);
		ck_assert_int_eq(e->sw_source, want[i].src);
		/* Either a host event for the core-PMU backend, or why not. */
		ck_assert((e->host[0] != NULL) == (e->host_honesty != NULL));
		ck_assert((e->host_why != NULL) == (e->host_honesty == NULL));
		if (e->sw_source == HERITAGE_UNAVAILABLE)
			ck_assert_ptr_nonnull(e->sw_why);
	}
}
END_TEST

START_TEST(names_and_widths)
{
	char buf[64];
	ck_assert_uint_eq(alpha_code_width(code_of("LOAD_INSNS")), 16);
	ck_assert_uint_eq(alpha_code_width(code_of("load_insns:WIDTH=12")), 12);
	ck_assert_uint_eq(alpha_code_width(code_of("STORE_INSNS")), 12);
	ck_assert_uint_eq(alpha_code_width(code_of("STORE_INSNS:width=8")), 8);
	ck_assert_int_eq(alpha_event_format(code_of("LOAD_INSNS:width=12"), buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "LOAD_INSNS:width=12");
	ck_assert_int_eq(alpha_event_format(code_of("CYCLES"), buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "CYCLES");

	unsigned code;
	ck_assert_int_eq(alpha_event_parse("LOAD_INSNS:width=8", &code), -EINVAL);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "16 or 12"));
	ck_assert_int_eq(alpha_event_parse("STORE_INSNS:width=16", &code), -EINVAL);
	ck_assert_int_eq(alpha_event_parse("STORE_INSNS:width=", &code), -EINVAL);
	ck_assert_int_eq(alpha_event_parse("STORE_INSNS:width=12x", &code), -EINVAL);
	ck_assert_int_eq(alpha_event_parse("STORE_INSNS:period=12", &code), -EINVAL);
	ck_assert_int_eq(alpha_event_parse("LOAD", &code), -ENOENT);
	ck_assert_int_eq(alpha_event_parse("", &code), -ENOENT);
	ck_assert_int_eq(alpha_event_parse(NULL, &code), -EINVAL);
	ck_assert_int_eq(alpha_event_format(0xff, buf, sizeof buf), -ENOENT);
	ck_assert_int_eq(alpha_event_format(code_of("LOAD_INSNS:width=12"), buf, 5), -ENOSPC);
}
END_TEST

/* ---- counters ----------------------------------------------------------- */

START_TEST(counter_carries_and_residue)
{
	struct alpha_cpu cpu;
	memset(&cpu, 0, sizeof cpu);
	ck_assert_uint_eq(alpha_counter_add(&cpu, 0, 12, 4095), 0);
	ck_assert_uint_eq(alpha_counter_add(&cpu, 0, 12, 1), 1);
	ck_assert_uint_eq(alpha_counter_add(&cpu, 0, 12, 3 * 4096), 3);
	/* The residue stays: 100 + 4000 crosses once more. */
	ck_assert_uint_eq(alpha_counter_add(&cpu, 0, 12, 100), 0);
	ck_assert_uint_eq(alpha_counter_add(&cpu, 0, 12, 4000), 1);
	/* The 16-bit register wraps without losing a carry at either width. */
	memset(&cpu, 0, sizeof cpu);
	ck_assert_uint_eq(alpha_counter_add(&cpu, 0, 16, 65535), 0);
	ck_assert_uint_eq(alpha_counter_add(&cpu, 0, 16, 2), 1);
	ck_assert_uint_eq(cpu.ctr[0], 1);
	ck_assert_uint_eq(alpha_counter_add(&cpu, 1, 8, 256 * 16 + 255), 16);
	ck_assert_uint_eq(alpha_counter_add(&cpu, 1, 8, 1), 1);
	ck_assert_uint_eq(cpu.ctr[1], 256); /* the 12-bit register: 4352 mod 4096 */
}
END_TEST

START_TEST(select_conflicts_and_unavailable)
{
	struct alpha_select sel;
	unsigned pos[2];
	unsigned two[2] = { code_of("LOAD_INSNS"), code_of("BRANCH_INSNS") };
	ck_assert_int_eq(alpha_select_events(&sel, two, 2, 0, pos), -EBUSY);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "counter 0"));
	unsigned ok[2] = { code_of("STORE_INSNS:width=8"), code_of("LOAD_INSNS:width=12") };
	ck_assert_int_eq(alpha_select_events(&sel, ok, 2, 0, pos), 0);
	ck_assert_uint_eq(pos[0], 1);
	ck_assert_uint_eq(pos[1], 0);
	ck_assert_uint_eq(sel.width[0], 12);
	ck_assert_uint_eq(sel.width[1], 8);
	ck_assert_int_eq(sel.feed[1], ALPHA_FEED_STORES);
	unsigned bad[1] = { code_of("DCACHE_MISSES") };
	ck_assert_int_eq(alpha_select_events(&sel, bad, 1, 0, pos), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "DCACHE_MISSES"));
	ck_assert_int_eq(alpha_select_events(&sel, bad, 1, 1, pos), 0);
	ck_assert_int_eq(alpha_select_events(&sel, NULL, 0, 0, pos), 0);
	ck_assert_int_eq(sel.used[0] + sel.used[1], 0);
}
END_TEST

START_TEST(step_feeds_and_pairs)
{
	struct alpha_cpu cpu;
	struct alpha_select sel;
	unsigned irq[2];
	unsigned codes[2] = { code_of("ISSUES:width=12"), code_of("INTEGER_OPERATE:width=8") };
	memset(&cpu, 0, sizeof cpu);
	ck_assert_int_eq(alpha_select_events(&sel, codes, 2, 0, NULL), 0);
	unsigned total[2] = { 0, 0 };
	/* 8192 instructions, every other one an integer operate: ISSUES counts
	 * 4096 pairs (one interrupt), INTEGER_OPERATE 4096 (16 interrupts). */
	for (unsigned i = 0; i < 8192; i++) {
		alpha_cpu_step(&cpu, &sel, (i & 1) ? ALPHA_INSN_INTOP : ALPHA_INSN_LOAD, 0, irq);
		total[0] += irq[0];
		total[1] += irq[1];
	}
	ck_assert_uint_eq(total[0], 1);
	ck_assert_uint_eq(total[1], 16);
	/* CYCLES takes the elapsed cycles, several carries at once. */
	unsigned cyc[1] = { code_of("CYCLES:width=12") };
	memset(&cpu, 0, sizeof cpu);
	ck_assert_int_eq(alpha_select_events(&sel, cyc, 1, 0, NULL), 0);
	alpha_cpu_step(&cpu, &sel, 0, 3 * 4096 + 5, irq);
	ck_assert_uint_eq(irq[0], 3);
	ck_assert_uint_eq(irq[1], 0);
	ck_assert_uint_eq(alpha_cycles_from_ns(1000000000ull, ALPHA_NOMINAL_HZ), 200000000ull);
	ck_assert_uint_eq(alpha_cycles_from_ns(5, ALPHA_NOMINAL_HZ), 1);
	ck_assert_uint_eq(alpha_cycles_from_ns(3000000000ull + 10, ALPHA_NOMINAL_HZ), 600000002ull);
}
END_TEST

START_TEST(thresholds_and_estimates)
{
	ck_assert_int_eq(alpha_threshold_interrupts(4096, 12, "X"), 1);
	ck_assert_int_eq(alpha_threshold_interrupts(3 * 4096, 12, "X"), 3);
	ck_assert_int_eq(alpha_threshold_interrupts(4095, 12, "X"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "multiple of 4096"));
	ck_assert_int_eq(alpha_threshold_interrupts(4096, 16, "X"), -EINVAL);
	ck_assert_int_eq(alpha_threshold_interrupts(0, 8, "X"), -EINVAL);
	ck_assert_int_eq(alpha_threshold_interrupts(-256, 8, "X"), -EINVAL);
	ck_assert_int_eq(alpha_estimate(3, 12), 12288);
	ck_assert_int_eq(alpha_estimate(0, 16), 0);
}
END_TEST

START_TEST(frames_per_os)
{
	struct alpha_frame f;
	alpha_frame_build(ALPHA_OS_VMS, 1, 0x1234, &f);
	ck_assert_int_eq(f.vector, 0x650);
	ck_assert_int_eq(f.ipl, 29);
	ck_assert_int_eq(f.exception, 1);
	ck_assert_int_eq(f.r4, 1);
	ck_assert_int_eq(f.a0, ALPHA_FRAME_UNDEFINED);
	ck_assert_uint_eq(f.pc, 0x1234);
	alpha_frame_build(ALPHA_OS_UNIX, 0, 0x99, &f);
	ck_assert_int_eq(f.vector, 0x650);
	ck_assert_int_eq(f.ipl, 6);
	ck_assert_int_eq(f.exception, 0);
	ck_assert_int_eq(f.a0, 4);
	ck_assert_int_eq(f.a1, 0x650);
	ck_assert_int_eq(f.a2, 0);
	ck_assert_int_eq(f.r4, ALPHA_FRAME_UNDEFINED);
	alpha_frame_build(ALPHA_OS_NT, 1, 0x99, &f);
	ck_assert_int_eq(f.vector, ALPHA_FRAME_UNDEFINED);
	ck_assert_int_eq(f.ipl, ALPHA_FRAME_UNDEFINED);
	ck_assert_uint_eq(f.counter, 1);
	enum alpha_os os;
	ck_assert_int_eq(alpha_os_parse("OpenVMS", &os), 0);
	ck_assert_int_eq(os, ALPHA_OS_VMS);
	ck_assert_int_eq(alpha_os_parse("digital-unix", &os), 0);
	ck_assert_int_eq(os, ALPHA_OS_UNIX);
	ck_assert_int_eq(alpha_os_parse("os2", &os), -EINVAL);
	ck_assert_str_eq(alpha_os_name(ALPHA_OS_NT), "nt");
}
END_TEST

/* ---- x86 classes -------------------------------------------------------- */

static unsigned alpha_cls(const uint8_t *b, size_t n)
{
	unsigned len = 0, x = 0;
	ck_assert_int_eq(watch_x86_classify(b, n, 0x1000, &len, &x), 0);
	ck_assert_uint_eq(len, n);
	return alpha_class_from_x86(x);
}

#define CLS(cls, ...)                                                                                  \
	do {                                                                                           \
		static const uint8_t b_[] = { __VA_ARGS__ };                                           \
		ck_assert_msg(alpha_cls(b_, sizeof b_) == (cls), "line %d: %#x", __LINE__,             \
		              alpha_cls(b_, sizeof b_));                                               \
	} while (0)

START_TEST(x86_classes)
{
	ck_assert_int_eq(watch_x86_init(), 0);
	CLS(ALPHA_INSN_LOAD, 0x48, 0x8b, 0x07);                          /* mov (%rdi),%rax */
	CLS(ALPHA_INSN_STORE, 0x48, 0x89, 0x07);                         /* mov %rax,(%rdi) */
	CLS(ALPHA_INSN_LOAD | ALPHA_INSN_INTOP, 0x48, 0x03, 0x07);       /* add (%rdi),%rax */
	CLS(ALPHA_INSN_LOAD | ALPHA_INSN_STORE | ALPHA_INSN_INTOP, 0x48, 0x01, 0x07); /* add %rax,(%rdi) */
	CLS(ALPHA_INSN_INTOP, 0x48, 0xff, 0xce);                         /* dec %rsi */
	CLS(ALPHA_INSN_INTOP, 0x48, 0x89, 0xd8);                         /* mov %rbx,%rax */
	CLS(ALPHA_INSN_INTOP, 0x48, 0x8d, 0x47, 0x08);                   /* lea 8(%rdi),%rax */
	CLS(ALPHA_INSN_INTOP, 0x90);                                     /* nop */
	CLS(ALPHA_INSN_BRANCH, 0x75, 0xf0);                              /* jnz */
	CLS(ALPHA_INSN_BRANCH, 0xeb, 0x00);                              /* jmp */
	CLS(ALPHA_INSN_BRANCH | ALPHA_INSN_STORE, 0xe8, 0, 0, 0, 0);     /* call */
	CLS(ALPHA_INSN_BRANCH | ALPHA_INSN_LOAD, 0xc3);                  /* ret */
	CLS(ALPHA_INSN_STORE, 0x53);                                     /* push %rbx */
	CLS(ALPHA_INSN_LOAD, 0x5b);                                      /* pop %rbx */
	CLS(ALPHA_INSN_FP, 0xf2, 0x0f, 0x58, 0xc1);                      /* addsd %xmm1,%xmm0 */
	CLS(ALPHA_INSN_FP | ALPHA_INSN_LOAD, 0xf2, 0x0f, 0x59, 0x07);    /* mulsd (%rdi),%xmm0 */
	CLS(ALPHA_INSN_LOAD, 0xf2, 0x0f, 0x10, 0x07);                    /* movsd (%rdi),%xmm0 */
	CLS(ALPHA_INSN_STORE, 0xc5, 0xfe, 0x7f, 0x07);                   /* vmovdqu %ymm0,(%rdi) */
	CLS(ALPHA_INSN_INTOP, 0x66, 0x0f, 0xfe, 0xc1);                   /* paddd %xmm1,%xmm0 */
	CLS(ALPHA_INSN_FP, 0xd8, 0xc1);                                  /* fadd %st(1),%st */
	CLS(ALPHA_INSN_LOAD, 0xdd, 0x07);                                /* fldl (%rdi) */
	CLS(ALPHA_INSN_LOAD | ALPHA_INSN_STORE, 0xf3, 0x48, 0xa5);       /* rep movsq */
	CLS(ALPHA_INSN_STORE, 0xf3, 0x48, 0xab);                         /* rep stosq */
	CLS(0, 0x0f, 0x05);                                              /* syscall */
	CLS(0, 0xf3, 0x0f, 0x1e, 0xfa);                                  /* endbr64 */
	static const uint8_t junk[] = { 0x0f, 0xff };
	unsigned len, x;
	ck_assert_int_eq(watch_x86_classify(junk, 1, 0, &len, &x), -1);
}
END_TEST

/* ---- the software backend ----------------------------------------------- */

#define MAX_PCS 64
struct got {
	unsigned n[2];
	uint64_t pc[2][MAX_PCS];
	int order[2 * MAX_PCS];
	unsigned norder;
};

static void record(void *arg, unsigned counter, uint64_t pc, ucontext_t *uc)
{
	struct got *g = arg;
	(void)uc;
	if (g->n[counter] < MAX_PCS)
		g->pc[counter][g->n[counter]] = pc;
	g->n[counter]++;
	if (g->norder < 2 * MAX_PCS)
		g->order[g->norder++] = (int)counter;
}

static struct alpha_sw_run *new_run(struct alpha_cpu *cpu, struct got *g, const char *e0, const char *e1)
{
	struct alpha_sw_run *r = calloc(1, sizeof *r);
	unsigned codes[2], n = 0;
	if (e0)
		codes[n++] = code_of(e0);
	if (e1)
		codes[n++] = code_of(e1);
	ck_assert_int_eq(alpha_select_events(&r->sel, codes, n, 0, NULL), 0);
	r->cpu = cpu;
	r->hz = ALPHA_NOMINAL_HZ;
	r->deliver = record;
	r->deliver_arg = g;
	return r;
}

static void run_start(struct alpha_sw_run *r)
{
	char why[256] = "";
	ck_assert_msg(alpha_sw_start(r, why, sizeof why) == 0, "%s", why);
}

static long data[16] = { 1, 2, 3 };

START_TEST(sw_loads_exact)
{
	/* n = 3 * 4096 + 1024 loads: the few loads of start and stop cannot
	 * make the 1024 left over reach 4096, nor reach an overflow outside. */
	const long n = 3 * 4096 + 1024;
	struct alpha_cpu cpu;
	struct got g;
	memset(&cpu, 0, sizeof cpu);
	memset(&g, 0, sizeof g);
	struct alpha_sw_run *r = new_run(&cpu, &g, "LOAD_INSNS:width=12", NULL);
	run_start(r);
	long sum = alpha_load_loop(data, n);
	ck_assert(alpha_sw_stop(r) == 0);
	ck_assert_int_eq(sum, n);
	ck_assert_uint_eq(g.n[0], 3);
	ck_assert_uint_eq(r->interrupts[0], 3);
	ck_assert_uint_eq(g.n[1], 0);
	for (unsigned i = 0; i < g.n[0]; i++)
		ck_assert_msg(g.pc[0][i] >= (uintptr_t)alpha_load_loop && g.pc[0][i] < (uintptr_t)alpha_load_loop_end,
		              "overflow %u at %#lx, outside the loop", i, (unsigned long)g.pc[0][i]);
	ck_assert_uint_ge(r->steps, 3 * (uint64_t)n);
	/* capstone 4 cannot decode some AVX-512 mask instructions libc's
	 * string functions use (Check calls them): never the loop's. */
	ck_assert_msg(r->undecoded < 64, "%lu undecoded, last at %#lx", (unsigned long)r->undecoded,
	              (unsigned long)r->last_undecoded_pc);
	ck_assert(r->undecoded == 0 || r->last_undecoded_pc < (uintptr_t)alpha_load_loop ||
	          r->last_undecoded_pc >= (uintptr_t)alpha_load_loop_end);
	ck_assert_int_eq(watch_step_active(), 0);
	free(r);
}
END_TEST

START_TEST(sw_two_counters_independent)
{
	/* 2048 loads and 2048 stores: LOAD_INSNS at 2^12 never overflows in the
	 * loop, STORE_INSNS at 2^8 overflows 8 times, all inside it. */
	struct alpha_cpu cpu;
	struct got g;
	long buf[2] = { 5, 0 };
	memset(&cpu, 0, sizeof cpu);
	memset(&g, 0, sizeof g);
	struct alpha_sw_run *r = new_run(&cpu, &g, "LOAD_INSNS:width=12", "STORE_INSNS:width=8");
	run_start(r);
	alpha_mix_loop(buf, 2048);
	ck_assert(alpha_sw_stop(r) == 0);
	ck_assert_int_eq(buf[1], 5);
	ck_assert_uint_eq(g.n[0], 0);
	ck_assert_uint_ge(g.n[1], 8);
	ck_assert_uint_le(g.n[1], 9); /* the stores of start/stop may add one */
	unsigned inside = 0;
	for (unsigned i = 0; i < g.n[1]; i++)
		inside += g.pc[1][i] >= (uintptr_t)alpha_mix_loop && g.pc[1][i] < (uintptr_t)alpha_mix_loop_end;
	ck_assert_uint_ge(inside, 8);
	free(r);
}
END_TEST

START_TEST(sw_both_overflow_together)
{
	/* INTEGER_OPERATE (counter 1) and ISSUES would not coincide; LOAD_INSNS
	 * and STORE_INSNS with one load and one store per instruction do:
	 * add %rax,(%rdi) ... use the mix loop where the load and the store are
	 * separate instructions, and check order instead: deliveries come
	 * counter by counter, each carry its own. */
	struct alpha_cpu cpu;
	struct got g;
	memset(&cpu, 0, sizeof cpu);
	memset(&g, 0, sizeof g);
	/* Preload both hidden counters one event short of a carry; then a
	 * single add %rax,(%rdi) (load + store) carries both at once. */
	cpu.ctr[0] = 4095;
	cpu.ctr[1] = 255;
	struct alpha_sw_run *r = new_run(&cpu, &g, "LOAD_INSNS:width=12", "STORE_INSNS:width=8");
	struct alpha_select sel = r->sel;
	unsigned irq[2];
	alpha_cpu_step(&cpu, &sel, ALPHA_INSN_LOAD | ALPHA_INSN_STORE | ALPHA_INSN_INTOP, 0, irq);
	ck_assert_uint_eq(irq[0], 1);
	ck_assert_uint_eq(irq[1], 1);
	free(r);
}
END_TEST

START_TEST(sw_residue_carries_over)
{
	/* The counters cannot be reset: a second run of 4096 + 2048 loads
	 * starts with the ~2048 left by the first and overflows twice. */
	const long n = 4096 + 2048;
	struct alpha_cpu cpu;
	struct got g;
	memset(&cpu, 0, sizeof cpu);
	memset(&g, 0, sizeof g);
	struct alpha_sw_run *r = new_run(&cpu, &g, "LOAD_INSNS:width=12", NULL);
	run_start(r);
	alpha_load_loop(data, n);
	ck_assert(alpha_sw_stop(r) == 0);
	ck_assert_uint_eq(r->interrupts[0], 1);
	run_start(r);
	alpha_load_loop(data, n);
	ck_assert(alpha_sw_stop(r) == 0);
	ck_assert_uint_eq(r->interrupts[0], 2);
	ck_assert_uint_eq(g.n[0], 3);
	free(r);
}
END_TEST

START_TEST(sw_fp_branches_intops)
{
	struct alpha_cpu cpu;
	struct got g;
	memset(&cpu, 0, sizeof cpu);
	memset(&g, 0, sizeof g);
	struct alpha_sw_run *r = new_run(&cpu, &g, "BRANCH_INSNS:width=12", "FP_INSNS:width=8");
	run_start(r);
	double d = alpha_fp_loop(1.0, 4096 + 512);
	ck_assert(alpha_sw_stop(r) == 0);
	ck_assert(d == 4097.0 + 512);
	ck_assert_uint_eq(g.n[0], 1);
	ck_assert_uint_eq(g.n[1], 18); /* 4608 / 256 */
	ck_assert_uint_ge(g.pc[0][0], (uintptr_t)alpha_fp_loop);
	ck_assert_uint_lt(g.pc[0][0], (uintptr_t)alpha_fp_loop_end);
	free(r);
}
END_TEST

static void *stepped_thread(void *arg)
{
	struct got *g = arg;
	struct alpha_cpu cpu;
	memset(&cpu, 0, sizeof cpu);
	struct alpha_sw_run *r = new_run(&cpu, g, "LOAD_INSNS:width=12", NULL);
	char why[256] = "";
	if (alpha_sw_start(r, why, sizeof why) != 0)
		return (void *)1;
	alpha_load_loop(data, 2 * 4096 + 1024);
	ck_assert(alpha_sw_stop(r) == 0);
	free(r);
	return NULL;
}

START_TEST(sw_two_threads)
{
	struct got g1, g2;
	memset(&g1, 0, sizeof g1);
	memset(&g2, 0, sizeof g2);
	pthread_t t1, t2;
	void *r1, *r2;
	ck_assert_int_eq(pthread_create(&t1, NULL, stepped_thread, &g1), 0);
	ck_assert_int_eq(pthread_create(&t2, NULL, stepped_thread, &g2), 0);
	pthread_join(t1, &r1);
	pthread_join(t2, &r2);
	ck_assert_ptr_null(r1);
	ck_assert_ptr_null(r2);
	ck_assert_uint_eq(g1.n[0], 2);
	ck_assert_uint_eq(g2.n[0], 2);
}
END_TEST

static volatile sig_atomic_t usr1_seen;
static void on_usr1(int sig)
{
	(void)sig;
	usr1_seen++;
}

START_TEST(sw_signals_and_restart)
{
	/* An application signal handler runs while stepping (not stepped), and
	 * stepping goes on after it. */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	struct alpha_cpu cpu;
	struct got g;
	memset(&cpu, 0, sizeof cpu);
	memset(&g, 0, sizeof g);
	struct alpha_sw_run *r = new_run(&cpu, &g, "LOAD_INSNS:width=12", NULL);
	run_start(r);
	raise(SIGUSR1);
	alpha_load_loop(data, 4096 + 1024);
	ck_assert(alpha_sw_stop(r) == 0);
	ck_assert_int_eq(usr1_seen, 1);
	ck_assert_uint_eq(g.n[0], 1);
	/* A second start on the same thread while running is refused. */
	run_start(r);
	struct alpha_sw_run *r2 = new_run(&cpu, &g, "LOAD_INSNS:width=12", NULL);
	char why[256] = "";
	ck_assert_int_eq(alpha_sw_start(r2, why, sizeof why), -EBUSY);
	ck_assert(alpha_sw_stop(r) == 0);
	ck_assert_int_eq(watch_step_active(), 0);
	free(r2);
	free(r);
}
END_TEST

/* ---- an event set (alpha_set.c) ------------------------------------------ */

static struct {
	unsigned calls, pos[8];
	uint64_t pc[8];
	int frame_rc;
	struct papi_heritage_alpha21064_frame frame;
} disp;

static void record_dispatch(void *arg, unsigned pos, uint64_t pc, ucontext_t *uc)
{
	(void)uc;
	ck_assert_ptr_eq(arg, &disp);
	if (disp.calls < 8) {
		disp.pos[disp.calls] = pos;
		disp.pc[disp.calls] = pc;
	}
	disp.calls++;
	disp.frame_rc = alpha_set_frame(&disp.frame);
}

static int single_step_works(void)
{
	const struct heritage_probe_result *r = heritage_probe(HERITAGE_MECH_SINGLE_STEP);
	if (r->state != HERITAGE_PROBE_WORKS)
		fprintf(stderr, "alpha_set tests of the software backend skipped: single_step: %s\n", r->evidence);
	return r->state == HERITAGE_PROBE_WORKS;
}

START_TEST(set_bookkeeping_and_threshold)
{
	struct alpha_set *s = calloc(1, sizeof *s);
	alpha_set_init(s);
	ck_assert_int_eq(s->pos_of[0], -1);
	ck_assert_int_eq(s->pos_of[1], -1);
	ck_assert_str_eq(alpha_set_backend_name(s), "none");
	unsigned three[3] = { code_of("LOAD_INSNS"), code_of("STORE_INSNS"), code_of("CYCLES") };
	ck_assert_int_eq(alpha_set_events(s, three, 3), -EBUSY);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "two counters"));
	env_set("PAPI_HERITAGE_ALPHA21064_BACKEND", "software", 1);
	if (!single_step_works()) {
		free(s);
		return;
	}
	/* Position 0 counts on counter 1 and position 1 on counter 0. */
	unsigned two[2] = { code_of("STORE_INSNS:width=8"), code_of("LOAD_INSNS:width=12") };
	ck_assert_int_eq(alpha_set_events(s, two, 2), 0);
	ck_assert_str_eq(alpha_set_backend_name(s), "software");
	ck_assert_uint_eq(s->ncodes, 2);
	ck_assert_uint_eq(s->counter_of[0], 1);
	ck_assert_uint_eq(s->counter_of[1], 0);
	ck_assert_int_eq(s->pos_of[0], 1);
	ck_assert_int_eq(s->pos_of[1], 0);
	/* Thresholds are whole periods: 3 x 2^8 on STORE_INSNS is 3 interrupts. */
	ck_assert_int_eq(alpha_set_threshold(s, 0, 3 * 256), 0);
	ck_assert_int_eq(s->irq_per_call[1], 3);
	ck_assert_int_eq(alpha_set_threshold(s, 1, 4096), 0);
	ck_assert_int_eq(s->irq_per_call[0], 1);
	ck_assert_int_eq(alpha_set_threshold(s, 0, 100), -EINVAL);
	ck_assert_int_eq(alpha_set_threshold(s, 2, 256), -EINVAL);
	ck_assert_int_eq(alpha_set_threshold(s, 1, 0), 0);
	ck_assert_int_eq(s->irq_per_call[0], 0);
	/* PAPI_read: interrupts x 2^width, in set order. */
	s->run.interrupts[1] = 5;
	s->run.interrupts[0] = 2;
	alpha_set_read(s);
	ck_assert_int_eq(s->values[0], 5 * 256);
	ck_assert_int_eq(s->values[1], 2 * 4096);
	alpha_set_reset(s);
	alpha_set_read(s);
	ck_assert_int_eq(s->values[0], 0);
	ck_assert_int_eq(s->values[1], 0);
	/* New events drop the thresholds (PAPI applies them again). */
	ck_assert_int_eq(alpha_set_events(s, two, 1), 0);
	ck_assert_int_eq(s->irq_per_call[1], 0);
	ck_assert_int_eq(s->pos_of[0], -1);
	ck_assert_int_eq(alpha_set_events(s, two, 0), 0);
	ck_assert_str_eq(alpha_set_backend_name(s), "none");
	alpha_set_cleanup(s);
	env_unset("PAPI_HERITAGE_ALPHA21064_BACKEND");
	free(s);
}
END_TEST

START_TEST(set_delivery_accounting)
{
	struct alpha_set *s = calloc(1, sizeof *s);
	struct papi_heritage_alpha21064_stats before, after;
	alpha_set_init(s);
	env_set("PAPI_HERITAGE_ALPHA21064_BACKEND", "software", 1);
	if (!single_step_works()) {
		free(s);
		return;
	}
	unsigned two[2] = { code_of("STORE_INSNS:width=8"), code_of("LOAD_INSNS:width=12") };
	ck_assert_int_eq(alpha_set_events(s, two, 2), 0);
	ck_assert_int_eq(alpha_set_threshold(s, 0, 3 * 256), 0); /* counter 1: every 3rd interrupt */
	s->dispatch = record_dispatch;
	s->dispatch_arg = &disp;
	memset(&disp, 0, sizeof disp);
	alpha_set_stats(&before);
	/* 7 interrupts on counter 1: handler calls after the 3rd and the 6th,
	 * one pending; counter 0 has no handler: counted by the OS only. */
	for (unsigned i = 1; i <= 7; i++)
		alpha_set_deliver(s, 1, 0x1000 + i, NULL);
	alpha_set_deliver(s, 0, 0x2000, NULL);
	alpha_set_stats(&after);
	ck_assert_uint_eq(disp.calls, 2);
	ck_assert_uint_eq(disp.pos[0], 0);
	ck_assert_uint_eq(disp.pc[0], 0x1003);
	ck_assert_uint_eq(disp.pc[1], 0x1006);
	ck_assert_uint_eq(s->irq_pending[1], 1);
	ck_assert_uint_eq(after.deliveries - before.deliveries, 2);
	ck_assert_uint_ge(after.delivery_ticks, before.delivery_ticks);
	/* The frame inside the handler: DIGITAL UNIX's a0 = 4 (osfint$c_perf),
	 * a1 = 0x650 (scb$v_perfmon), a2 = the counter; none outside. */
	ck_assert_int_eq(disp.frame_rc, 0);
	ck_assert_int_eq(disp.frame.os, PAPI_HERITAGE_ALPHA_OS_UNIX);
	ck_assert_int_eq(disp.frame.counter, 1);
	ck_assert_uint_eq(disp.frame.pc, 0x1006);
	ck_assert_int_eq(disp.frame.a0, 4);
	ck_assert_int_eq(disp.frame.a1, 0x650);
	ck_assert_int_eq(disp.frame.a2, 1);
	struct papi_heritage_alpha21064_frame f;
	ck_assert_int_eq(alpha_set_frame(&f), -EINVAL);
	/* start zeroes what is pending. */
	s->irq_pending[1] = 2;
	struct alpha_cpu cpu;
	memset(&cpu, 0, sizeof cpu);
	ck_assert_int_eq(alpha_set_start(s, &cpu), 0);
	ck_assert_int_eq(alpha_set_stop(s), 0);
	ck_assert_uint_eq(s->irq_pending[1], 0);
	alpha_set_cleanup(s);
	env_unset("PAPI_HERITAGE_ALPHA21064_BACKEND");
	free(s);
}
END_TEST

START_TEST(set_knobs_and_sources)
{
	env_unset("PAPI_HERITAGE_ALPHA21064_CLOCK_MHZ");
	ck_assert_uint_eq(alpha_set_nominal_hz(), 200ull * 1000 * 1000); /* the 21064-AA */
	env_set("PAPI_HERITAGE_ALPHA21064_CLOCK_MHZ", "150", 1);
	ck_assert_uint_eq(alpha_set_nominal_hz(), 150ull * 1000 * 1000);
	env_unset("PAPI_HERITAGE_ALPHA21064_CLOCK_MHZ");

	ck_assert_int_eq(alpha_get_os(), ALPHA_OS_UNIX);
	ck_assert_int_eq(alpha_set_os(2), 0);
	ck_assert_int_eq(alpha_get_os(), ALPHA_OS_VMS);
	ck_assert_int_eq(alpha_set_os(9), -EINVAL);
	ck_assert_int_eq(alpha_get_os(), ALPHA_OS_VMS);
	env_set("PAPI_HERITAGE_ALPHA21064_OS", "nt", 1);
	alpha_set_os_from_env();
	ck_assert_int_eq(alpha_get_os(), ALPHA_OS_NT);
	env_unset("PAPI_HERITAGE_ALPHA21064_OS");
	ck_assert_int_eq(alpha_set_os(1), 0);

	const struct alpha_event *cycles = alpha_event_of(code_of("CYCLES"));
	const struct alpha_event *loads = alpha_event_of(code_of("LOAD_INSNS"));
	const struct alpha_event *pal = alpha_event_of(code_of("PAL_MODE"));
	const struct alpha_event *dcache = alpha_event_of(code_of("DCACHE_MISSES"));
	/* Single-stepping: the seed's sources (CYCLES modelled). */
	env_set("PAPI_HERITAGE_ALPHA21064_BACKEND", "software", 1);
	ck_assert_int_eq(alpha_set_event_source(cycles), HERITAGE_MODELLED);
	ck_assert_int_eq(alpha_set_event_source(loads), HERITAGE_MEASURED);
	ck_assert_int_eq(alpha_set_event_source(dcache), HERITAGE_UNAVAILABLE);
	/* The core PMU: a host event counts it, or nothing does. */
	env_set("PAPI_HERITAGE_ALPHA21064_BACKEND", "pmu", 1);
	ck_assert_int_eq(alpha_set_event_source(cycles), HERITAGE_MEASURED);
	ck_assert_int_eq(alpha_set_event_source(dcache), HERITAGE_MEASURED);
	ck_assert_int_eq(alpha_set_event_source(pal), HERITAGE_UNAVAILABLE);
	/* A value no backend has: software's sources, quietly. */
	heritage_fail(-EPERM, "the test's own last error");
	env_set("PAPI_HERITAGE_ALPHA21064_BACKEND", "gpu", 1);
	ck_assert_int_eq(alpha_set_event_source(cycles), HERITAGE_MODELLED);
	ck_assert_str_eq(heritage_last_error(), "the test's own last error");
	env_unset("PAPI_HERITAGE_ALPHA21064_BACKEND");
}
END_TEST

static Suite *alpha_suite(void)
{
	Suite *s = suite_create("alpha21064");
	TCase *model = tcase_create("model");
	tcase_add_test(model, tables_match_the_seed);
	tcase_add_test(model, names_and_widths);
	tcase_add_test(model, counter_carries_and_residue);
	tcase_add_test(model, select_conflicts_and_unavailable);
	tcase_add_test(model, step_feeds_and_pairs);
	tcase_add_test(model, thresholds_and_estimates);
	tcase_add_test(model, frames_per_os);
	tcase_add_test(model, x86_classes);
	suite_add_tcase(s, model);
	TCase *set = tcase_create("event set");
	tcase_set_timeout(set, 60);
	tcase_add_test(set, set_bookkeeping_and_threshold);
	tcase_add_test_unsanitized(set, set_delivery_accounting,
	                           "the software backend counts the stores of alpha_set_start and _stop too, and "
	                           "ASan's stack poisoning adds enough for 2 interrupts (irq_pending 2, want 0)");
	tcase_add_test(set, set_knobs_and_sources);
	suite_add_tcase(s, set);
	TCase *sw = tcase_create("software backend");
	tcase_set_timeout(sw, 60);
	tcase_add_test(sw, sw_loads_exact);
	tcase_add_test_unsanitized(sw, sw_two_counters_independent,
	                           "ASan's stores in start and stop add an interrupt (10, at most 9 wanted)");
	tcase_add_test(sw, sw_both_overflow_together);
	tcase_add_test(sw, sw_residue_carries_over);
	tcase_add_test(sw, sw_fp_branches_intops);
	tcase_add_test(sw, sw_two_threads);
	tcase_add_test(sw, sw_signals_and_restart);
	suite_add_tcase(s, sw);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(alpha_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
