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
 * return only the code (PAPI_EINVAL, PAPI_ECNFLCT, ...).  A PAPI call that a
 * heritage component then serves successfully clears it. */
const char *papi_heritage_last_error(void);

/* The PAPI_HERITAGE_* variables are read once, when PAPI_library_init
 * initialises the components: a setenv() afterwards changes nothing until
 * the program asks for it here (or calls PAPI_shutdown and
 * PAPI_library_init).  Call it between runs, with no event set running:
 * sets added before keep what they chose.  PAPI_OK, or PAPI_EINVAL with
 * papi_heritage_last_error() naming the first unknown or invalid variable,
 * and then nothing of the environment is taken.  papi-heritage(7). */
int papi_heritage_env_reread(void);

/* Where an event's value comes from on the running machine (doc/architecture.md). */
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

/* What the Itanium 2 Data EAR captured at the last overflow of a
 * DATA_EAR_CACHE_* or DATA_EAR_TLB_* event of EventSet (PAPI_overflow):
 * the load's PC and data address and the latency the cache model gave it.
 * Modelled, as every value of those events is (itanium2(3), DATA EAR). */
struct papi_heritage_dear_record {
	unsigned long long pc;           /* the load's instruction */
	unsigned long long data_address; /* its data address */
	unsigned latency;                /* modelled cycles */
	int level;                       /* that served it: 1 L1D, 2 L2, 3 L3, 4 memory */
	int tlb;                         /* its translation: 1 L1 DTLB, 2 L2 DTLB, 3 page walker, 0 not modelled */
	int event_index;                 /* the event's index in EventSet (PAPI_list_events order) */
};
/* PAPI_OK; PAPI_ENOEVST, PAPI_ENOCMP (not an itanium2 set), or
 * PAPI_ENOEVNT if no D-EAR overflow has been delivered yet. */
int papi_heritage_itanium2_dear_last(int EventSet, struct papi_heritage_dear_record *record);

/* The mechanisms the components rely on (debug registers, single-step,
 * page traps, perf events, tracepoints, the core PMU, libpfm4, IBS, ...),
 * each probed once per process when first needed or asked for: it works
 * (it counted a known workload exactly), is dead (accepted, counted wrong:
 * the evidence says what it saw), or is absent (not there, or refused to
 * this account: then refused is set and allowed_by says what would allow
 * it).  PAPI_HERITAGE_PROBE_DISABLE=name,... makes mechanisms absent on
 * purpose (a testing aid).  papi_heritage_avail --mechanisms prints them. */
#define PAPI_HERITAGE_MECH_WORKS 1
#define PAPI_HERITAGE_MECH_DEAD 2
#define PAPI_HERITAGE_MECH_ABSENT 3

struct papi_heritage_mechanism {
	char name[32];                 /* "breakpoint", "single_step", ... */
	char what[160];                /* what it is */
	int state;                     /* PAPI_HERITAGE_MECH_* */
	int refused;                   /* absent because this account may not use it */
	int disabled;                  /* made absent by PAPI_HERITAGE_PROBE_DISABLE */
	int error;                     /* what using it gives: PAPI_OK, PAPI_ENOSUPP or PAPI_EPERM */
	char evidence[320];            /* one line: what the probe saw */
	char allowed_by[200];          /* refused: what would allow it */
	char used_by[512];             /* the backends and events that need it */
	unsigned long long probe_ns;   /* what probing it cost */
};

/* How many mechanisms there are; index 0 .. n-1 of papi_heritage_mechanism. */
int papi_heritage_num_mechanisms(void);
/* Probe mechanism `index` (once per process) and describe it.  PAPI_OK or
 * PAPI_EINVAL (no such index). */
int papi_heritage_mechanism(int index, struct papi_heritage_mechanism *m);
/* The index of the mechanism called name, or PAPI_ENOEVNT. */
int papi_heritage_mechanism_index(const char *name);
/* Names in PAPI_HERITAGE_PROBE_DISABLE that are no mechanism ("" if all
 * are known). */
const char *papi_heritage_probe_disable_unknown(void);

/* Can backend (e.g. "breakpoint") of component ("itanium2", "alpha21064")
 * count here, for this account?  PAPI_OK; PAPI_ENOSUPP (a mechanism it
 * needs is dead or absent) or PAPI_EPERM (refused to this account), with
 * why; PAPI_EINVAL for an unknown component or backend.  The same answer a
 * forced PAPI_HERITAGE_<COMPONENT>_BACKEND gets: tests ask it to skip with
 * the reason rather than fail or, worse, pass on a dead mechanism. */
int papi_heritage_backend_usable(const char *component, const char *backend, char *why, int len);

/* alpha21064: the interrupt frame of the counter interrupt being delivered,
 * as the operating system chosen for the process received it (alpha21064(3)):
 *   PAPI_HERITAGE_ALPHA_OS_UNIX  DIGITAL UNIX: entINT, IPL 6, a0 = 4 (osfint$c_perf),
 *                                a1 = 0x650 (scb$v_perfmon), a2 = counter
 *   PAPI_HERITAGE_ALPHA_OS_VMS   OpenVMS: an exception through SCB + 0x650
 *                                (HWSCB$Q_PERF_MONITOR), IPL 29, R4 = counter
 *   PAPI_HERITAGE_ALPHA_OS_NT    Windows NT: a kernel-stack frame to the interrupt
 *                                entry; no register values are documented
 * Fields an OS does not define are -1.  pc is the old PC saved in the frame. */
#define PAPI_HERITAGE_ALPHA_OS_UNIX 1
#define PAPI_HERITAGE_ALPHA_OS_VMS 2
#define PAPI_HERITAGE_ALPHA_OS_NT 3

struct papi_heritage_alpha21064_frame {
	int os;               /* PAPI_HERITAGE_ALPHA_OS_* */
	int counter;          /* 0 or 1 */
	unsigned long long pc;
	long vector;          /* SCB offset (0x650), -1 for NT */
	int ipl;              /* 29 (VMS), 6 (UNIX), -1 (NT) */
	int exception;        /* 1: dispatched as an exception (VMS) */
	long r4;              /* VMS */
	long a0, a1, a2;      /* DIGITAL UNIX */
};

/* Per process; the default is PAPI_HERITAGE_ALPHA21064_OS (unix, vms, nt) or
 * unix.  PAPI_OK or PAPI_EINVAL. */
int papi_heritage_alpha21064_set_os(int os);
int papi_heritage_alpha21064_get_os(void);
/* Inside a PAPI_overflow handler of an alpha21064 event set: the frame of
 * the interrupt being handled.  PAPI_EINVAL elsewhere. */
int papi_heritage_alpha21064_frame(struct papi_heritage_alpha21064_frame *frame);

/* The backend an alpha21064 event set counts with, chosen when its events
 * are added (PAPI_HERITAGE_ALPHA21064_BACKEND=auto|software|pmu): "pmu"
 * (core-PMU sampling through perf_event), "software" (single-stepping), or
 * "none" while the set is empty.  Returns PAPI_OK, PAPI_ENOEVST or
 * PAPI_ENOCMP (not an alpha21064 set). */
int papi_heritage_alpha21064_backend(int EventSet, char *name, int len);

/* What delivering counter interrupts has cost, process-wide since libpapi was
 * loaded: a debugging and benchmarking aid.  Each delivery that reaches
 * PAPI (a handler or PAPI_profil armed on that counter, threshold reached) is
 * timed with the time-stamp counter around the frame build and the call to
 * PAPI's overflow dispatch, which runs the user's handler; interrupts only
 * counted for PAPI_read are not.  Ticks are rdtsc ticks: the caller converts
 * (the TSC rate is not the CPU clock on every machine).  The step that made
 * the interrupt, already paid, is not included. */
struct papi_heritage_alpha21064_stats {
	unsigned long long deliveries;      /* dispatches timed */
	unsigned long long delivery_ticks;  /* their total duration */
	unsigned long long min_ticks;       /* the shortest (0 if none) */
	unsigned long long last_ticks;      /* the latest completed one */
	unsigned long long steps;           /* instructions single-stepped, all threads */
};
int papi_heritage_alpha21064_stats(struct papi_heritage_alpha21064_stats *stats);

/* How a profileme event set samples (profileme(3)): its backend ("ibs",
 * "soft"), the period in effect (the backend may round what
 * PAPI_HERITAGE_PROFILEME_PERIOD asked: soft to the kernel's timer tick, ibs
 * to a multiple of 16) and its unit ("ns" of the thread's CPU time, or
 * "ops"), so that value / period is the number of samples behind a value;
 * samples handed over and lost (a ring was full) since PAPI_start.  The
 * period is known once events are added.  Returns PAPI_OK, PAPI_ENOEVST or
 * PAPI_ENOCMP (not a profileme set). */
struct papi_heritage_profileme_sampling {
	char backend[16];
	char unit[8];
	long long period;
	long long samples;
	long long lost;
};
int papi_heritage_profileme_sampling(int EventSet, struct papi_heritage_profileme_sampling *s);

/* paragon_rpm's router counters from a source other than the host's
 * /dev/shm mesh: libpapi-heritage-mpi registers its MPI window here at
 * MPI_Init, so that rpm_north .. rpm_west read on a rank give that rank's
 * router on the job's mesh (papi-heritage-mpi(7)).  read() fills the bytes
 * that have left router `node` towards north, south, east and west since the
 * job began (cumulative, never reset); may_block is 0 when it is called from
 * a signal handler (struct rpm's page), where it must not call MPI and gives
 * its last values.  It returns 0, or -1 when it cannot read (then zeros).
 * The struct must stay valid while registered; NULL goes back to the
 * /dev/shm mesh.  Returns PAPI_OK. */
struct papi_heritage_mesh_source {
	const char *name;         /* shown in messages, e.g. "MPI window" */
	int node;                 /* this process's router */
	unsigned rows, cols;
	int (*read)(void *arg, unsigned node, unsigned long long bytes[4], int may_block);
	void *arg;
};
int papi_heritage_rpm_mesh_source(const struct papi_heritage_mesh_source *src);

#ifdef __cplusplus
}
#endif

#endif
