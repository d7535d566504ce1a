#!/usr/bin/env bash
# Build (once) and cache a Debian guest for the VM tests: Debian 12 (bookworm,
# cloud-init 22.4) or Debian 13 (trixie, cloud-init 25.1).
#
#   hack/build-guest-image.sh [bookworm|trixie]   # default bookworm; prints the
#                                                 # cache dir on its last stdout line
#
# The guest boots with qemu's -kernel/-initrd and root=/dev/vda (no partition
# table, no bootloader): see tests/lib/vm.sh. The cache dir holds
#   rootfs.img   raw ext4 image (label imds-root, 2 GiB sparse), used
#                read-only by the tests (snapshot=on or a qcow2 overlay)
#   vmlinuz      the guest kernel (bzImage)
#   vmlinux      the same kernel uncompressed, booted through its PVH entry
#   initrd.img   its initramfs (virtio + ext4 only: small and fast under TCG)
#   manifest     what was built from what
#
# The guest: Debian minbase + systemd, udev, linux-image-amd64, cloud-init
# (datasource_list [NoCloud, None]), ifupdown + isc-dhcp-client (eth0 by
# DHCP), curl; no hostname (cloud-init sets it), empty machine-id, root
# auto-logged-in on ttyS0, timers and useless services masked.
#
# Cache: ${IMDS_CACHE_DIR:-<repo>/tmp/cache}/guest-<key>/, <key> a hash of this
# script, the package list, the suite and the variant. A build happens in a temp
# dir beside it and is renamed into place only when complete, so a half-built
# cache never counts. Downloaded .debs are kept in <cache>/debootstrap-debs/ to
# make rebuilds (after an edit of this script) faster.
#
# Environment:
#   IMDS_CACHE_DIR       cache root (default <repo>/tmp/cache)
#   IMDS_DEBIAN_MIRROR   Debian mirror (default http://deb.debian.org/debian)
#   IMDS_GUEST_REBUILD=1 ignore an existing cache entry and build again
set -euo pipefail

SCRIPT_PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
REPO_ROOT="$(cd "$(dirname "$SCRIPT_PATH")/.." && pwd)"

SUITE=${1:-bookworm}
case $SUITE in
bookworm | trixie) ;;
*) printf '[build-guest-image] ERROR: suite %s: want bookworm or trixie\n' "$SUITE" >&2; exit 2 ;;
esac
VARIANT=minbase
MIRROR="${IMDS_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
CACHE_ROOT="${IMDS_CACHE_DIR:-$REPO_ROOT/tmp/cache}"
IMAGE_SIZE=2G
# what docs/annotations.md needs, plus curl for tests run inside the guest.
PACKAGES=(systemd-sysv udev linux-image-amd64 cloud-init python3-cffi-backend
          iproute2 netbase curl openssh-server)
# The network as each release's cloud images have it: Debian 12 with ifupdown
# and dhclient (cloud-init's eni renderer); Debian 13 with netplan over
# systemd-networkd (its netplan renderer, which applies a datasource's
# network-config at once, where ifupdown leaves an already raised eth0 alone),
# and e2fsprogs, no longer in trixie's minbase (cc_resizefs runs resize2fs).
case $SUITE in
bookworm) PACKAGES+=(ifupdown isc-dhcp-client) ;;
trixie) PACKAGES+=(netplan.io e2fsprogs) ;;
esac

log() { printf '[build-guest-image] %s\n' "$*" >&2; }
die() { printf '[build-guest-image] ERROR: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "must run as root (debootstrap, chroot)"

pkg_list="$(IFS=,; echo "${PACKAGES[*]}")"
key="$( { sha256sum "$SCRIPT_PATH" | cut -d' ' -f1
          echo "suite=$SUITE variant=$VARIANT packages=$pkg_list size=$IMAGE_SIZE"
        } | sha256sum | cut -c1-16)"
final="$CACHE_ROOT/guest-$key"

cache_complete() {
  [[ -f $1/manifest && -s $1/rootfs.img && -s $1/vmlinuz && -s $1/initrd.img ]]
}

if [[ ${IMDS_GUEST_REBUILD:-0} != 1 ]] && cache_complete "$final"; then
  log "cache hit: $final"
  echo "$final"
  exit 0
fi

# --- host tools (idempotent) -------------------------------------------------
need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v mke2fs >/dev/null || need+=(e2fsprogs)
command -v wget >/dev/null || need+=(wget)
command -v xz >/dev/null || need+=(xz-utils)
command -v flock >/dev/null || need+=(util-linux)
if ((${#need[@]})); then
  log "installing host packages: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 || die "apt-get update failed"
  apt-get install -y -qq --no-install-recommends "${need[@]}" >&2 \
    || die "apt-get install ${need[*]} failed"
fi

# --- mirror reachable? fail loudly with the reason ---------------------------
if ! out="$(wget -nv -O /dev/null -T 20 -t 2 "$MIRROR/dists/$SUITE/InRelease" 2>&1)"; then
  die "Debian mirror unreachable: $MIRROR/dists/$SUITE/InRelease: ${out:-no detail}"
fi

mkdir -p "$CACHE_ROOT" "$CACHE_ROOT/debootstrap-debs"

# One builder per key at a time; a second caller waits, then finds the cache.
exec 9>"$CACHE_ROOT/.guest-$key.lock"
flock 9
if [[ ${IMDS_GUEST_REBUILD:-0} != 1 ]] && cache_complete "$final"; then
  log "cache hit (built by a concurrent run): $final"
  echo "$final"
  exit 0
fi

start=$SECONDS
work="$(mktemp -d "$CACHE_ROOT/.guest-$key.tmp.XXXXXX")"
root="$work/rootfs"
out="$work/out"

unmount_under() {
  local m
  # deepest first
  while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done < <(findmnt -rn -o TARGET | awk -v p="$1/" 'index($0, p) == 1' | sort -r)
}
ds_pid=""
cleanup() {
  local rc=$?
  if [[ -n $ds_pid ]] && kill -0 "$ds_pid" 2>/dev/null; then
    # debootstrap runs in its own session: stop it and everything it started
    kill -TERM -- "-$ds_pid" 2>/dev/null || true
    wait "$ds_pid" 2>/dev/null || true
  fi
  unmount_under "$work"
  # --one-file-system: never follow a mount left under the chroot
  rm -rf --one-file-system "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$root" "$out"
# The root fs is built in a private tmpfs (RAM: 24 GiB here, ~1 GiB used):
# dpkg's many small writes and fsyncs never hit the disk.
mount -t tmpfs -o size=3G,mode=0755 imds-guest-root "$root"

# --- pre-seed ----------------------------------------------------------------------
# dpkg without fsync (the tree is copied into an image at the end anyway).
mkdir -p "$root/etc/dpkg/dpkg.cfg.d"
echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/imds-build-unsafe-io"
# A small initramfs: MODULES=list + a hook that adds only virtio/ext4: 6 MiB
# instead of ~30, which matters when TCG decompresses it, and 5x faster to
# build. RESUME=none: no resume-device wait. It is built once, after
# debootstrap (INITRD=No below keeps linux-image's postinst from building it).
mkdir -p "$root/etc/initramfs-tools/conf.d" "$root/etc/initramfs-tools/hooks"
cat >"$root/etc/initramfs-tools/conf.d/imds-guest.conf" <<'EOF'
MODULES=list
RESUME=none
COMPRESS=gzip
EOF
cat >"$root/etc/initramfs-tools/hooks/imds-guest" <<'EOF'
#!/bin/sh
# kubevirt-imds test guest: the modules needed to mount root=/dev/vda (ext4).
PREREQ=""
prereqs() { echo "$PREREQ"; }
case "$1" in prereqs) prereqs; exit 0 ;; esac
. /usr/share/initramfs-tools/hook-functions
for m in virtio_pci virtio_blk crc32c_generic ext4; do
  force_load "$m"
done
manual_add_modules virtio_net virtio_rng
EOF
chmod 0755 "$root/etc/initramfs-tools/hooks/imds-guest"

# --- debootstrap ----------------------------------------------------------------
log "debootstrap $SUITE ($VARIANT) from $MIRROR into $work"
# In the background (own session) so that a signal runs the cleanup at once.
INITRD=No setsid debootstrap --variant="$VARIANT" --include="$pkg_list" \
  --cache-dir="$CACHE_ROOT/debootstrap-debs" \
  "$SUITE" "$root" "$MIRROR" >"$work/debootstrap.out" 2>&1 &
ds_pid=$!
if ! wait "$ds_pid"; then
  tail -n 30 "$work/debootstrap.out" >&2
  [[ -f $root/debootstrap/debootstrap.log ]] && tail -n 30 "$root/debootstrap/debootstrap.log" >&2
  die "debootstrap failed (mirror $MIRROR)"
fi
log "debootstrap done after $((SECONDS - start)) s"
unmount_under "$root"
rm -f "$root/etc/dpkg/dpkg.cfg.d/imds-build-unsafe-io"

kvers=("$root"/lib/modules/*)
[[ ${#kvers[@]} -eq 1 && -d ${kvers[0]} ]] || die "expected one kernel in /lib/modules, got: ${kvers[*]}"
kver="${kvers[0]##*/}"
if [[ ! -e $root/boot/initrd.img-$kver ]]; then
  mount -t proc proc "$root/proc"
  chroot "$root" update-initramfs -c -k "$kver" >&2 || die "update-initramfs failed"
  umount "$root/proc"
fi

# --- configure ---------------------------------------------------------------------
# No hostname baked in: cloud-init sets it from meta-data. debootstrap copied the
# host's /etc/hostname, /etc/hosts and /etc/resolv.conf: none of them belong here.
rm -f "$root/etc/hostname" "$root/etc/resolv.conf"
cat >"$root/etc/hosts" <<'EOF'
127.0.0.1	localhost
::1		localhost ip6-localhost ip6-loopback
ff02::1		ip6-allnodes
ff02::2		ip6-allrouters
EOF

# Empty machine-id: every boot of a fresh copy is a new machine.
: >"$root/etc/machine-id"
rm -f "$root/var/lib/dbus/machine-id"

cat >"$root/etc/fstab" <<'EOF'
# kubevirt-imds test guest: raw ext4 image, no partition table
LABEL=imds-root	/	ext4	rw,noatime,errors=remount-ro	0	0
EOF

echo 'LANG=C.UTF-8' >"$root/etc/default/locale"

# Network: classic names (eth0) whatever the kernel command line says.
mkdir -p "$root/etc/systemd/network"
ln -sf /dev/null "$root/etc/systemd/network/99-default.link"
if [[ $SUITE == bookworm ]]; then
	cat >"$root/etc/network/interfaces" <<'EOF'
# kubevirt-imds test guest
auto lo
iface lo inet loopback

source-directory /etc/network/interfaces.d
EOF
	mkdir -p "$root/etc/network/interfaces.d"
	# eth0 by DHCP. The file name is the one cloud-init's eni renderer writes on
	# Debian: cloud-init replaces it with its own (fallback DHCP, or the
	# datasource's network-config) rather than adding a second eth0 stanza.
	cat >"$root/etc/network/interfaces.d/50-cloud-init" <<'EOF'
# Baked by hack/build-guest-image.sh; cloud-init overwrites this file.
auto eth0
iface eth0 inet dhcp
EOF
	# dhclient: give up fast and deterministically if no server answers.
	sed -i -e 's/^#\?timeout .*/timeout 30;/' "$root/etc/dhcp/dhclient.conf"
	grep -q '^timeout ' "$root/etc/dhcp/dhclient.conf" || echo 'timeout 30;' >>"$root/etc/dhcp/dhclient.conf"
fi
# (trixie: no network file at all; cloud-init's local stage writes its fallback
# netplan, DHCP on eth0, before systemd-networkd starts)

# cloud-init: NoCloud (found via the DMI serial) or nothing.
mkdir -p "$root/etc/cloud/cloud.cfg.d"
cat >"$root/etc/cloud/cloud.cfg.d/90-imds-guest.cfg" <<'EOF'
# kubevirt-imds test guest
datasource_list: [ NoCloud, None ]
# no grub here (qemu -kernel): this module would spend ~3 s under TCG probing
grub_dpkg:
  enabled: false
EOF

# Serial console: root autologin on ttyS0, scriptable through the console socket.
mkdir -p "$root/etc/systemd/system/serial-getty@ttyS0.service.d"
cat >"$root/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf" <<'EOF'
[Service]
ExecStart=
ExecStart=-/sbin/agetty --autologin root --noclear --keep-baud 115200,57600,38400,9600 %I dumb
EOF
# root keeps a locked password: autologin does not need one.

# Mask what only slows a short-lived test VM down or makes it less deterministic.
for unit in apt-daily.timer apt-daily-upgrade.timer apt-daily.service \
            apt-daily-upgrade.service dpkg-db-backup.timer dpkg-db-backup.service \
            e2scrub_all.timer e2scrub_all.service e2scrub_reap.service \
            fstrim.timer fstrim.service systemd-tmpfiles-clean.timer \
            man-db.timer logrotate.timer systemd-firstboot.service \
            systemd-timesyncd.service getty@tty1.service \
            systemd-pstore.service; do
  ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
# udev's coldplug would load these for devices of qemu's pc machine and for
# CPU features (with -cpu max): seconds of module loading under TCG, useless.
cat >"$root/etc/modprobe.d/imds-guest-blacklist.conf" <<'EOF'
# kubevirt-imds test guest: nothing here is needed by a virtio-only VM
blacklist kvm
blacklist kvm_amd
blacklist kvm_intel
blacklist floppy
blacklist pcspkr
blacklist i2c_piix4
blacklist ata_piix
blacklist ata_generic
blacklist pata_acpi
blacklist aesni_intel
blacklist ghash_clmulni_intel
blacklist crc32_pclmul
blacklist sha1_ssse3
blacklist sha256_ssse3
blacklist sha512_ssse3
blacklist polyval_clmulni
blacklist powernow_k8
blacklist joydev
blacklist serio_raw
blacklist evdev
blacklist sg
blacklist bochs
blacklist qemu_fw_cfg
EOF
# VT gettys: no VGA here (-nodefaults). getty-static starts tty2-6 when
# logind is missing (no dbus in this image).
ln -sf /dev/null "$root/etc/systemd/system/getty-static.service"
# Boot to multi-user.
ln -sf /lib/systemd/system/multi-user.target "$root/etc/systemd/system/default.target"

# Slim down: caches, docs, logs of the build.
rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"* \
       "$root/usr/share/doc/"* "$root/usr/share/man/"* "$root/usr/share/info/"* \
       "$root/var/log/"*.log "$root/debootstrap" "$root/var/cache/debconf/"*-old
find "$root/var/log" -type f -exec truncate -s0 {} +

# --- kernel + initrd ------------------------------------------------------------------
[[ -f $root/boot/vmlinuz-$kver && -f $root/boot/initrd.img-$kver ]] \
  || die "no /boot/vmlinuz-$kver or /boot/initrd.img-$kver in the guest"
cp "$root/boot/vmlinuz-$kver" "$out/vmlinuz"
cp "$root/boot/initrd.img-$kver" "$out/initrd.img"
# vmlinux: the uncompressed kernel (ELF with a PVH entry note; Debian builds
# CONFIG_PVH=y). qemu boots it directly, skipping the bzImage's xz
# decompression: 3-8 s less per boot under TCG. Optional: vm.sh falls back
# to vmlinuz when it is missing.
xz_off="$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$out/vmlinuz" | head -n 1 | cut -d: -f1 || true)"
if [[ -n $xz_off ]] \
   && xz -dc --single-stream <(tail -c +"$((xz_off + 1))" "$out/vmlinuz") >"$out/vmlinux" 2>/dev/null \
   && [[ $(head -c 4 "$out/vmlinux" | od -An -tx1 | tr -d ' \n') == 7f454c46 ]]; then
  log "extracted the uncompressed kernel (PVH boot)"
else
  log "could not extract vmlinux from the bzImage; tests boot vmlinuz"
  rm -f "$out/vmlinux"
fi

# --- raw ext4 image ---------------------------------------------------------------------
log "mke2fs -d ($IMAGE_SIZE)"
mke2fs -q -t ext4 -L imds-root -E root_owner=0:0 -d "$root" "$out/rootfs.img" "$IMAGE_SIZE" >&2 \
  || die "mke2fs -d failed"

pkg_version() {
  # shellcheck disable=SC2016 # ${Version} is dpkg-query's, not the shell's
  dpkg-query --admindir="$root/var/lib/dpkg" -W -f '${Version}' "$1"
}
cloud_init_ver="$(pkg_version cloud-init)"
systemd_ver="$(pkg_version systemd)"
cat >"$out/manifest" <<EOF
key=$key
suite=$SUITE
variant=$VARIANT
mirror=$MIRROR
packages=$pkg_list
kernel=$kver
cloud-init=$cloud_init_ver
systemd=$systemd_ver
image_size=$IMAGE_SIZE
built=$(date -u +%Y-%m-%dT%H:%M:%SZ)
build_seconds=$((SECONDS - start))
EOF

# --- atomically into place ----------------------------------------------------------------
rm -rf --one-file-system "$final.old"
[[ -e $final ]] && mv -T "$final" "$final.old"
mv -T "$out" "$final"
rm -rf --one-file-system "$final.old"
log "built $final in $((SECONDS - start)) s (kernel $kver, cloud-init $cloud_init_ver)"
echo "$final"
