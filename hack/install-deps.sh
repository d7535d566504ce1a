#!/usr/bin/env bash
# Installs, with apt, what a group of make targets needs; does nothing when
# everything is there already (idempotent, safe to run on every make).
#   hack/install-deps.sh GROUP...   groups: build test bench lint coverage vm kube deploy
set -euo pipefail

# test: cloud-init, python3-botocore and ignition are the real guest agents the
# suites run against the sidecar (tests/integration/cloudinit.sh, agents.sh);
# nftables, tcpdump and passt: the network suites list our tables, capture the
# node's side and run the real passt; resource-agents: its azure-events-az, the
# Azure Scheduled Events agent tests/integration/lifecycle_clients.sh runs;
# iptables (iptables-nft): Istio's own capture rules, restored as istio-iptables
# writes them (tests/integration/net_istio.sh's TPROXY and ambient launchers).
# vm: genisoimage makes the NoCloud ISO of vm_boot.sh's continuity boot (KubeVirt's disk);
# patch and debian-archive-keyring: hack/build-passt-qemu.sh (Debian 13's passt from its
# source, bookworm-backports' qemu unpacked: the passt scenario, net_passt_repair).
declare -A pkgs=(
	[build]="gcc make libc6-dev node-llhttp libcmocka-dev musl-tools clang libclang-rt-14-dev llvm pkg-config libjson-c-dev libssl-dev git"
	[test]="curl iproute2 libcap2-bin cloud-init python3 python3-jsonpatch python3-yaml python3-botocore ignition procps gzip psmisc iputils-arping util-linux openssl openssh-client nftables tcpdump passt resource-agents iptables"
	[bench]="nginx-light wrk util-linux h2o"
	[lint]="shellcheck cppcheck clang-tidy"
	[coverage]="lcov"
	[vm]="qemu-system-x86 qemu-utils debootstrap dnsmasq-base e2fsprogs genisoimage patch debian-archive-keyring"
	[kube]="etcd-server openssl"
	# what the deployment suites run: file(1) on the built binaries, shellcheck on
	# every script, npm (Debian's nodejs ships without it) for the manifest models
	[deploy]="file shellcheck nodejs npm"
)

want=()
for g in "$@"; do
	[[ -n "${pkgs[$g]+x}" ]] || { echo "install-deps: unknown group '$g' (${!pkgs[*]})" >&2; exit 2; }
	for p in ${pkgs[$g]}; do want+=("$p"); done
done
((${#want[@]})) || exit 0

# A package whose command may come from elsewhere: a machine whose Node.js
# is a vendor build (nodesource's nodejs bundles npm and conflicts with
# Debian's npm package) has the commands without Debian's packages.
declare -A cmd_of=([nodejs]=node [npm]=npm)

missing=()
for p in "${want[@]}"; do
	[[ -n "${cmd_of[$p]+x}" ]] && command -v "${cmd_of[$p]}" >/dev/null && continue
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[[ "$st" == installed ]] || missing+=("$p")
done
((${#missing[@]})) || exit 0

if ((EUID != 0)); then
	echo "install-deps: missing packages: ${missing[*]} (run as root, or apt-get install them)" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# The package lists may be old or absent on a fresh machine: refresh once.
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
