#!/usr/bin/python3
"""Envoy's (or ztunnel's) part in the Istio tests: a TCP passthrough on
:15001 (outbound, what ISTIO_REDIRECT sends), :15006 (inbound,
ISTIO_IN_REDIRECT or the TPROXY rules) and :15008 (ztunnel's HBONE port,
which the ambient rules send there too), IPv4 and IPv6, each connection
relayed to its original destination as the passthrough clusters do.

    istio_proxy.py [--transparent] [--mark N]

The original destination is SO_ORIGINAL_DST (REDIRECT's, and any tracked
connection's), else the accepted socket's own address (a TPROXY'd
connection conntrack does not track); inbound upstreams to the pod itself
leave from 127.0.0.6 (::6), InboundPassthroughCluster.  With --transparent
(TPROXY: Envoy in interceptionMode TPROXY, ztunnel in-pod) the listeners
are IP_TRANSPARENT: the kernel's TPROXY hands a packet only to such a
socket.  --mark N: every upstream socket carries
SO_MARK N (ztunnel's 0x539, which Istio's in-pod rules exempt).  Run it as
UID 1337 (Istio's sidecar rules exempt that UID); IP_TRANSPARENT and
SO_MARK need CAP_NET_ADMIN, which Istio gives the proxy in TPROXY mode.
One log line per connection:

    conn outbound 10.0.2.2:41234 -> 192.168.100.1:8081
"""
import selectors
import socket
import struct
import sys

SO_ORIGINAL_DST = 80  # IP6T_SO_ORIGINAL_DST too
IP_TRANSPARENT = 19
IPV6_TRANSPARENT = 75
SO_MARK = 36


def original_dst(s):
    """SO_ORIGINAL_DST, as Envoy's original_dst listener filter asks first;
    the socket's own address when the connection has no conntrack entry
    (untracked: TPROXY handed it over all the same)."""
    try:
        return conntrack_dst(s)
    except OSError:
        a = s.getsockname()
        return a[0], a[1]


def conntrack_dst(s):
    if s.family == socket.AF_INET6:
        raw = s.getsockopt(socket.IPPROTO_IPV6, SO_ORIGINAL_DST, 28)
        port, addr = struct.unpack("!2xH4x16s4x", raw)
        return socket.inet_ntop(socket.AF_INET6, addr), port
    raw = s.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port, addr = struct.unpack("!2xH4s8x", raw)
    return socket.inet_ntoa(addr), port


def is_local(fam, addr):
    """addr is an address of this netns (a bind without IP_TRANSPARENT
    succeeds only for those)."""
    t = socket.socket(fam, socket.SOCK_STREAM)
    try:
        t.bind((addr, 0))
        return True
    except OSError:
        return False
    finally:
        t.close()


def main():
    transparent = "--transparent" in sys.argv
    mark = 0
    if "--mark" in sys.argv:
        mark = int(sys.argv[sys.argv.index("--mark") + 1], 0)
    sel = selectors.DefaultSelector()
    for port, kind in ((15001, "outbound"), (15006, "inbound"), (15008, "hbone")):
        for fam, any_ in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
            ls = socket.socket(fam, socket.SOCK_STREAM)
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if fam == socket.AF_INET6:
                ls.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if transparent:
                if fam == socket.AF_INET6:
                    ls.setsockopt(socket.IPPROTO_IPV6, IPV6_TRANSPARENT, 1)
                else:
                    ls.setsockopt(socket.SOL_IP, IP_TRANSPARENT, 1)
            try:
                ls.bind((any_, port))
            except OSError as e:
                if fam == socket.AF_INET6:  # IPv6 off in the pod
                    ls.close()
                    continue
                raise SystemExit("bind %s:%d: %s" % (any_, port, e))
            ls.listen(64)
            ls.setblocking(False)
            sel.register(ls, selectors.EVENT_READ, ("listen", kind))
    print("ready", flush=True)
    pairs = {}
    while True:
        for key, _ in sel.select():
            what = key.data
            if what[0] == "listen":
                c, peer = key.fileobj.accept()
                try:
                    dst = original_dst(c)
                except OSError as e:
                    print("conn %s %s:%d -> ? (%s)" % (what[1], peer[0], peer[1], e), flush=True)
                    c.close()
                    continue
                print("conn %s %s:%d -> %s:%d" % (what[1], peer[0], peer[1], dst[0], dst[1]),
                      flush=True)
                up = socket.socket(c.family, socket.SOCK_STREAM)
                if mark:
                    up.setsockopt(socket.SOL_SOCKET, SO_MARK, mark)
                if what[1] == "inbound" and is_local(c.family, dst[0]):
                    # to the pod itself: from 127.0.0.6 (::6), which Istio's
                    # rules exempt (else the upstream is captured again)
                    try:
                        up.bind(("::6" if c.family == socket.AF_INET6 else "127.0.0.6", 0))
                    except OSError:
                        pass  # ::6 exists only where istio-iptables added it
                up.settimeout(2)
                try:
                    up.connect(dst)
                except OSError as e:
                    print("  upstream %s:%d: %s" % (dst[0], dst[1], e), flush=True)
                    c.close()
                    up.close()
                    continue
                for s in (c, up):
                    s.setblocking(False)
                pairs[c] = up
                pairs[up] = c
                sel.register(c, selectors.EVENT_READ, ("data",))
                sel.register(up, selectors.EVENT_READ, ("data",))
            else:
                s = key.fileobj
                other = pairs.get(s)
                try:
                    buf = s.recv(65536)
                except OSError:
                    buf = b""
                if buf and other is not None:
                    try:
                        other.sendall(buf)
                        continue
                    except OSError:
                        pass
                for x in (s, other):
                    if x is not None and x in pairs:
                        sel.unregister(x)
                        pairs.pop(x, None)
                        x.close()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
