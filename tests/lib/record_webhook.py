#!/usr/bin/python3
"""A mutating webhook that changes nothing and keeps what it was sent.

Each AdmissionReview a real kube-apiserver posts is written to
OUTDIR/<n>.json and allowed with no patch, so a test can see exactly what
a webhook receives (namespace filled, defaults, the built-in admission
plugins' changes).  Serves HTTPS on 127.0.0.1:0 and prints "port N" once
listening.  Stops by itself after --seconds (default 600).

  record_webhook.py CERT KEY OUTDIR [--seconds N]
"""
import argparse
import http.server
import json
import os
import ssl
import sys
import threading


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cert")
    ap.add_argument("key")
    ap.add_argument("outdir")
    ap.add_argument("--seconds", type=float, default=600)
    args = ap.parse_args()
    count = [0]

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(n)
            count[0] += 1
            with open(os.path.join(args.outdir, "%d.json" % count[0]), "wb") as f:
                f.write(body)
            uid = json.loads(body)["request"]["uid"]
            out = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                              "response": {"uid": uid, "allowed": True}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("port %d" % srv.server_address[1], flush=True)
    threading.Timer(args.seconds, srv.shutdown).start()
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
