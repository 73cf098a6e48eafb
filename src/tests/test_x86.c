/*
 * Unit tests of src/watch/watch_x86.c, the x86-64 decoding behind the
 * page-trap and breakpoint backends (test_alpha covers watch_x86_classify):
 * which bytes an instruction reads and writes given its registers, whether
 * control goes on to the next instruction, instruction lengths, rep stores,
 * and what an instruction did to a watched word from the registers after
 * it.  Expected values are the instructions' semantics (Intel SDM vol. 2),
 * with the encodings written out here.  Pure decoding: no traps.
 */
#include <check.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "watch/watch_x86.h"

static int mem_fd = -1;

static void setup(void)
{
	ck_assert_int_eq(watch_x86_init(), 0);
	if (mem_fd < 0)
		mem_fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
}

/* Instruction bytes in memory, followed by int3s. */
static uint8_t code[64];

static void regs(ucontext_t *uc, const uint8_t *bytes, size_t n)
{
	memset(code, 0xcc, sizeof code);
	memcpy(code, bytes, n);
	memset(uc, 0, sizeof *uc);
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)code;
	uc->uc_mcontext.gregs[REG_EFL] = 0x202; /* IF, DF clear */
	uc->uc_mcontext.gregs[REG_RSP] = 0x7000100;
}

#define REG(uc, r) ((uc).uc_mcontext.gregs[REG_##r])

static const struct watch_x86_access *find(const struct watch_x86_insn *in, int load, int store)
{
	for (unsigned i = 0; i < in->naccess; i++)
		if (in->acc[i].load == load && in->acc[i].store == store)
			return &in->acc[i];
	return NULL;
}

static void decode(const ucontext_t *uc, int write, struct watch_x86_insn *in)
{
	memset(in, 0xa5, sizeof *in);
	ck_assert_int_eq(watch_x86_decode(uc, write, mem_fd, in), 0);
	ck_assert_uint_eq(in->rip, (uintptr_t)code);
}

static void expect_one(const struct watch_x86_insn *in, unsigned len, int load, int store, uintptr_t base,
                       uint32_t size, uint64_t count)
{
	ck_assert_uint_eq(in->len, len);
	ck_assert_uint_eq(in->naccess, 1);
	ck_assert_uint_eq(in->acc[0].load, load);
	ck_assert_uint_eq(in->acc[0].store, store);
	ck_assert_uint_eq(in->acc[0].base, base);
	ck_assert_uint_eq(in->acc[0].size, size);
	ck_assert_uint_eq(in->acc[0].count, count);
	ck_assert_int_eq(in->address_unknown, 0);
}

START_TEST(loads_stores_and_read_modify_writes)
{
	ucontext_t uc;
	struct watch_x86_insn in;
	setup();

	/* mov (%rax),%rbx: 8 bytes read at rax. */
	regs(&uc, (const uint8_t[]){ 0x48, 0x8b, 0x18 }, 3);
	REG(uc, RAX) = 0x100000;
	decode(&uc, 0, &in);
	expect_one(&in, 3, 1, 0, 0x100000, 8, 1);
	ck_assert_int_eq(in.sequential, 1);

	/* mov %rbx,0x8(%rcx): 8 bytes written at rcx + 8. */
	regs(&uc, (const uint8_t[]){ 0x48, 0x89, 0x59, 0x08 }, 4);
	REG(uc, RCX) = 0x200000;
	decode(&uc, 1, &in);
	expect_one(&in, 4, 0, 1, 0x200008, 8, 1);

	/* add %eax,(%rdx): 4 bytes read and written. */
	regs(&uc, (const uint8_t[]){ 0x01, 0x02 }, 2);
	REG(uc, RDX) = 0x300004;
	decode(&uc, 1, &in);
	expect_one(&in, 2, 1, 1, 0x300004, 4, 1);

	/* movzbl (%rbx,%rcx,1),%eax: 1 byte at rbx + rcx. */
	regs(&uc, (const uint8_t[]){ 0x0f, 0xb6, 0x04, 0x0b }, 4);
	REG(uc, RBX) = 0x400000;
	REG(uc, RCX) = 0x11;
	decode(&uc, 0, &in);
	expect_one(&in, 4, 1, 0, 0x400011, 1, 1);

	/* mov (%rax,%rcx,8),%rax: index scaled by 8. */
	regs(&uc, (const uint8_t[]){ 0x48, 0x8b, 0x04, 0xc8 }, 4);
	REG(uc, RAX) = 0x500000;
	REG(uc, RCX) = 3;
	decode(&uc, 0, &in);
	expect_one(&in, 4, 1, 0, 0x500018, 8, 1);

	/* movw $0x1234,-0x2(%rbp): 2 bytes below rbp. */
	regs(&uc, (const uint8_t[]){ 0x66, 0xc7, 0x45, 0xfe, 0x34, 0x12 }, 6);
	REG(uc, RBP) = 0x600010;
	decode(&uc, 1, &in);
	expect_one(&in, 6, 0, 1, 0x60000e, 2, 1);
}
END_TEST

START_TEST(stack_and_control_flow)
{
	ucontext_t uc;
	struct watch_x86_insn in;
	setup();

	/* push %rax: 8 bytes at rsp - 8. */
	regs(&uc, (const uint8_t[]){ 0x50 }, 1);
	decode(&uc, 1, &in);
	expect_one(&in, 1, 0, 1, 0x7000100 - 8, 8, 1);
	ck_assert_int_eq(in.sequential, 1);

	/* ret: reads its return address at rsp; control leaves. */
	regs(&uc, (const uint8_t[]){ 0xc3 }, 1);
	decode(&uc, 0, &in);
	expect_one(&in, 1, 1, 0, 0x7000100, 8, 1);
	ck_assert_int_eq(in.sequential, 0);

	/* jmp . : no memory, not sequential. */
	regs(&uc, (const uint8_t[]){ 0xeb, 0xfe }, 2);
	decode(&uc, 0, &in);
	ck_assert_uint_eq(in.len, 2);
	ck_assert_uint_eq(in.naccess, 0);
	ck_assert_int_eq(in.sequential, 0);
}
END_TEST

START_TEST(string_instructions_cover_every_iteration)
{
	ucontext_t uc;
	struct watch_x86_insn in;
	const struct watch_x86_access *a;
	setup();

	/* rep movsb, rcx = 10, forwards: 10 bytes read from rsi, 10 written at rdi. */
	regs(&uc, (const uint8_t[]){ 0xf3, 0xa4 }, 2);
	REG(uc, RCX) = 10;
	REG(uc, RSI) = 0x110000;
	REG(uc, RDI) = 0x220000;
	decode(&uc, 1, &in);
	ck_assert_uint_eq(in.len, 2);
	ck_assert_uint_eq(in.naccess, 2);
	a = find(&in, 1, 0);
	ck_assert_ptr_nonnull(a);
	ck_assert_uint_eq(a->base, 0x110000);
	ck_assert_uint_eq(a->count, 10);
	ck_assert_uint_eq(a->size, 1);
	a = find(&in, 0, 1);
	ck_assert_ptr_nonnull(a);
	ck_assert_uint_eq(a->base, 0x220000);
	ck_assert_uint_eq(a->count, 10);

	/* rep stosq, rcx = 3: 24 bytes at rdi in 8-byte elements. */
	regs(&uc, (const uint8_t[]){ 0xf3, 0x48, 0xab }, 3);
	REG(uc, RCX) = 3;
	REG(uc, RDI) = 0x330000;
	decode(&uc, 1, &in);
	expect_one(&in, 3, 0, 1, 0x330000, 8, 3);

	/* Backwards (DF = 1): base is the lowest element, rdi - 2 * 8. */
	REG(uc, EFL) |= 0x400;
	decode(&uc, 1, &in);
	expect_one(&in, 3, 0, 1, 0x330000 - 16, 8, 3);
}
END_TEST

START_TEST(lengths_and_rep_stores)
{
	unsigned len = 0;
	setup();
	static const struct {
		uint8_t b[16];
		unsigned n, len;
	} l[] = {
		{ { 0x48, 0x8b, 0x18 }, 3, 3 },                                           /* mov (%rax),%rbx */
		{ { 0x0f, 0x1f, 0x44, 0x00, 0x00 }, 5, 5 },                               /* nopl 0(%rax,%rax) */
		{ { 0xe8, 0, 0, 0, 0 }, 5, 5 },                                           /* call rel32 */
		{ { 0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8 }, 10, 10 },                       /* movabs $imm64,%rax */
		{ { 0xc3 }, 1, 1 },                                                       /* ret */
		{ { 0xc5, 0xfd, 0x6f, 0x07 }, 4, 4 },                                     /* vmovdqa (%rdi),%ymm0 */
		{ { 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 }, 9, 9 },       /* nopw 0(%rax,%rax) */
	};
	for (size_t i = 0; i < sizeof l / sizeof l[0]; i++) {
		ck_assert_int_eq(watch_x86_length(l[i].b, l[i].n, 0x401000, &len), 0);
		ck_assert_uint_eq(len, l[i].len);
	}
	/* Cut short: does not decode. */
	ck_assert_int_eq(watch_x86_length(l[3].b, 5, 0x401000, &len), -1);

	ck_assert_int_eq(watch_x86_is_rep_store((const uint8_t[]){ 0xf3, 0xa4 }, 2), 1);       /* rep movsb */
	ck_assert_int_eq(watch_x86_is_rep_store((const uint8_t[]){ 0xf3, 0x48, 0xab }, 3), 1); /* rep stosq */
	ck_assert_int_eq(watch_x86_is_rep_store((const uint8_t[]){ 0xf3, 0xaa }, 2), 1);       /* rep stosb */
	ck_assert_int_eq(watch_x86_is_rep_store((const uint8_t[]){ 0xa4 }, 1), 0);             /* movsb, once */
	ck_assert_int_eq(watch_x86_is_rep_store((const uint8_t[]){ 0xf3, 0xa6 }, 2), 0);       /* repe cmpsb: no store */
	ck_assert_int_eq(watch_x86_is_rep_store((const uint8_t[]){ 0x48, 0x89, 0x18 }, 3), 0); /* mov %rbx,(%rax) */

	uintptr_t lo = 0, hi = 0;
	watch_x86_state_range(&lo, &hi);
	ck_assert_uint_lt(lo, hi);
	ck_assert_uint_eq(lo % 4096, 0);
	ck_assert_uint_eq(hi % 4096, 0);
}
END_TEST

START_TEST(breakpoint_effects_from_the_registers_after)
{
	ucontext_t uc;
	struct watch_x86_effect e;
	const uintptr_t lo = 0x800000, hi = lo + 8;
	setup();

	/* mov %rbx,(%rax) with rax on the word: wrote it, no read. */
	static const uint8_t st[] = { 0x48, 0x89, 0x18 };
	regs(&uc, st, 3);
	REG(uc, RAX) = (greg_t)lo;
	ck_assert_int_eq(watch_x86_effect(st, 3, 0x401000, &uc, lo, hi, &e), 0);
	ck_assert_uint_eq(e.len, 3);
	ck_assert_uint_eq(e.stores, WATCH_X86_YES);
	ck_assert_uint_eq(e.loads, WATCH_X86_NO);
	ck_assert_uint_eq(e.is_call, 0);
	/* The same store elsewhere: not to the word. */
	REG(uc, RAX) = (greg_t)(lo + 64);
	ck_assert_int_eq(watch_x86_effect(st, 3, 0x401000, &uc, lo, hi, &e), 0);
	ck_assert_uint_eq(e.stores, WATCH_X86_NO);

	/* add %ebx,(%rax): read-modify-write. */
	static const uint8_t rmw[] = { 0x01, 0x18 };
	regs(&uc, rmw, 2);
	REG(uc, RAX) = (greg_t)lo;
	ck_assert_int_eq(watch_x86_effect(rmw, 2, 0x401000, &uc, lo, hi, &e), 0);
	ck_assert_uint_eq(e.stores, WATCH_X86_YES);
	ck_assert_uint_eq(e.loads, WATCH_X86_YES);

	/* push %rax: after it rsp points at what it wrote. */
	static const uint8_t push[] = { 0x50 };
	regs(&uc, push, 1);
	REG(uc, RSP) = (greg_t)lo;
	ck_assert_int_eq(watch_x86_effect(push, 1, 0x401000, &uc, lo, hi, &e), 0);
	ck_assert_uint_eq(e.stores, WATCH_X86_YES);

	/* call rel32: a call. */
	static const uint8_t call[] = { 0xe8, 0, 0, 0, 0 };
	regs(&uc, call, 5);
	REG(uc, RSP) = (greg_t)lo;
	ck_assert_int_eq(watch_x86_effect(call, 5, 0x401000, &uc, lo, hi, &e), 0);
	ck_assert_uint_eq(e.is_call, 1);
	ck_assert_uint_eq(e.len, 5);

	/* xadd %rax,(%rax): the address register is the one it changed. */
	static const uint8_t xadd[] = { 0x48, 0x0f, 0xc1, 0x00 };
	regs(&uc, xadd, 4);
	REG(uc, RAX) = (greg_t)lo;
	ck_assert_int_eq(watch_x86_effect(xadd, 4, 0x401000, &uc, lo, hi, &e), 0);
	ck_assert_uint_eq(e.stores, WATCH_X86_MAYBE);
}
END_TEST

/* What profileme's soft backend asks of a sampled instruction
 * (watch_x86_pm_decode): its length, whether `taken` is defined, whether it
 * may be stepped, and its operand addresses from the registers before it. */
START_TEST(profileme_fields_of_an_instruction)
{
	setup();
	ucontext_t uc;
	struct watch_x86_pm d;
	memset(&uc, 0, sizeof uc);
	REG(uc, RSP) = 0x7000100;
	REG(uc, RBX) = 0x5000;
	REG(uc, RCX) = 3;
	static const struct {
		uint8_t b[8];
		unsigned n, len, cond, no_step, naccess;
		uintptr_t addr;
		uint32_t size;
	} c[] = {
		{ { 0x75, 0x10 }, 2, 2, 1, 0, 0, 0, 0 },                         /* jne */
		{ { 0x0f, 0x84, 1, 0, 0, 0 }, 6, 6, 1, 0, 0, 0, 0 },             /* je rel32 */
		{ { 0xe3, 0x05 }, 2, 2, 1, 0, 0, 0, 0 },                         /* jrcxz */
		{ { 0xe2, 0xfe }, 2, 2, 1, 0, 0, 0, 0 },                         /* loop */
		{ { 0xeb, 0x05 }, 2, 2, 0, 0, 0, 0, 0 },                         /* jmp: always taken, no `taken` */
		{ { 0x0f, 0x05 }, 2, 2, 0, 1, 0, 0, 0 },                         /* syscall */
		{ { 0xcc }, 1, 1, 0, 1, 0, 0, 0 },                               /* int3 */
		{ { 0xcd, 0x80 }, 2, 2, 0, 1, 0, 0, 0 },                         /* int $0x80 */
		{ { 0x9c }, 1, 1, 0, 1, 0, 0, 0 },                               /* pushf: would push TF */
		{ { 0x48, 0x8b, 0x44, 0x8b, 0x08 }, 5, 5, 0, 0, 1, 0x5014, 8 }, /* mov 8(%rbx,%rcx,4),%rax */
		{ { 0x66, 0x89, 0x43, 0x01 }, 4, 4, 0, 0, 1, 0x5001, 2 },       /* mov %ax,1(%rbx) */
		{ { 0x48, 0x8d, 0x43, 0x01 }, 4, 4, 0, 0, 0, 0, 0 },             /* lea: no access */
		{ { 0xc3 }, 1, 1, 0, 0, 1, 0x7000100, 8 },                       /* ret */
	};
	for (unsigned i = 0; i < sizeof c / sizeof c[0]; i++) {
		ck_assert_int_eq(watch_x86_pm_decode(c[i].b, c[i].n, 0x401000, &uc, &d), 0);
		ck_assert_msg(d.len == c[i].len && d.cond_branch == c[i].cond && d.no_step == c[i].no_step &&
		                  d.naccess == c[i].naccess,
		              "case %u: len %u cond %u no_step %u naccess %u", i, d.len, d.cond_branch, d.no_step,
		              d.naccess);
		if (c[i].naccess) {
			ck_assert_uint_eq(d.acc[0].addr, c[i].addr);
			ck_assert_uint_eq(d.acc[0].size, c[i].size);
		}
	}
	/* RIP-relative: from the next instruction. */
	static const uint8_t riprel[] = { 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00 }; /* mov 0x10(%rip),%eax */
	ck_assert_int_eq(watch_x86_pm_decode(riprel, sizeof riprel, 0x401000, &uc, &d), 0);
	ck_assert_uint_eq(d.naccess, 1);
	ck_assert_uint_eq(d.acc[0].addr, 0x401000 + 6 + 0x10);
	ck_assert_uint_eq(d.acc[0].size, 4);
	static const uint8_t bad[] = { 0x06 }; /* push %es: invalid in 64-bit mode */
	ck_assert_int_eq(watch_x86_pm_decode(bad, sizeof bad, 0x401000, &uc, &d), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("x86");
	TCase *tc = tcase_create("decode");
	tcase_add_test(tc, loads_stores_and_read_modify_writes);
	tcase_add_test(tc, stack_and_control_flow);
	tcase_add_test(tc, string_instructions_cover_every_iteration);
	tcase_add_test(tc, lengths_and_rep_stores);
	tcase_add_test(tc, breakpoint_effects_from_the_registers_after);
	tcase_add_test(tc, profileme_fields_of_an_instruction);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
