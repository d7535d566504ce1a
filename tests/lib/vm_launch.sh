# shellcheck shell=bash disable=SC2154,SC2034 # the suite's globals: vm_boot.sh sets and reads them
# vm_launch.sh — the VM suite's launcher side: console helpers, the launcher pod
# of a binding with its DHCP and the sidecar as injected (pod_up), the sidecar's
# restarts, the reference server, the guest's boot up to its first request.
# Sourced by tests/integration/vm_boot.sh after tests/lib/tap.sh, vm.sh and
# netns.sh; its functions use the suite's globals (work, SC_*, NS*, POD_*,
# VM_*, GUEST_*, SUMMARY; the suite's header says what each scenario does).

# vm_table <array> <column>...: a table on stdin (rows of '|'-separated cells;
# '#' lines and blank ones skipped; cells trimmed) into the associative array
# <array>: [<first cell>.<column>] = the cell; <array>_ROWS: the first cells in order.
vm_table() {
	local -n _tab=$1 _rows=${1}_ROWS
	shift
	local cols=("$@") line c i cells skip='^[[:space:]]*(#|$)'
	while IFS= read -r line; do
		[[ $line =~ $skip ]] && continue
		IFS='|' read -ra cells <<<"$line"
		for i in "${!cells[@]}"; do
			c=${cells[i]}
			c=${c#"${c%%[![:space:]]*}"}
			cells[i]=${c%"${c##*[![:space:]]}"}
		done
		_rows+=("${cells[0]}")
		for i in "${!cols[@]}"; do _tab[${cells[0]}.${cols[i]}]=${cells[i + 1]:-}; done
	done
}

# timestamp <file> <out>: copy lines of a growing file to <out>, each
# prefixed with the host's time when it appeared.
timestamp() {
	"$PY" -u - "$1" "$2" <<'PYEOF' &
import os, sys, time
src, dst = sys.argv[1], sys.argv[2]
parent = os.getppid()  # the suite: stop when it is gone
out = open(dst, "a")
while not os.path.exists(src):
    time.sleep(0.05)
f = open(src, "rb")
buf = b""
while True:
    chunk = f.read()
    if chunk:
        buf += chunk
        *lines, buf = buf.split(b"\n")
        now = time.time()
        for l in lines:
            out.write("%.6f %s\n" % (now, l.rstrip(b"\r").decode(errors="replace")))
        out.flush()
    elif os.getppid() != parent:
        break
    else:
        time.sleep(0.05)
PYEOF
	bg_pids+=($!)
}

# ts_of <ts-file> <regex> [n]: host time of the n-th matching line
ts_of() {
	grep -aE -- "$2" "$1" 2>/dev/null | sed -n "${3:-1}p" | cut -d' ' -f1
}

# console_tail <console>: the last lines, as comments
console_tail() {
	echo "--- console (last 60 lines) ---"
	tail -n 60 "$1" | tr -d '\r'
}

# wait_mark <name> <console> <regex> [count] [timeout]: ok/not_ok
wait_mark() {
	local name=$1 con=$2 re=$3 n=${4:-1} t=${5:-$BOOT_TIMEOUT}
	if vm_wait_for_count "$con" "$re" "$n" "$t" 2>"$work/wait.err"; then
		return 0
	fi
	not_ok "$name" "$(cat "$work/wait.err")" "$(console_tail "$con")" "--- sidecar log ---" "$(tail -n 20 "$SC_LOG")"
	return 1
}

# line <console> <regex> [n]: the n-th matching line, \r stripped
line() { grep -aoE -- "$2.*" "$1" | tr -d '\r' | sed -n "${3:-1}p"; }
# between <console> <begin> <end> [n]: the text between two tokens on a line
between() { line "$1" "$2 .* $3" "${4:-1}" | sed -E "s/.*$2 (.*) $3.*/\\1/"; }

# --- the bindings ----------------------------------------------------------------------
# One row per binding: what pod_up builds for it and what the checks expect of
# its guest (binding_of <binding> <column>).  launcher: tests/lib/netns.sh's;
# guestnet: the pod's side of the guest's address (guestnet_<it> <dir>); qemu:
# its network, tap0 or passt's socket (boot_guest, migrate_checks); ifs: the
# IMDS_INTERFACES the webhook writes; plumbing: count_plumbing once serving (veth
# pair, address, rule, route; tables ip, ip6 and bridge, netdev with a tap);
# address: the guest's eth0 ({POD_IP}: the pod's); kill: the sidecar SIGKILLed
# once the guest had its meta-data (scenario_binding); ssh_from, ssh_to:
# ssh_login's (from the pod to the guest's 10.0.2.2 in masquerade, from the node
# to the pod IP in bridge binding, the guest's own address, and passt, port 22
# forwarded); process: a process of the pod asking .254, refused at once or
# answered (passt's own path: refusals); fe80: the guest reaches
# [fe80::a9fe:a9fe] from its link-local (passt carries none: v6ll_check);
# how: where the guest's address comes from (guest_addr_check).
declare -A VM_BINDING=()
VM_BINDING_ROWS=()
vm_table VM_BINDING launcher guestnet qemu ifs plumbing address kill ssh_from ssh_to process fe80 how <<'EOF'
# binding   | launcher            | guestnet    | qemu  | ifs                     | plumbing  | address         | kill | ssh_from | ssh_to      | process  | fe80 | how
masquerade  | launcher_masquerade | dhcp        | tap   | default:masquerade:tap0 | 2 1 1 1 4 | 10.0.2.2/24     | no   | pod      | 10.0.2.2    | refused  | yes  | KubeVirt's masquerade DHCP
istio       | launcher_istio      | dhcp        | tap   | default:masquerade:tap0 | 2 1 1 1 4 | 10.0.2.2/24     | no   | pod      | 10.0.2.2    | refused  | yes  | KubeVirt's masquerade DHCP
linklocal   | launcher_masquerade | arp_ignore  | tap   | default:masquerade:tap0 | 2 1 1 1 4 | 10.0.2.2/24     | no   | pod      | 10.0.2.2    | refused  | yes  | KubeVirt's masquerade DHCP
masquerade6 | launcher_masquerade | own         | tap   | default:masquerade:tap0 | 2 1 1 1 4 | fd10:0:2::2/120 | no   | pod      | fd10:0:2::2 | refused  | yes  | its own IPv6 configuration (the kernel command line's network-config), no IPv4
bridge      | launcher_bridge     | bridge_dhcp | tap   | default:bridge:tap0     | 2 1 1 1 4 | {POD_IP}/32     | yes  | node     | {POD_IP}    | refused  | yes  | KubeVirt's bridge DHCP: the pod IP /32, routes by option 121
passt       | launcher_passt      | passt       | passt | default:passt           | 2 1 1 1 3 | {POD_IP}/       | yes  | node     | {POD_IP}    | answered | no   | passt's DHCP: the pod's address
EOF

# binding_of <binding> <column>: a cell of the binding's row ({POD_IP} the
# pod's address now); empty for a binding with no row
binding_of() {
	local v=${VM_BINDING[$1.$2]:-}
	printf '%s' "${v//\{POD_IP\}/${POD_IP:-}}"
}

# guestnet_<kind> <dir>: the pod's side of the guest's address, per binding
# (binding_of's guestnet): KubeVirt's DHCP in masquerade (dnsmasq on k6t-eth0)
guestnet_dhcp() {
	vm_dhcp_start "$NS" k6t-eth0 "$work/$1/dnsmasq.log" || return 1
	dnsmasq_pidfiles+=("$VM_DNSMASQ_PIDFILE")
}
# ... no DHCP, and only the sidecar's ARP responder answers for .254 (linklocal)
guestnet_arp_ignore() { ip netns exec "$NS" sysctl -qw net.ipv4.conf.all.arp_ignore=8; }
# ... nothing: the guest's IPv6 is its own configuration (masquerade6)
guestnet_own() { :; }
# ... KubeVirt's DHCP for bridge binding (bridge_dhcp_start)
guestnet_bridge_dhcp() {
	bridge_dhcp_start "$work/$1/dnsmasq.log" || return 1
	dnsmasq_pidfiles+=("$VM_DNSMASQ_PIDFILE")
}
# ... passt, started in the pod (passt_start)
guestnet_passt() { passt_start "$work/$1"; }

# --- 2. pod: the launcher as KubeVirt builds it, DHCP, the sidecar as injected -----------
# pod_up <name> <binding> [user-data]: the launcher pod for <binding> (masquerade,
# linklocal: masquerade's pod with a guest that has only a link-local address,
# istio: masquerade with Istio's rules and Envoy, bridge: bridge binding on the pod
# network, passt) built by tests/lib/netns.sh, a Calico node behind it whose side is
# captured from before the sidecar's first start, the guest's DHCP as the binding
# gives it, and the sidecar with the env and files the webhook injects (its
# IMDS_INTERFACES from the VMI annotation the webhook writes).  Sets NS (the pod),
# NS_POD, NS_NODE, SC_ROOT, SC_LOG, SC_ENV, POD_BINDING.
pod_up() {
	local name=$1 binding=$2 ifs
	NS="$TAG-$name"
	NS_POD=$NS NS_NODE=$NS-node POD_BINDING=$binding
	SC_ROOT="$work/$name/root"
	SC_LOG="$work/$name/imds.log"
	SC_ENV="$work/$name/sidecar.env"
	mkdir -p "$work/$name"
	local netcfg_arg=(--del-annotation imds.kubevirt.io/network-config)
	[[ -n ${POD_NETCFG:-} ]] && netcfg_arg=(--set-annotation "imds.kubevirt.io/network-config=@$POD_NETCFG")
	ns_new "$NS_NODE" && ns_new "$NS_POD" && node_link 1500 || return 1
	# the tap's queues as qemu opens it (tests/lib/vm.sh): single-queue,
	# KubeVirt's default; VM_TAP_QUEUES=N > 1 a multi-queue tap and qemu's
	# queues=N (networkInterfaceMultiqueue with N vCPUs)
	local mq=0
	[[ ${VM_TAP_QUEUES:-1} -gt 1 ]] && mq=1
	local launcher
	launcher=$(binding_of "$binding" launcher)
	if [[ -z $launcher ]]; then
		echo "pod_up: unknown binding $binding" >&2
		return 1
	fi
	if [[ $(binding_of "$binding" qemu) == tap ]]; then
		TAP_MQ=$mq "$launcher" || return 1
	else
		"$launcher" || return 1
	fi
	node_capture_start cali0
	"guestnet_$(binding_of "$binding" guestnet)" "$name" || return 1
	ifs=$(binding_of "$binding" ifs)
	# veth pair, address, rule, route; tables ip, ip6 and bridge, netdev with a tap
	PLUMB_WANT=$(binding_of "$binding" plumbing)
	SC_UD=${3:-$USER_DATA}
	local agent_arg=()
	[[ $IMDS_NET_MODE_TEST == agent ]] && agent_arg=(--cli-arg=--agent)
	"$SIDECAR_ENV" pod --review "$POD_REVIEW" --admission-cli "$ADMISSION_CLI" "${agent_arg[@]}" \
		--root "$SC_ROOT" --set-annotation "imds.kubevirt.io/user-data=@$SC_UD" \
		--set-annotation imds.kubevirt.io/ssh-keys-secret=vm-ssh --secret "vm-ssh=$work/secret-vm-ssh" \
		--set-annotation "imds.kubevirt.io/meta-data=$META_DATA" \
		--set-annotation "imds.kubevirt.io/interfaces=$ifs" \
		--set-annotation imds.kubevirt.io/eviction-strategy=LiveMigrate \
		"${netcfg_arg[@]}" "${POD_EXTRA[@]}" >"$SC_ENV" || return 1
	grep -q "IMDS_INTERFACES=$ifs" "$SC_ENV" || { echo "the webhook gave no IMDS_INTERFACES=$ifs" >&2; return 1; }
	: >"$SC_LOG"
	timestamp "$SC_LOG" "$SC_LOG.ts"
	[[ $IMDS_NET_MODE_TEST == agent ]] && { pod_agent_prepare "$name" || return 1; }
	sidecar_start
	if [[ $IMDS_NET_MODE_TEST == agent ]]; then
		pod_agent_serving || return 1
	else
		sc_as_cluster
	fi
	sidecar_wait_serving 1 10 && return 0
	echo "imds-server run did not report 'net: serving':" >&2
	cat "$SC_LOG" >&2
	return 1
}

# --- the sidecar as the cluster runs it (the suite's "# imds-net-mode: agent") -------------
# The webhook's --network-mode agent pod (sidecar_env.py --cli-arg=--agent:
# IMDS_NET_MODE=agent): the sidecar as UID 107 with no capability at all, in
# the pod's cgroup and its imds-node folder (tests/lib/podfolder.sh's
# sidecar_exec), and one imds-node for the suite, in the node's namespace,
# over a kubelet-style pods folder, building the pod's network half (veth-imds,
# steering, the guard, ARP/NDP, its restores) from the node.  IMDS_TEST_NET_MODE=pod
# runs the suite with the in-pod sidecar as root instead (by hand only).
AGENT_LOG=
# pod_agent_prepare <name>: the pod's UID (from its netns: one per launcher pod,
# the migration target's its own), its files as the kubelet gives them to the
# pod's UID 107 (readable; the state folder an emptyDir, 0777), the sidecar's
# env as NUL-separated VAR=value (SC_ENVS); IMDS_NET_MODE=agent from the webhook.
pod_agent_prepare() {
	local st
	if ! grep -q "^export IMDS_NET_MODE=agent$" "$SC_ENV"; then
		echo "the webhook (--network-mode agent) gave no IMDS_NET_MODE=agent: $(cat "$SC_ENV")" >&2
		return 1
	fi
	SC_UID=$(imds_pod_uid)
	chmod o+x "$work" "$work/$1"
	chmod -R a+rX "$SC_ROOT"
	st=$(sed -n "s/^export IMDS_STATE_DIR=//p" "$SC_ENV")
	[[ -n $st ]] && chmod 0777 "$SC_ROOT${st#"$SC_ROOT"}"
	# shellcheck disable=SC2016 # the inner shell's
	mapfile -d '' -t SC_ENVS < <(bash -c '. "$1" && sed -n "s/^export \([A-Za-z_0-9]*\)=.*/\1/p" "$1" |
		while read -r k; do printf "%s=%s\0" "$k" "${!k}"; done' sh "$SC_ENV")
	((${#SC_ENVS[@]} > 0)) || { echo "no env read from $SC_ENV" >&2; return 1; }
}

# sidecar_probe <uid> <log>: `imds-server probe` as the kubelet execs the
# startupProbe in the sidecar's container (its UID, no capability, its
# folder, IMDS_AGENT_SOCKET as sidecar_exec gives it); its status.
sidecar_probe() {
	local pid=$SIDECAR_PID st=0
	: >"$2"
	sidecar_exec "$1" "$NS" "$2" -i PATH="$PATH" -- "$IMDS_SERVER" probe || return 1
	wait "$SIDECAR_PID" || st=$?
	unset 'PODFOLDER_PIDS[-1]' # waited for: no pid of its to kill at exit
	SIDECAR_PID=$pid
	return "$st"
}

# pod_agent_serving: the suite's imds-node started on the first pod (whose
# probe must fail before it, naming the DaemonSet: what holds compute on a
# node without the agent); then the startupProbe polled until it passes (the
# guard in place), the agent's "pod <UID>: serving" line, and the sidecar
# running as the cluster runs it.  Sets SC_AS (for the TAP lines).
pod_agent_serving() {
	local t0=$EPOCHREALTIME i no_agent="" ms
	if [[ -z $AGENT_PID ]]; then
		if sidecar_probe "$SC_UID" "$work/probe.log"; then
			echo "the probe passed with no imds-node on the node: $(cat "$work/probe.log")" >&2
			return 1
		fi
		if ! grep -q 'imds-node DaemonSet' "$work/probe.log"; then
			echo "with no imds-node the probe does not name the DaemonSet: $(cat "$work/probe.log")" >&2
			return 1
		fi
		no_agent="; with no agent yet the probe failed: $(tail -n 1 "$work/probe.log" | cut -c1-60)..."
		AGENT_LOG=$work/agent.log
		agent_start "$AGENT_LOG" || return 1
	fi
	for ((i = 0; i < 300; i++)); do
		sidecar_probe "$SC_UID" "$work/probe.log" && break
		sleep 0.05
	done
	if ((i == 300)); then
		echo "the startupProbe (imds-server probe) did not pass within 15 s: $(tail -n 2 "$work/probe.log")" >&2
		tail -n 20 "$AGENT_LOG" >&2
		return 1
	fi
	ms=$(awk -v a="${t0/,/.}" -v b="${EPOCHREALTIME/,/.}" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
	if ! wait_for_line "$AGENT_LOG" "imds-node info: pod $SC_UID: serving " 10; then
		echo "imds-node did not say 'pod $SC_UID: serving':" >&2
		tail -n 20 "$AGENT_LOG" >&2
		return 1
	fi
	sc_as_cluster || { echo "$SC_AS" >&2; return 1; }
	SC_AS="$SC_AS; startupProbe passed ${ms} ms after the sidecar's start$no_agent"
}

# sc_as_cluster: the sidecar (SC_PID) as UID 107 with no capability at all
# (Uid, CapEff CapPrm CapBnd in /proc) in agent mode; SC_AS says so, or what
# differs (then 1).  In pod mode SC_AS says that.
sc_as_cluster() {
	local u caps
	if [[ $IMDS_NET_MODE_TEST != agent ]]; then
		SC_AS="pod mode: the sidecar as root with NET_ADMIN, its own plumbing"
		return 0
	fi
	u=$(awk '/^Uid/ {print $2, $3, $4, $5}' "/proc/$SC_PID/status" 2>/dev/null)
	caps=$(caps_of "$SC_PID" 2>/dev/null)
	SC_AS="agent mode: the sidecar Uid $u, CapEff CapPrm CapBnd $caps, imds-node building the pod's network"
	[[ $u == "107 107 107 107" && $caps == "0000000000000000 0000000000000000 0000000000000000" ]]
}

# bridge_dhcp_start LOG: KubeVirt's DHCP for bridge binding (dhcp/bridge.go,
# discoverbridge.go:37-85), served on k6t-eth0 from its 169.254.75.10: the pod IP
# /32, router the first route's gateway (169.254.1.1), option 121 with every route
# of the pod's eth0 but the connected one, the default included, the pod's MTU and
# the VM's name.  dnsmasq's shared-network lets it hand out an address the
# interface is not on, as KubeVirt's server does.
bridge_dhcp_start() {
	local logf
	logf="$(realpath -m "$1")"
	VM_DNSMASQ_PIDFILE="$logf.pid"
	: >"$logf"
	ip netns exec "$NS_POD" dnsmasq --conf-file=/dev/null --port=0 \
		--interface=k6t-eth0 --bind-interfaces --except-interface=lo \
		--dhcp-range="$POD_IP,static,255.255.255.255,infinite" \
		--dhcp-host="$GUEST_MAC,$POD_IP,$VM_NAME" --shared-network="k6t-eth0,$POD_IP" \
		--dhcp-option=option:router,"$POD_GW" \
		--dhcp-option=121,"$POD_GW/32,0.0.0.0,0.0.0.0/0,$POD_GW" \
		--dhcp-option=option:mtu,1500 \
		--dhcp-leasefile=/dev/null --leasefile-ro --dhcp-authoritative --no-ping \
		--log-dhcp --log-facility="$logf" \
		--user=root --group=root --pid-file="$VM_DNSMASQ_PIDFILE" ||
		{ echo "dnsmasq (bridge binding DHCP) failed" >&2; return 1; }
}

# passt_start DIR: passt in the pod as libvirt starts it for KubeVirt's passt
# binding (as UID 107, the pod's user), for a VMI with no `ports`: every port
# forwarded, `--tcp-ports all --udp-ports all` (tests/lib/netns.sh pasta_start
# cites KubeVirt and libvirt; where the descriptor limit cannot be raised,
# PASST_ALL's ports stand in), port 22 among them.  With PASST_BIN (Debian
# 13's passt, hack/build-passt-qemu.sh; vm_boot.sh need_vhost sets it) as
# libvirt runs it for KubeVirt v1.9: `--vhost-user` (qemu_passt.c:210-211 at
# a8262cb3) and a repair socket beside passt's, `<socket>.repair`, the name
# virt-handler's passt-repair looks for on the source (`*.socket.repair`,
# findRepairSocketInDir in pkg/network/passt/repair.go) and waits for in the
# folder on the target; --debug for the migration's lines the checks read
# ("Sending %u flows", flow.c:1052 at 587980c).  Without it Debian 12's
# passt, which has neither: qemu's stream netdev.  Sets PASST_SOCK, PASST_DIR.
passt_start() {
	mkdir -p "$1/passt"
	chown 107:107 "$1/passt"
	# passt binds its socket as UID 107, after dropping root: the path must be
	# traversable (mktemp's folder is 0700; and passt says "bound" even so)
	chmod o+x "$work"
	chmod 755 "$1"
	PASST_DIR="$1/passt"
	local fwd=(--tcp-ports all --udp-ports all) mode=()
	[[ $PASST_ALL == "$PASST_ALL_FULL" ]] || fwd=(--tcp-ports "$PASST_ALL" --udp-ports "$PASST_ALL")
	if [[ -n ${PASST_BIN:-} ]]; then
		PASST_SOCK="$PASST_DIR/passt.socket"
		mode=(--vhost-user --repair-path "$PASST_SOCK.repair" --debug)
	else
		PASST_SOCK="$PASST_DIR/passt.sock"
	fi
	# Debian 12's passt as root with --runas; Debian 13's binds its sockets
	# before it drops root but without CAP_DAC_OVERRIDE, so not in a folder
	# of UID 107's: as UID 107 from the start, as libvirt in virt-launcher
	# (UID 107) starts it (the pod's ip_unprivileged_port_start=0 lets it
	# bind every port).
	local as=(--runas 107:107) user=()
	[[ -n ${PASST_BIN:-} ]] && as=() user=(setpriv --reuid=107 --regid=107 --clear-groups)
	ip netns exec "$NS_POD" prlimit --nofile="$PASST_NOFILE:$PASST_NOFILE" "${user[@]}" \
		"${PASST_BIN:-passt}" "${as[@]}" -f "${mode[@]}" "${fwd[@]}" -s "$PASST_SOCK" >"$1/passt.log" 2>&1 &
	BG_PIDS+=($!)
	local i
	for ((i = 0; i < 200; i++)); do [[ -S $PASST_SOCK ]] && return 0; sleep 0.02; done
	echo "passt did not start: $(cat "$1/passt.log")" >&2
	return 1
}

# sidecar_start: `imds-server run` in the pod with the env and files of the
# injected container (again after a crash: kubelet restarts a native sidecar
# with the same env, mounts and network namespace). Sets SC_PID.
# In agent mode as the webhook injects it (pod_agent_prepare, podfolder.sh's
# sidecar_exec: UID 107, no capability, the pod's cgroup and imds-node folder),
# with the env of the container only (and the sanitizers' options).
sidecar_start() {
	if [[ $IMDS_NET_MODE_TEST == agent ]]; then
		local san=() v
		for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do [[ -n ${!v:-} ]] && san+=("$v=${!v}"); done
		sidecar_exec "$SC_UID" "$NS" "$SC_LOG" -i PATH="$PATH" "${san[@]}" "${SC_ENVS[@]}" -- "$IMDS_SERVER" run
		SC_PID=$SIDECAR_PID
	else
		# shellcheck disable=SC1090 # generated
		(set -a && . "$SC_ENV" && exec ip netns exec "$NS" "$IMDS_SERVER" run) >>"$SC_LOG" 2>&1 &
		SC_PID=$!
	fi
	bg_pids+=("$SC_PID")
}

# sidecar_wait_serving <n> <timeout-s>: until the log says 'net: serving' n
# times (polled every 10 ms); T_SERVING is the host time it was seen.
sidecar_wait_serving() {
	local n=$1 deadline
	deadline=$(awk -v t="${EPOCHREALTIME/,/.}" -v d="$2" 'BEGIN { printf "%d", t + d }')
	while (($(grep -ac 'net: serving' "$SC_LOG") < n)); do
		((${EPOCHREALTIME%[.,]*} >= deadline)) && return 1
		sleep 0.01
	done
	T_SERVING=$EPOCHREALTIME
}

# wait_log <file> <regex> <timeout-s>: until a line of <file> matches (10 ms polls)
wait_log() {
	local deadline=$((SECONDS + $3))
	until grep -aqE -- "$2" "$1" 2>/dev/null; do
		((SECONDS >= deadline)) && return 1
		sleep 0.01
	done
}

# crash_restart <label> <when>: SIGKILL the sidecar (no cleanup of any kind
# runs), RESTART_GAP s later start it again as kubelet restarts a native
# sidecar; checks it serves within 1 s of its start and that the plumbing it
# finds is adopted, not duplicated. Sets T_EXEC (host time of the restart).
RESTART_GAP=${VM_RESTART_GAP:-0.5}
crash_restart() {
	local l=$1 when=$2 n ms plumb_before
	plumb_before=$(count_plumbing)
	n=$(grep -ac 'net: serving' "$SC_LOG")
	kill -KILL "$SC_PID" 2>/dev/null
	wait "$SC_PID" 2>/dev/null
	echo "# $l: SIGKILL $when; restart ${RESTART_GAP}s later"
	sleep "$RESTART_GAP"
	T_EXEC=$EPOCHREALTIME
	sidecar_start
	if sidecar_wait_serving $((n + 1)) 5; then
		ms=$(awk -v a="${T_EXEC/,/.}" -v b="${T_SERVING/,/.}" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
		if ! sc_as_cluster; then
			not_ok "$l: restarted sidecar ($when) as the cluster runs it" "$SC_AS"
		elif ((ms < 1000)); then
			ok "$l: restarted sidecar ($when) serving ${ms} ms after its start (${SC_AS%%, imds-node*})"
		else
			not_ok "$l: restarted sidecar ($when) serving within 1 s of its start" "${ms} ms" "$(tail -n 20 "$SC_LOG")"
		fi
	else
		not_ok "$l: restarted sidecar ($when) reports 'net: serving'" "$(tail -n 20 "$SC_LOG")"
	fi
	expect_eq "$l: plumbing after the restart ($when) adopted, not duplicated (links addr rule route)" \
		"$PLUMB_WANT (before: $plumb_before)" "$(count_plumbing) (before: $plumb_before)"
}

# first_served_after <t> <regex>: host time of the first sidecar log line
# matching <regex> that appeared after host time <t>
first_served_after() {
	awk -v t="${1/,/.}" -v re="$2" '$1 > t && $0 ~ re { print $1; exit }' "$SC_LOG.ts"
}

# reference <path>: what the sidecar serves for <path> (Metadata: true), from a
# `serve` instance with the same env on the pod's loopback
# Not 127.0.0.1: KubeVirt's masquerade output chain sends every pod-local
# connection to 127.0.0.1 to the guest (dnat to 10.0.2.2, all ports when the
# VM declares none: masquerade.go:262, tests/lib/netns.sh launcher_masquerade).
REF_ADDR=127.0.0.2 REF_PORT=8099
reference() {
	# shellcheck disable=SC1090 # generated
	(set -a && . "$SC_ENV" && ip netns exec "$NS" curl -s -m 5 -H 'Metadata: true' "http://$REF_ADDR:$REF_PORT$1")
}
reference_start() {
	# shellcheck disable=SC1090 # generated
	(set -a && . "$SC_ENV" && exec ip netns exec "$NS" "$IMDS_SERVER" serve --listen "$REF_ADDR:$REF_PORT") \
		>"$work/ref.log" 2>&1 &
	REF_PID=$!
	bg_pids+=("$REF_PID")
	local i
	for ((i = 0; i < 50; i++)); do
		ip netns exec "$NS" curl -s -m 1 -o /dev/null "http://$REF_ADDR:$REF_PORT/healthz" && return 0
		sleep 0.1
	done
	return 1
}
reference_stop() { kill "$REF_PID" 2>/dev/null; wait "$REF_PID" 2>/dev/null; }

# BOOT_EXTRA: qemu arguments for every boot of a scenario (KubeVirt's cidata
# disk, scenario_binding's DISK=1); a boot again after an oops keeps them.
BOOT_EXTRA=()
boot_guest() { # <name> <console> [qemu args]
	local name=$1 con=$2
	shift 2
	timestamp "$con" "$con.ts"
	# compute (qemu) starts only once the sidecar's startupProbe passes: the
	# guard in place (pod_up waited for it; the probe again, as the kubelet
	# holds the main containers on it)
	if [[ $IMDS_NET_MODE_TEST == agent ]] && ! sidecar_probe "$SC_UID" "$work/probe.log"; then
		not_ok "$name: qemu held: the sidecar's startupProbe fails" "$(cat "$work/probe.log")"
		return 1
	fi
	# qdir: bookworm-backports' qemu 10 (hack/build-passt-qemu.sh's, unpacked)
	# for a guest that live-migrates (MIG_QEMU_DIR, vm_boot.sh need_mig_qemu:
	# qemu 7.2's TCG loses guest writes made during a migration,
	# tests/lib/vm_migrate.sh says what was measured) and for passt's
	# vhost-user (PASST_QEMU_DIR: qemu 7.2 cannot carry passt's state)
	local netdev="" nic="" qemu="" qargs=() qdir=${MIG_QEMU_DIR:-}
	if [[ $(binding_of "$POD_BINDING" qemu) == passt && -n ${PASST_BIN:-} ]]; then
		# libvirt's vhost-user interface for passt: the guest's memory shared
		# with the back end (memfd, share=on: a vhost-user back end maps it),
		# and no option ROM (iPXE's DHCP made this passt assert in
		# virtqueue_map_desc, virtio.c:403 at 587980c; the guest boots from
		# its disk, not the network).
		netdev="vhost-user,id=net0,chardev=passt0" nic=",romfile=" qdir=$PASST_QEMU_DIR
		# shellcheck disable=SC2054 # qemu options, comma-separated
		qargs=(-chardev "socket,id=passt0,path=$PASST_SOCK"
			-object "memory-backend-memfd,id=mem0,size=${VM_MEM:-512}M,share=on" -numa node,memdev=mem0)
	elif [[ $(binding_of "$POD_BINDING" qemu) == passt ]]; then
		netdev="stream,id=net0,server=off,addr.type=unix,addr.path=$PASST_SOCK"
	fi
	if [[ -n $qdir ]]; then
		qemu=$qdir/bin/qemu-system-x86_64
		qargs+=(-L "$qdir/share/qemu")
	fi
	if ! VM_QEMU=${qemu:-${VM_QEMU:-}} VM_NETDEV=$netdev VM_NIC_OPTS=$nic VM_MAC=$GUEST_MAC vm_boot "$NS" tap0 "$GUEST_IMG" "${VM_SERIAL:-$SERIAL}" "$con" "${qargs[@]}" "${BOOT_EXTRA[@]}" "$@" 2>"$work/boot.err"; then
		not_ok "$name: qemu started" "$(cat "$work/boot.err")"
		return 1
	fi
	qemu_pidfiles+=("$VM_PIDFILE")
	BOOT_T0=$VM_BOOT_START
}

# first_request <label> <console> <overlay>: waits for the guest's first
# request to the sidecar.  A guest kernel oops before it is the emulator's, not
# the sidecar's (seen once in about forty boots: "Oops: int3" in
# secure_tcp_seq_and_ts_off on cloud-init's first connect to 169.254.169.254,
# Debian 13's kernel under qemu 7.2's multi-threaded TCG, 2 vCPUs: the int3 the
# kernel plants while it patches a static key, met by the other vCPU); the
# guest is booted once more on a new overlay, saying so, so that CI does not
# turn red by chance.  The same for an RCU stall the guest's kernel reports
# before its first request (seen once here, ASan stage, Debian 12 link-local,
# an idle host: "rcu_preempt kthread timer wakeup didn't happen ... Possible
# timer handling issue on cpu=0" — a vCPU's timer the emulator never fired;
# the guest hangs, the sidecar never hears from it).  A second oops or stall,
# or no request, fails.  Debian 12's kernel (6.1) prints a BUG() as "kernel
# BUG at ..." then "invalid opcode: 0000", with no "Oops:" (seen once after
# a migration, the target's guest under a loaded host: list corruption in
# virtio_net's receive, "Fatal exception in interrupt").
GUEST_KERNEL_FAULT='Oops: |kernel BUG at |Kernel panic|rcu: INFO: rcu_(preempt|sched) detected stalls'
first_request() {
	local l=$1 con=$2 overlay=$3 try deadline
	for try in 1 2; do
		deadline=$((SECONDS + BOOT_TIMEOUT))
		until grep -aqE ' (GET|HEAD) /(v1/|openstack)' "$SC_LOG" 2>/dev/null; do
			if grep -aqE "$GUEST_KERNEL_FAULT" "$con" 2>/dev/null; then
				((try == 2)) && break 2
				echo "# $l: the guest's kernel oopsed or stalled before its first request (TCG; not the sidecar's doing): booted again on a new overlay"
				grep -aE -A3 "$GUEST_KERNEL_FAULT" "$con" | head -n 8 | cmt
				vm_stop "$VM_PIDFILE" 2
				mv "$con" "$con.oops"
				mv "$con.ts" "$con.oops.ts" 2>/dev/null
				rm -f "$overlay"
				VM_OVERLAY=$overlay boot_guest "$l" "$con" || return 1
				continue 2
			fi
			if ((SECONDS >= deadline)); then
				not_ok "$l: guest asked for meta-data" "$(console_tail "$con")" "$(tail -n 20 "$SC_LOG")"
				return 1
			fi
			sleep 0.01 # as wait_log: the bridge scenarios SIGKILL the sidecar right after
		done
		return 0
	done
	not_ok "$l: guest asked for meta-data (its kernel oopsed or stalled on both boots)" "$(console_tail "$con")"
	return 1
}
