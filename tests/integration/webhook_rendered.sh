#!/usr/bin/env bash
# The webhook over the virt-launcher pods and VMIs KubeVirt v1.8.4 renders
# (tests/fixtures/kubevirt-v1.8.4, README.md there), handed over as a real
# API server hands them over, issue 23 item 5, issue 20 item 4 and issue 24
# item 3:
#   1. KubeVirt facts pinned on the rendered data (tests/lib/rendered.py pin)
#   2. each pod created (dry-run) through the local kube-apiserver as
#      virt-controller creates it, with a webhook that records what it is
#      sent: the AdmissionReview a webhook gets (namespace filled,
#      generateName, defaults, ServiceAccount admission); fields the 1.20
#      server predates put back and listed
#   3. that review through the admission module (admission_cli) in both
#      sidecar modes, each also with --network-mode agent: the patch applied with python3-jsonpatch and checked
#      (tests/lib/jsonpatch_check.py; rendered.py check: KubeVirt's order,
#      the sidecar's place, QoS, the token), and the patched pod accepted
#      by the API server (server-side dry-run)
#   4. the pods again through the API server with imds-webhook registered
#   5. the VMIs: imds.kubevirt.io/interfaces as the contract says, its taps
#      against the rendered pods' Multus interface names; the annotation
#      reaching the pod's sidecar as IMDS_INTERFACES; warnings in kubectl's
#      output for a VM that cannot be served and for annotations on a VM's
#      own metadata
#   6. a migration target pod (derived: rendered.py derive-migration) of
#      every served binding (masquerade, bridge with KubeVirt's
#      allow-pod-bridge-network-live-migration, the passt plugin and core
#      binding, Istio, a Multus bridge) is patched, never denied, and gets
#      the same sidecar as its source; a v1.9 pod with
#      spec.serviceAccountName gets that account's token (TokenRequest, as
#      kubelet fills the projected volume) though automount is false
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
REPO=$(pwd)
# shellcheck source=tests/lib/tap.sh
. tests/lib/tap.sh
# shellcheck source=tests/lib/kube.sh
. tests/lib/kube.sh

VARIANT=${IMDS_VARIANT:-debug}
WH=$REPO/build/$VARIANT/imds-webhook
CLI=$REPO/build/$VARIANT/tests/admission_cli
PY=/usr/bin/python3
FIX=tests/fixtures/kubevirt-v1.8.4
NS=demo
IMAGE=registry.example/kubevirt-imds/imds-server:test
CONTROLLER=system:serviceaccount:kubevirt:kubevirt-controller
WORK=$(mktemp -d "${IMDS_TEST_TMPDIR:-/tmp}/webhook-rendered.XXXXXX")
WPID=''
RPID=''
cleanup() {
	[[ -n "$WPID" ]] && kill -KILL "$WPID" 2>/dev/null
	[[ -n "$RPID" ]] && kill -KILL "$RPID" 2>/dev/null
	kube_stop
	[[ -n "${KEEP_WORK:-}" ]] || rm -rf "$WORK"
}
trap cleanup EXIT

for b in "$WH" "$CLI"; do
	if [[ ! -x "$b" ]]; then
		not_ok "built: $b (make VARIANT=$VARIANT webhook unit-bins)"
		tap_done
		exit 1
	fi
done

# Runs a checker and turns its PASS/FAIL lines into TAP.
checked() { # label cmd...
	local label=$1 line out st seen=0
	shift
	out=$("$@" 2>&1)
	st=$?
	while IFS= read -r line; do
		case "$line" in
		PASS\|*) ok "$label: ${line#PASS|}"; seen=1 ;;
		RESTORED\|*) echo "# $label: put back what kube-apiserver 1.20 dropped: ${line#RESTORED|}" ;;
		FAIL\|*)
			local rest=${line#FAIL|}
			not_ok "$label: ${rest%%|*}" "${rest#*|}"; seen=1 ;;
		esac
	done <<<"$out"
	if ((st != 0 && seen == 0)); then
		not_ok "$label: checker ran" "$out"
	fi
}

# --- 1. KubeVirt facts on the rendered data (unedited: the sums in the README)
if out=$(cd "$FIX" && sed -n '/^[0-9a-f]\{64\}  /p' README.md | sha256sum -c --strict 2>&1); then
	ok "the $(grep -c ': OK$' <<<"$out") rendered files are as copied (sha256 in $FIX/README.md)"
else
	not_ok "the rendered files are as copied (sha256 in $FIX/README.md)" "$out"
fi
checked "KubeVirt v1.8.4" "$PY" tests/lib/rendered.py pin "$FIX"

# --- the local control plane
if ! kube_start "$WORK" >"$WORK/kube-start.log" 2>&1; then
	not_ok "kube-apiserver and etcd started" "$(tail -n 30 "$WORK/kube-start.log")"
	tap_done
	exit 1
fi
ok "kube-apiserver ready in ${KUBE_START_SECONDS:-?} s"
kube_create_namespace "$NS" >/dev/null
kube_create_namespace kubevirt >/dev/null
kube_ensure_serviceaccount "$NS" vm-sa >/dev/null
kube_ensure_serviceaccount kubevirt kubevirt-controller >/dev/null
# virt-controller creates launcher pods; here it may do anything.
kctl create clusterrolebinding kubevirt-controller-test --clusterrole=cluster-admin \
	--serviceaccount=kubevirt:kubevirt-controller >/dev/null
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
kube_gen_webhook_cert "$WORK/certs" >/dev/null 2>&1

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
    failurePolicy: Fail
    reinvocationPolicy: IfNeeded
    timeoutSeconds: 5
    clientConfig: {url: "https://127.0.0.1:$1/mutate", caBundle: $ca}
    objectSelector: {matchLabels: {kubevirt.io: virt-launcher}}
    rules:
      - {operations: ["CREATE"], apiGroups: [""], apiVersions: ["v1"], resources: ["pods"], scope: Namespaced}
  - name: vms.imds.kubevirt.io
    admissionReviewVersions: ["v1"]
    sideEffects: None
    failurePolicy: Fail
    reinvocationPolicy: IfNeeded
    timeoutSeconds: 5
    clientConfig: {url: "https://127.0.0.1:$1/mutate", caBundle: $ca}
    rules:
      - {operations: ["CREATE", "UPDATE"], apiGroups: ["kubevirt.io"], apiVersions: ["v1"], resources: ["virtualmachines"], scope: Namespaced}
      - {operations: ["CREATE"], apiGroups: ["kubevirt.io"], apiVersions: ["v1"], resources: ["virtualmachineinstances"], scope: Namespaced}
EOF
}

# A rendered pod as virt-controller sends it: apiVersion/kind are the
# client's; the namespace is the create call's.
as_sent() { # pod.json -> stdout
	"$PY" -c 'import json,sys; p=json.load(open(sys.argv[1])); p={"apiVersion":"v1","kind":"Pod",**p}; p.pop("status",None); print(json.dumps(p))' "$1"
}
create_pod() { # file [kubectl args] -> the created object on stdout
	local f=$1
	shift
	as_sent "$f" | kctl --as="$CONTROLLER" -n "$NS" create --dry-run=server --validate=false -o json "$@" -f -
}

# --- derived pods (provenance in tests/lib/rendered.py)
PODS=$WORK/pods
mkdir -p "$PODS"
cp "$FIX"/*.pod.json "$PODS/"
"$PY" tests/lib/rendered.py derive-migration "$FIX/01-masquerade.pod.json" "$PODS/12-migration-target-01.pod.json"
"$PY" tests/lib/rendered.py derive-migration "$FIX/06-multus-bridge-secondary.pod.json" \
	"$PODS/13-migration-target-06.pod.json"
"$PY" tests/lib/rendered.py derive-sa-name "$FIX/01-masquerade.pod.json" vm-sa "$PODS/14-serviceaccountname-v1.9.pod.json"
# Every other binding the sidecar serves (issue 20 item 4): bridge on the pod
# network (migrated only with KubeVirt's annotation on the VMI), the passt
# plugin and core binding, Istio.
"$PY" tests/lib/rendered.py derive-migration "$FIX/02-bridge.pod.json" "$PODS/15-migration-target-02.pod.json" \
	kubevirt.io/allow-pod-bridge-network-live-migration=
"$PY" tests/lib/rendered.py derive-migration "$FIX/03-passt-binding-plugin.pod.json" \
	"$PODS/16-migration-target-03.pod.json"
"$PY" tests/lib/rendered.py derive-migration "$FIX/04-passt-core-binding.pod.json" "$PODS/17-migration-target-04.pod.json"
"$PY" tests/lib/rendered.py derive-migration "$FIX/05-istio-masquerade.pod.json" "$PODS/18-migration-target-05.pod.json"
mapfile -t CASES < <(find "$PODS" -name '*.pod.json' -printf '%f\n' | sed 's|\.pod\.json$||' | sort)
expect_eq "pods: 10 rendered, 7 derived" 17 "${#CASES[@]}"

# --- 2. what a webhook is sent: a recording webhook in front
latest() { # the review recorded last (files are numbered in arrival order)
	local f
	f=$(find "$WORK/rec" -name '*.json' -printf '%f\n' | sort -n | tail -n 1)
	echo "$WORK/rec/$f"
}
mkdir -p "$WORK/rec"
"$PY" tests/lib/record_webhook.py "$WORK/certs/tls.crt" "$WORK/certs/tls.key" "$WORK/rec" --seconds 900 \
	>"$WORK/rec.port" 2>"$WORK/rec.log" &
RPID=$!
for _ in $(seq 100); do [[ -s "$WORK/rec.port" ]] && break; sleep 0.05; done
register "$(sed -n 's/^port //p' "$WORK/rec.port")"
inforce=0
for _ in $(seq 150); do
	if create_pod "$PODS/01-masquerade.pod.json" >/dev/null 2>&1 && [[ -n $(ls "$WORK/rec") ]]; then
		inforce=1
		break
	fi
	sleep 0.2
done
expect_eq "recording webhook in force" 1 "$inforce"
rm -f "$WORK"/rec/*
REVIEWS=$WORK/reviews
mkdir -p "$REVIEWS"
for c in "${CASES[@]}"; do
	if ! create_pod "$PODS/$c.pod.json" >"$WORK/$c.created.json" 2>"$WORK/$c.err"; then
		not_ok "$c: the API server admits the pod as rendered" "$(cat "$WORK/$c.err")"
		continue
	fi
	rec=$(latest)
	checked "$c: handed over" "$PY" tests/lib/rendered.py restore "$rec" "$PODS/$c.pod.json" "$REVIEWS/$c.json"
	if grep -q "\"username\":\"$CONTROLLER\"" "$rec"; then
		ok "$c: sent by $CONTROLLER"
	else
		not_ok "$c: sent by $CONTROLLER" "$(head -c 400 "$rec")"
	fi
done

# --- 3. the patch on each, applied and admitted
for c in "${CASES[@]}"; do
	[[ -s "$REVIEWS/$c.json" ]] || continue
	# native, container, and each with --network-mode agent (issue 29)
	for mode in native container native-agent container-agent; do
		args=() net=(--network-mode pod) agent=()
		[[ $mode == container* ]] && args=(--container)
		[[ $mode == *-agent ]] && args+=(--agent) net=(--network-mode agent) agent=(--agent)
		resp=$WORK/$c.$mode.resp.json
		"$CLI" "${args[@]}" --image "$IMAGE" <"$REVIEWS/$c.json" >"$resp" 2>"$WORK/meta"
		expect_eq "$c ($mode): patched" "status=200 outcome=patched" \
			"$(sed -n 's/^\(status=[0-9]*\) kind=[a-z]* \(outcome=[a-z]*\).*/\1 \2/p' "$WORK/meta")"
		checked "$c ($mode)" "$PY" tests/lib/jsonpatch_check.py "$REVIEWS/$c.json" "$resp" --expect patched \
			--mode "${mode%-agent}" "${net[@]}" --image "$IMAGE"
		checked "$c ($mode)" "$PY" tests/lib/rendered.py check "$REVIEWS/$c.json" "$resp" --mode "${mode%-agent}" \
			"${agent[@]}" --emit-pod "$WORK/$c.$mode.patched.json"
		# 1.20 refuses any probe on an init container (restartable ones, and
		# their startupProbe, are 1.29's): the dry-run takes the native
		# agent-mode pod without it, as restartPolicy is dropped unknown.
		if [[ $mode == native-agent ]]; then
			"$PY" -c 'import json,sys; p=json.load(open(sys.argv[1])); [c.pop("startupProbe") for c in p["spec"]["initContainers"] if c["name"]=="imds-server"]; json.dump(p, open(sys.argv[1], "w"))' \
				"$WORK/$c.$mode.patched.json"
		fi
		# The patched pod through the API server, as it would be stored
		# (server-side dry-run; the recording webhook allows it as is).
		if out=$(kctl --as="$CONTROLLER" -n "$NS" create --dry-run=server --validate=false -o json \
			-f "$WORK/$c.$mode.patched.json" 2>&1); then
			if "$PY" -c 'import json,sys; p=json.loads(sys.argv[1]); sys.exit(0 if [c["name"] for c in p["spec"].get("initContainers",[])+p["spec"]["containers"]].count("imds-server")==1 and any(v["name"]=="imds-token" for v in p["spec"]["volumes"]) else 1)' "$out"; then
				ok "$c ($mode): the API server accepts the patched pod (server-side dry-run)"
			else
				not_ok "$c ($mode): the API server accepts the patched pod (server-side dry-run)" "${out:0:800}"
			fi
		else
			not_ok "$c ($mode): the API server accepts the patched pod (server-side dry-run)" "${out:0:800}"
		fi
	done
done

# --- 6a. a migration target gets the sidecar its source got
for pair in "01-masquerade 12-migration-target-01" "06-multus-bridge-secondary 13-migration-target-06" \
	"02-bridge 15-migration-target-02" "03-passt-binding-plugin 16-migration-target-03" \
	"04-passt-core-binding 17-migration-target-04" "05-istio-masquerade 18-migration-target-05"; do
	read -r src dst <<<"$pair"
	checked "$dst" "$PY" tests/lib/rendered.py same-sidecar "$REVIEWS/$src.json" "$WORK/$src.native.resp.json" \
		"$REVIEWS/$dst.json" "$WORK/$dst.native.resp.json"
	if "$PY" -c 'import json,sys; o=json.load(open(sys.argv[1]))["request"]["object"]; sys.exit(0 if "kubevirt.io/migrationJobUID" in o["metadata"]["labels"] else 1)' \
		"$REVIEWS/$dst.json"; then
		ok "$dst: the webhook saw the target's kubevirt.io/migrationJobUID label"
	else
		not_ok "$dst: the webhook saw the target's kubevirt.io/migrationJobUID label"
	fi
done

# --- 5. the VMIs, as the API server hands them over
rm -f "$WORK"/rec/*
# shellcheck disable=SC2054 # the commas are the annotation's
declare -A WANT=(
	[01-masquerade]=default:masquerade:tap0
	[02-bridge]=default:bridge:tap0
	[03-passt-binding-plugin]=default:passt
	[04-passt-core-binding]=default:passt
	[05-istio-masquerade]=default:masquerade:tap0
	[06-multus-bridge-secondary]=default:masquerade:tap0,br1:bridge:tap26578a32802
	[07-sriov]=default:masquerade:tap0,sriov:sriov
	[08-serviceaccountname-field]=default:masquerade:tap0
	[09-serviceaccount-volume]=default:masquerade:tap0
	[10-guaranteed-dedicated-cpu]=default:masquerade:tap0
	[11-guaranteed-requests-equal-limits]=default:masquerade:tap0
)
n=0
for f in "$FIX"/*.vmi.yaml; do
	c=$(basename "$f" .vmi.yaml)
	n=$((n + 1))
	if ! kctl -n "$NS" create --dry-run=server -f "$f" >/dev/null 2>"$WORK/err"; then
		not_ok "$c VMI: admitted" "$(cat "$WORK/err")"
		continue
	fi
	rev=$(latest)
	"$CLI" --image "$IMAGE" <"$rev" >"$WORK/vmi.resp" 2>"$WORK/meta"
	pod=$FIX/$c.pod.json
	[[ -e "$pod" ]] || pod=
	checked "$c VMI" "$PY" tests/lib/rendered.py vmi-interfaces "$rev" "$WORK/vmi.resp" "${WANT[$c]}" ${pod:+"$pod"}
	checked "$c VMI" "$PY" tests/lib/jsonpatch_check.py "$rev" "$WORK/vmi.resp" --expect patched
done
expect_eq "VMIs read" 11 "$n"
kill -TERM "$RPID" 2>/dev/null
wait "$RPID" 2>/dev/null
RPID=

# --- 4. and 5. the same through imds-webhook itself, with --network-mode
# pod: this API server (1.20) refuses a startupProbe on an init container,
# which the default network mode (agent) gives the native sidecar (native
# sidecars need 1.29 anyway); the default's patch over every pod is judged
# above (admission_cli --agent, both sidecar modes) and by webhook_psa.sh
# through imds-webhook itself.
WLOG=$WORK/webhook.log
"$WH" --listen 127.0.0.1:0 --tls-cert-file "$WORK/certs/tls.crt" --tls-key-file "$WORK/certs/tls.key" \
	--imds-image "$IMAGE" --network-mode pod 2>"$WLOG" &
WPID=$!
WPORT=
for _ in $(seq 300); do
	WPORT=$(sed -n 's/.* on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$WLOG" 2>/dev/null | head -n1)
	[[ -n "$WPORT" ]] && break
	sleep 0.01
done
register "$WPORT"
inforce=0
for _ in $(seq 150); do
	if create_pod "$PODS/01-masquerade.pod.json" 2>/dev/null | grep -q '"imds.kubevirt.io/injected"'; then
		inforce=1
		break
	fi
	sleep 0.2
done
expect_eq "imds-webhook in force" 1 "$inforce"
for c in "${CASES[@]}"; do
	if out=$(create_pod "$PODS/$c.pod.json" 2>&1) &&
		"$PY" -c '
import json, sys
p = json.loads(sys.argv[1])
i = [c["name"] for c in p["spec"]["initContainers"]]
ok = i[0] == "guest-console-log" and i[-1] == "imds-server" and p["spec"]["containers"][0]["name"] == "compute"
ok = ok and p["metadata"]["annotations"].get("imds.kubevirt.io/injected") == "true"
sys.exit(0 if ok else 1)' "$out"; then
		ok "$c: injected through the API server (guest-console-log first, imds-server last, compute first)"
	else
		not_ok "$c: injected through the API server" "${out:0:800}"
	fi
done

# VMIs: stored with the annotation; it reaches the pod's sidecar unchanged
kctl -n "$NS" create -f "$FIX/06-multus-bridge-secondary.vmi.yaml" >/dev/null 2>"$WORK/err"
got=$(kctl -n "$NS" get virtualmachineinstance vmi-multus-bridge-secondary \
	-o 'jsonpath={.metadata.annotations.imds\.kubevirt\.io/interfaces}' 2>&1)
expect_eq "06 VMI stored with imds.kubevirt.io/interfaces" "default:masquerade:tap0,br1:bridge:tap26578a32802" "$got"
# KubeVirt copies the VMI's annotations to the pod (pinned above): the
# rendered pod with the stored VMI's annotation added.
"$PY" -c '
import json, sys
p = json.load(open(sys.argv[1]))
p["metadata"]["annotations"]["imds.kubevirt.io/interfaces"] = sys.argv[2]
json.dump(p, open(sys.argv[3], "w"))' "$PODS/06-multus-bridge-secondary.pod.json" "$got" "$WORK/06-ann.pod.json"
out=$(create_pod "$WORK/06-ann.pod.json" 2>&1)
expect_eq "06 pod: the sidecar gets IMDS_INTERFACES unchanged" "$got" \
	"$("$PY" -c 'import json,sys; p=json.loads(sys.argv[1]); print([e.get("value") for c in p["spec"]["initContainers"] if c["name"]=="imds-server" for e in c["env"] if e["name"]=="IMDS_INTERFACES"][0])' "$out" 2>&1)"
"$PY" -c '
import json, sys
p = json.load(open(sys.argv[1]))
p["metadata"]["annotations"]["imds.kubevirt.io/interfaces"] = "default:masquerade"
json.dump(p, open(sys.argv[2], "w"))' "$PODS/01-masquerade.pod.json" "$WORK/01-bad.pod.json"
if out=$(create_pod "$WORK/01-bad.pod.json" 2>&1); then
	not_ok "a malformed imds.kubevirt.io/interfaces on a pod is denied" "${out:0:400}"
else
	if [[ "$out" == *"imds.kubevirt.io/interfaces"* ]]; then
		ok "a malformed imds.kubevirt.io/interfaces on a pod is denied, naming it"
	else
		not_ok "a malformed imds.kubevirt.io/interfaces on a pod is denied, naming it" "${out:0:400}"
	fi
fi

# Warnings, as kubectl shows them
vm() { # name own-annotations-yaml template-annotations-yaml interfaces networks
	cat <<EOF
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: $1
  annotations: $2
spec:
  runStrategy: Always
  template:
    metadata:
      annotations: $3
    spec:
      domain:
        devices:
          interfaces: $4
      networks: $5
EOF
}
vm vm-sriov '{}' '{imds.kubevirt.io/enabled: "true"}' '[{name: fast, sriov: {}}]' \
	'[{name: fast, multus: {networkName: sriov-net}}]' | kctl -n "$NS" create -f - >/dev/null 2>"$WORK/w1"
has_line() { # name file fixed-string
	if grep -qF -- "$3" "$2"; then ok "$1"; else not_ok "$1" "$(cat "$2")"; fi
}
has_line "kubectl shows the warning for a VM whose only NIC is SR-IOV" "$WORK/w1" \
	'Warning: imds.kubevirt.io: interface "fast" (sriov): the VF bypasses the pod network' 
vm vm-macvtap '{}' '{imds.kubevirt.io/enabled: "true"}' \
	'[{name: mv, binding: {name: macvtap}}, {name: x, binding: {name: ovs-tap}}]' \
	'[{name: mv, multus: {networkName: mvnet}}, {name: x, multus: {networkName: n}}]' |
	kctl -n "$NS" create -f - >/dev/null 2>"$WORK/w2"
expect_eq "a VM with macvtap and an unknown plugin: 3 warnings (one per NIC, one naming the flag)" 3 \
	"$(grep -c '^Warning: imds.kubevirt.io: ' "$WORK/w2")"
has_line "the unknown plugin's warning names the flag" "$WORK/w2" '--binding-plugin ovs-tap=KIND'
vm vm-own '{imds.kubevirt.io/enabled: "true", imds.kubevirt.io/user-data: "#cloud-config"}' '{}' \
	'[{name: default, masquerade: {}}]' '[{name: default, pod: {}}]' | kctl -n "$NS" create -f - >/dev/null 2>"$WORK/w3"
has_line "kubectl shows the warning for annotations on a VM's own metadata" "$WORK/w3" \
	"Warning: imds.kubevirt.io: imds.kubevirt.io/enabled, imds.kubevirt.io/user-data are on the VirtualMachine's own metadata; KubeVirt copies only spec.template.metadata.annotations to the VMI and its pod: move them there"
vm vm-fine '{}' '{imds.kubevirt.io/enabled: "true"}' '[{name: default, masquerade: {}}]' \
	'[{name: default, pod: {}}]' | kctl -n "$NS" create -f - >/dev/null 2>"$WORK/w4"
expect_eq "a VM that can be served: no warning" "" "$(cat "$WORK/w4")"

# --- 6b. spec.serviceAccountName (KubeVirt 1.9): the token is that account's
out=$(as_sent "$PODS/14-serviceaccountname-v1.9.pod.json" |
	kctl --as="$CONTROLLER" -n "$NS" create --validate=false -o json -f - 2>&1)
podname=$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["metadata"]["name"])' "$out" 2>/dev/null)
if [[ -n "$podname" ]]; then
	ok "14: the v1.9 pod with serviceAccountName vm-sa is stored, injected ($podname)"
	if "$PY" -c '
import json, sys
p = json.loads(sys.argv[1])
s = p["spec"]
assert s["serviceAccountName"] == "vm-sa" and s["automountServiceAccountToken"] is False
assert not any(v["name"].startswith("kube-api-access-") for v in s["volumes"]), "no automounted token"
assert any(v["name"] == "imds-token" for v in s["volumes"])' "$out" 2>"$WORK/err"; then
		ok "14: no automounted token, the sidecar's own projected token volume"
	else
		not_ok "14: no automounted token, the sidecar's own projected token volume" "$(cat "$WORK/err")"
	fi
	# What kubelet does for a projected serviceAccountToken source: a
	# TokenRequest for the pod's own account, bound to the pod.
	uid=$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["metadata"]["uid"])' "$out")
	tr=$(kube_curl -X POST -H 'Content-Type: application/json' \
		"$KUBE_APISERVER_URL/api/v1/namespaces/$NS/serviceaccounts/vm-sa/token" \
		-d "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\",\"spec\":{\"expirationSeconds\":3600,\"boundObjectRef\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":\"$podname\",\"uid\":\"$uid\"}}}")
	sub=$("$PY" -c '
import base64, json, sys
t = json.loads(sys.argv[1])["status"]["token"].split(".")[1]
c = json.loads(base64.urlsafe_b64decode(t + "=" * (-len(t) % 4)))
print(c["sub"], c["kubernetes.io"]["pod"]["name"] == sys.argv[2])' "$tr" "$podname" 2>&1)
	expect_eq "14: the token kubelet gets for the pod is vm-sa's, bound to the pod" \
		"system:serviceaccount:$NS:vm-sa True" "$sub"
else
	not_ok "14: the v1.9 pod with serviceAccountName vm-sa is stored, injected" "${out:0:600}"
fi

kill -TERM "$WPID" 2>/dev/null
wait "$WPID" 2>/dev/null
WPID=
if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$WLOG"; then
	not_ok "sanitizers quiet" "$(grep -A20 Sanitizer "$WLOG" | head -30)"
else
	ok "webhook log: no sanitizer report"
fi
tap_done
