/*
 * Access patterns with known cache behaviour, run under cachegrind and
 * under lackey by tests/cases/it2_cache_cachegrind.test (the same binary,
 * arguments and valgrind), whose lackey trace it2_cache_replay feeds to the
 * it2_cache model.  Deterministic: static arrays, no time, no randomness,
 * nothing read from the environment.
 *
 *   it2_cache_patterns stream       a 1 MiB array read sequentially, 4 passes, one
 *                                   8-byte load per 64-byte line (the misses of a
 *                                   full read, an eighth of its trace)
 *   it2_cache_patterns reuse        an 8 KiB array read whole (8-byte loads), 50 passes
 *   it2_cache_patterns conflict [STRIDE [LINES]]
 *                                   LINES (16) lines STRIDE (4096) bytes apart read in
 *                                   turn, 1000 rounds: with STRIDE a multiple of a
 *                                   cache's way size and more LINES than ways, they
 *                                   share one set
 *   it2_cache_patterns interleaved  two 16 KiB arrays read alternately element by
 *                                   element, 4 passes
 *   it2_cache_patterns straddle     8-byte loads across every 64-byte line boundary of
 *                                   64 KiB (4 bytes each side), 2 passes: each touches
 *                                   two lines
 *
 * Every load is a volatile read, so that it is one load instruction per
 * element and pass whatever the compiler sees (gcc -O1 folded two of
 * stream's identical passes into one otherwise).  It prints the pattern's
 * name, its number of loads and their sum.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIB 1024u

static uint64_t big[1024 * KIB / sizeof(uint64_t)] __attribute__((aligned(4096)));
static uint64_t small_a[16 * KIB / sizeof(uint64_t)] __attribute__((aligned(4096)));
static uint64_t small_b[16 * KIB / sizeof(uint64_t)] __attribute__((aligned(4096)));
static const volatile uint64_t *const vbig = big, *const va = small_a, *const vb = small_b;
/* An 8-byte load at any address (GNU C: alignment 1). */
typedef uint64_t u64_unaligned __attribute__((aligned(1), may_alias));

static void fill(uint64_t *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		a[i] = i;
}

static uint64_t stream(uint64_t *loads)
{
	const size_t n = sizeof big / sizeof big[0], step = 64 / sizeof big[0];
	uint64_t s = 0, c = 0;
	for (int pass = 0; pass < 4; pass++)
		for (size_t i = 0; i < n; i += step) {
			s += vbig[i];
			c++;
		}
	*loads = c;
	return s;
}

static uint64_t reuse(uint64_t *loads)
{
	const size_t n = 8 * KIB / sizeof big[0];
	uint64_t s = 0, c = 0;
	for (int pass = 0; pass < 50; pass++)
		for (size_t i = 0; i < n; i++) {
			s += vbig[i];
			c++;
		}
	*loads = c;
	return s;
}

static uint64_t conflict(size_t stride, size_t lines, uint64_t *loads)
{
	const size_t step = stride / sizeof big[0];
	uint64_t s = 0, c = 0;
	for (int round = 0; round < 1000; round++)
		for (size_t k = 0; k < lines; k++) {
			s += vbig[k * step];
			c++;
		}
	*loads = c;
	return s;
}

static uint64_t interleaved(uint64_t *loads)
{
	const size_t n = sizeof small_a / sizeof small_a[0];
	uint64_t s = 0, c = 0;
	for (int pass = 0; pass < 4; pass++)
		for (size_t i = 0; i < n; i++) {
			s += va[i];
			s += vb[i];
			c += 2;
		}
	*loads = c;
	return s;
}

static uint64_t straddle(uint64_t *loads)
{
	const unsigned char *p = (const unsigned char *)big;
	uint64_t s = 0, c = 0;
	for (int pass = 0; pass < 2; pass++)
		for (size_t off = 60; off + 8 <= 64 * KIB; off += 64) {
			s += *(const volatile u64_unaligned *)(p + off);
			c++;
		}
	*loads = c;
	return s;
}

int main(int argc, char **argv)
{
	uint64_t loads = 0, sum;
	const char *p = argc > 1 ? argv[1] : "";

	fill(big, sizeof big / sizeof big[0]);
	fill(small_a, sizeof small_a / sizeof small_a[0]);
	fill(small_b, sizeof small_b / sizeof small_b[0]);
	if (strcmp(p, "stream") == 0) {
		sum = stream(&loads);
	} else if (strcmp(p, "reuse") == 0) {
		sum = reuse(&loads);
	} else if (strcmp(p, "conflict") == 0) {
		size_t stride = argc > 2 ? strtoul(argv[2], NULL, 0) : 4096;
		size_t lines = argc > 3 ? strtoul(argv[3], NULL, 0) : 16;
		if (stride < sizeof big[0] || stride % sizeof big[0] != 0 || lines == 0 ||
		    (lines - 1) * stride >= sizeof big) {
			fprintf(stderr, "it2_cache_patterns: conflict: STRIDE a multiple of 8, "
			                "LINES >= 1, (LINES - 1) * STRIDE < %zu\n", sizeof big);
			return 2;
		}
		sum = conflict(stride, lines, &loads);
	} else if (strcmp(p, "interleaved") == 0) {
		sum = interleaved(&loads);
	} else if (strcmp(p, "straddle") == 0) {
		sum = straddle(&loads);
	} else {
		fprintf(stderr, "usage: it2_cache_patterns stream|reuse|conflict [STRIDE [LINES]]|interleaved|straddle\n");
		return 2;
	}
	printf("%s loads %" PRIu64 " sum %" PRIu64 "\n", p, loads, sum);
	return 0;
}
