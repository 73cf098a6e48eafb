/*
 * interpose_consent: a program linked with libpapi calls libc's own read(),
 * write() and sigaction() until it starts a session that needs our wrappers
 * (issue 15): PAPI_library_init (whose probes run the page-trap and
 * signal engines) changes nothing; an itanium2 session on the page-trap
 * backend then redirects them, and a read() from a pipe into the watched
 * buffer works as without watching (bounced, not counted).  A SIGSEGV
 * handler the program installed through libc's sigaction() after
 * PAPI_library_init, before that session, still gets the faults that are
 * not ours.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "heritage_test.h"
#include "knob.h"

static int fails;

/* Where a function pointer taken now (through the GOT) leads. */
static const char *object_of(void *fn)
{
	Dl_info info;
	if (!dladdr(fn, &info) || !info.dli_fname)
		return "?";
	const char *base = strrchr(info.dli_fname, '/');
	return base ? base + 1 : info.dli_fname;
}

/* The address in this program's GOT slot for f, loaded now: the compiler
 * takes a GOT slot for a constant and may reuse a load made before the
 * session wrote the slot (it did, once knob_set was inlined into main). */
#define GOT_NOW(f)                                                                  \
	({                                                                          \
		void *slot_;                                                        \
		__asm__ volatile("movq " #f "@GOTPCREL(%%rip), %0" : "=r"(slot_)); \
		slot_;                                                              \
	})

static void expect_object(const char *what, void *fn, const char *want_prefix, int want)
{
	const char *obj = object_of(fn);
	int is = strncmp(obj, want_prefix, strlen(want_prefix)) == 0;
	printf("%-44s %s\n", what, obj);
	if (is != want) {
		printf("  FAIL: %s %s\n", want ? "expected" : "expected anything but", want_prefix);
		fails++;
	}
}

static sigjmp_buf jump;
static volatile sig_atomic_t app_ran;

static void app_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	app_ran++;
	siglongjmp(jump, 1);
}

/* A write through a null pointer the compiler cannot see as one. */
static int *volatile null_pointer;

__attribute__((noinline)) static void null_write(void)
{
	__asm__ volatile("movl $1, (%0)" : : "r"(null_pointer) : "memory");
}

int main(void)
{
	knob_set("PAPI_HERITAGE_ITANIUM2_BACKEND", "pagetrap");
	if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT) {
		fprintf(stderr, "PAPI_library_init failed\n");
		return 1;
	}
	int cidx = PAPI_get_component_index("itanium2");
	if (cidx < 0) {
		fprintf(stderr, "no itanium2 component\n");
		return 1;
	}
	expect_object("read after PAPI_library_init", GOT_NOW(read), "libc.so", 1);
	expect_object("write after PAPI_library_init", GOT_NOW(write), "libc.so", 1);
	expect_object("sigaction after PAPI_library_init", GOT_NOW(sigaction), "libc.so", 1);
	heritage_test_require_backend("itanium2", "pagetrap");

	/* The program's own handler, through libc's sigaction. */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = app_segv;
	sa.sa_flags = SA_SIGINFO;
	CHECK_PAPI(sigaction(SIGSEGV, &sa, NULL) == 0 ? PAPI_OK : PAPI_ESYS);

	long page = sysconf(_SC_PAGESIZE);
	char *buf = aligned_alloc((size_t)page, 4 * (size_t)page);
	memset(buf, 0, 4 * (size_t)page);
	int set = PAPI_NULL;
	PAPI_option_t opt;
	long long v[2];
	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_assign_eventset_component(set, cidx));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::LOADS_RETIRED:exact=1"));
	CHECK_PAPI(PAPI_add_named_event(set, "itanium2:::STORES_RETIRED:exact=1"));
	CHECK_PAPI(heritage_test_range(set, PAPI_DATA_ADDRESS, buf + page, buf + 2 * page, &opt));
	expect_object("read before the first session", GOT_NOW(read), "libc.so", 1);

	int p[2];
	if (pipe(p) != 0) {
		perror("pipe");
		return 1;
	}
	CHECK_PAPI(PAPI_start(set));
	expect_object("read in a page-trap session", GOT_NOW(read), "libc.so", 0);
	expect_object("sigaction in a page-trap session", GOT_NOW(sigaction), "libc.so", 0);
	static const char msg[] = "through the bounce buffer";
	if (write(p[1], msg, sizeof msg) != (ssize_t)sizeof msg) {
		perror("write");
		return 1;
	}
	ssize_t got = read(p[0], buf + page + 100, sizeof msg);
	app_ran = 0;
	if (!sigsetjmp(jump, 1))
		null_write();
	buf[page + 5] = 1;   /* one counted store */
	CHECK_PAPI(PAPI_stop(set, v));

	printf("read into the watched page: %zd bytes, \"%s\"\n", got, buf + page + 100);
	if (got != (ssize_t)sizeof msg || strcmp(buf + page + 100, msg) != 0)
		fails++;
	printf("the program's SIGSEGV handler ran %d time(s) for a null write (expected 1)\n", (int)app_ran);
	if (app_ran != 1)
		fails++;
	printf("counted stores %lld (expected 1: the kernel's copy is not counted)\n", v[1]);
	if (v[1] != 1)
		fails++;
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
	PAPI_shutdown();
	free(buf);
	if (fails) {
		printf("FAIL: %d check(s)\n", fails);
		return 1;
	}
	printf("PASS\n");
	return 0;
}
