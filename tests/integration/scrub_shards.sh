#!/bin/bash
# A scrub split in shards and merged is the scrub of the whole: on a copy of
# a corrupted fixture with more corruption added (8 mismatches over the
# array), `scrub --json --shard K/N` for N = 1, 3 and 7, merged by
# `raidimg scrub-merge`, gives the records of the unsplit scrub byte for
# byte, in order, and its summary (all but timing and request counts);
# shards are whole stripes that tile the array (and --range); a repair
# split in shards repairs what the unsplit one does.  scrub-merge refuses
# (exit 2, naming the files): a missing shard, a shard given twice, a report
# of another array, an unfinished run, overlapping and gapped --range
# reports, a text report, records that do not add up; it takes a report of
# resumed runs appended to one file.  --metrics writes node_exporter's
# textfile format (checked by prom_check.awk, a Prometheus text-format
# checker), atomically, for scrub and scrub-merge, also when the scrub
# fails, and never over a member image.
. "$(dirname "$0")/lib.sh"
PROM="awk -f $SRCDIR/tests/integration/prom_check.awk"

c=r6-ls-5x6M-64K-baddata
src=$(fixture_dir "$c")
W=$TMP/w
mkdir -p "$W"
cp "$src"/member*.img "$W/"
chmod 644 "$W"/*.img
m=("$W"/member*.img)
doff=$(mf "$c" '.members[0].data_offset_bytes')
# 7 more corrupted bytes, in data or parity of stripes spread over the array
for s in 3 17 30 31 52 66 79; do
	printf '\xff' | dd of="${m[$((s % 5))]}" bs=1 seek=$((doff + s * 65536 + 100 + s)) conv=notrunc status=none
done
stripes=80

"$RAIDIMG" scrub --json "${m[@]}" >"$TMP/full.json" 2>/dev/null; rc=$?
check "the unsplit scrub: 8 mismatches, exit 1 (rc $rc)" \
	jq -se '[.[] | select(.type == "mismatch")] | length == 8' "$TMP/full.json" >/dev/null
records() { grep -v '"type":"summary"' "$1"; }
# the summary without what depends on time and on how requests fell
summary() { grep '"type":"summary"' "$1" | jq -cS 'del(.seconds, .read_bytes_per_second, .throttle_seconds, .finished, .member_requests, .avg_member_request_bytes, .foreground_backoffs, .shards)'; }

for n in 1 3 7; do
	files=()
	ranges=""
	for ((k = 0; k < n; k++)); do
		"$RAIDIMG" scrub --json --shard "$k/$n" "${m[@]}" >"$TMP/s$n-$k.json" 2>"$TMP/err"
		files+=("$TMP/s$n-$k.json")
		ranges+=$(jq -r 'select(.type == "summary") | "\(.range[0])-\(.range[1]) "' "$TMP/s$n-$k.json")
	done
	check "N=$n: the shards tile the stripes ($ranges)" \
		test "$(echo "$ranges" | awk -v n="$stripes" '{ e = 0; for (i = 1; i <= NF; i++) { split($i, r, "-"); if (r[1] != e || r[2] <= r[1]) exit 1; e = r[2] } exit e != n }'; echo $?)" = 0
	check "N=$n: each shard's summary says which" \
		test "$(cat "${files[@]}" | jq -sc '[.[] | select(.type == "summary") | [.shard, .shards]]')" = \
		"$(for ((k = 0; k < n; k++)); do echo "[$k,$n]"; done | jq -sc .)"
	# merged from the shards in a shuffled order
	mapfile -t shuffled < <(printf '%s\n' "${files[@]}" | awk 'BEGIN{srand(7)}{print rand() "\t" $0}' | sort | cut -f2)
	"$RAIDIMG" scrub-merge "${shuffled[@]}" >"$TMP/merged$n.json" 2>"$TMP/err"; rc=$?
	check "N=$n: merged, exit 1 as the unsplit scrub ($(cat "$TMP/err"))" test $rc -eq 1
	check "N=$n: the merged records are the unsplit scrub's, byte for byte and in order" \
		cmp -s <(records "$TMP/full.json") <(records "$TMP/merged$n.json")
	check "N=$n: the merged summary is the unsplit one" test "$(summary "$TMP/full.json")" = "$(summary "$TMP/merged$n.json")"
	check "N=$n: the merged summary counts the reports" jq -e "select(.type == \"summary\") | .shards == $n and .member_request_bytes > 0" "$TMP/merged$n.json" >/dev/null
done
check "the merge said what it merged" grep -q "merged 7 reports: stripes 0-80 of 80: mismatches, 8 mismatches" "$TMP/err"
"$RAIDIMG" scrub-merge -o "$TMP/merged-o.json" "${files[@]}" 2>/dev/null
check "-o FILE: the same report" cmp -s "$TMP/merged7.json" "$TMP/merged-o.json"

# ---- shards of a --range ----
"$RAIDIMG" scrub --json --range 1M:4M "${m[@]}" >"$TMP/range.json" 2>/dev/null
for k in 0 1 2; do "$RAIDIMG" scrub --json --range 1M:4M --shard $k/3 "${m[@]}" >"$TMP/r$k.json" 2>/dev/null; done
"$RAIDIMG" scrub-merge "$TMP"/r[012].json >"$TMP/rmerged.json" 2>/dev/null
check "--range split in 3 shards, merged: the --range scrub" \
	test "$(records "$TMP/range.json"; summary "$TMP/range.json")" = "$(records "$TMP/rmerged.json"; summary "$TMP/rmerged.json")"
# --range reports without shards that tile a range merge too (a stripe
# holds 3 x 64 KiB of the array: 10 stripes are 1920K)
"$RAIDIMG" scrub --json --range :1920K "${m[@]}" >"$TMP/a.json" 2>/dev/null
"$RAIDIMG" scrub --json --range 1920K: "${m[@]}" >"$TMP/b.json" 2>/dev/null
"$RAIDIMG" scrub-merge "$TMP/b.json" "$TMP/a.json" >"$TMP/ab.json" 2>/dev/null
check "two --range reports that tile the array merge into the whole" \
	test "$(records "$TMP/full.json"; summary "$TMP/full.json")" = "$(records "$TMP/ab.json"; summary "$TMP/ab.json")"

# ---- refusals ----
merge_fails() { # DESCRIPTION PATTERN REPORT...
	local d=$1 p=$2; shift 2
	expect_fail "$d" "$p" "$RAIDIMG" scrub-merge "$@"
	[ -s "$TMP/out" ] && fail "$d: something on stdout: $(head -c 200 "$TMP/out")"
}
merge_fails "a missing shard" "1 of the 7 shards is missing: 3 \(shards are numbered 0 to 6\); stripes \[34, 45\) are in no report" \
	"$TMP"/s7-[012456].json
merge_fails "shard 0 missing" "1 of the 3 shards is missing: 0 " "$TMP"/s3-[12].json
merge_fails "a shard given twice" "shard 2 of 7 given twice" "$TMP"/s7-*.json "$TMP/s7-2.json"
merge_fails "shards of two splits" "are not shards of one split" "$TMP/s3-0.json" "$TMP"/s7-[3456].json
"$RAIDIMG" scrub --json "$(fixture_dir r5-ls-4x6M-64K-badparity)"/member*.img >"$TMP/other.json" 2>/dev/null
merge_fails "a report of another array" "other.json is a report of array $(mf r5-ls-4x6M-64K-badparity .array_uuid)" \
	"$TMP/a.json" "$TMP/other.json"
merge_fails "overlapping --range reports" "a.json and .*range.json overlap: stripes \[5, 10\) are in both" \
	"$TMP/a.json" "$TMP/range.json"
"$RAIDIMG" scrub --json --range :1M "${m[@]}" >"$TMP/c.json" 2>/dev/null
merge_fails "a gap between --range reports" "stripes \[6, 10\) are in no report \(between .*c.json and .*b.json\)" \
	"$TMP/c.json" "$TMP/b.json"
"$RAIDIMG" scrub "${m[@]}" >"$TMP/text.txt" 2>/dev/null
merge_fails "a text report" "text.txt: line 1: not a record of raidimg scrub --json" "$TMP/text.txt"
head -n -1 "$TMP/s3-1.json" >"$TMP/nosum.json"
merge_fails "a report without its summary" "nosum.json: .*records after the last summary|nosum.json: no summary" \
	"$TMP/s3-0.json" "$TMP/nosum.json" "$TMP/s3-2.json"
jq -c 'if .type == "summary" then .result = "interrupted" | .next_stripe = 40 else . end' "$TMP/s3-1.json" >"$TMP/int.json"
merge_fails "an interrupted shard" "int.json: the scrub did not finish its range \(interrupted at stripe 40 of \[26, 53\)\)" \
	"$TMP/s3-0.json" "$TMP/int.json" "$TMP/s3-2.json"
grep -v '"stripe":9,' "$TMP/s3-0.json" >"$TMP/lost.json"
merge_fails "a record lost" "lost.json: 2 mismatch and 0 write records, but the summary counts 3" \
	"$TMP/lost.json" "$TMP/s3-1.json" "$TMP/s3-2.json"
merge_fails "a merged report merged again" "already a merge of 3 reports" "$TMP/merged3.json"
merge_fails "no such report" "nope.json" "$TMP/nope.json"
expect_fail "no reports" "scrub-merge: give the reports" "$RAIDIMG" scrub-merge
expect_fail "--shard 3/3" "shard 3/3: give K/N" "$RAIDIMG" scrub --shard 3/3 "${m[@]}"
expect_fail "--shard 1" "shard 1: give K/N" "$RAIDIMG" scrub --shard 1 "${m[@]}"
expect_fail "more shards than stripes" "the range has 80 stripes, fewer than 81 shards" "$RAIDIMG" scrub --shard 0/81 "${m[@]}"

# ---- a report of resumed runs, appended to one file ----
# run 1 covered [26, 45) and was interrupted (its checkpoint at 30); run 2
# resumed at 30: the records of run 1 at 30 and after are run 2's again
s1=$TMP/s3-1.json
{
	grep '"type":"mismatch"' "$s1" | jq -c 'select(.stripe < 45)'
	jq -c 'select(.type == "summary") | .result = "interrupted" | .next_stripe = 45 | .mismatches = 2' "$s1"
	grep '"type":"mismatch"' "$s1" | jq -c 'select(.stripe >= 30)'
	jq -c 'select(.type == "summary") | .resumed_at = 30' "$s1"
} >"$TMP/resumed.json"
check "the resumed report repeats a record (so the test means something)" \
	test "$(grep -c '"type":"mismatch"' "$TMP/resumed.json")" -gt "$(grep -c '"type":"mismatch"' "$s1")"
"$RAIDIMG" scrub-merge "$TMP/s3-0.json" "$TMP/resumed.json" "$TMP/s3-2.json" >"$TMP/merged-r.json" 2>"$TMP/err"
# (the bytes read are both runs': the part read twice counts twice)
check "resumed runs in one report: merged as the unsplit scrub ($(cat "$TMP/err"))" \
	test "$(records "$TMP/full.json"; summary "$TMP/full.json" | jq -c 'del(.member_request_bytes)')" = \
	"$(records "$TMP/merged-r.json"; summary "$TMP/merged-r.json" | jq -c 'del(.member_request_bytes)')"

# ---- repair in shards ----
R=$TMP/r
mkdir -p "$R"
cp "${m[@]}" "$R/"
"$RAIDIMG" scrub --repair --json "$R"/member*.img >"$TMP/rep-full.json" 2>/dev/null
cp "${m[@]}" "$R/"
for k in 0 1 2; do "$RAIDIMG" scrub --repair --json --shard $k/3 "$R"/member*.img >"$TMP/rep$k.json" 2>/dev/null; done
"$RAIDIMG" scrub-merge "$TMP"/rep[012].json >"$TMP/rep-merged.json" 2>/dev/null; rc=$?
check "repair in 3 shards, merged: the unsplit repair's records and summary (exit $rc)" \
	test "$(records "$TMP/rep-full.json"; summary "$TMP/rep-full.json")" = "$(records "$TMP/rep-merged.json"; summary "$TMP/rep-merged.json")"
check "... with its writes" jq -se '[.[] | select(.type == "write")] | length >= 8' "$TMP/rep-merged.json" >/dev/null
"$RAIDIMG" scrub "$R"/member*.img >/dev/null 2>&1
check "... and the array is clean afterwards" test $? -eq 0
merge_fails "a repair and a check" "a repair, .* a check: merge reports of one mode" "$TMP/rep0.json" "$TMP/s3-1.json" "$TMP/s3-2.json"

# ---- --metrics ----
prom_ok() { $PROM "$1" >"$TMP/prom.err" && [ "$(tail -c1 "$1" | od -An -c | tr -d ' ')" = '\n' ]; }
value() { $PROM -v list=1 "$1" | S=$2 awk '$1 == ENVIRON["S"] { print $2 }'; }
labels='array_name="oracle:oracle",array_uuid="'$(mf "$c" .array_uuid)'"'
"$RAIDIMG" scrub --metrics "$TMP/m.prom" --metrics-label 'host=node"1' "${m[@]}" >/dev/null 2>&1; rc=$?
check "scrub --metrics: exit 1 all the same" test $rc -eq 1
prom_ok "$TMP/m.prom"
check "scrub --metrics: the Prometheus text format ($(cat "$TMP/prom.err"))" prom_ok "$TMP/m.prom"
L="{$labels,host=\"node\\\"1\",mode=\"check\"}"
check "... mismatches 8" test "$(value "$TMP/m.prom" "raidimg_scrub_mismatches$L")" = 8
check "... md's mismatch_cnt 64" test "$(value "$TMP/m.prom" "raidimg_scrub_mismatch_sectors$L")" = 64
check "... stripes 80, read errors 0, exit status 1" \
	test "$(value "$TMP/m.prom" "raidimg_scrub_stripes$L") $(value "$TMP/m.prom" "raidimg_scrub_read_errors$L") $(value "$TMP/m.prom" "raidimg_scrub_exit_status$L")" = "80 0 1"
check "... bytes read: 5 members x 80 stripes x 64 KiB" \
	test "$(value "$TMP/m.prom" "raidimg_scrub_read_bytes$L")" = $((5 * 80 * 65536))
check "... result mismatches 1, clean 0" \
	test "$(value "$TMP/m.prom" "raidimg_scrub_result{$labels,host=\"node\\\"1\",mode=\"check\",result=\"mismatches\"}") $(value "$TMP/m.prom" "raidimg_scrub_result{$labels,host=\"node\\\"1\",mode=\"check\",result=\"clean\"}")" = "1 0"
now=$(date +%s)
ts=$(value "$TMP/m.prom" "raidimg_scrub_last_run_timestamp_seconds$L")
check "... the last run's time is now ($ts)" awk -v t="$ts" -v n="$now" 'BEGIN { exit !(t > n - 60 && t < n + 60) }'
check "... its duration" awk -v t="$(value "$TMP/m.prom" "raidimg_scrub_duration_seconds$L")" 'BEGIN { exit !(t > 0 && t < 60) }'
"$RAIDIMG" scrub --shard 1/3 --metrics "$TMP/m.prom" "$src"/member*.img >/dev/null 2>&1
check "a shard's metrics: labelled shard=\"1/3\", replaced atomically, clean" \
	test "$(value "$TMP/m.prom" "raidimg_scrub_result{array_name=\"oracle:oracle\",array_uuid=\"$(mf "$c" .array_uuid)\",mode=\"check\",result=\"clean\",shard=\"1/3\"}")" = 1
"$RAIDIMG" scrub-merge --metrics "$TMP/mm.prom" "$TMP"/s7-*.json >/dev/null 2>&1
check "scrub-merge --metrics: the format" prom_ok "$TMP/mm.prom"
check "... the merged mismatches" \
	test "$(value "$TMP/mm.prom" "raidimg_scrub_mismatches{array_name=\"\",array_uuid=\"$(mf "$c" .array_uuid)\",mode=\"check\"}")" = 8
"$RAIDIMG" scrub --metrics "$TMP/e.prom" "${m[0]}" "${m[1]}" >/dev/null 2>&1; rc=$?
check "a scrub that cannot assemble: exit 2, the metrics say error" \
	test "$rc $(value "$TMP/e.prom" 'raidimg_scrub_result{array_name="",array_uuid="",mode="check",result="error"}') $(value "$TMP/e.prom" 'raidimg_scrub_exit_status{array_name="",array_uuid="",mode="check"}')" = "2 1 2"
check "... still the format" prom_ok "$TMP/e.prom"
before=$(sha "${m[0]}")
expect_fail "--metrics over a member image" "refusing to write over evidence" \
	"$RAIDIMG" scrub --metrics "${m[0]}" "${m[@]}"
check "... which is untouched" test "$(sha "${m[0]}")" = "$before"
expect_fail "--metrics-label with a bad name" "metrics-label 1x=y: give NAME=VALUE" \
	"$RAIDIMG" scrub --metrics "$TMP/x.prom" --metrics-label 1x=y "${m[@]}"
expect_fail "--metrics-label of ours" "metrics-label mode=y: mode is a label of raidimg's own" \
	"$RAIDIMG" scrub --metrics "$TMP/x.prom" --metrics-label mode=y "${m[@]}"
expect_fail "--metrics-label without --metrics" "metrics-label is for --metrics" \
	"$RAIDIMG" scrub --metrics-label a=b "${m[@]}"
not_ok() { ! $PROM <(printf 'x{a="1"} 1\nx{a="1"} 2\n') >/dev/null; }
check "the checker refuses a series given twice" not_ok
finish
