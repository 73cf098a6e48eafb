/*
 * Known code for the profileme ctests, each function between its own symbol
 * and its _end symbol, so a test knows every PC a sample in it can have:
 *   pm_hot(n), pm_cold(n)  the same two-instruction loop, n iterations each:
 *                          pm_hot(3n) takes three times as long as pm_cold(n);
 *   pm_taken3(n)           n iterations whose conditional branch pm_taken3_jcc
 *                          is taken exactly 3 times in 4;
 *   pm_unaligned(p, n)     n 8-byte loads from p, which the caller misaligns.
 */
#if defined(__x86_64__)
	.text
	.p2align 6
	.globl pm_hot
	.type pm_hot, @function
pm_hot:
1:	subq $1, %rdi
	jnz 1b
	ret
	.size pm_hot, .-pm_hot
	.globl pm_hot_end
pm_hot_end:
	nop

	.p2align 6
	.globl pm_cold
	.type pm_cold, @function
pm_cold:
1:	subq $1, %rdi
	jnz 1b
	ret
	.size pm_cold, .-pm_cold
	.globl pm_cold_end
pm_cold_end:
	nop

	.p2align 6
	.globl pm_taken3
	.type pm_taken3, @function
pm_taken3:
	xorl %ecx, %ecx
1:	addl $1, %ecx
	testl $3, %ecx
	.globl pm_taken3_jcc
pm_taken3_jcc:
	jnz 2f		/* taken unless ecx % 4 == 0: 3 times in 4 */
	nop
2:	subq $1, %rdi
	jnz 1b
	ret
	.size pm_taken3, .-pm_taken3
	.globl pm_taken3_end
pm_taken3_end:
	nop

	.p2align 6
	.globl pm_unaligned
	.type pm_unaligned, @function
pm_unaligned:
	xorl %eax, %eax
1:	addq (%rdi), %rax
	subq $1, %rsi
	jnz 1b
	ret
	.size pm_unaligned, .-pm_unaligned
	.globl pm_unaligned_end
pm_unaligned_end:
	nop
#endif
	.section .note.GNU-stack,"",@progbits
