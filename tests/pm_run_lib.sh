# Shell helpers of tests/cases/profileme_run_*.test (sourced).

# pm_rows FILE: a dcpicat file's rows as "<decimal vaddr> <samples>", samples
# being the sum of its class columns (events written value:period:n, two
# colons; class:counter columns have three).
pm_rows() {
	awk '/^event / { n++; if (split($3, a, ":") == 3) cls[n] = 1; next }
	     /^0x/ { s = 0; for (i = 1; i <= n; i++) if (cls[i]) s += $(i + 1); print $1, s }' "$1" |
	while read -r pc s; do echo $((pc)) "$s"; done
}

# pm_fn_samples ROWS PROGRAM FN: the samples of ROWS (pm_rows output) inside
# function FN of PROGRAM (its symbol table, nm -S).
pm_fn_samples() {
	set -- "$1" $(nm -S "$2" | awk -v f="$3" '$4 == f { print $1, $2; exit }')
	[ $# -eq 3 ] || { echo "no symbol" >&2; echo 0; return; }
	lo=$((0x$2))
	hi=$((lo + 0x$3))
	awk -v lo="$lo" -v hi="$hi" '$1 >= lo && $1 < hi { s += $2 } END { print s + 0 }' "$1"
}

# pm_total ROWS: all samples of ROWS.
pm_total() {
	awk '{ s += $2 } END { print s + 0 }' "$1"
}
