/*
 * Unit tests of the block-trap backend (src/watch/watch_blocktrap.c) and its
 * out-of-line helpers (watch_x86_xol_*): the leaders and pieces found in
 * routines of known shape, the RIP-relative re-basing of a displaced
 * instruction, the emulation of control transfers on a ucontext, and whole
 * sessions counting those routines exactly.
 */
#include "watch_test.h"
#include "watch/watch_blocktrap.h"
#include "watch/watch_x86.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <ucontext.h>

/* Routines with unwind information (the backend finds functions by their
 * FDEs), in this program's text.
 *
 * bt_loop(n), n >= 1: 3n + 2 instructions.  Pieces: [mov] (the loop head
 * is a jump target), [add, dec, jnz], [ret].
 * bt_call(n, fn), n >= 1: 3n + 7 of its own; the call's return address is a
 * leader, fn's instructions are outside.
 * bt_diamond(x): an if/else, both arms rejoin: 4 or 5 instructions.
 * bt_jtable(): an indirect jump through a register (as a jump table's)
 * into the middle of a block: lea, jmp, then 3 of the 4 instructions of the
 * block after it: 5. */
long bt_loop(long n);
long bt_call(long n, void (*fn)(void));
long bt_diamond(long x);
long bt_jtable(long i);
long bt_lsda(void);
extern char bt_lsda_pad[], bt_lsda_end[];
extern char bt_loop_head[], bt_loop_ret[], bt_loop_end[], bt_call_end[], bt_diamond_end[], bt_jtable_end[];
__asm__(".text\n"
        ".balign 64\n"
        ".globl bt_loop\n"
        ".type bt_loop, @function\n"
        "bt_loop:\n"
        "	.cfi_startproc\n"
        "	mov %rdi, %rcx\n"
        "bt_loop_head:\n"
        "	add $1, %rax\n"
        "	dec %rcx\n"
        "	jnz bt_loop_head\n"
        "bt_loop_ret:\n"
        "	ret\n"
        "	.cfi_endproc\n"
        "bt_loop_end:\n"
        ".size bt_loop, . - bt_loop\n"
        ".balign 64\n"
        ".globl bt_call\n"
        ".type bt_call, @function\n"
        "bt_call:\n"
        "	.cfi_startproc\n"
        "	push %rbx\n"
        "	.cfi_adjust_cfa_offset 8\n"
        "	push %r12\n"
        "	.cfi_adjust_cfa_offset 8\n"
        "	mov %rdi, %rbx\n"
        "	mov %rsi, %r12\n"
        "2:	call *%r12\n"
        "	dec %rbx\n"
        "	jnz 2b\n"
        "	pop %r12\n"
        "	.cfi_adjust_cfa_offset -8\n"
        "	pop %rbx\n"
        "	.cfi_adjust_cfa_offset -8\n"
        "	ret\n"
        "	.cfi_endproc\n"
        "bt_call_end:\n"
        ".size bt_call, . - bt_call\n"
        ".balign 64\n"
        ".globl bt_diamond\n"
        ".type bt_diamond, @function\n"
        "bt_diamond:\n"
        "	.cfi_startproc\n"
        "	test %rdi, %rdi\n"
        "	je 3f\n"
        "	mov $1, %eax\n"
        "	jmp 4f\n"
        "3:	mov $2, %eax\n"
        "4:	ret\n"
        "	.cfi_endproc\n"
        "bt_diamond_end:\n"
        ".size bt_diamond, . - bt_diamond\n"
        ".balign 64\n"
        ".globl bt_jtable\n"
        ".type bt_jtable, @function\n"
        "bt_jtable:\n"
        "	.cfi_startproc\n"
        "	lea 6f(%rip), %rax\n"
        "	jmp *%rax\n"
        "5:	nop\n"
        "6:	nop\n"
        "	nop\n"
        "	ret\n"
        "	.cfi_endproc\n"
        "bt_jtable_end:\n"
        ".size bt_jtable, . - bt_jtable\n"
        /* bt_lsda: a landing pad (as -fexceptions' cleanup code) in the
         * middle of what would be one block: the unwinder enters there. */
        ".balign 64\n"
        ".globl bt_lsda\n"
        ".type bt_lsda, @function\n"
        "bt_lsda:\n"
        "	.cfi_startproc\n"
        "	.cfi_lsda 0x1b, .Lbt_lsda_table\n"
        "	mov $1, %eax\n"
        "bt_lsda_pad:\n"
        "	add $2, %eax\n"
        "	ret\n"
        "	.cfi_endproc\n"
        "bt_lsda_end:\n"
        ".size bt_lsda, . - bt_lsda\n"
        ".pushsection .gcc_except_table, \"a\", @progbits\n"
        ".Lbt_lsda_table:\n"
        "	.byte 0xff\n" /* lpstart: the function's start */
        "	.byte 0xff\n" /* no type table */
        "	.byte 0x1\n"  /* call sites: uleb128 */
        "	.uleb128 .Lbt_cs_end - .Lbt_cs_begin\n"
        ".Lbt_cs_begin:\n"
        "	.uleb128 0\n"
        "	.uleb128 bt_lsda_pad - bt_lsda\n"
        "	.uleb128 bt_lsda_pad - bt_lsda\n"
        "	.uleb128 0\n"
        ".Lbt_cs_end:\n"
        ".popsection\n"
        ".balign 64\n");

static void nothing(void)
{
	__asm__ volatile("");
}

START_TEST(leaders_of_a_loop)
{
	struct watch_bt_plan plan;
	char why[WATCH_ERRLEN] = "";
	struct watch_interval r = { (uintptr_t)bt_loop, (uintptr_t)bt_loop_end };
	ck_assert_msg(watch_bt_analyse(&r, 1, &plan, why, sizeof why) == 0, "%s", why);
	ck_assert_uint_eq(plan.npiece, 3);
	ck_assert_uint_eq(plan.piece[0].pc, (uintptr_t)bt_loop);
	ck_assert_uint_eq(plan.piece[0].ninsn, 1);
	ck_assert_uint_eq(plan.piece[1].pc, (uintptr_t)bt_loop_head);
	ck_assert_uint_eq(plan.piece[1].ninsn, 3);
	ck_assert_uint_eq(plan.piece[2].pc, (uintptr_t)bt_loop_ret);
	ck_assert_uint_eq(plan.piece[2].ninsn, 1);
	watch_bt_plan_free(&plan);

	/* A range holding only the loop's dec: the loop's piece, whose leader is
	 * outside, still needs its trap; the others do not. */
	r = (struct watch_interval){ (uintptr_t)bt_loop_head + 4, (uintptr_t)bt_loop_head + 5 };
	ck_assert_msg(watch_bt_analyse(&r, 1, &plan, why, sizeof why) == 0, "%s", why);
	ck_assert_uint_eq(plan.npiece, 1);
	ck_assert_uint_eq(plan.piece[0].pc, (uintptr_t)bt_loop_head);
	ck_assert_uint_eq(plan.piece[0].ninsn, 3); /* all of them: sessions filter by their ranges */
	watch_bt_plan_free(&plan);
}
END_TEST

START_TEST(leaders_after_calls_and_at_joins)
{
	struct watch_bt_plan plan;
	char why[WATCH_ERRLEN] = "";
	struct watch_interval r = { (uintptr_t)bt_call, (uintptr_t)bt_call_end };
	ck_assert_msg(watch_bt_analyse(&r, 1, &plan, why, sizeof why) == 0, "%s", why);
	/* [push, push, mov, mov] [call] [dec, jnz] [pop, pop, ret] */
	ck_assert_uint_eq(plan.npiece, 4);
	ck_assert_uint_eq(plan.piece[0].ninsn, 4);
	ck_assert_uint_eq(plan.piece[1].ninsn, 1);
	ck_assert_uint_eq(plan.piece[2].ninsn, 2);
	ck_assert_uint_eq(plan.piece[3].ninsn, 3);
	watch_bt_plan_free(&plan);

	r = (struct watch_interval){ (uintptr_t)bt_diamond, (uintptr_t)bt_diamond_end };
	ck_assert_msg(watch_bt_analyse(&r, 1, &plan, why, sizeof why) == 0, "%s", why);
	/* [test, je] [mov, jmp] [mov] [ret] */
	ck_assert_uint_eq(plan.npiece, 4);
	ck_assert_uint_eq(plan.piece[0].ninsn, 2);
	ck_assert_uint_eq(plan.piece[1].ninsn, 2);
	ck_assert_uint_eq(plan.piece[2].ninsn, 1);
	ck_assert_uint_eq(plan.piece[3].ninsn, 1);
	watch_bt_plan_free(&plan);
}
END_TEST

START_TEST(landing_pads_are_leaders)
{
	struct watch_bt_plan plan;
	char why[WATCH_ERRLEN] = "";
	struct watch_interval r = { (uintptr_t)bt_lsda, (uintptr_t)bt_lsda_end };
	ck_assert_msg(watch_bt_analyse(&r, 1, &plan, why, sizeof why) == 0, "%s", why);
	/* [mov] [add, ret]: without the pad, one block. */
	ck_assert_uint_eq(plan.npiece, 2);
	ck_assert_uint_eq(plan.piece[1].pc, (uintptr_t)bt_lsda_pad);
	ck_assert_uint_eq(plan.piece[1].ninsn, 2);
	watch_bt_plan_free(&plan);
}
END_TEST

START_TEST(refuses_code_without_unwind_info)
{
	struct watch_bt_plan plan;
	char why[WATCH_ERRLEN] = "";
	struct watch_interval r = { (uintptr_t)bt_jtable, (uintptr_t)bt_jtable_end };
	/* A jump table's jump is a leader of its own: [lea] [jmp] [nop nop nop ret]. */
	ck_assert_msg(watch_bt_analyse(&r, 1, &plan, why, sizeof why) == 0, "%s", why);
	ck_assert_uint_eq(plan.npiece, 3);
	ck_assert_uint_eq(plan.piece[1].ijmp, 1);
	ck_assert_uint_eq(plan.piece[2].ninsn, 4);
	watch_bt_plan_free(&plan);

	/* The C library: every handler returns through its __restore_rt. */
	void *libc_fn = dlsym(RTLD_DEFAULT, "getpid");
	ck_assert_ptr_nonnull(libc_fn);
	r = (struct watch_interval){ (uintptr_t)libc_fn, (uintptr_t)libc_fn + 1 };
	ck_assert_int_eq(watch_bt_analyse(&r, 1, &plan, why, sizeof why), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(why, "C library"));

	/* An anonymous executable page: no FDE. */
	uint8_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	p[0] = 0x48; p[1] = 0x89; p[2] = 0xf8; p[3] = 0xc3; /* mov %rdi,%rax; ret */
	r = (struct watch_interval){ (uintptr_t)p, (uintptr_t)p + 4 };
	ck_assert_int_ne(watch_bt_analyse(&r, 1, &plan, why, sizeof why), 0);
	munmap(p, 4096);
}
END_TEST

START_TEST(rip_relative_rebased_and_jump_back)
{
	/* mov 0x10(%rip),%rax at 0x10000: reads 0x10017. */
	const uint8_t mov[] = { 0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00 };
	struct watch_x86_xol x;
	const char *why = "";
	ck_assert_int_eq(watch_x86_init(), 0);
	ck_assert_msg(watch_x86_xol_plan(mov, sizeof mov, 0x10000, 0x20000, &x, &why) == 0, "%s", why);
	ck_assert_int_eq(x.kind, WATCH_X86_XOL_COPY);
	ck_assert_int_eq(x.rip_relative, 1);
	ck_assert_uint_eq(x.ncopy, 12);
	int32_t d, back;
	memcpy(&d, x.copy + 3, 4);
	ck_assert_int_eq((int64_t)0x20007 + d, 0x10017); /* the same word from the slot */
	ck_assert_uint_eq(x.copy[7], 0xe9);
	memcpy(&back, x.copy + 8, 4);
	ck_assert_int_eq((int64_t)0x2000c + back, 0x10007); /* on to the next instruction */

	/* Not RIP-relative: copied as it is. */
	const uint8_t add[] = { 0x48, 0x83, 0xc0, 0x01 };
	ck_assert_int_eq(watch_x86_xol_plan(add, sizeof add, 0x10000, 0x20000, &x, &why), 0);
	ck_assert_int_eq(x.rip_relative, 0);
	ck_assert_mem_eq(x.copy, add, sizeof add);

	/* movdqa 0xb93(%rip),%xmm1 (clang's, at 0x10000: reads 0x10b9b):
	 * capstone 4 leaves its encoding's disp_offset empty; the disp32 is
	 * found in the bytes and re-based all the same. */
	const uint8_t movdqa[] = { 0x66, 0x0f, 0x6f, 0x0d, 0x93, 0x0b, 0x00, 0x00 };
	ck_assert_msg(watch_x86_xol_plan(movdqa, sizeof movdqa, 0x10000, 0x20000, &x, &why) == 0, "%s", why);
	ck_assert_int_eq(x.rip_relative, 1);
	memcpy(&d, x.copy + 4, 4);
	ck_assert_int_eq((int64_t)0x20008 + d, 0x10b9b);
	ck_assert_mem_eq(x.copy, movdqa, 4);

	/* A slot out of rel32 reach of the data is refused. */
	ck_assert_int_eq(watch_x86_xol_plan(mov, sizeof mov, 0x10000, 0x10000 + ((uint64_t)3 << 30), &x, &why), -1);
	ck_assert_ptr_nonnull(strstr(why, "reach"));
}
END_TEST

static ucontext_t fresh(uint64_t *stack_top)
{
	ucontext_t uc;
	memset(&uc, 0, sizeof uc);
	uc.uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)stack_top;
	return uc;
}

START_TEST(control_transfers_emulated)
{
	struct watch_x86_xol x;
	const char *why = "";
	uint64_t stack[8] = { 0 };
	ucontext_t uc;
	ck_assert_int_eq(watch_x86_init(), 0);

	/* je +0x10 (74 10) at 0x1000: 0x1012 if ZF, else 0x1002. */
	const uint8_t je[] = { 0x74, 0x10 };
	ck_assert_int_eq(watch_x86_xol_plan(je, 2, 0x1000, 0x9000, &x, &why), 0);
	ck_assert_int_eq(x.kind, WATCH_X86_XOL_JCC);
	uc = fresh(&stack[4]);
	uc.uc_mcontext.gregs[REG_EFL] = 0x40;
	ck_assert_int_eq(watch_x86_xol_transfer(&x, 0x1000, &uc), 0);
	ck_assert_uint_eq(uc.uc_mcontext.gregs[REG_RIP], 0x1012);
	uc.uc_mcontext.gregs[REG_EFL] = 0;
	watch_x86_xol_transfer(&x, 0x1000, &uc);
	ck_assert_uint_eq(uc.uc_mcontext.gregs[REG_RIP], 0x1002);

	/* call rel32 +0x100 at 0x1000: pushes 0x1005. */
	const uint8_t call[] = { 0xe8, 0x00, 0x01, 0x00, 0x00 };
	ck_assert_int_eq(watch_x86_xol_plan(call, 5, 0x1000, 0x9000, &x, &why), 0);
	ck_assert_int_eq(x.kind, WATCH_X86_XOL_CALL);
	uc = fresh(&stack[4]);
	watch_x86_xol_transfer(&x, 0x1000, &uc);
	ck_assert_uint_eq(uc.uc_mcontext.gregs[REG_RIP], 0x1105);
	ck_assert_ptr_eq((void *)(uintptr_t)uc.uc_mcontext.gregs[REG_RSP], &stack[3]);
	ck_assert_uint_eq(stack[3], 0x1005);

	/* ret, and ret $16. */
	const uint8_t ret[] = { 0xc3 }, ret16[] = { 0xc2, 0x10, 0x00 };
	ck_assert_int_eq(watch_x86_xol_plan(ret, 1, 0x1000, 0x9000, &x, &why), 0);
	uc = fresh(&stack[3]);
	watch_x86_xol_transfer(&x, 0x1000, &uc);
	ck_assert_uint_eq(uc.uc_mcontext.gregs[REG_RIP], 0x1005);
	ck_assert_ptr_eq((void *)(uintptr_t)uc.uc_mcontext.gregs[REG_RSP], &stack[4]);
	ck_assert_int_eq(watch_x86_xol_plan(ret16, 3, 0x1000, 0x9000, &x, &why), 0);
	uc = fresh(&stack[3]);
	watch_x86_xol_transfer(&x, 0x1000, &uc);
	ck_assert_ptr_eq((void *)(uintptr_t)uc.uc_mcontext.gregs[REG_RSP], &stack[6]);

	/* call *%rax. */
	const uint8_t callrax[] = { 0xff, 0xd0 };
	ck_assert_int_eq(watch_x86_xol_plan(callrax, 2, 0x1000, 0x9000, &x, &why), 0);
	ck_assert_int_eq(x.kind, WATCH_X86_XOL_INDIRECT);
	uc = fresh(&stack[4]);
	uc.uc_mcontext.gregs[REG_RAX] = 0x4242;
	watch_x86_xol_transfer(&x, 0x1000, &uc);
	ck_assert_uint_eq(uc.uc_mcontext.gregs[REG_RIP], 0x4242);
	ck_assert_uint_eq(stack[3], 0x1002);

	/* jmp *8(%rbx,%rcx,8): the word at rbx + rcx * 8 + 8. */
	static uint64_t words[4] = { 1, 2, 0x7777, 4 };
	const uint8_t jmpm[] = { 0xff, 0x64, 0xcb, 0x08 };
	ck_assert_int_eq(watch_x86_xol_plan(jmpm, 4, 0x1000, 0x9000, &x, &why), 0);
	uc = fresh(&stack[4]);
	uc.uc_mcontext.gregs[REG_RBX] = (greg_t)(uintptr_t)words;
	uc.uc_mcontext.gregs[REG_RCX] = 1;
	watch_x86_xol_transfer(&x, 0x1000, &uc);
	ck_assert_uint_eq(uc.uc_mcontext.gregs[REG_RIP], 0x7777);
	ck_assert_ptr_eq((void *)(uintptr_t)uc.uc_mcontext.gregs[REG_RSP], &stack[4]);

	/* jmp *disp(%rip) reading words[3] from pc chosen so that it does. */
	const uint8_t jmprip[] = { 0xff, 0x25, 0x00, 0x01, 0x00, 0x00 };
	uint64_t pc = (uint64_t)(uintptr_t)&words[3] - 0x100 - 6;
	ck_assert_int_eq(watch_x86_xol_plan(jmprip, 6, pc, 0x9000, &x, &why), 0);
	watch_x86_xol_transfer(&x, pc, &uc);
	ck_assert_uint_eq(uc.uc_mcontext.gregs[REG_RIP], 4);

	/* loop -2 at 0x1000: RCX 2 -> 1 taken, 1 -> 0 not. */
	const uint8_t loop[] = { 0xe2, 0xfe };
	ck_assert_int_eq(watch_x86_xol_plan(loop, 2, 0x1000, 0x9000, &x, &why), 0);
	ck_assert_int_eq(x.kind, WATCH_X86_XOL_LOOP);
	uc = fresh(&stack[4]);
	uc.uc_mcontext.gregs[REG_RCX] = 2;
	watch_x86_xol_transfer(&x, 0x1000, &uc);
	ck_assert_uint_eq(uc.uc_mcontext.gregs[REG_RIP], 0x1000);
	watch_x86_xol_transfer(&x, 0x1000, &uc);
	ck_assert_uint_eq(uc.uc_mcontext.gregs[REG_RIP], 0x1002);
	ck_assert_uint_eq(uc.uc_mcontext.gregs[REG_RCX], 0);

	/* The condition codes: jl is SF != OF, jbe CF or ZF. */
	ck_assert_int_eq(watch_x86_cc_holds(0xc, 0x80), 1);
	ck_assert_int_eq(watch_x86_cc_holds(0xc, 0x880), 0);
	ck_assert_int_eq(watch_x86_cc_holds(0x6, 0x1), 1);
	ck_assert_int_eq(watch_x86_cc_holds(0x7, 0x40), 0);
	ck_assert_int_eq(watch_x86_cc_holds(0xb, 0x4), 0);
}
END_TEST

static int count_run(const struct watch_interval *r, void (*work)(void), struct watch_counts *out)
{
	struct watch_session s;
	char why[WATCH_ERRLEN] = "";
	memset(&s, 0, sizeof s);
	s.req.want_code = 1;
	s.req.ncode = 1;
	s.req.code_pair[0] = *r;
	int err = watch_blocktrap_ops.start(&s, why, sizeof why);
	if (err) {
		fprintf(stderr, "blocktrap start: %s\n", why);
		return err;
	}
	work();
	watch_blocktrap_ops.stop(&s);
	*out = s.acc;
	return 0;
}

static void run_loop(void) { bt_loop(1000); }
static void run_call(void) { bt_call(100, nothing); }
static void run_diamond(void) { bt_diamond(0); bt_diamond(1); bt_diamond(0); }
static void run_jtable(void) { bt_jtable(0); bt_jtable(0); }

START_TEST(sessions_count_exactly)
{
	struct watch_counts c;
	struct watch_interval r = { (uintptr_t)bt_loop, (uintptr_t)bt_loop_end };
	ck_assert_int_eq(count_run(&r, run_loop, &c), 0);
	ck_assert_uint_eq(c.insns, 3 * 1000 + 2);
	ck_assert_uint_eq(c.insns_pair[0], 3 * 1000 + 2);
	/* Cut mid-block: the dec alone. */
	r = (struct watch_interval){ (uintptr_t)bt_loop_head + 4, (uintptr_t)bt_loop_head + 5 };
	ck_assert_int_eq(count_run(&r, run_loop, &c), 0);
	ck_assert_uint_eq(c.insns, 1000);
	r = (struct watch_interval){ (uintptr_t)bt_call, (uintptr_t)bt_call_end };
	ck_assert_int_eq(count_run(&r, run_call, &c), 0);
	ck_assert_uint_eq(c.insns, 3 * 100 + 7);
	r = (struct watch_interval){ (uintptr_t)bt_diamond, (uintptr_t)bt_diamond_end };
	ck_assert_int_eq(count_run(&r, run_diamond, &c), 0);
	ck_assert_uint_eq(c.insns, 4 + 5 + 4);
	/* Into the middle of a block through a register. */
	r = (struct watch_interval){ (uintptr_t)bt_jtable, (uintptr_t)bt_jtable_end };
	ck_assert_int_eq(count_run(&r, run_jtable, &c), 0);
	ck_assert_uint_eq(c.insns, 2 * 5);
	/* The code is as it was: it runs uncounted and gives its result. */
	bt_loop(10);
	ck_assert_int_eq(((const uint8_t *)bt_loop)[0], 0x48);
	struct watch_blocktrap_stats st;
	watch_blocktrap_stats(&st);
	ck_assert_uint_gt(st.traps, 0);
	ck_assert_uint_gt(st.emulated, 0);
}
END_TEST

START_TEST(fits_refuses_data)
{
	struct watch_request req;
	char why[WATCH_ERRLEN] = "";
	memset(&req, 0, sizeof req);
	req.want_data = 1;
	req.ndata = 1;
	req.data[0] = (struct watch_interval){ 0x1000, 0x2000 };
	ck_assert_int_eq(watch_blocktrap_ops.fits(&req, why, sizeof why), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(why, "instructions only"));
}
END_TEST

static Suite *blocktrap_suite(void)
{
	Suite *s = suite_create("blocktrap");
	TCase *tc = tcase_create("blocktrap");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, leaders_of_a_loop);
	tcase_add_test(tc, leaders_after_calls_and_at_joins);
	tcase_add_test(tc, landing_pads_are_leaders);
	tcase_add_test(tc, refuses_code_without_unwind_info);
	tcase_add_test(tc, rip_relative_rebased_and_jump_back);
	tcase_add_test(tc, control_transfers_emulated);
	tcase_add_test(tc, sessions_count_exactly);
	tcase_add_test(tc, fits_refuses_data);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(blocktrap_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
