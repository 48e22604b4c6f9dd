#!/bin/bash
# A scrub killed with SIGKILL and resumed from its --checkpoint covers every
# stripe exactly once overall: the batches committed to the checkpoint before
# the kill and those of the resumed run tile the array with no gap and no
# overlap (RAIDIMG_SCRUB_TRACE logs both).  Mismatches found before the kill
# still count after the resume (exit 1).  SIGTERM stops cleanly with a
# checkpoint; a finished scrub removes its checkpoint.
. "$(dirname "$0")/lib.sh"

jqt() { jq -e "$@" >/dev/null; }

# wait_for FILE PATTERN N: until FILE has N lines matching PATTERN (60 s at most)
wait_for() {
	local i n
	for ((i = 0; i < 600; i++)); do
		n=$(grep -c "$2" "$1" 2>/dev/null)
		[ "${n:-0}" -ge "$3" ] && return 0
		sleep 0.1
	done
	return 1
}

# tiles TRACE1 P0 TRACE2 END: batches of TRACE1 ending at or below P0, then
# those of TRACE2, cover [0, END) exactly once
tiles() {
	{ awk -v p="$2" '$1 == "batch" && $3 <= p { print $2, $3 }' "$1"
	  awk '$1 == "batch" { print $2, $3 }' "$3"; } | sort -n |
	awk -v end="$4" 'BEGIN { at = 0 } { if ($1 != at) { print "gap or overlap at " at ": " $1 "-" $2; bad = 1 } at = $2 }
		END { if (at != end) { print "ends at " at " not " end; bad = 1 } exit bad }'
}

c=r5-ls-4x6M-64K-badparity        # the bad stripe is 5 of 80
dir=$(fixture_dir "$c")
mapfile -t imgs < <(members_shuffled "$c")
cp=$TMP/scrub.cp
# 1 stripe (64 KiB per member) a batch, 256 KiB/s: about 4 stripes a second
slow=(--json --checkpoint "$cp" --checkpoint-interval 1 --request-size 64K --speed-limit-min 0 --speed-limit-max 256K)

RAIDIMG_SCRUB_TRACE=$TMP/trace1 "$RAIDIMG" scrub "${slow[@]}" "${imgs[@]}" >"$TMP/out1" 2>&1 &
pid=$!
# kill once a checkpoint past the bad stripe is committed
for ((i = 0; i < 600; i++)); do
	p=$(awk '$1 == "checkpoint" { p = $2 } END { print p + 0 }' "$TMP/trace1" 2>/dev/null)
	[ "${p:-0}" -ge 8 ] && break
	sleep 0.1
done
exec 3>&2 2>/dev/null     # no "Killed" from the shell
kill -KILL $pid
wait $pid
exec 2>&3 3>&-
p0=$(awk '$1 == "checkpoint" { p = $2 } END { print p + 0 }' "$TMP/trace1")
check "killed mid-way: last committed checkpoint $p0 is past the bad stripe and before the end" \
	test "$p0" -ge 8 -a "$p0" -lt 80
check "the checkpoint file says next $p0" grep -qx "next $p0" "$cp"
check "the mismatch was reported before the kill" grep -q '"type":"mismatch"' "$TMP/out1"

RAIDIMG_SCRUB_TRACE=$TMP/trace2 "$RAIDIMG" scrub --json --checkpoint "$cp" "${imgs[@]}" >"$TMP/out2" 2>"$TMP/err2"; rc=$?
check "resumed scrub exits 1: the mismatch found before the kill still counts (got $rc)" test $rc -eq 1
check "resumed at the checkpoint" jqt "select(.type == \"summary\") | .resumed_at == $p0 and .next_stripe == 80 and .mismatches == 1" "$TMP/out2"
check "the resumed run reports no mismatch again (it starts past it)" bash -c "! grep -q '\"type\":\"mismatch\"' '$TMP/out2'"
if msg=$(tiles "$TMP/trace1" "$p0" "$TMP/trace2" 80); then
	pass "every stripe covered exactly once (committed batches of the killed run + the resumed run)"
else
	fail "coverage: $msg"
fi
check "the finished scrub removed its checkpoint" test ! -e "$cp"

# SIGTERM: stops after the batch in hand, saves the checkpoint, exit 2
c=r6-ls-5x6M-4K-md11              # 1280 stripes of 4 KiB chunks
mapfile -t imgs < <(members_shuffled "$c")
RAIDIMG_SCRUB_TRACE=$TMP/trace3 "$RAIDIMG" scrub --checkpoint "$cp" --request-size 16K --speed-limit-min 0 \
	--speed-limit-max 512K "${imgs[@]}" >"$TMP/out3" 2>"$TMP/err3" &
pid=$!
wait_for "$TMP/trace3" '^batch' 3
kill -TERM $pid
wait_pid $pid 60; rc=$?
check "SIGTERM: exit 2 (got $rc)" test $rc -eq 2
check "SIGTERM: says where and how to resume" grep -q "interrupted at stripe .*resume with --checkpoint" "$TMP/err3"
p3=$(awk '$1 == "checkpoint" { p = $2 } END { print p + 0 }' "$TMP/trace3")
check "SIGTERM: the checkpoint was saved at the last finished batch ($p3)" \
	test "$p3" = "$(awk '$1 == "batch" { p = $3 } END { print p }' "$TMP/trace3")"
RAIDIMG_SCRUB_TRACE=$TMP/trace4 "$RAIDIMG" scrub --checkpoint "$cp" "${imgs[@]}" >"$TMP/out4" 2>&1
check "resumed after SIGTERM: clean" test $? -eq 0
if msg=$(tiles "$TMP/trace3" "$p3" "$TMP/trace4" 1280); then
	pass "SIGTERM + resume: every stripe exactly once"
else
	fail "SIGTERM + resume coverage: $msg"
fi
finish
