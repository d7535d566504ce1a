#!/usr/bin/python3
"""Static check of deploy/overlays/match-conditions (the CEL path of "fail
closed"), which the API server the tests run (1.20) cannot evaluate:

  match_conditions_check.py MANUAL.yaml MATCH.yaml

Both rendered by kubectl kustomize.  TAP lines; exit 1 on a failure.  Checks:
the webhooks, their order and failure policies are deploy/overlays/manual's;
each failurePolicy: Fail webhook takes the label OR the annotation (a VM's on
its template) and no longer needs the label in its objectSelector (pods still
only virt-launchers); each Ignore webhook's condition is exactly the negation
of its Fail twin's; every map is guarded by has() before it is indexed; and
nothing else differs from the manual overlay.
"""
import re
import sys

import yaml

K = "imds.kubevirt.io/enabled"
n = 0
failed = 0


def check(name, cond, detail=""):
    global n, failed
    n += 1
    if cond:
        print("ok %d - %s" % (n, name))
    else:
        failed += 1
        print("not ok %d - %s" % (n, name))
        if detail:
            print("#   %s" % detail)


def mwc(path):
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    m = [d for d in docs if d["kind"] == "MutatingWebhookConfiguration"]
    rest = [d for d in docs if d["kind"] != "MutatingWebhookConfiguration"]
    return m[0], rest


def opted_in(path):
    # the label/annotation test on one map, each level guarded by has()
    parts = path.split(".")
    guards = ["has(%s)" % ".".join(parts[:i]) for i in range(2, len(parts) + 1)]
    return "(%s && '%s' in %s && %s['%s'] == 'true')" % (" && ".join(guards), K, path, path, K)


manual, manual_rest = mwc(sys.argv[1])
match, match_rest = mwc(sys.argv[2])
check("every other object as in deploy/overlays/manual", manual_rest == match_rest)
mw, cw = manual["webhooks"], match["webhooks"]
check("the same webhooks in the same order",
      [w["name"] for w in mw] == [w["name"] for w in cw], [w["name"] for w in cw])
byname = {w["name"]: w for w in cw}
label = opted_in("object.metadata.labels")
want = {
    "pods": label + " || " + opted_in("object.metadata.annotations"),
    "vms": label + " || " + opted_in("object.spec.template.metadata.annotations"),
    "vmis": label + " || " + opted_in("object.metadata.annotations"),
}
for kind in ("pods", "vms", "vmis"):
    fail = byname.get("opted-in.%s.imds.kubevirt.io" % kind, {})
    ign = byname.get("%s.imds.kubevirt.io" % kind, {})
    check("%s: Fail and Ignore as before" % kind,
          (fail.get("failurePolicy"), ign.get("failurePolicy")) == ("Fail", "Ignore"))
    fc = fail.get("matchConditions", [])
    ic = ign.get("matchConditions", [])
    check("%s: the Fail webhook takes the label or the annotation" % kind,
          [c.get("name") for c in fc] == ["opted-in"] and fc[0]["expression"] == want[kind],
          fc)
    check("%s: the Ignore webhook takes exactly the others" % kind,
          [c.get("name") for c in ic] == ["not-opted-in"] and
          ic[0]["expression"] == "!(%s)" % want[kind], ic)
    sel = fail.get("objectSelector") or {}
    check("%s: the Fail webhook's objectSelector no longer needs the label" % kind,
          K not in yaml.safe_dump(sel) and
          (sel == {"matchLabels": {"kubevirt.io": "virt-launcher"}} if kind == "pods" else sel == {}),
          sel)
    # every index into a map is preceded by has() on that map
    for e in (c["expression"] for c in fc + ic):
        for m in re.finditer(r"([a-z.]+)\['", e):
            check("%s: %s is guarded by has()" % (kind, m.group(1)),
                  "has(%s)" % m.group(1) in e[:m.start()])
    # nothing else changed on the pair
    for w in (fail, ign):
        a = dict(w)
        b = dict(next(x for x in mw if x["name"] == w["name"]))
        for d in (a, b):
            d.pop("matchConditions", None)
            d.pop("objectSelector", None)
        check("%s: otherwise as in the manual overlay" % w["name"], a == b)
upd = byname.get("vm-updates.imds.kubevirt.io")
check("vm-updates: unchanged (fails open, no condition)",
      upd == next(x for x in mw if x["name"] == "vm-updates.imds.kubevirt.io"))
print("1..%d" % n)
sys.exit(1 if failed else 0)
