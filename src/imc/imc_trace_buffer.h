/*
 * The trace buffer as the hardware and the kernel see it (doc/facilities.md
 * §4(a), §4(b)): BUFFERSIZE entries of 64-byte records written one after
 * the other from the start, wrapping to the start quietly when the end is
 * reached -- no exception, no interrupt, no flag; only the writer's own
 * count says how many records went in.
 *
 * The reader is the kernel's dump_trace_imc_data(): walk from entry 0 with
 * prev = 0, accept a record only if DW0 > prev and (DW0 & 0x3ffffffffff) ==
 * DW7, stop at the first one that fails.  After a wrap the newest records
 * sit at the start and the first older one stops the walk, so what the
 * reader hands over is the records written since the last wrap; the
 * others are "lost to wrap": written - handed over.
 */
#ifndef HERITAGE_IMC_TRACE_BUFFER_H
#define HERITAGE_IMC_TRACE_BUFFER_H

#include <stdint.h>

#include "imc/imc_trace_codec.h"

struct imc_trace_buffer {
	unsigned char *mem;    /* entries * 64 bytes, 8 KiB aligned (LDBAR needs it) */
	unsigned entries;      /* 4096 << BUFFERSIZE */
	unsigned pos;          /* next entry the writer fills */
	uint64_t written;      /* records written since the last take/reset */
	uint64_t wraps;        /* times the writer went back to entry 0 */
	void *map;             /* the mapping mem lies in (mmap gives 4 KiB alignment only) */
	size_t map_len;
};

/* 0, -EINVAL (bad BUFFERSIZE code), -ENOMEM; with the message. */
int imc_trace_buffer_init(struct imc_trace_buffer *b, unsigned buffersize);
void imc_trace_buffer_free(struct imc_trace_buffer *b);
/* One record at pos, then pos + 1, back to 0 at the end: quietly. */
void imc_trace_buffer_append(struct imc_trace_buffer *b, const struct imc_trace_record *r);
/* What the kernel does after its walk (trace_imc_event_stop): zero DW0 of
 * entry 0; the next add reloads LDBAR, so the writer starts at 0 again. */
void imc_trace_buffer_reset(struct imc_trace_buffer *b);

enum imc_walk_stop {
	IMC_WALK_END = 0,          /* every entry was valid */
	IMC_WALK_EMPTY,            /* DW0 == 0: never written (or zeroed by a reset) */
	IMC_WALK_NOT_INCREASING,   /* DW0 <= the previous record's: older (wrap) or corrupt */
	IMC_WALK_TB_MISMATCH,      /* DW0 & 0x3ffffffffff != DW7: torn or corrupt */
};

struct imc_trace_walk {
	unsigned valid;            /* records accepted */
	unsigned stop_index;       /* the entry that stopped the walk (== entries at END) */
	enum imc_walk_stop stop;
	uint64_t lost;             /* written - valid, when the writer's count is known */
};

const char *imc_walk_stop_name(enum imc_walk_stop s);

/* Called for each valid record in buffer order; non-zero stops the walk
 * (that record counts as handed over). */
typedef int (*imc_trace_record_fn)(const struct imc_trace_record *r, void *arg);

/* The kernel's walk over raw memory (entries * 64 bytes); fn may be NULL. */
void imc_trace_walk(const void *mem, unsigned entries, imc_trace_record_fn fn, void *arg, struct imc_trace_walk *w);
/* The walk over b with lost = written - valid, then reset: the hand-over
 * the kernel makes at stop. */
void imc_trace_buffer_take(struct imc_trace_buffer *b, imc_trace_record_fn fn, void *arg, struct imc_trace_walk *w);

#endif
