#!/usr/bin/env bash
# Certificates for imds-webhook without cert-manager (deploy/overlays/manual):
# an ECDSA P-256 CA and a serving certificate for the Service's DNS names,
# applied as the Secret imds-webhook-tls, and the CA patched into the caBundle
# of every webhook of the MutatingWebhookConfiguration imds-webhook.
#
#   hack/generate-certs.sh --context kind-kind
#   KUBE_CONTEXT=kind-kind hack/generate-certs.sh
#   hack/generate-certs.sh --dry-run DIR      # only write ca.crt, tls.crt, tls.key into DIR
#
# Options:
#   --context CTX     kubeconfig context (required unless --dry-run; or KUBE_CONTEXT)
#   --kubeconfig F    kubeconfig file (default: kubectl's own lookup)
#   --namespace NS    default kubevirt-imds       --service NAME   default imds-webhook
#   --secret NAME     default imds-webhook-tls     --webhook NAME   default imds-webhook
#   --days N          validity of the serving certificate (default 365; the CA: 3650)
#   --dry-run DIR     write the files into DIR and touch no cluster
#
# Rerunning makes a new CA and certificate and replaces both; the webhook
# reloads the Secret without a restart (kubelet updates the volume in ~1 min).
set -euo pipefail

NAMESPACE=kubevirt-imds
SERVICE=imds-webhook
SECRET=imds-webhook-tls
WEBHOOK=imds-webhook
DAYS=365
CA_DAYS=3650
CONTEXT=${KUBE_CONTEXT:-}
KUBECONFIG_ARG=()
DRY_RUN_DIR=""
KUBECTL=${KUBECTL:-kubectl}

usage() {
	sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-0}"
}

die() {
	printf 'generate-certs: %s\n' "$*" >&2
	exit 1
}

while (($#)); do
	case $1 in
	--context) CONTEXT=${2:?--context needs a value}; shift 2 ;;
	--context=*) CONTEXT=${1#*=}; shift ;;
	--kubeconfig) KUBECONFIG_ARG=(--kubeconfig "${2:?--kubeconfig needs a value}"); shift 2 ;;
	--namespace) NAMESPACE=${2:?}; shift 2 ;;
	--service) SERVICE=${2:?}; shift 2 ;;
	--secret) SECRET=${2:?}; shift 2 ;;
	--webhook) WEBHOOK=${2:?}; shift 2 ;;
	--days) DAYS=${2:?}; shift 2 ;;
	--dry-run) DRY_RUN_DIR=${2:?--dry-run needs a directory}; shift 2 ;;
	-h | --help) usage 0 ;;
	*) printf 'generate-certs: unknown argument %s\n' "$1" >&2; usage 2 ;;
	esac
done

[[ $DAYS =~ ^[0-9]+$ ]] || die "--days must be a number"
if [[ -z $DRY_RUN_DIR && -z $CONTEXT ]]; then
	die "no context: pass --context CTX or set KUBE_CONTEXT (never the current context)"
fi

# Every call names its context: another project may switch the current one.
kctl() {
	"$KUBECTL" "${KUBECONFIG_ARG[@]}" --context "$CONTEXT" "$@"
}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/imds-certs.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

DNS_NAMES=("$SERVICE.$NAMESPACE.svc" "$SERVICE.$NAMESPACE.svc.cluster.local")

# The CA: ECDSA P-256, CA:TRUE with pathlen 0, only for signing certificates.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$TMP/ca.key" -out "$TMP/ca.crt" -days "$CA_DAYS" -sha256 \
	-subj "/CN=$SERVICE.$NAMESPACE CA" \
	-addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
	-addext "keyUsage=critical,keyCertSign,cRLSign" \
	-addext "subjectKeyIdentifier=hash" 2>"$TMP/openssl.log" ||
	die "openssl (CA) failed: $(cat "$TMP/openssl.log")"

san=""
for n in "${DNS_NAMES[@]}"; do
	san+="${san:+,}DNS:$n"
done
cat >"$TMP/server.ext" <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=$san
authorityKeyIdentifier=keyid
subjectKeyIdentifier=hash
EOF
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$TMP/tls.key" -out "$TMP/tls.csr" -subj "/CN=${DNS_NAMES[0]}" \
	2>"$TMP/openssl.log" || die "openssl (key) failed: $(cat "$TMP/openssl.log")"
openssl x509 -req -in "$TMP/tls.csr" -CA "$TMP/ca.crt" -CAkey "$TMP/ca.key" \
	-CAcreateserial -out "$TMP/tls.crt" -days "$DAYS" -sha256 -extfile "$TMP/server.ext" \
	2>"$TMP/openssl.log" || die "openssl (sign) failed: $(cat "$TMP/openssl.log")"
openssl verify -CAfile "$TMP/ca.crt" "$TMP/tls.crt" >/dev/null ||
	die "the new certificate does not verify"

if [[ -n $DRY_RUN_DIR ]]; then
	mkdir -p "$DRY_RUN_DIR"
	install -m 0644 "$TMP/ca.crt" "$DRY_RUN_DIR/ca.crt"
	install -m 0644 "$TMP/tls.crt" "$DRY_RUN_DIR/tls.crt"
	install -m 0600 "$TMP/tls.key" "$DRY_RUN_DIR/tls.key"
	printf 'generate-certs: wrote %s/{ca.crt,tls.crt,tls.key} for %s\n' "$DRY_RUN_DIR" "${DNS_NAMES[*]}" >&2
	exit 0
fi

# The Secret (kubernetes.io/tls; ca.crt beside the pair, as cert-manager does).
kctl -n "$NAMESPACE" create secret generic "$SECRET" --type=kubernetes.io/tls \
	--from-file=tls.crt="$TMP/tls.crt" --from-file=tls.key="$TMP/tls.key" \
	--from-file=ca.crt="$TMP/ca.crt" --dry-run=client -o yaml >"$TMP/secret.yaml"
kctl apply -f "$TMP/secret.yaml" >/dev/null
printf 'generate-certs: Secret %s/%s applied\n' "$NAMESPACE" "$SECRET" >&2

# The caBundle of every webhook in the configuration.
count=$(kctl get mutatingwebhookconfiguration "$WEBHOOK" \
	-o go-template='{{len .webhooks}}') ||
	die "MutatingWebhookConfiguration $WEBHOOK not found: apply deploy/overlays/manual first"
ca_b64=$(base64 -w0 "$TMP/ca.crt")
patch="["
for ((i = 0; i < count; i++)); do
	((i > 0)) && patch+=","
	patch+="{\"op\":\"add\",\"path\":\"/webhooks/$i/clientConfig/caBundle\",\"value\":\"$ca_b64\"}"
done
patch+="]"
kctl patch mutatingwebhookconfiguration "$WEBHOOK" --type=json -p "$patch" >/dev/null
printf 'generate-certs: caBundle set on %s webhook(s) of %s\n' "$count" "$WEBHOOK" >&2
