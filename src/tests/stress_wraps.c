/*
 * stress_wraps (make stress): 10^6 wraps of every narrow counter the
 * components keep, through libheritage's own arithmetic, each against a
 * 64-bit truth computed here.  Live, 10^6 wraps are out of reach on this
 * machine: alpha21064's software backend single-steps at ~18 us an
 * instruction (10^6 wraps of its 8-bit counter: 2.6 x 10^8 loads, 80 min of
 * one core at the fastest), and the 32-bit Paragon registers rpmd extends
 * wrap every 85.9 s at 50 MHz.  imc's and rpm_time's counters are 64 bits
 * (2^64 at imc's 7.8 MHz nest rate: 75000 years); imc's mod-2^64 delta
 * through a wrap is test_imc_engine's.
 *
 *   alpha21064  alpha_counter_add (the hidden 16- and 12-bit registers,
 *               interrupts at widths 16, 12 and 12, 8): the interrupts
 *               raised must be exactly the carries of an unbounded count.
 *   paragon_rpm rpm_wrap_update (rpmd's 32-bit extension): the extended
 *               value must equal the truth at every reading, with steps up
 *               to just under a wrap.
 * Prints the wraps driven; exit 0 or 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "alpha/alpha_model.h"
#include "paragon/rpm_model.h"

#define WRAPS 1000000ULL

static uint64_t rng = 88172645463325252ULL;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int main(void)
{
	int bad = 0;
	static const struct { unsigned counter, width, reg_bits; } cases[] = {
		{ 0, 16, 16 }, { 0, 12, 16 }, { 1, 12, 12 }, { 1, 8, 12 },
	};
	for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct alpha_cpu cpu;
		memset(&cpu, 0, sizeof cpu);
		uint64_t total = 0, irqs = 0, calls = 0;
		unsigned c = cases[k].counter, w = cases[k].width, bits = cases[k].reg_bits;
		while (total >> bits < WRAPS) {
			/* Mostly small steps (one instruction's events), now and then
			 * several periods at once (a long step, a cycles burst). */
			uint64_t n = next() % 8 == 0 ? next() % (4ULL << bits) : next() % 5;
			irqs += alpha_counter_add(&cpu, c, w, n);
			total += n;
			calls++;
			if (irqs != total >> w) {
				printf("alpha21064 counter %u width %u: %llu interrupts after %llu events, want %llu\n", c, w,
				       (unsigned long long)irqs, (unsigned long long)total, (unsigned long long)(total >> w));
				bad = 1;
				break;
			}
		}
		printf("alpha21064 counter %u (%u-bit register), width %u: %llu register wraps, %llu interrupts, %llu "
		       "additions: exact\n",
		       c, bits, w, (unsigned long long)(total >> bits), (unsigned long long)irqs, (unsigned long long)calls);
	}
	struct rpm_wrap wr = { 0 };
	uint64_t truth = next() & 0xffffffffULL, reads = 0;
	rpm_wrap_update(&wr, (uint32_t)truth);
	uint64_t first = truth;
	while ((truth - first) >> 32 < WRAPS) {
		truth += next() % 8 == 0 ? next() % 0xffffffffULL : next() % 100000; /* < 2^32 a step */
		reads++;
		if (rpm_wrap_update(&wr, (uint32_t)truth) - first != truth - first) {
			printf("paragon_rpm 32-bit extension: %llu after %llu readings, want %llu\n",
			       (unsigned long long)(wr.value - first), (unsigned long long)reads,
			       (unsigned long long)(truth - first));
			bad = 1;
			break;
		}
	}
	printf("paragon_rpm 32-bit register (rpmd's extension): %llu wraps over %llu readings: exact\n",
	       (unsigned long long)((truth - first) >> 32), (unsigned long long)reads);
	printf("stress_wraps: %s\n", bad ? "FAILED" : "PASSED");
	return bad;
}
