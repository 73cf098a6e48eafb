/*
 * The sample-set language of dcpiprofileme(1), one parser for the profileme
 * component and for dcpiprof/dcpilist/dcpicat:
 *
 *   columns   ::= column ('+' column)*       several columns
 *   column    ::= value ('::' value)?        a ratio column: value / value
 *   value     ::= 'default' | set (':' COUNTER)?
 *   set       ::= 'any' | bitval ('^' bitval)*
 *   bitval    ::= ('!' | '/')? NAME          NAME a bit or trap bit; ! or /: must be 0
 *
 * `trap` is a synonym for `!notrap` (and `!trap` for `notrap`).  A set is
 * the samples that satisfy every constraint, each on a known field
 * (pm_sample.h).  `default` is the column DCPI's tools print when none is
 * asked for; with ProfileMe data we take it to be `any` (every sample), the
 * population that stands for time.  A value with `:COUNTER` is the sum of
 * that counter over the samples of the set that define it.
 *
 * Errors are -EINVAL with a message naming the 1-based position and the
 * word: "sample set \"retired^bogus\": position 9: unknown bit \"bogus\"".
 */
#ifndef HERITAGE_PM_SAMPLESET_H
#define HERITAGE_PM_SAMPLESET_H

#include <stddef.h>
#include <stdint.h>

#include "profileme/pm_sample.h"

/* Constraints: fields that must be known and 1 / known and 0.  Both 0: any. */
struct pm_set {
	uint32_t must1, must0;
};

struct pm_value {
	struct pm_set set;
	int is_default;  /* written `default` (set is then `any`) */
	int counter;     /* -1: count samples; else PM_RETDELAY or PM_INFLIGHT */
};

#define PM_MAX_COLUMNS 16

struct pm_column {
	struct pm_value num;
	int ratio;            /* written num::den */
	struct pm_value den;
};

struct pm_columns {
	unsigned n;
	struct pm_column col[PM_MAX_COLUMNS];
};

/* The full language.  0, or -EINVAL with why ("columns" names the input in
 * messages). */
int pm_columns_parse(const char *text, struct pm_columns *out, char *why, size_t len);
/* One value (a PAPI event's name after "profileme:::"): '+' and '::' are
 * refused with a message saying they are columns of the tools.  0 or -EINVAL. */
int pm_value_parse(const char *text, struct pm_value *out, char *why, size_t len);

/* Canonical text, the way it parses back to the same value: constraints in
 * field order, "!" for negation, "any" for none, ":counter".  Returns the
 * length it needed (as snprintf). */
int pm_value_format(const struct pm_value *v, char *buf, size_t len);
int pm_column_format(const struct pm_column *c, char *buf, size_t len);

/* Does sample s belong to set? */
static inline int pm_set_match(const struct pm_set *set, const struct pm_sample *s)
{
	uint32_t need = set->must1 | set->must0;
	return (s->known & need) == need && (s->value & set->must1) == set->must1 && (s->value & set->must0) == 0;
}

/* The fields a value needs the backend to produce (constraints and counter). */
uint32_t pm_value_fields(const struct pm_value *v);
uint32_t pm_column_fields(const struct pm_column *c);

/* A value a backend producing only `fields` cannot answer: 0, or -ENOTSUP
 * with why naming the first missing field and the backend
 * ("mispredict is not observed by the soft backend"). */
int pm_value_check(const struct pm_value *v, uint32_t fields, const char *backend, char *why, size_t len);

/* Running totals of one value. */
struct pm_tally {
	uint64_t samples; /* samples in the set */
	uint64_t sum;     /* with a counter: its sum over those that define it */
	uint64_t counted; /* with a counter: how many defined it */
};

/* Adds s to t if it belongs to v's set. */
static inline void pm_tally_add(struct pm_tally *t, const struct pm_value *v, const struct pm_sample *s)
{
	if (!pm_set_match(&v->set, s))
		return;
	t->samples++;
	if (v->counter >= 0 && (s->known & PM_FIELD_BIT(v->counter))) {
		t->sum += s->counter[v->counter - PM_COUNTER_FIRST];
		t->counted++;
	}
}

/* A value's estimate: samples x period for a set, the counter's sum for a
 * set:counter. */
static inline uint64_t pm_tally_estimate(const struct pm_tally *t, const struct pm_value *v, uint64_t period)
{
	return v->counter >= 0 ? t->sum : t->samples * period;
}

#endif
