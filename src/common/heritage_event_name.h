/*
 * Event names, one parser and one formatter for every facility
 * (doc/architecture.md, "one facility layer"): a base name, looked up case-insensitively in the
 * facility's const event table, then qualifiers ":name=value", each declared
 * in the facility's const qualifier table with the values it takes and the
 * code bits it lands in.  One error rule:
 *   - no such base name: -ENOENT (PAPI_ENOEVNT), "no event named 'X' in
 *     component Y";
 *   - an unknown, repeated or refused qualifier, or a value it does not
 *     take: -EINVAL (PAPI_EINVAL), naming the qualifier and what is allowed;
 * both recorded with heritage_fail, so PAPI prints them under PAPI_VERBOSE.
 */
#ifndef HERITAGE_EVENT_NAME_H
#define HERITAGE_EVENT_NAME_H

#include <stddef.h>

#define HERITAGE_QUAL_MAXV 4

/* The values one event takes for one qualifier. */
struct heritage_qual_values {
	unsigned n;                          /* 0: the event takes no such qualifier */
	int range;                           /* v[0]..v[1] (n = 2), else the n values in v */
	unsigned long v[HERITAGE_QUAL_MAXV]; /* in the order enumeration offers them */
	char note[160];                      /* "" or why, appended to a bad value's message */
};

struct heritage_qualifier {
	const char *name;    /* typed ":name=value", case-insensitive */
	/* Where the value goes: bits shift.. of the code, (code >> shift) & mask.
	 * With a given bit, that bit says the qualifier was typed and the field
	 * holds the value; without one (0) the field holds value + 1 and 0
	 * means not typed. */
	unsigned given;
	unsigned shift, mask;
	/* Which values the event at table index takes (fills v; never fails). */
	void (*values)(unsigned index, struct heritage_qual_values *v);
};

struct heritage_event_names {
	const char *component;               /* PAPI name, in messages */
	const char *const *first_name;       /* &table[0].name */
	size_t stride;                       /* sizeof table[0] */
	unsigned n;                          /* table entries */
	unsigned index_mask;                 /* code bits of the table index */
	const struct heritage_qualifier *quals;
	unsigned nquals;
};

/* Name of entry i of f's table. */
const char *heritage_event_name_at(const struct heritage_event_names *f, unsigned i);

/* "NAME" or "NAME:q=v[:q=v...]" -> *code (index | qualifier bits).  0, or
 * -ENOENT / -EINVAL with the message (above); -EINVAL for a NULL name. */
int heritage_event_parse(const struct heritage_event_names *f, const char *name, unsigned *code);

/* The full name of code, qualifiers in table order.  0, -ENOENT for a code
 * parse cannot give (index, stray bits, a value the event does not take),
 * -ENOSPC if it does not fit in len. */
int heritage_event_format(const struct heritage_event_names *f, unsigned code, char *buf, size_t len);

/* Enumeration (PAPI_NTV_ENUM_UMASKS) of qualifier k on code's event: a code
 * without it steps to its first value, one with a value to the next (list
 * order, or up the range).  0, or -ENOENT after the last, or if the event
 * takes none. */
int heritage_event_next_qual(const struct heritage_event_names *f, unsigned k, unsigned *code);

/* The value of qualifier q in code, and whether it was typed. */
int heritage_qual_get(const struct heritage_qualifier *q, unsigned code, unsigned long *value);
/* code with qualifier q set to value (no checks). */
unsigned heritage_qual_set(const struct heritage_qualifier *q, unsigned code, unsigned long value);

#endif
