/*
 * overflow: PAPI_overflow, PAPI_profil and PAPI_sprofil on every heritage
 * component, called the way a sampling tool calls them (issue 20: all three
 * returned PAPI_OK and then delivered nothing).  One row per component and
 * event kind; each row runs a loop whose count the test knows or reads back,
 * and checks that the handler ran as often as the count says, with PCs in
 * that loop, that the profile buckets filled, and that what cannot overflow
 * is refused with a reason.
 *
 *   overflow ROW handler|profil|sprofil|profil_cleanup [force_sw]
 *   overflow refusals
 *
 * Delivery counts: where the component delivers from its own counting
 * (hardware_intr, not PAPI_OVERFLOW_FORCE_SW) every threshold crossing is a
 * call: value / threshold, +-1.  Where PAPI emulates overflow, its timer (10
 * ms of CPU time) reads the set and calls the handler at most once a tick,
 * when the value passed the deadline: between 1 and value / threshold + 1.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "heritage_test.h"
#include "knob.h"

/* The loops a row's PCs must fall in: their own section, so its bounds are
 * the linker's __start_/__stop_ symbols. */
#define WORK __attribute__((noinline, section("heritage_work")))
extern const char __start_heritage_work[], __stop_heritage_work[];
long alpha_load_loop(const long *p, long n);
extern const char alpha_load_loop_end[];

/* The watched array has a page of its own, mapped before PAPI starts:
 * nothing else the test touches (the handler's records above all) shares
 * its protection, and it is not static storage, which the instrument
 * backend cannot see (the compiler does not instrument accesses by name). */
static volatile long *watched;
#define WATCHED_BYTES 512

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

WORK static long load_loop(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += watched[i & 63];
	return s;
}

/* Fresh pages until the thread has used `seconds` of CPU: page faults. */
WORK static long fault_loop(double seconds)
{
	const size_t pages = 4096, page = 4096;
	long faults = 0;
	double end = thread_cpu_s() + seconds;
	while (thread_cpu_s() < end) {
		char *p = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			break;
		for (size_t i = 0; i < pages; i++)
			((volatile char *)p)[i * page] = 1;
		faults += (long)pages;
		munmap(p, pages * page);
	}
	return faults;
}

WORK static long spin_loop(double seconds)
{
	volatile long x = 0;
	double end = thread_cpu_s() + seconds;
	while (thread_cpu_s() < end)
		for (int i = 0; i < 1000000; i++)
			x += i;
	return x;
}

static long alpha_data[4] = { 1, 2, 3, 4 };

struct row {
	const char *name;
	const char *component;
	const char *event;
	long long threshold;
	int data_range;          /* PAPI_DATA_ADDRESS over `watched`, exact */
	const char *env, *env_value;
	enum { LOADS, FAULTS, SPIN, ALPHA_LOADS } work;
	long n;                  /* loads (LOADS, ALPHA_LOADS) */
	double seconds;          /* CPU time (FAULTS, SPIN) */
	int exact_value;         /* PAPI_stop's value must equal n */
	int polled;              /* the component polls it on PAPI's timer even in its own mode */
};

static const struct row rows[] = {
	{ .name = "itanium2_loads", .component = "itanium2", .event = "itanium2:::LOADS_RETIRED:exact=1",
	  .threshold = 500, .data_range = 1, .work = LOADS, .n = 11500, .exact_value = 1 },
	{ .name = "itanium2_cycles", .component = "itanium2", .event = "itanium2:::CPU_CYCLES",
	  .threshold = 20000000, .work = SPIN, .seconds = 0.4, .polled = 1 },
	{ .name = "paragon_rpm_dat", .component = "paragon_rpm", .event = "paragon_rpm:::rpms_dat",
	  .threshold = 500, .work = FAULTS, .seconds = 0.4 },
	/* For every account: interrupts need no privilege (/proc/interrupts);
	 * the spinning CPU's timer ticks alone make a few hundred. */
	{ .name = "paragon_rpm_int", .component = "paragon_rpm", .event = "paragon_rpm:::rpms_int",
	  .threshold = 20, .work = SPIN, .seconds = 0.4 },
	{ .name = "alpha21064_loads", .component = "alpha21064", .event = "alpha21064:::LOAD_INSNS:width=12",
	  .threshold = 4096, .env = "PAPI_HERITAGE_ALPHA21064_BACKEND", .env_value = "software",
	  .work = ALPHA_LOADS, .n = 8 * 4096 + 100 },
	/* The thread's user time x 32 MHz in units of its scale 512: 0.4 s of
	 * spinning is 25000; polled on PAPI's timer. */
	{ .name = "imc_thread_cyc", .component = "imc", .event = "imc:::thread_imc::CPM_CS_32MHZ_CYC_USER",
	  .threshold = 2500, .work = SPIN, .seconds = 0.4, .polled = 1 },
	/* Every sample of `any` adds the period (the soft backend's: the
	 * kernel's tick of the thread's CPU time, 4 ms at HZ 250); a delivery
	 * per 20 ms crossed, each at the tagged instruction's own PC. */
	{ .name = "profileme_any", .component = "profileme", .event = "profileme:::any",
	  .threshold = 20000000, .env = "PAPI_HERITAGE_PROFILEME_BACKEND", .env_value = "soft",
	  .work = SPIN, .seconds = 0.4 },
};

#define MAX_CALLS 8192
static struct {
	int n, foreign;
	int eventset;
	uintptr_t pc[MAX_CALLS];
	long long vec[MAX_CALLS];
} calls;

static void handler(int EventSet, void *address, long long overflow_vector, void *context)
{
	(void)context;
	if (EventSet != calls.eventset)
		calls.foreign++;
	if (calls.n < MAX_CALLS) {
		calls.pc[calls.n] = (uintptr_t)address;
		calls.vec[calls.n] = overflow_vector;
	}
	calls.n++;
}

/* In the C library or the vDSO, which the loops call (clock_gettime,
 * mmap, munmap). */
static int in_callee(uintptr_t pc)
{
	Dl_info info;
	if (!dladdr((void *)pc, &info) || !info.dli_fname)
		return 0;
	return strstr(info.dli_fname, "libc.so") != NULL || strstr(info.dli_fname, "vdso") != NULL;
}

static void work_bounds(const struct row *r, uintptr_t *lo, uintptr_t *hi)
{
	if (r->work == ALPHA_LOADS) {
		*lo = (uintptr_t)alpha_load_loop;
		*hi = (uintptr_t)alpha_load_loop_end;
	} else {
		*lo = (uintptr_t)__start_heritage_work;
		*hi = (uintptr_t)__stop_heritage_work;
	}
}

static void run_work(const struct row *r)
{
	switch (r->work) {
	case LOADS:
		EXPECT_EQ("load loop sum", load_loop(r->n), r->n / 64 * (64 * 63 / 2) + (r->n % 64) * (r->n % 64 - 1) / 2);
		break;
	case FAULTS:
		EXPECT(fault_loop(r->seconds) > 0, "no page touched");
		break;
	case SPIN:
		spin_loop(r->seconds);
		break;
	case ALPHA_LOADS:
		EXPECT_EQ("alpha loop result", alpha_load_loop(alpha_data, r->n), r->n);
		break;
	}
}

/* One run of the row's work in a started set: PAPI_stop's value, checked
 * against the loop's own count where the row knows it. */
static long long measure(int es, const struct row *r)
{
	long long v = 0;
	CHECK_PAPI(PAPI_start(es));
	run_work(r);
	CHECK_PAPI(PAPI_stop(es, &v));
	if (r->exact_value)
		EXPECT_EQ("PAPI_stop value", v, r->n);
	return v;
}

static const struct row *find_row(const char *name)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		if (!strcmp(rows[i].name, name))
			return &rows[i];
	return NULL;
}

/* A set with the row's event, or a skip with the reason the component gave. */
static int make_set(const struct row *r, int *code)
{
	int es = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&es));
	CHECK_PAPI(PAPI_assign_eventset_component(es, PAPI_get_component_index(r->component)));
	int rc = PAPI_event_name_to_code(r->event, code);
	if (rc == PAPI_OK)
		rc = PAPI_add_event(es, *code);
	if (rc == PAPI_ENOSUPP || rc == PAPI_EPERM || rc == PAPI_ECMP)
		SKIP("%s cannot count here (%s): %s", r->event, PAPI_strerror(rc), papi_heritage_last_error());
	CHECK_PAPI(rc);
	if (r->data_range) { /* after the :exact=1 event: the range is mapped in its mode */
		for (long i = 0; i < 64; i++)
			watched[i] = i;
		PAPI_option_t opt;
		CHECK_PAPI(heritage_test_range(es, PAPI_DATA_ADDRESS, (const void *)watched,
		                               (const char *)watched + WATCHED_BYTES, &opt));
	}
	return es;
}

static int hardware_delivery(const struct row *r, int force_sw)
{
	const PAPI_component_info_t *ci = PAPI_get_component_info(PAPI_get_component_index(r->component));
	return ci && ci->hardware_intr && !force_sw && !r->polled;
}

/* The handler ran value / threshold times (+-1) when the component
 * delivers, between 1 and value / threshold + 1 when PAPI's timer does. */
static void expect_deliveries(const char *what, int n, long long value, long long threshold, int exact)
{
	long long want = value / threshold;
	printf("%s: %d deliveries for %lld counted at threshold %lld (%s)\n", what, n, value, threshold,
	       exact ? "the component's own, exact" : "PAPI's timer");
	if (exact)
		EXPECT(n >= want - 1 && n <= want + 1, "%s: %d deliveries, want %lld +-1", what, n, want);
	else /* a count under one threshold (a loaded machine's few samples) may have none */
		EXPECT(n >= (want > 0) && n <= want + 1, "%s: %d deliveries, want %d..%lld", what, n, want > 0, want + 1);
}

static void test_handler(const struct row *r, int force_sw)
{
	int code;
	int es = make_set(r, &code);
	int exact = hardware_delivery(r, force_sw);
	CHECK_PAPI(PAPI_overflow(es, code, (int)r->threshold, force_sw ? PAPI_OVERFLOW_FORCE_SW : 0, handler));
	memset(&calls, 0, sizeof calls);
	calls.eventset = es;
	long long v = measure(es, r);
	expect_deliveries(r->name, calls.n, v, r->threshold, exact);
	EXPECT_EQ("handler calls for another event set", calls.foreign, 0);
	char backend[64];
	if (!strcmp(r->component, "itanium2") && papi_heritage_itanium2_backend(es, backend, sizeof backend) == PAPI_OK)
		printf("%s: counted by the %s backend\n", r->name, backend);

	uintptr_t lo, hi;
	work_bounds(r, &lo, &hi);
	/* A sampling component's deliveries come with its sample's PC: where
	 * the thread's CPU time went, as with PAPI's tick (profileme_any: once
	 * 1 of 20 outside the loop, with the clock reads it makes). */
	int sampled = !strcmp(r->component, "profileme");
	int pc_exact = exact && !sampled;
	int inside = 0, n = calls.n < MAX_CALLS ? calls.n : MAX_CALLS;
	for (int i = 0; i < n; i++) {
		inside += (calls.pc[i] >= lo && calls.pc[i] < hi) || (!pc_exact && in_callee(calls.pc[i]));
		EXPECT_EQ("overflow vector: the event's bit", calls.vec[i], 1);
	}
	printf("%s: %d of %d handler PCs in the work loop [%#lx, %#lx)%s\n", r->name, inside, n, (unsigned long)lo,
	       (unsigned long)hi, pc_exact ? "" : " or the libc/vDSO calls it makes");
	/* The component's own deliveries come from the counted accesses
	 * themselves.  PAPI's tick finds the thread wherever its CPU time goes:
	 * the loop or the clock read and mmap/munmap it calls (munmap of 4096
	 * touched pages is most of the fault loop's system time), and now and
	 * then PAPI_start/PAPI_stop. */
	EXPECT(pc_exact ? inside == n : 4 * inside >= 3 * n, "%d of %d PCs outside the work loop", n - inside, n);

	int index = -1, nidx = 1;
	CHECK_PAPI(PAPI_get_overflow_event_index(es, 1, &index, &nidx));
	EXPECT_EQ("PAPI_get_overflow_event_index: events", nidx, 1);
	EXPECT_EQ("PAPI_get_overflow_event_index: position", index, 0);

	/* Disarmed, the set counts on and calls nothing. */
	CHECK_PAPI(PAPI_overflow(es, code, 0, force_sw ? PAPI_OVERFLOW_FORCE_SW : 0, handler));
	memset(&calls, 0, sizeof calls);
	CHECK_PAPI(PAPI_start(es));
	run_work(r);
	CHECK_PAPI(PAPI_stop(es, &v));
	EXPECT_EQ("handler calls once disarmed", calls.n, 0);
	CHECK_PAPI(PAPI_cleanup_eventset(es));
	CHECK_PAPI(PAPI_destroy_eventset(&es));
}

static unsigned sum_buckets(const unsigned short *b, size_t n)
{
	unsigned t = 0;
	for (size_t i = 0; i < n; i++)
		t += b[i];
	return t;
}

/* PAPI_profil with one 16-bit bucket per 2 bytes of the work loop's code
 * (scale 65536), or PAPI_sprofil with that region and a decoy region of
 * the same size elsewhere that must stay empty. */
static void test_profil(const struct row *r, int force_sw, int sprofil, int cleanup_armed)
{
	int code;
	int es = make_set(r, &code);
	int exact = hardware_delivery(r, force_sw);
	uintptr_t lo, hi;
	work_bounds(r, &lo, &hi);
	size_t nb = (hi - lo + 1) / 2;
	unsigned short *buf = calloc(nb, sizeof *buf), *decoy = calloc(nb, sizeof *decoy);
	int flags = PAPI_PROFIL_POSIX | (force_sw ? PAPI_OVERFLOW_FORCE_SW : 0);
	PAPI_sprofil_t sp[2];
	if (sprofil) {
		sp[0] = (PAPI_sprofil_t){ .pr_base = buf, .pr_size = (unsigned)(nb * 2), .pr_off = (vptr_t)lo,
		                          .pr_scale = 65536 };
		sp[1] = (PAPI_sprofil_t){ .pr_base = decoy, .pr_size = (unsigned)(nb * 2),
		                          .pr_off = (vptr_t)(uintptr_t)&PAPI_library_init, .pr_scale = 65536 };
		CHECK_PAPI(PAPI_sprofil(sp, 2, es, code, (int)r->threshold, flags));
	} else {
		CHECK_PAPI(PAPI_profil(buf, (unsigned)(nb * 2), (vptr_t)lo, 65536, es, code, (int)r->threshold, flags));
	}
	long long v = measure(es, r);
	unsigned total = sum_buckets(buf, nb);
	const char *what = sprofil ? "sprofil samples in the work loop" : "profil samples in the work loop";
	if (exact && !strcmp(r->component, "profileme")) {
		/* A sampling component delivers at its samples' PCs, and the
		 * buckets cover the loop alone: a delivery in the clock reads
		 * the loop makes is in no bucket (2 of 20 in a killed CI pass),
		 * as test_handler allows for its PCs. */
		long long want = v / r->threshold;
		printf("%s: %u deliveries for %lld counted at threshold %lld (sampled: 3 in 4 in the loop)\n", what, total,
		       v, r->threshold);
		EXPECT(4 * (long long)total >= 3 * want && total <= want + 1, "%s: %u deliveries, want %lld..%lld", what,
		       total, (3 * want + 3) / 4, want + 1);
	} else {
		expect_deliveries(what, (int)total, v, r->threshold, exact);
	}
	if (sprofil)
		EXPECT_EQ("samples in the decoy region", sum_buckets(decoy, nb), 0);
	/* Disarmed with threshold 0, as PAPI documents (PAPI 7.0.0's own
	 * PAPI_cleanup_eventset of a still-profiling set with hardware
	 * interrupts disarms the overflow first and then fails its profile's
	 * PAPI_EINVAL). */
	if (cleanup_armed) /* PAPI cleans the profile up itself (papi-7.0.0-cleanup-profiling.patch) */
		EXPECT_EQ("PAPI_cleanup_eventset of a still-profiling set", PAPI_cleanup_eventset(es), PAPI_OK);
	else if (sprofil)
		CHECK_PAPI(PAPI_sprofil(sp, 2, es, code, 0, flags));
	else
		CHECK_PAPI(PAPI_profil(buf, (unsigned)(nb * 2), (vptr_t)lo, 65536, es, code, 0, flags));
	CHECK_PAPI(PAPI_cleanup_eventset(es));
	CHECK_PAPI(PAPI_destroy_eventset(&es));
	free(buf);
	free(decoy);
}

/* Readings that are not counts since PAPI_start cannot be thresholds:
 * PAPI_overflow in software mode does not ask the component, so PAPI_start
 * refuses, naming the event; disarmed, the same set starts. */
static void test_refusals(void)
{
	static const char *const refused[] = { "paragon_rpm:::rpm_time", "paragon_rpm:::rpm_time_s" };
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		int es = PAPI_NULL, code;
		CHECK_PAPI(PAPI_create_eventset(&es));
		CHECK_PAPI(PAPI_event_name_to_code(refused[i], &code));
		CHECK_PAPI(PAPI_add_event(es, code));
		CHECK_PAPI(PAPI_overflow(es, code, 1000, 0, handler));
		int rc = PAPI_start(es);
		EXPECT_EQ("PAPI_start with overflow on an absolute reading", rc, PAPI_ENOSUPP);
		const char *why = papi_heritage_last_error();
		EXPECT(strstr(why, refused[i] + strlen("paragon_rpm:::")) != NULL, "the message names the event: %s", why);
		printf("%s: PAPI_start = %s: %s\n", refused[i], PAPI_strerror(rc), why);
		CHECK_PAPI(PAPI_overflow(es, code, 0, 0, handler));
		long long v;
		CHECK_PAPI(PAPI_start(es));
		CHECK_PAPI(PAPI_stop(es, &v));
		CHECK_PAPI(PAPI_cleanup_eventset(es));
		CHECK_PAPI(PAPI_destroy_eventset(&es));
	}
}

/* The breakpoint backend cannot tell which load reached a threshold (the
 * kernel counts its loads): forced, PAPI_start refuses with the reason;
 * auto counts the same set with the page-trap backend, exactly. */
static void test_breakpoint_refusal(void)
{
	char why[1024];
	if (papi_heritage_backend_usable("itanium2", "breakpoint", why, sizeof why) != PAPI_OK) {
		printf("itanium2 breakpoint refusal not checked: the backend cannot count here: %s\n", why);
		return;
	}
	knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", "breakpoint");
	for (long i = 0; i < 64; i++)
		watched[i] = i;
	int es = PAPI_NULL, code;
	CHECK_PAPI(PAPI_create_eventset(&es));
	CHECK_PAPI(PAPI_event_name_to_code("itanium2:::LOADS_RETIRED:exact=1", &code));
	CHECK_PAPI(PAPI_add_event(es, code));
	PAPI_option_t opt;
	CHECK_PAPI(heritage_test_range(es, PAPI_DATA_ADDRESS, (const void *)watched, (const void *)(watched + 1), &opt));
	CHECK_PAPI(PAPI_overflow(es, code, 100, 0, handler));
	int rc = PAPI_start(es);
	EXPECT_EQ("PAPI_start, breakpoint backend forced, with overflow", rc, PAPI_ENOSUPP);
	printf("itanium2 breakpoint + PAPI_overflow: %s: %s\n", PAPI_strerror(rc), papi_heritage_last_error());
	EXPECT(strstr(papi_heritage_last_error(), "PAPI_overflow") != NULL, "the reason names PAPI_overflow");
	knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", NULL);
	memset(&calls, 0, sizeof calls);
	calls.eventset = es;
	long long v;
	CHECK_PAPI(PAPI_start(es));
	EXPECT_EQ("load loop sum", load_loop(250 * 64), 250 * (64 * 63 / 2));
	CHECK_PAPI(PAPI_stop(es, &v));
	long long loads = 250; /* watched[0], the word, once in 64 */
	EXPECT_EQ("auto backend: loads of watched[0]", v, loads);
	EXPECT_EQ("auto backend: deliveries at 100", calls.n, loads / 100);
	CHECK_PAPI(PAPI_overflow(es, code, 0, 0, handler));
	CHECK_PAPI(PAPI_cleanup_eventset(es));
	CHECK_PAPI(PAPI_destroy_eventset(&es));
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: overflow ROW handler|profil|sprofil [force_sw] | overflow refusals\n");
		return 2;
	}
	const struct row *r = find_row(argv[1]);
	if (!r && strcmp(argv[1], "refusals") != 0) {
		fprintf(stderr, "overflow: no row %s\n", argv[1]);
		return 2;
	}
	if (r && r->env)
		setenv(r->env, r->env_value, 1);
	watched = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (watched == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	if (rc != PAPI_VER_CURRENT) {
		fprintf(stderr, "PAPI_library_init: %d (%s)\n", rc, PAPI_strerror(rc));
		return 1;
	}
	if (!r) {
		test_refusals();
		test_breakpoint_refusal();
		return heritage_test_done("refusals");
	}
	int cidx = PAPI_get_component_index(r->component);
	if (cidx < 0) {
		fprintf(stderr, "the %s component is not compiled into this libpapi\n", r->component);
		return 1;
	}
	const PAPI_component_info_t *ci = PAPI_get_component_info(cidx);
	if (ci->disabled)
		SKIP("%s is disabled here: %s", r->component, ci->disabled_reason);
	if (r->env)
		heritage_test_require_backend(r->component, r->env_value);
	if (!strcmp(r->component, "itanium2"))
		heritage_test_require_itanium2_env();
	const char *how = argc > 2 ? argv[2] : "handler";
	int force_sw = argc > 3 && !strcmp(argv[3], "force_sw");
	if (!strcmp(how, "handler"))
		test_handler(r, force_sw);
	else if (!strcmp(how, "profil") || !strcmp(how, "sprofil"))
		test_profil(r, force_sw, !strcmp(how, "sprofil"), 0);
	else if (!strcmp(how, "profil_cleanup"))
		test_profil(r, force_sw, 0, 1);
	else {
		fprintf(stderr, "overflow: no mode %s\n", how);
		return 2;
	}
	return heritage_test_done(r->name);
}
