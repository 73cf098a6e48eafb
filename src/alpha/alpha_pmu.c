/*
 * The core-PMU backend (alpha_pmu.h): libpfm4 encodes, perf_event_open
 * samples, a realtime signal delivers.
 */
#include <linux/perf_event.h> /* before libpfm4's copy, which then defers to it */
#include <perfmon/pfmlib_perf_event.h>

#include "alpha/alpha_pmu.h"
#include "common/heritage_backend.h"
#include "common/heritage_error.h"
#include "common/heritage_perf_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

/* The two backends in auto's order; ops is the enum value each stands for. */
static const enum alpha_backend be_pmu = ALPHA_BACKEND_PMU, be_software = ALPHA_BACKEND_SOFTWARE;
#define PMU_NEEDS (HERITAGE_MECH_BIT(HERITAGE_MECH_PMU) | HERITAGE_MECH_BIT(HERITAGE_MECH_LIBPFM) | \
                   HERITAGE_MECH_BIT(HERITAGE_MECH_SAMPLING))
static const struct heritage_backend alpha_backends[] = {
	{ .name = "pmu", .needs = PMU_NEEDS, .ops = &be_pmu },
	{ .name = "software", .needs = HERITAGE_MECH_BIT(HERITAGE_MECH_SINGLE_STEP), .ops = &be_software },
};
/* A stand-in event is a perf software event encoded by libpfm4's generic
 * perf PMU: no core PMU involved, only the sampling ring. */
static const struct heritage_backend alpha_backends_stand_in[] = {
	{ .name = "pmu", .needs = HERITAGE_MECH_BIT(HERITAGE_MECH_SAMPLING), .ops = &be_pmu },
	{ .name = "software", .needs = HERITAGE_MECH_BIT(HERITAGE_MECH_SINGLE_STEP), .ops = &be_software },
};

int alpha_backend_parse(const char *value, enum alpha_backend *b)
{
	if (!value || !*value || strcasecmp(value, "auto") == 0)
		*b = ALPHA_BACKEND_AUTO;
	else if (strcasecmp(value, "software") == 0 || strcasecmp(value, "sw") == 0)
		*b = ALPHA_BACKEND_SOFTWARE;
	else if (strcasecmp(value, "pmu") == 0)
		*b = ALPHA_BACKEND_PMU;
	else
		return heritage_fail(-EINVAL, "alpha21064: PAPI_HERITAGE_ALPHA21064_BACKEND=%s: the backends are "
		                     "auto (default), software and pmu", value);
	return 0;
}

const char *alpha_backend_name(enum alpha_backend b)
{
	switch (b) {
	case ALPHA_BACKEND_SOFTWARE: return "software";
	case ALPHA_BACKEND_PMU: return "pmu";
	default: return "auto";
	}
}

static int pfm_ready(void)
{
	/* Idempotent, and cheap once done; called before every use because
	 * PAPI_shutdown's pfm_terminate (papi_libpfm4_events.c) may have run
	 * since the last one. */
	int rc = pfm_initialize();
	if (rc != PFM_SUCCESS)
		return heritage_fail(-ENODEV, "alpha21064: libpfm4 cannot initialise: %s", pfm_strerror(rc));
	return 0;
}

int alpha_pmu_detect(char *name, size_t len)
{
	int err = heritage_libpfm_core_pmu(name, len, NULL, 0);
	if (err == -EIO)
		return pfm_ready();
	if (err)
		return heritage_fail(-ENODEV, "alpha21064: libpfm4 finds no core PMU on this machine");
	return 0;
}

int alpha_pmu_encode(const char *host, unsigned width, unsigned scale, struct perf_event_attr *attr)
{
	struct perf_event_attr a;
	pfm_perf_encode_arg_t arg;
	int err = pfm_ready();

	if (err)
		return err;
	if (!host || !attr || width > 40 || scale == 0)
		return heritage_fail(-EINVAL, "alpha21064: bad host event request");
	memset(&a, 0, sizeof a);
	memset(&arg, 0, sizeof arg);
	arg.attr = &a;
	arg.size = sizeof arg;
	/* PFM_PLM3: user level only, as the 21064's per-process (PME) mode
	 * counted the program and not the OS serving it. */
	int rc = pfm_get_os_event_encoding(host, PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
	if (rc != PFM_SUCCESS)
		return heritage_fail(rc == PFM_ERR_NOTFOUND ? -ENOENT : -EINVAL, "alpha21064: libpfm4 cannot encode "
		                     "%s: %s", host, pfm_strerror(rc));
	/* libpfm4 leaves size 0 ("its" layout); the kernel wants ours. */
	a.size = sizeof a;
	a.sample_period = (uint64_t)scale << width;
	a.sample_type = PERF_SAMPLE_IP;
	a.read_format = 0;
	a.disabled = 1;
	a.inherit = 0;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.wakeup_events = 1; /* a signal per carry: the 21064 interrupted on each */
	*attr = a;
	return 0;
}

static int perf_open(const struct perf_event_attr *attr)
{
	return (int)syscall(SYS_perf_event_open, attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

int alpha_pmu_usable(void)
{
	char why[HERITAGE_PROBE_EVIDENCE + 64];
	return heritage_backend_usable(&alpha_backends[0], why, sizeof why) == 0;
}

static void join_names(char *buf, size_t len, const char *const *names, unsigned n)
{
	size_t used = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < n && names[i] && used < len; i++) {
		int k = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", names[i]);
		if (k < 0)
			break;
		used += (size_t)k;
	}
}

int alpha_pmu_resolve(unsigned code, const char *stand_in, int try_open, struct perf_event_attr *attr,
                      const char **host)
{
	const struct alpha_event *e = alpha_event_of(code);
	const char *one[1] = { stand_in };
	const char *const *cand;
	unsigned ncand, scale, encoded = 0;
	int open_errno = 0;
	const char *open_failed = NULL;

	if (!e)
		return heritage_fail(-ENOENT, "alpha21064: event code %#x is not an alpha21064 event", code);
	if (!stand_in && !e->host_honesty)
		return heritage_fail(-ENOTSUP, "alpha21064: %s cannot be counted by the core-PMU backend either: %s",
		                     e->name, e->host_why);
	cand = stand_in ? one : e->host;
	ncand = stand_in ? 1 : ALPHA_HOST_CANDIDATES;
	scale = stand_in || !e->host_scale ? 1 : e->host_scale;
	for (unsigned i = 0; i < ncand && cand[i]; i++) {
		struct perf_event_attr a;
		if (alpha_pmu_encode(cand[i], alpha_code_width(code), scale, &a) != 0)
			continue; /* not this PMU's name: the next candidate may be */
		encoded++;
		if (try_open) {
			int fd = perf_open(&a);
			if (fd < 0) {
				if (!open_failed || errno == EACCES || errno == EPERM) {
					open_errno = errno;
					open_failed = cand[i];
				}
				continue;
			}
			close(fd);
		}
		*attr = a;
		if (host)
			*host = cand[i];
		return 0;
	}

	char names[256], pmu[64] = "no core PMU";
	join_names(names, sizeof names, cand, ncand);
	int have_pmu = alpha_pmu_detect(pmu, sizeof pmu) == 0;
	if (!encoded)
		return heritage_fail(-ENOTSUP, "alpha21064: %s: libpfm4 (%s%s) knows none of its host events (%s); "
		                     "this PMU has no analogue of it", e->name, have_pmu ? "core PMU " : "", pmu, names);
	if (open_errno == EACCES || open_errno == EPERM)
		return heritage_fail(-EPERM, "alpha21064: %s: perf_event_open(%s) refused: %s; lower "
		                     "/proc/sys/kernel/perf_event_paranoid (2 allows user-level counting of one's own "
		                     "threads) or grant CAP_PERFMON", e->name, open_failed, strerror(open_errno));
	return heritage_fail(-ENODEV, "alpha21064: %s: the kernel cannot count %s (perf_event_open: %s): this "
	                     "machine has no usable core PMU (libpfm4 reports %s%s; a VM without PMU passthrough "
	                     "looks like this); PAPI_HERITAGE_ALPHA21064_BACKEND=software selects the single-step "
	                     "backend", e->name, open_failed, strerror(open_errno), have_pmu ? "core PMU " : "", pmu);
}

/* ------------------------------------------------------------ the rings */

static size_t page_size(void)
{
	static size_t ps;
	if (!ps)
		ps = (size_t)sysconf(_SC_PAGESIZE);
	return ps;
}

struct drain_ctx {
	struct alpha_pmu_run *r;
	unsigned c;
	ucontext_t *uc;
};

static void on_record(void *arg, const struct perf_event_header *h, const unsigned char *rec, size_t have)
{
	struct drain_ctx *d = arg;
	struct alpha_pmu_run *r = d->r;
	if (h->type == PERF_RECORD_SAMPLE && have >= sizeof *h + sizeof(uint64_t)) {
		uint64_t ip;
		memcpy(&ip, rec + sizeof *h, sizeof ip);
		r->interrupts[d->c]++;
		if (r->deliver && r->running)
			r->deliver(r->deliver_arg, d->c, ip, d->uc);
	} else if (h->type == PERF_RECORD_LOST) {
		r->lost[d->c] += heritage_perf_record_lost(h, rec, have);
	} else if (h->type == PERF_RECORD_THROTTLE) {
		r->throttled[d->c]++;
	}
}

/* Deliver every record in counter c's ring.  Runs in the signal handler or
 * in stop with the signal blocked: never twice at once on one ring. */
static void drain(struct alpha_pmu_run *r, unsigned c, ucontext_t *uc)
{
	struct perf_event_mmap_page *m = r->ring[c];
	if (!r->open[c] || !m)
		return;
	struct drain_ctx d = { .r = r, .c = c, .uc = uc };
	/* Records of sample_type IP: 16 bytes; LOST 32 with sample_id_all. */
	unsigned char rec[64];
	heritage_perf_ring_walk(m, (uint64_t)ALPHA_PMU_RING_PAGES * page_size(), rec, sizeof rec, on_record, &d);
}

/* The run started on this thread: the signal is directed here (F_OWNER_TID),
 * so the handler finds its run without a lock. */
static __thread struct alpha_pmu_run *thread_run;

static void on_signal(int sig, siginfo_t *si, void *ucv)
{
	struct alpha_pmu_run *r = thread_run;
	int saved = errno;
	(void)sig;
	(void)si;
	if (r && r->running)
		for (unsigned c = 0; c < ALPHA_NCOUNTERS; c++)
			drain(r, c, ucv);
	errno = saved;
}

static pthread_once_t handler_once = PTHREAD_ONCE_INIT;
static int handler_err;

static void install_handler(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(ALPHA_PMU_SIGNAL, &sa, NULL) != 0)
		handler_err = -errno;
}

/* ------------------------------------------------------------ the run */

static void close_counter(struct alpha_pmu_run *r, unsigned c)
{
	if (!r->open[c])
		return;
	if (r->ring[c])
		munmap(r->ring[c], (ALPHA_PMU_RING_PAGES + 1) * page_size());
	close(r->fd[c]);
	r->ring[c] = NULL;
	r->fd[c] = -1;
	r->open[c] = 0;
}

static int open_counter(struct alpha_pmu_run *r, unsigned c, pid_t tid, char *why, size_t len)
{
	const char *step = "perf_event_open";
	int fd = perf_open(&r->attr[c]);
	void *ring = MAP_FAILED;
	struct f_owner_ex owner = { .type = F_OWNER_TID, .pid = tid };

	if (fd < 0)
		goto fail;
	step = "mmap of the sample ring";
	ring = mmap(NULL, (ALPHA_PMU_RING_PAGES + 1) * page_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED)
		goto fail;
	step = "fcntl (O_ASYNC, F_SETSIG, F_SETOWN_EX)";
	if (fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) != 0 || fcntl(fd, F_SETSIG, ALPHA_PMU_SIGNAL) != 0 ||
	    fcntl(fd, F_SETOWN_EX, &owner) != 0)
		goto fail;
	r->fd[c] = fd;
	r->ring[c] = ring;
	r->open[c] = 1;
	return 0;
fail:;
	int err = -errno;
	if (ring != MAP_FAILED)
		munmap(ring, (ALPHA_PMU_RING_PAGES + 1) * page_size());
	if (fd >= 0)
		close(fd);
	if (why && len)
		snprintf(why, len, "alpha21064: counter %u (%s): %s failed: %s", c, r->host[c], step, strerror(-err));
	return err;
}

int alpha_pmu_select(struct alpha_pmu_run *r, const unsigned *codes, unsigned n, const char *stand_in,
                     unsigned *pos)
{
	struct alpha_select sel;
	struct perf_event_attr attr[ALPHA_NCOUNTERS];
	const char *host[ALPHA_NCOUNTERS] = { NULL, NULL };
	unsigned where[ALPHA_NCOUNTERS + 1] = { 0 }, code[ALPHA_NCOUNTERS] = { 0, 0 };

	if (n > ALPHA_NCOUNTERS)
		return heritage_fail(-EBUSY, "alpha21064: the 21064 has two counters; an event set holds at most one "
		                     "event on each");
	int err = alpha_select_events(&sel, codes, n, 1, where);
	if (err)
		return err;
	memset(attr, 0, sizeof attr);
	for (unsigned i = 0; i < n; i++) {
		unsigned c = where[i];
		err = alpha_pmu_resolve(codes[i], stand_in, 1, &attr[c], &host[c]);
		if (err)
			return err;
		code[c] = codes[i];
	}
	alpha_pmu_close(r);
	r->sel = sel;
	r->stand_in = stand_in;
	for (unsigned c = 0; c < ALPHA_NCOUNTERS; c++) {
		r->code[c] = code[c];
		r->attr[c] = attr[c];
		r->host[c] = host[c];
	}
	for (unsigned i = 0; pos && i < n; i++)
		pos[i] = where[i];
	return 0;
}

int alpha_pmu_start(struct alpha_pmu_run *r, char *why, size_t len)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);

	if (thread_run && thread_run != r && thread_run->running) {
		if (why && len)
			snprintf(why, len, "alpha21064: another alpha21064 event set is already running on this thread "
			         "(one 21064 per thread)");
		return -EBUSY;
	}
	pthread_once(&handler_once, install_handler);
	if (handler_err) {
		if (why && len)
			snprintf(why, len, "alpha21064: cannot install the overflow signal handler: %s",
			         strerror(-handler_err));
		return handler_err;
	}
	/* Counts belong to the thread that opened them (pid 0): started on
	 * another thread, the set gets that thread's counters. */
	for (unsigned c = 0; c < ALPHA_NCOUNTERS; c++)
		if (r->open[c] && r->owner.tid != tid)
			close_counter(r, c);
	for (unsigned c = 0; c < ALPHA_NCOUNTERS; c++) {
		if (!r->sel.used[c] || r->open[c])
			continue;
		int err = open_counter(r, c, tid, why, len);
		if (err) {
			for (unsigned k = 0; k < ALPHA_NCOUNTERS; k++)
				close_counter(r, k);
			return err;
		}
	}
	heritage_owner_set(&r->owner);
	memset(r->interrupts, 0, sizeof r->interrupts);
	memset(r->lost, 0, sizeof r->lost);
	memset(r->throttled, 0, sizeof r->throttled);
	thread_run = r;
	r->running = 1;
	for (unsigned c = 0; c < ALPHA_NCOUNTERS; c++) {
		if (r->open[c] && ioctl(r->fd[c], PERF_EVENT_IOC_ENABLE, 0) != 0) {
			int err = -errno;
			(void)alpha_pmu_stop(r); /* this thread started it */
			if (why && len)
				snprintf(why, len, "alpha21064: cannot enable %s: %s", r->host[c], strerror(-err));
			return err;
		}
	}
	return 0;
}

int alpha_pmu_stop(struct alpha_pmu_run *r)
{
	sigset_t block, old;
	ucontext_t uc;

	if (!r->running)
		return 0;
	int err = heritage_owner_stop(&r->owner, "alpha21064", 1);
	if (err < 0)
		return err;
	for (unsigned c = 0; c < ALPHA_NCOUNTERS; c++)
		if (r->open[c])
			ioctl(r->fd[c], PERF_EVENT_IOC_DISABLE, 0);
	/* A carry whose signal has not been handled yet is still delivered,
	 * from here; the handler must not drain the same ring meanwhile.  Its
	 * handler sees the context of the stop, the nearest there is. */
	sigemptyset(&block);
	sigaddset(&block, ALPHA_PMU_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	getcontext(&uc);
	for (unsigned c = 0; c < ALPHA_NCOUNTERS; c++)
		drain(r, c, &uc);
	r->running = 0;
	if (thread_run == r)
		thread_run = NULL;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 0;
}

void alpha_pmu_reset(struct alpha_pmu_run *r)
{
	memset(r->interrupts, 0, sizeof r->interrupts);
	memset(r->lost, 0, sizeof r->lost);
	memset(r->throttled, 0, sizeof r->throttled);
}

void alpha_pmu_close(struct alpha_pmu_run *r)
{
	(void)alpha_pmu_stop(r); /* PAPI cleans up only stopped sets: a no-op */
	for (unsigned c = 0; c < ALPHA_NCOUNTERS; c++)
		close_counter(r, c);
}

int alpha_pmu_host_count(const struct alpha_pmu_run *r, unsigned c, uint64_t *count)
{
	if (c >= ALPHA_NCOUNTERS || !r->open[c])
		return -EINVAL;
	return read(r->fd[c], count, sizeof *count) == (ssize_t)sizeof *count ? 0 : -errno;
}

/* ---- backend choice ------------------------------------------------------------ */

const struct heritage_backend *alpha_backend_table(int stand_in, unsigned *n)
{
	*n = sizeof alpha_backends / sizeof alpha_backends[0];
	return stand_in ? alpha_backends_stand_in : alpha_backends;
}

struct alpha_request {
	const char *stand_in;
	struct alpha_pmu_run *pmu;
	struct alpha_select *sel;
	const unsigned *codes;
	unsigned n;
	unsigned *pos;
};

/* Fitting is preparing: the PMU backend resolves and try-opens every event
 * (one missing host event rules it out), the software one selects. */
static int alpha_fits(const struct heritage_backend *b, const void *arg, char *why, size_t len)
{
	const struct alpha_request *q = arg;
	int err = *(const enum alpha_backend *)b->ops == ALPHA_BACKEND_PMU ? alpha_pmu_select(q->pmu, q->codes, q->n, q->stand_in, q->pos)
	                                                 : alpha_select_events(q->sel, q->codes, q->n, 0, q->pos);
	if (err)
		snprintf(why, len, "%s", heritage_last_error());
	return err;
}

int alpha_backend_choose(enum alpha_backend want, const char *stand_in, struct alpha_pmu_run *pmu,
                         struct alpha_select *sel, const unsigned *codes, unsigned n, unsigned *pos,
                         enum alpha_backend *chosen)
{
	struct alpha_request q = { stand_in, pmu, sel, codes, n, pos };
	unsigned nb, i;
	const struct heritage_backend *table = alpha_backend_table(stand_in != NULL, &nb);
	int forced = want == ALPHA_BACKEND_AUTO ? -1 : heritage_backend_find(table, nb, alpha_backend_name(want));
	char why[1024], before[1024];

	/* auto's passed-over backends are not the user's error: on success the
	 * last error stays what it was. */
	snprintf(before, sizeof before, "%s", heritage_last_error());
	int err = heritage_backend_choose(table, nb, forced, 0, alpha_fits, &q, &i, why, sizeof why);
	if (err == 0) {
		*chosen = *(const enum alpha_backend *)table[i].ops;
		if (before[0])
			heritage_fail_msg(0, before);
		else
			heritage_clear_error();
		return 0;
	}
	if (err == -ENODEV)
		err = -ENOTSUP;
	if (forced >= 0)
		return heritage_fail(err, "alpha21064: PAPI_HERITAGE_ALPHA21064_BACKEND=%s: %s", table[forced].name, why);
	return heritage_fail(err, "alpha21064: no backend can count these events: %s", why);
}
