# lib.sh - shared helpers for the integration tests (sourced by bash).
# Environment from Makefile.am: RAIDIMG (the binary), SRCDIR, BUILDDIR.
set -u
RAIDIMG=${RAIDIMG:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/src/raidimg}
SRCDIR=${SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILDDIR=${BUILDDIR:-$SRCDIR}
FIXTURES=$SRCDIR/tests/fixtures/md
CACHE=$BUILDDIR/tests/cache

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

fixture_cases() { ls "$FIXTURES" | grep -v '\.txt$'; }
manifest() { echo "$FIXTURES/$1/manifest.json"; }
mf() { jq -r "$2" "$(manifest "$1")"; }

# fixture_dir CASE: a directory holding the case's raw member images,
# decompressed once into the build tree's cache and made read-only.
fixture_dir() {
	local c=$1 d=$CACHE/$1 z
	if [ ! -f "$d/.done" ]; then
		mkdir -p "$d"
		(
			flock 9
			if [ ! -f "$d/.done" ]; then
				for z in "$FIXTURES/$c"/member*.img.zst; do
					zstd -q -d -f "$z" -o "$d/$(basename "${z%.zst}")"
					chmod 444 "$d/$(basename "${z%.zst}")"
				done
				touch "$d/.done"
			fi
		) 9>"$CACHE/.$c.lock"
	fi
	echo "$d"
}

# members CASE: the images of a case, in a shuffled (but fixed) order
members_shuffled() {
	local d; d=$(fixture_dir "$1")
	ls "$d"/member*.img | awk 'BEGIN{srand(42)}{print rand() "\t" $0}' | sort | cut -f2
}

sha() { sha256sum "$1" | cut -d' ' -f1; }
