#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2154  # R_* and scenario results are assigned by eval (http_lib.sh)
# http_api: every endpoint, status and header of docs/sidecar.md, through curl, with
# whole responses compared byte for byte (status line, every header in order,
# body; only the Date value is masked, after its format is checked).
# The protocol, limits, timeouts and configuration are in the other http_*.sh.
set -uo pipefail
# shellcheck source=../lib/tap.sh
source "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/server.sh
source "$(dirname "$0")/../lib/server.sh"
# shellcheck source=../lib/http_lib.sh
source "$(dirname "$0")/../lib/http_lib.sh"
WANT_ETAG=1 # the sidecar: its 200 data answers carry an ETag

TOK=$TEST_TMP/tokens
mkdir -p "$TOK"
J='application/json'
OCTET='application/octet-stream'
NS=(-H 'Metadata: true')

# A projected token laid out as kubelet writes it: tokens/token -> ..data/token.
JWT1=$(make_jwt '{"aud":["imds"],"exp":1767225600,"sub":"system:serviceaccount:default:default"}')
JWT2=$(make_jwt '{"aud":["imds"],"sub":"system:serviceaccount:default:default"}')
JWT3=$(make_jwt '{"exp":4102444799,"sub":"rotated"}')
mkdir "$TOK/..2024_01_01_a"
printf ' \n%s\n\n' "$JWT1" >"$TOK/..2024_01_01_a/token" # trimmed when served
ln -s ..2024_01_01_a "$TOK/..data"
ln -s ..data/token "$TOK/token"
# Other audiences: <dir>/<percent-encoded audience>/token.
VAULT=$(make_jwt '{"aud":["https://vault.example.com"],"exp":1800000000}')
mkdir -p "$TOK/https%3A%2F%2Fvault.example.com" "$TOK/sts" "$TOK/pending"
printf '%s' "$VAULT" >"$TOK/https%3A%2F%2Fvault.example.com/token"
STS=$(make_jwt '{"aud":["sts"]}')
printf '%s\n' "$STS" >"$TOK/sts/token"
# A token outside the token folder that no audience may reach.
mkdir -p "$TEST_TMP/secret"
printf 'not-for-guests' >"$TEST_TMP/secret/token"

OSMETA='{"uuid":"default-testvm","instance_id":"testvm.default","name":"testvm","hostname":"testvm","project_id":"default","instance_type":"kubevirt","launch_index":0,"public_keys":{},"meta":{"namespace":"default","vmName":"testvm"}}'$'\n'
INLINE_UD=$'#cloud-config\nhostname: inline\nruncmd:\n  - [echo, "a \\"quoted\\" word & <tag>"]\n'

# ---------------------------------------------------------------------------
# Server A: identity of the demo VM, inline user-data, nothing else.
serve IMDS_RATE_LIMIT=0 IMDS_USER_DATA="$INLINE_UD" || exit 1
U=$SRV_URL

echo "# /healthz, /v1/meta-data, /v1/user-data (inline), empty vendor-data and network-config"
want "HTTP/1.1 200 OK" text/plain "=OK"
curl_is "GET /healthz: 200 OK, text/plain, body OK" "$U/healthz"

want "HTTP/1.1 200 OK" text/yaml $'=instance-id: default-testvm\nlocal-hostname: testvm\n'
curl_is "GET /v1/meta-data: exact YAML (instance-id <ns>-<vm>, local-hostname)" "$U/v1/meta-data"
curl_is "GET /v1/meta-data?x=1: a query does not change the path" "$U/v1/meta-data?x=1"
MD_A=$'=instance-id: default-testvm\nlocal-hostname: testvm\n'

want "HTTP/1.1 200 OK" "$OCTET" "=$INLINE_UD"
curl_is "GET /v1/user-data: IMDS_USER_DATA byte-exact" "$U/v1/user-data"

want "HTTP/1.1 200 OK" "$OCTET" "="
curl_is "GET /v1/vendor-data unset: 200, empty body" "$U/v1/vendor-data"
want "HTTP/1.1 200 OK" text/yaml "="
curl_is "GET /v1/network-config unset: 200, empty body" "$U/v1/network-config"

echo "# /v1/identity"
ID_BODY='{"namespace":"default","serviceAccountName":"default","vmName":"testvm","podName":"virt-launcher-testvm-x7k2p","instanceId":"default-testvm"}'$'\n'
want "HTTP/1.1 200 OK" "$J" "=$ID_BODY" "Cache-Control: no-store"
curl_is "GET /v1/identity: exact JSON, Cache-Control: no-store" "${NS[@]}" "$U/v1/identity"
check "identity body is valid JSON with the five fields" "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1], "rb"))
assert list(d) == ["namespace", "serviceAccountName", "vmName", "podName", "instanceId"], d
' "$GOT_BODY"

echo "# /v1/token"
want "HTTP/1.1 200 OK" "$J" "={\"token\":\"$JWT1\",\"expirationTimestamp\":\"2026-01-01T00:00:00Z\"}"$'\n' "Cache-Control: no-store"
curl_is "GET /v1/token: token trimmed, expirationTimestamp from exp, no-store" "${NS[@]}" "$U/v1/token"

# Rotation as kubelet does it: a new timestamped folder, ..data swapped atomically.
mkdir "$TOK/..2024_01_01_b"
printf '%s' "$JWT2" >"$TOK/..2024_01_01_b/token"
ln -sfn ..2024_01_01_b "$TOK/..data_tmp" && mv -T "$TOK/..data_tmp" "$TOK/..data"
want "HTTP/1.1 200 OK" "$J" "={\"token\":\"$JWT2\"}"$'\n' "Cache-Control: no-store"
curl_is "token rotated (..data swap): next request has the new token; no exp -> no expirationTimestamp" "${NS[@]}" "$U/v1/token"

# Rotation by rename over the link target.
printf '%s\r\n' "$JWT3" >"$TOK/..2024_01_01_b/token.new" && mv "$TOK/..2024_01_01_b/token.new" "$TOK/..2024_01_01_b/token"
want "HTTP/1.1 200 OK" "$J" "={\"token\":\"$JWT3\",\"expirationTimestamp\":\"2099-12-31T23:59:59Z\"}"$'\n' "Cache-Control: no-store"
curl_is "token file replaced in place: re-read on the next request (CRLF trimmed)" "${NS[@]}" "$U/v1/token"

rm "$TOK/token"
UNAV=$'{"error":"token_unavailable","message":"token file is not readable yet"}\n'
want "HTTP/1.1 503 Service Unavailable" "$J" "=$UNAV" "Cache-Control: no-store" "Retry-After: 1"
curl_is "token file missing: 503, Retry-After: 1, JSON error" "${NS[@]}" "$U/v1/token"
: >"$TOK/empty"
ln -sfn empty "$TOK/token"
want "HTTP/1.1 503 Service Unavailable" "$J" $'={"error":"token_unavailable","message":"token file is empty"}\n' "Cache-Control: no-store" "Retry-After: 1"
curl_is "token file empty: 503 with Retry-After: 1" "${NS[@]}" "$U/v1/token"
ln -sfn ..data/token "$TOK/token"
want "HTTP/1.1 200 OK" "$J" "={\"token\":\"$JWT3\",\"expirationTimestamp\":\"2099-12-31T23:59:59Z\"}"$'\n' "Cache-Control: no-store"
curl_is "token file back: 200 again (the failure is not cached)" "${NS[@]}" "$U/v1/token"

echo "# /v1/token?audience="
want "HTTP/1.1 200 OK" "$J" "={\"token\":\"$VAULT\",\"expirationTimestamp\":\"2027-01-15T08:00:00Z\"}"$'\n' "Cache-Control: no-store"
curl_is "audience=https%3A%2F%2Fvault.example.com: token from <dir>/https%3A%2F%2Fvault.example.com/token" "${NS[@]}" "$U/v1/token?audience=https%3A%2F%2Fvault.example.com"
want "HTTP/1.1 200 OK" "$J" "={\"token\":\"$STS\"}"$'\n' "Cache-Control: no-store"
curl_is "audience=sts (after another query parameter): token from <dir>/sts/token" "${NS[@]}" "$U/v1/token?x=1&audience=sts"
UNKNOWN=$'{"error":"unknown_audience","message":"no token is configured for this audience"}\n'
want "HTTP/1.1 200 OK" "$J" "={\"token\":\"$VAULT\",\"expirationTimestamp\":\"2027-01-15T08:00:00Z\"}"$'\n' "Cache-Control: no-store"
curl_is "audience with lower-case escapes (https%3a%2f%2f...): the same token" "${NS[@]}" "$U/v1/token?audience=https%3a%2f%2fvault.example.com"
want "HTTP/1.1 404 Not Found" "$J" "=$UNKNOWN" "Cache-Control: no-store"
curl_is "unknown audience: 404 unknown_audience" "${NS[@]}" "$U/v1/token?audience=https%3A%2F%2Fnope.example.com"
curl_is "audience=../secret cannot leave the token folder: 404" "${NS[@]}" "$U/v1/token?audience=..%2Fsecret"
want "HTTP/1.1 503 Service Unavailable" "$J" "=$UNAV" "Cache-Control: no-store" "Retry-After: 1"
curl_is "audience folder without its token yet: 503 with Retry-After: 1" "${NS[@]}" "$U/v1/token?audience=pending"
MALFORMED=$'{"error":"bad_audience","message":"audience: malformed or longer than 500 bytes"}\n'
NONPRINT=$'{"error":"bad_audience","message":"audience: must be printable ASCII without spaces"}\n'
want "HTTP/1.1 400 Bad Request" "$J" "=$MALFORMED" "Cache-Control: no-store"
curl_is "audience=%zz (bad percent-encoding): 400 bad_audience" "${NS[@]}" "$U/v1/token?audience=%zz"
curl_is "audience=abc%4 (truncated escape): 400 bad_audience" "${NS[@]}" "$U/v1/token?audience=abc%4"
curl_is "audience of 501 bytes: 400 bad_audience (its message says the limit is 500 bytes)" "${NS[@]}" "$U/v1/token?audience=$(printf 'a%.0s' {1..501})"
curl_is "audience of 4000 bytes: 400 bad_audience" "${NS[@]}" "$U/v1/token?audience=$(printf 'a%.0s' {1..4000})"
want "HTTP/1.1 400 Bad Request" "$J" "=$NONPRINT" "Cache-Control: no-store"
curl_is "audience with a space: 400 bad_audience" "${NS[@]}" "$U/v1/token?audience=a%20b"
curl_is "audience with a '+' (a space in a query): 400 bad_audience" "${NS[@]}" "$U/v1/token?audience=a+b"
curl_is "audience=.. : 400 bad_audience" "${NS[@]}" "$U/v1/token?audience=.."
curl_is "audience with a control byte: 400 bad_audience" "${NS[@]}" "$U/v1/token?audience=a%01b"

echo "# the Metadata: true rule and proxies"
MISSING=$'{"error":"missing_header","message":"Metadata: true header is required"}\n'
want "HTTP/1.1 400 Bad Request" "$J" "=$MISSING" "Cache-Control: no-store"
for p in token identity; do
	curl_is "/v1/$p without Metadata: 400 missing_header" "$U/v1/$p"
	curl_is "/v1/$p with 'Metadata: True': 400 (the value is exact)" -H 'Metadata: True' "$U/v1/$p"
	curl_is "/v1/$p with 'Metadata: false': 400" -H 'Metadata: false' "$U/v1/$p"
	curl_is "/v1/$p with 'Metadata: true' twice: 400" -H 'Metadata: true' -H 'Metadata: true' "$U/v1/$p"
done
want "HTTP/1.1 200 OK" "$J" "=$ID_BODY" "Cache-Control: no-store"
curl_is "'metadata: true' (header names are case-insensitive): 200" -H 'metadata: true' "$U/v1/identity"
FORBID=$'{"error":"forbidden","message":"proxied requests are not allowed"}\n'
want "HTTP/1.1 403 Forbidden" "$J" "=$FORBID" "Cache-Control: no-store"
for p in token identity; do
	curl_is "/v1/$p with X-Forwarded-For: 403" "${NS[@]}" -H 'X-Forwarded-For: 10.0.0.7' "$U/v1/$p"
	curl_is "/v1/$p with Forwarded: 403" "${NS[@]}" -H 'Forwarded: for=10.0.0.7' "$U/v1/$p"
	curl_is "/v1/$p with X-Forwarded-For and no Metadata: 403" -H 'x-forwarded-for: 10.0.0.7' "$U/v1/$p"
done
want "HTTP/1.1 200 OK" "$J" "=$ID_BODY" "Cache-Control: no-store"
curl_is "'Metadata:    true' (leading whitespace is not part of the value): 200" -H 'Metadata:    true' "$U/v1/identity"
curl_is "'Metadata: true  ' (trailing whitespace is not part of the value, RFC 9110 5.5): 200" -H 'Metadata: true  ' "$U/v1/identity"
want "HTTP/1.1 200 OK" text/yaml "$MD_A"
curl_is "NoCloud paths need no header and are not refused behind a proxy" -H 'X-Forwarded-For: 10.0.0.7' "$U/v1/meta-data"

echo "# methods"
NOTALLOWED=$'{"error":"method_not_allowed","message":"only GET and HEAD are supported"}\n'
want "HTTP/1.1 405 Method Not Allowed" "$J" "=$NOTALLOWED" "Allow: GET, HEAD"
for m in POST PUT DELETE OPTIONS PATCH; do
	curl_is "$m /v1/meta-data: 405 with Allow: GET, HEAD" -X "$m" "$U/v1/meta-data"
done
curl_is "POST /v1/token: 405 (before the header rule)" -X POST "${NS[@]}" "$U/v1/token"
curl_is "DELETE on an unknown path: 405" -X DELETE "$U/nope"

echo "# HEAD: the GET head (same Content-Length), no body"
P=$SRV_PORT
TOKEN3_BODY="{\"token\":\"$JWT3\",\"expirationTimestamp\":\"2099-12-31T23:59:59Z\"}"$'\n'
NOTFOUND=$'{"error":"not_found","message":"no such path"}\n'
head_is() { # path status ctype body [request-header]
	local h="" extra=()
	[[ -n "${5:-}" ]] && h="$5\r\n"
	[[ $1 == /v1/identity || $1 == /v1/token ]] && extra=("Cache-Control: no-store")
	want_head "$2" "$3" "$4" "Connection: close" "${extra[@]}"
	raw_is "HEAD $1: exactly the GET head, no body, then close" "$P" \
		"send:HEAD $1 HTTP/1.1\r\nHost: x\r\n${h}Connection: close\r\n\r\n" eof:2
}
head_is /healthz "HTTP/1.1 200 OK" text/plain "=OK"
head_is /v1/meta-data "HTTP/1.1 200 OK" text/yaml "$MD_A"
head_is /v1/user-data "HTTP/1.1 200 OK" "$OCTET" "=$INLINE_UD"
head_is /v1/vendor-data "HTTP/1.1 200 OK" "$OCTET" "="
head_is /v1/identity "HTTP/1.1 200 OK" "$J" "=$ID_BODY" "Metadata: true"
head_is /v1/token "HTTP/1.1 200 OK" "$J" "=$TOKEN3_BODY" "Metadata: true"
head_is /openstack/latest/meta_data.json "HTTP/1.1 200 OK" "$J" "=$OSMETA"
head_is /nope "HTTP/1.1 404 Not Found" "$J" "=$NOTFOUND"
# On a kept-alive connection a stray body byte would corrupt the next response.
tmpf
want_head "HTTP/1.1 200 OK" "$OCTET" "=$INLINE_UD"
want_to "$F"
want "HTTP/1.1 200 OK" text/plain "=OK"
want_to "$F"
raw_is_file "HEAD then GET on one connection: the GET answer follows the HEAD head directly" "$F" "$P" \
	'send:HEAD /v1/user-data HTTP/1.1\r\nHost: x\r\n\r\n' head:1 \
	'send:GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n' read:1 quiet:0.1

echo "# unknown paths: a small 404 at once"
want "HTTP/1.1 404 Not Found" "$J" "=$NOTFOUND"
for p in /latest/meta-data/nope /computeMetadata '/metadata/identity?api-version=2021-02-01' \
	/latest/meta-data/iam/security-credentials/ /v1 /v1/ /v1/meta-data/ /V1/meta-data /v1/meta-data/extra /openstackx /openstack/foo/meta_data.json \
	/openstack/latest/nope /openstack/2018-8-27/meta_data.json /healthz/; do
	curl_is "GET $p: 404 not_found" "$U$p"
done
t=$(curl -s -o /dev/null -w '%{time_total}' -H 'Metadata-Flavor: Google' "$U/computeMetadata/v1/instance/nope")
within "a 404 probe is answered in under 100 ms (s)" 0 0.1 "$t"
urls=()
for i in $(seq 50); do urls+=("$U/latest/meta-data/$i" "$U/computeMetadata/v1/$i"); done
t=$(curl -s -o /dev/null -w '%{time_total}\n' "${urls[@]}" | awk '{s += $1} END {print s}')
within "100 Windows-style probes on one connection take under 1 s in all (s)" 0 1 "$t"

echo "# OpenStack layout (cloudbase-init)"
VERS=$'2012-08-10\n2013-04-04\n2013-10-17\n2015-10-15\n2016-06-30\n2016-10-06\n2017-02-22\n2018-08-27\nlatest\n'
FILES=$'meta_data.json\nuser_data\nvendor_data.json\nnetwork_data.json\n'
want "HTTP/1.1 200 OK" text/plain "=$VERS"
curl_is "GET /openstack: the version list" "$U/openstack"
curl_is "GET /openstack/: the version list" "$U/openstack/"
want "HTTP/1.1 200 OK" text/plain "=${FILES}password"$'\n'"vendor_data2.json"$'\n'
curl_is "GET /openstack/latest/: the file list, with password and vendor_data2.json" "$U/openstack/latest/"
curl_is "GET /openstack/2018-08-27: the same list" "$U/openstack/2018-08-27"
curl_is "GET /openstack/2016-10-06/: the same list (Nova's vendor_data2.json from 2016-10-06 on)" \
	"$U/openstack/2016-10-06/"
want "HTTP/1.1 200 OK" text/plain "=${FILES}password"$'\n'
curl_is "GET /openstack/2016-06-30/: the file list with password, before vendor_data2.json" \
	"$U/openstack/2016-06-30/"
want "HTTP/1.1 200 OK" text/plain "=$FILES"
curl_is "GET /openstack/2012-08-10: the file list, no password before 2013-04-04" "$U/openstack/2012-08-10"
want "HTTP/1.1 200 OK" "$J" "=$OSMETA"
curl_is "GET /openstack/latest/meta_data.json: exact" "$U/openstack/latest/meta_data.json"
curl -s -o "$TEST_TMP/osmeta.json" "$U/openstack/latest/meta_data.json"
curl -s -o "$TEST_TMP/md.yaml" "$U/v1/meta-data"
check "meta_data.json is valid JSON; uuid = the meta-data instance-id, hostname = local-hostname" "$PY" -c '
import json, sys, yaml
d = json.load(open(sys.argv[1], "rb"))
m = yaml.safe_load(open(sys.argv[2], "rb"))
assert d["uuid"] == m["instance-id"], (d, m)
assert d["hostname"] == m["local-hostname"] == d["name"], (d, m)
' "$TEST_TMP/osmeta.json" "$TEST_TMP/md.yaml"
for v in 2012-08-10 2013-10-17 2018-08-27; do
	curl_is "GET /openstack/$v/meta_data.json: same as latest" "$U/openstack/$v/meta_data.json"
done
want "HTTP/1.1 200 OK" "$OCTET" "=$INLINE_UD"
curl_is "GET /openstack/latest/user_data: the user-data, byte-exact" "$U/openstack/latest/user_data"
curl_is "GET /openstack/2013-04-04/user_data: the same" "$U/openstack/2013-04-04/user_data"
want "HTTP/1.1 200 OK" "$J" $'={}\n'
curl_is "GET /openstack/latest/vendor_data.json without vendor-data: {}" "$U/openstack/latest/vendor_data.json"
# no interface known by the guest's own MAC (no network-status): no
# document, as KubeVirt's config drive without networkData; an empty one made
# cloud-init bring no interface up
want "HTTP/1.1 404 Not Found" "$J" $'={"error":"not_found","message":"no network data: no interface of the VM is known by its own MAC (the pod network with masquerade or passt, no secondary network)"}\n'
curl_is "GET /openstack/latest/network_data.json without a known interface: 404, JSON reason" "$U/openstack/latest/network_data.json"
check "the 404's body is valid JSON" "$PY" -c 'import json, sys; json.load(open(sys.argv[1], "rb"))' "$GOT_BODY"

alive "server A survived every request"
server_stop
expect_eq "server A exits 0 on SIGTERM" 0 "$SRV_STATUS"

# ---------------------------------------------------------------------------
# Server B: files (kubelet's atomic-symlink layout), vendor-data,
# network-config, and an instance-id YAML would read as a date.
echo "# data files and live updates"
D=$TEST_TMP/userdata
mkdir -p "$D/..2024_06_01_a"
printf '#cloud-config\nhostname: from-file\n' >"$D/..2024_06_01_a/user-data"
ln -s ..2024_06_01_a "$D/..data"
ln -s ..data/user-data "$D/user-data"
printf '#cloud-config\npackages: [htop]\n' >"$TEST_TMP/vendor"
printf 'version: 2\nethernets:\n  eth0:\n    dhcp4: true\n' >"$TEST_TMP/netcfg"
serve IMDS_RATE_LIMIT=0 IMDS_INSTANCE_ID=2024-01-01 IMDS_USER_DATA="$INLINE_UD" \
	IMDS_USER_DATA_FILE="$D/user-data" IMDS_VENDOR_DATA_FILE="$TEST_TMP/vendor" \
	IMDS_NETWORK_CONFIG_FILE="$TEST_TMP/netcfg" || exit 1
U=$SRV_URL

want "HTTP/1.1 200 OK" "$OCTET" "$D/..2024_06_01_a/user-data"
curl_is "IMDS_USER_DATA_FILE wins over IMDS_USER_DATA" "$U/v1/user-data"

mkdir "$D/..2024_06_01_b"
printf '#cloud-config\nhostname: second-version\nwrite_files: []\n' >"$D/..2024_06_01_b/user-data"
ln -sfn ..2024_06_01_b "$D/..data_tmp" && mv -T "$D/..data_tmp" "$D/..data"
want "HTTP/1.1 200 OK" "$OCTET" "$D/..2024_06_01_b/user-data"
curl_is "live update (..data symlink swap) reaches the very next request" "$U/v1/user-data"

# A binary, gzip-compressed user-data (cloud-init gunzips it itself).
mkdir "$D/..2024_06_01_c"
{
	printf '#cloud-config\n'
	for i in $(seq 2000); do printf 'bootcmd_%d: [echo, %d]\n' "$i" "$RANDOM"; done
} | gzip -9 >"$D/..2024_06_01_c/user-data"
head -c 4096 /dev/urandom >>"$D/..2024_06_01_c/user-data" # bytes of every value, NULs included
ln -sfn ..2024_06_01_c "$D/..data_tmp" && mv -T "$D/..data_tmp" "$D/..data"
want "HTTP/1.1 200 OK" "$OCTET" "$D/..2024_06_01_c/user-data"
curl_is "binary (gzip + random bytes) user-data file: byte-exact" "$U/v1/user-data"
curl -s -o "$TEST_TMP/ud.bin" "$U/v1/user-data"
expect_eq "binary user-data: sha256 of the body equals the file's" \
	"$(sha256sum <"$D/..2024_06_01_c/user-data")" "$(sha256sum <"$TEST_TMP/ud.bin")"
want "HTTP/1.1 200 OK" "$OCTET" "$D/..2024_06_01_c/user-data"
curl_is "GET /openstack/latest/user_data: the same binary bytes" "$U/openstack/latest/user_data"

want "HTTP/1.1 200 OK" "$OCTET" "$TEST_TMP/vendor"
curl_is "GET /v1/vendor-data: IMDS_VENDOR_DATA_FILE byte-exact" "$U/v1/vendor-data"
want "HTTP/1.1 200 OK" text/yaml "$TEST_TMP/netcfg"
curl_is "GET /v1/network-config: IMDS_NETWORK_CONFIG_FILE byte-exact" "$U/v1/network-config"
printf '#cloud-config\npackages: [htop, "jq"]\nruncmd: [["echo", "tab\there"]]\n' >"$TEST_TMP/vendor.new"
mv "$TEST_TMP/vendor.new" "$TEST_TMP/vendor"
want "HTTP/1.1 200 OK" "$OCTET" "$TEST_TMP/vendor"
curl_is "vendor-data file replaced: the next request has the new bytes" "$U/v1/vendor-data"
printf 'version: 1\n' >"$TEST_TMP/netcfg" # rewritten in place, new size
want "HTTP/1.1 200 OK" text/yaml "$TEST_TMP/netcfg"
curl_is "network-config rewritten in place: the next request has the new bytes" "$U/v1/network-config"
curl -s -o "$TEST_TMP/osvendor.json" "$U/openstack/latest/vendor_data.json"
check "vendor_data.json is JSON whose \"cloud-init\" value is the vendor-data file" "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1], "rb"))
assert list(d) == ["cloud-init"], d
assert d["cloud-init"].encode() == open(sys.argv[2], "rb").read(), d
' "$TEST_TMP/osvendor.json" "$TEST_TMP/vendor"

want "HTTP/1.1 200 OK" text/yaml $'=instance-id: "2024-01-01"\nlocal-hostname: testvm\n'
curl_is "IMDS_INSTANCE_ID=2024-01-01 is quoted in meta-data" "$U/v1/meta-data"
want "HTTP/1.1 200 OK" "$J" '={"namespace":"default","serviceAccountName":"default","vmName":"testvm","podName":"virt-launcher-testvm-x7k2p","instanceId":"2024-01-01"}'$'\n' "Cache-Control: no-store"
curl_is "identity carries the instance-id override" "${NS[@]}" "$U/v1/identity"
curl -s -o "$TEST_TMP/osmeta.json" "$U/openstack/latest/meta_data.json"
check "OpenStack uuid is the instance-id override" "$PY" -c '
import json, sys
assert json.load(open(sys.argv[1]))["uuid"] == "2024-01-01"' "$TEST_TMP/osmeta.json"
alive "server B survived every request"
server_stop
expect_eq "server B exits 0 on SIGTERM" 0 "$SRV_STATUS"

# ---------------------------------------------------------------------------
echo "# YAML quoting of values YAML would not read back as strings"
for spec in 'no|On|instance-id: "no"|local-hostname: "On"' \
	'12345|true|instance-id: "12345"|local-hostname: "true"' \
	'1.5|null|instance-id: "1.5"|local-hostname: "null"' \
	'a: b #c|vm-1|instance-id: "a: b #c"|local-hostname: vm-1'; do
	IFS='|' read -r iid vm l1 l2 <<<"$spec"
	serve IMDS_INSTANCE_ID="$iid" IMDS_VM_NAME="$vm" || exit 1
	want "HTTP/1.1 200 OK" text/yaml "=$l1"$'\n'"$l2"$'\n'
	curl_is "instance-id '$iid', VM '$vm': $l1 / $l2" "$SRV_URL/v1/meta-data"
	check "PyYAML reads instance-id '$iid' and local-hostname '$vm' back as those strings" "$PY" -c '
import sys, yaml
d = yaml.safe_load(open(sys.argv[1], "rb"))
assert d == {"instance-id": sys.argv[2], "local-hostname": sys.argv[3]}, d' "$GOT_BODY" "$iid" "$vm"
	server_stop
done

# ---------------------------------------------------------------------------
echo "# nothing configured: empty 200s (cloud-init would retry anything else)"
serve || exit 1
U=$SRV_URL
for p in user-data vendor-data; do
	want "HTTP/1.1 200 OK" "$OCTET" "="
	curl_is "GET /v1/$p with none configured: 200, Content-Length: 0" "$U/v1/$p"
done
want "HTTP/1.1 200 OK" text/yaml "="
curl_is "GET /v1/network-config with none configured: 200, Content-Length: 0" "$U/v1/network-config"
want "HTTP/1.1 404 Not Found" "$J" $'={"error":"not_found","message":"no user data"}\n'
curl_is "GET /openstack/latest/user_data with none: 404 (Nova's answer, read as none)" "$U/openstack/latest/user_data"
want "HTTP/1.1 503 Service Unavailable" "$J" "=$UNAV" "Cache-Control: no-store" "Retry-After: 1"
rm -rf "$TOK"
curl_is "no token folder at all: 503 with Retry-After: 1" "${NS[@]}" "$U/v1/token"
want "HTTP/1.1 404 Not Found" "$J" "=$UNKNOWN" "Cache-Control: no-store"
curl_is "no token folder: an audience is unknown (404)" "${NS[@]}" "$U/v1/token?audience=sts"
server_stop
expect_eq "exits 0 on SIGTERM" 0 "$SRV_STATUS"

# ---------------------------------------------------------------------------
echo "# ETags: a validator on every data answer, 304 when the client has the bytes"
EU=$TEST_TMP/etag-ud
printf '#cloud-config\nhostname: etag-one\n' >"$EU"
serve IMDS_USER_DATA_FILE="$EU" || exit 1
U=$SRV_URL
tag=$(curl -s -D - -o /dev/null "$U/v1/user-data" | sed -n 's/^ETag: \(.*\)\r$/\1/p')
expect_eq "user-data's ETag is the digest of its bytes" "$(etag_of "$EU")" "$tag"
rm -f "$TEST_TMP/etag.out"
got=$(curl -s -D - -o "$TEST_TMP/etag.out" -H "If-None-Match: $tag" "$U/v1/user-data" | tr -d '\r' |
	grep -v '^Date: ' | tr '\n' '|')
expect_eq "If-None-Match with it: 304, the ETag, no length, no body" \
	"HTTP/1.1 304 Not Modified|ETag: $tag||no body" "$got$([[ -s $TEST_TMP/etag.out ]] && echo body || echo no body)"
expect_eq "W/ and a list match too (weak comparison)" 304 \
	"$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: \"0\", W/$tag" "$U/v1/user-data")"
expect_eq "HEAD with it: 304" 304 \
	"$(curl -s -I -o /dev/null -w '%{http_code}' -H "If-None-Match: $tag" "$U/v1/user-data")"
printf '#cloud-config\nhostname: etag-two\n' >"$EU.new" && mv "$EU.new" "$EU"
expect_eq "the file changed: the old tag gets the new bytes, 200" "200 #cloud-config" \
	"$(curl -s -w '%{http_code} ' -o "$TEST_TMP/etag.out" -H "If-None-Match: $tag" "$U/v1/user-data")$(head -n1 "$TEST_TMP/etag.out")"
expect_eq "the keep-alive connection goes on after a 304" "304 200" \
	"$(curl -s -o /dev/null -w '%{http_code} ' -H "If-None-Match: $(etag_of "$EU")" "$U/v1/user-data" \
		--next -s -o /dev/null -w '%{http_code}' "$U/v1/meta-data")"
tag=$(curl -s -D - -o /dev/null "${NS[@]}" "$U/v1/identity" | sed -n 's/^ETag: \(.*\)\r$/\1/p')
expect_eq "identity: 304 on its tag, still no-store" "304 no-store" \
	"$(curl -s -D - -o /dev/null "${NS[@]}" -H "If-None-Match: $tag" "$U/v1/identity" |
		sed -n 's/^HTTP\/1.1 \([0-9]*\).*/\1/p; s/^Cache-Control: \(.*\)\r$/\1/p' | tr '\n' ' ' | sed 's/ $//')"
server_stop

# ---------------------------------------------------------------------------
echo "# sessions: PUT /v1/session, X-Metadata-Token (IMDS_SESSION=required)"
serve IMDS_SESSION=required || exit 1
U=$SRV_URL
expect_eq "required: /v1/token without a session is 401" 401 \
	"$(curl -s -o /dev/null -w '%{http_code}' "${NS[@]}" "$U/v1/token")"
expect_eq "required: cloud-init's meta-data stays open" 200 \
	"$(curl -s -o /dev/null -w '%{http_code}' "$U/v1/meta-data")"
ST=$(curl -s -X PUT -H 'X-Metadata-Token-TTL-Seconds: 2' "$U/v1/session")
if [[ $ST =~ ^[A-Za-z0-9_-]{43}$ ]]; then ok "PUT /v1/session: a 43-character token"; else not_ok "PUT /v1/session: a 43-character token" "$ST"; fi
# (no token file in this server: past the session check /v1/token says 503)
expect_eq "the token opens /v1/identity and /v1/token" "200 503" \
	"$(curl -s -o /dev/null -w '%{http_code} ' "${NS[@]}" -H "X-Metadata-Token: $ST" "$U/v1/identity" \
		--next -s -o /dev/null -w '%{http_code}' "${NS[@]}" -H "X-Metadata-Token: $ST" "$U/v1/token")"
expect_eq "a PUT relayed by a proxy mints nothing (403)" 403 \
	"$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'X-Metadata-Token-TTL-Seconds: 60' \
		-H 'X-Forwarded-For: 10.1.2.3' "$U/v1/session")"
expect_eq "no TTL: 400" 400 "$(curl -s -o /dev/null -w '%{http_code}' -X PUT "$U/v1/session")"
sleep 2.2
expect_eq "after its TTL the token is refused (401)" 401 \
	"$(curl -s -o /dev/null -w '%{http_code}' "${NS[@]}" -H "X-Metadata-Token: $ST" "$U/v1/token")"
server_stop

# ---------------------------------------------------------------------------
echo "# the OpenStack password: stored once, atomically, kept across a restart"
ST=$TEST_TMP/state
mkdir -p "$ST"
# What cloudbase-init posts: the password encrypted to the VM's RSA key (PKCS#1 v1.5), base64.
ssh-keygen -q -t rsa -b 2048 -N '' -m PEM -C owner -f "$TEST_TMP/owner"
ssh-keygen -e -m PKCS8 -f "$TEST_TMP/owner.pub" >"$TEST_TMP/owner.pub.pem"
PW=$(printf 'Adm1n-p4ss!' | openssl pkeyutl -encrypt -pubin -inkey "$TEST_TMP/owner.pub.pem" \
	-pkeyopt rsa_padding_mode:pkcs1 | base64 -w0)
serve IMDS_STATE_DIR="$ST" || exit 1
U=$SRV_URL
want "HTTP/1.1 200 OK" text/plain "=" "Cache-Control: no-store"
curl_is "GET password with none stored: 200, empty" "$U/openstack/latest/password"
want "HTTP/1.1 400 Bad Request" "$J" $'={"error":"password_too_long","message":"password: at most 1024 bytes"}\n' "Cache-Control: no-store"
curl_is "POST 1025 bytes: 400" --data-binary "$(head -c 1025 /dev/zero | tr '\0' A)" "$U/openstack/latest/password"
want "HTTP/1.1 413 Content Too Large" "$J" $'={"error":"body_too_large","message":"Content Too Large"}\n' "Connection: close"
curl_is "POST 64 KiB: 413 from the core, read before it closes" --data-binary "$(head -c 65536 /dev/zero | tr '\0' A)" "$U/openstack/latest/password"
want "HTTP/1.1 200 OK" text/plain "=" "Cache-Control: no-store"
curl_is "POST the password: 200" --data-binary "$PW" "$U/openstack/2013-04-04/password"
want "HTTP/1.1 409 Conflict" "$J" $'={"error":"password_exists","message":"a password is stored already"}\n' "Cache-Control: no-store"
curl_is "POST again: 409" --data-binary "other" "$U/openstack/latest/password"
curl_is "POST again through //openstack//latest//password (slashes merged, the body read): 409" \
	--path-as-is --data-binary "other" "$U//openstack//latest//password"
expect_eq "the password is logged once, for kubectl logs" 1 "$(grep -c "password: the guest stored its encrypted password (${#PW} bytes): $PW" "$SRV_LOG")"
expect_eq "the README's pipeline decrypts it from the log with the owner's key" 'Adm1n-p4ss!' \
	"$(grep 'encrypted password' "$SRV_LOG" | sed 's/.*): //' | base64 -d |
		openssl pkeyutl -decrypt -inkey "$TEST_TMP/owner" -pkeyopt rsa_padding_mode:pkcs1 2>&1)"
server_stop
expect_eq "the state file holds exactly the posted bytes, mode 0600" "$PW 600" "$(cat "$ST/password") $(stat -c %a "$ST/password")"
serve IMDS_STATE_DIR="$ST" || exit 1
want "HTTP/1.1 200 OK" text/plain "=$PW" "Cache-Control: no-store"
curl_is "a restarted server has it" "$SRV_URL/openstack/latest/password"
want "HTTP/1.1 409 Conflict" "$J" $'={"error":"password_exists","message":"a password is stored already"}\n' "Cache-Control: no-store"
curl_is "a restarted server refuses a second one" --data-binary "other" "$SRV_URL/openstack/latest/password"
server_stop

tap_done
