#!/usr/bin/env bash
# imds-variants: debug asan (VmRSS growth is judged in the debug build, sanitizer reports in ASan)
# imds-net-mode: agent
# The soak (issue 14): for SOAK_SECONDS (make test: 30; make soak: 600), at
# the same time
#   - a guest's mix of requests (tests/lib/soak.py guest) to `imds-server run`
#     in a pod netns, link-local guest with all.arp_ignore=8 (every request
#     needs the ARP responder: imds-node's, the sidecar running as the
#     cluster runs it, UID 107 with no capability, tests/lib/netns.sh),
#   - the token and the user-data rotated by kubelet's ..data swap, each new
#     value unique, the old timestamped folder removed as kubelet does,
#   - the pod's plumbing removed (veth-imds deleted, or its nf_tables
#     steering), which imds-node restores,
#   - ARP floods from the guest (bench/arp_flood.c),
#   - slow clients that trickle their headers (the header timeout closes them),
#   - admission reviews over TLS to imds-webhook while its certificate is
#     rotated by the ..data swap.
# At the end: no descriptor growth, no memory growth in the sidecar, the
# webhook and imds-node (VmRSS and descriptors sampled every second, printed), no answer other than the expected ones
# (connection errors only while the plumbing is being restored), every rotated value
# served, both servers exit 0 on SIGTERM.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"
# shellcheck source=../lib/certs.sh
. "$(dirname "$0")/../lib/certs.sh"

SECS=${SOAK_SECONDS:-30}
VARIANT=${IMDS_VARIANT:-debug}
WH=${IMDS_WEBHOOK:-$REPO/build/$VARIANT/imds-webhook}
SOAK=$REPO/tests/lib/soak.py
ROTATE_S=1    # token and user-data alternately, each value lives 2 s
FLAP_S=11     # plumbing removed every FLAP_S (restored by the sidecar)
FLOOD_S=7     # an ARP flood of FLOOD_N requests every FLOOD_S
FLOOD_N=20000
CERT_S=5      # webhook certificate rotation
HEADER_MS=3000
D=$NET_TMP/soak
mkdir -p "$D"
WPID=
BG=()
trap 'for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done; [[ -n "$WPID" ]] && kill -KILL "$WPID" 2>/dev/null; declare -F podfolder_cleanup >/dev/null && podfolder_cleanup; netns_cleanup' EXIT

if [[ ! -x "$WH" || ! -x "$IMDS_SERVER" ]]; then
	not_ok "servers built ($IMDS_SERVER, $WH)"
	tap_done
	exit 1
fi
if ! gcc -O2 -Wall -Werror -o "$D/arp_flood" "$REPO/bench/arp_flood.c" 2>"$D/gcc.err"; then
	not_ok "bench/arp_flood.c built" "$(cat "$D/gcc.err")"
	tap_done
	exit 1
fi

# kswap DIR NAME FILE CONTENT: kubelet's atomic writer for one file: a new
# timestamped folder, ..data renamed over to it, the old folder removed.
kswap() {
	local dir=$1 name=$2 file=$3 old
	mkdir -p "$dir/..$name"
	printf '%s' "$4" >"$dir/..$name/$file"
	old=$(readlink "$dir/..data" 2>/dev/null)
	ln -sfn "..$name" "$dir/..data_tmp"
	mv -T "$dir/..data_tmp" "$dir/..data"
	[[ -L "$dir/$file" ]] || ln -s "..data/$file" "$dir/$file"
	[[ -n "$old" ]] && rm -rf "${dir:?}/$old"
}
b64url() { printf '%s' "$1" | base64 -w0 | tr '+/' '-_' | tr -d '='; }
token_of() { echo "$(b64url '{"alg":"RS256"}').$(b64url "{\"exp\":4102444800,\"jti\":\"soak-$1\"}").c29haw"; }
userdata_of() { printf '#cloud-config\nhostname: soakvm\n# soak-user-data-%s' "$1"; }

# --- the pod, the guest, the sidecar ------------------------------------------------
if ! ns_setup || ! node_link 1400 || ! launcher_masquerade || ! guest_attach "$NS_VM" tap0 linklocal; then
	not_ok "launcher pod and link-local guest set up (needs root, iproute2, nftables)"
	tap_done
	exit 1
fi
in_pod sysctl -qw net.ipv4.conf.all.arp_ignore=8
TOK=$D/tokens UD=$D/data
kswap "$TOK" 0 token "$(token_of 0)"
kswap "$UD" 0 user-data "$(userdata_of 0)"
imds_start IMDS_TOKEN_PATH="$TOK/token" IMDS_USER_DATA_FILE="$UD/user-data" \
	IMDS_HEADER_TIMEOUT_MS=$HEADER_MS IMDS_INTERFACES=default:masquerade:tap0
if imds_wait_serving 1 10 && guest_get "$NS_VM" /healthz >/dev/null; then
	ok "sidecar serving the link-local guest"
else
	not_ok "sidecar serving the link-local guest" "$(imds_log_tail)"
	tap_done
	exit 1
fi

# --- the webhook, its certificates ----------------------------------------------------
certs_ca "$D/ca"
NCERT=$((SECS / CERT_S + 1))
for ((i = 0; i <= NCERT; i++)); do certs_leaf "$D/ca" "$D/leaf$i" ec "$(printf '5%03X' "$i")"; done
CERTS=$D/certs
kubelet_dir "$CERTS" c0 "$D/leaf0"
"$WH" --listen 127.0.0.1:0 --tls-cert-file "$CERTS/tls.crt" --tls-key-file "$CERTS/tls.key" \
	--imds-image registry.example/imds-server:soak 2>"$D/webhook.log" &
WPID=$!
PORT=
for _ in $(seq 300); do
	PORT=$(sed -n 's/.* on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$D/webhook.log" | head -n1)
	[[ -n "$PORT" ]] && break
	sleep 0.01
done
if [[ -n "$PORT" ]]; then ok "webhook serving TLS on 127.0.0.1:$PORT"; else
	not_ok "webhook serving TLS" "$(cat "$D/webhook.log")"
	tap_done
	exit 1
fi

fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
SC_FD0=$(fds "$IMDS_PID") WH_FD0=$(fds "$WPID")
# agent mode: imds-node (the network half: the ARP answers, the restores) sampled
# and judged as the sidecar is
AG=()
[[ $IMDS_NET_MODE_TEST == agent ]] && AG=("$AGENT_PID") AG_FD0=$(fds "$AGENT_PID")

# --- the load --------------------------------------------------------------------------
echo "# soak: ${SECS}s, $VARIANT build; rotations every ${ROTATE_S}s, plumbing removed every ${FLAP_S}s," \
	"ARP flood of $FLOOD_N every ${FLOOD_S}s, certificate every ${CERT_S}s, header timeout ${HEADER_MS}ms"
T0=$EPOCHREALTIME
END=$((SECONDS + SECS))
"$PY" "$SOAK" sample "$IMDS_PID" "$SECS" "$D/sc-samples.json" &
BG+=($!)
"$PY" "$SOAK" sample "$WPID" "$SECS" "$D/wh-samples.json" &
BG+=($!)
if ((${#AG[@]})); then
	"$PY" "$SOAK" sample "${AG[0]}" "$SECS" "$D/ag-samples.json" &
	BG+=($!)
fi
in_vm "$PY" "$SOAK" guest "$SECS" 40 "$D/guest.json" &
GUEST=$!
in_vm "$PY" "$SOAK" slow "$SECS" 16 "$D/slow.json" &
SLOW=$!
"$PY" "$SOAK" webhook "$PORT" "$D/ca/ca.crt" "$REPO/tests/fixtures/webhook/pod-minimal.json" \
	"$SECS" "$D/webhook.json" &
WCLI=$!

# Rotations stop 3 s before the end, so the guest sees the last value.
rotations() {
	local n=0
	while sleep "$ROTATE_S" && ((SECONDS < END - 3)); do
		n=$((n + 1))
		if ((n % 2)); then
			kswap "$TOK" "$n" token "$(token_of "$n")"
			echo "$EPOCHREALTIME token $(token_of "$n")"
		else
			kswap "$UD" "$n" user-data "$(userdata_of "$n")"
			echo "$EPOCHREALTIME user-data soak-user-data-$n"
		fi
	done >"$D/rotations.log"
}
rotations &
BG+=($!)

cert_rotations() {
	local n=0
	while sleep "$CERT_S" && ((SECONDS < END - 3 && n < NCERT)); do
		n=$((n + 1))
		kubelet_dir "$CERTS" "c$n" "$D/leaf$n"
		rm -rf "$CERTS/..c$((n - 1))"
		echo "$EPOCHREALTIME $(printf '5%03X' "$n")"
	done >"$D/certs.log"
}
cert_rotations &
BG+=($!)

# Plumbing removed (the veth pair, or the steering rules, by turns; the
# sidecar restores either), ARP floods: one loop, so they never overlap.
t_flap=$((SECONDS + FLAP_S)) t_flood=$((SECONDS + FLOOD_S)) nflap=0
while ((SECONDS < END - 2)); do
	if ((SECONDS >= t_flap)); then
		down=$EPOCHREALTIME
		if ((nflap++ % 2)); then
			in_pod nft delete table netdev kubevirt_imds
		else
			ip -n "$NS_POD" link del veth-imds
		fi
		sleep 0.3
		echo "$down $EPOCHREALTIME" >>"$D/flaps.log"
		t_flap=$((SECONDS + FLAP_S))
	elif ((SECONDS >= t_flood)); then
		echo "$((SECONDS + SECS - END)) $(in_vm "$D/arp_flood" eth0 169.254.10.20 "$FLOOD_N" 200 2>&1)" >>"$D/floods.log"
		t_flood=$((SECONDS + FLOOD_S))
	else
		sleep 0.1
	fi
done
wait "$GUEST" "$SLOW" "$WCLI"
for p in "${BG[@]}"; do wait "$p" 2>/dev/null; done
BG=()
sleep 1 # the last connections closed by their peers are gone
SC_FD1=$(fds "$IMDS_PID") WH_FD1=$(fds "$WPID")
((${#AG[@]})) && AG+=("$AG_FD0" "$(fds "${AG[0]}")")
echo "# soak ran $(awk -v a="${T0/,/.}" -v b="${EPOCHREALTIME/,/.}" 'BEGIN { printf "%.1f", b - a }')s;" \
	"sidecar VmRSS $(rss "$IMDS_PID") kB, webhook VmRSS $(rss "$WPID") kB at the end"

# --- judged ------------------------------------------------------------------------------
while IFS=$'\t' read -r verdict name detail; do
	case $verdict in
	PASS) ok "$name" ;;
	FAIL) not_ok "$name" "$detail" ;;
	*) echo "# $verdict${name:+ $name}${detail:+ $detail}" ;;
	esac
done < <("$PY" "$SOAK" judge "$D" "$VARIANT" "$SC_FD0" "$SC_FD1" "$WH_FD0" "$WH_FD1" "$HEADER_MS" "${AG[@]:1}")

n5=$(grep -acE '^[0-9TZ:-]+ [^ ]+ [A-Z]+ [^ ]+ 5[0-9][0-9] ' "$IMDS_LOG")
expect_eq "sidecar logged no 5xx answer" 0 "$n5"
if guest_get "$NS_VM" /healthz >/dev/null; then ok "sidecar still serves after the soak"; else
	not_ok "sidecar still serves after the soak" "$(imds_log_tail)"
fi
imds_stop
expect_eq "sidecar: SIGTERM exit 0" 0 "$IMDS_STATUS"
kill -TERM "$WPID"
st=0
wait "$WPID" || st=$?
WPID=
expect_eq "webhook: SIGTERM exit 0" 0 "$st"
if imds_log_clean && ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$D/webhook.log"; then
	ok "server logs free of sanitizer reports ($VARIANT)"
else
	not_ok "server logs free of sanitizer reports ($VARIANT)" "$(grep -hE -A20 'Sanitizer|runtime error' "$IMDS_LOG" "$D/webhook.log" | head -40)"
fi
tap_done
