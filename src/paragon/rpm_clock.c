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

struct rpm_clock_state rpm_clock_state = { .writer = ATOMIC_FLAG_INIT };
__thread uint64_t rpm_clock_last_ticks __attribute__((tls_model("initial-exec")));

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
		return RPM_CLOCK_VDSO;
	/* The first slope from 200 us between two clean pairs: good to ~1e-5,
	 * plenty for the first 100 us interval; later anchors measure it over
	 * longer.  No clean pair in 100 tries: the clock itself is unusable
	 * for this, read CLOCK_BOOTTIME. */
	uint64_t t0, n0, t1, n1;
	if (tsc_pair(&t0, &n0) != 0)
		return RPM_CLOCK_VDSO;
	while (rpm_clock_boottime_ns() - n0 < RPM_TSC_FIRST_SLOPE_NS)
		;
	if (tsc_pair(&t1, &n1) != 0)
		return RPM_CLOCK_VDSO;
	struct rpm_tsc_clock c;
	if (rpm_tsc_clock_init(&c, t0, n0, t1, n1) != 0)
		return RPM_CLOCK_VDSO;
	if (atomic_flag_test_and_set_explicit(&rpm_clock_state.writer, memory_order_acquire))
		return RPM_CLOCK_UNSET; /* another thread is initialising: let it */
	rpm_clock_latch_store(&rpm_clock_state.c[0], &c);
	rpm_clock_latch_store(&rpm_clock_state.c[1], &c);
	atomic_flag_clear_explicit(&rpm_clock_state.writer, memory_order_release);
	return RPM_CLOCK_TSC;
}

/* 1 if it re-anchored, 0 if another thread (or this one, under a signal
 * handler) is at it: the current anchor still holds for a while. */
__attribute__((noinline, cold)) static int reanchor(void)
{
	if (atomic_flag_test_and_set_explicit(&rpm_clock_state.writer, memory_order_acquire))
		return 0;
	unsigned s = atomic_load_explicit(&rpm_clock_state.seq, memory_order_relaxed);
	struct rpm_tsc_clock c;
	rpm_clock_latch_load(&c, &rpm_clock_state.c[s & 1]);
	uint64_t t, ns;
	if (tsc_pair(&t, &ns) != 0) {
		/* Stalled every time: extrapolate a while longer, try again later. */
		atomic_flag_clear_explicit(&rpm_clock_state.writer, memory_order_release);
		return 0;
	}
	rpm_tsc_clock_anchor(&c, t, ns);
	/* The latch: readers move to the other copy while this one changes. */
	atomic_store_explicit(&rpm_clock_state.seq, s + 1, memory_order_release);
	atomic_thread_fence(memory_order_release);
	rpm_clock_latch_store(&rpm_clock_state.c[s & 1], &c);
	atomic_store_explicit(&rpm_clock_state.seq, s + 2, memory_order_release);
	atomic_thread_fence(memory_order_release);
	rpm_clock_latch_store(&rpm_clock_state.c[(s + 1) & 1], &c);
	atomic_flag_clear_explicit(&rpm_clock_state.writer, memory_order_release);
	return 1;
}

/* Everything the fast path declines. */
uint64_t rpm_now_ticks(void)
{
	uint64_t ticks;
	if (rpm_clock_try_ticks(&ticks))
		return ticks;
	int mode = atomic_load_explicit(&rpm_clock_state.mode, memory_order_relaxed);
	if (mode != RPM_CLOCK_TSC) {
		if (mode == RPM_CLOCK_UNSET) {
			mode = choose_mode();
			if (mode != RPM_CLOCK_UNSET)
				atomic_store_explicit(&rpm_clock_state.mode, mode, memory_order_release);
		}
		if (mode != RPM_CLOCK_TSC)
			return rpm_clock_monotonic(rpm_ticks_from_ns(rpm_clock_boottime_ns()));
	}
	for (;;) {
		unsigned s = atomic_load_explicit(&rpm_clock_state.seq, memory_order_acquire);
		struct rpm_tsc_clock c;
		rpm_clock_latch_load(&c, &rpm_clock_state.c[s & 1]);
		uint64_t tsc = __rdtsc();
		int due = rpm_tsc_clock_due(&c, tsc);
		ticks = rpm_tsc_clock_ticks(&c, tsc);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&rpm_clock_state.seq, memory_order_relaxed) != s)
			continue; /* a writer moved the latch */
		/* Due but another thread (or this one, under a signal handler)
		 * is re-anchoring: the current anchor still holds for a while. */
		if (!due || !reanchor())
			return rpm_clock_monotonic(ticks);
	}
}

const char *rpm_clock_source(void)
{
	(void)rpm_now_ticks();
	return atomic_load(&rpm_clock_state.mode) == RPM_CLOCK_TSC ? "tsc" : "vdso";
}
