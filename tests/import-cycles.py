#!/usr/bin/env python3
"""import-cycles.py LIB.a: fails when libheritage's modules import each other.

A module is an object file of the archive; A imports B when A refers to a
symbol B defines (nm).  Every strongly connected group of more than one
module is printed with the symbols that tie it together; the exit status is
1 when there is one, 0 otherwise, 99 when the archive cannot be read.
(Issue 12: watch.c and watch_pagetrap.c, the probe table and the probes,
each imported the other.)
"""
import os
import subprocess
import sys
import tempfile


# A sanitized build's calls into the sanitizer's runtime: watch_instrument
# defines the ASan hook names for the programs it instruments, so under
# -fsanitize=address every module seemed to import it (make check-sanitize
# SANITIZE_TESTS=all: a cycle of six watch_* modules through
# __asan_handle_no_return).
SANITIZER_RUNTIME = ("__asan_", "__ubsan_", "__tsan_", "__sanitizer_")


def symbols(obj):
    defined, undefined = set(), set()
    for line in subprocess.check_output(["nm", obj], text=True).splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRVW":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U" and not parts[1].startswith(SANITIZER_RUNTIME):
            undefined.add(parts[1])
    return defined, undefined


def cycles(graph):
    """Tarjan's strongly connected components of more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    if len(sys.argv) != 2:
        print("usage: import-cycles.py LIB.a", file=sys.stderr)
        return 99
    lib = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        try:
            subprocess.check_call(["ar", "x", "--output=" + tmp, os.path.abspath(lib)])
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"import-cycles: cannot read {lib}: {e}", file=sys.stderr)
            return 99
        objs = sorted(os.listdir(tmp))
        syms = {o: symbols(os.path.join(tmp, o)) for o in objs}
    owner = {s: o for o in objs for s in syms[o][0]}
    graph = {o: set() for o in objs}
    why = {}
    for o in objs:
        for s in syms[o][1]:
            d = owner.get(s)
            if d and d != o:
                graph[o].add(d)
                why.setdefault((o, d), []).append(s)
    name = lambda o: o.replace("libheritage_a-", "").replace(".o", "")
    found = cycles(graph)
    for group in found:
        print("import cycle: " + " <-> ".join(name(o) for o in group))
        for a in group:
            for b in group:
                if (a, b) in why:
                    print(f"    {name(a)} uses {name(b)}: {', '.join(sorted(why[(a, b)])[:4])}")
    print(f"{len(objs)} modules, {sum(len(v) for v in graph.values())} imports, {len(found)} cycle(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
