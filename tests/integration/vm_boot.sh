#!/usr/bin/env bash
# imds-variants: debug asan (the scenarios are split between the builds: the scenario table's build column below)
# imds-net-mode: agent
# shellcheck source-path=SCRIPTDIR
# Real Debian guests (hack/build-guest-image.sh: Debian 12 with cloud-init
# 22.4, Debian 13 with cloud-init 25.1) boot under qemu (TCG) in
# a "pod" netns against the real `imds-server run` ($IMDS_SERVER), started
# with exactly the env and file layout of the container the webhook injects
# (tests/lib/sidecar_env.py takes them from admission_cli's own patch), and
# with the SMBIOS serial the webhook sets on a VM.  docs/annotations.md (the serial).  (root)
#
# The sidecar runs as the cluster runs it (issue 29): the webhook's
# --network-mode agent env (IMDS_NET_MODE=agent), as UID 107 with no
# capability at all (Uid, CapEff, CapPrm, CapBnd read in /proc at each start
# and restart), in its pod's cgroup and imds-node folder
# (tests/lib/podfolder.sh); one imds-node for the suite, in the node's
# namespace over a kubelet-style pods folder, builds every pod's network half
# (veth-imds, the steering, the guard, ARP/NDP answers, the migration
# targets, what stays across the sidecar's SIGKILLs).  The first pod's
# sidecar starts before the agent: its startupProbe (`imds-server probe`)
# must fail, naming the DaemonSet; qemu (compute) starts only once the probe
# passes.  IMDS_TEST_NET_MODE=pod runs the suite with the in-pod sidecar as
# root with NET_ADMIN instead (by hand; make test boots agent mode only).
#
# Each guest runs in a launcher pod built as KubeVirt builds it for its
# binding (tests/lib/netns.sh), behind a Calico-like node whose side is
# captured from before the sidecar's first start: the node must see no packet
# for 169.254.169.254, ever.  Scenarios (VM_BOOT_SCENARIOS):
#   istio: Debian 12 in masquerade with Istio's rules and its proxy (UID 1337):
#     DHCP from the pod's dnsmasq (10.0.2.2/24); the guest applies the
#     user-data (hostname from meta-data, write_files, runcmd), fetches
#     /v1/identity and /v1/token itself (compared with what the sidecar
#     serves), gets 400 without the header, cloud-init reports done without
#     errors; then it reboots on the same disk: same instance, so SSH host
#     keys are unchanged and runcmd does not run again.  Its user data from
#     a Secret-backed cloudInitConfigDrive volume, read by cloud-init's
#     OpenStack datasource (issue 30): the VMI's chassis asset tag "OpenStack
#     Nova" (SMBIOS type 3), the datasource list [NoCloud, OpenStack, None] on
#     the kernel command line; DataSourceOpenStackLocal takes the instance
#     from /openstack, network_data.json is 404, eth0 by fallback DHCP.
#     (masquerade: the
#     same without Istio, not in the default set: the net suites have it.)
#   linklocal: no DHCP; the guest's eth0 gets only 169.254.77.7/16 (cloud-
#     init's network-config from the kernel command line), with
#     net.ipv4.conf.all.arp_ignore=8 in the pod: only the ARP responder
#     (imds-node's in agent mode) can make 169.254.169.254 reachable.  While this guest's
#     cloud-init runs, the sidecar is killed with SIGKILL twice (in the
#     init stage, and in the final stage while runcmd polls) and started again as kubelet
#     restarts a native sidecar: serving within 1 s, plumbing adopted, the
#     boot completes without errors.
#   bridge-trixie: Debian 13 (cloud-init 25.1, which finds NoCloud from the
#     DMI serial alone and fetches network-config over HTTP) in bridge binding
#     on the pod network: KubeVirt's DHCP gives it the pod IP /32 and option
#     121 routes; a network-config gives the NIC matched by its MAC an extra
#     static address; two boots as istio.  Its user data from a Secret-backed
#     cloudInitNoCloud volume whose KubeVirt cidata disk is kept beside the
#     serial, as bridge's: cloud-init 25.1 with disk and seed, over a reboot.
#   bridge: Debian 12 in bridge binding (its ifupdown/dhclient with /32 and
#     option 121), one boot; its user data from its VMI's own cloudInitNoCloud
#     volume (a secretRef), as the webhook carries it (volume_source, issue 30),
#     and KubeVirt's cidata disk of that volume kept beside the webhook's
#     serial, as a VM without imds.kubevirt.io/cloud-init-disk: remove has
#     them: which datasource and seeds the guest takes, its instance-id and
#     the user data it stored.
#   passt: Debian 13 behind passt as KubeVirt v1.9 runs it, one boot: Debian
#     13's passt (--vhost-user, --repair-path) behind bookworm-backports' qemu
#     10 (-netdev vhost-user), both from hack/build-passt-qemu.sh's cache
#     (need_vhost); its migration runs passt-repair on both sides and holds
#     an SSH session from the node across it (tests/lib/vm_migrate.sh).
#   ipv6: Debian 13 with no IPv4 at all, in a dual-stack masquerade pod:
#     fd10:0:2::2/120 via fd10:0:2::1 on its kernel command line (KubeVirt's
#     DHCPv6 gives no route), and the serial the webhook writes for
#     imds.kubevirt.io/ip-family: IPv6 (seed http://[fd00:ec2::254]/v1/).
# Every guest but passt's also asks fe80::a9fe:a9fe from its link-local.
#   (trixie: Debian 13 in masquerade, not in the default set.)
#   continuity: Debian 12 (cloud-init 22.4) moved from KubeVirt's disk to the
#     service (issue 30): boot 1 from a NoCloud ISO (genisoimage -V cidata)
#     holding exactly KubeVirt's files for a VMI whose cloudInitNoCloud volume
#     carries its data inline (userDataBase64: the suite's user data without
#     the migration's and polling scripts, gzipped, under KubeVirt's 2,048
#     bytes; networkData), with a serial that seeds nothing;
#     boot 2 on the same disk from the service alone (the webhook's serial, no
#     ISO), the sidecar configured from that VMI's imds.kubevirt.io/cloud-init
#     as the webhook writes it: the same instance (runcmd not run again, SSH
#     host keys unchanged), boot 2's datasource the service; the sidecar serves
#     the volume's bytes, and both boots' cloud-init stored them (user-data.txt)
#     with the firmware UUID as instance-id.  (continuity-trixie: the same
#     with Debian 13's cloud-init 25.1, not in the default set.)
# In bridge binding and passt the sidecar is killed (SIGKILL) once the guest
# had its meta-data and started again.  After each boot: the node saw nothing,
# the node and a neighbour pod asking for .254 get no answer, a process of the
# pod is refused at once (passt: answered, passt's own path), SSH with the key
# the sidecar served, and the guest's own request latency.
# Every guest also runs cloud-init's own OpenStack metadata reader (what
# DataSourceOpenStack uses) against /openstack and reports what it read.
# TAP lines name the guest and its cloud-init version.
# At the end of each scenario the running guest is live-migrated to a second
# launcher pod of its binding (migrate_checks: QMP migrate to a qemu started
# with -incoming there, the source then stopped as KubeVirt stops it) while it
# asks every 20 ms: served by the target within 1 s, the same data, sessions
# 401 then renewed, a waiting request ended, the password left behind.
#
# Prints the boot timings and the time from the guest's first request to
# cloud-init's final stage, per scenario.  VM_BOOT_SCENARIOS selects scenarios;
# KEEP=1 keeps the work dir.  The default: each scenario boots once per
# `make test` (the stage runs in both builds, and CI has 45 minutes of its 90
# for all of it: issue 34). The ASan build boots those whose guest drives a
# part of the sidecar no other ASan suite drives with a real guest:
# masquerade + Istio, migration and cloud-init's OpenStack datasource
# (istio), the ARP responder and restarts under SIGKILL (linklocal), bridge binding's alias and network-config
# (bridge-trixie), passt's loopback path (passt), NDP and the IPv6 listeners
# (ipv6). The debug build boots the rest: bridge (Debian 12 in the same
# binding as bridge-trixie; its Secret-backed cloudInitNoCloud volume is read
# by the same code kubevirt_cloudinit runs under ASan) and continuity (its
# first boot never reaches the sidecar, its second reads plain NoCloud data).
# The two builds serve the same bytes by the same code: a scenario booted in
# both proved nothing the second time but the emulator's patience (five boots,
# ~12 of CI's minutes, measured 2026-11-27). VM_BOOT_SCENARIOS=all boots every
# scenario in either build.
#
# A scenario is a row of the scenario table below (its build, guest, runner,
# binding, settings); what differs between bindings is a row of the binding
# table in tests/lib/vm_launch.sh, which also builds the launcher pod and boots
# the guest; tests/lib/vm_checks.sh checks the booted guest, and
# tests/lib/vm_migrate.sh live-migrates it; tests/lib/vm_guest.sh writes the
# guest's user data and tests/lib/vm_scenarios.sh holds the runners.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$here/../.." && pwd)"
# shellcheck source=../lib/tap.sh
. "$here/../lib/tap.sh"
# shellcheck source=../lib/vm.sh
. "$here/../lib/vm.sh"
IMDS_SERVER=${IMDS_SERVER:-$REPO/build/debug/imds-server}
TAPWIRE=$REPO/build/debug/tests/tapwire
# shellcheck source=../lib/netns.sh
. "$here/../lib/netns.sh"
# shellcheck source=../lib/vm_launch.sh
. "$here/../lib/vm_launch.sh"
# shellcheck source=../lib/vm_checks.sh
. "$here/../lib/vm_checks.sh"
# shellcheck source=../lib/vm_migrate.sh
. "$here/../lib/vm_migrate.sh"
# shellcheck source=../lib/vm_guest.sh
. "$here/../lib/vm_guest.sh"
# shellcheck source=../lib/vm_scenarios.sh
. "$here/../lib/vm_scenarios.sh"

PY=/usr/bin/python3
VARIANT=${IMDS_VARIANT:-debug}
ADMISSION_CLI=$REPO/build/debug/tests/admission_cli
SIDECAR_ENV=$REPO/tests/lib/sidecar_env.py
POD_REVIEW=$REPO/tests/fixtures/webhook/pod-kv18.json
VM_REVIEW=$REPO/tests/fixtures/webhook/vm-no-firmware.json

# --- the scenarios: one row each --------------------------------------------------------
# name: VM_BOOT_SCENARIOS's word and the scenario's work dir; build: the build
# that boots it by default (asan, debug, or none: -), "all": in
# VM_BOOT_SCENARIOS=all; guest: the image (hack/build-guest-image.sh <guest>);
# runner: scenario_<runner> <name> <label> <binding> <reboot>; binding: its
# launcher pod (tests/lib/vm_launch.sh's binding table); reboot: a second boot
# on the same disk; needs: need_<it> <name> <label> says whether the machine or
# the suite has it (else the scenario is skipped or fails, saying so); label:
# its TAP lines' (after the guest's name and cloud-init version); settings:
# VAR=value; ... set for the scenario's run ($NAME: the suite's variable).
# The header says what each does and why each build boots the ones it does.
declare -A SCENARIO=()
SCENARIO_ROWS=()
vm_table SCENARIO build all guest runner binding reboot needs label settings <<'EOF'
# name            | build | all | guest    | runner     | binding     | reboot | needs   | label                | settings
istio             | asan  | all | bookworm | binding    | istio       | 1      | none    | masquerade + Istio   | VOLUME=configdrive-secret; CHASSIS_ASSET=OpenStack Nova; VM_APPEND=cc: datasource_list: [NoCloud, OpenStack, None] end_cc
linklocal         | asan  | all | bookworm | linklocal  | linklocal   | 0      | none    | link-local           |
bridge-trixie     | asan  | all | trixie   | binding    | bridge      | 1      | none    | bridge binding       | POD_NETCFG=$NETCFG_FILE; VOLUME=nocloud-secret; DISK=1
bridge            | debug | all | bookworm | binding    | bridge      | 0      | none    | bridge binding       | VOLUME=nocloud-secret; DISK=1
passt             | asan  | all | trixie   | binding    | passt       | 0      | vhost   | passt                | POD_NETCFG=$NETCFG_DHCP_FILE
ipv6              | asan  | all | trixie   | binding    | masquerade6 | 0      | serial6 | IPv6-only            | VM_SERIAL=$SERIAL6; SEED_URL=http://[fd00:ec2::254]/v1/; NODE_V6=1; VM_APPEND=network-config=$NETCFG6
continuity        | debug | all | bookworm | continuity | masquerade  | 0      | none    | continuity (KubeVirt's NoCloud disk, then the service) |
continuity-trixie | -     | all | trixie   | continuity | masquerade  | 0      | none    | continuity (KubeVirt's NoCloud disk, then the service) |
masquerade        | -     | -   | bookworm | binding    | masquerade  | 1      | none    | masquerade           |
trixie            | -     | -   | trixie   | binding    | masquerade  | 1      | none    | masquerade           | POD_NETCFG=$NETCFG_FILE; VM_DHCP6=1
EOF
# scenarios_where <column> <value>: the rows whose <column> is <value>, in order
scenarios_where() {
	local s
	for s in "${SCENARIO_ROWS[@]}"; do [[ ${SCENARIO[$s.$1]} == "$2" ]] && printf '%s ' "$s"; done
}
# selected <column> <value>: one of the selected scenarios has <value> in <column>
selected() {
	local s
	for s in $SCENARIOS; do [[ ${SCENARIO[$s.$1]:-} == "$2" ]] && return 0; done
	return 1
}
DEFAULT_BUILD=debug
[[ $VARIANT == asan ]] && DEFAULT_BUILD=asan
SCENARIOS=${VM_BOOT_SCENARIOS:-$(scenarios_where build "$DEFAULT_BUILD")}
[[ $SCENARIOS == all ]] && SCENARIOS=$(scenarios_where all all)
BOOT_TIMEOUT=${VM_BOOT_TIMEOUT:-240}
VM_NAME=testvm # kubevirt.io/domain of the pod fixture
GUEST_MAC=52:54:00:5e:00:02
TAG="imdsvm$$"

work=""
bg_pids=()  # timestampers and imds-server, by pid (netns.sh's BG_PIDS: its helpers)
qemu_pidfiles=()
dnsmasq_pidfiles=()
POD_EXTRA=() # more sidecar_env.py arguments for pod_up (scenario continuity)

cleanup() {
	local rc=$? p
	trap - EXIT INT TERM
	for p in "${qemu_pidfiles[@]}"; do vm_stop "$p" 2 || true; done
	for p in "${dnsmasq_pidfiles[@]}"; do vm_dhcp_stop "$p" || true; done
	for p in "${bg_pids[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	# the agent and the sidecars, the pods' cgroups (agent mode)
	declare -F podfolder_cleanup >/dev/null && podfolder_cleanup
	netns_cleanup # the launchers' namespaces, Envoy, passt, captures
	if [[ -n $work ]]; then
		if [[ ${KEEP:-0} == 1 ]]; then echo "# kept $work"; else rm -rf "$work"; fi
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

T_START=$EPOCHREALTIME
fsub() { awk -v a="${1/,/.}" -v b="${2/,/.}" 'BEGIN { printf "%.1f", b - a }'; }

# comment lines for the TAP log (tests/run.sh shows them under a failure)
cmt() { sed 's/^/# /'; }

if [[ $(id -u) -ne 0 ]]; then
	not_ok "VM stage needs root (netns, tap, qemu)"
	tap_done
	exit 1
fi
if ! vm_require_tools >/dev/null 2>&1; then
	not_ok "qemu, qemu-img, dnsmasq and /dev/net/tun available (vm_require_tools)"
	tap_done
	exit 1
fi
if [[ ! -x $ADMISSION_CLI ]]; then
	make -C "$REPO" --no-print-directory VARIANT=debug unit-bins >/dev/null 2>&1
fi
if [[ ! -x $ADMISSION_CLI || ! -x $IMDS_SERVER ]]; then
	not_ok "admission_cli and imds-server built" "$ADMISSION_CLI" "$IMDS_SERVER"
	tap_done
	exit 1
fi

# --- 1. guest images -------------------------------------------------------------------
# guest_image <suite>: builds (or finds cached) the guest; sets IMG and CI_VER
# (cloud-init's upstream version, from the image's manifest)
guest_image() {
	local t0=$EPOCHREALTIME out err="${TMPDIR:-/tmp}/$TAG-build.err"
	if ! out="$("$REPO/hack/build-guest-image.sh" "$1" 2>"$err")"; then
		not_ok "$1 guest image built (hack/build-guest-image.sh $1)" "$(tail -n 20 "$err")"
		rm -f "$err"
		return 1
	fi
	rm -f "$err"
	IMG="$(tail -n 1 <<<"$out")"
	CI_VER="$(sed -n 's/^cloud-init=//p' "$IMG/manifest")"
	CI_VER=${CI_VER%%-*}
	ok "$1 guest image (cloud-init $CI_VER) ready in $(vm_elapsed "$t0")s: ${IMG##*/}"
}
if ! guest_image bookworm; then
	tap_done
	exit 1
fi
# GUEST_IMGS[<guest>]: its image, once built; GUEST_LABELS[<guest>]: its name in TAP lines
declare -A GUEST_IMGS=([bookworm]=$IMG) GUEST_LABELS=([bookworm]="bookworm (cloud-init $CI_VER)" [trixie]=trixie)
if selected guest trixie && guest_image trixie; then
	GUEST_IMGS[trixie]=$IMG GUEST_LABELS[trixie]="trixie (cloud-init $CI_VER)"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/imds-vmboot.XXXXXX")"
# the pods' files are read by their sidecars as UID 107 (agent mode)
chmod o+x "$work"

# --- the serial the webhook sets on a VM without one ----------------------------------
if SERIAL="$("$SIDECAR_ENV" vm-serial --review "$VM_REVIEW" --admission-cli "$ADMISSION_CLI" 2>&1)"; then
	ok "webhook's VM serial: $SERIAL"
else
	not_ok "webhook's VM serial" "$SERIAL"
	tap_done
	exit 1
fi
# ... and for an IPv6-only VM (imds.kubevirt.io/ip-family: IPv6 on its template)
SERIAL6=""
if selected needs serial6; then
	"$PY" - "$VM_REVIEW" "$work/vm-ipv6.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
md = r["request"]["object"]["spec"]["template"].setdefault("metadata", {})
md.setdefault("annotations", {})["imds.kubevirt.io/ip-family"] = "IPv6"
json.dump(r, open(sys.argv[2], "w"))
PYEOF
	if SERIAL6="$("$SIDECAR_ENV" vm-serial --review "$work/vm-ipv6.json" --admission-cli "$ADMISSION_CLI" 2>&1)" &&
		[[ $SERIAL6 == *'s=http://[fd00:ec2::254]/v1/'* ]]; then
		ok "webhook's VM serial with ip-family IPv6: $SERIAL6"
	else
		not_ok "webhook's VM serial with ip-family IPv6" "$SERIAL6"
		SERIAL6=""
	fi
fi

# --- user-data (tests/lib/vm_guest.sh) ----------------------------------------------------
guest_user_data
# SSH: a key pair whose public half is in the Secret imds.kubevirt.io/ssh-keys-secret
# names (a comment and a line that is no key beside it); custom meta-data.
SSH_KEY=$work/ssh/id_ed25519
mkdir -p "$work/ssh" "$work/secret-vm-ssh"
ssh-keygen -q -t ed25519 -N '' -C 'vm-boot test' -f "$SSH_KEY"
{ echo '# the operators of this VM'; cat "$SSH_KEY.pub"; echo 'not-a-key'; } >"$work/secret-vm-ssh/ops"
META_DATA='{"role":"vm-test","tier":"2024-01-01"}'

mig_review_write

# The Debian 13 guest's network-config: the NIC matched by its MAC keeps DHCP
# and gets an extra static address.
NETCFG_ADDR=192.168.77.7/24
NETCFG_FILE=$work/network-config
cat >"$NETCFG_FILE" <<EOF
version: 2
ethernets:
  nic0:
    match:
      macaddress: "52:54:00:5e:00:02"
    set-name: eth0
    dhcp4: true
    addresses: [$NETCFG_ADDR]
EOF

# The IPv6-only guest's network, on its kernel command line (it wins over
# the datasource's): eth0 fd10:0:2::2/120 via fd10:0:2::1, no DHCP at all.
# shellcheck disable=SC2034 # read through the scenario table (ipv6's settings)
NETCFG6="$(printf '%s' '{version: 1, config: [{type: physical, name: eth0, mac_address: "52:54:00:5e:00:02", subnets: [{type: static6, address: "fd10:0:2::2/120", gateway: "fd10:0:2::1"}]}]}' | base64 -w0)"

# Debian 13 with a network-config of DHCP alone (passt: no DHCPv6 to wait for)
NETCFG_DHCP_FILE=$work/network-config-dhcp
sed '/addresses:/d' "$NETCFG_FILE" >"$NETCFG_DHCP_FILE"

# need_<what> <name> <label>: 0 when the scenario can run here; else says why
# (passt sandboxes itself in a user namespace it creates after dropping to UID
# 107, isolate_user() in passt's isolation.c: a machine that cannot, a chroot:
# user_namespaces(7), EPERM, cannot run it at all)
need_userns() {
	local err
	err=$(setpriv --reuid=107 --regid=107 --clear-groups unshare --user true 2>&1) && return 0
	skip "$2: boot and migration" "this machine cannot create a user namespace as UID 107, which passt's sandbox needs (unshare --user: ${err:-failed}; a chroot cannot, user_namespaces(7))"
	return 1
}
# qemu10_dir <label>: bookworm-backports' qemu 10 and Debian 13's passt, from
# hack/build-passt-qemu.sh's cache (built once a run: QEMU10_DIR); its first
# call says the versions.
QEMU10_DIR=""
qemu10_dir() {
	[[ -n $QEMU10_DIR ]] && return 0
	local dir
	if ! dir=$("$REPO/hack/build-passt-qemu.sh" 2>"$work/build-passt-qemu.log" | tail -n 1) || [[ ! -x $dir/bin/passt ]]; then
		not_ok "$1: Debian 13's passt and bookworm-backports' qemu (hack/build-passt-qemu.sh)" "$(tail -n 20 "$work/build-passt-qemu.log")"
		return 1
	fi
	QEMU10_DIR=$dir
	ok "$1: passt $(sed -n 's/^passt: passt_\([^ ]*\).*/\1/p' "$dir/VERSIONS"), qemu $("$dir/bin/qemu-system-x86_64" --version | head -n 1 | sed 's/^QEMU emulator version //') (hack/build-passt-qemu.sh)"
}
# ... passt as KubeVirt v1.9 runs it: vhost-user, passt-repair across the
# migration.  Debian 13's passt (built from its source) and bookworm-backports'
# qemu 10 (unpacked); Debian 12's have neither
# (tests/integration/net_passt_repair.sh).  Sets PASST_BIN, PASST_REPAIR,
# PASST_QEMU_DIR for the scenario's run.
need_vhost() {
	need_userns "$@" && qemu10_dir "$2" || return 1
	PASST_BIN=$QEMU10_DIR/bin/passt PASST_REPAIR=$QEMU10_DIR/bin/passt-repair PASST_QEMU_DIR=$QEMU10_DIR
}
# need_mig_qemu <name> <label>: a guest that live-migrates boots on qemu 10
# (MIG_QEMU_DIR, boot_guest), its migration target alike (mig_qemu_target runs
# the source's command line): qemu 7.2's TCG loses guest writes made while it
# migrates (tests/lib/vm_migrate.sh: measured).
need_mig_qemu() {
	qemu10_dir "$2" || return 1
	MIG_QEMU_DIR=$QEMU10_DIR
}
# ... the webhook's serial for an IPv6-only VM (SERIAL6)
need_serial6() {
	[[ -n $SERIAL6 ]] && return 0
	not_ok "$1: the webhook's IPv6 serial"
	return 1
}
# ... nothing
need_none() { :; }

# scenario_value <cell>: a settings value with each $NAME replaced by the suite's variable
scenario_value() {
	# shellcheck disable=SC2016 # a regular expression: $ is literal
	local v=$1 out="" n re='^([^$]*)\$([A-Z_0-9]+)(.*)$'
	while [[ $v =~ $re ]]; do
		n=${BASH_REMATCH[2]}
		out+=${BASH_REMATCH[1]}${!n}
		v=${BASH_REMATCH[3]}
	done
	printf '%s' "$out$v"
}

# scenario_run <name>: the scenario's row: its guest's image, what it needs, its
# settings (exported for its run only, as VAR=value before a call), its runner
scenario_run() {
	local s=$1 g kv label
	g=${SCENARIO[$s.guest]}
	if [[ -z ${GUEST_IMGS[$g]:-} ]]; then
		not_ok "$s: the $g guest image"
		return 0
	fi
	label="${GUEST_LABELS[$g]} ${SCENARIO[$s.label]}"
	"need_${SCENARIO[$s.needs]}" "$s" "$label" || return 0
	local -x GUEST_IMG=${GUEST_IMGS[$g]}
	local -a settings
	IFS=';' read -ra settings <<<"${SCENARIO[$s.settings]}"
	for kv in "${settings[@]}"; do
		kv=${kv#"${kv%%[![:space:]]*}"}
		[[ -n $kv ]] || continue
		local -x "${kv%%=*}=$(scenario_value "${kv#*=}")"
	done
	"scenario_${SCENARIO[$s.runner]}" "$s" "$label" "${SCENARIO[$s.binding]}" "${SCENARIO[$s.reboot]}"
}

L_BOOT=- L_REQ_FINAL=- R2_MS=-
for s in $SCENARIOS; do
	BOOT_EXTRA=() PASST_BIN="" PASST_REPAIR="" PASST_QEMU_DIR="" MIG_QEMU_DIR=""
	if [[ -z ${SCENARIO[$s.runner]:-} ]]; then
		not_ok "unknown scenario $s"
		continue
	fi
	scenario_run "$s"
done

# The agent: SIGTERM (what it reports at exit, LeakSanitizer's, is in its
# log then), exit 0, and no pod refused.
if [[ -n ${AGENT_PID:-} ]]; then
	a_st=0 a_lines=$(grep -c . "$AGENT_LOG")
	kill -TERM "$AGENT_PID" 2>/dev/null
	wait "$AGENT_PID" || a_st=$?
	AGENT_PID=
	if ((a_st == 0)) && ! grep -q ': refused: ' "$AGENT_LOG"; then
		ok "imds-node ended on SIGTERM with status 0, no pod refused ($a_lines lines: $(grep -c ': serving ' "$AGENT_LOG") serving, $(grep -c 'restored plumbing' "$AGENT_LOG") restores, $(grep -c ': sidecar pid ' "$AGENT_LOG") sidecar connections)"
	else
		not_ok "imds-node ended on SIGTERM with status 0, no pod refused" "status $a_st" "$(grep ': refused: ' "$AGENT_LOG" | head -n 5)" "$(tail -n 20 "$AGENT_LOG")"
	fi
fi
if grep -aqE 'Sanitizer|runtime error' "$work"/*/imds.log "$work/agent.log" 2>/dev/null; then
	not_ok "sidecar and agent logs free of sanitizer reports" "$(grep -aE -A20 'Sanitizer|runtime error' "$work"/*/imds.log "$work/agent.log" 2>/dev/null | head -40)"
else
	ok "sidecar and agent logs free of sanitizer reports ($VARIANT)"
fi
total="$(vm_elapsed "$T_START")"
echo "# VM stage ($VARIANT), TCG, ${VM_SMP:-1} vCPU, total ${total}s:"
printf '#   %s\n' "${SUMMARY[@]}"
ok "VM stage total ${total}s ($VARIANT)"
tap_done
