#!/bin/bash
# The periodic scrub's systemd units, as `make install` installs them (into
# a prefix of the test's own): `systemd-analyze verify` finds nothing wrong
# with raidimg-scrub@NAME.service and .timer (a unit with a mistake is
# caught, so the check means something); and the service's command line,
# expanded as systemd does (the config file's MEMBERS and OPTIONS, %i, %S),
# scrubs the array the config names: exit 1 on a corrupted fixture, its
# metrics written, its checkpoint gone once finished.  Skipped (77) only
# when systemd-analyze is not installed (package systemd, in scripts/deps).
. "$(dirname "$0")/lib.sh"
command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed (package systemd)"
P=$TMP/prefix
U=$P/lib/systemd/system
unset MAKEFLAGS MFLAGS MAKELEVEL
make -C "$BUILDDIR" install prefix="$P" >"$TMP/install.log" 2>&1 || { fail "make install: $(tail -n 5 "$TMP/install.log")"; finish; }

# the units of an instance "evidence1" (systemd-analyze verifies instances)
ln -s raidimg-scrub@.service "$U/raidimg-scrub@evidence1.service"
ln -s raidimg-scrub@.timer "$U/raidimg-scrub@evidence1.timer"
# (Documentation=man:raidimg(1) is looked up with man(1): the installed page)
MANPATH=$P/share/man systemd-analyze verify "$U/raidimg-scrub@evidence1.service" "$U/raidimg-scrub@evidence1.timer" >"$TMP/verify" 2>&1; rc=$?
check "systemd-analyze verify: the service and the timer ($(head -c 400 "$TMP/verify"))" test $rc -eq 0 -a ! -s "$TMP/verify"
# a broken copy is refused: the check means something
mkdir -p "$TMP/broken"
sed "s|^ExecStart=$P/bin/raidimg|ExecStart=$P/bin/no-such-raidimg|" "$U/raidimg-scrub@.service" >"$TMP/broken/raidimg-scrub@.service"
ln -s raidimg-scrub@.service "$TMP/broken/raidimg-scrub@evidence1.service"
MANPATH=$P/share/man systemd-analyze verify "$TMP/broken/raidimg-scrub@evidence1.service" >"$TMP/verify" 2>&1; rc=$?
check "a service whose program is not there fails verify" grep -q "no-such-raidimg is not executable" "$TMP/verify"
check "the timer is monthly and persistent" grep -qx "Persistent=true" "$U/raidimg-scrub@.timer"
check "systemd-analyze calendar accepts the timer's OnCalendar" \
	systemd-analyze calendar "$(sed -n 's/^OnCalendar=//p' "$U/raidimg-scrub@.timer")" >/dev/null

# ---- the service's command, as systemd would run it ----
c=r6-ls-5x6M-64K-baddata
d=$(fixture_dir "$c")
conf=$P/etc/raidimg/scrub/evidence1.conf
mkdir -p "$(dirname "$conf")" "$TMP/state/raidimg" "$TMP/textfile"
# the example, with this case's members and metrics in a textfile directory
sed -e "s|^MEMBERS=.*|MEMBERS=\"$(echo "$d"/member*.img)\"|" \
	-e "s|/var/lib/prometheus/node-exporter/raidimg-NAME.prom|$TMP/textfile/raidimg-evidence1.prom|" \
	-e "s|array=NAME|array=evidence1|" "$P/share/doc/raidimg/scrub.conf.example" >"$conf"
check "the config's EnvironmentFile is where the service reads it" \
	grep -qx "EnvironmentFile=$(dirname "$conf")/%i.conf" "$U/raidimg-scrub@.service"
# EnvironmentFile: KEY="value" lines; ExecStart: %i, %S, then $VAR split at blanks
declare -A env
while IFS= read -r line; do
	[[ $line =~ ^([A-Z_]+)=\"(.*)\"$ ]] && env[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
done <"$conf"
execstart=$(sed -n 's/^ExecStart=//p' "$U/raidimg-scrub@.service")
execstart=${execstart//%i/evidence1}
execstart=${execstart//%S/$TMP/state}
args=()
for w in $execstart; do
	if [[ $w == \$* ]]; then
		v=${w#\$}
		read -ra more <<<"${env[$v]}"
		args+=("${more[@]}")
	else
		args+=("$w")
	fi
done
"${args[@]}" >"$TMP/out" 2>"$TMP/err"; rc=$?
check "the service's scrub of a corrupted fixture: exit 1, the unit fails ($(head -c 200 "$TMP/err"))" test $rc -eq 1
check "... its report names the mismatch" grep -q "mismatch: stripe 9" "$TMP/out"
check "... its metrics, labelled with the instance" \
	grep -q '^raidimg_scrub_mismatches{.*array="evidence1"} 1$' "$TMP/textfile/raidimg-evidence1.prom"
check "... the checkpoint removed once the scrub finished" test ! -e "$TMP/state/raidimg/scrub-evidence1.checkpoint"
make -C "$BUILDDIR" uninstall prefix="$P" >/dev/null 2>&1
finish
