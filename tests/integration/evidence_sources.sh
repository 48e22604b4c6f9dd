#!/bin/bash
# Members as evidence arrives: E01 files made by ewfacquire (several
# segments, uncompressed and compressed), a raw image split into numbered
# pieces by split(1), mixed with a raw member.  cat (zero-copy and copying)
# and mount give md's sha256, scrub is clean, examine shows the EWF case
# data and --hash checks the stored hashes, a record names every segment,
# piece and hash and replays.  Acquisition errors an imager recorded are
# rebuilt from parity; a corrupted EWF chunk is a read error rebuilt with a
# warning.  Bad input (a truncated or missing segment, a missing piece, a
# piece given as a member too) is refused naming the file; no image changes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"
command -v ewfacquire >/dev/null || skip "ewfacquire (ewf-tools) is not installed: scripts/deps"
EWF_MAKE=$BUILDDIR/tests/helpers/ewf_make

c=r5-ls-4x8M-64K-md12
d=$(fixture_dir "$c")
want=$(mf "$c" .expected_sha256)
W=$TMP/ev
mkdir -p "$W"
cd "$W" || exit 2
acq() { # acq TARGET COMPRESSION SEGMENT-SIZE IMAGE
	ewfacquire -q -u -t "$1" -f encase6 -S "$3" -c "$2" -C "case 42" -E "evidence 7" -e "Jane Examiner" \
		-D "md member" -N "notes" -d sha1 "$4" >"$1.log" 2>&1
}
acq m0 none 1MiB "$d/member0.img"
acq m1 fast 2MiB "$d/member1.img"
split --numeric-suffixes=1 -a 3 -b 3000000 "$d/member2.img" m2.
cp "$d/member3.img" m3.img
check "ewfacquire wrote 9 segments for member 0" test "$(ls m0.E* | wc -l)" -eq 9
check "split wrote 3 pieces for member 2" test "$(ls m2.0* | wc -l)" -eq 3
imgs=(m1.E01 m3.img m0.E01 m2.001)
before=$(shas m0.E* m1.E* m2.0* m3.img)

got=$($T "$RAIDIMG" cat "${imgs[@]}" 2>"$TMP/err" | sha)
check "E01 (9 segments, uncompressed), E01 (compressed), split raw and raw: cat = md's sha256" test "$got" = "$want"
got=$($T "$RAIDIMG" cat --no-zero-copy "${imgs[@]}" 2>/dev/null | sha)
check "the same through the copying pipeline" test "$got" = "$want"
$T "$RAIDIMG" examine --json "${imgs[@]}" >ex.json 2>/dev/null
check "examine: kinds by role" test "$(jq -c '[.array.members[].kind]' ex.json)" = '["ewf","ewf","split","raw"]'
check "examine: the EWF case data" test "$(jq -r '.members[] | select(.path=="m0.E01") | .ewf | "\(.case_number)|\(.evidence_number)|\(.examiner_name)|\(.segments)"' ex.json)" = "case 42|evidence 7|Jane Examiner|9"
check "examine: the stored MD5 is the member's" test "$(jq -r '.members[] | select(.path=="m0.E01") | .ewf.stored_md5' ex.json)" = "$(md5sum <"$d/member0.img" | cut -d' ' -f1)"
check "examine: the split image's pieces" test "$(jq -r '.members[] | select(.path=="m2.001") | .files | length' ex.json)" -eq 3
$T "$RAIDIMG" examine --hash "${imgs[@]}" >exh.txt 2>&1; rc=$?
check "examine --hash: exit 0" test $rc -eq 0
check "examine --hash: both E01s' stored hashes verified" test "$(grep -c 'stored hashes  : verified' exh.txt)" -eq 2
check "examine --hash: segment and piece lines" grep -q "role 0 segment  $W/m0.E09" exh.txt
$T "$RAIDIMG" scrub "${imgs[@]}" >scrub.txt 2>&1; rc=$?
check "scrub over E01 and split members: clean (exit 0)" test $rc -eq 0

# records: every segment and piece with its hash; replay checks them
$T "$RAIDIMG" cat --record rec.json -o out.img "${imgs[@]}" 2>/dev/null
check "record: member 0's 8 other segments" test "$(jq '[.members[] | select(.role==0) | .files[] | select(.what=="segment")] | length' rec.json)" -eq 8
check "record: member 2's pieces with their sha256" test "$(jq -r '.members[] | select(.role==2) | .files[] | select(.path|endswith("m2.002")) | .sha256' rec.json)" = "$(sha m2.002)"
check "record: kinds" test "$(jq -c '[.members[].kind]' rec.json)" = '["ewf","ewf","split","raw"]'
$T "$RAIDIMG" replay rec.json >/dev/null 2>"$TMP/err"; rc=$?
check "replay: exit 0 ($(tail -1 "$TMP/err"))" test $rc -eq 0
chmod u+w m0.E05; printf 'x' | dd of=m0.E05 bs=1 seek=100000 conv=notrunc status=none
expect_fail "replay: a changed segment is refused, named" "m0.E05: sha256 is now" "$RAIDIMG" replay rec.json
acq m0 none 1MiB "$d/member0.img"     # the segment back as it was (same bytes but the date)
before=$(shas m0.E* m1.E* m2.0* m3.img)

if fuse_usable; then
	mnt=$(mountpoint_dir ev)
	if $T "$RAIDIMG" mount "${imgs[@]}" "$mnt" >"$TMP/img" 2>"$TMP/err"; then
		got=$($T sha256sum "$(cat "$TMP/img")" | cut -d' ' -f1)
		check "mount over E01 and split members: md's sha256" test "$got" = "$want"
		check "mount status: kinds" test "$(status_field "$mnt" '[.members[].kind] | join(",")')" = "ewf,ewf,split,raw"
		unmount_now "$mnt"
	else
		fail "mount: $(cat "$TMP/err")"
	fi
fi

# acquisition errors the imager recorded: untrusted, rebuilt from parity
"$EWF_MAKE" "$d/member1.img" acq 1048576 1 4096:8 5000:100 >/dev/null
acqimgs=(m0.E01 acq.E01 m2.001 m3.img)
got=$($T "$RAIDIMG" cat --provenance acq.prov "${acqimgs[@]}" 2>"$TMP/err" | sha)
check "EWF acquisition errors (zeros stored): rebuilt from parity, md's sha256" test "$got" = "$want"
check "provenance: 'untrusted' ranges of role 1, 4096+51200 bytes" test "$(grep -v '"map"' acq.prov | jq -s '[.[] | select(.source=="untrusted" and .role==1) | .length] | add')" -eq $((4096 + 51200))
check "provenance header: role 1's untrusted ranges come from the E01" test "$(head -1 acq.prov | jq -r '.members[1].untrusted_from[0].kind')" = ewf-acquiry-errors

# a corrupted chunk of an uncompressed E01: a read error, rebuilt, said
mkdir cor && cp m0.E0* cor/
off=$(python3 - "$d/member0.img" <<'PY'
import glob, sys
raw = open(sys.argv[1], 'rb').read()
pat = raw[2097152 + 40000:2097152 + 40064]
for f in sorted(glob.glob('cor/m0.E0*')):
    i = open(f, 'rb').read().find(pat)
    if i >= 0:
        print(f, i)
        break
PY
)
set -- $off
printf '\xff\xfe\xfd' | dd of="$1" bs=1 seek=$(($2 + 10)) conv=notrunc status=none
got=$($T "$RAIDIMG" cat --no-zero-copy cor/m0.E01 m1.E01 m2.001 m3.img 2>"$TMP/err" | sha)
check "a corrupted EWF chunk: rebuilt from parity, md's sha256" test "$got" = "$want"
check "... with a warning naming the segment set and the bytes" grep -Eq "cor/m0.E01: media bytes [0-9]+-[0-9]+: chunk checksum error" "$TMP/err"
$T "$RAIDIMG" examine --hash cor/m0.E01 m1.E01 m2.001 m3.img >/dev/null 2>"$TMP/err"; rc=$?
check "examine --hash: the damaged E01's stored hashes cannot be matched (exit 1)" test $rc -eq 1
check "... said" grep -q "cor/m0.E01: stored hash check failed" "$TMP/err"

# bad input
mkdir tr && cp m0.E0* tr/ && truncate -s 500000 tr/m0.E05
expect_fail "a truncated segment is named" "tr/m0.E05: section .* past the end of the file \(500000 bytes\): truncated segment" \
	"$RAIDIMG" cat tr/m0.E01 m1.E01 m2.001 m3.img
mkdir mi && cp m0.E0* mi/ && rm mi/m0.E04
expect_fail "a missing segment is named" "segment mi/m0.E04 is missing" "$RAIDIMG" cat mi/m0.E01 m1.E01 m2.001 m3.img
mkdir la && cp m0.E0* la/ && rm la/m0.E09
expect_fail "a missing last segment is named" "la/m0.E08 ends with a 'next' section: the segment after it is missing \(la/m0.E09\)" \
	"$RAIDIMG" cat la/m0.E01 m1.E01 m2.001 m3.img
expect_fail "a segment other than the first is refused" "not a first EWF segment" "$RAIDIMG" cat m0.E02 m1.E01 m2.001 m3.img
mkdir sp && cp m2.0* sp/ && rm sp/m2.002
expect_fail "a missing split piece is named" "sp/m2.001 .*m2.002 is missing: m2.001 and m2.003 exist" \
	"$RAIDIMG" cat m0.E01 m1.E01 sp/m2.001 m3.img
mkdir sz && cp m2.0* sz/ && truncate -s 2999999 sz/m2.002
expect_fail "a split piece of another size is named" "m2.002 has 2999999 bytes but m2.001 has 3000000" \
	"$RAIDIMG" cat m0.E01 m1.E01 sz/m2.001 m3.img
expect_fail "a piece given as a member too is refused" "m2.002 is a piece of the split image m2.001, given too" \
	"$RAIDIMG" cat m0.E01 m1.E01 m2.001 m2.002 m3.img
check "no image was changed" test "$(shas m0.E* m1.E* m2.0* m3.img)" = "$before"
finish
