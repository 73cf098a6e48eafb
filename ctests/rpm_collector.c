/*
 * Counts stay exact while rpmd resets the registers every 10 ms: 300
 * messages of 640 bytes east on a 1x2 mesh are 3000 units for PAPI, while the
 * 32-bit register a legacy program reads keeps being zeroed.  Also: rpmd
 * never runs twice, writes its CSV log, and "rpmd stop" stops it.
 *
 *   rpm_collector RPMD   (PAPI_HERITAGE_PARAGON_RPM_MESH=1x2, a private _SHM)
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <i860paragon/rpm.h>
#include "heritage_test.h"

static int run(char *const argv[])
{
	pid_t pid = fork();
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rpm_collector RPMD\n");
		return 2;
	}
	if (geteuid() != 0)
		SKIP("rpmd resets the counters, which needs root");
	char pidfile[512], logfile[512], interval[] = "--interval=0.01", fg[] = "-f", stop[] = "stop";
	const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : P_tmpdir;
	snprintf(pidfile, sizeof pidfile, "--pidfile=%s/rpm_collector.%d.pid", tmp, (int)getpid());
	snprintf(logfile, sizeof logfile, "--log=%s/rpm_collector.%d.csv", tmp, (int)getpid());
	char *daemon_argv[] = { argv[1], fg, interval, logfile, pidfile, NULL };

	pid_t rpmd = fork();
	if (rpmd == 0) {
		execv(argv[1], daemon_argv);
		_exit(127);
	}
	/* Wait for its pid in the pid file: the file exists a moment before the
	 * pid is in it (read then, it failed 2 runs in 9 when the probes'
	 * timing shifted). */
	long pid = -1;
	for (int i = 0; i < 200 && pid < 0; i++) {
		usleep(10000);
		FILE *pf = fopen(pidfile + strlen("--pidfile="), "r");
		if (pf) {
			if (fscanf(pf, "%ld", &pid) != 1)
				pid = -1;
			fclose(pf);
		}
	}
	if (pid < 0) {
		fprintf(stderr, "rpmd did not write its pid file\n");
		kill(rpmd, SIGKILL);
		return 1;
	}
	EXPECT_EQ("pid file holds rpmd's pid", pid, rpmd);
	EXPECT_EQ("a second rpmd refuses to start", run(daemon_argv), 1);

	heritage_test_init();
	if (rpm_mesh_join(0) != 0) {
		fprintf(stderr, "rpm_mesh_join: %s\n", rpm_last_error());
		kill(rpmd, SIGKILL);
		return 1;
	}
	int set = PAPI_NULL;
	long long v[1];
	CHECK_PAPI(PAPI_create_eventset(&set));
	CHECK_PAPI(PAPI_add_named_event(set, "paragon_rpm:::rpm_east"));
	CHECK_PAPI(PAPI_start(set));
	struct rpm *rpm = (struct rpm *)RPM_BASE_VADDR;
	unsigned max_register = 0;
	for (int i = 0; i < 300; i++) {
		if (rpm_mesh_send(1, 640) != 0) {
			fprintf(stderr, "rpm_mesh_send: %s\n", rpm_last_error());
			break;
		}
		if (i % 10 == 9 && rpm->rpm_east > max_register)
			max_register = rpm->rpm_east;
		usleep(1000);
	}
	CHECK_PAPI(PAPI_stop(set, v));
	printf("PAPI rpm_east: %lld units for 300 x 640 bytes; the register a legacy program reads peaked at %u (rpmd resets it)\n",
	       v[0], max_register);
	EXPECT_EQ("PAPI rpm_east exact across resets", v[0], 3000);
	EXPECT_EQ("the register was reset meanwhile (peak < 3000)", max_register < 3000, 1);

	char *stop_argv[] = { argv[1], pidfile, stop, NULL };
	EXPECT_EQ("rpmd stop", run(stop_argv), 0);
	int st = 0;
	waitpid(rpmd, &st, 0);
	EXPECT_EQ("rpmd exited 0", WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
	EXPECT_EQ("pid file removed", access(pidfile + strlen("--pidfile="), F_OK) != 0, 1);

	FILE *log = fopen(logfile + strlen("--log="), "r");
	char line[512];
	int lines = 0;
	long long east_bytes = 0;
	while (log && fgets(line, sizeof line, log)) {
		unsigned long long e;
		unsigned node;
		if (lines++ == 0)
			EXPECT_EQ("CSV header", strncmp(line, "time_s,node,bus_util_pct", 24), 0);
		else if (sscanf(line, "%*f,%u,%*f,%*u,%*u,%*u,%*u,%*u,%*u,%llu", &node, &e) == 2 && node == 0)
			east_bytes += (long long)e;
	}
	if (log)
		fclose(log);
	printf("rpmd log: %d lines, node 0 east bytes summed over intervals %lld\n", lines, east_bytes);
	EXPECT_EQ("log has a line per node per interval (>= 20)", lines >= 20, 1);
	/* The log's intervals add up to what was sent, less what fell between
	 * rpmd's last read and our last message. */
	EXPECT_EQ("logged east bytes <= sent", east_bytes <= 300 * 640, 1);
	EXPECT_EQ("logged east bytes >= 90% of sent", east_bytes >= 300 * 640 * 9 / 10, 1);
	unlink(logfile + strlen("--log="));
	rpm_mesh_leave();
	CHECK_PAPI(PAPI_cleanup_eventset(set));
	CHECK_PAPI(PAPI_destroy_eventset(&set));
	return heritage_test_done("rpm_collector");
}
