#!/bin/bash
# Concurrent writers through an overlaid mount: 8 processes write at once,
# some with O_DIRECT (straight to the FUSE daemon's worker threads), into
# granules of their own and into 10 granules they all share (overlapping
# and adjacent ranges, unaligned), while 2 readers read the image.  Every
# write copies its bytes from one random "source" file at the same offset,
# so whatever the order, the result is known: the source's bytes in every
# range written, the array's elsewhere (the model).  Checked through the
# page cache and with O_DIRECT reads (the overlay's read path), after a
# remount, and with cat --overlay; the members never change.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"
require_fuse
[ -x "$READCHECK" ] || { fail "$READCHECK is missing (make builds it)"; finish; }

c=r5-ls-5x6M-128K-missing2      # degraded: the copies of partial granules are rebuilt from parity
mapfile -t imgs < <(members_shuffled "$c")
sums() { local f; for f in "${imgs[@]}"; do echo "$(sha "$f") $(stat -c %y "$f") $f"; done; }
sums >"$TMP/members.before"
"$RAIDIMG" cat "${imgs[@]}" >"$TMP/model" 2>/dev/null
size=$(stat -c %s "$TMP/model")
head -c "$size" /dev/urandom >"$TMP/source"
G=65536
OV=$TMP/conc.ovl

# The writes: "OFFSET LENGTH" lines for writer W (deterministic).
writes_of() {
	local w=$1 i
	for ((i = 0; i < 10; i++)); do                 # the shared granules 10..19
		g=$((10 + (i + w) % 10))
		echo "$((g * G + w * 7001 + i * 13)) $((3000 + w * 517))"
	done
	for ((i = 0; i < 4; i++)); do                  # granules of its own, across boundaries
		echo "$(((40 + w * 8 + i * 2) * G - 100 - w)) $((G / 2 + 300 + i * 77))"
	done
	echo "$((15 * G - 50)) 100"                    # the same bytes as everyone
}

writer() {
	local w=$1 off len flag=
	[ $((w % 2)) -eq 1 ] && flag=,direct
	while read -r off len; do
		dd if="$TMP/source" of="$img" bs=64K iflag=skip_bytes,count_bytes skip="$off" count="$len" \
			oflag=seek_bytes$flag seek="$off" conv=notrunc status=none || echo "writer $w: $off $len failed"
	done < <(writes_of "$w")
}

reader() {
	local i
	for ((i = 0; i < 20; i++)); do
		dd if="$img" of=/dev/null bs=1M iflag=direct status=none || echo "reader $1: read failed"
	done
}

mnt=$(mountpoint_dir conc)
img=$($T "$RAIDIMG" mount --threads 8 --overlay "$OV" "${imgs[@]}" "$mnt" 2>"$TMP/err"); rc=$?
check "mount --overlay on a degraded array ($(cat "$TMP/err"))" test $rc -eq 0
check "status: degraded" test "$(status_field "$mnt" .array.degraded)" = true

pids=()
for w in 0 1 2 3 4 5 6 7; do writer "$w" >"$TMP/writer$w.out" 2>&1 & pids+=($!); done
for r in 0 1; do reader "$r" >"$TMP/reader$r.out" 2>&1 & pids+=($!); done
for p in "${pids[@]}"; do wait_pid "$p" 300; done
check "no writer or reader failed" test -z "$(cat "$TMP"/writer*.out "$TMP"/reader*.out)"

# the model: the source's bytes in every range written
for w in 0 1 2 3 4 5 6 7; do
	while read -r off len; do
		dd if="$TMP/source" of="$TMP/model" bs=64K iflag=skip_bytes,count_bytes skip="$off" count="$len" \
			oflag=seek_bytes seek="$off" conv=notrunc status=none
	done < <(writes_of "$w")
done

check "the image is the model (page cache)" $T cmp "$img" "$TMP/model"
check "O_DIRECT scan is the model (the overlay's read path)" $T "$READCHECK" --direct --scan 1048576 "$img" "$TMP/model"
check "random O_DIRECT reads are the model" $T "$READCHECK" --direct --random 300 --procs 4 --max-len 300000 "$img" "$TMP/model"
check "status: granules_written is the granules the writes touched" test "$(status_field "$mnt" .overlay.granules_written)" = \
	"$(for w in 0 1 2 3 4 5 6 7; do writes_of "$w"; done | awk -v G=$G '{ for (g = int($1 / G); g <= int(($1 + $2 - 1) / G); g++) s[g] = 1 } END { print length(s) }')"
check "status: no write errors" test "$(status_field "$mnt" .overlay.write_errors)" = 0
pid=$(status_field "$mnt" .mount.pid)
unmount_now "$mnt"
check "unmounted" wait_until 10 pid_gone "$pid"

mnt=$(mountpoint_dir conc2)
img=$($T "$RAIDIMG" mount --overlay "$OV" "${imgs[@]}" "$mnt" 2>"$TMP/err"); rc=$?
check "remount ($(cat "$TMP/err"))" test $rc -eq 0
check "after the remount: O_DIRECT scan is the model" $T "$READCHECK" --direct --scan 262144 "$img" "$TMP/model"
pid=$(status_field "$mnt" .mount.pid)
unmount_now "$mnt"
wait_until 10 pid_gone "$pid"
check "cat --overlay is the model" cmp <("$RAIDIMG" cat --overlay "$OV" "${imgs[@]}" 2>/dev/null) "$TMP/model"
sums >"$TMP/members.after"
check "members: same sha256 and mtime" cmp "$TMP/members.before" "$TMP/members.after"
finish
