/*
 * The monitor's own code and state (watch_self.c): what the trap backends
 * must never count.  The Itanium 2 counted the program's user-level
 * accesses; whatever PAPI and libheritage do inside a user's cover (their
 * handlers, their buffers, the executable's hook archive touching its
 * statics after the program's .bss) is the monitor's, not the program's.
 *
 * Told apart by the instruction that makes the access: code of the object
 * libheritage is linked into when that is a shared object (libpapi.so; a
 * program linked with PAPI statically is all one object, and then nothing
 * is left out), and the hook archive's text (libpapi-heritage-instrument.a,
 * its own section, handed over by watch_instrument_exe.c).  Not told apart:
 * a libc routine (memcpy, malloc's bookkeeping) called by the monitor on
 * memory in the cover -- its PC is libc's, as when the program calls it.
 */
#ifndef HERITAGE_WATCH_SELF_H
#define HERITAGE_WATCH_SELF_H

#include <stdint.h>

/* Thread context, before a session starts; cheap after the first call. */
void watch_self_init(void);
/* The executable's hook archive: its code, and the page-aligned pages of its
 * state (no program data shares them, so no backend needs to trap them). */
void watch_self_set_exe(uintptr_t text_lo, uintptr_t text_hi, uintptr_t state_lo, uintptr_t state_hi);
/* Whether the instruction at pc is the monitor's.  Async-signal-safe. */
int watch_self_code(uintptr_t pc);
/* The hook archive's state pages, [*lo, *hi); *lo == *hi when none. */
void watch_self_state(uintptr_t *lo, uintptr_t *hi);

#endif
