/* Routines with instruction counts known exactly, each alone in its page so an
 * instruction range can cover them and nothing else. */
	.text
	.balign 4096
	.globl instr_loop
	.type instr_loop, @function
/* long instr_loop(long n), n >= 1: executes 3n + 2 instructions. */
instr_loop:
	mov	%rdi, %rcx
1:	add	$1, %rax
	dec	%rcx
	jnz	1b
	ret
	.globl instr_loop_end
instr_loop_end:
	.size instr_loop, . - instr_loop

	.balign 4096
	.globl instr_call
	.type instr_call, @function
/* long instr_call(long n, void (*fn)(void)), n >= 1: executes 3n + 7
 * instructions of its own and calls fn n times; fn's instructions lie
 * outside the range. */
instr_call:
	push	%rbx                /* 1 */
	push	%r12                /* 1 */
	mov	%rdi, %rbx          /* 1 */
	mov	%rsi, %r12          /* 1 */
2:	call	*%r12               /* n */
	dec	%rbx                /* n */
	jnz	2b                  /* n */
	pop	%r12                /* 1 */
	pop	%rbx                /* 1 */
	ret                         /* 1 */
	.globl instr_call_end
instr_call_end:
	.size instr_call, . - instr_call
	.balign 4096
	.globl instr_load_sum
	.type instr_load_sum, @function
/* long instr_load_sum(const int *a, long n), n >= 1: n 4-byte loads of a[0..n). */
instr_load_sum:
	xor	%eax, %eax
3:	add	(%rdi), %eax
	add	$4, %rdi
	dec	%rsi
	jnz	3b
	ret
	.globl instr_load_sum_end
instr_load_sum_end:
	.size instr_load_sum, . - instr_load_sum
	.balign 4096
	.section .note.GNU-stack,"",@progbits
