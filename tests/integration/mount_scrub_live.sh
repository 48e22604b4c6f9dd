#!/bin/bash
# The mount's scrub worker while it runs (slowed down by its speed limits so
# that it is caught mid-way; no timing is asserted): `idle` stops it where it
# is (and the write returns once it has stopped), a second action is EBUSY,
# a limit written to sync_speed_max applies to the running scrub; many
# concurrent readers of the mounted image (random offsets and sizes up to
# 1 MiB, through the page cache and O_DIRECT) get exactly the bytes of
# `raidimg cat` while the scrub runs, and the scrub gets to the end
# meanwhile with the right answer; unmounting (fusermount3 -u, SIGTERM)
# while it runs stops it, joins the worker (the log gets the summary of the
# interrupted run) and leaves no process behind.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"
. "$(dirname "$0")/mount_scrub_lib.sh"
require_fuse
[ -x "$READCHECK" ] || { fail "$READCHECK is missing (make builds it)"; finish; }

c=r6-ls-5x6M-64K-baddata
mapfile -t imgs < <(members_shuffled "$c")
stripes=80                    # 5 MiB of data per member in 64 KiB chunks
"$RAIDIMG" cat -o "$TMP/ref" "${imgs[@]}" 2>/dev/null
check "the reference is what md reads" test "$(sha "$TMP/ref")" = "$(mf "$c" .expected_sha256)"

# ---- idle stops a running scrub; EBUSY; live limits ----
mnt=$(mountpoint_dir idle)
log=$TMP/idle.log
# 64 KiB/s per member: the first two batches (4 rows of 64 KiB) go at once,
# then ~4 s each
if $T "$RAIDIMG" mount --speed-limit-max 64 --scrub-log "$log" "${imgs[@]}" "$mnt" >/dev/null 2>"$TMP/err"; then
	pid=$(status_field "$mnt" .mount.pid)
	ctl "$mnt" sync_action check
	check "a slow check is running" wait_until 30 scrub_running "$mnt"
	check "sync_action reads check while it runs" test "$($T cat "$mnt/sync_action")" = check
	member_sectors=$((stripes * 65536 / 512))
	check "sync_completed reads 'DONE / $member_sectors' (sectors per member) while it runs" \
		grep -Eq "^[0-9]+ / $member_sectors\$" <($T cat "$mnt/sync_completed")
	check "sync_speed reads a number (KiB/s per member) while it runs" grep -Eq '^[0-9]+$' <($T cat "$mnt/sync_speed")
	# the bad stripe 9 is in the first batches (4 rows each): within seconds
	mismatch_8() { test "$($T cat "$mnt/mismatch_cnt")" = 8; }
	check "mismatch_cnt counts while the check runs (the bad stripe 9 is in the first batches)" \
		wait_until 30 mismatch_8
	check "check while checking: EBUSY" ctl_fails "$mnt" sync_action check "Device or resource busy"
	check "repair while checking: EBUSY" ctl_fails "$mnt" sync_action repair "Device or resource busy"
	check "status says a check is running" scrub_jq "$mnt" '.refused | test("a check is running")'
	check "status: the limit in force, position and percent" \
		scrub_jq "$mnt" ".speed_limit_max_bytes_per_second == 65536 and .next_stripe > 0 and .percent > 0 and .percent < 100 and .stripes_total == $stripes"
	check "echo idle > sync_action" ctl "$mnt" sync_action idle
	check "once idle returned: stopped mid-way" \
		scrub_jq "$mnt" ".action == \"idle\" and .state == \"stopped\" and .result == \"interrupted\" and .runs == 1 and .stripes_done > 0 and .stripes_done < $stripes"
	check "sync_action reads idle" test "$($T cat "$mnt/sync_action")" = idle
	check "the log has the interrupted run's summary" \
		jqt -s "[.[] | select(.type == \"summary\")] | length == 1 and .[0].result == \"interrupted\" and .[0].next_stripe < $stripes" "$log"
	# a new check, then the limit lifted while it runs: it finishes
	ctl "$mnt" sync_action check
	check "a second check runs, slowly" wait_until 30 scrub_running "$mnt"
	check "echo unlimited > sync_speed_max while it runs" ctl "$mnt" sync_speed_max unlimited
	check "the running check takes the new limit and finishes (it would need minutes at 64 KiB/s)" wait_scrub "$mnt" 2
	check "the second check covered everything and found the bad data" \
		scrub_jq "$mnt" ".result == \"mismatches\" and .mismatches == 1 and .stripes_done == $stripes and .recent_mismatches[0].kind == \"data\" and .speed_limit_max_bytes_per_second == 0"
	unmount "$mnt" "$pid"
else
	fail "mount: $(cat "$TMP/err")"
fi

# ---- readers while the scrub runs ----
mnt=$(mountpoint_dir readers)
# ~2 MiB/s per member: a few seconds for the whole array, enough to overlap
if $T "$RAIDIMG" mount --speed-limit-max 2M --speed-limit-min 1000 "${imgs[@]}" "$mnt" >/dev/null 2>"$TMP/err"; then
	pid=$(status_field "$mnt" .mount.pid)
	img=$mnt/oracle_oracle.img
	ctl "$mnt" sync_action check
	check "the check runs when the readers start" wait_until 30 scrub_running "$mnt"
	start=$(scrub_get "$mnt" .next_stripe)
	rounds=0 bad=0
	# rounds of 4 readers x 64 random reads of 1 B to 1 MiB, through the page
	# cache and with O_DIRECT in turns, until the scrub has ended
	while [ $rounds -lt 40 ]; do
		direct=$([ $((rounds % 2)) -eq 1 ] && echo --direct)
		# shellcheck disable=SC2086
		if ! $T "$READCHECK" $direct --random 64 --procs 4 --max-len 1048576 --seed $((rounds + 1)) \
			"$img" "$TMP/ref" >"$TMP/rc.out" 2>&1; then
			bad=$((bad + 1))
			echo "round $rounds: $(head -n3 "$TMP/rc.out")"
		fi
		rounds=$((rounds + 1))
		[ "$($T cat "$mnt/sync_action")" = idle ] && break
	done
	check "readers during the scrub got raidimg cat's bytes ($rounds rounds of 4x64 reads)" test $bad -eq 0
	check "the scrub was mid-way (stripe $start of $stripes) when the readers began" test "$start" -lt $stripes
	check "the scrub finished while they read" wait_scrub "$mnt" 1
	check "and found what it should" \
		scrub_jq "$mnt" ".result == \"mismatches\" and .mismatches == 1 and .stripes_done == $stripes and .recent_mismatches[0].array_offset == $(mf "$c" '.corruption[0].array_byte_offset')"
	pass "scrub meanwhile: $(scrub_get "$mnt" '"\(.seconds) s, \(.foreground_backoffs) back-offs to readers, \(.member_requests) member requests, \(.latency_probes) latency probes, \(.rate_decreases) rate decreases"')"
	check "status: the latency controller (default target, off once the run ended) and the readers it saw" \
		scrub_jq "$mnt" '.latency_target == "1.50x" and .latency_controller == "off" and .reader_requests > 0 and .reader_queue_depth >= 1 and (.latency_class | IN("4K", "64K", "512K", "large", "wakeup")) and .rate_limit_bytes_per_second >= 0 and .reader_p99_seconds >= 0 and .reader_idle_p99_seconds >= 0 and .latency_probes >= 0 and .rate_decreases >= 0'

	check "the whole image is still md's" test "$($T sha256sum "$img" | cut -d' ' -f1)" = "$(mf "$c" .expected_sha256)"
	unmount "$mnt" "$pid"
else
	fail "mount: $(cat "$TMP/err")"
fi

# ---- the readers' latency target ----
expect_fail "--latency-target 1 is refused (a factor above 1 is needed)" "--latency-target 1: give a factor of the readers' idle p99" \
	"$RAIDIMG" mount --latency-target 1 "${imgs[@]}" "$TMP"
mnt=$(mountpoint_dir latency)
if $T "$RAIDIMG" mount --latency-target 2ms "${imgs[@]}" "$mnt" >/dev/null 2>"$TMP/err"; then
	pid=$(status_field "$mnt" .mount.pid)
	check "sync_latency_target reads the option (2ms)" test "$($T cat "$mnt/sync_latency_target")" = 2000us
	check "echo 1.25 > sync_latency_target" ctl "$mnt" sync_latency_target 1.25
	check "it reads 1.25x, and status says so" \
		eval 'test "$($T cat "$mnt/sync_latency_target")" = 1.25x && scrub_jq "$mnt" ".latency_target == \"1.25x\" and .latency_controller == \"off\""'
	check "echo 0 > sync_latency_target: md's rule" ctl "$mnt" sync_latency_target 0
	check "it reads 0, status: md" \
		eval 'test "$($T cat "$mnt/sync_latency_target")" = 0 && scrub_jq "$mnt" ".latency_target == \"0\" and .latency_controller == \"md\""'
	check "a word that is no target: EINVAL" ctl_fails "$mnt" sync_latency_target fast "Invalid argument"
	check "status says why, the target unchanged" \
		eval 'scrub_jq "$mnt" ".refused | test(\"sync_latency_target\")" && test "$($T cat "$mnt/sync_latency_target")" = 0'
	check "0.5 (below idle) and 20s (too long): EINVAL" \
		eval 'ctl_fails "$mnt" sync_latency_target 0.5 "Invalid argument" && ctl_fails "$mnt" sync_latency_target 20s "Invalid argument"'
	unmount "$mnt" "$pid"
else
	fail "mount --latency-target: $(cat "$TMP/err")"
fi

# ---- unmount while scrubbing ----
for how in fusermount3 SIGTERM; do
	mnt=$(mountpoint_dir "unmount-$how")
	log=$TMP/$how.log
	if ! $T "$RAIDIMG" mount --speed-limit-max 16 --scrub-log "$log" "${imgs[@]}" "$mnt" >/dev/null 2>"$TMP/err"; then
		fail "$how: mount: $(cat "$TMP/err")"
		continue
	fi
	pid=$(status_field "$mnt" .mount.pid)
	ctl "$mnt" sync_action check
	check "$how: a check is running" wait_until 30 scrub_running "$mnt"
	if [ $how = fusermount3 ]; then unmount_now "$mnt"; else kill -TERM "$pid"; fi
	check "$how: the mount goes away" wait_until 20 not_mounted "$mnt"
	check "$how: the serving process ends, threads and all" wait_until 20 pid_gone "$pid"
	check "$how: the worker stopped the run and logged it before being joined" \
		jqt -s "[.[] | select(.type == \"summary\")] | length == 1 and .[0].result == \"interrupted\" and .[0].next_stripe < $stripes" "$log"
	check "$how: no raidimg process serves $mnt" not pgrep -f -- "$mnt\$"
done
finish
