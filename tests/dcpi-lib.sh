# dcpi-lib.sh: sourced by tests/cases/dcpiprof_*.test and dcpilist_*.test.
#
# make_db DIR writes a profile database of tests/pm_image (a program built
# by the suite with -g) in the format of src/profileme/pm_db.h, with samples
# on real instruction addresses read from the file with nm and objdump, and
# a second image (libfoo.so, not on disk) for the per-image listings.  The
# expectations are computed here, with awk, from the rows written and the
# function extents nm gives: never from the tools under test.
#
# The seven columns (the classes a soft-backend profile has; fields retired,
# taken, valid, notrap, dtbmiss, dfaulttrap, retdelay):
#   c1 retired^!taken^valid^notrap^!dtbmiss^!dfaulttrap     a branch not taken
#   c2 retired^taken^valid^notrap^!dtbmiss^!dfaulttrap      a branch taken
#   c3 retired^valid^notrap^!dtbmiss^!dfaulttrap            not a branch
#   c4 !retired^!valid^!notrap^dtbmiss^!dfaulttrap          a DTB miss
#   c5 !retired^!valid^!notrap^!dtbmiss^dfaulttrap          a data fault
#   c6 c3:retdelay   c7 c2:retdelay
# so, written out by hand:  default = any = c1+c2+c3+c4+c5;  retired =
# c1+c2+c3;  !notrap = trap = c4+c5;  trap^!dtbmiss = c5;  retired:retdelay
# = c6+c7.  set_expr NAME prints the awk expression of each over $3..$9.
set -u
: "${abs_top_builddir:=$(pwd)}"
IMAGE=$abs_top_builddir/tests/pm_image
PROF=$abs_top_builddir/utils/dcpiprof
LIST=$abs_top_builddir/utils/dcpilist
EPOCH=20261125130102
for t in nm objdump awk; do
	command -v $t >/dev/null || { echo "SKIPPED: $t is not installed (binutils)"; exit 77; }
done
[ -x "$IMAGE" ] || { echo "tests/pm_image not built"; exit 99; }

set_expr() {
	case $1 in
	default | any) echo '($3+$4+$5+$6+$7)' ;;
	retired) echo '($3+$4+$5)' ;;
	'!notrap' | '/notrap' | trap) echo '($6+$7)' ;;
	'trap^/dtbmiss' | 'trap^!dtbmiss') echo '($7)' ;;
	taken) echo '($4)' ;;
	'retired:retdelay') echo '($8+$9)' ;;
	*) echo "set_expr: no expression for $1" >&2; exit 99 ;;
	esac
}

# Instruction addresses of function $1 (hex, no 0x), in order: objdump's,
# within nm's extent (objdump lists the alignment padding after a function
# under it).
# objdump and nm ran once, in setup (their output in $DCPI_CACHE).
insns() {
	[ -n "${DCPI_CACHE:-}" ] || { echo "insns: call setup first" >&2; exit 99; }
	ext=$(awk -v f="$1" '$4 == f { print $1, $2; exit }' "$DCPI_CACHE/nm")
	awk -v f="<$1>:" '
		$2 == f { on = 1; next }
		on && /^$/ { exit }
		on && $1 ~ /^[0-9a-f]+:$/ { sub(":", "", $1); print $1 }' "$DCPI_CACHE/dis" |
		while read -r a; do
			set -- $ext
			[ $((0x$a)) -lt $((0x$1 + 0x$2)) ] && echo "$a"
		done
}

# nm -S: "start size name" of the functions (decimal), for the expectations.
funcs() {
	nm -S --defined-only "$IMAGE" | awk '$3 ~ /^[TtWw]$/ && NF == 4 { print $1, $2, $4 }' |
		while read -r s z n; do echo $((0x$s)) $((0x$z)) "$n"; done
}

# The rows: function, instruction index (or "+1": one byte into its first
# instruction longer than a byte: a sample that is not at an instruction start),
# then c1..c7.  hot has 3x cold's samples in every column but dtbmiss.
ROWS='hot 0  0 0 30 0 0 90 0
hot 1  4 12 0 0 0 0 60
hot 2  0 0 14 3 1 28 0
hot 4  2 6 0 0 0 0 24
cold 0  0 0 10 0 1 10 0
cold 1  2 4 0 1 0 0 12
main 0  0 0 5 0 0 15 0
main 1  1 2 0 0 2 0 6
main 3  0 0 3 1 0 9 0
main +1  0 0 1 0 0 0 0
divide 0  0 0 0 0 3 0 0'

make_db() {
	db=$1
	mkdir -p "$db/$EPOCH" || exit 99
	path=$(readlink -f "$IMAGE")
	id=$(date -u -r "$path" +%Y%m%d%H%M%S)+$(printf '%08x' "$(stat -c %s "$path")")
	: > "$db/rows.tmp"
	echo "$ROWS" | while read -r f i c1 c2 c3 c4 c5 c6 c7; do
		if [ "$i" = "+1" ]; then
			# one byte into the first instruction longer than one byte
			a=$(insns "$f" | { read -r prev; while read -r cur; do
				[ $((0x$cur - 0x$prev)) -ge 2 ] && { printf '%x' $((0x$prev + 1)); break; }
				prev=$cur; done; })
		else
			a=$(insns "$f" | sed -n "$((i + 1))p")
		fi
		[ -n "$a" ] || { echo "no instruction $i in $f" >&2; exit 99; }
		printf '%d 0x%x %s %s %s %s %s %s %s\n' "0x$a" "0x$a" $c1 $c2 $c3 $c4 $c5 $c6 $c7 >> "$db/rows.tmp"
	done || exit 99
	# a PC in no function (the ELF header's bytes): "unknown"
	printf '%d 0x%x 0 0 2 0 1 4 0\n' 16 16 >> "$db/rows.tmp"
	sort -n "$db/rows.tmp" > "$db/rows.both"
	cut -d' ' -f1,3- "$db/rows.both" > "$db/rows.dec"
	cut -d' ' -f2- "$db/rows.both" > "$db/rows"
	rm -f "$db/rows.tmp"
	{
		printf 'name        pm_image\nimage       %s\nlabel       profileme\npath        %s\n' "$id" "$path"
		printf 'epoch       %s\nplatform    x86_64 test\ntext_start  0x1000\ntext_size   0x1000\n' $EPOCH
		printf 'backend     soft\nperiod      1000000 ns\n'
		printf 'fields      retired,taken,valid,notrap,dtbmiss,dfaulttrap,retdelay\n'
		awk '{ for (c = 2; c <= 8; c++) t[c] += $c }
		     END {
			n6 = t[4]; n7 = t[3]
			printf "event %d retired^!taken^valid^notrap^!dtbmiss^!dfaulttrap:1000000:%d\n", t[2], t[2]
			printf "event %d retired^taken^valid^notrap^!dtbmiss^!dfaulttrap:1000000:%d\n", t[3], t[3]
			printf "event %d retired^valid^notrap^!dtbmiss^!dfaulttrap:1000000:%d\n", t[4], t[4]
			printf "event %d !retired^!valid^!notrap^dtbmiss^!dfaulttrap:1000000:%d\n", t[5], t[5]
			printf "event %d !retired^!valid^!notrap^!dtbmiss^dfaulttrap:1000000:%d\n", t[6], t[6]
			printf "event %d retired^valid^notrap^!dtbmiss^!dfaulttrap:retdelay:1000000:%d\n", t[7], n6
			printf "event %d retired^taken^valid^notrap^!dtbmiss^!dfaulttrap:retdelay:1000000:%d\n", t[8], n7
		     }' "$db/rows"
		cat "$db/rows"
	} > "$db/$EPOCH/pm_image_$id"
	# libfoo.so: 40 samples, all retired, retdelay 500; 5 dfault traps.
	cat > "$db/$EPOCH/libfoo.so_20261001000000+00001000" <<-EOF
	name        libfoo.so
	image       20261001000000+00001000
	label       profileme
	path        /nonexistent/lib/libfoo.so
	epoch       $EPOCH
	platform    x86_64 test
	text_start  0x1000
	text_size   0x100
	backend     soft
	period      1000000 ns
	fields      retired,taken,valid,notrap,dtbmiss,dfaulttrap,retdelay
	event 40 retired^valid^notrap^!dtbmiss^!dfaulttrap:1000000:40
	event 5 !retired^!valid^!notrap^!dtbmiss^dfaulttrap:1000000:5
	event 500 retired^valid^notrap^!dtbmiss^!dfaulttrap:retdelay:1000000:40
	0x1010 30 5 400
	0x1020 10 0 100
	EOF
}

# Per-procedure expectation: "value name" lines of column expression $1
# (set_expr) over the rows written to DB $2 (rows.dec: "<pc decimal>
# c1..c7", so with a leading field set_expr's $3..$9 are c1..c7), summed by
# the function nm says holds each PC ("unknown" otherwise).
by_procedure() {
	funcs > "$2/funcs"
	awk '
		FNR == NR { s[NR] = $1 + 0; z[NR] = $2 + 0; n[NR] = $3; nf = NR; next }
		{
			pc = $1 + 0; name = "unknown"
			for (i = 1; i <= nf; i++) if (pc >= s[i] && pc < s[i] + z[i]) name = n[i]
			$0 = "x " $0
			v[name] += '"$1"'
			seen[name] = 1
		}
		END { for (k in seen) print v[k], k }' "$2/funcs" "$2/rows.dec"
}

# The same over the rows of one function, per PC: "pc(hex) value".
by_pc() {
	awk '{ $0 = "x " $0; printf "0x%x %d\n", $2, '"$1"' }' "$2/rows.dec"
}

fail() {
	echo "FAIL: $*"
	exit 1
}

# setup NAME: a private TMPDIR directory with the database in $tmp/db.
setup() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 99
	DCPI_CACHE=$tmp/cache
	mkdir "$DCPI_CACHE" || exit 99
	objdump -d --no-show-raw-insn "$IMAGE" > "$DCPI_CACHE/dis"
	nm -S --defined-only "$IMAGE" > "$DCPI_CACHE/nm"
	trap 'rm -rf "$tmp"' EXIT
	make_db "$tmp/db"
}

# check_count_column OUT FIELD EXPR: in dcpiprof -csl output OUT (procedure
# rows: the procedure is the second-last field), the count column whose value
# is field FIELD (its % and cum% follow) holds, per procedure, the awk sum of
# EXPR; its % is value/total to 2 decimals, its cum% runs to 100.00.
check_count_column() {
	by_procedure "$3" "$tmp/db" | sort -k2 > "$tmp/want"
	awk -F, -v f="$2" 'NR > 1 { print $f, $(NF - 1) }' "$1" | sort -k2 > "$tmp/got"
	cmp -s "$tmp/want" "$tmp/got" || { echo "want:"; cat "$tmp/want"; echo "got:"; cat "$tmp/got"; fail "column $2 of $1"; }
	total=$(awk '{ t += $1 } END { print t }' "$tmp/want")
	awk -F, -v f="$2" -v t="$total" '
		NR > 1 {
			want = sprintf("%.2f", $f * 100 / t)
			if ($(f + 1) != want) { print "row " NR ": % " $(f + 1) ", want " want; bad = 1 }
			cum += $f; wantc = sprintf("%.2f", cum * 100 / t)
			if ($(f + 2) != wantc) { print "row " NR ": cum% " $(f + 2) ", want " wantc; bad = 1 }
		}
		END { exit bad }' "$1" || fail "percentages of column $2"
}

# descending OUT FIELD: the rows of OUT are in descending order of FIELD.
descending() {
	awk -F, -v f="$2" 'NR > 2 && $f + 0 > prev + 0 { print "row " NR ": " $f " after " prev; bad = 1 } NR > 1 { prev = $f } END { exit bad }' "$1" ||
		fail "not in descending order of field $2"
}
