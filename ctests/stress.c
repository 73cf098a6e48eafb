/*
 * stress (issue 15, item 5): every component at once, for minutes.
 *
 *   stress [--seconds=N] [--imcd=PATH] [--rpmd=PATH]   (STRESS_SECONDS: the default N, 600)
 *
 * Threads, all at the same time until the deadline:
 *   - 8 workers, each in a loop over the components: create an event set,
 *     start, work a known amount, read, work again, stop, clean up, destroy.
 *     Every count is checked against what the thread did, computed here:
 *       itanium2     LOADS/STORES_RETIRED:exact=1 over the thread's own
 *                    2-page buffer, touched by volatile scalar accesses a
 *                    known number of times: equal at the read and at the stop;
 *                    every 8th time a helper thread's PAPI_read and PAPI_stop
 *                    of the running set are refused (PAPI_EINVAL, "started by
 *                    thread") and the owner's counts stay exact;
 *       paragon_rpm  rpm_time within 1 ms of CLOCK_BOOTTIME at each read and
 *                    monotone; rpms_dat (page faults, where this account can
 *                    count them) grows by at least the fresh pages touched;
 *       alpha21064   LOAD_INSNS:width=12 (each interrupt is a carry out of
 *                    bit 12: a wrap of a 12-bit counter) over
 *                    alpha_load_loop's known loads: a multiple of 4096, at
 *                    least the loop's loads, at most those plus
 *                    what PAPI's own code loads (ALPHA_SLACK); a helper's
 *                    PAPI_stop of the running set is refused;
 *       imc          thread_imc::CPM_CS_32MHZ_CYC_USER x 512 / 32 MHz against
 *                    the thread's user time (getrusage), within a period and
 *                    the tick granularity;
 *       profileme    any = trap + notrap exactly, multiples of the period,
 *                    at most cpu / (period / 2) + 1 samples (the intervals
 *                    are drawn from [p/2, 3p/2)), and over the whole run
 *                    0.5 to 1.3 times the CPU time sampled.
 *   - fork: forks while its own itanium2 set runs (and the workers' run); the
 *     child touches every watched page of the parent (no trap of ours may
 *     fire), checks that no trap signal is blocked or ignored, then execs
 *     this program (--exec-child), which checks that it inherited no
 *     descriptor beyond those the parent had before PAPI, no interval timer,
 *     no tracer and no blocked or ignored trap signal.  The parent's count
 *     excludes the child's accesses.
 *   - signals: the application's own SIGSEGV (a PROT_NONE page of its own),
 *     SIGTRAP (int3) and SIGFPE (integer division by zero) handlers, installed
 *     after PAPI_library_init, are each served exactly once per fault while the
 *     thread's itanium2 set watches its buffer (pagetrap where the build has
 *     no instrument hooks) and the workers' trap backends run; the watched
 *     counts stay exact; no fault of ours reaches them.
 *   - daemons: imcd (--imcd) is killed with SIGKILL and restarted every
 *     ~1.5 s while two readers read imc:::nest_powerbus0_imc::PM_PB_CYC:cpu=0:
 *     monotone, never more than the wall time at the nest clock allows
 *     (nothing doubled), and, inside one imcd's life, equal to the delta of
 *     imcd's own counter in its object (nothing lost, nothing doubled); a
 *     read after imcd's death fails, saying the counts are frozen, and
 *     PAPI_reset moves the set on;
 *     as root, rpmd (--rpmd) is killed and restarted every ~1.5 s while an
 *     unprivileged reader process counts rpms_dat through its service page
 *     (rpmd_reader_main says what is checked).
 * Around it all: the descriptors (/proc/self/fd) and mappings
 * (/proc/self/maps) after a warm-up round of the same threads and after the
 * run must be the same.  The figures (operations, wraps, threads, ...) are
 * printed at the end.  A part whose mechanism this machine or account does
 * not offer is skipped with the probe's reason, and says so.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "heritage_test.h"
#include "rpm_service_page.h"
#include "knob.h"

long alpha_load_loop(const long *p, long n); /* src/tests/alpha_loops.S: exactly n loads */

#define NWORKERS 8
#define PAGE 4096
#define BUF_INTS (2 * PAGE / (int)sizeof(int)) /* two pages: the page-trap backend's case */
#define IT2_TOUCH 64 /* watched loads (and stores) per half: each is a fault, a park of every other thread and a step with page traps */
#define ALPHA_LOADS 8192
/* PAPI's own loads between PAPI_start and the counter's stop, counted with
 * the loop's: "a few thousand" (foreign_thread), one interrupt at most.
 * 4096 is still below doubling the loop's 8192. */
#define ALPHA_SLACK 4096
#define PB_CYC "imc:::nest_powerbus0_imc::PM_PB_CYC:cpu=0"
#define NEST_HZ 2e9   /* imc(3): the assumed nest clock, PAPI_HERITAGE_IMC_NEST_HZ's default */
#define NEST_SCALE 256

enum comp { C_IT2, C_RPM, C_ALPHA, C_IMC, C_PM, NCOMP };
static const char *const comp_name[NCOMP] = { "itanium2", "paragon_rpm", "alpha21064", "imc", "profileme" };

/* ---- shared state ------------------------------------------------------------ */

static double deadline;
static __thread const char *role = "main"; /* which thread, for a stray signal's message */
static atomic_int failures;
static atomic_long ops[NCOMP], reads[NCOMP], foreign_refusals, wraps_live, forks, execs, segv_served, trap_served,
	fpe_served, imcd_kills, nest_reads, nest_sets, nest_strict, nest_frozen, rpms_dat_checked, fork_rounds;
static int usable[NCOMP], worker_only_skip[NCOMP];
static atomic_long pm_any_ns, pm_cpu_ns; /* profileme soft: samples x period, and CPU time, over the run */
static char skip_why[NCOMP][600];
static int rpms_dat_ok;
static char rpms_dat_why[600];
static int *worker_buf[NWORKERS + 2];
static const char *self_exe = "/proc/self/exe";
static char fds_at_start[512]; /* "0,1,2," : the descriptors before PAPI, for the exec'd child */

#define FAIL(...)                                                                                   \
	do {                                                                                        \
		if (atomic_fetch_add(&failures, 1) < 60) {                                          \
			fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                             \
			fprintf(stderr, __VA_ARGS__);                                               \
			fprintf(stderr, "\n");                                                      \
		}                                                                                   \
	} while (0)
#define CHECK(cond, ...)                                                                            \
	do {                                                                                        \
		if (!(cond))                                                                        \
			FAIL(__VA_ARGS__);                                                          \
	} while (0)
#define PAPI_OR_FAIL(call)                                                                          \
	({                                                                                          \
		int rc_ = (call);                                                                   \
		if (rc_ != PAPI_OK)                                                                 \
			FAIL("%s = %d (%s): %s", #call, rc_, PAPI_strerror(rc_), papi_heritage_last_error()); \
		rc_;                                                                                \
	})

static double now_s(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int running(void)
{
	return now_s(CLOCK_MONOTONIC) < deadline && atomic_load(&failures) < 60;
}

/* All of ms: the page-trap backend's park signal interrupts sleeps (EINTR),
 * which cut imcd's lives to 70 ms and rpms_dat's wait below 1 ms here. */
static void pause_ms(long ms)
{
	struct timespec d = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&d, &d) != 0 && errno == EINTR)
		;
}

static int *new_buffer(void)
{
	int *b = aligned_alloc(PAGE, BUF_INTS * sizeof(int));
	if (!b) {
		perror("aligned_alloc");
		exit(1);
	}
	memset(b, 0, BUF_INTS * sizeof(int));
	return b;
}

/* n stores then n loads of the watched buffer, one scalar access each,
 * spread over both pages: exactly n loads and n stores. */
__attribute__((noinline)) static void touch(int *buf, int n, int salt)
{
	volatile int *v = buf;
	long sum = 0;
	for (int i = 0; i < n; i++)
		v[(i * 37 + salt) % BUF_INTS] = i;
	for (int i = 0; i < n; i++)
		sum += v[(i * 53 + salt) % BUF_INTS];
	__asm__ volatile("" : : "r"(sum));
}

static int make_set(enum comp c, const char *const *names, int n)
{
	int set = PAPI_NULL;
	if (PAPI_OR_FAIL(PAPI_create_eventset(&set)) != PAPI_OK)
		return PAPI_NULL;
	for (int i = 0; i < n; i++)
		if (PAPI_OR_FAIL(PAPI_add_named_event(set, names[i])) != PAPI_OK) {
			FAIL("%s: %s not added", comp_name[c], names[i]);
			PAPI_cleanup_eventset(set);
			PAPI_destroy_eventset(&set);
			return PAPI_NULL;
		}
	return set;
}

static void drop(int *set)
{
	if (*set == PAPI_NULL)
		return;
	PAPI_OR_FAIL(PAPI_cleanup_eventset(*set));
	PAPI_OR_FAIL(PAPI_destroy_eventset(set));
}

static int it2_range(int set, int *buf)
{
	PAPI_option_t opt;
	return PAPI_OR_FAIL(heritage_test_range(set, PAPI_DATA_ADDRESS, buf, buf + BUF_INTS, &opt));
}

/* ---- foreign-thread refusals -------------------------------------------------- */

struct foreign {
	int set;
	int do_read; /* itanium2: PAPI_read is refused too; alpha21064 reads fine */
};

static void expect_refused(const char *what, int rc)
{
	if (rc != PAPI_EINVAL || !strstr(papi_heritage_last_error(), "started by thread"))
		FAIL("%s from a thread that did not start the set: %d (%s): \"%s\", want PAPI_EINVAL \"started by "
		     "thread\"",
		     what, rc, PAPI_strerror(rc), papi_heritage_last_error());
	else
		atomic_fetch_add(&foreign_refusals, 1);
}

static void *foreign_main(void *arg)
{
	struct foreign *f = arg;
	long long v[2] = { -1, -1 };
	PAPI_register_thread();
	if (f->do_read)
		expect_refused("PAPI_read", PAPI_read(f->set, v));
	expect_refused("PAPI_stop", PAPI_stop(f->set, v));
	CHECK(v[0] == -1 && v[1] == -1, "a refused call wrote values %lld %lld", v[0], v[1]);
	PAPI_unregister_thread();
	return NULL;
}

static void foreign_check(int set, int do_read)
{
	struct foreign f = { set, do_read };
	pthread_t t;
	if (pthread_create(&t, NULL, foreign_main, &f) != 0) {
		FAIL("pthread_create: %s", strerror(errno));
		return;
	}
	pthread_join(t, NULL);
}

/* ---- one iteration per component ----------------------------------------------- */

static void it2_iter(int *buf, long i)
{
	static const char *const names[] = { "itanium2:::LOADS_RETIRED:exact=1", "itanium2:::STORES_RETIRED:exact=1" };
	int set = make_set(C_IT2, names, 2);
	long long v[2];
	if (set == PAPI_NULL || it2_range(set, buf) != PAPI_OK || PAPI_OR_FAIL(PAPI_start(set)) != PAPI_OK) {
		drop(&set);
		return;
	}
	touch(buf, IT2_TOUCH, (int)i);
	if (PAPI_OR_FAIL(PAPI_read(set, v)) == PAPI_OK) {
		CHECK(v[0] == IT2_TOUCH && v[1] == IT2_TOUCH, "itanium2 read: %lld loads %lld stores, want %d each", v[0],
		      v[1], IT2_TOUCH);
		atomic_fetch_add(&reads[C_IT2], 1);
	}
	if (i % 8 == 0)
		foreign_check(set, 1);
	touch(buf, IT2_TOUCH, (int)i + 1);
	if (PAPI_OR_FAIL(PAPI_stop(set, v)) == PAPI_OK)
		CHECK(v[0] == 2 * IT2_TOUCH && v[1] == 2 * IT2_TOUCH, "itanium2 stop: %lld loads %lld stores, want %d each",
		      v[0], v[1], 2 * IT2_TOUCH);
	drop(&set);
	atomic_fetch_add(&ops[C_IT2], 1);
}

static void rpm_iter(long i)
{
	const char *names[2] = { "paragon_rpm:::rpm_time", "paragon_rpm:::rpms_dat" };
	int n = rpms_dat_ok ? 2 : 1;
	int set = make_set(C_RPM, names, n);
	long long v[2], prev = 0;
	if (set == PAPI_NULL || PAPI_OR_FAIL(PAPI_start(set)) != PAPI_OK) {
		drop(&set);
		return;
	}
	for (int r = 0; r < 20; r++) {
		long long lo = heritage_test_boot_ticks();
		if (PAPI_OR_FAIL(PAPI_read(set, v)) != PAPI_OK)
			break;
		long long hi = heritage_test_boot_ticks();
		CHECK(v[0] >= lo - 10000 && v[0] <= hi + 10000, "rpm_time %lld not within 1 ms of CLOCK_BOOTTIME %lld..%lld",
		      v[0], lo, hi);
		CHECK(v[0] >= prev, "rpm_time went back: %lld after %lld", v[0], prev);
		prev = v[0];
		atomic_fetch_add(&reads[C_RPM], 1);
	}
	if (n == 2) {
		/* Fresh pages: one fault each, on whatever CPU; rpms_dat sums them. */
		enum { NPAGES = 64 };
		long long before[2];
		if (PAPI_OR_FAIL(PAPI_read(set, before)) == PAPI_OK) {
			char *p = mmap(NULL, NPAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p != MAP_FAILED) {
				for (int k = 0; k < NPAGES; k++)
					((volatile char *)p)[k * PAGE] = (char)i;
				munmap(p, NPAGES * PAGE);
				/* The counts are sampled at most every 1 ms (paragon_rpm(3):
				 * a read within 1 ms of another returns the same sample, so
				 * 0 was seen here), and rpmd publishes every 10 ms. */
				pause_ms(12);
				if (PAPI_OR_FAIL(PAPI_read(set, v)) == PAPI_OK) {
					CHECK(v[1] - before[1] >= NPAGES, "rpms_dat grew by %lld over %d fresh pages", v[1] - before[1],
					      NPAGES);
					atomic_fetch_add(&rpms_dat_checked, 1);
				}
			}
		}
	}
	PAPI_OR_FAIL(PAPI_stop(set, v));
	drop(&set);
	atomic_fetch_add(&ops[C_RPM], 1);
}

static void alpha_iter(long *lbuf)
{
	static const char *const names[] = { "alpha21064:::LOAD_INSNS:width=12" };
	int set = make_set(C_ALPHA, names, 1);
	long long v = -1;
	if (set == PAPI_NULL || PAPI_OR_FAIL(PAPI_start(set)) != PAPI_OK) {
		drop(&set);
		return;
	}
	alpha_load_loop(lbuf, ALPHA_LOADS / 2);
	foreign_check(set, 0);
	alpha_load_loop(lbuf, ALPHA_LOADS / 2);
	if (PAPI_OR_FAIL(PAPI_stop(set, &v)) == PAPI_OK) {
		CHECK(v % 4096 == 0 && v >= ALPHA_LOADS && v <= ALPHA_LOADS + ALPHA_SLACK,
		      "alpha21064 LOAD_INSNS:width=12 = %lld over %d known loads: want a multiple of 4096 in %d..%d", v,
		      ALPHA_LOADS, ALPHA_LOADS, ALPHA_LOADS + ALPHA_SLACK);
		atomic_fetch_add(&wraps_live, v / 4096);
	}
	drop(&set);
	atomic_fetch_add(&ops[C_ALPHA], 1);
}

static double user_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
}

static void spin_cpu(double seconds)
{
	double t0 = now_s(CLOCK_THREAD_CPUTIME_ID);
	volatile long x = 0;
	while (now_s(CLOCK_THREAD_CPUTIME_ID) - t0 < seconds)
		for (int k = 0; k < 10000; k++)
			x += k;
}

static void imc_iter(void)
{
	static const char *const names[] = { "imc:::thread_imc::CPM_CS_32MHZ_CYC_USER" };
	int set = make_set(C_IMC, names, 1);
	long long v;
	if (set == PAPI_NULL)
		return;
	double u0 = user_s();
	if (PAPI_OR_FAIL(PAPI_start(set)) != PAPI_OK) {
		drop(&set);
		return;
	}
	spin_cpu(0.02);
	if (PAPI_OR_FAIL(PAPI_stop(set, &v)) == PAPI_OK) {
		double u = user_s() - u0, got = (double)v * 512 / 32e6;
		/* imc_accum: within a collection period (1 ms at the default speed)
		 * plus the user/system split's tick granularity (20 ms). */
		CHECK(got >= u - 0.025 && got <= u + 0.025, "imc thread user cycles = %.6f s, getrusage user time %.6f s",
		      got, u);
	}
	drop(&set);
	atomic_fetch_add(&ops[C_IMC], 1);
}

static void pm_iter(void)
{
	static const char *const names[] = { "profileme:::any", "profileme:::notrap", "profileme:::trap" };
	int set = make_set(C_PM, names, 3);
	long long v[3];
	struct papi_heritage_profileme_sampling s;
	if (set == PAPI_NULL || PAPI_OR_FAIL(papi_heritage_profileme_sampling(set, &s)) != PAPI_OK) {
		drop(&set);
		return;
	}
	double c0 = now_s(CLOCK_THREAD_CPUTIME_ID);
	if (PAPI_OR_FAIL(PAPI_start(set)) != PAPI_OK) {
		drop(&set);
		return;
	}
	spin_cpu(0.02);
	if (PAPI_OR_FAIL(PAPI_stop(set, v)) == PAPI_OK) {
		double cpu_ns = (now_s(CLOCK_THREAD_CPUTIME_ID) - c0) * 1e9;
		long long p = s.period;
		CHECK(p > 0 && v[0] % p == 0 && v[1] % p == 0 && v[2] % p == 0, "profileme %lld %lld %lld: not multiples of %lld",
		      v[0], v[1], v[2], p);
		CHECK(v[0] == v[1] + v[2], "profileme any %lld != notrap %lld + trap %lld", v[0], v[1], v[2]);
		/* The soft backend draws each interval uniformly from [p/2, 3p/2)
		 * of the thread's CPU time (profileme(3)): at most cpu / (p/2) + 1
		 * samples in a set (7 of 4 ms in 20 ms of CPU came once in 1200
		 * sets here, no double count); the mean is checked over the run. */
		if (strcmp(s.unit, "ns") == 0) {
			CHECK((double)v[0] <= 2 * cpu_ns + (double)p,
			      "profileme any = %lld ns over %.0f ns of the thread's CPU time (period %lld ns)", v[0], cpu_ns, p);
			atomic_fetch_add(&pm_any_ns, v[0]);
			atomic_fetch_add(&pm_cpu_ns, (long)cpu_ns);
		}
	}
	drop(&set);
	atomic_fetch_add(&ops[C_PM], 1);
}

static void *worker_main(void *arg)
{
	int t = (int)(intptr_t)arg;
	int *buf = worker_buf[t];
	long lbuf[8] = { 0 };
	static const char *const roles[NWORKERS] = { "worker 0", "worker 1", "worker 2", "worker 3", "worker 4", "worker 5", "worker 6", "worker 7" };
	role = roles[t];
	PAPI_register_thread();
	for (long i = 0; running(); i++) {
		enum comp c = (enum comp)((t + i) % NCOMP);
		if (!usable[c] || worker_only_skip[c])
			continue;
		switch (c) {
		case C_IT2: it2_iter(buf, i); break;
		case C_RPM: rpm_iter(i); break;
		case C_ALPHA: alpha_iter(lbuf); break;
		case C_IMC: imc_iter(); break;
		case C_PM: pm_iter(); break;
		default: break;
		}
	}
	PAPI_unregister_thread();
	return NULL;
}

/* ---- fork and exec ----------------------------------------------------------------- */

/* /proc/self/status field (hex mask) without stdio or malloc: after fork. */
static unsigned long long status_mask(const char *field)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ~0ULL;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return ~0ULL;
	buf[n] = 0;
	size_t len = strlen(field);
	for (char *p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, field, len) == 0 && p[len] == ':')
			return strtoull(p + len + 1, NULL, field[0] == 'T' ? 10 : 16);
	return ~0ULL;
}

#define SIGBIT(s) (1ULL << ((s) - 1))
static const unsigned long long trap_signals = SIGBIT(SIGSEGV) | SIGBIT(SIGTRAP) | SIGBIT(SIGFPE) | SIGBIT(SIGBUS) |
                                               SIGBIT(SIGILL) | SIGBIT(SIGPROF) | SIGBIT(SIGALRM) | SIGBIT(SIGVTALRM);

/* The exec'd child: what it inherited.  Exit status 0, or a line on stderr. */
static int exec_child(const char *allowed)
{
	int bad = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int dfd = d ? dirfd(d) : -1;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == dfd)
			continue;
		char want[300];
		snprintf(want, sizeof want, ",%.280s,", e->d_name);
		char list[520];
		snprintf(list, sizeof list, ",%s", allowed);
		if (!strstr(list, want)) {
			char target[256] = "";
			char path[300];
			snprintf(path, sizeof path, "/proc/self/fd/%.280s", e->d_name);
			ssize_t n = readlink(path, target, sizeof target - 1);
			target[n > 0 ? n : 0] = 0;
			fprintf(stderr, "exec'd child: descriptor %s (%s) leaked across exec (the parent had %s before PAPI)\n",
			        e->d_name, target, allowed);
			bad = 1;
		}
	}
	if (d)
		closedir(d);
	struct itimerval it;
	int which[] = { ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF };
	for (int k = 0; k < 3; k++)
		if (getitimer(which[k], &it) == 0 && (it.it_value.tv_sec || it.it_value.tv_usec)) {
			fprintf(stderr, "exec'd child: interval timer %d armed\n", which[k]);
			bad = 1;
		}
	unsigned long long blk = status_mask("SigBlk"), ign = status_mask("SigIgn");
	if ((blk | ign) & trap_signals) {
		fprintf(stderr, "exec'd child: trap signals blocked %#llx ignored %#llx\n", blk & trap_signals,
		        ign & trap_signals);
		bad = 1;
	}
	if (status_mask("TracerPid") != 0) {
		fprintf(stderr, "exec'd child: traced (TracerPid %llu)\n", status_mask("TracerPid"));
		bad = 1;
	}
	return bad;
}

static void *fork_main(void *arg)
{
	int *buf = arg;
	static const char *const names[] = { "itanium2:::LOADS_RETIRED:exact=1", "itanium2:::STORES_RETIRED:exact=1" };
	role = "fork";
	PAPI_register_thread();
	while (running()) {
		int set = usable[C_IT2] ? make_set(C_IT2, names, 2) : PAPI_NULL;
		long long v[2];
		int counting = set != PAPI_NULL && it2_range(set, buf) == PAPI_OK && PAPI_OR_FAIL(PAPI_start(set)) == PAPI_OK;
		touch(buf, 64, 0);
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0) {
			/* Async-signal-safe only: the parent had threads. */
			for (int w = 0; w < NWORKERS + 2; w++)
				touch(worker_buf[w], BUF_INTS, w); /* a trap of ours here would kill or hang */
			if ((status_mask("SigBlk") | status_mask("SigIgn")) & trap_signals)
				_exit(3);
			execl(self_exe, self_exe, "--exec-child", fds_at_start, (char *)NULL);
			_exit(4);
		}
		int status = -1;
		if (pid < 0)
			FAIL("fork: %s", strerror(errno));
		else {
			atomic_fetch_add(&forks, 1);
			waitpid(pid, &status, 0);
			CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "child: status %#x (3: a trap signal blocked or ignored after fork, 4: exec failed, 1: the exec'd "
			      "child's checks)",
			      status);
			if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
				atomic_fetch_add(&execs, 1);
		}
		touch(buf, 64, 1);
		if (counting && PAPI_OR_FAIL(PAPI_stop(set, v)) == PAPI_OK)
			CHECK(v[0] == 128 && v[1] == 128, "the forking thread's own counts %lld/%lld, want 128 (the child's "
			      "accesses are not ours)", v[0], v[1]);
		drop(&set);
		atomic_fetch_add(&fork_rounds, 1);
		pause_ms(20);
	}
	PAPI_unregister_thread();
	return NULL;
}

/* ---- the application's own signal handlers ------------------------------------------- */

static char *own_page; /* PROT_NONE until the handler opens it */
static __thread volatile int expecting; /* the signal thread, inside its own fault */
static __thread sigjmp_buf fpe_jump;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)uc;
	if (!expecting || (char *)si->si_addr < own_page || (char *)si->si_addr >= own_page + PAGE) {
		static const char msg[] = "stress: a SIGSEGV that was not the application's reached its handler\n";
		write(2, msg, sizeof msg - 1);
		_exit(70);
	}
	atomic_fetch_add(&segv_served, 1);
	mprotect(own_page, PAGE, PROT_READ | PROT_WRITE);
}


static void on_trap(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	if (!expecting) {
		char msg[256];
		const ucontext_t *u = uc;
		int n = snprintf(msg, sizeof msg,
		                 "stress: a SIGTRAP that was not the application's reached its handler: thread %s, si_code %d, "
		                 "si_addr %p, pc %#llx, eflags %#llx\n",
		                 role, si->si_code, si->si_addr, (unsigned long long)u->uc_mcontext.gregs[REG_RIP],
		                 (unsigned long long)u->uc_mcontext.gregs[REG_EFL]);
		write(2, msg, (size_t)n);
		_exit(71);
	}
	atomic_fetch_add(&trap_served, 1); /* int3: the PC is past it already */
}

static __thread volatile int fpe_jump_set;
static void on_fpe(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)uc;
	if (!fpe_jump_set) {
		static const char msg[] = "stress: SIGFPE outside the division\n";
		write(2, msg, sizeof msg - 1);
	}
	if (!expecting || si->si_code != FPE_INTDIV) {
		static const char msg[] = "stress: a SIGFPE that was not the application's reached its handler\n";
		write(2, msg, sizeof msg - 1);
		_exit(72);
	}
	atomic_fetch_add(&fpe_served, 1);
	siglongjmp(fpe_jump, 1);
}

static void install_handlers(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_flags = SA_SIGINFO;
	sa.sa_sigaction = on_segv;
	sigaction(SIGSEGV, &sa, NULL);
	sa.sa_sigaction = on_trap;
	sigaction(SIGTRAP, &sa, NULL);
	sa.sa_sigaction = on_fpe;
	sigaction(SIGFPE, &sa, NULL);
}

static volatile int zero_divisor;

/* Its own frame: the handler jumps back here, past the division. */
__attribute__((noinline)) static void divide_by_zero(void)
{
	if (sigsetjmp(fpe_jump, 1) == 0) {
		fpe_jump_set = 1;
		/* idiv itself: gcc turns 1 / x into a compare and a cmov. */
		int q = 1, d = zero_divisor, r = 0;
		__asm__ volatile("cltd; idivl %2" : "+a"(q), "+d"(r) : "r"(d) : "cc");
		fpe_jump_set = 0;
		FAIL("an integer division by zero did not trap (%d)", q);
	}
	fpe_jump_set = 0;
}

static void *signal_main(void *arg)
{
	int *buf = arg;
	static const char *const names[] = { "itanium2:::LOADS_RETIRED:exact=1", "itanium2:::STORES_RETIRED:exact=1" };
	role = "signals";
	PAPI_register_thread();
	while (running()) {
		int set = usable[C_IT2] ? make_set(C_IT2, names, 2) : PAPI_NULL;
		long long v[2];
		int counting = set != PAPI_NULL && it2_range(set, buf) == PAPI_OK && PAPI_OR_FAIL(PAPI_start(set)) == PAPI_OK;
		long s0 = atomic_load(&segv_served), t0 = atomic_load(&trap_served), f0 = atomic_load(&fpe_served);
		for (int k = 0; k < 10; k++) {
			touch(buf, 16, k);
			expecting = 1;
			mprotect(own_page, PAGE, PROT_NONE);
			((volatile char *)own_page)[k] = (char)k; /* SIGSEGV: the handler opens the page */
			__asm__ volatile("int3");                  /* SIGTRAP */
			divide_by_zero();                          /* SIGFPE (FPE_INTDIV) */
			expecting = 0;
			touch(buf, 16, k + 1);
		}
		CHECK(atomic_load(&segv_served) - s0 == 10 && atomic_load(&trap_served) - t0 == 10 &&
		              atomic_load(&fpe_served) - f0 == 10,
		      "the application's handlers served %ld SIGSEGV, %ld SIGTRAP, %ld SIGFPE of 10 each",
		      atomic_load(&segv_served) - s0, atomic_load(&trap_served) - t0, atomic_load(&fpe_served) - f0);
		if (counting && PAPI_OR_FAIL(PAPI_stop(set, v)) == PAPI_OK)
			CHECK(v[0] == 320 && v[1] == 320, "the signal thread's watched counts %lld/%lld, want 320", v[0], v[1]);
		drop(&set);
		pause_ms(5);
	}
	PAPI_unregister_thread();
	return NULL;
}

/* ---- imcd killed and restarted while readers read ------------------------------------ */

static const char *imcd_path;
static char imcd_pidfile[512], imcd_object[512];
static pid_t imcd_pid;
/* The current imcd's life [born, died) in CLOCK_MONOTONIC seconds; died 0
 * while it lives.  gen changes at every start and kill. */
static pthread_mutex_t imcd_lock = PTHREAD_MUTEX_INITIALIZER;
static double imcd_born, imcd_died;
static int imcd_gen;

/* Starts a daemon (argv[0] its path) and waits until it has put a new
 * object at object (a new inode: a restarted one replaces its
 * predecessor's).  Its pid, or -1 having said why. */
static pid_t start_daemon(const char *name, const char *object, char *const argv[])
{
	struct stat st0;
	ino_t old = stat(object, &st0) == 0 ? st0.st_ino : 0;
	pid_t pid = fork();
	if (pid == 0) {
		/* Never outlives the stress (a killed run's imcd would hold its
		 * output pipe open and keep serving stale pages); it dies with
		 * the thread that forked it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	for (int k = 0; k < 5000; k++) {
		struct stat st;
		if (stat(object, &st) == 0 && st.st_ino != old)
			return pid;
		int status;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			FAIL("%s exited with status %#x before publishing %s", name, status, object);
			return -1;
		}
		pause_ms(1);
	}
	FAIL("%s did not publish %s within 5 s", name, object);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

static pid_t start_imcd(void)
{
	char opt[600];
	snprintf(opt, sizeof opt, "--pidfile=%s", imcd_pidfile);
	char *const argv[] = { (char *)imcd_path, "-f", "--speed=0", opt, NULL };
	return start_daemon("imcd", imcd_object, argv);
}

static void *imcd_main(void *unused)
{
	(void)unused;
	role = "imcd supervisor";
	while (running()) {
		pause_ms(1500);
		pthread_mutex_lock(&imcd_lock);
		kill(imcd_pid, SIGKILL);
		waitpid(imcd_pid, NULL, 0);
		imcd_died = now_s(CLOCK_MONOTONIC);
		imcd_gen++;
		pthread_mutex_unlock(&imcd_lock);
		atomic_fetch_add(&imcd_kills, 1);
		pause_ms(300);
		pid_t pid = start_imcd();
		pthread_mutex_lock(&imcd_lock);
		imcd_pid = pid > 0 ? pid : 0;
		imcd_born = now_s(CLOCK_MONOTONIC);
		imcd_died = 0;
		imcd_gen++;
		pthread_mutex_unlock(&imcd_lock);
		if (pid <= 0)
			break;
	}
	return NULL;
}

static void imcd_epoch(int *gen, double *born, int *alive)
{
	pthread_mutex_lock(&imcd_lock);
	*gen = imcd_gen;
	*born = imcd_born;
	*alive = imcd_pid > 0 && imcd_died == 0;
	pthread_mutex_unlock(&imcd_lock);
}

/* The byte offset of an event in its page: "event=0x.." in its description
 * (imc_accum: PM_PB_CYC at 0x80). */
static unsigned long nest_offset;

static uint64_t be_load(const volatile uint8_t *page, unsigned long off)
{
	uint64_t raw = *(const volatile uint64_t *)(page + off), v = 0;
	const uint8_t *b = (const uint8_t *)&raw;
	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

/* A nest read that failed: loudly, because imcd, whose page the set read,
 * was killed since the set started (the counts froze; they read the same
 * for good before); PAPI_reset must move the set on.  1 if both held. */
static int nest_frozen_and_rebased(int set, int gen_at_start, int rc)
{
	int gen, alive;
	double born;
	imcd_epoch(&gen, &born, &alive);
	const char *why = papi_heritage_last_error();
	if (!(rc == PAPI_ESYS && strstr(why, "frozen") && (gen != gen_at_start || !alive))) {
		FAIL("nest reader: a read failed with imcd %s since the start: %s, %s",
		     gen != gen_at_start || !alive ? "killed" : "alive", PAPI_strerror(rc), why);
		return 0;
	}
	atomic_fetch_add(&nest_frozen, 1);
	return PAPI_OR_FAIL(PAPI_reset(set)) == PAPI_OK;
}

/* Reads PM_PB_CYC for up to 300 ms.  Always: monotone, and never more than
 * the nest clock allows (nothing doubled).  Inside one imcd's life that began
 * before PAPI_start: PAPI_read equals the delta of imcd's own big-endian
 * counter, loaded here from the object just before and after PAPI's loads,
 * exactly (nothing lost, nothing doubled), whenever imcd did not write
 * between the two loads. */
static void *nest_main(void *unused)
{
	(void)unused;
	static const char *const names[] = { PB_CYC };
	role = "nest reader";
	PAPI_register_thread();
	while (running()) {
		int g0, g1, alive0, alive1;
		double born, b1;
		imcd_epoch(&g0, &born, &alive0);
		const uint8_t *page = NULL;
		size_t page_len = 0;
		if (alive0 && nest_offset) {
			int fd = open(imcd_object, O_RDONLY | O_CLOEXEC);
			struct stat st;
			if (fd >= 0 && fstat(fd, &st) == 0 && (size_t)st.st_size > nest_offset + 8) {
				page_len = (size_t)st.st_size;
				page = mmap(NULL, page_len, PROT_READ, MAP_SHARED, fd, 0);
				if (page == MAP_FAILED)
					page = NULL;
			}
			if (fd >= 0)
				close(fd);
		}
		int set = make_set(C_IMC, names, 1);
		if (set == PAPI_NULL)
			break;
		double w0 = now_s(CLOCK_MONOTONIC);
		uint64_t r0 = page ? be_load(page, nest_offset) : 0;
		if (PAPI_OR_FAIL(PAPI_start(set)) != PAPI_OK) {
			drop(&set);
			break;
		}
		uint64_t r0b = page ? be_load(page, nest_offset) : 1;
		long long v = 0, prev = 0;
		for (int r = 0; r < 30; r++) {
			pause_ms(10);
			uint64_t r1 = page ? be_load(page, nest_offset) : 0;
			int rc = PAPI_read(set, &v);
			if (rc != PAPI_OK) {
				if (!nest_frozen_and_rebased(set, g0, rc))
					break;
				/* From 0 again, on another page than the one mapped here. */
				if (page)
					munmap((void *)page, page_len);
				page = NULL;
				prev = 0;
				w0 = now_s(CLOCK_MONOTONIC);
				continue;
			}
			uint64_t r1b = page ? be_load(page, nest_offset) : 1;
			double w = now_s(CLOCK_MONOTONIC) - w0;
			imcd_epoch(&g1, &b1, &alive1);
			CHECK(v >= prev, "nest PM_PB_CYC went back: %lld after %lld", v, prev);
			/* Never more than the nest clock could count since start,
			 * plus how stale the page was when PAPI_start loaded it: a
			 * period (1 ms own engine, 128 us imcd) when its writer runs
			 * on time, but imcd is a process of its own and was starved
			 * here: 6 to 8 ms, and 55 to 170 ms at a load average of 10
			 * on 2 CPUs (the first 10-minute run).  So a coarse bound;
			 * the exact one is the equality with imcd's counter below. */
			CHECK((double)v * NEST_SCALE / NEST_HZ <= w + 0.5,
			      "nest PM_PB_CYC = %.6f s of cycles in %.6f s of wall time (counted twice?)",
			      (double)v * NEST_SCALE / NEST_HZ, w);
			if (page && g0 == g1 && alive1 && born < w0 - 0.05 && r0 == r0b && r1 == r1b) {
				CHECK((uint64_t)v == r1 - r0, "nest PM_PB_CYC read %lld, imcd's own counter moved %llu",
				      v, (unsigned long long)(r1 - r0));
				atomic_fetch_add(&nest_strict, 1);
			}
			prev = v;
			atomic_fetch_add(&nest_reads, 1);
		}
		int rc = PAPI_stop(set, &v);
		/* imcd killed since the last read: its reads (PAPI_stop's too)
		 * fail until PAPI_reset moves the set on; killed again in
		 * between (1.5 s apart): again. */
		for (int round = 0; rc != PAPI_OK && round < 5 && nest_frozen_and_rebased(set, g0, rc); round++)
			rc = PAPI_stop(set, &v);
		CHECK(rc == PAPI_OK, "nest reader: PAPI_stop: %s, %s", PAPI_strerror(rc), papi_heritage_last_error());
		drop(&set);
		if (page)
			munmap((void *)page, page_len);
		atomic_fetch_add(&nest_sets, 1);
	}
	PAPI_unregister_thread();
	return NULL;
}

/* ---- rpmd killed and restarted while an unprivileged reader reads ---------------------
 * The rpmd service serves accounts that may not count page faults
 * system-wide themselves (rpmd(8)), so its reader is another process: this
 * program exec'd as uid 65534 (--rpmd-reader), two threads each in a loop
 * of create, start, fresh pages, reads, stop.  Against the page itself,
 * read here as any account may (rpm_service_page.h):
 *   - every value monotone within a set, and never more than the page's
 *     own total moved from before PAPI_start to after PAPI_read (nothing
 *     doubled), while the daemon that was publishing before the start
 *     still publishes after the read (so the set counts from its page);
 *   - at least the fresh pages touched once that daemon published after
 *     the touches, before PAPI_read (nothing lost);
 *   - a set that outlives its daemon fails loudly (PAPI_read or PAPI_stop
 *     says the service stopped publishing or was restarted), never
 *     quietly: the reader then starts a new set.
 * The supervisor (root, in this process) kills rpmd with SIGKILL every
 * ~1.5 s and restarts it 300 ms later, as imcd's. */
#define RPMD_READER_UID 65534
#define RPMD_PAGES 16
static const char *rpmd_path;
static char rpmd_pidfile[512], rpmd_page_path[512];
static pid_t rpmd_pid;
static atomic_long rpmd_kills;

static pid_t start_rpmd(void)
{
	char opt[600];
	snprintf(opt, sizeof opt, "--pidfile=%s", rpmd_pidfile);
	char *const argv[] = { (char *)rpmd_path, "-f", "--no-log", "--no-reset", "--publish-interval=0.01", opt, NULL };
	return start_daemon("rpmd", rpmd_page_path, argv);
}

static pid_t rpmd_reader_start(double seconds);
static double rpmd_seconds;

/* Every rpmd is this thread's child, and dies with it (PR_SET_PDEATHSIG
 * follows the forking thread): so it waits for the reader, whose run ends
 * after this one's deadline, with a daemon alive, then stops that one. */
static void *rpmd_main(void *unused)
{
	(void)unused;
	role = "rpmd supervisor";
	if ((rpmd_pid = start_rpmd()) <= 0)
		return NULL;
	pid_t reader = rpmd_reader_start(rpmd_seconds);
	while (running()) {
		pause_ms(1500);
		kill(rpmd_pid, SIGKILL);
		waitpid(rpmd_pid, NULL, 0);
		atomic_fetch_add(&rpmd_kills, 1);
		pause_ms(300);
		if ((rpmd_pid = start_rpmd()) <= 0)
			break;
	}
	if (reader > 0) {
		int status = 0;
		waitpid(reader, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the rpmd reader (uid %d) failed: status %#x",
		      RPMD_READER_UID, status);
	}
	if (rpmd_pid > 0) {
		kill(rpmd_pid, SIGTERM); /* it removes its page */
		waitpid(rpmd_pid, NULL, 0);
	}
	return NULL;
}

/* The reader, as uid 65534: its figures, and its failures in its status. */
static pid_t rpmd_reader_start(double seconds)
{
	pid_t pid = fork();
	if (pid == 0) {
		char arg[64];
		snprintf(arg, sizeof arg, "--rpmd-reader=%.3f", seconds);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (setgroups(0, NULL) != 0 || setresgid(RPMD_READER_UID, RPMD_READER_UID, RPMD_READER_UID) != 0 ||
		    setresuid(RPMD_READER_UID, RPMD_READER_UID, RPMD_READER_UID) != 0)
			_exit(126);
		execl(self_exe, self_exe, arg, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static atomic_long rr_sets, rr_reads, rr_upper, rr_lower, rr_loud, rr_start_refused;

/* PAPI's refusal of a set whose daemon died or was replaced: loud, and
 * about the service. */
static void expect_loud(const char *call, int rc)
{
	const char *why = papi_heritage_last_error();
	CHECK(rc == PAPI_ESYS && (strstr(why, "stopped publishing") || strstr(why, "restarted")),
	      "rpmd reader: %s across a daemon's death: %s, %s", call, PAPI_strerror(rc), why);
	atomic_fetch_add(&rr_loud, 1);
}

static void *rpmd_reader_main(void *unused)
{
	(void)unused;
	role = "rpmd reader";
	PAPI_register_thread();
	while (running()) {
		ino_t ino;
		const struct rpm_service_page *page = rpm_page_map(rpmd_page_path, &ino);
		uint64_t hb_b, before;
		int32_t pid0;
		if (!page || rpm_page_read(page, &hb_b, &before, &pid0) != 0) {
			if (page)
				rpm_page_unmap(page);
			pause_ms(20); /* between a kill and a restart */
			continue;
		}
		int set = PAPI_NULL;
		if (PAPI_OR_FAIL(PAPI_create_eventset(&set)) != PAPI_OK) {
			rpm_page_unmap(page);
			break;
		}
		int rc = PAPI_add_named_event(set, "paragon_rpm:::rpms_dat");
		if (rc != PAPI_OK) {
			/* The daemon died since the page was read: its page is
			 * refused (2 intervals late, in our pid namespace) until
			 * the supervisor restarts it.  Nothing else may refuse. */
			CHECK(rc == PAPI_ENOSUPP && strstr(papi_heritage_last_error(), "rpmd"),
			      "rpmd reader: rpms_dat not added: %s, %s", PAPI_strerror(rc), papi_heritage_last_error());
			atomic_fetch_add(&rr_start_refused, 1);
			drop(&set);
			rpm_page_unmap(page);
			pause_ms(20);
			continue;
		}
		/* A start or a read takes a sample of this process's no older
		 * than 1 ms, another thread's maybe (rpm_page.c): 2 ms after
		 * the page's total it is newer than that. */
		pause_ms(2);
		rc = PAPI_start(set);
		uint64_t started = rpm_page_boot_ns();
		if (rc != PAPI_OK) {
			/* Only a dead daemon's page, not yet replaced, is refused. */
			CHECK(rc == PAPI_ESYS && strstr(papi_heritage_last_error(), "rpmd"), "rpmd reader: PAPI_start: %s, %s",
			      PAPI_strerror(rc), papi_heritage_last_error());
			atomic_fetch_add(&rr_start_refused, 1);
			drop(&set);
			rpm_page_unmap(page);
			pause_ms(20);
			continue;
		}
		atomic_fetch_add(&rr_sets, 1);
		rpm_page_touch_fresh(RPMD_PAGES);
		uint64_t touched = rpm_page_boot_ns();
		long long v = 0, prev = 0;
		int loud = 0;
		for (int r = 0; r < 10 && running(); r++) {
			pause_ms(15);
			uint64_t hb0 = 0, hb1 = 0, after = 0;
			int32_t p1 = 0;
			int ok0 = rpm_page_read(page, &hb0, NULL, NULL) == 0;
			pause_ms(2);
			rc = PAPI_read(set, &v);
			int ok1 = rpm_page_read(page, &hb1, &after, &p1) == 0;
			if (rc != PAPI_OK) {
				expect_loud("PAPI_read", rc);
				loud = 1;
				break;
			}
			atomic_fetch_add(&rr_reads, 1);
			CHECK(v >= prev, "rpmd reader: rpms_dat went back: %lld after %lld", v, prev);
			prev = v;
			/* The daemon of before the start published after the read:
			 * alive all along, so the set's page is this one. */
			if (!ok0 || !ok1 || p1 != pid0 || hb1 <= started)
				continue;
			CHECK(v >= 0 && (uint64_t)v <= after - before,
			      "rpmd reader: rpms_dat %lld, but rpmd's own total moved %llu (counted twice?)", v,
			      (unsigned long long)(after - before));
			atomic_fetch_add(&rr_upper, 1);
			if (hb0 > touched) {
				CHECK(v >= RPMD_PAGES, "rpmd reader: rpms_dat %lld after %d fresh pages that rpmd published", v,
				      RPMD_PAGES);
				atomic_fetch_add(&rr_lower, 1);
			}
		}
		rc = PAPI_stop(set, &v);
		/* The documented way on (paragon_rpm(3)): PAPI_reset takes the
		 * restarted daemon's page; then the set stops -- unless that
		 * daemon was killed too in between (1.2 s apart): again. */
		for (int round = 0; rc != PAPI_OK && round < 5; round++) {
			if (!loud || round)
				expect_loud("PAPI_stop", rc);
			for (int k = 0; k < 500 && (rc = PAPI_reset(set)) != PAPI_OK; k++)
				pause_ms(20);
			CHECK(rc == PAPI_OK, "rpmd reader: PAPI_reset for 10 s after a daemon's death: %s, %s",
			      PAPI_strerror(rc), papi_heritage_last_error());
			rc = PAPI_stop(set, &v);
		}
		CHECK(rc == PAPI_OK, "rpmd reader: PAPI_stop after 5 daemons' deaths: %s, %s", PAPI_strerror(rc),
		      papi_heritage_last_error());
		drop(&set);
		rpm_page_unmap(page);
	}
	PAPI_unregister_thread();
	return NULL;
}

static int rpmd_reader(double seconds)
{
	heritage_test_init();
	CHECK_PAPI(PAPI_thread_init(pthread_self));
	PAPI_event_info_t info;
	int code;
	int known = PAPI_event_name_to_code("paragon_rpm:::rpms_dat", &code) == PAPI_OK &&
	            PAPI_get_event_info(code, &info) == PAPI_OK;
	if (!known || !strstr(info.long_descr, "by the rpmd service")) {
		printf("rpmd reader: SKIPPED: uid %d does not count rpms_dat through the service here: %s\n",
		       RPMD_READER_UID, known ? info.long_descr : papi_heritage_last_error());
		return 0;
	}
	deadline = now_s(CLOCK_MONOTONIC) + seconds;
	pthread_t t[2];
	for (int k = 0; k < 2; k++)
		pthread_create(&t[k], NULL, rpmd_reader_main, NULL);
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	printf("rpmd reader: uid %d, 2 threads: %ld sets, %ld reads (%ld within rpmd's own total, %ld at least the "
	       "fresh pages), %ld refused loudly across a daemon's death, %ld starts refused on a dead daemon's page\n",
	       RPMD_READER_UID, atomic_load(&rr_sets), atomic_load(&rr_reads), atomic_load(&rr_upper),
	       atomic_load(&rr_lower), atomic_load(&rr_loud), atomic_load(&rr_start_refused));
	CHECK(atomic_load(&rr_lower) > 0, "rpmd reader: no read was checked against the fresh pages");
	PAPI_shutdown();
	return atomic_load(&failures) ? 1 : 0;
}

/* ---- descriptors and mappings --------------------------------------------------------- */

static int count_fds(char *list, size_t len)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0, dfd = d ? dirfd(d) : -1;
	if (list)
		list[0] = 0;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == dfd)
			continue;
		n++;
		if (list && strlen(list) + strlen(e->d_name) + 2 < len) {
			strcat(list, e->d_name);
			strcat(list, ",");
		}
	}
	if (d)
		closedir(d);
	return n;
}

/* Lines of /proc/self/maps: all, and those backed by a file (named with '/'). */
/* Mappings, those of files, and those of imcd's object, which count in
 * neither of the others: the imc engine holds one page of it for the sets
 * to come -- the live imcd's, or a dead one's ("(deleted)") until its next
 * start takes the restarted one's -- or its own anonymous pages if its last
 * start found imcd dead, so either may be there at either end.  With no
 * set running, more than one is a page kept per restart, the leak this
 * check once found. */
static void count_maps(int *all, int *files, int *imcd)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[1024];
	size_t olen = strlen(imcd_object);
	*all = *files = *imcd = 0;
	while (f && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		const char *path = strchr(line, '/');
		if (path && olen && strncmp(path, imcd_object, olen) == 0 &&
		    (path[olen] == '\0' || strcmp(path + olen, " (deleted)") == 0)) {
			(*imcd)++;
			continue;
		}
		(*all)++;
		*files += path != NULL;
	}
	if (f)
		fclose(f);
}

static void dump_maps(const char *path)
{
	FILE *in = fopen("/proc/self/maps", "re"), *out = fopen(path, "we");
	char line[1024];
	while (in && out && fgets(line, sizeof line, in))
		fputs(line, out);
	if (in)
		fclose(in);
	if (out)
		fclose(out);
}

/* ---- availability ------------------------------------------------------------------ */

/* A component counts here if a set of the event this stress uses starts;
 * else the part is skipped with the component's own reason and, for the
 * backends that need a mechanism, the probe's. */
static void probe_component(enum comp c, const char *event, const char *backend)
{
	char why[512] = "";
	if (backend && papi_heritage_backend_usable(comp_name[c], backend, why, sizeof why) != PAPI_OK) {
		snprintf(skip_why[c], sizeof skip_why[c], "the %s backend cannot count here: %s", backend, why);
		return;
	}
	int set = PAPI_NULL;
	int rc = PAPI_create_eventset(&set);
	if (rc == PAPI_OK)
		rc = PAPI_add_named_event(set, event);
	if (rc == PAPI_OK && c == C_IT2) {
		PAPI_option_t opt;
		rc = heritage_test_range(set, PAPI_DATA_ADDRESS, worker_buf[0], worker_buf[0] + BUF_INTS, &opt);
	}
	if (rc == PAPI_OK && (rc = PAPI_start(set)) == PAPI_OK) {
		long long v[4];
		rc = PAPI_stop(set, v);
	}
	if (rc != PAPI_OK)
		snprintf(skip_why[c], sizeof skip_why[c], "%s: %s: %s", event, PAPI_strerror(rc), papi_heritage_last_error());
	else
		usable[c] = 1;
	if (set != PAPI_NULL) {
		PAPI_cleanup_eventset(set);
		PAPI_destroy_eventset(&set);
	}
}

/* ---- one round of every thread -------------------------------------------------------- */

static int run_round(double seconds, int with_imcd, int with_rpmd)
{
	pthread_t w[NWORKERS], f, s, d, n[2], r;
	deadline = now_s(CLOCK_MONOTONIC) + seconds;
	if (with_rpmd) {
		rpmd_seconds = seconds;
		pthread_create(&r, NULL, rpmd_main, NULL);
	}
	for (int t = 0; t < NWORKERS; t++)
		pthread_create(&w[t], NULL, worker_main, (void *)(intptr_t)t);
	/* STRESS_NO_FORK=1, STRESS_NO_SIGNALS=1: without those threads (to
	 * chase a failure; the figures say so). */
	int with_fork = !getenv("STRESS_NO_FORK"), with_signals = !getenv("STRESS_NO_SIGNALS");
	if (with_fork)
		pthread_create(&f, NULL, fork_main, worker_buf[NWORKERS]);
	if (with_signals)
		pthread_create(&s, NULL, signal_main, worker_buf[NWORKERS + 1]);
	int threads = NWORKERS + with_fork + with_signals;
	if (with_imcd) {
		pthread_create(&d, NULL, imcd_main, NULL);
		for (int k = 0; k < 2; k++)
			pthread_create(&n[k], NULL, nest_main, NULL);
		threads += 3;
	}
	for (int t = 0; t < NWORKERS; t++)
		pthread_join(w[t], NULL);
	if (with_fork)
		pthread_join(f, NULL);
	if (with_signals)
		pthread_join(s, NULL);
	if (with_imcd) {
		pthread_join(d, NULL);
		for (int k = 0; k < 2; k++)
			pthread_join(n[k], NULL);
	}
	if (with_rpmd) {
		pthread_join(r, NULL);
		threads += 1;
	}
	return threads;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--exec-child") == 0)
		return exec_child(argc > 2 ? argv[2] : "0,1,2,");
	rpm_page_path(rpmd_page_path, sizeof rpmd_page_path, getenv("PAPI_HERITAGE_PARAGON_RPM_SHM"));
	if (argc > 1 && strncmp(argv[1], "--rpmd-reader=", 14) == 0)
		return rpmd_reader(atof(argv[1] + 14));
	double seconds = 600;
	const char *env = getenv("STRESS_SECONDS");
	if (env && *env)
		seconds = atof(env);
	for (int a = 1; a < argc; a++) {
		if (strncmp(argv[a], "--seconds=", 10) == 0)
			seconds = atof(argv[a] + 10);
		else if (strncmp(argv[a], "--imcd=", 7) == 0)
			imcd_path = argv[a] + 7;
		else if (strncmp(argv[a], "--rpmd=", 7) == 0)
			rpmd_path = argv[a] + 7;
		else {
			fprintf(stderr, "usage: stress [--seconds=N] [--imcd=PATH] [--rpmd=PATH]   (STRESS_SECONDS=N)\n");
			return 2;
		}
	}
	if (!(seconds >= 5 && seconds <= 86400)) {
		fprintf(stderr, "stress: --seconds / STRESS_SECONDS must be 5..86400, not %g\n", seconds);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	count_fds(fds_at_start, sizeof fds_at_start);
	static char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (len > 0) {
		exe[len] = 0;
		self_exe = exe;
	}
	/* imcd runs as this account: its objects are trusted (imcd(8), TRUST). */
	char uid[32];
	snprintf(uid, sizeof uid, "%d", (int)getuid());
	knob_set("PAPI_HERITAGE_IMC_SERVICE_USER", uid);
	knob_set("PAPI_HERITAGE_ALPHA21064_BACKEND", getenv("PAPI_HERITAGE_ALPHA21064_BACKEND") ?: "auto");
	/* imc's own pages brought up to date at PAPI_start and PAPI_read
	 * (imc(3)): otherwise a start value is as old as the engine thread's
	 * last pass, and with eight threads' page-trap windows parking it one
	 * after another that reached 0.8 s here (a set then counts time from
	 * before its start: the nest check's 0.5 s bound failed 60 times in
	 * the second 10-minute run).  imcd's pages cannot be forced. */
	knob_set("PAPI_HERITAGE_IMC_EXACT", "1");

	/* imcd first: a process's imc engine takes imcd's pages if they are
	 * there when it starts, and counts in its own pages for good otherwise
	 * (imc(3), NEST PAGES). */
	int with_imcd = 0;
	if (imcd_path) {
		const char *tmp = getenv("TMPDIR");
		const char *shm = getenv("PAPI_HERITAGE_IMC_SHM");
		snprintf(imcd_pidfile, sizeof imcd_pidfile, "%s/stress-imcd-%d.pid", tmp && *tmp ? tmp : P_tmpdir,
		         (int)getpid());
		snprintf(imcd_object, sizeof imcd_object, "/dev/shm/%s-chip0-180000", shm && *shm ? shm : "papi-heritage-imc");
		imcd_pid = start_imcd();
		imcd_born = now_s(CLOCK_MONOTONIC);
		with_imcd = imcd_pid > 0;
		atomic_store(&failures, 0); /* start_imcd's complaint becomes the skip's reason */
	}
	heritage_test_init();
	CHECK_PAPI(PAPI_thread_init(pthread_self));
	for (int t = 0; t < NWORKERS + 2; t++)
		worker_buf[t] = new_buffer();
	own_page = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (own_page == MAP_FAILED)
		return 1;

	/* STRESS_COMPONENTS=itanium2,imc,...: the workers' rotation only (to
	 * chase a failure); the fork and signal threads keep their itanium2. */
	const char *only = getenv("STRESS_COMPONENTS");
	probe_component(C_IT2, "itanium2:::LOADS_RETIRED:exact=1", HERITAGE_TEST_INSTRUMENTED ? NULL : "pagetrap");
	probe_component(C_RPM, "paragon_rpm:::rpm_time", NULL);
	probe_component(C_ALPHA, "alpha21064:::LOAD_INSNS:width=12", NULL);
	probe_component(C_IMC, "imc:::thread_imc::CPM_CS_32MHZ_CYC_USER", NULL);
	probe_component(C_PM, "profileme:::any", NULL);
	{
		int set = PAPI_NULL, rc = PAPI_create_eventset(&set);
		if (rc == PAPI_OK && (rc = PAPI_add_named_event(set, "paragon_rpm:::rpms_dat")) == PAPI_OK &&
		    (rc = PAPI_start(set)) == PAPI_OK) {
			long long v;
			rc = PAPI_stop(set, &v);
		}
		rpms_dat_ok = rc == PAPI_OK;
		if (!rpms_dat_ok)
			snprintf(rpms_dat_why, sizeof rpms_dat_why, "%s: %s", PAPI_strerror(rc), papi_heritage_last_error());
		PAPI_cleanup_eventset(set);
		PAPI_destroy_eventset(&set);
	}
	for (int c = 0; only && *only && c < NCOMP; c++)
		if (usable[c] && !strstr(only, comp_name[c])) {
			worker_only_skip[c] = 1;
			snprintf(skip_why[c], sizeof skip_why[c], "not in STRESS_COMPONENTS=%s", only);
		}
	install_handlers(); /* the application's, after PAPI's */

	if (usable[C_IMC]) {
		int code;
		PAPI_event_info_t info;
		if (PAPI_event_name_to_code(PB_CYC, &code) == PAPI_OK && PAPI_get_event_info(code, &info) == PAPI_OK &&
		    strstr(info.long_descr, "event=0x"))
			nest_offset = strtoul(strstr(info.long_descr, "event=0x") + 8, NULL, 16);
		CHECK(nest_offset == 0x80, "PM_PB_CYC at offset %#lx, the catalog says 0x8 + 0x78", nest_offset);
	}
	char imcd_why[700] = "no --imcd=PATH given";
	if (with_imcd && !usable[C_IMC]) {
		with_imcd = 0;
		snprintf(imcd_why, sizeof imcd_why, "imc cannot count here: %s", skip_why[C_IMC]);
	} else if (imcd_path && !with_imcd)
		snprintf(imcd_why, sizeof imcd_why, "imcd (%s) did not publish %s", imcd_path, imcd_object);

	printf("stress: %d workers%s%s%s threads, %.0f s; components:", NWORKERS, getenv("STRESS_NO_FORK") ? "" : " + fork",
	       getenv("STRESS_NO_SIGNALS") ? "" : " + signals", with_imcd ? " + imcd supervisor + 2 nest readers" : "",
	       seconds);
	for (int c = 0; c < NCOMP; c++)
		printf(" %s%s", comp_name[c], usable[c] && !worker_only_skip[c] ? "" : " (skipped)");
	printf("\n");
	for (int c = 0; c < NCOMP; c++)
		if (!usable[c] || worker_only_skip[c])
			printf("SKIPPED part: %s: %s\n", comp_name[c], skip_why[c]);
	if (usable[C_RPM] && !rpms_dat_ok)
		printf("SKIPPED part: paragon_rpm rpms_dat (page faults) not checked: %s\n", rpms_dat_why);
	if (!with_imcd)
		printf("SKIPPED part: imcd killed and restarted: %s\n", imcd_why);
	/* rpmd counts every CPU's page faults and publishes a root-owned page:
	 * root starts it (rpmd.service does, with CAP_PERFMON). */
	int with_rpmd = rpmd_path && geteuid() == 0 && usable[C_RPM];
	if (!with_rpmd)
		printf("SKIPPED part: rpmd killed and restarted under an unprivileged reader: %s\n",
		       !rpmd_path ? "no --rpmd=PATH given"
		       : geteuid() != 0 ? "rpmd publishes a root-owned page for every account: root starts it (make stress as root)"
		                        : "paragon_rpm cannot count here");

	/* A warm-up round of the same threads: one-time allocations (the
	 * engine thread, glibc's cached thread stacks and malloc arenas,
	 * PAPI's thread records) are made before the baseline. */
	run_round(2, with_imcd, 0);
	if (atomic_load(&failures)) {
		printf("stress: FAILED in the warm-up round (%d checks)\n", atomic_load(&failures));
		return 1;
	}
	for (int c = 0; c < NCOMP; c++)
		atomic_store(&ops[c], 0), atomic_store(&reads[c], 0);
	atomic_store(&wraps_live, 0), atomic_store(&foreign_refusals, 0), atomic_store(&forks, 0), atomic_store(&execs, 0);
	atomic_store(&segv_served, 0), atomic_store(&trap_served, 0), atomic_store(&fpe_served, 0);
	atomic_store(&imcd_kills, 0), atomic_store(&nest_reads, 0), atomic_store(&nest_sets, 0), atomic_store(&nest_strict, 0),
	    atomic_store(&nest_frozen, 0);
	atomic_store(&rpms_dat_checked, 0), atomic_store(&fork_rounds, 0);
	atomic_store(&pm_any_ns, 0), atomic_store(&pm_cpu_ns, 0);
	int fd0 = count_fds(NULL, 0), maps0, files0, imcd0;
	count_maps(&maps0, &files0, &imcd0);
	char maps_before[600];
	snprintf(maps_before, sizeof maps_before, "%s/stress-maps-before-%d", getenv("TMPDIR") ?: P_tmpdir, (int)getpid());
	dump_maps(maps_before);

	snprintf(rpmd_pidfile, sizeof rpmd_pidfile, "%s/stress-rpmd-%d.pid", getenv("TMPDIR") ?: P_tmpdir, (int)getpid());
	double t0 = now_s(CLOCK_MONOTONIC);
	int threads = run_round(seconds, with_imcd, with_rpmd);
	double took = now_s(CLOCK_MONOTONIC) - t0;

	/* The end state as the baseline's: a live imcd, whose pages the next
	 * nest set maps (a restarted one's replace the old ones). */
	if (with_imcd) {
		if (imcd_pid <= 0)
			imcd_pid = start_imcd();
		static const char *const names[] = { PB_CYC };
		int set = make_set(C_IMC, names, 1);
		long long v;
		if (set != PAPI_NULL && PAPI_OR_FAIL(PAPI_start(set)) == PAPI_OK)
			PAPI_OR_FAIL(PAPI_stop(set, &v));
		drop(&set);
	}
	/* profileme over the run: thousands of samples.  Short of the CPU
	 * time, as each 20 ms set loses its first interval's share and the
	 * CPU-time timer fires at the next tick (4 ms): 0.705 measured here
	 * over 1292 sets.  Above 1.3 (profileme_basic's bound) a double count. */
	if (atomic_load(&pm_cpu_ns) > 0) {
		double ratio = (double)atomic_load(&pm_any_ns) / (double)atomic_load(&pm_cpu_ns);
		CHECK(ratio > 0.5 && ratio < 1.3, "profileme: any %ld ns over %ld ns of the sampled threads' CPU time (%.3f)",
		      atomic_load(&pm_any_ns), atomic_load(&pm_cpu_ns), ratio);
	}
	int fd1 = count_fds(NULL, 0), maps1, files1, imcd1;
	count_maps(&maps1, &files1, &imcd1);
	CHECK(fd1 == fd0, "descriptors: %d before, %d after (/proc/self/fd)", fd0, fd1);
	/* Mappings of files (shared memory included) exactly; anonymous ones
	 * within ANON_SLACK: glibc's per-thread arenas and cached thread stacks
	 * split and merge as threads come and go (+1 on a 15 s run here, a
	 * 32 KiB one), where a leak per event set or per fork would be
	 * hundreds.  ThreadSanitizer's runtime maps as it goes (+57 in a 15 s
	 * run of 1929 set cycles, make check-tsan), still far below one per
	 * set or fork. */
#if defined(__SANITIZE_THREAD__)
	enum { ANON_SLACK = 256 };
#else
	enum { ANON_SLACK = 8 };
#endif
	int anon_grew = (maps1 - files1) - (maps0 - files0);
	CHECK(files1 == files0 && anon_grew <= ANON_SLACK && imcd1 <= 1,
	      "mappings: %d before (%d of files), %d after (%d of files), %d of imcd's object after "
	      "(/proc/self/maps; the baseline is in %s)",
	      maps0, files0, maps1, files1, imcd1, maps_before);
	if (maps1 != maps0 || files1 != files0 || imcd1 > 1) {
		char after[620];
		snprintf(after, sizeof after, "%s-after", maps_before);
		dump_maps(after);
		fprintf(stderr, "the mappings after the run: %s\n", after);
	} else
		unlink(maps_before);
	if (with_imcd && imcd_pid > 0) {
		kill(imcd_pid, SIGTERM);
		waitpid(imcd_pid, NULL, 0);
	}

	long total = 0;
	for (int c = 0; c < NCOMP; c++)
		total += atomic_load(&ops[c]);
	printf("stress: %.1f s, %d threads (%d workers), %ld event-set cycles (create/start/read/stop/destroy):", took,
	       threads, NWORKERS, total);
	for (int c = 0; c < NCOMP; c++)
		printf(" %s %ld", comp_name[c], atomic_load(&ops[c]));
	printf("\n");
	printf("stress: reads checked: itanium2 %ld, paragon_rpm %ld (rpms_dat %ld), imc nest %ld in %ld sets (%ld equal "
	       "to imcd's own counter, %ld loud refusals of a killed imcd's frozen counts, each moved on by PAPI_reset)\n",
	       atomic_load(&reads[C_IT2]), atomic_load(&reads[C_RPM]), atomic_load(&rpms_dat_checked), atomic_load(&nest_reads),
	       atomic_load(&nest_sets), atomic_load(&nest_strict), atomic_load(&nest_frozen));
	printf("stress: wraps: %ld of alpha21064's 12-bit counter, live (10^6 per counter width: stress_wraps)\n",
	       atomic_load(&wraps_live));
	if (atomic_load(&pm_cpu_ns) > 0)
		printf("stress: profileme: %.3f s sampled over %.3f s of the sets' CPU time (%.3f)\n",
		       (double)atomic_load(&pm_any_ns) / 1e9, (double)atomic_load(&pm_cpu_ns) / 1e9,
		       (double)atomic_load(&pm_any_ns) / (double)atomic_load(&pm_cpu_ns));
	printf("stress: foreign-thread calls refused: %ld; forks %ld, execs checked %ld; the application's handlers "
	       "served %ld SIGSEGV, %ld SIGTRAP, %ld SIGFPE; imcd killed and restarted %ld times; rpmd %ld times\n",
	       atomic_load(&foreign_refusals), atomic_load(&forks), atomic_load(&execs), atomic_load(&segv_served),
	       atomic_load(&trap_served), atomic_load(&fpe_served), atomic_load(&imcd_kills), atomic_load(&rpmd_kills));
	printf("stress: descriptors %d before, %d after; mappings %d before (%d of files), %d after (%d of files); "
	       "imcd's object mapped %d time(s) before, %d after\n",
	       fd0, fd1, maps0, files0, maps1, files1, imcd0, imcd1);
	if (getenv("STRESS_NO_FORK") || getenv("STRESS_NO_SIGNALS") || getenv("STRESS_COMPONENTS"))
		printf("stress: a partial run (STRESS_NO_FORK, STRESS_NO_SIGNALS or STRESS_COMPONENTS set)\n");
	PAPI_shutdown();
	int f = atomic_load(&failures);
	if (f) {
		printf("stress: FAILED (%d checks)\n", f);
		return 1;
	}
	printf("stress: PASSED\n");
	return 0;
}
