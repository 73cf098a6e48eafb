/*
 * watch_codemap: where the loaded code's functions are, from the unwind
 * tables every x86-64 object carries (.eh_frame_hdr's sorted table and the
 * FDEs it points to, read in memory, never from the files), and what a GOT
 * word resolves to (the dynamic relocations naming it), for the block hooks'
 * analysis (watch_blocks_cfg.c).  Not async-signal-safe: it takes a lock and
 * allocates; called from PAPI_start's path only.
 */
#ifndef HERITAGE_WATCH_CODEMAP_H
#define HERITAGE_WATCH_CODEMAP_H

#include <stddef.h>
#include <stdint.h>

/* One function, or one part of a function: GCC puts a function's unlikely
 * blocks in .text.unlikely (foo.cold) under an FDE of their own, entered by
 * jumps from the hot part in the middle of its frame (fragment: the CFA at
 * the FDE's start is not %rsp + 8). */
struct watch_code_fn {
	uintptr_t lo, hi;
	int fragment;
	/* Its language-specific data area (exception landing pads), 0 when it
	 * has none, UINTPTR_MAX when its pointer could not be read. */
	uintptr_t lsda;
};

/* The landing pads of fn (where the unwinder enters it, C++ catch and
 * cleanup code, -fexceptions C's cleanup attribute) into pad[0..max): their
 * number, or -1 when its tables are not understood or hold more. */
int watch_codemap_landing_pads(const struct watch_code_fn *fn, uintptr_t *pad, unsigned max);

/* The FDE whose range holds pc: 0, or -ENOENT (no loaded object has unwind
 * information for pc). */
int watch_codemap_fn_at(uintptr_t pc, struct watch_code_fn *fn);

/* Every byte of [lo, hi) that lies in an executable segment, in address
 * order: each FDE overlapping it (fn != NULL; its whole range, not only the
 * overlap), and each stretch [a, b) of executable bytes no FDE covers
 * (fn == NULL).  A non-zero return of cb stops the walk and is returned. */
int watch_codemap_walk(uintptr_t lo, uintptr_t hi,
                       int (*cb)(void *arg, const struct watch_code_fn *fn, uintptr_t a, uintptr_t b), void *arg);

/* What the GOT word at slot is bound to, of the symbols the block analysis
 * needs: by its dynamic relocation's symbol name, which holds before lazy
 * binding has filled the word. */
enum watch_import {
	WATCH_IMPORT_OTHER,
	WATCH_IMPORT_TRACE_PC,    /* __sanitizer_cov_trace_pc */
	WATCH_IMPORT_NO_RETURN,   /* __asan_handle_no_return: the next call does not return */
	WATCH_IMPORT_NORETURN_FN, /* a C library function that never returns (abort, exit, __stack_chk_fail, ...) */
};
enum watch_import watch_codemap_import(uintptr_t slot);

/* Every dynamic relocation naming a symbol (DT_JMPREL's and DT_RELA's) of the
 * object loaded at base whose _DYNAMIC is dyn: cb(arg, symbol name, the
 * address it relocates (a GOT word for JUMP_SLOT and GLOB_DAT), its
 * ELF64_R_TYPE).  Names past DT_STRSZ are skipped.  For the block analysis'
 * imports here, and the GOT redirection of watch_got.c. */
void watch_codemap_dyn_relocs(uintptr_t base, const void *dyn,
                              void (*cb)(void *arg, const char *name, uintptr_t where, unsigned type), void *arg);

/* The C library, the dynamic loader, libpthread, capstone and the vDSO (by
 * a path, as dladdr, dl_iterate_phdr or /proc/self/maps name them): the
 * code our signal handlers and the stepping run through, which the trap
 * backends refuse to watch and whose calls are their own business. */
int watch_codemap_runtime_object(const char *path);

/* The end of the executable segment holding a, or 0 when a is not code. */
uintptr_t watch_codemap_code_end(uintptr_t a);

#endif
