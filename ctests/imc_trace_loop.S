/*
 * The known loop of ctests/imc_trace.c: imc_trace_loop(n) runs n
 * iterations of a three-instruction loop and nothing else, between the
 * symbols imc_trace_loop and imc_trace_loop_end, so the test knows every
 * PC the loop can have.
 */
#if defined(__x86_64__)
	.text
	.p2align 6
	.globl imc_trace_loop
	.type imc_trace_loop, @function
imc_trace_loop:
	xorl %eax, %eax
1:	addq $1, %rax
	subq $1, %rdi
	jnz 1b
	ret
	.size imc_trace_loop, .-imc_trace_loop
	.globl imc_trace_loop_end
imc_trace_loop_end:
	nop
#elif defined(__aarch64__)
	.text
	.p2align 6
	.globl imc_trace_loop
	.type imc_trace_loop, %function
imc_trace_loop:
	mov x1, #0
1:	add x1, x1, #1
	subs x0, x0, #1
	b.ne 1b
	mov x0, x1
	ret
	.size imc_trace_loop, .-imc_trace_loop
	.globl imc_trace_loop_end
imc_trace_loop_end:
	nop
#else
#error "imc_trace_loop.S: no loop for this architecture"
#endif
	.section .note.GNU-stack,"",%progbits
