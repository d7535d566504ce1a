#!/usr/bin/env python3
"""dns_probe.py: a node-side resolver and a guest's query, for net_dns.sh.

  dns_probe.py serve ADDR LOG       answer every A query on ADDR:53, UDP and
                                    TCP, with 192.0.2.53 (one line a query in LOG:
                                    "udp|tcp <client> <name>"); prints "ready"
  dns_probe.py query ADDR udp|tcp NAME [TIMEOUT]
                                    one A query (RFC 1035 wire format); prints
                                    the first A record's address, or the error,
                                    exit 0 only when answered
"""
import socket
import struct
import sys
import threading

ANSWER = bytes([192, 0, 2, 53])


def qname(name):
    out = b""
    for label in name.rstrip(".").split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def read_name(msg, off):
    labels = []
    while msg[off]:
        n = msg[off]
        labels.append(msg[off + 1:off + 1 + n].decode())
        off += 1 + n
    return ".".join(labels), off + 1


def answer(query):
    qid, _flags, qd = struct.unpack("!HHH", query[:6])
    name, end = read_name(query, 12)
    question = query[12:end + 4]
    hdr = struct.pack("!HHHHHH", qid, 0x8180, qd, 1, 0, 0)
    rr = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + ANSWER
    return name, hdr + question + rr


def serve(addr, log):
    lock = threading.Lock()

    def note(proto, peer, name):
        with lock, open(log, "a") as f:
            f.write("%s %s %s\n" % (proto, peer[0], name))

    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((addr, 53))
    t = socket.socket()
    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    t.bind((addr, 53))
    t.listen(16)

    def udp():
        while True:
            q, peer = u.recvfrom(512)
            name, a = answer(q)
            note("udp", peer, name)
            u.sendto(a, peer)

    def tcp():
        while True:
            c, peer = t.accept()
            with c:
                n = struct.unpack("!H", c.recv(2))[0]
                q = b""
                while len(q) < n:
                    q += c.recv(n - len(q))
                name, a = answer(q)
                note("tcp", peer, name)
                c.sendall(struct.pack("!H", len(a)) + a)

    threading.Thread(target=udp, daemon=True).start()
    print("ready", flush=True)
    tcp()


def query(addr, proto, name, timeout):
    q = struct.pack("!HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + qname(name) + struct.pack("!HH", 1, 1)
    try:
        if proto == "udp":
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(timeout)
            s.sendto(q, (addr, 53))
            a = s.recv(512)
        else:
            s = socket.create_connection((addr, 53), timeout=timeout)
            s.sendall(struct.pack("!H", len(q)) + q)
            n = struct.unpack("!H", s.recv(2))[0]
            a = b""
            while len(a) < n:
                chunk = s.recv(n - len(a))
                if not chunk:
                    break
                a += chunk
    except OSError as e:
        print("error: %s" % e)
        return 1
    if len(a) < 12 or a[:2] != b"\x12\x34" or struct.unpack("!H", a[6:8])[0] < 1:
        print("error: no answer record")
        return 1
    print(socket.inet_ntoa(a[-4:]))
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    else:
        t = float(sys.argv[5]) if len(sys.argv) > 5 else 2.0
        sys.exit(query(sys.argv[2], sys.argv[3], sys.argv[4], t))
