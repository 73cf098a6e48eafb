/*
 * Loops with known shapes for test_pm_soft and bench/pm_bench, with labels
 * at the instructions the tests look for.
 *
 * Some loops make a system call right before the instruction under test: a
 * CPU-time timer expires at the kernel's tick, and a tick that lands in the
 * system call (kernel time of the thread) delivers the timer signal on the
 * way back to user mode, with RIP at the instruction after the syscall.  So
 * most samples of such a loop are of that one instruction, and a test gets
 * hundreds of them per second of CPU time.  The system call is a read of
 * 64 KiB from /dev/zero (a few microseconds of kernel time).
 */
	.text

/* void pm_loop34(long n, int zero_fd, void *buf): n iterations; the branch
 * at pm_loop34_branch is taken when the counter mod 4 != 0: exactly 3
 * times in 4 (the counter starts at 1).  The flags of the test survive the
 * syscall (the kernel restores RFLAGS). */
	.globl pm_loop34, pm_loop34_branch
	.type pm_loop34, @function
pm_loop34:
	push %rbx
	push %r12
	push %r13
	mov %rdi, %r12          /* n */
	mov %esi, %r13d         /* fd */
	mov %rdx, %r9           /* buf (r9: not touched by syscall) */
	xor %ebx, %ebx
1:	add $1, %ebx
	mov $0, %eax            /* SYS_read */
	mov %r13d, %edi
	mov %r9, %rsi
	mov $65536, %edx
	test $3, %bl
	syscall
pm_loop34_branch:
	jnz 2f
	nop
2:	dec %r12
	jnz 1b
	pop %r13
	pop %r12
	pop %rbx
	ret
	.size pm_loop34, .-pm_loop34

/* void pm_div0(long n, int zero_fd, void *buf): n divisions by zero, each
 * right after a syscall.  The program's SIGFPE handler must set RIP to
 * pm_div0_next. */
	.globl pm_div0, pm_div0_insn, pm_div0_next
	.type pm_div0, @function
pm_div0:
	push %rbx
	push %r12
	push %r13
	mov %rdi, %r12
	mov %esi, %r13d
	mov %rdx, %r9
	xor %r8d, %r8d
1:	mov $0, %eax
	mov %r13d, %edi
	mov %r9, %rsi
	mov $65536, %edx
	syscall
pm_div0_insn:
	divl %r8d
pm_div0_next:
	dec %r12
	jnz 1b
	pop %r13
	pop %r12
	pop %rbx
	ret
	.size pm_div0, .-pm_div0

/* void pm_load_after_read(long n, int zero_fd, void *buf, const void *p):
 * a quadword load from p right after each syscall. */
	.globl pm_load_after_read, pm_load_insn
	.type pm_load_after_read, @function
pm_load_after_read:
	push %rbx
	push %r12
	push %r13
	mov %rdi, %r12
	mov %esi, %r13d
	mov %rdx, %r9
	mov %rcx, %rbx
1:	mov $0, %eax
	mov %r13d, %edi
	mov %r9, %rsi
	mov $65536, %edx
	syscall
pm_load_insn:
	mov (%rbx), %rax
	dec %r12
	jnz 1b
	pop %r13
	pop %r12
	pop %rbx
	ret
	.size pm_load_after_read, .-pm_load_after_read

/* void pm_work_a(long n), pm_work_b(long n): the same register-only loop of
 * n iterations (about the same time per iteration), at two PC ranges
 * [pm_work_a, pm_work_a_end) and [pm_work_b, pm_work_b_end). */
	.globl pm_work_a, pm_work_a_end, pm_work_b, pm_work_b_end
	.type pm_work_a, @function
	.p2align 6
pm_work_a:
	mov %rdi, %rax
1:	imul $3, %rax, %rdx
	add %rdx, %rcx
	xor %rcx, %rsi
	dec %rdi
	jnz 1b
	ret
pm_work_a_end:
	.size pm_work_a, .-pm_work_a
	.type pm_work_b, @function
	.p2align 6
pm_work_b:
	mov %rdi, %rax
1:	imul $3, %rax, %rdx
	add %rdx, %rcx
	xor %rcx, %rsi
	dec %rdi
	jnz 1b
	ret
pm_work_b_end:
	.size pm_work_b, .-pm_work_b

/* void pm_store_after_read(long n, int zero_fd, void *buf, char *p, long
 * stride): a byte store to p, p += stride, right after each syscall, a
 * read of 1 MiB into buf (a stride of a page: every store is the first to
 * its page).  A tick that lands in the store's own page fault samples the
 * store again with its page mapped: the long read makes that rare. */
	.globl pm_store_after_read, pm_store_insn
	.type pm_store_after_read, @function
pm_store_after_read:
	push %rbx
	push %r12
	push %r13
	push %r14
	mov %rdi, %r12
	mov %esi, %r13d
	mov %rdx, %r9
	mov %rcx, %rbx
	mov %r8, %r14
1:	mov $0, %eax
	mov %r13d, %edi
	mov %r9, %rsi
	mov $1048576, %edx      /* 1 MiB: far longer than the store's own page fault */
	syscall
pm_store_insn:
	movb $1, (%rbx)
	add %r14, %rbx
	dec %r12
	jnz 1b
	pop %r14
	pop %r13
	pop %r12
	pop %rbx
	ret
	.size pm_store_after_read, .-pm_store_after_read

/* void pm_bad_ops(long n, int zero_fd, void *buf, const void *bad): after
 * each syscall a ud2 (SIGILL) at pm_ud2_insn and a load from bad (SIGSEGV
 * or SIGBUS) at pm_segv_insn; the program's handlers must set RIP to pm_ud2_next and
 * pm_segv_next.  The reads are of 1 MiB: the faults' own handling is long. */
	.globl pm_bad_ops, pm_ud2_insn, pm_ud2_next, pm_segv_insn, pm_segv_next
	.type pm_bad_ops, @function
pm_bad_ops:
	push %rbx
	push %r12
	push %r13
	mov %rdi, %r12
	mov %esi, %r13d
	mov %rdx, %r9
	mov %rcx, %r8
1:	mov $0, %eax
	mov %r13d, %edi
	mov %r9, %rsi
	mov $1048576, %edx
	syscall
pm_ud2_insn:
	ud2
pm_ud2_next:
	mov $0, %eax
	mov %r13d, %edi
	mov %r9, %rsi
	mov $1048576, %edx
	syscall
pm_segv_insn:
	mov (%r8), %rax
pm_segv_next:
	dec %r12
	jnz 1b
	pop %r13
	pop %r12
	pop %rbx
	ret
	.size pm_bad_ops, .-pm_bad_ops

/* long pm_pushf_loop(long n): n pushf; pop; returns how many of the pushed
 * flags had TF (0x100) set: a pushf stepped with TF would push it. */
	.globl pm_pushf_loop, pm_pushf_insn
	.type pm_pushf_loop, @function
pm_pushf_loop:
	xor %edx, %edx
1:
pm_pushf_insn:
	pushfq
	pop %rax
	shr $8, %eax
	and $1, %eax
	add %rax, %rdx
	dec %rdi
	jnz 1b
	mov %rdx, %rax
	ret
	.size pm_pushf_loop, .-pm_pushf_loop

	.section .note.GNU-stack,"",@progbits
