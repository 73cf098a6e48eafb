/*
 * System-call bounce buffers (watch_bounce.c): read, write, pread, pwrite,
 * readv, writev, recv, recvfrom, send, sendto and __read_chk interposed, so
 * that a buffer on pages the page-trap backend protects works as without
 * watching, uncounted.
 */
#ifndef HERITAGE_WATCH_BOUNCE_H
#define HERITAGE_WATCH_BOUNCE_H

#include <stdint.h>

/* A run of protected pages and the protection to give back. */
struct watch_run {
	uintptr_t lo, hi;
	int prot;
};

/* Copies of the protected runs overlapping [lo, hi), at most max. */
typedef unsigned (*watch_bounce_overlapping_fn)(uintptr_t lo, uintptr_t hi, struct watch_run *out, unsigned max);

/* The page-trap backend's runs: *watching is their number (0: nothing is
 * protected, no lookup), overlapping() finds them. */
void watch_bounce_set_runs(const _Atomic unsigned *watching, watch_bounce_overlapping_fn overlapping);

/* Points the program's calls of those functions at the wrappers
 * (watch_got.h); each page-trap start calls it, for objects loaded since.
 * 0, or -errno with why. */
int watch_bounce_interpose(char *why, size_t len);

/* Calls redirected through a bounce buffer so far. */
uint64_t watch_bounce_count(void);

#endif
