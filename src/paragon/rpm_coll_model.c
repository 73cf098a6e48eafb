#include "paragon/rpm_coll_model.h"

int rpm_coll_model(enum rpm_coll op, unsigned me, unsigned n, unsigned root, void (*send)(void *arg, unsigned peer),
                   void *arg)
{
	int sent = 0;
	if (me >= n || (op != RPM_COLL_ALLTOALL && root >= n))
		return -1;
	switch (op) {
	case RPM_COLL_BCAST:
		if (me == root)
			for (unsigned p = 0; p < n; p++)
				if (p != me)
					send(arg, p), sent++;
		break;
	case RPM_COLL_GATHER:
		if (me != root)
			send(arg, root), sent++;
		break;
	case RPM_COLL_ALLREDUCE: /* Reduce to 0, then Bcast from 0 */
		sent = rpm_coll_model(RPM_COLL_GATHER, me, n, 0, send, arg);
		sent += rpm_coll_model(RPM_COLL_BCAST, me, n, 0, send, arg);
		break;
	case RPM_COLL_ALLTOALL:
		for (unsigned p = 0; p < n; p++)
			if (p != me)
				send(arg, p), sent++;
		break;
	default:
		return -1;
	}
	return sent;
}
