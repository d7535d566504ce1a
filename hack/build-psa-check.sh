#!/usr/bin/env bash
# Build psa-check (tests/tools/psa-check: the upstream Pod Security evaluator,
# k8s.io/pod-security-admission, behind a small main) for the Pod Security
# suite, and cache it.
#
# Usage: hack/build-psa-check.sh
# Env:   IMDS_CACHE_DIR  cache root (default: <repo>/tmp/cache)
#
# The build itself is tests/tools/psa-check/build.sh: Go 1.24 and the k8s.io
# 0.32.3 libraries are Debian 13 (trixie) packages fetched with
# `apt-get download` through a private apt configuration (trixie main only,
# nothing installed into the system, the machine's own mirror) and unpacked
# with `dpkg -x`; GOPATH mode, GOPROXY=off. The unpacked packages stay in
# $CACHE/psa-check/work, so only the first build needs the mirror.
#
# The cache entry is keyed by everything that changes the binary: the
# vendored sources, main.go, build.sh, this script and the architecture. An
# unchanged key returns at once; a changed one rebuilds. The last line on
# stdout is the directory holding psa-check; the rest goes to stderr.
set -euo pipefail
shopt -s inherit_errexit

SCRIPT_PATH=$(readlink -f "${BASH_SOURCE[0]}")
REPO_ROOT=$(cd "$(dirname "$SCRIPT_PATH")/.." && pwd)
CACHE_ROOT=${IMDS_CACHE_DIR:-$REPO_ROOT/tmp/cache}
PSA_CACHE=$CACHE_ROOT/psa-check
SRC=$REPO_ROOT/tests/tools/psa-check

log() { printf 'build-psa-check: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

for cmd in apt-get apt-cache dpkg sha256sum flock; do
	command -v "$cmd" >/dev/null || die "$cmd not found (a Debian machine is needed)"
done
[[ -r /usr/share/keyrings/debian-archive-keyring.gpg ]] ||
	die "no /usr/share/keyrings/debian-archive-keyring.gpg (apt-get install debian-archive-keyring)"
[[ -f $SRC/build.sh && -f $SRC/main.go && -d $SRC/pod-security-admission/policy ]] ||
	die "sources missing under $SRC"

cache_key() {
	{
		(cd "$SRC" && find . -type f ! -name README.md -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
		sha256sum "$SCRIPT_PATH" | cut -d' ' -f1
		dpkg --print-architecture
	} | sha256sum | cut -c1-16
}

mkdir -p "$PSA_CACHE"
key=$(cache_key)
entry=$PSA_CACHE/$key
if [[ -f $entry/COMPLETE && -x $entry/psa-check ]]; then
	printf '%s\n' "$entry"
	exit 0
fi

# One build at a time per cache; a second caller waits and finds the entry.
exec 9>"$PSA_CACHE/.lock"
flock 9
if [[ -f $entry/COMPLETE && -x $entry/psa-check ]]; then
	printf '%s\n' "$entry"
	exit 0
fi

rm -rf "$PSA_CACHE"/.tmp.*
tmp=$(mktemp -d "$PSA_CACHE/.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log "building psa-check $key (work folder $PSA_CACHE/work)"
start=$SECONDS
if ! PSA_WORK=$PSA_CACHE/work bash "$SRC/build.sh" "$tmp/psa-check" >"$tmp/build.log" 2>&1; then
	tail -n 40 "$tmp/build.log" >&2
	die "build failed"
fi
# What it was built from: the unpacked packages, by name and version.
(cd "$PSA_CACHE/work/debs" && ls -1 ./*.deb) >"$tmp/debs" 2>/dev/null || true
touch "$tmp/COMPLETE"
# A complete entry is never half-overwritten: mv of a folder is atomic.
rm -rf "$entry"
mv -T "$tmp" "$entry"
trap - EXIT
log "built in $((SECONDS - start)) s: $entry"
printf '%s\n' "$entry"
