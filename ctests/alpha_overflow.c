/*
 * alpha21064 through the public PAPI API: overflow counts on loops whose
 * instruction mix is known exactly (ctests/alpha_loops.S), handler PCs,
 * PAPI_profil histograms, the per-OS interrupt frame, what is refused, and
 * the overflow path under many start/stop cycles and a second thread.
 *
 *   alpha_overflow loads|profil|two|together|errors|cycles|threads
 *   alpha_overflow backend       the backend choice (auto, pmu, software)
 *   alpha_overflow pmu_sampling  the core-PMU path end to end, on page faults
 *   alpha_overflow pmu_threads|pmu_cycles [n]  the same with a second thread, and many cycles
 *
 * Each mode runs in its own process: the emulated counters keep their
 * residue from one run to the next, as the chip's did, so a mode's first run
 * starts from an empty counter.  The modes up to threads test the software
 * backend's exact counts and PCs, so they force it (a machine with a PMU
 * would otherwise get the PMU backend, whose PCs have skid).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>

#include "heritage_test.h"
#include "knob.h"

long alpha_load_loop(const long *p, long n);
void alpha_mix_loop(long *p, long n);
long alpha_both_rounds(const long *p, const long *skew, long rounds);
extern const char alpha_load_loop_end[], alpha_mix_loop_end[];
extern const char alpha_both_block[], alpha_both_block_end[];
void alpha_touch_pages(char *p, long npages);
extern const char alpha_touch_store[];

static long data[4] = { 1, 2, 3, 4 };

#define MAX_CALLS 4096
struct calls {
	int n;
	int eventset;
	pid_t tid;
	int foreign; /* calls from another thread or event set */
	uintptr_t pc[MAX_CALLS];
	long long vec[MAX_CALLS];
	int frame_rc[MAX_CALLS];
	struct papi_heritage_alpha21064_frame frame[MAX_CALLS];
};

static struct calls main_calls, thread_calls;
static __thread struct calls *my_calls;

static void handler(int EventSet, void *address, long long overflow_vector, void *context)
{
	struct calls *c = my_calls;
	(void)context;
	if (!c)
		return;
	if (EventSet != c->eventset || (pid_t)syscall(SYS_gettid) != c->tid)
		c->foreign++;
	if (c->n < MAX_CALLS) {
		c->pc[c->n] = (uintptr_t)address;
		c->vec[c->n] = overflow_vector;
		c->frame_rc[c->n] = papi_heritage_alpha21064_frame(&c->frame[c->n]);
	}
	c->n++;
}

static int in_range(uintptr_t pc, const void *lo, const void *hi)
{
	return pc >= (uintptr_t)lo && pc < (uintptr_t)hi;
}

static int make_set(const char *e0, const char *e1)
{
	int es = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&es));
	CHECK_PAPI(PAPI_add_named_event(es, e0));
	if (e1)
		CHECK_PAPI(PAPI_add_named_event(es, e1));
	return es;
}

static int code_of(const char *name)
{
	int code = 0;
	CHECK_PAPI(PAPI_event_name_to_code(name, &code));
	return code;
}

static void begin_calls(struct calls *c, int es)
{
	memset(c, 0, sizeof *c);
	c->eventset = es;
	c->tid = (pid_t)syscall(SYS_gettid);
	my_calls = c;
}

/* LOAD_INSNS at width 12 overflows exactly floor(n / 4096) times on n loads:
 * n = 3 * 4096 + 1024, and the loads PAPI_start and PAPI_stop themselves make
 * stay under the 1024 of slack. */
static void test_loads(void)
{
	const long n = 3 * 4096 + 1024;
	CHECK_PAPI(papi_heritage_alpha21064_set_os(PAPI_HERITAGE_ALPHA_OS_VMS));
	int es = make_set("alpha21064:::LOAD_INSNS:width=12", NULL);
	CHECK_PAPI(PAPI_overflow(es, code_of("alpha21064:::LOAD_INSNS:width=12"), 4096, 0, handler));
	begin_calls(&main_calls, es);
	long long v = -1;
	CHECK_PAPI(PAPI_start(es));
	long sum = alpha_load_loop(data, n);
	CHECK_PAPI(PAPI_stop(es, &v));
	EXPECT_EQ("loop result", sum, n);
	EXPECT_EQ("handler calls", main_calls.n, n / 4096);
	EXPECT_EQ("PAPI_stop value (interrupts x 4096)", v, (n / 4096) * 4096);
	EXPECT_EQ("calls from elsewhere", main_calls.foreign, 0);
	for (int i = 0; i < main_calls.n && i < MAX_CALLS; i++) {
		EXPECT_EQ("handler PC inside the loop", in_range(main_calls.pc[i], alpha_load_loop, alpha_load_loop_end), 1);
		/* The load that carried: addq (%rdi),%rax, 7 bytes into the loop. */
		EXPECT_EQ("handler PC is the load", main_calls.pc[i], (uintptr_t)alpha_load_loop + 7);
		EXPECT_EQ("overflow vector", main_calls.vec[i], 1);
		EXPECT_EQ("frame available", main_calls.frame_rc[i], PAPI_OK);
		EXPECT_EQ("frame os", main_calls.frame[i].os, PAPI_HERITAGE_ALPHA_OS_VMS);
		EXPECT_EQ("frame vector", main_calls.frame[i].vector, 0x650);
		EXPECT_EQ("frame ipl", main_calls.frame[i].ipl, 29);
		EXPECT_EQ("frame R4 = counter", main_calls.frame[i].r4, 0);
		EXPECT_EQ("frame a0 undefined", main_calls.frame[i].a0, -1);
		EXPECT_EQ("frame pc", main_calls.frame[i].pc, main_calls.pc[i]);
	}
	/* Outside a handler there is no frame. */
	struct papi_heritage_alpha21064_frame f;
	EXPECT_EQ("frame outside a handler", papi_heritage_alpha21064_frame(&f), PAPI_EINVAL);

	/* The residue (1024 + the start/stop loads) stays in the counter: 3 x
	 * 4096 + 3072 more loads make 4 interrupts, not the 3 an empty counter
	 * would give; with a threshold of two periods, 2 handler calls. */
	CHECK_PAPI(PAPI_overflow(es, code_of("alpha21064:::LOAD_INSNS:width=12"), 2 * 4096, 0, handler));
	begin_calls(&main_calls, es);
	CHECK_PAPI(PAPI_start(es));
	alpha_load_loop(data, 3 * 4096 + 3072);
	CHECK_PAPI(PAPI_stop(es, &v));
	EXPECT_EQ("second run: interrupts x 4096 (residue carried over)", v, 4 * 4096);
	EXPECT_EQ("second run: handler calls at threshold 8192", main_calls.n, 2);
}

/* PAPI_profil: every sample lands on the loop's load instruction. */
static void test_profil(void)
{
	const long n = 8 * 4096 + 1024;
	unsigned short buf[64];
	memset(buf, 0, sizeof buf);
	int es = make_set("alpha21064:::LOAD_INSNS:width=12", NULL);
	/* scale 65536: one 16-bit bucket per 2 bytes of code from the loop's start. */
	CHECK_PAPI(PAPI_profil(buf, sizeof buf, (vptr_t)alpha_load_loop, 65536, es,
	                       code_of("alpha21064:::LOAD_INSNS:width=12"), 4096, PAPI_PROFIL_POSIX));
	long long v;
	CHECK_PAPI(PAPI_start(es));
	alpha_load_loop(data, n);
	CHECK_PAPI(PAPI_stop(es, &v));
	unsigned total = 0;
	for (unsigned i = 0; i < 64; i++)
		total += buf[i];
	EXPECT_EQ("samples in the loop's buckets", total, 8);
	EXPECT_EQ("samples on addq (%rdi),%rax (bucket 3)", buf[3], 8);
	EXPECT_EQ("PAPI_stop value", v, 8 * 4096);
	printf("histogram: bucket 3 (loop+6..7) = %u of %u samples\n", buf[3], total);
}

/* Two events on the two counters overflow independently; the DIGITAL UNIX
 * frame carries a0 = 4, a1 = 0x650, a2 = the counter. */
static void test_two(void)
{
	long buf[2] = { 7, 0 };
	CHECK_PAPI(papi_heritage_alpha21064_set_os(PAPI_HERITAGE_ALPHA_OS_UNIX));
	EXPECT_EQ("os", papi_heritage_alpha21064_get_os(), PAPI_HERITAGE_ALPHA_OS_UNIX);
	int es = make_set("alpha21064:::STORE_INSNS:width=8", "alpha21064:::LOAD_INSNS:width=12");
	CHECK_PAPI(PAPI_overflow(es, code_of("alpha21064:::STORE_INSNS:width=8"), 256, 0, handler));
	CHECK_PAPI(PAPI_overflow(es, code_of("alpha21064:::LOAD_INSNS:width=12"), 4096, 0, handler));
	begin_calls(&main_calls, es);
	long long v[2];
	CHECK_PAPI(PAPI_start(es));
	/* 4096 loads and 4096 stores: any 4096 consecutive events hold exactly
	 * one multiple of 4096 and sixteen of 256, wherever the counters stood. */
	alpha_mix_loop(buf, 4096);
	CHECK_PAPI(PAPI_stop(es, v));
	int stores = 0, loads = 0, outside = 0, outside_stores = 0, outside_loads = 0;
	for (int i = 0; i < main_calls.n && i < MAX_CALLS; i++) {
		EXPECT_EQ("frame a0", main_calls.frame[i].a0, 4);
		EXPECT_EQ("frame a1", main_calls.frame[i].a1, 0x650);
		EXPECT_EQ("frame ipl", main_calls.frame[i].ipl, 6);
		EXPECT_EQ("frame a2 = the counter", main_calls.frame[i].a2, main_calls.vec[i] == 1 ? 1 : 0);
		EXPECT_EQ("one counter per delivery", main_calls.vec[i] == 1 || main_calls.vec[i] == 2, 1);
		if (!in_range(main_calls.pc[i], alpha_mix_loop, alpha_mix_loop_end)) {
			/* PAPI_start's and PAPI_stop's own stores and loads. */
			outside++;
			outside_stores += main_calls.vec[i] == 1;
			outside_loads += main_calls.vec[i] == 2;
			continue;
		}
		if (main_calls.vec[i] == 1) { /* STORE_INSNS is position 0 */
			stores++;
			EXPECT_EQ("store overflow at the store", main_calls.pc[i], (uintptr_t)alpha_mix_loop + 8);
		} else {
			loads++;
			EXPECT_EQ("load overflow at the load", main_calls.pc[i], (uintptr_t)alpha_mix_loop + 5);
		}
	}
	EXPECT_EQ("store overflows in the loop", stores, 16);
	EXPECT_EQ("load overflows in the loop", loads, 1);
	EXPECT_EQ("overflows outside the loop: at most start's and stop's", outside <= 2, 1);
	/* PAPI_stop's value: the interrupts up to its read. */
	EXPECT_EQ("STORE_INSNS value >= loop's", v[0] >= 16 * 256 && v[0] <= (16 + outside_stores) * 256, 1);
	EXPECT_EQ("LOAD_INSNS value", v[1] >= 4096 && v[1] <= (1 + outside_loads) * 4096, 1);
	EXPECT_EQ("the loop ran", buf[1], 7);
	printf("two counters: %d store and %d load overflows in the loop, %d outside\n", stores, loads, outside);
}

/* Both counters carrying on one instruction (Alpha Architecture Handbook,
 * E.2.1.1: "two interrupts are generated"; doc/facilities.md 2(a)): LOAD_INSNS:width=12 on counter 0 and INTEGER_OPERATE:width=12
 * on counter 1 over alpha_both_rounds (alpha_loops.S), whose blocks advance
 * the two counters in lock-step.  The residues the counters bring into a
 * block are unknown (PAPI_start's own loads and integer operates, and they
 * cannot be read), so the handler lines them up: in round j's block counter
 * c carries at index i_c = 4095 - residue_c, so d_j = i_1 - i_0 (mod 4096) is
 * residue_0 - residue_1.  Between blocks the difference moves by a constant
 * G (the fixed glue) plus skew[j] (the skew loop's iterations), so
 * d_1 - d_0 = G with skew[0] = 0, then skew[1] = -(d_1 + G) makes d_2 = 0
 * and skew[2] = -G keeps d_3 = 0.  Rounds 2 and 3 must each carry both
 * counters on one addq: two handler calls for that PC, counter 0's first. */
#define BOTH_ROUNDS 4
#define BOTH_INSN 3 /* bytes of addq (%rdi),%rax */
static volatile long both_skew[BOTH_ROUNDS];
static int both_hit[BOTH_ROUNDS][2]; /* block index of each counter's carry, -1 */
static int both_hits[2];
static long both_g = -1;

static long mod4096(long x)
{
	return ((x % 4096) + 4096) % 4096;
}

static void both_handler(int EventSet, void *address, long long overflow_vector, void *context)
{
	uintptr_t pc = (uintptr_t)address;
	handler(EventSet, address, overflow_vector, context);
	if (!in_range(pc, alpha_both_block, alpha_both_block_end))
		return; /* PAPI_start's, the skew loop's or PAPI_stop's own events */
	int c = overflow_vector == 1 ? 0 : 1; /* LOAD_INSNS is position 0 */
	int j = both_hits[c]++;
	if (j >= BOTH_ROUNDS)
		return;
	both_hit[j][c] = (int)((pc - (uintptr_t)alpha_both_block) / BOTH_INSN);
	if (both_hit[j][0] < 0 || both_hit[j][1] < 0)
		return; /* the other counter has not carried in this block yet */
	/* Both carries of block j are in: set the skew read right after it. */
	long d = mod4096(both_hit[j][1] - both_hit[j][0]);
	if (j == 1)
		both_g = mod4096(d - mod4096(both_hit[0][1] - both_hit[0][0]));
	if (j >= 1)
		both_skew[j] = j == 1 ? mod4096(-(d + both_g)) : mod4096(-both_g);
}

static void test_together(void)
{
	int es = make_set("alpha21064:::LOAD_INSNS:width=12", "alpha21064:::INTEGER_OPERATE:width=12");
	CHECK_PAPI(papi_heritage_alpha21064_set_os(PAPI_HERITAGE_ALPHA_OS_UNIX));
	CHECK_PAPI(PAPI_overflow(es, code_of("alpha21064:::LOAD_INSNS:width=12"), 4096, 0, both_handler));
	CHECK_PAPI(PAPI_overflow(es, code_of("alpha21064:::INTEGER_OPERATE:width=12"), 4096, 0, both_handler));
	memset(both_hit, -1, sizeof both_hit);
	for (int j = 0; j < BOTH_ROUNDS; j++)
		both_skew[j] = 0;
	begin_calls(&main_calls, es);
	long long v[2];
	CHECK_PAPI(PAPI_start(es));
	long sum = alpha_both_rounds(data, (const long *)both_skew, BOTH_ROUNDS);
	CHECK_PAPI(PAPI_stop(es, v));
	EXPECT_EQ("loop result", sum, BOTH_ROUNDS * 4096 * data[0]);
	EXPECT_EQ("counter 0 carries in the blocks", both_hits[0], BOTH_ROUNDS);
	EXPECT_EQ("counter 1 carries in the blocks", both_hits[1], BOTH_ROUNDS);
	EXPECT_EQ("calls from elsewhere", main_calls.foreign, 0);
	for (int j = 2; j < BOTH_ROUNDS; j++) {
		EXPECT_EQ("lined up: both counters carry on one instruction", both_hit[j][0], both_hit[j][1]);
		uintptr_t pc = (uintptr_t)alpha_both_block + (uintptr_t)both_hit[j][0] * BOTH_INSN;
		int found = 0;
		for (int i = 0; i + 1 < main_calls.n && i + 1 < MAX_CALLS; i++) {
			if (main_calls.pc[i] != pc)
				continue;
			found++;
			/* Two deliveries for that PC, back to back: counter 0, then 1. */
			EXPECT_EQ("first delivery: counter 0's bit", main_calls.vec[i], 1);
			EXPECT_EQ("second delivery: same PC", main_calls.pc[i + 1], pc);
			EXPECT_EQ("second delivery: counter 1's bit", main_calls.vec[i + 1], 2);
			EXPECT_EQ("first frame: counter 0", main_calls.frame[i].counter, 0);
			EXPECT_EQ("first frame: a2 = 0", main_calls.frame[i].a2, 0);
			EXPECT_EQ("second frame: counter 1", main_calls.frame[i + 1].counter, 1);
			EXPECT_EQ("second frame: a2 = 1", main_calls.frame[i + 1].a2, 1);
			EXPECT_EQ("frames carry the PC", main_calls.frame[i].pc == pc && main_calls.frame[i + 1].pc == pc, 1);
			EXPECT_EQ("no third delivery there",
			          i + 2 >= main_calls.n || main_calls.pc[i + 2] != pc, 1);
			break;
		}
		EXPECT_EQ("the shared PC was delivered", found, 1);
	}
	printf("together: residue difference %ld in round 0, glue %ld, skews %ld %ld; rounds 2 and 3 carried both "
	       "counters at block index %d and %d\n", mod4096(both_hit[0][1] - both_hit[0][0]), both_g, both_skew[1],
	       both_skew[2], both_hit[2][0], both_hit[3][0]);
}

#define EXPECT_RC(what, call, want)                                                                \
	do {                                                                                       \
		int rc__ = (call);                                                                 \
		EXPECT_EQ(what, rc__, want);                                                       \
		if (rc__ != PAPI_OK)                                                               \
			printf("  %s: %s -> %s\n", what, PAPI_strerror(rc__), papi_heritage_last_error()); \
	} while (0)

static void test_errors(void)
{
	int es = PAPI_NULL, code = 0;
	CHECK_PAPI(PAPI_create_eventset(&es));
	CHECK_PAPI(PAPI_add_named_event(es, "alpha21064:::LOAD_INSNS:width=12"));
	EXPECT_RC("second event on counter 0", PAPI_add_named_event(es, "alpha21064:::BRANCH_INSNS"), PAPI_ECNFLCT);
	EXPECT_EQ("message names the counter", strstr(papi_heritage_last_error(), "counter 0") != NULL, 1);
	EXPECT_RC("no honest source", PAPI_add_named_event(es, "alpha21064:::DCACHE_MISSES"), PAPI_ENOSUPP);
	EXPECT_EQ("message says why", strstr(papi_heritage_last_error(), "cache") != NULL, 1);
	EXPECT_RC("PAL_MODE", PAPI_add_named_event(es, "alpha21064:::PAL_MODE"), PAPI_ENOSUPP);
	EXPECT_RC("bad width", PAPI_event_name_to_code("alpha21064:::LOAD_INSNS:width=8", &code), PAPI_EINVAL);
	EXPECT_RC("bad qualifier", PAPI_event_name_to_code("alpha21064:::LOAD_INSNS:foo=1", &code), PAPI_EINVAL);
	int load = code_of("alpha21064:::LOAD_INSNS:width=12");
	EXPECT_RC("threshold not a multiple of 4096", PAPI_overflow(es, load, 4000, 0, handler), PAPI_EINVAL);
	EXPECT_EQ("message gives the period", strstr(papi_heritage_last_error(), "4096") != NULL, 1);
	EXPECT_RC("threshold 6144", PAPI_overflow(es, load, 6144, 0, handler), PAPI_EINVAL);
	EXPECT_RC("threshold 8192", PAPI_overflow(es, load, 8192, 0, handler), PAPI_OK);
	EXPECT_RC("threshold 0 disarms", PAPI_overflow(es, load, 0, 0, handler), PAPI_OK);
	int es2 = make_set("alpha21064:::LOAD_INSNS", NULL);
	EXPECT_RC("width 16: 4096 is not a period", PAPI_overflow(es2, code_of("alpha21064:::LOAD_INSNS"), 4096, 0, handler),
	          PAPI_EINVAL);
	long long v = 123;
	CHECK_PAPI(PAPI_start(es));
	EXPECT_RC("PAPI_write", PAPI_write(es, &v), PAPI_ENOSUPP);
	EXPECT_RC("PAPI_reset", PAPI_reset(es), PAPI_OK);
	CHECK_PAPI(PAPI_stop(es, &v));
	EXPECT_EQ("no interrupt: 0", v, 0);
	EXPECT_RC("unknown os", papi_heritage_alpha21064_set_os(7), PAPI_EINVAL);
	struct papi_heritage_event_facts facts;
	CHECK_PAPI(papi_heritage_event_facts(load, &facts));
	EXPECT_EQ("caps", facts.caps, PAPI_HERITAGE_CAP_OVERFLOW | PAPI_HERITAGE_CAP_PROFILE | PAPI_HERITAGE_CAP_UNREADABLE);
	EXPECT_EQ("LOAD_INSNS measured", facts.source, PAPI_HERITAGE_MEASURED);
	CHECK_PAPI(papi_heritage_event_facts(code_of("alpha21064:::CYCLES"), &facts));
	EXPECT_EQ("CYCLES modelled", facts.source, PAPI_HERITAGE_MODELLED);
	CHECK_PAPI(papi_heritage_event_facts(code_of("alpha21064:::EXTERNAL_1"), &facts));
	EXPECT_EQ("EXTERNAL_1 unavailable", facts.source, PAPI_HERITAGE_UNAVAILABLE);
}

/* The overflow path survives many start/stop cycles: every cycle runs 16
 * stores with an overflow armed on counter 1 at width 8.  PAPI_stop's value
 * counts the interrupts up to its read; an interrupt raised by PAPI_stop's
 * own stores after that read is still delivered. */
static void test_cycles(int cycles)
{
	long buf[2] = { 1, 0 };
	int es = make_set("alpha21064:::STORE_INSNS:width=8", NULL);
	CHECK_PAPI(PAPI_overflow(es, code_of("alpha21064:::STORE_INSNS:width=8"), 256, 0, handler));
	begin_calls(&main_calls, es);
	long long total = 0, v;
	for (int i = 0; i < cycles; i++) {
		CHECK_PAPI(PAPI_start(es));
		alpha_mix_loop(buf, 16);
		CHECK_PAPI(PAPI_stop(es, &v));
		if (v % 256 != 0)
			EXPECT_EQ("value a multiple of 256", v % 256, 0);
		total += v;
	}
	long long calls = main_calls.n;
	EXPECT_EQ("values <= deliveries x 256", total <= calls * 256, 1);
	EXPECT_EQ("at most one delivery per cycle after the read", total >= (calls - cycles) * 256, 1);
	EXPECT_EQ("calls from elsewhere", main_calls.foreign, 0);
	EXPECT_EQ("at least the loop's 16 stores per cycle carried", calls >= (long long)cycles * 16 / 256, 1);
	printf("%d start/stop cycles: %lld overflows delivered, sum of values %lld\n", cycles, calls, total);
}

static void *second_thread(void *arg)
{
	long buf[2] = { 3, 0 };
	(void)arg;
	CHECK_PAPI(PAPI_register_thread());
	int es = make_set("alpha21064:::STORE_INSNS:width=8", NULL);
	CHECK_PAPI(PAPI_overflow(es, code_of("alpha21064:::STORE_INSNS:width=8"), 256, 0, handler));
	begin_calls(&thread_calls, es);
	long long v;
	CHECK_PAPI(PAPI_start(es));
	alpha_mix_loop(buf, 2048);
	CHECK_PAPI(PAPI_stop(es, &v));
	EXPECT_EQ("thread: STORE_INSNS value", v >= 8 * 256 && v <= 10 * 256, 1);
	CHECK_PAPI(PAPI_cleanup_eventset(es));
	CHECK_PAPI(PAPI_destroy_eventset(&es));
	CHECK_PAPI(PAPI_unregister_thread());
	return NULL;
}

static void test_threads(void)
{
	CHECK_PAPI(PAPI_thread_init((unsigned long (*)(void))pthread_self));
	const long n = 2 * 4096 + 1024;
	int es = make_set("alpha21064:::LOAD_INSNS:width=12", NULL);
	CHECK_PAPI(PAPI_overflow(es, code_of("alpha21064:::LOAD_INSNS:width=12"), 4096, 0, handler));
	begin_calls(&main_calls, es);
	pthread_t t;
	long long v;
	CHECK_PAPI(PAPI_start(es));
	if (pthread_create(&t, NULL, second_thread, NULL) != 0) {
		fprintf(stderr, "pthread_create failed\n");
		exit(1);
	}
	alpha_load_loop(data, n);
	CHECK_PAPI(PAPI_stop(es, &v));
	pthread_join(t, NULL);
	EXPECT_EQ("main: handler calls", main_calls.n, 2);
	EXPECT_EQ("main: value", v, 2 * 4096);
	EXPECT_EQ("main: calls from elsewhere", main_calls.foreign, 0);
	EXPECT_EQ("thread: calls from elsewhere", thread_calls.foreign, 0);
	int inside = 0;
	for (int i = 0; i < thread_calls.n && i < MAX_CALLS; i++)
		inside += in_range(thread_calls.pc[i], alpha_mix_loop, alpha_mix_loop_end);
	/* 2048 stores: exactly 8 carries at 256 inside the loop; start and stop
	 * (the thread's first, with lazy binding) may add up to two. */
	EXPECT_EQ("thread: overflows in its loop", inside, 8);
	EXPECT_EQ("thread: overflows outside", thread_calls.n - inside <= 2, 1);
	for (int i = 0; i < main_calls.n && i < MAX_CALLS; i++)
		EXPECT_EQ("main: PC in its loop", in_range(main_calls.pc[i], alpha_load_loop, alpha_load_loop_end), 1);
}

static void expect_backend(const char *what, int es, const char *want)
{
	char name[32] = "?";
	CHECK_PAPI(papi_heritage_alpha21064_backend(es, name, sizeof name));
	if (strcmp(name, want) != 0) {
		fprintf(stderr, "%s: backend %s, want %s\n", what, name, want);
		heritage_test_failures++;
	}
}

/* Whether the PMU backend can count here, from the probes through the
 * component's own table: decides what auto must choose, and both outcomes
 * are asserted.  (A hand-rolled perf_event_open of cycles here once said
 * yes where libpfm4 knew no PMU, on the AMD family 26 guest.) */
static int pmu_backend_usable(char *why, int len)
{
	return papi_heritage_backend_usable("alpha21064", "pmu", why, len) == PAPI_OK;
}

/* What a forced PMU backend gets where it cannot count: PAPI_ENOSUPP, or
 * PAPI_EPERM where only this account's refusal stands in the way. */
static int pmu_backend_code(void)
{
	char why[1024];
	return papi_heritage_backend_usable("alpha21064", "pmu", why, sizeof why);
}

/* The backend variable is read when events are added. */
static void test_backend(void)
{
	char why[1024];
	int pmu = pmu_backend_usable(why, sizeof why);
	int es = PAPI_NULL;
	printf("this machine: %s%s\n", pmu ? "the core-PMU backend can count" : "no core-PMU backend: ", pmu ? "" : why);

	knob_set("PAPI_HERITAGE_ALPHA21064_BACKEND", NULL);
	CHECK_PAPI(PAPI_create_eventset(&es));
	EXPECT_RC("empty set: backend call", papi_heritage_alpha21064_backend(es, (char[8]){ 0 }, 8), PAPI_ENOCMP);
	CHECK_PAPI(PAPI_add_named_event(es, "alpha21064:::LOAD_INSNS:width=12"));
	expect_backend("auto", es, pmu ? "pmu" : "software");
	/* An event only a PMU can count: auto counts it there, or says why not. */
	EXPECT_RC("auto: BRANCH_MISPREDICTS", PAPI_add_named_event(es, "alpha21064:::BRANCH_MISPREDICTS"),
	          pmu ? PAPI_OK : pmu_backend_code() == PAPI_EPERM ? PAPI_EPERM : PAPI_ENOSUPP);
	if (!pmu) /* the software backend's reason, not auto's failed PMU try */
		EXPECT(strstr(papi_heritage_last_error(), "branch prediction") != NULL, "message: %s",
		       papi_heritage_last_error());
	CHECK_PAPI(PAPI_cleanup_eventset(es));
	EXPECT_RC("not an alpha21064 set", papi_heritage_alpha21064_backend(12345, (char[8]){ 0 }, 8), PAPI_ENOEVST);

	knob_set("PAPI_HERITAGE_ALPHA21064_BACKEND", "software");
	CHECK_PAPI(PAPI_add_named_event(es, "alpha21064:::LOAD_INSNS:width=12"));
	expect_backend("software", es, "software");
	CHECK_PAPI(PAPI_cleanup_eventset(es));

	knob_set("PAPI_HERITAGE_ALPHA21064_BACKEND", "pmu");
	EXPECT_RC("pmu: LOAD_INSNS", PAPI_add_named_event(es, "alpha21064:::LOAD_INSNS:width=12"),
	          pmu ? PAPI_OK : pmu_backend_code());
	if (!pmu) {
		/* The code and a reason; the reason's words come from the probe
		 * (the kernel's or libpfm4's), so only its presence is asserted. */
		EXPECT(strstr(papi_heritage_last_error(), "PAPI_HERITAGE_ALPHA21064_BACKEND=pmu") != NULL &&
		       strlen(papi_heritage_last_error()) > strlen("alpha21064: PAPI_HERITAGE_ALPHA21064_BACKEND=pmu: ") + 10,
		       "message: %s", papi_heritage_last_error());
		/* Nothing was added, so nothing starts. */
		EXPECT_RC("pmu: start of the empty set", PAPI_start(es), PAPI_EINVAL);
	} else {
		expect_backend("pmu", es, "pmu");
	}
	CHECK_PAPI(PAPI_cleanup_eventset(es));
	/* No PMU counts PALcode time: refused with the reason, PMU or not
	 * (without one, the reason is that there is none). */
	EXPECT_RC("pmu: PAL_MODE", PAPI_add_named_event(es, "alpha21064:::PAL_MODE"), pmu ? PAPI_ENOSUPP : pmu_backend_code());
	EXPECT(strstr(papi_heritage_last_error(), pmu ? "PALcode" : "PAPI_HERITAGE_ALPHA21064_BACKEND=pmu") != NULL,
	       "message: %s", papi_heritage_last_error());

	knob_set("PAPI_HERITAGE_ALPHA21064_BACKEND", "gpu");
	EXPECT_RC("unknown backend", PAPI_add_named_event(es, "alpha21064:::LOAD_INSNS"), PAPI_EINVAL);
	EXPECT(strstr(papi_heritage_last_error(), "auto (default), software and pmu") != NULL, "message: %s",
	       papi_heritage_last_error());
	knob_set("PAPI_HERITAGE_ALPHA21064_BACKEND", NULL);
}

/* A fresh mapping of n pages that fault one by one. */
static char *fresh_pages(long n)
{
	char *p = mmap(NULL, (size_t)n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "mmap failed\n");
		exit(1);
	}
	madvise(p, (size_t)n * 4096, MADV_NOHUGEPAGE);
	return p;
}

/* An event set on the PMU path, page faults standing in for the hardware
 * event (PAPI_HERITAGE_ALPHA21064_PMU_TEST_EVENT), overflowing every 256. */
static int pmu_set(struct calls *c)
{
	knob_set("PAPI_HERITAGE_ALPHA21064_BACKEND", "pmu");
	knob_set("PAPI_HERITAGE_ALPHA21064_PMU_TEST_EVENT", "perf::PAGE-FAULTS");
	int es = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&es));
	char why[1024];
	if (!pmu_backend_usable(why, sizeof why))
		SKIP("the PMU path on a stand-in software event cannot run here: %s", why);
	CHECK_PAPI(PAPI_add_named_event(es, "alpha21064:::STORE_INSNS:width=8"));
	expect_backend("test event", es, "pmu");
	CHECK_PAPI(PAPI_overflow(es, code_of("alpha21064:::STORE_INSNS:width=8"), 256, 0, handler));
	begin_calls(c, es);
	return es;
}

static int calls_at_store(const struct calls *c)
{
	int at = 0;
	for (int i = 0; i < c->n && i < MAX_CALLS; i++)
		at += c->pc[i] == (uintptr_t)alpha_touch_store;
	return at;
}

/* The PMU path through PAPI, on a machine with or without a PMU: page faults
 * stand in for the hardware event (PAPI_HERITAGE_ALPHA21064_PMU_TEST_EVENT),
 * and STORE_INSNS:width=8 on 3 x 256 + 128 fresh pages carries exactly 3
 * times, each at the loop's store; PAPI_profil's histogram has them all in
 * the store's bucket. */
static void test_pmu_sampling(void)
{
	const long n = 3 * 256 + 128;
	int es = pmu_set(&main_calls);
	int code = code_of("alpha21064:::STORE_INSNS:width=8");
	CHECK_PAPI(papi_heritage_alpha21064_set_os(PAPI_HERITAGE_ALPHA_OS_UNIX));
	char *p = fresh_pages(2 * n);
	long long v = -1;
	CHECK_PAPI(PAPI_start(es));
	alpha_touch_pages(p, n);
	CHECK_PAPI(PAPI_stop(es, &v));
	EXPECT_EQ("handler calls", main_calls.n, 3);
	EXPECT_EQ("PAPI_stop value (interrupts x 256)", v, 3 * 256);
	EXPECT_EQ("calls from elsewhere", main_calls.foreign, 0);
	for (int i = 0; i < main_calls.n && i < MAX_CALLS; i++) {
		EXPECT_EQ("handler PC is the store", main_calls.pc[i], (uintptr_t)alpha_touch_store);
		EXPECT_EQ("overflow vector", main_calls.vec[i], 1);
		EXPECT_EQ("frame available", main_calls.frame_rc[i], PAPI_OK);
		EXPECT_EQ("frame a2 = counter 1", main_calls.frame[i].a2, 1);
		EXPECT_EQ("frame pc", main_calls.frame[i].pc, main_calls.pc[i]);
	}

	/* PAPI_profil on the second half of the pages: the residue (128 + what
	 * start and stop faulted) plus 896 make 4 carries, all on the store. */
	unsigned short buf[64];
	memset(buf, 0, sizeof buf);
	CHECK_PAPI(PAPI_overflow(es, code, 0, 0, handler));
	CHECK_PAPI(PAPI_profil(buf, sizeof buf, (vptr_t)alpha_touch_pages, 65536, es, code, 256, PAPI_PROFIL_POSIX));
	CHECK_PAPI(PAPI_start(es));
	alpha_touch_pages(p + n * 4096, n);
	CHECK_PAPI(PAPI_stop(es, &v));
	EXPECT_EQ("second run: interrupts x 256 (residue carried over)", v, 4 * 256);
	unsigned bucket = (unsigned)((uintptr_t)alpha_touch_store - (uintptr_t)alpha_touch_pages) / 2;
	long total = 0;
	for (unsigned i = 0; i < sizeof buf / sizeof buf[0]; i++)
		total += buf[i];
	EXPECT_EQ("profil: samples in the store's bucket", buf[bucket], 4);
	EXPECT_EQ("profil: samples in all", total, 4);
	munmap(p, 2 * n * 4096);
}

/* The thread's own faults only: its counters are opened for it (pid 0) and
 * signal it alone (F_OWNER_TID).  Whatever faults start makes (k < 256)
 * comes before the loop's 512, so exactly two carries land on the store. */
static void *pmu_second_thread(void *arg)
{
	char *p = arg;
	long long v = -1;
	CHECK_PAPI(PAPI_register_thread());
	int es = pmu_set(&thread_calls);
	CHECK_PAPI(PAPI_start(es));
	alpha_touch_pages(p, 512);
	CHECK_PAPI(PAPI_stop(es, &v));
	EXPECT_EQ("thread: value (interrupts x 256)", v, 2 * 256);
	EXPECT_EQ("thread: overflows at its store", calls_at_store(&thread_calls), 2);
	EXPECT_EQ("thread: calls", thread_calls.n, 2);
	CHECK_PAPI(PAPI_cleanup_eventset(es));
	CHECK_PAPI(PAPI_destroy_eventset(&es));
	CHECK_PAPI(PAPI_unregister_thread());
	return NULL;
}

static void test_pmu_threads(void)
{
	CHECK_PAPI(PAPI_thread_init((unsigned long (*)(void))pthread_self));
	char *mine = fresh_pages(3 * 256 + 128), *theirs = fresh_pages(512);
	int es = pmu_set(&main_calls);
	pthread_t t;
	long long v = -1;
	CHECK_PAPI(PAPI_start(es));
	if (pthread_create(&t, NULL, pmu_second_thread, theirs) != 0) {
		fprintf(stderr, "pthread_create failed\n");
		exit(1);
	}
	alpha_touch_pages(mine, 3 * 256 + 128);
	pthread_join(t, NULL);
	CHECK_PAPI(PAPI_stop(es, &v));
	/* pthread_create's own faults (the new stack, in this thread) may add
	 * up to a carry outside the loop; the loop's 896 make three. */
	EXPECT_EQ("main: overflows at its store", calls_at_store(&main_calls), 3);
	EXPECT_EQ("main: calls outside the loop", main_calls.n - 3 <= 1, 1);
	EXPECT_EQ("main: value = calls x 256", v, (long long)main_calls.n * 256);
	EXPECT_EQ("main: calls from elsewhere", main_calls.foreign, 0);
	EXPECT_EQ("thread: calls from elsewhere", thread_calls.foreign, 0);
	printf("pmu threads: main %d overflows (%d at its store), thread %d\n", main_calls.n, calls_at_store(&main_calls),
	       thread_calls.n);
}

static int open_fds(void)
{
	int n = 0;
	char path[64];
	for (int fd = 0; fd < 4096; fd++) {
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		n += access(path, F_OK) == 0;
	}
	return n;
}

/* Many start/stop cycles on the PMU path: every fault is counted once,
 * across cycles (the counters keep their residue as the chip's did), no
 * delivery comes from elsewhere, and no descriptor or mapping is left. */
static void test_pmu_cycles(int cycles)
{
	const long per = 8;
	char *p = fresh_pages(cycles * per);
	int fds = open_fds();
	int es = pmu_set(&main_calls);
	long long total = 0, v;
	for (int i = 0; i < cycles; i++) {
		CHECK_PAPI(PAPI_start(es));
		alpha_touch_pages(p + (size_t)i * per * 4096, per);
		CHECK_PAPI(PAPI_stop(es, &v));
		if (v % 256 != 0)
			EXPECT_EQ("value a multiple of 256", v % 256, 0);
		total += v;
	}
	long long faults = (long long)cycles * per;
	EXPECT_EQ("values = deliveries x 256", total, (long long)main_calls.n * 256);
	EXPECT_EQ("at least the loop's faults carried", main_calls.n >= faults / 256, 1);
	EXPECT_EQ("no carry from nowhere (faults of start/stop at most 1 per cycle)",
	          main_calls.n <= (faults + cycles) / 256 + 1, 1);
	EXPECT_EQ("calls from elsewhere", main_calls.foreign, 0);
	CHECK_PAPI(PAPI_cleanup_eventset(es));
	CHECK_PAPI(PAPI_destroy_eventset(&es));
	EXPECT_EQ("descriptors left open", open_fds(), fds);
	printf("pmu: %d start/stop cycles, %lld faults in the loops, %d overflows\n", cycles, faults, main_calls.n);
	munmap(p, (size_t)cycles * per * 4096);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "loads";
	if (strcmp(mode, "backend") != 0 && strncmp(mode, "pmu_", 4) != 0)
		knob_set("PAPI_HERITAGE_ALPHA21064_BACKEND", "software");
	/* Before the component's init, which is disabled where no backend can
	 * count (no core PMU and no single-stepping: a ThreadSanitizer build). */
	if (strncmp(mode, "pmu_", 4) == 0)
		knob_set("PAPI_HERITAGE_ALPHA21064_PMU_TEST_EVENT", "perf::PAGE-FAULTS");
	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	if (rc != PAPI_VER_CURRENT) {
		fprintf(stderr, "PAPI_library_init: %d (%s)\n", rc, PAPI_strerror(rc));
		return 1;
	}
	if (PAPI_get_component_index("alpha21064") < 0) {
		fprintf(stderr, "the alpha21064 component is not compiled into this libpapi\n");
		return 1;
	}
	if (strcmp(mode, "backend") != 0 && strncmp(mode, "pmu_", 4) != 0)
		heritage_test_require_backend("alpha21064", "software");
	if (!strcmp(mode, "loads"))
		test_loads();
	else if (!strcmp(mode, "profil"))
		test_profil();
	else if (!strcmp(mode, "two"))
		test_two();
	else if (!strcmp(mode, "together"))
		test_together();
	else if (!strcmp(mode, "errors"))
		test_errors();
	else if (!strcmp(mode, "cycles"))
		test_cycles(argc > 2 ? atoi(argv[2]) : 10000);
	else if (!strcmp(mode, "threads"))
		test_threads();
	else if (!strcmp(mode, "backend"))
		test_backend();
	else if (!strcmp(mode, "pmu_sampling"))
		test_pmu_sampling();
	else if (!strcmp(mode, "pmu_threads"))
		test_pmu_threads();
	else if (!strcmp(mode, "pmu_cycles"))
		test_pmu_cycles(argc > 2 ? atoi(argv[2]) : 2000);
	else {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	return heritage_test_done(mode);
}
