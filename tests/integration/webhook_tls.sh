#!/usr/bin/env bash
# imds-webhook's TLS: ECDSA and RSA pairs, TLS 1.2+ with ALPN http/1.1,
# rotation by kubelet's atomic ..data swap while a client keeps a connection
# open, a broken pair refused, readiness, metrics, graceful SIGTERM.
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/certs.sh
. "$(dirname "$0")/../lib/certs.sh"
REPO=$(cd "$(dirname "$0")/../.." && pwd)
VARIANT=${IMDS_VARIANT:-debug}
WH=$REPO/build/$VARIANT/imds-webhook
PY=/usr/bin/python3
CLIENT=$REPO/tests/lib/tls_client.py
T=$(mktemp -d "${TMPDIR:-/tmp}/imds-tls.XXXXXX")
WPID=
trap '[[ -n "$WPID" ]] && kill -KILL "$WPID" 2>/dev/null; rm -rf "$T"' EXIT

if [[ ! -x "$WH" ]]; then
	not_ok "imds-webhook built at $WH"
	tap_done
	exit 1
fi

jget() { "$PY" -c 'import json,sys; v=json.loads(sys.stdin.read()).get(sys.argv[1]); print("null" if v is None else v)' "$1"; }

certs_ca "$T/ca"
certs_leaf "$T/ca" "$T/a" ec 0A01
certs_leaf "$T/ca" "$T/b" rsa 0B02
certs_leaf "$T/ca" "$T/c" ec 0C03
# A broken pair: c's certificate with b's key.
mkdir -p "$T/broken"
cp "$T/c/tls.crt" "$T/broken/tls.crt"
cp "$T/b/tls.key" "$T/broken/tls.key"
CERTS=$T/certs
kubelet_dir "$CERTS" 2024_a "$T/a"

wh_start() {
	LOG=$T/webhook.$RANDOM.log
	"$WH" --listen 127.0.0.1:0 --tls-cert-file "$CERTS/tls.crt" --tls-key-file "$CERTS/tls.key" \
		--imds-image registry.example/imds-server:test 2>"$LOG" &
	WPID=$!
	PORT=
	for _ in $(seq 200); do
		PORT=$(sed -n 's/.* on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$LOG" | head -n1)
		[[ -n "$PORT" ]] && break
		sleep 0.01
	done
}

wh_start
if [[ -z "$PORT" ]]; then
	not_ok "webhook started" "$(cat "$LOG")"
	tap_done
	exit 1
fi
ok "webhook started with an ECDSA pair"
r=$("$PY" "$CLIENT" get "$PORT" /healthz --ca "$T/ca/ca.crt")
expect_eq "healthz over TLS" 200 "$(jget status <<<"$r")"
expect_eq "ECDSA certificate served" 0A01 "$(jget serial <<<"$r")"
expect_eq "ALPN picks http/1.1 from h2,http/1.1" http/1.1 "$(jget alpn <<<"$r")"
r=$("$PY" "$CLIENT" get "$PORT" /readyz --ca "$T/ca/ca.crt")
expect_eq "readyz once a certificate is loaded" 200 "$(jget status <<<"$r")"
if openssl s_client -connect "127.0.0.1:$PORT" -tls1_1 </dev/null >/dev/null 2>&1; then
	not_ok "TLS 1.1 refused"
else
	ok "TLS 1.1 refused"
fi
check "TLS 1.2 accepted" bash -c "openssl s_client -connect 127.0.0.1:$PORT -tls1_2 </dev/null 2>/dev/null | grep -q 'Protocol  *: TLSv1.2'"

# Rotation: a keep-alive connection stays open across the swap.
r=$("$PY" "$CLIENT" rotate "$PORT" --ca "$T/ca/ca.crt" --old-serial 0A01 --new-serial 0B02 \
	--swap "bash -c '. $REPO/tests/lib/certs.sh; kubelet_dir $CERTS 2024_b $T/b'")
expect_eq "rotated (RSA) certificate served to new connections" 0B02 "$(jget new_serial <<<"$r")"
secs=$(jget seconds_to_new <<<"$r")
if [[ "$secs" != null ]] && "$PY" -c "import sys; sys.exit(0 if $secs < 1.0 else 1)"; then
	ok "new certificate within 1 s of the swap (${secs} s)"
else
	not_ok "new certificate within 1 s of the swap" "$r"
fi
expect_eq "open connection answers after the swap" 200 "$(jget old_conn_after_swap <<<"$r")"
expect_eq "open connection keeps its certificate" 0A01 "$(jget old_conn_serial <<<"$r")"

# A broken pair is refused and the previous one kept.
kubelet_dir "$CERTS" 2024_broken "$T/broken"
sleep 0.5
r=$("$PY" "$CLIENT" get "$PORT" /healthz --ca "$T/ca/ca.crt")
expect_eq "broken pair refused: previous certificate still served" 0B02 "$(jget serial <<<"$r")"
check "broken pair logged" grep -q "refusing the new certificate pair" "$LOG"
m=$("$PY" "$CLIENT" get "$PORT" /metrics --ca "$T/ca/ca.crt" | jget body)
check "metrics: one successful reload" grep -q 'imds_webhook_certificate_reloads_total{result="success"} 1' <<<"$m"
check "metrics: one failed reload" grep -q 'imds_webhook_certificate_reloads_total{result="failure"} 1' <<<"$m"
exp=$(date -d "$(openssl x509 -in "$T/b/tls.crt" -noout -enddate | cut -d= -f2)" +%s)
check "metrics: certificate expiry" grep -q "imds_webhook_certificate_expiry_timestamp_seconds $exp" <<<"$m"
kubelet_dir "$CERTS" 2024_c "$T/c"
sleep 0.5
r=$("$PY" "$CLIENT" get "$PORT" /healthz --ca "$T/ca/ca.crt")
expect_eq "a good pair after a broken one is taken" 0C03 "$(jget serial <<<"$r")"

kill -TERM "$WPID"
st=0
wait "$WPID" || st=$?
WPID=
expect_eq "SIGTERM: exit 0" 0 "$st"
if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$LOG"; then
	not_ok "sanitizers quiet" "$(grep -A20 Sanitizer "$LOG" | head -30)"
fi

# Started before the Secret is mounted: not ready, then ready when it appears.
rm -rf "$CERTS"
mkdir -p "$CERTS"
wh_start
if "$PY" "$CLIENT" get "$PORT" /readyz --ca "$T/ca/ca.crt" >/dev/null 2>&1; then
	not_ok "no certificate yet: handshakes refused"
else
	ok "no certificate yet: handshakes refused"
fi
kubelet_dir "$CERTS" 2024_a "$T/a"
sleep 0.5
r=$("$PY" "$CLIENT" get "$PORT" /readyz --ca "$T/ca/ca.crt")
expect_eq "ready once the certificate appears" 200 "$(jget status <<<"$r")"
kill -TERM "$WPID"
wait "$WPID"
WPID=
tap_done
