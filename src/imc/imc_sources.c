/*
 * The IMC source rules (doc/facilities.md §4(d)), as one const table matched by
 * unit type, unit node name and event base name.  First match wins.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/heritage_env.h"
#include "common/heritage_probe.h"
#include "imc/imc_backend.h"
#include "imc/imc_sources.h"
#include "imc/imc_trace.h"

#define T_THREAD IMC_TYPE_THREAD
#define T_CORE IMC_TYPE_CORE
#define T_NEST IMC_TYPE_NEST
#define T_TRACE IMC_TYPE_TRACE
#define M_ALL (1u << IMC_MODE_ALL)
#define M_USER (1u << IMC_MODE_USER)
#define M_KERNEL (1u << IMC_MODE_KERNEL)
#define M_ANY (M_ALL | M_USER | M_KERNEL)

struct imc_rule {
	unsigned types;          /* enum imc_type mask */
	const char *unit;        /* fnmatch on the unit node name before '@' ("powerbus*"), NULL: any */
	const char *names;       /* '|'-separated fnmatch patterns on the base name */
	unsigned modes;          /* M_* */
	enum imc_feed_kind kind;
	uint64_t hz;             /* clock feeds: the counter's tick rate (0: imc_nest_hz()) */
	int per_thread_sum;
	enum heritage_source source;
	const char *what;        /* the phrase; unavailable: why, or what would be needed */
};

/* Why each measured/modelled rule is honest is in its phrase.  The 32 MHz
 * clock is time: a task's counter runs only while the task is on a CPU (the
 * kernel writes LDBAR at context switch, imc-pmu.c thread_imc_event_add), so
 * a thread page counts the task's CPU time; a core's counter runs always. */
static const struct imc_rule rules[] = {
	{ .types = T_THREAD, .names = "CS_32MHZ_CYC|32MHZ_CYC", .modes = M_ALL, .kind = IMC_FEED_CPU_TIME,
	  .hz = IMC_32MHZ_HZ, .source = HERITAGE_MEASURED,
	  .what = "the task thread's CPU time (CLOCK_THREAD_CPUTIME_ID, exact to the ns) x 32 MHz" },
	{ .types = T_THREAD, .names = "CS_32MHZ_CYC|32MHZ_CYC", .modes = M_USER | M_KERNEL, .kind = IMC_FEED_CPU_TIME,
	  .hz = IMC_32MHZ_HZ, .source = HERITAGE_MEASURED,
	  .what = "the task thread's user (or system) time as the kernel splits it (run time exact to the ns, "
	          "in the ratio of its tick samples, /proc/self/task/TID/stat) x 32 MHz" },
	{ .types = T_CORE, .names = "CS_32MHZ_CYC", .modes = M_ALL, .kind = IMC_FEED_WALL, .hz = IMC_32MHZ_HZ,
	  .per_thread_sum = 1, .source = HERITAGE_MEASURED,
	  .what = "the wall clock (CLOCK_MONOTONIC) x 32 MHz, summed over the core's hardware threads" },
	{ .types = T_CORE, .names = "CS_32MHZ_CYC", .modes = M_USER | M_KERNEL, .kind = IMC_FEED_CPU_TIME,
	  .hz = IMC_32MHZ_HZ, .per_thread_sum = 1, .source = HERITAGE_MEASURED,
	  .what = "the core's threads' user (user+nice) or kernel (system+irq+softirq) time, /proc/stat "
	          "(tick samples, 10 ms) x 32 MHz, summed" },
	{ .types = T_CORE, .names = "32MHZ_CYC", .modes = M_ALL, .kind = IMC_FEED_WALL, .hz = IMC_32MHZ_HZ,
	  .source = HERITAGE_MEASURED, .what = "the wall clock (CLOCK_MONOTONIC) x 32 MHz: the core's free-running clock" },
	{ .types = T_THREAD, .names = "CS_PURR|CS_SPURR|PURR|SPURR", .modes = M_ANY, .kind = IMC_FEED_CPU_TIME,
	  .hz = IMC_TIMEBASE_HZ, .source = HERITAGE_MODELLED,
	  .what = "the task thread's CPU time (user/system split as CS_32MHZ_CYC_USER) x the 512 MHz timebase, "
	          "as PURR for a thread alone on its core; SPURR at nominal frequency" },
	{ .types = T_CORE, .names = "CS_PURR|CS_SPURR|PURR|SPURR", .modes = M_ANY, .kind = IMC_FEED_CPU_TIME,
	  .hz = IMC_TIMEBASE_HZ, .per_thread_sum = 1, .source = HERITAGE_MODELLED,
	  .what = "the core's threads' non-idle (user, kernel) time, /proc/stat, x the 512 MHz timebase, "
	          "summed; SPURR at nominal frequency" },
	/* Not the nTHRD_/ANY_THRD_/CORE_ALL_THRD_NON_IDLE_ events: cycles with
	 * exactly n (any, all) threads of the core non-idle have no host count. */
	{ .types = T_CORE | T_THREAD, .names = "NON_IDLE_PCYC", .modes = M_ANY,
	  .kind = IMC_FEED_PMU_CYCLES, .per_thread_sum = 1, .source = HERITAGE_MODELLED,
	  .what = "core PMU cycles (perf); an idle x86 CPU halts, so they are mostly non-idle, but the idle "
	          "loop's count" },
	{ .types = T_CORE | T_THREAD, .names = "NON_IDLE_INST", .modes = M_ANY,
	  .kind = IMC_FEED_PMU_INSTRUCTIONS, .per_thread_sum = 1, .source = HERITAGE_MODELLED,
	  .what = "core PMU instructions (perf), the idle loop's included" },
	{ .types = T_CORE, .names = "CCYC", .modes = M_ANY, .kind = IMC_FEED_PMU_CYCLES, .per_thread_sum = 1,
	  .source = HERITAGE_MODELLED,
	  .what = "core PMU cycles (perf) summed over the core's threads: exact for a core of one thread; with SMT a "
	          "cycle two threads run counts twice" },
	{ .types = T_CORE | T_THREAD, .names = "CS_PCYC|PCYC|CS_CORE_PCYC|CYC", .modes = M_ANY,
	  .kind = IMC_FEED_PMU_CYCLES, .per_thread_sum = 1, .source = HERITAGE_MEASURED,
	  .what = "core PMU cycles (perf; _USER: exclude_kernel, _KERNEL: exclude_user)" },
	{ .types = T_CORE | T_THREAD, .names = "CS_INST|INST", .modes = M_ANY, .kind = IMC_FEED_PMU_INSTRUCTIONS,
	  .per_thread_sum = 1, .source = HERITAGE_MEASURED,
	  .what = "core PMU instructions (perf; _USER: exclude_kernel, _KERNEL: exclude_user)" },
	{ .types = T_NEST, .unit = "powerbus*", .names = "CYC", .modes = M_ALL, .kind = IMC_FEED_WALL,
	  .source = HERITAGE_MODELLED,
	  .what = "the wall clock (CLOCK_MONOTONIC) x the assumed PowerBus clock" },
	/* Unavailable, with why. */
	{ .types = T_NEST, .unit = "mcs*", .names = "*", .modes = M_ANY,
	  .what = "MCS port traffic of a POWER chip: x86 uncore memory-controller PMUs (perf uncore_imc, "
	          "cas_count) count DRAM channels, not MCS ports" },
	{ .types = T_NEST, .unit = "mba*|centaur*|cen*", .names = "*", .modes = M_ANY,
	  .what = "POWER memory-buffer (MBA/Centaur) events: no x86 counterpart" },
	{ .types = T_NEST, .names = "*", .modes = M_ANY,
	  .what = "POWER fabric counters (PowerBus, X/A-links, NVLink, PHB, CAPP, NX): no x86 counter counts this "
	          "fabric (UPI/IIO count another)" },
	{ .types = T_CORE | T_THREAD, .names = "STCX_*|LARX_*", .modes = M_ANY,
	  .what = "load-reserve/store-conditional: x86 has no LL/SC" },
	{ .types = T_CORE | T_THREAD, .names = "MSR_*", .modes = M_ANY,
	  .what = "POWER MSR-state (HV/PR/TA/TM/adjunct) cycles and instructions: no x86 counterpart" },
	{ .types = T_CORE | T_THREAD, .names = "*", .modes = M_ANY,
	  .what = "a POWER core event with no generic host source wired (caches, TLBs, dispatch, flushes, "
	          "SMT modes, interrupts)" },
};

uint64_t imc_nest_hz(void)
{
	const char *s = heritage_env("imc", "nest_hz");
	char *end;
	unsigned long long v = s && *s ? strtoull(s, &end, 10) : 0;
	return v >= 1000000ULL && v <= 100000000000ULL && s && !*end ? v : IMC_NEST_DEFAULT_HZ;
}

/* One of the '|'-separated fnmatch patterns matches s. */
static int match_any(const char *patterns, const char *s)
{
	char pat[64];
	for (const char *p = patterns; *p;) {
		size_t n = strcspn(p, "|");
		if (n < sizeof pat) {
			memcpy(pat, p, n);
			pat[n] = 0;
			if (fnmatch(pat, s, 0) == 0)
				return 1;
		}
		p += n + (p[n] == '|');
	}
	return 0;
}

/* The base name and privilege state of an event-name: "CS_INST_USER" ->
 * "CS_INST", user.  Suffixes as the catalog spells them (doc/facilities.md
 * §4(a): _USER = base + 0x800 for most, but offsets are never used). */
static enum imc_feed_mode split_mode(const char *name, char *base, size_t len)
{
	static const struct {
		const char *suffix;
		enum imc_feed_mode mode;
	} suffixes[] = { { "_USER", IMC_MODE_USER }, { "_KERNEL", IMC_MODE_KERNEL } };
	size_t n = strlen(name);
	snprintf(base, len, "%s", name);
	for (unsigned i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
		size_t s = strlen(suffixes[i].suffix);
		if (n > s && strcasecmp(name + n - s, suffixes[i].suffix) == 0) {
			if (n - s < len)
				base[n - s] = 0;
			return suffixes[i].mode;
		}
	}
	return IMC_MODE_ALL;
}

static const char *mode_name(enum imc_feed_mode m)
{
	return m == IMC_MODE_USER ? ":u" : m == IMC_MODE_KERNEL ? ":k" : "";
}

/* Whether a PMU feed can count here, else why (into what). */
static int pmu_usable(unsigned type, char *what, size_t len, const char *needed)
{
	char why[HERITAGE_PROBE_EVIDENCE + HERITAGE_PROBE_ALLOWED + 64];
	if (heritage_probe_explain(HERITAGE_MECH_PMU, why, sizeof why) != 0 || !heritage_probe_works(HERITAGE_MECH_PMU)) {
		snprintf(what, len, "needs %s, absent here: %s", needed, why);
		return 0;
	}
	/* A core page counts every task on its CPUs: perf with pid -1, which
	 * the kernel grants at perf_event_paranoid <= 0 or with CAP_PERFMON
	 * (the kernel's core_imc is per CPU, doc/facilities.md §4(b)). */
	if (type == IMC_TYPE_CORE &&
	    (heritage_probe_explain(HERITAGE_MECH_PERF_CPU, why, sizeof why) != 0 ||
	     !heritage_probe_works(HERITAGE_MECH_PERF_CPU))) {
		snprintf(what, len, "needs %s on whole CPUs, not granted here: %s", needed, why);
		return 0;
	}
	return 1;
}

enum heritage_source imc_feed_of(const struct imc_catalog *cat, unsigned entry, struct imc_feed *feed, char *what,
                                 size_t len)
{
	struct imc_feed none = { .kind = IMC_FEED_NONE, .num = 1, .den = 1, .source = HERITAGE_UNAVAILABLE };
	*feed = none;
	if (!cat || entry >= cat->nentries) {
		snprintf(what, len, "no catalog entry %u", entry);
		return HERITAGE_UNAVAILABLE;
	}
	const struct imc_cat_entry *e = &cat->entries[entry];
	const struct imc_cat_unit *u = &cat->units[e->unit];
	const struct imc_cat_event *ev = &cat->lists[u->list].events[e->event];
	char base[128], unit[64];
	enum imc_feed_mode mode = split_mode(ev->name, base, sizeof base);
	snprintf(unit, sizeof unit, "%.*s", (int)strcspn(u->node, "@"), u->node);

	for (unsigned i = 0; i < sizeof rules / sizeof rules[0]; i++) {
		const struct imc_rule *r = &rules[i];
		if (!(r->types & u->type) || !(r->modes & (1u << mode)) || (r->unit && !match_any(r->unit, unit)) ||
		    !match_any(r->names, base))
			continue;
		if (r->kind == IMC_FEED_NONE) {
			snprintf(what, len, "%s", r->what);
			return HERITAGE_UNAVAILABLE;
		}
		struct imc_feed f = { .kind = r->kind, .mode = mode, .num = 1, .den = 1,
		                      .per_thread_sum = r->per_thread_sum, .source = r->source };
		if (r->kind == IMC_FEED_WALL || r->kind == IMC_FEED_CPU_TIME) {
			f.num = r->hz ? r->hz : imc_nest_hz();
			f.den = 1000000000ULL;
		}
		if (r->kind == IMC_FEED_PMU_CYCLES || r->kind == IMC_FEED_PMU_INSTRUCTIONS) {
			char needed[96];
			snprintf(needed, sizeof needed, "the core PMU's %s%s (perf)",
			         r->kind == IMC_FEED_PMU_CYCLES ? "cycles" : "instructions", mode_name(mode));
			if (!pmu_usable(u->type, what, len, needed))
				return HERITAGE_UNAVAILABLE;
		}
		/* The page holds what the hardware would: counts in units of the
		 * catalog's scale (perf multiplies the raw value by .scale: core and
		 * thread counters count in 512s, doc/facilities.md §4(a)). */
		if (e->scale && *e->scale) {
			char *end;
			double sc = strtod(e->scale, &end);
			if (!*end && sc > 0 && sc <= 1e9) {
				/* a rational num/den: scale to micro-units */
				uint64_t micro = (uint64_t)(sc * 1e6 + 0.5);
				if (micro % 1000000 == 0) {
					f.den *= micro / 1000000;
				} else if (micro) {
					f.num *= 1000000;
					f.den *= micro;
				}
			}
		}
		*feed = f;
		if (r->hz == 0 && r->kind == IMC_FEED_WALL)
			snprintf(what, len, "%s, %.3f GHz (PAPI_HERITAGE_IMC_NEST_HZ)", r->what, (double)f.num / 1e9);
		else
			snprintf(what, len, "%s", r->what);
		return r->source;
	}
	snprintf(what, len, "no host source for %s", e->name);
	return HERITAGE_UNAVAILABLE;
}

enum heritage_source imc_source_of(const struct imc_catalog *cat, unsigned entry, char *what, size_t len)
{
	struct imc_feed f;
	char why[400];
	/* Trace records are no counter of the engine's: the sampler makes them
	 * (imc_trace.h), where perf sampling works for this account. */
	if (cat && entry < cat->nentries && cat->units[cat->entries[entry].unit].type == IMC_TYPE_TRACE) {
		if (imc_trace_usable(why, sizeof why) != 0) {
			if (what && len)
				snprintf(what, len, "trace records need perf sampling: %s", why);
			return HERITAGE_UNAVAILABLE;
		}
		if (what && len)
			snprintf(what, len, "records of the thread's PC sampled by its task clock (perf, into the mmap "
			                    "ring, drained without signals); CPMC2 modelled, CPMC1/3/4 absent");
		return HERITAGE_MEASURED;
	}
	/* On a POWER machine the kernel's PMUs count it. */
	enum imc_backend_kind kind;
	if (cat && entry < cat->nentries && imc_backend_get(&kind, NULL, why, sizeof why) == 0 &&
	    kind == IMC_BACKEND_PERF) {
		const struct imc_cat_entry *e = &cat->entries[entry];
		const struct imc_sysfs_pmu *p;
		const struct imc_sysfs_event *ev;
		if (imc_backend_perf_event(&cat->units[e->unit], e, &p, &ev, why, sizeof why) != 0) {
			if (what && len)
				snprintf(what, len, "%s", why);
			return HERITAGE_UNAVAILABLE;
		}
		if (what && len)
			snprintf(what, len, "the kernel's %s PMU through perf_event (type %u, %s)", p->name, p->type,
			         ev->terms);
		return HERITAGE_MEASURED;
	}
	return imc_feed_of(cat, entry, &f, what, len);
}
