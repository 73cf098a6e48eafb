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

	.section .note.GNU-stack,"",@progbits
