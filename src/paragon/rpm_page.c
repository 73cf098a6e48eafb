/*
 * struct rpm and struct rpmsoft at their fixed addresses, kept current on
 * every load.
 *
 * Mechanism.  Each structure lives in a memfd mapped twice: a private
 * writable view we fill, and the legacy view at RPM_BASE_VADDR /
 * RPMSOFT_BASE_VADDR, which is PROT_NONE.  A load from the legacy view
 * faults; the SIGSEGV handler writes the current values through the private
 * view, makes the legacy view readable, and returns with the trap flag set,
 * so the load runs once and the SIGTRAP after it closes the view again.  So
 * every load sees values computed a few microseconds before it (a page kept
 * current by a thread or a timer could not promise 100 us, let alone "never
 * stale", without spinning a CPU).  The price is a page fault and a debug
 * trap per load: about 20 us on the VM this was built on (bench/rpm_bench),
 * against ~25 ns for dclock() or PAPI_read of paragon_rpm:::rpm_time.
 *
 * Several threads: an open count per view (the last to finish its step
 * closes it), a spin lock around refresh + mprotect, so values only move
 * forward.  While one thread's step is in flight, another thread may read the
 * open view without a fault and see values as old as that window (normally a
 * few us; longer only if the stepping thread is preempted inside it).
 *
 * A store to the legacy views is a write fault, not ours: it goes to the
 * application's SIGSEGV handler, or kills the process, as on the Paragon.
 * The writable alias (rpm_map_writable) is a third mapping of the rpm memfd,
 * trapped the same way but opened writable; after the stepped store the
 * SIGTRAP handler looks at rpm_control and performs the reset.
 *
 * The handlers are async-signal-safe: raw reads of /proc into static
 * buffers, no allocation, no stdio.  They are clients of the signal engine
 * (watch_signal.c), which keeps them ahead of the application's own
 * SIGSEGV and SIGTRAP handlers; faults and traps that are not ours go to
 * those, or to the default action.
 */
#define RPM_NO_STARTUP_MAP
#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "i860paragon/rpm.h"
#include "papi_heritage.h"
#include "paragon/rpm_clock.h"
#include "paragon/rpm_page.h"
#include "paragon/rpm_perf.h"
#include "watch/watch_signal.h"

#define PAGE 4096UL
#define TRAP_FLAG 0x100L
#define PF_WRITE 0x2UL
#define SAMPLE_BUF (256 * 1024)

enum view { VIEW_RPM, VIEW_SOFT, VIEW_ALIAS, NVIEWS };

static struct {
	int mapped;
	int map_err;
	uintptr_t start[NVIEWS];
	size_t len[NVIEWS];
	int open_count[NVIEWS];
	struct rpm *rpm_fill;          /* private writable view of the rpm memfd */
	struct rpmsoft *soft_fill;
	int rpm_fd;
	unsigned ncpus;
	unsigned pu_os[RPM_MAX_CPUS];  /* logical PU -> OS CPU number */
	long clk_tck;
	atomic_flag lock;
	/* The /proc sample, shared by the handlers and the component. */
	uint64_t sample_ns;
	struct rpm_host_sample sample;
	/* Per-CPU perf counts, read with the files: reading another CPU's
	 * event costs the kernel an IPI (tens of us on a VM). */
	uint64_t perf[RPM_MAX_CPUS][RPM_PERF_NCOUNTS];
	int perf_err;
	uint64_t perf_gen;
	char buf[SAMPLE_BUF];
	struct rpm_live live_scratch; /* too big for a signal stack */
} P = { .lock = ATOMIC_FLAG_INIT, .rpm_fd = -1 };

/* Which views this thread has opened for its in-flight step. */
static __thread unsigned stepping __attribute__((tls_model("initial-exec")));

static pthread_once_t map_once = PTHREAD_ONCE_INIT;
static pthread_once_t base_once = PTHREAD_ONCE_INIT;

static void lock(void)
{
	while (atomic_flag_test_and_set_explicit(&P.lock, memory_order_acquire))
		__builtin_ia32_pause();
}

static void unlock(void)
{
	atomic_flag_clear_explicit(&P.lock, memory_order_release);
}

static uint64_t boot_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

HERITAGE_PUBLIC double dclock(void)
{
	return rpm_ticks_to_seconds(rpm_now_ticks());
}

/* ---- sources -------------------------------------------------------------- */

/* Whole small file into P.buf, NUL-terminated; 0 or -1.  Signal-safe. */
static int slurp(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, P.buf + n, sizeof P.buf - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == sizeof P.buf - 1)
			break;
	}
	close(fd);
	P.buf[n] = '\0';
	return 0;
}

/* Under the lock.  The files change at tick granularity (4 ms at HZ=250),
 * so re-reading them more often than max_age buys nothing; the perf counts
 * are read with them so that one sample is one instant. */
static void sample_locked(uint64_t now, uint64_t max_age_ns)
{
	/* A new rpmd page (the daemon restarted) is a new sample at once. */
	if (P.sample_ns && now - P.sample_ns < max_age_ns && P.perf_gen == rpm_perf_generation())
		return;
	int saved = errno;
	if (slurp("/proc/stat") == 0)
		rpm_parse_stat(P.buf, &P.sample);
	if (slurp("/proc/interrupts") == 0)
		rpm_parse_interrupts(P.buf, &P.sample);
	if (slurp("/proc/net/dev") == 0)
		rpm_parse_netdev(P.buf, &P.sample);
	P.perf_err = 0;
	for (unsigned i = 0; i < P.ncpus; i++) {
		uint64_t gen;
		int err = rpm_perf_read(i, P.perf[i], &gen);
		if (i == 0)
			P.perf_gen = gen;
		else if (!err && gen != P.perf_gen)
			err = -EAGAIN; /* the daemon was replaced between two CPUs */
		if (err && !P.perf_err)
			P.perf_err = err;
	}
	errno = saved;
	P.sample_ns = now;
}

static void bus_locked(uint64_t now, struct rpm_bus *bus)
{
	bus->cpu1 = rpm_bus_cycles_for_ticks(P.sample.kernel_io_ticks, (uint64_t)P.clk_tck);
	bus->ltu = rpm_bus_cycles_for_bytes(P.sample.nic_bytes);
	bus->exp = 0; /* no expansion card here: unavailable, 0 */
	rpm_bus_model(now / (1000000000ULL / RPM_BUS_HZ), bus);
}

static struct rpm_host *host_or_null(void)
{
	struct rpm_host *h = NULL;
	return rpm_host_open(&h) == 0 ? h : NULL;
}

/* may_block: 0 in the signal handlers (an MPI window's source must not
 * call MPI there). */
static void node_counts(unsigned node, const struct rpm_live *live, uint64_t out[RPM_NCOUNTERS], int may_block)
{
	const struct papi_heritage_mesh_source *src = rpm_mesh_source();
	if (src) {
		uint64_t b[RPM_NDIRS];
		rpm_mesh_source_bytes(src, node, b, may_block);
		out[RPM_CPU0] = live->bus.cpu0;
		out[RPM_CPU1] = live->bus.cpu1;
		out[RPM_LTU] = live->bus.ltu;
		out[RPM_EXP] = live->bus.exp;
		for (int d = 0; d < RPM_NDIRS; d++)
			out[RPM_NORTH + d] = b[d] / 64; /* 64-byte units, as from /dev/shm */
		return;
	}
	struct rpm_host *h = host_or_null();
	if (h) {
		rpm_host_cumulative(h, node, &live->bus, out);
	} else {
		memset(out, 0, RPM_NCOUNTERS * sizeof out[0]);
		out[RPM_CPU0] = live->bus.cpu0;
		out[RPM_CPU1] = live->bus.cpu1;
		out[RPM_LTU] = live->bus.ltu;
		out[RPM_EXP] = live->bus.exp;
	}
}

void rpm_node_counts(unsigned node, const struct rpm_live *live, uint64_t out[RPM_NCOUNTERS])
{
	node_counts(node, live, out, 1);
}

static void live_locked(struct rpm_live *live, uint64_t now, uint64_t max_age_ns)
{
	sample_locked(now, max_age_ns);
	bus_locked(now, &live->bus);
	live->ncpus = P.ncpus;
	live->perf_err = P.perf_err;
	live->perf_gen = P.perf_gen;
	for (unsigned i = 0; i < P.ncpus; i++) {
		unsigned os = P.pu_os[i];
		live->idle_s[i] = (double)P.sample.idle_ticks[os] / (double)P.clk_tck;
		live->interrupts[i] = P.sample.interrupts[os];
		const uint64_t *k = P.perf[i];
		live->syscalls[i] = k[RPM_SYSCALLS];
		live->faults[i] = k[RPM_PF_ALL];
		live->faults_resolved[i] = k[RPM_PF_MIN] + k[RPM_PF_MAJ];
		rpm_fpe_read(os, live->fpe[i]);
	}
}

static void base_init(void);

int rpm_live_read(struct rpm_live *live, uint64_t max_age_ns)
{
	pthread_once(&base_once, base_init);
	rpm_perf_ensure();
	sigset_t all, old;
	/* No handler of ours may run in this thread while it holds the lock. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	lock();
	live_locked(live, boot_ns(), max_age_ns);
	unlock();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 0;
}

/* The process's router: an MPI job's rank, else its /dev/shm node. */
static unsigned view_node(void)
{
	const struct papi_heritage_mesh_source *src = rpm_mesh_source();
	if (src)
		return src->node >= 0 ? (unsigned)src->node : 0;
	struct rpm_host *h = host_or_null();
	return h ? rpm_host_view_node(h) : 0;
}

unsigned rpm_view_node(void)
{
	return view_node();
}

unsigned rpm_cpu_count(void)
{
	pthread_once(&base_once, base_init);
	return P.ncpus;
}

/* ---- filling the views (under the lock) ----------------------------------- */

static void fill_rpm_locked(void)
{
	uint64_t now = boot_ns();
	uint64_t cum[RPM_NCOUNTERS];
	struct rpm_host *h = host_or_null();
	unsigned node = view_node();

	live_locked(&P.live_scratch, now, 1000000);
	node_counts(node, &P.live_scratch, cum, 0);
	P.rpm_fill->rpm_control = 0;
	P.rpm_fill->rpm_time = rpm_timer_from_ticks(rpm_now_ticks());
	volatile unsigned int *regs[RPM_NCOUNTERS] = {
		&P.rpm_fill->rpm_cpu0, &P.rpm_fill->rpm_cpu1, &P.rpm_fill->rpm_ltu, &P.rpm_fill->rpm_exp,
		&P.rpm_fill->rpm_north, &P.rpm_fill->rpm_south, &P.rpm_fill->rpm_east, &P.rpm_fill->rpm_west,
	};
	for (int c = 0; c < RPM_NCOUNTERS; c++)
		*regs[c] = rpm_register_value(cum[c], h ? __atomic_load_n(&h->bases->base[node][c], __ATOMIC_RELAXED) : 0);
}

static void fill_soft_locked(void)
{
	live_locked(&P.live_scratch, boot_ns(), 1000000);
	for (unsigned i = 0; i < P.ncpus; i++) {
		struct rpmsoft *s = &P.soft_fill[i];
		s->rpms_idle = P.live_scratch.idle_s[i];
		const struct rpm_live *l = &P.live_scratch;
		s->rpms_int = (unsigned int)l->interrupts[i];
		s->rpms_it = (unsigned int)l->syscalls[i];
		s->rpms_dat = (unsigned int)l->faults[i];
		s->rpms_ptenotp = (unsigned int)l->faults_resolved[i];
		s->rpms_ptenotu = (unsigned int)rpm_unresolved_faults(l->faults[i], l->faults_resolved[i]);
		const uint64_t *f = l->fpe[i];
		s->rpms_ft = (unsigned int)f[RPM_FPF_FT];
		s->rpms_fpe_se = (unsigned int)f[RPM_FPF_SE];
		s->rpms_fpe_si = (unsigned int)f[RPM_FPF_SI];
		s->rpms_fpe_mu = (unsigned int)f[RPM_FPF_MU];
		s->rpms_fpe_mo = (unsigned int)f[RPM_FPF_MO];
		s->rpms_fpe_mi = (unsigned int)f[RPM_FPF_MI];
		s->rpms_fpe_au = (unsigned int)f[RPM_FPF_AU];
		s->rpms_fpe_ao = (unsigned int)f[RPM_FPF_AO];
		s->rpms_fpe_ai = (unsigned int)f[RPM_FPF_AI];
		/* Derived: the sum of the trap classes that have a source here
		 * (FP traps are 0 unless the trap mode is on). */
		s->rpms_alltraps = (unsigned int)(l->interrupts[i] + l->syscalls[i] + l->faults[i] + f[RPM_FPF_FT]);
	}
}

/* ---- reset ---------------------------------------------------------------- */

static int reset_locked(unsigned node)
{
	struct rpm_host *h = host_or_null();
	uint64_t cum[RPM_NCOUNTERS];
	if (!h)
		return -EIO;
	live_locked(&P.live_scratch, boot_ns(), 0);
	node_counts(node, &P.live_scratch, cum, 0);
	return rpm_host_reset(h, node, cum);
}

int rpm_reset_node(unsigned node)
{
	pthread_once(&base_once, base_init);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	lock();
	int err = reset_locked(node);
	unlock();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

/* ---- handlers ------------------------------------------------------------- */

static int view_of(uintptr_t addr)
{
	for (int v = 0; v < NVIEWS; v++)
		if (P.len[v] && addr >= P.start[v] && addr < P.start[v] + P.len[v])
			return v;
	return -1;
}

/* Clients of the signal engine (watch_signal.c), after the page-trap
 * backend's and whole-thread stepping's, where the application's handler
 * used to call them: what is not ours goes on to the application's. */
static enum watch_claim on_segv(struct watch_signal_event *ev, void *arg)
{
	(void)arg;
	siginfo_t *si = ev->si;
	ucontext_t *uc = ev->uc;
	uintptr_t addr = (uintptr_t)si->si_addr;
	int v = view_of(addr);
	int write = ((unsigned long)uc->uc_mcontext.gregs[REG_ERR] & PF_WRITE) != 0;

	if (v < 0 || si->si_code != SEGV_ACCERR || (write && v != VIEW_ALIAS))
		return WATCH_NOT_MINE;
	int saved = errno;
	lock();
	if (v == VIEW_SOFT)
		fill_soft_locked();
	else
		fill_rpm_locked();
	if (!(stepping & (1u << v))) {
		stepping |= 1u << v;
		P.open_count[v]++;
	}
	mprotect((void *)P.start[v], P.len[v], PROT_READ | (v == VIEW_ALIAS ? PROT_WRITE : 0));
	unlock();
	errno = saved;
	uc->uc_mcontext.gregs[REG_EFL] |= TRAP_FLAG;
	return WATCH_MINE;
}

static enum watch_claim on_trap(struct watch_signal_event *ev, void *arg)
{
	(void)arg;
	ucontext_t *uc = ev->uc;

	/* A trap an earlier client took and passed on (a page-trap window's)
	 * is not offered to the application either: leave it. */
	if (!stepping || ev->handled)
		return WATCH_NOT_MINE;
	int saved = errno;
	lock();
	if (stepping & (1u << VIEW_ALIAS)) {
		/* The stepped instruction may have stored to rpm_control. */
		if (P.rpm_fill->rpm_control == RPM_CONTROL_RESET) {
			reset_locked(view_node());
		}
		P.rpm_fill->rpm_control = 0;
	}
	for (int v = 0; v < NVIEWS; v++) {
		if (!(stepping & (1u << v)))
			continue;
		if (--P.open_count[v] == 0)
			mprotect((void *)P.start[v], P.len[v], PROT_NONE);
	}
	stepping = 0;
	unlock();
	errno = saved;
	uc->uc_mcontext.gregs[REG_EFL] &= ~TRAP_FLAG;
	return WATCH_MINE;
}

/* ---- mapping -------------------------------------------------------------- */

static void enumerate_cpus(void)
{
	hwloc_topology_t topo;
	P.ncpus = 0;
	if (hwloc_topology_init(&topo) == 0) {
		/* PUs only: discovering caches and NUMA nodes costs time we do
		 * not need in every process's startup. */
		hwloc_topology_set_all_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
		hwloc_topology_set_type_filter(topo, HWLOC_OBJ_PU, HWLOC_TYPE_FILTER_KEEP_ALL);
		if (hwloc_topology_load(topo) == 0) {
			int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
			for (int i = 0; i < n && P.ncpus < RPM_MAX_CPUS; i++) {
				hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, (unsigned)i);
				if (pu && pu->os_index < RPM_MAX_CPUS)
					P.pu_os[P.ncpus++] = pu->os_index;
			}
		}
		hwloc_topology_destroy(topo);
	}
	if (P.ncpus == 0) {
		P.pu_os[0] = 0;
		P.ncpus = 1;
	}
}

static int memfd_pages(const char *name, size_t len, void **fill)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	*fill = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (*fill == MAP_FAILED) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

static int map_fixed(int fd, uintptr_t at, size_t len, const char *what)
{
	void *p = mmap((void *)at, len, PROT_NONE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	if (p == MAP_FAILED)
		return heritage_fail(-errno, "paragon_rpm: cannot map %s at %#lx: %s", what, (unsigned long)at,
		                     strerror(errno));
	if ((uintptr_t)p != at) { /* kernels before 4.17 treat the flag as a hint */
		munmap(p, len);
		return heritage_fail(-EEXIST, "paragon_rpm: %#lx is taken; cannot map %s there", (unsigned long)at, what);
	}
	return 0;
}

/* What every user needs (the PAPI component too): CPUs, clock tick, the
 * host's shared state.  No mapping and no signal handler: those are for
 * programs that use the legacy pages (rpm_map), not for every program that
 * links libpapi. */
static void base_init(void)
{
	/* Chooses and calibrates rpm_time's clock here, not in a handler. */
	(void)rpm_now_ticks();
	P.clk_tck = sysconf(_SC_CLK_TCK);
	if (P.clk_tck <= 0)
		P.clk_tck = 100;
	enumerate_cpus();
	/* The per-CPU perf counters open on first use (rpm_perf_ensure), not
	 * here: this runs in every program that links libpapi. */
	rpm_perf_configure(P.ncpus, P.pu_os);
	/* Opened here, not in a handler: opening allocates and may wait. */
	(void)host_or_null();
}

static void init_once(void)
{
	pthread_once(&base_once, base_init);
	rpm_perf_ensure();   /* the fault handler reads them: open them now */
	const char *m = heritage_env("PARAGON_RPM", "MAP");
	if (m && strcmp(m, "0") == 0) {
		P.map_err = heritage_fail(-ENOTSUP, "paragon_rpm: PAPI_HERITAGE_PARAGON_RPM_MAP=0: the RPM pages are not mapped");
		return;
	}
	void *soft_fill;
	size_t soft_len = (P.ncpus * sizeof(struct rpmsoft) + PAGE - 1) / PAGE * PAGE;
	int soft_fd = memfd_pages("rpmsoft", soft_len, &soft_fill);
	P.rpm_fd = memfd_pages("rpm", PAGE, (void **)&P.rpm_fill);
	if (soft_fd < 0 || P.rpm_fd < 0) {
		P.map_err = heritage_fail(soft_fd < 0 ? soft_fd : P.rpm_fd, "paragon_rpm: cannot create the RPM pages");
		return;
	}
	P.soft_fill = soft_fill;
	int err = map_fixed(P.rpm_fd, RPM_BASE_VADDR, PAGE, "struct rpm");
	if (!err)
		err = map_fixed(soft_fd, RPMSOFT_BASE_VADDR, soft_len, "struct rpmsoft[]");
	close(soft_fd);
	if (err) {
		P.map_err = err;
		return;
	}
	/* Their handlers hold the spin lock: every signal stays blocked while
	 * they run, as under the full sa_mask they had as handlers. */
	const struct watch_signal_client clients[] = {
		{ .name = "paragon_rpm", .sig = SIGSEGV, .priority = WATCH_PRIO_RPM, .fn = on_segv, .block_all = 1,
		  .state_lo = (uintptr_t)&P, .state_hi = (uintptr_t)&P + sizeof P },
		{ .name = "paragon_rpm", .sig = SIGTRAP, .priority = WATCH_PRIO_RPM, .fn = on_trap, .block_all = 1,
		  .state_lo = (uintptr_t)&P, .state_hi = (uintptr_t)&P + sizeof P },
	};
	char why[256];
	err = watch_signal_start("paragon_rpm", why, sizeof why);
	for (unsigned i = 0; i < sizeof clients / sizeof clients[0] && !err; i++)
		err = watch_signal_register(&clients[i], why, sizeof why);
	if (err) {
		(void)why;
		P.map_err = heritage_fail(err, "paragon_rpm: cannot install the SIGSEGV handler");
		return;
	}
	/* Publish the views last: the handler looks them up. */
	P.start[VIEW_SOFT] = RPMSOFT_BASE_VADDR;
	P.len[VIEW_SOFT] = soft_len;
	P.start[VIEW_RPM] = RPM_BASE_VADDR;
	__atomic_store_n(&P.len[VIEW_RPM], PAGE, __ATOMIC_RELEASE);
	P.mapped = 1;
}

HERITAGE_PUBLIC int rpm_map(void)
{
	pthread_once(&map_once, init_once);
	if (P.map_err) {
		errno = -P.map_err;
		return -1;
	}
	return 0;
}

HERITAGE_PUBLIC int rpm_num_cpus(void)
{
	return (int)rpm_cpu_count();
}

HERITAGE_PUBLIC const char *rpm_last_error(void)
{
	return heritage_last_error();
}

HERITAGE_PUBLIC struct rpm *rpm_map_writable(const char *device)
{
	int err = 0;
	if (!device || strcmp(device, "rpm0") != 0)
		err = heritage_fail(-ENODEV, "rpm_map_writable: no device \"%s\" (the RPM device is rpm0)",
		                    device ? device : "(null)");
	else if (!rpm_privileged())
		err = heritage_fail(-EPERM, "rpm_map_writable: the writable RPM page is for root (or CAP_SYS_ADMIN) only");
	else if (rpm_map() != 0)
		err = P.map_err;
	else {
		struct rpm_host *h = NULL;
		err = rpm_host_open(&h);
		if (!err && !h->bases_writable)
			err = heritage_fail(-EPERM, "rpm_map_writable: the reset state (/dev/shm) is not writable by this process");
	}
	if (err) {
		errno = -err;
		return NULL;
	}
	lock();
	if (!P.len[VIEW_ALIAS]) {
		void *p = mmap(NULL, PAGE, PROT_NONE, MAP_SHARED, P.rpm_fd, 0);
		if (p == MAP_FAILED) {
			err = heritage_fail(-errno, "rpm_map_writable: mmap: %s", strerror(errno));
		} else {
			P.start[VIEW_ALIAS] = (uintptr_t)p;
			__atomic_store_n(&P.len[VIEW_ALIAS], PAGE, __ATOMIC_RELEASE);
		}
	}
	unlock();
	if (err) {
		errno = -err;
		return NULL;
	}
	return (struct rpm *)P.start[VIEW_ALIAS];
}

HERITAGE_PUBLIC int rpm_mesh_join(int node)
{
	struct rpm_host *h;
	int err = rpm_host_open(&h);
	if (!err)
		err = rpm_host_join(h, node);
	if (err < 0) {
		errno = -err;
		return -1;
	}
	return err;
}

HERITAGE_PUBLIC int rpm_mesh_leave(void)
{
	struct rpm_host *h;
	int err = rpm_host_open(&h);
	if (!err)
		err = rpm_host_leave(h);
	if (err < 0) {
		errno = -err;
		return -1;
	}
	return 0;
}

HERITAGE_PUBLIC int rpm_mesh_send(int dst_node, unsigned long bytes)
{
	struct rpm_host *h;
	int err = rpm_host_open(&h);
	if (!err)
		err = rpm_host_send(h, dst_node, bytes);
	if (err < 0) {
		errno = -err;
		return -1;
	}
	return 0;
}
