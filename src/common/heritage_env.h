/*
 * Environment knobs, libpfm4-style (LIBPFM_FORCE_PMU...): every variable is
 * named PAPI_HERITAGE_<COMPONENT>_<KNOB> and documented in the component's
 * man page.  Read at the moment they matter (PAPI_start, PAPI_add_event), so
 * a test can change them between runs of one process.
 */
#ifndef HERITAGE_ENV_H
#define HERITAGE_ENV_H

/* Value of PAPI_HERITAGE_<component>_<knob> (uppercased), or NULL. */
const char *heritage_env(const char *component, const char *knob);

#endif
