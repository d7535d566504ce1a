#!/usr/bin/env bash
# imds-webhook behind a real kube-apiserver (Debian's kubernetes source,
# built once and cached by hack/build-kube-apiserver.sh) and etcd: the
# MutatingWebhookConfiguration with the generated CA, opted-in, opted-out
# and non-virt-launcher pods, VirtualMachines and VirtualMachineInstances
# through CRDs, a denied annotation, and a webhook outage that must not
# block pods that did not opt in.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
REPO=$(pwd)
# shellcheck source=tests/lib/tap.sh
. tests/lib/tap.sh
# shellcheck source=tests/lib/kube.sh
. tests/lib/kube.sh

VARIANT=${IMDS_VARIANT:-debug}
WH=$REPO/build/$VARIANT/imds-webhook
PY=/usr/bin/python3
WORK=$(mktemp -d "${IMDS_TEST_TMPDIR:-/tmp}/webhook-api.XXXXXX")
WPID=
cleanup() {
	[[ -n "$WPID" ]] && kill -KILL "$WPID" 2>/dev/null
	kube_stop
	rm -rf "$WORK"
}
trap cleanup EXIT
NS=vms
IMAGE=registry.example/imds-server:test

if [[ ! -x "$WH" ]]; then
	not_ok "imds-webhook built at $WH"
	tap_done
	exit 1
fi
if ! kube_start "$WORK" >"$WORK/kube-start.log" 2>&1; then
	not_ok "kube-apiserver and etcd started" "$(tail -n 30 "$WORK/kube-start.log")"
	tap_done
	exit 1
fi
ok "kube-apiserver ready in ${KUBE_START_SECONDS:-?} s"
kube_create_namespace "$NS" >/dev/null

# --- the webhook, serving on loopback with a certificate for 127.0.0.1
kube_gen_webhook_cert "$WORK/certs" >/dev/null 2>&1
WSTARTS=0
wh_start() { # extra flags...
	WSTARTS=$((WSTARTS + 1))
	local log=$WORK/webhook.$WSTARTS.log
	"$WH" --listen 127.0.0.1:0 --tls-cert-file "$WORK/certs/tls.crt" \
		--tls-key-file "$WORK/certs/tls.key" --imds-image "$IMAGE" "$@" 2>"$log" &
	WPID=$!
	WPORT=
	for _ in $(seq 300); do
		WPORT=$(sed -n 's/.* on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$log" 2>/dev/null | head -n1)
		[[ -n "$WPORT" ]] && kill -0 "$WPID" 2>/dev/null && return 0
		sleep 0.01
	done
	return 1
}
wh_stop() {
	kill -TERM "$WPID" 2>/dev/null
	WSTATUS=0
	wait "$WPID" || WSTATUS=$?
	WPID=
}
# Native sidecar mode with --network-mode pod: the API server here is 1.20,
# whose validation refuses a startupProbe on an init container, which the
# default network mode (agent) gives the native sidecar (docs/webhook.md,
# --network-mode); native sidecars need 1.29 anyway. The default's patch is
# judged by webhook_rendered, webhook_patch and webhook_psa; here it goes
# through this API server in container mode (below).
wh_start --network-mode pod || { not_ok "webhook started" "$(cat "$WORK"/webhook.*.log)"; tap_done; exit 1; }

# The configuration deploy/ ships, pointed at the local webhook by URL.
register() { # port
	local ca
	ca=$(base64 -w0 "$WORK/certs/ca.crt")
	kctl apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: imds-webhook
webhooks:
  - name: pods.imds.kubevirt.io
    admissionReviewVersions: ["v1"]
    sideEffects: None
    failurePolicy: Ignore
    reinvocationPolicy: IfNeeded
    timeoutSeconds: 5
    clientConfig:
      url: https://127.0.0.1:$1/mutate
      caBundle: $ca
    objectSelector:
      matchLabels:
        kubevirt.io: virt-launcher
    namespaceSelector:
      matchExpressions:
        - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, kube-public, kubevirt, kubevirt-imds]}
    rules:
      - {operations: ["CREATE"], apiGroups: [""], apiVersions: ["v1"], resources: ["pods"], scope: Namespaced}
  - name: vms.imds.kubevirt.io
    admissionReviewVersions: ["v1"]
    sideEffects: None
    failurePolicy: Ignore
    reinvocationPolicy: IfNeeded
    timeoutSeconds: 5
    clientConfig:
      url: https://127.0.0.1:$1/mutate
      caBundle: $ca
    rules:
      - {operations: ["CREATE", "UPDATE"], apiGroups: ["kubevirt.io"], apiVersions: ["v1"], resources: ["virtualmachines"], scope: Namespaced}
      - {operations: ["CREATE"], apiGroups: ["kubevirt.io"], apiVersions: ["v1"], resources: ["virtualmachineinstances"], scope: Namespaced}
EOF
}

for kind in VirtualMachine VirtualMachineInstance; do
	plural=$(tr '[:upper:]' '[:lower:]' <<<"$kind")s
	kctl apply -f - >/dev/null <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: $plural.kubevirt.io
spec:
  group: kubevirt.io
  scope: Namespaced
  names: {kind: $kind, plural: $plural, singular: $(tr '[:upper:]' '[:lower:]' <<<"$kind")}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
EOF
done
kctl wait --for condition=established --timeout=60s crd/virtualmachines.kubevirt.io \
	crd/virtualmachineinstances.kubevirt.io >/dev/null
register "$WPORT"

# launcher NAME OPTIN [extra annotations as 'key: value' lines] — a
# virt-launcher pod as KubeVirt renders it (trimmed to what 1.20 validates).
launcher() {
	local name=$1 optin=$2 extra=${3:-}
	cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $name
  labels:
    kubevirt.io: virt-launcher
    kubevirt.io/created-by: 0f3c6f1e-7f7e-4c5e-9a55-2f2b0c3f4a11
    vm.kubevirt.io/name: $name-vm
  annotations:
    kubevirt.io/domain: $name-vm
    post.hook.backup.velero.io/command: '["/usr/bin/virt-freezer", "--unfreeze", "--name", "$name-vm", "--namespace", "$NS"]'
    imds.kubevirt.io/enabled: "$optin"
    imds.kubevirt.io/user-data: |
      #cloud-config
      hostname: $name-vm
$extra
spec:
  automountServiceAccountToken: false
  serviceAccountName: default
  containers:
    - name: compute
      image: quay.io/kubevirt/virt-launcher:v1.8.0
      command: ["/usr/bin/virt-launcher-monitor", "--qemu-timeout", "313s"]
      resources:
        limits: {cpu: "2", memory: 2Gi}
        requests: {cpu: "2", memory: 2Gi}
      volumeMounts:
        - {name: private, mountPath: /var/run/kubevirt-private}
  initContainers:
    - name: container-disk-binary
      image: quay.io/kubevirt/virt-launcher:v1.8.0
      command: ["/usr/bin/cp", "/usr/bin/container-disk", "/init/usr/bin/container-disk"]
      resources:
        limits: {cpu: 10m, memory: 40M}
        requests: {cpu: 10m, memory: 40M}
  volumes:
    - name: private
      emptyDir: {}
EOF
}

# wait until the new configuration is in force (up to ~10 s)
active=0
for _ in $(seq 150); do
	if launcher probe true | kctl -n "$NS" create --dry-run=server -o json -f - 2>/dev/null |
		grep -q '"imds.kubevirt.io/injected"'; then
		active=1
		break
	fi
	sleep 0.2
done
expect_eq "MutatingWebhookConfiguration with the generated CA in force" 1 "$active"

get_json() { kctl -n "$NS" get "$@" -o json; }

# check NAME PYTHON-EXPR-ON-obj: asserts on a stored object with python.
pycheck() { # name json-file expr
	if "$PY" -c "import json,sys; obj=json.load(open(sys.argv[1])); sys.exit(0 if ($3) else 1)" "$2"; then
		ok "$1"
	else
		not_ok "$1" "$(head -c 3000 "$2")"
	fi
}

# --- pods
launcher vm-a true | kctl -n "$NS" create -f - >/dev/null
get_json pod vm-a >"$WORK/a.json"
pycheck "opted-in pod: imds-server injected (native sidecar: an init container)" "$WORK/a.json" \
	"[c['name'] for c in obj['spec']['initContainers']].count('imds-server') == 1"
pycheck "opted-in pod: compute stays containers[0]" "$WORK/a.json" \
	"obj['spec']['containers'][0]['name'] == 'compute'"
pycheck "opted-in pod: image, command and capabilities" "$WORK/a.json" \
	"[(c['image'], c['command'], sorted(c['securityContext']['capabilities']['add']), c['securityContext']['capabilities']['drop'], c['securityContext']['readOnlyRootFilesystem']) for c in obj['spec']['initContainers'] if c['name']=='imds-server'][0] == ('$IMAGE', ['/imds-server','run'], ['NET_ADMIN','NET_BIND_SERVICE','NET_RAW'], ['ALL'], True)"
pycheck "opted-in pod: IMDS_VM_NAME from kubevirt.io/domain, namespace from the downward API" "$WORK/a.json" \
	"(lambda e: e['IMDS_VM_NAME'].get('value') == 'vm-a-vm' and e['IMDS_NAMESPACE']['valueFrom']['fieldRef']['fieldPath'] == 'metadata.namespace')({v['name']: v for c in obj['spec']['initContainers'] if c['name']=='imds-server' for v in c['env']})"
pycheck "opted-in pod: zone and region from the topology labels, accepted by the API server's validation" "$WORK/a.json" \
	"(lambda e: [e[k]['valueFrom']['fieldRef']['fieldPath'] for k in ('IMDS_AVAILABILITY_ZONE', 'IMDS_REGION')] == [\"metadata.labels['topology.kubernetes.io/zone']\", \"metadata.labels['topology.kubernetes.io/region']\"])({v['name']: v for c in obj['spec']['initContainers'] if c['name']=='imds-server' for v in c['env']})"
pycheck "opted-in pod: projected token and downward-API volumes" "$WORK/a.json" \
	"{'imds-token','imds-podinfo'} <= {v['name'] for v in obj['spec']['volumes']} and any('serviceAccountToken' in s for v in obj['spec']['volumes'] if v['name']=='imds-token' for s in v['projected']['sources'])"
pycheck "opted-in Guaranteed pod: sidecar requests equal limits" "$WORK/a.json" \
	"[c['resources']['requests'] == c['resources']['limits'] for c in obj['spec']['initContainers'] if c['name']=='imds-server'][0]"
pycheck "opted-in pod: injected annotation" "$WORK/a.json" \
	"obj['metadata']['annotations'].get('imds.kubevirt.io/injected') == 'true'"
pycheck "opted-in pod: user-data annotation stored byte-exact" "$WORK/a.json" \
	"obj['metadata']['annotations']['imds.kubevirt.io/user-data'] == '#cloud-config\nhostname: vm-a-vm\n'"

launcher vm-b false | kctl -n "$NS" create -f - >/dev/null
get_json pod vm-b >"$WORK/b.json"
pycheck "opted-out pod: untouched" "$WORK/b.json" \
	"'imds.kubevirt.io/injected' not in obj['metadata']['annotations'] and all(c['name'] != 'imds-server' for c in obj['spec']['initContainers'] + obj['spec']['containers'])"

launcher vm-c true | sed 's/kubevirt.io: virt-launcher/app: not-a-vm/' | kctl -n "$NS" create -f - >/dev/null
get_json pod vm-c >"$WORK/c.json"
pycheck "opted-in pod that is not a virt-launcher: untouched" "$WORK/c.json" \
	"'imds.kubevirt.io/injected' not in obj['metadata']['annotations']"

out=$(launcher vm-d true '    imds.kubevirt.io/token-expiration: "10"' | kctl -n "$NS" create -f - 2>&1)
if [[ $? -ne 0 && "$out" == *imds.kubevirt.io/token-expiration* ]]; then
	ok "invalid token-expiration: denied, the message names the annotation"
else
	not_ok "invalid token-expiration: denied, the message names the annotation" "$out"
fi

# --- VirtualMachines and VirtualMachineInstances
vm() { # name optin serial-or-empty
	cat <<EOF
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: $1
spec:
  runStrategy: Always
  template:
    metadata:
      annotations:
        imds.kubevirt.io/enabled: "$2"
    spec:
      domain:
        devices: {}
$([[ -n "$3" ]] && printf '        firmware:\n          serial: "%s"\n' "$3")
EOF
}
SERIAL='ds=nocloud;s=http://169.254.169.254/v1/;dsmode=net'
vm vm-none true "" | kctl -n "$NS" create -f - >/dev/null
expect_eq "VM without firmware: NoCloud serial set" "$SERIAL" \
	"$(kctl -n "$NS" get virtualmachine vm-none -o 'jsonpath={.spec.template.spec.domain.firmware.serial}')"
vm vm-own true "4a3b2c1d-user-serial" | kctl -n "$NS" create -f - >/dev/null
expect_eq "VM with its own serial: ours appended after a space" "4a3b2c1d-user-serial $SERIAL" \
	"$(kctl -n "$NS" get virtualmachine vm-own -o 'jsonpath={.spec.template.spec.domain.firmware.serial}')"
vm vm-nc true "ds=nocloud;s=http://10.0.0.1/" | kctl -n "$NS" create -f - >/dev/null
expect_eq "VM with a nocloud serial: left alone" "ds=nocloud;s=http://10.0.0.1/" \
	"$(kctl -n "$NS" get virtualmachine vm-nc -o 'jsonpath={.spec.template.spec.domain.firmware.serial}')"
vm vm-out false "" | kctl -n "$NS" create -f - >/dev/null
expect_eq "VM not opted in: no serial" "" \
	"$(kctl -n "$NS" get virtualmachine vm-out -o 'jsonpath={.spec.template.spec.domain.firmware.serial}')"
kctl -n "$NS" label virtualmachine vm-own team=blue >/dev/null
expect_eq "VM UPDATE: idempotent (one serial token)" "4a3b2c1d-user-serial $SERIAL" \
	"$(kctl -n "$NS" get virtualmachine vm-own -o 'jsonpath={.spec.template.spec.domain.firmware.serial}')"
kctl -n "$NS" create -f - >/dev/null <<EOF
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: vmi-a
  annotations:
    imds.kubevirt.io/enabled: "true"
spec:
  domain:
    devices: {}
EOF
expect_eq "standalone VMI: NoCloud serial set" "$SERIAL" \
	"$(kctl -n "$NS" get virtualmachineinstance vmi-a -o 'jsonpath={.spec.domain.firmware.serial}')"

# --- plain-container mode (clusters before native sidecars), in the default
# network mode (agent): the sidecar as UID 107 with no capability, and the
# imds-await init container, accepted by this API server's validation
wh_stop
wh_start --sidecar-mode container || not_ok "webhook restarted in container mode"
register "$WPORT"
active=0
for _ in $(seq 150); do
	if launcher probe true | kctl -n "$NS" create --dry-run=server -o json -f - 2>/dev/null >"$WORK/probe.json" &&
		"$PY" -c 'import json,sys; o=json.load(open(sys.argv[1])); sys.exit(0 if [c["name"] for c in o["spec"]["containers"]] == ["compute","imds-server"] else 1)' "$WORK/probe.json"; then
		active=1
		break
	fi
	sleep 0.2
done
expect_eq "container mode: imds-server after compute in containers" 1 "$active"
pycheck "container mode, default network mode (agent): UID 107, no capability added, imds-await the last init container" "$WORK/probe.json" \
	"[(c['securityContext'].get('runAsUser'), c['securityContext'].get('runAsNonRoot'), c['securityContext']['capabilities'].get('add'), c['securityContext']['capabilities']['drop']) for c in obj['spec']['containers'] if c['name']=='imds-server'][0] == (107, True, None, ['ALL']) and obj['spec']['initContainers'][-1]['name'] == 'imds-await' and {'name': 'IMDS_NET_MODE', 'value': 'agent'} in [e for c in obj['spec']['containers'] if c['name']=='imds-server' for e in c['env']]"

# --- the configuration deploy/base ships (seven webhooks: the labelled fail
# closed on CREATE, the rest fail open), each pointed at the local webhook by
# URL with the path it names
register_shipped() { # port
	kctl delete mutatingwebhookconfiguration imds-webhook --ignore-not-found >/dev/null
	"$PY" - "$1" "$(base64 -w0 "$WORK/certs/ca.crt")" >"$WORK/mwc.json" <<'PYEOF'
import json, sys
import yaml
docs = [d for d in yaml.safe_load_all(open("deploy/base/mutatingwebhookconfiguration.yaml")) if d]
m = docs[0]
for w in m["webhooks"]:
    path = w["clientConfig"]["service"]["path"]
    w["clientConfig"] = {"url": "https://127.0.0.1:%s%s" % (sys.argv[1], path), "caBundle": sys.argv[2]}
print(json.dumps(m))
PYEOF
	kctl create -f "$WORK/mwc.json" >/dev/null
}
labelled() { sed 's/^    kubevirt.io: virt-launcher$/&\n    imds.kubevirt.io\/enabled: "true"/'; }
wh_stop
wh_start --network-mode pod || not_ok "webhook restarted (native mode)"
register_shipped "$WPORT"
active=0
for _ in $(seq 150); do
	if launcher probe true | labelled | kctl -n "$NS" create --dry-run=server -o json -f - 2>/dev/null |
		grep -q '"imds.kubevirt.io/injected"'; then
		active=1
		break
	fi
	sleep 0.2
done
expect_eq "shipped configuration in force (a labelled pod through opted-in.pods)" 1 "$active"
launcher vm-l true | labelled | kctl -n "$NS" create -f - >/dev/null
get_json pod vm-l >"$WORK/l.json"
pycheck "shipped configuration, webhook up: a labelled opted-in pod gets imds-server" "$WORK/l.json" \
	"[c['name'] for c in obj['spec']['initContainers']].count('imds-server') == 1"
launcher vm-m true | kctl -n "$NS" create -f - >/dev/null
get_json pod vm-m >"$WORK/m.json"
pycheck "shipped configuration, webhook up: an annotation-only opted-in pod gets imds-server" "$WORK/m.json" \
	"[c['name'] for c in obj['spec']['initContainers']].count('imds-server') == 1"
# vm_labelled NAME: an opted-in VM labelled on its own metadata and its template's
vm_labelled() {
	vm "$1" true "" | "$PY" -c 'import sys, yaml, json
d = yaml.safe_load(sys.stdin)
for m in (d["metadata"], d["spec"]["template"]["metadata"]):
    m.setdefault("labels", {})["imds.kubevirt.io/enabled"] = "true"
print(json.dumps(d))'
}
vm_labelled vm-lab | kctl -n "$NS" create -f - >/dev/null
expect_eq "shipped configuration, webhook up: a labelled VM gets its serial" "$SERIAL" \
	"$(kctl -n "$NS" get virtualmachine vm-lab -o 'jsonpath={.spec.template.spec.domain.firmware.serial}')"

# --- outage: the webhook is gone; pods that did not opt in are still created,
# the labelled opted-in are refused with the webhook's name
wh_stop
expect_eq "webhook SIGTERM exit status" 0 "$WSTATUS"
refused() { # name stderr-file webhook-name
	if grep -q "failed calling webhook \"$3\"" "$2"; then
		ok "$1"
	else
		not_ok "$1" "$(cat "$2")"
	fi
}
if launcher vm-n true | labelled | kctl -n "$NS" create -f - >/dev/null 2>"$WORK/n.err"; then
	not_ok "webhook down: a labelled opted-in launcher pod is refused" "it was created"
else
	refused "webhook down: a labelled opted-in launcher pod is refused, naming opted-in.pods.imds.kubevirt.io" \
		"$WORK/n.err" opted-in.pods.imds.kubevirt.io
fi
if vm_labelled vm-lab2 | kctl -n "$NS" create -f - >/dev/null 2>"$WORK/vm-lab2.err"; then
	not_ok "webhook down: a labelled VM is refused" "it was created"
else
	refused "webhook down: a labelled VM is refused, naming opted-in.vms.imds.kubevirt.io" \
		"$WORK/vm-lab2.err" opted-in.vms.imds.kubevirt.io
fi
if kctl -n "$NS" create -f - >/dev/null 2>"$WORK/vmi-lab.err" <<EOF; then
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: vmi-lab
  labels: {imds.kubevirt.io/enabled: "true"}
  annotations: {imds.kubevirt.io/enabled: "true"}
spec: {domain: {devices: {}}}
EOF
	not_ok "webhook down: a labelled VMI is refused" "it was created"
else
	refused "webhook down: a labelled VMI is refused, naming opted-in.vmis.imds.kubevirt.io" \
		"$WORK/vmi-lab.err" opted-in.vmis.imds.kubevirt.io
fi
if kctl -n "$NS" label virtualmachine vm-lab team=red >/dev/null 2>"$WORK/vm-lab-upd.err"; then
	ok "webhook down: a labelled VM can still be updated (UPDATE fails open)"
else
	not_ok "webhook down: a labelled VM can still be updated (UPDATE fails open)" "$(cat "$WORK/vm-lab-upd.err")"
fi
if vm vm-free false "" | kctl -n "$NS" create -f - >/dev/null 2>"$WORK/vm-free.err"; then
	ok "webhook down: a VM that did not opt in is created"
else
	not_ok "webhook down: a VM that did not opt in is created" "$(cat "$WORK/vm-free.err")"
fi
if launcher vm-o true | kctl -n "$NS" create -f - >/dev/null 2>"$WORK/o.err"; then
	get_json pod vm-o >"$WORK/o.json"
	pycheck "webhook down: an annotation-only opted-in pod fails open (created, without imds-server)" "$WORK/o.json" \
		"all(c['name'] != 'imds-server' for c in obj['spec']['initContainers'])"
else
	not_ok "webhook down: an annotation-only opted-in pod fails open" "$(cat "$WORK/o.err")"
fi
if launcher vm-e false | kctl -n "$NS" create -f - >/dev/null 2>"$WORK/e.err"; then
	ok "webhook down: an opted-out virt-launcher pod is still created"
else
	not_ok "webhook down: an opted-out virt-launcher pod is still created" "$(cat "$WORK/e.err")"
fi
if kctl -n "$NS" create -f - >/dev/null 2>"$WORK/f.err" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: plain}
spec:
  containers: [{name: app, image: registry.example/app:1}]
EOF
then
	ok "webhook down: an ordinary pod is created"
else
	not_ok "webhook down: an ordinary pod is created" "$(cat "$WORK/f.err")"
fi
if cat "$WORK"/webhook.*.log | grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:'; then
	not_ok "sanitizers quiet" "$(cat "$WORK"/webhook.*.log | grep -A20 Sanitizer | head -30)"
fi
if cat "$WORK"/webhook.*.log | grep -q 'hostname: vm-a-vm'; then
	not_ok "user-data never in the webhook log"
else
	ok "user-data never in the webhook log"
fi
tap_done
