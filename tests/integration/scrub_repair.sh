#!/bin/bash
# raidimg scrub --repair, on writable copies: the fixtures' corruption is
# repaired to the healthy contents and a second scrub is clean; synthetic
# RAID6 corruption of P, Q, data (one unit, two adjacent units, two spots)
# is located and repaired exactly; two wrong data blocks in one unit name no
# culprit and get P and Q rewritten; RAID5 data corruption is reported (and
# repaired) as P, md's assumption.  Degraded arrays: checked with what is
# left, repair refused.
. "$(dirname "$0")/lib.sh"

jqt() { jq -e "$@" >/dev/null; }
W=$TMP/work
mkdir -p "$W"

# copy_case CASE DIR: writable copies of the case's images in DIR
copy_case() { mkdir -p "$2" && cp "$(fixture_dir "$1")"/member*.img "$2"/ && chmod 644 "$2"/*.img; }

# corrupt FILE OFFSET LEN: XOR the bytes with 0xa5 (as the oracle does)
corrupt() {
	local hex="" b x
	for b in $(od -An -tu1 -v -j "$2" -N "$3" "$1"); do printf -v x '\\x%02x' $((b ^ 0xa5)); hex+=$x; done
	printf "$hex" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# healthy sha256 of the array in DIR
array_sha() { "$RAIDIMG" cat "$1"/*.img 2>/dev/null | sha; }

# 1. the fixtures' own corruption
for c in r5-ls-4x6M-64K-badparity r6-ls-5x6M-64K-baddata; do
	copy_case "$c" "$W/$c"
	"$RAIDIMG" scrub --repair --json "$W/$c"/*.img >"$TMP/rep.jsonl" 2>"$TMP/err"; rc=$?
	check "$c: --repair exits 1 (found and repaired; got $rc: $(head -c 200 "$TMP/err"))" test $rc -eq 1
	off=$(mf "$c" '.corruption[0].image_byte_offset')
	img=$(mf "$c" '.corruption[0].image')
	check "$c: one write, exactly the corrupted bytes of $img" jqt -s "
		[.[] | select(.type == \"write\")] as \$w | (\$w | length) == 1 and
		\$w[0].image_offset == $off and \$w[0].length == 16 and (\$w[0].image | endswith(\"/$img\"))" "$TMP/rep.jsonl"
	check "$c: the mismatch says repaired" jqt -s '[.[] | select(.type == "mismatch" and .repaired)] | length == 1' "$TMP/rep.jsonl"
	"$RAIDIMG" scrub "$W/$c"/*.img >/dev/null 2>&1
	check "$c: scrub after repair: clean" test $? -eq 0
	check "$c: contents = the healthy sha256" test "$(array_sha "$W/$c")" = "$(mf "$c" .sha256_healthy)"
done

# 2. synthetic RAID6 corruption (left-symmetric, 6 members, 64 KiB chunks,
# data at 1 MiB): row r has P on 5 - r%6, Q after it, data after Q
c=r6-ls-6x6M-64K-md12
D=$W/r6
copy_case "$c" "$D"
at() { echo $((1048576 + $1 * 65536 + $2)); }     # image offset of row $1, chunk offset $2
corrupt "$D/member2.img" "$(at 3 100)" 7            # row 3: P on 2
corrupt "$D/member2.img" "$(at 4 5000)" 3           # row 4: Q on 2
corrupt "$D/member0.img" "$(at 7 4090)" 11          # row 7: data on 0, across a 4 KiB unit boundary
corrupt "$D/member3.img" "$(at 10 0)" 1             # row 10: data on 3, two spots
corrupt "$D/member3.img" "$(at 10 12288)" 2
"$RAIDIMG" scrub --json "$D"/*.img >"$TMP/s.jsonl" 2>/dev/null; rc=$?
check "synthetic RAID6: exit 1 (got $rc)" test $rc -eq 1
want='[
 {"stripe":3,"kind":"P","role":2,"chunk_offset":100,"length":7,"units":1},
 {"stripe":4,"kind":"Q","role":2,"chunk_offset":5000,"length":3,"units":1},
 {"stripe":7,"kind":"data","role":0,"chunk_offset":4090,"length":11,"units":2},
 {"stripe":10,"kind":"data","role":3,"chunk_offset":0,"length":1,"units":1},
 {"stripe":10,"kind":"data","role":3,"chunk_offset":12288,"length":2,"units":1}]'
got=$(jq -s -c '[.[] | select(.type == "mismatch") | {stripe, kind, role, chunk_offset, length, units}]' "$TMP/s.jsonl")
check "synthetic RAID6: P, Q, data (2 adjacent units merged), two spots: exactly located" \
	test "$got" = "$(jq -c . <<<"$want")"
check "synthetic RAID6: image offsets = data offset + row * chunk + chunk offset" jqt -s \
	'all(.[] | select(.type == "mismatch"); .image_offset == 1048576 + .stripe * 65536 + .chunk_offset)' "$TMP/s.jsonl"
check "synthetic RAID6: array offset of the data mismatch of row 7 (d = (0 - 4 - 2) mod 6 = 0)" jqt -s \
	'[.[] | select(.type == "mismatch" and .stripe == 7)][0].array_offset == (7 * 4 + 0) * 65536 + 4090' "$TMP/s.jsonl"
"$RAIDIMG" scrub --repair --json "$D"/*.img >"$TMP/r.jsonl" 2>/dev/null
check "synthetic RAID6: 5 writes, each at a mismatch's bytes" jqt -s '
	[.[] | select(.type == "mismatch")] as $m | [.[] | select(.type == "write")] as $w |
	($w | length) == 5 and all($m[]; . as $x | any($w[]; .role == $x.role and .image_offset == $x.image_offset and .length == $x.length))' "$TMP/r.jsonl"
"$RAIDIMG" scrub "$D"/*.img >/dev/null 2>&1
check "synthetic RAID6: clean after repair" test $? -eq 0
check "synthetic RAID6: healthy contents after repair" test "$(array_sha "$D")" = "$(mf "$c" .sha256)"

# two data blocks wrong in one unit: no single culprit, P and Q rewritten
D=$W/r6b
copy_case "$c" "$D"
corrupt "$D/member5.img" "$(at 20 2048)" 4          # row 20: P on 3, Q on 4, data on 5,0,1,2
corrupt "$D/member0.img" "$(at 20 2050)" 4          # (overlapping: equal masks would cancel in P)
"$RAIDIMG" scrub --repair --json "$D"/*.img >"$TMP/pq.jsonl" 2>/dev/null
check "two bad data blocks: one P+Q mismatch with no culprit" jqt -s \
	'[.[] | select(.type == "mismatch")] | length == 1 and .[0].kind == "P+Q" and .[0].role == null and .[0].chunk_offset == 2048 and .[0].length == 6 and .[0].p_role == 3 and .[0].q_role == 4' "$TMP/pq.jsonl"
check "two bad data blocks: P and Q rewritten (roles 3 and 4)" jqt -s \
	'[.[] | select(.type == "write") | .role] == [3, 4]' "$TMP/pq.jsonl"
"$RAIDIMG" scrub "$D"/*.img >/dev/null 2>&1
check "two bad data blocks: consistent after repair" test $? -eq 0

# 3. RAID5 data corruption: reported and repaired as P (md's assumption)
c=r5-ls-4x8M-64K-md12
D=$W/r5
copy_case "$c" "$D"
corrupt "$D/member0.img" "$(at 2 300)" 5            # row 2: P on 3 - 2%4 = 1, data on 0
"$RAIDIMG" scrub --repair --json "$D"/*.img >"$TMP/r5.jsonl" 2>/dev/null
check "RAID5 data corruption: reported as P wrong on the P member (role 1)" jqt -s \
	'[.[] | select(.type == "mismatch")] | length == 1 and .[0].kind == "P" and .[0].role == 1 and .[0].chunk_offset == 300 and .[0].length == 5' "$TMP/r5.jsonl"
"$RAIDIMG" scrub "$D"/*.img >/dev/null 2>&1
check "RAID5: consistent after repair" test $? -eq 0
check "RAID5: the wrong data stays (RAID5 cannot tell): contents differ from healthy" \
	test "$(array_sha "$D")" != "$(mf "$c" .sha256)"

# 4. degraded: checked with the redundancy left; repair refused
c=r6-ls-5x6M-64K-baddata          # row 9: P on role 0, the corrupted data on role 2
dir=$(fixture_dir "$c")
"$RAIDIMG" scrub --json "$dir"/member{1,2,3,4}.img >"$TMP/d.jsonl" 2>/dev/null; rc=$?
check "RAID6 without role 0: exit 1 (got $rc)" test $rc -eq 1
check "RAID6 without role 0: the corruption is found through Q, member unknown" jqt -s \
	'[.[] | select(.type == "mismatch")] | length == 1 and .[0].kind == "degraded" and .[0].member_offset == 590848 and .[0].length == 16 and .[0].q_differs' "$TMP/d.jsonl"
copy_case "$c" "$W/deg"
rm "$W/deg/member0.img"
"$RAIDIMG" scrub --repair "$W/deg"/*.img >/dev/null 2>"$TMP/err"; rc=$?
check "repair of a degraded array: exit 2 (got $rc)" test $rc -eq 2
check "repair of a degraded array: says why" grep -q "refusing to repair a degraded array.*cannot be pinned" "$TMP/err"
check "repair of a degraded array: nothing written" cmp -s "$W/deg/member2.img" "$dir/member2.img"
finish
