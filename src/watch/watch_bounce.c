/*
 * The system-call bounce buffers of the page-trap backend (watch_bounce.h).
 *
 * System calls never fault into user handlers; a read(2) into a protected
 * page fails with EFAULT.  The libc entry points that take user buffers are
 * interposed here and redirect a call whose buffer overlaps protected pages
 * through a bounce buffer, copied with /proc/self/mem, which the kernel lets
 * past our PROT_NONE: no page is opened, so nothing is counted, as on
 * Itanium, which counted user-level accesses only.
 */
#undef _FORTIFY_SOURCE
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common/heritage_error.h"
#include "watch_bounce.h"
#include "watch_got.h"
#include "watch_signal.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* Set once by the page-trap backend when it starts; until then no buffer
 * is watched and every call goes straight through. */
static struct {
	_Atomic(const _Atomic unsigned *) watching;
	watch_bounce_overlapping_fn overlapping;
	_Atomic uint64_t count;
} redirect;

void watch_bounce_set_runs(const _Atomic unsigned *watching, watch_bounce_overlapping_fn overlapping)
{
	redirect.overlapping = overlapping;
	atomic_store(&redirect.watching, watching);
}

uint64_t watch_bounce_count(void)
{
	return atomic_load(&redirect.count);
}

static int cmp_run(const void *a, const void *b)
{
	const struct watch_run *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* ---- System calls ----------------------------------------------------------
 *
 * Interposed libc entry points that take user buffers: read, write, pread,
 * pread64, pwrite, pwrite64, readv, writev, recv, recvfrom, send, sendto,
 * __read_chk.  When the buffer overlaps protected pages the call goes through
 * a bounce buffer (mmap'd, so never on a watched page) and the user buffer is
 * filled or read through /proc/self/mem (protected pages) or
 * process_vm_readv/writev (the rest, with their own protection honoured), so
 * the call behaves as without watching and nothing is counted.  Not covered:
 * stdio (fread/fwrite call the kernel from inside libc), recvmsg/sendmsg,
 * preadv/pwritev, splice/vmsplice, io_uring, and direct syscall(2).
 */

static void *real_fn(void **slot, const char *name)
{
	void *p = atomic_load((_Atomic(void *) *)slot);
	if (!p) {
		p = dlsym(RTLD_NEXT, name);
		atomic_store((_Atomic(void *) *)slot, p);
	}
	return p;
}

#define REAL(type, name) ((type)real_fn(&real_##name, #name))
static void *real_read, *real_write, *real_pread64, *real_pwrite64, *real_readv, *real_writev;
static void *real_recv, *real_recvfrom, *real_send, *real_sendto;

static int buffer_watched(const void *buf, size_t n)
{
	const _Atomic unsigned *watching = atomic_load(&redirect.watching);
	if (!n || !watching || !atomic_load(watching))
		return 0;
	struct watch_run r;
	return redirect.overlapping((uintptr_t)buf, (uintptr_t)buf + n, &r, 1) > 0;
}

/* Copy between the user buffer and the bounce buffer.  to_user: bounce →
 * user.  -1 with errno = EFAULT where the kernel would have failed. */
static int copy_user(void *user, void *bounce, size_t n, int to_user)
{
	struct watch_run runs[32];
	uintptr_t lo = (uintptr_t)user, hi = lo + n;
	for (int attempt = 0; attempt < 4; attempt++) {
		unsigned nr = redirect.overlapping(lo, hi, runs, 32);
		qsort(runs, nr, sizeof *runs, cmp_run);
		uintptr_t at = lo;
		int failed = 0;
		for (unsigned i = 0; i <= nr && at < hi && !failed; i++) {
			uintptr_t seg_hi = i < nr ? (runs[i].lo > at ? runs[i].lo : at) : hi;
			if (seg_hi > hi)
				seg_hi = hi;
			if (seg_hi > at) {
				/* Unprotected part: the kernel checks its protection. */
				struct iovec local = { (char *)bounce + (at - lo), seg_hi - at };
				struct iovec remote = { (void *)at, seg_hi - at };
				ssize_t r = to_user ? process_vm_writev(watch_signal_pid(), &local, 1, &remote, 1, 0)
				                    : process_vm_readv(watch_signal_pid(), &local, 1, &remote, 1, 0);
				if (r != (ssize_t)(seg_hi - at)) {
					failed = 1;
					break;
				}
				at = seg_hi;
			}
			if (i == nr || at >= hi)
				break;
			uintptr_t b = runs[i].hi < hi ? runs[i].hi : hi;
			if (b <= at)
				continue;
			/* Protected part: allowed if its own protection allows. */
			if (!(runs[i].prot & (to_user ? PROT_WRITE : PROT_READ))) {
				errno = EFAULT;
				return -1;
			}
			long r = to_user ? watch_sys_pwrite(watch_signal_mem_fd(), (char *)bounce + (at - lo), b - at, at)
			                 : watch_sys_pread(watch_signal_mem_fd(), (char *)bounce + (at - lo), b - at, at);
			if (r != (long)(b - at)) {
				errno = EFAULT;
				return -1;
			}
			at = b;
		}
		if (!failed)
			return 0;
		/* A session started between the snapshot and the copy: again. */
	}
	errno = EFAULT;
	return -1;
}

static void *bounce_alloc(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	atomic_fetch_add(&redirect.count, 1);
	return p;
}

static void bounce_free(void *p, size_t n)
{
	int saved = errno;
	munmap(p, n);
	errno = saved;
}

/* The shape shared by every reading call: syscall into the bounce buffer,
 * then copy what arrived into the user's buffer. */
#define BOUNCE_IN(buf, n, call_with)                                                                   \
	do {                                                                                           \
		void *tmp_ = bounce_alloc(n);                                                          \
		if (!tmp_) {                                                                           \
			errno = ENOMEM;                                                                \
			return -1;                                                                     \
		}                                                                                      \
		ssize_t r_ = call_with(tmp_);                                                          \
		if (r_ > 0 && copy_user((buf), tmp_, (size_t)r_, 1) != 0)                              \
			r_ = -1;                                                                       \
		bounce_free(tmp_, (n));                                                                \
		return r_;                                                                             \
	} while (0)

#define BOUNCE_OUT(buf, n, call_with)                                                                  \
	do {                                                                                           \
		void *tmp_ = bounce_alloc(n);                                                          \
		if (!tmp_) {                                                                           \
			errno = ENOMEM;                                                                \
			return -1;                                                                     \
		}                                                                                      \
		ssize_t r_ = copy_user((void *)(buf), tmp_, (n), 0) != 0 ? -1 : call_with(tmp_);       \
		bounce_free(tmp_, (n));                                                                \
		return r_;                                                                             \
	} while (0)

/* Without watched pages in the buffer, the real call; an EFAULT that a
 * session started meanwhile explains falls through to the bounce. */
#define PASS_THROUGH(buf, n, direct)                                                                   \
	do {                                                                                           \
		if (!buffer_watched((buf), (n))) {                                                     \
			ssize_t r_ = (direct);                                                         \
			if (!(r_ < 0 && errno == EFAULT && buffer_watched((buf), (n))))                \
				return r_;                                                             \
		}                                                                                      \
	} while (0)

typedef ssize_t (*read_fn)(int, void *, size_t);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*readv_fn)(int, const struct iovec *, int);
typedef ssize_t (*recv_fn)(int, void *, size_t, int);
typedef ssize_t (*recvfrom_fn)(int, void *, size_t, int, __SOCKADDR_ARG, socklen_t *);
typedef ssize_t (*send_fn)(int, const void *, size_t, int);
typedef ssize_t (*sendto_fn)(int, const void *, size_t, int, __CONST_SOCKADDR_ARG, socklen_t);

static ssize_t bounce_read(int fd, void *buf, size_t n)
{
	read_fn real = REAL(read_fn, read);
	PASS_THROUGH(buf, n, real(fd, buf, n));
#define CALL(t) real(fd, t, n)
	BOUNCE_IN(buf, n, CALL);
#undef CALL
}

static ssize_t bounce_write(int fd, const void *buf, size_t n)
{
	write_fn real = REAL(write_fn, write);
	PASS_THROUGH(buf, n, real(fd, buf, n));
#define CALL(t) real(fd, t, n)
	BOUNCE_OUT(buf, n, CALL);
#undef CALL
}

static ssize_t bounce_pread64(int fd, void *buf, size_t n, off_t off)
{
	pread_fn real = REAL(pread_fn, pread64);
	PASS_THROUGH(buf, n, real(fd, buf, n, off));
#define CALL(t) real(fd, t, n, off)
	BOUNCE_IN(buf, n, CALL);
#undef CALL
}

static ssize_t bounce_pread(int fd, void *buf, size_t n, off_t off)
{
	return bounce_pread64(fd, buf, n, off);
}

static ssize_t bounce_pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	pwrite_fn real = REAL(pwrite_fn, pwrite64);
	PASS_THROUGH(buf, n, real(fd, buf, n, off));
#define CALL(t) real(fd, t, n, off)
	BOUNCE_OUT(buf, n, CALL);
#undef CALL
}

static ssize_t bounce_pwrite(int fd, const void *buf, size_t n, off_t off)
{
	return bounce_pwrite64(fd, buf, n, off);
}

static ssize_t bounce_recv(int fd, void *buf, size_t n, int flags)
{
	recv_fn real = REAL(recv_fn, recv);
	PASS_THROUGH(buf, n, real(fd, buf, n, flags));
#define CALL(t) real(fd, t, n, flags)
	BOUNCE_IN(buf, n, CALL);
#undef CALL
}

static ssize_t bounce_recvfrom(int fd, void *buf, size_t n, int flags, __SOCKADDR_ARG addr, socklen_t *alen)
{
	recvfrom_fn real = REAL(recvfrom_fn, recvfrom);
	PASS_THROUGH(buf, n, real(fd, buf, n, flags, addr, alen));
#define CALL(t) real(fd, t, n, flags, addr, alen)
	BOUNCE_IN(buf, n, CALL);
#undef CALL
}

static ssize_t bounce_send(int fd, const void *buf, size_t n, int flags)
{
	send_fn real = REAL(send_fn, send);
	PASS_THROUGH(buf, n, real(fd, buf, n, flags));
#define CALL(t) real(fd, t, n, flags)
	BOUNCE_OUT(buf, n, CALL);
#undef CALL
}

static ssize_t bounce_sendto(int fd, const void *buf, size_t n, int flags, __CONST_SOCKADDR_ARG addr, socklen_t alen)
{
	sendto_fn real = REAL(sendto_fn, sendto);
	PASS_THROUGH(buf, n, real(fd, buf, n, flags, addr, alen));
#define CALL(t) real(fd, t, n, flags, addr, alen)
	BOUNCE_OUT(buf, n, CALL);
#undef CALL
}

static int iov_watched(const struct iovec *iov, int cnt, size_t *total)
{
	int watched = 0;
	size_t sum = 0;
	for (int i = 0; i < cnt; i++) {
		sum += iov[i].iov_len;
		watched |= buffer_watched(iov[i].iov_base, iov[i].iov_len);
	}
	*total = sum;
	return watched;
}

static ssize_t bounce_readv(int fd, const struct iovec *iov, int cnt)
{
	readv_fn real = REAL(readv_fn, readv);
	size_t total;
	if (cnt <= 0 || !iov_watched(iov, cnt, &total) || total == 0)
		return real(fd, iov, cnt);
	void *tmp = bounce_alloc(total);
	if (!tmp) {
		errno = ENOMEM;
		return -1;
	}
	struct iovec one = { tmp, total };
	ssize_t r = real(fd, &one, 1);
	size_t at = 0;
	for (int i = 0; i < cnt && r > 0 && at < (size_t)r; i++) {
		size_t part = iov[i].iov_len < (size_t)r - at ? iov[i].iov_len : (size_t)r - at;
		if (part && copy_user(iov[i].iov_base, (char *)tmp + at, part, 1) != 0)
			r = -1;
		at += part;
	}
	bounce_free(tmp, total);
	return r;
}

static ssize_t bounce_writev(int fd, const struct iovec *iov, int cnt)
{
	readv_fn real = REAL(readv_fn, writev);
	size_t total;
	if (cnt <= 0 || !iov_watched(iov, cnt, &total) || total == 0)
		return real(fd, iov, cnt);
	void *tmp = bounce_alloc(total);
	if (!tmp) {
		errno = ENOMEM;
		return -1;
	}
	size_t at = 0;
	ssize_t r = 0;
	for (int i = 0; i < cnt && r == 0; i++) {
		if (iov[i].iov_len && copy_user(iov[i].iov_base, (char *)tmp + at, iov[i].iov_len, 0) != 0)
			r = -1;
		at += iov[i].iov_len;
	}
	if (r == 0) {
		struct iovec one = { tmp, total };
		r = real(fd, &one, 1);
	}
	bounce_free(tmp, total);
	return r;
}

extern void __chk_fail(void) __attribute__((noreturn));

static ssize_t bounce_read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	if (n > buflen)
		__chk_fail();
	return bounce_read(fd, buf, n);
}

/* What the callers' GOT slots get (watch_got.c), at the page-trap backend's
 * first start: before it, a program linked with libpapi calls libc's own. */
static const struct watch_got_hook bounce_hooks[] = {
	{ "read", (void *)bounce_read },
	{ "write", (void *)bounce_write },
	{ "pread", (void *)bounce_pread },
	{ "pread64", (void *)bounce_pread64 },
	{ "pwrite", (void *)bounce_pwrite },
	{ "pwrite64", (void *)bounce_pwrite64 },
	{ "readv", (void *)bounce_readv },
	{ "writev", (void *)bounce_writev },
	{ "recv", (void *)bounce_recv },
	{ "recvfrom", (void *)bounce_recvfrom },
	{ "send", (void *)bounce_send },
	{ "sendto", (void *)bounce_sendto },
	{ "__read_chk", (void *)bounce_read_chk },
};

int watch_bounce_interpose(char *why, size_t len)
{
	int n = watch_got_hook_add(bounce_hooks, sizeof bounce_hooks / sizeof bounce_hooks[0], why, len);
	return n < 0 ? n : 0;
}
