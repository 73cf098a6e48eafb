#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "paragon/rpm_fpe.h"
#include "paragon/rpm_model.h"
#include "watch/watch_step.h"

#define MXCSR_FLAGS 0x3fu
#define MXCSR_MASKS (0x3fu << 7)

/* ---- pure functions ------------------------------------------------------- */

int rpm_fpe_class_of_code(int si_code)
{
	switch (si_code) {
	case FPE_FLTINV: return RPM_FPE_INV;
	case FPE_FLTDIV: return RPM_FPE_DIV;
	case FPE_FLTOVF: return RPM_FPE_OVF;
	case FPE_FLTUND: return RPM_FPE_UND;
	case FPE_FLTRES: return RPM_FPE_RES;
	default: return -1;
	}
}

static const unsigned flag_of[RPM_FPE_NCLASSES] = { 0x01, 0x04, 0x08, 0x10, 0x20 };

unsigned rpm_fpe_mxcsr_flag(enum rpm_fpe_class c)
{
	return (unsigned)c < RPM_FPE_NCLASSES ? flag_of[c] : 0;
}

int rpm_fpe_class_of_flags(unsigned flags)
{
	/* The precedence of the kernel's fpu__exception_code(), so a trap is
	 * classed as the si_code the kernel gave it. */
	for (int c = 0; c < RPM_FPE_NCLASSES; c++)
		if (flags & flag_of[c])
			return c;
	return -1;
}

int rpm_fpe_parse(const char *s, unsigned *classes)
{
	static const char *const names[RPM_FPE_NCLASSES] = { "invalid", "divbyzero", "overflow", "underflow", "inexact" };
	*classes = 0;
	if (!s || !*s || strcmp(s, "0") == 0 || strcmp(s, "none") == 0)
		return 0;
	if (strcmp(s, "all") == 0) {
		*classes = (1u << RPM_FPE_NCLASSES) - 1;
		return 0;
	}
	while (*s) {
		size_t len = strcspn(s, ",");
		int found = 0;
		for (int c = 0; c < RPM_FPE_NCLASSES; c++)
			if (strlen(names[c]) == len && strncmp(s, names[c], len) == 0)
				*classes |= 1u << c, found = 1;
		if (!found) {
			*classes = 0;
			return -1;
		}
		s += len;
		if (*s == ',' && *++s == '\0') {
			*classes = 0;
			return -1;
		}
	}
	return 0;
}

enum rpm_fpe_unit rpm_fpe_unit_of(const uint8_t *b, unsigned n)
{
	unsigned i = 0, map = 0, op = 0;
	while (i < n && (b[i] == 0x66 || b[i] == 0x67 || b[i] == 0xf2 || b[i] == 0xf3 || b[i] == 0x2e ||
	                 b[i] == 0x36 || b[i] == 0x3e || b[i] == 0x26 || b[i] == 0x64 || b[i] == 0x65 ||
	                 b[i] == 0xf0))
		i++;
	if (i < n && (b[i] & 0xf0) == 0x40)
		i++; /* REX */
	if (i + 2 < n && b[i] == 0xc5)
		map = 1, op = b[i + 2];
	else if (i + 3 < n && b[i] == 0xc4)
		map = b[i + 1] & 0x1f, op = b[i + 3];
	else if (i + 4 < n && b[i] == 0x62)
		map = b[i + 1] & 0x07, op = b[i + 4];
	else if (i + 1 < n && b[i] == 0x0f) {
		if (i + 2 < n && (b[i + 1] == 0x38 || b[i + 1] == 0x3a))
			map = b[i + 1] == 0x38 ? 2 : 3, op = b[i + 2];
		else
			map = 1, op = b[i + 1];
	}
	/* mul (0F 59), div (0F 5E): the i860 divides by reciprocal and
	 * Newton-Raphson steps on the multiplier; FMA (0F38 96..BF). */
	if ((map == 1 && (op == 0x59 || op == 0x5e)) || (map == 2 && op >= 0x96 && op <= 0xbf))
		return RPM_FPE_MULT;
	return RPM_FPE_ADDER;
}

void rpm_fpe_fields(const uint64_t k[RPM_FPE_NCLASSES][RPM_FPE_NUNITS], uint64_t out[RPM_FPF_NFIELDS])
{
	memset(out, 0, RPM_FPF_NFIELDS * sizeof out[0]);
	for (int c = 0; c < RPM_FPE_NCLASSES; c++)
		out[RPM_FPF_FT] += k[c][RPM_FPE_ADDER] + k[c][RPM_FPE_MULT];
	/* Source exception: a bad operand (invalid) or, as the i860's frcp of
	 * 0 does, a division by zero. */
	out[RPM_FPF_SE] = k[RPM_FPE_INV][0] + k[RPM_FPE_INV][1] + k[RPM_FPE_DIV][0] + k[RPM_FPE_DIV][1];
	out[RPM_FPF_SI] = k[RPM_FPE_RES][0] + k[RPM_FPE_RES][1];
	out[RPM_FPF_MU] = k[RPM_FPE_UND][RPM_FPE_MULT];
	out[RPM_FPF_MO] = k[RPM_FPE_OVF][RPM_FPE_MULT];
	out[RPM_FPF_MI] = k[RPM_FPE_RES][RPM_FPE_MULT];
	out[RPM_FPF_AU] = k[RPM_FPE_UND][RPM_FPE_ADDER];
	out[RPM_FPF_AO] = k[RPM_FPE_OVF][RPM_FPE_ADDER];
	out[RPM_FPF_AI] = k[RPM_FPE_RES][RPM_FPE_ADDER];
}

unsigned rpm_fpe_field_classes(enum rpm_fpe_field f)
{
	switch (f) {
	case RPM_FPF_SE: return 1u << RPM_FPE_INV | 1u << RPM_FPE_DIV;
	case RPM_FPF_SI: case RPM_FPF_MI: case RPM_FPF_AI: return 1u << RPM_FPE_RES;
	case RPM_FPF_MU: case RPM_FPF_AU: return 1u << RPM_FPE_UND;
	case RPM_FPF_MO: case RPM_FPF_AO: return 1u << RPM_FPE_OVF;
	default: return 0;
	}
}

/* ---- runtime -------------------------------------------------------------- */

static struct {
	unsigned classes;
	char why[256];
	_Atomic int ever_enabled;
	_Atomic uint64_t counts[RPM_MAX_CPUS][RPM_FPE_NCLASSES][RPM_FPE_NUNITS];
} T;
static pthread_once_t knob_once = PTHREAD_ONCE_INIT;

static void knob_init(void)
{
	const char *v = heritage_env("PARAGON_RPM", "FPE_TRAPS");
	if (rpm_fpe_parse(v, &T.classes) != 0)
		snprintf(T.why, sizeof T.why,
		         "PAPI_HERITAGE_PARAGON_RPM_FPE_TRAPS=\"%s\" is not a list of invalid,divbyzero,overflow,underflow,inexact or \"all\"",
		         v);
	else if (!T.classes)
		snprintf(T.why, sizeof T.why,
		         "the FP trap mode is off: set PAPI_HERITAGE_PARAGON_RPM_FPE_TRAPS=invalid,divbyzero,overflow,underflow,inexact (or \"all\", or a subset) to count SIGFPEs");
}

unsigned rpm_fpe_classes(const char **why)
{
	pthread_once(&knob_once, knob_init);
	if (why)
		*why = T.why;
	return T.classes;
}

/* Per thread: how many enables are open, the mask bits we cleared, whether
 * the thread ever used us (a thread created by a trapping thread inherits its
 * MXCSR without having called us: its traps are ours too), and the trap in
 * flight between the SIGFPE and its step trap. */
static __thread struct {
	int depth;
	int touched;
	unsigned cleared;
	struct {
		uint32_t mxcsr;      /* at the fault */
		int cls;             /* from si_code, if the step shows no flag */
		unsigned cpu;
		enum rpm_fpe_unit unit;
	} f;
} me __attribute__((tls_model("initial-exec")));

static uint32_t get_mxcsr(void)
{
	uint32_t v;
	__asm__ volatile("stmxcsr %0" : "=m"(v));
	return v;
}

static void set_mxcsr(uint32_t v)
{
	__asm__ volatile("ldmxcsr %0" : : "m"(v));
}

static unsigned our_masks(void)
{
	unsigned m = 0;
	for (int c = 0; c < RPM_FPE_NCLASSES; c++)
		if (T.classes & (1u << c))
			m |= flag_of[c] << 7;
	return m;
}

/* The step trap: the instruction ran with our exceptions masked, so it
 * produced the IEEE default result.  Class it by the flags it raised, then
 * give MXCSR back its masks and its sticky flags (the old ones plus the new:
 * what the program would see with traps off). */
static void step_done(void *arg, ucontext_t *uc)
{
	(void)arg;
	if (!uc->uc_mcontext.fpregs)
		return;
	uint32_t after = uc->uc_mcontext.fpregs->mxcsr;
	unsigned raised = after & MXCSR_FLAGS;
	int cls = rpm_fpe_class_of_flags(raised & (our_masks() >> 7));
	if (cls < 0)
		cls = me.f.cls;
	if (me.f.cpu < RPM_MAX_CPUS)
		atomic_fetch_add_explicit(&T.counts[me.f.cpu][cls][me.f.unit], 1, memory_order_relaxed);
	uc->uc_mcontext.fpregs->mxcsr = (after & ~(MXCSR_FLAGS | MXCSR_MASKS)) | (me.f.mxcsr & (MXCSR_FLAGS | MXCSR_MASKS)) | raised;
}

static int not_ours(ucontext_t *uc)
{
	/* The kernel runs handlers with a fresh MXCSR (all masked): if the
	 * application's handler leaves by siglongjmp, the thread would stop
	 * trapping.  Give the handler the interrupted MXCSR instead (a normal
	 * return restores it from the context anyway). */
	if (me.depth > 0 && uc->uc_mcontext.fpregs)
		set_mxcsr(uc->uc_mcontext.fpregs->mxcsr);
	return 0;
}

static int on_fpe(int sig, siginfo_t *si, ucontext_t *uc)
{
	(void)sig;
	int cls = rpm_fpe_class_of_code(si->si_code);
	if (cls < 0 || !(T.classes & (1u << cls)) || !uc->uc_mcontext.fpregs)
		return not_ours(uc);
	/* Ours only if this thread traps because of us (or inherited that). */
	if (me.touched ? me.depth == 0 : !atomic_load(&T.ever_enabled))
		return not_ours(uc);
	uint32_t mx = uc->uc_mcontext.fpregs->mxcsr;
	unsigned ours = our_masks();
	/* An SSE trap of a class we unmasked (an x87 trap leaves no unmasked
	 * SSE flag of ours: x87 is never unmasked here). */
	if (!((mx & MXCSR_FLAGS) & ~(mx >> 7) & (ours >> 7)))
		return not_ours(uc);
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	uint8_t insn[15];
	unsigned n = (unsigned)(4096 - (pc & 4095));
	if (n > sizeof insn)
		n = sizeof insn;
	memcpy(insn, (const void *)pc, n); /* it just faulted there: mapped, readable */
	int cpu = sched_getcpu();
	me.f.mxcsr = mx;
	me.f.cls = cls;
	me.f.cpu = cpu < 0 ? 0 : (unsigned)cpu;
	me.f.unit = rpm_fpe_unit_of(insn, n);
	/* Re-run it with our exceptions masked and no stale flags, so the step
	 * shows exactly what it raised. */
	uc->uc_mcontext.fpregs->mxcsr = (mx & ~MXCSR_FLAGS) | ours;
	if (watch_step_one(uc, step_done, NULL) != 0) {
		/* Cannot step (cannot happen: a fault handler runs to completion):
		 * count it and leave this thread's traps masked rather than loop. */
		atomic_fetch_add_explicit(&T.counts[me.f.cpu][cls][me.f.unit], 1, memory_order_relaxed);
		uc->uc_mcontext.fpregs->mxcsr = mx | ours;
	}
	return 1;
}

int rpm_fpe_thread_enable(void)
{
	char why[256];
	if (!rpm_fpe_classes(NULL))
		return heritage_fail(-ENOTSUP, "paragon_rpm: %s", T.why);
	int err = watch_signal_claim(SIGFPE, on_fpe, why, sizeof why);
	if (err)
		return heritage_fail(err, "paragon_rpm: FP trap mode: %s", why);
	me.touched = 1;
	if (me.depth++ == 0) {
		uint32_t mx = get_mxcsr();
		me.cleared = mx & our_masks();
		atomic_store(&T.ever_enabled, 1);
		set_mxcsr(mx & ~our_masks());
	}
	return 0;
}

void rpm_fpe_thread_disable(void)
{
	if (me.depth <= 0 || --me.depth > 0)
		return;
	set_mxcsr(get_mxcsr() | me.cleared);
	me.cleared = 0;
}

void rpm_fpe_read(unsigned os, uint64_t out[RPM_FPF_NFIELDS])
{
	uint64_t k[RPM_FPE_NCLASSES][RPM_FPE_NUNITS];
	for (int c = 0; c < RPM_FPE_NCLASSES; c++)
		for (int u = 0; u < RPM_FPE_NUNITS; u++)
			k[c][u] = os < RPM_MAX_CPUS ? atomic_load_explicit(&T.counts[os][c][u], memory_order_relaxed) : 0;
	rpm_fpe_fields(k, out);
}
