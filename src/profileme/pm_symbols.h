/*
 * Symbols, source lines and code bytes of an image file, by the ELF
 * virtual address the profile database records (pm_db.h: `0x<vaddr>` is
 * the address in the file as it is on disk).  elfutils' libdwfl reads the
 * file offline (dwfl_report_offline), so no process is needed.
 *
 * What a file gives varies, and the tools say which:
 *   - a symbol table (.symtab, or only .dynsym when stripped): functions,
 *     name, start and size;
 *   - DWARF (-g, or a separate debuginfo file libdwfl finds by build-id):
 *     also file:line per address.  Without it, pm_symbols_note says so.
 * An address in no function is "unknown", never an error that stops a
 * listing.
 */
#ifndef HERITAGE_PM_SYMBOLS_H
#define HERITAGE_PM_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct pm_symbols;

struct pm_func {
	const char *name; /* owned by the pm_symbols */
	uint64_t start;   /* ELF vaddr */
	uint64_t size;    /* st_size, or up to the next function when the symbol has none */
};

/* Open the ELF file at path: 0, or -errno with why (not ELF, unreadable). */
int pm_symbols_open(const char *path, struct pm_symbols **out, char *why, size_t len);
void pm_symbols_close(struct pm_symbols *s);

/* NULL when functions and source lines are known; else what is missing
 * ("a.out has no symbol table ..." / "... no DWARF line information ..."). */
const char *pm_symbols_note(const struct pm_symbols *s);
int pm_symbols_has_lines(const struct pm_symbols *s);

/* The function containing vaddr: 0, or -ENOENT. */
int pm_symbols_func_at(const struct pm_symbols *s, uint64_t vaddr, struct pm_func *f);
/* The function called name (the first, for a name defined twice): 0 or -ENOENT. */
int pm_symbols_func_named(const struct pm_symbols *s, const char *name, struct pm_func *f);
/* Up to max function names like name (sharing a prefix or containing it,
 * or a few edits away), comma-separated into buf; returns how many. */
unsigned pm_symbols_near(const struct pm_symbols *s, const char *name, unsigned max, char *buf, size_t len);
/* Every function, in address order: fn(arg, f) for each. */
void pm_symbols_each(const struct pm_symbols *s, void (*fn)(void *arg, const struct pm_func *f), void *arg);

/* The source file and line of vaddr: 0 with *file (owned by s) and *line,
 * or -ENOENT. */
int pm_symbols_line_at(const struct pm_symbols *s, uint64_t vaddr, const char **file, int *line);
/* The compilation directory of vaddr's unit (where a relative source file
 * name is), or NULL. */
const char *pm_symbols_comp_dir(const struct pm_symbols *s, uint64_t vaddr);

/* Up to n bytes of the file's code at vaddr (an executable PT_LOAD's
 * bytes in the file): how many were read, or -ENOENT / -errno. */
long pm_symbols_code(const struct pm_symbols *s, uint64_t vaddr, uint8_t *buf, size_t n);

#endif
