#!/bin/bash
# Hostile side files, full disks and odd names (issues 11 and 18): every
# case a regression test with its exact message, members unchanged.
#  - side files that are not regular files (/dev/zero as a checkpoint or a
#    record) are refused at once instead of read forever;
#  - a record naming one image many times, or with integers that do not
#    fit their fields (chunk_bytes + 2^32), is refused;
#  - a checkpoint edited by hand (next 0, mismatches 2^64-1) is refused;
#  - on a full file system export, rebuild, compress, records and maps
#    fail with exit 2 and leave nothing (root: a 1 MiB tmpfs);
#  - messages about very long paths still end with the reason;
#  - an overlay on a read-only file system says so (root);
#  - under umask 000 outputs are 0644, never world-writable;
#  - create --data-offset near 2^64 names the data offset;
#  - names that are not UTF-8: every JSON output parses, and the exact
#    bytes come back (path_hex), so a record of them replays.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"

C=r5-ls-4x8M-64K-md12
W=$TMP/w
mkdir -p "$W"
cp "$(fixture_dir $C)"/member*.img "$W"/
chmod 644 "$W"/*.img
M=("$W"/member0.img "$W"/member1.img "$W"/member2.img "$W"/member3.img)
before=$(shas "${M[@]}")
unchanged() { test "$before" = "$(shas "${M[@]}")"; }

# ---- side files that are not regular files ----
ln -s /dev/zero "$TMP/zero.cp"
expect_fail "scrub --checkpoint -> /dev/zero" "zero.cp: not a regular file \(a character device\); a scrub checkpoint is a regular file" \
	"$RAIDIMG" scrub --checkpoint "$TMP/zero.cp" "${M[@]}"
expect_fail "replay /dev/zero" "/dev/zero: not a regular file \(a character device\); a record is a regular file" \
	"$RAIDIMG" replay /dev/zero
mkfifo "$TMP/fifo.json"
expect_fail "replay of a FIFO (nobody writes it)" "fifo.json: not a regular file \(a FIFO\)" "$RAIDIMG" replay "$TMP/fifo.json"

# ---- records that lie ----
"$RAIDIMG" cat --record "$TMP/r.json" -o /dev/null "${M[@]}" >/dev/null 2>&1
jq --arg p "${M[0]}" '.members = [range(10000) | {role: 0, path: $p}]' "$TMP/r.json" >"$TMP/many.json"
expect_fail "a record naming one image 10000 times" "many.json: \"members\" lists 10000 images \(at most 512\)" \
	"$RAIDIMG" replay "$TMP/many.json"
jq --arg p "${M[0]}" '.members += [{role: 0, path: $p}]' "$TMP/r.json" >"$TMP/twice.json"
expect_fail "a record naming one image twice" "twice.json: \"members\" names .*member0.img twice" \
	"$RAIDIMG" replay "$TMP/twice.json"
for f in "chunk_bytes 4295032832" "level 4294967301" "raid_disks 4294967300" "layout 4294967298" \
	 "array_bytes 18446744073709551615"; do
	set -- $f
	jq ".array.$1 = $2" "$TMP/r.json" >"$TMP/int.json"
	expect_fail "replay with array.$1 = $2" "int.json: \"$1\" is $2, out of range" "$RAIDIMG" replay "$TMP/int.json"
done

# ---- a checkpoint edited by hand ----
c=r5-ls-4x6M-64K-badparity
mapfile -t B < <(members_shuffled "$c")
cp_=$TMP/b.cp
RAIDIMG_SCRUB_TRACE=$TMP/b.trace "$RAIDIMG" scrub --checkpoint "$cp_" --speed-limit-max 128K --request-size 64K \
	"${B[@]}" >/dev/null 2>&1 &
pid=$!
wait_until 20 grep -q '^batch' "$TMP/b.trace"
kill -INT $pid      # saves the checkpoint
wait_pid $pid 30
if [ -s "$cp_" ]; then
	sed -e 's/^next .*/next 0/' -e 's/mismatches=[0-9]*/mismatches=18446744073709551615/' "$cp_" >"$TMP/edited.cp"
	expect_fail "an edited checkpoint (next 0, mismatches 2^64-1)" \
		"edited.cp: the checkpoint does not match its checksum \(damaged or edited\)" \
		"$RAIDIMG" scrub --checkpoint "$TMP/edited.cp" "${B[@]}"
else
	fail "the interrupted scrub left no checkpoint to edit"
fi

# ---- a full file system ----
if [ "$(id -u)" -eq 0 ] && mkdir -p "$TMP/small" && mount -t tmpfs -o size=1M none "$TMP/small" 2>/dev/null; then
	cleanup_hooks=("umount -l '$TMP/small'" "${cleanup_hooks[@]}")
	S=$TMP/small
	expect_fail "export onto a full file system" "out.img: .*No space left on device" \
		"$RAIDIMG" export -o "$S/out.img" "${M[@]}"
	expect_fail "export --zstd onto a full file system" "out.zst: .*No space left on device" \
		"$RAIDIMG" export --zstd --zstd-level 1 -o "$S/out.zst" "${M[@]}"
	head -c 4M /dev/urandom >"$TMP/rand.img"
	expect_fail "compress onto a full file system" "c.zst: .*No space left on device" \
		"$RAIDIMG" compress -o "$S/c.zst" "$TMP/rand.img"
	expect_fail "rebuild onto a full file system" "new.img: .*No space left on device" \
		"$RAIDIMG" rebuild --role 1 -o "$S/new.img" "${M[@]}"
	dd if=/dev/zero of="$S/filler" bs=4k status=none 2>/dev/null    # until the file system is full
	expect_fail "cat --provenance onto a full file system" "provenance map.*(No space left on device|cannot write)" \
		"$RAIDIMG" cat --provenance "$S/p.map" -o /dev/null "${M[@]}"
	expect_fail "cat --record onto a full file system" "cannot write the record: .*No space left on device" \
		bash -c 'exec "$@" >/dev/null' sh "$RAIDIMG" cat --record "$S/r.json" -o /dev/null "${M[@]}"
	rm -f "$S/filler"
	check "a full file system: nothing left behind ($(ls -A "$S" | tr '\n' ' '))" test -z "$(ls -A "$S")"
else
	echo "note: not checking a full file system (needs root to mount a small tmpfs)"
fi

# ---- long paths: the reason is never cut off ----
long=$(printf './%.0s' {1..550})nosuch.img
expect_fail "a 1100-byte path" "nosuch.img: cannot open: No such file or directory" "$RAIDIMG" cat "$long"

# ---- an overlay on a read-only file system ----
if [ "$(id -u)" -eq 0 ] && mkdir -p "$TMP/ro" && mount -t tmpfs -o ro,size=1M none "$TMP/ro" 2>/dev/null; then
	cleanup_hooks=("umount -l '$TMP/ro'" "${cleanup_hooks[@]}")
	if fuse_usable; then
		expect_fail "an overlay on a read-only file system" "ov: cannot create the overlay for writing: Read-only file system" \
			"$RAIDIMG" mount --overlay "$TMP/ro/ov" "${M[@]}" "$(mountpoint_dir rofs)"
	fi
else
	echo "note: not checking an overlay on a read-only file system (needs root)"
fi

# ---- umask 000 ----
(
	umask 000
	"$RAIDIMG" cat --provenance "$TMP/u.map" --record "$TMP/u.json" -o "$TMP/u.img" "${M[@]}" >/dev/null 2>&1
	"$RAIDIMG" export -o "$TMP/u2.img" "${M[@]}" 2>/dev/null
)
check "umask 000: outputs are 0644 ($(stat -c '%a' "$TMP"/u.map "$TMP"/u.json "$TMP"/u.img "$TMP"/u2.img | tr '\n' ' '))" \
	test "$(stat -c '%a' "$TMP"/u.map "$TMP"/u.json "$TMP"/u.img "$TMP"/u2.img | sort -u)" = 644

# ---- create --data-offset near 2^64 ----
head -c 100000 /dev/urandom >"$TMP/src"
expect_fail "create --data-offset 2^64-4096 without --size" "--data-offset 18446744073709547520: past any image raidimg can write" \
	"$RAIDIMG" create --level 5 --devices 3 --chunk 64K --data-offset 18446744073709547520 --from "$TMP/src" -o "$TMP/c"

# ---- names that are not UTF-8 ----
N=$TMP/$'non\xffutf8\xfe'
mkdir -p "$N"
cp "${M[@]}" "$N"/
NM=("$N"/member0.img "$N"/member1.img "$N"/member2.img "$N"/member3.img)
want=$(mf $C .expected_sha256)
"$RAIDIMG" examine --json "${NM[@]}" >"$TMP/x.json" 2>/dev/null
check "non-UTF-8: examine --json parses" jq -e . "$TMP/x.json" >/dev/null
check "non-UTF-8: examine --json gives the exact bytes (path_hex)" \
	test "$(jq -r '.members[0].path_hex' "$TMP/x.json" | xxd -r -p)" = "$(realpath -s "${NM[0]}" 2>/dev/null || echo "${NM[0]}")"
"$RAIDIMG" cat --record "$TMP/n.json" --provenance "$TMP/n.map" -o "$TMP/n.img" "${NM[@]}" >/dev/null 2>&1
check "non-UTF-8: the record parses" jq -e . "$TMP/n.json" >/dev/null
check "non-UTF-8: the provenance map parses" jq -e . "$TMP/n.map" >/dev/null
"$RAIDIMG" scrub --json "${NM[@]}" >"$TMP/s.jsonl" 2>/dev/null
check "non-UTF-8: scrub --json parses" jq -e . "$TMP/s.jsonl" >/dev/null
"$RAIDIMG" replay "$TMP/n.json" >"$TMP/replay.out" 2>&1; rc=$?
check "non-UTF-8: the record replays, the exact paths found again (exit $rc: $(tail -n1 "$TMP/replay.out"))" test $rc = 0
if fuse_usable; then
	mnt=$(mountpoint_dir nonutf8)
	if $T "$RAIDIMG" mount "${NM[@]}" "$mnt" >/dev/null 2>"$TMP/m.err"; then
		check "non-UTF-8: the mount's status parses" $T jq -e . "$mnt/status" >/dev/null
		check "non-UTF-8: the mount reads right" test "$($T sha256sum "$mnt"/*.img | cut -d' ' -f1)" = "$want"
		unmount_now "$mnt"
	else
		fail "non-UTF-8: mount: $(cat "$TMP/m.err")"
	fi
fi
check "members unchanged" unchanged
finish
