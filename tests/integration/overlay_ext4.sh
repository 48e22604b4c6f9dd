#!/bin/bash
# A file system edited through an overlay: an ext4 (mkfs.ext4 -d) written
# into a RAID5 with `raidimg create --from`, member images made read-only;
# raidimg mount --overlay, the image loop-mounted READ-WRITE, files written,
# appended to and deleted, unmounted (both), the members' sha256 unchanged;
# remounted with the same overlay: e2fsck -fn is clean and the files are
# the edited ones; without the overlay the original files are there; with a
# member deleted (degraded) the overlay still attaches and shows the edits;
# export --overlay gives an image with the edits that e2fsck accepts.
# Then mkfs.ext4 straight onto the overlaid image of a new all-zero RAID6,
# files copied in through a read-write loop mount, found again after a
# remount; the array itself still reads as zeros.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"
require_fuse

[ "$(id -u)" -eq 0 ] || skip "loop mounts need root"
command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 is not installed (package e2fsprogs)"
command -v e2fsck >/dev/null || skip "e2fsck is not installed (package e2fsprogs)"
command -v losetup >/dev/null || skip "losetup is not installed (package util-linux)"

loops_made=()
cleanup_loops() {
	local m
	for m in "${loops_made[@]}"; do
		mountpoint -q "$m" 2>/dev/null && umount "$m" 2>/dev/null
	done
	return 0
}
cleanup_hooks=(cleanup_loops "${cleanup_hooks[@]}")   # loop mounts first, then FUSE

F=$TMP/folder
mkdir -p "$F/sub"
head -c $((2 * 1024 * 1024 + 333)) /dev/urandom >"$F/random-2M.bin"
seq 1 20000 >"$F/numbers.txt"
echo "to be deleted" >"$F/sub/doomed.txt"
echo "first line" >"$F/sub/log.txt"
if ! mkfs.ext4 -q -F -b 4096 -L overlay-test -d "$F" "$TMP/ext4.img" 12M >/dev/null 2>"$TMP/err"; then
	skip "mkfs.ext4 -d did not work: $(head -c 200 "$TMP/err")"
fi
probe=$TMP/loop-probe
mkdir -p "$probe"
loops_made+=("$probe")
if ! $T mount -o loop,ro "$TMP/ext4.img" "$probe" 2>"$TMP/err"; then
	skip "loop devices are not usable here: $(head -c 200 "$TMP/err")"
fi
umount "$probe"

"$RAIDIMG" create --level 5 --devices 4 --chunk 64K --from "$TMP/ext4.img" -o "$TMP/r5" >/dev/null
chmod 444 "$TMP"/r5/member*.img
imgs=("$TMP"/r5/member*.img)
sums() { local f; for f in "${imgs[@]}"; do echo "$(sha "$f") $(stat -c %y "$f") $f"; done; }
sums >"$TMP/members.before"
OV=$TMP/fs.ovl

# mount_image NAME [--overlay FILE]: raidimg mount; sets mnt and img
mount_image() {
	local n=$1; shift
	mnt=$(mountpoint_dir "$n")
	img=$($T "$RAIDIMG" mount "$@" "${imgs[@]}" "$mnt" 2>"$TMP/err") || { fail "$n: raidimg mount: $(cat "$TMP/err")"; return 1; }
}

# unmount_image: and wait for the serving process (it syncs the overlay)
unmount_image() {
	local pid
	pid=$(status_field "$mnt" .mount.pid)
	unmount_now "$mnt"
	wait_until 10 not_mounted "$mnt" && wait_until 10 pid_gone "$pid"
}

# loop_mount NAME OPTS: mount the image; sets lm
loop_mount() {
	lm=$TMP/loop-$1
	mkdir -p "$lm"
	loops_made+=("$lm")
	$T mount -o "loop,$2" "$img" "$lm" 2>"$TMP/err" || { fail "$1: mount -o loop,$2: $(cat "$TMP/err")"; return 1; }
}

# ---- edit the file system through the overlay ----
head -c $((1024 * 1024 + 77)) /dev/urandom >"$TMP/new-1M.bin"
if mount_image edit --overlay "$OV" && loop_mount edit rw; then
	pass "ext4 in the overlaid image mounted read-write"
	cp "$TMP/new-1M.bin" "$lm/new-1M.bin"
	mkdir "$lm/newdir"
	echo "written through the overlay" >"$lm/newdir/hello.txt"
	echo "second line" >>"$lm/sub/log.txt"
	rm "$lm/sub/doomed.txt"
	sync
	$T umount "$lm"
	check "loop mount undone" not mountpoint -q "$lm"
	check "status: granules were written" test "$(status_field "$mnt" .overlay.granules_written)" -gt 0
	check "status: nothing unsynced" test "$(status_field "$mnt" .overlay.unsynced)" = false
	check "raidimg unmounted" unmount_image
fi
sums >"$TMP/members.after"
check "members: same sha256 and mtime after the rw mount" cmp "$TMP/members.before" "$TMP/members.after"

# check_edited NAME: the loop mount at $lm shows the edits
check_edited() {
	check "$1: new file identical" $T cmp "$TMP/new-1M.bin" "$lm/new-1M.bin"
	check "$1: new directory and file" test "$(cat "$lm/newdir/hello.txt")" = "written through the overlay"
	check "$1: appended file" test "$(cat "$lm/sub/log.txt")" = "$(printf 'first line\nsecond line')"
	check "$1: deleted file gone" test ! -e "$lm/sub/doomed.txt"
	check "$1: untouched files identical" $T cmp "$F/random-2M.bin" "$lm/random-2M.bin"
	check "$1: numbers.txt identical" $T cmp "$F/numbers.txt" "$lm/numbers.txt"
}

# ---- remount with the same overlay ----
if mount_image again --overlay "$OV"; then
	check "e2fsck -fn of the overlaid image is clean" $T e2fsck -fn "$img"
	if loop_mount again ro; then
		check_edited "remounted"
		$T umount "$lm"
	fi
	unmount_image
fi

# ---- without the overlay: the original ----
if mount_image plain; then
	if loop_mount plain ro; then
		check "no overlay: the new file is absent" test ! -e "$lm/new-1M.bin"
		check "no overlay: the deleted file is there" test "$(cat "$lm/sub/doomed.txt")" = "to be deleted"
		check "no overlay: the log has one line" test "$(cat "$lm/sub/log.txt")" = "first line"
		$T umount "$lm"
	fi
	unmount_image
fi

# ---- degraded: the overlay belongs to the array, not to a set of files ----
mkdir "$TMP/r5-degraded"
cp "$TMP"/r5/member0.img "$TMP"/r5/member1.img "$TMP"/r5/member3.img "$TMP/r5-degraded/"
imgs=("$TMP"/r5-degraded/member*.img)
if mount_image degraded --overlay "$OV"; then
	check "degraded: status says degraded" test "$(status_field "$mnt" .array.degraded)" = true
	if loop_mount degraded ro; then
		check_edited "degraded"
		$T umount "$lm"
	fi
	unmount_image
fi

# ---- export the edited file system ----
"$RAIDIMG" export --overlay "$OV" "${imgs[@]}" -o "$TMP/edited.img" 2>"$TMP/err"
check "export --overlay ($(cat "$TMP/err"))" test -s "$TMP/edited.img"
check "e2fsck -fn of the export is clean" $T e2fsck -fn "$TMP/edited.img"
img=$TMP/edited.img
if loop_mount exported ro; then
	check_edited "exported"
	$T umount "$lm"
fi
imgs=("$TMP"/r5/member*.img)
sums >"$TMP/members.after"
check "members: same sha256 and mtime at the end" cmp "$TMP/members.before" "$TMP/members.after"

# ---- mkfs through the overlay on an empty created array ----
"$RAIDIMG" create --level 6 --devices 5 --chunk 32K --size 8M -o "$TMP/r6" >/dev/null
chmod 444 "$TMP"/r6/member*.img
imgs=("$TMP"/r6/member*.img)
sums >"$TMP/members.before"
OV=$TMP/mkfs.ovl
if mount_image mkfs --overlay "$OV"; then
	check "mkfs.ext4 on the overlaid image" $T mkfs.ext4 -q -F -b 4096 -L made-in-overlay "$img"
	if loop_mount mkfs rw; then
		cp -r "$F"/. "$lm/"
		cp "$TMP/new-1M.bin" "$lm/"
		$T umount "$lm"
	fi
	unmount_image
fi
if mount_image mkfs-again --overlay "$OV"; then
	check "mkfs: e2fsck -fn clean after a remount" $T e2fsck -fn "$img"
	if loop_mount mkfs-again ro; then
		check "mkfs: the label" test "$(e2label "$img")" = made-in-overlay
		check "mkfs: copied file identical" $T cmp "$F/random-2M.bin" "$lm/random-2M.bin"
		check "mkfs: second file identical" $T cmp "$TMP/new-1M.bin" "$lm/new-1M.bin"
		check "mkfs: the tree" test "$(cd "$F" && find . | sort)" = "$(cd "$lm" && find . ! -path './lost+found*' ! -name new-1M.bin | sort)"
		$T umount "$lm"
	fi
	unmount_image
fi
check "mkfs: the array itself is still all zeros" test "$("$RAIDIMG" cat "${imgs[@]}" | tr -d '\0' | wc -c)" = 0
sums >"$TMP/members.after"
check "mkfs: members unchanged" cmp "$TMP/members.before" "$TMP/members.after"
finish
