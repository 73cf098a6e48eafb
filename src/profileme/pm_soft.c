/* Placeholder until the soft backend lands: it refuses to start. */
#include <errno.h>
#include <stdio.h>

#include "profileme/pm_collect.h"

static int stub_start(struct pm_thread *t, char *why, size_t len)
{
	(void)t;
	snprintf(why, len, "profileme: the soft backend is not built yet");
	return -ENOSYS;
}

const struct pm_backend_ops pm_soft_ops = {
	.unit = "ns",
	.default_period = 1000000,
	.min_period = 16,
	.start = stub_start,
};
