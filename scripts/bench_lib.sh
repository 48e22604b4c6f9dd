# scripts/bench_lib.sh - helpers the benchmark scripts source (bench_all).
# Figures only: nothing here asserts.  Needs bc, jq and GNU time (/usr/bin/time).

# make_array DIR LEVEL DEVICES CHUNK GIB: a RAID array of at least GIB GiB
# of pseudo-random data (a 64 MiB random block repeated: the speed of
# reading and checking does not depend on what the bytes are, and no
# payload file is kept) with `raidimg create` in DIR/arr-LEVEL-DEVICES-CHUNK;
# prints that directory.  Reused when it is there already (BENCH_DIR kept).
# Returns 1 (message printed) when it cannot be made.
make_array() {
	local dir=$1 lvl=$2 n=$3 chunk=$4 gib=$5 k cb bytes per a
	a="$dir/arr-$lvl-$n-$chunk"
	if [ -f "$a/member$((n - 1)).img" ]; then
		echo "$a"
		return
	fi
	[ -f "$dir/rand64" ] || head -c 64M /dev/urandom >"$dir/rand64" || return 1
	k=$((n - (lvl == 6 ? 2 : 1)))
	cb=$(numfmt --from=iec "$chunk")
	bytes=$((gib << 30))
	per=$(((bytes / k + cb - 1) / cb * cb))            # data bytes per member, whole chunks
	# the 1.2 superblock and the default 1 MiB data offset come first
	for ((i = 0; i < gib * 16; i++)); do cat "$dir/rand64"; done |
		"$R" create --level "$lvl" --devices "$n" --chunk "$chunk" --size $((per + (1 << 20))) \
			--from - -o "$a" >/dev/null || { echo "bench: cannot make $a" >&2; return 1; }
	echo "$a"
}

# timed VAR CMD...: run CMD (stdout to /dev/null); VAR_wall and VAR_cpu
# (user + system seconds of it and its children) get its times.  A failed
# run stops the benchmark (exit status 1 is accepted: `scrub` found
# mismatches says so itself).
timed() {
	local var=$1 out st
	shift
	out=$(/usr/bin/time -f "%e %U %S" "$@" 2>&1 >/dev/null | tail -n1) && st=0 || st=$?
	if [ "$st" -gt 1 ] || ! [[ $out =~ ^[0-9.]+\ [0-9.]+\ [0-9.]+$ ]]; then
		echo "bench: failed ($st): $*: $out" >&2
		exit 1
	fi
	read -r w u s <<<"$out"
	printf -v "${var}_wall" '%s' "$w"
	printf -v "${var}_cpu" '%s' "$(echo "$u + $s" | bc -l)"
}

min() { echo "if ($1 < $2) $1 else $2" | bc -l; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
# bytes, seconds -> GB/s
gbs() { awk -v b="$1" -v t="$2" 'BEGIN { if (t > 0) printf "%.2f", b / t / 1e9; else print "-" }'; }
# verdict FIGURE OP TARGET: "ok" or "BELOW" ("-" when there is no figure)
verdict() {
	[ "$1" = - ] || [ "$3" = - ] && { echo -; return; }
	awk -v f="$1" -v op="$2" -v t="$3" 'BEGIN {
		ok = (op == ">=") ? f >= t : f <= t
		print ok ? "ok" : (op == ">=" ? "BELOW" : "ABOVE") }'
}

# best_of RUNS NAME1 "CMD1" NAME2 "CMD2" ...: the commands in turns, RUNS
# rounds (so that a noisy neighbour hits them alike); NAME_wall and NAME_cpu
# get the best (lowest) of each.
best_of() {
	local runs=$1 i j name
	shift
	local -a pairs=("$@")
	for ((j = 0; j < ${#pairs[@]}; j += 2)); do
		printf -v "${pairs[j]}_wall" 999999
		printf -v "${pairs[j]}_cpu" 999999
	done
	for ((i = 0; i < runs; i++)); do
		for ((j = 0; j < ${#pairs[@]}; j += 2)); do
			name=${pairs[j]}
			timed _t bash -c "${pairs[j + 1]}"
			local bw="${name}_wall" bc="${name}_cpu"
			printf -v "$bw" '%s' "$(min "${!bw}" "$_t_wall")"
			printf -v "$bc" '%s' "$(min "${!bc}" "$_t_cpu")"
		done
	done
}

# page_bytes FILE...: bytes of the files in the page cache (fincore)
page_bytes() {
	fincore -b -n -o RES "$@" | awk '{ s += $1 } END { print s + 0 }'
}

# uncache FILE...: drop the files' clean pages (POSIX_FADV_DONTNEED through
# dd; no root needed)
uncache() {
	local f
	for f in "$@"; do dd if="$f" iflag=nocache count=0 status=none; done
}
