#!/usr/bin/env bash
# Smoke test of tests/lib/kube.sh: a real etcd + kube-apiserver on loopback
# store core objects and KubeVirt CRD objects, answer server-side dry-runs,
# issue and validate service-account tokens, and call a mutating webhook over
# HTTPS whose JSONPatch ends up in the stored Pod. That last step is the one
# that crashes an apiserver built with the vendored reflect2 1.0.1.
#
# Usage: tests/lib/kube_smoke.sh      (KUBE_KEEP_STATE=1 keeps the workdir)
set -euo pipefail
# Functions run in $(...) must stop at their first failing step too.
shopt -s inherit_errexit

SMOKE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/kube.sh
source "$SMOKE_DIR/kube.sh"

NS=imds-smoke
WORKDIR=""
WEBHOOK_PID=""
FAILURES=0
PYTHON=python3
# Debian's interpreter when there is one: the tests must not depend on
# whatever a version manager put first on PATH.
if [[ -x /usr/bin/python3 ]]; then
	PYTHON=/usr/bin/python3
fi

pass() {
	printf 'PASS: %s\n' "$*"
}

fail() {
	printf 'FAIL: %s\n' "$*"
	FAILURES=$((FAILURES + 1))
}

cleanup() {
	local rc=$?
	if [[ -n $WEBHOOK_PID ]]; then
		kill "$WEBHOOK_PID" 2>/dev/null || true
		wait "$WEBHOOK_PID" 2>/dev/null || true
		WEBHOOK_PID=""
	fi
	if [[ $rc -ne 0 && -n ${KUBE_STATE_DIR:-} && -f $KUBE_STATE_DIR/kube-apiserver.log ]]; then
		echo "--- last lines of kube-apiserver.log" >&2
		tail -n 30 "$KUBE_STATE_DIR/kube-apiserver.log" >&2
	fi
	kube_stop
	if [[ -n $WORKDIR && ${KUBE_KEEP_STATE:-0} != 1 ]]; then
		rm -rf "$WORKDIR"
	fi
	return "$rc"
}

check_core_objects() {
	kube_create_namespace "$NS"
	kctl -n "$NS" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: smoke-config
data:
  userdata: "#cloud-config\n"
EOF
	if [[ $(kctl -n "$NS" get configmap smoke-config -o 'jsonpath={.data.userdata}') == '#cloud-config' ]]; then
		pass "ConfigMap applied and read back"
	else
		fail "ConfigMap not stored"
	fi

	kctl -n "$NS" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: plain-pod
spec:
  containers:
  - name: c
    image: registry.invalid/none:1
EOF
	# The ServiceAccount admission plugin adds kube-api-access-* (projected
	# token volume) with BoundServiceAccountTokenVolume on.
	local vols
	vols=$(kctl -n "$NS" get pod plain-pod -o 'jsonpath={.spec.volumes[*].name}')
	if [[ $vols == kube-api-access-* ]]; then
		pass "Pod applied and stored (volumes: $vols)"
	else
		fail "Pod stored without projected token volume (volumes: '$vols')"
	fi

	kctl -n "$NS" apply --dry-run=server -f - >/dev/null <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: dry-deploy
spec:
  replicas: 1
  selector:
    matchLabels: {app: dry}
  template:
    metadata:
      labels: {app: dry}
    spec:
      containers:
      - name: c
        image: registry.invalid/none:1
EOF
	if ! kctl -n "$NS" get deployment dry-deploy >/dev/null 2>&1; then
		pass "Deployment accepted by server-side dry-run and not persisted"
	else
		fail "dry-run Deployment was persisted"
	fi
}

write_kubevirt_crd() {
	local kind=$1 plural=$2 singular=$3 short=$4
	cat <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: $plural.kubevirt.io
spec:
  group: kubevirt.io
  scope: Namespaced
  names:
    kind: $kind
    plural: $plural
    singular: $singular
    shortNames: [$short]
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
---
EOF
}

check_kubevirt_crds() {
	{
		write_kubevirt_crd VirtualMachine virtualmachines virtualmachine vm
		write_kubevirt_crd VirtualMachineInstance virtualmachineinstances virtualmachineinstance vmi
	} | kctl apply -f - >/dev/null
	kctl wait --for condition=established --timeout=30s \
		crd/virtualmachines.kubevirt.io crd/virtualmachineinstances.kubevirt.io >/dev/null
	kctl -n "$NS" apply -f - >/dev/null <<'EOF'
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: plain-vm
spec:
  running: false
  template:
    spec:
      domain:
        devices: {}
        resources:
          requests: {memory: 128Mi}
EOF
	if [[ $(kctl -n "$NS" get vm plain-vm -o 'jsonpath={.spec.template.spec.domain.resources.requests.memory}') == 128Mi ]]; then
		pass "KubeVirt CRDs established, VirtualMachine stored with unknown fields preserved"
	else
		fail "VirtualMachine not stored"
	fi
}

check_service_account_tokens() {
	local token authenticated code
	token=$(kctl create --raw "/api/v1/namespaces/$NS/serviceaccounts/default/token" -f - <<EOF |
{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest",
 "spec":{"audiences":["$KUBE_SA_ISSUER"],"expirationSeconds":3600}}
EOF
		"$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["status"]["token"])')
	authenticated=$(kctl create -o 'jsonpath={.status.authenticated}' -f - <<EOF
{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview",
 "spec":{"token":"$token"}}
EOF
	)
	# Authenticated but without RBAC grants: 403, not 401.
	code=$(curl -sS --noproxy '*' -o /dev/null -w '%{http_code}' --cacert "$KUBE_CA_FILE" \
		-H "Authorization: Bearer $token" "$KUBE_APISERVER_URL/api/v1/namespaces/$NS/pods")
	if [[ $authenticated == true && $code == 403 ]]; then
		pass "TokenRequest token validates (TokenReview authenticated, bearer call -> 403)"
	else
		fail "service-account token: authenticated='$authenticated' http=$code"
	fi
}

write_webhook_server() {
	cat >"$1" <<'EOF'
# Throwaway mutating webhook for kube_smoke.sh: adds an annotation (and, on
# pods, an emptyDir volume) with a JSONPatch; logs one line per review.
import base64, http.server, json, ssl, sys

port, cert, key, log_path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, code, body, ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.reply(200 if self.path == "/healthz" else 404, b"ok", "text/plain")

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        review = json.loads(body)
        req = review["request"]
        obj = req["object"]
        patch = []
        if not obj["metadata"].get("annotations"):
            patch.append({"op": "add", "path": "/metadata/annotations", "value": {}})
        patch.append({"op": "add", "path": "/metadata/annotations/imds-smoke~1mutated",
                      "value": "true"})
        if req["kind"]["kind"] == "Pod":
            if not obj["spec"].get("volumes"):
                patch.append({"op": "add", "path": "/spec/volumes", "value": []})
            patch.append({"op": "add", "path": "/spec/volumes/-",
                          "value": {"name": "imds-smoke", "emptyDir": {}}})
        out = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
               "response": {"uid": req["uid"], "allowed": True, "patchType": "JSONPatch",
                            "patch": base64.b64encode(json.dumps(patch).encode()).decode()}}
        with open(log_path, "a") as log:
            log.write("%s %s %s/%s dryRun=%s path=%s\n" % (
                req["operation"], req["kind"]["kind"], req.get("namespace"),
                obj["metadata"].get("name"), req.get("dryRun"), self.path))
        self.reply(200, json.dumps(out).encode())

    def log_message(self, *args):
        pass

ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.minimum_version = ssl.TLSVersion.TLSv1_2
ctx.load_cert_chain(cert, key)
server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
server.serve_forever()
EOF
}

start_webhook() {
	local dir=$1 port=$2 tries
	kube_gen_webhook_cert "$dir"
	write_webhook_server "$dir/webhook.py"
	"$PYTHON" "$dir/webhook.py" "$port" "$dir/tls.crt" "$dir/tls.key" "$dir/requests.log" \
		>"$dir/webhook.out" 2>&1 &
	WEBHOOK_PID=$!
	for ((tries = 0; tries < 50; tries++)); do
		if curl -fsS --noproxy '*' --cacert "$dir/ca.crt" "https://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	cat "$dir/webhook.out" >&2
	return 1
}

register_webhook() {
	local dir=$1 port=$2
	kctl apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: imds-smoke
webhooks:
- name: smoke.imds.kubevirt.io
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 5
  reinvocationPolicy: Never
  objectSelector:
    matchLabels: {imds-smoke: "yes"}
  clientConfig:
    url: https://127.0.0.1:$port/mutate
    caBundle: $(base64 -w0 "$dir/ca.crt")
  rules:
  - apiGroups: [""]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [pods]
  - apiGroups: [kubevirt.io]
    apiVersions: [v1]
    operations: [CREATE, UPDATE]
    resources: [virtualmachines, virtualmachineinstances]
EOF
}

opted_in_pod() {
	cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  labels: {imds-smoke: "yes"}
spec:
  containers:
  - name: c
    image: registry.invalid/none:1
EOF
}

# The apiserver picks up a new webhook configuration through an informer,
# usually within a second: probe with server-side dry-runs (sideEffects: None
# allows the call) until the patch shows.
wait_webhook_active() {
	local tries annotations
	for ((tries = 0; tries < 50; tries++)); do
		annotations=$(opted_in_pod probe |
			kctl -n "$NS" create --dry-run=server -o 'jsonpath={.metadata.annotations}' -f - 2>/dev/null) || true
		if [[ $annotations == *imds-smoke/mutated* ]]; then
			return 0
		fi
		sleep 0.2
	done
	return 1
}

check_mutating_webhook() {
	local dir=$WORKDIR/webhook port annotation vols vm_annotation
	mkdir -p "$dir"
	kube_free_port
	port=$KUBE_FREE_PORT
	start_webhook "$dir" "$port"
	register_webhook "$dir" "$port"
	if ! wait_webhook_active; then
		fail "webhook never applied a patch (see $dir/requests.log)"
		return 0
	fi
	opted_in_pod mutated-pod | kctl -n "$NS" create -f - >/dev/null
	annotation=$(kctl -n "$NS" get pod mutated-pod -o "jsonpath={.metadata.annotations['imds-smoke/mutated']}")
	vols=$(kctl -n "$NS" get pod mutated-pod -o 'jsonpath={.spec.volumes[*].name}')
	if [[ $annotation == true && " $vols " == *" imds-smoke "* ]] &&
		grep -q "^CREATE Pod $NS/mutated-pod dryRun=False" "$dir/requests.log"; then
		pass "webhook at https://127.0.0.1:$port/mutate called; JSONPatch applied to stored Pod (volumes: $vols)"
	else
		fail "Pod not mutated: annotation='$annotation' volumes='$vols'"
	fi
	kctl -n "$NS" apply -f - >/dev/null <<'EOF'
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: mutated-vm
  labels: {imds-smoke: "yes"}
spec:
  running: false
  template:
    spec:
      domain: {devices: {}}
EOF
	vm_annotation=$(kctl -n "$NS" get vm mutated-vm -o "jsonpath={.metadata.annotations['imds-smoke/mutated']}")
	if [[ $vm_annotation == true ]]; then
		pass "JSONPatch applied to a VirtualMachine (CRD object)"
	else
		fail "VirtualMachine not mutated"
	fi
	# The apiserver must survive the patches (reflect2 1.0.1 panics here).
	if [[ $(kube_curl "$KUBE_APISERVER_URL/readyz") == ok ]]; then
		pass "apiserver still ready after mutating admissions"
	else
		fail "apiserver not ready after webhook calls"
	fi
	if grep -q 'panic' "$KUBE_STATE_DIR/kube-apiserver.log"; then
		fail "panic in kube-apiserver.log"
	fi
}

main() {
	WORKDIR=$(mktemp -d "${TMPDIR:-/tmp}/imds-kube-smoke.XXXXXX")
	trap cleanup EXIT
	kube_start "$WORKDIR"
	pass "kube-apiserver ready in ${KUBE_START_SECONDS}s ($("$KUBE_BIN_DIR/kube-apiserver" --version))"
	check_core_objects
	check_kubevirt_crds
	check_service_account_tokens
	check_mutating_webhook
	if [[ $FAILURES -ne 0 ]]; then
		printf 'kube smoke: %d failure(s)\n' "$FAILURES"
		return 1
	fi
	printf 'kube smoke: all passed\n'
}

main "$@"
