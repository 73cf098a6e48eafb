#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "paragon/rpm_model.h"

double rpm_timer_from_ticks(uint64_t ticks)
{
	double d;
	memcpy(&d, &ticks, sizeof d);
	return d;
}

uint64_t rpm_timer_to_ticks(double timer)
{
	uint64_t t;
	memcpy(&t, &timer, sizeof t);
	return t;
}

/* RPM(4), EXAMPLES, with its constants; only the union's type name changed. */
double rpm_seconds_by_exponent_trick(double timer)
{
	const double two_to_52d = 4503599627370496.0;
	const unsigned short or_exponent = 0x4330, mask_exponent = 0x000F;
	union {
		unsigned short wordwise[4];
		double value;
	} t;
	double hz = 1.0 / (double)RPM_TIME_HZ;

	t.value = timer;
	t.wordwise[3] = (unsigned short)((t.wordwise[3] & mask_exponent) | or_exponent);
	t.value = hz * (t.value - two_to_52d);
	return t.value;
}

void rpm_bus_model(uint64_t elapsed_cycles, struct rpm_bus *bus)
{
	/* elapsed * 975 / 1000 without overflow for any 64-bit elapsed count. */
	uint64_t busy = elapsed_cycles / 1000 * RPM_BUS_BUSY_PERMILLE +
	                elapsed_cycles % 1000 * RPM_BUS_BUSY_PERMILLE / 1000;
	uint64_t others = bus->cpu1 + bus->ltu + bus->exp;
	bus->cpu0 = busy > others ? busy - others : 0;
}

uint64_t rpm_wrap_update(struct rpm_wrap *w, uint32_t raw)
{
	if (!w->primed) {
		w->value = raw;
		w->primed = 1;
	} else {
		/* Unsigned 32-bit difference: right across one wrap. */
		w->value += (uint32_t)(raw - w->last);
	}
	w->last = raw;
	return w->value;
}

/* ---- mesh ----------------------------------------------------------------- */

static int shape_ok(const struct rpm_mesh_shape *m)
{
	return m && m->rows && m->cols && (uint64_t)m->rows * m->cols <= RPM_MESH_MAX_NODES &&
	       (m->routing == RPM_ROUTE_XY || m->routing == RPM_ROUTE_YX);
}

int rpm_mesh_route(const struct rpm_mesh_shape *m, unsigned src, unsigned dst, struct rpm_hop *hops,
                   unsigned max)
{
	if (!shape_ok(m) || src >= m->rows * m->cols || dst >= m->rows * m->cols)
		return -1;
	unsigned row = src / m->cols, col = src % m->cols;
	unsigned drow = dst / m->cols, dcol = dst % m->cols;
	unsigned n = 0;

	for (int phase = 0; phase < 2; phase++) {
		int along_row = (phase == 0) == (m->routing == RPM_ROUTE_XY);
		while (along_row ? col != dcol : row != drow) {
			if (n >= max)
				return -1;
			hops[n].router = row * m->cols + col;
			if (along_row) {
				hops[n].dir = dcol > col ? RPM_DIR_EAST : RPM_DIR_WEST;
				col = dcol > col ? col + 1 : col - 1;
			} else {
				hops[n].dir = drow > row ? RPM_DIR_SOUTH : RPM_DIR_NORTH;
				row = drow > row ? row + 1 : row - 1;
			}
			n++;
		}
	}
	return (int)n;
}

int rpm_mesh_account(const struct rpm_mesh_shape *m, uint64_t *bytes_out, unsigned src, unsigned dst,
                     uint64_t bytes)
{
	struct rpm_hop hops[2 * RPM_MESH_MAX_NODES];
	int n = rpm_mesh_route(m, src, dst, hops, sizeof hops / sizeof hops[0]);

	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++)
		__atomic_fetch_add(&bytes_out[hops[i].router * RPM_NDIRS + hops[i].dir], bytes,
		                   __ATOMIC_RELAXED);
	return 0;
}

int rpm_mesh_shape_for_nodes(unsigned nodes, struct rpm_mesh_shape *m)
{
	if (nodes == 0 || nodes > RPM_MESH_MAX_NODES)
		return -1;
	unsigned rows = 1;
	for (unsigned r = 1; r * r <= nodes; r++)
		if (nodes % r == 0)
			rows = r;
	m->rows = rows;
	m->cols = nodes / rows;
	m->routing = RPM_ROUTE_XY;
	return 0;
}

int rpm_mesh_parse_shape(const char *s, struct rpm_mesh_shape *m)
{
	char *end;
	unsigned long r, c;

	if (!s || !isdigit((unsigned char)*s))
		return -1;
	r = strtoul(s, &end, 10);
	if (*end != 'x' && *end != 'X')
		return -1;
	if (!isdigit((unsigned char)end[1]))
		return -1;
	c = strtoul(end + 1, &end, 10);
	if (*end || r == 0 || c == 0 || r > RPM_MESH_MAX_NODES || c > RPM_MESH_MAX_NODES ||
	    r * c > RPM_MESH_MAX_NODES)
		return -1;
	m->rows = (unsigned)r;
	m->cols = (unsigned)c;
	return 0;
}

int rpm_mesh_parse_routing(const char *s, enum rpm_routing *r)
{
	if (!s)
		return -1;
	if (strcasecmp(s, "xy") == 0)
		*r = RPM_ROUTE_XY;
	else if (strcasecmp(s, "yx") == 0)
		*r = RPM_ROUTE_YX;
	else
		return -1;
	return 0;
}

const char *rpm_dir_name(enum rpm_dir d)
{
	static const char *const names[RPM_NDIRS] = { "north", "south", "east", "west" };
	return (unsigned)d < RPM_NDIRS ? names[d] : "?";
}

/* ---- /proc parsers (no allocation: they run in the fault handler) --------- */

static const char *next_line(const char *p)
{
	const char *nl = strchr(p, '\n');
	return nl ? nl + 1 : NULL;
}

static uint64_t number(const char **p)
{
	uint64_t v = 0;
	while (**p == ' ' || **p == '\t')
		(*p)++;
	while (isdigit((unsigned char)**p))
		v = v * 10 + (uint64_t)(*(*p)++ - '0');
	return v;
}

int rpm_parse_stat(const char *text, struct rpm_host_sample *s)
{
	int found = 0;

	s->ncpus = 0;
	s->kernel_io_ticks = 0;
	for (const char *p = text; p && *p; p = next_line(p)) {
		if (strncmp(p, "cpu", 3) != 0)
			continue;
		if (p[3] == ' ') {
			found = 1;
			const char *q = p + 3;
			uint64_t f[7];
			for (int i = 0; i < 7; i++)
				f[i] = number(&q);
			s->kernel_io_ticks = f[5] + f[6]; /* irq, softirq */
			continue;
		}
		if (!isdigit((unsigned char)p[3]))
			continue;
		const char *q = p + 3;
		uint64_t cpu = number(&q);
		uint64_t f[5];
		for (int i = 0; i < 5; i++)
			f[i] = number(&q); /* user nice system idle iowait */
		if (cpu >= RPM_MAX_CPUS)
			continue;
		s->idle_ticks[cpu] = f[3] + f[4];
		if (cpu + 1 > s->ncpus)
			s->ncpus = (unsigned)cpu + 1;
	}
	return found ? 0 : -1;
}

/* The header's next column: its CPU's OS index (RPM_MAX_CPUS for one past
 * the table: read, not counted), or -1 at the header's end. */
static long next_column(const char **h)
{
	while (**h == ' ')
		(*h)++;
	if (strncmp(*h, "CPU", 3) != 0)
		return -1;
	*h += 3;
	uint64_t cpu = number(h);
	return cpu < RPM_MAX_CPUS ? (long)cpu : RPM_MAX_CPUS;
}

/* Walks a row's numbers beside the header's columns; adds them to s when
 * add is set.  Returns how many of the ncols columns have a number. */
static unsigned row_numbers(const char *q, const char *header, unsigned ncols, struct rpm_host_sample *s, int add)
{
	unsigned got = 0;
	const char *h = header;
	while (got < ncols) {
		while (*q == ' ')
			q++;
		if (!isdigit((unsigned char)*q))
			break;
		uint64_t v = number(&q);
		long cpu = next_column(&h);
		if (add && cpu >= 0 && cpu < RPM_MAX_CPUS)
			s->interrupts[cpu] += v;
		got++;
	}
	return got;
}

/* No scratch memory, static or on the stack (it runs in the fault handler,
 * maybe on a small alternate signal stack, and 1024 columns would not fit
 * there): each row is walked twice beside the header, once to see it has a
 * number in every column, once to add them.  Reentrant. */
int rpm_parse_interrupts(const char *text, struct rpm_host_sample *s)
{
	unsigned ncols = 0;
	const char *h = text;
	long cpu;

	/* Header: "CPU0 CPU1 ..." for the online CPUs only. */
	while ((cpu = next_column(&h)) >= 0) {
		if (cpu < RPM_MAX_CPUS)
			s->interrupts[cpu] = 0;
		ncols++;
	}
	if (!ncols)
		return -1;
	for (const char *p = next_line(text); p && *p; p = next_line(p)) {
		const char *q = p;
		while (*q == ' ')
			q++;
		while (*q && *q != ':' && *q != '\n')
			q++;
		if (*q != ':')
			continue;
		q++;
		/* Rows like ERR: and MIS: have one system-wide number, not one
		 * per CPU: only rows with a number in every column count. */
		if (row_numbers(q, text, ncols, s, 0) == ncols)
			row_numbers(q, text, ncols, s, 1);
	}
	return 0;
}

int rpm_parse_netdev(const char *text, struct rpm_host_sample *s)
{
	s->nic_bytes = 0;
	for (const char *p = text; p && *p; p = next_line(p)) {
		const char *colon = strchr(p, ':');
		const char *nl = strchr(p, '\n');
		if (!colon || (nl && colon > nl))
			continue;
		const char *name = p;
		while (*name == ' ')
			name++;
		if (colon - name == 2 && strncmp(name, "lo", 2) == 0)
			continue;
		const char *q = colon + 1;
		uint64_t f[9];
		for (int i = 0; i < 9; i++)
			f[i] = number(&q); /* rx bytes ... tx bytes is the 9th */
		s->nic_bytes += f[0] + f[8];
	}
	return 0;
}

/* ---- TSC clock ------------------------------------------------------------- */

static uint64_t slope(uint64_t dns, uint64_t dtsc)
{
	return (uint64_t)(((unsigned __int128)dns << 32) / dtsc);
}

static void set_interval(struct rpm_tsc_clock *c, uint64_t ns)
{
	c->interval_ns = ns;
	c->interval = c->rate ? (uint64_t)(((unsigned __int128)ns << 32) / c->rate) : 1;
	if (c->interval == 0)
		c->interval = 1;
}

/* The tick view of the ns anchor (struct rpm_tsc_clock says why). */
static void set_ticks(struct rpm_tsc_clock *c)
{
	c->tick_base = c->ns_base / 100;
	c->tick_frac = (uint64_t)(((unsigned __int128)(c->ns_base % 100) << 64) / 100);
	/* < 2^64 while the TSC is faster than 10 MHz, which _init checked; a
	 * later slope that says otherwise is not believed beyond that. */
	unsigned __int128 m = ((unsigned __int128)c->mult << 32) / 100;
	c->tick_mult = m >> 64 ? UINT64_MAX : (uint64_t)m;
}

int rpm_tsc_clock_init(struct rpm_tsc_clock *c, uint64_t tsc_a, uint64_t ns_a, uint64_t tsc_b, uint64_t ns_b)
{
	if (tsc_b <= tsc_a || ns_b <= ns_a)
		return -1;
	c->tsc0 = tsc_a;
	c->ns0 = ns_a;
	c->tsc_base = tsc_b;
	c->ns_base = ns_b;
	c->rate = c->mult = slope(ns_b - ns_a, tsc_b - tsc_a);
	/* A TSC slower than rpm_time's 10 MHz could not resolve its ticks (and
	 * its tick slope would not fit in 64 bits). */
	if (c->rate == 0 || c->rate >= 100ULL << 32)
		return -1;
	/* The first slope comes from a short measurement: re-anchor soon, and
	 * double the interval as the measurement lengthens. */
	set_interval(c, RPM_TSC_FIRST_INTERVAL_NS);
	set_ticks(c);
	return 0;
}

void rpm_tsc_clock_anchor(struct rpm_tsc_clock *c, uint64_t tsc, uint64_t ns)
{
	uint64_t here = rpm_tsc_clock_ns(c, tsc) + RPM_TSC_GUARD_NS;

	if (ns > here + RPM_TSC_STEP_NS || here > ns + RPM_TSC_STEP_NS || tsc <= c->tsc0) {
		/* A step (suspend, or a TSC that is not what we thought): keep the
		 * slope, measure it afresh from here. */
		c->tsc0 = tsc;
		c->ns0 = ns;
	} else if (ns > c->ns0) {
		c->rate = slope(ns - c->ns0, tsc - c->tsc0);
	}
	/* Never backwards: start where the old anchor had got to if the clock
	 * is behind it, and slew so as to meet the clock at the next anchor. */
	uint64_t base = ns > here ? ns : here;
	uint64_t next = c->interval_ns * 2 < RPM_TSC_MAX_INTERVAL_NS ? c->interval_ns * 2 : RPM_TSC_MAX_INTERVAL_NS;
	set_interval(c, next);
	uint64_t ahead = base - ns;
	uint64_t fix = c->interval ? (uint64_t)(((unsigned __int128)ahead << 32) / c->interval) : 0;
	uint64_t max_fix = c->rate / 1000000 * RPM_TSC_SLEW_PPM;
	c->mult = c->rate - (fix < max_fix ? fix : max_fix);
	c->tsc_base = tsc;
	c->ns_base = base;
	set_ticks(c);
}
