#!/usr/bin/env bash
# `run` as a non-root user holding exactly CAP_NET_ADMIN, CAP_NET_RAW and
# CAP_NET_BIND_SERVICE (capsh, ambient capabilities: what a container with
# `drop: [ALL]` plus those three gets).  It plumbs, programs its nf_tables
# rules, answers ARP and serves both guest kinds; the pod's all.rp_filter
# and all.arp_ignore are what they were.  (root, to set it up)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

CAPS=cap_net_admin,cap_net_raw,cap_net_bind_service
if ! command -v capsh >/dev/null; then
	not_ok "capsh available (libcap2-bin)"
	tap_done
	exit 1
fi
if ! ns_setup || ! node_link 1400 || ! launcher_masquerade || ! guest_attach "$NS_VM" tap0 linklocal; then
	not_ok "launcher pod and guest set up (needs root, iproute2, nftables)"
	tap_done
	exit 1
fi
# The server runs as "nobody": its binary and files go where nobody can
# reach them whatever the permissions above the checkout are.
CAPS_DIR=$(mktemp -d /tmp/imds-caps.XXXXXX)
trap 'rm -rf "$CAPS_DIR"; netns_cleanup' EXIT
imds_data
cp -r "$NET_TMP/tokens" "$NET_TMP/data" "$CAPS_DIR/"
cp "$IMDS_SERVER" "$CAPS_DIR/imds-server"
chmod -R a+rX "$CAPS_DIR"
IMDS_SERVER=$CAPS_DIR/imds-server
CAPS_ENV=(IMDS_TOKEN_PATH="$CAPS_DIR/tokens/token" IMDS_USER_DATA_FILE="$CAPS_DIR/data/user-data"
	IMDS_INTERFACES=default:masquerade:tap0)

# The pod's pod-wide settings, deliberately not the defaults, must survive.
in_pod sysctl -qw net.ipv4.conf.all.rp_filter=1
sys0="$(sysctl_pod all/rp_filter) $(sysctl_pod all/arp_ignore) $(sysctl_pod default/arp_ignore)"

# The node's side, from before the sidecar's first start to the end: no
# packet for 169.254.169.254 (or its IPv6 addresses) leaves the pod.
node_capture_start
IMDS_WRAP=(capsh --keep=1 --user=nobody --inh="$CAPS" --addamb="$CAPS" -- -c 'exec "$@"' imds)
imds_start "${CAPS_ENV[@]}"
if imds_wait_serving 1 10; then ok "run under capsh: serving"; else not_ok "run under capsh: serving" "$(imds_log_tail)"; fi
pid=$(pgrep -f "$IMDS_SERVER run" | head -n1)
eff=$(awk '/^CapEff/ {print $2}' "/proc/$pid/status" 2>/dev/null)
uid=$(awk '/^Uid/ {print $2}' "/proc/$pid/status" 2>/dev/null)
# NET_BIND_SERVICE (10), NET_ADMIN (12), NET_RAW (13)
expect_eq "effective capabilities are exactly the three" 0000000000003400 "$eff"
expect_eq "running as nobody" "$(id -u nobody)" "$uid"

out=$(cloudinit_fetch "$NS_VM" 2>&1)
if grep -q '"ok": true' <<<"$out"; then
	ok "link-local guest (ARP responder, rp_filter=1): cloud-init fetch"
else
	not_ok "link-local guest (ARP responder, rp_filter=1): cloud-init fetch" "$out" "$(imds_log_tail)"
fi
# The same guest turned masquerade.
ip -n "$NS_VM" addr flush dev eth0
ip -n "$NS_VM" addr add 10.0.2.2/24 dev eth0
ip -n "$NS_VM" route add default via 10.0.2.1
out=$(cloudinit_fetch "$NS_VM" 2>&1)
if grep -q '"ok": true' <<<"$out"; then
	ok "masquerade guest: cloud-init fetch"
else
	not_ok "masquerade guest: cloud-init fetch" "$out" "$(imds_log_tail)"
fi
ip -n "$NS_POD" link del veth-imds
out=$(in_vm "$PY" "$REPO/tests/lib/guest_wait.py" --limit 2)
if grep -q '"served_ms": [0-9]' <<<"$out"; then ok "restores plumbing with only these capabilities"; else not_ok "restores plumbing with only these capabilities" "$out" "$(imds_log_tail)"; fi
if grep -qE 'error' "$IMDS_LOG"; then
	not_ok "no errors logged" "$(grep error "$IMDS_LOG" | head)"
else
	ok "no errors logged"
fi
imds_stop
expect_eq "SIGTERM: exit 0" 0 "$IMDS_STATUS"
expect_eq "pod-wide all.rp_filter, all.arp_ignore, default.arp_ignore unchanged" "$sys0" \
	"$(sysctl_pod all/rp_filter) $(sysctl_pod all/arp_ignore) $(sysctl_pod default/arp_ignore)"

node_capture_check "from both guest kinds and through the restore, under capsh"
out=$(ip netns exec "$NS_POD" env -i PATH="$PATH" IMDS_INTERFACES=default:masquerade:tap0 \
	capsh --keep=1 --user=nobody --inh="$CAPS" --addamb="$CAPS" -- -c 'exec "$@"' imds "$IMDS_SERVER" init 2>&1)
expect_eq "init under capsh: exit 0" 0 "$?"
if imds_log_clean; then ok "server log free of sanitizer reports"; else not_ok "server log free of sanitizer reports"; fi
tap_done
