#!/usr/bin/python3
"""A TLS client for the webhook tests (stdlib only).

  tls_client.py get PORT PATH [--ca F]          one request; prints status and the
                                                 peer certificate's serial
  tls_client.py rotate PORT --ca F --old-serial S --new-serial S --swap CMD
      keeps one keep-alive connection open, runs CMD (the atomic ..data swap),
      polls new connections until they present the new serial, then reuses the
      old connection; prints one JSON line: seconds to the new certificate,
      whether the old connection still answered, and its certificate.
"""
import http.client
import json
import socket
import ssl
import subprocess
import sys
import time


def ctx(ca):
    c = ssl.create_default_context(cafile=ca)
    c.check_hostname = False  # the test certificates name the Service, not 127.0.0.1
    c.set_alpn_protocols(["h2", "http/1.1"])
    return c


def serial_of(sock):
    der = sock.getpeercert(binary_form=True)
    # The serial is in the DER; ask openssl-free: use ssl's decoded form.
    return sock.getpeercert().get("serialNumber"), len(der)


def conn(port, ca):
    c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx(ca), timeout=5)
    c.connect()
    return c


def get(c, path):
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    return r.status, body


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    args = dict(zip(sys.argv[3::2], sys.argv[4::2])) if mode == "rotate" else {}
    if mode == "get":
        path = sys.argv[3]
        ca = sys.argv[5] if len(sys.argv) > 5 else None
        c = conn(port, ca)
        st, body = get(c, path)
        print(json.dumps({"status": st, "serial": serial_of(c.sock)[0],
                          "alpn": c.sock.selected_alpn_protocol(),
                          "version": c.sock.version(), "body": body.decode(errors="replace")}))
        return 0
    ca = args["--ca"]
    old = conn(port, ca)
    st0, _ = get(old, "/healthz")
    old_serial = serial_of(old.sock)[0]
    subprocess.run(args["--swap"], shell=True, check=True)
    t0 = time.monotonic()
    new_serial, waited = None, None
    while time.monotonic() - t0 < 5:
        try:
            c = conn(port, ca)
            s = serial_of(c.sock)[0]
            c.close()
            if s == args["--new-serial"]:
                new_serial, waited = s, time.monotonic() - t0
                break
        except (ssl.SSLError, OSError):
            pass
        time.sleep(0.02)
    st1, _ = get(old, "/healthz")
    print(json.dumps({"first_status": st0, "old_serial": old_serial,
                      "old_conn_after_swap": st1, "old_conn_serial": serial_of(old.sock)[0],
                      "new_serial": new_serial, "seconds_to_new": waited}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
