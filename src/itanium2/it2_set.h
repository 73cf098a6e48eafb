/*
 * One itanium2 event set: its events, its data and instruction ranges with
 * their Itanium mapping, and the watch session that counts for it.  All the
 * PAPI semantics of PAPI_set_opt(PAPI_DATA_ADDRESS / PAPI_INSTR_ADDRESS) that
 * do not need PAPI's own types live here, so they are unit-testable.
 */
#ifndef HERITAGE_IT2_SET_H
#define HERITAGE_IT2_SET_H

#include <stdint.h>

#include "common/heritage_owner.h"
#include "itanium2/it2_events.h"
#include "rangemap/rangemap.h"
#include "watch/watch.h"

#define IT2_MAX_EVENTS 16

struct it2_cache;

/* What the Data EAR captured for the last D-EAR overflow (issue 21 item 4),
 * from the cache model: modelled, as the latency is. */
struct it2_dear_record {
	uintptr_t pc;        /* the load's instruction (the hook's caller) */
	uintptr_t addr;      /* its data address */
	unsigned latency;    /* modelled cycles */
	unsigned level;      /* enum it2_cache_level that served it (IT2_CACHE_MEM: memory) */
	unsigned tlb;        /* enum it2_tlb_outcome */
	unsigned pos;        /* the event's position in the set */
};

struct it2_range {
	int set;
	uint64_t start, end;           /* as requested */
	struct rangemap_result map;    /* in it2_set.range_mode */
};

struct it2_set {
	enum rangemap_mode default_mode;   /* PAPI_HERITAGE_ITANIUM2_MODE */
	int bad_mode_env;                  /* it was neither coarse nor exact: PAPI_start says so */
	enum rangemap_mode range_mode;     /* the mode the ranges were mapped in */
	struct it2_range drange, irange;
	unsigned nevents;
	unsigned codes[IT2_MAX_EVENTS];
	struct watch_session ws;
	int running;
	struct heritage_owner owner;       /* the thread that started it */
	unsigned char field[IT2_MAX_EVENTS]; /* each event's enum watch_field (CPU_CYCLES: any) */
	int has_cycles;                    /* CPU_CYCLES is in the set */
	uint64_t cpu_ns_at_start, cpu_ns_acc;
	long long values[IT2_MAX_EVENTS];

	/* PAPI_overflow (it2_set_overflow): per position, 0 = not armed. */
	long long ovf_threshold[IT2_MAX_EVENTS];
	long long ovf_deadline[IT2_MAX_EVENTS];   /* polled ones */
	uint32_t ovf_exact, ovf_polled;          /* position bits */
	struct watch_overflow ovf;               /* the backend's, for the exact ones */

	/* The memory-hierarchy model (it2_cache.h), made when the set first
	 * starts with a modelled event, fed every access the backend sees
	 * (watch_request.observe), until it2_set_release. */
	struct it2_cache *model;
	uint32_t model_events, dear_events;      /* position bits */
	uint64_t dear[IT2_MAX_EVENTS];           /* D-EAR counts, per position */
	uint32_t ovf_dear;                       /* D-EAR positions armed: delivered from the model's path */
	uint64_t dear_left[IT2_MAX_EVENTS];
	_Atomic uint32_t dear_pending;
	struct it2_dear_record dear_last;
	int have_dear_record;
	volatile int in_model;                   /* observe() is updating the model (a handler's accesses are left out) */
	uint64_t unobserved;                     /* accesses left out so */
};

/* Also reads PAPI_HERITAGE_ITANIUM2_MODE; 0 or -EINVAL (bad value). */
int it2_set_init(struct it2_set *s);

/* PAPI_set_opt(PAPI_DATA_ADDRESS (instr = 0) / PAPI_INSTR_ADDRESS (instr = 1)).
 * own_start/own_end: the caller's own state that must stay unwatched (the
 * PAPI control state), in addition to libheritage's segments.  On success
 * the offsets are what PAPI returns as start_off / end_off. */
int it2_set_range(struct it2_set *s, int instr, uint64_t start, uint64_t end,
                  uintptr_t own_start, uintptr_t own_end, int *start_off, int *end_off);
void it2_set_drop_ranges(struct it2_set *s);

/* Frees what the set holds beyond itself (the cache model). */
void it2_set_release(struct it2_set *s);
/* The record of the last D-EAR overflow: 0, or -ENOENT if none yet. */
int it2_set_dear_last(const struct it2_set *s, struct it2_dear_record *r);

/* The complete event list (PAPI calls update_control_state with all of them). */
int it2_set_events(struct it2_set *s, const unsigned *codes, unsigned n);

/* The mode the set's events and ranges use. */
enum rangemap_mode it2_set_mode(const struct it2_set *s);

int it2_set_start(struct it2_set *s);
int it2_set_stop(struct it2_set *s);
/* A running set's stop, read and reset act on the counting of the thread
 * that started it, and only that thread may call them (heritage_owner.h):
 * from another, -EINVAL with the message and nothing changes. */
int it2_set_reset(struct it2_set *s);
/* Fills s->values in event order; async-signal-safe. */
int it2_set_read(struct it2_set *s);

/* PAPI_overflow with the component's own delivery (threshold 0 disarms).
 * Data-range events overflow exactly: the backend counts the access that
 * reaches the threshold and sends `signal` to the counting thread
 * (watch.h, struct watch_overflow).  CPU_CYCLES and the instruction events
 * are polled: it2_set_overflow_poll on a timer.  Two armed events counting
 * the same thing are -EBUSY.  Before start. */
int it2_set_overflow(struct it2_set *s, unsigned pos, long long threshold, int signal);
/* In the signal's handler: the positions whose exact overflow came due
 * since the last take, and the PC of the access that made the last one. */
uint32_t it2_set_overflow_take(struct it2_set *s, uintptr_t *pc);
/* On a timer tick, after it2_set_read: the polled positions whose value
 * reached its deadline; each deadline moves to value + threshold. */
uint32_t it2_set_overflow_poll(struct it2_set *s);

#endif
