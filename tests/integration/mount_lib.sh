# mount_lib.sh - helpers for the mount tests (sourced after lib.sh).
# Every mount made through these helpers is undone at exit, even on failure.
HELPERS=$BUILDDIR/tests/helpers
READCHECK=$HELPERS/readcheck
NULLFS=$HELPERS/nullfs
T="timeout 60"              # no single command may hang the suite
mounts_made=()
cleanup_mounts() {
	local m
	for m in "${mounts_made[@]}"; do
		if is_mounted "$m"; then
			fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		fi
	done
	return 0
}
cleanup_hooks+=(cleanup_mounts)

# is_mounted PATH: a FUSE mount sits on PATH (from /proc/mounts)
is_mounted() {
	awk -v m="$1" '$2 == m && $3 ~ /^fuse/ { found = 1 } END { exit !found }' /proc/mounts
}

not_mounted() { ! is_mounted "$1"; }
not() { ! "$@"; }

# mountpoint_dir NAME: a fresh empty directory under $TMP, remembered for cleanup
mountpoint_dir() {
	local d=$TMP/mnt-$1
	mkdir -p "$d"
	mounts_made+=("$d")
	echo "$d"
}

# fuse_usable: can a FUSE file system really be mounted here?  Probed with
# the independent tests/helpers/nullfs, so a bug in raidimg mount cannot
# turn into a skip; the reason it cannot is in $TMP/probe.err.
fuse_usable() {
	local d pid
	if [ ! -e /dev/fuse ]; then
		echo "/dev/fuse does not exist (no FUSE in this kernel or container)" >"$TMP/probe.err"
		return 1
	fi
	if [ "$(id -u)" -ne 0 ]; then
		if ! command -v fusermount3 >/dev/null; then
			echo "fusermount3 is not installed (package fuse3)" >"$TMP/probe.err"
			return 1
		fi
		if ! [ -u "$(command -v fusermount3)" ]; then
			echo "fusermount3 is not setuid root" >"$TMP/probe.err"
			return 1
		fi
	fi
	[ -x "$NULLFS" ] || { fail "$NULLFS is missing (make builds it)"; finish; }
	d=$(mountpoint_dir fuse-probe)
	"$NULLFS" 4096 "$d" 2>"$TMP/probe.err" &
	pid=$!
	if ! wait_until 10 is_mounted "$d"; then
		kill "$pid" 2>/dev/null
		wait_pid "$pid" 5
		sed -i '1s/^/a test mount failed: /' "$TMP/probe.err"
		return 1
	fi
	unmount_now "$d"
	wait_pid "$pid" >/dev/null   # (whatever nullfs's exit status: under ASan it reports libfuse's leaks)
	return 0
}

# require_fuse: skip (77) unless a FUSE file system can really be mounted here
require_fuse() {
	fuse_usable || skip "FUSE is not usable here: $(head -c 300 "$TMP/probe.err")"
}

# unmount_now MNT: unmount MNT (fusermount3 -u, else umount), retrying every
# 0.1 s while the kernel says "target is busy" (seen right after a mount
# appears); after 20 s a lazy unmount.  True once nothing is mounted there.
unmount_now() {
	local m=$1 deadline=$((EPOCHSECONDS + 20))
	while is_mounted "$m"; do
		fusermount3 -u "$m" 2>/dev/null || umount "$m" 2>/dev/null
		is_mounted "$m" || break
		if [ "$EPOCHSECONDS" -ge "$deadline" ]; then
			echo "note: $m still busy after 20 s: lazy unmount" >&2
			fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
			break
		fi
		sleep 0.1
	done
	not_mounted "$m"
}


# image_name_of CASE: the file name raidimg mount gives the case's image
image_name_of() {
	local c=$1 name
	mapfile -t _imgs < <(members_shuffled "$c")
	name=$("$RAIDIMG" examine --json "${_imgs[@]}" 2>/dev/null | jq -r '.array.name // ""')
	if [ -z "$name" ]; then echo array.img; else echo "${name//[:\/]/_}.img"; fi
}

# status_field MNT JQ: a value from the mount's status file
status_field() { $T jq -r "$2" "$1/status"; }
