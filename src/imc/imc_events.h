/*
 * The imc component's events (POWER9 In-Memory Collection counters), as
 * data.  A skeleton: one nest event that cannot count on x86 and one
 * measured stand-in (the calling thread's CPU time).
 */
#ifndef HERITAGE_IMC_EVENTS_H
#define HERITAGE_IMC_EVENTS_H

#include <stddef.h>

#include "common/heritage_event_name.h"
#include "common/heritage_source.h"

enum imc_event_id {
	IMC_MCS01_64B_RD_DISP_PORT01,
	IMC_THREAD_CPU_NS,
	IMC_NEVENTS
};

enum imc_domain { IMC_NEST = 1, IMC_CORE = 2, IMC_THREAD = 3 };

struct imc_event {
	const char *name;
	const char *desc;
	enum heritage_source source;
	enum imc_domain domain;
	const char *units;
};

extern const struct imc_event imc_events[IMC_NEVENTS];

/* Codes: bits 0-7 the table index, bits 8-19 :cpu=N stored as N + 1. */
#define IMC_CODE_INDEX_MASK 0xffu
#define IMC_CODE_CPU_SHIFT 8
#define IMC_CODE_CPU_MASK 0xfffu

extern const struct heritage_event_names imc_event_names;

int imc_event_parse(const char *name, unsigned *code);
int imc_event_format(unsigned code, char *buf, size_t len);

#endif
