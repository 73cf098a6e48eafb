/*
 * What the system-wide daemons (rpmd(8), imcd(8)) share: the pidfile that
 * says one of them runs, "NAME stop", and detaching.  The pidfile's flock,
 * not its contents, says a daemon runs: the lock dies with the process, so
 * a pidfile left by a killed daemon is seen to be stale.  NAME prefixes
 * every message, so that each daemon speaks as itself.
 */
#ifndef HERITAGE_DAEMON_H
#define HERITAGE_DAEMON_H

#include <stddef.h>

/* Root: /run/NAME.pid.  Others: NAME-UID.pid in their runtime directory,
 * else the temporary one; written into buf (len bytes), which it returns. */
const char *heritage_daemon_default_pidfile(const char *name, char *buf, size_t len);

/* The pid written in PIDFILE, or -1. */
long heritage_daemon_read_pid(const char *pidfile);

/* "NAME stop": signals the daemon holding PIDFILE's lock and waits up to
 * 5 s for it to let go.  Returns the exit status (0 stopped, 1 not). */
int heritage_daemon_stop(const char *name, const char *pidfile);

/* The command after the options, ARGV[FIRST] (getopt's optind): -1 when
 * there is none (start the daemon), else the exit status of "stop", or 2
 * (said) for any other word. */
int heritage_daemon_command(const char *name, int argc, char **argv, int first, const char *pidfile);

/* Creates and locks PIDFILE; returns its descriptor, or -1 (said) when it
 * cannot or another NAME holds it.  Kept open for the daemon's life. */
int heritage_daemon_lock(const char *name, const char *pidfile);

/* Writes this process's pid into the locked PIDFILE (after detaching: the
 * child's pid). */
void heritage_daemon_write_pid(const char *name, int pfd, const char *pidfile);

/* Forks into a new session.  Returns 0 in the child, 1 in the parent, -1
 * (said) when it cannot.  With READY, the parent first waits for the
 * child's heritage_daemon_ready (through the pipe whose write end the child
 * finds in *READY) and *STATUS is 0 if the child said it is ready, 1 if it
 * failed or died first; without, the parent returns at once, *STATUS 0.
 * The child keeps the pidfile's lock: the same open file. */
int heritage_daemon_detach(const char *name, int *ready, int *status);

/* The child's word to the waiting parent that it is running; then its
 * standard streams go to /dev/null, as nobody reads them any more. */
void heritage_daemon_ready(int ready);

#endif
