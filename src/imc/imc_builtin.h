#ifndef HERITAGE_IMC_BUILTIN_H
#define HERITAGE_IMC_BUILTIN_H
#include <stddef.h>
extern const unsigned char imc_builtin_dtb[];
extern const size_t imc_builtin_dtb_len;
#endif
