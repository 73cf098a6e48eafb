#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"

extern char **environ;

#define ENV_PREFIX "PAPI_HERITAGE_"

enum knob_kind {
	KNOB_TEXT,  /* checked where it is used (backend names, paths, lists) */
	KNOB_FLAG,  /* 0 or 1 */
	KNOB_UINT,  /* decimal, min..max */
	KNOB_WORDS, /* one of words, '|'-separated, case as the parser takes it */
	KNOB_SHAPE, /* RxC, R*C <= max */
	KNOB_NAME,  /* a /dev/shm name prefix: no '/', at most 200 bytes */
};

struct knob {
	const char *component;
	const char *knob;
	enum knob_kind kind;
	const char *accepts; /* for the message and papi-heritage(7) */
	const char *words;
	unsigned long long min, max;
	int nocase;
};

/* Every variable a component, utility or library of ours reads.  The kinds
 * follow what the reader parses: where a parser already refuses a bad value
 * loudly at its use (a backend name, a catalog path, a period whose unit
 * depends on the backend) the knob is TEXT here; the rest used to fall back
 * to their default, or to a wrong value, silently on a typo
 * ("PARAGON_RPM_MESH=3X3x" ran on a 1x1 mesh, "ALPHA21064_CLOCK_MHZ=2GHz" at
 * 2 MHz, strtoul's 2) and are checked here. */
static const struct knob knobs[] = {
	{ .component = "ALPHA21064", .knob = "BACKEND", .kind = KNOB_TEXT, .accepts = "auto, pmu or software" },
	{ .component = "ALPHA21064", .knob = "CLOCK_MHZ", .kind = KNOB_UINT, .min = 1, .max = 100000,
	  .accepts = "the nominal clock in MHz, 1..100000" },
	{ .component = "ALPHA21064", .knob = "OS", .kind = KNOB_WORDS, .nocase = 1,
	  .words = "unix|osf|digital-unix|vms|openvms|nt|windows-nt", .accepts = "unix, vms or nt" },
	{ .component = "ALPHA21064", .knob = "PMU_TEST_EVENT", .kind = KNOB_TEXT, .accepts = "a PAPI event name" },
	{ .component = "IMC", .knob = "BACKEND", .kind = KNOB_TEXT, .accepts = "auto, perf or engine" },
	{ .component = "IMC", .knob = "CATALOG", .kind = KNOB_TEXT, .accepts = "a .dtb file or device-tree directory" },
	{ .component = "IMC", .knob = "DAEMON", .kind = KNOB_WORDS, .words = "on|off", .accepts = "on or off" },
	{ .component = "IMC", .knob = "EXACT", .kind = KNOB_FLAG, .accepts = "0 or 1" },
	{ .component = "IMC", .knob = "NEST_HZ", .kind = KNOB_UINT, .min = 1000000ULL, .max = 100000000000ULL,
	  .accepts = "the PowerBus clock in Hz, 1000000..100000000000" },
	{ .component = "IMC", .knob = "SERVICE_USER", .kind = KNOB_TEXT, .accepts = "an account name or uid" },
	{ .component = "IMC", .knob = "SHM", .kind = KNOB_NAME, .accepts = "a /dev/shm name prefix without '/'" },
	{ .component = "IMC", .knob = "SPEED", .kind = KNOB_UINT, .min = 0, .max = 7, .accepts = "0..7" },
	{ .component = "IMC", .knob = "SYSFS_ROOT", .kind = KNOB_TEXT, .accepts = "a directory" },
	{ .component = "IMC", .knob = "TRACE_BUFFER_SIZE", .kind = KNOB_TEXT, .accepts = "the SCOM buffer size code" },
	{ .component = "IMC", .knob = "TRACE_HZ", .kind = KNOB_TEXT, .accepts = "samples per second" },
	{ .component = "ITANIUM2", .knob = "BACKEND", .kind = KNOB_TEXT, .accepts = "a backend name or auto" },
	{ .component = "ITANIUM2", .knob = "CACHE", .kind = KNOB_TEXT, .accepts = "itanium2 or host" },
	{ .component = "ITANIUM2", .knob = "MODE", .kind = KNOB_TEXT, .accepts = "coarse or exact" },
	{ .component = "MPI", .knob = "COLL", .kind = KNOB_WORDS, .words = "on|off", .accepts = "on or off" },
	{ .component = "MPI", .knob = "MAP", .kind = KNOB_TEXT, .accepts = "a file prefix or none" },
	{ .component = "MPI", .knob = "MESH", .kind = KNOB_TEXT, .accepts = "RxC" },
	{ .component = "MPI", .knob = "ROUTING", .kind = KNOB_TEXT, .accepts = "xy or yx" },
	{ .component = "MPI", .knob = "WINDOW", .kind = KNOB_TEXT, .accepts = "auto, rma or shared" },
	{ .component = "PARAGON_RPM", .knob = "CLOCK", .kind = KNOB_WORDS, .words = "auto|vdso",
	  .accepts = "auto or vdso" },
	{ .component = "PARAGON_RPM", .knob = "FPE_TRAPS", .kind = KNOB_TEXT, .accepts = "a list of FP exception classes" },
	{ .component = "PARAGON_RPM", .knob = "MAP", .kind = KNOB_FLAG, .accepts = "0 or 1" },
	{ .component = "PARAGON_RPM", .knob = "MESH", .kind = KNOB_SHAPE, .max = 1024,
	  .accepts = "RxC, at most 1024 nodes" },
	{ .component = "PARAGON_RPM", .knob = "MODEL", .kind = KNOB_FLAG, .accepts = "0 or 1" },
	{ .component = "PARAGON_RPM", .knob = "ROUTING", .kind = KNOB_WORDS, .nocase = 1, .words = "xy|yx",
	  .accepts = "xy or yx" },
	{ .component = "PARAGON_RPM", .knob = "SERVICE_USER", .kind = KNOB_TEXT, .accepts = "an account name or uid" },
	{ .component = "PARAGON_RPM", .knob = "SHM", .kind = KNOB_NAME, .accepts = "a /dev/shm name prefix without '/'" },
	{ .component = "PROBE", .knob = "DISABLE", .kind = KNOB_TEXT, .accepts = "mechanism names, or all" },
	{ .component = "PROFILEME", .knob = "BACKEND", .kind = KNOB_TEXT, .accepts = "auto, ibs or soft" },
	{ .component = "PROFILEME", .knob = "PERIOD", .kind = KNOB_TEXT, .accepts = "a positive number" },
	{ .component = "PROFILEME", .knob = "RUN_DB", .kind = KNOB_TEXT, .accepts = "a directory" },
	{ .component = "PROFILEME", .knob = "RUN_FD", .kind = KNOB_UINT, .min = 0, .max = 2147483647,
	  .accepts = "a descriptor" },
	{ .component = "PROFILEME", .knob = "RUN_PID", .kind = KNOB_UINT, .min = 1, .max = 2147483647,
	  .accepts = "a pid" },
};
#define NKNOBS (sizeof knobs / sizeof knobs[0])

/* One copy of the PAPI_HERITAGE_* part of the environment, "NAME=value"
 * strings.  A value handed out stays readable while ENV_COPIES_KEPT copies
 * are taken after its own: a caller parses it at once, and the copies are
 * taken again only at PAPI_library_init and papi_heritage_env_reread, with
 * no set running.  A load that finds the same variables keeps the old
 * copy, so only a real change costs memory, and a program (or the fuzzer)
 * that changes them in a loop holds ENV_COPIES_KEPT copies, not all. */
#define ENV_COPIES_KEPT 4
struct env_copy {
	struct env_copy *older;
	unsigned n;
	char *vars[];
};

static _Atomic(struct env_copy *) current;
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

/* "PAPI_HERITAGE_<COMPONENT>_<KNOB>" in name[128]; 0, or -1 if too long. */
static int env_name(const char *component, const char *knob, char name[128])
{
	int n = snprintf(name, 128, ENV_PREFIX "%s_%s", component, knob);
	if (n < 0 || n >= 128)
		return -1;
	for (char *p = name; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	return 0;
}

static void copy_free(struct env_copy *c)
{
	for (unsigned i = 0; c && i < c->n; i++)
		free(c->vars[i]);
	free(c);
}

/* NULL on ENOMEM.  Empty in a setuid or setgid program (AT_SECURE): its
 * caller's environment must not choose its backends, files or periods. */
static struct env_copy *copy_take(void)
{
	unsigned n = 0;
	int secure = getauxval(AT_SECURE) != 0;
	for (char **e = environ; !secure && e && *e; e++)
		n += strncmp(*e, ENV_PREFIX, sizeof ENV_PREFIX - 1) == 0;
	struct env_copy *c = calloc(1, sizeof *c + n * sizeof c->vars[0]);
	if (!c)
		return NULL;
	for (char **e = environ; !secure && e && *e && c->n < n; e++) {
		if (strncmp(*e, ENV_PREFIX, sizeof ENV_PREFIX - 1) != 0)
			continue;
		if (!(c->vars[c->n++] = strdup(*e))) {
			copy_free(c);
			return NULL;
		}
	}
	return c;
}

static int copy_same(const struct env_copy *a, const struct env_copy *b)
{
	if (!a || !b || a->n != b->n)
		return 0;
	for (unsigned i = 0; i < a->n; i++)
		if (strcmp(a->vars[i], b->vars[i]) != 0)
			return 0;
	return 1;
}

/* Under load_lock. */
static void copy_publish(struct env_copy *c)
{
	struct env_copy *old = atomic_load_explicit(&current, memory_order_relaxed);
	if (copy_same(old, c)) {
		copy_free(c);
		return;
	}
	c->older = old;
	atomic_store_explicit(&current, c, memory_order_release);
	struct env_copy *last = c;
	for (unsigned kept = 1; last && kept < ENV_COPIES_KEPT; kept++)
		last = last->older;
	struct env_copy *gone = last ? last->older : NULL;
	if (last)
		last->older = NULL;
	while (gone) {
		struct env_copy *next = gone->older;
		copy_free(gone);
		gone = next;
	}
}

static struct env_copy *copy_current(void)
{
	struct env_copy *c = atomic_load_explicit(&current, memory_order_acquire);
	if (c)
		return c;
	heritage_env_load();
	return atomic_load_explicit(&current, memory_order_acquire);
}

/* The value of the variable named name in c, or NULL. */
static const char *copy_get(const struct env_copy *c, const char *name)
{
	size_t len = strlen(name);
	for (unsigned i = 0; c && i < c->n; i++)
		if (strncmp(c->vars[i], name, len) == 0 && c->vars[i][len] == '=')
			return c->vars[i] + len + 1;
	return NULL;
}

const char *heritage_env(const char *component, const char *knob)
{
	char name[128];
	if (env_name(component, knob, name) != 0)
		return NULL;
	const char *v = copy_get(copy_current(), name);
	return (v && *v) ? v : NULL;
}

int heritage_env_flag(const char *component, const char *knob, int *on)
{
	const char *v = heritage_env(component, knob);
	*on = 0;
	if (!v || strcmp(v, "0") == 0)
		return 0;
	if (strcmp(v, "1") == 0) {
		*on = 1;
		return 0;
	}
	char name[128];
	env_name(component, knob, name); /* heritage_env found it: it fits */
	return heritage_fail(-EINVAL, "%s=%.64s: give 0 or 1", name, v);
}

void heritage_env_load(void)
{
	pthread_mutex_lock(&load_lock);
	struct env_copy *c = copy_take();
	if (c)
		copy_publish(c);
	pthread_mutex_unlock(&load_lock);
}

/* A copy exists before main: the first lookup may come from a signal
 * handler (rpm_time's fault handler choosing its clock), where taking one
 * would call malloc. */
__attribute__((constructor)) static void env_load_at_start(void)
{
	heritage_env_load();
}

/* ---- validation ---------------------------------------------------------- */

static int parse_uint(const char *v, unsigned long long *out)
{
	if (!isdigit((unsigned char)v[0]))
		return -1;
	char *end;
	errno = 0;
	*out = strtoull(v, &end, 10);
	return errno || *end ? -1 : 0;
}

static int word_in(const char *v, const char *words, int nocase)
{
	size_t len = strlen(v);
	for (const char *w = words; *w;) {
		size_t wl = strcspn(w, "|");
		if (wl == len && (nocase ? strncasecmp(w, v, len) : strncmp(w, v, len)) == 0)
			return 1;
		w += wl + (w[wl] == '|');
	}
	return 0;
}

static int value_ok(const struct knob *k, const char *v)
{
	unsigned long long u, r, c;
	switch (k->kind) {
	case KNOB_TEXT:
		return 1;
	case KNOB_FLAG:
		return strcmp(v, "0") == 0 || strcmp(v, "1") == 0;
	case KNOB_UINT:
		return parse_uint(v, &u) == 0 && u >= k->min && u <= k->max;
	case KNOB_WORDS:
		return word_in(v, k->words, k->nocase);
	case KNOB_SHAPE: {
		char rows[24];
		size_t rl = strcspn(v, "xX");
		if (rl == 0 || rl >= sizeof rows || !v[rl])
			return 0;
		memcpy(rows, v, rl);
		rows[rl] = '\0';
		return parse_uint(rows, &r) == 0 && parse_uint(v + rl + 1, &c) == 0 && r >= 1 && c >= 1 &&
		       r <= k->max && c <= k->max && r * c <= k->max;
	}
	case KNOB_NAME:
		return strlen(v) <= 200 && !strchr(v, '/');
	}
	return 0;
}

/* Edit distance, for "did you mean": names are under 128 bytes. */
static unsigned distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned row[129];
	if (la > 128 || lb > 128)
		return 1000;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

static const struct knob *knob_named(const char *name, size_t len)
{
	char full[128];
	for (unsigned i = 0; i < NKNOBS; i++)
		if (env_name(knobs[i].component, knobs[i].knob, full) == 0 && strlen(full) == len &&
		    strncmp(full, name, len) == 0)
			return &knobs[i];
	return NULL;
}

/* A typo: up to this many letters added, dropped or changed.  Further
 * from every known name, a variable concerns every component. */
#define NEAR_ENOUGH 4

/* The known variable nearest to the unknown name (len bytes), *d away. */
static const struct knob *knob_nearest(const char *name, size_t len, unsigned *d)
{
	char full[128], unknown[128];
	snprintf(unknown, sizeof unknown, "%.*s", (int)len, name);
	const struct knob *best = NULL;
	unsigned best_d = ~0u;
	for (unsigned i = 0; i < NKNOBS; i++) {
		env_name(knobs[i].component, knobs[i].knob, full);
		unsigned di = distance(unknown, full);
		if (di < best_d)
			best = &knobs[i], best_d = di;
	}
	*d = best_d;
	return best;
}

static int concerns(const struct knob *k, const char *component)
{
	return !component || strcasecmp(k->component, component) == 0 || strcmp(k->component, "PROBE") == 0;
}

/* 0, or -EINVAL with the message: the first problem of c that concerns
 * component (NULL: any). */
static int copy_check(const struct env_copy *c, const char *component)
{
	char full[128];
	for (unsigned i = 0; c && i < c->n; i++) {
		const char *var = c->vars[i];
		const char *eq = strchr(var, '=');
		size_t len = (size_t)(eq - var);
		const char *v = eq + 1;
		const struct knob *k = knob_named(var, len);
		if (k) {
			if (*v && concerns(k, component) && !value_ok(k, v))
				return heritage_fail(-EINVAL, "%.*s=%.64s: expected %s", (int)len, var, v, k->accepts);
			continue;
		}
		/* A name no reader asks for is a typo of one that some reader
		 * does: it is this component's problem if the nearest is. */
		unsigned d;
		const struct knob *near = knob_nearest(var, len, &d);
		if (d > NEAR_ENOUGH) {
			return heritage_fail(-EINVAL, "%.*s: no papi-heritage component reads it (papi-heritage(7) lists "
			                     "the variables)", (int)len, var);
		}
		if (concerns(near, component)) {
			env_name(near->component, near->knob, full);
			return heritage_fail(-EINVAL, "%.*s: no papi-heritage component reads it (did you mean %s?)",
			                     (int)len, var, full);
		}
	}
	return 0;
}

int heritage_env_check(const char *component)
{
	return copy_check(copy_current(), component);
}

int heritage_env_reload(void)
{
	pthread_mutex_lock(&load_lock);
	struct env_copy *c = copy_take();
	int err = c ? copy_check(c, NULL) : heritage_fail(-ENOMEM, "papi-heritage: no memory for the environment");
	if (err)
		copy_free(c);
	else
		copy_publish(c);
	pthread_mutex_unlock(&load_lock);
	return err;
}

const char *heritage_env_known(unsigned i, const char **accepts)
{
	static __thread char name[128];
	if (i >= NKNOBS)
		return NULL;
	env_name(knobs[i].component, knobs[i].knob, name);
	if (accepts)
		*accepts = knobs[i].accepts;
	return name;
}
