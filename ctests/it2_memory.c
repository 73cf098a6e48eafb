/*
 * it2_memory: the itanium2 component's modelled memory hierarchy (issue 21)
 * through PAPI, on code built with the outline instrument flags, so that the
 * model sees every access.  The expected counts come from the arrays' sizes
 * and the Itanium 2 geometry (16 KiB 4-way L1D, 64-byte lines: itanium2(3)),
 * never from the model:
 *
 *   it2_memory l1d          L1D_READ_MISSES_ALL over an array read in 8-byte
 *                           loads, 3 passes: one miss per line per pass for
 *                           64 KiB, only the first pass's for 8 KiB;
 *                           L1D_READS_SET0 one per load
 *   it2_memory interleaved  two 32 KiB arrays read alternately: a range over
 *                           each reports its own lines' misses; two 4 KiB
 *                           arrays (8 KiB in all, fits): the first pass only
 *   it2_memory host         the same with this machine's L1D geometry
 *                           (PAPI_HERITAGE_ITANIUM2_CACHE=host, hwloc),
 *                           expected from sysfs's account of it
 *   it2_memory dear         DATA_EAR_CACHE_LAT4 with a data range and
 *                           threshold 1 on a loop loading once per line: one
 *                           delivery per modelled miss, each record's data
 *                           address in the range, its PC in the loop
 *   it2_memory static_l1d, static_dear
 *                           l1d (4 passes: 4096 misses over 64 KiB, 128 over
 *                           8 KiB) and dear over a static array instead of
 *                           malloc'd memory, in a build whose instrumentation
 *                           sees every access there (the clang pass flavour)
 *   it2_memory static_refused
 *                           in a build with ASan's instrumentation, which
 *                           leaves out accesses to statics by name at a
 *                           constant offset: PAPI_start refuses the model
 *                           over a static array, naming those accesses
 *
 * Exact mode (PAPI_HERITAGE_ITANIUM2_MODE=exact): the range is the array's
 * bytes.  Laid out in order (-fno-toplevel-reorder): sweep_end follows sweep.
 */
#include <stdint.h>

#include "heritage_test.h"
#include "knob.h"

#define LINE 64

static int npasses = 3; /* sweeps per measurement */
static volatile long sink; /* clang drops the sweeps whose sum goes nowhere */

/* One load per element: clang would vectorise the sweeps (gcc builds this
 * instrumented, which it does before vectorising). */
#ifdef __clang__
#define SCALAR_LOOP _Pragma("clang loop vectorize(disable) interleave(disable)")
#else
#define SCALAR_LOOP
#endif

__attribute__((noinline)) static void sweep(const long *a, long n, long stride, int passes)
{
	long s = 0;
	for (int p = 0; p < passes; p++)
		SCALAR_LOOP
		for (long i = 0; i < n; i += stride)
			s += a[i];
	sink = s;
}

__attribute__((noinline)) static void sweep_end(void)
{
	__asm__ volatile("");
}

__attribute__((noinline)) static void sweep_two(const long *a, const long *b, long n, int passes)
{
	long s = 0;
	for (int p = 0; p < passes; p++)
		for (long i = 0; i < n; i++)
			s += a[i] + b[i];
	sink = s;
}

/* The static modes' array, in .bss. */
static long static_lines[64 * 1024 / sizeof(long)] __attribute__((aligned(4096)));
static int from_static;

static void *lines(size_t bytes)
{
	void *p = NULL;
	if (from_static) {
		if (bytes > sizeof static_lines)
			exit(1);
		p = static_lines;
	} else if (posix_memalign(&p, 4096, bytes) != 0) {
		exit(1);
	}
	memset(p, 1, bytes);
	return p;
}

static void release(void *p)
{
	if (!from_static)
		free(p);
}

static int new_set(const void *lo, const void *hi, const char **names, int n)
{
	int set = PAPI_NULL;
	PAPI_option_t opt;
	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_assign_eventset_component(set, PAPI_get_component_index("itanium2")));
	CHECK_PAPI(heritage_test_range(set, PAPI_DATA_ADDRESS, lo, hi, &opt));
	for (int i = 0; i < n; i++) {
		int rc = PAPI_add_named_event(set, names[i]);
		if (rc == PAPI_ENOSUPP || rc == PAPI_ECNFLCT)
			SKIP("%s cannot be counted here: %s", names[i], papi_heritage_last_error());
		CHECK_PAPI(rc);
	}
	return set;
}

static void drop(int set)
{
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
}

static void start(int set)
{
	int rc = PAPI_start(set);
	if (rc == PAPI_ENOSUPP)
		SKIP("the cache model cannot be fed here: %s", papi_heritage_last_error());
	CHECK_PAPI(rc);
}

static void mode_l1d(void)
{
	static const char *ev[] = { "itanium2:::L1D_READ_MISSES_ALL", "itanium2:::L1D_READS_SET0" };
	const size_t sizes[] = { 64 * 1024, 8 * 1024 };
	for (int k = 0; k < 2; k++) {
		size_t bytes = sizes[k];
		long *a = lines(bytes), n = (long)(bytes / sizeof *a);
		long long v[2];
		int set = new_set(a, (char *)a + bytes, ev, 2);
		start(set);
		sweep(a, n, 1, npasses);
		CHECK_PAPI(PAPI_stop(set, v));
		long long nlines = (long long)(bytes / LINE);
		long long want = bytes > 16 * 1024 ? npasses * nlines : nlines;
		printf("%zu KiB x %d passes: L1D_READ_MISSES_ALL %lld (want %lld), L1D_READS_SET0 %lld (want %lld)\n",
		       bytes / 1024, npasses, v[0], want, v[1], (long long)npasses * n);
		EXPECT_EQ("L1D read misses", v[0], want);
		EXPECT_EQ("L1D reads", v[1], (long long)npasses * n);
		drop(set);
		release(a);
	}
}

static void mode_interleaved(void)
{
	static const char *ev[] = { "itanium2:::L1D_READ_MISSES_ALL" };
	const size_t sizes[] = { 32 * 1024, 4 * 1024 };
	for (int k = 0; k < 2; k++) {
		size_t bytes = sizes[k];
		long *a = lines(bytes), *b = lines(bytes), n = (long)(bytes / sizeof *a);
		long long nlines = (long long)(bytes / LINE);
		long long want = 2 * bytes > 16 * 1024 ? npasses * nlines : nlines;
		long long got[2];
		for (int which = 0; which < 2; which++) {
			const long *r = which ? b : a;
			int set = new_set(r, (const char *)r + bytes, ev, 1);
			start(set);
			sweep_two(a, b, n, npasses);
			CHECK_PAPI(PAPI_stop(set, &got[which]));
			drop(set);
		}
		printf("two %zu KiB arrays interleaved, %d passes: misses in a %lld, in b %lld (want %lld each)\n",
		       bytes / 1024, npasses, got[0], got[1], want);
		EXPECT_EQ("a's misses", got[0], want);
		EXPECT_EQ("b's misses", got[1], want);
		free(a);
		free(b);
	}
}

static int dear_set;
static long long deliveries, outside;
static char *dear_lo, *dear_hi;

static void on_dear(int set, void *pc, long long ovec, void *ctx)
{
	(void)ovec;
	(void)ctx;
	struct papi_heritage_dear_record r;
	deliveries++;
	if (PAPI_OK != papi_heritage_itanium2_dear_last(set, &r)) {
		outside++;
		return;
	}
	int in_data = r.data_address >= (uintptr_t)dear_lo && r.data_address < (uintptr_t)dear_hi;
	int in_loop = r.pc >= (uintptr_t)&sweep && r.pc < (uintptr_t)&sweep_end && (uintptr_t)pc == r.pc;
	if (!in_data || !in_loop || r.latency < 4 || r.level < 2)
		outside++;
}

static void mode_dear(void)
{
	static const char *ev[] = { "itanium2:::DATA_EAR_CACHE_LAT4", "itanium2:::L1D_READ_MISSES_ALL" };
	size_t bytes = 64 * 1024;
	long *a = lines(bytes), n = (long)(bytes / sizeof *a);
	dear_lo = (char *)a;
	dear_hi = (char *)a + bytes;
	dear_set = new_set(a, (char *)a + bytes, ev, 2);
	int code;
	CHECK_PAPI(PAPI_event_name_to_code(ev[0], &code));
	CHECK_PAPI(PAPI_overflow(dear_set, code, 1, 0, on_dear));
	long long v[2];
	start(dear_set);
	sweep(a, n, LINE / sizeof *a, npasses);
	CHECK_PAPI(PAPI_stop(dear_set, v));
	long long want = npasses * (long long)(bytes / LINE);
	printf("one load per line, %d passes over 64 KiB: DATA_EAR_CACHE_LAT4 %lld, L1D misses %lld (want %lld); "
	       "%lld deliveries, %lld with a record outside the range or loop\n",
	       npasses, v[0], v[1], want, deliveries, outside);
	EXPECT_EQ("L1D misses", v[1], want);
	EXPECT_EQ("D-EAR count (every L1D miss has a latency of 5 cycles or more)", v[0], want);
	EXPECT_EQ("one delivery per modelled miss", deliveries, want);
	EXPECT_EQ("records outside the range or the loop", outside, 0);
	CHECK_PAPI(PAPI_overflow(dear_set, code, 0, 0, NULL));
	drop(dear_set);
	release(a);
}

/* PAPI_HERITAGE_ITANIUM2_CACHE=host: this machine's L1D from hwloc.  The
 * expectation from sysfs's own account of the L1D (not hwloc's): an array
 * twice its size misses every line every pass, a quarter of it only once. */
static long sysfs_value(const char *file)
{
	char path[128], buf[64];
	snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index0/%s", file);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	long v = -1;
	if (fgets(buf, sizeof buf, f)) {
		char *end;
		v = strtol(buf, &end, 10);
		if (*end == 'K')
			v *= 1024;
	}
	fclose(f);
	return v;
}

static void mode_host(void)
{
	static const char *ev[] = { "itanium2:::L1D_READ_MISSES_ALL" };
	char type[32] = "";
	FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index0/type", "r");
	if (!f || !fgets(type, sizeof type, f) || strncmp(type, "Data", 4) != 0)
		SKIP("sysfs does not describe cpu0's L1 data cache (index0)");
	fclose(f);
	long l1 = sysfs_value("size"), line = sysfs_value("coherency_line_size");
	if (l1 <= 0 || line <= 0)
		SKIP("sysfs gives no L1D size or line size");
	knob_set("PAPI_HERITAGE_ITANIUM2_CACHE", "host");
	const size_t sizes[] = { (size_t)(2 * l1), (size_t)(l1 / 4) };
	for (int k = 0; k < 2; k++) {
		size_t bytes = sizes[k];
		long *a = lines(bytes), n = (long)(bytes / sizeof *a);
		long long v;
		int set = new_set(a, (char *)a + bytes, ev, 1);
		start(set);
		sweep(a, n, 1, npasses);
		CHECK_PAPI(PAPI_stop(set, &v));
		long long nlines = (long long)bytes / line;
		long long want = k == 0 ? npasses * nlines : nlines;
		printf("host L1D %ld KiB, %ld-byte lines: %zu KiB x %d passes: L1D_READ_MISSES_ALL %lld (want %lld)\n",
		       l1 / 1024, line, bytes / 1024, npasses, v, want);
		EXPECT_EQ("host L1D read misses", v, want);
		drop(set);
		free(a);
	}
}

/* ASan's builds: the model over static storage is refused, with the
 * accesses it would miss named, never fed a part of them. */
static void mode_static_refused(void)
{
	static const char *ev[] = { "itanium2:::L1D_READ_MISSES_ALL" };
	int set = new_set(static_lines, (char *)static_lines + sizeof static_lines, ev, 1);
	int rc = PAPI_start(set);
	const char *why = papi_heritage_last_error();
	printf("PAPI_start over static storage: %s (%s)\n", PAPI_strerror(rc), why);
	/* PAPI_EPERM where a backend that could have counted is refused to this
	 * account (breakpoint, with perf refused), PAPI_ENOSUPP otherwise. */
	EXPECT(rc == PAPI_ENOSUPP || rc == PAPI_EPERM, "PAPI_start over static storage: %d, want PAPI_ENOSUPP or PAPI_EPERM",
	       rc);
	EXPECT(strstr(why, "a static by name at a constant offset (g = x, a[3] = x)") != NULL,
	       "the refusal does not name the accesses missed: %s", why);
	if (rc == PAPI_OK) {
		long long v;
		CHECK_PAPI(PAPI_stop(set, &v));
	}
	drop(set);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "l1d";
	knob_set("PAPI_HERITAGE_ITANIUM2_MODE", "exact");
	heritage_test_init();
	if (strcmp(mode, "l1d") == 0)
		mode_l1d();
	else if (strcmp(mode, "interleaved") == 0)
		mode_interleaved();
	else if (strcmp(mode, "dear") == 0)
		mode_dear();
	else if (strcmp(mode, "host") == 0)
		mode_host();
	else if (strncmp(mode, "static_", 7) == 0 && (strcmp(mode + 7, "l1d") == 0 || strcmp(mode + 7, "dear") == 0)) {
		from_static = 1;
		npasses = 4;
		if (strcmp(mode + 7, "l1d") == 0)
			mode_l1d();
		else
			mode_dear();
	} else if (strcmp(mode, "static_refused") == 0)
		mode_static_refused();
	else {
		fprintf(stderr, "usage: it2_memory l1d|interleaved|dear|host|static_l1d|static_dear|static_refused\n");
		return 2;
	}
	return heritage_test_done("it2_memory");
}
