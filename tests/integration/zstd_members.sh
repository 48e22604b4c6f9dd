#!/bin/bash
# Member images in the zstd seekable format (raidimg compress, source_zstd.c):
#  - every real-md fixture, each member compressed, assembles (members given
#    as .zst in shuffled order) to the manifest's sha256;
#  - slices at odd offsets equal the raw assembly's;
#  - compress: `zstd -d` gives the image back, the thread count does not
#    change the output, a plain .zst input is converted, OUT is not
#    overwritten without --overwrite;
#  - a plain (non-seekable) .zst member is refused with advice to convert it;
#    a truncated .zst or a corrupt seek table is refused naming the file;
#  - a damaged data frame is a read error of that member: the array is
#    rebuilt from parity (same sha256) and the frame is named on stderr.
. "$(dirname "$0")/lib.sh"

Z=$TMP/z
mkdir -p "$Z"

# (and the 4K-chunk case, which the checks after this loop use, in quick mode too)
for c in $(fixture_cases | grep -vx r6-ls-5x6M-4K-md11; echo r6-ls-5x6M-4K-md11); do
	dir=$(fixture_dir "$c")
	want=$(mf "$c" .expected_sha256)
	mkdir -p "$Z/$c"
	for img in "$dir"/member*.img; do
		# several frames per member, odd frame sizes on some cases
		"$RAIDIMG" compress --frame-size 192K --threads 2 -o "$Z/$c/$(basename "$img").zst" "$img" 2>"$TMP/err" ||
			fail "$c: compress $(basename "$img"): $(cat "$TMP/err")"
	done
	mapfile -t zimgs < <(ls "$Z/$c"/*.zst | awk 'BEGIN{srand(7)}{print rand() "\t" $0}' | sort | cut -f2)
	got=$("$RAIDIMG" cat "${zimgs[@]}" 2>"$TMP/err" | sha)
	if [ "$got" = "$want" ]; then pass "$c: cat of .zst members sha256"; else fail "$c: cat of .zst members $got != $want ($(cat "$TMP/err"))"; fi
done

# ---- compress itself ----
c=r6-ls-5x6M-4K-md11
dir=$(fixture_dir "$c")
m0=$dir/member0.img
check "compress: zstd -d gives the image back" cmp -s <(zstd -q -d -c "$Z/$c/member0.img.zst") "$m0"
"$RAIDIMG" compress --frame-size 192K --threads 1 -o "$TMP/t1.zst" "$m0" 2>/dev/null
"$RAIDIMG" compress --frame-size 192K --threads 3 -o "$TMP/t3.zst" "$m0" 2>/dev/null
check "compress: 1 and 3 threads write the same bytes" cmp -s "$TMP/t1.zst" "$TMP/t3.zst"
check "compress: 1 thread equals the 2-thread member" cmp -s "$TMP/t1.zst" "$Z/$c/member0.img.zst"
if "$RAIDIMG" compress -o "$TMP/t1.zst" "$m0" 2>"$TMP/err"; then
	fail "compress overwrote an existing output"
else
	check "compress: refuses to overwrite ($(cat "$TMP/err"))" grep -q -- "--overwrite" "$TMP/err"
fi
check "compress --overwrite replaces it" "$RAIDIMG" compress --overwrite --frame-size 64K -o "$TMP/t1.zst" "$m0"
check "compress: no .partial left" test ! -e "$TMP/t1.zst.partial"
# a plain .zst (the fixture's own member file) as input: streamed
"$RAIDIMG" compress -o "$TMP/fromplain.zst" "$FIXTURES/$c/member1.img.zst" 2>"$TMP/err"
check "compress: a plain .zst input is converted" cmp -s <(zstd -q -d -c "$TMP/fromplain.zst") "$dir/member1.img"
# a seekable input is re-framed
"$RAIDIMG" compress --frame-size 4K -o "$TMP/reframed.zst" "$TMP/fromplain.zst" 2>/dev/null
check "compress: a seekable input is re-framed" cmp -s <(zstd -q -d -c "$TMP/reframed.zst") "$dir/member1.img"
check "compress: 4K frames make a bigger file" test "$(stat -c %s "$TMP/reframed.zst")" -gt "$(stat -c %s "$TMP/fromplain.zst")"
# --hash / --record: the contents' sha256 (decompressed) and the files'
"$RAIDIMG" compress --record "$TMP/c.json" -o "$TMP/rec.zst" "$FIXTURES/$c/member2.img.zst" >"$TMP/out" 2>/dev/null
check "compress --record: contents sha256 is the raw image's" \
	test "$(jq -r .options.input_contents_sha256 "$TMP/c.json")" = "$(sha "$dir/member2.img")"
check "compress --record: the input file's sha256" \
	test "$(jq -r .options.input_sha256 "$TMP/c.json")" = "$(sha "$FIXTURES/$c/member2.img.zst")"
check "compress --record: the output's sha256" test "$(jq -r .output.sha256 "$TMP/c.json")" = "$(sha "$TMP/rec.zst")"
check "compress --hash prints both" grep -q "^sha256 $(sha "$TMP/rec.zst")  $TMP/rec.zst" "$TMP/out"
"$RAIDIMG" replay "$TMP/c.json" 2>"$TMP/err"
check "a compress record is not replayed ($(cat "$TMP/err"))" grep -q "only cat, export and examine" "$TMP/err"
# zero frames cost almost nothing
head -c 16M /dev/zero >"$TMP/zeros.img"
"$RAIDIMG" compress -o "$TMP/zeros.zst" "$TMP/zeros.img" 2>/dev/null
n=$(stat -c %s "$TMP/zeros.zst")
check "compress: 16 MiB of zeros -> $n bytes" test "$n" -lt 2000

# ---- random slices at odd offsets equal the raw assembly's ----
mapfile -t raw < <(members_shuffled "$c")
mapfile -t zs < <(ls "$Z/$c"/*.zst)
size=$(mf "$c" .array_bytes)
"$RAIDIMG" cat -o "$TMP/whole" "${raw[@]}"
check "$c: raw assembly for reference" test "$(sha "$TMP/whole")" = "$(mf "$c" .expected_sha256)"
same_slice() { # OFFSET LENGTH: $TMP/part is that slice of $TMP/whole
	[ "$(stat -c %s "$TMP/part")" -eq "$2" ] &&
		cmp -s "$TMP/part" <(tail -c +$(($1 + 1)) "$TMP/whole" | head -c "$2")
}
RANDOM=11
for i in $(seq 1 12); do
	o=$(( (RANDOM * 32768 + RANDOM) % size ))
	l=$(( (RANDOM * 7) % 300000 + 1 ))
	"$RAIDIMG" cat --offset "$o" --length "$l" "${zs[@]}" >"$TMP/part"
	check "$c: .zst slice --offset $o --length $l" same_slice "$o" "$l"
done
for ol in 1:1 4095:4097 196607:2 $((size - 3)):3; do
	o=${ol%:*}; l=${ol#*:}
	"$RAIDIMG" cat --offset "$o" --length "$l" "${zs[@]}" >"$TMP/part"
	check "$c: .zst slice across frame edges --offset $o --length $l" same_slice "$o" "$l"
done

# ---- bad .zst members ----
others=("${zs[@]:1}")
# a plain single-frame .zst: refused, with the way out
if "$RAIDIMG" cat "$FIXTURES/$c/member0.img.zst" "${others[@]}" >/dev/null 2>"$TMP/err"; then
	fail "a plain .zst member was accepted"
else
	check "plain .zst refused: names the file and says to convert ($(head -c 300 "$TMP/err"))" \
		grep -q "member0.img.zst: a plain zstd file.*raidimg compress" "$TMP/err"
fi
# truncated seekable .zst
sz=$(stat -c %s "${zs[0]}")
head -c $((sz - 100)) "${zs[0]}" >"$TMP/trunc.img.zst"
if "$RAIDIMG" cat "$TMP/trunc.img.zst" "${others[@]}" >/dev/null 2>"$TMP/err"; then
	fail "a truncated .zst member was accepted"
else
	check "truncated .zst refused naming it ($(cat "$TMP/err"))" grep -q "trunc.img.zst.*truncated" "$TMP/err"
fi
head -c $((sz / 2)) "${zs[0]}" >"$TMP/half.img.zst"
if "$RAIDIMG" cat "$TMP/half.img.zst" "${others[@]}" >/dev/null 2>"$TMP/err"; then
	fail "a half .zst member was accepted"
else
	check "half .zst refused naming it ($(cat "$TMP/err"))" grep -q "half.img.zst.*truncated" "$TMP/err"
fi
# corrupt seek tables: the skippable magic, a frame size, the frame count
corrupt() { # corrupt SRC DST OFFSET_FROM_END XORBYTE
	cp "$1" "$2"; chmod u+w "$2"
	local pos=$(( $(stat -c %s "$2") - $3 ))
	local b; b=$(od -An -tu1 -j "$pos" -N1 "$2" | tr -d ' ')
	printf "$(printf '\\%03o' $(( b ^ $4 )))" | dd of="$2" bs=1 seek="$pos" conv=notrunc status=none
}
nf=$(( ($(stat -c %s "${zs[0]}") ) ))
frames=$(od -An -tu4 -j $((nf - 9)) -N4 "${zs[0]}" | tr -d ' ')
tb=$(( 8 + frames * 12 + 9 ))
corrupt "${zs[0]}" "$TMP/magic.img.zst" "$tb" 1
corrupt "${zs[0]}" "$TMP/csize.img.zst" $((tb - 8)) 4        # entry 0's compressed size
corrupt "${zs[0]}" "$TMP/count.img.zst" 9 1                  # the frame count
corrupt "${zs[0]}" "$TMP/desc.img.zst" 5 0x20                # a reserved descriptor bit
for bad in magic csize count desc; do
	if "$RAIDIMG" cat "$TMP/$bad.img.zst" "${others[@]}" >/dev/null 2>"$TMP/err"; then
		fail "corrupt seek table ($bad) accepted"
	else
		check "corrupt seek table ($bad) refused naming the file ($(cat "$TMP/err"))" \
			grep -q "$bad.img.zst: zstd seekable image: .*\(corrupt\|reserved\|truncated\)" "$TMP/err"
	fi
done
# a damaged data frame (a byte of frame 12's compressed data; member data
# starts at 1 MiB, frames are 192K): a read error of that member only
off=$(od -v -An -tu4 -w12 -j $((nf - tb + 8)) -N $((12 * 13)) "${zs[0]}" | awk 'NR<=12{s+=$1} NR==13{print s + int($1/2)}')
cp "${zs[0]}" "$TMP/frame.img.zst"; chmod u+w "$TMP/frame.img.zst"
printf '\x55' | dd of="$TMP/frame.img.zst" bs=1 seek="$off" conv=notrunc status=none
got=$("$RAIDIMG" cat "$TMP/frame.img.zst" "${others[@]}" 2>"$TMP/err" | sha)
check "damaged data frame: rebuilt from parity, same sha256" test "$got" = "$(mf "$c" .expected_sha256)"
check "damaged data frame: named on stderr ($(head -1 "$TMP/err"))" \
	grep -q "frame.img.zst: frame 12 .*read error of this member" "$TMP/err"
check "damaged data frame: said once" test "$(grep -c "frame 12" "$TMP/err")" -eq 1
# checksum mismatch in the seek table (frame 12's entry): same outcome
corrupt "${zs[0]}" "$TMP/sum.img.zst" $((tb - 8 - 12 * 12 - 8)) 1
got=$("$RAIDIMG" cat "$TMP/sum.img.zst" "${others[@]}" 2>"$TMP/err" | sha)
check "checksum mismatch: rebuilt from parity, same sha256" test "$got" = "$(mf "$c" .expected_sha256)"
check "checksum mismatch: named on stderr ($(head -1 "$TMP/err"))" \
	grep -q "sum.img.zst: frame 12 .*checksum mismatch" "$TMP/err"
finish
