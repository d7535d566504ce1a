#!/usr/bin/env bash
# imds-variants: debug
# net_passt_repair.sh — what this machine lacks for the passt scenario's
# migration as KubeVirt v1.9 runs it (issue 32 item 5): virt-handler runs
# `passt-repair` on passt's repair socket on both sides
# (kubevirt pkg/network/passt/repair.go:114-128, cmd/virt-handler/virt-handler.go:386),
# passt saves and loads its TCP sockets with TCP_REPAIR through it, and qemu
# carries passt's state over vhost-user (qemu docs/system/devices/net.rst,
# "Migration of passt": "When passt is connected to QEMU using the vhost-user
# interface it can be migrated ... If passt-repair is not available, TCP
# connections will not be preserved").  Debian 12's own passt and qemu have
# none of it: the first checks pin each missing piece on this machine (when
# one fails, Debian 12 has it: hack/build-passt-qemu.sh and the VM suite's
# passt scenario could use the system's, and docs/sidecar.md's "passt-repair
# across a migration" row changes).  The VM suite's passt scenario runs the
# pair hack/build-passt-qemu.sh builds and caches instead (Debian 13's passt
# from source, bookworm-backports' qemu 10 unpacked); the last checks pin
# that this pair has each piece, without a boot.
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

if ! command -v passt >/dev/null || ! command -v qemu-system-x86_64 >/dev/null; then
	not_ok "passt and qemu-system-x86_64 installed (hack/install-deps.sh test, vm)"
	tap_done
	exit 1
fi

# passt's usage goes to stdout or stderr (and exits 1 in Debian 12's);
# it must be the real one, or the checks below would pass on nothing.
help=$(passt --help 2>&1)
if [[ $help == *--tcp-ports* ]]; then
	ok "passt --help prints its usage"
else
	not_ok "passt --help prints its usage" "$help"
fi

# passt's migration needs its repair socket (conf.c: "--repair-path PATH
# path for passt-repair(1)", passt since 2025-02).
if [[ $help == *--repair-path* ]]; then
	not_ok "this passt has no --repair-path (no migration of its TCP sockets)" \
		"passt has --repair-path now: the passt scenario could run the system's passt instead of hack/build-passt-qemu.sh's (docs/sidecar.md's passt-repair row)"
else
	ok "this passt has no --repair-path (no migration of its TCP sockets)"
fi

# ...and vhost-user: passt's state travels with qemu's vhost-user device.
if [[ $help == *--vhost-user* ]]; then
	not_ok "this passt has no --vhost-user (qemu cannot carry its state)" \
		"passt has --vhost-user now: the passt scenario could run the system's passt instead of hack/build-passt-qemu.sh's (docs/sidecar.md's passt-repair row)"
else
	ok "this passt has no --vhost-user (qemu cannot carry its state)"
fi

# The helper KubeVirt runs: Debian packages it in passt (Debian 13's
# /usr/bin/passt-repair); Debian 12's lists passt, pasta, qrap only.
files=$(dpkg -L passt 2>&1)
if [[ $files == */bin/passt* ]] && [[ $files != *passt-repair* ]] && ! command -v passt-repair >/dev/null; then
	ok "no passt-repair installed (dpkg -L passt, PATH)"
else
	not_ok "no passt-repair installed (dpkg -L passt, PATH)" \
		"passt-repair: $(command -v passt-repair || echo 'not in PATH')" "$files"
fi

# qemu carries the vhost-user backend's state in virtio-net's vmstate
# subsection "virtio-net-device/backend" (hw/net/virtio-net.c
# vhost_user_net_backend_state, "virtio-net: vhost-user: Implement internal
# migration", qemu-devel pull of 2025-01-15, qemu 10.0).  The names of
# vmstate sections are strings in the binary: this qemu's has the subsection
# next to it ("virtio-net-device/rss") and not that one.
qemu=$(command -v qemu-system-x86_64)
qv=$(qemu-system-x86_64 --version | head -1)
if ! grep -q -a -F 'virtio-net-device/rss' "$qemu"; then
	not_ok "qemu's virtio-net vmstate names are readable in its binary" "$qemu: $qv"
elif grep -q -a -F 'virtio-net-device/backend' "$qemu"; then
	not_ok "this qemu carries no vhost-user backend state in a migration" \
		"$qv has virtio-net-device/backend now: the passt scenario could run it instead of hack/build-passt-qemu.sh's qemu 10"
else
	ok "this qemu carries no vhost-user backend state in a migration ($qv)"
fi

# The pair the VM suite's passt scenario runs (tests/integration/vm_boot.sh
# need_vhost): built, or taken from the cache.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! dir=$("$REPO/hack/build-passt-qemu.sh" 2>"$log" | tail -n 1) || [[ ! -x $dir/bin/passt ]]; then
	not_ok "hack/build-passt-qemu.sh builds Debian 13's passt and unpacks bookworm-backports' qemu" "$(tail -n 20 "$log")"
	tap_done
	exit 1
fi
ok "hack/build-passt-qemu.sh: $(grep -c . "$dir/VERSIONS") pieces ($(sed -n 's/^passt: \([^ ]*\).*/\1/p' "$dir/VERSIONS"))"
bhelp=$("$dir/bin/passt" --help 2>&1)
if [[ $bhelp == *--vhost-user* && $bhelp == *--repair-path* && $("$dir/bin/passt-repair" 2>&1) == *Usage*PATH* ]]; then
	ok "the built passt has --vhost-user and --repair-path, and passt-repair runs"
else
	not_ok "the built passt has --vhost-user and --repair-path, and passt-repair runs" "$bhelp" "$("$dir/bin/passt-repair" 2>&1)"
fi
bq=$(readlink -f "$dir/bin/qemu-system-x86_64")
bqv=$("$bq" --version 2>&1 | head -n 1)
if grep -q -a -F 'virtio-net-device/backend' "$bq" && grep -q -a -F 'virtio-net-device/rss' "$bq"; then
	ok "the unpacked qemu carries the vhost-user backend's state (virtio-net-device/backend; $bqv)"
else
	not_ok "the unpacked qemu carries the vhost-user backend's state (virtio-net-device/backend)" "$bq: $bqv"
fi

tap_done
