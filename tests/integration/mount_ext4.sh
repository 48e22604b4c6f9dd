#!/bin/bash
# A realistic case: an ext4 file system (mkfs.ext4 -d FOLDER, a few files,
# some of random bytes) written into RAID5 and RAID6 arrays with
# `raidimg create --from`, healthy and degraded (member images deleted),
# mounted with raidimg mount, the presented file loop-mounted read-only and
# every file compared with the original.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"
require_fuse

[ "$(id -u)" -eq 0 ] || skip "loop mounts need root"
command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 is not installed (package e2fsprogs)"
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

# the source tree
F=$TMP/folder
mkdir -p "$F/sub/deeper"
head -c $((3 * 1024 * 1024 + 12345)) /dev/urandom >"$F/random-3M.bin"
head -c $((1024 * 1024)) /dev/urandom >"$F/sub/random-1M.bin"
head -c 4097 /dev/urandom >"$F/sub/deeper/odd-size"
seq 1 20000 >"$F/numbers.txt"
: >"$F/empty"
echo "hello from an md array" >"$F/sub/hello.txt"
if ! mkfs.ext4 -q -F -b 4096 -L raidimg-test -d "$F" "$TMP/ext4.img" 12M >/dev/null 2>"$TMP/err"; then
	skip "mkfs.ext4 -d did not work: $(head -c 200 "$TMP/err")"
fi

# can this machine loop-mount at all?  (the ext4 image itself, no FUSE involved)
probe=$TMP/loop-probe
mkdir -p "$probe"
loops_made+=("$probe")
if ! $T mount -o loop,ro "$TMP/ext4.img" "$probe" 2>"$TMP/err"; then
	skip "loop devices are not usable here: $(head -c 200 "$TMP/err")"
fi
umount "$probe"

# check_case NAME DIR: mount the array in DIR, loop-mount its image, compare the files
check_case() {
	local n=$1 dir=$2 mnt lm img
	mnt=$(mountpoint_dir "$n")
	lm=$TMP/loop-$n
	mkdir -p "$lm"
	loops_made+=("$lm")
	img=$($T "$RAIDIMG" mount "$dir"/member*.img "$mnt" 2>"$TMP/err")
	if [ $? -ne 0 ]; then
		fail "$n: raidimg mount: $(cat "$TMP/err")"
		return
	fi
	check "$n: the image begins with the ext4 file system" \
		$T cmp -n "$(stat -c %s "$TMP/ext4.img")" "$TMP/ext4.img" "$img"
	if ! $T mount -o loop,ro "$img" "$lm" 2>"$TMP/err"; then
		fail "$n: mount -o loop,ro: $(cat "$TMP/err")"
	else
		pass "$n: mount -o loop,ro of the presented file"
		check "$n: same file list" test "$(cd "$F" && find . | sort)" = "$(cd "$lm" && find . ! -path './lost+found*' | sort)"
		for f in random-3M.bin sub/random-1M.bin sub/deeper/odd-size numbers.txt empty sub/hello.txt; do
			check "$n: $f identical" $T cmp "$F/$f" "$lm/$f"
		done
		$T umount "$lm"
		check "$n: loop mount undone" not mountpoint -q "$lm"
	fi
	if [ "$(jq -r .array.degraded "$mnt/status")" = true ]; then
		check "$n: status shows stripes rebuilt" test "$(jq .io.stripes_rebuilt "$mnt/status")" -gt 0
	fi
	unmount_now "$mnt"
	check "$n: unmounted" wait_until 10 not_mounted "$mnt"
}

"$RAIDIMG" create --level 5 --devices 5 --chunk 64K --from "$TMP/ext4.img" -o "$TMP/r5" >/dev/null
"$RAIDIMG" create --level 6 --devices 6 --chunk 128K --layout ra --from "$TMP/ext4.img" -o "$TMP/r6" >/dev/null
check_case raid5 "$TMP/r5"
check_case raid6 "$TMP/r6"
rm "$TMP/r5/member2.img"
check_case raid5-degraded "$TMP/r5"
rm "$TMP/r6/member0.img" "$TMP/r6/member4.img"
check_case raid6-two-missing "$TMP/r6"
finish
