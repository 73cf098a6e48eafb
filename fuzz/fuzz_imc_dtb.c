/*
 * The IMC catalog from a device-tree blob (imc_catalog_from_dtb: libfdt's
 * checks, then the catalog's own), as PAPI_HERITAGE_IMC_CATALOG may name
 * any file.  Invariants of a catalog read: every entry's unit and event
 * indices are in range, its value is unit reg + event reg, and its name is
 * found again by imc_catalog_find.
 */
#include "fuzz_imc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* libfdt wants the blob 8-byte aligned, as a file read into memory is. */
	void *blob = malloc(size ? size : 1);
	if (!blob)
		abort();
	memcpy(blob, data, size);
	struct imc_catalog *cat = NULL;
	if (imc_catalog_from_dtb(blob, size, "fuzz.dtb", &cat) == 0) {
		fuzz_imc_check_catalog(cat);
		imc_catalog_free(cat);
	}
	free(blob);
	return 0;
}
