#!/bin/bash
# `make install` puts the program, the man page, the bash completion, the
# systemd units of the periodic scrub and their example config where they
# belong (a prefix of the test's own), and `make uninstall` takes them all
# away; the installed completion loads in an interactive bash (bash -i) and
# completes a command, an option, an option's values and the commands'
# options as their --help lists them.
. "$(dirname "$0")/lib.sh"
P=$TMP/prefix
unset MAKEFLAGS MFLAGS MAKELEVEL
make -C "$BUILDDIR" install prefix="$P" >"$TMP/install.log" 2>&1; rc=$?
check "make install prefix=... ($(tail -n 3 "$TMP/install.log" | tr '\n' ' '))" test $rc -eq 0
for f in bin/raidimg share/man/man1/raidimg.1 share/bash-completion/completions/raidimg \
	lib/systemd/system/raidimg-scrub@.service lib/systemd/system/raidimg-scrub@.timer \
	share/doc/raidimg/scrub.conf.example; do
	check "installed: $f" test -s "$P/$f"
done
check "the service reads the installed config" \
	grep -qx "EnvironmentFile=$P/etc/raidimg/scrub/%i.conf" "$P/lib/systemd/system/raidimg-scrub@.service"
check "... and runs the installed program" grep -q "^ExecStart=$P/bin/raidimg scrub --no-progress" "$P/lib/systemd/system/raidimg-scrub@.service"
check "the man page installed is the tree's" cmp -s "$SRCDIR/man/raidimg.1" "$P/share/man/man1/raidimg.1"

# ---- the completion, in an interactive shell ----
# complete LINE: what the installed completion offers for LINE (the word
# being completed is the last, empty after a trailing space)
complete_line() {
	LINE=$1 P=$P bash --norc --noprofile -i -c '
		. "$P/share/bash-completion/completions/raidimg" || exit 3
		complete -p raidimg >/dev/null || exit 4
		read -ra COMP_WORDS <<<"$LINE"
		[[ $LINE == *" " ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_LINE=$LINE COMP_POINT=${#LINE}
		_raidimg raidimg "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf "%s\n" "${COMPREPLY[@]}"' 2>/dev/null | tr '\n' ' '
}
export PATH=$P/bin:$PATH
check "bash -i: raidimg s<TAB> offers scrub and scrub-merge" test "$(complete_line "raidimg s")" = "scrub scrub-merge "
check "bash -i: raidimg <TAB> offers every command" \
	test "$(complete_line "raidimg " | wc -w)" -eq "$(raidimg --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { n++ } on && /^$/ { exit } END { print n + 2 }')"
check "bash -i: raidimg scrub --sh<TAB> offers --shard" test "$(complete_line "raidimg scrub --sh")" = "--shard "
check "bash -i: raidimg mount --non<TAB> offers --nonempty" test "$(complete_line "raidimg mount --non")" = "--nonempty "
check "bash -i: raidimg cat --level <TAB> offers the levels" test "$(complete_line "raidimg cat --level ")" = "4 5 6 raid4 raid5 raid6 "
check "bash -i: raidimg overlay <TAB> offers the actions" test "$(complete_line "raidimg overlay ")" = "info discard --help "
mkdir -p "$TMP/imgs"
touch "$TMP/imgs/disk0.img" "$TMP/imgs/disk1.img"
check "bash -i: member images are files" \
	test "$(complete_line "raidimg examine $TMP/imgs/d" | tr ' ' '\n' | sort | tr '\n' ' ')" = "$TMP/imgs/disk0.img $TMP/imgs/disk1.img "
# every option a command's --help lists at the start of a line is offered
for cmd in examine cat scrub mount export; do
	want=$(raidimg "$cmd" --help | grep -oE -- '^ +(-[a-z], )?--[a-z][-a-z0-9]*' | grep -oE -- '--[a-z][-a-z0-9]*' | sort -u | tr '\n' ' ')
	got=$(complete_line "raidimg $cmd --" | tr ' ' '\n' | grep -- '^--' | sort -u | tr '\n' ' ')
	missing=$(comm -23 <(tr ' ' '\n' <<<"$want" | sed '/^$/d') <(tr ' ' '\n' <<<"$got" | sed '/^$/d') | tr '\n' ' ')
	check "bash -i: raidimg $cmd --<TAB> offers all its options${missing:+ (not: $missing)}" test -z "$missing"
done

make -C "$BUILDDIR" uninstall prefix="$P" >"$TMP/uninstall.log" 2>&1; rc=$?
check "make uninstall ($rc)" test $rc -eq 0
check "... leaves no file" test -z "$(find "$P" -type f)"
finish
