/*
 * Breakpoint backend extras beyond struct watch_backend_ops: how its store
 * hits were classified, for tests, benchmarks and diagnostics.
 */
#ifndef HERITAGE_WATCH_BREAKPOINT_H
#define HERITAGE_WATCH_BREAKPOINT_H

#include <stdint.h>

/* Process-wide, since the process started. */
struct watch_breakpoint_stats {
	uint64_t store_hits;   /* store-breakpoint signals taken */
	uint64_t rmw;          /* hits whose instruction also read the word (counted as a load too) */
	uint64_t by_symbol;    /* decided with the instruction found by walking its function from its symbol */
	uint64_t by_scan;      /* decided with candidates from the backward scan (no symbol covers the code) */
	uint64_t undetermined; /* not decided: counted as a store only (see watch_breakpoint.c) */
	uint64_t late;         /* of those: the signal came after the hit (SIGTRAP was blocked) */
	uint64_t lost;         /* of those: hits that raised no signal (another SIGTRAP was pending) */
	uint64_t untagged;     /* hits whose trap came without its cause (KVM lost DR6's bits), so the
	                        * kernel counted nothing: counted from the decoded instruction */
};

void watch_breakpoint_stats(struct watch_breakpoint_stats *out);

#endif
