#!/bin/bash
# Member read errors (RAIDIMG_FAULTS, source_fault.c) during scrub and
# rebuild: a failed request is retried chunk by chunk, so only the failing
# chunk is lost; RAID6 checks that stripe with the redundancy left, RAID5
# cannot check it; either way the read error is reported (exit 2).  A
# rebuild survives read errors that redundancy covers and fails cleanly
# (no partial image) when it does not.
. "$(dirname "$0")/lib.sh"

jqt() { jq -e "$@" >/dev/null; }
row() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1"):eio@$((1048576 + $2 * 65536))+4096"; }

c=r6-ls-6x6M-64K-md12
dir=$(fixture_dir "$c")
RAIDIMG_FAULTS=$(row "$dir/member1.img" 10) "$RAIDIMG_FAULTY" scrub --json "$dir"/*.img >"$TMP/o.jsonl" 2>"$TMP/err"; rc=$?
check "RAID6, EIO in one chunk: exit 2 (got $rc)" test $rc -eq 2
check "RAID6, EIO in one chunk: 1 read error, every stripe checked, no mismatch" \
	jqt 'select(.type == "summary") | .read_errors == 1 and .stripes_unchecked == 0 and .mismatches == 0 and .result == "read-errors"' "$TMP/o.jsonl"
check "RAID6, EIO: says so" grep -q "1 member read errors" "$TMP/err"

# the corrupted RAID6 with its P chunk of the bad row unreadable: found through Q
c=r6-ls-5x6M-64K-baddata           # row 9: P on role 0, bad data on role 2
dir=$(fixture_dir "$c")
RAIDIMG_FAULTS=$(row "$dir/member0.img" 9) "$RAIDIMG_FAULTY" scrub --json "$dir"/*.img >"$TMP/o.jsonl" 2>/dev/null; rc=$?
check "RAID6 baddata, P unreadable: exit 1 (got $rc)" test $rc -eq 1
check "RAID6 baddata, P unreadable: degraded mismatch at the bad bytes" jqt -s \
	'[.[] | select(.type == "mismatch")] | length == 1 and .[0].kind == "degraded" and .[0].stripe == 9 and .[0].chunk_offset == 1024 and .[0].length == 16' "$TMP/o.jsonl"
mkdir -p "$TMP/rw" && cp "$dir"/*.img "$TMP/rw/" && chmod 644 "$TMP/rw"/*.img
RAIDIMG_FAULTS=$(row "$TMP/rw/member0.img" 9) "$RAIDIMG_FAULTY" scrub --repair --json "$TMP/rw"/*.img >"$TMP/o.jsonl" 2>/dev/null; rc=$?
check "repair with P unreadable there: reported, not repaired, nothing written (exit $rc)" jqt -s \
	'[.[] | select(.type == "mismatch")][0].repaired == false and ([.[] | select(.type == "write")] | length) == 0' "$TMP/o.jsonl"
check "...the images are unchanged" cmp -s "$TMP/rw/member2.img" "$dir/member2.img"

c=r5-ls-4x8M-64K-md12
dir=$(fixture_dir "$c")
RAIDIMG_FAULTS=$(row "$dir/member2.img" 7) "$RAIDIMG_FAULTY" scrub --json "$dir"/*.img >"$TMP/o.jsonl" 2>"$TMP/err"; rc=$?
check "RAID5, EIO in one chunk: exit 2 (got $rc)" test $rc -eq 2
check "RAID5, EIO in one chunk: that stripe alone is unchecked" \
	jqt 'select(.type == "summary") | .read_errors == 1 and .stripes_unchecked == 1 and .next_stripe == .stripes_total' "$TMP/o.jsonl"

# rebuild: RAID6 missing 1 and 4, EIO on another member: not rebuildable there
c=r6-ls-6x6M-64K-missing1-4
dir=$(fixture_dir "$c")
RAIDIMG_FAULTS=$(row "$dir/member3.img" 12) "$RAIDIMG_FAULTY" rebuild --role 1 -o "$TMP/new1.img" "$dir"/*.img \
	>/dev/null 2>"$TMP/err"; rc=$?
check "rebuild with 3 roles lost in a stripe: exit 2 (got $rc)" test $rc -eq 2
check "...names the stripe and the roles" grep -q "stripe 12: role 1 cannot be rebuilt: roles 3, 4 cannot be read there" "$TMP/err"
check "...and leaves no partial image" test ! -e "$TMP/new1.img"
# RAID6 missing 1 only (4 rebuilt first), EIO on another member: still rebuildable
"$RAIDIMG" rebuild --role 4 -o "$TMP/new4.img" "$dir"/*.img >/dev/null 2>&1
RAIDIMG_FAULTS=$(row "$dir/member3.img" 12) "$RAIDIMG_FAULTY" rebuild --role 1 -o "$TMP/new1.img" "$dir"/*.img "$TMP/new4.img" \
	>/dev/null 2>"$TMP/err"; rc=$?
check "rebuild with 2 roles lost in a stripe: exit 0 (got $rc: $(grep -v RAIDIMG_FAULTS "$TMP/err" | head -c 200))" test $rc -eq 0
got=$("$RAIDIMG" cat "$dir"/*.img "$TMP/new4.img" "$TMP/new1.img" 2>/dev/null | sha)
check "...and the array is complete and right" test "$got" = "$(mf "$c" .sha256)"
finish
