#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# lifecycle: the lifecycle events (docs/sidecar.md, "Lifecycle events") from
# downward-API files laid out as kubelet writes them (<dir>/<name> ->
# ..data/<name>, ..data swapped atomically), in the four dialects: ours
# (/v1/lifecycle), GCE's maintenance-event, Azure's Scheduled Events and EC2's
# events, each through none -> migrate -> none and none -> terminate; a waiting
# request woken within 1 s of the file change; botocore's own IMDS client on the
# EC2 paths; and the bad input of every new path.
set -uo pipefail
# shellcheck source=../lib/tap.sh
source "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/server.sh
source "$(dirname "$0")/../lib/server.sh"
# shellcheck source=../lib/podinfo.sh
source "$(dirname "$0")/../lib/podinfo.sh"

mkdir -p "$TEST_TMP/tokens"
GOOGLE=(-H 'Metadata-Flavor: Google')
AZURE=(-H 'Metadata: true')
MAINT=/computeMetadata/v1/instance/maintenance-event
SCHED='/metadata/scheduledevents?api-version=2020-07-01'
EC2EV=/latest/meta-data/events/maintenance/scheduled
SPOT=/latest/meta-data/spot/instance-action

# get NAME WANT_STATUS URL CURL-ARGS...: the body into BODY, the headers into HEAD.
get() {
	local name=$1 want=$2 url=$3 code
	shift 3
	code=$(curl -s -D "$TEST_TMP/head" -o "$TEST_TMP/body" -w '%{http_code}' "$@" "$url")
	BODY=$(cat "$TEST_TMP/body")
	HEAD=$(tr -d '\r' <"$TEST_TMP/head")
	if [[ $code != "$want" ]]; then
		not_ok "$name" "status $code, want $want" "$BODY"
		return 1
	fi
	return 0
}
# is NAME WANT_STATUS WANT_BODY URL CURL-ARGS...
is() {
	local name=$1 want=$2 body=$3 url=$4
	shift 4
	get "$name" "$want" "$url" "$@" || return
	expect_eq "$name" "$body" "$BODY"
}
# err NAME STATUS CODE URL CURL-ARGS...: an error answer with that JSON code.
err() {
	local name=$1 want=$2 code=$3 url=$4
	shift 4
	get "$name" "$want" "$url" "$@" || return
	if [[ $BODY == "{\"error\":\"$code\","* ]]; then ok "$name"; else not_ok "$name" "body: $BODY"; fi
}
has_head() { # NAME LINE
	if grep -qxF "$2" <<<"$HEAD"; then ok "$1"; else not_ok "$1" "no '$2' in:" "$HEAD"; fi
}
jfield() { # JSON EXPR (d is the document)
	"$PY" -c 'import json, sys; d = json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}

podinfo_init "$TEST_TMP/podinfo"
server_start IMDS_RATE_LIMIT=0 IMDS_LIFECYCLE_DIR="$PI" IMDS_AVAILABILITY_ZONE=eu-west-1b || exit 1
U=$SRV_URL

echo "# at rest: none in every dialect"
get "GET /v1/lifecycle: 200" 200 "$U/v1/lifecycle" && {
	expect_eq "/v1/lifecycle: state none, no UID, no reason" "none None " \
		"$(jfield "$BODY" 'd["state"], d["migrationUID"], d["reason"]' | tr -d "(),'")"
}
is "GCE maintenance-event: NONE" 200 NONE "$U$MAINT" "${GOOGLE[@]}"
has_head "GCE: Metadata-Flavor: Google echoed" "Metadata-Flavor: Google"
has_head "GCE: Content-Type application/text" "Content-Type: application/text"
is "Azure scheduledevents: no event, incarnation 1" 200 '{"DocumentIncarnation":1,"Events":[]}' "$U$SCHED" "${AZURE[@]}"
is "EC2 events/maintenance/scheduled: []" 200 '[]' "$U$EC2EV"
err "EC2 spot/instance-action: 404 when nothing is pending" 404 not_found "$U$SPOT"
is "GCE instance/name" 200 testvm "$U/computeMetadata/v1/instance/name" "${GOOGLE[@]}"
is "GCE instance/id" 200 default-testvm "$U/computeMetadata/v1/instance/id" "${GOOGLE[@]}"
is "GCE instance/zone" 200 projects/default/zones/eu-west-1b "$U/computeMetadata/v1/instance/zone" "${GOOGLE[@]}"
get "Azure /metadata/instance: 200" 200 "$U/metadata/instance?api-version=2021-02-01" "${AZURE[@]}" &&
	expect_eq "Azure /metadata/instance: compute.name is the VM's" testvm "$(jfield "$BODY" 'd["compute"]["name"]')"

echo "# none -> migrate: waiting requests woken within 1 s of kubelet's write"
get "ETag of /v1/lifecycle" 200 "$U/v1/lifecycle"
E1=$(sed -n 's/^ETag: "\(.*\)"$/\1/p' <<<"$HEAD")
get "ETag of maintenance-event" 200 "$U$MAINT" "${GOOGLE[@]}"
E2=$(sed -n 's/^ETag: "\(.*\)"$/\1/p' <<<"$HEAD")
curl -s -o "$TEST_TMP/w1" -w '%{http_code}' "$U/v1/lifecycle?wait_for_change=true&last_etag=$E1&timeout_sec=20" \
	>"$TEST_TMP/w1.code" && date +%s.%N >"$TEST_TMP/w1.t" &
W1=$!
curl -s -o "$TEST_TMP/w2" -w '%{http_code}' "${GOOGLE[@]}" \
	"$U$MAINT?wait_for_change=true&last_etag=$E2&timeout_sec=20" >"$TEST_TMP/w2.code" &&
	date +%s.%N >"$TEST_TMP/w2.t" &
W2=$!
sleep 0.5 # both parked
T0=$(date +%s.%N)
kubelet_write eviction-in-progress=true
wait "$W1" "$W2"
expect_eq "waiting /v1/lifecycle answered: migrate by eviction" "200 migrate eviction" \
	"$(cat "$TEST_TMP/w1.code") $(jfield "$(cat "$TEST_TMP/w1")" 'd["state"] + " " + d["reason"]')"
expect_eq "waiting maintenance-event answered: MIGRATE_ON_HOST_MAINTENANCE" "200 MIGRATE_ON_HOST_MAINTENANCE" \
	"$(cat "$TEST_TMP/w2.code") $(cat "$TEST_TMP/w2")"
d1=$(awk -v a="$T0" -v b="$(cat "$TEST_TMP/w1.t")" 'BEGIN {printf "%.3f", b - a}')
d2=$(awk -v a="$T0" -v b="$(cat "$TEST_TMP/w2.t")" 'BEGIN {printf "%.3f", b - a}')
echo "# woken after ${d1} s (ours) and ${d2} s (GCE)"
check "ours woken within 1 s of the write (${d1} s)" awk -v d="$d1" 'BEGIN {exit !(d < 1)}'
check "GCE woken within 1 s of the write (${d2} s)" awk -v d="$d2" 'BEGIN {exit !(d < 1)}'

get "Azure: a Freeze event" 200 "$U$SCHED" "${AZURE[@]}" && {
	expect_eq "Azure event: Freeze, Scheduled, for this VM, Platform, -1 s" \
		"2 1 Freeze Scheduled VirtualMachine testvm Platform -1" \
		"$(jfield "$BODY" '" ".join(map(str, [d["DocumentIncarnation"], len(d["Events"])] + [d["Events"][0][k] for k in ("EventType", "EventStatus", "ResourceType")] + [d["Events"][0]["Resources"][0], d["Events"][0]["EventSource"], d["Events"][0]["DurationInSeconds"]]))')"
	check "Azure NotBefore is RFC 1123" "$PY" -c 'import email.utils, json, sys; assert email.utils.parsedate_to_datetime(json.loads(sys.argv[1])["Events"][0]["NotBefore"])' "$BODY"
	EID=$(jfield "$BODY" 'd["Events"][0]["EventId"]')
}
is "Azure: the acknowledgement accepted" 200 '' "$U$SCHED" "${AZURE[@]}" -d "{\"StartRequests\":[{\"EventId\":\"$EID\"}]}"
get "Azure: acknowledged" 200 "$U$SCHED" "${AZURE[@]}" &&
	expect_eq "Azure: the event is Started, NotBefore empty" "Started " \
		"$(jfield "$BODY" 'd["Events"][0]["EventStatus"] + " " + d["Events"][0]["NotBefore"]')"

echo "# botocore's IMDS client on EC2's events"
boto() {
	"$PY" "$TESTS_LIB/lifecycle_ec2.py" --url "$U" >"$TEST_TMP/boto" 2>"$TEST_TMP/boto.err"
	BOTO=$(cat "$TEST_TMP/boto")
}
if boto; then
	expect_eq "botocore, migrate: one system-maintenance event, active, no spot action, with a session" \
		"1 system-maintenance active None 43" \
		"$(jfield "$BOTO" '" ".join(map(str, [len(d["events"]), d["events"][0]["Code"], d["events"][0]["State"], d["spot"], d["token_len"]]))')"
else
	not_ok "botocore, migrate" "$(cat "$TEST_TMP/boto.err")"
fi

echo "# migrate -> none"
kubelet_write eviction-in-progress=
is "GCE: NONE again" 200 NONE "$U$MAINT" "${GOOGLE[@]}"
is "Azure: no event, incarnation 3" 200 '{"DocumentIncarnation":3,"Events":[]}' "$U$SCHED" "${AZURE[@]}"
if boto; then
	expect_eq "botocore, none: no event, no spot action" "0 None" "$(jfield "$BOTO" 'len(d["events"]), d["spot"]' | tr -d "(),")"
else
	not_ok "botocore, none" "$(cat "$TEST_TMP/boto.err")"
fi
err "Azure: the old event cannot be acknowledged" 400 unknown_event "$U$SCHED" "${AZURE[@]}" \
	-d "{\"StartRequests\":[{\"EventId\":\"$EID\"}]}"

echo "# none -> terminate (evictionStrategy External)"
kubelet_write eviction-strategy=External eviction-in-progress=true
is "GCE: TERMINATE_ON_HOST_MAINTENANCE" 200 TERMINATE_ON_HOST_MAINTENANCE "$U$MAINT" "${GOOGLE[@]}"
get "Azure: a Terminate event" 200 "$U$SCHED" "${AZURE[@]}" &&
	expect_eq "Azure: Terminate, Scheduled" "Terminate Scheduled" \
		"$(jfield "$BODY" 'd["Events"][0]["EventType"] + " " + d["Events"][0]["EventStatus"]')"
if boto; then
	expect_eq "botocore, terminate: instance-stop, spot action terminate" "instance-stop terminate" \
		"$(jfield "$BOTO" 'd["events"][0]["Code"] + " " + d["spot"]["action"]')"
else
	not_ok "botocore, terminate" "$(cat "$TEST_TMP/boto.err")"
fi
kubelet_write eviction-strategy=LiveMigrate eviction-in-progress=

echo "# an arrival, and the maintenance annotation"
kubelet_write migration-job-uid=5d1e2a34-75f0-4a5e-9f35-6c8b1e0b1f2a 'migration-target-ready=2026-11-27 15:04:05 +0000 UTC'
get "/v1/lifecycle: arrived" 200 "$U/v1/lifecycle" &&
	expect_eq "/v1/lifecycle: arrived by migration, with the migration's UID" \
		"arrived migration 5d1e2a34-75f0-4a5e-9f35-6c8b1e0b1f2a" \
		"$(jfield "$BODY" 'd["state"] + " " + d["reason"] + " " + d["migrationUID"]')"
is "GCE: an arrival is NONE" 200 NONE "$U$MAINT" "${GOOGLE[@]}"
kubelet_write maintenance=migrate
get "/v1/lifecycle: the operator's announcement" 200 "$U/v1/lifecycle" &&
	expect_eq "/v1/lifecycle: migrate by maintenance" "migrate maintenance" "$(jfield "$BODY" 'd["state"] + " " + d["reason"]')"
kubelet_write maintenance=reboot
get "/v1/lifecycle: a value that is not ours" 200 "$U/v1/lifecycle" &&
	expect_eq "/v1/lifecycle: an unknown maintenance value is ignored" arrived "$(jfield "$BODY" 'd["state"]')"
check "the unknown maintenance value is logged, naming the annotation" grep -q "imds.kubevirt.io/maintenance 'reboot'" "$SRV_LOG"

echo "# bad input"
err "GCE without Metadata-Flavor: 403" 403 missing_header "$U$MAINT"
has_head "GCE 403: Metadata-Flavor: Google echoed" "Metadata-Flavor: Google"
err "GCE with Metadata-Flavor: google (case): 403" 403 missing_header "$U$MAINT" -H 'Metadata-Flavor: google'
err "GCE with X-Forwarded-For: 403" 403 forbidden "$U$MAINT" "${GOOGLE[@]}" -H 'X-Forwarded-For: 10.0.0.1'
err "GCE POST: 405" 405 method_not_allowed "$U$MAINT" "${GOOGLE[@]}" -X POST
has_head "GCE 405: Allow: GET, HEAD" "Allow: GET, HEAD"
err "GCE unknown key: 404 (flavor echoed)" 404 not_found "$U/computeMetadata/v1/instance/nope" "${GOOGLE[@]}"
has_head "GCE 404: Metadata-Flavor: Google echoed" "Metadata-Flavor: Google"
err "GCE bad last_etag: 400" 400 bad_last_etag "$U$MAINT?wait_for_change=true&last_etag=zz" "${GOOGLE[@]}"
err "Azure without Metadata: true: 400" 400 missing_header "$U$SCHED"
err "Azure without api-version: 400" 400 bad_api_version "$U/metadata/scheduledevents" "${AZURE[@]}"
err "Azure api-version it never had: 400" 400 bad_api_version "$U/metadata/scheduledevents?api-version=2099-01-01" "${AZURE[@]}"
err "Azure instance api-version not a date: 400" 400 bad_api_version "$U/metadata/instance?api-version=latest" "${AZURE[@]}"
err "Azure PUT: 405" 405 method_not_allowed "$U$SCHED" "${AZURE[@]}" -X PUT
has_head "Azure 405: Allow: GET, HEAD, POST" "Allow: GET, HEAD, POST"
err "Azure POST malformed: 400" 400 bad_body "$U$SCHED" "${AZURE[@]}" -d '{"StartRequests":[{"EventId":}]}'
err "Azure POST not JSON: 400" 400 bad_body "$U$SCHED" "${AZURE[@]}" -d 'StartRequests'
head -c 5000 /dev/zero | tr '\0' ' ' >"$TEST_TMP/big"
err "Azure POST of 5000 bytes: 413" 413 body_too_large "$U$SCHED" "${AZURE[@]}" --data-binary @"$TEST_TMP/big"
err "/v1/lifecycle POST: 405" 405 method_not_allowed "$U/v1/lifecycle" -X POST
err "/v1/lifecycle POST with a body: 413 before the body is read, as its neighbours" 413 body_not_allowed \
	"$U/v1/lifecycle" -d x
err "/v1/lifecycle bad wait_for_change: 400" 400 bad_wait_for_change "$U/v1/lifecycle?wait_for_change=maybe"
check "the server survived all of it" kill -0 "$SRV_PID"
server_stop

echo "# the neighbours' rules: sessions and the rate limit"
server_start IMDS_RATE_LIMIT=0 IMDS_LIFECYCLE_DIR="$PI" IMDS_SESSION=required || exit 1
U=$SRV_URL
err "EC2 events without a session (IMDS_SESSION=required): 401" 401 session_required "$U$EC2EV"
TOKEN=$(curl -s -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' "$U/latest/api/token")
is "EC2 events with a session: 200" 200 '[]' "$U$EC2EV" -H "X-aws-ec2-metadata-token: $TOKEN"
err "GCE with a bad session token: 401" 401 invalid_token "$U$MAINT" "${GOOGLE[@]}" -H 'X-Metadata-Token: nope'
server_stop
server_start IMDS_RATE_LIMIT=1 IMDS_LIFECYCLE_DIR="$PI" || exit 1
U=$SRV_URL
codes=$(curl -s -o /dev/null -o /dev/null -o /dev/null -w '%{http_code} ' "${GOOGLE[@]}" "$U$MAINT" "$U$MAINT" "$U$MAINT")
expect_eq "GCE at IMDS_RATE_LIMIT=1: the burst, then 429" "200 429 429 " "$codes"
server_stop
tap_done
