/*
 * Unit tests of the Paragon RPM model (src/paragon/rpm_model.c): dclock's
 * integer path against the man page's exponent trick, 32-bit wrap extension,
 * reset bases, the bus model, mesh routes on a 4x4 mesh, the /proc parsers;
 * and the rpmd service's page (src/paragon/rpm_service.c): its format, the
 * seqlock under a concurrent writer, staleness, and what a reader trusts;
 * and that a set's per-thread sample buffer goes with its thread.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "paragon/rpm_events.h"
#include "paragon/rpm_fpe.h"
#include "paragon/rpm_model.h"
#include "paragon/rpm_page.h"
#include "paragon/rpm_perf.h"
#include "common/heritage_shm.h"
#include "paragon/rpm_service.h"

START_TEST(test_dclock_integer_path)
{
	ck_assert(rpm_ticks_to_seconds(10000000) == 1.0);
	ck_assert(rpm_ticks_to_seconds(0) == 0.0);
	/* The top 4 of 56 bits are ignored. */
	ck_assert(rpm_ticks_to_seconds((1ULL << 52) + 5) == rpm_ticks_to_seconds(5));
	ck_assert(rpm_ticks_to_seconds((0xfULL << 52) | 10000000) == 1.0);
	/* Bit for bit with the exponent trick over a spread of counts. */
	uint64_t x = 88172645463325252ULL;
	for (int i = 0; i < 1000000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint64_t t = (i < 1000 ? (uint64_t)i : x) & RPM_TIME_MASK;
		double a = rpm_ticks_to_seconds(t), b = rpm_seconds_by_exponent_trick(rpm_timer_from_ticks(t));
		ck_assert_msg(memcmp(&a, &b, sizeof a) == 0, "count %llu: integer %.17g trick %.17g",
		              (unsigned long long)t, a, b);
	}
	ck_assert(rpm_timer_to_ticks(rpm_timer_from_ticks(123456789)) == 123456789);
	ck_assert(rpm_ticks_from_ns(1000000000ULL) == 10000000);
	ck_assert(rpm_ticks_from_ns(UINT64_MAX) <= RPM_TIME_MASK);
}
END_TEST

START_TEST(test_wrap_extension)
{
	/* A simulated 32-bit source: a 64-bit truth read through its low 32
	 * bits, with steps up to just under one wrap, over 3 million wraps. */
	struct rpm_wrap w = { 0 };
	uint64_t truth = 0xfffffff0ULL, x = 1;
	ck_assert(rpm_wrap_update(&w, (uint32_t)truth) == truth);
	for (long i = 0; i < 4000000; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		truth += (x >> 33) % 0xffffffffULL; /* < 2^32 */
		ck_assert_uint_eq(rpm_wrap_update(&w, (uint32_t)truth), truth);
	}
	ck_assert(truth >> 32 > 1000000);
	/* Equal readings: no change. */
	uint64_t v = w.value;
	ck_assert(rpm_wrap_update(&w, (uint32_t)truth) == v);
}
END_TEST

START_TEST(test_reset_bases)
{
	/* The register shows the count since the last reset, mod 2^32; the
	 * cumulative count a 64-bit reader uses never moves back. */
	uint64_t cumulative = 5000000000ULL, base = 0;
	ck_assert_uint_eq(rpm_register_value(cumulative, base), (uint32_t)5000000000ULL);
	base = cumulative; /* reset */
	ck_assert_uint_eq(rpm_register_value(cumulative, base), 0);
	cumulative += 77;
	ck_assert_uint_eq(rpm_register_value(cumulative, base), 77);
	cumulative += 1ULL << 32; /* a wrap after the reset */
	ck_assert_uint_eq(rpm_register_value(cumulative, base), 77);
	ck_assert_uint_eq(rpm_register_value(10, 20), 0); /* model below base */
	/* A reader of cumulative counts across 1000 resets loses nothing; the
	 * registers, read just before each reset, agree when no wrap falls
	 * between two resets. */
	base = cumulative;
	uint64_t start = cumulative, seen_by_registers = 0;
	for (int r = 0; r < 1000; r++) {
		cumulative += (uint64_t)r * 1000 + 1;
		seen_by_registers += rpm_register_value(cumulative, base);
		base = cumulative;
	}
	ck_assert_uint_eq(cumulative - start, seen_by_registers);
}
END_TEST

START_TEST(test_bus_model)
{
	struct rpm_bus b = { .cpu1 = 1000, .ltu = 500, .exp = 0 };
	rpm_bus_model(1000000, &b);
	ck_assert_uint_eq(b.cpu0 + b.cpu1 + b.ltu + b.exp, 975000);
	b.cpu1 = 2000000;
	rpm_bus_model(1000000, &b);
	ck_assert_uint_eq(b.cpu0, 0);
	b = (struct rpm_bus){ 0 };
	rpm_bus_model(UINT64_MAX, &b);
	ck_assert(b.cpu0 > UINT64_MAX / 1000 * 974);
	ck_assert_uint_eq(rpm_bus_cycles_for_ticks(100, 100), 50000000);
	ck_assert_uint_eq(rpm_bus_cycles_for_bytes(64), 8);
}
END_TEST

/* ---- mesh: 4x4, node = row * 4 + col, north = row - 1, east = col + 1 ---- */
static const struct {
	int line;
	unsigned src, dst;
	uint64_t bytes;
} messages[] = {
	{ __LINE__, 0, 15, 640 },   /* XY: east 0->1->2->3, south 3->7->11->15 */
	{ __LINE__, 15, 0, 128 },   /* west 15->14->13->12, north 12->8->4->0 */
	{ __LINE__, 5, 6, 64 },     /* one hop east */
	{ __LINE__, 9, 9, 6400 },   /* to itself: no hops */
	{ __LINE__, 12, 3, 192 },   /* east 12..15, north 15->11->7->3 */
};

START_TEST(test_mesh_routes_4x4)
{
	struct rpm_mesh_shape m = { 4, 4, RPM_ROUTE_XY };
	uint64_t *bytes = calloc(16 * RPM_NDIRS, sizeof *bytes);
	for (size_t i = 0; i < sizeof messages / sizeof messages[0]; i++)
		ck_assert_msg(rpm_mesh_account(&m, bytes, messages[i].src, messages[i].dst, messages[i].bytes) == 0,
		              "line %d", messages[i].line);
	/* Expected bytes per router and direction. */
	uint64_t want[16][RPM_NDIRS] = { { 0 } };
#define ADD(r, d, b) want[r][RPM_DIR_##d] += b
	ADD(0, EAST, 640); ADD(1, EAST, 640); ADD(2, EAST, 640);
	ADD(3, SOUTH, 640); ADD(7, SOUTH, 640); ADD(11, SOUTH, 640);
	ADD(15, WEST, 128); ADD(14, WEST, 128); ADD(13, WEST, 128);
	ADD(12, NORTH, 128); ADD(8, NORTH, 128); ADD(4, NORTH, 128);
	ADD(5, EAST, 64);
	ADD(12, EAST, 192); ADD(13, EAST, 192); ADD(14, EAST, 192);
	ADD(15, NORTH, 192); ADD(11, NORTH, 192); ADD(7, NORTH, 192);
	for (int r = 0; r < 16; r++)
		for (int d = 0; d < RPM_NDIRS; d++)
			ck_assert_msg(bytes[r * RPM_NDIRS + d] == want[r][d], "router %d %s: %llu bytes, want %llu", r,
			              rpm_dir_name((enum rpm_dir)d), (unsigned long long)bytes[r * RPM_NDIRS + d],
			              (unsigned long long)want[r][d]);
	free(bytes);

	/* YX routing goes along the column first. */
	struct rpm_hop hops[8];
	m.routing = RPM_ROUTE_YX;
	ck_assert_int_eq(rpm_mesh_route(&m, 0, 15, hops, 8), 6);
	ck_assert(hops[0].router == 0 && hops[0].dir == RPM_DIR_SOUTH);
	ck_assert(hops[3].router == 12 && hops[3].dir == RPM_DIR_EAST);
	/* Bad input. */
	ck_assert_int_eq(rpm_mesh_route(&m, 0, 16, hops, 8), -1);
	ck_assert_int_eq(rpm_mesh_route(&m, 0, 15, hops, 3), -1);
	struct rpm_mesh_shape bad = { 0, 4, RPM_ROUTE_XY };
	ck_assert_int_eq(rpm_mesh_route(&bad, 0, 0, hops, 8), -1);
}
END_TEST

START_TEST(test_mesh_parse)
{
	struct rpm_mesh_shape m;
	enum rpm_routing r;
	ck_assert(rpm_mesh_parse_shape("4x4", &m) == 0 && m.rows == 4 && m.cols == 4);
	ck_assert(rpm_mesh_parse_shape("16X2", &m) == 0 && m.rows == 16 && m.cols == 2);
	ck_assert(rpm_mesh_parse_shape("0x4", &m) == -1);
	ck_assert(rpm_mesh_parse_shape("4x", &m) == -1);
	ck_assert(rpm_mesh_parse_shape("33x32", &m) == -1);
	ck_assert(rpm_mesh_parse_shape("x", &m) == -1);
	ck_assert(rpm_mesh_parse_routing("YX", &r) == 0 && r == RPM_ROUTE_YX);
	ck_assert(rpm_mesh_parse_routing("z", &r) == -1);
	/* An MPI job's default shape: rows x cols == ranks, as square as the
	 * count allows. */
	static const struct { unsigned n, rows, cols; } sq[] = {
		{ 1, 1, 1 }, { 2, 1, 2 }, { 4, 2, 2 }, { 6, 2, 3 }, { 7, 1, 7 }, { 9, 3, 3 }, { 12, 3, 4 }, { 1024, 32, 32 },
	};
	for (size_t i = 0; i < sizeof sq / sizeof sq[0]; i++) {
		ck_assert(rpm_mesh_shape_for_nodes(sq[i].n, &m) == 0);
		ck_assert_msg(m.rows == sq[i].rows && m.cols == sq[i].cols && m.routing == RPM_ROUTE_XY,
		              "%u nodes: %ux%u, want %ux%u", sq[i].n, m.rows, m.cols, sq[i].rows, sq[i].cols);
	}
	ck_assert(rpm_mesh_shape_for_nodes(0, &m) == -1);
	ck_assert(rpm_mesh_shape_for_nodes(1025, &m) == -1);
}
END_TEST

START_TEST(test_proc_parsers)
{
	static struct rpm_host_sample s;
	const char *stat = "cpu  10 0 20 300 5 7 8 0 0 0\n"
	                   "cpu0 5 0 10 100 2 3 4 0 0 0\n"
	                   "cpu1 5 0 10 200 3 4 4 0 0 0\n"
	                   "intr 1234 0 0\n";
	ck_assert(rpm_parse_stat(stat, &s) == 0);
	ck_assert_uint_eq(s.ncpus, 2);
	ck_assert_uint_eq(s.idle_ticks[0], 102);
	ck_assert_uint_eq(s.idle_ticks[1], 203);
	ck_assert_uint_eq(s.kernel_io_ticks, 15);
	/* CPU 1 offline: columns are CPU0 and CPU2. */
	const char *irq = "           CPU0       CPU2       \n"
	                  "  0:         10          1   IO-APIC   2-edge      timer\n"
	                  "LOC:       4000       3000   Local timer interrupts\n"
	                  "ERR:          7\n";
	ck_assert(rpm_parse_interrupts(irq, &s) == 0);
	ck_assert_uint_eq(s.interrupts[0], 4010);
	ck_assert_uint_eq(s.interrupts[2], 3001);
	const char *net = "Inter-|   Receive |  Transmit\n face |bytes    packets|bytes\n"
	                  "    lo:    3267      29    0    0    0     0          0         0     3267      29    0    0    0     0       0          0\n"
	                  "  eth0: 1000       1731    0    0    0     0          0         0    24     911    0    0    0     0       0          0\n";
	ck_assert(rpm_parse_netdev(net, &s) == 0);
	ck_assert_uint_eq(s.nic_bytes, 1024);
	ck_assert(rpm_parse_stat("garbage", &s) == -1);
	ck_assert(rpm_parse_interrupts("", &s) == -1);
}
END_TEST

/* A simulated machine: a 2.6 GHz TSC, and CLOCK_BOOTTIME that NTP slews by
 * +-500 ppm (its limit), read with up to 40 ns of jitter, and that jumps 30 s
 * forward once (a suspend the TSC did not see).  Readings every 3..3000 us of
 * TSC for 20 s: never backwards, always within 100 us of the clock (and in
 * fact within the ~7 us rpm_model.h promises), and caught up after the jump
 * at the first anchor. */
static uint64_t sim_clock(uint64_t tsc, uint64_t jump_at, uint64_t jump_ns)
{
	/* ns = tsc / 2.6, slewed +500 ppm in odd seconds, -500 ppm in even. */
	double t = (double)tsc / 2.6;
	double sec = t / 1e9;
	uint64_t whole = (uint64_t)sec;
	double slewed = 0;
	for (uint64_t k = 0; k < whole; k++)
		slewed += (k & 1 ? 5e-4 : -5e-4) * 1e9;
	slewed += (whole & 1 ? 5e-4 : -5e-4) * (t - (double)whole * 1e9);
	return 5000000000ULL + (uint64_t)(t + slewed) + (tsc >= jump_at ? jump_ns : 0);
}

/* rpm_parse_interrupts had static scratch: two threads parsing at once
 * mixed their columns.  Each thread parses its own text 20000 times and
 * must always get its own sums; and a header of 1500 columns (past
 * RPM_MAX_CPUS) parses without scratch of any size. */
struct irq_job {
	const char *text;
	unsigned cpu;
	uint64_t want;
	int bad;
};

static void *parse_irqs(void *arg)
{
	struct irq_job *j = arg;
	static __thread struct rpm_host_sample s;
	for (int i = 0; i < 20000; i++) {
		memset(s.interrupts, 0xff, sizeof s.interrupts);
		if (rpm_parse_interrupts(j->text, &s) != 0 || s.interrupts[j->cpu] != j->want)
			j->bad++;
	}
	return NULL;
}

START_TEST(test_proc_interrupts_reentrant)
{
	struct irq_job a = { .text = "  CPU0  CPU1\n 0:  1  2  timer\nLOC:  10  20  local\n", .cpu = 1, .want = 22 };
	struct irq_job b = { .text = "  CPU3  CPU5  CPU7\n 9:  4  5  6  acpi\nNMI:  0  0  100  nmi\nERR: 9\n",
	                     .cpu = 7, .want = 106 };
	pthread_t ta, tb;
	ck_assert_int_eq(pthread_create(&ta, NULL, parse_irqs, &a), 0);
	ck_assert_int_eq(pthread_create(&tb, NULL, parse_irqs, &b), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	ck_assert_int_eq(a.bad, 0);
	ck_assert_int_eq(b.bad, 0);

	size_t cols = 1500, len = cols * 12 + 64;
	char *wide = malloc(2 * len), *p = wide;
	ck_assert_ptr_nonnull(wide);
	for (size_t c = 0; c < cols; c++)
		p += sprintf(p, " CPU%zu", c);
	p += sprintf(p, "\nLOC:");
	for (size_t c = 0; c < cols; c++)
		p += sprintf(p, " %zu", c + 1);
	sprintf(p, " local\n");
	static struct rpm_host_sample s;
	ck_assert_int_eq(rpm_parse_interrupts(wide, &s), 0);
	ck_assert_uint_eq(s.interrupts[0], 1);
	ck_assert_uint_eq(s.interrupts[RPM_MAX_CPUS - 1], RPM_MAX_CPUS);
	free(wide);
}
END_TEST

/* A thread that starts, reads and stops a set of /proc-sampled events,
 * then exits: its sample buffer (112 KiB) must go with it. */
static void *sample_and_exit(void *arg)
{
	struct rpm_set *s = arg;
	intptr_t bad = rpm_set_start(s) != 0 || rpm_set_read_slow(s) != 0 || rpm_set_stop(s) != 0;
	return (void *)bad;
}

START_TEST(test_thread_buffer_freed)
{
	enum { THREADS = 64 };
	unsigned code;
	ck_assert_int_eq(rpm_event_parse("rpms_idle", &code), 0);
	static struct rpm_set sets[THREADS];
	/* One thread first: whatever is allocated once per process (the key,
	 * stdio's buffers of /proc) is not a thread's. */
	ck_assert_int_eq(rpm_set_events(&sets[0], &code, 1), 0);
	pthread_t t;
	void *bad;
	ck_assert_int_eq(pthread_create(&t, NULL, sample_and_exit, &sets[0]), 0);
	pthread_join(t, &bad);
	ck_assert_ptr_null(bad);
	size_t before = mallinfo2().uordblks;
	for (int i = 1; i < THREADS; i++) {
		ck_assert_int_eq(rpm_set_events(&sets[i], &code, 1), 0);
		ck_assert_int_eq(pthread_create(&t, NULL, sample_and_exit, &sets[i]), 0);
		pthread_join(t, &bad);
		ck_assert_ptr_null(bad);
	}
	size_t after = mallinfo2().uordblks;
	/* Leaked, the threads' buffers would be 63 x 112 KiB: 7 MB. */
	ck_assert_msg(after < before + sizeof(struct rpm_live) * 4,
	              "%d threads left %zu bytes allocated (a sample buffer is %zu)", THREADS - 1, after - before,
	              sizeof(struct rpm_live));
}
END_TEST

START_TEST(test_tsc_clock)
{
	const uint64_t jump_at = 26000000000ULL, jump_ns = 30000000000ULL; /* at 10 s, 30 s */
	uint64_t x = 0x9e3779b97f4a7c15ULL, tsc = 1000000, prev = 0, prev_ticks = 0;
	struct rpm_tsc_clock c;
	double worst = 0;
	int anchors = 0, after_jump_checked = 0, ticks_ahead = 0, readings = 0;

	ck_assert(rpm_tsc_clock_init(&c, 1000, 5, 1000, 5) == -1);
	/* A 5 MHz TSC cannot count 10 MHz ticks. */
	ck_assert(rpm_tsc_clock_init(&c, 1000, 5, 2000, 200005) == -1);
	ck_assert(rpm_tsc_clock_init(&c, tsc, sim_clock(tsc, jump_at, jump_ns), tsc + 130000,
	                             sim_clock(tsc + 130000, jump_at, jump_ns)) == 0);
	tsc += 130000;
	while (tsc < 52000000000ULL) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		tsc += 7800 + x % 7800000;
		if (rpm_tsc_clock_due(&c, tsc)) {
			uint64_t jitter = (x >> 20) % 40;
			rpm_tsc_clock_anchor(&c, tsc, sim_clock(tsc, jump_at, jump_ns) + jitter);
			anchors++;
		}
		uint64_t v = rpm_tsc_clock_ns(&c, tsc), truth = sim_clock(tsc, jump_at, jump_ns);
		ck_assert_msg(v >= prev, "backwards at tsc %llu: %llu after %llu", (unsigned long long)tsc,
		              (unsigned long long)v, (unsigned long long)prev);
		prev = v;
		/* The ticks readers use: the same clock, never behind the ns one
		 * and at most one tick ahead (it does not truncate to whole ns). */
		uint64_t ticks = rpm_tsc_clock_ticks(&c, tsc), from_ns = rpm_ticks_from_ns(v);
		ck_assert_msg(ticks == from_ns || ticks == from_ns + 1, "ticks %llu, from ns %llu",
		              (unsigned long long)ticks, (unsigned long long)from_ns);
		ticks_ahead += ticks != from_ns;
		readings++;
		ck_assert(ticks >= prev_ticks);
		prev_ticks = ticks;
		double err = (double)v - (double)truth;
		if (tsc >= jump_at && c.tsc_base < jump_at) {
			/* Readings after the jump but before the next anchor (at
			 * most one 10 ms interval) are still on the old anchor. */
			ck_assert(err < 0 && err > -(double)jump_ns - 2e7);
			continue;
		}
		if (tsc >= jump_at)
			after_jump_checked = 1;
		if (err < 0)
			err = -err;
		if (err > worst)
			worst = err;
		ck_assert_msg(err < 100000, "%.0f ns off at tsc %llu", err, (unsigned long long)tsc);
	}
	ck_assert(after_jump_checked);
	ck_assert_msg(worst < 15000, "worst error %.0f ns", worst);
	fprintf(stderr, "tsc clock: worst error %.0f ns over %d anchors\n", worst, anchors);
	ck_assert_msg(anchors > 1500 && anchors <= 2000, "%d anchors in 20 s (10 ms apart, at the first reading after)", anchors);
	/* Truncating to whole ns loses a tick only when the exact value lies
	 * within 1 ns past a tick: about 1 reading in 100. */
	ck_assert_msg(ticks_ahead < readings / 50, "ticks ahead in %d of %d readings", ticks_ahead, readings);
	/* A TSC read on another CPU a little behind the anchor: the anchor's ns. */
	ck_assert(rpm_tsc_clock_ns(&c, c.tsc_base - 100) == c.ns_base);
	ck_assert(rpm_tsc_clock_ticks(&c, c.tsc_base - 100) == c.ns_base / 100);
	ck_assert(rpm_tsc_clock_due(&c, c.tsc_base - 100));
}
END_TEST

START_TEST(test_tracefs_mount)
{
	char d[64];
	ck_assert(rpm_parse_tracefs_mount("proc /proc proc rw 0 0\n", d, sizeof d) == -1);
	ck_assert(rpm_parse_tracefs_mount("", d, sizeof d) == -1);
	ck_assert(rpm_parse_tracefs_mount("proc /proc proc rw 0 0\nnodev /sys/kernel/tracing tracefs rw 0 0\n", d,
	                                  sizeof d) == 0);
	ck_assert_str_eq(d, "/sys/kernel/tracing");
	ck_assert(rpm_parse_tracefs_mount("nodev /sys/kernel/tracing tracefs rw 0 0", d, 5) == -1); /* too long */
	ck_assert(rpm_unresolved_faults(10, 3) == 7 && rpm_unresolved_faults(3, 10) == 0);
}
END_TEST

/* The SIGFPE si_code of each class, the MXCSR flags' precedence (as the
 * kernel's), the knob's syntax, the unit split and the rpmsoft fields. */
START_TEST(test_fpe_classes)
{
	ck_assert_int_eq(rpm_fpe_class_of_code(FPE_FLTINV), RPM_FPE_INV);
	ck_assert_int_eq(rpm_fpe_class_of_code(FPE_FLTDIV), RPM_FPE_DIV);
	ck_assert_int_eq(rpm_fpe_class_of_code(FPE_FLTOVF), RPM_FPE_OVF);
	ck_assert_int_eq(rpm_fpe_class_of_code(FPE_FLTUND), RPM_FPE_UND);
	ck_assert_int_eq(rpm_fpe_class_of_code(FPE_FLTRES), RPM_FPE_RES);
	ck_assert_int_eq(rpm_fpe_class_of_code(FPE_INTDIV), -1);
	ck_assert_int_eq(rpm_fpe_class_of_code(FPE_INTOVF), -1);
	ck_assert_int_eq(rpm_fpe_class_of_code(FPE_FLTSUB), -1);
	ck_assert_int_eq(rpm_fpe_class_of_code(SI_USER), -1);
	ck_assert_int_eq(rpm_fpe_class_of_flags(0x28), RPM_FPE_OVF); /* overflow + inexact */
	ck_assert_int_eq(rpm_fpe_class_of_flags(0x30), RPM_FPE_UND);
	ck_assert_int_eq(rpm_fpe_class_of_flags(0x05), RPM_FPE_INV);
	ck_assert_int_eq(rpm_fpe_class_of_flags(0x04), RPM_FPE_DIV);
	ck_assert_int_eq(rpm_fpe_class_of_flags(0x20), RPM_FPE_RES);
	ck_assert_int_eq(rpm_fpe_class_of_flags(0x02), -1); /* denormal only */
	unsigned c;
	ck_assert_int_eq(rpm_fpe_parse("all", &c), 0);
	ck_assert_uint_eq(c, 0x1f);
	ck_assert_int_eq(rpm_fpe_parse("divbyzero,invalid", &c), 0);
	ck_assert_uint_eq(c, 1u << RPM_FPE_DIV | 1u << RPM_FPE_INV);
	ck_assert_int_eq(rpm_fpe_parse("0", &c), 0);
	ck_assert_uint_eq(c, 0);
	ck_assert_int_eq(rpm_fpe_parse("overflow,", &c), -1);
	ck_assert_int_eq(rpm_fpe_parse("nan", &c), -1);
	static const uint8_t mulsd[] = { 0xf2, 0x0f, 0x59, 0xc1 }, addsd[] = { 0xf2, 0x0f, 0x58, 0xc1 },
	                     divsd_rex[] = { 0xf2, 0x41, 0x0f, 0x5e, 0xc0 }, vmulsd[] = { 0xc5, 0xfb, 0x59, 0xc1 },
	                     vfmadd[] = { 0xc4, 0xe2, 0xf1, 0xa9, 0xc2 }, sqrtsd[] = { 0xf2, 0x0f, 0x51, 0xc0 };
	ck_assert_int_eq(rpm_fpe_unit_of(mulsd, sizeof mulsd), RPM_FPE_MULT);
	ck_assert_int_eq(rpm_fpe_unit_of(addsd, sizeof addsd), RPM_FPE_ADDER);
	ck_assert_int_eq(rpm_fpe_unit_of(divsd_rex, sizeof divsd_rex), RPM_FPE_MULT);
	ck_assert_int_eq(rpm_fpe_unit_of(vmulsd, sizeof vmulsd), RPM_FPE_MULT);
	ck_assert_int_eq(rpm_fpe_unit_of(vfmadd, sizeof vfmadd), RPM_FPE_MULT);
	ck_assert_int_eq(rpm_fpe_unit_of(sqrtsd, sizeof sqrtsd), RPM_FPE_ADDER);
	uint64_t k[RPM_FPE_NCLASSES][RPM_FPE_NUNITS] = { { 1, 2 }, { 3, 4 }, { 5, 6 }, { 7, 8 }, { 9, 10 } }, f[RPM_FPF_NFIELDS];
	rpm_fpe_fields(k, f);
	ck_assert_uint_eq(f[RPM_FPF_FT], 55);
	ck_assert_uint_eq(f[RPM_FPF_SE], 10);
	ck_assert_uint_eq(f[RPM_FPF_SI], 19);
	ck_assert_uint_eq(f[RPM_FPF_MO], 6);
	ck_assert_uint_eq(f[RPM_FPF_AO], 5);
	ck_assert_uint_eq(f[RPM_FPF_MU], 8);
	ck_assert_uint_eq(f[RPM_FPF_AU], 7);
	ck_assert_uint_eq(f[RPM_FPF_MI], 10);
	ck_assert_uint_eq(f[RPM_FPF_AI], 9);
}
END_TEST


/* ---- the rpmd service's page ---------------------------------------------- */

static const int no_err[RPM_PERF_NCOUNTS];
static const char *const no_why[RPM_PERF_NCOUNTS];

static struct rpm_service_page *new_page(unsigned ncpus, uint64_t interval_ns, uint64_t now_ns)
{
	static unsigned os[RPM_MAX_CPUS];
	struct rpm_service_page *p = calloc(1, sizeof *p);
	ck_assert_ptr_nonnull(p);
	for (unsigned i = 0; i < ncpus; i++)
		os[i] = 2 * i + 1; /* not the logical numbers: entries are found by OS number */
	const struct rpm_service_daemon d = { .pid = 1234 };
	rpm_service_init(p, ncpus, os, interval_ns, now_ns, &d, no_err, no_why);
	return p;
}

START_TEST(test_service_format)
{
	int err[RPM_PERF_NCOUNTS] = { [RPM_SYSCALLS] = -EACCES };
	const char *why[RPM_PERF_NCOUNTS] = { [RPM_SYSCALLS] = "tracefs is not mounted" };
	unsigned os[3] = { 4, 0, 7 };
	struct rpm_service_page *p = calloc(1, sizeof *p);
	const struct rpm_service_daemon d = { .pid = 77, .uid = 5, .pidns = 4026531836u, .pid_start = 99 };
	rpm_service_init(p, 3, os, 10000000, 5000, &d, err, why);
	ck_assert_uint_eq(p->magic, 0x534d5052u);
	ck_assert_int_eq(memcmp(&p->magic, "RPMS", 4), 0);
	ck_assert_uint_eq(p->version, 2);
	ck_assert_uint_eq(p->size, sizeof *p);
	ck_assert_uint_eq(p->ncpus, 3);
	ck_assert_uint_eq(p->ncounts, RPM_PERF_NCOUNTS);
	ck_assert_int_eq(p->pid, 77);
	ck_assert_uint_eq(p->uid, 5);
	ck_assert_uint_eq(p->pidns, 4026531836u);
	ck_assert_uint_eq(p->pid_start, 99);
	ck_assert_uint_eq(p->started_ns, 5000);
	ck_assert_uint_eq(p->seq, 0);
	ck_assert_int_eq(p->err[RPM_PF_ALL], 0);
	ck_assert_str_eq(p->why[RPM_PF_ALL], "");
	ck_assert_int_eq(p->err[RPM_SYSCALLS], -EACCES);
	ck_assert_str_eq(p->why[RPM_SYSCALLS], "tracefs is not mounted");
	/* The layout rpmd(8) documents, which other readers may rely on. */
	ck_assert_uint_eq(sizeof *p, 42176);
	ck_assert_uint_eq(offsetof(struct rpm_service_page, interval_ns), 32);
	ck_assert_uint_eq(offsetof(struct rpm_service_page, pidns), 48);
	ck_assert_uint_eq(offsetof(struct rpm_service_page, pid_start), 56);
	ck_assert_uint_eq(offsetof(struct rpm_service_page, err), 64);
	ck_assert_uint_eq(offsetof(struct rpm_service_page, why), 80);
	ck_assert_uint_eq(offsetof(struct rpm_service_page, seq), 1152);
	ck_assert_uint_eq(offsetof(struct rpm_service_page, heartbeat_ns), 1160);
	ck_assert_uint_eq(offsetof(struct rpm_service_page, cpu), 1168);
	ck_assert_uint_eq(sizeof p->cpu[0], 40);
	/* The seqlock's line is not the header's: readers of it do not share
	 * a line with the fields the daemon never writes again. */
	ck_assert_uint_eq(offsetof(struct rpm_service_page, seq) % 64, 0);
	ck_assert_int_eq(rpm_service_find_cpu(p, 7), 2);
	ck_assert_int_eq(rpm_service_find_cpu(p, 0), 1);
	ck_assert_int_eq(rpm_service_find_cpu(p, 1), -1);

	uint64_t counts[3][RPM_PERF_NCOUNTS] = { { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10, 11, 12 } };
	rpm_service_publish(p, 6000, (const uint64_t(*)[RPM_PERF_NCOUNTS])counts);
	ck_assert_uint_eq(p->seq, 2);
	uint64_t out[RPM_PERF_NCOUNTS], hb;
	ck_assert_int_eq(rpm_service_read_cpu(p, 2, out, &hb), 0);
	ck_assert_uint_eq(hb, 6000);
	ck_assert(out[RPM_PF_ALL] == 9 && out[RPM_PF_MIN] == 10 && out[RPM_PF_MAJ] == 11 && out[RPM_SYSCALLS] == 12);
	free(p);
}
END_TEST

/* What a reader trusts, from the object's stat and content. */
START_TEST(test_service_owner_checks)
{
	struct rpm_service_page *p = new_page(2, 10000000, 1);
	struct stat st = { .st_mode = S_IFREG | 0444, .st_uid = 0, .st_size = sizeof *p };
	char why[512];
	ck_assert_int_eq(rpm_service_check(&st, (uid_t)-1, p, why, sizeof why), 0);
	ck_assert_int_eq(rpm_service_check(&st, (uid_t)-1, NULL, why, sizeof why), 0);
	/* Another account's object: anyone may create one in /dev/shm. */
	st.st_uid = 1000;
	ck_assert_int_eq(rpm_service_check(&st, (uid_t)-1, p, why, sizeof why), -EPERM);
	ck_assert_msg(strstr(why, "owned by uid 1000") && strstr(why, "refused"), "%s", why);
	ck_assert_int_eq(rpm_service_check(&st, 999, p, why, sizeof why), -EPERM);
	ck_assert_msg(strstr(why, "service account (uid 999)"), "%s", why);
	ck_assert_int_eq(rpm_service_check(&st, 1000, p, why, sizeof why), 0); /* the configured account */
	/* Root's or the account's, but writable by others: anyone could spoof it. */
	st.st_mode = S_IFREG | 0644;
	ck_assert_int_eq(rpm_service_check(&st, 1000, p, why, sizeof why), 0);
	st.st_mode = S_IFREG | 0666;
	ck_assert_int_eq(rpm_service_check(&st, 1000, p, why, sizeof why), -EPERM);
	ck_assert_msg(strstr(why, "writable by others (mode 666)"), "%s", why);
	st.st_mode = S_IFREG | 0464;
	ck_assert_int_eq(rpm_service_check(&st, 1000, p, why, sizeof why), -EPERM);
	st.st_mode = S_IFIFO | 0444;
	ck_assert_int_eq(rpm_service_check(&st, 1000, p, why, sizeof why), -EINVAL);
	st.st_mode = S_IFREG | 0444;
	st.st_size = sizeof *p - 1;
	ck_assert_int_eq(rpm_service_check(&st, 1000, p, why, sizeof why), -EPROTO);
	st.st_size = sizeof *p;
	/* Not this format (version 1 had no pidns or pid_start). */
	p->version = 1;
	ck_assert_int_eq(rpm_service_check(&st, 1000, p, why, sizeof why), -EPROTO);
	p->version = RPM_SERVICE_VERSION;
	p->magic ^= 1;
	ck_assert_int_eq(rpm_service_check(&st, 1000, p, why, sizeof why), -EPROTO);
	p->magic ^= 1;
	p->ncounts = RPM_PERF_NCOUNTS + 1;
	ck_assert_int_eq(rpm_service_check(&st, 1000, p, why, sizeof why), -EPROTO);
	p->ncounts = RPM_PERF_NCOUNTS;
	p->ncpus = RPM_MAX_CPUS + 1;
	ck_assert_int_eq(rpm_service_check(&st, 1000, p, why, sizeof why), -EPROTO);
	p->ncpus = 0;
	ck_assert_int_eq(rpm_service_check(&st, 1000, p, why, sizeof why), -EPROTO);
	p->ncpus = 2;
	ck_assert_int_eq(rpm_service_check(&st, 1000, p, why, sizeof why), 0);
	free(p);
}
END_TEST

START_TEST(test_service_stale)
{
	const uint64_t ms = 1000000, s = 1000 * ms, hb = 100 * s;
	/* A live daemon's late page: refused after 100 intervals, at least 60 s
	 * (stopped or hung); a dead daemon's after 10 intervals, at least 5 s. */
	ck_assert(!rpm_service_stale_at(10 * ms, hb, hb, 1));
	ck_assert(!rpm_service_stale_at(10 * ms, hb, hb + 60 * s, 1));
	ck_assert(rpm_service_stale_at(10 * ms, hb, hb + 60 * s + 1, 1));
	ck_assert(!rpm_service_stale_at(10 * ms, hb, hb + 5 * s, 0));
	ck_assert(rpm_service_stale_at(10 * ms, hb, hb + 5 * s + 1, 0));
	ck_assert(!rpm_service_stale_at(1 * s, hb, hb + 10 * s, 0));
	ck_assert(rpm_service_stale_at(1 * s, hb, hb + 10 * s + 1, 0));
	ck_assert(!rpm_service_stale_at(1 * s, hb, hb + 100 * s, 1));
	ck_assert(rpm_service_stale_at(1 * s, hb, hb + 100 * s + 1, 1));
	ck_assert(!rpm_service_stale_at(UINT64_MAX / 2, 0, UINT64_MAX, 0)); /* no overflow */
	/* Published after the reader took the time: fresh; far ahead: not
	 * trusted. */
	ck_assert(!rpm_service_stale_at(10 * ms, hb, hb - 1, 1));
	ck_assert(!rpm_service_stale_at(10 * ms, hb, hb - s, 1));
	ck_assert(rpm_service_stale_at(10 * ms, hb, hb - s - 1, 1));
	/* Seen gone for certain (same pid namespace): after 2 intervals, no
	 * floor. */
	ck_assert(!rpm_service_stale_at(10 * ms, hb, hb + 20 * ms, HERITAGE_DAEMON_GONE));
	ck_assert(rpm_service_stale_at(10 * ms, hb, hb + 20 * ms + 1, HERITAGE_DAEMON_GONE));
	ck_assert(!rpm_service_stale_at(1 * s, hb, hb + 2 * s, HERITAGE_DAEMON_GONE));
	ck_assert(rpm_service_stale_at(1 * s, hb, hb + 2 * s + 1, HERITAGE_DAEMON_GONE));
	/* The page's verdict asks whether its pid lives, keeping errno. */
	struct rpm_service_page *p = new_page(1, 10 * ms, 0);
	p->pid = getpid();
	errno = 1234;
	ck_assert(!rpm_service_stale(p, hb, hb + 30 * s));
	ck_assert_int_eq(errno, 1234);
	pid_t c = fork();
	if (c == 0)
		_exit(0);
	waitpid(c, NULL, 0); /* reaped: its pid is gone */
	p->pid = c;
	ck_assert(rpm_service_stale(p, hb, hb + 30 * s));
	/* Version 1's page (no namespace): the dead pid may be another
	 * namespace's, trusted for the 5 s floor... */
	ck_assert(!rpm_service_stale(p, hb, hb + 4 * s));
	/* ...in this namespace it is gone for certain: done after 2 intervals. */
	ck_assert_uint_ne(heritage_pidns_self(), 0);
	p->pidns = heritage_pidns_self();
	ck_assert(!rpm_service_stale(p, hb, hb + 20 * ms));
	ck_assert(rpm_service_stale(p, hb, hb + 20 * ms + 1));
	/* Another namespace's page: as version 1's. */
	p->pidns = heritage_pidns_self() + 1;
	ck_assert(!rpm_service_stale(p, hb, hb + 4 * s));
	/* A live pid with the daemon's start time is the daemon; with another,
	 * a process that got the dead daemon's number. */
	p->pidns = heritage_pidns_self();
	p->pid = getpid();
	p->pid_start = heritage_pid_start(getpid());
	ck_assert_uint_ne(p->pid_start, 0);
	ck_assert(!rpm_service_stale(p, hb, hb + 30 * s));
	p->pid_start++;
	ck_assert(rpm_service_stale(p, hb, hb + 20 * ms + 1));
	ck_assert_uint_eq(heritage_pid_start(c), 0);
	free(p);

	/* A name with spaces and parentheses does not move field 22: read
	 * here with sscanf from the last ')', as proc(5) says to. */
	int gate[2];
	ck_assert_int_eq(pipe(gate), 0);
	c = fork();
	if (c == 0) {
		prctl(PR_SET_NAME, "x) 1 2 (y");
		char b;
		close(gate[1]);
		(void)!read(gate[0], &b, 1);
		_exit(0);
	}
	close(gate[0]);
	char path[64], text[1024] = "";
	unsigned long long want = 0;
	for (int tries = 0; tries < 200 && !strstr(text, "x) 1 2 (y"); tries++) {
		usleep(5000);
		snprintf(path, sizeof path, "/proc/%d/stat", (int)c);
		FILE *f = fopen(path, "r");
		ck_assert_ptr_nonnull(f);
		size_t got = fread(text, 1, sizeof text - 1, f);
		text[got] = '\0';
		fclose(f);
	}
	const char *after = strrchr(text, ')');
	ck_assert_ptr_nonnull(after);
	ck_assert_int_eq(sscanf(after + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
	                        &want), 1);
	uint64_t child_start = heritage_pid_start(c);
	close(gate[1]);
	waitpid(c, NULL, 0);
	ck_assert_uint_eq(child_start, want);
	ck_assert_uint_ge(child_start, heritage_pid_start(getpid()));
}
END_TEST

/* The seqlock under a writer that publishes 50000 times with short gaps (as
 * rpmd leaves between publications; without gaps the readers mostly find
 * the sequence odd): every copy a reader gets is one publication (all
 * counts equal to its heartbeat), never a mix of two.  With the reader's
 * re-check of the sequence removed, this saw 600 to 20000 torn copies in
 * about 10 million reads on the 2-vCPU VM; with it, none. */
#define SEQ_CPUS 64
static struct rpm_service_page *seq_page;
static atomic_int seq_done;

static void *seq_writer(void *arg)
{
	static uint64_t counts[SEQ_CPUS][RPM_PERF_NCOUNTS];
	(void)arg;
	for (uint64_t n = 1; n <= 50000; n++) {
		for (unsigned i = 0; i < SEQ_CPUS; i++)
			for (int k = 0; k < RPM_PERF_NCOUNTS; k++)
				counts[i][k] = n;
		rpm_service_publish(seq_page, n, (const uint64_t(*)[RPM_PERF_NCOUNTS])counts);
		for (int j = 0; j < 50; j++)
			__builtin_ia32_pause();
	}
	atomic_store(&seq_done, 1);
	return NULL;
}

static void *seq_reader(void *arg)
{
	uintptr_t bad = 0, reads = 0;
	uint64_t last = 0;
	unsigned idx = (unsigned)(uintptr_t)arg; /* the first entry written, or the last */
	while (!atomic_load(&seq_done)) {
		uint64_t out[RPM_PERF_NCOUNTS], hb;
		if (rpm_service_read_cpu(seq_page, idx, out, &hb) != 0)
			continue;
		reads++;
		for (int k = 0; k < RPM_PERF_NCOUNTS; k++)
			bad += out[k] != hb;
		bad += hb < last; /* and never backwards */
		last = hb;
	}
	return (void *)(bad ? UINTPTR_MAX : reads);
}

START_TEST(test_service_seqlock)
{
	seq_page = new_page(SEQ_CPUS, 10000000, 0);
	atomic_store(&seq_done, 0);
	pthread_t w, r[2];
	pthread_create(&r[0], NULL, seq_reader, (void *)0);
	pthread_create(&r[1], NULL, seq_reader, (void *)(SEQ_CPUS - 1));
	pthread_create(&w, NULL, seq_writer, NULL);
	pthread_join(w, NULL);
	for (int i = 0; i < 2; i++) {
		void *res;
		pthread_join(r[i], &res);
		ck_assert_msg((uintptr_t)res != UINTPTR_MAX, "reader %d saw a torn or backward copy", i);
		ck_assert_msg((uintptr_t)res > 0, "reader %d never got a copy", i);
	}
	ck_assert_uint_eq(seq_page->seq, 100000);
	/* A writer killed inside a publication: odd for ever.  With a stale
	 * heartbeat the reader gives up at once. */
	seq_page->seq = 7;
	seq_page->heartbeat_ns = 1;
	seq_page->pid = 0; /* no process */
	uint64_t out[RPM_PERF_NCOUNTS];
	ck_assert_int_eq(rpm_service_read_cpu(seq_page, 0, out, NULL), -EAGAIN);
	ck_assert_int_eq(rpm_service_read_cpu(seq_page, RPM_MAX_CPUS, out, NULL), -EINVAL);
	free(seq_page);
}
END_TEST

/* The object: created as rpmd does, mapped as a reader does; planted
 * objects, FIFOs, symlinks and stale pages refused; a live daemon's page
 * not taken over. */
START_TEST(test_service_objects)
{
	char dir[256], path[300], link[340], why[1024];
	snprintf(dir, sizeof dir, "%s/rpm-service-XXXXXX", getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : P_tmpdir);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/page", dir);
	unsigned os[2] = { 0, 1 };
	struct rpm_service_page *w;
	const struct rpm_service_page *r;
	ino_t ino;
	uid_t me = geteuid();
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;

	ck_assert_int_eq(rpm_service_map(path, me, &r, NULL, why, sizeof why), -ENOENT);
	ck_assert_msg(strstr(why, "rpmd is not running"), "%s", why);
	ck_assert_int_eq(rpm_service_create(path, 2, os, 10000000, now, no_err, no_why, &w, &ino, why, sizeof why), 0);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0444);
	ck_assert_uint_eq(st.st_uid, me);
	ck_assert_uint_eq(st.st_ino, ino);
	ck_assert_int_eq(w->pid, getpid());
	/* Trusted as the service account's; a read-only view, of that inode. */
	ino_t mapped = 0;
	ck_assert_int_eq(rpm_service_map(path, me, &r, &mapped, why, sizeof why), 0);
	ck_assert_uint_eq(mapped, ino);
	ck_assert_int_eq(rpm_service_replaced(path, mapped), 0);
	ck_assert_int_eq(rpm_service_replaced(path, mapped + 1), 1); /* another daemon's page there now */
	uint64_t counts[2][RPM_PERF_NCOUNTS] = { { 1, 1, 0, 5 }, { 2, 2, 0, 6 } }, out[RPM_PERF_NCOUNTS];
	rpm_service_publish(w, now + 1, (const uint64_t(*)[RPM_PERF_NCOUNTS])counts);
	ck_assert_int_eq(rpm_service_read_cpu(r, 1, out, NULL), 0);
	ck_assert_uint_eq(out[RPM_SYSCALLS], 6);
	ck_assert_int_eq(mprotect((void *)r, 4096, PROT_READ | PROT_WRITE), -1);
	ck_assert_int_eq(errno, EACCES);
	munmap((void *)r, sizeof *r);
	if (me != 0) { /* root's objects are always trusted */
		ck_assert_int_eq(rpm_service_map(path, (uid_t)-1, &r, NULL, why, sizeof why), -EPERM);
		ck_assert_msg(strstr(why, "owned by uid"), "%s", why);
	}
	/* Writable by others: refused. */
	chmod(path, 0666);
	ck_assert_int_eq(rpm_service_map(path, me, &r, NULL, why, sizeof why), -EPERM);
	chmod(path, 0444);
	/* A symlink to it, and a FIFO (which must not block the reader). */
	snprintf(link, sizeof link, "%s/link", dir);
	ck_assert_int_eq(symlink(path, link), 0);
	ck_assert_int_eq(rpm_service_map(link, me, &r, NULL, why, sizeof why), -ELOOP);
	unlink(link);
	ck_assert_int_eq(mkfifo(link, 0444), 0);
	ck_assert_int_eq(rpm_service_map(link, me, &r, NULL, why, sizeof why), -EINVAL);
	ck_assert_msg(strstr(why, "not a regular file"), "%s", why);
	unlink(link);
	/* A live daemon's page is not taken over (our parent stands for it). */
	__atomic_store_n(&w->pid, (int32_t)getppid(), __ATOMIC_RELAXED);
	struct rpm_service_page *w2;
	ino_t ino2;
	ck_assert_int_eq(rpm_service_create(path, 2, os, 10000000, now, no_err, no_why, &w2, &ino2, why, sizeof why), -EBUSY);
	ck_assert_msg(strstr(why, "publishes there already"), "%s", why);
	/* A dead daemon's page goes stale, and a new one replaces it. */
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	__atomic_store_n(&w->pid, (int32_t)dead, __ATOMIC_RELAXED);
	rpm_service_publish(w, now > 20000000000ULL ? now - 20000000000ULL : 0, (const uint64_t(*)[RPM_PERF_NCOUNTS])counts);
	ck_assert_int_eq(rpm_service_map(path, me, &r, NULL, why, sizeof why), -ESTALE);
	ck_assert_msg(strstr(why, "stale") && strstr(why, "is gone"), "%s", why);
	ck_assert_int_eq(rpm_service_create(path, 2, os, 10000000, now, no_err, no_why, &w2, &ino2, why, sizeof why), 0);
	ck_assert_uint_ne(ino2, ino);
	ck_assert_int_eq(rpm_service_replaced(path, ino), 1); /* a reader of the old page sees it renamed over */
	ck_assert_int_eq(rpm_service_replaced(path, ino2), 0);
	/* The old daemon's exit does not remove its successor's page. */
	rpm_service_remove(path, ino);
	ck_assert_int_eq(access(path, F_OK), 0);
	rpm_service_remove(path, ino2);
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_int_eq(rpm_service_replaced(path, ino2), 1); /* removed (rpmd stop) */
	munmap(w, sizeof *w);
	munmap(w2, sizeof *w2);
	rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("paragon");
	TCase *tc = tcase_create("paragon_rpm");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_dclock_integer_path);
	tcase_add_test(tc, test_wrap_extension);
	tcase_add_test(tc, test_reset_bases);
	tcase_add_test(tc, test_bus_model);
	tcase_add_test(tc, test_mesh_routes_4x4);
	tcase_add_test(tc, test_mesh_parse);
	tcase_add_test(tc, test_proc_parsers);
	tcase_add_test(tc, test_proc_interrupts_reentrant);
	tcase_add_test(tc, test_tsc_clock);
	tcase_add_test(tc, test_tracefs_mount);
	tcase_add_test(tc, test_fpe_classes);
	tcase_add_test(tc, test_service_format);
	tcase_add_test(tc, test_service_owner_checks);
	tcase_add_test(tc, test_service_stale);
	tcase_add_test(tc, test_service_seqlock);
	tcase_add_test(tc, test_service_objects);
	tcase_add_test(tc, test_thread_buffer_freed);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
