#!/bin/bash
# No file raidimg writes ever lands on the evidence.  Every output - -o,
# --record, --provenance, --checkpoint, --scrub-log, overlays, temporaries -
# is refused when it is a member image (or the input of compress, the --from
# of create, the record being replayed) through any path: the name itself,
# a symlink, a hard link, /proc/self/fd/N, dir/../.  Temporaries have names
# nobody else can have (a member named OUT.partial is left alone), two runs
# writing one output never mix their bytes, a killed writer leaves nothing
# under the final name, and closed standard descriptors are never taken by
# a member (a report written to "stdout" would land in it).  Every member's
# sha256 is the same at the end.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"

C=r5-ls-4x8M-64K-md12
W=$TMP/w
mkdir -p "$W"
cp "$(fixture_dir $C)"/member*.img "$W"/
chmod 644 "$W"/*.img
cd "$W" || exit 1
M=(member0.img member1.img member2.img member3.img)
want=$(mf $C .expected_sha256)
before=$(shas "${M[@]}")
unchanged() { test "$before" = "$(shas "${M[@]}")"; }
EV="refusing to write over evidence"

# ---- 1. side outputs onto a member, through any path ----
ln -s member3.img link3
ln member2.img hard2
mkdir -p sub
for how in member3.img link3 hard2 sub/../member1.img; do
	expect_fail "cat --record $how" "record: $how: is the image $W/member[0-9].img given as input; $EV" \
		"$RAIDIMG" cat --record "$how" -o /dev/null "${M[@]}"
	expect_fail "cat --provenance $how" "provenance map: $how: is the image $W/member[0-9].img given as input; $EV" \
		"$RAIDIMG" cat --provenance "$how" -o /dev/null "${M[@]}"
	expect_fail "export --record $how" "$how: is the image .* given as input; $EV" \
		"$RAIDIMG" export --record "$how" -o "$TMP/x.img" "${M[@]}"
	expect_fail "examine --record $how" "$how: is the image .* given as input; $EV" \
		"$RAIDIMG" examine --record "$how" "${M[@]}"
	expect_fail "cat -o $how" "$how: is the image .* given as input; $EV" "$RAIDIMG" cat -o "$how" "${M[@]}"
	expect_fail "export -o $how --overwrite" "$how: is the image .* given as input; $EV" \
		"$RAIDIMG" export --overwrite -o "$how" "${M[@]}"
	expect_fail "scrub --checkpoint $how" "$how: is the image .* given as input; $EV" \
		"$RAIDIMG" scrub --checkpoint "$how" "${M[@]}"
	expect_fail "rebuild -o $how --overwrite" "$how: is the image .* given as input; $EV" \
		"$RAIDIMG" rebuild --overwrite --role 3 -o "$how" member0.img member1.img member2.img member3.img
done
# /proc/self/fd/N: the file open on a descriptor raidimg inherits
expect_fail "cat --provenance /proc/self/fd/5" "/proc/self/fd/5: is the image $W/member3.img given as input; $EV" \
	bash -c 'exec 5<member3.img; exec "$0" cat --provenance /proc/self/fd/5 -o /dev/null "$@"' "$RAIDIMG" "${M[@]}"
expect_fail "compress -o its own input" "member1.img: is the input image; $EV" \
	"$RAIDIMG" compress --overwrite -o member1.img member1.img
expect_fail "create --from a member, over it" "member0.img: is the --from file; $EV" \
	"$RAIDIMG" create --force --level 5 --devices 3 --chunk 64K --from member0.img -o .
check "side outputs: members unchanged" unchanged
check "side outputs: no temporary left behind" test -z "$(ls -A | grep -v -E '^(member[0-3]\.img|link3|hard2|sub)$')"

# ---- 2. temporaries: a member called OUT.partial (or R.partial, C.tmp) ----
mv member3.img out.img.partial
"$RAIDIMG" export -o out.img member0.img member1.img member2.img out.img.partial 2>"$TMP/err"; rc=$?
check "export -o out.img with a member named out.img.partial: works ($(cat "$TMP/err"))" test $rc = 0
check "export: the output is the array" test "$(sha out.img)" = "$want"
mv out.img.partial member3.img
mv member2.img rec.json.partial
"$RAIDIMG" cat --record rec.json -o /dev/null member0.img member1.img rec.json.partial member3.img >/dev/null 2>&1; rc=$?
check "cat --record rec.json with a member named rec.json.partial: works" test $rc = 0 -a -s rec.json
mv rec.json.partial member2.img
cp member1.img c.img && cp member1.img c.img.zst.partial
"$RAIDIMG" compress -o c.img.zst c.img.zst.partial 2>/dev/null; rc=$?
check "compress -o C with input C.partial: works, the input is still there" \
	test $rc = 0 -a "$(sha c.img.zst.partial)" = "$(sha member1.img)"
rm -f c.img c.img.zst c.img.zst.partial rec.json out.img
mv member0.img cp.tmp
"$RAIDIMG" scrub --checkpoint cp --speed-limit-max 2M cp.tmp member1.img member2.img member3.img >/dev/null 2>&1 &
pid=$!
sleep 1
kill -INT $pid
wait_pid $pid 30
mv cp.tmp member0.img
check "scrub --checkpoint C, interrupted, with a member named C.tmp: the member is intact" unchanged
rm -f cp
check "temporaries: members unchanged" unchanged

# ---- 3. closed standard descriptors ----
W2=$TMP/created
head -c 3000000 /dev/urandom >"$TMP/src"
"$RAIDIMG" create --level 5 --devices 3 --chunk 64K --metadata 1.0 --from "$TMP/src" -o "$W2" >/dev/null
printf 'X' | dd of="$W2/member2.img" bs=1 seek=70000 conv=notrunc status=none
cb=$(shas "$W2"/member*.img)
"$RAIDIMG" scrub --repair "$W2"/member0.img "$W2"/member1.img "$W2"/member2.img >&- 2>"$TMP/err"; rc=$?
check "scrub --repair >&-: refused, exit 2 (got $rc)" test $rc = 2
check "scrub --repair >&-: says why" grep -q "standard output is closed" "$TMP/err"
check "scrub --repair >&-: no member changed" test "$cb" = "$(shas "$W2"/member*.img)"
expect_fail "examine --json >&-" "standard output is closed" bash -c 'exec "$@" >&-' sh "$RAIDIMG" examine --json "${M[@]}"
out=$("$RAIDIMG" examine "${M[@]}" <&- 2>&-); rc=$?
check "examine <&- 2>&-: works (exit $rc)" test $rc = 0
check "examine <&- 2>&-: all four members in place" test "$(echo "$out" | grep -c 'role [0-3]')" -ge 4
if [ -w /dev/full ]; then
	for c in "examine --json" "examine" "examine --hash" "scrub" "scrub --json"; do
		# shellcheck disable=SC2086
		"$RAIDIMG" $c "${M[@]}" >/dev/full 2>"$TMP/err"; rc=$?
		check "$c >/dev/full: exit 2 (got $rc)" test $rc = 2
		check "$c >/dev/full: says so" grep -q "standard output: No space left on device" "$TMP/err"
	done
fi
check "closed descriptors: members unchanged" unchanged

# ---- 4. two writers of one output; a killed writer ----
# A (a slow zstd export) is stopped once its output is open; B writes the
# same output (raw, another range) and finishes; A is resumed: without
# --overwrite it is refused (B's file kept whole), with it A's complete file
# replaces B's - never a mix of the two.
"$RAIDIMG" cat --length 16M -o "$TMP/a.want" "${M[@]}"
"$RAIDIMG" cat --offset 4M --length 8M -o "$TMP/b.want" "${M[@]}"
a_writing() { ls -l "/proc/$a/fd" 2>/dev/null | grep -q -- "-> $W/\(#\|same.img.partial\)"; }
is_a() { zstd -q -d -c same.img 2>/dev/null | cmp -s - "$TMP/a.want"; }
for ow in "" --overwrite; do
	rm -f same.img
	"$RAIDIMG" export $ow --zstd --zstd-level 19 --threads 1 --length 16M -o same.img "${M[@]}" 2>"$TMP/a.err" &
	a=$!
	if ! wait_until 20 a_writing; then
		fail "two exports$ow: A never had its output open: $(cat "$TMP/a.err")"
		continue
	fi
	kill -STOP $a
	"$RAIDIMG" export $ow --offset 4M --length 8M -o same.img "${M[@]}" 2>"$TMP/b.err"; rcb=$?
	check "two exports$ow: B, while A is stopped, succeeds ($(cat "$TMP/b.err"))" test $rcb = 0
	check "two exports$ow: B's output is B's" cmp -s same.img "$TMP/b.want"
	kill -CONT $a
	wait_pid $a 120; rca=$?
	if [ -z "$ow" ]; then
		check "two exports: A, finishing second, is refused (exit $rca)" test $rca = 2
		check "two exports: A says why" grep -q "same.img: appeared while it was being written" "$TMP/a.err"
		check "two exports: B's file is kept whole" cmp -s same.img "$TMP/b.want"
	else
		check "two exports --overwrite: A succeeds too (exit $rca: $(cat "$TMP/a.err"))" test $rca = 0
		check "two exports --overwrite: same.img is A's, whole" is_a
	fi
	check "two exports$ow: no temporary left" test -z "$(ls -A | grep partial)"
done
rm -f same.img
( exec "$RAIDIMG" rebuild --role 2 --speed-limit-max 4M -o new.img "${M[@]}" >/dev/null 2>&1 ) &
pid=$!
sleep 0.5
kill -KILL $pid
wait_pid $pid 10
check "rebuild killed: no new.img (nor a temporary) left" test -z "$(ls -A | grep -v -E '^(member[0-3]\.img|link3|hard2|sub)$')"
check "writers: members unchanged" unchanged

# ---- 5. the mount: scrub log and overlay on a member; closed descriptors ----
if fuse_usable; then
	mnt=$(mountpoint_dir m)
	expect_fail "mount --scrub-log member2.img" "member2.img: is the image .* given as input; $EV" \
		"$RAIDIMG" mount --scrub-log member2.img "${M[@]}" "$mnt"
	expect_fail "mount --overlay hard2" "hard2: is the image .* given as input; $EV" \
		"$RAIDIMG" mount --overlay hard2 "${M[@]}" "$mnt"
	check "mount refusals: nothing mounted" not_mounted "$mnt"
	"$RAIDIMG" mount "${M[@]}" "$mnt" <&- 2>&- >"$TMP/mount.out"; rc=$?
	check "mount <&- 2>&-: mounted (exit $rc)" test $rc = 0
	if is_mounted "$mnt"; then
		img=$(cat "$TMP/mount.out")
		check "mount <&- 2>&-: the image reads right (no member lost to fd 0-2)" \
			test "$($T sha256sum "$img" | cut -d' ' -f1)" = "$want"
		check "mount <&- 2>&-: no read errors" test "$(status_field "$mnt" .mount.read_errors)" = 0
		unmount_now "$mnt"
	fi
	check "mount: members unchanged" unchanged
else
	echo "note: FUSE is not usable here ($(head -c 300 "$TMP/probe.err")): the mount part is skipped"
fi
finish
