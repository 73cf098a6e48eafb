/*
 * The monitor's own code and state (watch_self.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "watch_self.h"
#include "common/heritage_self.h"

#include <elf.h>
#include <pthread.h>
#include <stdatomic.h>

/* Written once (init, the archive's constructor) before any session can
 * trap; read by the signal handlers. */
static struct {
	unsigned n;
	struct heritage_segment code[HERITAGE_SELF_MAX_SEGMENTS];
	_Atomic uintptr_t exe_text_lo, exe_text_hi, exe_state_lo, exe_state_hi;
} self;

static pthread_once_t self_once = PTHREAD_ONCE_INIT;

/* The executable segments of the shared object holding libheritage.  In
 * the main program (the unit tests, a static PAPI) its code is the
 * program's: none. */
static void find_self(void)
{
	struct heritage_segment seg[HERITAGE_SELF_MAX_SEGMENTS];
	int is_program = 1, n = heritage_self_object(seg, &is_program);
	if (is_program)
		return;
	for (int i = 0; i < n; i++)
		if (seg[i].flags & PF_X)
			self.code[self.n++] = seg[i];
}

void watch_self_init(void)
{
	pthread_once(&self_once, find_self);
}

void watch_self_set_exe(uintptr_t text_lo, uintptr_t text_hi, uintptr_t state_lo, uintptr_t state_hi)
{
	atomic_store(&self.exe_text_lo, text_lo);
	atomic_store(&self.exe_text_hi, text_hi);
	atomic_store(&self.exe_state_lo, state_lo);
	atomic_store(&self.exe_state_hi, state_hi);
}

int watch_self_code(uintptr_t pc)
{
	if (pc >= atomic_load_explicit(&self.exe_text_lo, memory_order_relaxed) &&
	    pc < atomic_load_explicit(&self.exe_text_hi, memory_order_relaxed))
		return 1;
	for (unsigned i = 0; i < self.n; i++)
		if (pc >= self.code[i].start && pc < self.code[i].end)
			return 1;
	return 0;
}

void watch_self_state(uintptr_t *lo, uintptr_t *hi)
{
	*lo = atomic_load(&self.exe_state_lo);
	*hi = atomic_load(&self.exe_state_hi);
}
