/*
 * <i860paragon/rpm.h> - the Intel Paragon RPM hardware counters and the Mach
 * RPM soft counters, as the RPM(4) man page describes them, on x86-64 Linux
 * (papi-heritage, libpapi).  See paragon_rpm(3) for where every value comes
 * from here.
 *
 * As on the Paragon, both structures are mapped read-only at fixed virtual
 * addresses; legacy code reads them with plain loads:
 *
 *     struct rpm *rpm = (struct rpm *) RPM_BASE_VADDR;
 *     rpm_timer_t t = rpm->rpm_time;
 *
 * Every translation unit that includes this header maps them before main()
 * (a constructor below), so a program needs nothing else.  A load from the
 * pages traps to libpapi, which fills in the current values and lets the load
 * complete (a page fault and a single-step trap per load: paragon_rpm(3),
 * "Cost"); a store to them raises SIGSEGV.
 */
#ifndef I860PARAGON_RPM_H
#define I860PARAGON_RPM_H

#ifdef __cplusplus
extern "C" {
#endif

/* The 56-bit global clock as the Paragon kept it: the raw count in the bits
 * of a double (the man page's dclock() example copies it into a double and
 * rewrites the exponent), and rpms_idle, a real double in seconds. */
typedef double rpm_timer_t;

/* Free on x86-64 Linux: far below PIE executables and their heap
 * (0x555555554000 plus up to 1 TiB of randomisation), far above non-PIE
 * executables (0x400000) and below the top-down mmap area (0x7f...).  "RPM"
 * in ASCII is 0x52 0x50 0x4d. */
#define RPM_BASE_VADDR (0x52504d000000UL)
#define RPMSOFT_BASE_VADDR (0x52504d100000UL)
/* Spelled exactly as the man page's example spells it, so that the example's
 * own #define is a valid redefinition. */
#define RPM_CLOCK_FREQ (10000000)

/* rpm_control value that zeroes every counter but rpm_time (writable alias only). */
#define RPM_CONTROL_RESET 0xFFFF0000u

struct rpm {
	volatile unsigned int rpm_control; /* write 0xFFFF0000 (writable alias) to reset */
	unsigned int rpm_reserved0;        /* keeps rpm_time 8-byte aligned */
	volatile rpm_timer_t rpm_time;     /* 10 MHz, 56 bits, raw count in the double's bits */
	volatile unsigned int rpm_cpu0;    /* 50 MHz bus cycles CPU 0 is (default) bus master */
	volatile unsigned int rpm_cpu1;    /* ... CPU 1 (message co-processor) */
	volatile unsigned int rpm_ltu;     /* ... the line transfer unit (mesh DMA) */
	volatile unsigned int rpm_exp;     /* ... the expansion card */
	volatile unsigned int rpm_north;   /* 64-byte units leaving this router northwards */
	volatile unsigned int rpm_south;
	volatile unsigned int rpm_east;
	volatile unsigned int rpm_west;
};

struct rpmsoft {
	volatile rpm_timer_t rpms_idle; /* seconds this CPU has been idle */
	/* large grain trap handler statistics */
	volatile unsigned int rpms_alltraps;
	volatile unsigned int rpms_it;
	volatile unsigned int rpms_int;
	volatile unsigned int rpms_iat;
	volatile unsigned int rpms_dat;
	volatile unsigned int rpms_ft;
	/* data access trap statistics */
	volatile unsigned int rpms_datld;
	volatile unsigned int rpms_datst;
	volatile unsigned int rpms_datfldfst;
	volatile unsigned int rpms_datpst;
	volatile unsigned int rpms_datpfld;
	volatile unsigned int rpms_datauto;
	/* data access page fault statistics */
	volatile unsigned int rpms_notdirty;
	volatile unsigned int rpms_notref;
	volatile unsigned int rpms_notwr;
	volatile unsigned int rpms_pdenotu;
	volatile unsigned int rpms_ptenotu;
	volatile unsigned int rpms_pdenotp;
	volatile unsigned int rpms_ptenotp;
	/* locked sequence related trap statistics */
	volatile unsigned int rpms_lockseq;
	volatile unsigned int rpms_lockres;
	volatile unsigned int rpms_lockexp;
	/* floating-point exception statistics */
	volatile unsigned int rpms_fpe_si;
	volatile unsigned int rpms_fpe_se;
	volatile unsigned int rpms_fpe_mu;
	volatile unsigned int rpms_fpe_mo;
	volatile unsigned int rpms_fpe_mi;
	volatile unsigned int rpms_fpe_ma;
	volatile unsigned int rpms_fpe_au;
	volatile unsigned int rpms_fpe_ao;
	volatile unsigned int rpms_fpe_ai;
	volatile unsigned int rpms_fpe_aa;
};

/* NX dclock(): seconds since boot from the same clock as rpm_time, bit for
 * bit what the man page's exponent trick gives for the same count. */
double dclock(void);

/* Maps the two structures at their fixed addresses (idempotent; the
 * constructor below calls it).  0, or -1 with errno set. */
int rpm_map(void);

/* The host_info() analogue: how many rpmsoft entries there are (one per
 * CPU, in hwloc's logical PU order). */
int rpm_num_cpus(void);

/* The man page's authentication (open the NORMA device rpm0, obtain its pager
 * port, map it) in one call: for root or CAP_SYS_ADMIN, a writable alias of
 * struct rpm whose rpm_control accepts RPM_CONTROL_RESET.  Anyone else gets
 * NULL with errno EPERM, and nothing changes; device must be "rpm0" (ENODEV
 * otherwise).  rpm_last_error() says what was wrong. */
struct rpm *rpm_map_writable(const char *device);
const char *rpm_last_error(void);

/* The virtual mesh (paragon_rpm(3), "Mesh"): join as a node (-1: the first
 * free one), account a message on every router of its route. */
int rpm_mesh_join(int node);
int rpm_mesh_leave(void);
int rpm_mesh_send(int dst_node, unsigned long bytes);

/* Pulls this file's mapping code into statically linked programs and maps
 * the pages before main(), as the Paragon's kernel did for every task that
 * uses them.  Not in libpapi itself (RPM_NO_STARTUP_MAP): a program that
 * never includes this header gets no fixed mapping and no handlers. */
#ifndef RPM_NO_STARTUP_MAP
static __attribute__((constructor, used)) void rpm_map_at_startup_(void)
{
	(void)rpm_map();
}
#endif

#ifdef __cplusplus
}
#endif

#endif
