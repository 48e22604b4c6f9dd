#!/bin/bash
# Arrays caught in the middle of a reshape by real md (tests/fixtures/reshape:
# made with the oracle's mkarray --grow-to N --stop-reshape-at PCT, md stopped
# while growing): every array byte is read in the geometry it is in at the
# reshape position - the new one below it, the old one above - whole,
# degraded, in slices across the position, through cat (pipeline), export,
# zstd members and the mount.  Scrub and rebuild refuse such arrays, and no
# member image changes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"
T="timeout 120"
RFIX=$SRCDIR/tests/fixtures/reshape

rmf() { json_get "$RFIX/$1/manifest.json" "$2"; }
# FUSE mountable here?  (probed once)
fuse_usable; fuse_rc=$?
[ $fuse_rc = 0 ] || echo "note: FUSE is not usable here ($(head -c 300 "$TMP/probe.err")): no mount checks"
fuse_ok() { [ $fuse_rc = 0 ]; }
catsha() { $T "$RAIDIMG" cat "$@" 2>/dev/null | sha; }

declare -A zstd_done=()       # by level (quick: "any")
for c in $(cd "$RFIX" && ls -d -- */ | tr -d /); do
	# quick: four of the six - growing 0.90, a chunk change, shrinking and a
	# RAID6 layout change; the other two grow 1.2 arrays like those do
	quick && case $c in r5-grow4to5-64K-md12 | r6-grow5to6-64K-md12) continue ;; esac
	d=$(fixture_dir "$c" "$RFIX")
	want=$(rmf "$c" .expected_sha256)
	pos=$(($(rmf "$c" .reshape.reshape_position_sectors) * 512))
	size=$(rmf "$c" .array_bytes)
	lvl=$(rmf "$c" .level)
	mapfile -t imgs < <(ls "$d"/member*.img | awk 'BEGIN{srand(7)}{print rand() "\t" $0}' | sort | cut -f2)
	before=$(shas "${imgs[@]}" | sort)

	# what examine says
	$T "$RAIDIMG" examine --json "${imgs[@]}" >"$TMP/ex.json" 2>/dev/null
	check "$c: examine: the reshape position is md's ($pos bytes)" \
		test "$(jq .array.reshape.position_bytes "$TMP/ex.json")" = "$pos"
	check "$c: examine: $(rmf "$c" .reshape.from_devices) -> $(rmf "$c" .reshape.to_devices) members, $(rmf "$c" .reshape.reshape_direction)" \
		test "$(jq -r '[.array.reshape.previous.raid_disks, .array.raid_disks, .array.reshape.backwards] | @tsv' \
			"$TMP/ex.json")" = "$(rmf "$c" '[.reshape.from_devices, .reshape.to_devices, .reshape.reshape_direction == "backwards"] | @tsv')"
	check "$c: examine: the array is md's size (the old one until the reshape ends)" \
		test "$(jq .array.array_bytes "$TMP/ex.json")" = "$size"
	$T "$RAIDIMG" examine "${imgs[@]}" >"$TMP/ex.txt" 2>&1
	check "$c: examine text shows both geometries" grep -q "the old one: $(rmf "$c" .reshape.from_devices) members" "$TMP/ex.txt"

	# whole, both ways, and the warning
	$T "$RAIDIMG" cat --stats "${imgs[@]}" >"$TMP/whole" 2>"$TMP/cat.err"
	check "$c: cat: md's sha256" test "$(sha "$TMP/whole")" = "$want"
	check "$c: cat says the array is mid-reshape" grep -q "middle of a reshape" "$TMP/cat.err"
	check "$c: cat reads it through array_read (two geometries), not zero-copy" \
		test "$(stats_method "$TMP/cat.err")" = pipeline
	check "$c: cat --no-zero-copy: md's sha256" test "$(catsha --no-zero-copy "${imgs[@]}")" = "$want"

	# slices across the reshape position and at the ends (quick: three)
	bad=0 slices=($((pos - 1)):2 $((pos - 70000)):140001 $((pos - 4096)):4096 $pos:4096 $((pos + 777)):123456
		0:$((pos + 1)) $((pos - 1)):$((size - pos + 1)) $((size - 3)):3)
	quick && slices=("${slices[0]}" "${slices[1]}" "${slices[7]}")
	for ol in "${slices[@]}"; do
		o=${ol%:*} l=${ol#*:}
		$T "$RAIDIMG" cat --offset "$o" --length "$l" "${imgs[@]}" >"$TMP/part" 2>/dev/null || bad=1
		cmp -s "$TMP/part" <(tail -c +$((o + 1)) "$TMP/whole" | head -c "$l") || { bad=1; echo "  $o+$l differs"; }
	done
	check "$c: ${#slices[@]} slices across the reshape position equal the whole" test $bad = 0

	# every set of members md could still read (one or two gone)
	n=${#imgs[@]} red=$((lvl == 6 ? 2 : 1)) bad=0 sets=0
	for ((i = 0; i < n; i++)); do
		for ((j = i; j < n; j++)); do
			[ $red = 1 ] && [ $j != $i ] && continue
			# quick: the first and the last member missing alone, and (RAID6) both
			if quick; then
				case "$i,$j" in "0,0" | "$((n - 1)),$((n - 1))" | "0,$((n - 1))") ;; *) continue ;; esac
			fi
			sub=(); for ((x = 0; x < n; x++)); do [ $x != $i ] && [ $x != $j ] && sub+=("$d/member$x.img"); done
			sets=$((sets + 1))
			[ "$(catsha "${sub[@]}")" = "$want" ] || { bad=1; echo "  without members $i $j: wrong"; }
		done
	done
	check "$c: degraded: $(quick && echo "(quick) " || echo "all ")$sets sets of members without up to $red of them read md's bytes" test $bad = 0

	# provenance: each run read straight from a member names the member that
	# holds it - checked against where each payload sector's own tag
	# ("ORCL off=0x<array offset>") really is in the images (quick: for the
	# first case; the tags are looked for with grep over every image)
	if ! quick || [ -z "${prov_done:-}" ]; then
		prov_done=1
		$T "$RAIDIMG" cat --provenance "$TMP/prov" "${imgs[@]}" >/dev/null 2>&1
		for ((r = 0; r < ${#imgs[@]}; r++)); do
			grep -ao 'ORCL off=0x[0-9a-f]\{12\}' "$d/member$r.img" |
				perl -ne 'print hex($1), ":'"$r"'\n" if /off=0x([0-9a-f]+)/'
		done | sort -u >"$TMP/tags"
		jq -r 'select(.source == "member") | "\(.offset) \(.length) \(.role)"' "$TMP/prov" >"$TMP/recs"
		# the sectors of the array that carry their own tag (random chunks carry none)
		grep -abo 'ORCL off=0x[0-9a-f]\{12\}' "$TMP/whole" |
			perl -ne 'print "$1\n" if /^(\d+):ORCL off=0x([0-9a-f]+)$/ && hex($2) == $1' >"$TMP/tagged"
		bad=$(awk 'FILENAME == ARGV[1] { have[$1] = 1; next }
			FILENAME == ARGV[2] { tagged[$1] = 1; next }
			{ for (o = $1 - $1 % 512; o < $1 + $2; o += 512)
				if (o in tagged) { seen++; if (!((o ":" $3) in have)) { print; next } }
			} END { if (!seen) print "no tagged sector at all" }' "$TMP/tags" "$TMP/tagged" "$TMP/recs" | wc -l)
		check "$c: provenance: every direct run ($(wc -l <"$TMP/recs")) names the member holding it ($bad wrong)" \
			test "$bad" = 0 -a "$(wc -l <"$TMP/recs")" -gt 10
	fi

	# export, zstd members (for the first case of each level; quick: the
	# first case only - a member's source is the same code whatever the
	# geometry it is read in)
	rm -f "$TMP/exp.img"
	$T "$RAIDIMG" export "${imgs[@]}" -o "$TMP/exp.img" >/dev/null 2>&1
	check "$c: export: md's sha256" test "$(sha "$TMP/exp.img")" = "$want"
	zk=$lvl; quick && zk=any
	if [ -z "${zstd_done[$zk]:-}" ]; then
		zstd_done[$zk]=1
		rm -f "$TMP"/z*.zst
		for m in "$d"/member*.img; do $T "$RAIDIMG" compress -o "$TMP/z$(basename "$m").zst" "$m" 2>/dev/null; done
		check "$c: zstd members: md's sha256" test "$(catsha "$TMP"/z*.zst)" = "$want"
	fi

	# scrub and rebuild refuse, saying why
	$T "$RAIDIMG" scrub "${imgs[@]}" >/dev/null 2>"$TMP/scrub.err"; rc=$?
	check "$c: scrub refuses a reshaping array (exit $rc)" \
		bash -c "[ $rc = 2 ] && grep -q 'middle of a reshape' '$TMP/scrub.err'"
	$T "$RAIDIMG" rebuild --role 0 -o "$TMP/new0.img" "${imgs[@]:1}" >/dev/null 2>"$TMP/rb.err"; rc=$?
	check "$c: rebuild refuses too, and writes nothing (exit $rc)" \
		bash -c "[ $rc = 2 ] && grep -q 'middle of a reshape' '$TMP/rb.err' && [ ! -e '$TMP/new0.img' ]"

	# the mount
	if fuse_ok; then
		mkdir -p "$TMP/mnt"
		mounts_made+=("$TMP/mnt")
		if $T "$RAIDIMG" mount --name r.img "${imgs[@]}" "$TMP/mnt" >/dev/null 2>"$TMP/mnt.err"; then
			check "$c: mount: md's sha256" test "$(timeout 60 sha256sum <"$TMP/mnt/r.img" | cut -d' ' -f1)" = "$want"
			check "$c: mount: status gives the reshape" \
				test "$(jq -r '[.array.reshape.position_bytes, .array.reshape.previous.raid_disks] | @tsv' \
					"$TMP/mnt/status")" = "$(printf '%s\t%s' $pos "$(rmf "$c" .reshape.from_devices)")"
			unmount_now "$TMP/mnt"
		else
			fail "$c: mount failed: $(cat "$TMP/mnt.err")"
		fi
	fi
	check "$c: members unchanged" test "$before" = "$(shas "${imgs[@]}" | sort)"
done

# damaged reshape fields (checksums fixed): a clear refusal each
c=r5-grow4to5-64K-md12
d=$(fixture_dir $c "$RFIX")
fresh() { # fresh NAME: writable copies of the case's members; sets m[]
	rm -rf "${TMP:?}/$1"; mkdir -p "$TMP/$1"
	cp "$d"/member*.img "$TMP/$1"/ && chmod 644 "$TMP/$1"/*.img
	m=("$TMP/$1"/member*.img)
}
pos_s=$(rmf $c .reshape.reshape_position_sectors)
fresh same; sb_set 104 8 "$pos_s" "${m[@]}"
check "superblock helper: the reshape position rewritten as it was reads the same" \
	test "$(catsha "${m[@]}")" = "$(rmf $c .expected_sha256)"
fresh pos; sb_set 104 8 $((pos_s + 8)) "${m[@]}"
expect_fail "reshape position off a stripe" "member[0-4].img: reshape position $((pos_s + 8)) sectors is not on a stripe boundary" \
	"$RAIDIMG" cat "${m[@]}"
fresh newoff; sb_set 124 4 -4096 "${m[@]}"
expect_fail "new data offset before the image" "member[0-4].img: .*data_offset 2048 \\(new offset -4096\\) overlaps the superblock" \
	"$RAIDIMG" cat "${m[@]}"
# 0.90 metadata (0.91 during a reshape) cannot record how far a member the
# reshape added is in sync; md takes it as in sync up to the reshape
# position.  With member 4's in-sync bit cleared the array still reads - also
# without member 0, which needs member 4 below the position.
c9=r5-grow4to5-64K-md090
d9=$(fixture_dir $c9 "$RFIX")
rm -rf "$TMP/sync"; mkdir -p "$TMP/sync"; cp "$d9"/member*.img "$TMP/sync"/; chmod 644 "$TMP/sync"/*.img
for f in "$TMP/sync"/member*.img; do
	sz=$(stat -c %s "$f"); sb=$(((sz & ~65535) - 65536)); st=$((sb + 512 + 4 * 128 + 16))
	put_le "$f" $st 4 $(($(get_le32 "$f" $st) & ~4))
	put_le "$f" $((sb + 152)) 4 0
	sum=$(od -An -t u4 -v -j $sb -N 4096 "$f" | tr -s ' ' '\n' | awk 'NF { s += $1 } END { printf "%.0f", s }')
	put_le "$f" $((sb + 152)) 4 $((((sum & 0xffffffff) + (sum >> 32)) & 0xffffffff))
done
$T "$RAIDIMG" examine "$TMP/sync"/member*.img >"$TMP/sync.ex" 2>&1
check "0.91: member 4 not marked in sync: taken as in sync up to the reshape position" \
	grep -q "role 4 .*rebuilding.*in sync up to its position" "$TMP/sync.ex"
check "0.91: ... the array reads md's bytes" test "$(catsha "$TMP/sync"/member*.img)" = "$(rmf $c9 .expected_sha256)"
check "0.91: ... also without member 0" \
	test "$(catsha "$TMP/sync"/member[1-4].img)" = "$(rmf $c9 .expected_sha256)"

# A RAID5 -> RAID6 conversion (mdadm --grow --level=6 --raid-devices=5: a
# takeover to left-symmetric-6, then a layout reshape) stopped by killing
# mdadm: the position md recorded lags the data it had moved, and md itself
# reads 1.1 MiB of moved data past it (its read-back is the manifest's
# expected_sha256, not the payload's sha256).  raidimg reads exactly what md
# reads; given a position where the moved data and the data left behind
# agree (--reshape-position), it reads the payload, from every set of members.
LFIX=$SRCDIR/tests/fixtures/reshape-lagging
lc=r5to6-grow4to5-md12
dl=$(fixture_dir $lc "$LFIX")
lmf() { json_get "$LFIX/$1/manifest.json" "$2"; }
$T "$RAIDIMG" examine --json "$dl"/member*.img >"$TMP/l.json" 2>/dev/null
check "$lc: examine: RAID6, left-symmetric-6 (18) -> left-symmetric (2), 5 members both sides" \
	test "$(jq -r '[.array.level, .array.reshape.previous.layout, .array.layout, .array.reshape.previous.raid_disks, .array.raid_disks] | @tsv' "$TMP/l.json")" = "$(printf '6\t18\t2\t5\t5')"
check "$lc: raidimg reads what md read (not the payload: md's position lags)" \
	test "$(catsha "$dl"/member*.img)" = "$(lmf $lc .expected_sha256)"
$T "$RAIDIMG" cat --reshape-position 18432s "$dl"/member*.img 2>"$TMP/l.err" | sha >"$TMP/l.sha"
check "$lc: --reshape-position 18432s: the payload" test "$(cat "$TMP/l.sha")" = "$(lmf $lc .sha256)"
check "$lc: ... and cat says the position was given" grep -q "given with --reshape-position" "$TMP/l.err"
bad=0
for x in 0 1 2 3 4; do
	sub=(); for ((y = 0; y < 5; y++)); do [ $y != $x ] && sub+=("$dl/member$y.img"); done
	[ "$(catsha --reshape-position 18432s "${sub[@]}")" = "$(lmf $lc .sha256)" ] || { bad=1; echo "  without member $x: wrong"; }
done
check "$lc: --reshape-position 18432s: the payload without any one member" test $bad = 0
expect_fail "--reshape-position off a stripe" "reshape-position, .*member[0-4].img: reshape position 18433 sectors is not on a stripe boundary" \
	"$RAIDIMG" cat --reshape-position 18433s "$dl"/member*.img
expect_fail "--reshape-position not a multiple of 512" "reshape-position 1000: give array bytes" \
	"$RAIDIMG" cat --reshape-position 1000 "$dl"/member*.img
expect_fail "--reshape-position on an array not reshaping" "reshape-position: .*not in the middle of a reshape" \
	"$RAIDIMG" cat --reshape-position 0 "$(fixture_dir r5-ls-4x8M-64K-md12)"/member*.img

fresh level; sb_set 100 4 6 "${m[@]}"
expect_fail "a reshape that changes the level" "reshape from RAID5 to RAID6.*not supported" "$RAIDIMG" examine "${m[@]}"
fresh delta; sb_set 112 4 9 "${m[@]}"
expect_fail "a reshape from -4 members" "member[0-4].img: .*reshape from -4 devices \(delta 9\) is impossible" "$RAIDIMG" cat "${m[@]}"
finish
