/*
 * Unit tests of the page-trap backend (src/watch/watch_pagetrap.c): every
 * workload has a known number of load and store instructions (or rep
 * iterations), and the counts must match exactly.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common/heritage_probe.h"
#include "watch/watch.h"
#include "watch/watch_breakpoint.h"
#include "watch/watch_pagetrap.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define N_INTS 16384
#define NOINLINE __attribute__((noinline, optimize("no-tree-vectorize", "no-unroll-loops")))

static const struct watch_backend_ops *ops = &watch_pagetrap_ops;

/* Addresses, not pointers: the watched memory is not read here. */
#define watch_start(s, lo, hi) watch_start_at((s), (uintptr_t)(lo), (uintptr_t)(hi))
static void watch_start_at(struct watch_session *s, uintptr_t lo, uintptr_t hi)
{
	memset(s, 0, sizeof *s);
	s->req.want_data = 1;
	s->req.ndata = 1;
	s->req.data[0].start = lo;
	s->req.data[0].end = hi;
	char why[WATCH_ERRLEN] = "";
	int r = ops->start(s, why, sizeof why);
	ck_assert_msg(r == 0, "start failed: %d %s", r, why);
}

static struct watch_counts watch_stop(struct watch_session *s)
{
	ops->stop(s);
	return s->acc;
}

/* ---- workloads: one scalar access per element, never vectorised ---------- */

NOINLINE static void store_pass(volatile int *a, int lo, int hi)
{
	for (int i = lo; i < hi; i++)
		a[i] = i;
}

NOINLINE static long load_pass(volatile int *a, int lo, int hi)
{
	long sum = 0;
	for (int i = lo; i < hi; i++)
		sum += a[i];
	return sum;
}

static uint64_t ns_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether the pages of [lo, hi) are protected as /proc/self/maps says. */
static int range_has_prot_none(const void *lo, const void *hi)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long a, b;
		char perms[5];
		if (sscanf(line, "%lx-%lx %4s", &a, &b, perms) != 3)
			continue;
		if (a < (uintptr_t)hi && b > (uintptr_t)lo && !strncmp(perms, "---", 3))
			found = 1;
	}
	if (f)
		fclose(f);
	return found;
}

/* ---- single thread -------------------------------------------------------- */

START_TEST(scalar_store_then_load_whole_array)
{
	int *a = malloc(N_INTS * sizeof *a);
	ck_assert_ptr_nonnull(a);
	struct watch_session s;
	watch_start(&s, a, a + N_INTS);
	store_pass(a, 0, N_INTS);
	long sum = load_pass(a, 0, N_INTS);
	struct watch_counts c = watch_stop(&s);
	ck_assert_int_eq(sum, (long)N_INTS * (N_INTS - 1) / 2);
	ck_assert_uint_eq(c.stores, N_INTS);
	ck_assert_uint_eq(c.loads, N_INTS);
	ck_assert_uint_eq(c.misaligned_loads, 0);
	ck_assert_uint_eq(c.misaligned_stores, 0);
	ck_assert(!range_has_prot_none(a, a + N_INTS));
	free(a);
}
END_TEST

START_TEST(range_not_page_aligned)
{
	int *a = malloc(N_INTS * sizeof *a);
	struct watch_session s;
	watch_start(&s, a + 100, a + 16000);
	store_pass(a, 0, N_INTS);
	load_pass(a, 0, N_INTS);
	struct watch_counts c = watch_stop(&s);
	ck_assert_uint_eq(c.stores, 15900);
	ck_assert_uint_eq(c.loads, 15900);
	free(a);
}
END_TEST

START_TEST(read_and_reset_while_running)
{
	int *a = malloc(N_INTS * sizeof *a);
	struct watch_session s;
	watch_start(&s, a, a + 1000);
	store_pass(a, 0, 300);
	struct watch_counts live;
	ops->read(&s, &live);
	ck_assert_uint_eq(live.stores, 300);
	ops->reset(&s);
	load_pass(a, 0, 700);
	ops->read(&s, &live);
	ck_assert_uint_eq(live.stores, 0);
	ck_assert_uint_eq(live.loads, 700);
	struct watch_counts c = watch_stop(&s);
	ck_assert_uint_eq(c.loads, 700);
	/* A second start..stop segment accumulates into acc. */
	char why[WATCH_ERRLEN];
	ck_assert_int_eq(ops->start(&s, why, sizeof why), 0);
	store_pass(a, 0, 10);
	ops->stop(&s);
	ck_assert_uint_eq(s.acc.stores, 10);
	ck_assert_uint_eq(s.acc.loads, 700);
	free(a);
}
END_TEST

/* vmovdqu ymm: one load or store per 32 bytes, direction from the CPU (capstone
 * 4 reports the VEX store as a read). */
NOINLINE static void ymm_copy_in_place(int *a, int n)
{
	for (int i = 0; i < n; i += 8)
		__asm__ volatile("vmovdqu (%0), %%ymm0\n\tvpaddd %%ymm0, %%ymm0, %%ymm0\n\tvmovdqu %%ymm0, (%0)"
		                 : : "r"(a + i) : "xmm0", "memory");
	__asm__ volatile("vzeroupper");
}

START_TEST(avx2_vector_loads_and_stores)
{
	if (!__builtin_cpu_supports("avx2")) {
		printf("avx2_vector_loads_and_stores: skipped, no AVX2 on this CPU\n");
		return;
	}
	int *a = aligned_alloc(64, N_INTS * sizeof *a);
	for (int i = 0; i < N_INTS; i++)
		a[i] = i;
	struct watch_session s;
	watch_start(&s, a, a + N_INTS);
	ymm_copy_in_place(a, N_INTS);
	struct watch_counts c = watch_stop(&s);
	ck_assert_int_eq(a[5], 10);
	ck_assert_uint_eq(c.loads, N_INTS / 8);
	ck_assert_uint_eq(c.stores, N_INTS / 8);
	ck_assert_uint_eq(c.misaligned_loads, 0);
	/* 16 bytes off: every 32-byte access is misaligned. */
	watch_start(&s, a, a + N_INTS);
	ymm_copy_in_place(a + 4, N_INTS - 8);
	c = watch_stop(&s);
	ck_assert_uint_eq(c.loads, (N_INTS - 8) / 8);
	ck_assert_uint_eq(c.stores, (N_INTS - 8) / 8);
	ck_assert_uint_eq(c.misaligned_loads, (N_INTS - 8) / 8);
	ck_assert_uint_eq(c.misaligned_stores, (N_INTS - 8) / 8);
	free(a);
}
END_TEST

START_TEST(read_modify_write_is_load_and_store)
{
	int *a = malloc(4096 * sizeof *a);
	memset(a, 0, 4096 * sizeof *a);
	struct watch_session s;
	watch_start(&s, a, a + 4096);
	for (int k = 0; k < 1000; k++)
		__asm__ volatile("addl $1, %0" : "+m"(a[(k * 7) % 4096]));
	long v = 0;
	for (int k = 0; k < 10; k++)
		__asm__ volatile("lock xaddq %0, %1" : "+r"(v), "+m"(*(long *)&a[100]));
	struct watch_counts c = watch_stop(&s);
	ck_assert_uint_eq(c.loads, 1010);
	ck_assert_uint_eq(c.stores, 1010);
	ck_assert_int_eq(a[0], 1);
	free(a);
}
END_TEST

NOINLINE static uint64_t load8(const void *p)
{
	uint64_t v;
	__asm__ volatile("movq (%1), %0" : "=r"(v) : "r"(p) : "memory");
	return v;
}

START_TEST(straddling_and_misaligned_loads)
{
	char *buf = aligned_alloc(4096, 3 * 4096);
	memset(buf, 1, 3 * 4096);
	struct watch_session s;
	/* Range inside one page: [400, 800). */
	watch_start(&s, buf + 400, buf + 800);
	load8(buf + 396); /* starts 4 bytes before: counts, misaligned */
	load8(buf + 796); /* straddles the end: counts, misaligned */
	load8(buf + 800); /* starts at the end: does not count */
	load8(buf + 392); /* ends at the start: does not count */
	load8(buf + 408); /* inside, aligned */
	struct watch_counts c = watch_stop(&s);
	ck_assert_uint_eq(c.loads, 3);
	ck_assert_uint_eq(c.misaligned_loads, 2);
	ck_assert_uint_eq(c.stores, 0);
	/* Range starting on a page: the load from the page before faults on the
	 * range's page with si_addr = page start; the decoder knows where it began. */
	watch_start(&s, buf + 4096, buf + 8192);
	load8(buf + 4096 - 4);
	load8(buf + 8192 - 4);
	load8(buf + 8192);
	c = watch_stop(&s);
	ck_assert_uint_eq(c.loads, 2);
	ck_assert_uint_eq(c.misaligned_loads, 2);
	free(buf);
}
END_TEST

NOINLINE static void rep_stosq(void *dst, uint64_t n, uint64_t val)
{
	__asm__ volatile("rep stosq" : "+D"(dst), "+c"(n) : "a"(val) : "memory");
}

NOINLINE static void rep_movsb(void *dst, const void *src, uint64_t n)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

NOINLINE static void rep_stosb_backwards(void *last, uint64_t n, uint8_t val)
{
	__asm__ volatile("std\n\trep stosb\n\tcld" : "+D"(last), "+c"(n) : "a"(val) : "memory");
}

NOINLINE static uint64_t repne_scasb(const void *p, uint8_t needle, uint64_t max)
{
	uint64_t n = max;
	__asm__ volatile("repne scasb" : "+D"(p), "+c"(n) : "a"(needle) : "memory", "cc");
	return max - n;
}

START_TEST(rep_string_iterations)
{
	char *buf = aligned_alloc(4096, 4 * 4096);
	char *src = aligned_alloc(4096, 4096);
	memset(buf, 0, 4 * 4096);
	memset(src, 7, 4096);
	struct watch_session s;
	/* Range [4096+512, 8192+512). */
	char *lo = buf + 4096 + 512, *hi = buf + 8192 + 512;
	watch_start(&s, lo, hi);
	rep_stosq(lo, 32, 5);                    /* 32 stores */
	rep_stosq(lo - 128, 64, 5);              /* 16 before the range: 48 */
	rep_movsb(lo + 1000, src, 256);          /* 256 stores, loads outside */
	rep_movsb(src, lo + 2000, 256);          /* 256 loads */
	rep_stosb_backwards(hi + 9, 20, 1);      /* DF=1: bytes hi+9 .. hi-10: 10 */
	uint64_t ran = repne_scasb(lo + 3000, 1, 4096); /* stops at hi-10: data-dependent */
	struct watch_counts c = watch_stop(&s);
	ck_assert_uint_eq(ran, (uint64_t)(hi - 10 - (lo + 3000)) + 1);
	ck_assert_uint_eq(c.stores, 32 + 48 + 256 + 10);
	ck_assert_uint_eq(c.loads, 256 + ran);
	ck_assert_uint_eq(c.misaligned_stores, 0);
	ck_assert_int_eq(lo[1000], 7);
	ck_assert_int_eq(hi[9], 1);
	ck_assert_int_eq(hi[-10], 1);
	ck_assert_int_eq(hi[-11], 0);
	/* Misaligned rep stosq: every iteration is. */
	watch_start(&s, lo, hi);
	rep_stosq(lo + 4, 10, 0);
	c = watch_stop(&s);
	ck_assert_uint_eq(c.stores, 10);
	ck_assert_uint_eq(c.misaligned_stores, 10);
	free(buf);
	free(src);
}
END_TEST

/* Through a volatile pointer: the compiler may neither inline nor merge it. */
static void *(*volatile libc_memcpy)(void *, const void *, size_t) = memcpy;

START_TEST(memcpy_into_range_is_deterministic)
{
	enum { BYTES = 65536 };
	char *dst = aligned_alloc(4096, BYTES + 8192);
	char *src = aligned_alloc(4096, BYTES);
	memset(src, 3, BYTES);
	memset(dst, 0, BYTES + 8192);
	struct watch_session s;
	watch_start(&s, dst + 4096, dst + 4096 + BYTES);
	libc_memcpy(dst + 4096, src, BYTES);
	struct watch_counts once = watch_stop(&s);
	memset(dst, 0, BYTES + 8192);
	watch_start(&s, dst + 4096, dst + 4096 + BYTES);
	libc_memcpy(dst + 4096, src, BYTES);
	libc_memcpy(dst + 4096, src, BYTES);
	struct watch_counts twice = watch_stop(&s);
	printf("memcpy of %d bytes into the range: %llu stores (glibc's choice of instructions)\n", BYTES,
	       (unsigned long long)once.stores);
	ck_assert_uint_eq(once.loads, 0);
	ck_assert_uint_ge(once.stores, BYTES / 64);
	ck_assert_uint_le(once.stores, BYTES + 64); /* rep movsb: one per byte */
	ck_assert_uint_eq(twice.stores, 2 * once.stores);
	ck_assert_int_eq(dst[4096 + BYTES - 1], 3);
	ck_assert_int_eq(dst[4095], 0);
	free(dst);
	free(src);
}
END_TEST

/* ---- system calls --------------------------------------------------------- */

START_TEST(syscalls_into_watched_buffer_work_and_count_nothing)
{
	int *a = malloc(N_INTS * sizeof *a);
	memset(a, 0, N_INTS * sizeof *a);
	char *pattern = malloc(8192);
	for (int i = 0; i < 8192; i++)
		pattern[i] = (char)(i * 31 + 1);
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(write(p[1], pattern, 8192), 8192);

	struct watch_session s;
	watch_start(&s, a, a + N_INTS);
	ssize_t got = read(p[0], (char *)a + 10, 8192);
	int zfd = open("/dev/zero", O_RDONLY);
	ssize_t zgot = pread(zfd, (char *)a + 20000, 1000, 0);
	/* And out of the watched buffer. */
	ssize_t put = write(p[1], (char *)a + 10, 100);
	struct iovec iov[2] = { { (char *)a + 40000, 50 }, { pattern, 50 } };
	ssize_t vput = writev(p[1], iov, 2);
	struct watch_counts live;
	ops->read(&s, &live);
	struct watch_counts c = watch_stop(&s);
	close(zfd);

	ck_assert_int_eq(got, 8192);
	ck_assert_int_eq(zgot, 1000);
	ck_assert_int_eq(put, 100);
	ck_assert_int_eq(vput, 100);
	ck_assert_mem_eq((char *)a + 10, pattern, 8192);
	ck_assert_int_eq(((char *)a)[20000], 0);
	char back[200];
	ck_assert_int_eq(read(p[0], back, 200), 200);
	ck_assert_mem_eq(back, pattern, 100);
	ck_assert_uint_eq(c.loads, 0);
	ck_assert_uint_eq(c.stores, 0);
	struct watch_pagetrap_stats st;
	watch_pagetrap_stats(&st);
	ck_assert_uint_ge(st.bounced_syscalls, 4);
	close(p[0]);
	close(p[1]);
	free(a);
	free(pattern);
}
END_TEST

/* ---- threads -------------------------------------------------------------- */

#define MT_THREADS 4
#define MT_INTS 2048

static int *mt_array;
static pthread_barrier_t mt_barrier;

struct mt_result {
	struct watch_counts c;
	int err;
};

static void *mt_worker(void *arg)
{
	struct mt_result *res = arg;
	struct watch_session s;
	memset(&s, 0, sizeof s);
	s.req.want_data = 1;
	s.req.ndata = 1;
	s.req.data[0].start = (uintptr_t)mt_array;
	s.req.data[0].end = (uintptr_t)(mt_array + MT_INTS);
	char why[WATCH_ERRLEN];
	res->err = ops->start(&s, why, sizeof why);
	pthread_barrier_wait(&mt_barrier);
	if (!res->err) {
		store_pass(mt_array, 0, MT_INTS);
		load_pass(mt_array, 0, MT_INTS);
		store_pass(mt_array, 0, MT_INTS / 2);
		ops->stop(&s);
		res->c = s.acc;
	}
	return NULL;
}

START_TEST(four_threads_same_pages_exact)
{
	mt_array = aligned_alloc(4096, MT_INTS * sizeof(int));
	for (int run = 0; run < 3; run++) {
		pthread_t t[MT_THREADS];
		struct mt_result r[MT_THREADS];
		memset(r, 0, sizeof r);
		pthread_barrier_init(&mt_barrier, NULL, MT_THREADS);
		for (int i = 0; i < MT_THREADS; i++)
			pthread_create(&t[i], NULL, mt_worker, &r[i]);
		for (int i = 0; i < MT_THREADS; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&mt_barrier);
		for (int i = 0; i < MT_THREADS; i++) {
			ck_assert_int_eq(r[i].err, 0);
			ck_assert_uint_eq(r[i].c.stores, MT_INTS + MT_INTS / 2);
			ck_assert_uint_eq(r[i].c.loads, MT_INTS);
		}
	}
	struct watch_pagetrap_stats st;
	watch_pagetrap_stats(&st);
	ck_assert_uint_eq(st.park_timeouts, 0);
	ck_assert(!range_has_prot_none(mt_array, mt_array + MT_INTS));
	free(mt_array);
}
END_TEST

static void *other_thread_stores(void *arg)
{
	store_pass(arg, 0, 100);
	return NULL;
}

START_TEST(other_threads_accesses_are_not_ours)
{
	int *a = malloc(4096 * sizeof *a);
	struct watch_session s;
	watch_start(&s, a, a + 4096);
	pthread_t t;
	pthread_create(&t, NULL, other_thread_stores, a);
	pthread_join(t, NULL);
	store_pass(a, 0, 50);
	struct watch_counts c = watch_stop(&s);
	ck_assert_uint_eq(c.stores, 50);
	ck_assert_int_eq(a[99], 99);
	free(a);
}
END_TEST

/* ---- signals and fork ----------------------------------------------------- */

static sigjmp_buf app_jump;
static volatile sig_atomic_t app_handler_ran;

static void app_segv_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig; (void)uc;
	app_handler_ran = si->si_addr == NULL ? 1 : 2;
	siglongjmp(app_jump, 1);
}

static void app_plain_handler(int sig)
{
	(void)sig;
	app_handler_ran = 3;
	siglongjmp(app_jump, 1);
}

static void *volatile null_pointer;

NOINLINE static void null_write(void)
{
	__asm__ volatile("movl $1, (%0)" : : "r"(null_pointer) : "memory");
}

START_TEST(application_segv_handler_still_runs)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = app_segv_handler;
	sa.sa_flags = SA_SIGINFO;
	ck_assert_int_eq(sigaction(SIGSEGV, &sa, NULL), 0); /* before we are installed */

	int *a = malloc(4096 * sizeof *a);
	struct watch_session s;
	watch_start(&s, a, a + 4096);
	store_pass(a, 0, 10);
	app_handler_ran = 0;
	if (!sigsetjmp(app_jump, 1))
		null_write();
	ck_assert_int_eq(app_handler_ran, 1);

	/* oldact reports the application's handler, not ours; a new one set
	 * with signal() while we are installed is the one chained to. */
	ck_assert_int_eq(sigaction(SIGSEGV, NULL, &old), 0);
	ck_assert_ptr_eq((void *)old.sa_sigaction, (void *)app_segv_handler);
	ck_assert_ptr_eq((void *)signal(SIGSEGV, app_plain_handler), (void *)app_segv_handler);
	app_handler_ran = 0;
	if (!sigsetjmp(app_jump, 1))
		null_write();
	ck_assert_int_eq(app_handler_ran, 3);

	store_pass(a, 0, 10);
	struct watch_counts c = watch_stop(&s);
	ck_assert_uint_eq(c.stores, 20);
	free(a);
}
END_TEST

START_TEST(default_segv_still_kills)
{
	int *a = malloc(4096 * sizeof *a);
	struct watch_session s;
	watch_start(&s, a, a + 4096);
	pid_t pid = fork();
	if (pid == 0) {
		/* Our handler is first; the default action must still end us. */
		struct watch_session cs;
		watch_start(&cs, a, a + 4096);
		null_write();
		_exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	ck_assert(WIFSIGNALED(status));
	ck_assert_int_eq(WTERMSIG(status), SIGSEGV);
	watch_stop(&s);
	free(a);
}
END_TEST

START_TEST(fork_child_finds_pages_open)
{
	int *a = malloc(N_INTS * sizeof *a);
	struct watch_session s;
	watch_start(&s, a, a + N_INTS);
	store_pass(a, 0, 100);
	pid_t pid = fork();
	if (pid == 0) {
		struct watch_pagetrap_stats before, after;
		watch_pagetrap_stats(&before);
		int bad = range_has_prot_none(a, a + N_INTS);
		store_pass(a, 0, N_INTS);
		long sum = load_pass(a, 0, N_INTS);
		watch_pagetrap_stats(&after);
		struct watch_counts live;
		ops->read(&s, &live);
		_exit(bad ? 1 : after.faults != before.faults ? 2 : sum != (long)N_INTS * (N_INTS - 1) / 2 ? 3
		      : live.stores != 0 ? 4 : 0);
	}
	int status;
	waitpid(pid, &status, 0);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	store_pass(a, 0, 100);
	struct watch_counts c = watch_stop(&s);
	ck_assert_uint_eq(c.stores, 200);
	free(a);
}
END_TEST

START_TEST(pages_accessible_after_stop)
{
	int *a = malloc(N_INTS * sizeof *a);
	int *b = malloc(N_INTS * sizeof *b);
	struct watch_session s1, s2;
	watch_start(&s1, a, a + N_INTS);
	watch_start(&s2, a + 1000, b + N_INTS); /* overlapping sessions share pages */
	ck_assert(range_has_prot_none(a, a + N_INTS));
	watch_stop(&s1);
	ck_assert(range_has_prot_none(a + 1024, a + N_INTS)); /* still s2's */
	watch_stop(&s2);
	ck_assert(!range_has_prot_none(a, a + N_INTS));
	ck_assert(!range_has_prot_none(b, b + N_INTS));
	struct watch_pagetrap_stats before, after;
	watch_pagetrap_stats(&before);
	store_pass(a, 0, N_INTS);
	store_pass(b, 0, N_INTS);
	watch_pagetrap_stats(&after);
	ck_assert_uint_eq(after.faults, before.faults);
	free(a);
	free(b);
}
END_TEST

/* ---- ranges reaching into unmapped memory --------------------------------- */

#define PG 4096

/* Whether every page of [lo, hi) is unmapped (mincore: ENOMEM per page). */
static int unmapped(const void *lo, const void *hi)
{
	unsigned char v;
	for (uintptr_t a = (uintptr_t)lo; a < (uintptr_t)hi; a += PG)
		if (mincore((void *)a, PG, &v) == 0 || errno != ENOMEM)
			return 0;
	return 1;
}

/* A coarse Itanium cover is a range of addresses that can run past the end
 * of a mapping (.bss, the heap) into a hole: the hole has nothing to count,
 * and the accesses in the mapped part count exactly. */
START_TEST(range_reaching_into_a_hole_counts_the_mapped_part)
{
	char *m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	ck_assert_int_eq(munmap(m + 2 * PG, 2 * PG), 0);
	ck_assert(unmapped(m + 2 * PG, m + 4 * PG));
	int *a = (int *)m; /* 2 * PG / 4 = 2048 ints mapped */
	struct watch_session s;
	watch_start(&s, m + PG / 2, m + 4 * PG);
	ck_assert(range_has_prot_none(m, m + 2 * PG));
	store_pass(a, 0, 2 * PG / 4);
	long sum = load_pass(a, 0, 2 * PG / 4);
	struct watch_counts c = watch_stop(&s);
	ck_assert_int_eq(sum, (long)2048 * 2047 / 2);
	/* [m + PG/2, m + 2 PG): 1.5 pages of ints, each stored and loaded once */
	ck_assert_uint_eq(c.stores, 3 * PG / 2 / 4);
	ck_assert_uint_eq(c.loads, 3 * PG / 2 / 4);
	ck_assert(!range_has_prot_none(m, m + 2 * PG));
	ck_assert(unmapped(m + 2 * PG, m + 4 * PG)); /* nothing mapped there meanwhile */
	munmap(m, 2 * PG);
}
END_TEST

/* A hole between two mappings, and a range over all three. */
START_TEST(range_across_a_hole_counts_both_sides)
{
	char *m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	ck_assert_int_eq(munmap(m + PG, PG), 0);
	ck_assert(unmapped(m + PG, m + 2 * PG));
	struct watch_session s;
	watch_start(&s, m + 100 * 4, m + 3 * PG - 100 * 4);
	store_pass((int *)m, 0, PG / 4);
	store_pass((int *)(m + 2 * PG), 0, PG / 4);
	load_pass((int *)m, 0, PG / 4);
	load_pass((int *)(m + 2 * PG), 0, PG / 4);
	struct watch_counts c = watch_stop(&s);
	ck_assert_uint_eq(c.stores, 2 * (PG / 4 - 100));
	ck_assert_uint_eq(c.loads, 2 * (PG / 4 - 100));
	munmap(m, 3 * PG);
}
END_TEST

/* What itanium2(3) says: a page mapped into the hole after the start is not
 * watched by that run (its accesses are not counted), and is by the next. */
START_TEST(page_mapped_into_the_hole_counts_from_the_next_start)
{
	char *m = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	ck_assert_int_eq(munmap(m + PG, PG), 0);
	struct watch_session s;
	watch_start(&s, m, m + 2 * PG);
	char *late = mmap(m + PG, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ck_assert_ptr_eq(late, m + PG);
	store_pass((int *)m, 0, 10);
	store_pass((int *)late, 0, PG / 4);
	load_pass((int *)late, 0, PG / 4);
	struct watch_counts c = watch_stop(&s);
	ck_assert_uint_eq(c.stores, 10);
	ck_assert_uint_eq(c.loads, 0);
	watch_start(&s, m, m + 2 * PG);
	store_pass((int *)late, 0, PG / 4);
	load_pass((int *)late, 0, PG / 4);
	c = watch_stop(&s);
	ck_assert_uint_eq(c.stores, PG / 4);
	ck_assert_uint_eq(c.loads, PG / 4);
	ck_assert(!range_has_prot_none(m, m + 2 * PG));
	munmap(m, 2 * PG);
}
END_TEST

/* Still refused: a request no page of which is mapped, and mapped parts the
 * backend cannot watch, holes or not. */
START_TEST(fits_refuses_bad_ranges_around_holes)
{
	struct watch_request r;
	char why[WATCH_ERRLEN];
	char *m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	ck_assert_int_eq(munmap(m + PG, 3 * PG), 0); /* [m, m + PG) mapped, 3 pages of hole */
	memset(&r, 0, sizeof r);
	r.want_data = 1;
	r.ndata = 2;                         /* as a cover of two blocks */
	r.data[0].start = (uintptr_t)m + 2 * PG;
	r.data[0].end = (uintptr_t)m + 3 * PG;
	r.data[1].start = (uintptr_t)m + 3 * PG;
	r.data[1].end = (uintptr_t)m + 4 * PG;
	ck_assert_int_eq(ops->fits(&r, why, sizeof why), -EINVAL);
	ck_assert_msg(strstr(why, "none of the 2 data ranges") != NULL, "%s", why);
	r.data[1].start = (uintptr_t)m + 8;  /* one block mapped, the other in the hole */
	r.data[1].end = (uintptr_t)m + 16;
	ck_assert_msg(ops->fits(&r, why, sizeof why) == 0, "%s", why);

	/* mapped PROT_NONE beyond the hole: still refused */
	char *n = mmap(m + 2 * PG, PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ck_assert_ptr_eq(n, m + 2 * PG);
	r.ndata = 1;
	r.data[0].start = (uintptr_t)m;
	r.data[0].end = (uintptr_t)m + 3 * PG;
	ck_assert_int_eq(ops->fits(&r, why, sizeof why), -EINVAL);
	ck_assert_msg(strstr(why, "PROT_NONE") != NULL, "%s", why);
	munmap(m, 3 * PG);
}
END_TEST

/* ---- fits ----------------------------------------------------------------- */

START_TEST(fits_refuses_what_it_cannot_watch)
{
	struct watch_request r;
	char why[WATCH_ERRLEN];
	int x = 0;
	memset(&r, 0, sizeof r);
	r.want_data = 1;
	r.ndata = 1;
	r.data[0].start = (uintptr_t)&x + 4;
	r.data[0].end = (uintptr_t)&x;
	ck_assert_int_eq(ops->fits(&r, why, sizeof why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "empty"));

	void *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(m, 8192);
	r.data[0].start = (uintptr_t)m;
	r.data[0].end = (uintptr_t)m + 100;
	ck_assert_int_eq(ops->fits(&r, why, sizeof why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "not mapped"));

	r.data[0].start = (uintptr_t)(void *)null_write;
	r.data[0].end = r.data[0].start + 16;
	ck_assert_int_eq(ops->fits(&r, why, sizeof why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "executable"));

	struct watch_pagetrap_stats *own = malloc(sizeof *own); /* a heap address: fine */
	r.data[0].start = (uintptr_t)own;
	r.data[0].end = (uintptr_t)own + sizeof *own;
	ck_assert_int_eq(ops->fits(&r, why, sizeof why), 0);
	free(own);

	/* This program links libheritage.a: its own text holds the engine. */
	memset(&r, 0, sizeof r);
	r.want_code = 1;
	r.ncode = 1;
	r.code_pair[0].start = (uintptr_t)(void *)null_write;
	r.code_pair[0].end = r.code_pair[0].start + 8;
	ck_assert_int_eq(ops->fits(&r, why, sizeof why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "page-trap engine itself"));
	ck_assert_str_eq(ops->name, "pagetrap");
}
END_TEST

/* ---- cost ----------------------------------------------------------------- */

START_TEST(cost_per_trapped_access)
{
	int *a = malloc(N_INTS * sizeof *a);
	struct watch_session s;
	struct watch_pagetrap_stats before, after;
	uint64_t t0 = ns_now();
	store_pass(a, 0, N_INTS);
	uint64_t native = ns_now() - t0;
	watch_start(&s, a, a + N_INTS);
	watch_pagetrap_stats(&before);
	t0 = ns_now();
	store_pass(a, 0, N_INTS);
	uint64_t trapped = ns_now() - t0;
	watch_pagetrap_stats(&after);
	struct watch_counts c = watch_stop(&s);
	ck_assert_uint_eq(c.stores, N_INTS);
	ck_assert_uint_eq(after.int3_steps - before.int3_steps, N_INTS);
	printf("pagetrap cost: %.2f us per trapped access (int3 path, single thread, %d stores; native %.2f ns)\n",
	       (double)(trapped - native) / 1000.0 / N_INTS, N_INTS, (double)native / N_INTS);
	free(a);
}
END_TEST

/* ---- code ranges ------------------------------------------------------------
 *
 * Routines with known instruction counts.  They are assembled as data and
 * copied into pages of their own, mapped executable: this program links
 * libheritage.a, so its own text is the engine's object, which fits() refuses
 * to watch. */
__asm__(".pushsection .rodata\n"
        ".balign 16\n"
        /* long loop(long n), n >= 1: 3n + 2 instructions; the body (add, dec,
         * jnz) is [blob_loop_body, blob_loop_body_end). */
        "blob_loop:\n"
        "	mov %rdi, %rcx\n"
        "blob_loop_body:\n"
        "1:	add $1, %rax\n"
        "	dec %rcx\n"
        "	jnz 1b\n"
        "blob_loop_body_end:\n"
        "	ret\n"
        "blob_loop_end:\n"
        /* long call(long n, void (*fn)(void)), n >= 1: 3n + 7 instructions of
         * its own; fn's lie outside. */
        "blob_call:\n"
        "	push %rbx\n"
        "	push %r12\n"
        "	mov %rdi, %rbx\n"
        "	mov %rsi, %r12\n"
        "2:	call *%r12\n"
        "	dec %rbx\n"
        "	jnz 2b\n"
        "	pop %r12\n"
        "	pop %rbx\n"
        "	ret\n"
        "blob_call_end:\n"
        /* long sys(long n), n >= 1: getpid() n times, 4n + 2 instructions. */
        "blob_sys:\n"
        "	mov %rdi, %r8\n"
        "3:	mov $39, %eax\n"
        "	syscall\n"
        "	dec %r8\n"
        "	jnz 3b\n"
        "	ret\n"
        "blob_sys_end:\n"
        /* void rep(void *dst, const void *src, size_t n): 3 instructions
         * whatever n (rep movsb is one instruction). */
        "blob_rep:\n"
        "	mov %rdx, %rcx\n"
        "	rep movsb\n"
        "	ret\n"
        "blob_rep_end:\n"
        ".popsection\n");
extern const char blob_loop[], blob_loop_body[], blob_loop_body_end[], blob_loop_end[];
extern const char blob_call[], blob_call_end[], blob_sys[], blob_sys_end[], blob_rep[], blob_rep_end[];

enum { CODE_LOOP, CODE_CALL, CODE_SYS, CODE_REP, CODE_NPAGES };
static unsigned char *code_pages; /* one routine per page, r-x */

typedef long (*loop_fn)(long);
typedef long (*call_fn)(long, void (*)(void));
typedef void (*rep_fn)(void *, const void *, size_t);

static void code_setup(void)
{
	code_pages = mmap(NULL, CODE_NPAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(code_pages, MAP_FAILED);
	memcpy(code_pages + CODE_LOOP * 4096, blob_loop, (size_t)(blob_loop_end - blob_loop));
	memcpy(code_pages + CODE_CALL * 4096, blob_call, (size_t)(blob_call_end - blob_call));
	memcpy(code_pages + CODE_SYS * 4096, blob_sys, (size_t)(blob_sys_end - blob_sys));
	memcpy(code_pages + CODE_REP * 4096, blob_rep, (size_t)(blob_rep_end - blob_rep));
	ck_assert_int_eq(mprotect(code_pages, CODE_NPAGES * 4096, PROT_READ | PROT_EXEC), 0);
}

static void code_teardown(void)
{
	munmap(code_pages, CODE_NPAGES * 4096);
}

static uintptr_t code_at(int page, const char *blob_start, const char *sym)
{
	return (uintptr_t)code_pages + (uintptr_t)page * 4096 + (uintptr_t)(sym - blob_start);
}

#define LOOP_FN ((loop_fn)(void *)(code_pages + CODE_LOOP * 4096))
#define CALL_FN ((call_fn)(void *)(code_pages + CODE_CALL * 4096))
#define SYS_FN ((loop_fn)(void *)(code_pages + CODE_SYS * 4096))
#define REP_FN ((rep_fn)(void *)(code_pages + CODE_REP * 4096))

static int code_try_start(struct watch_session *s, unsigned n, const uintptr_t (*pairs)[2], char *why)
{
	memset(s, 0, sizeof *s);
	s->req.want_code = 1;
	s->req.data_all = 1; /* what it2_set passes without a data range; ignored */
	s->req.ncode = n;
	for (unsigned k = 0; k < n; k++) {
		s->req.code_pair[k].start = pairs[k][0];
		s->req.code_pair[k].end = pairs[k][1];
	}
	return ops->start(s, why, WATCH_ERRLEN);
}

/* One range over a whole routine of page `page`. */
static void code_start(struct watch_session *s, int page, const char *blob_start, const char *blob_end)
{
	uintptr_t pair[1][2] = { { code_at(page, blob_start, blob_start), code_at(page, blob_start, blob_end) } };
	char why[WATCH_ERRLEN] = "";
	int r = code_try_start(s, 1, pair, why);
	ck_assert_msg(r == 0, "start failed: %d %s", r, why);
}

/* The permissions /proc/self/maps gives the page at addr ("r-x", ...). */
static void page_perms(uintptr_t addr, char perms[4])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	strcpy(perms, "?");
	while (f && fgets(line, sizeof line, f)) {
		unsigned long a, b;
		char p[5];
		if (sscanf(line, "%lx-%lx %4s", &a, &b, p) == 3 && addr >= a && addr < b) {
			memcpy(perms, p, 3);
			perms[3] = '\0';
		}
	}
	if (f)
		fclose(f);
}

NOINLINE static void outside_call(void)
{
	__asm__ volatile("nop; nop; nop; nop");
}

#define CODE_LOOP_N 20000
START_TEST(code_loop_counts_every_instruction_once)
{
	struct watch_session s;
	struct watch_pagetrap_stats before, after;
	char perms[4];
	code_setup();
	uint64_t t0 = ns_now();
	LOOP_FN(CODE_LOOP_N);
	uint64_t native = ns_now() - t0;

	code_start(&s, CODE_LOOP, blob_loop, blob_loop_end);
	page_perms((uintptr_t)code_pages, perms);
	ck_assert_str_eq(perms, "r--"); /* readable, not executable, while watched */
	watch_pagetrap_stats(&before);
	t0 = ns_now();
	LOOP_FN(CODE_LOOP_N);
	uint64_t stepped = ns_now() - t0;
	watch_pagetrap_stats(&after);
	struct watch_counts live;
	ops->read(&s, &live);
	ck_assert_uint_eq(live.insns, 3 * CODE_LOOP_N + 2);
	ops->reset(&s);
	LOOP_FN(10);
	struct watch_counts c = watch_stop(&s);
	ck_assert_uint_eq(c.insns, 3 * 10 + 2);
	ck_assert_uint_eq(c.insns_pair[0], 3 * 10 + 2);
	ck_assert_uint_eq(c.insns_pair[1], 0);
	ck_assert_uint_eq(c.loads + c.stores, 0);
	ck_assert_uint_eq(after.code_entries - before.code_entries, 1);
	page_perms((uintptr_t)code_pages, perms);
	ck_assert_str_eq(perms, "r-x");
	printf("pagetrap code cost: %.2f us per counted instruction (loop of %d instructions entered once, single "
	       "thread; native %.2f ns)\n",
	       (double)(stepped - native) / 1000.0 / (3 * CODE_LOOP_N + 2), 3 * CODE_LOOP_N + 2,
	       (double)native / (3 * CODE_LOOP_N + 2));
	code_teardown();
}
END_TEST

#define CODE_CALL_N 500
START_TEST(code_calls_out_are_not_counted)
{
	struct watch_session s;
	struct watch_pagetrap_stats before, after;
	code_setup();
	uint64_t t0 = ns_now();
	CALL_FN(CODE_CALL_N, outside_call);
	uint64_t native = ns_now() - t0;
	code_start(&s, CODE_CALL, blob_call, blob_call_end);
	watch_pagetrap_stats(&before);
	t0 = ns_now();
	CALL_FN(CODE_CALL_N, outside_call);
	uint64_t stepped = ns_now() - t0;
	watch_pagetrap_stats(&after);
	struct watch_counts c = watch_stop(&s);
	ck_assert_uint_eq(c.insns, 3 * CODE_CALL_N + 7);
	ck_assert_uint_eq(c.insns_pair[0], 3 * CODE_CALL_N + 7);
	/* Entered at the call and again after every return from outside. */
	ck_assert_uint_eq(after.code_entries - before.code_entries, CODE_CALL_N + 1);
	printf("pagetrap code cost: %.2f us per counted instruction (%d calls out of the range, one re-entry "
	       "fault each)\n",
	       (double)(stepped - native) / 1000.0 / (3 * CODE_CALL_N + 7), CODE_CALL_N);
	code_teardown();
}
END_TEST

START_TEST(code_pairs_count_separately)
{
	struct watch_session s;
	char why[WATCH_ERRLEN] = "";
	code_setup();
	/* Pair 0: the whole routine; pair 1: the loop body only; pair 2: the
	 * same page, but bytes no instruction starts in (the tail after ret). */
	uintptr_t pairs[3][2] = {
		{ code_at(CODE_LOOP, blob_loop, blob_loop), code_at(CODE_LOOP, blob_loop, blob_loop_end) },
		{ code_at(CODE_LOOP, blob_loop, blob_loop_body), code_at(CODE_LOOP, blob_loop, blob_loop_body_end) },
		{ code_at(CODE_LOOP, blob_loop, blob_loop_end), code_at(CODE_LOOP, blob_loop, blob_loop_end) + 64 },
	};
	ck_assert_int_eq(code_try_start(&s, 3, pairs, why), 0);
	LOOP_FN(1000);
	struct watch_counts c = watch_stop(&s);
	ck_assert_uint_eq(c.insns, 3 * 1000 + 2); /* once, though two pairs hold the body */
	ck_assert_uint_eq(c.insns_pair[0], 3 * 1000 + 2);
	ck_assert_uint_eq(c.insns_pair[1], 3 * 1000);
	ck_assert_uint_eq(c.insns_pair[2], 0);

	/* Only the body: mov and ret are stepped (same page) but not counted. */
	ck_assert_int_eq(code_try_start(&s, 1, pairs + 1, why), 0);
	LOOP_FN(1000);
	c = watch_stop(&s);
	ck_assert_uint_eq(c.insns, 3 * 1000);
	code_teardown();
}
END_TEST

START_TEST(code_syscall_and_rep_string_in_range)
{
	struct watch_session s;
	code_setup();
	code_start(&s, CODE_SYS, blob_sys, blob_sys_end);
	long pid = SYS_FN(100);
	struct watch_counts c = watch_stop(&s);
	ck_assert_int_eq(pid, getpid());
	/* The kernel's IRET return loses the step trap of every syscall; the
	 * instruction after each is counted all the same. */
	ck_assert_uint_eq(c.insns, 4 * 100 + 2);

	char src[300], dst[300];
	for (int i = 0; i < 300; i++)
		src[i] = (char)i;
	memset(dst, 0, sizeof dst);
	code_start(&s, CODE_REP, blob_rep, blob_rep_end);
	REP_FN(dst, src, sizeof dst);
	REP_FN(dst, src, 0);
	c = watch_stop(&s);
	ck_assert_int_eq(memcmp(dst, src, sizeof dst), 0);
	ck_assert_uint_eq(c.insns, 2 * 3); /* rep movsb once, however many iterations */
	code_teardown();
}
END_TEST

static volatile sig_atomic_t alarms;
static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

START_TEST(code_async_signals_wait_and_are_not_counted)
{
	struct watch_session s;
	struct sigaction sa, old;
	code_setup();
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, &old);
	alarms = 0;
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } }, off = { { 0, 0 }, { 0, 0 } };
	code_start(&s, CODE_LOOP, blob_loop, blob_loop_end);
	setitimer(ITIMER_REAL, &it, NULL);
	for (int i = 0; i < 5; i++)
		LOOP_FN(5000); /* ~0.2 s each: many timer expiries while stepping */
	setitimer(ITIMER_REAL, &off, NULL);
	struct watch_counts c = watch_stop(&s);
	sigaction(SIGALRM, &old, NULL);
	ck_assert_uint_eq(c.insns, 5 * (3 * 5000 + 2));
	ck_assert_int_gt(alarms, 0); /* delivered once the routine returned */
	code_teardown();
}
END_TEST

struct code_thread_arg {
	int own_session;
	int err;
	long calls;
	struct watch_counts c;
};

static pthread_barrier_t code_barrier;

static void *code_thread(void *p)
{
	struct code_thread_arg *a = p;
	struct watch_session s;
	char why[WATCH_ERRLEN] = "";
	uintptr_t pair[1][2] = { { code_at(CODE_LOOP, blob_loop, blob_loop),
	                           code_at(CODE_LOOP, blob_loop, blob_loop_end) } };
	if (a->own_session)
		a->err = code_try_start(&s, 1, pair, why);
	pthread_barrier_wait(&code_barrier);
	for (long i = 0; i < a->calls; i++)
		LOOP_FN(300);
	pthread_barrier_wait(&code_barrier);
	if (a->own_session && !a->err) {
		ops->stop(&s);
		a->c = s.acc;
	}
	return NULL;
}

START_TEST(code_threads_count_only_their_own)
{
	code_setup();
	/* Two threads with sessions and one without, all running the same
	 * watched routine at once. */
	struct code_thread_arg args[3] = { { 1, 0, 40, { 0 } }, { 1, 0, 25, { 0 } }, { 0, 0, 30, { 0 } } };
	pthread_t t[3];
	pthread_barrier_init(&code_barrier, NULL, 3);
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, code_thread, &args[i]);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&code_barrier);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(args[i].err, 0);
		ck_assert_uint_eq(args[i].c.insns, (uint64_t)args[i].calls * (3 * 300 + 2));
	}
	struct watch_pagetrap_stats st;
	watch_pagetrap_stats(&st);
	ck_assert_uint_eq(st.park_timeouts, 0);
	char perms[4];
	page_perms((uintptr_t)code_pages, perms);
	ck_assert_str_eq(perms, "r-x");
	code_teardown();
}
END_TEST

START_TEST(code_pages_given_back_in_fork_child_and_after_stop)
{
	struct watch_session s1, s2;
	char perms[4];
	code_setup();
	code_start(&s1, CODE_LOOP, blob_loop, blob_loop_end);
	code_start(&s2, CODE_LOOP, blob_loop, blob_loop_end); /* two sessions, one page */
	pid_t pid = fork();
	if (pid == 0) {
		struct watch_pagetrap_stats before, after;
		page_perms((uintptr_t)code_pages, perms);
		watch_pagetrap_stats(&before);
		LOOP_FN(100);
		watch_pagetrap_stats(&after);
		_exit(strcmp(perms, "r-x") ? 1 : after.code_entries != before.code_entries ? 2 : 0);
	}
	int status;
	waitpid(pid, &status, 0);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	LOOP_FN(7);
	ops->stop(&s1);
	page_perms((uintptr_t)code_pages, perms);
	ck_assert_str_eq(perms, "r--"); /* still s2's */
	LOOP_FN(7);
	ops->stop(&s2);
	page_perms((uintptr_t)code_pages, perms);
	ck_assert_str_eq(perms, "r-x");
	ck_assert_uint_eq(s1.acc.insns, 3 * 7 + 2);
	ck_assert_uint_eq(s2.acc.insns, 2 * (3 * 7 + 2));
	code_teardown();
}
END_TEST

START_TEST(code_fits_refuses_what_it_cannot_step)
{
	struct watch_request r;
	char why[WATCH_ERRLEN];
	code_setup();
	memset(&r, 0, sizeof r);
	r.want_code = 1;
	r.ncode = 1;
	r.code_pair[0].start = (uintptr_t)code_pages;
	r.code_pair[0].end = (uintptr_t)code_pages + 16;
	ck_assert_int_eq(ops->fits(&r, why, sizeof why), 0);

	r.want_data = 1; /* instructions and data in one set */
	r.ndata = 1;
	r.data[0].start = (uintptr_t)why;
	r.data[0].end = (uintptr_t)why + 8;
	ck_assert_int_eq(ops->fits(&r, why, sizeof why), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(why, "two event sets"));
	r.want_data = 0;
	r.ndata = 0;

	r.code_pair[0].start = (uintptr_t)(void *)getpid; /* libc */
	r.code_pair[0].end = r.code_pair[0].start + 16;
	ck_assert_int_eq(ops->fits(&r, why, sizeof why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "C library"));

	r.code_pair[0].start = (uintptr_t)(void *)code_fits_refuses_what_it_cannot_step; /* the engine's object */
	r.code_pair[0].end = r.code_pair[0].start + 16;
	ck_assert_int_eq(ops->fits(&r, why, sizeof why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "page-trap engine itself"));

	char *heap = malloc(64);
	r.code_pair[0].start = (uintptr_t)heap;
	r.code_pair[0].end = (uintptr_t)heap + 64;
	ck_assert_int_eq(ops->fits(&r, why, sizeof why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "not executable"));
	free(heap);

	void *m = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(m, 8192);
	r.code_pair[0].start = (uintptr_t)m;
	r.code_pair[0].end = (uintptr_t)m + 100;
	ck_assert_int_eq(ops->fits(&r, why, sizeof why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "not mapped"));

	r.code_pair[0].start = (uintptr_t)code_pages + 16;
	r.code_pair[0].end = (uintptr_t)code_pages;
	ck_assert_int_eq(ops->fits(&r, why, sizeof why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "empty"));

	/* While watched, the code page is r--: still accepted for code, and
	 * still refused as data (it is code). */
	struct watch_session s;
	code_start(&s, CODE_LOOP, blob_loop, blob_loop_end);
	r.code_pair[0].start = (uintptr_t)code_pages;
	r.code_pair[0].end = (uintptr_t)code_pages + 16;
	ck_assert_int_eq(ops->fits(&r, why, sizeof why), 0);
	memset(&r, 0, sizeof r);
	r.want_data = 1;
	r.ndata = 1;
	r.data[0].start = (uintptr_t)code_pages;
	r.data[0].end = (uintptr_t)code_pages + 16;
	ck_assert_int_eq(ops->fits(&r, why, sizeof why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "executable"));
	ops->stop(&s);
	code_teardown();
}
END_TEST

/* ---- breakpoint backend ------------------------------------------------------
 * The same kinds of access on one watched 8-byte word, counted with the debug
 * registers (watch_breakpoint.c).  Every store hit is classified from the
 * instruction that made it; undetermined must stay 0 for these workloads,
 * whose every instruction is in this program's symbol table. */

static long bp_word __attribute__((aligned(8)));

/* 0, or 1 when this machine cannot open the debug registers (the test then
 * says why and passes: skipping is all it can do). */
static int bp_start(struct watch_session *s, void *word)
{
	memset(s, 0, sizeof *s);
	s->req.want_data = 1;
	s->req.ndata = 1;
	s->req.data[0].start = (uintptr_t)word;
	s->req.data[0].end = (uintptr_t)word + 8;
	char why[WATCH_ERRLEN] = "";
	ck_assert_int_eq(watch_breakpoint_ops.fits(&s->req, why, sizeof why), 0);
	/* main() ran these cases only because the probe saw the mechanism
	 * count: a refusal now is a failure, not a skip. */
	int r = watch_breakpoint_ops.start(s, why, sizeof why);
	ck_assert_msg(r == 0, "breakpoint start failed: %d %s", r, why);
	return 0;
}

static struct watch_counts bp_stop(struct watch_session *s)
{
	watch_breakpoint_ops.stop(s);
	return s->acc;
}

START_TEST(bp_plain_stores_and_loads)
{
	struct watch_session s;
	struct watch_breakpoint_stats before, after;
	if (bp_start(&s, &bp_word))
		return;
	watch_breakpoint_stats(&before);
	for (long k = 0; k < 100; k++)
		__asm__ volatile("movq %1, %0" : "=m"(bp_word) : "r"(k));
	long v = 0;
	for (int k = 0; k < 50; k++)
		__asm__ volatile("addq %1, %0" : "+r"(v) : "m"(bp_word));
	/* A 4-byte store into the upper half hits the 8-byte word too. */
	__asm__ volatile("movl $7, 4+%0" : "+m"(bp_word));
	struct watch_counts c = bp_stop(&s);
	watch_breakpoint_stats(&after);
	ck_assert_uint_eq(c.stores, 101);
	ck_assert_uint_eq(c.loads, 50);
	ck_assert_uint_eq(after.undetermined - before.undetermined, 0);
	ck_assert_uint_eq(after.rmw - before.rmw, 0);
}
END_TEST

START_TEST(bp_read_modify_write_is_load_and_store)
{
	struct watch_session s;
	struct watch_breakpoint_stats before, after;
	bp_word = 0;
	if (bp_start(&s, &bp_word))
		return;
	watch_breakpoint_stats(&before);
	for (int k = 0; k < 1000; k++)
		__asm__ volatile("addl $1, %0" : "+m"(bp_word));
	long v = 1;
	for (int k = 0; k < 10; k++)
		__asm__ volatile("lock xaddq %0, %1" : "+r"(v), "+m"(bp_word));
	for (int k = 0; k < 10; k++)
		__asm__ volatile("incq %0" : "+m"(bp_word));
	for (int k = 0; k < 10; k++)
		__asm__ volatile("lock orb $1, 3+%0" : "+m"(bp_word));
	struct watch_counts c = bp_stop(&s);
	watch_breakpoint_stats(&after);
	ck_assert_uint_eq(c.loads, 1030);
	ck_assert_uint_eq(c.stores, 1030);
	ck_assert_uint_eq(after.rmw - before.rmw, 1030);
	ck_assert_uint_eq(after.undetermined - before.undetermined, 0);
}
END_TEST

/* static and not inlined: only .symtab names it, so the forward decode from
 * its start is what finds its instructions. */
NOINLINE static void bp_static_rmw_and_store(long *w, int n)
{
	for (int k = 0; k < n; k++) {
		__asm__ volatile("addq $3, %0" : "+m"(*w));
		__asm__ volatile("movq %1, %0" : "=m"(*w) : "r"((long)k));
	}
}

START_TEST(bp_store_from_static_function)
{
	struct watch_session s;
	struct watch_breakpoint_stats before, after;
	if (bp_start(&s, &bp_word))
		return;
	watch_breakpoint_stats(&before);
	bp_static_rmw_and_store(&bp_word, 200);
	struct watch_counts c = bp_stop(&s);
	watch_breakpoint_stats(&after);
	ck_assert_uint_eq(c.stores, 400);
	ck_assert_uint_eq(c.loads, 200);
	ck_assert_uint_eq(after.undetermined - before.undetermined, 0);
	ck_assert_uint_gt(after.by_symbol - before.by_symbol, 0);
	ck_assert_uint_eq(after.by_scan - before.by_scan, 0);
}
END_TEST

/* String instructions: a rep iteration traps with RIP still on the rep
 * instruction; movs reads another address (a load only when that is the word). */
START_TEST(bp_string_instructions)
{
	struct watch_session s;
	struct watch_breakpoint_stats before, after;
	long buf[8] __attribute__((aligned(8)));
	memset(buf, 0, sizeof buf);
	if (bp_start(&s, &buf[3]))
		return;
	watch_breakpoint_stats(&before);
	rep_stosq(buf, 8, 5);           /* one iteration hits: 1 store */
	rep_movsb(&buf[3], &buf[3], 8); /* 8 byte iterations, each reads and writes the word */
	long src = 9;
	rep_movsb(&buf[3], &src, 8);    /* 8 stores, the loads are elsewhere */
	struct watch_counts c = bp_stop(&s);
	watch_breakpoint_stats(&after);
	ck_assert_uint_eq(c.stores, 17);
	ck_assert_uint_eq(c.loads, 8);
	ck_assert_uint_eq(after.rmw - before.rmw, 8);
	ck_assert_uint_eq(after.undetermined - before.undetermined, 0);
	ck_assert_int_eq(buf[3], 9);
}
END_TEST

/* A call whose return address lands on the watched word: RIP is the callee's
 * entry, not after the call.  The call runs on a stack of our own whose top
 * slot is the word; the ret reads it back (a load). */
static long bp_stack[8192] __attribute__((aligned(64)));
__asm__(".text\n"
        "bp_leaf:\n"
        "	ret\n");

START_TEST(bp_call_stores_return_address)
{
	struct watch_session s;
	struct watch_breakpoint_stats before, after;
	long *slot = &bp_stack[8190];
	if (bp_start(&s, slot))
		return;
	watch_breakpoint_stats(&before);
	for (int k = 0; k < 20; k++)
		__asm__ volatile("mov %%rsp, %%rbx\n\t"
		                 "lea 8(%0), %%rsp\n\t"
		                 "call bp_leaf\n\t"
		                 "mov %%rbx, %%rsp"
		                 : : "r"(slot) : "rbx", "memory");
	struct watch_counts c = bp_stop(&s);
	watch_breakpoint_stats(&after);
	ck_assert_uint_eq(c.stores, 20);
	ck_assert_uint_eq(c.loads, 20);
	ck_assert_uint_eq(after.rmw - before.rmw, 0);
	ck_assert_uint_eq(after.undetermined - before.undetermined, 0);
}
END_TEST

/* A data breakpoint's #DB whose DR6 lost its cause bits (KVM, now and then):
 * the kernel counts nothing and sends SIGTRAP as for an icebp, TRAP_BRKPT,
 * TF clear, RIP after the access.  Made here by calling the engine's
 * SIGTRAP handler (the kernel's, not the interposed sigaction's) as the
 * kernel would after each instruction below, with %rdi on the word. */
__asm__(".text\n"
        ".type ut_insns, @function\n"
        "ut_insns:\n"
        "	movq (%rdi), %rax\n"
        "ut_after_load:\n"
        "	movq %rax, (%rdi)\n"
        "ut_after_store:\n"
        "	addq $1, (%rdi)\n"
        "ut_after_rmw:\n"
        "	ret\n"
        ".size ut_insns, .-ut_insns\n");
extern const char ut_after_load[], ut_after_store[], ut_after_rmw[];

static volatile int app_traps;
static void app_trap_handler(int sig)
{
	(void)sig;
	app_traps++;
}

static void untagged_db_after(const char *rip, void *rdi)
{
	struct {
		void (*handler)(int, siginfo_t *, void *);
		unsigned long flags;
		void *restorer;
		uint64_t mask;
	} ks;
	ck_assert_int_eq(syscall(SYS_rt_sigaction, SIGTRAP, NULL, &ks, 8), 0);
	ucontext_t uc;
	getcontext(&uc);
	uc.uc_mcontext.gregs[REG_RIP] = (greg_t)rip;
	uc.uc_mcontext.gregs[REG_RDI] = (greg_t)rdi;
	uc.uc_mcontext.gregs[REG_EFL] &= ~(greg_t)0x100;
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = SIGTRAP;
	si.si_code = TRAP_BRKPT;
	ks.handler(SIGTRAP, &si, &uc);
}

START_TEST(bp_untagged_db_counted)
{
	struct watch_session s;
	struct watch_breakpoint_stats before, after;
	long other = 0;
	if (bp_start(&s, &bp_word))
		return;
	watch_breakpoint_stats(&before);
	untagged_db_after(ut_after_load, &bp_word);
	untagged_db_after(ut_after_store, &bp_word);
	untagged_db_after(ut_after_rmw, &bp_word);
	/* Not the word: a real icebp, the application's (here its handler). */
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = app_trap_handler;
	ck_assert_int_eq(sigaction(SIGTRAP, &sa, &old), 0);
	untagged_db_after(ut_after_load, &other);
	ck_assert_int_eq(sigaction(SIGTRAP, &old, NULL), 0);
	struct watch_counts c = bp_stop(&s);
	watch_breakpoint_stats(&after);
	ck_assert_int_eq(app_traps, 1);
	ck_assert_uint_eq(c.loads, 2);  /* the load and the read-modify-write's */
	ck_assert_uint_eq(c.stores, 2); /* the store and the read-modify-write's */
	ck_assert_uint_eq(after.untagged - before.untagged, 3);
	ck_assert_uint_eq(after.undetermined - before.undetermined, 0);
}
END_TEST

/* Code no symbol covers (copied into a page of its own): the candidates come
 * from the backward scan, and must still agree. */
START_TEST(bp_code_without_symbol)
{
	/* addq $1,(%rdi); movq %rsi,(%rdi); ret */
	static const uint8_t blob[] = { 0x48, 0x83, 0x07, 0x01, 0x48, 0x89, 0x37, 0xc3 };
	uint8_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(page, MAP_FAILED);
	memcpy(page + 64, blob, sizeof blob);
	ck_assert_int_eq(mprotect(page, 4096, PROT_READ | PROT_EXEC), 0);
	void (*fn)(long *, long) = (void (*)(long *, long))(void *)(page + 64);
	struct watch_session s;
	struct watch_breakpoint_stats before, after;
	if (bp_start(&s, &bp_word)) {
		munmap(page, 4096);
		return;
	}
	watch_breakpoint_stats(&before);
	for (long k = 0; k < 30; k++)
		fn(&bp_word, k);
	struct watch_counts c = bp_stop(&s);
	watch_breakpoint_stats(&after);
	munmap(page, 4096);
	ck_assert_uint_eq(c.stores, 60);
	ck_assert_uint_eq(c.loads, 30);
	ck_assert_uint_eq(after.by_scan - before.by_scan, 60);
	ck_assert_uint_eq(after.undetermined - before.undetermined, 0);
}
END_TEST

NOINLINE static void bp_store_loop(long *w, long n)
{
	for (long k = 0; k < n; k++)
		__asm__ volatile("movq %1, %0" : "=m"(*w) : "r"(k));
}

START_TEST(bp_cost_per_hit)
{
	struct watch_session s;
	enum { N = 20000 };
	if (bp_start(&s, &bp_word))
		return;
	uint64_t t0 = ns_now();
	bp_store_loop(&bp_word, N);
	uint64_t t = ns_now() - t0;
	struct watch_counts c = bp_stop(&s);
	ck_assert_uint_eq(c.stores, N);
	ck_assert_uint_eq(c.loads, 0);
	printf("breakpoint cost: %.0f ns per store hit (%d stores into the watched word)\n", (double)t / N, N);
}
END_TEST

/* An instruction range reaching past the code into a hole (an Itanium
 * coarse cover past the end of .text): the mapped code counts exactly. */
START_TEST(code_range_reaching_into_a_hole)
{
	struct watch_session s;
	char why[WATCH_ERRLEN] = "";
	code_setup();
	ck_assert_int_eq(munmap(code_pages + CODE_REP * 4096, 4096), 0);
	ck_assert(unmapped(code_pages + CODE_REP * 4096, code_pages + CODE_NPAGES * 4096));
	uintptr_t pair[1][2] = { { (uintptr_t)code_pages, (uintptr_t)code_pages + CODE_NPAGES * 4096 } };
	ck_assert_msg(code_try_start(&s, 1, pair, why) == 0, "%s", why);
	LOOP_FN(10);
	struct watch_counts c = watch_stop(&s);
	ck_assert_uint_eq(c.insns, 3 * 10 + 2);
	ck_assert_uint_eq(c.insns_pair[0], 3 * 10 + 2);

	/* no page of it mapped: refused */
	pair[0][0] = (uintptr_t)code_pages + CODE_REP * 4096;
	pair[0][1] = pair[0][0] + 64;
	ck_assert_int_eq(code_try_start(&s, 1, pair, why), -EINVAL);
	ck_assert_msg(strstr(why, "not mapped") != NULL, "%s", why);
	code_teardown();
}
END_TEST

/* "breakpoint" runs the breakpoint backend's cases, anything else (or
 * nothing) the page-trap backend's; each only where the mechanism probes
 * (heritage_probe.h) saw what it needs count, else exit 77 with the probe's
 * reason, so a dead mechanism is a skip and never a pass of a count check. */
static Suite *pagetrap_suite(int breakpoint)
{
	Suite *s = suite_create("pagetrap");
	TCase *tc;

	if (breakpoint) {
		tc = tcase_create("breakpoint");
		tcase_set_timeout(tc, 60);
		tcase_add_test(tc, bp_plain_stores_and_loads);
		tcase_add_test(tc, bp_read_modify_write_is_load_and_store);
		tcase_add_test(tc, bp_store_from_static_function);
		tcase_add_test(tc, bp_string_instructions);
		tcase_add_test(tc, bp_call_stores_return_address);
		tcase_add_test(tc, bp_code_without_symbol);
		tcase_add_test(tc, bp_untagged_db_counted);
		tcase_add_test(tc, bp_cost_per_hit);
		suite_add_tcase(s, tc);
		return s;
	}
	tc = tcase_create("single_thread");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, scalar_store_then_load_whole_array);
	tcase_add_test(tc, range_not_page_aligned);
	tcase_add_test(tc, read_and_reset_while_running);
	tcase_add_test(tc, avx2_vector_loads_and_stores);
	tcase_add_test(tc, read_modify_write_is_load_and_store);
	tcase_add_test(tc, straddling_and_misaligned_loads);
	tcase_add_test(tc, rep_string_iterations);
	tcase_add_test(tc, memcpy_into_range_is_deterministic);
	tcase_add_test(tc, fits_refuses_what_it_cannot_watch);
	tcase_add_test(tc, cost_per_trapped_access);
	suite_add_tcase(s, tc);

	tc = tcase_create("process");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, syscalls_into_watched_buffer_work_and_count_nothing);
	tcase_add_test(tc, four_threads_same_pages_exact);
	tcase_add_test(tc, other_threads_accesses_are_not_ours);
	tcase_add_test(tc, application_segv_handler_still_runs);
	tcase_add_test(tc, default_segv_still_kills);
	tcase_add_test(tc, fork_child_finds_pages_open);
	tcase_add_test(tc, pages_accessible_after_stop);
	tcase_add_test(tc, range_reaching_into_a_hole_counts_the_mapped_part);
	tcase_add_test(tc, range_across_a_hole_counts_both_sides);
	tcase_add_test(tc, page_mapped_into_the_hole_counts_from_the_next_start);
	tcase_add_test(tc, fits_refuses_bad_ranges_around_holes);
	suite_add_tcase(s, tc);

	tc = tcase_create("code");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, code_loop_counts_every_instruction_once);
	tcase_add_test(tc, code_calls_out_are_not_counted);
	tcase_add_test(tc, code_pairs_count_separately);
	tcase_add_test(tc, code_syscall_and_rep_string_in_range);
	tcase_add_test(tc, code_async_signals_wait_and_are_not_counted);
	tcase_add_test(tc, code_threads_count_only_their_own);
	tcase_add_test(tc, code_pages_given_back_in_fork_child_and_after_stop);
	tcase_add_test(tc, code_fits_refuses_what_it_cannot_step);
	tcase_add_test(tc, code_range_reaching_into_a_hole);
	suite_add_tcase(s, tc);

	return s;
}

int main(int argc, char **argv)
{
	int breakpoint = argc > 1 && strcmp(argv[1], "breakpoint") == 0;
	static const enum heritage_mech trap_needs[] = { HERITAGE_MECH_SINGLE_STEP, HERITAGE_MECH_PAGETRAP };
	static const enum heritage_mech bp_needs[] = { HERITAGE_MECH_BREAKPOINT };
	const enum heritage_mech *needs = breakpoint ? bp_needs : trap_needs;
	size_t nneeds = breakpoint ? 1 : 2;

	for (size_t i = 0; i < nneeds; i++) {
		char why[512];
		if (heritage_probe_explain(needs[i], why, sizeof why) != 0) {
			printf("test_pagetrap %s: skipped: %s\n", breakpoint ? "breakpoint" : "traps", why);
			return 77;
		}
	}
	SRunner *sr = srunner_create(pagetrap_suite(breakpoint));
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
