/*
 * The writable alias: refused (EPERM, nothing changes) for a user without
 * root or CAP_SYS_ADMIN, checked in a child that drops to nobody; granted to
 * root, where writing 0xFFFF0000 to rpm_control zeroes every counter but
 * rpm_time.  Run with PAPI_HERITAGE_PARAGON_RPM_MESH=1x2 and a private
 * PAPI_HERITAGE_PARAGON_RPM_SHM.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <i860paragon/rpm.h>

#include "test_expect.h"

int main(void)
{
	struct rpm *rpm = (struct rpm *)RPM_BASE_VADDR;

	if (geteuid() != 0) {
		printf("SKIPPED: resetting through the writable alias needs root or CAP_SYS_ADMIN (as root, this test also "
		       "shows uid 65534 refused)\n");
		return 77;
	}
	if (rpm_mesh_join(0) != 0) {
		fprintf(stderr, "rpm_mesh_join(0): %s\n", rpm_last_error());
		return 1;
	}
	/* 100 units east from node 0 to node 1 on the 1x2 mesh. */
	EXPECT(rpm_mesh_send(1, 6400) == 0, "rpm_mesh_send: %s", rpm_last_error());
	unsigned east = rpm->rpm_east;
	EXPECT(east == 100, "rpm_east %u after 6400 bytes, want 100", east);

	/* Refused: a child as nobody. */
	pid_t pid = fork();
	if (pid == 0) {
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(3);
		errno = 0;
		struct rpm *w = rpm_map_writable("rpm0");
		if (w != NULL || errno != EPERM)
			_exit(1);
		printf("as uid 65534: rpm_map_writable(\"rpm0\") = NULL, errno EPERM: %s\n", rpm_last_error());
		fflush(stdout);
		_exit(strstr(rpm_last_error(), "root") ? 0 : 2);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the unprivileged child was not refused as expected (status %#x)", st);
	EXPECT(rpm->rpm_east == east, "rpm_east changed from %u to %u after a refused request", east, rpm->rpm_east);

	errno = 0;
	EXPECT(rpm_map_writable("rpm1") == NULL && errno == ENODEV, "rpm1 was not refused with ENODEV");

	/* Granted: reset. */
	struct rpm *w = rpm_map_writable("rpm0");
	EXPECT(w != NULL, "root was refused: %s", rpm_last_error());
	if (!w)
		return 1;
	double t0 = dclock();
	w->rpm_control = 0xFFFF0000;
	unsigned cpu0 = rpm->rpm_cpu0, cpu1 = rpm->rpm_cpu1, ltu = rpm->rpm_ltu;
	double dt = dclock() - t0;
	EXPECT(rpm->rpm_east == 0, "rpm_east %u after reset", rpm->rpm_east);
	/* The bus counters restart from 0: at most the cycles since the reset. */
	EXPECT(cpu0 <= (dt + 0.01) * 50e6, "rpm_cpu0 %u, %.6f s after reset", cpu0, dt);
	EXPECT(cpu1 <= (dt + 0.01) * 50e6 && ltu <= (dt + 0.01) * 50e6, "cpu1 %u ltu %u after reset", cpu1, ltu);
	double now = dclock();
	unsigned long long tr;
	rpm_timer_t t = rpm->rpm_time;
	memcpy(&tr, &t, sizeof tr);
	EXPECT((double)tr / 1e7 > now - 0.01, "rpm_time %llu was reset (dclock %.3f)", tr, now);
	EXPECT(w->rpm_control == 0, "rpm_control reads %#x, want 0", w->rpm_control);
	EXPECT(rpm_mesh_send(1, 640) == 0 && rpm->rpm_east == 10, "counting after reset: rpm_east %u, want 10", rpm->rpm_east);
	printf("as root: reset through the writable alias: rpm_east 100 -> 0 -> 10, cpu0 %u cycles %.0f us after, rpm_time kept\n",
	       cpu0, dt * 1e6);
	rpm_mesh_leave();
	return heritage_test_done("rpm_reset");
}
