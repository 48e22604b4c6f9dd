#!/bin/bash
# raidimg mount --overlay: the presented image becomes writable and every
# write lands in the overlay file.  On a real-md RAID6 fixture (read-only
# member images): writes at odd offsets and sizes across granule boundaries
# (dd conv=notrunc), compared with a model file written the same way;
# status's "overlay" object; writes past the end and truncation refused;
# unmount, remount, the same bytes; the members' sha256 and mtime never
# change; `overlay info` (text and --json) against what was written;
# cat/export --overlay give the edited array, cat without it the original;
# refusals with exit 2: another array's overlay, a manual geometry, a
# corrupt header, a file that is not an overlay (left untouched), a member
# image, an overlay in use (second mount, discard, cat); a file mountpoint;
# discard.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"
require_fuse

jq_true() { jq -e "$@" >/dev/null; }

# member_state: sha256 and mtime (ns) of every member image
member_state() { local f; for f in "${imgs[@]}"; do echo "$(sha "$f") $(stat -c %y "$f") $f"; done; }

# put OFFSET LENGTH: the same random bytes into the image (through the
# mount) and into the model
put() {
	local off=$1 len=$2
	head -c "$len" /dev/urandom >"$TMP/piece"
	$T dd if="$TMP/piece" of="$img" bs=1M oflag=seek_bytes seek="$off" conv=notrunc status=none || return 1
	dd if="$TMP/piece" of="$TMP/model" bs=1M oflag=seek_bytes seek="$off" conv=notrunc status=none
	for ((g = off / G; g <= (off + len - 1) / G; g++)); do granules[$g]=1; done
}

# unmount MNT: and wait for the serving process to end (the overlay synced)
unmount() {
	local pid
	pid=$(status_field "$1" .mount.pid)
	unmount_now "$1"
	wait_until 10 not_mounted "$1" && wait_until 10 pid_gone "$pid"
}

c=r6-ls-6x6M-64K-md12
mapfile -t imgs < <(members_shuffled "$c")
size=$(mf "$c" .array_bytes)
uuid=$(mf "$c" .array_uuid)
G=65536
OV=$TMP/edits.ovl
declare -A granules=()

# ---- help ----
"$RAIDIMG" overlay --help >"$TMP/help"; rc=$?
check "overlay --help exits 0" test $rc -eq 0
for w in info discard --json granule; do
	check "overlay --help mentions $w" grep -q -- "$w" "$TMP/help"
done
check "mount --help mentions --overlay" sh -c "'$RAIDIMG' mount --help | grep -q -- --overlay"

member_state >"$TMP/members.before"
"$RAIDIMG" cat "${imgs[@]}" >"$TMP/original"
cp "$TMP/original" "$TMP/model"

# ---- first mount: the overlay is made ----
mnt=$(mountpoint_dir ov)
img=$($T "$RAIDIMG" mount --overlay "$OV" "${imgs[@]}" "$mnt" 2>"$TMP/err"); rc=$?
check "mount --overlay returns 0 ($(cat "$TMP/err"))" test $rc -eq 0
check "a new overlay is announced" grep -q "new overlay for the md array uuid $uuid" "$TMP/err"
check "the overlay file exists" test -f "$OV"
check "the image is writable (mode 0644)" test "$(stat -c %a "$img")" = 644
check "status: mount.read_only false" test "$(status_field "$mnt" .mount.read_only)" = false
check "status: overlay path" test "$(status_field "$mnt" .overlay.path)" = "$OV"

ok=1
for w in "0 1" "65535 2" "131071 65538" "1000000 7" "300000 200000" "20497 4000" "$((size - 3)) 3" \
	 "$((5 * G)) $G" "$((9 * G - 1)) $((2 * G + 2))" "4194303 1048577"; do
	put $w || ok=0
done
check "ten dd writes at odd offsets and sizes succeed" test $ok = 1
check "the image reads as the model (page cache)" $T cmp "$img" "$TMP/model"
check "the image differs from the original array" not cmp -s "$img" "$TMP/original"
check "status: granules_written is the granules touched (${#granules[@]})" \
	test "$(status_field "$mnt" .overlay.granules_written)" = "${#granules[@]}"
check "status: every write synced at close" test "$(status_field "$mnt" .overlay.unsynced)" = false
check "status: write requests counted" test "$(status_field "$mnt" .overlay.write_requests)" -ge 10
check "status: partial granules were copied from the array" test "$(status_field "$mnt" .overlay.granules_copied)" -gt 0
head -c 4096 /dev/urandom >"$TMP/piece"
check "a write at the end of the image fails" not $T dd if="$TMP/piece" of="$img" bs=4096 seek=$((size / 4096)) conv=notrunc status=none
check "a write across the end fails" not $T dd if="$TMP/piece" of="$img" bs=1 seek=$((size - 2)) count=4 conv=notrunc status=none
check "the 2 bytes before the end were written" cmp -s <(tail -c 2 "$img") <(head -c 2 "$TMP/piece")
dd if="$TMP/piece" of="$TMP/model" bs=1 seek=$((size - 2)) count=2 conv=notrunc status=none
check "truncate to 0 refused" not truncate -s 0 "$img"
check "truncate to its own size accepted" truncate -s "$size" "$img"
check "the size did not change" test "$(stat -c %s "$img")" = "$size"
check "writing the status file is still refused" not sh -c "echo x > '$mnt/status'"
expect_fail "a second mount with the same overlay" "in use" \
	"$RAIDIMG" mount --overlay "$OV" "${imgs[@]}" "$(mountpoint_dir ov-twice)"
expect_fail "discard while mounted" "in use" "$RAIDIMG" overlay discard "$OV"
expect_fail "cat --overlay while mounted" "in use" "$RAIDIMG" cat --overlay "$OV" "${imgs[@]}" -o "$TMP/x"
"$RAIDIMG" overlay info --json "$OV" >"$TMP/info.json"
check "info while mounted says in_use" test "$(jq .in_use "$TMP/info.json")" = true
check "unmounted, the daemon ended" unmount "$mnt"

# ---- the members never changed ----
member_state >"$TMP/members.after"
check "members: same sha256 and mtime" cmp "$TMP/members.before" "$TMP/members.after"
check "members are still read-only files" test -z "$(find "${imgs[@]}" -perm /222)"

# ---- overlay info ----
"$RAIDIMG" overlay info --json "$OV" >"$TMP/info.json"; rc=$?
check "info --json exits 0" test $rc -eq 0
n=${#granules[@]}
check "info: granules_written $n" test "$(jq .granules_written "$TMP/info.json")" = "$n"
check "info: bytes_written $((n * G))" test "$(jq .bytes_written "$TMP/info.json")" = $((n * G))
check "info: the array's uuid" test "$(jq -r .array.array_uuid "$TMP/info.json")" = "$uuid"
check "info: md, RAID6 left-symmetric, 6 members, 64K chunk" test \
	"$(jq -r '[.array.kind,.array.level,.array.layout_name,.array.raid_disks,.array.chunk_bytes]|join(" ")' "$TMP/info.json")" \
	= "md 6 left-symmetric 6 65536"
check "info: array_bytes" test "$(jq .array.array_bytes "$TMP/info.json")" = "$size"
check "info: granule 64 KiB, granules" test "$(jq '[.granule_bytes,.granules]|join(" ")' -r "$TMP/info.json")" = "$G $((size / G))"
check "info: not in use" test "$(jq .in_use "$TMP/info.json")" = false
check "info: created <= modified, both ISO times" \
	jq_true '(.created|test("^20[0-9-]+T[0-9:.]+Z$")) and (.modified >= .created)' "$TMP/info.json"
check "info: the file is sparse" test "$(jq .allocated_bytes "$TMP/info.json")" -lt "$(jq .file_bytes "$TMP/info.json")"
"$RAIDIMG" overlay info "$OV" >"$TMP/info.txt"; rc=$?
check "info (text) exits 0" test $rc -eq 0
check "info (text): array uuid" grep -q "array: *md array uuid $uuid" "$TMP/info.txt"
check "info (text): written granules" grep -q "written: *$n of $((size / G)) granules, $((n * G)) bytes" "$TMP/info.txt"
check "info (text): granule" grep -q "granule: *65536 bytes" "$TMP/info.txt"

# ---- reading it back ----
check "cat --overlay gives the model" cmp <("$RAIDIMG" cat --overlay "$OV" "${imgs[@]}") "$TMP/model"
check "cat without it gives the original array" cmp <("$RAIDIMG" cat "${imgs[@]}") "$TMP/original"
check "cat --overlay --offset/--length" cmp <("$RAIDIMG" cat --overlay "$OV" --offset 65530 --length 200000 "${imgs[@]}") \
	<(tail -c +65531 "$TMP/model" | head -c 200000)
"$RAIDIMG" export --overlay "$OV" "${imgs[@]}" -o "$TMP/export.img" 2>"$TMP/err"; rc=$?
check "export --overlay exits 0 ($(cat "$TMP/err"))" test $rc -eq 0
check "export --overlay gives the model" cmp "$TMP/export.img" "$TMP/model"
expect_fail "cat --overlay --hash refused" "no longer the array" "$RAIDIMG" cat --overlay "$OV" --hash "${imgs[@]}"
expect_fail "export --overlay --record refused" "no longer the array" \
	"$RAIDIMG" export --overlay "$OV" --record "$TMP/r.json" "${imgs[@]}" -o "$TMP/x.img"
expect_fail "cat --overlay -o the overlay itself" "is the overlay" "$RAIDIMG" cat --overlay "$OV" -o "$OV" "${imgs[@]}"
check "the overlay survived that" test "$(jq .granules_written <("$RAIDIMG" overlay info --json "$OV"))" = "$n"

# ---- remount: reattached, same bytes, more writes ----
mnt=$(mountpoint_dir ov2)
img=$($T "$RAIDIMG" mount --overlay "$OV" "${imgs[@]}" "$mnt" 2>"$TMP/err"); rc=$?
check "remount with the overlay ($(cat "$TMP/err"))" test $rc -eq 0
check "no new overlay this time" not grep -q "new overlay" "$TMP/err"
check "remounted image reads as the model" $T cmp "$img" "$TMP/model"
put 7777777 12345
check "one more write, read back" $T cmp "$img" "$TMP/model"
check "unmounted again" unmount "$mnt"
check "cat --overlay has the new write too" cmp <("$RAIDIMG" cat --overlay "$OV" "${imgs[@]}") "$TMP/model"

# ---- a file as the mountpoint ----
f=$TMP/image-file
: >"$f"
mounts_made+=("$f")
out=$($T "$RAIDIMG" mount --overlay "$OV" "${imgs[@]}" "$f" 2>"$TMP/err"); rc=$?
check "file mount with the overlay ($(cat "$TMP/err"))" test $rc -eq 0
img=$f
put 10 100
check "file mount: the model, with a new write" $T cmp "$f" "$TMP/model"
pid=$(pgrep -f -- "mount --overlay $OV" | head -n1)
unmount_now "$f"
check "file mount: unmounted" wait_until 10 not_mounted "$f"
[ -n "$pid" ] && wait_until 10 pid_gone "$pid"
check "file mount: the write is in the overlay" cmp <("$RAIDIMG" cat --overlay "$OV" "${imgs[@]}") "$TMP/model"

# ---- refusals ----
c2=r5-ls-4x8M-64K-md12
mapfile -t other < <(members_shuffled "$c2")
sha_ov=$(sha "$OV")
expect_fail "another array's overlay" "belongs to another array.*$uuid" \
	"$RAIDIMG" mount --overlay "$OV" "${other[@]}" "$(mountpoint_dir other)"
check "nothing mounted" not_mounted "$TMP/mnt-other"
expect_fail "cat --overlay on another array" "belongs to another array" "$RAIDIMG" cat --overlay "$OV" "${other[@]}"
d=$(fixture_dir "$c")
expect_fail "the same images as a manual geometry" "manual geometry" \
	"$RAIDIMG" cat --overlay "$OV" --level 6 --chunk 64K --data-offset 1M "$d"/member{0,1,2,3,4,5}.img
check "refusals left the overlay untouched" test "$(sha "$OV")" = "$sha_ov"
cp "$OV" "$TMP/corrupt.ovl"
printf '\x55' | dd of="$TMP/corrupt.ovl" bs=1 seek=70 conv=notrunc status=none
expect_fail "a corrupt header (mount)" "corrupt overlay header" \
	"$RAIDIMG" mount --overlay "$TMP/corrupt.ovl" "${imgs[@]}" "$(mountpoint_dir corrupt)"
expect_fail "a corrupt header (info)" "corrupt overlay header" "$RAIDIMG" overlay info "$TMP/corrupt.ovl"
expect_fail "a corrupt header (discard)" "corrupt overlay header" "$RAIDIMG" overlay discard "$TMP/corrupt.ovl"
head -c 100000 /dev/urandom >"$TMP/junk"
sha_junk=$(sha "$TMP/junk")
expect_fail "a file that is not an overlay" "not a raidimg overlay.*refusing" \
	"$RAIDIMG" mount --overlay "$TMP/junk" "${imgs[@]}" "$(mountpoint_dir junk)"
check "that file is untouched" test "$(sha "$TMP/junk")" = "$sha_junk"
expect_fail "a member image as the overlay" "is the image .* given as input; refusing to write over evidence" \
	"$RAIDIMG" mount --overlay "${imgs[2]}" "${imgs[@]}" "$(mountpoint_dir member)"
expect_fail "--overlay with --allow-repair" "allow-repair" \
	"$RAIDIMG" mount --overlay "$TMP/new.ovl" --allow-repair "${imgs[@]}" "$(mountpoint_dir repair)"
expect_fail "a mount that fails after the overlay was made (--name status)" "status" \
	"$RAIDIMG" mount --overlay "$TMP/new.ovl" --name status "${imgs[@]}" "$(mountpoint_dir name)"
check "no overlay made by refused commands" test ! -e "$TMP/new.ovl"
expect_fail "cat --overlay with a missing file" "cannot open the overlay" \
	"$RAIDIMG" cat --overlay "$TMP/absent.ovl" "${imgs[@]}"
check "cat did not create it" test ! -e "$TMP/absent.ovl"
expect_fail "info on a missing file" "absent.ovl" "$RAIDIMG" overlay info "$TMP/absent.ovl"
expect_fail "overlay with an unknown action" "unknown action" "$RAIDIMG" overlay squash "$OV"
: >"$TMP/empty.ovl"
expect_fail "info on an empty file" "not a raidimg overlay" "$RAIDIMG" overlay info "$TMP/empty.ovl"

# ---- discard ----
n=${#granules[@]}
check "info: every granule written so far ($n)" test "$(jq .granules_written <("$RAIDIMG" overlay info --json "$OV"))" = "$n"
"$RAIDIMG" overlay discard "$OV" >"$TMP/out" 2>"$TMP/err"; rc=$?
check "discard exits 0 ($(cat "$TMP/err"))" test $rc -eq 0
check "discard says what it dropped" grep -q "discarded $n granules ($((n * G)) bytes)" "$TMP/out"
check "info after discard: 0 granules" test "$(jq .granules_written <("$RAIDIMG" overlay info --json "$OV"))" = 0
check "info after discard: still this array" test "$(jq -r .array.array_uuid <("$RAIDIMG" overlay info --json "$OV"))" = "$uuid"
check "cat --overlay after discard: the original" cmp <("$RAIDIMG" cat --overlay "$OV" "${imgs[@]}") "$TMP/original"
check "the discarded overlay holds almost nothing" test "$(du -k "$OV" | cut -f1)" -lt 256
member_state >"$TMP/members.after"
check "members: same sha256 and mtime at the end" cmp "$TMP/members.before" "$TMP/members.after"
finish
