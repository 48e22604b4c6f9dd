#!/bin/bash
# Damaged and mixed IMSM / DDF containers (copies of tests/fixtures/ext
# members, edited; tests/helpers/metafix makes the checksums right again when
# the edit aims past them): each refused with a message naming the image and
# the field, or read right where a copy of the metadata survives; stale
# members by their generation; images that cannot be placed; two containers
# mixed.  The members given are never changed.
. "$(dirname "$0")/lib.sh"
EXT=$SRCDIR/tests/fixtures/ext
FIX=$BUILDDIR/tests/helpers/metafix
emf() { json_get "$EXT/$1/manifest.json" "$2"; }
W=$TMP/w
mkdir -p "$W"
# poke FILE OFFSET HEXBYTES: write bytes ("0a0b...") at OFFSET
poke() { printf "$(echo "$3" | sed 's/../\\x&/g')" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }
cat_sha() { "$RAIDIMG" cat "$@" 2>"$TMP/err" | sha; }
snap() { snapshot=$(shas "$W/$1"/*.img); }
unchanged() { check "$1: members unchanged" test "$(shas "$W/$1"/*.img)" = "$snapshot"; }
fresh() { # fresh CASE: writable copies of a case's members in $W/CASE
	rm -rf "${W:?}/$1"
	mkdir -p "$W/$1"
	cp "$(fixture_dir "$1" "$EXT")"/member*.img "$W/$1/"
	chmod u+w "$W/$1"/*.img
}

# ---- IMSM (12 MiB members: the MPB anchor 1 KiB before the end, its
# second sector before it; the volume's map at MPB byte 520)
i=imsm-r5-la-4x12M-64K
isz=$(emf $i .member_image_bytes)
anchor=$((isz - 1024)) cont=$((isz - 1536))
fresh $i
poke "$W/$i/member1.img" $((anchor + 0xd8 + 48 + 2)) 58        # a serial byte: the checksum no longer fits
snap $i
expect_fail "IMSM: wrong checksum" "member1.img: IMSM: MPB checksum 0x[0-9a-f]+, computed 0x[0-9a-f]+: damaged metadata" \
	"$RAIDIMG" cat "$W/$i"/*.img
unchanged $i
"$RAIDIMG" examine "$W/$i"/*.img >"$TMP/ex" 2>&1
check "IMSM: examine names the damaged member" grep -q "error: .*IMSM: MPB checksum" "$TMP/ex"
fresh $i
poke "$W/$i/member2.img" $((cont + 8)) 204e0000                 # pba_of_lba0 20000 sectors
"$FIX" imsm "$W/$i/member2.img"
snap $i
expect_fail "IMSM: volume map larger than the disks" \
	"member2.img: IMSM: volume 0 \(Volume0\) slot 0: pba_of_lba0 20000 \+ 12288 data sectors ends past disk [0-9]'s total_blocks 24576" \
	"$RAIDIMG" scrub "$W/$i"/*.img
unchanged $i
fresh $i
poke "$W/$i/member0.img" $((anchor + 0x38)) 09                   # num_disks 9: the volume read from the disk table
"$FIX" imsm "$W/$i/member0.img"
expect_fail "IMSM: num_disks past the MPB" "member0.img: IMSM: .*(mpb_size|num_raid_devs|num_disks)" "$RAIDIMG" cat "$W/$i"/*.img
# a volume in the middle of a migration (a rebuild, then a reshape: a
# second map after the first, as mdadm writes it): refused, saying which
fresh $i
for k in 0 1 2 3; do
	f=$W/$i/member$k.img
	dd if="$f" of="$f" bs=1 skip=$((cont + 8)) seek=$((cont + 72)) count=64 conv=notrunc status=none
	put_le "$f" $((anchor + 0x24)) 4 648                          # mpb_size: the second map
	poke "$f" $((anchor + 408 + 88)) 0101                           # migr_state 1, migr_type 1 (rebuild)
	"$FIX" imsm "$f"
done
expect_fail "IMSM: a rebuild migration in progress" \
	"member[0-3].img: imsm volume 'Volume0' cannot be read: migration in progress: rebuild" "$RAIDIMG" cat "$W/$i"/*.img
for k in 0 1 2 3; do poke "$W/$i/member$k.img" $((anchor + 408 + 89)) 03; "$FIX" imsm "$W/$i/member$k.img"; done
expect_fail "IMSM: a general migration (reshape) in progress" \
	"cannot be read: migration in progress: general migration \(reshape\) from RAID5, 4 members, 64 KiB chunk to RAID5" \
	"$RAIDIMG" scrub "$W/$i"/*.img
"$RAIDIMG" examine "$W/$i"/*.img >"$TMP/ex" 2>&1
check "IMSM: examine says the migration" grep -q "not readable   : migration in progress: general migration" "$TMP/ex"
# a stale member: its metadata two generations behind the others
fresh $i
gen=$(od -An -t u4 -j $((anchor + 0x2c)) -N4 "$W/$i/member3.img" | tr -d ' ')
put_le "$W/$i/member3.img" $((anchor + 0x2c)) 4 $((gen - 2))
"$FIX" imsm "$W/$i/member3.img"
got=$(cat_sha "$W/$i"/*.img)
check "IMSM: stale member left out, the rest read ($(head -c 200 "$TMP/err"))" test "$got" = "$(emf $i .expected_sha256)"
check "IMSM: ... and said" grep -q "role 3: .*member3.img: stale: events $((gen - 2)) vs $gen" "$TMP/err"
"$RAIDIMG" examine --json "$W/$i"/*.img >"$TMP/ex.json" 2>/dev/null
check "IMSM: examine: stale, degraded" test "$(jq -r '.array.verdict + " " + .array.members[3].state' "$TMP/ex.json")" = "degraded stale"
got=$(cat_sha --force "$W/$i"/*.img)
check "IMSM: --force uses it, loudly" grep -q "FORCED into the array although stale" "$TMP/err"
check "IMSM: ... (its data is current here)" test "$got" = "$(emf $i .expected_sha256)"
# images whose names are no serials of the disk table: one of them is
# placed by elimination when its data completes the others' parity, two
# are refused, and so is an image that does not complete it
fresh $i
mv "$W/$i/member2.img" "$W/$i/disk-x.img"
got=$(cat_sha "$W/$i"/*.img)
check "IMSM: one image not named after its serial: placed by elimination" test "$got" = "$(emf $i .expected_sha256)"
check "IMSM: ... and said" grep -q "disk-x.img: placed as serial 'member2' by elimination: the only drive without an image, and its data completes the others' parity" "$TMP/err"
mv "$W/$i/member3.img" "$W/$i/disk-y.img"
expect_fail "IMSM: two images not named after their serials" \
	"disk-x.img \(serial 'disk-x' from its file name\).*disk-y.img.*without an image: 'member2' \(role 2\), 'member3' \(role 3\).*--serial IMAGE=SERIAL" \
	"$RAIDIMG" cat "$W/$i"/*.img
got=$(cat_sha --serial "$W/$i/disk-x.img=member2" --serial "$W/$i/disk-y.img=member3" "$W/$i"/*.img)
check "IMSM: --serial places them" test "$got" = "$(emf $i .expected_sha256)"
rm "$W/$i/disk-x.img" "$W/$i/disk-y.img"
cp "$W/$i/member1.img" "$W/$i/disk-z.img"          # a copy of another member, not drive member2
cp "$(fixture_dir $i "$EXT")/member3.img" "$W/$i/"
expect_fail "IMSM: an image that does not complete the parity is not placed" \
	"disk-z.img is not drive 'member2' \(the only one of the disk table without an image\): with it the members' data does not add up to their parity" \
	"$RAIDIMG" cat "$W/$i"/*.img
# two containers mixed
j=imsm-r5-la-3x12M-64K-missing1
expect_fail "IMSM: two containers mixed" "2 different arrays; choose one with --array" \
	"$RAIDIMG" cat "$(fixture_dir $i "$EXT")/member0.img" "$(fixture_dir $i "$EXT")/member1.img" \
	"$(fixture_dir $j "$EXT")/member2.img"
check "... naming both volumes' uuids" grep -q "$(emf $j .volume_uuid)" "$TMP/err"
d=ddf-r5-ls-4x40M-64K
expect_fail "IMSM and DDF mixed" "2 different arrays" "$RAIDIMG" cat "$(fixture_dir $i "$EXT")"/member*.img \
	"$(fixture_dir $d "$EXT")/member0.img"

# ---- DDF (40 MiB members: anchor in the last sector, the primary copy at
# 16 MiB before the end, the secondary at 32 MiB)
dsz=$(emf $d .member_image_bytes)
alba=$((dsz / 512 - 1)) plba=$((dsz / 512 - 32768)) slba=$((dsz / 512 - 65536))
fresh $d
poke "$W/$d/member0.img" $((alba * 512 + 96)) 0000000100000000  # anchor: primary_lba 2^32
"$FIX" ddf "$W/$d/member0.img" $alba
snap $d
expect_fail "DDF: anchor pointing past the image" \
	"member0.img: DDF: anchor at lba $alba: primary_lba 4294967296 is outside the device \($((dsz / 512)) sectors\)" \
	"$RAIDIMG" cat "$W/$d"/*.img
unchanged $d
fresh $d
poke "$W/$d/member1.img" $((alba * 512 + 200)) 00                 # anchor CRC wrong: found again by the search
poke "$W/$d/member2.img" $((plba * 512 + 64)) 00                  # primary header CRC wrong: the secondary is used
got=$(cat_sha "$W/$d"/*.img)
check "DDF: a damaged anchor or primary header: the other copies read ($(head -c 200 "$TMP/err"))" test "$got" = "$(emf $d .expected_sha256)"
poke "$W/$d/member2.img" $((slba * 512 + 64)) 00                  # ... and the secondary too
snap $d
expect_fail "DDF: wrong CRC in both headers" \
	"member2.img: DDF: no usable header: primary header at lba $plba: CRC 0x[0-9a-f]+, computed 0x[0-9a-f]+.*secondary header at lba $slba: CRC" \
	"$RAIDIMG" rebuild --role 0 -o "$W/new0.img" "$W/$d"/*.img
unchanged $d
fresh $d
poke "$W/$d/member3.img" $((alba * 512 + 200)) 00
poke "$W/$d/member3.img" $((plba * 512 + 64)) 00
poke "$W/$d/member3.img" $((slba * 512 + 64)) 00
expect_fail "DDF: every header damaged" "member3.img: DDF: .*CRC 0x[0-9a-f]+, computed" "$RAIDIMG" cat "$W/$d"/*.img
fresh $d
poke "$W/$d/member1.img" $(((plba + 2) * 512 + 100)) 55           # the primary copy's physical disk records
got=$(cat_sha "$W/$d"/*.img)
check "DDF: damaged primary tables: the secondary copy reads" test "$got" = "$(emf $d .expected_sha256)"
poke "$W/$d/member1.img" $(((slba + 2) * 512 + 100)) 55
expect_fail "DDF: both copies' tables damaged" "member1.img: DDF: .*physical disk records section: CRC" "$RAIDIMG" cat "$W/$d"/*.img
finish
