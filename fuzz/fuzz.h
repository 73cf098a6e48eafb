/*
 * What every fuzz target shares (fuzz/README in doc/papi-heritage.7,
 * "Fuzzing"): the input as a C string, and a check that aborts with a
 * message, so that a broken invariant is a crash libFuzzer keeps.
 * The targets are thin: the parsers and their invariants live in src/.
 */
#ifndef HERITAGE_FUZZ_H
#define HERITAGE_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* data[0..size) as a NUL-terminated string (a NUL inside ends it early, as
 * it would for any caller that got the text from C). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

#define FUZZ_CHECK(cond, ...)                                                          \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "%s:%d: invariant broken: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                  \
			fputc('\n', stderr);                                           \
			abort();                                                       \
		}                                                                      \
	} while (0)

#endif
