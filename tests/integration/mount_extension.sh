#!/bin/bash
# The extension points of the mount (src/fuse_fs.h), as a scrub engine will
# use them, through tests/helpers/fuse_fs_demo: a writable control file next
# to the image and status (echo WORD > control; cat control), names kept
# unique, a worker thread started once serving and stopped and joined
# exactly once at unmount, by fusermount3 -u and by SIGTERM.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"
require_fuse
DEMO=$HELPERS/fuse_fs_demo

c=r6-ls-6x6M-64K-missing1-4
mapfile -t imgs < <(members_shuffled "$c")
want=$(mf "$c" .expected_sha256)

for how in fusermount3 SIGTERM; do
	mnt=$(mountpoint_dir "$how")
	# a file of its own: with one file for both runs, the wait below could
	# find the first run's "ready" before the second run's redirection
	# (made in the child, after the fork) has truncated it
	err=$TMP/demo-$how.err
	$T "$DEMO" "${imgs[@]}" "$mnt" 2>"$err" &
	pid=$!
	if ! wait_until 20 grep -q '^ready' "$err"; then
		fail "$how: the demo mount is not ready: $(cat "$err")"
		kill "$pid" 2>/dev/null
		continue
	fi
	# (shown: what the demo had printed - a CI run once failed the former
	# "first line" form of this check without saying what it saw)
	ws=$(grep -n -m1 '^worker started$' "$err" | cut -d: -f1)
	rl=$(grep -n -m1 '^ready' "$err" | cut -d: -f1)
	check "$how: the worker started before the mount was ready (lines ${ws:-none} and ${rl:-none} of: $(head -c 300 "$err" | tr '\n\0' '|.'))" \
		test -n "$ws" -a -n "$rl" -a "${ws:-0}" -lt "${rl:-0}"
	check "$how: the directory lists image, status and control" \
		test "$(ls "$mnt" | tr '\n' ' ')" = "control demo.img status "
	check "$how: control is writable, the others are not" \
		test "$(stat -c %A "$mnt/control" "$mnt/status" "$mnt/demo.img" | tr '\n' ' ')" = "-rw-r--r-- -r--r--r-- -r--r--r-- "
	check "$how: control reads idle at first" test "$($T cat "$mnt/control")" = "idle writes=0"
	$T sh -c "echo check > '$mnt/control'"
	check "$how: echo check > control" test "$($T cat "$mnt/control")" = "check writes=1"
	$T sh -c "echo repair >> '$mnt/control'"
	check "$how: echo repair >> control" test "$($T cat "$mnt/control")" = "repair writes=2"
	check "$how: the image is served as usual" test "$($T sha256sum "$mnt/demo.img" | cut -d' ' -f1)" = "$want"
	check "$how: status is there" test "$(status_field "$mnt" .array.degraded)" = true
	check "$how: status still refuses writes" not $T sh -c "echo x > '$mnt/status'" 2>/dev/null
	if [ $how = fusermount3 ]; then unmount_now "$mnt"; else kill -TERM "$pid"; fi
	wait_pid "$pid"; rc=$?
	check "$how: the demo ends with status 0 ($(tail -n1 "$err"))" test $rc -eq 0
	check "$how: the worker was stopped once, seeing the last word" \
		test "$(grep -c '^worker stopped (control=repair)$' "$err")" -eq 1
	check "$how: no mount left" not_mounted "$mnt"
done
finish
