"""The chart's pods run by podman as a kubelet would run them.

`helm template` renders the chart; each pod becomes a podman pod (one network namespace, the
pod's IP on a podman network) and each of its containers a `podman run` whose arguments are
read off the container's spec field by field: image and args, env (values, Secret keys and the
downward API, `$(VAR)` expanded), volumes (Secrets as files with their items and modes,
emptyDirs, host paths), resource limits and the security context. A field this translation
does not know fails the test, so the chart cannot gain one that the test silently drops.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.images.conftest import REPO, Podman

HELM = REPO / ".tools" / "bin" / "helm"
CHART = REPO / "helm" / "airlock"
PULL = {"IfNotPresent": "missing", "Never": "never", "Always": "always"}
QUANTITY = re.compile(r"^(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?$")
UNITS = {None: 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
UNITS |= {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}
# What the kubelet expands in env values and args: $(NAME) of an earlier variable; $$ is $.
REFERENCE = re.compile(r"\$\$|\$\((\w+)\)")


def render(*values: str) -> list[dict[str, Any]]:
    """The chart's manifests for `--set` VALUES, as `helm template` prints them."""
    if not HELM.exists():
        raise AssertionError("no helm in .tools/bin: scripts/helm-tools.sh installs it")
    args = [str(HELM), "template", "airlock", str(CHART)]
    for value in values:
        args += ["--set", value]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"helm template failed:\n{done.stderr}"
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [doc for doc in docs if doc["kind"] == kind]
    return found


def secrets_of(docs: list[dict[str, Any]]) -> dict[str, dict[str, bytes]]:
    """Each rendered Secret's keys and values, `data` decoded and `stringData` encoded."""
    found = {}
    for doc in docs:
        if doc["kind"] == "Secret":
            data = {k: base64.b64decode(v) for k, v in doc.get("data", {}).items()}
            data |= {k: v.encode() for k, v in doc.get("stringData", {}).items()}
            found[doc["metadata"]["name"]] = data
    return found


@dataclass(frozen=True)
class Network:
    name: str
    subnet: ipaddress.IPv4Network

    def address(self, n: int) -> str:
        return str(self.subnet[n])


@contextmanager
def network(podman: Podman, name: str) -> Iterator[Network]:
    podman("network", "rm", "--force", name, check=False)
    podman("network", "create", name)
    try:
        (inspected,) = json.loads(podman("network", "inspect", name).stdout)
        yield Network(name, ipaddress.ip_network(inspected["subnets"][0]["subnet"]))
    finally:
        podman("network", "rm", "--force", name, check=False)


@dataclass(frozen=True)
class Placement:
    """What the kubelet knows of a pod before its containers start: its name, the node it is
    on (spec.nodeName), its IP (status.podIP) and where that node's host paths are (a podman
    volume or directory for each path; a path not listed is the host's own)."""

    pod: str
    node: str
    ip: str
    host_paths: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Pod:
    """A rendered pod spec, the Secrets it reads and where it runs; `files` is a directory for
    its Secret volumes and emptyDirs."""

    spec: dict[str, Any]
    secrets: dict[str, dict[str, bytes]]
    placement: Placement
    files: Path

    def container(self, name: str) -> dict[str, Any]:
        (found,) = [c for c in self.spec["containers"] if c["name"] == name]
        return found

    def create_args(self, network: Network, *extra: str) -> list[str]:
        """`podman pod create` for this pod: its network namespace and hostname."""
        known = {"containers", "volumes", "securityContext", "restartPolicy"}
        known |= {"automountServiceAccountToken", "terminationGracePeriodSeconds"}
        known |= {"nodeSelector", "affinity", "tolerations", "topologySpreadConstraints"}
        unknown = set(self.spec) - known
        assert not unknown, f"the pod spec has fields this test does not translate: {unknown}"
        place = self.placement
        return [
            "pod", "create", "--name", place.pod, "--hostname", place.pod,
            f"--network={network.name}", f"--ip={place.ip}", *extra,
        ]  # fmt: skip

    def run_args(self, name: str) -> list[str]:
        """`podman run` arguments (up to the image and its args) for the named container."""
        container = self.container(name)
        known = {"name", "image", "imagePullPolicy", "args", "env", "ports", "resources"}
        known |= {"securityContext", "volumeMounts", "startupProbe", "livenessProbe"}
        known |= {"readinessProbe"}
        unknown = set(container) - known
        assert not unknown, f"{name} has fields this test does not translate: {unknown}"
        env = self.env(container)
        args = [
            f"--name={self.placement.pod}-{name}",
            f"--pod={self.placement.pod}",
            f"--pull={PULL[container.get('imagePullPolicy', 'IfNotPresent')]}",
            *(f"--env={k}={v}" for k, v in env.items()),
            *self.mounts(container),
            *self.security(container),
            *limits(container.get("resources", {})),
            container["image"],
        ]
        return args + [expand(a, env) for a in container.get("args", [])]

    def env(self, container: dict[str, Any]) -> dict[str, str]:
        env: dict[str, str] = {}
        for var in container.get("env", []):
            if "value" in var:
                env[var["name"]] = expand(var["value"], env)
            elif ref := var["valueFrom"].get("secretKeyRef"):
                env[var["name"]] = self.secrets[ref["name"]][ref["key"]].decode()
            else:
                path = var["valueFrom"]["fieldRef"]["fieldPath"]
                env[var["name"]] = {"spec.nodeName": self.placement.node,
                                    "status.podIP": self.placement.ip,
                                    "metadata.name": self.placement.pod}[path]  # fmt: skip
        return env

    def mounts(self, container: dict[str, Any]) -> list[str]:
        volumes = {v["name"]: v for v in self.spec.get("volumes", [])}
        args = []
        for mount in container.get("volumeMounts", []):
            volume = volumes[mount["name"]]
            target = mount["mountPath"]
            if "secret" in volume:
                source = self.secret_files(container["name"], mount["name"], volume["secret"])
                args.append(f"--volume={source}:{target}:ro")
            elif "emptyDir" in volume:
                args.append(f"--volume={self.empty_dir(mount['name'])}:{target}:rw")
            elif "hostPath" in volume:
                path = volume["hostPath"]["path"]
                source = self.placement.host_paths.get(path, path)
                args.append(f"--volume={source}:{target}:{'ro' if mount.get('readOnly') else 'rw'}")
            else:
                raise AssertionError(f"a volume this test does not translate: {volume}")
        return args

    def secret_files(self, container: str, name: str, source: dict[str, Any]) -> Path:
        """A Secret volume as the kubelet writes it: the items named (every key when none are)
        at their paths, with their modes; with an fsGroup, group-owned by it and readable by
        the group."""
        data = self.secrets[source["secretName"]]
        items = source.get("items") or [{"key": k, "path": k} for k in data]
        group = self.spec.get("securityContext", {}).get("fsGroup")
        directory = self.files / self.placement.pod / container / name
        directory.mkdir(parents=True)
        for item in items:
            path = directory / item["path"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data[item["key"]])
            mode = item.get("mode", source.get("defaultMode", 0o644))
            if group is not None:
                os.chown(path, 0, group)
                mode |= 0o440
            path.chmod(mode)
        return directory

    def empty_dir(self, name: str) -> Path:
        """An emptyDir as the kubelet makes it: a directory on the node's disk shared by the
        pod's containers, open to all (0777); with an fsGroup, group-owned by it, setgid.
        (Not a tmpfs: runc gives a tmpfs the mode of the image's directory under it.)"""
        directory = self.files / self.placement.pod / "empty" / name
        if not directory.exists():
            directory.mkdir(parents=True)
            group = self.spec.get("securityContext", {}).get("fsGroup")
            if group is not None:
                os.chown(directory, 0, group)
            directory.chmod(0o2777 if group is not None else 0o777)
        return directory

    def security(self, container: dict[str, Any]) -> list[str]:
        context = {**self.spec.get("securityContext", {}), **container.get("securityContext", {})}
        args = []
        for key, value in context.items():
            match key, value:
                case "runAsUser", _:
                    group = context.get("runAsGroup")
                    args.append(f"--user={value}" + (f":{group}" if group is not None else ""))
                case "runAsNonRoot", True:
                    # The kubelet refuses to start a container that would run as root.
                    assert context.get("runAsUser", 0) != 0, f"{container['name']}: uid 0"
                case "runAsGroup" | "fsGroup" | "runAsNonRoot", _:
                    pass  # with runAsUser; on the Secret files and emptyDirs; checked above
                case "privileged", True:
                    args.append("--privileged")
                case "privileged", False:
                    pass
                case "allowPrivilegeEscalation", False:
                    args.append("--security-opt=no-new-privileges")
                case "allowPrivilegeEscalation", True:
                    pass
                case "readOnlyRootFilesystem", True:
                    args += ["--read-only", "--read-only-tmpfs=false"]
                case "readOnlyRootFilesystem", False:
                    pass
                case "capabilities", _:
                    args += [f"--cap-drop={c}" for c in value.get("drop", [])]
                    args += [f"--cap-add={c}" for c in value.get("add", [])]
                case "seccompProfile", {"type": "RuntimeDefault"}:
                    pass
                case "seccompProfile", {"type": "Unconfined"}:
                    args.append("--security-opt=seccomp=unconfined")
                case "appArmorProfile", {"type": "RuntimeDefault"}:
                    pass
                case "appArmorProfile", {"type": "Unconfined"}:
                    args.append("--security-opt=apparmor=unconfined")
                case _:
                    raise AssertionError(f"a security setting this test does not translate: {key}")
        return args


def expand(value: str, env: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        if match[0] == "$$":
            return "$"
        return env.get(match[1], match[0])

    return REFERENCE.sub(replace, value)


def limits(resources: dict[str, Any]) -> list[str]:
    """Limits as podman's; requests only place a pod, which the test does itself."""
    args = []
    for resource, quantity in resources.get("limits", {}).items():
        if resource == "memory":
            number, unit = QUANTITY.match(str(quantity)).groups()
            args.append(f"--memory={int(number) * UNITS[unit]}")
        elif resource == "cpu":
            cpus = str(quantity)
            args.append(f"--cpus={int(cpus[:-1]) / 1000 if cpus.endswith('m') else cpus}")
        else:
            raise AssertionError(f"a limit this test does not translate: {resource}")
    return args


def probe_target(container: dict[str, Any], probe: str, ip: str) -> tuple[str, int, str | None]:
    """(ip, port, path) of a container's probe; the path is None for a TCP probe."""
    spec = container[probe]
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", []) if "name" in p}
    action = spec.get("httpGet") or spec["tcpSocket"]
    port = ports.get(action["port"], action["port"])
    return ip, int(port), action.get("path")
