/*
 * The built-in IMC catalog: the DTB that dtc compiles at build time from
 * src/imc/power9-imc.dts (written by src/imc/gen-imc-dts from the POWER9
 * facts), embedded as bytes in a generated source (Makefile.am, "imc
 * catalog").  imc_catalog_get() reads it when PAPI_HERITAGE_IMC_CATALOG
 * names no other catalog.  8-byte aligned, as libfdt wants a blob.
 */
#ifndef HERITAGE_IMC_BUILTIN_H
#define HERITAGE_IMC_BUILTIN_H

#include <stddef.h>

extern const unsigned char imc_builtin_dtb[];
extern const size_t imc_builtin_dtb_len;

#endif
