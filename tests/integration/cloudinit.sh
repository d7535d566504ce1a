#!/usr/bin/env bash
# Debian's real cloud-init (22.4, /usr/bin/python3) as the client of
# `imds-server serve`: DataSourceNoCloudNet.get_data() with the DMI serial
# the webhook injects, and util.read_seeded, against byte-exact payloads.
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/server.sh
. "$(dirname "$0")/../lib/server.sh"

CLIENT=$REPO/tests/lib/cloudinit_client.py
if ! "$PY" -c 'import cloudinit' 2>/dev/null; then
	not_ok "Debian's cloud-init importable by $PY" "install the cloud-init package (hack/install-deps.sh test)"
	tap_done
	exit 1
fi

# jget FILE KEY: one field of the client's JSON answer.
jget() {
	"$PY" -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print("null" if v is None else (str(v).lower() if isinstance(v,bool) else v))' "$1" "$2"
}
sha() { sha256sum "$1" | cut -d' ' -f1; }

# fetch NAME [mode]: runs the client against the running server; result in $TEST_TMP/NAME.json
fetch() {
	if [[ -z "${SRV_URL:-}" ]]; then
		not_ok "server for $1 started"
		tap_done
		exit 1
	fi
	local out=$TEST_TMP/$1.json
	"$PY" "$CLIENT" --serial "ds=nocloud;s=$SRV_URL/v1/;dsmode=net" --mode "${2:-datasource}" \
		>"$out" 2>"$TEST_TMP/$1.err"
	FETCH_STATUS=$?
	FETCH_OUT=$out
}

# A fetch with no retries, under one second of fetch time (imports excluded).
expect_fast_ok() {
	local name=$1
	expect_eq "$name: get_data() succeeded" "0:true" "$FETCH_STATUS:$(jget "$FETCH_OUT" ok)"
	expect_eq "$name: no retries" 0 "$(jget "$FETCH_OUT" retries)"
	local el
	el=$(jget "$FETCH_OUT" elapsed_s)
	if "$PY" -c "import sys; sys.exit(0 if float('$el') < 1.0 else 1)"; then
		ok "$name: whole fetch under 1 s (${el} s)"
	else
		not_ok "$name: whole fetch under 1 s" "elapsed_s=$el" "$(cat "$FETCH_OUT")"
	fi
}

D=$TEST_TMP/data
mkdir -p "$D"

# --- 1: 200 KiB cloud-config, vendor-data and network-config configured
"$PY" -c '
import sys
out = ["#cloud-config", "write_files:"]
for i in range(1, 2700):
    out.append("  - path: /etc/imds/file-%05d\n    content: \"%s\"" % (i, "x" * 40))
sys.stdout.write("\n".join(out) + "\n")' >"$D/big.yaml"
head -c 204800 "$D/big.yaml" >"$D/ud-200k"
printf '#cloud-config\nruncmd:\n  - echo vendor\n' >"$D/vendor"
printf 'version: 2\nethernets:\n  eth0:\n    dhcp4: true\n' >"$D/netcfg"
server_start IMDS_USER_DATA_FILE="$D/ud-200k" IMDS_VENDOR_DATA_FILE="$D/vendor" \
	IMDS_NETWORK_CONFIG_FILE="$D/netcfg"
fetch all
expect_fast_ok "all configured"
expect_eq "all configured: user-data is 204800 bytes" 204800 "$(jget "$FETCH_OUT" userdata_len)"
expect_eq "all configured: 200 KiB user-data byte-exact" "$(sha "$D/ud-200k")" "$(jget "$FETCH_OUT" userdata_sha256)"
expect_eq "all configured: vendor-data byte-exact" "$(sha "$D/vendor")" "$(jget "$FETCH_OUT" vendordata_sha256)"
expect_eq "all configured: instance-id" default-testvm "$(jget "$FETCH_OUT" instance_id)"
expect_eq "all configured: hostname" testvm "$(jget "$FETCH_OUT" local_hostname)"
expect_eq "all configured: dsmode net (network stage applies user-data)" "net:true" \
	"$(jget "$FETCH_OUT" dsmode):$(jget "$FETCH_OUT" network_stage_proceeds)"
# cloud-init 22.4 does not request network-config over HTTP; the server still serves it.
expect_eq "all configured: network-config served byte-exact" "$(sha "$D/netcfg")" \
	"$(curl -s "$SRV_URL/v1/network-config" | sha256sum | cut -d' ' -f1)"
NETCFG_UNASKED='network-config: configured, but the guest asked for user-data without asking for network-config first'
expect_eq "all configured: the log says once why the network-config had no effect (22.4 never asks)" 1 \
	"$(grep -c "$NETCFG_UNASKED" "$SRV_LOG")"
fetch seeded read_seeded
expect_fast_ok "read_seeded"
expect_eq "read_seeded: user-data byte-exact" "$(sha "$D/ud-200k")" "$(jget "$FETCH_OUT" userdata_sha256)"
fetch both both
expect_eq "datasource and read_seeded agree" true "$(jget "$FETCH_OUT" consistent)"
server_stop

# --- 2: nothing configured: empty 200s, no retries
server_start
fetch none
expect_fast_ok "nothing configured"
expect_eq "nothing configured: empty user-data" 0 "$(jget "$FETCH_OUT" userdata_len)"
expect_eq "nothing configured: empty vendor-data" 0 "$(jget "$FETCH_OUT" vendordata_len)"
expect_eq "nothing configured: instance-id" default-testvm "$(jget "$FETCH_OUT" instance_id)"
expect_eq "nothing configured: no network-config line in the log" 0 "$(grep -c "$NETCFG_UNASKED" "$SRV_LOG")"
server_stop

# --- 2b: a guest that asks for network-config before user-data (cloud-init 24.3+): no such line
server_start IMDS_NETWORK_CONFIG_FILE="$D/netcfg"
curl -s -o /dev/null "$SRV_URL/v1/meta-data" && curl -s -o /dev/null "$SRV_URL/v1/network-config" &&
	curl -s -o /dev/null "$SRV_URL/v1/user-data"
server_stop
expect_eq "network-config asked first: no 'not applied' line in the log" 0 "$(grep -c "$NETCFG_UNASKED" "$SRV_LOG")"

# --- 3: gzip-compressed binary user-data, byte-exact
printf '#!/bin/sh\necho hello from gzip\n' | gzip -9n >"$D/ud.gz"
server_start IMDS_USER_DATA_FILE="$D/ud.gz"
fetch gzip
expect_fast_ok "gzip user-data"
expect_eq "gzip user-data: raw bytes byte-exact" "$(sha "$D/ud.gz")" "$(jget "$FETCH_OUT" userdata_sha256)"
expect_eq "gzip user-data: cloud-init recognised gzip" true "$(jget "$FETCH_OUT" userdata_gzip)"
server_stop

# --- 4: MIME multipart user-data, byte-exact, both parts seen
cat >"$D/mime" <<'MIME'
Content-Type: multipart/mixed; boundary="===============imds=="
MIME-Version: 1.0

--===============imds==
Content-Type: text/cloud-config; charset="us-ascii"
Content-Disposition: attachment; filename="config.yaml"

#cloud-config
hostname: from-mime

--===============imds==
Content-Type: text/x-shellscript; charset="us-ascii"
Content-Disposition: attachment; filename="script.sh"

#!/bin/sh
echo mime
--===============imds==--
MIME
server_start IMDS_USER_DATA_FILE="$D/mime"
fetch mime
expect_fast_ok "MIME multipart"
expect_eq "MIME multipart: byte-exact" "$(sha "$D/mime")" "$(jget "$FETCH_OUT" userdata_sha256)"
expect_eq "MIME multipart: two parts" 2 "$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["userdata_parts"]))' "$FETCH_OUT")"
server_stop

# --- 5: inline user-data (IMDS_USER_DATA)
server_start IMDS_USER_DATA=$'#cloud-config\nhostname: inline\n'
fetch inline
expect_fast_ok "inline user-data"
expect_eq "inline user-data: byte-exact" "$(printf '#cloud-config\nhostname: inline\n' | sha256sum | cut -d' ' -f1)" \
	"$(jget "$FETCH_OUT" userdata_sha256)"
server_stop

# --- 6: SSH keys from a Secret folder and custom meta-data, as cloud-init reads them
mkdir -p "$D/keys/..1" && ln -s ..1 "$D/keys/..data" && ln -s ..data/ops "$D/keys/ops" && ln -s ..data/dev "$D/keys/dev"
ssh-keygen -q -t ed25519 -N '' -C 'ops@example' -f "$D/k1" && ssh-keygen -q -t ecdsa -N '' -C 'dev' -f "$D/k2"
{ cat "$D/k1.pub"; echo '# a comment'; echo 'not a key'; } >"$D/keys/..1/ops"
cp "$D/k2.pub" "$D/keys/..1/dev"
printf '{"role":"db","tier":"2024-01-01","note":"a: b #c"}' >"$D/meta.json"
server_start IMDS_SSH_KEYS_DIR="$D/keys" IMDS_META_DATA_FILE="$D/meta.json"
fetch keys
expect_fast_ok "keys and custom meta-data"
expect_eq "keys: cloud-init's public keys, entry order then line" \
	"$(cut -d' ' -f1-3 "$D/k2.pub")|$(cut -d' ' -f1-3 "$D/k1.pub")" \
	"$("$PY" -c 'import json,sys; print("|".join(json.load(open(sys.argv[1]))["public_keys"]))' "$FETCH_OUT")"
expect_eq "custom meta-data: cloud-init reads each key back as the same string" \
	'role=db tier=2024-01-01 note=a: b #c' \
	"$("$PY" -c 'import json,sys; m=json.load(open(sys.argv[1]))["metadata"]; print(" ".join("%s=%s" % (k, m[k]) for k in ("role","tier","note")))' "$FETCH_OUT")"
server_stop

# --- 7: instance-ids that YAML would turn into something else, read back by PyYAML
for iid in '2024-01-01' 'no' 'NULL' '0x1F' 'a: b #c' ' lead-space' 'ünïcødé-✓' '"quoted"\back' '-dash'; do
	SRV_URL=
	server_start IMDS_INSTANCE_ID="$iid"
	fetch iid
	expect_eq "instance-id $(printf '%q' "$iid") read back exactly by cloud-init" "$iid" "$(jget "$FETCH_OUT" instance_id)"
	server_stop
done

tap_done
