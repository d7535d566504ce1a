#!/usr/bin/python3
"""Time until a guest is first served by 169.254.169.254, from a start
signal the caller gives.  Run inside the guest's netns.

  guest_wait.py [--cmd 'ip -n POD -batch FILE'] [--limit S] [--path /healthz]

Runs --cmd (the event being timed: the bridge appearing, veth-imds being
deleted, ...) and then tries one fresh connection + GET after another
(10 ms connect timeout each, so a dropped SYN costs 10 ms, not a TCP
retransmit) until a 200 comes back.  Prints one JSON line with
"served_ms" (from just before --cmd) and the attempt count; exit 1 when
--limit seconds pass without an answer.
"""
import argparse
import json
import socket
import subprocess
import sys
import time


def attempt(path, timeout):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(("169.254.169.254", 80))
        s.settimeout(1.0)
        s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: 169.254.169.254\r\n"
                  b"Connection: close\r\n\r\n")
        head = s.recv(64)
        return head.startswith(b"HTTP/1.1 200")
    except OSError:
        return False
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cmd", default=None)
    ap.add_argument("--limit", type=float, default=5.0)
    ap.add_argument("--path", default="/healthz")
    ap.add_argument("--connect-timeout", type=float, default=0.01)
    a = ap.parse_args()
    t0 = time.monotonic()
    cmd_status = None
    if a.cmd:
        # Its status is reported, not fatal: `ip addr flush` fighting a
        # sidecar that puts the address back gives up with status 1.
        cmd_status = subprocess.run(a.cmd, shell=True).returncode
    t_cmd = time.monotonic()
    n = 0
    while time.monotonic() - t0 < a.limit:
        n += 1
        if attempt(a.path, a.connect_timeout):
            t1 = time.monotonic()
            print(json.dumps({"served_ms": round((t1 - t0) * 1000, 1),
                              "cmd_ms": round((t_cmd - t0) * 1000, 1), "attempts": n,
                              "cmd_status": cmd_status}))
            return 0
        time.sleep(0.001)
    print(json.dumps({"served_ms": None, "attempts": n, "cmd_status": cmd_status}))
    return 1


if __name__ == "__main__":
    sys.exit(main())
