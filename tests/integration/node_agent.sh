#!/usr/bin/env bash
# imds-node, the network half as a node agent (issue 29; docs/design.md, "The
# network half as a node agent"): the agent runs as root in the node's own
# namespace over a kubelet-style pods folder (tests/lib/podfolder.sh); each
# launcher pod (tests/lib/netns.sh, one per binding) runs `imds-server run`
# with IMDS_NET_MODE=agent as UID 107 with no capability at all, in a cgroup
# named after its pod UID.  Guests are served through the listeners the agent
# made in their pod and passed; probe and await say what they must; each
# hostile pod is refused without stalling the others; the agent SIGKILLed and
# restarted adopts what it built, and every guest is served again. (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=../lib/podfolder.sh
. "$(dirname "$0")/../lib/podfolder.sh"

AGENT_LOG=$NET_TMP/agent.log
UID_A=0b6f4c1e-1a2b-4c3d-8e9f-00000000000a # masquerade
UID_B=0b6f4c1e-1a2b-4c3d-8e9f-00000000000b # bridge
NS_A=$NS_TAG-pa
NS_B=$NS_TAG-pb
VM_A=$NS_TAG-va
VM_B=$NS_TAG-vb

# pod_setup NS NODE VM KIND: a launcher pod of binding KIND with its guest.
pod_setup() {
	NS_POD=$1 NS_NODE=$2
	ns_new "$NS_POD" && ns_new "$NS_NODE" && node_link 1400 || return 1
	case $4 in
	masquerade) launcher_masquerade && guest_attach "$3" tap0 masquerade ;;
	bridge) launcher_bridge && { guest_attach "$3" tap0 bridge; :; } ;; # (its last test is bridge-ll's)
	esac
}

if ! [[ -x "$IMDS_NODE" ]] || ! pod_setup "$NS_A" "$NS_TAG-na" "$VM_A" masquerade ||
	! pod_setup "$NS_B" "$NS_TAG-nb" "$VM_B" bridge; then
	not_ok "two launcher pods (masquerade, bridge) and their guests set up (needs root, iproute2, nftables, $IMDS_NODE)"
	tap_done
	exit 1
fi

# count_in NS: count_plumbing of that pod
count_in() { NS_POD=$1 count_plumbing; }

agent_start "$AGENT_LOG"
sidecar_start "$UID_A" "$NS_A" "$NET_TMP/sidecar-a.log" IMDS_INTERFACES=default:masquerade:tap0
PID_A=$SIDECAR_PID
sidecar_start "$UID_B" "$NS_B" "$NET_TMP/sidecar-b.log" IMDS_INTERFACES=default:bridge:tap0
PID_B=$SIDECAR_PID
for x in a b; do
	if wait_for_line "$NET_TMP/sidecar-$x.log" 'net: serving .* from the node agent' 15; then
		ok "pod $x: the sidecar serves on the agent's listeners"
	else
		not_ok "pod $x: the sidecar serves on the agent's listeners" "$(tail -5 "$NET_TMP/sidecar-$x.log")" "$(tail -8 "$AGENT_LOG")"
	fi
done
expect_eq "the sidecars run with no capability (CapEff CapPrm CapBnd)" \
	"0000000000000000 0000000000000000 0000000000000000 0000000000000000 0000000000000000 0000000000000000" \
	"$(caps_of "$PID_A") $(caps_of "$PID_B")"
expect_eq "the sidecars run as UID 107" "107 107" \
	"$(awk '/^Uid/ {print $3}' "/proc/$PID_A/status") $(awk '/^Uid/ {print $3}' "/proc/$PID_B/status")"

out=$(guest_get "$VM_A" /v1/identity -H 'Metadata: true' 2>&1)
if grep -q "\"vmName\":\"vm-$UID_A\"" <<<"$out"; then ok "masquerade guest served its own identity"; else not_ok "masquerade guest served its own identity" "$out"; fi
out=$(guest_get "$VM_B" /v1/identity -H 'Metadata: true' 2>&1)
if grep -q "\"vmName\":\"vm-$UID_B\"" <<<"$out"; then ok "bridge guest served its own identity"; else not_ok "bridge guest served its own identity" "$out"; fi
