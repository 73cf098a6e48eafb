/*
 * range_errors: every way PAPI_set_opt(PAPI_DATA_ADDRESS / PAPI_INSTR_ADDRESS)
 * and the itanium2 event sets must refuse bad input - with the PAPI error code
 * an experienced PAPI user expects and a message from papi_heritage_last_error()
 * - and the range semantics around them: kept per event set, dropped by
 * PAPI_cleanup_eventset, usable before or after the events are added.
 * Built with the instrument flags, so the counts it checks are exact.
 */
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heritage_test.h"
#include "knob.h"

#define N 4096

static int cidx;

#define EXPECT_CODE(what, call, want)                                                            \
	do {                                                                                     \
		int rc_ = (call);                                                                \
		if (rc_ != (want)) {                                                             \
			fprintf(stderr, "%s:%d: %s: %s returned %d (%s), want %d (%s)\n", __FILE__, \
			        __LINE__, what, #call, rc_, PAPI_strerror(rc_), want,            \
			        PAPI_strerror(want));                                            \
			heritage_test_failures++;                                        \
		} else if ((want) != PAPI_OK && (want) != PAPI_ENOCMP && (want) != PAPI_EISRUN && \
		           papi_heritage_last_error()[0] == '\0') {                              \
			fprintf(stderr, "%s:%d: %s: no message from papi_heritage_last_error()\n", \
			        __FILE__, __LINE__, what);                                       \
			heritage_test_failures++;                                        \
		}                                                                                \
	} while (0)

__attribute__((noinline)) static void touch(int *a, int n)
{
	for (int i = 0; i < n; i++)
		a[i] = i;
	long s = 0;
	for (int i = 0; i < n; i++)
		s += a[i];
	__asm__ volatile("" : : "r"(s));
}

__attribute__((noinline)) static void store_packed(void *p, int n)
{
	struct __attribute__((packed)) packed_int { char c; int x; } *pk = p;
	for (int i = 0; i < n; i++)
		pk[i].x = i;
}

static int new_set(void)
{
	int set = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_assign_eventset_component(set, cidx));
	return set;
}

struct seg_probe {
	uintptr_t code, data_start, data_end;
};

static int find_writable_segment(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct seg_probe *p = arg;
	int mine = 0;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		mine |= ph->p_type == PT_LOAD && p->code >= a && p->code < a + ph->p_memsz;
	}
	for (int i = 0; mine && i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
			p->data_start = info->dlpi_addr + ph->p_vaddr;
			p->data_end = p->data_start + ph->p_memsz;
		}
	}
	return mine;
}

int main(void)
{
	PAPI_option_t opt;
	long long v[2];
	int *a = malloc(N * sizeof(int)), *b = malloc(N * sizeof(int));

	/* Exact mode: the counts below are about the requested bytes only, not
	 * the neighbours an Itanium 2 cover would add (data_range checks those). */
	knob_set("PAPI_HERITAGE_ITANIUM2_MODE", "exact");
	const char *env = getenv("PAPI_HERITAGE_ITANIUM2_BACKEND");
	char *forced_backend = env ? strdup(env) : NULL;
	heritage_test_init();
	cidx = PAPI_get_component_index("itanium2");

	/* Not bound to a component yet: PAPI itself answers ENOCMP. */
	int set = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&set));
	EXPECT_CODE("unbound set", heritage_test_range(set, PAPI_DATA_ADDRESS, a, a + N, &opt), PAPI_ENOCMP);
	CHECK_PAPI(PAPI_destroy_eventset(&set));

	set = new_set();
	EXPECT_CODE("start == end", heritage_test_range(set, PAPI_DATA_ADDRESS, a, a, &opt), PAPI_EINVAL);
	EXPECT_CODE("start > end", heritage_test_range(set, PAPI_DATA_ADDRESS, a + N, a, &opt), PAPI_EINVAL);
	EXPECT_CODE("instr start > end", heritage_test_range(set, PAPI_INSTR_ADDRESS, a + N, a, &opt), PAPI_EINVAL);

	long page = sysconf(_SC_PAGESIZE);
	char *gone = mmap(NULL, 4 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(gone, 4 * (size_t)page);
	EXPECT_CODE("unmapped range", heritage_test_range(set, PAPI_DATA_ADDRESS, gone, gone + page, &opt), PAPI_EINVAL);

	struct seg_probe probe = { (uintptr_t)&PAPI_start, 0, 0 };
	dl_iterate_phdr(find_writable_segment, &probe);
	char *papi_code = (char *)(uintptr_t)&PAPI_start;
	EXPECT_CODE("PAPI's code", heritage_test_range(set, PAPI_INSTR_ADDRESS, papi_code, papi_code + 64, &opt), PAPI_EINVAL);
	EXPECT_CODE("PAPI's code as data", heritage_test_range(set, PAPI_DATA_ADDRESS, papi_code, papi_code + 64, &opt), PAPI_EINVAL);
	if (probe.data_end > probe.data_start)
		EXPECT_CODE("PAPI's data",
		            heritage_test_range(set, PAPI_DATA_ADDRESS, (void *)probe.data_start, (void *)(probe.data_start + 8), &opt),
		            PAPI_EINVAL);
	else
		EXPECT_EQ("found libpapi's data segment", 0, 1);

	/* Offsets are written back even on error, as 0. */
	EXPECT_EQ("start_off after error", opt.addr.start_off, 0);

	/* Event names. */
	EXPECT_CODE("unknown event", PAPI_add_named_event(set, "itanium2:::NO_SUCH_EVENT"), PAPI_ENOEVNT);
	EXPECT_CODE("bad qualifier value", PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED:exact=2"), PAPI_EINVAL);
	EXPECT_CODE("unknown qualifier", PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED:cpu=0"), PAPI_EINVAL);
	/* An Itanium 2 event with no source here: refused with what it would need. */
	EXPECT_CODE("unavailable event", PAPI_add_named_event(set, "itanium2:::BACK_END_BUBBLE_ALL"), PAPI_ENOSUPP);
	EXPECT_EQ("the reason names the event and the pipeline",
	          strstr(papi_heritage_last_error(), "BACK_END_BUBBLE_ALL") != NULL &&
	                  strstr(papi_heritage_last_error(), "pipeline") != NULL,
	          1);
	EXPECT_CODE("unavailable ALAT event", PAPI_add_named_event(set, "itanium2:::ALAT_CAPACITY_MISS_ALL"), PAPI_ENOSUPP);
	int nev = PAPI_num_events(set);
	EXPECT_EQ("refused events left the set empty", nev, 0);

	/* A running set cannot change its range. */
	CHECK_PAPI(heritage_test_range(set, PAPI_DATA_ADDRESS, a, a + N, &opt));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED"));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::STORES_RETIRED"));
	CHECK_PAPI(PAPI_start(set));
	EXPECT_CODE("running set", heritage_test_range(set, PAPI_DATA_ADDRESS, b, b + N, &opt), PAPI_EISRUN);
	touch(a, N);
	touch(b, N);
	CHECK_PAPI(PAPI_stop(set, v));
	EXPECT_EQ("loads in range (b untouched by the range)", v[0], N);
	EXPECT_EQ("stores in range", v[1], N);

	/* Mode conflicts: the range was mapped exact (PAPI_HERITAGE_ITANIUM2_MODE). */
	EXPECT_CODE("coarse event into an exact-mapped set",
	            PAPI_add_named_event(set, "itanium2:::MISALIGNED_LOADS_RETIRED:exact=0"), PAPI_ECNFLCT);
	EXPECT_CODE("CPU_CYCLES into a range set", PAPI_add_named_event(set, "itanium2:::CPU_CYCLES"), PAPI_ECNFLCT);

	/* Cleanup drops the range: the same set, rebound, counts every access
	 * (instrument), or is refused at start by a backend that cannot see
	 * every access. */
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_assign_eventset_component(set, cidx));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED"));
	if (forced_backend && strcmp(forced_backend, "instrument") != 0) {
		EXPECT_CODE("no range on a trap backend", PAPI_start(set), PAPI_ENOSUPP);
	} else {
		CHECK_PAPI(PAPI_start(set));
		touch(a, N);
		touch(b, N);
		CHECK_PAPI(PAPI_stop(set, v));
		if (v[0] < 2 * N) {
			fprintf(stderr, "after cleanup: %lld loads, want at least %d (no range: every access)\n", v[0], 2 * N);
			heritage_test_failures++;
		}
	}
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));

	/* CPU_CYCLES cannot be range-restricted. */
	set = new_set();
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::CPU_CYCLES"));
	EXPECT_CODE("range on a CPU_CYCLES set", heritage_test_range(set, PAPI_DATA_ADDRESS, a, a + N, &opt), PAPI_EINVAL);
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));

	/* Mixed :exact qualifiers in one set. */
	set = new_set();
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED:exact=1"));
	EXPECT_CODE("exact=0 beside exact=1", PAPI_add_named_event(set, "itanium2:::STORES_RETIRED:exact=0"), PAPI_ECNFLCT);
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));

	/* Instruction events need an instruction range: refused at start. */
	set = new_set();
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::IA64_INST_RETIRED"));
	EXPECT_CODE("instructions without a range", PAPI_start(set), PAPI_ENOSUPP);
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));

	/* Only user-level counting exists. */
	set = new_set();
	PAPI_option_t dom;
	memset(&dom, 0, sizeof dom);
	dom.domain.eventset = set;
	dom.domain.domain = PAPI_DOM_KERNEL;
	if (PAPI_set_opt(PAPI_DOMAIN, &dom) == PAPI_OK) {
		fprintf(stderr, "PAPI_DOM_KERNEL accepted\n");
		heritage_test_failures++;
	}

	/* A forced backend that cannot hold the range says so at PAPI_start. */
	CHECK_PAPI(heritage_test_range(set, PAPI_DATA_ADDRESS, a, a + N, &opt));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::STORES_RETIRED"));
	knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", "breakpoint");
	/* Where the debug registers do not work for this account, that is the
	 * reason given (the probe's code), before any question of capacity. */
	char why[512];
	int bp = papi_heritage_backend_usable("itanium2", "breakpoint", why, sizeof why);
	EXPECT_CODE("16 KiB on debug registers", PAPI_start(set), bp == PAPI_OK ? PAPI_ECNFLCT : bp);
	knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", "no-such-backend");
	EXPECT_CODE("bad backend name", PAPI_start(set), PAPI_EINVAL);
	if (forced_backend)
		knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", forced_backend);
	else
		knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", NULL);

	/* Ranges are per event set: a second set with another range. */
	int set2 = new_set();
	CHECK_PAPI(PAPI_add_named_event(set2, "itanium2:::STORES_RETIRED"));
	CHECK_PAPI(heritage_test_range(set2, PAPI_DATA_ADDRESS, b, b + N / 2, &opt));
	CHECK_PAPI(PAPI_start(set));
	touch(a, N);
	touch(b, N);
	CHECK_PAPI(PAPI_stop(set, v));
	EXPECT_EQ("set 1 stores (range a)", v[0], N);
	CHECK_PAPI(PAPI_start(set2));
	touch(a, N);
	touch(b, N);
	CHECK_PAPI(PAPI_stop(set2, v));
	EXPECT_EQ("set 2 stores (range b/2)", v[0], N / 2);

	/* PAPI_start starts from zero; PAPI_reset zeroes a running set. */
	CHECK_PAPI(PAPI_start(set2));
	touch(b, N);
	CHECK_PAPI(PAPI_reset(set2));
	touch(b, 10);
	CHECK_PAPI(PAPI_read(set2, v));
	EXPECT_EQ("after reset", v[0], 10);
	CHECK_PAPI(PAPI_stop(set2, v));

	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));

	/* Misaligned stores: packed ints, the test knows which addresses are
	 * not multiples of 4. */
	struct __attribute__((packed)) packed_int { char c; int x; };
	struct packed_int *pk = malloc(64 * sizeof *pk);
	long long want_misaligned = 0;
	for (int i = 0; i < 64; i++)
		want_misaligned += ((uintptr_t)&pk[i].x & 3) != 0;
	set = new_set();
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::STORES_RETIRED"));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::MISALIGNED_STORES_RETIRED"));
	CHECK_PAPI(heritage_test_range(set, PAPI_DATA_ADDRESS, pk, pk + 64, &opt));
	CHECK_PAPI(PAPI_start(set));
	store_packed(pk, 64);
	CHECK_PAPI(PAPI_stop(set, v));
	EXPECT_EQ("stores to packed ints", v[0], 64);
	EXPECT_EQ("misaligned stores to packed ints", v[1], want_misaligned);
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
	free(pk);

	CHECK_PAPI(PAPI_cleanup_eventset(set2));
	CHECK_PAPI(PAPI_destroy_eventset(&set2));
	free(a);
	free(b);
	PAPI_shutdown();
	return heritage_test_done("range_errors");
}
