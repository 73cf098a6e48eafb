/*
 * The clock behind rpm_time and dclock(): CLOCK_BOOTTIME, read through the
 * TSC where the kernel trusts it (rpm_clock.c says how, rpm_model.h what it
 * guarantees).
 */
#ifndef HERITAGE_RPM_CLOCK_H
#define HERITAGE_RPM_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <x86intrin.h>

#include "paragon/rpm_model.h"

/* rpm_time's count (10 MHz ticks since boot, 56 bits), never backwards
 * within a thread, within ~10 us of CLOCK_BOOTTIME.  Async-signal-safe once
 * initialised (the first call, made by base_init() in rpm_page.c, reads
 * /proc/cpuinfo and calibrates). */
uint64_t rpm_now_ticks(void);
/* CLOCK_BOOTTIME itself. */
uint64_t rpm_clock_boottime_ns(void);
/* "tsc" or "vdso": which one rpm_now_ticks() reads. */
const char *rpm_clock_source(void);

/* ---- the read's fast path -------------------------------------------------
 * Inline, so that PAPI_read of rpm_time makes no call below the component's
 * read: with PAPI's own part 8 ns and rdtsc 8.5 ns, each of the three calls
 * it used to go through showed, as does every instruction between rdtsc and
 * the value (rpm_model.h's struct rpm_tsc_clock).  The state is
 * rpm_clock.c's; only rpm_clock.c writes it. */
enum { RPM_CLOCK_UNSET, RPM_CLOCK_VDSO, RPM_CLOCK_TSC };
struct rpm_clock_state {
	atomic_int mode;
	atomic_uint seq;
	atomic_flag writer;
	struct rpm_tsc_clock c[2] __attribute__((aligned(64)));
};
extern struct rpm_clock_state rpm_clock_state __attribute__((visibility("hidden")));

/* A copy of the latch may be rewritten while a reader reads it (the
 * sequence then sends the reader round again), so every field is loaded and
 * stored atomically: a torn copy is a race the sequence detects, not
 * undefined behaviour (ThreadSanitizer reported the plain copies, make
 * check-tsan, test_rpm_clock).  Relaxed: plain moves on x86-64. */
#define RPM_CLOCK_LATCH_FIELDS(X) X(tsc_base) X(interval) X(tick_mult) X(tick_frac) X(tick_base) X(ns_base) \
	X(tsc0) X(ns0) X(mult) X(rate) X(interval_ns)
_Static_assert(sizeof(struct rpm_tsc_clock) == 11 * sizeof(uint64_t), "RPM_CLOCK_LATCH_FIELDS names every field");
static inline void rpm_clock_latch_load(struct rpm_tsc_clock *to, const struct rpm_tsc_clock *from)
{
#define RPM_CLOCK_LOAD(f) to->f = __atomic_load_n(&from->f, __ATOMIC_RELAXED);
	RPM_CLOCK_LATCH_FIELDS(RPM_CLOCK_LOAD)
#undef RPM_CLOCK_LOAD
}
static inline void rpm_clock_latch_store(struct rpm_tsc_clock *to, const struct rpm_tsc_clock *from)
{
#define RPM_CLOCK_STORE(f) __atomic_store_n(&to->f, from->f, __ATOMIC_RELAXED);
	RPM_CLOCK_LATCH_FIELDS(RPM_CLOCK_STORE)
#undef RPM_CLOCK_STORE
}
extern __thread uint64_t rpm_clock_last_ticks __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* A reading's last step: per thread, never behind the previous one. */
static inline __attribute__((always_inline)) uint64_t rpm_clock_monotonic(uint64_t ticks)
{
	if (__builtin_expect(ticks < rpm_clock_last_ticks, 0))
		ticks = rpm_clock_last_ticks;
	rpm_clock_last_ticks = ticks;
	return ticks;
}

/* The common case, or 0 if any doubt (the first read, the vDSO mode, an
 * anchor that is due, a TSC behind the anchor, a writer that moved the
 * latch): then the caller goes the long way, rpm_now_ticks() or a slow path
 * of its own that calls it.  Keeping that call out of the caller's fast
 * path (nothing live across it) spares the fast path saving and restoring
 * registers. */
static inline __attribute__((always_inline)) int rpm_clock_try_ticks(uint64_t *ticks)
{
	if (__builtin_expect(atomic_load_explicit(&rpm_clock_state.mode, memory_order_relaxed) != RPM_CLOCK_TSC, 0))
		return 0;
	unsigned s = atomic_load_explicit(&rpm_clock_state.seq, memory_order_acquire);
	const struct rpm_tsc_clock *c = &rpm_clock_state.c[s & 1];
	struct rpm_tsc_clock r; /* the fields a read needs (rpm_clock_latch_load says why atomic) */
	r.tsc_base = __atomic_load_n(&c->tsc_base, __ATOMIC_RELAXED);
	r.interval = __atomic_load_n(&c->interval, __ATOMIC_RELAXED);
	uint64_t d = __rdtsc() - r.tsc_base;
	if (__builtin_expect(d >= r.interval, 0)) /* due, or behind (wrapped) */
		return 0;
	r.tick_mult = __atomic_load_n(&c->tick_mult, __ATOMIC_RELAXED);
	r.tick_frac = __atomic_load_n(&c->tick_frac, __ATOMIC_RELAXED);
	r.tick_base = __atomic_load_n(&c->tick_base, __ATOMIC_RELAXED);
	uint64_t t = rpm_tsc_clock_ticks_after(&r, d);
	atomic_thread_fence(memory_order_acquire);
	if (__builtin_expect(atomic_load_explicit(&rpm_clock_state.seq, memory_order_relaxed) != s, 0))
		return 0;
	*ticks = rpm_clock_monotonic(t);
	return 1;
}

#endif
