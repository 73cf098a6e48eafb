/*
 * A saved trace: what a session handed over, as a file imc_trace_dump(1)
 * and papi_heritage_imc_trace_save() write and imc_trace_dump reads back.
 *
 * Layout, every integer a big-endian u64 (the records' own byte order):
 *   "IMCTRC01"                     magic, 8 bytes
 *   scom ldbar hz samples lost nrecords nmaps
 *   nmaps x { start len pgoff pathlen, then pathlen bytes of path }
 *   nrecords x 64-byte trace records, exactly as in the trace buffer
 * The records are read back through the kernel's walk (imc_trace_walk), so
 * a damaged file is cut at its first invalid record, never misread.
 */
#ifndef HERITAGE_IMC_TRACE_FILE_H
#define HERITAGE_IMC_TRACE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "imc/imc_trace.h"

#define IMC_TRACE_FILE_MAGIC "IMCTRC01"

struct imc_trace_file {
	uint64_t scom, ldbar, hz, samples, lost;
	unsigned nrecords;
	unsigned char *records;            /* nrecords * 64 bytes */
	struct imc_trace_map *maps;
	unsigned nmaps;
};

/* 0 or -errno with the message. */
int imc_trace_file_write(const char *path, const struct imc_trace_file *f);
/* -EINVAL (not a trace file, truncated: with where), -errno of the I/O. */
int imc_trace_file_read(const char *path, struct imc_trace_file *f);
/* The same from the file's bytes (name in messages): what the reader and
 * the fuzzer (fuzz/fuzz_imc_trace.c) call; never reads past len. */
int imc_trace_file_parse(const void *buf, size_t len, const char *name, struct imc_trace_file *f);
void imc_trace_file_free(struct imc_trace_file *f);

#endif
