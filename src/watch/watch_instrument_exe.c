/*
 * libpapi-heritage-instrument.a: the outline instrument hooks, linked into
 * the instrumented executable (see watch_instrument_exe.h).  Not
 * instrumented itself.  The fast path mirrors libpapi's hooks
 * (watch_instrument.c): a process-wide bounding box, then this thread's
 * bounds, then one increment.
 */
#include <stdint.h>

#include "watch/watch_blocks_hook.h"
#include "watch/watch_instrument_exe.h"

/* Outside every count (watch_self.h): the code in a section of its own,
 * whose bounds libpapi gets, and the process-wide state on a page of its
 * own, which the page-trap backend leaves open.  The linker puts an
 * archive's statics right after the program's .bss, inside the cover of a
 * static array, where the hooks would touch them on every block and
 * access: a plain coarse range over int a[4096] stored and loaded once
 * counted 20482 loads (gcc), 14337 (clang) before. */
#define HOOK_TEXT __attribute__((section("papi_heritage_hooks_text")))
extern const char __start_papi_heritage_hooks_text[] __attribute__((visibility("hidden")));
extern const char __stop_papi_heritage_hooks_text[] __attribute__((visibility("hidden")));

static union {
	struct {
		uintptr_t any_lo, any_hi;
		int blocks_any;
		/* Where counts go that nobody reads: code built with the pass
		 * adds its function-local counts to *loads at calls and returns. */
		uint64_t discard;
	} s;
	char page[4096];
} state __attribute__((section("papi_heritage_hooks_state"), aligned(4096))) = { .s = { .any_lo = UINTPTR_MAX } };

static __thread struct {
	uintptr_t lo, hi;
	int slow;
	uint64_t *loads, *stores;
} t;

static inline __attribute__((always_inline)) HOOK_TEXT void account(uintptr_t a, size_t size, int store, uintptr_t pc)
{
	if (__builtin_expect(a >= __atomic_load_n(&state.s.any_hi, __ATOMIC_RELAXED) ||
	                     a + size <= __atomic_load_n(&state.s.any_lo, __ATOMIC_RELAXED), 1))
		return;
	if (__builtin_expect(a >= t.hi || a + size <= t.lo, 0))
		return;
	if (__builtin_expect(t.slow, 0))
		papi_heritage_instrument_slow(a, size, store, pc);
	else if (store)
		++*t.stores;
	else
		++*t.loads;
}

#define PC() ((uintptr_t)__builtin_return_address(0))
#define HOOKS(n)                                                                         \
	void __asan_load##n##_noabort(uintptr_t a);                                      \
	void __asan_store##n##_noabort(uintptr_t a);                                     \
	HOOK_TEXT void __asan_load##n##_noabort(uintptr_t a) { account(a, n, 0, PC()); } \
	HOOK_TEXT void __asan_store##n##_noabort(uintptr_t a) { account(a, n, 1, PC()); }
HOOKS(1)
HOOKS(2)
HOOKS(4)
HOOKS(8)
HOOKS(16)

void __asan_loadN_noabort(uintptr_t a, size_t size);
void __asan_storeN_noabort(uintptr_t a, size_t size);
HOOK_TEXT void __asan_loadN_noabort(uintptr_t a, size_t size) { account(a, size, 0, PC()); }
HOOK_TEXT void __asan_storeN_noabort(uintptr_t a, size_t size) { account(a, size, 1, PC()); }

/* The block hook: libpapi's (watch_blocks.c) with this executable's state. */
static __thread struct watch_blocks_thread bt;

void __sanitizer_cov_trace_pc(void);
HOOK_TEXT void __sanitizer_cov_trace_pc(void)
{
	if (__builtin_expect(!__atomic_load_n(&state.s.blocks_any, __ATOMIC_RELAXED), 1))
		return;
	watch_blocks_hit(&bt, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa());
}

HOOK_TEXT static void set_blocks_thread(const struct watch_blocks_thread *t)
{
	watch_blocks_view_set(&bt, t);
}

HOOK_TEXT static void set_blocks_any(int on)
{
	__atomic_store_n(&state.s.blocks_any, on, __ATOMIC_RELAXED);
}

/* The pass plugin's state (watch_instrument_exe.h): exported, since the
 * instrumented code refers to it by name. */
__thread struct watch_instrument_range __papi_heritage_range = {
	.loads = &state.s.discard,
	.stores = &state.s.discard,
};

void __papi_heritage_range_slow(uint64_t a, uint64_t size, int store);
HOOK_TEXT void __papi_heritage_range_slow(uint64_t a, uint64_t size, int store)
{
	papi_heritage_instrument_slow(a, size, store, PC());
}

HOOK_TEXT static void set_thread(uintptr_t lo, uintptr_t hi, int slow, uint64_t *loads, uint64_t *stores)
{
	struct watch_instrument_range *r = &__papi_heritage_range;

	/* A slow session's hits are counted by papi_heritage_instrument_slow;
	 * the inline counts it also makes go nowhere. */
	r->loads = loads && !slow ? loads : &state.s.discard;
	r->stores = stores && !slow ? stores : &state.s.discard;
	r->slow = (uint64_t)slow;
	r->lo = lo;
	/* Everything (hi = UINTPTR_MAX) is 2^62 bytes from lo, past any user
	 * address, so that len + n - 1 cannot wrap. */
	r->len = hi - lo < (UINT64_C(1) << 62) ? hi - lo : UINT64_C(1) << 62;
	t.loads = loads ? loads : &state.s.discard;
	t.stores = stores ? stores : &state.s.discard;
	t.slow = slow;
	t.lo = lo;
	t.hi = hi;
}

HOOK_TEXT static void set_union(uintptr_t lo, uintptr_t hi)
{
	__atomic_store_n(&state.s.any_lo, lo, __ATOMIC_RELAXED);
	__atomic_store_n(&state.s.any_hi, hi, __ATOMIC_RELAXED);
}

/* Defined by every module the pass plugin built (instrument_pass.cpp). */
extern const char __papi_heritage_pass_built __attribute__((weak, visibility("hidden")));

static const struct watch_instrument_exe exe_hooks = {
	.abi = WATCH_INSTRUMENT_EXE_ABI,
	.set_thread = set_thread,
	.set_union = set_union,
	.set_blocks_thread = set_blocks_thread,
	.set_blocks_any = set_blocks_any,
	.trace_pc = (uintptr_t)__sanitizer_cov_trace_pc,
	.text_lo = (uintptr_t)__start_papi_heritage_hooks_text,
	.text_hi = (uintptr_t)__stop_papi_heritage_hooks_text,
	.state_lo = (uintptr_t)&state,
	.state_hi = (uintptr_t)&state + sizeof state,
	.pass_built = (uintptr_t)&__papi_heritage_pass_built, /* 0 when no module defines it */
};

/* Runs after libpapi's constructors (a library is initialised before the
 * program that needs it), before main. */
__attribute__((constructor)) HOOK_TEXT static void attach_to_libpapi(void)
{
	papi_heritage_instrument_attach(&exe_hooks);
}
