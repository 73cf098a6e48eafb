/*
 * Where libheritage itself lives in memory: the loaded segments of the object
 * (libpapi.so, or the executable when PAPI is linked statically) that holds
 * this code.  A watched range must not cover them, or counting would trap
 * the counter.
 */
#ifndef HERITAGE_SELF_H
#define HERITAGE_SELF_H

#include <stdint.h>

#define HERITAGE_SELF_MAX_SEGMENTS 8

struct heritage_segment {
	uintptr_t start, end;
};

/* Fills at most HERITAGE_SELF_MAX_SEGMENTS segments; returns the count. */
int heritage_self_segments(struct heritage_segment *seg);

/* 0 if every page of [start, end) is mapped, else -ENOMEM. */
int heritage_range_mapped(uintptr_t start, uintptr_t end);

#endif
