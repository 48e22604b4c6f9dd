#!/bin/bash
# raidimg export: the assembled array as a file.
#  - raw: the same sha256 as cat (healthy and degraded fixtures); all-zero
#    blocks are holes (a zero-filled array takes almost no space) while a
#    partly written one keeps its data blocks; --offset/--length equal cat's
#    slice; an existing output is kept unless --overwrite; a member is never
#    the output; a failed export leaves nothing behind;
#  - --zstd: `zstd -d` gives the raw export; raidimg reads it back (as the
#    input of compress, and as both halves of a 2-member RAID5, i.e. a
#    mirror, through the manual geometry).
. "$(dirname "$0")/lib.sh"

for c in r5-ls-4x8M-64K-md12 r6-ls-6x6M-64K-missing1-4 r5-la-4x6M-32K-md090; do
	mapfile -t imgs < <(members_shuffled "$c")
	want=$(mf "$c" .expected_sha256)
	"$RAIDIMG" export -o "$TMP/$c.img" "${imgs[@]}" 2>"$TMP/err"
	check "$c: raw export sha256" test "$(sha "$TMP/$c.img")" = "$want"
	"$RAIDIMG" export --zstd --frame-size 256K -o "$TMP/$c.zst" "${imgs[@]}" 2>"$TMP/err"
	check "$c: zstd export, zstd -d equals the raw export" cmp -s <(zstd -q -d -c "$TMP/$c.zst") "$TMP/$c.img"
	check "$c: no .partial left" test ! -e "$TMP/$c.zst.partial" -a ! -e "$TMP/$c.img.partial"
done

c=r5-ls-4x8M-64K-md12
mapfile -t imgs < <(members_shuffled "$c")
want=$(mf "$c" .expected_sha256)
size=$(mf "$c" .array_bytes)

# raidimg reads the zstd export: re-framed by compress ...
"$RAIDIMG" compress --frame-size 64K -o "$TMP/again.zst" "$TMP/$c.zst" 2>/dev/null
check "zstd export read back by compress" cmp -s <(zstd -q -d -c "$TMP/again.zst") "$TMP/$c.img"
# ... and as a member: a 2-member RAID5 is a mirror, so the array is the image
cp "$TMP/$c.zst" "$TMP/copy.zst"
"$RAIDIMG" cat --level 5 --chunk 64K "$TMP/$c.zst" "$TMP/copy.zst" >"$TMP/mirror" 2>"$TMP/err"
check "zstd export read back as a member ($(cat "$TMP/err"))" cmp -s "$TMP/mirror" "$TMP/$c.img"
"$RAIDIMG" cat --level 5 --chunk 64K "$TMP/$c.zst" missing >"$TMP/mirror1" 2>/dev/null
check "zstd export as the only member left of a 2-member RAID5" cmp -s "$TMP/mirror1" "$TMP/$c.img"

# slices
for ol in 1:12345 65535:131073 $((size - 5000)):5000; do
	o=${ol%:*}; l=${ol#*:}
	"$RAIDIMG" export --offset "$o" --length "$l" -o "$TMP/slice" --overwrite "${imgs[@]}" 2>/dev/null
	"$RAIDIMG" cat --offset "$o" --length "$l" "${imgs[@]}" >"$TMP/catslice"
	check "export --offset $o --length $l equals cat's" cmp -s "$TMP/slice" "$TMP/catslice"
	check "export --offset $o --length $l has $l bytes" test "$(stat -c %s "$TMP/slice")" -eq "$l"
done
"$RAIDIMG" export --zstd --offset 77777 --length 1000000 -o "$TMP/slice.zst" "${imgs[@]}" 2>/dev/null
"$RAIDIMG" cat --offset 77777 --length 1000000 "${imgs[@]}" >"$TMP/catslice"
check "export --zstd of a slice" cmp -s <(zstd -q -d -c "$TMP/slice.zst") "$TMP/catslice"

# to standard output and to a FIFO (no holes possible: every byte written)
"$RAIDIMG" export -o - "${imgs[@]}" 2>/dev/null >"$TMP/stdout.img"
check "export -o - writes the array to stdout" test "$(sha "$TMP/stdout.img")" = "$want"
mkfifo "$TMP/fifo"
sha <"$TMP/fifo" >"$TMP/fifo.sha" &
"$RAIDIMG" export -o "$TMP/fifo" "${imgs[@]}" 2>"$TMP/err"
wait
check "export into a FIFO ($(cat "$TMP/err"))" test "$(cat "$TMP/fifo.sha")" = "$want"

# an existing output is kept; a member is never the output
if "$RAIDIMG" export -o "$TMP/$c.img" "${imgs[@]}" 2>"$TMP/err"; then
	fail "export overwrote an existing file"
else
	check "existing output kept ($(cat "$TMP/err"))" grep -q -- "--overwrite" "$TMP/err"
fi
check "--overwrite replaces it" "$RAIDIMG" export --overwrite -o "$TMP/$c.img" "${imgs[@]}"
check "  with the same bytes" test "$(sha "$TMP/$c.img")" = "$want"
cp "${imgs[0]}" "$TMP/m0.img"
chmod u+w "$TMP/m0.img"
before=$(sha "$TMP/m0.img")
if "$RAIDIMG" export --overwrite -o "$TMP/m0.img" "$TMP/m0.img" "${imgs[@]:1}" 2>"$TMP/err"; then
	fail "export wrote over a member"
else
	check "a member is never the output ($(cat "$TMP/err"))" grep -q "evidence" "$TMP/err"
fi
check "  the member is unchanged" test "$(sha "$TMP/m0.img")" = "$before"

# sparse: a zero-filled array exports to holes
"$RAIDIMG" create --level 5 --devices 4 --chunk 64K --size 8M -o "$TMP/zero" >/dev/null
"$RAIDIMG" export -o "$TMP/zero.img" "$TMP"/zero/member*.img 2>/dev/null
zsize=$(stat -c %s "$TMP/zero.img")
blocks=$(stat -c %b "$TMP/zero.img")
check "zero array: export has the array's size ($zsize)" test "$zsize" -eq 22020096
check "zero array: export is all zeros" cmp -s "$TMP/zero.img" <(head -c "$zsize" /dev/zero)
check "zero array: export allocates almost nothing ($blocks 512-byte blocks)" test "$blocks" -le 64
# a partly written array: data blocks allocated, the zero rest not
head -c 1M /dev/urandom >"$TMP/data"
"$RAIDIMG" create --level 5 --devices 4 --chunk 64K --size 8M --from "$TMP/data" -o "$TMP/part" >/dev/null
"$RAIDIMG" export -o "$TMP/part.img" "$TMP"/part/member*.img 2>/dev/null
blocks=$(stat -c %b "$TMP/part.img")
check "partly written array: first MiB is the data" cmp -s <(head -c 1M "$TMP/part.img") "$TMP/data"
check "partly written array: the rest is zeros" cmp -s <(tail -c +$((1048576 + 1)) "$TMP/part.img") \
	<(head -c $((22020096 - 1048576)) /dev/zero)
check "partly written array: ~1 MiB allocated ($blocks blocks)" test "$blocks" -ge 2048 -a "$blocks" -le 2300
"$RAIDIMG" export --zstd -o "$TMP/zero.zst" "$TMP"/zero/member*.img 2>/dev/null
n=$(stat -c %s "$TMP/zero.zst")
check "zero array: zstd export is small ($n bytes)" test "$n" -lt 4000

# a failed export leaves nothing: two members of a RAID5 fail in one stripe
c=r5-ls-4x8M-64K-md12
dir=$(fixture_dir "$c")
off=$(( $(mf "$c" '.members[0].data_offset_bytes') + 3 * 65536 ))
export RAIDIMG_FAULTS="$dir/member0.img:eio@$off+4096;$dir/member1.img:eio@$off+4096"
if "$RAIDIMG_FAULTY" export -o "$TMP/failed.img" "$dir"/member*.img 2>"$TMP/err"; then
	fail "export through two failing members succeeded"
else
	check "failed export says where ($(grep -m1 'cannot be read' "$TMP/err"))" grep -q "cannot be read" "$TMP/err"
	check "failed export leaves no file" test ! -e "$TMP/failed.img" -a ! -e "$TMP/failed.img.partial"
fi
unset RAIDIMG_FAULTS
finish
