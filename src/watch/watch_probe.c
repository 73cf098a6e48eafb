/*
 * Probes of the signal engine's two mechanisms (heritage_probe.h), run
 * through the engine itself so that what is proven is what the backends
 * use: whole-thread single-stepping (watch_step.h) over a routine of known
 * length; and the page-trap backend (watch_pagetrap.c), a session over a
 * private page with known accesses.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/heritage_probe.h"
#include "watch/watch.h"
#include "watch/watch_signal.h"
#include "watch/watch_blocktrap.h"
#include "watch/watch_pagetrap.h"
#include "watch/watch_step.h"

/* Eight instructions, the last its return: a step per instruction. */
#define PROBE_STEP_INSNS 8
void watch_probe_body(void);
extern const char watch_probe_body_end[];
__asm__(".text\n"
        ".p2align 4\n"
        ".type watch_probe_body, @function\n"
        "watch_probe_body:\n"
        "\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n"
        "\tret\n"
        "watch_probe_body_end:\n"
        ".size watch_probe_body, . - watch_probe_body\n");

struct step_tally {
	unsigned inside, all;
};

static void count_step(void *arg, uintptr_t pc, const uint8_t *bytes, unsigned nbytes, ucontext_t *uc)
{
	struct step_tally *t = arg;
	(void)bytes;
	(void)nbytes;
	(void)uc;
	t->all++;
	if (pc >= (uintptr_t)watch_probe_body && pc < (uintptr_t)watch_probe_body_end)
		t->inside++;
}

#if defined(__SANITIZE_THREAD__)
#define WATCH_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WATCH_UNDER_TSAN 1
#endif
#endif

void watch_single_step_probe(struct heritage_probe_result *r)
{
	struct step_tally t = { 0, 0 };
	char why[WATCH_ERRLEN];

#ifdef WATCH_UNDER_TSAN
	/* A stepped thread steps through ThreadSanitizer's runtime too, and is
	 * trapped inside it while it holds a sync variable's mutex; the
	 * SIGTRAP handler's own (instrumented) atomics then wait for that
	 * mutex forever (make check-tsan: 0% CPU in __tsan_atomic32_load from
	 * tstep_trap, watch_step.c).  So in a TSan build stepping is absent,
	 * and what needs it (page traps, the stepping backends) is too. */
	r->state = HERITAGE_PROBE_ABSENT;
	r->err = -ENOTSUP;
	snprintf(r->evidence, sizeof r->evidence,
	         "not in a ThreadSanitizer build: a step trapped inside TSan's runtime deadlocks the step handler "
	         "on the runtime's own mutex");
	return;
#endif

	watch_signal_probing(1);
	int err = watch_step_start(count_step, &t, why, sizeof why);
	watch_signal_probing(0);
	if (err) {
		r->state = HERITAGE_PROBE_ABSENT;
		snprintf(r->evidence, sizeof r->evidence, "%.300s", why);
		return;
	}
	watch_probe_body();
	watch_probe_body();
	watch_step_stop();
	if (t.inside == 2 * PROBE_STEP_INSNS) {
		r->state = HERITAGE_PROBE_WORKS;
		snprintf(r->evidence, sizeof r->evidence, "stepped %u of %u instructions of a known routine (run twice)",
		         t.inside, 2 * PROBE_STEP_INSNS);
	} else {
		r->state = HERITAGE_PROBE_DEAD;
		snprintf(r->evidence, sizeof r->evidence, "started, stepped %u of %u instructions of a known routine "
		         "(%u steps in all)", t.inside, 2 * PROBE_STEP_INSNS, t.all);
	}
}

void watch_pagetrap_probe(struct heritage_probe_result *r)
{
	long page = sysconf(_SC_PAGESIZE);
	char why[WATCH_ERRLEN];
	volatile uint64_t *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		r->state = HERITAGE_PROBE_ABSENT;
		snprintf(r->evidence, sizeof r->evidence, "mmap of a private page: %s", strerror(errno));
		return;
	}
	p[0] = 0; /* fault it in before it is watched */
	struct watch_session s;
	memset(&s, 0, sizeof s);
	s.req.ndata = 1;
	s.req.want_data = 1;
	s.req.data[0] = (struct watch_interval){ (uintptr_t)p, (uintptr_t)p + (uintptr_t)page };
	watch_pagetrap_probing(1);
	watch_signal_probing(1);
	int err = watch_pagetrap_ops.start(&s, why, sizeof why);
	watch_signal_probing(0);
	watch_pagetrap_probing(0);
	if (err) {
		munmap((void *)p, (size_t)page);
		r->state = HERITAGE_PROBE_ABSENT;
		snprintf(r->evidence, sizeof r->evidence, "%.300s", why);
		return;
	}
	/* 3 loads, 2 stores. */
	p[1] = p[0] + 1;
	p[2] = p[1] + p[0];
	watch_pagetrap_ops.stop(&s);
	munmap((void *)p, (size_t)page);
	if (s.acc.loads == 3 && s.acc.stores == 2) {
		r->state = HERITAGE_PROBE_WORKS;
		snprintf(r->evidence, sizeof r->evidence, "counted 3 loads and 2 stores of a protected private page "
		         "exactly");
	} else {
		r->state = HERITAGE_PROBE_DEAD;
		snprintf(r->evidence, sizeof r->evidence, "started, counted %llu loads and %llu stores of a protected "
		         "private page, want 3 and 2", (unsigned long long)s.acc.loads, (unsigned long long)s.acc.stores);
	}
}

/* The block-trap backend's routine (watch_blocktrap.c, where the backend
 * exempts it from its refusal of libpapi's own code): 10 instructions a call. */
#define PROBE_BT_INSNS 10

void watch_blocktrap_probe(struct heritage_probe_result *r)
{
	char why[WATCH_ERRLEN];
	struct watch_session s;
	memset(&s, 0, sizeof s);
	s.req.want_code = 1;
	s.req.ncode = 1;
	s.req.code_pair[0] = (struct watch_interval){ (uintptr_t)watch_probe_blocks, (uintptr_t)watch_probe_blocks_end };
	watch_signal_probing(1);
	int err = watch_blocktrap_ops.start(&s, why, sizeof why);
	watch_signal_probing(0);
	if (err) {
		r->state = HERITAGE_PROBE_ABSENT;
		snprintf(r->evidence, sizeof r->evidence, "%.300s", why);
		return;
	}
	watch_probe_blocks();
	watch_probe_blocks();
	watch_blocktrap_ops.stop(&s);
	watch_probe_blocks(); /* the code is back: not counted, and must still run */
	if (s.acc.insns == 2 * PROBE_BT_INSNS && s.acc.insns_pair[0] == 2 * PROBE_BT_INSNS) {
		r->state = HERITAGE_PROBE_WORKS;
		snprintf(r->evidence, sizeof r->evidence, "counted %u of %u instructions of a known routine (run twice) "
		         "by int3 at its block leaders", (unsigned)s.acc.insns, 2 * PROBE_BT_INSNS);
	} else {
		r->state = HERITAGE_PROBE_DEAD;
		snprintf(r->evidence, sizeof r->evidence, "started, counted %llu of %u instructions of a known routine",
		         (unsigned long long)s.acc.insns, 2 * PROBE_BT_INSNS);
	}
}
