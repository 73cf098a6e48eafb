/*
 * it2_cache_replay: a valgrind lackey memory trace (valgrind --tool=lackey
 * --trace-mem=yes) through the it2_cache model set up as cachegrind
 * simulates caches, printing cachegrind's totals in the form of its output
 * file, for tests/cases/it2_cache_cachegrind.test to compare:
 *
 *   it2_cache_replay [--I1=size,assoc,line] [--D1=...] [--LL=...] [TRACE]
 *
 *   events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
 *   summary: <the nine totals>
 *
 * TRACE (default: standard input) has lines "I  addr,size" (an instruction
 * fetch), " L addr,size" (load), " S addr,size" (store) and " M addr,size"
 * (a load and a store of the same address by one instruction); any other
 * line (valgrind's "==pid==" messages) is skipped.  addr is hex, size
 * decimal.  As cachegrind does (cachegrind/cg_main.c, valgrind 3.17-3.19):
 *   - M counts as one data read (flushEvents: Ev_Dm is logged by
 *     log_0Ir_1Dr_cache_access; the manual: "instructions that modify a
 *     memory location ... are counted as doing just a read");
 *   - a data access larger than the smallest line size (a dirty helper's
 *     FXSAVE/XSAVE area, a wide CAS) is simulated as that many bytes from its
 *     address (min_line_size, the Ist_Dirty and Ist_CAS cases); lackey
 *     prints the whole size;
 *   - instruction fetches go through I1 and then LL, which D1 misses share.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/heritage_error.h"
#include "itanium2/it2_cache.h"

static void usage(void)
{
	fprintf(stderr, "usage: it2_cache_replay [--I1=size,assoc,line] [--D1=size,assoc,line] "
	                "[--LL=size,assoc,line] [TRACE]\n");
	exit(2);
}

static int parse_geometry(struct it2_cache_config *cfg, enum it2_cache_level level, const char *arg)
{
	unsigned long long size;
	unsigned ways, line;
	char tail;

	if (sscanf(arg, "%llu,%u,%u%c", &size, &ways, &line, &tail) != 3) {
		fprintf(stderr, "it2_cache_replay: '%s': expected size,assoc,line\n", arg);
		return -1;
	}
	if (it2_cache_set_geometry(cfg, level, size, ways, line) != 0) {
		fprintf(stderr, "it2_cache_replay: %s\n", heritage_last_error());
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct it2_cache_config cfg;
	const char *path = NULL;

	it2_cache_preset(&cfg, IT2_CACHE_CACHEGRIND);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r = 0;
		if (strncmp(a, "--I1=", 5) == 0)
			r = parse_geometry(&cfg, IT2_CACHE_L1I, a + 5);
		else if (strncmp(a, "--D1=", 5) == 0)
			r = parse_geometry(&cfg, IT2_CACHE_L1D, a + 5);
		else if (strncmp(a, "--LL=", 5) == 0)
			r = parse_geometry(&cfg, IT2_CACHE_L2, a + 5);
		else if (a[0] == '-' && a[1] != '\0')
			usage();
		else if (path == NULL)
			path = a;
		else
			usage();
		if (r)
			return 2;
	}

	struct it2_cache m;
	if (it2_cache_init(&m, &cfg) != 0) {
		fprintf(stderr, "it2_cache_replay: %s\n", heritage_last_error());
		return 2;
	}
	unsigned min_line = cfg.level[IT2_CACHE_L1I].line;
	if (cfg.level[IT2_CACHE_L1D].line < min_line)
		min_line = cfg.level[IT2_CACHE_L1D].line;
	if (cfg.level[IT2_CACHE_L2].line < min_line)
		min_line = cfg.level[IT2_CACHE_L2].line;

	FILE *f = stdin;
	if (path != NULL && strcmp(path, "-") != 0 && (f = fopen(path, "r")) == NULL) {
		fprintf(stderr, "it2_cache_replay: %s: %s\n", path, strerror(errno));
		return 2;
	}
	char buf[256];
	uint64_t records = 0, modifies = 0, clamped = 0, straddles = 0;
	while (fgets(buf, sizeof buf, f) != NULL) {
		const char *p = buf;
		while (*p == ' ')
			p++;
		char kind = *p;
		if ((kind != 'I' && kind != 'L' && kind != 'S' && kind != 'M') || p[1] != ' ')
			continue;
		char *end;
		uint64_t addr = strtoull(p + 1, &end, 16);
		if (*end != ',')
			continue;
		unsigned long size = strtoul(end + 1, &end, 10);
		if (size == 0)
			continue;
		unsigned flags;
		if (kind == 'I') {
			flags = IT2_ACC_IFETCH;
		} else {
			flags = kind == 'S' ? IT2_ACC_STORE : IT2_ACC_LOAD;
			modifies += kind == 'M';
			if (size > min_line) {
				size = min_line;
				clamped++;
			}
		}
		struct it2_cache_outcome o;
		it2_cache_access(&m, addr, (unsigned)size, flags, &o);
		straddles += kind != 'I' && o.lines > 1;
		records++;
	}
	if (ferror(f)) {
		fprintf(stderr, "it2_cache_replay: read error\n");
		return 2;
	}
	if (f != stdin)
		fclose(f);

	const struct it2_cache_level_counts *i1 = &m.cnt.level[IT2_CACHE_L1I][0];
	const struct it2_cache_level_counts *d1 = &m.cnt.level[IT2_CACHE_L1D][0];
	const struct it2_cache_level_counts *ll = &m.cnt.level[IT2_CACHE_L2][0];
	printf("events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw\n");
	printf("summary: %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
	       " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
	       i1->ifetch_hits + i1->ifetch_misses, i1->ifetch_misses, ll->ifetch_misses,
	       d1->read_hits + d1->read_misses, d1->read_misses, ll->read_misses,
	       d1->write_hits + d1->write_misses, d1->write_misses, ll->write_misses);
	fprintf(stderr, "it2_cache_replay: %" PRIu64 " records, %" PRIu64 " M (counted as reads), %" PRIu64
	        " data accesses cut to %u bytes, %" PRIu64 " straddling two D1 lines\n",
	        records, modifies, clamped, min_line, straddles);
	it2_cache_destroy(&m);
	return 0;
}
