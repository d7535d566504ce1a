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
# shellcheck source=../lib/dns.sh
. "$(dirname "$0")/../lib/dns.sh"

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

# A third pod, passt (KubeVirt's passt binding: no tap, passt connects from the pod for
# its guest, over loopback; net_passt.sh), with IPv6 in the pod: the agent's listeners
# then allow loopback and include the two IPv6 ones.
UID_P=0b6f4c1e-1a2b-4c3d-8e9f-00000000000d
NS_P=$NS_TAG-pp
VM_P=$NS_TAG-vp
if ! command -v pasta >/dev/null || ! {
	NS_POD=$NS_P NS_NODE=$NS_TAG-np
	ns_new "$NS_POD" && ns_new "$NS_NODE" && NODE_V6=1 node_link 1400 && launcher_passt && ns_new "$VM_P"
}; then
	not_ok "a passt launcher pod set up (needs pasta: Debian's passt package)"
	tap_done
	exit 1
fi
ip netns exec "$NS_P" pasta --runas 0 --config-net -f -I eth0 --netns "/run/netns/$VM_P" \
	>"$NET_TMP/pasta.log" 2>&1 &
BG_PIDS+=($!)
for _ in $(seq 200); do ip -n "$VM_P" -4 addr show dev eth0 2>/dev/null | grep -q inet && break; sleep 0.02; done
ip -n "$VM_P" route add "$POD_GW" dev eth0 scope link 2>/dev/null
ip -n "$VM_P" route add default via "$POD_GW" 2>/dev/null

# count_in NS: count_plumbing of that pod
count_in() { NS_POD=$1 count_plumbing; }

# Everything the node sees of the first pod, from before the agent exists.
NS_NODE=$NS_TAG-na node_capture_start
agent_start "$AGENT_LOG"
sidecar_start "$UID_A" "$NS_A" "$NET_TMP/sidecar-a.log" IMDS_INTERFACES=default:masquerade:tap0
PID_A=$SIDECAR_PID
sidecar_start "$UID_B" "$NS_B" "$NET_TMP/sidecar-b.log" IMDS_INTERFACES=default:bridge:tap0
PID_B=$SIDECAR_PID
# (a state folder, as the webhook's emptyDir, for diag below)
mkdir -p "$NET_TMP/state-p" && chmod 0777 "$NET_TMP/state-p"
sidecar_start "$UID_P" "$NS_P" "$NET_TMP/sidecar-p.log" IMDS_INTERFACES=default:passt IMDS_STATE_DIR="$NET_TMP/state-p"
for x in a b p; do
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
out=$(guest_get "$VM_P" /v1/identity -H 'Metadata: true' 2>&1)
if grep -q "\"vmName\":\"vm-$UID_P\"" <<<"$out"; then ok "passt guest served its own identity (passt's connection over the pod's loopback)"; else not_ok "passt guest served its own identity" "$out" "$(tail -3 "$NET_TMP/sidecar-p.log")"; fi
out=$(ip netns exec "$VM_P" curl -sS -g --max-time 3 -H 'Metadata: true' "http://[fd00:ec2::254]/v1/identity" 2>&1)
if grep -q "\"vmName\":\"vm-$UID_P\"" <<<"$out"; then ok "passt guest served over IPv6 ([fd00:ec2::254], a listener the agent passed)"; else not_ok "passt guest served over IPv6" "$out"; fi
# (on port 50254 where passt serves, docs/sidecar.md "Every port passt forwards")
if grep -q 'serving 169.254.169.254:50254 and IPv6 on 3 listener' "$NET_TMP/sidecar-p.log"; then ok "passt pod: three listeners passed (169.254.169.254, fd00:ec2::254, fe80::a9fe:a9fe; port 50254)"; else not_ok "passt pod: three listeners passed" "$(grep 'net: serving' "$NET_TMP/sidecar-p.log")"; fi
# diag in the passt pod, as kubectl exec runs it (UID 107, no capability):
# the agent's word and the listener on the port it names
out=$(ip netns exec "$NS_P" env IMDS_NAMESPACE=default IMDS_VM_NAME="vm-$UID_P" IMDS_INTERFACES=default:passt \
	IMDS_STATE_DIR="$NET_TMP/state-p" setpriv --reuid 107 --regid 107 --clear-groups --inh-caps=-all \
	--bounding-set=-all "$IMDS_SERVER" diag --json 2>&1)
expect_eq "passt pod: diag says serving passt, the listener on 50254 bound and held by the sidecar" \
	"serving|passt (over the pod's loopback)|50254|True|True" \
	"$("$PY" -c 'import json, sys; d = json.loads(sys.argv[1]); s = d["sidecar"]; l = d["listener"]
print("|".join(str(x) for x in (s["state"], s["serving"], l["port"], l["bound"], "169.254.169.254:50254 (uid 0), held by the sidecar" in l["sockets"])))' "$out" 2>&1)"

# ---- probe and await ------------------------------------------------------
# probe_in UID NS: `imds-server probe` as the sidecar runs it (107, in the pod)
probe_in() {
	# shellcheck disable=SC2016 # the inner shell's arguments
	ip netns exec "$2" sh -c 'cd "$1" && shift && exec "$@"' sh "$(pod_folder "$1")" \
		env IMDS_NET_MODE=agent IMDS_AGENT_SOCKET=agent.sock \
		setpriv --reuid 107 --regid 107 --clear-groups --inh-caps=-all --bounding-set=-all \
		"$IMDS_SERVER" probe 2>&1
}
out=$(probe_in "$UID_A" "$NS_A")
st=$?
if ((st == 0)) && [[ $out == *"guard in place, generation 1"* ]]; then
	ok "probe: 0 once the agent put the guard in place ($out)"
else
	not_ok "probe: 0 once the agent put the guard in place" "status $st: $out"
fi
UID_C=0b6f4c1e-1a2b-4c3d-8e9f-00000000000c
NS_C=$NS_TAG-pc
ns_new "$NS_C"
pod_folder "$UID_C" >/dev/null
out=$(probe_in "$UID_C" "$NS_C")
st=$?
if ((st == 1)) && [[ $out == *"imds-node DaemonSet"* ]]; then
	ok "probe: 1 naming the imds-node DaemonSet before any agent reached the pod"
else
	not_ok "probe: 1 naming the imds-node DaemonSet before any agent reached the pod" "status $st: $out"
fi
# await_in UID NS TIMEOUT: `imds-server await` as an init container runs it
await_in() {
	pod_run "$1" "$2" env IMDS_NET_MODE=agent IMDS_AGENT_SOCKET=agent.sock IMDS_NAMESPACE=default \
		IMDS_VM_NAME="vm-$1" setpriv --reuid 107 --regid 107 --clear-groups --inh-caps=-all \
		--bounding-set=-all "$IMDS_SERVER" await --timeout "$3" >"$NET_TMP/await.out" 2>&1
	wait "$POD_RUN_PID"
}
agent_stop
t0=$(now_ms)
await_in "$UID_C" "$NS_C" 1
st=$?
ms=$(($(now_ms) - t0))
out=$(cat "$NET_TMP/await.out")
if ((st == 1 && ms < 3000)) && [[ $out == *"after 1 s"*"imds-node DaemonSet"* ]]; then
	ok "await with no agent: 1 after its timeout ($ms ms), naming the DaemonSet"
else
	not_ok "await with no agent: 1 after its timeout, naming the DaemonSet" "status $st after $ms ms: $out"
fi
log0=$(wc -l <"$AGENT_LOG")
agent_start "$AGENT_LOG" --metrics-addr 127.0.0.1:0
# ---- the agent's health and metrics (--metrics-addr) -----------------------
for _ in $(seq 200); do
	(($(tail -n "+$((log0 + 1))" "$AGENT_LOG" | grep -c ': serving ') >= 3)) && break
	sleep 0.05
done
mport=$(sed -nE 's/.*health and metrics on 127\.0\.0\.1:([0-9]+) .*/\1/p' "$AGENT_LOG" | tail -1)
mget() { # PATH [curl args...]: the status; the body into m.body
	local path=$1
	shift
	: >"$NET_TMP/m.body"
	curl -s --noproxy '*' -o "$NET_TMP/m.body" -w '%{http_code}' "$@" "http://127.0.0.1:${mport:-1}$path"
}
mval() { awk -v k="$1" '$1 == k {print $2}' "$NET_TMP/m.body"; }
# This agent came after the sidecars of A, B and P had their listeners: it
# adopts them, passing none.  (Counted before pod C's await below: the pass
# that puts C's guard goes on to pass C its listeners, which the await takes
# or not as it exits first or not.)
code=$(mget /metrics)
if [[ $code == 200 ]] && (($(mval imds_node_pods_serving) == 3 && $(mval imds_node_listener_sets_total) == 0)); then
	ok "the new agent serves pods A, B and P on the listeners they hold (adopted: no listener set passed)"
else
	not_ok "the new agent adopts the listeners of pods A, B and P" "HTTP $code" "$(grep -E '^imds_node_(pods_serving|listener_sets)' "$NET_TMP/m.body")" "$(tail -n "+$((log0 + 1))" "$AGENT_LOG" | head -20)"
fi
await_in "$UID_C" "$NS_C" 10
st=$?
out=$(cat "$NET_TMP/await.out")
if ((st == 0)) && [[ $out == *"guard in place"* ]] && ip netns exec "$NS_C" nft list tables | grep -q 'bridge kubevirt_imds'; then
	ok "await: 0 once the agent put the guard in place, the guard's tables in the pod ($out)"
else
	not_ok "await: 0 once the agent put the guard in place" "status $st: $out" "$(tail -5 "$AGENT_LOG")"
fi
# ---- hostile pods ---------------------------------------------------------
# Each is refused with a line naming why; none stalls the others.
H=0b6f4c1e-1a2b-4c3d-8e9f-0000000000
hdir() { pod_folder "$H$1"; }
ln -s "$(pod_folder "$UID_A")/agent.sock" "$(hdir 01)/agent.sock"        # a link to another pod's socket
mkfifo "$(hdir 02)/agent.sock"                                           # a FIFO
head -c 1048576 /dev/zero >"$(hdir 03)/agent.sock"                       # a huge regular file
mkdir -p "$NET_TMP/outside/volumes/kubernetes.io~empty-dir/imds-node"    # the pod's folder a link out
ln -s "$NET_TMP/outside" "$PODS_DIR/${H}04"
for m in silent flood big garbage; do
	case $m in silent) u=05 ;; flood) u=06 ;; big) u=07 ;; garbage) u=08 ;; esac
	ns_new "$NS_TAG-h$u"
	pod_run "$H$u" "$NS_TAG-h$u" "$PY" "$REPO/tests/lib/hostile_sock.py" "$m" agent.sock >"$NET_TMP/h$u.out" 2>&1
	wait_for_line "$NET_TMP/h$u.out" '^ready' 5
done
pod_run "${H}09" - "$PY" "$REPO/tests/lib/hostile_sock.py" silent agent.sock >"$NET_TMP/h09.out" 2>&1 # hostNetwork
wait_for_line "$NET_TMP/h09.out" '^ready' 5
# a socket in pod 10's folder bound by a process of pod A (its cgroup)
# shellcheck disable=SC2016 # $$ is the inner shell's
sh -c 'echo $$ >"$1/cgroup.procs" && cd "$2" && shift 2 && exec "$@"' sh "$(pod_cgroup "$UID_A")" \
	"$(hdir 10)" ip netns exec "$NS_A" "$PY" "$REPO/tests/lib/hostile_sock.py" silent agent.sock >"$NET_TMP/h10.out" 2>&1 &
PODFOLDER_PIDS+=($!)
wait_for_line "$NET_TMP/h10.out" '^ready' 5
# the socket's listener exited and its pid now names another process of the
# pod, in another netns (tests/lib/pid_reuse.py): the pid is not the peer
ns_new "$NS_TAG-h11"
ns_new "$NS_TAG-h11d"
pod_run "${H}11" "$NS_TAG-h11" "$PY" "$REPO/tests/lib/pid_reuse.py" "$NS_TAG-h11d" agent.sock >"$NET_TMP/h11.out" 2>&1
wait_for_line "$NET_TMP/h11.out" '^(ready|no reuse)' 20
declare -A WANT=(
	[01]='refused: a symbolic link on the way'
	[02]='refused: .* is not a socket'
	[03]='refused: .* is not a socket'
	[05]='refused: no config within 2000 ms'
	[06]='refused: (a message after the config|line 1: unknown type|.*a guard message where the config was due)'
	[07]='refused: a message of 65536 bytes'
	[08]='refused: line 1: want'
	[09]='refused: the sidecar \(pid [0-9]+\) is in the node.s network namespace'
	[10]='refused: the socket.s peer \(pid [0-9]+\) is not a process of this pod'
	[11]="refused: the socket.s peer \\(pid $(sed -n 's/^ready \([0-9]*\) .*/\1/p' "$NET_TMP/h11.out")\\) (has exited|exited while it was checked)"
)
grep -q '^ready' "$NET_TMP/h11.out" || not_ok "hostile pod 11: the listener's pid reused by a process of the pod in another netns" "$(cat "$NET_TMP/h11.out")"
for u in 01 02 03 05 06 07 08 09 10 11; do
	if wait_for_line "$AGENT_LOG" "pod $H$u: ${WANT[$u]}" 10; then
		ok "hostile pod $u: $(grep -oE "pod $H$u: ${WANT[$u]}" "$AGENT_LOG" | head -1 | cut -d' ' -f3-)"
	else
		not_ok "hostile pod $u refused: ${WANT[$u]}" "$(grep "$H$u" "$AGENT_LOG" | tail -3)"
	fi
done
expect_eq "the pod folder that is a link out of the pods folder: nothing of it followed" "" \
	"$(grep "${H}04" "$AGENT_LOG" | grep -v 'refused: a symbolic link')"
expect_eq "no hostile pod got the guard or a listener" "" \
	"$(grep -E "pod ${H}[0-9]+: (guard|serving|sidecar pid)" "$AGENT_LOG")"
t0=$(now_ms)
okc=0
for _ in 1 2 3; do
	guest_get "$VM_A" /v1/identity -H 'Metadata: true' >/dev/null 2>&1 && okc=$((okc + 1))
	guest_get "$VM_B" /v1/identity -H 'Metadata: true' >/dev/null 2>&1 && okc=$((okc + 1))
done
ms=$(($(now_ms) - t0))
if ((okc == 6 && ms < 3000)); then ok "the guests are served among the hostile pods (6 requests in $ms ms)"; else not_ok "the guests are served among the hostile pods" "$okc of 6 in $ms ms"; fi
ha=$(grep -c "pod ${H}06: refused" "$AGENT_LOG")
sleep 2
hb=$(grep -c "pod ${H}06: refused" "$AGENT_LOG")
if ((hb - ha <= 2)); then ok "the flooding pod is retried with a growing delay (refused $((hb - ha)) time(s) in 2 s)"; else not_ok "the flooding pod is retried with a growing delay" "$((hb - ha)) refusals in 2 s"; fi

# ---- the agent's health and metrics (mget above) ---------------------------
expect_eq "agent /healthz and /readyz: 200 ok" "200 ok 200 ok" "$(mget /healthz) $(cat "$NET_TMP/m.body") $(mget /readyz) $(cat "$NET_TMP/m.body")"
code=$(mget /metrics)
serving=$(mval imds_node_pods_serving)
refused=$(mval imds_node_pod_refusals_total)
sets=$(mval imds_node_listener_sets_total)
# (A, B and P adopted, above; at most pod C's await's set since)
if [[ $code == 200 ]] && ((serving == 3 && $(mval imds_node_pods_served_total) == 3 && refused >= 9 && sets <= 1)) &&
	[[ $(mval imds_node_arp_replies_total) =~ ^[0-9]+$ && $(mval imds_node_ndp_replies_total) =~ ^[0-9]+$ ]] &&
	grep -q '^imds_node_build_info{version="' "$NET_TMP/m.body"; then
	ok "agent /metrics: 3 pods serving, $refused refusals (the hostile pods), $sets listener set(s) passed (pod C's await's, if it took one), the responders' ARP and NDP replies ($(mval imds_node_arp_replies_total), $(mval imds_node_ndp_replies_total)), its version"
else
	not_ok "agent /metrics: 3 pods serving, the hostile pods' refusals, at most one listener set passed" "HTTP $code" "$(grep -v '^#' "$NET_TMP/m.body")"
fi
expect_eq "agent: POST /metrics 405, an unknown path 404, each with a JSON reason" \
	"405 method_not_allowed 404 not_found" \
	"$(mget /metrics -X POST) $("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"])' "$NET_TMP/m.body") $(mget /nope) $("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"])' "$NET_TMP/m.body")"
out=$("$IMDS_NODE" --pods-dir "$PODS_DIR" --metrics-addr nonsense 2>&1)
expect_eq "agent: --metrics-addr that is no address: exit 2, the flag named" "2 yes" "$? $([[ $out == *'--metrics-addr: invalid listen address'* ]] && echo yes)"

# ---- the agent SIGKILLed and restarted ------------------------------------
plumb_a0=$(count_in "$NS_A")
plumb_b0=$(count_in "$NS_B")
agent_stop KILL
okc=0
for _ in 1 2; do
	guest_get "$VM_A" /v1/identity -H 'Metadata: true' >/dev/null 2>&1 && okc=$((okc + 1))
	guest_get "$VM_B" /v1/identity -H 'Metadata: true' >/dev/null 2>&1 && okc=$((okc + 1))
done
expect_eq "agent dead: the sidecars serve on the listeners they hold" 4 "$okc"
# restarted with the pods folder read-only, as the DaemonSet mounts it: connecting to a
# socket asks for write permission on it (net/unix/af_unix.c unix_find_bsd:
# path_permission MAY_WRITE), which no read-only mount refuses for a socket
# (fs/namei.c sb_permission: regular files, folders and links only)
: >"$NET_TMP/agent2.log"
AGENT_RO=1 agent_start "$NET_TMP/agent2.log"
for x in A B; do
	uid_var=UID_$x
	if wait_for_line "$NET_TMP/agent2.log" "pod ${!uid_var}: serving 1 tap" 10; then
		ok "restarted agent: pod $x followed again"
	else
		not_ok "restarted agent: pod $x followed again" "$(tail -5 "$NET_TMP/agent2.log")"
	fi
done
if grep -q " $PODS_DIR ro," "/proc/$AGENT_PID/mountinfo"; then
	ok "the restarted agent sees the pods folder read-only"
else
	not_ok "the restarted agent sees the pods folder read-only" "$(grep "$PODS_DIR" "/proc/$AGENT_PID/mountinfo")"
fi
expect_eq "restarted agent: pod A's plumbing adopted, nothing duplicated or rebuilt" "$plumb_a0" "$(count_in "$NS_A")"
expect_eq "restarted agent: pod B's plumbing adopted, nothing duplicated or rebuilt" "$plumb_b0" "$(count_in "$NS_B")"
expect_eq "restarted agent: no listener passed again (the sidecars hold theirs), nothing restored" "" \
	"$(grep -E "pod ($UID_A|$UID_B): (restored|.*listener|.*Address already)" "$NET_TMP/agent2.log")"
out=$(guest_get "$VM_A" /v1/identity -H 'Metadata: true' 2>&1)
out2=$(guest_get "$VM_B" /v1/identity -H 'Metadata: true' 2>&1)
if [[ $out == *"vm-$UID_A"* && $out2 == *"vm-$UID_B"* ]]; then ok "restarted agent: both guests served"; else not_ok "restarted agent: both guests served" "$out" "$out2"; fi
# veth-imds deleted under the restarted agent: rebuilt, a new listener set
# (a second "serving ... from the node agent" line: the first is in the log from the start)
ip -n "$NS_A" link del veth-imds
served_twice() { (($(grep -c 'from the node agent (generation [0-9]*), hop' "$NET_TMP/sidecar-a.log") >= 2)); }
for _ in $(seq 500); do served_twice && break; sleep 0.02; done
if served_twice; then
	ok "veth-imds deleted: rebuilt by the agent, a new listener set passed"
else
	not_ok "veth-imds deleted: rebuilt by the agent, a new listener set passed" "$(tail -4 "$NET_TMP/sidecar-a.log")" "$(tail -4 "$NET_TMP/agent2.log")"
fi
out=""
for _ in $(seq 50); do out=$(guest_get "$VM_A" /v1/identity -H 'Metadata: true' 2>&1) && break; sleep 0.1; done
if [[ $out == *"vm-$UID_A"* ]]; then ok "veth-imds deleted: the guest served again"; else not_ok "veth-imds deleted: the guest served again" "$out"; fi
n=$(NS_NODE=$NS_TAG-na node_capture_count)
if [[ $n == 0 ]]; then ok "the node captured no packet to or from .254 (agent absent, killed, restarted)"; else not_ok "the node captured no packet to or from .254" "$n packets" "$(NS_NODE=$NS_TAG-na node_capture_show)"; fi

# ---- DNS at .254 after a flap of veth-imds, and a rewrite of the local entry ----
# As net_dns.sh checks for the sidecar in pod mode (issue 32): only TCP to the service's
# port makes .254 local to the pod (table 169254, behind 'to .254 ipproto tcp dport 80');
# the kernel's 'local 169.254.169.254' entry in table local, which it writes again when
# veth-imds comes up (fib_add_ifaddr at NETDEV_UP), is moved away by the agent too, so
# that a guest's DNS at .254 (GKE's resolver) still reaches the node. Pod A (masquerade:
# the pod routes the guest's packets; a local .254 there answers UDP 53 'port
# unreachable' and refuses TCP 53). A capture on its node: DNS only, nothing to port 80.
DNS_DIAG=(tail -5 "$NET_TMP/agent2.log")
if NS_NODE=$NS_TAG-na dns_node; then
	NS_NODE=$NS_TAG-na node_capture_start
	check_resolves "pod A: before the flap, the guest's DNS at .254 is the node's" a-before "$VM_A"
	NS_POD=$NS_A in_pod ip link set veth-imds down
	NS_POD=$NS_A in_pod ip link set veth-imds up
	for _ in $(seq 100); do
		[[ $(NS_POD=$NS_A local_entries) == 0 ]] && guest_get "$VM_A" /healthz >/dev/null 2>&1 && break
		sleep 0.02
	done
	expect_eq "pod A: veth-imds flapped: the kernel's 'local .254' out of table local again, in table 169254 only" "0 1" \
		"$(NS_POD=$NS_A local_entries) $(ip -n "$NS_A" -4 route show table 169254 | grep -c "^local $SVC dev veth-imds")"
	check_resolves "pod A: after the flap, the guest's DNS at .254 is the node's" a-flap "$VM_A"
	# The entry written again with no link or address event beside it (as the kernel
	# writes it: proto kernel, scope host; here by hand, as an operator or another node
	# agent might): only its route event says so. (The flap's own rewrite comes with a
	# link event, and the agent's pass on the 'down' brings veth-imds up itself.)
	ip -n "$NS_A" route add table local local "$SVC" dev veth-imds proto kernel scope host src "$SVC"
	for _ in $(seq 100); do [[ $(NS_POD=$NS_A local_entries) == 0 ]] && break; sleep 0.02; done
	expect_eq "pod A: 'local .254' written into table local alone (a route event, no link event): moved away again" 0 \
		"$(NS_POD=$NS_A local_entries)"
	check_resolves "pod A: after the rewrite, the guest's DNS at .254 is the node's" a-rewrite "$VM_A"
	check_resolves "pod A: after them, a process of the pod (as passt's DNS forwarding) resolves at the node's .254" a-pod "$NS_A"
	out=$(guest_get "$VM_A" /v1/identity -H 'Metadata: true' 2>&1)
	if [[ $out == *"vm-$UID_A"* ]]; then ok "pod A: after them, the guest is served"; else not_ok "pod A: after them, the guest is served" "$out" "$(tail -4 "$NET_TMP/agent2.log")"; fi
	n=$(NS_NODE=$NS_TAG-na node_capture_count)
	other=$(tcpdump -n -r "$(NS_NODE=$NS_TAG-na node_capture_file cali0)" 'not port 53' 2>/dev/null | wc -l)
	if ((n > 0)) && [[ $other == 0 ]]; then
		ok "pod A's node saw DNS for .254 ($n packets) and nothing else for it: no port 80, no ARP"
	else
		not_ok "pod A's node saw DNS for .254 and nothing else for it" "$n packets, $other not DNS" \
			"$(tcpdump -n -r "$(NS_NODE=$NS_TAG-na node_capture_file cali0)" 'not port 53' 2>/dev/null | head -5)"
	fi
else
	not_ok "a resolver at .254 on pod A's node"
fi

# ---- N pods created and deleted in a loop ---------------------------------
N=${NODE_AGENT_PODS:-110}
ROUNDS=${NODE_AGENT_ROUNDS:-2}
# fd_min SECS [AT_MOST]: the fewest descriptors the agent held over SECS
# seconds (sampled every 0.1 s; done early once at most AT_MOST).  The
# hostile pods are still retried: a silent one holds a connection for its 2 s
# of waiting for a config, every backoff (seen here: 2 more sockets, in 1 of
# 4 runs).
fd_min() {
	local n min=999999 end=$((SECONDS + $1))
	while ((SECONDS < end)); do
		n=$(find "/proc/$AGENT_PID/fd" -mindepth 1 | wc -l)
		((n < min)) && min=$n
		[[ -n ${2:-} ]] && ((min <= $2)) && break
		sleep 0.1
	done
	echo "$min"
}
fds0=$(fd_min 3)
loop_ok=1
for ((r = 1; r <= ROUNDS; r++)); do
	pids=()
	kept=${#PODFOLDER_PIDS[@]}
	for ((i = 0; i < N; i++)); do
		u=$(printf '1a2b3c4d-0000-4000-8000-%04d%08d' "$r" "$i")
		ns=$NS_TAG-l$i
		ip netns add "$ns" && ip -n "$ns" link set lo up
		sidecar_start "$u" "$ns" "$NET_TMP/loop-$i.log"
		pids+=("$SIDECAR_PID")
	done
	t0=$(now_ms)
	for ((i = 0; i < N; i++)); do
		wait_for_line "$NET_TMP/loop-$i.log" 'from the node agent' 60 || { loop_ok=0; echo "# round $r pod $i: $(tail -2 "$NET_TMP/loop-$i.log")"; break; }
	done
	ms=$(($(now_ms) - t0))
	echo "# round $r: $N pods served by the agent in $ms ms after the last sidecar started"
	for ((i = 0; i < N; i++)); do
		u=$(printf '1a2b3c4d-0000-4000-8000-%04d%08d' "$r" "$i")
		kill -TERM "${pids[$i]}" 2>/dev/null
		wait "${pids[$i]}" 2>/dev/null
		rm -rf "${PODS_DIR:?}/$u"
		rmdir "$CG_ROOT/kubepods/pod$u" 2>/dev/null
		ip netns del "$NS_TAG-l$i"
	done
	PODFOLDER_PIDS=("${PODFOLDER_PIDS[@]:0:kept}") # this round's are gone
	wait_for_line "$NET_TMP/agent2.log" "pod $u: its folder is gone" 10 || loop_ok=0
done
if ((loop_ok)); then ok "$ROUNDS rounds of $N pods created and deleted: each served through the agent"; else not_ok "$ROUNDS rounds of $N pods created and deleted"; fi
fds1=$(fd_min 6 "$fds0")
if ((fds1 <= fds0)); then ok "no descriptor leaked over the rounds ($fds0 before, $fds1 after)"; else not_ok "no descriptor leaked over the rounds" "$fds0 before, $fds1 after: $(find "/proc/$AGENT_PID/fd" -mindepth 1 -printf '%l\n' | sort | uniq -c)"; fi
if kill -0 "$AGENT_PID" 2>/dev/null; then ok "the agent is alive"; else not_ok "the agent is alive"; fi
for x in a b; do
	if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$NET_TMP/sidecar-$x.log" "$AGENT_LOG" "$NET_TMP/agent2.log"; then
		not_ok "no sanitizer report ($x)" "$(grep -hE 'Sanitizer|runtime error' "$NET_TMP/sidecar-$x.log" "$AGENT_LOG" "$NET_TMP/agent2.log" | head -5)"
	fi
done
agent_stop TERM
if grep -q 'stopping; every pod' "$NET_TMP/agent2.log"; then ok "SIGTERM: the agent stops, leaving every pod's plumbing"; else not_ok "SIGTERM: the agent stops" "$(tail -3 "$NET_TMP/agent2.log")"; fi

# ---- the DaemonSet's own command line ---------------------------------------
# deploy/node/daemonset.yaml's command and args, as the kubelet runs them (in
# a network namespace of its own, as the agent's pod), the pods folder then
# pointed here: the flags taken (--name=value), and its probes answered on
# the port and paths the manifest names.
mapfile -t DS < <("$PY" -c '
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d.get("kind") == "DaemonSet":
        c = d["spec"]["template"]["spec"]["containers"][0]
        port = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
        for k in ("livenessProbe", "readinessProbe"):
            g = c[k]["httpGet"]
            print("%s %s" % (g["path"], port.get(g["port"], g["port"])))
        print(" ".join(c["command"] + c["args"]))
' "$REPO/deploy/node/daemonset.yaml")
ns=$NS_TAG-ds
ip netns add "$ns" && ip -n "$ns" link set lo up
: >"$NET_TMP/agent-ds.log"
# shellcheck disable=SC2086 # the manifest's words
ip netns exec "$ns" "$IMDS_NODE" ${DS[2]#/imds-node} --pods-dir "$PODS_DIR" >"$NET_TMP/agent-ds.log" 2>&1 &
DSPID=$!
wait_for_line "$NET_TMP/agent-ds.log" 'watching ' 10
codes=""
for k in 0 1; do
	codes+="$(ip netns exec "$ns" curl -s --noproxy '*' -o /dev/null -w '%{http_code}' "http://127.0.0.1:${DS[k]#* }${DS[k]%% *}") "
done
kill "$DSPID" 2>/dev/null
wait "$DSPID" 2>/dev/null
ip netns del "$ns"
expect_eq "the DaemonSet's command line runs the agent, its liveness and readiness probes answered 200 (${DS[0]}, ${DS[1]})" \
	"200 200 " "$codes"

# ---- a new pod found by the folders' events alone --------------------------
# The rescan a minute away: what serves a new pod is inotify, on the pods
# folder and then on each folder of its way down to the socket as the
# kubelet makes them one after the other (the pod's, then its emptyDir's
# seconds later), and the sidecar's socket appearing already listening.
: >"$NET_TMP/agent3.log"
agent_start "$NET_TMP/agent3.log" --rescan-ms 60000
wait_for_line "$NET_TMP/agent3.log" 'watching ' 10
sleep 0.3 # its first rescan done
for k in 1 2; do
	u=$(printf '7e57e7e5-0000-4000-8000-%012d' "$k")
	ns=$NS_TAG-e$k
	ip netns add "$ns" && ip -n "$ns" link set lo up
	mkdir -p "$PODS_DIR/$u" # the pod's folder first: its emptyDir comes later
	sleep 0.3
	[[ $k == 2 ]] && { mkdir -p "$PODS_DIR/$u/volumes"; sleep 0.3; }
	sidecar_start "$u" "$ns" "$NET_TMP/events-$k.log"
	if wait_for_line "$NET_TMP/events-$k.log" 'net: ready [0-9]+ ms after start' 10; then
		ok "a new pod served through the folders' events alone, the rescan 60 s away ($k: $(grep -oE 'ready [0-9]+ ms after start' "$NET_TMP/events-$k.log"))"
	else
		not_ok "a new pod served through the folders' events alone, the rescan 60 s away ($k)" "$(tail -3 "$NET_TMP/events-$k.log")" "$(tail -3 "$NET_TMP/agent3.log")"
	fi
	kill -TERM "$SIDECAR_PID" 2>/dev/null
	wait "$SIDECAR_PID" 2>/dev/null
	ip netns del "$ns"
done
agent_stop TERM
tap_done
