/*
 * breakpoint backend: x86 debug registers through
 * perf_event_open(PERF_TYPE_BREAKPOINT), counting mode, this thread only.
 *
 * x86 has no read-only data breakpoint (HW_BREAKPOINT_R is refused), so the
 * watched word takes two of the four registers: one RW and one W, and
 * loads = RW - W.  Only one word is watched, naturally aligned, of 1, 2, 4
 * or 8 bytes: with two words, one access spanning both (a 16-byte vector
 * load) would hit both registers and count twice.  The debug unit raises one trap per instruction, so a
 * read-modify-write instruction counts as a store only (its load is lost),
 * and the access address is never seen, so misaligned counts are refused.
 * Each hit costs a #DB trap (about 11 us on the reference VM); misses cost
 * nothing.
 */
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "watch/watch.h"

#define BP_MAX_WORDS 1

struct bp_word {
	uintptr_t addr;
	unsigned len;
};

/* Split the data intervals into naturally aligned words of at most 8 bytes,
 * largest first; returns the number of words, or -1 if more than max. */
static int split_words(const struct watch_request *req, struct bp_word *w, int max)
{
	int n = 0;

	for (unsigned i = 0; i < req->ndata; i++) {
		uintptr_t a = req->data[i].start, end = req->data[i].end;
		while (a < end) {
			unsigned len = 8;
			while (len > 1 && ((a & (len - 1)) != 0 || a + len > end))
				len >>= 1;
			if (n == max)
				return -1;
			w[n].addr = a;
			w[n].len = len;
			n++;
			a += len;
		}
	}
	return n;
}

static int breakpoint_fits(const struct watch_request *req, char *why, size_t len)
{
	struct bp_word w[BP_MAX_WORDS];

	if (req->want_code) {
		snprintf(why, len, "instruction ranges are not counted with debug registers (one address each)");
		return -ENOTSUP;
	}
	if (req->data_all || req->ndata == 0) {
		snprintf(why, len, "debug registers cannot see every access: set a data range");
		return -ENOTSUP;
	}
	if (req->want_misaligned) {
		snprintf(why, len, "debug registers do not report the access address, so misaligned accesses cannot be told apart");
		return -ENOTSUP;
	}
	if (req->data_by_code) {
		snprintf(why, len, "debug registers cannot combine a data range with an instruction range");
		return -ENOTSUP;
	}
	if (split_words(req, w, BP_MAX_WORDS) < 0) {
		snprintf(why, len, "the cover is not one naturally aligned word of 1, 2, 4 or 8 bytes "
		         "(the word takes an RW and a W debug register; two words could count one access twice)");
		return -ENOSPC;
	}
	return 0;
}

static int open_bp(uintptr_t addr, unsigned len, unsigned type)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof attr);
	attr.size = sizeof attr;
	attr.type = PERF_TYPE_BREAKPOINT;
	attr.bp_type = type;
	attr.bp_addr = addr;
	attr.bp_len = len;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	attr.disabled = 1;
	return (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static void close_all(struct watch_session *s)
{
	for (int i = 0; i < s->nbp_fd; i++)
		close(s->bp_fd[i]);
	s->nbp_fd = 0;
}

/* bp_fd layout: [2k] = RW on word k, [2k+1] = W on word k. */
static int breakpoint_start(struct watch_session *s, char *why, size_t len)
{
	struct bp_word w[BP_MAX_WORDS];
	int n = split_words(&s->req, w, BP_MAX_WORDS);

	s->nbp_fd = 0;
	for (int k = 0; k < n; k++) {
		static const unsigned types[2] = { HW_BREAKPOINT_RW, HW_BREAKPOINT_W };
		for (int t = 0; t < 2; t++) {
			int fd = open_bp(w[k].addr, w[k].len, types[t]);
			if (fd < 0) {
				int err = errno;
				close_all(s);
				snprintf(why, len, "perf_event_open(PERF_TYPE_BREAKPOINT, %#lx, len %u): %s%s",
				         (unsigned long)w[k].addr, w[k].len, strerror(err),
				         err == EACCES || err == EPERM ? " (check /proc/sys/kernel/perf_event_paranoid)" :
				         err == ENOSPC ? " (debug registers in use, e.g. by a debugger)" : "");
				return -err;
			}
			s->bp_fd[s->nbp_fd++] = fd;
		}
	}
	for (int i = 0; i < s->nbp_fd; i++)
		ioctl(s->bp_fd[i], PERF_EVENT_IOC_ENABLE, 0);
	return 0;
}

static void breakpoint_read(const struct watch_session *s, struct watch_counts *live)
{
	memset(live, 0, sizeof *live);
	for (int i = 0; i + 1 < s->nbp_fd; i += 2) {
		uint64_t rw = 0, wr = 0;
		if (read(s->bp_fd[i], &rw, sizeof rw) != sizeof rw)
			rw = 0;
		if (read(s->bp_fd[i + 1], &wr, sizeof wr) != sizeof wr)
			wr = 0;
		live->stores += wr;
		live->loads += rw >= wr ? rw - wr : 0;
	}
}

static void breakpoint_stop(struct watch_session *s)
{
	struct watch_counts live;

	for (int i = 0; i < s->nbp_fd; i++)
		ioctl(s->bp_fd[i], PERF_EVENT_IOC_DISABLE, 0);
	breakpoint_read(s, &live);
	watch_counts_add(&s->acc, &live);
	close_all(s);
}

static void breakpoint_reset(struct watch_session *s)
{
	for (int i = 0; i < s->nbp_fd; i++)
		ioctl(s->bp_fd[i], PERF_EVENT_IOC_RESET, 0);
}

const struct watch_backend_ops watch_breakpoint_ops = {
	.name = "breakpoint",
	.fits = breakpoint_fits,
	.start = breakpoint_start,
	.stop = breakpoint_stop,
	.read = breakpoint_read,
	.reset = breakpoint_reset,
};
