/*
 * The software backend (alpha_sw.h): single-step, classify, count, deliver.
 */
#include "alpha/alpha_sw.h"
#include "common/heritage_error.h"
#include "watch/watch_step.h"
#include "watch/watch_sys.h"
#include "watch/watch_x86.h"

#include <errno.h>
#include <string.h>
#include <time.h>

unsigned alpha_class_from_x86(unsigned x)
{
	unsigned cls = 0;
	if (x & WATCH_X86_READS)
		cls |= ALPHA_INSN_LOAD;
	if (x & WATCH_X86_WRITES)
		cls |= ALPHA_INSN_STORE;
	if (x & WATCH_X86_BRANCH)
		cls |= ALPHA_INSN_BRANCH;
	if (x & WATCH_X86_FP)
		cls |= ALPHA_INSN_FP;
	if (!(x & (WATCH_X86_BRANCH | WATCH_X86_FP | WATCH_X86_MOVE | WATCH_X86_SYSTEM)))
		cls |= ALPHA_INSN_INTOP;
	return cls;
}

/* The thread's CPU time, by a raw system call: the vDSO does not serve
 * thread clocks, and errno must stay untouched in a handler. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts = { 0, 0 };
	watch_sys3(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, (long)&ts, 0);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int classify(struct alpha_sw_run *r, uintptr_t pc, const uint8_t *bytes, unsigned n, unsigned *cls)
{
	uint64_t first = 0;
	memcpy(&first, bytes, n < 8 ? n : 8);
	struct alpha_sw_cache_entry *e = &r->cache[(pc ^ (pc >> 10)) % ALPHA_SW_CACHE];
	if (e->valid && e->pc == pc && e->bytes == first) {
		*cls = e->cls;
		return 0;
	}
	unsigned len = 0, x = 0;
	if (watch_x86_classify(bytes, n, pc, &len, &x) != 0)
		return -1;
	e->pc = pc;
	e->bytes = first;
	e->cls = alpha_class_from_x86(x);
	e->valid = 1;
	*cls = e->cls;
	return 0;
}

static int wants_cycles(const struct alpha_select *sel)
{
	for (unsigned c = 0; c < ALPHA_NCOUNTERS; c++)
		if (sel->used[c] && sel->feed[c] == ALPHA_FEED_CYCLES)
			return 1;
	return 0;
}

static void on_step(void *arg, uintptr_t pc, const uint8_t *bytes, unsigned nbytes, ucontext_t *uc)
{
	struct alpha_sw_run *r = arg;
	unsigned cls = 0, irq[ALPHA_NCOUNTERS];
	uint64_t cycles = 0;

	if (!r->running)
		return;
	r->steps++;
	if (classify(r, pc, bytes, nbytes, &cls) != 0)
	{
		r->undecoded++; /* still an issue; no class */
		r->last_undecoded_pc = pc;
	}
	if (wants_cycles(&r->sel)) {
		uint64_t now = thread_cpu_ns();
		uint64_t c_now = alpha_cycles_from_ns(now, r->hz), c_last = alpha_cycles_from_ns(r->cpu_ns_last, r->hz);
		cycles = c_now > c_last ? c_now - c_last : 0;
		r->cpu_ns_last = now;
	}
	alpha_cpu_step(r->cpu, &r->sel, cls, cycles, irq);
	/* Both counters may overflow on one instruction: two interrupts,
	 * counter 0's first (the seed: "two interrupts are generated"). */
	for (unsigned c = 0; c < ALPHA_NCOUNTERS; c++) {
		for (unsigned k = 0; k < irq[c]; k++) {
			r->interrupts[c]++;
			if (r->deliver && r->running)
				r->deliver(r->deliver_arg, c, pc, uc);
		}
	}
}

int alpha_sw_start(struct alpha_sw_run *r, char *why, size_t len)
{
	int err = watch_x86_init();
	if (err) {
		heritage_fail(err, "alpha21064: cannot open the x86 decoder (capstone)");
		if (why && len)
			strncpy(why, heritage_last_error(), len - 1);
		return err;
	}
	memset(r->interrupts, 0, sizeof r->interrupts);
	r->cpu_ns_last = wants_cycles(&r->sel) ? thread_cpu_ns() : 0;
	heritage_owner_set(&r->owner);
	r->running = 1;
	err = watch_step_start(on_step, r, why, len);
	if (err)
		r->running = 0;
	return err;
}

int alpha_sw_stop(struct alpha_sw_run *r)
{
	if (!r->running)
		return 0;
	int own = heritage_owner_stop(&r->owner, "alpha21064", 1);
	if (own < 0)
		return own;
	if (own)
		watch_step_stop();
	r->running = 0;
	return 0;
}

void alpha_sw_reset(struct alpha_sw_run *r)
{
	memset(r->interrupts, 0, sizeof r->interrupts);
}
