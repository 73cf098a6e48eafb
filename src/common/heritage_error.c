#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/heritage_error.h"

static __thread char last_error[1024];

int heritage_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof last_error, fmt, ap);
	va_end(ap);
	return err;
}

int heritage_fail_msg(int err, const char *why)
{
	snprintf(last_error, sizeof last_error, "%s", why);
	return err;
}

int heritage_fail_why(int err, char *why, size_t len, const char *fmt, ...)
{
	char buf[sizeof last_error];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (why && len)
		snprintf(why, len, "%s", buf);
	return heritage_fail_msg(err, buf);
}

const char *heritage_last_error(void)
{
	return last_error;
}

void heritage_clear_error(void)
{
	last_error[0] = '\0';
}

/* <papi_heritage.h> */
HERITAGE_PUBLIC const char *papi_heritage_last_error(void);
const char *papi_heritage_last_error(void)
{
	return last_error;
}
