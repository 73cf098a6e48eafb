/* A loop whose instructions straddle a page boundary (range_stack instr):
 * its instruction range crosses a page, so the coarse cover is a block of
 * 2 or more pages around it, reaching the program's other pages, and the
 * add itself is split across the boundary.  The padding is int3: nothing
 * else here ever runs. */
	.text
	.balign 4096
	.fill 4096 - 5, 1, 0xcc
	.globl range_stack_loop
	.type range_stack_loop, @function
/* long range_stack_loop(long n), n >= 1: returns n; executes 3n + 3
 * instructions. */
range_stack_loop:
	mov	%rdi, %rcx          /* 3 bytes */
	xor	%eax, %eax          /* 2 bytes: the page ends here */
1:	add	$1, %rax            /* 4 bytes, on the next page */
	dec	%rcx
	jnz	1b
	ret
	.globl range_stack_loop_end
range_stack_loop_end:
	.size range_stack_loop, . - range_stack_loop
	.fill 64, 1, 0xcc
	.section .note.GNU-stack,"",@progbits
