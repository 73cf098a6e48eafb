/*
 * The independent count the instruction-range ctests check against:
 * callgrind's self Ir of one routine of this very binary.
 */
#ifndef CALLGRIND_SELF_H
#define CALLGRIND_SELF_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* callgrind's self Ir of name, running this program's `work name n`; -1
 * when valgrind cannot run here. */
static inline long long callgrind_self(const char *name, long n)
{
	/* Where the harness says (TMPDIR), else the system's. */
	const char *tmp = getenv("TMPDIR");
	char out[1024];
	if (snprintf(out, sizeof out, "%s/callgrind_self.XXXXXX", tmp && *tmp ? tmp : P_tmpdir) >= (int)sizeof out)
		return -1;
	int fd = mkstemp(out);
	if (fd < 0)
		return -1;
	close(fd);
	char exe[4096];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (k <= 0)
		return -1;
	exe[k] = 0;
	char cmd[8192];
	if (snprintf(cmd, sizeof cmd,
	             "valgrind --tool=callgrind --callgrind-out-file=%s --toggle-collect=%s --compress-strings=no "
	             "--compress-pos=no --skip-plt=no '%s' work %s %ld >/dev/null 2>&1",
	             out, name, exe, name, n) >= (int)sizeof cmd) {
		unlink(out);
		return -1;
	}
	int rc = system(cmd);
	if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
		unlink(out);
		return -1;
	}
	/* Cost lines after fn=<name> (or <name>'2, ... for recursive calls),
	 * not the inclusive cost of its calls (the line after each calls=).
	 * --skip-plt=no: by default callgrind charges a PLT entry's jump to the
	 * function that called through it, an instruction outside its range. */
	FILE *f = fopen(out, "r");
	long long self = 0;
	int in = 0, after_calls = 0;
	char line[4096];
	while (f && fgets(line, sizeof line, f)) {
		if (strncmp(line, "fn=", 3) == 0) {
			line[strcspn(line, "\n'")] = 0;
			in = strcmp(line + 3, name) == 0;
			after_calls = 0;
			continue;
		}
		if (strncmp(line, "calls=", 6) == 0) {
			after_calls = 1;
			continue;
		}
		long long pos, ir;
		if (in && sscanf(line, "%lld %lld", &pos, &ir) == 2 && !after_calls)
			self += ir;
		after_calls = 0;
	}
	if (f)
		fclose(f);
	unlink(out);
	return self;
}

#endif
