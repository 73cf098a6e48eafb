/*
 * The core-PMU backend of alpha21064: where the machine has a core PMU,
 * each Alpha event is a host event (alpha_events[].host,
 * doc/facilities.md 2(d)) encoded with libpfm4 and opened with
 * perf_event_open(2) as a sampling event whose period is the Alpha
 * counter's 2^width.  The kernel's overflow interrupt is then exactly the
 * 21064's: nothing is read, each carry writes one PERF_SAMPLE_IP record,
 * and the record's IP is the "old PC" handed to the same deliver callback
 * the software backend uses (alpha_sw.h).
 *
 * Delivery: each event's fd is set O_ASYNC with F_SETOWN_EX(F_OWNER_TID) to
 * the thread that starts it and F_SETSIG(ALPHA_PMU_SIGNAL); the handler
 * drains the fd's ring buffer and delivers one interrupt per sample.  Not
 * attr.sigtrap (Linux >= 5.13): that is SIGTRAP, which the software backend
 * and the itanium2 component's single-stepper already own in this libpapi,
 * and sharing it would mean chaining handlers inside a trap path.  Not
 * PAPI_INT_SIGNAL (SIGRTMIN+2) either: PAPI's perf_event component installs
 * its own handler there whenever an overflow is armed on it, which would
 * steal ours.  A realtime signal queues, so no carry is lost to coalescing;
 * the handler drains every record anyway, so it would not be either way.
 */
#ifndef HERITAGE_ALPHA_PMU_H
#define HERITAGE_ALPHA_PMU_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "alpha/alpha_model.h"
#include "common/heritage_owner.h"
#include "alpha/alpha_sw.h"

/* The overflow signal; chosen at run time because SIGRTMIN is a function. */
#define ALPHA_PMU_SIGNAL (SIGRTMIN + 4)

/* Ring buffer: 1 header page + 2^3 data pages.  A sample is 16 bytes, so
 * 2048 carries fit between two drains. */
#define ALPHA_PMU_RING_PAGES 8

/* The backend a PAPI_HERITAGE_ALPHA21064_BACKEND value asks for. */
enum alpha_backend {
	ALPHA_BACKEND_AUTO = 0,     /* the PMU if it opens every event of the set, else software */
	ALPHA_BACKEND_SOFTWARE = 1, /* single-step (alpha_sw.h) */
	ALPHA_BACKEND_PMU = 2,      /* core PMU only: refuse rather than fall back */
};

/* NULL or "" is auto; "auto", "software" (or "sw"), "pmu"; else -EINVAL
 * with a message. */
int alpha_backend_parse(const char *value, enum alpha_backend *b);
const char *alpha_backend_name(enum alpha_backend b);

/* The core PMU libpfm4 reports (its name in `name`), 0; or -ENODEV when it
 * reports none.  libpfm4 detects from /proc/cpuinfo, so a VM without PMU
 * passthrough can still report one: only perf_event_open decides. */
int alpha_pmu_detect(char *name, size_t len);

/* 1 if the kernel opens a user-level hardware cycles event for this
 * thread (a core PMU is there and usable), else 0.  Probed once per
 * process, quietly: for listings, which must not overwrite the last error. */
int alpha_pmu_usable(void);

/* Encode the libpfm4 event string `host` as an overflow-only sampling event
 * for the calling thread: sample_period = scale x 2^width, PERF_SAMPLE_IP,
 * user level only, disabled.  0, -ENOENT (libpfm4 does not know it on this
 * machine) or -EINVAL; message in heritage_last_error(). */
int alpha_pmu_encode(const char *host, unsigned width, unsigned scale, struct perf_event_attr *attr);

/* The host event an Alpha event code maps to: the first candidate that
 * encodes (and, with try_open, that perf_event_open accepts for this
 * thread).  stand_in, if not NULL, replaces every candidate (tests run the
 * sampling machinery on a software event this way).  0 with *attr and
 * *host set; -ENOTSUP (no host analogue, or none of the candidates exists on
 * this PMU), -ENODEV (the kernel has no PMU for it), -EPERM/-EACCES
 * (perf_event_paranoid), with the message. */
int alpha_pmu_resolve(unsigned code, const char *stand_in, int try_open, struct perf_event_attr *attr,
                      const char **host);

struct alpha_pmu_run {
	/* Set by alpha_pmu_select (or the caller) before alpha_pmu_start. */
	struct alpha_select sel;
	unsigned code[ALPHA_NCOUNTERS];        /* the event code on each used counter */
	const char *stand_in;                  /* tests only: see alpha_pmu_resolve */
	alpha_deliver_fn deliver;
	void *deliver_arg;

	/* What the OS knows, since start (alpha_sw.h's meaning). */
	uint64_t interrupts[ALPHA_NCOUNTERS];
	/* Carries the kernel dropped (PERF_RECORD_LOST) or held back while it
	 * throttled the event (PERF_RECORD_THROTTLE seen): see alpha21064(3). */
	uint64_t lost[ALPHA_NCOUNTERS];
	uint64_t throttled[ALPHA_NCOUNTERS];

	/* Backend state: fds stay open from the first start to alpha_pmu_close,
	 * so whatever the counter held at stop carries into the next start, as
	 * the 21064's residue does. */
	int open[ALPHA_NCOUNTERS];
	int fd[ALPHA_NCOUNTERS];
	void *ring[ALPHA_NCOUNTERS];
	struct perf_event_attr attr[ALPHA_NCOUNTERS]; /* encoded by alpha_pmu_select */
	const char *host[ALPHA_NCOUNTERS];     /* the host event each counter counts */
	struct heritage_owner owner;           /* the thread the fds count and signal */
	volatile int running;
};

/* Select up to n events for the PMU backend: the one-event-per-counter and
 * width rules of alpha_select_events, then alpha_pmu_resolve(try_open) for
 * each.  Resets r's counters (closing any fds).  pos[i] gets the counter of
 * codes[i].  0 or the first error, with its message. */
int alpha_pmu_select(struct alpha_pmu_run *r, const unsigned *codes, unsigned n, const char *stand_in,
                     unsigned *pos);
/* Open (first time, or on another thread) and enable the calling thread's
 * events.  0 or -errno with the message in why. */
int alpha_pmu_start(struct alpha_pmu_run *r, char *why, size_t len);
/* Disable, then deliver any carry still in the rings: none after it returns.
 * Only in the thread that started it, or once that thread has exited (its
 * signal handler would otherwise drain the rings at the same time, and keep
 * a pointer to r): else -EINVAL with the message, still running. */
int alpha_pmu_stop(struct alpha_pmu_run *r);
/* Zero what the OS knows; the counters keep their contents. */
void alpha_pmu_reset(struct alpha_pmu_run *r);
/* Stop and release the fds and rings. */
void alpha_pmu_close(struct alpha_pmu_run *r);
/* The host count of counter c (read(2) on its fd): for tests, which check
 * interrupts == count >> width.  0 or -errno. */
int alpha_pmu_host_count(const struct alpha_pmu_run *r, unsigned c, uint64_t *count);

/* The backend table (heritage_backend.h), in auto's order: the core PMU
 * (needs pmu, libpfm and sampling), then single-stepping (single_step).
 * With a stand-in event (tests), the PMU backend needs only sampling. */
struct heritage_backend;
const struct heritage_backend *alpha_backend_table(int stand_in, unsigned *n);

/* Choose and prepare the backend for the events codes[0..n) (pos[i] gets
 * each one's counter): want (PAPI_HERITAGE_ALPHA21064_BACKEND) forced, or
 * auto's first usable backend that takes every event.  Fills pmu (PMU) or
 * sel (software).  *chosen is ALPHA_BACKEND_PMU or _SOFTWARE; 0 or -errno
 * with the message: a forced backend on a dead or absent mechanism is
 * -ENOTSUP, one this account may not use -EPERM, with the probe's
 * evidence. */
int alpha_backend_choose(enum alpha_backend want, const char *stand_in, struct alpha_pmu_run *pmu,
                         struct alpha_select *sel, const unsigned *codes, unsigned n, unsigned *pos,
                         enum alpha_backend *chosen);

#endif
