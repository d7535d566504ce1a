#!/usr/bin/env bash
# Real guest agents from Debian's packages as clients of `imds-server serve`
# (tests/lib/agents_client.py says what each reads, file and line):
#   - cloud-init 22.4's EC2 readers (the meta-data/ tree crawl, user-data, the
#     identity document) with and without an IMDSv2 session, and with
#     IMDS_SESSION=required;
#   - botocore's IMDS fetcher (python3-botocore): token, then meta-data, the
#     region provider, the IAM credentials provider (none served);
#   - in a network namespace where 169.254.169.254 is the server's, as in a
#     guest: cloud-init's OpenStack reader (whose EC2 crawl uses that fixed
#     address) with network_data.json converted for the guest's NICs, and
#     Ignition 2.14 (-platform openstack, Debian's ignition) fetching and
#     applying a config, and finding none when there is no user-data.
# (root: the namespace)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/server.sh
. "$(dirname "$0")/../lib/server.sh"

CLIENT=$REPO/tests/lib/agents_client.py
IGNITION=/usr/lib/dracut/modules.d/30ignition/ignition
NS=imdsag$$
NS_PID=

cleanup() {
	[[ -n $NS_PID ]] && kill "$NS_PID" 2>/dev/null && wait "$NS_PID" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	server_cleanup
}
trap cleanup EXIT

for m in cloudinit botocore; do
	if ! "$PY" -c "import $m" 2>/dev/null; then
		not_ok "$m importable by $PY" "hack/install-deps.sh test installs cloud-init and python3-botocore"
		tap_done
		exit 1
	fi
done

# jpy FILE EXPR: a Python expression over the client's JSON answer (d).
jpy() {
	"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); v = eval(sys.argv[2]); print(json.dumps(v, sort_keys=True) if not isinstance(v, str) else v)' "$1" "$2"
}
# agent NAME ARGS...: runs the client; its answer in $TEST_TMP/NAME.json, status in AGENT_ST.
agent() {
	AGENT_NAME=$1
	shift
	AGENT_OUT=$TEST_TMP/$AGENT_NAME.json
	"$PY" "$CLIENT" "$@" >"$AGENT_OUT" 2>"$TEST_TMP/$AGENT_NAME.err"
	AGENT_ST=$?
}
agent_ok() {
	if ((AGENT_ST == 0)); then
		ok "$1"
	else
		not_ok "$1" "$(cat "$AGENT_OUT")" "$(tail -n 5 "$TEST_TMP/$AGENT_NAME.err" 2>/dev/null)"
	fi
}
sha() { sha256sum "$1" | cut -d' ' -f1; }

D=$TEST_TMP/data
mkdir -p "$D/keys"
ssh-keygen -q -t rsa -b 2048 -N '' -C alice@example -f "$D/k_rsa"
ssh-keygen -q -t ed25519 -N '' -C bob@example -f "$D/k_ed"
cp "$D/k_rsa.pub" "$D/keys/alice"
cp "$D/k_ed.pub" "$D/keys/bob"
RSA=$(cat "$D/k_rsa.pub")
ED=$(cat "$D/k_ed.pub")
printf '#cloud-config\nhostname: agents\n' >"$D/ud"
# What Multus writes for a pod with a bridge secondary network with an
# address (br1) and one without (br2).
cat >"$D/network-status" <<'EOF'
[{"name":"k8s-pod-network","interface":"eth0","ips":["10.244.1.5"],"mac":"0a:58:0a:f4:01:05","default":true,"dns":{}},
 {"name":"demo/br1","interface":"pod26578a32802","ips":["192.168.10.7"],"mac":"02:4b:b0:00:00:01","dns":{}},
 {"name":"demo/br2","interface":"pod9f3c","mac":"02:4b:b0:00:00:02","dns":{}}]
EOF
COMMON=(IMDS_USER_DATA_FILE="$D/ud" IMDS_SSH_KEYS_DIR="$D/keys" IMDS_NETWORK_STATUS_FILE="$D/network-status"
	IMDS_AVAILABILITY_ZONE=eu-west-1b IMDS_REGION=eu-west-1 IMDS_INSTANCE_TYPE=u1.medium)

# ---------------------------------------------------------------------------
echo "# cloud-init 22.4's EC2 readers and botocore, sessions optional"
server_start "${COMMON[@]}" || exit 1
WANT_MD=$("$PY" -c '
import json, sys
# events/: the lifecycle events (docs/sidecar.md), none pending, as EC2 lists them.
print(json.dumps({"events": {"maintenance": {"history": "[]", "scheduled": "[]"}},
  "hostname": "testvm", "instance-id": "default-testvm", "instance-type": "u1.medium",
  "local-hostname": "testvm", "local-ipv4": "10.244.1.5",
  "placement": {"availability-zone": "eu-west-1b", "region": "eu-west-1"},
  "public-keys": {"alice": sys.argv[1], "bob": sys.argv[2]}}, sort_keys=True))' "$RSA" "$ED")
WANT_DOC='{"architecture": "x86_64", "availabilityZone": "eu-west-1b", "instanceId": "default-testvm", "instanceType": "u1.medium", "privateIp": "10.244.1.5", "region": "eu-west-1", "version": "2017-09-30"}'
[[ $(uname -m) == x86_64 ]] || WANT_DOC=${WANT_DOC/\"x86_64\"/\"$(uname -m | sed 's/aarch64/arm64/')\"}
ec2_checks() { # label
	local v
	for v in 2009-04-04 latest; do
		expect_eq "$1: $v meta-data/ crawled whole (every listed name fetched)" "$WANT_MD" \
			"$(jpy "$AGENT_OUT" "d['$v']['meta_data']")"
		expect_eq "$1: $v user-data byte-exact" "$(sha "$D/ud")" "$(jpy "$AGENT_OUT" "d['$v']['user_data']['sha256']")"
		expect_eq "$1: $v dynamic/instance-identity/document" "$WANT_DOC" \
			"$(jpy "$AGENT_OUT" "d['$v']['identity']['document']")"
	done
}
agent ec2 ec2 --url "$SRV_URL"
agent_ok "cloud-init ec2 helpers without a token returned"
ec2_checks "cloud-init ec2, no token"
agent ec2tok ec2 --url "$SRV_URL" --token
agent_ok "cloud-init ec2 helpers with a session returned"
expect_eq "cloud-init ec2: PUT latest/api/token gave a 43-character token, TTL echoed" '{"len": 43, "ttl": "21600"}' \
	"$(jpy "$AGENT_OUT" "d['token']")"
ec2_checks "cloud-init ec2, with X-aws-ec2-metadata-token"
puts0=$(grep -c 'PUT /latest/api/token 200' "$SRV_LOG")
agent boto botocore --url "$SRV_URL"
agent_ok "botocore IMDSFetcher returned"
expect_eq "botocore: token fetched (PUT, TTL 21600)" 43 "$(jpy "$AGENT_OUT" "d['token_len']")"
expect_eq "botocore: meta-data leaves with the token" \
	"$("$PY" -c 'import json,sys; print(json.dumps({"hostname": "testvm", "instance-id": "default-testvm", "instance-type": "u1.medium", "local-hostname": "testvm", "public-keys/": "0=alice\n1=bob", "public-keys/0/openssh-key": sys.argv[1]}, sort_keys=True))' "$RSA")" \
	"$(jpy "$AGENT_OUT" "d['meta_data']")"
expect_eq "botocore: region from placement/availability-zone/ (InstanceMetadataRegionFetcher)" eu-west-1 \
	"$(jpy "$AGENT_OUT" "d['region']")"
expect_eq "botocore: no IAM credentials (InstanceMetadataFetcher answers {})" '{}' "$(jpy "$AGENT_OUT" "d['iam_credentials']")"
expect_eq "botocore opened a session for each of its three fetchers (PUT /latest/api/token 200)" 3 \
	"$(($(grep -c 'PUT /latest/api/token 200' "$SRV_LOG") - puts0))"
server_stop

# ---------------------------------------------------------------------------
echo "# IMDS_SESSION=required: EC2 reads need a session, as IMDSv2"
server_start "${COMMON[@]}" IMDS_SESSION=required || exit 1
expect_eq "GET /latest/meta-data/instance-id without a token: 401 session_required" 401 \
	"$(curl -s -o /dev/null -w '%{http_code}' "$SRV_URL/latest/meta-data/instance-id")"
expect_eq "GET /latest/user-data without a token: 401" 401 \
	"$(curl -s -o /dev/null -w '%{http_code}' "$SRV_URL/latest/user-data")"
t=$(curl -s -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' "$SRV_URL/latest/api/token")
expect_eq "... with the token from PUT /latest/api/token: 200" 200 \
	"$(curl -s -o /dev/null -w '%{http_code}' -H "X-aws-ec2-metadata-token: $t" "$SRV_URL/latest/meta-data/instance-id")"
expect_eq "... and as X-Metadata-Token (one session table): 200" 200 \
	"$(curl -s -o /dev/null -w '%{http_code}' -H "X-Metadata-Token: $t" "$SRV_URL/latest/meta-data/instance-id")"
expect_eq "NoCloud stays open (cloud-init cannot do sessions): /v1/meta-data 200" 200 \
	"$(curl -s -o /dev/null -w '%{http_code}' "$SRV_URL/v1/meta-data")"
expect_eq "OpenStack stays open (cloudbase-init cannot either): meta_data.json 200" 200 \
	"$(curl -s -o /dev/null -w '%{http_code}' "$SRV_URL/openstack/latest/meta_data.json")"
agent ec2req ec2 --url "$SRV_URL"
expect_eq "cloud-init ec2 without a token gets nothing (its crawl fails on the 401)" '{}' \
	"$(jpy "$AGENT_OUT" "d['latest']['meta_data']")"
agent ec2reqtok ec2 --url "$SRV_URL" --token
agent_ok "cloud-init ec2 helpers with a session returned (required)"
ec2_checks "cloud-init ec2, required sessions, with a token"
agent bootreq botocore --url "$SRV_URL"
agent_ok "botocore IMDSFetcher returned (required)"
expect_eq "botocore (required): instance-id with its token" default-testvm "$(jpy "$AGENT_OUT" "d['meta_data']['instance-id']")"
expect_eq "botocore (required): region" eu-west-1 "$(jpy "$AGENT_OUT" "d['region']")"
server_stop

# ---------------------------------------------------------------------------
echo "# in a namespace where 169.254.169.254 is the server's"
if ((EUID != 0)) || ! ip netns add "$NS" 2>/dev/null; then
	not_ok "network namespace $NS (needs root and iproute2)"
	tap_done
	exit 1
fi
ip -n "$NS" link set lo up
ip -n "$NS" addr add 169.254.169.254/32 dev lo
# ns_start VAR=value...: imds-server on 169.254.169.254:80 in the namespace
ns_start() {
	NS_LOG=$TEST_TMP/ns.$RANDOM.log
	ip netns exec "$NS" env IMDS_NAMESPACE=default IMDS_VM_NAME=testvm IMDS_POD_NAME=virt-launcher-testvm-x7k2p \
		IMDS_SA_NAME=default IMDS_TOKEN_PATH="$TEST_TMP/tokens/token" "$@" \
		"$IMDS_SERVER" serve --listen 169.254.169.254:80 2>"$NS_LOG" &
	NS_PID=$!
	local i
	for ((i = 0; i < 200; i++)); do
		ip netns exec "$NS" curl -sf -o /dev/null http://169.254.169.254/healthz && return 0
		sleep 0.02
	done
	return 1
}
ns_stop() {
	kill "$NS_PID" 2>/dev/null
	wait "$NS_PID" 2>/dev/null
	NS_PID=
}

if ns_start "${COMMON[@]}" IMDS_PASSWORD_KEY=alice; then
	ok "imds-server serving 169.254.169.254:80 in $NS"
else
	not_ok "imds-server serving 169.254.169.254:80 in $NS" "$(cat "$NS_LOG")"
fi
AGENT_NAME=os
AGENT_OUT=$TEST_TMP/os.json
ip netns exec "$NS" "$PY" "$CLIENT" openstack --url http://169.254.169.254 \
	--mac 02:4b:b0:00:00:01=eth1 --mac 02:4b:b0:00:00:02=eth2 >"$AGENT_OUT" 2>"$TEST_TMP/os.err"
AGENT_ST=$?
agent_ok "cloud-init OpenStack reader (read_v2) returned"
expect_eq "openstack: newest version it knows, from /openstack" 2018-08-27 "$(jpy "$AGENT_OUT" "d['version']")"
expect_eq "openstack: meta_data uuid, hostname, zone, type" \
	'["default-testvm", "testvm", "eu-west-1b", "u1.medium"]' \
	"$(jpy "$AGENT_OUT" "[d['meta_data'][k] for k in ('uuid', 'hostname', 'availability_zone', 'instance_type')]")"
expect_eq "openstack: with password-key=alice, alice's RSA key alone (cloudbase-init encrypts to it)" \
	"$("$PY" -c 'import json,sys; print(json.dumps([{"alice": sys.argv[1]}, [{"data": sys.argv[1], "name": "alice", "type": "ssh"}]], sort_keys=True))' "$RSA")" \
	"$(jpy "$AGENT_OUT" "[d['meta_data']['public_keys'], d['meta_data']['keys']]")"
expect_eq "openstack: user_data byte-exact" "$(sha "$D/ud")" "$(jpy "$AGENT_OUT" "d['user_data']['sha256']")"
expect_eq "openstack: vendor_data2.json read (no dynamic vendor data)" '{}' "$(jpy "$AGENT_OUT" "d['vendor_data2']")"
expect_eq "openstack: network_data.json converted for the guest: br1 by MAC with DHCP, br2 link only" \
	'[["eth1", "02:4b:b0:00:00:01", [{"type": "dhcp4"}]], ["eth2", "02:4b:b0:00:00:02", []]]' \
	"$(jpy "$AGENT_OUT" "[[c['name'], c['mac_address'], c['subnets']] for c in d['network_config']['config']]")"
expect_eq "openstack: its EC2 crawl (latest/meta-data/ at 169.254.169.254) got the tree" \
	'["default-testvm", "10.244.1.5", ["alice", "bob"]]' \
	"$(jpy "$AGENT_OUT" "[d['ec2_meta_data']['instance-id'], d['ec2_meta_data']['local-ipv4'], sorted(d['ec2_meta_data']['public-keys'])]")"
ns_stop

# Ignition: the config it fetches is the user-data, applied by its files stage.
IGN_ROOT=$TEST_TMP/ign-root
ign() { # stage
	ip netns exec "$NS" env PATH="$TEST_TMP/bin:$PATH" "$IGNITION" -platform openstack -stage "$1" -log-to-stdout \
		-config-cache "$TEST_TMP/ign.json" -state-file "$TEST_TMP/ign.state" -root "$IGN_ROOT" \
		-fetch-timeout 20s >>"$TEST_TMP/ign.log" 2>&1
}
if [[ ! -x $IGNITION ]]; then
	not_ok "Ignition installed ($IGNITION)" "hack/install-deps.sh test installs Debian's ignition"
else
	cat >"$D/ign" <<'EOF'
{"ignition":{"version":"3.3.0"},"storage":{"files":[{"path":"/etc/imds-ignition","mode":420,"contents":{"source":"data:,served%20by%20imds-server%0A"}}]}}
EOF
	# Debian's Ignition is built to relabel what its files stage wrote
	# (internal/distro: selinuxRelabel "true"): it reads the root's SELinux
	# policy name and runs setfiles.  This host has no SELinux, so a stand-in
	# setfiles records what it was asked to relabel.
	mkdir -p "$IGN_ROOT/etc/selinux" "$TEST_TMP/bin"
	printf 'SELINUX=enforcing\nSELINUXTYPE=targeted\n' >"$IGN_ROOT/etc/selinux/config"
	printf '#!/bin/sh\necho "$*" >"%s"\ntr "\\000" "\\n" >>"%s"\n' "$TEST_TMP/setfiles.args" \
		"$TEST_TMP/setfiles.args" >"$TEST_TMP/bin/setfiles"
	chmod +x "$TEST_TMP/bin/setfiles"
	ns_start IMDS_USER_DATA_FILE="$D/ign" || not_ok "server for Ignition" "$(cat "$NS_LOG")"
	t0=$EPOCHREALTIME
	if ign fetch && ign files; then
		ok "Ignition -platform openstack: fetch and files stages succeeded ($(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.2f", b-a}') s)"
	else
		not_ok "Ignition -platform openstack: fetch and files stages succeeded" "$(tail -n 20 "$TEST_TMP/ign.log")"
	fi
	expect_eq "Ignition wrote the config's file (contents, mode 0644)" "served by imds-server:644" \
		"$(cat "$IGN_ROOT/etc/imds-ignition" 2>/dev/null):$(stat -c %a "$IGN_ROOT/etc/imds-ignition" 2>/dev/null)"
	expect_eq "Ignition's files stage had setfiles relabel the file it wrote" \
		"-vF0 -r $IGN_ROOT $IGN_ROOT/etc/selinux/targeted/contexts/files/file_contexts -f -:1" \
		"$(head -n 1 "$TEST_TMP/setfiles.args" 2>/dev/null):$(grep -cx "$IGN_ROOT/etc/imds-ignition" "$TEST_TMP/setfiles.args" 2>/dev/null)"
	expect_eq "Ignition asked once, for openstack/latest/user_data (200)" 1 \
		"$(grep -c 'GET /openstack/latest/user_data 200' "$NS_LOG")"
	ns_stop
	# No user-data: 404, which Ignition reads as "no config" and goes on.
	rm -f "$TEST_TMP/ign.json" "$TEST_TMP/ign.state"
	: >"$TEST_TMP/ign.log"
	ns_start || not_ok "server for Ignition (no user-data)" "$(cat "$NS_LOG")"
	if ign fetch; then
		ok "Ignition with no user-data (404): fetch stage succeeds with no config"
	else
		not_ok "Ignition with no user-data (404): fetch stage succeeds with no config" "$(tail -n 20 "$TEST_TMP/ign.log")"
	fi
	expect_eq "... after one 404" 1 "$(grep -c 'GET /openstack/latest/user_data 404' "$NS_LOG")"
	ns_stop
fi

expect_eq "no sanitizer report in the servers' logs" 0 \
	"$(cat "$TEST_TMP"/server.*.log "$TEST_TMP"/ns.*.log 2>/dev/null | grep -c 'ERROR: AddressSanitizer\|runtime error')"
tap_done
