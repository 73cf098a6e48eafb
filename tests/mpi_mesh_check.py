#!/usr/bin/env python3
"""What tests/mpi_traffic's patterns must put on every router, computed here
from the pattern's arguments with this file's own routing (not the
library's), compared with the map libpapi-heritage-mpi wrote (CSV).

    mpi_mesh_check.py MAP.csv NRANKS RxC PATTERN ARGS...

PATTERN ARGS as given to mpi_traffic (ring, ringrev, all2one, halo, halop,
coll).
A router's north/south/east/west are the bytes leaving it that way: every
router a message passes, its source included, its destination not; X (along
the row, east/west) first, then Y.  Point-to-point bytes are exact and go in
the p2p columns; collectives go in the coll columns under the documented
model (papi-heritage-mpi(7)): root to each other rank (Bcast, Scatter),
each other rank to root (Reduce, Gather), Allreduce = to rank 0 then from
rank 0, each to each (Allgather, Alltoall).  Prints the table; exit 0 if
every router matches, 1 if not, 2 for a bad CSV or usage."""
import sys

DIRS = ("north", "south", "east", "west")


def route(rows, cols, src, dst):
    """(router, direction) pairs of an X-then-Y route."""
    r, c = divmod(src, cols)
    dr, dc = divmod(dst, cols)
    hops = []
    while c != dc:
        step = 1 if dc > c else -1
        hops.append((r * cols + c, "east" if step > 0 else "west"))
        c += step
    while r != dr:
        step = 1 if dr > r else -1
        hops.append((r * cols + c, "south" if step > 0 else "north"))
        r += step
    return hops


def expected(n, rows, cols, pattern, args):
    p2p = [{d: 0 for d in DIRS} for _ in range(rows * cols)]
    coll = [{d: 0 for d in DIRS} for _ in range(rows * cols)]

    def send(table, src, dst, nbytes):
        for router, d in route(rows, cols, src, dst):
            table[router][d] += nbytes

    if pattern == "ring":
        nbytes, iters = int(args[0]), int(args[1])
        for r in range(n):
            send(p2p, r, (r + 1) % n, nbytes * iters)
    elif pattern == "ringrev":
        # comm rank c = world n-1-c; comm c sends to comm c+1
        nbytes, iters = int(args[0]), int(args[1])
        for c in range(n):
            send(p2p, n - 1 - c, n - 1 - (c + 1) % n, nbytes * iters)
    elif pattern == "all2one":
        nbytes, iters, root = int(args[0]), int(args[1]), int(args[2])
        for r in range(n):
            if r != root:
                send(p2p, r, root, nbytes * iters)
    elif pattern in ("halo", "halop"):
        pr, pc, iters = int(args[0]), int(args[1]), int(args[2])
        base = {"north": 500, "south": 600, "east": 700, "west": 800}
        for r in range(n):
            gr, gc = divmod(r, pc)
            nbr = {"north": ((gr - 1) % pr) * pc + gc, "south": ((gr + 1) % pr) * pc + gc,
                   "east": gr * pc + (gc + 1) % pc, "west": gr * pc + (gc - 1) % pc}
            for d, to in nbr.items():
                if to != r:
                    send(p2p, r, to, (base[d] + r) * 8 * iters)
    elif pattern == "coll":
        b = int(args[0]) * 4  # ints
        bc, red = 1 % n, 2 % n
        for r in range(n):
            if r != bc:
                send(coll, bc, r, b)          # Bcast root 1
            if r != red:
                send(coll, r, red, b)         # Reduce root 2
            if r != 0:
                send(coll, r, 0, b)           # Allreduce: reduce to 0 ...
                send(coll, 0, r, b)           # ... and bcast from 0
                send(coll, r, 0, b)           # Gather root 0
                send(coll, 0, r, b)           # Scatter root 0
            for q in range(n):
                if q != r:
                    send(coll, r, q, b)       # Allgather
                    send(coll, r, q, b)       # Alltoall
    else:
        raise SystemExit("mpi_mesh_check: unknown pattern " + pattern)
    return p2p, coll


def main():
    if len(sys.argv) < 5:
        print(__doc__)
        return 2
    path, n, shape, pattern, args = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
    rows, cols = (int(x) for x in shape.lower().split("x"))
    want_p2p, want_coll = expected(n, rows, cols, pattern, args)
    with open(path) as f:
        lines = f.read().splitlines()
    head = lines[0].split()
    if not lines[0].startswith("# papi-heritage mesh") or head[3] != shape or int(head[7]) != n:
        print("mpi_mesh_check: %s: header %r, want a %s mesh with %d ranks" % (path, lines[0], shape, n))
        return 1
    coll_note = [l for l in lines if l.startswith("# coll:")]
    if pattern == "coll" and not (coll_note and "modelled" in coll_note[0]):
        print("mpi_mesh_check: the collectives are not marked modelled: %r" % coll_note)
        return 1
    rows_seen, bad = 0, 0
    print("router  rank  north/south/east/west bytes (got = want)%s" % ("   coll" if pattern == "coll" else ""))
    for line in lines:
        if line.startswith("#") or line.startswith("router,"):
            continue
        f = line.split(",")
        router = int(f[0])
        got_p2p = dict(zip(DIRS, (int(x) for x in f[4:8])))
        got_coll = dict(zip(DIRS, (int(x) for x in f[8:12])))
        ok = got_p2p == want_p2p[router] and got_coll == want_coll[router]
        bad += not ok
        rows_seen += 1
        shown = got_coll if pattern == "coll" else got_p2p
        print("%6d  %4s  %s%s" % (router, f[3] or "-", " ".join("%d" % shown[d] for d in DIRS),
                                  "" if ok else "   MISMATCH: want p2p %s coll %s" % (
                                      " ".join(str(want_p2p[router][d]) for d in DIRS),
                                      " ".join(str(want_coll[router][d]) for d in DIRS))))
    if rows_seen != rows * cols:
        print("mpi_mesh_check: %d routers in the CSV, want %d" % (rows_seen, rows * cols))
        return 1
    total = sum(sum(t[d] for d in DIRS) for t in want_p2p + want_coll)
    if total == 0:
        print("mpi_mesh_check: the pattern moves no bytes between routers: the test could not fail")
        return 1
    if bad:
        print("mpi_mesh_check: %d of %d routers differ from X-then-Y routing" % (bad, rows * cols))
        return 1
    print("mpi_mesh_check: all %d routers equal X-then-Y routing (%d bytes on links)" % (rows * cols, total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
