#!/bin/bash
# raidimg detect on arrays whose md metadata is gone, made here from real
# content (a lean subset of tests/detect/gen-corpus: small file systems and
# disks, a few seconds each): the best candidate's array_args, given to
# raidimg cat with the same images, read the array exactly (its sha256), the
# verdict is confident where the evidence decides and ambiguous where it
# cannot (random content: no rotation), foreign images are named as
# excluded; text and JSON agree; bad input (one image, images of different
# sizes, all-zero images, a missing or unreadable file, a directory, a FIFO,
# a tiny file, bad hints) gets a clear message naming the file, exit 2,
# never a hang; detect never writes (members' sha256 unchanged, opened
# read-only under strace).
. "$(dirname "$0")/lib.sh"

for t in mkfs.ext4 mkfs.vfat mcopy sfdisk python3 jq; do
	command -v $t >/dev/null || { echo "detect.sh: $t missing (scripts/deps)"; exit 1; }
done
T="timeout 120"
EMPTY_SHA=$(sha </dev/null)
W=$TMP/detect
P=$W/payloads
mkdir -p "$P"
export MTOOLS_SKIP_CHECK=1 E2FSPROGS_FAKE_TIME=1700000000

# ---- payloads: real content ----
mkdir -p "$W/text"
find /usr/include -maxdepth 2 -name '*.h' -type f -size -200k -size +1k | LC_ALL=C sort | head -400 |
	tar -cf - -T - 2>/dev/null | tar -xf - -C "$W/text" --transform 's,^usr/include/,,;s,/,_,g'
du -sm "$W/text" | awk '{ exit !($1 >= 2) }' || { echo "detect.sh: too little content in /usr/include"; exit 1; }
truncate -s 12M "$P/ext4.img"
mkfs.ext4 -q -F -b 1024 -U 0c0ffee0-0000-4000-8000-000000000001 -d "$W/text" "$P/ext4.img"
truncate -s 12M "$P/fat.img"
mkfs.vfat -F 16 -i 1234ABCD -n DETECT "$P/fat.img" >/dev/null
mcopy -s -i "$P/fat.img" "$W/text" ::/
# a GPT disk with an ext4 and a FAT partition
truncate -s 14M "$P/gpt.img"
printf 'label: gpt\nfirst-lba: 2048\nstart=2048, size=12288, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4\nstart=14336, size=12288, type=EBD0A0A2-B9E5-4433-87C0-68B6B72699C7\n' |
	sfdisk -q "$P/gpt.img" >/dev/null
dd if="$P/ext4.img" of="$P/gpt.img" bs=512 seek=2048 count=12288 conv=notrunc status=none
dd if="$P/fat.img" of="$P/gpt.img" bs=512 seek=14336 count=12288 conv=notrunc status=none
python3 -c "import random,sys; sys.stdout.buffer.write(random.Random(7).randbytes(8 << 20))" >"$P/random.img"

# mkcase NAME PAYLOAD LEVEL LAYOUT N CHUNK REMOVAL MISSING FOREIGN
#   REMOVAL: cut (the data area alone), zero (superblock zeroed in place, the
#   1 MiB data offset kept), prefix (the data area behind a foreign 64 KiB MBR)
#   MISSING: roles deleted, comma-separated ("-" none); FOREIGN: 1 adds an
#   image of other content.  Images are shuffled into d0.img ...; the truth
#   goes to NAME.args (raidimg cat's options) and NAME.sha (the array's sha256)
mkcase() {
	local name=$1 payload=$2 level=$3 layout=$4 n=$5 chunk=$6 removal=$7 missing=$8 foreign=$9
	local d=$W/$name doff=1048576 D r
	mkdir -p "$d/tmp"
	"$RAIDIMG" create --level "$level" --layout "$layout" --chunk "$chunk" --devices "$n" \
		--data-offset 1M --from "$P/$payload.img" -o "$d/tmp" >/dev/null || return 1
	case $removal in cut) D=0 ;; zero) D=$doff ;; prefix) D=65536 ;; esac
	for r in $(seq 0 $((n - 1))); do
		local m=$d/tmp/member$r.img sz
		sz=$(stat -c %s "$m")
		case $removal in
		cut) dd if="$m" of="$d/tmp/r$r" bs=64K skip=$((doff >> 16)) status=none ;;
		zero) dd if=/dev/zero of="$m" bs=4096 seek=1 count=1 conv=notrunc status=none; mv "$m" "$d/tmp/r$r" ;;
		prefix)
			python3 -c "import random,sys; b=bytearray(65536); b[440:444]=random.Random($r).randbytes(4); b[446+4]=0xfd; b[510:512]=b'\x55\xaa'; sys.stdout.buffer.write(b)" >"$d/tmp/r$r"
			dd if="$m" bs=64K skip=$((doff >> 16)) status=none >>"$d/tmp/r$r" ;;
		esac
		rm -f "$m"
	done
	[ "$missing" = - ] || for r in ${missing//,/ }; do rm -f "$d/tmp/r$r"; done
	if [ "$foreign" = 1 ]; then
		head -c "$(stat -c %s "$d/tmp/r$(ls "$d/tmp" | head -n1 | tr -dc 0-9)")" "$P/ext4.img" >"$d/tmp/rF"
	fi
	# shuffle: a fixed permutation (the names sorted by a hash of the name)
	local items=() i=0 idx order=()
	mapfile -t items < <(ls "$d/tmp" | while read -r x; do echo "$(echo "$name$x" | md5sum | cut -c1-8) $x"; done |
		sort | cut -d' ' -f2)
	for x in "${items[@]}"; do mv "$d/tmp/$x" "$d/d$i.img"; i=$((i + 1)); done
	item_index() { local j; for j in "${!items[@]}"; do [ "${items[$j]}" = "$1" ] && echo "$j"; done; }
	# the truth: --order counts the member images only (cat wants every
	# image it is given named in --order), the foreign one left out
	local members=()
	for i in "${!items[@]}"; do [ "${items[$i]}" = rF ] || members+=("$d/d$i.img"); done
	for r in $(seq 0 $((n - 1))); do
		idx=missing
		for i in "${!members[@]}"; do [ "${members[$i]}" = "$d/d$(item_index "r$r").img" ] && idx=$i; done
		order+=("$idx")
	done
	rmdir "$d/tmp"
	local args=(--level "$level")
	[ "$level" = 4 ] || args+=(--layout "$layout")
	args+=(--chunk "$chunk" --order "$(IFS=,; echo "${order[*]}")" --data-offset "$D")
	echo "${args[*]}" >"$W/$name.args"
	"$RAIDIMG" cat "${args[@]}" "${members[@]}" 2>/dev/null | sha >"$W/$name.sha"
	[ "$(cat "$W/$name.sha")" != "$EMPTY_SHA" ] || return 1
	# the truth reads the payload back (the case is what it claims to be)
	"$RAIDIMG" cat "${args[@]}" --length "$(stat -c %s "$P/$payload.img")" "${members[@]}" 2>/dev/null |
		cmp -s - "$P/$payload.img"
}

# run_case NAME WANT: detect --json; WANT: confident (certain or likely, exit
# 0, the best candidate exact), exact (the best candidate exact, the exit
# status the verdict's) or ambiguous (exit 1; the data offset right)
run_case() {
	local name=$1 want=$2 d=$W/$1 rc verdict got args paths
	local imgs=("$d"/d*.img)
	$T "$RAIDIMG" detect --json "${imgs[@]}" >"$W/$name.json" 2>"$W/$name.err"; rc=$?
	verdict=$(jq -r .verdict "$W/$name.json" 2>/dev/null)
	mapfile -t args < <(jq -r '.candidates[0].array_args[]?' "$W/$name.json" 2>/dev/null)
	mapfile -t paths < <(jq -r '.candidates[0].paths[]?' "$W/$name.json" 2>/dev/null)
	got=-
	[ ${#args[@]} -gt 0 ] && got=$("$RAIDIMG" cat "${args[@]}" "${paths[@]}" 2>/dev/null | sha)
	local want_rc=0
	[ "$verdict" = ambiguous ] && want_rc=1
	case $want in
	exact)
		check "$name: verdict $verdict (exit $rc), best candidate ${args[*]} reads the array exactly" \
			test $rc = $want_rc -a "$got" = "$(cat "$W/$name.sha")" -a "$got" != "$EMPTY_SHA" ;;
	confident)
		check "$name: exit 0, verdict $verdict, best candidate ${args[*]} reads the array exactly" \
			test $rc = 0 -a "$got" = "$(cat "$W/$name.sha")" -a "$got" != "$EMPTY_SHA" -a \( "$verdict" = certain -o "$verdict" = likely \) ;;
	ambiguous)
		local want_off=${3:-} jo
		jo=$(jq -r '.candidates[0].data_offset_bytes' "$W/$name.json" 2>/dev/null)
		check "$name: exit 1, verdict ambiguous ($(jq -r .reason "$W/$name.json" | head -c 150)); data offset $jo" \
			test $rc = 1 -a "$verdict" = ambiguous -a "$jo" = "$want_off" ;;
	esac
	# the JSON's shape: the issue's keys, bytes read bounded
	check "$name: JSON has verdict, reason, candidates (level, layout, chunk_bytes, data_offset_bytes, order, array_args, paths, score, evidence), excluded, images, read_bytes" \
		jq -e '(.verdict|type) == "string" and (.reason|type) == "string" and (.excluded|type) == "array"
			and (.read_bytes|type) == "number" and (.images|length) > 0
			and all(.candidates[]; (.level|type) == "number" and (.layout|type) == "string"
				and (.chunk_bytes|type) == "number" and (.data_offset_bytes|type) == "number"
				and (.order|type) == "array" and (.array_args|type) == "array"
				and (.score|type) == "number" and (.evidence|type) == "array" and (.paths|type) == "array")' \
		"$W/$name.json" >/dev/null
}

# (quick, the sanitizer pass: the code paths of four cases are enough)
t0=$(date +%s)
mkcase r5-ext4-cut-m1 ext4 5 left-symmetric 4 64K cut 2 0 || fail "making r5-ext4-cut-m1"
mkcase r6-ext4-prefix-m2 ext4 6 right-asymmetric 6 16K prefix 0,4 0 || fail "making r6-ext4-prefix-m2"
mkcase r5-fat-zero-foreign fat 5 left-asymmetric 5 32K zero - 1 || fail "making r5-fat-zero-foreign"
quick || mkcase r6-gpt-cut-m1 gpt 6 ddf-N-continue 5 32K cut 1 0 || fail "making r6-gpt-cut-m1"
quick || mkcase r4-fat-prefix fat 4 parity-last 4 8K prefix - 0 || fail "making r4-fat-prefix"
mkcase r5-random-zero random 5 left-symmetric 4 64K zero - 0 || fail "making r5-random-zero"
quick || mkcase r6-random-cut random 6 left-symmetric-6 5 32K cut - 0 || fail "making r6-random-cut"
echo "# cases made in $(($(date +%s) - t0)) s"

# a member's state before anything ran: detect must not change it
for f in "$W"/r5-ext4-cut-m1/d*.img; do sha "$f"; done >"$W/before"

t0=$(date +%s)
run_case r5-ext4-cut-m1 confident
run_case r6-ext4-prefix-m2 exact        # RAID6 missing two: no parity relation at all
run_case r5-fat-zero-foreign confident
quick || run_case r6-gpt-cut-m1 confident
quick || run_case r4-fat-prefix confident
run_case r5-random-zero ambiguous 1048576
quick || run_case r6-random-cut exact         # random content, but RAID6's Q names the order
echo "# detections in $(($(date +%s) - t0)) s"

# the foreign image is excluded, named, with its reason
fi_json=$W/r5-fat-zero-foreign.json
fi_name=$(jq -r '.excluded[0].image // ""' "$fi_json")
check "a foreign image is excluded and named (${fi_name##*/}: $(jq -r '.excluded[0].why // ""' "$fi_json" | head -c 100))" \
	test -n "$fi_name" -a "$(jq '.excluded | length' "$fi_json")" = 1 -a \
	"$(jq -r '[.candidates[0].order[] | select(. != "missing")] | length' "$fi_json")" = 5
# random content: the member set is found (every image placed), not the rotation
check "random RAID5: every image is in the best candidate (the member set is known)" \
	test "$(jq '[.candidates[0].order[] | select(. != "missing")] | length' "$W/r5-random-zero.json")" = 4
check "random RAID5: the reason says why it cannot decide" \
	grep -Eqi 'random|encrypted|no (evidence|content)|cannot' <(jq -r .reason "$W/r5-random-zero.json")

# ---- text output: the same answer, the exact options, the verdict's reason ----
d=$W/r5-ext4-cut-m1
$T "$RAIDIMG" detect "$d"/d*.img >"$W/text.out" 2>"$W/text.err"; rc=$?
args=$(jq -r '.candidates[0].array_args | join(" ")' "$W/r5-ext4-cut-m1.json")
check "text: exit $rc, the verdict line with its reason" grep -Eq '^verdict: (certain|likely): .+' "$W/text.out"
check "text: candidate 1 with its score and the exact options ($args)" \
	grep -q "^  options: $args\$" "$W/text.out"
check "text: candidate 1 has a score" grep -Eq '^candidate 1: score [0-9.-]+: RAID5 left-symmetric, 4 members' "$W/text.out"
check "text: the roles name the images and the missing one" \
	bash -c "grep -q '^  role  *[0-9]*: image [0-9]*, $d/d0.img\$' '$W/text.out' && grep -q '^  role  2: missing\$' '$W/text.out'"
check "text: evidence lines" grep -q '^  evidence: ' "$W/text.out"
check "text: bytes read" grep -Eq '^read: [0-9]+ bytes .* per image at most, [0-9]+ in all' "$W/text.out"
# hints: the right ones keep the answer, --max-read bounds the reads
$T "$RAIDIMG" detect --json --level 5 --chunk 64K --devices 4 --max-read 2M "$d"/d*.img >"$W/hint.json" 2>"$W/hint.err"
check "hints --level 5 --chunk 64K --devices 4: the same best candidate" \
	test "$(jq -c '.candidates[0].array_args' "$W/hint.json")" = "$(jq -c '.candidates[0].array_args' "$W/r5-ext4-cut-m1.json")"
check "--max-read 2M: at most 2 MiB read per image" \
	jq -e 'all(.images[]; .read_bytes <= 2097152) and .read_bytes > 0' "$W/hint.json" >/dev/null
$T "$RAIDIMG" detect --json --data-offset 0 "$d"/d*.img >"$W/hint2.json" 2>/dev/null
check "hint --data-offset 0: candidates at offset 0 only" \
	jq -e '(.candidates | length) > 0 and all(.candidates[]; .data_offset_bytes == 0)' "$W/hint2.json" >/dev/null

# ---- members as evidence arrives: E01, zstd seekable, split raw, a ddrescue image with its mapfile ----
E=$W/ev
mkdir -p "$E"
ev=("$d"/d*.img)     # r5-ext4-cut-m1: three images
if command -v ewfacquire >/dev/null; then
	ewfacquire -q -u -t "$E/e0" -f encase6 -c fast -d sha1 "${ev[0]}" >/dev/null 2>&1
	evs=("$E/e0.E01")
else
	echo "note: ewfacquire (ewf-tools) missing: the E01 member is a raw one"
	evs=("${ev[0]}")
fi
"$RAIDIMG" compress -o "$E/e1.zst" "${ev[1]}" >/dev/null 2>&1
split --numeric-suffixes=1 -a 3 -b 1000000 "${ev[2]}" "$E/e2.img."
evs+=("$E/e1.zst" "$E/e2.img.001")
$T "$RAIDIMG" detect --json "${evs[@]}" >"$W/ev.json" 2>"$W/ev.err"
check "E01, zstd and split members: the same best candidate as the raw images" \
	test "$(jq -c '.candidates[0].array_args' "$W/ev.json" 2>/dev/null)" = \
	"$(jq -c '.candidates[0].array_args' "$W/r5-ext4-cut-m1.json")"
# a ddrescue image: a 64 KiB block not rescued (zeros in the image), its mapfile beside it
cp "${ev[0]}" "$E/dd0.img"
dd if=/dev/zero of="$E/dd0.img" bs=64K seek=5 count=1 conv=notrunc status=none
sz0=$(stat -c %s "$E/dd0.img")
printf '# Mapfile. Created by GNU ddrescue version 1.27\n0x%X     +               1\n0x00000000  0x00050000  +\n0x00050000  0x00010000  -\n0x00060000  0x%08X  +\n' \
	"$sz0" $((sz0 - 0x60000)) >"$E/dd0.map"
$T "$RAIDIMG" detect --json "$E/dd0.img" "${ev[@]:1}" >"$W/dd.json" 2>"$W/dd.err"
check "a ddrescue image: its mapfile taken and said ($(head -c 150 "$W/dd.err"))" \
	grep -q "dd0.img: ddrescue mapfile $E/dd0.map: 1 range(s), 64.0 KiB not rescued: read as the image holds them (counted as untrusted)" "$W/dd.err"
check "a ddrescue image: the bytes read that are not rescued counted (untrusted_bytes 65536)" \
	test "$(jq '.images[0].untrusted_bytes' "$W/dd.json" 2>/dev/null)" = 65536
check "a ddrescue image: the same best candidate" \
	test "$(jq -c '.candidates[0].array_args' "$W/dd.json" 2>/dev/null)" = \
	"$(jq -c '.candidates[0].array_args' "$W/r5-ext4-cut-m1.json")"
$T "$RAIDIMG" detect --json --no-maps "$E/dd0.img" "${ev[@]:1}" >"$W/dd2.json" 2>"$W/dd2.err"
check "--no-maps: the mapfile is not taken" \
	bash -c "! grep -q mapfile '$W/dd2.err' && [ \"\$(jq '.images[0].untrusted_bytes' '$W/dd2.json')\" = 0 ]"
expect_fail "--map naming an image not given" "--map $E/other.img=$E/dd0.map: $E/other.img is not one of the images" \
	"$RAIDIMG" detect --map "$E/other.img=$E/dd0.map" "$E/dd0.img" "${ev[@]:1}"
echo '0x0 garbage' >"$E/bad.map"
expect_fail "a mapfile that does not parse" "bad.map" "$RAIDIMG" detect --map "$E/dd0.img=$E/bad.map" "$E/dd0.img" "${ev[@]:1}"

# ---- detect never writes ----
for f in "$d"/d*.img; do sha "$f"; done >"$W/after"
check "members unchanged after detect (sha256)" cmp -s "$W/before" "$W/after"
if command -v strace >/dev/null && strace -f -qq -e trace=openat -o /dev/null true 2>/dev/null; then
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		$T strace -f -qq -e trace=%file -o "$W/strace" "$RAIDIMG" detect "$d"/d*.img >/dev/null 2>&1
	check "under strace: every member opened O_RDONLY" \
		test "$(grep -F "$d/d" "$W/strace" | grep -c 'O_RDONLY')" -ge 3
	check "under strace: no member opened for writing, truncated, renamed, re-timed" \
		test -z "$(grep -F "$d/d" "$W/strace" | grep -E 'O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|truncate|rename|unlink|utime|chmod')"
else
	echo "note: strace cannot trace here: only the members' sha256 is checked"
fi

# ---- bad input: a clear message naming the file, exit 2, no hang ----
B=$W/bad
mkdir -p "$B"
truncate -s 4M "$B/z0.img" "$B/z1.img" "$B/z2.img"
expect_fail "one image" 'one image given.*2 at least' "$RAIDIMG" detect "$d/d0.img"
expect_fail "no image" 'give the member images' "$RAIDIMG" detect
expect_fail "a missing file" "$B/nothere.img: cannot open: No such file" "$RAIDIMG" detect "$d/d0.img" "$B/nothere.img"
expect_fail "a directory" "$B" "$RAIDIMG" detect "$d/d0.img" "$B"
mkfifo "$B/fifo"
expect_fail "a FIFO (no hang)" "$B/fifo" "$RAIDIMG" detect "$d/d0.img" "$B/fifo"
head -c 1000 /dev/zero >"$B/tiny.img"
expect_fail "a tiny file" "$B/tiny.img: 1000 bytes: too small" "$RAIDIMG" detect "$d/d0.img" "$B/tiny.img"
mkdir -p "$B/many"
for i in $(seq 0 32); do truncate -s 1M "$B/many/m$i.img"; done
expect_fail "33 images" '33 images given: detect takes 32 at most' "$RAIDIMG" detect "$B"/many/m*.img
expect_fail "the same image twice" "$d/d0.img: given twice" "$RAIDIMG" detect "$d/d0.img" "$d/d0.img"
expect_fail "--level 7" '--level 7: raidimg handles RAID levels 4, 5 and 6' "$RAIDIMG" detect --level 7 "$B"/z*.img
expect_fail "--chunk 3000" '--chunk 3000: .*power of two' "$RAIDIMG" detect --chunk 3000 "$B"/z*.img
expect_fail "--data-offset 100" '--data-offset 100: .*multiple of 512' "$RAIDIMG" detect --data-offset 100 "$B"/z*.img
expect_fail "--max-read 10K" '--max-read 10K: .*1M or more' "$RAIDIMG" detect --max-read 10K "$B"/z*.img
expect_fail "--devices 2" '--devices 2: .*from 3' "$RAIDIMG" detect --devices 2 "$B"/z*.img
expect_fail "an unknown option" "unrecognized option '--bogus'" "$RAIDIMG" detect --bogus "$B"/z*.img
# an image whose reads fail: the file and the offset named
if [ -x "$RAIDIMG_FAULTY" ]; then
	RAIDIMG_FAULTS="$d/d1.img:eio@1M+4K" expect_fail "a read error" "$d/d1.img: read of [0-9]+ bytes at offset [0-9]+ failed: Input/output error" \
		"$RAIDIMG_FAULTY" detect "$d"/d*.img
fi
# all-zero images: an answer (ambiguous, exit 1), saying there is nothing to go on
$T "$RAIDIMG" detect --json "$B"/z*.img >"$W/zero.json" 2>"$W/zero.err"; rc=$?
check "all-zero images: exit 1, ambiguous ($(jq -r .reason "$W/zero.json" 2>/dev/null | head -c 120))" \
	test $rc = 1 -a "$(jq -r .verdict "$W/zero.json" 2>/dev/null)" = ambiguous
# images of different sizes: a warning naming both, an answer all the same
cp "$d/d0.img" "$B/short.img"
truncate -s -64K "$B/short.img"
imgs=("$d"/d*.img)
$T "$RAIDIMG" detect "$B/short.img" "${imgs[@]:1}" >"$W/sizes.out" 2>"$W/sizes.err"; rc=$?
check "different sizes: a warning naming the smaller and the larger image, exit $rc (an answer)" \
	bash -c "grep -q 'warning: the images differ in size ($B/short.img: [0-9]* bytes, .*d[0-9].img: [0-9]* bytes)' '$W/sizes.err' && [ $rc -le 1 ]"

# ---- --help is true to the options ----
"$RAIDIMG" detect --help >"$W/help"
for o in --json --level --devices --chunk --data-offset --max-read; do
	check "detect --help names $o" grep -q -- "$o" "$W/help"
done
check "raidimg --help lists detect" bash -c "'$RAIDIMG' --help | grep -q '^  detect '"

finish
