#!/usr/bin/python3
"""Check a webhook answer against the review it answered.

Applies the base64 JSON Patch with python3-jsonpatch (a real RFC 6902
implementation, not ours) and checks the patched object field by field
against rules derived here, independently of the C code: the sidecar
appears once, compute stays first, env, mounts, volumes, capabilities,
QoS, the serial rules; every data file is followed from its env variable
through the mount and the volume to its source, the way kubelet would, and
user-data must arrive byte-exact.

  jsonpatch_check.py REVIEW RESPONSE --expect patched|skipped|denied
        [--mode native|container] [--network-mode pod|agent] [--image IMG] [--vendor-data-file F]
        [--deny-names ANNOTATION] [--emit-review OUT]
        [--warn SUBSTRING]... [--binding-plugin NAME=KIND]...

Prints one line per check, "PASS|name" or "FAIL|name|detail";
tests/integration/webhook_patch.sh turns them into TAP.  Exit 1 if any
check failed.
"""
import argparse
import base64
import binascii
import copy
import hashlib
import json
import re
import sys
from fractions import Fraction

import jsonpatch

SERIAL = "ds=nocloud;s=http://169.254.169.254/v1/;dsmode=net"
ANN = "imds.kubevirt.io/"
TOKEN_DIR = "/var/run/secrets/tokens"
PODINFO = "/var/run/imds/podinfo"
SECRET_DIR = "/var/run/imds/user-data-secret"
CM_DIR = "/var/run/imds/user-data-configmap"
SSH_DIR = "/var/run/imds/ssh-keys"
STATE_DIR = "/var/run/imds/state"
CAPS = {"add": ["NET_ADMIN", "NET_RAW", "NET_BIND_SERVICE"], "drop": ["ALL"]}
SECURITY = {"allowPrivilegeEscalation": False, "capabilities": CAPS, "privileged": False,
            "readOnlyRootFilesystem": True, "runAsNonRoot": False, "runAsUser": 0}
# --network-mode agent: the launcher's user (107), nothing added, Pod Security restricted
SECURITY_AGENT = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "privileged": False,
                  "readOnlyRootFilesystem": True, "runAsGroup": 107, "runAsNonRoot": True, "runAsUser": 107,
                  "seccompProfile": {"type": "RuntimeDefault"}}
NODE_DIR = "/run/imds-node"

failed = 0


def result(name, ok, detail=""):
    global failed
    if ok:
        print(f"PASS|{name}")
    else:
        failed += 1
        detail = str(detail).replace("\n", " ")[:600]
        print(f"FAIL|{name}|{detail}")
    return ok


def eq(name, want, got):
    return result(name, want == got, f"want {want!r} got {got!r}")


# ---- Kubernetes resource quantities and QoS (ComputePodQOS) -------------

SUFFIX = {"": 1, "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
          "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
          "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def quantity(s):
    s = str(s)
    i = 0
    while i < len(s) and (s[i].isdigit() or s[i] in "+-."):
        i += 1
    num, suf = s[:i], s[i:]
    if suf in SUFFIX:
        return Fraction(num) * SUFFIX[suf]
    if suf[:1] in "eE":
        return Fraction(num) * Fraction(10) ** int(suf[1:])
    raise ValueError(s)


def qos(spec):
    if spec.get("resources"):
        return "pod-level"
    req, lim, guaranteed = {}, {}, True
    for c in spec.get("containers", []) + (spec.get("initContainers") or []):
        r = c.get("resources") or {}
        for name, q in (r.get("requests") or {}).items():
            if name in ("cpu", "memory") and quantity(q) > 0:
                req[name] = req.get(name, 0) + quantity(q)
        found = set()
        for name, q in (r.get("limits") or {}).items():
            if name in ("cpu", "memory") and quantity(q) > 0:
                found.add(name)
                lim[name] = lim.get(name, 0) + quantity(q)
        if found != {"cpu", "memory"}:
            guaranteed = False
    if not req and not lim:
        return "BestEffort"
    if guaranteed and all(lim.get(k) == v for k, v in req.items()) and len(req) == len(lim):
        return "Guaranteed"
    return "Burstable"


def audience_dir(aud):
    """src/core/audience.h: bytes outside [A-Za-z0-9._-] and a leading '.'
    percent-encoded; "token" (the default token's file) written %74oken."""
    out = ""
    for i, b in enumerate(aud.encode()):
        c = chr(b)
        plain = (c.isascii() and c.isalnum()) or c in "_-" or (c == "." and i > 0)
        out += c if plain else "%%%02X" % b
    return "%74oken" if out == "token" else out


# ---- imds.kubevirt.io/interfaces, derived here from KubeVirt's rules ------
# (pkg/network/namescheme: pod + sha256(network name)[:11];
#  pkg/network/link/names.go: tap + that minus "pod", tap0 for the primary)

PLUGINS = {"passt": "passt", "macvtap": "tap", "l2bridge": "managedtap"}
METHODS = {"masquerade": "masquerade", "bridge": "bridge", "sriov": "sriov", "passtBinding": "passt",
           "binding": None, "slirp": "unknown", "macvtap": "unknown", "passt": "unknown"}


def interfaces_annotation(spec, plugins):
    """The annotation's text, or None when KubeVirt's default NIC is still to come."""
    dev = (spec.get("domain") or {}).get("devices") or {}
    ifaces, nets = dev.get("interfaces") or [], spec.get("networks") or []
    if not ifaces and not nets and dev.get("autoattachPodInterface", True) is not False:
        return None
    if len(ifaces) > 64:
        return None
    out = []
    for named in (True, False):
        out = []
        for i, itf in enumerate(ifaces):
            name = itf.get("name", "")
            present = [m for m in METHODS if itf.get(m) is not None]
            kind = "unknown"
            if len(present) == 1:
                kind = METHODS[present[0]] or plugins.get((itf["binding"] or {}).get("name"), "unknown")
            entry = (name if named and re.fullmatch(r"[A-Za-z0-9._-]{1,63}", name) else f"#{i}") + ":" + kind
            if kind in ("masquerade", "bridge", "managedtap"):
                net = [n for n in nets if n.get("name") == name]
                if not net:
                    entry = entry.rsplit(":", 1)[0] + ":unknown"
                else:
                    multus = net[0].get("multus")
                    if multus is not None and not multus.get("default", False):
                        entry += ":tap" + hashlib.sha256(name.encode()).hexdigest()[:11]
                    else:
                        entry += ":tap0"
            out.append(entry)
        if len(",".join(out)) <= 4096:
            break
    return ",".join(out)


# ---- following a file the way kubelet lays it out -----------------------

def resolve(pod, container, path):
    """(volume, relative path) that serves path in container."""
    best = None
    for m in container.get("volumeMounts", []):
        mp = m["mountPath"].rstrip("/")
        if path.startswith(mp + "/") and (best is None or len(mp) > len(best[0])):
            best = (mp, m)
    if not best:
        return None, None
    vols = [v for v in pod["spec"].get("volumes", []) if v["name"] == best[1]["name"]]
    if len(vols) != 1:
        return None, None
    return vols[0], path[len(best[0]) + 1:]


def annotation_of(field_path):
    pre, post = "metadata.annotations['", "']"
    if field_path.startswith(pre) and field_path.endswith(post):
        return field_path[len(pre):-len(post)]
    return None


def data_source(pod, container, env_value):
    """What a data file setting (a:b candidates) reads: a list of
    ("annotation", key) / ("secret", name, key) / ("configmap", name, key)."""
    out = []
    for path in env_value.split(":"):
        vol, rel = resolve(pod, container, path)
        if vol is None:
            out.append(("unmounted", path))
        elif "downwardAPI" in vol:
            items = [i for i in vol["downwardAPI"]["items"] if i["path"] == rel]
            out.append(("annotation", annotation_of(items[0]["fieldRef"]["fieldPath"])) if len(items) == 1
                       else ("missing", path))
        elif "secret" in vol:
            out.append(("secret", vol["secret"]["secretName"], rel))
        elif "configMap" in vol:
            items = [i for i in vol["configMap"].get("items", []) if i["path"] == rel]
            out.append(("configmap", vol["configMap"]["name"], items[0]["key"] if items else rel))
        else:
            out.append(("other", path))
    return out


# ---- pods ---------------------------------------------------------------

def check_pod(args, orig, new):
    anns = orig["metadata"].get("annotations") or {}
    nanns = new["metadata"].get("annotations") or {}
    spec, nspec = orig["spec"], new["spec"]
    native = args.mode == "native"
    agent = args.network_mode == "agent"

    # Only annotations, volumes and the container list change.
    a, b = copy.deepcopy(orig), copy.deepcopy(new)
    for o in (a, b):
        o["metadata"].pop("annotations", None)
        for k in ("volumes", "initContainers", "containers"):
            o["spec"].pop(k, None)
    eq("nothing else changed", a, b)

    vendor = None
    if args.vendor_data_file:
        with open(args.vendor_data_file, encoding="utf-8") as f:
            vendor = f.read() or None
    want = dict(anns)
    want[ANN + "injected"] = "true"
    if vendor is not None and ANN + "vendor-data" not in anns:
        want[ANN + "vendor-data"] = vendor
    eq("annotations: the pod's own kept, injected (and cluster vendor-data) added", want, nanns)

    all_c = nspec["containers"] + (nspec.get("initContainers") or [])
    eq("imds-server appears once", 1, sum(c["name"] == "imds-server" for c in all_c))
    eq("container names unique", len(all_c), len({c["name"] for c in all_c}))
    eq("compute is still containers[0]", spec["containers"][0], nspec["containers"][0])
    if native:
        eq("containers unchanged (native sidecar)", spec["containers"], nspec["containers"])
        eq("init containers kept in order, sidecar appended", spec.get("initContainers") or [],
           nspec["initContainers"][:-1])
        c = nspec["initContainers"][-1]
        eq("sidecar is a native sidecar (restartPolicy Always)", "Always", c.get("restartPolicy"))
    elif agent:
        # main containers do not wait for one another's probes: an init
        # container holds them until the agent's guard is in place
        eq("init containers kept in order, imds-await appended", spec.get("initContainers") or [],
           nspec["initContainers"][:-1])
        eq("containers kept in order, sidecar appended", spec["containers"], nspec["containers"][:-1])
        c = nspec["containers"][-1]
        w = dict(nspec["initContainers"][-1])
        eq("imds-await: a classic init container running imds-server await",
           ("imds-await", ["/imds-server", "await"], None), (w.get("name"), w.get("command"), w.get("restartPolicy")))
        eq("imds-await: the sidecar in all but name and command",
           {k: v for k, v in c.items() if k not in ("name", "command")},
           {k: v for k, v in w.items() if k not in ("name", "command")})
    else:
        eq("init containers unchanged (plain container)", spec.get("initContainers"), nspec.get("initContainers"))
        eq("containers kept in order, sidecar appended", spec["containers"], nspec["containers"][:-1])
        c = nspec["containers"][-1]
        eq("plain container has no restartPolicy", None, c.get("restartPolicy"))
    eq("sidecar name", "imds-server", c["name"])
    eq("sidecar image", args.image, c["image"])
    eq("sidecar command", ["/imds-server", "run"], c["command"])
    if agent:
        eq("securityContext: UID 107, no capability, RuntimeDefault seccomp, read-only root",
           SECURITY_AGENT, c.get("securityContext"))
        eq("startupProbe: imds-server probe (native sidecar only)",
           {"exec": {"command": ["/imds-server", "probe"]}, "periodSeconds": 1, "failureThreshold": 120,
            "timeoutSeconds": 2} if native else None, c.get("startupProbe"))
    else:
        eq("securityContext: root with NET_ADMIN/NET_RAW/NET_BIND_SERVICE only, read-only root",
           SECURITY, c.get("securityContext"))
        eq("no startupProbe", None, c.get("startupProbe"))

    nvols = nspec.get("volumes") or []
    eq("volumes kept in order", spec.get("volumes") or [], nvols[:len(spec.get("volumes") or [])])
    eq("volume names unique", len(nvols), len({v["name"] for v in nvols}))
    for m in c.get("volumeMounts", []):
        if m["mountPath"] == STATE_DIR:
            # the one writable mount: an emptyDir of the pod, kept across restarts of the sidecar
            vol = next((v for v in nvols if v["name"] == m["name"]), {})
            eq("state: a writable emptyDir of 1Mi at " + STATE_DIR,
               (None, {"sizeLimit": "1Mi"}), (m.get("readOnly"), vol.get("emptyDir")))
            continue
        if m["mountPath"] == NODE_DIR and agent:
            # the agent's socket folder: disk-backed (no medium), named as the agent looks for it
            vol = next((v for v in nvols if v["name"] == m["name"]), {})
            eq("agent: the writable emptyDir imds-node (1Mi, on disk) at " + NODE_DIR,
               ("imds-node", None, {"sizeLimit": "1Mi"}), (m["name"], m.get("readOnly"), vol.get("emptyDir")))
            continue
        result(f"mount {m['mountPath']} is read-only and names a volume",
               m.get("readOnly") is True and any(v["name"] == m["name"] for v in nvols), m)

    env = {}
    for e in c.get("env", []):
        result(f"env {e['name']} set once", e["name"] not in env, e)
        env[e["name"]] = e.get("value", e.get("valueFrom"))

    def field(p):
        return {"fieldRef": {"apiVersion": "v1", "fieldPath": p}}

    vm_name = anns.get("kubevirt.io/domain") or orig["metadata"]["labels"].get("vm.kubevirt.io/name")
    want_env = {
        "IMDS_NAMESPACE": field("metadata.namespace"),
        "IMDS_POD_NAME": field("metadata.name"),
        "IMDS_SA_NAME": field("spec.serviceAccountName"),
        "IMDS_VM_NAME": vm_name,
        "IMDS_TOKEN_PATH": TOKEN_DIR + "/token",
        "IMDS_VENDOR_DATA_FILE": PODINFO + "/vendor-data",
        "IMDS_NETWORK_CONFIG_FILE": PODINFO + "/network-config",
        "IMDS_NETWORK_STATUS_FILE": PODINFO + "/network-status",
        "IMDS_STATE_DIR": STATE_DIR,
        "IMDS_LIFECYCLE_DIR": PODINFO,
        "IMDS_AVAILABILITY_ZONE": field("metadata.labels['topology.kubernetes.io/zone']"),
        "IMDS_REGION": field("metadata.labels['topology.kubernetes.io/region']"),
    }
    if agent:
        want_env["IMDS_NET_MODE"] = "agent"
    result("agent: the imds-node folder mounted" if agent else "pod mode: no imds-node folder",
           any(m["mountPath"] == NODE_DIR for m in c.get("volumeMounts", [])) == agent
           and any(v["name"] == "imds-node" for v in nvols) == agent, c.get("volumeMounts"))
    if ANN + "ssh-keys-secret" in anns:
        want_env["IMDS_SSH_KEYS_DIR"] = SSH_DIR
    if ANN + "meta-data" in anns:
        want_env["IMDS_META_DATA_FILE"] = PODINFO + "/meta-data"
    if ANN + "user-data-secret" in anns:
        want_env["IMDS_USER_DATA_FILE"] = SECRET_DIR + "/userdata:" + SECRET_DIR + "/user-data"
    elif ANN + "user-data-configmap" in anns:
        want_env["IMDS_USER_DATA_FILE"] = CM_DIR + "/user-data"
    else:
        want_env["IMDS_USER_DATA_FILE"] = PODINFO + "/user-data"
    for k, n in ((ANN + "instance-id", "IMDS_INSTANCE_ID"), (ANN + "bridge-name", "IMDS_BRIDGE_NAME"),
                 (ANN + "hop-limit", "IMDS_HOP_LIMIT"), (ANN + "session", "IMDS_SESSION"),
                 (ANN + "interfaces", "IMDS_INTERFACES")):
        if k in anns:
            want_env[n] = anns[k]
    eq("env", want_env, env)

    # Data files, followed through mount and volume to their source.
    if ANN + "user-data-secret" in anns:
        name = anns[ANN + "user-data-secret"]
        eq("user-data: the whole Secret, key userdata or user-data (Secret wins)",
           [("secret", name, "userdata"), ("secret", name, "user-data")],
           data_source(new, c, env["IMDS_USER_DATA_FILE"]))
        vol = resolve(new, c, SECRET_DIR + "/userdata")[0]
        eq("user-data Secret volume is not optional and has no items", {"secretName": name}, vol["secret"])
    elif ANN + "user-data-configmap" in anns:
        name = anns[ANN + "user-data-configmap"]
        eq("user-data: ConfigMap key user-data", [("configmap", name, "user-data")],
           data_source(new, c, env["IMDS_USER_DATA_FILE"]))
    else:
        src = data_source(new, c, env["IMDS_USER_DATA_FILE"])
        ok = src == [("annotation", ANN + "user-data")]
        result("user-data: downward API of imds.kubevirt.io/user-data", ok, src)
        if ok:
            # What kubelet would write into the file: the patched pod's value.
            got = nanns.get(ANN + "user-data", "").encode("utf-8")
            wantb = anns.get(ANN + "user-data", "").encode("utf-8")
            result(f"user-data arrives byte-exact ({len(wantb)} bytes)", got == wantb,
                   f"{len(got)} bytes vs {len(wantb)}")
    for var, key in (("IMDS_VENDOR_DATA_FILE", "vendor-data"), ("IMDS_NETWORK_CONFIG_FILE", "network-config")):
        src = data_source(new, c, env[var])
        if eq(f"{key}: downward API of imds.kubevirt.io/{key}", [("annotation", ANN + key)], src):
            eq(f"{key}: file content", want.get(ANN + key, ""), nanns.get(ANN + key, ""))
    if ANN + "ssh-keys-secret" in anns:
        vol, rel = resolve(new, c, SSH_DIR + "/x")
        eq("ssh keys: the whole Secret, read-only, not optional",
           {"secretName": anns[ANN + "ssh-keys-secret"]}, (vol or {}).get("secret"))
    if ANN + "meta-data" in anns:
        src = data_source(new, c, env["IMDS_META_DATA_FILE"])
        if eq("meta-data: downward API of imds.kubevirt.io/meta-data", [("annotation", ANN + "meta-data")], src):
            eq("meta-data: file content", want.get(ANN + "meta-data", ""), nanns.get(ANN + "meta-data", ""))
    eq("network-status: downward API of Multus' annotation (never required)",
       [("annotation", "k8s.v1.cni.cncf.io/network-status")], data_source(new, c, env["IMDS_NETWORK_STATUS_FILE"]))
    # The lifecycle events' sources (issue 31): KubeVirt's annotations and label, ours.
    for name, fp in (("eviction-in-progress", "metadata.annotations['descheduler.alpha.kubernetes.io/eviction-in-progress']"),
                     ("eviction-strategy", "metadata.annotations['imds.kubevirt.io/eviction-strategy']"),
                     ("migration-job-uid", "metadata.labels['kubevirt.io/migrationJobUID']"),
                     ("migration-target-ready", "metadata.annotations['kubevirt.io/migration-target-ready-timestamp']"),
                     ("maintenance", "metadata.annotations['imds.kubevirt.io/maintenance']")):
        vol, rel = resolve(new, c, env["IMDS_LIFECYCLE_DIR"] + "/" + name)
        items = [i for i in ((vol or {}).get("downwardAPI") or {}).get("items", []) if i["path"] == rel]
        eq(f"lifecycle: {name} from the downward API of {fp}", [fp],
           [i["fieldRef"]["fieldPath"] for i in items])

    # Tokens.
    vol, rel = resolve(new, c, env["IMDS_TOKEN_PATH"])
    if result("token path is a projected volume", vol is not None and "projected" in vol, vol):
        srcs = [s["serviceAccountToken"] for s in vol["projected"]["sources"]]
        result("projected volume holds only serviceAccountToken sources", len(srcs) == len(vol["projected"]["sources"]))
        exp = int(anns.get(ANN + "token-expiration", "3600"))
        auds = []
        for x in anns.get(ANN + "token-audience", "").split(","):
            x = x.strip()
            if x and x not in auds:
                auds.append(x)
        want_src = [{"path": "token", "expirationSeconds": exp, **({"audience": auds[0]} if auds else {})}]
        want_src += [{"path": audience_dir(x) + "/token", "audience": x, "expirationSeconds": exp} for x in auds]
        eq("token sources: default path, then one directory per audience", want_src, srcs)
        eq("token file", "token", rel)

    # Resources: a Guaranteed pod stays Guaranteed.
    before, after = qos(spec), qos(nspec)
    if before == "pod-level":
        eq("pod-level resources: the sidecar sets none", None, c.get("resources"))
    elif before == "Guaranteed":
        r = {"cpu": args.cpu, "memory": args.memory}
        eq("Guaranteed: sidecar requests == limits", {"requests": r, "limits": r}, c.get("resources"))
        eq("QoS stays Guaranteed", "Guaranteed", after)
    else:
        eq("not Guaranteed: requests and a memory limit",
           {"requests": {"cpu": args.cpu, "memory": args.memory}, "limits": {"memory": args.memory_limit}},
           c.get("resources"))
        eq("QoS stays Burstable", "Burstable", after)


# ---- VMs and VMIs -------------------------------------------------------

def check_serial(orig, new, is_vm, plugins):
    def domain(o):
        s = o.get("spec") or {}
        if is_vm:
            s = (s.get("template") or {}).get("spec") or {}
        return s.get("domain") or {}

    old = (domain(orig).get("firmware") or {}).get("serial") or ""
    got = (domain(new).get("firmware") or {}).get("serial")
    want = SERIAL if not old else old + " " + SERIAL
    eq("firmware.serial", want, got)
    result("the user's serial survives in front", got.startswith(old), got)
    a, b = copy.deepcopy(orig), copy.deepcopy(new)
    if not is_vm:
        want_if = interfaces_annotation(orig.get("spec") or {}, plugins)
        got_if = ((new.get("metadata") or {}).get("annotations") or {}).get(ANN + "interfaces")
        if want_if is None:
            eq("imds.kubevirt.io/interfaces: left for after KubeVirt's default NIC",
               ((orig.get("metadata") or {}).get("annotations") or {}).get(ANN + "interfaces"), got_if)
        else:
            eq("imds.kubevirt.io/interfaces", want_if, got_if)
        # spec.evictionStrategy recorded for the sidecar (issue 31), when KubeVirt knows it.
        es = (orig.get("spec") or {}).get("evictionStrategy")
        es = es if es in ("LiveMigrate", "LiveMigrateIfPossible", "External", "None") else None
        eq("imds.kubevirt.io/eviction-strategy: spec.evictionStrategy", es,
           ((new.get("metadata") or {}).get("annotations") or {}).get(ANN + "eviction-strategy"))
        # imds.kubevirt.io/cloud-init (issue 30): KubeVirt's identity of
        # this VMI, a JSON object of strings.
        ci = json.loads(((new.get("metadata") or {}).get("annotations") or {}).get(ANN + "cloud-init", "null"))
        result("imds.kubevirt.io/cloud-init: a JSON object of strings",
               isinstance(ci, dict) and all(isinstance(v, str) for v in ci.values()), ci)
        eq("imds.kubevirt.io/cloud-init: the firmware UUID",
           (domain(orig).get("firmware") or {}).get("uuid"), (ci or {}).get("uuid"))
        for o in (a, b):
            ((o.get("metadata") or {}).get("annotations") or {}).pop(ANN + "interfaces", None)
            ((o.get("metadata") or {}).get("annotations") or {}).pop(ANN + "eviction-strategy", None)
            ((o.get("metadata") or {}).get("annotations") or {}).pop(ANN + "cloud-init", None)
    for o in (a, b):
        fw = domain(o).get("firmware")
        if fw is not None:
            fw.pop("serial", None)
            if not fw and not domain(orig).get("firmware"):
                domain(o).pop("firmware")
    eq("nothing else changed", a, b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("review")
    ap.add_argument("response")
    ap.add_argument("--expect", required=True, choices=["patched", "skipped", "denied"])
    ap.add_argument("--mode", default="native", choices=["native", "container"])
    ap.add_argument("--network-mode", default="pod", choices=["pod", "agent"])
    ap.add_argument("--image", default="registry.example/kubevirt-imds/imds-server:test")
    ap.add_argument("--vendor-data-file")
    ap.add_argument("--cpu", default="10m")
    ap.add_argument("--memory", default="16Mi")
    ap.add_argument("--memory-limit", default="32Mi")
    ap.add_argument("--deny-names")
    ap.add_argument("--emit-review")
    ap.add_argument("--warn", action="append", default=[])
    ap.add_argument("--binding-plugin", action="append", default=[])
    args = ap.parse_args()
    plugins = dict(PLUGINS)
    for bp in args.binding_plugin:
        plugins[bp.split("=", 1)[0]] = bp.split("=", 1)[1]

    with open(args.review, encoding="utf-8") as f:
        review = json.load(f)
    with open(args.response, "rb") as f:
        raw = f.read()
    try:
        resp = json.loads(raw)
    except ValueError as e:
        result("response is JSON", False, e)
        return 1
    eq("response apiVersion", "admission.k8s.io/v1", resp.get("apiVersion"))
    eq("response kind", "AdmissionReview", resp.get("kind"))
    r = resp.get("response") or {}
    eq("response echoes request.uid", review["request"]["uid"], r.get("uid"))
    req = review["request"]
    obj = req["object"]

    warns = r.get("warnings") or []
    eq(f"{len(args.warn)} admission warning(s)", len(args.warn), len(warns))
    for w in args.warn:
        result(f"a warning says: {w}", any(w in x for x in warns), warns)
    result("warnings are short printable ASCII", all(len(x) < 256 and x.isprintable() and x.isascii()
                                                      for x in warns), warns)
    if args.expect == "denied":
        eq("allowed is false", False, r.get("allowed"))
        st = r.get("status") or {}
        eq("status.code", 400, st.get("code"))
        result(f"status.message names {args.deny_names}", args.deny_names in st.get("message", ""), st)
        result("a denial carries no patch", "patch" not in r and "patchType" not in r, r)
        return 1 if failed else 0
    eq("allowed is true", True, r.get("allowed"))
    if args.expect == "skipped":
        result("no patch", "patch" not in r and "patchType" not in r, r)
        return 1 if failed else 0

    eq("patchType", "JSONPatch", r.get("patchType"))
    try:
        ptext = base64.b64decode(r.get("patch", ""), validate=True)
        ok = base64.b64encode(ptext).decode() == r.get("patch")
        result("patch is standard padded base64", ok)
        patch = json.loads(ptext)
    except (binascii.Error, ValueError) as e:
        result("patch decodes", False, e)
        return 1
    result("patch ops are add/replace with escaped pointers",
           all(p["op"] in ("add", "replace") and p["path"].startswith("/") for p in patch), patch)
    try:
        new = jsonpatch.apply_patch(obj, patch)
    except jsonpatch.JsonPatchException as e:
        result("python3-jsonpatch applies the patch", False, e)
        return 1
    result("python3-jsonpatch applies the patch", True)

    kind = req["kind"]["kind"]
    try:
        if kind == "Pod":
            check_pod(args, obj, new)
        else:
            check_serial(obj, new, kind == "VirtualMachine", plugins)
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as e:
        # A missing field is a failed check, not a crashed checker.
        result("patched object has the expected shape", False, f"{type(e).__name__}: {e}")

    if args.emit_review:
        again = copy.deepcopy(review)
        again["request"]["uid"] = req["uid"][:-4] + "beef"
        again["request"]["object"] = new
        with open(args.emit_review, "w", encoding="utf-8") as f:
            json.dump(again, f, ensure_ascii=False)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
