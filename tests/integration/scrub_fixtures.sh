#!/bin/bash
# raidimg scrub on every real-md fixture: the corrupted ones report exactly
# the place(s) in their manifest's corruption records (member, image offset,
# length, kind; for RAID6 data corruption the member at fault) and exit 1;
# the clean ones report nothing and exit 0; the degraded ones with no
# redundancy left are refused (exit 2).  Batch shapes (request size, column
# slices, one reader) do not change the answer; no image is modified.
. "$(dirname "$0")/lib.sh"

jqt() { jq -e "$@" >/dev/null; }

# matches_manifest JSONL MANIFEST: every corruption record has exactly one
# mismatch at its member, image offset and length, of its kind.
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

for c in $(fixture_cases); do
	mapfile -t imgs < <(members_shuffled "$c")
	before=$(shas "${imgs[@]}" | sort)
	level=$(mf "$c" .level)
	nmissing=$(mf "$c" '.missing_roles | length')
	ncorrupt=$(mf "$c" '.corruption | length')
	redundancy=$([ "$level" = 6 ] && echo 2 || echo 1)

	"$RAIDIMG" scrub --json "${imgs[@]}" >"$TMP/out.jsonl" 2>"$TMP/err"; rc=$?
	if [ "$nmissing" -ge "$redundancy" ]; then
		check "$c: no redundancy left: exit 2 (got $rc)" test $rc -eq 2
		check "$c: says there is nothing to check against" grep -q "no redundancy left" "$TMP/err"
		continue
	fi
	want_rc=$([ "$ncorrupt" -gt 0 ] && echo 1 || echo 0)
	check "$c: exit $want_rc (got $rc: $(head -c 200 "$TMP/err"))" test $rc -eq "$want_rc"
	if matches_manifest "$TMP/out.jsonl" "$(manifest "$c")"; then
		pass "$c: mismatches = the manifest's $ncorrupt corruption record(s)"
	else
		fail "$c: mismatches differ from the manifest: $(grep mismatch "$TMP/out.jsonl")"
	fi
	summary=$(tail -n1 "$TMP/out.jsonl")
	check "$c: the summary is the last line and covers every stripe" \
		jqt '.type == "summary" and .next_stripe == .stripes_total and .stripes_unchecked == 0' <<<"$summary"
	if [ "$ncorrupt" -gt 0 ]; then
		md_cnt=$(mf "$c" .md_mismatch_cnt_after_corruption)
		check "$c: md_mismatch_cnt = md's $md_cnt" jqt ".md_mismatch_cnt == $md_cnt" <<<"$summary"
	fi
	# 1 MiB requests (whole chunk rows; a short tail joins the last one)
	check "$c: requests coalesced (about 1 MiB each)" \
		jqt '.avg_member_request_bytes >= 900 * 1024 and .avg_member_request_bytes <= 1536 * 1024' <<<"$summary"

	# other batch shapes give the same answer: small requests, column
	# slices of a chunk (request smaller than the chunk), one reader; and
	# both ways of asking whether a stripe agrees (isa-l's *_check, the
	# default without AVX-512; generate + compare, the default with it)
	for opts in "--request-size 64K --threads 1" "--request-size 16K" "--request-size 4K --threads 3" \
		"RAIDIMG_SCRUB_CHECK=gen" "RAIDIMG_SCRUB_CHECK=isal --request-size 4M"; do
		envs="" args=""
		for w in $opts; do case $w in *=*) envs+=" $w" ;; *) args+=" $w" ;; esac; done
		# shellcheck disable=SC2086
		env $envs "$RAIDIMG" scrub --json $args "${imgs[@]}" >"$TMP/o2.jsonl" 2>/dev/null; rc2=$?
		if [ $rc2 -eq "$want_rc" ] && matches_manifest "$TMP/o2.jsonl" "$(manifest "$c")"; then
			pass "$c: same answer with $opts"
		else
			fail "$c: $opts: exit $rc2, $(grep mismatch "$TMP/o2.jsonl")"
		fi
	done

	# the text report names the same place
	"$RAIDIMG" scrub "${imgs[@]}" >"$TMP/out.txt" 2>&1; rc=$?
	check "$c: text mode exit $want_rc" test $rc -eq "$want_rc"
	check "$c: text mode: $ncorrupt mismatch line(s)" test "$(grep -c '^mismatch:' "$TMP/out.txt")" -eq "$ncorrupt"
	for off in $(mf "$c" '.corruption[].image_byte_offset'); do
		check "$c: text names image offset $off" grep -q "image offset $off, 16 bytes" "$TMP/out.txt"
	done
	check "$c: nothing on stderr or stdout looks like a progress bar on a pipe" \
		bash -c "! grep -q 'ETA' '$TMP/out.txt'"

	after=$(shas "${imgs[@]}" | sort)
	check "$c: members unchanged" test "$before" = "$after"
done

# the RAID6 culprit is named in words too
dir=$(fixture_dir r6-ls-5x6M-64K-baddata)
"$RAIDIMG" scrub "$dir"/*.img >"$TMP/out.txt" 2>&1
check "RAID6 data corruption: 'data wrong on role 2 (.../member2.img)'" \
	grep -q "data wrong on role 2 (.*member2.img) at image offset 1639424, 16 bytes.*array offset 1770496" "$TMP/out.txt"

# the progress bar: on stderr when asked for (or on a terminal), never on a pipe by default
dir=$(fixture_dir r6-ls-6x6M-64K-md12)
"$RAIDIMG" scrub --progress "$dir"/*.img >"$TMP/out.txt" 2>"$TMP/err.txt"
check "--progress draws a bar with its speed on stderr, the last frame with the time taken" \
	grep -qE "scrub \[#{24}\] 100\.0% .* per member [0-9.]+ [KMG]iB/s in [0-9]+:[0-9]{2}" "$TMP/err.txt"
check "--progress leaves stdout alone" bash -c "! grep -q ETA '$TMP/out.txt'"
"$RAIDIMG" scrub "$dir"/*.img >/dev/null 2>"$TMP/err.txt"
check "no bar on a pipe by default" test ! -s "$TMP/err.txt"

# --range: only the stripes asked for (array offsets, widened to stripes)
c=r5-ls-4x6M-64K-badparity
dir=$(fixture_dir "$c")
sb=$((65536 * 3))
"$RAIDIMG" scrub --json --range 0:$((5 * sb)) "$dir"/*.img >"$TMP/r.jsonl" 2>/dev/null; rc=$?
check "--range before the bad stripe: clean (exit $rc)" test $rc -eq 0
check "--range 0:5 stripes covers stripes 0-5" jqt 'select(.type=="summary") | .range == [0,5] and .next_stripe == 5' "$TMP/r.jsonl"
"$RAIDIMG" scrub --json --range $((5 * sb + 1)):$((5 * sb + 2)) "$dir"/*.img >"$TMP/r.jsonl" 2>/dev/null; rc=$?
check "--range of 1 byte in the bad stripe: exit 1 (got $rc)" test $rc -eq 1
check "--range of 1 byte: the stripe holding it, [5,6)" jqt 'select(.type=="summary") | .range == [5,6] and .mismatches == 1' "$TMP/r.jsonl"
"$RAIDIMG" scrub --json --range $((6 * sb)): "$dir"/*.img >"$TMP/r.jsonl" 2>/dev/null; rc=$?
check "--range START: to the end, after the bad stripe: clean (exit $rc)" test $rc -eq 0
check "--range START: ends at the last stripe" jqt 'select(.type=="summary") | .range == [6,80]' "$TMP/r.jsonl"
finish
