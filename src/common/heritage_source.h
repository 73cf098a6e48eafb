/*
 * Where an event's value comes from on the running machine
 * (doc/architecture.md, "one facility layer"): one enum for every facility, numerically the public
 * PAPI_HERITAGE_MEASURED/_MODELLED/_UNAVAILABLE (<papi_heritage.h>), so the
 * glue hands it on unchanged (heritage_glue.h asserts that), and one text
 * form, the words papi_native_avail descriptions and the man pages use.
 */
#ifndef HERITAGE_SOURCE_H
#define HERITAGE_SOURCE_H

enum heritage_source {
	HERITAGE_MEASURED = 1,    /* a real source here counts the quantity */
	HERITAGE_MODELLED = 2,    /* a documented formula or model of measured quantities */
	HERITAGE_UNAVAILABLE = 3, /* no honest source: adding the event fails (or counts 0 on opt-in) */
};

/* "measured", "modelled" or "unavailable" (anything else: "unavailable",
 * claiming nothing). */
static inline const char *heritage_source_name(enum heritage_source s)
{
	return s == HERITAGE_MEASURED ? "measured" : s == HERITAGE_MODELLED ? "modelled" : "unavailable";
}

#endif
