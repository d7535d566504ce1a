#!/usr/bin/env bash
# Build kube-apiserver and kubectl from Debian's `kubernetes` source package
# (1.20) for the webhook tests, and cache them.
#
# Usage: hack/build-kube-apiserver.sh
# Env:   IMDS_CACHE_DIR  cache root (default: <repo>/tmp/cache)
#
# The cache entry is keyed by everything that changes the binaries: the source
# package version, the reflect2 package version, the Go version and a hash of
# this script. An unchanged key returns at once; a changed one rebuilds.
# The last line on stdout is the directory holding the binaries; everything
# else goes to stderr or to the build log in the cache.
set -euo pipefail
# Functions run in $(...) must stop at their first failing step too.
shopt -s inherit_errexit

SCRIPT_PATH=$(readlink -f "${BASH_SOURCE[0]}")
REPO_ROOT=$(cd "$(dirname "$SCRIPT_PATH")/.." && pwd)
CACHE_ROOT=${IMDS_CACHE_DIR:-$REPO_ROOT/tmp/cache}
KUBE_CACHE=$CACHE_ROOT/kube-apiserver

# Debian ships kubectl only as kubernetes-client, which clashes with the
# /usr/bin/kubectl of other vendors' packages; building it from the same tree
# costs a few minutes once and gives a client that matches the server exactly.
BINARIES=(kube-apiserver kubectl)

# make/rsync/dpkg-dev: the kubernetes build (rsync places the binaries) and
# `apt-get source`; etcd-server/openssl/curl/python3: tests/lib/kube.sh and
# its smoke test.
APT_PACKAGES=(golang-go golang-github-modern-go-reflect2-dev make rsync
	dpkg-dev etcd-server openssl curl python3 ca-certificates)
REFLECT2_SRC=/usr/share/gocode/src/github.com/modern-go/reflect2
DEB_SRC_FILE=/etc/apt/sources.list.d/imds-src.sources
DEB_SOURCES_FILE=/etc/apt/sources.list.d/debian.sources
DEB_LIST_FILE=/etc/apt/sources.list
DEB_SRC_LIST_FILE=/etc/apt/sources.list.d/imds-src.list

TMP_BUILD_DIR=""

log() {
	printf 'build-kube-apiserver: %s\n' "$*" >&2
}

die() {
	log "error: $*"
	exit 1
}

as_root() {
	if [[ $(id -u) -eq 0 ]]; then
		"$@"
	else
		sudo "$@"
	fi
}

missing_packages() {
	local pkg status
	for pkg in "${APT_PACKAGES[@]}"; do
		status=$(dpkg-query -W -f '${db:Status-Status}' "$pkg" 2>/dev/null || true)
		[[ $status == installed ]] || printf '%s\n' "$pkg"
	done
}

ensure_packages() {
	local missing
	mapfile -t missing < <(missing_packages)
	[[ ${#missing[@]} -eq 0 ]] && return 0
	log "installing ${missing[*]}"
	as_root apt-get update -q >&2
	as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
}

have_kubernetes_source() {
	apt-cache showsrc --only-source kubernetes 2>/dev/null | grep -q '^Version:'
}

# apt-get source needs a deb-src entry. Pitfall: it must be in the same form
# as the deb entries it mirrors: deb822 with Signed-By next to debian.sources
# (images since bookworm), one-line next to a classic sources.list.
ensure_deb_src() {
	have_kubernetes_source && return 0
	if [[ -r $DEB_SOURCES_FILE ]]; then
		log "adding deb-src entries in $DEB_SRC_FILE"
		sed -e 's/^Types:.*/Types: deb-src/' "$DEB_SOURCES_FILE" |
			as_root tee "$DEB_SRC_FILE" >/dev/null
	elif grep -q '^deb ' "$DEB_LIST_FILE" 2>/dev/null; then
		log "adding deb-src entries in $DEB_SRC_LIST_FILE"
		sed -n 's/^deb /deb-src /p' "$DEB_LIST_FILE" |
			as_root tee "$DEB_SRC_LIST_FILE" >/dev/null
	else
		die "no deb-src for 'kubernetes' and no deb entries to derive one from"
	fi
	as_root apt-get update -q >&2
	have_kubernetes_source || die "apt still has no source for 'kubernetes'"
}

# The highest version apt knows of (bookworm and bookworm-security may differ).
kubernetes_source_version() {
	local best="" v
	while read -r v; do
		if [[ -z $best ]] || dpkg --compare-versions "$v" gt "$best"; then
			best=$v
		fi
	done < <(apt-cache showsrc --only-source kubernetes | sed -n 's/^Version: //p')
	[[ -n $best ]] || die "cannot find the version of source package 'kubernetes'"
	printf '%s\n' "$best"
}

cache_key() {
	local src_version=$1 go_version reflect2_version script_hash
	go_version=$(go env GOVERSION)
	reflect2_version=$(dpkg-query -W -f '${Version}' golang-github-modern-go-reflect2-dev)
	script_hash=$(sha256sum "$SCRIPT_PATH" | cut -c1-12)
	printf 'src=%s\ngo=%s\nreflect2=%s\nscript=%s\narch=%s\n' \
		"$src_version" "$go_version" "$reflect2_version" "$script_hash" \
		"$(dpkg --print-architecture)"
}

entry_is_complete() {
	local entry=$1 bin
	[[ -f $entry/COMPLETE ]] || return 1
	for bin in "${BINARIES[@]}"; do
		[[ -x $entry/bin/$bin ]] || return 1
	done
}

cleanup_tmp() {
	if [[ -n $TMP_BUILD_DIR && -d $TMP_BUILD_DIR ]]; then
		rm -rf "$TMP_BUILD_DIR"
	fi
}

# Downloads the source package once per version into $KUBE_CACHE/src/<ver>;
# via a temporary directory so an interrupted download is never mistaken for
# a complete one.
fetch_source() {
	local version=$1 dest dl
	dest=$KUBE_CACHE/src/$version
	if [[ -f $dest/.complete ]]; then
		printf '%s\n' "$dest"
		return 0
	fi
	rm -rf "$dest" "$KUBE_CACHE"/src/.dl.*
	dl=$(mktemp -d "$KUBE_CACHE/src/.dl.XXXXXX")
	log "downloading source package kubernetes=$version"
	(cd "$dl" && apt-get source -q --download-only "kubernetes=$version") >&2
	touch "$dl/.complete"
	mv -T "$dl" "$dest"
	printf '%s\n' "$dest"
}

# Pitfall: the vendored github.com/modern-go/reflect2 1.0.1 relies on runtime
# internals that changed in Go 1.18 and crashes the apiserver on the first
# JSONPatch from a mutating webhook; Debian's 1.0.2 is API compatible. The
# version labels in go.mod/vendor/modules.txt stay at 1.0.1 so that `go build
# -mod=vendor` still finds them consistent; only the code changes.
swap_reflect2() {
	local tree=$1 dst=$1/vendor/github.com/modern-go/reflect2 f
	[[ -d $dst ]] || die "vendored reflect2 not found in $tree"
	[[ -f $REFLECT2_SRC/reflect2.go ]] || die "$REFLECT2_SRC missing"
	rm -rf "$dst"
	mkdir -p "$dst"
	for f in "$REFLECT2_SRC"/*; do
		if [[ -f $f && $f != *_test.go ]]; then
			cp "$f" "$dst/"
		fi
	done
	log "swapped vendored reflect2 for $(dpkg-query -W -f '${Version}' golang-github-modern-go-reflect2-dev)"
}

# Follows debian/rules: a GOPATH with k8s.io/kubernetes linked to the tree,
# CGO off, `make WHAT=...`. GOPROXY=off: nothing may be fetched. No GOFLAGS:
# go.mod says go 1.15, so -mod=vendor is already the default, and
# hack/lib/golang.sh would misparse a GOFLAGS without -tags= into a build tag.
run_make() {
	local tree=$1 what=() bin
	for bin in "${BINARIES[@]}"; do
		what+=("cmd/$bin")
	done
	mkdir -p "$tree/.go/src/k8s.io"
	ln -sfn ../../.. "$tree/.go/src/k8s.io/kubernetes"
	# GIT_CEILING_DIRECTORIES: the cache may sit inside this repository's
	# work tree; the version must come from the tarball's archive stamp, not
	# from our git repository.
	(cd "$tree" && env -u GOFLAGS -u GO111MODULE \
		GOPATH="$tree/.go" GOPROXY=off CGO_ENABLED=0 \
		GIT_CEILING_DIRECTORIES="$(dirname "$tree")" HOME="$tree/.home" \
		make WHAT="${what[*]}")
}

build_entry() {
	local src_dir=$1 key_text=$2 entry=$3 log_file=$4 tree bin
	rm -rf "$KUBE_CACHE"/.tmp.*
	TMP_BUILD_DIR=$(mktemp -d "$KUBE_CACHE/.tmp.XXXXXX")
	trap cleanup_tmp EXIT
	tree=$TMP_BUILD_DIR/tree
	log "building in $TMP_BUILD_DIR (log: $log_file)"
	# Started in the background and then waited for: a subshell tested by
	# `if`/`||` would run every step with `set -e` switched off.
	(
		printf '%s\n' "$key_text"
		date -u +'start %FT%TZ'
		dpkg-source -x "$src_dir"/kubernetes_*.dsc "$tree"
		swap_reflect2 "$tree"
		run_make "$tree"
		date -u +'end %FT%TZ'
	) >"$log_file" 2>&1 &
	if ! wait "$!"; then
		log "build failed; last lines of $log_file:"
		tail -n 60 "$log_file" >&2
		exit 1
	fi
	mkdir -p "$TMP_BUILD_DIR/entry/bin"
	for bin in "${BINARIES[@]}"; do
		cp "$tree/_output/bin/$bin" "$TMP_BUILD_DIR/entry/bin/$bin"
	done
	printf '%s\n' "$key_text" >"$TMP_BUILD_DIR/entry/inputs"
	mv "$log_file" "$TMP_BUILD_DIR/entry/build.log"
	touch "$TMP_BUILD_DIR/entry/COMPLETE"
	# An incomplete entry left by an older run is replaced, a complete one is
	# never half-overwritten: mv of a directory within one filesystem is atomic.
	rm -rf "$entry"
	mv -T "$TMP_BUILD_DIR/entry" "$entry"
	cleanup_tmp
}

main() {
	ensure_packages
	ensure_deb_src
	mkdir -p "$KUBE_CACHE/src" "$KUBE_CACHE/logs"

	local src_version key_text key entry log_file src_dir
	src_version=$(kubernetes_source_version)
	key_text=$(cache_key "$src_version")
	key=$src_version-$(printf '%s' "$key_text" | sha256sum | cut -c1-16)
	entry=$KUBE_CACHE/$key

	if entry_is_complete "$entry"; then
		printf '%s\n' "$entry/bin"
		return 0
	fi

	# One build at a time per cache; the second caller waits and then finds
	# the entry the first one made.
	exec 9>"$KUBE_CACHE/.lock"
	flock 9
	if entry_is_complete "$entry"; then
		printf '%s\n' "$entry/bin"
		return 0
	fi

	src_dir=$(fetch_source "$src_version")
	log_file=$KUBE_CACHE/logs/$key.log
	# Logs of failed builds of other inputs are of no further use.
	find "$KUBE_CACHE/logs" -name '*.log' ! -name "$key.log" -delete
	local start=$SECONDS
	build_entry "$src_dir" "$key_text" "$entry" "$log_file"
	log "built in $((SECONDS - start)) s: $entry"
	printf '%s\n' "$entry/bin"
}

main "$@"
