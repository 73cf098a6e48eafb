/*
 * Unit tests of profileme's AMD IBS op backend (src/profileme/pm_ibs.c).
 *
 * This machine has no IBS (an EPYC guest without the ibs_op PMU), so the
 * decoder is tested on constructed PERF_SAMPLE_RAW payloads: one record per
 * register bit the mapping uses, each expected value written here from the
 * register layout (doc/facilities.md §5(c), the kernel's amd-ibs.h), not from
 * the decoder's tables.  The perf side is tested on a constructed ring
 * (records wrapping the data area's end) and on an ibs_op sysfs directory
 * built in TMPDIR.  Backend choice is tested with the real IBS probe and
 * with a fake one.  Only the live test needs IBS: where the probe says it
 * does not work, the program exits 77 after the others, saying why.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include "sanitize_test.h"
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/heritage_probe.h"
#include "profileme/pm_collect.h"
#include "profileme/pm_ibs.h"
#include "env_test.h"

/* ---- constructing records ---------------------------------------------------------- */

/* IbsOpCtl with IbsOpVal (bit 18), IbsOpCntCtl (19) and MaxCnt 0x1000. */
#define CTL ((1ull << 18) | (1ull << 19) | 0x1000)
#define RIP 0x401234ull

/* IbsOpData bits */
#define D_RETURN (1ull << 34)
#define D_TAKEN (1ull << 35)
#define D_MISP (1ull << 36)
#define D_BRNRET (1ull << 37)
#define D_RIPINV (1ull << 38)
#define D_FUSE (1ull << 39)
#define D_CTRS(tag, comp) (((uint64_t)(tag) << 16) | (uint64_t)(comp))
/* IbsOpData3 bits */
#define D3_LD (1ull << 0)
#define D3_ST (1ull << 1)
#define D3_L1MISS (1ull << 2)
#define D3_L2MISS (1ull << 3)
#define D3_MISACC (1ull << 8)
#define D3_LINV (1ull << 17)
#define D3_PHYV (1ull << 18)
/* caps bits (asm/perf_event.h IBS_CAPS_*) */
#define C_AVAIL (1u << 0)
#define C_BRNTRGT (1u << 5)
#define C_RIPCHK (1u << 7)
#define C_FUSE (1u << 8)
#define C_DATA4 (1u << 10)
#define C_PGSIZE (1u << 19)

struct rec {
	unsigned char b[4 + 8 * 9];
	size_t len;
};

/* caps, then IbsOpCtl, IbsOpRip, IbsOpData, IbsOpData2, IbsOpData3,
 * IbsDcLinAd, IbsDcPhysAd, [IbsBrTarget], [IbsOpData4]. */
static struct rec mk(uint32_t caps, uint64_t ctl, uint64_t rip, uint64_t d, uint64_t d3)
{
	struct rec r;
	memset(&r, 0, sizeof r);
	uint64_t regs[9] = { ctl, rip, d, 0x2222, d3, 0x7ffd0000ull, 0x12340000ull, 0xbbbbbbbbull, 0x4444444444ull };
	unsigned n = 7 + ((caps & C_BRNTRGT) != 0) + ((caps & C_DATA4) != 0);
	if (!(caps & C_BRNTRGT))
		regs[7] = regs[8];
	memcpy(r.b, &caps, 4);
	memcpy(r.b + 4, regs, 8 * (size_t)n);
	r.len = 4 + 8 * (size_t)n;
	return r;
}

static enum pm_ibs_branch cls_cond(void *arg, uint64_t rip)
{
	(void)arg;
	ck_assert_uint_eq(rip, RIP);
	return PM_IBS_BR_COND;
}
static enum pm_ibs_branch cls_other(void *arg, uint64_t rip)
{
	(void)arg;
	(void)rip;
	return PM_IBS_BR_OTHER;
}
static enum pm_ibs_branch cls_unknown(void *arg, uint64_t rip)
{
	(void)arg;
	(void)rip;
	return PM_IBS_BR_UNKNOWN;
}
static enum pm_ibs_branch cls_never(void *arg, uint64_t rip)
{
	(void)arg;
	(void)rip;
	ck_abort_msg("the classifier was asked about a return");
	return PM_IBS_BR_UNKNOWN;
}

static void invariants(const struct pm_sample *s);

static struct pm_sample dec(uint32_t caps, uint64_t d, uint64_t d3, pm_ibs_classify_fn cls)
{
	struct rec r = mk(caps, CTL, RIP, d, d3);
	struct pm_sample s = { .tid = 77 };
	char why[256] = "";
	int err = pm_ibs_decode(r.b, r.len, cls, NULL, &s, why, sizeof why);
	ck_assert_msg(err == 0, "decode: %d %s", err, why);
	ck_assert_uint_eq(s.tid, 77);
	invariants(&s);
	return s;
}

#define B(f) PM_FIELD_BIT(f)
/* Every field this backend observes, written out (not PM_IBS_FIELDS). */
#define OBSERVED                                                                                             \
	(B(PM_RETIRED) | B(PM_TAKEN) | B(PM_CBRMISPREDICT) | B(PM_VALID) | B(PM_NOTRAP) | B(PM_MISPREDICT) |     \
	 B(PM_UNALIGNTRAP) | B(PM_DTBMISS) | B(PM_DTB2MISS4) | B(PM_RETDELAY) | B(PM_INFLIGHT))
/* No honest source on IBS (doc/facilities.md §5(d)): never known. */
#define NEVER                                                                                                \
	(B(PM_NYP) | B(PM_LDSTORDER) | B(PM_MAP_STALL) | B(PM_EARLY_KILL) | B(PM_LATE_KILL) | B(PM_REPLAYS) |    \
	 B(PM_DTB2MISS3) | B(PM_ITBMISS) | B(PM_ARITHTRAP) | B(PM_FPDISABLEDTRAP) | B(PM_MT_FPCRTRAP) |          \
	 B(PM_DFAULTTRAP) | B(PM_IACVTRAP) | B(PM_OPCDECTRAP) | B(PM_INTERRUPT) | B(PM_MCHKTRAP))
#define OBS_TRAPS (B(PM_NOTRAP) | B(PM_MISPREDICT) | B(PM_UNALIGNTRAP) | B(PM_DTBMISS) | B(PM_DTB2MISS4))

static void known_is(const struct pm_sample *s, enum pm_field f, int v)
{
	ck_assert_msg(s->known & B(f), "%s is not known", pm_fields[f].name);
	ck_assert_msg(((s->value & B(f)) != 0) == v, "%s is %d, want %d", pm_fields[f].name, (s->value & B(f)) != 0, v);
}
static void unknown(const struct pm_sample *s, enum pm_field f)
{
	ck_assert_msg(!(s->known & B(f)), "%s is known", pm_fields[f].name);
}

/* The invariants of every sample: one trap bit in value; nothing outside
 * the observed fields known; at most one known trap bit is 1, and a known
 * notrap=1 comes with every observed trap known 0. */
static void invariants(const struct pm_sample *s)
{
	uint32_t traps = s->value & PM_TRAPS_MASK;
	ck_assert_msg(traps && !(traps & (traps - 1)), "value has trap bits 0x%x", traps);
	ck_assert_msg(!(s->known & NEVER), "known 0x%x has a field with no source", s->known & NEVER);
	ck_assert_msg(!(s->known & ~OBSERVED), "known 0x%x outside the observed fields", s->known & ~OBSERVED);
	uint32_t ones = s->value & s->known & PM_TRAPS_MASK;
	ck_assert_msg(!(ones & (ones - 1)), "two known trap bits set: 0x%x", ones);
	if (ones == B(PM_NOTRAP))
		ck_assert_uint_eq(s->known & OBS_TRAPS, OBS_TRAPS);
	if (ones)
		ck_assert_uint_eq(traps, ones);
}

/* The trap t is the sample's, every other observed trap known 0. */
static void trap_is(const struct pm_sample *s, enum pm_field t)
{
	invariants(s);
	static const enum pm_field obs[] = { PM_NOTRAP, PM_MISPREDICT, PM_UNALIGNTRAP, PM_DTBMISS, PM_DTB2MISS4 };
	for (unsigned i = 0; i < 5; i++)
		known_is(s, obs[i], obs[i] == t);
	ck_assert_int_eq(pm_sample_trap(s), t);
	known_is(s, PM_VALID, t == PM_NOTRAP);
}

/* ---- the payload ------------------------------------------------------------------ */

START_TEST(payload_lengths)
{
	char why[256];
	struct pm_ibs_regs r;
	unsigned char z[80];
	memset(z, 0, sizeof z);
	/* Shorter than the caps word. */
	for (size_t n = 0; n < 4; n++) {
		why[0] = '\0';
		ck_assert_int_eq(pm_ibs_parse_raw(z, n, &r, why, sizeof why), -EINVAL);
		ck_assert_ptr_nonnull(strstr(why, "caps word"));
	}
	ck_assert_int_eq(pm_ibs_parse_raw(NULL, 0, &r, why, sizeof why), -EINVAL);
	/* caps 0: 4 + 7*8 = 60 bytes; caps BRNTRGT or OPDATA4: 68; both: 76. */
	static const struct {
		uint32_t caps;
		size_t need;
	} c[] = { { 0, 60 }, { C_AVAIL | C_RIPCHK, 60 }, { C_BRNTRGT, 68 }, { C_DATA4, 68 }, { C_BRNTRGT | C_DATA4, 76 } };
	for (unsigned i = 0; i < sizeof c / sizeof c[0]; i++) {
		struct rec x = mk(c[i].caps, CTL, RIP, 0, 0);
		ck_assert_uint_eq(x.len, c[i].need);
		for (size_t n = 4; n < c[i].need; n += 4) {
			why[0] = '\0';
			ck_assert_msg(pm_ibs_parse_raw(x.b, n, &r, why, sizeof why) == -EINVAL, "caps 0x%x len %zu accepted",
			              c[i].caps, n);
			ck_assert_ptr_nonnull(strstr(why, "promise"));
		}
		ck_assert_int_eq(pm_ibs_parse_raw(x.b, c[i].need, &r, why, sizeof why), 0);
		ck_assert_uint_eq(r.caps, c[i].caps);
		/* Padding or a register a newer kernel appends: ignored. */
		ck_assert_int_eq(pm_ibs_parse_raw(x.b, c[i].need + 4, &r, why, sizeof why), 0);
	}
}
END_TEST

START_TEST(payload_registers_in_order)
{
	char why[256];
	struct pm_ibs_regs r;
	/* Every register distinct: each lands in its own field. */
	uint32_t caps = C_BRNTRGT | C_DATA4;
	uint64_t regs[9] = { CTL, 0x1111, 0x2222, 0x3333, 0x4444, 0x5555, 0x6666, 0x7777, 0x8888 };
	unsigned char b[76];
	memcpy(b, &caps, 4);
	memcpy(b + 4, regs, sizeof regs);
	ck_assert_int_eq(pm_ibs_parse_raw(b, sizeof b, &r, why, sizeof why), 0);
	ck_assert_uint_eq(r.op_ctl, CTL);
	ck_assert_uint_eq(r.rip, 0x1111);
	ck_assert_uint_eq(r.data, 0x2222);
	ck_assert_uint_eq(r.data2, 0x3333);
	ck_assert_uint_eq(r.data3, 0x4444);
	ck_assert_uint_eq(r.dc_lin, 0x5555);
	ck_assert_uint_eq(r.dc_phys, 0x6666);
	ck_assert_int_eq(r.has_br_target, 1);
	ck_assert_uint_eq(r.br_target, 0x7777);
	ck_assert_int_eq(r.has_data4, 1);
	ck_assert_uint_eq(r.data4, 0x8888);
	/* OPDATA4 without BRNTRGT: IbsOpData4 right after IbsDcPhysAd. */
	caps = C_DATA4;
	memcpy(b, &caps, 4);
	ck_assert_int_eq(pm_ibs_parse_raw(b, 68, &r, why, sizeof why), 0);
	ck_assert_int_eq(r.has_br_target, 0);
	ck_assert_int_eq(r.has_data4, 1);
	ck_assert_uint_eq(r.data4, 0x7777);
	/* BRNTRGT alone. */
	caps = C_BRNTRGT;
	memcpy(b, &caps, 4);
	ck_assert_int_eq(pm_ibs_parse_raw(b, 68, &r, why, sizeof why), 0);
	ck_assert_int_eq(r.has_data4, 0);
	ck_assert_uint_eq(r.br_target, 0x7777);
}
END_TEST

START_TEST(payload_not_an_op_sample)
{
	char why[256] = "";
	struct pm_sample s;
	struct rec r = mk(0, CTL & ~(1ull << 18), RIP, 0, 0);
	ck_assert_int_eq(pm_ibs_decode(r.b, r.len, NULL, NULL, &s, why, sizeof why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "IbsOpVal"));
}
END_TEST

START_TEST(rip_invalid_dropped)
{
	char why[256] = "";
	struct pm_sample s;
	/* With and without the caps bit that makes the kernel check it. */
	uint32_t caps[] = { C_RIPCHK, 0 };
	for (unsigned i = 0; i < 2; i++) {
		struct rec r = mk(caps[i], CTL, RIP, D_RIPINV, 0);
		ck_assert_int_eq(pm_ibs_decode(r.b, r.len, NULL, NULL, &s, why, sizeof why), -EADDRNOTAVAIL);
		ck_assert_ptr_nonnull(strstr(why, "RipInvalid"));
	}
}
END_TEST

/* ---- one bit at a time --------------------------------------------------------------- */

START_TEST(plain_op)
{
	/* A retired ALU op: TagToRet 40, CompToRet 15. */
	struct pm_sample s = dec(C_RIPCHK, D_CTRS(40, 15), 0, cls_never);
	ck_assert_uint_eq(s.pc, RIP);
	known_is(&s, PM_RETIRED, 1);
	known_is(&s, PM_CBRMISPREDICT, 0);
	unknown(&s, PM_TAKEN);
	trap_is(&s, PM_NOTRAP);
	ck_assert_uint_eq(s.counter[PM_RETDELAY - PM_COUNTER_FIRST], 40 - 15);
	ck_assert_uint_eq(s.counter[PM_INFLIGHT - PM_COUNTER_FIRST], 40);
	ck_assert(s.known & B(PM_RETDELAY));
	ck_assert(s.known & B(PM_INFLIGHT));
}
END_TEST

START_TEST(cond_taken_and_not)
{
	struct pm_sample s = dec(0, D_BRNRET | D_TAKEN | D_CTRS(9, 2), 0, cls_cond);
	known_is(&s, PM_TAKEN, 1);
	known_is(&s, PM_CBRMISPREDICT, 0);
	trap_is(&s, PM_NOTRAP);
	s = dec(0, D_BRNRET | D_CTRS(9, 2), 0, cls_cond);
	known_is(&s, PM_TAKEN, 0);
	known_is(&s, PM_CBRMISPREDICT, 0);
	trap_is(&s, PM_NOTRAP);
	/* OpBrnTaken without OpBrnRet: no branch, taken stays unknown. */
	s = dec(0, D_TAKEN, 0, cls_never);
	unknown(&s, PM_TAKEN);
	known_is(&s, PM_CBRMISPREDICT, 0);
}
END_TEST

START_TEST(cond_mispredicted)
{
	struct pm_sample s = dec(0, D_BRNRET | D_MISP | D_TAKEN | D_CTRS(30, 3), 0, cls_cond);
	known_is(&s, PM_CBRMISPREDICT, 1);
	unknown(&s, PM_TAKEN); /* undefined for a mispredicted conditional branch */
	trap_is(&s, PM_MISPREDICT);
	/* inflight only for retired^notrap; retdelay for every sample. */
	unknown(&s, PM_INFLIGHT);
	ck_assert_uint_eq(s.counter[PM_RETDELAY - PM_COUNTER_FIRST], 27);
	/* OpBrnMisp without OpBrnRet is no branch's. */
	s = dec(0, D_MISP, 0, cls_never);
	trap_is(&s, PM_NOTRAP);
	known_is(&s, PM_CBRMISPREDICT, 0);
}
END_TEST

START_TEST(other_branches)
{
	/* An indirect jump that mispredicted: a mispredict trap, no cbrmispredict. */
	struct pm_sample s = dec(0, D_BRNRET | D_MISP | D_TAKEN, 0, cls_other);
	known_is(&s, PM_CBRMISPREDICT, 0);
	unknown(&s, PM_TAKEN);
	trap_is(&s, PM_MISPREDICT);
	/* A return (OpReturn): not conditional without asking the classifier. */
	s = dec(0, D_BRNRET | D_RETURN | D_MISP | D_TAKEN, 0, cls_never);
	known_is(&s, PM_CBRMISPREDICT, 0);
	unknown(&s, PM_TAKEN);
	trap_is(&s, PM_MISPREDICT);
	s = dec(0, D_BRNRET | D_RETURN | D_TAKEN, 0, cls_never);
	trap_is(&s, PM_NOTRAP);
}
END_TEST

START_TEST(branch_kind_unknown)
{
	/* No classifier, or one that cannot read the bytes: taken and
	 * cbrmispredict unknown; the trap bit still known. */
	pm_ibs_classify_fn cls[] = { NULL, cls_unknown };
	for (unsigned i = 0; i < 2; i++) {
		struct pm_sample s = dec(0, D_BRNRET | D_MISP, 0, cls[i]);
		unknown(&s, PM_TAKEN);
		unknown(&s, PM_CBRMISPREDICT);
		trap_is(&s, PM_MISPREDICT);
		s = dec(0, D_BRNRET | D_TAKEN, 0, cls[i]);
		unknown(&s, PM_TAKEN);
		unknown(&s, PM_CBRMISPREDICT);
		trap_is(&s, PM_NOTRAP);
	}
}
END_TEST

START_TEST(fused_branch)
{
	/* OpBrnFuse with IBS_CAPS_OPBRNFUSE: conditional, whatever is at RIP. */
	struct pm_sample s = dec(C_FUSE, D_BRNRET | D_FUSE | D_TAKEN, 0, cls_other);
	known_is(&s, PM_TAKEN, 1);
	known_is(&s, PM_CBRMISPREDICT, 0);
	s = dec(C_FUSE, D_BRNRET | D_FUSE | D_MISP, 0, NULL);
	known_is(&s, PM_CBRMISPREDICT, 1);
	trap_is(&s, PM_MISPREDICT);
	/* Without the caps bit, bit 39 is reserved: the classifier decides. */
	s = dec(0, D_BRNRET | D_FUSE | D_TAKEN, 0, cls_other);
	unknown(&s, PM_TAKEN);
	known_is(&s, PM_CBRMISPREDICT, 0);
}
END_TEST

START_TEST(dtlb_single_miss)
{
	struct pm_sample s = dec(0, 0, D3_LD | D3_LINV | D3_L1MISS, NULL);
	trap_is(&s, PM_DTBMISS);
	unknown(&s, PM_INFLIGHT);
	s = dec(0, 0, D3_ST | D3_LINV | D3_L1MISS, NULL);
	trap_is(&s, PM_DTBMISS);
	/* A hit in the L1 TLB. */
	s = dec(0, 0, D3_LD | D3_LINV, NULL);
	trap_is(&s, PM_NOTRAP);
	unknown(&s, PM_DTB2MISS3);
}
END_TEST

START_TEST(dtlb_double_miss)
{
	/* A page walk: dtb2miss4; dtb2miss3 never known (3 vs 4 levels cannot
	 * be told apart). */
	struct pm_sample s = dec(0, 0, D3_LD | D3_LINV | D3_L1MISS | D3_L2MISS, NULL);
	trap_is(&s, PM_DTB2MISS4);
	unknown(&s, PM_DTB2MISS3);
	/* DcL2TlbMiss alone (L1 miss implied). */
	s = dec(0, 0, D3_ST | D3_LINV | D3_L2MISS, NULL);
	trap_is(&s, PM_DTB2MISS4);
}
END_TEST

START_TEST(dtlb_without_linear_address)
{
	/* A load without DcLinAddrValid: the TLB bits mean nothing, so neither
	 * TLB trap nor notrap is known; the others are. */
	struct pm_sample s = dec(0, 0, D3_LD | D3_L1MISS | D3_L2MISS, NULL);
	invariants(&s);
	unknown(&s, PM_DTBMISS);
	unknown(&s, PM_DTB2MISS4);
	unknown(&s, PM_NOTRAP);
	unknown(&s, PM_VALID);
	unknown(&s, PM_INFLIGHT);
	known_is(&s, PM_UNALIGNTRAP, 0);
	known_is(&s, PM_MISPREDICT, 0);
	known_is(&s, PM_RETIRED, 1);
	/* Nor with nothing set: a TLB hit cannot be told either. */
	s = dec(0, 0, D3_LD, NULL);
	unknown(&s, PM_NOTRAP);
	/* A misaligned one: unaligntrap yields to the unknown TLB traps, but
	 * one of them trapped: notrap and valid are known 0. */
	s = dec(0, 0, D3_LD | D3_MISACC, NULL);
	invariants(&s);
	unknown(&s, PM_UNALIGNTRAP);
	unknown(&s, PM_DTBMISS);
	known_is(&s, PM_NOTRAP, 0);
	known_is(&s, PM_VALID, 0);
	known_is(&s, PM_MISPREDICT, 0);
	/* With IBS_CAPS_OPDTLBPGSIZE the kernel wants DcPhyAddrValid too. */
	s = dec(C_PGSIZE, 0, D3_LD | D3_LINV | D3_L1MISS, NULL);
	unknown(&s, PM_DTBMISS);
	s = dec(C_PGSIZE, 0, D3_LD | D3_LINV | D3_PHYV | D3_L1MISS, NULL);
	trap_is(&s, PM_DTBMISS);
}
END_TEST

START_TEST(misaligned)
{
	struct pm_sample s = dec(0, 0, D3_ST | D3_LINV | D3_MISACC, NULL);
	trap_is(&s, PM_UNALIGNTRAP);
	s = dec(0, 0, D3_LD | D3_LINV | D3_MISACC, NULL);
	trap_is(&s, PM_UNALIGNTRAP);
	/* DcMisAcc on an op that is no load or store: ignored. */
	s = dec(0, 0, D3_MISACC, NULL);
	trap_is(&s, PM_NOTRAP);
}
END_TEST

START_TEST(precedence)
{
	/* Page walk over single miss over misaligned over mispredict. */
	struct pm_sample s = dec(0, D_BRNRET | D_RETURN | D_MISP, D3_LD | D3_LINV | D3_L2MISS | D3_MISACC, NULL);
	trap_is(&s, PM_DTB2MISS4);
	s = dec(0, D_BRNRET | D_RETURN | D_MISP, D3_LD | D3_LINV | D3_L1MISS | D3_MISACC, NULL);
	trap_is(&s, PM_DTBMISS);
	s = dec(0, D_BRNRET | D_RETURN | D_MISP, D3_LD | D3_LINV | D3_MISACC, NULL);
	trap_is(&s, PM_UNALIGNTRAP);
	s = dec(0, D_BRNRET | D_RETURN | D_MISP, D3_LD | D3_LINV, NULL);
	trap_is(&s, PM_MISPREDICT);
	/* A mispredicted ret whose load's TLB state is unknown: the trap is
	 * unknown, but a TLB trap or mispredict it is: notrap known 0. */
	s = dec(0, D_BRNRET | D_RETURN | D_MISP, D3_LD, NULL);
	invariants(&s);
	known_is(&s, PM_NOTRAP, 0);
	known_is(&s, PM_VALID, 0);
	known_is(&s, PM_UNALIGNTRAP, 0);
	unknown(&s, PM_MISPREDICT);
	unknown(&s, PM_DTBMISS);
}
END_TEST

START_TEST(counters)
{
	/* CompToRet > TagToRet cannot be: retdelay unknown. */
	struct pm_sample s = dec(0, D_CTRS(5, 9), 0, NULL);
	unknown(&s, PM_RETDELAY);
	ck_assert_uint_eq(s.counter[PM_INFLIGHT - PM_COUNTER_FIRST], 5);
	/* Both 16-bit counters at their maximum. */
	s = dec(0, D_CTRS(0xffff, 0), 0, NULL);
	ck_assert_uint_eq(s.counter[PM_RETDELAY - PM_COUNTER_FIRST], 65535);
	ck_assert_uint_eq(s.counter[PM_INFLIGHT - PM_COUNTER_FIRST], 65535);
	/* Bits above 31 do not leak into the counters. */
	s = dec(0, D_CTRS(100, 1) | D_TAKEN | (1ull << 40), 0, NULL);
	ck_assert_uint_eq(s.counter[PM_RETDELAY - PM_COUNTER_FIRST], 99);
	ck_assert_uint_eq(s.counter[PM_INFLIGHT - PM_COUNTER_FIRST], 100);
}
END_TEST

/* Every combination of the bits the mapping reads keeps the invariants. */
START_TEST(all_combinations)
{
	static const uint64_t dbits[] = { D_RETURN, D_TAKEN, D_MISP, D_BRNRET, D_FUSE };
	static const uint64_t d3bits[] = { D3_LD, D3_ST, D3_L1MISS, D3_L2MISS, D3_MISACC, D3_LINV, D3_PHYV };
	static const uint32_t caps[] = { 0, C_FUSE | C_PGSIZE | C_BRNTRGT, C_DATA4 };
	pm_ibs_classify_fn cls[] = { NULL, cls_cond, cls_other };
	unsigned n = 0;
	for (unsigned c = 0; c < 3; c++)
		for (unsigned k = 0; k < 3; k++)
			for (unsigned m = 0; m < (1u << 12); m++) {
				uint64_t d = D_CTRS(20, 4), d3 = 0;
				for (unsigned i = 0; i < 5; i++)
					if (m & (1u << i))
						d |= dbits[i];
				for (unsigned i = 0; i < 7; i++)
					if (m & (1u << (5 + i)))
						d3 |= d3bits[i];
				struct pm_sample s = dec(caps[c], d, d3, cls[k]);
				invariants(&s);
				known_is(&s, PM_RETIRED, 1);
				n++;
			}
	ck_assert_uint_eq(n, 3 * 3 * 4096);
}
END_TEST

/* ---- the conditional-branch classifier ------------------------------------------------- */

START_TEST(x86_branches)
{
	static const struct {
		uint8_t b[6];
		size_t n;
		enum pm_ibs_branch want;
	} c[] = {
		{ { 0x74, 0x05 }, 2, PM_IBS_BR_COND },                   /* je rel8 */
		{ { 0x7f, 0xfe }, 2, PM_IBS_BR_COND },                   /* jg rel8 */
		{ { 0x0f, 0x84, 0, 0, 0, 0 }, 6, PM_IBS_BR_COND },       /* je rel32 */
		{ { 0x0f, 0x8f, 0, 0, 0, 0 }, 6, PM_IBS_BR_COND },       /* jg rel32 */
		{ { 0x3e, 0x75, 0x02 }, 3, PM_IBS_BR_COND },             /* jne with a taken hint */
		{ { 0x2e, 0x0f, 0x85, 0, 0, 0 }, 6, PM_IBS_BR_COND },    /* jne rel32, not-taken hint */
		{ { 0xe3, 0x10 }, 2, PM_IBS_BR_COND },                   /* jrcxz */
		{ { 0x67, 0xe3, 0x10 }, 3, PM_IBS_BR_COND },             /* jecxz */
		{ { 0xe2, 0xfe }, 2, PM_IBS_BR_COND },                   /* loop */
		{ { 0xe0, 0xfe }, 2, PM_IBS_BR_COND },                   /* loopne */
		{ { 0xeb, 0x05 }, 2, PM_IBS_BR_OTHER },                  /* jmp rel8 */
		{ { 0xe9, 0, 0, 0, 0 }, 5, PM_IBS_BR_OTHER },            /* jmp rel32 */
		{ { 0xe8, 0, 0, 0, 0 }, 5, PM_IBS_BR_OTHER },            /* call */
		{ { 0xff, 0xe0 }, 2, PM_IBS_BR_OTHER },                  /* jmp *%rax */
		{ { 0x41, 0xff, 0xd3 }, 3, PM_IBS_BR_OTHER },            /* call *%r11 */
		{ { 0xc3 }, 1, PM_IBS_BR_OTHER },                        /* ret */
		{ { 0xf3, 0xc3 }, 2, PM_IBS_BR_OTHER },                  /* rep ret */
		{ { 0x0f, 0x05 }, 2, PM_IBS_BR_OTHER },                  /* syscall */
		{ { 0x0f, 0x44, 0xc1 }, 3, PM_IBS_BR_OTHER },            /* cmove: conditional, no branch */
		{ { 0x0f }, 1, PM_IBS_BR_UNKNOWN },                      /* cut after 0F */
		{ { 0x66, 0x3e }, 2, PM_IBS_BR_UNKNOWN },                /* prefixes only */
		{ { 0 }, 0, PM_IBS_BR_UNKNOWN },
	};
	for (unsigned i = 0; i < sizeof c / sizeof c[0]; i++)
		ck_assert_msg(pm_ibs_x86_branch(c[i].b, c[i].n) == c[i].want, "case %u: %d, want %d", i,
		              pm_ibs_x86_branch(c[i].b, c[i].n), c[i].want);
}
END_TEST

START_TEST(classify_own_memory)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *p = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	memcpy(p, "\x75\x02", 2);
	memcpy(p + 16, "\xc3", 1);
	ck_assert_int_eq(pm_ibs_classify_self(NULL, (uintptr_t)p), PM_IBS_BR_COND);
	ck_assert_int_eq(pm_ibs_classify_self(NULL, (uintptr_t)(p + 16)), PM_IBS_BR_OTHER);
	/* A jcc in the last bytes of a page before an unmapped one. */
	ck_assert_int_eq(munmap(p + page, (size_t)page), 0);
	memcpy(p + page - 6, "\x0f\x84\x00\x00\x00\x00", 6);
	ck_assert_int_eq(pm_ibs_classify_self(NULL, (uintptr_t)(p + page - 6)), PM_IBS_BR_COND);
	memcpy(p + page - 1, "\x0f", 1);
	ck_assert_int_eq(pm_ibs_classify_self(NULL, (uintptr_t)(p + page - 1)), PM_IBS_BR_UNKNOWN);
	/* Nothing mapped: unknown, no fault. */
	ck_assert_int_eq(pm_ibs_classify_self(NULL, (uintptr_t)(p + page)), PM_IBS_BR_UNKNOWN);
	ck_assert_int_eq(pm_ibs_classify_self(NULL, 0), PM_IBS_BR_UNKNOWN);
	munmap(p, (size_t)page);
}
END_TEST

/* ---- the perf ring ------------------------------------------------------------------ */

#define DATA 1024 /* a small data area, so records wrap */

struct ring {
	unsigned char *base; /* the metadata page, then DATA bytes */
	uint64_t head;
};

static void ring_init(struct ring *r, uint64_t start)
{
	long page = sysconf(_SC_PAGESIZE);
	/* C11's aligned_alloc wants a size that is a multiple of the
	 * alignment: two pages for one and DATA bytes (ASan refuses
	 * page + DATA, invalid-aligned-alloc-alignment; glibc lets it by). */
	r->base = aligned_alloc((size_t)page, 2 * (size_t)page);
	ck_assert((size_t)page >= DATA);
	ck_assert_ptr_nonnull(r->base);
	memset(r->base, 0xa5, (size_t)page + DATA);
	struct perf_event_mmap_page *m = (void *)r->base;
	memset(m, 0, sizeof *m);
	m->data_offset = (uint64_t)page;
	m->data_size = DATA;
	m->data_tail = start;
	r->head = start;
}

static void ring_put(struct ring *r, const void *rec, size_t n)
{
	struct perf_event_mmap_page *m = (void *)r->base;
	unsigned char *data = r->base + m->data_offset;
	for (size_t i = 0; i < n; i++)
		data[(r->head + i) % DATA] = ((const unsigned char *)rec)[i];
	r->head += n;
	m->data_head = r->head;
}

/* A PERF_RECORD_SAMPLE of IP|TID|RAW around a payload. */
static void put_sample(struct ring *r, uint16_t misc, uint64_t ip, uint32_t tid, const void *raw, uint32_t rawlen)
{
	unsigned char b[256];
	size_t n = 8 + 8 + 8 + 4 + rawlen;
	size_t padded = (n + 7) & ~(size_t)7;
	memset(b, 0, sizeof b);
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .misc = misc, .size = (uint16_t)padded };
	uint32_t pid = 1000;
	memcpy(b, &h, 8);
	memcpy(b + 8, &ip, 8);
	memcpy(b + 16, &pid, 4);
	memcpy(b + 20, &tid, 4);
	memcpy(b + 24, &rawlen, 4);
	memcpy(b + 28, raw, rawlen);
	ring_put(r, b, padded);
}

static void put_lost(struct ring *r, uint64_t lost)
{
	unsigned char b[24];
	struct perf_event_header h = { .type = PERF_RECORD_LOST, .size = 24 };
	uint64_t id = 5;
	memcpy(b, &h, 8);
	memcpy(b + 8, &id, 8);
	memcpy(b + 16, &lost, 8);
	ring_put(r, b, sizeof b);
}

struct got {
	struct pm_sample s[16];
	unsigned n;
};
static void collect(void *arg, const struct pm_sample *s)
{
	struct got *g = arg;
	ck_assert_uint_lt(g->n, 16);
	g->s[g->n++] = *s;
}

START_TEST(ring_decode)
{
	struct ring r;
	/* Start 40 bytes before the end: the first record wraps. */
	ring_init(&r, DATA - 40);
	struct rec a = mk(C_RIPCHK, CTL, 0x401000, D_CTRS(12, 2), 0);
	struct rec b = mk(C_RIPCHK | C_BRNTRGT | C_DATA4, CTL, 0x402000, D_BRNRET | D_MISP, 0);
	struct rec inv = mk(C_RIPCHK, CTL, 0x403000, D_RIPINV, 0);
	struct rec kern = mk(C_RIPCHK, CTL, 0xffffffff81000000ull, 0, 0);
	put_sample(&r, PERF_RECORD_MISC_USER, 0x401000, 101, a.b, (uint32_t)a.len);
	put_lost(&r, 7);
	put_sample(&r, PERF_RECORD_MISC_USER, 0x403000, 101, inv.b, (uint32_t)inv.len);
	put_sample(&r, PERF_RECORD_MISC_KERNEL, 0xffffffff81000000ull, 101, kern.b, (uint32_t)kern.len);
	put_sample(&r, PERF_RECORD_MISC_USER, 0x404000, 101, a.b, 20); /* payload cut short */
	put_lost(&r, 3);
	put_sample(&r, PERF_RECORD_MISC_USER, 0x402000, 102, b.b, (uint32_t)b.len);
	/* A throttle is counted, and passed over. */
	struct perf_event_header other = { .type = PERF_RECORD_THROTTLE, .size = 24 };
	unsigned char ob[24] = { 0 };
	memcpy(ob, &other, 8);
	ring_put(&r, ob, sizeof ob);

	struct got g = { .n = 0 };
	struct pm_ibs_walk_stats st = { 0 };
	long n = pm_ibs_ring_decode(r.base, 0, cls_other, NULL, collect, &g, &st);
	ck_assert_int_eq(n, 2);
	ck_assert_uint_eq(g.n, 2);
	ck_assert_uint_eq(g.s[0].pc, 0x401000);
	ck_assert_uint_eq(g.s[0].tid, 101);
	ck_assert_uint_eq(g.s[0].counter[PM_RETDELAY - PM_COUNTER_FIRST], 10);
	trap_is(&g.s[0], PM_NOTRAP);
	ck_assert_uint_eq(g.s[1].pc, 0x402000);
	ck_assert_uint_eq(g.s[1].tid, 102);
	trap_is(&g.s[1], PM_MISPREDICT);
	ck_assert_uint_eq(st.samples, 2);
	ck_assert_uint_eq(st.lost, 10);
	ck_assert_uint_eq(st.rip_invalid, 1);
	ck_assert_uint_eq(st.kernel, 1);
	ck_assert_uint_eq(st.malformed, 1);
	ck_assert_uint_eq(st.throttles, 1);
	struct perf_event_mmap_page *m = (void *)r.base;
	ck_assert_uint_eq(m->data_tail, r.head);
	/* Nothing new: nothing handed over, tail unmoved. */
	ck_assert_int_eq(pm_ibs_ring_decode(r.base, 0, NULL, NULL, collect, &g, &st), 0);
	ck_assert_uint_eq(m->data_tail, r.head);
	/* A record still being written (head inside it) waits for the next walk. */
	uint64_t before = r.head;
	put_sample(&r, PERF_RECORD_MISC_USER, 0x401000, 103, a.b, (uint32_t)a.len);
	m->data_head = before + 16;
	ck_assert_int_eq(pm_ibs_ring_decode(r.base, 0, NULL, NULL, collect, &g, &st), 0);
	ck_assert_uint_eq(m->data_tail, before);
	m->data_head = r.head;
	ck_assert_int_eq(pm_ibs_ring_decode(r.base, 0, NULL, NULL, collect, &g, &st), 1);
	ck_assert_uint_eq(g.s[2].tid, 103);
	free(r.base);
}
END_TEST

START_TEST(ring_old_kernel_layout)
{
	/* A kernel before 4.1 leaves data_offset/data_size 0: the data area is
	 * the pages after the first, of the size the caller mapped. */
	struct ring r;
	ring_init(&r, 0);
	struct rec a = mk(0, CTL, 0x401000, 0, 0);
	put_sample(&r, PERF_RECORD_MISC_USER, 0x401000, 9, a.b, (uint32_t)a.len);
	struct perf_event_mmap_page *m = (void *)r.base;
	m->data_offset = 0;
	m->data_size = 0;
	struct got g = { .n = 0 };
	ck_assert_int_eq(pm_ibs_ring_decode(r.base, DATA, NULL, NULL, collect, &g, NULL), 1);
	ck_assert_uint_eq(g.s[0].pc, 0x401000);
	free(r.base);
}
END_TEST

/* ---- the attribute ------------------------------------------------------------------- */

static char fixture[256];

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void make_fixture(const char *cnt_ctl, const char *swfilt)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(fixture, sizeof fixture, "%s/pm_ibs.XXXXXX", tmp && *tmp ? tmp : P_tmpdir);
	ck_assert_ptr_nonnull(mkdtemp(fixture));
	char fmt[300];
	snprintf(fmt, sizeof fmt, "%s/format", fixture);
	ck_assert_int_eq(mkdir(fmt, 0700), 0);
	write_file(fixture, "type", "11\n");
	if (cnt_ctl)
		write_file(fixture, "format/cnt_ctl", cnt_ctl);
	if (swfilt)
		write_file(fixture, "format/swfilt", swfilt);
}

static void remove_fixture(void)
{
	char path[512];
	static const char *const files[] = { "format/cnt_ctl", "format/swfilt", "format", "type", "" };
	for (unsigned i = 0; i < 5; i++) {
		snprintf(path, sizeof path, "%s/%s", fixture, files[i]);
		remove(path);
	}
}

START_TEST(attr_with_swfilt)
{
	make_fixture("config:19\n", "config2:0\n");
	struct perf_event_attr a;
	int filtered = -1;
	char why[256] = "";
	ck_assert_msg(pm_ibs_attr(fixture, 65536, &a, &filtered, why, sizeof why) == 0, "%s", why);
	ck_assert_uint_eq(a.type, 11);
	ck_assert_uint_eq(a.config, 1ull << 19);
	ck_assert_uint_eq(a.config2, 1);
	ck_assert_uint_eq(a.sample_period, 65536);
	ck_assert_uint_eq(a.sample_type, PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_RAW);
	ck_assert_uint_eq(a.exclude_kernel, 1);
	ck_assert_uint_eq(a.exclude_hv, 0);
	ck_assert_uint_eq(a.disabled, 1);
	ck_assert_int_eq(filtered, 1);
	remove_fixture();
}
END_TEST

START_TEST(attr_without_swfilt)
{
	/* An older kernel: exclude_kernel would be refused (EINVAL). */
	make_fixture("config:19\n", NULL);
	struct perf_event_attr a;
	int filtered = -1;
	char why[256] = "";
	ck_assert_msg(pm_ibs_attr(fixture, 4096, &a, &filtered, why, sizeof why) == 0, "%s", why);
	ck_assert_uint_eq(a.config, 1ull << 19);
	ck_assert_uint_eq(a.config2, 0);
	ck_assert_uint_eq(a.exclude_kernel, 0);
	ck_assert_int_eq(filtered, 0);
	remove_fixture();
}
END_TEST

START_TEST(attr_refusals)
{
	struct perf_event_attr a;
	int filtered;
	char why[512] = "";
	/* No cnt_ctl: IBS counts only cycles here. */
	make_fixture(NULL, NULL);
	ck_assert_int_eq(pm_ibs_attr(fixture, 4096, &a, &filtered, why, sizeof why), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(why, "cnt_ctl"));
	remove_fixture();
	/* A malformed one. */
	make_fixture("config:19-20\n", NULL);
	ck_assert_int_eq(pm_ibs_attr(fixture, 4096, &a, &filtered, why, sizeof why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "cnt_ctl"));
	remove_fixture();
	make_fixture("config1:19\n", NULL);
	ck_assert_int_eq(pm_ibs_attr(fixture, 4096, &a, &filtered, why, sizeof why), -EINVAL);
	remove_fixture();
	/* No PMU at all. */
	ck_assert_int_eq(pm_ibs_attr("/nonexistent/ibs_op", 4096, &a, &filtered, why, sizeof why), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(why, "type"));
}
END_TEST

START_TEST(period_rounding)
{
	/* round(N/16)*16, at least 16. */
	ck_assert_uint_eq(pm_ibs_round_period(0), 16);
	ck_assert_uint_eq(pm_ibs_round_period(1), 16);
	ck_assert_uint_eq(pm_ibs_round_period(23), 16);
	ck_assert_uint_eq(pm_ibs_round_period(24), 32);
	ck_assert_uint_eq(pm_ibs_round_period(100), 96);
	ck_assert_uint_eq(pm_ibs_round_period(65536), 65536);
	ck_assert_uint_eq(pm_ibs_round_period(65543), 65536);
	ck_assert_uint_eq(pm_ibs_round_period(1000000), 1000000);
	ck_assert_uint_eq(pm_ibs_round_period(1000001), 1000000);
	ck_assert_uint_eq(pm_ibs_ops.round_period(40), 48);
}
END_TEST

START_TEST(ops_table)
{
	ck_assert_uint_eq(pm_ibs_ops.fields, OBSERVED);
	ck_assert_uint_eq(pm_ibs_ops.fields & NEVER, 0);
	/* Seen: what IBS reports of the op; modelled: x86's non-traps and
	 * the approximate counters. */
	ck_assert_uint_eq(pm_ibs_ops.modelled, B(PM_VALID) | B(PM_NOTRAP) | B(PM_UNALIGNTRAP) | B(PM_DTBMISS) |
	                                           B(PM_DTB2MISS4) | B(PM_RETDELAY) | B(PM_INFLIGHT));
	ck_assert_uint_eq(pm_ibs_ops.modelled & ~pm_ibs_ops.fields, 0);
	ck_assert_str_eq(pm_ibs_ops.unit, "ops");
	ck_assert_uint_eq(pm_ibs_ops.default_period, 65536);
	ck_assert_uint_eq(pm_ibs_ops.default_period % 16, 0);
	ck_assert_uint_eq(pm_ibs_ops.min_period, 16);
	ck_assert_ptr_nonnull(pm_ibs_ops.start);
	ck_assert_ptr_nonnull(pm_ibs_ops.drain);
	ck_assert_ptr_nonnull(pm_ibs_ops.stop);
	ck_assert_ptr_nonnull(pm_ibs_ops.release);
	unsigned n;
	const struct heritage_backend *t = pm_backends(&n);
	ck_assert_str_eq(t[0].name, "ibs");
	ck_assert_ptr_eq(t[0].ops, &pm_ibs_ops);
	ck_assert_uint_eq(t[0].needs, HERITAGE_MECH_BIT(HERITAGE_MECH_IBS));
}
END_TEST

/* ---- the choice ----------------------------------------------------------------------- */

START_TEST(forced_ibs_follows_the_probe)
{
	env_set("PAPI_HERITAGE_PROFILEME_BACKEND", "ibs", 1);
	const struct heritage_backend *b = NULL;
	char why[1024] = "";
	int err = pm_backend_choose(&b, why, sizeof why);
	const struct heritage_probe_result *p = heritage_probe(HERITAGE_MECH_IBS);
	if (p->state == HERITAGE_PROBE_WORKS) {
		ck_assert_int_eq(err, 0);
		ck_assert_str_eq(b->name, "ibs");
	} else {
		/* Refused with the probe's own reason. */
		ck_assert_int_eq(err, p->err);
		ck_assert_msg(err == -ENOTSUP || err == -EPERM || err == -EACCES, "err %d", err);
		ck_assert_msg(strstr(why, p->evidence) != NULL, "why \"%s\" lacks the probe's \"%s\"", why, p->evidence);
	}
	/* And the thread start refuses too, never counting nothing. */
	if (p->state != HERITAGE_PROBE_WORKS) {
		unsigned n;
		struct pm_thread t;
		char why2[512] = "";
		ck_assert_int_eq(pm_thread_start(&t, &pm_backends(&n)[0], 0, why2, sizeof why2), p->err);
		ck_assert_ptr_nonnull(strstr(why2, "ibs"));
	}
	env_unset("PAPI_HERITAGE_PROFILEME_BACKEND");
}
END_TEST

static void fake_works(struct heritage_probe_result *r)
{
	r->state = HERITAGE_PROBE_WORKS;
	snprintf(r->evidence, sizeof r->evidence, "fake: ibs_op delivered samples");
}
static void fake_absent(struct heritage_probe_result *r)
{
	r->state = HERITAGE_PROBE_ABSENT;
	snprintf(r->evidence, sizeof r->evidence, "fake: no ibs_op here");
}

START_TEST(auto_takes_ibs_first)
{
	env_unset("PAPI_HERITAGE_PROBE_DISABLE");
	heritage_probe_override(HERITAGE_MECH_IBS, fake_works);
	heritage_probe_override(HERITAGE_MECH_SINGLE_STEP, fake_works);
	const struct heritage_backend *b = NULL;
	char why[1024] = "";
	env_unset("PAPI_HERITAGE_PROFILEME_BACKEND");
	ck_assert_msg(pm_backend_choose(&b, why, sizeof why) == 0, "%s", why);
	ck_assert_str_eq(b->name, "ibs");
	env_set("PAPI_HERITAGE_PROFILEME_BACKEND", "auto", 1);
	ck_assert_int_eq(pm_backend_choose(&b, why, sizeof why), 0);
	ck_assert_str_eq(b->name, "ibs");
	/* IBS absent: auto passes over it, forced ibs is refused with the
	 * probe's words. */
	heritage_probe_override(HERITAGE_MECH_IBS, fake_absent);
	ck_assert_int_eq(pm_backend_choose(&b, why, sizeof why), 0);
	ck_assert_str_eq(b->name, "soft");
	env_set("PAPI_HERITAGE_PROFILEME_BACKEND", "ibs", 1);
	ck_assert_int_eq(pm_backend_choose(&b, why, sizeof why), -ENOTSUP);
	ck_assert_msg(strstr(why, "fake: no ibs_op here") != NULL, "%s", why);
	env_unset("PAPI_HERITAGE_PROFILEME_BACKEND");
	heritage_probe_override(HERITAGE_MECH_IBS, NULL);
	heritage_probe_override(HERITAGE_MECH_SINGLE_STEP, NULL);
}
END_TEST

START_TEST(period_setting)
{
	unsigned n;
	const struct heritage_backend *ibs = &pm_backends(&n)[0];
	uint64_t p = 0;
	char why[256] = "";
	env_unset("PAPI_HERITAGE_PROFILEME_PERIOD");
	ck_assert_int_eq(pm_period_for(ibs, &p, why, sizeof why), 0);
	ck_assert_uint_eq(p, 65536);
	env_set("PAPI_HERITAGE_PROFILEME_PERIOD", "1000", 1);
	ck_assert_int_eq(pm_period_for(ibs, &p, why, sizeof why), 0);
	ck_assert_uint_eq(p, 1008); /* 1000/16 = 62.5 -> 63*16 */
	env_set("PAPI_HERITAGE_PROFILEME_PERIOD", "8", 1);
	ck_assert_int_eq(pm_period_for(ibs, &p, why, sizeof why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "ops"));
	env_unset("PAPI_HERITAGE_PROFILEME_PERIOD");
}
END_TEST

/* ---- the ring's plumbing on a stand-in event -------------------------------------------- */

/* Page faults sampled at period 1 stand in for ibs_op where there is none:
 * N fresh pages stored to are N records (the sampling probe's yardstick),
 * each with an empty raw payload (the kernel's 4 zero bytes), so each is a
 * malformed IBS record: counted, never handed over as a sample. */
static void fault_attr(struct perf_event_attr *a)
{
	memset(a, 0, sizeof *a);
	a->size = sizeof *a;
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_PAGE_FAULTS;
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_RAW;
	a->disabled = 1;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
}

/* Stores to n fresh pages in batches of batch, pausing pause_ms between. */
static void fault_pages(unsigned n, unsigned batch, unsigned pause_ms)
{
	long page = sysconf(_SC_PAGESIZE);
	volatile char *p = mmap(NULL, (size_t)page * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne((void *)p, MAP_FAILED);
	for (unsigned i = 0; i < n; i++) {
		p[(long)i * page] = 1;
		if (pause_ms && (i + 1) % batch == 0)
			usleep(pause_ms * 1000);
	}
	munmap((void *)p, (size_t)page * n);
}

/* The drainer thread empties the kernel's ring while the application does
 * not read: 4000 records through a ring of 1024 (8 pages of 32-byte
 * records), in batches of 200 with 20 ms to drain each, arrive whole. */
START_TEST(drainer_keeps_up)
{
	enum { N = 4000 };
	struct perf_event_attr a;
	fault_attr(&a);
	unsigned n;
	struct pm_thread t;
	memset(&t, 0, sizeof t);
	t.backend = &pm_backends(&n)[0];
	char why[512] = "";
	int err = pm_ibs_start_attr(&t, &a, 8, why, sizeof why);
	ck_assert_msg(err == 0, "%d %s", err, why);
	fault_pages(N, 200, 20);
	pm_ibs_ops.stop(&t);
	ck_assert_int_eq(pm_ibs_ops.drain(&t, NULL, NULL), 0);
	struct pm_ibs_walk_stats st;
	pm_ibs_thread_stats(&t, &st);
	ck_assert_msg(st.malformed >= N && st.malformed <= N + 4 && st.lost == 0 && t.lost == 0,
	              "%llu records and %llu lost for %d faults", (unsigned long long)st.malformed,
	              (unsigned long long)t.lost, N);
	pm_ibs_ops.release(&t);
}
END_TEST

/* A burst into a one-page ring (128 records): what the kernel could not
 * write is counted lost, so records + lost = faults. */
START_TEST(losses_are_counted)
{
	enum { N = 4000 };
	struct perf_event_attr a;
	fault_attr(&a);
	unsigned n;
	struct pm_thread t;
	memset(&t, 0, sizeof t);
	t.backend = &pm_backends(&n)[0];
	char why[512] = "";
	int err = pm_ibs_start_attr(&t, &a, 1, why, sizeof why);
	ck_assert_msg(err == 0, "%d %s", err, why);
	fault_pages(N, N, 0);
	pm_ibs_ops.stop(&t);
	pm_ibs_ops.drain(&t, NULL, NULL);
	struct pm_ibs_walk_stats st;
	pm_ibs_thread_stats(&t, &st);
	ck_assert_msg(st.malformed + t.lost >= N && st.malformed + t.lost <= N + 4,
	              "%llu records + %llu lost (%llu in LOST records) for %d faults", (unsigned long long)st.malformed,
	              (unsigned long long)t.lost, (unsigned long long)st.lost, N);
	ck_assert_uint_ge(t.lost, st.lost);
	printf("losses_are_counted: %llu records, %llu lost (%llu reported by LOST records) of %d\n",
	       (unsigned long long)st.malformed, (unsigned long long)t.lost, (unsigned long long)st.lost, N);
	pm_ibs_ops.release(&t);
}
END_TEST

START_TEST(plumbing_on_page_faults)
{
	enum { PAGES = 8 };
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_PAGE_FAULTS;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_RAW;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	unsigned n;
	struct pm_thread t;
	memset(&t, 0, sizeof t);
	t.backend = &pm_backends(&n)[0];
	t.period = 1;
	char why[512] = "";
	int err = pm_ibs_start_attr(&t, &a, 0, why, sizeof why);
	ck_assert_msg(err == 0, "%d %s", err, why);
	long page = sysconf(_SC_PAGESIZE);
	volatile char *p = mmap(NULL, (size_t)page * PAGES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne((void *)p, MAP_FAILED);
	for (int i = 0; i < PAGES; i++)
		p[(long)i * page] = 1;
	pm_ibs_ops.stop(&t);
	/* Stopped: a fault now is not sampled. */
	volatile char *q = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	q[0] = 1;
	struct got g = { .n = 0 };
	ck_assert_int_eq(pm_ibs_ops.drain(&t, collect, &g), 0);
	ck_assert_uint_eq(g.n, 0);
	struct pm_ibs_walk_stats st;
	pm_ibs_thread_stats(&t, &st);
	/* A stack page touched for the first time in between may add one. */
	ck_assert_msg(st.malformed >= PAGES && st.malformed <= PAGES + 2, "%llu records for %d faults",
	              (unsigned long long)st.malformed, PAGES);
	ck_assert_uint_eq(st.samples, 0);
	ck_assert_uint_eq(st.kernel, 0);
	ck_assert_uint_eq(t.lost, 0);
	/* A second drain finds nothing new. */
	ck_assert_int_eq(pm_ibs_ops.drain(&t, collect, &g), 0);
	struct pm_ibs_walk_stats st2;
	pm_ibs_thread_stats(&t, &st2);
	ck_assert_uint_eq(st2.malformed, st.malformed);
	pm_ibs_ops.release(&t);
	ck_assert_ptr_null(t.priv);
	munmap((void *)p, (size_t)page * PAGES);
	munmap((void *)q, (size_t)page);
}
END_TEST

/* ---- live, where IBS works ------------------------------------------------------------- */

struct live {
	unsigned long n, in_loop, pc_ok;
	uint64_t lo, hi;
	int tid;
};
static void on_live(void *arg, const struct pm_sample *s)
{
	struct live *l = arg;
	l->n++;
	invariants(s);
	if (s->pc >= l->lo && s->pc < l->hi)
		l->in_loop++;
	if ((int)s->tid == l->tid)
		l->pc_ok++;
}

__attribute__((noinline)) static unsigned long spin(unsigned long n)
{
	unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++)
		__asm__ volatile("add %1, %0" : "+r"(x) : "r"(i));
	return x;
}
__attribute__((noinline)) static void spin_end(void)
{
	__asm__ volatile("");
}

START_TEST(live_samples_land_in_the_loop)
{
	/* A period of 2^20 ops keeps the rate (~10^4/s) under the kernel's
	 * perf_event_max_sample_rate, whose throttling drops samples unseen. */
	enum { PERIOD = 1 << 20 };
	const unsigned long iters = 1000000000ul;
	unsigned n;
	struct pm_thread t;
	char why[512] = "";
	ck_assert_msg(pm_thread_start(&t, &pm_backends(&n)[0], PERIOD, why, sizeof why) == 0, "%s", why);
	ck_assert_uint_eq(t.period, PERIOD);
	/* Each iteration is add, inc, cmp+jne: 2 to 4 dispatched ops. */
	spin(iters);
	struct live l = { .lo = (uintptr_t)spin, .hi = (uintptr_t)spin_end, .tid = t.tid };
	if (l.hi < l.lo)
		l.hi = l.lo + 256;
	pm_thread_stop(&t, on_live, &l);
	double ops = (double)(l.n + t.lost) * PERIOD;
	ck_assert_msg(ops > 2.0 * 0.8 * (double)iters && ops < 4.0 * 1.2 * (double)iters,
	              "%lu samples + %llu lost x %d = %.3g ops for %lu iterations of 2-4 ops", l.n,
	              (unsigned long long)t.lost, PERIOD, ops, iters);
	ck_assert_msg(l.in_loop * 10 >= l.n * 9, "%lu of %lu samples in the loop", l.in_loop, l.n);
	ck_assert_uint_eq(l.pc_ok, l.n);
}
END_TEST

int main(void)
{
	char why[512] = "";
	int ibs = heritage_probe_explain(HERITAGE_MECH_IBS, why, sizeof why) == 0;
	char swhy[512] = "";
	int sampling = heritage_probe_explain(HERITAGE_MECH_SAMPLING, swhy, sizeof swhy) == 0;
	Suite *s = suite_create("profileme ibs backend");
	TCase *d = tcase_create("decoder");
	tcase_add_test(d, payload_lengths);
	tcase_add_test(d, payload_registers_in_order);
	tcase_add_test(d, payload_not_an_op_sample);
	tcase_add_test(d, rip_invalid_dropped);
	tcase_add_test(d, plain_op);
	tcase_add_test(d, cond_taken_and_not);
	tcase_add_test(d, cond_mispredicted);
	tcase_add_test(d, other_branches);
	tcase_add_test(d, branch_kind_unknown);
	tcase_add_test(d, fused_branch);
	tcase_add_test(d, dtlb_single_miss);
	tcase_add_test(d, dtlb_double_miss);
	tcase_add_test(d, dtlb_without_linear_address);
	tcase_add_test(d, misaligned);
	tcase_add_test(d, precedence);
	tcase_add_test(d, counters);
	tcase_add_test(d, all_combinations);
	tcase_add_test(d, x86_branches);
	tcase_add_test(d, classify_own_memory);
	suite_add_tcase(s, d);
	TCase *p = tcase_create("perf");
	tcase_add_test(p, ring_decode);
	tcase_add_test(p, ring_old_kernel_layout);
	tcase_add_test(p, attr_with_swfilt);
	tcase_add_test(p, attr_without_swfilt);
	tcase_add_test(p, attr_refusals);
	tcase_add_test(p, period_rounding);
	tcase_add_test(p, ops_table);
	tcase_add_test(p, forced_ibs_follows_the_probe);
	tcase_add_test(p, auto_takes_ibs_first);
	tcase_add_test(p, period_setting);
	if (sampling) {
		/* Every page fault of the process is a record: ASan's shadow
		 * pages fault too. */
		tcase_add_test_unsanitized(p, plumbing_on_page_faults, "ASan's shadow pages fault too: 12 records for 8 faults");
		tcase_add_test_unsanitized(p, drainer_keeps_up, "ASan's shadow pages fault too: 4508 records for 4000 faults");
		tcase_add_test_unsanitized(p, losses_are_counted,
		                           "ASan's shadow pages fault too: 2914 records + 1594 lost for 4000 faults");
	} else
		printf("the ring plumbing test on page faults is left out: %s\n", swhy);
	suite_add_tcase(s, p);
	if (ibs) {
		TCase *l = tcase_create("live");
		tcase_set_timeout(l, 60);
		tcase_add_test(l, live_samples_land_in_the_loop);
		suite_add_tcase(s, l);
	}
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (failed)
		return 1;
	if (!ibs) {
		printf("decoder, ring and choice tests passed; the live IBS test skipped: %s\n", why);
		return 77;
	}
	return 0;
}
