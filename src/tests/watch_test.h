/*
 * What the page-trap and breakpoint unit tests share (test_pagetrap.c,
 * test_pagetrap_code.c, test_breakpoint.c): a session on one range, and
 * workloads with a known number of scalar accesses.
 */
#ifndef HERITAGE_WATCH_TEST_H
#define HERITAGE_WATCH_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common/heritage_probe.h"
#include "watch/watch.h"
#include "watch/watch_breakpoint.h"
#include "watch/watch_pagetrap.h"
#include "watch/watch_pages.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define N_INTS 16384
#define NOINLINE __attribute__((noinline, optimize("no-tree-vectorize", "no-unroll-loops")))

static const struct watch_backend_ops *const ops = &watch_pagetrap_ops;

/* Memory to watch, on pages of its own.  The backend protects whole
 * pages, and the C library's own system calls on the other data of a
 * watched page fail with EFAULT (itanium2(3), LIMITATIONS: fwrite's
 * internals are not interposed): with malloc'd arrays, Check's message
 * buffer once shared a page with the first test's array, and every run of
 * make check (its environment moved the heap) ended in "Bad message type
 * arg 131072" before the first result. */
__attribute__((unused)) static void *watched_alloc(size_t bytes)
{
	return aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
}

/* Addresses, not pointers: the watched memory is not read here. */
#define watch_start(s, lo, hi) watch_start_at((s), (uintptr_t)(lo), (uintptr_t)(hi))
__attribute__((unused)) static void watch_start_at(struct watch_session *s, uintptr_t lo, uintptr_t hi)
{
	memset(s, 0, sizeof *s);
	s->req.want_data = 1;
	s->req.ndata = 1;
	s->req.data[0].start = lo;
	s->req.data[0].end = hi;
	char why[WATCH_ERRLEN] = "";
	int r = ops->start(s, why, sizeof why);
	ck_assert_msg(r == 0, "start failed: %d %s", r, why);
}

__attribute__((unused)) static struct watch_counts watch_stop(struct watch_session *s)
{
	ops->stop(s);
	return s->acc;
}

/* ---- workloads: one scalar access per element, never vectorised ---------- */

NOINLINE __attribute__((unused)) static void store_pass(volatile int *a, int lo, int hi)
{
	for (int i = lo; i < hi; i++)
		a[i] = i;
}

NOINLINE __attribute__((unused)) static long load_pass(volatile int *a, int lo, int hi)
{
	long sum = 0;
	for (int i = lo; i < hi; i++)
		sum += a[i];
	return sum;
}

NOINLINE __attribute__((unused)) static void rep_stosq(void *dst, uint64_t n, uint64_t val)
{
	__asm__ volatile("rep stosq" : "+D"(dst), "+c"(n) : "a"(val) : "memory");
}

NOINLINE __attribute__((unused)) static void rep_movsb(void *dst, const void *src, uint64_t n)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

__attribute__((unused)) static uint64_t ns_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether the pages of [lo, hi) are protected as /proc/self/maps says. */
__attribute__((unused)) static int range_has_prot_none(const void *lo, const void *hi)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long a, b;
		char perms[5];
		if (sscanf(line, "%lx-%lx %4s", &a, &b, perms) != 3)
			continue;
		if (a < (uintptr_t)hi && b > (uintptr_t)lo && !strncmp(perms, "---", 3))
			found = 1;
	}
	if (f)
		fclose(f);
	return found;
}

#define PG 4096

/* Whether every page of [lo, hi) is unmapped (mincore: ENOMEM per page). */
__attribute__((unused)) static int unmapped(const void *lo, const void *hi)
{
	unsigned char v;
	for (uintptr_t a = (uintptr_t)lo; a < (uintptr_t)hi; a += PG)
		if (mincore((void *)a, PG, &v) == 0 || errno != ENOMEM)
			return 0;
	return 1;
}

#endif
