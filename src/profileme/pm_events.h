/*
 * profileme's PAPI event names and codes.
 *
 * The enumerable events are the fields themselves (what papi_native_avail
 * lists): each bit and trap bit, as the sample set of that one bit, and each
 * counter, as `any:COUNTER`; then `any`.  Every other sample set, with or
 * without :COUNTER (`retired^!notrap`, `retired:retdelay`), gets a code when
 * its name is first looked up: the canonical text (pm_value_format) is kept
 * in a process-wide registry, so two spellings of one set (`trap`,
 * `!notrap`) share a code.
 */
#ifndef HERITAGE_PM_EVENTS_H
#define HERITAGE_PM_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "profileme/pm_sampleset.h"

/* Codes 0..PM_NFIELDS-1: the fields; PM_CODE_ANY: any; with
 * PM_CODE_DYNAMIC: a registered set, index in the low bits. */
#define PM_CODE_ANY PM_NFIELDS
#define PM_NSTATIC (PM_NFIELDS + 1)
#define PM_CODE_DYNAMIC 0x100000u
#define PM_CODE_INDEX_MASK 0xfffffu
#define PM_MAX_DYNAMIC 4096

/* name (after "profileme:::") -> code: 0, or -ENOENT for a name that is no
 * sample set at all (the parser's message, with position and word), -EINVAL
 * for a value with '+' or '::' (columns of the tools), -ENOSPC when the
 * registry is full. */
int pm_event_parse(const char *name, unsigned *code);
/* code -> name: 0, or -ENOENT, or -ENOSPC when it does not fit. */
int pm_event_format(unsigned code, char *buf, size_t len);
/* code -> its value: 0 or -ENOENT. */
int pm_event_value(unsigned code, struct pm_value *v);
/* A description for papi_native_avail: the field's meaning, or what the set
 * counts ("samples in retired^!notrap x period"). */
int pm_event_describe(unsigned code, char *buf, size_t len);
/* Enumeration: the next static code after code (or the first with
 * first=1): 0 or -ENOENT after the last. */
int pm_event_next(unsigned *code, int first);

#endif
