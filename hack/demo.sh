#!/usr/bin/env bash
# make demo: the sidecar serving a VM's metadata, and Debian's real
# cloud-init fetching it the way a booting guest does.
# (Loopback for now; runs as any user.)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
PY=/usr/bin/python3

make --no-print-directory all >/dev/null
BIN=$REPO/build/debug/imds-server
WORK=$(mktemp -d "${TMPDIR:-/tmp}/imds-demo.XXXXXX")
SRV=
cleanup() {
	[[ -n "$SRV" ]] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; echo; }

b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }
exp=$(($(date +%s) + 3600))
mkdir -p "$WORK/tokens"
printf '%s.%s.%s\n' "$(printf '{"alg":"RS256","kid":"demo"}' | b64url)" \
	"$(printf '{"aud":["https://kubernetes.default.svc"],"exp":%d,"sub":"system:serviceaccount:demo:default"}' "$exp" | b64url)" \
	"$(printf 'not-a-real-signature' | b64url)" >"$WORK/tokens/token"
cat >"$WORK/user-data" <<'UD'
#cloud-config
hostname: demo-vm
write_files:
  - path: /etc/motd
    content: "Configured by kubevirt-imds\n"
runcmd:
  - [ sh, -c, 'curl -s -H "Metadata: true" http://169.254.169.254/v1/identity' ]
UD

say "Starting the sidecar (imds-server serve) with a demo VM's identity"
IMDS_NAMESPACE=demo IMDS_VM_NAME=demo-vm IMDS_POD_NAME=virt-launcher-demo-vm-abcde \
	IMDS_SA_NAME=default IMDS_TOKEN_PATH="$WORK/tokens/token" \
	IMDS_USER_DATA_FILE="$WORK/user-data" \
	"$BIN" serve --listen 127.0.0.1:0 2>"$WORK/server.log" &
SRV=$!
for _ in $(seq 100); do
	PORT=$(sed -n 's/.* on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$WORK/server.log")
	[[ -n "$PORT" ]] && break
	sleep 0.02
done
[[ -n "${PORT:-}" ]] || { cat "$WORK/server.log"; exit 1; }
URL=http://127.0.0.1:$PORT
head -n1 "$WORK/server.log"

say "What the guest gets"
run curl -s "$URL/healthz"
run curl -s "$URL/v1/meta-data"
run curl -s "$URL/v1/user-data"
run curl -s -H 'Metadata: true' "$URL/v1/identity"
run curl -s -H 'Metadata: true' "$URL/v1/token"
say "Without the Metadata header, the token is refused"
run curl -s -w 'HTTP %{http_code}\n' "$URL/v1/token"
say "Windows guests (cloudbase-init) read the OpenStack layout"
run curl -s "$URL/openstack/latest/meta_data.json"

say "Debian's cloud-init (DataSourceNoCloudNet) fetching it, with the DMI serial the webhook sets"
serial="ds=nocloud;s=$URL/v1/;dsmode=net"
echo "serial: $serial"
"$PY" tests/lib/cloudinit_client.py --serial "$serial" >"$WORK/ci.json"
"$PY" - "$WORK/ci.json" <<'PYEOF'
import base64, json, sys
r = json.load(open(sys.argv[1]))
print("get_data():      ", "success" if r["ok"] else "FAILED: %s" % r["error"])
print("instance-id:     ", r["instance_id"])
print("local-hostname:  ", r["local_hostname"])
print("requests:        ", ", ".join("%s %s" % (q["url"].rsplit("/", 1)[1], q["status"]) for q in r["requests"]))
print("retries:         ", r["retries"], " fetch time: %.3f s" % r["elapsed_s"])
print("user-data (%d bytes):" % r["userdata_len"])
print(base64.b64decode(r["userdata_b64"]).decode().rstrip())
PYEOF

say "The sidecar's access log (no token or user-data in it)"
kill -TERM "$SRV"; wait "$SRV" || true; SRV=
cat "$WORK/server.log"
