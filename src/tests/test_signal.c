/*
 * Unit tests of the signal engine (src/watch/watch_signal.c) alone: the
 * client table's order, what a client's answer does, and the chaining to
 * the application's handler installed with sigaction() after the engine
 * (SIG_IGN, SIG_DFL, SA_RESETHAND); watch_step_one_ex() from an
 * asynchronous handler, completed or cancelled by a fault.  Each test runs in its own process
 * (Check forks), so each starts with an empty table.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "watch/watch_signal.h"
#include "common/heritage_probe.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* What the clients and the application's handlers saw, in order. */
static char order[64];
static unsigned norder;
static unsigned app_calls;
static int handled_seen[8];

static void note(char who, const struct watch_signal_event *ev)
{
	if (norder < sizeof order - 1) {
		handled_seen[norder % 8] = ev ? ev->handled : -1;
		order[norder++] = who;
	}
}

static enum watch_claim client_a(struct watch_signal_event *ev, void *arg)
{
	note('A', ev);
	return (enum watch_claim)(intptr_t)arg;
}

static enum watch_claim client_b(struct watch_signal_event *ev, void *arg)
{
	note('B', ev);
	return (enum watch_claim)(intptr_t)arg;
}

static enum watch_claim client_c(struct watch_signal_event *ev, void *arg)
{
	note('C', ev);
	return (enum watch_claim)(intptr_t)arg;
}

static void app_handler(int sig)
{
	(void)sig;
	app_calls++;
	note('P', NULL);
}

static void start_engine(void)
{
	char why[256] = "";
	ck_assert_msg(watch_signal_start("test", why, sizeof why) == 0, "%s", why);
}

static void add(int sig, int prio, enum watch_claim (*fn)(struct watch_signal_event *, void *), enum watch_claim r)
{
	char why[256] = "";
	struct watch_signal_client c = { .name = "test", .sig = sig, .priority = prio, .fn = fn,
	                                 .arg = (void *)(intptr_t)r };
	ck_assert_msg(watch_signal_register(&c, why, sizeof why) == 0, "%s", why);
}

static void app_install(int sig, void (*handler)(int), int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(sig, &sa, NULL), 0);
}

/* A page that faults on a store (SEGV_ACCERR), and the application handler
 * that makes it writable so the store completes on return. */
static volatile int *ro_page;

static void app_fix_fault(int sig)
{
	(void)sig;
	app_calls++;
	note('P', NULL);
	mprotect((void *)ro_page, 4096, PROT_READ | PROT_WRITE);
}

static void map_read_only(void)
{
	void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	ro_page = p;
}

START_TEST(priorities_order_the_clients)
{
	start_engine();
	/* Registered out of order: C (60) first, then A (70), then B (65). */
	add(SIGTRAP, 60, client_c, WATCH_NOT_MINE);
	add(SIGTRAP, 70, client_a, WATCH_MINE);
	add(SIGTRAP, 65, client_b, WATCH_NOT_MINE);
	app_install(SIGTRAP, app_handler, 0);
	raise(SIGTRAP);
	order[norder] = '\0';
	/* Lowest priority first; A takes it, so the application never sees it. */
	ck_assert_str_eq(order, "CBA");
	ck_assert_uint_eq(app_calls, 0);
}
END_TEST

START_TEST(not_mine_falls_through_to_the_application)
{
	start_engine();
	add(SIGSEGV, 50, client_a, WATCH_NOT_MINE);
	map_read_only();
	/* Installed after the engine: recorded, not given to the kernel. */
	app_install(SIGSEGV, app_fix_fault, 0);
	struct { void *handler; unsigned long flags; void *restorer; uint64_t mask; } k;
	ck_assert_int_eq(syscall(SYS_rt_sigaction, SIGSEGV, NULL, &k, 8), 0);
	ck_assert_ptr_ne(k.handler, (void *)app_fix_fault);
	ck_assert_ptr_ne(k.handler, (void *)SIG_DFL);

	const int stores = 3;
	for (int i = 0; i < stores; i++) {
		ro_page[i] = i + 1;
		mprotect((void *)ro_page, 4096, PROT_READ); /* fault again next time */
	}
	order[norder] = '\0';
	/* Each store faults once: the client declines, the application fixes. */
	ck_assert_uint_eq(app_calls, (unsigned)stores);
	ck_assert_str_eq(order, "APAPAP");
	ck_assert_int_eq(ro_page[0] + ro_page[1] + ro_page[2], 1 + 2 + 3);
}
END_TEST

START_TEST(ignored_kill_is_ignored)
{
	start_engine();
	add(SIGTRAP, 50, client_a, WATCH_NOT_MINE);
	app_install(SIGTRAP, SIG_IGN, 0);
	raise(SIGTRAP);
	raise(SIGTRAP);
	/* Sent with kill (si_code <= 0): SIG_IGN means ignored, the client
	 * having seen each of the two. */
	order[norder] = '\0';
	ck_assert_str_eq(order, "AA");
}
END_TEST

/* A fault cannot be ignored: the default action kills the process. */
START_TEST(ignored_fault_is_fatal)
{
	start_engine();
	add(SIGSEGV, 50, client_a, WATCH_NOT_MINE);
	map_read_only();
	app_install(SIGSEGV, SIG_IGN, 0);
	ro_page[0] = 1;
}
END_TEST

START_TEST(default_fault_is_fatal)
{
	start_engine();
	add(SIGSEGV, 50, client_a, WATCH_NOT_MINE);
	map_read_only();
	ro_page[0] = 1;
}
END_TEST

START_TEST(resethand_runs_once)
{
	start_engine();
	add(SIGTRAP, 50, client_a, WATCH_NOT_MINE);
	app_install(SIGTRAP, app_handler, SA_RESETHAND);
	raise(SIGTRAP);
	ck_assert_uint_eq(app_calls, 1);
	struct sigaction now;
	ck_assert_int_eq(sigaction(SIGTRAP, NULL, &now), 0);
	ck_assert_ptr_eq((void *)now.sa_handler, (void *)SIG_DFL);
}
END_TEST

/* After SA_RESETHAND the second one takes the default action: death. */
START_TEST(resethand_second_is_default)
{
	start_engine();
	app_install(SIGTRAP, app_handler, SA_RESETHAND);
	raise(SIGTRAP);
	ck_assert_uint_eq(app_calls, 1);
	raise(SIGTRAP);
}
END_TEST

START_TEST(two_clients_one_signal)
{
	start_engine();
	/* Equal priorities: registration order. */
	add(SIGTRAP, 50, client_a, WATCH_NOT_MINE);
	add(SIGTRAP, 50, client_b, WATCH_MINE);
	app_install(SIGTRAP, app_handler, 0);
	const int n = 5;
	for (int i = 0; i < n; i++)
		raise(SIGTRAP);
	order[norder] = '\0';
	ck_assert_str_eq(order, "ABABABABAB");
	ck_assert_uint_eq(app_calls, 0);
}
END_TEST

START_TEST(pass_on_reaches_later_clients_not_the_application)
{
	start_engine();
	add(SIGTRAP, 50, client_a, WATCH_MINE_PASS_ON);
	add(SIGTRAP, 60, client_b, WATCH_NOT_MINE);
	app_install(SIGTRAP, app_handler, 0);
	raise(SIGTRAP);
	order[norder] = '\0';
	ck_assert_str_eq(order, "AB");
	ck_assert_int_eq(handled_seen[0], 0); /* A saw it first */
	ck_assert_int_eq(handled_seen[1], 1); /* B after A passed it on */
	ck_assert_uint_eq(app_calls, 0);
}
END_TEST

START_TEST(other_signals_are_not_offered)
{
	start_engine();
	add(SIGSEGV, 50, client_a, WATCH_MINE);
	add(SIGTRAP, 50, client_b, WATCH_NOT_MINE);
	app_install(SIGTRAP, app_handler, 0);
	raise(SIGTRAP);
	order[norder] = '\0';
	ck_assert_str_eq(order, "BP");
}
END_TEST

START_TEST(register_refuses_bad_clients)
{
	char why[256] = "";
	struct watch_signal_client c = { .name = "bad", .sig = SIGUSR1, .priority = 1, .fn = client_a };
	ck_assert_int_eq(watch_signal_register(&c, why, sizeof why), -EINVAL);
	c.sig = SIGTRAP;
	c.fn = NULL;
	ck_assert_int_eq(watch_signal_register(&c, why, sizeof why), -EINVAL);
	/* The engine's own two (watch_step_one, stray TF) take two places. */
	start_engine();
	c.fn = client_a;
	int added = 0;
	while (watch_signal_register(&c, why, sizeof why) == 0)
		added++;
	ck_assert_int_eq(added, WATCH_SIGNAL_MAX_CLIENTS - 2);
}
END_TEST

/* ---- watch_step_one_ex from an asynchronous handler -------------------------
 * tgkill(pid, tid, sig) whose signal is delivered on the way back from the
 * system call, with RIP at the ud2 after it; the application's SIGILL
 * handler resumes at sig_ud2_next. */
void sig_ud2_after_kill(long pid, long tid, long sig);
extern char sig_ud2_insn[], sig_ud2_next[];
__asm__(".text\n"
        ".globl sig_ud2_after_kill, sig_ud2_insn, sig_ud2_next\n"
        "sig_ud2_after_kill:\n"
        "	mov $234, %eax\n" /* SYS_tgkill */
        "	syscall\n"
        "sig_ud2_insn:\n"
        "	ud2\n"
        "sig_ud2_next:\n"
        "	ret\n");

static unsigned steps_done, steps_faulted, app_ill, app_trap;
static uintptr_t stepped_from, stepped_to;
static int fault_sig;

static void on_step_done(void *arg, ucontext_t *uc)
{
	(void)arg;
	steps_done++;
	stepped_to = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
}

static void on_step_fault(void *arg, int sig, siginfo_t *si, ucontext_t *uc)
{
	(void)arg;
	(void)si;
	(void)uc;
	steps_faulted++;
	fault_sig = sig;
}

/* The asynchronous handler: steps the interrupted instruction. */
static void async_stepper(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ctx;
	stepped_from = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	ck_assert_int_eq(watch_step_one_ex(uc, on_step_done, on_step_fault, NULL), 0);
}

static void app_on_ill(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)si;
	greg_t *g = ((ucontext_t *)ctx)->uc_mcontext.gregs;
	app_ill++;
	if (g[REG_RIP] == (greg_t)(uintptr_t)sig_ud2_insn)
		g[REG_RIP] = (greg_t)(uintptr_t)sig_ud2_next;
}

static void app_on_trap(int sig)
{
	(void)sig;
	app_trap++;
}

/* Stepping needs the trap flag to work here (the probe says why not). */
static int single_step_works(void)
{
	const struct heritage_probe_result *r = heritage_probe(HERITAGE_MECH_SINGLE_STEP);
	if (r->state != HERITAGE_PROBE_WORKS)
		fprintf(stderr, "watch_step_one_ex tests skipped: single_step: %s\n", r->evidence);
	return r->state == HERITAGE_PROBE_WORKS;
}

static void install_async_stepper(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = async_stepper;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
}

static int usr1_blocked(void)
{
	sigset_t cur;
	sigprocmask(SIG_SETMASK, NULL, &cur);
	return sigismember(&cur, SIGUSR1);
}

START_TEST(step_one_ex_from_an_async_handler_completes)
{
	if (!single_step_works())
		return;
	char why[256] = "";
	ck_assert_msg(watch_signal_faults_start(why, sizeof why) == 0, "%s", why);
	watch_signal_ensure_altstack();
	app_install(SIGTRAP, app_on_trap, 0);
	install_async_stepper();
	for (int i = 0; i < 10; i++)
		syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGUSR1);
	ck_assert_uint_eq(steps_done, 10);
	ck_assert_uint_eq(steps_faulted, 0);
	ck_assert(stepped_to > stepped_from && stepped_to - stepped_from <= 15);
	ck_assert(!usr1_blocked());
	ck_assert_uint_eq(app_trap, 0);
}
END_TEST

/* The stepped instruction faults: the step is cancelled (fault(), not
 * done()), the application's handler, installed before the engine took
 * SIGILL, runs and moves RIP on; no step trap follows and the mask the
 * step blocked is the application's again. */
START_TEST(step_one_ex_fault_goes_to_the_application)
{
	if (!single_step_works())
		return;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = app_on_ill;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGILL, &sa, NULL), 0);
	char why[256] = "";
	ck_assert_msg(watch_signal_faults_start(why, sizeof why) == 0, "%s", why);
	watch_signal_ensure_altstack();
	app_install(SIGTRAP, app_on_trap, 0);
	install_async_stepper();
	for (int i = 0; i < 10; i++)
		sig_ud2_after_kill(getpid(), syscall(SYS_gettid), SIGUSR1);
	ck_assert_uint_eq(stepped_from, (uintptr_t)sig_ud2_insn);
	ck_assert_uint_eq(steps_faulted, 10);
	ck_assert_int_eq(fault_sig, SIGILL);
	ck_assert_uint_eq(steps_done, 0);
	ck_assert_uint_eq(app_ill, 10);
	ck_assert(!usr1_blocked());
	/* And the application still sees its SIGILL as before: oldact. */
	struct sigaction old;
	ck_assert_int_eq(sigaction(SIGILL, NULL, &old), 0);
	ck_assert_ptr_eq((void *)old.sa_sigaction, (void *)app_on_ill);
	/* A step after the faults completes normally: nothing was left armed. */
	syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGUSR1);
	ck_assert_uint_eq(steps_done, 1);
	ck_assert_uint_eq(app_trap, 0);
}
END_TEST

/* done() arms the next step: a chain of four instructions from one
 * asynchronous signal ends four instructions on, with no step trap left
 * for the application and the mask given back. */
void sig_nops_after_kill(long pid, long tid, long sig);
extern char sig_nops_first[], sig_nops_fourth_next[];
__asm__(".text\n"
        ".globl sig_nops_after_kill, sig_nops_first, sig_nops_fourth_next\n"
        "sig_nops_after_kill:\n"
        "	mov $234, %eax\n" /* SYS_tgkill */
        "	syscall\n"
        "sig_nops_first:\n"
        "	nop\n"
        "	xchg %ax, %ax\n" /* 2 bytes */
        "	nopl (%rax)\n"   /* 3 bytes */
        "	nopl 0(%rax)\n"  /* 4 bytes */
        "sig_nops_fourth_next:\n"
        "	nop\n"
        "	ret\n");

static unsigned chain_left;

static void on_chain_done(void *arg, ucontext_t *uc)
{
	steps_done++;
	stepped_to = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	if (--chain_left > 0)
		ck_assert_int_eq(watch_step_one_ex(uc, on_chain_done, on_step_fault, arg), 0);
}

static void async_chain_stepper(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ctx;
	stepped_from = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	chain_left = 4;
	ck_assert_int_eq(watch_step_one_ex(uc, on_chain_done, on_step_fault, NULL), 0);
}

START_TEST(step_one_ex_chains_from_done)
{
	if (!single_step_works())
		return;
	char why[256] = "";
	ck_assert_msg(watch_signal_faults_start(why, sizeof why) == 0, "%s", why);
	watch_signal_ensure_altstack();
	app_install(SIGTRAP, app_on_trap, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = async_chain_stepper;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	for (int i = 0; i < 5; i++) {
		sig_nops_after_kill(getpid(), syscall(SYS_gettid), SIGUSR1);
		ck_assert_uint_eq(stepped_from, (uintptr_t)sig_nops_first);
		ck_assert_uint_eq(stepped_to, (uintptr_t)sig_nops_fourth_next);
	}
	ck_assert_uint_eq(steps_done, 20);
	ck_assert_uint_eq(steps_faulted, 0);
	ck_assert(!usr1_blocked());
	ck_assert_uint_eq(app_trap, 0);
}
END_TEST

static Suite *signal_suite(void)
{
	Suite *s = suite_create("signal engine");
	TCase *tc = tcase_create("clients");
	tcase_add_test(tc, priorities_order_the_clients);
	tcase_add_test(tc, not_mine_falls_through_to_the_application);
	tcase_add_test(tc, ignored_kill_is_ignored);
	tcase_add_test_raise_signal(tc, ignored_fault_is_fatal, SIGSEGV);
	tcase_add_test_raise_signal(tc, default_fault_is_fatal, SIGSEGV);
	tcase_add_test(tc, resethand_runs_once);
	tcase_add_test_raise_signal(tc, resethand_second_is_default, SIGTRAP);
	tcase_add_test(tc, two_clients_one_signal);
	tcase_add_test(tc, pass_on_reaches_later_clients_not_the_application);
	tcase_add_test(tc, other_signals_are_not_offered);
	tcase_add_test(tc, register_refuses_bad_clients);
	tcase_add_test(tc, step_one_ex_from_an_async_handler_completes);
	tcase_add_test(tc, step_one_ex_fault_goes_to_the_application);
	tcase_add_test(tc, step_one_ex_chains_from_done);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(signal_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
