/*
 * ProfileMe samples from AMD IBS op sampling (pm_ibs.h, pm_collect.h).
 *
 * The mapping (doc/facilities.md §5(d); register bits from the kernel's
 * arch/x86/include/asm/amd-ibs.h, doc/facilities.md §5(c)).  IBS samples one
 * *op* in every `period` dispatched ops (IbsOpCntCtl = 1) and reports it
 * only if it retired; an x86 instruction of several ops is seen through
 * whichever op was tagged.
 *
 *   PC          IbsOpRip.  When IbsOpData[38] RipInvalid is set the sample
 *               has no PC and is dropped (counted, never given a made-up
 *               PC).  The kernel trusts bit 38 only with IBS_CAPS_RIPINVALIDCHK;
 *               we drop on the bit whatever the caps say: a dropped sample
 *               is a loss, a wrong PC would be a lie.
 *   retired     1 for every sample (IBS reports only retired ops, so the
 *               set !retired is empty).
 *   taken       IbsOpData[35] OpBrnTaken, for a retired (OpBrnRet, 37)
 *               conditional branch that did not mispredict (the man page:
 *               undefined for a mispredicted conditional branch); unknown
 *               for every other op.
 *   cbrmispredict
 *               IbsOpData[36] OpBrnMisp of a retired conditional branch;
 *               known 0 for an op that is no branch (OpBrnRet clear), for a
 *               return (OpReturn, 34) and for a branch the classifier says
 *               is not conditional; unknown when the classifier cannot tell.
 *               Conditional-ness: IBS does not say, so the instruction at
 *               the RIP is classified (pm_ibs_x86_branch: jcc, jrcxz, loop*).
 *               A fused branch (OpBrnFuse, 39, with IBS_CAPS_OPBRNFUSE) is
 *               conditional without looking: only jcc fuses with the
 *               compare before it, and the RIP may then be the compare's
 *               [U: which of the pair IbsOpRip names is not documented in
 *               what we read].
 *   trap bits   exactly one per sample, of those observed, in this order of
 *               precedence when several conditions hold:
 *                 dtb2miss4    IbsOpData3[3] DcL2TlbMiss: a hardware page walk.
 *                              x86-64 walks 4-level tables (5 with LA57), and
 *                              the page-walk caches may skip levels, so the
 *                              3- vs 4-level split of DCPI is impossible:
 *                              every walk is dtb2miss4 and dtb2miss3 is not a
 *                              field of this backend (a set naming it is refused).
 *                 dtbmiss      IbsOpData3[2] DcL1TlbMiss & !DcL2TlbMiss.
 *                 unaligntrap  IbsOpData3[8] DcMisAcc (x86 does not trap: the
 *                              access was misaligned).
 *                 mispredict   OpBrnMisp of any retired branch op (conditional,
 *                              indirect, return: OpReturn marks those).
 *                 notrap       none of these.
 *               The order follows execution within one instruction: its
 *               address is translated before the access completes, and an
 *               instruction that both accesses memory and branches (ret,
 *               jmp *mem) resolves its target from the access.  The memory
 *               conditions hold only for a load or store op (IbsOpData3
 *               LdOp|StOp), and the TLB bits only with DcLinAddrValid (17)
 *               (and DcPhyAddrValid (18) with IBS_CAPS_OPDTLBPGSIZE), as the
 *               kernel reads them (ibs.c perf_ibs_get_tlb_lvl); without them
 *               the TLB conditions are unknown, and so is every trap bit
 *               they could have displaced: a trap bit is known only when the
 *               conditions of higher precedence are known.
 *   valid       retired & notrap, known when notrap is.
 *   retdelay    TagToRetCtr − CompToRetCtr (IbsOpData 31:16 − 15:0): the
 *               cycles from tag to completion.  Approximate: ProfileMe's is
 *               a lower bound on how long the instruction held the retire
 *               pointer; this is its execution and wait latency.  Unknown if
 *               CompToRet > TagToRet (never in a sane record).
 *   inflight    TagToRetCtr, for retired^notrap only (the man page defines
 *               it there).  Approximate: from dispatch (IBS tags at
 *               dispatch), not from leaving fetch, and without DCPI's −3.
 * No honest per-sample source, so not fields of this backend and never
 * known: nyp (a fetch-sample population), ldstorder, replays, map_stall,
 * early_kill, late_kill (killed ops are never sampled), itbmiss (fetch
 * samples), arithtrap, fpdisabledtrap, MT_FPCRtrap, dfaulttrap, iacvtrap,
 * OPCDECtrap, interrupt, mchktrap, dtb2miss3.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "profileme/pm_ibs.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/heritage_error.h"
#include "common/heritage_perf_ring.h"
#include "common/heritage_probe.h"
#include "imc/imc_sysfs.h"
#include "profileme/pm_collect.h"

/* ---- registers (amd-ibs.h) ------------------------------------------------------- */

#define OPCTL_VAL (1ull << 18)

#define OPDATA_COMP_TO_RET(d) ((uint32_t)((d)&0xffff))
#define OPDATA_TAG_TO_RET(d) ((uint32_t)(((d) >> 16) & 0xffff))
#define OPDATA_RETURN (1ull << 34)
#define OPDATA_BRN_TAKEN (1ull << 35)
#define OPDATA_BRN_MISP (1ull << 36)
#define OPDATA_BRN_RET (1ull << 37)
#define OPDATA_RIP_INVALID (1ull << 38)
#define OPDATA_BRN_FUSE (1ull << 39)

#define OPDATA3_LD_OP (1ull << 0)
#define OPDATA3_ST_OP (1ull << 1)
#define OPDATA3_L1TLB_MISS (1ull << 2)
#define OPDATA3_L2TLB_MISS (1ull << 3)
#define OPDATA3_MIS_ACC (1ull << 8)
#define OPDATA3_LIN_VALID (1ull << 17)
#define OPDATA3_PHY_VALID (1ull << 18)

/* IbsOpCtl .. IbsDcPhysAd: always there with PERF_SAMPLE_RAW (the kernel
 * reads MSR_AMD64_IBSOP_REG_COUNT = 7 registers from IbsOpCtl on). */
#define FIXED_REGS 7

static uint64_t reg_at(const unsigned char *p, unsigned i)
{
	uint64_t v;
	memcpy(&v, p + 4 + 8 * (size_t)i, sizeof v);
	return v;
}

/* The decoder's reason, if the caller wants one: the ring walk passes none,
 * so decoding makes no libc call that is not async-signal-safe (the
 * component drains from PAPI's interval-timer signal too). */
__attribute__((format(printf, 3, 4))) static void say(char *why, size_t wlen, const char *fmt, ...)
{
	if (!why || !wlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, wlen, fmt, ap);
	va_end(ap);
}

int pm_ibs_parse_raw(const void *raw, size_t len, struct pm_ibs_regs *r, char *why, size_t wlen)
{
	const unsigned char *p = raw;
	memset(r, 0, sizeof *r);
	if (!raw || len < 4) {
		say(why, wlen, "ibs: raw payload of %zu bytes is shorter than its caps word (4)", len);
		return -EINVAL;
	}
	memcpy(&r->caps, p, sizeof r->caps);
	r->has_br_target = (r->caps & PM_IBS_CAPS_BRNTRGT) != 0;
	r->has_data4 = (r->caps & PM_IBS_CAPS_OPDATA4) != 0;
	unsigned nregs = FIXED_REGS + (unsigned)r->has_br_target + (unsigned)r->has_data4;
	size_t want = 4 + 8 * (size_t)nregs;
	if (len < want) {
		say(why, wlen, "ibs: raw payload of %zu bytes, but caps 0x%" PRIx32 " promise %u registers (%zu bytes: "
		         "caps, IbsOpCtl..IbsDcPhysAd%s%s)", len, r->caps, nregs, want,
		         r->has_br_target ? ", IbsBrTarget" : "", r->has_data4 ? ", IbsOpData4" : "");
		return -EINVAL;
	}
	r->op_ctl = reg_at(p, 0);
	r->rip = reg_at(p, 1);
	r->data = reg_at(p, 2);
	r->data2 = reg_at(p, 3);
	r->data3 = reg_at(p, 4);
	r->dc_lin = reg_at(p, 5);
	r->dc_phys = reg_at(p, 6);
	unsigned i = FIXED_REGS;
	if (r->has_br_target)
		r->br_target = reg_at(p, i++);
	if (r->has_data4)
		r->data4 = reg_at(p, i++);
	if (!(r->op_ctl & OPCTL_VAL)) {
		say(why, wlen, "ibs: IbsOpCtl 0x%" PRIx64 " has IbsOpVal (bit 18) clear: not an op sample", r->op_ctl);
		return -EINVAL;
	}
	return 0;
}

enum pm_ibs_branch pm_ibs_x86_branch(const uint8_t *b, size_t n)
{
	size_t i = 0;
	/* Legacy prefixes (segment, operand and address size, lock, rep, and
	 * the 2E/3E branch hints), in any number, then at most one REX. */
	while (i < n && (b[i] == 0x26 || b[i] == 0x2e || b[i] == 0x36 || b[i] == 0x3e || b[i] == 0x64 ||
	                 b[i] == 0x65 || b[i] == 0x66 || b[i] == 0x67 || b[i] == 0xf0 || b[i] == 0xf2 || b[i] == 0xf3))
		i++;
	if (i < n && (b[i] & 0xf0) == 0x40)
		i++;
	if (i >= n)
		return PM_IBS_BR_UNKNOWN;
	uint8_t op = b[i];
	if ((op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3))
		return PM_IBS_BR_COND;
	if (op == 0x0f) {
		if (i + 1 >= n)
			return PM_IBS_BR_UNKNOWN;
		return b[i + 1] >= 0x80 && b[i + 1] <= 0x8f ? PM_IBS_BR_COND : PM_IBS_BR_OTHER;
	}
	return PM_IBS_BR_OTHER;
}

enum tri { NO, YES, UNK };

static void set_known(struct pm_sample *s, enum pm_field f, int v)
{
	s->known |= PM_FIELD_BIT(f);
	if (v)
		s->value |= PM_FIELD_BIT(f);
	else
		s->value &= ~PM_FIELD_BIT(f);
}

int pm_ibs_decode_regs(const struct pm_ibs_regs *r, pm_ibs_classify_fn classify, void *arg, struct pm_sample *out,
                       char *why, size_t wlen)
{
	uint32_t tid = out->tid;
	memset(out, 0, sizeof *out);
	out->tid = tid;
	if (r->data & OPDATA_RIP_INVALID) {
		say(why, wlen, "ibs: IbsOpData 0x%" PRIx64 " has RipInvalid (bit 38): the sample has no PC", r->data);
		return -EADDRNOTAVAIL;
	}
	out->pc = r->rip;
	set_known(out, PM_RETIRED, 1);

	/* Branches. */
	int brn = (r->data & OPDATA_BRN_RET) != 0, misp = (r->data & OPDATA_BRN_MISP) != 0;
	if (!brn) {
		set_known(out, PM_CBRMISPREDICT, 0);
	} else {
		enum pm_ibs_branch kind = PM_IBS_BR_UNKNOWN;
		if ((r->caps & PM_IBS_CAPS_OPBRNFUSE) && (r->data & OPDATA_BRN_FUSE))
			kind = PM_IBS_BR_COND;
		else if (r->data & OPDATA_RETURN)
			kind = PM_IBS_BR_OTHER;
		else if (classify)
			kind = classify(arg, r->rip);
		if (kind == PM_IBS_BR_COND) {
			set_known(out, PM_CBRMISPREDICT, misp);
			if (!misp)
				set_known(out, PM_TAKEN, (r->data & OPDATA_BRN_TAKEN) != 0);
		} else if (kind == PM_IBS_BR_OTHER) {
			set_known(out, PM_CBRMISPREDICT, 0);
		}
	}

	/* The trap conditions, in precedence order (the head comment). */
	enum tri dtb2 = NO, dtb1 = NO, unal = NO, mis = brn && misp ? YES : NO;
	if (r->data3 & (OPDATA3_LD_OP | OPDATA3_ST_OP)) {
		unal = (r->data3 & OPDATA3_MIS_ACC) ? YES : NO;
		int tlb_valid = (r->data3 & OPDATA3_LIN_VALID) &&
		                (!(r->caps & PM_IBS_CAPS_OPDTLBPGSIZE) || (r->data3 & OPDATA3_PHY_VALID));
		if (!tlb_valid) {
			dtb2 = dtb1 = UNK;
		} else {
			dtb2 = (r->data3 & OPDATA3_L2TLB_MISS) ? YES : NO;
			dtb1 = (r->data3 & OPDATA3_L1TLB_MISS) && !(r->data3 & OPDATA3_L2TLB_MISS) ? YES : NO;
		}
	}
	static const enum pm_field order[] = { PM_DTB2MISS4, PM_DTBMISS, PM_UNALIGNTRAP, PM_MISPREDICT };
	const enum tri cond[] = { dtb2, dtb1, unal, mis };
	int higher_yes = 0, higher_unk = 0, trap = -1;
	for (unsigned i = 0; i < sizeof order / sizeof order[0]; i++) {
		if (higher_yes || cond[i] == NO)
			set_known(out, order[i], 0);
		else if (cond[i] == YES && !higher_unk) {
			trap = (int)order[i];
			set_known(out, order[i], 1);
		}
		higher_yes |= cond[i] == YES;
		higher_unk |= cond[i] == UNK;
	}
	if (higher_yes) {
		set_known(out, PM_NOTRAP, 0);
		set_known(out, PM_VALID, 0);
	} else if (!higher_unk) {
		trap = PM_NOTRAP;
		set_known(out, PM_NOTRAP, 1);
		set_known(out, PM_VALID, 1);
	}
	/* Exactly one trap bit in value, always.  When the trap is unknown
	 * (trap < 0) it is the value bit of a candidate that is not known (the
	 * first in precedence order, notrap last), so no known field's value
	 * is changed by it. */
	if (trap < 0) {
		trap = PM_NOTRAP;
		for (unsigned i = 0; i < sizeof order / sizeof order[0]; i++)
			if (!(out->known & PM_FIELD_BIT(order[i]))) {
				trap = (int)order[i];
				break;
			}
		pm_sample_set_trap(out, (enum pm_field)trap);
		trap = -1;
	} else {
		pm_sample_set_trap(out, (enum pm_field)trap);
	}

	/* Counters. */
	uint32_t tag = OPDATA_TAG_TO_RET(r->data), comp = OPDATA_COMP_TO_RET(r->data);
	if (tag >= comp) {
		out->known |= PM_FIELD_BIT(PM_RETDELAY);
		out->counter[PM_RETDELAY - PM_COUNTER_FIRST] = tag - comp;
	}
	if (trap == PM_NOTRAP) {
		out->known |= PM_FIELD_BIT(PM_INFLIGHT);
		out->counter[PM_INFLIGHT - PM_COUNTER_FIRST] = tag;
	}
	return 0;
}

int pm_ibs_decode(const void *raw, size_t len, pm_ibs_classify_fn classify, void *arg, struct pm_sample *out,
                  char *why, size_t wlen)
{
	struct pm_ibs_regs r;
	int err = pm_ibs_parse_raw(raw, len, &r, why, wlen);
	if (err)
		return err;
	return pm_ibs_decode_regs(&r, classify, arg, out, why, wlen);
}

enum pm_ibs_branch pm_ibs_classify_self(void *arg, uint64_t rip)
{
	(void)arg;
	/* The longest x86 instruction is 15 bytes; a jcc's opcode is within
	 * its first few even with every prefix. */
	uint8_t b[16];
	struct iovec local = { .iov_base = b, .iov_len = sizeof b };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)rip, .iov_len = sizeof b };
	ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (n <= 0) {
		/* The tail of a page before an unmapped one: read what there is. */
		size_t room = 4096 - (size_t)(rip & 4095);
		if (room >= sizeof b)
			return PM_IBS_BR_UNKNOWN;
		local.iov_len = remote.iov_len = room;
		n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
		if (n <= 0)
			return PM_IBS_BR_UNKNOWN;
	}
	return pm_ibs_x86_branch(b, (size_t)n);
}

/* ---- the perf ring ------------------------------------------------------------------ */

struct ring_walk {
	pm_ibs_classify_fn classify;
	void *carg;
	void (*fn)(void *arg, const struct pm_sample *s);
	void *arg;
	struct pm_ibs_walk_stats *st;
	long handed;
};

/* A PERF_RECORD_SAMPLE of sample_type IP|TID|RAW: u64 ip; u32 pid, tid;
 * u32 size; u8 raw[size] (perf_event_open(2), the order of sample_type's
 * bits). */
static void on_record(void *arg, const struct perf_event_header *h, const unsigned char *rec, size_t have)
{
	struct ring_walk *w = arg;
	if (h->type == PERF_RECORD_LOST) {
		w->st->lost += heritage_perf_record_lost(h, rec, have);
		return;
	}
	if (h->type == PERF_RECORD_THROTTLE)
		w->st->throttles++;
	if (h->type != PERF_RECORD_SAMPLE)
		return;
	const size_t body = sizeof *h;
	uint32_t tid, rawsize;
	if (have < h->size || have < body + 8 + 8 + 4) {
		w->st->malformed++;
		return;
	}
	memcpy(&tid, rec + body + 12, sizeof tid);
	memcpy(&rawsize, rec + body + 16, sizeof rawsize);
	if (body + 20 + (size_t)rawsize > have) {
		w->st->malformed++;
		return;
	}
	/* ProfileMe samples the thread's own code: a kernel-mode sample (the
	 * kernel keeps them when it cannot filter: no swfilt) is dropped. */
	if ((h->misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_USER) {
		w->st->kernel++;
		return;
	}
	struct pm_sample s = { .tid = tid };
	int err = pm_ibs_decode(rec + body + 20, rawsize, w->classify, w->carg, &s, NULL, 0);
	if (err == -EADDRNOTAVAIL) {
		w->st->rip_invalid++;
		return;
	}
	if (err) {
		w->st->malformed++;
		return;
	}
	w->st->samples++;
	w->handed++;
	if (w->fn)
		w->fn(w->arg, &s);
}

long pm_ibs_ring_decode(void *meta, uint64_t data_size, pm_ibs_classify_fn classify, void *carg,
                        void (*fn)(void *arg, const struct pm_sample *s), void *arg, struct pm_ibs_walk_stats *st)
{
	struct pm_ibs_walk_stats dummy = { 0 };
	struct ring_walk w = { .classify = classify, .carg = carg, .fn = fn, .arg = arg, .st = st ? st : &dummy };
	/* An IBS sample is ~120 bytes; room for registers a newer kernel adds. */
	unsigned char buf[1024];
	heritage_perf_ring_walk(meta, data_size, buf, sizeof buf, on_record, &w);
	return w.handed;
}

/* ---- the attribute ------------------------------------------------------------------- */

uint64_t pm_ibs_round_period(uint64_t period)
{
	/* To the nearest multiple of 16 (doc/facilities.md §5(d): round(N/16)*16). */
	uint64_t p = (period + 8) & ~(uint64_t)15;
	return p < 16 ? 16 : p;
}

/* The first line of dir/name into buf: 0, -ENOENT when absent, -EIO. */
static int read_line(const char *dir, const char *name, char *buf, size_t len)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ENOENT : -EIO;
	int ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -EIO;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* A one-bit format "config:19": 0 with *word and *mask, -ENOENT, -EINVAL. */
static int read_format_bit(const char *dir, const char *name, unsigned *word, uint64_t *mask, char *why,
                           size_t wlen)
{
	char buf[64], file[64], path[512];
	snprintf(file, sizeof file, "format/%s", name);
	int err = read_line(dir, file, buf, sizeof buf);
	if (err == -ENOENT)
		return err;
	snprintf(path, sizeof path, "%s/%s", dir, file);
	if (err) {
		snprintf(why, wlen, "ibs: %s cannot be read", path);
		return -EINVAL;
	}
	if (imc_sysfs_parse_format(buf, path, word, mask) != 0 || (*mask & (*mask - 1))) {
		snprintf(why, wlen, "ibs: %s is \"%s\", not one bit of config, config1 or config2", path, buf);
		return -EINVAL;
	}
	return 0;
}

int pm_ibs_attr(const char *dir, uint64_t period, struct perf_event_attr *a, int *kernel_filtered, char *why,
                size_t wlen)
{
	char buf[64];
	char *end;
	memset(a, 0, sizeof *a);
	*kernel_filtered = 0;
	if (read_line(dir, "type", buf, sizeof buf) != 0) {
		snprintf(why, wlen, "ibs: no %s/type: no ibs_op PMU here", dir);
		return -ENOTSUP;
	}
	errno = 0;
	unsigned long type = strtoul(buf, &end, 10);
	if (errno || end == buf || *end || type > UINT32_MAX) {
		snprintf(why, wlen, "ibs: %s/type is \"%s\", not a PMU type", dir, buf);
		return -EINVAL;
	}
	/* cnt_ctl: the kernel shows it only with IBS_CAPS_OPCNT (ibs.c
	 * cnt_ctl_is_visible); without it IBS counts cycles, not ops, and the
	 * period would not be in this backend's unit. */
	unsigned word;
	uint64_t cnt_ctl, swfilt = 0;
	int err = read_format_bit(dir, "cnt_ctl", &word, &cnt_ctl, why, wlen);
	if (err == -ENOENT) {
		snprintf(why, wlen, "ibs: %s/format has no cnt_ctl: this IBS counts only cycles, not dispatched ops", dir);
		return -ENOTSUP;
	}
	if (err)
		return err;
	if (word != 0) {
		snprintf(why, wlen, "ibs: %s/format/cnt_ctl is not a bit of config", dir);
		return -EINVAL;
	}
	unsigned fword = 0;
	err = read_format_bit(dir, "swfilt", &fword, &swfilt, why, wlen);
	if (err && err != -ENOENT)
		return err;
	if (err == -ENOENT)
		swfilt = 0;

	a->size = sizeof *a;
	a->type = (uint32_t)type;
	a->config = cnt_ctl; /* IbsOpCntCtl = 1: count dispatched ops */
	a->sample_period = period;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_RAW;
	a->disabled = 1;
	/* The kernel refuses exclude_{user,kernel,hv} on IBS unless swfilt
	 * asks it to filter in software (ibs.c perf_ibs_init); without swfilt
	 * it keeps kernel samples and the walk drops them. */
	if (swfilt) {
		if (fword == 0)
			a->config |= swfilt;
		else if (fword == 1)
			a->config1 |= swfilt;
		else
			a->config2 |= swfilt;
		a->exclude_kernel = 1;
		*kernel_filtered = 1;
	}
	return 0;
}

/* ---- the backend --------------------------------------------------------------------- */

#define IBS_OP_DIR "/sys/bus/event_source/devices/ibs_op"

/* Samples decoded and waiting for the consumer's drain: 65536 of 32 bytes
 * (2 MiB, touched as used).  The kernel caps sampling at
 * perf_event_max_sample_rate (100000/s by default, lowered when its NMIs
 * run long), so this bridges at least 0.65 s between reads; past it
 * samples are counted lost, never silently dropped. */
#define PENDING_SLOTS 65536u
/* The drainer wakes when the kernel ring is a quarter full, and at least
 * this often. */
#define DRAIN_POLL_MS 100

struct ibs_priv {
	int fd, efd;
	void *ring;
	size_t map_bytes;
	uint64_t data_bytes;
	/* Producers (the drainer thread, and drain() reading what came since)
	 * walk the kernel ring under lock; the consumer pops pending under
	 * pop_lock, lock-free against the producer (pm_ring is SPSC). */
	pthread_mutex_t lock, pop_lock;
	struct pm_ibs_walk_stats st;
	struct pm_ring pending;
	pthread_t drainer;
	int have_drainer;
	/* read() gives the kernel's lost count (PERF_FORMAT_LOST, Linux 6.0):
	 * a PERF_RECORD_LOST is written only once the ring has room again, so
	 * losses just before a stop would otherwise never be seen. */
	int format_lost;
};

static void push_pending(void *arg, const struct pm_sample *s)
{
	struct ibs_priv *p = arg;
	pm_ring_push(&p->pending, s);
}

/* What the kernel wrote since the last walk, decoded into pending; lock held. */
static void walk_locked(struct ibs_priv *p)
{
	pm_ibs_ring_decode(p->ring, p->data_bytes, pm_ibs_classify_self, NULL, push_pending, p, &p->st);
}

/* The kernel ring holds a few thousand samples, a few milliseconds of IBS
 * at its highest rate: a thread of our own empties it into pending as it
 * fills (the watermark wakes it), so the application need not read often. */
static void *drainer_main(void *arg)
{
	struct ibs_priv *p = arg;
	struct pollfd fds[2] = { { .fd = p->fd, .events = POLLIN }, { .fd = p->efd, .events = POLLIN } };
	for (;;) {
		int n = poll(fds, 2, DRAIN_POLL_MS);
		if (n < 0 && errno != EINTR)
			break;
		pthread_mutex_lock(&p->lock);
		walk_locked(p);
		pthread_mutex_unlock(&p->lock);
		if (n > 0 && (fds[1].revents & POLLIN))
			break;
		if (n > 0 && (fds[0].revents & (POLLHUP | POLLERR)))
			fds[0].fd = -1;
	}
	return NULL;
}

static void free_priv(struct ibs_priv *p)
{
	if (p->ring)
		munmap(p->ring, p->map_bytes);
	if (p->fd >= 0)
		close(p->fd);
	if (p->efd >= 0)
		close(p->efd);
	pm_ring_free(&p->pending);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->pop_lock);
	free(p);
}

int pm_ibs_start_attr(struct pm_thread *t, struct perf_event_attr *a, unsigned pages, char *why, size_t len)
{
	struct ibs_priv *p = calloc(1, sizeof *p);
	if (!p) {
		snprintf(why, len, "ibs: out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->pop_lock, NULL);
	p->fd = p->efd = -1;
	int err = pm_ring_init(&p->pending, PENDING_SLOTS);
	if (err) {
		snprintf(why, len, "ibs: mapping %u pending samples: %s", PENDING_SLOTS, strerror(-err));
		free_priv(p);
		return err;
	}
	/* The ring: 2^k data pages after the metadata page.  Larger holds more
	 * samples between the drainer's wakeups (an IBS record is 88 bytes
	 * with 7 registers, 104 with 9: 5000-6000 in 128 pages); an ordinary
	 * account may lock only perf_event_mlock_kb (516 KiB: 129 pages) beyond
	 * RLIMIT_MEMLOCK. */
	long page = sysconf(_SC_PAGESIZE);
	static const unsigned ladder[] = { 128, 32, 8 };
	const unsigned *try = ladder;
	unsigned ntry = sizeof ladder / sizeof ladder[0];
	if (pages) {
		try = &pages;
		ntry = 1;
	}
	/* The drainer wakes when a quarter of the ring is written: the
	 * watermark is fixed at open, so each size of the ladder is its own open. */
	int e = 0;
	for (unsigned i = 0; i < ntry && !p->ring; i++) {
		a->watermark = 1;
		a->wakeup_watermark = (uint32_t)((size_t)page * try[i] / 4);
		a->read_format = PERF_FORMAT_LOST;
		p->fd = (int)syscall(SYS_perf_event_open, a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (p->fd < 0 && errno == EINVAL) {
			a->read_format = 0; /* before 6.0 */
			p->fd = (int)syscall(SYS_perf_event_open, a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		}
		p->format_lost = a->read_format != 0;
		if (p->fd < 0) {
			e = errno;
			snprintf(why, len, "ibs: perf_event_open(type %u, config 0x%llx, period %llu, this thread): %s%s",
			         a->type, (unsigned long long)a->config, (unsigned long long)a->sample_period, strerror(e),
			         e == EACCES || e == EPERM ? " (perf_event_paranoid, or a seccomp filter)" : "");
			free_priv(p);
			return e == EACCES || e == EPERM ? -EPERM : -ENOTSUP;
		}
		size_t bytes = (size_t)page * (try[i] + 1);
		void *r = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
		if (r != MAP_FAILED) {
			p->ring = r;
			p->map_bytes = bytes;
			p->data_bytes = (uint64_t)page * try[i];
		} else {
			e = errno;
			close(p->fd);
			p->fd = -1;
		}
	}
	if (!p->ring) {
		snprintf(why, len, "ibs: mmap of the sample ring: %s%s", strerror(e),
		         e == EPERM ? " (perf_event_mlock_kb exhausted?)" : "");
		free_priv(p);
		return e == EPERM ? -EPERM : -ENOMEM;
	}
	p->efd = eventfd(0, EFD_CLOEXEC);
	if (p->efd < 0) {
		e = errno;
		snprintf(why, len, "ibs: eventfd: %s", strerror(e));
		free_priv(p);
		return -e;
	}
	/* No signal of the application's may land on the drainer. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(&p->drainer, NULL, drainer_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		snprintf(why, len, "ibs: starting the ring's drainer thread: %s", strerror(e));
		free_priv(p);
		return -e;
	}
	p->have_drainer = 1;
	if (ioctl(p->fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
		e = errno;
		snprintf(why, len, "ibs: enabling the sampling event: %s", strerror(e));
		t->priv = p;
		pm_ibs_ops.release(t);
		return -ENOTSUP;
	}
	t->priv = p;
	return 0;
}

static int start(struct pm_thread *t, char *why, size_t len)
{
	/* The probe has seen ibs_op deliver samples (heritage_ibs_probe); a
	 * successful open alone proves nothing. */
	int err = heritage_probe_explain(HERITAGE_MECH_IBS, why, len);
	if (err)
		return err;
	struct perf_event_attr a;
	int filtered;
	err = pm_ibs_attr(IBS_OP_DIR, t->period, &a, &filtered, why, len);
	if (err)
		return err;
	return pm_ibs_start_attr(t, &a, 0, why, len);
}

void pm_ibs_thread_stats(const struct pm_thread *t, struct pm_ibs_walk_stats *st)
{
	struct ibs_priv *p = t->priv;
	memset(st, 0, sizeof *st);
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	*st = p->st;
	pthread_mutex_unlock(&p->lock);
}

/* Also from PAPI's interval-timer signal (components/profileme): the
 * locks are held only here (never re-entered: pm_eventset's draining flag)
 * and by the drainer thread, and the walk makes no call that is not
 * async-signal-safe (process_vm_readv to classify). */
static long drain(struct pm_thread *t, pm_sample_fn fn, void *arg)
{
	struct ibs_priv *p = t->priv;
	if (!p)
		return 0;
	pthread_mutex_lock(&p->pop_lock);
	/* What came since the drainer last woke. */
	pthread_mutex_lock(&p->lock);
	walk_locked(p);
	uint64_t lost = p->st.lost;
	pthread_mutex_unlock(&p->lock);
	uint64_t rf[2];
	if (p->format_lost && read(p->fd, rf, sizeof rf) == (ssize_t)sizeof rf && rf[1] > lost)
		lost = rf[1];
	lost += __atomic_load_n(&p->pending.lost, __ATOMIC_RELAXED);
	long n = 0;
	struct pm_sample s;
	while (pm_ring_pop(&p->pending, &s)) {
		if (fn)
			fn(arg, &s);
		n++;
	}
	/* t->lost is the kernel's losses (ring full before the drainer woke)
	 * and ours (pending full before the application read). */
	t->lost = lost;
	pthread_mutex_unlock(&p->pop_lock);
	return n;
}

static void stop_drainer(struct ibs_priv *p)
{
	if (!p->have_drainer)
		return;
	uint64_t one = 1;
	if (write(p->efd, &one, sizeof one) != (ssize_t)sizeof one)
		pthread_cancel(p->drainer);
	pthread_join(p->drainer, NULL);
	p->have_drainer = 0;
}

static void stop(struct pm_thread *t)
{
	struct ibs_priv *p = t->priv;
	if (!p)
		return;
	ioctl(p->fd, PERF_EVENT_IOC_DISABLE, 0);
	stop_drainer(p);
}

static void release(struct pm_thread *t)
{
	struct ibs_priv *p = t->priv;
	if (!p)
		return;
	stop_drainer(p);
	free_priv(p);
	t->priv = NULL;
}

/* The default period: 65536 dispatched ops, DCPI's own order of magnitude
 * (dcpid samples about every 64K events), a multiple of 16 as IBS needs,
 * and far below MaxCnt's 2^20 - 16, so one hardware period per sample. */
const struct pm_backend_ops pm_ibs_ops = {
	.fields = PM_IBS_FIELDS,
	.modelled = PM_IBS_MODELLED,
	.unit = "ops",
	.default_period = 65536,
	.min_period = 16,
	.round_period = pm_ibs_round_period,
	.start = start,
	.drain = drain,
	.stop = stop,
	.release = release,
};
