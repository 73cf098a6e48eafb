/* Functions with the block hook calls a compiler puts in them
 * (-fsanitize-coverage=trace-pc), written out so that their instruction
 * counts are known (test_blocks.c).  `hook` is __sanitizer_cov_trace_pc,
 * libheritage's (watch_blocks.c).  Each function has its unwind information
 * (.cfi_*), as compiled code does: the analysis finds functions by it. */
#define hook __sanitizer_cov_trace_pc
	.text

/* long bc_defer(long n): like gcc's code for a counted loop.  Blocks with
 * no hook: A and B on the entry's two edges, J after the loop.
 * n >= 1: 13 + 4n instructions; n <= 0: 9. */
	.globl bc_defer, bc_defer_loop, bc_defer_end
	.type bc_defer, @function
bc_defer:
	.cfi_startproc
	push	%rbx                /* E: 5 */
	.cfi_def_cfa_offset 16
	mov	%rdi, %rbx
	call	hook
	test	%rbx, %rbx
	jle	3f
	xor	%eax, %eax          /* A: 2 */
	jmp	2f
bc_defer_loop:
1:	call	hook                /* L: 4 per iteration */
	add	$1, %rax
	dec	%rbx
	jnz	1b
	jmp	4f                  /* J: 1 */
2:	call	hook                /* P: 2 */
	jmp	1b
3:	mov	$-1, %rax           /* B: 1 */
4:	call	hook                /* X: 3 */
	pop	%rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
bc_defer_end:
	.size bc_defer, . - bc_defer

/* long bc_rec(long n): recursion inside a block with no hook; the entry's
 * two paths end at different hooks.  12n + 10 instructions. */
	.globl bc_rec, bc_rec_end
	.type bc_rec, @function
bc_rec:
	.cfi_startproc
	push	%rbx                /* E: 5 */
	.cfi_def_cfa_offset 16
	mov	%rdi, %rbx
	call	hook
	test	%rbx, %rbx
	jle	2f
	lea	-1(%rbx), %rdi      /* A: 3 */
	call	bc_rec
	jmp	4f
2:	xor	%eax, %eax          /* B: 2 */
	jmp	5f
4:	call	hook                /* X: 4 */
	add	$1, %rax
	pop	%rbx
	.cfi_remember_state
	.cfi_def_cfa_offset 8
	ret
	.cfi_restore_state
5:	call	hook                /* Y: 3 */
	pop	%rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
bc_rec_end:
	.size bc_rec, . - bc_rec

/* long bc_cold(long x): a cold part in .text.unlikely, entered and left by
 * jumps, as gcc's foo.cold.  x >= 0: 8 instructions in bc_cold; x < 0: the
 * same 8 and 3 in bc_cold_part. */
	.globl bc_cold, bc_cold_end, bc_cold_part
	.type bc_cold, @function
bc_cold:
	.cfi_startproc
	push	%rbx                /* E: 5 */
	.cfi_def_cfa_offset 16
	mov	%rdi, %rbx          /* the hook, a C function, may change %rdi */
	call	hook
	test	%rbx, %rbx
	js	bc_cold_part
bc_cold_back:
	call	hook                /* X: 3 */
	pop	%rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
bc_cold_end:
	.size bc_cold, . - bc_cold
	.section .text.unlikely,"ax",@progbits
	.type bc_cold_part, @function
bc_cold_part:
	.cfi_startproc
	.cfi_def_cfa_offset 16
	call	hook                /* C: 3 */
	neg	%rbx
	jmp	bc_cold_back
	.cfi_endproc
	.size bc_cold_part, . - bc_cold_part
	.text

/* Refused: two paths from the entry's hook reach the next one with 0 and 2
 * instructions without a hook. */
	.globl bc_ambiguous, bc_ambiguous_end
	.type bc_ambiguous, @function
bc_ambiguous:
	.cfi_startproc
	push	%rbx
	.cfi_def_cfa_offset 16
	mov	%rdi, %rbx
	call	hook
	test	%rbx, %rbx
	je	1f
	mov	$1, %eax
	nop
1:	call	hook
	pop	%rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
bc_ambiguous_end:
	.size bc_ambiguous, . - bc_ambiguous

/* Refused: a loop with no hook in it. */
	.globl bc_orphan_loop, bc_orphan_loop_end
	.type bc_orphan_loop, @function
bc_orphan_loop:
	.cfi_startproc
	push	%rbx
	.cfi_def_cfa_offset 16
	mov	%rdi, %rbx
	call	hook
	mov	%rbx, %rcx
1:	dec	%rcx
	jnz	1b
	pop	%rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
bc_orphan_loop_end:
	.size bc_orphan_loop, . - bc_orphan_loop

/* Refused: a jump table (an indirect jump inside the frame). */
	.globl bc_jump_table, bc_jump_table_end
	.type bc_jump_table, @function
bc_jump_table:
	.cfi_startproc
	push	%rbx
	.cfi_def_cfa_offset 16
	mov	%rdi, %rbx
	call	hook
	lea	8f(%rip), %rax
	jmp	*(%rax, %rbx, 8)
1:	call	hook
	pop	%rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
bc_jump_table_end:
	.size bc_jump_table, . - bc_jump_table

/* Refused: the entry block's hook comes after a branch target. */
	.globl bc_entry_nohook, bc_entry_nohook_end
	.type bc_entry_nohook, @function
bc_entry_nohook:
	.cfi_startproc
	push	%rbx
	.cfi_def_cfa_offset 16
	mov	%rdi, %rbx
1:	call	hook
	dec	%rbx
	jnz	1b
	pop	%rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
bc_entry_nohook_end:
	.size bc_entry_nohook, . - bc_entry_nohook

/* Refused: no hook at all (built without the flags). */
	.globl bc_plain, bc_plain_end
	.type bc_plain, @function
bc_plain:
	.cfi_startproc
	lea	1(%rdi), %rax
	ret
	.cfi_endproc
bc_plain_end:
	.size bc_plain, . - bc_plain

	.section .rodata
	.balign 8
8:	.long 1b - 8b
	.section .note.GNU-stack,"",@progbits
