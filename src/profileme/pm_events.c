/*
 * profileme's event names: the fields and `any` by table position, every
 * other sample set by registration (pm_events.h).
 */
#include "profileme/pm_events.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/heritage_error.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned registered;
static struct pm_value registry[PM_MAX_DYNAMIC];

static int static_code_of(const char *name, unsigned *code)
{
	if (strcmp(name, "any") == 0) {
		*code = PM_CODE_ANY;
		return 1;
	}
	int f = pm_field_from_name(name, strlen(name));
	if (f < 0)
		return 0;
	*code = (unsigned)f;
	return 1;
}

static int same_value(const struct pm_value *a, const struct pm_value *b)
{
	return a->set.must1 == b->set.must1 && a->set.must0 == b->set.must0 && a->counter == b->counter &&
	       a->is_default == b->is_default;
}

int pm_event_parse(const char *name, unsigned *code)
{
	if (!name)
		return heritage_fail(-EINVAL, "profileme: no event name");
	if (static_code_of(name, code))
		return 0;
	struct pm_value v;
	char why[384];
	int err = pm_value_parse(name, &v, why, sizeof why);
	if (err) {
		/* A name that is no sample set is no event; one that tries to
		 * join columns is a sample set misused. */
		int columns = strchr(name, '+') || strstr(name, "::");
		return heritage_fail(columns ? -EINVAL : -ENOENT, "profileme: %s", why);
	}
	/* default is any (pm_sampleset.h); one code per value: the set of
	 * one bit is that bit's event. */
	v.is_default = 0;
	for (unsigned c = 0; c < PM_NSTATIC; c++) {
		struct pm_value s;
		pm_event_value(c, &s);
		if (same_value(&s, &v)) {
			*code = c;
			return 0;
		}
	}
	pthread_mutex_lock(&registry_lock);
	unsigned i;
	for (i = 0; i < registered; i++)
		if (same_value(&registry[i], &v))
			break;
	if (i == registered) {
		if (registered == PM_MAX_DYNAMIC) {
			pthread_mutex_unlock(&registry_lock);
			return heritage_fail(-ENOSPC, "profileme: more than %d different sample sets named in one process",
			                     PM_MAX_DYNAMIC);
		}
		registry[registered++] = v;
	}
	pthread_mutex_unlock(&registry_lock);
	*code = PM_CODE_DYNAMIC | i;
	return 0;
}

int pm_event_value(unsigned code, struct pm_value *v)
{
	memset(v, 0, sizeof *v);
	v->counter = -1;
	if (code < PM_NFIELDS) {
		if (pm_fields[code].kind == PM_KIND_COUNTER)
			v->counter = (int)code; /* any:COUNTER */
		else
			v->set.must1 = PM_FIELD_BIT(code);
		return 0;
	}
	if (code == PM_CODE_ANY)
		return 0;
	if (!(code & PM_CODE_DYNAMIC) || (code & ~(PM_CODE_DYNAMIC | PM_CODE_INDEX_MASK)))
		return -ENOENT;
	unsigned i = code & PM_CODE_INDEX_MASK;
	pthread_mutex_lock(&registry_lock);
	int ok = i < registered;
	if (ok)
		*v = registry[i];
	pthread_mutex_unlock(&registry_lock);
	return ok ? 0 : -ENOENT;
}

int pm_event_format(unsigned code, char *buf, size_t len)
{
	if (!len)
		return -ENOSPC;
	int n;
	if (code < PM_NFIELDS) {
		n = snprintf(buf, len, "%s", pm_fields[code].name);
	} else if (code == PM_CODE_ANY) {
		n = snprintf(buf, len, "any");
	} else {
		struct pm_value v;
		if (pm_event_value(code, &v))
			return -ENOENT;
		n = pm_value_format(&v, buf, len);
	}
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

int pm_event_describe(unsigned code, char *buf, size_t len)
{
	struct pm_value v;
	if (pm_event_value(code, &v))
		return -ENOENT;
	if (code < PM_NFIELDS) {
		if (pm_fields[code].kind == PM_KIND_COUNTER)
			snprintf(buf, len, "%s; the event is its sum over every sample (any:%s)", pm_fields[code].desc,
			         pm_fields[code].name);
		else
			snprintf(buf, len, "%s; the event is the samples with it set, times the sampling period",
			         pm_fields[code].desc);
		return 0;
	}
	if (code == PM_CODE_ANY) {
		snprintf(buf, len, "Every sample, times the sampling period: what the sampled thread executed");
		return 0;
	}
	char text[256];
	pm_value_format(&v, text, sizeof text);
	if (v.counter >= 0)
		snprintf(buf, len, "The sum of %s over the samples in %.*s", pm_fields[v.counter].name,
		         (int)(strchr(text, ':') ? strchr(text, ':') - text : (long)strlen(text)), text);
	else
		snprintf(buf, len, "The samples in %s, times the sampling period", text);
	return 0;
}

int pm_event_next(unsigned *code, int first)
{
	if (first) {
		*code = 0;
		return 0;
	}
	if (*code + 1 >= PM_NSTATIC)
		return -ENOENT;
	(*code)++;
	return 0;
}
