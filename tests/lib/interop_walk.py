#!/usr/bin/python3
"""What a guest sees of every layout, as one JSON document (tests/integration/
upgrade_interop.sh runs it in the guest before and after a migration between
two versions of the sidecar, and compares the documents path by path).

  interop_walk.py walk [--host H]...                  the document, on stdout
                    (default 169.254.169.254; each host after the first
                    walked the same, its keys prefixed "[H] ")
  interop_walk.py compare OLD.json NEW.json ALLOW     the differences

walk: every answer as {"status", "type", "etag", "flavor", "cache", "body"},
keyed "GET /path" (or "PUT ...", "v2 GET ..." for EC2 with an IMDSv2 token,
"s GET ..." for ours with a /v1/session token, "no-header GET ...",
"bad-session GET ...", "bad-token GET ...": each once).  The listings are walked:
NoCloud's four files, /v1/identity and /v1/token, the OpenStack versions and
every file of each, the EC2 versions, each version's root and meta-data/
listing, and latest's whole meta-data/ and dynamic/ trees (without a token and
with an IMDSv2 token), GCE's instance/ tree, Azure's instance and scheduled
events, /v1/lifecycle, and unknown paths of each (their 404).  Session tokens
are recorded by length (they are random); /v1/lifecycle's "since" as <time>
(and its ETag, a tag of that time, as masked).
One keep-alive connection, paced under the sidecar's default rate limit
(100 requests/s, burst 100); a 429 is waited out (Retry-After) and asked again.

compare: ALLOW has one rule per line, "KEY-GLOB<TAB>RULE[<TAB>anything]"
(# comments); the first rule whose glob matches and which explains the
difference takes it:
  added           the old answered 404 (or its listing did not name the path),
                  the new anything: a path the new serves
  now-404         the old answered 200, the new 404 with a JSON reason
  lines +L...     a listing: the new's lines are the old's and L...
  json -K=V +K... a JSON body: the old's key K with value V (JSON) left out,
                  key K added; the rest the same
Everything but the body (and so the ETag) must be the same for lines/json.
A difference no rule explains is printed with both answers; exit 1 then.
The rules apply in both directions (a rollback compares new to old): with
--reverse the old/new sides of each rule swap.
"""
import fnmatch
import http.client
import json
import re
import sys
import time

HOST = "169.254.169.254"
GOOGLE = {"Metadata-Flavor": "Google"}
AZURE = {"Metadata": "true"}


class Walker:
    def __init__(self):
        self.host = HOST
        self.prefix = ""  # "[host] " for every host but the first
        self.conn = None
        self.sent = []  # monotonic times of the last requests, for pacing
        self.out = {}
        self.retried = 0

    def _pace(self):
        # at most 80 requests in any second: under the default 100/s bucket
        now = time.monotonic()
        self.sent = [t for t in self.sent if now - t < 1.0]
        if len(self.sent) >= 80:
            time.sleep(1.0 - (now - self.sent[0]) + 0.01)
        self.sent.append(time.monotonic())

    def req(self, method, path, headers=None, key=None, mask=None):
        for attempt in range(6):
            self._pace()
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(self.host, timeout=5)
                self.conn.request(method, path, headers=headers or {})
                r = self.conn.getresponse()
                body = r.read()
            except (OSError, http.client.HTTPException):
                if self.conn:
                    self.conn.close()
                self.conn = None
                if attempt < 2:
                    continue
                raise
            if r.getheader("Connection", "").lower() == "close":
                self.conn.close()
                self.conn = None
            if r.status == 429:
                self.retried += 1
                time.sleep(float(r.getheader("Retry-After", "1")))
                continue
            break
        text = body.decode("utf-8", errors="replace")
        etag = r.getheader("ETag")
        if mask:
            masked = mask(text)
            # the tag is of the bytes before the mask (a pod's own time)
            if masked != text and etag:
                etag = "<the tag of masked bytes>"
            text = masked
        ans = {"status": r.status, "type": r.getheader("Content-Type"), "etag": etag,
               "flavor": r.getheader("Metadata-Flavor"), "cache": r.getheader("Cache-Control"),
               "body": text}
        key = self.prefix + (key or "%s %s" % (method, path))
        if key in self.out:
            raise SystemExit("interop_walk: %s asked twice (give it a key of its own)" % key)
        self.out[key] = ans
        return r.status, body.decode("utf-8", errors="replace")

    def tree(self, root, headers=None, prefix=""):
        """GET root (a listing ending in /) and every entry below it."""
        st, body = self.req("GET", root, headers, key=prefix + "GET " + root)
        if st != 200:
            return
        for line in body.splitlines():
            name = line.strip()
            if not name:
                continue
            # EC2's public-keys/ lists "0=name": the entry is "0/"
            if "=" in name:
                name = name.split("=", 1)[0] + "/"
            path = root + name
            if name.endswith("/"):
                self.tree(path, headers, prefix)
            else:
                self.req("GET", path, headers, key=prefix + "GET " + path)


def token_len(text):
    return "<token, %d characters>" % len(text)


def since(text):
    return re.sub(r'"since":"[^"]*"', '"since":"<time>"', text)


def walk(w, host, prefix):
    w.host, w.prefix, w.conn = host, prefix, None
    w.req("GET", "/healthz")
    for f in ("meta-data", "user-data", "vendor-data", "network-config"):
        w.req("GET", "/v1/" + f)
    w.req("GET", "/v1//meta-data")  # merge_slashes (Alpine's tiny-cloud)
    w.req("HEAD", "/v1/user-data")
    w.req("GET", "/v1/identity", AZURE)
    w.req("GET", "/v1/identity", key="no-header GET /v1/identity")  # 400
    w.req("GET", "/v1/token", AZURE)
    w.req("GET", "/v1/nope")
    st, tok = w.req("PUT", "/v1/session", {"X-Metadata-Token-TTL-Seconds": "300"}, mask=token_len)
    if st == 200:
        w.req("GET", "/v1/identity", dict(AZURE, **{"X-Metadata-Token": tok}), key="s GET /v1/identity")
    w.req("GET", "/v1/identity", dict(AZURE, **{"X-Metadata-Token": "x" * 43}), key="bad-session GET /v1/identity")
    # OpenStack
    st, body = w.req("GET", "/openstack")
    w.req("GET", "/openstack/")
    versions = body.split() if st == 200 else []
    for v in versions:
        st, files = w.req("GET", "/openstack/%s/" % v)
        w.req("GET", "/openstack/%s" % v)
        for f in files.split() if st == 200 else []:
            w.req("GET", "/openstack/%s/%s" % (v, f))
    w.req("GET", "/openstack/latest/nope")
    w.req("GET", "/openstack/1999-01-01/meta_data.json")
    # EC2: the versions, each one's root and meta-data/ listing, latest's trees
    st, body = w.req("GET", "/")
    for v in body.split() if st == 200 else []:
        w.req("GET", "/%s/" % v)
        if v != "latest":  # its tree below
            w.req("GET", "/%s/meta-data/" % v)
    w.tree("/latest/meta-data/")
    w.tree("/latest/dynamic/")
    w.req("GET", "/latest/user-data")
    w.req("GET", "/latest/meta-data/nope")
    st, tok = w.req("PUT", "/latest/api/token", {"X-aws-ec2-metadata-token-ttl-seconds": "300"}, mask=token_len)
    if st == 200:
        v2 = {"X-aws-ec2-metadata-token": tok}
        w.tree("/latest/meta-data/", v2, prefix="v2 ")
        w.tree("/latest/dynamic/", v2, prefix="v2 ")
        w.req("GET", "/latest/user-data", v2, key="v2 GET /latest/user-data")
    w.req("GET", "/latest/meta-data/instance-id", {"X-aws-ec2-metadata-token": "x" * 43},
          key="bad-token GET /latest/meta-data/instance-id")
    # GCE, Azure, lifecycle events
    w.tree("/computeMetadata/v1/instance/", GOOGLE)
    w.req("GET", "/computeMetadata/v1/instance/zone", GOOGLE)
    w.req("GET", "/computeMetadata/v1/project/project-id", GOOGLE)
    w.req("GET", "/metadata/instance?api-version=2021-02-01", AZURE)
    w.req("GET", "/metadata/scheduledevents?api-version=2020-07-01", AZURE)
    w.req("GET", "/v1/lifecycle", mask=since)
    if w.conn:
        w.conn.close()


def same_but(a, b, fields):
    """a and b equal in every field but those"""
    return {x: a[x] for x in a if x not in fields} == {x: b[x] for x in b if x not in fields}


def rule_ok(rule, a, b):
    """a: the old version's answer (None: not asked, its listing did not
    name it), b: the new version's."""
    word = rule.split()
    if word[0] == "added":
        return (a is None or a["status"] == 404) and b is not None
    if word[0] == "now-404":
        return a is not None and b is not None and a["status"] == 200 and b["status"] == 404 and \
            (b["type"] or "").startswith("application/json")
    if a is None or b is None or a["status"] != 200 or b["status"] != 200:
        return False
    if word[0] == "lines":  # lines +L: the new listing is the old's and L
        la, lb = a["body"].splitlines(), b["body"].splitlines()
        for op in word[1:]:
            if op[0] != "+" or op[1:] in la or op[1:] not in lb:
                return False
            lb.remove(op[1:])
        # the bytes differ, so does the ETag
        return sorted(la) == sorted(lb) and same_but(a, b, ("body", "etag"))
    if word[0] == "json":  # json -K=V +K: K=V (JSON) left out, K added
        try:
            da, db = json.loads(a["body"]), json.loads(b["body"])
        except ValueError:
            return False
        for op in word[1:]:
            if op[0] == "-":
                k, v = op[1:].split("=", 1)
                if k not in da or da[k] != json.loads(v) or k in db:
                    return False
                del da[k]
            elif op[0] == "+":
                if op[1:] in da or op[1:] not in db:
                    return False
                del db[op[1:]]
            else:
                return False
        return da == db and same_but(a, b, ("body", "etag"))
    raise SystemExit("unknown rule: " + rule)


def compare(old_f, new_f, allow_f, reverse):
    old, new = json.load(open(old_f)), json.load(open(new_f))
    rules = []
    for line in open(allow_f):
        line = line.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        f = line.split("\t")
        rules.append((f[0], f[1]))
    bad = allowed = same = 0
    used = set()
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if reverse:
            a, b = b, a
        if a == b:
            same += 1
            continue
        hit = [(g, r) for g, r in rules if fnmatch.fnmatchcase(key, g) and rule_ok(r, a, b)]
        if hit:
            allowed += 1
            used.add(hit[0])
            continue
        bad += 1
        print("DIFF %s" % key)
        print("  old: %s" % json.dumps(old.get(key), ensure_ascii=False)[:2000])
        print("  new: %s" % json.dumps(new.get(key), ensure_ascii=False)[:2000])
    print("compared %d paths: %d the same, %d allowed differences (%d rules used), %d not allowed"
          % (same + allowed + bad, same, allowed, len(used), bad))
    return 1 if bad else 0


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "walk":
        hosts = [a for i, a in enumerate(sys.argv[2:]) if i % 2 and sys.argv[2 + i - 1] == "--host"]
        w = Walker()
        for i, host in enumerate(hosts or [HOST]):
            walk(w, host, "[%s] " % host if i else "")
        json.dump(w.out, sys.stdout, indent=1, sort_keys=True, ensure_ascii=False)
        print()
        print("walked %d paths of %s, %d answers of 429 waited out" % (len(w.out), ", ".join(hosts or [HOST]),
                                                                     w.retried), file=sys.stderr)
        return 0
    if len(sys.argv) in (5, 6) and sys.argv[1] == "compare":
        return compare(sys.argv[2], sys.argv[3], sys.argv[4], len(sys.argv) == 6 and sys.argv[5] == "--reverse")
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
