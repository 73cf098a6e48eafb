/*
 * pmdaheritage: the heritage metrics (src/pcp/hm_metrics.h) as a PCP
 * daemon PMDA (pmdaheritage(1)).  Glue only: the table, the sources and the
 * values are libheritage's; this file maps them to PCP's descriptors,
 * instance domains and fetch results.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pcp/pmapi.h>
#include <pcp/pmda.h>

#include "common/heritage_env.h"
#include "common/heritage_error.h"
#include "pcp/hm_metrics.h"
#include "domain.h"

static struct hm_state *state;
static pmdaMetric *metrictab;
/* it_indom holds the serial until pmdaInit makes it the domain's indom. */
static pmdaIndom indomtab[HM_NINDOMS] = {
	[HM_INDOM_CPU] = { .it_indom = HM_INDOM_CPU },
	[HM_INDOM_NEST] = { .it_indom = HM_INDOM_NEST },
	[HM_INDOM_ROUTER] = { .it_indom = HM_INDOM_ROUTER },
};
static pmdaInstid *instids[HM_NINDOMS];

static const int sem_of[] = {
	[HM_SEM_COUNTER] = PM_SEM_COUNTER,
	[HM_SEM_INSTANT] = PM_SEM_INSTANT,
	[HM_SEM_DISCRETE] = PM_SEM_DISCRETE,
};
static const int type_of[] = {
	[HM_TYPE_U64] = PM_TYPE_U64,
	[HM_TYPE_U32] = PM_TYPE_U32,
	[HM_TYPE_STRING] = PM_TYPE_STRING,
};
static const pmUnits units_of[] = {
	[HM_UNITS_NONE] = PMDA_PMUNITS(0, 0, 0, 0, 0, 0),
	[HM_UNITS_COUNT] = PMDA_PMUNITS(0, 0, 1, 0, 0, PM_COUNT_ONE),
	[HM_UNITS_BYTE] = PMDA_PMUNITS(1, 0, 0, PM_SPACE_BYTE, 0, 0),
	[HM_UNITS_NSEC] = PMDA_PMUNITS(0, 1, 0, 0, PM_TIME_NSEC, 0),
};

/* The sources as they are now, and the instance domains that go with them:
 * before every fetch and instance request (a daemon may have started,
 * stopped or been restarted since). */
static int refresh(void)
{
	hm_refresh(state);
	for (int d = 0; d < HM_NINDOMS; d++) {
		unsigned n;
		const struct hm_inst *in = hm_instances(state, (enum hm_indom)d, &n);
		pmdaInstid *ids = realloc(instids[d], (n ? n : 1) * sizeof *ids);
		if (!ids)
			return -ENOMEM;
		for (unsigned i = 0; i < n; i++) {
			ids[i].i_inst = in[i].id;
			ids[i].i_name = (char *)in[i].name;
		}
		instids[d] = ids;
		indomtab[d].it_set = ids;
		indomtab[d].it_numinst = (int)n;
	}
	return 0;
}

static int heritage_fetch(int numpmid, pmID pmidlist[], pmResult **resp, pmdaExt *pmda)
{
	int e = refresh();
	return e ? e : pmdaFetch(numpmid, pmidlist, resp, pmda);
}

static int heritage_instance(pmInDom indom, int inst, char *name, pmInResult **result, pmdaExt *pmda)
{
	int e = refresh();
	return e ? e : pmdaInstance(indom, inst, name, result, pmda);
}

static int heritage_fetch_cb(pmdaMetric *mdesc, unsigned int inst, pmAtomValue *atom)
{
	const struct hm_metric *m = mdesc->m_user;
	union hm_value v;
	switch (hm_value(state, m, m->indom == HM_INDOM_NULL ? -1 : (int)inst, &v)) {
	case 0:
		break;
	case -EAGAIN: /* the daemon is not running, the object is absent */
		return PM_ERR_AGAIN;
	case -ENODATA: /* the source runs but cannot give this one */
		return PMDA_FETCH_NOVALUES;
	case -ENOENT:
		return PM_ERR_INST;
	default:
		return PM_ERR_VALUE;
	}
	switch (m->type) {
	case HM_TYPE_U64:
		atom->ull = v.u64;
		break;
	case HM_TYPE_U32:
		atom->ul = v.u32;
		break;
	case HM_TYPE_STRING:
		atom->cp = (char *)v.str;
		break;
	}
	return PMDA_FETCH_STATIC;
}

static void heritage_init(pmdaInterface *dp)
{
	if (dp->status != 0)
		return;
	/* Its sources' names come from these components' variables. */
	if (heritage_env_check("paragon_rpm") != 0 || heritage_env_check("imc") != 0) {
		pmNotifyErr(LOG_ERR, "pmdaheritage: %s", heritage_last_error());
		dp->status = -EINVAL;
		return;
	}
	metrictab = calloc(hm_nmetrics, sizeof *metrictab);
	if (!metrictab || hm_open(&state) != 0) {
		pmNotifyErr(LOG_ERR, "pmdaheritage: out of memory");
		dp->status = -ENOMEM;
		return;
	}
	for (unsigned i = 0; i < hm_nmetrics; i++) {
		const struct hm_metric *m = &hm_metrics[i];
		metrictab[i] = (pmdaMetric){
			.m_user = (void *)m,
			.m_desc = { .pmid = PMDA_PMID(m->cluster, m->item), .type = type_of[m->type],
			            .indom = m->indom == HM_INDOM_NULL ? PM_INDOM_NULL : (pmInDom)m->indom,
			            .sem = sem_of[m->sem], .units = units_of[m->units] },
		};
	}
	dp->version.seven.fetch = heritage_fetch;
	dp->version.seven.instance = heritage_instance;
	pmdaSetFetchCallBack(dp, heritage_fetch_cb);
	pmdaInit(dp, indomtab, HM_NINDOMS, metrictab, (int)hm_nmetrics);
}

static pmLongOptions longopts[] = {
	PMDA_OPTIONS_HEADER("Options"),
	PMOPT_DEBUG,
	PMDAOPT_DOMAIN,
	PMDAOPT_LOGFILE,
	PMDAOPT_USERNAME,
	PMDAOPT_HELPTEXT,
	PMOPT_HELP,
	PMDA_OPTIONS_END
};

static pmdaOptions opts = {
	.short_options = "D:d:h:l:U:?",
	.long_options = longopts,
};

int main(int argc, char **argv)
{
	pmdaInterface dispatch;
	char helppath[MAXPATHLEN];
	int sep = pmPathSeparator();

	pmSetProgname(argv[0]);
	snprintf(helppath, sizeof helppath, "%s%c" "heritage" "%c" "help", pmGetConfig("PCP_PMDAS_DIR"), sep, sep);
	pmdaDaemon(&dispatch, PMDA_INTERFACE_7, pmGetProgname(), HERITAGE, "heritage.log", helppath);
	pmdaGetOptions(argc, argv, &opts, &dispatch);
	if (opts.errors || opts.optind != argc) {
		pmdaUsageMessage(&opts);
		exit(1);
	}
	pmdaOpenLog(&dispatch);
	/* Every source is readable by any account (rpmd's page 0444, imcd's
	 * 0644, the mesh 0666): run as PCP's unprivileged user, as PMDAs do,
	 * when started as root (by pmcd); else as the account that runs it. */
	if (geteuid() == 0) {
		const char *user = opts.username ? opts.username : pmGetOptionalConfig("PCP_USER");
		pmSetProcessIdentity(user ? user : "pcp");
	}
	heritage_init(&dispatch);
	pmdaConnect(&dispatch);
	pmdaMain(&dispatch);
	exit(0);
}
