#!/usr/bin/env bash
# Proof that the guest image and tests/lib/vm.sh work (root):
#   a "pod" netns with bridge k6t-eth0 (10.0.2.1/24), a tap, dnsmasq for DHCP,
#   a throwaway stand-in NoCloud server (python3 http.server on 10.0.2.1:80),
#   the guest booted with serial 'ds=nocloud;s=http://10.0.2.1/v1/;dsmode=net'.
# Passes when the guest got 10.0.2.2 by DHCP, cloud-init found the NoCloud
# data (hostname from meta-data, runcmd from user-data) and finished without
# errors. Prints the boot timeline. Cleans up everything on exit or Ctrl-C.
#
#   tests/lib/vm_smoke.sh            # IMDS_CACHE_DIR, VM_SMP, VM_MEM honoured
#   KEEP=1 tests/lib/vm_smoke.sh     # keep the work dir (logs) after the run
#   VM_SMOKE_TIMEOUT=600             # per-stage timeout (default 300 s)
#   tests/lib/vm_smoke.sh --reboot   # also: disk in a qcow2 overlay; a guest
#       reboot inside the same qemu, then a clean poweroff and a new qemu on
#       the same overlay; checks the instance survives (hostname, runcmd once)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=tests/lib/vm.sh
. "$here/vm.sh"

[[ $(id -u) -eq 0 ]] || { echo "vm_smoke: must run as root" >&2; exit 1; }
reboot_test=0
case "${1:-}" in
  --reboot) reboot_test=1 ;;
  "") ;;
  *) echo "usage: $0 [--reboot]" >&2; exit 2 ;;
esac

ns="imds-smoke-$$"
br=k6t-eth0
tap=tap0
mac=52:54:00:5e:00:02
marker=IMDS-SMOKE-OK
boot_timeout=${VM_SMOKE_TIMEOUT:-300}
work=""
http_pid=""

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  vm_stop "${VM_PIDFILE:-}" 2 || true
  if [[ -n $http_pid ]]; then kill "$http_pid" 2>/dev/null || true; fi
  vm_dhcp_stop "${VM_DNSMASQ_PIDFILE:-}" || true
  vm_pod_delete "$ns"
  if [[ -n $work ]]; then
    if [[ ${KEEP:-0} == 1 || $rc -ne 0 ]]; then
      echo "vm_smoke: logs kept in $work" >&2
    else
      rm -rf "$work"
    fi
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

vm_require_tools

t0=$EPOCHREALTIME
image_dir="$("$repo/hack/build-guest-image.sh" | tail -n 1)"
build_s="$(vm_elapsed "$t0")"
echo "vm_smoke: guest image $image_dir (ready in ${build_s}s)"

work="$(mktemp -d "${TMPDIR:-/tmp}/imds-smoke.XXXXXX")"
www="$work/www"
mkdir -p "$www/v1"
printf 'instance-id: smoke-1\nlocal-hostname: smokevm\n' >"$www/v1/meta-data"
: >"$www/v1/vendor-data"
: >"$www/v1/network-config"
cat >"$www/v1/user-data" <<EOF
#cloud-config
write_files:
  - path: /usr/local/sbin/imds-smoke-report
    permissions: '0755'
    content: |
      #!/bin/sh
      # Runs outside cloud-final (systemd-run) so cloud-init can finish first.
      # cloud-init's final stage writes boot-finished last (a shell loop: each
      # python start costs seconds under TCG)
      while [ ! -e /var/lib/cloud/instance/boot-finished ]; do sleep 0.5; done
      systemctl is-system-running --wait >/dev/null
      # Only now the console: the serial getty, started late (Type=idle), hangs
      # up (vhangup) every descriptor of ttyS0 opened before it.
      exec >/dev/ttyS0 2>&1
      echo "=== cloud-init status --long"
      st="\$(cloud-init status --long 2>&1)"
      echo "\$st"
      echo "=== systemd-analyze time"
      systemd-analyze time
      echo "=== systemd-analyze blame (top 12)"
      systemd-analyze blame --no-pager | head -n 12
      echo "=== ip -4 addr show eth0; ip route"
      ip -4 -o addr show dev eth0
      ip route
      echo "=== dhclient lease"
      grep -h -E 'fixed-address|option routers|dhcp-server-identifier' /var/lib/dhcp/dhclient*.leases 2>/dev/null | sort -u
      echo "=== failed units"
      systemctl --failed --no-legend --plain
      echo "$marker hostname=\$(hostname) addr=\$(ip -4 -o addr show dev eth0 | awk '{print \$4}') status=\$(echo "\$st" | awk '/^status:/ {print \$2}')"
runcmd:
  - [ sh, -c, 'echo "IMDS-SMOKE-RUNCMD hostname=\$(hostname)" >/dev/ttyS0' ]
  - [ systemd-run, --no-block, --unit=imds-smoke-report, /usr/local/sbin/imds-smoke-report ]
EOF

vm_pod_create "$ns" "$br" 10.0.2.1/24
vm_tap_create "$ns" "$tap" "$br"
vm_dhcp_start "$ns" "$br" "$work/dnsmasq.log"

ip netns exec "$ns" "$VM_PY" -m http.server 80 --bind 10.0.2.1 --directory "$www" \
  >"$work/http.log" 2>&1 &
http_pid=$!
for _ in $(seq 50); do
  ip netns exec "$ns" "$VM_PY" -c 'import urllib.request as u; u.urlopen("http://10.0.2.1/v1/meta-data", timeout=1)' \
    2>/dev/null && break
  sleep 0.1
done

con="$work/console.log"
# VM_SMOKE_SERIAL: try another DMI serial (e.g. without ';dsmode=net').
serial=${VM_SMOKE_SERIAL:-'ds=nocloud;s=http://10.0.2.1/v1/;dsmode=net'}
if ((reboot_test)); then
  export VM_OVERLAY="$work/disk.qcow2"
fi
VM_MAC=$mac vm_boot "$ns" "$tap" "$image_dir" "$serial" "$con"

# Timeline: each stage waited for in order; seconds since qemu started.
stages=(
  "kernel|Linux version"
  "systemd|Welcome to .*Debian"
  "cloud-init local|Cloud-init v\. .* running 'init-local'"
  "cloud-init network|Cloud-init v\. .* running 'init'"
  "cloud-init final|Cloud-init v\. .* finished at"
  "marker|^$marker "
)
declare -A at=()
for s in "${stages[@]}"; do
  name=${s%%|*} re=${s#*|}
  if ! vm_wait_for "$con" "$re" "$boot_timeout"; then
    echo "vm_smoke: FAIL: no '$name' stage; console tail:" >&2
    tail -n 40 "$con" >&2
    exit 1
  fi
  at[$name]="$(vm_elapsed)"
done

echo "--- guest report (from the console) ---"
sed -n '/^=== cloud-init status --long/,/^'"$marker"' /p' "$con" | tr -d '\r'
echo "--- boot timeline (s since qemu start, TCG, ${VM_SMP:-1} vCPU) ---"
for s in "${stages[@]}"; do
  printf '  %-20s %6s\n' "${s%%|*}" "${at[${s%%|*}]}"
done

fail=0
check() { if grep -Eaq -- "$2" "$3"; then echo "ok:   $1"; else echo "FAIL: $1"; fail=1; fi; }
check "DHCP lease 10.0.2.2 to $mac (dnsmasq)" "DHCPACK\\($br\\) 10\\.0\\.2\\.2 $mac" "$work/dnsmasq.log"
check "guest address 10.0.2.2/24 on eth0" "^$marker .*addr=10\\.0\\.2\\.2/24" "$con"
check "hostname from meta-data" "^$marker hostname=smokevm " "$con"
check "cloud-init status done" "^$marker .*status=done" "$con"
check "datasource NoCloudNet from the DMI serial" "DataSourceNoCloudNet \\[seed=dmi,http://10\\.0\\.2\\.1/v1/\\]" "$con"
check "runcmd from user-data ran" "IMDS-SMOKE-RUNCMD hostname=smokevm" "$con"
for f in meta-data user-data vendor-data; do
  check "guest fetched /v1/$f" "\"GET /v1/$f HTTP/1\\.1\" 200" "$work/http.log"
done

if ((reboot_test && !fail)); then
  echo "--- reboot inside the same qemu (overlay $VM_OVERLAY) ---"
  gets_before="$(grep -c 'GET /v1/meta-data' "$work/http.log")"
  t1=$EPOCHREALTIME
  vm_reboot
  vm_wait_for_count "$con" "Linux version" 2 60 || { tail -n 30 "$con" >&2; exit 1; }
  vm_wait_for_count "$con" "Cloud-init v\. .* finished at" 2 "$boot_timeout" || { tail -n 30 "$con" >&2; exit 1; }
  vm_wait_for_count "$con" "smokevm login: root \(automatic login\)" 2 60 || { tail -n 30 "$con" >&2; exit 1; }
  echo "  second boot: cloud-init final + login after $(vm_elapsed "$t1")s"
  gets_reboot="$(grep -c 'GET /v1/meta-data' "$work/http.log")"
  echo "  meta-data fetched $((gets_reboot - gets_before)) more time(s) on the reboot"
  if (($(grep -Eac 'IMDS-SMOKE-RUNCMD' "$con") == 1)); then
    echo "ok:   runcmd not run again (same instance)"
  else
    echo "FAIL: runcmd ran again after the reboot"; fail=1
  fi

  echo "--- clean poweroff, new qemu on the same overlay ---"
  vm_wait_for_count "$con" "root@smokevm:~# " 2 60 || true
  vm_poweroff 120
  con2="$work/console2.log"
  t2=$EPOCHREALTIME
  VM_MAC=$mac vm_boot "$ns" "$tap" "$image_dir" "$serial" "$con2"
  vm_wait_for "$con2" "Cloud-init v\. .* finished at" "$boot_timeout" || { tail -n 30 "$con2" >&2; exit 1; }
  vm_wait_for "$con2" "smokevm login: root \(automatic login\)" 60 || { tail -n 30 "$con2" >&2; exit 1; }
  echo "  third boot (new qemu): cloud-init final + login after $(vm_elapsed "$t2")s"
  gets_restart="$(grep -c 'GET /v1/meta-data' "$work/http.log")"
  echo "  meta-data fetched $((gets_restart - gets_reboot)) more time(s) on the restart"
  check "hostname kept on the overlay" "^Debian GNU/Linux 12 smokevm ttyS0" "$con2"
  if grep -Eaq 'IMDS-SMOKE-RUNCMD' "$con2"; then
    echo "FAIL: runcmd ran again after the qemu restart"; fail=1
  else
    echo "ok:   runcmd not run again after the qemu restart"
  fi
  vm_stop
fi

if ((fail)); then
  echo "vm_smoke: FAILED" >&2
  exit 1
fi
echo "vm_smoke: PASSED (image ready ${build_s}s, marker after ${at[marker]}s)"
