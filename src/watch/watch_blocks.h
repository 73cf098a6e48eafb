/*
 * watch_blocks: executed instructions of code built with the block hooks
 * (-fsanitize-coverage=trace-pc), counted per thread inside instruction
 * ranges, for the instrument backend (watch_instrument.c).  The method and
 * what it counts are described in watch_blocks.c; the analysis of a
 * function's code into blocks in watch_blocks_cfg.c.
 */
#ifndef HERITAGE_WATCH_BLOCKS_H
#define HERITAGE_WATCH_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "watch/watch.h"
#include "watch/watch_codemap.h"

/* ------------------------------------------- the backend's interface */

/* 0 if the code in req's code pairs can be counted here, else -ENOTSUP and
 * why (code without the hooks, a block structure the hooks do not resolve).
 * no_return: the address of the instrument backend's
 * __asan_handle_no_return (the compilers call it before noreturn calls),
 * passed in so that this module imports nothing from the backend. */
int watch_blocks_fits(const struct watch_request *req, uintptr_t no_return, char *why, size_t len);
/* Count req's code pairs on this thread into count[0..4] (insns and
 * insns_pair[], contiguous in struct watch_counts) until stop. */
int watch_blocks_start(const struct watch_request *req, uint64_t *count, char *why, size_t len);
void watch_blocks_stop(void);
/* Add the instructions the hooks counted since the last fold to count
 * (the thread's own session; async-signal-safe). */
void watch_blocks_fold(void);
/* Forget what the hooks counted (the caller zeroes count). */
void watch_blocks_reset(void);
struct watch_instrument_exe;
/* The executable's own hooks (libpapi-heritage-instrument.a), when it has
 * them: they are driven with libpapi's, and calls to them are hook calls. */
void watch_blocks_attach(const struct watch_instrument_exe *exe);

/* ------------------------------------------- the analysis (watch_blocks_cfg.c) */

#define BL_MAX_FDE 8            /* a function and its cold parts */
#define BL_LEAVE (-1)           /* a path leaves the function (ret, tail call) */
#define BL_TRAP (-2)            /* a path stops (ud2, a call that does not return) */
#define BL_LEAVE_HOOK (-3)      /* a path leaves by a jump to the hook (gcc's tail call of the
                                 * return block's hook): the hook sees it, at the function's CFA */
#define BL_DEPTH_UNKNOWN INT32_MIN

enum bl_call { BL_CALL_NONE, BL_CALL_OTHER, BL_CALL_HOOK, BL_CALL_NO_RETURN_MARK, BL_CALL_NORETURN };

struct bl_insn {
	uintptr_t pc;
	uint8_t len, kind;          /* kind: enum watch_x86_flow_kind */
	uint8_t call;               /* enum bl_call */
	uint8_t noreturn;           /* a call after __asan_handle_no_return: never returns */
	uint8_t sp, rbp;            /* enum watch_x86_sp_effect, watch_x86_rbp_effect */
	int32_t sp_arg, rbp_arg;
	uintptr_t target;           /* a direct jump's */
	int32_t depth;              /* bytes on the stack below the return address, before it runs */
};

/* A piece: the instructions from a leader (a branch target, the function's
 * entry, what follows a branch) to the next leader or branch.  Entered only
 * at its first instruction, it runs whole (its calls return). */
struct bl_piece {
	uint32_t first, end;        /* instructions [first, end) */
	int32_t succ[2];            /* pieces, BL_LEAVE, BL_TRAP or BL_LEAVE_HOOK */
	uint8_t nsucc;
	uint8_t reach;              /* reachable from the function's entry */
	int32_t hook;               /* its first hook call (an instruction), or -1 */
	int32_t owner;              /* the hooked piece whose hook counts it, or -1 */
};

/* Where execution can go from a group (a hooked piece and the pieces glued
 * to it) to the next hook: through orphan pieces (no hook, not glued) to
 * an exit. */
struct bl_path {
	int32_t exit;               /* a hooked piece, BL_LEAVE, BL_TRAP or BL_LEAVE_HOOK */
	uint32_t first, n;          /* its orphan pieces: fn->path_piece[first .. first + n) */
};

struct bl_group {
	int32_t piece;              /* the hooked piece */
	uint32_t first_member, nmember;  /* fn->member[]: its pieces, the hooked one included */
	uint32_t first_path, npath;      /* fn->path[] */
};

/* One analysed function and its cold parts; immutable once made, kept for
 * the process's life. */
struct bl_fn {
	struct bl_fn *next;
	uint32_t id;
	unsigned nfde;
	struct watch_code_fn fde[BL_MAX_FDE];
	uint64_t code_hash;         /* of the FDEs' bytes: the cache's check that the code is still this */
	int err;                    /* non-zero: refused, why says why */
	char why[256];
	struct bl_insn *insn;
	uint32_t ninsn;
	struct bl_piece *piece;
	uint32_t npiece;
	int32_t entry;              /* the piece at fde[0].lo */
	struct bl_group *group;
	uint32_t ngroup;
	int32_t *member;
	struct bl_path *path;
	uint32_t npath;
	int32_t *path_piece;
};

/* The analysed function that holds the FDE fn (analysed on first use,
 * then cached); NULL when out of memory.  ->err says whether it can be
 * counted.  Serialised by the caller. */
const struct bl_fn *bl_function(const struct watch_code_fn *fn);
/* Hook and no-return marker functions the analysis recognises calls to. */
void bl_set_hook_targets(const uintptr_t *trace_pc, unsigned ntrace, uintptr_t no_return);

#endif
