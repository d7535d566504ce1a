// Offline validation of Kubernetes manifests with kubernetes-models (the
// OpenAPI schemas of Kubernetes, compiled to JSON-schema validators) and
// js-yaml. Used by tests/integration/deploy_manifests.sh.
//
//   node tests/lib/validate_manifests.mjs --modules DIR [--policy base|cert-manager|manual|node|pod-mode]
//        [--examples] [--label NAME] FILE|- ...
//
// --modules   the node_modules directory (installed into a cache, never the repo)
// --policy    also assert the design of deploy/ (docs/webhook.md) on the stream;
//             base: the webhook alone, its default network mode (agent);
//             cert-manager, manual: the default installs, that and the node
//             agent; node: deploy/node alone (the agent, docs/operations.md);
//             pod-mode: deploy/overlays/pod-mode (the webhook with
//             --network-mode=pod, no agent)
// --examples  the files are deploy/test/ example VMs: KubeVirt objects must
//             opt in and their Kubernetes-native parts must validate
// One line per object: "ok <label> Kind/name" or "not ok <label> ...: why";
// exit status 1 when anything failed, 2 on usage errors.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import path from "node:path";

const argv = process.argv.slice(2);
let modules = "";
let policy = "";
let examples = false;
let label = "";
const files = [];
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === "--modules") modules = argv[++i];
  else if (a === "--policy") policy = argv[++i];
  else if (a === "--examples") examples = true;
  else if (a === "--label") label = argv[++i];
  else files.push(a);
}
if (!modules || files.length === 0) {
  console.error("usage: validate_manifests.mjs --modules DIR [--policy P] [--examples] FILE|- ...");
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(modules), "noop.js"));
const yaml = require("js-yaml");
const { ObjectMeta } = require("@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta");

let failed = 0;
let count = 0;
function pass(what) {
  count++;
  console.log(`ok ${label}${what}`);
}
function fail(what, why) {
  count++;
  failed++;
  console.log(`not ok ${label}${what}: ${why}`);
}

// apiVersion -> module path of its models.
function modelFor(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  let mod;
  if (group === "") mod = `kubernetes-models/${version}`;
  else if (group === "cert-manager.io" || group.endsWith(".cert-manager.io"))
    mod = `@kubernetes-models/cert-manager/${group}/${version}`;
  else mod = `kubernetes-models/${group}/${version}`;
  try {
    const m = require(mod);
    return m[kind] || null;
  } catch {
    return null;
  }
}

function validateMeta(meta, where) {
  new ObjectMeta(meta).validate();
  if (!meta || !meta.name) throw new Error(`${where}: no metadata.name`);
}

const ANN = "imds.kubevirt.io/";
const KNOWN_ANN = new Set([
  "enabled", "user-data", "user-data-secret", "user-data-configmap", "vendor-data",
  "network-config", "instance-id", "token-audience", "token-expiration", "bridge-name",
  "injected",
]);

// The injection contract (docs/webhook.md), as the webhook enforces it.
function checkImdsAnnotations(ann, where) {
  if (!ann || ann[ANN + "enabled"] !== "true")
    throw new Error(`${where}: no annotation ${ANN}enabled: "true"`);
  for (const [k, v] of Object.entries(ann)) {
    if (typeof v !== "string") throw new Error(`${where}: annotation ${k} is not a string`);
    if (!k.startsWith(ANN)) continue;
    const short = k.slice(ANN.length);
    if (!KNOWN_ANN.has(short)) throw new Error(`${where}: unknown annotation ${k}`);
    if (short === "injected") throw new Error(`${where}: ${k} is written by the webhook only`);
    if (short === "token-expiration") {
      const n = Number(v);
      if (!/^[0-9]+$/.test(v) || n < 600 || n > 86400)
        throw new Error(`${where}: ${k} must be seconds in 600..86400, not ${v}`);
    }
  }
  const refs = ["user-data", "user-data-secret", "user-data-configmap"].filter((s) => ANN + s in ann);
  if (refs.length > 1) throw new Error(`${where}: more than one user-data source: ${refs.join(", ")}`);
}

function kubevirtObject(obj, docs) {
  const meta = obj.metadata || {};
  validateMeta(meta, "metadata");
  let ann;
  if (obj.kind === "VirtualMachine") {
    const tmeta = obj.spec?.template?.metadata;
    if (!tmeta) throw new Error("no spec.template.metadata");
    new ObjectMeta(tmeta).validate();
    if (!obj.spec.template.spec?.domain) throw new Error("no spec.template.spec.domain");
    ann = tmeta.annotations;
  } else if (obj.kind === "VirtualMachineInstance") {
    if (!obj.spec?.domain) throw new Error("no spec.domain");
    ann = meta.annotations;
  } else {
    throw new Error(`unexpected kubevirt.io kind ${obj.kind}`);
  }
  checkImdsAnnotations(ann, obj.kind);
  // A referenced Secret / ConfigMap shipped beside the VM must hold the key.
  const sec = ann[ANN + "user-data-secret"];
  const cm = ann[ANN + "user-data-configmap"];
  for (const [name, kind, keys] of [
    [sec, "Secret", ["userdata", "user-data"]],
    [cm, "ConfigMap", ["user-data"]],
  ]) {
    if (!name) continue;
    const ref = docs.find((d) => d.kind === kind && d.metadata?.name === name);
    if (!ref) throw new Error(`${kind} ${name} is not in the same file`);
    const data = { ...(ref.data || {}), ...(ref.stringData || {}) };
    if (!keys.some((k) => k in data)) throw new Error(`${kind} ${name} has none of the keys ${keys.join(", ")}`);
  }
}

function otherCrd(obj) {
  validateMeta(obj.metadata, "metadata");
  if (obj.apiVersion === "k8s.cni.cncf.io/v1" && obj.kind === "NetworkAttachmentDefinition") {
    const cfg = JSON.parse(obj.spec?.config ?? "");
    if (!cfg.cniVersion || !cfg.type) throw new Error("spec.config: no cniVersion or type");
    return;
  }
  throw new Error(`no model for ${obj.apiVersion} ${obj.kind}`);
}

function validateDoc(obj, docs) {
  if (!obj.apiVersion || !obj.kind) throw new Error("no apiVersion or kind");
  if (obj.apiVersion.startsWith("kubevirt.io/")) return kubevirtObject(obj, docs);
  const Model = modelFor(obj.apiVersion, obj.kind);
  if (!Model) return otherCrd(obj);
  new Model(obj).validate();
  if (!obj.metadata?.name) throw new Error("no metadata.name");
}

// --- the design of deploy/ ------------------------------------------------
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
const SYSTEM_NS = ["kube-system", "kube-public", "kube-node-lease", "kubevirt", "kubevirt-imds"];
const DNS = ["imds-webhook.kubevirt-imds.svc", "imds-webhook.kubevirt-imds.svc.cluster.local"];

function checkPolicy(docs, which) {
  const get = (kind, name) => {
    const d = docs.find((o) => o.kind === kind && (!name || o.metadata?.name === name));
    assert(d, `no ${kind}${name ? " " + name : ""}`);
    return d;
  };
  const checks = [];
  const c = (name, fn) => checks.push([name, fn]);
  // The default installs (manual, cert-manager) have the node agent; the
  // base alone and pod-mode do not.
  const nodeSide = !["base", "pod-mode"].includes(which);
  const podMode = which === "pod-mode";
  if (nodeSide) checkNode(docs, get, c, which);
  if (which === "node") return runChecks(checks);
  if (!nodeSide)
    c(`${which}: no node agent (no DaemonSet, no kubevirt-imds-node object)`, () => {
      const left = docs.filter((d) => d.kind === "DaemonSet" || d.metadata?.name === "kubevirt-imds-node" ||
        d.metadata?.namespace === "kubevirt-imds-node");
      assert(left.length === 0, `left: ${left.map((d) => `${d.kind}/${d.metadata.name}`).join(", ")}`);
    });

  c("Namespace kubevirt-imds", () => get("Namespace", "kubevirt-imds"));
  c("every namespaced object in kubevirt-imds (the agent's in kubevirt-imds-node)", () => {
    for (const d of docs) {
      if (["Namespace", "MutatingWebhookConfiguration", "PriorityClass"].includes(d.kind)) continue;
      if (nodeSide && d.metadata.name === "imds-node" && ["ServiceAccount", "DaemonSet"].includes(d.kind))
        assert(d.metadata.namespace === "kubevirt-imds-node", `${d.kind}/${d.metadata.name} in ${d.metadata.namespace}`);
      else assert(d.metadata.namespace === "kubevirt-imds", `${d.kind}/${d.metadata.name} in ${d.metadata.namespace}`);
    }
  });
  c("the webhook's namespace enforces Pod Security restricted", () => {
    const ns = get("Namespace", "kubevirt-imds");
    assert(ns.metadata.labels?.["pod-security.kubernetes.io/enforce"] === "restricted", "not restricted");
  });
  c(`the webhook's --network-mode: ${podMode ? "pod" : "agent (the default)"}`, () => {
    const args = get("Deployment", "imds-webhook").spec.template.spec.containers[0].args;
    const nm = args.filter((a) => a.startsWith("--network-mode"));
    assert(JSON.stringify(nm) === (podMode ? '["--network-mode=pod"]' : "[]"), `got ${JSON.stringify(nm)}`);
  });
  c("ServiceAccount: no token, no RBAC", () => {
    const sa = get("ServiceAccount", "imds-webhook");
    assert(sa.automountServiceAccountToken === false, "automountServiceAccountToken is not false");
    assert(!docs.some((d) => /^(Cluster)?Role(Binding)?$/.test(d.kind)), "an RBAC object is present");
  });
  c("Deployment: replicas, anti-affinity, non-root, read-only, seccomp, probes, resources, certs", () => {
    const dep = get("Deployment", "imds-webhook");
    const s = dep.spec;
    const p = s.template.spec;
    assert(s.replicas === 2, "replicas != 2");
    assert(p.serviceAccountName === "imds-webhook", "serviceAccountName");
    assert(p.automountServiceAccountToken === false, "pod automountServiceAccountToken");
    const aa = p.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.[0];
    assert(aa?.podAffinityTerm?.topologyKey === "kubernetes.io/hostname", "no hostname anti-affinity");
    assert(p.securityContext?.runAsNonRoot === true && p.securityContext?.runAsUser === 65532, "pod not UID 65532 non-root");
    assert(p.securityContext?.seccompProfile?.type === "RuntimeDefault", "pod seccomp");
    assert(p.containers.length === 1, "one container");
    const ct = p.containers[0];
    const sc = ct.securityContext || {};
    assert(sc.readOnlyRootFilesystem === true, "readOnlyRootFilesystem");
    assert(sc.allowPrivilegeEscalation === false, "allowPrivilegeEscalation");
    assert(JSON.stringify(sc.capabilities?.drop) === '["ALL"]', "capabilities.drop [ALL]");
    assert(sc.runAsUser === 65532 && sc.runAsNonRoot === true, "container UID");
    assert(sc.seccompProfile?.type === "RuntimeDefault", "container seccomp");
    for (const [probe, want] of [["livenessProbe", "/healthz"], ["readinessProbe", "/readyz"]]) {
      const g = ct[probe]?.httpGet;
      assert(g && g.scheme === "HTTPS" && g.path === want && g.port === 8443, `${probe} not HTTPS ${want} on 8443`);
    }
    assert(ct.resources?.requests?.cpu && ct.resources?.requests?.memory && ct.resources?.limits?.memory, "resources");
    assert(ct.args.some((a) => a.startsWith("--imds-image=")), "no --imds-image");
    const m = ct.volumeMounts.find((v) => v.mountPath === "/etc/webhook/certs");
    assert(m && m.readOnly, "certs not mounted read-only at /etc/webhook/certs");
    const v = p.volumes.find((x) => x.name === m.name);
    assert(v?.secret?.secretName === "imds-webhook-tls", "certs volume is not Secret imds-webhook-tls");
    const sel = s.selector.matchLabels;
    for (const [k, val] of Object.entries(sel)) assert(s.template.metadata.labels[k] === val, "selector does not match template");
  });
  c("Deployment as KubeVirt's own: its PriorityClass, CriticalAddonsOnly, spread over zones", () => {
    const p = get("Deployment", "imds-webhook").spec.template.spec;
    const pc = get("PriorityClass", p.priorityClassName);
    assert(pc.value > 0 && pc.value < 1000000000 && pc.globalDefault === false, "PriorityClass value or globalDefault");
    assert(p.tolerations?.some((t) => t.key === "CriticalAddonsOnly" && t.operator === "Exists"), "no CriticalAddonsOnly toleration");
    const ts = p.topologySpreadConstraints?.find((t) => t.topologyKey === "topology.kubernetes.io/zone");
    assert(ts && ts.whenUnsatisfiable === "ScheduleAnyway" && ts.labelSelector?.matchLabels?.["app.kubernetes.io/name"] === "imds-webhook", "no zone spread");
  });
  c("NetworkPolicy: the webhook pods take 8443/TCP only and open nothing", () => {
    const np = get("NetworkPolicy", "imds-webhook");
    assert(np.spec.podSelector.matchLabels["app.kubernetes.io/name"] === "imds-webhook", "podSelector");
    assert(JSON.stringify(np.spec.policyTypes) === '["Ingress","Egress"]', "policyTypes");
    assert(np.spec.ingress.length === 1 && JSON.stringify(np.spec.ingress[0].ports) === '[{"port":8443,"protocol":"TCP"}]', "ingress is not 8443/TCP alone");
    assert(Array.isArray(np.spec.egress) && np.spec.egress.length === 0, "egress allowed");
  });
  c("PodDisruptionBudget minAvailable 1 on the webhook pods", () => {
    const pdb = get("PodDisruptionBudget", "imds-webhook");
    assert(pdb.apiVersion === "policy/v1", "PDB not policy/v1");
    assert(pdb.spec.minAvailable === 1, "minAvailable");
    assert(pdb.spec.selector.matchLabels["app.kubernetes.io/name"] === "imds-webhook", "PDB selector");
  });
  c("Service 443 -> 8443 (named port)", () => {
    const svc = get("Service", "imds-webhook");
    const port = svc.spec.ports[0];
    assert(port.port === 443, "port");
    const dep = get("Deployment", "imds-webhook");
    const cp = dep.spec.template.spec.containers[0].ports.find((x) => x.name === port.targetPort || x.containerPort === port.targetPort);
    assert(cp && cp.containerPort === 8443, "targetPort is not the container's 8443");
    assert(svc.spec.selector["app.kubernetes.io/name"] === "imds-webhook", "selector");
  });
  c("MutatingWebhookConfiguration: labelled opt-in fails closed on CREATE, the rest fails open; v1; None; 5 s; IfNeeded; selectors", () => {
    const mwc = get("MutatingWebhookConfiguration", "imds-webhook");
    const LABEL = "imds.kubevirt.io/enabled";
    // "in": the webhook sees only objects labelled LABEL=true; "out": only
    // objects without it; "all": no label condition.
    const side = (w) => {
      const sel = w.objectSelector || {};
      if (sel.matchLabels?.[LABEL] === "true") return "in";
      const ex = (sel.matchExpressions || []).find((e) => e.key === LABEL);
      if (ex) {
        assert(ex.operator === "NotIn" && JSON.stringify(ex.values) === '["true"]', `${w.name}: ${LABEL} expression`);
        return "out";
      }
      return "all";
    };
    const seen = {};
    for (const w of mwc.webhooks) {
      const where = side(w);
      assert(w.failurePolicy === (where === "in" ? "Fail" : "Ignore"), `${w.name} (${where}): failurePolicy ${w.failurePolicy}`);
      assert(w.sideEffects === "None", `${w.name}: sideEffects`);
      assert(JSON.stringify(w.admissionReviewVersions) === '["v1"]', `${w.name}: admissionReviewVersions`);
      assert(w.timeoutSeconds === 5, `${w.name}: timeoutSeconds`);
      assert(w.reinvocationPolicy === "IfNeeded", `${w.name}: reinvocationPolicy`);
      const svc = w.clientConfig.service;
      assert(svc && svc.name === "imds-webhook" && svc.namespace === "kubevirt-imds" && svc.port === 443, `${w.name}: service`);
      const ex = w.namespaceSelector?.matchExpressions?.find((e) => e.key === "kubernetes.io/metadata.name");
      assert(ex && ex.operator === "NotIn" && SYSTEM_NS.every((n) => ex.values.includes(n)), `${w.name}: system namespaces not excluded`);
      for (const r of w.rules)
        for (const res of r.resources)
          for (const op of r.operations) {
            const k = `${res} ${op} ${where}`;
            assert(!seen[k], `${k}: two webhooks`);
            seen[k] = w;
          }
      if (w.rules.some((r) => r.resources.includes("pods")))
        assert(w.objectSelector?.matchLabels?.["kubevirt.io"] === "virt-launcher", `${w.name}: pods without kubevirt.io=virt-launcher`);
      // Fail only where an outage must refuse: creating a labelled object.
      if (where === "in") assert(w.rules.every((r) => JSON.stringify(r.operations) === '["CREATE"]'), `${w.name}: Fail beyond CREATE`);
    }
    // Each CREATE is served exactly once whether labelled or not; VM UPDATEs
    // (labelled or not) fail open.
    for (const res of ["pods", "virtualmachines", "virtualmachineinstances"]) {
      assert(seen[`${res} CREATE in`] && seen[`${res} CREATE out`] && !seen[`${res} CREATE all`], `${res}: CREATE not split by the label`);
    }
    assert(seen["virtualmachines UPDATE all"]?.failurePolicy === "Ignore", "virtualmachines UPDATE: not one Ignore webhook for all");
    const ops = Object.keys(seen).map((k) => k.split(" ").slice(0, 2).join(" "));
    assert(ops.every((o) => ["pods CREATE", "virtualmachines CREATE", "virtualmachines UPDATE", "virtualmachineinstances CREATE"].includes(o)), `unexpected rules: ${ops.join(", ")}`);
    if (which === "cert-manager") {
      assert(mwc.metadata.annotations?.["cert-manager.io/inject-ca-from"] === "kubevirt-imds/imds-webhook-serving", "inject-ca-from");
    } else {
      assert(!mwc.metadata.annotations?.["cert-manager.io/inject-ca-from"], "inject-ca-from outside the cert-manager overlay");
    }
  });
  if (which === "cert-manager") {
    c("cert-manager: selfsigned Issuer -> CA Certificate -> CA Issuer -> serving Certificate", () => {
      const self = docs.find((d) => d.kind === "Issuer" && d.spec.selfSigned);
      assert(self, "no selfSigned Issuer");
      const ca = docs.find((d) => d.kind === "Certificate" && d.spec.isCA);
      assert(ca && ca.spec.issuerRef.name === self.metadata.name, "CA Certificate not issued by the selfsigned Issuer");
      const caIss = docs.find((d) => d.kind === "Issuer" && d.spec.ca);
      assert(caIss && caIss.spec.ca.secretName === ca.spec.secretName, "CA Issuer does not use the CA's Secret");
      const srv = docs.find((d) => d.kind === "Certificate" && d.metadata.name === "imds-webhook-serving");
      assert(srv && srv.spec.issuerRef.name === caIss.metadata.name, "serving Certificate not issued by the CA Issuer");
      assert(srv.spec.secretName === "imds-webhook-tls", "serving Secret");
      assert(DNS.every((n) => srv.spec.dnsNames.includes(n)), "serving DNS names");
      assert(srv.spec.privateKey?.algorithm === "ECDSA", "serving key not ECDSA");
    });
  }
  runChecks(checks);
}

function runChecks(checks) {
  for (const [name, fn] of checks) {
    try {
      fn();
      pass(`policy: ${name}`);
    } catch (e) {
      fail(`policy: ${name}`, e.message);
    }
  }
}

// deploy/node: exactly the privileges of docs/operations.md ("The agent's
// privileges"), each for one thing; nothing more.
const AGENT_CAPS = ["NET_ADMIN", "NET_BIND_SERVICE", "NET_RAW", "SYS_ADMIN", "SYS_PTRACE"];
const PODS_DIR = "/var/lib/kubelet/pods";
function checkNode(docs, get, c, which) {
  c("Namespace kubevirt-imds-node lets privileged pods in (and only it)", () => {
    const ns = get("Namespace", "kubevirt-imds-node");
    assert(ns.metadata.labels?.["pod-security.kubernetes.io/enforce"] === "privileged", "not enforce: privileged");
  });
  c("imds-node: ServiceAccount without a token, no RBAC", () => {
    const sa = get("ServiceAccount", "imds-node");
    assert(sa.metadata.namespace === "kubevirt-imds-node", "namespace");
    assert(sa.automountServiceAccountToken === false, "automountServiceAccountToken is not false");
    assert(!docs.some((d) => /^(Cluster)?Role(Binding)?$/.test(d.kind)), "an RBAC object is present");
  });
  c("imds-node DaemonSet: hostPID, five capabilities, read-only pods folder, no token, no host network", () => {
    const ds = get("DaemonSet", "imds-node");
    const p = ds.spec.template.spec;
    for (const [k, val] of Object.entries(ds.spec.selector.matchLabels))
      assert(ds.spec.template.metadata.labels[k] === val, "selector does not match template");
    assert(p.serviceAccountName === "imds-node" && p.automountServiceAccountToken === false, "token mounted");
    assert(p.hostPID === true, "hostPID");
    assert(!p.hostNetwork && !p.hostIPC, "host network or IPC");
    assert(!p.initContainers && p.containers.length === 1, "one container, no init containers");
    const ct = p.containers[0];
    // One port, the agent's /healthz, /readyz and /metrics in its own pod
    // network (--metrics-addr): never on the node's (no hostPort, no hostIP).
    assert(JSON.stringify(ct.ports) === '[{"containerPort":8080,"name":"metrics","protocol":"TCP"}]',
      `ports ${JSON.stringify(ct.ports)}: want metrics 8080/TCP alone, no hostPort`);
    assert((ct.args || []).includes("--metrics-addr=:8080"), "args lack --metrics-addr=:8080");
    for (const [k, path] of [["livenessProbe", "/healthz"], ["readinessProbe", "/readyz"]])
      assert(ct[k]?.httpGet?.path === path && ct[k]?.httpGet?.port === "metrics", `${k}: httpGet ${path} on port metrics`);
    const sc = ct.securityContext || {};
    assert(sc.privileged === false, "privileged is not false");
    assert(sc.allowPrivilegeEscalation === false, "allowPrivilegeEscalation");
    assert(sc.readOnlyRootFilesystem === true, "readOnlyRootFilesystem");
    assert(sc.runAsUser === 0, "runAsUser is not 0 (the kubelet's pod folder is root's)");
    assert(JSON.stringify(sc.capabilities?.drop) === '["ALL"]', "capabilities.drop [ALL]");
    const add = [...(sc.capabilities?.add || [])].sort();
    assert(JSON.stringify(add) === JSON.stringify(AGENT_CAPS), `capabilities.add ${JSON.stringify(add)}`);
    assert((p.securityContext?.seccompProfile?.type || sc.seccompProfile?.type) === "RuntimeDefault", "seccomp");
    assert(p.volumes.length === 1, "one volume");
    const v = p.volumes[0];
    assert(v.hostPath?.path === PODS_DIR && v.hostPath.type === "Directory", `volume is not the hostPath ${PODS_DIR}`);
    const m = ct.volumeMounts || [];
    assert(m.length === 1 && m[0].name === v.name && m[0].mountPath === PODS_DIR && m[0].readOnly === true,
      "pods folder not mounted read-only at its own path");
    assert(!m[0].mountPropagation || m[0].mountPropagation === "None", "mount propagation");
    assert(ct.args.includes(`--pods-dir=${PODS_DIR}`), "--pods-dir");
    assert(ct.resources?.requests?.cpu && ct.resources?.requests?.memory && ct.resources?.limits?.memory, "resources");
  });
  c("imds-node DaemonSet: where VMs run (virt-handler's nodes, every taint), priority class", () => {
    const p = get("DaemonSet", "imds-node").spec.template.spec;
    assert(p.nodeSelector?.["kubernetes.io/os"] === "linux", "nodeSelector os");
    const terms = p.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms || [];
    assert(terms.length === 1 && JSON.stringify(terms[0].matchExpressions) ===
      '[{"key":"kubevirt.io/schedulable","operator":"Exists"}]', "node affinity kubevirt.io/schedulable Exists");
    assert(p.tolerations?.some((t) => t.operator === "Exists" && !t.key && !t.effect), "does not tolerate every taint");
    assert(p.priorityClassName === "kubevirt-imds-critical", "priorityClassName");
    if (which !== "node") get("PriorityClass", "kubevirt-imds-critical");
  });
}

for (const f of files) {
  let text;
  try {
    text = readFileSync(f === "-" ? 0 : f, "utf8");
  } catch (e) {
    fail(f, `cannot read: ${e.message}`);
    continue;
  }
  let docs;
  try {
    docs = yaml.loadAll(text).filter((d) => d !== null && d !== undefined);
  } catch (e) {
    fail(f, `YAML: ${e.message.split("\n")[0]}`);
    continue;
  }
  if (docs.length === 0) fail(f, "no objects");
  const where = f === "-" ? "" : `${path.basename(f)} `;
  for (const d of docs) {
    const id = `${where}${d?.kind ?? "?"}/${d?.metadata?.name ?? "?"}`;
    try {
      validateDoc(d, docs);
      pass(id);
    } catch (e) {
      fail(id, String(e.message).split("\n").slice(0, 3).join(" | "));
    }
  }
  if (examples && !docs.some((d) => d.apiVersion?.startsWith("kubevirt.io/")))
    fail(`${where}`, "an example without a KubeVirt VM");
  if (policy) checkPolicy(docs, policy);
}
console.log(`# ${count} checks, ${failed} failed`);
process.exit(failed ? 1 : 0);
