#!/usr/bin/env bash
# The manifests of a release (make release): deploy/overlays/manual,
# deploy/overlays/cert-manager (both with the node agent, the default) and
# deploy/overlays/pod-mode rendered with `kubectl kustomize`, every image
# reference pinned to the release — REGISTRY/kubevirt-imds-webhook, the
# --imds-image= argument REGISTRY/kubevirt-imds-server and (but pod-mode) the
# DaemonSet's REGISTRY/kubevirt-imds-node, by the version's tag, or by digest
# when one is given — and nothing left on the mutable :dev.
#
#   hack/release.sh --version v0.1.0 --registry quay.io/example [--out dist]
#                   [--server-digest sha256:...] [--webhook-digest sha256:...]
#                   [--node-digest sha256:...]
#
# Writes OUT/kubevirt-imds-VERSION/{kubevirt-imds-manual.yaml,
# kubevirt-imds-cert-manager.yaml,kubevirt-imds-pod-mode.yaml,SHA256SUMS}. Refuses a version that is
# not a release (empty, "dev", a dirty tree's "-dirty") unless --allow-dirty.
# KUBECTL (default kubectl) renders; it reaches no cluster.
set -euo pipefail
cd "$(dirname "$0")/.." || exit 1

VERSION=""
REGISTRY=""
OUT=dist
SERVER_DIGEST=""
WEBHOOK_DIGEST=""
NODE_DIGEST=""
ALLOW_DIRTY=0
KUBECTL=${KUBECTL:-kubectl}

die() {
	printf 'release: %s\n' "$*" >&2
	exit 1
}
usage() {
	sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-0}"
}

while (($#)); do
	case $1 in
	--version) VERSION=${2:?--version needs a value}; shift 2 ;;
	--registry) REGISTRY=${2-}; shift $(($# > 1 ? 2 : 1)) ;;
	--out) OUT=${2:?--out needs a directory}; shift 2 ;;
	--server-digest) SERVER_DIGEST=${2:?}; shift 2 ;;
	--webhook-digest) WEBHOOK_DIGEST=${2:?}; shift 2 ;;
	--node-digest) NODE_DIGEST=${2:?}; shift 2 ;;
	--allow-dirty) ALLOW_DIRTY=1; shift ;;
	-h | --help) usage 0 ;;
	*) printf 'release: unknown argument %s\n' "$1" >&2; usage 2 ;;
	esac
done

[[ -n $VERSION && $VERSION != dev ]] || die "--version: a release needs a version (git describe), not '${VERSION:-}'"
[[ $VERSION =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] ||
	die "--version '$VERSION' is not a valid image tag"
if [[ $VERSION == *-dirty && $ALLOW_DIRTY != 1 ]]; then
	die "--version '$VERSION': the tree has uncommitted changes (commit, or --allow-dirty)"
fi
[[ -n $REGISTRY ]] || die "--registry: where the images are pushed (e.g. quay.io/example)"
[[ $REGISTRY =~ ^[a-z0-9]([a-z0-9._:/-]*[a-z0-9])?$ ]] || die "--registry '$REGISTRY' is not a registry path"
for d in "$SERVER_DIGEST" "$WEBHOOK_DIGEST" "$NODE_DIGEST"; do
	[[ -z $d || $d =~ ^sha256:[0-9a-f]{64}$ ]] || die "digest '$d' is not sha256:<64 hex>"
done

ref() { # name digest
	if [[ -n $2 ]]; then
		printf '%s/%s@%s' "$REGISTRY" "$1" "$2"
	else
		printf '%s/%s:%s' "$REGISTRY" "$1" "$VERSION"
	fi
}
WEBHOOK_REF=$(ref kubevirt-imds-webhook "$WEBHOOK_DIGEST")
SERVER_REF=$(ref kubevirt-imds-server "$SERVER_DIGEST")
NODE_REF=$(ref kubevirt-imds-node "$NODE_DIGEST")

DEST=$OUT/kubevirt-imds-$VERSION
mkdir -p "$DEST"
for overlay in manual cert-manager pod-mode; do
	file=$DEST/kubevirt-imds-$overlay.yaml
	rendered=$("$KUBECTL" kustomize "deploy/overlays/$overlay") ||
		die "kubectl kustomize deploy/overlays/$overlay failed"
	# The base names exactly these two references (deploy/base), deploy/node
	# the third: replace them whole, then check that nothing else names an
	# unpinned image.
	{
		printf '# kubevirt-imds %s (%s): kubectl apply -f this file\n' "$VERSION" "$overlay"
		printf '%s\n' "$rendered" |
			sed -e "s#^\\( *image: \\)kubevirt-imds-webhook:dev\$#\\1$WEBHOOK_REF#" \
				-e "s#--imds-image=kubevirt-imds-server:dev\$#--imds-image=$SERVER_REF#" \
				-e "s#^\\( *image: \\)kubevirt-imds-node:dev\$#\\1$NODE_REF#"
	} >"$file.tmp"
	grep -q "image: $WEBHOOK_REF\$" "$file.tmp" || die "$overlay: the webhook image was not pinned"
	grep -q -- "--imds-image=$SERVER_REF\$" "$file.tmp" || die "$overlay: --imds-image was not pinned"
	if [[ $overlay != pod-mode ]]; then
		grep -q "image: $NODE_REF\$" "$file.tmp" || die "$overlay: the node agent's image was not pinned"
	fi
	if grep -nE ':dev$|kubevirt-imds-(server|webhook|node)[:@][^ ]*$' "$file.tmp" |
		grep -v -F -e "$WEBHOOK_REF" -e "$SERVER_REF" -e "$NODE_REF"; then
		die "$overlay: an unpinned image reference is left (above)"
	fi
	mv "$file.tmp" "$file"
done
(cd "$DEST" && sha256sum kubevirt-imds-manual.yaml kubevirt-imds-cert-manager.yaml kubevirt-imds-pod-mode.yaml >SHA256SUMS)
printf 'release: %s: webhook %s, sidecar %s, node agent %s\n' "$DEST" "$WEBHOOK_REF" "$SERVER_REF" "$NODE_REF" >&2
printf '%s\n' "$DEST"
