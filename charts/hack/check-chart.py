#!/usr/bin/env python3
"""Checks of the kraft-operator chart and the examples, with no cluster.

Run by `make helm-check` with the Python of the kubernetes-validate venv that
charts/hack/install-tools.sh installs (it brings PyYAML and jsonschema too).

What is checked, each as one named test (PASS/FAIL), then one closing line
`N passed, N failed`:

- `helm lint --strict` with the default values and with ci/all-values.yaml
  (every value set to something other than its default);
- `helm template` in several configurations, each rendered object validated
  against the JSON Schema of its kind in Kubernetes 1.33 (the OpenAPI schemas
  shipped in the kubernetes-validate package), strictly: an unknown field is an
  error, as `kubectl apply --validate=strict` makes it. Kinds without a
  built-in schema (ServiceMonitor) are checked against the few fields the
  Prometheus Operator requires;
- the chart's promises: non-root read-only pods without capabilities, probes
  on /healthz and /readyz, namespaced RBAC when watchNamespace is set (no
  ClusterRole at all), exactly the RBAC rules the operator needs, no wildcard,
  the CRD behind crds.enabled and kept when crds.keep, the `helm test` hook,
  invalid values refused;
- every value in values.yaml commented, values.schema.json closed
  (`additionalProperties: false`) at every object level and in step with
  values.yaml, and the chart README's values table generated from it;
- the chart's CRD identical to crds/kraftquorum.yaml (hack/sync-crd.sh
  --check, and the rendered object compared with the source);
- examples/kraftquorum-*.yaml valid against the CRD's OpenAPI schema,
  strictly, and a copy with replicas 0 or 10 rejected by it; the other
  examples (the Kafka brokers) valid against Kubernetes' own schemas;
- the Dockerfile's stages (no Docker engine here to build them).
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import traceback
from pathlib import Path

import jsonschema
import kubernetes_validate
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "kraft-operator"
CRD_SOURCE = ROOT / "crds" / "kraftquorum.yaml"
EXAMPLES = ROOT / "examples"
HELM = os.environ.get(
    "HELM", str(Path(os.environ.get("KRAFTWERK_CACHE", Path.home() / ".cache/kraftwerk")) / "bin/helm")
)
K8S_VERSION = "1.33.0"  # the local cluster's and k8s-openapi's release
RELEASE, NAMESPACE = "kw", "kraft-system"

# Exactly what the operator may do (see templates/rbac.yaml for why): a new
# permission must be added here too, on purpose.
WORKLOAD_RULES = {
    ("kraft.krabka.io", "kraftquorums"): {"get", "list", "watch", "patch"},
    ("kraft.krabka.io", "kraftquorums/status"): {"patch"},
    ("kraft.krabka.io", "kraftquorums/finalizers"): {"update"},
    ("apps", "statefulsets"): {"get", "list", "watch", "create", "patch"},
    ("", "services"): {"list", "watch", "create", "patch"},
    ("", "configmaps"): {"list", "watch", "create", "patch"},
    ("policy", "poddisruptionbudgets"): {"list", "watch", "create", "patch"},
    ("", "secrets"): {"get", "list", "watch", "create", "patch"},
    ("networking.k8s.io", "networkpolicies"): {"list", "watch", "create", "patch"},
    ("cert-manager.io", "certificates"): {"list", "create", "patch"},
    ("cert-manager.io", "issuers"): {"get"},
    ("cert-manager.io", "clusterissuers"): {"get"},
    ("", "pods"): {"list", "watch", "delete"},
    ("", "persistentvolumeclaims"): {"get"},
    ("batch", "jobs"): {"get", "create", "patch", "delete"},
    ("events.k8s.io", "events"): {"create", "patch"},
}


class CheckFailed(Exception):
    """A check's assertion did not hold."""


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise CheckFailed(msg)


def helm(*args: str, expect_ok: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([HELM, *args], capture_output=True, text=True)
    if expect_ok and p.returncode != 0:
        raise CheckFailed(f"helm {' '.join(args)} failed (exit {p.returncode}):\n{p.stderr}{p.stdout}")
    return p


_RENDERED: dict[tuple, str] = {}


def render(*sets: str, values: Path | None = None) -> list[dict]:
    """`helm template` with these --set values (and values file); fresh
    objects on every call, the helm output cached per arguments."""
    key = (sets, values)
    if key not in _RENDERED:
        args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE]
        if values:
            args += ["-f", str(values)]
        for s in sets:
            args += ["--set", s]
        _RENDERED[key] = helm(*args).stdout
    return [d for d in yaml.safe_load_all(_RENDERED[key]) if d]


def by_kind(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d.get("kind") == kind]


def one(docs: list[dict], kind: str) -> dict:
    found = by_kind(docs, kind)
    check(len(found) == 1, f"expected one {kind}, found {len(found)}")
    return found[0]


# --- schema validation of rendered objects ---------------------------------------

def validate_servicemonitor(doc: dict) -> None:
    # No schema of monitoring.coreos.com ships with kubernetes-validate: check
    # what the Prometheus Operator needs to select and scrape the Service.
    spec = doc.get("spec", {})
    check(doc.get("apiVersion") == "monitoring.coreos.com/v1", "ServiceMonitor apiVersion")
    check(isinstance(spec.get("selector", {}).get("matchLabels"), dict), "ServiceMonitor selector.matchLabels")
    eps = spec.get("endpoints")
    check(isinstance(eps, list) and eps and all("port" in e for e in eps), "ServiceMonitor endpoints[].port")
    allowed = {"port", "path", "scheme", "interval", "scrapeTimeout", "honorLabels"}
    for e in eps:
        check(set(e) <= allowed, f"ServiceMonitor endpoint has unexpected fields {set(e) - allowed}")


def validate_objects(docs: list[dict]) -> int:
    for d in docs:
        name = f"{d.get('kind')}/{d.get('metadata', {}).get('name')}"
        if d.get("kind") == "ServiceMonitor":
            validate_servicemonitor(d)
            continue
        try:
            kubernetes_validate.validate(d, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as e:
            raise CheckFailed(f"{name} is not a valid {d.get('kind')} of Kubernetes {K8S_VERSION}: {e.message} at {list(e.path)}")
        except kubernetes_validate.SchemaNotFoundError:
            raise CheckFailed(f"{name}: no schema for {d.get('apiVersion')} {d.get('kind')} in Kubernetes {K8S_VERSION}")
    return len(docs)


# --- the tests ------------------------------------------------------------------------

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


@test
def helm_lint_passes_with_default_values():
    helm("lint", "--strict", str(CHART))


@test
def helm_lint_passes_with_every_value_set():
    helm("lint", "--strict", str(CHART), "-f", str(CHART / "ci/all-values.yaml"))


CONFIGS = {
    "default values": ([], None),
    "every value set (ci/all-values.yaml)": ([], CHART / "ci/all-values.yaml"),
    "watchNamespace only": (["watchNamespace=kafka"], None),
    "no CRD, no RBAC, existing ServiceAccount": (
        ["crds.enabled=false", "rbac.create=false", "serviceAccount.create=false", "serviceAccount.name=ops"],
        None,
    ),
    "leader election off": (["leaderElection.enabled=false"], None),
}


@test
def every_rendered_object_is_valid_against_the_kubernetes_schema():
    total = 0
    for label, (sets, values) in CONFIGS.items():
        try:
            total += validate_objects(render(*sets, values=values))
        except CheckFailed as e:
            raise CheckFailed(f"[{label}] {e}")
    print(f"    {total} objects in {len(CONFIGS)} configurations validated against Kubernetes {K8S_VERSION}")


@test
def the_schema_validation_rejects_an_unknown_field():
    # The validation above must be able to fail: a misspelt field is an error.
    dep = copy.deepcopy(one(render(), "Deployment"))
    dep["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    try:
        validate_objects([dep])
    except CheckFailed:
        return
    raise CheckFailed("a Deployment with containers[0].readinesProbe passed strict validation")


@test
def the_operator_pod_runs_non_root_read_only_without_capabilities():
    for label, (sets, values) in CONFIGS.items():
        pod = one(render(*sets, values=values), "Deployment")["spec"]["template"]["spec"]
        psc = pod["securityContext"]
        check(psc.get("runAsNonRoot") is True, f"[{label}] pod runAsNonRoot")
        check(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", f"[{label}] seccompProfile RuntimeDefault")
        for c in pod["containers"]:
            sc = c["securityContext"]
            check(sc.get("readOnlyRootFilesystem") is True, f"[{label}] {c['name']} readOnlyRootFilesystem")
            check(sc.get("allowPrivilegeEscalation") is False, f"[{label}] {c['name']} allowPrivilegeEscalation")
            check(sc.get("capabilities", {}).get("drop") == ["ALL"], f"[{label}] {c['name']} drops ALL capabilities")
            check("resources" in c and c["resources"].get("requests"), f"[{label}] {c['name']} has resource requests")


@test
def the_operator_is_probed_on_healthz_and_readyz_and_runs_with_its_flags():
    docs = render()
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    c = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    check(c["image"] == f"ghcr.io/kraftwerk/kraft-operator:{chart['appVersion']}", f"default image is the appVersion: {c['image']}")
    check(c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}, "liveness on /healthz")
    check(c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}, "readiness on /readyz")
    check(c["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}], f"http port: {c['ports']}")
    fullname = f"{RELEASE}-kraft-operator"
    check(
        c["args"] == ["run", "--http-addr=0.0.0.0:8080", "--cluster-domain=cluster.local",
                      "--admin-timeout-ms=5000", f"--lease-name={fullname}",
                      f"--lease-namespace={NAMESPACE}", "--lease-duration-seconds=15"],
        f"default args: {c['args']}",
    )
    env = {e["name"]: e for e in c["env"]}
    check(env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name", "POD_NAME from the downward API")
    ns = one(render("watchNamespace=kafka"), "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    check("--namespace=kafka" in ns, f"watchNamespace becomes --namespace: {ns}")
    off = one(render("leaderElection.enabled=false"), "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    check("--no-leader-election" in off and not any(a.startswith("--lease") for a in off), f"leader election off: {off}")
    check(not [r for r in by_kind(render("leaderElection.enabled=false"), "Role")], "no Lease Role without leader election")
    svc = one(docs, "Service")
    check(svc["spec"]["selector"] == one(docs, "Deployment")["spec"]["selector"]["matchLabels"], "Service selects the operator pods")


def operator_run_flags() -> set[str]:
    """The long flags of `kraft-operator run`, read from its clap derive
    struct `RunArgs` in operator/src/run.rs (field `http_addr` with
    `#[arg(long ...)]` is `--http-addr`; `long = "x"` is `--x`)."""
    src = Path(os.environ.get("KRAFTWERK_OPERATOR_SRC", ROOT / "operator/src")) / "run.rs"
    check(src.is_file(), f"{src} is missing: the chart follows `kraft-operator run`'s flags (merge the operator first)")
    text = src.read_text()
    m = re.search(r"pub struct RunArgs \{(.*?)\n\}", text, flags=re.S)
    check(m is not None, f"{src}: no `pub struct RunArgs`")
    flags = set()
    for attr, field in re.findall(r"#\[arg\(([^\]]*)\)\]\s*(?:///[^\n]*\s*)*pub (\w+):", m.group(1)):
        if re.search(r"\blong\b", attr):
            explicit = re.search(r'long\s*=\s*"([^"]+)"', attr)
            flags.add("--" + (explicit.group(1) if explicit else field.replace("_", "-")))
    check(flags, f"{src} defines no flags of `kraft-operator run` (is the operator merged?)")
    return flags


@test
def the_chart_passes_only_flags_that_kraft_operator_run_has():
    known = operator_run_flags()
    for label, (sets, values) in CONFIGS.items():
        if values:  # ci/all-values.yaml adds an extraArgs flag of its own on purpose
            continue
        args = one(render(*sets), "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
        check(args[0] == "run", f"[{label}] first argument {args[0]!r}")
        for a in args[1:]:
            flag = a.split("=", 1)[0]
            check(flag in known, f"[{label}] the chart passes {flag}, which `kraft-operator run` does not have (it has {sorted(known)})")


def rules_table(rules: list[dict]) -> dict:
    table = {}
    for r in rules:
        check("resourceNames" not in r, f"workload rule limited by name: {r}")
        for g in r["apiGroups"]:
            for res in r["resources"]:
                check("*" not in (g, res) and "*" not in r["verbs"], f"wildcard in rule {r}")
                table.setdefault((g, res), set()).update(r["verbs"])
    return table


@test
def cluster_wide_rbac_grants_exactly_what_the_operator_needs():
    docs = render()
    check(rules_table(one(docs, "ClusterRole")["rules"]) == WORKLOAD_RULES,
          f"ClusterRole rules differ from the expected table: {rules_table(one(docs, 'ClusterRole')['rules'])}")
    crb = one(docs, "ClusterRoleBinding")
    check(crb["subjects"] == [{"kind": "ServiceAccount", "name": f"{RELEASE}-kraft-operator", "namespace": NAMESPACE}],
          f"ClusterRoleBinding subjects: {crb['subjects']}")
    lease_role = one(docs, "Role")
    check(lease_role["metadata"]["namespace"] == NAMESPACE, "Lease Role in the release namespace")
    for r in lease_role["rules"]:
        check(r["apiGroups"] == ["coordination.k8s.io"] and r["resources"] == ["leases"], f"Lease Role rule {r}")
        if r["verbs"] != ["create"]:
            check(r.get("resourceNames") == [f"{RELEASE}-kraft-operator"], f"Lease rule not limited to the Lease: {r}")


@test
def watching_one_namespace_grants_nothing_cluster_wide():
    docs = render("watchNamespace=kafka")
    check(not by_kind(docs, "ClusterRole") and not by_kind(docs, "ClusterRoleBinding"), "no ClusterRole(Binding) in namespaced mode")
    roles = {r["metadata"]["name"]: r for r in by_kind(docs, "Role")}
    work = roles[f"{RELEASE}-kraft-operator"]
    check(work["metadata"]["namespace"] == "kafka", "workload Role in the watched namespace")
    check(rules_table(work["rules"]) == WORKLOAD_RULES, "namespaced Role rules == expected table")
    rb = [b for b in by_kind(docs, "RoleBinding") if b["metadata"]["name"] == f"{RELEASE}-kraft-operator"]
    check(len(rb) == 1 and rb[0]["metadata"]["namespace"] == "kafka", "RoleBinding in the watched namespace")
    check(rb[0]["subjects"][0]["namespace"] == NAMESPACE, "RoleBinding subject is the operator's ServiceAccount")


@test
def every_rbac_rule_is_commented():
    lines = (CHART / "templates/rbac.yaml").read_text().splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^\s*- apiGroups:", line):
            check(lines[i - 1].strip().startswith("#"), f"rbac.yaml line {i + 1}: rule without a comment above it")


@test
def the_crd_is_installed_behind_crds_enabled_and_kept_on_uninstall():
    crd = one(render(), "CustomResourceDefinition")
    check(crd["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}, "keep annotation by default")
    crd = one(render("crds.keep=false"), "CustomResourceDefinition")
    check("annotations" not in crd["metadata"], "no keep annotation when crds.keep=false")
    check(not by_kind(render("crds.enabled=false"), "CustomResourceDefinition"), "no CRD when crds.enabled=false")


@test
def the_charts_crd_is_the_one_in_crds():
    p = subprocess.run([str(CHART / "hack/sync-crd.sh"), "--check"], capture_output=True, text=True)
    check(p.returncode == 0, f"sync-crd.sh --check failed:\n{p.stderr}{p.stdout}")
    rendered = copy.deepcopy(one(render(), "CustomResourceDefinition"))
    rendered["metadata"].pop("labels")
    rendered["metadata"].pop("annotations")
    check(rendered == yaml.safe_load(CRD_SOURCE.read_text()), "rendered CRD differs from crds/kraftquorum.yaml")


@test
def the_helm_test_hook_checks_readyz_and_metrics_of_the_service():
    docs = render()
    pods = [d for d in by_kind(docs, "Pod") if d["metadata"].get("annotations", {}).get("helm.sh/hook") == "test"]
    check(len(pods) == 1, "one helm test Pod")
    script = pods[0]["spec"]["containers"][0]["command"][-1]
    base = f"http://{RELEASE}-kraft-operator.{NAMESPACE}.svc.cluster.local:8080"
    check(f"{base}/readyz" in script and f"{base}/metrics" in script, f"test Pod probes {base}")
    check(one(docs, "Service")["spec"]["clusterIP"] == "None", "the Service it resolves is headless")


@test
def the_servicemonitor_is_rendered_only_when_enabled():
    check(not by_kind(render(), "ServiceMonitor"), "no ServiceMonitor by default")
    sm = one(render("serviceMonitor.enabled=true"), "ServiceMonitor")
    check(sm["spec"]["endpoints"][0]["port"] == "http" and sm["spec"]["endpoints"][0]["path"] == "/metrics", "scrapes http /metrics")


@test
def invalid_values_are_refused():
    cases = {
        "an unknown top-level key": ["replicas=3"],
        "an unknown nested key": ["image.name=x"],
        "a wrong type": ["http.port=http"],
        "two replicas without leader election": ["replicaCount=2", "leaderElection.enabled=false"],
        "an existing ServiceAccount without a name": ["serviceAccount.create=false"],
    }
    for label, sets in cases.items():
        args = ["template", RELEASE, str(CHART)]
        for s in sets:
            args += ["--set", s]
        p = helm(*args, expect_ok=False)
        check(p.returncode != 0, f"{label} ({' '.join(sets)}) was accepted")


# Values typed as a Kubernetes object whose schema lists more fields than the defaults set.
KUBERNETES_TYPED = {"values.resources", "values.affinity"}


def walk_schema(node: dict, path: str):
    yield path, node
    for k, sub in node.get("properties", {}).items():
        yield from walk_schema(sub, f"{path}.{k}")


@test
def the_values_schema_is_closed_and_matches_values_yaml():
    schema = json.loads((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    for path, node in walk_schema(schema, "values"):
        if "properties" in node:
            check(node.get("additionalProperties") is False, f"{path}: additionalProperties is not false")
        check(path == "values" or node.get("description"), f"{path}: no description")

    def same_keys(v: dict, s: dict, path: str):
        props = s.get("properties")
        if props is None:
            return
        if path in KUBERNETES_TYPED:  # defaults set some of a Kubernetes type's fields
            check(set(v) <= set(props), f"{path}: values.yaml keys {sorted(v)} not in schema {sorted(props)}")
        else:
            check(set(v) == set(props) - {"global"}, f"{path}: values.yaml keys {sorted(v)} vs schema {sorted(props)}")
        for k, sub in v.items():
            if isinstance(sub, dict):
                same_keys(sub, props[k], f"{path}.{k}")

    same_keys(values, schema, "values")
    jsonschema.Draft7Validator(schema).validate(values)


@test
def every_value_in_values_yaml_is_commented():
    # A key is documented when a comment sits right above it or above one of
    # its parents (a parent's comment covers a default object like resources).
    stack: list[tuple[int, bool]] = []
    prev_comment = False
    for n, line in enumerate((CHART / "values.yaml").read_text().splitlines(), 1):
        s = line.strip()
        if not s:
            prev_comment = False
            continue
        if s.startswith("#"):
            prev_comment = True
            continue
        m = re.match(r"^( *)([A-Za-z0-9_.\-/]+):", line)
        if m and not s.startswith("-"):
            indent = len(m.group(1))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            covered = prev_comment or any(c for _, c in stack)
            leaf = line.split(":", 1)[1].strip() != ""
            if leaf:
                check(covered, f"values.yaml line {n}: {s!r} has no comment")
            stack.append((indent, covered))
        prev_comment = False


@test
def the_charts_readme_lists_every_value():
    p = subprocess.run([sys.executable, str(ROOT / "charts/hack/values-doc.py"), "--check"], capture_output=True, text=True)
    check(p.returncode == 0, p.stderr.strip() or p.stdout.strip())


def crd_schema() -> dict:
    crd = yaml.safe_load(CRD_SOURCE.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    schema = copy.deepcopy(version["schema"]["openAPIV3Schema"])

    def close(node):
        # Strict field validation, as kubectl apply does: unknown fields are
        # errors unless the schema preserves them.
        if isinstance(node, dict):
            if "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields"):
                node.setdefault("additionalProperties", False)
            for v in node.values():
                close(v)
        elif isinstance(node, list):
            for v in node:
                close(v)

    close(schema)
    # apiVersion, kind and metadata are the API server's own (ObjectMeta).
    schema.setdefault("properties", {}).update(
        apiVersion={"const": "kraft.krabka.io/v1alpha1"},
        kind={"const": "KraftQuorum"},
        metadata={"type": "object"},
    )
    return schema


def validate_quorum(doc: dict) -> None:
    try:
        jsonschema.Draft7Validator(crd_schema()).validate(doc)
    except jsonschema.ValidationError as e:
        raise CheckFailed(f"{e.message} at {'.'.join(str(p) for p in e.absolute_path)}")


@test
def the_examples_are_valid_kraftquorums():
    files = sorted(EXAMPLES.glob("kraftquorum-*.yaml"))
    check(len(files) >= 2, f"examples: {files}")
    for f in files:
        docs = [d for d in yaml.safe_load_all(f.read_text()) if d]
        check(len(docs) == 1 and docs[0]["kind"] == "KraftQuorum", f"{f.name}: one KraftQuorum")
        try:
            validate_quorum(docs[0])
        except CheckFailed as e:
            raise CheckFailed(f"{f.name}: {e}")
    minimal = yaml.safe_load((EXAMPLES / "kraftquorum-minimal.yaml").read_text())
    check(minimal["spec"]["replicas"] == 3, "the minimal example has 3 voters")
    # Every field of the spec appears in the full example (clusterId and adopt
    # are shown commented out: setting them in an example would share one id
    # among users, and adopt only fits a static quorum that runs already).
    full = yaml.safe_load((EXAMPLES / "kraftquorum-full.yaml").read_text())
    spec_props = crd_schema()["properties"]["spec"]["properties"]
    missing = set(spec_props) - set(full["spec"]) - {"clusterId", "adopt"}
    check(not missing, f"kraftquorum-full.yaml does not show {sorted(missing)}")
    for commented in ("clusterId", "adopt"):
        check(f"# {commented}:" in (EXAMPLES / "kraftquorum-full.yaml").read_text(), f"{commented} shown in the full example")
    for field in ("storage", "podTemplate"):  # the CRD's own types (the rest are Kubernetes')
        gaps = set(spec_props[field]["properties"]) - set(full["spec"][field])
        check(not gaps, f"kraftquorum-full.yaml spec.{field} does not show {sorted(gaps)}")


@test
def the_other_examples_are_valid_kubernetes_objects():
    # examples/kafka-brokers.yaml and the like: Kubernetes' own kinds,
    # validated strictly against the schemas of K8S_VERSION.
    files = sorted(set(EXAMPLES.glob("*.yaml")) - set(EXAMPLES.glob("kraftquorum-*.yaml")))
    check(files, "examples: no broker example")
    for f in files:
        docs = [d for d in yaml.safe_load_all(f.read_text()) if d]
        check(docs and all(d["kind"] != "KraftQuorum" for d in docs), f"{f.name}: Kubernetes objects")
        try:
            validate_objects(docs)
        except CheckFailed as e:
            raise CheckFailed(f"{f.name}: {e}")


@test
def the_crd_schema_check_rejects_bad_quorums():
    good = yaml.safe_load((EXAMPLES / "kraftquorum-minimal.yaml").read_text())
    validate_quorum(good)
    # (label, change, a word the error must name: it fails for that reason)
    for label, mutate, word in [
        ("replicas 0", lambda d: d["spec"].update(replicas=0), "replicas"),
        ("replicas 10", lambda d: d["spec"].update(replicas=10), "replicas"),
        ("an unknown spec field", lambda d: d["spec"].update(voters=3), "voters"),
        ("no storage", lambda d: d["spec"].pop("storage"), "storage"),
        ("a bad volume policy", lambda d: d["spec"]["storage"].update(onDelete="Recycle"), "onDelete"),
    ]:
        bad = copy.deepcopy(good)
        mutate(bad)
        try:
            validate_quorum(bad)
        except CheckFailed as e:
            check(word in str(e), f"a KraftQuorum with {label} failed for another reason: {e}")
            continue
        raise CheckFailed(f"a KraftQuorum with {label} passed the CRD schema")


@test
def the_dockerfile_builds_both_binaries_into_non_root_images():
    # No Docker engine here: check the Dockerfile's shape instead. Each final
    # stage is named after its binary, copies it onto PATH, runs as a non-root
    # user and has it as entrypoint; the binaries are the crates' [[bin]]s.
    text = (ROOT / "Dockerfile").read_text()
    stages = re.split(r"^FROM ", text, flags=re.M)[1:]
    named = {}
    for st in stages:
        m = re.match(r"\S+ AS (\S+)", st)
        check(m is not None, f"unnamed stage: FROM {st.splitlines()[0]}")
        named[m.group(1)] = st
    check(set(named) == {"builder", "kraft-controller", "kraft-operator"}, f"stages: {sorted(named)}")
    check("--locked" in named["builder"] and "--release" in named["builder"], "release build with Cargo.lock")
    for binary, crate in (("kraft-controller", "controller"), ("kraft-operator", "operator")):
        cargo = (ROOT / crate / "Cargo.toml").read_text()
        check(f'name = "{binary}"' in cargo, f"{crate}/Cargo.toml has no binary {binary}")
        st = named[binary]
        check(f"COPY --from=builder /out/{binary} /usr/local/bin/{binary}" in st, f"{binary} copied onto PATH")
        user = re.findall(r"^USER (\S+)", st, flags=re.M)
        check(user and not user[-1].startswith(("0", "root")), f"{binary} stage runs as {user}")
        check(f'ENTRYPOINT ["/usr/local/bin/{binary}"]' in st, f"{binary} is the entrypoint")
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    check(f"EXPOSE {values['http']['port']}" in named["kraft-operator"], "the operator image exposes the chart's http.port")
    check(values["podSecurityContext"]["runAsUser"] == 65532 and "USER 65532:65532" in named["kraft-operator"],
          "the chart runs the operator as the image's user")


def main() -> int:
    passed = failed = 0
    only = sys.argv[1:]
    for fn in TESTS:
        if only and fn.__name__ not in only:
            continue
        try:
            fn()
        except CheckFailed as e:
            failed += 1
            print(f"FAIL {fn.__name__}\n    {e}")
        except Exception:  # a bug in the check itself still fails the run
            failed += 1
            print(f"FAIL {fn.__name__}\n{traceback.format_exc()}")
        else:
            passed += 1
            print(f"PASS {fn.__name__}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
