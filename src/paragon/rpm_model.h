/*
 * The Paragon RPM model as pure functions: clock conversions, the bus-master
 * model, 32-bit wrap extension, mesh routing, and the parsers of the /proc
 * files the soft counters come from.  No state, no system calls: unit-tested
 * in src/tests/test_paragon.c.  doc/facilities.md section 1 has the facts.
 */
#ifndef HERITAGE_RPM_MODEL_H
#define HERITAGE_RPM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#define RPM_TIME_HZ 10000000ULL           /* rpm_time: 10 MHz */
#define RPM_TIME_MASK ((1ULL << 56) - 1)   /* 56-bit global clock */
#define RPM_DCLOCK_MASK ((1ULL << 52) - 1) /* dclock() ignores the top 4 bits */
#define RPM_BUS_HZ 50000000ULL            /* bus counters: 50 MHz cycles */
/* cpu0+cpu1+ltu+exp is "always a little over 97%" of the bus cycles, the
 * rest going to memory refresh (man page, Limitations): 97.5% here. */
#define RPM_BUS_BUSY_PERMILLE 975ULL

/* ---- clock ---------------------------------------------------------------- */
/* rpm_time count for a CLOCK_BOOTTIME reading (the Paragon's clock counted
 * from the diagnostic station's reset, i.e. boot). */
static inline uint64_t rpm_ticks_from_ns(uint64_t ns)
{
	return (ns / 100) & RPM_TIME_MASK;
}
/* dclock()'s integer path: the low 52 bits times 1/RPM_CLOCK_FREQ.  The
 * multiplication by the rounded 1/10^7 (not a division by 10^7) is what makes
 * it bit-identical to the man page's trick, which multiplies by hz = 1.0/FREQ. */
static inline double rpm_ticks_to_seconds(uint64_t ticks)
{
	return (double)(ticks & RPM_DCLOCK_MASK) * (1.0 / (double)RPM_TIME_HZ);
}
/* rpm_time from the TSC.  PAPI_read of rpm_time must cost well under the
 * vDSO clock (~18 ns here) to be 20x cheaper than a perf read, and rdtsc is
 * ~8 ns.  The TSC is converted with an anchor (tsc_base -> ns_base) and a
 * slope (mult, ns per TSC tick << 32) that rpm_tsc_clock_anchor() refreshes
 * from CLOCK_BOOTTIME at least every RPM_TSC_MAX_INTERVAL_NS.  Guarantees
 * (checked with a simulated TSC in test_paragon.c):
 *  - never backwards: each anchor starts at or above where the previous one
 *    had got to (plus RPM_TSC_GUARD_NS, which covers a reader that used the
 *    old anchor while a new one was being published);
 *  - error against CLOCK_BOOTTIME bounded by GUARD + the slope's error over
 *    one interval (the slope is measured over the whole time since the last
 *    step, so it is the clock's average rate, which NTP may slew by up to
 *    500 ppm either way: 500 ppm x 10 ms = 5 us, twice that if the slew
 *    reverses): about 10 us worst case (9.5 us in the simulation), far
 *    inside the 100 us asked;
 *  - a step of the clock (suspend: CLOCK_BOOTTIME counts it, the TSC may
 *    not) is taken forward at the next anchor, and restarts the slope's
 *    measurement; a TSC running ahead of the clock is slewed back by at most
 *    RPM_TSC_SLEW_PPM, never stepped back. */
#define RPM_TSC_MAX_INTERVAL_NS 10000000ULL
#define RPM_TSC_FIRST_INTERVAL_NS 100000ULL
#define RPM_TSC_GUARD_NS 1000ULL
#define RPM_TSC_STEP_NS 1000000ULL
#define RPM_TSC_SLEW_PPM 10000ULL /* 1% */
/* A TSC reading is matched to the clock only if the clock reads around it
 * lie within this; the first slope is measured over RPM_TSC_FIRST_SLOPE_NS. */
#define RPM_TSC_BRACKET_NS 2000ULL
#define RPM_TSC_FIRST_SLOPE_NS 200000ULL
struct rpm_tsc_clock {
	/* What a read needs, first: the anchor in rpm_time ticks, as a 64.64
	 * fixed-point start and slope, so that a read is one multiply and an
	 * add (ns then /100 was two multiplies and three shifts more on the
	 * path from rdtsc to the value: 2 ns of a 19 ns PAPI_read).  Derived
	 * from the ns anchor below by rpm_tsc_clock_init/_anchor. */
	uint64_t tsc_base;           /* the anchor */
	uint64_t interval;           /* ticks after tsc_base when the next anchor is due */
	uint64_t tick_mult;          /* rpm_time ticks per TSC tick << 64 */
	uint64_t tick_frac;          /* ns_base / 100: fraction << 64 ... */
	uint64_t tick_base;          /* ... and whole ticks */
	uint64_t ns_base;
	uint64_t tsc0, ns0;          /* start of the slope's measurement */
	uint64_t mult;               /* ns per tick << 32, slewed */
	uint64_t rate;               /* ns per tick << 32, measured */
	uint64_t interval_ns;
};
/* From two (tsc, CLOCK_BOOTTIME ns) readings some time apart. 0, or -1 if
 * they do not describe a clock running forward. */
int rpm_tsc_clock_init(struct rpm_tsc_clock *c, uint64_t tsc_a, uint64_t ns_a, uint64_t tsc_b, uint64_t ns_b);
/* ns at tsc (a TSC before the anchor, as another CPU's may read, gives the
 * anchor's ns: never earlier). */
static inline uint64_t rpm_tsc_clock_ns(const struct rpm_tsc_clock *c, uint64_t tsc)
{
	uint64_t d = tsc > c->tsc_base ? tsc - c->tsc_base : 0;
	return c->ns_base + (uint64_t)(((unsigned __int128)d * c->mult) >> 32);
}
/* rpm_time ticks d TSC ticks after the anchor: floor(ns / 100) for the
 * exact ns of the line above, so one tick ahead of rpm_ticks_from_ns() of
 * rpm_tsc_clock_ns() (which truncates to whole ns first) for at most one
 * ns in every hundred.  The rpm_time readers use only this one. */
static inline uint64_t rpm_tsc_clock_ticks_after(const struct rpm_tsc_clock *c, uint64_t d)
{
	unsigned __int128 t = ((unsigned __int128)c->tick_base << 64 | c->tick_frac) + (unsigned __int128)d * c->tick_mult;
	return (uint64_t)(t >> 64) & RPM_TIME_MASK;
}
static inline uint64_t rpm_tsc_clock_ticks(const struct rpm_tsc_clock *c, uint64_t tsc)
{
	return rpm_tsc_clock_ticks_after(c, tsc > c->tsc_base ? tsc - c->tsc_base : 0);
}
static inline int rpm_tsc_clock_due(const struct rpm_tsc_clock *c, uint64_t tsc)
{
	return tsc - c->tsc_base >= c->interval; /* also a TSC before the anchor */
}
/* A new anchor from a (tsc, CLOCK_BOOTTIME ns) reading. */
void rpm_tsc_clock_anchor(struct rpm_tsc_clock *c, uint64_t tsc, uint64_t ns);

/* The raw count in the bits of a double, as rpm_time holds it. */
double rpm_timer_from_ticks(uint64_t ticks);
uint64_t rpm_timer_to_ticks(double timer);
/* The man page's exponent trick, transcribed (for tests and the docs). */
double rpm_seconds_by_exponent_trick(double timer);

/* ---- bus-master model ----------------------------------------------------- */
struct rpm_bus {
	uint64_t cpu0, cpu1, ltu, exp; /* 50 MHz cycles, 64-bit, since boot */
};
/* cpu1, ltu and exp are given (sources in paragon_rpm(3)); cpu0, the default
 * bus master, takes what is left of the busy share of the elapsed cycles,
 * idle or not (the documented bug), never below 0. */
void rpm_bus_model(uint64_t elapsed_cycles, struct rpm_bus *bus);
/* Cycles for seconds of kernel work or bytes moved over the 64-bit bus. */
static inline uint64_t rpm_bus_cycles_for_ticks(uint64_t ticks, uint64_t ticks_per_s)
{
	return ticks_per_s ? ticks * (RPM_BUS_HZ / ticks_per_s) : 0;
}
static inline uint64_t rpm_bus_cycles_for_bytes(uint64_t bytes)
{
	return bytes / 8;
}

/* ---- 32-bit counters ------------------------------------------------------ */
/* Extends a wrapping 32-bit counter to 64 bits, given readings at least once
 * per wrap period (85.9 s for a bus counter at 50 MHz). */
struct rpm_wrap {
	uint64_t value;
	uint32_t last;
	int primed;
};
uint64_t rpm_wrap_update(struct rpm_wrap *w, uint32_t raw);

/* The resettable counters of struct rpm, in its field order. */
enum rpm_counter {
	RPM_CPU0, RPM_CPU1, RPM_LTU, RPM_EXP, RPM_NORTH, RPM_SOUTH, RPM_EAST, RPM_WEST,
	RPM_NCOUNTERS
};
/* What the 32-bit register shows: the count since the last reset (base),
 * modulo 2^32; 0 if the model went below the base. */
static inline uint32_t rpm_register_value(uint64_t cumulative, uint64_t base)
{
	return cumulative >= base ? (uint32_t)(cumulative - base) : 0;
}

/* ---- mesh ----------------------------------------------------------------- */
enum rpm_dir { RPM_DIR_NORTH, RPM_DIR_SOUTH, RPM_DIR_EAST, RPM_DIR_WEST, RPM_NDIRS };
enum rpm_routing { RPM_ROUTE_XY, RPM_ROUTE_YX };
#define RPM_MESH_MAX_NODES 1024
struct rpm_mesh_shape {
	unsigned rows, cols;       /* node = row * cols + col (NX numbering) */
	enum rpm_routing routing;  /* XY: along the row (east/west) first */
};
struct rpm_hop {
	unsigned router;           /* the router the units leave */
	enum rpm_dir dir;          /* towards: north = row - 1, east = col + 1 */
};
/* The hops of a message from src to dst (0 for src == dst); -1 for a bad
 * node or shape, or if max is too small. */
int rpm_mesh_route(const struct rpm_mesh_shape *m, unsigned src, unsigned dst, struct rpm_hop *hops,
                   unsigned max);
/* Adds bytes to bytes_out[router * RPM_NDIRS + dir] for every hop (atomic
 * adds: the array may be shared between processes).  0 or -1. */
int rpm_mesh_account(const struct rpm_mesh_shape *m, uint64_t *bytes_out, unsigned src, unsigned dst,
                     uint64_t bytes);
/* The shape an MPI job gets without PAPI_HERITAGE_MPI_MESH: rows x cols ==
 * nodes exactly, rows the largest divisor <= sqrt(nodes) (4 -> 2x2, 9 -> 3x3,
 * 6 -> 2x3, a prime p -> 1xp), as square as the count allows so that routes
 * stay short.  Routing XY.  0, or -1 for 0 or more than RPM_MESH_MAX_NODES. */
int rpm_mesh_shape_for_nodes(unsigned nodes, struct rpm_mesh_shape *m);
/* "RxC" -> shape; "xy"/"yx" -> routing.  0 or -1. */
int rpm_mesh_parse_shape(const char *s, struct rpm_mesh_shape *m);
int rpm_mesh_parse_routing(const char *s, enum rpm_routing *r);
const char *rpm_dir_name(enum rpm_dir d);

/* rpms_ptenotu's model: faults the kernel did not resolve (PAGE_FAULTS less
 * minor and major ones: access violations, EFAULT fixups).  A fault counted
 * on one CPU may be resolved on another after sleeping, so per CPU the
 * difference can dip below 0: it reads 0 then. */
static inline uint64_t rpm_unresolved_faults(uint64_t all, uint64_t resolved)
{
	return all > resolved ? all - resolved : 0;
}

/* ---- /proc parsers -------------------------------------------------------- */
#define RPM_MAX_CPUS 1024
struct rpm_host_sample {
	unsigned ncpus;                    /* highest cpuN in /proc/stat + 1 */
	uint64_t idle_ticks[RPM_MAX_CPUS]; /* idle + iowait, USER_HZ ticks, by OS index */
	uint64_t kernel_io_ticks;          /* irq + softirq, all CPUs */
	uint64_t interrupts[RPM_MAX_CPUS]; /* /proc/interrupts column sums, by OS index */
	uint64_t nic_bytes;                /* rx + tx of every interface but lo */
};
/* Each fills its part of the sample from the file's text; 0 or -1. */
int rpm_parse_stat(const char *text, struct rpm_host_sample *s);
int rpm_parse_interrupts(const char *text, struct rpm_host_sample *s);
int rpm_parse_netdev(const char *text, struct rpm_host_sample *s);

#endif
