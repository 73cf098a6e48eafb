#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/heritage_backend.h"

int heritage_backend_find(const struct heritage_backend *table, unsigned n, const char *name)
{
	for (unsigned i = 0; name && i < n; i++)
		if (strcasecmp(name, table[i].name) == 0)
			return (int)i;
	return -1;
}

int heritage_backend_usable(const struct heritage_backend *b, char *why, size_t len)
{
	int refused = -1;

	/* A dead or absent mechanism is the reason before a refused one: no
	 * privilege would bring the backend back (under a seccomp profile the
	 * alpha21064 PMU backend's sampling is refused, but on a machine whose
	 * PMU is switched off or missing that is not what stands in the way). */
	for (int m = 0; m < HERITAGE_NMECHS; m++) {
		if (!(b->needs & HERITAGE_MECH_BIT(m)) || heritage_probe_works((enum heritage_mech)m))
			continue;
		if (heritage_probe((enum heritage_mech)m)->refused) {
			if (refused < 0)
				refused = m;
			continue;
		}
		return heritage_probe_explain((enum heritage_mech)m, why, len);
	}
	return refused < 0 ? 0 : heritage_probe_explain((enum heritage_mech)refused, why, len);
}

static void append(char *buf, size_t len, const char *name, const char *why)
{
	size_t used = strlen(buf);
	if (used < len)
		snprintf(buf + used, len - used, "%s%s: %s", used ? "; " : "", name, why);
}

int heritage_backend_choose(const struct heritage_backend *table, unsigned n, int forced, unsigned from,
                            heritage_fits_fn fits, const void *req, unsigned *out, char *why, size_t len)
{
	char reason[512];
	int err;

	if (forced >= 0) {
		if ((unsigned)forced >= n) {
			snprintf(why, len, "no such backend");
			return -EINVAL;
		}
		err = heritage_backend_usable(&table[forced], reason, sizeof reason);
		if (err) {
			snprintf(why, len, "backend %s cannot count here: %s (papi_heritage_avail --mechanisms)",
			         table[forced].name, reason);
			return err;
		}
		err = fits ? fits(&table[forced], req, why, len) : 0;
		if (err == 0)
			*out = (unsigned)forced;
		return err;
	}

	int refused = 0, last = -ENOTSUP;
	why[0] = '\0';
	for (unsigned i = from; i < n; i++) {
		reason[0] = '\0';
		/* Mechanisms first: a fit may have to prepare (open events),
		 * which a dead mechanism must not be asked to do. */
		err = heritage_backend_usable(&table[i], reason, sizeof reason);
		if (err == 0 && fits) {
			err = fits(&table[i], req, reason, sizeof reason);
			/* A bad request is bad for every backend: say that, not
			 * the last backend's limit. */
			if (err == -EINVAL) {
				snprintf(why, len, "%s", reason);
				return err;
			}
		}
		if (err == 0) {
			*out = i;
			return 0;
		}
		refused |= err == -EPERM || err == -EACCES;
		last = err;
		append(why, len, table[i].name, reason);
	}
	if (!why[0])
		snprintf(why, len, "no backend left to try");
	return refused && last != -EINVAL ? -EPERM : last;
}

unsigned heritage_backend_needs_any(const struct heritage_backend *table, unsigned n)
{
	unsigned all = 0;
	for (unsigned i = 0; i < n; i++)
		all |= table[i].needs;
	return all;
}

int heritage_backend_any_usable(const struct heritage_backend *table, unsigned n, char *why, size_t len)
{
	char reason[512];
	int err = -ENOTSUP;

	why[0] = '\0';
	for (unsigned i = n; i-- > 0;) {
		err = heritage_backend_usable(&table[i], reason, sizeof reason);
		if (err == 0)
			return 0;
		append(why, len, table[i].name, reason);
	}
	return err;
}

static const char *verdict(enum heritage_mech m)
{
	const struct heritage_probe_result *r = heritage_probe(m);
	return r->refused ? "refused" : heritage_probe_state_name(r->state);
}

void heritage_backend_limits(const struct heritage_backend *table, unsigned n, char *buf, size_t len)
{
	buf[0] = '\0';
	for (unsigned i = 0; i < n; i++) {
		for (int m = 0; m < HERITAGE_NMECHS; m++) {
			if (!(table[i].needs & HERITAGE_MECH_BIT(m)) || heritage_probe_works((enum heritage_mech)m))
				continue;
			size_t used = strlen(buf);
			if (used < len)
				snprintf(buf + used, len - used, "%sno %s backend (%s %s)", used ? ", " : "", table[i].name,
				         heritage_mech_name((enum heritage_mech)m), verdict((enum heritage_mech)m));
			break;
		}
	}
}

void heritage_mechs_limits(unsigned mechs, char *buf, size_t len)
{
	buf[0] = '\0';
	for (int m = 0; m < HERITAGE_NMECHS; m++) {
		if (!(mechs & HERITAGE_MECH_BIT(m)) || heritage_probe_works((enum heritage_mech)m))
			continue;
		size_t used = strlen(buf);
		if (used < len)
			snprintf(buf + used, len - used, "%s%s %s", used ? ", " : "", heritage_mech_name((enum heritage_mech)m),
			         verdict((enum heritage_mech)m));
	}
}
