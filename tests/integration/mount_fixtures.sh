#!/bin/bash
# Every real-md fixture mounted with `raidimg mount` (members in shuffled
# order): the sha256 of the presented file is md's; reads at odd offsets and
# sizes (1 byte, 4095, across chunk and stripe boundaries, past the end) give
# exactly the bytes of `raidimg cat`, through the page cache and as exact
# FUSE requests (O_DIRECT); 4 concurrent readers at random offsets
# get identical bytes; the status file is JSON with the manifest's geometry
# and says whether the array is degraded; `fusermount3 -u` leaves no mount
# and no process; no member image is modified.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"
require_fuse

seed=1
for c in $(fixture_cases); do
	# quick: healthy 0.90, RAID5 without a member, RAID6 without two
	quick && case $c in r5-la-4x6M-32K-md090 | r5-ls-5x6M-128K-missing2 | r6-ls-6x6M-64K-missing1-4) ;;
		*) continue ;; esac
	mapfile -t imgs < <(members_shuffled "$c")
	before=$(shas "${imgs[@]}" | sort)
	want=$(mf "$c" .expected_sha256)
	size=$(mf "$c" .array_bytes)
	chunk=$(mf "$c" .chunk_bytes)
	ndata=$(( $(mf "$c" .raid_devices) - ($(mf "$c" .level) == 6 ? 2 : 1) ))
	stripe=$((chunk * ndata))
	mnt=$(mountpoint_dir "$c")
	img=$mnt/$(image_name_of "$c")

	out=$($T "$RAIDIMG" mount "${imgs[@]}" "$mnt" 2>"$TMP/err"); rc=$?
	if [ $rc -ne 0 ] || ! is_mounted "$mnt"; then
		fail "$c: mount exit status $rc: $(cat "$TMP/err")"
		continue
	fi
	pass "$c: mounted"
	check "$c: prints the image path ($out)" test "$out" = "$img"
	pid=$(status_field "$mnt" .mount.pid)
	check "$c: status names a live serving process ($pid)" kill -0 "$pid"

	got=$($T sha256sum "$img" | cut -d' ' -f1)
	check "$c: sha256 of the mounted image is md's" test "$got" = "$want"
	check "$c: stat size is the array size" test "$(stat -c %s "$img")" -eq "$size"

	# the status file: JSON, the manifest's geometry, degraded or not
	ok=$($T jq --slurpfile m "$(manifest "$c")" '$m[0] as $m |
		.array.level == $m.level and .array.layout == $m.layout_number and
		.array.chunk_bytes == $m.chunk_bytes and .array.raid_disks == $m.raid_devices and
		.array.array_bytes == $m.array_bytes and
		.array.degraded == ($m.missing_roles | length > 0) and
		.array.verdict == (if ($m.missing_roles | length > 0) then "degraded" else "complete" end) and
		([.members[] | select(.in_use | not) | .role] == $m.missing_roles) and
		(.members | length) == $m.raid_devices and
		.io.bytes_served >= $m.array_bytes and .io.member_requests > 0 and
		.io.avg_member_request_bytes > 0 and .io.read_errors_fatal == 0 and
		.mount.read_only and .mount.read_bytes >= $m.array_bytes and .mount.read_errors == 0' \
		"$mnt/status" 2>&1)
	if [ "$ok" = true ]; then pass "$c: status JSON matches the manifest"; else fail "$c: status: $ok"; $T cat "$mnt/status"; fi
	if [ "$(mf "$c" '.missing_roles | length')" -gt 0 ]; then
		check "$c: status counts stripes rebuilt from parity" \
			test "$(status_field "$mnt" .io.stripes_rebuilt)" -gt 0
	fi

	# reads at odd places equal the same bytes of `raidimg cat` (in $TMP/ref)
	"$RAIDIMG" cat -o "$TMP/ref" "${imgs[@]}" 2>/dev/null
	for ol in 0:1 1:4095 4095:2 4096:4096 $((chunk - 1)):2 $((chunk - 3)):$((chunk + 7)) \
		  $((stripe - 1)):2 $((stripe - 100)):$((stripe + 300)) 12345:1048577 777777:3000001 \
		  $((size - 4095)):4095 $((size - 1)):1 $((size - 10)):4096 $size:10 $((size + 5000)):10; do
		o=${ol%:*}; l=${ol#*:}
		r=$($T "$READCHECK" "$img" "$TMP/ref" "$o" "$l"); rc=$?
		check "$c: read through the page cache at $o for $l ($r)" test $rc -eq 0
		r=$($T "$READCHECK" --direct "$img" "$TMP/ref" "$o" "$l"); rc=$?
		check "$c: O_DIRECT read at $o for $l ($r)" test $rc -eq 0
	done

	# concurrent readers: through the page cache and straight to the daemon
	r=$($T "$READCHECK" --random 150 --procs 4 --max-len 300000 --seed $((seed++)) "$img" "$TMP/ref"); rc=$?
	check "$c: 4 concurrent readers, random places ($r)" test $rc -eq 0
	r=$($T "$READCHECK" --direct --random 150 --procs 4 --max-len 1100000 --seed $((seed++)) "$img" "$TMP/ref"); rc=$?
	check "$c: 4 concurrent O_DIRECT readers, random places ($r)" test $rc -eq 0

	unmount_now "$mnt"
	check "$c: fusermount3 -u: no mount left" wait_until 10 not_mounted "$mnt"
	check "$c: fusermount3 -u: the serving process is gone" wait_until 10 pid_gone "$pid"
	after=$(shas "${imgs[@]}" | sort)
	check "$c: members unchanged" test "$before" = "$after"
done
finish
