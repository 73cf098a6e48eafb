/*
 * Environment knobs, libpfm4-style (LIBPFM_FORCE_PMU...): every variable is
 * named PAPI_HERITAGE_<COMPONENT>_<KNOB> and documented in the component's
 * man page.
 *
 * Read once: the PAPI_HERITAGE_* variables are copied when the components
 * initialise (PAPI_library_init, heritage_env_load) and every later lookup
 * answers from that copy, so a program's setenv() in the middle of a run, or
 * a second thread's, changes nothing behind an event set's back.  A program
 * that means to change a knob between runs says so
 * (papi_heritage_env_reread(), heritage_env_reload()).  Validated: each
 * known variable has a syntax (heritage_env_check); an unknown name under
 * PAPI_HERITAGE_ is a typo and is refused with the nearest known name.
 * Ignored in setuid and setgid programs (AT_SECURE), as secure_getenv does.
 */
#ifndef HERITAGE_ENV_H
#define HERITAGE_ENV_H

/* Value of PAPI_HERITAGE_<component>_<knob> (uppercased) in the copy, or
 * NULL if unset or empty.  The first lookup takes the copy if no one has. */
const char *heritage_env(const char *component, const char *knob);

/* A 0-or-1 knob: *on is 0 when unset.  0, or -EINVAL with the message
 * (heritage_fail) for any other value: "yes" or "true" is not taken for 1
 * nor "no" for 0, which is what a typo would silently be. */
int heritage_env_flag(const char *component, const char *knob, int *on);

/* Copies the environment's PAPI_HERITAGE_* variables now, whatever they
 * hold (a component's check then says what is wrong). */
void heritage_env_load(void);

/* Copies them only if every one is known and valid: 0, or -EINVAL with the
 * first problem's message, the copy before unchanged. */
int heritage_env_reload(void);

/* 0, or -EINVAL (heritage_fail) naming the first variable of this component
 * ("imc", "paragon_rpm"...) or of the probes (PAPI_HERITAGE_PROBE_*) that is
 * not valid, or a PAPI_HERITAGE_ name no component reads that is nearest to
 * one of this component's.  NULL: every component's. */
int heritage_env_check(const char *component);

/* The known variables, for papi-heritage(7) and the tests: the i-th full
 * name and what it accepts, or NULL past the end. */
const char *heritage_env_known(unsigned i, const char **accepts);

#endif
