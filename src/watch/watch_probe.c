/*
 * Probes of the signal engine's two mechanisms (heritage_probe.h), run
 * through the engine itself so that what is proven is what the backends
 * use: whole-thread single-stepping (watch_step.h) over a routine of known
 * length.  The page-trap probe, a session over a private page with known
 * accesses, lives with the backend (watch_pagetrap.c).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/heritage_probe.h"
#include "watch/watch.h"
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

void watch_single_step_probe(struct heritage_probe_result *r)
{
	struct step_tally t = { 0, 0 };
	char why[WATCH_ERRLEN];

	int err = watch_step_start(count_step, &t, why, sizeof why);
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
