/*
 * perf_errno: checks that no-perf refuses what it says and nothing else.
 * Run under it:   no-perf [--errno=E] [--paranoid=N] perf_errno E [N]
 *
 * - perf_event_open of a software event (which perf_event_paranoid 2 allows
 *   any account for its own thread) fails with exactly errno E, here and in
 *   a forked child (the filter is inherited);
 * - the x32 and i386 entry points to perf_event_open fail the same way
 *   (the i386 one only where the kernel runs i386 code at all);
 * - the system calls numbered either side of it, and ordinary ones (open,
 *   read, mmap, fork), behave as without the filter;
 * - /proc/self/status shows the filter and no_new_privs, and, given N,
 *   /proc/sys/kernel/perf_event_paranoid reads N.
 * Exit 0 pass, 1 fail, 77 skip (not x86-64).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static int failures;

#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__);                     \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

/* The errno of a software-event open, 0 if it opened. */
static int open_sw_event(long nr)
{
	struct perf_event_attr attr;
	long fd;

	memset(&attr, 0, sizeof attr);
	attr.size = sizeof attr;
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_TASK_CLOCK;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	errno = 0;
	fd = syscall(nr, &attr, 0, -1, -1, 0UL);
	if (fd >= 0) {
		close((int)fd);
		return 0;
	}
	return errno;
}

/* perf_event_open through int $0x80 (i386 number 336) in a child: the
 * negated errno it returns, or 1 when the kernel does not run i386 system
 * calls (ia32_emulation=0 kills the child). */
static int i386_perf_event_open(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		long ret = 336;
		/* NULL attr: the filter answers before the kernel reads it; without
		 * the filter the kernel says EFAULT. */
		__asm__ volatile("int $0x80" : "+a"(ret) : "b"(0), "c"(0), "d"(-1), "S"(-1), "D"(0) : "memory");
		_exit(ret < 0 && ret > -256 ? (int)-ret : 255);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFSIGNALED(status))
		return 1;
	return -WEXITSTATUS(status);
}

static int status_field(const char *name, char *out, size_t len)
{
	char line[256];
	size_t n = strlen(name);
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, name, n) == 0 && line[n] == ':') {
			snprintf(out, len, "%s", line + n + 1 + strspn(line + n + 1, " \t"));
			out[strcspn(out, "\n")] = 0;
			fclose(f);
			return 0;
		}
	}
	fclose(f);
	return -1;
}

int main(int argc, char **argv)
{
	int want, got, status, i386;
	char buf[64];
	siginfo_t info;
	pid_t pid;
	void *p;

	if (argc < 2 || (strcmp(argv[1], "EPERM") != 0 && strcmp(argv[1], "EACCES") != 0)) {
		fprintf(stderr, "usage: no-perf [--errno=E] perf_errno EPERM|EACCES [paranoid]\n");
		return 1;
	}
	want = strcmp(argv[1], "EPERM") == 0 ? EPERM : EACCES;

	got = open_sw_event(SYS_perf_event_open);
	EXPECT(got == want, "perf_event_open(software task-clock): %s, expected %s",
	       got ? strerror(got) : "opened", strerror(want));
	got = open_sw_event(0x40000000L | SYS_perf_event_open);
	EXPECT(got == want, "x32 perf_event_open: %s, expected %s", got ? strerror(got) : "opened",
	       strerror(want));
	i386 = i386_perf_event_open();
	if (i386 == 1)
		printf("i386 system calls are off in this kernel: that entry point needs no filter\n");
	else
		EXPECT(i386 == -want, "i386 perf_event_open: %s, expected %s",
		       i386 < 0 ? strerror(-i386) : "?", strerror(want));

	pid = fork();
	if (pid == 0)
		_exit(open_sw_event(SYS_perf_event_open) == want ? 0 : 1);
	EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "a forked child could open perf events or failed otherwise (fork %d)", (int)pid);

	/* The neighbours: rt_tgsigqueueinfo with tgid 0 is EINVAL, recvmmsg on
	 * fd -1 is EBADF; a filter off by one would give the errno. */
	memset(&info, 0, sizeof info);
	errno = 0;
	EXPECT(syscall(SYS_rt_tgsigqueueinfo, 0, 0, 0, &info) == -1 && errno == EINVAL,
	       "rt_tgsigqueueinfo(0, ...): %s, expected EINVAL", strerror(errno));
	errno = 0;
	EXPECT(syscall(SYS_recvmmsg, -1, NULL, 0, 0, NULL) == -1 && errno == EBADF,
	       "recvmmsg(-1, ...): %s, expected EBADF", strerror(errno));
	EXPECT(syscall(SYS_getpid) == getpid(), "getpid");
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT(p != MAP_FAILED, "mmap: %s", strerror(errno));
	if (p != MAP_FAILED)
		munmap(p, 4096);

	EXPECT(status_field("Seccomp", buf, sizeof buf) == 0 && strcmp(buf, "2") == 0,
	       "/proc/self/status Seccomp: '%s', expected 2 (filter)", buf);
	EXPECT(status_field("NoNewPrivs", buf, sizeof buf) == 0 && strcmp(buf, "1") == 0,
	       "/proc/self/status NoNewPrivs: '%s', expected 1", buf);
	if (argc > 2) {
		FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
		buf[0] = 0;
		if (f) {
			if (!fgets(buf, sizeof buf, f))
				buf[0] = 0;
			fclose(f);
		}
		buf[strcspn(buf, "\n")] = 0;
		EXPECT(strcmp(buf, argv[2]) == 0, "perf_event_paranoid reads '%s', expected '%s'", buf, argv[2]);
	}
	if (failures)
		return 1;
	printf("perf_event_open refused with %s (x86-64, x32%s), its neighbours and the rest untouched\n",
	       argv[1], i386 == 1 ? "" : ", i386");
	return 0;
}

#else

int main(void)
{
	printf("SKIPPED: no-perf filters x86-64 system calls only\n");
	return 77;
}

#endif
