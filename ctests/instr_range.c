/*
 * instr_range: PAPI_set_opt(PAPI_INSTR_ADDRESS) on routines whose instruction
 * counts are certain (ctests/instr_loop.S): IA64_INST_RETIRED and the tagged
 * IBRP0 event count exactly the instructions executed inside the range, in
 * coarse and exact mode; instructions of a function called from the range
 * are not counted.
 */
#include <stdint.h>
#include <string.h>

#include "heritage_test.h"

long instr_loop(long n);
long instr_call(long n, void (*fn)(void));
long instr_load_sum(const int *a, long n);
extern char instr_loop_end[], instr_call_end[], instr_load_sum_end[];

__attribute__((noinline)) static void outside(void)
{
	__asm__ volatile("nop; nop; nop; nop");
}

static void measure(const char *what, void *start, void *end, int exact, void (*work)(void), long long want)
{
	int set = PAPI_NULL;
	PAPI_option_t opt;
	long long v[2];
	char backend[32];

	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_add_named_event(set, exact ? "itanium2:::IA64_INST_RETIRED:exact=1" : "itanium2:::IA64_INST_RETIRED"));
	CHECK_PAPI(PAPI_add_named_event(set, exact ? "itanium2:::IA64_TAGGED_INST_RETIRED_IBRP0_PMC8:exact=1"
	                                           : "itanium2:::IA64_TAGGED_INST_RETIRED_IBRP0_PMC8"));
	memset(&opt, 0, sizeof opt);
	opt.addr.eventset = set;
	opt.addr.start = (vptr_t)start;
	opt.addr.end = (vptr_t)end;
	CHECK_PAPI(PAPI_set_opt(PAPI_INSTR_ADDRESS, &opt));
	if (exact) {
		EXPECT_EQ("exact start_off", opt.addr.start_off, 0);
		EXPECT_EQ("exact end_off", opt.addr.end_off, 0);
	}
	CHECK_PAPI(PAPI_start(set));
	work();
	CHECK_PAPI(PAPI_stop(set, v));
	CHECK_PAPI(papi_heritage_itanium2_backend(set, backend, sizeof backend));
	printf("%s (%s, %s backend): start_off %d end_off %d, IA64_INST_RETIRED %lld, IBRP0 %lld (want %lld)\n", what,
	       exact ? "exact" : "coarse", backend, opt.addr.start_off, opt.addr.end_off, v[0], v[1], want);
	EXPECT_EQ("IA64_INST_RETIRED", v[0], want);
	EXPECT_EQ("IA64_TAGGED_INST_RETIRED_IBRP0_PMC8", v[1], want);
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
}

#define LOOP_N 20000
#define CALL_N 500
static void run_loop(void) { instr_loop(LOOP_N); }
static void run_call(void) { instr_call(CALL_N, outside); }

/* Itanium's IBR+DBR combination: a data range and an instruction range on
 * one set count only the accesses to the data made by the code. */
static void data_by_code(void)
{
	static int data[256];
	int set = PAPI_NULL;
	PAPI_option_t opt;
	long long v[1];
	char backend[32];

	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED:exact=1"));
	memset(&opt, 0, sizeof opt);
	opt.addr.eventset = set;
	opt.addr.start = (vptr_t)data;
	opt.addr.end = (vptr_t)(data + 256);
	CHECK_PAPI(PAPI_set_opt(PAPI_DATA_ADDRESS, &opt));
	opt.addr.start = (vptr_t)instr_load_sum;
	opt.addr.end = (vptr_t)instr_load_sum_end;
	CHECK_PAPI(PAPI_set_opt(PAPI_INSTR_ADDRESS, &opt));
	CHECK_PAPI(PAPI_start(set));
	instr_load_sum(data, 200);                 /* counted: 200 loads by the range */
	volatile int *vd = data;
	long other = 0;
	for (int i = 0; i < 50; i++)               /* not counted: other code */
		other += vd[i];
	CHECK_PAPI(PAPI_stop(set, v));
	CHECK_PAPI(papi_heritage_itanium2_backend(set, backend, sizeof backend));
	__asm__ volatile("" : : "r"(other));
	printf("data range + instruction range (%s backend): LOADS_RETIRED %lld (want 200, not the 50 loads of "
	       "other code)\n", backend, v[0]);
	EXPECT_EQ("LOADS_RETIRED by the instruction range", v[0], 200);
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
}

int main(void)
{
	heritage_test_init();
	/* Instruction ranges are single-stepped: only the pagetrap backend counts them. */
	heritage_test_require_backend("itanium2", "pagetrap");
	data_by_code();
	for (int exact = 0; exact <= 1; exact++) {
		measure("instr_loop", (void *)instr_loop, instr_loop_end, exact, run_loop, 3LL * LOOP_N + 2);
		measure("instr_call", (void *)instr_call, instr_call_end, exact, run_call, 3LL * CALL_N + 7);
	}
	PAPI_shutdown();
	return heritage_test_done("instr_range");
}
