/*
 * rpm_time's clock: the TSC, converted with the anchor of rpm_model.h's
 * struct rpm_tsc_clock, so that a read is an rdtsc and a multiply (no
 * system call, no vDSO call).  Used only where the kernel itself trusts the
 * TSC (constant_tsc, nonstop_tsc, clocksource tsc); otherwise, or with
 * PAPI_HERITAGE_PARAGON_RPM_CLOCK=vdso, CLOCK_BOOTTIME directly.
 *
 * Readers never wait: the anchor is kept twice (a latch, as the kernel's
 * timekeeping does), the writer updating one copy while readers use the
 * other, and a reader retries only if the sequence moved during its read.
 * One thread at a time re-anchors (a trylock; the others extrapolate from the
 * current anchor), so a signal handler that reads the clock while its thread
 * is re-anchoring neither waits nor deadlocks.  A per-thread last value makes
 * one thread's readings monotonic even if another thread was preempted in
 * the middle of publishing an anchor.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "common/heritage_env.h"
#include "paragon/rpm_clock.h"
#include "paragon/rpm_page.h"

enum { MODE_UNSET, MODE_VDSO, MODE_TSC };

static struct {
	atomic_int mode;
	atomic_uint seq;
	atomic_flag writer;
	struct rpm_tsc_clock c[2];
} K = { .writer = ATOMIC_FLAG_INIT };

static __thread uint64_t last_ns __attribute__((tls_model("initial-exec")));

uint64_t rpm_clock_boottime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Does /proc/cpuinfo list both flags, and does the kernel keep time with
 * the TSC (it would not if it had found it unstable)? */
static int tsc_trusted(void)
{
	char line[4096];
	int constant = 0, nonstop = 0, clocksource = 0;
	FILE *f = fopen("/proc/cpuinfo", "re");
	if (f) {
		while (fgets(line, sizeof line, f))
			if (strncmp(line, "flags", 5) == 0) {
				constant = strstr(line, " constant_tsc") != NULL;
				nonstop = strstr(line, " nonstop_tsc") != NULL;
				break;
			}
		fclose(f);
	}
	f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (f) {
		clocksource = fgets(line, sizeof line, f) && strncmp(line, "tsc\n", 4) == 0;
		fclose(f);
	}
	return constant && nonstop && clocksource;
}

/* One TSC reading matched to CLOCK_BOOTTIME: the TSC read between two clock
 * reads, at their midpoint.  A pair whose clock reads lie further apart than
 * RPM_TSC_BRACKET_NS was split by preemption or a vCPU stall and is refused:
 * an anchor from it would be off by up to the stall (a first slope measured
 * across a stall made rpm_time run 1.4 s ahead under load, and the
 * never-backwards rule kept it there). */
static int tsc_pair(uint64_t *tsc, uint64_t *ns)
{
	for (int tries = 0; tries < 100; tries++) {
		uint64_t n0 = rpm_clock_boottime_ns(), t = __rdtsc(), n1 = rpm_clock_boottime_ns();
		if (n1 - n0 <= RPM_TSC_BRACKET_NS) {
			*tsc = t;
			*ns = n0 + (n1 - n0) / 2;
			return 0;
		}
	}
	return -1;
}

/* Cold paths are kept out of line: inlined, their registers and stack frame
 * would be saved and restored on every read (measured: a third of the read). */
__attribute__((noinline, cold)) static int choose_mode(void)
{
	const char *v = heritage_env("PARAGON_RPM", "CLOCK");
	if ((v && strcmp(v, "vdso") == 0) || !tsc_trusted())
		return MODE_VDSO;
	/* The first slope from 200 us between two clean pairs: good to ~1e-5,
	 * plenty for the first 100 us interval; later anchors measure it over
	 * longer.  No clean pair in 100 tries: the clock itself is unusable
	 * for this, read CLOCK_BOOTTIME. */
	uint64_t t0, n0, t1, n1;
	if (tsc_pair(&t0, &n0) != 0)
		return MODE_VDSO;
	while (rpm_clock_boottime_ns() - n0 < RPM_TSC_FIRST_SLOPE_NS)
		;
	if (tsc_pair(&t1, &n1) != 0)
		return MODE_VDSO;
	struct rpm_tsc_clock c;
	if (rpm_tsc_clock_init(&c, t0, n0, t1, n1) != 0)
		return MODE_VDSO;
	if (atomic_flag_test_and_set_explicit(&K.writer, memory_order_acquire))
		return MODE_UNSET; /* another thread is initialising: let it */
	K.c[0] = K.c[1] = c;
	atomic_flag_clear_explicit(&K.writer, memory_order_release);
	return MODE_TSC;
}

/* 1 if it re-anchored, 0 if another thread (or this one, under a signal
 * handler) is at it: the current anchor still holds for a while. */
__attribute__((noinline, cold)) static int reanchor(void)
{
	if (atomic_flag_test_and_set_explicit(&K.writer, memory_order_acquire))
		return 0;
	unsigned s = atomic_load_explicit(&K.seq, memory_order_relaxed);
	struct rpm_tsc_clock c = K.c[s & 1];
	uint64_t t, ns;
	if (tsc_pair(&t, &ns) != 0) {
		/* Stalled every time: extrapolate a while longer, try again later. */
		atomic_flag_clear_explicit(&K.writer, memory_order_release);
		return 0;
	}
	rpm_tsc_clock_anchor(&c, t, ns);
	/* The latch: readers move to the other copy while this one changes. */
	atomic_store_explicit(&K.seq, s + 1, memory_order_release);
	atomic_thread_fence(memory_order_release);
	K.c[s & 1] = c;
	atomic_store_explicit(&K.seq, s + 2, memory_order_release);
	atomic_thread_fence(memory_order_release);
	K.c[(s + 1) & 1] = c;
	atomic_flag_clear_explicit(&K.writer, memory_order_release);
	return 1;
}

/* A reading's last step: per thread, never behind the previous one. */
static inline __attribute__((always_inline)) uint64_t monotonic(uint64_t ns)
{
	if (__builtin_expect(ns < last_ns, 0))
		ns = last_ns;
	last_ns = ns;
	return ns;
}

/* One read against the anchor the latch shows now: 1 if the latch did not
 * move meanwhile (*ns holds), and *due says whether that anchor is old. */
static inline __attribute__((always_inline)) int read_anchor(uint64_t *ns, int *due)
{
	unsigned s = atomic_load_explicit(&K.seq, memory_order_acquire);
	const struct rpm_tsc_clock *c = &K.c[s & 1];
	uint64_t t = __rdtsc();
	*due = rpm_tsc_clock_due(c, t);
	*ns = rpm_tsc_clock_ns(c, t);
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&K.seq, memory_order_relaxed) == s;
}

/* Everything but the common case: the first read, the vDSO mode, an anchor
 * that is due, a writer that moved the latch. */
__attribute__((noinline)) static uint64_t clock_ns_slow(void)
{
	int mode = atomic_load_explicit(&K.mode, memory_order_relaxed);
	if (__builtin_expect(mode != MODE_TSC, 0)) {
		if (mode == MODE_UNSET) {
			mode = choose_mode();
			if (mode != MODE_UNSET)
				atomic_store_explicit(&K.mode, mode, memory_order_release);
		}
		if (mode != MODE_TSC)
			return rpm_clock_boottime_ns();
	}
	uint64_t ns;
	int due;
	while (!read_anchor(&ns, &due) || (due && reanchor()))
		;
	return monotonic(ns);
}

uint64_t rpm_clock_ns(void)
{
	/* The common case once, with nothing live across a call, so that it
	 * needs no saved registers; any doubt goes the long way. */
	uint64_t ns;
	int due;
	if (__builtin_expect(atomic_load_explicit(&K.mode, memory_order_relaxed) == MODE_TSC, 1) &&
	    __builtin_expect(read_anchor(&ns, &due) && !due, 1))
		return monotonic(ns);
	return clock_ns_slow();
}

const char *rpm_clock_source(void)
{
	(void)rpm_clock_ns();
	return atomic_load(&K.mode) == MODE_TSC ? "tsc" : "vdso";
}

/* Here rather than in rpm_page.c so that PAPI_read of rpm_time is one call
 * deep into the clock (the compiler inlines rpm_clock_ns). */
uint64_t rpm_now_ticks(void)
{
	return rpm_ticks_from_ns(rpm_clock_ns());
}
