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

/* A 0-or-1 knob: *on is 0 when unset.  0, or -EINVAL with the message
 * (heritage_fail) for any other value: "yes" or "true" is not taken for 1
 * nor "no" for 0, which is what a typo would silently be. */
int heritage_env_flag(const char *component, const char *knob, int *on);

#endif
