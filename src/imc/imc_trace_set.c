/*
 * trace_cycles for an event set (imc_trace_set.h).
 */
#include <errno.h>
#include <string.h>

#include "common/heritage_error.h"
#include "imc/imc_trace_set.h"

int imc_trace_set_init(struct imc_trace_set *t)
{
	memset(t, 0, sizeof *t);
	return imc_trace_config_default(&t->cfg);
}

int imc_trace_set_overflow(struct imc_trace_set *t, long long threshold, imc_trace_record_fn deliver, void *arg)
{
	if (t->s)
		return heritage_fail(-EBUSY, "imc trace: the set is running; set overflow before PAPI_start");
	if (threshold == 0) {
		int err = imc_trace_config_default(&t->cfg);
		if (err)
			return err;
		t->threshold = 0;
		t->deliver = NULL;
		t->arg = NULL;
		return 0;
	}
	int err = imc_trace_config_threshold(&t->cfg, threshold);
	if (err)
		return err;
	t->threshold = threshold;
	t->deliver = deliver;
	t->arg = arg;
	return 0;
}

int imc_trace_set_start(struct imc_trace_set *t)
{
	if (t->s)
		return heritage_fail(-EBUSY, "imc trace: the set is running");
	t->cycles = t->records = t->lost = 0;
	t->last_cpmc2 = 0;
	t->cfg.pid = 0;
	t->cfg.enable_on_exec = 0;
	t->cfg.want_maps = 0;
	return imc_trace_start(&t->s, &t->cfg);
}

static int account(const struct imc_trace_record *r, void *arg)
{
	struct imc_trace_set *t = arg;
	uint32_t c2 = (uint32_t)r->cpmc[1];
	t->cycles += (uint32_t)(c2 - t->last_cpmc2);
	t->last_cpmc2 = c2;
	t->records++;
	if (t->deliver)
		t->deliver(r, t->arg);
	return 0;
}

static int hand_over(struct imc_trace_set *t, long long *value)
{
	struct imc_trace_walk w;
	int err = imc_trace_take(t->s, account, t, &w);
	t->lost += w.lost;
	if (value)
		*value = (long long)t->cycles;
	return err;
}

int imc_trace_set_read(struct imc_trace_set *t, long long *value)
{
	if (!t->s)
		return heritage_fail(-EINVAL, "imc trace: the set is not running");
	return hand_over(t, value);
}

int imc_trace_set_stop(struct imc_trace_set *t, long long *value)
{
	if (!t->s)
		return heritage_fail(-EINVAL, "imc trace: the set is not running");
	int err = imc_trace_stop(t->s);
	if (!err)
		err = hand_over(t, value);
	imc_trace_free(t->s);
	t->s = NULL;
	return err;
}

int imc_trace_set_reset(struct imc_trace_set *t)
{
	if (t->s) {
		int err = hand_over(t, NULL);
		if (err)
			return err;
	}
	t->cycles = 0;
	return 0;
}
