/*
 * Unit tests of the page-trap backend (src/watch/watch_pagetrap.c) on data
 * ranges: every workload has a known number of load and store instructions
 * (or rep iterations), and the counts must match exactly.  Code ranges are
 * test_pagetrap_code.c's, the breakpoint backend test_breakpoint.c's.
 */
#include "watch_test.h"
#include "watch/watch_park.h"
#include "sanitize_test.h"

/* ---- single thread -------------------------------------------------------- */

START_TEST(scalar_store_then_load_whole_array)
{
	int *a = watched_alloc(N_INTS * sizeof *a);
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
	int *a = watched_alloc(N_INTS * sizeof *a);
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
	int *a = watched_alloc(N_INTS * sizeof *a);
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
	int *a = watched_alloc(4096 * sizeof *a);
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
	int *a = watched_alloc(N_INTS * sizeof *a);
	memset(a, 0, N_INTS * sizeof *a);
	char *pattern = watched_alloc(8192);
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
	/* A park that timed out (a thread not scheduled within 200 ms) is no
	 * error by itself: the thread takes the pending park signal before it
	 * runs again, so it cannot touch a page while it is open, and the exact
	 * counts above are the check.  Under a load average of 8-11 on the two
	 * vCPUs (CI beside other builds) 2 runs of 10 had one, with the code of
	 * before issue 15 as with today's; the counts were exact in all. */
	struct watch_pagetrap_stats st;
	watch_pagetrap_stats(&st);
	if (st.park_timeouts)
		printf("four_threads_same_pages_exact: %llu park(s) timed out (a thread not scheduled in 200 ms); "
		       "counts exact\n", (unsigned long long)st.park_timeouts);
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
	int *a = watched_alloc(4096 * sizeof *a);
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

/* A thread that blocks every signal for its life (a sigwait() thread, imc's
 * engine thread) can never be parked: a window must not wait the park
 * timeout (200 ms) for it.  It did, every window: 8 page-trap threads beside
 * imc's engine thread made 46 windows in 8 s (ctests/stress). */
static int blocker_pipe[2];

static void *all_signals_blocked(void *arg)
{
	(void)arg;
	char b;
	ssize_t n = read(blocker_pipe[0], &b, 1); /* until told */
	(void)n;
	return NULL;
}

START_TEST(thread_blocking_every_signal_is_not_waited_for)
{
	int *a = watched_alloc(4096 * sizeof *a);
	ck_assert_int_eq(pipe(blocker_pipe), 0);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	pthread_create(&t, NULL, all_signals_blocked, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	struct watch_pagetrap_stats st0, st1;
	watch_pagetrap_stats(&st0);
	uint64_t unparkable0 = watch_park_unparkable();
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct watch_session s;
	watch_start(&s, a, a + 4096);
	store_pass(a, 0, 50);
	struct watch_counts c = watch_stop(&s);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	watch_pagetrap_stats(&st1);
	ck_assert_uint_eq(c.stores, 50);
	ck_assert_uint_eq(st1.park_timeouts, st0.park_timeouts);
	ck_assert_uint_ge(watch_park_unparkable() - unparkable0, 1);
	double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	/* 50 windows: 10 s at the timeout, about 1 ms each at the poll; the
	 * bound leaves room for a machine loaded as CI's is (load 8-16). */
	ck_assert_msg(took < 5.0, "50 stores took %.3f s", took);
	ck_assert_int_eq(write(blocker_pipe[1], "x", 1), 1);
	pthread_join(t, NULL);
	close(blocker_pipe[0]);
	close(blocker_pipe[1]);
	free(a);
}
END_TEST

/* A thread that answers the parks handing out signal stacks late (not
 * scheduled for the park's 200 ms on a loaded machine) while its own stack
 * is watched: the start used to go on without it, and its next fault on its
 * stack, or the return from the late park handler, got the process killed
 * (range_stack thread in one CI pass; every time with the bound at 0).  With
 * the bound at 0 now, the start either hands the stack over on a later try
 * or fails saying why; the process lives either way. */
static long *volatile late_arr;
static _Atomic int late_stop;
static _Atomic long late_calls;
static pthread_barrier_t late_ready;

NOINLINE static long late_stack_user(long depth)
{
	volatile long pad[64];
	pad[0] = depth;
	pad[63] = depth;
	return depth ? late_stack_user(depth - 1) + pad[0] : pad[63];
}

static void *late_thread(void *arg)
{
	long arr[1024];
	(void)arg;
	memset(arr, 0, sizeof arr);
	late_arr = arr;
	pthread_barrier_wait(&late_ready);
	while (!late_stop) {
		late_stack_user(8); /* below arr: on the lowest watched page */
		late_calls++;
		sched_yield();
	}
	__asm__ volatile("" : : "r"(arr) : "memory");
	return NULL;
}

/* Stores 2048 ints into the other thread's array, then lets it run on its
 * watched stack for 20 calls; returns what the session counted. */
static struct watch_counts late_session(struct watch_session *s)
{
	store_pass((volatile int *)late_arr, 0, 2048);
	long first = late_calls;
	for (int i = 0; i < 2000 && late_calls < first + 20; i++)
		usleep(1000);
	return watch_stop(s);
}

START_TEST(thread_late_to_its_signal_stack_is_not_left_without_one)
{
	pthread_t t;
	pthread_barrier_init(&late_ready, NULL, 2);
	pthread_create(&t, NULL, late_thread, NULL);
	pthread_barrier_wait(&late_ready);
	uintptr_t lo = (uintptr_t)late_arr, hi = lo + 1024 * sizeof(long);

	struct watch_session s;
	memset(&s, 0, sizeof s);
	s.req.want_data = 1;
	s.req.ndata = 1;
	s.req.data[0].start = lo;
	s.req.data[0].end = hi;
	char why[WATCH_ERRLEN] = "";
	int64_t bound = watch_park_set_timeout_ns(0);
	uint64_t t0 = ns_now();
	int r = ops->start(&s, why, sizeof why);
	uint64_t took = ns_now() - t0;
	watch_park_set_timeout_ns(bound);
	if (r == 0) {
		struct watch_counts c = late_session(&s);
		ck_assert_uint_eq(c.stores, 2048);
		fprintf(stderr, "  parks at once: started in %.3f s, 2048 stores counted\n", (double)took / 1e9);
	} else {
		ck_assert_msg(r == -EAGAIN && strstr(why, "try the start again"), "start: %d %s", r, why);
		ck_assert(!range_has_prot_none((const void *)lo, (const void *)hi));
		fprintf(stderr, "  parks at once: refused after %.3f s: %s\n", (double)took / 1e9, why);
	}
	watch_start_at(&s, lo, hi); /* the default bound: the thread answers */
	struct watch_counts c = late_session(&s);
	ck_assert_uint_eq(c.stores, 2048);
	late_stop = 1;
	pthread_join(t, NULL);
	pthread_barrier_destroy(&late_ready);
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

	int *a = watched_alloc(4096 * sizeof *a);
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
	int *a = watched_alloc(4096 * sizeof *a);
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
	int *a = watched_alloc(N_INTS * sizeof *a);
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
	int *a = watched_alloc(2 * N_INTS * sizeof *a);
	int *b = a + N_INTS; /* after a: s2's range spans both */
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
}
END_TEST


/* ---- ranges reaching into unmapped memory --------------------------------- */

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

	struct watch_pagetrap_stats *own = watched_alloc(sizeof *own); /* a heap address: fine */
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
	int *a = watched_alloc(N_INTS * sizeof *a);
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


static Suite *pagetrap_suite(void)
{
	Suite *s = suite_create("pagetrap");
	TCase *tc = tcase_create("single_thread");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, scalar_store_then_load_whole_array);
	tcase_add_test(tc, thread_blocking_every_signal_is_not_waited_for);
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
	suite_add_tcase(s, tc);

	tc = tcase_create("process");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, syscalls_into_watched_buffer_work_and_count_nothing);
	tcase_add_test_unsanitized(tc, four_threads_same_pages_exact,
	                           "threads slowed by ASan miss the park deadline: park_timeouts 1 to 4 in 3 of 12 runs");
	tcase_add_test(tc, other_threads_accesses_are_not_ours);
	tcase_add_test(tc, thread_late_to_its_signal_stack_is_not_left_without_one);
	tcase_add_test(tc, application_segv_handler_still_runs);
	tcase_add_test(tc, default_segv_still_kills);
	tcase_add_test(tc, fork_child_finds_pages_open);
	tcase_add_test(tc, pages_accessible_after_stop);
	tcase_add_test(tc, range_reaching_into_a_hole_counts_the_mapped_part);
	tcase_add_test(tc, range_across_a_hole_counts_both_sides);
	tcase_add_test(tc, page_mapped_into_the_hole_counts_from_the_next_start);
	tcase_add_test(tc, fits_refuses_bad_ranges_around_holes);
	suite_add_tcase(s, tc);
	return s;
}

/* Run only where the mechanism probes (heritage_probe.h) saw what the
 * backend needs count, else exit 77 with the probe's reason, so a dead
 * mechanism is a skip and never a pass of a count check. */
int main(void)
{
	static const enum heritage_mech needs[] = { HERITAGE_MECH_SINGLE_STEP, HERITAGE_MECH_PAGETRAP };

	for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++) {
		char why[512];
		if (heritage_probe_explain(needs[i], why, sizeof why) != 0) {
			printf("test_pagetrap: skipped: %s\n", why);
			return 77;
		}
	}
	SRunner *sr = srunner_create(pagetrap_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
