/*
 * Unit tests of src/itanium2/it2_set.c: PAPI_set_opt(PAPI_DATA_ADDRESS /
 * PAPI_INSTR_ADDRESS) and the event list of one itanium2 event set, its
 * mode, its start/read/reset/stop and who may call them.  Expected offsets
 * come from the Itanium debug-register arithmetic (a naturally aligned
 * power-of-two block is matched exactly; IBRs compare 16-byte bundles),
 * CPU_CYCLES from the modelled 1.6 GHz Itanium 2 ("Madison"): 1600 cycles
 * per microsecond of the thread's CPU time.  Counting through a watch
 * backend asks the probe and prints why it skips.
 */
#include <check.h>
#include <signal.h>
#include <stdatomic.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "common/heritage_backend.h"
#include "common/heritage_error.h"
#include "itanium2/it2_set.h"
#include "env_test.h"

#define EXACT1(id) ((unsigned)(id) | IT2_CODE_EXACT_SET | IT2_CODE_EXACT_ON)
#define EXACT0(id) ((unsigned)(id) | IT2_CODE_EXACT_SET)

static void clean_env(void)
{
	env_unset("PAPI_HERITAGE_ITANIUM2_MODE");
	env_unset("PAPI_HERITAGE_ITANIUM2_BACKEND");
}

static void init(struct it2_set *s)
{
	clean_env();
	ck_assert_int_eq(it2_set_init(s), 0);
}

/* 64 KiB of its own, 64 KiB-aligned, inside a larger mapping so that
 * covers reaching past it stay on mapped memory. */
static uintptr_t region(void)
{
	size_t len = 4 * 65536;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	return ((uintptr_t)p + 65536 + 65535) & ~(uintptr_t)65535;
}

#define ASSERT_ERROR(text) ck_assert_msg(strstr(heritage_last_error(), text) != NULL, "message: %s", heritage_last_error())

/* ---- mode ----------------------------------------------------------------- */

START_TEST(init_reads_the_mode)
{
	struct it2_set s;

	init(&s);
	ck_assert_int_eq(s.default_mode, RANGEMAP_COARSE);
	ck_assert_int_eq(it2_set_mode(&s), RANGEMAP_COARSE);
	env_set("PAPI_HERITAGE_ITANIUM2_MODE", "EXACT", 1);
	ck_assert_int_eq(it2_set_init(&s), 0);
	ck_assert_int_eq(it2_set_mode(&s), RANGEMAP_EXACT);
	env_set("PAPI_HERITAGE_ITANIUM2_MODE", "Coarse", 1);
	ck_assert_int_eq(it2_set_init(&s), 0);
	ck_assert_int_eq(it2_set_mode(&s), RANGEMAP_COARSE);

	/* A bad value: refused at init, and PAPI_start says so again. */
	env_set("PAPI_HERITAGE_ITANIUM2_MODE", "fine", 1);
	ck_assert_int_eq(it2_set_init(&s), -EINVAL);
	ck_assert_str_eq(heritage_last_error(), "PAPI_HERITAGE_ITANIUM2_MODE=fine: expected 'coarse' or 'exact'");
	ck_assert_int_eq(it2_set_mode(&s), RANGEMAP_COARSE);
	unsigned cycles = IT2_CPU_CYCLES;
	ck_assert_int_eq(it2_set_events(&s, &cycles, 1), 0);
	heritage_clear_error();
	ck_assert_int_eq(it2_set_start(&s), -EINVAL);
	ck_assert_str_eq(heritage_last_error(), "PAPI_HERITAGE_ITANIUM2_MODE=fine: expected 'coarse' or 'exact'");
	ck_assert_int_eq(s.running, 0);
	clean_env();
}
END_TEST

START_TEST(events_are_checked_and_carry_the_mode)
{
	struct it2_set s;
	unsigned codes[IT2_MAX_EVENTS + 1];

	init(&s);
	for (unsigned i = 0; i <= IT2_MAX_EVENTS; i++)
		codes[i] = IT2_LOADS_RETIRED;
	ck_assert_int_eq(it2_set_events(&s, codes, IT2_MAX_EVENTS + 1), -ENOSPC);
	ck_assert_int_eq(it2_set_events(&s, codes, IT2_MAX_EVENTS), 0);
	ck_assert_uint_eq(s.nevents, IT2_MAX_EVENTS);

	codes[0] = IT2_NEVENTS;
	ck_assert_int_eq(it2_set_events(&s, codes, 1), -ENOENT);
	codes[0] = IT2_CODE_INDEX_MASK;
	ck_assert_int_eq(it2_set_events(&s, codes, 1), -ENOENT);

	/* The mode belongs to the set: :exact=0 and :exact=1 cannot mix, and
	 * a refused list leaves the old one. */
	unsigned mixed[] = { EXACT1(IT2_LOADS_RETIRED), IT2_STORES_RETIRED, EXACT0(IT2_STORES_RETIRED) };
	ck_assert_int_eq(it2_set_events(&s, mixed, 3), -EBUSY);
	ASSERT_ERROR(":exact=0 and :exact=1 cannot share an event set");
	ck_assert_uint_eq(s.nevents, IT2_MAX_EVENTS);

	ck_assert_int_eq(it2_set_events(&s, mixed, 2), 0);
	ck_assert_int_eq(it2_set_mode(&s), RANGEMAP_EXACT);
	unsigned coarse[] = { IT2_LOADS_RETIRED, EXACT0(IT2_STORES_RETIRED) };
	env_set("PAPI_HERITAGE_ITANIUM2_MODE", "exact", 1);
	ck_assert_int_eq(it2_set_init(&s), 0);
	ck_assert_int_eq(it2_set_events(&s, coarse, 2), 0);
	ck_assert_int_eq(it2_set_mode(&s), RANGEMAP_COARSE); /* the qualifier beats the environment */
	ck_assert_int_eq(it2_set_events(&s, coarse, 1), 0);
	ck_assert_int_eq(it2_set_mode(&s), RANGEMAP_EXACT);  /* unqualified: the environment's */
	clean_env();
}
END_TEST

START_TEST(each_event_reads_its_counter)
{
	struct it2_set s;
	const unsigned codes[] = { IT2_STORES_RETIRED, IT2_LOADS_RETIRED, IT2_MISALIGNED_LOADS_RETIRED,
		                   IT2_MISALIGNED_STORES_RETIRED, IT2_IA64_INST_RETIRED, IT2_TAGGED_IBRP0_PMC8,
		                   IT2_TAGGED_IBRP1_PMC9, IT2_TAGGED_IBRP2_PMC8, IT2_TAGGED_IBRP3_PMC9 };
	const unsigned char want[] = { WATCH_FIELD_STORES, WATCH_FIELD_LOADS, WATCH_FIELD_MISALIGNED_LOADS,
		                       WATCH_FIELD_MISALIGNED_STORES, WATCH_FIELD_INSNS, WATCH_FIELD_INSNS_PAIR0,
		                       WATCH_FIELD_INSNS_PAIR0 + 1, WATCH_FIELD_INSNS_PAIR0 + 2,
		                       WATCH_FIELD_INSNS_PAIR0 + 3 };

	init(&s);
	ck_assert_int_eq(it2_set_events(&s, codes, 9), 0);
	for (unsigned i = 0; i < 9; i++)
		ck_assert_msg(s.field[i] == want[i], "event %u reads field %u", i, s.field[i]);
	ck_assert_int_eq(s.has_cycles, 0);
	unsigned with_cycles[] = { IT2_LOADS_RETIRED, IT2_CPU_CYCLES };
	ck_assert_int_eq(it2_set_events(&s, with_cycles, 2), 0);
	ck_assert_int_eq(s.has_cycles, 1);
}
END_TEST

/* ---- ranges --------------------------------------------------------------- */

START_TEST(bad_ranges_are_refused_with_a_reason)
{
	struct it2_set s;
	uintptr_t r = region();
	int so = -1, eo = -1;

	init(&s);
	unsigned loads = IT2_LOADS_RETIRED;
	ck_assert_int_eq(it2_set_events(&s, &loads, 1), 0);

	ck_assert_int_eq(it2_set_range(&s, 0, r + 64, r + 64, 0, 0, &so, &eo), -EINVAL);
	ASSERT_ERROR("PAPI_DATA_ADDRESS: start");
	ASSERT_ERROR("must be below end");
	ck_assert_int_eq(so, 0);
	ck_assert_int_eq(eo, 0);
	ck_assert_int_eq(it2_set_range(&s, 1, r + 64, r + 32, 0, 0, &so, &eo), -EINVAL);
	ASSERT_ERROR("PAPI_INSTR_ADDRESS: start");

	/* A hole in the middle. */
	ck_assert_int_eq(munmap((void *)(r + 8192), 4096), 0);
	ck_assert_int_eq(it2_set_range(&s, 0, r, r + 3 * 4096, 0, 0, &so, &eo), -EINVAL);
	ASSERT_ERROR("is not (entirely) mapped in this process");

	/* The caller's own state (PAPI's control state). */
	ck_assert_int_eq(it2_set_range(&s, 0, r, r + 4096, r + 100, r + 108, &so, &eo), -EINVAL);
	ASSERT_ERROR("overlaps the event set's own state");
	/* State next to the range is fine: [r+16, r+20) is one naturally
	 * aligned 4-byte block, so its coarse cover is itself. */
	ck_assert_int_eq(it2_set_range(&s, 0, r + 16, r + 20, r + 32, r + 40, &so, &eo), 0);

	/* libheritage's own code: counting there would trap the counter. */
	uintptr_t code = (uintptr_t)&it2_set_range;
	ck_assert_int_eq(it2_set_range(&s, 0, code, code + 16, 0, 0, &so, &eo), -EINVAL);
	ASSERT_ERROR("libpapi's own code or data");

	unsigned cycles[] = { IT2_CPU_CYCLES };
	it2_set_drop_ranges(&s);
	ck_assert_int_eq(it2_set_events(&s, cycles, 1), 0);
	ck_assert_int_eq(it2_set_range(&s, 0, r, r + 8, 0, 0, &so, &eo), -EINVAL);
	ASSERT_ERROR("CPU_CYCLES cannot be range-restricted");
	ck_assert_int_eq(s.drange.set, 0);
}
END_TEST

START_TEST(offsets_follow_the_debug_register_arithmetic)
{
	struct it2_set s;
	uintptr_t r = region();
	int so = -1, eo = -1;

	init(&s);
	unsigned loads = IT2_LOADS_RETIRED;
	ck_assert_int_eq(it2_set_events(&s, &loads, 1), 0);

	/* Coarse: one naturally aligned 4 KiB block is one DBR pair, exact. */
	ck_assert_int_eq(it2_set_range(&s, 0, r + 4096, r + 8192, 0, 0, &so, &eo), 0);
	ck_assert_int_eq(so, 0);
	ck_assert_int_eq(eo, 0);
	ck_assert_int_eq(s.drange.set, 1);
	ck_assert_uint_eq(s.drange.start, r + 4096);
	ck_assert_uint_eq(s.drange.end, r + 8192);
	ck_assert_int_eq(s.range_mode, RANGEMAP_COARSE);

	/* [r+1, r+4095) needs 22 aligned blocks to be exact; four pairs
	 * cannot, so the cover is wider. */
	ck_assert_int_eq(it2_set_range(&s, 0, r + 1, r + 4095, 0, 0, &so, &eo), 0);
	ck_assert_int_gt(so + eo, 0);
	ck_assert_int_ge(so, 0);
	ck_assert_int_ge(eo, 0);

	/* Exact (:exact=1): the request itself, offsets 0. */
	unsigned exact = EXACT1(IT2_LOADS_RETIRED);
	it2_set_drop_ranges(&s);
	ck_assert_int_eq(it2_set_events(&s, &exact, 1), 0);
	ck_assert_int_eq(it2_set_range(&s, 0, r + 1, r + 4095, 0, 0, &so, &eo), 0);
	ck_assert_int_eq(so, 0);
	ck_assert_int_eq(eo, 0);
	ck_assert_int_eq(s.range_mode, RANGEMAP_EXACT);

	/* Instructions, coarse: IBRs compare whole 16-byte bundles, so the
	 * cover starts and ends on a bundle and holds the request. */
	unsigned insns = IT2_IA64_INST_RETIRED;
	it2_set_drop_ranges(&s);
	ck_assert_int_eq(it2_set_events(&s, &insns, 1), 0);
	ck_assert_int_eq(it2_set_range(&s, 1, r + 3, r + 40, 0, 0, &so, &eo), 0);
	ck_assert_int_ge(so, 3);
	ck_assert_int_ge(eo, 8);
	ck_assert_uint_eq((r + 3 - (uintptr_t)so) % 16, 0);
	ck_assert_uint_eq((r + 40 + (uintptr_t)eo) % 16, 0);
	ck_assert_int_eq(s.irange.set, 1);
}
END_TEST

START_TEST(a_mapped_range_fixes_the_mode_and_keeps_cycles_out)
{
	struct it2_set s;
	uintptr_t r = region();
	int so, eo;

	init(&s);
	unsigned loads = IT2_LOADS_RETIRED;
	ck_assert_int_eq(it2_set_events(&s, &loads, 1), 0);
	ck_assert_int_eq(it2_set_range(&s, 0, r, r + 64, 0, 0, &so, &eo), 0);
	ck_assert_int_eq(it2_set_mode(&s), RANGEMAP_COARSE);

	/* Events added after PAPI_set_opt cannot change the mode the range
	 * was mapped in, and CPU_CYCLES cannot join. */
	unsigned exact[] = { IT2_LOADS_RETIRED, EXACT1(IT2_STORES_RETIRED) };
	ck_assert_int_eq(it2_set_events(&s, exact, 2), -EBUSY);
	ASSERT_ERROR("the set's range was mapped in coarse mode; add :exact=1 events");
	unsigned same[] = { IT2_LOADS_RETIRED, EXACT0(IT2_STORES_RETIRED) };
	ck_assert_int_eq(it2_set_events(&s, same, 2), 0);
	unsigned cycles[] = { IT2_LOADS_RETIRED, IT2_CPU_CYCLES };
	ck_assert_int_eq(it2_set_events(&s, cycles, 2), -EBUSY);
	ASSERT_ERROR("CPU_CYCLES cannot join a range-restricted event set");
	ck_assert_uint_eq(s.nevents, 2);

	/* Dropping the ranges (PAPI_cleanup_eventset) frees both. */
	it2_set_drop_ranges(&s);
	ck_assert_int_eq(s.drange.set, 0);
	ck_assert_int_eq(s.irange.set, 0);
	ck_assert_int_eq(it2_set_events(&s, exact, 2), 0);
	ck_assert_int_eq(it2_set_mode(&s), RANGEMAP_EXACT);
	ck_assert_int_eq(it2_set_events(&s, cycles, 2), 0);
}
END_TEST

/* ---- start, read, reset, stop --------------------------------------------- */

START_TEST(start_refuses_what_it_cannot_count)
{
	struct it2_set s;

	init(&s);
	unsigned insns = IT2_IA64_INST_RETIRED;
	ck_assert_int_eq(it2_set_events(&s, &insns, 1), 0);
	ck_assert_int_eq(it2_set_start(&s), -ENOTSUP);
	ASSERT_ERROR("instruction events count only inside an instruction range");
	ck_assert_int_eq(s.running, 0);

	unsigned loads = IT2_LOADS_RETIRED;
	ck_assert_int_eq(it2_set_events(&s, &loads, 1), 0);
	env_set("PAPI_HERITAGE_ITANIUM2_BACKEND", "debugreg", 1);
	ck_assert_int_eq(it2_set_start(&s), -EINVAL);
	ck_assert_str_eq(heritage_last_error(), "PAPI_HERITAGE_ITANIUM2_BACKEND=debugreg: expected auto, instrument, "
	                                        "breakpoint or pagetrap");
	/* All memory, forced onto a backend that needs ranges. */
	env_set("PAPI_HERITAGE_ITANIUM2_BACKEND", "breakpoint", 1);
	ck_assert_int_lt(it2_set_start(&s), 0);
	ASSERT_ERROR("itanium2: PAPI_HERITAGE_ITANIUM2_BACKEND=breakpoint: ");
	ck_assert_int_eq(s.running, 0);
	clean_env();
}
END_TEST

static uint64_t thread_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void burn(uint64_t ns)
{
	uint64_t until = thread_ns() + ns;
	while (thread_ns() < until)
		;
}

/* 1.6 GHz: 8 cycles every 5 ns. */
#define CYCLES(ns) ((long long)((ns) * 8 / 5))

START_TEST(cpu_cycles_are_the_threads_cpu_time_at_1600_mhz)
{
	struct it2_set s;
	unsigned cycles[] = { IT2_CPU_CYCLES };

	init(&s);
	ck_assert_int_eq(it2_set_events(&s, cycles, 1), 0);
	uint64_t t0 = thread_ns();
	ck_assert_int_eq(it2_set_start(&s), 0);
	uint64_t t1 = thread_ns();
	ck_assert_int_eq(s.running, 1);
	burn(20000000);
	uint64_t t2 = thread_ns();
	ck_assert_int_eq(it2_set_read(&s), 0);
	uint64_t t3 = thread_ns();
	/* Counted: at least [t1, t2], at most [t0, t3]. */
	ck_assert_int_ge(s.values[0], CYCLES(t2 - t1) - 1);
	ck_assert_int_le(s.values[0], CYCLES(t3 - t0) + 1);

	ck_assert_int_eq(it2_set_stop(&s), 0);
	uint64_t t4 = thread_ns();
	ck_assert_int_eq(s.running, 0);
	long long at_stop = s.values[0];
	/* A read after the stop has the stop's own last moments too. */
	ck_assert_int_eq(it2_set_read(&s), 0);
	long long stopped = s.values[0];
	ck_assert_int_ge(stopped, at_stop);
	ck_assert_int_le(stopped, CYCLES(t4 - t0) + 1);
	burn(5000000);
	ck_assert_int_eq(it2_set_read(&s), 0);
	ck_assert_int_eq(s.values[0], stopped); /* stopped: no longer counts */
	ck_assert_int_eq(it2_set_stop(&s), 0);  /* a second stop is harmless */

	/* PAPI_start counts from zero again. */
	t0 = thread_ns();
	ck_assert_int_eq(it2_set_start(&s), 0);
	ck_assert_int_eq(it2_set_read(&s), 0);
	t1 = thread_ns();
	ck_assert_int_le(s.values[0], CYCLES(t1 - t0) + 1);
	/* Reset while running: from zero at the reset. */
	burn(5000000);
	t0 = thread_ns();
	ck_assert_int_eq(it2_set_reset(&s), 0);
	ck_assert_int_eq(it2_set_read(&s), 0);
	t1 = thread_ns();
	ck_assert_int_le(s.values[0], CYCLES(t1 - t0) + 1);
	ck_assert_int_eq(it2_set_stop(&s), 0);
	ck_assert_int_eq(it2_set_reset(&s), 0);
	ck_assert_int_eq(it2_set_read(&s), 0);
	ck_assert_int_eq(s.values[0], 0);
}
END_TEST

struct foreign {
	struct it2_set *s;
	int read, reset, stop;
};

static void *from_another_thread(void *arg)
{
	struct foreign *f = arg;
	f->read = it2_set_read(f->s);
	f->reset = it2_set_reset(f->s);
	f->stop = it2_set_stop(f->s);
	return NULL;
}

START_TEST(only_the_starting_thread_may_read_reset_or_stop)
{
	struct it2_set s;
	unsigned cycles[] = { IT2_CPU_CYCLES };

	init(&s);
	ck_assert_int_eq(it2_set_events(&s, cycles, 1), 0);
	ck_assert_int_eq(it2_set_start(&s), 0);
	burn(2000000);
	ck_assert_int_eq(it2_set_read(&s), 0);
	long long before = s.values[0];

	struct foreign f = { .s = &s };
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, from_another_thread, &f), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(f.read, -EINVAL);
	ck_assert_int_eq(f.reset, -EINVAL);
	ck_assert_int_eq(f.stop, -EINVAL);
	/* Nothing changed: still running, not reset. */
	ck_assert_int_eq(s.running, 1);
	ck_assert_int_eq(it2_set_read(&s), 0);
	ck_assert_int_ge(s.values[0], before);
	ck_assert_int_eq(it2_set_stop(&s), 0);
}
END_TEST

START_TEST(a_running_set_keeps_its_ranges)
{
	struct it2_set s;
	uintptr_t r = region();
	int so, eo;
	unsigned cycles[] = { IT2_CPU_CYCLES };

	init(&s);
	ck_assert_int_eq(it2_set_events(&s, cycles, 1), 0);
	ck_assert_int_eq(it2_set_start(&s), 0);
	ck_assert_int_eq(it2_set_range(&s, 0, r, r + 64, 0, 0, &so, &eo), -EBUSY);
	ASSERT_ERROR("the event set is running; stop it first");
	ck_assert_int_eq(it2_set_stop(&s), 0);
}
END_TEST

/* 10 loads and 5 stores of v[0]; v[1] is not in the range. */
static void __attribute__((noinline)) workload(volatile uint64_t *v)
{
	uint64_t sink = 0;
	for (int i = 0; i < 10; i++)
		sink += v[0];
	for (int i = 0; i < 5; i++)
		v[0] = (uint64_t)i;
	for (int i = 0; i < 3; i++)
		sink += v[1];
	v[1] = sink;
}

START_TEST(a_data_range_counts_loads_and_stores_in_event_order)
{
	unsigned n;
	char why[WATCH_ERRLEN];
	const struct heritage_backend *t = watch_backend_table(&n);
	if (heritage_backend_usable(&t[WATCH_BACKEND_BREAKPOINT - 1], why, sizeof why) != 0 &&
	    heritage_backend_usable(&t[WATCH_BACKEND_PAGETRAP - 1], why, sizeof why) != 0) {
		printf("skipped: neither breakpoint nor pagetrap can count here: %s\n", why);
		return;
	}
	struct it2_set s;
	uintptr_t r = region();
	volatile uint64_t *v = (volatile uint64_t *)r;
	int so, eo;
	const unsigned codes[] = { EXACT1(IT2_STORES_RETIRED), EXACT1(IT2_LOADS_RETIRED) };

	init(&s);
	ck_assert_int_eq(it2_set_events(&s, codes, 2), 0);
	ck_assert_int_eq(it2_set_range(&s, 0, r, r + 8, 0, 0, &so, &eo), 0);
	ck_assert_msg(it2_set_start(&s) == 0, "start: %s", heritage_last_error());
	workload(v);
	ck_assert_int_eq(it2_set_read(&s), 0);
	ck_assert_int_eq(s.values[0], 5);
	ck_assert_int_eq(s.values[1], 10);
	ck_assert_int_eq(it2_set_stop(&s), 0);
	workload(v);
	ck_assert_int_eq(it2_set_read(&s), 0);
	ck_assert_int_eq(s.values[0], 5);
	ck_assert_int_eq(s.values[1], 10);
	printf("counted with the %s backend\n", watch_backend_name(s.ws.backend));
}
END_TEST

/* Data events overflow from the backend, exactly; CPU_CYCLES and the
 * instruction events are polled against deadlines. */
START_TEST(overflow_is_exact_for_data_events_and_polled_for_the_rest)
{
	struct it2_set s;
	const unsigned codes[] = { IT2_STORES_RETIRED, IT2_LOADS_RETIRED, IT2_CPU_CYCLES };

	init(&s);
	ck_assert_int_eq(it2_set_events(&s, codes, 3), 0);
	ck_assert_int_eq(it2_set_overflow(&s, 1, 7, SIGUSR1), 0);
	ck_assert_int_eq(it2_set_overflow(&s, 2, 1000, SIGUSR1), 0);
	ck_assert_uint_eq(s.ovf_exact, 1u << 1);
	ck_assert_uint_eq(s.ovf_polled, 1u << 2);
	ck_assert_uint_eq(s.ovf.threshold[WATCH_FIELD_LOADS], 7);
	ck_assert_uint_eq(s.ovf.threshold[WATCH_FIELD_STORES], 0);
	ck_assert_int_eq(it2_set_overflow(&s, 0, -1, SIGUSR1), -EINVAL);
	ck_assert_int_eq(it2_set_overflow(&s, 5, 1, SIGUSR1), -EINVAL);

	/* Polled: due at the deadline, which then moves to value + threshold. */
	s.ovf_deadline[2] = 1000;
	s.values[2] = 999;
	ck_assert_uint_eq(it2_set_overflow_poll(&s), 0);
	s.values[2] = 1500;
	ck_assert_uint_eq(it2_set_overflow_poll(&s), 1u << 2);
	ck_assert_int_eq(s.ovf_deadline[2], 2500);
	ck_assert_uint_eq(it2_set_overflow_poll(&s), 0);

	/* Exact: the backend's pending field comes back as the event's position. */
	uintptr_t pc;
	atomic_store(&s.ovf.pending, 1u << WATCH_FIELD_LOADS);
	atomic_store(&s.ovf.pending_pc, 0x4242);
	ck_assert_uint_eq(it2_set_overflow_take(&s, &pc), 1u << 1);
	ck_assert_uint_eq(pc, 0x4242);

	/* Disarmed. */
	ck_assert_int_eq(it2_set_overflow(&s, 1, 0, SIGUSR1), 0);
	ck_assert_uint_eq(s.ovf_exact, 0);
	ck_assert_uint_eq(s.ovf.threshold[WATCH_FIELD_LOADS], 0);
}
END_TEST

static struct it2_set *overflow_set;
static int overflow_calls;
static uintptr_t overflow_pcs[16];

static void on_overflow(int sig)
{
	uintptr_t pc;
	(void)sig;
	if (it2_set_overflow_take(overflow_set, &pc) && overflow_calls < 16)
		overflow_pcs[overflow_calls++] = pc;
}

/* 10 loads at threshold 3: 3 deliveries, each after the access that made
 * it due (the backend holds the signal until the access is done), each
 * with a PC inside the workload. */
START_TEST(a_data_range_overflows_every_threshold_loads)
{
	unsigned n;
	char why[WATCH_ERRLEN];
	const struct heritage_backend *t = watch_backend_table(&n);
	if (heritage_backend_usable(&t[WATCH_BACKEND_PAGETRAP - 1], why, sizeof why) != 0) {
		printf("skipped: pagetrap cannot count here: %s\n", why);
		return;
	}
	struct it2_set s;
	uintptr_t r = region();
	int so, eo;
	const unsigned codes[] = { EXACT1(IT2_LOADS_RETIRED) };
	struct sigaction sa, old;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_overflow;
	sigaction(SIGUSR1, &sa, &old);
	init(&s);
	overflow_set = &s;
	overflow_calls = 0;
	ck_assert_int_eq(it2_set_events(&s, codes, 1), 0);
	ck_assert_int_eq(it2_set_range(&s, 0, r, r + 8, 0, 0, &so, &eo), 0);
	ck_assert_int_eq(it2_set_overflow(&s, 0, 3, SIGUSR1), 0);
	ck_assert_msg(it2_set_start(&s) == 0, "start: %s", heritage_last_error());
	ck_assert_int_eq(s.ws.backend, WATCH_BACKEND_PAGETRAP);
	workload((volatile uint64_t *)r);
	ck_assert_int_eq(it2_set_stop(&s), 0);
	ck_assert_int_eq(it2_set_read(&s), 0);
	sigaction(SIGUSR1, &old, NULL);
	ck_assert_int_eq(s.values[0], 10);
	ck_assert_int_eq(overflow_calls, 3);
	for (int i = 0; i < overflow_calls; i++)
		ck_assert_msg(overflow_pcs[i] >= (uintptr_t)workload && overflow_pcs[i] < (uintptr_t)workload + 256,
		              "delivery %d at %#lx, outside the workload", i, (unsigned long)overflow_pcs[i]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("it2_set");
	TCase *tc = tcase_create("events");
	tcase_add_test(tc, init_reads_the_mode);
	tcase_add_test(tc, events_are_checked_and_carry_the_mode);
	tcase_add_test(tc, each_event_reads_its_counter);
	suite_add_tcase(s, tc);
	tc = tcase_create("ranges");
	tcase_add_test(tc, bad_ranges_are_refused_with_a_reason);
	tcase_add_test(tc, offsets_follow_the_debug_register_arithmetic);
	tcase_add_test(tc, a_mapped_range_fixes_the_mode_and_keeps_cycles_out);
	suite_add_tcase(s, tc);
	tc = tcase_create("running");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, start_refuses_what_it_cannot_count);
	tcase_add_test(tc, cpu_cycles_are_the_threads_cpu_time_at_1600_mhz);
	tcase_add_test(tc, only_the_starting_thread_may_read_reset_or_stop);
	tcase_add_test(tc, a_running_set_keeps_its_ranges);
	tcase_add_test(tc, a_data_range_counts_loads_and_stores_in_event_order);
	tcase_add_test(tc, overflow_is_exact_for_data_events_and_polled_for_the_rest);
	tcase_add_test(tc, a_data_range_overflows_every_threshold_loads);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
