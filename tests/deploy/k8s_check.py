"""Consistency checks for deploy/k8s beyond the schema (kubernetes-validate does that):
the things that make a manifest valid YAML yet a broken deployment.

    python3 tests/deploy/k8s_check.py      (from the repository root)
"""
import os
import re
import sys

import yaml

K8S = "deploy/k8s"
errors = []


def err(msg):
    errors.append(msg)


def load(name):
    with open(os.path.join(K8S, name)) as f:
        return yaml.safe_load(f)


kust = load("kustomization.yaml")
files = sorted(f for f in os.listdir(K8S) if f.endswith(".yaml") and f != "kustomization.yaml")
if sorted(kust.get("resources", [])) != files:
    err(f"kustomization resources {sorted(kust.get('resources', []))} != files {files}")
docs = {f: load(f) for f in files}
by_kind = {d["kind"]: d for d in docs.values()}
for kind in ("Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler",
             "ConfigMap", "PersistentVolumeClaim", "ServiceAccount", "Namespace"):
    if kind not in by_kind:
        err(f"no {kind} manifest")
if errors:
    print("\n".join("  FAIL: " + e for e in errors), file=sys.stderr)
    sys.exit(1)

dep, svc, pdb, hpa = (by_kind[k] for k in ("Deployment", "Service", "PodDisruptionBudget",
                                          "HorizontalPodAutoscaler"))
cm = by_kind["ConfigMap"]
pod = dep["spec"]["template"]
labels = pod["metadata"]["labels"]
spec = pod["spec"]
(container,) = spec["containers"]


def selects(selector, what):
    if not selector or any(labels.get(k) != v for k, v in selector.items()):
        err(f"{what} selector {selector} does not match the pod labels {labels}")


selects(dep["spec"]["selector"]["matchLabels"], "Deployment")
selects(svc["spec"]["selector"], "Service")
selects(pdb["spec"]["selector"]["matchLabels"], "PodDisruptionBudget")

# Replicas, disruption and scaling agree: never fewer than two pods.
if dep["spec"].get("replicas", 1) < 2:
    err("Deployment: fewer than 2 replicas")
if hpa["spec"].get("minReplicas", 1) < 2:
    err("HPA: minReplicas below 2")
target = hpa["spec"]["scaleTargetRef"]
if (target.get("kind"), target.get("name")) != ("Deployment", dep["metadata"]["name"]):
    err(f"HPA scales {target}, not the Deployment")
if pdb["spec"].get("minAvailable", 0) >= hpa["spec"]["minReplicas"]:
    err("PDB minAvailable leaves no pod that may be disrupted")
if dep["spec"]["strategy"]["rollingUpdate"].get("maxUnavailable") != 0:
    err("rolling update may take capacity away (maxUnavailable should be 0)")

# Probes: alive = the process (/healthz), ready = the database (/readyz).
ports = {p["name"]: p["containerPort"] for p in container["ports"]}
for probe, path in (("livenessProbe", "/healthz"), ("startupProbe", "/healthz"),
                    ("readinessProbe", "/readyz")):
    get = (container.get(probe) or {}).get("httpGet") or {}
    if get.get("path") != path:
        err(f"{probe} must GET {path}, has {get.get('path')!r}")
    if get.get("port") not in ports:
        err(f"{probe} port {get.get('port')!r} is not a named container port")
for p in svc["spec"]["ports"]:
    if p["targetPort"] not in ports:
        err(f"Service targetPort {p['targetPort']!r} is not a named container port")
bind = cm["data"].get("AGENTCHAT_BIND", "")
if not bind.endswith(f":{ports.get('http')}") or not bind.startswith("0.0.0.0"):
    err(f"AGENTCHAT_BIND {bind!r} does not listen on all interfaces at the http port")

# Every setting the manifests name is a real one (the server's env table), so a typo fails
# here instead of being a warning in a pod's log.
env_rs = open("server/src/config/env.rs").read()
known = set(re.findall(r'"((?:AGENTCHAT|OTEL)_[A-Z0-9_]+)"', env_rs)) | {"DATABASE_URL"}
known |= {"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_SERVICE_NAME"}
named = set(cm["data"])
named |= {e["name"] for e in container.get("env", [])}
with open(os.path.join(K8S, "configmap.yaml")) as f:
    named |= set(re.findall(r"^\s*#\s*((?:AGENTCHAT|OTEL)_[A-Z0-9_]+):", f.read(), re.M))
example = {}
with open(os.path.join(K8S, "secrets.env.example")) as f:
    for line in f:
        if line.strip() and not line.startswith("#"):
            k, _, v = line.strip().partition("=")
            example[k] = v
named |= set(example)
for name in sorted(named - known):
    err(f"{name} is not a setting the server reads")

# Secrets come from the Secret the kustomization generates, and only secrets do.
secret_names = {g["name"] for g in kust.get("secretGenerator", [])}
for e in container.get("env", []):
    ref = (e.get("valueFrom") or {}).get("secretKeyRef")
    if not ref:
        err(f"env {e['name']} is set inline: secrets come from the Secret")
        continue
    if ref["name"] not in secret_names:
        err(f"env {e['name']} reads Secret {ref['name']!r}, which the kustomization does not make")
    if ref["key"] not in example:
        err(f"env {e['name']} reads key {ref['key']!r}, missing from secrets.env.example")
for secret in ("DATABASE_URL", "AGENTCHAT_JWT_SECRET", "AGENTCHAT_LLM_API_KEY", "AGENTCHAT_METRICS_TOKEN"):
    if secret in cm["data"]:
        err(f"{secret} is in the ConfigMap: it is a secret")
gitignore = open(".gitignore").read().split()
if "deploy/k8s/secrets.env" not in gitignore:
    err(".gitignore must list deploy/k8s/secrets.env")

# Shutdown: the pod's grace covers preStop, the turns' drain and the server's own shutdown
# timeout (startup.rs: shutdown grace + 30 s).
grace = int(cm["data"].get("AGENTCHAT_SHUTDOWN_GRACE_SECS", "20"))
pre_stop = container.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
pre = int(pre_stop[-1]) if pre_stop and pre_stop[0] == "sleep" else 0
if spec.get("terminationGracePeriodSeconds", 30) < pre + grace + 30:
    err(f"terminationGracePeriodSeconds {spec.get('terminationGracePeriodSeconds')} < "
        f"preStop {pre} + shutdown grace {grace} + 30")

# Hardened pod, matching the image's non-root user (deploy/Dockerfile: uid 10001).
dockerfile = open("deploy/Dockerfile").read()
uid = re.search(r"--uid (\d+)", dockerfile).group(1)
psc, csc = spec.get("securityContext", {}), container.get("securityContext", {})
if not psc.get("runAsNonRoot") or str(psc.get("runAsUser")) != uid:
    err(f"pod must run as non-root uid {uid}")
if csc.get("allowPrivilegeEscalation") is not False or csc.get("capabilities", {}).get("drop") != ["ALL"]:
    err("container must drop all capabilities and forbid privilege escalation")
mounts = {m["mountPath"] for m in container.get("volumeMounts", [])}
if cm["data"].get("AGENTCHAT_WORKSPACE_DIR") not in mounts:
    err("the workspace directory is not a mounted volume")
pvc = by_kind["PersistentVolumeClaim"]
if "ReadWriteMany" not in pvc["spec"]["accessModes"]:
    err("the workspaces volume must be ReadWriteMany (every pod mounts it)")
image = container["image"]
if not any(i.get("name") == image and i.get("newTag") and i["newTag"] != "latest"
           for i in kust.get("images", [])):
    err(f"image {image!r} has no pinned tag in the kustomization")

if errors:
    print("\n".join("  FAIL: " + e for e in errors), file=sys.stderr)
    sys.exit(1)
print(f"  SUCCESS: {len(files)} manifests consistent ({dep['spec']['replicas']} replicas, "
      f"HPA {hpa['spec']['minReplicas']}-{hpa['spec']['maxReplicas']})")
