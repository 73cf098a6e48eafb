/*
 * The IMC trace engine (imc_trace.h): a software-clock sampler into the
 * perf mmap ring, drained by a thread of its own into the quietly
 * wrapping trace buffer.  Nothing here runs in a signal handler and
 * nothing asks the kernel for a signal.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "common/heritage_perf_ring.h"
#include "common/heritage_probe.h"
#include "imc/imc_trace.h"

/* 16 pages of ring: 64 KiB holds about 1300 samples of 48 bytes, 0.7 s at
 * the default 2 kHz; the engine drains at a quarter full or every 100 ms. */
#define RING_PAGES 16
#define DRAIN_MS 100
#define MAX_TIDS 256

struct tid_clock {
	uint32_t tid;
	uint64_t ns;            /* task clock summed from the samples' periods */
};

struct imc_trace_session {
	struct imc_trace_config cfg;
	int fd, efd;
	void *ring;
	size_t ring_bytes, data_bytes;
	pthread_t engine;
	int engine_running, running;
	pthread_mutex_t lock;   /* buffer, ring tail, stats, maps */
	struct imc_trace_buffer buf;
	uint64_t last_tb;
	uint64_t scom, ldbar;
	struct imc_trace_stats st;
	uint64_t ring_lost_untaken;
	struct tid_clock tids[MAX_TIDS];
	unsigned ntids;
	struct imc_trace_map *maps;
	unsigned nmaps, maps_cap;
};

static int parse_uint(const char *knob, const char *v, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long x = strtoul(v, &end, 10);
	if (errno || end == v || *end || x < lo || x > hi)
		return heritage_fail(-EINVAL, "PAPI_HERITAGE_IMC_%s=%s: want a whole number %u-%u", knob, v, lo, hi);
	*out = (unsigned)x;
	return 0;
}

int imc_trace_config_default(struct imc_trace_config *c)
{
	const char *v;
	int err;

	memset(c, 0, sizeof *c);
	c->hz = IMC_TRACE_HZ_DEFAULT;
	c->buffersize = 0;
	if ((v = heritage_env("imc", "trace_hz")) && (err = parse_uint("TRACE_HZ", v, 1, IMC_TRACE_HZ_MAX, &c->hz)))
		return err;
	if ((v = heritage_env("imc", "trace_buffer_size")) &&
	    (err = parse_uint("TRACE_BUFFER_SIZE", v, 0, IMC_SCOM_BUFFERSIZE_MAX, &c->buffersize)))
		return err;
	return 0;
}

int imc_trace_config_threshold(struct imc_trace_config *c, long long threshold)
{
	if (threshold < 32000000 / IMC_TRACE_HZ_MAX || threshold > 32000000)
		return heritage_fail(-EINVAL, "imc trace: a threshold of %lld CPM_32MHZ_CYC is a sampling rate of %.1f/s; "
		                     "this trace samples 1-%u times per second of CPU time (threshold %u-32000000)",
		                     threshold, threshold > 0 ? 32e6 / (double)threshold : 0.0, IMC_TRACE_HZ_MAX,
		                     32000000 / IMC_TRACE_HZ_MAX);
	c->hz = (unsigned)(32000000 / threshold);
	return 0;
}

int imc_trace_usable(char *why, size_t len)
{
	char tmp[HERITAGE_PROBE_EVIDENCE + HERITAGE_PROBE_ALLOWED + 64];
	const struct heritage_probe_result *r = heritage_probe(HERITAGE_MECH_SAMPLING);

	if (r && r->state == HERITAGE_PROBE_WORKS) {
		if (why && len)
			why[0] = '\0';
		return 0;
	}
	int err = heritage_probe_explain(HERITAGE_MECH_SAMPLING, tmp, sizeof tmp);
	if (err == 0)
		err = -ENOTSUP;
	if (why && len)
		snprintf(why, len, "imc trace mode needs perf sampling into the mmap ring: %s", tmp);
	return err;
}

/* ---- the ring -------------------------------------------------------------- */

static uint32_t tid_slot_ns(struct imc_trace_session *s, uint32_t tid, uint64_t period, uint64_t *ns)
{
	for (unsigned i = 0; i < s->ntids; i++)
		if (s->tids[i].tid == tid) {
			*ns = s->tids[i].ns += period;
			return 1;
		}
	if (s->ntids == MAX_TIDS) {
		*ns = 0;
		return 0;
	}
	s->tids[s->ntids].tid = tid;
	*ns = s->tids[s->ntids++].ns = period;
	return 1;
}

static unsigned mode_of(uint16_t misc)
{
	switch (misc & PERF_RECORD_MISC_CPUMODE_MASK) {
	case PERF_RECORD_MISC_GUEST_KERNEL: return IMC_TRACE_MODE_GUEST_KERNEL;
	case PERF_RECORD_MISC_GUEST_USER: return IMC_TRACE_MODE_GUEST_USER;
	case PERF_RECORD_MISC_KERNEL:
	case PERF_RECORD_MISC_HYPERVISOR: return IMC_TRACE_MODE_HV_KERNEL;
	default: return IMC_TRACE_MODE_USER;
	}
}

/* sample_type IP | TID | TIME | PERIOD: the fields in that order. */
struct sample_body {
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint64_t period;
};

static void on_sample(struct imc_trace_session *s, uint16_t misc, const struct sample_body *b)
{
	struct imc_trace_record r;
	uint64_t task_ns;

	memset(&r, 0, sizeof r);
	r.timebase = imc_tb_from_ns(b->time);
	if (r.timebase <= s->last_tb) {
		r.timebase = s->last_tb + 1;
		s->st.reordered++;
	}
	s->last_tb = r.timebase;
	r.pc = b->ip;
	r.pidr = (uint64_t)mode_of(misc) << IMC_TRACE_MODE_SHIFT | b->pid;
	if (tid_slot_ns(s, b->tid, b->period, &task_ns))
		r.cpmc[1] = (task_ns / 1000 * 32 + task_ns % 1000 * 32 / 1000) & 0xffffffffu;
	imc_trace_buffer_append(&s->buf, &r);
	s->st.samples++;
}

static void on_mmap(struct imc_trace_session *s, const unsigned char *rec, size_t size)
{
	/* PERF_RECORD_MMAP: pid, tid, addr, len, pgoff, filename[]. */
	size_t off = sizeof(struct perf_event_header) + 8;
	if (!s->cfg.want_maps || size < off + 24 + 1)
		return;
	uint64_t v[3];
	memcpy(v, rec + off, sizeof v);
	const char *name = (const char *)rec + off + 24;
	size_t nlen = strnlen(name, size - off - 24);
	if (s->nmaps == s->maps_cap) {
		unsigned cap = s->maps_cap ? s->maps_cap * 2 : 32;
		struct imc_trace_map *m = realloc(s->maps, cap * sizeof *m);
		if (!m)
			return;
		s->maps = m;
		s->maps_cap = cap;
	}
	char *path = strndup(name, nlen);
	if (!path)
		return;
	s->maps[s->nmaps++] = (struct imc_trace_map){ .start = v[0], .len = v[1], .pgoff = v[2], .path = path };
}

static void on_record(void *arg, const struct perf_event_header *h, const unsigned char *rec, size_t n)
{
	struct imc_trace_session *s = arg;
	if (h->type == PERF_RECORD_SAMPLE && n >= sizeof *h + sizeof(struct sample_body)) {
		struct sample_body b;
		memcpy(&b, rec + sizeof *h, sizeof b);
		on_sample(s, h->misc, &b);
	} else if (h->type == PERF_RECORD_LOST) {
		uint64_t lost = heritage_perf_record_lost(h, rec, n);
		s->st.ring_lost += lost;
		s->ring_lost_untaken += lost;
	} else if (h->type == PERF_RECORD_MMAP)
		on_mmap(s, rec, n);
}

/* Everything the kernel has written since the last drain; lock held. */
static void drain(struct imc_trace_session *s)
{
	if (!s->ring)
		return;
	/* An MMAP record's file name is at most PATH_MAX. */
	unsigned char rec[4096 + 64];
	heritage_perf_ring_walk(s->ring, s->data_bytes, rec, sizeof rec, on_record, s);
}

static void *engine_main(void *arg)
{
	struct imc_trace_session *s = arg;
	struct pollfd p[2] = { { .fd = s->fd, .events = POLLIN }, { .fd = s->efd, .events = POLLIN } };

	for (;;) {
		int n = poll(p, 2, DRAIN_MS);
		if (n < 0 && errno != EINTR)
			break;
		pthread_mutex_lock(&s->lock);
		drain(s);
		pthread_mutex_unlock(&s->lock);
		if (n > 0 && (p[1].revents & POLLIN))
			break;
		/* The traced process is gone (command mode): nothing more will come. */
		if (n > 0 && (p[0].revents & (POLLHUP | POLLERR)))
			p[0].fd = -1;
	}
	return NULL;
}

/* ---- the session ---------------------------------------------------------------- */

int imc_trace_start(struct imc_trace_session **out, const struct imc_trace_config *c)
{
	char why[HERITAGE_PROBE_EVIDENCE + HERITAGE_PROBE_ALLOWED + 128];
	int err;

	*out = NULL;
	if (c->hz < 1 || c->hz > IMC_TRACE_HZ_MAX)
		return heritage_fail(-EINVAL, "imc trace: %u samples/s is not 1-%u", c->hz, IMC_TRACE_HZ_MAX);
	if ((err = imc_trace_usable(why, sizeof why)))
		return heritage_fail(err, "%s", why);

	struct imc_trace_session *s = calloc(1, sizeof *s);
	if (!s)
		return heritage_fail(-ENOMEM, "imc trace: no memory for a session");
	s->cfg = *c;
	s->fd = s->efd = -1;
	pthread_mutex_init(&s->lock, NULL);
	if ((err = imc_trace_buffer_init(&s->buf, c->buffersize)))
		goto fail;

	/* The registers this models: sampling every N+1 32 MHz cycles. */
	struct imc_trace_scom scom = { .sampsel = IMC_SAMPSEL_CPMC2, .load = 32000000u / c->hz - 1,
	                               .cpmc1sel = 4, .cpmc2sel = IMC_CPMC_32MHZ_CYC, .buffersize = c->buffersize };
	imc_scom_encode(&scom, &s->scom);
	s->ldbar = imc_ldbar_kernel_trace((uint64_t)(uintptr_t)s->buf.mem);

	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	/* The task clock runs while the thread runs, as POWER9's CPMC2 counts
	 * 32 MHz cycles only while LDBAR is loaded for this thread. */
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = 1000000000ull / c->hz;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD;
	a.disabled = 1;
	/* User level: what paranoid 2 allows an ordinary account, and what
	 * the probe checked; the kernel drops ticks that land in the kernel. */
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.watermark = 1;
	a.wakeup_watermark = (RING_PAGES * 4096) / 4;
	a.enable_on_exec = c->enable_on_exec ? 1 : 0;
	a.mmap = c->want_maps ? 1 : 0;
	/* No sigtrap, and the fd never gets O_ASYNC or F_SETSIG: the kernel
	 * has no signal to send. */
	s->fd = (int)syscall(SYS_perf_event_open, &a, c->pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (s->fd < 0) {
		int e = errno;
		err = heritage_fail(-e, "imc trace: perf_event_open(TASK_CLOCK sampling every %llu ns, %s %d): %s",
		                    (unsigned long long)a.sample_period, c->pid ? "process" : "this thread",
		                    c->pid ? (int)c->pid : 0, strerror(e));
		goto fail;
	}
	long page = sysconf(_SC_PAGESIZE);
	s->data_bytes = (size_t)page * RING_PAGES;
	s->ring_bytes = s->data_bytes + (size_t)page;
	s->ring = mmap(NULL, s->ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (s->ring == MAP_FAILED) {
		int e = errno;
		s->ring = NULL;
		err = heritage_fail(-e, "imc trace: mmap of the %zu KiB sample ring: %s%s", s->ring_bytes / 1024,
		                    strerror(e), e == EPERM ? " (perf_event_mlock_kb exhausted?)" : "");
		goto fail;
	}
	s->efd = eventfd(0, EFD_CLOEXEC);
	if (s->efd < 0) {
		err = heritage_fail(-errno, "imc trace: eventfd: %s", strerror(errno));
		goto fail;
	}
	/* The engine gets no signal of the application's. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int perr = pthread_create(&s->engine, NULL, engine_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (perr) {
		err = heritage_fail(-perr, "imc trace: engine thread: %s", strerror(perr));
		goto fail;
	}
	s->engine_running = 1;
	s->running = 1;
	if (!c->enable_on_exec)
		ioctl(s->fd, PERF_EVENT_IOC_ENABLE, 0);
	*out = s;
	return 0;
fail:
	imc_trace_free(s);
	return err;
}

int imc_trace_stop(struct imc_trace_session *s)
{
	if (!s)
		return heritage_fail(-EINVAL, "imc trace: no session");
	if (!s->running)
		return 0;
	ioctl(s->fd, PERF_EVENT_IOC_DISABLE, 0);
	if (s->engine_running) {
		uint64_t one = 1;
		if (write(s->efd, &one, sizeof one) != sizeof one) {
			/* An eventfd write of 1 cannot fail short of overflow. */
		}
		pthread_join(s->engine, NULL);
		s->engine_running = 0;
	}
	pthread_mutex_lock(&s->lock);
	drain(s);
	pthread_mutex_unlock(&s->lock);
	s->running = 0;
	return 0;
}

int imc_trace_take(struct imc_trace_session *s, imc_trace_record_fn fn, void *arg, struct imc_trace_walk *w)
{
	struct imc_trace_walk tmp;
	if (!w)
		w = &tmp;
	if (!s)
		return heritage_fail(-EINVAL, "imc trace: no session");
	pthread_mutex_lock(&s->lock);
	drain(s);
	imc_trace_buffer_take(&s->buf, fn, arg, w);
	w->lost += s->ring_lost_untaken;
	s->ring_lost_untaken = 0;
	s->st.handed += w->valid;
	s->st.lost += w->lost;
	s->st.takes++;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

void imc_trace_free(struct imc_trace_session *s)
{
	if (!s)
		return;
	if (s->running)
		imc_trace_stop(s);
	if (s->ring)
		munmap(s->ring, s->ring_bytes);
	if (s->fd >= 0)
		close(s->fd);
	if (s->efd >= 0)
		close(s->efd);
	imc_trace_buffer_free(&s->buf);
	for (unsigned i = 0; i < s->nmaps; i++)
		free(s->maps[i].path);
	free(s->maps);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void imc_trace_get_stats(struct imc_trace_session *s, struct imc_trace_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->st;
	pthread_mutex_unlock(&s->lock);
}

uint64_t imc_trace_scom(const struct imc_trace_session *s)
{
	return s->scom;
}

uint64_t imc_trace_ldbar(const struct imc_trace_session *s)
{
	return s->ldbar;
}

unsigned imc_trace_entries(const struct imc_trace_session *s)
{
	return s->buf.entries;
}

const struct imc_trace_map *imc_trace_maps(const struct imc_trace_session *s, unsigned *n)
{
	*n = s->nmaps;
	return s->maps;
}
