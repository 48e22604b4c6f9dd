#!/bin/bash
# The command line takes mdadm's habits and says what is wrong in one line:
# an unknown, ambiguous or valueless option (and a missing argument) gets
# one line and the hint "Try 'raidimg CMD --help'", never the whole help;
# --level raid5 / --level=5, --chunk 64 (KiB, as mdadm) and --raid-devices
# read the fixtures as md does, in cat and create; --order must name every
# image once; a manual geometry that disagrees with the md superblocks on
# the images is refused (the issue's `--level 5 --chunk 64K --data-offset 1M
# m1 m0 m2 m3`), with --force read with a warning; cat and export -o -
# refuse a terminal as standard output (under script(1)'s pty) but write to
# a pipe or -o.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C

c=r5-ls-4x8M-64K-md12
d=$(fixture_dir "$c")
m=("$d"/member0.img "$d"/member1.img "$d"/member2.img "$d"/member3.img)
want=$(mf "$c" .expected_sha256)

# one_line_and_hint DESCRIPTION CMD PATTERN ARGS...: exit 2, stderr is the
# problem (matching PATTERN) and the hint, two lines, nothing on stdout
one_line_and_hint() {
	local desc=$1 cmd=$2 pat=$3 rc; shift 3
	"$RAIDIMG" "$cmd" "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?
	if [ $rc -ne 2 ] || [ -s "$TMP/out" ] || [ "$(wc -l <"$TMP/err")" -ne 2 ] ||
		! head -n1 "$TMP/err" | grep -Eq "^raidimg: $cmd: $pat\$" ||
		[ "$(tail -n1 "$TMP/err")" != "Try 'raidimg $cmd --help' for more information." ]; then
		fail "$desc: exit $rc, stderr: $(cat "$TMP/err")"
	else
		pass "$desc: $(head -n1 "$TMP/err")"
	fi
}

for cmd in examine cat create mount scrub scrub-merge rebuild compress export replay map detect; do
	one_line_and_hint "$cmd: an unknown option" "$cmd" "unrecognized option '--frobnicate'" --frobnicate x
done
one_line_and_hint "overlay: an unknown option" overlay "unrecognized option '--frobnicate'" info --frobnicate x
one_line_and_hint "an unknown short option" cat "unrecognized option '-x'" -x "${m[@]}"
one_line_and_hint "a value missing" cat "option '--offset' needs a value" "${m[@]}" --offset
one_line_and_hint "a short option's value missing" cat "option '-o' needs a value" "${m[@]}" -o
one_line_and_hint "a value for a flag" examine "option '--json' takes no value" --json=yes "${m[@]}"
one_line_and_hint "an ambiguous abbreviation" scrub "option '--ch' is ambiguous: --checkpoint, --checkpoint-interval, --chunk" \
	--ch 1 "${m[@]}"
one_line_and_hint "no members" examine "give the member images"
one_line_and_hint "mount without a mountpoint" mount "give the member images and then the mountpoint" "${m[0]}"
"$RAIDIMG" >"$TMP/out" 2>"$TMP/err"; rc=$?
check "no command: one line and the hint, exit 2" \
	test "$rc $(cat "$TMP/err" | tr '\n' '|')" = "2 raidimg: give a command|Try 'raidimg --help' for more information.|"
"$RAIDIMG" --frobnicate >/dev/null 2>"$TMP/err"
check "an option before the command" grep -q "unrecognized option '--frobnicate' before the command" "$TMP/err"

# ---- mdadm's spellings ----
catsha() { "$RAIDIMG" cat "$@" 2>"$TMP/err" | sha; }
for spell in "--level raid5" "--level=5" "--level RAID5" "--level=raid5"; do
	# shellcheck disable=SC2086
	check "$spell --chunk 64 (KiB, as mdadm): md's bytes" \
		test "$(catsha $spell --chunk 64 --data-offset 1M "${m[@]}")" = "$want"
done
check "--chunk=64 --raid-devices=4" test "$(catsha --level 5 --chunk=64 --raid-devices=4 --data-offset 1M "${m[@]}")" = "$want"
check "--chunk 64K still 64 KiB" test "$(catsha --level 5 --chunk 64K --raid-devices 4 --data-offset 2048s "${m[@]}")" = "$want"
"$RAIDIMG" cat --help >"$TMP/help"
check "--help says a plain --chunk is KiB" grep -q "number is KiB, as in mdadm: --chunk 64 = 64K" "$TMP/help"
check "--help names --raid-devices and raid6" grep -q -- "--raid-devices N" "$TMP/help"
expect_fail "--raid-devices that the images do not make" "raid-devices 5, but the images given make 4 members" \
	"$RAIDIMG" cat --level 5 --chunk 64 --raid-devices 5 "${m[@]}"
expect_fail "--raid-devices without --level" "describe a manual geometry: give --level too" \
	"$RAIDIMG" cat --raid-devices 4 "${m[@]}"
expect_fail "--level raid1" "level raid1: raidimg handles RAID levels 4, 5 and 6 \(also written raid4, raid5, raid6\)" \
	"$RAIDIMG" cat --level raid1 "${m[@]}"
expect_fail "--chunk 3 (3 KiB)" "chunk 3: the chunk size must be a power of two from 4K to 1G \(a plain number is KiB" \
	"$RAIDIMG" cat --level 5 --chunk 3 "${m[@]}"
"$RAIDIMG" create --level raid6 --raid-devices 4 --chunk 64 --size 2M -o "$TMP/new" >/dev/null 2>"$TMP/err"
check "create --level raid6 --raid-devices 4 --chunk 64: a RAID6 of 4 with 64 KiB chunks ($(cat "$TMP/err"))" \
	jq -e '.array | .level == 6 and .raid_disks == 4 and .chunk_bytes == 65536' \
	<("$RAIDIMG" examine --json "$TMP"/new/member*.img) >/dev/null

# ---- --order names every image once ----
expect_fail "--order leaving an image out" \
	"order 0,1,2 names 3 of the 4 images given: image 3 \(.*member3.img\) is not in it" \
	"$RAIDIMG" cat --level 5 --chunk 64 --data-offset 1M --order 0,1,2 "${m[@]}"
expect_fail "--order with missing leaving an image out" "order 0,missing,2,1 names 3 of the 4 images given: image 3" \
	"$RAIDIMG" cat --level 5 --chunk 64 --data-offset 1M --order 0,missing,2,1 "${m[@]}"
expect_fail "--order naming an image twice" "order 0,1,1,3: image 1 \(.*member1.img\) is named 2 times" \
	"$RAIDIMG" cat --level 5 --chunk 64 --data-offset 1M --order 0,1,1,3 "${m[@]}"
check "--order 0,1,missing,3 with three images: degraded, md's bytes" \
	test "$(catsha --level 5 --chunk 64 --data-offset 1M --order 0,1,missing,2 "${m[0]}" "${m[1]}" "${m[3]}")" = "$want"

# ---- a manual geometry that disagrees with the superblocks ----
sw=("${m[1]}" "${m[0]}" "${m[2]}" "${m[3]}")
expect_fail "the issue's examine --level 5 --chunk 64K --data-offset 1M m1 m0 m2 m3" \
	"manual geometry disagrees with the md superblocks on 2 images" \
	"$RAIDIMG" examine --level 5 --chunk 64K --data-offset 1M "${sw[@]}"
check "... names member1: role 1 there, 0 here" grep -q "member1.img: md 1.2 superblock: role 1 there, 0 here" "$TMP/err"
check "... names member0: role 0 there, 1 here" grep -q "member0.img: md 1.2 superblock: role 0 there, 1 here" "$TMP/err"
check "... examine's verdict says it" grep -q "verdict        : not assemblable: the manual geometry disagrees" "$TMP/out"
expect_fail "cat: a chunk and data offset that disagree" \
	"chunk 64.0 KiB there, 512.0 KiB here; data offset 1048576 bytes there, 0 bytes here" \
	"$RAIDIMG" cat --level 5 "${m[@]}"
expect_fail "a level and member count that disagree" "level raid5 there, raid6 here; members 4 there, 5 here" \
	"$RAIDIMG" scrub --level 6 --chunk 64 --data-offset 1M "${m[@]}" missing
"$RAIDIMG" cat --force --level 5 --chunk 64K --data-offset 1M "${sw[@]}" 2>"$TMP/err" >/dev/null; rc=$?
check "--force reads with the manual geometry anyway (exit $rc)" test $rc -eq 0
check "... and says so" grep -q "warning: the manual geometry disagrees with the md superblocks on 2 images; read with the manual geometry as --force asks" "$TMP/err"
check "a manual geometry that agrees: no word" test "$(catsha --level 5 --chunk 64 --data-offset 1M "${m[@]}")" = "$want" -a ! -s "$TMP/err"

# ---- cat to a terminal ----
command -v script >/dev/null || { fail "script(1) is missing (package bsdutils, in scripts/deps)"; finish; }
# underpty CMD...: run CMD with a pty as stdin/stdout/stderr; its output in $TMP/pty, its status returned
underpty() { timeout 60 script -qec "$(printf '%q ' "$@")" /dev/null >"$TMP/pty" 2>&1; }
underpty "$RAIDIMG" cat "${m[@]}"; rc=$?
check "cat to a terminal: refused, exit 2 ($rc)" test $rc -eq 2
check "... with the reason and the way out" grep -q "standard output is a terminal: refusing to write the array's bytes there (give -o FILE, or a pipe" "$TMP/pty"
check "... and no binary bytes" test "$(wc -c <"$TMP/pty")" -lt 400
underpty bash -c "\"$RAIDIMG\" cat ${m[*]} | sha256sum"; rc=$?
check "cat to a pipe under a terminal: written ($rc)" grep -q "$want" "$TMP/pty"
underpty "$RAIDIMG" cat -o "$TMP/out.img" "${m[@]}"; rc=$?
check "cat -o FILE under a terminal: written ($rc)" test "$(sha "$TMP/out.img")" = "$want"
underpty "$RAIDIMG" export -o - "${m[@]}"; rc=$?
check "export -o - to a terminal: refused ($rc)" grep -q "standard output is a terminal" "$TMP/pty"
finish
