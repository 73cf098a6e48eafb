/*
 * Unit tests of the database writer (src/profileme/pm_db_write.c): samples
 * constructed here go through pm_db_writer_open/add/close, and the files are
 * read back by a small reader of the format in pm_db.h (so the writer is
 * checked against the documentation, not only against the tools' reader),
 * then by pm_db_load, the tools' strict reader.  The
 * expected classes are spelled out by hand; the expected vaddrs come from
 * dl_iterate_phdr (the loader's bias), not from the maps the writer reads.
 */
#include <check.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profileme/pm_db.h"

/* Two functions of this program, so their PCs are in its own text. */
__attribute__((noinline, used)) int tpm_one(int x)
{
	return x * 3 + 1;
}
__attribute__((noinline, used)) int tpm_two(int x)
{
	return x * 5 + 2;
}

/* ------------------------------------------------------------ a small reader */

struct rd {
	char hdr[16][2][512];
	int nhdr;
	char ev[16][512];
	uint64_t evtotal[16];
	int nev;
	uint64_t pc[4096], v[4096][16];
	int nrows;
};

static const char *hdr(const struct rd *r, const char *k)
{
	for (int i = 0; i < r->nhdr; i++)
		if (!strcmp(r->hdr[i][0], k))
			return r->hdr[i][1];
	return NULL;
}

static void rd_load(const char *file, struct rd *r)
{
	memset(r, 0, sizeof *r);
	FILE *f = fopen(file, "r");
	ck_assert_msg(f != NULL, "cannot open %s", file);
	char line[1024];
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "0x", 2)) {
			char *p = line;
			r->pc[r->nrows] = strtoull(p, &p, 16);
			for (int c = 0; c < r->nev; c++)
				r->v[r->nrows][c] = strtoull(p, &p, 10);
			ck_assert_msg(*p == 0, "%s: trailing text in a row: %s", file, line);
			r->nrows++;
		} else if (!strncmp(line, "event ", 6)) {
			char *p = line + 6;
			r->evtotal[r->nev] = strtoull(p, &p, 10);
			snprintf(r->ev[r->nev++], sizeof r->ev[0], "%s", p + 1);
		} else {
			ck_assert_msg(r->nev == 0, "%s: a header line after the events: %s", file, line);
			size_t k = strcspn(line, " ");
			snprintf(r->hdr[r->nhdr][0], sizeof r->hdr[0][0], "%.*s", (int)k, line);
			snprintf(r->hdr[r->nhdr++][1], sizeof r->hdr[0][1], "%s", line + k + strspn(line + k, " "));
		}
	}
	fclose(f);
}

/* The one epoch directory under db (there must be exactly one). */
static void only_epoch(const char *db, char *dir, size_t len)
{
	DIR *d = opendir(db);
	ck_assert_ptr_nonnull(d);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		ck_assert_msg(de->d_name[0] != '.', "a hidden directory was left: %s", de->d_name);
		snprintf(dir, len, "%s/%s", db, de->d_name);
		n++;
	}
	closedir(d);
	ck_assert_int_eq(n, 1);
}

/* The file of the image whose path header is path, in epoch dir. */
static int find_image(const char *dir, const char *path, struct rd *r, char *name, size_t nlen)
{
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	struct dirent *de;
	int found = 0;
	char f[PATH_MAX];
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(f, sizeof f, "%s/%s", dir, de->d_name);
		rd_load(f, r);
		if (hdr(r, "path") && !strcmp(hdr(r, "path"), path)) {
			found = 1;
			if (name)
				snprintf(name, nlen, "%s", de->d_name);
		}
	}
	closedir(d);
	return found;
}

static char *mkdb(void)
{
	static char t[PATH_MAX];
	const char *tmp = getenv("TMPDIR");
	snprintf(t, sizeof t, "%s/test_pm_db_write.XXXXXX", tmp && *tmp ? tmp : P_tmpdir);
	ck_assert_ptr_nonnull(mkdtemp(t));
	return t;
}

static void rm_rf(const char *p)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", p);
	ck_assert_int_eq(system(cmd), 0);
}

/* The object holding addr: its load bias and name (dl_iterate_phdr), and
 * its executable PT_LOAD span. */
struct obj {
	uintptr_t addr, bias;
	const char *name;
	uint64_t text_start, text_end;
	int found;
};

static int obj_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct obj *o = arg;
	int in = 0;
	uint64_t ts = UINT64_MAX, te = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		if (o->addr >= info->dlpi_addr + ph->p_vaddr && o->addr < info->dlpi_addr + ph->p_vaddr + ph->p_memsz)
			in = 1;
		if (ph->p_flags & PF_X) {
			ts = ph->p_vaddr < ts ? ph->p_vaddr : ts;
			te = ph->p_vaddr + ph->p_memsz > te ? ph->p_vaddr + ph->p_memsz : te;
		}
	}
	if (!in)
		return 0;
	o->bias = info->dlpi_addr;
	o->name = info->dlpi_name;
	o->text_start = ts;
	o->text_end = te;
	o->found = 1;
	return 1;
}

static struct obj obj_of(const void *addr)
{
	struct obj o = { .addr = (uintptr_t)addr };
	dl_iterate_phdr(obj_cb, &o);
	ck_assert_msg(o.found, "no object holds %p", addr);
	return o;
}

static struct pm_sample smp(const void *pc, uint32_t value, uint32_t known, int retdelay)
{
	struct pm_sample s = { .pc = (uint64_t)(uintptr_t)pc, .value = value, .known = known };
	if (retdelay >= 0) {
		s.known |= PM_FIELD_BIT(PM_RETDELAY);
		s.counter[PM_RETDELAY - PM_COUNTER_FIRST] = (uint32_t)retdelay;
	}
	return s;
}

#define B(f) PM_FIELD_BIT(PM_##f)

START_TEST(classes_totals_and_vaddrs_of_this_program)
{
	char *db = mkdb(), why[512], dir[PATH_MAX], exe[PATH_MAX], name[PATH_MAX];
	uint32_t fields = B(RETIRED) | B(TAKEN) | B(VALID) | B(NOTRAP) | B(ARITHTRAP) | B(RETDELAY);
	struct pm_db_writer *w;
	ck_assert_int_eq(pm_db_writer_open(&w, db, "soft", "ns", 1000, fields, why, sizeof why), 0);
	/* Class A: retired, not taken, valid, no trap; 3 at tpm_one (retdelay
	 * 5, 6, 7), 1 at tpm_two (10). */
	uint32_t ka = B(RETIRED) | B(TAKEN) | B(VALID) | B(NOTRAP), va = B(RETIRED) | B(VALID) | B(NOTRAP);
	const char *one = (const char *)tpm_one, *two = (const char *)tpm_two;
	struct pm_sample s;
	s = smp(one, va, ka, 5), pm_db_writer_add(w, &s);
	s = smp(one, va, ka, 6), pm_db_writer_add(w, &s);
	s = smp(one, va, ka, 7), pm_db_writer_add(w, &s);
	s = smp(two, va, ka, 10), pm_db_writer_add(w, &s);
	/* Class B: not retired (taken unknown), no counter; 2 at tpm_one + 1.
	 * A counter value whose field is not known is no value: ignored. */
	uint32_t kb = B(RETIRED) | B(VALID) | B(NOTRAP), vb = B(VALID) | B(NOTRAP);
	s = smp(one + 1, vb, kb, -1), pm_db_writer_add(w, &s);
	s = smp(one + 1, vb, kb, -1), s.counter[0] = 999, pm_db_writer_add(w, &s);
	/* Class C: an arithmetic trap; a value bit outside known is not kept. */
	uint32_t kc = B(RETIRED) | B(VALID) | B(ARITHTRAP), vc = B(ARITHTRAP) | B(VALID) | B(TAKEN);
	s = smp(two, vc, kc, -1), pm_db_writer_add(w, &s);
	ck_assert_int_eq(pm_db_writer_finish(w, 0, dir, sizeof dir, why, sizeof why), 0);

	char epoch[PATH_MAX];
	only_epoch(db, epoch, sizeof epoch);
	ck_assert_str_eq(dir, epoch);
	const char *ep = strrchr(dir, '/') + 1;
	ck_assert_uint_eq(strlen(ep), 14);
	ck_assert_uint_eq(strspn(ep, "0123456789"), 14);

	ck_assert(realpath("/proc/self/exe", exe));
	static struct rd r;
	ck_assert_msg(find_image(dir, exe, &r, name, sizeof name), "no file for %s in %s", exe, dir);
	/* <basename>_<mtime>+<size> of the file. */
	struct stat st;
	ck_assert_int_eq(stat(exe, &st), 0);
	struct tm tm;
	gmtime_r(&st.st_mtime, &tm);
	char id[64], want[PATH_MAX];
	size_t k = strftime(id, sizeof id, "%Y%m%d%H%M%S", &tm);
	snprintf(id + k, sizeof id - k, "+%08llx", (unsigned long long)st.st_size);
	snprintf(want, sizeof want, "%s_%s", strrchr(exe, '/') + 1, id);
	ck_assert_str_eq(name, want);
	ck_assert_str_eq(hdr(&r, "name"), strrchr(exe, '/') + 1);
	ck_assert_str_eq(hdr(&r, "image"), id);
	ck_assert_str_eq(hdr(&r, "label"), "profileme");
	ck_assert_str_eq(hdr(&r, "epoch"), ep);
	ck_assert_str_eq(hdr(&r, "backend"), "soft");
	ck_assert_str_eq(hdr(&r, "period"), "1000 ns");
	ck_assert_str_eq(hdr(&r, "fields"), "retired,taken,valid,notrap,arithtrap,retdelay");
	ck_assert_ptr_nonnull(strstr(hdr(&r, "platform"), "(family "));

	struct obj o = obj_of(one);
	char ts[64];
	snprintf(ts, sizeof ts, "0x%" PRIx64, o.text_start);
	ck_assert_str_eq(hdr(&r, "text_start"), ts);
	snprintf(ts, sizeof ts, "0x%" PRIx64, o.text_end - o.text_start);
	ck_assert_str_eq(hdr(&r, "text_size"), ts);

	/* Columns: A (4 samples) and A:retdelay, B (2), C (1); the classes in
	 * field order, every known bit and trap with its value. */
	ck_assert_int_eq(r.nev, 4);
	ck_assert_str_eq(r.ev[0], "retired^!taken^valid^notrap:1000:4");
	ck_assert_uint_eq(r.evtotal[0], 4);
	ck_assert_str_eq(r.ev[1], "retired^!taken^valid^notrap:retdelay:1000:4");
	ck_assert_uint_eq(r.evtotal[1], 28);
	ck_assert_str_eq(r.ev[2], "!retired^valid^notrap:1000:2");
	ck_assert_uint_eq(r.evtotal[2], 2);
	ck_assert_str_eq(r.ev[3], "!retired^valid^arithtrap:1000:1");
	ck_assert_uint_eq(r.evtotal[3], 1);

	/* Rows at the ELF vaddrs, ascending. */
	uint64_t v1 = (uintptr_t)one - o.bias, v2 = (uintptr_t)two - o.bias;
	ck_assert_int_eq(r.nrows, 3);
	uint64_t want_pc[3], want_v[3][4];
	int i1 = v1 < v2 ? 0 : 1, i1b = v1 + 1 < v2 ? 1 : 2, i2 = v2 < v1 ? 0 : 2;
	want_pc[i1] = v1, want_pc[i1b] = v1 + 1, want_pc[i2] = v2;
	const uint64_t row1[4] = { 3, 18, 0, 0 }, row1b[4] = { 0, 0, 2, 0 }, row2[4] = { 1, 10, 0, 1 };
	memcpy(want_v[i1], row1, sizeof row1);
	memcpy(want_v[i1b], row1b, sizeof row1b);
	memcpy(want_v[i2], row2, sizeof row2);
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(r.pc[i], want_pc[i]);
		for (int c = 0; c < 4; c++)
			ck_assert_msg(r.v[i][c] == want_v[i][c], "row 0x%" PRIx64 " column %d: %" PRIu64 ", want %" PRIu64,
			              r.pc[i], c, r.v[i][c], want_v[i][c]);
	}

	/* The strict reader of the tools takes the file, and answers sets
	 * from its classes: retired (A), !retired (B + C), valid (all 7),
	 * retired:retdelay (28), arithtrap at tpm_two (1). */
	char file[PATH_MAX * 2];
	snprintf(file, sizeof file, "%s/%s", dir, name);
	struct pm_db_profile *p;
	ck_assert_msg(pm_db_load(file, &p, why, sizeof why) == 0, "pm_db_load: %s", why);
	ck_assert_uint_eq(p->ncols, 4);
	ck_assert_uint_eq(p->nrows, 3);
	ck_assert_uint_eq(p->period, 1000);
	ck_assert_str_eq(p->backend, "soft");
	ck_assert_uint_eq(p->fields, fields);
	struct pm_value q;
	ck_assert_int_eq(pm_value_parse("retired", &q, why, sizeof why), 0);
	ck_assert_uint_eq(pm_db_value(p, -1, &q), 4);
	ck_assert_int_eq(pm_value_parse("!retired", &q, why, sizeof why), 0);
	ck_assert_uint_eq(pm_db_value(p, -1, &q), 3);
	ck_assert_int_eq(pm_value_parse("valid", &q, why, sizeof why), 0);
	ck_assert_uint_eq(pm_db_value(p, -1, &q), 7);
	ck_assert_int_eq(pm_value_parse("retired:retdelay", &q, why, sizeof why), 0);
	ck_assert_uint_eq(pm_db_value(p, -1, &q), 28);
	ck_assert_int_eq(pm_value_parse("arithtrap", &q, why, sizeof why), 0);
	ck_assert_uint_eq(pm_db_value(p, i2, &q), 1);
	ck_assert_uint_eq(pm_db_value(p, i1, &q), 0);
	pm_db_free(p);
	rm_rf(db);
}
END_TEST

/* A shared library's PC (libc's) goes to libc's file at its ELF vaddr;
 * the vDSO's to [vdso] at its offset; anonymous executable memory to
 * [anon] at the PC; a PC in no mapping to [unknown]. */
START_TEST(libraries_vdso_anon_and_unknown)
{
	char *db = mkdb(), why[512], dir[PATH_MAX];
	struct pm_db_writer *w;
	uint32_t k = B(RETIRED) | B(NOTRAP), v = B(RETIRED) | B(NOTRAP);
	ck_assert_int_eq(pm_db_writer_open(&w, db, "ibs", "ops", 65536, k, why, sizeof why), 0);
	const char *libc_pc = (const char *)(uintptr_t)&getpid + 2;
	struct pm_sample s = smp(libc_pc, v, k, -1);
	pm_db_writer_add(w, &s);
	uintptr_t vdso = getauxval(AT_SYSINFO_EHDR);
	if (vdso) {
		s = smp((void *)(vdso + 0x100), v, k, -1);
		pm_db_writer_add(w, &s);
	}
	char *anon = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(anon, MAP_FAILED);
	s = smp(anon + 16, v, k, -1);
	pm_db_writer_add(w, &s);
	s = smp((void *)0x40, v, k, -1);
	pm_db_writer_add(w, &s);
	pm_db_writer_add(w, &s);
	ck_assert_int_eq(pm_db_writer_finish(w, 0, dir, sizeof dir, why, sizeof why), 0);

	static struct rd r;
	struct obj o = obj_of(libc_pc);
	char lib[PATH_MAX];
	ck_assert(realpath(o.name, lib));
	ck_assert_msg(find_image(dir, lib, &r, NULL, 0), "no file for %s", lib);
	ck_assert_int_eq(r.nrows, 1);
	ck_assert_uint_eq(r.pc[0], (uintptr_t)libc_pc - o.bias);
	ck_assert_str_eq(r.ev[0], "retired^notrap:65536:1");
	ck_assert_str_eq(hdr(&r, "period"), "65536 ops");

	if (vdso) {
		ck_assert(find_image(dir, "[vdso]", &r, NULL, 0));
		ck_assert_str_eq(hdr(&r, "image"), "-");
		ck_assert_str_eq(hdr(&r, "name"), "[vdso]");
		ck_assert_int_eq(r.nrows, 1);
		ck_assert_uint_eq(r.pc[0], 0x100);
	}
	ck_assert(find_image(dir, "[anon]", &r, NULL, 0));
	ck_assert_int_eq(r.nrows, 1);
	ck_assert_uint_eq(r.pc[0], (uintptr_t)anon + 16);
	char uname_[PATH_MAX], file[PATH_MAX * 2];
	ck_assert(find_image(dir, "[unknown]", &r, uname_, sizeof uname_));
	ck_assert_int_eq(r.nrows, 1);
	ck_assert_uint_eq(r.pc[0], 0x40);
	/* A pseudo-image is a profile the tools' reader takes too. */
	snprintf(file, sizeof file, "%s/%s", dir, uname_);
	struct pm_db_profile *p;
	ck_assert_msg(pm_db_load(file, &p, why, sizeof why) == 0, "pm_db_load: %s", why);
	ck_assert_uint_eq(p->nrows, 1);
	ck_assert_uint_eq(p->pc[0], 0x40);
	pm_db_free(p);
	ck_assert_uint_eq(r.v[0][0], 2);
	ck_assert_str_eq(hdr(&r, "text_start"), "0x40");
	ck_assert_str_eq(hdr(&r, "text_size"), "0x1");
	munmap(anon, 4096);
	rm_rf(db);
}
END_TEST

/* Two runs of one second: the second epoch gets -1 and sorts after. */
START_TEST(same_second_epochs_are_distinct)
{
	char *db = mkdb(), why[512], d1[PATH_MAX - 8], d2[PATH_MAX];
	struct pm_db_writer *w1, *w2;
	struct pm_sample s = smp((const void *)tpm_one, B(RETIRED), B(RETIRED), -1);
	for (;;) {
		time_t t0 = time(NULL);
		ck_assert_int_eq(pm_db_writer_open(&w1, db, "soft", "ns", 1000, B(RETIRED), why, sizeof why), 0);
		ck_assert_int_eq(pm_db_writer_open(&w2, db, "soft", "ns", 1000, B(RETIRED), why, sizeof why), 0);
		if (time(NULL) == t0)
			break;
		pm_db_writer_discard(w1);
		pm_db_writer_discard(w2);
	}
	pm_db_writer_add(w1, &s);
	pm_db_writer_add(w2, &s);
	ck_assert_int_eq(pm_db_writer_finish(w1, 0, d1, sizeof d1, why, sizeof why), 0);
	ck_assert_int_eq(pm_db_writer_finish(w2, 0, d2, sizeof d2, why, sizeof why), 0);
	char want[PATH_MAX];
	snprintf(want, sizeof want, "%s-1", d1);
	ck_assert_str_eq(d2, want);
	ck_assert_int_gt(strcmp(d2, d1), 0);
	rm_rf(db);
}
END_TEST

/* A database that cannot be made is refused at open, with its path; a
 * discarded writer leaves nothing. */
START_TEST(unwritable_db_and_discard)
{
	char *db = mkdb(), why[512], bad[PATH_MAX];
	snprintf(bad, sizeof bad, "%s/file", db);
	FILE *f = fopen(bad, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	snprintf(bad, sizeof bad, "%s/file/db", db);
	struct pm_db_writer *w = (void *)1;
	ck_assert_int_eq(pm_db_writer_open(&w, bad, "soft", "ns", 1000, 0, why, sizeof why), -ENOTDIR);
	ck_assert_ptr_null(w);
	ck_assert_ptr_nonnull(strstr(why, bad));
	/* A new DB directory (and its parents) is made. */
	snprintf(bad, sizeof bad, "%s/a/b", db);
	ck_assert_int_eq(pm_db_writer_open(&w, bad, "soft", "ns", 1000, 0, why, sizeof why), 0);
	pm_db_writer_discard(w);
	DIR *d = opendir(bad);
	ck_assert_ptr_nonnull(d);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	ck_assert_int_eq(n, 0);
	rm_rf(db);
}
END_TEST

/* No sample: an epoch with no image file (the run happened, sampled nothing). */
START_TEST(no_samples_empty_epoch)
{
	char *db = mkdb(), why[512], dir[PATH_MAX];
	struct pm_db_writer *w;
	ck_assert_int_eq(pm_db_writer_open(&w, db, "soft", "ns", 1000, 0, why, sizeof why), 0);
	ck_assert_int_eq(pm_db_writer_finish(w, 0, dir, sizeof dir, why, sizeof why), 0);
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	ck_assert_int_eq(n, 0);
	rm_rf(db);
}
END_TEST

/* The file offset of ELF vaddr v of the main program (its PT_LOAD). */
static int off_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uint64_t *v = arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && v[0] >= ph->p_vaddr && v[0] < ph->p_vaddr + ph->p_filesz) {
			v[1] = v[0] - ph->p_vaddr + ph->p_offset;
			return 1;
		}
	}
	return 1; /* the first object is the program */
}

/* Two copies of one file (same basename, mtime, size) mapped executable
 * from offset 0 (so a PC's mapping offset is its file offset, not the
 * segment's): two image files, each PC at the program's ELF vaddr. */
START_TEST(copies_of_one_file_and_file_offsets)
{
	char *db = mkdb(), why[512], dir[PATH_MAX], exe[PATH_MAX], cmd[PATH_MAX * 3], copy[2][PATH_MAX];
	ck_assert(realpath("/proc/self/exe", exe));
	uint64_t v[2] = { (uintptr_t)tpm_one - obj_of((const void *)tpm_one).bias, UINT64_MAX };
	dl_iterate_phdr(off_cb, v);
	ck_assert(v[1] != UINT64_MAX);
	struct pm_db_writer *w;
	uint32_t k = B(RETIRED) | B(NOTRAP);
	ck_assert_int_eq(pm_db_writer_open(&w, db, "soft", "ns", 1000, k, why, sizeof why), 0);
	void *map[2];
	size_t len = 0;
	for (int i = 0; i < 2; i++) {
		snprintf(copy[i], sizeof copy[i], "%s/c%d", db, i);
		ck_assert_int_eq(mkdir(copy[i], 0700), 0);
		strcat(copy[i], "/prog.copy");
		snprintf(cmd, sizeof cmd, "cp -p '%s' '%s'", exe, copy[i]);
		ck_assert_int_eq(system(cmd), 0);
		FILE *f = fopen(copy[i], "r");
		ck_assert_ptr_nonnull(f);
		struct stat st;
		ck_assert_int_eq(fstat(fileno(f), &st), 0);
		len = (size_t)st.st_size;
		map[i] = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fileno(f), 0);
		fclose(f);
		if (map[i] == MAP_FAILED && errno == EPERM) {
			printf("copies_of_one_file_and_file_offsets: %s is noexec, not checked\n", db);
			pm_db_writer_discard(w);
			rm_rf(db);
			return;
		}
		ck_assert_ptr_ne(map[i], MAP_FAILED);
		struct pm_sample s = smp((char *)map[i] + v[1], k, k, -1);
		for (int n = 0; n <= i; n++)
			pm_db_writer_add(w, &s);
	}
	ck_assert_int_eq(pm_db_writer_finish(w, 0, dir, sizeof dir, why, sizeof why), 0);
	static struct rd r;
	char name[2][PATH_MAX];
	for (int i = 0; i < 2; i++) {
		ck_assert_msg(find_image(dir, copy[i], &r, name[i], sizeof name[i]), "no file for %s", copy[i]);
		ck_assert_int_eq(r.nrows, 1);
		ck_assert_uint_eq(r.pc[0], v[0]);
		ck_assert_uint_eq(r.v[0][0], (uint64_t)i + 1);
		ck_assert_str_eq(hdr(&r, "name"), "prog.copy");
		munmap(map[i], len);
	}
	ck_assert_str_ne(name[0], name[1]);
	ck_assert_ptr_nonnull(strstr(name[0], "prog.copy_"));
	rm_rf(db);
}
END_TEST

/* An ELF file made here whose executable segment's vaddr is not its file
 * offset (0x7a1000 against 0x1000), mapped from offset 0x1000: a PC at
 * mapping + 0x123 is vaddr 0x7a1123; one past the segment's file bytes
 * (mapping + 0x900) stays at its file offset, 0x1900. */
START_TEST(elf_vaddr_is_not_the_file_offset)
{
	char *db = mkdb(), why[512], dir[PATH_MAX], elf[PATH_MAX];
	snprintf(elf, sizeof elf, "%s/made.elf", db);
	static unsigned char img[0x2000];
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof *eh;
	eh->e_ehsize = sizeof *eh;
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = 2;
	Elf64_Phdr *ph = (Elf64_Phdr *)(img + sizeof *eh);
	ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R, .p_offset = 0, .p_vaddr = 0x400000,
	                      .p_filesz = 0x1000, .p_memsz = 0x1000, .p_align = 0x1000 };
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0x1000, .p_vaddr = 0x7a1000,
	                      .p_filesz = 0x800, .p_memsz = 0x800, .p_align = 0x1000 };
	FILE *f = fopen(elf, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(img, 1, sizeof img, f), sizeof img);
	fclose(f);
	f = fopen(elf, "r");
	ck_assert_ptr_nonnull(f);
	char *m = mmap(NULL, 0x1000, PROT_READ | PROT_EXEC, MAP_PRIVATE, fileno(f), 0x1000);
	fclose(f);
	if (m == MAP_FAILED) {
		/* TMPDIR mounted noexec: no executable mapping of a file there. */
		ck_assert_int_eq(errno, EPERM);
		printf("elf_vaddr_is_not_the_file_offset: %s is noexec, not checked\n", db);
		rm_rf(db);
		return;
	}
	struct pm_db_writer *w;
	uint32_t k = B(RETIRED) | B(NOTRAP);
	ck_assert_int_eq(pm_db_writer_open(&w, db, "soft", "ns", 1000, k, why, sizeof why), 0);
	struct pm_sample s = smp(m + 0x123, k, k, -1);
	pm_db_writer_add(w, &s);
	s = smp(m + 0x900, k, k, -1);
	pm_db_writer_add(w, &s);
	ck_assert_int_eq(pm_db_writer_finish(w, 0, dir, sizeof dir, why, sizeof why), 0);
	munmap(m, 0x1000);
	static struct rd r;
	ck_assert(find_image(dir, elf, &r, NULL, 0));
	ck_assert_int_eq(r.nrows, 2);
	ck_assert_uint_eq(r.pc[0], 0x1900);
	ck_assert_uint_eq(r.pc[1], 0x7a1123);
	ck_assert_str_eq(hdr(&r, "text_start"), "0x7a1000");
	ck_assert_str_eq(hdr(&r, "text_size"), "0x800");
	rm_rf(db);
}
END_TEST

/* Many (pc, class) pairs: the table grows and nothing is lost or split. */
START_TEST(many_pcs_grow_the_table)
{
	char *db = mkdb(), why[512], dir[PATH_MAX];
	struct pm_db_writer *w;
	uint32_t k = B(RETIRED) | B(NOTRAP);
	ck_assert_int_eq(pm_db_writer_open(&w, db, "soft", "ns", 1000, k, why, sizeof why), 0);
	/* 3000 PCs below the first page (never mapped), added in a scrambled
	 * order, twice each, in two classes alternately. */
	for (int rep = 0; rep < 2; rep++)
		for (unsigned i = 0; i < 3000; i++) {
			unsigned j = (i * 1237) % 3000;
			struct pm_sample s = smp((void *)(uintptr_t)(0x100 + j), (j & 1) ? k : B(NOTRAP), k, -1);
			pm_db_writer_add(w, &s);
		}
	ck_assert_int_eq(pm_db_writer_finish(w, 0, dir, sizeof dir, why, sizeof why), 0);
	static struct rd r;
	ck_assert(find_image(dir, "[unknown]", &r, NULL, 0));
	ck_assert_int_eq(r.nev, 2);
	ck_assert_str_eq(r.ev[0], "!retired^notrap:1000:3000");
	ck_assert_str_eq(r.ev[1], "retired^notrap:1000:3000");
	ck_assert_int_eq(r.nrows, 3000);
	for (int i = 0; i < 3000; i++) {
		ck_assert_uint_eq(r.pc[i], 0x100 + (unsigned)i);
		ck_assert_uint_eq(r.v[i][0], (i & 1) ? 0 : 2);
		ck_assert_uint_eq(r.v[i][1], (i & 1) ? 2 : 0);
	}
	rm_rf(db);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pm_db_write");
	TCase *tc = tcase_create("writer");
	tcase_add_test(tc, classes_totals_and_vaddrs_of_this_program);
	tcase_add_test(tc, libraries_vdso_anon_and_unknown);
	tcase_add_test(tc, same_second_epochs_are_distinct);
	tcase_add_test(tc, unwritable_db_and_discard);
	tcase_add_test(tc, no_samples_empty_epoch);
	tcase_add_test(tc, many_pcs_grow_the_table);
	tcase_add_test(tc, copies_of_one_file_and_file_offsets);
	tcase_add_test(tc, elf_vaddr_is_not_the_file_offset);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
