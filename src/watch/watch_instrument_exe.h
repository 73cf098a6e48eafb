/*
 * The instrument backend's hooks linked into the executable itself
 * (libpapi-heritage-instrument.a, what `pkg-config --libs
 * papi-heritage-instrument` adds).  Instrumented code then calls them
 * directly, not through the PLT into libpapi: the indirect jump was about a
 * tenth of the cost of a hook call.  Their per-thread state lives in the
 * executable (local-exec TLS, one %fs-relative access); libpapi drives it
 * through this table, which the executable hands over from a constructor.
 * Without the archive, libpapi's own hooks count as before.
 */
#ifndef HERITAGE_WATCH_INSTRUMENT_EXE_H
#define HERITAGE_WATCH_INSTRUMENT_EXE_H

#include <stddef.h>
#include <stdint.h>

#define WATCH_INSTRUMENT_EXE_ABI 4

struct watch_blocks_thread;

struct watch_instrument_exe {
	int abi;
	/* This thread's bounds; slow: every hit goes to
	 * papi_heritage_instrument_slow (several intervals, a code filter,
	 * misaligned counts).  Plain hits increment *loads / *stores: libpapi's
	 * own per-thread counters, so PAPI_read reads one place. */
	void (*set_thread)(uintptr_t lo, uintptr_t hi, int slow, uint64_t *loads, uint64_t *stores);
	/* Every running session's bounds together: the first, cheapest test. */
	void (*set_union)(uintptr_t lo, uintptr_t hi);
	/* ABI 3: the block hook (watch_blocks_hook.h).  This thread's table
	 * (copied; lo = span = 0: none), whether any thread counts, and where
	 * the executable's __sanitizer_cov_trace_pc is (calls to it are hook
	 * calls).  An ABI 2 executable has none: its code calls libpapi's. */
	void (*set_blocks_thread)(const struct watch_blocks_thread *t);
	void (*set_blocks_any)(int on);
	uintptr_t trace_pc;
	/* ABI 4: the archive's code (every hook, in a section of its own) and
	 * its process-wide state (whole pages, nothing else on them), which no
	 * backend counts (watch_self.h). */
	uintptr_t text_lo, text_hi;
	uintptr_t state_lo, state_hi;
	/* ABI 4: non-zero when code of this program was built with the pass plugin, which
	 * counts accesses to statics by name too (instrument_pass.cpp). */
	uintptr_t pass_built;
};

/* The per-thread state that code built with the pass plugin
 * (papi-heritage-instrument-clang-pass, instrument_pass.cpp) tests and
 * counts inline; the pass knows this layout.  An access of size n at a
 * counts when a - lo + n - 1 < len + n - 1 (unsigned); lo = len = 0: none.
 * Plain hits go to function-local counts, added to *loads / *stores before
 * each call and return; slow != 0 sends every hit to
 * __papi_heritage_range_slow instead. */
struct watch_instrument_range {
	uint64_t lo, len;
	uint64_t *loads, *stores;
	uint64_t slow;
};

/* In libpapi. */
void papi_heritage_instrument_attach(const struct watch_instrument_exe *exe);
void papi_heritage_instrument_slow(uintptr_t a, size_t size, int store, uintptr_t pc);

#endif
