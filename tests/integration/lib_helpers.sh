#!/bin/bash
# The tests' own helpers (lib.sh) against what they stand in for:
# json_get FILE EXPR prints what `jq -r EXPR FILE` prints - for every path
# of a container fixture's manifest (nested objects, arrays, keys with dots
# and spaces, numbers, booleans, nulls, strings), for paths that are not
# there, for expressions that are not plain paths, and after the file
# changed under its cached list of leaves.
. "$(dirname "$0")/lib.sh"

f=$SRCDIR/tests/fixtures/ext/ddf-r6-5x40M-64K-missing1-3/manifest.json
[ -f "$f" ] || { fail "no manifest at $f"; finish; }
# every path jq knows, written as a path expression where it can be one,
# with the type of what is there
mapfile -t paths < <(jq -r '. as $d | [paths] | .[] | select(all(.[]; type == "number" or test("^[A-Za-z_][A-Za-z0-9_]*$")))
	| . as $p | "\(map(if type == "number" then "[\(.)]" else ".\(.)" end) | join("")) \($d | getpath($p) | type)"' "$f")
# a sample (every 7th) keeps the jq runs few; all leaf kinds are among them
bad=0 n=0 kinds=""
for ((i = 0; i < ${#paths[@]}; i += 7)); do
	p=${paths[$i]% *} n=$((n + 1))
	kinds+=" ${paths[$i]##* }"
	[ "$(json_get "$f" "$p")" = "$(jq -r "$p" "$f")" ] || { bad=$((bad + 1)); echo "  $p: '$(json_get "$f" "$p")' vs jq '$(jq -r "$p" "$f")'"; }
done
check "json_get = jq -r on $n of the manifest's ${#paths[@]} paths ($bad differ)" test $bad = 0 -a $n -gt 20
for k in number string object array; do
	check "... among them a $k" grep -qw $k <<<"$kinds"
done
# (.metadata_areas.member4.img[0] is jq's null: no key "member4" - the key is "member4.img")
for e in .metadata_areas '.metadata_areas["member4.img"][0].sha256' .metadata_areas.member4.img[0].sha256 '.nothing_here' '.level.nothing' '[.level, .raid_disks] | @tsv' \
	'.corruption | length' '.members[0]'; do
	check "json_get $e = jq -r" test "$(json_get "$f" "$e" 2>&1)" = "$(jq -r "$e" "$f" 2>&1)"
done
# a file that changes: the list of leaves is made again
cp "$f" "$TMP/m.json"
a=$(json_get "$TMP/m.json" .level)
jq '.level = 99' "$f" >"$TMP/m2.json" && mv "$TMP/m2.json" "$TMP/m.json"
touch -d '+1 second' "$TMP/m.json"
check "json_get after the file changed: the new value ($a, then $(json_get "$TMP/m.json" .level))" \
	test "$(json_get "$TMP/m.json" .level)" = 99 -a "$a" != 99
finish
