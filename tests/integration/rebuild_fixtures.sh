#!/bin/bash
# raidimg rebuild: a missing member of each degraded fixture is rebuilt so
# that the array assembles complete to the manifest's sha256 and scrubs
# clean; rebuilding an existing member (the first and the last role) of every
# healthy fixture (md 0.90, 1.0, 1.1, 1.2; RAID5 and RAID6) gives an image
# whose data area is byte-identical to the original and that takes the
# original's place.  The
# role-K image given is never read; the members are never modified.
. "$(dirname "$0")/lib.sh"

jqt() { jq -e "$@" >/dev/null; }
W=$TMP/work
mkdir -p "$W"

# complete_with CASE DESC IMAGE...: the images assemble complete, to the
# manifest's sha256, and scrub clean
complete_with() {
	local c=$1 d=$2; shift 2
	"$RAIDIMG" examine --json "$@" >"$TMP/ex.json" 2>"$TMP/err"
	check "$c: $d: examine verdict complete" jqt '.array.verdict == "complete"' "$TMP/ex.json"
	got=$("$RAIDIMG" cat "$@" 2>/dev/null | sha)
	check "$c: $d: sha256 = the manifest's" test "$got" = "$(mf "$c" .sha256)"
	"$RAIDIMG" scrub "$@" >/dev/null 2>&1
	check "$c: $d: scrubs clean" test $? -eq 0
}

# data_area IMAGE OFFSET BYTES: sha256 of the data area
data_area() { tail -c +$(($2 + 1)) "$1" | head -c "$3" | sha; }

for c in $(fixture_cases); do
	dir=$(fixture_dir "$c")
	mapfile -t imgs < <(members_shuffled "$c")
	before=$(shas "${imgs[@]}" | sort)
	[ "$(mf "$c" '.corruption | length')" -gt 0 ] && continue
	missing=$(mf "$c" '.missing_roles | join(" ")')
	if [ -n "$missing" ]; then
		# every missing role, from the members that are there
		new=()
		for k in $missing; do
			"$RAIDIMG" rebuild --role "$k" -o "$W/$c-new$k.img" "${imgs[@]}" >"$TMP/out" 2>"$TMP/err"
			check "$c: rebuild role $k: exit 0 ($(head -c 200 "$TMP/err"))" test $? -eq 0
			new+=("$W/$c-new$k.img")
		done
		complete_with "$c" "rebuilt role(s) $missing" "${imgs[@]}" "${new[@]}"
		# RAID6 with two missing: the second from the first rebuilt one too
		set -- $missing
		if [ $# -eq 2 ]; then
			"$RAIDIMG" rebuild --role "$2" -o "$W/$c-2nd.img" "${imgs[@]}" "$W/$c-new$1.img" >/dev/null 2>&1
			doff=$(mf "$c" '.members[0].data_offset_bytes')
			bytes=$(($(mf "$c" .component_size_kib) * 1024))
			check "$c: role $2 rebuilt from the others and rebuilt role $1: same data" test \
				"$(data_area "$W/$c-2nd.img" "$doff" "$bytes")" = "$(data_area "$W/$c-new$2.img" "$doff" "$bytes")"
		fi
	else
		# existing roles (the first and the last: with rotating layouts each
		# holds data, P and Q chunks): identical data area, takes the
		# original's place
		doff=$(mf "$c" '.members[0].data_offset_bytes')
		bytes=$(($(mf "$c" .component_size_kib) * 1024))
		for img in "$dir/member0.img" "$dir/member$(($(mf "$c" .raid_devices) - 1)).img"; do
			k=$(mf "$c" ".members[] | select(.image == \"$(basename "$img")\") | .role")
			others=()
			for o in "${imgs[@]}"; do [ "$o" = "$img" ] || others+=("$o"); done
			"$RAIDIMG" rebuild --role "$k" -o "$W/new.img" "${imgs[@]}" >"$TMP/out" 2>"$TMP/err"
			check "$c: rebuild existing role $k: exit 0 ($(head -c 200 "$TMP/err"))" test $? -eq 0
			check "$c: role $k: same image size" test "$(stat -c %s "$W/new.img")" -eq "$(stat -c %s "$img")"
			check "$c: role $k: data area byte-identical" \
				test "$(data_area "$W/new.img" "$doff" "$bytes")" = "$(data_area "$img" "$doff" "$bytes")"
			check "$c: role $k: same device slot as the original" test \
				"$("$RAIDIMG" examine --json "$W/new.img" "${others[@]}" | jq -r '.members[] | select(.role == '"$k"') | .dev_number')" = \
				"$("$RAIDIMG" examine --json "${imgs[@]}" | jq -r '.members[] | select(.role == '"$k"') | .dev_number')"
			complete_with "$c" "role $k replaced" "${others[@]}" "$W/new.img"
			rm -f "$W/new.img"
		done
	fi
	after=$(shas "${imgs[@]}" | sort)
	check "$c: members unchanged" test "$before" = "$after"
done

# The role-K image is never read: give one whose data area is garbage.
c=r6-ls-6x6M-64K-md12
dir=$(fixture_dir "$c")
cp "$dir/member3.img" "$W/bad3.img" && chmod 644 "$W/bad3.img"
head -c $((5 << 20)) /dev/urandom | dd of="$W/bad3.img" bs=1M seek=1 conv=notrunc status=none
"$RAIDIMG" rebuild --role 3 -o "$W/new3.img" "$dir"/member{0,1,2,4,5}.img "$W/bad3.img" >/dev/null 2>&1
check "$c: a garbage role-3 image given: rebuild exit 0" test $? -eq 0
check "$c: ...and its output equals the one rebuilt without it" \
	test "$(data_area "$W/new3.img" 1048576 $((5 << 20)))" = "$(data_area "$dir/member3.img" 1048576 $((5 << 20)))"

# --json summary
"$RAIDIMG" rebuild --json --role 0 -o "$W/j.img" "$dir"/member{1,2,3,4,5}.img >"$TMP/j.json" 2>/dev/null
check "rebuild --json: one summary object" jqt '.type == "rebuild" and .role == 0 and .metadata == "1.2" and .dev_number == 0' "$TMP/j.json"

# manual geometry: the data area only, at --data-offset
c=r5-ls-4x8M-64K-md12
dir=$(fixture_dir "$c")
"$RAIDIMG" rebuild --level 5 --chunk 64K --data-offset 1M --member-size 7M --role 2 -o "$W/m2.img" \
	"$dir/member0.img" "$dir/member1.img" missing "$dir/member3.img" >"$TMP/out" 2>"$TMP/err"
check "manual geometry rebuild: exit 0 ($(head -c 200 "$TMP/err"))" test $? -eq 0
check "manual geometry rebuild: data area identical" \
	test "$(data_area "$W/m2.img" 1048576 $((7 << 20)))" = "$(data_area "$dir/member2.img" 1048576 $((7 << 20)))"
check "manual geometry rebuild: says there is no metadata" grep -q "no md metadata" "$TMP/out"
finish
