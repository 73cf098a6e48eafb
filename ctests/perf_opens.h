/*
 * perf_opens: whether this process may open a user-level perf event, for
 * the ctests that must know what perf_event_open allows them.
 */
#ifndef CTESTS_PERF_OPENS_H
#define CTESTS_PERF_OPENS_H

#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* 0 if the event opens (and is closed again), else errno. */
static inline int perf_opens(unsigned type, unsigned long long config)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = type;
	a.config = config;
	a.exclude_kernel = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

#endif
