#!/bin/bash
# raidimg mount's life and edges: daemon and foreground; fusermount3 -u,
# SIGTERM to the daemon and SIGINT to a -f mount all unmount cleanly and end
# the process; a regular file as the mountpoint; --name and the default
# names; the image refuses writes; --allow-other; clear refusals (exit 2) for
# a missing mountpoint, a bad one, bad members, a missing /dev/fuse and a
# fusermount3 refusal; an ordinary user mounts through fusermount3; zstd
# seekable members; a range redundancy cannot cover reads as EIO, never as
# other bytes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"
require_fuse

c=r5-ls-4x8M-64K-md12
mapfile -t imgs < <(members_shuffled "$c")
want=$(mf "$c" .expected_sha256)
size=$(mf "$c" .array_bytes)

# ---- help ----
"$RAIDIMG" mount --help >"$TMP/help"; rc=$?
check "--help exits 0" test $rc -eq 0
for w in MOUNTPOINT --foreground --name --allow-other --threads status fusermount3 EIO; do
	check "--help mentions $w" grep -q -- "$w" "$TMP/help"
done

# ---- refusals ----
expect_fail "missing mountpoint" "nowhere.*does not exist" "$RAIDIMG" mount "${imgs[@]}" "$TMP/nowhere"
expect_fail "a character device as mountpoint" "/dev/null.*directory or a regular file" \
	"$RAIDIMG" mount "${imgs[@]}" /dev/null
expect_fail "only a mountpoint" "member images" "$RAIDIMG" mount "$(mountpoint_dir x)"
expect_fail "a member that does not exist" "nope.img" "$RAIDIMG" mount "${imgs[@]:1}" "$TMP/nope.img" \
	"$(mountpoint_dir bad)"
check "nothing mounted after a refused member" not_mounted "$TMP/mnt-bad"
expect_fail "--threads 1" "--threads" "$RAIDIMG" mount --threads 1 "${imgs[@]}" "$(mountpoint_dir t)"
expect_fail "--name with a slash" "a/b.*file name" "$RAIDIMG" mount --name a/b "${imgs[@]}" "$(mountpoint_dir n)"
expect_fail "--name status" "status" "$RAIDIMG" mount --name status "${imgs[@]}" "$(mountpoint_dir n)"
check "nothing mounted after refusals" not_mounted "$TMP/mnt-n"
expect_fail "a member image as the mountpoint" "mountpoint is one of the member images" \
	"$RAIDIMG" mount "${imgs[@]}" "${imgs[0]}"

# ---- daemon, SIGTERM ----
mnt=$(mountpoint_dir term)
out=$($T "$RAIDIMG" mount "${imgs[@]}" "$mnt" 2>"$TMP/err"); rc=$?
check "daemon mount returns 0 once ready ($(cat "$TMP/err"))" test $rc -eq 0
check "daemon mount: mounted when the command returns" is_mounted "$mnt"
check "default name from the md name oracle:oracle" test "$out" = "$mnt/oracle_oracle.img"
check "the directory lists the image, status and the scrub's control files" \
	test "$(ls "$mnt" | tr '\n' ' ')" = "array_state degraded mismatch_cnt oracle_oracle.img status sync_action sync_completed sync_latency_target sync_speed sync_speed_max sync_speed_min "
check "sha256" test "$($T sha256sum "$mnt/oracle_oracle.img" | cut -d' ' -f1)" = "$want"
pid=$(status_field "$mnt" .mount.pid)
check "the daemon is not the command's process (detached)" test "$pid" != "$$"
check "the daemon runs in its own session" test "$(ps -o sid= -p "$pid" | tr -d ' ')" = "$pid"
check "the daemon's working directory is /" test "$(readlink "/proc/$pid/cwd")" = /
check "status: not degraded" test "$(status_field "$mnt" .array.degraded)" = false
check "status: member paths are absolute" test "$(status_field "$mnt" '[.members[].path | startswith("/")] | all')" = true
kill -TERM "$pid"
check "SIGTERM: the mount goes away" wait_until 10 not_mounted "$mnt"
check "SIGTERM: the daemon ends" wait_until 10 pid_gone "$pid"

# ---- foreground, SIGINT ----
mnt=$(mountpoint_dir int)
$T "$RAIDIMG" mount -f "${imgs[@]}" "$mnt" >"$TMP/fg.out" 2>"$TMP/fg.err" &
fpid=$!
if wait_until 20 is_mounted "$mnt" && wait_until 10 test -s "$TMP/fg.out"; then
	pass "-f: mounted"
	check "-f: prints the image path when ready" test "$(cat "$TMP/fg.out")" = "$mnt/oracle_oracle.img"
	check "-f: serves from this very process" test "$(status_field "$mnt" .mount.pid)" = "$(pgrep -P "$fpid" || echo "$fpid")"
	check "-f: sha256" test "$($T sha256sum "$mnt/oracle_oracle.img" | cut -d' ' -f1)" = "$want"
	rpid=$(status_field "$mnt" .mount.pid)
	# status and a control file still open when the daemon stops: the
	# kernel never releases them (the sanitizer build's leak check fails
	# the exit status if the daemon does not free them itself)
	exec 3<"$mnt/status" 4<"$mnt/sync_action"
	kill -INT "$rpid"
	wait_pid "$fpid"; rc=$?
	exec 3<&- 4<&-
	check "-f: SIGINT ends the process with status 0, files still open ($(cat "$TMP/fg.err"))" test $rc -eq 0
	check "-f: SIGINT leaves no mount" not_mounted "$mnt"
	check "-f: the process is gone" pid_gone "$rpid"
else
	fail "-f: not mounted: $(cat "$TMP/fg.err")"
	kill "$fpid" 2>/dev/null
fi

# ---- foreground, fusermount3 -u ----
mnt=$(mountpoint_dir fgu)
$T "$RAIDIMG" mount --foreground --threads 2 "${imgs[@]}" "$mnt" >/dev/null 2>"$TMP/fg.err" &
fpid=$!
if wait_until 20 is_mounted "$mnt"; then
	check "-f --threads 2: sha256" test "$($T sha256sum "$mnt/oracle_oracle.img" | cut -d' ' -f1)" = "$want"
	check "-f --threads 2: status says so" test "$(status_field "$mnt" .mount.max_threads)" = 2
	unmount_now "$mnt"
	wait_pid "$fpid"; rc=$?
	check "-f: fusermount3 -u ends the process with status 0 ($(cat "$TMP/fg.err"))" test $rc -eq 0
	check "-f: no mount left" not_mounted "$mnt"
else
	fail "-f: not mounted: $(cat "$TMP/fg.err")"
	kill "$fpid" 2>/dev/null
fi

# ---- a regular file as the mountpoint: it shows the image ----
mp=$TMP/image-here.img
echo "the file under the mount" >"$mp"
mounts_made+=("$mp")
expect_fail "a non-empty file as the mountpoint" "image-here.img: the mountpoint is a file of 25 bytes.*--nonempty" \
	"$RAIDIMG" mount "${imgs[@]}" "$mp"
out=$($T "$RAIDIMG" mount --nonempty "${imgs[@]}" "$mp" 2>"$TMP/err"); rc=$?
check "file mountpoint: mounted ($(cat "$TMP/err"))" test $rc -eq 0
check "file mountpoint: prints the file's path" test "$out" = "$mp"
check "file mountpoint: a regular file" test -f "$mp"
check "file mountpoint: size is the array's" test "$(stat -c %s "$mp")" -eq "$size"
check "file mountpoint: sha256" test "$($T sha256sum "$mp" | cut -d' ' -f1)" = "$want"
r=$($T "$READCHECK" --direct --random 100 --procs 4 "$mp" "$mp"); rc=$?
check "file mountpoint: concurrent O_DIRECT readers agree with the page cache ($r)" test $rc -eq 0
unmount_now "$mp"
check "file mountpoint: unmounted" wait_until 10 not_mounted "$mp"
check "file mountpoint: the file is back as it was" test "$(cat "$mp")" = "the file under the mount"

# ---- --name, --allow-other, the default name without an md name ----
mnt=$(mountpoint_dir name)
out=$($T "$RAIDIMG" mount --name evidence.dd --allow-other "${imgs[@]}" "$mnt" 2>"$TMP/err")
check "--name: the image is named so" test "$out" = "$mnt/evidence.dd" -a -f "$mnt/evidence.dd"
check "--allow-other: the mount has allow_other" \
	grep -q "^[^ ]* $mnt fuse.raidimg .*allow_other" /proc/mounts
check "--allow-other: status says so" test "$(status_field "$mnt" .mount.allow_other)" = true

# the image is read-only; so are the directory and status
check "writing into the image fails" not $T dd if=/dev/zero of="$mnt/evidence.dd" bs=4096 count=1 conv=notrunc status=none 2>/dev/null
check "truncating the image fails" not $T truncate -s 0 "$mnt/evidence.dd" 2>/dev/null
check "creating a file fails" not $T touch "$mnt/new" 2>/dev/null
check "writing status fails" not $T sh -c "echo x > '$mnt/status'" 2>/dev/null
check "the image is still intact" test "$($T sha256sum "$mnt/evidence.dd" | cut -d' ' -f1)" = "$want"
unmount_now "$mnt"

c0=r5-la-4x6M-32K-md090
mapfile -t imgs0 < <(members_shuffled "$c0")
mnt=$(mountpoint_dir md090)
out=$($T "$RAIDIMG" mount "${imgs0[@]}" "$mnt" 2>"$TMP/err")
check "md 0.90 has no name: array.img" test "$out" = "$mnt/array.img"
check "md 0.90: sha256" test "$($T sha256sum "$mnt/array.img" | cut -d' ' -f1)" = "$(mf "$c0" .expected_sha256)"
unmount_now "$mnt"

# manual geometry (relative member paths, made absolute for the daemon)
(
	cd "$(dirname "${imgs0[0]}")" || exit 1
	mnt=$(mountpoint_dir manual)
	$T "$RAIDIMG" mount --level 5 --layout la --chunk 32K --member-size "$(mf "$c0" .component_size_kib)K" member0.img member1.img member2.img member3.img \
		"$mnt" >/dev/null 2>"$TMP/err"
) ; rc=$?
mnt=$TMP/mnt-manual
mounts_made+=("$mnt")
check "manual geometry, relative paths: mounted ($(cat "$TMP/err"))" test $rc -eq 0
check "manual geometry: sha256" test "$($T sha256sum "$mnt/array.img" | cut -d' ' -f1)" = "$(mf "$c0" .expected_sha256)"
check "manual geometry: status member paths absolute" \
	test "$(status_field "$mnt" '[.members[].path | startswith("/")] | all')" = true
unmount_now "$mnt"

# zstd seekable members (opened before the daemon forks; read by many threads)
Z=$TMP/zst
mkdir -p "$Z"
for img in "${imgs[@]}"; do
	"$RAIDIMG" compress --frame-size 192K -o "$Z/$(basename "$img").zst" "$img" 2>/dev/null
done
mnt=$(mountpoint_dir zst)
$T "$RAIDIMG" mount "$Z"/*.zst "$mnt" >/dev/null 2>"$TMP/err"; rc=$?
check "zstd members: mounted ($(cat "$TMP/err"))" test $rc -eq 0
check "zstd members: sha256" test "$($T sha256sum "$mnt/oracle_oracle.img" | cut -d' ' -f1)" = "$want"
"$RAIDIMG" cat -o "$TMP/ref" "${imgs[@]}" 2>/dev/null
r=$($T "$READCHECK" --direct --random 100 --procs 4 --max-len 1100000 "$mnt/oracle_oracle.img" "$TMP/ref"); rc=$?
check "zstd members: 4 concurrent O_DIRECT readers ($r)" test $rc -eq 0
unmount_now "$mnt"

# ---- no /dev/fuse (a private mount namespace with an empty /dev) ----
if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
	mnt=$(mountpoint_dir nofuse)
	expect_fail "no /dev/fuse" "/dev/fuse.*(No such file|not available)" \
		unshare -m --propagation private sh -c 'mount -t tmpfs none /dev && exec "$@"' sh \
		"$RAIDIMG" mount "${imgs[@]}" "$mnt"
else
	echo "note: not checking a missing /dev/fuse (needs root and unshare -m)"
fi

# ---- an ordinary user, through fusermount3 ----
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null && getent passwd nobody >/dev/null; then
	NOBODY=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups --)
	U=$TMP/user
	mkdir -p "$U/mnt" && cp "${imgs[@]}" "$U/" && chmod 755 "$TMP" "$U" && chmod 644 "$U"/*.img
	chown nobody "$U/mnt"
	mounts_made+=("$U/mnt")
	# fuse3's udev rule makes /dev/fuse 0666; a machine without udev (these
	# containers) leaves it 0600, root's only.  Then an ordinary user is told
	# why, and for the checks below it gets the mode the package intends,
	# put back as it was when this test ends.
	fuse_mode=$(stat -c %a /dev/fuse)
	if [ $((8#$fuse_mode & 8#006)) -ne 6 ]; then
		expect_fail "ordinary user, /dev/fuse $fuse_mode: refused, saying why" "/dev/fuse: Permission denied" \
			"${NOBODY[@]}" "$RAIDIMG" mount "$U"/member*.img "$U/mnt"
		check "ordinary user, /dev/fuse $fuse_mode: nothing mounted" not_mounted "$U/mnt"
		echo "note: /dev/fuse is mode $fuse_mode here (no udev applied fuse3's rule): 666 for these checks, $fuse_mode again after"
		cleanup_hooks+=("chmod $fuse_mode /dev/fuse")
		chmod 666 /dev/fuse
	fi
	out=$($T "${NOBODY[@]}" "$RAIDIMG" mount "$U"/member*.img "$U/mnt" 2>"$TMP/err"); rc=$?
	check "ordinary user: mounted through fusermount3 ($(cat "$TMP/err"))" test $rc -eq 0
	check "ordinary user: sha256" test "$($T "${NOBODY[@]}" sha256sum "$U/mnt/oracle_oracle.img" | cut -d' ' -f1)" = "$want"
	check "ordinary user: the mount is theirs" \
		grep -q "^[^ ]* $U/mnt fuse.raidimg .*user_id=$(id -u nobody)" /proc/mounts
	pid=$($T "${NOBODY[@]}" jq .mount.pid "$U/mnt/status")
	check "ordinary user: status names the daemon ($pid)" kill -0 "$pid"
	user_unmount() { "${NOBODY[@]}" fusermount3 -u "$1" 2>/dev/null; not_mounted "$1"; }
	check "ordinary user: fusermount3 -u unmounts" wait_until 10 user_unmount "$U/mnt"
	check "ordinary user: the daemon ends" wait_until 10 pid_gone "$pid"
	mkdir -p "$U/rootonly" && chmod 755 "$U/rootonly"
	mounts_made+=("$U/rootonly")
	expect_fail "fusermount3 refuses (no write access to the mountpoint)" "user has no write access to mountpoint $U/rootonly" \
		"${NOBODY[@]}" "$RAIDIMG" mount "$U"/member*.img "$U/rootonly"
	check "fusermount3 refusal: nothing mounted" not_mounted "$U/rootonly"
else
	echo "note: not checking an ordinary user (needs root to switch to nobody, or run the suite as a user)"
fi

# ---- EIO where redundancy cannot cover: never other bytes ----
W=$TMP/eio
mkdir -p "$W"
head -c $((6 * 1024 * 1024)) /dev/urandom >"$W/data"
"$RAIDIMG" create --level 5 --devices 4 --chunk 64K --from "$W/data" -o "$W/arr" >/dev/null 2>&1
"$RAIDIMG" examine --json "$W"/arr/member*.img >"$W/ex.json" 2>/dev/null
asize=$(jq .array.array_bytes "$W/ex.json")
# member 3 gone, member 1 cut after 3/4 of its data: the last quarter of the
# array has stripes with two chunks lost, more than RAID5 can rebuild
cut=$(jq '.array.members[1].data_offset_bytes + (.array.member_bytes / 4 * 3 / 65536 | floor) * 65536' "$W/ex.json")
rm "$W/arr/member3.img"
truncate -s "$cut" "$W/arr/member1.img"
head -c "$asize" "$W/data" >"$W/ref"
truncate -s "$asize" "$W/ref"     # the array is the data then zeros
mnt=$(mountpoint_dir eio)
$T "$RAIDIMG" mount "$W"/arr/member*.img "$mnt" >/dev/null 2>"$TMP/err"; rc=$?
check "degraded + truncated member: mounts ($(head -c 200 "$TMP/err"))" test $rc -eq 0
r=$($T "$READCHECK" --direct --scan 1048576 "$mnt/raidimg.img" "$W/ref"); rc=$?
check "O_DIRECT scan: bytes before the hole are right, then EIO ($r)" \
	sh -c "[ $rc -eq 3 ] && echo '$r' | grep -q 'Input/output error'"
r=$($T "$READCHECK" --scan 65536 "$mnt/raidimg.img" "$W/ref"); rc=$?
check "page-cache scan: bytes before the hole are right, then EIO ($r)" \
	sh -c "[ $rc -eq 3 ] && echo '$r' | grep -q 'Input/output error'"
bad=$(echo "$r" | sed -n 's/^error at \([0-9]*\):.*/\1/p')
check "the hole starts in the last quarter ($bad of $asize)" test "${bad:-0}" -ge $((asize / 2))
r=$($T "$READCHECK" --direct "$mnt/raidimg.img" "$W/ref" "${bad:-0}" 4096); rc=$?
check "a 4 KiB read inside the hole is EIO ($r)" test $rc -eq 3
check "cat stops at the same place" sh -c "'$RAIDIMG' cat '$W'/arr/member*.img 2>&1 >/dev/null | grep -q 'offset $bad'"
check "status counts the read errors" test "$(status_field "$mnt" '.mount.read_errors > 0 and .io.read_errors_fatal > 0')" = true
unmount_now "$mnt"

# ---- an address-space limit (ulimit -v): fewer threads, said in --log ----
# libfuse ends the session when a worker cannot allocate its request
# buffer: with 64 threads under 200 MiB every reader got ENOTCONN.  The
# mount now starts the threads that fit, says so on stderr (the --log file
# of a daemon) and in status, and serves every O_DIRECT reader.  ASan's
# shadow memory cannot live under such a limit.
if ldd "$RAIDIMG" | grep -q libasan; then
	echo "# ulimit -v: skipped under AddressSanitizer"
else
	ref=$TMP/lim.ref
	"$RAIDIMG" cat "${imgs[@]}" >"$ref" 2>/dev/null
	for lc in healthy degraded; do
		if [ $lc = healthy ]; then limgs=("${imgs[@]}"); else mapfile -t limgs < <(members_shuffled r6-ls-6x6M-64K-missing1-4); fi
		[ $lc = healthy ] || "$RAIDIMG" cat "${limgs[@]}" >"$ref" 2>/dev/null
		mnt=$(mountpoint_dir lim-$lc)
		log=$TMP/lim-$lc.log
		(ulimit -v 204800; exec $T "$RAIDIMG" mount --threads 64 --log "$log" "${limgs[@]}" "$mnt") \
			>"$TMP/lim.out" 2>"$TMP/lim.err"; rc=$?
		check "ulimit -v, $lc: mounts ($(head -c 300 "$TMP/lim.err"))" test $rc -eq 0
		check "ulimit -v, $lc: the log says how many threads fit" \
			grep -q -- "--threads 64: [0-9]* fit in the address-space limit (ulimit -v 204800 KiB): serving with" "$log"
		check "ulimit -v, $lc: status has threads_asked 64 and fewer max_threads" \
			test "$(status_field "$mnt" '.mount.threads_asked == 64 and .mount.max_threads < 64')" = true
		r=$($T "$READCHECK" --direct --random 40 --procs 16 --max-len 1048576 "$(cat "$TMP/lim.out")" "$ref"); rc=$?
		check "ulimit -v, $lc: 16 O_DIRECT readers of up to 1 MiB get the right bytes ($(echo "$r" | head -3))" \
			test $rc -eq 0
		check "ulimit -v, $lc: still mounted" is_mounted "$mnt"
		unmount_now "$mnt"
	done
fi

# ---- --log: a file of the user's, appended to; never a member ----
mnt=$(mountpoint_dir log)
echo "before" >"$TMP/mount.log"
$T "$RAIDIMG" mount --log "$TMP/mount.log" "${imgs[@]}" "$mnt" >/dev/null 2>"$TMP/err"; rc=$?
check "--log: mounts ($(head -c 200 "$TMP/err"))" test $rc -eq 0
pid=$(status_field "$mnt" .mount.pid)
check "--log: the daemon's stderr is the log" test "$(readlink "/proc/$pid/fd/2")" = "$(realpath "$TMP/mount.log")"
unmount_now "$mnt"
check "--log: appended to, not replaced" test "$(head -1 "$TMP/mount.log")" = before
h=$(sha "${imgs[0]}")
expect_fail "--log naming a member" "${imgs[0]}.*member" \
	"$RAIDIMG" mount --log "${imgs[0]}" "${imgs[@]}" "$(mountpoint_dir log2)"
check "--log naming a member: the member is unchanged" test "$(sha "${imgs[0]}")" = "$h"
check "--log naming a member: nothing mounted" not_mounted "$TMP/mnt-log2"
finish
