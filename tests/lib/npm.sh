# npm.sh — node modules for test tooling, installed once per lock file into
# the cache ($IMDS_CACHE_DIR, else tmp/cache): `npm ci` in a temporary folder
# beside the cache entry, renamed into place only when it finished (COMPLETE),
# so a killed run leaves nothing that looks installed.
#   npm_cached LOCK_DIR PREFIX   NPM_DIR=<cache>/PREFIX-<hash of the lock>;
#                                on failure returns 1, NPM_ERR the log's tail
# shellcheck shell=bash

npm_cached() {
	local lock_dir=$1 prefix=$2 root hash tmp
	root=${IMDS_CACHE_DIR:-$REPO/tmp/cache}
	hash=$(cat "$lock_dir/package.json" "$lock_dir/package-lock.json" | sha256sum | cut -c1-16)
	# shellcheck disable=SC2034 # read by the caller
	NPM_DIR=$root/$prefix-$hash
	NPM_ERR=
	[[ -f $NPM_DIR/COMPLETE ]] && return 0
	mkdir -p "$root"
	tmp=$(mktemp -d "$root/npm-tmp.XXXXXX")
	cp "$lock_dir/package.json" "$lock_dir/package-lock.json" "$tmp/"
	if (cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund >npm.log 2>&1); then
		touch "$tmp/COMPLETE"
		rm -rf "$NPM_DIR"
		mv "$tmp" "$NPM_DIR"
		return 0
	fi
	# shellcheck disable=SC2034 # read by the caller
	NPM_ERR=$(tail -n 20 "$tmp/npm.log")
	rm -rf "$tmp"
	return 1
}
