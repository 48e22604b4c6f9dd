#!/bin/bash
# Repair through the mount (--allow-repair, on writable copies of the
# corrupted fixtures): `echo repair > sync_action` rewrites exactly the
# corrupted bytes (RAID5: P; RAID6: the data block the syndromes name), a
# check afterwards is clean, the mounted image's sha256 is the manifest's
# healthy one even though its page cache held the corrupted data before the
# repair (repaired data is invalidated), the members differ from the
# originals only in the corrupted bytes, which are the original ones again,
# and the standalone scrub agrees.  A degraded array refuses repair (EINVAL,
# status says why) but is checked.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"
. "$(dirname "$0")/mount_scrub_lib.sh"
require_fuse

# changed_only ORIG COPY OFF LEN: COPY differs from ORIG only inside [OFF, OFF+LEN)
changed_only() {
	cmp -l "$1" "$2" | awk -v lo="$3" -v len="$4" '{ o = $1 - 1; if (o < lo || o >= lo + len) bad++ } END { exit bad > 0 }'
}
bytes_hex() { od -An -tx1 -v -j "$2" -N "$3" "$1" | tr -d ' \n'; }

for c in r5-ls-4x6M-64K-badparity r6-ls-5x6M-64K-baddata; do
	src=$(fixture_dir "$c")
	w=$TMP/$c
	mkdir -p "$w"
	cp "$src"/member*.img "$w"/
	chmod 644 "$w"/member*.img
	mnt=$(mountpoint_dir "$c")
	log=$TMP/$c.log
	healthy=$(mf "$c" .sha256_healthy)
	served=$(mf "$c" .expected_sha256)
	kind=$(mf "$c" '.corruption[0].chunk_kind')
	role=$(mf "$c" '.corruption[0].member')
	off=$(mf "$c" '.corruption[0].image_byte_offset')
	len=$(mf "$c" '.corruption[0].length')
	image=$(mf "$c" '.corruption[0].image')
	if ! $T "$RAIDIMG" mount --allow-repair --scrub-log "$log" "$w"/member*.img "$mnt" >/dev/null 2>"$TMP/err"; then
		fail "$c: mount --allow-repair: $(cat "$TMP/err")"
		continue
	fi
	pid=$(status_field "$mnt" .mount.pid)
	img=$mnt/oracle_oracle.img
	check "$c: status: repair allowed" scrub_jq "$mnt" '.repair_allowed == true'
	check "$c: array_state reads clean (members writable, nothing writing)" test "$($T cat "$mnt/array_state")" = clean
	# read the whole image: the kernel's page cache now holds what md serves
	check "$c: before the repair the mount serves md's bytes" test "$($T sha256sum "$img" | cut -d' ' -f1)" = "$served"
	check "$c: echo repair > sync_action" ctl "$mnt" sync_action repair
	check "$c: the repair ends" wait_scrub "$mnt" 1
	check "$c: repaired: 1 mismatch, 1 write of $len bytes" \
		scrub_jq "$mnt" ".mode == \"repair\" and .result == \"repaired\" and .mismatches == 1 and .writes == 1 and .bytes_written == $len and .recent_mismatches[0].repaired == true"
	if [ "$kind" = data ]; then
		check "$c: the repaired data range was dropped from the page cache" \
			scrub_jq "$mnt" '.page_cache_invalidations == 1 and .page_cache_invalidation_errors == 0'
	else
		check "$c: parity only: the array's bytes did not change, nothing to invalidate" \
			scrub_jq "$mnt" '.page_cache_invalidations == 0'
	fi
	check "$c: the mounted image now reads as the healthy array (sha256_healthy)" \
		test "$($T sha256sum "$img" | cut -d' ' -f1)" = "$healthy"
	check "$c: ... also with O_DIRECT" \
		test "$($T dd if="$img" iflag=direct bs=1M status=none | sha)" = "$healthy"
	ctl "$mnt" sync_action check
	check "$c: a check after the repair ends" wait_scrub "$mnt" 2
	check "$c: ... clean" scrub_jq "$mnt" '.mode == "check" and .result == "clean" and .mismatches == 0'
	check "$c: mismatch_cnt 0" test "$($T cat "$mnt/mismatch_cnt")" = 0
	check "$c: the log: the mismatch repaired, the write at the manifest's place, two summaries" \
		jqt -s "[.[] | select(.type == \"mismatch\")] as \$m | [.[] | select(.type == \"write\")] as \$w |
			[.[] | select(.type == \"summary\") | .result] == [\"repaired\", \"clean\"] and
			(\$m | length) == 1 and \$m[0].repaired and (\$w | length) == 1 and
			\$w[0].role == $role and \$w[0].image_offset == $off and \$w[0].length == $len and
			(\$w[0].image | endswith(\"/$image\"))" "$log"
	unmount "$mnt" "$pid"
	check "$c: unmounted" not_mounted "$mnt"
	check "$c: $image changed only in the corrupted bytes" changed_only "$src/$image" "$w/$image" "$off" "$len"
	check "$c: which hold the original bytes again" \
		test "$(bytes_hex "$w/$image" "$off" "$len")" = "$(mf "$c" '.corruption[0].old_bytes_hex')"
	for m in "$src"/member*.img; do
		[ "$(basename "$m")" = "$image" ] && continue
		check "$c: $(basename "$m") untouched" cmp -s "$m" "$w/$(basename "$m")"
	done
	"$RAIDIMG" scrub "$w"/member*.img >/dev/null 2>&1; rc=$?
	check "$c: raidimg scrub of the repaired images: clean (exit $rc)" test $rc -eq 0
	check "$c: raidimg cat of the repaired images: sha256_healthy" \
		test "$("$RAIDIMG" cat "$w"/member*.img 2>/dev/null | sha)" = "$healthy"
	rm -rf "$w"
done

# ---- a degraded array: repair refused, check allowed ----
c=r6-ls-6x6M-64K-md12
src=$(fixture_dir "$c")
w=$TMP/degraded
mkdir -p "$w"
cp "$src"/member*.img "$w"/
chmod 644 "$w"/member*.img
rm "$w"/member3.img
mnt=$(mountpoint_dir degraded)
if $T "$RAIDIMG" mount --allow-repair "$w"/member*.img "$mnt" >/dev/null 2>"$TMP/err"; then
	pid=$(status_field "$mnt" .mount.pid)
	before=$(shas "$w"/member*.img)
	check "degraded: repair refused (EINVAL)" ctl_fails "$mnt" sync_action repair "Invalid argument"
	check "degraded: status says why" scrub_jq "$mnt" '.refused | test("degraded")'
	check "degraded: still idle" test "$($T cat "$mnt/sync_action")" = idle
	ctl "$mnt" sync_action check
	check "degraded: a check runs to the end" wait_scrub "$mnt" 1
	check "degraded: clean with the redundancy left" scrub_jq "$mnt" '.result == "clean" and .stripes_unchecked == 0'
	unmount "$mnt" "$pid"
	check "degraded: nothing written" test "$before" = "$(shas "$w"/member*.img)"
else
	fail "degraded mount: $(cat "$TMP/err")"
fi
finish
