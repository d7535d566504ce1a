# shellcheck shell=bash
# A throwaway control plane for the webhook tests: Debian's etcd plus the
# kube-apiserver built by hack/build-kube-apiserver.sh, both on loopback.
#
#   source tests/lib/kube.sh
#   trap kube_stop EXIT
#   kube_start "$workdir"          # exports KUBECONFIG_FILE, KUBE_CONTEXT, ...
#   kctl get ns
#
# There is no controller-manager, scheduler or kubelet: objects are stored
# and admitted (which is what a mutating webhook needs), pods never run.
#
# Exports after kube_start:
#   KUBECONFIG_FILE KUBE_CONTEXT  for kctl / kubectl
#   KUBE_APISERVER_URL            https://127.0.0.1:<port>
#   KUBE_CA_FILE                  CA of the apiserver's serving and client certs
#   KUBE_ADMIN_CERT KUBE_ADMIN_KEY  client cert of the admin (system:masters)
#   KUBE_SA_ISSUER                --service-account-issuer (also the audience)
#   KUBE_STATE_DIR                <workdir>/kube: certs, etcd data, logs
#
# Env read:
#   KUBE_BIN_DIR     directory with kube-apiserver and kubectl (default: the
#                    output of hack/build-kube-apiserver.sh, a cache hit when
#                    the binaries are already built)
#   KUBE_KEEP_STATE  1: kube_stop leaves KUBE_STATE_DIR in place (logs)
#   KUBE_START_TIMEOUT seconds to wait for /readyz (default 90)

KUBE_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KUBE_REPO_ROOT=$(cd "$KUBE_LIB_DIR/../.." && pwd)

KUBE_CONTEXT_NAME=imds-test
KUBE_ETCD_PID=""
KUBE_APISERVER_PID=""
KUBE_STATE_DIR=""
KUBE_USED_PORTS=()

kube_log() {
	printf 'kube: %s\n' "$*" >&2
}

# kube_free_port: sets KUBE_FREE_PORT to a free loopback TCP port (not printed:
# a $(...) subshell would lose the record of ports already handed out). Below
# the ephemeral range, so an outgoing connection cannot take it between the
# check and the bind. Never 8080: kubectl without a kubeconfig talks to
# localhost:8080, and no test may reach this apiserver by accident.
kube_free_port() {
	local port tries used taken
	for ((tries = 0; tries < 200; tries++)); do
		port=$((20000 + RANDOM % 12000))
		[[ $port -eq 8080 ]] && continue
		taken=0
		for used in "${KUBE_USED_PORTS[@]}"; do
			[[ $used -eq $port ]] && taken=1
		done
		[[ $taken -eq 1 ]] && continue
		# A refused connect means nothing listens there.
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			KUBE_USED_PORTS+=("$port")
			KUBE_FREE_PORT=$port
			return 0
		fi
	done
	kube_log "no free loopback port found"
	return 1
}

kube_find_binaries() {
	if [[ -n ${KUBE_BIN_DIR:-} ]]; then
		return 0
	fi
	KUBE_BIN_DIR=$("$KUBE_REPO_ROOT/hack/build-kube-apiserver.sh" | tail -n 1)
	[[ -x $KUBE_BIN_DIR/kube-apiserver && -x $KUBE_BIN_DIR/kubectl ]] || {
		kube_log "no kube-apiserver/kubectl in '$KUBE_BIN_DIR'"
		return 1
	}
	export KUBE_BIN_DIR
}

# kube_gen_ca <dir>: a self-signed CA as <dir>/ca.crt, <dir>/ca.key.
kube_gen_ca() {
	local dir=$1
	mkdir -p "$dir"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$dir/ca.key" -out "$dir/ca.crt" -days 2 -sha256 \
		-subj "/CN=imds-test-ca" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}

# kube_gen_cert <cadir> <out-prefix> <subject> <extendedKeyUsage> [subjectAltName]
# Signs <out-prefix>.crt/.key with <cadir>/ca.{crt,key}.
# Go (>= 1.15) ignores the CN of a serving cert: the name it connects to must
# be in subjectAltName (IP:127.0.0.1 for a URL on loopback).
kube_gen_cert() {
	local cadir=$1 out=$2 subject=$3 eku=$4 san=${5:-} ext rc=0
	ext=$(mktemp)
	{
		printf 'basicConstraints=critical,CA:FALSE\n'
		printf 'keyUsage=critical,digitalSignature,keyEncipherment\n'
		printf 'extendedKeyUsage=%s\n' "$eku"
		if [[ -n $san ]]; then printf 'subjectAltName=%s\n' "$san"; fi
	} >"$ext"
	if ! openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$out.key" -out "$out.csr" -subj "$subject" 2>/dev/null ||
		! openssl x509 -req -in "$out.csr" -CA "$cadir/ca.crt" -CAkey "$cadir/ca.key" \
			-CAcreateserial -out "$out.crt" -days 2 -sha256 -extfile "$ext" 2>/dev/null; then
		rc=1
	fi
	rm -f "$ext" "$out.csr"
	return "$rc"
}

# kube_gen_webhook_cert <dir>: a CA and a serving cert for https://127.0.0.1
# in <dir>/{ca.crt,tls.crt,tls.key}; put base64 of ca.crt in the caBundle of
# the webhook configuration.
kube_gen_webhook_cert() {
	local dir=$1
	kube_gen_ca "$dir" &&
		kube_gen_cert "$dir" "$dir/tls" "/CN=imds-webhook" serverAuth \
			"IP:127.0.0.1,DNS:localhost"
}

kube_write_kubeconfig() {
	local file=$1 server=$2 ca=$3 cert=$4 key=$5
	cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $KUBE_CONTEXT_NAME
  cluster:
    server: $server
    certificate-authority-data: $(base64 -w0 "$ca")
users:
- name: imds-admin
  user:
    client-certificate-data: $(base64 -w0 "$cert")
    client-key-data: $(base64 -w0 "$key")
contexts:
- name: $KUBE_CONTEXT_NAME
  context:
    cluster: $KUBE_CONTEXT_NAME
    user: imds-admin
    namespace: default
current-context: $KUBE_CONTEXT_NAME
EOF
	chmod 600 "$file"
}

# Every call names the kubeconfig and the context: kubectl with no config
# falls back to localhost:8080, and an ambient ~/.kube/config could point at a
# real cluster.
kctl() {
	"$KUBE_BIN_DIR/kubectl" --kubeconfig "$KUBECONFIG_FILE" --context "$KUBE_CONTEXT" "$@"
}

kube_curl() {
	curl -sS --noproxy '*' --cacert "$KUBE_CA_FILE" --cert "$KUBE_ADMIN_CERT" --key "$KUBE_ADMIN_KEY" "$@"
}

kube_start_etcd() {
	local dir=$1 client_port peer_port tries
	kube_free_port || return 1
	client_port=$KUBE_FREE_PORT
	kube_free_port || return 1
	peer_port=$KUBE_FREE_PORT
	KUBE_ETCD_URL=http://127.0.0.1:$client_port
	etcd --name imds-test --data-dir "$dir/etcd" \
		--listen-client-urls "$KUBE_ETCD_URL" \
		--advertise-client-urls "$KUBE_ETCD_URL" \
		--listen-peer-urls "http://127.0.0.1:$peer_port" \
		--initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
		--initial-cluster "imds-test=http://127.0.0.1:$peer_port" \
		--logger zap --log-level warn \
		>"$dir/etcd.log" 2>&1 &
	KUBE_ETCD_PID=$!
	for ((tries = 0; tries < 100; tries++)); do
		if curl -fsS --noproxy '*' "$KUBE_ETCD_URL/health" 2>/dev/null | grep -q '"health":"true"'; then
			return 0
		fi
		if ! kill -0 "$KUBE_ETCD_PID" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	kube_log "etcd did not become healthy; $dir/etcd.log:"
	tail -n 30 "$dir/etcd.log" >&2
	return 1
}

kube_gen_apiserver_pki() {
	local pki=$1
	kube_gen_ca "$pki" || return 1
	kube_gen_cert "$pki" "$pki/apiserver" "/CN=kube-apiserver" serverAuth \
		"IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" ||
		return 1
	# O=system:masters: bound to cluster-admin by the bootstrap RBAC policy.
	kube_gen_cert "$pki" "$pki/admin" "/O=system:masters/CN=imds-admin" clientAuth ||
		return 1
	# Service-account tokens (TokenRequest, projected volumes) are RS256 JWTs.
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 \
		-out "$pki/sa.key" 2>/dev/null &&
		openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
}

kube_start_apiserver() {
	local dir=$1 pki=$1/pki port
	kube_free_port || return 1
	port=$KUBE_FREE_PORT
	KUBE_APISERVER_URL=https://127.0.0.1:$port
	KUBE_SA_ISSUER=https://kubernetes.default.svc.cluster.local
	# --insecure-port=0: 1.20 still opens an unauthenticated port on
	#   127.0.0.1:8080 by default.
	# BoundServiceAccountTokenVolume (alpha in 1.20, default from 1.21): the
	#   ServiceAccount admission plugin injects a projected token volume, as
	#   on current clusters, instead of demanding a legacy token Secret that
	#   only the (absent) controller-manager would create.
	# --endpoint-reconciler-type=none: the "kubernetes" Endpoints cannot hold
	#   a loopback address; the reconciler would log errors forever.
	# env -u *_proxy: the apiserver dials webhooks through HTTPS_PROXY when one
	#   is set (Go exempts loopback, but a test may put a webhook on another
	#   local address); the test webhooks must be dialled directly.
	env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY \
		-u no_proxy -u NO_PROXY \
		"$KUBE_BIN_DIR/kube-apiserver" \
		--etcd-servers="$KUBE_ETCD_URL" \
		--bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
		--secure-port="$port" --insecure-port=0 \
		--cert-dir="$dir/apiserver" \
		--tls-cert-file="$pki/apiserver.crt" \
		--tls-private-key-file="$pki/apiserver.key" \
		--client-ca-file="$pki/ca.crt" \
		--service-account-issuer="$KUBE_SA_ISSUER" \
		--api-audiences="$KUBE_SA_ISSUER" \
		--service-account-key-file="$pki/sa.pub" \
		--service-account-signing-key-file="$pki/sa.key" \
		--service-cluster-ip-range=10.96.0.0/16 \
		--authorization-mode=RBAC \
		--enable-admission-plugins=NamespaceLifecycle,LimitRanger,ServiceAccount,DefaultTolerationSeconds,Priority,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ResourceQuota \
		--feature-gates=BoundServiceAccountTokenVolume=true \
		--allow-privileged=true \
		--endpoint-reconciler-type=none \
		--profiling=false \
		--logtostderr=true --v=1 \
		>"$dir/kube-apiserver.log" 2>&1 &
	KUBE_APISERVER_PID=$!
}

kube_wait_ready() {
	local dir=$1 timeout=${KUBE_START_TIMEOUT:-90} deadline why
	deadline=$((SECONDS + timeout))
	why="not ready after ${timeout}s"
	while ((SECONDS < deadline)); do
		if [[ $(kube_curl --max-time 2 "$KUBE_APISERVER_URL/readyz" 2>/dev/null) == ok ]]; then
			return 0
		fi
		if ! kill -0 "$KUBE_APISERVER_PID" 2>/dev/null; then
			why="exited before it was ready"
			break
		fi
		sleep 0.2
	done
	kube_log "kube-apiserver $why; $dir/kube-apiserver.log:"
	tail -n 40 "$dir/kube-apiserver.log" >&2
	return 1
}

# kube_create_namespace <ns>: the namespace and its "default" ServiceAccount
# (normally made by the controller-manager; the ServiceAccount admission plugin
# rejects pods whose ServiceAccount does not exist).
kube_create_namespace() {
	local ns=$1
	kctl get namespace "$ns" >/dev/null 2>&1 || kctl create namespace "$ns" >/dev/null || return 1
	kube_ensure_serviceaccount "$ns" default
}

# kube_ensure_serviceaccount <ns> <name>
kube_ensure_serviceaccount() {
	local ns=$1 name=$2
	kctl -n "$ns" get serviceaccount "$name" >/dev/null 2>&1 ||
		kctl -n "$ns" create serviceaccount "$name" >/dev/null
}

# kube_start <workdir>: etcd + kube-apiserver, state in <workdir>/kube.
kube_start() {
	local workdir=${1:?usage: kube_start <workdir>} dir t0
	t0=$(date +%s.%N)
	if [[ -n $KUBE_APISERVER_PID || -n $KUBE_ETCD_PID ]]; then
		kube_log "kube_start: already running (call kube_stop first)"
		return 1
	fi
	kube_find_binaries || return 1
	command -v etcd >/dev/null || { kube_log "etcd not installed (apt-get install etcd-server)"; return 1; }
	# A state dir left by a run that was killed would resurrect its objects.
	rm -rf "$workdir/kube"
	dir=$(mkdir -p "$workdir/kube" && cd "$workdir/kube" && pwd) || return 1
	KUBE_STATE_DIR=$dir
	kube_gen_apiserver_pki "$dir/pki" || { kube_log "openssl failed"; return 1; }
	KUBE_CA_FILE=$dir/pki/ca.crt
	KUBE_ADMIN_CERT=$dir/pki/admin.crt
	KUBE_ADMIN_KEY=$dir/pki/admin.key
	kube_start_etcd "$dir" || return 1
	kube_start_apiserver "$dir" || return 1
	KUBECONFIG_FILE=$dir/kubeconfig
	KUBE_CONTEXT=$KUBE_CONTEXT_NAME
	kube_write_kubeconfig "$KUBECONFIG_FILE" "$KUBE_APISERVER_URL" "$KUBE_CA_FILE" \
		"$KUBE_ADMIN_CERT" "$KUBE_ADMIN_KEY"
	export KUBECONFIG_FILE KUBE_CONTEXT KUBE_APISERVER_URL KUBE_CA_FILE \
		KUBE_ADMIN_CERT KUBE_ADMIN_KEY KUBE_SA_ISSUER KUBE_STATE_DIR
	kube_wait_ready "$dir" || return 1
	kube_ensure_serviceaccount default default || return 1
	KUBE_START_SECONDS=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	export KUBE_START_SECONDS
	kube_log "apiserver ready at $KUBE_APISERVER_URL in ${KUBE_START_SECONDS}s (state: $dir)"
}

kube_kill() {
	local pid=$1 i
	[[ -n $pid ]] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# Idempotent; meant for `trap kube_stop EXIT`.
kube_stop() {
	kube_kill "$KUBE_APISERVER_PID"
	KUBE_APISERVER_PID=""
	kube_kill "$KUBE_ETCD_PID"
	KUBE_ETCD_PID=""
	if [[ -n $KUBE_STATE_DIR && -d $KUBE_STATE_DIR && ${KUBE_KEEP_STATE:-0} != 1 ]]; then
		rm -rf "$KUBE_STATE_DIR"
	fi
	KUBE_STATE_DIR=""
	KUBE_USED_PORTS=()
	return 0
}
