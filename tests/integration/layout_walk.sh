#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# layout_walk: every path of every layout walked (tests/lib/layout_walk.py) in
# six configurations: nothing but the identity; everything (SSH keys of
# three entries, one with two keys, user-, vendor- and network-config data,
# custom meta-data, a network-status with the pod's address, zone and region,
# a bridged pod NIC, a pending eviction); a zone alone with a migration
# pending; a region alone; everything with IMDS_SESSION=required; the
# accessCredentials' keys of a cloud-init volume beside the annotation's.  In each,
# every name a listing names answers (EC2's meta-data/ and dynamic/ trees of
# every version: 200; OpenStack's files of every version: 200, or as Nova a
# 404 with its reason for user_data and network_data.json when there are
# none): a listing never drifts from its leaves.  With LAYOUT_WALK_BASE=<another imds-server> the
# same walk of that build must be the same bytes, every answer (status line,
# headers but Date, body): the proof that a change of structure changed no
# answer.
set -uo pipefail
# shellcheck source=../lib/tap.sh
source "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/server.sh
source "$(dirname "$0")/../lib/server.sh"
# shellcheck source=../lib/podinfo.sh
source "$(dirname "$0")/../lib/podinfo.sh"

D=$TEST_TMP/data
mkdir -p "$D/keys"
ssh-keygen -q -t rsa -b 2048 -N '' -C alice@example -f "$D/k_rsa"
ssh-keygen -q -t ed25519 -N '' -C bob@example -f "$D/k_ed"
ssh-keygen -q -t ed25519 -N '' -C carol@example -f "$D/k_ed2"
cp "$D/k_rsa.pub" "$D/keys/alice"
cp "$D/k_ed.pub" "$D/keys/bob"
cat "$D/k_ed.pub" "$D/k_ed2.pub" >"$D/keys/team.ops"
printf '#cloud-config\nhostname: walk\n' >"$D/ud"
printf '#cloud-config\npackages: [jq]\n' >"$D/vd"
printf 'version: 2\nethernets: {eth0: {dhcp4: true}}\n' >"$D/nc"
printf '{"role":"web","namespace":"x","team":"a b: c"}' >"$D/meta.json"
cat >"$D/network-status" <<'JSON'
[{"name":"k8s-pod-network","interface":"eth0","ips":["10.244.1.5"],"mac":"0a:58:0a:f4:01:05","default":true,"dns":{}},
 {"name":"demo/br1","interface":"pod26578a32802","ips":["192.168.10.7"],"mac":"02:4b:b0:00:00:01","dns":{}}]
JSON
podinfo_init "$TEST_TMP/evict"
kubelet_write eviction-strategy=External eviction-in-progress=true
EVICT=$PI
podinfo_init "$TEST_TMP/migrate"
kubelet_write migration-job-uid=5d1e2a34-75f0-4a5e-9f35-6c8b1e0b1f2a \
	'migration-target-ready=2026-11-27 15:04:05 +0000 UTC'
MIGRATE=$PI
ALL=(IMDS_USER_DATA_FILE="$D/ud" IMDS_VENDOR_DATA_FILE="$D/vd" IMDS_NETWORK_CONFIG_FILE="$D/nc"
	IMDS_META_DATA_FILE="$D/meta.json" IMDS_SSH_KEYS_DIR="$D/keys" IMDS_PASSWORD_KEY=alice
	IMDS_NETWORK_STATUS_FILE="$D/network-status" IMDS_AVAILABILITY_ZONE=eu-west-1b
	IMDS_REGION=eu-west-1 IMDS_INSTANCE_TYPE=u1.medium IMDS_INTERFACES=default:bridge:tap0
	IMDS_LIFECYCLE_DIR="$EVICT" IMDS_STATE_DIR="$TEST_TMP/state")
mkdir -p "$TEST_TMP/state"

# walk NAME SERVER ENV...: the walk's dump in $TEST_TMP/NAME.<n>.walk; what
# a listing names without answering 200 in $TEST_TMP/NAME.<n>.unanswered.
N=0
walk() {
	local name=$1 server=$2
	shift 2
	N=$((N + 1))
	IMDS_SERVER=$server server_start IMDS_RATE_LIMIT=0 "$@" || return 1
	"$PY" "$TESTS_LIB/layout_walk.py" "$SRV_HOST:$SRV_PORT" "$TEST_TMP/$name.$N.walk" \
		>"$TEST_TMP/$name.$N.unanswered"
	server_stop
}

# config LABEL ENV...
config() {
	local label=$1
	shift
	if ! walk new "$IMDS_SERVER" "$@"; then
		not_ok "$label: the server starts"
		return
	fi
	local f=$TEST_TMP/new.$N
	if [[ -s $f.unanswered ]]; then
		not_ok "$label: every listed name answers" "$(cat "$f.unanswered")"
	else
		ok "$label: every listed name answers ($(grep -c '^----$' "$f.walk") answers walked)"
	fi
	if [[ -n ${LAYOUT_WALK_BASE:-} ]]; then
		walk base "$LAYOUT_WALK_BASE" "$@" || { not_ok "$label: the base server starts"; return; }
		if cmp -s "$TEST_TMP/base.$N.walk" "$f.walk"; then
			ok "$label: every answer the same bytes as $LAYOUT_WALK_BASE's"
		else
			not_ok "$label: every answer the same bytes as $LAYOUT_WALK_BASE's" \
				"$(diff "$TEST_TMP/base.$N.walk" "$f.walk" | head -n 40)"
		fi
	fi
}

config "nothing but the identity"
config "everything, an eviction pending" "${ALL[@]}"
config "a zone alone, a migration pending" IMDS_AVAILABILITY_ZONE=eu-west-1b IMDS_LIFECYCLE_DIR="$MIGRATE"
config "a region alone" IMDS_REGION=eu-west-1
config "everything, sessions required" "${ALL[@]}" IMDS_SESSION=required
# The accessCredentials' keys (KubeVirt's sshSecrets, numbered first) beside
# the annotation's, from a cloudInitNoCloud volume.
mkdir -p "$D/ci/ssh/0" "$D/ci/ssh/1"
cp "$D/k_ed2.pub" "$D/ci/ssh/0/laptop"
cp "$D/k_rsa.pub" "$D/ci/ssh/1/desktop"
config "the accessCredentials' keys and the annotation's" IMDS_SSH_KEYS_DIR="$D/keys" \
	IMDS_CLOUD_INIT='{"source":"noCloud","userData":"I2Nsb3VkLWNvbmZpZwo=","sshSecrets":"a,b"}' \
	IMDS_CLOUD_INIT_DIR="$D/ci"
tap_done
