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
 * the runtime's (libc and the loader, whose own calls go to their internal
 * aliases either way, libpthread, capstone, the vDSO).  Not reached: a function pointer taken before the patch (copied out
 * of the GOT), objects dlopen'ed while a session runs until the next
 * session starts, and raw system calls.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "watch_got.h"
#include "watch_codemap.h"

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
	uintptr_t relro_lo, relro_hi;   /* the object's PT_GNU_RELRO */
	const char *object;
	char *why;
	size_t len;
};

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

static void patch_slot(void *arg, const char *name, uintptr_t where, unsigned type)
{
	struct walk *w = arg;

	if (w->err || (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT))
		return;
	const struct watch_got_hook *h = hook_named(name);
	void **slot = (void **)where;
	if (!h || __atomic_load_n(slot, __ATOMIC_ACQUIRE) == h->fn)
		return;
	int err = write_slot(slot, h->fn, w->relro_lo, w->relro_hi);
	if (err) {
		snprintf(w->why, w->len, "cannot redirect %s in %s: mprotect: %s", h->name, w->object, strerror(-err));
		w->err = err;
		return;
	}
	w->changed++;
}

/* libc's and the loader's own calls go to their internal aliases anyway;
 * the vDSO has no relocations. */
static int patch_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct walk *w = arg;
	const void *dyn = NULL;

	(void)size;
	const char *path = info->dlpi_name ? info->dlpi_name : "";
	if (w->err || watch_codemap_runtime_object(path))
		return 0;
	w->relro_lo = w->relro_hi = 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const void *)(info->dlpi_addr + ph->p_vaddr);
		else if (ph->p_type == PT_GNU_RELRO) {
			w->relro_lo = info->dlpi_addr + ph->p_vaddr;
			w->relro_hi = w->relro_lo + ph->p_memsz;
		}
	}
	w->object = path[0] ? path : "the executable";
	watch_codemap_dyn_relocs(info->dlpi_addr, dyn, patch_slot, w);
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
