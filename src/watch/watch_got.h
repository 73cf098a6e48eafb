/*
 * Interposition by consent (watch_got.c): libc functions that a backend must
 * see the program call (read into a protected page, sigaction for a signal
 * the engine owns) are redirected only once a session needs them, by
 * pointing the callers' GOT slots at our wrappers.  libpapi.so itself
 * exports no libc name, so a program that never starts such a session runs
 * on libc's own functions.
 */
#ifndef HERITAGE_WATCH_GOT_H
#define HERITAGE_WATCH_GOT_H

#include <stddef.h>

struct watch_got_hook {
	const char *name;   /* the symbol the callers import */
	void *fn;           /* what their GOT slots get */
};

/* Adds hooks to the process's set (once each; a name already hooked keeps
 * its first fn) and points every GOT slot (PLT jump slots and GLOB_DAT,
 * RELRO pages opened and closed again) that imports a hooked name at its
 * fn, in every loaded object but the runtime's (watch_codemap_runtime_object:
 * libc, the loader, libpthread, capstone, the vDSO; libpapi's own calls
 * included, as when it exported the names).  Objects
 * loaded later (dlopen) are patched at the next call, i.e. the next session
 * start that needs the hooks; nothing is walked again while no object was
 * loaded and no name added.  Returns the number of slots changed (>= 0), or
 * -errno with why. */
int watch_got_hook_add(const struct watch_got_hook *hooks, unsigned n, char *why, size_t len);

/* The slots a hook was written to so far, all objects (for tests). */
unsigned watch_got_hooked_slots(void);

#endif
