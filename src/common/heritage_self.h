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
	unsigned flags; /* the PT_LOAD's p_flags: PF_R, PF_W, PF_X */
};

/* Fills at most HERITAGE_SELF_MAX_SEGMENTS segments; returns the count. */
int heritage_self_segments(struct heritage_segment *seg);
/* The same, and in *is_program whether that object is the main program
 * (libheritage linked into it: the unit tests, a static PAPI) rather than
 * a shared object such as libpapi.so. */
int heritage_self_object(struct heritage_segment *seg, int *is_program);

/* 0 if every page of [start, end) is mapped, else -ENOMEM. */
int heritage_range_mapped(uintptr_t start, uintptr_t end);

#endif
