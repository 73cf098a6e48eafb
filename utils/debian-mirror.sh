# debian-mirror.sh: sourced by ./bootstrap and tests/check-fresh.
#
# find_mirror: sets uri and suite to the first main archive entry of the apt
# sources, in the deb822 (/etc/apt/sources.list.d/*.sources) or the one-line
# (/etc/apt/sources.list) format; the security archive is skipped, as it has
# no pool of source tarballs and no base system.  Both empty if none.
find_mirror() {
	uri=""; suite=""
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		uri=$(awk '/^URIs:/ {print $2; exit}' "$f")
		suite=$(awk '/^Suites:/ {print $2; exit}' "$f")
		case $uri in
		"" | *security*) uri=""; suite="" ;;
		*) return 0 ;;
		esac
	done
	if [ -f /etc/apt/sources.list ]; then
		line=$(grep -E '^deb (\[[^]]*\] )?[a-z]+://' /etc/apt/sources.list | grep -v security | head -1 |
			sed -E 's/^deb (\[[^]]*\] )?//' || true)
		uri=$(echo "$line" | awk '{print $1}')
		suite=$(echo "$line" | awk '{print $2}')
	fi
}
