#!/usr/bin/env bash
# imds-net-mode: agent (the sidecar as UID 107 with no capability, imds-node over a pods folder: tests/lib/netns.sh)
# diag: `imds-server diag` (docs/sidecar.md, "Diagnostics") against a running
# sidecar in a launcher pod's network namespace, as `kubectl exec -c
# imds-server -- /imds-server diag` runs it: the same binary, environment,
# user and capabilities (agent mode: UID 107, none) and namespace as
# `imds-server run`.  Its --json output checked field by field against the
# sidecar (its status file: version, pid, state, what it serves, the last
# errors; in agent mode what the node agent said: connected, the guard in
# place, the listeners it passed, the taps it serves), against the kernel's
# list of listening sockets (the listener bound, the sidecar's) and against
# the kernel as iproute2 and nft see it (veth-imds, its addresses, our rule
# and routes, the nf_tables tables: agent mode cannot read them, and says
# so); the data by size only: neither the token nor the user data appears,
# in JSON or text; a port held by another process is shown as such; a bad
# argument is a clear error, status 2.  IMDS_TEST_NET_MODE=pod runs it in
# pod mode.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

if ! ns_setup || ! node_link 1400 || ! launcher_masquerade || ! guest_attach "$NS_VM" tap0 masquerade; then
	not_ok "launcher pod (masquerade) and guest set up (needs root, iproute2, nftables)"
	tap_done
	exit 1
fi

STATE=$NET_TMP/state
mkdir -p "$STATE"
chmod 0777 "$STATE" # an emptyDir, as the kubelet makes it: the sidecar may run as UID 107
# shellcheck disable=SC2054 # IMDS_INTERFACES is a comma-separated list
ENVS=(IMDS_INTERFACES=default:masquerade:tap0,sriov-net:sriov IMDS_STATE_DIR="$STATE"
	IMDS_AVAILABILITY_ZONE=eu-west-1b)
imds_start "${ENVS[@]}"
if ! imds_wait_serving 1 20; then
	not_ok "sidecar serving" "$(imds_log_tail)"
	tap_done
	exit 1
fi
out=$(guest_get "$NS_VM" /v1/meta-data 2>&1)
if [[ $out == *"netvm"* ]]; then ok "the guest is served"; else not_ok "the guest is served" "$out"; fi

# diag in the pod, with the sidecar's environment, user and capabilities
# (kubectl exec inherits the container's).
AS=()
[[ $IMDS_NET_MODE_TEST == agent ]] &&
	AS=(env IMDS_NET_MODE=agent setpriv --reuid 107 --regid 107 --clear-groups --inh-caps=-all --bounding-set=-all)
diag() {
	ip netns exec "$NS_POD" env IMDS_NAMESPACE=default IMDS_VM_NAME=netvm \
		IMDS_POD_NAME=virt-launcher-netvm-abcde IMDS_SA_NAME=default \
		IMDS_TOKEN_PATH="$NET_TMP/tokens/token" \
		IMDS_USER_DATA_FILE="$NET_TMP/data/user-data" "${ENVS[@]}" "${AS[@]}" "$IMDS_SERVER" diag "$@"
}
JSON=$(diag --json 2>"$NET_TMP/diag.err")
st=$?
expect_eq "diag --json: exit 0, nothing on stderr" "0 " "$st $(cat "$NET_TMP/diag.err")"
if ! "$PY" -c 'import json, sys; json.loads(sys.argv[1])' "$JSON" 2>/dev/null; then
	not_ok "diag --json is one JSON document" "$JSON"
	tap_done
	exit 1
fi
ok "diag --json is one JSON document"
j() { "$PY" -c 'import json, sys; d = json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$JSON" "$1"; }

echo "# the sidecar's own word (its status file)"
expect_eq "status file in IMDS_STATE_DIR, found" "$STATE/status True" "$(j 'd["sidecar"]["status_file"], d["sidecar"]["found"]' | tr -d "(),'")"
expect_eq "the running sidecar's version, its pid" "$("$IMDS_SERVER" version | cut -d' ' -f2) $IMDS_PID" \
	"$(j 'd["sidecar"]["version"], d["sidecar"]["pid"]' | tr -d "(),'")"
expect_eq "state: serving tap0 (default, masquerade)" "serving|tap0 (default, masquerade)" \
	"$(j '"|".join((d["sidecar"]["state"], d["sidecar"]["serving"]))')"
expect_eq "no errors: errors_total 0, none listed" "0 []" "$(j 'd["sidecar"]["errors_total"], d["sidecar"]["errors"]' | tr -d "(),'")"
if [[ $IMDS_NET_MODE_TEST == agent ]]; then
	# what the node agent said, each with its time
	T='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z'
	v=$(j 'd["sidecar"]["agent"]')
	if [[ $v =~ ^connected\ \(since\ $T\)$ ]]; then ok "agent: connected ($v)"; else not_ok "agent: connected" "$v"; fi
	v=$(j 'd["sidecar"]["guard"]')
	if [[ $v =~ ^in\ place\ \(since\ $T,\ generation\ [0-9]+\)$ ]]; then ok "guard: in place, as the agent said ($v)"; else not_ok "guard: in place" "$v"; fi
	v=$(j 'd["sidecar"]["listen"]')
	if [[ $v =~ ^169\.254\.169\.254:80,\ \[fd00:ec2::254\]:80,\ \[fe80::a9fe:a9fe\]:80\ on\ veth-imds\ \(generation\ [0-9]+\)$ ]]; then
		ok "listen: the agent's listeners, their addresses and interface ($v)"
	else
		not_ok "listen: the agent's listeners, their addresses and interface" "$v"
	fi
	expect_eq "the agent's word matches its log: the taps it serves" 1 \
		"$(grep -c "imds-node info: pod [^ ]*: serving 1 tap(s), .* to tap0 (default, masquerade)," "$IMDS_LOG")"
fi
started=$(j 'd["sidecar"]["started"]')
if [[ $started =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$ ]]; then ok "started is a UTC time ($started)"; else not_ok "started is a UTC time" "$started"; fi

echo "# what it serves, to which interfaces"
expect_eq "identity" "default netvm virt-launcher-netvm-abcde default None" \
	"$(j 'tuple(d["identity"][k] for k in ("namespace", "vm_name", "pod_name", "service_account", "instance_id"))' | tr -d "(),'")"
expect_eq "placement: the zone given, no region" "eu-west-1b None" "$(j 'd["placement"]["zone"], d["placement"]["region"]' | tr -d "(),'")"
expect_eq "listen address, rate and hop limits, the loop's busy-poll bound" "169.254.169.254:80 100 1 0 False" \
	"$(j 'tuple(d["http"][k] for k in ("listen", "rate_limit", "hop_limit", "busy_poll_us", "session_required"))' | tr -d "(),'")"
expect_eq "layouts" "NoCloud EC2 OpenStack GCE Azure Kubernetes" "$(j '" ".join(l["name"] for l in d["layouts"])')"
expect_eq "routes: the table's paths (EC2's token, OpenStack's meta_data.json, GCE's instance)" "True True True" \
	"$(j 'tuple(p in d["routes"] for p in ("/latest/api/token", "/openstack/{v}/meta_data.json", "/computeMetadata/v1/instance/*"))' | tr -d "(),'")"
expect_eq "interfaces: IMDS_INTERFACES parsed, the SR-IOV one unserved with why" \
	"True default:masquerade:tap0:True sriov-net:sriov:None:False" \
	"$(j 'd["interfaces"]["set"], " ".join("%s:%s:%s:%s" % (e["name"], e["binding"], e["tap"], e["served"]) for e in d["interfaces"]["entries"])' | tr -d "(),'")"
expect_eq "the SR-IOV entry's reason" "True" "$(j '"SR-IOV" in d["interfaces"]["entries"][1]["why"]')"

echo "# the listener, as the kernel lists its sockets"
# (made by root: the sidecar in pod mode, the agent in agent mode)
expect_eq "bound: 169.254.169.254:80 listens, held by the sidecar" \
	"80 True True" "$(j 'd["listener"]["port"], d["listener"]["bound"], "169.254.169.254:80 (uid 0), held by the sidecar" in d["listener"]["sockets"]' | tr -d "(),'")"
want=$(in_pod ss -Htln | awk '$4 ~ /^(169\.254\.169\.254|\[fd00:ec2::254\]|\[fe80::a9fe:a9fe\]|0\.0\.0\.0|\[::\]|\*)(%[^:]*)?:80$/' | wc -l)
expect_eq "as many listening sockets on the service's addresses as ss lists" "$want" "$(j 'len(d["listener"]["sockets"])')"

echo "# data: sizes, never content"
expect_eq "user-data: the file and its size" "file $NET_TMP/data/user-data $(stat -c %s "$NET_TMP/data/user-data")" \
	"$(j 'd["data"]["user_data"]["source"], d["data"]["user_data"]["path"], d["data"]["user_data"]["bytes"]' | tr -d "(),'")"
expect_eq "token: its path and size" "$NET_TMP/tokens/token $(stat -c %s "$NET_TMP/tokens/token")" \
	"$(j 'd["data"]["token"]["path"], d["data"]["token"]["bytes"]' | tr -d "(),'")"
TEXT=$(diag)
tok=$(cat "$NET_TMP/tokens/token")
for what in "$tok" "${tok#*.}" "hostname: netvm" "#cloud-config"; do
	if [[ $JSON == *"$what"* || $TEXT == *"$what"* ]]; then
		not_ok "no secret in the output: '${what:0:12}...'" "$JSON"
	else
		ok "no secret in the output: '${what:0:12}...'"
	fi
done

echo "# the plumbing, against iproute2 and nft"
vidx=$(in_pod cat /sys/class/net/veth-imds/ifindex)
expect_eq "veth-imds: present, up, its ifindex, MTU and MAC" \
	"True True $vidx $(in_pod cat /sys/class/net/veth-imds/mtu) $(in_pod cat /sys/class/net/veth-imds/address)" \
	"$(j 'tuple(d["plumbing"]["veth"][k] for k in ("present", "up", "ifindex", "mtu", "mac"))' | tr -d "(),'")"
master=$(in_pod ip -o link show veth-imds-br | sed -n 's/.* master \([^ ]*\) .*/\1/p')
expect_eq "its peer veth-imds-br: present, its master as ip link says (masquerade: none)" "True ${master:-None}" \
	"$(j 'd["plumbing"]["peer"]["present"], d["plumbing"]["peer"]["master"]' | tr -d "(),'")"
want=$(in_pod ip -o addr show dev veth-imds | awk '{print $4}' | sort | tr '\n' ' ')
expect_eq "addresses of veth-imds as ip addr lists them" "$want" "$(j '" ".join(sorted(d["plumbing"]["addresses"])) + " "')"
nrules=$( (in_pod ip -4 rule; in_pod ip -6 rule 2>/dev/null) | grep -c 'lookup 169254')
expect_eq "rules of table 169254: as many as ip rule lists" "$nrules" "$(j 'len(d["plumbing"]["rules"])')"
nroutes=$( (in_pod ip -4 route show table 169254; in_pod ip -6 route show table 169254 2>/dev/null) | grep -c .)
expect_eq "routes of table 169254: as many as ip route lists" "$nroutes" "$(j 'len(d["plumbing"]["routes"])')"
expect_eq "the default route of table 169254 through veth-imds" "True" \
	"$(j '"default dev veth-imds table 169254" in d["plumbing"]["routes"]')"
expect_eq "the rule: from 169.254.169.254 lookup 169254, pref 1000" "True" \
	"$(j '"pref 1000 from 169.254.169.254/32 lookup 169254" in d["plumbing"]["rules"]')"
if [[ $IMDS_NET_MODE_TEST == agent ]]; then
	# without CAP_NET_ADMIN nf_tables is not readable; the agent's word
	# (the guard above) is what stands for it
	expect_eq "nf_tables: not readable without CAP_NET_ADMIN, said" "True" \
		"$(j '"Operation not permitted" in d["plumbing"]["nftables"]["error"] and "ours" not in d["plumbing"]["nftables"]')"
else
	want=$(in_pod nft list tables | sed 's/^table //' | sort | tr '\n' '|')
	expect_eq "nf_tables tables as nft lists them, ours among them" "$want True" \
		"$(j '"|".join(sorted(d["plumbing"]["nftables"]["tables"])) + "|", d["plumbing"]["nftables"]["ours"]' | tr -d "(),'")"
fi

echo "# the human form"
for line in "  state: serving" "  serving: tap0 (default, masquerade)" "    present: yes" "  zone: eu-west-1b"; do
	if grep -qxF "$line" <<<"$TEXT"; then ok "text: '$line'"; else not_ok "text: '$line'" "$TEXT"; fi
done
if grep -qx '  bound: yes' <<<"$TEXT" && grep -q '^    - 169\.254\.169\.254:80 (uid 0), held by the sidecar$' <<<"$TEXT"; then
	ok "text: the listener bound, held by the sidecar"
else
	not_ok "text: the listener bound, held by the sidecar" "$TEXT"
fi
if [[ $IMDS_NET_MODE_TEST == agent ]]; then
	for re in '^  agent: connected \(since ' '^  guard: in place \(since ' '^  listen: 169\.254\.169\.254:80, .* on veth-imds '; do
		if grep -qE "$re" <<<"$TEXT"; then ok "text: /$re/"; else not_ok "text: /$re/" "$TEXT"; fi
	done
fi

echo "# a port held by another process; the last errors"
# Something else holds 169.254.169.254:80 in the pod when the sidecar
# starts: it cannot listen, says so, retries; diag shows the error and the
# state; once the holder is gone the sidecar serves and diag keeps the error.
# In agent mode the agent cannot make the listener (its log says so, it
# retries): diag shows the agent connected, the guard in place, no
# listener passed, and the port's socket as another process's.
imds_stop
ip netns exec "$NS_POD" "$PY" -c '
import socket, time
s = socket.socket()
s.setsockopt(socket.SOL_IP, 15, 1)  # IP_FREEBIND
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("169.254.169.254", 80))
s.listen()
time.sleep(60)' &
holder=$!
BG_PIDS+=("$holder")
for _ in $(seq 100); do in_pod ss -ltn | grep -q '169.254.169.254:80' && break; sleep 0.02; done
imds_start "${ENVS[@]}"
if [[ $IMDS_NET_MODE_TEST == agent ]]; then
	if wait_for_line "$IMDS_LOG" 'imds-node error: pod [^ ]*: .*Address already in use' 10; then
		ok "port taken: the agent says it cannot listen ($(grep -m1 -oE 'imds-node error: pod [^ ]*: .*Address already in use' "$IMDS_LOG" | cut -d' ' -f5-))"
	else
		not_ok "port taken: the agent says it cannot listen" "$(imds_log_tail)"
	fi
	for _ in $(seq 100); do
		JSON=$(diag --json)
		[[ $(j 'd["sidecar"]["guard"]') == "in place"* ]] && break
		sleep 0.05
	done
	expect_eq "port taken: the agent connected, the guard in place, no listener passed, not serving" \
		"connected (since|in place|none yet|waiting" \
		"$(j '"|".join(" ".join(d["sidecar"][k].split(" ")[:2]).rstrip(":") for k in ("agent", "guard", "listen", "state"))')"
	expect_eq "port taken: 169.254.169.254:80 held by another process, the sidecar's listener not bound" \
		"True False" "$(j '"169.254.169.254:80 (uid 0), held by another process" in d["listener"]["sockets"], d["listener"]["bound"]' | tr -d "(),'")"
else
	n=0
	for _ in $(seq 200); do
		n=$(diag --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["sidecar"]["errors_total"])' 2>/dev/null)
		[[ ${n:-0} -gt 0 ]] && break
		sleep 0.05
	done
	JSON=$(diag --json)
	expect_eq "port taken: the error counted, the state not serving" "True True" \
		"$(j 'd["sidecar"]["errors_total"] > 0, d["sidecar"]["state"] != "serving"' | tr -d "(),'")"
	last=$(j 'd["sidecar"]["errors"][-1]')
	if [[ $last =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z\ net:.*(in use|listen) ]] && grep -qF "${last#* }" "$IMDS_LOG"; then
		ok "the last error as logged, with its time ($last)"
	else
		not_ok "the last error as logged, with its time" "$last" "$(imds_log_tail)"
	fi
fi
expect_eq "the running sidecar's pid" "$IMDS_PID" "$(j 'd["sidecar"]["pid"]')"
kill "$holder"
wait "$holder" 2>/dev/null
if imds_wait_serving 1 20; then
	for _ in $(seq 100); do
		JSON=$(diag --json)
		[[ $(j 'd["sidecar"]["state"]') == serving ]] && break
		sleep 0.05
	done
	if [[ $IMDS_NET_MODE_TEST == agent ]]; then
		expect_eq "holder gone: serving, the listener bound" "serving True" \
			"$(j 'd["sidecar"]["state"], d["listener"]["bound"]' | tr -d "(),'")"
	else
		expect_eq "holder gone: serving, the listener bound, the errors kept" "serving True True" \
			"$(j 'd["sidecar"]["state"], d["listener"]["bound"], len(d["sidecar"]["errors"]) > 0' | tr -d "(),'")"
	fi
else
	not_ok "holder gone: serving" "$(imds_log_tail)"
fi

echo "# bad input"
out=$(diag --frobnicate 2>&1)
st=$?
expect_eq "unknown argument: status 2, named" "2 yes" "$st $([[ $out == *"'--frobnicate'"* ]] && echo yes)"
out=$(ip netns exec "$NS_POD" env -i IMDS_INTERFACES='bad entry' "$IMDS_SERVER" diag 2>&1)
st=$?
expect_eq "unreadable IMDS_INTERFACES: status 2, the variable named" "2 yes" \
	"$st $([[ $out == *IMDS_INTERFACES* ]] && echo yes)"
out=$(ip netns exec "$NS_POD" env -i "$IMDS_SERVER" diag --json)
expect_eq "without the identity: still a document, saying why" "True" \
	"$("$PY" -c 'import json, sys; d = json.loads(sys.argv[1]); print("IMDS_NAMESPACE" in d["config_error"] and "plumbing" in d)' "$out")"

imds_stop
if imds_log_clean; then ok "no sanitizer report"; else not_ok "no sanitizer report" "$(imds_log_tail 40)"; fi
tap_done
