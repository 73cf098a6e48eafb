/*
 * Backend choice and the session life cycle shared by every backend.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/heritage_backend.h"
#include "watch/watch.h"
#include "watch/watch_signal.h"

/* The backends in the order auto tries them, cheapest exact one first:
 * instrumented code costs a call per access, a debug register a trap per
 * hit, a page trap a fault, two mprotects and a step per access to the whole
 * page.  For instructions in uninstrumented code, blocktrap's trap per basic
 * block (bench/blocktrap_bench, a 9-instruction loop: 0.17-0.32 us per
 * instruction, 83-223 times less than pagetrap's step per instruction in
 * the same runs) comes before pagetrap; it refuses data.
 * Index = enum watch_backend - 1. */
static const struct heritage_backend backends[WATCH_BACKEND_COUNT - 1] = {
	{ .name = "instrument", .needs = 0, .ops = &watch_instrument_ops },
	{ .name = "breakpoint", .needs = HERITAGE_MECH_BIT(HERITAGE_MECH_BREAKPOINT), .ops = &watch_breakpoint_ops },
	{ .name = "blocktrap", .needs = HERITAGE_MECH_BIT(HERITAGE_MECH_CODEPATCH), .ops = &watch_blocktrap_ops },
	{ .name = "pagetrap",
	  .needs = HERITAGE_MECH_BIT(HERITAGE_MECH_PAGETRAP) | HERITAGE_MECH_BIT(HERITAGE_MECH_SINGLE_STEP),
	  .ops = &watch_pagetrap_ops },
};
#define NBACKENDS (sizeof backends / sizeof backends[0])

const struct heritage_backend *watch_backend_table(unsigned *n)
{
	*n = NBACKENDS;
	return backends;
}

const char *watch_backend_name(enum watch_backend b)
{
	if (b == WATCH_BACKEND_AUTO)
		return "auto";
	return (b > 0 && b < WATCH_BACKEND_COUNT) ? backends[b - 1].name : "?";
}

int watch_backend_from_name(const char *name, enum watch_backend *out)
{
	if (name && strcasecmp(name, "auto") == 0) {
		*out = WATCH_BACKEND_AUTO;
		return 0;
	}
	int i = heritage_backend_find(backends, NBACKENDS, name);
	if (i < 0)
		return -EINVAL;
	*out = (enum watch_backend)(i + 1);
	return 0;
}

static int watch_fits(const struct heritage_backend *b, const void *req, char *why, size_t len)
{
	const struct watch_backend_ops *ops = b->ops;
	return ops->fits(req, why, len);
}

static int choose_from(const struct watch_request *req, enum watch_backend forced, enum watch_backend from,
                       enum watch_backend *out, char *why, size_t len)
{
	unsigned i;
	int err = heritage_backend_choose(backends, NBACKENDS, (int)forced - 1, (unsigned)from - 1, watch_fits, req,
	                                  &i, why, len);
	if (err == 0)
		*out = (enum watch_backend)(i + 1);
	else if (forced == WATCH_BACKEND_AUTO && err != -EINVAL) {
		char list[WATCH_ERRLEN];
		snprintf(list, sizeof list, "%s", why);
		snprintf(why, len, "no backend can count this: %s", list);
	}
	return err;
}

int watch_choose_backend(const struct watch_request *req, enum watch_backend forced,
                         enum watch_backend *out, char *why, size_t len)
{
	return choose_from(req, forced, WATCH_BACKEND_INSTRUMENT, out, why, len);
}

int watch_session_start(struct watch_session *s, enum watch_backend forced, char *why, size_t len)
{
	enum watch_backend b;
	int err;

	if (s->running) {
		snprintf(why, len, "this watch session is already running");
		return -EBUSY;
	}
	err = watch_choose_backend(&s->req, forced, &b, why, len);
	while (err == 0) {
		s->backend = b;
		s->ops = backends[b - 1].ops;
		err = s->ops->start(s, why, len);
		if (err == 0) {
			s->running = 1;
			return 0;
		}
		/* Chosen automatically, proven to work, and still refused now
		 * (the debug registers taken by a debugger since the probe): the
		 * next backend that can. */
		if (forced != WATCH_BACKEND_AUTO || b + 1 >= WATCH_BACKEND_COUNT)
			return err;
		char first[WATCH_ERRLEN];
		snprintf(first, sizeof first, "%s", why);
		if (choose_from(&s->req, WATCH_BACKEND_AUTO, b + 1, &b, why, len) != 0) {
			snprintf(why, len, "%s", first);
			return err;
		}
		err = 0; /* the next one is tried (it used to end the loop: an
		          * instruction range over clang code refused by blocktrap
		          * failed with an empty reason, pagetrap never tried) */
	}
	return err;
}

/* A stop or reset moves counts between the backend's live counters and
 * s->acc; a signal handler that reads the session in between (PAPI's
 * overflow timer reads the set) would see them in neither, or in both.
 * Measured: PAPI_stop of a FORCE_SW itanium2 set returned 0 for 11500 loads
 * once in a CI pass (the tick read into the array PAPI_stop copies from).
 * Async signals wait for the move; the synchronous ones the backends live
 * on are not blocked.  The saved mask is thread-local and the system call
 * goes through watch_thread_mask: the caller may run on a watched,
 * PROT_NONE page of its own stack (range_stack frame in CI, with
 * pthread_sigmask and the sets on the stack: EFAULT, and the application's
 * blocked SIGUSR1 came back unblocked after PAPI_stop). */
static __thread uint64_t held_mask __attribute__((tls_model("initial-exec")));
static __thread int hold_depth __attribute__((tls_model("initial-exec")));

void watch_hold_async_signals(void)
{
	if (hold_depth++ == 0)
		watch_thread_mask(SIG_BLOCK, watch_signal_async_mask(), &held_mask);
}

void watch_release_async_signals(void)
{
	if (--hold_depth == 0)
		watch_thread_mask(SIG_SETMASK, held_mask, NULL);
}

void watch_session_stop(struct watch_session *s)
{
	if (!s->running)
		return;
	watch_hold_async_signals();
	s->ops->stop(s);
	s->running = 0;
	watch_release_async_signals();
}

/* Only the fields asked for, without copying the whole struct: with two
 * events that is 4 loads instead of 18, the field-by-field copy having been
 * the largest part of a PAPI_read.  Not vectorised: 16-byte loads of
 * counters just written as 8-byte stores stall on store forwarding. */
__attribute__((optimize("no-tree-vectorize"))) void watch_session_read_fields(const struct watch_session *s,
                                                                             const unsigned char *field,
                                                                             unsigned n, void *out)
{
	struct watch_counts live_copy;
	const struct watch_counts *live = NULL;

	if (s->running) {
		live = s->ops->live ? s->ops->live(s) : NULL;
		if (!live) {
			s->ops->read(s, &live_copy);
			live = &live_copy;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		uint64_t v = watch_counts_field(&s->acc, field[i]) + (live ? watch_counts_field(live, field[i]) : 0);
		memcpy((char *)out + i * sizeof v, &v, sizeof v);
	}
}

void watch_session_reset(struct watch_session *s)
{
	watch_hold_async_signals();
	memset(&s->acc, 0, sizeof s->acc);
	if (s->running)
		s->ops->reset(s);
	watch_release_async_signals();
}

int watch_any_backend(char *why, size_t len)
{
	if (watch_instrument_present())
		return 0;
	/* Not instrumented: the trap backends are all there is. */
	int err = heritage_backend_any_usable(backends + 1, NBACKENDS - 1, why, len);
	if (err) {
		char list[WATCH_ERRLEN];
		snprintf(list, sizeof list, "%s", why);
		snprintf(why, len, "no backend can count in this process: instrument: the program was not built with "
		         "pkg-config --cflags papi-heritage-instrument; %s", list);
	}
	return err;
}

void watch_limits(char *buf, size_t len)
{
	/* instrument needs no mechanism: it counts instrumented code, always. */
	heritage_backend_limits(backends + 1, NBACKENDS - 1, buf, len);
}
