#!/bin/bash
# check_layers.sh - the layers of src/ stay layers: a file may include only
# headers of its own layer and of the layers below it
#   core < io < engine < report < fuse < cli
# (the build's per-layer include paths refuse the others too; this check
# names the offending line).  Also: every header a file includes with ""
# exists in some layer, and only src/fuse and src/cli mention FUSE.
set -u
SRCDIR=${SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$SRCDIR/src" || exit 1
layers=(core io engine report fuse cli)
declare -A rank where
for i in "${!layers[@]}"; do
	rank[${layers[$i]}]=$i
	for h in "${layers[$i]}"/*.h; do
		[ -e "$h" ] && where[$(basename "$h")]=${layers[$i]}
	done
done
bad=0
checked=0
for l in "${layers[@]}"; do
	for f in "$l"/*.[ch]; do
		[ -e "$f" ] || continue
		while IFS=: read -r line inc; do
			h=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$inc")
			checked=$((checked + 1))
			hl=${where[$h]:-}
			if [ -z "$hl" ]; then
				echo "FAIL - src/$f:$line includes \"$h\", which is in no layer"
				bad=$((bad + 1))
			elif [ "${rank[$hl]}" -gt "${rank[$l]}" ]; then
				echo "FAIL - src/$f:$line: layer $l includes \"$h\" of the higher layer $hl"
				bad=$((bad + 1))
			fi
		done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f")
		if [ "$l" != fuse ] && [ "$l" != cli ] && grep -qE '#include <fuse|fuse_req_t|fuse_session' "$f"; then
			echo "FAIL - src/$f: layer $l uses FUSE (only src/fuse may)"
			bad=$((bad + 1))
		fi
	done
done
echo "$checked includes checked in ${#layers[@]} layers, $bad out of place"
[ "$bad" -eq 0 ]
