/*
 * papi_hl_fp64: the high-level API's JSON output (PAPI_hl_region_begin/end,
 * PAPI_EVENTS, PAPI_OUTPUT_DIRECTORY) shows a 0.2 s region's
 * paragon_rpm:::rpm_time_s as about 0.2 (issue 20, item 4).  PAPI 7.0.0
 * subtracted an FP64 event's double bits as integers and printed the result
 * with %lld: "440185741841".  components/patches/papi-7.0.0-hl-fp64.patch
 * makes it use each event's PAPI_event_info_t: FP64 values subtracted and
 * printed as doubles, PAPI_TIMESCOPE_POINT events stored as instantaneous
 * values, and "=instant" applying to its own event only.
 *
 *   papi_hl_fp64 delta     PAPI_EVENTS=rpm_time_s,rpm_time,rpm_east,rpms_idle:
 *                          a 0.2 s region with a PAPI_hl_read at 0.1 s;
 *                          rpm_time_s about 0.2 (and the read about 0.1),
 *                          within this test's own CLOCK_MONOTONIC bounds of
 *                          the region; rpm_time the same in integer ticks;
 *                          rpm_east exactly the 100 units sent; rpms_idle (FP64,
 *                          a running sum) between 0 and the CPUs' time
 *   papi_hl_fp64 instant   PAPI_EVENTS=rpm_time_s=instant,rpm_time: rpm_time_s
 *                          is the clock at the region's end (CLOCK_BOOTTIME
 *                          seconds), rpm_time still the region's ticks
 *
 * Run with PAPI_HERITAGE_PARAGON_RPM_MESH=1x2.  The region runs in a child,
 * which writes its JSON when it exits; the parent reads it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <i860paragon/rpm.h>

#include "heritage_test.h"

#define EV_S "paragon_rpm:::rpm_time_s"
#define EV_T "paragon_rpm:::rpm_time"
#define EV_E "paragon_rpm:::rpm_east"
#define EV_I "paragon_rpm:::rpms_idle"

/* What the child measured with its own clocks, for the parent. */
struct bounds {
	double outer;      /* CLOCK_MONOTONIC: just before begin to just after end */
	double read_outer; /* just before begin to just after PAPI_hl_read */
	double end_lo, end_hi; /* CLOCK_BOOTTIME just before and after PAPI_hl_region_end */
	int rc;
};

static double now(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static struct bounds run_region(int with_read)
{
	struct bounds b = { 0 };
	if (rpm_mesh_join(0) != 0) {
		fprintf(stderr, "rpm_mesh_join(0) on a 1x2 mesh (PAPI_HERITAGE_PARAGON_RPM_MESH=1x2): %s\n",
		        rpm_last_error());
		b.rc = -1;
		return b;
	}
	/* The first region initialises PAPI and the HL API (milliseconds):
	 * not inside the measured one. */
	b.rc = PAPI_hl_region_begin("warmup");
	if (b.rc == PAPI_OK)
		b.rc = PAPI_hl_region_end("warmup");
	if (b.rc != PAPI_OK)
		return b;
	double t0 = now(CLOCK_MONOTONIC);
	b.rc = PAPI_hl_region_begin("sleep");
	if (b.rc != PAPI_OK)
		return b;
	/* 100 units east from node 0 to node 1. */
	if (rpm_mesh_send(1, 6400) != 0)
		fprintf(stderr, "rpm_mesh_send: %s\n", rpm_last_error());
	if (with_read) {
		sleep_s(0.1);
		b.rc = PAPI_hl_read("sleep");
		b.read_outer = now(CLOCK_MONOTONIC) - t0;
		if (b.rc != PAPI_OK)
			return b;
		sleep_s(0.1);
	} else {
		sleep_s(0.2);
	}
	b.end_lo = now(CLOCK_BOOTTIME);
	b.rc = PAPI_hl_region_end("sleep");
	b.end_hi = now(CLOCK_BOOTTIME);
	b.outer = now(CLOCK_MONOTONIC) - t0;
	return b;
}

/* The JSON file the child wrote: DIR/papi_hl_output/rank_*.json. */
static char *read_output(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/papi_hl_output", dir);
	DIR *d = opendir(path);
	if (!d)
		return NULL;
	struct dirent *e;
	char *text = NULL;
	while (!text && (e = readdir(d))) {
		if (strncmp(e->d_name, "rank_", 5) != 0)
			continue;
		char file[4400];
		snprintf(file, sizeof file, "%s/%s", path, e->d_name);
		FILE *f = fopen(file, "r");
		if (!f)
			break;
		text = calloc(1, 1 << 20);
		if (text)
			fread(text, 1, (1 << 20) - 1, f);
		fclose(f);
	}
	closedir(d);
	return text;
}

/* The value of an event in the region ("name":"v", or
 * "name":{"region_value":"v", "read_1":"r", ...}): region_value, or the read
 * named `read` ("read_1"); its text in *str.  0 if found. */
static int value_of(const char *json, const char *event, const char *read, char *str, size_t len)
{
	char key[256];
	snprintf(key, sizeof key, "\"%s\":", event);
	/* The "sleep" region's entry, not event_definitions' nor the "warmup"
	 * region's (before it): the last occurrence. */
	const char *p = NULL, *q = json;
	while ((q = strstr(q, key))) {
		p = q;
		q += strlen(key);
	}
	if (!p)
		return -1;
	p += strlen(key);
	while (*p == ' ' || *p == '\n' || *p == '\t')
		p++;
	if (*p == '{') {
		snprintf(key, sizeof key, "\"%s\":\"", read ? read : "region_value");
		const char *end = strchr(p, '}');
		p = strstr(p, key);
		if (!p || (end && p > end))
			return -1;
		p += strlen(key);
	} else if (*p == '"' && !read) {
		p++;
	} else {
		return -1;
	}
	size_t n = strcspn(p, "\"");
	if (n >= len)
		return -1;
	memcpy(str, p, n);
	str[n] = 0;
	return 0;
}

/* The value as a number, and whether its text is a decimal or an integer. */
static double number(const char *json, const char *event, const char *read, int *is_int)
{
	char s[128];
	if (value_of(json, event, read, s, sizeof s) != 0) {
		EXPECT(0, "%s%s%s: not in the JSON", event, read ? " " : "", read ? read : "");
		*is_int = -1;
		return NAN;
	}
	char *end;
	double v = strtod(s, &end);
	EXPECT(*end == 0 && end != s, "%s: \"%s\" is not a number", event, s);
	*is_int = strspn(s, "-0123456789") == strlen(s);
	printf("  %s%s%s = \"%s\"\n", event, read ? " " : "", read ? read : "", s);
	return v;
}

/* PAPI's papi_hl_output_writer.py (installed with libpapi) summarises the
 * output: it must take the decimal values (7.0.0's and 7.2.0's did int() on
 * each), and its rpm_time_s is the JSON's (to the 2 places it may round to).
 * The output directory is --source up to 7.1.0, --source_dir since 7.2.0
 * (which refuses --source as ambiguous, having --source_file too). */
static void check_writer(const char *dir, double want)
{
	const char *stage = getenv("STAGE");
	char script[4096], cmd[12800], line[512];
	snprintf(script, sizeof script, "%s/bin/papi_hl_output_writer.py", stage ? stage : "stage");
	if (access(script, R_OK) != 0 || system("python3 -c '' 2>/dev/null") != 0) {
		printf("papi_hl_output_writer.py: not checked (no python3, or no %s)\n", script);
		return;
	}
	snprintf(cmd, sizeof cmd, "cd '%s' && opt=--source && { ! grep -q -e \"'--source_dir'\" '%s' || opt=--source_dir; } && "
		 "python3 '%s' $opt papi_hl_output --type summary 2>&1", dir, script, script);
	FILE *p = popen(cmd, "r");
	if (!p)
		return;
	int seen = 0;
	double v = NAN;
	printf("papi_hl_output_writer.py --type summary:\n");
	while (fgets(line, sizeof line, p)) {
		fputs(line, stdout);
		char *k = strstr(line, "\"" EV_S "\":");
		if (k) { /* the last: the "sleep" region's */
			v = strtod(k + strlen("\"" EV_S "\":"), NULL);
			seen = 1;
		}
	}
	int st = pclose(p);
	EXPECT(st == 0, "papi_hl_output_writer.py failed (status %#x)", st);
	EXPECT(seen, "papi_hl_output_writer.py printed no %s", EV_S);
	EXPECT(!seen || fabs(v - want) <= 0.005, "papi_hl_output_writer.py: rpm_time_s %g, want %g", v, want);
}

int main(int argc, char **argv)
{
	int instant = argc == 2 && strcmp(argv[1], "instant") == 0;
	if (argc != 2 || (!instant && strcmp(argv[1], "delta") != 0)) {
		fprintf(stderr, "usage: papi_hl_fp64 delta|instant\n");
		return 2;
	}
	/* Where the harness says (TMPDIR), else the system's. */
	const char *tmp = getenv("TMPDIR");
	char dir[200];
	snprintf(dir, sizeof dir, "%s/papi_hl_fp64.XXXXXX", tmp && *tmp ? tmp : P_tmpdir);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	setenv("PAPI_OUTPUT_DIRECTORY", dir, 1);
	setenv("PAPI_EVENTS", instant ? EV_S "=instant," EV_T : EV_S "," EV_T "," EV_E "," EV_I, 1);
	unsetenv("PAPI_HL_VERBOSE");
	printf("PAPI_EVENTS=%s\n", getenv("PAPI_EVENTS"));

	int fds[2];
	if (pipe(fds) != 0)
		return 1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		/* The HL API's own output on stdout ("PAPI-HL Output:" and the
		 * JSON) goes to the log as it is. */
		struct bounds b = run_region(!instant);
		if (write(fds[1], &b, sizeof b) != (ssize_t)sizeof b)
			_exit(3);
		close(fds[1]);
		exit(0); /* atexit: the HL API writes its JSON */
	}
	close(fds[1]);
	struct bounds b;
	ssize_t got = read(fds[0], &b, sizeof b);
	int st = 0;
	waitpid(pid, &st, 0);
	if (got != (ssize_t)sizeof b || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "the region's child failed (status %#x)\n", st);
		return 1;
	}
	if (b.rc != PAPI_OK) {
		fprintf(stderr, "the region failed: %d (%s)\n", b.rc, PAPI_strerror(b.rc));
		return 1;
	}
	char *json = read_output(dir);
	if (!json) {
		fprintf(stderr, "no %s/papi_hl_output/rank_*.json\n", dir);
		return 1;
	}
	printf("%s", json);
	printf("region: %.6f s by CLOCK_MONOTONIC around it\n", b.outer);

	int is_int;
	/* rpm_time counts 100 ns ticks: the region's ticks lie within a tick
	 * of [0.2 s, the outer bound]. */
	double ticks = number(json, EV_T, NULL, &is_int);
	EXPECT(is_int == 1, "rpm_time (UINT64) is not printed as an integer");
	EXPECT(ticks >= 0.2 * 1e7 - 1 && ticks <= b.outer * 1e7 + 1, "rpm_time %.0f ticks, want [%.0f, %.0f]", ticks,
	       0.2 * 1e7, b.outer * 1e7);
	double s = number(json, EV_S, NULL, &is_int);
	if (!instant) {
		/* The acceptance: about 0.2, as this test's own clock measured
		 * the region (a sleep of 0.2 s overslept on a loaded machine),
		 * and within its bounds (rpm_time_s has rpm_time's 100 ns
		 * resolution): the region's own reads lie inside the test's. */
		EXPECT(fabs(s - b.outer) < 0.02, "rpm_time_s of a 0.2 s region: %.9g, want about %.6f (CLOCK_MONOTONIC)",
		       s, b.outer);
		EXPECT(s >= 0.2 - 1e-7 && s <= b.outer + 1e-7, "rpm_time_s %.9f s, want [0.2, %.9f]", s, b.outer);
		EXPECT(is_int == 0, "rpm_time_s (FP64) printed as an integer");
		double r = number(json, EV_S, "read_1", &is_int);
		EXPECT(r >= 0.1 - 1e-7 && r <= b.read_outer + 1e-7, "rpm_time_s at PAPI_hl_read %.9f s, want [0.1, %.9f]",
		       r, b.read_outer);
		double east = number(json, EV_E, NULL, &is_int);
		EXPECT(is_int == 1 && east == 100, "rpm_east: %.17g, want the 100 units sent", east);
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		double idle = number(json, EV_I, NULL, &is_int);
		/* /proc/stat moves in ticks: one each CPU either side. */
		double tick = 1.0 / (double)sysconf(_SC_CLK_TCK);
		EXPECT(idle >= 0 && idle <= (double)ncpu * (b.outer + 2 * tick),
		       "rpms_idle (FP64 running sum) %.9g s, want [0, %ld CPUs x %.3f s]", idle, ncpu, b.outer);
	} else {
		/* "=instant": the clock at the region's end, in seconds since boot. */
		EXPECT(s >= b.end_lo - 1e-6 && s <= b.end_hi + 1e-6,
		       "rpm_time_s=instant %.7f, want CLOCK_BOOTTIME at the region's end [%.7f, %.7f]", s, b.end_lo,
		       b.end_hi);
	}
	free(json);
	if (!instant)
		check_writer(dir, s);
	/* The output directory is this test's own: remove it. */
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return heritage_test_done(instant ? "papi_hl_fp64 instant" : "papi_hl_fp64 delta");
}
