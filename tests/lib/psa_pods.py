#!/usr/bin/python3
"""Pods to and from the webhook, for tests/integration/webhook_psa.sh.

  psa_pods.py review POD.json OUT.json [--plain|--seccomp]
      the AdmissionReview (CREATE, namespace demo, as virt-controller's
      create reaches a webhook) of the pod; --seccomp first sets the pod's
      securityContext.seccompProfile to RuntimeDefault (what KubeVirt's CR
      setting seccompConfiguration.virtualMachineInstanceProfile does)
  psa_pods.py pod POD.json OUT.json [--plain|--seccomp]
      the pod alone, with --seccomp as above
  psa_pods.py apply REVIEW.json RESPONSE.json OUT.json
      the answer's JSON Patch applied (python3-jsonpatch) to the review's
      object; exits 1 with a reason when the answer is no patch
"""
import base64
import json
import sys

import jsonpatch


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def save(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, sort_keys=True)


def pod_of(path, seccomp):
    pod = load(path)
    if seccomp:
        pod.setdefault("spec", {}).setdefault("securityContext", {})["seccompProfile"] = {"type": "RuntimeDefault"}
    pod.setdefault("apiVersion", "v1")
    pod.setdefault("kind", "Pod")
    pod.setdefault("metadata", {}).setdefault("namespace", "demo")
    return pod


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd in ("review", "pod"):
        if any(a not in ("--plain", "--seccomp") for a in args[2:]):
            sys.exit(__doc__)
        pod = pod_of(args[0], "--seccomp" in args[2:])
        if cmd == "pod":
            save(args[1], pod)
            return 0
        save(args[1], {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "5b1c7e2a-0d3f-4c59-9a1e-77f0c3a2b901",
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
                "requestResource": {"group": "", "version": "v1", "resource": "pods"},
                "namespace": "demo",
                "operation": "CREATE",
                "userInfo": {"username": "system:serviceaccount:kubevirt:kubevirt-controller"},
                "object": pod,
                "oldObject": None,
                "dryRun": False,
                "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
            },
        })
        return 0
    if cmd == "apply":
        review, resp = load(args[0]), load(args[1])
        r = resp.get("response") or {}
        if r.get("uid") != review["request"]["uid"] or not r.get("allowed"):
            print(f"not allowed, or another uid: {json.dumps(r)[:400]}", file=sys.stderr)
            return 1
        if r.get("patchType") != "JSONPatch" or not r.get("patch"):
            print(f"no JSON Patch in the answer: {json.dumps(r)[:400]}", file=sys.stderr)
            return 1
        ops = json.loads(base64.b64decode(r["patch"]))
        save(args[2], jsonpatch.apply_patch(review["request"]["object"], ops))
        return 0
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
