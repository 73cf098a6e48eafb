/*
 * One imc event set: add, start, stop, read, reset.  Plain C, no PAPI.
 */
#ifndef HERITAGE_IMC_SET_H
#define HERITAGE_IMC_SET_H

#include <stdint.h>

#define IMC_MAX_EVENTS 8

struct imc_set {
	unsigned nevents;
	unsigned codes[IMC_MAX_EVENTS];
	int running;
	uint64_t ns_at_start, ns_acc;
	long long values[IMC_MAX_EVENTS];
};

void imc_set_init(struct imc_set *s);
/* The complete event list; -ENOENT for a bad code, -ENOTSUP for an event
 * with no source here, -ENOSPC for too many, with the message. */
int imc_set_events(struct imc_set *s, const unsigned *codes, unsigned n);
int imc_set_start(struct imc_set *s);
int imc_set_stop(struct imc_set *s);
int imc_set_read(struct imc_set *s);
int imc_set_reset(struct imc_set *s);
/* 0 if something can count here, else -ENOTSUP with why. */
int imc_any_usable(char *why, unsigned len);

#endif
