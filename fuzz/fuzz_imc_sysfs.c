/*
 * The IMC perf PMUs' sysfs files as the perf backend reads them (imc_sysfs):
 * a cpumask/cpus list, a format/<field> spec, and an event's terms built
 * into perf_event_attr config words through a PMU's formats.
 *
 * Input: a selector byte; then for 0 a cpu list, for 1 a format spec, for
 * 2 lines "<name> <spec>" (the PMU's formats, those that parse), an empty
 * line, and the terms.
 */
#include <errno.h>

#include "fuzz.h"
#include "imc/imc_sysfs.h"

static void cpulist(const char *text)
{
	int *cpus = NULL;
	unsigned n = 0;
	if (imc_sysfs_parse_cpulist(text, "fuzz", &cpus, &n) == 0) {
		for (unsigned i = 0; i < n; i++) {
			FUZZ_CHECK(cpus[i] >= 0, "cpu %d", cpus[i]);
			FUZZ_CHECK(!i || cpus[i - 1] < cpus[i], "not ascending at %u: %d, %d", i, cpus[i - 1], cpus[i]);
		}
	}
	free(cpus);
}

static int format(const char *text, unsigned *word, uint64_t *mask)
{
	int rc = imc_sysfs_parse_format(text, "fuzz", word, mask);
	if (rc == 0)
		FUZZ_CHECK(*word < IMC_SYSFS_CONFIG_WORDS && *mask, "word %u mask %#llx", *word, (unsigned long long)*mask);
	return rc;
}

static void build(char *text)
{
	struct imc_sysfs_format f[16];
	struct imc_sysfs_pmu p = { .name = "fuzz_imc", .formats = f };
	char *terms = strstr(text, "\n\n");
	if (terms) {
		*terms = '\0';
		terms += 2;
	}
	for (char *line = text, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *sp = strchr(line, ' ');
		if (!sp || p.nformats == 16)
			continue;
		*sp = '\0';
		struct imc_sysfs_format *x = &f[p.nformats];
		x->name = line;
		x->spec = sp + 1;
		if (format(x->spec, &x->word, &x->mask) == 0)
			p.nformats++;
	}
	uint64_t config[IMC_SYSFS_CONFIG_WORDS];
	if (terms && imc_sysfs_build_config(&p, terms, "fuzz", config) == 0) {
		/* Only bits some format of the word owns, unless a whole word
		 * was given (config=...). */
		if (!strstr(terms, "config"))
			for (unsigned w = 0; w < IMC_SYSFS_CONFIG_WORDS; w++) {
				uint64_t owned = 0;
				for (unsigned i = 0; i < p.nformats; i++)
					if (f[i].word == w)
						owned |= f[i].mask;
				FUZZ_CHECK(!(config[w] & ~owned), "config%u %#llx outside the formats' %#llx", w,
				           (unsigned long long)config[w], (unsigned long long)owned);
			}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	char *text = fuzz_cstr(data + 1, size - 1);
	unsigned word;
	uint64_t mask;
	switch (data[0] % 3) {
	case 0: cpulist(text); break;
	case 1: format(text, &word, &mask); break;
	default: build(text); break;
	}
	free(text);
	return 0;
}
