#!/bin/bash
# IMSM and DDF containers written by Linux md + mdadm 4.2 (tests/fixtures/ext,
# see its README): every volume of every case read with its members in a
# shuffled order (cat = the manifest's expected_sha256), examine --json =
# the manifest's geometry, roles and data offsets, scrub clean (or naming
# the corruption md counted), the degraded ones rebuilt (the new members
# give the same bytes, scrub clean, examine complete), members unchanged.
. "$(dirname "$0")/lib.sh"
EXT=$SRCDIR/tests/fixtures/ext
emf() { json_get "$EXT/$1/manifest.json" "$2"; }

for c in $(ls "$EXT" | grep -v '\.md$'); do
	# quick: eight of the ten - the two healthy single-volume RAID5 cases
	# read like the two-volume containers of their format
	quick && case $c in ddf-r5-ls-4x40M-64K | imsm-r5-la-4x12M-64K) continue ;; esac
	dir=$(fixture_dir "$c" "$EXT")
	mapfile -t imgs < <(ls "$dir"/member*.img | awk 'BEGIN{srand(7)}{print rand() "\t" $0}' | sort | cut -f2)
	before=$(shas "${imgs[@]}" | sort)
	nvol=$(emf "$c" '.volumes | length')
	for ((v = 0; v < nvol; v++)); do
		name=$(emf "$c" ".volumes[$v].name")
		sel=()
		[ "$nvol" -gt 1 ] && sel=(--array "$name")
		want=$(emf "$c" ".volumes[$v].expected_sha256")
		got=$("$RAIDIMG" cat "${sel[@]}" "${imgs[@]}" 2>"$TMP/err" | sha)
		check "$c $name: cat sha256 ($(grep -v rebuilt "$TMP/err" | head -c 200))" test "$got" = "$want"
		"$RAIDIMG" examine --json "${sel[@]}" "${imgs[@]}" >"$TMP/ex.json" 2>/dev/null
		ok=$(jq --slurpfile m "$EXT/$c/manifest.json" --arg v "$v" \
			-f "$SRCDIR/tests/integration/examine_matches_ext.jq" "$TMP/ex.json" 2>&1)
		check "$c $name: examine --json matches the manifest ($ok)" test "$ok" = true
		"$RAIDIMG" scrub "${sel[@]}" "${imgs[@]}" >"$TMP/scrub" 2>&1
		rc=$?
		nmiss=$(emf "$c" '.missing_roles // [] | length')
		if [ "$nmiss" -ge "$(($(emf "$c" .level) == 6 ? 2 : 1))" ]; then
			check "$c $name: no scrub without redundancy (exit $rc)" grep -q "no redundancy left to check" "$TMP/scrub"
		elif [ "$(emf "$c" '.corruption | length')" -gt 0 ]; then
			check "$c $name: scrub finds the corruption (exit $rc)" test $rc = 1
			"$RAIDIMG" scrub --json "${sel[@]}" "${imgs[@]}" >"$TMP/scrub.json" 2>/dev/null
			ok=$(jq -s --slurpfile m "$EXT/$c/manifest.json" '$m[0] as $m | . as $r |
				([$r[] | select(.type == "mismatch")] | length) == ($m.corruption | length) and
				all($m.corruption[]; . as $x | any($r[]; .type == "mismatch" and .kind == $x.chunk_kind and
					.role == $x.member and (.image | endswith("/" + $x.image)) and
					.image_offset == $x.image_byte_offset and .length == $x.length and
					.array_offset == $x.array_byte_offset)) and
				($r[-1].md_mismatch_cnt == $m.md_mismatch_cnt_after_corruption)' "$TMP/scrub.json" 2>&1)
			check "$c $name: scrub names the member, offsets and bytes md's corruption has ($ok)" test "$ok" = true
		else
			check "$c $name: scrub clean (exit $rc: $(tail -n 2 "$TMP/scrub" | head -c 300))" test $rc = 0
		fi
	done
	# the volume uuid selects as well as the name
	if [ "$nvol" -gt 1 ]; then
		uuid=$(emf "$c" '.volumes[1].uuid')
		got=$("$RAIDIMG" cat --array "$uuid" "${imgs[@]}" 2>/dev/null | sha)
		check "$c: --array UUID" test "$got" = "$(emf "$c" '.volumes[1].expected_sha256')"
		expect_fail "$c: two volumes without --array" "2 different arrays; choose one with --array" \
			"$RAIDIMG" cat "${imgs[@]}"
		check "$c: ... and both listed" grep -q "'Volume1'" "$TMP/err"
	fi
	after=$(shas "${imgs[@]}" | sort)
	check "$c: members unchanged" test "$before" = "$after"

	# degraded: rebuild each missing role; the new set is complete and reads the same
	missing=$(emf "$c" '.missing_roles // [] | map(tostring) | join(" ")')
	[ -n "$missing" ] || continue
	w=$TMP/rb-$c
	mkdir -p "$w"
	set -- "${imgs[@]}"
	for r in $missing; do
		"$RAIDIMG" rebuild --role "$r" -o "$w/member$r.img" "$@" >"$TMP/rb" 2>&1
		check "$c: rebuild role $r ($(tail -n 1 "$TMP/rb"))" test -s "$w/member$r.img"
		set -- "$@" "$w/member$r.img"
	done
	got=$("$RAIDIMG" cat "$@" 2>/dev/null | sha)
	check "$c: rebuilt set reads the same" test "$got" = "$(emf "$c" '.volumes[0].expected_sha256')"
	check "$c: rebuilt set scrubs clean" "$RAIDIMG" scrub "$@"
	"$RAIDIMG" examine --json "$@" >"$TMP/ex.json" 2>/dev/null
	check "$c: rebuilt set complete" test "$(jq -r '.array.verdict + " " + (.array.missing_roles | length | tostring)' \
		"$TMP/ex.json")" = "complete 0"
	after=$(shas "${imgs[@]}" | sort)
	check "$c: members unchanged by rebuild" test "$before" = "$after"
done
finish
