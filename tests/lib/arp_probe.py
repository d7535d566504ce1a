#!/usr/bin/python3
"""Hand-made ARP requests from inside a test netns, and the replies they get.

  arp_probe.py IFACE TARGET_IP [--sender-ip IP] [--sender-mac MAC] [--count N]
               [--timeout S] [--unicast MAC] [--flood N]

Sends COUNT ARP requests "who-has TARGET_IP tell SENDER_IP" out of IFACE
(sender IP 0.0.0.0 makes an RFC 5227 probe; SENDER_IP == TARGET_IP an
announcement), then prints one JSON line: how many replies for TARGET_IP
came back, from which MAC, with which target IP.  --unicast sends to that
MAC instead of broadcast (a neighbour-cache re-validation).  --flood N
sends N requests back to back and counts replies until --timeout of quiet
(for the benchmark).  Exit 0 when at least one reply came, 1 when none.
"""
import argparse
import json
import socket
import struct
import sys
import time

ETH_P_ARP = 0x0806


def mac_bytes(s):
    return bytes(int(x, 16) for x in s.split(":"))


def mac_str(b):
    return ":".join("%02x" % x for x in b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("iface")
    ap.add_argument("target")
    ap.add_argument("--sender-ip", default=None)
    ap.add_argument("--sender-mac", default=None)
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=1.0)
    ap.add_argument("--unicast", default=None)
    ap.add_argument("--flood", type=int, default=0)
    a = ap.parse_args()

    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ARP))
    s.bind((a.iface, ETH_P_ARP))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    own = s.getsockname()[4][:6]
    smac = mac_bytes(a.sender_mac) if a.sender_mac else own
    if a.sender_ip is None:
        # The interface's own IPv4 address.
        import subprocess
        out = subprocess.run(["ip", "-4", "-o", "addr", "show", "dev", a.iface],
                             capture_output=True, text=True).stdout.split()
        a.sender_ip = out[3].split("/")[0] if len(out) > 3 else "0.0.0.0"
    sip = socket.inet_aton(a.sender_ip)
    tip = socket.inet_aton(a.target)
    dst = mac_bytes(a.unicast) if a.unicast else b"\xff" * 6
    frame = (dst + smac + struct.pack("!H", ETH_P_ARP) +
             struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + smac + sip + b"\x00" * 6 + tip)
    frame += b"\x00" * (60 - len(frame))

    n = a.flood or a.count
    replies = []
    t0 = time.monotonic()
    s.setblocking(False)
    sent = 0

    def drain():
        while True:
            try:
                data = s.recv(128)
            except BlockingIOError:
                return
            if len(data) < 42 or data[12:14] != b"\x08\x06" or data[20:22] != b"\x00\x02":
                continue
            if data[28:32] != tip:
                continue
            replies.append({"from_mac": mac_str(data[22:28]), "target_mac": mac_str(data[32:38]),
                            "target_ip": socket.inet_ntoa(data[38:42]),
                            "eth_dst": mac_str(data[0:6])})

    for i in range(n):
        while True:
            try:
                s.send(frame)
                break
            except BlockingIOError:
                drain()
        sent += 1
        if a.flood:
            if i % 64 == 0:
                drain()
        else:
            deadline = time.monotonic() + (a.timeout if i == n - 1 else min(a.timeout, 0.2))
            while time.monotonic() < deadline:
                drain()
                if len(replies) > i:
                    break
                time.sleep(0.002)
    t_sent = time.monotonic()
    if a.flood:
        last = len(replies)
        quiet = time.monotonic()
        while time.monotonic() - quiet < a.timeout:
            drain()
            if len(replies) != last:
                last = len(replies)
                quiet = time.monotonic()
            time.sleep(0.001)
    t1 = time.monotonic()
    out = {"sent": sent, "replies": len(replies), "send_s": round(t_sent - t0, 4),
           "total_s": round(t1 - t0, 4)}
    if replies:
        out["first"] = replies[0]
    print(json.dumps(out))
    return 0 if replies else 1


if __name__ == "__main__":
    sys.exit(main())
