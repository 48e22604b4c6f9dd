#!/bin/bash
# A mount never covers anything by surprise: the member image given last by
# mistake (the mdadm habit of `mount m0 m1 m2 m3` without a mountpoint), a
# non-empty directory or file, a mountpoint where raidimg (or anything) is
# already mounted are refused with a message saying what and why (exit 2,
# nothing mounted, the member still examined as one); --nonempty mounts over
# a non-empty directory or file but never over a member of the array; a
# degraded mount says so on stderr, as mdadm says "started with 3 drives
# (out of 4)", and a complete one does not.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"
require_fuse

c=r5-ls-4x8M-64K-md12
src=$(fixture_dir "$c")
mkdir -p "$TMP/m"
cp "$src"/member*.img "$TMP/m/"
m=("$TMP/m/member0.img" "$TMP/m/member1.img" "$TMP/m/member2.img" "$TMP/m/member3.img")
uuid=$(mf "$c" .array_uuid)
mounts_made+=("${m[3]}")

# ---- a member image as the mountpoint ----
expect_fail "the last member taken for the mountpoint" \
	"member3.img: the mountpoint holds an md 1.2 superblock \(array $uuid, role 3\): a member image\?" \
	"$RAIDIMG" mount "${m[@]}"
check "... nothing mounted over it" not_mounted "${m[3]}"
check "... examine still finds its superblock" \
	test "$("$RAIDIMG" examine --json "${m[@]}" | jq -r '.members[3].role')" = 3
expect_fail "--nonempty: never over a member of this array" \
	"member3.img: the mountpoint is a member image of this array \(role 3\) left out" \
	"$RAIDIMG" mount --nonempty "${m[0]}" "${m[1]}" "${m[2]}" "${m[3]}"
check "... nothing mounted" not_mounted "${m[3]}"

# ---- a non-empty file ----
f=$TMP/notes.txt
echo "case notes" >"$f"
mounts_made+=("$f")
expect_fail "a non-empty file" "notes.txt: the mountpoint is a file of 11 bytes: the mount would hide" \
	"$RAIDIMG" mount "${m[@]}" "$f"
check "... nothing mounted" not_mounted "$f"
e=$TMP/empty.img
: >"$e"
mounts_made+=("$e")
out=$($T "$RAIDIMG" mount "${m[@]}" "$e" 2>"$TMP/err"); rc=$?
check "an empty file is a mountpoint ($(cat "$TMP/err"))" test $rc -eq 0 -a "$out" = "$e"
check "... complete: nothing said about degraded" not grep -q degraded "$TMP/err"
unmount_now "$e"

# ---- a non-empty directory ----
d=$(mountpoint_dir full)
echo keep >"$d/keep.txt"
expect_fail "a non-empty directory" "mnt-full: the directory is not empty \(1 entry, e.g. 'keep.txt'\).*--nonempty" \
	"$RAIDIMG" mount "${m[@]}" "$d"
check "... nothing mounted" not_mounted "$d"
out=$($T "$RAIDIMG" mount --nonempty "${m[@]}" "$d" 2>"$TMP/err"); rc=$?
check "--nonempty mounts over it ($(cat "$TMP/err"))" test $rc -eq 0 -a "$out" = "$d/oracle_oracle.img"
check "... which hides the file" test ! -e "$d/keep.txt"
unmount_now "$d"
check "... which is back after unmounting" test "$(cat "$d/keep.txt")" = keep

# ---- mounted twice ----
d=$(mountpoint_dir twice)
$T "$RAIDIMG" mount "${m[@]}" "$d" >/dev/null 2>"$TMP/err" || fail "first mount: $(cat "$TMP/err")"
expect_fail "a second mount on the same mountpoint" \
	"mnt-twice: raidimg is already mounted there.*fusermount3 -u" "$RAIDIMG" mount "${m[@]}" "$d"
check "... one mount there, not two" test "$(awk -v m="$d" '$2 == m' /proc/mounts | wc -l)" -eq 1
unmount_now "$d"
d=$(mountpoint_dir other)
"$NULLFS" 4096 "$d" 2>/dev/null &
npid=$!
if wait_until 10 is_mounted "$d"; then
	expect_fail "a mountpoint where another file system is mounted" \
		"mnt-other: already a mount point \(fuse.nullfs\)" "$RAIDIMG" mount "${m[@]}" "$d"
	check "... still the other file system alone" test "$(awk -v m="$d" '$2 == m { print $3 }' /proc/mounts)" = fuse.nullfs
	unmount_now "$d"
else
	fail "nullfs did not mount"
fi
wait_pid "$npid" >/dev/null

# ---- a degraded mount says so ----
d=$(mountpoint_dir degraded)
out=$($T "$RAIDIMG" mount "${m[0]}" "${m[1]}" "${m[3]}" "$d" 2>"$TMP/err"); rc=$?
check "degraded: mounted" test $rc -eq 0 -a "$out" = "$d/oracle_oracle.img"
check "degraded: said on stderr as mdadm does ($(cat "$TMP/err"))" \
	grep -q "mnt-degraded: started degraded, with 3 of 4 members (missing: role 2): the data of the members not in use is rebuilt from parity" "$TMP/err"
check "degraded: the image is the array's all the same" \
	test "$($T sha256sum "$d/oracle_oracle.img" | cut -d' ' -f1)" = "$(mf "$c" .expected_sha256)"
unmount_now "$d"
d=$(mountpoint_dir fg)
$T "$RAIDIMG" mount -f "${m[0]}" "${m[2]}" "${m[3]}" "$d" >"$TMP/fg.out" 2>"$TMP/fg.err" &
fpid=$!
if wait_until 20 is_mounted "$d" && wait_until 10 grep -q serving "$TMP/fg.err"; then
	check "degraded -f: said on stderr" grep -q "started degraded, with 3 of 4 members (missing: role 1)" "$TMP/fg.err"
	unmount_now "$d"
else
	fail "-f degraded mount: $(cat "$TMP/fg.err")"
fi
wait_pid "$fpid" >/dev/null
finish
