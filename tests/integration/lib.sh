# lib.sh - shared helpers for the integration tests (sourced by bash).
# Environment from Makefile.am: RAIDIMG (the binary), SRCDIR, BUILDDIR.
set -u
RAIDIMG=${RAIDIMG:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/src/raidimg}
SRCDIR=${SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILDDIR=${BUILDDIR:-$SRCDIR}
# raidimg with the fault injector RAIDIMG_FAULTS (tests/helpers/source_fault.c)
RAIDIMG_FAULTY=${RAIDIMG_FAULTY:-$BUILDDIR/tests/helpers/raidimg-faulty}
FIXTURES=$SRCDIR/tests/fixtures/md
# the decompressed fixtures: the build tree's, or RAIDIMG_TEST_CACHE's (the
# sanitizer pass of scripts/test uses the normal pass's: same fixtures)
CACHE=${RAIDIMG_TEST_CACHE:-$BUILDDIR/tests/cache}

failures=0
checks=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/raidimg-test.XXXXXX")
cleanup_hooks=()
cleanup() {
	local h
	for h in "${cleanup_hooks[@]}"; do eval "$h" || true; done
	chmod -R u+w "$TMP" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

pass() { checks=$((checks + 1)); echo "ok   - $*"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL - $*"; }
check() { # check DESCRIPTION COMMAND...
	local d=$1; shift
	if "$@"; then pass "$d"; else fail "$d"; fi
}
finish() {
	echo "$((checks - failures)) passed, $failures failed"
	[ "$failures" -eq 0 ]
	exit $?
}
skip() { echo "SKIP: $*"; exit 77; }
# quick: true in the sanitizer pass of scripts/test (RAIDIMG_TEST_QUICK=1),
# where the tests that try every combination (metadata x layout, every set
# of missing members, every fixture) take each code path once instead:
# under ASan they would take most of the suite's time and find nothing more
quick() { [ "${RAIDIMG_TEST_QUICK:-0}" = 1 ]; }
# LeakSanitizer (the sanitizer pass) scans every process at its exit: 35 ms
# per raidimg run on the 2-core CI machine, 50 s of that pass's ~440.  It
# keeps scanning in the unit tests, the fuzz replays and the scripts named
# here, which between them run every command and its error paths, a mount
# from start to unmount, overlay writes, repairs, every kind of member
# source, containers, a reshaping array and detect; the other scripts run the
# same commands over more inputs, with the scan off.
LEAK_CHECKED=" bad_input cli_habits containers_bad containers_commands custody detect evidence_sources
	json_keys mount_lifecycle overlay reshape scrub_bad_input scrub_repair "
if quick && [[ $LEAK_CHECKED != *[[:space:]]$(basename "$0" .sh)[[:space:]]* ]]; then
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
fi

# fixture_cases: the real-md fixtures; quick: the five that between them
# take every path of the read, scrub and rebuild (0.90 and 1.2; RAID5 and
# RAID6; a bad P, bad data, one and two members missing) - the 1.0 and 1.1
# superblocks are parsed in test_metadata, the fuzz replays and create.sh
fixture_cases() {
	if quick; then
		printf '%s\n' r5-la-4x6M-32K-md090 r5-ls-4x6M-64K-badparity r5-ls-5x6M-128K-missing2 \
			r6-ls-5x6M-64K-baddata r6-ls-6x6M-64K-missing1-4
	else
		ls "$FIXTURES" | grep -v '\.txt$'
	fi
}
manifest() { echo "$FIXTURES/$1/manifest.json"; }
mf() { json_get "$FIXTURES/$1/manifest.json" "$2"; }

# json_get FILE EXPR: what `jq -r EXPR FILE` prints, for a JSON file that
# does not change while the tests run (the fixtures' manifests).  jq 1.6
# takes 40 ms of CPU to start (it compiles its builtins every time), and
# the tests ask the manifests hundreds of times: a plain path (.a.b[0].c)
# is looked up in bash in the file's list of leaves, which jq makes once
# into the build tree's cache; anything else (or a leaf not in the list:
# absent, or a string with a tab or newline) goes to jq.
json_get() {
	local f=$1 e=$2 leaves k v
	if [[ $e =~ ^(\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\])+$ ]]; then
		leaves=$CACHE/json-leaves/${f//\//%}
		if [ ! -f "$leaves" ] || [ "$f" -nt "$leaves" ]; then
			mkdir -p "$CACHE/json-leaves"
			jq -r 'paths(scalars) as $p | getpath($p) as $v
				| select(($v | type) != "string" or ($v | test("[\t\n]") | not))
				| "\($p | map(if type == "number" then "[\(.)]"
					elif test("^[A-Za-z_][A-Za-z0-9_]*$") then ".\(.)" else ".\"\(.)\"" end) | join(""))\t\($v)"' \
				"$f" >"$leaves.$$" && mv -f "$leaves.$$" "$leaves"
		fi
		while IFS=$'\t' read -r k v; do
			[ "$k" = "$e" ] && { printf '%s\n' "$v"; return 0; }
		done <"$leaves"
	fi
	jq -r "$e" "$f"
}

# fixture_dir CASE [ROOT]: a directory holding the case's raw member images,
# decompressed once into the build tree's cache and made read-only.  ROOT:
# the fixture set (default tests/fixtures/md).
fixture_dir() {
	local c=$1 root=${2:-$FIXTURES} d z
	d=$CACHE/$1
	[ "$root" = "$FIXTURES" ] || d=$CACHE/$(basename "$root")-$1
	if [ ! -f "$d/.done" ]; then
		mkdir -p "$d"
		(
			flock 9
			if [ ! -f "$d/.done" ]; then
				for z in "$root/$c"/member*.img.zst; do
					zstd -q -d -f "$z" -o "$d/$(basename "${z%.zst}")"
					chmod 444 "$d/$(basename "${z%.zst}")"
				done
				touch "$d/.done"
			fi
		) 9>"$CACHE/.$(basename "$d").lock"
	fi
	echo "$d"
}

# stats_method FILE: the "method" (zero-copy or pipeline) of the --stats
# line raidimg cat wrote into FILE
stats_method() { grep '^{' "$1" | jq -r .method; }

# members CASE: the images of a case, in a shuffled (but fixed) order
members_shuffled() {
	local d; d=$(fixture_dir "$1")
	ls "$d"/member*.img | awk 'BEGIN{srand(42)}{print rand() "\t" $0}' | sort | cut -f2
}

# sha [FILE]: the sha256 of FILE (standard input without one), in hex;
# shas FILE...: "HASH *FILE" lines (to compare sets of files).  openssl, not
# sha256sum: the CPU's SHA instructions hash 1.56 GB/s here against
# sha256sum's 0.2 (22 ms to start against 10: faster from about 3 MB on;
# the tests hash arrays and members of 6-40 MB, hundreds of times).
sha() {
	local h
	h=$(openssl dgst -sha256 -r ${1+"$1"}) || return
	echo "${h%% *}"
}
shas() { openssl dgst -sha256 -r "$@"; }
# (without openssl every "unchanged" comparison would compare two empty strings)
command -v openssl >/dev/null || { echo "FAIL - openssl is needed for the sha256s (scripts/deps installs it)"; exit 1; }

# wait_until SECONDS COMMAND...: poll (every 50 ms) until COMMAND succeeds
wait_until() {
	local deadline=$((EPOCHSECONDS + $1)); shift
	until "$@"; do
		[ "$EPOCHSECONDS" -ge "$deadline" ] && return 1
		sleep 0.05
	done
}

# pid_gone PID: no such process any more (a zombie waiting for its reaper counts as gone)
pid_gone() {
	[ ! -e "/proc/$1" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]
}


# wait_pid PID [SECONDS]: wait at most SECONDS (default 30) for the child PID
# to end and return its exit status; past the deadline it is killed (status
# 124 and a note), so no wait in the tests is unbounded.
wait_pid() {
	local pid=$1 secs=${2:-30}
	if ! wait_until "$secs" pid_gone "$pid"; then
		echo "note: process $pid still running after $secs s: killed" >&2
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return 124
	fi
	wait "$pid" 2>/dev/null
}

# expect_fail DESCRIPTION PATTERN COMMAND...: exit status 2 and stderr matching
# PATTERN (an extended regex) within 60 s.  COMMAND is a program, not a function.
expect_fail() {
	local d=$1 pat=$2 rc; shift 2
	timeout 60 "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?
	if [ $rc -ne 2 ]; then fail "$d: exit status $rc, want 2 ($(head -c 300 "$TMP/err"))"; return; fi
	if ! grep -Eq -- "$pat" "$TMP/err"; then fail "$d: message '$(head -c 400 "$TMP/err")' lacks /$pat/"; return; fi
	pass "$d: $(grep -v warning "$TMP/err" | head -n1)"
}

# ---- md 1.2 superblock editing (the superblock is at byte 4096) ----
SB=4096
# (the editing helpers fork as little as they can: every process costs
# milliseconds here, and the tests edit hundreds of superblocks)
put_le() { # put_le FILE OFFSET BYTES VALUE: little-endian integer into FILE
	local f=$1 off=$2 n=$3 v=$4 s="" b i
	for ((i = 0; i < n; i++)); do printf -v b '\\x%02x' $(((v >> (8 * i)) & 255)); s+=$b; done
	printf "$s" | dd of="$f" bs=1 seek="$off" conv=notrunc status=none
}
get_le32() { local v; v=$(od -An -t u4 -j "$2" -N4 "$1"); echo $((v)); }
fix_csum() { # fix_csum FILE: recompute the md 1.x checksum (u32 sum folded once)
	local f=$1 max_dev size sum
	max_dev=$(get_le32 "$f" $((SB + 220)))
	size=$((256 + 2 * max_dev))
	put_le "$f" $((SB + 216)) 4 0
	sum=$(od -An -t u4 -v -j $SB -N $((size / 4 * 4)) "$f" | awk '{ for (i = 1; i <= NF; i++) s += $i } END { printf "%.0f", s }')
	if ((size % 4)); then sum=$((sum + $(od -An -t u2 -j $((SB + size - 2)) -N2 "$f"))); fi
	put_le "$f" $((SB + 216)) 4 $((((sum & 0xffffffff) + (sum >> 32)) & 0xffffffff))
}
# sb_set FIELD_OFFSET BYTES VALUE FILE...: set a field in each, fix checksums
sb_set() {
	local off=$1 n=$2 v=$3 f; shift 3
	for f in "$@"; do put_le "$f" $((SB + off)) "$n" "$v"; fix_csum "$f"; done
}

