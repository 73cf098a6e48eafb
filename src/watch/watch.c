/*
 * Backend choice and the session life cycle shared by every backend.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "watch/watch.h"

static const struct {
	const char *name;
	const struct watch_backend_ops *ops;
} backends[WATCH_BACKEND_COUNT] = {
	[WATCH_BACKEND_AUTO] = { "auto", NULL },
	[WATCH_BACKEND_INSTRUMENT] = { "instrument", &watch_instrument_ops },
	[WATCH_BACKEND_BREAKPOINT] = { "breakpoint", &watch_breakpoint_ops },
	[WATCH_BACKEND_PAGETRAP] = { "pagetrap", &watch_pagetrap_ops },
};

const char *watch_backend_name(enum watch_backend b)
{
	return (b >= 0 && b < WATCH_BACKEND_COUNT) ? backends[b].name : "?";
}

int watch_backend_from_name(const char *name, enum watch_backend *out)
{
	for (int b = 0; b < WATCH_BACKEND_COUNT; b++) {
		if (strcasecmp(name, backends[b].name) == 0) {
			*out = (enum watch_backend)b;
			return 0;
		}
	}
	return -EINVAL;
}

int watch_choose_backend(const struct watch_request *req, enum watch_backend forced,
                         enum watch_backend *out, char *why, size_t len)
{
	if (forced != WATCH_BACKEND_AUTO) {
		int err = backends[forced].ops->fits(req, why, len);
		if (err == 0)
			*out = forced;
		return err;
	}

	/* Cheapest exact backend first: instrumented code costs a call per
	 * access, a debug register a trap per hit, a page trap a fault, two
	 * mprotects and a breakpoint per access to the whole page. */
	static const enum watch_backend order[] = {
		WATCH_BACKEND_INSTRUMENT, WATCH_BACKEND_BREAKPOINT, WATCH_BACKEND_PAGETRAP
	};
	char reasons[3][WATCH_ERRLEN];
	int err = -ENOTSUP;

	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
		reasons[i][0] = '\0';
		int e = backends[order[i]].ops->fits(req, reasons[i], sizeof reasons[i]);
		if (e == 0) {
			*out = order[i];
			return 0;
		}
		/* A bad request (EINVAL) is bad for every backend: report that
		 * rather than the last backend's capacity limit. */
		if (e == -EINVAL) {
			snprintf(why, len, "%s", reasons[i]);
			return e;
		}
		err = e;
	}
	snprintf(why, len, "no backend can count this: instrument: %s; breakpoint: %s; pagetrap: %s",
	         reasons[0], reasons[1], reasons[2]);
	return err;
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
	if (err)
		return err;
	for (;;) {
		s->backend = b;
		s->ops = backends[b].ops;
		err = s->ops->start(s, why, len);
		if (err == 0) {
			s->running = 1;
			return 0;
		}
		/* Chosen automatically but the system refused it (debug registers
		 * taken, perf_event_paranoid): the next backend that fits. */
		if (forced != WATCH_BACKEND_AUTO || b != WATCH_BACKEND_BREAKPOINT)
			return err;
		char why_next[WATCH_ERRLEN];
		if (backends[WATCH_BACKEND_PAGETRAP].ops->fits(&s->req, why_next, sizeof why_next) != 0)
			return err;
		b = WATCH_BACKEND_PAGETRAP;
	}
}

void watch_session_stop(struct watch_session *s)
{
	if (!s->running)
		return;
	s->ops->stop(s);
	s->running = 0;
}

void watch_counts_add(struct watch_counts *to, const struct watch_counts *from)
{
	to->loads += from->loads;
	to->stores += from->stores;
	to->misaligned_loads += from->misaligned_loads;
	to->misaligned_stores += from->misaligned_stores;
	to->insns += from->insns;
	for (int k = 0; k < WATCH_CODE_PAIRS; k++)
		to->insns_pair[k] += from->insns_pair[k];
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
	memset(&s->acc, 0, sizeof s->acc);
	if (s->running)
		s->ops->reset(s);
}
