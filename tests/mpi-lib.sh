# mpi-lib.sh: sourced by tests/cases/mpi_mesh_*.test: Open MPI's real mpirun
# running small MPI programs (tests/mpi_traffic, tests/mpi_papi) under
# libpapi-heritage-mpi, on this one machine.
#
#   mpi_traffic_case NP SHAPE PATTERN ARGS...
#       runs tests/mpi_traffic PATTERN ARGS on NP ranks with the library
#       preloaded (MPI_TRAFFIC=tests/mpi_traffic_linked: linked instead),
#       on the SHAPE mesh ("auto": the library's default, and the check
#       derives it itself), then tests/mpi_mesh_check.py compares the map's
#       CSV with X-then-Y routing computed there.
#   mpi_run NP PROGRAM ARGS...
#       the same mpirun, output in $out; its status returned.
#
# What mpirun needs here, found by trying (2026-11-27, Open MPI 4.1.4,
# Debian 12 container, 2 cores):
#   - --oversubscribe: 9 ranks on 2 cores;
#   - --allow-run-as-root as root (mpirun refuses root otherwise);
#   - as nobody, a HOME and TMPDIR it may write: Open MPI puts its session
#     directory under TMPDIR and reads $HOME/.openmpi; nobody's HOME is
#     /nonexistent.  Both are pointed at this test's own directory;
#   - --mca btl self,vader: shared memory only, no network probing (tcp
#     would look at every interface of the container);
#   - --mca btl_vader_single_copy_mechanism none: messages above vader's
#     4 KiB eager limit (the halo's are up to 6.5 KiB) otherwise go by
#     process_vm_readv (CMA), which containers without CAP_SYS_PTRACE or
#     with Yama's ptrace_scope refuse; copying through the shared segment
#     works everywhere (it made no difference on this machine, which allows
#     CMA);
#   - no plm/rsh setting: a single-host job starts its ranks locally.
# When a plain MPI program (tests/mpi_traffic, without the library) cannot
# run on 2 ranks, MPI cannot run here: a SKIP with mpirun's last words;
# anything failing after that is a FAIL.
set -u
: "${abs_top_builddir:=$(pwd)}" "${srcdir:=.}"
MPI_LIB=$abs_top_builddir/libpapi-heritage-mpi.so
CHECK=$srcdir/tests/mpi_mesh_check.py

skip() { echo "SKIP: $*"; exit 77; }

[ -z "${MPI_SKIP:-}" ] || skip "$MPI_SKIP"
[ -n "${MPIRUN:-}" ] || MPIRUN=$(command -v mpirun) || skip "no mpirun (apt-get install openmpi-bin)"
[ -f "$MPI_LIB" ] || { echo "libpapi-heritage-mpi.so is not built (make)"; exit 99; }
command -v python3 >/dev/null || skip "python3 is not installed (the check computes the routes with it)"

work=$(mktemp -d "${TMPDIR:-/tmp}/mpi-mesh.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
HOME=$work TMPDIR=$work
export HOME TMPDIR
out=$work/out
MPI_OPTS="--oversubscribe --mca btl self,vader --mca btl_vader_single_copy_mechanism none"
[ "$(id -u)" -ne 0 ] || MPI_OPTS="$MPI_OPTS --allow-run-as-root"

# MPI's own health, apart from our library.
if ! timeout 60 "$MPIRUN" $MPI_OPTS -np 2 "$abs_top_builddir/tests/mpi_traffic" ring 64 1 > "$out" 2>&1; then
	tail -5 "$out"
	skip "mpirun cannot run a plain 2-rank MPI program here as uid $(id -u) (output above)"
fi

# mpi_run NP PROGRAM ARGS...: the library preloaded unless MPI_NO_PRELOAD,
# the map under $work/map.*, the PAPI_HERITAGE_MPI_* of the case passed on.
mpi_run() {
	np=$1
	shift
	set -- -np "$np" -x PAPI_HERITAGE_MPI_MAP="$work/map" "$@"
	[ -n "${MPI_NO_PRELOAD:-}" ] || set -- -x LD_PRELOAD="$MPI_LIB" "$@"
	for v in PAPI_HERITAGE_MPI_MESH PAPI_HERITAGE_MPI_ROUTING PAPI_HERITAGE_MPI_WINDOW PAPI_HERITAGE_MPI_COLL; do
		eval "val=\${$v-}"
		[ -z "$val" ] || set -- -x "$v=$val" "$@"
	done
	timeout 50 "$MPIRUN" $MPI_OPTS "$@" > "$out" 2>&1
}

mpi_traffic_case() {
	np=$1 shape=$2
	shift 2
	prog=$abs_top_builddir/${MPI_TRAFFIC:-tests/mpi_traffic}
	[ "$prog" = "$abs_top_builddir/tests/mpi_traffic_linked" ] && MPI_NO_PRELOAD=1
	if [ "$shape" = auto ]; then
		rows=1 r=1
		while [ $((r * r)) -le "$np" ]; do
			[ $((np % r)) -ne 0 ] || rows=$r
			r=$((r + 1))
		done
		shape=${rows}x$((np / rows))
	else
		PAPI_HERITAGE_MPI_MESH=$shape
	fi
	if ! mpi_run "$np" "$prog" "$@"; then
		cat "$out"
		echo "FAIL: mpirun -np $np $prog $* failed"
		return 1
	fi
	grep 'papi-heritage-mpi' "$out"
	[ -s "$work/map.csv" ] || { echo "FAIL: no map written ($work/map.csv)"; return 1; }
	python3 "$CHECK" "$work/map.csv" "$np" "$shape" "$@"
}
