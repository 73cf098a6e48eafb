/*
 * watch: count a thread's memory accesses and executed instructions by address.
 *
 * A session belongs to one thread (the one that starts it) and counts only that
 * thread's activity, the way a PAPI event set does.  Which addresses count is
 * decided by the caller (src/rangemap turns an Itanium request into a cover);
 * how the accesses are seen is the backend's business:
 *
 *   instrument  code built with the outline sanitizer hooks calls us on every
 *               access (watch_instrument.c), and with the block hooks at every
 *               basic block, which counts executed instructions (watch_blocks.c);
 *   breakpoint  x86 debug registers through perf_event_open (watch_breakpoint.c);
 *   pagetrap    protected pages, faults decoded with capstone and stepped
 *               (watch_pagetrap.c); it also counts instructions in code ranges
 *               by exec-faulting the code pages and single-stepping inside them;
 *   blocktrap   instructions in code ranges of code that was not instrumented,
 *               by an int3 at each basic block's leader (watch_blocktrap.c).
 *
 * Functions return 0 or a negative errno; where a message buffer is given it
 * says what was wrong in words a PAPI user can act on.
 */
#ifndef HERITAGE_WATCH_H
#define HERITAGE_WATCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#define WATCH_MAX_INTERVALS 4
#define WATCH_CODE_PAIRS 4
#define WATCH_ERRLEN 512

enum watch_backend {
	WATCH_BACKEND_AUTO = 0,
	WATCH_BACKEND_INSTRUMENT,
	WATCH_BACKEND_BREAKPOINT,
	WATCH_BACKEND_BLOCKTRAP,
	WATCH_BACKEND_PAGETRAP,
	WATCH_BACKEND_COUNT
};

/* Half-open: [start, end). */
struct watch_interval {
	uintptr_t start, end;
};

/* What a session counts. */
struct watch_request {
	/* Data accesses that overlap any of these intervals count.  With
	 * ndata == 0 and data_all set, every access counts (instrument only). */
	unsigned ndata;
	struct watch_interval data[WATCH_MAX_INTERVALS];
	int data_all;
	int want_data;
	/* Misaligned-access counts are wanted (the breakpoint backend cannot
	 * see access addresses, so it refuses these). */
	int want_misaligned;
	/* With want_data and ncode > 0: count only accesses made by
	 * instructions inside the code pairs (Itanium's IBR+DBR combination). */
	int data_by_code;

	/* Instructions whose address lies in code_pair[k] count in insns_pair[k]
	 * and in insns (once, however many pairs hold it). */
	unsigned ncode;
	struct watch_interval code_pair[WATCH_CODE_PAIRS];
	int want_code;
	/* 1 << enum watch_field of the fields whose overflow the backend must
	 * deliver (watch_session.ovf); a backend that cannot refuses in fits(). */
	unsigned overflow_fields;
	/* Every data access the backend sees, counted or not, is also handed
	 * to observe (itanium2's cache model, which must see the accesses
	 * outside the range too: they evict the range's lines), with counted
	 * = it counted in the fields above.  Only the outline instrument hooks
	 * see every access of the code they watch; the other backends (and
	 * the inline hooks, which report only accesses near the range) refuse
	 * in fits().  Called on the counting thread, in the hooks. */
	void (*observe)(void *arg, uintptr_t addr, size_t size, int store, uintptr_t pc, int counted);
	void *observe_arg;
};

/* fits() of a backend that sees only the watched range's accesses. */
#define WATCH_OBSERVE_REFUSAL                                                                          \
	"sees only the watched range's own accesses, and the cache model needs every access (the others " \
	"evict the range's lines): build the code with the outline instrument flags "                     \
	"(pkg-config --cflags papi-heritage-instrument or papi-heritage-instrument-clang)"

struct watch_counts {
	uint64_t loads, stores;
	uint64_t misaligned_loads, misaligned_stores;
	uint64_t insns;
	uint64_t insns_pair[WATCH_CODE_PAIRS];
};
/* The same counters by index, for readers that pick some of them. */
enum watch_field {
	WATCH_FIELD_LOADS,
	WATCH_FIELD_STORES,
	WATCH_FIELD_MISALIGNED_LOADS,
	WATCH_FIELD_MISALIGNED_STORES,
	WATCH_FIELD_INSNS,
	WATCH_FIELD_INSNS_PAIR0, /* + k for insns_pair[k] */
	WATCH_NFIELDS = WATCH_FIELD_INSNS_PAIR0 + WATCH_CODE_PAIRS
};
_Static_assert(sizeof(struct watch_counts) == WATCH_NFIELDS * sizeof(uint64_t), "watch_field indexes watch_counts");
static inline uint64_t watch_counts_field(const struct watch_counts *c, enum watch_field f)
{
	uint64_t v;
	memcpy(&v, (const char *)c + (size_t)f * sizeof v, sizeof v);
	return v;
}

/* Overflow delivered by the backend itself (PAPI_overflow on itanium2's
 * data-range events): every threshold[f] counts of field f the backend marks
 * the field pending, with the PC of the access that reached it, and sends
 * its own thread `signal`.  The backends keep async signals out until the
 * access is complete (the page-trap window closed), so the application's
 * handler runs after it, outside the backend, and may touch the watched
 * data (counted, like any access).  A field that comes due again before
 * the first delivery was taken is one delivery (a signal is not queued). */
struct watch_overflow {
	uint64_t threshold[WATCH_NFIELDS];  /* 0: that field does not overflow */
	uint64_t left[WATCH_NFIELDS];       /* counts to the next delivery */
	int signal;
	_Atomic uint32_t pending;           /* fields due, taken by watch_overflow_take */
	_Atomic uintptr_t pending_pc;       /* the access that made the last one due */
};

/* The fields a backend delivers overflow for: the data ones.  Instruction
 * counts come from single-stepping with signals held, so their overflow is
 * polled on a timer (the component's business). */
#define WATCH_OVERFLOW_DATA_FIELDS                                                                    \
	((1u << WATCH_FIELD_LOADS) | (1u << WATCH_FIELD_STORES) | (1u << WATCH_FIELD_MISALIGNED_LOADS) | \
	 (1u << WATCH_FIELD_MISALIGNED_STORES))

/* Arms o for the thresholds set (left = threshold, nothing pending). */
void watch_overflow_arm(struct watch_overflow *o);
/* In a backend's counting path (async-signal-safe): n more counts of field
 * f, made by the instruction at pc. */
void watch_overflow_note(struct watch_overflow *o, enum watch_field f, uint64_t n, uintptr_t pc);
/* The same for n accesses (n times one access) of one instruction: loads,
 * stores or both (a read-modify-write), and their misaligned fields. */
void watch_overflow_note_access(struct watch_overflow *o, int load, int store, int misaligned, uint64_t n,
                                uintptr_t pc);
/* The fields due since the last take (0: none) and the PC; clears them. */
uint32_t watch_overflow_take(struct watch_overflow *o, uintptr_t *pc);

struct watch_backend_ops;
/* One per PAPI event set; the caller owns the storage and zeroes it. */
struct watch_session {
	struct watch_request req;
	enum watch_backend backend;            /* resolved by watch_session_start */
	const struct watch_backend_ops *ops;
	struct watch_counts acc;               /* completed start..stop segments */
	int running;
	int bp_fd[8];                          /* breakpoint backend: perf fds */
	int nbp_fd;
	void *priv;                            /* backend scratch */
	/* Set with req.overflow_fields before start (NULL: no overflow). */
	struct watch_overflow *ovf;
};

struct watch_backend_ops {
	const char *name;
	/* 0 if this backend can count req exactly here, else -errno and why. */
	int (*fits)(const struct watch_request *req, char *why, size_t len);
	int (*start)(struct watch_session *s, char *why, size_t len);
	/* Fold live counts into s->acc and stop seeing accesses. */
	void (*stop)(struct watch_session *s);
	/* Counts since the last start (not including s->acc). Async-signal-safe. */
	void (*read)(const struct watch_session *s, struct watch_counts *live);
	/* Zero the live counts of a running session. */
	void (*reset)(struct watch_session *s);
	/* Optional: where the live counts of a running session are kept, when
	 * they can be read in place (PAPI_read then copies nothing); NULL when
	 * not, and read() is used. */
	const struct watch_counts *(*live)(const struct watch_session *s);
};

extern const struct watch_backend_ops watch_instrument_ops;
extern const struct watch_backend_ops watch_breakpoint_ops;
extern const struct watch_backend_ops watch_blocktrap_ops;
extern const struct watch_backend_ops watch_pagetrap_ops;

const char *watch_backend_name(enum watch_backend b);
struct heritage_backend;
/* The table itself (for listings of who needs which mechanism). */
const struct heritage_backend *watch_backend_table(unsigned *n);
int watch_backend_from_name(const char *name, enum watch_backend *out);

/* Pick the backend for req from the backend table (heritage_backend.h):
 * forced (not AUTO) must have working mechanisms and fit, else -ENOTSUP or
 * -EPERM with the probe's evidence; AUTO takes the first of instrument,
 * breakpoint, blocktrap, pagetrap whose mechanisms work and that fits. */
int watch_choose_backend(const struct watch_request *req, enum watch_backend forced,
                         enum watch_backend *out, char *why, size_t len);

int watch_session_start(struct watch_session *s, enum watch_backend forced, char *why, size_t len);
void watch_session_stop(struct watch_session *s);
/* out[i] = field[i] of acc + live: only those fields, each a 64-bit slot of
 * out (uint64_t or PAPI's long long).  On PAPI_read's path. */
void watch_session_read_fields(const struct watch_session *s, const unsigned char *field, unsigned n, void *out);
void watch_session_reset(struct watch_session *s);
/* Around moves of counts that a signal handler's read must not see half
 * done: every signal but the synchronous ones (SIGSEGV, SIGBUS, SIGILL,
 * SIGFPE, SIGTRAP) waits in this thread until the matching release.  They
 * nest; thread context only; safe on a watched stack. */
void watch_hold_async_signals(void);
void watch_release_async_signals(void);

/* 0 if some backend can count in this process (for init_component), else
 * -errno and why, from the probes. */
int watch_any_backend(char *why, size_t len);

/* The trap backends this machine and account keep out, for the
 * component's description ("" if none). */
void watch_limits(char *buf, size_t len);

/* True when the main executable was built with the instrument hooks. */
int watch_instrument_present(void);

/* Here, not in watch.c: the backends add their counts with it, and watch.c
 * (which names the backends) must not be imported back by them. */
static inline void watch_counts_add(struct watch_counts *to, const struct watch_counts *from)
{
	to->loads += from->loads;
	to->stores += from->stores;
	to->misaligned_loads += from->misaligned_loads;
	to->misaligned_stores += from->misaligned_stores;
	to->insns += from->insns;
	for (int k = 0; k < WATCH_CODE_PAIRS; k++)
		to->insns_pair[k] += from->insns_pair[k];
}

#endif
