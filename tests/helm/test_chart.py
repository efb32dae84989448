"""The Helm chart, with the real helm (v4, scripts/helm-tools.sh) and kubernetes-validate: it
lints, it renders for the default values and for KVM nodes, every rendered manifest is valid
for the oldest Kubernetes the chart declares and the newest kubernetes-validate knows (unknown
fields refused), and what it renders is what the deployment needs."""

from __future__ import annotations

import base64
import contextlib
import json
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import kubernetes_validate
import msgspec
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from service.execs.schemas import ExecCreate
from service.sandboxes import usage
from service.tenants.schemas import Quotas
from tests.conftest import Api

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "helm" / "airlock"
HELM = REPO / ".tools" / "bin" / "helm"
VALIDATE = REPO / ".venv" / "bin" / "kubernetes-validate"
KUBE_VERSION = "1.35.0"
METADATA = yaml.safe_load((CHART / "Chart.yaml").read_text())
APP_VERSION = METADATA["appVersion"]
# The oldest Kubernetes the chart declares (`kubeVersion: >=X.Y.Z-0`) and the newest whose
# schemas kubernetes-validate has: the manifests must be valid for both.
OLDEST_KUBE = re.fullmatch(r">=\s*(\d+\.\d+\.\d+)(?:-0)?", METADATA["kubeVersion"]).group(1)
NEWEST_KUBE = kubernetes_validate.latest_version()
KVM_VALUES = CHART / "ci" / "kvm-values.yaml"
# Kinds whose schema is a CRD's, which kubernetes-validate does not have.
CRD_KINDS = {"ServiceMonitor", "PodMonitor"}
DASHBOARD = CHART / "dashboards" / "airlock.json"


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    if not HELM.exists():
        pytest.fail("no helm in .tools/bin: the test command installs it (scripts/helm-tools.sh)")
    return subprocess.run([str(HELM), *args], capture_output=True, text=True, check=check)


def render(
    *values: str, api_versions: tuple[str, ...] = (), kube_version: str = KUBE_VERSION
) -> str:
    args = ["template", "airlock", str(CHART), "--kube-version", kube_version]
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


@pytest.mark.parametrize("kube_version", [OLDEST_KUBE, NEWEST_KUBE])
@pytest.mark.parametrize("values", [(), (str(KVM_VALUES),)], ids=["default", "kvm"])
def test_every_rendered_manifest_is_valid_for_the_kubernetes_versions(
    values: tuple[str, ...], kube_version: str, tmp_path: Path
) -> None:
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(
        render(*values, api_versions=("monitoring.coreos.com/v1",), kube_version=kube_version)
    )
    result = subprocess.run(
        [str(VALIDATE), "--strict", "-k", kube_version, str(rendered)],
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
    # The database: the URL CloudNativePG keeps in its cluster's app Secret.
    assert env["AIRLOCK_DATABASE_URL"]["secretKeyRef"] == {"name": "airlock-db-app", "key": "uri"}
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
    # The nodes: one per labelled host, privileged (loop devices, a writable /proc/sys: see
    # helm/README.md), but no host network or pid space.
    (node,) = by_kind(docs, "DaemonSet")
    node_pod = node["spec"]["template"]["spec"]
    assert node_pod["nodeSelector"] == {"airlock.dev/sandbox-host": "true"}
    assert not node_pod.get("hostNetwork") and not node_pod.get("hostPID")
    assert not node_pod.get("hostIPC")
    (runsc,) = node_pod["containers"]
    assert runsc["securityContext"]["privileged"] is True
    node_env = env_of(runsc)
    assert node_env["AIRLOCK_ROLE"] == "node" and node_env["AIRLOCK_RUNTIME"] == "gvisor"
    # Its sandboxes' cgroups below its own: the pod contains and accounts them.
    assert node_env["AIRLOCK_CGROUP_PARENT"] == "self"
    # A node never holds the operator key (it answers node tokens only); its /metrics (the
    # tenants' use on its host) answers the scraper's token alone, as the API's does.
    assert "AIRLOCK_OPERATOR_KEY" not in node_env
    assert node_env["AIRLOCK_METRICS_TOKEN"]["secretKeyRef"]["key"] == "metrics-token"
    assert node_env["AIRLOCK_NODE_ID"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert node_env["AIRLOCK_NODE_ADDRESS"] == "http://$(POD_IP):8081"
    assert {v["name"]: v for v in node_pod["volumes"]}["state"]["hostPath"]["path"] == (
        "/var/lib/airlock"
    )
    assert "kvm" not in {v["name"] for v in node_pod["volumes"]}
    # Migrations run first, as a hook, with the same database URL.
    (job,) = by_kind(docs, "Job")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert job["spec"]["template"]["spec"]["containers"][0]["args"] == ["migrate"]
    job_env = env_of(job["spec"]["template"]["spec"]["containers"][0])
    assert job_env["AIRLOCK_DATABASE_URL"] == env["AIRLOCK_DATABASE_URL"]
    assert "airlock-database" not in {s["metadata"]["name"] for s in by_kind(docs, "Secret")}
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
    assert "AIRLOCK_CGROUP_PARENT" not in env_of(kvm["containers"][0])  # (a gVisor setting)
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
    docs = documents(
        render(
            "keys.existingSecret=ops-keys",
            "database.existingSecret=ops-db",
            "database.existingSecretKey=url",
        )
    )
    # Only the proxy's own (its configuration, and the key it shares with its replica).
    assert [s["metadata"]["name"] for s in by_kind(docs, "Secret")] == ["airlock-proxy"]
    (api,) = by_kind(docs, "Deployment")
    env = env_of(api["spec"]["template"]["spec"]["containers"][0])
    assert env["AIRLOCK_DATABASE_URL"]["secretKeyRef"] == {"name": "ops-db", "key": "url"}
    assert env["AIRLOCK_OPERATOR_KEY"]["secretKeyRef"]["name"] == "ops-keys"


def test_a_database_url_given_as_a_value_is_kept_in_a_secret_made_before_the_migrations() -> None:
    url = "postgresql://airlock:secret@db.example.svc:5432/airlock"
    docs = documents(render(f"database.url={url}"))
    secrets = {s["metadata"]["name"]: s for s in by_kind(docs, "Secret")}
    database = secrets["airlock-database"]
    assert database["stringData"] == {"url": url}
    # A hook, made before the migrations Job (the release's other resources come after it).
    assert int(database["metadata"]["annotations"]["helm.sh/hook-weight"]) < 0
    (job,) = by_kind(docs, "Job")
    (api,) = by_kind(docs, "Deployment")
    for container in (job["spec"]["template"]["spec"]["containers"][0],
                      api["spec"]["template"]["spec"]["containers"][0]):  # fmt: skip
        ref = env_of(container)["AIRLOCK_DATABASE_URL"]["secretKeyRef"]
        assert ref == {"name": "airlock-database", "key": "url"}
    refused = helm(
        "template", "airlock", str(CHART), "--set", "database.existingSecret=", check=False
    )
    assert refused.returncode != 0 and "database.url or database.existingSecret" in (refused.stderr)


@pytest.mark.parametrize(
    ("setting", "complaint"),
    [
        ("api.replicaz=3", "additional properties 'replicaz' not allowed"),
        ("api.replicas=0", "minimum"),
        ("node.runscPlatform=kvm", "value must be one of"),
        ("node.cgroupParent=airlock", "does not match pattern"),
        ("database.url=mysql://x", "does not match pattern"),
        ("database.url=postgresql+psycopg2://db/airlock", "does not match pattern"),
        ("image.api.digest=latest", "does not match pattern"),
        ("image.registry=https://registry.example.com", "does not match pattern"),
        ("api.proxy.trustedProxies={ingress-nginx}", "does not match pattern"),
        ("node.kvm.enable=true", "additional properties 'enable' not allowed"),
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


def images_of(docs: list[dict[str, Any]]) -> dict[str, str]:
    """Each container's image, by `<kind>/<container>`."""
    found = {}
    for doc in docs:
        if doc["kind"] in ("Deployment", "DaemonSet", "Job"):
            for c in doc["spec"]["template"]["spec"]["containers"]:
                found[f"{doc['metadata']['name']}/{c['name']}"] = c["image"]
    return found


def test_each_process_runs_the_image_built_for_it() -> None:
    """The API replicas and the migrations run airlock-api, the nodes airlock-node, the
    replicas' nginx airlock-proxy; by default as scripts/build-images.sh tags them."""
    docs = documents(render(str(KVM_VALUES)))
    assert images_of(docs) == {
        "airlock-api/api": f"localhost/airlock-api:{APP_VERSION}",
        "airlock-api/proxy": f"localhost/airlock-proxy:{APP_VERSION}",
        "airlock-migrate/migrate": f"localhost/airlock-api:{APP_VERSION}",
        "airlock-node/node": f"localhost/airlock-node:{APP_VERSION}",
        "airlock-node-kvm/node": f"localhost/airlock-node:{APP_VERSION}",
    }
    # One registry for all three, one tag for all three.
    docs = documents(render("image.registry=registry.example.com:5000/acme/", "image.tag=1.2.3"))
    assert set(images_of(docs).values()) == {
        "registry.example.com:5000/acme/airlock-api:1.2.3",
        "registry.example.com:5000/acme/airlock-node:1.2.3",
        "registry.example.com:5000/acme/airlock-proxy:1.2.3",
    }
    # A repository and a tag of its own, or a digest, which then names the image alone.
    digest = "sha256:" + "ab" * 32
    docs = documents(
        render(
            "image.registry=ghcr.io/acme",
            "image.node.repository=mirror.example.com/sandboxes/node",
            "image.node.tag=0.1.0-host",
            f"image.api.digest={digest}",
        )
    )
    images = images_of(docs)
    assert images["airlock-api/api"] == f"ghcr.io/acme/airlock-api@{digest}"
    assert images["airlock-migrate/migrate"] == images["airlock-api/api"]
    assert images["airlock-node/node"] == "mirror.example.com/sandboxes/node:0.1.0-host"
    assert images["airlock-api/proxy"] == f"ghcr.io/acme/airlock-proxy:{APP_VERSION}"
    pulls = {
        c["imagePullPolicy"]
        for d in docs
        if d["kind"] in ("Deployment", "DaemonSet", "Job")
        for c in d["spec"]["template"]["spec"]["containers"]
    }
    assert pulls == {"IfNotPresent"}


def test_the_node_keeps_its_images_entrypoint_and_state_dir() -> None:
    """The node image's entrypoint (container/node-entrypoint.sh) links the sandbox images
    baked into the image into <state dir>/images before it runs `airlock`: the chart must
    give arguments only (a `command` would skip it) and mount the host's state dir where
    the entrypoint and the service look for it."""
    entrypoint = (REPO / "container" / "node-entrypoint.sh").read_text()
    assert "state_dir=${AIRLOCK_STATE_DIR:-/var/lib/airlock}" in entrypoint
    docs = documents(render(str(KVM_VALUES)))
    for node in by_kind(docs, "DaemonSet"):
        pod = node["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        assert "command" not in container and container["args"][0] == "serve"
        state = env_of(container)["AIRLOCK_STATE_DIR"]
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        assert mounts["state"] == state == "/var/lib/airlock"
        # Nothing else is mounted over what the image bakes in.
        baked = ("/usr/share/airlock", "/opt/airlock", "/usr/local/bin", "/usr/bin")
        assert not [p for p in mounts.values() if p.startswith(baked)], mounts


def test_the_nodes_privileges_are_stated_and_their_namespace_is_named() -> None:
    """Loop devices for sandbox disks, a writable /proc/sys for sandbox networks and /dev/kvm
    are out of reach of an unprivileged container on Kubernetes: the node says it is
    privileged, and the release notes name the Pod Security label its namespace needs."""
    docs = documents(render(str(KVM_VALUES)))
    for node in by_kind(docs, "DaemonSet"):
        (container,) = node["spec"]["template"]["spec"]["containers"]
        context = container["securityContext"]
        assert context["privileged"] is True and context["runAsUser"] == 0
        assert context["allowPrivilegeEscalation"] is True
    installed = helm("install", "airlock", str(CHART), "--dry-run=client", "-n", "sandboxes")
    notes = installed.stdout.split("NOTES:", 1)[1]
    assert (
        "kubectl label namespace sandboxes pod-security.kubernetes.io/enforce=privileged" in notes
    )


def test_ingress_nginx_lets_uploads_and_long_streams_through() -> None:
    """ingress-nginx refuses bodies over 1 MiB and ends answers quiet for 60 s by default:
    the chart's Ingress asks for the largest upload a tenant may be allowed, the longest exec
    and no buffering (server-sent events); a value of the user's own wins."""
    largest_upload = msgspec.inspect.type_info(Quotas).fields
    (upload,) = [f for f in largest_upload if f.name == "max_upload_mib"]
    (timeout,) = [f for f in msgspec.inspect.type_info(ExecCreate).fields if f.name == "timeout_s"]
    hosts = "api.ingress.hosts[0].host=airlock.example.com,api.ingress.hosts[0].paths[0]=/"
    docs = documents(render("api.ingress.enabled=true", hosts))
    (ingress,) = by_kind(docs, "Ingress")
    annotations = ingress["metadata"]["annotations"]
    prefix = "nginx.ingress.kubernetes.io/"
    assert annotations[prefix + "proxy-body-size"] == f"{upload.type.le}m"
    for name in ("proxy-read-timeout", "proxy-send-timeout"):
        assert int(annotations[prefix + name]) >= timeout.type.le
    assert annotations[prefix + "proxy-buffering"] == "off"
    assert annotations[prefix + "proxy-request-buffering"] == "off"
    docs = documents(
        render(
            "api.ingress.enabled=true",
            hosts,
            "api.ingress.annotations.nginx\\.ingress\\.kubernetes\\.io/proxy-body-size=10m",
            "api.ingress.annotations.cert-manager\\.io/cluster-issuer=letsencrypt",
        )
    )
    (ingress,) = by_kind(docs, "Ingress")
    annotations = ingress["metadata"]["annotations"]
    assert annotations[prefix + "proxy-body-size"] == "10m"
    assert annotations["cert-manager.io/cluster-issuer"] == "letsencrypt"
    assert annotations[prefix + "proxy-buffering"] == "off"


def test_every_process_gets_the_extra_settings() -> None:
    docs = documents(
        render(
            str(KVM_VALUES),
            "extraEnv[0].name=AIRLOCK_EXTRA,extraEnv[0].value=yes",
            "config.logLevel=DEBUG",
        )
    )
    containers = {
        f"{d['metadata']['name']}/{c['name']}": c
        for d in docs
        if d["kind"] in ("Deployment", "DaemonSet", "Job")
        for c in d["spec"]["template"]["spec"]["containers"]
        if c["name"] != "proxy"
    }
    assert set(containers) == {
        "airlock-api/api",
        "airlock-migrate/migrate",
        "airlock-node/node",
        "airlock-node-kvm/node",
    }
    for name, container in containers.items():
        env = env_of(container)
        assert env["AIRLOCK_EXTRA"] == "yes", name
        assert env["AIRLOCK_LOG_LEVEL"] == "DEBUG", name


def test_the_readme_the_values_point_at_describes_them() -> None:
    """helm/README.md exists and names every setting of values.yaml down to two levels."""
    readme = (REPO / "helm" / "README.md").read_text()
    assert "helm/README.md" in (CHART / "values.yaml").read_text()
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    names = []
    for key, value in values.items():
        names.append(key)
        if isinstance(value, dict):
            names += [f"{key}.{inner}" for inner in value]
    missing = [n for n in names if f"`{n}" not in readme]
    assert not missing, missing


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Replica(BaseHTTPRequestHandler):
    """Stands in for the API replica: answers with the X-Forwarded-For it was sent."""

    def do_GET(self) -> None:
        body = (self.headers.get("X-Forwarded-For") or "").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


@contextlib.contextmanager
def api_pods_nginx(tmp_path: Path, *values: str) -> Iterator[str]:
    """The sidecar's nginx as the chart renders it, in front of a stand-in replica; yields
    its URL."""
    listen = free_port()
    replica_port = free_port()
    # A port freed at once can come back, and the chart refuses one port for both.
    while replica_port == listen:
        replica_port = free_port()
    docs = documents(render(f"api.port={listen}", f"api.proxy.replicaPort={replica_port}", *values))
    (secret,) = [d for d in by_kind(docs, "Secret") if d["metadata"]["name"] == "airlock-proxy"]
    files = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    (tmp_path / "proxy.conf").write_text(files["proxy.conf"])
    (tmp_path / "nginx.conf").write_text(
        files["nginx.conf"]
        .replace("/tmp/", f"{tmp_path}/")
        .replace("/etc/airlock-proxy/proxy.conf", f"{tmp_path}/proxy.conf")
    )
    replica = ThreadingHTTPServer(("127.0.0.1", replica_port), _Replica)
    threading.Thread(target=replica.serve_forever, daemon=True).start()
    nginx = subprocess.Popen(
        ["nginx", "-p", f"{tmp_path}/", "-c", f"{tmp_path}/nginx.conf", "-e", "stderr",
         "-g", "daemon off;"],
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{listen}"
        for _ in range(100):
            with contextlib.suppress(httpx.TransportError):
                httpx.get(url, timeout=1)
                break
            assert nginx.poll() is None, nginx.communicate()[1]
            time.sleep(0.05)
        yield url
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)
        replica.shutdown()
        replica.server_close()


@pytest.mark.parametrize(
    ("trusted", "sent", "client"),
    [
        # Nobody trusted (the default): the peer is the client, whatever it claims.
        ((), "198.51.100.7", "127.0.0.1"),
        # From a trusted proxy, the client its X-Forwarded-For names ...
        (("127.0.0.1",), "198.51.100.7", "198.51.100.7"),
        # ... past other trusted proxies, and never an address the client put before them.
        (("127.0.0.0/8", "10.0.0.0/8"), "203.0.113.9, 198.51.100.7, 10.1.2.3", "198.51.100.7"),
    ],
    ids=["nobody-trusted", "ingress-trusted", "chain"],
)
def test_the_api_pods_nginx_passes_on_the_client_its_trusted_proxies_name(
    tmp_path: Path, trusted: tuple[str, ...], sent: str, client: str
) -> None:
    """Behind an ingress controller, the replica (which trusts its nginx alone) must see the
    client, not the controller's pod: audit records and the anonymous rate limit go by it."""
    values = [f"api.proxy.trustedProxies={{{','.join(trusted)}}}"] if trusted else []
    with api_pods_nginx(tmp_path, *values) as url:
        answer = httpx.get(f"{url}/v1/anything", headers={"X-Forwarded-For": sent}, timeout=5)
    assert answer.status_code == 200
    assert answer.text == client
