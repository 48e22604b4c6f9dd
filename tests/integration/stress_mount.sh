#!/bin/bash
# Many concurrent readers on a mount - random offsets, sizes up to 1 MiB,
# through the page cache and with O_DIRECT - while a scrub runs inside the
# mount (md's sync_action), again and again: every byte read must equal
# `raidimg cat`'s, the scrub must find nothing wrong, the mount must unmount
# cleanly and the members must not change.  The same on a degraded RAID6
# whose remaining members also fail to read in places (RAIDIMG_FAULTS), so
# that the readers and the scrub both go through the rebuild path.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"
require_fuse
[ -x "$READCHECK" ] || { fail "$READCHECK is missing (make builds it)"; finish; }

C=r6-ls-6x6M-64K-md12
d=$(fixture_dir $C)
m=("$d"/member0.img "$d"/member1.img "$d"/member2.img "$d"/member3.img "$d"/member4.img "$d"/member5.img)
sums=$(shas "${m[@]}")
"$RAIDIMG" cat "${m[@]}" >"$TMP/ref"
check "reference read" test "$(sha "$TMP/ref")" = "$(mf $C .expected_sha256)"

# scrub_loop MNT: keep a check running (slowly, so that it overlaps the
# readers) until $TMP/stop exists; counts passes started in $TMP/passes
scrub_loop() {
	local mnt=$1 n=0
	echo 2000 >"$mnt/sync_speed_max"
	while [ ! -e "$TMP/stop" ]; do
		if [ "$(cat "$mnt/sync_action")" = idle ]; then
			echo check >"$mnt/sync_action" 2>/dev/null && n=$((n + 1))
			echo $n >"$TMP/passes"
		fi
		sleep 0.1
	done
	echo idle >"$mnt/sync_action"
}

# stress NAME MEMBERS...: mount, readers + scrub, checks
stress() {
	local name=$1 mnt img pid spid r rc have_scrub=no; shift
	mnt=$TMP/mnt-$name
	mkdir -p "$mnt"
	mounts_made+=("$mnt")
	$T "$RAIDIMG" mount --threads 8 "$@" "$mnt" >/dev/null 2>"$TMP/$name.mount.err"; rc=$?
	if [ $rc -ne 0 ] || ! is_mounted "$mnt"; then
		fail "$name: mount failed: $(head -c 300 "$TMP/$name.mount.err")"
		return
	fi
	img=$(find "$mnt" -maxdepth 1 -name '*.img' | head -n1)
	pid=$(status_field "$mnt" .mount.pid)
	rm -f "$TMP/stop" "$TMP/passes"
	if [ -e "$mnt/sync_action" ]; then
		have_scrub=yes
		scrub_loop "$mnt" &
		spid=$!
		wait_until 10 test -s "$TMP/passes"
	else
		echo "note: this mount has no sync_action (no scrub in the mount yet): readers only"
	fi
	# 8 + 8 readers at once: through the page cache, and O_DIRECT
	$T "$READCHECK" --random 120 --procs 8 --max-len 1048576 --seed 11 "$img" "$TMP/ref" >"$TMP/$name.r1" &
	r=$!
	$T "$READCHECK" --direct --random 120 --procs 8 --max-len 1048576 --seed 12 "$img" "$TMP/ref" >"$TMP/$name.r2"
	rc=$?
	wait $r; rc1=$?
	check "$name: 960 O_DIRECT reads of up to 1 MiB by 8 processes are right $(head -c 200 "$TMP/$name.r2")" test $rc = 0
	check "$name: 960 cached reads by 8 more processes at the same time are right $(head -c 200 "$TMP/$name.r1")" test $rc1 = 0
	if [ $have_scrub = yes ]; then
		check "$name: the scrub was running while they read" test "$(cat "$TMP/passes" 2>/dev/null || echo 0)" -ge 1
		touch "$TMP/stop"
		wait_pid $spid 60
		check "$name: the scrub found no mismatch (mismatch_cnt 0)" test "$(cat "$mnt/mismatch_cnt")" = 0
	fi
	check "$name: the whole image reads right after the stress" \
		test "$($T sha256sum "$img" | cut -d' ' -f1)" = "$(sha "$TMP/ref")"
	$T cat "$mnt/status" >"$TMP/$name.status"
	unmount_now "$mnt"
	check "$name: unmounts, and the daemon ends" wait_until 20 pid_gone "$pid"
}

stress complete "${m[@]}"

# degraded RAID6: member 4 absent, members 1 and 3 failing in places (never
# together with another failure in one 4K block)
f="${m[1]}:1M+64K,3M+4K,5M+100K;${m[3]}:2M+64K,4M+8K"
RAIDIMG=$RAIDIMG_FAULTY RAIDIMG_FAULTS=$f stress degraded-failing "${m[0]}" "${m[1]}" "${m[2]}" "${m[3]}" "${m[5]}"
check "degraded-failing: read errors were recovered (status)" \
	test "$(jq '[.. | objects | .read_errors_recovered? // empty] | max' "$TMP/degraded-failing.status")" -gt 0

check "no member changed" test "$sums" = "$(shas "${m[@]}")"
finish
