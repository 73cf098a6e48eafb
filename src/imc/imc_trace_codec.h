/*
 * IMC trace mode, bit-exact: the LDBAR SPR, the TRACE_IMC_SCOM value, the
 * 64-byte trace record and the POWER9 timebase (doc/facilities.md §4(a)).
 *
 * IBM bit order: bit 0 is the most significant bit of the 64-bit register,
 * so IBM bits a:b sit at LSB bits 63-b .. 63-a.  The shifts below are
 * skiboot's (include/imc.h TRACE_IMC_*; kernel asm/imc-pmu.h for LDBAR).
 *
 * Every encoder refuses a field that does not fit, and every decoder a
 * value with reserved bits set, with -EINVAL and a message through
 * heritage_fail() naming the field: nothing is silently masked.
 */
#ifndef HERITAGE_IMC_TRACE_CODEC_H
#define HERITAGE_IMC_TRACE_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* ---- LDBAR ------------------------------------------------------------------
 * IBM  0     enable                    LSB 63
 * IBM  1     mode: 0 accumulate, 1 trace  LSB 62
 * IBM  2:3   reserved                  LSB 61:60
 * IBM  4:6   PowerBus scope            LSB 59:57
 * IBM  7     reserved                  LSB 56
 * IBM  8:50  counter address           LSB 55:13 (the address itself: 8 KiB aligned)
 * IBM 51:63  reserved                  LSB 12:0
 */
#define IMC_LDBAR_ENABLE 0x8000000000000000ull /* kernel THREAD_IMC_ENABLE */
#define IMC_LDBAR_TRACE 0x4000000000000000ull  /* kernel TRACE_IMC_ENABLE */
#define IMC_LDBAR_SCOPE_SHIFT 57
#define IMC_LDBAR_SCOPE_MASK 0x7ull
#define IMC_LDBAR_ADDR_MASK 0x00ffffffffffe000ull /* IBM 8:50 */
#define IMC_LDBAR_RESERVED 0x3100000000001fffull  /* IBM 2:3, 7, 51:63 */
/* What Linux keeps of the page address (asm/imc-pmu.h THREAD_IMC_LDBAR_MASK):
 * real addresses below 2^50, 8 KiB aligned. */
#define IMC_LDBAR_KERNEL_MASK 0x0003ffffffffe000ull
#define IMC_LDBAR_ALIGN 8192u

enum imc_ldbar_mode { IMC_LDBAR_ACCUMULATE = 0, IMC_LDBAR_TRACE_MODE = 1 };

struct imc_ldbar {
	unsigned enable;       /* 0/1 */
	enum imc_ldbar_mode mode;
	unsigned scope;        /* PowerBus scope, 0-7 */
	uint64_t addr;         /* counter (or trace buffer) address, 8 KiB aligned */
};

int imc_ldbar_encode(const struct imc_ldbar *f, uint64_t *value);
int imc_ldbar_decode(uint64_t value, struct imc_ldbar *f);
/* What the kernel writes (arch/powerpc/perf/imc-pmu.c): thread_imc_event_add
 * `(addr & THREAD_IMC_LDBAR_MASK) | THREAD_IMC_ENABLE`, trace_imc_event_add
 * `(addr & THREAD_IMC_LDBAR_MASK) | TRACE_IMC_ENABLE` -- for trace mode the
 * kernel sets bit 1 only, bit 0 stays 0 ("it is set to zero for imc
 * trace-mode", ppc_trace_imc_cpu_offline).  Bits of addr outside the mask
 * are dropped, as the kernel drops them. */
uint64_t imc_ldbar_kernel_thread(uint64_t addr);
uint64_t imc_ldbar_kernel_trace(uint64_t addr);

/* ---- TRACE_IMC_SCOM ---------------------------------------------------------
 * IBM  0:1   SAMPSEL     LSB 63:62  which CPMC's overflow samples (0 CPMC1, 1 CPMC2)
 * IBM  2:33  CPMC_LOAD   LSB 61:30  0xffffffff - N: N+1 events between samples
 * IBM 34:40  CPMC1SEL    LSB 29:23
 * IBM 41:47  CPMC2SEL    LSB 22:16  (2 = CPM_32MHZ_CYC)
 * IBM 48:50  BUFFERSIZE  LSB 15:13  0..4 = 4K..64K entries of 64 bytes
 * IBM 51:63  reserved    LSB 12:0
 */
#define IMC_SCOM_SAMPSEL_SHIFT 62
#define IMC_SCOM_LOAD_SHIFT 30
#define IMC_SCOM_CPMC1SEL_SHIFT 23
#define IMC_SCOM_CPMC2SEL_SHIFT 16
#define IMC_SCOM_BUFFERSIZE_SHIFT 13
#define IMC_SCOM_RESERVED 0x1fffull
#define IMC_SCOM_SEL_MAX 0x7f
#define IMC_SCOM_BUFFERSIZE_MAX 4
/* skiboot hw/imc.c, POWER9: SAMPSEL CPMC2, N 0xfa, CPMC1SEL 4, CPMC2SEL 2, 4K. */
#define IMC_SCOM_POWER9 0x7fffffc142020000ull
#define IMC_SAMPSEL_CPMC1 0
#define IMC_SAMPSEL_CPMC2 1
#define IMC_CPMC_32MHZ_CYC 2

struct imc_trace_scom {
	unsigned sampsel;      /* 0 (CPMC1) or 1 (CPMC2); 2, 3 are refused */
	uint32_t load;         /* N, as skiboot's IMC_TRACE_CPMCLOAD_VAL; the field holds 0xffffffff - N */
	unsigned cpmc1sel, cpmc2sel; /* 0-127 */
	unsigned buffersize;   /* 0-4 */
};

int imc_scom_encode(const struct imc_trace_scom *f, uint64_t *value);
int imc_scom_decode(uint64_t value, struct imc_trace_scom *f);
/* 4096 << code entries: 4K (code 0) .. 64K (code 4); 0 for a bad code. */
unsigned imc_scom_entries(unsigned buffersize);

/* ---- the trace record ------------------------------------------------------
 * 64 bytes, 8 big-endian doublewords (kernel asm/imc-pmu.h struct
 * trace_imc_data): DW0 timebase, DW1 program counter, DW2 PIDR information
 * with MSR[HV,PR] in bits 63:62 (ISA 3.1: 0 guest kernel, 1 guest user,
 * 2 hypervisor/host kernel, 3 user), DW3-DW6 CPMC1-CPMC4, DW7 the timebase
 * again, low 42 bits (kernel IMC_TRACE_RECORD_TB1_MASK). */
#define IMC_TRACE_RECORD_BYTES 64
#define IMC_TRACE_TB_MASK 0x3ffffffffffull
#define IMC_TRACE_MODE_SHIFT 62
#define IMC_TRACE_MODE_GUEST_KERNEL 0
#define IMC_TRACE_MODE_GUEST_USER 1
#define IMC_TRACE_MODE_HV_KERNEL 2
#define IMC_TRACE_MODE_USER 3

struct imc_trace_record {
	uint64_t timebase;     /* DW0 */
	uint64_t pc;           /* DW1 */
	uint64_t pidr;         /* DW2 whole: mode in 63:62, PIDR information below */
	uint64_t cpmc[4];      /* DW3-DW6 */
	uint64_t tb2;          /* DW7 */
};

static inline unsigned imc_trace_record_mode(const struct imc_trace_record *r)
{
	return (unsigned)(r->pidr >> IMC_TRACE_MODE_SHIFT);
}

/* Host order <-> the 64 bytes in memory.  pack fills tb2 from the
 * timebase; unpack takes every DW as stored. */
void imc_trace_record_pack(void *mem, const struct imc_trace_record *r);
void imc_trace_record_unpack(const void *mem, struct imc_trace_record *r);

/* ---- the timebase ---------------------------------------------------------
 * POWER9's timebase ticks at 512 MHz (doc/facilities.md §4(a) [U]; the
 * kernel's ppc_tb_freq on PowerNV P9 is 512000000).  Host nanoseconds
 * (CLOCK_MONOTONIC) become ticks as floor(ns * 512 / 1000) = floor(ns * 64
 * / 125), computed without overflowing 64 bits: (ns / 125) * 64 +
 * (ns % 125) * 64 / 125.  One tick is 1.953125 ns. */
#define IMC_TIMEBASE_HZ 512000000ull
uint64_t imc_tb_from_ns(uint64_t ns);
/* Inverse, floor: the nanosecond the tick starts at. */
uint64_t imc_tb_to_ns(uint64_t tb);

#endif
