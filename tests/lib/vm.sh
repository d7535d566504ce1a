# shellcheck shell=bash
# tests/lib/vm.sh — boot the test guest (hack/build-guest-image.sh) under qemu
# (TCG) on a tap in a "pod" network namespace, as KubeVirt does. Source it:
#
#   . tests/lib/vm.sh
#   vm_require_tools
#   vm_pod_create  "$ns" k6t-eth0 10.0.2.1/24       # netns + bridge (optional helper)
#   vm_tap_create  "$ns" tap0 k6t-eth0
#   vm_dhcp_start  "$ns" k6t-eth0 "$dir/dnsmasq.log"  # guest 10.0.2.2/24, gw 10.0.2.1
#   VM_MAC=52:54:00:12:34:56 vm_boot "$ns" tap0 "$image_dir" \
#       'ds=nocloud;s=http://169.254.169.254/v1/;dsmode=net' "$dir/console.log"
#   vm_wait_for "$dir/console.log" 'Cloud-init v\. .* finished' 300 "$VM_PIDFILE"
#   vm_stop; vm_dhcp_stop; vm_pod_delete "$ns"
#
# Also: vm_wait_for_count (the n-th match, e.g. after a reboot), vm_reboot and
# vm_poweroff (clean, typed on the guest's root console), vm_console_send,
# vm_monitor (qemu HMP), vm_qmp (QMP), vm_elapsed, vm_tap_delete. Tests see tests/lib/vm_smoke.sh.
#
# Every function needs root. Nothing here touches the host's own network: all
# links are made inside the given namespace. Use a unique netns name per run
# (e.g. suffixed with $$): interface names (k6t-eth0, tap0) are per netns.
#
# Kernel command line: console=ttyS0 root=/dev/vda rw net.ifnames=0
# mitigations=off, plus $VM_APPEND. The guest finds its NoCloud seed in the
# DMI serial (-smbios type=1,serial=...); cloud-init 22.4 needs ';dsmode=net'
# in it for an http seed, or it drops the data (docs/annotations.md).
#
# vm_boot options (environment, read at each call):
#   VM_MAC      guest MAC (default 52:54:00:00:00:02)
#   VM_MEM      MiB (default 512)
#   VM_SMP      vCPUs (default 1: a VMI without spec.domain.cpu, CPU request or
#               limit gets one socket of one core of one thread, KubeVirt's
#               hardware.GetCPUTopology; and qemu 7.2's multi-threaded TCG
#               faulted guests with 2: 'Oops: int3' in text_poke'd code, an
#               NX fault after a migration, RCU stalls, ~1 boot in 40 in CI-like
#               runs, while 1 vCPU costs ~10% of the boot: 116 s vs 104 s to
#               cloud-init final, link-local scenario, 2026-11-27)
#   VM_CPU      qemu -cpu model (default qemu64: SSE2 code paths, which TCG
#               runs faster than the AVX2 ones glibc picks with -cpu max)
#   VM_OVERLAY  path of a qcow2 overlay over the image: created when missing,
#               reused when present, so the disk survives qemu restarts. Unset:
#               the image is opened with snapshot=on (throwaway; it still
#               survives a reboot *inside* one qemu run).
#   VM_APPEND   extra kernel command line
#   VM_NETDEV   qemu -netdev spec (id net0) instead of the tap (e.g. passt's
#               stream socket: stream,id=net0,server=off,addr.type=unix,addr.path=S)
#   VM_QEMU     qemu binary (default qemu-system-x86_64)
#   VM_NIC_OPTS more ,key=value options of the virtio-net-pci device (e.g.
#               ,romfile= for a vhost-user back end: no iPXE option ROM)
#   VM_TAP_QUEUES  N > 1: open the tap with N queues (queues=N, and the NIC
#               mq=on,vectors=2N+2, as libvirt does for <driver queues=N/>):
#               for a multi-queue tap (KubeVirt's networkInterfaceMultiqueue);
#               unset, one queue, which only a single-queue tap takes
# Remaining vm_boot arguments are passed to qemu as they are.
#
# After vm_boot: VM_PID, VM_PIDFILE, VM_RUN_DIR (monitor + console sockets),
# VM_MONITOR, VM_QMP (QMP, as libvirt talks to qemu: vm_qmp), VM_CONSOLE_SOCK,
# VM_CONSOLE_LOG, VM_BOOT_START ($EPOCHREALTIME).
# The console log is the guest's ttyS0 (kernel, systemd, cloud-init, a root
# shell auto-logged-in on ttyS0 that vm_console_send can type into).

# Debian's python (a pyenv shim may come first in PATH).
VM_PY=/usr/bin/python3

vm_log() { printf '[vm] %s\n' "$*" >&2; }

# _vm_pid_is <pid> <name>: the pid is alive and still runs <name> (never
# signal a recycled pid).
_vm_pid_is() {
  [[ $1 =~ ^[0-9]+$ ]] && grep -qa -- "$2" "/proc/$1/cmdline" 2>/dev/null
}

# vm_require_tools: install what booting needs, when missing (idempotent).
vm_require_tools() {
  local need=()
  command -v "${VM_QEMU:-qemu-system-x86_64}" >/dev/null || need+=(qemu-system-x86)
  command -v qemu-img >/dev/null || need+=(qemu-utils)
  command -v dnsmasq >/dev/null || need+=(dnsmasq-base)
  command -v ip >/dev/null || need+=(iproute2)
  [[ -x $VM_PY ]] || need+=(python3)
  if ((${#need[@]})); then
    vm_log "installing: ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || return 1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${need[@]}" >&2 || return 1
  fi
  [[ -e /dev/net/tun ]] || { vm_log "no /dev/net/tun"; return 1; }
}

# vm_pod_create <netns> <bridge> <cidr>: a netns with lo up and a bridge
# carrying <cidr> (KubeVirt masquerade: k6t-eth0 10.0.2.1/24).
vm_pod_create() {
  local ns=$1 br=$2 cidr=$3
  ip netns add "$ns" || return 1
  ip -n "$ns" link set lo up &&
    ip -n "$ns" link add "$br" type bridge &&
    ip -n "$ns" addr add "$cidr" dev "$br" &&
    ip -n "$ns" link set "$br" up
}

# vm_pod_delete <netns>: delete the netns (its bridge and taps go with it).
vm_pod_delete() {
  ip netns delete "$1" 2>/dev/null || true
}

# vm_tap_create <netns> <tap> <bridge>: a tap in <netns>, enslaved to <bridge>
# with the bridge's MTU, up.
vm_tap_create() {
  local ns=$1 tap=$2 br=$3 mtu
  # sysfs as seen from inside the netns (ip netns exec remounts /sys)
  mtu="$(ip netns exec "$ns" cat "/sys/class/net/$br/mtu")" || return 1
  ip -n "$ns" tuntap add dev "$tap" mode tap &&
    ip -n "$ns" link set "$tap" mtu "$mtu" &&
    ip -n "$ns" link set "$tap" master "$br" &&
    ip -n "$ns" link set "$tap" up
}

# vm_tap_delete <netns> <tap>
vm_tap_delete() {
  ip -n "$1" link delete "$2" 2>/dev/null || true
}

# vm_dhcp_start <netns> <bridge> <logfile> [guest-ip] [router]: dnsmasq as
# the pod's DHCP server (DHCP only, no DNS, no lease file, one address).
# VM_DHCP6=1: DHCPv6 as well. Sets VM_DNSMASQ_PIDFILE.
vm_dhcp_start() {
  local ns=$1 br=$2 logf=$3 ip=${4:-10.0.2.2} router=${5:-10.0.2.1} v6=()
  logf="$(realpath -m "$logf")"
  VM_DNSMASQ_PIDFILE="$logf.pid"
  : >"$logf"
  if [[ ${VM_DHCP6:-0} == 1 ]]; then
    # DHCPv6 too, announced by router advertisements (fd10:0:2::2, as
    # KubeVirt's dual-stack masquerade): cloud-init 24+'s fallback network
    # config asks for DHCPv6 as well, and a guest waits for it to be online.
    ip -n "$ns" -6 addr add fd10:0:2::1/64 dev "$br" nodad || { vm_log "bridge IPv6 address"; return 1; }
    v6=(--dhcp-range="fd10:0:2::2,fd10:0:2::2,64,1h" --enable-ra)
  fi
  ip netns exec "$ns" dnsmasq \
    --conf-file=/dev/null --port=0 \
    --interface="$br" --bind-interfaces --except-interface=lo \
    --dhcp-range="$ip,$ip,255.255.255.0,1h" "${v6[@]}" \
    --dhcp-option=option:router,"$router" \
    --dhcp-leasefile=/dev/null --leasefile-ro --dhcp-authoritative --no-ping \
    --log-dhcp --log-facility="$logf" \
    --user=root --group=root --pid-file="$VM_DNSMASQ_PIDFILE" \
    || { vm_log "dnsmasq failed"; return 1; }
}

# vm_dhcp_stop [pidfile]
vm_dhcp_stop() {
  local pf=${1:-${VM_DNSMASQ_PIDFILE:-}} pid
  [[ -n $pf && -s $pf ]] || return 0
  pid="$(cat "$pf")"
  _vm_pid_is "$pid" dnsmasq && kill "$pid" 2>/dev/null
  rm -f "$pf"
}

_vm_qemu_escape() { printf '%s' "${1//,/,,}"; }

# vm_boot <netns> <tap> <image-dir> <serial> <console-log> [qemu args...]
vm_boot() {
  local ns=$1 tap=$2 img=$3 serial=$4 con=$5
  shift 5
  local mac=${VM_MAC:-52:54:00:00:00:02} mem=${VM_MEM:-512} smp=${VM_SMP:-1}
  local qemu=${VM_QEMU:-qemu-system-x86_64} drive f
  img="$(realpath "$img")" || return 1
  con="$(realpath -m "$con")"
  for f in rootfs.img vmlinuz initrd.img; do
    [[ -s $img/$f ]] || { vm_log "no $img/$f (run hack/build-guest-image.sh)"; return 1; }
  done
  # The uncompressed kernel boots through its PVH entry: no decompression.
  local kernel=$img/vmlinuz
  [[ -s $img/vmlinux ]] && kernel=$img/vmlinux
  # Unix socket paths are limited to 107 bytes: keep them short.
  VM_RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/imds-vm.XXXXXX")" || return 1
  VM_PIDFILE="$VM_RUN_DIR/qemu.pid"
  VM_MONITOR="$VM_RUN_DIR/mon.sock"
  VM_QMP="$VM_RUN_DIR/qmp.sock"
  VM_CONSOLE_SOCK="$VM_RUN_DIR/con.sock"
  # shellcheck disable=SC2034 # for the caller
  VM_CONSOLE_LOG="$con"

  if [[ -n ${VM_OVERLAY:-} ]]; then
    VM_OVERLAY="$(realpath -m "$VM_OVERLAY")"
    if [[ ! -e $VM_OVERLAY ]]; then
      qemu-img create -q -f qcow2 -F raw -b "$img/rootfs.img" "$VM_OVERLAY" >&2 || return 1
    fi
    drive="file=$(_vm_qemu_escape "$VM_OVERLAY"),format=qcow2,if=virtio,cache=writeback"
  else
    drive="file=$(_vm_qemu_escape "$img/rootfs.img"),format=raw,if=virtio,snapshot=on,cache=unsafe"
  fi

  local q='' mq=''
  if [[ -z ${VM_NETDEV:-} && ${VM_TAP_QUEUES:-1} -gt 1 ]]; then
    q=,queues=$VM_TAP_QUEUES mq=,mq=on,vectors=$((2 * VM_TAP_QUEUES + 2))
  fi
  local append="console=ttyS0 root=/dev/vda rw net.ifnames=0 mitigations=off ${VM_APPEND:-}"
  local args=(
    -name imds-guest
    -accel tcg -machine pc -cpu "${VM_CPU:-qemu64}" -smp "$smp" -m "$mem"
    -nodefaults -no-user-config -display none
    -kernel "$kernel" -initrd "$img/initrd.img" -append "$append"
    -drive "$drive"
    -netdev "${VM_NETDEV:-tap,id=net0,ifname=$tap,script=no,downscript=no$q}"
    -device "virtio-net-pci,netdev=net0,mac=$mac$mq${VM_NIC_OPTS:-}"
    -device virtio-rng-pci
    -smbios "type=1,serial=$(_vm_qemu_escape "$serial")"
    -chardev "socket,id=con0,path=$VM_CONSOLE_SOCK,server=on,wait=off,logfile=$(_vm_qemu_escape "$con"),logappend=off"
    -serial chardev:con0
    -monitor "unix:$VM_MONITOR,server=on,wait=off"
    -qmp "unix:$VM_QMP,server=on,wait=off"
    -pidfile "$VM_PIDFILE" -daemonize
    "$@"
  )
  VM_BOOT_START=$EPOCHREALTIME
  if ! ip netns exec "$ns" "$qemu" "${args[@]}" >&2; then
    vm_log "qemu failed to start"
    rm -rf "$VM_RUN_DIR"
    return 1
  fi
  VM_PID="$(cat "$VM_PIDFILE")"
  vm_log "qemu pid $VM_PID in netns $ns (tap $tap, mac $mac, console $con)"
}

# vm_wait_for <log> <regex> <timeout-seconds> [pidfile]: wait until an
# extended regex matches a line of <log>. 0: matched; 1: timed out; 2: qemu
# (given by pidfile, else $VM_PIDFILE when set) died first.
vm_wait_for() {
  vm_wait_for_count "$1" "$2" 1 "$3" "${4:-}"
}

# vm_wait_for_count <log> <regex> <n> <timeout-seconds> [pidfile]: the same,
# until at least <n> lines match (e.g. the second boot's "Linux version" in
# a console log that spans a guest reboot).
vm_wait_for_count() {
  local logf=$1 re=$2 n=$3 timeout=$4 pf=${5:-${VM_PIDFILE:-}} pid=""
  local deadline=$((SECONDS + timeout))
  [[ -n $pf && -s $pf ]] && pid="$(cat "$pf")"
  _vm_count() { grep -Eac -- "$re" "$logf" 2>/dev/null || true; }
  while :; do
    if (($(_vm_count) >= n)); then
      return 0
    fi
    if [[ -n $pid ]] && ! _vm_pid_is "$pid" qemu; then
      (($(_vm_count) >= n)) && return 0
      vm_log "qemu (pid $pid) exited while waiting for /$re/ (x$n) in $logf"
      return 2
    fi
    if ((SECONDS >= deadline)); then
      vm_log "timed out after ${timeout}s waiting for /$re/ (x$n) in $logf"
      return 1
    fi
    sleep 0.2
  done
}

# vm_console_send <text>: type <text> and Enter on the guest's ttyS0 (root
# is auto-logged-in there once the boot has reached getty).
vm_console_send() {
  local sock=${VM_CONSOLE_SOCK:?no VM booted}
  "$VM_PY" - "$sock" "$1" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\r")
time.sleep(0.2)
s.close()
EOF
}

# vm_monitor <hmp-command>: run a qemu monitor command (system_powerdown,
# system_reset, info status, ...) and print its answer.
vm_monitor() {
  local sock=${VM_MONITOR:?no VM booted}
  "$VM_PY" - "$sock" "$1" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.settimeout(2)
def drain():
    out = b""
    try:
        while not out.endswith(b"(qemu) "):
            chunk = s.recv(4096)
            if not chunk:
                break
            out += chunk
    except socket.timeout:
        pass
    return out
drain()
s.sendall(sys.argv[2].encode() + b"\n")
sys.stdout.write(drain().decode(errors="replace").replace("(qemu) ", ""))
s.close()
EOF
}

# vm_stop [pidfile] [grace-seconds]: stop qemu (SIGTERM, then SIGKILL after
# the grace period, default 5 s) and remove its run dir. Safe to call twice.
vm_stop() {
  local pf=${1:-${VM_PIDFILE:-}} grace=${2:-5} pid rundir
  [[ -n $pf ]] || return 0
  rundir="$(dirname "$pf")"
  if [[ -s $pf ]]; then
    pid="$(cat "$pf")"
    if _vm_pid_is "$pid" qemu; then
      kill "$pid" 2>/dev/null || true
      local i
      for ((i = 0; i < grace * 10; i++)); do
        _vm_pid_is "$pid" qemu || break
        sleep 0.1
      done
      _vm_pid_is "$pid" qemu && kill -KILL "$pid" 2>/dev/null
    fi
  fi
  case "$rundir" in */imds-vm.*) rm -rf "$rundir" ;; esac
}

# vm_poweroff [timeout]: a clean guest shutdown (the disk is then
# consistent, e.g. before booting a VM_OVERLAY again), then qemu exits; the
# guest has no logind (no dbus), so the ACPI button would do nothing: the
# command is typed on the root console. vm_stop after the timeout (default 60).
vm_poweroff() {
  local timeout=${1:-60} pid
  [[ -s ${VM_PIDFILE:-} ]] || return 0
  pid="$(cat "$VM_PIDFILE")"
  vm_console_send 'systemctl poweroff' || true
  local deadline=$((SECONDS + timeout))
  while _vm_pid_is "$pid" qemu && ((SECONDS < deadline)); do
    sleep 0.2
  done
  vm_stop "$VM_PIDFILE"
}

# vm_reboot: a clean guest reboot, typed on the root console; qemu keeps
# running, and the guest comes back with the same disk (overlay or snapshot)
# and the same console log. Wait with vm_wait_for_count <log> <re> 2 ...
vm_reboot() {
  vm_console_send 'systemctl reboot'
}

# vm_elapsed [start]: seconds since start (default VM_BOOT_START), 1 decimal.
vm_elapsed() {
  local start=${1:-$VM_BOOT_START} now=$EPOCHREALTIME
  # EPOCHREALTIME follows LC_NUMERIC: 1700000000,123456 in some locales
  awk -v a="${start/,/.}" -v b="${now/,/.}" 'BEGIN { printf "%.1f", b - a }'
}

# vm_qmp <socket> <command-json>...: run QMP commands in order (after
# qmp_capabilities) on a qemu's QMP socket (VM_QMP of vm_boot), as libvirt
# talks to qemu; prints each command's "return" as one JSON line.  Fails,
# with qemu's error, at the first command that fails.
vm_qmp() {
  "$VM_PY" - "$@" <<'EOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
f = s.makefile("rwb")
def answer():
    while True:
        line = f.readline()
        if not line:
            sys.exit("qmp: connection closed")
        msg = json.loads(line)
        if "return" in msg or "error" in msg:
            return msg
json.loads(f.readline())  # the greeting
for i, cmd in enumerate(['{"execute": "qmp_capabilities"}'] + sys.argv[2:]):
    f.write(cmd.encode() + b"\n")
    f.flush()
    msg = answer()
    if "error" in msg:
        sys.exit("qmp: %s: %s" % (cmd, msg["error"].get("desc")))
    if i:
        print(json.dumps(msg["return"], sort_keys=True))
EOF
}
