/*
 * papi_heritage.h - what the papi-heritage components add to PAPI's API.
 *
 * Everything here is compiled into libpapi with the components; include it
 * after <papi.h>.  See papi-heritage(7).
 */
#ifndef PAPI_HERITAGE_H
#define PAPI_HERITAGE_H

#ifdef __cplusplus
extern "C" {
#endif

/* The message for the last thing a heritage component refused in this
 * thread ("" if none): what was wrong and what to do.  PAPI's own calls
 * return only the code (PAPI_EINVAL, PAPI_ECNFLCT, ...). */
const char *papi_heritage_last_error(void);

/* The backend an itanium2 event set counts with: "instrument",
 * "breakpoint", "pagetrap", or "none" before its first PAPI_start.
 * Returns PAPI_OK, PAPI_ENOEVST or PAPI_ENOCMP (not an itanium2 set). */
int papi_heritage_itanium2_backend(int EventSet, char *name, int len);

#ifdef __cplusplus
}
#endif

#endif
