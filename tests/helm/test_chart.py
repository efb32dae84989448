"""The Helm chart, with the real helm (v4, scripts/helm-tools.sh) and kubernetes-validate: it
lints, it renders for the default values and for KVM nodes, every rendered manifest is valid
for the pinned Kubernetes version (unknown fields refused), and what it renders is what the
deployment needs."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from service.sandboxes import usage
from tests.conftest import Api

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "helm" / "airlock"
HELM = REPO / ".tools" / "bin" / "helm"
VALIDATE = REPO / ".venv" / "bin" / "kubernetes-validate"
KUBE_VERSION = "1.35.0"
KVM_VALUES = CHART / "ci" / "kvm-values.yaml"
# Kinds whose schema is a CRD's, which kubernetes-validate does not have.
CRD_KINDS = {"ServiceMonitor", "PodMonitor"}
DASHBOARD = CHART / "dashboards" / "airlock.json"


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    if not HELM.exists():
        pytest.fail("no helm in .tools/bin: the test command installs it (scripts/helm-tools.sh)")
    return subprocess.run([str(HELM), *args], capture_output=True, text=True, check=check)


def render(*values: str, api_versions: tuple[str, ...] = ()) -> str:
    args = ["template", "airlock", str(CHART), "--kube-version", KUBE_VERSION]
    for v in values:
        args += ["-f", v] if v.endswith(".yaml") else ["--set", v]
    for a in api_versions:
        args += ["-a", a]
    return helm(*args).stdout


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


@pytest.mark.parametrize("values", [(), (str(KVM_VALUES),)], ids=["default", "kvm"])
def test_the_chart_lints_strictly(values: tuple[str, ...]) -> None:
    args = ["lint", "--strict", "--kube-version", KUBE_VERSION, str(CHART)]
    for v in values:
        args += ["-f", v]
    result = helm(*args, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout


@pytest.mark.parametrize("values", [(), (str(KVM_VALUES),)], ids=["default", "kvm"])
def test_every_rendered_manifest_is_valid_for_the_kubernetes_version(
    values: tuple[str, ...], tmp_path: Path
) -> None:
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(render(*values, api_versions=("monitoring.coreos.com/v1",)))
    result = subprocess.run(
        [str(VALIDATE), "--strict", "-k", KUBE_VERSION, str(rendered)],
        capture_output=True,
        text=True,
    )
    lines = (result.stdout + result.stderr).splitlines()
    assert result.returncode == 0, "\n".join(lines)
    assert not [line for line in lines if line.startswith("ERROR")], "\n".join(lines)
    # A kind it has no schema for is only a warning: allowed for CRDs alone.
    unknown = [line for line in lines if line.startswith("WARN")]
    assert all(any(f"kind {k} " in line for k in CRD_KINDS) for line in unknown), unknown
    kinds = {d["kind"] for d in documents(rendered.read_text())}
    passed = [line for line in lines if line.startswith("INFO") and "passed" in line]
    assert len(passed) == len(documents(rendered.read_text())) - len(unknown), lines
    assert {"Deployment", "DaemonSet", "Job", "Service", "Secret", "NetworkPolicy"} <= kinds


def test_what_the_default_values_deploy() -> None:
    docs = documents(render())
    (api,) = by_kind(docs, "Deployment")
    pod = api["spec"]["template"]["spec"]
    container, proxy = pod["containers"]
    # The API: stateless replicas, locked down, probed on /healthz and /readyz.
    assert api["spec"]["replicas"] == 2
    assert env_of(container)["AIRLOCK_ROLE"] == "api"
    context = container["securityContext"]
    assert context["runAsNonRoot"] and context["readOnlyRootFilesystem"]
    assert not context["allowPrivilegeEscalation"] and context["capabilities"]["drop"] == ["ALL"]
    assert context["seccompProfile"]["type"] == "RuntimeDefault"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["resources"]["requests"]
    assert pod["automountServiceAccountToken"] is False
    # Keys from Secrets: the signing key, the audit and secrets keys, the operator key.
    env = env_of(container)
    assert env["AIRLOCK_OPERATOR_KEY"]["secretKeyRef"]["key"] == "operator-key"
    assert env["AIRLOCK_DATABASE_URL"]["secretKeyRef"]["name"] == "airlock-database"
    assert env["AIRLOCK_AUDIT_KEY_FILE"].startswith("/etc/airlock/keys/")
    keys = next(s for s in by_kind(docs, "Secret") if s["metadata"]["name"] == "airlock-keys")
    assert set(keys["data"]) == {
        "signing-key.pem",
        "audit.key",
        "secrets.key",
        "operator-key",
        "metrics-token",
    }
    # /metrics answers the scraper's token only (the Ingress serves the same port).
    assert env["AIRLOCK_METRICS_TOKEN"]["secretKeyRef"]["key"] == "metrics-token"
    assert keys["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    # nginx beside each replica takes the Service's port; the replica trusts it alone.
    assert [p["name"] for p in proxy["ports"]] == ["http"]
    assert [p["name"] for p in container["ports"]] == ["replica"]
    assert env["AIRLOCK_TRUSTED_PROXIES"] == "127.0.0.1"
    assert proxy["securityContext"] == container["securityContext"]
    # The nodes: one per labelled host, root for runsc but not privileged, no host network.
    (node,) = by_kind(docs, "DaemonSet")
    node_pod = node["spec"]["template"]["spec"]
    assert node_pod["nodeSelector"] == {"airlock.dev/sandbox-host": "true"}
    assert not node_pod.get("hostNetwork") and not node_pod.get("hostPID")
    (runsc,) = node_pod["containers"]
    assert runsc["securityContext"]["privileged"] is False
    assert "SYS_ADMIN" in runsc["securityContext"]["capabilities"]["add"]
    node_env = env_of(runsc)
    assert node_env["AIRLOCK_ROLE"] == "node" and node_env["AIRLOCK_RUNTIME"] == "gvisor"
    # A node never holds the operator key (it answers node tokens only).
    assert "AIRLOCK_OPERATOR_KEY" not in node_env and "AIRLOCK_METRICS_TOKEN" not in node_env
    assert node_env["AIRLOCK_NODE_ID"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert node_env["AIRLOCK_NODE_ADDRESS"] == "http://$(POD_IP):8081"
    assert {v["name"]: v for v in node_pod["volumes"]}["state"]["hostPath"]["path"] == (
        "/var/lib/airlock"
    )
    assert "kvm" not in {v["name"] for v in node_pod["volumes"]}
    # Migrations run first, as a hook, with the database URL (also a hook, made before it).
    (job,) = by_kind(docs, "Job")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert job["spec"]["template"]["spec"]["containers"][0]["args"] == ["migrate"]
    secrets = {s["metadata"]["name"]: s for s in by_kind(docs, "Secret")}
    database = secrets["airlock-database"]
    assert int(database["metadata"]["annotations"]["helm.sh/hook-weight"]) < 0
    # Only API pods and other nodes reach a node's port.
    (policy,) = by_kind(docs, "NetworkPolicy")
    assert policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "node"
    allowed = {
        p["podSelector"]["matchLabels"]["app.kubernetes.io/component"]
        for p in policy["spec"]["ingress"][0]["from"]
    }
    assert allowed == {"api", "node"}
    assert policy["spec"]["ingress"][0]["ports"] == [{"port": 8081, "protocol": "TCP"}]
    (pdb,) = by_kind(docs, "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    assert not by_kind(docs, "HorizontalPodAutoscaler") and not by_kind(docs, "Ingress")
    # No ServiceMonitor unless asked for and the CRD is there.
    assert not by_kind(docs, "ServiceMonitor")


def test_kvm_hosts_get_boxlite_with_dev_kvm() -> None:
    docs = documents(render(str(KVM_VALUES), api_versions=("monitoring.coreos.com/v1",)))
    nodes = {
        d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in by_kind(docs, "DaemonSet")
    }
    assert set(nodes) == {"airlock-node", "airlock-node-kvm"}
    kvm = nodes["airlock-node-kvm"]
    assert kvm["nodeSelector"] == {"airlock.dev/sandbox-host": "true", "airlock.dev/kvm": "true"}
    assert {v["name"]: v for v in kvm["volumes"]}["kvm"]["hostPath"] == {
        "path": "/dev/kvm",
        "type": "CharDevice",
    }
    assert env_of(kvm["containers"][0])["AIRLOCK_RUNTIME"] == "boxlite"
    # The gVisor nodes keep off the KVM hosts.
    terms = nodes["airlock-node"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms == [
        {"matchExpressions": [{"key": "airlock.dev/kvm", "operator": "NotIn", "values": ["true"]}]}
    ]
    assert by_kind(docs, "HorizontalPodAutoscaler") and by_kind(docs, "Ingress")
    (monitor,) = by_kind(docs, "ServiceMonitor")
    assert monitor["spec"]["endpoints"] == [
        {
            "port": "http",
            "path": "/metrics",
            "interval": "30s",
            "bearerTokenSecret": {"name": "airlock-keys", "key": "metrics-token"},
        }
    ]
    (api,) = by_kind(docs, "Deployment")
    assert "replicas" not in api["spec"]  # the HPA owns it
    # The nodes' /metrics too (the tenants' use is there), reachable from the scraper's
    # namespace only; and the dashboard, for Grafana's sidecar.
    (pods,) = by_kind(docs, "PodMonitor")
    assert pods["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] == "node"
    (policy,) = by_kind(docs, "NetworkPolicy")
    scraper = {"kubernetes.io/metadata.name": "monitoring"}
    assert policy["spec"]["ingress"][1]["from"] == [{"namespaceSelector": {"matchLabels": scraper}}]
    (board,) = [
        c for c in by_kind(docs, "ConfigMap") if c["metadata"]["name"].endswith("dashboard")
    ]
    assert board["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(board["data"]["airlock.json"]) == json.loads(DASHBOARD.read_text())


def test_a_label_both_selectors_name_renders_once() -> None:
    docs = documents(
        helm(
            "template", "airlock", str(CHART), "--kube-version", KUBE_VERSION,
            "-f", str(KVM_VALUES),
            "--set-string", "node.kvm.nodeSelector.airlock\\.dev/sandbox-host=true",
        ).stdout
    )  # fmt: skip
    nodes = {
        d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in by_kind(docs, "DaemonSet")
    }
    assert nodes["airlock-node-kvm"]["nodeSelector"] == {
        "airlock.dev/sandbox-host": "true",
        "airlock.dev/kvm": "true",
    }
    # The gVisor nodes still run on the sandbox hosts that are not KVM hosts.
    terms = nodes["airlock-node"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert {"key": "airlock.dev/kvm", "operator": "NotIn", "values": ["true"]} in [
        t["matchExpressions"][0] for t in terms
    ]
    assert all(len(t["matchExpressions"]) == 1 for t in terms)


def test_existing_secrets_are_used_instead_of_made() -> None:
    docs = documents(render("keys.existingSecret=ops-keys", "database.existingSecret=ops-db"))
    # Only the proxy's own (its configuration, and the key it shares with its replica).
    assert [s["metadata"]["name"] for s in by_kind(docs, "Secret")] == ["airlock-proxy"]
    (api,) = by_kind(docs, "Deployment")
    env = env_of(api["spec"]["template"]["spec"]["containers"][0])
    assert env["AIRLOCK_DATABASE_URL"]["secretKeyRef"]["name"] == "ops-db"
    assert env["AIRLOCK_OPERATOR_KEY"]["secretKeyRef"]["name"] == "ops-keys"


@pytest.mark.parametrize(
    ("setting", "complaint"),
    [
        ("api.replicaz=3", "additional properties 'replicaz' not allowed"),
        ("api.replicas=0", "minimum"),
        ("node.runscPlatform=kvm", "value must be one of"),
        ("database.url=mysql://x", "does not match pattern"),
    ],
)
def test_the_values_schema_refuses_mistakes(setting: str, complaint: str) -> None:
    result = helm(
        "template", "airlock", str(CHART), "--kube-version", KUBE_VERSION, "--set", setting,
        check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert complaint in result.stderr, result.stderr


async def test_the_dashboard_asks_only_for_what_the_service_exports(api: Api) -> None:
    """Every series a panel queries is one Airlock's /metrics has (a renamed metric would
    leave a panel silently empty)."""
    board = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p["targets"]]
    asked = {m for e in exprs for m in re.findall(r"\b((?:airlock|process)_[a-z_]+)\b", e)}
    # The request metrics exist once a request was served.
    assert (await api.client.get("/v1/tenants", headers=api.operator)).status_code == 200
    text = (await api.client.get("/metrics")).text
    exported = {f.name for f in text_string_to_metric_families(text)}
    exported |= {f"{n}_bucket" for n in exported} | {f"{n}_total" for n in exported}
    exported |= set(usage.METRIC_NAMES)  # per node, once it has sampled
    assert asked - exported == set(), sorted(asked - exported)
    assert len({p["id"] for p in board["panels"]}) == len(board["panels"])


def test_the_api_pods_nginx_configuration_is_valid(tmp_path: Path) -> None:
    """The proxy's configuration as the chart renders it passes `nginx -t` (the Debian nginx
    the test command installs, scripts/proxy-setup.sh); the replica and nginx share one offload
    key from the proxy's Secret; without the proxy the replica takes the port itself and
    trusts no proxy."""
    docs = documents(render())
    (secret,) = [d for d in by_kind(docs, "Secret") if d["metadata"]["name"] == "airlock-proxy"]
    files = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    key = files["offload-key"]
    assert len(key) >= 32 and f'Airlock-Offload "{key}";' in files["proxy.conf"]
    assert "server 127.0.0.1:8079;" in files["proxy.conf"] and "listen 8080;" in files["proxy.conf"]
    (api,) = by_kind(docs, "Deployment")
    replica, proxy = api["spec"]["template"]["spec"]["containers"]
    assert env_of(replica)["AIRLOCK_OFFLOAD_KEY"]["secretKeyRef"] == {
        "name": "airlock-proxy",
        "key": "offload-key",
    }
    assert proxy["args"][:3] == ["nginx", "-c", "/etc/airlock-proxy/nginx.conf"]
    # Rendered where the sidecar mounts them, then checked as nginx reads them.
    main = (
        files["nginx.conf"]
        .replace("/tmp/", f"{tmp_path}/")
        .replace("/etc/airlock-proxy/proxy.conf", f"{tmp_path}/proxy.conf")
    )
    (tmp_path / "proxy.conf").write_text(files["proxy.conf"])
    (tmp_path / "nginx.conf").write_text(main)
    assert not re.findall(r"@[A-Z]+@", main + files["proxy.conf"])  # every placeholder filled
    checked = subprocess.run(
        ["nginx", "-t", "-p", f"{tmp_path}/", "-c", f"{tmp_path}/nginx.conf", "-e", "stderr"],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stderr
    docs = documents(render("api.proxy.enabled=false"))
    (api,) = by_kind(docs, "Deployment")
    (container,) = api["spec"]["template"]["spec"]["containers"]
    assert [p["name"] for p in container["ports"]] == ["http"]
    assert not {"AIRLOCK_TRUSTED_PROXIES", "AIRLOCK_OFFLOAD_KEY"} & set(env_of(container))
    assert not [d for d in docs if d["metadata"]["name"] == "airlock-proxy"]
    refused = helm("template", "airlock", str(CHART), "--set", "api.proxy.replicaPort=8080",
                   check=False)  # fmt: skip
    assert refused.returncode != 0 and "must differ from api.port" in refused.stderr
