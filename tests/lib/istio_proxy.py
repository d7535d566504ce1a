#!/usr/bin/python3
"""Envoy's part in the Istio tests: a TCP passthrough on :15001 (outbound,
what ISTIO_REDIRECT sends) and :15006 (inbound, ISTIO_IN_REDIRECT), each
connection relayed to its SO_ORIGINAL_DST, as Envoy's passthrough clusters
do (inbound ones from 127.0.0.6, InboundPassthroughClusterIpv4).  Run it as
UID 1337 (Istio's rules exempt that UID).  One log line per connection:

    conn outbound 10.0.2.2:41234 -> 192.168.100.1:8081
"""
import selectors
import socket
import struct
import sys

SO_ORIGINAL_DST = 80


def original_dst(s):
    raw = s.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port, addr = struct.unpack("!2xH4s8x", raw)
    return socket.inet_ntoa(addr), port


def main():
    sel = selectors.DefaultSelector()
    for port, kind in ((15001, "outbound"), (15006, "inbound")):
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("0.0.0.0", port))
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
                up = socket.socket()
                if what[1] == "inbound":
                    up.bind(("127.0.0.6", 0))
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
