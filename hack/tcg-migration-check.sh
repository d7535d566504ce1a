#!/usr/bin/env bash
# Live-migrate one running guest back and forth on this machine under a given
# qemu (TCG), and say after each migration whether the guest lives on: the
# check behind tests/lib/vm_migrate.sh's choice of qemu 10 for the VM suite's
# migrations (qemu 7.2's TCG loses guest writes made while it migrates).
#
# Usage: hack/tcg-migration-check.sh <qemu> <guest image dir> [migrations]
#   <qemu>            qemu-system-x86_64 to run (Debian 12's, or the one in
#                     hack/build-passt-qemu.sh's cache: its share/qemu is used)
#   <guest image dir> hack/build-guest-image.sh's folder (rootfs.img, vmlinuz)
#   [migrations]      how many (default 20)
# Env: TCG_MIG_PORT   the host port the guest's data is served on (8765)
#
# The guest boots as the suite boots it (TCG, one vCPU, 512 MiB, virtio-net
# and virtio-blk on a qcow2 overlay), with a NoCloud seed served from the host
# (qemu's user network) whose runcmd starts a loop that writes 64 MiB of
# memory and makes one HTTP request to the host, then prints "HB <n> net" on
# the console, five times a second.  Each migration goes to a new qemu with the
# same command line and -incoming (max-bandwidth 1 TiB/s, as the suite); the
# source is then stopped.  The migration passes when the target's console
# shows five more heartbeats and no kernel oops, warning or panic.
# Exit: 0 all passed; 1 a guest died (its console's report printed); 2 usage
# or setup.
set -euo pipefail
shopt -s inherit_errexit
[[ $# -ge 2 ]] || { sed -n '7,13p' "$0" >&2; exit 2; }
QEMU=$1 IMG=$2 N=${3:-20} PORT=${TCG_MIG_PORT:-8765}
REPO_ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
# shellcheck source=../tests/lib/vm.sh
. "$REPO_ROOT/tests/lib/vm.sh"
[[ -s $IMG/rootfs.img && -s $IMG/vmlinuz && -s $IMG/initrd.img ]] || { echo "no guest image in $IMG" >&2; exit 2; }
L=()
qdir=$(dirname "$(dirname "$(readlink -f "$(command -v "$QEMU")")")")
[[ -d $qdir/share/qemu && $qdir != /usr ]] && L=(-L "$qdir/share/qemu")

W=$(mktemp -d "${TMPDIR:-/tmp}/tcg-mig.XXXXXX")
HTTP_PID=""
cleanup() {
	local f
	for f in "$W"/pid*; do [[ -s $f ]] && kill "$(cat "$f")" 2>/dev/null; done
	[[ -n $HTTP_PID ]] && kill "$HTTP_PID" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT

mkdir "$W/seed"
printf 'instance-id: tcg-migration-check\nlocal-hostname: tcg-mig\n' >"$W/seed/meta-data"
: >"$W/seed/vendor-data"
echo pong >"$W/seed/ping"
cat >"$W/seed/user-data" <<EOF
#cloud-config
write_files:
  - path: /usr/local/bin/heartbeat
    permissions: '0755'
    content: |
      #!/usr/bin/python3
      import time, urllib.request
      buf = bytearray(64 << 20)
      n = 0
      while True:
          n += 1
          for i in range(0, len(buf), 4096):
              buf[i] = n & 255
          try:
              urllib.request.urlopen("http://10.0.2.2:$PORT/ping", timeout=2).read()
              net = "net"
          except OSError:
              net = "nonet"
          with open("/dev/ttyS0", "w") as t:
              t.write("HB %d %s\\n" % (n, net))
          time.sleep(0.2)
runcmd:
  - [sh, -c, 'nohup /usr/local/bin/heartbeat >/dev/null 2>&1 &']
EOF
"$VM_PY" -m http.server --bind 127.0.0.1 --directory "$W/seed" "$PORT" >"$W/http.log" 2>&1 &
HTTP_PID=$!
qemu-img create -q -f qcow2 -F raw -b "$(readlink -f "$IMG/rootfs.img")" "$W/disk.qcow2"

start() { # start <i> [qemu args]: qemu number i, daemonized
	local i=$1
	shift
	"$QEMU" "${L[@]}" -name tcg-mig -accel tcg -machine pc -cpu qemu64 -smp 1 -m 512 \
		-nodefaults -no-user-config -display none \
		-kernel "$IMG/vmlinuz" -initrd "$IMG/initrd.img" \
		-append "console=ttyS0 root=/dev/vda rw net.ifnames=0 mitigations=off" \
		-drive "file=$W/disk.qcow2,format=qcow2,if=virtio,cache=writeback" \
		-netdev user,id=net0 -device virtio-net-pci,netdev=net0 -device virtio-rng-pci \
		-smbios "type=1,serial=ds=nocloud-net;s=http://10.0.2.2:$PORT/" \
		-chardev "socket,id=con0,path=$W/con$i.sock,server=on,wait=off,logfile=$W/con$i.log" -serial chardev:con0 \
		-qmp "unix:$W/qmp$i.sock,server=on,wait=off" -pidfile "$W/pid$i" -daemonize "$@"
}
BAD='BUG:|Oops|WARNING:|soft lockup|Kernel panic|general protection'
# beats <i> <n> <timeout>: the console of qemu i shows n heartbeats and no oops
beats() {
	local c deadline=$((SECONDS + $3))
	while ((SECONDS < deadline)); do
		grep -aEq "$BAD" "$W/con$1.log" && return 1
		c=$(grep -ac '^HB [0-9]* net' "$W/con$1.log" || true)
		((c >= $2)) && return 0
		sleep 0.5
	done
	return 1
}
report() { grep -aE -m1 -A12 "$BAD" "$W/con$1.log" || tail -n 15 "$W/con$1.log"; }

echo "qemu: $("$QEMU" --version | head -n 1); guest: $(grep -s '^kernel=' "$IMG/manifest" || echo "$IMG")"
start 0
if ! beats 0 3 600; then
	echo "the guest did not boot to its heartbeat"
	report 0
	exit 1
fi
cur=0
for ((k = 1; k <= N; k++)); do
	start "$k" -incoming "unix:$W/mig$k.sock"
	vm_qmp "$W/qmp$cur.sock" '{"execute": "migrate-set-parameters", "arguments": {"max-bandwidth": 1099511627776}}' \
		"{\"execute\": \"migrate\", \"arguments\": {\"uri\": \"unix:$W/mig$k.sock\"}}" >/dev/null
	st=""
	for ((t = 0; t < 600; t++)); do
		st=$(vm_qmp "$W/qmp$cur.sock" '{"execute": "query-migrate"}' | "$VM_PY" -c 'import json, sys; print(json.load(sys.stdin).get("status", ""))')
		[[ $st == completed || $st == failed || $st == cancelled ]] && break
		sleep 0.2
	done
	kill "$(cat "$W/pid$cur")"
	rm -f "$W/pid$cur"
	if [[ $st != completed ]] || ! beats "$k" 5 60; then
		echo "migration $k: the guest died (migration $st)"
		report "$k"
		exit 1
	fi
	echo "migration $k: ok"
	cur=$k
done
echo "$N migrations, the guest alive after each"
