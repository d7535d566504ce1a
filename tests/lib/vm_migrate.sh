# shellcheck shell=bash disable=SC2154,SC2034 # the suite's globals: vm_boot.sh sets and reads them
# vm_migrate.sh — the VM suite's live migration of a booted guest to a second
# launcher pod of its binding (migrate_checks) and what it must show.
# Sourced by tests/integration/vm_boot.sh after tests/lib/tap.sh, vm.sh and
# netns.sh; its functions use the suite's globals (work, SC_*, NS*, POD_*,
# VM_*, GUEST_*, SUMMARY; the suite's header says what each scenario does).

# --- 7. live migration ------------------------------------------------------------------
# migrate_checks <label> <dir> [user-data]: the booted guest moves to a second
# launcher pod as KubeVirt live-migrates it (issue 20).  The target pod is
# built by tests/lib/netns.sh for the same binding, behind another node (a
# new pod IP), with its own DHCP and its own sidecar, whose env and files come
# from the webhook's patch of the migration target pod (KubeVirt's marks on
# it: MIG_REVIEW).  A second qemu is started there with the source's own
# command line and -incoming, as libvirt starts the target domain; the
# source is migrated to it with QMP `migrate` (max-bandwidth 1 TiB/s: KubeVirt's
# default bandwidthPerMigration is 0Mi, pkg/virt-config/virt-config.go:40 at
# v1.8.4, so it sets no bandwidth, live-migration-source.go:791-792, and
# libvirt keeps its own default, QEMU_DOMAIN_MIG_BANDWIDTH_MAX =
# INT64_MAX / 1 MiB MiB/s, src/qemu/qemu_domain.h; qemu 7.2 alone would use
# 128 MiB/s, its query-migrate-parameters says), then stopped as
# KubeVirt stops it: qemu gone, then SIGTERM to the source's sidecar.  The
# guest (tests/lib/guest_migrate.py, started on its console before the
# migration) asks every 20 ms throughout and reports what it saw; the
# sidecars' access logs give the same gap on the host's clock.
# KubeVirt migrates masquerade and passtBinding on the pod network, bridge
# binding only with kubevirt.io/allow-pod-bridge-network-live-migration,
# and binding plugins that declare migration (the passt plugin does):
# pkg/network/vmispec/interface.go:71-87 at v1.8.4.  Leaves NS, SC_* and
# VM_* naming the target.  Adds a line to SUMMARY.
# The guests that migrate boot on bookworm-backports' qemu 10.0.2 (vm_boot.sh
# need_mig_qemu), the target on the same: Debian 12's qemu 7.2 (7.2+dfsg-7+
# deb12u18+b3) under TCG loses guest writes made while it migrates.  The
# Debian 12 guest (kernel 6.1.176) died after the switch-over in three of
# three migrations of each of two make test runs (2026-11-28: timer lists
# with LIST_POISON2 in them, a jump to 0x101, a soft lockup in virtio_net's
# start_xmit); hack/tcg-migration-check.sh (the guest migrated back and forth
# on one machine) saw it die at the 2nd migration on qemu 7.2 and live
# through 20 of 20 on qemu 10.0.2, the two run side by side on 2 cores; its
# first draft, one at a time: 7.2 died at the 5th (PVH entry) and the 1st
# (bzImage), a Debian 13 guest went silent at the 3rd; 10.0.2 30 of 30.
# Lifecycle events (issue 31, docs/sidecar.md): the pods carry the VMI's
# evictionStrategy LiveMigrate as the webhook records it (pod_up); the migration
# is an eviction's, so the source pod's eviction-in-progress file flips once the
# guest's long polls wait, before the target pod and the QMP migrate
# (virt-controller annotates the source pod in the reconcile that creates the
# migration); the target pod's migration-target-ready file is written when QMP
# says completed (KubeVirt annotates it once the domain runs there).
# mig_review_write: MIG_REVIEW, the webhook review of the migration target pod
# (POD_REVIEW with the marks KubeVirt puts on it), under $work
mig_review_write() {
	MIG_REVIEW=$work/pod-migration-target.json
	"$PY" - "$POD_REVIEW" "$MIG_REVIEW" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
md = r["request"]["object"]["metadata"]
# createTargetPod, pkg/virt-controller/watch/migration/migration.go:964-965
# at v1.8.4: the label and annotation naming the migration
md["labels"]["kubevirt.io/migrationJobUID"] = "5c8f0e3a-2d1b-4f6e-9a7c-0b1d2e3f4a5b"
md["annotations"]["kubevirt.io/migrationJobName"] = "kubevirt-evacuation-x7k2p"
# the API server names it from generateName (virt-launcher-testvm-) before
# the downward API sees it; the source is ...-x7k2p (sidecar_env.py)
md["name"] = "virt-launcher-testvm-m4q8d"
r["request"]["uid"] = "0b7e4c1d-9f2a-4e58-8c36-5d1a7f9e2b40"
json.dump(r, open(sys.argv[2], "w"))
PYEOF
}
MIG_TIMEOUT=${VM_MIGRATE_TIMEOUT:-300}

# jfield <json> <key>...: a member of a JSON object (nested keys), or empty
jfield() {
	"$PY" -c 'import json,sys
v = json.loads(sys.argv[1])
for k in sys.argv[2:]:
    v = v.get(k, {}) if isinstance(v, dict) else {}
print("" if v == {} else v)' "$@" 2>/dev/null
}

# mig_qemu_target <source pidfile> <netns> <console> <run dir> <incoming uri>: the
# source qemu's own command line (read from /proc), its sockets, pid file and
# console under <run dir>, passt's socket the target pod's, started in <netns>
# with -incoming.
mig_qemu_target() {
	local spf=$1 ns=$2 con=$3 run=$4 uri=$5 spid a srun args=() new=()
	spid=$(cat "$spf") && srun=$(dirname "$spf") || return 1
	mapfile -d '' -t args <"/proc/$spid/cmdline" || return 1
	for a in "${args[@]}"; do
		a=${a//"$srun"/"$run"}
		a=${a//"$S_CON"/"$con"}
		[[ -n $S_PASST ]] && a=${a//"$S_PASST"/"$PASST_SOCK"}
		new+=("$a")
	done
	ip netns exec "$ns" "${new[@]}" -incoming "$uri"
}

# mig_line <console> <tag>: the guest's IMDS-MIG-<tag> line, after the tag
mig_line() { line "$1" "IMDS-MIG-$2 " | cut -d' ' -f2-; }
# mig_kv <text> <key>: the value of key=value in a line
mig_kv() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p" | head -n 1; }
# podinfo_set <env file> <name> <value>: a file of the pod's IMDS_LIFECYCLE_DIR
# (the podinfo downward-API volume) replaced in one rename, as kubelet's swap
# is one; sidecar_env.py writes that volume's files plain (lifecycle.sh runs
# kubelet's ..data layout).  Prints the host's time just before the rename.
podinfo_set() {
	local dir
	dir=$(sed -n 's/^export IMDS_LIFECYCLE_DIR=//p' "$1")
	[[ -d $dir ]] || { echo "no IMDS_LIFECYCLE_DIR folder in $1" >&2; return 1; }
	# The time is taken before the rename, the first moment the sidecar can
	# see the file: stamped after it, a sidecar that reacts within tens of
	# microseconds was stamped before it (CI saw "-0 ms", a failed check).
	local t=$EPOCHREALTIME
	printf '%s' "$3" >"$dir/.$2.tmp" && mv -f "$dir/.$2.tmp" "$dir/$2" && echo "$t"
}

migrate_checks() {
	local l="$1 migration" d=$2 ud=${3:-$USER_DATA}
	local s_log=$SC_LOG s_env=$SC_ENV s_root=$SC_ROOT s_pid=$SC_PID s_pidfile=$VM_PIDFILE s_qmp=$VM_QMP
	local s_ip=$POD_IP s_mac=$POD_MAC s_node=$NS_NODE t_con=$work/$2-target/console.log t_run out st i
	S_CON=$work/$d/console.log S_PASST=${PASST_SOCK:-}
	[[ $(binding_of "$POD_BINDING" qemu) == passt ]] || S_PASST=""
	local t0=$EPOCHREALTIME
	# The guest's side first, while it runs in the source: it prints READY once
	# its session, password, first answers and waiting request are in place.
	# At nice -20: what else the guest does at the switch-over (the teardown
	# of the SSH session and of the waiting request, reset by the target's
	# passt) waits for the loop, which times the gap, on its one vCPU.
	wait_mark "$l: root shell on ttyS0" "$S_CON" "root@$VM_NAME:~# " 1 60 || return 1
	for i in 1 2; do
		vm_console_send 'systemd-run --no-block --unit=imds-e2e-migrate -p Nice=-20 /usr/local/sbin/imds-e2e-migrate' >/dev/null 2>&1
		vm_wait_for "$S_CON" 'IMDS-MIG-(READY|ERROR)' 60 >/dev/null 2>&1 && break
	done
	if ! grep -aq 'IMDS-MIG-READY' "$S_CON"; then
		not_ok "$l: the guest's side started (imds-e2e-migrate)" "$(console_tail "$S_CON")"
		return 1
	fi
	# The eviction: the source pod's annotation, before the target pod exists.
	local t_flip
	if ! t_flip=$(podinfo_set "$s_env" eviction-in-progress true 2>&1); then
		not_ok "$l: the source pod's eviction-in-progress file flipped" "$t_flip"
		return 1
	fi
	# The target pod, on another node; KubeVirt creates it, and its sidecar
	# starts, before the migration begins.
	# passt-repair on the target, given the folder of passt's socket
	# (migration-target.go:976 at v1.9.0): it waits there for the repair
	# socket to be created (inotify IN_CREATE only, passt-repair.c at
	# 587980c: one made before it started is never seen), so it runs
	# before the target's passt starts.
	if [[ -n $S_PASST && -n ${PASST_REPAIR:-} ]]; then
		mkdir -p "$work/$d-target/passt"
		repair_start target "$work/$d-target/passt"
	fi
	POD_IP=10.244.2.6 POD_MAC=0a:58:0a:f4:02:06
	if ! POD_REVIEW=$MIG_REVIEW pod_up "$d-target" "$POD_BINDING" "$ud" >"$work/pod_up.out" 2>&1; then
		not_ok "$l: target launcher pod, its DHCP, its sidecar as injected" "$(cat "$work/pod_up.out")"
		POD_IP=$s_ip POD_MAC=$s_mac
		return 1
	fi
	POD_IP=$s_ip POD_MAC=$s_mac
	out=$(diff <(sed "s|$s_root|ROOT|g" "$s_env" | grep -v '^export IMDS_POD_NAME=') \
		<(sed "s|$SC_ROOT|ROOT|g" "$SC_ENV" | grep -v '^export IMDS_POD_NAME='))
	if [[ -z $out ]] && grep -q '^export IMDS_POD_NAME=virt-launcher-testvm-m4q8d$' "$SC_ENV"; then
		ok "$l: target pod (another node, pod IP 10.244.2.6) serving; its sidecar's env from the webhook's patch of the migration target pod is the source's but for IMDS_POD_NAME ($(wc -l <"$SC_ENV") vars; $SC_AS)"
	else
		not_ok "$l: the target's sidecar env is the source's but for IMDS_POD_NAME" "$out" "$(grep POD_NAME "$SC_ENV")"
	fi
	# The target qemu, waiting for the migration.
	t_run=$(mktemp -d "${TMPDIR:-/tmp}/imds-vm.XXXXXX")
	timestamp "$t_con" "$t_con.ts"
	if ! mig_qemu_target "$s_pidfile" "$NS" "$t_con" "$t_run" "unix:$t_run/mig.sock" >"$work/mig-qemu.err" 2>&1; then
		not_ok "$l: target qemu started with -incoming" "$(cat "$work/mig-qemu.err")"
		return 1
	fi
	qemu_pidfiles+=("$t_run/qemu.pid")
	# passt-repair on the source as the migration starts
	# (migration-source.go:598 at v1.9.0), given the repair socket; and an
	# SSH session from the source's node to the guest (the pod IP, passt's
	# forwarded port 22), held across the migration.
	if [[ -n $S_PASST && -n ${PASST_REPAIR:-} ]]; then
		ssh_hold_start "$s_node" "$s_ip"
		repair_start source "$S_PASST.repair"
	fi
	# The migration, as libvirt drives it over QMP.
	local t_mig=$EPOCHREALTIME
	if ! out=$(vm_qmp "$s_qmp" '{"execute": "migrate-set-parameters", "arguments": {"max-bandwidth": 1099511627776}}' \
		"{\"execute\": \"migrate\", \"arguments\": {\"uri\": \"unix:$t_run/mig.sock\"}}" 2>&1); then
		not_ok "$l: QMP migrate" "$out"
		return 1
	fi
	local deadline=$((SECONDS + MIG_TIMEOUT))
	while :; do
		out=$(vm_qmp "$s_qmp" '{"execute": "query-migrate"}' 2>&1)
		st=$(jfield "$out" status)
		[[ $st == completed || $st == failed || $st == cancelled ]] && break
		((SECONDS >= deadline)) && break
		sleep 0.2
	done
	# qemu 7.2 says "completed" (migration_completion) before it computes
	# total-time and downtime (migration_iteration_finish ->
	# migration_calculate_complete, then the run state postmigrate): read
	# them once the source is in postmigrate, or they can be 0 (seen: "total
	# 0 ms, downtime 0 ms, 187 MiB of RAM sent").  Later qemu computes first.
	local t_done=$EPOCHREALTIME total down ram
	if [[ $st == completed ]]; then
		local rs
		while :; do
			rs=$(jfield "$(vm_qmp "$s_qmp" '{"execute": "query-status"}' 2>&1)" status)
			[[ $rs == postmigrate ]] && break
			((SECONDS >= deadline)) && break
			sleep 0.05
		done
		out=$(vm_qmp "$s_qmp" '{"execute": "query-migrate"}' 2>&1)
	fi
	total=$(jfield "$out" total-time) down=$(jfield "$out" downtime) ram=$(jfield "$out" ram transferred)
	if [[ $st == completed && ${total:-0} -gt 0 ]]; then
		ok "$l: QMP migrate completed: total ${total} ms, downtime ${down} ms, $((${ram:-0} / 1048576)) MiB of RAM sent ($(fsub "$t_mig" "$t_done") s on the host's clock)"
	else
		not_ok "$l: QMP migrate completed" "status ${st:-?}: $out" "$(cat "$work/mig-qemu.err" 2>/dev/null)"
		return 1
	fi
	# The target pod's ready annotation, once the domain runs there.
	local t_ready
	t_ready=$(podinfo_set "$SC_ENV" migration-target-ready "$(date -u '+%Y-%m-%d %H:%M:%S.%N +0000 UTC')" 2>&1) ||
		not_ok "$l: the target pod's migration-target-ready file written" "$t_ready"
	# The source as KubeVirt stops it: the domain (qemu) is gone, then the
	# pod's containers end; kubelet sends its native sidecar SIGTERM.
	vm_stop "$s_pidfile" 5
	local rc=0 t_term=$EPOCHREALTIME
	kill -TERM "$s_pid" 2>/dev/null
	wait "$s_pid" 2>/dev/null || rc=$?
	if ((rc == 0)) && grep -q 'net: stopped' "$s_log"; then
		ok "$l: the source's qemu stopped, its sidecar ended on SIGTERM with status 0 in $(fsub "$t_term" "$EPOCHREALTIME") s"
	else
		not_ok "$l: the source's sidecar ends on SIGTERM with status 0" "status $rc" "$(tail -n 5 "$s_log")"
	fi
	# From now on the VM is the target's.
	VM_RUN_DIR=$t_run VM_PIDFILE=$t_run/qemu.pid VM_MONITOR=$t_run/mon.sock VM_QMP=$t_run/qmp.sock
	VM_CONSOLE_SOCK=$t_run/con.sock VM_CONSOLE_LOG=$t_con
	if ! vm_wait_for "$t_con" 'IMDS-MIG-(DONE|POLL-TIMEOUT|ERROR)' "$BOOT_TIMEOUT" "$VM_PIDFILE" 2>"$work/wait.err" ||
		! grep -aq 'IMDS-MIG-DONE' "$t_con"; then
		not_ok "$l: the guest's side finished in the target" "$(cat "$work/wait.err")" "$(console_tail "$t_con")" \
			"--- target sidecar ---" "$(tail -n 20 "$SC_LOG")"
		return 1
	fi
	if [[ -n $S_PASST && -n ${PASST_REPAIR:-} ]]; then
		repair_results "$l" "$(dirname "$S_PASST")/.."
		ssh_hold_results "$l" "$t_done" "$s_ip" 10.244.2.6
	fi
	mig_results "$l" "$s_log" "$(fsub "$t0" "$EPOCHREALTIME")" "$total" "$down"
	mig_lifecycle "$l" "$s_log" "$t_flip"
}

# repair_start <side> <path>: passt-repair as virt-handler runs it for the
# passt binding (pkg/network/passt/repair.go:114-128 at v1.9.0: the binary
# with one argument, ended after 60 s; on the source the `*.socket.repair`
# socket, on the target the folder, where it waits for the socket), as root
# (virt-handler is privileged; TCP_REPAIR needs CAP_NET_ADMIN).  Its status
# and output: $work/repair-<side>.{rc,log}.
repair_start() {
	(
		rc=0
		timeout 60 "$PASST_REPAIR" "$2" >"$work/repair-$1.log" 2>&1 || rc=$?
		echo "$rc" >"$work/repair-$1.rc"
	) &
	bg_pids+=($!)
}

# repair_results <label> <source pod dir>: both passt-repairs ended with
# status 0 and the source's passt sent its flows (TCP_REPAIR: sequences,
# windows) to the target's, which received as many.  What the target's passt
# then did with each, measured (docs/sidecar.md, "Live migration"): it must
# bind the flow's pod-side address again, and both the guest's flows are
# reset there: the SSH session's (the source pod's IP, 10.244.1.5, is not
# the target pod's) and passt's own connection to the service (its source
# address, 169.254.169.254, came from the steering's table 169254, the only
# one with its local route, and bind() consults the local table: "Failed to
# bind socket for migrated flow: Cannot assign requested address").  The waiting request therefore ends with a reset
# (curl exit 56), before its keepalive probes alone would end it (2 s idle +
# 3 x 2 s).  Each check fails once passt carries a flow through.
repair_results() {
	local l=$1 sdir=$2 side rc i out="" s_n t_n tlog=$PASST_DIR/../passt.log w
	for side in source target; do
		for ((i = 0; i < 100; i++)); do [[ -s $work/repair-$side.rc ]] && break; sleep 0.1; done
		rc=$(cat "$work/repair-$side.rc" 2>/dev/null)
		[[ $rc == 0 ]] || out+="$side: status ${rc:-none (still running 10 s after the migration)}: $(tr '\n' ' ' <"$work/repair-$side.log") "
	done
	s_n=$(grep -aoE 'Sending [0-9]+ flows' "$sdir/passt.log" | tail -n 1 | cut -d' ' -f2)
	t_n=$(grep -aoE 'Receiving [0-9]+ flows' "$tlog" | tail -n 1 | cut -d' ' -f2)
	if [[ -z $out && -n $s_n && $s_n == "$t_n" ]] && ((s_n >= 2)) && grep -aq 'Migration complete, exiting' "$sdir/passt.log"; then
		ok "$l: passt-repair ended with status 0 on the source (its repair socket) and the target (the folder); the source's passt sent $s_n flows with their TCP_REPAIR state and exited, the target's received $t_n"
	else
		not_ok "$l: passt-repair on both sides, the flows sent and received" "$out" "sent ${s_n:-?}, received ${t_n:-?} (2 at least: the waiting request, the SSH session)" \
			"source passt: $(grep -a -i 'migrat\|flows' "$sdir/passt.log" | tail -n 5)" "target passt: $(grep -a -i 'migrat\|flows' "$tlog" | tail -n 5)"
	fi
	local svc ssh
	svc=$(grep -aE 'Flow [0-9]+ \(TCP connection\): TAP \[[0-9.]+\]:[0-9]+ -> \[169\.254\.169\.254\]:80 => HOST \[169\.254\.169\.254\]' "$tlog" | head -n 1 | grep -oE '^[0-9.]+: Flow [0-9]+' | cut -d' ' -f2-)
	ssh=$(grep -aE 'Flow [0-9]+ \(TCP connection\): HOST \[[0-9.]+\]:[0-9]+ -> \[10\.244\.1\.5\]:22' "$tlog" | head -n 1 | grep -oE '^[0-9.]+: Flow [0-9]+' | cut -d' ' -f2-)
	w=$(mig_line "$VM_CONSOLE_LOG" WAIT)
	if [[ -n $svc && -n $ssh ]] && grep -aqF "$svc (TCP connection): Failed to bind socket for migrated flow: Cannot assign requested address" "$tlog" &&
		grep -aqF "$ssh (TCP connection): Failed to bind socket for migrated flow: Cannot assign requested address" "$tlog" &&
		[[ $(mig_kv "$w" exit) == 56 ]] && (($(mig_kv "$w" ended_after_first_target_answer_ms) < 8000)); then
		ok "$l: the target's passt reset both moved flows (bind: Cannot assign requested address): the guest's wait_for_change (passt's own connection from 169.254.169.254, the source address the steering's table gives, which bind() refuses) ended with a reset (curl exit 56) $(mig_kv "$w" ended_after_first_target_answer_ms) ms after the target's first answer, and the SSH session's (the source pod's IP)"
	else
		not_ok "$l: what the target's passt did with the moved flows (measured: both reset, bind EADDRNOTAVAIL; the waiting request reset within 8 s)" \
			"service flow: ${svc:-none}, SSH flow: ${ssh:-none}" "$(grep -a 'migrated flow\|TCP reset at tcp_flow_migrate' "$tlog" | head -n 4)" "guest: $w"
	fi
}

# ssh_hold_start <node netns> <pod IP>: an SSH session from the node to the
# guest through passt's forwarded port 22, the guest printing a tick every
# 0.5 s, each stamped with the host's time as it arrives (server alive
# probes every 1 s, 3 unanswered end it); its output, exit status and end
# time in $work/ssh-hold.{out,rc}.
ssh_hold_start() {
	: >"$work/ssh-hold.out"
	(
		rc=0
		# shellcheck disable=SC2016 # expanded by the guest's shell
		ip netns exec "$1" ssh -i "$SSH_KEY" -o BatchMode=yes -o StrictHostKeyChecking=no \
			-o UserKnownHostsFile=/dev/null -o ConnectTimeout=60 -o LogLevel=ERROR \
			-o ServerAliveInterval=1 -o ServerAliveCountMax=3 "debian@$2" \
			'while :; do echo tick; sleep 0.5; done' 2>&1 |
			while IFS= read -r x; do echo "$EPOCHREALTIME $x"; done >>"$work/ssh-hold.out"
		rc=${PIPESTATUS[0]}
		echo "$rc $EPOCHREALTIME" >"$work/ssh-hold.rc"
	) &
	bg_pids+=($!)
	local i
	for ((i = 0; i < 600; i++)); do grep -q ' tick$' "$work/ssh-hold.out" && return 0; sleep 0.1; done
}

# ssh_hold_results <label> <QMP completed time> <source pod IP> <target pod IP>: what the SSH
# session held across the migration saw.  The pod IP is the source pod's:
# its passt exits once its flows are sent ("Migration complete, exiting"),
# and the target pod has another IP, so the session cannot go on; it must
# end (not hang) within 10 s of the switch-over.  Then a new login on the
# target pod's IP (its passt forwards port 22 too).
ssh_hold_results() {
	local l=$1 t_done=$2 s_ip=$3 t_ip=$4 i rc t_end last n ms out
	for ((i = 0; i < 100; i++)); do [[ -s $work/ssh-hold.rc ]] && break; sleep 0.1; done
	read -r rc t_end <"$work/ssh-hold.rc" 2>/dev/null
	n=$(grep -c ' tick$' "$work/ssh-hold.out")
	last=$(grep ' tick$' "$work/ssh-hold.out" | tail -n 1 | cut -d' ' -f1)
	if [[ -n ${rc:-} && -n $t_end ]]; then
		ms=$(awk -v a="${t_done/,/.}" -v b="${t_end/,/.}" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
		if ((ms < 10000)); then
			ok "$l: an SSH session from the source's node to $s_ip:22 held across the migration ended ${ms} ms from the host seeing QMP completed (ssh status $rc: $(grep -v ' tick$' "$work/ssh-hold.out" | tail -n 1 | cut -d' ' -f2- | tr -d '\r'); $n ticks, the last $(fsub "${last:-$t_done}" "$t_done") s before QMP completed, host's clock): the source pod's IP is gone with the source"
		else
			not_ok "$l: the SSH session to the source pod's IP ends within 10 s of the switch-over" "ended ${ms} ms after (status $rc)" "$(tail -n 3 "$work/ssh-hold.out")"
		fi
	else
		not_ok "$l: the SSH session to the source pod's IP ends within 10 s of the switch-over" "still open; $n ticks, last $last" "$(tail -n 3 "$work/ssh-hold.out")"
	fi
	# shellcheck disable=SC2016 # expanded by the guest's shell
	out=$(ip netns exec "$NS_NODE" ssh -i "$SSH_KEY" -o BatchMode=yes -o StrictHostKeyChecking=no \
		-o UserKnownHostsFile=/dev/null -o ConnectTimeout=30 -o LogLevel=ERROR "debian@$t_ip" \
		'echo "user=$(id -un) addr=$(ip -4 -o addr show eth0 | tr -s " " | cut -d" " -f4)"' 2>&1)
	if [[ $out == user=debian* ]]; then
		ok "$l: SSH login from the target's node to the target pod's IP $t_ip (the guest's eth0 still says ${out#*addr=}, passt's DHCP lease from the source)"
	else
		not_ok "$l: SSH login to the target pod's IP after the migration" "$out"
	fi
}

# mig_lifecycle <label> <source log> <flip time>: the guest's notice of the
# eviction (IMDS-MIG-NOTICE, on the source) and the target's answer
# (IMDS-MIG-ARRIVED); the source sidecar's "lifecycle: migrate" line on the
# host's clock, after the flip.  Each figure must be under 1 s.  Adds them
# to the migration's SUMMARY line.
mig_lifecycle() {
	local l=$1 s_log=$2 t_flip=$3 n a h_der h_ms lm gm
	n=$(mig_line "$S_CON" NOTICE) a=$(mig_line "$VM_CONSOLE_LOG" ARRIVED)
	h_der=$(grep -a 'lifecycle: migrate by eviction' "$s_log.ts" | head -n 1 | cut -d' ' -f1)
	h_ms=$(awk -v a="$t_flip" -v b="$h_der" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
	lm=$(mig_kv "$n" life_ms) gm=$(mig_kv "$n" gce_ms)
	if [[ $(cut -d' ' -f1-4 <<<"$n") == "initial=none:NONE life=migrate gce=MIGRATE_ON_HOST_MAINTENANCE flavor=Google" &&
		$(mig_kv "$n" new_etag) == 1 && $(mig_kv "$n" served_by) == source && -n $h_der &&
		$lm =~ ^[0-9]+$ && $gm =~ ^[0-9]+$ && $h_ms =~ ^[0-9]+$ ]] && ((lm < 1000 && gm < 1000 && h_ms < 1000)); then
		ok "$l: the guest's long polls, /v1/lifecycle and GCE's maintenance-event (Metadata-Flavor: Google), answered migrate / MIGRATE_ON_HOST_MAINTENANCE by the source ${lm} / ${gm} ms after it sent its last plain request answered none (guest's clock); the sidecar derived it ${h_ms} ms after the eviction file's rename (host's clock), before the target pod and the QMP migrate"
	else
		not_ok "$l: the guest's long polls see migrate within 1 s of the eviction file's flip, from the source" \
			"${n:-no IMDS-MIG-NOTICE line}" "host: sidecar derived migrate at ${h_der:-never} (flip $t_flip: ${h_ms} ms)"
	fi
	if [[ $(cut -d' ' -f1-4 <<<"$a") == "state=arrived reason=migration uid=5c8f0e3a-2d1b-4f6e-9a7c-0b1d2e3f4a5b gce=NONE" &&
		$(mig_kv "$a" new_etag) == 1 ]]; then
		ok "$l: the target answers arrived by migration (its migrationUID) and GCE's NONE, with a new ETag; first arrived answer $(mig_kv "$a" first_arrived_after_first_target_ms) ms after the target's first answer (guest's clock; the host writes the ready file when it sees QMP completed)"
	else
		not_ok "$l: the target answers arrived / NONE with a new ETag" "${a:-no IMDS-MIG-ARRIVED line}"
	fi
	SUMMARY[-1]+="; notice: derived ${h_ms} ms after the flip (host's clock), answered ${lm:-?}/${gm:-?} ms after the last none (lifecycle/GCE, guest's clock), arrived $(mig_kv "$a" first_arrived_after_first_target_ms) ms after the target's first answer"
}

# mig_results <label> <source log> <seconds> <total ms> <downtime ms>: what
# the guest reported (IMDS-MIG-*) and the sidecars' logs said.
mig_results() {
	local l=$1 s_log=$2 secs=$3 total=$4 down=$5 con="$S_CON" t_con=$VM_CONSOLE_LOG
	local poll gap h_last h_first h_gap wait_l sess before after b a
	poll=$(mig_line "$t_con" POLL)
	gap=$(mig_kv "$poll" gap_ms)
	h_last=$(grep -a ' GET /v1/identity 200 ' "$s_log.ts" | tail -n 1 | cut -d' ' -f1)
	h_first=$(grep -a ' GET /v1/identity 200 ' "$SC_LOG.ts" | head -n 1 | cut -d' ' -f1)
	h_gap=$(awk -v a="$h_last" -v b="$h_first" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
	if [[ $gap =~ ^[0-9]+$ ]] && ((gap < 1000)); then
		ok "$l: served by the target ${gap} ms after the source's last answer, between the guest kernel's receive stamps of the two ($(mig_kv "$poll" fails) requests unanswered: $(mig_kv "$poll" kinds); the loop read them $(mig_kv "$poll" read_gap_ms) ms apart); host clock, source's last answer -> target's first: ${h_gap} ms, qemu downtime ${down} ms"
	else
		not_ok "$l: served by the target within 1 s of the source's last answer (gap_ms: the guest kernel's receive stamps; -1: an answer came unstamped)" "$poll" "host: ${h_gap} ms"
	fi
	MIG_HGAP=$h_gap
	wait_l=$(mig_line "$t_con" WAIT)
	if [[ $(mig_kv "$wait_l" exit) != -1 ]] && [[ $(mig_kv "$wait_l" http) == 200 || $(mig_kv "$wait_l" exit) != 0 ]]; then
		ok "$l: the request waiting on the source (wait_for_change; curl's keepalive time,count $(mig_kv "$wait_l" keepalive)) ended cleanly $(mig_kv "$wait_l" ended_after_first_target_answer_ms) ms after the target's first answer: curl exit $(mig_kv "$wait_l" exit), HTTP $(mig_kv "$wait_l" http), $(mig_kv "$wait_l" err)"
	else
		not_ok "$l: the waiting request ended cleanly" "$wait_l"
	fi
	sess=$(mig_line "$t_con" SESSION)
	expect_eq "$l: the source's session token is 401 on the target; a new PUT /v1/session works" \
		"old_token=401 put=200 new_token=200 len=43" "$sess"
	before=$(mig_line "$con" BEFORE) after=$(mig_line "$t_con" AFTER)
	expect_eq "$l: the guest's session in the source (PUT, then a GET with its token)" 200:200 "$(mig_kv "$before" session)"
	b=${before#* * * }
	a=${after#* * }
	if [[ -n $a && $a == "$b" ]]; then
		ok "$l: meta-data, user-data, vendor-data, OpenStack meta_data.json, EC2 instance-id unchanged (bodies and ETags), identity unchanged but podName ($(mig_kv "$before" pod) -> $(mig_kv "$after" pod))"
	else
		not_ok "$l: the data unchanged across the migration" "before: $b" "after:  $a"
	fi
	expect_eq "$l: the target pod answers (podName)" "virt-launcher-testvm-m4q8d" "$(mig_kv "$after" pod)"
	# The password: posted in the source, kept in its emptyDir, which does
	# not move; the owner reads it from the source's log (docs/sidecar.md).
	local pw_b pw_a
	pw_b=$(mig_kv "$before" password) pw_a=$(mig_kv "$after" password)
	if [[ $pw_b == 200:200:68 && $pw_a == 200:0 ]] && grep -q 'encrypted password (68 bytes' "$s_log" &&
		! grep -q 'encrypted password' "$SC_LOG"; then
		ok "$l: the password posted in the source (in its log and its state dir) is not in the target: GET answers 200 empty there (docs/sidecar.md, Live migration)"
	else
		not_ok "$l: the password stays with the source" "before: $pw_b after: $pw_a" "$(grep -a password "$s_log" "$SC_LOG")"
	fi
	expect_eq "$l: a new wait on the target with the source's ETag is held its timeout_sec and answered with that ETag" \
		"status=200 same_etag=1" "$(mig_line "$t_con" WAIT2 | cut -d' ' -f1-2)"
	local nb
	nb=$(mig_line "$t_con" NEIGH)
	# the MACs, not the entries' states (STALE, DELAY, REACHABLE: the kernel's own)
	if [[ $(mig_kv "$nb" before | cut -d'(' -f1) == "$(mig_kv "$nb" after | cut -d'(' -f1)" &&
		$nb == *'=200 then=200' ]]; then
		ok "$l: the guest's neighbour entry for the next hop unchanged ($(mig_kv "$nb" after)); pinned to a MAC nobody has, the next request is still served (steered by address), no gratuitous ARP sent"
	else
		not_ok "$l: the next hop's neighbour entry unchanged and not needed" "$nb"
	fi
	capture_check "$l (target node, from before its sidecar's start)"
	expect_eq "$l: the target's plumbing (links addr rule route tables)" "$PLUMB_WANT" "$(count_plumbing)"
	MIG_SUM="migration ${secs}s in the suite (QMP total ${total} ms, downtime ${down} ms), unanswered ${gap} ms on the guest kernel's receive stamps, ${MIG_HGAP} ms on the host's"
	SUMMARY+=("$l: $MIG_SUM")
}
