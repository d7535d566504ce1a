#!/usr/bin/env bash
# Certificates for imds-webhook without cert-manager (deploy/overlays/manual):
# an ECDSA P-256 CA and a serving certificate for the Service's DNS names,
# applied as the Secret imds-webhook-tls, and the CA in the caBundle of every
# webhook of the MutatingWebhookConfiguration imds-webhook. Rotates without an
# outage (docs/operations.md, "Certificates").
#
#   hack/generate-certs.sh --context kind-kind       # install, or rotate the leaf
#   hack/generate-certs.sh --context CTX --renew-before 30   # cron: only when due
#   hack/generate-certs.sh --context CTX --rotate-ca # new CA, bundle old+new
#   hack/generate-certs.sh --context CTX --drop-old-ca   # later: bundle = new CA
#   hack/generate-certs.sh --dry-run DIR             # only write ca.crt, tls.crt, tls.key
#
# Options:
#   --context CTX     kubeconfig context (required unless --dry-run; or KUBE_CONTEXT)
#   --kubeconfig F    kubeconfig file (default: kubectl's own lookup)
#   --namespace NS    default kubevirt-imds       --service NAME   default imds-webhook
#   --secret NAME     default imds-webhook-tls     --webhook NAME   default imds-webhook
#   --ca-secret NAME  where the CA and its key are kept (default imds-webhook-ca)
#   --days N          validity of the serving certificate (default 365)
#   --ca-days N       validity of a new CA (default 3650)
#   --renew-before D  do nothing unless the serving certificate or the kept CA expires
#                     within D days (or the certificate is missing, or not signed by
#                     the kept CA)
#   --rotate-ca       a new CA; the caBundle holds the old and the new one
#   --drop-old-ca     the caBundle holds only the kept CA (once every replica serves
#                     a leaf it signed: kubelet updates the Secret's volume within ~2 min);
#                     refused while the Secret's certificate is not signed by the kept CA
#   --san ENTRY       one more subjectAltName (e.g. IP:10.0.0.5); repeatable
#   --dry-run DIR     write the files into DIR and touch no cluster
#
# The CA is kept in the Secret --ca-secret and reused, so a rerun replaces only
# the serving certificate, which the caBundle already trusts: the webhook
# reloads it whenever kubelet updates the volume, and no call fails meanwhile.
# Whenever the CA changes, the caBundle is patched first and keeps the CAs it
# held, so a replica still serving the old leaf is trusted too. A CA that
# would expire before the new serving certificate is replaced the same way
# (as --rotate-ca), so a cron running --renew-before renews the CA as well.
set -euo pipefail

NAMESPACE=kubevirt-imds
SERVICE=imds-webhook
SECRET=imds-webhook-tls
CA_SECRET=imds-webhook-ca
WEBHOOK=imds-webhook
DAYS=365
CA_DAYS=3650
CONTEXT=${KUBE_CONTEXT:-}
KUBECONFIG_ARG=()
DRY_RUN_DIR=""
RENEW_BEFORE=""
ROTATE_CA=0
DROP_OLD_CA=0
EXTRA_SANS=()
KUBECTL=${KUBECTL:-kubectl}

usage() {
	sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-0}"
}

die() {
	printf 'generate-certs: %s\n' "$*" >&2
	exit 1
}
say() {
	printf 'generate-certs: %s\n' "$*" >&2
}

while (($#)); do
	case $1 in
	--context) CONTEXT=${2:?--context needs a value}; shift 2 ;;
	--context=*) CONTEXT=${1#*=}; shift ;;
	--kubeconfig) KUBECONFIG_ARG=(--kubeconfig "${2:?--kubeconfig needs a value}"); shift 2 ;;
	--namespace) NAMESPACE=${2:?}; shift 2 ;;
	--service) SERVICE=${2:?}; shift 2 ;;
	--secret) SECRET=${2:?}; shift 2 ;;
	--ca-secret) CA_SECRET=${2:?}; shift 2 ;;
	--webhook) WEBHOOK=${2:?}; shift 2 ;;
	--days) DAYS=${2:?}; shift 2 ;;
	--ca-days) CA_DAYS=${2:?}; shift 2 ;;
	--renew-before) RENEW_BEFORE=${2:?--renew-before needs a number of days}; shift 2 ;;
	--rotate-ca) ROTATE_CA=1; shift ;;
	--drop-old-ca) DROP_OLD_CA=1; shift ;;
	--san) EXTRA_SANS+=("${2:?--san needs a value}"); shift 2 ;;
	--dry-run) DRY_RUN_DIR=${2:?--dry-run needs a directory}; shift 2 ;;
	-h | --help) usage 0 ;;
	*) printf 'generate-certs: unknown argument %s\n' "$1" >&2; usage 2 ;;
	esac
done

[[ $DAYS =~ ^[1-9][0-9]*$ ]] || die "--days must be a number of days"
[[ $CA_DAYS =~ ^[1-9][0-9]*$ ]] || die "--ca-days must be a number of days"
[[ -z $RENEW_BEFORE || $RENEW_BEFORE =~ ^[0-9]+$ ]] || die "--renew-before must be a number of days"
((ROTATE_CA + DROP_OLD_CA < 2)) || die "--rotate-ca and --drop-old-ca: one at a time (the second after kubelet has updated every replica)"
for s in "${EXTRA_SANS[@]}"; do
	[[ $s =~ ^(DNS|IP):[A-Za-z0-9.:*-]+$ ]] || die "--san '$s': DNS:name or IP:address"
done
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

new_ca() { # dir
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$1/ca.key" -out "$1/ca.crt" -days "$CA_DAYS" -sha256 \
		-subj "/CN=$SERVICE.$NAMESPACE CA $(date -u +%Y%m%dT%H%M%SZ)" \
		-addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" \
		-addext "subjectKeyIdentifier=hash" 2>"$TMP/openssl.log" ||
		die "openssl (CA) failed: $(cat "$TMP/openssl.log")"
}

# secret_key NAME KEY: the base64-decoded value, or nothing.
secret_key() {
	kctl -n "$NAMESPACE" get secret "$1" -o "go-template={{index .data \"$2\"}}" 2>/dev/null |
		base64 -d 2>/dev/null || true
}

# --- the CA: kept in the cluster and reused, unless --rotate-ca or none yet
mkdir -p "$TMP/ca"
CA_CHANGED=0
if [[ -n $DRY_RUN_DIR ]]; then
	new_ca "$TMP/ca"
else
	kctl get mutatingwebhookconfiguration "$WEBHOOK" -o name >/dev/null 2>&1 ||
		die "MutatingWebhookConfiguration $WEBHOOK not found: apply deploy/overlays/manual first"
	secret_key "$CA_SECRET" tls.crt >"$TMP/ca/ca.crt"
	secret_key "$CA_SECRET" tls.key >"$TMP/ca/ca.key"
	if [[ ! -s $TMP/ca/ca.crt || ! -s $TMP/ca/ca.key ]]; then
		say "no CA in Secret $NAMESPACE/$CA_SECRET: making one"
		new_ca "$TMP/ca"
		CA_CHANGED=1
	elif ((ROTATE_CA)); then
		say "--rotate-ca: a new CA; the caBundle keeps the old one until --drop-old-ca"
		new_ca "$TMP/ca"
		CA_CHANGED=1
	elif ((!DROP_OLD_CA)) && ! openssl x509 -in "$TMP/ca/ca.crt" -noout -checkend $((DAYS * 86400)) >/dev/null 2>&1 &&
		{ [[ -z $RENEW_BEFORE ]] ||
			! openssl x509 -in "$TMP/ca/ca.crt" -noout -checkend $((RENEW_BEFORE * 86400)) >/dev/null 2>&1; }; then
		# The new leaf would outlive its CA (a plain run), or the CA is
		# itself due (--renew-before): a new CA, rotated as --rotate-ca.
		say "the kept CA expires $(openssl x509 -in "$TMP/ca/ca.crt" -noout -enddate | cut -d= -f2), before a $DAYS-day certificate would: a new CA; the caBundle keeps the old one until --drop-old-ca"
		new_ca "$TMP/ca"
		CA_CHANGED=1
	fi
fi

# --- --drop-old-ca: only once the Secret holds a leaf of the kept CA, or
# every replica would be refused as soon as the bundle loses the old CA.
if ((DROP_OLD_CA)); then
	secret_key "$SECRET" tls.crt >"$TMP/live.crt"
	openssl verify -CAfile "$TMP/ca/ca.crt" "$TMP/live.crt" >/dev/null 2>&1 ||
		die "--drop-old-ca: the certificate in Secret $NAMESPACE/$SECRET is not signed by the CA kept in $NAMESPACE/$CA_SECRET; dropping the other CAs now would refuse every admission. Run hack/generate-certs.sh (or --rotate-ca) to completion first, wait for kubelet (~2 min), then --drop-old-ca"
fi

# --- is the serving certificate due?
if [[ -z $DRY_RUN_DIR && -n $RENEW_BEFORE && $CA_CHANGED == 0 && $DROP_OLD_CA == 0 ]]; then
	secret_key "$SECRET" tls.crt >"$TMP/live.crt"
	if [[ -s $TMP/live.crt ]] &&
		openssl x509 -in "$TMP/live.crt" -noout -checkend $((RENEW_BEFORE * 86400)) >/dev/null 2>&1 &&
		openssl verify -CAfile "$TMP/ca/ca.crt" "$TMP/live.crt" >/dev/null 2>&1; then
		say "Secret $NAMESPACE/$SECRET is valid beyond $RENEW_BEFORE days ($(openssl x509 -in "$TMP/live.crt" -noout -enddate)): nothing to do"
		exit 0
	fi
	say "Secret $NAMESPACE/$SECRET expires within $RENEW_BEFORE days, is missing or not signed by the kept CA: renewing"
fi

# --- the serving certificate, signed by the CA
san=""
for n in "${DNS_NAMES[@]}"; do
	san+="${san:+,}DNS:$n"
done
for n in "${EXTRA_SANS[@]}"; do
	san+=",$n"
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
openssl x509 -req -in "$TMP/tls.csr" -CA "$TMP/ca/ca.crt" -CAkey "$TMP/ca/ca.key" \
	-set_serial "0x$(openssl rand -hex 16)" -out "$TMP/tls.crt" -days "$DAYS" -sha256 \
	-extfile "$TMP/server.ext" 2>"$TMP/openssl.log" ||
	die "openssl (sign) failed: $(cat "$TMP/openssl.log")"
openssl verify -CAfile "$TMP/ca/ca.crt" "$TMP/tls.crt" >/dev/null ||
	die "the new certificate does not verify"

if [[ -n $DRY_RUN_DIR ]]; then
	mkdir -p "$DRY_RUN_DIR"
	install -m 0644 "$TMP/ca/ca.crt" "$DRY_RUN_DIR/ca.crt"
	install -m 0644 "$TMP/tls.crt" "$DRY_RUN_DIR/tls.crt"
	install -m 0600 "$TMP/tls.key" "$DRY_RUN_DIR/tls.key"
	say "wrote $DRY_RUN_DIR/{ca.crt,tls.crt,tls.key} for ${DNS_NAMES[*]}"
	exit 0
fi

# --- 1. the CA kept (before anything trusts it, so a rerun finds it)
if ((CA_CHANGED)); then
	kctl -n "$NAMESPACE" create secret generic "$CA_SECRET" --type=kubernetes.io/tls \
		--from-file=tls.crt="$TMP/ca/ca.crt" --from-file=tls.key="$TMP/ca/ca.key" \
		--dry-run=client -o yaml >"$TMP/ca-secret.yaml"
	kctl apply -f "$TMP/ca-secret.yaml" >/dev/null
	say "CA kept in Secret $NAMESPACE/$CA_SECRET"
fi

# --- 2. the caBundle: before the Secret, so whichever leaf a replica serves
# while kubelet catches up is trusted. It keeps the CAs it held when the CA
# changes (unexpired ones), and holds only the kept CA after --drop-old-ca.
count=$(kctl get mutatingwebhookconfiguration "$WEBHOOK" -o go-template='{{len .webhooks}}')
kctl get mutatingwebhookconfiguration "$WEBHOOK" \
	-o go-template='{{with index .webhooks 0}}{{with .clientConfig.caBundle}}{{.}}{{end}}{{end}}' |
	base64 -d >"$TMP/old-bundle.pem" 2>/dev/null || true
: >"$TMP/bundle.pem"
if ((!DROP_OLD_CA)); then
	# each certificate of the old bundle, unless it expired or is the kept CA
	awk -v dir="$TMP" '/-----BEGIN CERTIFICATE-----/{n++} n{print > (dir "/prev-" n ".pem")}' "$TMP/old-bundle.pem"
	ca_fp=$(openssl x509 -in "$TMP/ca/ca.crt" -noout -fingerprint -sha256)
	for f in "$TMP"/prev-*.pem; do
		[[ -e $f ]] || continue
		openssl x509 -in "$f" -noout -checkend 0 >/dev/null 2>&1 || continue
		[[ $(openssl x509 -in "$f" -noout -fingerprint -sha256) == "$ca_fp" ]] && continue
		openssl x509 -in "$f" >>"$TMP/bundle.pem"
	done
fi
cat "$TMP/ca/ca.crt" >>"$TMP/bundle.pem"
ncas=$(grep -c 'BEGIN CERTIFICATE' "$TMP/bundle.pem")
ca_b64=$(base64 -w0 "$TMP/bundle.pem")
patch="["
for ((i = 0; i < count; i++)); do
	((i > 0)) && patch+=","
	patch+="{\"op\":\"add\",\"path\":\"/webhooks/$i/clientConfig/caBundle\",\"value\":\"$ca_b64\"}"
done
patch+="]"
kctl patch mutatingwebhookconfiguration "$WEBHOOK" --type=json -p "$patch" >/dev/null
say "caBundle ($ncas CA(s)) set on $count webhook(s) of $WEBHOOK"
if ((DROP_OLD_CA)); then
	exit 0
fi

# --- 3. the serving pair (kubernetes.io/tls; ca.crt beside it, as cert-manager does)
kctl -n "$NAMESPACE" create secret generic "$SECRET" --type=kubernetes.io/tls \
	--from-file=tls.crt="$TMP/tls.crt" --from-file=tls.key="$TMP/tls.key" \
	--from-file=ca.crt="$TMP/ca/ca.crt" --dry-run=client -o yaml >"$TMP/secret.yaml"
kctl apply -f "$TMP/secret.yaml" >/dev/null
say "Secret $NAMESPACE/$SECRET applied (valid $DAYS days; kubelet updates the pods' volume within ~2 min, the webhook reloads it)"
