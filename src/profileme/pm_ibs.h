/*
 * The AMD IBS op backend of profileme: the decoder of one IBS op sample
 * into a ProfileMe sample (pure, tested on constructed records), and the
 * pieces of the perf backend the tests reach (the attribute built from an
 * ibs_op sysfs directory, the walk of a perf ring of IBS samples).
 *
 * The record (doc/facilities.md §5(c); the kernel's arch/x86/events/amd/ibs.c
 * perf_ibs_handle_irq, arch/x86/include/asm/amd-ibs.h and asm/perf_event.h
 * IBS_CAPS_*): a PERF_SAMPLE_RAW payload of the ibs_op PMU is
 *     u32 caps                       the kernel's ibs_caps (CPUID 8000_001B EAX)
 *     u64 IbsOpCtl    (C001_1033)
 *     u64 IbsOpRip    (C001_1034)
 *     u64 IbsOpData   (C001_1035)
 *     u64 IbsOpData2  (C001_1036)
 *     u64 IbsOpData3  (C001_1037)
 *     u64 IbsDcLinAd  (C001_1038)
 *     u64 IbsDcPhysAd (C001_1039)
 *     u64 IbsBrTarget (C001_103B)    only when caps has BRNTRGT (bit 5)
 *     u64 IbsOpData4  (C001_103D)    only when caps has OPDATA4 (bit 10)
 * The u64s follow the u32 unaligned (at offset 4): read with memcpy.
 *
 * The mapping to ProfileMe (doc/facilities.md §5(d)) is in pm_ibs.c's head
 * comment.
 */
#ifndef HERITAGE_PM_IBS_H
#define HERITAGE_PM_IBS_H

#include <stddef.h>
#include <stdint.h>

#include "profileme/pm_sample.h"

/* caps bits (the kernel's IBS_CAPS_*, asm/perf_event.h) the decoder reads. */
#define PM_IBS_CAPS_AVAIL (1u << 0)
#define PM_IBS_CAPS_BRNTRGT (1u << 5)
#define PM_IBS_CAPS_RIPINVALIDCHK (1u << 7)
#define PM_IBS_CAPS_OPBRNFUSE (1u << 8)
#define PM_IBS_CAPS_OPDATA4 (1u << 10)
#define PM_IBS_CAPS_ZEN4 (1u << 11)
#define PM_IBS_CAPS_OPDTLBPGSIZE (1u << 19)

/* The registers of one op sample, as the payload carried them. */
struct pm_ibs_regs {
	uint32_t caps;
	uint64_t op_ctl, rip, data, data2, data3, dc_lin, dc_phys;
	uint64_t br_target, data4; /* when has_br_target / has_data4 */
	int has_br_target, has_data4;
};

/* Split a raw payload into its registers: 0, or -EINVAL with why (shorter
 * than the caps word, shorter than the registers the caps promise, or
 * IbsOpVal clear: not an op sample).  Bytes past the last register the
 * caps promise (a register a newer kernel appends) are ignored. */
int pm_ibs_parse_raw(const void *raw, size_t len, struct pm_ibs_regs *r, char *why, size_t wlen);

/* What the instruction at a RIP is, for `taken` and `cbrmispredict`: IBS
 * says an op is a retired branch (OpBrnRet) but not whether it is
 * conditional. */
enum pm_ibs_branch {
	PM_IBS_BR_UNKNOWN = 0, /* its bytes could not be read or decoded */
	PM_IBS_BR_COND,        /* jcc, jrcxz, loop/loope/loopne */
	PM_IBS_BR_OTHER,       /* anything else */
};
typedef enum pm_ibs_branch (*pm_ibs_classify_fn)(void *arg, uint64_t rip);

/* The x86-64 conditional branches, from an instruction's first bytes
 * bytes[0..n): legacy prefixes and a REX prefix skipped, then 70-7F (jcc
 * rel8), 0F 80-8F (jcc rel32), E0-E3 (loopne, loope, loop, jrcxz).
 * UNKNOWN when n ends before the opcode. */
enum pm_ibs_branch pm_ibs_x86_branch(const uint8_t *bytes, size_t n);

/* Decode one op sample into out (pc, value, known, counters; tid is the
 * caller's).  why may be NULL (wlen 0): the decoder then makes no libc call
 * that is not async-signal-safe.  classify may be NULL: whether a branch is conditional is then
 * unknown (except for a fused branch or a return, see pm_ibs.c).
 * 0; -EADDRNOTAVAIL with why when IbsOpData's RipInvalid says the PC is
 * not known (the sample is to be dropped: ProfileMe has no sample without a
 * PC); -EINVAL with why for a malformed payload. */
int pm_ibs_decode(const void *raw, size_t len, pm_ibs_classify_fn classify, void *arg, struct pm_sample *out,
                  char *why, size_t wlen);
/* The same from registers already split. */
int pm_ibs_decode_regs(const struct pm_ibs_regs *r, pm_ibs_classify_fn classify, void *arg, struct pm_sample *out,
                       char *why, size_t wlen);

/* The fields the decoder can produce (pm_ibs_ops.fields). */
#define PM_IBS_FIELDS                                                                                        \
	(PM_FIELD_BIT(PM_RETIRED) | PM_FIELD_BIT(PM_TAKEN) | PM_FIELD_BIT(PM_CBRMISPREDICT) |                   \
	 PM_FIELD_BIT(PM_VALID) | PM_FIELD_BIT(PM_NOTRAP) | PM_FIELD_BIT(PM_MISPREDICT) |                        \
	 PM_FIELD_BIT(PM_UNALIGNTRAP) | PM_FIELD_BIT(PM_DTBMISS) | PM_FIELD_BIT(PM_DTB2MISS4) |                  \
	 PM_FIELD_BIT(PM_RETDELAY) | PM_FIELD_BIT(PM_INFLIGHT))
/* Of those, the ones a documented model derives rather than IBS reports
 * (pm_ibs_ops.modelled): the traps x86 does not take (a TLB miss is walked
 * in hardware, a misaligned access is done) stand for the bits that say what
 * happened; notrap and valid are the complement of those; retdelay and
 * inflight approximate other cycle counts (pm_ibs.c).  retired, taken,
 * cbrmispredict and mispredict are what IBS says of the tagged op. */
#define PM_IBS_MODELLED                                                                                      \
	(PM_FIELD_BIT(PM_VALID) | PM_FIELD_BIT(PM_NOTRAP) | PM_FIELD_BIT(PM_UNALIGNTRAP) |                      \
	 PM_FIELD_BIT(PM_DTBMISS) | PM_FIELD_BIT(PM_DTB2MISS4) | PM_FIELD_BIT(PM_RETDELAY) |                    \
	 PM_FIELD_BIT(PM_INFLIGHT))

/* ---- the perf side ------------------------------------------------------------ */

struct perf_event_attr;

/* The attribute for op sampling of the calling thread at period
 * (dispatched ops, a multiple of 16), from the ibs_op PMU directory dir
 * (its type and format/cnt_ctl, format/swfilt): 0, or -ENOTSUP / -EINVAL
 * with why.  *kernel_filtered says whether the kernel drops kernel-mode
 * samples itself (swfilt); when it cannot, the walk drops them. */
int pm_ibs_attr(const char *dir, uint64_t period, struct perf_event_attr *a, int *kernel_filtered, char *why,
                size_t wlen);

/* The period the hardware can take: a multiple of 16 (MaxCnt holds
 * period/16; the kernel refuses a period with low bits set), at least 16.
 * No upper bound: the kernel runs a period above MaxCnt's (2^20 - 16, or
 * 2^27 - 16 with OPCNTEXT) as several hardware periods and samples at the
 * last (ibs.c perf_ibs_set_period). */
uint64_t pm_ibs_round_period(uint64_t period);

/* What a walk of the ring saw. */
struct pm_ibs_walk_stats {
	uint64_t samples;     /* decoded and handed over */
	uint64_t lost;        /* PERF_RECORD_LOST's counts */
	uint64_t rip_invalid; /* dropped: RipInvalid */
	uint64_t kernel;      /* dropped: kernel mode (no swfilt) */
	uint64_t malformed;   /* dropped: payload refused by the decoder */
	uint64_t throttles;   /* PERF_RECORD_THROTTLE: the kernel's sample-rate
	                       * limit stopped sampling for a while (samples
	                       * missed, uncounted) */
};

/* Decode every record of the perf ring at meta (as mmap'ed: the metadata
 * page, then the data area; data_size is the data area's size if the page
 * does not say), sample_type IP|TID|RAW, handing each sample to fn.
 * Advances data_tail.  Returns the samples handed over. */
long pm_ibs_ring_decode(void *meta, uint64_t data_size, pm_ibs_classify_fn classify, void *carg,
                        void (*fn)(void *arg, const struct pm_sample *s), void *arg, struct pm_ibs_walk_stats *st);

struct pm_thread;
/* The backend's start after the probe and the attribute: open a on the
 * calling thread, map its ring (pages data pages; 0: the most the account
 * may lock, of 128, 32, 8), start the thread that empties it as it fills,
 * enable it; t->priv is then the backend's, for drain/stop/release through
 * pm_ibs_ops.  Public so the tests can run the plumbing on a stand-in
 * software event where there is no IBS (its records carry no IBS payload,
 * and count as malformed).  0 or -errno with why. */
int pm_ibs_start_attr(struct pm_thread *t, struct perf_event_attr *a, unsigned pages, char *why, size_t len);
/* What the drains of t have seen so far (zeros before start / after release). */
void pm_ibs_thread_stats(const struct pm_thread *t, struct pm_ibs_walk_stats *st);

/* The classifier the backend uses: the bytes at rip in this process (read
 * with process_vm_readv, so an unmapped RIP is UNKNOWN, never a fault). */
enum pm_ibs_branch pm_ibs_classify_self(void *arg, uint64_t rip);

#endif
