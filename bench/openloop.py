#!/usr/bin/python3
"""Open-loop HTTPS POST load: CONNS keep-alive connections share a fixed
total RATE of requests per second (each connection sends on its own
schedule, whether or not the server kept up), and each latency is taken
from the request's scheduled time, so a stalled server is not hidden
(no coordinated omission).  Prints: sent, p50_ms, p99_ms, max_ms.

  openloop.py PORT BODY_FILE CONNS RATE SECONDS
"""
import asyncio
import ssl
import sys
import time


async def worker(port, body, interval, offset, deadline, lat):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    r, w = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
    head = ("POST /mutate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\n\r\n" % len(body)).encode()
    t = time.monotonic() + offset
    while t < deadline:
        delay = t - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        w.write(head + body)
        await w.drain()
        status = await r.readline()
        length = 0
        while True:
            line = await r.readline()
            if line in (b"\r\n", b""):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        await r.readexactly(length)
        if not status.startswith(b"HTTP/1.1 200"):
            raise SystemExit("bad answer: %r" % status)
        lat.append(time.monotonic() - t)
        t += interval
    w.close()


async def main():
    port, body_file, conns, rate, secs = sys.argv[1:6]
    body = open(body_file, "rb").read()
    conns, rate, secs = int(conns), float(rate), float(secs)
    interval = conns / rate
    lat = []
    deadline = time.monotonic() + 0.5 + secs
    await asyncio.gather(*(worker(int(port), body, interval, 0.5 + i * interval / conns,
                                  deadline, lat) for i in range(conns)))
    lat.sort()
    n = len(lat)
    print("%d %.3f %.3f %.3f" % (n, lat[n // 2] * 1000, lat[min(n - 1, n * 99 // 100)] * 1000,
                                 lat[-1] * 1000))


asyncio.run(main())
