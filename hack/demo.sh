#!/usr/bin/env bash
# make demo: a virt-launcher pod built as KubeVirt builds the masquerade
# binding (tests/lib/netns.sh) and its VM in network namespaces, served as the
# default install serves it (the webhook's --network-mode agent): `imds-server
# run` as the webhook injects it, UID 107 with no capability, in the pod's
# cgroup and its imds-node folder, and `imds-node` (the DaemonSet) building the
# pod's network half from the node (tests/lib/podfolder.sh, a kubelet-style
# pods folder); the guest fetching its
# data the way a booting cloud image does (Debian's real cloud-init) through
# its tap, steered to the sidecar — first a masquerade guest (10.0.2.2 via
# gateway 10.0.2.1), then a guest with only a link-local address, reached
# through the ARP responder; the same over IPv6 link-local; a process of the
# pod refused.  Everything is removed at the end, also on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

if ((EUID != 0)); then
	echo "make demo builds network namespaces: run it as root" >&2
	exit 1
fi
make --no-print-directory all build/debug/tests/tapwire >/dev/null
IMDS_SERVER=$REPO/build/debug/imds-server
# The default network mode: netns.sh sources podfolder.sh (imds-node, the
# pods folder, the pods' cgroups) and waits on the agent's lines.
# shellcheck disable=SC2034 # read by netns.sh
IMDS_TEST_NET_MODE=agent
# shellcheck source=../tests/lib/netns.sh
. tests/lib/netns.sh

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() {
	printf '\033[2m%s$ %s\033[0m\n' "$1" "${*:2}"
	"${@:2}" 2>&1 | sed 's/^/    /'
}
pod() { show "pod" ip netns exec "$NS_POD" "$@"; }
vm() { show "$VMNAME" ip netns exec "$VMNS" "$@"; }

# What the webhook would mount: a projected token (a fake JWT here), the
# user-data annotation through the downward API.
b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }
mkdir -p "$NET_TMP/tokens" "$NET_TMP/podinfo"
printf '%s.%s.%s' "$(printf '{"alg":"RS256","kid":"demo"}' | b64url)" \
	"$(printf '{"aud":["https://kubernetes.default.svc"],"exp":%d,"sub":"system:serviceaccount:demo:default"}' \
		$(($(date +%s) + 3600)) | b64url)" "$(printf 'demo-signature' | b64url)" >"$NET_TMP/tokens/token"
cat >"$NET_TMP/podinfo/user-data" <<'UD'
#cloud-config
hostname: demo-vm
write_files:
  - path: /etc/motd
    content: "Configured by kubevirt-imds\n"
UD
: >"$NET_TMP/podinfo/vendor-data"
: >"$NET_TMP/podinfo/network-config"

say "A virt-launcher pod as KubeVirt builds masquerade: eth0 to the node (Calico), k6t-eth0 10.0.2.1/24, the VM's tap0, KubeVirt's NAT"
ns_setup
node_link 1400
launcher_masquerade
tap_add tap1 k6t-eth0 1400 # a second guest's port, for the link-local example
pod ip -br addr
pod ip route
pod nft list chain ip nat KUBEVIRT_PREINBOUND

say "imds-node runs on the node (the DaemonSet), imds-server run starts in the pod as UID 107 with no capability (env and files as the webhook injects them)"
POD_UID=$(imds_pod_uid)
pod_folder "$POD_UID" >/dev/null
pod_cgroup "$POD_UID" >/dev/null
chmod -R a+rX "$NET_TMP/tokens" "$NET_TMP/podinfo"
agent_start "$IMDS_LOG"
sidecar_exec "$POD_UID" "$NS_POD" "$IMDS_LOG" IMDS_NAMESPACE=demo IMDS_VM_NAME=demo-vm \
	IMDS_POD_NAME=virt-launcher-demo-vm-x7k2p IMDS_SA_NAME=default \
	IMDS_TOKEN_PATH="$NET_TMP/tokens/token" \
	IMDS_USER_DATA_FILE="$NET_TMP/podinfo/user-data" \
	IMDS_VENDOR_DATA_FILE="$NET_TMP/podinfo/vendor-data" \
	IMDS_NETWORK_CONFIG_FILE="$NET_TMP/podinfo/network-config" \
	IMDS_INTERFACES=default:masquerade:tap0,ll:masquerade:tap1 -- "$IMDS_SERVER" run
IMDS_PID=$SIDECAR_PID
# imds_wait_serving: the agent's "serving" line, the sidecar's on the agent's
# listeners, and the sidecar as UID 107 with no capability (imds_as_cluster).
if ! imds_wait_serving 1 15; then
	cat "$IMDS_LOG"
	exit 1
fi
sed 's/^/    /' "$IMDS_LOG"
printf '    the sidecar: %s; %s\n' "$(grep '^Uid:' "/proc/$IMDS_PID/status" | tr -s '\t ' ' ')" \
	"$(grep '^CapEff:' "/proc/$IMDS_PID/status" | tr -s '\t ' ' ')"

say "What the agent built in the pod: a veth pair on no bridge, the service's addresses, a return path, and the VM's taps steered to it"
pod ip -br addr show veth-imds
pod ip -br link show master k6t-eth0
pod ip rule show
pod ip route show table 169254
pod nft list chain netdev kubevirt_imds vm-tap0
printf '    (main table unchanged; no all.* sysctl written: all.arp_ignore=%s all.rp_filter=%s)\n' \
	"$(sysctl_pod all/arp_ignore)" "$(sysctl_pod all/rp_filter)"

fetch_as_guest() {
	say "$VMNAME: Debian's cloud-init (DataSourceNoCloudNet) with the serial the webhook sets"
	echo "    serial: ds=nocloud;s=http://169.254.169.254/v1/;dsmode=net"
	ip netns exec "$VMNS" "$PY" tests/lib/cloudinit_client.py \
		--serial 'ds=nocloud;s=http://169.254.169.254/v1/;dsmode=net' >"$NET_TMP/ci.json"
	"$PY" - "$NET_TMP/ci.json" <<'PYEOF'
import base64, json, sys
r = json.load(open(sys.argv[1]))
print("    get_data():     ", "success" if r["ok"] else "FAILED: %s" % r["error"])
print("    instance-id:    ", r["instance_id"])
print("    local-hostname: ", r["local_hostname"])
print("    requests:       ", ", ".join("%s %s" % (q["url"].rsplit("/", 1)[1], q["status"]) for q in r["requests"]),
      "(retries: %d, %.3f s)" % (r["retries"], r["elapsed_s"]))
print("    user-data:       " + base64.b64decode(r["userdata_b64"]).decode().rstrip().replace("\n", "\n                     "))
sys.exit(0 if r["ok"] else 1)
PYEOF
	say "$VMNAME: identity and token (Metadata: true), and the token refused without it"
	vm curl -s -H 'Metadata: true' http://169.254.169.254/v1/identity
	vm curl -s -H 'Metadata: true' http://169.254.169.254/v1/token
	echo
	vm curl -s -w ' (HTTP %{http_code})\n' http://169.254.169.254/v1/token
}

say "Masquerade guest: 10.0.2.2/24, default via 10.0.2.1 (the bridge)"
VMNAME=vm VMNS=$NS_VM
guest_attach "$NS_VM" tap0 masquerade 52:54:00:12:34:56
vm ip -br addr show eth0
vm ip route
fetch_as_guest

say "Link-local guest: only 169.254.10.20/16, no gateway; the kernel may not answer ARP for .254"
# arp_ignore=8 pod-wide, for the demo only: nothing but the responder can answer.
ip netns exec "$NS_POD" sh -c 'echo 8 > /proc/sys/net/ipv4/conf/all/arp_ignore'
VMNAME=vm2 VMNS=$NS_TAG-vm2
guest_attach "$VMNS" tap1 linklocal 52:54:00:ab:cd:ef
vm ip -br addr show eth0
vm ip route
fetch_as_guest
say "vm2's ARP entry for 169.254.169.254 is veth-imds's MAC, answered by the sidecar's responder"
vm ip neigh show 169.254.169.254
pod cat /sys/class/net/veth-imds/address

say "The same over IPv6, from vm's link-local address to OpenStack's fe80::a9fe:a9fe"
VMNAME=vm VMNS=$NS_VM
for _ in $(seq 300); do [[ -z $(ip netns exec "$VMNS" ip -6 addr show tentative) ]] && break; sleep 0.01; done
vm curl -s -g -H 'Metadata: true' 'http://[fe80::a9fe:a9fe%eth0]/v1/identity'
echo

say "A process of the pod (the compute container's curl) is refused at once: only the VM is served"
pod curl -sS -m 3 -H 'Metadata: true' http://169.254.169.254/v1/identity || true

say "The sidecar's and the agent's log (access lines: no token or user-data content)"
imds_stop
agent_stop
sed 's/^/    /' "$IMDS_LOG"
say "Done: SIGTERM exit status $IMDS_STATUS; namespaces and files are removed now"
