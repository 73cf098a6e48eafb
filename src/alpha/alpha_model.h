/*
 * The emulated 21064 performance monitor: what the two counters do with the
 * events fed to them, the interrupts they raise, what an OS can know, and the
 * interrupt frames the three operating systems built.  Pure functions on
 * caller-owned state, so the rules are unit-tested without any stepping.
 *
 * Semantics (Alpha Architecture Handbook E.2.1, doc/facilities.md 2(a)):
 *  - a counter counts its selected event and raises an interrupt each time it
 *    has counted another 2^width events;
 *  - it cannot be read, written or reset: whatever it held when monitoring
 *    stopped is still in it when monitoring starts again (the seed's
 *    "rounding error");
 *  - if both counters overflow on the same instruction, two interrupts.
 */
#ifndef HERITAGE_ALPHA_MODEL_H
#define HERITAGE_ALPHA_MODEL_H

#include <stdint.h>

#include "alpha/alpha_events.h"

/* One emulated 21064 (per monitored thread: the software backend sees one
 * thread's instructions, not the processor's).  Zero it to power it on. */
struct alpha_cpu {
	/* The counters' hidden contents: counter 0 is 16 bits, counter 1 12 bits
	 * wide (the longest period each can select); an interrupt is a carry out
	 * of bit `width`. */
	uint32_t ctr[ALPHA_NCOUNTERS];
	/* ISSUES counts pairs: an odd instruction waits here for its partner. */
	unsigned issue_half;
};

/* What an event set selected: per counter, an event (or none) and a width. */
struct alpha_select {
	int used[ALPHA_NCOUNTERS];
	enum alpha_feed feed[ALPHA_NCOUNTERS];
	unsigned width[ALPHA_NCOUNTERS];
};

/* Class bits of one executed instruction, Alpha's view (alpha_classify). */
#define ALPHA_INSN_LOAD 0x01u
#define ALPHA_INSN_STORE 0x02u
#define ALPHA_INSN_BRANCH 0x04u
#define ALPHA_INSN_FP 0x08u
#define ALPHA_INSN_INTOP 0x10u

/* Build a selection from up to `n` event codes.  At most one event per
 * counter: a second is -EBUSY ("conflict"); an event with no honest source
 * here is -ENOTSUP (unless allow_unavailable, for the hardware backend).
 * pos[i] gets the counter each code was placed on.  Messages via
 * heritage_last_error(). */
int alpha_select_events(struct alpha_select *sel, const unsigned *codes, unsigned n, int allow_unavailable,
                        unsigned *pos);

/* Add n events to counter c; returns how many interrupts that raised. */
unsigned alpha_counter_add(struct alpha_cpu *cpu, unsigned c, unsigned width, uint64_t n);

/* One executed instruction of class bits `cls`, and `cycles` cycles elapsed
 * since the previous call: overflows[c] gets the interrupts each counter
 * raised (0 for an unused counter). */
void alpha_cpu_step(struct alpha_cpu *cpu, const struct alpha_select *sel, unsigned cls, uint64_t cycles,
                    unsigned overflows[ALPHA_NCOUNTERS]);

/* What PAPI_read reports: interrupts x 2^width.  The true count c since
 * start lies in (value - 2^width, value + 2^width): see alpha21064(3). */
int64_t alpha_estimate(uint64_t interrupts, unsigned width);

/* A PAPI_overflow threshold: a positive multiple of 2^width.  Returns the
 * number of interrupts per handler call, or -EINVAL with a message. */
int64_t alpha_threshold_interrupts(long long threshold, unsigned width, const char *event);

/* Nominal clock of the modelled CYCLES, in Hz (200 MHz, the 21064-AA;
 * PAPI_HERITAGE_ALPHA21064_CLOCK_MHZ overrides it). */
#define ALPHA_NOMINAL_HZ 200000000ull
uint64_t alpha_cycles_from_ns(uint64_t ns, uint64_t hz);

/* ---- interrupt frames ---------------------------------------------------- */

enum alpha_os {
	ALPHA_OS_UNIX = 1, /* DIGITAL UNIX (OSF/1): entINT, IPL 6, a0 = 4, a1 = 0x650, a2 = counter */
	ALPHA_OS_VMS = 2,  /* OpenVMS: exception through SCB + 0x650, IPL 29, R4 = counter */
	ALPHA_OS_NT = 3,   /* Windows NT: kernel-stack frame to the interrupt entry; no registers documented */
};

#define ALPHA_SCB_PERFMON 0x650 /* HWSCB$Q_PERF_MONITOR / scb$v_perfmon */
#define ALPHA_OSFINT_PERF 4     /* osfint$c_perf */
#define ALPHA_FRAME_UNDEFINED (-1)

struct alpha_frame {
	enum alpha_os os;
	unsigned counter;
	uint64_t pc;      /* the old PC saved in the frame */
	long vector;      /* SCB offset the OS is entered through (NT: undefined) */
	int ipl;          /* interrupt priority level (NT: undefined) */
	int exception;    /* VMS dispatches it as an exception, the others as an interrupt */
	long r4;          /* VMS: the counter; others undefined */
	long a0, a1, a2;  /* DIGITAL UNIX: 4, 0x650, counter; others undefined */
};

void alpha_frame_build(enum alpha_os os, unsigned counter, uint64_t pc, struct alpha_frame *f);
/* "unix", "osf", "digital-unix", "vms", "openvms", "nt", "windows-nt"; 0 or -EINVAL. */
int alpha_os_parse(const char *name, enum alpha_os *os);
const char *alpha_os_name(enum alpha_os os);

#endif
