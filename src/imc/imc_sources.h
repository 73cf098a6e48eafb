/* Placeholder until the accumulation engine's source table lands. */
#ifndef HERITAGE_IMC_SOURCES_H
#define HERITAGE_IMC_SOURCES_H
#include <stddef.h>
#include "common/heritage_source.h"
#include "imc/imc_catalog.h"
enum heritage_source imc_source_of(const struct imc_catalog *cat, unsigned entry, char *what, size_t len);
#endif
