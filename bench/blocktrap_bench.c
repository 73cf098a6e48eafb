/*
 * blocktrap_bench: the cost of counting an instruction range of code that was
 * not instrumented, per in-range instruction, on a 9-instruction loop in a
 * page of its own (issue 22's measurement): native, the blocktrap backend
 * (an int3 per block, watch_blocktrap.c) and the pagetrap backend (a step
 * per instruction), IA64_INST_RETIRED:exact=1 over [ib_loop, ib_loop_end).
 * Each row is the median of RUNS runs; the counts are checked against the
 * loop's known length (9n + 2).
 *
 *   blocktrap_bench [RUNS]
 */
#include <stdint.h>
#include <string.h>

#include <papi.h>
#include "papi_heritage.h"
#include "bench.h"
#include "../ctests/knob.h"

/* long ib_loop(long n), n >= 1: 9n + 2 instructions, one block per iteration. */
long ib_loop(long n);
extern char ib_loop_end[];
__asm__(".text\n"
        "	.balign 4096\n"
        "	.globl ib_loop\n"
        "	.type ib_loop, @function\n"
        "ib_loop:\n"
        "	.cfi_startproc\n"
        "	mov	%rdi, %rcx\n"
        "1:	add	$1, %rax\n"
        "	xor	%rcx, %rdx\n"
        "	lea	3(%rdx), %rsi\n"
        "	add	%rsi, %r8\n"
        "	shl	$1, %r9\n"
        "	or	%r8, %r9\n"
        "	sub	$2, %r10\n"
        "	dec	%rcx\n"
        "	jnz	1b\n"
        "	ret\n"
        "	.cfi_endproc\n"
        "	.globl ib_loop_end\n"
        "ib_loop_end:\n"
        "	.size ib_loop, . - ib_loop\n"
        "	.balign 4096\n");

#define INSNS(n) (9LL * (n) + 2)

/* Seconds for ib_loop(n) counted on backend (NULL: not counted). */
static double run(const char *backend, long n)
{
	int set = PAPI_NULL;
	long long v = 0;
	if (!backend) {
		double t0 = bench_now();
		ib_loop(n);
		return bench_now() - t0;
	}
	PAPI_option_t opt;
	if (PAPI_create_eventset(&set) != PAPI_OK ||
	    PAPI_add_named_event(set, "itanium2:::IA64_INST_RETIRED:exact=1") != PAPI_OK)
		exit(1);
	memset(&opt, 0, sizeof opt);
	opt.addr.eventset = set;
	opt.addr.start = (vptr_t)(uintptr_t)ib_loop;
	opt.addr.end = (vptr_t)(uintptr_t)ib_loop_end;
	if (PAPI_set_opt(PAPI_INSTR_ADDRESS, &opt) != PAPI_OK)
		exit(1);
	knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", backend);
	int rc = PAPI_start(set);
	knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", NULL);
	if (rc != PAPI_OK) {
		printf("%s: cannot count here: %s\n", backend, papi_heritage_last_error());
		return -1;
	}
	double t0 = bench_now();
	ib_loop(n);
	double t = bench_now() - t0;
	PAPI_stop(set, &v);
	PAPI_cleanup_eventset(set);
	PAPI_destroy_eventset(&set);
	if (v != INSNS(n)) {
		printf("%s: counted %lld instructions, want %lld\n", backend, v, INSNS(n));
		exit(1);
	}
	return t;
}

static double row(const char *label, const char *backend, long n, int runs)
{
	double t[32];
	for (int i = 0; i < runs; i++)
		if ((t[i] = run(backend, n)) < 0)
			return -1;
	double med = bench_median(t, runs);
	double ns = 1e9 * med / (double)INSNS(n);
	printf("%-38s n=%-8ld %10.3f ms  %10.2f ns per in-range instruction\n", label, n, 1e3 * med, ns);
	return ns;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 5;
	if (runs < 1 || runs > 32)
		runs = 5;
	if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT)
		return 1;
	printf("=== blocktrap_bench: a 9-instruction loop, IA64_INST_RETIRED:exact=1 over it, median of %d runs\n", runs);
	double native = row("native (no counting)", NULL, 2000000, runs);
	double bt = row("blocktrap (int3 per block)", "blocktrap", 200000, runs);
	double pt = row("pagetrap (a step per instruction)", "pagetrap", 20000, runs);
	if (bt > 0 && native > 0)
		printf("blocktrap: x%.0f native\n", bt / native);
	if (pt > 0 && native > 0)
		printf("pagetrap:  x%.0f native\n", pt / native);
	if (bt > 0 && pt > 0)
		printf("blocktrap is %.1fx cheaper per in-range instruction than pagetrap stepping (target >= 20x)\n",
		       pt / bt);
	PAPI_shutdown();
	return 0;
}
