/*
 * Block-trap backend extras beyond struct watch_backend_ops
 * (watch_blocktrap.c): the block analysis, for tests, and the backend's
 * statistics.
 */
#ifndef HERITAGE_WATCH_BLOCKTRAP_H
#define HERITAGE_WATCH_BLOCKTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "watch/watch.h"

/* A piece of code entered only at its leader and then run whole (it ends
 * at the instruction before the next leader, or at a control transfer):
 * the int3 goes at pc, and the trap counts the piece's instructions that
 * lie in the session's ranges. */
struct watch_bt_piece {
	uintptr_t pc;
	uint32_t bytes;  /* the piece's length */
	uint32_t first;  /* its instructions' offsets from pc (all that complete, in a range or not): plan->off[first .. first + ninsn) */
	uint32_t ninsn;
	uint8_t ijmp;    /* an indirect jump (a jump table's): the trap counts from its target */
};

struct watch_bt_plan {
	struct watch_bt_piece *piece; /* only pieces with an instruction in a range, by address */
	uint32_t npiece;
	uint16_t *off;
	uint32_t noff;
	unsigned nfn;                 /* functions (FDEs) analysed */
};

/* The pieces to trap for instructions in pairs[0..n): 0, or -ENOTSUP with
 * why (code without unwind information, a jump into the
 * middle of an instruction or of another function, a cold part whose
 * function is outside the ranges), -ENOMEM.  Thread context. */
int watch_bt_analyse(const struct watch_interval *pairs, unsigned n, struct watch_bt_plan *plan, char *why,
                     size_t len);
void watch_bt_plan_free(struct watch_bt_plan *plan);

struct watch_blocktrap_stats {
	uint64_t traps;     /* int3 traps at leaders taken */
	uint64_t counted;   /* of which counted for a session of the trapping thread */
	uint64_t emulated;  /* displaced control transfers emulated (the others run out of line) */
	uint64_t leaders;   /* leaders ever planned (int3 written at some time) */
};
void watch_blocktrap_stats(struct watch_blocktrap_stats *out);

/* The codepatch probe's routine (watch_probe.c): 10 instructions a call in
 * 3 blocks, with unwind information; here, since its code lies in libpapi,
 * whose code the backend otherwise refuses (its traps run there). */
void watch_probe_blocks(void);
extern const char watch_probe_blocks_end[];

#endif
