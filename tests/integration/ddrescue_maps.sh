#!/bin/bash
# Members imaged by GNU ddrescue from failing disks (--test-mode: the bad
# areas fail on purpose, the image holds zeros there, the mapfile says
# where): the mapfile beside each image makes those bytes untrusted, rebuilt
# from parity.  RAID6 with bad areas on two members: cat (zero-copy and
# copying) and mount give md's sha256, scrub is clean, provenance names the
# rebuilt ranges, `map --svg` draws them with the provenance's totals,
# rebuild writes the right bytes through them.  RAID5 with bad areas on two
# members in one stripe: cat stops at exactly the first lost byte with every
# byte before it right.  md's bad-block log likewise.  Bad mapfiles are
# refused naming the file and the problem; no image changes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"
command -v ddrescue >/dev/null || skip "ddrescue (gddrescue) is not installed: scripts/deps"
W=$TMP/dd
mkdir -p "$W"
cd "$W" || exit 2
MB=1048576
# image ROLE-IMAGE OUT TESTMAP-LINES...: ddrescue copy of an image whose
# blocks not '+' in the test map fail
image() {
	local src=$1 out=$2; shift 2
	printf '%s\n' "0 +" "$@" >"$out.tm"
	ddrescue -q --test-mode="$out.tm" "$src" "$out.img" "$out.map" 2>/dev/null
}

# ---- RAID6: bad areas on two members (one stripe hit on both) ----
c=r6-ls-6x6M-64K-md12
d=$(fixture_dir "$c")
want=$(mf "$c" .expected_sha256)
image "$d/member1.img" r6m1 "0 0x140000 +" "0x140000 0x1200 -" "0x141200 0x1EE00 +" "0x160000 0x30000 -" "0x190000 0x470000 +"
image "$d/member4.img" r6m4 "0 0x141000 +" "0x141000 0x2000 -" "0x143000 0x4BD000 +"
r6=("$d/member0.img" r6m1.img "$d/member2.img" "$d/member3.img" r6m4.img "$d/member5.img")
before=$(shas r6m1.img r6m4.img r6m1.map r6m4.map)
check "ddrescue left zeros where it failed" cmp -s <(head -c 4608 <(tail -c +$((0x140000 + 1)) r6m1.img)) <(head -c 4608 /dev/zero)
got=$($T "$RAIDIMG" cat --provenance r6.prov "${r6[@]}" 2>"$TMP/err" | sha)
check "RAID6, bad areas on two members: cat = md's sha256 (the zeros rebuilt)" test "$got" = "$want"
check "the mapfiles taken are said" grep -q "r6m1.img: ddrescue mapfile r6m1.map: 2 range(s), 196.5 KiB not rescued" "$TMP/err"
got=$($T "$RAIDIMG" cat --stats --no-zero-copy "${r6[@]}" 2>/dev/null | sha)
check "the same through the copying pipeline" test "$got" = "$want"
$T "$RAIDIMG" cat --stats "${r6[@]}" 2>"$TMP/err" >/dev/null
check "zero-copy cat was used" test "$(stats_method "$TMP/err")" = zero-copy
got=$($T "$RAIDIMG" cat --no-maps "${r6[@]}" 2>/dev/null | sha)
check "--no-maps: the zeros are read as data (another sha256)" test "$got" != "$want"
sum_src() { grep -v '"map"' "$1" | jq -s "[.[] | select(.source==\"$2\") | .length] | add // 0"; }
# every untrusted member byte inside the data area is a data or parity byte:
# the provenance counts the data bytes rebuilt
untr=$(sum_src r6.prov untrusted)
check "provenance: untrusted ranges rebuilt ($untr bytes), of roles 1 and 4" \
	test "$untr" -gt 0 -a "$(grep -v '"map"' r6.prov | jq -s -c '[.[] | select(.source=="untrusted") | .role] | unique')" = "[1,4]"
check "provenance: from the four (both lost) or five other roles" test "$(grep -v '"map"' r6.prov | jq -s -c '[.[] | select(.source=="untrusted") | .from_roles | length] | unique')" = "[4,5]"
check "provenance header: role 1's mapfile" test "$(head -1 r6.prov | jq -r '.members[1].untrusted_from[0].path')" = "$W/r6m1.map"
$T "$RAIDIMG" map --svg r6.svg "${r6[@]}" >map.txt 2>/dev/null; rc=$?
check "map: exit 0 (nothing lost)" test $rc -eq 0
python3 - r6.svg "$(sum_src r6.prov member)" "$(sum_src r6.prov rebuilt)" "$untr" "$(sum_src r6.prov unreadable)" <<'PY' >svg.txt 2>&1
import sys, xml.etree.ElementTree as E
ns = '{http://www.w3.org/2000/svg}'
root = E.parse(sys.argv[1]).getroot()
g = [x for x in root.iter(ns + 'g') if x.get('id') == 'totals'][0]
got = [int(g.get('data-%s-bytes' % c)) for c in ('direct', 'rebuilt', 'untrusted', 'lost')]
want = [int(x) for x in sys.argv[2:6]]
cols = [x for x in root.iter(ns + 'g') if x.get('class') == 'member']
orange = [x.get('data-role') for x in cols if any(r.get('class') == 'untrusted' for r in x.iter(ns + 'rect'))]
print('totals', got, 'provenance', want, 'columns', len(cols), 'untrusted in roles', orange)
sys.exit(0 if got == want and len(cols) == 6 and orange == ['1', '4'] else 1)
PY
check "map --svg: parses, 6 member columns, untrusted regions in roles 1 and 4, totals = the provenance's ($(cat svg.txt))" test $? -eq 0
$T "$RAIDIMG" cat --provenance r6b.svg "${r6[@]}" >/dev/null 2>&1
check "cat --provenance FILE.svg draws the same picture" cmp -s r6.svg r6b.svg
$T "$RAIDIMG" scrub --json "${r6[@]}" >scrub.json 2>/dev/null; rc=$?
check "scrub: no mismatch (untrusted chunks are missing, not mismatches), the stripe both lose unchecked" \
	test $rc -ne 1 -a "$(jq -s -c '[.[] | select(.type=="summary")][0] | [.mismatches, .stripes_unchecked]' scrub.json)" = "[0,1]"
# rebuild: bad areas of two members in different stripes (the scrub engine
# loses a member's whole chunk where it meets an untrusted range)
image "$d/member4.img" r6m4b "0 0x200000 +" "0x200000 0x3000 -" "0x203000 0x3FD000 +"
$T "$RAIDIMG" rebuild --role 0 -o new0.img "${r6[@]:1:3}" r6m4b.img "$d/member5.img" >/dev/null 2>"$TMP/err"; rc=$?
check "rebuild of role 0 through untrusted areas of roles 1 and 4: exit 0 ($(tail -1 "$TMP/err"))" test $rc -eq 0
check "... the member's data" cmp -s <(tail -c +$((MB + 1)) new0.img | head -c $((4 * MB))) <(tail -c +$((MB + 1)) "$d/member0.img" | head -c $((4 * MB)))
if fuse_usable; then
	mnt=$(mountpoint_dir r6)
	if $T "$RAIDIMG" mount "${r6[@]}" "$mnt" >"$TMP/img" 2>"$TMP/err"; then
		got=$($T sha256sum "$(cat "$TMP/img")" | cut -d' ' -f1)
		check "mount: md's sha256" test "$got" = "$want"
		check "mount status: role 1's untrusted bytes" test "$(status_field "$mnt" '.members[1].untrusted_bytes')" -gt 0
		check "mount status: untrusted bytes rebuilt" test "$(status_field "$mnt" '.io.untrusted_bytes_rebuilt')" -gt 0
		unmount_now "$mnt"
	else
		fail "mount: $(cat "$TMP/err")"
	fi
fi

# ---- RAID5: bad areas on two members in the same stripe ----
c=r5-ls-4x8M-64K-md12
d=$(fixture_dir "$c")
want=$(mf "$c" .expected_sha256)
# stripe 5 (member offsets 5*64K.. of the data area at 1 MiB): left-symmetric
# with 4 members puts P on role 2 and role 1's chunk at data index 2, i.e.
# array bytes 17*64K..; role 1 fails from chunk byte 8704, role 2 (its
# parity) from 9216: the first byte neither can give is array byte
# 17*64K + 9216
base=$((MB + 5 * 65536))
image "$d/member1.img" r5m1 "0 $((base + 8704)) +" "$((base + 8704)) 4096 -" "$((base + 12800)) $((8 * MB - base - 12800)) +"
image "$d/member2.img" r5m2 "0 $((base + 9216)) +" "$((base + 9216)) 8192 -" "$((base + 17408)) $((8 * MB - base - 17408)) +"
r5=("$d/member0.img" r5m1.img r5m2.img "$d/member3.img")
first=$((17 * 65536 + 9216))
"$RAIDIMG" cat "$d"/member*.img >good.img 2>/dev/null
for how in zero-copy no-zero-copy; do
	opt=(); [ $how = no-zero-copy ] && opt=(--no-zero-copy)
	$T "$RAIDIMG" cat "${opt[@]}" -o r5.out "${r5[@]}" 2>"$TMP/err"; rc=$?
	check "RAID5, two members lost in one stripe ($how): exit 2 naming array offset $first" \
		grep -q "offset $first" "$TMP/err"
	check "... stops at exactly the first lost byte ($(stat -c %s r5.out) bytes written)" test "$(stat -c %s r5.out)" -eq $first -a $rc -eq 2
	check "... with every byte before it right" cmp -s r5.out <(head -c $first good.img)
done
$T "$RAIDIMG" map --json "${r5[@]}" >r5map.json 2>/dev/null; rc=$?
check "map: exit 1, the lost bytes counted ($(jq -c '[.direct_bytes,.untrusted_bytes,.lost_bytes]' r5map.json))" \
	test $rc -eq 1 -a "$(jq .lost_bytes r5map.json)" -eq $((12800 - 9216))

# ---- md's bad-block log (md 1.2: 8 sectors at superblock + 16) ----
cp "$d/member2.img" bb2.img && chmod u+w bb2.img
s0=$(((MB + 3 * 65536) / 512))
put_le bb2.img $((24 * 512)) 8 $(((s0 << 10) | 16))
put_le bb2.img $((24 * 512 + 8)) 8 -1
sb_set 8 4 8 bb2.img                                     # feature_map: bad blocks
dd if=/dev/zero of=bb2.img bs=512 seek=$s0 count=16 conv=notrunc status=none
got=$($T "$RAIDIMG" cat --provenance bb.prov "$d/member0.img" "$d/member1.img" bb2.img "$d/member3.img" 2>"$TMP/err" | sha)
check "md bad-block log entry over zeroed sectors: rebuilt, md's sha256" test "$got" = "$want"
check "... said" grep -q "bb2.img: role 2: 1 range(s) from md's bad-block log are untrusted" "$TMP/err"

# ---- bad mapfiles ----
cp "$d/member1.img" x1.img
printf '0 +\n0 0x100000 +\nthis is no mapfile line\n' >x1.map
expect_fail "a mapfile with garbage lines: file and line named" "x1.map \(ddrescue mapfile of .*x1.img\): mapfile line 3: a block needs 'pos size status', found 5 fields" \
	"$RAIDIMG" cat "$d/member0.img" x1.img "$d/member2.img" "$d/member3.img"
check "... and the refusal says how to ignore it" grep -q -- "--no-maps" "$TMP/err"
printf '0 +\n0 0x1000000 +\n' >x1.map
expect_fail "a mapfile of a larger image: refused" "x1.map .*the image has 8388608 bytes but the mapfile says bytes up to 0x1000000 were rescued" \
	"$RAIDIMG" cat "$d/member0.img" x1.img "$d/member2.img" "$d/member3.img"
printf '0 +\n0 0x400000 +\n' >x1.map
expect_fail "a mapfile of a smaller image: refused" "x1.map .*the image has 8388608 bytes but the mapfile covers only 4194304" \
	"$RAIDIMG" cat "$d/member0.img" x1.img "$d/member2.img" "$d/member3.img"
got=$($T "$RAIDIMG" cat --no-maps "$d/member0.img" x1.img "$d/member2.img" "$d/member3.img" 2>/dev/null | sha)
check "--no-maps reads it without" test "$got" = "$want"
rm x1.map
cp r5m1.map other.name
got=$($T "$RAIDIMG" cat --map r5m1.img=other.name --no-maps "$d/member0.img" r5m1.img "$d/member2.img" "$d/member3.img" 2>"$TMP/err" | sha)
check "--map IMAGE=MAPFILE with --no-maps: that map only, md's sha256" test "$got" = "$want"
expect_fail "--map naming no image given" "--map nope.img=other.name: nope.img is not one of the images given" \
	"$RAIDIMG" cat --map nope.img=other.name "$d/member0.img" r5m1.img "$d/member2.img" "$d/member3.img"
check "no image or mapfile was changed" test "$(shas r6m1.img r6m4.img r6m1.map r6m4.map)" = "$before"
finish
