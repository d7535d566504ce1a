#!/usr/bin/env bash
# The examples of README.md and docs/ that can run here, run as written (issue
# 33 item 7), so they cannot rot: docs/sidecar.md's ETag example (the guest's
# address replaced by a local `imds-server serve`) must get its 304; README's
# `hack/generate-certs.sh --dry-run DIR` must write a pair that verifies; every
# target the Makefile documents with `## name:` is listed by `make help`.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
REPO=$(pwd)
# shellcheck source=tests/lib/tap.sh
. tests/lib/tap.sh

SERVER=${IMDS_SERVER:-$REPO/build/${IMDS_VARIANT:-debug}/imds-server}
T=$(mktemp -d "${IMDS_TEST_TMPDIR:-/tmp}/docs-examples.XXXXXX")
SPID=
cleanup() {
	[[ -n $SPID ]] && kill -KILL "$SPID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

# block FILE LINE-REGEX: the first ```sh block after the line matching REGEX
block() {
	awk -v re="$2" '$0 ~ re {seen=1} seen && /^```sh$/ {inb=1; next} inb && /^```$/ {exit} inb {print}' "$1"
}

IMDS_NAMESPACE=ns IMDS_VM_NAME=vm IMDS_USER_DATA='#cloud-config' "$SERVER" serve --listen 127.0.0.1:0 2>"$T/server.log" &
SPID=$!
port=
for _ in $(seq 300); do
	port=$(sed -n 's/.* on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$T/server.log" 2>/dev/null | head -n1)
	[[ -n $port ]] && break
	sleep 0.01
done
etag=$(block docs/sidecar.md '^no body, so a guest agent polling')
expect_eq "docs/sidecar.md: the ETag example is two curl lines" 2 "$(grep -c '^[a-z]*=*.*curl ' <<<"$etag")"
out=$(bash -c "${etag//http:\/\/169.254.169.254/http://127.0.0.1:$port}" 2>&1)
expect_eq "docs/sidecar.md: the ETag example, run as written, gets its 304" 304 "$out"
kill -TERM "$SPID" 2>/dev/null
wait "$SPID" 2>/dev/null
SPID=

gen=$(grep -o '^hack/generate-certs.sh --dry-run DIR' README.md | head -n1)
if [[ -n $gen ]] && ${gen/DIR/$T/certs} >/dev/null 2>&1 &&
	openssl verify -CAfile "$T/certs/ca.crt" "$T/certs/tls.crt" >/dev/null 2>&1; then
	ok "README: '$gen' writes a pair its CA verifies"
else
	not_ok "README: 'hack/generate-certs.sh --dry-run DIR' writes a pair its CA verifies" "${gen:-not in README.md}"
fi

help=$(make --no-print-directory help 2>&1)
missing=""
while read -r t; do
	grep -qE "^  $t( |$)|^  [a-z-]+ *= .*\\b$t\\b" <<<"$help" || missing+=" $t"
done < <(sed -n 's/^## \([a-z0-9-]*\):.*/\1/p' Makefile)
expect_eq "make help lists every target the Makefile documents (## name:)" "" "$missing"
tap_done
