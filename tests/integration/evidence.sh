#!/bin/bash
# Evidence is never modified: member images made read-only (chmod 444, and
# immutable with chattr +i where the file system allows it: even root cannot
# write them then) go through every read-only command - examine, cat, mount
# (also writable through an overlay), scrub without --repair, rebuild,
# export, compress, replay - which must all
# work, and afterwards every member has the same sha256, size, mtime and
# inode.  Under strace, no read-only command opens a member for writing (or
# truncates, renames, removes, chmods or re-times it); a positive control
# (create, which does write) shows the strace check sees writes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mount_lib.sh"

C=r6-ls-6x6M-64K-md12
W=$TMP/evidence
mkdir -p "$W"
cp "$(fixture_dir $C)"/member*.img "$W"/
m=("$W"/member0.img "$W"/member1.img "$W"/member2.img "$W"/member3.img "$W"/member4.img "$W"/member5.img)
want=$(mf $C .expected_sha256)
chmod 444 "${m[@]}"
chmod 555 "$W"

immutable=no
if command -v chattr >/dev/null && chattr +i "${m[@]}" 2>/dev/null; then
	cleanup_hooks=("chattr -i ${m[*]} 2>/dev/null" "${cleanup_hooks[@]}")
	if lsattr "${m[0]}" 2>/dev/null | cut -d' ' -f1 | grep -q i; then
		immutable=yes
		pass "members are immutable (chattr +i): even root cannot write them"
	fi
fi
[ $immutable = yes ] || echo "note: chattr +i not available or not permitted here; members are only chmod 444"

state() { # size, mtime (ns), inode and sha256 of every member, and the directory listing
	local f
	for f in "${m[@]}"; do
		printf '%s %s %s\n' "$(stat -c '%s %.9Y %i' "$f")" "$(sha "$f")" "$f"
	done
	ls -lA --time-style=full-iso "$W" | sed 1d
}
before=$(state)

STRACE=
if command -v strace >/dev/null && strace -f -qq -e trace=openat -o /dev/null true 2>/dev/null; then
	STRACE=strace
else
	echo "note: strace is missing or cannot trace here (ptrace refused): only the end state is checked"
fi

# writes_to_members LOG: the strace lines that touch a member in a way that
# can change it
writes_to_members() {
	grep -F "$W/member" "$1" |
		grep -E 'O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|^[0-9]+ +(creat|truncate|unlink|unlinkat|rename|renameat2?|chmod|fchmodat|chown|fchownat|lchown|utimensat|utimes|utime|setxattr|lsetxattr|removexattr|lremovexattr|link|linkat|symlink|symlinkat|mknod|mknodat)\(' || true
}

# opened_ro LOG: the trace shows a member opened read-only (it is not empty)
opened_ro() { grep -F "$W/member" "$1" 2>/dev/null | grep -q O_RDONLY; }

# ro NAME COMMAND...: a read-only command must succeed and open no member
# for writing
ro() {
	local name=$1 rc w; shift
	if [ -n "$STRACE" ]; then
		# (LeakSanitizer cannot work under ptrace: off for traced runs)
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
			$T strace -f -qq -e trace=%file -o "$TMP/$name.strace" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
	else
		$T "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
	fi
	rc=$?
	if [ $rc -ne 0 ]; then fail "$name: exit status $rc: $(head -c 400 "$TMP/$name.err")"; return 1; fi
	if [ -n "$STRACE" ]; then
		w=$(writes_to_members "$TMP/$name.strace")
		if [ -n "$w" ]; then fail "$name: touches a member for writing: $(echo "$w" | head -n 3)"; return 1; fi
		if ! opened_ro "$TMP/$name.strace"; then
			fail "$name: strace shows no read-only open of a member (is the trace working?)"
			return 1
		fi
	fi
	pass "$name: succeeds${STRACE:+; members opened read-only only}"
}

# ---- the strace check itself sees writes (positive control) ----
if [ -n "$STRACE" ]; then
	mkdir -p "$TMP/ctl"
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		strace -f -qq -e trace=%file -o "$TMP/ctl.strace" "$RAIDIMG" create --level 5 --devices 3 --chunk 64K \
		--size 2M -o "$TMP/ctl" >/dev/null 2>&1
	check "positive control: create's writes to its members are seen by the strace check" \
		test -n "$(W=$TMP/ctl writes_to_members "$TMP/ctl.strace")"
fi

# ---- every read-only command ----
ro examine "$RAIDIMG" examine "${m[@]}"
ro examine-json "$RAIDIMG" examine --json "${m[@]}"
ro cat "$RAIDIMG" cat -o "$TMP/cat.img" "${m[@]}" &&
	check "cat: the right bytes" test "$(sha "$TMP/cat.img")" = "$want"
ro cat-degraded "$RAIDIMG" cat --offset 1M --length 3M "${m[0]}" "${m[1]}" "${m[3]}" "${m[5]}"
ro cat-force "$RAIDIMG" cat --force --length 1M "${m[@]}"
ro cat-manual "$RAIDIMG" cat --level 6 --chunk 64K --layout left-symmetric --data-offset 1M \
	--member-size 5M --length 2M "${m[@]}"
if "$RAIDIMG" scrub --help >/dev/null 2>&1; then
	ro scrub "$RAIDIMG" scrub --no-progress "${m[@]}"
	ro scrub-json "$RAIDIMG" scrub --json --no-progress --checkpoint "$TMP/scrub.ck" "${m[@]}"
	ro scrub-degraded "$RAIDIMG" scrub --no-progress "${m[0]}" "${m[1]}" "${m[2]}" "${m[4]}" "${m[5]}"
fi
if "$RAIDIMG" rebuild --help >/dev/null 2>&1; then
	ro rebuild "$RAIDIMG" rebuild --no-progress --role 3 -o "$TMP/new3.img" \
		"${m[0]}" "${m[1]}" "${m[2]}" "${m[4]}" "${m[5]}" &&
		check "rebuild: the new member is the old one's twin in data" \
			cmp -s -i 1M:1M -n 5M "$TMP/new3.img" "${m[3]}"
fi
if "$RAIDIMG" export --help >/dev/null 2>&1; then
	ro export "$RAIDIMG" export -o "$TMP/export.img" "${m[@]}"
	ro export-zstd "$RAIDIMG" export --zstd --record "$TMP/export.rec" --provenance "$TMP/export.prov" \
		-o "$TMP/export.zst" "${m[@]}"
fi
if "$RAIDIMG" compress --help >/dev/null 2>&1; then
	ro compress "$RAIDIMG" compress -o "$TMP/member0.zst" "${m[0]}"
fi
if "$RAIDIMG" replay --help >/dev/null 2>&1 && [ -f "$TMP/export.rec" ]; then
	ro replay "$RAIDIMG" replay "$TMP/export.rec"
fi

# ---- mount: read the image through FUSE, then unmount ----
if ! "$RAIDIMG" mount --help >/dev/null 2>&1; then
	echo "note: no mount command in this build"
elif ! fuse_usable; then
	echo "note: FUSE is not usable here; the mount part is skipped"
else
	mnt=$TMP/mnt-evidence
	mkdir -p "$mnt"
	mounts_made+=("$mnt")
	if [ -n "$STRACE" ]; then
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
			$T strace -f -qq -e trace=%file -o "$TMP/mount.strace" \
			"$RAIDIMG" mount -f "${m[@]}" "$mnt" >/dev/null 2>"$TMP/mount.err" &
	else
		$T "$RAIDIMG" mount -f "${m[@]}" "$mnt" >/dev/null 2>"$TMP/mount.err" &
	fi
	mpid=$!
	if wait_until 20 is_mounted "$mnt"; then
		img=$(find "$mnt" -maxdepth 1 -name '*.img' | head -n1)
		check "mount: the image reads right" test "$($T sha256sum "$img" | cut -d' ' -f1)" = "$want"
		check "mount: the image refuses writes" bash -c "! $T dd if=/dev/zero of='$img' bs=4096 count=1 conv=notrunc 2>/dev/null"
		$T cat "$mnt/status" >/dev/null
		unmount_now "$mnt"
		wait_pid "$mpid"; rc=$?
		check "mount: ends cleanly when unmounted" test $rc = 0
		if [ -n "$STRACE" ]; then
			w=$(writes_to_members "$TMP/mount.strace")
			check "mount: members opened read-only only${w:+: $w}" test -z "$w" -a -s "$TMP/mount.strace"
			check "mount: the trace shows the members' read-only opens" opened_ro "$TMP/mount.strace"
		fi
	else
		fail "mount: did not mount: $(head -c 300 "$TMP/mount.err")"
		kill "$mpid" 2>/dev/null
	fi
	# a writable mount through a copy-on-write overlay: the writes land in
	# the overlay, never in a member
	if "$RAIDIMG" mount --help 2>/dev/null | grep -q -- --overlay; then
		mnt=$TMP/mnt-overlay
		mkdir -p "$mnt"
		mounts_made+=("$mnt")
		head -c 1M /dev/urandom >"$TMP/patch"
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
			$T ${STRACE:+strace -f -qq -e trace=%file -o "$TMP/overlay.strace"} \
			"$RAIDIMG" mount -f --overlay "$TMP/overlay" "${m[@]}" "$mnt" >/dev/null 2>"$TMP/overlay.err" &
		mpid=$!
		if wait_until 20 is_mounted "$mnt"; then
			img=$(find "$mnt" -maxdepth 1 -name '*.img' | head -n1)
			$T dd if="$TMP/patch" of="$img" bs=1M seek=2 conv=notrunc status=none
			check "overlay mount: a write reads back" cmp -s -i 0:2M -n 1M "$TMP/patch" "$img"
			unmount_now "$mnt"
			wait_pid "$mpid"
			if [ -n "$STRACE" ]; then
				w=$(writes_to_members "$TMP/overlay.strace")
				check "overlay mount: members opened read-only only${w:+: $w}" test -z "$w"
				check "overlay mount: the trace shows the members' read-only opens" opened_ro "$TMP/overlay.strace"
			fi
			ro cat-overlay "$RAIDIMG" cat --overlay "$TMP/overlay" -o "$TMP/cat-overlay.img" "${m[@]}" &&
				check "cat --overlay: the array with the write" cmp -s -i 0:2M -n 1M "$TMP/patch" "$TMP/cat-overlay.img"
		else
			fail "overlay mount: did not mount: $(head -c 300 "$TMP/overlay.err")"
			kill "$mpid" 2>/dev/null
		fi
	fi
fi

# ---- nothing changed ----
after=$(state)
check "every member has the same sha256, size, mtime and inode, and the directory the same files" \
	test "$before" = "$after"
[ "$before" = "$after" ] || diff <(echo "$before") <(echo "$after")
finish
