#!/bin/bash
# Bad input to scrub and rebuild: a clear message naming the problem, exit
# 2, nothing written.
. "$(dirname "$0")/lib.sh"

a=$(fixture_dir r5-ls-4x8M-64K-md12)       # an array of 3 x 7 MiB
b=$(fixture_dir r6-ls-6x6M-64K-md12)
A=("$a"/member*.img)
B=("$b"/member*.img)
size=$((21 << 20))
sums=$(shas "${A[@]}" "${B[@]}" | sort)

# --range
expect_fail "--range past the end" "END $((size + 1)) is past the end of the array \\($size bytes\\)" \
	"$RAIDIMG" scrub --range 0:$((size + 1)) "${A[@]}"
expect_fail "--range START not below END" "START 4096 is not below END 4096" "$RAIDIMG" scrub --range 4096:4096 "${A[@]}"
expect_fail "--range START past the end" "START .* is not below END" "$RAIDIMG" scrub --range 30M: "${A[@]}"
expect_fail "--range without a colon" "give START:END" "$RAIDIMG" scrub --range 1M "${A[@]}"
expect_fail "--range not sizes" "START and END must be sizes" "$RAIDIMG" scrub --range x:y "${A[@]}"
expect_fail "--speed-limit-max nonsense" "speed-limit-max fast: give KiB/s" "$RAIDIMG" scrub --speed-limit-max fast "${A[@]}"
expect_fail "--request-size too small" "request-size 1K: give a size from 4K to 1G" "$RAIDIMG" scrub --request-size 1K "${A[@]}"

# checkpoints: of another array, another range, damaged
cp=$TMP/a.cp
RAIDIMG_SCRUB_TRACE=$TMP/trace "$RAIDIMG" scrub --checkpoint "$cp" --request-size 64K --speed-limit-min 0 \
	--speed-limit-max 64K "${A[@]}" >/dev/null 2>&1 &
pid=$!
for ((i = 0; i < 300; i++)); do grep -q batch "$TMP/trace" 2>/dev/null && break; sleep 0.1; done
kill -TERM $pid; wait $pid      # stops after the batch in hand, writing the checkpoint
check "an interrupted scrub leaves its checkpoint" test -s "$cp"
cp "$cp" "$TMP/saved.cp"
expect_fail "checkpoint of another array" "a.cp: checkpoint of another array \\(uuid=" \
	"$RAIDIMG" scrub --checkpoint "$cp" "${B[@]}"
check "the other array's checkpoint is left alone" cmp -s "$cp" "$TMP/saved.cp"
expect_fail "checkpoint of another range" "a.cp: checkpoint covers stripes 0-112, this scrub 0-1; give the same --range" \
	"$RAIDIMG" scrub --checkpoint "$cp" --range 0:4096 "${A[@]}"
expect_fail "checkpoint of a check, used for a repair" "checkpoint of a check, not a repair" \
	bash -c "mkdir -p '$TMP/rw' && cp '${A[0]}' '${A[1]}' '${A[2]}' '${A[3]}' '$TMP/rw/' && chmod 644 '$TMP/rw/'*.img &&
	         '$RAIDIMG' scrub --repair --checkpoint '$cp' '$TMP/rw/'*.img"
echo "garbage" >"$TMP/bad.cp"
expect_fail "a damaged checkpoint" "bad.cp: not a raidimg scrub checkpoint" "$RAIDIMG" scrub --checkpoint "$TMP/bad.cp" "${A[@]}"

# --repair on read-only images (mode 0444, even as root), on members of
# which one is not writable at all
expect_fail "--repair on read-only files" "member.\\.img: the image is read-only \\(mode 0444\\).*writable copies" \
	"$RAIDIMG" scrub --repair "${A[@]}"

# scrub of a degraded array with no redundancy left
expect_fail "scrub of RAID5 without a member" "no redundancy left to check" "$RAIDIMG" scrub "${A[@]:1}"

# rebuild
W=$TMP/work
mkdir -p "$W"
expect_fail "rebuild without --role" "rebuild: give the members, --role K and -o" "$RAIDIMG" rebuild -o "$W/x.img" "${A[@]}"
expect_fail "rebuild of a role the array lacks" "role 7: the array has roles 0-3" \
	"$RAIDIMG" rebuild --role 7 -o "$W/x.img" "${A[@]}"
expect_fail "rebuild onto a member" "is the image .*member1.img given as input; refusing to write over evidence" \
	"$RAIDIMG" rebuild --role 1 -o "${A[1]}" "${A[@]}"
: >"$W/exists.img"
expect_fail "rebuild onto an existing file" "exists.img: exists; refusing to overwrite it \\(--overwrite" \
	"$RAIDIMG" rebuild --role 1 -o "$W/exists.img" "${A[@]}"
check "the existing file is untouched" test ! -s "$W/exists.img"
expect_fail "rebuild with too many members missing" "role 1 cannot be rebuilt: roles 0 .* are missing too and RAID5 survives only 1" \
	"$RAIDIMG" rebuild --role 1 -o "$W/y.img" "${A[@]:2}" "${A[1]}"
check "no partial output is left behind" test ! -e "$W/y.img"
c=r6-ls-6x6M-64K-missing1-4
m=$(fixture_dir "$c")
expect_fail "rebuild of RAID6 role 1 without role 0 (3 missing)" "too many members missing: 3 of 6 roles" \
	"$RAIDIMG" rebuild --role 1 -o "$W/z.img" "$m"/member{2,3,5}.img

after=$(shas "${A[@]}" "${B[@]}" | sort)
check "no member image was modified" test "$sums" = "$after"
finish
