# oldbuild.sh — an earlier commit's imds-server and admission_cli (the debug
# build), for the cross-version suites (sourced; needs REPO).  Built once per
# commit into the cache ($IMDS_CACHE_DIR, else tmp/cache): `git archive` of the
# commit into a temporary folder beside the cache entry, `make -j2` of the two
# binaries there (the Makefile of that commit, its VERSION the commit's
# `git describe`), renamed into place only when both were built (COMPLETE), so
# a killed run leaves nothing that looks built; one build at a time (flock).
#   old_build COMMIT   OLD_DIR=<cache>/imds-old-<full hash>-<key> holding
#                      imds-server and admission_cli; on failure returns 1,
#                      OLD_ERR says why (no such commit: a shallow clone; or
#                      the build log's tail)
# The key is what else changes the binaries: this file, gcc's version and
# the architecture.
# shellcheck shell=bash

old_build() {
	local rev=$1 root full key tmp ver
	OLD_DIR='' OLD_ERR=''
	root=${IMDS_CACHE_DIR:-$REPO/tmp/cache}
	if ! full=$(git -C "$REPO" rev-parse --verify --quiet "$rev^{commit}"); then
		local shallow
		shallow=$(git -C "$REPO" rev-parse --is-shallow-repository 2>/dev/null || echo "not a git checkout")
		# shellcheck disable=SC2034 # read by the caller
		OLD_ERR="commit $rev is not in this repository (shallow: $shallow); fetch it (git fetch --unshallow) or name another with IMDS_INTEROP_OLD"
		return 1
	fi
	key=$({
		cat "${BASH_SOURCE[0]}"
		gcc --version | head -n 1
		uname -m
	} | sha256sum | cut -c1-12)
	OLD_DIR=$root/imds-old-$full-$key
	[[ -f $OLD_DIR/COMPLETE ]] && return 0
	mkdir -p "$root"
	exec {lock}>"$root/imds-old.lock"
	flock "$lock"
	if [[ -f $OLD_DIR/COMPLETE ]]; then
		exec {lock}>&-
		return 0
	fi
	tmp=$(mktemp -d "$root/imds-old-tmp.XXXXXX")
	ver=$(git -C "$REPO" describe --always "$full")
	if git -C "$REPO" archive --format=tar "$full" | tar -x -C "$tmp" &&
		make -C "$tmp" -j2 --no-print-directory VARIANT=debug VERSION="$ver" \
			build/debug/imds-server build/debug/tests/admission_cli >"$tmp/build.log" 2>&1; then
		mkdir "$tmp/out"
		cp "$tmp/build/debug/imds-server" "$tmp/build/debug/tests/admission_cli" "$tmp/build.log" "$tmp/out/"
		echo "$full $ver" >"$tmp/out/COMMIT"
		touch "$tmp/out/COMPLETE"
		rm -rf "$OLD_DIR"
		mv -T "$tmp/out" "$OLD_DIR"
		rm -rf "$tmp"
		exec {lock}>&-
		return 0
	fi
	# shellcheck disable=SC2034 # read by the caller
	OLD_ERR="build of $ver failed: $(tail -n 20 "$tmp/build.log" 2>/dev/null)"
	rm -rf "$tmp"
	OLD_DIR=
	exec {lock}>&-
	return 1
}
