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

PY=/usr/bin/python3
VARIANT=${IMDS_VARIANT:-debug}
ADMISSION_CLI=$REPO/build/debug/tests/admission_cli
SIDECAR_ENV=$REPO/tests/lib/sidecar_env.py
POD_REVIEW=$REPO/tests/fixtures/webhook/pod-kv18.json
VM_REVIEW=$REPO/tests/fixtures/webhook/vm-no-firmware.json
ALL_SCENARIOS="istio linklocal bridge-trixie bridge passt ipv6 continuity continuity-trixie"
if [[ $VARIANT == asan ]]; then
	SCENARIOS=${VM_BOOT_SCENARIOS:-istio linklocal bridge-trixie passt ipv6}
else
	SCENARIOS=${VM_BOOT_SCENARIOS:-bridge continuity}
fi
[[ $SCENARIOS == all ]] && SCENARIOS=$ALL_SCENARIOS
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
BOOKWORM_IMG=$IMG BOOKWORM="bookworm (cloud-init $CI_VER)"
TRIXIE_IMG="" TRIXIE=trixie
if [[ " $SCENARIOS " =~ \ (trixie|bridge-trixie|passt|ipv6|continuity-trixie)\  ]] && guest_image trixie; then
	TRIXIE_IMG=$IMG TRIXIE="trixie (cloud-init $CI_VER)"
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
if [[ " $SCENARIOS " == *" ipv6 "* ]]; then
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
	case $binding in
	masquerade | linklocal | masquerade6) TAP_MQ=$mq launcher_masquerade || return 1 ;;
	istio) TAP_MQ=$mq launcher_istio || return 1 ;;
	bridge) TAP_MQ=$mq launcher_bridge || return 1 ;;
	passt) launcher_passt || return 1 ;;
	*) echo "pod_up: unknown binding $binding" >&2; return 1 ;;
	esac
	node_capture_start cali0
	case $binding in
	masquerade | istio)
		vm_dhcp_start "$NS" k6t-eth0 "$work/$name/dnsmasq.log" || return 1
		dnsmasq_pidfiles+=("$VM_DNSMASQ_PIDFILE")
		ifs=default:masquerade:tap0
		;;
	linklocal)
		ip netns exec "$NS" sysctl -qw net.ipv4.conf.all.arp_ignore=8 || return 1
		ifs=default:masquerade:tap0
		;;
	masquerade6) ifs=default:masquerade:tap0 ;; # the guest's IPv6 is its own configuration
	bridge)
		bridge_dhcp_start "$work/$name/dnsmasq.log" || return 1
		dnsmasq_pidfiles+=("$VM_DNSMASQ_PIDFILE")
		ifs=default:bridge:tap0
		;;
	passt)
		passt_start "$work/$name" || return 1
		ifs=default:passt
		;;
	esac
	# veth pair, address, rule, route; tables ip, ip6 and bridge, netdev with a tap
	PLUMB_WANT="2 1 1 1 4"
	[[ $binding == passt ]] && PLUMB_WANT="2 1 1 1 3"
	SC_UD=${3:-$USER_DATA}
	"$SIDECAR_ENV" pod --review "$POD_REVIEW" --admission-cli "$ADMISSION_CLI" \
		--root "$SC_ROOT" --set-annotation "imds.kubevirt.io/user-data=@$SC_UD" \
		--set-annotation imds.kubevirt.io/ssh-keys-secret=vm-ssh --secret "vm-ssh=$work/secret-vm-ssh" \
		--set-annotation "imds.kubevirt.io/meta-data=$META_DATA" \
		--set-annotation "imds.kubevirt.io/interfaces=$ifs" \
		--set-annotation imds.kubevirt.io/eviction-strategy=LiveMigrate \
		"${netcfg_arg[@]}" "${POD_EXTRA[@]}" >"$SC_ENV" || return 1
	grep -q "IMDS_INTERFACES=$ifs" "$SC_ENV" || { echo "the webhook gave no IMDS_INTERFACES=$ifs" >&2; return 1; }
	: >"$SC_LOG"
	timestamp "$SC_LOG" "$SC_LOG.ts"
	sidecar_start
	sidecar_wait_serving 1 10 && return 0
	echo "imds-server run did not report 'net: serving':" >&2
	cat "$SC_LOG" >&2
	return 1
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
# binding (as UID 107, the pod's user; its socket for qemu's stream netdev), for
# a VMI with no `ports`: every port forwarded, `--tcp-ports all --udp-ports all`
# (tests/lib/netns.sh pasta_start cites KubeVirt and libvirt; where the
# descriptor limit cannot be raised, PASST_ALL's ports stand in), port 22 among
# them.  No --vhost-user: Debian 12's passt has none.  Sets PASST_SOCK.
passt_start() {
	mkdir -p "$1/passt"
	chown 107:107 "$1/passt"
	# passt binds its socket as UID 107, after dropping root: the path must be
	# traversable (mktemp's folder is 0700; and passt says "bound" even so)
	chmod o+x "$work"
	chmod 755 "$1"
	PASST_SOCK="$1/passt/passt.sock"
	local fwd=(--tcp-ports all --udp-ports all)
	[[ $PASST_ALL == "$PASST_ALL_FULL" ]] || fwd=(--tcp-ports "$PASST_ALL" --udp-ports "$PASST_ALL")
	ip netns exec "$NS_POD" prlimit --nofile="$PASST_NOFILE:$PASST_NOFILE" \
		passt --runas 107:107 -f "${fwd[@]}" -s "$PASST_SOCK" >"$1/passt.log" 2>&1 &
	BG_PIDS+=($!)
	local i
	for ((i = 0; i < 200; i++)); do [[ -S $PASST_SOCK ]] && return 0; sleep 0.02; done
	echo "passt did not start: $(cat "$1/passt.log")" >&2
	return 1
}

# sidecar_start: `imds-server run` in the pod with the env and files of the
# injected container (again after a crash: kubelet restarts a native sidecar
# with the same env, mounts and network namespace). Sets SC_PID.
sidecar_start() {
	# shellcheck disable=SC1090 # generated
	(set -a && . "$SC_ENV" && exec ip netns exec "$NS" "$IMDS_SERVER" run) >>"$SC_LOG" 2>&1 &
	SC_PID=$!
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
		if ((ms < 1000)); then
			ok "$l: restarted sidecar ($when) serving ${ms} ms after its start"
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

# --- 4. guest checks common to both scenarios -------------------------------------------
# guest_checks <label> <console>
guest_checks() {
	local l=$1 con=$2 got want
	got="$(line "$con" 'IMDS-MARK runcmd ' | sed 's/.*hostname=//')"
	expect_eq "$l: hostname from meta-data is the VM name (runcmd)" "$VM_NAME" "$got"
	got="$(line "$con" 'IMDS-FILE ' | awk '{print $2}' | base64 -d 2>/dev/null)"
	expect_eq "$l: write_files wrote /etc/imds-e2e.txt" "$FILE_CONTENT" "$got"

	reference_start || not_ok "$l: reference 'imds-server serve' with the sidecar's env" "$(cat "$work/ref.log")"
	want="$(reference /v1/identity)"
	got="$(between "$con" IMDS-IDENTITY-BEGIN IMDS-IDENTITY-END | base64 -d 2>/dev/null)"
	expect_eq "$l: guest's /v1/identity byte-exact as served" "$want" "$got"
	local ns pod sa
	# shellcheck disable=SC1090 # generated
	read -r ns pod sa < <(set -a && . "$SC_ENV" && echo "$IMDS_NAMESPACE $IMDS_POD_NAME $IMDS_SA_NAME")
	local iid=${VOL_IID:-$ns-$VM_NAME} # a cloud-init volume's VMI: KubeVirt's identity
	expect_eq "$l: identity names the pod and VM" \
		"{\"namespace\":\"$ns\",\"serviceAccountName\":\"$sa\",\"vmName\":\"$VM_NAME\",\"podName\":\"$pod\",\"instanceId\":\"$iid\"}" "$got"
	want="$(reference /v1/token)"
	reference_stop
	got="$(between "$con" IMDS-TOKEN-BEGIN IMDS-TOKEN-END | base64 -d 2>/dev/null)"
	expect_eq "$l: guest's /v1/token as served" "$want" "$got"
	local tokfile
	# shellcheck disable=SC1090 # generated
	tokfile="$(set -a && . "$SC_ENV" && echo "$IMDS_TOKEN_PATH")"
	expect_eq "$l: the token is the projected token file" "$(cat "$tokfile")" \
		"$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["token"])' "$got" 2>&1)"
	got="$(line "$con" 'IMDS-NOHEADER ' | cut -d' ' -f2-)"
	expect_eq "$l: without 'Metadata: true' identity and token get 400" "identity=400 token=400" "$got"
	got="$(line "$con" 'IMDS-STATUS boot=1 status:' | awk '{print $NF}')"
	if [[ $got == "done" ]]; then
		ok "$l: cloud-init status --long: done"
	else
		not_ok "$l: cloud-init status --long: done" "$(line "$con" 'IMDS-STATUS boot=1 ' | head -n 20)" "$(line "$con" 'IMDS-STATUS boot=1 ' 2 | head -n 20)"
		grep -a 'IMDS-STATUS boot=1 ' "$con" | tr -d '\r' | cmt
	fi
	# no errors, and from 23.4 on no recoverable ones (WARNINGs) either; the
	# status lines name both kinds of list, empty
	got="$(line "$con" 'IMDS-RESULT boot=1 ')"
	if [[ $got == *'"errors":[]'* && ($got != *recoverable_errors* || $got == *'"recoverable_errors":{}'*) ]] &&
		! grep -a 'IMDS-STATUS boot=1 ' "$con" | grep -v -e 'errors: \[\]' -e 'recoverable_errors: {}' | grep -q '[Ee]rror'; then
		ok "$l: cloud-init reports no errors"
	else
		not_ok "$l: cloud-init reports no errors" "$got" "$(grep -a 'IMDS-STATUS boot=1 ' "$con" | tr -d '\r')"
	fi
	if [[ -n ${CHASSIS_ASSET:-} ]]; then
		openstack_ds_checks "$l" "$con"
	else
		nocloud_ds_checks "$l" "$con"
	fi
	if [[ -n ${VOL_IID:-} ]]; then
		expect_eq "$l: the guest's instance-id is KubeVirt's and the raw user data it stored (user-data.txt, sha256) the volume's" \
			"iid=$VOL_IID ud=$(sha256sum <"$SC_UD" | cut -c1-64)" "$(line "$con" 'IMDS-CI boot=1 ' | cut -d' ' -f3-)"
	fi
	openstack_checks "$l" "$con" "$iid"
}

# nocloud_ds_checks <label> <console>: the guest's datasource is NoCloudNet,
# seeded by the serial (and KubeVirt's disk with DISK=1); the custom meta-data
# and the user-data from /v1.
nocloud_ds_checks() {
	local l=$1 con=$2 n
	local seed=${SEED_URL:-http://169.254.169.254/v1/} how="the webhook's DMI serial"
	if [[ ${DISK:-0} == 1 ]]; then
		# KubeVirt's disk kept beside the serial (the default): the local
		# stage's NoCloud refuses an http seed even with the disk there
		# (DataSourceNoCloud.py:160-169 at 22.4.2, 177-186 at 25.1.4); the
		# network stage's reads the serial, then the disk, then the seed
		# (found: dmi, the device, the URL).
		seed="dmi,/dev/vdb,$seed" how="KubeVirt's cidata disk (/dev/vdb) and the webhook's DMI serial, one datasource"
	else
		seed="dmi,$seed"
	fi
	if grep -aqF "DataSourceNoCloudNet [seed=$seed]" "$con"; then
		ok "$l: datasource NoCloudNet [seed=$seed]: $how"
	else
		not_ok "$l: datasource NoCloudNet [seed=$seed]: $how" "$(grep -a 'IMDS-STATUS' "$con" | tr -d '\r')"
	fi
	expect_eq "$l: custom meta-data in the guest (cloud-init query ds.meta_data.*)" "role=vm-test tier=2024-01-01" \
		"$(line "$con" 'IMDS-QUERY boot=1 ' | cut -d' ' -f3-)"
	n="$(grep -acE '^[0-9TZ:-]+ [^ ]+ GET /v1/user-data 200 ' "$SC_LOG")"
	if ((n >= 1)); then ok "$l: sidecar served user-data to the guest"; else not_ok "$l: sidecar served user-data to the guest" "$(tail -n 20 "$SC_LOG")"; fi
}

# openstack_ds_checks <label> <console>: a cloudInitConfigDrive VMI with
# KubeVirt's chassis asset tag (CHASSIS_ASSET, an OpenStack one) and a
# datasource list naming OpenStack after NoCloud: the local stage's NoCloud
# refuses the serial's http seed (DataSourceNoCloud.py:160-169 at 22.4.2) and
# DataSourceOpenStackLocal (its own DHCP) takes the instance from /openstack,
# in the local stage, before any request to /v1 (runcmd's are the first);
# network_data.json is 404 (no interface known by the guest's MAC), so
# cloud-init applies its fallback network config (DHCP on eth0).
openstack_ds_checks() {
	local l=$1 con=$2 got t_v1 n_os
	got="$(line "$con" 'IMDS-RESULT boot=1 ')"
	if [[ $got == *'"datasource":"DataSourceOpenStackLocal'* ]]; then
		ok "$l: datasource DataSourceOpenStackLocal (chassis asset tag '$CHASSIS_ASSET', the cloudInitConfigDrive volume's data from /openstack: ${got#IMDS-RESULT boot=1 })"
	else
		not_ok "$l: datasource DataSourceOpenStackLocal (chassis asset tag '$CHASSIS_ASSET')" "$got" "$(grep -a 'IMDS-STATUS boot=1' "$con" | tr -d '\r')"
	fi
	expect_eq "$l: cloud-init's instance data: platform openstack from the metadata service, instance-id KubeVirt's (cloud-init query v1.*)" \
		"platform=openstack subplatform=metadata (http://169.254.169.254) iid=$VOL_IID" "$(line "$con" 'IMDS-DS boot=1 ' | cut -d' ' -f3-)"
	expect_eq "$l: custom meta-data in the guest (cloud-init query ds.meta_data.meta.*: OpenStack's meta_data.json carries it under meta)" \
		"role=vm-test tier=2024-01-01" "$(line "$con" 'IMDS-QUERY-OS boot=1 ' | cut -d' ' -f3-)"
	# the datasource's crawl: the sidecar's log before the guest's first /v1 request
	t_v1="$(grep -aE -m1 '^[0-9.]+ [0-9TZ:-]+ [^ ]+ (GET|HEAD) /v1/' "$SC_LOG.ts" | cut -d' ' -f1)"
	n_os="$(awk -v t="${t_v1:-9e99}" '$1 < t && / GET \/openstack/' "$SC_LOG.ts" | wc -l)"
	if ((n_os >= 1)) && awk -v t="${t_v1:-9e99}" '$1 < t' "$SC_LOG.ts" | grep -aqE ' GET /openstack/[^ ]*/user_data 200 ' &&
		awk -v t="${t_v1:-9e99}" '$1 < t' "$SC_LOG.ts" | grep -aqE ' GET /openstack/[^ ]*/meta_data.json 200 '; then
		ok "$l: the sidecar's log: the datasource's crawl of /openstack ($n_os GETs, meta_data.json and user_data 200) before the guest's first /v1 request"
	else
		not_ok "$l: the sidecar's log: the datasource's crawl of /openstack (meta_data.json and user_data 200) before the guest's first /v1 request" \
			"$(grep -a ' /openstack' "$SC_LOG" | head -n 20)"
	fi
	if grep -aqE ' GET /openstack/[^ ]*/network_data.json 404 ' "$SC_LOG"; then
		ok "$l: the sidecar's log: network_data.json 404 (no interface known by the guest's MAC: no network data, as a config drive without networkData)"
	else
		not_ok "$l: the sidecar's log: network_data.json 404" "$(grep -a 'network_data' "$SC_LOG" | head -n 10)"
	fi
	got="$(line "$con" 'IMDS-NETCFG boot=1 ' | cut -d' ' -f3-)"
	if [[ $got == 'Applying network configuration from fallback '* ]]; then
		ok "$l: cloud-init applied its fallback network config (DHCP on eth0: no network_data.json; cloud-init.log: $got)"
	else
		not_ok "$l: cloud-init applied its fallback network config (DHCP on eth0: no network_data.json)" "cloud-init.log: $got"
	fi
}

# openstack_checks <label> <console> <instance-id>: what cloud-init's OpenStack
# metadata reader (imds-e2e-openstack in the guest) read from /openstack
openstack_checks() {
	local l=$1 con=$2 iid=$3 got diff
	got="$(line "$con" 'IMDS-OPENSTACK boot=1 ' | cut -d' ' -f3-)"
	if diff="$("$PY" - "$got" "$iid" "$VM_NAME" "$(sha256sum <"$SC_UD" | cut -d' ' -f1)" 2>&1 <<'PYEOF'
import json, sys
got, iid, name, ud = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
want = {"uuid": iid, "hostname": name, "public_keys": ["ops"], "userdata_sha256": ud,
        "networkdata": []}  # the suite's pods have no network-status: no network_data.json
try:
    g = json.loads(got[got.find("{"):])  # the JSON line, after any log line of the reader's
except ValueError:
    print("not JSON: %r" % got)
    sys.exit(1)
bad = ["%s: got %r, want %r" % (k, g.get(k), v) for k, v in want.items() if g.get(k) != v]
meta = g.get("meta") or {}
if meta.get("role") != "vm-test" or meta.get("tier") != "2024-01-01":
    bad.append("meta: got %r, want role and tier from the custom meta-data" % meta)
print("; ".join(bad) if bad else "vendor_data keys %s" % g.get("vendordata"))
sys.exit(1 if bad else 0)
PYEOF
	)"; then
		ok "$l: cloud-init's OpenStack metadata reader crawls /openstack: meta_data (uuid, hostname, public_keys, custom meta), user_data byte-exact, network_data ($diff)"
	else
		not_ok "$l: cloud-init's OpenStack metadata reader crawls /openstack" "$diff" "$(grep -a ' /openstack' "$SC_LOG" | tail -n 20)"
	fi
}

# netcfg_checks <label> <console> <boot>: the network-config the sidecar
# served was applied: the NIC matched by MAC has the extra address (and DHCP's)
netcfg_checks() {
	local l=$1 con=$2 b=$3 addrs
	if grep -aqE ' GET /v1/network-config 200 ' "$SC_LOG"; then
		ok "$l: the guest asked for network-config over HTTP"
	else
		not_ok "$l: the guest asked for network-config over HTTP" "$(grep -a ' GET /v1/' "$SC_LOG" | head -n 20)"
	fi
	addrs="$(line "$con" "IMDS-ADDR boot=$b" | cut -d' ' -f3-)"
	if [[ $POD_NETCFG == "$NETCFG_DHCP_FILE" ]]; then
		return 0 # DHCP alone: guest_addr_check has it
	fi
	if [[ " $addrs " == *" $NETCFG_ADDR "* && " $addrs " == *" $GUEST_ADDR "* ]]; then
		ok "$l: network-config applied on boot $b: eth0 (matched by MAC) has $NETCFG_ADDR beside DHCP's $GUEST_ADDR"
	else
		not_ok "$l: network-config applied on boot $b: eth0 (matched by MAC) has $NETCFG_ADDR beside DHCP's $GUEST_ADDR" \
			"eth0: $addrs" "$(grep -a 'IMDS-ADDR' "$con" | tr -d '\r')"
	fi
}

# timings <label> <console>: boot timeline and first request -> final stage
timings() {
	local l=$1 con=$2 t_kernel t_final t_req
	t_kernel="$(ts_of "$con.ts" 'Linux version')"
	t_final="$(ts_of "$con.ts" 'IMDS-FINAL ')"
	t_req="$(ts_of "$SC_LOG.ts" '^[0-9.]+ [0-9TZ:-]+ [^ ]+ (GET|HEAD) /')"
	B_FINAL="$(fsub "$BOOT_T0" "$t_final")"
	B_REQ="$(fsub "$BOOT_T0" "$t_req")"
	B_REQ_FINAL="$(fsub "$t_req" "$t_final")"
	echo "# $l timeline (s since qemu start, TCG, ${VM_SMP:-1} vCPU): kernel $(fsub "$BOOT_T0" "$t_kernel")," \
		"first request $B_REQ, cloud-init final $B_FINAL, report $(vm_elapsed "$BOOT_T0")"
	echo "# $l: guest's first request -> cloud-init final stage: ${B_REQ_FINAL}s"
}

# BOOT_EXTRA: qemu arguments for every boot of a scenario (KubeVirt's cidata
# disk, scenario_binding's DISK=1); a boot again after an oops keeps them.
BOOT_EXTRA=()
boot_guest() { # <name> <console> [qemu args]
	local name=$1 con=$2
	shift 2
	timestamp "$con" "$con.ts"
	local netdev=""
	[[ $POD_BINDING == passt ]] && netdev="stream,id=net0,server=off,addr.type=unix,addr.path=$PASST_SOCK"
	if ! VM_NETDEV=$netdev VM_MAC=$GUEST_MAC vm_boot "$NS" tap0 "$GUEST_IMG" "${VM_SERIAL:-$SERIAL}" "$con" "${BOOT_EXTRA[@]}" "$@" 2>"$work/boot.err"; then
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

# ssh_login <label>: with the private key whose public half only the sidecar's
# public-keys carried (cloud-init's cc_ssh installed it for the image's default
# user): from the pod to the guest's 10.0.2.2 in masquerade, from the node to the
# pod IP in bridge binding (the guest's own address) and passt (port 22
# forwarded by passt).
ssh_login() {
	local l=$1 out t0=$EPOCHREALTIME from=$NS to=10.0.2.2
	[[ $POD_BINDING == bridge || $POD_BINDING == passt ]] && from=$NS_NODE to=$POD_IP
	[[ $POD_BINDING == masquerade6 ]] && to=fd10:0:2::2
	# shellcheck disable=SC2016 # expanded by the guest's shell
	out=$(ip netns exec "$from" ssh -i "$SSH_KEY" -o BatchMode=yes -o StrictHostKeyChecking=no \
		-o UserKnownHostsFile=/dev/null -o ConnectTimeout=60 -o LogLevel=ERROR "debian@$to" \
		'echo "user=$(id -un) keys=$(grep -c . ~/.ssh/authorized_keys)"' 2>&1)
	if [[ $out == "user=debian keys=1" ]]; then
		ok "$l: SSH login as debian@$to with the key from the Secret ($(vm_elapsed "$t0")s; one authorized key, the bad line skipped)"
	else
		not_ok "$l: SSH login as debian@$to with the key from the Secret" "$out" "$(grep -a 'ssh-keys' "$SC_LOG")"
	fi
}

# guest_addr_check <label> <console>: the address the binding's DHCP gives
# (KubeVirt's DHCP in masquerade and bridge binding, passt's own in passt)
guest_addr_check() {
	local l=$1 con=$2 addrs how
	addrs="$(line "$con" 'IMDS-ADDR boot=1' | cut -d' ' -f3-)"
	case $POD_BINDING in
	masquerade6)
		how="its own IPv6 configuration (the kernel command line's network-config), no IPv4"
		addrs="$(line "$con" 'IMDS-ADDR6 boot=1' | cut -d' ' -f3-) $addrs"
		;;
	bridge) how="KubeVirt's bridge DHCP: the pod IP /32, routes by option 121" ;;
	passt) how="passt's DHCP: the pod's address" ;;
	*) how="KubeVirt's masquerade DHCP" ;;
	esac
	if [[ " $addrs" == *" $GUEST_ADDR"* ]]; then
		ok "$l: guest eth0 has $GUEST_ADDR ($how)"
	else
		not_ok "$l: guest eth0 has $GUEST_ADDR ($how)" "eth0: $addrs" "$(tail -n 20 "$work/$1.dhcp.log" 2>/dev/null)"
	fi
}

# capture_check <label>: what the node's side of the pod saw for .254, from
# before the sidecar's first start to the guest's last request (its restarts
# included): nothing.  Stops the capture (refusals then send from the node).
capture_check() {
	local l=$1 n
	n=$(node_capture_count)
	if [[ $n == 0 ]]; then
		ok "$l: the node saw no packet for 169.254.169.254 (tcpdump on cali0, from before the sidecar's first start to the end of the guest's boot)"
	else
		not_ok "$l: the node saw no packet for 169.254.169.254 (tcpdump on cali0)" "$n packets" "$(node_capture_show)"
	fi
}

# refusals <label>: who else asks for 169.254.169.254 gets nothing: the node
# (a route to .254 via the pod IP), a neighbour pod through the node, and a
# process of the pod, refused at once (passt: answered, being passt's own path;
# docs/sidecar.md says why and what still protects the token).
refusals() {
	local l=$1 out before r
	before=$(grep -ac ' GET ' "$SC_LOG")
	ip -n "$NS_NODE" route replace 169.254.169.254/32 via "$POD_IP" dev cali0
	if out=$(ip netns exec "$NS_NODE" curl -sS --max-time 2 -H 'Metadata: true' http://169.254.169.254/v1/identity 2>&1); then
		not_ok "$l: the node (routing .254 to the pod) gets no answer" "$out"
	else
		ok "$l: the node (routing .254 to the pod) gets no answer (${out#curl: (* })"
	fi
	if node_neighbour "$NS-nb" 10.244.1.9 1 &&
		! out=$(ip netns exec "$NS-nb" curl -sS --max-time 2 -H 'Metadata: true' http://169.254.169.254/v1/identity 2>&1); then
		ok "$l: a neighbour pod (through the node) gets no answer (${out#curl: (* })"
	else
		not_ok "$l: a neighbour pod (through the node) gets no answer" "$out"
	fi
	expect_eq "$l: ... and the sidecar never saw their requests" "$before" "$(grep -ac ' GET ' "$SC_LOG")"
	ip -n "$NS_NODE" route del 169.254.169.254/32
	if [[ $POD_BINDING == passt ]]; then
		out=$(ip netns exec "$NS" setpriv --reuid=107 --regid=107 --clear-groups curl -s -m 3 http://169.254.169.254/healthz 2>&1)
		expect_eq "$l: a process of the pod (UID 107) is answered: passt's own path, indistinguishable (docs/sidecar.md)" OK "$out"
	elif r=$(pod_refused 107); then
		ok "$l: a process of the pod (UID 107) is refused at once ($r)"
	else
		not_ok "$l: a process of the pod (UID 107) is refused at once" "$r"
	fi
}

# v6ll_check <label> <console>: the guest also asked OpenStack's IPv6
# link-local address from its own link-local one (every guest has one: the
# pod's IPv6 is on): the same identity.  A passt guest cannot: passt carries
# no link-local traffic (docs/sidecar.md).
v6ll_check() {
	local l=$1 con=$2 got want
	got="$(between "$con" IMDS-V6LL-BEGIN IMDS-V6LL-END | base64 -d 2>/dev/null)"
	want="$(between "$con" IMDS-IDENTITY-BEGIN IMDS-IDENTITY-END | base64 -d 2>/dev/null)"
	if [[ $POD_BINDING == passt ]]; then
		expect_eq "$l: [fe80::a9fe:a9fe%eth0] not on a passt guest's path (documented)" "" "$got"
	elif [[ -n $got && $got == "$want" ]]; then
		ok "$l: the same identity from [fe80::a9fe:a9fe%eth0], over the guest's IPv6 link-local"
	else
		not_ok "$l: the same identity from [fe80::a9fe:a9fe%eth0]" "got: $got" "want: $want"
	fi
}

# latency <label> <console>: the guest's own request for /v1/identity (curl in
# runcmd: connect and total, through the binding's path) and the sidecar's time
# for the guest's first request (its access log)
latency() {
	local l=$1 con=$2 c t us
	read -r c t < <(line "$con" 'IMDS-LATENCY ' | cut -d' ' -f2-)
	us=$(grep -aE -m1 ' (GET|HEAD) /' "$SC_LOG" | awk '{print $NF}')
	B_LAT="identity from the guest: connect $(awk -v x="${c:-0}" 'BEGIN { printf "%.1f", x * 1000 }') ms, total $(awk -v x="${t:-0}" 'BEGIN { printf "%.1f", x * 1000 }') ms; the sidecar's first answer ${us:-?}"
	if [[ -n $t ]]; then
		ok "$l: $B_LAT"
	else
		not_ok "$l: the guest measured its request for /v1/identity" "$(line "$con" 'IMDS-LATENCY')"
	fi
}

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
	case $binding in
	bridge) GUEST_ADDR=$POD_IP/32 ;;
	passt) GUEST_ADDR=$POD_IP/ ;;
	masquerade6) GUEST_ADDR=fd10:0:2::2/120 ;;
	*) GUEST_ADDR=10.0.2.2/24 ;;
	esac
	VM_OVERLAY="$work/$d/disk.qcow2" boot_guest "$l" "$con" || return 1
	first_request "$l" "$con" "$work/$d/disk.qcow2" || return 1
	if [[ $binding == bridge || $binding == passt ]]; then
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

# reboot_checks <label> <console>: a second boot on the same disk: same instance,
# so SSH host keys unchanged, runcmd not run again, hostname kept.  Sets M_BOOT2.
reboot_checks() {
	local l=$1 con=$2
	wait_mark "$l: root shell on ttyS0 before the reboot" "$con" "root@$VM_NAME:~# " 1 60 || return 1
	local t1=$EPOCHREALTIME faults kernel=2 deadline=$((SECONDS + BOOT_TIMEOUT))
	faults=$(grep -acE "$GUEST_KERNEL_FAULT" "$con")
	vm_reboot
	# An oops or stall of the guest's kernel in boot 2 is the emulator's, as in
	# first_request (seen in the full run: "Oops: int3" in sched_clock_cpu, 6 s
	# into boot 2, before any disk write): the machine is reset once, saying
	# so, and boot 2 is then the third kernel on the console.
	while ! grep -aq 'IMDS-REPORT-DONE boot=2' "$con" && ((SECONDS < deadline)); do
		if ((kernel == 2)) && (($(grep -acE "$GUEST_KERNEL_FAULT" "$con") > faults)); then
			echo "# $l: the guest's kernel oopsed or stalled in boot 2 (TCG; not the sidecar's doing): reset once"
			grep -aE -A3 "$GUEST_KERNEL_FAULT" "$con" | tail -n 8 | cmt
			vm_qmp "$VM_QMP" '{"execute":"system_reset"}' >/dev/null
			kernel=3
		fi
		sleep 1
	done
	wait_mark "$l: boot 2 finished (report printed)" "$con" 'IMDS-REPORT-DONE boot=2' 1 1 || return 1
	local t_k2 t_f2
	t_k2="$(ts_of "$con.ts" 'Linux version' "$kernel")"
	t_f2="$(ts_of "$con.ts" 'IMDS-FINAL ' 2)"
	M_BOOT2="$(fsub "$t_k2" "$t_f2")"
	echo "# $l boot 2: reboot typed -> kernel $(fsub "$t1" "$t_k2")s, kernel -> cloud-init final ${M_BOOT2}s"
	ok "$l: boot 2 (same disk) kernel to cloud-init final ${M_BOOT2}s"
	local k1 k2
	k1="$(line "$con" 'IMDS-HOSTKEYS boot=1 ' | cut -d' ' -f3- | tr ' ' '\n' | grep .)"
	k2="$(line "$con" 'IMDS-HOSTKEYS boot=2 ' | cut -d' ' -f3- | tr ' ' '\n' | grep .)"
	if [[ -n $k1 && $k1 == "$k2" ]]; then
		ok "$l: SSH host keys unchanged on boot 2 ($(wc -l <<<"$k1") keys)"
		printf '%s\n' "$k1" | cmt
	else
		not_ok "$l: SSH host keys unchanged on boot 2" "boot 1:" "$k1" "boot 2:" "$k2"
	fi
	# ...and boot 1 did replace the keys baked into the image (cc_ssh is per
	# instance: the check above would prove nothing if it never ran)
	local baked
	if command -v debugfs >/dev/null && command -v ssh-keygen >/dev/null &&
		debugfs -R 'cat /etc/ssh/ssh_host_ed25519_key.pub' "$GUEST_IMG/rootfs.img" >"$work/baked.pub" 2>/dev/null &&
		baked="$(ssh-keygen -lf "$work/baked.pub" 2>/dev/null | awk '{print $NF "=" $2}')" && [[ -n $baked ]]; then
		if [[ -n $k1 ]] && ! grep -qxF -- "$baked" <<<"$k1"; then
			ok "$l: boot 1 regenerated the image's SSH host keys (cc_ssh, per instance)"
		else
			not_ok "$l: boot 1 regenerated the image's SSH host keys (cc_ssh, per instance)" "image: $baked" "boot 1:" "$k1"
		fi
	fi
	expect_eq "$l: runcmd not run again on boot 2 (same instance-id)" 1 "$(grep -ac 'IMDS-MARK runcmd' "$con")"
	expect_eq "$l: hostname kept on boot 2" "hostname=$VM_NAME" "$(line "$con" 'IMDS-REPORT-DONE boot=2' | awk '{print $3}')"
	local got
	got="$(line "$con" 'IMDS-STATUS boot=2 status:' | awk '{print $NF}')"
	expect_eq "$l: cloud-init status done on boot 2" "done" "$got"
}

# restart_during_boot <label> <console>: the sidecar dies twice while the
# guest's cloud-init runs (issue 14): in the init stage, as soon as it served
# the meta-data (the crawl's three requests come within a millisecond, so the
# kill lands after them, while cloud-init applies them), and in the final
# stage, while the guest polls every 20 ms (runcmd imds-e2e-poll). Both times
# it is started again as kubelet restarts a native sidecar; the identity and
# token the guest fetches after that come from the restarted process.
restart_during_boot() {
	local l=$1 con=$2 t
	if ! wait_log "$SC_LOG" ' GET /v1/meta-data 200 ' "$BOOT_TIMEOUT"; then
		not_ok "$l: guest asked for meta-data" "$(console_tail "$con")" "$(tail -n 20 "$SC_LOG")"
		return 1
	fi
	crash_restart "$l" "in the init stage, once meta-data was served"
	if ! wait_log "$con" 'IMDS-POLL-START' "$BOOT_TIMEOUT"; then
		not_ok "$l: guest's runcmd started polling" "$(console_tail "$con")" "$(tail -n 20 "$SC_LOG")"
		return 1
	fi
	crash_restart "$l" "while the guest polls, in runcmd"
	R2_EXEC=$T_EXEC
	if ! wait_log "$con" 'IMDS-POLL-(BACK|TIMEOUT)' 90; then
		not_ok "$l: guest's poll ended" "$(console_tail "$con")"
		return 1
	fi
	# The console line can come before the timestamped copy of the sidecar's
	# log has the answer (it is polled every 50 ms): give it a few seconds.
	local i
	for ((i = 0; i < 100; i++)); do
		t=$(first_served_after "$R2_EXEC" ' GET /v1/meta-data 200 ')
		[[ -n $t ]] && break
		sleep 0.05
	done
	R2_MS=-
	[[ -n $t ]] && R2_MS=$(awk -v a="${R2_EXEC/,/.}" -v b="$t" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
	# Two clocks: the host's (the restart to the copy of the sidecar's log
	# line, stamped by a copier polling every 50 ms) and the guest's own
	# (unanswered_ms: its first failed request to its first answer, which
	# includes the RESTART_GAP the sidecar was down). Either within bound
	# shows the sidecar answered; both out of bound fails, with both figures
	# in the title (a CI summary shows only that).
	local back g_ms g_bound
	back="$(line "$con" 'IMDS-POLL-BACK')"
	g_ms=$(sed -n 's/.*unanswered_ms=\([0-9]*\).*/\1/p' <<<"$back")
	g_bound=$(awk -v g="$RESTART_GAP" 'BEGIN { printf "%.0f", g * 1000 + 1000 }')
	if [[ $R2_MS != - ]] && ((R2_MS < 1000)); then
		ok "$l: the polling guest served again ${R2_MS} ms after the restart (${back#* })"
	elif [[ -n $g_ms ]] && ((g_ms < g_bound)); then
		ok "$l: the polling guest served again, ${g_ms} ms unanswered on its own clock (< ${g_bound} ms, the ${RESTART_GAP} s gap included; host clock: ${R2_MS} ms, the log copier's stamp)"
	else
		not_ok "$l: the polling guest served again within 1 s of the restart (host: ${R2_MS} ms; guest: ${g_ms:--} ms unanswered, bound ${g_bound})" \
			"$(line "$con" 'IMDS-POLL-')" "$(tail -n 20 "$SC_LOG")"
	fi
}

# --- 6. link-local scenario ----------------------------------------------------------------
scenario_linklocal() {
	local l="$BOOKWORM link-local" con="$work/linklocal/console.log" netcfg
	# not in $(...): pod_up starts background processes and records them
	if ! pod_up linklocal linklocal "$USER_DATA_POLL" >"$work/pod_up.out" 2>&1; then
		not_ok "$l: pod netns, tap, no DHCP, arp_ignore=8, imds-server run as injected" "$(cat "$work/pod_up.out")"
		return 1
	fi
	ok "$l: pod netns, tap, no DHCP, arp_ignore=8, imds-server run as injected"
	# cloud-init's network config from the kernel command line (it wins over
	# the datasource's): eth0 169.254.77.7/16 only, no gateway, no DHCP.
	netcfg="$(printf '%s' '{version: 1, config: [{type: physical, name: eth0, subnets: [{type: static, address: 169.254.77.7/16}]}]}' | base64 -w0)"
	VM_OVERLAY="$work/linklocal/disk.qcow2" VM_APPEND="network-config=$netcfg" boot_guest "$l" "$con" || return 1
	VM_APPEND="network-config=$netcfg" first_request "$l" "$con" "$work/linklocal/disk.qcow2" || return 1
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
	migrate_checks "$l" linklocal "$USER_DATA_POLL"
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
NETCFG6="$(printf '%s' '{version: 1, config: [{type: physical, name: eth0, mac_address: "52:54:00:5e:00:02", subnets: [{type: static6, address: "fd10:0:2::2/120", gateway: "fd10:0:2::1"}]}]}' | base64 -w0)"

# Debian 13 with a network-config of DHCP alone (passt: no DHCPv6 to wait for)
NETCFG_DHCP_FILE=$work/network-config-dhcp
sed '/addresses:/d' "$NETCFG_FILE" >"$NETCFG_DHCP_FILE"

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
# Lifecycle events (issue 31, docs/sidecar.md): the pods carry the VMI's
# evictionStrategy LiveMigrate as the webhook records it (pod_up); the migration
# is an eviction's, so the source pod's eviction-in-progress file flips once the
# guest's long polls wait, before the target pod and the QMP migrate
# (virt-controller annotates the source pod in the reconcile that creates the
# migration); the target pod's migration-target-ready file is written when QMP
# says completed (KubeVirt annotates it once the domain runs there).
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
	local s_ip=$POD_IP s_mac=$POD_MAC t_con=$work/$2-target/console.log t_run out st i
	S_CON=$work/$d/console.log S_PASST=${PASST_SOCK:-}
	[[ $POD_BINDING == passt ]] || S_PASST=""
	local t0=$EPOCHREALTIME
	# The guest's side first, while it runs in the source: it prints READY once
	# its session, password, first answers and waiting request are in place.
	wait_mark "$l: root shell on ttyS0" "$S_CON" "root@$VM_NAME:~# " 1 60 || return 1
	for i in 1 2; do
		vm_console_send 'systemd-run --no-block --unit=imds-e2e-migrate /usr/local/sbin/imds-e2e-migrate' >/dev/null 2>&1
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
		ok "$l: target pod (another node, pod IP 10.244.2.6) serving; its sidecar's env from the webhook's patch of the migration target pod is the source's but for IMDS_POD_NAME ($(wc -l <"$SC_ENV") vars)"
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
	mig_results "$l" "$s_log" "$(fsub "$t0" "$EPOCHREALTIME")" "$total" "$down"
	mig_lifecycle "$l" "$s_log" "$t_flip"
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
	if [[ -n $gap ]] && ((gap < 1000)); then
		ok "$l: served by the target ${gap} ms after the source's last answer, on the guest's clock (paused during the switch-over; $(mig_kv "$poll" fails) requests unanswered: $(mig_kv "$poll" kinds)); host clock, source's last answer -> target's first: ${h_gap} ms, qemu downtime ${down} ms"
	else
		not_ok "$l: served by the target within 1 s of the source's last answer" "$poll" "host: ${h_gap} ms"
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
	MIG_SUM="migration ${secs}s in the suite (QMP total ${total} ms, downtime ${down} ms), unanswered ${gap} ms on the guest's clock, ${MIG_HGAP} ms on the host's"
	SUMMARY+=("$l: $MIG_SUM")
}

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
scenario_continuity() { # <dir> <guest's label>
	local d=$1 l="$2 continuity (KubeVirt's NoCloud disk, then the service)"
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
	if ! pod_up "$d" masquerade >"$work/pod_up.out" 2>&1; then
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

L_BOOT=- L_REQ_FINAL=- R2_MS=-
for s in $SCENARIOS; do
	BOOT_EXTRA=()
	case $s in
	masquerade) GUEST_IMG=$BOOKWORM_IMG scenario_binding masquerade "$BOOKWORM masquerade" masquerade 1 ;;
	istio)
		# its data from a Secret-backed cloudInitConfigDrive volume, read by
		# cloud-init's OpenStack datasource: the VMI's chassis asset tag says
		# OpenStack, and the kernel command line lists OpenStack after NoCloud
		# (the image's list is NoCloud's alone: hack/build-guest-image.sh)
		GUEST_IMG=$BOOKWORM_IMG VOLUME=configdrive-secret CHASSIS_ASSET='OpenStack Nova' \
			VM_APPEND='cc: datasource_list: [NoCloud, OpenStack, None] end_cc' \
			scenario_binding istio "$BOOKWORM masquerade + Istio" istio 1
		;;
	linklocal) GUEST_IMG=$BOOKWORM_IMG scenario_linklocal ;;
	continuity) GUEST_IMG=$BOOKWORM_IMG scenario_continuity continuity "$BOOKWORM" ;;
	bridge) GUEST_IMG=$BOOKWORM_IMG VOLUME=nocloud-secret DISK=1 scenario_binding bridge "$BOOKWORM bridge binding" bridge 0 ;;
	trixie | bridge-trixie | passt | ipv6 | continuity-trixie)
		if [[ -z $TRIXIE_IMG ]]; then
			not_ok "$s: the trixie guest image"
			continue
		fi
		case $s in
		trixie) GUEST_IMG=$TRIXIE_IMG POD_NETCFG=$NETCFG_FILE VM_DHCP6=1 scenario_binding trixie "$TRIXIE masquerade" masquerade 1 ;;
		continuity-trixie) GUEST_IMG=$TRIXIE_IMG scenario_continuity continuity-trixie "$TRIXIE" ;;
		bridge-trixie) GUEST_IMG=$TRIXIE_IMG POD_NETCFG=$NETCFG_FILE VOLUME=nocloud-secret DISK=1 scenario_binding bridge-trixie "$TRIXIE bridge binding" bridge 1 ;;
		passt)
			# passt sandboxes itself in a user namespace it creates after dropping
			# to UID 107 (isolate_user(), passt's isolation.c): a machine that
			# cannot (a chroot: user_namespaces(7), EPERM) cannot run it at all.
			if ! err=$(setpriv --reuid=107 --regid=107 --clear-groups unshare --user true 2>&1); then
				skip "$TRIXIE passt: boot and migration" "this machine cannot create a user namespace as UID 107, which passt's sandbox needs (unshare --user: ${err:-failed}; a chroot cannot, user_namespaces(7))"
				continue
			fi
			GUEST_IMG=$TRIXIE_IMG POD_NETCFG=$NETCFG_DHCP_FILE scenario_binding passt "$TRIXIE passt" passt 0
			;;
		ipv6)
			if [[ -z $SERIAL6 ]]; then
				not_ok "ipv6: the webhook's IPv6 serial"
				continue
			fi
			# An IPv6-only guest: fd10:0:2::2/120 via fd10:0:2::1 from the kernel
			# command line (KubeVirt's DHCPv6 gives no route and it sends no
			# router advertisement); the seed http://[fd00:ec2::254]/v1/.
			GUEST_IMG=$TRIXIE_IMG VM_SERIAL=$SERIAL6 SEED_URL='http://[fd00:ec2::254]/v1/' NODE_V6=1 \
				VM_APPEND="network-config=$NETCFG6" scenario_binding ipv6 "$TRIXIE IPv6-only" masquerade6 0
			;;
		esac
		;;
	*) not_ok "unknown scenario $s" ;;
	esac
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
