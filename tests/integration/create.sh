#!/bin/bash
# raidimg create: for every level x layout (RAID5 0-5, RAID6 0-5, 8-10,
# 16-20, RAID4) with one of the metadata versions each (they take turns),
# and several chunk sizes, device counts and ways of sizing,
# an array created from a random file reads back as that file followed by
# zeros, healthy and with members deleted (rebuilt from parity); examine
# reports the geometry asked for; without --from the images are sparse and
# read as zeros; an independent reference (parity_ref.c, no raidimg code)
# finds the data where md puts it and P/Q consistent; the configurations
# proven with the real md driver (scripts/md-verify-create --list) all round
# trip; bad input is refused with exit 2 and leaves no files behind.
. "$(dirname "$0")/lib.sh"

REF=$BUILDDIR/tests/integration/parity_ref
[ -x "$REF" ] || { fail "parity_ref not built ($REF): run through make check"; finish; }

# md's ALGORITHM_* numbers, written out independently of raidimg's tables
declare -A LNUM=(
	[left-asymmetric]=0 [right-asymmetric]=1 [left-symmetric]=2 [right-symmetric]=3
	[parity-first]=4 [parity-last]=5 [ddf-zero-restart]=8 [ddf-N-restart]=9
	[ddf-N-continue]=10 [left-asymmetric-6]=16 [right-asymmetric-6]=17
	[left-symmetric-6]=18 [right-symmetric-6]=19 [parity-first-6]=20
)
R5_LAYOUTS=(left-asymmetric right-asymmetric left-symmetric right-symmetric parity-first parity-last)
R6_LAYOUTS=("${R5_LAYOUTS[@]}" ddf-zero-restart ddf-N-restart ddf-N-continue
	left-asymmetric-6 right-asymmetric-6 left-symmetric-6 right-symmetric-6 parity-first-6)

head -c $((12 << 20)) /dev/urandom >"$TMP/rand"
A=$TMP/a

# members N: DIR/member0.img .. member{N-1}.img in role order
members() { local i; for ((i = 0; i < $1; i++)); do echo "$A/member$i.img"; done; }

# create_from ARGS...: create -o $A (replacing it) from $TMP/in
create_from() {
	rm -rf "$A"
	"$RAIDIMG" create "$@" --from "$TMP/in" -o "$A" >"$TMP/out" 2>"$TMP/err"
}

# examine_ok NAME META LEVEL N LAYOUT CHUNK: examine --json reports that
# geometry, a complete clean array, member k in role k
examine_ok() {
	local name=$1 meta=$2 level=$3 n=$4 layout=$5 chunk=$6 want ok
	want=${LNUM[$layout]}
	[ "$level" = 4 ] && want=0          # md keeps 0 in RAID4 superblocks
	mapfile -t imgs < <(members "$n")
	"$RAIDIMG" examine --json "${imgs[@]}" >"$TMP/ex.json" 2>"$TMP/err"
	ok=$(jq --arg meta "$meta" --argjson level "$level" --argjson n "$n" --argjson layout "$want" \
		--argjson chunk "$(numfmt --from=iec "$chunk")" '
		.array as $a | $a.metadata == $meta and $a.level == $level and $a.raid_disks == $n and
		$a.layout == $layout and $a.chunk_bytes == $chunk and $a.verdict == "complete" and
		([.members[].role] == [range($n)]) and all(.members[]; .clean and .events == 1)' "$TMP/ex.json")
	if [ "$ok" = true ]; then pass "$name: examine reports the geometry asked for"
	else fail "$name: examine --json: $(jq -c '.array | del(.members)' "$TMP/ex.json") $(cat "$TMP/err")"; fi
}

# readback NAME N LEN MISSING...: cat of the whole array = the file + zeros;
# with the MISSING roles left out, cat --length LEN = the file
readback() {
	local name=$1 n=$2 len=$3 bytes r keep=(); shift 3
	mapfile -t imgs < <(members "$n")
	bytes=$(jq .array.array_bytes "$TMP/ex.json")
	if cmp -s <("$RAIDIMG" cat "${imgs[@]}" 2>"$TMP/err") \
		<(cat "$TMP/in"; head -c $((bytes - len)) /dev/zero); then
		pass "$name: cat = the file ($len bytes) + zeros to $bytes"
	else fail "$name: cat differs from the file ($(head -c 300 "$TMP/err"))"; fi
	for ((r = 0; r < n; r++)); do
		[[ " $* " == *" $r "* ]] || keep+=("${imgs[$r]}")
	done
	if cmp -s <("$RAIDIMG" cat --length "$len" "${keep[@]}" 2>"$TMP/err") "$TMP/in"; then
		pass "$name: without role(s) $* cat still = the file"
	else fail "$name: without role(s) $*: cat differs ($(head -c 300 "$TMP/err"))"; fi
}

# ---- every metadata x level x layout, two ways of sizing, several chunks
chunks=(16K 64K 4K 128K)
i=0 m=0 t=0
# each level x layout with one of the four metadata versions (they take
# turns; the md-verified list below has each version with every level);
# quick: every other one (test_layout checks every layout's placement there)
quick && echo "# quick: every other level x layout case"
for meta in 0.90 1.0 1.1 1.2; do
	j=0 m=$((m + 1))
	for level in 4 5 6; do
		case $level in
		4) layouts=(parity-last) ;;
		5) layouts=("${R5_LAYOUTS[@]}") ;;
		6) layouts=("${R6_LAYOUTS[@]}") ;;
		esac
		for layout in "${layouts[@]}"; do
			i=$((i + 1)) j=$((j + 1))
			(((j + m) % 4)) && continue
			quick && (((j + m) % 8)) && continue
			# the shape varies with the cases made (t), not with i,
			# which the turns above leave at 3 modulo 4
			t=$((t + 1))
			n=$((level == 6 ? 4 + t % 4 : 3 + t % 4))
			k=$((level == 6 ? n - 2 : n - 1))
			chunk=${chunks[$(((t / 2) % 4))]}
			if (((t / 4) % 2)); then
				len=$((k * 1536 * 1024 + 123)); size=(--size 3M)
			else
				len=$((k * 1024 * 1024 + 4097)); size=()    # sized to fit the file
			fi
			head -c "$len" "$TMP/rand" >"$TMP/in"
			name="md$meta RAID$level $layout ${n}x $chunk ${size[*]:-auto-size}"
			if ! create_from --metadata "$meta" --level "$level" --devices "$n" \
				--layout "$layout" --chunk "$chunk" "${size[@]}"; then
				fail "$name: create: $(cat "$TMP/err")"; continue
			fi
			examine_ok "$name" "$meta" "$level" "$n" "$layout" "$chunk"
			if ((level == 6)); then
				readback "$name" "$n" "$len" $((i % n)) $(((i + 1 + i / 3) % n))
			else
				readback "$name" "$n" "$len" $((i % n))
			fi
		done
	done
done

echo "# $SECONDS s so far"
# ---- the configurations proven with the real md driver round trip too
vi=0
quick && echo "# quick: every sixth configuration md verified"
while read -r cname level n layout chunk meta size fill missing extra; do
	[ -n "$cname" ] || continue
	vi=$((vi + 1))
	quick && ((vi % 6)) && continue
	rm -rf "$A"
	"$RAIDIMG" create --metadata "$meta" --level "$level" --devices "$n" --layout "$layout" \
		--chunk "$chunk" --size "$size" $extra -o "$A" >/dev/null 2>"$TMP/err" ||
		{ fail "$cname: create without data: $(cat "$TMP/err")"; continue; }
	mapfile -t imgs < <(members "$n")
	bytes=$("$RAIDIMG" examine --json "${imgs[@]}" | jq .array.array_bytes)
	len=$bytes
	[ "$fill" = part ] && len=$((bytes * 3 / 5 + 12345))
	head -c "$len" /dev/urandom >"$TMP/in"
	if ! create_from --metadata "$meta" --level "$level" --devices "$n" --layout "$layout" \
		--chunk "$chunk" --size "$size" $extra; then
		fail "$cname: create: $(cat "$TMP/err")"; continue
	fi
	examine_ok "$cname (md-verified)" "$meta" "$level" "$n" "$layout" "$chunk"
	[ "$missing" = - ] && missing=$((n - 1))
	readback "$cname (md-verified)" "$n" "$len" ${missing//,/ }
done < <("$SRCDIR/scripts/md-verify-create" --list)

echo "# $SECONDS s so far"
# ---- an independent check: data placement and P/Q without raidimg's code
# ref_case NAME LEVEL LAYOUT_NUM N CHUNK DATA_OFFSET CREATE-ARGS...
ref_case() {
	local name=$1 level=$2 lnum=$3 n=$4 chunk=$5 doff=$6 stripes; shift 6
	head -c $((3 << 20)) "$TMP/rand" >"$TMP/in"
	create_from --level "$level" --devices "$n" --chunk "$chunk" "$@" ||
		{ fail "$name: create: $(cat "$TMP/err")"; return; }
	mapfile -t imgs < <(members "$n")
	stripes=$(( $("$RAIDIMG" examine --json "${imgs[@]}" | jq .array.member_bytes) / $(numfmt --from=iec "$chunk") ))
	if "$REF" "$level" "$lnum" "$(numfmt --from=iec "$chunk")" "$doff" "$stripes" "$TMP/in" "${imgs[@]}" \
		>"$TMP/ref" 2>&1; then
		pass "$name: parity_ref: $(cat "$TMP/ref")"
	else fail "$name: parity_ref: $(cat "$TMP/ref")"; fi
	# and the reference is not blind: one flipped byte of P in stripe 0
	# (left-symmetric: P of stripe 0 is on the last member) - inverted, not
	# overwritten with a constant it holds once in 256 random arrays
	if [ "$lnum" = 2 ]; then
		local b x
		b=$(od -An -tu1 -j $((doff + 100)) -N1 "${imgs[$((n - 1))]}")
		printf -v x '\\x%02x' $((~b & 255))
		printf "$x" | dd of="${imgs[$((n - 1))]}" bs=1 seek=$((doff + 100)) conv=notrunc status=none
		if "$REF" "$level" "$lnum" "$(numfmt --from=iec "$chunk")" "$doff" 1 "$TMP/in" "${imgs[@]}" \
			>"$TMP/ref" 2>&1; then
			fail "$name: parity_ref did not notice a damaged P"
		else pass "$name: parity_ref notices a damaged P ($(cat "$TMP/ref"))"; fi
	fi
}
ref_case "RAID5 ls 5x 16K md1.2" 5 2 5 16K $((1 << 20)) --layout left-symmetric --size 2M
ref_case "RAID5 ra 4x 64K md1.2 data-offset 64K" 5 1 4 64K 65536 --layout ra --size 2M --data-offset 64K
ref_case "RAID6 la 6x 4K md1.0" 6 0 6 4K 0 --layout left-asymmetric --size 1M --metadata 1.0
ref_case "RAID6 ra 5x 32K md0.90" 6 1 5 32K 0 --layout right-asymmetric --size 1200K --metadata 0.90
ref_case "RAID6 rs 7x 8K md1.1 data-offset 8K" 6 3 7 8K 8192 --layout rs --size 700K --metadata 1.1 --data-offset 8K
ref_case "RAID6 ls 4x 64K md1.2" 6 2 4 64K $((1 << 20)) --size 3M

echo "# $SECONDS s so far"
# ---- without --from: sparse images that read as zeros
m=0
for meta in 0.90 1.0 1.1 1.2; do
	m=$((m + 1))
	for level in 4 5 6; do
		quick && (((level + m) % 3)) && continue      # quick: one version per level
		n=$((level == 6 ? 5 : 4))
		rm -rf "$A"
		if ! "$RAIDIMG" create --metadata "$meta" --level "$level" --devices "$n" --chunk 64K \
			--size 16M -o "$A" >/dev/null 2>"$TMP/err"; then
			fail "md$meta RAID$level zeros: create: $(cat "$TMP/err")"; continue
		fi
		mapfile -t imgs < <(members "$n")
		kib=$(du -k "${imgs[@]}" | sort -n | tail -1 | cut -f1)
		sz=$(stat -c %s "${imgs[0]}")
		check "md$meta RAID$level zeros: images of $sz bytes use at most ${kib} KiB on disk (<= 64)" \
			test "$sz" = $((16 << 20)) -a "$kib" -le 64
		bytes=$("$RAIDIMG" examine --json "${imgs[@]}" | jq .array.array_bytes)
		check "md$meta RAID$level zeros: cat gives $bytes zero bytes" \
			cmp -s <("$RAIDIMG" cat "${imgs[@]}") <(head -c "$bytes" /dev/zero)
	done
done
# a small file in a large array: only its stripes are written
head -c $((1 << 20)) "$TMP/rand" >"$TMP/in"
create_from --level 6 --devices 6 --chunk 64K --size 32M
kib=$(du -k "$A"/member*.img | sort -n | tail -1 | cut -f1)
check "1 MiB file in 6x 32 MiB RAID6: each member uses $kib KiB (<= 1024)" test "$kib" -le 1024

echo "# $SECONDS s so far"
# ---- stdin, --force, --prefix
head -c 3000001 "$TMP/rand" >"$TMP/in"
rm -rf "$A"
"$RAIDIMG" create --level 5 --devices 4 --chunk 64K --size 2M --from - -o "$A" <"$TMP/in" >/dev/null 2>"$TMP/err"
check "create --from - (stdin) round trips" \
	cmp -s <("$RAIDIMG" cat --length 3000001 "$A"/member*.img 2>/dev/null) "$TMP/in"
head -c 1000000 "$TMP/rand" | tr '\0-\377' '\377\0-\376' >"$TMP/in"
"$RAIDIMG" create --level 5 --devices 4 --chunk 64K --size 2M --from "$TMP/in" --force -o "$A" >/dev/null 2>"$TMP/err"
check "create --force replaces an array (and its stale data)" \
	cmp -s <("$RAIDIMG" cat "$A"/member*.img 2>/dev/null) <(cat "$TMP/in"; head -c $((3 * 1048576 - 1000000)) /dev/zero)
"$RAIDIMG" create --level 6 --devices 4 --size 2M --prefix disk -o "$A" >/dev/null 2>&1
check "--prefix names the images" test -f "$A/disk0.img" -a -f "$A/disk3.img"

echo "# $SECONDS s so far"
# ---- bad input: exit 2, a clear message, nothing left behind
# bad NAME PATTERN CREATE-ARGS...: run create into $TMP/bad (which must stay as it was)
bad() {
	local d=$1 pat=$2 rc before after; shift 2
	before=$(cd "$TMP/bad" && ls -l --time-style=+%s.%N 2>/dev/null | sha256sum)
	"$RAIDIMG" "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?
	after=$(cd "$TMP/bad" && ls -l --time-style=+%s.%N 2>/dev/null | sha256sum)
	if [ $rc -ne 2 ]; then fail "$d: exit status $rc, want 2 ($(head -c 300 "$TMP/err"))"; return; fi
	if ! grep -Eq -- "$pat" "$TMP/err"; then fail "$d: message '$(cat "$TMP/err")' lacks /$pat/"; return; fi
	if [ "$before" != "$after" ]; then fail "$d: the output directory changed: $(ls -l "$TMP/bad")"; return; fi
	pass "$d: $(head -n1 "$TMP/err")"
}
mkdir -p "$TMP/bad"
B=$TMP/bad
head -c $((5 << 20)) "$TMP/rand" >"$TMP/big"
bad "missing --level" "give --level, --devices and -o DIR" create --devices 4 --size 2M -o "$B"
bad "missing --devices" "give --level, --devices" create --level 5 --size 2M -o "$B"
bad "missing -o" "-o DIR" create --level 5 --devices 4 --size 2M
bad "missing --size and --from" "give --size" create --level 5 --devices 4 -o "$B"
bad "bad --metadata" "metadata 2\.0: give 0\.90, 1\.0, 1\.1 or 1\.2" create --level 5 --devices 4 --size 2M --metadata 2.0 -o "$B"
bad "bad --level" "level 1: raidimg handles RAID levels 4, 5 and 6" create --level 1 --devices 4 --size 2M -o "$B"
bad "--devices 3 for RAID6" "RAID6 needs at least 4" create --level 6 --devices 3 --size 2M -o "$B"
bad "--devices 1 for RAID5" "devices 1: give a number from 2" create --level 5 --devices 1 --size 2M -o "$B"
bad "0.90 with 28 devices" "0\.90 metadata holds at most 27" create --level 5 --devices 28 --metadata 0.90 --size 2M -o "$B"
bad "RAID6 layout for RAID5" "left-symmetric-6: not a RAID5 layout" create --level 5 --devices 4 --layout left-symmetric-6 --size 2M -o "$B"
bad "RAID5 layout for RAID4" "layout ls: not a RAID4 layout" create --level 4 --devices 4 --layout ls --size 2M -o "$B"
bad "chunk not a power of two" "chunk 3K: .*power of two" create --level 5 --devices 4 --chunk 3K --size 2M -o "$B"
bad "chunk below 4K" "chunk 2K: .*power of two" create --level 5 --devices 4 --chunk 2K --size 2M -o "$B"
bad "--size not in sectors" "size 1000001: .*512-byte sectors" create --level 5 --devices 4 --size 1000001 -o "$B"
bad "--size too small for 1.2" "size 1\.0 MiB leaves no room for a chunk" create --level 5 --devices 4 --size 1M -o "$B"
bad "--size too small for 0.90" "size 64\.0 KiB leaves no room" create --level 5 --devices 4 --size 64K --metadata 0.90 -o "$B"
bad "--data-offset inside the 1.2 superblock" "data-offset 4096: md 1\.2 data must start past its superblock \(at 8192" \
	create --level 5 --devices 4 --size 2M --data-offset 4K -o "$B"
bad "--data-offset 0 with 1.1" "md 1\.1 data must start past its superblock" \
	create --level 5 --devices 4 --size 2M --data-offset 0 --metadata 1.1 -o "$B"
bad "--data-offset with 0.90" "data-offset: md 0\.90 keeps data at the start" \
	create --level 5 --devices 4 --size 2M --data-offset 8K --metadata 0.90 -o "$B"
bad "--data-offset not 4K aligned" "data-offset 6K: give a multiple of 4K" create --level 5 --devices 4 --size 2M --data-offset 6K -o "$B"
bad "--from larger than the array" "big: larger \(5242880 bytes\) than the array \(3145728 bytes\)" \
	create --level 5 --devices 4 --chunk 64K --size 2M --from "$TMP/big" -o "$B"
bad "--from (stdin) larger than the array" "-: larger than the array \(3145728 bytes\)" \
	create --level 5 --devices 4 --chunk 64K --size 2M --from - -o "$B" < <(cat "$TMP/big")
bad "stdin without --size" "not a regular file.*give --size" create --level 5 --devices 4 --from - -o "$B" </dev/null
bad "--from missing file" "nope: cannot open: No such file" create --level 5 --devices 4 --from "$TMP/nope" -o "$B"
bad "--from a directory" "is a directory" create --level 5 --devices 4 --size 2M --from "$TMP" -o "$B"
bad "unknown option" "Usage|unrecognized" create --level 5 --devices 4 --size 2M --frobnicate -o "$B"
bad "stray argument" "unexpected argument 'extra'" create --level 5 --devices 4 --size 2M -o "$B" extra
bad "--prefix with a slash" "prefix 'a/b'" create --level 5 --devices 4 --size 2M --prefix a/b -o "$B"
bad "-o onto a file" "not a directory|cannot create directory" create --level 5 --devices 4 --size 2M -o "$TMP/big"
echo precious >"$B/member2.img"
bad "existing member without --force" "member2\.img: exists; refusing to overwrite it \(--force" \
	create --level 5 --devices 4 --size 2M -o "$B"
check "the existing member is untouched" test "$(cat "$B/member2.img")" = precious
cp "$TMP/in" "$B/member0.img"
bad "--from is one of the members" "member0\.img: is the --from file" \
	create --level 5 --devices 4 --size 2M --force --from "$B/member0.img" -o "$B"

echo "# $SECONDS s in all"
finish
