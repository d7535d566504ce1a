#!/usr/bin/python3
"""The guest's side of a live migration (tests/integration/vm_boot.sh,
migrate_checks): installed in the guest by the user-data as
/usr/local/sbin/imds-e2e-migrate and started on its root console while the
VM still runs in the source pod.  Python 3.11+ and curl, both in the images.

Before: opens a session (PUT /v1/session), posts a Windows-style password,
notes what the service answers (meta-data, user-data, vendor-data, the
OpenStack meta_data.json with ETags, identity), starts a waiting request
(curl, wait_for_change on user-data, TCP keepalive probes every 2 s) and prints
IMDS-MIG-READY: the host migrates the VM then.  During: asks for
/v1/identity every 20 ms (0.3 s timeout, a new connection each time) and
tells the source pod's answers from the target's by podName, until the
target answered 50 times.  Lifecycle events (issue 31): before READY,
two long polls, /v1/lifecycle?wait_for_change=true and GCE's
maintenance-event?wait_for_change=true (Metadata-Flavor: Google), and while
no notice came a plain GET of /v1/lifecycle each round: the host flips the
source pod's eviction file after READY, and the notice's latency is bounded
on the guest's clock by (long poll answered) - (last plain answer saying
none).  On the target, each round asks /v1/lifecycle until it says
arrived (the host writes the target's ready annotation when QMP says
completed).  After: the old session token, a new session, the
same data, the password, the waiting request's end, a new wait on the
target, the next hop's neighbour entry, and a request with that neighbour
pinned to a MAC nobody has.  Each result is one console line IMDS-MIG-*.
Times are the guest's own clock: monotonic, but for the poll's gap, which
is between the guest kernel's receive stamps of the source's last answer and
the target's first (ident())."""
import hashlib
import http.client
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

def pick_host():
    """169.254.169.254, or fd00:ec2::254 for a guest with no IPv4 route."""
    r = subprocess.run(["ip", "-4", "route", "get", "169.254.169.254"], capture_output=True, check=False)
    return "169.254.169.254" if r.returncode == 0 else "fd00:ec2::254"


HOST = pick_host()
HOSTURL = "[%s]" % HOST if ":" in HOST else HOST  # for URLs and http.client
TTY = "/dev/ttyS0"
T0 = time.monotonic()


def ms(t):
    return round((t - T0) * 1000)


def say(line):
    # A fresh open per line: the serial getty may hang up older descriptors.
    for _ in range(5):
        try:
            with open(TTY, "w", encoding="utf-8") as t:
                t.write(line + "\n")
            return
        except OSError:
            time.sleep(0.2)


def req(method, path, headers=None, body=None, timeout=3.0):
    """(status, body, etag); status 0 and the error's name when none came."""
    c = http.client.HTTPConnection(HOSTURL, 80, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read(), r.getheader("ETag") or ""
    except (OSError, http.client.HTTPException) as e:
        return 0, type(e).__name__.encode(), ""
    finally:
        c.close()


# Python names no SO_TIMESTAMPNS: asm-generic/socket.h's SO_TIMESTAMPNS_OLD
# (the name on x86_64, its cmsg a struct timespec of two 64-bit longs).
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
# The kernel stamps received packets only while some socket asks for stamps
# (net_enable_timestamp: a static key, switched on and off by deferred work
# as such sockets come and go), so with one short-lived socket per request
# some answers came unstamped (the host's kernel: 15 of 200 in a row of
# loopback requests; 0 of 200 with this socket open).  Held for the run.
STAMP_GUARD = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
STAMP_GUARD.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)


def ident(timeout):
    """GET /v1/identity on a new connection, as req() but by hand: (status,
    body, rx), rx the guest kernel's receive time of the answer's first bytes
    (SO_TIMESTAMPNS: CLOCK_REALTIME, stamped as the segment enters the guest's
    TCP stack), None when no answer came.  The poll's gap is between these
    stamps: under TCG the guest's Python needs up to a few hundred ms after
    the switch-over to read an answer that is already there (its code is
    translated afresh by the target's qemu), and that is the emulator's time,
    not the service's."""
    rx = None
    try:
        with socket.create_connection((HOST, 80), timeout=timeout) as s:
            s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            s.sendall(b"GET /v1/identity HTTP/1.1\r\nHost: %s\r\nMetadata: true\r\n"
                      b"Connection: close\r\n\r\n" % HOSTURL.encode())
            buf = b""
            while True:
                d, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(16))
                for lvl, typ, v in anc:
                    if rx is None and lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS:
                        sec, nsec = struct.unpack("qq", v[:16])
                        rx = sec + nsec / 1e9
                if not d:
                    break
                buf += d
    except OSError as e:
        return 0, type(e).__name__.encode(), None
    head, _, body = buf.partition(b"\r\n\r\n")
    try:
        return int(head.split(b" ", 2)[1]), body, rx
    except (IndexError, ValueError):
        return 0, b"BadStatusLine", None


def data():
    """What the guest sees: status, body digest and ETag per path; identity
    without podName (the pod that answers), and that pod."""
    seen = {}
    for p in ("/v1/meta-data", "/v1/user-data", "/v1/vendor-data",
              "/openstack/latest/meta_data.json", "/latest/meta-data/instance-id"):
        st, b, et = req("GET", p)
        seen[p] = "%d %s %s" % (st, hashlib.sha256(b).hexdigest()[:16], et)
    st, b, _ = req("GET", "/v1/identity", {"Metadata": "true"})
    try:
        ident = json.loads(b)
        pod = ident.pop("podName")
    except (ValueError, KeyError, AttributeError):
        return seen, "", "%d %r" % (st, b[:80])
    seen["/v1/identity"] = json.dumps(ident, sort_keys=True)
    return seen, pod, ""


def longpoll(out, path, headers):
    """A waiting request; out gets its answer's time, status, body, ETag and
    Metadata-Flavor header."""
    c = http.client.HTTPConnection(HOSTURL, 80, timeout=700)
    try:
        c.request("GET", path, headers=headers)
        r = c.getresponse()
        out.update(status=r.status, body=r.read().decode(errors="replace").strip(),
                   etag=(r.getheader("ETag") or "").strip('"'), flavor=r.getheader("Metadata-Flavor") or "-")
    except (OSError, http.client.HTTPException) as e:
        out.update(status=0, body=type(e).__name__, etag="", flavor="-")
    finally:
        c.close()
        out["t"] = time.monotonic()


def life():
    """/v1/lifecycle now: (state or the status, ETag, the JSON)."""
    st, b, et = req("GET", "/v1/lifecycle", timeout=0.3)
    try:
        j = json.loads(b) if st == 200 else {}
    except ValueError:
        j = {}
    return j.get("state", str(st)), et.strip('"'), j


def notice_line(l0, g0, l0_etag, lp_life, lp_gce, last_none, first_plain, by):
    """IMDS-MIG-NOTICE: the state at rest, what each long poll got, and each
    one's time after the last plain request answered none was sent (an upper
    bound of its latency after the flip, on the guest's clock)."""
    try:
        state = json.loads(lp_life["body"]).get("state", "?") if lp_life.get("status") == 200 else lp_life.get("status", "-")
    except (ValueError, AttributeError):
        state = "unreadable"

    def after(t):
        return "-" if t is None or last_none is None else "%d" % (ms(t) - ms(last_none))
    return ("IMDS-MIG-NOTICE initial=%s:%s life=%s gce=%s flavor=%s life_ms=%s gce_ms=%s plain_ms=%s"
            " new_etag=%d served_by=%s" % (
                l0, g0, state, lp_gce.get("body", "-"), lp_gce.get("flavor", "-"), after(lp_life.get("t")),
                after(lp_gce.get("t")), after(first_plain),
                int(bool(lp_life.get("etag")) and lp_life.get("etag") != l0_etag), by))


def session():
    st, b, _ = req("PUT", "/v1/session", {"X-Metadata-Token-TTL-Seconds": "3600"})
    return st, b.decode(errors="replace") if st == 200 else ""


def nexthop():
    """The neighbour the guest sends 169.254.169.254 to, and its device."""
    out = subprocess.run(["ip", "-o", "route", "get", HOST], capture_output=True, text=True,
                         check=False).stdout.split()
    via = out[out.index("via") + 1] if "via" in out else HOST
    dev = out[out.index("dev") + 1] if "dev" in out else "eth0"
    return via, dev


def neigh(ip, dev):
    out = subprocess.run(["ip", "neigh", "show", ip, "dev", dev], capture_output=True, text=True,
                         check=False).stdout.split()
    mac = out[out.index("lladdr") + 1] if "lladdr" in out else "none"
    return "%s=%s(%s)" % (ip, mac, out[-1] if out else "-")


def main():
    via, dev = nexthop()
    neigh_before = neigh(via, dev)
    st, tok1 = session()
    st_tok1, _, _ = req("GET", "/v1/meta-data", {"X-Metadata-Token": tok1})
    pw = "bWlncmF0aW9uLXRlc3QtcGFzc3dvcmQtZW5jcnlwdGVkLWJ5LWNsb3VkYmFzZS1pbml0"
    st_post, _, _ = req("POST", "/openstack/latest/password", body=pw.encode())
    st_pw, b_pw, _ = req("GET", "/openstack/latest/password")
    before, src, err = data()
    if not src:
        say("IMDS-MIG-ERROR identity before the migration: %s" % err)
        return 1
    say("IMDS-MIG-BEFORE pod=%s session=%d:%d password=%d:%d:%d %s" % (
        src, st, st_tok1, st_post, st_pw, len(b_pw), json.dumps(before, sort_keys=True)))
    etag = before["/v1/user-data"].split()[-1].strip('"')
    # A waiting request, as an agent watching for new user-data holds one.
    url = "http://%s/v1/user-data?wait_for_change=true&last_etag=%s&timeout_sec=900" % (HOSTURL, etag)
    # Keepalive probes every 2 s, and (curl 8.9+) 3 unanswered ones give up:
    # passt answers no segment of a flow it does not know, so behind passt it
    # is the probes' timeout, not a reset, that ends the connection.
    keep = ["--keepalive-time", "2"]
    if "--keepalive-cnt" in subprocess.run(["curl", "--help", "all"], capture_output=True, text=True,
                                           check=False).stdout:
        keep += ["--keepalive-cnt", "3"]
    t_wait = time.monotonic()
    waiter = subprocess.Popen(["curl", "-g", "-sS", "-o", "/dev/null", "-w", "%{http_code}"] + keep + ["-m", "900", url],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The lifecycle notices' long polls, from the state at rest.
    l0, l0_etag, _ = life()
    st, g0, _ = req("GET", "/computeMetadata/v1/instance/maintenance-event", {"Metadata-Flavor": "Google"})
    g0 = g0.decode(errors="replace").strip() if st == 200 else str(st)
    lp_life, lp_gce = {}, {}
    for out, path, hdr in ((lp_life, "/v1/lifecycle?wait_for_change=true&last_etag=%s&timeout_sec=600" % l0_etag, {}),
                           (lp_gce, "/computeMetadata/v1/instance/maintenance-event?wait_for_change=true&timeout_sec=600",
                            {"Metadata-Flavor": "Google"})):
        threading.Thread(target=longpoll, args=(out, path, hdr), daemon=True).start()
    time.sleep(0.5)
    # The host flips the file once it reads READY: this answer, or a later
    # one of the loop, is the last "none" before it (the loop's first may
    # come after the flip).
    # Each "none" is timed when its request was sent, not when its answer was
    # read: the flip came after the server answered it, so after the send,
    # and a long poll's answer can be read before the plain one (the guest's
    # threads, TCG): a read time gave -6 ms once.
    t0 = time.monotonic()
    s, _, _ = life()
    last_none = t0 if s == "none" else None
    first_plain = None
    say("IMDS-MIG-READY pod=%s" % src)
    noticed = False
    arrived = None

    last_src = first_tgt = None
    tgt, fails, n_src, n_tgt, kinds = "", 0, 0, 0, {}
    deadline = time.monotonic() + 400
    while (n_tgt < 50 or (arrived is None and time.monotonic() - first_tgt < 30)) and time.monotonic() < deadline:
        sent = time.monotonic()
        st, b, rx = ident(0.3)
        now = time.monotonic()
        pod = ""
        if st == 200:
            try:
                pod = json.loads(b).get("podName", "")
            except ValueError:
                pass
        if pod == src and first_tgt is None:
            last_src, last_src_rx, n_src = now, rx, n_src + 1
        elif pod and pod != src:
            if first_tgt is None:
                first_tgt, tgt, tgt_sent, first_tgt_rx = now, pod, sent, rx
            n_tgt += 1
        elif last_src is not None and first_tgt is None:
            fails += 1
            k = b.decode(errors="replace") if st == 0 else str(st)
            kinds[k] = kinds.get(k, 0) + 1
        if not noticed:
            t0 = time.monotonic()
            s, _, _ = life()
            t = time.monotonic()
            if s == "none":
                last_none = t0
            elif s == "migrate" and first_plain is None:
                first_plain = t
            if ("t" in lp_life and "t" in lp_gce) or first_tgt is not None:
                noticed = True
                say(notice_line(l0, g0, l0_etag, lp_life, lp_gce, last_none, first_plain,
                                "source" if first_tgt is None else "target"))
        elif first_tgt is not None and arrived is None:
            s, et, j = life()
            if s == "arrived":
                arrived = (time.monotonic(), et, j)
        time.sleep(0.02)
    if first_tgt is None:
        say("IMDS-MIG-POLL-TIMEOUT src=%s answers=%d fails=%d" % (src, n_src, fails))
        waiter.kill()
        return 1
    # gap_ms: between the kernel's stamps of the two answers' arrival;
    # read_gap_ms: between the loop's reads of them (the Python that read
    # the target's first answer ran on a cold translation cache).
    # An answer without a stamp (none should come: STAMP_GUARD) gives -1.
    gap = -1 if first_tgt_rx is None or last_src_rx is None else round((first_tgt_rx - last_src_rx) * 1000)
    say("IMDS-MIG-POLL src=%s tgt=%s gap_ms=%d read_gap_ms=%d fails=%d kinds=%s src_answers=%d last_src_ms=%d first_tgt_ms=%d tgt_sent_ms=%d" % (
        src, tgt, gap, ms(first_tgt) - ms(last_src), fails,
        ",".join("%s:%d" % kv for kv in sorted(kinds.items())) or "-", n_src, ms(last_src), ms(first_tgt), ms(tgt_sent)))

    # The waiting request: its end, and how long after the target first answered.
    try:
        code, errout = waiter.communicate(timeout=120)
        rc = waiter.returncode
    except subprocess.TimeoutExpired:
        waiter.kill()
        code, errout, rc = "", "still waiting 120 s after the switch-over", -1
    t_end = time.monotonic()
    say("IMDS-MIG-WAIT exit=%d http=%s ended_after_first_target_answer_ms=%d held_s=%.1f keepalive=%s err=%s" % (
        rc, code or "-", ms(t_end) - ms(first_tgt), t_end - t_wait, ",".join(keep[1::2]),
        (errout or "-").strip().replace(" ", "_")[:80]))

    st_old, _, _ = req("GET", "/v1/meta-data", {"X-Metadata-Token": tok1})
    st_put, tok2 = session()
    st_new, _, _ = req("GET", "/v1/meta-data", {"X-Metadata-Token": tok2})
    # The target's lifecycle answer: arrived, GCE's NONE, a new ETag.
    s, et, j = life()
    st, g, _ = req("GET", "/computeMetadata/v1/instance/maintenance-event", {"Metadata-Flavor": "Google"})
    say("IMDS-MIG-ARRIVED state=%s reason=%s uid=%s gce=%s new_etag=%d first_arrived_after_first_target_ms=%s" % (
        s, j.get("reason", "-"), j.get("migrationUID") or "-", g.decode(errors="replace").strip() if st == 200 else st,
        int(bool(et) and et not in (l0_etag, lp_life.get("etag"))),
        "%d" % (ms(arrived[0]) - ms(first_tgt)) if arrived else "-"))

    say("IMDS-MIG-SESSION old_token=%d put=%d new_token=%d len=%d" % (st_old, st_put, st_new, len(tok2)))

    after, pod, err = data()
    st_pw2, b_pw2, _ = req("GET", "/openstack/latest/password")
    say("IMDS-MIG-AFTER pod=%s password=%d:%d %s" % (pod or err, st_pw2, len(b_pw2), json.dumps(after, sort_keys=True)))

    # A new wait on the target with the tag from the source: nothing changed,
    # so it is held its timeout_sec and answered with the same tag.
    t = time.monotonic()
    st, _, et = req("GET", "/v1/user-data?wait_for_change=true&last_etag=%s&timeout_sec=1" % etag, timeout=10)
    say("IMDS-MIG-WAIT2 status=%d same_etag=%d held_ms=%d" % (st, int(et.strip('"') == etag), ms(time.monotonic()) - ms(t)))

    # The next hop's neighbour entry: learned in the source pod, still good;
    # then pinned to a MAC nobody has: the tap's steering takes the guest's
    # packets for the service by address, whatever MAC they carry.
    neigh_after = neigh(via, dev)
    bogus = "02:00:5e:10:00:01"
    subprocess.run(["ip", "neigh", "replace", via, "lladdr", bogus, "dev", dev, "nud", "permanent"], check=False)
    st_bogus, _, _ = req("GET", "/v1/meta-data")
    subprocess.run(["ip", "neigh", "del", via, "dev", dev], check=False)
    st_back, _, _ = req("GET", "/v1/meta-data")
    say("IMDS-MIG-NEIGH before=%s after=%s pinned_%s=%d then=%d" % (neigh_before, neigh_after, bogus, st_bogus, st_back))
    say("IMDS-MIG-DONE")
    return 0


if __name__ == "__main__":
    # A crash says so on the console (the host waits for IMDS-MIG-ERROR),
    # not in the unit's journal only, where the host saw 240 s of nothing.
    try:
        sys.exit(main())
    except Exception as e:
        import traceback
        say("IMDS-MIG-ERROR %s: %s at %s" % (type(e).__name__, e,
            " <- ".join("%s:%d" % (f.name, f.lineno) for f in reversed(traceback.extract_tb(e.__traceback__)))))
        sys.exit(1)
