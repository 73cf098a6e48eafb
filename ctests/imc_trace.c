/*
 * imc trace mode through its public API (<papi_heritage_imc_trace.h>),
 * against the built libpapi:
 *
 *   imc_trace run [FILE]  (and save the trace to FILE for imc_trace_dump)
 *                    trace a known loop (ctests/imc_trace_loop.S) at the
 *                    default rate: >= 1000 records per second of the
 *                    thread's CPU time, nearly every PC inside the loop,
 *                    timebases inside the run and increasing, mode user,
 *                    CPMC2 advancing by 32e6 / hz per record, and ZERO
 *                    signals delivered to the process during the run: by
 *                    the signal:signal_deliver tracepoint (skipped, with
 *                    why, when tracefs or the tracepoint is not open to this
 *                    account) and by handlers of SIGPROF, SIGALRM, SIGIO,
 *                    SIGURG and SIGTRAP;
 *   imc_trace spin   the loop alone for 0.3 s of CPU, untraced: what
 *                    tests/cases/imc_trace_dump.test traces from outside;
 *   imc_trace wrap   20 kHz into a 4K-entry buffer for long enough to wrap:
 *                    records lost are reported, the ones kept are the
 *                    samples since the last wrap, in increasing timebase;
 *   imc_trace papi_overflow, papi_profil
 *                    the same loop through PAPI: imc:::trace_imc::
 *                    trace_cycles with PAPI_overflow (threshold 16000
 *                    CPM_32MHZ_CYC = 2 kHz) gets every record's PC in its
 *                    handler, called from PAPI_read and PAPI_stop only,
 *                    >= 1000 per CPU second, >= 98 % inside the loop, zero
 *                    signals; PAPI_profil fills the loop's bins alone.
 *
 * Where perf sampling is refused or absent (tests/no-perf, perf_event_
 * paranoid, nobody), starting a trace must FAIL with the probe's reason --
 * never an empty trace -- and the test then skips with that reason.
 *
 * Run time is the traced thread's CPU time (CLOCK_THREAD_CPUTIME_ID): the
 * trace samples while the thread runs, as POWER9's does while the thread's
 * LDBAR is loaded, so the rate holds on a shared machine too.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "papi.h"
#include "papi_heritage.h"
#include "papi_heritage_imc_trace.h"
#include "test_expect.h"

long imc_trace_loop(long n);
extern const char imc_trace_loop_end[];

static volatile sig_atomic_t caught[65];

static void count_signal(int sig)
{
	caught[sig]++;
}

static const int watched[] = { SIGPROF, SIGALRM, SIGIO, SIGURG, SIGTRAP };
#define NWATCHED (int)(sizeof watched / sizeof watched[0])

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The machine's stolen time so far (/proc/stat's steal, every CPU), in ns;
 * 0 where the kernel does not say.  In a guest the task clock's sampling
 * timer runs on the guest's wall clock while the thread is on its vCPU,
 * also while the host runs something else on it, which the thread's CPU
 * time (CLOCK_THREAD_CPUTIME_ID) leaves out: the records' cycles may exceed
 * the thread's CPU time by at most the time stolen meanwhile. */
static uint64_t steal_ns(void)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return 0;
	int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
	               &v[6], &v[7]);
	fclose(f);
	long hz = sysconf(_SC_CLK_TCK);
	return n == 8 && hz > 0 ? v[7] * (1000000000ull / (unsigned long long)hz) : 0;
}

/* ---- signal:signal_deliver through perf_event_open ------------------------- */

static int tracepoint_id(const char *event, char *why, size_t len)
{
	char line[1024], dir[512] = "", path[700];
	FILE *m = fopen("/proc/self/mounts", "re");
	while (m && fgets(line, sizeof line, m)) {
		char d[512], type[64];
		if (sscanf(line, "%*s %511s %63s", d, type) == 2 && strcmp(type, "tracefs") == 0) {
			snprintf(dir, sizeof dir, "%s", d);
			break;
		}
	}
	if (m)
		fclose(m);
	if (!dir[0]) {
		snprintf(why, len, "tracefs is not mounted");
		return -1;
	}
	snprintf(path, sizeof path, "%s/events/%s/id", dir, event);
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		return -1;
	}
	int id = -1;
	if (fscanf(f, "%d", &id) != 1)
		snprintf(why, len, "%s holds no id", path);
	fclose(f);
	return id;
}

/* A counter of signals delivered to this thread and the threads it starts
 * later (inherit): the trace engine's thread is one of those. */
static int open_signal_deliver(char *why, size_t len)
{
	int id = tracepoint_id("signal/signal_deliver", why, len);
	if (id < 0)
		return -1;
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_TRACEPOINT;
	a.config = (unsigned)id;
	a.inherit = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		snprintf(why, len, "perf_event_open(signal:signal_deliver): %s", strerror(errno));
	return fd;
}

static long long read_count(int fd)
{
	uint64_t v = 0;
	return read(fd, &v, sizeof v) == (ssize_t)sizeof v ? (long long)v : -1;
}

/* ---- tracing ------------------------------------------------------------- */

/* Starts a trace, or shows that refusing it is what the probe predicts and
 * skips with the reason. */
static papi_heritage_imc_trace_t *start_or_skip(unsigned hz, int bs)
{
	struct papi_heritage_mechanism m;
	papi_heritage_imc_trace_t *t = NULL;
	int i = papi_heritage_mechanism_index("sampling");
	EXPECT(i >= 0 && papi_heritage_mechanism(i, &m) == PAPI_OK, "no sampling mechanism");
	int rc = papi_heritage_imc_trace_start(&t, hz, bs);
	if (m.state != PAPI_HERITAGE_MECH_WORKS) {
		/* Never a silent empty trace. */
		EXPECT(rc < 0 && t == NULL, "imc trace started although sampling is %s (%s)",
		       m.refused ? "refused" : "not working", m.evidence);
		EXPECT(strstr(papi_heritage_last_error(), "sampling") != NULL, "reason without the mechanism: '%s'",
		       papi_heritage_last_error());
		if (m.refused)
			EXPECT(rc == -EPERM || rc == -EACCES, "refused sampling gave %d, want -EPERM or -EACCES", rc);
		if (heritage_test_done("imc_trace (refused)") != 0)
			exit(1);
		printf("SKIPPED: imc trace unavailable here (start returned %d, %s): %s\n", rc, strerror(-rc),
		       papi_heritage_last_error());
		exit(77);
	}
	if (rc != 0) {
		fprintf(stderr, "papi_heritage_imc_trace_start: %d: %s\n", rc, papi_heritage_last_error());
		exit(1);
	}
	return t;
}

/* The loop for at least cpu_ns of this thread's CPU time, in chunks of
 * about 10 ms; returns the CPU time spent. */
static uint64_t run_loop(uint64_t cpu_ns)
{
	uint64_t t0 = now_ns(CLOCK_THREAD_CPUTIME_ID), t;
	do
		imc_trace_loop(20000000);
	while ((t = now_ns(CLOCK_THREAD_CPUTIME_ID)) - t0 < cpu_ns);
	return t - t0;
}

static int mode_run(const char *save)
{
	char why[1024];
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = count_signal;
	for (int i = 0; i < NWATCHED; i++)
		sigaction(watched[i], &sa, NULL);

	int sfd = open_signal_deliver(why, sizeof why);
	long long s0 = -1, s1 = -1;
	if (sfd >= 0) {
		/* Shown to count before it is trusted: one SIGURG to ourselves. */
		long long c0 = read_count(sfd);
		raise(SIGURG);
		s0 = read_count(sfd);
		if (s0 - c0 != 1) {
			fprintf(stderr, "signal:signal_deliver counted %lld for one raise(SIGURG): not trusted\n", s0 - c0);
			heritage_test_failures++;
		}
		EXPECT_EQ("SIGURG handler calls after raise", caught[SIGURG], 1);
		caught[SIGURG] = 0;
	}

	papi_heritage_imc_trace_t *t = start_or_skip(0, -1);
	struct papi_heritage_imc_trace_info info;
	papi_heritage_imc_trace_info(t, &info);
	/* 1200 samples' worth of CPU at any rate (0.6 s at the default
	 * 2 kHz).  The timer fires in time the host steals too (steal_ns), so
	 * a loaded host records more than the CPU time says; 1200 of 4096
	 * entries leave room for 2.4 times the CPU time stolen before a wrap
	 * drops records (3000 at 5 kHz over 0.6 s left 0.36). */
	uint64_t w0 = now_ns(CLOCK_MONOTONIC), st0 = steal_ns();
	uint64_t cpu = run_loop(1200000000000ull / info.hz);
	EXPECT_EQ("papi_heritage_imc_trace_stop", papi_heritage_imc_trace_stop(t), 0);
	/* After the stop: the last sample may fall after the loop. */
	uint64_t w1 = now_ns(CLOCK_MONOTONIC), st1 = steal_ns();
	if (sfd >= 0)
		s1 = read_count(sfd);

	/* The records. */
	struct papi_heritage_imc_record r;
	unsigned long long n = 0, inside = 0, prev_tb = 0, prev_c2 = 0, bad_step = 0;
	uint64_t tb0 = w0 / 125 * 64 + w0 % 125 * 64 / 125, tb1 = w1 / 125 * 64 + w1 % 125 * 64 / 125 + 1;
	const unsigned long long step = 32000000ull / info.hz;
	while (papi_heritage_imc_trace_next(t, &r) == 1) {
		if (n == 0 || n == 1)
			printf("record %llu: tb %llu pc 0x%llx mode %u pid %u cpmc2 %llu\n", n, r.timebase, r.pc, r.mode,
			       r.pid, r.cpmc[1]);
		EXPECT(r.timebase > prev_tb, "record %llu: timebase %llu not above %llu", n, r.timebase, prev_tb);
		/* The timebase is CLOCK_MONOTONIC at 512 MHz: inside the run,
		 * give or take the samples taken just after start. */
		EXPECT(r.timebase >= tb0 - 512000 && r.timebase <= tb1, "record %llu: timebase %llu outside the run [%llu, %llu]",
		       n, r.timebase, (unsigned long long)tb0, (unsigned long long)tb1);
		EXPECT_EQ("mode (3 = user)", r.mode, 3);
		EXPECT_EQ("pid", r.pid, getpid());
		if (r.pc >= (uintptr_t)imc_trace_loop && r.pc < (uintptr_t)imc_trace_loop_end)
			inside++;
		if (n > 0 && ((r.cpmc[1] - prev_c2) & 0xffffffffu) != step)
			bad_step++;
		prev_tb = r.timebase;
		prev_c2 = r.cpmc[1];
		n++;
	}
	papi_heritage_imc_trace_info(t, &info);
	double rate = n / (cpu / 1e9);
	printf("%llu records in %.3f s of CPU (%.3f s wall, %.3f s stolen) at %u Hz: %.0f records/s; %llu inside the loop "
	       "(%.2f%%); lost %llu; %llu samples; stop: %s; SCOM 0x%016llx LDBAR 0x%016llx\n",
	       n, cpu / 1e9, (w1 - w0) / 1e9, (st1 - st0) / 1e9, info.hz, rate, inside, n ? 100.0 * inside / n : 0.0, info.lost,
	       info.samples, info.stop_reason, info.scom, info.ldbar);
	EXPECT(rate >= 1000, "%.0f records per second of CPU time, want >= 1000", rate);
	/* One sample per 1/hz s of task clock: the rate itself, less the
	 * timer's slack (measured 99.3 % at 2 kHz). */
	EXPECT(rate >= 0.9 * info.hz, "%.0f records per second of CPU time at %u Hz", rate, info.hz);
	const char *env_hz = getenv("PAPI_HERITAGE_IMC_TRACE_HZ");
	EXPECT_EQ("sampling rate (PAPI_HERITAGE_IMC_TRACE_HZ or 2000)", info.hz, env_hz ? atoi(env_hz) : 2000);
	/* The hrtimer samples user PCs only (exclude_kernel); outside the loop
	 * are the few instructions of run_loop and the vDSO clock read between
	 * 10 ms chunks, and the library's code between the enabling ioctl and
	 * the loop: well under 2%. */
	EXPECT(n > 0 && inside * 100 >= n * 98, "%llu of %llu PCs inside the loop, want >= 98%%", inside, n);
	EXPECT(bad_step * 100 <= n, "%llu of %llu CPMC2 steps differ from 32e6/hz = %llu", bad_step, n, step);
	EXPECT_EQ("records lost (4096 entries, about 1200 samples)", info.lost, 0);
	EXPECT_EQ("records handed over = samples", info.records, info.samples);

	/* Zero signals, counted twice. */
	for (int i = 0; i < NWATCHED; i++)
		EXPECT(caught[watched[i]] == 0, "%d %s delivered during the trace", (int)caught[watched[i]],
		       strsignal(watched[i]));
	if (sfd >= 0) {
		printf("signal:signal_deliver during the traced run: %lld\n", s1 - s0);
		EXPECT_EQ("signals delivered during the traced run (signal:signal_deliver)", s1 - s0, 0);
		close(sfd);
	} else
		printf("not asserted here: zero signal:signal_deliver events (%s); the handlers' count still is\n", why);
	if (save)
		EXPECT(papi_heritage_imc_trace_save(t, save) == 0, "papi_heritage_imc_trace_save(%s): %s", save,
		       papi_heritage_last_error());
	papi_heritage_imc_trace_free(t);
	return heritage_test_done("imc_trace run");
}

static int mode_wrap(void)
{
	const unsigned hz = 20000;
	papi_heritage_imc_trace_t *t = start_or_skip(hz, 0);
	uint64_t cpu = run_loop(400000000u); /* about 8000 samples into 4096 entries */
	EXPECT_EQ("papi_heritage_imc_trace_stop", papi_heritage_imc_trace_stop(t), 0);
	struct papi_heritage_imc_trace_info info;
	papi_heritage_imc_trace_info(t, &info);
	struct papi_heritage_imc_record r;
	unsigned long long n = 0, prev = 0;
	while (papi_heritage_imc_trace_next(t, &r) == 1) {
		EXPECT(r.timebase > prev, "kept record %llu: timebase %llu not above %llu", n, r.timebase, prev);
		prev = r.timebase;
		n++;
	}
	printf("%llu samples in %.3f s of CPU into %u entries: %llu kept, %llu lost, walk stopped at: %s\n",
	       info.samples, cpu / 1e9, info.entries, n, info.lost, info.stop_reason);
	EXPECT_EQ("entries", info.entries, 4096);
	EXPECT(info.samples > 4096, "%llu samples did not wrap 4096 entries", info.samples);
	/* After w wraps the walk keeps the samples written since the last one:
	 * samples mod 4096 (a whole buffer when that is 0). */
	unsigned long long want = info.samples % 4096 ? info.samples % 4096 : 4096;
	EXPECT_EQ("records kept", n, want);
	EXPECT_EQ("records lost", info.lost, info.samples - want);
	EXPECT_EQ("handed over", info.records, n);
	papi_heritage_imc_trace_free(t);
	return heritage_test_done("imc_trace wrap");
}

/* ---- through PAPI: PAPI_overflow and PAPI_profil on trace_cycles ----------- */

static struct {
	long calls, inside;
	int in_read; /* calls made while PAPI_read or PAPI_stop ran: all of them */
} papi_ovf;
static volatile int in_papi_call;

static void overflow_handler(int set, void *address, long long vector, void *context)
{
	(void)set;
	(void)vector;
	(void)context;
	uintptr_t pc = (uintptr_t)address;
	papi_ovf.calls++;
	papi_ovf.inside += pc >= (uintptr_t)imc_trace_loop && pc < (uintptr_t)imc_trace_loop_end;
	papi_ovf.in_read += in_papi_call;
}

/* The set of trace_cycles, or a skip with PAPI's reason when trace cannot
 * run here (the probe must agree: never a set that starts and stays empty). */
static int trace_set_or_skip(int *code)
{
	int set = PAPI_NULL;
	EXPECT(PAPI_create_eventset(&set) == PAPI_OK, "PAPI_create_eventset");
	int rc = PAPI_add_named_event(set, "imc:::trace_imc::trace_cycles");
	struct papi_heritage_mechanism m;
	int i = papi_heritage_mechanism_index("sampling");
	EXPECT(i >= 0 && papi_heritage_mechanism(i, &m) == PAPI_OK, "no sampling mechanism");
	if (rc != PAPI_OK) {
		EXPECT(m.state != PAPI_HERITAGE_MECH_WORKS, "trace_cycles refused (%s) although sampling works: %s",
		       PAPI_strerror(rc), papi_heritage_last_error());
		EXPECT(rc == PAPI_ENOSUPP, "trace_cycles refused with %d, want PAPI_ENOSUPP", rc);
		if (heritage_test_done("imc_trace papi (refused)") != 0)
			exit(1);
		printf("SKIPPED: imc:::trace_imc::trace_cycles unavailable here: %s\n", papi_heritage_last_error());
		exit(77);
	}
	EXPECT(PAPI_event_name_to_code("imc:::trace_imc::trace_cycles", code) == PAPI_OK, "name_to_code");
	return set;
}

/* Threshold 16000 CPM_32MHZ_CYC: one record per 500 us of the thread's CPU
 * time (2 kHz). */
#define PAPI_THRESHOLD 16000

static int mode_papi_overflow(void)
{
	char why[1024];
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = count_signal;
	for (int k = 0; k < NWATCHED; k++)
		sigaction(watched[k], &sa, NULL);
	int code, set = trace_set_or_skip(&code);
	EXPECT(PAPI_overflow(set, code, PAPI_THRESHOLD, 0, overflow_handler) == PAPI_OK, "PAPI_overflow: %s",
	       papi_heritage_last_error());
	int fd = open_signal_deliver(why, sizeof why);
	if (fd < 0)
		printf("signal:signal_deliver not counted (%s): the handlers still count\n", why);
	long long before = fd >= 0 ? read_count(fd) : 0, mid, end;
	uint64_t st0 = steal_ns(), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	EXPECT(PAPI_start(set) == PAPI_OK, "PAPI_start: %s", papi_heritage_last_error());
	uint64_t cpu = run_loop(250000000u);
	in_papi_call = 1;
	EXPECT(PAPI_read(set, &mid) == PAPI_OK, "PAPI_read");
	in_papi_call = 0;
	long after_read = papi_ovf.calls;
	cpu += run_loop(250000000u);
	in_papi_call = 1;
	EXPECT(PAPI_stop(set, &end) == PAPI_OK, "PAPI_stop: %s", papi_heritage_last_error());
	in_papi_call = 0;
	uint64_t c1 = now_ns(CLOCK_THREAD_CPUTIME_ID), st1 = steal_ns();
	long long delivered = fd >= 0 ? read_count(fd) - before : 0;
	double secs = (double)cpu / 1e9, rate = (double)papi_ovf.calls / secs;
	printf("PAPI_overflow: %ld handler calls over %.3f s of CPU (%.0f/s), %ld inside the loop, %ld at PAPI_read; "
	       "trace_cycles %lld at read, %lld at stop; %lld signals delivered\n",
	       papi_ovf.calls, secs, rate, papi_ovf.inside, after_read, mid, end, delivered);
	/* Records are handed over at read and stop, in the caller's context. */
	EXPECT(after_read > 0, "no record handed over at PAPI_read");
	EXPECT(papi_ovf.in_read == papi_ovf.calls, "%ld of %ld handler calls came outside PAPI_read/PAPI_stop",
	       papi_ovf.calls - papi_ovf.in_read, papi_ovf.calls);
	EXPECT(rate >= 1000, "%.0f handler calls per CPU second, want >= 1000", rate);
	EXPECT(papi_ovf.inside >= papi_ovf.calls * 98 / 100, "%ld of %ld PCs inside the loop, want >= 98 %%",
	       papi_ovf.inside, papi_ovf.calls);
	/* The value: 32 MHz cycles the records cover, modelled from the task
	 * clock: at most the thread's CPU time from start to stop, plus the
	 * time the host stole meanwhile (steal_ns; /proc/stat counts it in
	 * ticks, so one more tick where it counted any). */
	uint64_t stolen = st1 > st0 ? st1 - st0 + 1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK) : 0;
	double cap = (double)(c1 - c0 + stolen) * 0.032;
	EXPECT(end > 0 && end <= cap * 1.01 && end >= (double)cpu * 0.032 * 0.8,
	       "trace_cycles %lld, want within [0.8 x %.0f, %.0f] (32 MHz x the thread's CPU time, %.3f s, "
	       "and the %.3f s stolen meanwhile)", end, (double)cpu * 0.032, cap, (double)(c1 - c0) / 1e9,
	       (double)stolen / 1e9);
	EXPECT(mid <= end, "trace_cycles went back: %lld at read, %lld at stop", mid, end);
	for (int k = 0; k < NWATCHED; k++)
		EXPECT(caught[watched[k]] == 0, "signal %d caught %d times", watched[k], (int)caught[watched[k]]);
	if (fd >= 0)
		EXPECT(delivered == 0, "signal:signal_deliver counted %lld during the traced run", delivered);
	return heritage_test_done("imc_trace papi_overflow");
}

static int mode_papi_profil(void)
{
	char why[1024];
	/* One bin per instruction byte of the loop (scale 65536: a 16-bit bin
	 * per 2 bytes; 0x10000 = 1:1 in PAPI's units of half bins), and the
	 * bins past the loop's end must stay empty. */
	uintptr_t lo = (uintptr_t)imc_trace_loop, hi = (uintptr_t)imc_trace_loop_end;
	size_t nbins = (hi - lo) / 2 + 8;
	unsigned short *bins = calloc(nbins, sizeof *bins);
	int code, set = trace_set_or_skip(&code);
	EXPECT(PAPI_profil(bins, (unsigned)(nbins * sizeof *bins), (vptr_t)lo, 65536, set, code, PAPI_THRESHOLD,
	                   PAPI_PROFIL_POSIX) == PAPI_OK,
	       "PAPI_profil: %s", papi_heritage_last_error());
	int fd = open_signal_deliver(why, sizeof why);
	if (fd < 0)
		printf("signal:signal_deliver not counted (%s)\n", why);
	long long before = fd >= 0 ? read_count(fd) : 0, end;
	EXPECT(PAPI_start(set) == PAPI_OK, "PAPI_start: %s", papi_heritage_last_error());
	uint64_t cpu = run_loop(400000000u);
	EXPECT(PAPI_stop(set, &end) == PAPI_OK, "PAPI_stop");
	long long delivered = fd >= 0 ? read_count(fd) - before : 0;
	unsigned long in = 0, past = 0;
	for (size_t b = 0; b < nbins; b++)
		if (lo + 2 * b < hi)
			in += bins[b];
		else
			past += bins[b];
	double rate = (double)in / ((double)cpu / 1e9);
	printf("PAPI_profil: %lu samples in the loop's %zu bins over %.3f s of CPU (%.0f/s), %lu past its end; %lld "
	       "signals delivered\n",
	       in, (size_t)((hi - lo + 1) / 2), (double)cpu / 1e9, rate, past, delivered);
	EXPECT(rate >= 1000 * 0.98, "%.0f profile samples per CPU second in the loop, want >= 980", rate);
	EXPECT(past == 0, "%lu samples in bins past the loop's end", past);
	if (fd >= 0)
		EXPECT(delivered == 0, "signal:signal_deliver counted %lld during the profiled run", delivered);
	free(bins);
	return heritage_test_done("imc_trace papi_profil");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "run";
	/* The loop alone, for imc_trace_dump(1) to trace (imc_trace_dump.test). */
	if (strcmp(mode, "spin") == 0) {
		run_loop(300000000u);
		return 0;
	}
	int rc = PAPI_library_init(PAPI_VER_CURRENT);
	if (rc != PAPI_VER_CURRENT) {
		fprintf(stderr, "PAPI_library_init: %d\n", rc);
		return 1;
	}
	if (strcmp(mode, "run") == 0)
		return mode_run(argc > 2 ? argv[2] : NULL);
	if (strcmp(mode, "wrap") == 0)
		return mode_wrap();
	if (strcmp(mode, "papi_overflow") == 0)
		return mode_papi_overflow();
	if (strcmp(mode, "papi_profil") == 0)
		return mode_papi_profil();
	fprintf(stderr, "usage: imc_trace run|wrap|spin|papi_overflow|papi_profil\n");
	return 2;
}
