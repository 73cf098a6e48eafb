/*
 * Raw Linux system calls for the page-trap signal handlers.
 *
 * The handlers must not touch errno (it lives in thread-local storage, which
 * may sit on a watched page, and the interrupted code may be using it) and must
 * not go through libc's PLT (the GOT of a statically linked application can
 * share a page with watched globals).  A bare `syscall` instruction does
 * neither: these return the kernel's result, -errno on failure.
 */
#ifndef HERITAGE_WATCH_SYS_H
#define HERITAGE_WATCH_SYS_H

#include <stdint.h>
#include <sys/syscall.h>

static inline long watch_sys6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long ret;
	__asm__ volatile("syscall"
	                 : "=a"(ret)
	                 : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
	                 : "rcx", "r11", "memory");
	return ret;
}

static inline long watch_sys3(long nr, long a1, long a2, long a3)
{
	return watch_sys6(nr, a1, a2, a3, 0, 0, 0);
}

static inline int watch_sys_gettid(void)
{
	return (int)watch_sys6(SYS_gettid, 0, 0, 0, 0, 0, 0);
}

static inline int watch_sys_getpid(void)
{
	return (int)watch_sys6(SYS_getpid, 0, 0, 0, 0, 0, 0);
}

static inline long watch_sys_mprotect(uintptr_t addr, uintptr_t len, int prot)
{
	return watch_sys3(SYS_mprotect, (long)addr, (long)len, prot);
}

static inline long watch_sys_pread(int fd, void *buf, uintptr_t len, uintptr_t off)
{
	return watch_sys6(SYS_pread64, fd, (long)buf, (long)len, (long)off, 0, 0);
}

static inline long watch_sys_pwrite(int fd, const void *buf, uintptr_t len, uintptr_t off)
{
	return watch_sys6(SYS_pwrite64, fd, (long)buf, (long)len, (long)off, 0, 0);
}

static inline long watch_sys_tgkill(int pid, int tid, int sig)
{
	return watch_sys3(SYS_tgkill, pid, tid, sig);
}

static inline void watch_sys_yield(void)
{
	watch_sys6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
}

/* memcpy without a call into libc (see above): the handlers use this. */
static inline void watch_copy(void *dst, const void *src, uintptr_t n)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

#endif
