#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/heritage_self.h"

struct find_self {
	uintptr_t probe;
	struct heritage_segment *seg;
	int n;
	int is_program;
};

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find_self *f = arg;
	int mine = 0;
	(void)size;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && f->probe >= a && f->probe < a + ph->p_memsz)
			mine = 1;
	}
	if (!mine)
		return 0;
	f->is_program = !info->dlpi_name || !info->dlpi_name[0];
	for (int i = 0; i < info->dlpi_phnum && f->n < HERITAGE_SELF_MAX_SEGMENTS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		f->seg[f->n].start = a;
		f->seg[f->n].end = a + ph->p_memsz;
		f->seg[f->n].flags = ph->p_flags;
		f->n++;
	}
	return 1;
}

int heritage_self_object(struct heritage_segment *seg, int *is_program)
{
	struct find_self f = { (uintptr_t)&heritage_self_segments, seg, 0, 0 };

	dl_iterate_phdr(visit, &f);
	if (is_program)
		*is_program = f.is_program;
	return f.n;
}

int heritage_self_segments(struct heritage_segment *seg)
{
	return heritage_self_object(seg, NULL);
}

int heritage_range_mapped(uintptr_t start, uintptr_t end)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t first = start & ~(uintptr_t)(page - 1);
	size_t npages = (end - first + (uintptr_t)page - 1) / (uintptr_t)page;
	unsigned char vec[256];

	/* mincore answers ENOMEM for any unmapped page in the span; do it in
	 * chunks so a large range needs no allocation. */
	for (size_t done = 0; done < npages; done += sizeof vec) {
		size_t n = npages - done < sizeof vec ? npages - done : sizeof vec;
		if (mincore((void *)(first + done * (uintptr_t)page), n * (size_t)page, vec) != 0)
			return -errno;
	}
	return 0;
}
