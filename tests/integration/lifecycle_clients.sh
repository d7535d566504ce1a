#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# lifecycle_clients: the lifecycle events (docs/sidecar.md, "Lifecycle events") read by the
# real clients of two clouds, each through none -> migrate -> none and none -> terminate,
# the pod's files written as kubelet writes them:
#   - Google's gcp-metadata (npm, pinned in tests/lib/gcp/, installed into a cache keyed by
#     its lock file, never into the repository): instance('maintenance-event') and the
#     instance keys it reads, and its long poll (wait_for_change without last_etag), which
#     must be answered within 1 s of kubelet's write; it throws on any answer without
#     Metadata-Flavor: Google;
#   - Debian resource-agents' azure-events-az (hack/install-deps.sh test): its own code pulls
#     the events, matches them by its own name (/metadata/instance) and event type, and
#     acknowledges its local ones (tests/lib/azure_events_client.py).
# (botocore's IMDS client reads the EC2 events in lifecycle.sh.)
set -uo pipefail
# shellcheck source=../lib/tap.sh
source "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/server.sh
source "$(dirname "$0")/../lib/server.sh"
# shellcheck source=../lib/podinfo.sh
source "$(dirname "$0")/../lib/podinfo.sh"
# shellcheck source=../lib/npm.sh
source "$(dirname "$0")/../lib/npm.sh"

# --- gcp-metadata, cached by the hash of its lock file
if ! npm_cached "$REPO/tests/lib/gcp" npm-gcp; then
	not_ok "npm ci of tests/lib/gcp into the cache" "$NPM_ERR"
	tap_done
	exit 1
fi
ok "gcp-metadata $(node -p "require('$NPM_DIR/node_modules/gcp-metadata/package.json').version") installed (cache ${NPM_DIR#"$REPO"/})"
MODULES=$NPM_DIR/node_modules
AGENT=/usr/lib/ocf/resource.d/heartbeat/azure-events-az
if [[ ! -f $AGENT ]]; then
	not_ok "azure-events-az is installed ($AGENT: hack/install-deps.sh test)"
	tap_done
	exit 1
fi

mkdir -p "$TEST_TMP/tokens"
podinfo_init "$TEST_TMP/podinfo"
server_start IMDS_RATE_LIMIT=0 IMDS_LIFECYCLE_DIR="$PI" IMDS_AVAILABILITY_ZONE=europe-west1-b || exit 1
export GCE_METADATA_HOST=$SRV_AT:$SRV_PORT

gcp() { # command...: its JSON line in OUT
	OUT=$(node "$TESTS_LIB/gcp_client.mjs" --modules "$MODULES" "$@" 2>"$TEST_TMP/gcp.err")
}
azure() { # args...: its JSON line in OUT
	OUT=$("$PY" "$TESTS_LIB/azure_events_client.py" --url "$SRV_URL" "$@" 2>"$TEST_TMP/az.err")
}
jf() { # EXPR over d, the JSON in OUT
	"$PY" -c 'import json, sys; d = json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$OUT" "$1"
}
client() { # NAME WANT EXPR CLIENT-FN ARGS...: the client ran and EXPR over its JSON is WANT
	local name=$1 want=$2 expr=$3 fn=$4
	shift 4
	if "$fn" "$@"; then
		expect_eq "$name" "$want" "$(jf "$expr")"
	else
		not_ok "$name" "$(cat "$TEST_TMP/gcp.err" "$TEST_TMP/az.err" 2>/dev/null | tail -n 20)"
	fi
	: >"$TEST_TMP/gcp.err"
	: >"$TEST_TMP/az.err"
}

echo "# none"
client "gcp-metadata: maintenance-event NONE, its own name, id and zone" \
	"NONE testvm default-testvm projects/default/zones/europe-west1-b" \
	'" ".join([d["maintenance"], d["name"], d["id"], d["zone"]])' gcp read
client "azure-events-az: its name testvm, incarnation 1, no event" "testvm 1 0" \
	'"%s %s %d" % (d["name"], d["incarnation"], len(d["events"]))' azure

echo "# none -> migrate, gcp-metadata waiting (wait_for_change=true, no last_etag)"
node "$TESTS_LIB/gcp_client.mjs" --modules "$MODULES" wait 20 >"$TEST_TMP/wait" 2>"$TEST_TMP/wait.err" &
W=$!
sleep 1 # parked (node starts in ~0.2 s)
T0=$(date +%s.%N)
kubelet_write eviction-in-progress=true
if wait "$W"; then
	OUT=$(cat "$TEST_TMP/wait")
	expect_eq "gcp-metadata's long poll answered MIGRATE_ON_HOST_MAINTENANCE" MIGRATE_ON_HOST_MAINTENANCE "$(jf 'd["maintenance"]')"
	d=$(jf "'%.3f' % (d['at'] - $T0)")
	echo "# gcp-metadata answered ${d} s after kubelet's write"
	check "... within 1 s of kubelet's write (${d} s)" awk -v d="$d" 'BEGIN {exit !(d < 1)}'
else
	not_ok "gcp-metadata's long poll" "$(cat "$TEST_TMP/wait.err")"
fi
client "gcp-metadata: MIGRATE_ON_HOST_MAINTENANCE" MIGRATE_ON_HOST_MAINTENANCE 'd["maintenance"]' gcp read
client "azure-events-az: a Freeze event for itself, Scheduled; acknowledged, Started" \
	"Freeze Scheduled 1 Started" \
	'" ".join([d["local"][0]["EventType"], d["local"][0]["EventStatus"], str(len(d["local"])), d["after"][0]["EventStatus"]])' \
	azure --ack
check "the sidecar logged the agent's POST of StartRequests" grep -q 'POST /metadata/scheduledevents 200' "$SRV_LOG"

echo "# migrate -> none"
kubelet_write eviction-in-progress=
client "gcp-metadata: NONE again" NONE 'd["maintenance"]' gcp read
client "azure-events-az: no event, a new incarnation (3)" "3 0" '"%s %d" % (d["incarnation"], len(d["events"]))' azure

echo "# none -> terminate (evictionStrategy External)"
kubelet_write eviction-strategy=External eviction-in-progress=true
client "gcp-metadata: TERMINATE_ON_HOST_MAINTENANCE" TERMINATE_ON_HOST_MAINTENANCE 'd["maintenance"]' gcp read
# The agent handles only Freeze, Reboot and Redeploy (its validate_action): it sees the
# Terminate event for its name and leaves it alone, as it does on Azure.
client "azure-events-az: a Terminate event for testvm, not among the types it handles" \
	"Terminate testvm 0" \
	'" ".join([d["events"][0]["EventType"], d["events"][0]["Resources"][0], str(len(d["local"]))])' azure
kubelet_write eviction-in-progress=
client "gcp-metadata: NONE at the end" NONE 'd["maintenance"]' gcp read
check "the server is still up" kill -0 "$SRV_PID"
server_stop
tap_done
