#!/usr/bin/python3
"""Reproduce the webhook's injected imds-server container on this machine.

The VM test (tests/integration/vm_boot.sh) must start `imds-server run` with
exactly the environment and file layout the webhook gives the sidecar, so the
two cannot drift. This script takes them from the webhook itself:

  1. reads a pod AdmissionReview fixture, optionally edits its annotations;
  2. runs admission_cli (the webhook's own mutation code) on it;
  3. applies the returned JSON Patch (python3-jsonpatch) to the pod;
  4. finds the `imds-server` container (initContainers or containers) and,
     under a temp ROOT, materialises every volume it mounts the way kubelet
     would: downward-API files from the pod's fields/annotations (a missing
     annotation gives an empty file), a fake projected service-account token
     (a JWT with exp = now + expirationSeconds) per token source, Secrets
     from local folders (--secret) in kubelet's ..data layout, emptyDirs;
  5. resolves its env: literal values (paths under a mount are prefixed with
     ROOT), fieldRefs (namespace, pod name, service account, annotations,
     labels).

  sidecar_env.py pod --review R.json --admission-cli BIN --root DIR
        [--pod-name NAME] [--set-annotation KEY=VALUE|KEY=@FILE ...]
        [--del-annotation KEY ...] [--secret NAME=DIR ...] [--json]
        [--cli-arg=ARG ...]           (admission_cli's: --agent is the
                                       webhook's --network-mode agent)
        [--set-label KEY=VALUE ...]   (set after admission, as the API
                                       server's PodTopologyLabels does at
                                       binding)
      prints `export VAR=value` lines (shell-quoted), or a JSON object.
      Also writes DIR/pod.json (the patched pod) and DIR/container.json.

  sidecar_env.py vm-serial --review R.json --admission-cli BIN
      prints the SMBIOS serial the webhook sets on the VM (template).

Exit 1 with a reason on stderr when the webhook does not patch as expected.
"""
import argparse
import base64
import json
import os
import re
import shlex
import subprocess
import sys
import time

import jsonpatch


def die(msg):
    print("sidecar_env: " + msg, file=sys.stderr)
    sys.exit(1)


def admit(cli, review, cli_args=()):
    p = subprocess.run([cli, *cli_args], input=json.dumps(review).encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if p.returncode != 0:
        die("admission_cli failed (%d): %s" % (p.returncode, p.stderr.decode(errors="replace")))
    try:
        resp = json.loads(p.stdout)["response"]
    except (ValueError, KeyError) as e:
        die("admission_cli answer unreadable: %s: %r" % (e, p.stdout[:300]))
    if not resp.get("allowed"):
        die("webhook denied: %s" % json.dumps(resp.get("status")))
    if resp.get("patchType") != "JSONPatch" or not resp.get("patch"):
        die("webhook returned no patch: %s" % json.dumps(resp)[:300])
    patch = json.loads(base64.b64decode(resp["patch"]))
    return jsonpatch.apply_patch(review["request"]["object"], patch)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def fake_jwt(ns, sa, pod, audiences, seconds):
    now = int(time.time())
    header = {"alg": "RS256", "kid": "imds-e2e"}
    claims = {
        "aud": audiences or ["https://kubernetes.default.svc"],
        "exp": now + seconds,
        "iat": now,
        "nbf": now,
        "iss": "https://kubernetes.default.svc",
        "sub": "system:serviceaccount:%s:%s" % (ns, sa),
        "kubernetes.io": {"namespace": ns, "pod": {"name": pod}, "serviceaccount": {"name": sa}},
    }
    return ".".join([b64url(json.dumps(header, separators=(",", ":")).encode()),
                     b64url(json.dumps(claims, separators=(",", ":")).encode()),
                     b64url(b"imds-e2e-fake-signature")])


def field(pod, path):
    """Resolve a downward-API fieldPath the way kubelet does."""
    md = pod.get("metadata", {})
    m = re.fullmatch(r"metadata\.(annotations|labels)\['(.+)'\]", path)
    if m:
        return md.get(m.group(1), {}).get(m.group(2), "")
    table = {
        "metadata.name": md.get("name", ""),
        "metadata.namespace": md.get("namespace", ""),
        "metadata.uid": md.get("uid", ""),
        "spec.serviceAccountName": pod.get("spec", {}).get("serviceAccountName", "default"),
        "spec.nodeName": pod.get("spec", {}).get("nodeName", "node-1"),
    }
    if path not in table:
        die("unsupported fieldPath %r" % path)
    return table[path]


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def kubelet_volume(base, files, items=None):
    """A Secret/ConfigMap volume as kubelet's atomic writer lays it out: the
    files in a timestamped folder, ..data pointing at it, each visible name a
    symlink through ..data; items (key -> path) select and rename keys."""
    if items:
        files = {it["path"]: files[it["key"]] for it in items if it["key"] in files}
    stamp = "..2024_06_01_00_00_00.000000001"
    for k, data in files.items():
        write(os.path.join(base, stamp, k), data)
    os.symlink(stamp, os.path.join(base, "..data"))
    for k in files:
        os.symlink(os.path.join("..data", k), os.path.join(base, k))


def cmd_pod(a):
    with open(a.review) as f:
        review = json.load(f)
    obj = review["request"]["object"]
    ann = obj.setdefault("metadata", {}).setdefault("annotations", {})
    for kv in a.set_annotation:
        k, _, v = kv.partition("=")
        if v.startswith("@"):
            with open(v[1:], encoding="utf-8") as f:
                v = f.read()
        ann[k] = v
    for k in a.del_annotation:
        ann.pop(k, None)
    pod = admit(a.admission_cli, review, a.cli_arg)
    md = pod["metadata"]
    for kv in a.set_label:
        k, _, v = kv.partition("=")
        md.setdefault("labels", {})[k] = v
    # The API server names a generateName pod after admission; the downward
    # API then sees the final name.
    if not md.get("name"):
        md["name"] = a.pod_name or (md.get("generateName", "virt-launcher-") + "x7k2p")
    md.setdefault("namespace", review["request"].get("namespace", "default"))

    spec = pod["spec"]
    found = [c for c in spec.get("initContainers", []) + spec.get("containers", [])
             if c.get("name") == "imds-server"]
    if len(found) != 1:
        die("expected one imds-server container in the patched pod, got %d" % len(found))
    ctr = found[0]
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    root = os.path.abspath(a.root)
    ns = md["namespace"]
    sa = field(pod, "spec.serviceAccountName")

    secrets = dict(kv.split("=", 1) for kv in a.secret)
    mounts = []
    for vm in ctr.get("volumeMounts", []):
        v = vols.get(vm["name"])
        if v is None:
            die("mount %s: no volume of that name" % vm["name"])
        mp = vm["mountPath"]
        base = root + mp
        mounts.append(mp)
        if "downwardAPI" in v:
            for it in v["downwardAPI"]["items"]:
                if "fieldRef" not in it:
                    die("downwardAPI item %s: only fieldRef supported" % it.get("path"))
                write(os.path.join(base, it["path"]), field(pod, it["fieldRef"]["fieldPath"]))
        elif "projected" in v:
            for src in v["projected"]["sources"]:
                t = src.get("serviceAccountToken")
                if t is None:
                    die("projected source %s: only serviceAccountToken supported" % list(src))
                aud = [t["audience"]] if t.get("audience") else []
                write(os.path.join(base, t["path"]),
                      fake_jwt(ns, sa, md["name"], aud, int(t.get("expirationSeconds", 3600))))
        elif "secret" in v:
            name = v["secret"]["secretName"]
            src = secrets.get(name)
            if src is None:
                die("volume %s: Secret %s mounted, give its files with --secret %s=DIR"
                    % (vm["name"], name, name))
            kubelet_volume(base, {k: open(os.path.join(src, k), "rb").read()
                                  for k in sorted(os.listdir(src))}, v["secret"].get("items"))
        elif "emptyDir" in v:
            os.makedirs(base, exist_ok=True)
        else:
            die("volume %s: kind %s not reproduced here" % (vm["name"], sorted(set(v) - {"name"})))

    env = {}
    for e in ctr.get("env", []):
        if "value" in e:
            val = e["value"]
            # A path under a mount, or a folder that holds mounts.
            if any(val == mp or val.startswith(mp.rstrip("/") + "/") or
                   (val.startswith("/") and mp.startswith(val.rstrip("/") + "/")) for mp in mounts):
                val = root + val
        elif "valueFrom" in e and "fieldRef" in e["valueFrom"]:
            val = field(pod, e["valueFrom"]["fieldRef"]["fieldPath"])
        else:
            die("env %s: unsupported source %s" % (e["name"], json.dumps(e)))
        env[e["name"]] = val

    write(os.path.join(root, "pod.json"), json.dumps(pod, indent=1))
    write(os.path.join(root, "container.json"), json.dumps(ctr, indent=1))
    if a.json:
        print(json.dumps(env, indent=1))
    else:
        for k, v in env.items():
            print("export %s=%s" % (k, shlex.quote(v)))


def cmd_vm_serial(a):
    with open(a.review) as f:
        review = json.load(f)
    vm = admit(a.admission_cli, review)
    spec = vm["spec"]
    if "template" in spec:
        spec = spec["template"]["spec"]
    serial = spec.get("domain", {}).get("firmware", {}).get("serial")
    if not serial:
        die("patched VM has no firmware.serial")
    print(serial)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pod")
    p.add_argument("--review", required=True)
    p.add_argument("--admission-cli", required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--pod-name")
    p.add_argument("--set-annotation", action="append", default=[])
    p.add_argument("--del-annotation", action="append", default=[])
    p.add_argument("--set-label", action="append", default=[])
    p.add_argument("--secret", action="append", default=[], metavar="NAME=DIR",
                   help="the files of a Secret the pod mounts (each file a key)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--cli-arg", action="append", default=[],
                   help="an argument for admission_cli (e.g. --agent: the webhook's --network-mode agent)")
    v = sub.add_parser("vm-serial")
    v.add_argument("--review", required=True)
    v.add_argument("--admission-cli", required=True)
    a = ap.parse_args()
    if a.cmd == "pod":
        cmd_pod(a)
    else:
        cmd_vm_serial(a)


if __name__ == "__main__":
    main()
