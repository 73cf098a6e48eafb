/*
 * Unit tests of the breakpoint backend (src/watch/watch_breakpoint.c).
 */
#include "watch_test.h"

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


static Suite *breakpoint_suite(void)
{
	Suite *s = suite_create("breakpoint");
	TCase *tc = tcase_create("breakpoint");
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

/* Run only where the mechanism probes (heritage_probe.h) saw what the
 * backend needs count, else exit 77 with the probe's reason, so a dead
 * mechanism is a skip and never a pass of a count check. */
int main(void)
{
	static const enum heritage_mech needs[] = { HERITAGE_MECH_BREAKPOINT };

	for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++) {
		char why[512];
		if (heritage_probe_explain(needs[i], why, sizeof why) != 0) {
			printf("test_breakpoint: skipped: %s\n", why);
			return 77;
		}
	}
	SRunner *sr = srunner_create(breakpoint_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
