/*
 * The imc component's events: every (unit, event) pair of the process's
 * IMC catalog (imc_catalog_get()), named as Linux and PAPI name them,
 * "<pmu>::<EVENT>" (imc:::nest_mcs01_imc::PM_MCS01_64B_RD_DISP_PORT01),
 * with :cpu=N on nest (one CPU per chip) and core (one per core) events.
 * The table is built once per process from the catalog, so it is not a
 * const array as the other components' are: its rows are the catalog's.
 */
#ifndef HERITAGE_IMC_EVENTS_H
#define HERITAGE_IMC_EVENTS_H

#include <stddef.h>

#include "common/heritage_event_name.h"
#include "common/heritage_source.h"
#include "imc/imc_catalog.h"

/* Codes: bits 0-15 the catalog entry index, bits 16-27 :cpu=N stored as
 * N + 1 (0: not typed). */
#define IMC_CODE_INDEX_MASK 0xffffu
#define IMC_CODE_CPU_SHIFT 16
#define IMC_CODE_CPU_MASK 0xfffu

/* Reads the catalog and builds the name table, once; 0 or a negative
 * errno with the reason in why. */
int imc_events_init(char *why, size_t len);

/* After imc_events_init(): the catalog and the parser's view of it. */
const struct imc_catalog *imc_events_catalog(void);
const struct heritage_event_names *imc_events_names(void);
unsigned imc_nevents(void);

/* The entry and unit of code, or NULL for a code parse cannot give. */
const struct imc_cat_entry *imc_event_entry(unsigned code);
const struct imc_cat_unit *imc_event_unit(unsigned code);
/* :cpu=N of code, or -1 when not typed. */
int imc_event_cpu(unsigned code);

/* Here: measured, modelled or unavailable, and from what (or what would
 * be needed) in what, when what is not NULL. */
enum heritage_source imc_event_source(unsigned code, char *what, size_t len);
/* The event's description as papi_native_avail shows it: the catalog's
 * text when it has one, the unit, perf's spelling, scale and unit, and
 * where the count comes from here. */
void imc_event_describe(unsigned code, char *buf, size_t len);
/* PAPI_event_info_t.units: the catalog's unit and scale ("" when neither). */
void imc_event_units(unsigned code, char *buf, size_t len);

int imc_event_parse(const char *name, unsigned *code);
int imc_event_format(unsigned code, char *buf, size_t len);

#endif
