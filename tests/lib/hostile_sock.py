"""A pod's socket that is no sidecar, for imds-node's hostile-pod tests.

hostile_sock.py MODE PATH: binds a SOCK_SEQPACKET socket at PATH (relative
to the working folder), prints "ready", and for each connection:
  silent  accepts and never sends (nor closes)
  flood   sends message after message as fast as the socket takes them
  big     sends one 64 KiB message
  garbage sends one message that is no protocol message
until killed."""
import os
import socket
import sys
import time

mode, path = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(path)
s.listen(8)
print("ready", flush=True)
held = []
while True:
    c, _ = s.accept()
    held.append(c)
    if mode == "flood":
        c.setblocking(False)
        n = 0
        t0 = time.monotonic()
        while time.monotonic() - t0 < 5:
            try:
                c.send(b"imds-node 1 guard %d\n" % (n + 1))
                n += 1
            except BlockingIOError:
                time.sleep(0.001)
            except OSError:
                break
    elif mode == "big":
        try:
            c.send(b"x" * 65536)
        except OSError:
            pass
    elif mode == "garbage":
        try:
            c.send(b"GET / HTTP/1.1\r\n\r\n")
        except OSError:
            pass

