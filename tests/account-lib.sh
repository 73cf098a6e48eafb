# account-lib.sh: sourced by the tests that run a program of the build as
# another account (. "$srcdir/tests/account-lib.sh").
#
# That account may not reach the build tree: a clone under /root (mode 0700)
# is closed to every other account, and the build's programs load libpapi
# from stage/lib through their run path.  So what the other account runs is
# copied, with the shared libraries it loads from the build tree, into a
# directory of its own under /tmp (the test's account owns it, mode 0755),
# and run from there; LD_LIBRARY_PATH names that directory, which the
# loader searches before the programs' run path (DT_RUNPATH), so the copies
# load the copied libraries.
# /tmp and not $TMPDIR: pam_tmpdir and the like point TMPDIR at a directory
# of the caller's own (mode 0700).
#
#   account_dir
#       makes $ACCOUNT_DIR (once), under $ACCOUNT_BASE (default /tmp), and
#       removes it when the test exits (a trap on EXIT: a test that sets its
#       own afterwards removes it there).
#   account_copy ACCOUNT FILE...
#       copies each FILE into $ACCOUNT_DIR (same name), with every library
#       ldd resolves under $abs_top_builddir or $STAGE, and exports
#       LD_LIBRARY_PATH.  As root (the only account that can switch to
#       another), then checks as ACCOUNT (a name or a uid) that every copy
#       can be read and the programs run; if not, prints "SKIPPED: ..."
#       naming the directory ACCOUNT cannot enter, and exits 77.  A setuid
#       copy ignores LD_LIBRARY_PATH: copy only programs that load nothing
#       from the build tree for that.

: "${abs_top_builddir:=$(pwd)}" "${STAGE:=$abs_top_builddir/stage}"

account_dir() {
	[ -n "${ACCOUNT_DIR:-}" ] && return 0
	ACCOUNT_DIR=$(mktemp -d "${ACCOUNT_BASE:-/tmp}/papi-heritage-account.XXXXXX") || {
		echo "account_dir: cannot make a directory under ${ACCOUNT_BASE:-/tmp}"
		exit 99
	}
	chmod 0755 "$ACCOUNT_DIR" || exit 99
	trap 'rm -rf "$ACCOUNT_DIR"' EXIT
}

# account_ids ACCOUNT: "UID GID" of a name or a number (a number without a
# passwd entry: its own number as the group).
account_ids() {
	if id -u "$1" > /dev/null 2>&1; then
		echo "$(id -u "$1") $(id -g "$1")"
	else
		case $1 in
		*[!0-9]* | '') return 1 ;;
		*) echo "$1 $1" ;;
		esac
	fi
}

# account_unreachable UID GID FILE: the first directory on FILE's path that
# the account cannot enter, or FILE itself if it cannot read it.
account_unreachable() {
	d=
	rest=${3#/}
	while [ "$rest" != "${rest#*/}" ]; do
		d=$d/${rest%%/*}
		rest=${rest#*/}
		setpriv --reuid="$1" --regid="$2" --clear-groups test -x "$d" || { echo "$d"; return; }
	done
	echo "$3"
}

account_copy() {
	account=${1:?usage: account_copy ACCOUNT FILE...}
	shift
	account_dir
	for f in "$@"; do
		cp "$f" "$ACCOUNT_DIR/" || exit 99
		# "libpapi.so.7.0 => /.../stage/lib/libpapi.so.7.0 (0x...)"
		ldd "$f" 2> /dev/null | while read -r lib arrow path rest; do
			[ "$arrow" = "=>" ] || continue
			case $path in
			"$abs_top_builddir"/* | "$STAGE"/*)
				[ -e "$ACCOUNT_DIR/$lib" ] || cp -L "$path" "$ACCOUNT_DIR/$lib" || exit 99 ;;
			esac
		done || exit 99
	done
	chmod -R go+rX,go-w "$ACCOUNT_DIR" || exit 99
	LD_LIBRARY_PATH=$ACCOUNT_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH
	[ "$(id -u)" = 0 ] && command -v setpriv > /dev/null || return 0
	ids=$(account_ids "$account") || {
		echo "SKIPPED: no account $account on this machine to run $* as"
		exit 77
	}
	set -- $ids
	for f in "$ACCOUNT_DIR"/*; do
		if [ -x "$f" ]; then want=-x; else want=-r; fi
		setpriv --reuid="$1" --regid="$2" --clear-groups test "$want" "$f" -a -r "$f" && continue
		echo "SKIPPED: $account (uid $1) cannot reach $(account_unreachable "$1" "$2" "$f"), where the copy" \
			"it runs ($f) is"
		exit 77
	done
}
