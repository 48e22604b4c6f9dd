#!/bin/bash
# examine says what mdadm --examine says, checked against mdadm's own output
# for every real-md fixture (examine.txt, written by mdadm 4.2 in the VM
# that made the fixture, in UTC): creation and update times, device uuid,
# checksum, the bad block log, the bitmap (none there; one set in a copy's
# superblock here) and the array state line, in text and in JSON; a
# checksum that does not match is said (checksum_ok false); examine --test
# exits as mdadm --detail --test does: 0 complete, 1 degraded, 2 not
# assemblable.
. "$(dirname "$0")/lib.sh"

# field FILE MEMBER LABEL: the value mdadm printed for LABEL in MEMBER's section
field() {
	awk -v m="### $2 " -v l="$3" '
		index($0, m) == 1 { in_m = 1; next }
		/^### / { in_m = 0 }
		in_m { s = $0; sub(/^ */, "", s); if (index(s, l " : ") == 1) { print substr(s, length(l) + 4); exit } }' "$1"
}
# ours TEXT PATH LABEL: the value raidimg examine printed for LABEL under PATH
ours() {
	awk -v p="$2:" -v l="$3" '
		$0 == p { in_m = 1; next }
		/^[^ ]/ { in_m = 0 }
		in_m { s = $0; sub(/^ */, "", s); if (index(s, l) == 1) { sub(/^[^:]*: /, "", s); print s; exit } }' "$1"
}
iso() { date -u -d "$1" +%Y-%m-%dT%H:%M:%SZ; }

for c in $(fixture_cases); do
	d=$(fixture_dir "$c")
	ex=$FIXTURES/$c/examine.txt
	imgs=("$d"/member*.img)
	"$RAIDIMG" examine "${imgs[@]}" >"$TMP/text" 2>/dev/null
	"$RAIDIMG" examine --json "${imgs[@]}" >"$TMP/json" 2>/dev/null
	meta=$(mf "$c" .metadata)
	for i in "${!imgs[@]}"; do
		img=${imgs[$i]}
		m=$(basename "$img" .img)
		j=".members[$i]"
		ct=$(field "$ex" "$m" "Creation Time")
		ut=$(field "$ex" "$m" "Update Time")
		cs=$(field "$ex" "$m" "Checksum")
		check "$c $m: creation time = mdadm's ($ct)" test "$(ours "$TMP/text" "$img" "creation time")" = "$ct UTC"
		check "$c $m: update time = mdadm's ($ut)" test "$(ours "$TMP/text" "$img" "update time")" = "$ut UTC"
		check "$c $m: checksum = mdadm's ($cs)" test "$(ours "$TMP/text" "$img" "checksum")" = "$cs"
		check "$c $m: JSON created/updated/checksum" \
			jq -e "$j | .created == \"$(iso "$ct")\" and .updated == \"$(iso "$ut")\" and .checksum == \"${cs%% *}\" and .checksum_ok == true" "$TMP/json" >/dev/null
		check "$c $m: no bitmap (feature map $(field "$ex" "$m" "Feature Map"))" \
			test "$(ours "$TMP/text" "$img" "bitmap")/$(jq -c "$j.bitmap" "$TMP/json")" = "none/null"
		if [ "$meta" = 0.90 ]; then
			# no device uuid, no bad block log, no "Array State" line: the disk table
			states=$(awk -v m="### $m " 'index($0, m) == 1 { in_m = 1; next } /^### / { in_m = 0 }
				in_m && $1 ~ /^[0-9]+$/ && NF >= 7 { s[$5] = ($6 == "active" ? "A" : ".") }
				END { for (r = 0; r in s; r++) printf "%s", s[r] }' "$ex")
			check "$c $m: array state $states, from mdadm's disk table" \
				test "$(ours "$TMP/text" "$img" "array state")" = "$states ('A' == active, '.' == missing, 'R' == replacing)"
			check "$c $m: 0.90: no device uuid, no bad block log" \
				jq -e "$j | .device_uuid == null and .bad_block_log == null and .array_state == \"$states\"" "$TMP/json" >/dev/null
			continue
		fi
		du=$(field "$ex" "$m" "Device UUID")
		as=$(field "$ex" "$m" "Array State")
		bb=$(field "$ex" "$m" "Bad Block Log")
		check "$c $m: device uuid = mdadm's" test "$(ours "$TMP/text" "$img" "device uuid")" = "$du"
		check "$c $m: array state = mdadm's (${as%% *})" test "$(ours "$TMP/text" "$img" "array state")" = "$as"
		check "$c $m: bad block log = mdadm's ($bb)" test "$(ours "$TMP/text" "$img" "bad block log")" = "$bb"
		entries=${bb%% entries*}
		off=${bb#*offset }
		check "$c $m: JSON device uuid, array state, bad block log" \
			jq -e "$j | .device_uuid == \"$du\" and .array_state == \"${as%% *}\" and .bad_block_log == {\"entries\": $entries, \"offset_sectors\": ${off%% *}, \"bad_blocks\": false}" "$TMP/json" >/dev/null
	done
done

# ---- a bitmap and bad blocks, a wrong checksum (edited copies) ----
c=r5-ls-4x8M-64K-md12
src=$(fixture_dir "$c")
mkdir -p "$TMP/e"
cp "$src"/member*.img "$TMP/e/"
chmod 644 "$TMP/e"/*.img
e=$TMP/e/member1.img
sb_set 8 4 $((1 | 8)) "$e"          # feature map: bitmap, bad blocks present
sb_set 96 4 8 "$e"                  # bitmap 8 sectors from the superblock
"$RAIDIMG" examine "$e" >"$TMP/text" 2>/dev/null
"$RAIDIMG" examine --json "$e" >"$TMP/json" 2>/dev/null
check "bitmap: said as mdadm does (Internal Bitmap : 8 sectors from superblock)" \
	test "$(ours "$TMP/text" "$e" "bitmap")" = "internal, 8 sectors from the superblock"
check "bad blocks present: said" \
	test "$(ours "$TMP/text" "$e" "bad block log")" = "512 entries available at offset 16 sectors - bad blocks present"
check "JSON: bitmap and bad blocks" \
	jq -e '.members[0] | .bitmap == {"offset_sectors": 8} and .bad_block_log.bad_blocks == true' "$TMP/json" >/dev/null
put_le "$e" $((SB + 216)) 4 12345
"$RAIDIMG" examine --json "$e" >"$TMP/json" 2>/dev/null
check "a wrong checksum: checksum_ok false, the error names both sums" \
	jq -e '.members[0] | .metadata == null and .checksum_ok == false and (.error | test("checksum mismatch \\(stored 0x00003039, computed 0x[0-9a-f]{8}\\)"))' "$TMP/json" >/dev/null
"$RAIDIMG" examine "$e" >"$TMP/text" 2>/dev/null
check "... and in text" grep -q "error: md 1.2 superblock checksum mismatch (stored 0x00003039" "$TMP/text"

# ---- examine --test: mdadm's exit statuses ----
test_rc() { "$RAIDIMG" examine --test "$@" >/dev/null 2>&1; echo $?; }
m=("$src"/member*.img)
check "--test: complete: 0" test "$(test_rc "${m[@]}")" = 0
check "--test: degraded (one RAID5 member left out): 1" test "$(test_rc "${m[0]}" "${m[1]}" "${m[3]}")" = 1
check "without --test a degraded array is 0 (it can be assembled)" \
	test "$("$RAIDIMG" examine "${m[0]}" "${m[1]}" "${m[3]}" >/dev/null 2>&1; echo $?)" = 0
d6=$(fixture_dir r6-ls-6x6M-64K-missing1-4)
check "--test: RAID6 with two missing: 1" test "$(test_rc "$d6"/member*.img)" = 1
check "--test: RAID6 with a third gone: 2" test "$(test_rc "$d6"/member0.img "$d6"/member2.img "$d6"/member3.img)" = 2
check "--test: -t too" test "$("$RAIDIMG" examine -t "${m[0]}" "${m[1]}" >/dev/null 2>&1; echo $?)" = 2
finish
