#!/usr/bin/env bash
# imds-variants: debug asan (each build's binaries say their --version; the release itself is checked in debug)
# A release an operator can pin (issue 33 item 3): every binary's --version is
# `git describe` (what the Makefile stamps), so is the first line each one
# logs and the webhook's imds_webhook_build_info metric; `make release` writes
# manifests (manual, cert-manager, pod-mode) with every image pinned (tag or
# digest: the webhook's, the sidecar's and, but in pod-mode, the node agent's) that
# validate offline and on the API server, and refuses a dirty or "dev" version; the registry
# overlay example pins the three images; the e2e KubeVirt pin is the release our
# fixtures come from; the LICENSE is Apache-2.0.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
REPO=$(pwd)
# shellcheck source=tests/lib/tap.sh
. tests/lib/tap.sh
# shellcheck source=tests/lib/npm.sh
. tests/lib/npm.sh
# shellcheck source=tests/lib/kube.sh
. tests/lib/kube.sh

VARIANT=${IMDS_VARIANT:-debug}
SERVER=${IMDS_SERVER:-$REPO/build/$VARIANT/imds-server}
WH=$REPO/build/$VARIANT/imds-webhook
WORK=$(mktemp -d "${IMDS_TEST_TMPDIR:-/tmp}/deploy-release.XXXXXX")
WPID=
SPID=
cleanup() {
	[[ -n $WPID ]] && kill -KILL "$WPID" 2>/dev/null
	[[ -n $SPID ]] && kill -KILL "$SPID" 2>/dev/null
	kube_stop
	rm -rf "$WORK"
}
trap cleanup EXIT

# What the Makefile stamps into the binaries (its VERSION, the same command).
WANT=$(git -C "$REPO" describe --tags --always --dirty 2>/dev/null || echo dev)

# --- --version of every binary of this build
bins=("$SERVER" "$WH" "$REPO/build/$VARIANT/imds-node")
if [[ $VARIANT == debug ]]; then
	for b in imds-server imds-node; do
		if [[ -x build/static/$b ]]; then bins+=("$REPO/build/static/$b"); fi
	done
fi
for b in "${bins[@]}"; do
	expect_eq "${b#"$REPO"/} --version is git describe" "$(basename "$b") $WANT" "$("$b" --version 2>&1)"
done

# --- the first log line names the version
IMDS_NAMESPACE=ns IMDS_VM_NAME=vm "$SERVER" serve --listen 127.0.0.1:0 2>"$WORK/server.log" &
SPID=$!
for _ in $(seq 300); do
	grep -q ' on 127\.0\.0\.1:' "$WORK/server.log" 2>/dev/null && break
	sleep 0.01
done
kill -TERM "$SPID" 2>/dev/null
wait "$SPID" 2>/dev/null
SPID=
expect_eq "imds-server serve: the first log line is its version" "imds-server info: imds-server $WANT (serve)" \
	"$(head -n1 "$WORK/server.log" | cut -d' ' -f2-)"

hack/generate-certs.sh --dry-run "$WORK/certs" >/dev/null 2>&1
"$WH" --listen 127.0.0.1:0 --tls-cert-file "$WORK/certs/tls.crt" --tls-key-file "$WORK/certs/tls.key" \
	--imds-image kubevirt-imds-server:dev 2>"$WORK/wh.log" &
WPID=$!
port=
for _ in $(seq 300); do
	port=$(sed -n 's/.* on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$WORK/wh.log" 2>/dev/null | head -n1)
	[[ -n $port ]] && break
	sleep 0.01
done
expect_eq "imds-webhook: the first log line is its version" "imds-webhook info: imds-webhook $WANT" \
	"$(head -n1 "$WORK/wh.log" | cut -d' ' -f2-)"
metrics=$(curl -sS --noproxy '*' --max-time 5 --cacert "$WORK/certs/ca.crt" \
	--resolve "imds-webhook.kubevirt-imds.svc:${port:-1}:127.0.0.1" \
	"https://imds-webhook.kubevirt-imds.svc:${port:-1}/metrics" 2>&1)
expect_eq "imds-webhook /metrics: imds_webhook_build_info carries the version" \
	"imds_webhook_build_info{version=\"$WANT\"} 1" "$(grep '^imds_webhook_build_info' <<<"$metrics")"
kill -TERM "$WPID" 2>/dev/null
wait "$WPID" 2>/dev/null
WPID=

if [[ $VARIANT != debug ]]; then
	ok "release manifests (variant-independent, checked in debug)"
	tap_done
	exit 0
fi

# --- the LICENSE, the e2e pin
expect_eq "LICENSE: the Apache License 2.0" "Apache License|Version 2.0, January 2004" \
	"$(sed -n '1,2p' LICENSE | sed 's/^ *//' | paste -sd'|')"
fixtures=$(cd tests/fixtures && ls -d kubevirt-v* 2>/dev/null)
expect_eq "tests/e2e/run.sh pins the KubeVirt release of tests/fixtures" "KUBEVIRT_VERSION=${fixtures#kubevirt-}" \
	"$(grep -E '^KUBEVIRT_VERSION=' tests/e2e/run.sh)"
expect_eq "CHANGELOG.md names this release line" "# Changelog" "$(head -n1 CHANGELOG.md)"

# --- make release (kubectl of hack/build-kube-apiserver.sh renders)
if ! kube_find_binaries >"$WORK/find.log" 2>&1; then
	not_ok "kubectl from hack/build-kube-apiserver.sh" "$(tail -n 20 "$WORK/find.log")"
	tap_done
	exit 1
fi
# renders only (kustomize, make release): no cluster
K=$KUBE_BIN_DIR/kubectl # check-context: ignore
REL=v9.8.7
if make --no-print-directory release VERSION=$REL RELEASE_REGISTRY=registry.example/imds \
	RELEASE_DIR="$WORK/dist" KUBECTL="$K" >"$WORK/release.log" 2>&1; then
	ok "make release VERSION=$REL RELEASE_REGISTRY=registry.example/imds"
else
	not_ok "make release VERSION=$REL RELEASE_REGISTRY=registry.example/imds" "$(cat "$WORK/release.log")"
fi
D=$WORK/dist/kubevirt-imds-$REL
for o in manual cert-manager pod-mode; do
	f=$D/kubevirt-imds-$o.yaml
	expect_eq "release $o: the webhook image and --imds-image pinned to $REL, no :dev left" \
		"image: registry.example/imds/kubevirt-imds-webhook:$REL|--imds-image=registry.example/imds/kubevirt-imds-server:$REL|0" \
		"$(grep -o 'image: .*webhook.*' "$f")|$(grep -o -- '--imds-image=.*' "$f")|$(grep -c ':dev' "$f")"
done
for o in manual cert-manager; do
	expect_eq "release $o: the webhook in its default (agent) network mode, the DaemonSet's image pinned to $REL" \
		"|image: registry.example/imds/kubevirt-imds-node:$REL" \
		"$(grep -o -- '--network-mode=.*' "$D/kubevirt-imds-$o.yaml")|$(grep -o 'image: .*kubevirt-imds-node.*' "$D/kubevirt-imds-$o.yaml")"
done
expect_eq "release pod-mode: the webhook with --network-mode=pod, no node agent" \
	"--network-mode=pod|0" \
	"$(grep -o -- '--network-mode=.*' "$D/kubevirt-imds-pod-mode.yaml")|$(grep -c 'imds-node' "$D/kubevirt-imds-pod-mode.yaml")"
expect_eq "release: SHA256SUMS lists the three files" \
	"kubevirt-imds-cert-manager.yaml|kubevirt-imds-manual.yaml|kubevirt-imds-pod-mode.yaml" \
	"$(awk '{print $2}' "$D/SHA256SUMS" | sort | paste -sd'|')"
check "release: SHA256SUMS verifies the three files" bash -c "cd '$D' && sha256sum -c --quiet SHA256SUMS"
DIG=sha256:$(printf 'x' | sha256sum | cut -d' ' -f1)
if make --no-print-directory release VERSION=$REL RELEASE_REGISTRY=registry.example/imds \
	RELEASE_DIR="$WORK/dig" KUBECTL="$K" SERVER_DIGEST="$DIG" WEBHOOK_DIGEST="$DIG" NODE_DIGEST="$DIG" >"$WORK/dig.log" 2>&1 &&
	grep -q "image: registry.example/imds/kubevirt-imds-webhook@$DIG\$" "$WORK/dig/kubevirt-imds-$REL/kubevirt-imds-manual.yaml" &&
	grep -q -- "--imds-image=registry.example/imds/kubevirt-imds-server@$DIG\$" "$WORK/dig/kubevirt-imds-$REL/kubevirt-imds-manual.yaml" &&
	grep -q "image: registry.example/imds/kubevirt-imds-node@$DIG\$" "$WORK/dig/kubevirt-imds-$REL/kubevirt-imds-manual.yaml" &&
	! grep -q ":$REL\$" "$WORK/dig/kubevirt-imds-$REL/kubevirt-imds-manual.yaml"; then
	ok "release with SERVER_DIGEST/WEBHOOK_DIGEST/NODE_DIGEST: all three pinned by digest"
else
	not_ok "release with SERVER_DIGEST/WEBHOOK_DIGEST/NODE_DIGEST: all three pinned by digest" "$(cat "$WORK/dig.log")"
fi
out=$(make --no-print-directory release VERSION=$REL RELEASE_REGISTRY=registry.example/imds \
	RELEASE_DIR="$WORK/bad" KUBECTL="$K" NODE_DIGEST=sha256:abc 2>&1)
expect_eq "release refuses a malformed NODE_DIGEST" 1 "$(grep -c "^release: digest 'sha256:abc'" <<<"$out")"
for bad in dev v1.2.3-4-gabcdef-dirty; do
	if out=$(make --no-print-directory release VERSION=$bad RELEASE_REGISTRY=r.example/x \
		RELEASE_DIR="$WORK/bad" KUBECTL="$K" 2>&1); then
		not_ok "release refuses version $bad" "$out"
	else
		expect_eq "release refuses version $bad, saying why" 1 "$(grep -c '^release: --version' <<<"$out")"
	fi
done
out=$(make --no-print-directory release VERSION=$REL RELEASE_REGISTRY= RELEASE_DIR="$WORK/bad" KUBECTL="$K" 2>&1)
expect_eq "release refuses an empty RELEASE_REGISTRY" 1 "$(grep -c '^release: --registry' <<<"$out")"

# --- the registry overlay example
if "$K" kustomize deploy/overlays/registry-example >"$WORK/registry.yaml" 2>"$WORK/registry.err"; then
	expect_eq "deploy/overlays/registry-example: the three images from the registry at a tag" \
		"image: registry.example.com/kubevirt-imds/kubevirt-imds-webhook:v0.1.0|--imds-image=registry.example.com/kubevirt-imds/kubevirt-imds-server:v0.1.0|image: registry.example.com/kubevirt-imds/kubevirt-imds-node:v0.1.0" \
		"$(grep -o 'image: .*webhook.*' "$WORK/registry.yaml")|$(grep -o -- '--imds-image=.*' "$WORK/registry.yaml")|$(grep -o 'image: .*kubevirt-imds-node.*' "$WORK/registry.yaml")"
else
	not_ok "kubectl kustomize deploy/overlays/registry-example" "$(cat "$WORK/registry.err")"
fi

# --- the release's manifests, offline (kubernetes-models, design policy) ...
npm_cached "$REPO/tests/lib/manifests" npm ||
	not_ok "npm ci of tests/lib/manifests into the cache" "$NPM_ERR"
MODULES=$NPM_DIR/node_modules
for o in manual cert-manager pod-mode; do
	if out=$(node tests/lib/validate_manifests.mjs --modules "$MODULES" --policy "$o" \
		"$D/kubevirt-imds-$o.yaml" 2>&1); then
		ok "release $o: every object validates, the design policy holds ($(grep -c '^ok ' <<<"$out") checks)"
	else
		not_ok "release $o: every object validates, the design policy holds" "$(grep -v '^ok ' <<<"$out")"
	fi
done

# --- ... and on the API server (server-side dry-run; 1.20: the PDB as v1beta1)
if ! kube_start "$WORK" >"$WORK/kube-start.log" 2>&1; then
	not_ok "kube-apiserver and etcd started" "$(tail -n 30 "$WORK/kube-start.log")"
	tap_done
	exit 1
fi
kctl create namespace kubevirt-imds >/dev/null
kctl label namespace kubevirt-imds kubernetes.io/metadata.name=kubevirt-imds >/dev/null
kctl apply -f - >/dev/null <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: certificates.cert-manager.io}
spec:
  group: cert-manager.io
  scope: Namespaced
  names: {kind: Certificate, plural: certificates, singular: certificate}
  versions:
    - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: issuers.cert-manager.io}
spec:
  group: cert-manager.io
  scope: Namespaced
  names: {kind: Issuer, plural: issuers, singular: issuer}
  versions:
    - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
EOF
kctl wait --for condition=established --timeout=60s crd --all >/dev/null
# The agent's namespace must exist for its namespaced objects' dry-run.
kctl create namespace kubevirt-imds-node >/dev/null
for o in manual cert-manager pod-mode; do
	sed 's#^apiVersion: policy/v1$#apiVersion: policy/v1beta1#' "$D/kubevirt-imds-$o.yaml" >"$WORK/$o-120.yaml"
	if out=$(kctl apply --dry-run=server --validate=true -f "$WORK/$o-120.yaml" 2>&1); then
		ok "release $o: server-side dry-run ($(grep -c 'server dry run' <<<"$out") objects)"
	else
		not_ok "release $o: server-side dry-run" "$out"
	fi
done
tap_done
