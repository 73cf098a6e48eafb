/*
 * range_stack: data ranges wherever data lives, and coarse instruction
 * covers that reach non-code pages (issue 20).  Every mode counts exactly
 * what the work does inside the requested bytes (exact mode) or at least
 * that (coarse mode: the cover adds the neighbours' accesses, here the
 * frames of the functions called below the watched array), or is refused
 * with PAPI_EINVAL/PAPI_ENOSUPP and a message; never a crash.
 *
 *   frame  - a local array in the frame of the function that calls
 *            PAPI_start (the tool author's probe: a coarse range over a local
 *            of main crashed PAPI_start in 9-13 runs of 20).  Also checks
 *            that the thread's signal mask is the same after PAPI_start and
 *            PAPI_stop as before.
 *   thread - the same in a thread of its own (a thread stack is an mmap'ed
 *            region, not [stack]); then the main thread watches and stores
 *            to a local array of another thread while that thread runs on
 *            its stack (calls that fault on the watched pages): the main
 *            thread's set counts exactly its own accesses.
 *   tls    - a page-aligned __thread array of the calling thread counts
 *            exactly; the C library's errno, thread-local data on a page the
 *            page-trap handlers use, is refused by pagetrap with the reason.
 *   unmap  - an mmap'ed region unmapped while counting: PAPI_read and
 *            PAPI_stop return the accesses made before the munmap; a region
 *            then mapped at the same place read-only is not counted by
 *            pagetrap (breakpoint, which watches the address, counts its
 *            loads) and keeps its protection after PAPI_stop.
 *   instr  - a loop straddling a page boundary (ctests/range_stack_loop.S):
 *            exact counts its 3n + 3 instructions, coarse starts (its cover
 *            reaches the program's non-code pages) and counts at least that.
 *
 * The backend is libpapi's choice or PAPI_HERITAGE_ITANIUM2_BACKEND's; with
 * breakpoint, which watches one aligned word, the ranges are one element of
 * each array (instr, which needs pagetrap, then skips with the reason).
 * The expected counts are the loops' own: elements in the range times the
 * passes, worked out here from the addresses.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heritage_test.h"
#include "knob.h"

#define NELEM 1024 /* longs: 8 KiB, three pages of the stack */
#define NOINLINE __attribute__((noinline))

long range_stack_loop(long n);
extern char range_stack_loop_end[];

static int word_only; /* the forced backend watches one aligned word */
static const char *forced;

/* Stores to, then loads from, p[0..n): one access each per element. */
NOINLINE static void store_loop(volatile long *p, long n)
{
	for (long i = 0; i < n; i++)
		p[i] = i;
}

NOINLINE static long load_loop(volatile long *p, long n)
{
	long sum = 0;
	for (long i = 0; i < n; i++)
		sum += p[i];
	return sum;
}

struct result {
	int rc_setopt, rc_start, rc_stop;
	int start_off, end_off;
	long long loads, stores;
	char backend[32];
	char why[256];
};

/* The elements of base[0..n) that an access to [lo, hi) overlaps. */
static long elems_in(const long *base, long n, uintptr_t lo, uintptr_t hi)
{
	long k = 0;
	for (long i = 0; i < n; i++)
		k += (uintptr_t)&base[i] < hi && (uintptr_t)&base[i + 1] > lo;
	return k;
}

/* The range a mode watches in an array: all of it, or one element for a
 * word-only backend. */
static void watched(long *arr, long **lo, long **hi)
{
	*lo = word_only ? &arr[5] : arr;
	*hi = word_only ? &arr[6] : arr + NELEM;
}

/* The signal mask, through a static buffer: a local one might lie on a
 * watched page, where sigprocmask fails with EFAULT. */
static sigset_t mask_now;

static void read_mask(sigset_t *out)
{
	pthread_sigmask(SIG_BLOCK, NULL, &mask_now);
	*out = mask_now;
}

/* Watch [lo, hi), run the store and load loops over arr[0..NELEM), stop.
 * Everything the measurement keeps lives in *r (static storage of the
 * caller, never on the watched stack). */
static void measure(struct result *r, long *arr, void *lo, void *hi, int exact, int (*between)(void *), void *arg)
{
	int set = PAPI_NULL;
	PAPI_option_t opt;
	static long long v[2];

	memset(r, 0, sizeof *r);
	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_assign_eventset_component(set, PAPI_get_component_index("itanium2")));
	if (exact) {
		CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED:exact=1"));
		CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::STORES_RETIRED:exact=1"));
	}
	r->rc_setopt = heritage_test_range(set, PAPI_DATA_ADDRESS, (const void *)lo, (const void *)hi, &opt);
	r->start_off = opt.addr.start_off;
	r->end_off = opt.addr.end_off;
	if (!exact) {
		CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED"));
		CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::STORES_RETIRED"));
	}
	if (r->rc_setopt == PAPI_OK)
		r->rc_start = PAPI_start(set);
	if (r->rc_setopt != PAPI_OK || r->rc_start != PAPI_OK) {
		snprintf(r->why, sizeof r->why, "%s", papi_heritage_last_error());
	} else {
		if (arr) {
			store_loop(arr, NELEM);
			load_loop(arr, NELEM);
		}
		if (between)
			between(arg);
		r->rc_stop = PAPI_stop(set, v);
		r->loads = v[0];
		r->stores = v[1];
		papi_heritage_itanium2_backend(set, r->backend, sizeof r->backend);
	}
	PAPI_cleanup_eventset(set);
	PAPI_destroy_eventset(&set);
}

/* Exact: the loops' accesses to [lo, hi), to the element; coarse: at least
 * those, and the offsets of a cover that holds the request. */
static void check_counts(const char *what, const struct result *r, long *arr, void *lo, void *hi, int exact)
{
	long want = elems_in(arr, NELEM, (uintptr_t)lo, (uintptr_t)hi);
	printf("%s (%s, %s backend): start_off %#x end_off %#x, %lld loads, %lld stores (exact: %ld each)\n", what,
	       exact ? "exact" : "coarse", r->backend, r->start_off, r->end_off, r->loads, r->stores, want);
	EXPECT(r->rc_setopt == PAPI_OK && r->rc_start == PAPI_OK && r->rc_stop == PAPI_OK,
	       "%s: set_opt %d start %d stop %d: %s", what, r->rc_setopt, r->rc_start, r->rc_stop, r->why);
	if (exact) {
		EXPECT_EQ("exact start_off", r->start_off, 0);
		EXPECT_EQ("exact end_off", r->end_off, 0);
		EXPECT_EQ("loads", r->loads, want);
		EXPECT_EQ("stores", r->stores, want);
	} else {
		EXPECT(r->start_off >= 0 && r->end_off >= 0, "%s: offsets %d %d", what, r->start_off, r->end_off);
		EXPECT(r->loads >= want, "%s: %lld loads, fewer than the %ld made in the range", what, r->loads, want);
		EXPECT(r->stores >= want, "%s: %lld stores, fewer than the %ld made in the range", what, r->stores, want);
	}
}

/* ---- frame ---------------------------------------------------------------- */

static struct result frame_res;
static sigset_t mask_before, mask_started, mask_after;

static int read_started_mask(void *arg)
{
	(void)arg;
	read_mask(&mask_started);
	return 0;
}

/* The caller's frame: loc is a local of the function that calls PAPI_start. */
NOINLINE static void frame_case(const char *what, int exact)
{
	long loc[NELEM];
	long *lo, *hi;

	memset(loc, 0, sizeof loc);
	watched(loc, &lo, &hi);
	read_mask(&mask_before);
	measure(&frame_res, loc, lo, hi, exact, read_started_mask, NULL);
	read_mask(&mask_after);
	check_counts(what, &frame_res, loc, lo, hi, exact);
	/* The lock's masks must not leak: no async signal left blocked by
	 * PAPI_start, none of the application's unblocked by PAPI_stop. */
	for (int sig = 1; sig < SIGRTMIN; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		EXPECT(sigismember(&mask_started, sig) == sigismember(&mask_before, sig),
		       "%s: signal %d %s by PAPI_start", what, sig, sigismember(&mask_before, sig) ? "unblocked" : "blocked");
		EXPECT(sigismember(&mask_after, sig) == sigismember(&mask_before, sig),
		       "%s: signal %d %s after PAPI_stop", what, sig, sigismember(&mask_before, sig) ? "unblocked" : "blocked");
	}
	__asm__ volatile("" : : "r"(loc) : "memory");
}

static void run_frame(int reps)
{
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL); /* the application's: must stay blocked */
	for (int i = 0; i < reps; i++) {
		frame_case("main's frame", 1);
		frame_case("main's frame", 0);
	}
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
}

/* ---- thread ----------------------------------------------------------------- */

static void *own_frame_thread(void *arg)
{
	(void)arg;
	CHECK_PAPI(PAPI_register_thread());
	frame_case("a thread's own frame", 1);
	frame_case("a thread's own frame", 0);
	PAPI_unregister_thread();
	return NULL;
}

/* The other thread: a local array, published, then calls that use the
 * stack below it (on its lowest watched page) until told to stop. */
static long *volatile other_arr;
static _Atomic int other_stop;
static pthread_barrier_t other_ready;
static _Atomic long other_calls;

NOINLINE static long stack_user(long depth)
{
	volatile long pad[64];
	pad[0] = depth;
	pad[63] = depth;
	return depth ? stack_user(depth - 1) + pad[0] : pad[63];
}

static void *other_thread(void *arg)
{
	long arr[NELEM];
	(void)arg;
	memset(arr, 0, sizeof arr);
	other_arr = arr;
	pthread_barrier_wait(&other_ready);
	while (!other_stop) {
		stack_user(8);
		other_calls++;
		sched_yield();
	}
	store_loop(arr, NELEM); /* its own accesses: not the main thread's to count */
	__asm__ volatile("" : : "r"(arr) : "memory");
	return NULL;
}

static struct result other_res;

static int let_other_run(void *arg)
{
	(void)arg;
	/* Until the other thread has called into its watched pages a while. */
	long first = other_calls;
	for (int i = 0; i < 2000 && other_calls < first + 20; i++)
		usleep(1000);
	return 0;
}

static void run_thread(void)
{
	pthread_t t;
	long *lo, *hi;

	CHECK_PAPI(PAPI_thread_init(pthread_self));
	pthread_create(&t, NULL, own_frame_thread, NULL);
	pthread_join(t, NULL);

	pthread_barrier_init(&other_ready, NULL, 2);
	pthread_create(&t, NULL, other_thread, NULL);
	pthread_barrier_wait(&other_ready);
	for (int exact = 1; exact >= 0; exact--) {
		watched(other_arr, &lo, &hi);
		long before = other_calls;
		measure(&other_res, other_arr, lo, hi, exact, let_other_run, NULL);
		check_counts("another thread's frame", &other_res, other_arr, lo, hi, exact);
		printf("  the other thread made %ld calls on its stack meanwhile\n", other_calls - before);
	}
	other_stop = 1;
	pthread_join(t, NULL);
}

/* ---- tls ------------------------------------------------------------------ */

static __thread long tls_arr[NELEM] __attribute__((aligned(4096)));
static struct result tls_res;

static void run_tls(void)
{
	long *lo, *hi;
	watched(tls_arr, &lo, &hi);
	for (int exact = 1; exact >= 0; exact--) {
		measure(&tls_res, tls_arr, lo, hi, exact, NULL, NULL);
		check_counts("a page-aligned __thread array", &tls_res, tls_arr, lo, hi, exact);
	}
	/* Thread-local data of the C library (errno) shares its page with what
	 * the page-trap handlers use: refused, with the reason. */
	if (!forced || !strcmp(forced, "pagetrap")) {
		knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", "pagetrap"); /* breakpoint could watch the word */
		measure(&tls_res, NULL, (void *)&errno, (void *)(&errno + 1), 1, NULL, NULL);
		if (forced)
			knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", forced);
		else
			knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", NULL);
		printf("the C library's errno, pagetrap: set_opt %d, start %d (%s)\n", tls_res.rc_setopt,
		       tls_res.rc_start, tls_res.why);
		EXPECT(tls_res.rc_setopt == PAPI_OK, "set_opt %d: %s", tls_res.rc_setopt, tls_res.why);
		EXPECT(tls_res.rc_start == PAPI_EINVAL || tls_res.rc_start == PAPI_ENOSUPP,
		       "PAPI_start over errno: %d, want a refusal", tls_res.rc_start);
		EXPECT(strstr(tls_res.why, "thread-local") != NULL, "no reason given: %s", tls_res.why);
	}
}

/* ---- unmap ---------------------------------------------------------------- */

static long *unmap_region;
static long long unmap_read[2];
static int unmap_rc_read;
static void *remapped;

/* The set's PAPI_read before the munmap, the munmap, accesses afterwards to
 * a read-only mapping put in its place. */
static int unmap_between(void *arg)
{
	int set = *(int *)arg;
	unmap_rc_read = PAPI_read(set, unmap_read);
	munmap(unmap_region, NELEM * sizeof(long));
	remapped = mmap(unmap_region, NELEM * sizeof(long), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (remapped != MAP_FAILED)
		load_loop(remapped, NELEM); /* not watched: nothing counts */
	return 0;
}

/* The protection /proc/self/maps gives addr ("rw-", ...). */
static void page_perms(const void *addr, char perms[4])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	strcpy(perms, "?");
	while (f && fgets(line, sizeof line, f)) {
		unsigned long a, b;
		char p[5];
		if (sscanf(line, "%lx-%lx %4s", &a, &b, p) == 3 && (uintptr_t)addr >= a && (uintptr_t)addr < b) {
			memcpy(perms, p, 3);
			perms[3] = '\0';
		}
	}
	if (f)
		fclose(f);
}

static void run_unmap(void)
{
	int set = PAPI_NULL;
	PAPI_option_t opt;
	long long v[2];
	long *lo, *hi;
	char perms[4];

	unmap_region = mmap(NULL, NELEM * sizeof(long), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (unmap_region == MAP_FAILED) {
		fprintf(stderr, "mmap failed\n");
		exit(1);
	}
	watched(unmap_region, &lo, &hi);
	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED:exact=1"));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::STORES_RETIRED:exact=1"));
	CHECK_PAPI(heritage_test_range(set, PAPI_DATA_ADDRESS, (const void *)lo, (const void *)hi, &opt));
	CHECK_PAPI(PAPI_start(set));
	store_loop(unmap_region, NELEM);
	load_loop(unmap_region, NELEM);
	unmap_between(&set);
	long long after_unmap[2];
	int rc_read2 = PAPI_read(set, after_unmap);
	CHECK_PAPI(PAPI_stop(set, v));
	long want = elems_in(unmap_region, NELEM, (uintptr_t)lo, (uintptr_t)hi);
	printf("unmapped while counting: read before munmap %lld/%lld, after %lld/%lld, stop %lld/%lld loads/stores "
	       "(want %ld each)\n", unmap_read[0], unmap_read[1], after_unmap[0], after_unmap[1], v[0], v[1], want);
	EXPECT_EQ("PAPI_read before munmap", unmap_rc_read, PAPI_OK);
	EXPECT_EQ("PAPI_read after munmap", rc_read2, PAPI_OK);
	EXPECT_EQ("loads before munmap", unmap_read[0], want);
	EXPECT_EQ("stores before munmap", unmap_read[1], want);
	/* pagetrap watches the pages mapped at PAPI_start: the new mapping's
	 * loads are not counted.  breakpoint watches the address: a mapping
	 * put at the same place is counted as soon as it is there (itanium2(3),
	 * pagetrap), so its loads of the watched word count too. */
	long long want_loads = want + (word_only && remapped == unmap_region ? want : 0);
	EXPECT_EQ("loads after munmap", after_unmap[0], want_loads);
	EXPECT_EQ("stores after munmap", after_unmap[1], want);
	EXPECT_EQ("loads at stop", v[0], want_loads);
	EXPECT_EQ("stores at stop", v[1], want);
	if (remapped == unmap_region) {
		/* PAPI_stop gives watched pages their protection back: not a mapping
		 * that replaced them since. */
		page_perms(remapped, perms);
		printf("the read-only mapping put in its place is %s after PAPI_stop\n", perms);
		EXPECT(strcmp(perms, "r--") == 0, "the mapping that replaced the watched one is %s, not r--", perms);
	} else {
		printf("the new mapping did not land at the old place (%p, not %p): not checked\n", remapped,
		       (void *)unmap_region);
	}
	if (remapped != MAP_FAILED)
		munmap(remapped, NELEM * sizeof(long));
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
}

/* ---- instr ---------------------------------------------------------------- */

#define LOOP_N 2000

static void run_instr(void)
{
	if (word_only)
		SKIP("instruction ranges are counted by the pagetrap backend only, not by %s", forced);
	heritage_test_require_backend("itanium2", "pagetrap");
	uintptr_t a = (uintptr_t)range_stack_loop, b = (uintptr_t)range_stack_loop_end;
	if (a / 4096 == (b - 1) / 4096) {
		fprintf(stderr, "range_stack_loop [%#lx, %#lx) does not cross a page\n", (unsigned long)a,
		        (unsigned long)b);
		exit(1);
	}
	for (int exact = 1; exact >= 0; exact--) {
		int set = PAPI_NULL;
		PAPI_option_t opt;
		long long v[1];
		CHECK_PAPI(PAPI_create_eventset(&set));
		CHECK_PAPI(PAPI_add_named_event(set, exact ? "itanium2:::IA64_INST_RETIRED:exact=1"
		                                           : "itanium2:::IA64_INST_RETIRED"));
		CHECK_PAPI(heritage_test_range(set, PAPI_INSTR_ADDRESS, (const void *)a, (const void *)b, &opt));
		CHECK_PAPI(PAPI_start(set));
		long r = range_stack_loop(LOOP_N);
		CHECK_PAPI(PAPI_stop(set, v));
		printf("a loop across a page boundary [%#lx, %#lx) (%s): start_off %#x end_off %#x, IA64_INST_RETIRED "
		       "%lld (the loop: %d)\n", (unsigned long)a, (unsigned long)b, exact ? "exact" : "coarse",
		       opt.addr.start_off, opt.addr.end_off, v[0], 3 * LOOP_N + 3);
		EXPECT_EQ("the loop's result", r, LOOP_N);
		if (exact)
			EXPECT_EQ("IA64_INST_RETIRED", v[0], 3 * LOOP_N + 3);
		else
			EXPECT(v[0] >= 3 * LOOP_N + 3, "coarse: %lld instructions, fewer than the loop's %d", v[0],
			       3 * LOOP_N + 3);
		CHECK_PAPI(PAPI_cleanup_eventset(set));
		CHECK_PAPI(PAPI_destroy_eventset(&set));
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "frame";
	int reps = argc > 2 ? atoi(argv[2]) : 1;

	setvbuf(stdout, NULL, _IOLBF, 0); /* what ran before a crash stays in the log */
	heritage_test_init();
	forced = getenv("PAPI_HERITAGE_ITANIUM2_BACKEND");
	if (forced && !*forced)
		forced = NULL;
	word_only = forced && !strcmp(forced, "breakpoint");
	if (!HERITAGE_TEST_INSTRUMENTED && !forced) /* ranges of pages: only page traps count them */
		heritage_test_require_backend("itanium2", "pagetrap");

	if (!strcmp(mode, "frame"))
		run_frame(reps);
	else if (!strcmp(mode, "thread"))
		run_thread();
	else if (!strcmp(mode, "tls"))
		run_tls();
	else if (!strcmp(mode, "unmap"))
		run_unmap();
	else if (!strcmp(mode, "instr"))
		run_instr();
	else {
		fprintf(stderr, "usage: range_stack frame [reps] | thread | tls | unmap | instr\n");
		return 2;
	}
	PAPI_shutdown();
	return heritage_test_done("range_stack");
}
