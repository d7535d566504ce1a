#!/usr/bin/python3
"""Multi-connection scenarios for the HTTP integration tests (stdlib only).

Each prints shell assignments (KEY='value') on stdout for the calling suite to
assert on; the suite, not this script, decides what passes.

  hold PORT GROUP... [--request PATH] [--run-out FILE -- CMD...]
      GROUP is NAME:KIND:COUNT, opened in the order given, KIND one of
        silent  connected, nothing sent
        idle    one keep-alive GET /healthz answered, then nothing (keep-alive idle)
        half    half a request head sent ("GET /healthz HTTP/1.1\\r\\nHost: x\\r\\n")
      Then reports, per group, which of its connections the server has closed
      (NAME_closed='1 2 ...', 1-based; NAME_open=N).  --request PATH makes one
      new request on a new connection (req_status, req_ms, req_ok) and --
      CMD... runs a command (run_status, run_s; its stdout to --run-out);
      after them the groups are reported again as NAME_closed_after /
      NAME_open_after.
  stall PORT HALF BIGPATH N
      HALF connections each send half a request head and stall, one sends a
      head a byte every 50 ms, one requests BIGPATH and never reads; then N
      sequential requests for /v1/meta-data on fresh connections:
      others_max_ms, others_ok (all 200), stalled_open (the stalled ones
      still connected: nobody was cut off to serve the others).
  slowread PORT PID PATH OUT
      GET PATH, read 1 MiB, SIGTERM PID, then read the rest slowly (24 MiB/s,
      small receive buffer): body_sha256, body_len, content_length,
      status_line, refused (a new connection after the signal was refused),
      read_after_signal_s, closed.  The body goes to OUT.
  stopread PORT PATH SECONDS
      GET PATH through a 4 KiB receive buffer, read nothing for SECONDS, then
      read all there is: closed (the server closed it), body_len (bytes after
      the head).
  drain PORT PID OUT
      conn A keep-alive idle, conn B half a head; SIGTERM PID; A must see EOF,
      a new connection must be refused, then B sends the rest of its head:
      idle_closed, idle_closed_s, refused, and B's bytes (Date normalized) in
      OUT, b_closed.
"""
import hashlib
import os
import select
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_raw import normalize  # noqa: E402

HOST = os.environ.get("SRV_HOST", "127.0.0.1")
HALF = b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
FULL = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"


def report(**kv):
    for k, v in kv.items():
        if isinstance(v, float):
            v = "%.4f" % v
        print("%s='%s'" % (k, str(v).replace("'", "'\\''")))
    sys.stdout.flush()


def connect(port, rcvbuf=None):
    s = socket.socket(socket.AF_INET6 if ":" in HOST else socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(5)
    s.connect((HOST, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_response(s, deadline):
    """One Content-Length framed response: (head, body).  Raises on EOF/timeout."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += recv_some(s, deadline)
    end = buf.index(b"\r\n\r\n") + 4
    head = buf[:end]
    n = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            n = int(line.split(b":", 1)[1])
    while len(buf) < end + n:
        buf += recv_some(s, deadline)
    return head, buf[end:end + n]


def recv_some(s, deadline):
    left = deadline - time.monotonic()
    if left <= 0 or not select.select([s], [], [], left)[0]:
        raise TimeoutError("no response in time")
    d = s.recv(1 << 16)
    if not d:
        raise ConnectionError("closed by the server")
    return d


def is_closed(s):
    """True when the server has closed (EOF or reset pending); never blocks."""
    try:
        if not select.select([s], [], [], 0)[0]:
            return False
        return s.recv(1 << 16, socket.MSG_PEEK) == b""
    except OSError:
        return True


def get(port, path, timeout=5):
    """A fresh connection, one GET: (status, ms)."""
    t = time.monotonic()
    s = connect(port)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path.encode())
    head, _ = read_response(s, t + timeout)
    ms = (time.monotonic() - t) * 1000
    s.close()
    return int(head.split(b" ")[1]), ms


def refused_within(port, secs):
    """1 once a new connection is refused (the signal is handled
    asynchronously, so a connect just after it may still land), else 0."""
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        try:
            socket.create_connection((HOST, port), timeout=1).close()
        except ConnectionRefusedError:
            return 1
        except OSError:
            pass
        time.sleep(0.02)
    return 0


def raise_nofile(n):
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))


# ---- hold -------------------------------------------------------------------

def cmd_hold(argv):
    port = int(argv[0])
    groups, request, run_out, cmd = [], None, None, None
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--request":
            request = argv[i + 1]
            i += 2
        elif a == "--run-out":
            run_out = argv[i + 1]
            i += 2
        elif a == "--":
            cmd = argv[i + 1:]
            break
        else:
            name, kind, count = a.split(":")
            groups.append((name, kind, int(count)))
            i += 1
    raise_nofile(sum(g[2] for g in groups) + 256)
    held = []
    for name, kind, count in groups:
        conns = []
        for _ in range(count):
            s = connect(port)
            if kind == "idle":
                s.sendall(FULL)
                read_response(s, time.monotonic() + 5)
            elif kind == "half":
                s.sendall(HALF)
            elif kind != "silent":
                sys.exit("unknown kind %r" % kind)
            conns.append(s)
        held.append((name, conns))
    time.sleep(0.1)  # let the server act on the last accepts

    def state(suffix):
        for name, conns in held:
            closed = [str(k) for k, s in enumerate(conns, 1) if is_closed(s)]
            report(**{name + "_closed" + suffix: " ".join(closed),
                      name + "_open" + suffix: len(conns) - len(closed)})

    state("")
    if request:
        try:
            status, ms = get(port, request)
            report(req_status=status, req_ms=ms, req_ok=1)
        except OSError as e:
            report(req_status=0, req_ms=-1, req_ok=0, req_err=str(e))
    if cmd:
        t = time.monotonic()
        with open(run_out or os.devnull, "wb") as out:
            st = subprocess.call(cmd, stdout=out)
        report(run_status=st, run_s=time.monotonic() - t)
    if request or cmd:
        time.sleep(0.05)
        state("_after")


# ---- stall ------------------------------------------------------------------

def cmd_stall(argv):
    port, half, bigpath, n = int(argv[0]), int(argv[1]), argv[2], int(argv[3])
    raise_nofile(half + 256)
    stalled = []
    for _ in range(half):
        s = connect(port)
        s.sendall(b"GET /v1/meta-data HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
        stalled.append(s)
    dripper = connect(port)
    drip = b"GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200
    big = connect(port, rcvbuf=4096)
    big.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % bigpath.encode())  # never read
    time.sleep(0.05)
    worst, good, k = 0.0, 0, 0
    for _ in range(n):
        dripper.sendall(drip[k:k + 1])
        k += 1
        try:
            status, ms = get(port, "/v1/meta-data", timeout=3)
        except OSError:
            status, ms = 0, 3000.0
        good += status == 200
        worst = max(worst, ms)
        time.sleep(0.05)
    still = sum(not is_closed(s) for s in stalled + [dripper, big])
    report(others_max_ms=worst, others_ok=int(good == n), others_good=good,
           stalled_open=still, stalled_total=len(stalled) + 2)


# ---- slowread (SIGTERM with a large response in flight) ----------------------

def cmd_slowread(argv):
    port, pid, path, outpath = int(argv[0]), int(argv[1]), argv[2], argv[3]
    s = connect(port, rcvbuf=65536)
    s.settimeout(10)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    end = buf.index(b"\r\n\r\n") + 4
    head, body = buf[:end], bytearray(buf[end:])
    clen = -1
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            clen = int(line.split(b":", 1)[1])
    while len(body) < (1 << 20):
        d = s.recv(65536)
        if not d:
            break
        body += d
    os.kill(pid, signal.SIGTERM)
    t_sig = time.monotonic()
    refused = refused_within(port, 1.0)
    # The rest, paced at 24 MiB/s through a small receive buffer, so the
    # server keeps writing for about 0.6 s after the signal.
    closed, base = 0, len(body)
    while True:
        try:
            d = s.recv(65536)
        except OSError:
            break
        if not d:
            closed = 1
            break
        body += d
        ahead = t_sig + (len(body) - base) / (24 << 20) - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    after = time.monotonic() - t_sig
    with open(outpath, "wb") as f:
        f.write(body)
    report(status_line=head.split(b"\r\n")[0].decode(), content_length=clen,
           body_len=len(body), body_sha256=hashlib.sha256(body).hexdigest(),
           refused=refused, read_after_signal_s=after, closed=closed)


# ---- stopread (a client that stops reading) ----------------------------------

def cmd_stopread(argv):
    port, path, secs = int(argv[0]), argv[1], float(argv[2])
    s = connect(port, rcvbuf=4096)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode())
    time.sleep(secs)
    data, closed = b"", 0
    s.settimeout(3)
    try:
        while True:
            d = s.recv(1 << 20)
            if not d:
                closed = 1
                break
            data += d
    except OSError:
        closed = 1
    end = data.find(b"\r\n\r\n")
    report(closed=closed, body_len=len(data) - end - 4 if end >= 0 else 0)


# ---- drain (SIGTERM with an idle and a half-received request) ------------------

def cmd_drain(argv):
    port, pid, outpath = int(argv[0]), int(argv[1]), argv[2]
    a = connect(port)
    a.sendall(FULL)
    read_response(a, time.monotonic() + 5)
    b = connect(port)
    b.sendall(b"GET /v1/meta-data HTTP/1.1\r\nHost: x\r\n")
    time.sleep(0.05)
    os.kill(pid, signal.SIGTERM)
    t = time.monotonic()
    idle_closed, idle_s = 0, -1.0
    if select.select([a], [], [], 2)[0]:
        try:
            idle_closed = int(a.recv(100) == b"")
        except OSError:
            idle_closed = 1
        idle_s = time.monotonic() - t
    refused = refused_within(port, 1.0)
    time.sleep(0.05)
    b.sendall(b"\r\n")
    data, b_closed = b"", 0
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        if not select.select([b], [], [], deadline - time.monotonic())[0]:
            break
        d = b.recv(65536)
        if not d:
            b_closed = 1
            break
        data += d
    with open(outpath, "wb") as f:
        f.write(normalize(data))
    report(idle_closed=idle_closed, idle_closed_s=idle_s, refused=refused, b_closed=b_closed)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cmd = {"hold": cmd_hold, "stall": cmd_stall, "slowread": cmd_slowread,
           "stopread": cmd_stopread,
           "drain": cmd_drain}.get(sys.argv[1])
    if not cmd:
        sys.exit("unknown scenario %r" % sys.argv[1])
    cmd(sys.argv[2:])


if __name__ == "__main__":
    main()
