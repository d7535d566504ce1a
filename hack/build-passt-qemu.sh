#!/usr/bin/env bash
# Build the passt/qemu pair KubeVirt v1.9 runs for its passt binding, as far
# as Debian has it, and cache it: Debian 13's passt (0.0~git20250503.587980c,
# with --vhost-user, --repair-path and passt-repair) built from its Debian
# source, and bookworm-backports' qemu-system-x86 (10.0, which carries a
# vhost-user back end's state across a migration:
# VHOST_USER_PROTOCOL_F_DEVICE_STATE) unpacked with `dpkg -x`, not installed
# (installed, it would replace the qemu 7.2 every other VM scenario runs on).
# Debian 12's own passt and qemu have neither (tests/integration/
# net_passt_repair.sh pins that).
#
# Usage: hack/build-passt-qemu.sh
# Env:   IMDS_CACHE_DIR  cache root (default: <repo>/tmp/cache)
#
# Both come from the machine's own Debian mirror through a private apt
# configuration (as tests/tools/psa-check/build.sh fetches trixie's Go):
# `deb-src ... trixie main` for passt's source (`apt-get source
# --download-only`, unpacked as dpkg-source does, built with `make passt
# passt-repair`: its binary package needs libc6 >= 2.38, Debian 12 has
# 2.36, its source builds here as it is), and `deb ... bookworm-backports
# main` for qemu-system-x86, -common and -data (`apt-get download`).
# Nothing is installed into the system.  The qemu runs on Debian 12's own
# libraries; its firmware folder is given with -L (qemu-system-data's, whose
# SeaBIOS links point into Debian 12's seabios package).
#
# The cache entry is keyed by this script and the architecture; the versions
# fetched are recorded in it (VERSIONS).  An unchanged key returns at once.
# The last line on stdout is the entry's folder, holding:
#   bin/passt  bin/passt-repair  bin/qemu-system-x86_64  share/qemu (for -L)
#   VERSIONS
# the rest goes to stderr.
set -euo pipefail
shopt -s inherit_errexit

SCRIPT_PATH=$(readlink -f "${BASH_SOURCE[0]}")
REPO_ROOT=$(cd "$(dirname "$SCRIPT_PATH")/.." && pwd)
CACHE_ROOT=${IMDS_CACHE_DIR:-$REPO_ROOT/tmp/cache}
PQ_CACHE=$CACHE_ROOT/passt-qemu

log() { printf 'build-passt-qemu: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

for cmd in apt-get dpkg tar patch sha256sum flock make gcc; do
	command -v "$cmd" >/dev/null || die "$cmd not found (hack/install-deps.sh build vm)"
done
[[ -r /usr/share/keyrings/debian-archive-keyring.gpg ]] ||
	die "no /usr/share/keyrings/debian-archive-keyring.gpg (apt-get install debian-archive-keyring)"

cache_key() {
	{
		sha256sum "$SCRIPT_PATH" | cut -d' ' -f1
		dpkg --print-architecture
	} | sha256sum | cut -c1-16
}
complete() { [[ -f $1/COMPLETE && -x $1/bin/passt && -x $1/bin/passt-repair && -x $1/bin/qemu-system-x86_64 ]]; }

mkdir -p "$PQ_CACHE"
key=$(cache_key)
entry=$PQ_CACHE/$key
if complete "$entry"; then
	printf '%s\n' "$entry"
	exit 0
fi

# One build at a time per cache; a second caller waits and finds the entry.
exec 9>"$PQ_CACHE/.lock"
flock 9
if complete "$entry"; then
	printf '%s\n' "$entry"
	exit 0
fi

rm -rf "$PQ_CACHE"/.tmp.*
tmp=$(mktemp -d "$PQ_CACHE/.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log "building $key"
start=$SECONDS

# The private apt configuration: the mirror this machine's apt uses.
mirror=$({ cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } |
	sed -n -e 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' \
		-e 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\)[[:space:]]\+[a-z]*[[:space:]].*/\2/p' |
	grep -v -e security -e '^$' | head -n1)
[[ -n "$mirror" ]] || die "no Debian mirror in /etc/apt/sources.list*"
A=$tmp/apt
mkdir -p "$A/etc/sources.list.d" "$A/etc/preferences.d" "$A/state/lists/partial" "$A/cache/archives/partial"
{
	echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm-backports main"
} >"$A/etc/sources.list"
touch "$A/state/status"
APTO=(-o "Dir::Etc::sourcelist=$A/etc/sources.list" -o "Dir::Etc::sourceparts=$A/etc/sources.list.d"
	-o "Dir::Etc::preferencesparts=$A/etc/preferences.d" -o "Dir::State=$A/state"
	-o "Dir::State::status=$A/state/status" -o "Dir::Cache=$A/cache" -o Debug::NoLocking=1
	-o APT::Get::Only-Source=1)
apt-get "${APTO[@]}" update >"$tmp/apt.log" 2>&1 || { cat "$tmp/apt.log" >&2; die "apt-get update (private config) failed"; }

# passt: trixie's source, built here.
mkdir -p "$tmp/src" "$tmp/bin"
# The .dsc is optional: a mirror or proxy that lacks it (seen: 404 on the
# .dsc, the tarballs there) still gives the two tarballs of the 3.0 (quilt)
# source, unpacked as dpkg-source would (the orig, debian/ in it, the
# series applied).
(cd "$tmp/src" && apt-get "${APTO[@]}" source --download-only passt) >>"$tmp/apt.log" 2>&1 || true
orig=$(compgen -G "$tmp/src/passt_*.orig.tar.*" | head -n1) || true
deb=$(compgen -G "$tmp/src/passt_*.debian.tar.*" | head -n1) || true
[[ -n $orig && -n $deb ]] || { tail -n 20 "$tmp/apt.log" >&2; die "apt-get source passt (trixie) fetched no orig and debian tarballs"; }
mkdir -p "$tmp/src/passt"
tar -xf "$orig" -C "$tmp/src/passt" --strip-components=1
tar -xf "$deb" -C "$tmp/src/passt"
if [[ -s $tmp/src/passt/debian/patches/series ]]; then
	while read -r pat _; do
		[[ -z $pat || $pat == \#* ]] && continue
		patch -d "$tmp/src/passt" -p1 -s <"$tmp/src/passt/debian/patches/$pat" ||
			die "debian/patches/$pat does not apply"
	done <"$tmp/src/passt/debian/patches/series"
fi
if ! make -C "$tmp/src/passt" -j2 passt passt-repair >"$tmp/make.log" 2>&1; then
	tail -n 40 "$tmp/make.log" >&2
	die "passt build failed"
fi
install -m 0755 "$tmp/src/passt/passt" "$tmp/src/passt/passt-repair" "$tmp/bin/"
pv=$(basename "$deb"); pv=${pv%.debian.tar.*}

# qemu: bookworm-backports' binary packages, unpacked.
mkdir -p "$tmp/debs" "$tmp/root"
(cd "$tmp/debs" && apt-get "${APTO[@]}" -t bookworm-backports download \
	qemu-system-x86/bookworm-backports qemu-system-common/bookworm-backports qemu-system-data/bookworm-backports) \
	>>"$tmp/apt.log" 2>&1 || { tail -n 20 "$tmp/apt.log" >&2; die "apt-get download qemu (bookworm-backports) failed"; }
for f in "$tmp"/debs/*.deb; do dpkg -x "$f" "$tmp/root"; done
ln -s ../root/usr/bin/qemu-system-x86_64 "$tmp/bin/qemu-system-x86_64"
mkdir -p "$tmp/share"
ln -s ../root/usr/share/qemu "$tmp/share/qemu"
"$tmp/bin/qemu-system-x86_64" --version >"$tmp/qemu.version" 2>&1 ||
	{ cat "$tmp/qemu.version" >&2; die "the unpacked qemu does not run on this machine"; }

{
	echo "passt: $pv (built from source: make passt passt-repair)"
	for f in "$tmp"/debs/*.deb; do echo "qemu: ${f##*/}"; done
	echo "qemu --version: $(head -n1 "$tmp/qemu.version")"
} >"$tmp/VERSIONS"
rm -rf "$tmp/apt" "$tmp/src" "$tmp/debs"
touch "$tmp/COMPLETE"
# A complete entry is never half-overwritten: mv of a folder is atomic.
rm -rf "$entry"
mv -T "$tmp" "$entry"
trap - EXIT
log "built in $((SECONDS - start)) s: $entry"
sed 's/^/build-passt-qemu:   /' "$entry/VERSIONS" >&2
printf '%s\n' "$entry"
