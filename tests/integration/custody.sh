#!/bin/bash
# Chain of custody: --hash, --record, replay, --provenance.
#  - --hash: the sha256 printed for every image equals sha256sum of the file,
#    the array's equals the manifest's (examine, cat, export; text and JSON);
#  - --record: the JSON record holds the geometry, every image with its role
#    and sha256, the range, the times and the result; `replay` of it gives
#    the same sha256 (and -o the same bytes, in the recorded format), for
#    metadata and manual geometries, raw and .zst members; replay refuses
#    when an image changed or is gone, and reports different array bytes;
#  - --provenance: on degraded fixtures exactly the chunks the missing roles
#    hold (computed from md's left-symmetric formulas, independently of
#    layout.c) are "rebuilt", every other chunk comes from the member the
#    formula names, the map covers the array once; unreadable ranges are
#    marked when two members of a RAID5 fail in the same place.
. "$(dirname "$0")/lib.sh"

c=r6-ls-6x6M-64K-md12
dir=$(fixture_dir "$c")
mapfile -t imgs < <(members_shuffled "$c")
want=$(mf "$c" .expected_sha256)
size=$(mf "$c" .array_bytes)

# ---- --hash ----
"$RAIDIMG" examine --hash "${imgs[@]}" >"$TMP/ex.txt"
for f in "${imgs[@]}"; do
	check "examine --hash: $(basename "$f")" grep -q "^sha256 $(sha "$f")  role [0-9]  $f\$" "$TMP/ex.txt"
done
check "examine --hash: the array" grep -q "^sha256 $want  array  bytes 0-$((size - 1))\$" "$TMP/ex.txt"
"$RAIDIMG" examine --json --hash "${imgs[@]}" >"$TMP/ex.json"
check "examine --json --hash: array" test "$(jq -r .sha256.array.sha256 "$TMP/ex.json")" = "$want"
check "examine --json --hash: members" test "$(jq -r '.sha256.members[] | .sha256 + "  " + .path' "$TMP/ex.json" | sort)" = \
	"$(sha256sum "${imgs[@]}" | sort)"  # (its format: "HASH  PATH")
# an array that cannot be assembled: the image files alone
"$RAIDIMG" examine --hash "${imgs[0]}" >/dev/null 2>"$TMP/err"
check "examine --hash, not assemblable: the image is hashed" grep -q "^sha256 $(sha "${imgs[0]}")  ${imgs[0]}\$" "$TMP/err"
# cat: hashes on stderr when stdout carries the data, else on stdout
got=$("$RAIDIMG" cat --hash "${imgs[@]}" 2>"$TMP/err" | sha)
check "cat --hash: the data is unchanged" test "$got" = "$want"
check "cat --hash to stdout: hashes on stderr" grep -q "^sha256 $want  array" "$TMP/err"
"$RAIDIMG" cat --hash -o "$TMP/cat.img" "${imgs[@]}" >"$TMP/out" 2>/dev/null
check "cat --hash -o: hashes on stdout" grep -q "^sha256 $want  array" "$TMP/out"
"$RAIDIMG" cat --hash --offset 1000 --length 5000 "${imgs[@]}" 2>"$TMP/err" >"$TMP/slice"
check "cat --hash of a slice hashes the slice" grep -q "^sha256 $(sha "$TMP/slice")  array  bytes 1000-5999\$" "$TMP/err"
"$RAIDIMG" export --zstd --hash -o "$TMP/e.zst" "${imgs[@]}" >"$TMP/out" 2>/dev/null
check "export --zstd --hash: the output file" grep -q "^sha256 $(sha "$TMP/e.zst")  output  $TMP/e.zst\$" "$TMP/out"
check "export --zstd --hash: the array" grep -q "^sha256 $want  array" "$TMP/out"

# ---- --record and replay ----
# members in a directory of our own, so that one can be changed
mkdir "$TMP/ev"
cp "$dir"/member*.img "$TMP/ev/"
chmod u+w "$TMP"/ev/*
mapfile -t ev < <(ls "$TMP"/ev/member*.img)
"$RAIDIMG" cat --record "$TMP/rec.json" -o "$TMP/rec.img" "${ev[@]}" >/dev/null 2>&1
R=$TMP/rec.json
check "record: tool and version" test "$(jq -r '.tool + " " + .version' "$R")" = "raidimg $("$RAIDIMG" --version | cut -d' ' -f2)"
check "record: command and result" test "$(jq -r '.command + " " + (.result.exit_status|tostring) + " " + (.result.ok|tostring)' "$R")" = "cat 0 true"
check "record: times" test "$(jq -r '(.started | test("^20[0-9-]+T[0-9:]+Z$")) and (.finished >= .started)' "$R")" = true
check "record: geometry" test "$(jq -r '.array | "\(.level) \(.layout_name) \(.raid_disks) \(.chunk_bytes) \(.array_bytes) \(.metadata)"' "$R")" = \
	"6 left-symmetric 6 65536 $size 1.2"
check "record: the array's sha256 and range" test "$(jq -r '"\(.array_sha256) \(.range.offset) \(.range.length)"' "$R")" = "$want 0 $size"
for f in "${ev[@]}"; do
	role=$(jq -r --arg p "$f" '.members[] | select(.path == $p) | .role' "$R")
	check "record: $(basename "$f") has role $role and its sha256" \
		test "$(jq -r --arg p "$f" '.members[] | select(.path == $p) | .sha256' "$R")" = "$(sha "$f")"
	check "record: $(basename "$f") role matches its superblock" test "$role" = "$(mf "$c" ".members[] | select(.image == \"$(basename "$f")\") | .role")"
done
check "record: assembly paths" test "$(jq -r '.assembly.paths | length' "$R")" -eq 6
"$RAIDIMG" replay "$R" 2>"$TMP/err"
rc=$?
check "replay: exit 0 ($(tail -1 "$TMP/err"))" test $rc -eq 0
check "replay: says the bytes match" grep -q "match the record (sha256 $want)" "$TMP/err"
"$RAIDIMG" replay -o "$TMP/replayed.img" "$R" 2>/dev/null
check "replay -o: the same bytes" cmp -s "$TMP/replayed.img" "$TMP/rec.img"
# an image changed: refused, naming it
printf 'X' | dd of="${ev[2]}" bs=1 seek=3000000 conv=notrunc status=none
"$RAIDIMG" replay -o "$TMP/nope.img" "$R" 2>"$TMP/err"
rc=$?
check "replay refuses a changed image (exit $rc)" test "$rc" -eq 2
check "  naming it ($(head -1 "$TMP/err"))" grep -q "${ev[2]}: sha256 is now .* the image changed" "$TMP/err"
check "  and writes nothing" test ! -e "$TMP/nope.img"
cp "$dir/$(basename "${ev[2]}")" "${ev[2]}"
check "replay: the restored image is accepted" "$RAIDIMG" replay "$R"
# an image gone
mv "${ev[4]}" "$TMP/gone.img"
"$RAIDIMG" replay "$R" 2>"$TMP/err"
rc=$?
check "replay refuses when an image is gone ($(head -1 "$TMP/err"))" test $rc -eq 2 -a -s "$TMP/err"
mv "$TMP/gone.img" "${ev[4]}"
# the record's array hash differs (as if the bytes had been different)
jq '.array_sha256 = "0000000000000000000000000000000000000000000000000000000000000000"' "$R" >"$TMP/other.json"
"$RAIDIMG" replay "$TMP/other.json" 2>"$TMP/err"
check "replay reports different array bytes with exit 1" test $? -eq 1
# not a record
echo '{"hello":1}' >"$TMP/junk.json"
"$RAIDIMG" replay "$TMP/junk.json" 2>"$TMP/err"
check "replay of a non-record: error naming it ($(cat "$TMP/err"))" grep -q "junk.json: not a raidimg record" "$TMP/err"

# manual geometry, .zst members, a slice, export --zstd: replay repeats it
# (the fixture's md 1.2 data starts at 1 MiB: the same array, described by hand)
c2=r5-ls-4x8M-64K-md12
d2=$(fixture_dir "$c2")
for i in 0 1 2 3; do "$RAIDIMG" compress --frame-size 128K -o "$TMP/ev/m$i.zst" "$d2/member$i.img" 2>/dev/null; done
off=$(mf "$c2" '.members[0].data_offset_bytes')
"$RAIDIMG" export --zstd --record "$TMP/man.json" --offset 4096 --length 3000000 -o "$TMP/man.zst" \
	--level 5 --chunk 64K --data-offset "$off" --member-size "$(( $(mf "$c2" .array_bytes) / 3 ))" \
	--order 2,0,1,3 "$TMP/ev/m1.zst" "$TMP/ev/m2.zst" "$TMP/ev/m0.zst" "$TMP/ev/m3.zst" >/dev/null 2>"$TMP/err"
check "manual export with --record ($(cat "$TMP/err"))" test -s "$TMP/man.json"
check "record: manual assembly" test "$(jq -c '.assembly | [.manual, .level, .chunk_bytes, .order]' "$TMP/man.json")" = '[true,5,65536,[2,0,1,3]]'
check "record: zstd members" test "$(jq -r '[.members[].kind] | unique | join(",")' "$TMP/man.json")" = "zstd"
check "manual slice equals the metadata assembly's" cmp -s <(zstd -q -d -c "$TMP/man.zst") \
	<("$RAIDIMG" cat --offset 4096 --length 3000000 "$d2"/member*.img)
"$RAIDIMG" replay -o "$TMP/man2.zst" "$TMP/man.json" 2>"$TMP/err"
rc=$?
check "replay of the manual zstd export ($(tail -1 "$TMP/err"))" test $rc -eq 0
check "replay -o writes the same zstd file" cmp -s "$TMP/man.zst" "$TMP/man2.zst"
# examine --record: replay computes and compares the whole array
"$RAIDIMG" examine --record "$TMP/ex.json" "$d2"/member*.img >/dev/null
check "examine --record: replay" "$RAIDIMG" replay "$TMP/ex.json"

# ---- provenance maps ----
# md left-symmetric: RAID5 P = n-1-(s%n), data d on (P+1+d)%n;
# RAID6 P = n-1-(s%n), Q = (P+1)%n, data d on (P+2+d)%n.
check_map() { # CASE MAP "MISSING ROLES"
	local c=$1 map=$2 missing=" $3 "
	jq -r 'select(.source) | "\(.offset) \(.length) \(.source) \(.role)"' "$map" |
	awk -v lvl="$(mf "$c" .level)" -v n="$(mf "$c" .raid_devices)" -v cb="$(mf "$c" .chunk_bytes)" \
	    -v total="$(mf "$c" .array_bytes)" -v missing="$missing" '
	{
		if ($1 != next_off) { print "gap or overlap at " $1; bad++ }
		next_off = $1 + $2
		for (o = $1; o < $1 + $2; o += cb) {
			ch = int(o / cb); k = n - (lvl == 6 ? 2 : 1)
			s = int(ch / k); d = ch % k
			p = n - 1 - (s % n)
			disk = (p + (lvl == 6 ? 2 : 1) + d) % n
			if (disk != $4) { print "chunk " ch ": role " $4 ", formula says " disk; bad++ }
			want = index(missing, " " disk " ") ? "rebuilt" : "member"
			if ($3 != want) { print "chunk " ch " (role " disk "): " $3 ", expected " want; bad++ }
			if (want == "rebuilt") nreb++
			nch++
		}
	}
	END {
		if (next_off != total) { print "covers " next_off " of " total; bad++ }
		print (bad ? "BAD" : "OK") " chunks=" nch " rebuilt=" nreb
	}'
}
for cm in "r5-ls-5x6M-128K-missing2:2" "r6-ls-6x6M-64K-missing1-4:1 4" "r6-ls-6x6M-64K-md12:"; do
	c=${cm%%:*}; missing=${cm#*:}
	mapfile -t imgs < <(members_shuffled "$c")
	"$RAIDIMG" cat --provenance "$TMP/$c.map" "${imgs[@]}" 2>/dev/null | sha >"$TMP/sha"
	check "$c: cat --provenance keeps the data right" test "$(cat "$TMP/sha")" = "$(mf "$c" .expected_sha256)"
	res=$(check_map "$c" "$TMP/$c.map" "$missing")
	case "$res" in
	*"OK chunks="*) pass "$c: map marks exactly roles [$missing] rebuilt (${res##*OK })" ;;
	*) fail "$c: map: $(echo "$res" | head -5 | tr '\n' ';')" ;;
	esac
	check "$c: header lists the members" test "$(head -1 "$TMP/$c.map" | jq '.members | length')" -eq "$(mf "$c" .raid_devices)"
done
# rebuilt ranges name the members they came from
c=r5-ls-5x6M-128K-missing2
check "rebuilt ranges come from roles 0,1,3,4" test "$(jq -c 'select(.source=="rebuilt") | .from_roles' "$TMP/$c.map" | sort -u)" = "[0,1,3,4]"
# export --provenance of a slice: the same ranges, clipped
mapfile -t imgs < <(members_shuffled "$c")
"$RAIDIMG" export --provenance "$TMP/slice.map" --offset 100000 --length 700000 -o "$TMP/slice.img" "${imgs[@]}" 2>/dev/null
check "export --provenance of a slice starts and ends at its edges" test \
	"$(jq -s -c '[.[1:][] ] | [.[0].offset, (.[-1].offset + .[-1].length), (map(.length) | add)]' "$TMP/slice.map")" = "[100000,800000,700000]"
# unreadable: two members of a RAID5 fail in the same chunk row (stripe 5)
c=r5-ls-4x8M-64K-md12
d=$(fixture_dir "$c")
off=$(( $(mf "$c" '.members[0].data_offset_bytes') + 5 * 65536 ))
RAIDIMG_FAULTS="$d/member0.img:eio@$off+65536;$d/member1.img:eio@$off+65536" \
	"$RAIDIMG_FAULTY" cat --provenance "$TMP/bad.map" -o "$TMP/bad.img" "$d"/member*.img 2>"$TMP/err"
check "unreadable: cat fails" test $? -eq 2
last=$(tail -1 "$TMP/bad.map")
check "unreadable: the map ends with it ($last)" test "$(echo "$last" | jq -r .source)" = unreadable
uo=$(jq -r 'select(.source=="unreadable") | .offset' "$TMP/bad.map" | head -1)
check "unreadable: the output stops where the map says ($uo)" test "$(stat -c %s "$TMP/bad.img")" -eq "$uo"
check "unreadable: stripe 5 (array bytes $((15 * 65536))-$((18 * 65536 - 1)))" \
	test "$uo" -ge $((15 * 65536)) -a "$uo" -lt $((18 * 65536))
check "unreadable: stderr names the offset" grep -q "array offset $uo: cannot be read" "$TMP/err"
finish
