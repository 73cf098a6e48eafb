/*
 * watch_got (interposition by consent): a hooked name's GOT slots in this
 * executable point at the hook after watch_got_hook_add, not before; the
 * RELRO pages it opened are read-only again (the test is linked with
 * -z relro -z now, so the whole GOT is RELRO); a name hooked twice keeps its
 * first hook; a name nobody imports changes nothing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "watch/watch_got.h"

static pid_t fake_getppid(void)
{
	return 424242;
}

static pid_t other_getppid(void)
{
	return 171717;
}

struct relro {
	uintptr_t lo, hi;
};

static int exe_relro(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct relro *r = arg;
	(void)size;
	for (unsigned i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
			r->lo = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
			r->hi = r->lo + info->dlpi_phdr[i].p_memsz;
		}
	return 1; /* the executable comes first */
}

/* The permissions /proc/self/maps gives the mapping holding a. */
static void perms_of(uintptr_t a, char out[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512], p[5];
	unsigned long lo, hi;

	strcpy(out, "?");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, p) == 3 && a >= lo && a < hi)
			strcpy(out, p);
	fclose(f);
}

START_TEST(hook_takes_the_calls_from_the_patch_on)
{
	char why[256] = "";
	pid_t real = (pid_t)syscall(SYS_getppid);
	struct relro r = { 0, 0 };
	char perm[5];

	ck_assert_int_eq(getppid(), real);
	dl_iterate_phdr(exe_relro, &r);
	ck_assert_msg(r.hi > r.lo, "the test is linked with -z relro");
	perms_of(r.lo, perm);
	ck_assert_str_eq(perm, "r--p");

	const struct watch_got_hook h = { "getppid", (void *)fake_getppid };
	int n = watch_got_hook_add(&h, 1, why, sizeof why);
	ck_assert_msg(n >= 1, "patched %d slots: %s", n, why);
	ck_assert_int_eq(getppid(), 424242);
	ck_assert_uint_ge(watch_got_hooked_slots(), (unsigned)n);
	perms_of(r.lo, perm);
	ck_assert_str_eq(perm, "r--p");

	/* The same name again: the first hook stays, nothing is walked. */
	const struct watch_got_hook again = { "getppid", (void *)other_getppid };
	ck_assert_int_eq(watch_got_hook_add(&again, 1, why, sizeof why), 0);
	ck_assert_int_eq(getppid(), 424242);

	/* A name nothing imports. */
	const struct watch_got_hook none = { "no_such_function_anywhere", (void *)other_getppid };
	ck_assert_int_eq(watch_got_hook_add(&none, 1, why, sizeof why), 0);
}
END_TEST

START_TEST(unhooked_names_are_libc_s)
{
	char why[256] = "";
	const struct watch_got_hook h = { "getppid", (void *)fake_getppid };

	/* getpid is not hooked: still the kernel's answer. */
	ck_assert_int_ge(watch_got_hook_add(&h, 1, why, sizeof why), 0);
	ck_assert_int_eq(getpid(), (pid_t)syscall(SYS_getpid));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("got");
	TCase *tc = tcase_create("got");
	tcase_add_test(tc, hook_takes_the_calls_from_the_patch_on);
	tcase_add_test(tc, unhooked_names_are_libc_s);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
