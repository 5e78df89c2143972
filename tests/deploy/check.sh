#!/usr/bin/env bash
# Static checks for the ops pack in deploy/ (Prometheus, alerts, Grafana, OTel, compose).
#   bash tests/deploy/check.sh        (from anywhere; it cd's to the repo root)
# Needs promtool (Debian package `prometheus`; installed automatically when run as root)
# and python3. Exits non-zero on the first failing check.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

PROM_DIR=deploy/prometheus
DASHBOARD=deploy/grafana/dashboards/agentchat.json

step() { printf '\n==> %s\n' "$*"; }
die() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

# ------------------------------------------------------------------ tools
if ! command -v promtool >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    step "promtool not found: installing Debian package 'prometheus'"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null
  fi
  command -v promtool >/dev/null 2>&1 || die "promtool not found. Install it: 'apt-get install -y prometheus' (as root) or download promtool from the Prometheus release tarball and put it on PATH."
fi
command -v python3 >/dev/null 2>&1 || die "python3 not found (needed for the JSON/YAML checks)."
if ! python3 -c 'import yaml' 2>/dev/null && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  step "PyYAML not found: installing Debian package 'python3-yaml'"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-yaml >/dev/null || true
fi
echo "promtool: $(promtool --version 2>&1 | head -n1)"

# ------------------------------------------------------------------ prometheus
step "promtool check config $PROM_DIR/prometheus.yml"
promtool check config "$PROM_DIR/prometheus.yml"

step "promtool check rules $PROM_DIR/alerts.yml"
promtool check rules "$PROM_DIR/alerts.yml"

step "promtool test rules $PROM_DIR/alerts_test.yml"
promtool test rules "$PROM_DIR/alerts_test.yml"

# ------------------------------------------------------------------ grafana dashboard
step "python3 -m json.tool $DASHBOARD"
python3 -m json.tool "$DASHBOARD" >/dev/null
echo "  SUCCESS: valid JSON"

# Every PromQL query in the dashboard must parse: wrap them as recording rules (Grafana's
# $__rate_interval / $__interval replaced by 5m) and let promtool parse them.
step "PromQL in the dashboard parses (promtool check rules on extracted queries)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 - "$DASHBOARD" "$tmp/dashboard_queries.yml" <<'PY'
import json, sys
dash = json.load(open(sys.argv[1]))
rules = []
def walk(panels):
    for p in panels:
        walk(p.get("panels", []))
        for t in p.get("targets", []):
            expr = t["expr"]
            for v in ("$__rate_interval", "$__interval", "$__range"):
                expr = expr.replace(v, "5m")
            rules.append({"record": "dashboard:panel_%d:%s" % (p["id"], t["refId"]), "expr": expr})
walk(dash["panels"])
with open(sys.argv[2], "w") as f:
    json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f, indent=1)
print("  %d queries extracted" % len(rules))
PY
promtool check rules "$tmp/dashboard_queries.yml"

# ------------------------------------------------------------------ consistency checks
step "consistency: metric names, datasource uids, YAML files, compose snippet"
python3 - <<'PY'
import json, os, re, sys

errors = []
def err(msg): errors.append(msg)

# Final metric names exported by the server (see deploy/README.md).
COUNTERS = {"agentchat_http_requests_total", "agentchat_chat_turns_total",
            "agentchat_model_calls_total", "agentchat_tokens_total",
            "agentchat_tool_calls_total", "agentchat_budget_refusals_total",
            "agentchat_budget_overrun_tokens_total", "agentchat_upstream_retries_total",
            "agentchat_approvals_requested_total", "agentchat_approval_decisions_total",
            "agentchat_model_fallbacks_total", "agentchat_model_cost_total"}
HISTOGRAMS = {"agentchat_http_request_duration_seconds", "agentchat_turn_duration_seconds",
              "agentchat_model_call_duration_seconds", "agentchat_model_time_to_first_token_seconds",
              "agentchat_tool_call_duration_seconds"}
GAUGES = {"agentchat_active_streams", "agentchat_db_pool_connections", "agentchat_db_pool_max_connections",
          "agentchat_db_pool_waiting", "agentchat_db_up", "agentchat_approvals_waiting",
          "agentchat_approval_oldest_waiting_seconds", "agentchat_turn_starts_waiting",
          "agentchat_provider_breaker_state"}
KNOWN = COUNTERS | GAUGES | {h + s for h in HISTOGRAMS for s in ("_bucket", "_sum", "_count")}
METRIC_RE = re.compile(r"\bagentchat_[a-z0-9_]+")

def check_metrics(text, where):
    used = set(METRIC_RE.findall(text))
    for m in sorted(used - KNOWN):
        # Allow mentions of the env vars / job label etc. in prose (not metric-like).
        if m.startswith("agentchat_metrics_token"):
            continue
        err(f"{where}: unknown metric name {m!r}")
    for h in HISTOGRAMS:
        if re.search(rf"histogram_quantile\([^)]*\b{h}(?!_bucket)\b", text):
            err(f"{where}: histogram_quantile over {h} must use {h}_bucket")
    return used

alerts_text = open("deploy/prometheus/alerts.yml").read()
exprs_alerts = "\n".join(re.findall(r"expr:[^\n]*(?:\n {10,}[^\n]*)*", alerts_text))
check_metrics(exprs_alerts, "alerts.yml")

dash_path = "deploy/grafana/dashboards/agentchat.json"
dash = json.load(open(dash_path))
def panels(ps):
    for p in ps:
        yield p
        yield from panels(p.get("panels", []))
all_panels = list(panels(dash["panels"]))
dash_exprs = "\n".join(t["expr"] for p in all_panels for t in p.get("targets", []))
used = check_metrics(dash_exprs, "dashboard")

if dash.get("uid") != "agentchat-overview": err("dashboard uid must be agentchat-overview")
if dash.get("title") != "AgentChat overview": err("dashboard title must be 'AgentChat overview'")
if not 36 <= int(dash.get("schemaVersion", 0)) <= 41: err("dashboard schemaVersion should be ~39")
if "${DS_" in open(dash_path).read(): err("dashboard must not use ${DS_*} datasource inputs")
ids = [p["id"] for p in all_panels]
if len(ids) != len(set(ids)): err("dashboard panel ids are not unique")
# Every metric family should appear on the dashboard.
for fam in sorted(COUNTERS | GAUGES | HISTOGRAMS):
    if not any(u == fam or u.startswith(fam + "_") for u in used):
        err(f"dashboard: no panel uses {fam}")

try:
    import yaml
except ImportError:
    print("  SKIP: PyYAML not available; YAML structure checks skipped")
    yaml = None

if yaml:
    def load(p):
        try:
            return yaml.safe_load(open(p))
        except Exception as e:
            err(f"{p}: YAML does not parse: {e}")
            return {}

    ds = load("deploy/grafana/provisioning/datasources/datasources.yml")
    ds_uids = {d.get("uid") for d in ds.get("datasources", [])}
    for need in ("prometheus", "jaeger"):
        if need not in ds_uids: err(f"datasources.yml: no datasource with uid {need!r}")
    for p in all_panels:
        for ref in [p.get("datasource")] + [t.get("datasource") for t in p.get("targets", [])]:
            if isinstance(ref, dict) and ref.get("uid") not in ds_uids:
                err(f"dashboard panel {p['id']}: datasource uid {ref.get('uid')!r} not provisioned")

    prov = load("deploy/grafana/provisioning/dashboards/dashboards.yml")
    prov_paths = {pr.get("options", {}).get("path") for pr in prov.get("providers", [])}

    otel = load("deploy/otel-collector/config.yaml")
    pipes = otel.get("service", {}).get("pipelines", {})
    if "traces" not in pipes: err("otel config: no traces pipeline")
    for kind in ("receivers", "processors", "exporters"):
        for pipe, spec in pipes.items():
            for comp in spec.get(kind, []):
                if comp not in (otel.get(kind) or {}):
                    err(f"otel config: pipeline {pipe} uses undefined {kind[:-1]} {comp!r}")
    protos = (otel.get("receivers", {}).get("otlp", {}) or {}).get("protocols", {})
    if not str(protos.get("grpc", {}).get("endpoint", "")).endswith(":4317"): err("otel: OTLP gRPC not on 4317")
    if not str(protos.get("http", {}).get("endpoint", "")).endswith(":4318"): err("otel: OTLP HTTP not on 4318")

    comp = load("docker-compose.yml")
    services = comp.get("services", {})
    for name in ("prometheus", "grafana", "otel-collector", "jaeger"):
        if name not in services: err(f"compose: missing service {name}")
    for name, svc in services.items():
        if name in ("agentchat", "postgres"):
            if name == "agentchat":
                env = svc.get("environment", {})
                for k in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_SERVICE_NAME"):
                    if k not in env: err(f"compose: agentchat env lacks {k}")
            continue
        if "observability" not in (svc.get("profiles") or []):
            err(f"compose: service {name} not in profile observability")
        image = svc.get("image", "")
        tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
        if not tag or tag == "latest": err(f"compose: image of {name} not pinned: {image!r}")
        for vol in svc.get("volumes", []):
            src, _, rest = vol.partition(":")
            if src.startswith("./"):
                if not os.path.exists(src): err(f"compose: {name} mounts missing {src}")
                target = rest.split(":")[0]
                if name == "grafana" and src.endswith("dashboards") and target not in prov_paths:
                    err(f"compose: grafana dashboards mounted at {target}, provider reads {prov_paths}")
            elif src and not src.startswith("/") and src not in (comp.get("volumes") or {}):
                err(f"compose: {name} uses undeclared named volume {src}")
        for dep in (svc.get("depends_on") or []):
            if dep not in services: err(f"compose: {name} depends on unknown {dep}")

    prom = load("deploy/prometheus/prometheus.yml")
    targets = [t for sc in prom.get("scrape_configs", []) for s in sc.get("static_configs", []) for t in s.get("targets", [])]
    if "agentchat:8080" not in targets: err("prometheus.yml: does not scrape agentchat:8080")

    # Every alert has the labels/annotations an on-call engineer needs.
    rules = load("deploy/prometheus/alerts.yml")
    for g in rules.get("groups", []):
        for r in g.get("rules", []):
            if "alert" not in r: continue
            if r.get("labels", {}).get("severity") not in ("critical", "warning", "info"):
                err(f"alert {r['alert']}: severity label missing/invalid")
            for a in ("summary", "description", "runbook"):
                if not r.get("annotations", {}).get(a): err(f"alert {r['alert']}: annotation {a} missing")

if errors:
    for e in errors: print("  FAIL:", e, file=sys.stderr)
    sys.exit(1)
print(f"  SUCCESS: {len(all_panels)} dashboard panels, metric names and cross-references consistent")
PY

# ------------------------------------------------------------------ pgvector
# Knowledge search needs the pgvector extension: every Postgres image the deploy files run
# (compose, manifests, Dockerfiles) must carry it, e.g. pgvector/pgvector:pg16.
step "consistency: Postgres images carry pgvector (docker-compose.yml, deploy/)"
python3 - <<'PY'
import os, re, sys

IMAGE_RE = re.compile(r"""^\s*(?:-\s*)?image:\s*["']?([^"'\s#]+)""", re.M)
FROM_RE = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)", re.M | re.I)
files = ["docker-compose.yml"]
for root, _, names in os.walk("deploy"):
    files += [os.path.join(root, n) for n in names
              if n.endswith((".yml", ".yaml")) or n == "Dockerfile" or n.startswith("Dockerfile.")]
errors, found = [], []
for path in sorted(files):
    text = open(path).read()
    regex = FROM_RE if os.path.basename(path).startswith("Dockerfile") else IMAGE_RE
    for image in regex.findall(text):
        name = image.rsplit("@", 1)[0]
        repo, _, tag = name.rpartition(":") if ":" in name.rsplit("/", 1)[-1] else (name, "", "")
        if repo.rsplit("/", 1)[-1] not in ("postgres", "postgresql", "pgvector", "postgis"):
            continue  # not a Postgres server (an exporter, Grafana, ...)
        found.append(f"{path}: {image}")
        if not re.fullmatch(r"(?:docker\.io/)?pgvector/pgvector", repo):
            errors.append(f"{path}: Postgres image {image!r} has no pgvector; use pgvector/pgvector:pg16")
        elif not re.fullmatch(r"pg1[6-9][0-9.]*(?:-[A-Za-z0-9._-]+)?", tag):
            errors.append(f"{path}: pgvector image {image!r} not pinned to a Postgres major (pg16 or later)")
if not any(f.startswith("docker-compose.yml:") for f in found):
    errors.append("docker-compose.yml: no Postgres image found (expected pgvector/pgvector:pg16)")
for f in found:
    print("  " + f)
if errors:
    for e in errors:
        print("  FAIL:", e, file=sys.stderr)
    sys.exit(1)
print(f"  SUCCESS: {len(found)} Postgres image(s), all with pgvector")
PY

# ------------------------------------------------------------------ kubernetes
# Schemas from the kubernetes-validate package (PyPI; it carries them, nothing is fetched at
# run time), then our own consistency checks (selectors, probes, settings, secrets, shutdown).
KV_VERSION=1.37.0
venv=tests/deploy/.venv
if [ ! -x "$venv/bin/kubernetes-validate" ] || ! "$venv/bin/pip" show kubernetes-validate 2>/dev/null | grep -qx "Version: $KV_VERSION"; then
  step "installing kubernetes-validate $KV_VERSION into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$KV_VERSION" "pyyaml>=6"
fi
step "kubernetes-validate --strict deploy/k8s (Kubernetes 1.30)"
mapfile -t manifests < <(ls deploy/k8s/*.yaml | grep -v kustomization.yaml)
"$venv/bin/kubernetes-validate" --strict --quiet -k 1.30.0 "${manifests[@]}"
echo "  SUCCESS: ${#manifests[@]} manifests match the schemas"

step "consistency: deploy/k8s (selectors, probes, settings, secrets, shutdown grace)"
"$venv/bin/python" tests/deploy/k8s_check.py

step "all deploy checks passed"
