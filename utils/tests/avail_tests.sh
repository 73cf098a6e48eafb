#!/bin/sh
# avail_tests.sh - papi_heritage_avail against the built libpapi: exact event
# sets for its filters, the same filters through papi_native_avail with every
# difference explained, --json against the text listing, and a status-2
# message for each option's bad use.
#
# usage: avail_tests.sh PATH/papi_heritage_avail PATH/papi_native_avail
# Prints one PASS/FAIL line per check and a closing count; exits 0 if every
# check passed, 1 otherwise.

if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
	echo "usage: $0 PATH/papi_heritage_avail PATH/papi_native_avail" >&2
	exit 1
fi
AVAIL=$1
NATIVE=$2
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
passed=0
failed=0

pass() { passed=$((passed + 1)); echo "PASS: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }

# The itanium2 events: libpfm-3's Itanium 2 table, read here from the
# committed catalogue (src/itanium2/it2_catalog.c, the table as C, checked
# against the table itself by tests/cases/itanium2_catalog_source.test), not
# from the component's listings: .qual bit 0 iar, 1 opm, 2 dar; .type 2, 3
# I-EAR, 4-6 D-EAR.  What is counted here is the component's table
# (src/itanium2/it2_events.c).
IT2_CATALOG=$(dirname "$0")/../../src/itanium2/it2_catalog.c
if [ ! -r "$IT2_CATALOG" ]; then
	echo "FAIL: $IT2_CATALOG: not readable"
	exit 1
fi
IT2_MEASURED="LOADS_RETIRED STORES_RETIRED MISALIGNED_LOADS_RETIRED MISALIGNED_STORES_RETIRED IA64_INST_RETIRED IA64_INST_RETIRED_THIS
	IA64_TAGGED_INST_RETIRED_IBRP0_PMC8 IA64_TAGGED_INST_RETIRED_IBRP1_PMC9
	IA64_TAGGED_INST_RETIRED_IBRP2_PMC8 IA64_TAGGED_INST_RETIRED_IBRP3_PMC9 DATA_REFERENCES_SET0 DATA_REFERENCES_SET1"
IT2_MODELLED="CPU_CYCLES L1D_READS_SET0 L1D_READS_SET1 L1D_READ_MISSES_ALL L2_DATA_REFERENCES_L2_DATA_READS
	L2_DATA_REFERENCES_L2_DATA_WRITES L2_DATA_REFERENCES_L2_ALL L2_MISSES L3_READS_DATA_READ_ALL L3_READS_DATA_READ_HIT
	L3_READS_DATA_READ_MISS L3_WRITES_DATA_WRITE_ALL L3_WRITES_DATA_WRITE_HIT L3_WRITES_DATA_WRITE_MISS L3_REFERENCES
	L3_MISSES DTLB_INSERTS_HPW L2DTLB_MISSES L1DTLB_TRANSFER DATA_EAR_CACHE_LAT4 DATA_EAR_CACHE_LAT8 DATA_EAR_CACHE_LAT16
	DATA_EAR_CACHE_LAT32 DATA_EAR_CACHE_LAT64 DATA_EAR_CACHE_LAT128 DATA_EAR_CACHE_LAT256 DATA_EAR_CACHE_LAT512
	DATA_EAR_CACHE_LAT1024 DATA_EAR_CACHE_LAT2048 DATA_EAR_CACHE_LAT4096 DATA_EAR_TLB_ALL DATA_EAR_TLB_L2DTLB
	DATA_EAR_TLB_VHPT DATA_EAR_TLB_L2DTLB_OR_VHPT"

# itanium2_lib FLAG: sorted full names of the table's events with FLAG
# (all, darr, iarr, opcm, dear, iear).
itanium2_lib() {
	awk -v want="$1" '
	/^\t\[IT2C_[A-Z0-9_]+\] = \{ \.name = "/ {
		name = $0; sub(/^\t\[IT2C_/, "", name); sub(/\].*/, "", name)
		if (!match($0, /, \.code = 0x[0-9a-f]+, \.type = [0-7], \.qual = 0x[0-7] \},$/)) { print "bad entry: " $0; exit 1 }
		tail = substr($0, RSTART)
		t = tail; sub(/.*\.type = /, "", t); sub(/,.*/, "", t); t += 0
		q = tail; sub(/.*\.qual = 0x/, "", q); sub(/ .*/, "", q); q += 0
		if (want == "all" || (want == "darr" && int(q / 4) % 2) || (want == "iarr" && q % 2) ||
		    (want == "opcm" && int(q / 2) % 2) || (want == "dear" && t >= 4 && t <= 6) ||
		    (want == "iear" && (t == 2 || t == 3))) print "itanium2:::" name }' "$IT2_CATALOG" | sort
}

# Sorted full names, one a line, of itanium2 events given by base name.
itanium2_set() {
	for e in "$@"; do echo "itanium2:::$e"; done | sort
}

# "component event" per listed event of a papi_native_avail-style listing:
# event lines are the box lines that start "| NAME".
listed_pairs() {
	awk '/^ Native Events in Component: /{comp=$NF; next} /^\| [^ ]/{print comp, $2}' "$1"
}
listed_names() {
	listed_pairs "$1" | awk '{print $2}' | sort
}

# run NAME ARGS...: run papi_heritage_avail, keeping stdout, stderr, status.
run() {
	name=$1
	shift
	"$AVAIL" "$@" > "$TMP/$name.out" 2> "$TMP/$name.err"
	echo $? > "$TMP/$name.status"
}
status_of() { cat "$TMP/$1.status"; }

# expect_set NAME STATUS EXPECTED-FILE ARGS...: the listing is exactly the set.
expect_set() {
	name=$1 want_status=$2 want=$3
	shift 3
	run "$name" "$@"
	listed_names "$TMP/$name.out" > "$TMP/$name.names"
	got_status=$(status_of "$name")
	if cmp -s "$TMP/$name.names" "$want" && [ "$got_status" -eq "$want_status" ]; then
		pass "'$*' lists exactly $(wc -l < "$want" | tr -d ' ') event(s), status $got_status"
	else
		fail "'$*' (status $got_status, want $want_status); listed vs expected:"
		diff "$TMP/$name.names" "$want" | sed 's/^/    /'
	fi
}

# no_events_from NAME COMPONENT...: no listed event belongs to these components.
no_events_from() {
	name=$1
	shift
	for comp in "$@"; do
		if listed_pairs "$TMP/$name.out" | awk -v c="$comp" '$1 == c {found=1} END {exit !found}'; then
			fail "$name lists events of $comp:"
			listed_pairs "$TMP/$name.out" | awk -v c="$comp" '$1 == c' | sed 's/^/    /'
		else
			pass "$name lists nothing from $comp"
		fi
	done
}

echo "=== exact sets"
# shellcheck disable=SC2086 # the lists are split into names on purpose
{
	for f in all darr iarr opcm dear iear; do itanium2_lib $f > "$TMP/want_$f"; done
	itanium2_set $IT2_MEASURED > "$TMP/want_measured"
	itanium2_set $IT2_MODELLED > "$TMP/want_modelled"
	sort -m "$TMP/want_measured" "$TMP/want_modelled" | comm -23 "$TMP/want_all" - > "$TMP/want_unavailable"
	comm -12 "$TMP/want_darr" "$TMP/want_modelled" > "$TMP/want_darr_modelled"
}
: > "$TMP/want_none"

expect_set darr 0 "$TMP/want_darr" --darr
no_events_from darr perf_event perf_event_uncore sysdetect
expect_set iarr 0 "$TMP/want_iarr" --iarr
no_events_from iarr perf_event perf_event_uncore sysdetect
comm -12 "$TMP/want_darr" "$TMP/want_iarr" > "$TMP/want_both"
expect_set darr_iarr 0 "$TMP/want_both" --darr --iarr
expect_set iarr_darr 0 "$TMP/want_both" --iarr --darr
expect_set it2_measured 0 "$TMP/want_measured" --component itanium2 --measured
expect_set it2_modelled 0 "$TMP/want_modelled" --component itanium2 --modelled
expect_set it2_unavailable 0 "$TMP/want_unavailable" --component itanium2 --unavailable
if [ -s "$TMP/want_darr_modelled" ]; then
	expect_set it2_darr_modelled 0 "$TMP/want_darr_modelled" --darr --modelled
else
	expect_set it2_darr_modelled 1 "$TMP/want_none" --darr --modelled
fi
for f in dear iear opcm; do
	expect_set "$f" 0 "$TMP/want_$f" "--$f"
done
# Without -c nothing establishes that a non-heritage event works with
# PAPI_overflow, and itanium2 says none of its events does; every alpha21064
# event does (its counters speak only through overflow), and every profileme
# event that can be added here (a sample set's samples carry their PC).
ALPHA_EVENTS="BRANCH_INSNS BRANCH_MISPREDICTS CYCLES DCACHE_MISSES DUAL_ISSUE_CYCLES EXTERNAL EXTERNAL_1 FP_INSNS
	ICACHE_MISSES INTEGER_OPERATE ISSUES LOAD_INSNS NON_ISSUES PAL_MODE PIPELINE_DRY PIPELINE_FROZEN STORE_INSNS"
if grep -q 'alpha21064:::' "$TMP/darr.out" 2>/dev/null || "$AVAIL" --component alpha21064 --noqual 2>/dev/null | grep -q 'alpha21064:::'; then
	for e in $ALPHA_EVENTS; do echo "alpha21064:::$e"; done > "$TMP/want_overflow"
	want_overflow_status=0
else
	: > "$TMP/want_overflow"
	want_overflow_status=1
fi
"$AVAIL" --component profileme --noqual > "$TMP/pm_all.out" 2>/dev/null
"$AVAIL" --component profileme --unavailable --noqual > "$TMP/pm_unavailable.out" 2>/dev/null
listed_names "$TMP/pm_unavailable.out" | sort > "$TMP/pm_unavailable"
listed_names "$TMP/pm_all.out" | sort | comm -23 - "$TMP/pm_unavailable" >> "$TMP/want_overflow"
[ -s "$TMP/want_overflow" ] && want_overflow_status=0
sort -o "$TMP/want_overflow" "$TMP/want_overflow"
expect_set overflow "$want_overflow_status" "$TMP/want_overflow" --overflow
# The note is due exactly when an active non-heritage component lists events
# (perf_event where libpfm4 and the kernel let it be enabled): counted from
# papi_native_avail's listing, the components told apart by their
# papi_component_avail description.  Again with libpfm4 forced onto a PMU it
# does not have, which disables perf_event (PAPI 7.0.0: "libpfm4 no PMUs
# found"), so that both answers are exercised wherever one of them is.
COMPONENT_AVAIL=$(dirname "$NATIVE")/papi_component_avail
# note_case LABEL [VAR=VALUE]: the note check, in the environment given.
note_case() {
	label=$1
	shift
	heritage=$(env "$@" "$COMPONENT_AVAIL" 2>/dev/null | awk '/^Name: .*\(papi-heritage\)/ {print $2}' | sort -u)
	others=$(env "$@" "$NATIVE" --noqual 2>/dev/null > "$TMP/note_native.out"
		listed_pairs "$TMP/note_native.out" | awk -v h=" $(echo $heritage) " 'index(h, " " $1 " ") == 0' | wc -l)
	env "$@" "$AVAIL" --overflow > /dev/null 2> "$TMP/note.err"
	if [ -z "$heritage" ]; then
		fail "$label: papi_component_avail names no papi-heritage component"
	elif [ "$others" -gt 0 ] && grep -q "without -c" "$TMP/note.err"; then
		pass "$label: --overflow without -c says why the $others non-heritage event(s) are not shown"
	elif [ "$others" -eq 0 ] && ! grep -q "without -c" "$TMP/note.err"; then
		pass "$label: --overflow without -c gives no note, as no non-heritage component lists events"
	else
		fail "$label: --overflow without -c: $others non-heritage event(s) listed, stderr:"
		sed 's/^/    /' "$TMP/note.err"
	fi
}
note_case "as configured"
note_case "LIBPFM_FORCE_PMU=nosuchpmu" LIBPFM_FORCE_PMU=nosuchpmu
# With -c an event is shown usable with PAPI_overflow only after a trial, so
# only if it is measured too (alpha21064 and profileme say modelled where
# their documented models are); itanium2 events never.
run overflow_c -c --overflow --noqual
if listed_pairs "$TMP/overflow_c.out" | awk '$1 == "itanium2" {bad=1} END {exit bad}' &&
	! grep '^| [^ ]' "$TMP/overflow_c.out" | grep -v 'alpha21064:::\|profileme:::' | grep -v ' ovf .*measured ' | grep -q .; then
	pass "-c --overflow lists $(listed_names "$TMP/overflow_c.out" | wc -l | tr -d ' ') event(s), each measured by trial, none from itanium2"
else
	fail "-c --overflow lists an itanium2 event or one not measured by trial"
fi

# The --json checks parse with Python's json module (Debian: python3).
if command -v python3 > /dev/null 2>&1; then
	json_runs="all_json all_json_c"
	json_filters="--darr --iarr --dear"
else
	fail "python3 not found: the --json checks need it as their JSON parser (apt-get install python3)"
	json_runs=""
	json_filters=""
fi

echo "=== non-heritage components never claim what PAPI did not establish"
run all_json --json
run all_json_c --json -c
for name in $json_runs; do
	if python3 - "$TMP/$name.out" <<'EOF'
import json, sys
events = json.load(open(sys.argv[1]))
ranges = {"darr", "iarr", "dear", "iear", "opcm"}
never = {"unreadable", "sample", "trace"}
bad = []
for e in events:
    if e["component"] not in ("perf_event", "perf_event_uncore", "sysdetect"):
        continue
    if e["classified_by"] != "papi":
        bad.append(e["name"] + " classified by " + e["classified_by"])
    caps = set(e["capabilities"])
    if caps & (ranges | never):
        bad.append(e["name"] + " claims " + " ".join(sorted(caps & (ranges | never))))
    if ("overflow" in caps or "profile" in caps) and e["source"] != "measured":
        bad.append(e["name"] + " usable with overflow/profil but not measured by trial")
    if e["source"] not in ("measured", "unknown"):
        bad.append(e["name"] + " has source " + e["source"])
    if "available" not in e and (caps or e["source"] != "unknown"):
        bad.append(e["name"] + " classified without -c: " + " ".join(sorted(caps)) + " " + e["source"])
for line in bad:
    print("    " + line)
sys.exit(1 if bad else 0)
EOF
	then
		pass "$name: no perf_event/perf_event_uncore/sysdetect event claims a range, EAR, opcode, unreadable, sample or trace capability, or an unestablished source"
	else
		fail "$name: a non-heritage event claims what PAPI did not establish"
	fi
done

echo "=== the same filter through papi_native_avail: every difference is its first-event bug"
"$NATIVE" --noqual > "$TMP/native_all.out" 2>/dev/null
listed_pairs "$TMP/native_all.out" | awk '!seen[$1]++' > "$TMP/first_events"
echo "    first event of each component (PAPI_ENUM_FIRST): $(awk '{printf "%s%s=%s", (NR > 1 ? " " : ""), $1, $2}' "$TMP/first_events")"
for filter in --darr --iarr --dear --iear --opcm "--darr -i itanium2:::" "-i RETIRED" "-x perf"; do
	tag=$(echo "$filter" | tr -c 'a-z0-9\n' '_')
	# shellcheck disable=SC2086 # the filter is several words on purpose
	"$NATIVE" --noqual $filter > "$TMP/native$tag.out" 2>/dev/null
	# shellcheck disable=SC2086
	run "heritage$tag" --noqual $filter
	listed_names "$TMP/native$tag.out" > "$TMP/native$tag.names"
	listed_names "$TMP/heritage$tag.out" > "$TMP/heritage$tag.names"
	only_heritage=$(comm -13 "$TMP/native$tag.names" "$TMP/heritage$tag.names")
	only_native=$(comm -23 "$TMP/native$tag.names" "$TMP/heritage$tag.names")
	ok=1
	if [ -n "$only_heritage" ]; then
		ok=0
		echo "    listed by papi_heritage_avail only (unexplained): $(echo "$only_heritage" | tr '\n' ' ')"
	fi
	for event in $only_native; do
		comp=$(awk -v e="$event" '$2 == e {print $1}' "$TMP/first_events")
		if [ -n "$comp" ]; then
			"$AVAIL" -e "$event" --noqual > "$TMP/detail.out" 2>/dev/null
			caps=$(sed -n 's/^Capabilities: *//p' "$TMP/detail.out")
			echo "    $filter: papi_native_avail also lists $event: the first event of component $comp," \
				"printed without the filter being checked (first-event bug); papi_heritage_avail: $caps"
		else
			ok=0
			echo "    $filter: papi_native_avail also lists $event, which is not a component's first event (unexplained)"
		fi
	done
	n_native=$(wc -l < "$TMP/native$tag.names" | tr -d ' ')
	n_heritage=$(wc -l < "$TMP/heritage$tag.names" | tr -d ' ')
	if [ $ok -eq 1 ]; then
		pass "'$filter': papi_native_avail $n_native event(s), papi_heritage_avail $n_heritage; every difference is the first-event bug"
	else
		fail "'$filter': papi_native_avail $n_native event(s), papi_heritage_avail $n_heritage; unexplained differences above"
	fi
done

echo "=== --json parses and matches the text listing"
for filter in $json_filters "--component itanium2" "--component perf_event" "-c --component perf_event"; do
	[ -n "$json_filters" ] || break
	tag=$(echo "$filter" | tr -c 'a-z0-9\n' '_')
	# shellcheck disable=SC2086
	run "text$tag" --noqual $filter
	# shellcheck disable=SC2086
	run "json$tag" --json $filter
	# shellcheck disable=SC2086
	run "count$tag" --count $filter
	if ! python3 -m json.tool "$TMP/json$tag.out" > /dev/null 2> "$TMP/json$tag.parse"; then
		fail "--json $filter does not parse: $(cat "$TMP/json$tag.parse")"
		continue
	fi
	required=$(echo "$filter" | sed -n 's/^--\([a-z]*\)$/\1/p')
	if ! python3 - "$TMP/json$tag.out" "$required" > "$TMP/json$tag.names" <<'EOF'
import json, sys
events = json.load(open(sys.argv[1]))
required = sys.argv[2]
assert isinstance(events, list), "not an array"
for e in events:
    for key, kind in (("name", str), ("component", str), ("description", str), ("units", str),
                      ("capabilities", list), ("source", str)):
        assert isinstance(e.get(key), kind), "%s: %s missing or not %s" % (e.get("name"), key, kind.__name__)
    assert e["source"] in ("measured", "modelled", "unavailable", "unknown"), e["source"]
    assert not required or required in e["capabilities"], "%s lacks %s" % (e["name"], required)
    print(e["name"])
EOF
	then
		fail "--json $filter: objects malformed"
		continue
	fi
	sort "$TMP/json$tag.names" > "$TMP/json$tag.sorted"
	listed_names "$TMP/text$tag.out" > "$TMP/text$tag.names"
	count=$(cat "$TMP/count$tag.out")
	n=$(wc -l < "$TMP/text$tag.names" | tr -d ' ')
	if cmp -s "$TMP/json$tag.sorted" "$TMP/text$tag.names" && [ "$count" = "$n" ] &&
		[ "$(status_of "json$tag")" = "$(status_of "text$tag")" ] &&
		[ "$(status_of "count$tag")" = "$(status_of "text$tag")" ]; then
		pass "--json $filter parses: $n object(s) with all fields, the same names as the text listing; --count says $count"
	else
		fail "--json $filter: names differ from the text listing, or --count ($count) differs from $n"
		diff "$TMP/json$tag.sorted" "$TMP/text$tag.names" | sed 's/^/    /'
	fi
done

echo "=== bad use: status 2 and a message naming the option"
bad_use() {
	option=$1
	shift
	"$AVAIL" "$@" > "$TMP/bad.out" 2> "$TMP/bad.err"
	status=$?
	if [ $status -eq 2 ] && [ ! -s "$TMP/bad.out" ] && grep -qF -- "$option" "$TMP/bad.err"; then
		pass "'$*': status 2, \"$(head -1 "$TMP/bad.err")\""
	else
		fail "'$*': status $status, stderr: $(head -1 "$TMP/bad.err")"
	fi
}
bad_use -e -e
bad_use -e -e NO_SUCH_EVENT
bad_use -e -e itanium2:::LOADS_RETIRED -e itanium2:::STORES_RETIRED
bad_use -i -i
bad_use -i -i --darr
bad_use -x -x
bad_use -x -x ""
bad_use --component --component
bad_use --component --component no_such_component
bad_use --component --component=
bad_use --json --json --count
bad_use --measured --measured --modelled
bad_use --unavailable --modelled --unavailable
bad_use --bogus --bogus
bad_use -q -q
for flag in --check --noqual --nogroups --json --count --help --darr --iarr --dear --iear --opcm --overflow --profile \
	--unreadable --sample --trace --measured --modelled --unavailable; do
	bad_use "$flag" "$flag=1"
done

echo "=== help and exit status"
for h in -h --help; do
	"$AVAIL" "$h" > "$TMP/help.out" 2>&1
	status=$?
	if [ $status -eq 0 ] && grep -q "^Usage:" "$TMP/help.out" && grep -q -- "--component NAME" "$TMP/help.out"; then
		pass "$h prints usage, status 0"
	else
		fail "$h: status $status"
	fi
done
run status_e -e itanium2:::LOADS_RETIRED --darr
run status_e_no -e itanium2:::CPU_CYCLES --darr
if [ "$(status_of status_e)" -eq 0 ] && [ "$(status_of status_e_no)" -eq 1 ] && [ ! -s "$TMP/status_e_no.out" ]; then
	pass "-e EVENT obeys the filters: status 0 when it matches, 1 and no listing when not"
else
	fail "-e EVENT with filters: status $(status_of status_e) and $(status_of status_e_no)"
fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
