#!/usr/bin/python3
"""Workers of the soak (tests/integration/soak.sh); stdlib only.

  soak.py guest SECONDS RATE OUT      a guest's mix of requests to 169.254.169.254
                                      (run inside the guest netns), RATE per second
  soak.py slow SECONDS N OUT          N clients that trickle a request's headers one
                                      byte a second, reconnecting when closed
  soak.py webhook PORT CA REVIEW SECONDS OUT
                                      admission reviews over TLS, new and reused
                                      connections; records each certificate serial
  soak.py sample PID SECONDS OUT      VmRSS (kB) and open descriptors of PID, once
                                      a second
  soak.py judge DIR VARIANT SC_FD0 SC_FD1 WH_FD0 WH_FD1 HEADER_MS
                                      the verdicts, one line each (soak.sh prints TAP)

Each worker writes one JSON object to OUT when it ends: what it sent, every
answer by path and status, answers it did not expect, connection errors with
their times, and the rotated values it saw (token, user-data marker,
certificate serial) with the time each was first seen.  soak.sh judges them.
"""
import http.client
import json
import os
import socket
import ssl
import sys
import time
from collections import Counter

IMDS = "169.254.169.254"
MD = {"Metadata": "true"}
# path, headers, the answer a correct sidecar gives
MIX = [
    ("/v1/meta-data", {}, 200),
    ("/v1/user-data", {}, 200),
    ("/v1/identity", MD, 200),
    ("/v1/token", MD, 200),
    ("/v1/token", {}, 400),  # no Metadata header: refused, on purpose
    ("/openstack/latest/meta_data.json", {}, 200),
    ("/openstack/latest/user_data", {}, 200),
    ("/v1/nope", {}, 404),
]


def dump(out, obj):
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.rename(tmp, out)


def guest(seconds, rate, out):
    end = time.time() + seconds
    stats, unexpected, errors = Counter(), [], []
    tokens, markers = {}, {}
    conn, n = None, 0
    gap = 1.0 / rate
    while time.time() < end:
        path, hdr, want = MIX[n % len(MIX)]
        n += 1
        t = time.time()
        try:
            if conn is None:
                conn = http.client.HTTPConnection(IMDS, 80, timeout=2)
            conn.request("GET", path, headers=hdr)
            r = conn.getresponse()
            body = r.read()
            # a mix of kept-alive and new connections
            if n % 7 == 0 or (r.getheader("Connection") or "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException) as e:
            errors.append([round(t, 3), path, type(e).__name__ + ": " + str(e)[:80]])
            if conn is not None:
                conn.close()
            conn = None
            time.sleep(0.05)
            continue
        stats["%s%s %d" % (path, " +Metadata" if hdr else "", r.status)] += 1
        if r.status != want:
            unexpected.append([round(t, 3), path, r.status, body[:120].decode(errors="replace")])
        elif path == "/v1/token" and want == 200:
            tokens.setdefault(json.loads(body)["token"], round(t, 3))
        elif path == "/v1/user-data":
            markers.setdefault(body.decode(errors="replace").splitlines()[-1], round(t, 3))
        time.sleep(max(0.0, gap - (time.time() - t)))
    dump(out, {"requests": n, "answers": stats, "unexpected": unexpected,
               "errors": errors, "tokens": tokens, "markers": markers})


def slow(seconds, nconn, out):
    """Slowloris, a byte a second: the server must close each at its header timeout."""
    req = b"GET /v1/meta-data HTTP/1.1\r\nHost: 169.254.169.254\r\nX-Slow: " + b"a" * 4096
    end = time.time() + seconds
    socks = {}
    held, closed, answered, failed = [], 0, Counter(), 0

    def opened():
        try:
            s = socket.create_connection((IMDS, 80), timeout=2)
            s.setblocking(False)
            socks[s] = [time.time(), 0, 0.0]  # opened, bytes sent, last send
        except OSError:
            return 0
        return 1

    while time.time() < end:
        while len(socks) < nconn and time.time() < end:
            if not opened():
                failed += 1
                time.sleep(0.2)
                break
        now = time.time()
        for s in list(socks):
            o = socks[s]
            try:
                data = s.recv(4096)
                if data:  # an answer (408) before the close
                    answered[data.split(b" ", 2)[1].decode(errors="replace")] += 1
                    continue
                gone = True
            except BlockingIOError:
                gone = False
            except OSError:
                gone = True
            if not gone and o[1] < len(req) and now - o[2] >= 1.0:
                o[2] = now
                try:
                    o[1] += s.send(req[o[1]:o[1] + 1])
                except BlockingIOError:
                    pass
                except OSError:
                    gone = True
            if gone:
                held.append(time.time() - o[0])
                closed += 1
                s.close()
                del socks[s]
        time.sleep(0.1)
    for s in socks:
        s.close()
    dump(out, {"closed_by_server": closed, "held_max_s": round(max(held), 2) if held else None,
               "held_min_s": round(min(held), 2) if held else None, "answers": answered,
               "connect_failures": failed, "open_at_end": len(socks)})


def webhook(port, ca, review_file, seconds, out):
    review = open(review_file, "rb").read()
    uid = json.loads(review)["request"]["uid"]
    c = ssl.create_default_context(cafile=ca)
    c.check_hostname = False  # the test certificates name the Service
    end = time.time() + seconds
    stats, unexpected, errors, serials = Counter(), [], [], {}
    conn, n = None, 0
    while time.time() < end:
        n += 1
        t = time.time()
        try:
            if conn is None:
                conn = http.client.HTTPSConnection("127.0.0.1", port, context=c, timeout=5)
                conn.connect()
                serials.setdefault(conn.sock.getpeercert().get("serialNumber"), round(t, 3))
            conn.request("POST", "/mutate", body=review, headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            body = r.read()
            if n % 5 == 0:  # new handshakes, so rotated certificates are seen
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException) as e:
            errors.append([round(t, 3), type(e).__name__ + ": " + str(e)[:80]])
            if conn is not None:
                conn.close()
            conn = None
            time.sleep(0.05)
            continue
        stats[r.status] += 1
        ok = False
        if r.status == 200:
            try:
                resp = json.loads(body)["response"]
                ok = resp["uid"] == uid and resp["allowed"] is True and "patch" in resp
            except (ValueError, KeyError, TypeError):
                pass
        if not ok:
            unexpected.append([round(t, 3), r.status, body[:160].decode(errors="replace")])
        time.sleep(0.01)
    dump(out, {"reviews": n, "answers": stats, "unexpected": unexpected, "errors": errors,
               "serials": serials})


def sample(pid, seconds, out):
    rows = []
    end = time.time() + seconds
    while time.time() < end:
        try:
            with open("/proc/%d/status" % pid) as f:
                rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
            fds = len(os.listdir("/proc/%d/fd" % pid))
        except (OSError, StopIteration):
            break
        rows.append([round(time.time(), 1), rss, fds])
        time.sleep(1.0)
    dump(out, {"samples": rows})


def judge(d, variant, sc_fd0, sc_fd1, wh_fd0, wh_fd1, header_ms, ag_fd0=None, ag_fd1=None):
    """Prints one line per verdict: PASS|FAIL|INFO <tab> name <tab> detail."""
    def load(name):
        try:
            with open(os.path.join(d, name)) as f:
                return json.load(f)
        except (OSError, ValueError) as e:
            say("FAIL", "%s written by its worker" % name, repr(e))
            return None

    def lines(name):
        try:
            with open(os.path.join(d, name)) as f:
                return [l.split() for l in f if l.strip()]
        except OSError:
            return []

    def say(verdict, name, detail=""):
        print("%s\t%s\t%s" % (verdict, name, detail.replace("\t", " ").replace("\n", " | ")))

    def fmt(c):
        return ", ".join("%s: %d" % kv for kv in sorted(c.items()))

    flaps = [(float(a), float(b)) for a, b in lines("flaps.log")]
    g = load("guest.json")
    if g:
        if g["unexpected"]:
            say("FAIL", "guest: every answer as expected", json.dumps(g["unexpected"][:10]))
        else:
            say("PASS", "guest: %d requests, every answer as expected (%s)" % (g["requests"], fmt(g["answers"])))
        stray = [e for e in g["errors"] if not any(a - 0.5 <= e[0] <= b + 1.0 for a, b in flaps)]
        if stray:
            say("FAIL", "guest: connection errors only while the plumbing was restored", json.dumps(stray[:10]))
        else:
            say("PASS", "guest: connection errors only while the plumbing was restored (%d errors, %d removals)"
                % (len(g["errors"]), len(flaps)))
        for kind, seen, key in (("token", g["tokens"], lambda r: r[2]),
                                ("user-data", g["markers"], lambda r: "# " + r[2])):
            rot = [r for r in lines("rotations.log") if r[1] == kind]
            missing = [key(r) for r in rot if key(r) not in seen]
            lag = [max(0.0, seen[key(r)] - float(r[0])) for r in rot if key(r) in seen]
            if rot and not missing:
                say("PASS", "every rotated %s served (%d swaps, first seen at most %d ms after its swap)"
                    % (kind, len(rot), round(max(lag) * 1000)))
            else:
                say("FAIL", "every rotated %s served" % kind, "%d swaps, never seen: %s" % (len(rot), missing[:5]))
    s = load("slow.json")
    if s:
        limit = header_ms / 1000.0 + 2.0
        if s["closed_by_server"] and s["held_max_s"] <= limit and s["open_at_end"] <= 16:
            say("PASS", "slow clients closed at the header timeout (%d closed after %.1f..%.1f s; answers %s)"
                % (s["closed_by_server"], s["held_min_s"], s["held_max_s"], fmt(s["answers"]) or "none"))
        else:
            say("FAIL", "slow clients closed within %.1f s" % limit, json.dumps(s))
    for f in lines("floods.log"):
        say("INFO", "ARP flood at +%ss: sent %s, replies %s in %s s" % tuple((f + ["?"] * 4)[:4]))
    w = load("webhook.json")
    if w:
        if w["unexpected"] or w["errors"]:
            say("FAIL", "webhook: every review answered 200, allowed, with a patch",
                json.dumps(w["unexpected"][:5] + w["errors"][:5]))
        else:
            say("PASS", "webhook: %d reviews over TLS, every one 200, allowed, with a patch" % w["reviews"])
        rot = [r[1] for r in lines("certs.log")]
        got = {("%X" % int(k, 16)) for k in w["serials"]}
        missing = [r for r in rot if "%X" % int(r, 16) not in got]
        if rot and not missing:
            say("PASS", "webhook: every rotated certificate served (%d rotations)" % len(rot))
        else:
            say("FAIL", "webhook: every rotated certificate served", "rotated %s, seen %s" % (rot, sorted(got)))
    procs = [("sidecar", "sc-samples.json", sc_fd0, sc_fd1, 64),
             ("webhook", "wh-samples.json", wh_fd0, wh_fd1, 256)]
    if ag_fd0 is not None:  # agent mode: the network half is imds-node's
        procs.append(("imds-node", "ag-samples.json", ag_fd0, ag_fd1, 64))
    for who, fname, fd0, fd1, slack in procs:
        rows = (load(fname) or {}).get("samples") or []
        if len(rows) < 4:
            say("FAIL", "%s sampled over the soak" % who, "%d samples" % len(rows))
            continue
        step = max(1, len(rows) // 10)
        say("INFO", "%s over time (s, VmRSS kB, fds): %s" % (who, "  ".join(
            "%+.0f %d %d" % (r[0] - rows[0][0], r[1], r[2]) for r in rows[::step] + [rows[-1]])))
        if fd1 <= fd0:
            say("PASS", "%s: no descriptor growth (%d before, %d after, at most %d during)"
                % (who, fd0, fd1, max(r[2] for r in rows)))
        else:
            say("FAIL", "%s: no descriptor growth" % who, "%d before, %d after" % (fd0, fd1))
        half = len(rows) // 2
        a, b = max(r[1] for r in rows[:half]), max(r[1] for r in rows[half:])
        if variant == "asan":
            say("INFO", "%s VmRSS not judged in the ASan build (its quarantine holds freed memory): "
                "%d kB first half, %d kB second half; leaks are LeakSanitizer's at exit" % (who, a, b))
        elif b - a <= slack:
            say("PASS", "%s: no memory growth (VmRSS peak %d kB first half, %d kB second half; limit +%d kB)"
                % (who, a, b, slack))
        else:
            say("FAIL", "%s: no memory growth" % who, "VmRSS peak %d kB first half, %d kB second half" % (a, b))


def main():
    cmd, a = sys.argv[1], sys.argv[2:]
    if cmd == "guest":
        guest(float(a[0]), float(a[1]), a[2])
    elif cmd == "slow":
        slow(float(a[0]), int(a[1]), a[2])
    elif cmd == "webhook":
        webhook(int(a[0]), a[1], a[2], float(a[3]), a[4])
    elif cmd == "sample":
        sample(int(a[0]), float(a[1]), a[2])
    elif cmd == "judge":
        judge(a[0], a[1], *(int(x) for x in a[2:9]))
    else:
        sys.exit("soak.py: unknown worker " + cmd)


if __name__ == "__main__":
    main()
