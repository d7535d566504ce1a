#!/usr/bin/python3
"""The webhook over the virt-launcher pods KubeVirt v1.8.4 renders
(tests/fixtures/kubevirt-v1.8.4, copied from shared/kubevirt-launcher-pods).
Prints "PASS|name" / "FAIL|name|detail" lines (tests/integration/
webhook_rendered.sh turns them into TAP) and exits 1 if a check failed.

  rendered.py pin DIR
      KubeVirt facts the webhook builds on, checked on the rendered data:
      which VMI annotations reach the pod (filterVMIAnnotationsForPod), the
      init containers KubeVirt puts first, automountServiceAccountToken,
      the Multus pod interface names (pod + sha256(network name)[:11]).
  rendered.py restore RECORDED ORIGINAL OUT
      RECORDED is an AdmissionReview a real kube-apiserver (1.20) posted for
      ORIGINAL; fields that server does not know were dropped before any
      webhook ran: put them back (printed as RESTORED|path) and write the
      review a current API server would send.
  rendered.py check REVIEW RESPONSE [--mode native|container] [--agent] [--emit-pod F]
      What the issue asks of the patch on a rendered pod: KubeVirt's
      containers keep their order, the sidecar's place, QoS unchanged, the
      token projected even where automountServiceAccountToken is false.
  rendered.py derive-migration SOURCE_POD OUT
  rendered.py derive-sa-name POD SA OUT
      Pods KubeVirt renders that shared/ has no render of (see each).
  rendered.py same-sidecar REVIEW_A RESPONSE_A REVIEW_B RESPONSE_B
      The sidecar and the volumes the webhook adds are the same for both.
  rendered.py vmi-interfaces REVIEW RESPONSE WANT [POD]
      The VMI's imds.kubevirt.io/interfaces is WANT; with POD (the rendered
      launcher pod), every secondary tap equals "tap" + the pod interface
      name KubeVirt put in k8s.v1.cni.cncf.io/networks, minus "pod".
"""
import base64
import copy
import hashlib
import json
import os
import sys

import jsonpatch
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jsonpatch_check import qos  # noqa: E402  the same QoS rules as the patch checker

failed = 0
FILTERED = ("kubectl.kubernetes.io", "kubevirt.io/storage-observed-api-version",
            "kubevirt.io/latest-observed-api-version")


def result(name, ok, detail=""):
    global failed
    if ok:
        print(f"PASS|{name}")
    else:
        failed += 1
        print(f"FAIL|{name}|{str(detail).replace(chr(10), ' ')[:600]}")
    return ok


def eq(name, want, got):
    return result(name, want == got, f"want {want!r} got {got!r}")


def load(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f) if path.endswith(".yaml") else json.load(f)


def dump(obj, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, ensure_ascii=False)


# ---- pin: KubeVirt facts on the rendered data ---------------------------

def cases(d):
    return sorted(f[:-len(".vmi.yaml")] for f in os.listdir(d) if f.endswith(".vmi.yaml"))


def pin(d):
    rendered = 0
    for c in cases(d):
        vmi = load(os.path.join(d, c + ".vmi.yaml"))
        pod_path = os.path.join(d, c + ".pod.json")
        if not os.path.exists(pod_path):
            result(f"{c}: not rendered, with KubeVirt's reason beside it",
                   os.path.exists(os.path.join(d, c + ".error.txt")))
            continue
        rendered += 1
        pod = load(pod_path)
        vanns = vmi["metadata"].get("annotations") or {}
        panns = pod["metadata"].get("annotations") or {}
        copied = {k: v for k, v in vanns.items() if not k.startswith(FILTERED)}
        eq(f"{c}: every VMI annotation but kubectl.kubernetes.io/* and the observed-api-version keys reaches the pod",
           copied, {k: panns.get(k) for k in copied})
        dropped = [k for k in vanns if k.startswith(FILTERED) and k in panns]
        eq(f"{c}: the filtered VMI annotations do not", [], dropped)
        eq(f"{c}: no pod carries the observed-api-version annotations", [],
           [k for k in panns if k.startswith(FILTERED[1:])])
        eq(f"{c}: kubevirt.io/domain is the VMI's name", vmi["metadata"]["name"], panns.get("kubevirt.io/domain"))
        spec = pod["spec"]
        inits = spec.get("initContainers") or []
        eq(f"{c}: KubeVirt's native sidecar guest-console-log is initContainers[0]",
           ("guest-console-log", "Always"), (inits[0]["name"], inits[0].get("restartPolicy")) if inits else None)
        eq(f"{c}: compute is containers[0]", "compute", spec["containers"][0]["name"])
        want_auto = c.startswith(("05-", "09-"))
        eq(f"{c}: automountServiceAccountToken", want_auto, spec.get("automountServiceAccountToken"))
        sa_vol = [v["serviceAccount"]["serviceAccountName"] for v in vmi["spec"].get("volumes") or []
                  if "serviceAccount" in v]
        eq(f"{c}: serviceAccountName from a serviceAccount volume only", sa_vol[0] if sa_vol else None,
           spec.get("serviceAccountName"))
        nets = {((n.get("multus") or {}).get("networkName") or ""): n["name"] for n in vmi["spec"].get("networks") or []}
        for att in json.loads(panns.get("k8s.v1.cni.cncf.io/networks", "[]")):
            if "interface" not in att:
                continue
            vname = nets.get(att["namespace"] + "/" + att["name"]) or nets.get(att["name"])
            eq(f"{c}: Multus interface of network {vname} is pod + sha256(name)[:11]",
               "pod" + hashlib.sha256((vname or "").encode()).hexdigest()[:11], att["interface"])
    result(f"{rendered} rendered pods read", rendered >= 10, rendered)


# ---- restore: what a 1.20 API server dropped -----------------------------

def restore_into(got, orig, path, out):
    """Adds to got what orig has and got lacks; records the paths."""
    if isinstance(orig, dict) and isinstance(got, dict):
        for k, v in orig.items():
            if k not in got:
                got[k] = copy.deepcopy(v)
                out.append(f"{path}/{k}")
            else:
                restore_into(got[k], v, f"{path}/{k}", out)
    elif isinstance(orig, list) and isinstance(got, list):
        named = all(isinstance(x, dict) and "name" in x for x in orig + got)
        for i, v in enumerate(orig):
            if named:
                match = [g for g in got if g["name"] == v["name"]]
                if match:
                    restore_into(match[0], v, f"{path}/{v['name']}", out)
            elif i < len(got):
                restore_into(got[i], v, f"{path}/{i}", out)


def restore(recorded, original, out):
    review = load(recorded)
    orig = load(original)
    obj = review["request"]["object"]
    paths = []
    restore_into(obj, orig, "", paths)
    for p in paths:
        print(f"RESTORED|{p}")
    # The fields a current API server keeps and 1.20 does not know: only
    # these may have been dropped.
    known_new = ("restartPolicy",)
    result("1.20 dropped only fields it predates (init containers' restartPolicy, 1.28)",
           all(p.rsplit("/", 1)[-1] in known_new for p in paths), paths)
    eq("the API server handed over no name (generateName only)", None, obj["metadata"].get("name"))
    result("the API server filled the namespace", bool(review["request"].get("namespace"))
           and obj["metadata"].get("namespace") == review["request"]["namespace"], obj["metadata"])
    eq("apiVersion/kind filled", ("v1", "Pod"), (obj.get("apiVersion"), obj.get("kind")))
    result("core/v1 defaults applied (dnsPolicy, schedulerName, terminationMessagePath)",
           obj["spec"].get("dnsPolicy") == "ClusterFirst" and obj["spec"].get("schedulerName") == "default-scheduler"
           and all(c.get("terminationMessagePath") for c in obj["spec"]["containers"]), obj["spec"].get("dnsPolicy"))
    eq("ServiceAccount admission set serviceAccountName", orig["spec"].get("serviceAccountName") or "default",
       obj["spec"].get("serviceAccountName"))
    kapi = [v["name"] for v in obj["spec"]["volumes"] if v["name"].startswith("kube-api-access-")]
    eq("ServiceAccount admission's kube-api-access volume exactly when automount is true",
       1 if orig["spec"].get("automountServiceAccountToken") else 0, len(kapi))
    dump(review, out)


# ---- check: the patch on a rendered pod ----------------------------------

def apply(review, response):
    resp = load(response)["response"]
    if "patch" not in resp:
        return None, resp
    patch = json.loads(base64.b64decode(resp["patch"]))
    return jsonpatch.apply_patch(review["request"]["object"], patch), resp


def names(cs):
    return [c["name"] for c in cs or []]


def check(review_path, response, mode, emit, agent=False):
    review = load(review_path)
    orig = review["request"]["object"]
    new, resp = apply(review, response)
    if not result("patched", new is not None, resp):
        return
    spec, nspec = orig["spec"], new["spec"]
    native = mode == "native"
    inits, ninits = names(spec.get("initContainers")), names(nspec.get("initContainers"))
    conts, nconts = names(spec["containers"]), names(nspec["containers"])
    if native:
        eq("KubeVirt's init containers keep their order, the sidecar last", inits + ["imds-server"], ninits)
        eq("containers unchanged", conts, nconts)
        # Why last: init containers run in order and each waits for the one
        # before it to have started (a native sidecar: started, not
        # finished); appended, KubeVirt's own steps (guest-console-log
        # first, then the container-disk copies) never wait for ours, and
        # ours has started before compute, so before the VM boots.
        result("the sidecar starts after guest-console-log and the container-disk init containers, before compute",
               ninits.index("imds-server") == len(ninits) - 1 and ninits[0] == "guest-console-log",
               ninits)
        sc = nspec["initContainers"][-1]
        eq("native sidecar", "Always", sc.get("restartPolicy"))
    elif agent:
        # --network-mode agent: imds-await holds the main containers until
        # the agent's guard is in place; after KubeVirt's own init containers.
        eq("KubeVirt's init containers keep their order, imds-await last", inits + ["imds-await"], ninits)
        eq("KubeVirt's containers keep their order (compute first), the sidecar last", conts + ["imds-server"], nconts)
        sc = nspec["containers"][-1]
    else:
        eq("init containers unchanged", inits, ninits)
        eq("KubeVirt's containers keep their order (compute first), the sidecar last", conts + ["imds-server"], nconts)
        sc = nspec["containers"][-1]
    if agent:
        eq("agent: the sidecar runs as the launcher's user (107), as the pod's own containers",
           (107, 107), (sc["securityContext"].get("runAsUser"), (spec.get("securityContext") or {}).get("runAsUser")))
    eq("QoS unchanged", qos(spec), qos(nspec))
    env = {e["name"]: e for e in sc["env"]}
    eq("IMDS_SA_NAME follows spec.serviceAccountName", "spec.serviceAccountName",
       env["IMDS_SA_NAME"]["valueFrom"]["fieldRef"]["fieldPath"])
    tok = [v for v in nspec["volumes"] if v["name"] == "imds-token"]
    ok = len(tok) == 1 and all("serviceAccountToken" in s for s in tok[0]["projected"]["sources"])
    result("the token is projected (automountServiceAccountToken %s)" % spec.get("automountServiceAccountToken"), ok, tok)
    result("the sidecar mounts no kube-api-access volume (its own token only)",
           not any(m["name"].startswith("kube-api-access-") for m in sc.get("volumeMounts", [])), sc.get("volumeMounts"))
    if emit:
        dump(new, emit)


# ---- derived pods ----------------------------------------------------------

def derive_migration(source, out, *annotations):
    """A migration target as KubeVirt v1.8.4 creates it for the source's
    VMI.  Provenance: pkg/virt-controller/services/template.go
    RenderMigrationManifest (:256-285) renders with the source pod's image
    digests (container-disk.go ExtractImageIDsFromSourcePod, :365-416) and
    net annotations from the source only for ordinal interface names (not
    these pods: GenerateFromSource, network/pod/annotations/generator.go:94);
    pkg/virt-controller/watch/migration/migration.go createTargetPod
    (:939-1020) adds the pod anti-affinity on kubevirt.io/created-by
    (:891-913), the label kubevirt.io/migrationJobUID and the annotation
    kubevirt.io/migrationJobName, host-model CPU and vendor node selectors
    from the source node (:2516-2565) and the SELinux level of the VMI
    (:860-888).  Node labels, digests and the SELinux level are
    made-up values of the right shape.  ANNOTATIONS (KEY=VALUE) are the
    VMI's, which generatePodAnnotations copies to every pod of the VMI
    (pinned above): a bridge binding on the pod network migrates only with
    kubevirt.io/allow-pod-bridge-network-live-migration on the VMI
    (pkg/network/vmispec/interface.go:76-79 at v1.8.4)."""
    pod = load(source)
    meta, spec = pod["metadata"], pod["spec"]
    for kv in annotations:
        k, _, v = kv.partition("=")
        meta["annotations"][k] = v
    digest = "sha256:" + hashlib.sha256(b"fedora:41").hexdigest()
    for c in spec.get("initContainers", []) + spec["containers"]:
        if c["image"] == "quay.io/containerdisks/fedora:41":
            c["image"] = "quay.io/containerdisks/fedora@" + digest
    vmi_uid = meta["labels"]["kubevirt.io/created-by"]
    term = {"labelSelector": {"matchLabels": {"kubevirt.io/created-by": vmi_uid}},
            "topologyKey": "kubernetes.io/hostname"}
    aff = spec.setdefault("affinity", {})
    aff.setdefault("podAntiAffinity", {}).setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
    meta["labels"]["kubevirt.io/migrationJobUID"] = "5c8f0e3a-2d1b-4f6e-9a7c-0b1d2e3f4a5b"
    meta["annotations"]["kubevirt.io/migrationJobName"] = "kubevirt-evacuation-x7k2p"
    spec["nodeSelector"].update({
        "cpu-model-migration.node.kubevirt.io/Skylake-Client-IBRS": "true",
        "cpu-feature.node.kubevirt.io/vmx": "true",
        "cpu-vendor.node.kubevirt.io/Intel": "true",
    })
    spec.setdefault("securityContext", {})["seLinuxOptions"] = {"level": "s0:c123,c456"}
    dump(pod, out)


def derive_sa_name(source, sa, out):
    """The launcher pod of a VMI with spec.serviceAccountName (KubeVirt
    v1.9.0+, commit c0cd4eb3bb; v1.8.4 refuses the field: case 08).
    Provenance: pkg/virt-controller/services/template.go at v1.9.0, :779-792:
    pod.Spec.ServiceAccountName = vmi.Spec.ServiceAccountName, and
    automountServiceAccountToken stays false (true only with a
    serviceAccount volume or Istio).  Everything else as the v1.8.4 render
    of the same VMI without the field (case 01)."""
    pod = load(source)
    pod["spec"]["serviceAccountName"] = sa
    pod["spec"]["automountServiceAccountToken"] = False
    dump(pod, out)


def same_sidecar(ra, pa, rb, pb):
    a, _ = apply(load(ra), pa)
    b, _ = apply(load(rb), pb)
    if not result("both patched", a is not None and b is not None):
        return

    def ours(p):
        cs = [c for c in (p["spec"].get("initContainers") or []) + p["spec"]["containers"] if c["name"] == "imds-server"]
        vols = [v for v in p["spec"]["volumes"] if v["name"].startswith("imds-")]
        return cs, vols

    ca, va = ours(a)
    cb, vb = ours(b)
    eq("the same sidecar (image, env, mounts, resources, securityContext)", ca, cb)
    eq("the same volumes", va, vb)
    eq("the same annotations added", sorted(set(a["metadata"]["annotations"]) - set(load(ra)["request"]["object"]["metadata"]["annotations"])),
       sorted(set(b["metadata"]["annotations"]) - set(load(rb)["request"]["object"]["metadata"]["annotations"])))


def vmi_interfaces(review_path, response, want, pod_path):
    review = load(review_path)
    new, resp = apply(review, response)
    if not result("patched", new is not None, resp):
        return
    got = new["metadata"]["annotations"].get("imds.kubevirt.io/interfaces")
    eq("imds.kubevirt.io/interfaces", want, got)
    eq("no warning", [], resp.get("warnings") or [])
    if pod_path:
        pod = load(pod_path)
        nets = json.loads(pod["metadata"]["annotations"].get("k8s.v1.cni.cncf.io/networks", "[]"))
        ifaces = [n["interface"] for n in nets if "interface" in n]
        taps = [e.split(":")[2] for e in (got or "").split(",") if e.count(":") == 2 and e.split(":")[2] != "tap0"]
        kinds = {e.split(":")[0]: e.split(":")[1] for e in (got or "").split(",") if e}
        want_taps = ["tap" + i[3:] for i in ifaces]
        # SR-IOV has a pod interface but no tap: compare the tapped ones.
        eq("every secondary tap is tap + the rendered pod's Multus interface name minus 'pod'",
           sorted(taps), sorted(t for t, n in zip(want_taps, nets) if kinds.get(
               next((x["name"] for x in review["request"]["object"]["spec"]["networks"]
                     if (x.get("multus") or {}).get("networkName") in (n["name"], n["namespace"] + "/" + n["name"])), ""))
               in ("bridge", "masquerade", "managedtap")))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "pin":
        pin(args[0])
    elif cmd == "restore":
        restore(*args)
    elif cmd == "check":
        mode, emit, agent = "native", None, False
        rest = args[2:]
        while rest:
            if rest[0] == "--agent":
                agent = True
                rest = rest[1:]
                continue
            if rest[0] == "--mode":
                mode = rest[1]
            elif rest[0] == "--emit-pod":
                emit = rest[1]
            rest = rest[2:]
        check(args[0], args[1], mode, emit, agent)
    elif cmd == "derive-migration":
        derive_migration(*args)
    elif cmd == "derive-sa-name":
        derive_sa_name(*args)
    elif cmd == "same-sidecar":
        same_sidecar(*args)
    elif cmd == "vmi-interfaces":
        vmi_interfaces(args[0], args[1], args[2], args[3] if len(args) > 3 else None)
    else:
        print(__doc__)
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
