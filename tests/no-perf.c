/*
 * no-perf: run a command where perf_event_open(2) is refused, as our users
 * meet it.  Docker's default seccomp profile makes it fail with EPERM;
 * Debian's and Ubuntu's kernels, with perf_event_paranoid 3 and 4 (their
 * default), fail it with EACCES for every account without CAP_PERFMON.  A
 * kernel whose paranoid tops out at 2 (upstream) cannot show the second, so
 * both are emulated here by a seccomp filter that the command and all its
 * children inherit:
 *
 *   no-perf [--errno=EPERM|EACCES] [--paranoid=N] command [args...]
 *
 * --paranoid=N (root only) also shows N in /proc/sys/kernel/perf_event_paranoid
 * to the command, through a bind mount in a private mount namespace, so that
 * a probe reading the sysctl to explain a refusal sees what a Debian or
 * Ubuntu machine would show; drop root afterwards (no-perf ... setpriv ...).
 *
 * A test aid, not installed.  Raw BPF instead of libseccomp: the filter is
 * ten instructions and libseccomp would be a new build dependency for them.
 * Exit status: the command's; 125 when no-perf itself fails, 126/127 when
 * the command cannot be run (as env(1) and timeout(1) do).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

/* The compat ABIs an x86-64 kernel also accepts: the x32 numbers are the
 * x86-64 ones with this bit set, and i386 programs (int $0x80) arrive with
 * AUDIT_ARCH_I386 and their own number.  A filter that only matched 298
 * would let either path through. */
#define X32_SYSCALL_BIT 0x40000000u
#define I386_NR_PERF_EVENT_OPEN 336u

static int install_filter(int err)
{
	struct sock_filter insns[] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		/* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 3),	/* else 5 */
		/* x86-64 and x32: compare the number without the x32 bit */
		/* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		/* 3 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, ~X32_SYSCALL_BIT),
		/* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 3, 4),	/* 8 : 9 */
		/* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_I386, 0, 3),	/* else 9 */
		/* 6 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		/* 7 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, I386_NR_PERF_EVENT_OPEN, 0, 1),	/* 8 : 9 */
		/* 8 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
		/* 9 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof insns / sizeof insns[0], .filter = insns };

	/* Lets an unprivileged account install a filter; it also keeps setuid
	 * programs from gaining privileges, which is what a container does. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		fprintf(stderr, "no-perf: prctl(PR_SET_NO_NEW_PRIVS): %s\n", strerror(errno));
		return -1;
	}
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
		fprintf(stderr, "no-perf: seccomp(SECCOMP_SET_MODE_FILTER): %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* Shows `value` as perf_event_paranoid to this process and its children:
 * a private mount namespace with a read-only file bound over the sysctl. */
static int fake_paranoid(const char *value)
{
	static const char target[] = "/proc/sys/kernel/perf_event_paranoid";
	char path[512];
	size_t len = strlen(value);
	int fd, rc = -1;

	if (unshare(CLONE_NEWNS) != 0) {
		fprintf(stderr, "no-perf: --paranoid needs root (a mount namespace): unshare: %s\n", strerror(errno));
		return -1;
	}
	/* Keeps the bind mount out of the parent namespace. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
		fprintf(stderr, "no-perf: making / private: %s\n", strerror(errno));
		return -1;
	}
	snprintf(path, sizeof path, "%s/no-perf-paranoid-XXXXXX",
	         getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : P_tmpdir);
	fd = mkstemp(path);
	if (fd < 0) {
		fprintf(stderr, "no-perf: mkstemp %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fchmod(fd, 0444) != 0 || write(fd, value, len) != (ssize_t)len || write(fd, "\n", 1) != 1)
		fprintf(stderr, "no-perf: writing %s: %s\n", path, strerror(errno));
	else if (mount(path, target, NULL, MS_BIND, NULL) != 0)
		fprintf(stderr, "no-perf: bind-mounting over %s: %s\n", target, strerror(errno));
	else if (mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) != 0)
		fprintf(stderr, "no-perf: making %s read-only: %s\n", target, strerror(errno));
	else
		rc = 0;
	close(fd);
	/* The mount keeps the file; nothing is left in /tmp. */
	unlink(path);
	return rc;
}

static void usage(void)
{
	fprintf(stderr, "usage: no-perf [--errno=EPERM|EACCES] [--paranoid=N] command [args...]\n"
			"  runs command with perf_event_open(2) failing with that errno (default EPERM,\n"
			"  as Docker's seccomp profile; EACCES is what Debian/Ubuntu kernels with\n"
			"  perf_event_paranoid 3/4 return); --paranoid=N (root only) also shows N in\n"
			"  /proc/sys/kernel/perf_event_paranoid.\n");
}

int main(int argc, char **argv)
{
	int err = EPERM, i;
	const char *paranoid = NULL;

	for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		if (strcmp(argv[i], "--errno=EPERM") == 0)
			err = EPERM;
		else if (strcmp(argv[i], "--errno=EACCES") == 0)
			err = EACCES;
		else if (strncmp(argv[i], "--paranoid=", 11) == 0 &&
			 strspn(argv[i] + 11, "-0123456789") == strlen(argv[i] + 11) && argv[i][11])
			paranoid = argv[i] + 11;
		else if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else {
			fprintf(stderr, "no-perf: unknown option %s\n", argv[i]);
			usage();
			return 125;
		}
	}
	if (i >= argc) {
		usage();
		return 125;
	}
	if (paranoid && fake_paranoid(paranoid) != 0)
		return 125;
	if (install_filter(err) != 0)
		return 125;
	execvp(argv[i], argv + i);
	fprintf(stderr, "no-perf: %s: %s\n", argv[i], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

#else /* !__x86_64__ */

/* The filter matches x86-64's system call numbers and audit arch; on any
 * other architecture it would match the wrong call or none, and a run that
 * believed perf_event_open refused would prove nothing. */
int main(void)
{
	fprintf(stderr, "no-perf: built for x86-64 only (its seccomp filter matches x86-64's "
			"perf_event_open); not running\n");
	return 125;
}

#endif
