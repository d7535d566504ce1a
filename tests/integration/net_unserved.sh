#!/usr/bin/env bash
# imds-net-mode: agent (the sidecar as UID 107 with no capability, imds-node over a pods folder: tests/lib/netns.sh)
# Interfaces the sidecar cannot serve, said once and never waited for:
# macvtap (a binding plugin of attachment type tap: the CNI's macvtap takes
# the guest's frames past the pod), SR-IOV (a VF passed to the guest), a
# plugin the webhook does not know.  With nothing to serve the sidecar
# stays idle (no wake-ups, no "still waiting" lines); beside a masquerade
# NIC it serves that one and names the others.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

NET=fast
H=$(multus_hash "$NET")
if ! ns_setup || ! node_link 1400 || ! launcher_macvtap "$NET" || ! launcher_sriov; then
	not_ok "launcher pod (macvtap, SR-IOV) set up (needs root, iproute2, macvtap)"
	tap_done
	exit 1
fi
expect_eq "launcher as KubeVirt builds it: the CNI's macvtap pod$H, no bridge, no tap" "macvtap 0" \
	"$(in_pod ip -d -o link show "pod$H" | grep -o macvtap | head -1) $(in_pod ip -o link show type bridge | wc -l)"

# The node's side (the pod's eth0 and the macvtap's parent), from before the
# sidecar's first start to the end: nothing for 169.254.169.254 leaves the pod.
node_capture_start cali0 phys0
imds_start IMDS_INTERFACES="$NET:tap,vf:sriov,x:unknown"
for _ in $(seq 200); do grep -q 'stays idle' "$IMDS_LOG" && break; sleep 0.01; done
for want in "interface $NET (tap) cannot be served: the plugin's device (macvtap)" \
	"interface vf (sriov) cannot be served: an SR-IOV VF" \
	"interface x (unknown) cannot be served: a binding plugin the webhook does not know" \
	"no interface of this VM can reach the service; the sidecar stays idle"; do
	if grep -qF "$want" "$IMDS_LOG"; then ok "logged: $want"; else not_ok "logged: $want" "$(imds_log_tail)"; fi
done
# The pod's links finish IPv6 duplicate address detection about 1 s after
# they came up, an address event the sidecar looks at (once): measure after.
for _ in $(seq 300); do [[ -z $(in_pod ip -6 addr show tentative) ]] && break; sleep 0.01; done
sleep 1
ctx=$(awk '/^voluntary_ctxt_switches/ {print $2}' "/proc/$IMDS_PID/status")
sleep 1
ctx2=$(awk '/^voluntary_ctxt_switches/ {print $2}' "/proc/$IMDS_PID/status")
expect_eq "idle: no wake-ups in 1 s" "$ctx" "$ctx2"
# (any of the lines that wait for a tap: "waiting for the VM's tap(s)", "... a
# VM tap on bridge", "still waiting for the VM's tap"; in agent mode the
# sidecar's "waiting for the node agent" is its own start, not a tap's wait)
expect_eq "idle: no waiting line" 0 "$(grep -cE 'waiting for (the|a) VM' "$IMDS_LOG")"
expect_eq "idle: the fallback rules are in (never out of the pod)" 3 "$(in_pod nft list tables | grep -c kubevirt_imds)"
imds_stop
expect_eq "SIGTERM while idle: exit 0" 0 "$IMDS_STATUS"

# masquerade beside SR-IOV: the masquerade NIC is served, the VF named.
if launcher_masquerade && guest_attach "$NS_VM" tap0 masquerade; then
	imds_start IMDS_INTERFACES="default:masquerade:tap0,vf:sriov"
	if imds_wait_serving 1 10 && out=$(guest_get "$NS_VM" /v1/meta-data 2>&1) && grep -q instance-id <<<"$out"; then
		ok "masquerade beside SR-IOV: the masquerade NIC is served"
	else
		not_ok "masquerade beside SR-IOV: the masquerade NIC is served" "${out:-}" "$(imds_log_tail)"
	fi
	if grep -q 'interface vf (sriov) cannot be served' "$IMDS_LOG" && ! grep -q 'stays idle' "$IMDS_LOG"; then
		ok "... and the VF is named, once"
	else
		not_ok "... and the VF is named, once" "$(imds_log_tail)"
	fi
	imds_stop
else
	not_ok "masquerade launcher beside the macvtap one"
fi
node_capture_check "idle, and serving masquerade beside SR-IOV"
# Bad IMDS_INTERFACES: a clear error naming it, exit 2.
for bad in "default:masquerade" "a:passt:tap0" "a:bridge:eth0" "a:b:c:d" "a:bridge:tap0,b:bridge:tap0" ","; do
	out=$(in_pod env IMDS_NAMESPACE=default IMDS_VM_NAME=netvm IMDS_INTERFACES="$bad" "$IMDS_SERVER" run 2>&1)
	st=$?
	if ((st == 2)) && grep -q '^imds-server: IMDS_INTERFACES: ' <<<"$out"; then ok "IMDS_INTERFACES='$bad': exit 2, ${out#imds-server: }"; else not_ok "IMDS_INTERFACES='$bad' refused" "status $st" "$out"; fi
done
if imds_log_clean; then ok "server logs free of sanitizer reports"; else not_ok "server logs free of sanitizer reports"; fi
tap_done
