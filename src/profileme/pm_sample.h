/*
 * One ProfileMe sample, as DCPI's dcpiprofileme(1) decomposes it
 * (doc/facilities.md §5(b)): the PC of the tagged instruction, nine bits,
 * exactly one of sixteen trap bits, and two counters.
 *
 * Every bit, trap bit and counter is a *field* with one index space, so a
 * sample set (pm_sampleset.h) is two field masks.  A field a backend cannot
 * produce, or that is undefined for this sample (the man page: `taken` on an
 * instruction that is not a conditional branch, or on one that mispredicted),
 * is left out of `known`: it is unknown, never a made-up 0.  A sample matches
 * a constraint only on a known field, so an unknown `taken` is in neither
 * `taken` nor `!taken`.
 *
 * The trap: exactly one trap bit is set per sample (`trap`).  `notrap` means
 * "none of the traps this backend observes": each backend says which trap
 * bits it observes (pm_collect.h `fields`), and a sample set naming a trap
 * bit the backend does not observe is refused, not answered with 0.
 */
#ifndef HERITAGE_PM_SAMPLE_H
#define HERITAGE_PM_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

enum pm_field {
	/* bits */
	PM_RETIRED,
	PM_TAKEN,
	PM_CBRMISPREDICT,
	PM_VALID,
	PM_NYP,
	PM_LDSTORDER,
	PM_MAP_STALL,
	PM_EARLY_KILL,
	PM_LATE_KILL,
	/* trap bits, PM_TRAP_FIRST + enum pm_trap */
	PM_NOTRAP,
	PM_MISPREDICT,
	PM_REPLAYS,
	PM_UNALIGNTRAP,
	PM_DTBMISS,
	PM_DTB2MISS3,
	PM_DTB2MISS4,
	PM_ITBMISS,
	PM_ARITHTRAP,
	PM_FPDISABLEDTRAP,
	PM_MT_FPCRTRAP,
	PM_DFAULTTRAP,
	PM_IACVTRAP,
	PM_OPCDECTRAP,
	PM_INTERRUPT,
	PM_MCHKTRAP,
	/* counters */
	PM_RETDELAY,
	PM_INFLIGHT,
	PM_NFIELDS
};

#define PM_BIT_FIRST PM_RETIRED
#define PM_NBITS (PM_LATE_KILL + 1)
#define PM_TRAP_FIRST PM_NOTRAP
#define PM_NTRAPS (PM_MCHKTRAP - PM_NOTRAP + 1)
#define PM_COUNTER_FIRST PM_RETDELAY
#define PM_NCOUNTERS (PM_NFIELDS - PM_RETDELAY)

#define PM_FIELD_BIT(f) (1u << (f))
#define PM_BITS_MASK (((1u << PM_NBITS) - 1) << PM_BIT_FIRST)
#define PM_TRAPS_MASK (((1u << PM_NTRAPS) - 1) << PM_TRAP_FIRST)
#define PM_COUNTERS_MASK (((1u << PM_NCOUNTERS) - 1) << PM_COUNTER_FIRST)

enum pm_field_kind { PM_KIND_BIT = 1, PM_KIND_TRAP = 2, PM_KIND_COUNTER = 3 };

struct pm_field_info {
	const char *name; /* as the man page spells it: "retired", "MT_FPCRtrap", "retdelay" */
	enum pm_field_kind kind;
	const char *desc; /* the man page's meaning, in our words */
};

/* Indexed by enum pm_field. */
extern const struct pm_field_info pm_fields[PM_NFIELDS];

/* The field called name (case-sensitive, as DCPI's tools were), or -1. */
int pm_field_from_name(const char *name, size_t len);

struct pm_sample {
	uint64_t pc;
	uint32_t tid;
	/* Values of the bits (PM_FIELD_BIT(PM_RETIRED)...) and of the one trap
	 * bit (PM_FIELD_BIT(PM_TRAP_FIRST + trap)); counters are in counter[]. */
	uint32_t value;
	/* PM_FIELD_BIT(f) for every field defined in this sample. */
	uint32_t known;
	uint32_t counter[PM_NCOUNTERS]; /* [f - PM_COUNTER_FIRST], meaningful when known */
};

/* The sample's trap field (one of PM_NOTRAP..PM_MCHKTRAP), or -1 if the
 * sample carries none (a malformed sample: backends always set one). */
int pm_sample_trap(const struct pm_sample *s);

/* Sets trap field t (PM_NOTRAP...) as the sample's one trap, clearing any
 * other trap value. */
void pm_sample_set_trap(struct pm_sample *s, enum pm_field t);

/* ---- a ring of samples: one producer (a signal handler of the sampled
 * thread, or the backend's drain), one consumer ------------------------------ */
struct pm_ring {
	uint64_t head; /* written by the producer */
	uint64_t tail; /* written by the consumer */
	uint64_t lost; /* samples dropped because the ring was full */
	uint32_t size; /* a power of two */
	struct pm_sample *slot;
};

/* mmap'ed, so a handler never allocates: 0 or -errno. */
int pm_ring_init(struct pm_ring *r, uint32_t size);
/* The CPU time (ns) of thread tid of this process, from any of its
 * threads (the nudger's, pm_collect.c); 0 if it cannot be read. */
uint64_t pm_thread_cpu_ns(int tid);
/* Whether thread tid is on a CPU now: its CPU clock advances by most of a
 * 20 us wait.  A nudge (struct pm_backend_ops.nudge) is sent only then: a
 * signal queued to a thread that is not running is delivered where the
 * scheduler stopped it, and that is no random point of its code (under
 * load, the CPU-time clock read of a spin loop: half the nudged samples
 * there, against none of the timer's). */
int pm_thread_running(int tid);
void pm_ring_free(struct pm_ring *r);
/* Async-signal-safe.  0, or -ENOSPC (counted in lost). */
int pm_ring_push(struct pm_ring *r, const struct pm_sample *s);
/* 1 with *s, or 0 when empty. */
int pm_ring_pop(struct pm_ring *r, struct pm_sample *s);

#endif
