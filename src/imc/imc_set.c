#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/heritage_error.h"
#include "imc/imc_events.h"
#include "imc/imc_set.h"

static int thread_ns(uint64_t *ns)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return heritage_fail(-errno, "imc: clock_gettime(CLOCK_THREAD_CPUTIME_ID): %s", strerror(errno));
	*ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return 0;
}

int imc_any_usable(char *why, unsigned len)
{
	uint64_t ns;
	int err = thread_ns(&ns);

	snprintf(why, len, "%s", err ? heritage_last_error() : "");
	return err ? -ENOTSUP : 0;
}

void imc_set_init(struct imc_set *s)
{
	memset(s, 0, sizeof *s);
}

int imc_set_events(struct imc_set *s, const unsigned *codes, unsigned n)
{
	char name[128];

	if (n > IMC_MAX_EVENTS)
		return heritage_fail(-ENOSPC, "imc: %u events, at most %d", n, IMC_MAX_EVENTS);
	for (unsigned i = 0; i < n; i++) {
		char what[200];
		if (imc_event_format(codes[i], name, sizeof name) != 0)
			return heritage_fail(-ENOENT, "imc: no event with code %#x", codes[i]);
		if (imc_event_source(codes[i], what, sizeof what) == HERITAGE_UNAVAILABLE)
			return heritage_fail(-ENOTSUP, "imc: %s is unavailable here: %s", name, what);
	}
	memcpy(s->codes, codes, n * sizeof codes[0]);
	s->nevents = n;
	memset(s->values, 0, sizeof s->values);
	s->ns_acc = 0;
	return 0;
}

int imc_set_start(struct imc_set *s)
{
	if (s->running)
		return heritage_fail(-EBUSY, "imc: the set is running");
	s->ns_acc = 0;
	int err = thread_ns(&s->ns_at_start);
	if (err)
		return err;
	s->running = 1;
	return 0;
}

static int update(struct imc_set *s, uint64_t *out)
{
	uint64_t now, total = s->ns_acc;

	if (s->running) {
		int err = thread_ns(&now);
		if (err)
			return err;
		total += now - s->ns_at_start;
	}
	for (unsigned i = 0; i < s->nevents; i++)
		s->values[i] = (long long)total; /* every available event is THREAD_CPU_NS */
	*out = total;
	return 0;
}

int imc_set_read(struct imc_set *s)
{
	uint64_t total;
	return update(s, &total);
}

int imc_set_stop(struct imc_set *s)
{
	uint64_t total;
	int err = update(s, &total);
	if (err)
		return err;
	s->ns_acc = total;
	s->running = 0;
	return 0;
}

int imc_set_reset(struct imc_set *s)
{
	s->ns_acc = 0;
	memset(s->values, 0, sizeof s->values);
	return s->running ? thread_ns(&s->ns_at_start) : 0;
}
