# mount_scrub_lib.sh - helpers for the tests of the mount's scrub worker
# (sourced after lib.sh and mount_lib.sh).
export LC_ALL=C              # error messages are matched in English

# ctl MNT FILE WORD: write WORD to a control file as `echo WORD > FILE`
# does; the exit status is the write's, its message goes to $TMP/ctl.err.
ctl() {
	$T bash -c 'echo "$2" >"$1"' ctl "$1/$2" "$3" 2>"$TMP/ctl.err"
}

# ctl_fails MNT FILE WORD PATTERN: the write fails with a message matching
# PATTERN (strerror of the errno), e.g. "Operation not permitted".
ctl_fails() {
	if ctl "$1" "$2" "$3"; then
		echo "writing '$3' to $2 succeeded"
		return 1
	fi
	grep -q "$4" "$TMP/ctl.err" || { echo "error '$(cat "$TMP/ctl.err")' is not /$4/"; return 1; }
}

# scrub_jq MNT EXPR: jq -e EXPR on the status's "scrub" object
scrub_jq() { $T jq -e ".scrub | $2" "$1/status" >/dev/null; }
scrub_get() { $T jq -r ".scrub | $2" "$1/status"; }

# scrub_idle_after MNT RUNS: the scrub is idle and RUNS runs have ended
scrub_idle_after() {
	[ "$($T cat "$1/sync_action")" = idle ] && scrub_jq "$1" ".runs == $2 and .action == \"idle\""
}

# wait_scrub MNT RUNS: poll status (60 s deadline) until run RUNS ended
wait_scrub() { wait_until 60 scrub_idle_after "$1" "$2"; }

# scrub_running MNT: a scrub runs and has finished at least one batch
scrub_running() { scrub_jq "$1" '.state == "running" and .stripes_done > 0'; }

# matches_manifest JSONL MANIFEST: the mismatch records in JSONL are
# exactly the manifest's corruption records (member, image offset, length,
# kind, stripe, chunk offset; the array offset for data).
matches_manifest() {
	jq -s -e --slurpfile m "$2" '
		[.[] | select(.type == "mismatch")] as $mm |
		($m[0].corruption) as $cc |
		($mm | length) == ($cc | length) and
		all($cc[]; . as $c | [$mm[] | select(
			.role == $c.member and .image_offset == $c.image_byte_offset and
			.length == $c.length and (.image | endswith("/" + $c.image)) and
			.kind == ({"P": "P", "Q": "Q", "data": "data"}[$c.chunk_kind]) and
			.stripe == $c.chunk_row and .chunk_offset == $c.offset_in_chunk and
			($c.chunk_kind != "data" or .array_offset == $c.array_byte_offset))] | length == 1)
	' "$1" >/dev/null
}

# unmount MNT PID: fusermount3 -u, then wait for the serving process to end
unmount() {
	unmount_now "$1"
	wait_until 20 pid_gone "$2"
}

jqt() { jq -e "$@" >/dev/null; }   # jq as a test: true or false, quietly
