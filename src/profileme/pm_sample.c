/*
 * The ProfileMe fields, with the meanings of dcpiprofileme(1) in
 * our words, and the sample ring the backends fill from signal handlers.
 */
#include "profileme/pm_sample.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

const struct pm_field_info pm_fields[PM_NFIELDS] = {
	[PM_RETIRED] = { .name = "retired", .kind = PM_KIND_BIT,
		.desc = "The instruction retired: no trap's shadow covered it (it may itself have caused a mispredict trap)" },
	[PM_TAKEN] = { .name = "taken", .kind = PM_KIND_BIT,
		.desc = "A conditional branch that was taken; undefined for other instructions and for a mispredicted conditional branch" },
	[PM_CBRMISPREDICT] = { .name = "cbrmispredict", .kind = PM_KIND_BIT,
		.desc = "A conditional branch whose direction was mispredicted; clear for every other instruction" },
	[PM_VALID] = { .name = "valid", .kind = PM_KIND_BIT,
		.desc = "The instruction retired and caused no trap" },
	[PM_NYP] = { .name = "nyp", .kind = PM_KIND_BIT,
		.desc = "Not yet prefetched: its fetch block missed the instruction cache before any prefetch was on its way, a certain I-cache miss stall" },
	[PM_LDSTORDER] = { .name = "ldstorder", .kind = PM_KIND_BIT,
		.desc = "A replay trap caused by memory order: a younger load issued before an older store to the same (or a same-index) address, or both issued at once" },
	[PM_MAP_STALL] = { .name = "map_stall", .kind = PM_KIND_BIT,
		.desc = "Stalled between fetch and map for want of physical registers, issue-queue slots or inums" },
	[PM_EARLY_KILL] = { .name = "early_kill", .kind = PM_KIND_BIT,
		.desc = "Killed early, before an issue queue; its PC and most fields may then be wrong (exclude with !early_kill)" },
	[PM_LATE_KILL] = { .name = "late_kill", .kind = PM_KIND_BIT,
		.desc = "Killed late in the pipeline" },

	[PM_NOTRAP] = { .name = "notrap", .kind = PM_KIND_TRAP,
		.desc = "Trap bit: none of the traps below (of those the backend observes)" },
	[PM_MISPREDICT] = { .name = "mispredict", .kind = PM_KIND_TRAP,
		.desc = "Trap bit: a mispredicted conditional branch, call, return or indirect jump" },
	[PM_REPLAYS] = { .name = "replays", .kind = PM_KIND_TRAP,
		.desc = "Trap bit: a replay trap" },
	[PM_UNALIGNTRAP] = { .name = "unaligntrap", .kind = PM_KIND_TRAP,
		.desc = "Trap bit: an unaligned load or store" },
	[PM_DTBMISS] = { .name = "dtbmiss", .kind = PM_KIND_TRAP,
		.desc = "Trap bit: a data TLB single miss" },
	[PM_DTB2MISS3] = { .name = "dtb2miss3", .kind = PM_KIND_TRAP,
		.desc = "Trap bit: a data TLB double miss with 3-level page tables" },
	[PM_DTB2MISS4] = { .name = "dtb2miss4", .kind = PM_KIND_TRAP,
		.desc = "Trap bit: a data TLB double miss with 4-level page tables" },
	[PM_ITBMISS] = { .name = "itbmiss", .kind = PM_KIND_TRAP,
		.desc = "Trap bit: an instruction TLB miss (other fields then describe the miss handler's first instruction)" },
	[PM_ARITHTRAP] = { .name = "arithtrap", .kind = PM_KIND_TRAP,
		.desc = "Trap bit: an arithmetic trap (on x86: the instruction raised SIGFPE)" },
	[PM_FPDISABLEDTRAP] = { .name = "fpdisabledtrap", .kind = PM_KIND_TRAP,
		.desc = "Trap bit: a floating-point-disabled trap" },
	[PM_MT_FPCRTRAP] = { .name = "MT_FPCRtrap", .kind = PM_KIND_TRAP,
		.desc = "Trap bit: a trap on a write of the floating-point control register" },
	[PM_DFAULTTRAP] = { .name = "dfaulttrap", .kind = PM_KIND_TRAP,
		.desc = "Trap bit: a data-stream fault, an inaccessible or malformed virtual address (on x86: SIGSEGV/SIGBUS)" },
	[PM_IACVTRAP] = { .name = "iacvtrap", .kind = PM_KIND_TRAP,
		.desc = "Trap bit: an instruction-stream access violation (other fields then describe the handler's first instruction)" },
	[PM_OPCDECTRAP] = { .name = "OPCDECtrap", .kind = PM_KIND_TRAP,
		.desc = "Trap bit: an illegal or reserved opcode (on x86: SIGILL)" },
	[PM_INTERRUPT] = { .name = "interrupt", .kind = PM_KIND_TRAP,
		.desc = "Trap bit: pre-empted by an interrupt (other fields then describe the interrupt code's first instruction)" },
	[PM_MCHKTRAP] = { .name = "mchktrap", .kind = PM_KIND_TRAP,
		.desc = "Trap bit: a machine check" },

	[PM_RETDELAY] = { .name = "retdelay", .kind = PM_KIND_COUNTER,
		.desc = "Counter: a lower bound on the cycles this instruction held up the retire pointer" },
	[PM_INFLIGHT] = { .name = "inflight", .kind = PM_KIND_COUNTER,
		.desc = "Counter: for retired^notrap, about the cycles from leaving fetch to retiring" },
};

int pm_field_from_name(const char *name, size_t len)
{
	for (int f = 0; f < PM_NFIELDS; f++)
		if (strlen(pm_fields[f].name) == len && memcmp(pm_fields[f].name, name, len) == 0)
			return f;
	return -1;
}

int pm_sample_trap(const struct pm_sample *s)
{
	uint32_t t = s->value & PM_TRAPS_MASK;
	if (!t || (t & (t - 1)))
		return -1;
	return __builtin_ctz(t);
}

void pm_sample_set_trap(struct pm_sample *s, enum pm_field t)
{
	s->value = (s->value & ~PM_TRAPS_MASK) | PM_FIELD_BIT(t);
}

int pm_ring_init(struct pm_ring *r, uint32_t size)
{
	memset(r, 0, sizeof *r);
	if (size < 2 || (size & (size - 1)))
		return -EINVAL;
	void *p = mmap(NULL, (size_t)size * sizeof *r->slot, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	r->slot = p;
	r->size = size;
	return 0;
}

void pm_ring_free(struct pm_ring *r)
{
	if (r->slot)
		munmap(r->slot, (size_t)r->size * sizeof *r->slot);
	memset(r, 0, sizeof *r);
}

int pm_ring_push(struct pm_ring *r, const struct pm_sample *s)
{
	uint64_t head = r->head;
	if (head - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) >= r->size) {
		__atomic_fetch_add(&r->lost, 1, __ATOMIC_RELAXED);
		return -ENOSPC;
	}
	r->slot[head & (r->size - 1)] = *s;
	__atomic_store_n(&r->head, head + 1, __ATOMIC_RELEASE);
	return 0;
}

int pm_ring_pop(struct pm_ring *r, struct pm_sample *s)
{
	uint64_t tail = r->tail;
	if (tail == __atomic_load_n(&r->head, __ATOMIC_ACQUIRE))
		return 0;
	*s = r->slot[tail & (r->size - 1)];
	__atomic_store_n(&r->tail, tail + 1, __ATOMIC_RELEASE);
	return 1;
}

uint64_t pm_thread_cpu_ns(int tid)
{
	/* The kernel's per-thread CPU clock id (MAKE_THREAD_CPUCLOCK(tid,
	 * CPUCLOCK_SCHED)), readable by every thread of the group. */
	clockid_t c = (clockid_t)(((unsigned)~tid << 3) | 4 | 2);
	struct timespec ts;
	if (clock_gettime(c, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int pm_thread_running(int tid)
{
	struct timespec t0, t;
	uint64_t a = pm_thread_cpu_ns(tid);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 20000);
	uint64_t b = pm_thread_cpu_ns(tid);
	return a && b >= a + 15000;
}
