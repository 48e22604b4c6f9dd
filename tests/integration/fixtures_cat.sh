#!/bin/bash
# Every real-md fixture assembles with `cat` (members given in shuffled order)
# to exactly the sha256 md read, `examine --json` reports the manifest's
# geometry, and no member image is modified.
. "$(dirname "$0")/lib.sh"

for c in $(fixture_cases); do
	dir=$(fixture_dir "$c")
	mapfile -t imgs < <(members_shuffled "$c")
	before=$(shas "${imgs[@]}" | sort)
	want=$(mf "$c" .expected_sha256)

	got=$("$RAIDIMG" cat "${imgs[@]}" 2>"$TMP/err" | sha)
	if [ "$got" = "$want" ]; then pass "$c: cat sha256"; else fail "$c: cat sha256 $got != $want ($(cat "$TMP/err"))"; fi

	# to a file, with 1 and 3 threads
	"$RAIDIMG" cat --threads 3 -o "$TMP/out.img" "${imgs[@]}" 2>/dev/null
	check "$c: cat -o with 3 threads" test "$(sha "$TMP/out.img")" = "$want"

	# examine --json against the manifest
	"$RAIDIMG" examine --json "${imgs[@]}" >"$TMP/ex.json" 2>"$TMP/err"
	ok=$(jq --slurpfile m "$(manifest "$c")" -f "$SRCDIR/tests/integration/examine_matches_manifest.jq" \
		"$TMP/ex.json" 2>&1)
	if [ "$ok" = true ]; then pass "$c: examine --json matches the manifest"; else fail "$c: examine --json: $ok"; cat "$TMP/ex.json"; fi

	# text examine works too
	check "$c: examine text" "$RAIDIMG" examine "${imgs[@]}" >/dev/null

	after=$(shas "${imgs[@]}" | sort)
	check "$c: members unchanged" test "$before" = "$after"
done

# degraded, chunks larger than a rebuild's column piece (1 MiB over all
# members): each stripe is rebuilt in pieces, the same bytes md read; RAID6
# with a data member and Q gone rebuilds the data from P alone
for cg in "r5-ls-5x6M-512K-md10 1" "r6-ra-6x4M-256K-md12 2"; do
	set -- $cg
	c=$1
	mapfile -t imgs < <(members_shuffled "$c")
	want=$(mf "$c" .expected_sha256)
	for mode in "" --no-zero-copy; do
		got=$("$RAIDIMG" cat $mode "${imgs[@]:$2}" 2>"$TMP/err" | sha)
		check "$c: cat ${mode:-(zero-copy)} without $2 member(s): md's bytes" test "$got" = "$want"
	done
done

# --offset/--length: slices equal the same bytes of the whole
c=r6-ls-5x6M-4K-md11
mapfile -t imgs < <(members_shuffled "$c")
size=$(mf "$c" .array_bytes)
"$RAIDIMG" cat -o "$TMP/whole" "${imgs[@]}"
for ol in 0:1 1:4095 4095:2 4096:4096 12287:9000 1000000:3000000 $((size - 4096)):4096 $((size - 1)):1; do
	o=${ol%:*}; l=${ol#*:}
	"$RAIDIMG" cat --offset "$o" --length "$l" "${imgs[@]}" >"$TMP/part"
	check "$c: --offset $o --length $l" cmp -s "$TMP/part" <(tail -c +$((o + 1)) "$TMP/whole" | head -c "$l")
done
# length past the end is clamped
n=$("$RAIDIMG" cat --offset $((size - 640)) --length 1M "${imgs[@]}" | wc -c)
check "$c: length clamped at the end ($n)" test "$n" -eq 640
finish
