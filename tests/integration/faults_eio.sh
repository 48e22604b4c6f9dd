#!/bin/bash
# Real read errors: member images served by tests/helpers/eiofs, a FUSE file
# system whose reads of chosen ranges fail with EIO in the kernel's read(2)
# (a disk with bad sectors).  raidimg must rebuild what parity covers, byte
# for byte, and otherwise stop at the exact first array offset it cannot
# read, after writing everything before it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"
EIOFS=$HELPERS/eiofs
[ -x "$EIOFS" ] || { fail "$EIOFS is missing (make check builds it)"; finish; }
require_fuse

R5=r5-ls-4x8M-64K-md12
d5=$(fixture_dir $R5)
sha5=$(mf $R5 .expected_sha256)
CB=65536 DOFF=1048576
moff() { echo $((DOFF + $1 * CB + $2)); }        # moff STRIPE COLUMN
"$RAIDIMG" cat "$d5"/member*.img >"$TMP/good5"

# bad_disk NAME MEMBER RANGES: serve MEMBER through eiofs; sets $disk to
# its path there.  (Not run in $(...): the mount must be remembered by this
# shell for the cleanup, and $(...) would wait for eiofs's stdout.)
bad_disk() {
	local mnt=$TMP/mnt-$1
	mkdir -p "$mnt"
	mounts_made+=("$mnt")
	"$EIOFS" "$2" "$mnt" "$3" >/dev/null 2>"$TMP/$1.eiofs.err" &
	if ! wait_until 10 is_mounted "$mnt"; then
		fail "eiofs did not mount: $(cat "$TMP/$1.eiofs.err")"
		finish
	fi
	disk=$mnt/$(basename "$2")
}

# member 1 with bad sectors in rows 11 (data 0 there) and 38 (P), unaligned
bad_disk m1 "$d5/member1.img" "$(moff 11 5000)+3000,$(moff 38 0)+512"
b1=$disk
check "eiofs really fails reads (dd gets EIO)" \
	$T bash -c "! dd if='$b1' bs=512 skip=$(($(moff 11 0) / 512)) count=32 of=/dev/null 2>/dev/null"
check "eiofs serves the good parts" cmp -s -n 1048576 "$b1" "$d5/member1.img"

$T "$RAIDIMG" cat --stats --threads 1 "$d5/member0.img" "$b1" "$d5/member2.img" "$d5/member3.img" \
	>"$TMP/one.out" 2>"$TMP/one.err"; rc=$?
check "one member with bad sectors: exit 0" test $rc = 0
check "one member with bad sectors: the array's bytes are right" test "$(sha "$TMP/one.out")" = "$sha5"
check "one member with bad sectors: the recovered read errors are counted" \
	test "$(grep '^{' "$TMP/one.err" | jq .read_errors_recovered)" -ge 1
check "one member with bad sectors: cat says so" grep -q "member read errors were recovered" "$TMP/one.err"

# member 2 bad in the same sectors of row 11: data 1 of stripe 11 (member 2)
# and data 0 (member 1) both lost at columns 5000..8000.  raidimg narrows a
# failing read to 4K blocks (md's stripe unit), so the first array offset it
# cannot serve is the start of that block in data 0: (11*3 + 0)*64K + 4096
bad_disk m2 "$d5/member2.img" "$(moff 11 5000)+3000"
b2=$disk
at=$((11 * 3 * CB + 4096))
# the same answer whichever way the bytes travel: splice(2) from the members
# (the default for plain files; the member's short read at column 5000 must
# be cut back to the 4K block) or the copying pipeline
for how in zero-copy pipeline; do
	opt=; [ $how = pipeline ] && opt=--no-zero-copy
	$T "$RAIDIMG" cat $opt --stats "$d5/member0.img" "$b1" "$b2" "$d5/member3.img" \
		>"$TMP/two.out" 2>"$TMP/two.err"; rc=$?
	check "$how: two members bad in one stripe: exit 2" test $rc = 2
	check "$how: the bytes went the $how way" \
		test "$(stats_method "$TMP/two.err")" = $how
	check "$how: two members bad in one stripe: the offset named is the first bad 4K block of data 0 ($at)" \
		grep -q "array offset $at: cannot be read" "$TMP/two.err"
	check "$how: ... and exactly the bytes before it are written, right" \
		bash -c "[ \$(stat -c %s '$TMP/two.out') = $at ] && cmp -s -n $at '$TMP/two.out' '$TMP/good5'"
	# member 1 alone bad (its short read mid-chunk, then EIO), zero-copy and not
	$T "$RAIDIMG" cat $opt "$d5/member0.img" "$b1" "$d5/member2.img" "$d5/member3.img" \
		| sha256sum | grep -q "^$sha5 "
	check "$how: one member with bad sectors, read again: the array's bytes are right" test $? = 0
done

# member 3 missing as well: stripes it held data in are rebuilt ahead by the
# worker threads (zero-copy) and need member 1's bad sectors there.  Both ways
# must stop at the same array offset, after the same bytes.
for how in zero-copy pipeline; do
	opt=; [ $how = pipeline ] && opt=--no-zero-copy
	$T "$RAIDIMG" cat $opt "$d5/member0.img" "$b1" "$d5/member2.img" >"$TMP/m3.$how" 2>"$TMP/m3.$how.err"
	echo $? >"$TMP/m3.$how.rc"
done
check "member 3 missing + bad sectors on member 1: exit 2 both ways" \
	test "$(cat "$TMP/m3.zero-copy.rc") $(cat "$TMP/m3.pipeline.rc")" = "2 2"
off_zc=$(grep -o 'array offset [0-9]*' "$TMP/m3.zero-copy.err" | head -1)
off_pl=$(grep -o 'array offset [0-9]*' "$TMP/m3.pipeline.err" | head -1)
check "... the same first unreadable offset ($off_zc / $off_pl)" test -n "$off_zc" -a "$off_zc" = "$off_pl"
check "... the same bytes before it, and they are the array's" \
	bash -c "cmp -s '$TMP/m3.zero-copy' '$TMP/m3.pipeline' && [ \$(stat -c %s '$TMP/m3.pipeline') = ${off_pl#array offset } ] && cmp -s -n ${off_pl#array offset } '$TMP/m3.pipeline' '$TMP/good5'"

# the FUSE file keeps its size: a short read through the page cache (as
# splice and read-ahead do) must not be taken for its end (eiofs serves
# without attribute or page caching); else the zero-copy checks above would
# have read a shorter member than they meant to
check "the members behind eiofs keep their size after the zero-copy runs" \
	test "$(stat -c %s "$b1") $(stat -c %s "$b2")" = "$(stat -c %s "$d5/member1.img") $(stat -c %s "$d5/member2.img")"

# ---- a block device with bad sectors: a read-only loop device over an
# eiofs file whose bad ranges fail whole requests (a loop device fills a
# short read with zeros).  The device's page cache keeps failing a whole
# large folio of which only a few sectors are bad; raidimg reads again with
# O_DIRECT, so the same bytes are lost as with the file itself (role 3
# missing: RAID5 has no redundancy left where member 1 fails) ----
wmnt=$TMP/mnt-whole
mkdir -p "$wmnt"
mounts_made+=("$wmnt")
"$EIOFS" --whole "$d5/member1.img" "$wmnt" "$(moff 11 5000)+3000,$(moff 38 0)+512" >/dev/null 2>"$TMP/whole.err" &
wait_until 10 is_mounted "$wmnt" || fail "eiofs --whole did not mount: $(cat "$TMP/whole.err")"
if [ "$(id -u)" -eq 0 ] && loop=$(losetup -r -f --show "$wmnt/member1.img" 2>"$TMP/losetup.err"); then
	cleanup_hooks=("losetup -d $loop 2>/dev/null" "${cleanup_hooks[@]}")
	check "the loop device fails where eiofs does" \
		$T bash -c "! dd if='$loop' bs=512 skip=$(($(moff 11 0) / 512)) count=32 of=/dev/null 2>/dev/null"
	for how in pipeline zero-copy; do
		opt=; [ $how = pipeline ] && opt=--no-zero-copy
		$T "$RAIDIMG" cat $opt "$d5/member0.img" "$b1" "$d5/member2.img" >"$TMP/f.$how" 2>"$TMP/f.$how.err"
		$T "$RAIDIMG" cat $opt "$d5/member0.img" "$loop" "$d5/member2.img" >"$TMP/l.$how" 2>"$TMP/l.$how.err"
		f_off=$(grep -o 'array offset [0-9]*' "$TMP/f.$how.err" | head -1)
		l_off=$(grep -o 'array offset [0-9]*' "$TMP/l.$how.err" | head -1)
		check "loop device, $how: stops at the same first unreadable offset as the file ($l_off / $f_off)" \
			test -n "$f_off" -a "$l_off" = "$f_off"
		check "loop device, $how: the same bytes before it" cmp -s "$TMP/l.$how" "$TMP/f.$how"
	done
	if fuse_usable; then
		for what in file loop; do
			src=$b1; [ $what = loop ] && src=$loop
			mnt=$(mountpoint_dir "bd-$what")
			if $T "$RAIDIMG" mount "$d5/member0.img" "$src" "$d5/member2.img" "$mnt" >/dev/null 2>"$TMP/bd.err"; then
				# every 4 KiB block read alone, O_DIRECT: how many fail
				$T dd if="$(ls "$mnt"/*.img)" of="$TMP/bd-$what.img" bs=4k iflag=direct conv=noerror,sync \
					2>"$TMP/bd-$what.dd" >/dev/null
				grep -c "Input/output error" "$TMP/bd-$what.dd" >"$TMP/bd-$what.n"
				unmount_now "$mnt"
			else
				fail "mount with a $what member: $(cat "$TMP/bd.err")"
			fi
		done
		check "mount: as many 4 KiB blocks fail with the loop device as with the file ($(cat "$TMP/bd-loop.n" 2>/dev/null) / $(cat "$TMP/bd-file.n" 2>/dev/null))" \
			test -s "$TMP/bd-file.n" -a "$(cat "$TMP/bd-loop.n" 2>/dev/null)" = "$(cat "$TMP/bd-file.n")"
		check "mount: and the same bytes come out" cmp -s "$TMP/bd-loop.img" "$TMP/bd-file.img"
	fi
else
	echo "note: no loop device check (needs root and losetup: $(cat "$TMP/losetup.err" 2>/dev/null))"
fi

# examine reads through eiofs too
$T "$RAIDIMG" examine "$d5/member0.img" "$b1" "$d5/member2.img" "$d5/member3.img" >"$TMP/ex.out" 2>&1
check "examine works on a member with bad sectors outside its superblock" grep -q complete "$TMP/ex.out"
finish
