# certs.sh — throwaway CAs and serving certificates for TLS tests (sourced).
#   certs_ca DIR                         CA key + cert in DIR/ca.{key,crt}
#   certs_leaf DIR OUT KEYTYPE SERIAL    OUT/tls.{key,crt} signed by DIR's CA;
#                                        KEYTYPE ec (P-256) or rsa (2048);
#                                        SERIAL in hex, e.g. 0A01
#   kubelet_dir CERTDIR NAME SRCDIR      stage SRCDIR's pair as kubelet does:
#                                        CERTDIR/..NAME/, then swap ..data to it
# shellcheck shell=bash

certs_ca() {
	mkdir -p "$1"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/CN=imds test CA" -keyout "$1/ca.key" -out "$1/ca.crt" 2>/dev/null
}

certs_leaf() {
	local ca=$1 out=$2 type=$3 serial=$4
	mkdir -p "$out"
	if [[ $type == ec ]]; then
		openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$out/tls.key" 2>/dev/null
	else
		openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$out/tls.key" 2>/dev/null
	fi
	openssl req -new -key "$out/tls.key" -subj "/CN=imds-webhook.kubevirt-imds.svc" \
		-out "$out/tls.csr" 2>/dev/null
	printf 'subjectAltName=DNS:imds-webhook.kubevirt-imds.svc,DNS:imds-webhook.kubevirt-imds.svc.cluster.local,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$out/ext"
	openssl x509 -req -in "$out/tls.csr" -CA "$ca/ca.crt" -CAkey "$ca/ca.key" -set_serial "0x$serial" \
		-days 1 -extfile "$out/ext" -out "$out/tls.crt" 2>/dev/null
}

# Kubelet's atomic writer: files live in a timestamped dir, ..data points at
# it, and the visible names are symlinks through ..data; an update writes a
# new dir and renames a new ..data symlink over the old one.
kubelet_dir() {
	local dir=$1 name=$2 src=$3
	mkdir -p "$dir/..$name"
	cp "$src/tls.crt" "$src/tls.key" "$dir/..$name/"
	ln -sfn "..$name" "$dir/..data_tmp"
	mv -T "$dir/..data_tmp" "$dir/..data"
	[[ -L "$dir/tls.crt" ]] || ln -s ..data/tls.crt "$dir/tls.crt"
	[[ -L "$dir/tls.key" ]] || ln -s ..data/tls.key "$dir/tls.key"
}
