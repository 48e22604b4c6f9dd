#!/bin/bash
# Streaming commands leave the members' page cache as they found it: after
# a scrub, a rebuild, a cat (zero-copy and the copying pipeline), an export,
# examine --hash and a compress of members nobody had cached, the members'
# resident pages (fincore) have grown by at most BOUND per member (what
# assembly reads of the superblock area and the kernel reads ahead of it,
# before any command streams; a member is 24 MiB); members that were
# cached before stay cached, and so do the pages cached before in a
# half-cached member.  Not a timed test.  Skips (77) only where the kernel
# does not report residency (fincore) or keeps pages it is asked to drop.
. "$(dirname "$0")/lib.sh"
command -v fincore >/dev/null || skip "fincore (util-linux) is missing"

BOUND=$((4 << 20))
arr=$TMP/arr
# 96 MiB of data: 24 MiB members, past the kernel's read-ahead windows and
# into its 2 MiB folios
head -c $((96 << 20)) /dev/urandom >"$TMP/data"
"$RAIDIMG" create --level 6 --devices 6 --chunk 64K --from "$TMP/data" -o "$arr" >/dev/null
rm -f "$TMP/data"
m=("$arr"/member*.img)
sync

resident() { fincore -b -n -o RES "$@" | awk '{ s += $1 } END { print s + 0 }'; }
uncache() { local f; for f in "$@"; do dd if="$f" iflag=nocache count=0 status=none; done; }

# the kernel reports residency and drops clean pages when asked
cat "${m[@]}" >/dev/null
full=$(resident "${m[@]}")
uncache "${m[@]}"
[ "$(resident "${m[@]}")" -lt $((full / 100)) ] && [ "$full" -gt $((100 << 20)) ] ||
	skip "this kernel or file system does not report page-cache residency or keeps dropped pages ($full bytes cached after reading)"

# grows CMD...: the members' page cache, none cached before, grows by at
# most BOUND per member while CMD runs
grows() {
	local b0 b1
	uncache "${m[@]}"
	b0=$(resident "${m[@]}")
	"$@" >/dev/null 2>"$TMP/err" || [ $? = 1 ] || { echo "failed: $(cat "$TMP/err")"; return 1; }
	b1=$(resident "${m[@]}")
	echo "grew by $(((b1 - b0) / 1024)) KiB over ${#m[@]} members"
	[ $((b1 - b0)) -le $((BOUND * ${#m[@]})) ]
}

check "scrub" grows "$RAIDIMG" scrub --no-progress "${m[@]}"
check "rebuild of role 2" grows "$RAIDIMG" rebuild --role 2 -o "$TMP/r2.img" "${m[@]}"
rm -f "$TMP/r2.img"
check "cat (zero-copy)" grows "$RAIDIMG" cat "${m[@]}"
check "cat into a pipe" grows bash -c '"$0" cat "$@" | cat >/dev/null' "$RAIDIMG" "${m[@]}"
check "cat, degraded (two members missing)" grows "$RAIDIMG" cat "${m[@]:2}"
check "cat --no-zero-copy" grows "$RAIDIMG" cat --no-zero-copy "${m[@]}"
check "export" grows "$RAIDIMG" export -o "$TMP/x.img" "${m[@]}"
rm -f "$TMP/x.img"
check "examine --hash" grows "$RAIDIMG" examine --hash "${m[@]}"
check "compress" grows "$RAIDIMG" compress -o "$TMP/m0.zst" "${m[0]}"
rm -f "$TMP/m0.zst"

# what was cached before stays (tried up to 3 times: another process of
# the machine dropping caches meanwhile would look like the scrub did)
keeps_cached() {
	local before after
	cat "${m[@]}" >/dev/null
	before=$(resident "${m[@]}")
	"$RAIDIMG" scrub --no-progress "${m[@]}" >/dev/null
	after=$(resident "${m[@]}")
	echo "$before bytes cached before, $after after"
	[ "$after" -ge "$before" ]
}
keeps_part() {
	local half after
	uncache "${m[@]}"
	dd if="${m[1]}" of=/dev/null bs=1M count=8 status=none    # the first 8 MiB of one member
	half=$(resident "${m[1]}")
	"$RAIDIMG" cat "${m[@]}" >/dev/null
	after=$(resident "${m[1]}")
	echo "$half bytes of member 1 cached before, $after after"
	[ "$after" -ge "$half" ] && [ "$after" -le $((half + BOUND)) ]
}
retry3() { "$@" || "$@" || "$@"; }
check "a scrub of cached members leaves them cached" retry3 keeps_cached
check "a cat keeps the part of a member cached before, drops the rest" retry3 keeps_part
finish
