/*
 * LD_PRELOAD shim: a debug-register breakpoint that opens and never fires,
 * as on the AMD family 26 guest (2000 read-modify-writes, count 0).  Every
 * perf_event_open(PERF_TYPE_BREAKPOINT) made through libc's syscall() is
 * answered with a perf software "dummy" event of the same attributes
 * otherwise: a valid descriptor that counts nothing.  The switch
 * PAPI_HERITAGE_PROBE_DISABLE does not know this; only the probe's counting
 * can tell (ctests/mechanisms dead).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <sys/syscall.h>

/* Six arguments taken whatever the caller passed, as glibc's own syscall()
 * does in assembly: a caller's fifth and last is followed by whatever its
 * frame holds, which ASan called a stack-buffer-underflow (make
 * check-sanitize SANITIZE_TESTS=all, mechanisms_dead); never used for a
 * system call that takes fewer. */
__attribute__((no_sanitize_address)) long syscall(long number, ...)
{
	static long (*real)(long, ...);
	long a[6];
	va_list ap;

	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	if (number == SYS_perf_event_open && a[0]) {
		const struct perf_event_attr *attr = (const struct perf_event_attr *)a[0];
		if (attr->type == PERF_TYPE_BREAKPOINT) {
			struct perf_event_attr dummy = *attr;
			dummy.type = PERF_TYPE_SOFTWARE;
			dummy.config = PERF_COUNT_SW_DUMMY;
			dummy.bp_type = 0;
			dummy.bp_addr = 0;
			dummy.bp_len = 0;
			return real(number, &dummy, a[1], a[2], a[3], a[4], a[5]);
		}
	}
	return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
