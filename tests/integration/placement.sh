#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# placement: the zone and region a VM is served come from its launcher pod's
# topology.kubernetes.io/{zone,region} labels (the API server's
# PodTopologyLabels admission copies them from the node at binding).  The
# webhook's own patch (admission_cli on a pod fixture, tests/lib/sidecar_env.py
# resolving its fieldRefs as the kubelet does), then `imds-server serve` with
# that environment: with both labels, EC2's placement/*, the identity
# document, OpenStack's availability_zone, GCE's zone and Azure's
# location/zone carry them; with none, the paths are absent (404, no key),
# never an invented value (Azure's are "", as Azure's own for no zone).
# Azure's compute.zone is the zone's number: from AKS's <region>-<n> labels,
# "" for another form.
set -uo pipefail
# shellcheck source=../lib/tap.sh
source "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/server.sh
source "$(dirname "$0")/../lib/server.sh"

VARIANT=${IMDS_VARIANT:-debug}
CLI=$REPO/build/$VARIANT/tests/admission_cli
REVIEW=$REPO/tests/fixtures/webhook/pod-minimal.json
if [[ ! -x $CLI ]]; then
	not_ok "built: $CLI (make VARIANT=$VARIANT unit-bins)"
	tap_done
	exit 1
fi
mkdir -p "$TEST_TMP/tokens"
make_jwt '{"sub":"system:serviceaccount:default:default"}' >"$TEST_TMP/tokens/token"

# code URL CURL-ARGS...: the status; the body into BODY.
code() {
	local url=$1 c
	shift
	c=$(curl -s -o "$TEST_TMP/body" -w '%{http_code}' "$@" "$url")
	BODY=$(cat "$TEST_TMP/body")
	echo "$c"
}
# is NAME WANT_STATUS WANT_BODY PATH CURL-ARGS...
is() {
	local name=$1 want=$2 body=$3 path=$4 c
	shift 4
	c=$(code "$SRV_URL$path" "$@")
	BODY=$(cat "$TEST_TMP/body")
	expect_eq "$name" "$want $body" "$c $BODY"
}
jget() { # JSON PYTHON-EXPR (d is the document)
	"$PY" -c 'import json, sys; d = json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}

# pod_env DIR LABEL...: the sidecar's environment for the fixture's pod
# with those labels set after admission, as `VAR=value` words into PENV.
pod_env() {
	local dir=$1 out
	shift
	local args=()
	for l in "$@"; do args+=(--set-label "$l"); done
	if ! out=$("$PY" "$REPO/tests/lib/sidecar_env.py" pod --review "$REVIEW" --admission-cli "$CLI" \
		--root "$dir" --json "${args[@]}" 2>&1); then
		not_ok "sidecar_env.py on $REVIEW" "$out"
		return 1
	fi
	mapfile -t PENV < <(jget "$out" '"\n".join("%s=%s" % (k, d[k]) for k in
		("IMDS_AVAILABILITY_ZONE", "IMDS_REGION", "IMDS_NAMESPACE", "IMDS_VM_NAME"))')
}

GOOGLE=(-H 'Metadata-Flavor: Google')
AZURE=(-H 'Metadata: true')

echo "# labelled pod: zone eu-west-1b, region eu-west-1"
pod_env "$TEST_TMP/labelled" topology.kubernetes.io/zone=eu-west-1b topology.kubernetes.io/region=eu-west-1 ||
	exit 1
expect_eq "the webhook's env resolves the labels" \
	"IMDS_AVAILABILITY_ZONE=eu-west-1b IMDS_REGION=eu-west-1" "${PENV[*]:0:2}"
server_start IMDS_RATE_LIMIT=0 "${PENV[@]}" || exit 1
is "EC2 placement/ lists both" 200 $'availability-zone\nregion' /latest/meta-data/placement/
is "EC2 placement/availability-zone" 200 eu-west-1b /latest/meta-data/placement/availability-zone
is "EC2 placement/region" 200 eu-west-1 /latest/meta-data/placement/region
# No zone id: a cluster has no such thing to give (not invented).
expect_eq "EC2 placement/availability-zone-id: 404" 404 \
	"$(code "$SRV_URL/latest/meta-data/placement/availability-zone-id")"
code "$SRV_URL/latest/dynamic/instance-identity/document" >/dev/null
expect_eq "EC2 identity document: availabilityZone, region" "eu-west-1b eu-west-1" \
	"$(jget "$BODY" 'd["availabilityZone"] + " " + d["region"]')"
code "$SRV_URL/openstack/latest/meta_data.json" >/dev/null
expect_eq "OpenStack meta_data.json availability_zone" eu-west-1b "$(jget "$BODY" 'd.get("availability_zone")')"
is "GCE instance/zone" 200 projects/default/zones/eu-west-1b /computeMetadata/v1/instance/zone "${GOOGLE[@]}"
code "$SRV_URL/metadata/instance?api-version=2021-02-01" "${AZURE[@]}" >/dev/null
expect_eq "Azure compute.location, compute.zone: \"\" (no Azure zone number in eu-west-1b)" "eu-west-1|" \
	"$(jget "$BODY" 'd["compute"]["location"] + "|" + d["compute"]["zone"]')"
server_stop

echo "# AKS's labels: zone eastus-2, region eastus (cloud-provider-azure's makeZone)"
pod_env "$TEST_TMP/aks" topology.kubernetes.io/zone=eastus-2 topology.kubernetes.io/region=eastus || exit 1
server_start IMDS_RATE_LIMIT=0 "${PENV[@]}" || exit 1
code "$SRV_URL/metadata/instance?api-version=2021-02-01" "${AZURE[@]}" >/dev/null
expect_eq "Azure compute.location, compute.zone: the zone's number, as Azure's own" "eastus|2" \
	"$(jget "$BODY" 'd["compute"]["location"] + "|" + d["compute"]["zone"]')"
is "EC2 placement/availability-zone keeps the label" 200 eastus-2 /latest/meta-data/placement/availability-zone
server_stop

echo "# unlabelled pod (no PodTopologyLabels, or a node without the labels)"
pod_env "$TEST_TMP/bare" || exit 1
expect_eq "the webhook's env resolves to empty" "IMDS_AVAILABILITY_ZONE= IMDS_REGION=" "${PENV[*]:0:2}"
server_start IMDS_RATE_LIMIT=0 "${PENV[@]}" || exit 1
c=$(code "$SRV_URL/latest/meta-data/")
if [[ $c == 200 ]] && ! grep -q placement "$TEST_TMP/body"; then
	ok "EC2 meta-data/ lists no placement/"
else
	not_ok "EC2 meta-data/ lists no placement/" "$c $BODY"
fi
for p in placement/ placement/availability-zone placement/region; do
	expect_eq "EC2 $p: 404" 404 "$(code "$SRV_URL/latest/meta-data/$p")"
done
code "$SRV_URL/latest/dynamic/instance-identity/document" >/dev/null
expect_eq "EC2 identity document: availabilityZone, region null" "None None" \
	"$(jget "$BODY" 'd["availabilityZone"], d["region"]' | tr -d "(),'")"
expect_eq "GCE instance/zone: 404" 404 "$(code "$SRV_URL/computeMetadata/v1/instance/zone" "${GOOGLE[@]}")"
c=$(code "$SRV_URL/computeMetadata/v1/instance/" "${GOOGLE[@]}")
expect_eq "GCE instance/ lists no zone" "200 hostname id maintenance-event name" "$c $(tr '\n' ' ' <"$TEST_TMP/body" | sed 's/ $//')"
code "$SRV_URL/openstack/latest/meta_data.json" >/dev/null
expect_eq "OpenStack meta_data.json: no availability_zone key" "False default" \
	"$(jget "$BODY" '"availability_zone" in d, d["project_id"]' | tr -d "(),'")"
server_stop
tap_done
