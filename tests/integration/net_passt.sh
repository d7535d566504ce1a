#!/usr/bin/env bash
# imds-net-mode: agent (the sidecar as UID 107 with no capability, imds-node over a pods folder: tests/lib/netns.sh)
# passt (core passtBinding or the plugin): KubeVirt adds only two sysctls
# to the pod (tests/lib/netns.sh launcher_passt); passt in the pod answers
# the guest's ARP and DHCP itself and carries each of its TCP flows over a
# socket of its own, connect()ed from the pod.  Here the real thing:
# Debian's passt package, as pasta (the same code, its guest a network
# namespace instead of a VM; the VM suite runs passt with qemu).  There is
# no tap and no bridge: the sidecar plumbs 169.254.169.254 on veth-imds at
# once and takes connections over the pod's loopback.  A process of the
# pod is indistinguishable from passt there (same loopback, same UID 107 in
# a real pod): it is served too, which docs/sidecar.md says.  Without the
# sidecar's plumbing passt's connection is refused in the pod, never routed
# out of eth0.  (root)
set -uo pipefail
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/netns.sh
. "$(dirname "$0")/../lib/netns.sh"

if ! command -v pasta >/dev/null; then
	not_ok "pasta available (Debian's passt package)"
	tap_done
	exit 1
fi
# a dual-stack pod: passt gives its guest the pod's IPv6 as well
export NODE_V6=1
if ! ns_setup || ! node_link 1400 || ! launcher_passt; then
	not_ok "launcher pod (passt) set up"
	tap_done
	exit 1
fi
expect_eq "launcher as KubeVirt builds it: ping_group_range 107 107, unprivileged ports from 0" "107	107 0" \
	"$(in_pod cat /proc/sys/net/ipv4/ping_group_range) $(in_pod cat /proc/sys/net/ipv4/ip_unprivileged_port_start)"
# The collision that was (issue 32 item 1), shown with the sockets alone:
# a listener on 169.254.169.254:80 bound to a device, as the sidecar's
# was, and passt's wildcard :80 cannot both exist in the pod, in either
# order; and pasta given only that port (a VMI's `ports: [80]`) refuses to
# start.  Our listeners are on another port now (below).
out=$(in_pod "$PY" - <<'PY' 2>&1
import errno, socket
def dev():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_IP, 15, 1)  # IP_FREEBIND
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"eth0")
    s.bind(("169.254.169.254", 80)); s.listen(); return s
def wild():
    s = socket.socket(socket.AF_INET6); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", 80)); s.listen(); return s
res = []
for first, second in ((dev, wild), (wild, dev)):
    a = first()
    try:
        second(); res.append("bound")
    except OSError as e:
        res.append(errno.errorcode[e.errno])
    a.close()
print(" ".join(res))
PY
)
expect_eq "before: .254:80 on a device and passt's wildcard :80 collide, either order" "EADDRINUSE EADDRINUSE" "$out"
ns_new "$NS_TAG-scratch"
ip netns exec "$NS_POD" "$PY" -c 'import socket,time
ls=[]
for fam,a in ((socket.AF_INET,"169.254.169.254"),(socket.AF_INET6,"fd00:ec2::254")):
    s=socket.socket(fam); s.setsockopt(socket.SOL_IP,15,1); s.setsockopt(socket.SOL_SOCKET,socket.SO_BINDTODEVICE,b"eth0")
    if fam==socket.AF_INET6: s.setsockopt(socket.IPPROTO_IPV6,socket.IPV6_V6ONLY,1)
    s.bind((a,80)); s.listen(); ls.append(s)
time.sleep(30)' &
holder=$!
# until both listen (a fixed 0.3 s lost the race once on a loaded machine)
for ((i = 0; i < 200; i++)); do
	(($(ip netns exec "$NS_POD" ss -ltnH 'sport = :80' | grep -cE '169\.254\.169\.254%eth0:80 |\[fd00:ec2::254\]%eth0:80 ') >= 2)) && break
	sleep 0.05
done
out=$(timeout 10 ip netns exec "$NS_POD" pasta --runas 0 -f -I eth0 -t 80 -u none --netns "/run/netns/$NS_TAG-scratch" 2>&1)
rc=$?
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
if [[ $rc -ne 0 && $out == *"Failed to bind any port"* ]]; then
	ok "before: passt with \`-t 80\` (a VMI's ports: [80]) exits when .254:80 is held: $(grep -m1 'Failed to bind' <<<"$out")"
else
	not_ok "before: passt with -t 80 fails while .254:80 is held" "rc $rc" "$out"
fi

# passt first, as libvirt runs it: every port (tests/lib/netns.sh
# pasta_start); the guest serves HTTP on its own port 80.
if pasta_start; then ok "pasta up forwarding every port as passt's all ($PASST_ALL, TCP and UDP; RLIMIT_NOFILE $PASST_NOFILE): the guest has the pod's address"; else not_ok "pasta up" "$(cat "$NET_TMP/pasta.log")"; fi
# Until the guest's server listens (up to 15 s: a fresh root's first
# import of http.server is slow), else the check after it would meet the
# guest's reset and blame passt (seen once in fresh-check: "Connection reset
# by peer" from the node, the server not yet up).
guest_web() {
	local deadline=$((SECONDS + 15))
	while ((SECONDS < deadline)); do
		in_vm ss -ltnH 'sport = :80' | grep -q LISTEN && return 0
		sleep 0.05
	done
	return 1
}
mkdir -p "$NET_TMP/guest-www"
echo guest-own-80 >"$NET_TMP/guest-www/index.html"
guest_web_start() {
	ip netns exec "$NS_VM" "$PY" -m http.server --bind 0.0.0.0 --directory "$NET_TMP/guest-www" 80 \
		>>"$NET_TMP/guest-http.log" 2>&1 &
	GUEST_WEB_PID=$!
	BG_PIDS+=($!)
	guest_web || { not_ok "the guest's own web server listens on its port 80" "$(tail -n 5 "$NET_TMP/guest-http.log")"; return 1; }
}
guest_web_start
node_reaches_guest80() { # the VM's own web server, from the node, on the pod IP
	local out
	out=$(in_node curl -sS --max-time 3 "http://$POD_IP/" 2>&1)
	[[ $out == guest-own-80 ]] || { echo "$out"; return 1; }
}
if out=$(node_reaches_guest80); then ok "passt alone: the guest's port 80 on the pod IP, from the node"; else
	not_ok "passt alone: the guest's port 80 from the node" "$out" "--- the guest's server ---" "$(tail -n 5 "$NET_TMP/guest-http.log")" \
		"$(in_vm ss -ltn)" "--- pasta ---" "$(tail -n 5 "$NET_TMP/pasta.log")"
fi

# The node answers HTTP on 169.254.169.254 (a cloud node's IMDS): a leak
# would show there.
ip -n "$NS_NODE" addr add 169.254.169.254/32 dev lo
ip netns exec "$NS_NODE" "$PY" -m http.server --bind 169.254.169.254 80 >"$NET_TMP/node-http.log" 2>&1 &
BG_PIDS+=($!)
for _ in $(seq 200); do in_node curl -s -o /dev/null --max-time 1 http://169.254.169.254/ && break; sleep 0.05; done
out=$(GUEST_TIMEOUT=3 guest_get "$NS_VM" /from-passt 2>&1)
if grep -q 'GET /from-passt' "$NET_TMP/node-http.log"; then
	ok "no sidecar: passt's connection for the guest goes out of the pod to the node's 169.254.169.254"
else
	not_ok "no sidecar: passt's connection goes out to the node" "$out" "$(cat "$NET_TMP/node-http.log")"
fi
: >"$NET_TMP/node-http.log"

node_capture_start cali0
imds_start IMDS_INTERFACES=default:passt
# (agent mode: the agent says it serves passt, with no tap; its line and the
# sidecar's come from two processes, in either order)
passt_re='serving .* to passt \(over the pod.s loopback\)'
[[ $IMDS_NET_MODE_TEST == agent ]] && passt_re='imds-node info: pod [^ ]*: serving 0 tap\(s\) and passt'
if imds_wait_serving 1 10 && wait_for_line "$IMDS_LOG" "$passt_re" 2; then
	ok "run: serving at once, no tap to wait for"
else
	not_ok "run: serving at once" "$(imds_log_tail)"
fi
out=$(cloudinit_fetch "$NS_VM" 2>&1)
if grep -q '"ok": true' <<<"$out" && grep -q '"retries": 0' <<<"$out"; then ok "the passt guest: cloud-init get_data(), no retries"; else not_ok "the passt guest: cloud-init get_data()" "$out" "$(imds_log_tail)"; fi
out=$(guest_get "$NS_VM" /v1/identity -H 'Metadata: true' 2>&1)
if grep -q '"vmName":"netvm"' <<<"$out"; then ok "/v1/identity from the passt guest"; else not_ok "/v1/identity from the passt guest" "$out"; fi
expect_eq "the sidecar after passt: passt keeps the wildcard :80, our listeners are on .254's and fd00:ec2::254's :50254" \
	"*:80 169.254.169.254%veth-imds:50254 [fd00:ec2::254]%veth-imds:50254" \
	"$(in_pod ss -ltnH | awk '$4 ~ /:(80|50254)$/ {print $4}' | grep -v 'fe80' | sort | tr '\n' ' ' | sed 's/ $//')"
if out=$(node_reaches_guest80); then ok "the sidecar after passt: the guest's port 80 on the pod IP, from the node"; else not_ok "the sidecar after passt: the guest's port 80 from the node" "$out"; fi
out=$(guest_get "$NS_VM" /v1/token -H 'Metadata: true' 2>&1)
if grep -q '"token":"eyJ' <<<"$out"; then ok "/v1/token from the passt guest"; else not_ok "/v1/token from the passt guest" "$out"; fi
for _ in $(seq 200); do [[ -z $(in_vm ip -6 addr show tentative) ]] && break; sleep 0.01; done
out=$(in_vm curl -sS -g --max-time 3 -H 'Metadata: true' "http://[fd00:ec2::254]/v1/identity" 2>&1)
if grep -q '"vmName":"netvm"' <<<"$out"; then ok "/v1/identity from the passt guest over IPv6, [fd00:ec2::254]"; else not_ok "/v1/identity from the passt guest over IPv6" "$out" "$(cat "$NET_TMP/pasta.log")"; fi
# passt answers the guest's link-local neighbour discovery for its own
# gateway only and forwards no link-local traffic: fe80::a9fe:a9fe is not
# on the path of a passt guest (docs/sidecar.md)
out=$(in_vm curl -sS -g --max-time 2 "http://[fe80::a9fe:a9fe%eth0]/healthz" 2>&1)
if [[ $out == OK ]]; then not_ok "passt: fe80::a9fe:a9fe not reachable (as documented)" "answered"; else ok "passt: fe80::a9fe:a9fe not reachable through passt, as documented (${out#curl: (* })"; fi
out=$(ip netns exec "$NS_POD" setpriv --reuid=107 --regid=107 --clear-groups curl -s --max-time 2 http://169.254.169.254/healthz)
expect_eq "a process of the pod (UID 107, as passt) is served too: indistinguishable from passt" OK "$out"
expect_eq "the sidecar sees passt's connections from the pod itself (169.254.169.254, fd00:ec2::254)" 0 \
	"$(grep -E ' GET /' "$IMDS_LOG" | grep -vcE '^[^ ]* (169\.254\.169\.254|fd00:ec2::254) ')"
expect_eq "the node saw nothing for 169.254.169.254, its server no request" "0 0" \
	"$(node_capture_count) $(grep -c GET "$NET_TMP/node-http.log")"
# The sidecar dead and its plumbing gone: the fallback refuses passt's
# connection in the pod.
kill -KILL "$IMDS_PID"
wait "$IMDS_PID" 2>/dev/null
IMDS_PID=
ip -n "$NS_POD" link del veth-imds
node_capture_start cali0
out=$(GUEST_TIMEOUT=3 guest_get "$NS_VM" /after 2>&1)
expect_eq "sidecar dead, plumbing gone: passt's connection refused in the pod, nothing reaches the node" "0 0" \
	"$(node_capture_count) $(grep -c GET "$NET_TMP/node-http.log")"
imds_start IMDS_INTERFACES=default:passt
if imds_wait_serving 1 10 && out=$(guest_get "$NS_VM" /v1/meta-data 2>&1) && grep -q instance-id <<<"$out"; then
	ok "restarted: served again"
else
	not_ok "restarted: served again" "${out:-}" "$(imds_log_tail)"
fi
if out=$(node_reaches_guest80); then ok "restarted: the guest's port 80 still on the pod IP"; else not_ok "restarted: the guest's port 80 on the pod IP" "$out"; fi
imds_stop
imds_start IMDS_INTERFACES=default:passt
if imds_wait_serving 1 10 && out=$(guest_get "$NS_VM" /v1/meta-data 2>&1) && grep -q instance-id <<<"$out" &&
	out=$(node_reaches_guest80); then
	ok "SIGTERM and started again next to passt: served, and the guest's port 80 on the pod IP"
else
	not_ok "SIGTERM and started again next to passt" "${out:-}" "$(imds_log_tail)"
fi
# passt after the sidecar (the VM restarted, or the sidecar a native
# sidecar started first): every port again, the guest's 80 among them.
passt_served() { # what the guest gets, IPv4 and IPv6, and its port 80 from the node
	local out
	for _ in $(seq 200); do [[ -z $(in_vm ip -6 addr show tentative) ]] && break; sleep 0.01; done
	out=$(guest_get "$NS_VM" /v1/identity -H 'Metadata: true' 2>&1)
	grep -q '"vmName":"netvm"' <<<"$out" || { echo "IPv4: $out"; return 1; }
	out=$(in_vm curl -sS -g --max-time 3 -H 'Metadata: true' "http://[fd00:ec2::254]/v1/identity" 2>&1)
	grep -q '"vmName":"netvm"' <<<"$out" || { echo "IPv6: $out"; return 1; }
	node_reaches_guest80
}
pasta_stop
if pasta_start && out=$(passt_served); then
	ok "passt started after the sidecar, every port: it starts, the guest is served (IPv4, IPv6) and its port 80 is on the pod IP"
else
	not_ok "passt started after the sidecar, every port" "${out:-}" "$(cat "$NET_TMP/pasta.log")"
fi
# A VMI whose ports omit 80 (libvirt: --tcp-ports 22): passt does not bind
# the service's port.  Debian 12's passt connects only after a bind() to the
# destination failed (tcp.c tcp_conn_from_tap at 7c7625d: "Nobody is
# listening then"); fd00:ec2::254 is an address of the pod, so the sidecar
# holds [fd00:ec2::254]:80 (src/net/plumb.h plumb_port_hold6), taken
# while no passt holds :80: the pod's order, the sidecar first, then passt.
# The guest's web server stopped first: while it listened, this pasta was
# seen holding a wildcard :80 of its own, which hides passt's probe (without
# the hold this check then fails: a timeout over IPv6).
pasta_stop
kill "$GUEST_WEB_PID" 2>/dev/null
wait "$GUEST_WEB_PID" 2>/dev/null
imds_stop
imds_start IMDS_INTERFACES=default:passt
imds_wait_serving 1 10
if pasta_start 22 none && out=$(guest_get "$NS_VM" /v1/identity -H 'Metadata: true' 2>&1) && grep -q '"vmName":"netvm"' <<<"$out" &&
	out=$(in_vm curl -sS -g --max-time 3 -H 'Metadata: true' "http://[fd00:ec2::254]/v1/identity" 2>&1) &&
	grep -q '"vmName":"netvm"' <<<"$out"; then
	ok "a VMI's ports: [22] (-t 22: passt binds no :80): the guest is served over IPv4 and IPv6"
else
	not_ok "a VMI's ports: [22]: the guest is served over IPv4 and IPv6" "${out:-}" "$(cat "$NET_TMP/pasta.log")"
fi
# A VMI declaring ports: [80] (libvirt: --tcp-ports 80, no UDP), passt
# binding :80 next to the sidecar's hold.
pasta_stop
guest_web_start
if pasta_start 80 none && out=$(passt_served); then
	ok "a VMI's ports: [80] (-t 80) next to the sidecar: passt starts, the guest is served and its port 80 is on the pod IP"
else
	not_ok "a VMI's ports: [80] (-t 80) next to the sidecar" "${out:-}" "$(cat "$NET_TMP/pasta.log")"
fi
imds_stop
expect_eq "SIGTERM: exit 0" 0 "$IMDS_STATUS"
if imds_log_clean; then ok "server logs free of sanitizer reports"; else not_ok "server logs free of sanitizer reports"; fi
tap_done
