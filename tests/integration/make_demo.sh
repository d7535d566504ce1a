#!/usr/bin/env bash
# make_demo: the README's `make demo` (hack/demo.sh) runs to its end and
# shows what it says: the default network mode (agent: the sidecar as UID 107
# with no capability, imds-node building the pod's network half), both
# guests' cloud-init get_data() succeeding, their
# identity, the link-local guest's ARP entry being veth-imds's, the IPv6
# link-local answer, a process of the pod refused, SIGTERM exit 0, and
# nothing left behind.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO" || exit 1

before=$(ip netns list | wc -l)
out=$(timeout 300 make --no-print-directory demo 2>&1)
st=$?
expect_eq "make demo: exit 0" 0 "$st"
[[ $st == 0 ]] || printf '%s\n' "$out" | tail -n 30 | sed 's/^/# /'
if grep -q 'the sidecar: Uid: 107 107 107 107; CapEff: 0000000000000000' <<<"$out" &&
	grep -q 'imds-node info: pod [^ ]*: serving 2 tap(s)' <<<"$out" &&
	grep -q 'net: serving .* from the node agent' <<<"$out"; then
	ok "the default network mode: the sidecar as UID 107 with no capability, imds-node serving both taps"
else
	not_ok "the default network mode: the sidecar as UID 107 with no capability, imds-node serving both taps" \
		"$(grep -E 'the sidecar: |imds-node info: pod|from the node agent' <<<"$out")"
fi
n=$(grep -c 'get_data(): *success' <<<"$out")
expect_eq "both guests: cloud-init's NoCloudNet get_data() success" 2 "$n"
n=$(grep -c '"vmName":"demo-vm"' <<<"$out")
if ((n >= 3)); then ok "identity answered (IPv4 to both guests, IPv6 link-local: $n)"; else not_ok "identity answered three times" "$n"; fi
mac=$(grep -A1 'cat /sys/class/net/veth-imds/address' <<<"$out" | tail -n 1 | tr -d ' ')
if [[ -n $mac ]] && grep -q "169.254.169.254 dev eth0 lladdr $mac" <<<"$out"; then
	ok "the link-local guest's ARP entry is veth-imds's MAC ($mac)"
else
	not_ok "the link-local guest's ARP entry is veth-imds's MAC" "$mac"
fi
if grep -q "curl: (7) Failed to connect to 169.254.169.254" <<<"$out"; then ok "a process of the pod refused"; else not_ok "a process of the pod refused"; fi
if grep -q 'SIGTERM exit status 0' <<<"$out"; then ok "the sidecar ends on SIGTERM with status 0"; else not_ok "the sidecar ends on SIGTERM with status 0"; fi
expect_eq "no network namespace left behind" "$before" "$(ip netns list | wc -l)"
tap_done
