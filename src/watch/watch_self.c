/*
 * The monitor's own code and state (watch_self.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "watch_self.h"

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>

#define SELF_MAX_CODE 8

/* Written once (init, the archive's constructor) before any session can
 * trap; read by the signal handlers. */
static struct {
	unsigned n;
	struct {
		uintptr_t lo, hi;
	} code[SELF_MAX_CODE];
	_Atomic uintptr_t exe_text_lo, exe_text_hi, exe_state_lo, exe_state_hi;
} self;

static pthread_once_t self_once = PTHREAD_ONCE_INIT;

/* The executable segments of the shared object holding this code. */
static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t probe = (uintptr_t)arg;
	int mine = 0;
	(void)size;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && probe >= a && probe < a + ph->p_memsz)
			mine = 1;
	}
	if (!mine)
		return 0;
	/* The main program (no name): libheritage linked into it, as in the
	 * unit tests or a static PAPI; its code is the program's. */
	if (!info->dlpi_name || !info->dlpi_name[0])
		return 1;
	for (int i = 0; i < info->dlpi_phnum && self.n < SELF_MAX_CODE; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		self.code[self.n].lo = a;
		self.code[self.n].hi = a + ph->p_memsz;
		self.n++;
	}
	return 1;
}

static void find_self(void)
{
	dl_iterate_phdr(visit, (void *)(uintptr_t)&find_self);
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
		if (pc >= self.code[i].lo && pc < self.code[i].hi)
			return 1;
	return 0;
}

void watch_self_state(uintptr_t *lo, uintptr_t *hi)
{
	*lo = atomic_load(&self.exe_state_lo);
	*hi = atomic_load(&self.exe_state_hi);
}
