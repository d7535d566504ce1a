#!/usr/bin/env bash
# imds-variants: debug (variant-independent: tests/run.sh runs it in one build)
# deploy/ (issues 5, 29): the kustomize base (the webhook), deploy/node (the
# node agent) and the overlays (manual and cert-manager: both; pod-mode: the
# webhook with --network-mode=pod, no agent), rendered with the
# kubectl of hack/build-kube-apiserver.sh, and the example VMs of deploy/test/
# validate offline (npm kubernetes-models 4.x + js-yaml, installed into a
# cache directory keyed by the package-lock, never into the repository), obey
# the design (failurePolicy, selectors, security context ...), pass a
# server-side dry-run against a real kube-apiserver, and
# hack/generate-certs.sh installs a working Secret and caBundle there.
# Manifests do not depend on the build variant: tests/run.sh runs it once
# (the tag on line 2).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
REPO=$(pwd)
# shellcheck source=tests/lib/tap.sh
. tests/lib/tap.sh
# shellcheck source=tests/lib/npm.sh
. tests/lib/npm.sh
# shellcheck source=tests/lib/kube.sh
. tests/lib/kube.sh

WORK=$(mktemp -d "${IMDS_TEST_TMPDIR:-/tmp}/deploy-manifests.XXXXXX")
cleanup() {
	kube_stop
	rm -rf "$WORK"
}
trap cleanup EXIT

# --- node modules, cached by the hash of the lock file
if ! npm_cached "$REPO/tests/lib/manifests" npm; then
	not_ok "npm ci of tests/lib/manifests into the cache" "$NPM_ERR"
	tap_done
	exit 1
fi
ok "kubernetes-models and js-yaml installed (cache ${NPM_DIR#"$REPO"/})"
MODULES=$NPM_DIR/node_modules

validate() { # name args... : the validator's report as one TAP line
	local name=$1 out
	shift
	if out=$(node tests/lib/validate_manifests.mjs --modules "$MODULES" "$@" 2>&1); then
		ok "$name ($(grep -c '^ok ' <<<"$out") objects and checks)"
	else
		not_ok "$name" "$(grep -v '^ok ' <<<"$out")"
	fi
}
# expect_invalid NAME FILE ARGS...: the validator must reject FILE
expect_invalid() {
	local name=$1 file=$2 out
	shift 2
	if out=$(node tests/lib/validate_manifests.mjs --modules "$MODULES" "$@" "$file" 2>&1); then
		not_ok "$name" "accepted:" "$out"
	else
		ok "$name"
	fi
}

if ! kube_find_binaries >"$WORK/find.log" 2>&1; then
	not_ok "kubectl from hack/build-kube-apiserver.sh" "$(tail -n 20 "$WORK/find.log")"
	tap_done
	exit 1
fi
KUBECTL_BIN=$KUBE_BIN_DIR/kubectl

# --- render
for o in base overlays/cert-manager overlays/manual overlays/monitoring node overlays/pod-mode overlays/match-conditions; do
	name=$(basename "$o")
	if "$KUBECTL_BIN" kustomize "deploy/$o" >"$WORK/$name.yaml" 2>"$WORK/$name.err"; then
		ok "kubectl kustomize deploy/$o"
	else
		not_ok "kubectl kustomize deploy/$o" "$(cat "$WORK/$name.err")"
	fi
done

# The images as the Makefile tags them (IMAGE_TAG=dev) and as hack/release.sh
# pins them: each through kustomize `images:`, the sidecar's as --imds-image.
for name in manual cert-manager match-conditions; do
	expect_eq "deploy/$name: the three image references are the Makefile's :dev ones" \
		"--imds-image=kubevirt-imds-server:dev|image: kubevirt-imds-node:dev|image: kubevirt-imds-webhook:dev" \
		"$(grep -oE -- '--imds-image=.*|image: .*' "$WORK/$name.yaml" | sort | paste -sd'|')"
done
for name in base pod-mode; do
	expect_eq "deploy/$name: the webhook's two image references, no node agent's" \
		"--imds-image=kubevirt-imds-server:dev|image: kubevirt-imds-webhook:dev" \
		"$(grep -oE -- '--imds-image=.*|image: .*' "$WORK/$name.yaml" | sort | paste -sd'|')"
done
expect_eq "deploy/node: the agent's image is kubevirt-imds-node:dev, as make docker-build-node tags it" \
	"image: kubevirt-imds-node:dev|kubevirt-imds-node:dev" \
	"$(grep -oE 'image: .*' "$WORK/node.yaml" | paste -sd'|')|$(make -n --no-print-directory docker-build-node | sed -n 's/.* -t \([^ ]*\) .*/\1/p')"

# --- offline validation
for name in base cert-manager manual node pod-mode; do
	validate "deploy/$name: every object validates; design policy holds" \
		--policy "$name" "$WORK/$name.yaml"
done
validate "deploy/test: example VMs opt in; their Secrets, ConfigMaps, ServiceAccounts, NADs validate" \
	--examples deploy/test/*.yaml
n_examples=$(find deploy/test -name '*.yaml' | wc -l)
expect_eq "deploy/test: six example files" 6 "$n_examples"

# The CEL path of fail-closed (matchConditions, 1.28+): the API server here
# (1.20) has none, so it is checked statically; the models validate it.
validate "deploy/overlays/match-conditions: every object validates" "$WORK/match-conditions.yaml"
if out=$(/usr/bin/python3 tests/lib/match_conditions_check.py "$WORK/manual.yaml" "$WORK/match-conditions.yaml" 2>&1); then
	ok "deploy/overlays/match-conditions: label or annotation fails closed, the rest as manual ($(grep -c '^ok ' <<<"$out") checks)"
else
	not_ok "deploy/overlays/match-conditions: label or annotation fails closed, the rest as manual" "$(grep -v '^ok ' <<<"$out")"
fi
sed "0,/== 'true')/s//== 'yes')/" "$WORK/match-conditions.yaml" >"$WORK/bad-mc.yaml"
if /usr/bin/python3 tests/lib/match_conditions_check.py "$WORK/manual.yaml" "$WORK/bad-mc.yaml" >/dev/null 2>&1; then
	not_ok "match-conditions check rejects a condition that is not the label's or annotation's"
else
	ok "match-conditions check rejects a condition that is not the label's or annotation's"
fi

# The validator is not vacuous.
sed 's/replicas: 2/replicas: two/' "$WORK/base.yaml" >"$WORK/bad-replicas.yaml"
expect_invalid "validator rejects replicas: two" "$WORK/bad-replicas.yaml"
sed '0,/failurePolicy: Ignore/s//failurePolicy: Fail/' "$WORK/base.yaml" >"$WORK/bad-policy.yaml"
expect_invalid "policy rejects failurePolicy: Fail on a webhook unlabelled objects reach" "$WORK/bad-policy.yaml" --policy base
sed '0,/failurePolicy: Fail/s//failurePolicy: Ignore/' "$WORK/base.yaml" >"$WORK/bad-open.yaml"
expect_invalid "policy rejects a labelled opt-in that fails open" "$WORK/bad-open.yaml" --policy base
sed 's/readOnlyRootFilesystem: true/readOnlyRootFilesystem: false/' "$WORK/base.yaml" >"$WORK/bad-ro.yaml"
expect_invalid "policy rejects a writable root filesystem" "$WORK/bad-ro.yaml" --policy base
# The agent's privileges are exactly those of docs/operations.md.
sed 's/^\( *\)- SYS_PTRACE$/&\n\1- SYS_MODULE/' "$WORK/node.yaml" >"$WORK/bad-cap.yaml"
grep -q SYS_MODULE "$WORK/bad-cap.yaml" &&
	expect_invalid "policy rejects a sixth capability for the agent" "$WORK/bad-cap.yaml" --policy node
sed 's/privileged: false/privileged: true/' "$WORK/node.yaml" >"$WORK/bad-priv.yaml"
expect_invalid "policy rejects a privileged agent" "$WORK/bad-priv.yaml" --policy node
sed 's/^\( *\)readOnly: true$/\1readOnly: false/' "$WORK/node.yaml" >"$WORK/bad-rw.yaml"
expect_invalid "policy rejects a writable kubelet pod folder" "$WORK/bad-rw.yaml" --policy node
sed 's/automountServiceAccountToken: false/automountServiceAccountToken: true/' "$WORK/node.yaml" >"$WORK/bad-token.yaml"
expect_invalid "policy rejects a token in the agent" "$WORK/bad-token.yaml" --policy node
expect_invalid "policy rejects the base (the agent's default) as pod-mode's" "$WORK/base.yaml" --policy pod-mode
expect_invalid "policy rejects the base alone (no agent) as a default install" "$WORK/base.yaml" --policy manual
expect_invalid "policy rejects pod-mode (no agent, --network-mode=pod) as a default install" "$WORK/pod-mode.yaml" --policy manual
sed 's/^\( *\)- --network-mode=pod$/\1- --network-mode=agent/' "$WORK/pod-mode.yaml" >"$WORK/bad-pm.yaml"
grep -q -- '--network-mode=agent' "$WORK/bad-pm.yaml" &&
	expect_invalid "policy rejects pod-mode's webhook in agent mode with no agent" "$WORK/bad-pm.yaml" --policy pod-mode

# The agent's pod as Pod Security sees it (psa-check, the upstream evaluator):
# privileged only, for its host PID namespace, the hostPath and the
# capabilities; so its namespace says enforce: privileged.
if psa_dir=$(hack/build-psa-check.sh 2>"$WORK/psa-build.log" | tail -n 1) && [[ -x $psa_dir/psa-check ]]; then
	/usr/bin/python3 -c '
import sys, json, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d.get("kind") == "DaemonSet":
        t = d["spec"]["template"]
        json.dump({"apiVersion": "v1", "kind": "Pod", "metadata": t["metadata"], "spec": t["spec"]}, open(sys.argv[2], "w"))
' "$WORK/node.yaml" "$WORK/agent-pod.json"
	why=$("$psa_dir/psa-check" baseline "$WORK/agent-pod.json" 2>&1)
	if [[ $why == *'host namespaces (hostPID=true)'* && $why == *'hostPath volumes (volume "kubelet-pods")'* &&
		$why == *'non-default capabilities (container "imds-node" must not include "NET_ADMIN", "NET_RAW", "SYS_ADMIN", "SYS_PTRACE" in securityContext.capabilities.add)'* ]] &&
		"$psa_dir/psa-check" privileged "$WORK/agent-pod.json" >/dev/null 2>&1; then
		ok "the agent's pod is Pod Security privileged only (hostPID, the hostPath, four non-default capabilities)"
	else
		not_ok "the agent's pod is Pod Security privileged only (hostPID, the hostPath, four non-default capabilities)" "$why"
	fi
else
	not_ok "psa-check built (hack/build-psa-check.sh)" "$(tail -n 20 "$WORK/psa-build.log")"
fi
sed 's/imds.kubevirt.io\/enabled: "true"/imds.kubevirt.io\/enabled: "yes"/' deploy/test/vm-cirros.yaml >"$WORK/bad-vm.yaml"
expect_invalid "examples: a VM that does not opt in is rejected" "$WORK/bad-vm.yaml" --examples
sed 's/token-expiration: "600"/token-expiration: "10"/' deploy/test/vm-cirros.yaml >"$WORK/bad-exp.yaml"
expect_invalid "examples: token-expiration 10 is rejected" "$WORK/bad-exp.yaml" --examples
sed 's/^  userdata:/  other:/' deploy/test/vm-secret-userdata.yaml >"$WORK/bad-key.yaml"
expect_invalid "examples: a Secret without userdata/user-data is rejected" "$WORK/bad-key.yaml" --examples

# --- server-side dry-run against kube-apiserver 1.20
if ! kube_start "$WORK" >"$WORK/kube-start.log" 2>&1; then
	not_ok "kube-apiserver and etcd started" "$(tail -n 30 "$WORK/kube-start.log")"
	tap_done
	exit 1
fi
ok "kube-apiserver ready in ${KUBE_START_SECONDS:-?} s"

# dry_run NAME FILE: kubectl's client-side schema validation (unknown fields
# are errors) and the apiserver's validation and admission, nothing stored.
dry_run() {
	local name=$1 file=$2 out
	if out=$(kctl apply --dry-run=server --validate=true -f "$file" 2>&1); then
		ok "$name ($(grep -c 'server dry run' <<<"$out") objects)"
	else
		not_ok "$name" "$out"
	fi
}

# 1.20 serves PodDisruptionBudget only as policy/v1beta1 (policy/v1 is 1.21+);
# the manifest stays policy/v1 for current clusters and the dry-run checks the
# same spec under v1beta1. Everything else is sent unchanged.
to120() { sed 's#^apiVersion: policy/v1$#apiVersion: policy/v1beta1#' "$1"; }

# A namespace must exist for a namespaced dry-run (a dry-run Namespace is not
# stored). kubernetes.io/metadata.name is set by the apiserver from 1.21 on.
kctl create namespace kubevirt-imds >/dev/null
kctl label namespace kubevirt-imds kubernetes.io/metadata.name=kubevirt-imds >/dev/null
# The agent's namespace, for deploy/node's objects; the API
# server's validation takes allowPrivilegeEscalation false with SYS_ADMIN.
kctl create namespace kubevirt-imds-node >/dev/null
to120 "$WORK/base.yaml" >"$WORK/base-120.yaml"
dry_run "deploy/base: kubectl apply --dry-run=server (PDB as policy/v1beta1)" "$WORK/base-120.yaml"
# The dry-run is not vacuous: a misspelt field is refused.
sed 's/^  revisionHistoryLimit: 3$/  revisionHistoryLimit: 3\n  replicaz: 2/' "$WORK/base-120.yaml" >"$WORK/typo.yaml"
if grep -q replicaz "$WORK/typo.yaml" && ! kctl apply --dry-run=server --validate=true -f "$WORK/typo.yaml" >/dev/null 2>&1; then
	ok "dry-run refuses an unknown field (spec.replicaz)"
else
	not_ok "dry-run refuses an unknown field (spec.replicaz)"
fi
if kctl apply --dry-run=server -f "$WORK/base.yaml" >/dev/null 2>&1; then
	skip "PDB policy/v1 on 1.20" "the apiserver unexpectedly serves policy/v1"
else
	ok "1.20 rejects the policy/v1 PDB (expected: it serves policy/v1beta1 only)"
fi

# Minimal CRDs (schema-less) for the kinds this apiserver does not know.
crd() { # group kind plural
	cat <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: $3.$1
spec:
  group: $1
  scope: Namespaced
  names: {kind: $2, plural: $3, singular: $(tr '[:upper:]' '[:lower:]' <<<"$2")}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
EOF
}
{
	crd cert-manager.io Certificate certificates
	crd cert-manager.io Issuer issuers
	crd kubevirt.io VirtualMachine virtualmachines
	crd k8s.cni.cncf.io NetworkAttachmentDefinition network-attachment-definitions
	crd monitoring.coreos.com ServiceMonitor servicemonitors
	crd monitoring.coreos.com PrometheusRule prometheusrules
} >"$WORK/crds.yaml"
kctl apply -f "$WORK/crds.yaml" >/dev/null &&
	kctl wait --for condition=established --timeout=60s crd --all >/dev/null
to120 "$WORK/cert-manager.yaml" >"$WORK/cert-manager-120.yaml"
dry_run "deploy/overlays/cert-manager: kubectl apply --dry-run=server" "$WORK/cert-manager-120.yaml"
to120 "$WORK/manual.yaml" >"$WORK/manual-120.yaml"
dry_run "deploy/overlays/manual: kubectl apply --dry-run=server" "$WORK/manual-120.yaml"
dry_run "deploy/overlays/monitoring: kubectl apply --dry-run=server" "$WORK/monitoring.yaml"
dry_run "deploy/node: kubectl apply --dry-run=server" "$WORK/node.yaml"
to120 "$WORK/pod-mode.yaml" >"$WORK/pod-mode-120.yaml"
dry_run "deploy/overlays/pod-mode: kubectl apply --dry-run=server" "$WORK/pod-mode-120.yaml"
# Every metric the alerts use is one the webhook exports.
missing=""
while read -r m; do
	grep -q "\"$m" src/webhook/metrics.c src/webhook/main.c || missing+=" $m"
done < <(grep -o 'imds_webhook_[a-z_]*' "$WORK/monitoring.yaml" | sort -u)
n_alerts=$(grep -c '^ *- alert:' "$WORK/monitoring.yaml")
expect_eq "deploy/overlays/monitoring: $n_alerts alerts, every metric they use exported by the webhook" "" "$missing"
kube_create_namespace vms >/dev/null
for f in deploy/test/*.yaml; do
	if out=$(kctl -n vms apply --dry-run=server --validate=true -f "$f" 2>&1); then
		ok "$f: kubectl apply --dry-run=server"
	else
		not_ok "$f: kubectl apply --dry-run=server" "$out"
	fi
done

# --- hack/generate-certs.sh against the apiserver (deploy/overlays/manual stored)
kctl apply -f "$WORK/manual-120.yaml" >/dev/null 2>"$WORK/apply.err" ||
	not_ok "deploy/overlays/manual applied" "$(cat "$WORK/apply.err")"
ctx=$KUBE_CONTEXT
if KUBECTL=$KUBECTL_BIN KUBE_CONTEXT='' hack/generate-certs.sh --kubeconfig "$KUBECONFIG_FILE" \
	--context "$ctx" >"$WORK/gen.log" 2>&1; then
	ok "hack/generate-certs.sh --context applied the Secret and the caBundle"
else
	not_ok "hack/generate-certs.sh --context applied the Secret and the caBundle" "$(cat "$WORK/gen.log")"
fi
kctl -n kubevirt-imds get secret imds-webhook-tls -o 'go-template={{index .data "tls.crt"}}' |
	base64 -d >"$WORK/live-tls.crt" 2>/dev/null
kctl get mutatingwebhookconfiguration imds-webhook \
	-o 'go-template={{range .webhooks}}{{.clientConfig.caBundle}}{{"\n"}}{{end}}' >"$WORK/bundles"
expect_eq "caBundle set, the same CA, on all seven webhooks" 1 \
	"$(sort -u "$WORK/bundles" | grep -c .)"
expect_eq "seven webhooks carry a caBundle" 7 "$(grep -c . "$WORK/bundles")"
head -n1 "$WORK/bundles" | base64 -d >"$WORK/live-ca.crt" 2>/dev/null
check "the Secret's certificate verifies against the patched caBundle" \
	openssl verify -CAfile "$WORK/live-ca.crt" "$WORK/live-tls.crt"
expect_eq "Secret type kubernetes.io/tls" kubernetes.io/tls \
	"$(kctl -n kubevirt-imds get secret imds-webhook-tls -o 'jsonpath={.type}')"
if KUBE_CONTEXT='' hack/generate-certs.sh >"$WORK/noctx.log" 2>&1; then
	not_ok "hack/generate-certs.sh without a context refuses to run" "$(cat "$WORK/noctx.log")"
else
	ok "hack/generate-certs.sh without a context refuses to run"
fi
tap_done
