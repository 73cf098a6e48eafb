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

static uintptr_t any_lo = UINTPTR_MAX, any_hi;

static uint64_t discard;

static __thread struct {
	uintptr_t lo, hi;
	int slow;
	uint64_t *loads, *stores;
} t;

static inline __attribute__((always_inline)) void account(uintptr_t a, size_t size, int store, uintptr_t pc)
{
	if (__builtin_expect(a >= __atomic_load_n(&any_hi, __ATOMIC_RELAXED) ||
	                     a + size <= __atomic_load_n(&any_lo, __ATOMIC_RELAXED), 1))
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
	void __asan_load##n##_noabort(uintptr_t a) { account(a, n, 0, PC()); }           \
	void __asan_store##n##_noabort(uintptr_t a) { account(a, n, 1, PC()); }
HOOKS(1)
HOOKS(2)
HOOKS(4)
HOOKS(8)
HOOKS(16)

void __asan_loadN_noabort(uintptr_t a, size_t size);
void __asan_storeN_noabort(uintptr_t a, size_t size);
void __asan_loadN_noabort(uintptr_t a, size_t size) { account(a, size, 0, PC()); }
void __asan_storeN_noabort(uintptr_t a, size_t size) { account(a, size, 1, PC()); }

/* The block hook: libpapi's (watch_blocks.c) with this executable's state. */
static int blocks_any;
static __thread struct watch_blocks_thread bt;

void __sanitizer_cov_trace_pc(void);
void __sanitizer_cov_trace_pc(void)
{
	if (__builtin_expect(!__atomic_load_n(&blocks_any, __ATOMIC_RELAXED), 1))
		return;
	watch_blocks_hit(&bt, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa());
}

static void set_blocks_thread(const struct watch_blocks_thread *t)
{
	watch_blocks_view_set(&bt, t);
}

static void set_blocks_any(int on)
{
	__atomic_store_n(&blocks_any, on, __ATOMIC_RELAXED);
}

/* The pass plugin's state (watch_instrument_exe.h): exported, since the
 * instrumented code refers to it by name. */
__thread struct watch_instrument_range __papi_heritage_range = {
	.loads = &discard,
	.stores = &discard,
};

void __papi_heritage_range_slow(uint64_t a, uint64_t size, int store);
void __papi_heritage_range_slow(uint64_t a, uint64_t size, int store)
{
	papi_heritage_instrument_slow(a, size, store, PC());
}

static void set_thread(uintptr_t lo, uintptr_t hi, int slow, uint64_t *loads, uint64_t *stores)
{
	struct watch_instrument_range *r = &__papi_heritage_range;

	/* A slow session's hits are counted by papi_heritage_instrument_slow;
	 * the inline counts it also makes go nowhere. */
	r->loads = loads && !slow ? loads : &discard;
	r->stores = stores && !slow ? stores : &discard;
	r->slow = (uint64_t)slow;
	r->lo = lo;
	/* Everything (hi = UINTPTR_MAX) is 2^62 bytes from lo, past any user
	 * address, so that len + n - 1 cannot wrap. */
	r->len = hi - lo < (UINT64_C(1) << 62) ? hi - lo : UINT64_C(1) << 62;
	t.loads = loads ? loads : &discard;
	t.stores = stores ? stores : &discard;
	t.slow = slow;
	t.lo = lo;
	t.hi = hi;
}

static void set_union(uintptr_t lo, uintptr_t hi)
{
	__atomic_store_n(&any_lo, lo, __ATOMIC_RELAXED);
	__atomic_store_n(&any_hi, hi, __ATOMIC_RELAXED);
}

static const struct watch_instrument_exe exe_hooks = {
	.abi = WATCH_INSTRUMENT_EXE_ABI,
	.set_thread = set_thread,
	.set_union = set_union,
	.set_blocks_thread = set_blocks_thread,
	.set_blocks_any = set_blocks_any,
	.trace_pc = (uintptr_t)__sanitizer_cov_trace_pc,
};

/* Runs after libpapi's constructors (a library is initialised before the
 * program that needs it), before main. */
__attribute__((constructor)) static void attach_to_libpapi(void)
{
	papi_heritage_instrument_attach(&exe_hooks);
}
