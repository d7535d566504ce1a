#!/usr/bin/env bash
# imds-variants: debug asan (the scenarios are split between the builds: SCENARIOS below)
# shellcheck source-path=SCRIPTDIR
# Real Debian guests (hack/build-guest-image.sh: Debian 12 with cloud-init
# 22.4, Debian 13 with cloud-init 25.1) boot under qemu (TCG) in
# a "pod" netns against the real `imds-server run` ($IMDS_SERVER), started
# with exactly the env and file layout of the container the webhook injects
# (tests/lib/sidecar_env.py takes them from admission_cli's own patch), and
# with the SMBIOS serial the webhook sets on a VM.  docs/annotations.md (the serial).  (root)
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
#     net.ipv4.conf.all.arp_ignore=8 in the pod: only the sidecar's ARP
#     responder can make 169.254.169.254 reachable.  While this guest's
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
#   passt: Debian 13 behind Debian's real passt (qemu -netdev stream), one boot.
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
# tests/lib/vm_migrate.sh live-migrates it.
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
passt             | asan  | all | trixie   | binding    | passt       | 0      | userns  | passt                | POD_NETCFG=$NETCFG_DHCP_FILE
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

# --- user-data --------------------------------------------------------------------------
FILE_CONTENT='written by write_files from the imds sidecar: grüße ✓'
USER_DATA=$work/user-data
cat >"$USER_DATA" <<EOF
#cloud-config
# kubevirt-imds VM test (tests/integration/vm_boot.sh). No hostname here: it
# must come from meta-data.
final_message: "IMDS-FINAL cloud-init \$VERSION finished, up \$UPTIME s"
write_files:
  - path: /etc/imds-e2e.txt
    permissions: '0644'
    content: "$FILE_CONTENT"
EOF
cat >>"$USER_DATA" <<'EOF'
  - path: /usr/local/sbin/imds-e2e-say
    permissions: '0755'
    content: |
      #!/bin/sh
      # Its standard input to the console: gathered first, then one write on a
      # fresh open, retried.  The serial getty's autologin hangs up (vhangup)
      # every descriptor of the tty opened before it, at whatever point of the
      # boot it starts; a write on such a descriptor fails (EIO), and a runcmd
      # whose last write failed fails cloud-init ("Runparts: 1 failures").
      out=$(cat)
      for i in 1 2 3 4 5; do printf '%s\n' "$out" 2>/dev/null >/dev/ttyS0 && exit 0; sleep 0.5; done
      exit 1
  - path: /usr/local/sbin/imds-e2e-fetch
    permissions: '0755'
    content: |
      #!/bin/sh
      # The guest's own requests to the sidecar, printed on the console:
      # over IPv4, or over IPv6 when the guest has no IPv4 route (IPv6-only).
      u=http://169.254.169.254/v1
      ip -4 route get 169.254.169.254 >/dev/null 2>&1 || u='http://[fd00:ec2::254]/v1'
      echo "${u%/v1}" >/run/imds-e2e-base
      id=$(curl -g -s -m 10 -H 'Metadata: true' $u/identity | base64 -w0)
      tok=$(curl -g -s -m 10 -H 'Metadata: true' $u/token | base64 -w0)
      st_id=$(curl -g -s -m 10 -o /dev/null -w '%{http_code}' $u/identity)
      st_tok=$(curl -g -s -m 10 -o /dev/null -w '%{http_code}' $u/token)
      lat=$(curl -g -s -m 10 -o /dev/null -H 'Metadata: true' -w '%{time_connect} %{time_total}' $u/identity)
      # OpenStack's link-local address, from the guest's own link-local one
      ll=$(curl -g -s -m 5 -H 'Metadata: true' 'http://[fe80::a9fe:a9fe%eth0]/v1/identity' | base64 -w0)
      {
        echo "IMDS-IDENTITY-BEGIN $id IMDS-IDENTITY-END"
        echo "IMDS-TOKEN-BEGIN $tok IMDS-TOKEN-END"
        echo "IMDS-NOHEADER identity=$st_id token=$st_tok"
        echo "IMDS-LATENCY $lat"
        echo "IMDS-V6LL-BEGIN $ll IMDS-V6LL-END"
        echo "IMDS-FILE $(base64 -w0 </etc/imds-e2e.txt)"
      } | /usr/local/sbin/imds-e2e-say
  - path: /usr/local/sbin/imds-e2e-report
    permissions: '0755'
    content: |
      #!/bin/sh
      # Per boot, outside cloud-final (systemd-run), once cloud-init is done;
      # written by imds-e2e-say (the getty's hangup).
      n=$1
      while [ ! -e /run/cloud-init/result.json ]; do sleep 0.5; done
      out=$(exec 2>&1
      cloud-init status --long 2>&1 | sed "s/^/IMDS-STATUS boot=$n /"
      echo "IMDS-RESULT boot=$n $(tr -d ' \n' </run/cloud-init/result.json)"
      echo "IMDS-ADDR boot=$n $(ip -4 -o addr show dev eth0 | awk '{print $4}' | tr '\n' ' ')"
      echo "IMDS-ADDR6 boot=$n $(ip -6 -o addr show dev eth0 scope global | awk '{print $4}' | tr '\n' ' ')"
      echo "IMDS-NEIGH boot=$n $(ip neigh show 169.254.169.254 | awk '{for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1)}')"
      echo "IMDS-QUERY boot=$n $(cloud-init query --format 'role={{ ds.meta_data.role }} tier={{ ds.meta_data.tier }}' 2>&1)"
      # OpenStack's meta_data.json carries the custom meta-data under meta
      echo "IMDS-QUERY-OS boot=$n $(cloud-init query --format 'role={{ ds.meta_data.meta.role }} tier={{ ds.meta_data.meta.tier }}' 2>&1)"
      echo "IMDS-DS boot=$n $(cloud-init query --format 'platform={{ v1.platform }} subplatform={{ v1.subplatform }} iid={{ v1.instance_id }}' 2>&1)"
      echo "IMDS-NETCFG boot=$n $(grep -ao 'Applying network configuration from [a-z]* bringup=[A-Za-z]*' /var/log/cloud-init.log | tail -n 1)"
      echo "IMDS-CI boot=$n iid=$(cat /var/lib/cloud/data/instance-id) ud=$(sha256sum </var/lib/cloud/instance/user-data.txt | cut -c1-64)"
      echo "IMDS-OPENSTACK boot=$n $(/usr/local/sbin/imds-e2e-openstack 2>/dev/null | tr '\n' ' ')"
      echo "IMDS-REPORT-DONE boot=$n hostname=$(hostname)")
      printf '%s\n' "$out" | /usr/local/sbin/imds-e2e-say
  - path: /usr/local/sbin/imds-e2e-openstack
    permissions: '0755'
    content: |
      #!/usr/bin/python3
      # cloud-init's own OpenStack metadata reader, as DataSourceOpenStack
      # runs it, against the sidecar's /openstack: one JSON line of what it read.
      import hashlib, json
      from cloudinit.sources.helpers import openstack
      try:
          try:
              base = open("/run/imds-e2e-base").read().strip()
          except OSError:
              base = "http://169.254.169.254"
          d = openstack.MetadataReader(base, timeout=5, retries=2).read_v2()
      except Exception as e:
          print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
          raise SystemExit(0)
      md, ud = d.get("metadata") or {}, d.get("userdata") or b""
      if isinstance(ud, str):
          ud = ud.encode()
      nd = d.get("networkdata") or {}
      print(json.dumps({"uuid": md.get("uuid"), "hostname": md.get("hostname"),
                        "public_keys": sorted((md.get("public_keys") or {}).keys()),
                        "meta": md.get("meta"), "userdata_sha256": hashlib.sha256(ud).hexdigest(),
                        "vendordata": sorted((d.get("vendordata") or {}).keys()),
                        "networkdata": sorted(nd.keys())}, sort_keys=True))
  - path: /usr/local/sbin/imds-e2e-poll
    permissions: '0755'
    content: |
      #!/usr/bin/python3
      # A guest agent asking every 20 ms while the sidecar is killed and
      # restarted (scenario linklocal): prints how long it went unanswered.
      import http.client, time
      def say(line):
          # a fresh open per line, retried: the serial getty's hangup
          for _ in range(5):
              try:
                  with open("/dev/ttyS0", "w") as tty:
                      tty.write(line + "\n")
                  return
              except OSError:
                  time.sleep(0.2)
      say("IMDS-POLL-START")
      t0, fails, first = time.monotonic(), 0, 0.0
      while time.monotonic() - t0 < 60:
          try:
              c = http.client.HTTPConnection("169.254.169.254", 80, timeout=2)
              c.request("GET", "/v1/meta-data")
              ok = c.getresponse().status == 200
              c.close()
          except OSError:
              ok = False
          if ok and fails:
              ms = round((time.monotonic() - first) * 1000)
              say("IMDS-POLL-BACK fails=%d unanswered_ms=%d" % (fails, ms))
              raise SystemExit(0)
          if not ok:
              first = first or time.monotonic()
              fails += 1
          time.sleep(0.02)
      say("IMDS-POLL-TIMEOUT fails=%d" % fails)
  - path: /var/lib/cloud/scripts/per-boot/imds-e2e-boot.sh
    permissions: '0755'
    content: |
      #!/bin/sh
      n=$(( $(cat /var/lib/imds-e2e-boots 2>/dev/null || echo 0) + 1 ))
      echo "$n" >/var/lib/imds-e2e-boots
      # one line, one write: the console is shared with the root shell's prompt
      fps=$(for f in /etc/ssh/ssh_host_*_key.pub; do ssh-keygen -lf "$f" | awk '{print $NF "=" $2}'; done | sort | tr '\n' ' ')
      echo "IMDS-HOSTKEYS boot=$n $fps" | /usr/local/sbin/imds-e2e-say
      systemd-run --no-block --unit="imds-e2e-report-$n" /usr/local/sbin/imds-e2e-report "$n"
runcmd:
  - [ sh, -c, 'echo "IMDS-MARK runcmd hostname=$(hostname)" | /usr/local/sbin/imds-e2e-say' ]
  - [ /usr/local/sbin/imds-e2e-fetch ]
EOF
# The guest's side of a live migration (migrate_checks, tests/lib/guest_migrate.py),
# one more write_files entry, before runcmd.
{
	echo '  - path: /usr/local/sbin/imds-e2e-migrate'
	echo "    permissions: '0755'"
	echo '    content: |'
	sed 's/^/      /' "$here/../lib/guest_migrate.py"
} >"$work/migrate.part"
sed -i "/^runcmd:\$/e cat '$work/migrate.part'" "$USER_DATA"
# SSH: a key pair whose public half is in the Secret imds.kubevirt.io/ssh-keys-secret
# names (a comment and a line that is no key beside it); custom meta-data.
SSH_KEY=$work/ssh/id_ed25519
mkdir -p "$work/ssh" "$work/secret-vm-ssh"
ssh-keygen -q -t ed25519 -N '' -C 'vm-boot test' -f "$SSH_KEY"
{ echo '# the operators of this VM'; cat "$SSH_KEY.pub"; echo 'not-a-key'; } >"$work/secret-vm-ssh/ops"
META_DATA='{"role":"vm-test","tier":"2024-01-01"}'

# The link-local guest also polls through a sidecar restart in its runcmd,
# before it fetches identity and token from the restarted process.
USER_DATA_POLL=$work/user-data-poll
sed 's|^  - \[ /usr/local/sbin/imds-e2e-fetch \]$|  - [ /usr/local/sbin/imds-e2e-poll ]\n&|' "$USER_DATA" >"$USER_DATA_POLL"

mig_review_write

# --- a binding's scenario -------------------------------------------------------------
# scenario_binding <dir> <label> <binding> <reboot 0|1>: the guest GUEST_IMG in the
# launcher pod of <binding> (masquerade, istio, bridge, passt), with POD_NETCFG when
# set: the boot, what the guest got, what the node saw, who else is refused, SSH;
# with reboot=1 a second boot on the same disk.  In bridge binding and passt the
# sidecar is killed (SIGKILL) once the guest's cloud-init has its meta-data and
# started again as kubelet restarts it.  Adds a line to SUMMARY.
SUMMARY=()
scenario_binding() {
	local d=$1 l=$2 binding=$3 reboot=$4 con="$work/$1/console.log" b2=- out
	POD_EXTRA=() VOL_IID=''
	if [[ -n ${VOLUME:-} ]]; then
		volume_source "$d" "$l" || return 1
	fi
	BOOT_EXTRA=()
	if [[ ${DISK:-0} == 1 ]]; then
		# KubeVirt's NoCloud disk of that volume, kept (no
		# imds.kubevirt.io/cloud-init-disk: remove): the guest has the
		# disk and the webhook's serial at every boot (issue 30 item 3).
		if ! out=$(genisoimage -quiet -output "$work/$d/cidata.iso" -volid cidata -joliet -rock \
			"$work/$d/iso/user-data" "$work/$d/iso/meta-data" 2>&1); then
			not_ok "$l: KubeVirt's cidata ISO of the volume" "$out"
			return 1
		fi
		BOOT_EXTRA=(-drive "file=$work/$d/cidata.iso,format=raw,if=virtio,readonly=on")
	fi
	# the VMI's spec.domain.chassis.asset, as KubeVirt renders it: SMBIOS
	# type 3's asset tag (pkg/virt-launcher/virtwrap/converter/compute/sysinfo.go)
	[[ -n ${CHASSIS_ASSET:-} ]] && BOOT_EXTRA+=(-smbios "type=3,asset=$CHASSIS_ASSET")
	# not in $(...): pod_up starts background processes and records them
	if ! pod_up "$d" "$binding" >"$work/pod_up.out" 2>&1; then
		not_ok "$l: $binding launcher pod, DHCP, imds-server run as injected" "$(cat "$work/pod_up.out")"
		return 1
	fi
	ok "$l: $binding launcher pod (tests/lib/netns.sh), DHCP, imds-server run as injected ($(wc -l <"$SC_ENV") env vars, $(grep -o 'IMDS_INTERFACES=[^ ]*' "$SC_ENV"))"
	GUEST_ADDR=$(binding_of "$binding" address)
	VM_OVERLAY="$work/$d/disk.qcow2" boot_guest "$l" "$con" || return 1
	first_request "$l" "$con" "$work/$d/disk.qcow2" || return 1
	if [[ $(binding_of "$binding" kill) == yes ]]; then
		if ! wait_log "$SC_LOG" ' GET /v1/meta-data 200 ' "$BOOT_TIMEOUT"; then
			not_ok "$l: guest asked for meta-data" "$(console_tail "$con")" "$(tail -n 20 "$SC_LOG")"
			return 1
		fi
		crash_restart "$l" "once the guest had its meta-data"
	fi
	wait_mark "$l: boot 1 finished (report printed)" "$con" 'IMDS-REPORT-DONE boot=1' || return 1
	timings "$l boot 1" "$con"
	local b1=$B_FINAL req=$B_REQ req_final=$B_REQ_FINAL
	ok "$l: boot 1 to cloud-init final ${b1}s (first request at ${req}s, first request -> final ${req_final}s)"
	guest_checks "$l" "$con"
	guest_addr_check "$l" "$con"
	[[ -n ${POD_NETCFG:-} ]] && netcfg_checks "$l" "$con" 1
	latency "$l" "$con"
	v6ll_check "$l" "$con"
	capture_check "$l"
	refusals "$l"
	ssh_login "$l"
	if ((reboot)); then
		reboot_checks "$l" "$con" && b2=$M_BOOT2
		if [[ -n ${CHASSIS_ASSET:-} ]]; then
			expect_eq "$l: boot 2: DataSourceOpenStackLocal again, eth0 kept its address (fallback DHCP)" \
				"DataSourceOpenStackLocal $GUEST_ADDR" \
				"$(line "$con" 'IMDS-RESULT boot=2 ' | grep -o 'DataSourceOpenStackLocal') $(line "$con" 'IMDS-ADDR boot=2' | cut -d' ' -f3- | sed 's/ *$//')"
		fi
	fi
	SUMMARY+=("$l: boot 1 ${b1}s to cloud-init final (first request at ${req}s, -> final ${req_final}s), boot 2 ${b2}s; $B_LAT")
	migrate_checks "$l" "$d"
	vm_stop "$VM_PIDFILE" 2
	POD_EXTRA=() VOL_IID='' BOOT_EXTRA=()
}

# volume_source <dir> <label>: the guest's data from its VMI's own cloud-init
# volume instead of the imds.kubevirt.io/user-data annotation (issue 30):
# VOLUME=nocloud-secret (cloudInitNoCloud, secretRef) or configdrive-secret
# (cloudInitConfigDrive, secretRef), the user data in the Secret vm-userdata.
# The VMI through the webhook (kvci.py nocloud-vmi) gives the annotation
# imds.kubevirt.io/cloud-init, set on the pod as KubeVirt copies it (source and
# migration target alike: POD_EXTRA), and VOL_IID, KubeVirt's instance-id.
volume_source() {
	local d=$1 l=$2 out cd=()
	[[ $VOLUME == configdrive-secret ]] && cd=(--config-drive)
	mkdir -p "$work/$d/secret-ud"
	cp "$USER_DATA" "$work/$d/secret-ud/userdata"
	if ! out=$("$PY" "$REPO/tests/lib/kvci.py" nocloud-vmi --admission-cli "$ADMISSION_CLI" --name "$VM_NAME" \
		--namespace default --uuid "$CONT_UUID" --secret vm-userdata --user-data "$USER_DATA" \
		--out "$work/$d" "${cd[@]}" 2>&1); then
		not_ok "$l: the VMI with its $VOLUME volume through the webhook" "$out"
		return 1
	fi
	POD_EXTRA=(--set-annotation "imds.kubevirt.io/cloud-init=@$work/$d/cloud-init"
		--del-annotation imds.kubevirt.io/user-data --secret "vm-userdata=$work/$d/secret-ud")
	VOL_IID=$CONT_UUID
	ok "$l: user data from the VMI's own $VOLUME volume (imds.kubevirt.io/cloud-init $(cat "$work/$d/cloud-init"))"
}


# --- 6. link-local scenario ----------------------------------------------------------------
# scenario_linklocal <dir> <label> <binding>: see the header
scenario_linklocal() {
	local d=$1 l=$2 con="$work/$1/console.log" netcfg
	# not in $(...): pod_up starts background processes and records them
	if ! pod_up "$d" "$3" "$USER_DATA_POLL" >"$work/pod_up.out" 2>&1; then
		not_ok "$l: pod netns, tap, no DHCP, arp_ignore=8, imds-server run as injected" "$(cat "$work/pod_up.out")"
		return 1
	fi
	ok "$l: pod netns, tap, no DHCP, arp_ignore=8, imds-server run as injected"
	# cloud-init's network config from the kernel command line (it wins over
	# the datasource's): eth0 169.254.77.7/16 only, no gateway, no DHCP.
	netcfg="$(printf '%s' '{version: 1, config: [{type: physical, name: eth0, subnets: [{type: static, address: 169.254.77.7/16}]}]}' | base64 -w0)"
	VM_OVERLAY="$work/$d/disk.qcow2" VM_APPEND="network-config=$netcfg" boot_guest "$l" "$con" || return 1
	VM_APPEND="network-config=$netcfg" first_request "$l" "$con" "$work/$d/disk.qcow2" || return 1
	restart_during_boot "$l" "$con" || return 1
	wait_mark "$l: boot finished (report printed)" "$con" 'IMDS-REPORT-DONE boot=1' || return 1
	timings "$l" "$con"
	L_BOOT=$B_FINAL L_REQ_FINAL=$B_REQ_FINAL
	ok "$l: boot to cloud-init final ${L_BOOT}s (first request -> final ${L_REQ_FINAL}s)"
	expect_eq "$l: guest eth0 has only 169.254.77.7/16" "169.254.77.7/16" "$(line "$con" 'IMDS-ADDR boot=1' | cut -d' ' -f3- | sed 's/ *$//')"
	local veth_mac
	veth_mac="$(ip netns exec "$NS" cat /sys/class/net/veth-imds/address 2>/dev/null)"
	expect_eq "$l: guest resolved 169.254.169.254 to veth-imds (ARP responder)" "$veth_mac" \
		"$(line "$con" 'IMDS-NEIGH boot=1' | awk '{print $3}')"
	expect_eq "$l: pod all.arp_ignore still 8" 8 "$(ip netns exec "$NS" sysctl -n net.ipv4.conf.all.arp_ignore)"
	guest_checks "$l" "$con"
	capture_check "$l"
	SUMMARY+=("$l: ${L_BOOT}s to cloud-init final with two sidecar restarts (first request -> final ${L_REQ_FINAL}s), the polling guest served ${R2_MS} ms after a restart")
	migrate_checks "$l" "$d" "$USER_DATA_POLL"
	vm_stop "$VM_PIDFILE" 2
}

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


# --- 8. continuity: from KubeVirt's cloud-init disk to the service ------------------------
# inline_user_data <user-data> <out>: the suite's user data as an inline
# volume can carry it: KubeVirt caps userDataBase64 at 2,048 decoded bytes
# (vmi-create-admitter.go, docs/annotations.md "Bad input"), so without the
# migration's and the polling guest's scripts (continuity neither migrates
# nor restarts the sidecar) and without comment lines, gzipped: cloud-init
# inflates gzip user data (user_data.py:383 at 22.4.2 and :381 at 25.1.4).
inline_user_data() {
	"$PY" - "$1" "$2" <<'PYEOF'
import gzip, re, sys
t = open(sys.argv[1]).read()
for script, until in (("imds-e2e-poll", "  - path: /var/lib/cloud/scripts/per-boot/"), ("imds-e2e-migrate", "runcmd:")):
    s = t.index("  - path: /usr/local/sbin/%s\n" % script)
    t = t[:s] + t[t.index(until, s):]
t = "".join(l for l in t.splitlines(True) if not re.match(r"\s*#(?!!|cloud-config)", l))
open(sys.argv[2], "wb").write(gzip.compress(t.encode(), 9, mtime=0))
PYEOF
}
# scenario_continuity: see the header.  KubeVirt's files come from
# tests/lib/kvci.py nocloud-vmi --inline (meta-data as json.Marshal writes it,
# pkg/cloud-init/cloud-init.go:80-85, 591; user-data the decoded
# userDataBase64, network-config the networkData); the ISO
# as KubeVirt makes it (xorrisofs -volid cidata -joliet -rock, cloud-init.go:421-433).
CONT_UUID=5d307ca9-b3ef-428c-8861-06e72d69f223
scenario_continuity() { # <dir> <label> <binding>
	local d=$1 l=$2 binding=$3
	local con1="$work/$1/console1.log" con2="$work/$1/console2.log" out
	local ud="$work/$d/user-data.gz" ud_sha nd_sha
	mkdir -p "$work/$d"
	if ! out=$(inline_user_data "$USER_DATA" "$ud" 2>&1) ||
		! out=$("$PY" "$REPO/tests/lib/kvci.py" nocloud-vmi --admission-cli "$ADMISSION_CLI" --name "$VM_NAME" \
			--namespace default --uuid "$CONT_UUID" --inline --user-data "$ud" \
			--network-data "$NETCFG_DHCP_FILE" --out "$work/$d" 2>&1) ||
		! out=$(genisoimage -quiet -output "$work/$d/cidata.iso" -volid cidata -joliet -rock \
			"$work/$d/iso/user-data" "$work/$d/iso/meta-data" "$work/$d/iso/network-config" 2>&1); then
		not_ok "$l: the VMI (inline cloudInitNoCloud) through the webhook, KubeVirt's files and their cidata ISO" "$out"
		return 1
	fi
	ud_sha=$(sha256sum <"$ud" | cut -c1-64) nd_sha=$(sha256sum <"$NETCFG_DHCP_FILE" | cut -c1-64)
	ok "$l: the VMI's inline cloudInitNoCloud (userDataBase64: $(wc -c <"$ud") bytes of gzip, $(gzip -dc "$ud" | wc -c) inflated; networkData $(wc -c <"$NETCFG_DHCP_FILE") bytes) through the webhook: imds.kubevirt.io/cloud-init of $(wc -c <"$work/$d/cloud-init") bytes; KubeVirt's meta-data $(cat "$work/$d/iso/meta-data")"
	POD_EXTRA=(--set-annotation "imds.kubevirt.io/cloud-init=@$work/$d/cloud-init"
		--del-annotation imds.kubevirt.io/user-data)
	if ! pod_up "$d" "$binding" >"$work/pod_up.out" 2>&1; then
		POD_EXTRA=()
		not_ok "$l: masquerade launcher pod, imds-server run as injected" "$(cat "$work/pod_up.out")"
		return 1
	fi
	if grep -q IMDS_USER_DATA_FILE "$SC_ENV" || ! grep -q IMDS_CLOUD_INIT= "$SC_ENV"; then
		not_ok "$l: the sidecar takes the volume's user data (IMDS_CLOUD_INIT, no IMDS_USER_DATA_FILE)" "$(cat "$SC_ENV")"
		return 1
	fi
	POD_EXTRA=()
	ok "$l: masquerade launcher pod, the sidecar configured from the VMI's cloud-init volume"
	# What the sidecar serves is the volume's, byte for byte (the guest's
	# cloud-init 22.4 fetches no network-config over HTTP: read_seeded's
	# three files, DataSourceNoCloud.py:173 at 22.4.2).
	local got_ud got_nd
	if reference_start; then
		got_ud=$(reference /v1/user-data | sha256sum | cut -c1-64)
		got_nd=$(reference /v1/network-config | sha256sum | cut -c1-64)
		reference_stop
	fi
	expect_eq "$l: the sidecar serves the volume's user-data and network-config byte for byte (sha256)" \
		"$ud_sha $nd_sha" "${got_ud:-} ${got_nd:-}"
	GUEST_ADDR=10.0.2.2/24
	VM_OVERLAY="$work/$d/disk.qcow2" VM_SERIAL="kubevirt-imds-continuity" boot_guest "$l boot 1" "$con1" \
		-drive "file=$work/$d/cidata.iso,format=raw,if=virtio,readonly=on" || return 1
	wait_mark "$l: boot 1 (from the cidata ISO) finished (report printed)" "$con1" 'IMDS-REPORT-DONE boot=1' || return 1
	local r1 r2
	r1=$(line "$con1" 'IMDS-RESULT boot=1 ')
	if [[ $r1 == *'DataSourceNoCloud'*'/dev/vd'* && $r1 == *'"errors":[]'* ]]; then
		ok "$l: boot 1 read the ISO (${r1#IMDS-RESULT boot=1 })"
	else
		not_ok "$l: boot 1 read the ISO, without errors" "$r1"
	fi
	if ! wait_mark "$l: root shell on ttyS0 before the poweroff" "$con1" "root@$VM_NAME:~# " 1 60; then
		return 1
	fi
	vm_poweroff 120
	local t2=$EPOCHREALTIME
	VM_OVERLAY="$work/$d/disk.qcow2" boot_guest "$l boot 2" "$con2" || return 1
	wait_mark "$l: boot 2 (from the service alone) finished (report printed)" "$con2" 'IMDS-REPORT-DONE boot=2' || return 1
	r2=$(line "$con2" 'IMDS-RESULT boot=2 ')
	if [[ $r2 == *'169.254.169.254'* && $r2 == *'"errors":[]'* ]] &&
		awk -v t="${t2/,/.}" '$1 >= t && / GET \/v1\/meta-data 200 /' "$SC_LOG.ts" | grep -q .; then
		ok "$l: boot 2 read the service (${r2#IMDS-RESULT boot=2 })"
	else
		not_ok "$l: boot 2 read the service, without errors" "$r2" "$(tail -n 20 "$SC_LOG")"
	fi
	local k1 k2
	k1="$(line "$con1" 'IMDS-HOSTKEYS boot=1 ' | cut -d' ' -f3- | tr ' ' '\n' | grep .)"
	k2="$(line "$con2" 'IMDS-HOSTKEYS boot=2 ' | cut -d' ' -f3- | tr ' ' '\n' | grep .)"
	if [[ -n $k1 && $k1 == "$k2" ]]; then
		ok "$l: SSH host keys unchanged from the disk's boot to the service's ($(wc -l <<<"$k1") keys)"
	else
		not_ok "$l: SSH host keys unchanged from the disk's boot to the service's" "boot 1:" "$k1" "boot 2:" "$k2"
	fi
	# The guest's own record: cloud-init's instance-id and the raw user data it
	# stored (user-data.txt, the bytes before gzip is inflated: stages.py:487-491,
	# user_data.py:383 at 22.4.2), per boot.
	expect_eq "$l: boot 1 (the ISO) and boot 2 (the service): instance-id and the raw user-data the guest stored (sha256) are the volume's" \
		"iid=$CONT_UUID ud=$ud_sha | iid=$CONT_UUID ud=$ud_sha" \
		"$(line "$con1" 'IMDS-CI boot=1 ' | cut -d' ' -f3-) | $(line "$con2" 'IMDS-CI boot=2 ' | cut -d' ' -f3-)"
	expect_eq "$l: runcmd not run again on boot 2 (the same instance: $CONT_UUID)" 1 "$(cat "$con1" "$con2" | grep -ac 'IMDS-MARK runcmd')"
	expect_eq "$l: hostname kept on boot 2" "hostname=$VM_NAME" "$(line "$con2" 'IMDS-REPORT-DONE boot=2' | awk '{print $3}')"
	expect_eq "$l: cloud-init status done on boot 2" "done" "$(line "$con2" 'IMDS-STATUS boot=2 status:' | awk '{print $NF}')"
	vm_stop "$VM_PIDFILE" 2
	SUMMARY+=("$l: boot 1 from KubeVirt's disk, boot 2 from the service: the same instance")
}

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
	BOOT_EXTRA=()
	if [[ -z ${SCENARIO[$s.runner]:-} ]]; then
		not_ok "unknown scenario $s"
		continue
	fi
	scenario_run "$s"
done

if grep -aqE 'Sanitizer|runtime error' "$work"/*/imds.log 2>/dev/null; then
	not_ok "sidecar logs free of sanitizer reports" "$(grep -aE -A20 'Sanitizer|runtime error' "$work"/*/imds.log | head -40)"
else
	ok "sidecar logs free of sanitizer reports ($VARIANT)"
fi
total="$(vm_elapsed "$T_START")"
echo "# VM stage ($VARIANT), TCG, ${VM_SMP:-1} vCPU, total ${total}s:"
printf '#   %s\n' "${SUMMARY[@]}"
ok "VM stage total ${total}s ($VARIANT)"
tap_done
