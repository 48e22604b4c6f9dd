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

# What mdadm printed, one pass per file: M[MEMBER|LABEL]=VALUE ("member0|Creation Time")
declare -A M O
load_mdadm() {
	local k v
	M=()
	while IFS=$'\t' read -r k v; do M[$k]=$v; done < <(awk '
		/^### / { m = $2; next }
		{ s = $0; sub(/^ */, "", s); i = index(s, " : "); if (m != "" && i) print m "|" substr(s, 1, i - 1) "\t" substr(s, i + 3) }' "$1")
}
# What raidimg examine printed: O[PATH|label]=VALUE ("/.../member0.img|creation time")
load_ours() {
	local k v
	O=()
	while IFS=$'\t' read -r k v; do O[$k]=$v; done < <(awk '
		/^[^ ].*:$/ { p = substr($0, 1, length($0) - 1); next }
		/^[^ ]/ { p = "" }
		{ s = $0; sub(/^ */, "", s); i = index(s, ": "); if (p != "" && i) { l = substr(s, 1, i - 1); sub(/ +$/, "", l); print p "|" l "\t" substr(s, i + 2) } }' "$1")
}
iso() { date -u -d "$1" +%Y-%m-%dT%H:%M:%SZ; }

for c in $(fixture_cases); do
	d=$(fixture_dir "$c")
	imgs=("$d"/member*.img)
	"$RAIDIMG" examine "${imgs[@]}" >"$TMP/text" 2>/dev/null
	"$RAIDIMG" examine --json "${imgs[@]}" >"$TMP/json" 2>/dev/null
	load_mdadm "$FIXTURES/$c/examine.txt"
	load_ours "$TMP/text"
	meta=$(mf "$c" .metadata)
	for i in "${!imgs[@]}"; do
		img=${imgs[$i]}
		m=$(basename "$img" .img)
		# the member's JSON fields, one line
		IFS=$'\t' read -r jc ju jcs jok jbm jdu jas jbb < <(jq -r ".members[$i] |
			[.created, .updated, .checksum, .checksum_ok, (.bitmap | tojson), (.device_uuid | tojson), .array_state,
			 (.bad_block_log | tojson)] | @tsv" "$TMP/json")
		ct=${M[$m|Creation Time]:-}
		ut=${M[$m|Update Time]:-}
		cs=${M[$m|Checksum]:-}
		check "$c $m: creation time = mdadm's ($ct)" test -n "$ct" -a "${O[$img|creation time]:-}" = "$ct UTC"
		check "$c $m: update time = mdadm's ($ut)" test -n "$ut" -a "${O[$img|update time]:-}" = "$ut UTC"
		check "$c $m: checksum = mdadm's ($cs)" test -n "$cs" -a "${O[$img|checksum]:-}" = "$cs"
		check "$c $m: JSON created/updated/checksum" \
			test "$jc $ju $jcs $jok" = "$(iso "$ct") $(iso "$ut") ${cs%% *} true"
		check "$c $m: no bitmap (feature map ${M[$m|Feature Map]:-})" \
			test "${O[$img|bitmap]:-}/$jbm" = "none/null"
		if [ "$meta" = 0.90 ]; then
			# no device uuid, no bad block log, no "Array State" line: the disk table
			states=$(awk -v m="### $m " 'index($0, m) == 1 { in_m = 1; next } /^### / { in_m = 0 }
				in_m && $1 ~ /^[0-9]+$/ && NF >= 7 { s[$5] = ($6 == "active" ? "A" : ".") }
				END { for (r = 0; r in s; r++) printf "%s", s[r] }' "$FIXTURES/$c/examine.txt")
			check "$c $m: array state $states, from mdadm's disk table" \
				test -n "$states" -a "${O[$img|array state]:-}" = "$states ('A' == active, '.' == missing, 'R' == replacing)"
			check "$c $m: 0.90: no device uuid, no bad block log" test "$jdu $jbb $jas" = "null null $states"
			continue
		fi
		du=${M[$m|Device UUID]:-}
		as=${M[$m|Array State]:-}
		bb=${M[$m|Bad Block Log]:-}
		check "$c $m: device uuid = mdadm's" test -n "$du" -a "${O[$img|device uuid]:-}" = "$du"
		check "$c $m: array state = mdadm's (${as%% *})" test -n "$as" -a "${O[$img|array state]:-}" = "$as"
		check "$c $m: bad block log = mdadm's ($bb)" test -n "$bb" -a "${O[$img|bad block log]:-}" = "$bb"
		entries=${bb%% entries*}
		off=${bb#*offset }
		check "$c $m: JSON device uuid, array state, bad block log" \
			test "$jdu $jas $jbb" = "\"$du\" ${as%% *} {\"entries\":$entries,\"offset_sectors\":${off%% *},\"bad_blocks\":false}"
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
load_ours "$TMP/text"
check "bitmap: said as mdadm does (Internal Bitmap : 8 sectors from superblock)" \
	test "${O[$e|bitmap]:-}" = "internal, 8 sectors from the superblock"
check "bad blocks present: said" \
	test "${O[$e|bad block log]:-}" = "512 entries available at offset 16 sectors - bad blocks present"
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
