/*
 * imc_trace_dump: POWER9 IMC trace mode for a command, or a saved trace,
 * as text or CSV (imc_trace_dump(1)).
 *
 *   imc_trace_dump [options] -- command [args...]
 *   imc_trace_dump [options] TRACE-FILE
 *
 * A command is forked, stopped before its execve until the sampler is open
 * on it (enable_on_exec), and traced until it exits: its first thread's PC
 * every 1/hz s of its CPU time, into a buffer of 4K-64K 64-byte records
 * that wraps quietly (src/imc/imc_trace.h).  Symbols come from elfutils'
 * libdwfl over the executable mappings the kernel reported while the
 * command ran (PERF_RECORD_MMAP), or those saved in the file.  It uses
 * libheritage directly, as rpmd does: no PAPI call is involved.
 */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/heritage_error.h"
#include "imc/imc_trace.h"
#include "imc/imc_trace_file.h"

struct opts {
	int csv, symbols;
	unsigned hz;
	int buffersize;
	const char *save, *output;
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: imc_trace_dump [options] -- command [args...]\n"
	        "       imc_trace_dump [options] TRACE-FILE\n"
	        "Trace a command's program counter the way POWER9 IMC trace mode does (64-byte records\n"
	        "written without interrupting it), or read a trace saved with --save, and print each\n"
	        "record: timebase, PC, symbol, mode, CPMC1-4; then the valid and lost counts.\n"
	        "\n"
	        "  --csv              CSV: timebase,pc,symbol,mode,cpmc1,cpmc2,cpmc3,cpmc4 (counts on stderr)\n"
	        "  --hz N             samples per second of the command's CPU time (1-%u;\n"
	        "                     default PAPI_HERITAGE_IMC_TRACE_HZ or %u)\n"
	        "  --buffer-size B    BUFFERSIZE 0-4: 4K, 8K, 16K, 32K, 64K entries (default\n"
	        "                     PAPI_HERITAGE_IMC_TRACE_BUFFER_SIZE or 0)\n"
	        "  --save FILE        also save the trace (records and mappings) to FILE\n"
	        "  -o, --output FILE  write the listing to FILE instead of standard output\n"
	        "  --no-symbols       print no symbols\n"
	        "  -h, --help         this text\n"
	        "Exit status: the command's (128 + signal if it was killed); 1 when tracing is\n"
	        "unavailable here (the reason is printed) or the file cannot be read; 2 usage.\n",
	        IMC_TRACE_HZ_MAX, IMC_TRACE_HZ_DEFAULT);
}

/* ---- symbols ---------------------------------------------------------------- */

static char *debuginfo_path;
static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

/* The load bias of the file mapped at m: the kernel reports executable
 * mappings only, which on today's toolchains are not the file's first
 * PT_LOAD; bias = mapping start - page-aligned p_vaddr of the PT_LOAD whose
 * page-aligned p_offset is the mapping's offset.  -1 when unknown. */
static int load_bias(const struct imc_trace_map *m, GElf_Addr *bias)
{
	int fd = open(m->path, O_RDONLY | O_CLOEXEC), ok = -1;
	if (fd < 0)
		return -1;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t n;
	long page = sysconf(_SC_PAGESIZE);
	if (e && elf_getphdrnum(e, &n) == 0) {
		for (size_t i = 0; i < n && ok; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			if ((ph.p_offset & ~(GElf_Off)(page - 1)) == m->pgoff) {
				*bias = m->start - (ph.p_vaddr & ~(GElf_Addr)(page - 1));
				ok = 0;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return ok;
}

/* A module per mapped file, at its load bias (dwfl_report_elf with
 * add_p_vaddr true: the base is the bias). */
static Dwfl *symbols_from_maps(const struct imc_trace_map *m, unsigned n)
{
	elf_version(EV_CURRENT);
	Dwfl *d = dwfl_begin(&callbacks);
	if (!d)
		return NULL;
	dwfl_report_begin(d);
	for (unsigned i = 0; i < n; i++) {
		GElf_Addr bias;
		if (m[i].path[0] != '/' || load_bias(&m[i], &bias) != 0)
			continue;
		int seen = 0;
		for (unsigned j = 0; j < i && !seen; j++)
			seen = strcmp(m[j].path, m[i].path) == 0;
		if (!seen)
			dwfl_report_elf(d, m[i].path, m[i].path, -1, bias, true);
	}
	dwfl_report_end(d, NULL, NULL);
	return d;
}

static void symbol(Dwfl *d, uint64_t pc, char *buf, size_t len)
{
	Dwfl_Module *mod = d ? dwfl_addrmodule(d, pc) : NULL;
	const char *name = mod ? dwfl_module_addrname(mod, pc) : NULL;
	if (!name) {
		const char *mname = mod ? dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL) : NULL;
		const char *base = mname ? strrchr(mname, '/') : NULL;
		snprintf(buf, len, "%s", mname ? (base ? base + 1 : mname) : "?");
		return;
	}
	GElf_Sym sym;
	GElf_Off off = 0;
	if (dwfl_module_addrinfo(mod, pc, &off, &sym, NULL, NULL, NULL) && off)
		snprintf(buf, len, "%s+0x%llx", name, (unsigned long long)off);
	else
		snprintf(buf, len, "%s", name);
}

/* ---- output ------------------------------------------------------------------- */

static const char *mode_name(unsigned m)
{
	static const char *const names[] = { "guest-kernel", "guest-user", "kernel", "user" };
	return names[m & 3];
}

struct printer {
	FILE *out;
	int csv;
	Dwfl *dwfl;
	unsigned long n;
};

static int print_record(const struct imc_trace_record *r, void *arg)
{
	struct printer *p = arg;
	char sym[512] = "";
	if (p->dwfl)
		symbol(p->dwfl, r->pc, sym, sizeof sym);
	if (p->csv) {
		/* A symbol holds no comma or quote (C and C++ mangled names). */
		fprintf(p->out, "%" PRIu64 ",0x%" PRIx64 ",%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
		        r->timebase, r->pc, sym, mode_name(imc_trace_record_mode(r)), r->cpmc[0], r->cpmc[1], r->cpmc[2],
		        r->cpmc[3]);
	} else {
		fprintf(p->out, "%16" PRIu64 "  0x%016" PRIx64 "  %-32s  %-5s  %10" PRIu64 " %10" PRIu64 " %10" PRIu64
		        " %10" PRIu64 "\n", r->timebase, r->pc, p->dwfl ? sym : "-", mode_name(imc_trace_record_mode(r)),
		        r->cpmc[0], r->cpmc[1], r->cpmc[2], r->cpmc[3]);
	}
	p->n++;
	return 0;
}

static void header(struct printer *p)
{
	if (p->csv)
		fprintf(p->out, "timebase,pc,symbol,mode,cpmc1,cpmc2,cpmc3,cpmc4\n");
	else
		fprintf(p->out, "%16s  %-18s  %-32s  %-5s  %10s %10s %10s %10s\n", "timebase", "pc", "symbol", "mode",
		        "cpmc1", "cpmc2", "cpmc3", "cpmc4");
}

static void summary(struct printer *p, unsigned long valid, unsigned long long lost, unsigned long long samples,
                    const char *stop, uint64_t scom, uint64_t ldbar, uint64_t hz)
{
	/* Text: on the listing; CSV: on stderr, the CSV stays one table. */
	FILE *f = p->csv ? stderr : p->out;
	fprintf(f, "# %lu valid records, %llu lost (overwritten by a wrap, dropped, or past an invalid record), %llu samples; the walk stopped at: %s\n", valid,
	        lost, samples, stop);
	fprintf(f, "# TRACE_IMC_SCOM 0x%016" PRIx64 " LDBAR 0x%016" PRIx64 " at %" PRIu64 " samples/s of CPU time; "
	        "timebase 512 MHz\n", scom, ldbar, hz);
}

/* ---- tracing a command -------------------------------------------------------------- */

struct collect {
	struct imc_trace_file *f;
	unsigned cap;
};

static int keep(const struct imc_trace_record *r, void *arg)
{
	struct collect *c = arg;
	if (c->f->nrecords == c->cap) {
		unsigned cap = c->cap ? c->cap * 2 : 4096;
		unsigned char *m = realloc(c->f->records, (size_t)cap * IMC_TRACE_RECORD_BYTES);
		if (!m)
			return 1;
		c->f->records = m;
		c->cap = cap;
	}
	imc_trace_record_pack(c->f->records + (size_t)c->f->nrecords++ * IMC_TRACE_RECORD_BYTES, r);
	return 0;
}

static int trace_command(char **argv, const struct opts *o, struct imc_trace_file *tf, int *status, char *stop,
                         size_t stoplen)
{
	struct imc_trace_config c;
	int go[2], err;

	if ((err = imc_trace_config_default(&c)))
		return err;
	if (o->hz)
		c.hz = o->hz;
	if (o->buffersize >= 0)
		c.buffersize = (unsigned)o->buffersize;
	if ((err = imc_trace_usable(NULL, 0))) {
		char why[1024];
		imc_trace_usable(why, sizeof why);
		return heritage_fail(err, "%s", why);
	}
	if (pipe(go) != 0)
		return heritage_fail(-errno, "pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		return heritage_fail(-errno, "fork: %s", strerror(errno));
	if (pid == 0) {
		char b;
		close(go[1]);
		/* Wait until the sampler is open on this process. */
		if (read(go[0], &b, 1) != 1)
			_exit(127);
		close(go[0]);
		execvp(argv[0], argv);
		fprintf(stderr, "imc_trace_dump: %s: %s\n", argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(go[0]);
	c.pid = pid;
	c.enable_on_exec = 1;
	c.want_maps = 1;
	struct imc_trace_session *s;
	err = imc_trace_start(&s, &c);
	if (err) {
		close(go[1]);
		waitpid(pid, status, 0);
		return err;
	}
	if (write(go[1], "g", 1) != 1) {
		/* The child is gone already: waitpid says how. */
	}
	close(go[1]);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	imc_trace_stop(s);
	struct collect col = { .f = tf };
	struct imc_trace_walk w;
	imc_trace_take(s, keep, &col, &w);
	struct imc_trace_stats st;
	imc_trace_get_stats(s, &st);
	snprintf(stop, stoplen, "%s", imc_walk_stop_name(w.stop));
	tf->scom = imc_trace_scom(s);
	tf->ldbar = imc_trace_ldbar(s);
	tf->hz = c.hz;
	tf->samples = st.samples;
	tf->lost = w.lost;
	unsigned n;
	const struct imc_trace_map *m = imc_trace_maps(s, &n);
	tf->maps = calloc(n ? n : 1, sizeof *tf->maps);
	for (unsigned i = 0; tf->maps && i < n; i++) {
		tf->maps[i] = m[i];
		tf->maps[i].path = strdup(m[i].path);
		if (tf->maps[i].path)
			tf->nmaps++;
		else
			break;
	}
	imc_trace_free(s);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "csv", no_argument, NULL, 'c' },          { "hz", required_argument, NULL, 'z' },
		{ "buffer-size", required_argument, NULL, 'b' }, { "save", required_argument, NULL, 's' },
		{ "output", required_argument, NULL, 'o' },  { "no-symbols", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },          { NULL, 0, NULL, 0 },
	};
	struct opts o = { .symbols = 1, .buffersize = -1 };
	int ch;
	char *end;

	while ((ch = getopt_long(argc, argv, "+ho:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c': o.csv = 1; break;
		case 'n': o.symbols = 0; break;
		case 's': o.save = optarg; break;
		case 'o': o.output = optarg; break;
		case 'z': {
			unsigned long v = strtoul(optarg, &end, 10);
			if (*optarg == '\0' || *end || v < 1 || v > IMC_TRACE_HZ_MAX) {
				fprintf(stderr, "imc_trace_dump: --hz %s: want 1-%u\n", optarg, IMC_TRACE_HZ_MAX);
				return 2;
			}
			o.hz = (unsigned)v;
			break;
		}
		case 'b': {
			unsigned long v = strtoul(optarg, &end, 10);
			if (*optarg == '\0' || *end || v > IMC_SCOM_BUFFERSIZE_MAX) {
				fprintf(stderr, "imc_trace_dump: --buffer-size %s: want 0-4 (4K, 8K, 16K, 32K, 64K entries)\n",
				        optarg);
				return 2;
			}
			o.buffersize = (int)v;
			break;
		}
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	/* "--" before a command; a lone argument without it is a file. */
	int command = strcmp(argv[optind - 1], "--") == 0 || optind + 1 < argc;

	struct imc_trace_file tf;
	memset(&tf, 0, sizeof tf);
	int status = 0, err;
	char stop[64] = "";
	if (command)
		err = trace_command(argv + optind, &o, &tf, &status, stop, sizeof stop);
	else
		err = imc_trace_file_read(argv[optind], &tf);
	if (err) {
		fprintf(stderr, "imc_trace_dump: %s\n", heritage_last_error());
		return 1;
	}
	if (o.save && (err = imc_trace_file_write(o.save, &tf)))
		fprintf(stderr, "imc_trace_dump: %s\n", heritage_last_error());

	struct printer p = { .out = stdout, .csv = o.csv };
	if (o.output && !(p.out = fopen(o.output, "we"))) {
		fprintf(stderr, "imc_trace_dump: %s: %s\n", o.output, strerror(errno));
		return 1;
	}
	if (o.symbols)
		p.dwfl = symbols_from_maps(tf.maps, tf.nmaps);
	header(&p);
	/* The kernel's walk again: a file is trusted no more than memory. */
	struct imc_trace_walk w;
	imc_trace_walk(tf.records, tf.nrecords, print_record, &p, &w);
	uint64_t lost = tf.lost + (tf.nrecords - w.valid);
	summary(&p, p.n, (unsigned long long)lost, (unsigned long long)tf.samples,
	        command ? stop : (w.valid == tf.nrecords ? "end of the saved records" : imc_walk_stop_name(w.stop)),
	        tf.scom, tf.ldbar, tf.hz);
	if (p.dwfl)
		dwfl_end(p.dwfl);
	if (p.out != stdout && fclose(p.out) != 0) {
		fprintf(stderr, "imc_trace_dump: %s: %s\n", o.output, strerror(errno));
		err = 1;
	}
	imc_trace_file_free(&tf);
	if (err)
		return 1;
	if (command)
		return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return 0;
}
