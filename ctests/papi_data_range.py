#!/usr/bin/env python3
"""papi_data_range.py PROGRAM [RUNS]

Runs PAPI's own ctests/data_range (built from the fetched PAPI source and
retargeted at the itanium2 component, see ctests/papi_data_range.sed) RUNS
times (default 1) and fails on any run that fails.

PAPI's test only prints its counts; it passes when no PAPI call fails.  Each
run here must also:
  - exit 0 and print PASSED (not SKIPPED: the retargeting must take effect);
  - print nothing on stderr (PAPI's tests_quiet() turns PAPI's error
    reporting on before PAPI_library_init, so a PAPI error message at any
    point, the perf_event component's included, would show there);
  - print counts that equal the accesses its workload makes inside the actual
    range PAPI printed, [start - start_off, end + end_off), computed here from
    the addresses the test prints and the program's symbol table, and a
    range that contains the request (with offsets 0 for the pointers, 8-byte
    words that the Itanium 2 mapping covers exactly).

What the compiled workload accesses between PAPI_start and PAPI_stop (the
program is built with -O0, so every access in the source is an instruction,
and each lies in one aligned word):
  do_malloc_work: for each array k and element i, parrayk is loaded twice
    (for parrayk[i] = i and for sum += parrayk[i]), parrayk[i] stored once
    and loaded once;
  do_static_work: arrayk[i] stored once and loaded once;
  PAPI_stop( EventSet, &value ): EventSet loaded once, and PAPI_stop's GOT
    slot once by the PLT stub (bound already: at load time, or lazily by the
    first measurement, whose range is one pointer).
Any other access counted (libpapi's own, or PAPI's bookkeeping in the heap)
is a miscount.

Exit status: 0 all runs passed, 1 a run failed, 77 cannot run (the reason is
the last line printed).
"""
import os
import re
import subprocess
import sys

NUM = 16384


def skip(why):
    print(why)
    sys.exit(77)


def symbols(prog):
    """Link-time addresses of the data the workload touches."""
    try:
        nm = subprocess.run(["nm", prog], capture_output=True, text=True, check=True).stdout
        rel = subprocess.run(["readelf", "-rW", prog], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        skip("papi_data_range: cannot read %s's symbols with nm/readelf (binutils): %s" % (prog, e))
    sym = {}
    for line in nm.splitlines():
        f = line.split()
        if len(f) == 3:
            sym[f[2]] = int(f[0], 16)
    for line in rel.splitlines():
        f = line.split()
        if len(f) >= 5 and f[2] in ("R_X86_64_JUMP_SLOT", "R_X86_64_GLOB_DAT") and f[4] == "PAPI_stop":
            sym["GOT(PAPI_stop)"] = int(f[0], 16)
    need = ["parray1", "parray2", "parray3", "array1", "array2", "array3", "EventSet", "GOT(PAPI_stop)"]
    missing = [n for n in need if n not in sym]
    if missing:
        sys.exit("papi_data_range: %s has no %s: not the program this checker was written for" %
                 (prog, ", ".join(missing)))
    return sym


def overlapping_words(base, n, size, lo, hi):
    """How many of the n words [base + size*i, base + size*(i+1)) overlap [lo, hi)."""
    first = max(0, (lo - base) // size)        # words before it end at or below lo
    last = min(n, -((base - hi) // size))      # ceil((hi - base) / size): words from it start at or above hi
    return max(0, last - first)


def check_run(prog, sym, env):
    p = subprocess.run([prog], capture_output=True, text=True, env=env, timeout=600)
    out, err = p.stdout, p.stderr
    lines = out.splitlines()
    problems = []
    if p.returncode != 0:
        problems.append("exit status %d" % p.returncode)
    if not lines or lines[-1].strip() != "PASSED":
        problems.append("the last line is %r, not PASSED" % (lines[-1] if lines else ""))
    if problems:
        return problems + ["stderr: " + err.strip()], out
    if err:
        problems.append("stderr is not empty:\n    " + "\n    ".join(err.splitlines()[:10]))

    def addrs(label):
        m = re.search(label + r":\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)", out)
        if not m:
            raise ValueError("no %r line" % label)
        return [int(x, 16) for x in m.groups()]

    try:
        ptrs = addrs(r"Malloc'd array  pointers")
        heap = addrs(r"Malloc'd array addresses")
        stat = addrs(r"Static   array addresses")
    except ValueError as e:
        return ["cannot parse the report: %s" % e], out
    base = ptrs[0] - sym["parray1"]
    if [base + sym[n] for n in ("parray1", "parray2", "parray3", "array1", "array2", "array3")] != ptrs + stat:
        return ["the printed static addresses do not match the symbol table (load base %#x)" % base], out

    # (first address, word size, number of words, loads per word, stores per word)
    objects = [(p_, 8, 1, 2 * NUM, 0) for p_ in ptrs]
    objects += [(a, 4, NUM, 1, 1) for a in heap + stat]
    objects += [(base + sym["EventSet"], 4, 1, 1, 0), (base + sym["GOT(PAPI_stop)"], 8, 1, 1, 0)]

    def expected(lo, hi):
        loads = stores = 0
        for a, size, n, ld, st in objects:
            k = overlapping_words(a, n, size, lo, hi)
            loads += k * ld
            stores += k * st
        return loads, stores

    rng = re.compile(r"Requested (Start|End  ) Address: (0x[0-9a-f]+); (?:Start|End  ) Offset:\s*(0x[0-9a-f]+|0); "
                     r"Actual (?:Start|End  ) Address: (0x[0-9a-f]+)")
    cnt = re.compile(r"itanium2:::(LOADS|STORES)_RETIRED:\s+(-?\d+)")
    measured = 0
    cur = {}
    for line in lines:
        m = rng.search(line)
        if m:
            cur[m.group(1).strip()] = (int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16))
            continue
        m = cnt.search(line)
        if not m:
            continue
        if "Start" not in cur or "End" not in cur:
            problems.append("a count without its range: %s" % line)
            continue
        (rs, soff, lo), (re_, eoff, hi) = cur["Start"], cur["End"]
        what = "[%#x, %#x) (actual [%#x, %#x))" % (rs, re_, lo, hi)
        if not (lo == rs - soff and hi == re_ + eoff and lo <= rs < re_ <= hi):
            problems.append("%s: the actual range does not contain the request" % what)
        if re_ - rs == 8 and (soff, eoff) != (0, 0):
            problems.append("%s: a pointer's range has offsets %#x/%#x, not 0/0" % (what, soff, eoff))
        want = expected(lo, hi)[0 if m.group(1) == "LOADS" else 1]
        got = int(m.group(2))
        if got != want:
            problems.append("%s: %s_RETIRED %d, expected %d" % (what, m.group(1), got, want))
        measured += 1
    if measured != 18:
        problems.append("%d counts printed, expected 18 (9 ranges, loads and stores)" % measured)
    return problems, out


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: papi_data_range.py PROGRAM [RUNS]")
    prog = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) == 3 else 1
    if not os.access(prog, os.X_OK):
        sys.exit("papi_data_range: %s is not an executable" % prog)
    sym = symbols(prog)
    env = dict(os.environ)
    failed = 0
    for run in range(1, runs + 1):
        problems, out = check_run(prog, sym, env)
        if problems:
            failed += 1
            print("run %d of %d FAILED:" % (run, runs))
            for p_ in problems:
                print("  " + p_)
            print("  its output:\n    " + "\n    ".join(out.splitlines()[-12:]))
    print("%s: %d of %d runs passed, every count equal to the accesses in its actual range" %
          (os.path.basename(prog), runs - failed, runs))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
