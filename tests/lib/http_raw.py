#!/usr/bin/python3
"""A raw HTTP/1.x client for the integration tests: exact bytes in, exact bytes out.

  http_raw.py [-o FILE] [--host H] PORT STEP...

Opens one TCP connection and runs the steps in order:
  send:TEXT         send TEXT; Python escapes apply (\\r \\n \\t \\x00 \\\\)
  sendfile:PATH     send the bytes of PATH
  drip:MS:TEXT      send TEXT one byte at a time, MS milliseconds apart; stops
                    early once the server has answered or closed
  read:N            read N complete responses (Content-Length framed)
  head:N            read N responses to HEAD requests (head only, no body)
  eof:SECONDS       read until the server closes; fail if it has not within SECONDS
  quiet:SECONDS     read for SECONDS; the connection must stay open and silent
  sleep:SECONDS     wait
Everything received goes to FILE (default stdout), with the value of each
well-formed "Date:" header (IMF-fixdate, RFC 9110 5.6.7) replaced by "X" so that
responses can be compared byte for byte; a malformed Date stays as it was.
On stdout (stderr without -o) a report of shell assignments:
  R_ok=1|0          every step did what it said
  R_err='...'       what went wrong first
  R_closed=1|0      the server closed the connection
  R_first=S         seconds from connect to the first byte received (-1: none)
  R_t<i>=S          seconds from connect to the end of step i (1-based)
  R_n=N             responses read by read:/head: steps
  R_codes='200x5 429x2'  their status codes in order, run-length encoded
Only the standard library; run with /usr/bin/python3.
"""
import codecs
import re
import select
import os
import socket
import sys
import time

DATE_RE = re.compile(rb"(\r\nDate: )(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d "
                     rb"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} "
                     rb"\d\d:\d\d:\d\d GMT(\r\n)")


def normalize(data):
    return DATE_RE.sub(rb"\1X\2", data)


def unescape(text):
    return codecs.escape_decode(text.encode("utf-8"))[0]


class StepError(Exception):
    pass


class Conn:
    def __init__(self, host, port):
        self.t0 = time.monotonic()
        self.sock = socket.create_connection((host, port), timeout=5)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""      # received, not yet consumed by read:/head:
        self.out = b""      # everything received
        self.closed = False
        self.first = -1.0
        self.nresp = 0
        self.codes = []

    def now(self):
        return time.monotonic() - self.t0

    def fill(self, deadline):
        """Receives once; False on timeout. Sets closed on EOF/reset."""
        left = deadline - time.monotonic()
        if left <= 0 or self.closed:
            return False
        r, _, _ = select.select([self.sock], [], [], left)
        if not r:
            return False
        try:
            data = self.sock.recv(1 << 20)
        except ConnectionResetError:
            data = b""
        if not data:
            self.closed = True
            return True
        if self.first < 0:
            self.first = self.now()
        self.buf += data
        self.out += data
        return True

    def read_response(self, head_only, deadline):
        while b"\r\n\r\n" not in self.buf:
            if self.closed:
                raise StepError("connection closed before a complete response head")
            if not self.fill(deadline):
                raise StepError("timed out waiting for a response head")
        end = self.buf.index(b"\r\n\r\n") + 4
        head = self.buf[:end]
        m = re.search(rb"\r\nContent-Length: *(\d+)\r\n", head, re.I)
        if not m:
            raise StepError("response without Content-Length: %r" % head[:200])
        need = end + (0 if head_only else int(m.group(1)))
        while len(self.buf) < need:
            if self.closed:
                raise StepError("connection closed inside a response body")
            if not self.fill(deadline):
                raise StepError("timed out inside a response body")
        self.codes.append(int(head.split(b" ", 2)[1]))
        self.buf = self.buf[need:]
        self.nresp += 1

    def step(self, kind, arg):
        if kind == "send":
            self.sock.sendall(unescape(arg))
        elif kind == "sendfile":
            with open(arg, "rb") as f:
                self.sock.sendall(f.read())
        elif kind == "drip":
            ms, text = arg.split(":", 1)
            for b in unescape(text):
                # Stop once the server has answered or closed: the next
                # step reads what it said.
                if select.select([self.sock], [], [], 0)[0]:
                    break
                self.sock.sendall(bytes([b]))
                time.sleep(int(ms) / 1000)
        elif kind in ("read", "head"):
            deadline = time.monotonic() + 5
            for _ in range(int(arg)):
                self.read_response(kind == "head", deadline)
        elif kind == "eof":
            deadline = time.monotonic() + float(arg)
            while not self.closed:
                if not self.fill(deadline):
                    raise StepError("still open %s s later" % arg)
        elif kind == "quiet":
            deadline = time.monotonic() + float(arg)
            got = len(self.out)
            while time.monotonic() < deadline and not self.closed:
                self.fill(deadline)
            if self.closed:
                raise StepError("closed by the server within %s s" % arg)
            if len(self.out) != got:
                raise StepError("unexpected bytes: %r" % self.out[got:got + 200])
        elif kind == "sleep":
            time.sleep(float(arg))
        else:
            raise StepError("unknown step %r" % kind)


def main():
    args = sys.argv[1:]
    outpath, host = None, os.environ.get("SRV_HOST", "127.0.0.1")
    while args and args[0].startswith("-"):
        if args[0] == "-o":
            outpath = args[1]
        elif args[0] == "--host":
            host = args[1]
        else:
            sys.exit("usage: http_raw.py [-o FILE] [--host H] PORT STEP...")
        args = args[2:]
    port, steps = int(args[0]), args[1:]
    report = {"R_ok": 1, "R_err": ""}
    c = Conn(host, port)
    for i, s in enumerate(steps, 1):
        kind, _, arg = s.partition(":")
        try:
            c.step(kind, arg)
        except (StepError, OSError) as e:
            report["R_ok"] = 0
            report["R_err"] = "step %d (%s): %s" % (i, s[:60], e)
            break
        report["R_t%d" % i] = "%.4f" % c.now()
    c.sock.close()
    data = normalize(c.out)
    if outpath:
        with open(outpath, "wb") as f:
            f.write(data)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    runs = []  # status codes run-length encoded: "200x5 429x2"
    for code in c.codes:
        if runs and runs[-1][0] == code:
            runs[-1][1] += 1
        else:
            runs.append([code, 1])
    report.update(R_closed=int(c.closed), R_first="%.4f" % c.first, R_n=c.nresp,
                  R_codes=" ".join("%dx%d" % (a, b) for a, b in runs))
    rep = sys.stdout if outpath else sys.stderr
    for k, v in report.items():
        print("%s='%s'" % (k, str(v).replace("'", "'\\''")), file=rep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
