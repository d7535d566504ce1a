#!/usr/bin/env bash
# Certificate rotation without an outage (issue 33 item 2), against the real
# kube-apiserver: hack/generate-certs.sh installs, rotates the serving
# certificate keeping the CA, skips a renewal that is not due, rotates the CA
# through a bundle holding the old and the new one, then drops the old one —
# while labelled launcher pods are admitted without a pause through a
# failurePolicy: Fail webhook (a TLS failure is a refused pod), and while a
# simulated kubelet copies the Secret into the webhook's directory (the
# ..data swap) only KUBELET_DELAY seconds after each change, as kubelet's
# sync period and cache delay it on a node. Every admission must succeed. A
# control replays the old procedure (a new CA alone in the caBundle at once)
# and must see failures, so the harness can fail.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
REPO=$(pwd)
# shellcheck source=tests/lib/tap.sh
. tests/lib/tap.sh
# shellcheck source=tests/lib/kube.sh
. tests/lib/kube.sh
# shellcheck source=tests/lib/certs.sh
. tests/lib/certs.sh

VARIANT=${IMDS_VARIANT:-debug}
WH=$REPO/build/$VARIANT/imds-webhook
KUBELET_DELAY=${KUBELET_DELAY:-4}
T=$(mktemp -d "${IMDS_TEST_TMPDIR:-/tmp}/webhook-rotation.XXXXXX")
CERTS=$T/certs
WPID=
SIMPID=
LOOPPID=
cleanup() {
	[[ -n $LOOPPID ]] && kill "$LOOPPID" 2>/dev/null
	[[ -n $SIMPID ]] && kill "$SIMPID" 2>/dev/null
	[[ -n $WPID ]] && kill -KILL "$WPID" 2>/dev/null
	kube_stop
	rm -rf "$T"
}
trap cleanup EXIT

if [[ ! -x $WH ]]; then
	not_ok "imds-webhook built at $WH"
	tap_done
	exit 1
fi
if ! kube_start "$T" >"$T/kube-start.log" 2>&1; then
	not_ok "kube-apiserver and etcd started" "$(tail -n 30 "$T/kube-start.log")"
	tap_done
	exit 1
fi
ok "kube-apiserver ready in ${KUBE_START_SECONDS:-?} s"
kube_create_namespace kubevirt-imds >/dev/null
kube_create_namespace vms >/dev/null
kctl label namespace vms imds-rotation-test=true >/dev/null

# The webhook starts before the Secret exists (not ready), as in a fresh install.
# --network-mode pod: this API server (1.20) refuses a startupProbe on an init
# container, which the default network mode (agent) gives the native sidecar
# (native sidecars need 1.29; docs/webhook.md, --network-mode).
mkdir -p "$CERTS"
"$WH" --listen 127.0.0.1:0 --tls-cert-file "$CERTS/tls.crt" --tls-key-file "$CERTS/tls.key" \
	--imds-image registry.example/imds-server:test --network-mode pod 2>"$T/webhook.log" &
WPID=$!
PORT=
for _ in $(seq 300); do
	PORT=$(sed -n 's/.* on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$T/webhook.log" 2>/dev/null | head -n1)
	[[ -n $PORT ]] && break
	sleep 0.01
done
[[ -n $PORT ]] || { not_ok "webhook started" "$(cat "$T/webhook.log")"; tap_done; exit 1; }

# The labelled opt-in path of deploy/base: failurePolicy Fail.
kctl create -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: imds-webhook}
webhooks:
  - name: opted-in.pods.imds.kubevirt.io
    admissionReviewVersions: ["v1"]
    sideEffects: None
    failurePolicy: Fail
    timeoutSeconds: 5
    clientConfig: {url: "https://127.0.0.1:$PORT/mutate-pods"}
    objectSelector: {matchLabels: {kubevirt.io: virt-launcher, imds.kubevirt.io/enabled: "true"}}
    namespaceSelector: {matchLabels: {imds-rotation-test: "true"}}
    rules:
      - {operations: ["CREATE"], apiGroups: [""], apiVersions: ["v1"], resources: ["pods"], scope: Namespaced}
EOF

gen() { # generate-certs.sh args...
	local ctx=$KUBE_CONTEXT
	KUBECTL=$KUBE_BIN_DIR/kubectl KUBE_CONTEXT='' hack/generate-certs.sh --kubeconfig "$KUBECONFIG_FILE" \
		--context "$ctx" --san IP:127.0.0.1 "$@"
}
# The Secret as JSON on one line (the API server pretty-prints for curl's own
# user agent).
secret_json() {
	kube_curl -A imds-rotation-test "$KUBE_APISERVER_URL/api/v1/namespaces/kubevirt-imds/secrets/imds-webhook-tls" 2>/dev/null
}
secret_rv() {
	secret_json |
		grep -o '"resourceVersion":"[0-9]*"' | head -n1 | grep -o '[0-9]*'
}
bundle_count() {
	kctl get mutatingwebhookconfiguration imds-webhook -o 'go-template={{(index .webhooks 0).clientConfig.caBundle}}' |
		base64 -d | grep -c 'BEGIN CERTIFICATE'
}
served_serial() {
	openssl s_client -connect "127.0.0.1:$PORT" </dev/null 2>/dev/null | openssl x509 -noout -serial 2>/dev/null
}
secret_serial() {
	kctl -n kubevirt-imds get secret imds-webhook-tls -o 'go-template={{index .data "tls.crt"}}' |
		base64 -d | openssl x509 -noout -serial
}

# The kubelet: polls the Secret; after a change, waits KUBELET_DELAY seconds
# (the first copy, at install, at once), then swaps ..data to the new pair.
kubelet_sim() {
	local last="" rv json n=0
	while :; do
		json=$(secret_json)
		rv=$(grep -o '"resourceVersion":"[0-9]*"' <<<"$json" | head -n1 | grep -o '[0-9]*')
		if [[ -n $rv && $rv != "$last" ]]; then
			[[ -n $last ]] && sleep "$KUBELET_DELAY"
			# the Secret as it is now (a newer write supersedes, as on a node)
			json=$(secret_json)
			rv=$(grep -o '"resourceVersion":"[0-9]*"' <<<"$json" | head -n1 | grep -o '[0-9]*')
			n=$((n + 1))
			mkdir -p "$T/sync-$n"
			grep -o '"tls.crt":"[^"]*"' <<<"$json" | cut -d'"' -f4 | base64 -d >"$T/sync-$n/tls.crt"
			grep -o '"tls.key":"[^"]*"' <<<"$json" | cut -d'"' -f4 | base64 -d >"$T/sync-$n/tls.key"
			kubelet_dir "$CERTS" "sync_$n" "$T/sync-$n"
			printf '%s %s\n' "$rv" "$(date +%s.%N)" >>"$T/synced"
			last=$rv
		fi
		sleep 0.2
	done
}
# wait_synced: until the simulated kubelet has copied the Secret's current
# version and the webhook serves it (its reload takes ~0.1 s).
wait_synced() {
	local rv want i
	rv=$(secret_rv)
	want=$(secret_serial)
	for ((i = 0; i < 300; i++)); do
		if [[ -f $T/synced ]] && tail -n1 "$T/synced" | grep -q "^$rv " && [[ $(served_serial) == "$want" ]]; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

launcher() { # name
	cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  labels: {kubevirt.io: virt-launcher, imds.kubevirt.io/enabled: "true"}
  annotations: {kubevirt.io/domain: $1, imds.kubevirt.io/enabled: "true"}
spec:
  containers: [{name: compute, image: quay.io/kubevirt/virt-launcher:v1.8.4}]
EOF
}
admit() { # name: 0 when the pod is admitted and patched by the webhook
	launcher "$1" | kctl -n vms create --dry-run=server -o json -f - 2>>"$T/admit.err" |
		grep -q '"imds.kubevirt.io/injected"'
}
# Admissions without a pause, one line each: "ok" or "fail <time>".
admit_loop() {
	local i=0
	while [[ ! -e $T/stop ]]; do
		i=$((i + 1))
		if admit "p$i"; then echo ok; else echo "fail $(date +%s.%N)"; fi
	done >>"$T/admissions"
}

kubelet_sim &
SIMPID=$!
if gen >"$T/gen-install.log" 2>&1; then
	ok "generate-certs.sh: install (a CA kept in imds-webhook-ca, the Secret, the caBundle)"
else
	not_ok "generate-certs.sh: install" "$(cat "$T/gen-install.log")"
fi
check "the webhook serves the installed certificate" wait_synced
inforce=0
for _ in $(seq 100); do
	if admit probe; then inforce=1; break; fi
	sleep 0.2
done
expect_eq "a labelled pod is admitted through the Fail webhook" 1 "$inforce"
: >"$T/admit.err"

admit_loop &
LOOPPID=$!
count() { grep -c "^$1" "$T/admissions" 2>/dev/null || true; }
phase() { # name: wait until at least 3 more admissions happened, then report
	local before
	before=$(count '')
	for _ in $(seq 300); do
		(($(count '') >= before + 3)) && break
		sleep 0.1
	done
}
phase baseline

# 1. The serving certificate alone, the CA kept: the bundle already trusts it.
serial0=$(secret_serial)
ca0=$(kctl -n kubevirt-imds get secret imds-webhook-ca -o 'go-template={{index .data "tls.crt"}}')
gen >"$T/gen-leaf.log" 2>&1 || not_ok "generate-certs.sh: leaf rotation" "$(cat "$T/gen-leaf.log")"
expect_eq "leaf rotation: the CA is kept (same Secret imds-webhook-ca), the bundle holds one CA" "$ca0|1" \
	"$(kctl -n kubevirt-imds get secret imds-webhook-ca -o 'go-template={{index .data "tls.crt"}}')|$(bundle_count)"
check "leaf rotation: the webhook serves the new certificate after kubelet's delay" wait_synced
if [[ $(secret_serial) != "$serial0" ]]; then ok "leaf rotation: a new serial"; else not_ok "leaf rotation: a new serial"; fi
phase leaf

# 2. A renewal that is not due changes nothing; one that is due renews.
rv=$(secret_rv)
out=$(gen --renew-before 30 2>&1)
expect_eq "--renew-before 30 on a 365-day certificate: nothing to do, Secret unchanged" "1|$rv" \
	"$(grep -c 'nothing to do' <<<"$out")|$(secret_rv)"
gen --renew-before 400 >"$T/gen-renew.log" 2>&1
if [[ $(secret_rv) != "$rv" ]] && grep -q renewing "$T/gen-renew.log"; then
	ok "--renew-before 400: due, renewed"
else
	not_ok "--renew-before 400: due, renewed" "$(cat "$T/gen-renew.log")"
fi
check "renewal: served after kubelet's delay" wait_synced
phase renew

# 3. The CA: a bundle of old and new first, the new leaf, then the old CA dropped.
gen --rotate-ca >"$T/gen-ca.log" 2>&1 || not_ok "generate-certs.sh --rotate-ca" "$(cat "$T/gen-ca.log")"
expect_eq "--rotate-ca: the bundle holds the old and the new CA" 2 "$(bundle_count)"
if [[ $(kctl -n kubevirt-imds get secret imds-webhook-ca -o 'go-template={{index .data "tls.crt"}}') != "$ca0" ]]; then
	ok "--rotate-ca: a new CA kept"
else
	not_ok "--rotate-ca: a new CA kept"
fi
check "--rotate-ca: the new leaf served after kubelet's delay" wait_synced
phase ca
gen --drop-old-ca >"$T/gen-drop.log" 2>&1 || not_ok "generate-certs.sh --drop-old-ca" "$(cat "$T/gen-drop.log")"
expect_eq "--drop-old-ca: the bundle holds the new CA alone" 1 "$(bundle_count)"
phase drop

# 3b. A CA near its end: the cron's --renew-before renews it as --rotate-ca
# does (old and new in the bundle, the new leaf), before it can expire.
ca_secret() { kctl -n kubevirt-imds get secret imds-webhook-ca -o 'go-template={{index .data "tls.crt"}}'; }
gen --rotate-ca --ca-days 20 >"$T/gen-short.log" 2>&1 || not_ok "--rotate-ca --ca-days 20" "$(cat "$T/gen-short.log")"
check "a 20-day CA's leaf served after kubelet's delay" wait_synced
gen --drop-old-ca >>"$T/gen-short.log" 2>&1 || not_ok "--drop-old-ca after the 20-day CA" "$(cat "$T/gen-short.log")"
ca1=$(ca_secret)
out=$(gen --renew-before 10 2>&1)
expect_eq "--renew-before 10 with a 20-day CA and a 365-day leaf: nothing to do" "1|$ca1|1" \
	"$(grep -c 'nothing to do' <<<"$out")|$(ca_secret)|$(bundle_count)"
gen --renew-before 30 >"$T/gen-ca-renew.log" 2>&1
if grep -q 'the kept CA expires' "$T/gen-ca-renew.log" && [[ $(ca_secret) != "$ca1" ]] && (($(bundle_count) == 2)); then
	ok "--renew-before 30 with a 20-day CA: a new CA, the old one kept in the bundle"
else
	not_ok "--renew-before 30 with a 20-day CA: a new CA, the old one kept in the bundle" "$(cat "$T/gen-ca-renew.log")"
fi
check "the renewed CA's leaf served after kubelet's delay" wait_synced
gen --drop-old-ca >"$T/gen-drop2.log" 2>&1 || not_ok "--drop-old-ca after the CA's renewal" "$(cat "$T/gen-drop2.log")"
expect_eq "--drop-old-ca: the renewed CA alone" 1 "$(bundle_count)"
phase ca-renew
sleep 2
touch "$T/stop"
wait "$LOOPPID"
LOOPPID=
total=$(count '')
fails=$(count fail)
if ((total >= 15)); then
	ok "admissions ran throughout the rotations ($total)"
else
	not_ok "admissions ran throughout the rotations" "only $total"
fi
expect_eq "zero failed admissions across leaf rotation, renewal, CA rotation and the CA's renewal ($total admissions)" 0 "$fails"
if ((fails)); then
	printf '#   %s\n' "$(head -c 2000 "$T/admit.err")"
fi
m=$(curl -sS --noproxy '*' -k "https://127.0.0.1:$PORT/metrics")
expect_eq "the webhook took the pair of each kubelet copy (the first included), none refused" \
	"$(wc -l <"$T/synced")|0" \
	"$(sed -n 's/^imds_webhook_certificate_reloads_total{result="success"} //p' <<<"$m")|$(sed -n 's/^imds_webhook_certificate_reloads_total{result="failure"} //p' <<<"$m")"

# --drop-old-ca refuses while the Secret's leaf is not of the kept CA (a
# rotation left half done): dropping would refuse every admission.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$T/other-ca.key" \
	-out "$T/other-ca.crt" -days 30 -subj /CN=other-ca >/dev/null 2>&1
kctl -n kubevirt-imds create secret generic imds-webhook-ca --type=kubernetes.io/tls \
	--from-file=tls.crt="$T/other-ca.crt" --from-file=tls.key="$T/other-ca.key" --dry-run=client -o yaml |
	kctl apply -f - >/dev/null
bundle0=$(kctl get mutatingwebhookconfiguration imds-webhook -o 'go-template={{(index .webhooks 0).clientConfig.caBundle}}')
out=$(gen --drop-old-ca 2>&1)
st=$?
expect_eq "--drop-old-ca with a Secret not signed by the kept CA: refused, saying why, the bundle untouched" \
	"1 1 $bundle0" \
	"$st $(grep -c 'not signed by the CA kept' <<<"$out") $(kctl get mutatingwebhookconfiguration imds-webhook -o 'go-template={{(index .webhooks 0).clientConfig.caBundle}}')"

# 4. The control: the old procedure (a new CA, alone in the caBundle at once,
# the Secret updated as kubelet will, later) refuses labelled pods meanwhile.
kill "$SIMPID" 2>/dev/null
wait "$SIMPID" 2>/dev/null
SIMPID=
kube_gen_webhook_cert "$T/naive" >/dev/null 2>&1
kctl patch mutatingwebhookconfiguration imds-webhook --type=json \
	-p "[{\"op\":\"replace\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"$(base64 -w0 "$T/naive/ca.crt")\"}]" >/dev/null
: >"$T/admit.err"
refused=0
for i in 1 2 3 4 5; do
	admit "naive$i" || refused=$((refused + 1))
	sleep 0.3
done
if ((refused > 0)) && grep -q 'x509' "$T/admit.err"; then
	ok "control: a new CA alone in the caBundle before kubelet's update refuses labelled pods ($refused of 5, x509)"
else
	not_ok "control: a new CA alone in the caBundle before kubelet's update refuses labelled pods" \
		"$refused of 5 refused" "$(head -c 1000 "$T/admit.err")"
fi
if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/webhook.log"; then
	not_ok "sanitizers quiet" "$(grep -A20 Sanitizer "$T/webhook.log" | head -30)"
fi
kill -TERM "$WPID" 2>/dev/null
wait "$WPID" 2>/dev/null
WPID=
tap_done
