#!/usr/bin/python3
"""Every path of every layout, answered: one line block per request, the
status line, every header but Date (in the server's order) and the body, for
a byte-for-byte comparison of two builds (tests/integration/layout_walk.sh).

  layout_walk.py HOST:PORT OUT     the walk into OUT; on stdout a TAP-less
                                   report: one "listed NAME -> STATUS" line per
                                   listing entry that did not answer 200

The listings are crawled (EC2's meta-data/ and dynamic/ trees of each version
GET / lists and of one more date, OpenStack's files of every version it lists
and of one older and one newer date) and every name each layout has, listed
or not, is asked too, with and without a trailing '/', so that a name served
but not listed, or listed but not served, shows; then the sessions (EC2's and
ours: TTL missing, bad, proxied, good; tokens good, unknown, both, repeated),
the methods a route does not take, and GCE's and Azure's header rules.  Session
tokens are written as <token> (they are random).
"""
import http.client
import re
import sys

EC2_NAMES = ["events", "events/maintenance", "events/maintenance/history",
             "events/maintenance/scheduled", "hostname", "instance-id", "instance-type",
             "local-hostname", "local-ipv4", "placement", "placement/availability-zone",
             "placement/region", "public-keys", "public-keys/0", "public-keys/0/openssh-key",
             "public-keys/1/openssh-key", "public-keys/2", "public-keys/9/openssh-key",
             "public-keys/00", "public-keys/0/nope", "public-keys/x", "spot",
             "spot/instance-action", "nope", "placement/nope", "events/nope", "hostname/x"]
OS_FILES = ["meta_data.json", "user_data", "vendor_data.json", "network_data.json", "password",
            "vendor_data2.json", "nope"]
TOKEN = re.compile(r"^[A-Za-z0-9_-]{43}$")


class Walk:
    def __init__(self, addr):
        self.addr = addr
        self.conn = None
        self.out = []
        self.unanswered = []
        self.minted = []  # the session tokens answered, in clear

    def req(self, method, path, headers=None):
        for attempt in range(3):
            try:
                if self.conn is None:
                    host, port = self.addr.rsplit(":", 1)
                    self.conn = http.client.HTTPConnection(host, int(port), timeout=5)
                self.conn.request(method, path, headers=headers or {})
                r = self.conn.getresponse()
                body = r.read()
                break
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
        if (r.getheader("Connection") or "").lower() == "close":
            self.conn.close()
            self.conn = None
        text = body.decode("utf-8", errors="replace")
        if TOKEN.match(text):
            self.minted.append(text)
            text = "<token>"
        hs = "".join("%s: %s\n" % (k, v) for k, v in r.getheaders() if k.lower() != "date")
        if path.startswith("/v1/lifecycle"):
            # "since" is the server's start when nothing is pending.
            text = re.sub(r'"since":"[^"]*"', '"since":"<time>"', text)
            hs = re.sub(r"(?m)^ETag: .*$", "ETag: <since>", hs)
        sent = "".join(" %s=%s" % kv for kv in sorted((headers or {}).items()))
        sent = re.sub(r"[A-Za-z0-9_-]{43}", "<token>", sent)
        self.out.append("%s %s%s\n%d %s\n%s\n%s\n----\n" % (method, path, sent, r.status, r.reason,
                                                           hs, text))
        return r.status, text

    def tree(self, root, headers=None):
        st, body = self.req("GET", root, headers)
        if st != 200:
            return
        for line in body.splitlines():
            name = line.split("=", 1)[0] + "/" if "=" in line else line
            path = root + name
            if name.endswith("/"):
                self.tree(path, headers)
                sub = self.req("GET", path.rstrip("/"), headers)[0]
            else:
                sub = self.req("GET", path, headers)[0]
            if sub != 200:
                self.unanswered.append("listed %s -> %d" % (path, sub))


def walk(w):
    for p in ("/healthz", "/v1/meta-data", "/v1/user-data", "/v1/vendor-data",
              "/v1/network-config", "/v1/lifecycle", "/v1/nope", "/v1//meta-data"):
        w.req("GET", p)
    w.req("HEAD", "/v1/meta-data")
    # OpenStack
    st, body = w.req("GET", "/openstack")
    w.req("GET", "/openstack/")
    versions = body.split() + ["2011-01-01", "2030-01-01", "latest", "nope"]
    for v in versions:
        w.req("GET", "/openstack/" + v)
        st, files = w.req("GET", "/openstack/%s/" % v)
        listed = files.split() if st == 200 else []
        for f in OS_FILES:
            s, text = w.req("GET", "/openstack/%s/%s" % (v, f))
            # As Nova's, user_data and network_data.json are listed and
            # answer 404 with their reason when the instance has none.
            if f in listed and s != 200 and not (s == 404 and "no such path" not in text):
                w.unanswered.append("listed /openstack/%s/%s -> %d" % (v, f, s))
            w.req("GET", "/openstack/%s/%s/" % (v, f))
    w.req("POST", "/openstack/latest/meta_data.json")
    w.req("POST", "/openstack/2012-08-10/password")
    # EC2
    st, body = w.req("GET", "/")
    for v in body.split() + ["2030-01-01", "1.1"]:
        for p in ("", "/", "/user-data", "/user-data/", "/nope", "/meta-data", "/dynamic",
                  "/dynamic/instance-identity", "/dynamic/instance-identity/",
                  "/dynamic/instance-identity/document/", "/dynamic/nope"):
            w.req("GET", "/" + v + p)
        w.tree("/%s/meta-data/" % v)
        w.tree("/%s/dynamic/" % v)
        for n in EC2_NAMES:
            w.req("GET", "/%s/meta-data/%s" % (v, n))
            w.req("GET", "/%s/meta-data/%s/" % (v, n))
    # Sessions, EC2's and ours.
    for path, ttl, tok in (("/latest/api/token", "X-aws-ec2-metadata-token-ttl-seconds",
                            "X-aws-ec2-metadata-token"),
                           ("/v1/session", "X-Metadata-Token-TTL-Seconds", "X-Metadata-Token")):
        w.req("PUT", path)
        w.req("PUT", path, {ttl: "0"})
        w.req("PUT", path, {ttl: "21601"})
        w.req("PUT", path, {ttl: "x"})
        w.req("PUT", path, {ttl: "60", "X-Forwarded-For": "10.0.0.1"})
        w.req("GET", path)
        w.req("POST", path)
        w.req("PUT", path, {ttl: "60"})
        real = w.minted[-1] if w.minted else ""
        for hs in ({tok: real}, {tok: "A" * 43}, {tok: "short"},
                   {"X-Metadata-Token": real, "X-aws-ec2-metadata-token": real},
                   {"X-Metadata-Token": real, "X-aws-ec2-metadata-token": "B" * 43}):
            for p in ("/latest/meta-data/", "/latest/meta-data/hostname", "/v1/meta-data",
                      "/openstack/latest/meta_data.json", "/nope"):
                w.req("GET", p, hs)
    w.req("POST", "/latest/meta-data/")
    w.req("DELETE", "/latest/meta-data/")
    # GCE's header rule (Metadata-Flavor: Google) and Azure's (Metadata: true).
    g = {"Metadata-Flavor": "Google"}
    for p in ("/computeMetadata/v1/instance/", "/computeMetadata/v1/instance/id",
              "/computeMetadata/v1/instance/zone", "/computeMetadata/v1/instance/hostname",
              "/computeMetadata/v1/instance/maintenance-event", "/computeMetadata/v1/project/",
              "/computeMetadata/v1/instance/nope"):
        w.req("GET", p, g)
        w.req("GET", p)
    w.req("GET", "/computeMetadata/v1/instance/id", {"Metadata-Flavor": "google"})
    w.req("GET", "/computeMetadata/v1/instance/id", dict(g, **{"X-Forwarded-For": "10.0.0.1"}))
    w.req("POST", "/computeMetadata/v1/instance/id", g)
    for p in ("/metadata/instance?api-version=2021-02-01", "/metadata/instance",
              "/metadata/scheduledevents?api-version=2020-07-01", "/v1/identity", "/v1/token"):
        w.req("GET", p, {"Metadata": "true"})
        w.req("GET", p)
        w.req("GET", p, {"Metadata": "true", "Forwarded": "for=10.0.0.1"})


def main():
    w = Walk(sys.argv[1])
    walk(w)
    with open(sys.argv[2], "w") as f:
        f.write("".join(w.out))
    for u in w.unanswered:
        print(u)


if __name__ == "__main__":
    main()
