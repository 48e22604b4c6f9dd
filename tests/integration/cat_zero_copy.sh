#!/bin/bash
# `raidimg cat`'s zero-copy path (splice(2) from plain member files, only
# rebuilt pieces through memory) gives exactly the bytes of the copying
# pipeline (--no-zero-copy) and of the manifest: healthy, degraded (missing
# and truncated members), odd slices, and every kind of output - a file,
# a pipe, /dev/null and an O_APPEND file (which takes no splice).
. "$(dirname "$0")/lib.sh"
T="timeout 120"

for c in $(fixture_cases); do
	mapfile -t imgs < <(members_shuffled "$c")
	want=$(mf "$c" .expected_sha256)
	$T "$RAIDIMG" cat --stats -o "$TMP/zc" "${imgs[@]}" 2>"$TMP/zc.err"
	check "$c: zero-copy to a file: sha256" test "$(sha "$TMP/zc")" = "$want"
	check "$c: ... and it went the zero-copy way" test "$(stats_method "$TMP/zc.err")" = zero-copy
	got=$($T "$RAIDIMG" cat "${imgs[@]}" 2>/dev/null | sha)
	check "$c: zero-copy into a pipe: sha256" test "$got" = "$want"
done

# slices, healthy and degraded, against the pipeline and the whole image
slices() { # slices CASE LABEL IMAGE...
	local c=$1 label=$2 size o l ol bad=0
	shift 2
	size=$(mf "$c" .array_bytes)
	$T "$RAIDIMG" cat --no-zero-copy -o "$TMP/whole" "$@" 2>/dev/null
	check "$c $label: the pipeline reads the manifest's bytes" test "$(sha "$TMP/whole")" = "$(mf "$c" .expected_sha256)"
	for ol in 0:1 1:4095 4095:2 5000:70000 65535:131074 131071:1000000 1000000:3000000 \
		$((size / 2 - 12345)):777777 $((size - 4096)):4096 $((size - 1)):1; do
		o=${ol%:*} l=${ol#*:}
		$T "$RAIDIMG" cat --offset "$o" --length "$l" "$@" >"$TMP/part" 2>/dev/null || bad=1
		cmp -s "$TMP/part" <(tail -c +$((o + 1)) "$TMP/whole" | head -c "$l") || { bad=1; echo "  $o+$l differs"; }
	done
	check "$c $label: 10 odd slices equal the whole" test $bad = 0
}
c=r6-ls-6x6M-64K-md12
d=$(fixture_dir $c)
slices $c healthy "$d"/member*.img
slices $c "two missing" "$d"/member[1-3].img "$d"/member5.img
slices r5-ls-5x6M-128K-missing2 degraded $(members_shuffled r5-ls-5x6M-128K-missing2)
slices r6-ls-5x6M-4K-md11 "4K chunks, one missing" "$(fixture_dir r6-ls-5x6M-4K-md11)"/member[0-3].img

# a truncated member: its chunks past the end are rebuilt, the rest spliced
c=r5-ls-4x8M-64K-md12
d=$(fixture_dir $c)
cp "$d/member2.img" "$TMP/m2.img"
truncate -s 5M "$TMP/m2.img"
$T "$RAIDIMG" cat --stats "$d/member0.img" "$d/member1.img" "$TMP/m2.img" "$d/member3.img" \
	>"$TMP/tr" 2>"$TMP/tr.err"
check "$c, member 2 truncated at 5M: sha256" test "$(sha "$TMP/tr")" = "$(mf $c .expected_sha256)"
check "... part spliced, part rebuilt" \
	test "$(grep '^{' "$TMP/tr.err" | jq '.zero_copy.spliced_bytes > 0 and .zero_copy.copied_bytes > 0')" = true

# --threads' default: 2, but 1 into a pipe when raidimg may use only one or
# two CPUs (the reader of the pipe needs one); --stats says how many
threads_used() { grep '^{' "$1" | jq .threads; }
$T "$RAIDIMG" cat --stats -o "$TMP/th" "$d"/member*.img 2>"$TMP/th.err"
check "threads: 2 by default into a file" test "$(threads_used "$TMP/th.err")" = 2
$T taskset -c 0 "$RAIDIMG" cat --stats "$d"/member*.img 2>"$TMP/th.err" | cat >/dev/null
check "threads: 1 into a pipe on one CPU (taskset)" test "$(threads_used "$TMP/th.err")" = 1
$T "$RAIDIMG" cat --stats "$d"/member*.img 2>"$TMP/th.err" | cat >/dev/null
check "threads: into a pipe on this machine's $(nproc) CPUs: $(($(nproc) <= 2 ? 1 : 2))" \
	test "$(threads_used "$TMP/th.err")" = $(($(nproc) <= 2 ? 1 : 2))
$T taskset -c 0 "$RAIDIMG" cat --stats --threads 3 "$d"/member*.img 2>"$TMP/th.err" | cat >/dev/null
check "threads: --threads 3 is kept, into a pipe on one CPU too" test "$(threads_used "$TMP/th.err")" = 3

# outputs: /dev/null, an O_APPEND file (splice refuses it: written with write(2))
$T "$RAIDIMG" cat --stats "$d"/member*.img >/dev/null 2>"$TMP/null.err"
check "to /dev/null: every byte counted" \
	test "$(grep '^{' "$TMP/null.err" | jq .bytes_served)" = "$(mf $c .array_bytes)"
printf 'head' >"$TMP/app"
$T "$RAIDIMG" cat "$d"/member*.img >>"$TMP/app"
check "appended to a file (O_APPEND): the file is 'head' + the array" \
	cmp -s "$TMP/app" <(printf 'head'; "$RAIDIMG" cat --no-zero-copy "$d"/member*.img)

# a reader that goes away: cat ends with an error, does not hang
$T "$RAIDIMG" cat "$d"/member*.img 2>"$TMP/pipe.err" | head -c 100000 >/dev/null
rc=${PIPESTATUS[0]}
check "the reader closes the pipe early: cat stops (rc $rc, not a timeout)" test "$rc" != 124 -a "$rc" != 0

# too few file descriptors for the pipe: the copying pipeline takes over
# (or, with fewer still, a clear refusal to open a member) - never wrong bytes
fell_back=0 bad=0
for n in 5 6 7 8 9 10 11 12; do
	(ulimit -n $n; exec $T "$RAIDIMG" cat --stats "$d"/member*.img) 2>"$TMP/fd.err" | sha >"$TMP/fd.sha"
	if grep -q "Too many open files" "$TMP/fd.err"; then
		continue
	elif [ "$(cat "$TMP/fd.sha")" != "$(mf $c .expected_sha256)" ]; then
		bad=1; echo "  ulimit -n $n: wrong bytes: $(head -c 300 "$TMP/fd.err")"
	elif [ "$(stats_method "$TMP/fd.err")" = pipeline ]; then
		fell_back=1
	fi
done
check "no pipe to be had (ulimit -n): the pipeline serves the right bytes" test $bad = 0 -a $fell_back = 1

# --hash/--record/--provenance/--overlay see every byte: the pipeline
$T "$RAIDIMG" cat --stats --hash "$d"/member*.img >/dev/null 2>"$TMP/h.err"
check "--hash uses the pipeline" test "$(stats_method "$TMP/h.err")" = pipeline
finish
