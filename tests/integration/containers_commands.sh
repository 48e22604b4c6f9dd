#!/bin/bash
# The commands beyond cat and scrub on container volumes and on md members
# in partitions: mount (the second volume of an IMSM container, a RAID5 in
# GPT partitions), export, custody records and replay (IMSM placed with
# --serial, a DDF volume, partitions), examine --hash.  Each read gives the
# manifest's sha256; replay repeats each record.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"
EXT=$SRCDIR/tests/fixtures/ext
emf() { json_get "$EXT/$1/manifest.json" "$2"; }

# ---- export, record, replay
i=imsm-r5-la-4x13M-64K-2vol
d=$(fixture_dir $i "$EXT")
"$RAIDIMG" export --array Volume1 -o "$TMP/v1.img" "$d"/member*.img 2>"$TMP/err"
check "IMSM 2 volumes: export --array Volume1" test "$(sha "$TMP/v1.img")" = "$(emf $i '.volumes[1].expected_sha256')"
# images named otherwise: placed with --serial, recorded, replayed
mkdir -p "$TMP/ren"
for k in 0 1 2 3; do ln -s "$d/member$k.img" "$TMP/ren/disk$((3 - k)).img"; done
ser=()
for k in 0 1 2 3; do ser+=(--serial "$TMP/ren/disk$((3 - k)).img=member$k"); done
"$RAIDIMG" cat --array Volume0 "${ser[@]}" --record "$TMP/r1.json" -o "$TMP/v0.img" "$TMP"/ren/*.img 2>"$TMP/err"
check "IMSM --serial: cat" test "$(sha "$TMP/v0.img")" = "$(emf $i '.volumes[0].expected_sha256')"
check "IMSM --serial: the record names the serials and the array" test \
	"$(jq -r '[(.assembly.serials | length), .assembly.array, .members[0].placed_by] | map(tostring) | join(" ")' "$TMP/r1.json")" = \
	"4 $(emf $i '.volumes[0].uuid') serial 'member0' from --serial"
check "IMSM --serial: replay" "$RAIDIMG" replay "$TMP/r1.json"
# a new disk for a container of two volumes: written for the volume read,
# out of sync in the other (md would rebuild it there); both still read right
mkdir -p "$TMP/rb"
"$RAIDIMG" rebuild --array Volume0 --role 2 -o "$TMP/rb/member2.img" "$d/member0.img" "$d/member1.img" \
	"$d/member3.img" >"$TMP/out" 2>"$TMP/err"
check "IMSM 2 volumes: rebuild role 2 of Volume0" grep -q "only volume 0 ('Volume0') is written" "$TMP/err"
set -- "$d/member0.img" "$d/member1.img" "$TMP/rb/member2.img" "$d/member3.img"
"$RAIDIMG" examine --json --array Volume0 "$@" >"$TMP/ex.json" 2>/dev/null
check "IMSM 2 volumes: Volume0 complete with the new disk" test "$(jq -r '.array.verdict + " " + .array.members[2].state' "$TMP/ex.json")" = "complete active"
check "IMSM 2 volumes: Volume0 reads the same" test "$("$RAIDIMG" cat --array Volume0 "$@" 2>/dev/null | sha)" = \
	"$(emf $i '.volumes[0].expected_sha256')"
"$RAIDIMG" examine --json --array Volume1 "$@" >"$TMP/ex.json" 2>/dev/null
check "IMSM 2 volumes: in Volume1 the new disk is out of sync (its own metadata says so)" test \
	"$(jq -r '.array.verdict + " " + .array.members[2].state + " " + (.array.unused[0].note | tostring)' "$TMP/ex.json")" = \
	"degraded missing faulty (not an active member)"
check "IMSM 2 volumes: Volume1 reads the same (from parity)" test "$("$RAIDIMG" cat --array Volume1 "$@" 2>/dev/null | sha)" = \
	"$(emf $i '.volumes[1].expected_sha256')"
c=ddf-r6-ddfnc-5x40M-64K
"$RAIDIMG" export --zstd --record "$TMP/r2.json" -o "$TMP/ddf.zst" "$(fixture_dir $c "$EXT")"/member*.img 2>"$TMP/err"
check "DDF: export --zstd decompresses to the volume" test "$(zstd -dc "$TMP/ddf.zst" | sha)" = "$(emf $c .expected_sha256)"
check "DDF: replay of the export" "$RAIDIMG" replay -o "$TMP/ddf2.zst" "$TMP/r2.json"
check "DDF: replay writes the same .zst" cmp -s "$TMP/ddf.zst" "$TMP/ddf2.zst"
"$RAIDIMG" examine --hash --json "$(fixture_dir $c "$EXT")"/member*.img >"$TMP/ex.json" 2>/dev/null
check "DDF: examine --hash: the volume's sha256" test "$(jq -r .sha256.array.sha256 "$TMP/ex.json")" = "$(emf $c .expected_sha256)"

# md members in GPT partitions
p=r5-ls-4x8M-64K-md12
for k in 0 1 2 3; do
	truncate -s 12M "$TMP/disk$k.img"
	printf 'label: gpt\nstart=2048, size=2048, type=L\nstart=4096, size=16384, type=R\n' | sfdisk -q "$TMP/disk$k.img" >/dev/null
	dd if="$(fixture_dir $p)/member$k.img" of="$TMP/disk$k.img" bs=512 seek=4096 conv=notrunc status=none
done
"$RAIDIMG" cat --record "$TMP/r3.json" -o "$TMP/p.img" "$TMP"/disk*.img 2>/dev/null
check "partitions: cat" test "$(sha "$TMP/p.img")" = "$(mf $p .expected_sha256)"
check "partitions: the record names each image file and its partition" test \
	"$(jq -r '[.members[] | (.path | sub(".*/"; "")) + ":" + (.partition | tostring)] | join(" ")' "$TMP/r3.json")" = \
	"disk0.img:2 disk1.img:2 disk2.img:2 disk3.img:2"
check "partitions: the record hashes the image files" test "$(jq -r '.members[1].sha256' "$TMP/r3.json")" = "$(sha "$TMP/disk1.img")"
check "partitions: replay" "$RAIDIMG" replay "$TMP/r3.json"
printf 'x' | dd of="$TMP/disk2.img" bs=1 seek=100 conv=notrunc status=none     # outside the array: replay still refuses
expect_fail "partitions: replay refuses a changed image" "disk2.img: sha256 is now" "$RAIDIMG" replay "$TMP/r3.json"

# ---- the options are in every command's --help
for cmd in examine cat mount scrub rebuild export; do
	"$RAIDIMG" $cmd --help >"$TMP/help" 2>&1; rc=$?
	check "$cmd --help: exit 0, --array and --serial ($rc)" test $rc = 0 -a -n "$(grep -e '--array UUID|NAME' "$TMP/help")" \
		-a -n "$(grep -e '--serial IMAGE=SERIAL' "$TMP/help")"
done
expect_fail "examine without images" "raidimg: examine: give the member images" "$RAIDIMG" examine

# ---- mount
if fuse_usable; then
	mnt=$(mountpoint_dir imsm)
	out=$($T "$RAIDIMG" mount --array Volume1 "$d"/member*.img "$mnt" 2>"$TMP/err")
	check "IMSM: mount --array Volume1 ($(cat "$TMP/err"))" is_mounted "$mnt"
	check "IMSM: the mounted image is the volume" test "$($T sha256sum "$out" | cut -d' ' -f1)" = "$(emf $i '.volumes[1].expected_sha256')"
	check "IMSM: status: metadata and uuid" test "$(status_field "$mnt" '.array.metadata + " " + .array.array_uuid')" = \
		"imsm $(emf $i '.volumes[1].uuid')"
	unmount_now "$mnt"
	check "IMSM: unmounted" wait_until 10 not_mounted "$mnt"
	mnt=$(mountpoint_dir parts)
	out=$($T "$RAIDIMG" mount "$TMP"/disk0.img "$TMP"/disk1.img "$TMP"/disk3.img "$mnt" 2>"$TMP/err")
	check "partitions, one disk missing: mounted" is_mounted "$mnt"
	check "partitions: the mounted image (degraded)" test "$($T sha256sum "$out" | cut -d' ' -f1)" = "$(mf $p .expected_sha256)"
	unmount_now "$mnt"
	check "partitions: unmounted" wait_until 10 not_mounted "$mnt"
else
	echo "note: mount checks skipped: $(cat "$TMP/probe.err")"
fi
finish
