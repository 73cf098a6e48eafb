/*
 * The rpmd service end to end (issue 19): as root, start rpmd with nothing
 * but CAP_PERFMON (setpriv, as rpmd.service does), then, as uid 65534, an
 * account that may not count system-wide itself, read paragon_rpm:::rpms_dat
 * and rpms_it through PAPI.  They are counted by the service and right: at
 * least the pages the reader touched and the system calls it made, at most
 * what this test's own system-wide perf counts (opened as root, independently
 * of rpmd) saw around the reader's whole life.  The reader then tries to
 * write, truncate, chmod, remap writable, store into, remove, replace and
 * stop the service's page: every attempt fails and the daemon's counts go on
 * growing.  Also: an object planted under the name by another account is
 * refused (and replaced by rpmd when it starts); a killed daemon's page is
 * refused as stale, to a new reader and to a running event set; a restarted
 * daemon's page is taken at the next PAPI_reset; a service stopped with
 * SIGTERM removes its page.
 *
 *   rpm_service RPMD    (as root, with a private PAPI_HERITAGE_PARAGON_RPM_SHM)
 *
 * The reader is this program again, run by setpriv as uid 65534
 * (rpm_service count|lifecycle|refused TEXT).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "heritage_test.h"
#include "rpm_service_page.h"

#define READER_UID 65534
#define PLANTER_UID 4242 /* another account: no passwd entry needed */
#define CAP_PERFMON_BIT 38
enum { NPAGES = 2000, NCALLS = 5000 };

static char service_path[512];

/* The page as any account may see it (rpm_service_page.h).  NULL if none. */
static const struct rpm_service_page *map_page(void)
{
	return rpm_page_map(service_path, NULL);
}

/* The heartbeat, the page-fault total over all CPUs and the daemon's pid
 * of the page there now. */
static int page_state(uint64_t *heartbeat, uint64_t *faults, int32_t *pid)
{
	const struct rpm_service_page *p = map_page();
	if (!p)
		return -1;
	int rc = rpm_page_read(p, heartbeat, faults, pid);
	rpm_page_unmap(p);
	return rc;
}

/* Waits until rpmd has published counts read after time t. */
static int wait_published_after(uint64_t t)
{
	for (int i = 0; i < 5000; i++) {
		uint64_t hb;
		if (page_state(&hb, NULL, NULL) == 0 && hb > t)
			return 0;
		usleep(1000);
	}
	return -1;
}

static void touch_fresh_pages(int n)
{
	if (rpm_page_touch_fresh(n) != 0) {
		fprintf(stderr, "mmap: %s\n", strerror(errno));
		exit(1);
	}
}

static unsigned long long cap_mask(pid_t pid, const char *field)
{
	char path[64], line[256];
	unsigned long long v = ~0ULL;
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, field, strlen(field)) == 0 && line[strlen(field)] == ':')
			v = strtoull(line + strlen(field) + 1, NULL, 16);
	if (f)
		fclose(f);
	return v;
}

static int contains(const char *s, const char *what)
{
	return s && strstr(s, what) != NULL;
}

static char *read_line(FILE *f, char *buf, int len)
{
	if (!fgets(buf, len, f)) {
		fprintf(stderr, "the reader ended early\n");
		exit(1);
	}
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

/* ================================================================ reader */

static void expect_not_running_as_root(void)
{
	EXPECT(getuid() == READER_UID && geteuid() == READER_UID, "the reader runs as uid %d, want %d", (int)geteuid(),
	       READER_UID);
	EXPECT(cap_mask(getpid(), "CapEff") == 0, "the reader has capabilities %#llx", cap_mask(getpid(), "CapEff"));
	/* It may not count system-wide itself: what it reads is the service's. */
	struct perf_event_attr a = { .size = sizeof a, .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_PAGE_FAULTS };
	int fd = (int)syscall(SYS_perf_event_open, &a, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	EXPECT(fd < 0, "uid %d may count system-wide itself: the service would not be used", READER_UID);
	if (fd >= 0)
		close(fd);
}

static int add(int set, const char *name)
{
	int rc = PAPI_add_named_event(set, name);
	if (rc != PAPI_OK)
		fprintf(stderr, "PAPI_add_named_event(%s) = %s: %s\n", name, PAPI_strerror(rc), papi_heritage_last_error());
	return rc;
}

/* Everything an account without privilege might try against the page. */
static void attack(void)
{
	int32_t pid = 0;
	uint64_t before = 0, after = 0, hb0 = 0;
	EXPECT(page_state(&hb0, &before, &pid) == 0, "no page to attack");

	errno = 0;
	int fd = open(service_path, O_RDWR);
	EXPECT(fd < 0 && errno == EACCES, "open O_RDWR: fd %d, %s", fd, strerror(errno));
	fd = open(service_path, O_WRONLY | O_TRUNC);
	EXPECT(fd < 0 && errno == EACCES, "open O_WRONLY|O_TRUNC: fd %d, %s", fd, strerror(errno));
	fd = open(service_path, O_RDONLY);
	EXPECT(fd >= 0, "open O_RDONLY: %s", strerror(errno));
	errno = 0;
	void *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT(w == MAP_FAILED && errno == EACCES, "a writable shared mapping: %p, %s", w, strerror(errno));
	EXPECT(pwrite(fd, "x", 1, 0) < 0 && errno == EBADF, "pwrite: %s", strerror(errno));
	EXPECT(ftruncate(fd, 0) != 0 && (errno == EINVAL || errno == EBADF), "ftruncate: %s", strerror(errno));
	EXPECT(fchmod(fd, 0666) != 0 && errno == EPERM, "fchmod 0666: %s", strerror(errno));
	EXPECT(fchown(fd, READER_UID, READER_UID) != 0 && errno == EPERM, "fchown: %s", strerror(errno));
	/* A private writable mapping is allowed, and changes only the copy. */
	struct rpm_service_page *r = mmap(NULL, sizeof *r, PROT_READ, MAP_SHARED, fd, 0);
	EXPECT(r != MAP_FAILED, "PROT_READ mapping: %s", strerror(errno));
	if (r != MAP_FAILED) {
		EXPECT(mprotect(r, 4096, PROT_READ | PROT_WRITE) != 0 && errno == EACCES, "mprotect writable: %s",
		       strerror(errno));
		pid_t c = fork();
		if (c == 0) {
			__atomic_store_n(&r->seq, 1, __ATOMIC_RELAXED); /* dies here */
			_exit(0);
		}
		int st = 0;
		waitpid(c, &st, 0);
		EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "a store through the mapping: status %#x, want SIGSEGV", st);
		munmap(r, sizeof *r);
	}
	struct rpm_service_page *priv = mmap(NULL, sizeof *priv, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (priv != MAP_FAILED) {
		priv->cpu[0].count[RPM_PF_ALL] = 0;
		munmap(priv, sizeof *priv);
	}
	if (fd >= 0)
		close(fd);
	/* Remove or replace it: /dev/shm is sticky. */
	EXPECT(unlink(service_path) != 0 && errno == EPERM, "unlink: %s", strerror(errno));
	char fake[600];
	snprintf(fake, sizeof fake, "%s.fake", service_path);
	int ffd = open(fake, O_RDWR | O_CREAT | O_EXCL, 0444);
	EXPECT(ffd >= 0, "creating %s: %s", fake, strerror(errno));
	if (ffd >= 0)
		close(ffd);
	EXPECT(rename(fake, service_path) != 0 && errno == EPERM, "rename over it: %s", strerror(errno));
	unlink(fake);
	/* Stop or pause the daemon. */
	EXPECT(kill(pid, SIGTERM) != 0 && errno == EPERM, "kill(rpmd %d, SIGTERM): %s", (int)pid, strerror(errno));
	EXPECT(kill(pid, SIGSTOP) != 0 && errno == EPERM, "kill(rpmd %d, SIGSTOP): %s", (int)pid, strerror(errno));

	/* Unharmed: still the daemon's, still publishing, counts never back. */
	struct stat st;
	EXPECT(stat(service_path, &st) == 0 && st.st_uid == 0 && (st.st_mode & 0777) == 0444,
	       "after the attempts the page is uid %u mode %03o", (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
	int32_t pid2 = 0;
	EXPECT(wait_published_after(hb0) == 0 && page_state(NULL, &after, &pid2) == 0, "rpmd stopped publishing");
	EXPECT(pid2 == pid && after >= before, "rpmd %d -> %d, faults %llu -> %llu", (int)pid, (int)pid2,
	       (unsigned long long)before, (unsigned long long)after);
}

static int reader_count(int with_it)
{
	expect_not_running_as_root();
	heritage_test_init();
	int set = PAPI_NULL, code;
	CHECK_PAPI(PAPI_create_eventset(&set));
	if (add(set, "paragon_rpm:::rpms_dat") != PAPI_OK || (with_it && add(set, "paragon_rpm:::rpms_it") != PAPI_OK))
		return 1;
	/* Described as the service's, and of the same kind as an account's own
	 * perf count would be: rpms_dat modelled (all faults stand for data
	 * access traps), rpms_it measured. */
	struct papi_heritage_event_facts facts;
	PAPI_event_info_t info;
	CHECK_PAPI(PAPI_event_name_to_code("paragon_rpm:::rpms_dat", &code));
	CHECK_PAPI(papi_heritage_event_facts(code, &facts));
	EXPECT_EQ("rpms_dat is modelled, as with its own count", facts.source, PAPI_HERITAGE_MODELLED);
	CHECK_PAPI(PAPI_get_event_info(code, &info));
	EXPECT(contains(info.long_descr, "counted system-wide by the rpmd service"), "rpms_dat's description: %s",
	       info.long_descr);
	if (with_it) {
		CHECK_PAPI(PAPI_event_name_to_code("paragon_rpm:::rpms_it", &code));
		CHECK_PAPI(papi_heritage_event_facts(code, &facts));
		EXPECT_EQ("rpms_it is measured", facts.source, PAPI_HERITAGE_MEASURED);
	}

	long long v[2] = { 0, -1 };
	CHECK_PAPI(PAPI_start(set));
	touch_fresh_pages(NPAGES);
	for (int i = 0; i < NCALLS; i++)
		(void)syscall(SYS_getppid);
	/* Counts up to now are in the next publication (at most one interval). */
	EXPECT(wait_published_after(rpm_page_boot_ns()) == 0, "rpmd did not publish within 5 s");
	CHECK_PAPI(PAPI_stop(set, v));
	printf("COUNTS %lld %lld\n", v[0], with_it ? v[1] : -1LL);
	printf("description: %s\n", info.long_descr);
	attack();
	/* Resetting the set only moves this reader's own snapshot. */
	CHECK_PAPI(PAPI_start(set));
	CHECK_PAPI(PAPI_reset(set));
	EXPECT_EQ("PAPI_write", PAPI_write(set, v), PAPI_ENOSUPP);
	CHECK_PAPI(PAPI_stop(set, v));
	EXPECT(v[0] >= 0, "rpms_dat %lld after PAPI_reset", v[0]);
	printf("ATTACKS refused\n");
	return heritage_test_done("rpm_service reader");
}

/* Counting through the death and the restart of the daemon. */
static int reader_lifecycle(void)
{
	char line[256];
	expect_not_running_as_root();
	heritage_test_init();
	int set = PAPI_NULL;
	long long v[1];
	CHECK_PAPI(PAPI_create_eventset(&set));
	if (add(set, "paragon_rpm:::rpms_dat") != PAPI_OK)
		return 1;
	CHECK_PAPI(PAPI_start(set));
	CHECK_PAPI(PAPI_read(set, v));
	printf("STARTED\n");
	read_line(stdin, line, sizeof line); /* the daemon was killed, its page is stale now */
	int rc = PAPI_read(set, v);
	EXPECT(rc == PAPI_ESYS && contains(papi_heritage_last_error(), "stopped publishing"),
	       "PAPI_read from a killed rpmd's page: %s, %s", PAPI_strerror(rc), papi_heritage_last_error());
	printf("STALE %s\n", papi_heritage_last_error());
	/* No daemon to re-base on: PAPI_reset says so (it said PAPI_OK and
	 * left the set on the dead page). */
	rc = PAPI_reset(set);
	EXPECT(rc == PAPI_ESYS && contains(papi_heritage_last_error(), "stopped publishing"),
	       "PAPI_reset with no rpmd running: %s, %s", PAPI_strerror(rc), papi_heritage_last_error());
	read_line(stdin, line, sizeof line); /* a new rpmd runs */
	rc = PAPI_read(set, v);
	EXPECT(rc == PAPI_ESYS && contains(papi_heritage_last_error(), "restarted"),
	       "PAPI_read across a restart: %s, %s", PAPI_strerror(rc), papi_heritage_last_error());
	printf("RESTARTED %s\n", papi_heritage_last_error());
	CHECK_PAPI(PAPI_reset(set));
	touch_fresh_pages(NPAGES);
	EXPECT(wait_published_after(rpm_page_boot_ns()) == 0, "the new rpmd did not publish within 5 s");
	CHECK_PAPI(PAPI_stop(set, v));
	EXPECT(v[0] >= NPAGES, "rpms_dat %lld from the restarted rpmd after %d fresh pages", v[0], NPAGES);
	printf("RECOVERED %lld\n", v[0]);
	return heritage_test_done("rpm_service lifecycle");
}

/* Adding rpms_dat is refused, for the reason given. */
static int reader_refused(const char *why)
{
	expect_not_running_as_root();
	heritage_test_init();
	int set = PAPI_NULL;
	CHECK_PAPI(PAPI_create_eventset(&set));
	int rc = PAPI_add_named_event(set, "paragon_rpm:::rpms_dat");
	EXPECT(rc == PAPI_ENOSUPP && contains(papi_heritage_last_error(), why), "adding rpms_dat: %s, \"%s\", want \"%s\"",
	       PAPI_strerror(rc), papi_heritage_last_error(), why);
	printf("refused: %s\n", papi_heritage_last_error());
	return heritage_test_done("rpm_service refused");
}

/* ================================================================ root */

static pid_t rpmd_pid;
static const char *rpmd_path;
static char pidfile_opt[600], self_path[PATH_MAX];

static void kill_rpmd(void)
{
	if (rpmd_pid > 0) {
		kill(rpmd_pid, SIGKILL);
		waitpid(rpmd_pid, NULL, 0);
		rpmd_pid = 0;
	}
}

/* rpmd as the unit runs it: uid 0 holding CAP_PERFMON and nothing else
 * (securebits noroot: root's uid grants no capability on exec). */
static pid_t start_rpmd(void)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		execlp("setpriv", "setpriv", "--inh-caps=-all,+perfmon", "--ambient-caps=-all,+perfmon",
		       "--bounding-set=-all,+perfmon", "--securebits=+noroot,+noroot_locked,+no_setuid_fixup", "--",
		       rpmd_path, "-f", "--no-log", "--publish-interval=0.01", pidfile_opt, (char *)NULL);
		_exit(127);
	}
	/* Up when its page is there, root's, and names it. */
	for (int i = 0; i < 5000; i++) {
		int32_t p = 0;
		uint64_t hb;
		struct stat st;
		if (page_state(&hb, NULL, &p) == 0 && p == pid && stat(service_path, &st) == 0 && st.st_uid == 0)
			return pid;
		int status;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			fprintf(stderr, "rpmd (under setpriv) exited with status %#x before publishing\n", status);
			exit(1);
		}
		usleep(1000);
	}
	fprintf(stderr, "rpmd did not publish %s within 5 s\n", service_path);
	kill(pid, SIGKILL);
	exit(1);
}

/* The test's own system-wide count, as root, independent of rpmd. */
struct syswide {
	int n;
	int fd[1024];
};

static int syswide_open(struct syswide *w, uint32_t type, uint64_t config, char *why, size_t len)
{
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	w->n = 0;
	for (long c = 0; c < ncpus && w->n < 1024; c++) {
		struct perf_event_attr a = { .size = sizeof a, .type = type, .config = config };
		int fd = (int)syscall(SYS_perf_event_open, &a, -1, (int)c, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0 && (errno == ENODEV || errno == ENXIO))
			continue; /* offline */
		if (fd < 0) {
			snprintf(why, len, "perf_event_open(type %u, config %llu, CPU %ld): %s", type, (unsigned long long)config,
			         c, strerror(errno));
			while (w->n)
				close(w->fd[--w->n]);
			return -1;
		}
		w->fd[w->n++] = fd;
	}
	return 0;
}

static uint64_t syswide_read(const struct syswide *w)
{
	uint64_t sum = 0, v;
	for (int i = 0; i < w->n; i++)
		if (read(w->fd[i], &v, sizeof v) == (ssize_t)sizeof v)
			sum += v;
	return sum;
}

static long tracepoint_id(void)
{
	static const char *const paths[] = { "/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
		                             "/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id" };
	for (unsigned i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		FILE *f = fopen(paths[i], "r");
		long id = 0;
		if (f && fscanf(f, "%ld", &id) == 1 && id > 0) {
			fclose(f);
			return id;
		}
		if (f)
			fclose(f);
	}
	return 0;
}

struct reader {
	pid_t pid;
	FILE *out;  /* its stdout */
	FILE *in;   /* its stdin */
};

static struct reader spawn_reader(const char *mode, const char *arg)
{
	int to[2], from[2];
	struct reader r = { 0 };
	if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) {
		perror("pipe2");
		exit(1);
	}
	fflush(NULL);
	r.pid = fork();
	if (r.pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		execlp("setpriv", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", self_path, mode, arg,
		       (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	r.in = fdopen(to[1], "w");
	r.out = fdopen(from[0], "r");
	setvbuf(r.in, NULL, _IOLBF, 0);
	return r;
}

/* Waits for the reader, echoing what it printed; its exit status. */
static int finish_reader(struct reader *r, const char *what)
{
	char line[2048];
	while (fgets(line, sizeof line, r->out))
		printf("  [%s] %s", what, line);
	fclose(r->out);
	fclose(r->in);
	int st = 0;
	waitpid(r->pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static int read_int_file(const char *path, int dflt)
{
	FILE *f = fopen(path, "r");
	int v = dflt;
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = dflt;
		fclose(f);
	}
	return v;
}

static int on_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];
	for (const char *p = path ? path : "/usr/bin:/bin"; p && *p; p = strchr(p, ':') ? strchr(p, ':') + 1 : NULL) {
		int n = (int)strcspn(p, ":");
		snprintf(buf, sizeof buf, "%.*s/%s", n, p, prog);
		if (access(buf, X_OK) == 0)
			return 1;
	}
	return 0;
}

/* An object under the service's name, owned by another account, with a
 * fresh heartbeat and counts that would be believed if it were trusted. */
static void plant(void)
{
	pid_t c = fork();
	if (c == 0) {
		if (setgid(PLANTER_UID) != 0 || setuid(PLANTER_UID) != 0)
			_exit(3);
		int fd = open(service_path, O_RDWR | O_CREAT | O_EXCL, 0444);
		static struct rpm_service_page fake;
		fake.magic = RPM_SERVICE_MAGIC;
		fake.version = RPM_SERVICE_VERSION;
		fake.size = sizeof fake;
		fake.ncpus = 1;
		fake.ncounts = RPM_PERF_NCOUNTS;
		fake.pid = getpid();
		fake.interval_ns = 3600000000000ULL;
		fake.heartbeat_ns = rpm_page_boot_ns();
		fake.cpu[0].count[RPM_PF_ALL] = 1ULL << 40;
		_exit(fd >= 0 && write(fd, &fake, sizeof fake) == (ssize_t)sizeof fake ? 0 : 4);
	}
	int st = 0;
	waitpid(c, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "could not plant an object as uid %d (status %#x)\n", PLANTER_UID, st);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	const char *shm = getenv("PAPI_HERITAGE_PARAGON_RPM_SHM");
	if (!shm || !*shm) {
		fprintf(stderr, "rpm_service: run with a private PAPI_HERITAGE_PARAGON_RPM_SHM (not the host's service)\n");
		return 2;
	}
	rpm_page_path(service_path, sizeof service_path, shm);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && strcmp(argv[1], "count") == 0)
		return reader_count(argc >= 3 && strcmp(argv[2], "it") == 0);
	if (argc >= 2 && strcmp(argv[1], "lifecycle") == 0)
		return reader_lifecycle();
	if (argc >= 3 && strcmp(argv[1], "refused") == 0)
		return reader_refused(argv[2]);
	if (argc != 2) {
		fprintf(stderr, "usage: rpm_service RPMD\n");
		return 2;
	}

	if (geteuid() != 0)
		SKIP("it starts rpmd as an administrator would (root, keeping only CAP_PERFMON) and reads as uid %d; "
		     "as this account it cannot start the service",
		     READER_UID);
	if (read_int_file("/proc/sys/kernel/cap_last_cap", 0) < CAP_PERFMON_BIT)
		SKIP("this kernel has no CAP_PERFMON (it came in Linux 5.8): rpmd needs CAP_SYS_ADMIN there (rpmd(8))");
	int paranoid = read_int_file("/proc/sys/kernel/perf_event_paranoid", 2);
	if (paranoid <= 0)
		SKIP("perf_event_paranoid is %d: uid %d may count system-wide itself and would not read the service", paranoid,
		     READER_UID);
	if (!on_path("setpriv"))
		SKIP("no setpriv on PATH (util-linux): it gives rpmd CAP_PERFMON alone and the reader uid %d", READER_UID);
	static char rpmd_abs[PATH_MAX];
	rpmd_path = realpath(argv[1], rpmd_abs);
	if (!rpmd_path || !realpath("/proc/self/exe", self_path)) {
		fprintf(stderr, "rpm_service: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : P_tmpdir;
	snprintf(pidfile_opt, sizeof pidfile_opt, "--pidfile=%s/rpm_service.%d.pid", tmp, (int)getpid());
	atexit(kill_rpmd);

	/* Independent of rpmd: the test's own counts, as root. */
	char why[512];
	struct syswide faults, calls;
	if (syswide_open(&faults, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, why, sizeof why) != 0)
		SKIP("even root may not count system-wide here (%s): a seccomp profile or the kernel refuses "
		     "perf_event_open, so rpmd with CAP_PERFMON would be refused too",
		     why);
	long tp = tracepoint_id();
	int with_it = tp > 0 && syswide_open(&calls, PERF_TYPE_TRACEPOINT, (uint64_t)tp, why, sizeof why) == 0;
	if (!with_it)
		printf("rpms_it not checked: raw_syscalls:sys_enter cannot be counted here (tracefs not mounted?)\n");

	/* 1. Spoofing: another account's object under the name is refused ... */
	plant();
	struct reader r = spawn_reader("refused", "owned by uid 4242");
	EXPECT_EQ("a reader refuses the object uid 4242 planted", finish_reader(&r, "planted"), 0);

	/* ... and rpmd, as root, replaces it. */
	rpmd_pid = start_rpmd();
	struct stat st;
	EXPECT(stat(service_path, &st) == 0 && st.st_uid == 0 && (st.st_mode & 0777) == 0444,
	       "rpmd's page: uid %u mode %03o, want root's 0444", (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
	static const char *const fields[] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb" };
	for (int i = 0; i < 5; i++)
		EXPECT(cap_mask(rpmd_pid, fields[i]) == 1ULL << CAP_PERFMON_BIT, "rpmd's %s is %#llx, want CAP_PERFMON alone",
		       fields[i], cap_mask(rpmd_pid, fields[i]));
	const struct rpm_service_page *page = map_page();
	if (!page || page->err[RPM_PF_ALL]) {
		char reason[RPM_SERVICE_WHY_LEN + 1] = "no page";
		if (page)
			snprintf(reason, sizeof reason, "%s", page->why[RPM_PF_ALL]);
		SKIP("rpmd with CAP_PERFMON may not count page faults here: %s", reason);
	}
	if (with_it && page->err[RPM_SYSCALLS]) {
		printf("rpms_it not checked: rpmd cannot count system calls: %s\n", page->why[RPM_SYSCALLS]);
		with_it = 0;
	}
	printf("rpmd pid %d: uid 0, capabilities CAP_PERFMON only, %u CPUs, publishing every %.0f ms in %s (0444)\n",
	       (int)rpmd_pid, page->ncpus, (double)page->interval_ns / 1e6, service_path);

	/* 2. Counting as uid 65534, bracketed by the test's own counts: the
	 * reader's first snapshot is from a publication read after p0. */
	uint64_t p0 = syswide_read(&faults), c0 = with_it ? syswide_read(&calls) : 0;
	EXPECT(wait_published_after(rpm_page_boot_ns()) == 0, "rpmd does not publish");
	r = spawn_reader("count", with_it ? "it" : "-");
	char line[2048];
	long long dat = -1, it = -1;
	while (dat < 0 && fgets(line, sizeof line, r.out)) {
		printf("  [reader] %s", line);
		sscanf(line, "COUNTS %lld %lld", &dat, &it);
	}
	EXPECT_EQ("the reader as uid 65534 passed", finish_reader(&r, "reader"), 0);
	uint64_t p1 = syswide_read(&faults), c1 = with_it ? syswide_read(&calls) : 0;
	EXPECT(dat >= NPAGES, "rpms_dat %lld as uid %d after touching %d fresh pages", dat, READER_UID, NPAGES);
	EXPECT(dat >= 0 && (uint64_t)dat <= p1 - p0, "rpms_dat %lld, but only %llu page faults happened system-wide "
	       "around the reader", dat, (unsigned long long)(p1 - p0));
	if (with_it) {
		EXPECT(it >= NCALLS, "rpms_it %lld after %d system calls", it, NCALLS);
		EXPECT(it >= 0 && (uint64_t)it <= c1 - c0, "rpms_it %lld, but only %llu system calls happened system-wide "
		       "around the reader", it, (unsigned long long)(c1 - c0));
	}
	printf("as uid %d through rpmd: rpms_dat +%lld for %d pages touched (system-wide around it, counted by this "
	       "test as root: %llu); rpms_it +%lld for %d calls (%llu)\n",
	       READER_UID, dat, NPAGES, (unsigned long long)(p1 - p0), it, NCALLS, (unsigned long long)(c1 - c0));

	/* 3. A killed daemon's page (it had no chance to remove it) goes
	 * stale: refused to a new reader, and to a running set; a restarted
	 * daemon's is taken at PAPI_reset.  (A stopped, live one's only after
	 * a minute: test_paragon checks that rule.) */
	struct reader life = spawn_reader("lifecycle", "-");
	EXPECT(strcmp(read_line(life.out, line, sizeof line), "STARTED") == 0, "lifecycle reader: %s", line);
	kill_rpmd(); /* SIGKILL, and reaped: a zombie's pid still answers kill(pid, 0) */
	/* Gone for certain in our pid namespace: refused 2 intervals after
	 * its last heartbeat, not after the 5 s a reader elsewhere waits. */
	struct stat ns;
	int same_ns = page->pidns && stat("/proc/self/ns/pid", &ns) == 0 && (uint64_t)ns.st_ino == page->pidns;
	uint64_t stale_ns = RPM_SERVICE_STALE_INTERVALS * page->interval_ns;
	if (stale_ns < RPM_SERVICE_STALE_MIN_NS)
		stale_ns = RPM_SERVICE_STALE_MIN_NS;
	if (same_ns)
		stale_ns = RPM_SERVICE_GONE_INTERVALS * page->interval_ns;
	printf("  rpmd killed; a new reader in %s pid namespace should refuse its page after %.3f s\n",
	       same_ns ? "its" : "another", (double)stale_ns / 1e9);
	usleep((useconds_t)(stale_ns / 1000 + 300000));
	EXPECT(access(service_path, F_OK) == 0, "a killed rpmd's page is gone: nothing tests staleness");
	r = spawn_reader("refused", "stale");
	EXPECT_EQ("a new reader refuses a killed rpmd's page", finish_reader(&r, "killed"), 0);
	fprintf(life.in, "KILLED\n");
	printf("  [lifecycle] %s\n", read_line(life.out, line, sizeof line));
	rpmd_pid = start_rpmd();
	fprintf(life.in, "RESTARTED\n");
	EXPECT_EQ("the lifecycle reader passed", finish_reader(&life, "lifecycle"), 0);

	/* 4. A stopped service takes its page with it. */
	munmap((void *)page, sizeof *page);
	kill(rpmd_pid, SIGTERM);
	int status = 0;
	waitpid(rpmd_pid, &status, 0);
	rpmd_pid = 0;
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rpmd's exit status %#x", status);
	EXPECT(access(service_path, F_OK) != 0 && errno == ENOENT, "%s is still there after rpmd stopped", service_path);
	r = spawn_reader("refused", "rpmd is not running");
	EXPECT_EQ("without the service rpms_dat is unavailable, with the reason", finish_reader(&r, "no service"), 0);
	return heritage_test_done("rpm_service");
}
