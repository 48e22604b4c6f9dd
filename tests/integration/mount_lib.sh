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

# wait_until SECONDS COMMAND...: poll (every 50 ms) until COMMAND succeeds
wait_until() {
	local deadline=$(($(date +%s) + $1)); shift
	until "$@"; do
		[ "$(date +%s)" -ge "$deadline" ] && return 1
		sleep 0.05
	done
}

# pid_gone PID: no such process any more (a zombie waiting for its reaper counts as gone)
pid_gone() {
	[ ! -e "/proc/$1" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]
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

# require_fuse: skip (77) unless a FUSE file system can really be mounted
# here; probed with the independent tests/helpers/nullfs, so a bug in
# raidimg mount cannot turn into a skip.
require_fuse() {
	local d pid
	[ -e /dev/fuse ] || skip "/dev/fuse does not exist (no FUSE in this kernel or container)"
	if [ "$(id -u)" -ne 0 ]; then
		command -v fusermount3 >/dev/null || skip "fusermount3 is not installed (package fuse3)"
		[ -u "$(command -v fusermount3)" ] || skip "fusermount3 is not setuid root"
	fi
	[ -x "$NULLFS" ] || { fail "$NULLFS is missing (make builds it)"; finish; }
	d=$(mountpoint_dir fuse-probe)
	"$NULLFS" 4096 "$d" 2>"$TMP/probe.err" &
	pid=$!
	if ! wait_until 10 is_mounted "$d"; then
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		skip "FUSE is not usable here: a test mount failed: $(head -c 300 "$TMP/probe.err")"
	fi
	fusermount3 -u "$d" 2>/dev/null || umount "$d"
	wait "$pid" 2>/dev/null
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
