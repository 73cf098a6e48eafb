/*
 * The unit tests' own shared-memory objects (/dev/shm is shared by every
 * tree, account and make -j job): each test, in its own Check child, names
 * them hrt-unit-<runner's pid>-<test>, and the runner removes them all
 * before and after.
 */
#ifndef HERITAGE_SHM_TEST_H
#define HERITAGE_SHM_TEST_H

#include <glob.h>
#include <stdio.h>
#include <unistd.h>

static pid_t shm_test_runner;

/* hrt-unit-<runner>-<test> (test NULL: hrt-unit-<runner>), in a static buffer. */
static inline const char *shm_test_name(const char *test)
{
	static char name[96];
	if (test)
		snprintf(name, sizeof name, "hrt-unit-%d-%s", (int)shm_test_runner, test);
	else
		snprintf(name, sizeof name, "hrt-unit-%d", (int)shm_test_runner);
	return name;
}

static inline void shm_test_remove(void)
{
	char pattern[96];
	glob_t g;
	snprintf(pattern, sizeof pattern, "/dev/shm/hrt-unit-%d-*", (int)shm_test_runner);
	if (glob(pattern, 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			unlink(g.gl_pathv[i]);
		globfree(&g);
	}
}

#endif
