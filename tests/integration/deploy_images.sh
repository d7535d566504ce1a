#!/usr/bin/env bash
# imds-variants: debug (variant-independent: tests/run.sh runs it in one build)
# Dockerfile, Dockerfile.webhook and Dockerfile.node (issues 5, 29), checked
# without a Docker engine: their shape (build stage from Debian packages only;
# the server and the node agent each alone on scratch; the webhook on
# distroless static as UID 65532; nothing fetched but apt), and their build steps replayed in two clean copies of exactly what
# they COPY (Makefile, src/): static binaries, bit-for-bit identical, that
# print the version passed in and — for the webhook — serve TLS.
# Variant-independent: run in debug only.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
REPO=$(pwd)
# shellcheck source=tests/lib/tap.sh
. tests/lib/tap.sh

WORK=$(mktemp -d "${IMDS_TEST_TMPDIR:-/tmp}/deploy-images.XXXXXX")
WPID=
cleanup() {
	[[ -n $WPID ]] && kill -KILL "$WPID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

# --- static shape of the Dockerfiles
stages() { grep -E '^FROM ' "$1"; }
last_stage() { awk '/^FROM /{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$1"; }
expect_eq "Dockerfile: final stage FROM scratch" "FROM scratch" "$(stages Dockerfile | tail -n1)"
expect_eq "Dockerfile: final stage copies only /imds-server" "COPY --from=build /imds-server /imds-server" \
	"$(last_stage Dockerfile | grep -E '^(COPY|ADD|RUN)')"
expect_eq "Dockerfile.node: final stage FROM scratch" "FROM scratch" "$(stages Dockerfile.node | tail -n1)"
expect_eq "Dockerfile.node: final stage copies only /imds-node" "COPY --from=build /imds-node /imds-node" \
	"$(last_stage Dockerfile.node | grep -E '^(COPY|ADD|RUN)')"
expect_eq "Dockerfile.node: ENTRYPOINT /imds-node (deploy/node passes only arguments)" '["/imds-node"]' \
	"$(last_stage Dockerfile.node | sed -n 's/^ENTRYPOINT //p')"
expect_eq "Dockerfile.webhook: final stage on distroless static (nonroot)" \
	"FROM \${RUNTIME_IMAGE}|gcr.io/distroless/static-debian12:nonroot" \
	"$(stages Dockerfile.webhook | tail -n1)|$(sed -n 's/^ARG RUNTIME_IMAGE=//p' Dockerfile.webhook)"
expect_eq "Dockerfile.webhook: USER 65532, only the binary copied" \
	"COPY --from=build /imds-webhook /imds-webhook|USER 65532:65532" \
	"$(last_stage Dockerfile.webhook | grep -E '^(COPY|ADD|RUN|USER)' | paste -sd'|')"
for f in Dockerfile Dockerfile.webhook Dockerfile.node; do
	expect_eq "$f: build stage from Debian bookworm" "debian:bookworm-slim" "$(sed -n 's/^ARG BUILD_IMAGE=//p' "$f")"
	if grep -Eqi '(^ADD|curl|wget|git clone|https?://)' "$f"; then
		not_ok "$f: downloads nothing but Debian packages" "$(grep -Eni '(^ADD|curl|wget|git clone|https?://)' "$f")"
	else
		ok "$f: downloads nothing but Debian packages"
	fi
	while IFS= read -r src; do
		if grep -qx "${src%/}" .dockerignore; then
			not_ok "$f: COPY $src is not excluded by .dockerignore"
		fi
	done < <(sed -n 's/^COPY \([^-][^ ]*\) .*/\1/p' "$f")
done
for f in Dockerfile Dockerfile.webhook Dockerfile.node; do
	# shellcheck disable=SC2016 # the Dockerfile's own ${VERSION}, literally
	expect_eq "$f: final stage labelled with the version, revision and licence (OCI)" \
		'org.opencontainers.image.version="${VERSION}"|org.opencontainers.image.revision="${REVISION}"|org.opencontainers.image.licenses="Apache-2.0"' \
		"$(last_stage "$f" | grep -oE 'org.opencontainers.image.(version|revision|licenses)="[^"]*"' | paste -sd'|')"
done
for f in Dockerfile Dockerfile.node; do
	expect_eq "$f: build stage installs musl-tools and node-llhttp" 2 \
		"$(grep -cE 'musl-tools|node-llhttp' <<<"$(grep -o 'musl-tools\|node-llhttp' "$f" | sort -u)")"
done
# The Makefile target each Dockerfile's build stage runs is the one replayed below.
# shellcheck disable=SC2016 # the Dockerfile's own ${VERSION}, literally
expect_eq "Dockerfile.node: builds the static variant's node target" "1" \
	"$(grep -c 'make --no-print-directory VARIANT=static VERSION="${VERSION}" node' Dockerfile.node)"

# --- the build steps, in clean copies of the build context
build_copy() { # dir
	mkdir -p "$1"
	cp "$REPO/Makefile" "$1/" && cp -r "$REPO/src" "$1/" &&
		(cd "$1" && make --no-print-directory VARIANT=static VERSION=v0-test server node &&
			make --no-print-directory VERSION=v0-test static-webhook-bin) >"$1.log" 2>&1
}
# The two copies side by side (one make each, as the Dockerfiles run it; CI
# has two cores): 43 s one after the other.
build_copy "$WORK/a" &
pa=$!
build_copy "$WORK/b" &
pb=$!
wait "$pa"
sa=$?
wait "$pb"
sb=$?
if ((sa == 0 && sb == 0)); then
	ok "Dockerfile build steps succeed in a copy of Makefile + src/ (no .git)"
else
	not_ok "Dockerfile build steps succeed in a copy of Makefile + src/ (no .git)" "$(tail -n 30 "$WORK"/*.log)"
	tap_done
	exit 1
fi
for bin in build/static/imds-server build/static/imds-node build/static-webhook/imds-webhook; do
	info=$(file -b "$WORK/a/$bin")
	if [[ $info == *"statically linked"* && $info == *stripped* && $info != *"not stripped"* ]]; then
		ok "$bin: static, stripped"
	else
		not_ok "$bin: static, stripped" "$info"
	fi
	if cmp -s "$WORK/a/$bin" "$WORK/b/$bin"; then
		ok "$bin: two builds are bit-for-bit identical"
	else
		not_ok "$bin: two builds are bit-for-bit identical"
	fi
done
expect_eq "imds-server version" "v0-test" "$("$WORK/a/build/static/imds-server" version 2>&1 | grep -o 'v0-test')"
expect_eq "imds-node version" "imds-node v0-test" "$("$WORK/a/build/static/imds-node" version 2>&1)"
expect_eq "imds-webhook --version" "imds-webhook v0-test" "$("$WORK/a/build/static-webhook/imds-webhook" --version 2>&1)"

# The static webhook serves TLS (no NSS, no shared libraries, as in distroless),
# with a certificate from hack/generate-certs.sh, as a non-root user when root.
hack/generate-certs.sh --dry-run "$WORK/certs" >/dev/null 2>&1
chmod 0755 "$WORK" "$WORK/certs" && chmod 0644 "$WORK/certs/tls.key"
runas=()
if ((EUID == 0)) && command -v setpriv >/dev/null; then
	runas=(setpriv --reuid=65532 --regid=65532 --clear-groups)
	# (only when UID 65532 can reach the files: the work dir's parents may be private)
	"${runas[@]}" test -r "$WORK/certs/tls.key" -a -x "$WORK/a/build/static-webhook/imds-webhook" ||
		runas=()
fi
"${runas[@]}" env -i "$WORK/a/build/static-webhook/imds-webhook" --listen 127.0.0.1:0 \
	--tls-cert-file "$WORK/certs/tls.crt" --tls-key-file "$WORK/certs/tls.key" \
	--imds-image kubevirt-imds-server:dev 2>"$WORK/wh.log" &
WPID=$!
port=
for _ in $(seq 300); do
	port=$(sed -n 's/.* on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$WORK/wh.log" 2>/dev/null | head -n1)
	[[ -n $port ]] && break
	sleep 0.01
done
out=$(curl -sS --noproxy '*' --max-time 5 --cacert "$WORK/certs/ca.crt" \
	--resolve "imds-webhook.kubevirt-imds.svc:${port:-1}:127.0.0.1" \
	"https://imds-webhook.kubevirt-imds.svc:${port:-1}/readyz" 2>&1)
expect_eq "static webhook${runas:+ (UID 65532)}: /readyz over TLS, verified with the generated CA" "ok" \
	"$(tr '[:upper:]' '[:lower:]' <<<"$out" | tr -d '\r\n')"
kill -TERM "$WPID" 2>/dev/null
wait "$WPID" 2>/dev/null
WPID=
tap_done
