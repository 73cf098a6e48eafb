/*
 * Unit tests of the page-trap backend's code ranges (src/watch/watch_pagetrap.c,
 * "Code ranges"): routines of known instruction counts, one per page, stepped
 * while inside the watched pages; every count must match exactly.
 */
#include "watch_test.h"

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

/* A coarse cover across a page boundary reaches non-executable pages (a
 * PIE's headers, .rodata, .data): they hold no instruction and count 0; the
 * code pages count exactly, the data page stays as it was (readable,
 * writable, not a code run: a data range may still watch it). */
START_TEST(code_range_reaching_into_data_pages)
{
	struct watch_session s;
	char why[WATCH_ERRLEN] = "", perms[4];
	code_setup();
	unsigned char *data = code_pages + CODE_SYS * 4096;
	ck_assert_int_eq(mprotect(data, 4096, PROT_READ | PROT_WRITE), 0);
	uintptr_t pair[1][2] = { { (uintptr_t)code_pages, (uintptr_t)code_pages + CODE_NPAGES * 4096 } };
	ck_assert_msg(code_try_start(&s, 1, pair, why) == 0, "%s", why);
	page_perms((uintptr_t)data, perms);
	ck_assert_str_eq(perms, "rw-");
	ck_assert_int_eq(watch_pages_code_overlap((uintptr_t)data, (uintptr_t)data + 4096), 0);
	data[100] = 7; /* not a fault, not an instruction */
	LOOP_FN(10);
	struct watch_counts c = watch_stop(&s);
	ck_assert_uint_eq(c.insns, 3 * 10 + 2);
	ck_assert_uint_eq(c.insns_pair[0], 3 * 10 + 2);

	/* no executable page in it: refused */
	pair[0][0] = (uintptr_t)data;
	pair[0][1] = (uintptr_t)data + 64;
	ck_assert_int_eq(code_try_start(&s, 1, pair, why), -EINVAL);
	ck_assert_msg(strstr(why, "not executable") != NULL, "%s", why);
	code_teardown();
}
END_TEST

/* "breakpoint" runs the breakpoint backend's cases, anything else (or
 * nothing) the page-trap backend's; each only where the mechanism probes
 * (heritage_probe.h) saw what it needs count, else exit 77 with the probe's
 * reason, so a dead mechanism is a skip and never a pass of a count check. */

static Suite *pagetrap_code_suite(void)
{
	Suite *s = suite_create("pagetrap_code");
	TCase *tc = tcase_create("code");
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
	tcase_add_test(tc, code_range_reaching_into_data_pages);
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
			printf("test_pagetrap_code: skipped: %s\n", why);
			return 77;
		}
	}
	SRunner *sr = srunner_create(pagetrap_code_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
