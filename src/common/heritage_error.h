/*
 * One message per thread describing the last thing libheritage refused, so
 * the PAPI glue can return a bare error code and the user can still learn
 * what to change (papi_heritage_last_error() in <papi_heritage.h>).
 */
#ifndef HERITAGE_ERROR_H
#define HERITAGE_ERROR_H

#include <stddef.h>

#if defined(__GNUC__)
#define HERITAGE_PUBLIC __attribute__((visibility("default")))
#define HERITAGE_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define HERITAGE_PUBLIC
#define HERITAGE_PRINTF(f, a)
#endif

/* Records the message for this thread and returns err (a negative errno),
 * so callers can write `return heritage_fail(-EINVAL, "...")`. */
int heritage_fail(int err, const char *fmt, ...) HERITAGE_PRINTF(2, 3);
/* Records a message already formatted into why (as the watch backends do). */
int heritage_fail_msg(int err, const char *why);
/* Both: formats the message into why[len] (when given) for a caller that
 * passes reasons up, and records it for this thread.  Returns err. */
int heritage_fail_why(int err, char *why, size_t len, const char *fmt, ...) HERITAGE_PRINTF(4, 5);
const char *heritage_last_error(void);
void heritage_clear_error(void);

#endif
