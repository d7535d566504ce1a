# shellcheck shell=bash
# Pure functions of tests/e2e/run.sh (no cluster, no network): unit-tested by
# tests/integration/deploy_lint.sh.

# e2e_context CLUSTER: the kubeconfig context kind writes for a cluster.
e2e_context() {
	printf 'kind-%s\n' "$1"
}

# e2e_cluster_listed CLUSTER < `kind get clusters` output
e2e_cluster_listed() {
	grep -qxF -- "$1"
}

# e2e_kubevirt_url VERSION FILE: a KubeVirt release asset.
e2e_kubevirt_url() {
	printf 'https://github.com/kubevirt/kubevirt/releases/download/%s/%s\n' "$1" "$2"
}

# e2e_between BEGIN END < text: the lines strictly between two marker lines
# (serial console output: carriage returns removed, the echoed command line
# that contains the markers skipped).
e2e_between() {
	tr -d '\r' | awk -v b="$1" -v e="$2" '
		$0 == b { on = 1; next }
		$0 == e { on = 0; exit }
		on { print }'
}

# e2e_json_string KEY < json: the value of a top-level string member (the
# small, flat objects of /v1/identity and /v1/token; no escapes in them).
e2e_json_string() {
	tr -d '\r\n' | sed -n 's/.*"'"$1"'"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p'
}

# e2e_jwt_claim CLAIM < token: a string claim of a JWT's payload.
e2e_jwt_claim() {
	local tok payload pad
	tok=$(tr -d '\r\n')
	payload=$(cut -d. -f2 <<<"$tok" | tr '_-' '/+')
	pad=$(((4 - ${#payload} % 4) % 4))
	payload+=$(printf '%*s' "$pad" '' | tr ' ' '=')
	base64 -d <<<"$payload" 2>/dev/null | e2e_json_string "$1"
}

# e2e_kv VAR < lines "VAR=value": the value (last one wins).
e2e_kv() {
	tr -d '\r' | sed -n "s/^$1=//p" | tail -n1
}
