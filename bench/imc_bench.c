/*
 * imc_bench: a read is a load.  PAPI_read of imc accumulation events (core
 * and thread pages, written by the engine) against PAPI_read of
 * perf::TASK-CLOCK (a read(2) of a perf fd), the peer, in the same run:
 * interleaved batches, medians.  Target: >= 20x faster.  (Trace mode's
 * cost is imc_trace_bench's.)  A missed target is a result (MISS), not an
 * error; an event that cannot count here is reported with PAPI's reason and
 * its line skipped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <papi.h>
#include <papi_heritage.h>

#include "bench.h"

#define BATCHES 9

static int make_set(const char *name)
{
	int set = PAPI_NULL;
	if (PAPI_create_eventset(&set) != PAPI_OK)
		return -1;
	int rc = PAPI_add_named_event(set, name);
	if (rc != PAPI_OK) {
		printf("%s: not measured here: %s (%s)\n", name, PAPI_strerror(rc), papi_heritage_last_error());
		PAPI_destroy_eventset(&set);
		return -1;
	}
	return set;
}

static void read_costs(void)
{
	const char *imc_names[] = { "imc:::core_imc::CPM_32MHZ_CYC:cpu=0", "imc:::thread_imc::CPM_CS_32MHZ_CYC_USER" };
	int peer = make_set("perf::TASK-CLOCK");
	if (peer < 0) {
		printf("read cost: no peer (perf::TASK-CLOCK) here: the ratio is not measured\n");
		return;
	}
	for (unsigned k = 0; k < sizeof imc_names / sizeof imc_names[0]; k++) {
		int set = make_set(imc_names[k]);
		if (set < 0)
			continue;
		double r[BATCHES], p[BATCHES];
		for (int b = 0; b < BATCHES; b++) {
			r[b] = bench_papi_read_ns(set, 200000);
			p[b] = bench_papi_read_ns(peer, 20000);
		}
		double mr = bench_median(r, BATCHES), mp = bench_median(p, BATCHES);
		printf("PAPI_read %-42s %8.1f ns\n", imc_names[k], mr);
		printf("PAPI_read %-42s %8.1f ns (peer)\n", "perf::TASK-CLOCK", mp);
		printf("perf::TASK-CLOCK / imc: %.1f (target >= 20): %s\n", mp / mr, mp / mr >= 20 ? "PASS" : "MISS");
		PAPI_cleanup_eventset(set);
		PAPI_destroy_eventset(&set);
	}
}

int main(void)
{
	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	if (rc != PAPI_VER_CURRENT) {
		fprintf(stderr, "PAPI_library_init: %d\n", rc);
		return 1;
	}
	printf("=== imc: PAPI_read cost (median of %d interleaved batches)\n", BATCHES);
	read_costs();
	PAPI_shutdown();
	return 0;
}
