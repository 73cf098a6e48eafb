/* Placeholder until the ibs backend lands: it refuses to start. */
#include <errno.h>
#include <stdio.h>

#include "profileme/pm_collect.h"

static int stub_start(struct pm_thread *t, char *why, size_t len)
{
	(void)t;
	snprintf(why, len, "profileme: the ibs backend is not built yet");
	return -ENOSYS;
}

const struct pm_backend_ops pm_ibs_ops = {
	.unit = "ops",
	.default_period = 65536,
	.min_period = 16,
	.start = stub_start,
};
