#!/bin/bash
# Bad input gets a clear message naming the file and the problem, exit 2,
# never a crash; no member image is modified.
. "$(dirname "$0")/lib.sh"

src=$(fixture_dir r5-ls-4x8M-64K-md12)
other=$(fixture_dir r5-ls-4x6M-64K-badparity)
W=$TMP/work
mkdir -p "$W"
cp "$src"/member*.img "$W"/ && chmod 644 "$W"/*.img
m=("$W"/member0.img "$W"/member1.img "$W"/member2.img "$W"/member3.img)
sums_before=$(shas "$src"/*.img "$other"/*.img | sort)

: >"$W/empty.img"
expect_fail "empty file" "empty.img.*(no RAID metadata|too small)" "$RAIDIMG" cat "$W/empty.img" "${m[@]:1}"
expect_fail "nonexistent path" "nope.img.*(No such file)" "$RAIDIMG" cat "$W/nope.img" "${m[@]:1}"
mkdir -p "$W/dir.img"
expect_fail "a directory" "dir.img.*directory" "$RAIDIMG" cat "$W/dir.img" "${m[@]:1}"

# corrupted superblock checksum (1.2: byte 4096+40 is in the set name)
cp "${m[0]}" "$W/badsum.img"
printf 'X' | dd of="$W/badsum.img" bs=1 seek=$((4096 + 40)) conv=notrunc status=none
expect_fail "corrupted superblock checksum" "badsum.img.*checksum" "$RAIDIMG" cat "$W/badsum.img" "${m[@]:1}"
expect_fail "examine: corrupted superblock checksum" "badsum.img.*checksum" \
	"$RAIDIMG" examine "$W/badsum.img" "${m[@]:1}"
"$RAIDIMG" examine "$W/badsum.img" "${m[@]:1}" >"$TMP/ex" 2>&1
check "examine prints the verdict 'not assemblable'" grep -q "not assemblable" "$TMP/ex"

# members of two different arrays
expect_fail "members of two different arrays" "different arrays" \
	"$RAIDIMG" cat "${m[0]}" "${m[1]}" "$other/member2.img" "$other/member3.img"

# two members claiming the same role
cp "${m[1]}" "$W/dup1.img"
expect_fail "two members claiming one role" "both claim role 1" "$RAIDIMG" cat "${m[@]}" "$W/dup1.img"

# too many missing members
expect_fail "too many missing members" "too many members missing" "$RAIDIMG" cat "${m[0]}" "${m[1]}"
expect_fail "examine: too many missing" "too many members missing" "$RAIDIMG" examine --json "${m[0]}" "${m[1]}"

# chunk size that is not a power of two (manual geometry)
expect_fail "chunk not a power of two" "chunk.*power of two" \
	"$RAIDIMG" cat --level 5 --chunk 3000 "${m[@]}"
expect_fail "manual options without --level" "give --level" "$RAIDIMG" cat --chunk 64K "${m[@]}"
expect_fail "bad layout name" "layout.*not a RAID5 layout" "$RAIDIMG" cat --level 5 --layout sideways "${m[@]}"
expect_fail "--order out of range" "order.*image index" "$RAIDIMG" cat --level 5 --order 0,1,2,7 "${m[@]}"
expect_fail "same image twice" "given twice" "$RAIDIMG" cat "${m[0]}" "${m[0]}" "${m[@]:2}"
expect_fail "output onto a member" "member0.img: is the image .*member0.img given as input; refusing to write over evidence" "$RAIDIMG" cat -o "${m[0]}" "${m[@]}"
expect_fail "unknown command" "unknown command" "$RAIDIMG" frobnicate
expect_fail "no members" "cat: give the member images" "$RAIDIMG" cat

# a truncated image: one is covered by parity (warning, right bytes) ...
cp "${m[2]}" "$W/trunc2.img"; truncate -s 5M "$W/trunc2.img"
want=$(jq -r .expected_sha256 "$FIXTURES/r5-ls-4x8M-64K-md12/manifest.json")
got=$("$RAIDIMG" cat "${m[0]}" "${m[1]}" "$W/trunc2.img" "${m[3]}" 2>"$TMP/err" | sha)
check "one truncated member is rebuilt from parity" test "$got" = "$want"
check "... and the user is told which" grep -q "trunc2.img: image is truncated" "$TMP/err"
# ... two are not: the offset that cannot be read is named
cp "${m[3]}" "$W/trunc3.img"; truncate -s 6M "$W/trunc3.img"
expect_fail "two truncated members in RAID5" "offset [0-9]+: cannot be read" \
	"$RAIDIMG" cat "${m[0]}" "${m[1]}" "$W/trunc2.img" "$W/trunc3.img"
# an image truncated before its superblock / data offset
head -c 100000 "${m[0]}" >"$W/tiny.img"
expect_fail "image truncated inside the metadata area" "tiny.img" "$RAIDIMG" cat "$W/tiny.img" "${m[@]:1}"

# no member of the shared fixture dirs was modified by anything above
check "fixture members unchanged" test "$sums_before" = "$(shas "$src"/*.img "$other"/*.img | sort)"
finish
