#!/usr/bin/env bash
# Fails when a script talks to a cluster without naming it: every kubectl or
# virtctl call must carry --context, every kind call that acts on a cluster
# must carry --name (development-guidelines: another project may switch the
# current context at any time).
#
#   hack/check-context.sh [FILE|DIR ...]     default: hack test tests deploy Makefile
#
# Scanned: shell scripts (*.sh, *.bash, or a sh/bash shebang) and Makefiles;
# a command continued with "\" is one line. Comments are skipped. Allowed
# without --context: wrappers that add it (kctl() { kubectl --context ...; }),
# and calls that never reach a cluster: `kubectl kustomize`, `kubectl version
# --client`, `kubectl completion`, `kubectl help`, `command -v kubectl`. A line
# may opt out with a trailing `# check-context: ignore`.
# Output: FILE:LINE: the offending command; exit status 1 when any.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=("$@")
((${#targets[@]})) || targets=(hack test tests deploy Makefile)

files=()
for t in "${targets[@]}"; do
	[[ -e $t ]] || continue
	while IFS= read -r -d '' f; do
		case $f in
		*/node_modules/* | tmp/* | ./tmp/*) continue ;;
		*.sh | *.bash | */Makefile | Makefile | *.mk) files+=("$f") ;;
		*)
			# the first line by the shell's own read: thousands of files (the
			# fuzz corpora) and no process per file (a head | grep each took
			# 55 s of make test)
			first=
			IFS= read -r first <"$f" 2>/dev/null || :
			[[ $first =~ ^\#!.*(ba|da)?sh ]] && files+=("$f")
			;;
		esac
	done < <(find "$t" -type f -print0)
done

((${#files[@]})) || exit 0

awk '
function report(text) {
	gsub(/^[ \t]+/, "", text)
	printf "%s:%d: %s\n", FILENAME, start, text
	bad++
}
# Message strings (double- or single-quoted, with a space and no command substitution)
# name kubectl without running it: blank them.
function strip_messages(s,    out, q, rest, m) {
	out = ""
	while (match(s, /"[^"]*"|\047[^\047]*\047/)) {
		m = substr(s, RSTART, RLENGTH)
		rest = substr(s, RSTART + RLENGTH)
		if (m ~ / / && m !~ /\$\(/) m = "\"\""
		out = out substr(s, 1, RSTART - 1) m
		s = rest
	}
	return out s
}
function check(line,    s) {
	if (line ~ /^[ \t]*#/) return
	if (line ~ /# check-context: ignore[ \t]*$/) return
	s = strip_messages(line)
	# test operators on a path: [[ -x .../kubectl ]]
	gsub(/-[a-z][ \t]+[^ \t]*(kubectl|virtctl)/, "", s)
	# a word that runs kubectl/virtctl: the bare name, a path ending in it, or
	# $KUBECTL / ${KUBECTL} / $(KUBECTL) style variables
	# URLs name files, they run nothing
	gsub(/https?:\/\/[^ \t"]*/, "", s)
	# a list of names (for t in docker kubectl ...) runs nothing
	if (s ~ /^[ \t]*for [A-Za-z_]+ in /) return
	if (s ~ /(^|[ \t;&|(`"{\/])(kubectl|virtctl)([ \t"]|$)/ || s ~ /(^|[;&|(`{]|then|do|run|env|exec)[ \t]*"?\$[({]?(KUBECTL|VIRTCTL)[A-Z_]*[)}]?"?[ \t]/) {
		if (s ~ /--context/) return
		if (s ~ /(command -v|which|type -P|apt-get|dpkg|install -m|chmod|cp|ls) [^;|&]*(kubectl|virtctl)/) return
		if (s ~ /(kubectl|virtctl|KUBECTL[A-Z_]*[)}]?"?)[ \t]+(kustomize|completion|help)([ \t]|$)/) return
		if (s ~ /(kubectl|KUBECTL[A-Z_]*[)}]?"?)[ \t]+version[ \t]+--client/) return
		if (s ~ /^[ \t]*(echo|printf|log|die|@echo)[ \t]/) return
		if (s ~ /(KUBECTL|VIRTCTL)[A-Z_]*[ \t]*[:?]?=/ && s !~ /(kubectl|virtctl)[ \t]+[a-z]/) return
		report(s)
		return
	}
	# kind: cluster-scoped subcommands need --name
	if (s ~ /(^|[ \t;&|(`"])(\$[({]?KIND[)}]?|kind)[ \t]+(create|delete|load|export|get[ \t]+(kubeconfig|nodes))([ \t]|$)/) {
		if (s ~ /--name/) return
		if (s ~ /^[ \t]*(echo|printf|log|die|@echo)[ \t]/) return
		report(s)
	}
}
FNR == 1 { buf = ""; start = 0 }
{
	line = $0
	if (buf == "") start = FNR
	if (line ~ /\\$/) { buf = buf substr(line, 1, length(line) - 1) " "; next }
	buf = buf line
	check(buf)
	buf = ""
}
END { exit bad ? 1 : 0 }
' "${files[@]}"
