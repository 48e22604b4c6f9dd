#!/bin/bash
# The scrub worker of raidimg mount, through its md-like control files, on
# every real-md fixture: `echo check > sync_action` starts a check, status
# is polled until it is idle again, and then status (counts, last records),
# mismatch_cnt and the --scrub-log report exactly the manifest's corruption,
# the very records `raidimg scrub --json` prints; arrays without redundancy
# left refuse the check (EINVAL, the reason in status).  Then on one mount:
# bad words (EINVAL), repair without --allow-repair (EPERM, status says
# why, nothing written), the speed-limit files (KiB/s, read and written,
# from --speed-limit-min/max), mismatch_cnt read-only; and the refusals at
# mount time (exit 2, nothing mounted).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"
. "$(dirname "$0")/mount_scrub_lib.sh"
require_fuse

# ---- help ----
"$RAIDIMG" mount --help >"$TMP/help"; rc=$?
check "--help exits 0" test $rc -eq 0
for w in sync_action sync_speed_min sync_speed_max mismatch_cnt --allow-repair --scrub-log \
	--speed-limit-min --speed-limit-max EPERM idle check repair KiB/s; do
	check "--help mentions $w" grep -q -- "$w" "$TMP/help"
done

# ---- a check through the mount on every fixture ----
for c in $(fixture_cases); do
	mapfile -t imgs < <(members_shuffled "$c")
	before=$(shas "${imgs[@]}" | sort)
	mnt=$(mountpoint_dir "$c")
	log=$TMP/$c.log
	if ! $T "$RAIDIMG" mount --scrub-log "$log" "${imgs[@]}" "$mnt" >/dev/null 2>"$TMP/err"; then
		fail "$c: mount: $(cat "$TMP/err")"
		continue
	fi
	pid=$(status_field "$mnt" .mount.pid)
	level=$(mf "$c" .level)
	nmissing=$(mf "$c" '.missing_roles | length')
	ncorrupt=$(mf "$c" '.corruption | length')
	stripes=$(status_field "$mnt" .array.stripes)
	redundancy=$([ "$level" = 6 ] && echo 2 || echo 1)

	check "$c: the directory lists the control files" \
		test "$(ls "$mnt" | grep -v '\.img$' | tr '\n' ' ')" = "array_state degraded mismatch_cnt status sync_action sync_completed sync_latency_target sync_speed sync_speed_max sync_speed_min "
	check "$c: sync_action reads idle before any scrub" test "$($T cat "$mnt/sync_action")" = idle
	check "$c: degraded reads $nmissing (md's count of members missing)" test "$($T cat "$mnt/degraded")" = "$nmissing"
	check "$c: array_state reads readonly (members opened read-only)" test "$($T cat "$mnt/array_state")" = readonly
	check "$c: sync_completed and sync_speed read none when idle" \
		test "$($T cat "$mnt/sync_completed") $($T cat "$mnt/sync_speed")" = "none none"
	check "$c: status: a scrub object, idle, no run yet" \
		scrub_jq "$mnt" ".action == \"idle\" and .state == \"idle\" and .runs == 0 and .result == null and .stripes_total == $stripes and .log == \"$log\""
	if [ "$nmissing" -ge "$redundancy" ]; then
		check "$c: no redundancy left: check is refused (EINVAL)" \
			ctl_fails "$mnt" sync_action check "Invalid argument"
		check "$c: status says why" scrub_jq "$mnt" '.refused | test("no redundancy left")'
		check "$c: still idle" test "$($T cat "$mnt/sync_action")" = idle
		unmount "$mnt" "$pid"
		continue
	fi
	check "$c: echo check > sync_action" ctl "$mnt" sync_action check
	if ! wait_scrub "$mnt" 1; then
		fail "$c: the check did not end: $($T jq -c .scrub "$mnt/status")"
		unmount "$mnt" "$pid"
		continue
	fi
	want=$([ "$ncorrupt" -gt 0 ] && echo mismatches || echo clean)
	check "$c: the check covered every stripe: $want, $ncorrupt mismatch(es)" \
		scrub_jq "$mnt" ".state == \"done\" and .mode == \"check\" and .result == \"$want\" and .mismatches == $ncorrupt and .stripes_done == $stripes and .stripes_total == $stripes and .percent == 100 and .next_stripe == $stripes and .stripes_unchecked == 0 and .writes == 0"
	$T jq -c '.scrub.recent_mismatches[]' "$mnt/status" >"$TMP/recent.jsonl"
	if matches_manifest "$TMP/recent.jsonl" "$(manifest "$c")"; then
		pass "$c: status's last mismatch records = the manifest's corruption"
	else
		fail "$c: status's mismatch records differ from the manifest: $(cat "$TMP/recent.jsonl")"
	fi
	check "$c: member requests of about 1 MiB, counted" \
		scrub_jq "$mnt" '.member_requests > 0 and .avg_member_request_bytes >= 900 * 1024'
	md_cnt=$(mf "$c" '.md_mismatch_cnt_after_corruption // 0')
	check "$c: mismatch_cnt = md's $md_cnt" test "$($T cat "$mnt/mismatch_cnt")" = "$md_cnt"
	if matches_manifest "$log" "$(manifest "$c")"; then
		pass "$c: the scrub log's mismatch records = the manifest's corruption"
	else
		fail "$c: the log differs from the manifest: $(cat "$log")"
	fi
	check "$c: the log ends with the run's summary" \
		jq -e "select(.type == \"summary\") | .result == \"$want\" and .mode == \"check\" and .next_stripe == $stripes and .md_mismatch_cnt == $md_cnt" "$log" >/dev/null
	# the same records as the standalone scrub (same absolute image paths)
	"$RAIDIMG" scrub --json "${imgs[@]}" 2>/dev/null | grep '"type":"mismatch"' | sort >"$TMP/standalone"
	grep '"type":"mismatch"' "$log" | sort >"$TMP/logged"
	check "$c: the log's records are raidimg scrub --json's, byte for byte" cmp -s "$TMP/standalone" "$TMP/logged"
	unmount "$mnt" "$pid"
	check "$c: unmounted, the daemon ended" not_mounted "$mnt"
	after=$(shas "${imgs[@]}" | sort)
	check "$c: members unchanged" test "$before" = "$after"
done

# ---- words, repair refused, speed limits (RAID5, bad parity) ----
c=r5-ls-4x6M-64K-badparity
mapfile -t imgs < <(members_shuffled "$c")
before=$(shas "${imgs[@]}" | sort)
mnt=$(mountpoint_dir words)
if $T "$RAIDIMG" mount --speed-limit-min 2000 --speed-limit-max 50M "${imgs[@]}" "$mnt" >/dev/null 2>"$TMP/err"; then
	pid=$(status_field "$mnt" .mount.pid)
	check "control files: sync_action and the limits writable, md's other words not" \
		test "$(stat -c %A "$mnt/sync_action" "$mnt/sync_speed_min" "$mnt/sync_speed_max" "$mnt/mismatch_cnt" "$mnt/sync_completed" "$mnt/sync_speed" "$mnt/degraded" "$mnt/array_state" | tr '\n' ' ')" = "-rw-r--r-- -rw-r--r-- -rw-r--r-- -r--r--r-- -r--r--r-- -r--r--r-- -r--r--r-- -r--r--r-- "
	check "a word that is not an action: EINVAL" ctl_fails "$mnt" sync_action bogus "Invalid argument"
	check "status names the words" scrub_jq "$mnt" '.refused | test("check, repair and idle")'
	check "two words: EINVAL" ctl_fails "$mnt" sync_action "check repair" "Invalid argument"
	check "an empty write: EINVAL" ctl_fails "$mnt" sync_action "" "Invalid argument"
	check "repair without --allow-repair: EPERM" ctl_fails "$mnt" sync_action repair "Operation not permitted"
	check "status says why: --allow-repair, read-only members" \
		scrub_jq "$mnt" '.refused | test("--allow-repair") and test("read-only")'
	check "status: repair is not allowed" scrub_jq "$mnt" '.repair_allowed == false and .action == "idle" and .runs == 0'
	check "still idle" test "$($T cat "$mnt/sync_action")" = idle
	check "idle when idle is fine" ctl "$mnt" sync_action idle
	check "a word accepted clears the refusal" scrub_jq "$mnt" '.refused == null'
	check "mismatch_cnt refuses writes" not ctl "$mnt" mismatch_cnt 0
	check "--speed-limit-min 2000: sync_speed_min reads 2000 (KiB/s)" test "$($T cat "$mnt/sync_speed_min")" = 2000
	check "--speed-limit-max 50M: sync_speed_max reads 51200" test "$($T cat "$mnt/sync_speed_max")" = 51200
	check "status shows both limits" \
		scrub_jq "$mnt" '.speed_limit_min_bytes_per_second == 2048000 and .speed_limit_max_bytes_per_second == 52428800'
	ctl "$mnt" sync_speed_min 300
	check "echo 300 > sync_speed_min" test "$($T cat "$mnt/sync_speed_min")" = 300
	ctl "$mnt" sync_speed_max 1M
	check "echo 1M > sync_speed_max: 1024 KiB/s" test "$($T cat "$mnt/sync_speed_max")" = 1024
	ctl "$mnt" sync_speed_max unlimited
	check "echo unlimited > sync_speed_max: 0" test "$($T cat "$mnt/sync_speed_max")" = 0
	check "a bad rate: EINVAL" ctl_fails "$mnt" sync_speed_min fast "Invalid argument"
	check "status says what a rate is" scrub_jq "$mnt" '.refused | test("sync_speed_min") and test("KiB/s")'
	check "the limits stay as they were" scrub_jq "$mnt" '.speed_limit_min_bytes_per_second == 307200 and .speed_limit_max_bytes_per_second == 0'
	# a check uses the limits of the moment and reports the same
	ctl "$mnt" sync_action check
	check "the check ends" wait_scrub "$mnt" 1
	check "RAID5 bad parity: 1 mismatch, P" scrub_jq "$mnt" '.result == "mismatches" and .recent_mismatches[0].kind == "P"'
	unmount "$mnt" "$pid"
else
	fail "mount: $(cat "$TMP/err")"
fi
check "nothing was written to the members" test "$before" = "$(shas "${imgs[@]}" | sort)"

# ---- refusals when mounting ----
touch "$TMP/imgfile"
expect_fail "scrub options with a file as the mountpoint" "directory as the mountpoint" \
	"$RAIDIMG" mount --scrub-log "$TMP/x.log" "${imgs[@]}" "$TMP/imgfile"
check "... no log made" test ! -e "$TMP/x.log"
expect_fail "--name sync_action" "sync_action.*control files" \
	"$RAIDIMG" mount --name sync_action "${imgs[@]}" "$(mountpoint_dir n1)"
expect_fail "--scrub-log a member image" "member1.img: is the image .* given as input; refusing to write over evidence \(the scrub log\)" \
	"$RAIDIMG" mount --scrub-log "${imgs[1]}" "${imgs[@]}" "$(mountpoint_dir n2)"
expect_fail "--scrub-log in a missing directory" "nodir/x.log.*scrub log" \
	"$RAIDIMG" mount --scrub-log "$TMP/nodir/x.log" "${imgs[@]}" "$(mountpoint_dir n3)"
expect_fail "--allow-repair on read-only images" "member.\.img.*(read-only|Permission denied)" \
	"$RAIDIMG" mount --allow-repair "${imgs[@]}" "$(mountpoint_dir n4)"
expect_fail "--speed-limit-max nonsense" "--speed-limit-max" \
	"$RAIDIMG" mount --speed-limit-max fast "${imgs[@]}" "$(mountpoint_dir n5)"
for d in imgfile mnt-n1 mnt-n2 mnt-n3 mnt-n4 mnt-n5; do
	check "nothing mounted on $d" not_mounted "$TMP/$d"
done
check "the members are still unchanged" test "$before" = "$(shas "${imgs[@]}" | sort)"
finish
