/*
 * Interposition by consent (watch_got.h).  Until issue 15, libpapi.so
 * exported read, write, readv, writev, pread(64), pwrite(64), recv(from),
 * send(to), __read_chk, sigaction and signal, so every program linked with
 * it ran through our wrappers whether or not it ever watched memory.  Now the
 * wrappers have private names and a backend that needs them writes their
 * addresses into the GOT slots through which the loaded objects call those
 * functions, when its first session starts.
 *
 * What this reaches is what symbol interposition reached: calls through the
 * PLT or the GOT (-fno-plt) of the executable and of every shared object but
 * libc and the loader, whose own calls go to their internal aliases either
 * way.  Not reached: a function pointer taken before the patch (copied out
 * of the GOT), objects dlopen'ed while a session runs until the next
 * session starts, and raw system calls.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "watch_got.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_HOOKS 32

static pthread_mutex_t got_lock = PTHREAD_MUTEX_INITIALIZER;
static struct watch_got_hook table[MAX_HOOKS];
static unsigned nhooks;
static unsigned long long walked_adds;  /* dlpi_adds at the last walk */
static unsigned walked_hooks;           /* nhooks at the last walk */
static unsigned slots_written;

struct walk {
	int err;
	unsigned changed;
	char *why;
	size_t len;
};

static int skipped(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, "libc.so", 7) == 0 || strncmp(base, "ld-linux", 8) == 0 ||
	       strncmp(base, "linux-vdso", 10) == 0 || strncmp(base, "ld64.so", 7) == 0;
}

/* glibc relocates the d_ptr values of an object's dynamic section in place
 * when it is writable (every object but the vDSO, which is skipped). */
static uintptr_t dyn_addr(const struct dl_phdr_info *info, Elf64_Addr p)
{
	return p < info->dlpi_addr ? info->dlpi_addr + p : p;
}

static const struct watch_got_hook *hook_named(const char *name)
{
	for (unsigned i = 0; i < nhooks; i++)
		if (strcmp(table[i].name, name) == 0)
			return &table[i];
	return NULL;
}

/* One slot; RELRO pages (the whole GOT under -z now) are read-only after
 * relocation and are opened for the write, then closed again. */
static int write_slot(void **slot, void *fn, uintptr_t relro_lo, uintptr_t relro_hi)
{
	uintptr_t at = (uintptr_t)slot;

	if (at >= relro_lo && at < relro_hi) {
		uintptr_t page = at & ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
		size_t span = (size_t)sysconf(_SC_PAGESIZE);
		if (mprotect((void *)page, span, PROT_READ | PROT_WRITE) != 0)
			return -errno;
		__atomic_store_n(slot, fn, __ATOMIC_RELEASE);
		if (mprotect((void *)page, span, PROT_READ) != 0)
			return -errno;
		return 0;
	}
	__atomic_store_n(slot, fn, __ATOMIC_RELEASE);
	return 0;
}

static int patch_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct walk *w = arg;
	const Elf64_Dyn *dyn = NULL;
	uintptr_t relro_lo = 0, relro_hi = 0;

	(void)size;
	if (w->err || skipped(info->dlpi_name ? info->dlpi_name : ""))
		return 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const Elf64_Dyn *)(info->dlpi_addr + ph->p_vaddr);
		else if (ph->p_type == PT_GNU_RELRO) {
			relro_lo = info->dlpi_addr + ph->p_vaddr;
			relro_hi = relro_lo + ph->p_memsz;
		}
	}
	if (!dyn)
		return 0;
	const Elf64_Sym *symtab = NULL;
	const char *strtab = NULL;
	size_t strsz = 0;
	const Elf64_Rela *tabs[2] = { NULL, NULL };
	size_t sizes[2] = { 0, 0 };
	for (const Elf64_Dyn *d = dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: symtab = (const Elf64_Sym *)dyn_addr(info, d->d_un.d_ptr); break;
		case DT_STRTAB: strtab = (const char *)dyn_addr(info, d->d_un.d_ptr); break;
		case DT_STRSZ: strsz = d->d_un.d_val; break;
		case DT_JMPREL: tabs[0] = (const Elf64_Rela *)dyn_addr(info, d->d_un.d_ptr); break;
		case DT_PLTRELSZ: sizes[0] = d->d_un.d_val; break;
		case DT_RELA: tabs[1] = (const Elf64_Rela *)dyn_addr(info, d->d_un.d_ptr); break;
		case DT_RELASZ: sizes[1] = d->d_un.d_val; break;
		default: break;
		}
	}
	if (!symtab || !strtab)
		return 0;
	for (int t = 0; t < 2; t++) {
		if (!tabs[t])
			continue;
		for (size_t k = 0; k < sizes[t] / sizeof(Elf64_Rela); k++) {
			const Elf64_Rela *r = &tabs[t][k];
			unsigned type = ELF64_R_TYPE(r->r_info);
			if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
				continue;
			Elf64_Word name = symtab[ELF64_R_SYM(r->r_info)].st_name;
			if (name >= strsz)
				continue;
			const struct watch_got_hook *h = hook_named(strtab + name);
			if (!h)
				continue;
			void **slot = (void **)(info->dlpi_addr + r->r_offset);
			if (__atomic_load_n(slot, __ATOMIC_ACQUIRE) == h->fn)
				continue;
			int err = write_slot(slot, h->fn, relro_lo, relro_hi);
			if (err) {
				snprintf(w->why, w->len, "cannot redirect %s in %s: mprotect: %s", h->name,
				         info->dlpi_name[0] ? info->dlpi_name : "the executable", strerror(-err));
				w->err = err;
				return 0;
			}
			w->changed++;
		}
	}
	return 0;
}

static int count_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(unsigned long long *)arg = info->dlpi_adds;
	return 1;
}

int watch_got_hook_add(const struct watch_got_hook *hooks, unsigned n, char *why, size_t len)
{
	struct walk w = { .why = why, .len = len };
	unsigned long long adds = 0;

	pthread_mutex_lock(&got_lock);
	for (unsigned i = 0; i < n; i++) {
		if (hook_named(hooks[i].name))
			continue;
		if (nhooks == MAX_HOOKS) {
			snprintf(why, len, "cannot redirect %s: more than %d hooked functions", hooks[i].name, MAX_HOOKS);
			pthread_mutex_unlock(&got_lock);
			return -ENOSPC;
		}
		table[nhooks++] = hooks[i];
	}
	dl_iterate_phdr(count_adds, &adds);
	if (adds != walked_adds || nhooks != walked_hooks) {
		dl_iterate_phdr(patch_object, &w);
		if (!w.err) {
			walked_adds = adds;
			walked_hooks = nhooks;
		}
		slots_written += w.changed;
	}
	pthread_mutex_unlock(&got_lock);
	return w.err ? w.err : (int)w.changed;
}

unsigned watch_got_hooked_slots(void)
{
	pthread_mutex_lock(&got_lock);
	unsigned n = slots_written;
	pthread_mutex_unlock(&got_lock);
	return n;
}
