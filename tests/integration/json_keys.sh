#!/bin/bash
# One JSON vocabulary: every key of every JSON raidimg writes is listed in
# the man page's JSON FIELDS section (parsed here: the `.B key` line after
# each `.TP`), and that list is sorted, has no duplicates and keeps to the
# vocabulary's form (snake_case).  The outputs: map --json, detect --json, examine --json (complete,
# degraded, mid-reshape, not assemblable, a broken superblock, --hash,
# names that are not UTF-8: the KEY_hex keys), cat
# --stats (both methods), scrub --json (mismatches, a repair's writes, a
# shard, a merge), rebuild --json, the records of --record (cat, export,
# examine, compress), --provenance maps (members, rebuilt, unreadable
# ranges), and, where FUSE is usable, the mount's status (with the scrub's
# object and an overlay), its scrub log and overlay info --json.  Keys the
# list has but these outputs did not show are named (not a failure: other
# outputs may have them).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"
MAN=$SRCDIR/man/raidimg.1
O=$TMP/json
mkdir -p "$O"

# ---- the list in the man page ----
awk '/^\.SH JSON FIELDS/ { on = 1; next } /^\.SH / { on = 0 } on && prev == ".TP" && /^\.B / { print $2 } { prev = $0 }' \
	"$MAN" | sed 's/\\-/-/g' >"$TMP/listed"
check "the man page lists JSON fields ($(wc -l <"$TMP/listed"))" test "$(wc -l <"$TMP/listed")" -gt 50
check "the list is sorted and has no duplicates (one line per key: easy merges)" \
	cmp -s "$TMP/listed" <(LC_ALL=C sort -u "$TMP/listed")
bad=$(grep -Ev '^[a-z][a-z0-9]*(_[a-z0-9]+)*$' "$TMP/listed" | tr '\n' ' ')
check "every listed key is snake_case${bad:+ (not: $bad)}" test -z "$bad"

# ---- the outputs ----
c=r6-ls-5x6M-64K-baddata
d=$(fixture_dir "$c")
m=("$d"/member*.img)
d2=$(fixture_dir r5-ls-5x6M-128K-missing2)
"$RAIDIMG" examine --json "${m[@]}" >"$O/examine.json" 2>/dev/null
"$RAIDIMG" examine --json --hash "$d2"/member*.img >"$O/examine-degraded.json" 2>/dev/null
"$RAIDIMG" examine --json "${m[0]}" "${m[1]}" >"$O/examine-no.json" 2>/dev/null
rd=$(fixture_dir r5-grow4to5-64K-md12 "$SRCDIR/tests/fixtures/reshape")
"$RAIDIMG" examine --json "$rd"/member*.img >"$O/examine-reshape.json" 2>/dev/null
mkdir -p "$TMP/bad"
cp "${m[0]}" "$TMP/bad/m0.img"
chmod 644 "$TMP/bad/m0.img"
put_le "$TMP/bad/m0.img" $((SB + 216)) 4 1
"$RAIDIMG" examine --json "$TMP/bad/m0.img" >"$O/examine-bad.json" 2>/dev/null
"$RAIDIMG" map --json "$d2"/member*.img >"$O/map.json" 2>/dev/null
"$RAIDIMG" cat --stats "${m[@]}" 2>&1 >/dev/null | grep '^{' >"$O/stats-zc.json"
"$RAIDIMG" cat --stats --no-zero-copy "$d2"/member*.img 2>&1 >/dev/null | grep '^{' >"$O/stats-pipeline.json"
"$RAIDIMG" scrub --json "${m[@]}" >"$O/scrub.json" 2>/dev/null
for k in 0 1; do "$RAIDIMG" scrub --json --shard $k/2 "${m[@]}" >"$O/shard$k.json" 2>/dev/null; done
"$RAIDIMG" scrub-merge "$O"/shard[01].json >"$O/merged.json" 2>/dev/null
mkdir -p "$TMP/w"
cp "${m[@]}" "$TMP/w/"
chmod 644 "$TMP"/w/*.img
"$RAIDIMG" scrub --repair --json "$TMP"/w/*.img >"$O/repair.json" 2>/dev/null
"$RAIDIMG" rebuild --json --role 1 -o "$TMP/new1.img" "${m[0]}" "${m[2]}" "${m[3]}" "${m[4]}" >"$O/rebuild.json" 2>/dev/null
"$RAIDIMG" cat --record "$O/record-cat.json" --provenance "$O/prov.jsonl" -o "$TMP/a.img" \
	"$d2"/member*.img >/dev/null 2>&1
"$RAIDIMG" export --record "$O/record-export.json" -o "$TMP/e.img" "${m[@]}" >/dev/null 2>&1
"$RAIDIMG" examine --record "$O/record-examine.json" "${m[@]}" >/dev/null 2>&1
"$RAIDIMG" compress --record "$O/record-compress.json" -o "$TMP/c.zst" "${m[0]}" >/dev/null 2>&1
"$RAIDIMG" cat --record "$O/record-manual.json" --level 6 --chunk 64 --data-offset 1M "${m[@]}" >/dev/null 2>&1
# names that are not UTF-8: the KEY_hex keys
mkdir -p "$TMP/nu"
for i in 0 1 2 3 4; do cp "${m[$i]}" "$TMP/nu/$(printf 'm\xff%d.img' $i)"; done
nu=("$TMP"/nu/*.img)
"$RAIDIMG" examine --json "${nu[@]}" >"$O/examine-hex.json" 2>/dev/null
"$RAIDIMG" scrub --json "${nu[@]}" >"$O/scrub-hex.json" 2>/dev/null
"$RAIDIMG" cat --record "$O/record-hex.json" -o "$TMP/h.img" "${nu[@]}" >/dev/null 2>&1
"$RAIDIMG" rebuild --json --role 1 -o "$TMP/$(printf 'new\xff.img')" "${nu[0]}" "${nu[2]}" "${nu[3]}" "${nu[4]}" \
	>"$O/rebuild-hex.json" 2>/dev/null
"$RAIDIMG" detect --json "${nu[@]}" >"$O/detect-hex.json" 2>/dev/null
# detect with a foreign image (excluded, why)
"$RAIDIMG" detect --json "${m[@]}" "$d2/member0.img" >"$O/detect.json" 2>/dev/null
# unreadable ranges: RAID6 without three members' worth of a range
RAIDIMG_FAULTS="${m[0]}:1M+64K" "$RAIDIMG_FAULTY" cat --provenance "$O/prov-bad.jsonl" -o "$TMP/b.img" \
	"${m[0]}" "${m[1]}" "${m[2]}" >/dev/null 2>&1
for f in "$O"/*; do
	[ -s "$f" ] || fail "$(basename "$f"): no output"
	jq -e . "$f" >/dev/null 2>&1 || fail "$(basename "$f"): not JSON"
done
check "provenance: member, rebuilt and unreadable ranges" \
	test "$(cat "$O"/prov*.jsonl | jq -r '.source // empty' | sort -u | tr '\n' ' ')" = "member rebuilt unreadable "

if fuse_usable; then
	mnt=$(mountpoint_dir keys)
	if $T "$RAIDIMG" mount --overlay "$TMP/o.ovl" --scrub-log "$O/scrub-log.jsonl" "${m[@]}" "$mnt" >/dev/null 2>"$TMP/err"; then
		echo check >"$mnt/sync_action"
		wait_until 30 grep -q '"type":"summary"' "$O/scrub-log.jsonl"
		$T cat "$mnt/status" >"$O/status.json"
		unmount_now "$mnt"
		"$RAIDIMG" overlay info --json "$TMP/o.ovl" >"$O/overlay-info.json" 2>/dev/null
		check "status has the scrub's and the overlay's objects" jq -e '.scrub.recent_mismatches[0] and .overlay' "$O/status.json" >/dev/null
	else
		fail "mount: $(cat "$TMP/err")"
	fi
	mnt=$(mountpoint_dir reshape)
	if $T "$RAIDIMG" mount "$rd"/member*.img "$mnt" >/dev/null 2>"$TMP/err"; then
		$T cat "$mnt/status" >"$O/status-reshape.json"
		unmount_now "$mnt"
	fi
else
	echo "note: FUSE is not usable here ($(cat "$TMP/probe.err")): the mount's status, scrub log and overlay info not checked"
fi

# ---- every key listed ----
for f in "$O"/*; do
	jq -r 'paths | .[] | select(type == "string")' "$f" 2>/dev/null | sed "s|^|$(basename "$f") |"
done | sort -u >"$TMP/seen"
cut -d' ' -f2 "$TMP/seen" | LC_ALL=C sort -u >"$TMP/keys"
check "the outputs have keys ($(wc -l <"$TMP/keys"))" test "$(wc -l <"$TMP/keys")" -gt 50
LC_ALL=C sort -u "$TMP/listed" >"$TMP/listed.sorted"
unlisted=$(LC_ALL=C comm -23 "$TMP/keys" "$TMP/listed.sorted")
for k in $unlisted; do
	fail "key \"$k\" (in $(awk -v k="$k" '$2 == k { print $1 }' "$TMP/seen" | tr '\n' ' ')) is not in the man page's JSON FIELDS"
done
[ -z "$unlisted" ] && pass "every key of every output is in the man page's JSON FIELDS"
unseen=$(LC_ALL=C comm -13 "$TMP/keys" "$TMP/listed.sorted" | tr '\n' ' ')
[ -n "$unseen" ] && echo "note: listed but not in these outputs: $unseen"
finish
