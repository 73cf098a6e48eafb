/* Loops with a known instruction mix for the alpha21064 tests: each is its
 * own function, and the *_end symbols bound its code (every overflow PC must
 * lie in [start, end)). */
	.text

/* long alpha_load_loop(const long *p, long n): n loads (plus the ret). */
	.globl alpha_load_loop, alpha_load_loop_end
	.type alpha_load_loop, @function
	.balign 64
alpha_load_loop:
	xorl %eax, %eax
	testq %rsi, %rsi
	jz 2f
1:	addq (%rdi), %rax
	decq %rsi
	jnz 1b
2:	ret
alpha_load_loop_end:
	.size alpha_load_loop, .-alpha_load_loop

/* void alpha_mix_loop(long *p, long n): n loads and n stores. */
	.globl alpha_mix_loop, alpha_mix_loop_end
	.type alpha_mix_loop, @function
	.balign 64
alpha_mix_loop:
	testq %rsi, %rsi
	jz 2f
1:	movq (%rdi), %rax
	movq %rax, 8(%rdi)
	decq %rsi
	jnz 1b
2:	ret
alpha_mix_loop_end:
	.size alpha_mix_loop, .-alpha_mix_loop

/* double alpha_fp_loop(double x, long n): n FP operates (addsd), n
 * integer operates (dec), n branches (jnz). */
	.globl alpha_fp_loop, alpha_fp_loop_end
	.type alpha_fp_loop, @function
	.balign 64
alpha_fp_loop:
	movapd %xmm0, %xmm1
	testq %rdi, %rdi
	jz 2f
1:	addsd %xmm1, %xmm0
	decq %rdi
	jnz 1b
2:	ret
alpha_fp_loop_end:
	.size alpha_fp_loop, .-alpha_fp_loop

/* long alpha_both_rounds(const long *p, const long *skew, long rounds):
 * both counters carrying on one instruction.  Each round is a block of
 * 4096 `addq (%rdi),%rax` (alpha_both_block .. alpha_both_block_end, 3 bytes
 * each), an instruction that is a load (LOAD_INSNS, counter 0) and an
 * integer operate (INTEGER_OPERATE, counter 1) at once, so inside the block
 * the two counters advance in lock-step and each carries exactly once at
 * width 12.  They carry on the same instruction only if their residues agree
 * modulo 4096, which nothing outside the block keeps true; so after each
 * block the round reads skew[round] (written by the test's handler while the
 * block ran) and runs that many iterations of a loop that makes two loads and
 * one integer operate (the dec; jnz is a branch only), moving counter 0 one
 * event further ahead of counter 1 per iteration.  Everything else between
 * two blocks is the same instructions every round, so its effect on the
 * difference is a constant the handler measures from rounds 0 and 1. */
	.globl alpha_both_rounds, alpha_both_block, alpha_both_block_end, alpha_both_rounds_end
	.type alpha_both_rounds, @function
	.balign 64
alpha_both_rounds:
	xorl %eax, %eax
	xorl %r9d, %r9d
	testq %rdx, %rdx
	jz 4f
3:
alpha_both_block:
	.rept 4096
	addq (%rdi), %rax
	.endr
alpha_both_block_end:
	movq (%rsi,%r9,8), %rcx
	testq %rcx, %rcx
	jz 2f
1:	movq (%rdi), %r10
	movq (%rdi), %r10
	decq %rcx
	jnz 1b
2:	incq %r9
	cmpq %rdx, %r9
	jne 3b
4:	ret
alpha_both_rounds_end:
	.size alpha_both_rounds, .-alpha_both_rounds

/* void alpha_touch_pages(char *p, long npages): one byte store per 4096-byte
 * page, for the core-PMU backend's tests, whose stand-in event is the page
 * fault: on fresh anonymous pages each store faults exactly once, at
 * alpha_touch_store. */
	.globl alpha_touch_pages, alpha_touch_store, alpha_touch_pages_end
	.type alpha_touch_pages, @function
	.balign 64
alpha_touch_pages:
	testq %rsi, %rsi
	jz 2f
1:
alpha_touch_store:
	movb $1, (%rdi)
	addq $4096, %rdi
	decq %rsi
	jnz 1b
2:	ret
alpha_touch_pages_end:
	.size alpha_touch_pages, .-alpha_touch_pages

	.section .note.GNU-stack,"",@progbits
