/*
 * Unit tests of the one event-name parser and formatter
 * (src/common/heritage_event_name.c): every error case on a small facility
 * of the test's own, then each facility's table through it: itanium2's
 * :exact=, paragon_rpm's :cpu=, alpha21064's :width=, name/format round
 * trips over every event and qualifier.  Expected codes are written out
 * from the bit layouts the headers document (index, then qualifier bits).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "alpha/alpha_events.h"
#include "common/heritage_error.h"
#include "common/heritage_event_name.h"
#include "common/heritage_source.h"
#include "imc/imc_events.h"
#include "itanium2/it2_events.h"
#include "paragon/rpm_events.h"
#include "paragon/rpm_page.h"

#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "env_test.h"

/* ---- a facility of the test's own ---------------------------------------- */

struct toy_event {
	const char *name;
	int takes_lane;
};

static const struct toy_event toy_events[] = {
	{ .name = "ALPHA", .takes_lane = 1 },
	{ .name = "BETA", .takes_lane = 0 },
	{ .name = "ALPHA_2", .takes_lane = 1 },
};

/* :mode= 3, 5 or 7 on every event, stored as is with a given bit. */
static void mode_values(unsigned index, struct heritage_qual_values *v)
{
	(void)index;
	*v = (struct heritage_qual_values){ .n = 3, .v = { 3, 5, 7 } };
}

/* :lane=0..9 on ALPHA and ALPHA_2, stored plus one. */
static void lane_values(unsigned index, struct heritage_qual_values *v)
{
	*v = (struct heritage_qual_values){ 0 };
	if (toy_events[index].takes_lane) {
		*v = (struct heritage_qual_values){ .n = 2, .range = 1, .v = { 0, 9 } };
		snprintf(v->note, sizeof v->note, "the toy has ten lanes");
	}
}

static const struct heritage_qualifier toy_quals[] = {
	{ .name = "mode", .given = 0x100, .shift = 9, .mask = 0x7, .values = mode_values },
	{ .name = "lane", .given = 0, .shift = 12, .mask = 0xf, .values = lane_values },
};

static const struct heritage_event_names toy = {
	.component = "toy",
	.first_name = &toy_events[0].name,
	.stride = sizeof toy_events[0],
	.n = 3,
	.index_mask = 0xff,
	.quals = toy_quals,
	.nquals = 2,
};

static int parse(const char *name, unsigned *code)
{
	heritage_clear_error();
	*code = 0xdeadbeef;
	return heritage_event_parse(&toy, name, code);
}

static void assert_error(const char *name, int err, const char *needle1, const char *needle2)
{
	unsigned code;
	ck_assert_msg(parse(name, &code) == err, "%s: wanted %d, message '%s'", name, err, heritage_last_error());
	ck_assert_msg(code == 0xdeadbeef, "%s: code written on error", name);
	ck_assert_msg(strstr(heritage_last_error(), needle1), "%s: '%s' lacks '%s'", name, heritage_last_error(),
	              needle1);
	if (needle2)
		ck_assert_msg(strstr(heritage_last_error(), needle2), "%s: '%s' lacks '%s'", name, heritage_last_error(),
		              needle2);
}

START_TEST(toy_names_and_codes)
{
	unsigned code;
	ck_assert_int_eq(parse("ALPHA", &code), 0);
	ck_assert_uint_eq(code, 0);
	ck_assert_int_eq(parse("beta", &code), 0);
	ck_assert_uint_eq(code, 1);
	ck_assert_int_eq(parse("Alpha_2", &code), 0);
	ck_assert_uint_eq(code, 2);
	/* mode 5: given bit 0x100, 5 << 9. */
	ck_assert_int_eq(parse("ALPHA:mode=5", &code), 0);
	ck_assert_uint_eq(code, 0x100u | 5u << 9);
	/* lane 0 is stored as 1 << 12; lane 9 as 10 << 12. */
	ck_assert_int_eq(parse("ALPHA_2:lane=0", &code), 0);
	ck_assert_uint_eq(code, 2u | 1u << 12);
	ck_assert_int_eq(parse("ALPHA:LANE=9:Mode=7", &code), 0);
	ck_assert_uint_eq(code, 0x100u | 7u << 9 | 10u << 12);
	ck_assert_int_eq(parse("BETA:mode=3", &code), 0);
	ck_assert_uint_eq(code, 1u | 0x100u | 3u << 9);
	/* Leading zeros are digits too. */
	ck_assert_int_eq(parse("ALPHA:lane=07", &code), 0);
	ck_assert_uint_eq(code, 8u << 12);
}
END_TEST

START_TEST(toy_errors)
{
	/* Unknown base names: -ENOENT, naming the event and the component. */
	assert_error("GAMMA", -ENOENT, "no event named 'GAMMA' in component toy", NULL);
	assert_error("GAMMA:mode=3", -ENOENT, "'GAMMA'", NULL);
	assert_error("ALPH", -ENOENT, "'ALPH'", NULL);
	assert_error("ALPHA_", -ENOENT, "'ALPHA_'", NULL);
	assert_error("", -ENOENT, "no event named ''", NULL);
	assert_error(":mode=3", -ENOENT, "no event named ''", NULL);
	/* Qualifiers: -EINVAL, naming the qualifier and what is allowed. */
	assert_error("ALPHA:speed=1", -EINVAL, "unknown qualifier ':speed=1'", ":mode=3, 5 or 7, :lane=0..9");
	assert_error("BETA:lane=1", -EINVAL, "unknown qualifier ':lane=1'", "it takes :mode=3, 5 or 7)");
	assert_error("ALPHA:", -EINVAL, "unknown qualifier ':'", NULL);
	assert_error("ALPHA:mode=4", -EINVAL, ":mode takes 3, 5 or 7, not '4'", NULL);
	assert_error("ALPHA:mode=", -EINVAL, ":mode takes 3, 5 or 7, not ''", NULL);
	assert_error("ALPHA:mode", -EINVAL, ":mode takes 3, 5 or 7, not ''", NULL);
	assert_error("ALPHA:mode=+5", -EINVAL, "not '+5'", NULL);
	assert_error("ALPHA:mode=-5", -EINVAL, "not '-5'", NULL);
	assert_error("ALPHA:mode= 5", -EINVAL, "not ' 5'", NULL);
	assert_error("ALPHA:mode=0x5", -EINVAL, "not '0x5'", NULL);
	assert_error("ALPHA:mode=5x", -EINVAL, "not '5x'", NULL);
	assert_error("ALPHA:mode=99999999999999999999999", -EINVAL, "not '99999999999999999999999'", NULL);
	assert_error("ALPHA:lane=10", -EINVAL, ":lane takes 0..9, not '10'", "the toy has ten lanes");
	assert_error("ALPHA:mode=3:mode=5", -EINVAL, ":mode given twice", NULL);
	assert_error("ALPHA:mode=3:", -EINVAL, "unknown qualifier ':'", NULL);
	/* A facility whose events take no qualifier at all says so. */
	static const struct heritage_event_names bare = {
		.component = "bare", .first_name = &toy_events[0].name, .stride = sizeof toy_events[0], .n = 3,
		.index_mask = 0xff,
	};
	unsigned code;
	ck_assert_int_eq(heritage_event_parse(&bare, "BETA:x=1", &code), -EINVAL);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "bare: BETA takes no qualifier, not ':x=1'"));
	ck_assert_int_eq(heritage_event_parse(&bare, NULL, &code), -EINVAL);
}
END_TEST

START_TEST(toy_format)
{
	char buf[64];
	ck_assert_int_eq(heritage_event_format(&toy, 0x100u | 7u << 9 | 10u << 12, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "ALPHA:mode=7:lane=9"); /* table order, whatever order was typed */
	ck_assert_int_eq(heritage_event_format(&toy, 1, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "BETA");
	/* Codes parse cannot give. */
	ck_assert_int_eq(heritage_event_format(&toy, 3, buf, sizeof buf), -ENOENT);          /* index */
	ck_assert_int_eq(heritage_event_format(&toy, 1u << 20, buf, sizeof buf), -ENOENT);   /* stray bit */
	ck_assert_int_eq(heritage_event_format(&toy, 5u << 9, buf, sizeof buf), -ENOENT);    /* value, no given bit */
	ck_assert_int_eq(heritage_event_format(&toy, 0x100u | 4u << 9, buf, sizeof buf), -ENOENT); /* mode 4 */
	ck_assert_int_eq(heritage_event_format(&toy, 1u | 1u << 12, buf, sizeof buf), -ENOENT);    /* BETA:lane */
	ck_assert_int_eq(heritage_event_format(&toy, 11u << 12, buf, sizeof buf), -ENOENT);        /* lane 10 */
	/* "ALPHA:mode=7" is 12 characters: 12 bytes do not hold its NUL. */
	ck_assert_int_eq(heritage_event_format(&toy, 0x100u | 7u << 9, buf, 12), -ENOSPC);
	ck_assert_int_eq(heritage_event_format(&toy, 0x100u | 7u << 9, buf, 13), 0);
	ck_assert_int_eq(heritage_event_format(&toy, 0, buf, 5), -ENOSPC);
}
END_TEST

START_TEST(toy_enumeration)
{
	/* mode: 3, 5, 7 in list order, then the end. */
	unsigned code = 0, want[] = { 3, 5, 7 };
	for (unsigned i = 0; i < 3; i++) {
		ck_assert_int_eq(heritage_event_next_qual(&toy, 0, &code), 0);
		ck_assert_uint_eq(code, 0x100u | want[i] << 9);
	}
	ck_assert_int_eq(heritage_event_next_qual(&toy, 0, &code), -ENOENT);
	/* lane: 0..9 up the range, stored plus one. */
	code = 2;
	for (unsigned lane = 0; lane <= 9; lane++) {
		ck_assert_int_eq(heritage_event_next_qual(&toy, 1, &code), 0);
		ck_assert_uint_eq(code, 2u | (lane + 1) << 12);
	}
	ck_assert_int_eq(heritage_event_next_qual(&toy, 1, &code), -ENOENT);
	code = 1; /* BETA takes no lane */
	ck_assert_int_eq(heritage_event_next_qual(&toy, 1, &code), -ENOENT);
	code = 3;
	ck_assert_int_eq(heritage_event_next_qual(&toy, 0, &code), -ENOENT);
}
END_TEST

/* ---- the facilities' tables ------------------------------------------------ */

/* Every event and every qualifier value its table declares: format, parse
 * back, same code; and the name in the other case parses too. */
static void round_trip_all(const struct heritage_event_names *f)
{
	char buf[256], upper[256];
	for (unsigned i = 0; i < f->n; i++) {
		unsigned codes[64], n = 0, code = i;
		codes[n++] = i;
		for (unsigned k = 0; k < f->nquals; k++)
			for (code = i; n < 64 && heritage_event_next_qual(f, k, &code) == 0;)
				codes[n++] = code;
		for (unsigned j = 0; j < n; j++) {
			unsigned back = ~0u;
			ck_assert_int_eq(heritage_event_format(f, codes[j], buf, sizeof buf), 0);
			ck_assert_msg(heritage_event_parse(f, buf, &back) == 0, "%s: %s", buf, heritage_last_error());
			ck_assert_uint_eq(back, codes[j]);
			for (unsigned c = 0; c <= strlen(buf); c++)
				upper[c] = buf[c] >= 'a' && buf[c] <= 'z' ? (char)(buf[c] - 'a' + 'A') : buf[c];
			ck_assert_msg(heritage_event_parse(f, upper, &back) == 0, "%s: %s", upper, heritage_last_error());
			ck_assert_uint_eq(back, codes[j]);
		}
	}
}

/* The catalogue index of NAME, found by scanning the table (not by the parser under test). */
static unsigned it2_index(const char *name)
{
	for (unsigned i = 0; i < IT2_NEVENTS; i++)
		if (strcmp(it2_catalog[i].name, name) == 0)
			return i;
	ck_abort_msg("%s not in the catalogue", name);
	return 0;
}

START_TEST(itanium2_names)
{
	unsigned code;
	char buf[64];
	unsigned loads = it2_index("LOADS_RETIRED"), stores = it2_index("STORES_RETIRED");
	unsigned ibrp2 = it2_index("IA64_TAGGED_INST_RETIRED_IBRP2_PMC8"), cycles = it2_index("CPU_CYCLES");
	/* Index, then :exact= as bit 0x400 (given) and 0x800 (1). */
	ck_assert_int_eq(it2_event_parse("LOADS_RETIRED", &code), 0);
	ck_assert_uint_eq(code, loads);
	ck_assert_int_eq(it2_event_parse("stores_retired:EXACT=1", &code), 0);
	ck_assert_uint_eq(code, stores | 0xc00u);
	ck_assert_int_eq(it2_event_parse("IA64_TAGGED_INST_RETIRED_IBRP2_PMC8:exact=0", &code), 0);
	ck_assert_uint_eq(code, ibrp2 | 0x400u);
	ck_assert_int_eq(it2_event_parse("CPU_CYCLES", &code), 0);
	ck_assert_uint_eq(code, cycles);
	ck_assert_int_eq(it2_event_format(stores | 0xc00u, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "STORES_RETIRED:exact=1");
	ck_assert_int_eq(it2_event_format(ibrp2 | 0x400u, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "IA64_TAGGED_INST_RETIRED_IBRP2_PMC8:exact=0");
	/* Every catalogue event has a name, the seed's among them. */
	ck_assert_int_eq(it2_event_parse("L1D_READ_MISSES_ALL", &code), 0);
	ck_assert_uint_eq(code, it2_index("L1D_READ_MISSES_ALL"));
	ck_assert_int_eq(it2_event_parse("DATA_EAR_CACHE_LAT4", &code), 0);
	/* The one error rule. */
	ck_assert_int_eq(it2_event_parse("NO_SUCH_EVENT", &code), -ENOENT);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "no event named 'NO_SUCH_EVENT' in component itanium2"));
	ck_assert_int_eq(it2_event_parse("LOADS_RETIRED:exact=2", &code), -EINVAL);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), ":exact takes 0 or 1, not '2'"));
	ck_assert_int_eq(it2_event_parse("LOADS_RETIRED:cpu=0", &code), -EINVAL);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "it takes :exact=0 or 1"));
	ck_assert_int_eq(it2_event_format(IT2_NEVENTS, buf, sizeof buf), -ENOENT);
	ck_assert_int_eq(it2_event_format(0x1000, buf, sizeof buf), -ENOENT);
	ck_assert_int_eq(it2_event_format(0x800, buf, sizeof buf), -ENOENT); /* exact=1 without "given" */
	round_trip_all(&it2_event_names);
	/* libpfm-3's Itanium 2 table in PAPI 7.0.0 has 497 entries (the seed's PAPI: "roughly 475"). */
	ck_assert_uint_ge(it2_event_names.n, 475);
	/* Sources: CPU_CYCLES is modelled, the nine data and instruction
	 * events measured, the pipeline's bubbles unavailable with a reason. */
	const char *measured[] = { "LOADS_RETIRED", "STORES_RETIRED", "MISALIGNED_LOADS_RETIRED",
	                           "MISALIGNED_STORES_RETIRED", "IA64_INST_RETIRED",
	                           "IA64_TAGGED_INST_RETIRED_IBRP0_PMC8", "IA64_TAGGED_INST_RETIRED_IBRP1_PMC9",
	                           "IA64_TAGGED_INST_RETIRED_IBRP2_PMC8", "IA64_TAGGED_INST_RETIRED_IBRP3_PMC9" };
	for (unsigned i = 0; i < sizeof measured / sizeof measured[0]; i++) {
		ck_assert_int_eq(it2_event_source(it2_index(measured[i])), HERITAGE_MEASURED);
		ck_assert_ptr_null(it2_event_unavailable(it2_index(measured[i])));
	}
	ck_assert_int_eq(it2_event_source(cycles), HERITAGE_MODELLED);
	unsigned bubble = it2_index("BACK_END_BUBBLE_ALL");
	ck_assert_int_eq(it2_event_source(bubble), HERITAGE_UNAVAILABLE);
	ck_assert_ptr_nonnull(strstr(it2_event_unavailable(bubble), "pipeline"));
	ck_assert_ptr_nonnull(strstr(it2_event_unavailable(it2_index("ALAT_CAPACITY_MISS_ALL")), "advanced load"));
	ck_assert_ptr_nonnull(strstr(it2_event_unavailable(it2_index("RSE_EVENT_RETIRED")), "register stack"));
	ck_assert_ptr_nonnull(strstr(it2_event_unavailable(it2_index("BUS_ALL_ANY")), "bus"));
}
END_TEST

/* Enumeration: LOADS_RETIRED first, then the catalogue's order without it;
 * each filter visits exactly the events whose libpfm-3 bits have it. */
START_TEST(itanium2_enumeration)
{
	unsigned loads = it2_index("LOADS_RETIRED");
	ck_assert_uint_eq(IT2_FIRST_EVENT, loads);
	unsigned idx = IT2_FIRST_EVENT, n = 1, prev = 0, first_after = 1;
	while (it2_event_next(&idx, 0) == 0) {
		ck_assert_uint_ne(idx, loads);
		if (!first_after)
			ck_assert_uint_gt(idx, prev);
		first_after = 0;
		prev = idx;
		n++;
	}
	ck_assert_uint_eq(n, IT2_NEVENTS);
	const unsigned filters[] = { IT2_DARR, IT2_IARR, IT2_OPCM, IT2_DEAR, IT2_IEAR };
	for (unsigned f = 0; f < sizeof filters / sizeof filters[0]; f++) {
		unsigned want = 0, got = 0;
		for (unsigned i = 0; i < IT2_NEVENTS; i++) {
			const struct it2_cat_entry *c = &it2_catalog[i];
			unsigned t = (c->code >> 8) & 7; /* pme_type */
			int has = filters[f] == IT2_DARR ? (c->qual & 4) != 0
			          : filters[f] == IT2_IARR ? (c->qual & 1) != 0
			          : filters[f] == IT2_OPCM ? (c->qual & 2) != 0
			          : filters[f] == IT2_DEAR ? (t >= 4 && t <= 6)
			                                         : (t == 2 || t == 3);
			want += has && i != loads;
		}
		for (idx = IT2_FIRST_EVENT; it2_event_next(&idx, filters[f]) == 0;)
			got++;
		ck_assert_uint_eq(got, want);
	}
	/* libpfm-3's counts (PAPI 7.0.0's table): 160 data-range events. */
	unsigned dar = 0;
	for (idx = IT2_FIRST_EVENT, dar = 1; it2_event_next(&idx, IT2_DARR) == 0;)
		dar++;
	ck_assert_uint_eq(dar, 160);
}
END_TEST

static unsigned rpm_index(const char *name)
{
	for (unsigned i = 0; i < rpm_nevents; i++)
		if (strcmp(rpm_events[i].name, name) == 0)
			return i;
	ck_abort_msg("%s not in the table", name);
	return 0;
}

START_TEST(paragon_rpm_names)
{
	unsigned code, ncpus = rpm_cpu_count();
	char buf[128], name[64];
	ck_assert_uint_ge(ncpus, 1);
	/* Index, then :cpu=N as N + 1 in bits 8.. (0: the sum over CPUs). */
	unsigned idle = rpm_index("rpms_idle"), time = rpm_index("rpm_time");
	ck_assert_int_eq(rpm_event_parse("rpms_idle", &code), 0);
	ck_assert_uint_eq(code, idle);
	ck_assert_int_eq(rpm_event_parse("RPMS_IDLE:CPU=0", &code), 0);
	ck_assert_uint_eq(code, idle | 1u << 8);
	snprintf(name, sizeof name, "rpms_idle:cpu=%u", ncpus - 1);
	ck_assert_int_eq(rpm_event_parse(name, &code), 0);
	ck_assert_uint_eq(code, idle | ncpus << 8);
	ck_assert_int_eq(rpm_event_format(code, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, name);
	/* The one error rule. */
	ck_assert_int_eq(rpm_event_parse("rpms_nosuch", &code), -ENOENT);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "no event named 'rpms_nosuch' in component paragon_rpm"));
	snprintf(name, sizeof name, "rpms_idle:cpu=%u", ncpus);
	ck_assert_int_eq(rpm_event_parse(name, &code), -EINVAL);
	snprintf(buf, sizeof buf, ":cpu takes 0..%u, not '%u': this machine has %u CPUs", ncpus - 1, ncpus, ncpus);
	ck_assert_msg(strstr(heritage_last_error(), buf), "'%s' lacks '%s'", heritage_last_error(), buf);
	ck_assert_int_eq(rpm_event_parse("rpm_time:cpu=0", &code), -EINVAL);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "rpm_time takes no qualifier"));
	ck_assert_int_eq(rpm_event_parse("rpms_int:node=0", &code), -EINVAL);
	ck_assert_int_eq(rpm_event_parse("rpms_int:cpu=-1", &code), -EINVAL);
	ck_assert_int_eq(rpm_event_format(time | 1u << 8, buf, sizeof buf), -ENOENT); /* rpm_time takes no CPU */
	ck_assert_int_eq(rpm_event_format(rpm_nevents, buf, sizeof buf), -ENOENT);
	round_trip_all(&rpm_event_names);
	/* Every soft counter offers each CPU, in order. */
	code = idle;
	for (unsigned c = 0; c < ncpus; c++) {
		ck_assert_int_eq(heritage_event_next_qual(&rpm_event_names, 0, &code), 0);
		ck_assert_uint_eq(code, idle | (c + 1) << 8);
	}
	ck_assert_int_eq(heritage_event_next_qual(&rpm_event_names, 0, &code), -ENOENT);
	ck_assert_int_eq(rpm_events[time].source, HERITAGE_MEASURED);
	ck_assert_int_eq(rpm_events[rpm_index("rpm_exp")].source, HERITAGE_UNAVAILABLE);
	ck_assert_int_eq(rpm_events[rpm_index("rpm_cpu0")].source, HERITAGE_MODELLED);
}
END_TEST

START_TEST(alpha21064_names)
{
	unsigned code;
	char buf[64];
	/* Index, then :width= as bit 0x100 (given) and the width in bits 9..13.
	 * LOAD_INSNS is row 2 (counter 0: 16 or 12), STORE_INSNS row 15
	 * (counter 1: 12 or 8). */
	ck_assert_int_eq(alpha_event_parse("LOAD_INSNS:width=12", &code), 0);
	ck_assert_uint_eq(code, 2u | 0x100u | 12u << 9);
	ck_assert_int_eq(alpha_event_parse("store_insns:width=8", &code), 0);
	ck_assert_uint_eq(code, 15u | 0x100u | 8u << 9);
	ck_assert_int_eq(alpha_event_parse("LOAD_INSNS:width=8", &code), -EINVAL);
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), ":width takes 16 or 12, not '8'"));
	ck_assert_ptr_nonnull(strstr(heritage_last_error(), "(65536 or 4096)"));
	ck_assert_int_eq(alpha_event_parse("LOAD_INSNS:cpu=0", &code), -EINVAL);
	ck_assert_int_eq(alpha_event_parse("LOADS", &code), -ENOENT);
	round_trip_all(&alpha_event_names);
	/* Enumeration: the default width first. */
	code = 15;
	ck_assert_int_eq(heritage_event_next_qual(&alpha_event_names, 0, &code), 0);
	ck_assert_int_eq(alpha_event_format(code, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "STORE_INSNS:width=12");
	ck_assert_int_eq(heritage_event_next_qual(&alpha_event_names, 0, &code), 0);
	ck_assert_int_eq(alpha_event_format(code, buf, sizeof buf), 0);
	ck_assert_str_eq(buf, "STORE_INSNS:width=8");
	ck_assert_int_eq(heritage_event_next_qual(&alpha_event_names, 0, &code), -ENOENT);
}
END_TEST

START_TEST(source_words)
{
	/* The public numbers (papi_heritage.h) and the words of the man pages. */
	ck_assert_int_eq(HERITAGE_MEASURED, 1);
	ck_assert_int_eq(HERITAGE_MODELLED, 2);
	ck_assert_int_eq(HERITAGE_UNAVAILABLE, 3);
	ck_assert_str_eq(heritage_source_name(HERITAGE_MEASURED), "measured");
	ck_assert_str_eq(heritage_source_name(HERITAGE_MODELLED), "modelled");
	ck_assert_str_eq(heritage_source_name(HERITAGE_UNAVAILABLE), "unavailable");
}
END_TEST

/* The did-you-mean of an unknown name is the three nearest names by plain
 * edit distance (or containing the event part typed), as computed here
 * the slow way: the parser's cut-offs (length, character counts, a row
 * past the limit) only skip names that could not be suggested.  Typos made
 * from every name of each catalog by a fixed pseudo-random edit. */
static unsigned ref_distance(const char *a, size_t la, const char *b)
{
	size_t lb = strlen(b);
	static unsigned d[128][128];
	if (la >= 127 || lb >= 127)
		return ~0u;
	for (size_t i = 0; i <= la; i++)
		for (size_t j = 0; j <= lb; j++) {
			if (!i || !j) {
				d[i][j] = (unsigned)(i + j);
				continue;
			}
			unsigned sub = d[i - 1][j - 1] + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
			unsigned ins = d[i][j - 1] + 1, del = d[i - 1][j] + 1;
			d[i][j] = sub < ins ? (sub < del ? sub : del) : (ins < del ? ins : del);
		}
	return d[la][lb];
}

static void ref_suggest(const struct heritage_event_names *f, const char *name, char *out, size_t len)
{
	size_t base = strlen(name);
	unsigned best[3] = { ~0u, ~0u, ~0u }, who[3] = { 0 };
	const char *tail = name;
	for (const char *c = name; c + 1 < name + base; c++)
		if (c[0] == ':' && c[1] == ':')
			tail = c + 2;
	size_t tlen = base - (size_t)(tail - name);
	unsigned limit = base / 3 > 3 ? (unsigned)(base / 3) : 3;
	for (unsigned i = 0; i < f->n; i++) {
		const char *e = heritage_event_name_at(f, i);
		unsigned d = ref_distance(name, base, e);
		if (d > limit && tlen >= 4 && strcasestr(e, tail))
			d = limit;
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
		at += (size_t)snprintf(out + at, len - at, "%s%s", k ? ", " : "did you mean ", heritage_event_name_at(f, who[k]));
}

START_TEST(suggestions_are_the_nearest)
{
	char why[512];
	ck_assert_int_eq(imc_events_init(why, sizeof why), 0);
	const struct heritage_event_names *cats[] = { &it2_event_names, &rpm_event_names, &alpha_event_names,
	                                              imc_events_names() };
	unsigned seed = 12345, checked = 0;
	for (unsigned c = 0; c < sizeof cats / sizeof cats[0]; c++) {
		const struct heritage_event_names *f = cats[c];
		/* Every fifth name: the reference is slow (full tables). */
		for (unsigned i = 0; i < f->n; i += f->n > 50 ? 5 : 1) {
			char typo[160], want[400];
			const char *e = heritage_event_name_at(f, i);
			size_t n = strlen(e);
			if (n + 2 >= sizeof typo)
				continue;
			seed = seed * 1103515245u + 12345u;
			size_t at = (seed >> 8) % n;
			memcpy(typo, e, n + 1);
			switch ((seed >> 4) % 4) {
			case 0: typo[at] = typo[at] == 'Q' ? 'X' : 'Q'; break;          /* substitute */
			case 1: memmove(typo + at, typo + at + 1, n - at); break;        /* delete */
			case 2: memmove(typo + at + 1, typo + at, n - at + 1); typo[at] = 'Z'; break; /* insert */
			default: typo[n / 2] = '\0'; break;                              /* cut */
			}
			if (strchr(typo, ':') && !strstr(typo, "::"))
				continue; /* a qualifier now: another error */
			unsigned code;
			if (heritage_event_parse(f, typo, &code) != -ENOENT)
				continue; /* the typo is another name */
			ref_suggest(f, typo, want, sizeof want);
			const char *msg = heritage_last_error();
			ck_assert_msg(*want ? strstr(msg, want) != NULL : strstr(msg, "did you mean") == NULL,
			              "%s: \"%s\": says \"%s\", the nearest are \"%s\"", f->component, typo, msg, want);
			checked++;
		}
	}
	ck_assert_uint_gt(checked, 150);
}
END_TEST

static Suite *events_suite(void)
{
	Suite *s = suite_create("event names");
	TCase *shared = tcase_create("shared parser");
	tcase_add_test(shared, toy_names_and_codes);
	tcase_add_test(shared, toy_errors);
	tcase_add_test(shared, toy_format);
	tcase_add_test(shared, toy_enumeration);
	tcase_add_test(shared, source_words);
	suite_add_tcase(s, shared);
	TCase *facilities = tcase_create("facilities");
	tcase_add_test(facilities, itanium2_names);
	tcase_add_test(facilities, itanium2_enumeration);
	tcase_add_test(facilities, paragon_rpm_names);
	tcase_add_test(facilities, alpha21064_names);
	tcase_add_test(facilities, suggestions_are_the_nearest);
	suite_add_tcase(s, facilities);
	return s;
}

int main(void)
{
	/* paragon_rpm's shared pages get names of this run's own, removed at the
	 * end (as tests/run-case does for every test). */
	char shm[64], pattern[96];
	snprintf(shm, sizeof shm, "hrt-events-%d", (int)getpid());
	env_set("PAPI_HERITAGE_PARAGON_RPM_SHM", shm, 1);
	SRunner *sr = srunner_create(events_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	snprintf(pattern, sizeof pattern, "/dev/shm/%s-*", shm);
	glob_t g;
	if (glob(pattern, 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			unlink(g.gl_pathv[i]);
		globfree(&g);
	}
	return failed ? 1 : 0;
}
