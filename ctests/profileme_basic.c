/*
 * profileme through PAPI's public API: sample sets added by name
 * (PAPI_add_named_event), started, read and stopped; PAPI_profil and
 * PAPI_overflow on a sample set.  The workloads are ctests/profileme_loops.S,
 * whose every PC is known.  Expectations come from the test's own
 * measurements, never from the component:
 *   - soft backend (period in ns of the thread's CPU time): any ~ the
 *     thread's CPU time, read with clock_gettime(CLOCK_THREAD_CPUTIME_ID);
 *   - ibs backend (period in dispatched ops): any ~ the instructions the
 *     loops execute, counted from their trip counts;
 *   - identities between sets (retired = retired^notrap + retired^!notrap,
 *     trap = any - notrap) hold exactly, and every value is a multiple of
 *     the period.
 * Modes: events, names, profil, overflow, forced (a forced backend that
 * cannot count is refused with its reason).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heritage_test.h"

void pm_hot(long n);
void pm_cold(long n);
void pm_taken3(long n);
long pm_unaligned(const void *p, long n);
extern const char pm_hot_end[], pm_cold_end[], pm_taken3_end[], pm_unaligned_end[];
/* src/tests/pm_soft_loops.S: a first store to each page, right after a
 * read system call (where most ticks land): page faults in the step. */
void pm_store_after_read(long n, int zero_fd, void *buf, char *p, long stride);

static long long thread_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Iterations of pm_hot that take about ms milliseconds here. */
static long calibrate(long ms)
{
	long n = 1 << 20;
	for (;;) {
		long long t0 = thread_ns();
		pm_hot(n);
		long long dt = thread_ns() - t0;
		if (dt > 20000000LL)
			return (long)((double)n * (double)ms * 1e6 / (double)dt);
		n *= 2;
	}
}

static int add(int set, const char *name)
{
	int rc = PAPI_add_named_event(set, name);
	if (rc != PAPI_OK) {
		fprintf(stderr, "PAPI_add_named_event(%s) = %d (%s): %s\n", name, rc, PAPI_strerror(rc),
		        papi_heritage_last_error());
		exit(1);
	}
	return rc;
}

static const char *units_of(const char *name)
{
	static PAPI_event_info_t info;
	int code;
	CHECK_PAPI(PAPI_event_name_to_code(name, &code));
	CHECK_PAPI(PAPI_get_event_info(code, &info));
	return info.units;
}

/* The period in effect: the backend rounds what was asked (the soft one up
 * to the kernel's tick, 4 ms at HZ 250, its highest rate). */
static long long period(int set)
{
	struct papi_heritage_profileme_sampling s;
	CHECK_PAPI(papi_heritage_profileme_sampling(set, &s));
	printf("backend %s, period %lld %s\n", s.backend, s.period, s.unit);
	return s.period;
}

static double wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void mode_events(void)
{
	static const char *const names[] = { "profileme:::any", "profileme:::retired", "profileme:::retired^notrap",
		"profileme:::retired^!notrap", "profileme:::notrap", "profileme:::trap", "profileme:::default" };
	enum { ANY, RETIRED, RET_NOTRAP, RET_TRAP, NOTRAP, TRAP, DEFAULT, N };
	int set = PAPI_NULL;
	long long v[N];
	CHECK_PAPI(PAPI_create_eventset(&set));
	for (int i = 0; i < N; i++)
		add(set, names[i]);
	int ibs = strcmp(units_of("profileme:::any"), "ops") == 0;
	long long p = period(set);
	long n = calibrate(150);
	static char buf[64];
	double w0 = wall_s();
	long long t0 = thread_ns();
	CHECK_PAPI(PAPI_start(set));
	pm_hot(3 * n);
	long s = pm_unaligned(buf + 1, n);
	long pages = 3000;
	char *fresh = mmap(NULL, (size_t)pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static char rbuf[1 << 20];
	int zero = open("/dev/zero", O_RDONLY);
	if (fresh == MAP_FAILED || zero < 0) {
		perror("mmap or /dev/zero");
		exit(1);
	}
	pm_store_after_read(pages, zero, rbuf, fresh, 4096);
	CHECK_PAPI(PAPI_stop(set, v));
	close(zero);
	munmap(fresh, (size_t)pages * 4096);
	long long cpu = thread_ns() - t0;
	double share = (double)cpu / 1e9 / (wall_s() - w0);
	printf("cpu %lld ns (%.0f %% of the wall time), sum %ld;", cpu, 100 * share, s);
	for (int i = 0; i < N; i++)
		printf(" %s=%lld", names[i] + 11, v[i]);
	printf("\n");

	for (int i = 0; i < N; i++)
		EXPECT(p > 0 && v[i] % p == 0, "%s = %lld is not a multiple of the period %lld", names[i], v[i], p);
	EXPECT(v[ANY] > 0, "no samples at all");
	if (ibs) {
		/* IBS leaves a trap unknown where its register bits are not
		 * valid (a load without DcLinAddrValid, profileme(3) IBS
		 * FIELDS): such a sample is in neither notrap nor trap. */
		EXPECT(v[RET_NOTRAP] + v[RET_TRAP] <= v[RETIRED], "retired^notrap + retired^!notrap > retired");
		EXPECT(v[TRAP] + v[NOTRAP] <= v[ANY], "trap + notrap > any");
	} else {
		EXPECT_EQ("retired = retired^notrap + retired^!notrap", v[RETIRED], v[RET_NOTRAP] + v[RET_TRAP]);
		EXPECT_EQ("trap = any - notrap (exactly one trap bit per sample)", v[TRAP], v[ANY] - v[NOTRAP]);
	}
	EXPECT_EQ("default = any", v[DEFAULT], v[ANY]);
	EXPECT(v[RETIRED] <= v[ANY], "retired %lld > any %lld", v[RETIRED], v[ANY]);
	if (ibs) {
		/* 2 instructions per iteration of each loop, 3 in pm_unaligned;
		 * IBS counts dispatched ops, and a fused sub+jnz may be one:
		 * between 1 and 3 ops per iteration. */
		double lo = 1.0 * 4 * (double)n, hi = 3.0 * 4 * (double)n;
		EXPECT(v[ANY] > 0.75 * lo && v[ANY] < 1.25 * hi, "any = %lld ops, the loops ran %.0f..%.0f ops", v[ANY],
		       lo, hi);
	} else {
		/* The soft backend: a first store to a page faults during its
		 * step (dtbmiss) and completes: retired^!notrap.  Most samples
		 * of pm_store_after_read are of that store. */
		EXPECT(v[RET_TRAP] > 0, "no retired^!notrap samples over %ld first stores to a page", pages);
		if (share < 0.9)
			/* CPU-time timers fire at ticks that find the thread
			 * running: one sharing its CPU misses some (profileme(3)). */
			printf("any vs CPU time not checked: the thread had %.0f %% of a CPU\n", 100 * share);
		else
			EXPECT(v[ANY] > 0.7 * (double)cpu && v[ANY] < 1.3 * (double)cpu,
			       "any = %lld ns, the thread ran %lld ns of CPU time", v[ANY], cpu);
	}
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
}

static void expect_add(int set, const char *name, int want, const char *why_has)
{
	int rc = PAPI_add_named_event(set, name);
	EXPECT(rc == want, "PAPI_add_named_event(%s) = %d (%s), want %d (%s)", name, rc, PAPI_strerror(rc), want,
	       PAPI_strerror(want));
	if (why_has)
		EXPECT(strstr(papi_heritage_last_error(), why_has) != NULL, "%s: the reason \"%s\" does not say \"%s\"",
		       name, papi_heritage_last_error(), why_has);
}

static void mode_names(void)
{
	int set = PAPI_NULL, code, code2;
	char name[PAPI_MAX_STR_LEN];
	CHECK_PAPI(PAPI_create_eventset(&set));
	expect_add(set, "profileme:::retired^bogus", PAPI_ENOEVNT, "position 9: unknown bit \"bogus\"");
	expect_add(set, "profileme:::retired+taken", PAPI_EINVAL, "joins columns");
	expect_add(set, "profileme:::retired::retired", PAPI_EINVAL, "joins columns");
	expect_add(set, "profileme:::retired:bogus", PAPI_ENOEVNT, "unknown counter");
	/* Two spellings of one set are one event (PAPI keeps a code per
	 * spelling; the component's name for both is the canonical one). */
	CHECK_PAPI(PAPI_event_name_to_code("profileme:::trap^/dtbmiss", &code));
	CHECK_PAPI(PAPI_event_name_to_code("profileme:::!notrap^!dtbmiss", &code2));
	PAPI_event_info_t i1, i2;
	CHECK_PAPI(PAPI_get_event_info(code, &i1));
	CHECK_PAPI(PAPI_get_event_info(code2, &i2));
	EXPECT(strcmp(i1.short_descr, "!notrap^!dtbmiss") == 0 && strcmp(i2.short_descr, i1.short_descr) == 0,
	       "canonical names %s and %s", i1.short_descr, i2.short_descr);
	(void)name;
	/* The enumerable events are the 27 fields and any. */
	int n = 0, cidx = PAPI_get_component_index("profileme");
	code = PAPI_NATIVE_MASK;
	if (PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST, cidx) == PAPI_OK)
		do
			n++;
		while (PAPI_enum_cmp_event(&code, PAPI_ENUM_EVENTS, cidx) == PAPI_OK);
	EXPECT_EQ("enumerated events", n, 28);
	/* A field the backend does not produce is refused, not counted as 0. */
	if (strcmp(units_of("profileme:::any"), "ns") == 0)
		expect_add(set, "profileme:::retired:retdelay", PAPI_ENOSUPP, "is not observed by the soft backend");
	CHECK_PAPI(PAPI_destroy_eventset(&set));
}

/* PAPI_profil on a sample set: every sample of `any` in pm_hot and pm_cold
 * lands in a bucket at its own PC; pm_hot ran 3 times as long. */
static void mode_profil(void)
{
	int set = PAPI_NULL, code;
	long long v;
	const char *lo = (const char *)pm_hot, *hi = pm_cold_end;
	size_t nb = (size_t)(hi - lo) / 2 + 1;
	unsigned short *buf = calloc(nb, sizeof *buf);
	CHECK_PAPI(PAPI_create_eventset(&set));
	add(set, "profileme:::any");
	CHECK_PAPI(PAPI_event_name_to_code("profileme:::any", &code));
	long long p = period(set);
	CHECK_PAPI(PAPI_profil(buf, (unsigned)(nb * sizeof *buf), (vptr_t)lo, 65536, set, code, (int)p,
	                       PAPI_PROFIL_POSIX));
	/* ~250 samples at the soft backend's 4 ms. */
	long n = calibrate(250);
	CHECK_PAPI(PAPI_start(set));
	/* The thread's share of a CPU in each loop apart: a busy spell in one
	 * of them skews the split though the whole run had 90 %. */
	double w0 = wall_s();
	long long c0 = thread_ns();
	pm_hot(3 * n);
	double w1 = wall_s();
	long long c1 = thread_ns();
	pm_cold(n);
	long long c2 = thread_ns();
	double cpu_hot = (double)(c1 - c0) / 1e9 / (w1 - w0), cpu_cold = (double)(c2 - c1) / 1e9 / (wall_s() - w1);
	CHECK_PAPI(PAPI_stop(set, &v));
	/* The soft backend's timer runs on the thread's CPU clock: its split
	 * is the loops' CPU time, 3:1 only when both ran at the same speed
	 * (63:37 was seen against 3:1, both loops at 90 % of a CPU, beside
	 * make -j2 check). */
	double want = (double)(c1 - c0) / (double)(c2 - c0);
	double cpu_share = cpu_hot < cpu_cold ? cpu_hot : cpu_cold;
	long long hot = 0, cold = 0, other = 0;
	for (size_t i = 0; i < nb; i++) {
		const char *pc = lo + 2 * i;
		if (pc >= (const char *)pm_hot && pc < pm_hot_end)
			hot += buf[i];
		else if (pc >= (const char *)pm_cold && pc < pm_cold_end)
			cold += buf[i];
		else
			other += buf[i];
	}
	double share = hot + cold ? (double)hot / (double)(hot + cold) : 0;
	printf("profil: %lld in pm_hot, %lld in pm_cold, %lld elsewhere in range; any = %lld samples; hot share %.3f "
	       "(its CPU time's %.3f)\n",
	       hot, cold, other, v / p, share, want);
	EXPECT(hot + cold >= 20, "only %lld samples landed in the loops", hot + cold);
	/* Within 3.5 binomial sigmas, where the thread had its CPU: the soft
	 * backend's samples follow the ticks that find the thread running,
	 * which on a busy machine is not its CPU time (profileme(3); 98:2 was
	 * seen for 3:1 in CI, two test passes at once). */
	double sigma = sqrt(want * (1 - want) / (double)(hot + cold ? hot + cold : 1));
	if (cpu_share < 0.9 && strcmp(units_of("profileme:::any"), "ns") == 0)
		printf("the split is not checked: the thread had %.0f %% of a CPU in pm_hot, %.0f %% in pm_cold\n",
		       100 * cpu_hot, 100 * cpu_cold);
	else
		EXPECT(share > want - 3.5 * sigma && share < want + 3.5 * sigma,
		       "pm_hot got %.1f %% of %lld samples, it had %.1f %% of the loops' CPU time", 100 * share,
		       hot + cold, 100 * want);
	/* Each sample of the set is one threshold's worth: one profil hit each,
	 * except those outside the buffer (the calls, the stop). */
	EXPECT(hot + cold + other <= v / p && hot + cold + other >= (v / p) * 9 / 10,
	       "%lld hits for %lld samples", hot + cold + other, v / p);
	CHECK_PAPI(PAPI_profil(buf, (unsigned)(nb * sizeof *buf), (vptr_t)lo, 65536, set, code, 0, PAPI_PROFIL_POSIX));
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
	free(buf);
}

static long long handled;
static void handler(int set, void *pc, long long ovec, void *ctx)
{
	(void)set;
	(void)ovec;
	(void)ctx;
	if ((const char *)pc >= (const char *)pm_taken3 && (const char *)pc < pm_taken3_end)
		handled++;
	else
		handled += 1000000; /* a PC outside the loop: not the tagged instruction's */
}

/* PAPI_overflow on `taken`: every delivery is the PC of a sample in the loop. */
static void mode_overflow(void)
{
	int set = PAPI_NULL;
	long long v[2];
	CHECK_PAPI(PAPI_create_eventset(&set));
	add(set, "profileme:::taken");
	add(set, "profileme:::any");
	long long p = period(set);
	int code;
	CHECK_PAPI(PAPI_event_name_to_code("profileme:::taken", &code));
	CHECK_PAPI(PAPI_overflow(set, code, (int)(2 * p), 0, handler));
	long n = calibrate(150);
	CHECK_PAPI(PAPI_start(set));
	pm_taken3(n);
	CHECK_PAPI(PAPI_stop(set, v));
	printf("taken = %lld (%lld samples), any = %lld; handler calls %lld\n", v[0], v[0] / p, v[1], handled);
	EXPECT(handled < 1000000, "a delivery with a PC outside pm_taken3");
	EXPECT_EQ("one delivery per 2 taken samples", handled, v[0] / (2 * p));
	EXPECT(v[0] > 0, "no taken samples in a loop whose branch is taken 3 times in 4");
	CHECK_PAPI(PAPI_overflow(set, code, 0, 0, handler));
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
}

/* PAPI_HERITAGE_PROFILEME_BACKEND names a backend this machine cannot run:
 * adding fails with PAPI_ENOSUPP (or PAPI_EPERM when this account is the
 * reason) and the probe's reason; never a set that samples nothing. */
static void mode_forced(void)
{
	const char *b = getenv("PAPI_HERITAGE_PROFILEME_BACKEND");
	char why[1024];
	if (!b)
		SKIP("set PAPI_HERITAGE_PROFILEME_BACKEND");
	int usable = papi_heritage_backend_usable("profileme", b, why, sizeof why);
	if (usable == PAPI_OK)
		SKIP("the %s backend works here: nothing to refuse", b);
	int set = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&set));
	int rc = PAPI_add_named_event(set, "profileme:::retired");
	printf("forced %s: %d (%s): %s\n", b, rc, PAPI_strerror(rc), papi_heritage_last_error());
	EXPECT(rc == usable, "PAPI_add_named_event = %d, want %d (%s)", rc, usable, PAPI_strerror(usable));
	EXPECT(strstr(papi_heritage_last_error(), b) != NULL, "the reason does not name the backend");
	CHECK_PAPI(PAPI_destroy_eventset(&set));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "events";
	heritage_test_init();
	if (strcmp(mode, "forced") != 0) {
		int cidx = PAPI_get_component_index("profileme");
		const PAPI_component_info_t *ci = PAPI_get_component_info(cidx);
		if (!ci || ci->disabled)
			SKIP("profileme is disabled here: %s", ci ? ci->disabled_reason : "not built");
		heritage_test_require_backend("profileme", getenv("PAPI_HERITAGE_PROFILEME_BACKEND"));
	}
	if (strcmp(mode, "events") == 0)
		mode_events();
	else if (strcmp(mode, "names") == 0)
		mode_names();
	else if (strcmp(mode, "profil") == 0)
		mode_profil();
	else if (strcmp(mode, "overflow") == 0)
		mode_overflow();
	else if (strcmp(mode, "forced") == 0)
		mode_forced();
	else {
		fprintf(stderr, "usage: profileme_basic events|names|profil|overflow|forced\n");
		return 2;
	}
	return heritage_test_done("profileme_basic");
}
