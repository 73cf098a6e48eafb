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

/* Where an event's value comes from on the running machine (DESIGN.md). */
enum papi_heritage_source {
	PAPI_HERITAGE_MEASURED = 1,    /* a real source here counts the quantity */
	PAPI_HERITAGE_MODELLED = 2,    /* a documented formula or model of measured quantities */
	PAPI_HERITAGE_UNAVAILABLE = 3, /* no honest source: adding the event fails */
};

/* What an event can be used with, beyond what PAPI_event_info_t says. */
#define PAPI_HERITAGE_CAP_DARR 0x001u       /* data address range restriction */
#define PAPI_HERITAGE_CAP_IARR 0x002u       /* instruction address range restriction */
#define PAPI_HERITAGE_CAP_DEAR 0x004u       /* data event address register */
#define PAPI_HERITAGE_CAP_IEAR 0x008u       /* instruction event address register */
#define PAPI_HERITAGE_CAP_OPCM 0x010u       /* opcode matching */
#define PAPI_HERITAGE_CAP_OVERFLOW 0x020u   /* usable with PAPI_overflow */
#define PAPI_HERITAGE_CAP_PROFILE 0x040u    /* usable with PAPI_profil */
#define PAPI_HERITAGE_CAP_UNREADABLE 0x080u /* value only through overflow (PAPI_read estimates) */
#define PAPI_HERITAGE_CAP_SAMPLE 0x100u     /* a sample-set event */
#define PAPI_HERITAGE_CAP_TRACE 0x200u      /* a trace-mode event */

struct papi_heritage_event_facts {
	unsigned caps;                 /* PAPI_HERITAGE_CAP_* */
	enum papi_heritage_source source;
};

/* Facts about a native event of a heritage component, by PAPI event code
 * (from PAPI_event_name_to_code or enumeration).  Returns PAPI_OK,
 * PAPI_ENOEVNT (no such event) or PAPI_ENOCMP (the event belongs to a
 * component that is not a heritage one: use PAPI's own enumeration). */
int papi_heritage_event_facts(int event_code, struct papi_heritage_event_facts *facts);

/* Non-zero if the component (PAPI name) is one of papi-heritage's. */
int papi_heritage_is_component(const char *name);

/* The backend an itanium2 event set counts with: "instrument",
 * "breakpoint", "pagetrap", or "none" before its first PAPI_start.
 * Returns PAPI_OK, PAPI_ENOEVST or PAPI_ENOCMP (not an itanium2 set). */
int papi_heritage_itanium2_backend(int EventSet, char *name, int len);

#ifdef __cplusplus
}
#endif

#endif
