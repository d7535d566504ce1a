#!/usr/bin/python3
"""The webhook's discovery annotations through admission_cli (the real admission module).

  discovery_check.py CLI FIXTURE_DIR
Prints TAP-style lines "PASS|name" or "FAIL|name|detail"; exit 0 when all passed.

For each case a fixture is copied, annotations set on the VM's template, the VM's own
metadata, a VMI or a pod, the review answered by CLI, its JSON Patch applied with
python3-jsonpatch, and the result checked; a patched object goes through again and must
come back unpatched (idempotent, UPDATE included).
"""
import base64
import copy
import json
import subprocess
import sys

import jsonpatch

CLI, FIX = sys.argv[1], sys.argv[2]
SERIAL = "ds=nocloud;s=http://169.254.169.254/v1/;dsmode=net"
SERIAL_NET = "ds=nocloud-net;s=http://169.254.169.254/v1/"
SERIAL6 = "ds=nocloud;s=http://[fd00:ec2::254]/v1/;dsmode=net"
SERIAL6_NET = "ds=nocloud-net;s=http://[fd00:ec2::254]/v1/"
failed = 0


def report(ok, name, detail=""):
    global failed
    if ok:
        print("PASS|%s" % name)
    else:
        failed += 1
        print("FAIL|%s|%s" % (name, str(detail).replace("\n", " ")[:400]))


def load(fx):
    with open("%s/%s.json" % (FIX, fx)) as f:
        return json.load(f)


def answer(review):
    p = subprocess.run([CLI], input=json.dumps(review).encode(), capture_output=True)
    resp = json.loads(p.stdout)["response"]
    patch = json.loads(base64.b64decode(resp["patch"])) if "patch" in resp else None
    return resp, patch, p.stderr.decode()


def patched(review, patch):
    return jsonpatch.apply_patch(review["request"]["object"], patch) if patch else review["request"]["object"]


def again_clean(review, obj, name):
    for op in ("CREATE", "UPDATE"):
        r2 = copy.deepcopy(review)
        r2["request"]["operation"] = op
        r2["request"]["object"] = obj
        if op == "UPDATE":
            r2["request"]["oldObject"] = copy.deepcopy(obj)
        if r2["request"]["kind"]["kind"] == "VirtualMachineInstance" and op == "UPDATE":
            continue  # a VMI UPDATE is never patched
        resp, patch, _ = answer(r2)
        report(resp["allowed"] and patch is None, "%s: second %s changes nothing" % (name, op), patch)


def anns_of(obj, where):
    if where == "template":
        md = obj["spec"]["template"].setdefault("metadata", {})
    else:
        md = obj.setdefault("metadata", {})
    return md.setdefault("annotations", {})


def vm_domain(obj, vm):
    return obj["spec"]["template"]["spec"]["domain"] if vm else obj["spec"]["domain"]


def case_serial(fx, vm, where, form, want, existing=None, family=None):
    name = "%s, serial-form %s%s on the %s" % (fx, form, ", ip-family %s" % family if family else "", where)
    review = load(fx)
    obj = review["request"]["object"]
    if form is not None:
        anns_of(obj, where)["imds.kubevirt.io/serial-form"] = form
    if family is not None:
        anns_of(obj, where)["imds.kubevirt.io/ip-family"] = family
    if existing is not None:
        vm_domain(obj, vm).setdefault("firmware", {})["serial"] = existing
    resp, patch, err = answer(review)
    if not resp.get("allowed") or not patch:
        report(False, name + ": patched", resp)
        return
    out = patched(review, patch)
    report(vm_domain(out, vm)["firmware"]["serial"] == want, name + ": the serial", vm_domain(out, vm)["firmware"])
    again_clean(review, out, name)


def case_chassis(fx, vm, where, chassis, want):
    name = "%s, dmi-chassis on the %s, chassis %s" % (fx, where, json.dumps(chassis))
    review = load(fx)
    obj = review["request"]["object"]
    anns_of(obj, where)["imds.kubevirt.io/dmi-chassis"] = "true"
    if chassis is not None:
        vm_domain(obj, vm)["chassis"] = chassis
    resp, patch, err = answer(review)
    out = patched(review, patch)
    got = vm_domain(out, vm).get("chassis")
    report(resp.get("allowed") and got == want, name + ": chassis %s" % json.dumps(want), (got, patch))
    report(vm_domain(out, vm)["firmware"]["serial"].endswith(SERIAL), name + ": the serial is still set",
           vm_domain(out, vm).get("firmware"))
    # nothing else changed
    rest = copy.deepcopy(out)
    dom = vm_domain(rest, vm)
    dom.pop("chassis", None)
    dom.pop("firmware", None)
    orig = copy.deepcopy(obj)
    odom = vm_domain(orig, vm)
    odom.pop("chassis", None)
    odom.pop("firmware", None)
    # a VMI's CREATE also gets imds.kubevirt.io/interfaces (docs/annotations.md)
    for o in (rest, orig):
        anns = o.get("metadata", {}).get("annotations")
        if anns is not None:
            anns.pop("imds.kubevirt.io/interfaces", None)
            anns.pop("imds.kubevirt.io/cloud-init", None)
            anns.pop("imds.kubevirt.io/eviction-strategy", None)
            if not anns and "annotations" not in obj.get("metadata", {}):
                del o["metadata"]["annotations"]
    report(rest == orig, name + ": nothing else changed")
    again_clean(review, out, name)


def case_denied(fx, where, key, value, says):
    name = "%s: %s=%r denied" % (fx, key, value)
    review = load(fx)
    obj = review["request"]["object"]
    anns = anns_of(obj, where)
    if isinstance(key, tuple):
        for k, v in zip(key, value):
            if v is None:
                anns.pop(k, None)
            else:
                anns[k] = v
    else:
        anns[key] = value
    resp, patch, err = answer(review)
    msg = resp.get("status", {}).get("message", "")
    report(resp.get("allowed") is False and says in msg, name + " naming %s" % says, resp)


def pod_env(obj):
    for lst in ("initContainers", "containers"):
        for c in obj["spec"].get(lst, []):
            if c["name"] == "imds-server":
                return {e["name"]: e.get("value") for e in c["env"]}
    return None


# The serial's form: default, nocloud-net on the template, on the VM's own
# metadata, on a VMI, appended after a user's serial.
case_serial("vm-no-firmware", 1, "template", "nocloud-net", SERIAL_NET)
case_serial("vm-no-firmware", 1, "template", "nocloud", SERIAL)
case_serial("vm-own-annotation", 1, "vm", "nocloud-net", SERIAL_NET)
case_serial("vmi-standalone", 0, "vmi", "nocloud-net", SERIAL_NET)
case_serial("vm-serial", 1, "template", "nocloud-net", "USER-1 " + SERIAL_NET, existing="USER-1")
case_denied("vm-no-firmware", "template", "imds.kubevirt.io/serial-form", "nocloud-net ", "serial-form")
case_denied("vmi-standalone", "vmi", "imds.kubevirt.io/serial-form", "NoCloud", "serial-form")

# The seed's address: IPv6 for an IPv6-only VM, on its own and with the
# nocloud-net form, on the template, the VM's own metadata, a VMI; IPv4 is
# the default; anything else denied naming the annotation.
case_serial("vm-no-firmware", 1, "template", None, SERIAL6, family="IPv6")
case_serial("vm-no-firmware", 1, "template", "nocloud-net", SERIAL6_NET, family="IPv6")
case_serial("vm-own-annotation", 1, "vm", None, SERIAL6, family="IPv6")
case_serial("vmi-standalone", 0, "vmi", None, SERIAL6, family="IPv6")
case_serial("vm-serial", 1, "template", None, "USER-1 " + SERIAL6, existing="USER-1", family="IPv6")
case_serial("vm-no-firmware", 1, "template", None, SERIAL, family="IPv4")
case_denied("vm-no-firmware", "template", "imds.kubevirt.io/ip-family", "ipv6", "ip-family")
case_denied("vmi-standalone", "vmi", "imds.kubevirt.io/ip-family", "IPv6,IPv4", "ip-family")

# The chassis: added with its parent, added beside other chassis fields,
# a user's manufacturer kept, an empty one replaced.
KV = {"manufacturer": "kubevirt-imds"}
case_chassis("vm-no-firmware", 1, "template", None, KV)
case_chassis("vm-own-annotation", 1, "vm", None, KV)
case_chassis("vmi-standalone", 0, "vmi", None, KV)
case_chassis("vm-no-firmware", 1, "template", {"asset": "A-1"}, {"asset": "A-1", "manufacturer": "kubevirt-imds"})
case_chassis("vm-no-firmware", 1, "template", {"manufacturer": "ACME"}, {"manufacturer": "ACME"})
case_chassis("vmi-standalone", 0, "vmi", {"manufacturer": ""}, KV)
case_denied("vm-no-firmware", "template", "imds.kubevirt.io/dmi-chassis", "yes", "dmi-chassis")
review = load("vm-no-firmware")
resp, patch, _ = answer(review)
report(all("chassis" not in op["path"] for op in patch), "vm-no-firmware without dmi-chassis: no chassis", patch)

# The password key: to the sidecar as IMDS_PASSWORD_KEY; a key of the SSH
# keys Secret, so without that Secret or with a bad key, denied (the pod and,
# earlier, the VM).
review = load("pod-keys-meta")
anns_of(review["request"]["object"], "pod")["imds.kubevirt.io/password-key"] = "id_rsa.pub"
resp, patch, _ = answer(review)
env = pod_env(patched(review, patch)) if patch else None
report(env is not None and env.get("IMDS_PASSWORD_KEY") == "id_rsa.pub" and env.get("IMDS_SSH_KEYS_DIR"),
       "pod-keys-meta: password-key id_rsa.pub reaches the sidecar as IMDS_PASSWORD_KEY", env)
review = load("pod-keys-meta")
resp, patch, _ = answer(review)
report("IMDS_PASSWORD_KEY" not in (pod_env(patched(review, patch)) or {}),
       "pod-keys-meta without password-key: no IMDS_PASSWORD_KEY")
case_denied("pod-keys-meta", "pod", "imds.kubevirt.io/password-key", "../id_rsa", "password-key")
case_denied("pod-keys-meta", "pod", ("imds.kubevirt.io/password-key", "imds.kubevirt.io/ssh-keys-secret"),
            ("id_rsa", None), "password-key")
case_denied("vm-no-firmware", "template", "imds.kubevirt.io/password-key", "a b", "password-key")

sys.exit(1 if failed else 0)
