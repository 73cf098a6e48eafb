/*
 * rpmsoft's floating-point trap counters (rpms_ft, rpms_fpe_*) in an opt-in
 * trap mode: PAPI_HERITAGE_PARAGON_RPM_FPE_TRAPS=invalid,divbyzero,overflow,
 * underflow,inexact (or "all") unmasks those SSE exceptions in the threads
 * that count (rpm_fpe_thread_enable), counts each SIGFPE by class and CPU,
 * and lets the instruction complete with the IEEE default result, as if the
 * traps were off: the SIGFPE handler masks the exception in the saved MXCSR
 * and steps that one instruction (watch_step_one, the watch engine's SIGTRAP
 * handler), the step trap unmasks it again.  Faults that are not ours
 * (integer division, traps the application enabled) go to the application's
 * SIGFPE handler or the default action (watch_signal_claim).
 */
#ifndef HERITAGE_RPM_FPE_H
#define HERITAGE_RPM_FPE_H

#include <stdint.h>

enum rpm_fpe_class { RPM_FPE_INV, RPM_FPE_DIV, RPM_FPE_OVF, RPM_FPE_UND, RPM_FPE_RES, RPM_FPE_NCLASSES };
/* The i860's two FP units: the multiplier (here: mul, div, FMA) and the
 * adder (everything else: add, sub, sqrt, conversions, compares). */
enum rpm_fpe_unit { RPM_FPE_ADDER, RPM_FPE_MULT, RPM_FPE_NUNITS };
/* The rpmsoft fields counted (rpms_fpe_ma/_aa have no source: SSE does not
 * say whether rounding incremented the result). */
enum rpm_fpe_field {
	RPM_FPF_FT, RPM_FPF_SE, RPM_FPF_SI, RPM_FPF_MU, RPM_FPF_MO, RPM_FPF_MI, RPM_FPF_AU, RPM_FPF_AO, RPM_FPF_AI,
	RPM_FPF_NFIELDS
};

/* ---- pure functions (src/tests/test_paragon.c) ---- */
/* FPE_FLTINV/DIV/OVF/UND/RES -> class; -1 for anything else (integer
 * division and overflow, FPE_FLTSUB, kill()). */
int rpm_fpe_class_of_code(int si_code);
/* The class of the MXCSR flags (bits 0..5) an instruction raised, in the
 * kernel's order of precedence (invalid, divide, overflow, underflow,
 * inexact); -1 if none of those. */
int rpm_fpe_class_of_flags(unsigned flags);
/* MXCSR flag bit of a class (its mask bit is this << 7). */
unsigned rpm_fpe_mxcsr_flag(enum rpm_fpe_class c);
/* "invalid,divbyzero,overflow,underflow,inexact" (any subset, any order) or
 * "all" -> bit set of classes; "0", "" or "none" -> 0.  -1 if malformed. */
int rpm_fpe_parse(const char *s, unsigned *classes);
/* The unit of the instruction at bytes[0..n) (SSE, AVX, AVX-512 encodings). */
enum rpm_fpe_unit rpm_fpe_unit_of(const uint8_t *bytes, unsigned n);
/* The rpmsoft fields from per-class, per-unit trap counts. */
void rpm_fpe_fields(const uint64_t counts[RPM_FPE_NCLASSES][RPM_FPE_NUNITS], uint64_t out[RPM_FPF_NFIELDS]);
/* The classes a field needs (0: none, i.e. rpms_ft: any). */
unsigned rpm_fpe_field_classes(enum rpm_fpe_field f);

/* ---- runtime ---- */
/* The classes the knob asks for (0: trap mode off); *why says why a field
 * cannot count (how to opt in, or the knob's error). */
unsigned rpm_fpe_classes(const char **why);
/* Unmask the knob's classes in the calling thread (nests); 0 or -errno. */
int rpm_fpe_thread_enable(void);
/* Undo one enable; at the last, mask again what we unmasked. */
void rpm_fpe_thread_disable(void);
/* The fields of OS CPU os since startup.  Async-signal-safe. */
void rpm_fpe_read(unsigned os, uint64_t out[RPM_FPF_NFIELDS]);

#endif
