/*
 * The sample-set language of dcpiprofileme(1), recursive descent over the
 * grammar in pm_sampleset.h.  One character of look-ahead is enough except
 * for ':' against '::', which is the only two-character token.
 *
 * Tolerated beyond the man page, because users type these: a backslash
 * before '!' (the man page's own examples write `\!notrap`, which a quoted
 * argument passes on literally) and blanks between tokens.
 */
#include "profileme/pm_sampleset.h"

#include "common/heritage_error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct lexer {
	const char *text; /* the whole input, for messages */
	const char *what; /* "sample set" or "columns" */
	const char *p;
	char *why;
	size_t len;
};

static void blanks(struct lexer *lx)
{
	while (*lx->p == ' ' || *lx->p == '\t')
		lx->p++;
}

static int is_word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static int fail_at(struct lexer *lx, const char *at, const char *fmt, ...) HERITAGE_PRINTF(3, 4);

static int fail_at(struct lexer *lx, const char *at, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (lx->why && lx->len)
		snprintf(lx->why, lx->len, "%s \"%s\": position %d: %s", lx->what, lx->text, (int)(at - lx->text) + 1,
		         msg);
	return -EINVAL;
}

/* A word at lx->p: its length (0 if none). */
static size_t word(struct lexer *lx)
{
	size_t n = 0;
	while (is_word_char(lx->p[n]))
		n++;
	return n;
}

static int token_is(const char *w, size_t n, const char *s)
{
	return strlen(s) == n && memcmp(w, s, n) == 0;
}

/* What the next thing is, for "expected a bit name, found ..." */
static const char *found(const struct lexer *lx, char *buf, size_t len)
{
	if (!*lx->p)
		return "the end";
	snprintf(buf, len, "\"%c\"", *lx->p);
	return buf;
}

static int parse_bitval(struct lexer *lx, struct pm_set *set)
{
	char b[8];
	int negate = 0;
	blanks(lx);
	if (lx->p[0] == '\\' && lx->p[1] == '!')
		lx->p++;
	if (*lx->p == '!' || *lx->p == '/') {
		negate = 1;
		lx->p++;
		blanks(lx);
	}
	const char *at = lx->p;
	size_t n = word(lx);
	if (n == 0)
		return fail_at(lx, at, "expected a bit or trap-bit name, found %s", found(lx, b, sizeof b));
	int f;
	if (token_is(at, n, "trap")) {
		/* The man page: trap is a synonym for !notrap. */
		f = PM_NOTRAP;
		negate = !negate;
	} else if (token_is(at, n, "any") || token_is(at, n, "default")) {
		return fail_at(lx, at, "\"%.*s\" stands alone, it cannot be combined with ^ or negated", (int)n, at);
	} else {
		f = pm_field_from_name(at, n);
		if (f < 0)
			return fail_at(lx, at, "unknown bit \"%.*s\" (papi_native_avail -i profileme lists the bits)",
			               (int)n, at);
		if (pm_fields[f].kind == PM_KIND_COUNTER)
			return fail_at(lx, at, "\"%.*s\" is a counter, not a bit: write SET:%.*s", (int)n, at, (int)n,
			               at);
	}
	/* A field required both 1 and 0 ("!notrap^trap") is a set no sample
	 * is in; it has no canonical text either (pm_value_format writes one
	 * constraint per field), so its name would not name it again.
	 * Refused, as a contradiction the user surely did not mean. */
	if ((negate ? set->must1 : set->must0) & PM_FIELD_BIT(f))
		return fail_at(lx, at, "\"%.*s\" contradicts an earlier constraint on %s (required %d there): no sample "
		               "is in this set", (int)n, at, pm_fields[f].name, negate);
	lx->p += n;
	if (negate)
		set->must0 |= PM_FIELD_BIT(f);
	else
		set->must1 |= PM_FIELD_BIT(f);
	return 0;
}

static int parse_value(struct lexer *lx, struct pm_value *v)
{
	char b[8];
	memset(v, 0, sizeof *v);
	v->counter = -1;
	blanks(lx);
	const char *at = lx->p;
	size_t n = word(lx);
	if (token_is(at, n, "default")) {
		lx->p += n;
		v->is_default = 1;
		blanks(lx);
		if (lx->p[0] == ':' && lx->p[1] != ':')
			return fail_at(lx, lx->p, "default is a column of its own, it takes no counter");
		return 0;
	}
	if (token_is(at, n, "any")) {
		lx->p += n;
	} else {
		int err = parse_bitval(lx, &v->set);
		if (err)
			return err;
		for (;;) {
			blanks(lx);
			if (*lx->p != '^')
				break;
			lx->p++;
			if ((err = parse_bitval(lx, &v->set)))
				return err;
		}
	}
	blanks(lx);
	if (lx->p[0] == ':' && lx->p[1] != ':') {
		lx->p++;
		blanks(lx);
		at = lx->p;
		n = word(lx);
		if (n == 0)
			return fail_at(lx, at, "expected a counter name after ':', found %s", found(lx, b, sizeof b));
		int f = pm_field_from_name(at, n);
		if (f < 0)
			return fail_at(lx, at, "unknown counter \"%.*s\" (the counters are retdelay and inflight)", (int)n,
			               at);
		if (pm_fields[f].kind != PM_KIND_COUNTER)
			return fail_at(lx, at, "\"%.*s\" is a bit, not a counter (the counters are retdelay and inflight)",
			               (int)n, at);
		lx->p += n;
		v->counter = f;
	}
	return 0;
}

static int parse_column(struct lexer *lx, struct pm_column *c)
{
	memset(c, 0, sizeof *c);
	int err = parse_value(lx, &c->num);
	if (err)
		return err;
	blanks(lx);
	if (lx->p[0] == ':' && lx->p[1] == ':') {
		lx->p += 2;
		c->ratio = 1;
		return parse_value(lx, &c->den);
	}
	return 0;
}

static int trailing(struct lexer *lx, const char *expected)
{
	blanks(lx);
	if (!*lx->p)
		return 0;
	return fail_at(lx, lx->p, "unexpected \"%s\"; expected %s", lx->p, expected);
}

int pm_columns_parse(const char *text, struct pm_columns *out, char *why, size_t len)
{
	struct lexer lx = { .text = text, .what = "columns", .p = text, .why = why, .len = len };
	memset(out, 0, sizeof *out);
	if (!text || !*text)
		return fail_at(&lx, text ? text : "", "empty: name at least one sample set (e.g. retired^notrap)");
	for (;;) {
		if (out->n == PM_MAX_COLUMNS)
			return fail_at(&lx, lx.p, "more than %d columns", PM_MAX_COLUMNS);
		int err = parse_column(&lx, &out->col[out->n]);
		if (err)
			return err;
		out->n++;
		blanks(&lx);
		if (*lx.p != '+')
			break;
		lx.p++;
	}
	return trailing(&lx, "'+', '::' or the end");
}

int pm_value_parse(const char *text, struct pm_value *out, char *why, size_t len)
{
	struct lexer lx = { .text = text, .what = "sample set", .p = text, .why = why, .len = len };
	if (!text || !*text)
		return fail_at(&lx, text ? text : "", "empty: name a sample set (e.g. retired^notrap)");
	int err = parse_value(&lx, out);
	if (err)
		return err;
	blanks(&lx);
	if (*lx.p == '+' || (lx.p[0] == ':' && lx.p[1] == ':'))
		return fail_at(&lx, lx.p, "'%s' joins columns of dcpiprof/dcpilist; an event is one sample set, "
		                          "optionally with :counter",
		               *lx.p == '+' ? "+" : "::");
	return trailing(&lx, "'^', ':counter' or the end");
}

/* ---- formatting ------------------------------------------------------------ */

static int put(char *buf, size_t len, size_t at, const char *s)
{
	size_t n = strlen(s);
	if (at < len) {
		size_t room = len - at - 1;
		memcpy(buf + at, s, n < room ? n : room);
		buf[at + (n < room ? n : room)] = '\0';
	}
	return (int)n;
}

int pm_value_format(const struct pm_value *v, char *buf, size_t len)
{
	size_t at = 0;
	if (len)
		buf[0] = '\0';
	if (v->is_default)
		return put(buf, len, 0, "default");
	uint32_t need = v->set.must1 | v->set.must0;
	if (!need)
		at += (size_t)put(buf, len, at, "any");
	for (int f = 0; f < PM_COUNTER_FIRST; f++) {
		if (!(need & PM_FIELD_BIT(f)))
			continue;
		if (at)
			at += (size_t)put(buf, len, at, "^");
		if (v->set.must0 & PM_FIELD_BIT(f))
			at += (size_t)put(buf, len, at, "!");
		at += (size_t)put(buf, len, at, pm_fields[f].name);
	}
	if (v->counter >= 0) {
		at += (size_t)put(buf, len, at, ":");
		at += (size_t)put(buf, len, at, pm_fields[v->counter].name);
	}
	return (int)at;
}

int pm_column_format(const struct pm_column *c, char *buf, size_t len)
{
	char num[256], den[256];
	pm_value_format(&c->num, num, sizeof num);
	if (!c->ratio)
		return snprintf(buf, len, "%s", num);
	pm_value_format(&c->den, den, sizeof den);
	return snprintf(buf, len, "%s::%s", num, den);
}

uint32_t pm_value_fields(const struct pm_value *v)
{
	uint32_t f = v->set.must1 | v->set.must0;
	if (v->counter >= 0)
		f |= PM_FIELD_BIT(v->counter);
	return f;
}

uint32_t pm_column_fields(const struct pm_column *c)
{
	return pm_value_fields(&c->num) | (c->ratio ? pm_value_fields(&c->den) : 0);
}

int pm_value_check(const struct pm_value *v, uint32_t fields, const char *backend, char *why, size_t len)
{
	uint32_t missing = pm_value_fields(v) & ~fields;
	if (!missing)
		return 0;
	int f = __builtin_ctz(missing);
	snprintf(why, len, "%s is not observed by the %s backend (%s there, not 0)", pm_fields[f].name, backend,
	         pm_fields[f].kind == PM_KIND_COUNTER ? "a counter it does not measure" : "unknown");
	return -ENOTSUP;
}
