#!/bin/bash
# Members that fail to read: ranges made to fail with RAIDIMG_FAULTS (the
# fault-injecting source, src/source_fault.c) are rebuilt from parity when
# redundancy allows, byte for byte, and counted; when it does not, cat stops
# at the exact first array offset that cannot be read, after writing every
# byte before it, and exits 2.
. "$(dirname "$0")/lib.sh"

# --- geometry helpers (left-symmetric, the fixtures used here) ---
# ls_data LEVEL N STRIPE D: the member holding data chunk D of STRIPE
ls_data() {
	local p=$(($2 - 1 - $3 % $2))
	if [ "$1" = 5 ]; then echo $(((p + 1 + $4) % $2)); else echo $(((p + 2 + $4) % $2)); fi
}
ls_p() { echo $(($2 - 1 - $3 % $2)); }          # ls_p LEVEL N STRIPE
ls_q() { echo $(((2 * $2 - $3 % $2) % $2)); }     # (p + 1) mod n

# run NAME FAULTS ARGS...: raidimg cat with RAIDIMG_FAULTS=FAULTS, output in
# $TMP/NAME.out, stderr in $TMP/NAME.err, exit status in $rc
run() {
	local name=$1 faults=$2; shift 2
	RAIDIMG_FAULTS=$faults "$RAIDIMG_FAULTY" cat --stats "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
	rc=$?
}
stat_of() { grep '^{' "$TMP/$1.err" | tail -n1 | jq -r ".$2"; }
# count_is VALUE WANT: WANT is a number, '+' (more than 0) or '-' (any)
count_is() {
	case $2 in
	-) true ;;
	+) [ "$1" -gt 0 ] ;;
	*) [ "$1" = "$2" ] ;;
	esac
}
# expect_good NAME WANT_SHA RECOVERED REBUILT: exit 0, the right bytes, and
# the counts of read errors recovered and stripes rebuilt (see count_is)
expect_good() {
	local name=$1 want=$2 rec=$3 reb=$4 got grec greb
	got=$(sha "$TMP/$name.out")
	if [ "$rc" -ne 0 ]; then fail "$name: exit status $rc ($(grep -v warning "$TMP/$name.err" | head -c 300))"; return; fi
	if [ "$got" != "$want" ]; then fail "$name: wrong bytes (sha256 $got)"; return; fi
	grec=$(stat_of "$name" read_errors_recovered) greb=$(stat_of "$name" stripes_rebuilt)
	if ! count_is "$grec" "$rec" || ! count_is "$greb" "$reb"; then
		fail "$name: read_errors_recovered $grec (want $rec), stripes_rebuilt $greb (want $reb)"
		return
	fi
	pass "$name: right bytes, $grec read errors recovered, $greb stripes rebuilt"
}
# expect_eio NAME GOOD_FILE OFFSET: exit 2, the offset named, exactly the
# bytes before it written and equal to GOOD_FILE's
expect_eio() {
	local name=$1 good=$2 at=$3 size
	size=$(stat -c %s "$TMP/$name.out")
	if [ "$rc" -ne 2 ]; then fail "$name: exit status $rc, want 2"; return; fi
	if ! grep -q "array offset $at: cannot be read" "$TMP/$name.err"; then
		fail "$name: want 'array offset $at: cannot be read', got: $(grep -v warning "$TMP/$name.err" | head -c 300)"
		return
	fi
	if [ "$size" -ne "$at" ]; then fail "$name: $size bytes written, want the $at before the bad offset"; return; fi
	if ! cmp -s -n "$at" "$TMP/$name.out" "$good"; then fail "$name: the bytes before offset $at differ"; return; fi
	pass "$name: stops at array offset $at with the $at bytes before it right"
}

# ---------------- RAID5: 4 members, 64K chunks, data at 1 MiB ----------------
R5=r5-ls-4x8M-64K-md12
d5=$(fixture_dir $R5)
m5=("$d5"/member0.img "$d5"/member1.img "$d5"/member2.img "$d5"/member3.img)
sha5=$(mf $R5 .expected_sha256)
CB=65536 DOFF=1048576
"$RAIDIMG" cat "${m5[@]}" >"$TMP/good5"
check "RAID5 fixture reads right without faults" test "$(sha "$TMP/good5")" = "$sha5"
moff() { echo $((DOFF + $1 * CB + $2)); }        # moff STRIPE COLUMN: image offset

# one failing range over three rows of member 1 (unaligned): in row 10 it
# holds P, in rows 11 and 12 data -> 3 read errors covered, 2 stripes rebuilt
run r5-one "${m5[1]}:$(moff 10 1000)+140000" --threads 1 "${m5[@]}"
expect_good r5-one "$sha5" 3 2
check "r5-one: cat says how many read errors were recovered" \
	grep -q "3 member read errors were recovered from parity" "$TMP/r5-one.err"
check "r5-one: the fault source announces itself" \
	grep -q "warning: RAIDIMG_FAULTS (a test facility) is set: reads of .*member1.img" "$TMP/r5-one.err"

# two members failing in different stripes of one segment (and one request)
# (stripe 20: data 0 on member 0; stripe 30: data 1 on member 3)
run r5-two-stripes "${m5[$(ls_data 5 4 20 0)]}:$(moff 20 0)+4K;${m5[$(ls_data 5 4 30 1)]}:$(moff 30 8192)+4K" \
	--threads 1 "${m5[@]}"
expect_good r5-two-stripes "$sha5" 2 2

# two members failing in one stripe but in different 4K blocks
s=7 da=$(ls_data 5 4 7 0) db=$(ls_data 5 4 7 2)
run r5-two-blocks "${m5[$da]}:$(moff $s 0)+4K;${m5[$db]}:$(moff $s 4096)+4K" --threads 2 "${m5[@]}"
expect_good r5-two-blocks "$sha5" 2 1

# two members failing in the same block of one stripe: data chunk 1 of
# stripe 5 first fails at column 8K -> array offset (5*3+1)*64K + 8K
s=5 da=$(ls_data 5 4 5 1) db=$(ls_data 5 4 5 2)
run r5-same-block "${m5[$da]}:$(moff $s 8192)+4K;${m5[$db]}:$(moff $s 8192)+4K" --threads 2 "${m5[@]}"
expect_eio r5-same-block "$TMP/good5" $(((s * 3 + 1) * CB + 8192))
# the same block of data 1, and the whole chunk of data 2: only that block
# is lost (the rest of data 2 is rebuilt), so the same first offset
run r5-same-block2 "${m5[$da]}:$(moff $s 8192)+4K;${m5[$db]}:$(moff $s 0)+64K" --threads 2 "${m5[@]}"
expect_eio r5-same-block2 "$TMP/good5" $(((s * 3 + 1) * CB + 8192))

# the failing block is P in one member and data in another: data cannot be
# rebuilt either (P is gone) -> offset of the data block
s=9 dp=$(ls_p 5 4 9) dd=$(ls_data 5 4 9 0)
run r5-data-and-p "${m5[$dp]}:$(moff $s 61440)+4K;${m5[$dd]}:$(moff $s 61440)+4K" "${m5[@]}"
expect_eio r5-data-and-p "$TMP/good5" $(((s * 3) * CB + 61440))

# failures only in P chunks: no effect on the bytes, nothing to rebuild
f=""
for s in 3 4 5 6 40 41; do f+="${f:+;}${m5[$(ls_p 5 4 $s)]}:$(moff $s 0)+64K"; done
run r5-p-only "$f" --threads 1 "${m5[@]}"
expect_good r5-p-only "$sha5" - 0

# short reads: the image seems to end inside a data chunk
s=12 dd=$(ls_data 5 4 12 1)
run r5-short "${m5[$dd]}:short@$(moff $s 20480)+1" --threads 1 "${m5[@]}"
expect_good r5-short "$sha5" 1 1

# a member whose whole data area fails is like a missing one
run r5-dead-member "${m5[2]}:1M+1T" "${m5[@]}"
check "r5-dead-member: every read fails, yet the bytes are right" test "$rc" = 0 -a "$(sha "$TMP/r5-dead-member.out")" = "$sha5"

# a failure with a member missing: nothing is left to cover it.  Member 3
# is absent; stripe 15 has P on member 0 and data 0 on member 1, failing.
run r5-missing-plus-fault "${m5[$(ls_data 5 4 15 0)]}:$(moff 15 0)+4K" "${m5[0]}" "${m5[1]}" "${m5[2]}"
# (the bytes before it come from the degraded array, which is right)
expect_eio r5-missing-plus-fault "$TMP/good5" $((15 * 3 * CB))

# small reads (a single stripe, the column window path) over a fault
s=18 dd=$(ls_data 5 4 18 2)
off=$(((s * 3 + 2) * CB + 3000))
run r5-small-read "${m5[$dd]}:$(moff $s 0)+64K" --offset $off --length 5000 "${m5[@]}"
check "r5-small-read: 5000 bytes inside a failing chunk are rebuilt" \
	cmp -s "$TMP/r5-small-read.out" <(tail -c +$((off + 1)) "$TMP/good5" | head -c 5000)
# a read straddling two data chunks, each failing on a different member
off=$(((s * 3 + 1) * CB + 60000))
run r5-small-straddle "${m5[$(ls_data 5 4 18 1)]}:$(moff $s 61440)+4K;${m5[$dd]}:$(moff $s 0)+4K" \
	--offset $off --length 10000 "${m5[@]}"
check "r5-small-straddle: a read over two failing chunks is rebuilt" \
	cmp -s "$TMP/r5-small-straddle.out" <(tail -c +$((off + 1)) "$TMP/good5" | head -c 10000)

# ---------------- RAID6: 6 members, 64K chunks ----------------
R6=r6-ls-6x6M-64K-md12
d6=$(fixture_dir $R6)
m6=("$d6"/member0.img "$d6"/member1.img "$d6"/member2.img "$d6"/member3.img "$d6"/member4.img "$d6"/member5.img)
sha6=$(mf $R6 .expected_sha256)
"$RAIDIMG" cat "${m6[@]}" >"$TMP/good6"
check "RAID6 fixture reads right without faults" test "$(sha "$TMP/good6")" = "$sha6"

# two members failing in the same block: rebuilt from P and Q
s=11 da=$(ls_data 6 6 11 0) db=$(ls_data 6 6 11 3)
run r6-two "${m6[$da]}:$(moff $s 16384)+8K;${m6[$db]}:$(moff $s 16384)+8K" --threads 2 "${m6[@]}"
expect_good r6-two "$sha6" 2 1
# a data member and P failing together
s=13 dp=$(ls_p 6 6 13) dd=$(ls_data 6 6 13 2)
run r6-data-p "${m6[$dp]}:$(moff $s 0)+64K;${m6[$dd]}:$(moff $s 0)+64K" --threads 1 "${m6[@]}"
expect_good r6-data-p "$sha6" 2 1
# three failing in the same block: the first data chunk among them
s=14 d0=$(ls_data 6 6 14 0) d1=$(ls_data 6 6 14 1) d3=$(ls_data 6 6 14 3)
run r6-three "${m6[$d1]}:$(moff $s 32768)+4K;${m6[$d3]}:$(moff $s 32768)+4K;${m6[$d0]}:$(moff $s 36864)+4K,$(moff $s 32768)+4K" "${m6[@]}"
expect_eio r6-three "$TMP/good6" $(((s * 4) * CB + 32768))
# P and Q failing only: no effect
f=""
for s in 2 3 20; do f+="${f:+;}${m6[$(ls_p 6 6 $s)]}:$(moff $s 0)+64K;${m6[$(ls_q 6 6 $s)]}:$(moff $s 0)+64K"; done
run r6-pq-only "$f" --threads 1 "${m6[@]}"
expect_good r6-pq-only "$sha6" - 0
# one member missing and one failing: still covered
run r6-missing-plus-fault "${m6[$(ls_data 6 6 4 0)]}:$(moff 4 0)+64K" \
	$(for i in 0 1 2 3 4 5; do [ "${m6[$i]}" = "${m6[$(ls_data 6 6 4 1)]}" ] || echo "${m6[$i]}"; done)
expect_good r6-missing-plus-fault "$sha6" 1 +

# two members missing (real md fixture, roles 1 and 4) and one failing:
# not covered.  Stripe 6: P on 5, Q on 0, data 0..3 on members 1..4.
# Member 2 (data 1) fails at 4K..8K: there data 0, 1 and 3 are all lost,
# and data 0 comes first.
R6M=r6-ls-6x6M-64K-missing1-4
d6m=$(fixture_dir $R6M)
"$RAIDIMG" cat "$d6m"/member*.img >"$TMP/good6m" 2>/dev/null
check "r6 missing 1,4 reads right without faults" test "$(sha "$TMP/good6m")" = "$(mf $R6M .expected_sha256)"
run r6m-fault "$d6m/member2.img:$(moff 6 4096)+4K" "$d6m"/member*.img
expect_eio r6m-fault "$TMP/good6m" $((6 * 4 * CB + 4096))

# ---------------- big chunks: rebuilt in column pieces ----------------
# 8M chunks on 3 members: one chunk is more than the 4M rebuild window, so
# a failing chunk is rebuilt in pieces of it
BIG=$TMP/big
head -c $((12 << 20)) /dev/urandom >"$TMP/big.bin"
"$RAIDIMG" create --level 5 --devices 3 --chunk 8M --from "$TMP/big.bin" -o "$BIG" >/dev/null 2>&1
mb=("$BIG"/member0.img "$BIG"/member1.img "$BIG"/member2.img)
"$RAIDIMG" cat "${mb[@]}" >"$TMP/goodbig"
check "8M-chunk array created and read" cmp -s -n $((12 << 20)) "$TMP/goodbig" "$TMP/big.bin"
shabig=$(sha "$TMP/goodbig")
# stripe 0: P on member 2, data 0 on member 0, data 1 on member 1.  Fail
# member 0 at 5M..5M+4K (the second column piece) and member 1 at 1M (the first)
run big-pieces "${mb[0]}:$((DOFF + (5 << 20)))+4K;${mb[1]}:$((DOFF + (1 << 20)))+4K" --threads 2 "${mb[@]}"
expect_good big-pieces "$shabig" + +
run big-eio "${mb[0]}:$((DOFF + (5 << 20)))+4K;${mb[2]}:$((DOFF + (5 << 20)))+4K" "${mb[@]}"
expect_eio big-eio "$TMP/goodbig" $((5 << 20))

# ---------------- the facility itself ----------------
run bad-spec "${m5[0]}:nonsense" "${m5[@]}"
check "a malformed RAIDIMG_FAULTS is an error, not ignored" \
	test "$rc" = 2 -a -n "$(grep 'RAIDIMG_FAULTS' "$TMP/bad-spec.err")"
run bad-kind "${m5[0]}:slow@0+1" "${m5[@]}"
check "an unknown fault kind is an error" grep -q "kind must be eio or short" "$TMP/bad-kind.err"
# a failing superblock read: a clear message naming the file
RAIDIMG_FAULTS="${m5[0]}:4K+4K" "$RAIDIMG_FAULTY" examine "${m5[@]}" >"$TMP/ex.out" 2>"$TMP/ex.err"
check "a failing superblock read names the image and the error" \
	grep -q "member0.img.*Input/output error" "$TMP/ex.err"
# without the variable nothing is wrapped (no warning)
"$RAIDIMG" cat --length 1M "${m5[@]}" >/dev/null 2>"$TMP/nofault.err"
check "without RAIDIMG_FAULTS there is no fault source" test ! -s "$TMP/nofault.err"
# raidimg itself has no fault source at all: the variable is ignored
RAIDIMG_FAULTS="${m5[0]}:0+1G" "$RAIDIMG" cat --length 1M "${m5[@]}" >"$TMP/prod.out" 2>"$TMP/prod.err"; rc=$?
check "raidimg (not the test build) ignores RAIDIMG_FAULTS: reads fine, says nothing" \
	test $rc = 0 -a ! -s "$TMP/prod.err" -a "$(stat -c %s "$TMP/prod.out")" = 1048576
finish
