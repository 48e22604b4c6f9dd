#!/bin/bash
# md members inside partitions of whole-disk images, made with sfdisk from
# the real-md fixtures' members: GPT (1.2 in partition 2), MBR with logical
# partitions (1.1 in partition 5), 0.90 at the end of a partition ending at
# the disk's end (seen through the whole image too: taken as the
# partition's), two arrays on the same disks (--array, and the only
# RAID4/5/6 one taken when the other is RAID1), and partition tables that
# point past the image or overlap: refused naming the file and the
# partition, members unchanged.
. "$(dirname "$0")/lib.sh"
command -v sfdisk >/dev/null || skip "sfdisk (fdisk) is not installed"
W=$TMP/disks
mkdir -p "$W"

# disk OUT SIZE_MIB TABLE: an empty disk image with an sfdisk script's table
disk() {
	truncate -s "$2M" "$1"
	printf '%b' "$3" | sfdisk -q "$1" >/dev/null
}
# put IMAGE DISK START_SECTOR: copy a member image into a disk
put() { dd if="$1" of="$2" bs=512 seek="$3" conv=notrunc status=none; }
cat_sha() { "$RAIDIMG" cat "$@" 2>"$TMP/err" | sha; }

# ---- GPT, the member in partition 2 (md 1.2), behind a file system partition
c=r5-ls-4x8M-64K-md12
d=$(fixture_dir $c)
for i in 0 1 2 3; do
	disk "$W/gpt$i.img" 12 'label: gpt\nstart=2048, size=2048, type=L, name=boot\nstart=4096, size=16384, type=R, name=data\n'
	put "$d/member$i.img" "$W/gpt$i.img" 4096
done
got=$(cat_sha "$W/gpt2.img" "$W/gpt0.img" "$W/gpt3.img" "$W/gpt1.img")
check "GPT: cat sha256" test "$got" = "$(mf $c .expected_sha256)"
"$RAIDIMG" examine --json "$W"/gpt*.img >"$TMP/ex.json"
check "GPT: examine says where each member is" test "$(jq -r '.array.members[0] | .path + " | " + (.partition | tostring) + " | " + .where' "$TMP/ex.json")" = \
	"$W/gpt0.img | 2 | partition 2 \"data\", GPT 'Linux RAID', sectors 4096-20479"
check "GPT: the image's table and its finding" test "$(jq -r '.members[1] | .partition_table + " " + (.found[0].partition | tostring) + " " + (.role | tostring)' "$TMP/ex.json")" = "gpt 2 1"
"$RAIDIMG" examine "$W"/gpt*.img >"$TMP/ex.txt"
check "GPT: examine text" grep -q "role 3         : active     $W/gpt3.img partition 2 \"data\", GPT 'Linux RAID', sectors 4096-20479" "$TMP/ex.txt"
check "GPT: scrub clean" "$RAIDIMG" scrub "$W"/gpt*.img

# ---- MBR: primary, extended, the member (md 1.1) in logical partition 5
c=r6-ls-5x6M-4K-md11
d=$(fixture_dir $c)
for i in 0 1 2 3 4; do
	disk "$W/mbr$i.img" 10 'label: dos\nstart=2048, size=1024, type=83\nstart=4096, size=16384, type=5\nstart=6144, size=12288, type=fd\n'
	put "$d/member$i.img" "$W/mbr$i.img" 6144
done
got=$(cat_sha "$W"/mbr*.img)
check "MBR logical partition: cat sha256" test "$got" = "$(mf $c .expected_sha256)"
"$RAIDIMG" examine --json "$W"/mbr*.img >"$TMP/ex.json"
check "MBR: where" test "$(jq -r '.array.members[4].where' "$TMP/ex.json")" = \
	"partition 5, MBR type 0xfd 'Linux raid autodetect', sectors 6144-18431"

# ---- 0.90 at the end of a partition that ends where the disk does: the
# whole image shows the same superblock; the partition's is taken
c=r5-la-4x6M-32K-md090
d=$(fixture_dir $c)
for i in 0 1 2 3; do
	disk "$W/end$i.img" 7 'label: dos\nstart=2048, size=12288, type=fd\n'
	put "$d/member$i.img" "$W/end$i.img" 2048
done
got=$(cat_sha "$W"/end*.img)
check "0.90 at the partition's (and disk's) end: cat sha256 ($(head -c 200 "$TMP/err"))" test "$got" = "$(mf $c .expected_sha256)"
"$RAIDIMG" examine --json "$W"/end*.img >"$TMP/ex.json"
check "0.90: found once, in partition 1" test "$(jq -r '([.members[].found | length | tostring] | join(",")) + " " + (.array.members[0].partition | tostring)' "$TMP/ex.json")" = "1,1,1,1 1"

# ---- two arrays on the same disks: partition 2 (1.2 RAID5), partition 3 (0.90 RAID5)
a=r5-ls-4x8M-64K-md12
b=r5-la-4x6M-32K-md090
for i in 0 1 2 3; do
	disk "$W/two$i.img" 18 'label: gpt\nstart=2048, size=4096, type=R\nstart=6144, size=16384, type=R\nstart=22528, size=12288, type=R\n'
	put "$(fixture_dir $a)/member$i.img" "$W/two$i.img" 6144
	put "$(fixture_dir $b)/member$i.img" "$W/two$i.img" 22528
done
expect_fail "two RAID5 arrays, no --array" "2 different arrays; choose one with --array" "$RAIDIMG" cat "$W"/two*.img
check "two arrays: the list names both uuids" grep -q "$(mf $b .array_uuid)" "$TMP/err"
got=$(cat_sha --array "$(mf $a .array_uuid)" "$W"/two*.img)
check "two arrays: --array UUID (1.2)" test "$got" = "$(mf $a .expected_sha256)"
got=$(cat_sha --array "$(mf $b .array_uuid | tr -d :)" "$W"/two*.img)
check "two arrays: --array UUID without colons (0.90)" test "$got" = "$(mf $b .expected_sha256)"
expect_fail "two arrays: --array naming neither" "--array nosuch: no such array" "$RAIDIMG" cat --array nosuch "$W"/two*.img
"$RAIDIMG" examine --json "$W"/two*.img >"$TMP/ex.json"
check "examine lists both arrays, none chosen" test "$(jq -r '[(.arrays | length), .chosen, .array.assemblable] | map(tostring) | join(" ")' "$TMP/ex.json")" = "2 null false"
check "examine: every member of each array with its partition" test \
	"$(jq -r '[.arrays[] | [.members[] | .partition] | map(tostring) | join(",")] | join(" ")' "$TMP/ex.json")" = "2,2,2,2 3,3,3,3"

# a RAID1 in partition 1 (a NAS's system array: a 1.2 member made level 1,
# 2 MiB): the only RAID4/5/6 array is taken, and that is said
for i in 0 1 2 3; do
	head -c 8K "$(fixture_dir $a)/member$i.img" >"$W/r1-$i.img"
	sb_set 72 4 1 "$W/r1-$i.img"                # level 1
	sb_set 16 4 16909060 "$W/r1-$i.img"         # an array uuid of its own
	sb_set 128 8 16 "$W/r1-$i.img"              # data_offset 16 sectors
	sb_set 136 8 2048 "$W/r1-$i.img"            # data_size
	sb_set 80 8 2048 "$W/r1-$i.img"             # size
	put "$W/r1-$i.img" "$W/two$i.img" 2048
done
"$RAIDIMG" cat "$W"/two*.img 2>"$TMP/err" >/dev/null
check "NAS: RAID1 + RAID5 + RAID5 still needs --array" grep -q "3 different arrays" "$TMP/err"
for i in 0 1 2 3; do dd if=/dev/zero of="$W/two$i.img" bs=512 seek=22528 count=12288 conv=notrunc status=none; done
got=$(cat_sha "$W"/two*.img)
check "NAS: the only RAID4/5/6 array is read" test "$got" = "$(mf $a .expected_sha256)"
check "NAS: ... and that is said" grep -q "the images hold 2 arrays; reading the only RAID4/5/6 one (raid5, md 1.2, uuid $(mf $a .array_uuid)" "$TMP/err"
"$RAIDIMG" examine "$W"/two*.img >"$TMP/ex.txt" 2>&1
check "NAS: examine lists the RAID1 as not read" grep -q "not read: RAID1 (raidimg reads RAID4, RAID5 and RAID6)" "$TMP/ex.txt"

# ---- bad partition tables: refused naming the file and the partition
c=r5-ls-4x8M-64K-md12
for i in 0 1 2 3; do cp "$W/gpt$i.img" "$W/bad$i.img"; done
before=$(shas "$W"/bad*.img)
# MBR entry 2 made to end far past the image (on an image holding no metadata of its own)
disk "$W/past.img" 12 'label: dos\nstart=2048, size=2048, type=83\nstart=4096, size=16384, type=fd\n'
put "$(fixture_dir $c)/member1.img" "$W/past.img" 4096
printf '\x00\x00\x10\x00' | dd of="$W/past.img" bs=1 seek=$((0x1be + 16 + 12)) conv=notrunc status=none
expect_fail "partition past the end of the image" "past.img: its partition table is broken: .*partition 2.*past the end" \
	"$RAIDIMG" cat "$W/bad0.img" "$W/past.img" "$W/bad2.img" "$W/bad3.img"
# overlapping partitions
disk "$W/over.img" 12 'label: dos\nstart=2048, size=2048, type=83\nstart=4096, size=16384, type=fd\n'
put "$(fixture_dir $c)/member1.img" "$W/over.img" 4096
printf '\x00\x18\x00\x00' | dd of="$W/over.img" bs=1 seek=$((0x1be + 16 + 8)) conv=notrunc status=none   # start 6144
printf '\x00\x08\x00\x00' | dd of="$W/over.img" bs=1 seek=$((0x1be + 8)) conv=notrunc status=none        # p1 start 2048
printf '\x00\x20\x00\x00' | dd of="$W/over.img" bs=1 seek=$((0x1be + 12)) conv=notrunc status=none       # p1 8192 sectors
expect_fail "overlapping partitions" "over.img: .*overlap" "$RAIDIMG" cat "$W/bad0.img" "$W/over.img" "$W/bad2.img" "$W/bad3.img"
# a GPT whose both headers are damaged
cp "$W/gpt1.img" "$W/gptbad.img"
printf 'X' | dd of="$W/gptbad.img" bs=1 seek=$((512 + 20)) conv=notrunc status=none
printf 'X' | dd of="$W/gptbad.img" bs=1 seek=$((12 * 1048576 - 512 + 20)) conv=notrunc status=none
expect_fail "GPT with both headers damaged" "gptbad.img: .*GPT.*(CRC|crc)" "$RAIDIMG" cat "$W/bad0.img" "$W/gptbad.img" "$W/bad2.img" "$W/bad3.img"
# ... one damaged header: the backup is used (and the array reads)
cp "$W/gpt1.img" "$W/gpthalf.img"
printf 'X' | dd of="$W/gpthalf.img" bs=1 seek=$((512 + 20)) conv=notrunc status=none
got=$(cat_sha "$W/bad0.img" "$W/gpthalf.img" "$W/bad2.img" "$W/bad3.img")
check "GPT primary header damaged: the backup is used" test "$got" = "$(mf $c .expected_sha256)"
"$RAIDIMG" examine "$W/bad0.img" "$W/gpthalf.img" "$W/bad2.img" "$W/bad3.img" >"$TMP/ex.txt" 2>&1
check "... and examine says so" grep -q "partition table: GPT: primary header (LBA 1): HeaderCRC32 .*backup header at LBA 24575 used" "$TMP/ex.txt"
after=$(shas "$W"/bad*.img)
check "members unchanged" test "$before" = "$after"
finish
