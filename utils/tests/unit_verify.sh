#!/bin/sh
# rpmd.service as systemd reads it: systemd-analyze verify on the unit with
# ExecStart at the built rpmd (verify insists the program exists), and the
# properties the service depends on: CAP_PERFMON alone, no new privileges,
# and the host's /dev/shm (a private /dev would hide the page from readers).
#   unit_verify.sh RPMD_SERVICE_IN RPMD
unit_in=$1
rpmd=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
if ! command -v systemd-analyze > /dev/null 2>&1; then
	echo "systemd-analyze not found (apt-get install systemd): rpmd.service not verified"
	exit 77
fi
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
sed "s|@bindir@/rpmd|$rpmd|" "$unit_in" > "$dir/rpmd.service"
systemd-analyze verify --man=no "$dir/rpmd.service" || { echo "systemd-analyze verify refused rpmd.service"; exit 1; }
fail=0
for line in 'CapabilityBoundingSet=CAP_PERFMON' 'AmbientCapabilities=CAP_PERFMON' 'NoNewPrivileges=yes' \
	'SecureBits=noroot noroot-locked' "ExecStart=$rpmd -f --no-log --pidfile=/run/rpmd/rpmd.pid"; do
	grep -qxF "$line" "$dir/rpmd.service" || { echo "rpmd.service lacks: $line"; fail=1; }
done
if grep -Eq '^(PrivateDevices|PrivateIPC|DynamicUser)=(yes|true|on|1)' "$dir/rpmd.service"; then
	echo "rpmd.service would publish out of the readers' sight (private /dev or IPC) or as a changing uid"
	fail=1
fi
[ $fail -eq 0 ] && echo "rpmd.service: systemd-analyze verify passed; CAP_PERFMON only, no new privileges, host /dev/shm"
exit $fail
