# tree-lib.sh: sourced by tests/check-sanitize and tests/check-papi-release
# (and, for tree_log_why, by tests/check-unprivileged and .ci/run),
# which build and test the project again in a tree of their own, $tree
# (under the build directory, in $dir), reporting as $name, with fail().
#
# tree_copy: copies into $tree the files git tracks or would track (a new
# source not yet added is built too; not these scripts' own trees, when the
# build directory is the source directory) and the ones ./bootstrap made
# (configure, Makefile.in, aclocal.m4, build-aux/), mtimes kept, so that a
# second run rebuilds only what changed.
tree_copy() {
	mkdir -p "$tree" || fail "cannot make $tree"
	files=$(cd "$srcdir" && git ls-files --cached --others --exclude-standard 2>/dev/null) ||
		fail "$srcdir is not a git checkout: the build in $tree copies the files git lists"
	{ printf '%s\n' "$files" | grep -Ev "^($dir|fuzz/work)/"
	  cd "$srcdir" && ls -d configure Makefile.in aclocal.m4 build-aux/* 2>/dev/null; } |
		(cd "$srcdir" && tar -cf - --no-recursion -T - 2>/dev/null) | (cd "$tree" && tar -xf -) ||
		fail "cannot copy the sources into $tree"
}

# tree_check [MAKE VARIABLE=VALUE...]: make check in $tree (TESTS=$tests
# where $tests is set), each result line, the failures' logs and each
# skip's reason (its last line) prefixed with "$name: "; sets p, f and s
# (an ERROR or XPASS counts as failed, a non-zero exit with no failure as
# one) and end, the time it finished.
tree_check() {
	echo "$name: make check${tests:+ TESTS=(the $(echo $tests | wc -w) tests named)} (in $tree)"
	if [ -n "$tests" ]; then
		"$make" -C "$tree" check TESTS="$tests" "$@" > "$tree/check.log" 2>&1
	else
		"$make" -C "$tree" check "$@" > "$tree/check.log" 2>&1
	fi
	rc=$?
	end=$(date +%s)
	grep -E '^(PASS|FAIL|ERROR|XPASS|SKIP|XFAIL): ' "$tree/check.log" | sed "s/^/$name: /"
	grep -E '^(FAIL|ERROR|XPASS): ' "$tree/check.log" | while read -r res test; do
		echo "$name: == $res $test: its log =="
		tail -60 "$tree/${test%.test}.log" 2>/dev/null | sed "s/^/$name: /"
	done
	grep -E '^SKIP: ' "$tree/check.log" | while read -r res test; do
		why=$(grep -Ev '^[A-Z]+ [^ ]+ \(exit status: [0-9]+\)$' "$tree/${test%.test}.log" 2>/dev/null | tail -1)
		echo "$name: skipped $test: $why"
	done
	p=$(tree_count PASS) s=$(tree_count SKIP) f=$(tree_count FAIL) e=$(tree_count ERROR) x=$(tree_count XPASS)
	if [ -z "$p" ] || [ -z "$f" ]; then
		tail -30 "$tree/check.log"
		fail "make check exited $rc before the harness summed up"
	fi
	f=$((f + ${e:-0} + ${x:-0})) s=${s:-0}
	[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	return 0
}

# tree_count WORD: the last "# WORD: N" of automake's summary in check.log.
tree_count() { sed -n "s/^# $1: *\([0-9][0-9]*\)\$/\1/p" "$tree/check.log" | tail -1; }

# tree_log_why LOG: why a test failed, on one line for a run's last lines:
# its first two failed expectations ("ctests/x.c:12: cond: got 1, want 2",
# test_expect.h's form), else its last line above test-driver's own.
tree_log_why() {
	why=$(grep -E '^[^ :]+:[0-9]+: ' "$1" 2>/dev/null | head -2 | tr '\n' ' ' | sed 's/ *$//')
	[ -n "$why" ] || why=$(grep -Ev '^[A-Z]+ [^ ]+ \(exit status: [0-9]+\)$' "$1" 2>/dev/null | tail -1)
	printf '%s\n' "${why:-(no $1)}"
}
