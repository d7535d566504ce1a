"""Clients that misbehave on purpose, for tests/integration/http_faults.sh.

  hold PORT N READYFILE     open N connections to 127.0.0.1:PORT and keep them,
                            silent, until killed; READYFILE is written once
                            all N connect() calls returned (the server may
                            still hold some in its backlog)
  writefirst PORT METHOD PATH BYTES [--tls CA]
                            send a request with a BYTES-long body in full
                            before reading (Python's http.client does
                            exactly this), then read the answer; prints
                            "STATUS error-code" or the exception that ended
                            the exchange
"""
import http.client
import json
import signal
import socket
import ssl
import sys
import time


def hold(port, n, ready):
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        socks.append(s)
    with open(ready, "w") as f:
        f.write(f"{len(socks)}\n")
    signal.sigwait([signal.SIGTERM, signal.SIGINT])
    for s in socks:
        s.close()


def writefirst(port, method, path, size, ca=None):
    if ca:
        ctx = ssl.create_default_context(cafile=ca)
        ctx.check_hostname = False
        c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
    else:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    body = b"x" * size
    try:
        c.request(method, path, body=body,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        code = ""
        try:
            code = json.loads(data).get("error", "")
        except ValueError:
            pass
        print(f"{r.status} {code}".strip())
    except (OSError, http.client.HTTPException) as e:
        print(type(e).__name__)


def main():
    cmd = sys.argv[1]
    if cmd == "hold":
        hold(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    elif cmd == "writefirst":
        ca = None
        if len(sys.argv) > 7 and sys.argv[6] == "--tls":
            ca = sys.argv[7]
        writefirst(int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), ca)
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
