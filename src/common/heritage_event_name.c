/*
 * The one event-name parser and formatter (heritage_event_name.h).  Before
 * it each facility had its own, and the same mistake gave -ENOENT in one
 * component and -EINVAL in another (issue 12).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/heritage_error.h"
#include "common/heritage_event_name.h"

const char *heritage_event_name_at(const struct heritage_event_names *f, unsigned i)
{
	return *(const char *const *)((const char *)f->first_name + (size_t)i * f->stride);
}

int heritage_qual_get(const struct heritage_qualifier *q, unsigned code, unsigned long *value)
{
	unsigned field = (code >> q->shift) & q->mask;
	if (q->given) {
		*value = field;
		return (code & q->given) != 0;
	}
	*value = field ? field - 1 : 0;
	return field != 0;
}

unsigned heritage_qual_set(const struct heritage_qualifier *q, unsigned code, unsigned long value)
{
	code &= ~(q->given | (q->mask << q->shift));
	if (q->given)
		return code | q->given | ((unsigned)value & q->mask) << q->shift;
	return code | ((unsigned)(value + 1) & q->mask) << q->shift;
}

static int allowed(const struct heritage_qual_values *v, unsigned long value)
{
	if (v->range)
		return value >= v->v[0] && value <= v->v[1];
	for (unsigned i = 0; i < v->n; i++)
		if (v->v[i] == value)
			return 1;
	return 0;
}

/* "0 or 1", "16 or 12", "0, 1 or 2", "0..7". */
static void allowed_text(const struct heritage_qual_values *v, char *buf, size_t len)
{
	size_t at = 0;
	if (v->range) {
		snprintf(buf, len, "%lu..%lu", v->v[0], v->v[1]);
		return;
	}
	buf[0] = '\0';
	for (unsigned i = 0; i < v->n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%lu", i == 0 ? "" : i + 1 == v->n ? " or " : ", ",
		                       v->v[i]);
}

/* What the event at index accepts, for messages: ":exact=0 or 1". */
static void accepted(const struct heritage_event_names *f, unsigned index, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = '\0';
	for (unsigned k = 0; k < f->nquals && at < len; k++) {
		struct heritage_qual_values v = { 0 };
		char vals[96];
		f->quals[k].values(index, &v);
		if (!v.n)
			continue;
		allowed_text(&v, vals, sizeof vals);
		at += (size_t)snprintf(buf + at, len - at, "%s:%s=%s", at ? ", " : "", f->quals[k].name, vals);
	}
}

/* Digits only: no sign, no space, no base prefix, no overflow. */
static int decimal(const char *s, size_t len, unsigned long *value)
{
	unsigned long v = 0;
	if (len == 0)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9' || v > (~0ul - 9) / 10)
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	*value = v;
	return 0;
}

static int parse_qualifier(const struct heritage_event_names *f, unsigned index, const char *q, size_t qlen,
                           unsigned *code, unsigned *seen)
{
	const char *event = heritage_event_name_at(f, index);
	const char *eq = memchr(q, '=', qlen);
	size_t nlen = eq ? (size_t)(eq - q) : qlen;
	char acc[256];

	accepted(f, index, acc, sizeof acc);
	for (unsigned k = 0; k < f->nquals; k++) {
		const struct heritage_qualifier *qual = &f->quals[k];
		if (strlen(qual->name) != nlen || strncasecmp(q, qual->name, nlen) != 0)
			continue;
		struct heritage_qual_values v = { 0 };
		qual->values(index, &v);
		if (!v.n)
			break; /* this event does not take it: as unknown */
		if (*seen & (1u << k))
			return heritage_fail(-EINVAL, "%s: %s: qualifier :%s given twice", f->component, event, qual->name);
		*seen |= 1u << k;
		unsigned long value;
		const char *val = eq ? eq + 1 : q + qlen;
		size_t vlen = eq ? qlen - nlen - 1 : 0;
		if (!eq || decimal(val, vlen, &value) != 0 || !allowed(&v, value)) {
			char vals[96];
			allowed_text(&v, vals, sizeof vals);
			return heritage_fail(-EINVAL, "%s: %s: qualifier :%s takes %s, not '%.*s'%s%s", f->component, event,
			                     qual->name, vals, (int)vlen, val, v.note[0] ? ": " : "", v.note);
		}
		*code = heritage_qual_set(qual, *code, value);
		return 0;
	}
	if (!acc[0])
		return heritage_fail(-EINVAL, "%s: %s takes no qualifier, not ':%.*s'", f->component, event, (int)qlen, q);
	return heritage_fail(-EINVAL, "%s: %s: unknown qualifier ':%.*s' (it takes %s)", f->component, event,
	                     (int)qlen, q, acc);
}

/* Where the qualifiers start: the first ':' that is not half of a "::",
 * which separates a PMU from its event in imc's names
 * ("nest_mcs01_imc::PM_MCS01_64B_RD_DISP_PORT01:cpu=0"), as in libpfm4's. */
static const char *qualifier_colon(const char *name)
{
	for (const char *c = strchr(name, ':'); c; c = strchr(c, ':')) {
		if (c[1] != ':')
			return c;
		c += 2;
	}
	return NULL;
}

/* Case-insensitive edit distance, or ~0u once it is surely above limit
 * (names are short).  The caller only ranks distances up to limit, so the
 * two cut-offs change no suggestion; they make an unknown name cheap to
 * refuse in a catalog of thousands (imc's): most names differ in length by
 * more than limit, and a row whose least entry passes limit can only grow. */
static unsigned distance(const char *a, size_t la, const char *b, unsigned limit)
{
	unsigned row[128];
	size_t lb = strlen(b);
	if (la >= 127 || lb >= 127 || (la > lb ? la - lb : lb - la) > limit)
		return ~0u;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0], least;
		row[0] = least = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned sub = diag + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
			unsigned best = up + 1 < row[j - 1] + 1 ? up + 1 : row[j - 1] + 1;
			row[j] = sub < best ? sub : best;
			least = row[j] < least ? row[j] : least;
			diag = up;
		}
		if (least > limit)
			return ~0u;
	}
	return row[lb];
}

/* A lower bound of distance(a, la, b): an edit changes the character
 * counts by at most 2 (a substitution) in L1, so half their L1 difference
 * (characters folded into 32 classes, which only lowers it) is a bound.
 * ha: a's counts.  O(strlen(b)) against distance's O(la * strlen(b)): it
 * rules out most of a big catalog before the table is filled. */
static unsigned distance_floor(const int ha[32], const char *b)
{
	int h[32];
	memcpy(h, ha, sizeof h);
	for (; *b; b++)
		h[tolower((unsigned char)*b) & 31]--;
	unsigned l1 = 0;
	for (int k = 0; k < 32; k++)
		l1 += (unsigned)(h[k] < 0 ? -h[k] : h[k]);
	return (l1 + 1) / 2;
}

/* Does e contain the n bytes of s, case-insensitively? */
static int contains(const char *e, const char *s, size_t n)
{
	int first = tolower((unsigned char)s[0]);
	for (size_t el = strlen(e); n && el >= n; e++, el--)
		if (tolower((unsigned char)*e) == first && strncasecmp(e, s, n) == 0)
			return 1;
	return 0;
}

/* Up to three of f's names nearest to the base name typed, for the
 * message of an unknown name: the closest by edit distance, or those
 * that contain the event part typed (after a "::"), so that a name from
 * another revision of a catalog finds this one's ("CPM_CS_INST" finds
 * "thread_imc::CPM_CS_INST_USER"). */
static void suggest(const struct heritage_event_names *f, const char *name, size_t base, char *out, size_t len)
{
	unsigned best[3] = { ~0u, ~0u, ~0u }, who[3] = { 0 };
	const char *tail = name;
	for (const char *c = name; c + 1 < name + base; c++)
		if (c[0] == ':' && c[1] == ':')
			tail = c + 2;
	size_t tlen = base - (size_t)(tail - name);
	unsigned limit = base / 3 > 3 ? (unsigned)(base / 3) : 3;
	int ha[32] = { 0 };
	for (size_t k = 0; k < base; k++)
		ha[tolower((unsigned char)name[k]) & 31]++;
	for (unsigned i = 0; i < f->n; i++) {
		const char *e = heritage_event_name_at(f, i);
		unsigned d = distance_floor(ha, e) > limit ? ~0u : distance(name, base, e, limit);
		if (d > limit && tlen >= 4 && contains(e, tail, tlen))
			d = limit; /* as good as the worst close spelling */
		if (d > limit)
			continue;
		for (int k = 0; k < 3; k++)
			if (d < best[k]) {
				for (int m = 2; m > k; m--) {
					best[m] = best[m - 1];
					who[m] = who[m - 1];
				}
				best[k] = d;
				who[k] = i;
				break;
			}
	}
	size_t at = 0;
	out[0] = '\0';
	for (int k = 0; k < 3 && best[k] != ~0u && at < len; k++)
		at += (size_t)snprintf(out + at, len - at, "%s%s", k ? ", " : "did you mean ",
		                       heritage_event_name_at(f, who[k]));
	if (at && at < len)
		snprintf(out + at, len - at, "? ");
}

int heritage_event_parse(const struct heritage_event_names *f, const char *name, unsigned *code)
{
	if (!name || !code)
		return heritage_fail(-EINVAL, "%s: no event name", f->component);
	const char *colon = qualifier_colon(name);
	size_t base = colon ? (size_t)(colon - name) : strlen(name);
	unsigned index;
	for (index = 0; index < f->n; index++) {
		const char *e = heritage_event_name_at(f, index);
		if (strlen(e) == base && strncasecmp(e, name, base) == 0)
			break;
	}
	if (index == f->n) {
		char near[400];
		suggest(f, name, base, near, sizeof near);
		return heritage_fail(-ENOENT, "no event named '%.*s' in component %s (%spapi_native_avail -i %s lists "
		                     "its events)", (int)base, name, f->component, near, f->component);
	}
	unsigned c = index, seen = 0;
	while (colon) {
		const char *q = colon + 1, *next = strchr(q, ':');
		size_t qlen = next ? (size_t)(next - q) : strlen(q);
		int err = parse_qualifier(f, index, q, qlen, &c, &seen);
		if (err)
			return err;
		colon = next;
	}
	*code = c;
	return 0;
}

int heritage_event_format(const struct heritage_event_names *f, unsigned code, char *buf, size_t len)
{
	unsigned index = code & f->index_mask, known = f->index_mask;
	if (index >= f->n)
		return -ENOENT;
	for (unsigned k = 0; k < f->nquals; k++)
		known |= f->quals[k].given | f->quals[k].mask << f->quals[k].shift;
	if (code & ~known)
		return -ENOENT;
	const char *event = heritage_event_name_at(f, index);
	int n = snprintf(buf, len, "%s", event);
	size_t at = n < 0 ? 0 : (size_t)n;
	for (unsigned k = 0; k < f->nquals; k++) {
		const struct heritage_qualifier *q = &f->quals[k];
		unsigned long value;
		if (!heritage_qual_get(q, code, &value)) {
			if ((code >> q->shift) & q->mask)
				return -ENOENT; /* a value without its given bit */
			continue;
		}
		struct heritage_qual_values v = { 0 };
		q->values(index, &v);
		if (!v.n || !allowed(&v, value))
			return -ENOENT;
		n = snprintf(buf + (at < len ? at : len), at < len ? len - at : 0, ":%s=%lu", q->name, value);
		at += n < 0 ? 0 : (size_t)n;
	}
	return n < 0 || at >= len ? -ENOSPC : 0;
}

int heritage_event_next_qual(const struct heritage_event_names *f, unsigned k, unsigned *code)
{
	unsigned index = *code & f->index_mask;
	const struct heritage_qualifier *q = &f->quals[k];
	struct heritage_qual_values v = { 0 };
	unsigned long value, next;

	if (index >= f->n || k >= f->nquals)
		return -ENOENT;
	q->values(index, &v);
	if (!v.n)
		return -ENOENT;
	if (!heritage_qual_get(q, *code, &value)) {
		next = v.v[0];
	} else if (v.range) {
		if (value >= v.v[1])
			return -ENOENT;
		next = value + 1;
	} else {
		unsigned i = 0;
		while (i < v.n && v.v[i] != value)
			i++;
		if (i + 1 >= v.n)
			return -ENOENT;
		next = v.v[i + 1];
	}
	*code = heritage_qual_set(q, *code, next);
	return 0;
}
