#!/bin/bash
# Progress bars and summaries speak the same units (binary: MiB, MiB/s) and
# say what they count (scrub and rebuild: per member); the last frame of a
# bar is right: 100%, the average speed and the time taken, never "0 B/s
# ETA --:--", and it stays (a newline ends it); scrub's summary gives the
# same per-member speed as its last frame; export and compress take
# --progress/--no-progress, draw no bar by default when stderr is not a
# terminal, and put their summary on stdout (export -o -: on stderr).
. "$(dirname "$0")/lib.sh"
c=r5-ls-4x8M-64K-md12
d=$(fixture_dir "$c")
m=("$d"/member*.img)

# last_frame FILE: the last frame of the bar in FILE (frames start with \r)
last_frame() { tr '\r' '\n' <"$1" | grep -E '^[a-z]+ \[[#.]{24}\]' | tail -n 1 | sed 's/\x1b\[K//g'; }
frame_ok() { # FRAME LABEL TOTAL PER
	local f=$1
	[[ $f == "$2 [########################] 100.0% $3/$3$4 "* ]] && [[ $f =~ [0-9.]+\ (KiB|MiB|GiB)/s\ in\ [0-9]+:[0-9]{2} ]] &&
		[[ $f != *"ETA"* ]] && [[ $f != *" 0 B/s"* ]]
}

"$RAIDIMG" scrub --progress "${m[@]}" >"$TMP/out" 2>"$TMP/err"
f=$(last_frame "$TMP/err")
check "scrub's last frame: 100%, per member, average speed, time taken ($f)" frame_ok "$f" scrub "7.0 MiB" " per member"
check "... and it stays on its line" test "$(tail -c 1 "$TMP/err" | od -An -c | tr -d ' ')" = '\n'
bar_speed=$(grep -oE '[0-9.]+ [KMG]iB/s in' <<<"$f" | sed 's/ in$//')
check "scrub's summary: the same per-member speed as the bar ($bar_speed), and in all" \
	grep -qE "scrub: read 28.0 MiB \(7.0 MiB per member\) in [0-9]+ member requests .* [0-9.]+ [KMG]iB/s, $bar_speed per member" "$TMP/out"
"$RAIDIMG" scrub --progress --json "${m[@]}" >"$TMP/out" 2>"$TMP/err"
check "--json: the bar still on stderr only" test -n "$(last_frame "$TMP/err")" -a "$(grep -c . "$TMP/out")" -eq 1
"$RAIDIMG" scrub "${m[@]}" >"$TMP/out" 2>"$TMP/err"
check "no bar when stderr is not a terminal" test ! -s "$TMP/err"

"$RAIDIMG" rebuild --progress --role 2 -o "$TMP/r2.img" "${m[0]}" "${m[1]}" "${m[3]}" >"$TMP/out" 2>"$TMP/err"
f=$(last_frame "$TMP/err")
check "rebuild's last frame ($f)" frame_ok "$f" rebuild "7.0 MiB" " per member"
check "rebuild's summary: per-member speed in MiB/s" grep -qE "s, [0-9.]+ [KMG]iB/s per member\)$" "$TMP/out"

"$RAIDIMG" export --progress -o "$TMP/e.img" "${m[@]}" >"$TMP/out" 2>"$TMP/err"; rc=$?
f=$(last_frame "$TMP/err")
check "export --progress: last frame in array bytes ($f)" frame_ok "$f" export "21.0 MiB" ""
check "export's summary on stdout, in the same units" \
	grep -qE "^export: 22020096 bytes of the array \(21.0 MiB\) from offset 0 to $TMP/e.img \(raw-sparse\) in [0-9.]+ s: [0-9.]+ [KMG]iB/s$" "$TMP/out"
"$RAIDIMG" export --progress --no-progress --overwrite -o "$TMP/e.img" "${m[@]}" >/dev/null 2>"$TMP/err"
check "export --no-progress (the last word wins): no bar" test ! -s "$TMP/err"
"$RAIDIMG" export --overwrite -o "$TMP/e.img" "${m[@]}" >/dev/null 2>"$TMP/err"
check "export: no bar by default off a terminal" test ! -s "$TMP/err"
"$RAIDIMG" export -o - "${m[@]}" 2>"$TMP/err" | sha256sum >"$TMP/sha"
check "export -o -: the image on stdout, the summary on stderr" \
	test "$(cut -d' ' -f1 "$TMP/sha")" = "$(mf "$c" .expected_sha256)" -a "$(grep -c '^export: .* to standard output (raw)' "$TMP/err")" = 1

"$RAIDIMG" compress --progress -o "$TMP/c.zst" "${m[0]}" >"$TMP/out" 2>"$TMP/err"
f=$(last_frame "$TMP/err")
check "compress --progress: last frame in bytes of the input ($f)" frame_ok "$f" compress "8.0 MiB" ""
check "compress's summary on stdout, in the same units" \
	grep -qE "^compress: .*member0.img -> $TMP/c.zst: 8388608 bytes in \(8.0 MiB\), [0-9]+ bytes out \([0-9.]+ [KM]iB\), [0-9.]+x, in [0-9.]+ s: [0-9.]+ [KMG]iB/s$" "$TMP/out"
"$RAIDIMG" compress --no-progress --overwrite -o "$TMP/c.zst" "${m[0]}" >/dev/null 2>"$TMP/err"
check "compress --no-progress: nothing on stderr" test ! -s "$TMP/err"
finish
