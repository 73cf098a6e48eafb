/*
 * IMC trace mode codecs (imc_trace_codec.h): LDBAR, TRACE_IMC_SCOM, the
 * 64-byte record, the timebase.  Layouts: the kernel's IMC document
 * (Documentation/powerpc/imc.rst) and skiboot include/imc.h,
 * doc/facilities.md §4(a).
 */
#include <errno.h>
#include <string.h>

#include "common/heritage_error.h"
#include "imc/imc_trace_codec.h"

/* ---- LDBAR ---------------------------------------------------------------- */

int imc_ldbar_encode(const struct imc_ldbar *f, uint64_t *value)
{
	if (f->enable > 1)
		return heritage_fail(-EINVAL, "LDBAR enable (IBM bit 0) is one bit: %u", f->enable);
	if ((unsigned)f->mode > 1)
		return heritage_fail(-EINVAL, "LDBAR mode (IBM bit 1) is 0 (accumulate) or 1 (trace): %u",
		                     (unsigned)f->mode);
	if (f->scope > IMC_LDBAR_SCOPE_MASK)
		return heritage_fail(-EINVAL, "LDBAR PowerBus scope (IBM bits 4:6) is 0-7: %u", f->scope);
	if (f->addr & ~IMC_LDBAR_ADDR_MASK)
		return heritage_fail(-EINVAL, "LDBAR counter address 0x%llx does not fit IBM bits 8:50: it must be "
		                     "8 KiB aligned and below 2^56", (unsigned long long)f->addr);
	*value = (f->enable ? IMC_LDBAR_ENABLE : 0) | (f->mode ? IMC_LDBAR_TRACE : 0) |
	         ((uint64_t)f->scope << IMC_LDBAR_SCOPE_SHIFT) | f->addr;
	return 0;
}

int imc_ldbar_decode(uint64_t value, struct imc_ldbar *f)
{
	if (value & IMC_LDBAR_RESERVED)
		return heritage_fail(-EINVAL, "LDBAR 0x%016llx sets reserved bits (IBM 2:3, 7, 51:63): 0x%016llx",
		                     (unsigned long long)value, (unsigned long long)(value & IMC_LDBAR_RESERVED));
	f->enable = (value & IMC_LDBAR_ENABLE) != 0;
	f->mode = (value & IMC_LDBAR_TRACE) ? IMC_LDBAR_TRACE_MODE : IMC_LDBAR_ACCUMULATE;
	f->scope = (unsigned)((value >> IMC_LDBAR_SCOPE_SHIFT) & IMC_LDBAR_SCOPE_MASK);
	f->addr = value & IMC_LDBAR_ADDR_MASK;
	return 0;
}

uint64_t imc_ldbar_kernel_thread(uint64_t addr)
{
	return (addr & IMC_LDBAR_KERNEL_MASK) | IMC_LDBAR_ENABLE;
}

uint64_t imc_ldbar_kernel_trace(uint64_t addr)
{
	return (addr & IMC_LDBAR_KERNEL_MASK) | IMC_LDBAR_TRACE;
}

/* ---- TRACE_IMC_SCOM ------------------------------------------------------- */

int imc_scom_encode(const struct imc_trace_scom *f, uint64_t *value)
{
	if (f->sampsel > IMC_SAMPSEL_CPMC2)
		return heritage_fail(-EINVAL, "TRACE_IMC_SCOM SAMPSEL (IBM 0:1) is 0 (CPMC1) or 1 (CPMC2): %u",
		                     f->sampsel);
	if (f->cpmc1sel > IMC_SCOM_SEL_MAX)
		return heritage_fail(-EINVAL, "TRACE_IMC_SCOM CPMC1SEL (IBM 34:40) is 7 bits: %u", f->cpmc1sel);
	if (f->cpmc2sel > IMC_SCOM_SEL_MAX)
		return heritage_fail(-EINVAL, "TRACE_IMC_SCOM CPMC2SEL (IBM 41:47) is 7 bits: %u", f->cpmc2sel);
	if (f->buffersize > IMC_SCOM_BUFFERSIZE_MAX)
		return heritage_fail(-EINVAL, "TRACE_IMC_SCOM BUFFERSIZE (IBM 48:50) is 0-4 (4K-64K entries): %u",
		                     f->buffersize);
	/* skiboot TRACE_IMC_CPMC_LOAD(x): (0xffffffff - x) << 30. */
	*value = ((uint64_t)f->sampsel << IMC_SCOM_SAMPSEL_SHIFT) |
	         ((0xffffffffull - f->load) << IMC_SCOM_LOAD_SHIFT) |
	         ((uint64_t)f->cpmc1sel << IMC_SCOM_CPMC1SEL_SHIFT) |
	         ((uint64_t)f->cpmc2sel << IMC_SCOM_CPMC2SEL_SHIFT) |
	         ((uint64_t)f->buffersize << IMC_SCOM_BUFFERSIZE_SHIFT);
	return 0;
}

int imc_scom_decode(uint64_t value, struct imc_trace_scom *f)
{
	if (value & IMC_SCOM_RESERVED)
		return heritage_fail(-EINVAL, "TRACE_IMC_SCOM 0x%016llx sets reserved bits (IBM 51:63): 0x%llx",
		                     (unsigned long long)value, (unsigned long long)(value & IMC_SCOM_RESERVED));
	unsigned sampsel = (unsigned)(value >> IMC_SCOM_SAMPSEL_SHIFT);
	unsigned bs = (unsigned)((value >> IMC_SCOM_BUFFERSIZE_SHIFT) & 0x7);
	if (sampsel > IMC_SAMPSEL_CPMC2)
		return heritage_fail(-EINVAL, "TRACE_IMC_SCOM 0x%016llx: SAMPSEL %u selects no counter (0 CPMC1, 1 CPMC2)",
		                     (unsigned long long)value, sampsel);
	if (bs > IMC_SCOM_BUFFERSIZE_MAX)
		return heritage_fail(-EINVAL, "TRACE_IMC_SCOM 0x%016llx: BUFFERSIZE %u is not 0-4 (4K-64K entries)",
		                     (unsigned long long)value, bs);
	f->sampsel = sampsel;
	f->load = (uint32_t)(0xffffffffu - (uint32_t)((value >> IMC_SCOM_LOAD_SHIFT) & 0xffffffffu));
	f->cpmc1sel = (unsigned)((value >> IMC_SCOM_CPMC1SEL_SHIFT) & IMC_SCOM_SEL_MAX);
	f->cpmc2sel = (unsigned)((value >> IMC_SCOM_CPMC2SEL_SHIFT) & IMC_SCOM_SEL_MAX);
	f->buffersize = bs;
	return 0;
}

unsigned imc_scom_entries(unsigned buffersize)
{
	return buffersize <= IMC_SCOM_BUFFERSIZE_MAX ? 4096u << buffersize : 0;
}

/* ---- the record ------------------------------------------------------------ */

static void put_be64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

static uint64_t get_be64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

void imc_trace_record_pack(void *mem, const struct imc_trace_record *r)
{
	unsigned char *p = mem;
	put_be64(p + 8, r->pc);
	put_be64(p + 16, r->pidr);
	for (int i = 0; i < 4; i++)
		put_be64(p + 24 + 8 * i, r->cpmc[i]);
	put_be64(p + 56, r->timebase & IMC_TRACE_TB_MASK);
	/* DW0 last: a reader that sees it sees a whole record (the writer's
	 * caller orders the stores against readers). */
	put_be64(p, r->timebase);
}

void imc_trace_record_unpack(const void *mem, struct imc_trace_record *r)
{
	const unsigned char *p = mem;
	r->timebase = get_be64(p);
	r->pc = get_be64(p + 8);
	r->pidr = get_be64(p + 16);
	for (int i = 0; i < 4; i++)
		r->cpmc[i] = get_be64(p + 24 + 8 * i);
	r->tb2 = get_be64(p + 56);
}

/* ---- the timebase ------------------------------------------------------------ */

uint64_t imc_tb_from_ns(uint64_t ns)
{
	return ns / 125 * 64 + ns % 125 * 64 / 125;
}

uint64_t imc_tb_to_ns(uint64_t tb)
{
	return tb / 64 * 125 + tb % 64 * 125 / 64;
}
