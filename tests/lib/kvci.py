#!/usr/bin/python3
"""One case of tests/fixtures/kubevirt-cloudinit through the webhook and the
sidecar, compared with the files KubeVirt's own pkg/cloud-init wrote.

  kvci.py list                      the case names, one a line
  kvci.py check NAME --admission-cli BIN --server BIN --work DIR
  kvci.py nocloud-vmi ...           a VMI's annotation and KubeVirt's NoCloud
                                    files, for vm_boot.sh's continuity boot

For a VMI (or a VM, made into its VMI as virt-controller's SetupVMIFromVM
does: pkg/virt-controller/watch/vm/vm.go:1867-1896, the legacy UUIDv5 of
watch/vm/vm.go:1932-1947), opted in with imds.kubevirt.io/enabled:
  1. the VMI's CREATE review through admission_cli (the webhook's own code);
     a VMI without a firmware UUID is reviewed once, then again after the
     UUID is set, as the API server calls a reinvocationPolicy: IfNeeded
     webhook again after virt-api's mutator drew one (the reference's
     value stands for that draw, which the generator seeded);
  2. the VMI's annotations onto a virt-launcher pod (KubeVirt copies them),
     the pod's review through admission_cli, and the sidecar's container
     reproduced (tests/lib/sidecar_env.py: Secrets from secrets.yaml in
     kubelet's layout);
  3. `imds-server serve` with that environment, and every file of the case
     compared: user-data, network-config, user_data, network_data.json
     byte for byte; meta-data and meta_data.json field for field (NoCloud
     meta-data is YAML here, compact JSON on KubeVirt's disk: the same
     fields and values as cloud-init reads them), plus the identity in the
     other layouts (OpenStack uuid/hostname, NoCloud instance-id, EC2).
A case KubeVirt denies (NN-name.error.txt) must be denied with its message.
Prints what differs and exits 1, or exits 0.
"""
import argparse
import base64
import copy
import importlib.util
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
import uuid

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(REPO, "tests", "fixtures", "kubevirt-cloudinit")
POD_REVIEW = os.path.join(REPO, "tests", "fixtures", "webhook", "pod-kv18.json")
# watch/vm/firmware.go:83-89: the namespace of a legacy VM's firmware UUID.
LEGACY_NS = uuid.UUID("6a1a24a1-4061-4607-8bf4-a3963d0c5895")

spec = importlib.util.spec_from_file_location("sidecar_env", os.path.join(HERE, "sidecar_env.py"))
sidecar_env = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sidecar_env)

problems = []


def bad(msg):
    problems.append(msg)


def cases():
    out = []
    for f in sorted(os.listdir(FIX)):
        m = re.fullmatch(r"(\d\d-[a-z0-9-]+)\.(vmi|vm)\.yaml", f)
        if m:
            out.append(m.group(1))
    return out


def load_case(name):
    for kind in ("vmi", "vm"):
        p = os.path.join(FIX, "%s.%s.yaml" % (name, kind))
        if os.path.exists(p):
            with open(p) as f:
                return kind, yaml.safe_load(f)
    raise SystemExit("no case " + name)


def vmi_of_vm(vm):
    """virt-controller's SetupVMIFromVM: the VMI is named after the VM and
    is its template; a template without a firmware UUID gets the legacy
    UUIDv5 of the VM's name."""
    t = copy.deepcopy(vm["spec"]["template"])
    vmi = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
           "metadata": dict(t.get("metadata", {})), "spec": t["spec"]}
    vmi["metadata"]["name"] = vm["metadata"]["name"]
    vmi["metadata"]["namespace"] = vm["metadata"]["namespace"]
    fw = vmi["spec"].setdefault("domain", {}).setdefault("firmware", {})
    if not fw.get("uuid"):
        fw["uuid"] = str(uuid.uuid5(LEGACY_NS, vm["metadata"]["name"]))
    return vmi


def review(obj, kind):
    md = obj["metadata"]
    res = {"VirtualMachineInstance": "virtualmachineinstances", "VirtualMachine": "virtualmachines"}[kind]
    gvk = {"group": "kubevirt.io", "version": "v1", "kind": kind}
    gvr = {"group": "kubevirt.io", "version": "v1", "resource": res}
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
            "request": {"uid": "00000000-0000-4000-8000-00000000c1c1", "kind": gvk, "resource": gvr,
                        "requestKind": gvk, "requestResource": gvr, "name": md["name"],
                        "namespace": md["namespace"], "operation": "CREATE",
                        "userInfo": {"username": "system:serviceaccount:kubevirt:kubevirt-controller"},
                        "object": obj, "dryRun": False}}


def answer(cli, rv):
    p = subprocess.run([cli], input=json.dumps(rv).encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, check=False)
    if p.returncode != 0:
        raise SystemExit("admission_cli failed: " + p.stderr.decode(errors="replace"))
    return json.loads(p.stdout)["response"]


def patched(obj, resp):
    import jsonpatch
    if not resp.get("patch"):
        return copy.deepcopy(obj)
    return jsonpatch.apply_patch(obj, json.loads(base64.b64decode(resp["patch"])))


def secrets_dirs(work):
    """secrets.yaml as folders of files (one a key), for sidecar_env."""
    out = {}
    with open(os.path.join(FIX, "secrets.yaml")) as f:
        for doc in yaml.safe_load_all(f):
            if not doc:
                continue
            d = os.path.join(work, "secrets", doc["metadata"]["name"])
            os.makedirs(d, exist_ok=True)
            data = {k: base64.b64decode(v) for k, v in (doc.get("data") or {}).items()}
            data.update({k: v.encode() for k, v in (doc.get("stringData") or {}).items()})
            for k, v in data.items():
                with open(os.path.join(d, k), "wb") as fh:
                    fh.write(v)
            out[doc["metadata"]["name"]] = d
    return out


def start(server, env, work):
    log = open(os.path.join(work, "server.log"), "w+")
    p = subprocess.Popen([server, "serve", "--listen", "127.0.0.1:0"], env=env, stderr=log,
                         stdout=subprocess.DEVNULL)
    import time
    for _ in range(500):
        log.seek(0)
        m = re.search(r" on 127\.0\.0\.1:(\d+) ", log.read())
        if m:
            return p, "http://127.0.0.1:%s" % m.group(1), log
        if p.poll() is not None:
            break
        time.sleep(0.01)
    log.seek(0)
    raise SystemExit("server did not start: " + log.read()[-2000:])


def get(url, path):
    req = urllib.request.Request(url + path, headers={"Metadata": "true"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def ref(name, rel):
    p = os.path.join(FIX, name + ".cloudinit", rel)
    if not os.path.exists(p):
        return None
    with open(p, "rb") as f:
        return f.read()


def same_bytes(what, want, got):
    if want != got:
        bad("%s: %d bytes differ from KubeVirt's %d bytes (%r... vs %r...)"
            % (what, len(got), len(want), got[:60], want[:60]))


def fields(what, want, got, extra_ok):
    for k, v in want.items():
        if k not in got:
            bad("%s: field %s missing (KubeVirt: %r)" % (what, k, v))
        elif got[k] != v:
            bad("%s: field %s is %r, KubeVirt's %r" % (what, k, got[k], v))
    for k in got:
        if k not in want and k not in extra_ok:
            bad("%s: field %s (%r) is not on KubeVirt's disk" % (what, k, got[k]))


def check(a):
    name = a.name
    work = a.work
    os.makedirs(work, exist_ok=True)
    kind, obj = load_case(name)
    obj["metadata"].setdefault("annotations", {})
    err = ref(name, "../%s.error.txt" % name)
    if kind == "vm":
        obj["spec"]["template"].setdefault("metadata", {}).setdefault("annotations", {})[
            "imds.kubevirt.io/enabled"] = "true"
        resp = answer(a.admission_cli, review(obj, "VirtualMachine"))
        if not resp.get("allowed"):
            bad("the VM was denied: %s" % resp.get("status"))
        vmi = vmi_of_vm(obj)
    else:
        vmi = obj
    vmi["metadata"].setdefault("annotations", {})["imds.kubevirt.io/enabled"] = "true"

    errpath = os.path.join(FIX, name + ".error.txt")
    if os.path.exists(errpath):
        with open(errpath) as f:
            text = f.read()
        cause = re.search(r"^causes:\n  [^:]+: (.*)$", text, re.M).group(1)
        resp = answer(a.admission_cli, review(vmi, "VirtualMachineInstance"))
        msg = (resp.get("status") or {}).get("message", "")
        if resp.get("allowed"):
            bad("allowed; KubeVirt denies it: %s" % cause)
        elif msg != cause:
            bad("denied with %r; KubeVirt's message: %r" % (msg, cause))
        return

    fw = vmi["spec"].get("domain", {}).get("firmware", {}).get("uuid")
    resp = answer(a.admission_cli, review(vmi, "VirtualMachineInstance"))
    if not resp.get("allowed"):
        bad("the VMI was denied: %s" % resp.get("status"))
        return
    vmi = patched(vmi, resp)
    for w in resp.get("warnings") or []:
        bad("unexpected warning: %s" % w)
    nocloud = ref(name, "meta-data") is not None
    md_ref = json.loads(ref(name, "meta-data") if nocloud else ref(name, "openstack/latest/meta_data.json"))
    want_uuid = md_ref.get("instance-id") if nocloud else md_ref.get("uuid")
    if not fw:
        # virt-api's mutator ran after this webhook and drew the UUID; the
        # API server calls the webhook again (reinvocationPolicy: IfNeeded).
        first = json.loads(vmi["metadata"]["annotations"]["imds.kubevirt.io/cloud-init"])
        if "uuid" in first:
            bad("a UUID in the annotation before the VMI had one: %r" % first["uuid"])
        vmi["spec"]["domain"].setdefault("firmware", {})["uuid"] = want_uuid
        resp = answer(a.admission_cli, review(vmi, "VirtualMachineInstance"))
        vmi = patched(vmi, resp)
    ann = vmi["metadata"]["annotations"]

    # The launcher pod: KubeVirt copies every VMI annotation to it.
    with open(POD_REVIEW) as f:
        prv = json.load(f)
    prv["request"]["namespace"] = vmi["metadata"]["namespace"]
    pmd = prv["request"]["object"]["metadata"]
    pmd["namespace"] = vmi["metadata"]["namespace"]
    pmd["annotations"] = {k: v for k, v in pmd.get("annotations", {}).items()
                          if not k.startswith("imds.kubevirt.io/")}
    pmd["annotations"].update(ann)
    pmd["annotations"]["kubevirt.io/domain"] = vmi["metadata"]["name"]
    rvpath = os.path.join(work, "pod-review.json")
    with open(rvpath, "w") as f:
        json.dump(prv, f)
    args = [sys.executable, os.path.join(HERE, "sidecar_env.py"), "pod", "--review", rvpath,
            "--admission-cli", a.admission_cli, "--root", os.path.join(work, "root"), "--json"]
    for n, d in secrets_dirs(work).items():
        args += ["--secret", "%s=%s" % (n, d)]
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if p.returncode != 0:
        bad("sidecar environment: " + p.stderr.decode(errors="replace"))
        return
    env = json.loads(p.stdout)
    env["IMDS_TOKEN_PATH"] = os.path.join(work, "root", "token")
    env.pop("IMDS_INTERFACES", None)
    env["PATH"] = os.environ.get("PATH", "/usr/bin:/bin")
    srv, url, log = start(a.server, env, work)
    try:
        compare(name, url, nocloud, md_ref)
    finally:
        srv.terminate()
        srv.wait()
        log.seek(0)
        text = log.read()
        if re.search(r"Sanitizer|runtime error:", text):
            bad("sanitizer report in the server's log:\n" + text[-3000:])


def compare(name, url, nocloud, md_ref):
    nc_st, nc_md = get(url, "/v1/meta-data")
    os_st, os_md = get(url, "/openstack/latest/meta_data.json")
    if nc_st != 200 or os_st != 200:
        bad("meta-data %d, meta_data.json %d" % (nc_st, os_st))
        return
    nc = yaml.safe_load(nc_md)
    osj = json.loads(os_md)
    # OpenStack's own fields the service adds (Nova's; KubeVirt's config
    # drive has fewer); NoCloud adds none.
    os_extra = {"name", "project_id", "availability_zone", "instance_type", "launch_index",
                "public_keys", "keys", "meta"}
    if nocloud:
        fields("meta-data", md_ref, nc, set())
        same_bytes("user-data", ref(name, "user-data"), get(url, "/v1/user-data")[1])
        st, body = get(url, "/v1/network-config")
        want = ref(name, "network-config")
        if want is not None:
            same_bytes("network-config", want, body)
        elif body:
            bad("network-config: %d bytes served, KubeVirt writes none" % len(body))
        # The same instance in the other layouts.
        if osj.get("uuid") != md_ref["instance-id"]:
            bad("meta_data.json uuid %r, not the NoCloud instance-id" % osj.get("uuid"))
        if osj.get("hostname") != md_ref.get("local-hostname"):
            bad("meta_data.json hostname %r" % osj.get("hostname"))
        for path, want in (("/latest/meta-data/instance-id", md_ref["instance-id"]),
                           ("/latest/meta-data/local-hostname", md_ref.get("local-hostname"))):
            st, body = get(url, path)
            if body.decode() != want:
                bad("EC2 %s: %r, KubeVirt's %r" % (path, body, want))
        st, body = get(url, "/latest/user-data")
        if ref(name, "user-data") or st != 404:  # EC2 says 404 for no user data
            same_bytes("EC2 user-data", ref(name, "user-data"), body)
        for k, v in (md_ref.get("public-keys") or {}).items():
            st, body = get(url, "/latest/meta-data/public-keys/%s/openssh-key" % k)
            same_bytes("EC2 public-keys/%s/openssh-key" % k, v.encode(), body)
        if "instance-type" in md_ref:
            st, body = get(url, "/latest/meta-data/instance-type")
            if body.decode() != md_ref["instance-type"]:
                bad("EC2 instance-type %r" % body)
    else:
        fields("meta_data.json", md_ref, osj, os_extra)
        same_bytes("user_data", ref(name, "openstack/latest/user_data"),
                   get(url, "/openstack/latest/user_data")[1])
        want = ref(name, "openstack/latest/network_data.json")
        if want is not None:
            same_bytes("network_data.json", want, get(url, "/openstack/latest/network_data.json")[1])
        if nc.get("instance-id") != md_ref["uuid"]:
            bad("NoCloud instance-id %r, not the config drive's uuid" % nc.get("instance-id"))
        if nc.get("local-hostname") != md_ref.get("hostname"):
            bad("NoCloud local-hostname %r" % nc.get("local-hostname"))


def nocloud_vmi(a):
    """A VMI with a cloudInitNoCloud volume whose user data is a Secret
    (secretRef), or with --inline its userDataBase64 (the file's bytes, any
    bytes: KubeVirt writes them decoded, cloud-init.go:318-327), and with
    --network-data an inline networkData, through the webhook: writes
    OUT/cloud-init (the imds.kubevirt.io/cloud-init text the webhook wrote)
    and OUT/iso/meta-data, OUT/iso/user-data (and OUT/iso/network-config),
    the files KubeVirt's disk holds for it: meta-data is json.Marshal of
    NoCloudMetadata (pkg/cloud-init/cloud-init.go:80-85, 591: compact, no
    final newline; no instance-type, no public-keys here), user-data the
    Secret's or the decoded bytes, network-config the networkData as given
    (cloud-init.go:374-400, 421-433)."""
    with open(a.user_data, "rb") as src:
        ud = src.read()
    if a.inline:
        source = {"userDataBase64": base64.b64encode(ud).decode()}
    elif a.secret:
        source = {"secretRef": {"name": a.secret}}
    else:
        raise SystemExit("nocloud-vmi: --secret or --inline")
    nd = None
    if a.network_data:
        with open(a.network_data) as f:
            nd = f.read()
        source["networkData"] = nd
    vmi = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
           "metadata": {"name": a.name, "namespace": a.namespace,
                        "annotations": {"imds.kubevirt.io/enabled": "true"}},
           "spec": {"domain": {"firmware": {"uuid": a.uuid},
                               "devices": {"disks": [{"name": "root"}, {"name": "cloudinitdisk"}],
                                           "interfaces": [{"name": "default", "masquerade": {}}]}},
                    "networks": [{"name": "default", "pod": {}}],
                    "volumes": [{"name": "root", "containerDisk": {"image": "x"}},
                                {"name": "cloudinitdisk",
                                 ("cloudInitConfigDrive" if a.config_drive else "cloudInitNoCloud"):
                                     source}]}}
    resp = answer(a.admission_cli, review(vmi, "VirtualMachineInstance"))
    if not resp.get("allowed"):
        raise SystemExit("denied: %s" % resp.get("status"))
    text = patched(vmi, resp)["metadata"]["annotations"]["imds.kubevirt.io/cloud-init"]
    os.makedirs(os.path.join(a.out, "iso"), exist_ok=True)
    with open(os.path.join(a.out, "cloud-init"), "w") as f:
        f.write(text)
    host = a.name.split(".")[0][:63]
    with open(os.path.join(a.out, "iso", "meta-data"), "w") as f:
        f.write(json.dumps({"instance-id": a.uuid, "local-hostname": host}, separators=(",", ":")))
    with open(os.path.join(a.out, "iso", "user-data"), "wb") as f:
        f.write(ud)
    if nd is not None:
        with open(os.path.join(a.out, "iso", "network-config"), "w") as f:
            f.write(nd)
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list")
    n = sub.add_parser("nocloud-vmi")
    for k in ("--admission-cli", "--name", "--namespace", "--uuid", "--user-data", "--out"):
        n.add_argument(k, required=True)
    n.add_argument("--secret", help="the user data from this Secret (secretRef)")
    n.add_argument("--inline", action="store_true", help="the user data inline (userDataBase64)")
    n.add_argument("--network-data", help="a file: inline networkData")
    n.add_argument("--config-drive", action="store_true", help="a cloudInitConfigDrive volume instead")
    c = sub.add_parser("check")
    c.add_argument("name")
    c.add_argument("--admission-cli", required=True)
    c.add_argument("--server", required=True)
    c.add_argument("--work", required=True)
    a = ap.parse_args()
    if a.cmd == "list":
        print("\n".join(cases()))
        return 0
    if a.cmd == "nocloud-vmi":
        return nocloud_vmi(a)
    check(a)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
