/*
 * The emulated counters (alpha_model.h).
 */
#include "alpha/alpha_model.h"
#include "common/heritage_error.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

/* The hidden register widths: the longest selectable period per counter. */
static const unsigned ctr_bits[ALPHA_NCOUNTERS] = { 16, 12 };

int alpha_select_events(struct alpha_select *sel, const unsigned *codes, unsigned n, int allow_unavailable,
                        unsigned *pos)
{
	struct alpha_select s;
	unsigned owner[ALPHA_NCOUNTERS] = { 0, 0 };

	memset(&s, 0, sizeof s);
	for (unsigned i = 0; i < n; i++) {
		const struct alpha_event *e = alpha_event_of(codes[i]);
		if (!e)
			return heritage_fail(-ENOENT, "alpha21064: event code %#x is not an alpha21064 event", codes[i]);
		if (e->sw_source == HERITAGE_UNAVAILABLE && !allow_unavailable)
			return heritage_fail(-ENOTSUP, "alpha21064: %s cannot be counted here: %s", e->name, e->sw_why);
		unsigned c = e->counter;
		if (s.used[c])
			return heritage_fail(-EBUSY, "alpha21064: %s and %s both count only on counter %u, which "
			                     "holds one event at a time; put one of them in another event set "
			                     "(multiplexing cannot share the counter: one that cannot be read "
			                     "cannot be time-sliced and scaled)",
			                     alpha_events[owner[c] & ALPHA_CODE_INDEX_MASK].name, e->name, c);
		s.used[c] = 1;
		s.feed[c] = e->feed;
		s.width[c] = alpha_code_width(codes[i]);
		owner[c] = codes[i];
		if (pos)
			pos[i] = c;
	}
	*sel = s;
	return 0;
}

unsigned alpha_counter_add(struct alpha_cpu *cpu, unsigned c, unsigned width, uint64_t n)
{
	/* Kept modulo 2^ctr_bits: every period divides it, so the carries out
	 * of bit `width` are the same as on an unbounded counter. */
	uint64_t v = cpu->ctr[c];
	uint64_t after = v + n;
	unsigned irq = (unsigned)((after >> width) - (v >> width));
	cpu->ctr[c] = (uint32_t)(after & ((1ull << ctr_bits[c]) - 1));
	return irq;
}

static uint64_t fed(enum alpha_feed f, unsigned cls, unsigned issue_pairs, uint64_t cycles)
{
	switch (f) {
	case ALPHA_FEED_ISSUES: return issue_pairs;
	case ALPHA_FEED_LOADS: return (cls & ALPHA_INSN_LOAD) != 0;
	case ALPHA_FEED_STORES: return (cls & ALPHA_INSN_STORE) != 0;
	case ALPHA_FEED_BRANCHES: return (cls & ALPHA_INSN_BRANCH) != 0;
	case ALPHA_FEED_FP: return (cls & ALPHA_INSN_FP) != 0;
	case ALPHA_FEED_INTOP: return (cls & ALPHA_INSN_INTOP) != 0;
	case ALPHA_FEED_CYCLES: return cycles;
	default: return 0;
	}
}

void alpha_cpu_step(struct alpha_cpu *cpu, const struct alpha_select *sel, unsigned cls, uint64_t cycles,
                    unsigned overflows[ALPHA_NCOUNTERS])
{
	/* Every instruction is one issue; the counter sees the pairs. */
	unsigned pairs = 0;
	if (++cpu->issue_half == 2) {
		cpu->issue_half = 0;
		pairs = 1;
	}
	for (unsigned c = 0; c < ALPHA_NCOUNTERS; c++) {
		overflows[c] = 0;
		if (!sel->used[c])
			continue;
		uint64_t n = fed(sel->feed[c], cls, pairs, cycles);
		if (n)
			overflows[c] = alpha_counter_add(cpu, c, sel->width[c], n);
	}
}

int64_t alpha_estimate(uint64_t interrupts, unsigned width)
{
	return (int64_t)(interrupts << width);
}

int64_t alpha_threshold_interrupts(long long threshold, unsigned width, const char *event)
{
	long long period = 1ll << width;
	if (threshold <= 0 || threshold % period != 0)
		return heritage_fail(-EINVAL, "alpha21064: %s overflows every %lld events (2^%u, its counter's "
		                     "width); a threshold must be a multiple of %lld, not %lld",
		                     event ? event : "the event", period, width, period, threshold);
	return threshold / period;
}

uint64_t alpha_cycles_from_ns(uint64_t ns, uint64_t hz)
{
	/* ns * hz / 1e9 without overflow for any realistic run (ns < 2^64 / hz
	 * would be ~92 s at 200 MHz): split the seconds off first. */
	return ns / 1000000000ull * hz + ns % 1000000000ull * hz / 1000000000ull;
}

void alpha_frame_build(enum alpha_os os, unsigned counter, uint64_t pc, struct alpha_frame *f)
{
	memset(f, 0, sizeof *f);
	f->os = os;
	f->counter = counter;
	f->pc = pc;
	f->r4 = f->a0 = f->a1 = f->a2 = ALPHA_FRAME_UNDEFINED;
	switch (os) {
	case ALPHA_OS_VMS:
		f->vector = ALPHA_SCB_PERFMON;
		f->ipl = 29;
		f->exception = 1;
		f->r4 = counter;
		break;
	case ALPHA_OS_UNIX:
		f->vector = ALPHA_SCB_PERFMON;
		f->ipl = 6;
		f->a0 = ALPHA_OSFINT_PERF;
		f->a1 = ALPHA_SCB_PERFMON;
		f->a2 = counter;
		break;
	default:
		/* The seed says only that PALcode builds a kernel-stack frame and
		 * enters the kernel's interrupt entry: nothing more is claimed. */
		f->vector = ALPHA_FRAME_UNDEFINED;
		f->ipl = ALPHA_FRAME_UNDEFINED;
		break;
	}
}

int alpha_os_parse(const char *name, enum alpha_os *os)
{
	static const struct {
		const char *name;
		enum alpha_os os;
	} names[] = {
		{ "unix", ALPHA_OS_UNIX }, { "osf", ALPHA_OS_UNIX }, { "digital-unix", ALPHA_OS_UNIX },
		{ "vms", ALPHA_OS_VMS }, { "openvms", ALPHA_OS_VMS },
		{ "nt", ALPHA_OS_NT }, { "windows-nt", ALPHA_OS_NT },
	};
	for (unsigned i = 0; name && i < sizeof names / sizeof names[0]; i++) {
		if (strcasecmp(name, names[i].name) == 0) {
			*os = names[i].os;
			return 0;
		}
	}
	return heritage_fail(-EINVAL, "alpha21064: unknown operating system '%s' (unix, vms or nt)",
	                     name ? name : "(null)");
}

const char *alpha_os_name(enum alpha_os os)
{
	switch (os) {
	case ALPHA_OS_UNIX: return "unix";
	case ALPHA_OS_VMS: return "vms";
	case ALPHA_OS_NT: return "nt";
	default: return "?";
	}
}
