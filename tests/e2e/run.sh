#!/usr/bin/env bash
# End-to-end on kind + KubeVirt (issue 5): create or reuse a kind cluster,
# install KubeVirt, build and load the three images, deploy the webhook and
# the node agent imds-node (deploy/overlays/manual: the default network mode,
# agent; manual certificates), start VMs from deploy/test/ and check from inside the guests
# over the serial console (virtctl console, driven by expect):
#   - identity and a token with the Metadata header, 400 without it;
#   - user-data applied by cloud-init (an Ubuntu cloud image);
#   - two VMs each see only their own data;
#   - a pod that is not a VM cannot reach 169.254.169.254.
#
#   KIND_CLUSTER_NAME=imds ./tests/e2e/run.sh           (default cluster: kind)
#
# Environment:
#   KIND_CLUSTER_NAME  kind cluster (created when missing, reused otherwise)
#   KUBE_CONTEXT       default kind-$KIND_CLUSTER_NAME
#   KIND_NODE_IMAGE    node image for a new cluster (Kubernetes 1.29+)
#   E2E_NAMESPACE      default imds-e2e (deleted at the end unless E2E_KEEP=1)
#   E2E_SKIP_BUILD=1   use images already loaded
#   E2E_DRY_RUN=1      print every docker/kind/kubectl/virtctl/make command
#                      instead of running it (no cluster needed)
# Needs: docker, kind, kubectl, expect, curl; virtctl is downloaded into tmp/e2e.
set -euo pipefail

# The one place the KubeVirt release is pinned: the release our fixtures were
# rendered by (tests/fixtures/kubevirt-v1.8.4, tests/integration/deploy_release.sh
# checks the two agree; 1.6+ is needed anyway: firmware.serial may hold
# the NoCloud seed, kubevirt/kubevirt#15118).
KUBEVIRT_VERSION=v1.8.4
# The non-VM probe pod.
CURL_IMAGE=docker.io/curlimages/curl:8.10.1

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$REPO/tests/e2e/lib.sh"

KIND_CLUSTER_NAME=${KIND_CLUSTER_NAME:-kind}
KUBE_CONTEXT=${KUBE_CONTEXT:-$(e2e_context "$KIND_CLUSTER_NAME")}
NS=${E2E_NAMESPACE:-imds-e2e}
DRY=${E2E_DRY_RUN:-0}
ASSETS=$REPO/tmp/e2e
VIRTCTL=$ASSETS/bin/virtctl-$KUBEVIRT_VERSION
PASS=0
FAIL=0

log() { printf 'e2e: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# Every cluster call names its cluster; in dry mode, print it instead.
run() {
	if [[ $DRY == 1 ]]; then
		printf '+ %s\n' "$*"
		return 0
	fi
	"$@"
}
kctl() { run kubectl --context "$KUBE_CONTEXT" "$@"; }
vctl() { run "$VIRTCTL" --context "$KUBE_CONTEXT" "$@"; }
kindc() { # subcommand... (cluster-scoped kind calls: --name added)
	run kind "$@" --name "$KIND_CLUSTER_NAME"
}

pass() {
	PASS=$((PASS + 1))
	printf 'ok %d - %s\n' "$((PASS + FAIL))" "$1"
}
fail() {
	FAIL=$((FAIL + 1))
	printf 'not ok %d - %s\n' "$((PASS + FAIL))" "$1"
	shift
	local l
	for l in "$@"; do printf '#   %s\n' "$l"; done
}
expect_eq() { # name want got
	if [[ $DRY == 1 || $2 == "$3" ]]; then pass "$1"; else fail "$1" "want: $2" "got:  $3"; fi
}

preflight() {
	local t
	for t in docker kind kubectl expect curl; do
		command -v "$t" >/dev/null || [[ $DRY == 1 ]] || die "$t is not installed"
	done
}

cluster() {
	local clusters
	clusters=$(if [[ $DRY == 1 ]]; then echo; else kind get clusters 2>/dev/null; fi)
	if e2e_cluster_listed "$KIND_CLUSTER_NAME" <<<"$clusters"; then
		log "reusing kind cluster $KIND_CLUSTER_NAME"
	else
		log "creating kind cluster $KIND_CLUSTER_NAME"
		kindc create cluster --config "$REPO/hack/kind-config.yaml" \
			${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"} --wait 180s
	fi
	kctl cluster-info >/dev/null
}

kubevirt() {
	run mkdir -p "$ASSETS/bin" "$ASSETS/kubevirt-$KUBEVIRT_VERSION"
	local f dir=$ASSETS/kubevirt-$KUBEVIRT_VERSION
	for f in kubevirt-operator.yaml kubevirt-cr.yaml; do
		[[ -s $dir/$f ]] || run curl -fsSL -o "$dir/$f" "$(e2e_kubevirt_url "$KUBEVIRT_VERSION" "$f")"
	done
	[[ -x $VIRTCTL ]] || {
		run curl -fsSL -o "$VIRTCTL" \
			"$(e2e_kubevirt_url "$KUBEVIRT_VERSION" "virtctl-$KUBEVIRT_VERSION-linux-amd64")"
		run chmod +x "$VIRTCTL"
	}
	kctl apply -f "$dir/kubevirt-operator.yaml"
	kctl apply -f "$dir/kubevirt-cr.yaml"
	if [[ ! -e /dev/kvm ]]; then
		log "no /dev/kvm: KubeVirt software emulation"
		kctl -n kubevirt patch kubevirt kubevirt --type=merge \
			-p '{"spec":{"configuration":{"developerConfiguration":{"useEmulation":true}}}}'
	fi
	kctl -n kubevirt wait kubevirt/kubevirt --for=condition=Available --timeout=600s
}

images_and_deploy() {
	if [[ ${E2E_SKIP_BUILD:-0} != 1 ]]; then
		run make -C "$REPO" docker-build-all
		run make -C "$REPO" kind-load-all KIND_CLUSTER_NAME="$KIND_CLUSTER_NAME"
	fi
	run make -C "$REPO" deploy OVERLAY=manual KUBE_CONTEXT="$KUBE_CONTEXT" KIND_CLUSTER_NAME="$KIND_CLUSTER_NAME"
}

# An Ubuntu guest whose user-data (from the annotation) sets a console
# password and writes a marker: "user-data applied" is read back in the guest.
ubuntu_vm() {
	cat <<EOF
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: e2e-ubuntu
spec:
  runStrategy: Always
  template:
    metadata:
      annotations:
        imds.kubevirt.io/enabled: "true"
        imds.kubevirt.io/user-data: |
          #cloud-config
          password: imds-e2e
          chpasswd: {expire: false}
          ssh_pwauth: false
          write_files:
            - path: /var/lib/imds-e2e/marker
              content: "user-data-applied e2e-ubuntu\n"
    spec:
      domain:
        devices:
          disks:
            - {name: rootdisk, disk: {bus: virtio}}
          interfaces:
            - {name: default, masquerade: {}}
        resources:
          requests: {memory: 1Gi}
      networks:
        - {name: default, pod: {}}
      volumes:
        - name: rootdisk
          containerDisk: {image: quay.io/containerdisks/ubuntu:22.04}
EOF
}

start_vms() {
	# In dry mode the second kctl prints without reading its stdin: the first
	# would then write into a closed pipe and end the run with SIGPIPE (141)
	# whenever the second is done first.
	if [[ $DRY == 1 ]]; then
		kctl create namespace "$NS" --dry-run=client -o yaml
		kctl apply -f - </dev/null
	else
		kctl create namespace "$NS" --dry-run=client -o yaml | kctl apply -f -
	fi
	local f
	for f in vm-cirros.yaml vm-secret-userdata.yaml vm-configmap-userdata.yaml; do
		kctl -n "$NS" apply -f "$REPO/deploy/test/$f"
	done
	if [[ $DRY == 1 ]]; then ubuntu_vm >/dev/null; else ubuntu_vm | kctl -n "$NS" apply -f -; fi
	for f in cirros-imds vm-secret-userdata vm-configmap-userdata e2e-ubuntu; do
		kctl -n "$NS" wait "vm/$f" --for=condition=Ready --timeout=900s
	done
}

# console VM USER PASSWORD PROMPT SCRIPT: log in on the serial console and run
# SCRIPT (shell lines); prints everything the console showed.
console() {
	local vm=$1 user=$2 password=$3 prompt=$4 script=$5
	if [[ $DRY == 1 ]]; then
		vctl -n "$NS" console "$vm" >&3
		return 0
	fi
	VIRTCTL="$VIRTCTL" CTX="$KUBE_CONTEXT" NS="$NS" VM="$vm" USER_="$user" PASS_="$password" \
		PROMPT_="$prompt" SCRIPT_="$script" expect -f - <<'EXPECT'
set timeout 600
log_user 1
spawn $env(VIRTCTL) --context $env(CTX) -n $env(NS) console $env(VM)
after 2000
send "\r"
expect {
	"login:" { send "$env(USER_)\r"; exp_continue }
	"assword:" { send "$env(PASS_)\r"; exp_continue }
	-re "$env(PROMPT_)" { }
	timeout { puts "E2E-TIMEOUT-LOGIN"; exit 1 }
}
foreach line [split $env(SCRIPT_) "\n"] {
	if {$line eq ""} continue
	send "$line\r"
	expect -re "$env(PROMPT_)"
}
send "exit\r"
after 500
send "\035"
expect eof
EXPECT
}

# What a guest runs: markers around each answer (the markers are printed by
# `echo`, so the echoed command line never equals a marker line).
GUEST_SCRIPT=$(cat <<'EOF'
M=169.254.169.254; echo "BEGIN""-ID"; curl -s -H 'Metadata: true' http://$M/v1/identity; echo; echo "END""-ID"
echo "BEGIN""-TOKEN"; curl -s -H 'Metadata: true' http://$M/v1/token; echo; echo "END""-TOKEN"
echo "CODE""=$(curl -s -o /dev/null -w '%{http_code}' http://$M/v1/token)"
echo "BEGIN""-UD"; curl -s http://$M/v1/user-data; echo "END""-UD"
EOF
)

check_cirros() { # vm expected-marker other-marker
	local vm=$1 mine=$2 other=$3 out id tok ud code
	out=$(console "$vm" cirros gocubsgo '\$ $' "$GUEST_SCRIPT" 2>&1) || true
	id=$(e2e_between BEGIN-ID END-ID <<<"$out")
	tok=$(e2e_between BEGIN-TOKEN END-TOKEN <<<"$out" | e2e_json_string token)
	ud=$(e2e_between BEGIN-UD END-UD <<<"$out")
	code=$(e2e_kv CODE <<<"$out")
	expect_eq "$vm: /v1/identity names the VM" "$vm" "$(e2e_json_string vmName <<<"$id")"
	expect_eq "$vm: /v1/identity namespace" "$NS" "$(e2e_json_string namespace <<<"$id")"
	expect_eq "$vm: /v1/token with the header: the pod's ServiceAccount" \
		"system:serviceaccount:$NS:default" "$(e2e_jwt_claim sub <<<"$tok")"
	expect_eq "$vm: /v1/token without the header: 400" 400 "$code"
	if [[ $DRY == 1 ]] || { grep -qF "marker: $mine" <<<"$ud" && ! grep -qF "marker: $other" <<<"$ud"; }; then
		pass "$vm: sees its own user-data and not the other VM's"
	else
		fail "$vm: sees its own user-data and not the other VM's" "$ud"
	fi
}

check_ubuntu() {
	local out
	out=$(console e2e-ubuntu ubuntu imds-e2e '\$ $' \
		'echo "BEGIN""-M"; cat /var/lib/imds-e2e/marker; cloud-init status; echo "END""-M"' 2>&1) || true
	out=$(e2e_between BEGIN-M END-M <<<"$out")
	if [[ $DRY == 1 ]] || [[ $out == *"user-data-applied e2e-ubuntu"* && $out == *"status: done"* ]]; then
		pass "e2e-ubuntu: user-data applied by cloud-init (file written, password set, status done)"
	else
		fail "e2e-ubuntu: user-data applied by cloud-init" "$out"
	fi
}

check_non_vm_pod() {
	local code
	kctl -n "$NS" delete pod e2e-not-a-vm --ignore-not-found
	kctl -n "$NS" run e2e-not-a-vm --image="$CURL_IMAGE" --restart=Never --command -- \
		curl -s -m 5 -o /dev/null -w '%{http_code}' http://169.254.169.254/v1/identity
	kctl -n "$NS" wait pod/e2e-not-a-vm --for=jsonpath='{.status.phase}'=Failed --timeout=120s ||
		kctl -n "$NS" wait pod/e2e-not-a-vm --for=jsonpath='{.status.phase}'=Succeeded --timeout=10s || true
	code=$(if [[ $DRY == 1 ]]; then echo 000; else kctl -n "$NS" logs e2e-not-a-vm; fi)
	expect_eq "a pod that is not a VM cannot reach 169.254.169.254" 000 "$code"
}

cleanup() {
	if [[ ${E2E_KEEP:-0} != 1 ]]; then
		kctl delete namespace "$NS" --ignore-not-found --wait=false >/dev/null 2>&1 || true
	fi
}

main() {
	exec 3>&1 # the dry mode's listing, also from inside $(...)
	preflight
	cluster
	kubevirt
	images_and_deploy
	trap cleanup EXIT
	start_vms
	check_cirros vm-secret-userdata vm-secret-userdata vm-configmap-userdata
	check_cirros vm-configmap-userdata vm-configmap-userdata vm-secret-userdata
	check_cirros cirros-imds cirros-imds-inline vm-secret-userdata
	check_ubuntu
	check_non_vm_pod
	printf '1..%d\n%d passed, %d failed\n' "$((PASS + FAIL))" "$PASS" "$FAIL"
	((FAIL == 0))
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	main "$@"
fi
