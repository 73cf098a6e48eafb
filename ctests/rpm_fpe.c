/*
 * paragon_rpm's opt-in FP trap mode and page-fault soft counters, through
 * PAPI.  Run with PAPI_HERITAGE_PARAGON_RPM_FPE_TRAPS=invalid,divbyzero,overflow
 * ("fpe"), or without it ("off": the events must be refused, with how to opt
 * in).  "faults": rpms_dat and rpms_ptenotp rise by at least one per fresh
 * page touched.
 */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "heritage_test.h"

#define NDIV 1000
#define NINV 500
#define NOVF_MUL 100
#define NOVF_ADD 100

static volatile double zero = 0.0, one = 1.0, minus_one = -1.0, big = 1e308, ten = 10.0;
static double r_div[NDIV], r_inv[NINV], r_mul[NOVF_MUL], r_add[NOVF_ADD];

/* The exceptional operations; volatile operands so each runs, every time. */
static void compute(void)
{
	for (int i = 0; i < NDIV; i++)
		r_div[i] = (i & 1 ? -one : one) / zero;
	for (int i = 0; i < NINV; i++)
		r_inv[i] = i & 1 ? sqrt(minus_one) : zero / zero;
	for (int i = 0; i < NOVF_MUL; i++)
		r_mul[i] = big * ten;
	for (int i = 0; i < NOVF_ADD; i++)
		r_add[i] = big + big;
}

static int same_bits(const double *a, const double *b, int n)
{
	return memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

static sigjmp_buf jb;
static volatile sig_atomic_t app_fpe;
static void app_handler(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)ctx;
	app_fpe = si->si_code;
	siglongjmp(jb, 1);
}

static volatile int izero = 0;

static void test_fpe(int on)
{
	static const char *names[] = { "paragon_rpm:::rpms_ft", "paragon_rpm:::rpms_fpe_se",
		                       "paragon_rpm:::rpms_fpe_mo", "paragon_rpm:::rpms_fpe_ao",
		                       "paragon_rpm:::rpms_fpe_si", "paragon_rpm:::rpms_alltraps" };
	int set = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&set));
	int rc = PAPI_add_named_event(set, names[0]);
	if (!on) {
		EXPECT_EQ("rpms_ft without the trap mode is refused", rc, PAPI_ENOSUPP);
		if (!strstr(papi_heritage_last_error(), "PAPI_HERITAGE_PARAGON_RPM_FPE_TRAPS")) {
			fprintf(stderr, "the refusal does not say how to opt in: %s\n", papi_heritage_last_error());
			heritage_test_failures++;
		}
		return;
	}
	CHECK_PAPI(rc);
	for (int i = 1; i < 4; i++)
		CHECK_PAPI(PAPI_add_named_event(set, names[i]));
	/* inexact is not in the knob's list: its fields are refused. */
	EXPECT_EQ("rpms_fpe_si without inexact in the list", PAPI_add_named_event(set, names[4]), PAPI_ENOSUPP);

	/* The reference results, traps off (before PAPI_start). */
	compute();
	double ref_div[NDIV], ref_inv[NINV], ref_mul[NOVF_MUL], ref_add[NOVF_ADD];
	memcpy(ref_div, r_div, sizeof r_div);
	memcpy(ref_inv, r_inv, sizeof r_inv);
	memcpy(ref_mul, r_mul, sizeof r_mul);
	memcpy(ref_add, r_add, sizeof r_add);
	memset(r_div, 0, sizeof r_div);
	memset(r_inv, 0, sizeof r_inv);

	/* The application's own SIGFPE handler, installed before counting. */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = app_handler;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGFPE, &sa, NULL);

	long long v[4];
	CHECK_PAPI(PAPI_start(set));
	compute();
	CHECK_PAPI(PAPI_read(set, v));
	EXPECT_EQ("rpms_ft", v[0], NDIV + NINV + NOVF_MUL + NOVF_ADD);
	EXPECT_EQ("rpms_fpe_se (invalid + divbyzero)", v[1], NDIV + NINV);
	EXPECT_EQ("rpms_fpe_mo (mulsd overflow)", v[2], NOVF_MUL);
	EXPECT_EQ("rpms_fpe_ao (addsd overflow)", v[3], NOVF_ADD);
	EXPECT_EQ("1/0 results as with traps off", same_bits(r_div, ref_div, NDIV), 1);
	EXPECT_EQ("0/0, sqrt(-1) results as with traps off", same_bits(r_inv, ref_inv, NINV), 1);
	EXPECT_EQ("overflow results as with traps off", same_bits(r_mul, ref_mul, NOVF_MUL) && same_bits(r_add, ref_add, NOVF_ADD), 1);
	EXPECT_EQ("1/0 is inf", r_div[0] == INFINITY && r_div[1] == -INFINITY, 1);
	EXPECT_EQ("0/0 is nan", isnan(r_inv[0]) && isnan(r_inv[1]), 1);

	/* An integer division by zero is not ours: the application gets it. */
	if (sigsetjmp(jb, 1) == 0) {
		volatile int q = 7 / izero;
		(void)q;
		fprintf(stderr, "integer division by zero did not fault\n");
		heritage_test_failures++;
	}
	EXPECT_EQ("integer /0 reached the application's handler (FPE_INTDIV)", app_fpe, FPE_INTDIV);
	/* And counting goes on after the longjmp. */
	volatile double d = one / zero;
	(void)d;
	CHECK_PAPI(PAPI_stop(set, v));
	EXPECT_EQ("rpms_ft after the integer fault", v[0], NDIV + NINV + NOVF_MUL + NOVF_ADD + 1);
	/* Stopped: the traps are masked again, nothing more is counted. */
	d = one / zero;
	CHECK_PAPI(PAPI_start(set));
	CHECK_PAPI(PAPI_stop(set, v));
	EXPECT_EQ("nothing counted between stop and start", v[0], 0);
	printf("fpe: %d traps counted, results identical to traps off\n", NDIV + NINV + NOVF_MUL + NOVF_ADD + 1);
}

static void test_faults(void)
{
	static const char *names[] = { "paragon_rpm:::rpms_dat", "paragon_rpm:::rpms_ptenotp" };
	int set = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&set));
	for (int i = 0; i < 2; i++) {
		int rc = PAPI_add_named_event(set, names[i]);
		if (rc == PAPI_ENOSUPP)
			SKIP("%s: %s", names[i], papi_heritage_last_error());
		CHECK_PAPI(rc);
	}
	enum { N = 2000, SLACK = 20000 };
	char *p = mmap(NULL, (size_t)N * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		SKIP("mmap failed");
	long long v[2];
	CHECK_PAPI(PAPI_start(set));
	for (int i = 0; i < N; i++)
		((volatile char *)p)[(size_t)i * 4096] = 1;
	CHECK_PAPI(PAPI_stop(set, v));
	munmap(p, (size_t)N * 4096);
	/* System-wide per-CPU counts: other processes add theirs. */
	EXPECT_EQ("rpms_dat >= pages touched", v[0] >= N, 1);
	EXPECT_EQ("rpms_ptenotp >= pages touched", v[1] >= N, 1);
	EXPECT_EQ("rpms_dat not absurdly more", v[0] <= N + SLACK, 1);
	EXPECT_EQ("rpms_ptenotp not absurdly more", v[1] <= N + SLACK, 1);
	printf("faults: %d pages touched, rpms_dat +%lld, rpms_ptenotp +%lld\n", N, v[0], v[1]);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "fpe";
	heritage_test_init();
	if (strcmp(mode, "fpe") == 0)
		heritage_test_require_mechanism("single_step"); /* the trap mode steps each trapping instruction */
	if (strcmp(mode, "faults") == 0)
		test_faults();
	else
		test_fpe(strcmp(mode, "off") != 0);
	return heritage_test_done(mode);
}
