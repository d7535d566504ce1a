#!/usr/bin/env bash
# imds-variants: debug (variant-independent: tests/run.sh runs it in one build)
# upgrade_interop: the two versions across a live migration (issue 33 item 3;
# docs/operations.md, "Upgrade and rollback").  A VM started before an upgrade
# keeps the old sidecar; its migration target gets the new one, with the env
# and files the old webhook wrote (the ends never talk: each serves its own
# pod).  Here: the old imds-server and admission_cli built from a pinned
# commit (cached by commit, tests/lib/oldbuild.sh), three launcher pods built
# as KubeVirt's masquerade binding, dual-stack (tests/lib/netns.sh), each on
# its own node, and one guest moved between them by tapwire as qemu's
# migration moves it (its NIC never loses its carrier, so it keeps its
# neighbour table):
#   source pod, OLD sidecar -> target pod, NEW sidecar (then restarted with
#   the env the NEW webhook writes for the pod, what a target really gets) ->
#   a third pod, OLD sidecar again (a rollback) ->
#   a fourth pod, the NEW model (issue 29 item 6): the new webhook's
#   --network-mode agent env, the sidecar as UID 107 with no capability, and
#   imds-node building the pod's network half from the node.
# On each the guest walks every layout over 169.254.169.254 and fd00:ec2::254
# (tests/lib/interop_walk.py: NoCloud, identity, token, sessions, OpenStack's
# versions and files, EC2's versions and latest's trees with and without an
# IMDSv2 token, GCE, Azure, lifecycle), and the walks are compared path by
# path: a difference is allowed only by the list below, each rule with the
# CHANGELOG line announcing it.  Also: veth-imds's MAC is the same in every
# pod, the guest is served by the next pod without asking ARP or NDP again, a
# session of one version is 401 on the other and a new one works, the ETag a
# guest holds still says "not modified", the VM's serial is the one the old
# webhook wrote and Debian's cloud-init takes the same data with it from each.
# Variant-independent (the old build is debug): run in debug only.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=../lib/podfolder.sh
. "$(dirname "$0")/../lib/podfolder.sh"
# shellcheck source=../lib/oldbuild.sh
. "$(dirname "$0")/../lib/oldbuild.sh"

# The old version: main as CI last landed it before the round that added
# the lifecycle events, the VM's own cloud-init, zones and the node agent
# (ea3c8bd, 2026-11-27; no CHANGELOG existed yet).  Move it to the last
# release once there is one; IMDS_INTEROP_OLD=<commit> tries another.
OLD_REV=${IMDS_INTEROP_OLD:-ea3c8bd}
NEW_SERVER=$IMDS_SERVER
WALK=$REPO/tests/lib/interop_walk.py
SIDECAR_ENV=$REPO/tests/lib/sidecar_env.py
REVIEW=$REPO/tests/fixtures/webhook/pod-kv18.json
W=$NET_TMP

# What the new version serves differently, on purpose: "KEY-GLOB<TAB>RULE
# <TAB>the CHANGELOG line(s) announcing it, a part of each, ' | ' between"
# (rules: tests/lib/interop_walk.py).
cat >"$W/allow" <<'EOF'
*GET /openstack/*/meta_data.json	json -availability_zone="" +instance_id	leaves `availability_zone` out when the zone is unknown | `meta_data.json` gains `instance_id`
*GET /openstack/*/network_data.json	now-404	`network_data.json` is 404
*GET /computeMetadata/*	added	GCE's `computeMetadata/v1/instance/`
*GET /metadata/*	added	Azure's `/metadata/scheduledevents` and `/metadata/instance`
*GET /v1/lifecycle	added	Lifecycle events (issue 31): `GET /v1/lifecycle`
*GET /*/meta-data/	lines +events/	EC2's `meta-data/events/maintenance/*` (listed in `meta-data/`)
*GET /latest/meta-data/events/*	added	EC2's `meta-data/events/maintenance/*` (listed in `meta-data/`)
EOF
# (the section as one line: a part may wrap)
unreleased=$(awk '/^## Unreleased/ {on = 1; next} /^## / {on = 0} on' "$REPO/CHANGELOG.md" | tr -s ' \n' '  ')
missing=$(cut -f3 "$W/allow" | sed 's/ | /\n/g' | while IFS= read -r line; do
	grep -qF -- "$line" <<<"$unreleased" || printf '%s\n' "$line"
done)
expect_eq "every allowed difference ($(wc -l <"$W/allow") rules) is announced in CHANGELOG.md's Unreleased" "" "$missing"

# --- the old build -------------------------------------------------------
t0=$SECONDS
if ! old_build "$OLD_REV"; then
	not_ok "the old version ($OLD_REV) built" "$OLD_ERR"
	tap_done
	exit 1
fi
OLD_SERVER=$OLD_DIR/imds-server OLD_CLI=$OLD_DIR/admission_cli
read -r old_full old_ver <"$OLD_DIR/COMMIT"
out=$("$OLD_SERVER" --version 2>&1)
expect_eq "the old version $old_ver built or found cached ($((SECONDS - t0)) s): imds-server --version" \
	"imds-server $old_ver" "$out"
if [[ $old_full == "$(git -C "$REPO" rev-parse HEAD)" ]]; then
	not_ok "the old version is not this one" "$old_full is HEAD"
fi
new_ver=$("$NEW_SERVER" --version 2>&1)
echo "# old: $old_ver ($OLD_DIR); new: $new_ver ($NEW_SERVER)"

# --- the env and files the OLD webhook writes into the source pod ---------
mkdir -p "$W/ssh"
printf 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk3bL0p0x9Vf7c3y3x8Zl2mJqV0W1r5s8gYwQ9t4Xyz admin@example.com\n' >"$W/ssh/key1"
printf '#cloud-config\nhostname: from-user-data\nwrite_files:\n  - path: /etc/motd\n    content: "Grüße ✓"\n' >"$W/user-data"
# sidecar_env ROOT CLI: the webhook's (CLI's) sidecar env for the fixture's
# pod, its volumes under ROOT as kubelet writes them; VAR=value lines
sidecar_env() { # ROOT CLI [--cli-arg=ARG...]
	"$PY" "$SIDECAR_ENV" pod --review "$REVIEW" --admission-cli "$2" --root "$1" --json "${@:3}" \
		--set-annotation "imds.kubevirt.io/user-data=@$W/user-data" \
		--set-annotation imds.kubevirt.io/ssh-keys-secret=vm-ssh --secret "vm-ssh=$W/ssh" \
		--set-annotation 'imds.kubevirt.io/meta-data={"role":"db","note":"a: b #c","snow":"\u2603"}' \
		--set-annotation imds.kubevirt.io/interfaces=default:masquerade:tap0 |
		"$PY" -c 'import json, sys; d = json.load(sys.stdin); print("\n".join("%s=%s" % kv for kv in sorted(d.items())))'
}
if ! sidecar_env "$W/root-a" "$OLD_CLI" >"$W/env-a" 2>"$W/env.err" || ! grep -q '^IMDS_VM_NAME=testvm$' "$W/env-a"; then
	not_ok "the old webhook's sidecar env (sidecar_env.py, the old admission_cli)" "$(cat "$W/env.err" "$W/env-a")"
	tap_done
	exit 1
fi
ok "the old webhook's sidecar env: $(wc -l <"$W/env-a") variables"
# The next pods get the same env and files, each in its own volumes.
for p in b c; do
	cp -a "$W/root-a" "$W/root-$p"
	sed "s#$W/root-a/#$W/root-$p/#" "$W/env-a" >"$W/env-$p"
done

# The serial the webhook writes on the VM (cloud-init's NoCloud seed): the
# guest keeps the old webhook's across the migration (it is the firmware's).
VM_REVIEW=$REPO/tests/fixtures/webhook/vm-no-firmware.json
OLD_SERIAL=$("$PY" "$SIDECAR_ENV" vm-serial --review "$VM_REVIEW" --admission-cli "$OLD_CLI" 2>&1)
NEW_SERIAL=$("$PY" "$SIDECAR_ENV" vm-serial --review "$VM_REVIEW" --admission-cli "$REPO/build/debug/tests/admission_cli" 2>&1)
expect_eq "the VM's serial: the new webhook writes the old one's ($OLD_SERIAL)" "$OLD_SERIAL" "$NEW_SERIAL"
# ci_view: Debian's cloud-init (NoCloudNet get_data()) in the guest with the
# old webhook's serial: what it takes, as one JSON line
ci_view() {
	ip netns exec "$NS_VM" "$PY" "$REPO/tests/lib/cloudinit_client.py" --serial "$OLD_SERIAL" \
		--expect-userdata-file "$W/user-data" 2>/dev/null | "$PY" -c 'import json, sys
d = json.loads(sys.stdin.read() or "{}")
print(json.dumps({k: d.get(k) for k in ("ok", "error", "instance_id", "local_hostname", "public_keys",
      "userdata_sha256", "vendordata_sha256", "metadata")}, sort_keys=True, default=str))'
}

# --- three launcher pods, each on its own node, and the guest ---------------
# Dual-stack (Calico's IPv6 on the pod, KubeVirt's fd10:0:2::1/120 and ip6
# nat): the guest asks 169.254.169.254 and fd00:ec2::254.
export NODE_V6=1
G6=fd00:ec2::254
# pod_make SUFFIX: NS_NODE/NS_POD for that pod, built as the first
pod_make() {
	NS_NODE=$NS_TAG-node$1 NS_POD=$NS_TAG-pod$1
	ns_new "$NS_NODE" && ns_new "$NS_POD" && node_link 1400 && launcher_masquerade
}
POD_A=$NS_TAG-pod POD_B=$NS_TAG-podb POD_C=$NS_TAG-podc POD_D=$NS_TAG-podd
pods=0
pod_make b && pod_make c && pod_make d && pods=1
NS_NODE=$NS_TAG-node NS_POD=$POD_A # the source: netns.sh's own names
if ((!pods)) || ! ns_setup || ! node_link 1400 || ! launcher_masquerade; then
	not_ok "three launcher pods (masquerade) set up (needs root, iproute2, nftables)"
	tap_done
	exit 1
fi
TAPWIRE_NEXT=("$POD_B" tap0 "$POD_C" tap0 "$POD_D" tap0)
if ! guest_attach "$NS_VM" tap0 dual; then
	not_ok "the guest attached to the source pod's tap0"
	tap_done
	exit 1
fi
TAPWIRE_NEXT=()
# The service on-link (a ZEROCONF route, or a guest with only a link-local
# address): the guest's neighbour entries are for 169.254.169.254 and
# fd00:ec2::254 themselves, the MAC of veth-imds (through masquerade's
# gateway they would be k6t-eth0's 02:00:00:00:00:00, the same in every pod
# anyway).
ip -n "$NS_VM" route add 169.254.169.254/32 dev eth0 scope link
ip -n "$NS_VM" -6 route add "$G6/128" dev eth0

# sc_start POD BIN ENV LOG: the sidecar as injected (`run`), its PID in SC_PID
sc_start() {
	local env=()
	mapfile -t env <"$3"
	: >"$4"
	ip netns exec "$1" env -i PATH="$PATH" "${env[@]}" "$2" run >"$4" 2>&1 &
	SC_PID=$!
	BG_PIDS+=("$SC_PID")
}
sc_wait() { # LOG PID
	local i
	for ((i = 0; i < 1000; i++)); do
		grep -q 'net: serving' "$1" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}
sc_stop() { # PID: SIGTERM, as KubeVirt stops the source pod
	kill -TERM "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
veth_mac() { ip netns exec "$1" cat /sys/class/net/veth-imds/address; }
guest_neigh() { # the guest's neighbour entries for the service, IPv4 and IPv6
	echo "$(ip -n "$NS_VM" neigh show 169.254.169.254 dev eth0 | awk '{print $3}')" \
		"$(ip -n "$NS_VM" -6 neigh show "$G6" dev eth0 | awk '{print $3}')"
}
walk() { # NAME: the guest's walk, over IPv4 and IPv6, into $W/NAME.json
	if ip netns exec "$NS_VM" "$PY" "$WALK" walk --host 169.254.169.254 --host "[$G6]" >"$W/$1.json" 2>"$W/$1.err"; then
		ok "$1: the guest walked every layout ($(sed -n 's/^walked //p' "$W/$1.err"))"
	else
		not_ok "$1: the guest walked every layout" "$(tail -n 5 "$W/$1.err")"
	fi
}
compare() { # NAME OLD NEW [--reverse]
	local out
	if out=$("$PY" "$WALK" compare "$W/$2.json" "$W/$3.json" "$W/allow" ${4:+"$4"} 2>&1); then
		ok "$1: $(tail -n 1 <<<"$out")"
	else
		not_ok "$1" "$out"
	fi
}
# switch N: the migration's switch-over to the next pod (tapwire's Nth)
switch() {
	local i f=$NET_TMP/tapwire-$NS_VM-tap0.out
	kill -USR1 "$TAPWIRE_PID"
	for ((i = 0; i < 300; i++)); do grep -q "^switched $1\$" "$f" && return 0; sleep 0.01; done
	echo "tapwire: $(cat "$f")" >&2
	return 1
}
# capture: ARP on the guest's eth0, and its TCP to the service (to know the
# capture saw the walk); the guest's own requests are those from its MAC (the
# target's sidecar asks for the guest once: its ARP responder learning it)
cap_start() {
	: >"$W/cap.err"
	ip netns exec "$NS_VM" tcpdump -n -U --immediate-mode -i eth0 -w "$W/$1.pcap" \
		"arp or (icmp6 and ip6[40] = 135) or (tcp and (host 169.254.169.254 or host $G6))" 2>"$W/cap.err" &
	CAP_PID=$!
	BG_PIDS+=("$CAP_PID")
	local i
	for ((i = 0; i < 300; i++)); do grep -q 'listening on' "$W/cap.err" && return 0; sleep 0.01; done
	return 1
}
cap_stop() { # NAME: "the guest's ARP broadcasts and multicast neighbour solicitations, its unicast probes, the pod's requests, TCP packets"
	local g=52:54:00:12:34:56 f=$W/$1.pcap # guest_attach's MAC
	local req="(arp[6:2] = 1 or (icmp6 and ip6[40] = 135))"
	sleep 0.2
	kill -INT "$CAP_PID" 2>/dev/null
	wait "$CAP_PID" 2>/dev/null
	echo "$(tcpdump -n -r "$f" "$req and ether src $g and ether[0] & 1 = 1" 2>/dev/null | wc -l)" \
		"$(tcpdump -n -r "$f" "$req and ether src $g and ether[0] & 1 = 0" 2>/dev/null | wc -l)" \
		"$(tcpdump -n -r "$f" "$req and not ether src $g" 2>/dev/null | wc -l)" \
		"$(tcpdump -n -r "$f" tcp 2>/dev/null | wc -l)"
}
# curl from the guest: the status, or the body with -b
gcurl() { ip netns exec "$NS_VM" curl -s --max-time 3 -o /dev/null -w '%{http_code}' "$@"; }

# --- 1. the source: the OLD sidecar ----------------------------------------
sc_start "$POD_A" "$OLD_SERVER" "$W/env-a" "$W/a.log"
PID_A=$SC_PID
if sc_wait "$W/a.log" "$PID_A"; then ok "source pod: the old sidecar serves tap0"; else not_ok "source pod: the old sidecar serves tap0" "$(tail -n 20 "$W/a.log")"; fi
walk old-source
jq_status() { "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(sum(1 for v in d.values() if v["status"] == 200))' "$1"; }
n200=$(jq_status "$W/old-source.json")
if ((n200 >= 100)); then ok "the source's walk: $n200 answers of 200"; else not_ok "the source's walk: at least 100 answers of 200" "$n200"; fi
CI_A=$(ci_view)
if [[ $CI_A == *'"ok": true'* ]]; then
	ok "cloud-init with the old serial takes the old sidecar's data (instance $("$PY" -c 'import json, sys; print(json.loads(sys.argv[1])["instance_id"])' "$CI_A"))"
else
	not_ok "cloud-init with the old serial takes the old sidecar's data" "$CI_A"
fi
mac_a=$(veth_mac "$POD_A")
expect_eq "the guest's neighbour entries for 169.254.169.254 and $G6 are the source's veth-imds ($mac_a)" "$mac_a $mac_a" "$(guest_neigh)"
EC2_TOK=$(ip netns exec "$NS_VM" curl -s --max-time 3 -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 300' http://169.254.169.254/latest/api/token)
V1_TOK=$(ip netns exec "$NS_VM" curl -s --max-time 3 -X PUT -H 'X-Metadata-Token-TTL-Seconds: 300' http://169.254.169.254/v1/session)
UD_ETAG=$(ip netns exec "$NS_VM" curl -s --max-time 3 -D - -o /dev/null http://169.254.169.254/v1/user-data | tr -d '\r' | sed -n 's/^ETag: //p')
expect_eq "the old sidecar's sessions and user-data's ETag (43 + 43 characters, an ETag)" "43 43 y" \
	"${#EC2_TOK} ${#V1_TOK} $([[ -n $UD_ETAG ]] && echo y)"

# move_guest CAP N OLD_PID WALK WHO WHERE: the switch-over to pod N (the pod
# left behind stops its sidecar), the walk WALK there, and the guest served
# by the WHO sidecar without resolving anything again (tcpdump CAP in it).
move_guest() {
	local cap=$1 n=$2 old=$3 name=$4 who=$5 where=$6 bcast probes podreq tcp
	cap_start "$cap" || not_ok "tcpdump in the guest started" "$(cat "$W/cap.err")"
	if switch "$n"; then ok "switch-over: the guest's frames go to the $where's tap0"; else not_ok "switch-over to the $where"; fi
	sc_stop "$old"
	walk "$name"
	read -r bcast probes podreq tcp < <(cap_stop "$cap")
	if [[ $bcast == 0 && $tcp -gt 0 ]]; then
		ok "served by the $who sidecar without re-resolving: no ARP broadcast or multicast solicitation from the guest ($tcp TCP packets; $probes unicast probes from the guest, $podreq requests for it from the pod)"
	else
		not_ok "served by the $who sidecar without re-resolving" "the guest's broadcasts/multicast solicitations: $bcast, its probes: $probes, TCP packets: $tcp" \
			"$(tcpdump -n -e -r "$W/$cap.pcap" 'arp or icmp6' 2>/dev/null | head -n 5)"
	fi
}

# --- 2. migration to a target with the NEW sidecar -------------------------
sc_start "$POD_B" "$NEW_SERVER" "$W/env-b" "$W/b.log"
PID_B=$SC_PID
if sc_wait "$W/b.log" "$PID_B"; then ok "target pod: the new sidecar serves tap0 before the switch-over"; else not_ok "target pod: the new sidecar serves tap0" "$(tail -n 20 "$W/b.log")"; fi
expect_eq "veth-imds's MAC: the new sidecar's is the old one's (both from the VM's namespace and name)" \
	"$mac_a" "$(veth_mac "$POD_B")"
move_guest mig1 1 "$PID_A" new-target new target
expect_eq "the guest's neighbour entries are unchanged after the migration" "$mac_a $mac_a" "$(guest_neigh)"
served_b=$(grep -c ' GET ' "$W/b.log")
if ((served_b >= 100)); then ok "the walk was the target's: $served_b requests in its log"; else not_ok "the walk was the target's" "$served_b GET lines in its log" "$(tail -n 5 "$W/b.log")"; fi
compare "old -> new: the guest sees the same data, but for the announced changes" old-source new-target
expect_eq "old -> new: cloud-init with the old serial takes the same data from the new sidecar" "$CI_A" "$(ci_view)"
expect_eq "old -> new: the old's EC2 session is 401 on the new" 401 \
	"$(gcurl -H "X-aws-ec2-metadata-token: $EC2_TOK" http://169.254.169.254/latest/meta-data/instance-id)"
expect_eq "old -> new: the old's /v1/session is 401 on the new" 401 \
	"$(gcurl -H 'Metadata: true' -H "X-Metadata-Token: $V1_TOK" http://169.254.169.254/v1/identity)"
EC2_TOK=$(ip netns exec "$NS_VM" curl -s --max-time 3 -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 300' http://169.254.169.254/latest/api/token)
expect_eq "old -> new: a new EC2 session works" 200 \
	"$(gcurl -H "X-aws-ec2-metadata-token: $EC2_TOK" http://169.254.169.254/latest/meta-data/instance-id)"
expect_eq "old -> new: user-data with the old's ETag is 304 (a polling agent sees no change)" 304 \
	"$(gcurl -H "If-None-Match: $UD_ETAG" http://169.254.169.254/v1/user-data)"

# --- 2b. the target's env as the NEW webhook writes it ------------------------
# What KubeVirt's target pod really gets after an upgrade: the new webhook's
# patch of the same pod (it adds IMDS_LIFECYCLE_DIR, IMDS_AVAILABILITY_ZONE
# and IMDS_REGION).  The sidecar restarted with it in the target pod; the
# token file the same (kubelet's projection of the pod's, not the version's).
if sidecar_env "$W/root-n" "$REPO/build/debug/tests/admission_cli" >"$W/env-n" 2>"$W/env.err"; then
	tok_a=$(sed -n 's/^IMDS_TOKEN_PATH=//p' "$W/env-a") tok_n=$(sed -n 's/^IMDS_TOKEN_PATH=//p' "$W/env-n")
	cp "$tok_a" "$tok_n"
	added=$(comm -13 <(sed 's/=.*//' "$W/env-a") <(sed 's/=.*//' "$W/env-n") | tr '\n' ' ')
	removed=$(comm -23 <(sed 's/=.*//' "$W/env-a") <(sed 's/=.*//' "$W/env-n") | tr '\n' ' ')
	expect_eq "the new webhook's env: the old one's variables, none removed" "" "$removed"
	echo "# the new webhook adds: $added"
	sc_stop "$PID_B"
	sc_start "$POD_B" "$NEW_SERVER" "$W/env-n" "$W/n.log"
	PID_B=$SC_PID
	if sc_wait "$W/n.log" "$PID_B"; then
		walk new-webhook
		compare "old -> new with the new webhook's env: the same data, but for the announced changes" old-source new-webhook
	else
		not_ok "target pod: the new sidecar with the new webhook's env serves tap0" "$(tail -n 20 "$W/n.log")"
	fi
else
	not_ok "the new webhook's sidecar env (sidecar_env.py)" "$(cat "$W/env.err")"
fi

# --- 3. rollback: on to a pod with the OLD sidecar again --------------------
sc_start "$POD_C" "$OLD_SERVER" "$W/env-c" "$W/c.log"
PID_C=$SC_PID
if sc_wait "$W/c.log" "$PID_C"; then ok "rollback pod: the old sidecar serves tap0"; else not_ok "rollback pod: the old sidecar serves tap0" "$(tail -n 20 "$W/c.log")"; fi
expect_eq "veth-imds's MAC: the same in the rollback pod" "$mac_a" "$(veth_mac "$POD_C")"
V1_TOK=$(ip netns exec "$NS_VM" curl -s --max-time 3 -X PUT -H 'X-Metadata-Token-TTL-Seconds: 300' http://169.254.169.254/v1/session)
move_guest mig2 2 "$PID_B" old-rollback old "rollback pod"
expect_eq "the guest's neighbour entries are unchanged after the rollback" "$mac_a $mac_a" "$(guest_neigh)"
compare "new -> old (rollback): the same data, but for the announced changes" new-target old-rollback --reverse
expect_eq "new -> old: cloud-init takes the same data from the old sidecar again" "$CI_A" "$(ci_view)"
: >"$W/none"
if out=$("$PY" "$WALK" compare "$W/old-source.json" "$W/old-rollback.json" "$W/none" 2>&1); then
	ok "old before and after: every answer the same ($(tail -n 1 <<<"$out" | sed 's/:.*//'))"
else
	not_ok "old before and after: every answer the same (the walk is deterministic)" "$out"
fi
expect_eq "new -> old: the new's /v1/session is 401 on the old" 401 \
	"$(gcurl -H 'Metadata: true' -H "X-Metadata-Token: $V1_TOK" http://169.254.169.254/v1/identity)"
expect_eq "new -> old: user-data with the ETag the guest held is 304" 304 \
	"$(gcurl -H "If-None-Match: $UD_ETAG" http://169.254.169.254/v1/user-data)"

# --- 4. the new model: on to a pod whose network half is the node agent's ---
# (issue 29 item 6; docs/operations.md, "Upgrade and rollback").  A VM the
# previous version injected keeps its in-pod sidecar (pods C and A: root,
# NET_ADMIN); the new webhook with --network-mode agent injects its target
# with an unprivileged sidecar (UID 107, no capability) and imds-node builds
# that pod's network half from the node (tests/lib/podfolder.sh: the pods
# folder, the pod's cgroup, the agent in this namespace as the node's).
UID_D=0b6f4c1e-1a2b-4c3d-8e9f-0000000000dd
if sidecar_env "$W/root-d" "$REPO/build/debug/tests/admission_cli" --cli-arg=--agent >"$W/env-d" 2>"$W/env.err" &&
	grep -q '^IMDS_NET_MODE=agent$' "$W/env-d"; then
	ok "the new webhook in agent mode: the sidecar's env says IMDS_NET_MODE=agent"
else
	not_ok "the new webhook in agent mode: the sidecar's env says IMDS_NET_MODE=agent" "$(cat "$W/env.err" "$W/env-d")"
fi
cp "$(sed -n 's/^IMDS_TOKEN_PATH=//p' "$W/env-a")" "$(sed -n 's/^IMDS_TOKEN_PATH=//p' "$W/env-d")"
# what the kubelet gives the pod, readable by its UID 107; the state
# folder an emptyDir (0777, as the kubelet makes it)
chmod -R a+rX "$W/root-d"
chmod 0777 "$(sed -n 's/^IMDS_STATE_DIR=//p' "$W/env-d")"
agent_start "$W/agent.log"
# the sidecar as the webhook injects it in agent mode: UID 107, no
# capability, in its pod's cgroup; the agent's socket in the pod's imds-node
# emptyDir (named relative: its host path is longer than a socket's)
mapfile -t env_d <"$W/env-d"
: >"$W/d.log"
sidecar_exec "$UID_D" "$POD_D" "$W/d.log" -i PATH="$PATH" "${env_d[@]}" -- "$NEW_SERVER" run
PID_D=$SIDECAR_PID
if wait_for_line "$W/d.log" 'net: serving .* from the node agent' 15; then
	ok "agent-mode pod: the unprivileged sidecar serves tap0 on the agent's listeners before the switch-over"
else
	not_ok "agent-mode pod: the unprivileged sidecar serves on the agent's listeners" "$(tail -n 8 "$W/d.log")" "$(tail -n 8 "$W/agent.log")"
fi
expect_eq "agent-mode pod: the sidecar runs as UID 107 with no capability (Uid, CapEff CapPrm CapBnd)" \
	"107 0000000000000000 0000000000000000 0000000000000000" \
	"$(awk '/^Uid/ {print $3}' "/proc/$PID_D/status") $(caps_of "$PID_D")"
expect_eq "veth-imds's MAC: the agent's is the in-pod sidecars' (from the VM's namespace and name)" \
	"$mac_a" "$(veth_mac "$POD_D")"
move_guest mig3 3 "$PID_C" agent-target "new agent-mode" "agent-mode pod"
expect_eq "the guest's neighbour entries are unchanged after the move to the agent-mode pod" "$mac_a $mac_a" "$(guest_neigh)"
served_d=$(grep -c ' GET ' "$W/d.log")
if ((served_d >= 100)); then ok "the walk was the agent-mode pod's: $served_d requests in its log"; else not_ok "the walk was the agent-mode pod's" "$served_d GET lines in its log" "$(tail -n 5 "$W/d.log")"; fi
compare "old in-pod -> new agent-mode: the same data, but for the announced changes" old-rollback agent-target
if out=$("$PY" "$WALK" compare "$W/new-webhook.json" "$W/agent-target.json" "$W/none" 2>&1); then
	ok "new in-pod -> new agent-mode: every answer the same, the model changes no byte ($(tail -n 1 <<<"$out" | sed 's/:.*//'))"
else
	not_ok "new in-pod -> new agent-mode: every answer the same" "$out"
fi
expect_eq "old in-pod -> new agent-mode: cloud-init takes the same data" "$CI_A" "$(ci_view)"
expect_eq "old in-pod -> new agent-mode: user-data with the ETag the guest held is 304" 304 \
	"$(gcurl -H "If-None-Match: $UD_ETAG" http://169.254.169.254/v1/user-data)"
if grep -qE 'refus|ERROR|error' "$W/agent.log"; then
	not_ok "the agent's log: no refusal or error" "$(grep -E 'refus|ERROR|error' "$W/agent.log" | head -5)"
else
	ok "the agent's log: no refusal or error ($(grep -c . "$W/agent.log") lines)"
fi
kill -TERM "$PID_D" 2>/dev/null
wait "$PID_D" 2>/dev/null
agent_stop TERM

if ! cat "$W/b.log" "$W/n.log" "$W/d.log" "$W/agent.log" 2>/dev/null | grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:'; then
	ok "the new sidecar's log is free of sanitizer reports"
else
	not_ok "the new sidecar's log is free of sanitizer reports" "$(cat "$W/b.log" "$W/n.log" "$W/d.log" "$W/agent.log" | grep -A20 -E 'Sanitizer|runtime error' | head -40)"
fi
tap_done
