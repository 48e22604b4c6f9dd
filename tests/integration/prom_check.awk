# prom_check.awk - a small checker of the Prometheus text exposition format
# (version 0.0.4, what node_exporter's textfile collector reads), used by
# scrub_metrics.sh on raidimg's --metrics files.  Prints one line per
# problem and exits 1 if there is any; with -v list=1 it also prints each
# sample as "NAME{LABELS} VALUE" (labels sorted by name) for the test to
# look up.
#
# Checked: every line is a # HELP, # TYPE, other comment, blank or sample
# line; metric and label names are valid; label values are quoted with only
# \\, \" and \n escapes; values are floats (or NaN, +Inf, -Inf) with an
# optional integer timestamp; TYPE is one of the five and comes before the
# family's samples, HELP and TYPE at most once per family; a family's
# samples are contiguous; no series twice (the caller checks the final
# newline).
function bad(msg) { printf "line %d: %s: %s\n", NR, msg, $0; errors++ }
function family(name) {
	# histogram/summary series belong to their base name
	if (name ~ /_(bucket|sum|count)$/ && (type[substr(name, 1, length(name) - (name ~ /_bucket$/ ? 7 : 4))] ~ /histogram|summary/))
		return substr(name, 1, length(name) - (name ~ /_bucket$/ ? 7 : 4))
	return name
}
BEGIN { errors = 0; last = "" }
/^[ \t]*$/ { next }
/^#/ {
	if ($0 ~ /^# (HELP|TYPE) /) {
		kw = $2; name = $3
		if (name !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) { bad("bad metric name in " kw); next }
		if (kw == "HELP") {
			if (help[name]++) bad("second HELP for " name)
		} else {
			if (NF != 4 || $4 !~ /^(counter|gauge|histogram|summary|untyped)$/) { bad("bad TYPE"); next }
			if (name in type) bad("second TYPE for " name)
			if (seen[name]) bad("TYPE after samples of " name)
			type[name] = $4
		}
	}
	next
}
{
	line = $0
	if (!match(line, /^[a-zA-Z_:][a-zA-Z0-9_:]*/)) { bad("bad metric name"); next }
	name = substr(line, 1, RLENGTH); rest = substr(line, RLENGTH + 1)
	n = 0; delete lab
	if (substr(rest, 1, 1) == "{") {
		rest = substr(rest, 2)
		while (substr(rest, 1, 1) != "}") {
			if (!match(rest, /^[a-zA-Z_][a-zA-Z0-9_]*="/)) { bad("bad label"); next }
			lname = substr(rest, 1, RLENGTH - 2); rest = substr(rest, RLENGTH + 1)
			if (!match(rest, /^([^"\\]|\\\\|\\"|\\n)*"/)) { bad("bad label value of " lname); next }
			lval = substr(rest, 1, RLENGTH - 1); rest = substr(rest, RLENGTH + 1)
			if (lname in lab) { bad("label " lname " twice"); next }
			lab[lname] = lval; n++
			if (substr(rest, 1, 1) == ",") rest = substr(rest, 2)
			else if (substr(rest, 1, 1) != "}") { bad("expected , or } after label " lname); next }
		}
		rest = substr(rest, 2)
	}
	if (!match(rest, /^ +/)) { bad("no space before the value"); next }
	rest = substr(rest, RLENGTH + 1)
	split(rest, v, / +/)
	if (v[1] !~ /^[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$/ && v[1] !~ /^(NaN|[-+]Inf)$/) { bad("bad value"); next }
	if ((2 in v) && v[2] != "" && v[2] !~ /^-?[0-9]+$/) { bad("bad timestamp"); next }
	if ((3 in v) && v[3] != "") { bad("trailing text"); next }
	f = family(name)
	if (f != last && seen[f]) bad("samples of " f " are not together")
	seen[f] = 1; last = f
	# the series: the labels sorted by name
	keys = ""
	m = 0; for (k in lab) ks[++m] = k
	for (i = 2; i <= m; i++) { t = ks[i]; for (j = i - 1; j >= 1 && ks[j] > t; j--) ks[j + 1] = ks[j]; ks[j + 1] = t }
	for (i = 1; i <= m; i++) keys = keys (i > 1 ? "," : "") ks[i] "=\"" lab[ks[i]] "\""
	series = name "{" keys "}"
	if (series in got) bad("series twice: " series)
	got[series] = v[1]
	if (list) print series, v[1]
}
END {
	if (NR == 0) { print "empty file"; errors++ }
	exit errors > 0
}
