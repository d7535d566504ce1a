#!/usr/bin/env bash
# imds-variants: debug (variant-independent: tests/run.sh runs it in one build)
# hack/generate-certs.sh --dry-run DIR (issue 5): an ECDSA P-256 CA and a
# serving certificate that `openssl verify` accepts, valid for the Service's
# DNS names and nothing else, a private key only the owner reads, and no
# temporary directory left behind. Variant-independent: run in debug only.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/lib/tap.sh
. tests/lib/tap.sh

WORK=$(mktemp -d "${IMDS_TEST_TMPDIR:-/tmp}/deploy-certs.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/tmp"
OUT=$WORK/out

if TMPDIR=$WORK/tmp KUBE_CONTEXT='' hack/generate-certs.sh --dry-run "$OUT" >"$WORK/log" 2>&1; then
	ok "generate-certs.sh --dry-run DIR (no context needed)"
else
	not_ok "generate-certs.sh --dry-run DIR (no context needed)" "$(cat "$WORK/log")"
fi
expect_eq "exactly ca.crt, tls.crt, tls.key written" "ca.crt tls.crt tls.key" \
	"$(cd "$OUT" 2>/dev/null && echo *)"
expect_eq "its temporary directory removed on exit" "" "$(ls -A "$WORK/tmp")"
expect_eq "tls.key mode 600" 600 "$(stat -c %a "$OUT/tls.key" 2>/dev/null)"
check "openssl verify -CAfile ca.crt tls.crt" openssl verify -CAfile "$OUT/ca.crt" "$OUT/tls.crt"
for host in imds-webhook.kubevirt-imds.svc imds-webhook.kubevirt-imds.svc.cluster.local; do
	out=$(openssl x509 -in "$OUT/tls.crt" -noout -checkhost "$host" 2>&1)
	if [[ $out == *"does match"* ]]; then ok "checkhost $host"; else not_ok "checkhost $host" "$out"; fi
done
out=$(openssl x509 -in "$OUT/tls.crt" -noout -checkhost imds-webhook.default.svc 2>&1)
if [[ $out == *"does NOT match"* ]]; then ok "not valid for another name"; else not_ok "not valid for another name" "$out"; fi
for f in ca.crt tls.crt; do
	text=$(openssl x509 -in "$OUT/$f" -noout -text 2>&1)
	if [[ $text == *id-ecPublicKey* && $text == *"NIST CURVE: P-256"* ]]; then
		ok "$f: ECDSA P-256 key"
	else
		not_ok "$f: ECDSA P-256 key" "$(grep -A2 'Public Key' <<<"$text")"
	fi
done
text=$(openssl pkey -in "$OUT/tls.key" -noout -text 2>&1)
if [[ $text == *prime256v1* || $text == *P-256* ]]; then ok "tls.key: EC P-256"; else not_ok "tls.key: EC P-256" "$text"; fi
expect_eq "tls.key matches tls.crt" \
	"$(openssl x509 -in "$OUT/tls.crt" -noout -pubkey | sha256sum)" \
	"$(openssl pkey -in "$OUT/tls.key" -pubout | sha256sum)"
text=$(openssl x509 -in "$OUT/tls.crt" -noout -text)
if [[ $text == *"TLS Web Server Authentication"* && $text == *"CA:FALSE"* ]]; then
	ok "serving cert: serverAuth, CA:FALSE"
else
	not_ok "serving cert: serverAuth, CA:FALSE" "$text"
fi
text=$(openssl x509 -in "$OUT/ca.crt" -noout -text)
if [[ $text == *"CA:TRUE"* && $text == *"Certificate Sign"* ]]; then
	ok "CA: CA:TRUE, keyCertSign"
else
	not_ok "CA: CA:TRUE, keyCertSign" "$text"
fi
# Two runs: two different CAs (nothing reused from a previous run).
hack/generate-certs.sh --dry-run "$WORK/out2" >/dev/null 2>&1
if ! cmp -s "$OUT/ca.crt" "$WORK/out2/ca.crt"; then ok "a second run makes a new CA"; else not_ok "a second run makes a new CA"; fi
if KUBE_CONTEXT='' hack/generate-certs.sh >/dev/null 2>&1; then
	not_ok "without --context or KUBE_CONTEXT (and no --dry-run): refused"
else
	ok "without --context or KUBE_CONTEXT (and no --dry-run): refused"
fi
tap_done
